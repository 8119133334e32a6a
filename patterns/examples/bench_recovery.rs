//! Micro-benchmark of the recovery patterns: nanoseconds per backoff draw and per budget
//! decision, each reported as a ratio to a baseline measured in the same run (drawing one
//! uniform float from the same RNG stream; asking an unlimited budget).
//!
//! Run with `cargo run --release -p patterns --example bench_recovery`
//! (`-- --calls 200000 --rounds 1` for a quick look).
//!
//! The last line sums it up: the geometric means of the five backoff draws and of the four
//! limited budgets, each over its baseline (how many baselines one call costs, lower is
//! cheaper):
//! `backoff_ns_geomean=.. draw_ns=.. backoff_ratio=.. budget_ns_geomean=.. unlimited_ns=..
//! budget_ratio=..`.

use clap::Parser;
use patterns::backoff::{Backoff, BackoffConfig, Jitter, Strategy};
use patterns::budget::{
    AttemptResult, BudgetConfig, ConcurrencyBudgetConfig, RetryBudget, ThrottlingConfig, TpsConfig,
    WindowBudgetConfig,
};
use sim_core::sample::unit_f64;
use sim_core::{Seed, SimDuration, SimTime};
use std::hint::black_box;

/// Nanoseconds per call of the recovery patterns against their baselines.
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
    for _ in 0..args.rounds.max(1) {
        let start = std::time::Instant::now();
        for i in 0..args.calls {
            f(i);
        }
        best = best.min(start.elapsed().as_nanos() as f64 / args.calls as f64);
    }
    best
}

fn geomean(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

fn main() {
    let args = Args::parse();
    let mut rng = Seed(1).stream("bench");
    let draw_ns = time_per_call(&args, |_| {
        black_box(unit_f64(&mut rng));
    });
    let (mut backoffs, mut budgets_ns) = (Vec::new(), Vec::new());
    println!("backoff draw (baseline: one unit_f64 draw = {draw_ns:.2} ns)");
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
        let ns = time_per_call(&args, |i| {
            // Six retries per request: the schedule is restarted as a new request would.
            if i % 6 == 0 {
                backoff.reset(&mut state);
            }
            black_box(backoff.next(&mut state, &mut rng));
        });
        backoffs.push(ns);
        let name = match jitter {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::Proportional { .. } => "proportional 20%",
        };
        println!("  {name:<28} {ns:>7.2} ns  {:>5.2}x baseline", ns / draw_ns);
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
    let mut unlimited_ns = f64::NAN;
    for (name, config) in budgets {
        let mut budget = match &config {
            Some(c) => RetryBudget::new(c).unwrap(),
            None => RetryBudget::unlimited(),
        };
        let ns = time_per_call(&args, |i| {
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
        match config {
            None => unlimited_ns = ns,
            Some(_) => budgets_ns.push(ns),
        }
        println!(
            "  {name:<28} {ns:>7.2} ns  {:>5.2}x baseline",
            ns / unlimited_ns
        );
    }
    let (backoff, budget) = (geomean(&backoffs), geomean(&budgets_ns));
    println!(
        "backoff_ns_geomean={backoff:.2} draw_ns={draw_ns:.2} backoff_ratio={:.2} \
         budget_ns_geomean={budget:.2} unlimited_ns={unlimited_ns:.2} budget_ratio={:.2}",
        backoff / draw_ns,
        budget / unlimited_ns,
    );
}
