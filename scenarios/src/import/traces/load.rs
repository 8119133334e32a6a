//! The load over time: whether a service's measured self time grows with its load, and
//! whether the requests from outside arrive at one rate or at rates that change.
//!
//! A self time that grows with the load is the sign that what the traces call work holds
//! queueing (a server span that starts when a request arrives and not when a worker takes
//! it, or contention inside the process), which the imported scenario would then queue a
//! second time.
//!
//! Each service's jobs are counted per second of their start, with the sum of their self
//! times ([`Seconds`], a few bytes a second of traces, whatever their size). The seconds are
//! ranked by how many jobs started in them; the mean self time of the busiest quarter is
//! compared with that of the quietest ([`growth`]). Independent work gives a ratio near 1
//! at any load; work measured with its queue grows with the load, steeply near saturation.

//! Arrivals are counted per second too. Under one constant rate those counts vary as a
//! Poisson count does (their variance about their mean); where they vary more, the rate is
//! cut into steps by binary segmentation: the seconds split where the two sides' mean rates
//! differ most, while that difference is beyond four standard errors, each step at least
//! two seconds long ([`steps`]).

use serde::Serialize;
use std::collections::BTreeMap;

/// Nanoseconds in one bucket of [`Seconds`].
const SECOND: u64 = 1_000_000_000;

/// The busiest quarter's mean self time over the quietest's, at or above which a service's
/// work is said to grow with its load.
pub const GROWTH_WARNED: f64 = 1.25;

/// Seconds of traces below which growth is not judged (each quarter needs two).
const SECONDS_MIN: usize = 8;

/// Jobs each quarter needs, so that its mean self time is not one slow request.
const JOBS_MIN: u64 = 200;

/// A service's jobs per second of their start: how many, and their self times summed.
#[derive(Debug, Clone, Default)]
pub struct Seconds {
    by_second: BTreeMap<u64, (u64, u128)>,
}

impl Seconds {
    /// One job that started at `start` (Unix nanoseconds) and worked `self_time`.
    pub fn add(&mut self, start: u64, self_time: u64) {
        let (jobs, sum) = self.by_second.entry(start / SECOND).or_default();
        *jobs += 1;
        *sum += u128::from(self_time);
    }
}

/// A service's self time at its lowest and highest load, as the calibration report says it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LoadRow {
    /// The field the self time was written to (`services.api.work`).
    pub path: String,
    /// Jobs a second in the quietest quarter of the seconds, and their mean self time (ms).
    pub quiet_rate: f64,
    /// Mean self time, milliseconds, in the quietest quarter.
    pub quiet_ms: f64,
    /// Jobs a second in the busiest quarter.
    pub busy_rate: f64,
    /// Mean self time, milliseconds, in the busiest quarter.
    pub busy_ms: f64,
    /// `busy_ms / quiet_ms`.
    pub growth: f64,
    /// Whether the growth is at or above [`GROWTH_WARNED`].
    pub warned: bool,
}

/// The self time of `seconds` in its quietest and busiest quarter, or `None` where the
/// traces are too short (fewer than 8 seconds) or too thin (fewer than 200 jobs a quarter)
/// to tell.
pub fn growth(path: &str, seconds: &Seconds) -> Option<LoadRow> {
    // The first and last seconds are partial: left out.
    let mut full: Vec<(u64, u128)> = seconds.by_second.values().copied().collect();
    if full.len() < SECONDS_MIN + 2 {
        return None;
    }
    full.pop();
    full.remove(0);
    // By jobs, then by the second's place (the map's order), so that ties are stable.
    let mut ranked: Vec<(usize, (u64, u128))> = full.into_iter().enumerate().collect();
    ranked.sort_by_key(|&(i, (jobs, _))| (jobs, i));
    let quarter = ranked.len() / 4;
    let mean = |part: &[(usize, (u64, u128))]| {
        let jobs: u64 = part.iter().map(|(_, (j, _))| j).sum();
        let sum: u128 = part.iter().map(|(_, (_, s))| s).sum();
        (
            jobs,
            part.len() as f64,
            sum as f64 / jobs.max(1) as f64 / 1e6,
        )
    };
    let (quiet_jobs, quiet_n, quiet_ms) = mean(&ranked[..quarter]);
    let (busy_jobs, busy_n, busy_ms) = mean(&ranked[ranked.len() - quarter..]);
    if quiet_jobs < JOBS_MIN || busy_jobs < JOBS_MIN || quiet_ms <= 0.0 {
        return None;
    }
    let growth = busy_ms / quiet_ms;
    Some(LoadRow {
        path: path.to_string(),
        quiet_rate: quiet_jobs as f64 / quiet_n,
        quiet_ms,
        busy_rate: busy_jobs as f64 / busy_n,
        busy_ms,
        growth,
        warned: growth >= GROWTH_WARNED,
    })
}

impl LoadRow {
    /// The warning a growing self time earns, in the user's words.
    pub fn warning(&self) -> String {
        format!(
            "warning: {}: the self time grows with the load, {:.2}ms a job in the busiest quarter of the seconds traced ({:.0} jobs/s) against {:.2}ms in the quietest ({:.0} jobs/s), {:.2}×: the spans measure queueing or contention as work, and the imported scenario would queue it again; import traces taken at low load, or set the work to the quiet figure",
            self.path, self.busy_ms, self.busy_rate, self.quiet_ms, self.quiet_rate, self.growth
        )
    }
}

/// Steps a varying rate is written with, at most.
const STEPS_MAX: usize = 32;

/// A client's arrival rate over time: `None` where the counts per second vary no more than
/// one Poisson rate's would (a `Constant` rate), else each step's start after `first` (the
/// first arrival, Unix nanoseconds), in nanoseconds, and its rate, requests a second.
/// `per_second` counts arrivals by the second of their start (`start / 1e9`); the first
/// and last seconds are partial and judge nothing.
pub fn steps(per_second: &BTreeMap<u64, u64>, first: u64) -> Option<Vec<(u64, f64)>> {
    let (&from, &to) = (per_second.keys().next()?, per_second.keys().next_back()?);
    // Every full second, those without arrivals counted as 0.
    let counts: Vec<f64> = (from + 1..to)
        .map(|s| per_second.get(&s).copied().unwrap_or(0) as f64)
        .collect();
    let n = counts.len();
    if n < SECONDS_MIN {
        return None;
    }
    let mean = counts.iter().sum::<f64>() / n as f64;
    let variance = counts.iter().map(|c| (c - mean) * (c - mean)).sum::<f64>() / (n - 1) as f64;
    // (n − 1)·s²/mean is χ² with n − 1 degrees of freedom for Poisson counts: its mean 1 a
    // degree and its standard deviation √(2/(n − 1)); four of them above is not chance.
    if mean <= 0.0 || variance / mean <= 1.0 + 4.0 * libm::sqrt(2.0 / (n - 1) as f64) {
        return None;
    }
    let mut cuts = vec![0, n];
    split(&counts, 0, n, &mut cuts);
    cuts.sort_unstable();
    let steps = cuts
        .windows(2)
        .map(|w| {
            let part = &counts[w[0]..w[1]];
            let rate = part.iter().sum::<f64>() / part.len() as f64;
            // The first step starts with the first arrival; the others at their second.
            let at = if w[0] == 0 {
                0
            } else {
                (from + 1 + w[0] as u64) * SECOND - first
            };
            (at, rate)
        })
        .collect();
    Some(steps)
}

/// Splits `counts[lo..hi]` where the means of its two sides differ most, if beyond four
/// standard errors, and each side again; each cut pushed to `cuts`.
fn split(counts: &[f64], lo: usize, hi: usize, cuts: &mut Vec<usize>) {
    if hi - lo < 4 || cuts.len() > STEPS_MAX {
        return;
    }
    let total: f64 = counts[lo..hi].iter().sum();
    let mut left: f64 = counts[lo..lo + 1].iter().sum();
    let mut best: Option<(f64, usize)> = None;
    for k in lo + 2..=hi - 2 {
        // The counts of `lo..k`.
        left += counts[k - 1];
        let (a, b) = ((k - lo) as f64, (hi - k) as f64);
        let (m1, m2) = (left / a, (total - left) / b);
        // The difference in means over its standard error, each side's counts Poisson.
        let z = (m1 - m2).abs() / libm::sqrt((m1 / a + m2 / b).max(1e-12));
        if z > 4.0 && best.is_none_or(|(bz, _)| z > bz) {
            best = Some((z, k));
        }
    }
    if let Some((_, k)) = best {
        cuts.push(k);
        split(counts, lo, k, cuts);
        split(counts, k, hi, cuts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rate(s)` jobs in second `s`, each working `work(rate)` nanoseconds.
    fn seconds(rate: impl Fn(u64) -> u64, work: impl Fn(u64) -> u64) -> Seconds {
        let mut seconds = Seconds::default();
        for s in 0..20 {
            let r = rate(s);
            for k in 0..r {
                seconds.add(s * SECOND + k * (SECOND / r), work(r));
            }
        }
        seconds
    }

    #[test]
    fn work_that_holds_its_queue_grows_with_the_load_and_work_that_does_not_stays() {
        // A ramp from 100 to 480 jobs a second.
        let rate = |s: u64| 100 + 20 * s;
        // M/M/1 at 500/s: the mean time in the system is 1/(500 − λ).
        let queued = seconds(rate, |r| 1_000_000_000 / (500 - r));
        let row = growth("services.api.work", &queued).expect("judged");
        assert!(row.warned && row.growth > 3.0, "{row:?}");
        assert!(
            row.warning()
                .contains("services.api.work: the self time grows")
        );
        let flat = seconds(rate, |_| 2_000_000);
        let row = growth("services.api.work", &flat).expect("judged");
        assert!(!row.warned && (row.growth - 1.0).abs() < 1e-9, "{row:?}");
    }

    /// Arrivals at `rate(s)` in each second `s` of 30, starting 0.25 s into the first.
    fn arrivals(rate: impl Fn(u64) -> u64) -> BTreeMap<u64, u64> {
        let mut per_second = BTreeMap::new();
        for s in 100..130 {
            per_second.insert(s, rate(s - 100));
        }
        per_second
    }

    #[test]
    fn a_rate_that_changes_is_cut_into_its_steps_and_one_rate_is_constant() {
        let first = 100 * SECOND + SECOND / 4;
        // 100/s, then 400/s from the 10th second, then 200/s from the 20th.
        let stepped = arrivals(|s| match s {
            0..10 => 100,
            10..20 => 400,
            _ => 200,
        });
        let got = steps(&stepped, first).expect("varying");
        assert_eq!(
            got,
            vec![
                (0, 100.0),
                (10 * SECOND - SECOND / 4, 400.0),
                (20 * SECOND - SECOND / 4, 200.0)
            ]
        );
        // Poisson-like counts about 100/s (within ±2√100): one rate.
        let noisy = arrivals(|s| [100, 112, 91, 104, 97, 118, 85, 101, 99, 106][s as usize % 10]);
        assert_eq!(steps(&noisy, first), None);
    }

    #[test]
    fn short_or_thin_traces_are_not_judged() {
        let mut few = Seconds::default();
        for s in 0..5 {
            few.add(s * SECOND, 1);
        }
        assert_eq!(growth("x", &few), None);
        // 20 seconds, but 5 jobs a second: 25 a quarter.
        assert_eq!(growth("x", &seconds(|_| 5, |_| 1_000)), None);
    }
}
