//! Window limiters: fixed window, sliding window log, sliding window counter.

use super::decision::{Cost, RateDecision, RateLimiter, assert_decision};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// The most entries a sliding log may hold; its memory grows with the limit.
pub const SLIDING_LOG_LIMIT_MAX: u64 = 1_000_000;

/// `limit` units per `window`: the configuration of every window limiter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowConfig {
    /// Units admitted per window.
    pub limit: u64,
    /// The window length.
    pub window: SimDuration,
}

impl Default for WindowConfig {
    /// 100 per second.
    fn default() -> Self {
        WindowConfig {
            limit: 100,
            window: SimDuration::from_secs(1),
        }
    }
}

impl WindowConfig {
    /// Checks that the limit and the window are positive.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.limit == 0 {
            return Err(ConfigError::new(
                "limit",
                "must be at least 1, got 0 (to refuse everything, use a fallback instead)",
            ));
        }
        if self.window.is_zero() {
            return Err(ConfigError::new("window", "must be positive, got 0s"));
        }
        Ok(())
    }
}

/// The start of the window (aligned to multiples of `window` since time zero) holding `now`.
fn window_start(now: SimTime, window: u64) -> SimTime {
    SimTime::from_nanos(now.as_nanos() - now.as_nanos() % window)
}

/// A fixed window's configuration: `limit` units per aligned `window`, and how long a request
/// may wait for a later window's units (`wait_max`, resilience4j's `timeoutDuration`; zero
/// refuses at once, as a plain fixed window does).
///
/// In RON: `(kind: "fixed_window", limit: 50, window: "500ms", wait_max: "5s")`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedWindowConfig {
    /// Units admitted per window.
    pub limit: u64,
    /// The window length.
    pub window: SimDuration,
    /// The longest a request waits for units of a later window; zero by default.
    #[serde(default, skip_serializing_if = "no_wait")]
    pub wait_max: SimDuration,
}

/// Whether a fixed window has no wait (then a file need not say `wait_max`).
fn no_wait(d: &SimDuration) -> bool {
    d.is_zero()
}

impl Default for FixedWindowConfig {
    /// 100 per second, no wait.
    fn default() -> Self {
        FixedWindowConfig {
            limit: 100,
            window: SimDuration::from_secs(1),
            wait_max: SimDuration::ZERO,
        }
    }
}

impl From<WindowConfig> for FixedWindowConfig {
    /// The same limit and window, no wait.
    fn from(w: WindowConfig) -> Self {
        FixedWindowConfig {
            limit: w.limit,
            window: w.window,
            wait_max: SimDuration::ZERO,
        }
    }
}

impl FixedWindowConfig {
    /// Checks the limit and the window (as [`WindowConfig::validate`]) and the wait (at most
    /// one day).
    pub fn validate(&self) -> Result<(), ConfigError> {
        WindowConfig {
            limit: self.limit,
            window: self.window,
        }
        .validate()?;
        if self.wait_max > SimDuration::from_secs(86_400) {
            return Err(ConfigError::new(
                "wait_max",
                format!("must be at most 1 day, got {}", self.wait_max),
            ));
        }
        Ok(())
    }
}

/// Fixed window counter: at most `limit` units per aligned window.
///
/// Cheap and exact per window, but a burst at the end of one window and another at the start of
/// the next can admit up to `2 × limit` in any span of one window length.
///
/// With a `wait_max`, it is resilience4j's `AtomicRateLimiter`: a request that finds the
/// window's units used reserves units of the next windows (in arrival order) and is admitted
/// with the delay until the window its last unit falls in begins, if that delay is at most
/// `wait_max`; otherwise it is refused and reserves nothing. Reserved units are the next
/// windows' own: a window begins with `limit` units less what was reserved from it.
#[derive(Debug, Clone)]
pub struct FixedWindow {
    limit: u64,
    window: u64,
    wait_max: SimDuration,
    start: SimTime,
    /// Units taken since `start`, reservations of later windows included (`used > limit` only
    /// with a `wait_max`).
    used: u64,
    last: SimTime,
}

impl FixedWindow {
    /// A fresh limiter; fails if the config does not validate.
    pub fn new(config: &FixedWindowConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(FixedWindow {
            limit: config.limit,
            window: config.window.as_nanos(),
            wait_max: config.wait_max,
            start: SimTime::ZERO,
            used: 0,
            last: SimTime::ZERO,
        })
    }

    /// (effective now, window start, units taken from that window on): each window that
    /// began since `start` gave back `limit` units.
    fn state_at(&self, now: SimTime) -> (SimTime, SimTime, u64) {
        let now = now.max(self.last);
        let start = window_start(now, self.window);
        let passed = (start.as_nanos() - self.start.as_nanos()) / self.window;
        let used = self.used.saturating_sub(passed.saturating_mul(self.limit));
        (now, start, used)
    }

    /// The start of the window `n` windows after the one at `start`.
    fn window_after(&self, start: SimTime, n: u64) -> SimTime {
        start.saturating_add(SimDuration::from_nanos(n.saturating_mul(self.window)))
    }
}

impl RateLimiter for FixedWindow {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let (now, start, used) = self.state_at(now);
        let end = self.window_after(start, 1);
        let remaining = self.limit.saturating_sub(used);
        let reset_at = if used == 0 {
            now
        } else {
            self.window_after(start, used.div_ceil(self.limit))
        };
        let d = if cost.units() > self.limit {
            RateDecision::too_costly(cost, self.limit, remaining, reset_at)
        } else if cost.units() <= remaining {
            RateDecision::admit(self.limit, remaining - cost.units(), end)
        } else {
            // The window the request's last unit falls in, counted from this one.
            let units = u128::from(used) + u128::from(cost.units()) - 1;
            let lands = u64::try_from(units / u128::from(self.limit)).unwrap_or(u64::MAX);
            let wait = self
                .window_after(start, lands)
                .saturating_duration_since(now);
            if !self.wait_max.is_zero() && wait <= self.wait_max {
                let mut d = RateDecision::admit(self.limit, 0, reset_at.max(end));
                d.delay = wait;
                d
            } else {
                let retry_after =
                    SimDuration::from_nanos((wait.as_nanos() - self.wait_max.as_nanos()).max(1));
                RateDecision::exceeded(self.limit, remaining, retry_after, reset_at)
            }
        };
        assert_decision(&d, now);
        d
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        let (now, start, used) = self.state_at(now);
        self.last = now;
        self.start = start;
        self.used = used;
        if d.allowed() {
            self.used = self.used.saturating_add(cost.units());
        }
        assert!(
            self.wait_max > SimDuration::ZERO || self.used <= self.limit,
            "fixed window without a wait over its limit"
        );
        d
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.state_at(now).2 == 0
    }
}

/// Sliding window log: remembers every admitted request of the last window, exact.
///
/// A request at `now` is admitted if the units admitted in `(now − window, now]` plus its cost
/// stay within the limit. Memory is one entry per admitted request, at most `limit` entries,
/// so the limit is capped at [`SLIDING_LOG_LIMIT_MAX`].
#[derive(Debug, Clone)]
pub struct SlidingLog {
    limit: u64,
    window: SimDuration,
    /// Admitted requests, oldest first: (time, cost).
    log: VecDeque<(SimTime, u64)>,
    /// Sum of the costs in `log`.
    used: u64,
    last: SimTime,
}

impl SlidingLog {
    /// A fresh limiter; fails if the config does not validate or the limit is above
    /// [`SLIDING_LOG_LIMIT_MAX`].
    pub fn new(config: &WindowConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        if config.limit > SLIDING_LOG_LIMIT_MAX {
            return Err(ConfigError::new(
                "limit",
                format!(
                    "must be at most {SLIDING_LOG_LIMIT_MAX} for a sliding log (one entry per unit), got {}; use a sliding counter",
                    config.limit
                ),
            ));
        }
        Ok(SlidingLog {
            limit: config.limit,
            window: config.window,
            log: VecDeque::new(),
            used: 0,
            last: SimTime::ZERO,
        })
    }

    /// True when the entry at `t` no longer counts at `now`.
    fn expired(&self, t: SimTime, now: SimTime) -> bool {
        t.saturating_add(self.window) <= now
    }

    /// (effective now, number of expired entries at the front, live units).
    fn state_at(&self, now: SimTime) -> (SimTime, usize, u64) {
        let now = now.max(self.last);
        let mut freed = 0;
        let mut n = 0;
        for &(t, c) in &self.log {
            if !self.expired(t, now) {
                break;
            }
            freed += c;
            n += 1;
        }
        (now, n, self.used - freed)
    }
}

impl RateLimiter for SlidingLog {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let (now, skip, used) = self.state_at(now);
        let remaining = self.limit - used;
        let newest_reset = self
            .log
            .back()
            .filter(|_| used > 0)
            .map_or(now, |&(t, _)| t.saturating_add(self.window));
        let d = if cost.units() > self.limit {
            RateDecision::too_costly(cost, self.limit, remaining, newest_reset)
        } else if cost.units() <= remaining {
            RateDecision::admit(
                self.limit,
                remaining - cost.units(),
                now.saturating_add(self.window),
            )
        } else {
            // Walk the live entries oldest first until enough of them have expired.
            let mut live = used;
            let mut retry_at = newest_reset;
            for &(t, c) in self.log.iter().skip(skip) {
                live -= c;
                if live + cost.units() <= self.limit {
                    retry_at = t.saturating_add(self.window);
                    break;
                }
            }
            RateDecision::exceeded(
                self.limit,
                remaining,
                retry_at.saturating_duration_since(now),
                newest_reset,
            )
        };
        assert_decision(&d, now);
        d
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        let (now, skip, used) = self.state_at(now);
        self.last = now;
        self.log.drain(..skip);
        self.used = used;
        if d.allowed() {
            self.log.push_back((now, cost.units()));
            self.used += cost.units();
        }
        assert!(self.used <= self.limit, "sliding log over its limit");
        assert!(
            self.log.len() as u64 <= self.limit,
            "sliding log longer than its limit"
        );
        d
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.state_at(now).2 == 0
    }
}

/// Sliding window counter: two fixed-window counts, the previous one weighted by how much of
/// it still overlaps the sliding window.
///
/// A request at `now`, a fraction `f` into its window, is admitted if
/// `previous × (1 − f) + current + cost ≤ limit`, computed exactly in integers.
///
/// **Bound.** The estimate assumes the previous window's requests were spread evenly. When they
/// were not, the units admitted in any span of one window length ending at `now` are at most
/// `limit + previous × f`, where `previous` is the count of the window before `now`'s window:
/// below `2 × limit`, and reaching near it only when the previous window's traffic all came at
/// its very end. (Units in the current window are at most `limit − previous × (1 − f)`, and at
/// most `previous` units come from the previous window.)
#[derive(Debug, Clone)]
pub struct SlidingCounter {
    limit: u64,
    window: u64,
    start: SimTime,
    previous: u64,
    current: u64,
    last: SimTime,
}

/// The counts seen at an instant.
struct CounterView {
    now: SimTime,
    start: SimTime,
    elapsed: u64,
    previous: u64,
    current: u64,
}

impl SlidingCounter {
    /// A fresh limiter; fails if the config does not validate.
    pub fn new(config: &WindowConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(SlidingCounter {
            limit: config.limit,
            window: config.window.as_nanos(),
            start: SimTime::ZERO,
            previous: 0,
            current: 0,
            last: SimTime::ZERO,
        })
    }

    fn view(&self, now: SimTime) -> CounterView {
        let now = now.max(self.last);
        let start = window_start(now, self.window);
        let (previous, current) = if start == self.start {
            (self.previous, self.current)
        } else if start.as_nanos() - self.start.as_nanos() == self.window {
            (self.current, 0)
        } else {
            (0, 0)
        };
        CounterView {
            now,
            start,
            elapsed: now.as_nanos() - start.as_nanos(),
            previous,
            current,
        }
    }

    /// Units that fit now: `floor((limit·W − previous·(W − elapsed)) / W) − current`.
    fn room(&self, v: &CounterView) -> u64 {
        let w = u128::from(self.window);
        let budget = u128::from(self.limit) * w;
        let weighted = u128::from(v.previous) * (w - u128::from(v.elapsed));
        let fits = (budget.saturating_sub(weighted) / w) as u64;
        fits.saturating_sub(v.current)
    }

    /// When the estimate reaches zero if nothing else arrives.
    fn reset_at(&self, v: &CounterView, current: u64) -> SimTime {
        let w = SimDuration::from_nanos(self.window);
        if current > 0 {
            v.start.saturating_add(w).saturating_add(w)
        } else if v.previous > 0 {
            v.start.saturating_add(w)
        } else {
            v.now
        }
    }

    /// The earliest time at which `cost` fits, if nothing else arrives (cost ≤ limit).
    fn retry_at(&self, v: &CounterView, cost: u64) -> SimTime {
        let w = u128::from(self.window);
        let window = SimDuration::from_nanos(self.window);
        // Later in this window: the previous window's weight has to fall far enough.
        if cost <= self.limit - v.current && v.previous > 0 {
            let spare = u128::from(self.limit - v.current - cost) * w;
            let overlap_max = spare / u128::from(v.previous);
            if overlap_max > 0 {
                let elapsed = (w - overlap_max.min(w)) as u64;
                return v.start.saturating_add(SimDuration::from_nanos(elapsed));
            }
        }
        // In the next window, the current count becomes the weighted previous one.
        let overlap_max = if v.current == 0 {
            w
        } else {
            (u128::from(self.limit - cost) * w / u128::from(v.current)).min(w)
        };
        let elapsed = (w - overlap_max) as u64;
        v.start
            .saturating_add(window)
            .saturating_add(SimDuration::from_nanos(elapsed))
    }
}

impl RateLimiter for SlidingCounter {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let v = self.view(now);
        let room = self.room(&v);
        let d = if cost.units() > self.limit {
            RateDecision::too_costly(cost, self.limit, room, self.reset_at(&v, v.current))
        } else if cost.units() <= room {
            RateDecision::admit(
                self.limit,
                room - cost.units(),
                self.reset_at(&v, v.current + cost.units()),
            )
        } else {
            let retry_at = self.retry_at(&v, cost.units());
            RateDecision::exceeded(
                self.limit,
                room,
                retry_at.saturating_duration_since(v.now),
                self.reset_at(&v, v.current),
            )
        };
        assert_decision(&d, v.now);
        d
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        let v = self.view(now);
        self.last = v.now;
        self.start = v.start;
        self.previous = v.previous;
        self.current = v.current;
        if d.allowed() {
            self.current += cost.units();
        }
        assert!(self.current <= self.limit, "sliding counter over its limit");
        d
    }

    fn at_rest(&self, now: SimTime) -> bool {
        let v = self.view(now);
        v.previous == 0 && v.current == 0
    }
}
