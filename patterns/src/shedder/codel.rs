//! [`CoDelQueue`]: CoDel (RFC 8289) as a queue discipline for requests.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// CoDel's parameters (RFC 8289 defaults: target 5ms, interval 100ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoDelConfig {
    /// Acceptable standing queue delay. Default 5ms.
    pub target: SimDuration,
    /// How long the delay must stay above `target` before dropping starts, and the base of the
    /// control law. Default 100ms.
    pub interval: SimDuration,
    /// The queue's bound: an arrival that finds it full is refused at once (tail drop).
    pub queue_capacity: usize,
    /// Sojourn is not judged while at most this many requests remain queued after a dequeue:
    /// RFC 8289's `bytes() <= MAXPACKET` (at most one packet's worth left) with a request as
    /// the unit. Default 1; 0 judges every dequeue but the one that empties the queue.
    pub queue_len_min: usize,
}

impl Default for CoDelConfig {
    fn default() -> Self {
        CoDelConfig {
            target: SimDuration::from_millis(5),
            interval: SimDuration::from_millis(100),
            queue_capacity: 1000,
            queue_len_min: 1,
        }
    }
}

impl CoDelConfig {
    /// Checks that target and interval are positive with target below interval, and that the
    /// queue holds at least one request.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_sojourn_queue(self.target, self.interval, self.queue_capacity)?;
        if self.interval > SimDuration::from_secs(3600) {
            return Err(ConfigError::new(
                "interval",
                format!("must be at most 1h, got {}", self.interval),
            ));
        }
        Ok(())
    }
}

/// The checks shared by the queues that judge sojourn time ([`CoDelConfig`] and
/// [`super::RpcQueueConfig`]): a positive target below the interval, room for one request.
pub(super) fn validate_sojourn_queue(
    target: SimDuration,
    interval: SimDuration,
    queue_capacity: usize,
) -> Result<(), ConfigError> {
    if target.is_zero() {
        return Err(ConfigError::new("target", "must be positive, got 0s"));
    }
    if interval <= target {
        return Err(ConfigError::new(
            "interval",
            format!("must be longer than target ({target}), got {interval}"),
        ));
    }
    if queue_capacity == 0 {
        return Err(ConfigError::new(
            "queue_capacity",
            "must be at least 1, got 0",
        ));
    }
    Ok(())
}

/// The control law: the next drop `interval / √count` after `t` (rounded to the nanosecond
/// through `libm`, so the schedule is the same on every platform).
pub fn control_law(t: SimTime, interval: SimDuration, count: u32) -> SimTime {
    let step = interval.as_nanos() as f64 / libm::sqrt(f64::from(count.max(1)));
    t.saturating_add(SimDuration::from_nanos_f64(step))
}

/// What a dequeue produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dequeued<T> {
    /// The request to serve, with its sojourn time; `None` when the queue emptied.
    pub delivered: Option<(T, SimDuration)>,
    /// Requests dropped by this dequeue, with their sojourn times, oldest first.
    pub dropped: Vec<(T, SimDuration)>,
}

/// CoDel's controller state, for reports and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoDelState {
    /// Not dropping. `first_above` is when the sojourn, if it stays above target, allows
    /// dropping (RFC `first_above_time`).
    Idle {
        /// `None` while the sojourn is below target.
        first_above: Option<SimTime>,
    },
    /// Dropping: the next drop is due at `drop_next`.
    Dropping {
        /// RFC `drop_next`.
        drop_next: SimTime,
        /// Drops since entering (RFC `count`).
        count: u32,
    },
}

/// A bounded FIFO queue governed by CoDel, exactly as RFC 8289's pseudocode: the enqueue time
/// goes in with the request, and each dequeue decides, from the head's sojourn time, whether
/// to drop (possibly several requests, per the control law) before delivering one.
#[derive(Debug, Clone)]
pub struct CoDelQueue<T> {
    config: CoDelConfig,
    queue: VecDeque<(SimTime, T)>,
    /// RFC `first_above_time` (None is the RFC's 0).
    first_above: Option<SimTime>,
    /// RFC `drop_next`.
    drop_next: SimTime,
    /// RFC `count`.
    count: u32,
    /// RFC `lastcount`.
    last_count: u32,
    /// RFC `dropping`.
    dropping: bool,
    last: SimTime,
    dropped_total: u64,
}

struct Head<T> {
    item: Option<(T, SimDuration)>,
    ok_to_drop: bool,
}

impl<T> CoDelQueue<T> {
    /// An empty queue; fails if the config does not validate.
    pub fn new(config: &CoDelConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(CoDelQueue {
            config: config.clone(),
            queue: VecDeque::new(),
            first_above: None,
            drop_next: SimTime::ZERO,
            count: 0,
            last_count: 0,
            dropping: false,
            last: SimTime::ZERO,
            dropped_total: 0,
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

    /// When the request at the head (the one that has waited longest) was queued.
    pub fn oldest(&self) -> Option<SimTime> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// Takes `item` out of the queue (its caller gave up); false if it was not queued. The
    /// controller's state is left as it is: CoDel judges the sojourn of what it dequeues.
    pub fn remove(&mut self, item: &T) -> bool
    where
        T: PartialEq,
    {
        match self.queue.iter().position(|(_, x)| x == item) {
            Some(i) => {
                self.queue.remove(i);
                true
            }
            None => false,
        }
    }

    /// Requests dropped by CoDel so far (tail drops on a full queue are not counted here).
    pub fn dropped_total(&self) -> u64 {
        self.dropped_total
    }

    /// The controller's state.
    pub fn state(&self) -> CoDelState {
        if self.dropping {
            CoDelState::Dropping {
                drop_next: self.drop_next,
                count: self.count,
            }
        } else {
            CoDelState::Idle {
                first_above: self.first_above,
            }
        }
    }

    /// Queue `item` at `now`; a full queue hands it back (tail drop).
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
        self.last
    }

    /// RFC `dodequeue`: take the head and judge its sojourn time.
    fn do_dequeue(&mut self, now: SimTime) -> Head<T> {
        let Some((enqueued, item)) = self.queue.pop_front() else {
            self.first_above = None;
            return Head {
                item: None,
                ok_to_drop: false,
            };
        };
        let sojourn = now.saturating_duration_since(enqueued);
        let mut ok_to_drop = false;
        if sojourn < self.config.target || self.queue.len() <= self.config.queue_len_min {
            // Went below: stay below for at least an interval before dropping again.
            self.first_above = None;
        } else {
            match self.first_above {
                None => self.first_above = Some(now.saturating_add(self.config.interval)),
                Some(at) if now >= at => ok_to_drop = true,
                Some(_) => {}
            }
        }
        Head {
            item: Some((item, sojourn)),
            ok_to_drop,
        }
    }

    /// RFC `dequeue`: drop what the control law says, deliver the next request.
    pub fn dequeue(&mut self, now: SimTime) -> Dequeued<T> {
        let now = self.clock(now);
        let mut dropped = Vec::new();
        let mut head = self.do_dequeue(now);
        if head.item.is_none() {
            // An empty queue takes CoDel out of the dropping state.
            self.dropping = false;
            return Dequeued {
                delivered: None,
                dropped,
            };
        }
        let interval = self.config.interval;
        if self.dropping {
            if !head.ok_to_drop {
                // Sojourn went below target: leave the dropping state.
                self.dropping = false;
            }
            // Bounded by the queue: each round removes a request.
            while now >= self.drop_next && self.dropping {
                dropped.extend(head.item.take());
                self.count = self.count.saturating_add(1);
                head = self.do_dequeue(now);
                if !head.ok_to_drop {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, interval, self.count);
                }
            }
        } else if head.ok_to_drop {
            dropped.extend(head.item.take());
            head = self.do_dequeue(now);
            self.dropping = true;
            // Re-entering soon after leaving: start from the drop rate that controlled the
            // queue last time rather than from one drop per interval (RFC 8289 section 5.6).
            // `count` only grows from `last_count` while dropping, so the difference is the
            // number of drops of the last dropping period beyond its starting count. A
            // `drop_next` still in the future counts as recent (the RFC's unsigned `now -
            // drop_next` would wrap there; saturating is the intent).
            assert!(
                self.count >= self.last_count,
                "codel count fell below lastcount"
            );
            let delta = self.count - self.last_count;
            self.count = 1;
            let recent =
                now.saturating_duration_since(self.drop_next) < interval.saturating_mul(16);
            if delta > 1 && recent {
                self.count = delta;
            }
            self.drop_next = control_law(now, interval, self.count);
            self.last_count = self.count;
        }
        self.dropped_total += dropped.len() as u64;
        assert!(
            self.queue.len() <= self.config.queue_capacity,
            "codel queue above its capacity"
        );
        assert!(
            !self.dropping || self.count >= 1,
            "dropping with a zero count"
        );
        Dequeued {
            delivered: head.item,
            dropped,
        }
    }
}
