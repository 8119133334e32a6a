//! Benchmark: how much faster a sweep runs on two threads than on one. It sweeps 200 seeds of
//! `retry-storm` (shortened to 42 simulated seconds) with `-j 1`, then with `-j 2`, checks that
//! both give the same records, and prints the two wall-clock times and their ratio, with the
//! machine's load average before and after (a shared machine makes the ratio lower).
//!
//! `cargo run --release -p scenarios --example bench_sweep`
//! `cargo run --release -p scenarios --example bench_sweep -- --seeds 50 --jobs 4`

use clap::Parser;
use scenarios::cli::library::resolve;
use scenarios::experiment::{Plan, SweepSetup, run_plan};
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::Overrides;
use std::time::Instant;

/// A sweep on one thread against the same sweep on several.
#[derive(Parser)]
struct Args {
    /// Seeds to sweep.
    #[arg(long, default_value_t = 200)]
    seeds: u64,
    /// Threads of the parallel sweep.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Simulated duration of each run.
    #[arg(long, default_value = "42s")]
    duration: String,
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

// A benchmark measures wall-clock time, which the simulation never reads.
#[allow(clippy::disallowed_methods)]
fn main() {
    let args = Args::parse();
    let overrides = Overrides {
        variant: None,
        sets: vec![
            format!("duration=\"{}\"", args.duration)
                .parse()
                .expect("an override"),
        ],
    };
    let scenario =
        resolve("retry-storm", &RunLimits::default(), &overrides).expect("retry-storm reads");
    let plan = Plan::new(&[], (1, args.seeds), None).expect("a plan");
    let scenarios = [scenario];
    let words = [overrides.command_line()];
    let setup = SweepSetup {
        file: "retry-storm",
        scenarios: &scenarios,
        overrides: &words,
        duration: None,
    };
    println!("load average before: {}", load_average());
    let time = |jobs: usize| {
        let start = Instant::now();
        let records = run_plan(&setup, &plan, Some(jobs), &|| {}).expect("the sweep runs");
        (start.elapsed(), records)
    };
    let (one, records_one) = time(1);
    let (many, records_many) = time(args.jobs);
    assert_eq!(records_one, records_many, "the records do not depend on -j");
    println!(
        "{} seeds of retry-storm ({} simulated): -j 1 {:.2}s, -j {} {:.2}s, speed-up {:.2}x",
        args.seeds,
        args.duration,
        one.as_secs_f64(),
        args.jobs,
        many.as_secs_f64(),
        one.as_secs_f64() / many.as_secs_f64()
    );
    println!("load average after: {}", load_average());
}
