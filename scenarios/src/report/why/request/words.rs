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
        out.extend(self.call.lines(0));
        out
    }
}

impl CallWhy {
    /// The call's lines, indented by `depth`, its attempts and nested calls in time order.
    fn lines(&self, depth: usize) -> Vec<String> {
        let pad = "  ".repeat(depth);
        let deadline = self
            .deadline_s
            .map_or(String::new(), |d| format!(", deadline {d:.3}s"));
        let mut out = vec![format!(
            "{} {pad}call #{} {} → {}{deadline}",
            time(self.started_s),
            self.call,
            self.path,
            self.target
        )];
        let mut timed: Vec<(f64, Vec<String>)> = Vec::new();
        for a in &self.attempts {
            timed.push((
                a.sent_s.or(a.ended_s).unwrap_or(self.started_s),
                a.lines(depth + 1),
            ));
        }
        for c in &self.calls {
            timed.push((c.started_s, c.lines(depth + 1)));
        }
        timed.sort_by(|a, b| a.0.total_cmp(&b.0));
        out.extend(timed.into_iter().flat_map(|(_, l)| l));
        if let (Some(at), Some(outcome)) = (self.ended_s, &self.outcome) {
            let fell = if self.fell_back {
                " (its fallback answered)"
            } else {
                ""
            };
            let took = ms(1e3 * (at - self.started_s));
            out.push(format!(
                "{} {pad}call #{} ended: {outcome}{fell} after {took}",
                time(at),
                self.call
            ));
        }
        out
    }
}

impl AttemptWhy {
    /// The attempt's lines, indented by `depth`: sent, at the replica, the caller's outcome
    /// and decision, and the downstream calls its job made, in time order.
    fn lines(&self, depth: usize) -> Vec<String> {
        let pad = "  ".repeat(depth);
        let inner = "  ".repeat(depth + 1);
        let mut timed: Vec<(f64, Vec<String>)> = Vec::new();
        let mut line =
            |at: f64, text: String| timed.push((at, vec![format!("{} {inner}{text}", time(at))]));
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
            line(end.at_s, replica_end_words(replica, end));
        }
        if let (Some(at), Some(outcome)) = (self.ended_s, &self.outcome) {
            line(at, self.caller_words(outcome));
        }
        for c in &self.calls {
            timed.push((c.started_s, c.lines(depth + 1)));
        }
        timed.sort_by(|a, b| a.0.total_cmp(&b.0));
        let head = match (self.sent_s, &self.replica) {
            (Some(at), Some(r)) => {
                let timeout = self
                    .timeout_ms
                    .map_or(String::new(), |t| format!(", timeout {}", ms(t)));
                format!(
                    "{} {pad}attempt {} sent to {r}{timeout}",
                    time(at),
                    self.attempt
                )
            }
            _ => format!(
                "{} {pad}attempt {} not sent",
                time(self.ended_s.unwrap_or(0.0)),
                self.attempt
            ),
        };
        std::iter::once(head)
            .chain(timed.into_iter().flat_map(|(_, l)| l))
            .collect()
    }

    /// The caller's view of its end: the outcome and the decision.
    fn caller_words(&self, outcome: &str) -> String {
        let decision = self
            .decision_words()
            .map_or(String::new(), |d| format!(" → {d}"));
        let what = match (outcome, self.sent_s) {
            ("ok", _) => "the caller got ok".to_string(),
            ("timeout", _) => format!(
                "the caller timed out after {}",
                ms(self.timeout_ms.unwrap_or(0.0))
            ),
            (o, None) => format!(
                "the caller's gates {}",
                reason(o).map_or(o.to_string(), |r| r.words().to_string())
            ),
            (o, Some(_)) => format!("the caller got {o}"),
        };
        format!("{what}{decision}")
    }
}

fn replica_end_words(replica: &str, end: &super::ReplicaEnd) -> String {
    let gone = if end.caller_gone {
        ", for a caller already gone"
    } else {
        ""
    };
    match (end.outcome.as_str(), end.worked_ms) {
        ("cancelled", _) => format!("{replica} dropped it: its caller cancelled it"),
        ("lost", _) => format!("lost on the way to {replica} or in its crash"),
        (o, Some(w)) => format!("{replica} answered {o} after {} of work{gone}", ms(w)),
        (o, None) => format!(
            "{replica}: {}{gone}",
            reason(o).map_or(o.to_string(), |r| r.words().to_string())
        ),
    }
}
