//! `resim why` in words: what it prints for a run ([`render`]: what failed, once, then each
//! window's explanation), for one followed request ([`render_request`]), and the lines of one
//! window ([`Why::lines`]) that the human report and the HTML page print too.

use super::request::{self, RequestWhy};
use super::{Finding, Report, Scenario, Why, add_examples, expectation_named, explain, failures};
use super::{reasons, window};
use crate::figures::{FailedExample, Followed};
use serde::Serialize;

/// What `resim why` explains in a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Asked<'a> {
    /// Everything that failed, window by window.
    All,
    /// One expectation (see [`expectation_named`]).
    Expectation(&'a str),
    /// One window, `[from_s, to_s)`.
    Window(f64, f64),
}

/// What `resim why` prints for `report`: the run, what failed, then the explanations that
/// `asked` names (each window once, with what it explains), or that nothing failed; the
/// replay command last. `examples` are the failed requests the run kept, to name in each
/// window. With `json`, the same as one JSON object. An error names an expectation that
/// `asked` does not, or a window outside the run.
pub fn render(
    scenario: &Scenario,
    report: &Report,
    asked: Asked,
    examples: &[FailedExample],
    file: &str,
    json: bool,
) -> Result<String, String> {
    let mut out = vec![heading(report)];
    let mut chosen: Vec<Why> = match asked {
        Asked::Expectation(asked) => {
            let index = expectation_named(scenario, &report.expectations, asked, file)?;
            let e = &report.expectations[index];
            if e.pass {
                out.push(format!(
                    "expectations[{index}] {}: holds ({}): nothing failed to explain",
                    e.expectation, e.observed
                ));
            }
            explain(scenario, report, false)
                .into_iter()
                .filter(|w| w.failed.iter().any(|f| f.expectation == Some(index)))
                .collect()
        }
        Asked::Window(from, to) => {
            if to <= from {
                return Err(format!(
                    "{file}: --window {from}s..{to}s is empty: give FROM..TO with TO after FROM, \
                     such as 20s..32s"
                ));
            }
            if from >= report.simulated_s {
                return Err(format!(
                    "{file}: --window {from}s..{to}s starts after the run, which is {}s long; \
                     give a window within it, such as 0s..{}s",
                    report.simulated_s, report.simulated_s
                ));
            }
            vec![window(scenario, report, from, to.min(report.simulated_s))]
        }
        Asked::All => explain(scenario, report, true),
    };
    add_examples(&mut chosen, examples, report.bucket_s);
    if json {
        return Ok(as_json(report, Some(chosen.iter().collect()), None));
    }
    if asked == Asked::All {
        out.push(String::new());
        out.extend(failed_lines(report));
    }
    for w in &chosen {
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

/// What failed in the run, or that nothing did; then the failure reasons of the run's
/// requests.
fn failed_lines(report: &Report) -> Vec<String> {
    let failed = failures(report);
    let mut out = Vec::new();
    if failed.is_empty() {
        out.push(nothing_failed(report));
    } else {
        out.push("failed:".to_string());
        out.extend(failed.iter().map(|(f, _)| format!("  {}", f.text)));
    }
    let s = &report.summary;
    if s.failures > 0 {
        let listed: Vec<String> = reasons(&s.failures_by_reason)
            .iter()
            .map(|r| format!("{} {} ({:.0}%)", r.reason, r.count, 100.0 * r.share_ratio))
            .collect();
        out.push(format!(
            "requests that failed over the run: {} of {}: {}",
            s.failures,
            s.offered,
            listed.join(", ")
        ));
    }
    out
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
    /// The window and what failed in it, in one line.
    pub fn heading(&self) -> String {
        let part: Vec<String> = self
            .failed
            .iter()
            .map(|f| match f.expectation {
                Some(i) => format!("expectations[{i}]"),
                None => "metastability".to_string(),
            })
            .collect();
        let part = if part.is_empty() {
            String::new()
        } else {
            format!(" · explains {}", part.join(", "))
        };
        format!("{}s to {}s · {}{part}", self.from_s, self.to_s, self.window)
    }

    /// The window's requests in words, then its failed attempts by reason and where.
    pub fn context(&self) -> Vec<String> {
        let ratio = self
            .success_ratio
            .map_or("–".to_string(), |r| format!("{:.1}%", 100.0 * r));
        let attempts = self
            .attempts_per_request
            .map_or(String::new(), |a| format!(", {a:.2} attempts per request"));
        let mut out = vec![format!(
            "{} requests offered, {ratio} succeeded{attempts}",
            self.offered
        )];
        if !self.failed_attempts.is_empty() {
            let listed: Vec<String> = self
                .failed_attempts
                .iter()
                .map(|r| format!("{} {} at {}", r.reason, r.count, r.at))
                .collect();
            out.push(format!("failed attempts: {}", listed.join(", ")));
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
