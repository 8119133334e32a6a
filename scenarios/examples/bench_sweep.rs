//! Benchmark: how much faster a sweep runs on two threads than on one. It sweeps 200 seeds of
//! `retry-storm` (shortened to 42 simulated seconds) with `-j 1`, then with `-j 2`, checks that
//! both give the same records, and prints the two wall-clock times and their ratio, with the
//! machine's load average before and after (a shared machine makes the ratio lower).
//!
//! `cargo run --release -p scenarios --example bench_sweep`
//! `cargo run --release -p scenarios --example bench_sweep -- --seeds 50 --jobs 4`
//! `cargo run --release -p scenarios --example bench_sweep -- --seeds 20 --rounds 3`
//!
//! With `--rounds N` the two sweeps alternate N times. The last line is the parallel
//! efficiency of the medians, measured in this process: time on one thread / (threads × time
//! on `--jobs` threads), 1.0 when every thread does a full share of the work, lower when the
//! threads wait for each other or for a core, with the best round's (`efficiency_best`: on a
//! shared machine other work takes cores away in some rounds and never gives any):
//! `seeds=.. jobs=.. one_thread_secs=.. threads_secs=.. speed_up=.. efficiency=..
//! efficiency_best=.. load_before=.. load_after=..`.

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
    /// Rounds of each sweep, alternating (the medians are compared).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
}

/// The load averages over 1, 5 and 15 minutes, as `/proc/loadavg` has them.
fn load_average() -> Vec<String> {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).map(str::to_string).collect())
        .unwrap_or_else(|_| vec!["unknown".to_string()])
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
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
        cancel: None,
    };
    let load_before = load_average();
    println!("load average before: {}", load_before.join(" "));
    let time = |jobs: usize| {
        let start = Instant::now();
        let records = run_plan(&setup, &plan, Some(jobs), &|| {}).expect("the sweep runs");
        (start.elapsed().as_secs_f64(), records)
    };
    let (mut ones, mut manys, mut best) = (Vec::new(), Vec::new(), 0.0_f64);
    for _ in 0..args.rounds.max(1) {
        let (one, records_one) = time(1);
        let (many, records_many) = time(args.jobs);
        assert_eq!(records_one, records_many, "the records do not depend on -j");
        let efficiency = one / (args.jobs as f64 * many);
        println!(
            "{} seeds of retry-storm ({} simulated): -j 1 {one:.2}s, -j {} {many:.2}s, speed-up {:.2}x, efficiency {efficiency:.2}",
            args.seeds,
            args.duration,
            args.jobs,
            one / many
        );
        best = best.max(efficiency);
        ones.push(one);
        manys.push(many);
    }
    let load_after = load_average();
    println!("load average after: {}", load_after.join(" "));
    let (one, many) = (median(ones), median(manys));
    println!(
        "seeds={} jobs={} one_thread_secs={one:.3} threads_secs={many:.3} speed_up={:.2} \
         efficiency={:.2} efficiency_best={best:.2} load_before={} load_after={}",
        args.seeds,
        args.jobs,
        one / many,
        one / (args.jobs as f64 * many),
        load_before[0],
        load_after[0],
    );
}
