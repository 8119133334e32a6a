//! Benchmark: how speed and memory scale with the size of a world. For a grid of client
//! counts × service counts, it runs a generated scenario (each client an open-loop source at
//! 1 request per second calling one of the services, round robin; each service one replica of
//! 4 workers with exponential 10ms work) for 60 simulated seconds, and prints the events per
//! wall-clock second and the peak heap bytes of the run, in total and per component (clients
//! plus replicas).
//!
//! `cargo run --release -p scenarios --example bench_scale`
//! `cargo run --release -p scenarios --example bench_scale -- --clients 10,1000 --services 1,100`
//!
//! Peak bytes are measured by a counting allocator around the system one (`peak_alloc`): the
//! largest number of bytes allocated at once between the start of the run (parsing and
//! validation included) and its report, less what was allocated before it.
//!
//! The last line holds the world with the most components against the target of 20 KB
//! (20,000 bytes) of peak heap per component, `ratio` being bytes per component / target
//! (at most 1.0 meets it); the figure is deterministic, so one run is enough:
//! `clients=.. services=.. bytes_per_component=.. target_bytes_per_component=20000 ratio=..`.

use clap::Parser;
use peak_alloc::PeakAlloc;
use scenarios::format::load::parse;
use scenarios::{RunOptions, run};

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// Peak heap bytes per component (client or replica) a world should stay under.
const TARGET_BYTES_PER_COMPONENT: usize = 20_000;

/// Speed and memory over a grid of world sizes.
#[derive(Parser)]
struct Args {
    /// Client counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,1000,10000")]
    clients: Vec<usize>,
    /// Service counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    services: Vec<usize>,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
}

fn scenario(clients: usize, services: usize, seconds: u64) -> String {
    let mut text = format!("Scenario(name: \"scale\", duration: \"{seconds}s\", clients: {{");
    for c in 0..clients {
        let target = c % services;
        text.push_str(&format!(
            "\"c{c}\": (load: Open(rate: Constant(\"1/s\")), call: (target: \"s{target}\", timeout: \"1s\")),"
        ));
    }
    text.push_str("}, services: {");
    for s in 0..services {
        text.push_str(&format!(
            "\"s{s}\": (workers: 4, work: Exponential(mean: \"10ms\")),"
        ));
    }
    text.push_str("})");
    text
}

// Timing the runs is the point of a benchmark; the simulations never read the wall clock.
#[allow(clippy::disallowed_methods)]
fn main() {
    let args = Args::parse();
    // (components, clients, services, bytes per component) of the largest world so far.
    let mut largest: Option<(usize, usize, usize, usize)> = None;
    for &clients in &args.clients {
        for &services in &args.services {
            let text = scenario(clients, services, args.seconds);
            ALLOCATOR.reset_peak_usage();
            let before = ALLOCATOR.current_usage();
            let started = std::time::Instant::now();
            let parsed = parse("scale.ron", &text).expect("the generated scenario is valid");
            let out = run(&parsed, "scale.ron", &RunOptions::default()).expect("it runs");
            let secs = started.elapsed().as_secs_f64();
            let peak = ALLOCATOR.peak_usage() - before;
            let components = clients + services;
            println!(
                "clients={clients:>6} services={services:>5} events={:>9} events_per_sec={:>10.0} peak_mb={:>8.1} bytes_per_component={:>8}",
                out.report.events,
                out.report.events as f64 / secs,
                peak as f64 / 1e6,
                peak / components,
            );
            drop(out);
            if largest.is_none_or(|(most, ..)| components >= most) {
                largest = Some((components, clients, services, peak / components));
            }
        }
    }
    if let Some((_, clients, services, bytes)) = largest {
        println!(
            "clients={clients} services={services} bytes_per_component={bytes} \
             target_bytes_per_component={TARGET_BYTES_PER_COMPONENT} ratio={:.2}",
            bytes as f64 / TARGET_BYTES_PER_COMPONENT as f64
        );
    }
}
