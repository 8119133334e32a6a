//! The radix heap's index: which bucket a pending time belongs in, and which buckets hold
//! anything. [`crate::queue::EventQueue`] is built on it, and so are the radix designs of the
//! `queue_compare` example, so that they are compared on the same indexing.
//!
//! A time is read as sixteen hexadecimal digits. An entry whose time differs from `last`
//! (the time of the last event taken) first in digit `p`, where it has the value `v` (above
//! `last`'s, since the time is later), is in bucket `16 p + v`: 256 buckets. Buckets in
//! increasing order hold increasing times, so the lowest occupied bucket holds the earliest
//! entries. When that bucket is emptied its smallest time becomes `last`, and each of its
//! entries now differs from `last` first in a lower digit: an entry moves down at most
//! sixteen times in its life. The textbook radix heap has a bucket per bit instead, whose
//! range is as wide as those of all the buckets below it together; its entries moved down
//! about eight times each in a hold model of 100,000 events, and every move is a load and a
//! store of the entry (ARCHITECTURE.md, "The event queue").

/// The bits of a digit.
pub const DIGIT_BITS: u32 = 4;

/// One bucket per digit position and value: `16 * position + value`.
pub const BUCKETS: usize = (64 / DIGIT_BITS as usize) << DIGIT_BITS;

/// The words of the occupancy bitmap, one bit a bucket.
const WORDS: usize = BUCKETS / 64;

/// The bucket of an entry at `time` when the last event taken was at `last` (`time > last`):
/// the highest digit in which they differ, and `time`'s value there.
#[inline]
pub fn bucket_of(time: u64, last: u64) -> usize {
    debug_assert!(time > last, "a bucket is for a time after `last`");
    // The digit's lowest bit: the highest differing bit, rounded down to a digit boundary.
    let shift = (time ^ last).ilog2() & !(DIGIT_BITS - 1);
    let value = (time >> shift) & ((1 << DIGIT_BITS) - 1);
    (((shift / DIGIT_BITS) << DIGIT_BITS) | value as u32) as usize
}

/// Which buckets hold entries: one bit a bucket. (`% WORDS` tells the compiler what
/// [`bucket_of`] guarantees, so that no bounds check is left.)
#[derive(Clone, Copy, Debug, Default)]
pub struct Occupancy([u64; WORDS]);

impl Occupancy {
    /// Marks bucket `b` as holding entries.
    #[inline(always)]
    pub fn set(&mut self, b: usize) {
        self.0[b / 64 % WORDS] |= 1 << (b % 64);
    }

    /// Marks bucket `b` as empty.
    #[inline(always)]
    pub fn clear(&mut self, b: usize) {
        self.0[b / 64 % WORDS] &= !(1 << (b % 64));
    }

    /// Whether bucket `b` holds entries.
    #[inline(always)]
    pub fn has(&self, b: usize) -> bool {
        self.0[b / 64 % WORDS] & (1 << (b % 64)) != 0
    }

    /// The lowest occupied bucket, if any.
    #[inline(always)]
    pub fn lowest(&self) -> Option<usize> {
        let [a, b, c, d] = self.0;
        let (w, word) = if a != 0 {
            (0, a)
        } else if b != 0 {
            (64, b)
        } else if c != 0 {
            (128, c)
        } else if d != 0 {
            (192, d)
        } else {
            return None;
        };
        Some(w + word.trailing_zeros() as usize)
    }

    /// Marks the buckets below `b` as empty.
    pub fn clear_below(&mut self, b: usize) {
        for (w, word) in self.0.iter_mut().enumerate() {
            let start = w * 64;
            if b >= start + 64 {
                *word = 0;
            } else if b > start {
                *word &= u64::MAX << (b - start);
            }
        }
    }

    /// Adds the buckets `other` marks.
    #[inline(always)]
    pub fn union(&mut self, other: Occupancy) {
        for (word, o) in self.0.iter_mut().zip(other.0) {
            *word |= o;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_time_is_never_in_an_earlier_bucket() {
        // What the queue relies on: the lowest occupied bucket holds the earliest events.
        // Times after `last` anywhere from the lowest digit to the highest, in pairs.
        let mut rng = crate::Seed(7).stream("digits");
        let wide = |rng: &mut crate::RngStream| {
            let bits = rng.next_u32() % 64;
            rng.next_u64() >> (63 - bits)
        };
        for _ in 0..200_000 {
            let last = wide(&mut rng) >> 1;
            let (a, b) = (wide(&mut rng), wide(&mut rng));
            let (early, late) = (last + 1 + a.min(b) / 2, last + 1 + a.max(b) / 2);
            let (be, bl) = (bucket_of(early, last), bucket_of(late, last));
            assert!(
                be <= bl,
                "{early} in bucket {be}, {late} in {bl}, after {last}"
            );
            // The bucket names the first digit that differs, where the time is the larger.
            let mask = (1 << DIGIT_BITS) - 1;
            let (digit, value) = (be as u32 >> DIGIT_BITS, be as u64 & mask);
            let shift = digit * DIGIT_BITS;
            assert_eq!((early ^ last) >> shift >> DIGIT_BITS, 0);
            assert!(value == (early >> shift) & mask && value > (last >> shift) & mask);
        }
    }

    #[test]
    fn occupancy_finds_the_lowest_bucket_in_every_word() {
        let mut o = Occupancy::default();
        assert_eq!(o.lowest(), None);
        for b in [255, 200, 130, 64, 63, 5] {
            o.set(b);
            assert_eq!(o.lowest(), Some(b));
            assert!(o.has(b));
        }
        o.clear_below(64);
        assert_eq!(o.lowest(), Some(64));
        o.clear(64);
        o.clear(130);
        assert_eq!(o.lowest(), Some(200));
        let mut other = Occupancy::default();
        other.set(7);
        o.union(other);
        assert_eq!(o.lowest(), Some(7));
        o.clear_below(BUCKETS);
        assert_eq!(o.lowest(), None);
    }
}
