//! [`Metastability`]: the verdict on a run with a trigger that ends — *never degraded*,
//! *recovered after X*, *did not recover within the run: metastable*, or *collapsed* — built
//! from the run's [`Figures`] and the scenario's timeline, never from the world.
//!
//! | type | what |
//! |---|---|
//! | [`Verdict`] | one client's verdict, as data |
//! | [`Metastability`] | the report's `metastability` section: thresholds, trigger, verdicts |
//! | [`WindowFigures`] | what the clients got during the triggers and after them |
//!
//! | module | what |
//! |---|---|
//! | `expect` | the verdict on the `Recovers` and `Metastable` expectations |
//! | `windows` | the figures during the triggers and after them |
//!
//! The thresholds ([`VerdictConfig`]), the triggers a verdict is counted from and the window it
//! is judged over are the file's: [`crate::format::verdict`].
//!
//! The figure is each client's success ratio per report bucket, by bucket of offer (the
//! requests offered in a bucket, and how many of them succeeded). Successes per second would
//! follow the offered rate: they rise during a spike however badly it goes, and after a
//! `Steps` that settles lower they would never return to the earlier level however healthy the
//! system is. The ratio asks the question the verdict is about — are the requests sent now
//! being served — whatever the rate they are sent at.
//!
//! The rule, with the thresholds of [`VerdictConfig`]:
//! - the *baseline* is the success ratio of the buckets that end before the first trigger
//!   starts; without one, or when it is below `baseline_min_ratio`, the run is *collapsed*
//!   (it was not healthy before anything happened, so there is nothing to recover to);
//! - a bucket is *healthy* when its success ratio is at least `healthy_ratio` × the baseline
//!   (a bucket without requests says nothing and is skipped);
//! - *never degraded*: every bucket from the first trigger's start was healthy;
//! - *recovered after X*: the first stretch of healthy buckets lasting `sustain` starts X
//!   after the end of the last trigger to end (a single good bucket is not recovery);
//! - otherwise *did not recover within the run: metastable*.
//!
//! The last bucket is left out: it holds requests still in flight when the run stopped.
//! Several triggers give one verdict: the baseline is before the first, the recovery is
//! counted from the end of the last. A run's overall verdict is its worst client's
//! (collapsed, then metastable, then the longest recovery).

mod expect;
mod windows;

pub use windows::WindowFigures;

pub(crate) use expect::expectation;

use crate::figures::{ClientFigures, Figures};
use crate::format::schema::Scenario;
use crate::format::verdict::{NoVerdict, VerdictConfig, Window, window};
use serde::Serialize;
use sim_core::SimDuration;

/// One client's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Every bucket from the first trigger's start on was healthy.
    NeverDegraded,
    /// Healthy again, for `sustain`, this long after the last trigger ended.
    Recovered {
        /// From the trigger's end to the start of the first sustained healthy stretch.
        after: SimDuration,
    },
    /// Degraded and never healthy for `sustain` after the trigger ended.
    Metastable,
    /// Not healthy before the trigger (or no bucket before it to say).
    Collapsed,
}

impl Verdict {
    /// The snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::NeverDegraded => "never_degraded",
            Verdict::Recovered { .. } => "recovered",
            Verdict::Metastable => "metastable",
            Verdict::Collapsed => "collapsed",
        }
    }

    /// How bad it is, for the worst of several: collapsed, metastable, the longest recovery.
    fn severity(self) -> (u8, SimDuration) {
        match self {
            Verdict::NeverDegraded => (0, SimDuration::ZERO),
            Verdict::Recovered { after } => (1, after),
            Verdict::Metastable => (2, SimDuration::ZERO),
            Verdict::Collapsed => (3, SimDuration::ZERO),
        }
    }

    /// In words, as the reports say it.
    pub fn sentence(self) -> String {
        match self {
            Verdict::NeverDegraded => "never degraded".to_string(),
            Verdict::Recovered { after } => format!("recovered after {after}"),
            Verdict::Metastable => "did not recover within the run: metastable".to_string(),
            Verdict::Collapsed => "collapsed: not healthy before the trigger".to_string(),
        }
    }
}

/// One client's verdict in the report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClientVerdict {
    /// The client.
    pub name: String,
    /// `never_degraded`, `recovered`, `metastable` or `collapsed`.
    pub verdict: String,
    /// For `recovered`: seconds from the trigger's end to the start of the sustained healthy
    /// stretch (to within a bucket).
    pub recovered_after_s: Option<f64>,
    /// The baseline's success ratio (`null` without a request before the trigger).
    pub baseline_success_ratio: Option<f64>,
    /// A bucket is healthy at or above this success ratio (`healthy_ratio` × baseline).
    pub healthy_success_ratio: Option<f64>,
    /// The start of the first unhealthy bucket from the first trigger's start (`null` when
    /// none was, or when collapsed).
    pub degraded_from_s: Option<f64>,
    /// The verdict in words.
    pub summary: String,
    #[serde(skip)]
    verdict_value: Verdict,
}

impl ClientVerdict {
    /// The verdict as data.
    pub fn value(&self) -> Verdict {
        self.verdict_value
    }
}

/// The report's `metastability` section.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Metastability {
    /// The worst client's verdict: `never_degraded`, `recovered`, `metastable`, `collapsed`.
    pub verdict: String,
    /// The worst client's recovery time in seconds, for `recovered`.
    pub recovered_after_s: Option<f64>,
    /// The trigger that ends last (recovery is counted from its end).
    pub trigger: String,
    /// Its kind (`load_spike`, `slowdown`, `load_step`, ...).
    pub trigger_kind: String,
    /// When the first trigger starts, in seconds: the baseline is the buckets before it.
    pub baseline_to_s: f64,
    /// When the last trigger ends, in seconds.
    pub trigger_end_s: f64,
    /// How many triggers the scenario has.
    pub triggers: usize,
    /// The threshold: a bucket is healthy at this share of the baseline's success ratio.
    pub healthy_ratio: f64,
    /// The least baseline success ratio; below it the run is collapsed (the file's
    /// `baseline_min_ratio`).
    pub baseline_ratio_min: f64,
    /// How long healthy buckets must last to count as recovery, in seconds (whole buckets).
    pub sustain_s: f64,
    /// Per client, in name order.
    pub clients: Vec<ClientVerdict>,
    /// Over all clients, from the first trigger's start to the last one's end (whole
    /// buckets; `null` when that is no whole bucket before the run's last).
    pub during: Option<WindowFigures>,
    /// Over all clients, from the last trigger's end to the run's last bucket (`null` when
    /// the run ends first).
    pub after: Option<WindowFigures>,
    #[serde(skip)]
    worst: Verdict,
}

impl Metastability {
    /// The run's verdict: its worst client's.
    pub fn verdict(&self) -> Verdict {
        self.worst
    }

    /// The verdict of client `name`.
    pub fn client(&self, name: &str) -> Option<&ClientVerdict> {
        self.clients.iter().find(|c| c.name == name)
    }

    /// The thresholds in words, as every renderer states them.
    pub fn thresholds(&self) -> String {
        format!(
            "healthy bucket ≥ {}% of the baseline success ratio (the buckets before {}s); recovery = {}s of healthy buckets in a row; baseline under {}% = collapsed",
            fmt_num(100.0 * self.healthy_ratio),
            fmt_num(self.baseline_to_s),
            fmt_num(self.sustain_s),
            fmt_num(100.0 * self.baseline_ratio_min)
        )
    }

    /// The trigger in words: `load spike users ×2, 10s–15s`.
    pub fn trigger_words(&self) -> String {
        let more = if self.triggers > 1 {
            format!(" (the last of {} to end)", self.triggers)
        } else {
            String::new()
        };
        format!(
            "{}{more}, ended at {}s",
            self.trigger,
            fmt_num(self.trigger_end_s)
        )
    }
}

/// A number as short as it reads: `90`, `12.5`.
fn fmt_num(x: f64) -> String {
    let r = libm::round(x * 1000.0) / 1000.0;
    format!("{r}")
}

/// The thresholds of `cfg` in words, as reports and phase maps state them.
pub fn describe(cfg: &VerdictConfig) -> String {
    format!(
        "healthy bucket ≥ {}% of the baseline success ratio; recovery = {} of healthy buckets in a row; baseline under {}% = collapsed",
        fmt_num(100.0 * cfg.healthy_ratio),
        cfg.sustain,
        fmt_num(100.0 * cfg.baseline_min_ratio)
    )
}

fn round3(x: f64) -> f64 {
    libm::round(x * 1000.0) / 1000.0
}

/// The verdict section of a run of `scenario` whose figures are `figures`, or why it has none.
pub fn judge(scenario: &Scenario, figures: &Figures) -> Result<Metastability, NoVerdict> {
    let run_end = figures.end - sim_core::SimTime::ZERO;
    let w = window(scenario, run_end)?;
    let cfg = &scenario.verdict;
    let bucket = figures.bucket.as_nanos();
    let sustain = cfg.sustain.as_nanos().div_ceil(bucket).max(1) as usize;
    let clients: Vec<ClientVerdict> = figures
        .clients
        .iter()
        .map(|c| client(c, figures, &w, cfg, sustain))
        .collect();
    let worst = clients
        .iter()
        .map(|c| c.verdict_value)
        .max_by_key(|v| v.severity())
        .unwrap_or(Verdict::NeverDegraded);
    let end = w.last.end.expect("a window's last trigger ends");
    // The stretches the verdict reads: whole buckets, the last (in-flight) one left out.
    let last = figures.bucket_count().saturating_sub(1);
    let first = ((w.first_start.as_nanos() / bucket) as usize).min(last);
    let ended = (end.as_nanos().div_ceil(bucket) as usize).clamp(first, last);
    Ok(Metastability {
        during: windows::over(figures, first..ended),
        after: windows::over(figures, ended..last),
        verdict: worst.name().to_string(),
        recovered_after_s: match worst {
            Verdict::Recovered { after } => Some(round3(after.as_secs_f64())),
            _ => None,
        },
        trigger: w.last.label.clone(),
        trigger_kind: w.last.kind.clone(),
        baseline_to_s: round3(w.first_start.as_secs_f64()),
        trigger_end_s: round3(end.as_secs_f64()),
        triggers: w.triggers,
        healthy_ratio: cfg.healthy_ratio,
        baseline_ratio_min: cfg.baseline_min_ratio,
        sustain_s: round3((figures.bucket * sustain as u64).as_secs_f64()),
        clients,
        worst,
    })
}

/// One client's verdict; `sustain` in buckets.
fn client(
    c: &ClientFigures,
    figures: &Figures,
    w: &Window,
    cfg: &VerdictConfig,
    sustain: usize,
) -> ClientVerdict {
    let bucket = figures.bucket;
    // The last bucket holds requests still in flight when the run stopped.
    let last = figures.bucket_count().saturating_sub(1);
    let baseline_buckets = (w.first_start.as_nanos() / bucket.as_nanos()) as usize;
    let (ok, offered) = (0..baseline_buckets.min(last))
        .map(|i| c.bucket(i))
        .fold((0, 0), |(a, b), x| (a + x.successes, b + x.offered));
    let baseline = (offered > 0).then(|| ok as f64 / offered as f64);
    let mut out = ClientVerdict {
        name: c.name.clone(),
        verdict: String::new(),
        recovered_after_s: None,
        baseline_success_ratio: baseline.map(round3),
        healthy_success_ratio: None,
        degraded_from_s: None,
        summary: String::new(),
        verdict_value: Verdict::Collapsed,
    };
    let verdict = match baseline {
        None => {
            out.summary = format!(
                "collapsed: no request before the first trigger ({}s) to compare with",
                fmt_num(w.first_start.as_secs_f64())
            );
            Verdict::Collapsed
        }
        Some(b) if b < cfg.baseline_min_ratio => {
            out.summary = format!(
                "collapsed: {}% success before the trigger, under the {}% a healthy baseline needs",
                fmt_num(100.0 * round3(b)),
                fmt_num(100.0 * cfg.baseline_min_ratio)
            );
            Verdict::Collapsed
        }
        Some(b) => judged(c, figures, w, cfg, sustain, (b, baseline_buckets), &mut out),
    };
    out.verdict = verdict.name().to_string();
    if let Verdict::Recovered { after } = verdict {
        out.recovered_after_s = Some(round3(after.as_secs_f64()));
    }
    out.verdict_value = verdict;
    out
}

/// The verdict of client `c` on a healthy baseline `b` (its buckets before `first`), and
/// what `out` says of it; `sustain` in buckets.
fn judged(
    c: &ClientFigures,
    figures: &Figures,
    w: &Window,
    cfg: &VerdictConfig,
    sustain: usize,
    (b, first): (f64, usize),
    out: &mut ClientVerdict,
) -> Verdict {
    let bucket = figures.bucket;
    let last = figures.bucket_count().saturating_sub(1);
    let threshold = cfg.healthy_ratio * b;
    out.healthy_success_ratio = Some(round3(threshold));
    // `None`: no request in the bucket, no evidence either way.
    let healthy = |i: usize| {
        let x = c.bucket(i);
        (x.offered > 0).then_some(x.successes as f64 >= threshold * x.offered as f64)
    };
    let degraded = (first..last).find(|&i| healthy(i) == Some(false));
    out.degraded_from_s = degraded.map(|i| round3((bucket * i as u64).as_secs_f64()));
    let end = w.last.end.expect("a window's last trigger ends");
    let from = end.as_nanos().div_ceil(bucket.as_nanos()) as usize;
    let (v, tail) = match degraded {
        None => (Verdict::NeverDegraded, 0),
        Some(_) => match recovery(from, last, sustain, healthy) {
            Ok(k) => {
                let after = (bucket * k as u64).saturating_sub(end);
                (Verdict::Recovered { after }, 0)
            }
            Err(tail) => (Verdict::Metastable, tail),
        },
    };
    out.summary = v.sentence() + &too_short(tail, bucket, sustain);
    v
}

/// What a metastable verdict adds when its run ended `tail` healthy buckets (of `bucket`)
/// into a recovery that needs `sustain`: the run was too short to tell.
fn too_short(tail: usize, bucket: SimDuration, sustain: usize) -> String {
    if tail == 0 {
        return String::new();
    }
    format!(
        "; healthy for its last {} (short of the {} recovery needs): a longer run would tell",
        bucket * tail as u64,
        bucket * sustain as u64
    )
}

/// The first bucket in `[from, last)` that starts `sustain` healthy buckets in a row, or, when
/// none does, how many healthy buckets in a row end the range (the run stopped inside them).
/// Buckets without requests neither count nor break a run of healthy ones.
fn recovery(
    from: usize,
    last: usize,
    sustain: usize,
    healthy: impl Fn(usize) -> Option<bool>,
) -> Result<usize, usize> {
    let mut start = None;
    let mut streak = 0;
    for i in from..last {
        match healthy(i) {
            Some(true) => {
                let first = *start.get_or_insert(i);
                streak += 1;
                if streak >= sustain {
                    return Ok(first);
                }
            }
            Some(false) => {
                start = None;
                streak = 0;
            }
            None => {}
        }
    }
    Err(streak)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &[Option<bool>], from: usize, sustain: usize) -> Option<usize> {
        recovery(from, pattern.len(), sustain, |i| pattern[i]).ok()
    }

    #[test]
    fn recovery_needs_a_sustained_stretch() {
        let (t, f) = (Some(true), Some(false));
        // A single good bucket is not recovery.
        assert_eq!(check(&[f, t, f, t, t, t], 0, 3), Some(3));
        assert_eq!(check(&[f, t, f, t, t, f], 0, 3), None);
        // Empty buckets neither count nor break the stretch.
        assert_eq!(check(&[f, t, None, t, t], 0, 3), Some(1));
        // Recovery is searched from `from` on.
        assert_eq!(check(&[t, t, t, f, t, t, t], 2, 3), Some(4));
    }

    #[test]
    fn the_healthy_stretch_that_ends_the_run_is_counted() {
        let (t, f) = (Some(true), Some(false));
        // With no recovery (a sustain longer than any pattern here), the healthy run at the end.
        let tail = |p: &[Option<bool>]| recovery(0, p.len(), 10, |i| p[i]).unwrap_err();
        assert_eq!(tail(&[f, f, t, t]), 2);
        assert_eq!(tail(&[t, t, f]), 0);
        assert_eq!(tail(&[f, t, None, t]), 2);
        assert_eq!(tail(&[]), 0);
    }
}
