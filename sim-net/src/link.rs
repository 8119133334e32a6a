//! Directed links: their compiled settings, their random streams, their state (last
//! arrival, send queue, held messages) and their counters ([`LinkStats`]).

use crate::config::{ConfigError, LinkConfig, LinkOrder};
use crate::packet::Packet;
use crate::{LinkId, NodeId};
use serde::Serialize;
use sim_core::metrics::LatencyHistogram;
use sim_core::{RngStream, Sampler, Seed, SimDuration, SimTime};
use std::collections::{BTreeMap, VecDeque};

/// Why the network dropped a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// Lost at random (the link's `loss_ratio` and any degradation's).
    Lost,
    /// Sent into, or in flight when, a partition cut the link.
    Partitioned,
    /// Sent by a node that was down.
    SourceDown,
    /// Sent to a node that was down.
    TargetDown,
    /// In flight when its sender crashed.
    SourceCrashed,
    /// In flight when its receiver crashed (even if it restarted since).
    TargetCrashed,
    /// The link's send queue was full (tail drop).
    QueueFull,
    /// A [`crate::Rule`] said drop.
    Rule,
}

impl DropReason {
    /// Every reason, in report order.
    pub const ALL: [DropReason; 8] = [
        DropReason::Lost,
        DropReason::Partitioned,
        DropReason::SourceDown,
        DropReason::TargetDown,
        DropReason::SourceCrashed,
        DropReason::TargetCrashed,
        DropReason::QueueFull,
        DropReason::Rule,
    ];

    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Lost => "lost",
            DropReason::Partitioned => "partitioned",
            DropReason::SourceDown => "source_down",
            DropReason::TargetDown => "target_down",
            DropReason::SourceCrashed => "source_crashed",
            DropReason::TargetCrashed => "target_crashed",
            DropReason::QueueFull => "queue_full",
            DropReason::Rule => "rule",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The counters of one link (or, from [`crate::Network::totals`], of all of them).
///
/// Every copy that goes on the wire ends as exactly one of delivered or dropped, or is
/// still in flight (held messages included), so
/// `sent + duplicated == delivered + dropped_total() + in_flight`; the network asserts it.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    /// Messages sent (each duplicate counts once here, and once in `duplicated`).
    pub sent: u64,
    /// Copies handed to the target.
    pub delivered: u64,
    /// Extra copies the link made.
    pub duplicated: u64,
    /// Times a copy was held by a clog or a paused target (it still counts as in flight).
    pub held: u64,
    /// Copies on their way now, held ones included.
    pub in_flight: u64,
    dropped: [u64; DropReason::ALL.len()],
    /// Allocated on the first delivery, compact (two significant digits, grown to the
    /// largest latency seen): most links of a large mesh carry nothing, and a world with a
    /// link per client keeps one histogram per link.
    latency: Option<Box<LatencyHistogram>>,
    /// Deliveries at the same latency as the one before, not yet in the histogram: on a link
    /// of constant latency (the common case), recording one is a comparison and an increment.
    run: (SimDuration, u64),
}

impl LinkStats {
    /// Copies dropped for `reason`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.dropped[reason.index()]
    }

    /// Copies dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }

    /// Send-to-delivery latency of the delivered copies (queueing, serialization, rule
    /// delays and holds included); `None` before the first delivery.
    pub fn latency(&self) -> Option<LatencyHistogram> {
        if self.run.1 == 0 {
            return None;
        }
        let mut h = match self.latency.as_deref() {
            Some(h) => h.clone(),
            None => LatencyHistogram::compact(),
        };
        h.record_n(self.run.0, self.run.1);
        Some(h)
    }

    pub(crate) fn record_drop(&mut self, reason: DropReason) {
        self.dropped[reason.index()] += 1;
    }

    #[inline]
    pub(crate) fn record_delivery(&mut self, latency: SimDuration) {
        self.delivered += 1;
        if self.run.1 > 0 && self.run.0 == latency {
            self.run.1 += 1;
            return;
        }
        let (last, n) = std::mem::replace(&mut self.run, (latency, 1));
        if n > 0 {
            self.histogram().record_n(last, n);
        }
    }

    fn histogram(&mut self) -> &mut LatencyHistogram {
        self.latency
            .get_or_insert_with(|| Box::new(LatencyHistogram::compact()))
    }

    /// Adds `other`'s counts and histogram to these.
    pub fn merge(&mut self, other: &LinkStats) {
        self.sent += other.sent;
        self.delivered += other.delivered;
        self.duplicated += other.duplicated;
        self.held += other.held;
        self.in_flight += other.in_flight;
        for (a, b) in self.dropped.iter_mut().zip(other.dropped) {
            *a += b;
        }
        if let Some(h) = &other.latency {
            self.histogram().merge(h);
        }
        if other.run.1 > 0 {
            self.histogram().record_n(other.run.0, other.run.1);
        }
    }

    /// The accounting identity every link keeps (see the type's docs).
    ///
    /// Checked in debug builds only: it runs several times per message, and the release
    /// benchmarks measured it at about 3% of a simple world's time.
    pub(crate) fn assert_balanced(&self) {
        debug_assert_eq!(
            self.sent + self.duplicated,
            self.delivered + self.dropped_total() + self.in_flight,
            "link accounting broken: {self:?}"
        );
    }
}

/// The figures of one link, ready for a report (serializes to one JSON object).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkReport {
    /// The source node's name.
    pub source: String,
    /// The target node's name.
    pub target: String,
    /// Messages sent.
    pub sent: u64,
    /// Copies handed over.
    pub delivered: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Times a copy was held.
    pub held: u64,
    /// Copies still on their way when the report was made.
    pub in_flight: u64,
    /// Copies dropped, by [`DropReason::as_str`]; reasons with no drops are left out.
    pub dropped: BTreeMap<&'static str, u64>,
    /// Median send-to-delivery latency in milliseconds (0 when nothing was delivered).
    pub latency_ms_p50: f64,
    /// 99th percentile latency in milliseconds.
    pub latency_ms_p99: f64,
    /// Largest latency in milliseconds.
    pub latency_ms_max: f64,
    /// The median of the link's declared `latency` distribution in milliseconds: what each
    /// message draws, before any degradation, reordering delay, rule delay, send queue or
    /// FIFO wait adds to it.
    pub declared_latency_ms_p50: f64,
    /// The 99th percentile of the declared `latency` distribution in milliseconds.
    pub declared_latency_ms_p99: f64,
}

impl LinkStats {
    /// These counters as a [`LinkReport`] for `source → target`, whose declared latency
    /// is `declared`.
    pub fn report(&self, source: &str, target: &str, declared: &Sampler) -> LinkReport {
        let ms = |d: SimDuration| d.as_millis_f64();
        let (p50, p99, max) = match self.latency() {
            Some(h) => {
                let h = h.binned();
                (ms(h.quantile(0.5)), ms(h.quantile(0.99)), ms(h.max()))
            }
            None => (0.0, 0.0, 0.0),
        };
        LinkReport {
            source: source.to_string(),
            target: target.to_string(),
            sent: self.sent,
            delivered: self.delivered,
            duplicated: self.duplicated,
            held: self.held,
            in_flight: self.in_flight,
            dropped: DropReason::ALL
                .iter()
                .filter(|r| self.dropped(**r) > 0)
                .map(|r| (r.as_str(), self.dropped(*r)))
                .collect(),
            latency_ms_p50: p50,
            latency_ms_p99: p99,
            latency_ms_max: max,
            declared_latency_ms_p50: declared.quantile_nanos(0.5) / 1e6,
            declared_latency_ms_p99: declared.quantile_nanos(0.99) / 1e6,
        }
    }
}

/// A link's settings, compiled: samplers built, ratios checked.
#[derive(Clone, Debug)]
pub(crate) struct LinkParams {
    pub latency: Sampler,
    pub loss_ratio: f64,
    pub duplicate_ratio: f64,
    pub order: Order,
    pub bandwidth: Option<Bandwidth>,
}

impl LinkParams {
    /// True for a link that only delays: it never loses, duplicates or reorders a copy and
    /// has no send queue. On such a link, while no fault or rule is active, a message's
    /// fate is only its latency draw, and the network takes its short path.
    pub fn only_delays(&self) -> bool {
        self.loss_ratio == 0.0
            && self.duplicate_ratio == 0.0
            && self.bandwidth.is_none()
            && !matches!(self.order, Order::Reorder { .. })
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Order {
    Fifo,
    Independent,
    Reorder { ratio: f64, extra: Sampler },
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Bandwidth {
    pub bytes_per_second: u64,
    pub queue_capacity: usize,
}

impl Bandwidth {
    /// The time `size` bytes occupy the link, rounded up to the nanosecond so that a
    /// message never takes less than its share.
    pub fn serialization(self, size: u32) -> SimDuration {
        let nanos = (u128::from(size) * 1_000_000_000).div_ceil(u128::from(self.bytes_per_second));
        SimDuration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

impl LinkParams {
    pub fn compile(config: &LinkConfig) -> Result<LinkParams, ConfigError> {
        config.validate()?;
        let dist_error =
            |field: &str, e: sim_core::DistError| ConfigError::new(e.field, e.reason).at(field);
        Ok(LinkParams {
            latency: config
                .latency
                .compile()
                .map_err(|e| dist_error("latency", e))?,
            loss_ratio: config.loss_ratio,
            duplicate_ratio: config.duplicate_ratio,
            order: match &config.order {
                LinkOrder::Fifo => Order::Fifo,
                LinkOrder::Independent => Order::Independent,
                LinkOrder::Reorder {
                    reordered_ratio,
                    extra_delay,
                } => Order::Reorder {
                    ratio: *reordered_ratio,
                    extra: extra_delay
                        .compile()
                        .map_err(|e| dist_error("order.extra_delay", e))?,
                },
            },
            bandwidth: config.bandwidth.as_ref().map(|b| Bandwidth {
                bytes_per_second: b.bytes_per_second,
                queue_capacity: b.queue_capacity as usize,
            }),
        })
    }
}

/// A link's random stream, derived from the run seed and its name on its first draw.
#[derive(Clone)]
pub(crate) struct LazyStream {
    seed: Seed,
    prefix: std::sync::Arc<str>,
    purpose: &'static str,
    stream: Option<Box<RngStream>>,
}

impl LazyStream {
    /// The stream, derived now if this is its first draw.
    #[inline]
    pub fn get(&mut self) -> &mut RngStream {
        let (seed, prefix, purpose) = (self.seed, &self.prefix, self.purpose);
        self.stream
            .get_or_insert_with(|| Box::new(seed.stream(&format!("{prefix}/{purpose}"))))
    }

    /// Takes `seed` (a branch's): the stream reseeded if it was drawn from, else derived
    /// from `seed` on its first draw, which gives the same numbers.
    pub fn reseed(&mut self, seed: Seed) {
        self.seed = seed;
        if let Some(stream) = &mut self.stream {
            stream.reseed(seed);
        }
    }
}

/// One directed link and everything it remembers.
#[derive(Clone)]
pub(crate) struct Link<P> {
    pub source: NodeId,
    pub target: NodeId,
    pub params: LinkParams,
    /// One stream per purpose, so that turning on duplication does not change which
    /// messages are lost, and a latency change does not change either. The yes/no
    /// decisions (loss, duplicate, reorder) draw one number per message from their own
    /// streams; the delays, whose samplers may draw a varying count of numbers (the
    /// truncated normal redraws), draw from theirs.
    ///
    /// Each stream is derived on its first draw (a link that never loses a message never
    /// derives its loss stream): the numbers are the same, and a large mesh of quiet links
    /// costs a few bytes each instead of six ChaCha states.
    pub rng_loss: LazyStream,
    pub rng_duplicate: LazyStream,
    pub rng_reorder: LazyStream,
    pub rng_latency: LazyStream,
    pub rng_duplicate_latency: LazyStream,
    pub rng_reorder_delay: LazyStream,
    /// The latest arrival scheduled so far: the FIFO clamp.
    pub last_arrival: SimTime,
    /// Finish times of the messages in the send queue (bandwidth only), oldest first.
    pub queue: VecDeque<SimTime>,
    /// When the link finishes transmitting what it has (bandwidth only).
    pub busy_until: SimTime,
    /// Copies that reached the end of the link and wait for a clog to end or the target
    /// to resume, in arrival order.
    pub held: VecDeque<Packet<P>>,
    /// The earliest pending release event of this link, if any; never in the past.
    pub release_at: Option<SimTime>,
    pub stats: LinkStats,
}

impl<P> Link<P> {
    pub fn new(
        seed: Seed,
        source: (NodeId, &str),
        target: (NodeId, &str),
        params: LinkParams,
    ) -> Self {
        // Streams are named after the nodes, not after creation order, so links created
        // in another order (or an extra link) leave every other link's numbers unchanged.
        let prefix: std::sync::Arc<str> = format!("net/link/{}->{}", source.1, target.1).into();
        let stream = |purpose: &'static str| LazyStream {
            seed,
            prefix: prefix.clone(),
            purpose,
            stream: None,
        };
        Link {
            source: source.0,
            target: target.0,
            params,
            rng_loss: stream("loss"),
            rng_duplicate: stream("duplicate"),
            rng_reorder: stream("reorder"),
            rng_latency: stream("latency"),
            rng_duplicate_latency: stream("duplicate_latency"),
            rng_reorder_delay: stream("reorder_delay"),
            last_arrival: SimTime::ZERO,
            queue: VecDeque::new(),
            busy_until: SimTime::ZERO,
            held: VecDeque::new(),
            release_at: None,
            stats: LinkStats::default(),
        }
    }

    /// Takes `seed` (a branch's) in every stream.
    pub fn reseed(&mut self, seed: Seed) {
        for stream in [
            &mut self.rng_loss,
            &mut self.rng_duplicate,
            &mut self.rng_reorder,
            &mut self.rng_latency,
            &mut self.rng_duplicate_latency,
            &mut self.rng_reorder_delay,
        ] {
            stream.reseed(seed);
        }
    }

    /// Reserves the link for a message of `size` bytes sent at `now`: the time its last
    /// byte leaves, or `None` if the send queue is full. Unlimited links return `now`.
    #[inline]
    pub fn enqueue(&mut self, now: SimTime, size: u32) -> Option<SimTime> {
        let Some(bandwidth) = self.params.bandwidth else {
            return Some(now);
        };
        while self.queue.front().is_some_and(|&finish| finish <= now) {
            self.queue.pop_front();
        }
        if self.queue.len() >= bandwidth.queue_capacity {
            return None;
        }
        let start = self.busy_until.max(now);
        let finish = start.saturating_add(bandwidth.serialization(size));
        self.busy_until = finish;
        self.queue.push_back(finish);
        assert!(self.queue.len() <= bandwidth.queue_capacity);
        Some(finish)
    }
}

/// The id of a link, as stored in packets.
impl LinkId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_rounds_up() {
        let b = Bandwidth {
            bytes_per_second: 3,
            queue_capacity: 1,
        };
        assert_eq!(b.serialization(1), SimDuration::from_nanos(333_333_334));
        assert_eq!(b.serialization(3), SimDuration::from_secs(1));
        assert_eq!(b.serialization(0), SimDuration::ZERO);
    }

    #[test]
    fn a_full_queue_drops_the_tail_and_drains_with_time() {
        let config = LinkConfig {
            bandwidth: Some(crate::config::BandwidthConfig {
                bytes_per_second: 1_000,
                queue_capacity: 2,
            }),
            ..LinkConfig::default()
        };
        let params = LinkParams::compile(&config).unwrap();
        let mut link: Link<()> = Link::new(Seed(1), (NodeId(0), "a"), (NodeId(1), "b"), params);
        let t0 = SimTime::ZERO;
        assert_eq!(link.enqueue(t0, 100), Some(SimTime::from_millis(100)));
        assert_eq!(link.enqueue(t0, 100), Some(SimTime::from_millis(200)));
        assert_eq!(link.enqueue(t0, 100), None, "queue of two is full");
        // At 100ms the first has left; the next one queues behind the second.
        let t = SimTime::from_millis(100);
        assert_eq!(link.enqueue(t, 50), Some(SimTime::from_millis(250)));
        // Once idle, a message starts at once.
        let t = SimTime::from_secs(1);
        assert_eq!(link.enqueue(t, 1), Some(SimTime::from_millis(1_001)));
    }
}
