//! M/M/c on the engine, compared with Erlang C.
//!
//! `cargo run --release -p sim-core --example mm_c -- --servers 4 --lambda 3.2 --customers 2000000`

use clap::Parser;
use sim_core::queueing::{MmcParams, erlang_c, run_mmc};

/// M/M/c on the resim engine.
#[derive(Parser)]
struct Args {
    /// Number of servers c.
    #[arg(long, default_value_t = 4)]
    servers: u32,
    /// Customers to serve.
    #[arg(long, default_value_t = 1_000_000)]
    customers: u64,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Arrival rate λ per second.
    #[arg(long, default_value_t = 3.2)]
    lambda: f64,
    /// Service rate μ per second per server.
    #[arg(long, default_value_t = 1.0)]
    mu: f64,
}

// Timing the run is the point of this example; the simulation itself never reads the clock.
#[allow(clippy::disallowed_methods)]
fn main() {
    let args = Args::parse();
    let params = MmcParams {
        servers: args.servers,
        arrival_rate: args.lambda,
        service_rate: args.mu,
        customers: args.customers,
        seed: args.seed,
    };
    let started = std::time::Instant::now();
    let report = run_mmc(params);
    let secs = started.elapsed().as_secs_f64();
    let theory = params.theory_mean_wait();
    println!(
        "c={} rho={:.3} erlang_c={:.6} theory_mean_wait_s={:.6} measured={:.6} error_percent={:+.2} standard_error={:.6}",
        args.servers,
        args.lambda / (f64::from(args.servers) * args.mu),
        erlang_c(args.servers, args.lambda / args.mu),
        theory,
        report.mean_wait_secs,
        (report.mean_wait_secs / theory - 1.0) * 100.0,
        report.mean_wait_standard_error
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
