//! A call site: one `call` of the scenario (a client's, or one of a service's downstream
//! calls) compiled into its pattern machines, with its figures. A service's call site has one
//! instance per replica of the calling service, as each process of a real service has its own
//! breaker, bulkhead, limiters and retry budget.
//!
//! The site owns the machines that outlive a single call (gates, retry policy, hedger,
//! fallback); a call ([`super::call`]) owns only what it holds from them (permits, its retry
//! request).

use super::World;
use super::adaptive::Adaptive;
use super::client::bucket_mut;
use super::outcome::{Outcome, primary_failure};
use super::pace::Quota;
use super::stack::{
    Acquire, Gate, Held, Permits, Ticket, Wake, acquire_from, expire, leave_queue, release_all,
};
use super::stream::LazyStream;
use crate::figures::{
    AdaptiveTimeoutFigures, BreakerFigures, BreakerTransition, CallSiteFigures, CallStats,
    PaceFigures, SiteBucket,
};
use crate::format::schema::{Call, CallSafety, Layer};
use patterns::budget::RetryBudget;
use patterns::bulkhead::BulkheadPermit;
use patterns::fallback::{Fallback, Served};
use patterns::hedge::Hedger;
use patterns::retry::{RetryPolicy, Safety};
use sim_core::{RngStream, Seed, SimDuration, SimTime};
use std::sync::Arc;

/// Which of a call site's gate lists: the ones acting once per call, or on each attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Listed before `Retry`: once per call.
    Outer = 0,
    /// Listed after `Retry` (or all, without one): on each attempt.
    Inner = 1,
}

/// Who makes the calls of a call site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A client, by index.
    Client(u32),
    /// A replica of a service, by service index and replica.
    Replica(u32, u32),
}

/// One call site instance.
///
/// A world holds one per client and per downstream call of each replica, so what a plain
/// call does not use is out of line: the machines of the layers few stacks have (retry,
/// hedging, adaptive timeout) are boxed, and the two random streams are derived on their
/// first draw. A client's plain call site is a few hundred bytes, not 2 KB.
#[derive(Debug, Clone)]
pub struct CallSite {
    /// Where it is in the file (`clients.web.call`, `services.api.calls[0]`); shared with
    /// its streams' names.
    path: Arc<str>,
    caller: Caller,
    /// The target service's index.
    target: u32,
    timeout: Option<SimDuration>,
    deadline: Option<SimDuration>,
    retry: Option<Box<RetryPolicy>>,
    hedging: Option<Box<Hedging>>,
    fallback: Option<Fallback>,
    /// When a call of this site last succeeded: the age of the "last good answer" a fallback
    /// may serve.
    last_success: Option<SimTime>,
    outer: Vec<Gate>,
    inner: Vec<Gate>,
    /// The retry jitter's draws.
    rng: LazyStream,
    /// The draws of its gates (adaptive throttling), apart from the retry jitter's.
    gate_rng: LazyStream,
    safety: CallSafety,
    /// A fan-out call's leaves and the successes it needs.
    fan_out: Option<(u32, u32)>,
    stats: CallStats,
    /// Per report bucket: attempts, retries, budget refusals, timeouts.
    buckets: Vec<SiteBucket>,
    /// The adaptive timeout, in place of `timeout`.
    adaptive: Option<Box<Adaptive>>,
    /// Whether a gate is a `Pace` layer (replies' quotas are read only then).
    paces: bool,
}

// A world holds one per client and per downstream call of each replica: what a plain call
// does not use stays out of line (it was 2,096 bytes before).
const _: () = assert!(std::mem::size_of::<CallSite>() <= 576);

/// A hedged call site's policy and the budget its hedges draw from when there is no retry
/// policy to share one with.
#[derive(Debug, Clone)]
struct Hedging {
    hedger: Hedger,
    budget: RetryBudget,
}

/// What a failed call becomes after the fallback chain.
pub enum Fell {
    /// Nothing to fall back on: the failure stands.
    Through(Outcome),
    /// Answered by the fallback instead.
    Back,
}

impl CallSite {
    /// Compiles `call` found at `path`, called by `caller`, aimed at service `target`. Its
    /// streams are named after the path (and the replica, for a service's call).
    pub fn new(path: String, caller: Caller, target: u32, call: &Call, seed: Seed) -> Self {
        let path: Arc<str> = path.into();
        let built = "pattern configs are validated with the scenario";
        let retry_at = call.stack.iter().position(|l| matches!(l, Layer::Retry(_)));
        let (mut outer, mut inner) = (Vec::new(), Vec::new());
        let (mut retry, mut hedger, mut fallback) = (None, None, None);
        for (i, layer) in call.stack.iter().enumerate() {
            match layer {
                Layer::Fallback(f) => fallback = Some(Fallback::new(f.clone()).expect(built)),
                Layer::Hedge(h) => {
                    hedger = Some(Box::new(Hedging {
                        hedger: Hedger::new(h.clone()).expect(built),
                        budget: RetryBudget::unlimited(),
                    }));
                }
                Layer::Retry(r) => {
                    retry = Some(Box::new(RetryPolicy::new(r.clone()).expect(built)));
                }
                _ => {}
            }
            let Some(gate) = Gate::of(layer) else {
                continue;
            };
            if retry_at.is_some_and(|r| i < r) {
                outer.push(gate);
            } else {
                inner.push(gate);
            }
        }
        let index = match caller {
            Caller::Client(_) => None,
            Caller::Replica(_, r) => Some(r),
        };
        let stream = |purpose| LazyStream::new(seed, path.clone(), purpose, index);
        CallSite {
            rng: stream("retry"),
            gate_rng: stream("gates"),
            path,
            caller,
            target,
            timeout: call.timeout,
            deadline: call.deadline,
            retry,
            hedging: hedger,
            fallback,
            last_success: None,
            outer,
            inner,
            safety: call.safety,
            fan_out: call.fan_out.as_ref().map(|f| (f.n, f.needed())),
            stats: CallStats::default(),
            buckets: Vec::new(),
            adaptive: call.stack.iter().find_map(|l| match l {
                Layer::AdaptiveTimeout(c) => Some(Box::new(Adaptive::new(c))),
                _ => None,
            }),
            paces: call.stack.iter().any(|l| matches!(l, Layer::Pace(_))),
        }
    }

    /// Gives its retry jitter and its gates fresh randomness from `seed` (a branch's).
    pub fn reseed(&mut self, seed: Seed) {
        self.rng.reseed(seed);
        self.gate_rng.reseed(seed);
    }

    /// Its field path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Who calls.
    pub fn caller(&self) -> Caller {
        self.caller
    }

    /// The target service's index.
    pub fn target(&self) -> usize {
        self.target as usize
    }

    /// Whether its operation may run twice.
    pub fn safety(&self) -> CallSafety {
        self.safety
    }

    /// For a fan-out call site: its leaves and the successes a call needs.
    pub fn fan_out(&self) -> Option<(u32, u32)> {
        self.fan_out
    }

    /// Whether its calls race hedges.
    pub fn hedges(&self) -> bool {
        self.hedging.is_some()
    }

    /// Its counters.
    pub fn stats(&mut self) -> &mut CallStats {
        &mut self.stats
    }

    /// The counters, read only.
    pub fn counts(&self) -> &CallStats {
        &self.stats
    }

    /// The counts of report bucket `i`.
    #[inline]
    pub fn tally(&mut self, i: usize) -> &mut SiteBucket {
        bucket_mut(&mut self.buckets, i)
    }

    /// The counts per report bucket (may be shorter than the run).
    pub fn buckets(&self) -> &[SiteBucket] {
        &self.buckets
    }

    /// Hands the counts per report bucket over when the run ends, leaving none: a copy
    /// would double them at the run's peak of memory. Grown by doubling while running, they
    /// are held at their length through the report.
    pub fn take_buckets(&mut self) -> Vec<SiteBucket> {
        let mut buckets = std::mem::take(&mut self.buckets);
        buckets.shrink_to_fit();
        buckets
    }

    /// The deadline of a call started at `now` by a caller whose own deadline is `parent`.
    pub fn call_deadline(&self, now: SimTime, parent: SimTime) -> SimTime {
        self.deadline
            .map_or(SimTime::MAX, |d| now.saturating_add(d))
            .min(parent)
    }

    /// When the caller stops waiting for an attempt sent at `now` of a call due at
    /// `call_deadline`.
    pub fn attempt_deadline(&self, now: SimTime, call_deadline: SimTime) -> SimTime {
        let timeout = match &self.adaptive {
            Some(a) => Some(a.timeout()),
            None => self.timeout,
        };
        timeout
            .map_or(SimTime::MAX, |t| now.saturating_add(t))
            .min(call_deadline)
    }

    /// Records the adaptive timeout given to an attempt sent in report bucket `bucket`.
    #[inline]
    pub fn note_timeout(&mut self, bucket: usize) {
        if let Some(a) = &self.adaptive {
            let t = a.timeout().as_nanos();
            let b = bucket_mut(&mut self.buckets, bucket);
            b.timeout_ns_max = b.timeout_ns_max.max(t);
        }
    }

    /// Whether the site learns from attempt latencies (it has an adaptive timeout).
    #[inline]
    pub fn adapts(&self) -> bool {
        self.adaptive.is_some()
    }

    /// Learns the latency of a finished attempt (its timeout, if it timed out).
    pub fn observe_latency(&mut self, latency: SimDuration) {
        if let Some(a) = &mut self.adaptive {
            a.observe(latency);
        }
    }

    /// Whether its stack has a `Pace` layer.
    pub fn paces(&self) -> bool {
        self.paces
    }

    /// Reads the quota a reply carried, at `now`, if the stack paces.
    #[inline]
    pub fn observe_quota(&mut self, now: SimTime, quota: Quota) {
        if !self.paces {
            return;
        }
        for g in self.outer.iter_mut().chain(&mut self.inner) {
            if let Gate::Pace(p) = g {
                p.observe(now, quota);
            }
        }
    }

    /// Its `Pace` layer's figures, if it has one.
    pub fn pace_figures(&self) -> Option<PaceFigures> {
        let mut total: Option<PaceFigures> = None;
        for g in self.outer.iter().chain(&self.inner) {
            if let Gate::Pace(p) = g {
                total.get_or_insert_default().absorb(&p.figures());
            }
        }
        total
    }

    /// Its adaptive timeout's figures, if it has one.
    pub fn adaptive_figures(&self) -> Option<AdaptiveTimeoutFigures> {
        self.adaptive.as_deref().map(Adaptive::figures)
    }

    fn gates(&mut self, side: Side) -> &mut Vec<Gate> {
        match side {
            Side::Outer => &mut self.outer,
            Side::Inner => &mut self.inner,
        }
    }

    /// Passes a call with `ticket` through the gates of `side` from gate `from`; a refusal is
    /// counted. Wakes of slots given back go to `wakes`.
    #[inline]
    pub fn acquire(
        &mut self,
        side: Side,
        from: usize,
        now: SimTime,
        permits: &mut Permits,
        ticket: Ticket,
        wakes: &mut Vec<Wake>,
    ) -> Acquire {
        let offset = self.offset(side);
        let gates = match side {
            Side::Outer => &mut self.outer,
            Side::Inner => &mut self.inner,
        };
        if from >= gates.len() {
            // Nothing left to pass (or no gates at all, the common plain call).
            return Acquire::Done;
        }
        let held = permits.from(offset);
        let rng = &mut self.gate_rng;
        let acquired = acquire_from(gates, from, now, held, rng, ticket, wakes);
        match acquired {
            Acquire::Refused(refusal) => self.stats.rejected.add(refusal.reason),
            // A pace gate counts its own holds.
            Acquire::Delay { gate, .. } if matches!(gates[gate], Gate::Pace(_)) => {}
            Acquire::Delay { .. } => self.stats.shaped += 1,
            Acquire::Wait { .. } => self.stats.bulkhead_waits += 1,
            Acquire::Done => {}
        }
        acquired
    }

    /// Gives back everything `permits` holds from the gates of `side`, reporting `outcome`
    /// (`None`: the call never ran, so it says nothing about the dependency).
    #[inline]
    pub fn release(
        &mut self,
        side: Side,
        now: SimTime,
        permits: &mut Permits,
        outcome: Option<Outcome>,
        wakes: &mut Vec<Wake>,
    ) {
        let offset = self.offset(side);
        let gates = self.gates(side);
        if gates.is_empty() {
            return;
        }
        release_all(gates, now, permits.from(offset), outcome, wakes);
    }

    /// Hands a bulkhead slot granted later to the gate of `side` that made the call wait.
    pub fn grant(&self, side: Side, permits: &mut Permits, gate: usize, permit: BulkheadPermit) {
        permits.from(self.offset(side))[gate] = Held::Bulkhead(permit);
    }

    /// Room for the permits of a call of this site.
    pub fn permits(&self) -> Permits {
        Permits::for_gates(self.outer.len() + self.inner.len())
    }

    /// Where the permits of `side`'s gates start in a call's [`Permits`].
    fn offset(&self, side: Side) -> usize {
        match side {
            Side::Outer => 0,
            Side::Inner => self.outer.len(),
        }
    }

    /// Takes a waiting call out of the bulkhead queue at `gate` (its caller gave up).
    pub fn leave_queue(&mut self, side: Side, gate: usize, now: SimTime, id: u64) {
        leave_queue(self.gates(side), gate, now, id);
    }

    /// Times out the due waits of the bulkhead at `gate`.
    pub fn expire(&mut self, side: Side, gate: usize, now: SimTime, wakes: &mut Vec<Wake>) {
        expire(self.gates(side), gate, now, wakes);
    }

    /// The retry policy and its jitter stream, if the stack retries.
    pub fn retry(&mut self) -> Option<(&mut RetryPolicy, &mut RngStream)> {
        self.retry.as_deref_mut().map(|p| (p, self.rng.get()))
    }

    /// The retry policy alone (its jitter stream is not derived for it).
    pub fn retry_policy(&mut self) -> Option<&mut RetryPolicy> {
        self.retry.as_deref_mut()
    }

    /// The hedging policy and the budget its hedges draw from (the retry policy's, if any).
    pub fn hedging(&mut self) -> (&mut Hedger, &mut RetryBudget) {
        let hedging = self
            .hedging
            .as_deref_mut()
            .expect("only hedged call sites race");
        let budget = match &mut self.retry {
            Some(policy) => policy.budget_mut(),
            None => &mut hedging.budget,
        };
        (&mut hedging.hedger, budget)
    }

    /// What a finished call's `outcome` becomes: a success is remembered as the last good
    /// answer; a failure may be answered by the fallback chain instead (counted).
    pub fn fall_back(&mut self, now: SimTime, outcome: Outcome) -> Fell {
        let Some(fallback) = &self.fallback else {
            return Fell::Through(outcome);
        };
        let Outcome::Fail(reason) = outcome else {
            self.last_success = Some(now);
            return Fell::Through(outcome);
        };
        match fallback
            .decide(now, Err(primary_failure(reason)), self.last_success)
            .served
        {
            Served::Cache { .. } => {
                self.stats.fallback_cache += 1;
                Fell::Back
            }
            Served::Static => {
                self.stats.fallback_static += 1;
                Fell::Back
            }
            Served::Primary | Served::Nothing => Fell::Through(outcome),
        }
    }

    /// Counts a finished call.
    pub fn count_outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Ok => self.stats.successes += 1,
            Outcome::Fail(_) => self.stats.failures += 1,
        }
    }

    /// Its breakers' figures, outermost first.
    pub fn breakers(&self) -> impl Iterator<Item = BreakerFigures> + '_ {
        let replica = match self.caller {
            Caller::Client(_) => None,
            Caller::Replica(_, r) => Some(r),
        };
        self.outer
            .iter()
            .chain(&self.inner)
            .filter_map(move |g| match g {
                Gate::Breaker(b) => Some(BreakerFigures {
                    replica,
                    state: b.state(),
                    transitions_total: b.transitions().len() as u64 + b.stats().transitions_dropped,
                    transitions: b
                        .transitions()
                        .iter()
                        .map(|t| BreakerTransition {
                            at: t.at,
                            from: t.from,
                            to: t.to,
                        })
                        .collect(),
                }),
                _ => None,
            })
    }
}

impl CallSafety {
    /// The retry and hedging policies' view.
    pub fn as_safety(self) -> Safety {
        match self {
            CallSafety::Idempotent => Safety::Idempotent,
            CallSafety::IdempotencyKey => Safety::IdempotencyKey,
            CallSafety::Unsafe => Safety::Unsafe,
        }
    }
}

impl World {
    /// One entry per call site, summed over the replicas of a calling service. The first
    /// instance of each site hands its counts per bucket over (the world is not used after
    /// its figures).
    pub(super) fn call_site_figures(&mut self) -> Vec<CallSiteFigures> {
        let mut out: Vec<CallSiteFigures> = Vec::new();
        for k in 0..self.sites.len() {
            let site = &self.sites[k];
            match out.last_mut() {
                Some(last) if last.path == site.path() => {
                    last.counts.absorb(site.counts());
                    last.breakers.extend(site.breakers());
                    for (i, b) in site.buckets().iter().enumerate() {
                        bucket_mut(&mut last.buckets, i).absorb(b);
                    }
                    if let (Some(total), Some(f)) = (&mut last.pace, site.pace_figures()) {
                        total.absorb(&f);
                    }
                    if let (Some(total), Some(f)) =
                        (&mut last.adaptive_timeout, site.adaptive_figures())
                    {
                        total.absorb(&f);
                    }
                }
                _ => {
                    let (caller, from_client) = match site.caller() {
                        Caller::Client(c) => (self.clients[c as usize].name(), true),
                        Caller::Replica(s, _) => (self.services[s as usize].name(), false),
                    };
                    let mut figures = CallSiteFigures {
                        path: site.path().to_string(),
                        caller: caller.to_string(),
                        target: self.services[site.target()].name().to_string(),
                        from_client,
                        counts: site.counts().clone(),
                        breakers: site.breakers().collect(),
                        buckets: Vec::new(),
                        pace: site.pace_figures(),
                        adaptive_timeout: site.adaptive_figures(),
                        pool: None,
                    };
                    figures.buckets = self.sites[k].take_buckets();
                    out.push(figures);
                }
            }
        }
        out
    }
}
