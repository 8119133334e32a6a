//! The hold model: a queue kept at `--pending` events (default 100,000); each event, when it
//! fires, schedules one more at `now + Exp(1s)`. It stresses the event queue at a realistic
//! size, where the M/M/1 model (two pending events) stresses everything else.
//!
//! `cargo run --release -p sim-core --example hold -- --pending 100000 --events 10000000`
//!
//! It runs the engine and a bare-heap hold loop (std `BinaryHeap` of `(time, seq)`, the same
//! ChaCha8 stream and sampling) in alternating rounds and prints the ratio of their medians,
//! and the bytes the engine's event queue holds per pending event at the end of a run
//! (`queue_bytes_per_pending`, from `Sim::events_reserved`).

use clap::Parser;
use sim_core::sample::Sampler;
use sim_core::{Ctx, Entity, Limits, Message, RngStream, Seed, Sim, SimDuration, SimTime};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Hold-model benchmark: engine against a bare heap.
#[derive(Parser)]
struct Args {
    /// Events pending at all times.
    #[arg(long, default_value_t = 100_000)]
    pending: u64,
    /// Events to execute per round.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Rounds of each (the median is reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

struct Holder {
    hold: Sampler,
    rng: RngStream,
}

struct Hold;

impl Message for Hold {
    fn kind(&self) -> u64 {
        1
    }
}

impl Entity for Holder {
    type Msg = Hold;
    type Shared = ();
    #[inline]
    fn handle(&mut self, ctx: &mut Ctx<'_, Hold, ()>, msg: Hold) {
        let delay = self.hold.sample(&mut self.rng);
        ctx.send_self(delay, msg);
    }
}

/// What the engine's run leaves: events executed, the digest, and the bytes its event queue
/// holds (`Sim::events_reserved`).
fn engine(args: &Args) -> (u64, String, u64) {
    let mut holder = Holder {
        hold: Sampler::exponential(SimDuration::from_secs(1)),
        rng: Seed(args.seed).stream("hold"),
    };
    let first: Vec<SimDuration> = (0..args.pending)
        .map(|_| holder.hold.sample(&mut holder.rng))
        .collect();
    let mut sim = Sim::new((), Limits::new(args.events, SimDuration::MAX));
    let id = sim.add(holder);
    for d in first {
        sim.schedule(SimTime::ZERO + d, id, Hold);
    }
    sim.run();
    assert_eq!(sim.events_pending() as u64, args.pending);
    (
        sim.events_executed(),
        sim.digest().to_string(),
        sim.events_reserved(0),
    )
}

fn bare(args: &Args) -> (u64, String) {
    let hold = Sampler::exponential(SimDuration::from_secs(1));
    let mut rng = Seed(args.seed).stream("hold");
    let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut seq = 0;
    for _ in 0..args.pending {
        heap.push(Reverse((hold.sample(&mut rng).as_nanos(), seq)));
        seq += 1;
    }
    let mut digest = sim_core::Digest::new();
    let mut executed = 0;
    while executed < args.events {
        let Some(Reverse((now, this_seq))) = heap.pop() else {
            break;
        };
        digest.event(now, this_seq, 1, 1);
        executed += 1;
        heap.push(Reverse((now + hold.sample(&mut rng).as_nanos(), seq)));
        seq += 1;
    }
    (executed, digest.to_string())
}

// Timing the rounds is the point of this benchmark; the simulation never reads the clock.
#[allow(clippy::disallowed_methods)]
fn timed<T>(f: impl FnOnce() -> T, events: impl Fn(&T) -> u64) -> (f64, T) {
    let started = std::time::Instant::now();
    let out = f();
    let secs = started.elapsed().as_secs_f64();
    (events(&out) as f64 / secs, out)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let args = Args::parse();
    let mut engine_rates = Vec::new();
    let mut bare_rates = Vec::new();
    let mut queue_bytes = 0;
    for round in 0..args.rounds {
        let (e, (n, _, bytes)) = timed(|| engine(&args), |out| out.0);
        let (b, _) = timed(|| bare(&args), |out| out.0);
        println!(
            "round={round} events={n} engine_events_per_sec={e:.0} bare_events_per_sec={b:.0}"
        );
        engine_rates.push(e);
        bare_rates.push(b);
        queue_bytes = bytes;
    }
    let (e, b) = (median(engine_rates), median(bare_rates));
    println!(
        "pending={} engine_events_per_sec={e:.0} bare_events_per_sec={b:.0} ratio={:.2} \
         queue_bytes_per_pending={:.1}",
        args.pending,
        e / b,
        queue_bytes as f64 / args.pending as f64
    );
}
