//! A small world for the tests: one `Peer` entity per node, commands scheduled from
//! outside (send, crash, pause, ...), and a log of everything the network did.

#![allow(dead_code)] // each test file uses its own part of the harness

use sim_core::{Ctx, Entity, Limits, Message, Seed, Sim, SimDuration, SimTime, StopReason};
use sim_net::{
    Delivery, DropReason, FaultId, Inbound, Network, NetworkConfig, NetworkHost, NodeId, PacketId,
    SendOutcome,
};

/// What the test world's messages carry: a tag the test chose.
pub type Tag = u64;

#[derive(Clone)]
pub struct World {
    pub net: Network<Tag>,
    pub log: Vec<Record>,
}

impl NetworkHost for World {
    type Payload = Tag;
    fn network(&mut self) -> &mut Network<Tag> {
        &mut self.net
    }
}

/// One thing that happened, in the order it happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    Sent {
        at: SimTime,
        source: NodeId,
        target: NodeId,
        tag: Tag,
        outcome: SendOutcome,
    },
    Delivered {
        at: SimTime,
        source: NodeId,
        target: NodeId,
        id: PacketId,
        sent_at: SimTime,
        duplicate: bool,
        tag: Tag,
    },
    Dropped {
        at: SimTime,
        id: PacketId,
        reason: DropReason,
    },
    Held {
        at: SimTime,
        id: PacketId,
    },
}

#[derive(Clone)]
pub enum Msg {
    Send { target: NodeId, tag: Tag, size: u32 },
    Net(Delivery<Tag>),
    Crash,
    Restart,
    Pause,
    Resume,
    EndFault(FaultId),
}

impl From<Delivery<Tag>> for Msg {
    fn from(d: Delivery<Tag>) -> Self {
        Msg::Net(d)
    }
}

impl Message for Msg {
    fn kind(&self) -> u64 {
        match self {
            Msg::Send { tag, .. } => 1 ^ (tag << 8),
            Msg::Net(d) => d.kind(),
            Msg::Crash => 2,
            Msg::Restart => 3,
            Msg::Pause => 4,
            Msg::Resume => 5,
            Msg::EndFault(_) => 6,
        }
    }
}

#[derive(Clone)]
pub struct Peer {
    pub node: Option<NodeId>,
}

impl Entity for Peer {
    type Msg = Msg;
    type Shared = World;

    fn handle(&mut self, ctx: &mut Ctx<'_, Msg, World>, msg: Msg) {
        let me = self.node.expect("registered");
        let at = ctx.now();
        let record = match msg {
            Msg::Send { target, tag, size } => {
                let outcome = sim_net::send(ctx, me, target, size, tag);
                Some(Record::Sent {
                    at,
                    source: me,
                    target,
                    tag,
                    outcome,
                })
            }
            Msg::Net(d) => match sim_net::receive(ctx, d) {
                Inbound::Delivered(m) => Some(Record::Delivered {
                    at,
                    source: m.source,
                    target: m.target,
                    id: m.id,
                    sent_at: m.sent_at,
                    duplicate: m.duplicate,
                    tag: m.payload,
                }),
                Inbound::Dropped { id, reason } => Some(Record::Dropped { at, id, reason }),
                Inbound::Held { id } => Some(Record::Held { at, id }),
                Inbound::Idle => None,
            },
            Msg::Crash => {
                sim_net::crash(ctx, me);
                None
            }
            Msg::Restart => {
                sim_net::restart(ctx, me);
                None
            }
            Msg::Pause => {
                sim_net::pause(ctx, me);
                None
            }
            Msg::Resume => {
                sim_net::resume(ctx, me);
                None
            }
            Msg::EndFault(id) => {
                sim_net::end_fault(ctx, id);
                None
            }
        };
        ctx.shared.log.extend(record);
    }
}

/// A world of `nodes` peers called n0, n1, ... with the given network settings.
pub fn world(seed: u64, nodes: usize, config: &NetworkConfig) -> (Sim<Peer>, Vec<NodeId>) {
    let world = World {
        net: Network::new(Seed(seed)),
        log: Vec::new(),
    };
    let mut sim = Sim::new(
        world,
        Limits::new(10_000_000, SimDuration::from_secs(3_600)),
    );
    let mut ids = Vec::new();
    for i in 0..nodes {
        let entity = sim.add(Peer { node: None });
        let node = sim
            .shared_mut()
            .net
            .add_node(&format!("n{i}"), entity)
            .unwrap();
        sim.entity_mut(entity).node = Some(node);
        ids.push(node);
    }
    sim.shared_mut().net.configure(config).unwrap();
    (sim, ids)
}

/// Schedules a send command at `at`.
pub fn send_at(sim: &mut Sim<Peer>, at: SimTime, source: NodeId, target: NodeId, tag: Tag) {
    let entity = sim.shared().net.node_entity(source);
    sim.schedule(
        at,
        entity,
        Msg::Send {
            target,
            tag,
            size: 100,
        },
    );
}

/// Schedules a control command for `node`'s entity at `at`.
pub fn control_at(sim: &mut Sim<Peer>, at: SimTime, node: NodeId, msg: Msg) {
    let entity = sim.shared().net.node_entity(node);
    sim.schedule(at, entity, msg);
}

/// Runs until nothing is left and returns the log.
pub fn run(sim: &mut Sim<Peer>) -> Vec<Record> {
    assert_eq!(sim.run(), StopReason::Idle);
    sim.shared().log.clone()
}

/// The deliveries in the log, in delivery order.
pub fn deliveries(log: &[Record]) -> Vec<(SimTime, NodeId, NodeId, PacketId, SimTime, Tag)> {
    log.iter()
        .filter_map(|r| match *r {
            Record::Delivered {
                at,
                source,
                target,
                id,
                sent_at,
                tag,
                ..
            } => Some((at, source, target, id, sent_at, tag)),
            _ => None,
        })
        .collect()
}

/// The sends in the log, in send order.
pub fn sends(log: &[Record]) -> Vec<(SimTime, NodeId, NodeId, Tag, SendOutcome)> {
    log.iter()
        .filter_map(|r| match *r {
            Record::Sent {
                at,
                source,
                target,
                tag,
                outcome,
            } => Some((at, source, target, tag, outcome)),
            _ => None,
        })
        .collect()
}
