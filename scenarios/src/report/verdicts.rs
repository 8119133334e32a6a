//! Verdicts on a scenario's expectations, computed from the run's figures.
//!
//! Windows are counted in report buckets, by the bucket in which each request was offered
//! (see [`crate::figures`]): a window's success ratio is that of the requests sent during it.
//! A window that holds no bucket is refused by validation; one whose buckets hold no request
//! fails, saying so, since a ratio of nothing is no evidence either way.
//!
//! A latency is judged on the requests that have one: `P99AtMost` on the client's successes,
//! `MeanWaitAtMost` on the attempts that started work at the service. When those are fewer
//! than [`JUDGED_SHARE_MIN`] (99%) of the requests that ended (of the attempts that arrived),
//! the verdict carries a warning that says so with the counts: a p99 of the successes speaks
//! for the 99th percentile of all requests only while at least 99% of them succeed, since past
//! that the slowest 1% hold failures whose time the bound never saw (a p99 of 97.5ms passes at
//! 1.1% success otherwise, with nothing to tell the reader). The same share is asked of the
//! mean wait, whose refused attempts would have waited longest.

use super::metastability::Metastability;
use super::types::{ExpectationResult, Summary, Threshold};
use super::{ratio, round3};
use crate::figures::{ClientFigures, Figures};
use crate::format::schema::Expectation;
use crate::format::verdict::NoVerdict;
use sim_core::SimDuration;

/// The least share of the requests (for `P99AtMost`: of those that ended, the successes; for
/// `MeanWaitAtMost`: of the attempts that arrived, those that started work) a latency
/// expectation is judged on before its verdict carries a warning: 99%, the share below which
/// a p99 of the successes no longer bounds the 99th percentile of all requests.
pub const JUDGED_SHARE_MIN: f64 = 0.99;

/// The verdict on `e`, with its warning when it is judged on too few of the requests.
pub(super) fn judge(
    e: &Expectation,
    figures: &Figures,
    summary: &Summary,
    verdict: &Result<Metastability, NoVerdict>,
) -> ExpectationResult {
    let mut result = verdict_of(e, figures, summary, verdict);
    result.warning = judged_on_few(e, figures);
    result
}

/// The warning of a latency expectation judged on fewer than [`JUDGED_SHARE_MIN`] of what it
/// is about; `None` for the others, and for one with nothing to judge (which fails anyway).
fn judged_on_few(e: &Expectation, figures: &Figures) -> Option<String> {
    let (judged, of) = match e {
        Expectation::P99AtMost { client, .. } => {
            let c = figures.clients.iter().find(|c| c.name == *client)?;
            (c.successes(), c.successes() + c.failures())
        }
        Expectation::MeanWaitAtMost { service, .. } => {
            let s = figures.services.iter().find(|s| s.name == *service)?;
            (s.wait.count(), s.counts.arrivals)
        }
        _ => return None,
    };
    if judged == 0 || judged as f64 >= JUDGED_SHARE_MIN * of as f64 {
        return None;
    }
    let judged = share(judged, of);
    Some(match e {
        Expectation::P99AtMost { client, .. } => format!(
            "judged on the successes only, {judged} of the requests of {client} that ended; with more than 1% failing, fewer than 99% of all requests were served, within the bound or not: bound the failures too, e.g. GoodputAtLeast(client: {client:?}, after: \"0s\", min_ratio: 0.99)"
        ),
        _ => format!(
            "judged on the attempts that started work only, {judged} of those that reached the service; the rest (refused, shed, dropped or still queued) had no wait to count and would have waited longest: bound them too, e.g. with a GoodputAtLeast on its callers"
        ),
    })
}

/// `1.1% (877 of 79824)`.
fn share(part: u64, of: u64) -> String {
    format!("{} ({part} of {of})", pct(ratio(part, of)))
}

/// The verdict on `e` alone.
fn verdict_of(
    e: &Expectation,
    figures: &Figures,
    summary: &Summary,
    verdict: &Result<Metastability, NoVerdict>,
) -> ExpectationResult {
    let client = |name: &str| {
        figures
            .clients
            .iter()
            .find(|c| c.name == name)
            .expect("expectation clients are checked by validation")
    };
    match e {
        Expectation::GoodputAtLeast {
            client: name,
            after,
            until,
            min_ratio: r,
        } => goodput(figures, client(name), (*after, *until), Bound::AtLeast(*r)),
        Expectation::GoodputAtMost {
            client: name,
            after,
            until,
            max_ratio: r,
        } => goodput(figures, client(name), (*after, *until), Bound::AtMost(*r)),
        Expectation::P99AtMost { client: name, max } => p99(client(name), *max),
        Expectation::AmplificationAtMost { max } => ExpectationResult {
            expectation: format!("client amplification at most {max:.2}"),
            observed: format!("{:.2}", summary.amplification),
            pass: summary.amplification <= *max,
            threshold: Threshold {
                metric: "amplification".to_string(),
                client: None,
                bound: AT_MOST.to_string(),
                value: *max,
                from_s: 0.0,
                to_s: None,
                observed: Some(summary.amplification),
            },
            warning: None,
        },
        Expectation::RecoveredWithin {
            client: name,
            after,
            within,
            min_ratio,
        } => recovered(figures, client(name), *after, *within, *min_ratio),
        Expectation::Recovers { .. } | Expectation::Metastable { .. } => {
            super::metastability::expectation(e, figures, verdict)
        }
        Expectation::ClassGoodputAtLeast {
            client: name,
            class,
            min_ratio: r,
        } => class_goodput(client(name), class, Bound::AtLeast(*r)),
        Expectation::ClassGoodputAtMost {
            client: name,
            class,
            max_ratio: r,
        } => class_goodput(client(name), class, Bound::AtMost(*r)),
        Expectation::BlastRadiusAtMost { service, max_ratio } => {
            blast_radius(figures, service, *max_ratio)
        }
        Expectation::MeanWaitAtMost { service, max } => mean_wait(figures, service, *max),
    }
}

/// `MeanWaitAtMost`: the mean time in `service`'s queue of the attempts that started work.
fn mean_wait(figures: &Figures, service: &str, max: SimDuration) -> ExpectationResult {
    let wait = &figures
        .services
        .iter()
        .find(|s| s.name == service)
        .expect("expectation services are checked by validation")
        .wait;
    // Without an attempt that started work there is no wait to bound: that is not a pass.
    let observed = (wait.count() > 0).then(|| wait.mean());
    duration_at_most(
        format!("{service} mean wait in queue at most {max}"),
        ("wait_ms_mean", service),
        max,
        observed.ok_or("no attempt started work"),
    )
}

/// `P99AtMost`: the 99th percentile latency of the client's successful requests.
fn p99(c: &ClientFigures, max: SimDuration) -> ExpectationResult {
    // Without successes there is no latency to bound: that is not a pass.
    let observed = (c.latency.count() > 0).then(|| c.latency.quantile(0.99));
    duration_at_most(
        format!("{} p99 latency at most {max}", c.name),
        ("latency_ms_p99", &c.name),
        max,
        observed.ok_or("no successes"),
    )
}

/// A duration bounded by `max`: `observed`, or why there is none (which fails), as the
/// `metric` of `who` (a client or a service).
fn duration_at_most(
    expectation: String,
    (metric, who): (&str, &str),
    max: SimDuration,
    observed: Result<SimDuration, &str>,
) -> ExpectationResult {
    let ms = observed.ok().map(|d| d.as_millis_f64());
    ExpectationResult {
        expectation,
        observed: match observed {
            Ok(d) => format!("{:.1}ms", d.as_millis_f64()),
            Err(why) => why.to_string(),
        },
        pass: observed.is_ok_and(|d| d <= max),
        threshold: Threshold {
            metric: metric.to_string(),
            client: Some(who.to_string()),
            bound: AT_MOST.to_string(),
            value: max.as_millis_f64(),
            from_s: 0.0,
            to_s: None,
            observed: ms.map(round3),
        },
        warning: None,
    }
}

/// `BlastRadiusAtMost`: the share of caller units that lost all their replicas of `service`.
fn blast_radius(figures: &Figures, service: &str, max: f64) -> ExpectationResult {
    let blast = figures
        .services
        .iter()
        .find(|s| s.name == service)
        .and_then(|s| s.blast.as_ref())
        .expect("blast radius expectations are checked by validation");
    let observed = ratio(blast.units_lost_all, blast.units);
    ExpectationResult {
        expectation: format!(
            "{service} caller units that lost all their replicas at most {}",
            pct(max)
        ),
        observed: format!(
            "{} ({} of {} units)",
            pct(observed),
            blast.units_lost_all,
            blast.units
        ),
        pass: observed <= max,
        threshold: Threshold {
            metric: "lost_all_ratio".to_string(),
            client: Some(service.to_string()),
            bound: AT_MOST.to_string(),
            value: max,
            from_s: 0.0,
            to_s: None,
            observed: Some(round3(observed)),
        },
        warning: None,
    }
}

/// `ClassGoodputAtLeast` / `ClassGoodputAtMost`: over the whole run, the successes of one
/// class of a client among its offered requests (those still in flight at the end count as
/// not successful).
fn class_goodput(c: &ClientFigures, class: &str, bound: Bound) -> ExpectationResult {
    let figures = c
        .classes
        .iter()
        .find(|k| k.name == class)
        .expect("expectation classes are checked by validation");
    let (ok, offered) = (figures.total.successes, figures.total.offered);
    let observed = ratio(ok, offered);
    let (word, r, pass) = match bound {
        Bound::AtLeast(r) => ("least", r, observed >= r),
        Bound::AtMost(r) => ("most", r, observed <= r),
    };
    let expectation = format!(
        "{} class {class} success ratio at {word} {}",
        c.name,
        pct(r)
    );
    let mut threshold = Threshold {
        metric: "class_success_ratio".to_string(),
        client: Some(format!("{}/{class}", c.name)),
        bound: format!("at_{word}"),
        value: r,
        from_s: 0.0,
        to_s: None,
        observed: None,
    };
    if offered == 0 {
        return ExpectationResult {
            expectation,
            observed: "no requests of the class".to_string(),
            pass: false,
            threshold,
            warning: None,
        };
    }
    threshold.observed = Some(round3(observed));
    ExpectationResult {
        expectation,
        observed: format!("{} ({ok} of {offered})", pct(observed)),
        pass,
        threshold,
        warning: None,
    }
}

/// The names of the two bounds of a [`Threshold`].
const AT_LEAST: &str = "at_least";
const AT_MOST: &str = "at_most";

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn bucket_index(t: SimDuration, bucket: SimDuration) -> usize {
    (t.as_nanos() / bucket.as_nanos()) as usize
}

/// The successes and offered requests of a client among the requests offered in buckets
/// `[from, to)`.
fn window_ratio(c: &ClientFigures, from: usize, to: usize) -> (u64, u64) {
    let to = to.min(c.buckets.len());
    let window = c.buckets.get(from.min(to)..to).unwrap_or_default();
    let offered = window.iter().map(|b| b.offered).sum();
    let ok = window.iter().map(|b| b.successes).sum();
    (ok, offered)
}

/// Which side of a success ratio an expectation wants.
#[derive(Clone, Copy)]
enum Bound {
    AtLeast(f64),
    AtMost(f64),
}

/// `GoodputAtLeast` / `GoodputAtMost` over `[after, until)`.
fn goodput(
    figures: &Figures,
    c: &ClientFigures,
    (after, until): (SimDuration, Option<SimDuration>),
    bound: Bound,
) -> ExpectationResult {
    let (bucket, buckets) = (figures.bucket, figures.bucket_count());
    let to = until.map_or(buckets, |u| bucket_index(u, bucket).min(buckets));
    let (ok, offered) = window_ratio(c, bucket_index(after, bucket), to);
    let observed = ratio(ok, offered);
    let window = match until {
        Some(u) => format!("from {after} to {u}"),
        None => format!("after {after}"),
    };
    let (word, r, pass) = match bound {
        Bound::AtLeast(r) => ("least", r, observed >= r),
        Bound::AtMost(r) => ("most", r, observed <= r),
    };
    let expectation = format!("{} success ratio {window} at {word} {}", c.name, pct(r));
    let mut threshold = Threshold {
        metric: "success_ratio".to_string(),
        client: Some(c.name.clone()),
        bound: format!("at_{word}"),
        value: r,
        from_s: after.as_secs_f64(),
        to_s: until.map(|u| u.as_secs_f64()),
        observed: None,
    };
    // A ratio of no requests is no evidence either way: not a pass, and said so.
    if offered == 0 {
        return ExpectationResult {
            expectation,
            observed: "no requests in the window".to_string(),
            pass: false,
            threshold,
            warning: None,
        };
    }
    threshold.observed = Some(round3(observed));
    ExpectationResult {
        expectation,
        observed: format!("{} ({ok} of {offered})", pct(observed)),
        pass,
        threshold,
        warning: None,
    }
}

/// `RecoveredWithin`: the first bucket at or after `after` from which every bucket up to the
/// last complete one keeps `min_ratio`.
fn recovered(
    figures: &Figures,
    c: &ClientFigures,
    after: SimDuration,
    within: SimDuration,
    min_ratio: f64,
) -> ExpectationResult {
    let (bucket, buckets) = (figures.bucket, figures.bucket_count());
    // The last bucket holds requests still in flight when the run stopped.
    let last = buckets.saturating_sub(1);
    let first = after.as_nanos().div_ceil(bucket.as_nanos()) as usize;
    // A bucket in which no request was offered is no evidence either way: it neither breaks
    // a recovery nor makes one.
    let verdict = |i: usize| {
        let (ok, offered) = window_ratio(c, i, i + 1);
        (offered > 0).then(|| ratio(ok, offered) >= min_ratio)
    };
    // Recovery starts at the first offered-to bucket after the last bucket that misses the
    // ratio: one pass backwards from the end finds it, where trying every start and scanning
    // forward from each was quadratic in the number of buckets.
    let recovered = (first..last)
        .rev()
        .map(|i| (i, verdict(i)))
        .take_while(|(_, v)| *v != Some(false))
        .filter(|(_, v)| v.is_some())
        .last()
        .map(|(i, _)| i);
    let expectation = format!(
        "{} back to {} success within {within} after {after}",
        c.name,
        pct(min_ratio)
    );
    let mut threshold = Threshold {
        metric: "recovery".to_string(),
        client: Some(c.name.clone()),
        bound: AT_LEAST.to_string(),
        value: min_ratio,
        from_s: after.as_secs_f64(),
        to_s: Some(after.saturating_add(within).as_secs_f64()),
        observed: None,
    };
    match recovered {
        Some(k) => {
            let took = (bucket * k as u64).saturating_sub(after);
            threshold.observed = Some(round3(took.as_secs_f64()));
            ExpectationResult {
                expectation,
                observed: format!("recovered {took} after"),
                pass: took <= within,
                threshold,
                warning: None,
            }
        }
        None => ExpectationResult {
            expectation,
            observed: "never recovered".to_string(),
            pass: false,
            threshold,
            warning: None,
        },
    }
}
