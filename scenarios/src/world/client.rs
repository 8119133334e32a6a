//! A client: where requests come from (an open-loop arrival process on a rate schedule, or
//! closed-loop users who think between requests) and what happened to them (its figures).
//!
//! A client decides *when* requests arrive; the world makes the call (its arrival handlers are
//! here). Its figures count each outcome in the report bucket of the request's offer (see
//! [`crate::figures`]).

use super::msg::Msg;
use super::outcome::Outcome;
use super::traffic::{self, Attrs, Mix};
use super::{C, World, call};
#[cfg(test)]
use crate::figures::ClientBucket;
use crate::figures::{ClientFigures, ReasonCounts};
use crate::format::schema::{self, FaultKind, Load, Schedule};
use sim_core::metrics::LatencyHistogram;
use sim_core::sample::{exponential, uniform_below};
use sim_core::{RngStream, Sampler, Seed, SimDuration, SimTime};

/// The most clients whose latencies are kept to three significant digits (about 260 KB
/// each); beyond it every client keeps two (within 1%, a few KB), so that a fleet of
/// thousands of clients fits in memory. The run's summary merges the clients' histograms.
pub const CLIENTS_PRECISE_MAX: usize = 64;

/// How a client generates requests.
#[derive(Debug, Clone)]
enum Source {
    /// Poisson arrivals at the scheduled rate times the active load spikes.
    Open {
        schedule: Schedule,
        /// Where the rate changes (schedule steps, spike edges), sorted.
        change_points: Vec<SimTime>,
        /// The product of the active load spikes' factors.
        spike: f64,
    },
    /// `users` users, each waiting for its request's outcome, then thinking.
    Closed { users: u32, think: Sampler },
    /// `users` users, each offering one request; `done` of them have their outcome, the
    /// last at `last`.
    OneShot {
        users: u32,
        spread: SimDuration,
        done: u32,
        last: SimTime,
    },
}

/// One client.
#[derive(Debug, Clone)]
pub struct Client {
    name: String,
    /// The index of its call site.
    site: u32,
    source: Source,
    rng: RngStream,
    /// Its request classes, when it declares some.
    mix: Option<Box<Mix>>,
    figures: ClientFigures,
    /// The zone it stands in, and whether that zone is failing (`None`: in no zone).
    zone: Option<(u32, bool)>,
    /// Closed-loop or one-shot users whose zone failed as they were about to send, in the
    /// order they tried; they send when the zone is back.
    parked: Vec<u32>,
}

/// Who is waiting for a client request: an open-loop arrival, or a closed-loop user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requester {
    /// An arrival of the open-loop process (no one waits to send the next).
    Arrival,
    /// A closed-loop user, who sends its next request after thinking.
    User(u32),
}

impl Client {
    /// Compiles client `name` of the scenario; `site` is the index of its call site. A
    /// `precise` client keeps its latencies to three significant digits, others to two (see
    /// [`CLIENTS_PRECISE_MAX`]).
    pub fn new(
        name: &str,
        c: &schema::Client,
        faults: &[schema::Fault],
        site: u32,
        seed: Seed,
        precise: bool,
    ) -> Self {
        let source = match &c.load {
            Load::Open { rate } => {
                let spikes = faults.iter().flat_map(|f| match &f.kind {
                    FaultKind::LoadSpike { client, .. } if client == name => {
                        let end = f.duration.map(|d| f.at.saturating_add(d));
                        [Some(f.at), end]
                    }
                    // A failure of its zone stops its arrivals.
                    FaultKind::ZoneFailure { zone } if c.zone == Some(*zone) => {
                        let end = f.duration.map(|d| f.at.saturating_add(d));
                        [Some(f.at), end]
                    }
                    _ => [None, None],
                });
                let mut change_points: Vec<SimTime> = rate
                    .change_points()
                    .into_iter()
                    .chain(spikes.flatten())
                    .map(|d| SimTime::ZERO + d)
                    .collect();
                change_points.sort();
                change_points.dedup();
                Source::Open {
                    schedule: rate.clone(),
                    change_points,
                    spike: 1.0,
                }
            }
            Load::Closed { users, think } => Source::Closed {
                users: *users,
                think: think
                    .compile()
                    .expect("distributions are checked by validation before a world is built"),
            },
            Load::OneShot { users, spread } => Source::OneShot {
                users: *users,
                spread: *spread,
                done: 0,
                last: SimTime::ZERO,
            },
        };
        Client {
            name: name.to_string(),
            site,
            source,
            rng: seed.stream(&format!("clients/{name}/load")),
            mix: Mix::new(name, &c.classes, seed),
            figures: ClientFigures {
                name: name.to_string(),
                failed: ReasonCounts::default(),
                latency: if precise {
                    LatencyHistogram::new()
                } else {
                    LatencyHistogram::compact()
                },
                buckets: Vec::new(),
                classes: traffic::class_figures(&c.classes),
                makespan: None,
            },
            zone: c.zone.map(|z| (z, false)),
            parked: Vec::new(),
        }
    }

    /// Gives its arrivals and its request mix fresh randomness from `seed` (a branch's).
    pub fn reseed(&mut self, seed: Seed) {
        self.rng.reseed(seed);
        if let Some(mix) = &mut self.mix {
            mix.reseed(seed);
        }
    }

    /// The zone it stands in, if any.
    pub fn zone(&self) -> Option<u32> {
        self.zone.map(|(z, _)| z)
    }

    /// Its zone fails (`down`) or is back; returns the users that may send again.
    pub fn set_zone_down(&mut self, down: bool) -> Vec<u32> {
        if let Some((_, d)) = &mut self.zone {
            *d = down;
        }
        if down {
            Vec::new()
        } else {
            std::mem::take(&mut self.parked)
        }
    }

    /// User `user` is about to send; true (and it waits) if its zone is failing.
    pub fn park_user(&mut self, user: u32) -> bool {
        let down = self.zone.is_some_and(|(_, d)| d);
        if down {
            self.parked.push(user);
        }
        down
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The index of its call site.
    pub fn site(&self) -> u32 {
        self.site
    }

    /// When each of its users first sends (spread over one think time, not all at once), or
    /// `None` for an open-loop client (its first arrival is drawn at time zero).
    pub fn user_starts(&mut self) -> Option<Vec<SimDuration>> {
        match &self.source {
            Source::Open { .. } => None,
            Source::Closed { users, think } => {
                Some((0..*users).map(|_| think.sample(&mut self.rng)).collect())
            }
            // All at once draws nothing; a spread start is uniform over [0, spread].
            Source::OneShot { users, spread, .. } if spread.is_zero() => {
                Some(vec![SimDuration::ZERO; *users as usize])
            }
            Source::OneShot { users, spread, .. } => {
                let span = spread.as_nanos();
                let start = |_| SimDuration::from_nanos(uniform_below(&mut self.rng, span + 1));
                Some((0..*users).map(start).collect())
            }
        }
    }

    /// A user's request ended at `now`: how long it thinks before the next one, or `None`
    /// when it offers no more (a one-shot user, whose finish counts toward the makespan).
    pub fn user_done(&mut self, now: SimTime) -> Option<SimDuration> {
        match &mut self.source {
            Source::Closed { think, .. } => Some(think.sample(&mut self.rng)),
            Source::OneShot { done, last, .. } => {
                *done += 1;
                *last = (*last).max(now);
                None
            }
            Source::Open { .. } => panic!("open-loop arrivals have no users"),
        }
    }

    /// Sets the product of its active load spikes.
    pub fn set_spike(&mut self, factor: f64) {
        if let Source::Open { spike, .. } = &mut self.source {
            *spike = factor;
        }
    }

    /// The next arrival event after `now`: its time and whether a request arrives then
    /// (false: the rate changes then and the next arrival is redrawn). Memorylessness makes a
    /// redraw at each change point exact for piecewise rates.
    pub fn next_arrival(&mut self, now: SimTime) -> Option<(SimTime, bool)> {
        let Source::Open {
            schedule,
            change_points,
            spike,
        } = &self.source
        else {
            panic!("arrivals are for open-loop clients");
        };
        let rate = schedule.rate_at(now) * *spike;
        let i = change_points.partition_point(|t| *t <= now);
        let next_change = change_points.get(i).copied();
        if rate <= 0.0 {
            return next_change.map(|change| (change, false));
        }
        let gap = SimDuration::from_nanos_f64(exponential(&mut self.rng, 1e9 / rate))
            .max(SimDuration::from_nanos(1));
        let t = now.saturating_add(gap);
        match next_change {
            Some(change) if t > change => Some((change, false)),
            _ => Some((t, true)),
        }
    }

    /// Counts a request offered in bucket `bucket`, and returns the attributes it carries
    /// (drawn from its classes, or the default ones without classes).
    pub fn record_offer(&mut self, bucket: usize) -> Attrs {
        bucket_mut(&mut self.figures.buckets, bucket).offered += 1;
        match &mut self.mix {
            None => Attrs::DEFAULT,
            Some(mix) => {
                let attrs = mix.draw();
                traffic::record_offer(&mut self.figures.classes, attrs, bucket);
                attrs
            }
        }
    }

    /// Counts the outcome of a request of class and tenant `attrs` offered in bucket
    /// `offered_in`, after `latency` (nothing without classes).
    pub fn record_class_outcome(
        &mut self,
        attrs: Attrs,
        outcome: Outcome,
        offered_in: usize,
        latency: SimDuration,
    ) {
        if self.mix.is_some() {
            let failed = match outcome {
                Outcome::Ok => None,
                Outcome::Fail(r) => Some(r),
            };
            traffic::record_outcome(
                &mut self.figures.classes,
                attrs,
                offered_in,
                failed,
                latency,
            );
        }
    }

    /// Counts the outcome of a request offered in bucket `offered_in` that ended in bucket
    /// `ended_in` after `latency`.
    pub fn record_outcome(
        &mut self,
        outcome: Outcome,
        offered_in: usize,
        ended_in: usize,
        latency: SimDuration,
    ) {
        let buckets = &mut self.figures.buckets;
        match outcome {
            Outcome::Ok => {
                self.figures.latency.record(latency);
                let b = bucket_mut(buckets, offered_in);
                b.successes += 1;
                b.latency_sum_ns += latency.as_nanos();
                bucket_mut(buckets, ended_in).completed_ok += 1;
            }
            Outcome::Fail(r) => {
                bucket_mut(buckets, offered_in).failures += 1;
                self.figures.failed.add(r);
            }
        }
    }

    /// Its figures.
    pub fn figures(&self) -> &ClientFigures {
        &self.figures
    }

    /// Its figures, at the end of a run: a one-shot population whose users all finished
    /// has a makespan.
    pub fn into_figures(mut self) -> ClientFigures {
        if let Source::OneShot {
            users, done, last, ..
        } = self.source
            && done == users
        {
            self.figures.makespan = Some(last.since_start());
        }
        // Grown by doubling while running; held at its length through the report.
        self.figures.buckets.shrink_to_fit();
        self.figures
    }
}

/// The entry of bucket `i`, growing the list to reach it.
pub fn bucket_mut<T: Default>(buckets: &mut Vec<T>, i: usize) -> &mut T {
    if i >= buckets.len() {
        buckets.resize_with(i + 1, T::default);
    }
    &mut buckets[i]
}

impl Schedule {
    /// The scheduled rate at `t`, per second.
    pub fn rate_at(&self, t: SimTime) -> f64 {
        let t = t.since_start();
        match self {
            Schedule::Constant(r) => r.as_per_second(),
            Schedule::Steps(steps) => steps
                .iter()
                .rev()
                .find(|s| s.at <= t)
                .map_or(0.0, |s| s.rate.as_per_second()),
            Schedule::Ramp {
                from,
                to,
                start,
                end,
            } => {
                if t <= *start {
                    from.as_per_second()
                } else if t >= *end {
                    to.as_per_second()
                } else {
                    let f = (t - *start).as_secs_f64() / (*end - *start).as_secs_f64();
                    from.as_per_second() + f * (to.as_per_second() - from.as_per_second())
                }
            }
            Schedule::Spike {
                base,
                peak,
                start,
                end,
            } => {
                if t >= *start && t < *end {
                    peak.as_per_second()
                } else {
                    base.as_per_second()
                }
            }
        }
    }

    /// The instants where the rate changes (a ramp is followed in 100 steps).
    fn change_points(&self) -> Vec<SimDuration> {
        match self {
            Schedule::Constant(_) => Vec::new(),
            Schedule::Steps(steps) => steps.iter().map(|s| s.at).collect(),
            Schedule::Ramp { start, end, .. } => {
                let span = *end - *start;
                // In u128: a ramp of more than about 5.8 years times 100 would overflow u64.
                let step = |i: u64| (u128::from(span.as_nanos()) * u128::from(i) / 100) as u64;
                (0..=100)
                    .map(|i| *start + SimDuration::from_nanos(step(i)))
                    .collect()
            }
            Schedule::Spike { start, end, .. } => vec![*start, *end],
        }
    }
}

impl World {
    /// Client `client`'s next arrival: a request if `emit`, and the arrival after it.
    pub(super) fn on_arrival(&mut self, ctx: C, client: usize, emit: bool) {
        let now = ctx.now();
        if emit {
            self.offer(ctx, client, Requester::Arrival);
        }
        if let Some((t, emit)) = self.clients[client].next_arrival(now) {
            let me = ctx.me();
            let client = client as u32;
            ctx.send_at(me, t, Msg::Arrival { client, emit });
        }
    }

    /// Client `client` offers a request (an arrival or a user's).
    pub(super) fn offer(&mut self, ctx: C, client: usize, requester: Requester) {
        let now = ctx.now();
        // A user of a client whose zone fails waits for the zone to come back.
        if let Requester::User(user) = requester
            && self.clients[client].park_user(user)
        {
            return;
        }
        let bucket = self.bucket_of(now);
        let c = &mut self.clients[client];
        let attrs = c.record_offer(bucket);
        let owner = call::Owner::Client {
            client: client as u32,
            requester,
            offered_at: now,
            attrs,
        };
        let site = c.site();
        self.start_call(ctx, site, owner, SimTime::MAX);
    }
}

/// Totals a bucket list (for tests of the bookkeeping).
#[cfg(test)]
fn total(buckets: &[ClientBucket]) -> ClientBucket {
    buckets.iter().fold(ClientBucket::default(), |mut t, b| {
        t.offered += b.offered;
        t.successes += b.successes;
        t.failures += b.failures;
        t
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Reason;

    #[test]
    fn outcomes_count_in_the_bucket_of_their_offer() {
        let text = r#"(load: Closed(users: 1, think: Constant(value: "1s")), call: (target: "s"))"#;
        let c: schema::Client = ron::from_str(text).unwrap();
        let mut client = Client::new("c", &c, &[], 0, Seed(1), false);
        client.record_offer(2);
        client.record_offer(3);
        client.record_outcome(Outcome::Ok, 2, 5, SimDuration::from_secs(3));
        client.record_outcome(Outcome::Fail(Reason::Timeout), 3, 4, SimDuration::ZERO);
        let f = client.figures();
        assert_eq!(f.buckets[2].successes, 1);
        assert_eq!(f.buckets[5].completed_ok, 1);
        assert_eq!(f.buckets[3].failures, 1);
        let t = total(&f.buckets);
        assert_eq!((t.offered, t.successes, t.failures), (2, 1, 1));
    }
}
