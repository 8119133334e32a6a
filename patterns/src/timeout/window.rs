//! A bounded window of recent latencies and its percentiles.

use sim_core::SimDuration;

/// The most recent `capacity` latencies in a ring, with nearest-rank percentiles.
///
/// Memory is fixed at two vectors of `capacity` durations: the ring in arrival order and the
/// same values sorted. An observation costs a binary search and a memmove of at most
/// `capacity` values; a percentile is one index. Old latencies leave the window as new ones arrive, so the estimate follows a
/// dependency that slows down or recovers within `capacity` observations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyWindow {
    ring: Vec<SimDuration>,
    sorted: Vec<SimDuration>,
    next: usize,
    capacity: usize,
    seen: u64,
}

impl LatencyWindow {
    /// An empty window of `capacity` latencies (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        LatencyWindow {
            ring: Vec::with_capacity(capacity),
            sorted: Vec::with_capacity(capacity),
            next: 0,
            capacity,
            seen: 0,
        }
    }

    /// Records one latency, evicting the oldest when full.
    pub fn observe(&mut self, latency: SimDuration) {
        if self.ring.len() < self.capacity {
            self.ring.push(latency);
        } else {
            let evicted = core::mem::replace(&mut self.ring[self.next], latency);
            let at = self.sorted.partition_point(|v| *v < evicted);
            assert!(self.sorted[at] == evicted, "sorted copy lost {evicted}");
            self.sorted.remove(at);
        }
        let at = self.sorted.partition_point(|v| *v <= latency);
        self.sorted.insert(at, latency);
        self.next = (self.next + 1) % self.capacity;
        self.seen += 1;
        assert!(self.ring.len() <= self.capacity && self.sorted.len() == self.ring.len());
    }

    /// Latencies currently in the window.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// True before the first observation.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Latencies observed since the start, including those that left the window.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The nearest-rank `percentile` (0 < p ≤ 100): the smallest window value with at least
    /// p% of the window at or below it. `None` when empty.
    pub fn percentile(&self, percentile: f64) -> Option<SimDuration> {
        if self.ring.is_empty() {
            return None;
        }
        let n = self.ring.len();
        let rank = libm::ceil(percentile.clamp(0.0, 100.0) / 100.0 * n as f64) as usize;
        let index = rank.clamp(1, n) - 1;
        Some(self.sorted[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_on_a_known_window() {
        let mut w = LatencyWindow::new(100);
        for ms in 1..=100 {
            w.observe(SimDuration::from_millis(ms));
        }
        assert_eq!(w.percentile(50.0), Some(SimDuration::from_millis(50)));
        assert_eq!(w.percentile(99.0), Some(SimDuration::from_millis(99)));
        assert_eq!(w.percentile(100.0), Some(SimDuration::from_millis(100)));
        // A full window forgets the oldest value.
        w.observe(SimDuration::from_millis(1000));
        assert_eq!(w.percentile(1.0), Some(SimDuration::from_millis(2)));
        assert_eq!(w.len(), 100);
    }
}
