//! How a service's calls run: its `stages`, one after the other; in each stage its calls at
//! once ([`CallStage::All`]) or one of them picked by weight ([`CallStage::Pick`]); each call
//! made on its `call_ratio` of the requests that reach it. This is what traces show of a
//! service per request (a sequence of stages, parallel calls in each, a call made on 30% of
//! requests, one of several request types), and the one form the world runs.
//!
//! The older `call_mode` stands for a form of it, written out once, here
//! ([`Service::call_stages`]): `Sequential` is a stage per call, `FanOut` one stage of all,
//! `Pick` one stage picking one. A file says one or the other ([`mixed`]).
//!
//! A stage names its calls by their index in `calls`, so a call keeps its one path
//! (`services.api.calls[2]`), which reports, `--set`, `--call` and `shrink` name it by,
//! whatever stage it runs in; each call is in exactly one stage.
//!
//! # What a stage does
//!
//! Its calls start together, in the order listed, once the stage before has ended; a call
//! whose `call_ratio` is below 1 draws whether it is made (skipped calls do not exist: no
//! attempt, no count); the stage ends when every call made has ended, and the next starts. A
//! failed call fails the request once its stage has ended, optional or not: `call_ratio` says
//! how often a call is made, not whether its failure matters (a `Fallback` layer says that).
//! A stage whose calls were all skipped ends at once. A `Pick` stage picks one call by weight,
//! then makes it with its `call_ratio`.
//!
//! # Decisions
//!
//! - Names: `stages` (a sequence of stages is what a trace's waterfall shows; `steps` already
//!   names a rate schedule's steps), `All`/`Pick` (all of them, as `Promise.all` and
//!   `join_all`, or one picked, as `call_mode: Pick` already said), and `call_ratio`, since
//!   the house writes a share in 0–1 as `_ratio` (`hit_ratio`, `error_ratio`), where
//!   resilience4j and Envoy have no field for a call an application makes on some requests.
//! - Each call whose `call_ratio` is below 1 draws from a stream of its own
//!   (`services/NAME/calls/I/ratio`), only then: a file without one draws nothing new, and
//!   changing one call's ratio leaves every other draw of the run where it was.

use super::{CallMode, Scenario, Service};
use crate::format::limits::CALLS_MAX;
use crate::format::overrides::segment;
use patterns::ConfigError;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

fn err(field: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::new(field, reason)
}

/// One stage of a service's calls: which calls (by index in `calls`) and how they run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallStage {
    /// These calls at once; the stage ends when every one made has ended (a stage of one is
    /// one call after the stage before).
    All(Vec<u32>),
    /// One of these calls, picked at random in proportion to their `weight` (request types).
    Pick(Vec<u32>),
}

impl CallStage {
    /// The calls of the stage, by index in the service's `calls`.
    pub fn calls(&self) -> &[u32] {
        match self {
            CallStage::All(c) | CallStage::Pick(c) => c,
        }
    }

    /// Its name in a file.
    fn kind(&self) -> &'static str {
        match self {
            CallStage::All(_) => "All",
            CallStage::Pick(_) => "Pick",
        }
    }
}

impl Service {
    /// The stages its calls run in, whichever way the file said it: `stages` as written, or
    /// the stages `call_mode` stands for (without either, a stage per call). The one reader of
    /// `call_mode`: the world, validation, the estimates and export read this.
    pub fn call_stages(&self) -> Cow<'_, [CallStage]> {
        if !self.stages.is_empty() || self.calls.is_empty() {
            return Cow::Borrowed(&self.stages);
        }
        let n = self.calls.len() as u32;
        Cow::Owned(match self.call_mode.unwrap_or_default() {
            CallMode::Sequential => (0..n).map(|i| CallStage::All(vec![i])).collect(),
            CallMode::FanOut => vec![CallStage::All((0..n).collect())],
            CallMode::Pick => vec![CallStage::Pick((0..n).collect())],
        })
    }

    /// Removes call `i`, and it from its stage (the calls after it renumbered; a stage it
    /// leaves empty removed).
    pub fn remove_call(&mut self, i: usize) {
        self.calls.remove(i);
        let i = i as u32;
        for stage in &mut self.stages {
            let calls = match stage {
                CallStage::All(c) | CallStage::Pick(c) => c,
            };
            calls.retain(|&c| c != i);
            for c in calls.iter_mut().filter(|c| **c > i) {
                *c -= 1;
            }
        }
        self.stages.retain(|st| !st.calls().is_empty());
    }
}

/// The first service of `s` that says how its calls run twice (`call_mode` and `stages`):
/// the path of its `call_mode` and what to write instead.
pub fn mixed(s: &Scenario) -> Option<(String, String)> {
    let (name, service) = s
        .services
        .iter()
        .find(|(_, sv)| sv.call_mode.is_some() && !sv.stages.is_empty())?;
    Some(mixed_message(
        &format!("services.{}", segment(name)),
        service,
    ))
}

/// Stages as a file writes them: `[All([0]), Pick([1, 2])]`.
pub fn written(stages: &[CallStage]) -> String {
    let each: Vec<String> = stages.iter().map(CallStage::to_string).collect();
    format!("[{}]", each.join(", "))
}

impl std::fmt::Display for CallStage {
    /// As a file writes it: `Pick([1, 2])`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls: Vec<String> = self.calls().iter().map(u32::to_string).collect();
        write!(f, "{}([{}])", self.kind(), calls.join(", "))
    }
}

/// Checks a service's stages (`path` is the service's): not said twice, every call in exactly
/// one stage, no stage empty, a `Pick` with a positive weight, and each call's `call_ratio`.
pub fn validate(path: &str, s: &Service) -> Result<(), ConfigError> {
    for (i, c) in s.calls.iter().enumerate() {
        if !(c.call_ratio.is_finite() && (0.0..=1.0).contains(&c.call_ratio)) {
            return Err(err(
                format!("{path}.calls[{i}].call_ratio"),
                format!(
                    "must be a ratio between 0 and 1 (the share of requests that make the call), got {}",
                    c.call_ratio
                ),
            ));
        }
    }
    if s.call_mode.is_some() && !s.stages.is_empty() {
        let (field, message) = mixed_message(path, s);
        return Err(err(field, message));
    }
    if s.stages.len() > CALLS_MAX {
        return Err(err(
            format!("{path}.stages"),
            format!(
                "may list at most {CALLS_MAX} stages, got {}",
                s.stages.len()
            ),
        ));
    }
    let mut stage_of: Vec<Option<usize>> = vec![None; s.calls.len()];
    for (k, st) in s.stages.iter().enumerate() {
        stage(path, s, k, st, &mut stage_of)?;
    }
    if !s.stages.is_empty()
        && let Some(i) = stage_of.iter().position(Option::is_none)
    {
        return Err(err(
            format!("{path}.calls[{i}]"),
            format!(
                "is in no stage; add {i} to one of {path}.stages (or a stage of its own, All([{i}])), or remove the call"
            ),
        ));
    }
    if s.stages.is_empty() && s.call_mode == Some(CallMode::Pick) && !s.calls.is_empty() {
        let total: f64 = s.calls.iter().map(|c| c.weight).sum();
        if total <= 0.0 {
            return Err(err(
                format!("{path}.calls"),
                "with call_mode Pick, at least one call needs a positive weight",
            ));
        }
    }
    Ok(())
}

/// Stage `k` of service `s` (`path` is the service's): not empty, naming calls that exist
/// and are in no other stage (`stage_of` says which stage took each call so far), a `Pick`
/// with a positive weight.
fn stage(
    path: &str,
    s: &Service,
    k: usize,
    st: &CallStage,
    stage_of: &mut [Option<usize>],
) -> Result<(), ConfigError> {
    let n = s.calls.len();
    let spath = format!("{path}.stages[{k}]");
    if st.calls().is_empty() {
        return Err(err(
            spath,
            format!(
                "a stage needs at least one call, e.g. {}([0]); remove the empty stage",
                st.kind()
            ),
        ));
    }
    for (j, &c) in st.calls().iter().enumerate() {
        let at = format!("{spath}[{j}]");
        let Some(seen) = stage_of.get_mut(c as usize) else {
            return Err(err(
                at,
                match n {
                    0 => format!("the service has no calls, got call {c}; list its calls in calls"),
                    _ => format!(
                        "must be the index of a call of the service (0 to {}), got {c}",
                        n - 1
                    ),
                },
            ));
        };
        if let Some(other) = *seen {
            return Err(err(
                at,
                format!("call {c} is already in {path}.stages[{other}]; a call runs in one stage"),
            ));
        }
        *seen = Some(k);
    }
    if let CallStage::Pick(calls) = st {
        let total: f64 = calls.iter().map(|&c| s.calls[c as usize].weight).sum();
        if total <= 0.0 {
            return Err(err(
                spath,
                "a Pick stage picks by weight: at least one of its calls needs a positive weight",
            ));
        }
    }
    Ok(())
}

/// The message of a service that says how its calls run twice.
fn mixed_message(path: &str, s: &Service) -> (String, String) {
    let alone = Service {
        stages: Vec::new(),
        ..s.clone()
    };
    (
        format!("{path}.call_mode"),
        format!(
            "call_mode and stages both say how the calls run; keep stages and remove call_mode \
             (call_mode: {:?} is stages: {})",
            s.call_mode.unwrap_or_default(),
            written(&alone.call_stages())
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(extra: &str) -> Service {
        let text = format!(
            r#"Scenario(name: "t", duration: "1s",
                clients: {{ "c": (load: Open(rate: Constant("1/s")), call: (target: "api")) }},
                services: {{
                    "api": (workers: 1, work: Constant(value: "1ms"),
                            calls: [(target: "db"), (target: "db"), (target: "db")]{extra}),
                    "db": (workers: 1, work: Constant(value: "1ms")),
                }})"#
        );
        let s = crate::format::load::parse("t.ron", &text).unwrap();
        s.services["api"].clone()
    }

    #[test]
    fn each_call_mode_stands_for_its_stages() {
        let written_as = |extra: &str| written(&service(extra).call_stages());
        assert_eq!(written_as(""), "[All([0]), All([1]), All([2])]");
        assert_eq!(
            written_as(", call_mode: Sequential"),
            "[All([0]), All([1]), All([2])]"
        );
        assert_eq!(written_as(", call_mode: FanOut"), "[All([0, 1, 2])]");
        assert_eq!(written_as(", call_mode: Pick"), "[Pick([0, 1, 2])]");
        assert_eq!(
            written_as(", stages: [Pick([2, 0]), All([1])]"),
            "[Pick([2, 0]), All([1])]"
        );
    }

    #[test]
    fn a_call_removed_leaves_its_stage_and_the_others_renumbered() {
        let mut s = service(", stages: [All([1]), Pick([2, 0])]");
        s.remove_call(1);
        assert_eq!(written(&s.stages), "[Pick([1, 0])]");
        assert_eq!(s.calls.len(), 2);
        assert!(validate("services.api", &s).is_ok());
    }
}
