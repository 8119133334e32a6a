//! A followed request in the report's words: the cause in one line ([`cause`]) and the chain
//! of calls and attempts as indented lines with their times ([`RequestWhy::lines`]).

use super::{AttemptWhy, CallWhy, QueueWhy, RequestWhy};
use crate::figures::{REASONS, Reason};

/// A reason by its report name (`queue_full`).
fn reason(name: &str) -> Option<Reason> {
    REASONS.iter().copied().find(|r| r.name() == name)
}

/// A duration in milliseconds, as the chain prints it.
fn ms(x: f64) -> String {
    // Differences of times in seconds carry float noise below the nanosecond.
    let x = libm::round(x * 1e3) / 1e3;
    if x >= 100.0 || x == libm::round(x) {
        format!("{x:.0}ms")
    } else {
        format!("{x:.1}ms")
    }
}

fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// The service of a replica's name (`api` for `api/0`).
fn service(replica: &str) -> &str {
    replica.rsplit_once('/').map_or(replica, |(s, _)| s)
}

impl QueueWhy {
    /// Of the jobs the workers took while it waited, those for callers already gone.
    fn gone_words(&self) -> String {
        if self.taken == 0 {
            return "the workers took no other job meanwhile".to_string();
        }
        format!(
            "{} of the {} jobs the workers took meanwhile were for callers already gone",
            self.taken_gone, self.taken
        )
    }
}

impl AttemptWhy {
    /// It timed out while it waited in its replica's queue.
    fn queued_past_timeout(&self) -> bool {
        let timed_out = self.outcome.as_deref() == Some("timeout");
        match (&self.queued, self.ended_s) {
            (Some(q), Some(end)) if timed_out => q.started_s.is_none_or(|s| s >= end),
            _ => false,
        }
    }

    /// What happened to it, in a phrase (`waited in api's queue past its 200ms timeout ...`).
    fn phrase(&self) -> String {
        let replica = self.replica.as_deref().unwrap_or("its target");
        let timeout = self
            .timeout_ms
            .map_or(String::new(), |t| format!(" {}", ms(t)));
        if self.queued_past_timeout() {
            let q = self.queued.as_ref().expect("it queued");
            return format!(
                "waited in {}'s queue past its{timeout} timeout, behind {} ({})",
                service(replica),
                plural(q.depth, "job"),
                q.gone_words()
            );
        }
        let outcome = self.outcome.as_deref().unwrap_or("in_flight");
        match (outcome, &self.at_replica, self.sent_s) {
            ("ok", _, _) => format!("succeeded at {replica}"),
            ("in_flight", _, _) => "was still out when the run stopped".to_string(),
            ("timeout", Some(end), _) if end.worked_ms.is_some() => {
                let queued = self.queued.as_ref().and_then(|q| {
                    let waited = q.waited_ms?;
                    Some(format!(
                        ", after {} in its queue behind {}",
                        ms(waited),
                        plural(q.depth, "job")
                    ))
                });
                format!(
                    "was still being worked on at {replica} past its{timeout} timeout{}",
                    queued.unwrap_or_default()
                )
            }
            ("timeout", _, _) => format!("got no reply from {replica} within its{timeout} timeout"),
            ("dependency", _, Some(_)) if self.calls.iter().any(CallWhy::failed) => {
                let below = self.calls.iter().rev().find(|c| c.failed());
                let below = below.expect("checked above");
                format!(
                    "failed at {replica}: its call #{} to {} ended with {} ({})",
                    below.call,
                    below.target,
                    below.outcome.as_deref().unwrap_or("in_flight"),
                    failure_words(below)
                )
            }
            (o, _, None) => reason(o).map_or(o.to_string(), |r| r.words().to_string()),
            (o, _, Some(_)) => format!(
                "{} at {replica}",
                reason(o).map_or(o.to_string(), |r| r.words().to_string())
            ),
        }
    }

    /// The caller's decision after it, in words.
    fn decision_words(&self) -> Option<String> {
        let words = match self.decision.as_deref()? {
            "retry" => format!("retry after {}", ms(self.retry_after_ms.unwrap_or(0.0))),
            "attempts_exhausted" if self.attempt == 1 => {
                "no retry: the policy allows one attempt".to_string()
            }
            "attempts_exhausted" => format!("no retry: all {} attempts made", self.attempt),
            "budget_exhausted" => "no retry: the retry budget refused it".to_string(),
            "deadline" => "no retry: another attempt could not end before the deadline".to_string(),
            "not_retryable" => "no retry: the policy does not retry this failure".to_string(),
            "not_idempotent" => "no retry: the operation is not idempotent".to_string(),
            "retry_after_too_long" => {
                "no retry: the server asked to wait longer than the policy allows".to_string()
            }
            _ => "no retry policy".to_string(),
        };
        Some(words)
    }
}

/// The cause of the request's outcome in one line.
pub(super) fn cause(r: &RequestWhy) -> String {
    let call = &r.call;
    let n = call.attempts.len() as u64;
    let failed: Vec<&AttemptWhy> = call
        .attempts
        .iter()
        .filter(|a| a.outcome.as_deref().is_some_and(|o| o != "ok"))
        .collect();
    let latency = r
        .latency_ms
        .map_or(String::new(), |l| format!(" in {}", ms(l)));
    match r.outcome.as_str() {
        "in_flight" => format!(
            "still in flight when the run stopped, after {}",
            plural(n, "attempt")
        ),
        "ok" if failed.is_empty() => format!("succeeded at the first attempt{latency}"),
        "ok" => format!(
            "succeeded at attempt {n}{latency}, after {}",
            attempts_words(&failed)
        ),
        outcome => {
            let how = match outcome {
                "timeout" => "failed: timed out at the client".to_string(),
                _ => format!("failed at the client with {outcome}"),
            };
            let fell = if call.fell_back {
                " (its fallback answered)"
            } else {
                ""
            };
            let n = plural(n, "attempt");
            format!("{how} after {n}{fell}; {}", failure_words(call))
        }
    }
}

impl CallWhy {
    /// It ended with a failure (not cancelled by its owner).
    fn failed(&self) -> bool {
        self.outcome
            .as_deref()
            .is_some_and(|o| o != "ok" && o != "cancelled")
    }
}

/// What a failed call's attempts went through, and why it was not retried.
fn failure_words(call: &CallWhy) -> String {
    let failed: Vec<&AttemptWhy> = call
        .attempts
        .iter()
        .filter(|a| a.outcome.as_deref().is_some_and(|o| o != "ok"))
        .collect();
    let mut words = vec![attempts_words(&failed)];
    if let Some(d) = call.attempts.last().and_then(AttemptWhy::decision_words)
        && d.starts_with("no retry:")
    {
        words.push(d);
    }
    words.retain(|w| !w.is_empty());
    words.join("; ")
}

/// Which attempts of `group`, out of `all` failed ones: `each attempt`, `attempt 2`,
/// `attempts 1 and 3`.
fn who(group: &[&AttemptWhy], all: usize) -> String {
    let numbers: Vec<String> = group.iter().map(|a| a.attempt.to_string()).collect();
    match numbers.as_slice() {
        _ if all > 1 && group.len() == all => "each attempt".to_string(),
        [one] => format!("attempt {one}"),
        [first @ .., last] => format!("attempts {} and {last}", first.join(", ")),
        [] => unreachable!("a group has an attempt"),
    }
}

/// What the failed attempts went through, the attempts that went through the same grouped:
/// the waits in one service's queue past the timeout in one clause, with the jobs the
/// workers took meanwhile summed.
fn attempts_words(failed: &[&AttemptWhy]) -> String {
    let mut groups: Vec<(String, Vec<&AttemptWhy>)> = Vec::new();
    for a in failed {
        let key = match (a.queued_past_timeout(), a.replica.as_deref()) {
            (true, Some(r)) => format!("queue {}", service(r)),
            _ => a.phrase(),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(a),
            None => groups.push((key, vec![a])),
        }
    }
    let clauses: Vec<String> = groups
        .iter()
        .map(|(key, group)| match key.strip_prefix("queue ") {
            Some(svc) => queue_words(svc, group, failed.len()),
            None => format!("{} {key}", who(group, failed.len())),
        })
        .collect();
    clauses.join("; ")
}

/// Attempts that waited in `svc`'s queue past their timeout, in one clause.
fn queue_words(svc: &str, group: &[&AttemptWhy], all: usize) -> String {
    let queued = group.iter().filter_map(|a| a.queued.as_ref());
    let (lo, hi) = queued.clone().fold((u64::MAX, 0), |(lo, hi), q| {
        (lo.min(q.depth), hi.max(q.depth))
    });
    let (taken, gone) = queued.fold((0, 0), |(t, g), q| (t + q.taken, g + q.taken_gone));
    let depth = if lo == hi {
        plural(lo, "job")
    } else {
        format!("{lo} to {hi} jobs")
    };
    let timeout = group[0]
        .timeout_ms
        .map_or(String::new(), |t| format!(" {}", ms(t)));
    let meanwhile = QueueWhy {
        taken,
        taken_gone: gone,
        ..QueueWhy::default()
    };
    format!(
        "{} waited in {svc}'s queue past the{timeout} timeout, behind {depth} ({})",
        who(group, all),
        meanwhile.gone_words()
    )
}

/// A time in the chain's column.
fn time(s: f64) -> String {
    format!("{s:>9.3}s")
}

/// Who made a call, as its path names it: `users` for `clients.users.call`, `api` for
/// `services.api.calls[0]`.
fn caller(path: &str) -> &str {
    let mut parts = path.split('.');
    match (parts.next(), parts.next()) {
        (Some("clients" | "services"), Some(name)) => name,
        _ => "the caller",
    }
}

/// One line of the chain, before the lines are put in time order.
struct Entry {
    /// When, in seconds.
    at: f64,
    /// Its depth in the tree of calls (the indentation).
    depth: usize,
    /// The attempt it is about (call id and number), if any.
    attempt: Option<(u64, u32)>,
    /// It is the attempt's first line, which names it.
    head: bool,
    /// The line without its time and indentation.
    text: String,
}

impl RequestWhy {
    /// The request as the text reports print it: the heading and the cause, then the chain.
    pub fn lines(&self) -> Vec<String> {
        let latency = self
            .latency_ms
            .map_or(String::new(), |l| format!(", {}", ms(l)));
        let mut out = vec![
            format!(
                "request #{} · {} → {} · offered at {:.3}s · {} after {}{latency}",
                self.request,
                self.call.path,
                self.call.target,
                self.offered_s,
                self.outcome,
                plural(u64::from(self.attempts), "attempt")
            ),
            format!("cause: {}", self.cause),
            String::new(),
        ];
        out.extend(chain(&self.call));
        out
    }
}

/// The lines of `call` and of everything made for it, in time order (lines at the same
/// instant in the order of the tree). A line that does not follow a line of its own attempt
/// names the attempt, so that a reply that came after the caller moved on reads as what it is.
fn chain(call: &CallWhy) -> Vec<String> {
    let mut entries = Vec::new();
    call.entries(0, &mut entries);
    // A stable sort keeps the tree's order among lines of the same instant.
    entries.sort_by(|a, b| a.at.total_cmp(&b.at));
    let mut previous: Option<(u64, u32)> = None;
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let pad = "  ".repeat(e.depth);
        let named = match e.attempt {
            Some((c, n)) if !e.head && previous != e.attempt && c == call.call => {
                format!("attempt {n}: ")
            }
            Some((c, n)) if !e.head && previous != e.attempt => format!("call #{c} attempt {n}: "),
            _ => String::new(),
        };
        out.push(format!("{} {pad}{named}{}", time(e.at), e.text));
        previous = e.attempt;
    }
    out
}

impl CallWhy {
    /// The call's entries at `depth`: its start, its attempts' and nested calls', its end.
    fn entries(&self, depth: usize, out: &mut Vec<Entry>) {
        let deadline = self
            .deadline_s
            .map_or(String::new(), |d| format!(", deadline {d:.3}s"));
        out.push(Entry {
            at: self.started_s,
            depth,
            attempt: None,
            head: false,
            text: format!(
                "call #{} {} → {}{deadline}",
                self.call, self.path, self.target
            ),
        });
        let who = caller(&self.path);
        for a in &self.attempts {
            a.entries(self, who, depth + 1, out);
        }
        for c in &self.calls {
            c.entries(depth + 1, out);
        }
        if let (Some(at), Some(outcome)) = (self.ended_s, &self.outcome) {
            let fell = if self.fell_back {
                " (its fallback answered)"
            } else {
                ""
            };
            let took = ms(1e3 * (at - self.started_s));
            out.push(Entry {
                at,
                depth,
                attempt: None,
                head: false,
                text: format!("call #{} ended: {outcome}{fell} after {took}", self.call),
            });
        }
    }
}

impl AttemptWhy {
    /// The attempt's entries at `depth`: sent, at the replica, the outcome `who` (its
    /// caller) got and decided on, and the downstream calls its job made.
    fn entries(&self, call: &CallWhy, who: &str, depth: usize, out: &mut Vec<Entry>) {
        let head = match (self.sent_s, &self.replica) {
            (Some(at), Some(r)) => {
                let timeout = self
                    .timeout_ms
                    .map_or(String::new(), |t| format!(", timeout {}", ms(t)));
                (at, format!("attempt {} sent to {r}{timeout}", self.attempt))
            }
            _ => (
                self.ended_s.unwrap_or(call.started_s),
                format!("attempt {} not sent", self.attempt),
            ),
        };
        out.push(Entry {
            at: head.0,
            depth,
            attempt: Some((call.call, self.attempt)),
            head: true,
            text: head.1,
        });
        let mut line = |at: f64, text: String| {
            out.push(Entry {
                at,
                depth: depth + 1,
                attempt: Some((call.call, self.attempt)),
                head: false,
                text,
            });
        };
        let replica = self.replica.as_deref().unwrap_or("its target");
        if let Some(q) = &self.queued {
            line(
                q.at_s,
                format!("queued at {replica} behind {}", plural(q.depth, "job")),
            );
            if let (Some(at), Some(waited)) = (q.started_s, q.waited_ms) {
                let text = format!(
                    "a worker took it after {} in the queue; {}",
                    ms(waited),
                    q.gone_words()
                );
                line(at, text);
            }
        }
        if let Some(end) = &self.at_replica {
            line(end.at_s, replica_end_words(replica, end, who, depth));
        }
        if let (Some(at), Some(outcome)) = (self.ended_s, &self.outcome) {
            line(at, self.caller_words(who, outcome));
        }
        for c in &self.calls {
            c.entries(depth + 1, out);
        }
    }

    /// The caller's view of its end: the outcome `who` got, and the decision.
    fn caller_words(&self, who: &str, outcome: &str) -> String {
        let decision = self
            .decision_words()
            .map_or(String::new(), |d| format!(" → {d}"));
        let what = match (outcome, self.sent_s) {
            ("timeout", _) => format!(
                "{who} timed out after {}",
                ms(self.timeout_ms.unwrap_or(0.0))
            ),
            (o, None) => format!(
                "{who}'s gates: {}",
                reason(o).map_or(o.to_string(), |r| r.words().to_string())
            ),
            (o, Some(_)) => format!("{who} got {o}"),
        };
        format!("{what}{decision}")
    }
}

/// How the job of an attempt `who` made ended at `replica`; `depth` tells a client's
/// attempt (1) from a downstream one, whose caller may still wait when the request above it
/// has been given up.
fn replica_end_words(replica: &str, end: &super::ReplicaEnd, who: &str, depth: usize) -> String {
    let gone = match (end.caller_gone, depth) {
        (false, _) => String::new(),
        (true, 1) => format!(", after {who} had given up on this attempt"),
        (true, _) => ", for work already given up upstream".to_string(),
    };
    match (end.outcome.as_str(), end.worked_ms) {
        ("cancelled", _) => format!("{replica} dropped it: {who} cancelled it"),
        ("lost", _) => format!("lost on the way to {replica} or in its crash"),
        (o, Some(w)) => format!("{replica} answered {o} after {} of work{gone}", ms(w)),
        (o, None) => format!(
            "{replica}: {}{gone}",
            reason(o).map_or(o.to_string(), |r| r.words().to_string())
        ),
    }
}
