//! Micro-benchmark of the recovery patterns: nanoseconds per backoff draw and per budget
//! decision, each reported as a ratio to a baseline measured in the same run (drawing one
//! uniform float from the same RNG stream; asking an unlimited budget).
//!
//! Run with `cargo run --release -p patterns --example bench_recovery`.

use patterns::backoff::{Backoff, BackoffConfig, Jitter, Strategy};
use patterns::budget::{
    AttemptResult, BudgetConfig, ConcurrencyBudgetConfig, RetryBudget, ThrottlingConfig, TpsConfig,
    WindowBudgetConfig,
};
use sim_core::sample::unit_f64;
use sim_core::{Seed, SimDuration, SimTime};
use std::hint::black_box;

const ROUNDS: u64 = 2_000_000;

/// Nanoseconds per call of `f`, best of five runs of `ROUNDS` calls.
// A benchmark measures real elapsed time; nothing here runs inside a simulation.
#[allow(clippy::disallowed_methods)]
fn time_per_call(mut f: impl FnMut(u64)) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = std::time::Instant::now();
        for i in 0..ROUNDS {
            f(i);
        }
        best = best.min(start.elapsed().as_nanos() as f64 / ROUNDS as f64);
    }
    best
}

fn main() {
    let mut rng = Seed(1).stream("bench");
    let baseline = time_per_call(|_| {
        black_box(unit_f64(&mut rng));
    });
    println!("backoff draw (baseline: one unit_f64 draw = {baseline:.2} ns)");
    let strategy = Strategy::Exponential {
        delay_initial: SimDuration::from_millis(100),
        multiplier: 1.6,
        delay_max: SimDuration::from_secs(120),
    };
    for jitter in [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::Proportional {
            spread_percent: 20.0,
        },
    ] {
        let backoff = Backoff::new(BackoffConfig {
            strategy: strategy.clone(),
            jitter: jitter.clone(),
        })
        .unwrap();
        let mut state = backoff.start();
        let ns = time_per_call(|i| {
            // Six retries per request: the schedule is restarted as a new request would.
            if i % 6 == 0 {
                backoff.reset(&mut state);
            }
            black_box(backoff.next(&mut state, &mut rng));
        });
        let name = match jitter {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::Proportional { .. } => "proportional 20%",
        };
        println!(
            "  {name:<28} {ns:>7.2} ns  {:>5.2}x baseline",
            ns / baseline
        );
    }

    println!("budget: one request, one attempt end, one retry decision, one request end");
    let budgets = [
        ("unlimited (baseline)", None),
        (
            "throttling",
            Some(BudgetConfig::Throttling(ThrottlingConfig::default())),
        ),
        (
            "window",
            Some(BudgetConfig::Window(WindowBudgetConfig::default())),
        ),
        (
            "concurrency",
            Some(BudgetConfig::Concurrency(ConcurrencyBudgetConfig::default())),
        ),
        ("tps", Some(BudgetConfig::Tps(TpsConfig::default()))),
    ];
    let mut baseline = f64::NAN;
    for (name, config) in budgets {
        let mut budget = match &config {
            Some(c) => RetryBudget::new(c).unwrap(),
            None => RetryBudget::unlimited(),
        };
        let ns = time_per_call(|i| {
            // One request per simulated microsecond, half of its attempts failing.
            let now = SimTime::from_nanos(i * 1_000);
            budget.on_request(now);
            let result = if i % 2 == 0 {
                AttemptResult::Success
            } else {
                AttemptResult::RetryableFailure
            };
            budget.on_attempt_end(now, result, false);
            black_box(budget.try_retry(now).is_ok());
            budget.on_request_end(now);
        });
        if config.is_none() {
            baseline = ns;
        }
        println!(
            "  {name:<28} {ns:>7.2} ns  {:>5.2}x baseline",
            ns / baseline
        );
    }
}
