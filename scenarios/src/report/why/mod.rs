//! [`Why`]: why a run failed, window by window — for each window that matters (a trigger of
//! the file and the recovery after it, the stretch where failures concentrate, a failed
//! expectation's window, or the window asked for), what failed in it, the resources that
//! saturated in it (workers, queues, pools, limiters) and what held recovery back (retries
//! that multiplied the load, breakers held open, a retry budget spent), each computed from
//! what happened in the window.
//!
//! | module | what |
//! |---|---|
//! | `windows` | the windows of a run: triggers, recoveries, where failures concentrate |
//! | `window` | the report's series summed over one window |
//! | `rules` | one function per finding: its condition on the figures, its evidence, and what it explains |
//! | [`request`] | one followed request (`--request ID`): its calls and attempts, and its cause |
//! | `text` | what `resim why` prints, and a window's lines in the reports |
//!
//! [`window`] (the function) explains any window of a run from its report alone: `resim why
//! --window`, and the explorer's selected window, call it.
//!
//! # Decisions
//!
//! Every finding is a rule over figures the run measured, printed only when its condition
//! holds, with the numbers that made it hold ([`Finding::evidence`]): the analysis names no
//! cause it cannot show. Findings are computed from the window's buckets, so a failure
//! concentrated in a few seconds is explained by what happened in them, not by whole-run
//! averages; figures that the series does not keep by bucket (queue waits, wasted work,
//! pools) are the whole run's, and the finding says so. Within a window, findings are ranked
//! by what they explain there ([`Finding::explained`]: the failed attempts they account for).
//! A failed expectation or verdict is listed once, with the windows that overlap it; a
//! window is shown once, whatever number of failures it is part of. It is built with the
//! report, from the same figures, so `resim why`, the human report and the HTML page say the
//! same thing.

pub mod request;
mod rules;
mod text;
mod window;
pub mod windows;

use super::{ExpectationResult, Report, round3};
use crate::figures::FailedExample;
use crate::format::schema::Scenario;
use serde::Serialize;
use std::collections::BTreeMap;
pub use text::{Asked, render, render_request, request_command};
use window::Stretch;
pub use windows::{Span, SpanKind};

/// What a finding says, as a name tests and programs can match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Queue waits at a service reached past its callers' timeout.
    QueueWaitsPastTimeout,
    /// Time in a queue made most of a latency that broke its bound.
    QueueWaitsMakeLatency,
    /// A full queue takes longer to serve than the callers wait: whoever joins it expires.
    FullQueueOutlivesTimeout,
    /// A queue was full and refused attempts.
    QueueFull,
    /// Nearly every worker was busy, for some of the window.
    WorkersBusy,
    /// A service refused or failed attempts for another reason (limiter, shedder, ...).
    Refused,
    /// Connection pools ran out: checkouts timed out.
    PoolExhausted,
    /// Workers served jobs whose callers had already given up.
    WastedWork,
    /// The clients made many more attempts per request than before.
    RetriesAmplify,
    /// A service received more attempts than its workers serve (what held recovery back
    /// when retries amplified the load, what saturated otherwise).
    LoadAboveCapacity,
    /// A retry budget refused retries.
    RetryBudgetRefused,
    /// Breakers were open.
    BreakerOpen,
}

/// One finding: a rule that held, about one service or call site, with its evidence.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    /// The rule.
    pub rule: Rule,
    /// The service (`api`) or call site (`users → api`) it is about.
    pub subject: String,
    /// The finding in words.
    pub text: String,
    /// The figures that made the rule hold, by name.
    pub evidence: BTreeMap<String, f64>,
    /// The failed attempts of the window it accounts for (timeouts, refusals and failures
    /// at its subject while the rule held); findings are ranked by it.
    pub explained: u64,
}

/// A failure reason and how many requests or attempts failed with it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReasonShare {
    /// The reason (`timeout`, `queue_full`, ...).
    pub reason: String,
    /// Where: the call site whose attempts timed out (`users → api`), or the service that
    /// refused or failed them (empty for the run's failed requests).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub at: String,
    /// How many.
    pub count: u64,
    /// Its share of the failures listed with it.
    pub share_ratio: f64,
}

/// Something that failed: an expectation, or the run's metastability verdict.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Failed {
    /// The expectation's index in the file (absent for the metastability verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expectation: Option<usize>,
    /// What failed and what was observed, as the report says it.
    pub text: String,
}

/// Why a window of the run failed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Why {
    /// What the window is (`trigger`, `recovery`, `concentrated`, `run`, `expectation`,
    /// `verdict`, `asked`).
    pub kind: SpanKind,
    /// The window in words (`slowdown db ×5`, `after slowdown db ×5`).
    pub window: String,
    /// Its start, in seconds.
    pub from_s: f64,
    /// Its end, in seconds.
    pub to_s: f64,
    /// What failed that the window overlaps: expectations and the metastability verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<Failed>,
    /// Requests offered in it.
    pub offered: u64,
    /// Of those, the share that succeeded (`null` when none was offered).
    pub success_ratio: Option<f64>,
    /// Attempts the clients made per request offered in it (`null` when none was offered).
    pub attempts_per_request: Option<f64>,
    /// Attempts that failed in it, by reason and where, the most first.
    pub failed_attempts: Vec<ReasonShare>,
    /// What saturated, and what it did to the requests, the finding that explains most first.
    pub saturated: Vec<Finding>,
    /// What held recovery back.
    pub held_back: Vec<Finding>,
    /// Requests of the window that failed, the first of each of the most frequent reasons,
    /// to follow with `resim why --request` (only `resim why` collects them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
}

/// A failed request named as an example.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Example {
    /// Its id (`request #N`).
    pub request: u64,
    /// Why it failed.
    pub reason: String,
}

/// Reasons that get examples, the most frequent first.
const EXAMPLE_REASONS_MAX: usize = 3;

/// Examples per reason.
const EXAMPLES_PER_REASON: usize = 2;

/// The first failed requests offered in `[from_s, to_s)` for each of its most frequent
/// reasons (by the examples the run kept in it), in the order they failed.
fn examples(failed: &[FailedExample], bucket_s: f64, (from_s, to_s): (f64, f64)) -> Vec<Example> {
    let within: Vec<&FailedExample> = failed
        .iter()
        .filter(|e| {
            let t = e.bucket as f64 * bucket_s;
            t >= from_s && t < to_s
        })
        .collect();
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for e in &within {
        match counts.iter_mut().find(|(r, _)| *r == e.reason.name()) {
            Some((_, n)) => *n += 1,
            None => counts.push((e.reason.name(), 1)),
        }
    }
    // The most frequent first; ties in name order, as the run's reasons are listed.
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = Vec::new();
    for (reason, _) in counts.iter().take(EXAMPLE_REASONS_MAX) {
        let first = within
            .iter()
            .filter(|e| e.reason.name() == *reason)
            .take(EXAMPLES_PER_REASON);
        out.extend(first.map(|e| Example {
            request: e.request,
            reason: reason.to_string(),
        }));
    }
    out
}

/// What failed in `report`: each failed expectation in file order (with its window), then a
/// metastability verdict that is neither a recovery nor "never degraded" (with the stretch
/// it reads: from the end of the trigger, or the whole run when it never was healthy).
fn failures(report: &Report) -> Vec<(Failed, Span)> {
    let mut out: Vec<(Failed, Span)> = report
        .expectations
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.pass)
        .map(|(i, e)| {
            let (from, to) = (e.threshold.from_s, e.threshold.to_s);
            let failed = Failed {
                expectation: Some(i),
                text: format!("expectations[{i}] {}: {}", e.expectation, e.observed),
            };
            let span = Span {
                kind: SpanKind::Expectation,
                label: format!("the window of expectations[{i}]"),
                from_s: from,
                to_s: to.unwrap_or(report.simulated_s),
                before_s: from,
            };
            (failed, span)
        })
        .collect();
    let down = report
        .metastability
        .as_ref()
        .filter(|m| matches!(m.verdict.as_str(), "metastable" | "collapsed"));
    if let Some(m) = down {
        let from = if m.verdict == "metastable" {
            m.trigger_end_s
        } else {
            0.0
        };
        let observed = m
            .clients
            .iter()
            .map(|c| format!("{}: {}", c.name, c.summary))
            .collect::<Vec<_>>()
            .join("; ");
        let failed = Failed {
            expectation: None,
            text: format!("metastability: {}: {observed}", m.trigger_words()),
        };
        let span = Span {
            kind: SpanKind::Verdict,
            label: "what the metastability verdict reads".to_string(),
            from_s: from,
            to_s: report.simulated_s,
            before_s: m.baseline_to_s,
        };
        out.push((failed, span));
    }
    out
}

/// The explanations of `report`, window by window: when something failed (an expectation,
/// the metastability verdict), or, with `always`, when requests failed at all. Empty when
/// there is nothing to explain.
pub fn explain(scenario: &Scenario, report: &Report, always: bool) -> Vec<Why> {
    let failed = failures(report);
    // Most runs (every seed of a sweep that holds) have nothing to explain: they do not pay
    // for the rules' tables.
    if failed.is_empty() && !(always && report.summary.failures > 0) {
        return Vec::new();
    }
    let inputs = rules::Inputs::new(scenario, report);
    let mut spans = windows::find(report);
    // A failure that no window overlaps is explained over its own window.
    for (_, span) in &failed {
        if !spans.iter().any(|s| overlap(s, span)) {
            spans.push(span.clone());
        }
    }
    let mut out: Vec<Why> = Vec::new();
    for span in spans {
        let failed: Vec<Failed> = failed
            .iter()
            .filter(|(_, s)| overlap(s, &span))
            .map(|(f, _)| f.clone())
            .collect();
        let (failures, _) = windows::failures_in(report, span.from_s, span.to_s);
        // A window where nothing failed, and that no failure overlaps, is left out.
        if failures == 0 && failed.is_empty() {
            continue;
        }
        let mut why = analyse(&inputs, &span, latency(report, &failed));
        why.failed = failed;
        // A finding over the whole run's figures is the same in every window: it is shown
        // once, in the first window that has it.
        let shown = |f: &Finding| {
            f.text.contains("(whole run")
                && out
                    .iter()
                    .any(|w| w.saturated.iter().any(|g| g.text == f.text))
        };
        why.saturated.retain(|f| !shown(f));
        out.push(why);
    }
    out
}

/// The two windows share some time (an instant window shares its instant).
fn overlap(a: &Span, b: &Span) -> bool {
    a.from_s < b.to_s.max(b.from_s + 1e-9) && b.from_s < a.to_s.max(a.from_s + 1e-9)
}

/// Why the window `[from_s, to_s)` of the run of `report` went as it did, from what happened
/// in its buckets: what any window of a run (`resim why --window`, the explorer's selection)
/// is explained by. The window is whole buckets, those that start in it.
pub fn window(scenario: &Scenario, report: &Report, from_s: f64, to_s: f64) -> Why {
    let inputs = rules::Inputs::new(scenario, report);
    let span = Span {
        kind: SpanKind::Asked,
        label: "the window asked for".to_string(),
        from_s,
        to_s,
        before_s: from_s,
    };
    let failed: Vec<Failed> = failures(report)
        .into_iter()
        .filter(|(_, s)| overlap(s, &span))
        .map(|(f, _)| f)
        .collect();
    let mut why = analyse(&inputs, &span, latency(report, &failed));
    why.failed = failed;
    why
}

/// Some of `failed` is a latency bound (the rules then look at what made the latency).
fn latency(report: &Report, failed: &[Failed]) -> bool {
    failed.iter().any(|f| {
        f.expectation
            .is_some_and(|i| report.expectations[i].threshold.metric == "latency_ms_p99")
    })
}

/// Adds to each explanation the failed requests of its window among `failed` (the examples
/// a run kept when asked).
pub fn add_examples(why: &mut [Why], failed: &[FailedExample], bucket_s: f64) {
    if failed.is_empty() {
        return;
    }
    for w in why {
        w.examples = examples(failed, bucket_s, (w.from_s, w.to_s));
    }
}

fn analyse(inputs: &rules::Inputs, span: &Span, latency: bool) -> Why {
    // The expectation's window runs to the run's end: it counts the run's last bucket, as
    // the expectation does; the windows found leave it out (requests still in flight).
    let to = match span.kind {
        SpanKind::Verdict => None,
        _ => Some(span.to_s),
    };
    let stretch = Stretch::of(inputs.report, span.from_s, to, span.before_s);
    let (saturated, held_back) = rules::findings(inputs, &stretch, latency);
    Why {
        kind: span.kind,
        window: span.label.clone(),
        failed: Vec::new(),
        from_s: stretch.from_s,
        to_s: stretch.to_s,
        offered: stretch.offered,
        success_ratio: (stretch.offered > 0)
            .then(|| round3(stretch.successes as f64 / stretch.offered as f64)),
        attempts_per_request: stretch.attempts_per_request().map(round3),
        failed_attempts: stretch.failed_attempts(&inputs.report.calls),
        saturated,
        held_back,
        examples: Vec::new(),
    }
}

/// The reasons, the most frequent first (ties in name order), with their shares.
fn reasons(by_reason: &BTreeMap<String, u64>) -> Vec<ReasonShare> {
    shares(
        by_reason
            .iter()
            .map(|(reason, &n)| (reason.clone(), String::new(), n))
            .collect(),
    )
}

/// `(reason, where, count)` as shares of their sum, the most first (ties in their order).
fn shares(counts: Vec<(String, String, u64)>) -> Vec<ReasonShare> {
    let total: u64 = counts.iter().map(|c| c.2).sum();
    let mut out: Vec<ReasonShare> = counts
        .into_iter()
        .filter(|c| c.2 > 0)
        .map(|(reason, at, count)| ReasonShare {
            reason,
            at,
            count,
            share_ratio: round3(count as f64 / total.max(1) as f64),
        })
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.count));
    out
}

/// The index of the expectation `asked` names in `verdicts` (the report's verdicts on
/// `scenario`'s expectations): its index (`2` for `expectations[2]`), its kind
/// (`GoodputAtLeast`) or words of its text in the report; an error lists them all.
pub fn expectation_named(
    scenario: &Scenario,
    verdicts: &[ExpectationResult],
    asked: &str,
    file: &str,
) -> Result<usize, String> {
    let listed = || {
        scenario
            .expectations
            .iter()
            .zip(verdicts)
            .enumerate()
            .map(|(i, (e, v))| format!("[{i}] {} ({})", e.name(), v.expectation))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let index = match asked.parse::<usize>() {
        Ok(i) if i < verdicts.len() => i,
        Ok(i) => {
            return Err(format!(
                "{file}: --expectation {i}: {}: {}",
                match verdicts.len() {
                    1 => "there is 1 expectation".to_string(),
                    n => format!("there are {n} expectations"),
                },
                listed()
            ));
        }
        Err(_) => {
            let words = asked.to_lowercase();
            let matching: Vec<usize> = (0..verdicts.len())
                .filter(|&i| {
                    scenario.expectations[i].name().to_lowercase() == words
                        || verdicts[i].expectation.to_lowercase().contains(&words)
                })
                .collect();
            match matching.as_slice() {
                [i] => *i,
                [] => {
                    return Err(format!(
                        "{file}: --expectation {asked:?} names none of the expectations: {}",
                        listed()
                    ));
                }
                _ => {
                    return Err(format!(
                        "{file}: --expectation {asked:?} names more than one expectation; give its index: {}",
                        listed()
                    ));
                }
            }
        }
    };
    Ok(index)
}
