//! A followed request's steps as spans ([`trace_of`]): one pass over the steps in the order
//! they happened, each step opening, closing or annotating the span of its call, attempt or
//! job, so a span is made before any of its children.

use super::{Event, Kind, Span, Trace, Value};
use crate::figures::sampling::{SpanRole, span_id, trace_id};
use crate::figures::{Decision, Followed, JobEnd, Maker, Reason, Step, What};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// The spans of one call while its steps are read.
struct CallSpans {
    span: usize,
    /// The client or service that made it.
    caller: String,
    /// The service it calls.
    target: String,
    /// Its attempts by number: the caller's span, and the replica's once sent.
    attempts: BTreeMap<u32, AttemptSpans>,
}

#[derive(Default)]
struct AttemptSpans {
    client: Option<usize>,
    job: Option<usize>,
    queued: bool,
}

/// The trace of request `followed` in a run of `seed`; a span still open when the run
/// stopped at `stopped` ends then, marked `resim.in_flight`.
pub fn trace_of(followed: &Followed, seed: u64, stopped: Option<SimTime>) -> Trace {
    let mut b = Builder {
        seed,
        request: followed.request,
        spans: Vec::new(),
        open: Vec::new(),
        calls: BTreeMap::new(),
    };
    for step in &followed.steps {
        b.step(step);
    }
    let last = followed.steps.last().map_or(SimTime::ZERO, |s| s.at);
    let end = stopped.unwrap_or(last).max(last);
    for (span, open) in b.spans.iter_mut().zip(&b.open) {
        if *open {
            span.end = end;
            span.attributes.push(("resim.in_flight", Value::Bool(true)));
        }
        span.events.sort_by_key(|e| e.at);
    }
    Trace {
        request: followed.request,
        id: trace_id(seed, followed.request),
        spans: b.spans,
    }
}

struct Builder {
    seed: u64,
    request: u64,
    spans: Vec<Span>,
    /// Whether each span is still open.
    open: Vec<bool>,
    calls: BTreeMap<u64, CallSpans>,
}

/// Nanoseconds as an attribute's value.
fn ns(d: sim_core::SimDuration) -> Value {
    Value::Int(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The client named in a client's call site path (`clients.users.call`, or
/// `clients."a.b".call`).
fn client_of(path: &str) -> String {
    let rest = path.strip_prefix("clients.").unwrap_or(path);
    if let Some(quoted) = rest.strip_prefix('"') {
        return quoted.split('"').next().unwrap_or(quoted).to_string();
    }
    rest.split('.').next().unwrap_or(rest).to_string()
}

impl Builder {
    fn add(&mut self, span: Span) -> usize {
        self.spans.push(span);
        self.open.push(true);
        self.spans.len() - 1
    }

    fn close(&mut self, span: usize, at: SimTime) {
        self.spans[span].end = at;
        self.open[span] = false;
    }

    fn id(&self, call: u64, attempt: u32, role: SpanRole) -> u64 {
        span_id(self.seed, self.request, call, attempt, role)
    }

    fn step(&mut self, step: &Step) {
        let at = step.at;
        if let What::Call {
            maker,
            path,
            target,
            deadline,
        } = &step.what
        {
            self.call(step.call, at, *maker, path, target, *deadline);
            return;
        }
        let Some(call) = self.calls.get(&step.call) else {
            // Steps past the recording's limit may name calls it left out.
            return;
        };
        let call_span = call.span;
        match &step.what {
            What::Call { .. } => unreachable!("handled above"),
            What::Sent {
                attempt,
                service,
                replica,
                timeout_at,
            } => self.sent(step.call, at, *attempt, service, *replica, *timeout_at),
            What::Queued { attempt, depth } => self.queued(step.call, at, *attempt, *depth),
            What::Started {
                attempt,
                waited,
                taken,
                gone,
            } => self.started(step.call, at, *attempt, *waited, (*taken, *gone)),
            What::Ended {
                attempt,
                end,
                worked,
                gone,
            } => self.ended(step.call, at, *attempt, *end, *worked, *gone),
            What::Attempted {
                attempt,
                outcome,
                sent,
                decision,
            } => self.attempted(step.call, at, *attempt, *outcome, *sent, *decision),
            What::Cancelled => self.cancelled(step.call, call_span, at),
            What::Finished { outcome, fell_back } => {
                self.close(call_span, at);
                let s = &mut self.spans[call_span];
                s.set_outcome(*outcome);
                if *fell_back {
                    s.attributes.push(("resim.fell_back", Value::Bool(true)));
                }
            }
        }
    }

    /// An attempt's job was queued at its replica, behind `depth` others.
    fn queued(&mut self, call: u64, at: SimTime, attempt: u32, depth: u64) {
        let Some(job) = self.job(call, attempt) else {
            return;
        };
        let s = &mut self.spans[job];
        s.start = at;
        let depth = Value::Int(i64::try_from(depth).unwrap_or(i64::MAX));
        s.attributes.push(("resim.queue.depth", depth.clone()));
        s.events.push(Event {
            at,
            name: "queued",
            attributes: vec![("resim.queue.depth", depth)],
        });
        self.attempt_mut(call, attempt).queued = true;
    }

    /// An attempt's job was taken by a worker after waiting `waited`, with `taken` jobs taken
    /// from the queue and `gone` of them for callers already gone.
    fn started(
        &mut self,
        call: u64,
        at: SimTime,
        attempt: u32,
        waited: SimDuration,
        (taken, gone): (u64, u64),
    ) {
        let Some(job) = self.job(call, attempt) else {
            return;
        };
        let s = &mut self.spans[job];
        s.attributes.push(("resim.queue.wait_ns", ns(waited)));
        let count = |n: u64| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
        s.events.push(Event {
            at,
            name: "started",
            attributes: vec![
                ("resim.queue.wait_ns", ns(waited)),
                ("resim.queue.taken", count(taken)),
                ("resim.queue.taken_gone", count(gone)),
            ],
        });
    }

    /// The caller learnt an attempt's outcome, and decided (a retry's backoff is an event of the
    /// call's span).
    fn attempted(
        &mut self,
        call: u64,
        at: SimTime,
        attempt: u32,
        outcome: Option<Reason>,
        sent: bool,
        decision: Option<Decision>,
    ) {
        let call_span = self.calls[&call].span;
        let client = match self.attempt_mut(call, attempt).client {
            Some(c) => c,
            None => self.attempt_span(call, at, attempt),
        };
        self.close(client, at);
        let s = &mut self.spans[client];
        if !sent {
            s.attributes.push(("resim.sent", Value::Bool(false)));
        }
        s.set_outcome(outcome);
        if let Some(d) = decision {
            s.attributes
                .push(("resim.retry.decision", Value::Str(d.name().into())));
        }
        if let Some(Decision::Retry(after)) = decision {
            s.attributes.push(("resim.retry.backoff_ns", ns(after)));
            self.spans[call_span].events.push(Event {
                at,
                name: "backoff",
                attributes: vec![
                    ("resim.attempt", Value::Int(i64::from(attempt))),
                    ("resim.retry.backoff_ns", ns(after)),
                ],
            });
        }
    }

    /// The call was dropped with its open attempts.
    fn cancelled(&mut self, call: u64, call_span: usize, at: SimTime) {
        self.close(call_span, at);
        self.spans[call_span]
            .attributes
            .push(("resim.cancelled", Value::Bool(true)));
        let open: Vec<usize> = self.calls[&call]
            .attempts
            .values()
            .filter_map(|a| a.client)
            .filter(|&c| self.open[c])
            .collect();
        for c in open {
            self.close(c, at);
            self.spans[c]
                .attributes
                .push(("resim.cancelled", Value::Bool(true)));
        }
    }

    /// A call started: its span, under the span of whatever made it.
    fn call(
        &mut self,
        call: u64,
        at: SimTime,
        maker: Maker,
        path: &str,
        target: &str,
        deadline: Option<SimTime>,
    ) {
        let (caller, parent, made_by) = self.made_by(maker, path);
        let root = self.calls.get(&self.request).map(|c| c.span);
        let parent = parent.or(root).map(|p| self.spans[p].id);
        let caller = caller.unwrap_or_else(|| client_of(path));
        let mut attributes = vec![
            (
                "resim.call.id",
                Value::Int(i64::try_from(call).unwrap_or(i64::MAX)),
            ),
            ("resim.call.made_by", Value::Str(made_by.into())),
            ("peer.service", Value::Str(target.into())),
        ];
        if call == self.request {
            let id = i64::try_from(call).unwrap_or(i64::MAX);
            attributes.push(("resim.request.id", Value::Int(id)));
        }
        if let Some(d) = deadline {
            attributes.push(("resim.deadline_ns", ns(d - at)));
        }
        let span = self.add(Span {
            id: self.id(call, 0, SpanRole::Call),
            parent,
            name: path.to_string(),
            kind: Kind::Internal,
            service: caller.clone(),
            replica: None,
            peer: Some(target.to_string()),
            start: at,
            end: at,
            error: None,
            attributes,
            events: Vec::new(),
        });
        let spans = CallSpans {
            span,
            caller,
            target: target.to_string(),
            attempts: BTreeMap::new(),
        };
        self.calls.insert(call, spans);
    }

    /// Who made a call: the caller's name, the span it goes under (`None`: the request's
    /// root) and how it was made (`client`, `job`, `limiter`, `hedge`, `fan_out`).
    fn made_by(&self, maker: Maker, path: &str) -> (Option<String>, Option<usize>, &'static str) {
        let caller_of = |c: u64| self.calls.get(&c).map(|c| c.caller.clone());
        match maker {
            Maker::Client => (Some(client_of(path)), None, "client"),
            Maker::Job(a) | Maker::Limiter(a) => {
                let made = self.calls.get(&a.call);
                let parent = made.and_then(|c| {
                    let att = c.attempts.get(&a.attempt);
                    att.and_then(|x| x.job.or(x.client)).or(Some(c.span))
                });
                let by = if matches!(maker, Maker::Job(_)) {
                    "job"
                } else {
                    "limiter"
                };
                (made.map(|c| c.target.clone()), parent, by)
            }
            Maker::Hedge(a) => (
                caller_of(a.call),
                self.calls.get(&a.call).map(|c| c.span),
                "hedge",
            ),
            Maker::Leaf(shell) => (
                caller_of(shell),
                self.calls.get(&shell).map(|c| c.span),
                "fan_out",
            ),
        }
    }

    fn attempt_mut(&mut self, call: u64, attempt: u32) -> &mut AttemptSpans {
        let c = self.calls.get_mut(&call).expect("checked by the caller");
        c.attempts.entry(attempt).or_default()
    }

    fn job(&mut self, call: u64, attempt: u32) -> Option<usize> {
        self.attempt_mut(call, attempt).job
    }

    /// The caller's span of attempt `attempt` of `call`, started at `at`.
    fn attempt_span(&mut self, call: u64, at: SimTime, attempt: u32) -> usize {
        let c = &self.calls[&call];
        let mut attributes = vec![("resim.attempt", Value::Int(i64::from(attempt)))];
        if attempt > 1 {
            let resends = Value::Int(i64::from(attempt) - 1);
            attributes.push(("http.request.resend_count", resends));
        }
        let span = Span {
            id: self.id(call, attempt, SpanRole::Attempt),
            parent: Some(self.spans[c.span].id),
            name: c.target.clone(),
            kind: Kind::Client,
            service: c.caller.clone(),
            replica: None,
            peer: Some(c.target.clone()),
            start: at,
            end: at,
            error: None,
            attributes,
            events: Vec::new(),
        };
        let i = self.add(span);
        self.attempt_mut(call, attempt).client = Some(i);
        i
    }

    /// Attempt `attempt` of `call` left for `replica` of `service`: its caller's span, and
    /// its job's at the replica.
    fn sent(
        &mut self,
        call: u64,
        at: SimTime,
        attempt: u32,
        service: &str,
        replica: u32,
        timeout_at: Option<SimTime>,
    ) {
        let client = self.attempt_span(call, at, attempt);
        if let Some(t) = timeout_at {
            let timeout = ns(t - at);
            self.spans[client]
                .attributes
                .push(("resim.timeout_ns", timeout));
        }
        let caller = self.calls[&call].caller.clone();
        let job = self.add(Span {
            id: self.id(call, attempt, SpanRole::Job),
            parent: Some(self.spans[client].id),
            name: service.to_string(),
            kind: Kind::Server,
            service: service.to_string(),
            replica: Some(replica),
            peer: Some(caller),
            start: at,
            end: at,
            error: None,
            attributes: vec![
                ("resim.attempt", Value::Int(i64::from(attempt))),
                ("resim.replica", Value::Int(i64::from(replica))),
            ],
            events: Vec::new(),
        });
        self.attempt_mut(call, attempt).job = Some(job);
    }

    /// The job of attempt `attempt` of `call` ended at its replica.
    fn ended(
        &mut self,
        call: u64,
        at: SimTime,
        attempt: u32,
        end: JobEnd,
        worked: Option<sim_core::SimDuration>,
        gone: bool,
    ) {
        let queued = self.attempt_mut(call, attempt).queued;
        let Some(job) = self.job(call, attempt) else {
            return;
        };
        self.close(job, at);
        let s = &mut self.spans[job];
        if let Some(w) = worked {
            s.attributes.push(("resim.work_ns", ns(w)));
            if !queued {
                // A free worker took it on arrival: the span starts with its work.
                s.start = at - w;
                s.attributes.push(("resim.queue.wait_ns", Value::Int(0)));
                s.events.push(Event {
                    at: at - w,
                    name: "started",
                    attributes: vec![("resim.queue.wait_ns", Value::Int(0))],
                });
            }
        } else if !queued {
            // Refused, lost or cancelled before any worker: it arrived now.
            s.start = at;
        }
        if gone {
            s.attributes.push(("resim.caller_gone", Value::Bool(true)));
        }
        match end {
            JobEnd::Answered(outcome) => s.set_outcome(outcome),
            JobEnd::Cancelled => s.fail("cancelled"),
            JobEnd::Lost => s.fail("lost"),
        }
    }
}
