//! The engine/bare ratio for M/M/1, measured in one run: `mm1` (the engine) and `bare_mm1`
//! (std `BinaryHeap`, ChaCha8, no framework) in alternating rounds, medians compared.
//!
//! `cargo run --release -p sim-core --example bench_mm1 -- --customers 5000000`

use clap::Parser;
use sim_core::queueing::{MmcParams, run_mmc};

#[path = "bare_mm1.rs"]
#[allow(dead_code)]
mod bare;

/// M/M/1 engine against the bare baseline.
#[derive(Parser)]
struct Args {
    /// Customers per round.
    #[arg(long, default_value_t = 5_000_000)]
    customers: u64,
    /// Rounds of each (the median is reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

// Timing the rounds is the point of this benchmark; the simulation never reads the clock.
#[allow(clippy::disallowed_methods)]
fn main() {
    let args = Args::parse();
    let mut engine_rates = Vec::new();
    let mut bare_rates = Vec::new();
    for round in 0..args.rounds {
        let started = std::time::Instant::now();
        let engine = run_mmc(MmcParams::mm1(args.customers, args.seed));
        let engine_rate = engine.events as f64 / started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let bare = bare::run(args.customers, args.seed, 0.9, 1.0);
        let bare_rate = bare.events as f64 / started.elapsed().as_secs_f64();
        // The two programs draw the same numbers in the same order: same work, same answer.
        assert_eq!(engine.events, bare.events);
        assert_eq!(engine.mean_wait_secs, bare.mean_wait_secs);
        println!(
            "round={round} events={} engine_events_per_sec={engine_rate:.0} bare_events_per_sec={bare_rate:.0}",
            engine.events
        );
        engine_rates.push(engine_rate);
        bare_rates.push(bare_rate);
    }
    let (e, b) = (median(engine_rates), median(bare_rates));
    println!(
        "customers={} engine_events_per_sec={e:.0} bare_events_per_sec={b:.0} ratio={:.2}",
        args.customers,
        e / b
    );
}
