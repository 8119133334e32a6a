//! The run digest: a 64-bit [`Digest`] folded over every executed event.
//!
//! Each event contributes four words: its time in nanoseconds, its sequence number, its target
//! and its kind (a number the model gives each message). Models may fold in further words
//! where an outcome is not itself an event (a message dropped by the network, say). Equal
//! digests mean, with overwhelming probability, equal histories; the fold uses only integer
//! operations, so the digest is the same on every platform and in debug and release builds.

use core::fmt;

/// A running 64-bit hash of a run's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Digest(u64);

/// Multiplier of the fold (the 64-bit golden ratio, odd).
const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Default for Digest {
    fn default() -> Self {
        Digest::new()
    }
}

impl Digest {
    /// The digest of an empty history.
    pub const fn new() -> Self {
        Digest(0x2545_f491_4f6c_dd1d)
    }

    /// Folds one word into the digest.
    #[inline]
    pub fn mix(&mut self, word: u64) {
        // One multiply and one rotate per word: cheap enough for the hot path, and the
        // multiply spreads every input bit over the high half, which the rotate feeds back.
        self.0 = (self.0 ^ word).wrapping_mul(K).rotate_left(29);
    }

    /// Folds one executed event into the digest.
    #[inline]
    pub fn event(&mut self, time: u64, seq: u64, target: u64, kind: u64) {
        self.mix(time);
        self.mix(seq);
        self.mix(target);
        self.mix(kind);
    }

    /// The digest value, passed through a final avalanche so close histories look unrelated.
    pub fn value(&self) -> u64 {
        crate::rng::splitmix64(self.0)
    }
}

impl fmt::Display for Digest {
    /// Sixteen lowercase hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_content_both_matter() {
        let digest = |events: &[(u64, u64, u64, u64)]| {
            let mut d = Digest::new();
            for &(t, s, g, k) in events {
                d.event(t, s, g, k);
            }
            d.value()
        };
        let a = digest(&[(1, 0, 1, 1), (2, 1, 1, 2)]);
        assert_eq!(a, digest(&[(1, 0, 1, 1), (2, 1, 1, 2)]));
        assert_ne!(a, digest(&[(2, 1, 1, 2), (1, 0, 1, 1)]));
        assert_ne!(a, digest(&[(1, 0, 1, 1), (2, 1, 1, 3)]));
        assert_ne!(a, digest(&[(1, 0, 1, 1), (3, 1, 1, 2)]));
        assert_ne!(digest(&[]), a);
    }

    #[test]
    fn value_is_pinned() {
        let mut d = Digest::new();
        d.event(1_000, 0, 1, 7);
        assert_eq!(d.to_string(), format!("{:016x}", d.value()));
        insta::assert_snapshot!("digest__one_event", d.to_string());
    }
}
