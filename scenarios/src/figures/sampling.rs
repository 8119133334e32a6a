//! Which client requests a run writes as traces (`resim run --spans-sample RATIO`), and the
//! ids of their traces and spans: all of them functions of the seed and the request's own ids,
//! never draws from the simulation's streams, so writing spans cannot change a run and the
//! same file and seed give the same ids.
//!
//! # Decisions
//!
//! A request is kept by its trace id, as OpenTelemetry's consistent probability sampling
//! keeps a trace: the trace id's lowest 56 bits `R` are compared with the rejection threshold
//! `T = (1 - ratio) * 2^56`, and the trace is kept when `R >= T`. A tool that samples again
//! downstream by the same rule keeps a subset of what resim wrote, and a ratio of 0.1 keeps
//! the requests a ratio of 0.2 keeps, and half as many. The ids are a SplitMix64 mix of the
//! seed and the ids (Steele, Lea and Flood 2014): every bit of the input moves about half of
//! the output's, which is what a trace id's "random" bits need, at a few instructions each.

/// The SplitMix64 finalizer: a bijection on 64 bits with full avalanche.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `words` folded into one mixed word, after `salt` (so two uses of the same ids differ).
fn hash(salt: u64, words: &[u64]) -> u64 {
    words
        .iter()
        .fold(mix(salt ^ 0x9e37_79b9_7f4a_7c15), |h, &w| mix(h ^ mix(w)))
}

/// The trace id of client request `request` in a run of `seed` (never zero, as W3C
/// trace context requires).
pub fn trace_id(seed: u64, request: u64) -> u128 {
    let high = hash(1, &[seed, request]);
    let low = hash(2, &[seed, request]);
    let id = (u128::from(high) << 64) | u128::from(low);
    id.max(1)
}

/// What a span stands for, in its id: a call, one of its attempts at its caller, or the
/// attempt's job at its replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanRole {
    /// The logical call, with its retries.
    Call,
    /// One attempt, as its caller saw it.
    Attempt,
    /// One attempt, as its replica served it.
    Job,
}

/// The span id of `role` for attempt `attempt` of call `call` of request `request` (attempt
/// 0 for a call's own span), never zero.
pub fn span_id(seed: u64, request: u64, call: u64, attempt: u32, role: SpanRole) -> u64 {
    let role = match role {
        SpanRole::Call => 3,
        SpanRole::Attempt => 4,
        SpanRole::Job => 5,
    };
    hash(role, &[seed, request, call, u64::from(attempt)]).max(1)
}

/// Which requests are written: those whose trace id passes the threshold of a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    seed: u64,
    /// Requests whose trace id's lowest 56 bits are at least this are kept.
    threshold: u64,
}

/// The 56 bits of a trace id that sampling reads.
const RANDOM_BITS: u32 = 56;

impl Sampling {
    /// Keeps about `ratio` of the requests of a run of `seed`; `ratio` is in [0, 1].
    pub fn new(seed: u64, ratio: f64) -> Sampling {
        assert!(
            (0.0..=1.0).contains(&ratio),
            "the command line checks the ratio, got {ratio}"
        );
        let span = (1u64 << RANDOM_BITS) as f64;
        // An exact product and a rounding: the same threshold on any machine.
        let threshold = ((1.0 - ratio) * span).round() as u64;
        Sampling { seed, threshold }
    }

    /// Whether request `request` is written.
    pub fn keeps(&self, request: u64) -> bool {
        let r = trace_id(self.seed, request) as u64 & ((1u64 << RANDOM_BITS) - 1);
        r >= self.threshold
    }

    /// The run's seed, which the ids are made from.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_keep_nested_sets_of_about_their_share() {
        let (all, tenth, fifth) = (
            Sampling::new(7, 1.0),
            Sampling::new(7, 0.1),
            Sampling::new(7, 0.2),
        );
        let n = 100_000u64;
        let kept = |s: &Sampling| (1..=n).filter(|&r| s.keeps(r)).count() as f64;
        assert_eq!(kept(&all), n as f64);
        assert_eq!(
            (1..=n).filter(|&r| Sampling::new(7, 0.0).keeps(r)).count(),
            0
        );
        // Binomial(100000, 0.1): sd 95, so 5 sd is about 475.
        assert!((kept(&tenth) - 10_000.0).abs() < 475.0, "{}", kept(&tenth));
        assert!((1..=n).all(|r| !tenth.keeps(r) || fifth.keeps(r)));
    }

    #[test]
    fn ids_depend_on_every_input() {
        let id = span_id(1, 2, 3, 1, SpanRole::Attempt);
        assert_ne!(id, span_id(1, 2, 3, 1, SpanRole::Job));
        assert_ne!(id, span_id(1, 2, 3, 2, SpanRole::Attempt));
        assert_ne!(id, span_id(2, 2, 3, 1, SpanRole::Attempt));
        assert_ne!(trace_id(1, 2), trace_id(1, 3));
        assert_eq!(trace_id(1, 2), trace_id(1, 2));
    }
}
