//! One trace's figures, summed over the traces of the files ([`Figures`]): for each server
//! span (a job of its service), the client spans it sent (its calls, paired with the server
//! span each reached, or named by `peer.service` where the callee records none), which of
//! them overlapped, how many leaves a call fanned out to, its self time (its duration less the
//! union of its calls' intervals) and each call's network time (the client span's duration
//! less the server span's, halved: one way); and the root server spans, the requests that
//! arrived from outside.
//!
//! A job's client spans to one callee are one call: those overlapping the first are its
//! fan-out's leaves, the later ones its retries (or a second call to the same callee, which
//! spans cannot tell apart from a retry).

use super::{Span, SpanKind};
use std::collections::BTreeMap;

/// Samples kept of one distribution, at most this many (a reservoir: every sample equally
/// likely to be kept, by a fixed pseudo-random sequence, so the same file gives the same
/// figures).
pub const SAMPLES_MAX: usize = 20_000;

/// A bounded, uniform sample of a distribution's values.
#[derive(Debug, Clone, Default)]
pub struct Reservoir {
    /// The values kept.
    pub values: Vec<u64>,
    /// The values offered.
    pub seen: u64,
    state: u64,
}

impl Reservoir {
    /// Offers a value.
    pub fn add(&mut self, value: u64) {
        self.add_within(value, SAMPLES_MAX);
    }

    /// Offers a value to a sample of at most `cap` values.
    pub fn add_within(&mut self, value: u64, cap: usize) {
        self.seen += 1;
        if self.values.len() < cap {
            self.values.push(value);
            return;
        }
        // xorshift64*: a fixed sequence, not OS entropy; the figures are the file's.
        if self.state == 0 {
            self.state = 0x9E37_79B9_7F4A_7C15;
        }
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let slot = r % self.seen;
        if (slot as usize) < cap {
            self.values[slot as usize] = value;
        }
    }
}

/// What a service's jobs showed of one callee.
#[derive(Debug, Clone, Default)]
pub struct Edge {
    /// Jobs that called it at least once.
    pub jobs: u64,
    /// Calls made (a call's retries and fan-out leaves counted once).
    pub calls: u64,
    /// Fan-out leaves of those calls (a call without fan-out has one).
    pub leaves: u64,
    /// Client spans sent to it (attempts and leaves).
    pub spans: u64,
    /// Of them, failed.
    pub errors: u64,
    /// Whether any call to it was asynchronous (a producer span, a consumer or
    /// `FOLLOWS_FROM` span receiving it).
    pub asynchronous: bool,
    /// The sum of its first call's start after the job's start, nanoseconds.
    pub offset_sum: f64,
    /// Jobs whose call to it was sent more than once (more client spans than leaves): a
    /// retry, or the same callee called again.
    pub retried: u64,
    /// The most attempts one job's call to it took.
    pub attempts_max: u64,
    /// Client spans to it that ended for want of time (a timeout, a deadline).
    pub deadlines: u64,
    /// How long those lasted: a sample of at most [`ATTEMPT_SAMPLES`].
    pub deadline_times: Reservoir,
    /// How long its successful client spans lasted: a sample of at most [`ATTEMPT_SAMPLES`].
    pub ok_times: Reservoir,
}

impl Edge {
    /// Counts span `c` of `trace`, sent to this callee: an attempt (its failure, its
    /// deadline error, its time), and whether the call was asynchronous.
    fn count(&mut self, trace: &Trace, c: usize) {
        let s = &trace.spans[c];
        self.spans += 1;
        self.errors += u64::from(s.error);
        if s.kind.sends() {
            if s.deadline {
                self.deadlines += 1;
                self.deadline_times
                    .add_within(s.duration(), ATTEMPT_SAMPLES);
            } else if !s.error {
                self.ok_times.add_within(s.duration(), ATTEMPT_SAMPLES);
            }
        }
        let reached = trace.reached(c).map(|k| &trace.spans[k]);
        self.asynchronous |= s.kind == SpanKind::Producer
            || reached.is_some_and(|r| r.kind == SpanKind::Consumer || r.follows);
        if s.kind.receives() {
            // Caused, not called: no client span, so no attempt to count.
            self.spans -= 1;
        }
    }
}

/// Samples kept of one edge's attempt times: enough for a median and a share within a
/// percent, few enough that a mesh of a thousand edges holds 32 MB at most.
pub const ATTEMPT_SAMPLES: usize = 2_000;

/// What a service's spans showed.
#[derive(Debug, Clone, Default)]
pub struct Service {
    /// Its jobs (server and consumer spans).
    pub jobs: u64,
    /// Each job's self time.
    pub work: Reservoir,
    /// Its jobs and their self times per second, to tell whether the work grows with load.
    pub load: super::load::Seconds,
    /// One-way network time to it, from its callers' client spans and its server spans.
    pub network: Reservoir,
    /// Client span durations toward it where it recorded no server span (an uninstrumented
    /// peer: its time as its callers saw it).
    pub seen_by_callers: Reservoir,
    /// Its callees.
    pub callees: BTreeMap<String, Edge>,
    /// For each pair of callees, the jobs calling both, and of those the jobs where their
    /// calls overlapped.
    pub pairs: BTreeMap<(String, String), (u64, u64)>,
}

/// Requests arriving from outside at one service.
#[derive(Debug, Clone, Default)]
pub struct Arrivals {
    /// How many.
    pub count: u64,
    /// The first one's start, Unix nanoseconds.
    pub first: u64,
    /// The last one's start.
    pub last: u64,
    /// How many started in each second (Unix seconds), to tell a rate that changes.
    pub per_second: BTreeMap<u64, u64>,
}

/// Every trace's figures, summed.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// Traces read.
    pub traces: u64,
    /// Spans read.
    pub spans: u64,
    /// By service name.
    pub services: BTreeMap<String, Service>,
    /// Requests from outside, by client (the service of a root client span, else `users`)
    /// and the service they reached.
    pub entries: BTreeMap<(String, String), Arrivals>,
    /// Client spans that reached no server span and name no peer.
    pub unpaired: u64,
    /// Spans whose parent is not in their trace (a truncated trace).
    pub orphans: u64,
    /// Traces with several roots (spans lost between them), left out.
    pub truncated: u64,
    /// Calls from a service to itself, left out (resim's calls may not go round).
    pub self_calls: u64,
    /// The share of requests traced, where a span said it.
    pub sampling: Option<f64>,
}

/// One trace, indexed.
struct Trace<'a> {
    spans: &'a [Span],
    parent: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
}

impl<'a> Trace<'a> {
    fn of(spans: &'a [Span], orphans: &mut u64) -> Trace<'a> {
        let by_id: BTreeMap<&str, usize> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        let mut children = vec![Vec::new(); spans.len()];
        let parent: Vec<Option<usize>> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let p = s.parent.as_deref()?;
                match by_id.get(p) {
                    Some(&p) if p != i => {
                        children[p].push(i);
                        Some(p)
                    }
                    _ => {
                        *orphans += 1;
                        None
                    }
                }
            })
            .collect();
        let mut trace = Trace {
            spans,
            parent,
            children,
        };
        trace.shared();
        trace
    }

    /// Zipkin's shared spans: a span of service X whose parent is another service's client
    /// span that a server span of X shares is that server span's child (its calls name the
    /// shared id as their parent).
    fn shared(&mut self) {
        for i in 0..self.spans.len() {
            let Some(p) = self.parent[i] else { continue };
            let s = &self.spans[i];
            if s.kind.receives() || self.spans[p].service == s.service {
                continue;
            }
            let job = self.children[p]
                .iter()
                .copied()
                .find(|&k| self.spans[k].kind.receives() && self.spans[k].service == s.service);
            if let Some(job) = job {
                self.children[p].retain(|&k| k != i);
                self.children[job].push(i);
                self.parent[i] = Some(job);
            }
        }
    }

    /// The job (a receiving span of the same service) that sent span `i`, through the
    /// service's own internal spans; `None` for a root client.
    fn owner(&self, i: usize) -> Option<usize> {
        let service = &self.spans[i].service;
        let mut j = i;
        for _ in 0..self.spans.len() {
            let p = self.parent[j]?;
            if self.spans[p].service != *service {
                return None;
            }
            if self.spans[p].kind.receives() {
                return Some(p);
            }
            j = p;
        }
        None
    }

    /// The job of another service whose own (non-client) span is job `i`'s parent.
    fn caused_by(&self, i: usize) -> Option<usize> {
        let s = &self.spans[i];
        let p = self.parent[i]?;
        let parent = &self.spans[p];
        if !s.kind.receives() || parent.service == s.service || parent.kind.sends() {
            return None;
        }
        if parent.kind.receives() {
            Some(p)
        } else {
            self.owner(p)
        }
    }

    /// The span `c` reached: its receiving child in another service, if any (itself, for a
    /// job caused without a client span).
    fn reached(&self, c: usize) -> Option<usize> {
        if self.spans[c].kind.receives() {
            return Some(c);
        }
        self.children[c]
            .iter()
            .copied()
            .find(|&k| self.spans[k].kind.receives())
    }
}

/// One call of a job: its callee, its client spans.
struct Call {
    callee: String,
    sends: Vec<usize>,
}

impl Figures {
    /// Adds one trace's spans.
    pub fn add(&mut self, spans: &[Span]) {
        self.traces += 1;
        self.spans += spans.len() as u64;
        if self.sampling.is_none() {
            self.sampling = spans.iter().find_map(|s| s.sampling);
        }
        let trace = Trace::of(spans, &mut self.orphans);
        // One root is the request (its parent, if it names one, is outside the traced
        // system); several are pieces of it whose links were lost: a truncated trace, whose
        // ratios and self times would mislead, so it is counted and left out.
        if trace.parent.iter().filter(|p| p.is_none()).count() > 1 {
            self.truncated += 1;
            return;
        }
        let mut sends_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, s) in spans.iter().enumerate() {
            if s.kind.sends()
                && let Some(job) = trace.owner(i)
            {
                sends_of.entry(job).or_default().push(i);
            }
            // A job caused by another service's span with no client span between them (a
            // `FOLLOWS_FROM` consumer): a call of the job that span is in.
            if let Some(job) = trace.caused_by(i) {
                sends_of.entry(job).or_default().push(i);
            }
        }
        for (j, s) in spans.iter().enumerate() {
            if !s.kind.receives() {
                continue;
            }
            self.entry(&trace, j);
            let sends = sends_of.remove(&j).unwrap_or_default();
            self.job(&trace, j, &sends);
        }
    }

    /// Counts job `j` as a request from outside if nothing of a service sent it.
    fn entry(&mut self, trace: &Trace, j: usize) {
        let s = &trace.spans[j];
        let (client, start) = match trace.parent[j] {
            None => ("users".to_string(), s.start),
            Some(p) => {
                let c = &trace.spans[p];
                if !c.kind.sends() || trace.owner(p).is_some() || c.service == s.service {
                    return;
                }
                (c.service.clone(), c.start)
            }
        };
        let a = self.entries.entry((client, s.service.clone())).or_default();
        if a.count == 0 || start < a.first {
            a.first = start;
        }
        a.last = a.last.max(start);
        a.count += 1;
        *a.per_second.entry(start / 1_000_000_000).or_default() += 1;
    }

    /// One job of a service and the calls it made.
    fn job(&mut self, trace: &Trace, j: usize, sends: &[usize]) {
        let job = &trace.spans[j];
        let calls = self.calls(trace, j, sends);
        let intervals: Vec<(u64, u64)> = calls
            .iter()
            .flat_map(|c| c.sends.iter())
            .map(|&c| {
                let s = &trace.spans[c];
                (
                    s.start.clamp(job.start, job.end),
                    s.end.clamp(job.start, job.end),
                )
            })
            .collect();
        let busy = union(intervals);
        let service = self.services.entry(job.service.clone()).or_default();
        service.jobs += 1;
        service.work.add(job.duration() - busy);
        service.load.add(job.start, job.duration() - busy);
        // Each callee's client spans in this job: those overlapping the first are a fan-out's
        // leaves (one call), the later ones its retries; with their hull.
        let mut sends_to: BTreeMap<&str, Vec<&Span>> = BTreeMap::new();
        for call in &calls {
            let spans = sends_to.entry(&call.callee).or_default();
            spans.extend(call.sends.iter().map(|&c| &trace.spans[c]));
        }
        let mut by_callee: BTreeMap<&str, (u64, u64, u64, u64)> = BTreeMap::new();
        let mut attempts: BTreeMap<&str, u64> = BTreeMap::new();
        for (callee, spans) in &sends_to {
            let first = spans
                .iter()
                .min_by_key(|s| (s.start, s.end))
                .expect("a send");
            let leaves = spans.iter().filter(|s| s.start < first.end).count() as u64;
            let start = first.start;
            let end = spans.iter().map(|s| s.end).max().unwrap_or(first.end);
            by_callee.insert(callee, (1, leaves.max(1), start, end));
            attempts.insert(callee, (spans.len() as u64).div_ceil(leaves.max(1)));
        }
        for call in &calls {
            let edge = service.callees.entry(call.callee.clone()).or_default();
            for &c in &call.sends {
                edge.count(trace, c);
            }
        }
        for (callee, &(n, leaves, start, _)) in &by_callee {
            let edge = service.callees.get_mut(*callee).expect("counted above");
            edge.jobs += 1;
            edge.calls += n;
            edge.leaves += leaves;
            edge.offset_sum += start.saturating_sub(job.start) as f64;
            let tries = attempts[callee];
            edge.retried += u64::from(tries > 1);
            edge.attempts_max = edge.attempts_max.max(tries);
        }
        pairs(service, &by_callee);
        self.network(trace, &calls);
    }

    /// The calls of job `j` from its client spans: each paired with its callee (the service
    /// its server span is in, or the peer it names), grouped by their parent.
    fn calls(&mut self, trace: &Trace, j: usize, sends: &[usize]) -> Vec<Call> {
        let service = &trace.spans[j].service;
        let mut calls: Vec<(Option<usize>, Call)> = Vec::new();
        for &c in sends {
            let s = &trace.spans[c];
            let callee = match trace.reached(c) {
                Some(k) => trace.spans[k].service.clone(),
                None => match &s.peer {
                    Some(p) => p.clone(),
                    None => {
                        self.unpaired += 1;
                        continue;
                    }
                },
            };
            if callee == *service {
                self.self_calls += 1;
                continue;
            }
            let group = trace.parent[c].filter(|&p| p != j);
            match calls
                .iter_mut()
                .find(|(g, call)| group.is_some() && *g == group && call.callee == callee)
            {
                Some((_, call)) => call.sends.push(c),
                None => calls.push((
                    group,
                    Call {
                        callee,
                        sends: vec![c],
                    },
                )),
            }
        }
        calls.into_iter().map(|(_, c)| c).collect()
    }

    /// Each call's one-way network time at its callee, or, where the callee has no span,
    /// the whole call as its callers see it.
    fn network(&mut self, trace: &Trace, calls: &[Call]) {
        for call in calls {
            for &c in &call.sends {
                let sent = &trace.spans[c];
                let callee = self.services.entry(call.callee.clone()).or_default();
                match trace.reached(c) {
                    Some(k) if k == c => {}
                    Some(k) => callee
                        .network
                        .add(sent.duration().saturating_sub(trace.spans[k].duration()) / 2),
                    None => callee.seen_by_callers.add(sent.duration()),
                }
            }
        }
    }
}

/// Counts, for each pair of callees of one job, that the job called both, and whether their
/// calls overlapped.
fn pairs(service: &mut Service, by_callee: &BTreeMap<&str, (u64, u64, u64, u64)>) {
    let list: Vec<_> = by_callee.iter().collect();
    for (a, &(ca, &(_, _, sa, ea))) in list.iter().enumerate() {
        for &(cb, &(_, _, sb, eb)) in &list[a + 1..] {
            let pair = service
                .pairs
                .entry((ca.to_string(), cb.to_string()))
                .or_default();
            pair.0 += 1;
            pair.1 += u64::from(sa < eb && sb < ea);
        }
    }
}

/// The total length of the union of `intervals`.
fn union(mut intervals: Vec<(u64, u64)>) -> u64 {
    intervals.sort_unstable();
    let mut total = 0;
    let mut current: Option<(u64, u64)> = None;
    for (a, b) in intervals {
        current = match current {
            Some((s, e)) if a <= e => Some((s, e.max(b))),
            Some((s, e)) => {
                total += e - s;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    total + current.map_or(0, |(s, e)| e - s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_counts_overlaps_once() {
        assert_eq!(union(vec![(0, 10), (5, 15), (20, 25)]), 20);
        assert_eq!(union(vec![]), 0);
        assert_eq!(union(vec![(3, 3)]), 0);
    }
}
