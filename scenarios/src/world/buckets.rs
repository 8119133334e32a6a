//! Which report bucket an instant falls in ([`Buckets`]), without a division per question.
//!
//! A request asks for its bucket several times (its offer, its attempts, the service's
//! arrival and answer counts, its outcome), and a 64-bit division of a nanosecond time takes
//! tens of cycles on some processors (about 40 on the first EPYC generation), more than the
//! rest of a counter's update. The world's time only moves forward and most questions are
//! about the current instant, so [`Buckets`] keeps the bounds of the last bucket it found
//! and divides only when an instant leaves it. The answers are the division's, exactly.

use sim_core::{SimDuration, SimTime};
use std::cell::Cell;

/// The report buckets of a run (of one width, from time zero), and the last one found.
#[derive(Clone, Debug)]
pub struct Buckets {
    width: u64,
    /// The last bucket found going forward: its first instant, the instant after its last
    /// (saturating at the end of the clock) and its index.
    last: Cell<(u64, u64, usize)>,
}

impl Buckets {
    /// Buckets of `width` (positive: validation refuses a zero bucket).
    pub fn new(width: SimDuration) -> Self {
        assert!(!width.is_zero(), "report buckets have a positive width");
        Buckets {
            width: width.as_nanos(),
            last: Cell::new((0, width.as_nanos(), 0)),
        }
    }

    /// The buckets' width.
    pub fn width(&self) -> SimDuration {
        SimDuration::from_nanos(self.width)
    }

    /// The index of the bucket that holds `t`: `t / width`.
    #[inline]
    pub fn of(&self, t: SimTime) -> usize {
        let t = t.as_nanos();
        let (start, end, index) = self.last.get();
        if start <= t && t < end {
            return index;
        }
        self.find(t)
    }

    /// [`Buckets::of`] outside the last bucket found: divides, and keeps the bucket found
    /// when it is later than the last one (an earlier instant, such as a request's offer,
    /// does not move the bucket the next questions are likely about).
    #[inline(never)]
    fn find(&self, t: u64) -> usize {
        let index = t / self.width;
        let (start, _, _) = self.last.get();
        if t >= start {
            let first = index * self.width;
            let index = usize::try_from(index).expect("a bucket index fits in usize");
            self.last
                .set((first, first.saturating_add(self.width), index));
        }
        usize::try_from(index).expect("a bucket index fits in usize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every answer is the division's, going forward, back, and across several buckets.
    #[test]
    fn the_bucket_of_an_instant_is_its_time_divided_by_the_width() {
        let width = 1_000u64;
        let buckets = Buckets::new(SimDuration::from_nanos(width));
        let times = [
            0,
            1,
            999,
            1_000,
            1_001,
            500,
            1_999,
            5_000,
            4_999,
            5_999,
            6_000,
            0,
            123_456,
            u64::MAX - 1,
            u64::MAX,
            7,
        ];
        for t in times {
            let at = SimTime::ZERO + SimDuration::from_nanos(t);
            assert_eq!(buckets.of(at), (t / width) as usize, "t = {t}");
        }
        // A width that does not divide the clock's end: the last bucket is cut short.
        let odd = Buckets::new(SimDuration::from_nanos(u64::MAX / 3 + 1));
        for t in [0, u64::MAX / 3, u64::MAX / 3 + 1, u64::MAX - 1, u64::MAX, 1] {
            let at = SimTime::ZERO + SimDuration::from_nanos(t);
            assert_eq!(odd.of(at), (t / (u64::MAX / 3 + 1)) as usize, "t = {t}");
        }
    }
}
