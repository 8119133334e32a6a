//! The bare baseline: the same M/M/1 as the `mm1` example, written without the engine —
//! a `std::collections::BinaryHeap` of `(time, seq)` events, ChaCha8 streams and the same
//! sampling formula, nothing else. It prints the same last line as `mm1`, so the
//! engine/bare ratio of `events_per_sec` can be measured in one run:
//!
//! `cargo run --release -p sim-core --example bare_mm1 -- --customers 5000000 --seed 1`
//!
//! It draws from the same named streams in the same order as the engine model, so it
//! reports the same event count and the same mean wait (a cross-check of the engine). Its
//! digest folds the same four words per event, with a target word of 1.

use clap::Parser;
use sim_core::Seed;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// M/M/1 without the engine.
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

/// What the bare loop measured.
pub struct BareReport {
    /// Events executed.
    pub events: u64,
    /// Mean time in queue, seconds.
    pub mean_wait_secs: f64,
    /// Digest of (time, seq, 1, kind) over the events.
    pub digest: u64,
}

const ARRIVAL: u64 = 1;
const DEPARTURE: u64 = 2;

fn exp_nanos(rng: &mut sim_core::RngStream, mean_nanos: f64) -> u64 {
    // Inversion on (0, 1], rounded to the nearest nanosecond, exactly as sim-core samples.
    let u = ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
    libm::round(-mean_nanos * libm::log(u)) as u64
}

/// Runs the bare M/M/1.
pub fn run(customers: u64, seed: u64, lambda: f64, mu: f64) -> BareReport {
    let seed = Seed(seed);
    let mut arrivals = seed.stream("mmc/arrivals");
    let mut service = seed.stream("mmc/service");
    let mean_gap = libm::round(1e9 / lambda);
    let mean_work = libm::round(1e9 / mu);
    let mut heap: BinaryHeap<Reverse<(u64, u64, u64)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut digest = sim_core::Digest::new();
    heap.push(Reverse((0, seq, ARRIVAL)));
    seq += 1;
    let mut left = customers;
    let mut busy = false;
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let (mut events, mut started, mut wait_total) = (0u64, 0u64, 0u128);
    while let Some(Reverse((now, this_seq, kind))) = heap.pop() {
        events += 1;
        digest.event(now, this_seq, 1, kind);
        let mut start = |wait: u64, heap: &mut BinaryHeap<_>, seq: &mut u64| {
            started += 1;
            wait_total += u128::from(wait);
            heap.push(Reverse((
                now + exp_nanos(&mut service, mean_work),
                *seq,
                DEPARTURE,
            )));
            *seq += 1;
        };
        if kind == ARRIVAL {
            left -= 1;
            if left > 0 {
                heap.push(Reverse((
                    now + exp_nanos(&mut arrivals, mean_gap),
                    seq,
                    ARRIVAL,
                )));
                seq += 1;
            }
            if busy {
                waiting.push_back(now);
            } else {
                busy = true;
                start(0, &mut heap, &mut seq);
            }
        } else {
            match waiting.pop_front() {
                Some(arrived) => start(now - arrived, &mut heap, &mut seq),
                None => busy = false,
            }
        }
    }
    BareReport {
        events,
        mean_wait_secs: wait_total as f64 / started as f64 / 1e9,
        digest: digest.value(),
    }
}

// Timing the run is the point of this baseline.
#[allow(clippy::disallowed_methods, dead_code)]
fn main() {
    let args = Args::parse();
    let started = std::time::Instant::now();
    let report = run(args.customers, args.seed, args.lambda, args.mu);
    let secs = started.elapsed().as_secs_f64();
    println!(
        "events={} secs={:.3} events_per_sec={:.0} mean_wait_s={:.6} digest={:016x}",
        report.events,
        secs,
        report.events as f64 / secs,
        report.mean_wait_secs,
        report.digest
    );
}
