//! Benchmark: a mesh of the size real systems have (issue 38), checked and run. It generates
//! a mesh of `--services` routing services with `--calls` routes each (see `mesh/generate.rs`:
//! layers, so no route makes a cycle; a timeout, a retry and a breaker on each route), then:
//!
//! - checks it (`resim check`: reading and validation) and builds it (a run of 1ms, so
//!   that what is timed is the world's building and its report, not traffic), alternating
//!   rounds with the baseline, the same mesh of 10 services, and compares the time per
//!   service of the two: a cost linear in the services and routes gives a ratio near 1;
//! - runs it for `--seconds` simulated seconds at `--rate` requests per second in all, and
//!   prints the events, the wall-clock time and the peak heap (parsing and validation
//!   included, as `bench_scale` measures it, by `peak_alloc`).
//!
//! With `--costs`, it prints instead what one more service, call and layer costs: the peak
//! heap of checking a mesh (reading and validation) and of a 10s run of it, and the memory
//! the validation's estimate (`format::footprint`) gives it, each as the difference between
//! two meshes that differ in that one count, per unit.
//!
//! `cargo run --release -p scenarios --example bench_mesh`
//! `cargo run --release -p scenarios --example bench_mesh -- --services 200 --rounds 1`
//! `cargo run --release -p scenarios --example bench_mesh -- --costs`
//!
//! The last line: `services=.. calls=.. check_secs=.. build_secs=.. run_secs=.. events=..
//! peak_mb=.. us_per_service=.. baseline_us_per_service=.. ratio=..`, the ratio being the
//! mesh's time per service (check and build, medians over the rounds) over the baseline's.

use clap::Parser;
use peak_alloc::PeakAlloc;
use scenarios::format::load::parse;
use scenarios::{RunOptions, run};
use std::time::Instant;

#[path = "mesh/generate.rs"]
mod generate;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// The baseline's services.
const BASELINE_SERVICES: usize = 10;

/// A mesh's check and build time against a small one's, per service, and its short run.
#[derive(Parser)]
struct Args {
    /// Routing services of the mesh.
    #[arg(long, default_value_t = 1000)]
    services: usize,
    /// Routes (calls) of each service.
    #[arg(long, default_value_t = 20)]
    calls: usize,
    /// Layers of each route's stack (a retry, a breaker, then bulkheads).
    #[arg(long, default_value_t = 2)]
    layers: usize,
    /// Requests per second, in all, of the run.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Simulated seconds of the run.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Rounds of mesh and baseline, alternating.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Print the memory one more service, call and layer costs, and nothing else.
    #[arg(long)]
    costs: bool,
}

/// Peak heap bytes of checking `text`, of checking and running it, and the footprint the
/// validation estimates for it.
fn memory(text: &str) -> (usize, usize, u64) {
    ALLOCATOR.reset_peak_usage();
    let before = ALLOCATOR.current_usage();
    let scenario = parse("mesh.ron", text).expect("the generated mesh is valid");
    let checked = ALLOCATOR.peak_usage() - before;
    let estimate = scenarios::format::footprint::footprint(&scenario)
        .iter()
        .map(|p| p.bytes)
        .sum();
    let out = run(&scenario, "mesh.ron", &RunOptions::default()).expect("it runs");
    let ran = ALLOCATOR.peak_usage() - before;
    drop(out);
    (checked, ran, estimate)
}

/// What one more service, call and layer costs, from pairs of meshes run for 10s at 200
/// requests per second.
fn costs() {
    // (what, meshes (services, calls, layers) with fewer and more, units added).
    let pairs = [
        (
            "service (one route, no layer)",
            (200, 1, 0),
            (400, 1, 0),
            200,
        ),
        ("call (no layer)", (400, 10, 0), (400, 20, 0), 4000),
        ("layer (a breaker)", (400, 10, 1), (400, 10, 2), 4000),
        ("layer (a bulkhead)", (400, 10, 2), (400, 10, 3), 4000),
    ];
    println!(
        "{:<34} {:>16} {:>16} {:>16}",
        "one more", "check peak", "run peak", "estimate"
    );
    for (what, few, more, units) in pairs {
        let mesh = |(s, c, l): (usize, usize, usize)| generate::mesh(s, c, l, 200.0, 10);
        let (c0, r0, e0) = memory(&mesh(few));
        let (c1, r1, e1) = memory(&mesh(more));
        let per = |a: usize, b: usize| (b as f64 - a as f64) / units as f64;
        println!(
            "{what:<34} {:>14.0} B {:>14.0} B {:>14.0} B",
            per(c0, c1),
            per(r0, r1),
            per(e0 as usize, e1 as usize)
        );
    }
}

/// Seconds to check `text`, and to build its world and report (a run of 1ms).
// Timing is the point of a benchmark; the simulations never read the wall clock.
#[allow(clippy::disallowed_methods)]
fn check_and_build(text: &str) -> (f64, f64) {
    let started = Instant::now();
    let mut scenario = parse("mesh.ron", text).expect("the generated mesh is valid");
    let checked = started.elapsed().as_secs_f64();
    scenario.duration = sim_core::SimDuration::from_millis(1);
    scenario.bucket = scenario.duration;
    let started = Instant::now();
    let out = run(&scenario, "mesh.ron", &RunOptions::default()).expect("it runs");
    let built = started.elapsed().as_secs_f64();
    drop(out);
    (checked, built)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

#[allow(clippy::disallowed_methods)]
fn main() {
    let args = Args::parse();
    if args.costs {
        costs();
        return;
    }
    let mesh =
        |services| generate::mesh(services, args.calls, args.layers, args.rate, args.seconds);
    let (text, baseline) = (mesh(args.services), mesh(BASELINE_SERVICES));
    println!(
        "mesh: {} services × {} routes, {} backends, {} bytes of scenario",
        args.services,
        args.calls,
        args.calls,
        text.len()
    );
    let (mut check, mut build, mut base) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..args.rounds.max(1) {
        let (c, b) = check_and_build(&text);
        // The baseline, many times over, so that its time is not a timer's resolution.
        let repeats = (args.services / BASELINE_SERVICES).max(1);
        let started = Instant::now();
        for _ in 0..repeats {
            check_and_build(&baseline);
        }
        let per_service = started.elapsed().as_secs_f64() / (repeats * BASELINE_SERVICES) as f64;
        println!(
            "round {round}: check {c:.3}s build {b:.3}s ({:.1} us/service); baseline {:.1} us/service",
            (c + b) / args.services as f64 * 1e6,
            per_service * 1e6
        );
        check.push(c);
        build.push(b);
        base.push(per_service);
    }
    let (check, build) = (median(check), median(build));
    let us_per_service = (check + build) / args.services as f64 * 1e6;
    let baseline_us = median(base) * 1e6;

    ALLOCATOR.reset_peak_usage();
    let before = ALLOCATOR.current_usage();
    let started = Instant::now();
    let scenario = parse("mesh.ron", &text).expect("the generated mesh is valid");
    let out = run(&scenario, "mesh.ron", &RunOptions::default()).expect("it runs");
    let run_secs = started.elapsed().as_secs_f64();
    let peak = ALLOCATOR.peak_usage() - before;
    let r = &out.report;
    println!(
        "run: {}s simulated at {}/s: {} events in {run_secs:.2}s, offered {} ok {} stop {}, peak heap {:.1} MB",
        args.seconds,
        args.rate,
        r.events,
        r.summary.offered,
        r.summary.successes,
        r.stop_reason,
        peak as f64 / 1e6
    );
    println!(
        "services={} calls={} check_secs={check:.3} build_secs={build:.3} run_secs={run_secs:.3} events={} peak_mb={:.1} us_per_service={us_per_service:.1} baseline_us_per_service={baseline_us:.1} ratio={:.2}",
        args.services,
        args.calls,
        r.events,
        peak as f64 / 1e6,
        us_per_service / baseline_us
    );
}
