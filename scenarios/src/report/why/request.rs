//! [`RequestWhy`]: why one request ended as it did (`resim why --request ID`), read from the
//! steps the world recorded while it followed the request ([`Followed`]): every call made for
//! it as a tree (a call's attempts, the downstream calls each attempt's job made), each
//! attempt's journey (sent, queued, started, answered, timed out) and each caller's
//! decision, and one line that says the cause.
//!
//! # Decisions
//!
//! The tree is built from the steps alone: a call's maker names its parent (the attempt whose
//! job made it, or the hedged or fan-out call it races for), and ids grow, so a call is
//! attached to its parent after every call made after it. The cause names only what the steps
//! show: a wait past the timeout is a wait the replica measured, and "callers already gone"
//! counts the jobs the workers took while the attempt waited.

mod words;

use super::super::round3;
use crate::figures::{Decision, Followed, JobEnd, Maker, Reason, Step, What};
use serde::Serialize;
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// One followed request: its outcome, its cause in a line, and the calls made for it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RequestWhy {
    /// Its id (`request #N`).
    pub request: u64,
    /// When its client offered it, in seconds.
    pub offered_s: f64,
    /// `ok`, the failure reason, or `in_flight` when the run stopped first.
    pub outcome: String,
    /// From its offer to its outcome (absent when in flight).
    pub latency_ms: Option<f64>,
    /// Attempts its client made.
    pub attempts: u32,
    /// What happened and why, in one line.
    pub cause: String,
    /// When the last thing happened to it, in seconds (a job can outlive its caller's wait).
    pub last_s: f64,
    /// The client's call, with everything made for it nested.
    pub call: CallWhy,
}

/// One call made for the request.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallWhy {
    /// Its id (`call #N`).
    pub call: u64,
    /// Its call site (`clients.users.call`).
    pub path: String,
    /// The service it calls.
    pub target: String,
    /// When it started, in seconds.
    pub started_s: f64,
    /// When it fails with `deadline`, in seconds (absent without a deadline).
    pub deadline_s: Option<f64>,
    /// Its attempts, the first first.
    pub attempts: Vec<AttemptWhy>,
    /// The racing calls of a hedged call, or the leaves of a fan-out.
    pub calls: Vec<CallWhy>,
    /// When it ended, in seconds (absent when it had not when the run stopped).
    pub ended_s: Option<f64>,
    /// `ok`, the failure reason, or `cancelled` (its owner dropped it).
    pub outcome: Option<String>,
    /// Its fallback answered for it.
    pub fell_back: bool,
}

/// One attempt of a call, at its caller and at its replica.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct AttemptWhy {
    /// Its number (1 for the first).
    pub attempt: u32,
    /// When it left, in seconds (absent when a gate of the caller's refused it).
    pub sent_s: Option<f64>,
    /// The replica it went to (`api/0`).
    pub replica: Option<String>,
    /// How long its caller waited for it at most.
    pub timeout_ms: Option<f64>,
    /// Its wait in the replica's queue, if it queued.
    pub queued: Option<QueueWhy>,
    /// How it ended at the replica.
    pub at_replica: Option<ReplicaEnd>,
    /// When its caller learned its outcome, in seconds.
    pub ended_s: Option<f64>,
    /// Its outcome for the caller: `ok` or the failure reason.
    pub outcome: Option<String>,
    /// What the caller did next (`retry`, `attempts_exhausted`, `budget_exhausted`, ...).
    pub decision: Option<String>,
    /// The backoff before the retry.
    pub retry_after_ms: Option<f64>,
    /// The downstream calls its job made.
    pub calls: Vec<CallWhy>,
}

/// An attempt's wait in its replica's queue.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct QueueWhy {
    /// When it joined the queue, in seconds.
    pub at_s: f64,
    /// Jobs waiting before it.
    pub depth: u64,
    /// Its wait, when a worker took it.
    pub waited_ms: Option<f64>,
    /// When a worker took it, in seconds.
    pub started_s: Option<f64>,
    /// Other jobs the workers took from the queue while it waited.
    pub taken: u64,
    /// Of those, jobs whose callers had already given up.
    pub taken_gone: u64,
}

/// How an attempt's job ended at its replica.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReplicaEnd {
    /// When, in seconds.
    pub at_s: f64,
    /// `ok`, the failure reason, `cancelled` or `lost`.
    pub outcome: String,
    /// Its time on a worker, if it had one.
    pub worked_ms: Option<f64>,
    /// Its caller had already given up.
    pub caller_gone: bool,
}

fn seconds(t: SimTime) -> f64 {
    t.as_nanos() as f64 / 1e9
}

fn millis(d: SimDuration) -> f64 {
    round3(d.as_nanos() as f64 / 1e6)
}

fn outcome_name(outcome: Option<Reason>) -> String {
    outcome.map_or("ok", Reason::name).to_string()
}

/// Why the request `followed` names ended as it did; an error, for an id no request of the
/// run has, says what the run offered.
pub fn explain(followed: &Followed, file: &str) -> Result<RequestWhy, String> {
    // A request's first step is its client's call; without one, no request has the id (a
    // distributed limiter's leases serve none, and carry the id 0).
    let first = followed.steps.first().filter(|s| {
        s.call == followed.request
            && matches!(
                s.what,
                What::Call {
                    maker: Maker::Client,
                    ..
                }
            )
    });
    let Some(Step { at, .. }) = first else {
        return Err(unknown(followed, file));
    };
    let mut calls = Tree::default();
    for step in &followed.steps {
        calls.add(step);
    }
    let call = calls.assemble(followed.request);
    let ended = call.ended_s;
    let mut out = RequestWhy {
        request: followed.request,
        offered_s: seconds(*at),
        outcome: call.outcome.clone().unwrap_or("in_flight".to_string()),
        latency_ms: ended.map(|e| round3((e - seconds(*at)) * 1e3)),
        attempts: call.attempts.len() as u32,
        cause: String::new(),
        last_s: followed.steps.last().map_or(0.0, |s| seconds(s.at)),
        call,
    };
    out.cause = words::cause(&out);
    Ok(out)
}

/// The message for an id no request of the run has.
fn unknown(followed: &Followed, file: &str) -> String {
    let id = followed.request;
    let offered = match followed.ids {
        Some((first, last)) => format!(
            "the run offered {} requests, with ids from {first} to {last}",
            followed.offered
        ),
        None => "the run offered no request".to_string(),
    };
    let what = match followed.call_of {
        Some(request) => format!("#{id} is a downstream call of request #{request}, not a request"),
        None => format!("no request of the run has the id {id}"),
    };
    format!(
        "{file}: --request {id}: {what}; {offered} (a request's id is its client's call id, \
         as `resim run --trace FROM..TO` prints it: `request #N`; downstream calls take ids \
         between them)"
    )
}

/// The calls of the request by id, each with its maker, before they are nested.
#[derive(Default)]
struct Tree {
    calls: BTreeMap<u64, (Maker, CallWhy)>,
}

impl Tree {
    fn add(&mut self, step: &Step) {
        if let What::Call {
            maker,
            path,
            target,
            deadline,
        } = &step.what
        {
            let call = CallWhy {
                call: step.call,
                path: path.clone(),
                target: target.clone(),
                started_s: seconds(step.at),
                deadline_s: deadline.map(seconds),
                attempts: Vec::new(),
                calls: Vec::new(),
                ended_s: None,
                outcome: None,
                fell_back: false,
            };
            self.calls.insert(step.call, (*maker, call));
            return;
        }
        let Some((_, call)) = self.calls.get_mut(&step.call) else {
            return;
        };
        call.add(step);
    }

    /// The call `root` with every other call nested under its maker.
    fn assemble(mut self, root: u64) -> CallWhy {
        while let Some((id, (maker, call))) = self.calls.pop_last() {
            if id == root {
                return call;
            }
            let parent = match maker {
                Maker::Job(a) | Maker::Limiter(a) => self
                    .calls
                    .get_mut(&a.call)
                    .and_then(|(_, c)| c.attempts.iter_mut().find(|x| x.attempt == a.attempt))
                    .map(|a| &mut a.calls),
                Maker::Hedge(a) => self.calls.get_mut(&a.call).map(|(_, c)| &mut c.calls),
                Maker::Leaf(shell) => self.calls.get_mut(&shell).map(|(_, c)| &mut c.calls),
                Maker::Client => None,
            };
            if let Some(calls) = parent {
                calls.insert(0, call);
            }
        }
        unreachable!("the followed request's first step is its client's call")
    }
}

impl CallWhy {
    fn attempt(&mut self, attempt: u32) -> &mut AttemptWhy {
        if let Some(i) = self.attempts.iter().position(|a| a.attempt == attempt) {
            return &mut self.attempts[i];
        }
        self.attempts.push(AttemptWhy {
            attempt,
            ..AttemptWhy::default()
        });
        self.attempts.last_mut().expect("just pushed")
    }

    fn add(&mut self, step: &Step) {
        let at = seconds(step.at);
        match &step.what {
            What::Call { .. } => unreachable!("a call's start makes the call"),
            What::Cancelled => {
                self.ended_s = Some(at);
                self.outcome = Some("cancelled".to_string());
            }
            What::Finished { outcome, fell_back } => {
                self.ended_s = Some(at);
                self.outcome = Some(outcome_name(*outcome));
                self.fell_back = *fell_back;
            }
            What::Sent {
                attempt,
                service,
                replica,
                timeout_at,
            } => {
                let a = self.attempt(*attempt);
                a.sent_s = Some(at);
                a.replica = Some(format!("{service}/{replica}"));
                a.timeout_ms = timeout_at.map(|t| millis(t - step.at));
            }
            What::Queued { attempt, depth } => {
                self.attempt(*attempt).queued = Some(QueueWhy {
                    at_s: at,
                    depth: *depth,
                    ..QueueWhy::default()
                });
            }
            What::Started { attempt, .. } | What::Ended { attempt, .. } => {
                self.attempt(*attempt).at_replica(step);
            }
            What::Attempted {
                attempt,
                outcome,
                decision,
                ..
            } => self.attempt(*attempt).decided(at, *outcome, *decision),
        }
    }
}

impl AttemptWhy {
    /// A step of its job at the replica.
    fn at_replica(&mut self, step: &Step) {
        let at = seconds(step.at);
        match step.what {
            What::Started {
                waited,
                taken,
                gone,
                ..
            } => {
                let q = self.queued.get_or_insert_with(QueueWhy::default);
                q.waited_ms = Some(millis(waited));
                q.started_s = Some(at);
                (q.taken, q.taken_gone) = (taken, gone);
            }
            What::Ended {
                end, worked, gone, ..
            } => {
                let outcome = match end {
                    JobEnd::Answered(o) => outcome_name(o),
                    JobEnd::Cancelled => "cancelled".to_string(),
                    JobEnd::Lost => "lost".to_string(),
                };
                self.at_replica = Some(ReplicaEnd {
                    at_s: at,
                    outcome,
                    worked_ms: worked.map(millis),
                    caller_gone: gone,
                });
            }
            _ => unreachable!("only a job's steps"),
        }
    }

    /// The caller learned its outcome and decided.
    fn decided(&mut self, at: f64, outcome: Option<Reason>, decision: Option<Decision>) {
        self.ended_s = Some(at);
        self.outcome = Some(outcome_name(outcome));
        self.decision = decision.map(|d| d.name().to_string());
        if let Some(Decision::Retry(after)) = decision {
            self.retry_after_ms = Some(millis(after));
        }
    }
}
