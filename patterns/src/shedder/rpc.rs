//! [`RpcQueue`]: CoDel adapted to RPC queues, with adaptive LIFO.

use super::codel::validate_sojourn_queue;
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// The RPC-queue variant's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RpcQueueConfig {
    /// The queue is overloaded when the smallest sojourn seen over an interval exceeds this;
    /// an overloaded queue drops requests that have waited longer than it. Default 5ms.
    pub target: SimDuration,
    /// The measuring interval, and the longest a request may wait when not overloaded.
    /// Default 100ms.
    pub interval: SimDuration,
    /// Serve newest first while overloaded (adaptive LIFO), so the requests served are the ones
    /// whose callers are most likely still waiting. Default true.
    pub adaptive_lifo: bool,
    /// The queue's bound: an arrival that finds it full is refused at once.
    pub queue_capacity: usize,
}

impl Default for RpcQueueConfig {
    fn default() -> Self {
        RpcQueueConfig {
            target: SimDuration::from_millis(5),
            interval: SimDuration::from_millis(100),
            adaptive_lifo: true,
            queue_capacity: 1000,
        }
    }
}

impl RpcQueueConfig {
    /// Checks that target and interval are positive with target below interval, and that the
    /// queue holds at least one request.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_sojourn_queue(self.target, self.interval, self.queue_capacity)
    }
}

/// What a dequeue produced: the request to serve (if any) and the expired requests dropped on
/// the way, each with its sojourn time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcDequeued<T> {
    /// The request to serve.
    pub delivered: Option<(T, SimDuration)>,
    /// Requests dropped for waiting longer than the current limit.
    pub dropped: Vec<(T, SimDuration)>,
}

/// A bounded request queue that sheds by queueing delay, after the scheme described for
/// Facebook's RPC servers: if the shortest sojourn over the last interval stayed above
/// `target`, a standing queue has formed, so requests that waited longer than `target` are
/// dropped and (with adaptive LIFO) the newest are served first; otherwise requests may wait
/// up to `interval`, served in arrival order.
#[derive(Debug, Clone)]
pub struct RpcQueue<T> {
    config: RpcQueueConfig,
    queue: VecDeque<(SimTime, T)>,
    /// Start of the current measuring interval.
    interval_start: SimTime,
    /// Shortest sojourn seen in the current interval (`None`: none seen yet).
    sojourn_min: Option<SimDuration>,
    overloaded: bool,
    last: SimTime,
}

impl<T> RpcQueue<T> {
    /// An empty queue; fails if the config does not validate.
    pub fn new(config: &RpcQueueConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(RpcQueue {
            config: config.clone(),
            queue: VecDeque::new(),
            interval_start: SimTime::ZERO,
            sojourn_min: None,
            overloaded: false,
            last: SimTime::ZERO,
        })
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// True while the last full interval's shortest sojourn exceeded the target.
    pub fn overloaded(&self) -> bool {
        self.overloaded
    }

    /// Queue `item` at `now`; a full queue hands it back.
    pub fn enqueue(&mut self, now: SimTime, item: T) -> Result<(), T> {
        let now = self.clock(now);
        if self.queue.len() >= self.config.queue_capacity {
            return Err(item);
        }
        self.queue.push_back((now, item));
        Ok(())
    }

    fn clock(&mut self, now: SimTime) -> SimTime {
        self.last = self.last.max(now);
        self.roll(self.last);
        self.last
    }

    /// Close the measuring interval if it is over: judge it, start the next.
    fn roll(&mut self, now: SimTime) {
        if now >= self.interval_start.saturating_add(self.config.interval) {
            // In an interval without dequeues, the shortest wait is the newest request's.
            let shortest = self.sojourn_min.or_else(|| {
                self.queue
                    .back()
                    .map(|(t, _)| now.saturating_duration_since(*t))
            });
            self.overloaded = shortest.is_some_and(|s| s > self.config.target);
            self.interval_start = now;
            self.sojourn_min = None;
        }
    }

    /// Takes `item` out of the queue (its caller gave up on it); false if it is not queued.
    /// The scan starts at the oldest, which is where abandoned requests usually are.
    pub fn remove(&mut self, item: &T) -> bool
    where
        T: PartialEq,
    {
        match self.queue.iter().position(|(_, queued)| queued == item) {
            Some(i) => {
                self.queue.remove(i);
                true
            }
            None => false,
        }
    }

    /// When the oldest queued request arrived.
    pub fn oldest(&self) -> Option<SimTime> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// The longest a request may wait now.
    pub fn wait_max(&self) -> SimDuration {
        if self.overloaded {
            self.config.target
        } else {
            self.config.interval
        }
    }

    /// Drop the expired requests, then deliver one: the newest while overloaded with adaptive
    /// LIFO, else the oldest.
    pub fn dequeue(&mut self, now: SimTime) -> RpcDequeued<T> {
        let now = self.clock(now);
        let wait_max = self.wait_max();
        let mut dropped = Vec::new();
        // Arrival order means the expired ones are at the front.
        while let Some((t, _)) = self.queue.front() {
            let sojourn = now.saturating_duration_since(*t);
            if sojourn <= wait_max {
                break;
            }
            let (_, item) = self.queue.pop_front().expect("front exists");
            dropped.push((item, sojourn));
        }
        let lifo = self.overloaded && self.config.adaptive_lifo;
        let next = if lifo {
            self.queue.pop_back()
        } else {
            self.queue.pop_front()
        };
        let delivered = next.map(|(t, item)| {
            let sojourn = now.saturating_duration_since(t);
            self.sojourn_min = Some(self.sojourn_min.map_or(sojourn, |m| m.min(sojourn)));
            (item, sojourn)
        });
        if self.queue.is_empty() {
            // An empty queue is the clearest sign that no standing queue exists.
            self.sojourn_min = Some(SimDuration::ZERO);
        }
        assert!(
            self.queue.len() <= self.config.queue_capacity,
            "rpc queue above its capacity"
        );
        RpcDequeued { delivered, dropped }
    }
}
