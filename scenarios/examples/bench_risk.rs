//! Benchmark: what splitting saves against plain runs, measured in the same process on an
//! event whose probability is known exactly. The scenario is `scenarios/tests/risk/
//! mm1k-rare.ron`: M/M/1 with room for 16 waiting at half load, where the first refused
//! arrival within 10s has a probability of 9.4×10⁻⁴ (`sim_core::queueing`). `resim risk`'s
//! estimate is made twice: by plain runs (`--method plain`, a budget of `--plain-events`)
//! and as `auto` chooses (splitting excursions, `--replications`), each with its events and
//! wall time.
//!
//! Both estimates' errors shrink as one over the square root of what they simulate, so the
//! events each needs for the same relative error (95% half width over the estimate) scale as
//! `events × error²`: the ratio of the two is what splitting saves. Each error is the one
//! the method reports (Wilson's for plain runs, the replications' t interval for
//! splitting), and the output says whether each interval holds the exact value.
//!
//! `cargo run --release -p scenarios --example bench_risk`
//! `cargo run --release -p scenarios --example bench_risk -- --plain-events 5e6 --replications 10`
//!
//! The last line: `exact=.. plain_estimate=.. plain_error=.. plain_events=.. plain_secs=..
//! split_estimate=.. split_error=.. split_events=.. split_secs=.. plain_events_at_10pc=..
//! split_events_at_10pc=.. ratio=..` where the `_at_10pc` figures are the events each would
//! need for a relative error of 10% and `ratio` is the plain runs' over splitting's.

use clap::Parser;
use scenarios::cli::library::open;
use scenarios::experiment::Control;
use scenarios::experiment::risk::render::{Answer, answer};
use scenarios::experiment::risk::{self, Budget, MethodChoice, Risk};
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::Overrides;
use sim_core::SimDuration;
use sim_core::queueing::mm1k_first_refusal_by;
use std::time::Instant;

/// Splitting against plain runs, at an exact probability near 10⁻³.
#[derive(Parser)]
struct Args {
    /// The plain runs' budget, in events (about 2,000 a run).
    #[arg(long, default_value = "5e7")]
    plain_events: f64,
    /// Splitting's replications (about 45,000 events each).
    #[arg(long, default_value_t = 100)]
    replications: u64,
    /// Threads.
    #[arg(short = 'j', long)]
    jobs: Option<usize>,
}

// Timing the estimates is the point of a benchmark; the simulations never read the wall clock.
#[allow(clippy::disallowed_methods)]
fn estimate(
    method: MethodChoice,
    budget: Budget,
    replications: u64,
    jobs: Option<usize>,
) -> (Answer, f64) {
    let command = Risk {
        file: concat!(env!("CARGO_MANIFEST_DIR"), "/tests/risk/mm1k-rare.ron").to_string(),
        event: "queue_full:api".to_string(),
        horizon: SimDuration::from_secs(10),
        seeds: (1, 1_000_000_000),
        budget,
        method,
        importance: None,
        particles: 100,
        replications,
        relative_error: 0.2,
        overrides: Overrides::default(),
        fingerprint: String::new(),
    };
    let started = Instant::now();
    let out = risk::run(
        &command,
        (&open, &RunLimits::default()),
        jobs,
        None,
        &Control::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (answer(&out), started.elapsed().as_secs_f64())
}

fn main() {
    let args = Args::parse();
    let exact = mm1k_first_refusal_by(50.0, 100.0, 17, 10.0);
    let (plain, plain_secs) = estimate(
        MethodChoice::Plain,
        Budget::Events(args.plain_events as u64),
        2,
        args.jobs,
    );
    let (split, split_secs) = estimate(
        MethodChoice::Auto,
        Budget::Events(args.replications * 60_000 + 200_000),
        args.replications,
        args.jobs,
    );
    let covers = |a: &Answer| a.low <= exact && exact <= a.high;
    println!("exact P(first refusal within 10s) = {exact:.4e}");
    for (name, a, secs) in [
        ("plain runs", &plain, plain_secs),
        ("splitting", &split, split_secs),
    ] {
        println!(
            "{name:<10} {:<10} estimate {:.3e} [{:.3e}, {:.3e}] ±{:.0}%  covers the exact value: {}  events {}  {secs:.1}s",
            a.method,
            a.probability,
            a.low,
            a.high,
            a.relative_error * 100.0,
            if covers(a) { "yes" } else { "no" },
            a.events,
        );
    }
    // The events each would need for a relative error of 10%.
    let at_10 = |a: &Answer| a.events as f64 * (a.relative_error / 0.1).powi(2);
    let ratio = at_10(&plain) / at_10(&split);
    println!("for the same relative error, plain runs need {ratio:.0}× the events splitting needs");
    println!(
        "exact={exact:.6e} plain_estimate={:.6e} plain_error={:.4} plain_events={} plain_secs={plain_secs:.2} split_estimate={:.6e} split_error={:.4} split_events={} split_secs={split_secs:.2} plain_events_at_10pc={:.0} split_events_at_10pc={:.0} ratio={ratio:.2}",
        plain.probability,
        plain.relative_error,
        plain.events,
        split.probability,
        split.relative_error,
        split.events,
        at_10(&plain),
        at_10(&split),
    );
}
