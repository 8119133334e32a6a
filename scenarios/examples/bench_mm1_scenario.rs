//! Benchmark: M/M/1 written as a scenario file (`examples/mm1.ron`), run by the whole resim
//! world (client, balancer, replica, queue, reply), against sim-core's bare M/M/1 loop
//! (`sim-core/examples/bare_mm1.rs`: a binary heap, the same ChaCha streams, nothing else),
//! in alternating rounds of the same process. It reports simulated requests per wall-clock
//! second for both and their ratio, and the events per second of each.
//!
//! `cargo run --release -p scenarios --example bench_mm1_scenario -- --customers 2000000`
//!
//! The scenario run does more work per request than the bare loop (four events instead of
//! two: arrival, delivery, end of work, reply; plus the report's histograms and series), so
//! the ratio is the price of the world's generality, not only of the engine.

use clap::Parser;
use scenarios::format::load::parse;
use scenarios::{RunOptions, run};
use sim_core::SimDuration;

#[path = "../../sim-core/examples/bare_mm1.rs"]
#[allow(dead_code, missing_docs)]
mod bare;

/// M/M/1 as a scenario against the bare loop.
#[derive(Parser)]
struct Args {
    /// Customers (requests) per round, about.
    #[arg(long, default_value_t = 2_000_000)]
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

// Timing the rounds is the point of a benchmark; the simulations themselves never read the
// wall clock.
#[allow(clippy::disallowed_methods)]
fn main() {
    let args = Args::parse();
    let scenario = parse("examples/mm1.ron", include_str!("mm1.ron")).expect("mm1.ron is valid");
    // λ = 0.9/s: the run lasts customers / λ simulated seconds.
    let duration = SimDuration::from_secs_f64(args.customers as f64 / 0.9);
    let options = RunOptions {
        seed: Some(args.seed),
        duration: Some(duration),
        bucket: Some(duration),
        max_events: None,
        trace_capacity: 0,
        trace_window: None,
        follow_request: None,
        follow_requests: Vec::new(),
        failed_examples: false,
        branches: Vec::new(),
        series: scenarios::Series::All,
        sample_requests: None,
        cancel: None,
    };
    let (mut scenario_rates, mut bare_rates) = (Vec::new(), Vec::new());
    let (mut scenario_events, mut bare_events) = (Vec::new(), Vec::new());
    for round in 0..args.rounds {
        let started = std::time::Instant::now();
        let out = run(&scenario, "examples/mm1.ron", &options).expect("the run is valid");
        let secs = started.elapsed().as_secs_f64();
        let requests = out.report.summary.successes as f64;
        scenario_rates.push(requests / secs);
        scenario_events.push(out.report.events as f64 / secs);

        let started = std::time::Instant::now();
        let b = bare::run(args.customers, args.seed, 0.9, 1.0);
        let bare_secs = started.elapsed().as_secs_f64();
        // Each bare customer is two events: its arrival and its departure.
        bare_rates.push((b.events / 2) as f64 / bare_secs);
        bare_events.push(b.events as f64 / bare_secs);
        println!(
            "round={round} scenario_requests={requests} scenario_secs={secs:.3} scenario_events={} \
             bare_customers={} bare_secs={bare_secs:.3} p50_ms={:.0}",
            out.report.events,
            b.events / 2,
            out.report.summary.latency_ms.map_or(0.0, |l| l.p50),
        );
    }
    let (s, b) = (median(scenario_rates), median(bare_rates));
    println!(
        "customers={} scenario_requests_per_sec={s:.0} bare_requests_per_sec={b:.0} ratio={:.3} \
         scenario_events_per_sec={:.0} bare_events_per_sec={:.0}",
        args.customers,
        s / b,
        median(scenario_events),
        median(bare_events),
    );
}
