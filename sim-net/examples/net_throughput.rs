//! Throughput of the network: messages per second of wall time through one link with
//! log-normal latency sampling, loss and the FIFO clamp, in a full `Sim` (a send event and
//! a delivery event per message), against two baselines measured in the same process, round
//! by round: a bare loop over the same link (a `BinaryHeap` of sends and deliveries drawing
//! the same numbers from the same streams, so it loses and delivers the same messages, no
//! engine and no network), and sim-core's bare M/M/1 (`bare_mm1`: a `BinaryHeap` and ChaCha8,
//! no framework).
//!
//! ```text
//! cargo run --release -p sim-net --example net_throughput -- --messages 2000000 --rounds 3
//! ```
//!
//! The last line reports the medians over the rounds: `messages_per_sec` (messages
//! delivered or dropped per second), the run's `events_per_sec`, the bare link's
//! `bare_link_events_per_sec` and `ratio` (`events_per_sec / bare_link_events_per_sec`, the
//! price of the engine and the network on the same work), the M/M/1 baseline's
//! `bare_events_per_sec` and the two ratios to it (`messages_ratio`, `events_ratio`).

#[allow(dead_code)] // its `main` and `Args` belong to the baseline's own binary
#[path = "../../sim-core/examples/bare_mm1.rs"]
mod bare;

use clap::Parser;
use sim_core::sample::unit_f64;
use sim_core::{Ctx, Dist, Entity, Limits, Message, Seed, Sim, SimDuration, SimTime, StopReason};
use sim_net::{Delivery, LinkConfig, LinkOrder, Network, NodeId};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Parser)]
struct Args {
    /// Messages to send per round.
    #[arg(long, default_value_t = 2_000_000)]
    messages: u64,
    /// Customers of the bare M/M/1 baseline per round.
    #[arg(long, default_value_t = 2_000_000)]
    customers: u64,
    /// Rounds (each runs the network and the baseline once); medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

enum Msg {
    Tick,
    Net(Delivery<u64>),
}

impl From<Delivery<u64>> for Msg {
    fn from(d: Delivery<u64>) -> Self {
        Msg::Net(d)
    }
}

impl Message for Msg {
    fn kind(&self) -> u64 {
        match self {
            Msg::Tick => 1,
            Msg::Net(d) => d.kind(),
        }
    }
}

/// The sender sends one message per tick, ticks 10µs apart on average (Poisson); the
/// receiver opens every delivery.
struct Host {
    route: Option<(NodeId, NodeId)>,
    left: u64,
    gaps: sim_core::Sampler,
    rng: sim_core::RngStream,
    received: u64,
}

impl Entity for Host {
    type Msg = Msg;
    type Shared = Network<u64>;

    fn handle(&mut self, ctx: &mut Ctx<'_, Msg, Network<u64>>, msg: Msg) {
        match msg {
            Msg::Tick => {
                let (source, target) = self.route.expect("the sender knows its route");
                sim_net::send(ctx, source, target, 200, self.left);
                self.left -= 1;
                if self.left > 0 {
                    let gap = self.gaps.sample(&mut self.rng);
                    ctx.send_self(gap, Msg::Tick);
                }
            }
            Msg::Net(d) => {
                if sim_net::receive(ctx, d).delivered().is_some() {
                    self.received += 1;
                }
            }
        }
    }
}

struct NetReport {
    events: u64,
    messages: u64,
    delivered: u64,
    digest: String,
}

/// The link every message crosses.
fn link() -> LinkConfig {
    LinkConfig {
        latency: Dist::LogNormal {
            median: SimDuration::from_millis(1),
            sigma: None,
            p99: Some(SimDuration::from_millis(10)),
        },
        loss_ratio: 0.001,
        duplicate_ratio: 0.0,
        order: LinkOrder::Fifo,
        bandwidth: None,
    }
}

fn run_network(messages: u64, seed: u64) -> NetReport {
    let link = link();
    let seed = Seed(seed);
    let net = Network::with_default_link(seed, &link).expect("valid link");
    let mut sim = Sim::new(
        net,
        Limits::new(u64::MAX, SimDuration::from_secs(1_000_000)),
    );
    let host = |left| Host {
        route: None,
        left,
        gaps: Dist::exponential(SimDuration::from_micros(10))
            .compile()
            .expect("valid"),
        rng: seed.stream("bench/sender"),
        received: 0,
    };
    let sender = sim.add(host(messages));
    let receiver = sim.add(host(0));
    let a = sim.shared_mut().add_node("sender", sender).expect("unique");
    let b = sim
        .shared_mut()
        .add_node("receiver", receiver)
        .expect("unique");
    sim.entity_mut(sender).route = Some((a, b));
    sim.schedule(SimTime::ZERO, sender, Msg::Tick);
    assert_eq!(sim.run(), StopReason::Idle);
    let stats = sim
        .shared()
        .link_stats(a, b)
        .expect("the link carried messages");
    assert_eq!(stats.sent, messages);
    assert_eq!(stats.delivered, sim.entity(receiver).received);
    NetReport {
        events: sim.events_executed(),
        messages: stats.sent,
        delivered: stats.delivered,
        digest: sim.digest().to_string(),
    }
}

/// What the bare link loop did: events (sends and deliveries) and messages delivered.
struct BareLinkReport {
    events: u64,
    delivered: u64,
}

/// The network run without the engine or sim-net: one heap of `(time, seq, is_delivery)`
/// events, the sender's gaps, the link's loss and latency draws from the streams the
/// network derives for the link `sender->receiver` (in the same order), and the FIFO clamp.
fn run_bare_link(messages: u64, seed: u64) -> BareLinkReport {
    let seed = Seed(seed);
    let link = link();
    let latency = link.latency.compile().expect("valid");
    let gaps = Dist::exponential(SimDuration::from_micros(10))
        .compile()
        .expect("valid");
    let mut sender_rng = seed.stream("bench/sender");
    let mut loss_rng = seed.stream("net/link/sender->receiver/loss");
    let mut latency_rng = seed.stream("net/link/sender->receiver/latency");
    let mut heap: BinaryHeap<Reverse<(u64, u64, bool)>> = BinaryHeap::new();
    heap.push(Reverse((0, 0, false)));
    let (mut seq, mut left, mut last_arrival) = (1, messages, 0);
    let (mut events, mut delivered) = (0, 0);
    while let Some(Reverse((now, _, is_delivery))) = heap.pop() {
        events += 1;
        if is_delivery {
            delivered += 1;
            continue;
        }
        if unit_f64(&mut loss_rng) >= link.loss_ratio {
            let arrival = (now + latency.sample(&mut latency_rng).as_nanos()).max(last_arrival);
            last_arrival = arrival;
            heap.push(Reverse((arrival, seq, true)));
            seq += 1;
        }
        left -= 1;
        if left > 0 {
            heap.push(Reverse((
                now + gaps.sample(&mut sender_rng).as_nanos(),
                seq,
                false,
            )));
            seq += 1;
        }
    }
    BareLinkReport { events, delivered }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

// Timing the runs is the point of a benchmark; the simulations themselves never read the
// wall clock.
#[allow(clippy::disallowed_methods)]
fn main() {
    let args = Args::parse();
    let (mut message_rates, mut event_rates, mut bare_rates) = (vec![], vec![], vec![]);
    let mut bare_link_rates = vec![];
    let mut last_digest = None;
    for round in 0..args.rounds.max(1) {
        let started = std::time::Instant::now();
        let net = run_network(args.messages, args.seed);
        let secs = started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let baseline = bare::run(args.customers, args.seed, 0.9, 1.0);
        let bare_secs = started.elapsed().as_secs_f64();
        let (message_rate, event_rate) = (net.messages as f64 / secs, net.events as f64 / secs);
        let bare_rate = baseline.events as f64 / bare_secs;
        let started = std::time::Instant::now();
        let bare_link = run_bare_link(args.messages, args.seed);
        let bare_link_rate = bare_link.events as f64 / started.elapsed().as_secs_f64();
        // The same draws from the same streams: the same messages lost and delivered.
        assert_eq!(
            (bare_link.events, bare_link.delivered),
            (net.events, net.delivered)
        );
        println!(
            "round={round} messages={} delivered={} events={} secs={secs:.3} messages_per_sec={message_rate:.0} events_per_sec={event_rate:.0} bare_events_per_sec={bare_rate:.0} bare_link_events_per_sec={bare_link_rate:.0}",
            net.messages, net.delivered, net.events
        );
        // Every round replays the same history.
        assert!(last_digest.as_ref().is_none_or(|d| *d == net.digest));
        last_digest = Some(net.digest);
        message_rates.push(message_rate);
        event_rates.push(event_rate);
        bare_rates.push(bare_rate);
        bare_link_rates.push(bare_link_rate);
    }
    let (m, e, b) = (
        median(message_rates),
        median(event_rates),
        median(bare_rates),
    );
    let l = median(bare_link_rates);
    println!(
        "messages={} messages_per_sec={m:.0} events_per_sec={e:.0} bare_link_events_per_sec={l:.0} ratio={:.3} bare_events_per_sec={b:.0} messages_ratio={:.3} events_ratio={:.3} digest={}",
        args.messages,
        e / l,
        m / b,
        e / b,
        last_digest.unwrap_or_default()
    );
}
