//! M/M/1 on the engine: Poisson arrivals, exponential service, one server, FIFO.
//!
//! `cargo run --release -p sim-core --example mm1 -- --customers 5000000 --seed 1`
//!
//! The last line is the contract shared with `bare_mm1` (the baseline without the engine),
//! so the two can be compared in one run:
//! `events=<n> secs=<wall seconds> events_per_sec=<rate> mean_wait_s=<mean time in queue> digest=<hex>`

use clap::Parser;
use sim_core::queueing::{MmcParams, run_mmc};

/// M/M/1 on the resim engine.
#[derive(Parser)]
struct Args {
    /// Customers to serve.
    #[arg(long, default_value_t = 1_000_000)]
    customers: u64,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Arrival rate λ per second.
    #[arg(long, default_value_t = 0.9)]
    lambda: f64,
    /// Service rate μ per second.
    #[arg(long, default_value_t = 1.0)]
    mu: f64,
}

// Timing the run is the point of this example; the simulation itself never reads the clock.
#[allow(clippy::disallowed_methods)]
fn main() {
    let args = Args::parse();
    let params = MmcParams {
        servers: 1,
        arrival_rate: args.lambda,
        service_rate: args.mu,
        customers: args.customers,
        seed: args.seed,
    };
    let started = std::time::Instant::now();
    let report = run_mmc(params);
    let secs = started.elapsed().as_secs_f64();
    println!(
        "theory_mean_wait_s={:.6} measured={:.6} standard_error={:.6} queue_length_max={} stop_reason={}",
        params.theory_mean_wait(),
        report.mean_wait_secs,
        report.mean_wait_standard_error,
        report.queue_length_max,
        report.stop_reason
    );
    println!(
        "events={} secs={:.3} events_per_sec={:.0} mean_wait_s={:.6} digest={}",
        report.events,
        secs,
        report.events as f64 / secs,
        report.mean_wait_secs,
        report.digest
    );
}
