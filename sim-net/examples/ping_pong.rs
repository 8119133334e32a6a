//! Two nodes play ping-pong through a partition that starts at 1s and heals at 2s.
//!
//! `ping` serves a ball, waits up to 200ms for the answer and serves again (same round)
//! when the wait runs out; `pong` answers every ball. While the partition is up, every
//! serve is dropped at once and balls in flight are lost; after it heals the rally goes
//! on. The timeline shows each step in fixed columns, then the link counters and the run
//! digest (the same seed always prints the same digest).
//!
//! ```text
//! cargo run -p sim-net --example ping_pong -- --seed 7
//! ```

use sim_core::{
    Ctx, Dist, Entity, Limits, Message, Seed, Sim, SimDuration, SimTime, TimerId, TraceRecord,
};
use sim_net::{
    Delivery, FaultConfig, FaultKind, Inbound, LinkConfig, Network, NetworkConfig, NetworkHost,
    NodeId, SendOutcome,
};

/// How long `ping` waits for the answer before serving again.
const WAIT: SimDuration = SimDuration::from_millis(200);
/// The pause between a returned ball and the next serve.
const GAP: SimDuration = SimDuration::from_millis(100);

/// A ball in flight: which round, and which way.
#[derive(Clone, Copy, Debug)]
pub enum Ball {
    /// From `ping` to `pong`.
    Ping(u32),
    /// The answer.
    Pong(u32),
}

/// The world's messages.
pub enum Msg {
    /// `ping` serves the current round.
    Serve,
    /// `ping`'s wait for round `n` ran out.
    Timeout(u32),
    /// A network event.
    Net(Delivery<Ball>),
}

impl From<Delivery<Ball>> for Msg {
    fn from(d: Delivery<Ball>) -> Self {
        Msg::Net(d)
    }
}

impl Message for Msg {
    fn kind(&self) -> u64 {
        match self {
            Msg::Serve => 1,
            Msg::Timeout(n) => 2 ^ (u64::from(*n) << 8),
            Msg::Net(d) => d.kind(),
        }
    }
}

/// The network and the timeline being written.
pub struct World {
    net: Network<Ball>,
    lines: Vec<(SimTime, String)>,
}

impl NetworkHost for World {
    type Payload = Ball;
    fn network(&mut self) -> &mut Network<Ball> {
        &mut self.net
    }
}

impl World {
    /// Appends a timeline line; `round` is absent when the network lost a ball whose
    /// content the receiver never saw.
    fn log(&mut self, now: SimTime, node: &str, event: &str, round: Option<u32>, detail: &str) {
        let round = round.map_or("-".to_string(), |r| r.to_string());
        self.lines
            .push((now, line(now, node, event, &round, detail)));
    }
}

/// One timeline line in fixed columns: time, node, event, round, detail.
fn line(now: SimTime, node: &str, event: &str, round: &str, detail: &str) -> String {
    let nanos = now.as_nanos();
    let time = format!("{}.{:03}ms", nanos / 1_000_000, nanos / 1_000 % 1_000);
    let line = format!("{time:>11}  {node:<4}  {event:<16} {round:>5}  {detail}");
    line.trim_end().to_string()
}

/// Formats a duration as milliseconds with three decimals, without floats.
fn millis(d: SimDuration) -> String {
    let nanos = d.as_nanos();
    format!("{}.{:03}ms", nanos / 1_000_000, nanos / 1_000 % 1_000)
}

/// One of the two players.
pub struct Player {
    me: Option<NodeId>,
    peer: Option<NodeId>,
    serving: bool,
    round: u32,
    wait: Option<TimerId>,
}

impl Player {
    fn new(serving: bool) -> Self {
        Player {
            me: None,
            peer: None,
            serving,
            round: 1,
            wait: None,
        }
    }

    fn name(&self) -> &'static str {
        if self.serving { "ping" } else { "pong" }
    }

    /// Sends `ball` to the peer and logs it, with the reason if the network dropped it.
    fn throw(&self, ctx: &mut Ctx<'_, Msg, World>, ball: Ball, round: u32) {
        let (me, peer) = (self.me.expect("registered"), self.peer.expect("registered"));
        let outcome = sim_net::send(ctx, me, peer, 64, ball);
        let detail = match outcome {
            SendOutcome::Scheduled { arrival, .. } => {
                format!("arrives in {}", millis(arrival - ctx.now()))
            }
            SendOutcome::Dropped { reason, .. } => format!("dropped at send: {reason}"),
        };
        let event = match ball {
            Ball::Ping(_) => "send ping",
            Ball::Pong(_) => "send pong",
        };
        let now = ctx.now();
        ctx.shared
            .log(now, self.name(), event, Some(round), &detail);
    }
}

impl Entity for Player {
    type Msg = Msg;
    type Shared = World;

    fn handle(&mut self, ctx: &mut Ctx<'_, Msg, World>, msg: Msg) {
        let now = ctx.now();
        match msg {
            Msg::Serve => {
                self.throw(ctx, Ball::Ping(self.round), self.round);
                self.wait = Some(ctx.timer_self(WAIT, Msg::Timeout(self.round)));
            }
            Msg::Timeout(round) => {
                if round == self.round {
                    let name = self.name();
                    ctx.shared
                        .log(now, name, "timeout", Some(round), "no answer, serve again");
                    ctx.send_self(SimDuration::ZERO, Msg::Serve);
                }
            }
            Msg::Net(delivery) => match sim_net::receive(ctx, delivery) {
                Inbound::Delivered(m) => {
                    let rtt = now - m.sent_at;
                    match m.payload {
                        Ball::Ping(round) => {
                            let detail = format!("after {}", millis(rtt));
                            ctx.shared
                                .log(now, self.name(), "recv ping", Some(round), &detail);
                            self.throw(ctx, Ball::Pong(round), round);
                        }
                        Ball::Pong(round) if round == self.round => {
                            let detail = format!("after {}", millis(rtt));
                            ctx.shared
                                .log(now, self.name(), "recv pong", Some(round), &detail);
                            if let Some(wait) = self.wait.take() {
                                ctx.cancel(wait);
                            }
                            self.round += 1;
                            ctx.send_self(GAP, Msg::Serve);
                        }
                        Ball::Pong(round) => {
                            let name = self.name();
                            ctx.shared
                                .log(now, name, "recv pong", Some(round), "late, ignored");
                        }
                    }
                }
                Inbound::Dropped { reason, .. } => {
                    let detail = format!("lost in flight: {reason}");
                    ctx.shared.log(now, self.name(), "lost", None, &detail);
                }
                Inbound::Held { .. } | Inbound::Idle => {}
            },
        }
    }
}

/// What a run prints: the timeline with its summary, and the digest on its own.
pub struct Report {
    /// The timeline, the link counters and the digest, one line each.
    pub text: String,
    /// The run digest.
    pub digest: String,
    /// Every executed event, for finding where two runs part.
    pub trace: Vec<TraceRecord>,
}

/// Plays for three seconds of virtual time with `seed`.
pub fn run(seed: u64) -> Report {
    let config = NetworkConfig {
        default_link: LinkConfig::with_latency(Dist::LogNormal {
            median: SimDuration::from_millis(20),
            sigma: None,
            p99: Some(SimDuration::from_millis(60)),
        }),
        links: vec![],
        faults: vec![FaultConfig::new(
            SimDuration::from_secs(1),
            Some(SimDuration::from_secs(2)),
            FaultKind::partition(&["ping"], &["pong"]),
        )],
    };
    let world = World {
        net: Network::new(Seed(seed)),
        lines: Vec::new(),
    };
    let mut sim = Sim::new(world, Limits::new(100_000, SimDuration::from_secs(3)));
    let ping = sim.add(Player::new(true));
    let pong = sim.add(Player::new(false));
    let net = &mut sim.shared_mut().net;
    let ping_node = net.add_node("ping", ping).expect("unique name");
    let pong_node = net.add_node("pong", pong).expect("unique name");
    net.configure(&config)
        .expect("the example's config is valid");
    for (entity, me, peer) in [(ping, ping_node, pong_node), (pong, pong_node, ping_node)] {
        let player = sim.entity_mut(entity);
        player.me = Some(me);
        player.peer = Some(peer);
    }
    sim.schedule(SimTime::ZERO, ping, Msg::Serve);
    sim.enable_trace(10_000);
    let stop = sim.run();

    let world = sim.shared();
    let mut text = format!("ping_pong seed={seed}: partition ping<->pong from 1s to 2s\n\n");
    text.push_str(&format!(
        "{:>11}  {:<4}  {:<16} {:>5}  {}\n",
        "time", "node", "event", "round", "detail"
    ));
    // The network applies faults without events of its own; the markers are put in by
    // time so the reader sees where the partition starts and heals.
    let mut markers = vec![
        (
            SimTime::from_secs(1),
            line(SimTime::from_secs(1), "net", "partition starts", "", ""),
        ),
        (
            SimTime::from_secs(2),
            line(SimTime::from_secs(2), "net", "partition heals", "", ""),
        ),
    ]
    .into_iter()
    .peekable();
    for (at, entry) in &world.lines {
        while let Some((_, marker)) = markers.next_if(|(t, _)| t <= at) {
            text.push_str(&marker);
            text.push('\n');
        }
        text.push_str(entry);
        text.push('\n');
    }
    for (_, marker) in markers {
        text.push_str(&marker);
        text.push('\n');
    }
    text.push_str(&format!("\nstopped: {stop} at {}\n", sim.now()));
    for (source, target, stats) in world.net.links() {
        let dropped: Vec<String> = sim_net::DropReason::ALL
            .iter()
            .filter(|r| stats.dropped(**r) > 0)
            .map(|r| format!("{r}={}", stats.dropped(*r)))
            .collect();
        text.push_str(&format!(
            "{:>4} -> {:<4}  sent {:>3}  delivered {:>3}  dropped {:>3}  {}\n",
            world.net.node_name(source),
            world.net.node_name(target),
            stats.sent,
            stats.delivered,
            stats.dropped_total(),
            if dropped.is_empty() {
                "-".to_string()
            } else {
                dropped.join(", ")
            },
        ));
    }
    let digest = sim.digest().to_string();
    text.push_str(&format!("digest {digest}\n"));
    Report {
        text,
        digest,
        trace: sim.trace().to_vec(),
    }
}

#[allow(dead_code)] // the test includes this file for `run` only
fn main() {
    let mut args = std::env::args().skip(1);
    let mut seed = 7;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().map(|v| v.parse::<u64>())) {
            ("--seed", Some(Ok(value))) => seed = value,
            _ => {
                eprintln!("usage: ping_pong [--seed N]");
                std::process::exit(2);
            }
        }
    }
    print!("{}", run(seed).text);
}
