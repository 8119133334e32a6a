//! sim-net: the virtual network of resim, on top of sim-core.
//!
//! The main types:
//!
//! - [`Network`]: named nodes (one entity each), directed links with their own settings
//!   and a default, a fault timeline, custom rules, and per-link counters. A world keeps it
//!   in its shared state ([`NetworkHost`]).
//! - [`send`] and [`receive`]: the two calls a handler makes. `send` decides at once
//!   whether a message is dropped or when each copy arrives, and schedules a [`Delivery`]
//!   event for the target's entity; `receive` opens that event and says whether the message
//!   is handed over ([`Inbound::Delivered`] with an [`Arrived`]), was lost on arrival, or
//!   waits (held by a clog or a paused node).
//! - [`NetworkConfig`], [`LinkConfig`], [`FaultConfig`]: what a scenario file says, with
//!   `validate()` and [`ConfigError`]s that name the field path and the fix.
//! - [`Rule`]: a hook that sees each message at send time and says pass, drop or delay.
//! - [`LinkStats`]: sent, delivered, duplicated, held, dropped by [`DropReason`], and a
//!   latency histogram, per link; [`Network::report`] turns them into serializable
//!   [`LinkReport`]s.
//!
//! Module map:
//!
//! | module | what |
//! |---|---|
//! | [`config`] | serde configs, validation, [`ConfigError`] |
//! | [`network`] | [`Network`]: nodes, links, the send and arrival decisions, [`Sink`], [`Outbox`] |
//! | [`endpoint`] | [`send`], [`receive`] and the fault controls over a [`sim_core::Ctx`] |
//! | [`link`] | per-link settings, streams, send queue, [`LinkStats`], [`DropReason`] |
//! | [`fault`] | the fault timeline, applied lazily in time order |
//! | [`packet`] | [`Delivery`], [`Arrived`], [`Inbound`], [`PacketId`] |
//! | [`rule`] | [`Rule`], [`Verdict`], [`MessageView`] |
//!
//! **What happens to a message.** At send time, in this order: a crashed source or target
//! drops it; an active partition drops it; the rules judge it; the link's loss (combined
//! with any degradation's) may drop it; a link with limited bandwidth queues it (or drops
//! it when the queue is full) and adds its serialization delay; then a latency is drawn
//! (degraded, plus any reordering delay and rule delays), clamped only on links whose
//! `order` is `Fifo` so it does not overtake an earlier message (links draw each message's
//! delay on its own by default: what is declared is what a message gets), and the link may
//! duplicate it (the copy draws its own latency). At arrival time: a crash of either end since the send drops it (even if the
//! node restarted: its incarnation changed), an active partition drops it, a clog on the
//! link or a paused target holds it; otherwise it is handed over. Held messages are handed
//! over in arrival order when the block ends, each with an event of its own.
//!
//! **Determinism.** Every random draw comes from per-link streams named after the two
//! nodes (`net/link/api->db/latency`), so adding a node or a link leaves every other link's
//! numbers unchanged. Faults are applied lazily in `(time, install order)` order and cost
//! no events. Every delivery is an event (its [`Delivery::kind`] names the message), and
//! every drop or hold is folded into the digest with [`sim_core::Ctx::digest_note`]. Nothing
//! iterates a hash map and nothing reads the wall clock.
//!
//! A minimal world, where the network is the whole shared state:
//!
//! ```
//! use sim_core::{Ctx, Entity, Limits, Message, Seed, Sim, SimDuration, SimTime};
//! use sim_net::{Delivery, Inbound, Network, NodeId};
//!
//! enum Msg { Start, Net(Delivery<&'static str>) }
//! impl From<Delivery<&'static str>> for Msg {
//!     fn from(d: Delivery<&'static str>) -> Self { Msg::Net(d) }
//! }
//! impl Message for Msg {
//!     fn kind(&self) -> u64 {
//!         match self { Msg::Start => 1, Msg::Net(d) => d.kind() }
//!     }
//! }
//!
//! struct Host { me: Option<NodeId>, peer: Option<NodeId>, got: Vec<&'static str> }
//! impl Entity for Host {
//!     type Msg = Msg;
//!     type Shared = Network<&'static str>;
//!     fn handle(&mut self, ctx: &mut Ctx<'_, Msg, Network<&'static str>>, msg: Msg) {
//!         match msg {
//!             Msg::Start => {
//!                 sim_net::send(ctx, self.me.unwrap(), self.peer.unwrap(), 100, "hello");
//!             }
//!             Msg::Net(d) => {
//!                 if let Inbound::Delivered(m) = sim_net::receive(ctx, d) {
//!                     self.got.push(m.payload);
//!                 }
//!             }
//!         }
//!     }
//! }
//!
//! let mut sim = Sim::new(Network::new(Seed(7)), Limits::new(100, SimDuration::from_secs(1)));
//! let a = sim.add(Host { me: None, peer: None, got: vec![] });
//! let b = sim.add(Host { me: None, peer: None, got: vec![] });
//! let na = sim.shared_mut().add_node("a", a).unwrap();
//! let nb = sim.shared_mut().add_node("b", b).unwrap();
//! sim.entity_mut(a).me = Some(na);
//! sim.entity_mut(a).peer = Some(nb);
//! sim.schedule(SimTime::ZERO, a, Msg::Start);
//! sim.run();
//! assert_eq!(sim.entity(b).got, ["hello"]);
//! assert_eq!(sim.shared().link_stats(na, nb).unwrap().delivered, 1);
//! ```

pub mod config;
pub mod endpoint;
pub mod fault;
pub mod link;
pub mod network;
pub mod packet;
pub mod rule;

pub use config::{
    BandwidthConfig, ConfigError, FaultConfig, FaultKind, LinkConfig, LinkOrder, LinkOverride,
    NetworkConfig,
};
pub use endpoint::{NetworkHost, crash, end_fault, pause, receive, restart, resume, send};
pub use fault::FaultId;
pub use link::{DropReason, LinkReport, LinkStats};
pub use network::{Action, LinkId, Network, NodeId, NodeStatus, Outbox, SendOutcome, Sink};
pub use packet::{Arrived, Delivery, Inbound, PacketId};
pub use rule::{CloneRule, MessageView, Rule, RuleId, Verdict};
