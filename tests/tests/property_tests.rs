//! Property tests with resim: the code of the book's tutorial of that name, which includes this
//! file's anchored parts. Two kinds: a pattern's state machine driven by generated inputs, and
//! a whole scenario run with a generated seed, load and fault timeline.

// ANCHOR: imports
use patterns::limiter::{BucketConfig, Cost, RateLimiter, TokenBucket};
use proptest::prelude::*;
use scenarios::format::schema::{Load, Schedule};
use scenarios::{RunOptions, Scenario, run};
use sim_core::{Rate, SimDuration, SimTime};
// ANCHOR_END: imports

// ANCHOR: pattern
proptest! {
    /// Whatever the arrival times, a token bucket of `burst` 10 refilling at 100/s admits at
    /// most 10 + 100·t requests in any span of t seconds.
    #[test]
    fn a_token_bucket_never_admits_more_than_burst_plus_rate_times_span(
        gaps_us in proptest::collection::vec(0u64..30_000, 1..300),
    ) {
        let config = BucketConfig { rate: Rate::per_second(100.0), burst: 10 };
        let mut bucket = TokenBucket::new(&config).unwrap();
        let mut now = SimTime::ZERO;
        let mut admitted = Vec::new();
        for gap in gaps_us {
            now += SimDuration::from_micros(gap);
            if bucket.acquire(now, Cost::ONE).allowed() {
                admitted.push(now);
            }
        }
        // Every span from one admission to a later one.
        for (i, first) in admitted.iter().enumerate() {
            for (j, last) in admitted.iter().enumerate().skip(i) {
                let count = (j - i + 1) as f64;
                let span_s = (*last - *first).as_secs_f64();
                prop_assert!(
                    count <= 10.0 + 100.0 * span_s + 1e-9,
                    "{count} admitted in {span_s}s"
                );
            }
        }
    }
}
// ANCHOR_END: pattern

// ANCHOR: scenario
/// The book's retry-budgets scenario: two clients retry through a 10-second outage, the second
/// with a budget of 10% of its requests per 1s window and at least 3 retries per window.
const RETRY_BUDGETS: &str = include_str!("../../book/src/scenarios/retry-budgets.ron");

fn retry_budgets(rate_per_s: u32, outage_at_s: u64, outage_s: u64) -> Scenario {
    let mut scenario = scenarios::format::load::parse("retry-budgets.ron", RETRY_BUDGETS).unwrap();
    for client in scenario.clients.values_mut() {
        client.load = Load::Open {
            rate: Schedule::Constant(Rate::per_second(f64::from(rate_per_s))),
        };
    }
    for fault in &mut scenario.faults {
        fault.at = SimDuration::from_secs(outage_at_s);
        fault.duration = Some(SimDuration::from_secs(outage_s));
    }
    // What the file expects holds for its own outage only.
    scenario.expectations.clear();
    scenario
}

proptest! {
    // Each case is a whole 20-second run: a few dozen cases explore seeds, loads and outages
    // without slowing the suite.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the seed, the load and the outage, the budget holds: retries are at most 10%
    /// of the calls plus 3 per window (21 windows cover a 20s run), and every request the
    /// clients offered is a success, a failure, or still in flight at the end.
    #[test]
    fn a_retry_budget_bounds_retries_whatever_the_outage(
        seed in any::<u64>(),
        rate_per_s in 20u32..400,
        outage_at_s in 0u64..15,
        outage_s in 1u64..10,
    ) {
        let scenario = retry_budgets(rate_per_s, outage_at_s, outage_s);
        let options = RunOptions { seed: Some(seed), ..RunOptions::default() };
        let report = run(&scenario, "retry-budgets.ron", &options).unwrap().report;

        let budgeted = report.calls.iter().find(|c| c.caller == "budgeted").unwrap();
        let bound = 0.1 * budgeted.counts.calls as f64 + 3.0 * 21.0;
        prop_assert!(
            budgeted.counts.retries as f64 <= bound,
            "{} retries for {} calls", budgeted.counts.retries, budgeted.counts.calls
        );
        for client in &report.clients {
            let accounted = client.successes + client.failures;
            prop_assert!(accounted <= client.offered, "{}", client.name);
        }
        let s = &report.summary;
        prop_assert_eq!(s.successes + s.failures + s.requests_in_flight, s.offered);
    }
}
// ANCHOR_END: scenario

// ANCHOR: replay
proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// A failing case is worth something only if it replays: the same scenario and seed give
    /// the same digest, so proptest's shrunk seed is a command line (`resim run FILE --seed N`).
    #[test]
    fn the_same_seed_replays_the_same_run(seed in any::<u64>(), rate_per_s in 20u32..400) {
        let scenario = retry_budgets(rate_per_s, 5, 10);
        let options = RunOptions { seed: Some(seed), ..RunOptions::default() };
        let first = run(&scenario, "retry-budgets.ron", &options).unwrap().report;
        let again = run(&scenario, "retry-budgets.ron", &options).unwrap().report;
        prop_assert_eq!(first.digest, again.digest);
    }
}
// ANCHOR_END: replay
