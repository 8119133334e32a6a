//! Micro-benchmark of the admission patterns: nanoseconds per decision for each rate limiter
//! and each circuit-breaker path, as a ratio to baselines measured in the same run: a bare
//! counter compared with a limit (the cheapest possible "limiter"), and the naive reference
//! the property tests use (a list of admitted timestamps, scanned per decision).
//!
//! Run with `cargo run --release -p patterns --example bench_admission`
//! (`-- --calls 200000 --rounds 1` for a quick look).
//!
//! Each limiter sees one request per 10µs of virtual time (100 000/s) against a limit of 100 per
//! 10ms (10 000/s), so about nine requests in ten are refused: both paths are exercised.
//!
//! The last line sums it up: the geometric mean of the patterns' nanoseconds per decision,
//! the two baselines, and `ratio`, that mean over the counter's time (how many bare counters
//! one decision costs, lower is cheaper), with the slowest pattern:
//! `patterns=.. ns_per_decision_geomean=.. counter_ns=.. naive_ns=.. ratio=.. ratio_naive=..
//! slowest=.. slowest_ns=..`.

use clap::Parser;
use patterns::breaker::{Breaker, BreakerConfig, BreakerDecision, SlidingWindowType};
use patterns::limiter::{
    BucketConfig, CompositeConfig, Cost, Keyed, KeyedConfig, LeakyQueueConfig, Limiter,
    LimiterConfig, RateLimiter, WindowConfig,
};
use sim_core::{Rate, SimDuration, SimTime};
use std::collections::VecDeque;
use std::hint::black_box;

const STEP_NANOS: u64 = 10_000;

/// Nanoseconds per decision of the admission patterns against two baselines.
#[derive(Parser)]
struct Args {
    /// Calls per timed run.
    #[arg(long, default_value_t = 2_000_000)]
    calls: u64,
    /// Timed runs of each (the best is kept).
    #[arg(long, default_value_t = 5)]
    rounds: u64,
}

/// Nanoseconds per call of `f`, best of `args.rounds` runs of `args.calls` calls.
// A benchmark measures real elapsed time; nothing here runs inside a simulation.
#[allow(clippy::disallowed_methods)]
fn time_per_call(args: &Args, mut f: impl FnMut(u64)) -> f64 {
    let mut best = f64::INFINITY;
    for run in 0..args.rounds.max(1) {
        let start = std::time::Instant::now();
        for i in 0..args.calls {
            f(run * args.calls + i);
        }
        best = best.min(start.elapsed().as_nanos() as f64 / args.calls as f64);
    }
    best
}

fn at(i: u64) -> SimTime {
    SimTime::from_nanos(i * STEP_NANOS)
}

/// Prints one pattern's line and keeps its time for the summary.
fn report(results: &mut Vec<(String, f64)>, name: &str, ns: f64, counter: f64, naive: f64) {
    results.push((name.to_string(), ns));
    println!(
        "{name:<34} {ns:>8.2} ns   {:>7.1}x counter   {:>6.3}x naive",
        ns / counter,
        ns / naive
    );
}

fn main() {
    let args = Args::parse();
    let mut results = Vec::new();
    let window = WindowConfig {
        limit: 100,
        window: SimDuration::from_millis(10),
    };
    let bucket = BucketConfig {
        rate: Rate::per_second(10_000.0),
        burst: 100,
    };

    // Baseline 1: a counter compared with a limit, reset each window.
    let mut count = 0u64;
    let mut window_index = 0u64;
    let counter = time_per_call(&args, |i| {
        let w = at(i).as_nanos() / 10_000_000;
        if w != window_index {
            window_index = w;
            count = 0;
        }
        let admit = count < 100;
        count += u64::from(admit);
        black_box(admit);
    });
    // Baseline 2: the naive reference of the property tests, a list of admitted timestamps
    // (trimmed to the window, else it would be quadratic rather than merely naive).
    let mut log: VecDeque<u64> = VecDeque::new();
    let naive = time_per_call(&args, |i| {
        let now = at(i).as_nanos();
        let live = log.iter().filter(|&&t| t + 10_000_000 > now).count();
        while log.front().is_some_and(|&t| t + 10_000_000 <= now) {
            log.pop_front();
        }
        let admit = live < 100;
        if admit {
            log.push_back(now);
        }
        black_box(admit);
    });
    println!("baselines: counter {counter:.2} ns, naive timestamp list {naive:.2} ns per decision");
    println!("rate limiters (acquire, cost 1):");
    let configs = [
        (
            "fixed_window",
            LimiterConfig::FixedWindow(window.clone().into()),
        ),
        ("sliding_log", LimiterConfig::SlidingLog(window.clone())),
        (
            "sliding_counter",
            LimiterConfig::SlidingCounter(window.clone()),
        ),
        ("token_bucket", LimiterConfig::TokenBucket(bucket.clone())),
        ("leaky_meter", LimiterConfig::LeakyMeter(bucket.clone())),
        (
            "leaky_queue",
            LimiterConfig::LeakyQueue(LeakyQueueConfig {
                rate: bucket.rate,
                queue_capacity: 100,
            }),
        ),
        ("gcra", LimiterConfig::Gcra(bucket.clone())),
    ];
    for (name, config) in &configs {
        let mut limiter = Limiter::new(config).unwrap();
        let ns = time_per_call(&args, |i| {
            black_box(limiter.acquire(at(i), Cost::ONE));
        });
        report(&mut results, name, ns, counter, naive);
    }
    let mut composite = patterns::limiter::Composite::new(&CompositeConfig {
        layers: vec![
            LimiterConfig::TokenBucket(bucket.clone()),
            LimiterConfig::SlidingCounter(window.clone()),
        ],
    })
    .unwrap();
    let ns = time_per_call(&args, |i| {
        black_box(composite.acquire(at(i), Cost::ONE));
    });
    report(
        &mut results,
        "composite(token_bucket+counter)",
        ns,
        counter,
        naive,
    );
    let mut keyed: Keyed<u32> = Keyed::new(&KeyedConfig {
        limiter: LimiterConfig::TokenBucket(bucket.clone()),
        max_keys: 10_000,
        ..KeyedConfig::default()
    })
    .unwrap();
    let ns = time_per_call(&args, |i| {
        black_box(keyed.acquire(at(i), &((i % 1000) as u32), Cost::ONE));
    });
    report(
        &mut results,
        "keyed token_bucket (1000 keys)",
        ns,
        counter,
        naive,
    );

    println!("circuit breakers (try_acquire + report):");
    let closed = |window_type| BreakerConfig {
        sliding_window_type: window_type,
        failure_rate_threshold: 100.0,
        ..BreakerConfig::default()
    };
    for (name, config) in [
        (
            "breaker count_based, closed",
            closed(SlidingWindowType::CountBased),
        ),
        (
            "breaker time_based, closed",
            closed(SlidingWindowType::TimeBased),
        ),
        (
            "breaker consecutive, closed",
            BreakerConfig::consecutive_failures(1_000),
        ),
    ] {
        let mut breaker = Breaker::new(&config).unwrap();
        let ns = time_per_call(&args, |i| {
            if let BreakerDecision::Admit(p) = breaker.try_acquire(at(i)) {
                // One failure in ten: recorded, never enough to trip.
                if i % 10 == 0 {
                    breaker.on_failure(at(i), p);
                } else {
                    breaker.on_success(at(i), p);
                }
            }
        });
        report(&mut results, name, ns, counter, naive);
    }
    let mut open = Breaker::new(&BreakerConfig {
        wait_duration_in_open_state: SimDuration::from_secs(1_000_000),
        wait_duration_in_open_state_max: SimDuration::from_secs(1_000_000),
        ..BreakerConfig::consecutive_failures(1)
    })
    .unwrap();
    if let BreakerDecision::Admit(p) = open.try_acquire(SimTime::ZERO) {
        open.on_failure(SimTime::ZERO, p);
    }
    let ns = time_per_call(&args, |i| {
        black_box(open.try_acquire(at(i)));
    });
    report(&mut results, "breaker open, reject", ns, counter, naive);

    let geomean = (results.iter().map(|(_, ns)| ns.ln()).sum::<f64>() / results.len() as f64).exp();
    let (slowest, slowest_ns) = results
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("patterns were timed");
    println!(
        "patterns={} ns_per_decision_geomean={geomean:.2} counter_ns={counter:.2} naive_ns={naive:.2} \
         ratio={:.2} ratio_naive={:.3} slowest={} slowest_ns={slowest_ns:.2}",
        results.len(),
        geomean / counter,
        geomean / naive,
        slowest.replace(' ', "_"),
    );
}
