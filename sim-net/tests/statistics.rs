//! Over a million messages, the measured loss and duplication ratios and the latency
//! mean and 99th percentile match what the link was configured with, within three standard
//! errors.

use sim_core::sample::Z_P99;
use sim_core::{Ctx, Dist, Entity, Limits, Message, Seed, Sim, SimDuration, SimTime, StopReason};
use sim_net::{Delivery, DropReason, Inbound, LinkConfig, LinkOrder, Network, NetworkHost, NodeId};

const MESSAGES: u64 = 1_000_000;
const PER_TICK: u64 = 100;

/// The world: the network and running sums of the delivered copies' latencies.
struct World {
    net: Network<()>,
    q99_theory_nanos: f64,
    count: u64,
    sum: f64,
    sum_squares: f64,
    at_or_below_q99: u64,
}

impl NetworkHost for World {
    type Payload = ();
    fn network(&mut self) -> &mut Network<()> {
        &mut self.net
    }
}

enum Msg {
    Tick,
    Net(Delivery<()>),
}

impl From<Delivery<()>> for Msg {
    fn from(d: Delivery<()>) -> Self {
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

/// The source sends `PER_TICK` messages every millisecond; the sink measures.
struct Host {
    route: Option<(NodeId, NodeId)>,
    left: u64,
}

impl Entity for Host {
    type Msg = Msg;
    type Shared = World;

    fn handle(&mut self, ctx: &mut Ctx<'_, Msg, World>, msg: Msg) {
        match msg {
            Msg::Tick => {
                let (source, target) = self.route.expect("the source knows its route");
                for _ in 0..PER_TICK.min(self.left) {
                    sim_net::send(ctx, source, target, 100, ());
                }
                self.left = self.left.saturating_sub(PER_TICK);
                if self.left > 0 {
                    ctx.send_self(SimDuration::from_millis(1), Msg::Tick);
                }
            }
            Msg::Net(d) => {
                let now = ctx.now();
                if let Inbound::Delivered(m) = sim_net::receive(ctx, d) {
                    let w = &mut *ctx.shared;
                    let x = (now - m.sent_at).as_nanos() as f64;
                    w.count += 1;
                    w.sum += x;
                    w.sum_squares += x * x;
                    w.at_or_below_q99 += u64::from(x <= w.q99_theory_nanos);
                }
            }
        }
    }
}

/// A measured value against its configured one, with the standard error of the estimate.
fn check(what: &str, measured: f64, configured: f64, standard_error: f64) {
    let z = (measured - configured) / standard_error;
    println!("{what:<18} measured {measured:>14.6} configured {configured:>14.6} z {z:>6.2}");
    assert!(
        z.abs() <= 3.0,
        "{what}: measured {measured}, configured {configured}, {z:.2} standard errors off"
    );
}

#[test]
fn loss_duplication_and_latency_match_the_configuration() {
    let loss_ratio = 0.05;
    let duplicate_ratio = 0.02;
    let latency = Dist::LogNormal {
        median: SimDuration::from_millis(10),
        sigma: None,
        p99: Some(SimDuration::from_millis(100)),
    };
    let sampler = latency.compile().unwrap();
    let config = LinkConfig {
        latency,
        loss_ratio,
        duplicate_ratio,
        // Independent draws: the FIFO clamp would shift the latency distribution.
        order: LinkOrder::Independent,
        bandwidth: None,
    };
    let world = World {
        net: Network::with_default_link(Seed(2024), &config).unwrap(),
        q99_theory_nanos: sampler.quantile_nanos(0.99),
        count: 0,
        sum: 0.0,
        sum_squares: 0.0,
        at_or_below_q99: 0,
    };
    let mut sim = Sim::new(
        world,
        Limits::new(10_000_000, SimDuration::from_secs(3_600)),
    );
    let source = sim.add(Host {
        route: None,
        left: MESSAGES,
    });
    let sink = sim.add(Host {
        route: None,
        left: 0,
    });
    let a = sim.shared_mut().net.add_node("source", source).unwrap();
    let b = sim.shared_mut().net.add_node("sink", sink).unwrap();
    sim.entity_mut(source).route = Some((a, b));
    sim.schedule(SimTime::ZERO, source, Msg::Tick);
    assert_eq!(sim.run(), StopReason::Idle);

    let w = sim.shared();
    let stats = w.net.link_stats(a, b).unwrap();
    let n = stats.sent as f64;
    assert_eq!(stats.sent, MESSAGES);
    let lost = stats.dropped(DropReason::Lost);
    assert_eq!(
        stats.dropped_total(),
        lost,
        "loss is the only way to drop here"
    );
    assert_eq!(stats.delivered, stats.sent - lost + stats.duplicated);
    assert_eq!(stats.in_flight, 0);

    let se = |p: f64, n: f64| (p * (1.0 - p) / n).sqrt();
    check("loss_ratio", lost as f64 / n, loss_ratio, se(loss_ratio, n));
    let transmitted = (stats.sent - lost) as f64;
    check(
        "duplicate_ratio",
        stats.duplicated as f64 / transmitted,
        duplicate_ratio,
        se(duplicate_ratio, transmitted),
    );

    let count = w.count as f64;
    assert_eq!(w.count, stats.delivered);
    let mean = w.sum / count;
    let variance = (w.sum_squares / count - mean * mean) * count / (count - 1.0);
    check(
        "latency mean (ns)",
        mean,
        sampler.mean_nanos().unwrap(),
        (variance / count).sqrt(),
    );
    // The p99: the share of copies at or below the theoretical p99 is binomial(n, 0.99).
    check(
        "share <= p99",
        w.at_or_below_q99 as f64 / count,
        0.99,
        se(0.99, count),
    );
    // And the histogram's p99 against the theoretical one: the standard error of a sample
    // quantile is sqrt(q(1-q)/n) / f(x_q); for a log-normal, x·f(x) = φ(z)/σ.
    let sigma = (100.0f64 / 10.0).ln() / Z_P99;
    let phi = (-Z_P99 * Z_P99 / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let q99_theory = sampler.quantile_nanos(0.99);
    let relative_se = se(0.99, count) * sigma / phi;
    let histogram = stats.latency().unwrap();
    // A link's histogram keeps two significant digits: it adds up to 1% of its own error.
    check(
        "latency p99 (ns)",
        histogram.quantile(0.99).as_nanos() as f64,
        q99_theory,
        q99_theory * (relative_se + 0.01 / 3.0),
    );
}
