//! [`Why`]: why a run failed, in the report's words — for each expectation that failed, and
//! for a metastability verdict that is not a recovery, the failure reasons that dominate, the
//! resources that saturated (workers, queues, pools, limiters) and what held recovery back
//! (retries that multiplied the load, breakers held open, a retry budget spent).
//!
//! | module | what |
//! |---|---|
//! | `window` | the report's series summed over the stretch a failure is about |
//! | `rules` | one function per finding: its condition on the figures, and its evidence |
//! | [`request`] | one followed request (`--request ID`): its calls and attempts, and its cause |
//!
//! # Decisions
//!
//! Every finding is a rule over figures the run measured, printed only when its condition
//! holds, with the numbers that made it hold ([`Finding::evidence`]): the analysis names no
//! cause it cannot show. The stretch is the failure's own: an expectation's window, or, for
//! the metastability verdict, the buckets after the trigger ended (what kept the run down).
//! Figures that the series does not keep by bucket (queue waits, wasted work, pools) are the
//! whole run's, and the finding says so. It is built with the report, from the same figures,
//! so `resim why`, the human report and the HTML page say the same thing.

pub mod request;
mod rules;
mod window;

use super::{ExpectationResult, Report, round3};
use crate::figures::{FailedExample, Figures, Followed};
use crate::format::schema::Scenario;
use request::RequestWhy;
use serde::Serialize;
use std::collections::BTreeMap;
use window::Stretch;

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
    /// Nearly every worker was busy.
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
}

/// A failure reason and its share of the failed requests.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReasonShare {
    /// The reason (`timeout`, `queue_full`, ...).
    pub reason: String,
    /// Requests that failed with it, over the run.
    pub requests: u64,
    /// Its share of the failed requests.
    pub share_ratio: f64,
}

/// Why one thing failed: an expectation, or the run's metastability verdict.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Why {
    /// What failed, as the report names it.
    pub failed: String,
    /// What was observed.
    pub observed: String,
    /// The expectation's index in the file (absent for the metastability verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expectation: Option<usize>,
    /// Start of the stretch analysed, in seconds.
    pub from_s: f64,
    /// Its end, in seconds.
    pub to_s: f64,
    /// Requests offered in it.
    pub offered: u64,
    /// Of those, the share that succeeded (`null` when none was offered).
    pub success_ratio: Option<f64>,
    /// Attempts the clients made per request offered in it (`null` when none was offered).
    pub attempts_per_request: Option<f64>,
    /// The failure reasons of the whole run, the most frequent first.
    pub reasons: Vec<ReasonShare>,
    /// What saturated, and what it did to the requests.
    pub saturated: Vec<Finding>,
    /// What held recovery back.
    pub held_back: Vec<Finding>,
    /// Requests of the stretch that failed, the first of each of the most frequent reasons,
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

/// The first failed requests offered in `[from_s, to_s)` for each of the first reasons of
/// `reasons`, in the order they failed.
fn examples(
    failed: &[FailedExample],
    bucket_s: f64,
    (from_s, to_s): (f64, f64),
    reasons: &[ReasonShare],
) -> Vec<Example> {
    let within = |e: &&FailedExample| {
        let t = e.bucket as f64 * bucket_s;
        t >= from_s && t < to_s
    };
    let mut out = Vec::new();
    for r in reasons.iter().take(EXAMPLE_REASONS_MAX) {
        let first = failed
            .iter()
            .filter(within)
            .filter(|e| e.reason.name() == r.reason)
            .take(EXAMPLES_PER_REASON);
        out.extend(first.map(|e| Example {
            request: e.request,
            reason: r.reason.clone(),
        }));
    }
    out
}

/// The explanations of everything that failed in `report`: each failed expectation in file
/// order, then a metastability verdict that is neither a recovery nor "never degraded".
pub(super) fn explain(scenario: &Scenario, figures: &Figures, report: &Report) -> Vec<Why> {
    let down = report
        .metastability
        .as_ref()
        .filter(|m| matches!(m.verdict.as_str(), "metastable" | "collapsed"));
    // Most runs (every seed of a sweep that holds) have nothing to explain: they do not pay
    // for the rules' tables.
    if down.is_none() && report.expectations.iter().all(|e| e.pass) {
        return Vec::new();
    }
    let inputs = rules::Inputs::new(scenario, figures, report);
    let mut out: Vec<Why> = report
        .expectations
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.pass)
        .map(|(i, e)| expectation(&inputs, i, e))
        .collect();
    if let Some(m) = down {
        // What kept the run down is what happened after the trigger; a run that was never
        // healthy is explained over all of it.
        let from = if m.verdict == "metastable" {
            m.trigger_end_s
        } else {
            0.0
        };
        let stretch = Stretch::of(report, from, None, m.baseline_to_s);
        let failed = format!("metastability: {}", m.trigger_words());
        let observed = m
            .clients
            .iter()
            .map(|c| format!("{}: {}", c.name, c.summary))
            .collect::<Vec<_>>()
            .join("; ");
        out.push(analyse(&inputs, failed, observed, None, &stretch, false));
    }
    if !figures.failed_examples.is_empty() {
        for w in &mut out {
            let span = (w.from_s, w.to_s);
            w.examples = examples(&figures.failed_examples, report.bucket_s, span, &w.reasons);
        }
    }
    out
}

/// Why expectation `index` failed, over its window.
fn expectation(inputs: &rules::Inputs, index: usize, e: &ExpectationResult) -> Why {
    // An expectation counts the run's last bucket when its window runs to the end.
    let (from, to) = (e.threshold.from_s, e.threshold.to_s);
    let to = to.unwrap_or(inputs.report.simulated_s);
    let stretch = Stretch::of(inputs.report, from, Some(to), from);
    let latency = e.threshold.metric == "latency_ms_p99";
    analyse(
        inputs,
        format!("expectations[{index}] {}", e.expectation),
        e.observed.clone(),
        Some(index),
        &stretch,
        latency,
    )
}

fn analyse(
    inputs: &rules::Inputs,
    failed: String,
    observed: String,
    expectation: Option<usize>,
    stretch: &Stretch,
    latency: bool,
) -> Why {
    let (saturated, held_back) = rules::findings(inputs, stretch, latency);
    Why {
        failed,
        observed,
        expectation,
        from_s: stretch.from_s,
        to_s: stretch.to_s,
        offered: stretch.offered,
        success_ratio: (stretch.offered > 0)
            .then(|| round3(stretch.successes as f64 / stretch.offered as f64)),
        attempts_per_request: stretch.attempts_per_request().map(round3),
        reasons: reasons(&inputs.report.summary.failures_by_reason),
        saturated,
        held_back,
        examples: Vec::new(),
    }
}

/// The reasons, the most frequent first (ties in name order).
fn reasons(by_reason: &BTreeMap<String, u64>) -> Vec<ReasonShare> {
    let total: u64 = by_reason.values().sum();
    let mut out: Vec<ReasonShare> = by_reason
        .iter()
        .map(|(reason, &n)| ReasonShare {
            reason: reason.clone(),
            requests: n,
            share_ratio: round3(n as f64 / total.max(1) as f64),
        })
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.requests));
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
                "{file}: --expectation {i}: there are {} expectations: {}",
                verdicts.len(),
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

/// What `resim why` prints for `report`: the run, then the explanation of expectation
/// `asked` (see [`expectation_named`]) or of everything that failed, or that nothing did;
/// the replay command last. With `json`, the same as one JSON object. An error names an
/// expectation that `asked` does not.
pub fn render(
    scenario: &Scenario,
    report: &Report,
    asked: Option<&str>,
    file: &str,
    json: bool,
) -> Result<String, String> {
    let mut out = vec![heading(report)];
    let chosen: Vec<&Why> = match asked {
        Some(asked) => {
            let index = expectation_named(scenario, &report.expectations, asked, file)?;
            let e = &report.expectations[index];
            if e.pass {
                out.push(format!(
                    "expectations[{index}] {}: holds ({}): nothing failed to explain",
                    e.expectation, e.observed
                ));
            }
            report
                .why
                .iter()
                .filter(|w| w.expectation == Some(index))
                .collect()
        }
        None => report.why.iter().collect(),
    };
    if json {
        return Ok(as_json(report, Some(chosen), None));
    }
    if asked.is_none() && chosen.is_empty() {
        out.push(nothing_failed(report));
    }
    for w in chosen {
        out.push(String::new());
        let lines = w.lines();
        out.push(lines[0].clone());
        out.extend(lines[1..].iter().map(|l| format!("  {l}")));
        out.extend(w.examples_lines(report).iter().map(|l| format!("  {l}")));
    }
    out.push(String::new());
    out.push(format!("replay: {}", report.replay_command()));
    Ok(out.join("\n") + "\n")
}

/// What `resim why --request ID` prints: the run, then the request's cause and chain, then
/// the command that traces its events; with `json`, one JSON object. An error says that no
/// request has the id.
pub fn render_request(
    report: &Report,
    followed: &Followed,
    file: &str,
    json: bool,
) -> Result<String, String> {
    let why = request::explain(followed, file)?;
    if json {
        return Ok(as_json(report, None, Some(&why)));
    }
    let mut out = vec![heading(report), String::new()];
    out.extend(why.lines());
    let end = why.last_s;
    let millis = |s: f64| libm::round(s * 1e3) as u64;
    out.push(String::new());
    out.push(format!(
        "its events: resim run {} --seed {}{} --trace {}ms..{}ms",
        report.file,
        report.seed,
        report.replay_flags,
        millis(why.offered_s),
        millis(end)
    ));
    Ok(out.join("\n") + "\n")
}

/// The first line of `resim why`: the run.
fn heading(report: &Report) -> String {
    format!(
        "resim why · {} · seed {} · digest {}",
        report.scenario, report.seed, report.digest
    )
}

/// `resim why --json`: the run, and the explanations or the followed request.
fn as_json(report: &Report, why: Option<Vec<&Why>>, request: Option<&RequestWhy>) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        scenario: &'a str,
        seed: u64,
        digest: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        why: Option<Vec<&'a Why>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        request: Option<&'a RequestWhy>,
        replay: String,
    }
    let out = Out {
        scenario: &report.scenario,
        seed: report.seed,
        digest: &report.digest,
        why,
        request,
        replay: report.replay_command(),
    };
    serde_json::to_string_pretty(&out).expect("the explanation serialises") + "\n"
}

/// The command that follows request `id` of the run of `report`.
pub fn request_command(report: &Report, id: u64) -> String {
    format!(
        "resim why {} --seed {}{} --request {id}",
        report.file, report.seed, report.replay_flags
    )
}

/// The line of a run where nothing failed.
fn nothing_failed(report: &Report) -> String {
    let held = match report.expectations.len() {
        0 => "the scenario has no expectation".to_string(),
        1 => "its expectation held".to_string(),
        n => format!("all {n} expectations held"),
    };
    let verdict = report.metastability.as_ref().map_or(String::new(), |m| {
        format!("; metastability: {}", m.verdict.replace('_', " "))
    });
    format!("nothing failed: {held}{verdict}")
}

impl Why {
    /// What failed and what was observed, in one line.
    pub fn heading(&self) -> String {
        format!("{}: {}", self.failed, self.observed)
    }

    /// The stretch in words, then the failure reasons of the run.
    pub fn context(&self) -> Vec<String> {
        let ratio = self
            .success_ratio
            .map_or("–".to_string(), |r| format!("{:.1}%", 100.0 * r));
        let attempts = self
            .attempts_per_request
            .map_or(String::new(), |a| format!(", {a:.2} attempts per request"));
        let mut out = vec![format!(
            "from {}s to {}s: {} requests offered, {ratio} succeeded{attempts}",
            self.from_s, self.to_s, self.offered
        )];
        if !self.reasons.is_empty() {
            let reasons: Vec<String> = self
                .reasons
                .iter()
                .map(|r| {
                    format!(
                        "{} {:.0}% ({})",
                        r.reason,
                        100.0 * r.share_ratio,
                        r.requests
                    )
                })
                .collect();
            out.push(format!("failures over the run: {}", reasons.join(", ")));
        }
        out
    }

    /// The findings under their titles (`where it failed`: what saturated or queued;
    /// `held recovery back`), those with any.
    pub fn sections(&self) -> Vec<(&'static str, &[Finding])> {
        [
            ("where it failed", self.saturated.as_slice()),
            ("held recovery back", self.held_back.as_slice()),
        ]
        .into_iter()
        .filter(|(_, f)| !f.is_empty())
        .collect()
    }

    /// The examples and the command that follows the first, when there are any.
    pub fn examples_lines(&self, report: &Report) -> Vec<String> {
        let Some(first) = self.examples.first() else {
            return Vec::new();
        };
        let mut by_reason: Vec<(&str, Vec<String>)> = Vec::new();
        for e in &self.examples {
            match by_reason.iter_mut().find(|(r, _)| *r == e.reason) {
                Some((_, ids)) => ids.push(format!("#{}", e.request)),
                None => by_reason.push((&e.reason, vec![format!("#{}", e.request)])),
            }
        }
        let listed: Vec<String> = by_reason
            .iter()
            .map(|(reason, ids)| format!("{reason} {}", ids.join(", ")))
            .collect();
        vec![
            format!("failed requests, for example: {}", listed.join("; ")),
            format!("follow one: {}", request_command(report, first.request)),
        ]
    }

    /// What a report says when no rule held.
    pub const NO_FINDING: &str =
        "no resource saturated and nothing held recovery back by the rules `resim why` checks";

    /// The explanation as the text reports print it: the heading, then lines indented under it.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![self.heading()];
        out.extend(self.context());
        for (title, findings) in self.sections() {
            out.push(format!("{title}:"));
            out.extend(findings.iter().map(|f| format!("  {}", f.text)));
        }
        if self.sections().is_empty() {
            out.push(Self::NO_FINDING.to_string());
        }
        out
    }
}
