//! The closed state's record of recent outcomes: count-based ring or per-second buckets.

use sim_core::SimTime;

/// Totals over the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowTotals {
    /// Calls recorded.
    pub calls: u64,
    /// Of which failed.
    pub failures: u64,
    /// Of which were slow (failed or not).
    pub slow: u64,
}

impl WindowTotals {
    fn add(&mut self, failed: bool, slow: bool, sign: i8) {
        let apply = |x: &mut u64, on: bool| {
            if on {
                if sign > 0 { *x += 1 } else { *x -= 1 }
            }
        };
        apply(&mut self.calls, true);
        apply(&mut self.failures, failed);
        apply(&mut self.slow, slow);
    }
}

const FAILED: u8 = 1;
const SLOW: u8 = 2;

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Bucket {
    second: u64,
    totals: WindowTotals,
}

/// The outcomes a closed breaker judges.
#[derive(Debug, Clone)]
pub(crate) enum Window {
    /// The last `size` outcomes, as flags, in a ring.
    Count {
        ring: Vec<u8>,
        /// The window size (a `Vec`'s capacity may exceed what was asked for).
        size: usize,
        next: usize,
        totals: WindowTotals,
    },
    /// One bucket per second of the last `buckets.len()` seconds.
    Time {
        buckets: Vec<Bucket>,
        totals: WindowTotals,
        /// The second of the last sweep for expired buckets: one sweep per second at most.
        swept: u64,
    },
}

impl Window {
    pub(crate) fn count(size: u32) -> Self {
        Window::Count {
            // Grown as calls are recorded, not reserved: a window of a million calls on each
            // of thousands of replicas costs only what the calls so far fill.
            ring: Vec::new(),
            size: size as usize,
            next: 0,
            totals: WindowTotals::default(),
        }
    }

    pub(crate) fn time(seconds: u32) -> Self {
        Window::Time {
            buckets: vec![Bucket::default(); seconds as usize],
            totals: WindowTotals::default(),
            swept: 0,
        }
    }

    /// Drop the buckets that fell out of a time window by `now`.
    fn expire(buckets: &mut [Bucket], totals: &mut WindowTotals, swept: &mut u64, now: SimTime) {
        let second = now.as_nanos() / 1_000_000_000;
        if second == *swept {
            return;
        }
        *swept = second;
        let size = buckets.len() as u64;
        for b in buckets.iter_mut() {
            if b.totals.calls > 0 && b.second + size <= second {
                totals.calls -= b.totals.calls;
                totals.failures -= b.totals.failures;
                totals.slow -= b.totals.slow;
                b.totals = WindowTotals::default();
            }
        }
    }

    pub(crate) fn record(&mut self, now: SimTime, failed: bool, slow: bool) {
        match self {
            Window::Count {
                ring,
                size,
                next,
                totals,
            } => {
                let flags = u8::from(failed) * FAILED + u8::from(slow) * SLOW;
                if ring.len() < *size {
                    if ring.len() == ring.capacity() {
                        // Doubling, but never past the window's size.
                        let more = ring.capacity().max(16).min(*size - ring.len());
                        ring.reserve_exact(more);
                    }
                    ring.push(flags);
                } else {
                    let old = ring[*next];
                    totals.add(old & FAILED != 0, old & SLOW != 0, -1);
                    ring[*next] = flags;
                    *next = (*next + 1) % ring.len();
                }
                totals.add(failed, slow, 1);
            }
            Window::Time {
                buckets,
                totals,
                swept,
            } => {
                Self::expire(buckets, totals, swept, now);
                let second = now.as_nanos() / 1_000_000_000;
                let i = (second % buckets.len() as u64) as usize;
                let b = &mut buckets[i];
                if b.second != second {
                    // Expired above unless it is empty; either way nothing to subtract.
                    assert_eq!(b.totals.calls, 0, "stale bucket survived expiry");
                    b.second = second;
                }
                b.totals.add(failed, slow, 1);
                totals.add(failed, slow, 1);
            }
        }
    }

    pub(crate) fn totals(&mut self, now: SimTime) -> WindowTotals {
        match self {
            Window::Count { totals, .. } => *totals,
            Window::Time {
                buckets,
                totals,
                swept,
            } => {
                Self::expire(buckets, totals, swept, now);
                *totals
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        match self {
            Window::Count {
                ring, next, totals, ..
            } => {
                ring.clear();
                *next = 0;
                *totals = WindowTotals::default();
            }
            Window::Time {
                buckets, totals, ..
            } => {
                buckets.fill(Bucket::default());
                *totals = WindowTotals::default();
            }
        }
    }
}
