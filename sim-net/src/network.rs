//! [`Network`]: nodes, links, faults and rules, and the two decisions the network makes
//! about every message: at send time (drop, or when each copy arrives) and at arrival time
//! (hand over, drop, or hold).
//!
//! The methods here take `now` and write what must be scheduled into a [`Sink`] (an
//! [`Outbox`], or the event queue itself); they never reach for the scheduler on their own.
//! [`crate::send`] and [`crate::receive`] connect them to a [`sim_core::Ctx`]. Keeping the
//! decisions free of the scheduler is what lets the property tests and the benchmark drive
//! the network directly.

use crate::config::{ConfigError, FaultConfig, FaultKind, LinkConfig, NetworkConfig};
use crate::fault::{Degradation, Effect, FaultId, LinkSet, Timeline};
use crate::link::{DropReason, LazyStream, Link, LinkParams, LinkReport, LinkStats, Order};
use crate::packet::{Arrived, Delivery, Inbound, Inner, Packet, PacketId};
use crate::rule::{MessageView, Rule, RuleId, Verdict};
use sim_core::sample::unit_f64;
use sim_core::{EntityId, Seed, SimDuration, SimTime};
use std::collections::BTreeMap;
use std::fmt;

/// A node of the network: one entity of the world, known by a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    /// The node's position in registration order (0 for the first node).
    pub fn as_u32(self) -> u32 {
        self.0
    }
}

/// A directed link, in creation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub(crate) u32);

/// Whether a node takes messages now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeStatus {
    /// Up and taking messages.
    Up,
    /// Crashed: it neither sends nor receives.
    Down,
    /// Paused: messages that reach it wait until it resumes.
    Paused,
}

#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub name: String,
    pub entity: EntityId,
    /// Bumped at every crash; copies carry the value from their send time.
    pub incarnation: u32,
    /// Active crash faults (overlapping crashes nest).
    pub down: u32,
    /// Active pause faults.
    pub paused: u32,
}

impl Node {
    pub fn new(name: &str, entity: Option<EntityId>) -> Self {
        Node {
            name: name.to_string(),
            entity: entity.unwrap_or_default(),
            incarnation: 0,
            down: 0,
            paused: 0,
        }
    }
}

/// What the network did with a message at send time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    /// The message is on its way and will reach the end of its link at `arrival` (where a
    /// crash, a partition or a clog may still stop it).
    Scheduled {
        /// The message's id.
        id: PacketId,
        /// When the first copy reaches the end of the link.
        arrival: SimTime,
        /// When the extra copy arrives, if the link duplicated the message.
        duplicate_arrival: Option<SimTime>,
    },
    /// The message was dropped at once.
    Dropped {
        /// The message's id.
        id: PacketId,
        /// Why.
        reason: DropReason,
    },
}

impl SendOutcome {
    /// The message's id.
    pub fn id(&self) -> PacketId {
        match *self {
            SendOutcome::Scheduled { id, .. } | SendOutcome::Dropped { id, .. } => id,
        }
    }
}

/// One thing the network needs done by the event loop.
#[derive(Debug)]
pub enum Action<P> {
    /// Schedule `delivery` for entity `target` at `at`.
    Schedule {
        /// The entity of the node at the end of the link.
        target: EntityId,
        /// When.
        at: SimTime,
        /// The event payload to hand back to [`crate::receive`].
        delivery: Delivery<P>,
    },
    /// Fold this word into the run digest (a drop or a hold: outcomes that are not events).
    Note(u64),
}

/// The actions of one network call, in the order they must be applied.
#[derive(Debug)]
pub struct Outbox<P> {
    actions: Vec<Action<P>>,
}

impl<P> Default for Outbox<P> {
    fn default() -> Self {
        Outbox::new()
    }
}

impl<P> Outbox<P> {
    /// An empty outbox.
    pub fn new() -> Self {
        Outbox {
            actions: Vec::new(),
        }
    }

    /// The actions so far.
    pub fn actions(&self) -> &[Action<P>] {
        &self.actions
    }

    /// Takes the actions out, in order, keeping the allocation.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Action<P>> {
        self.actions.drain(..)
    }
}

/// Where a network call puts what must be done, in order: events to schedule and words to
/// fold into the digest. An [`Outbox`] collects them to apply later; [`crate::send`] and
/// [`crate::receive`] hand the network a sink that schedules straight into the event queue,
/// so a message is moved once on its way there.
pub trait Sink<P> {
    /// Schedule `delivery` for entity `target` at `at`.
    fn schedule(&mut self, target: EntityId, at: SimTime, delivery: Delivery<P>);
    /// Fold `word` into the run digest (a drop or a hold: outcomes that are not events).
    fn note(&mut self, word: u64);
}

impl<P> Sink<P> for Outbox<P> {
    fn schedule(&mut self, target: EntityId, at: SimTime, delivery: Delivery<P>) {
        self.actions.push(Action::Schedule {
            target,
            at,
            delivery,
        });
    }

    fn note(&mut self, word: u64) {
        self.actions.push(Action::Note(word));
    }
}

/// Digest words for outcomes that are not events; the tags keep them apart from each other.
const NOTE_DROP: u64 = 0x6e65_7464_0000_0000;
const NOTE_HOLD: u64 = 0x6e65_7468_0000_0000;

fn drop_note(id: PacketId, reason: DropReason) -> u64 {
    NOTE_DROP ^ ((reason as u64) << 44) ^ id.0
}

/// The virtual network: named nodes, directed links with their own settings and a default,
/// a fault timeline, custom rules, and per-link counters.
///
/// `P` is what messages carry. A world keeps the network in its shared state and sends
/// through [`crate::send`]; see the crate docs for the whole flow.
///
/// A network is a value: a clone (`P: Clone`) holds its own links, messages in flight or
/// held, fault timeline and rules, and continues exactly as the original would.
#[derive(Clone)]
pub struct Network<P> {
    seed: Seed,
    default_params: LinkParams,
    overrides: BTreeMap<(NodeId, NodeId), LinkParams>,
    nodes: Vec<Node>,
    names: BTreeMap<String, NodeId>,
    links: Vec<Link<P>>,
    link_index: BTreeMap<(NodeId, NodeId), LinkId>,
    /// The same links by source node, each list sorted by target: the send path's lookup
    /// (a node has few links, and a binary search of a short list beats a tree walk).
    links_from: Vec<Vec<(NodeId, LinkId)>>,
    timeline: Timeline,
    rules: Vec<(RuleId, Box<dyn Rule<P>>)>,
    next_rule: u32,
    next_packet: u64,
}

impl<P> fmt::Debug for Network<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("seed", &self.seed)
            .field("nodes", &self.nodes.len())
            .field("links", &self.links.len())
            .field("rules", &self.rules.len())
            .field("messages", &self.next_packet)
            .finish_non_exhaustive()
    }
}

impl<P> Network<P> {
    /// An empty network whose links default to [`LinkConfig::default`]; its random
    /// streams derive from `seed` (use the run seed).
    pub fn new(seed: Seed) -> Self {
        let default_params =
            LinkParams::compile(&LinkConfig::default()).expect("the default link config is valid");
        Network {
            seed,
            default_params,
            overrides: BTreeMap::new(),
            nodes: Vec::new(),
            names: BTreeMap::new(),
            links: Vec::new(),
            link_index: BTreeMap::new(),
            links_from: Vec::new(),
            timeline: Timeline::default(),
            rules: Vec::new(),
            next_rule: 0,
            next_packet: 0,
        }
    }

    /// An empty network whose links default to `default_link`.
    pub fn with_default_link(seed: Seed, default_link: &LinkConfig) -> Result<Self, ConfigError> {
        let mut net = Network::new(seed);
        net.set_default_link(default_link)?;
        Ok(net)
    }

    /// Registers a node called `name`, played by `entity`.
    pub fn add_node(&mut self, name: &str, entity: EntityId) -> Result<NodeId, ConfigError> {
        if name.is_empty() {
            return Err(ConfigError::new("name", "must not be empty"));
        }
        if self.names.contains_key(name) {
            return Err(ConfigError::new(
                "name",
                format!("node \"{name}\" is already registered; give each node its own name"),
            ));
        }
        let id = NodeId(u32::try_from(self.nodes.len()).expect("fewer than 2^32 nodes"));
        self.nodes.push(Node::new(name, Some(entity)));
        self.links_from.push(Vec::new());
        self.names.insert(name.to_string(), id);
        Ok(id)
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<NodeId> {
        self.names.get(name).copied()
    }

    /// The name of `node`.
    pub fn node_name(&self, node: NodeId) -> &str {
        &self.node_ref(node).name
    }

    /// The entity that plays `node`.
    pub fn node_entity(&self, node: NodeId) -> EntityId {
        self.node_ref(node).entity
    }

    /// Every node in registration order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len()).map(|i| NodeId(i as u32))
    }

    /// Whether `node` takes messages at `now`.
    pub fn node_status(&mut self, now: SimTime, node: NodeId) -> NodeStatus {
        self.advance(now);
        let n = self.node_ref(node);
        if n.down > 0 {
            NodeStatus::Down
        } else if n.paused > 0 {
            NodeStatus::Paused
        } else {
            NodeStatus::Up
        }
    }

    /// How many times `node` has crashed by `now`. A world compares it with the value it
    /// last saw to notice a restart and come back cold.
    pub fn incarnation(&mut self, now: SimTime, node: NodeId) -> u32 {
        self.advance(now);
        self.node_ref(node).incarnation
    }

    fn node_ref(&self, node: NodeId) -> &Node {
        // A NodeId comes from this network's `add_node`; another one is a bug in the caller.
        self.nodes
            .get(node.index())
            .unwrap_or_else(|| panic!("{node:?} is not a node of this network"))
    }

    fn resolve(&self, field: &str, name: &str) -> Result<NodeId, ConfigError> {
        self.node(name).ok_or_else(|| {
            let known: Vec<&str> = self.names.keys().map(String::as_str).collect();
            ConfigError::new(
                field,
                format!(
                    "unknown node \"{name}\" (known nodes: {})",
                    if known.is_empty() {
                        "none yet".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })
    }

    fn resolve_all(&self, field: &str, names: &[String]) -> Result<Vec<NodeId>, ConfigError> {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| self.resolve(&format!("{field}[{i}]"), name))
            .collect()
    }

    /// Sets the settings of every link without its own.
    pub fn set_default_link(&mut self, config: &LinkConfig) -> Result<(), ConfigError> {
        self.default_params = LinkParams::compile(config)?;
        self.refresh_links();
        Ok(())
    }

    /// Gives `source → target` its own settings (also if it has carried messages already:
    /// its streams, counters and queue stay).
    pub fn set_link(
        &mut self,
        source: NodeId,
        target: NodeId,
        config: &LinkConfig,
    ) -> Result<(), ConfigError> {
        self.node_ref(source);
        self.node_ref(target);
        self.overrides
            .insert((source, target), LinkParams::compile(config)?);
        self.refresh_links();
        Ok(())
    }

    fn params_for(&self, source: NodeId, target: NodeId) -> LinkParams {
        self.overrides
            .get(&(source, target))
            .unwrap_or(&self.default_params)
            .clone()
    }

    fn refresh_links(&mut self) {
        for i in 0..self.links.len() {
            let (s, t) = (self.links[i].source, self.links[i].target);
            self.links[i].params = self.params_for(s, t);
        }
    }

    /// Applies a scenario's network section: the default link, the link overrides and the
    /// faults. Node names must be registered first; errors name the field path.
    pub fn configure(&mut self, config: &NetworkConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.set_default_link(&config.default_link)
            .map_err(|e| e.at("default_link"))?;
        for (i, o) in config.links.iter().enumerate() {
            let at = |e: ConfigError| e.at(&format!("links[{i}]"));
            let from = self.resolve("from", &o.from).map_err(at)?;
            let to = self.resolve("to", &o.to).map_err(at)?;
            self.set_link(from, to, &o.link).map_err(at)?;
            if !o.one_way {
                self.set_link(to, from, &o.link).map_err(at)?;
            }
        }
        for (i, fault) in config.faults.iter().enumerate() {
            self.add_fault(fault)
                .map_err(|e| e.at(&format!("faults[{i}]")))?;
        }
        Ok(())
    }

    /// Installs a fault on the timeline (names resolved now). Its start must not be
    /// before the last time the network was used.
    pub fn add_fault(&mut self, fault: &FaultConfig) -> Result<FaultId, ConfigError> {
        fault.validate()?;
        let kind_error = |e: ConfigError| e.at("kind");
        let links =
            |from: &[String], to: &[String], one_way: bool| -> Result<LinkSet, ConfigError> {
                let from = self.resolve_all("from", from).map_err(kind_error)?;
                let to = self.resolve_all("to", to).map_err(kind_error)?;
                Ok(LinkSet::new(from, to, one_way))
            };
        let effect = match &fault.kind {
            FaultKind::Partition { from, to, one_way } => Effect::Cut(links(from, to, *one_way)?),
            FaultKind::Clog { from, to, one_way } => Effect::Clog(links(from, to, *one_way)?),
            FaultKind::Degrade {
                from,
                to,
                one_way,
                latency_factor,
                latency_added,
                loss_ratio,
            } => Effect::Degrade {
                links: links(from, to, *one_way)?,
                latency_factor: *latency_factor,
                latency_added: *latency_added,
                loss_ratio: *loss_ratio,
            },
            FaultKind::Crash { node } => {
                Effect::Crash(self.resolve("node", node).map_err(kind_error)?)
            }
            FaultKind::Pause { node } => {
                Effect::Pause(self.resolve("node", node).map_err(kind_error)?)
            }
        };
        let start = SimTime::ZERO + fault.start;
        if start < self.timeline.now() {
            return Err(ConfigError::new(
                "start",
                format!(
                    "must not be before the network's current time {}, got {start}",
                    self.timeline.now()
                ),
            ));
        }
        let end = fault.end.map(|end| SimTime::ZERO + end);
        Ok(self.timeline.add(effect, start, end))
    }

    /// Installs a rule after the ones already installed.
    pub fn add_rule(&mut self, rule: impl Rule<P> + 'static) -> RuleId {
        let id = RuleId(self.next_rule);
        self.next_rule += 1;
        self.rules.push((id, Box::new(rule)));
        id
    }

    /// Gives every random stream of the network fresh randomness from `seed` (a branch's,
    /// [`Seed::branch`]), each keeping its identity: the links' streams, those of links not
    /// made yet (they derive from `seed`), and the rules' ([`Rule::reseed`]).
    pub fn reseed(&mut self, seed: Seed) {
        self.seed = seed;
        for link in &mut self.links {
            link.reseed(seed);
        }
        for (_, rule) in &mut self.rules {
            rule.reseed(seed);
        }
    }

    /// Removes a rule; false if it was not installed.
    pub fn remove_rule(&mut self, id: RuleId) -> bool {
        let before = self.rules.len();
        self.rules.retain(|(r, _)| *r != id);
        self.rules.len() != before
    }

    /// The counters of `source → target`, if it has carried anything.
    pub fn link_stats(&self, source: NodeId, target: NodeId) -> Option<&LinkStats> {
        self.link_index
            .get(&(source, target))
            .map(|id| &self.links[id.0 as usize].stats)
    }

    /// Every link that has carried something, ordered by (source, target) registration
    /// order, with its counters.
    pub fn links(&self) -> impl Iterator<Item = (NodeId, NodeId, &LinkStats)> + '_ {
        self.link_index
            .iter()
            .map(|(&(s, t), id)| (s, t, &self.links[id.0 as usize].stats))
    }

    /// A report of every link that has carried something, in the order of
    /// [`Network::links`].
    pub fn report(&self) -> Vec<LinkReport> {
        self.link_index
            .iter()
            .map(|(&(s, t), id)| {
                let link = &self.links[id.0 as usize];
                let (source, target) = (self.node_name(s), self.node_name(t));
                link.stats.report(source, target, &link.params.latency)
            })
            .collect()
    }

    /// The counters of all links added up.
    pub fn totals(&self) -> LinkStats {
        let mut total = LinkStats::default();
        for link in &self.links {
            total.merge(&link.stats);
        }
        total
    }

    /// Copies held now by clogs and paused nodes, over all links (the network's part of a
    /// model's memory: held copies wait in the network, not in the event queue).
    pub fn held_now(&self) -> usize {
        self.links.iter().map(|link| link.held.len()).sum()
    }

    /// Messages sent so far.
    pub fn messages_sent(&self) -> u64 {
        self.next_packet
    }

    #[inline]
    fn advance(&mut self, now: SimTime) {
        self.timeline.advance(now, &mut self.nodes);
    }

    #[inline]
    fn link_id(&mut self, source: NodeId, target: NodeId) -> LinkId {
        let from = &self.links_from[source.index()];
        let at = match from.binary_search_by_key(&target, |(t, _)| *t) {
            Ok(i) => return from[i].1,
            Err(at) => at,
        };
        let id = LinkId(u32::try_from(self.links.len()).expect("fewer than 2^32 links"));
        let params = self.params_for(source, target);
        let link = Link::new(
            self.seed,
            (source, &self.node_ref(source).name),
            (target, &self.node_ref(target).name),
            params,
        );
        self.links.push(link);
        self.link_index.insert((source, target), id);
        self.links_from[source.index()].insert(at, (target, id));
        id
    }

    /// Decides the fate of a message sent at `now` from `source` to `target`: dropped at
    /// once, or on its way (one copy, or two if the link duplicates it). What must be
    /// scheduled or noted goes into `out`.
    pub fn transmit(
        &mut self,
        now: SimTime,
        source: NodeId,
        target: NodeId,
        size: u32,
        payload: P,
        out: &mut impl Sink<P>,
    ) -> SendOutcome
    where
        P: Clone,
    {
        self.node_ref(source);
        self.node_ref(target);
        self.advance(now);
        let link_id = self.link_id(source, target);
        if self.is_calm() && self.links[link_id.index()].params.only_delays() {
            return self.transmit_delay_only(now, link_id, size, payload, out);
        }
        let id = PacketId(self.next_packet);
        self.next_packet += 1;

        let degradation = if self.timeline.any_active() {
            self.timeline.degradation(source, target)
        } else {
            Degradation::NONE
        };
        let link = &mut self.links[link_id.index()];
        link.stats.sent += 1;
        // Every message a link could lose (duplicate) draws its loss (duplication) number,
        // whatever happens to it, so that a fault or a rule dropping one message does not
        // shift the draws of the next (common random numbers across policies and fault
        // timelines). Whether a draw happens depends only on the link's settings and the
        // active degradations, never on an earlier message's fate; a link that can do
        // neither draws nothing, which keeps the common lossless link cheap.
        let can_lose = link.params.loss_ratio > 0.0 || degradation.loss_ratio > 0.0;
        let loss_draw = if can_lose {
            unit_f64(link.rng_loss.get())
        } else {
            1.0
        };
        let duplicate_draw = if link.params.duplicate_ratio > 0.0 {
            unit_f64(link.rng_duplicate.get())
        } else {
            1.0
        };

        let (src, dst) = (&self.nodes[source.index()], &self.nodes[target.index()]);
        let mut dropped = if src.down > 0 {
            Some(DropReason::SourceDown)
        } else if dst.down > 0 {
            Some(DropReason::TargetDown)
        } else if self.timeline.is_cut(source, target) {
            Some(DropReason::Partitioned)
        } else {
            None
        };

        let mut rule_delay = SimDuration::ZERO;
        if dropped.is_none() && !self.rules.is_empty() {
            let view = MessageView {
                id,
                source,
                source_name: &src.name,
                target,
                target_name: &dst.name,
                size,
                payload: &payload,
            };
            for (_, rule) in &mut self.rules {
                match rule.judge(now, &view) {
                    Verdict::Pass => {}
                    Verdict::Delay(d) => rule_delay = rule_delay.saturating_add(d),
                    Verdict::Drop => {
                        dropped = Some(DropReason::Rule);
                        break;
                    }
                }
            }
        }
        let (source_incarnation, target_incarnation) = (src.incarnation, dst.incarnation);
        let target_entity = dst.entity;

        let link = &mut self.links[link_id.index()];
        if dropped.is_none() {
            let loss = link.params.loss_ratio;
            let loss = 1.0 - (1.0 - loss) * (1.0 - degradation.loss_ratio);
            if loss_draw < loss {
                dropped = Some(DropReason::Lost);
            }
        }
        let departure = match dropped {
            None => link.enqueue(now, size),
            Some(_) => None,
        };
        let Some(departure) = departure else {
            let reason = dropped.unwrap_or(DropReason::QueueFull);
            link.stats.record_drop(reason);
            link.stats.assert_balanced();
            out.note(drop_note(id, reason));
            return SendOutcome::Dropped { id, reason };
        };
        assert!(departure >= now, "a message leaves before it is sent");

        let latency = draw_latency(&link.params, degradation, &mut link.rng_latency)
            .saturating_add(draw_reorder(link));
        let arrival = clamp_arrival(
            link,
            departure.saturating_add(latency).saturating_add(rule_delay),
        );
        let duplicate = (duplicate_draw < link.params.duplicate_ratio).then(|| {
            let latency = draw_latency(&link.params, degradation, &mut link.rng_duplicate_latency)
                .saturating_add(draw_reorder(link));
            clamp_arrival(
                link,
                departure.saturating_add(latency).saturating_add(rule_delay),
            )
        });

        let packet = |duplicate: bool, payload: P| {
            Delivery(Inner::Packet(Packet {
                copy: Packet::<P>::copy_of(id, duplicate),
                link: link_id,
                sent_at: now,
                source_incarnation,
                target_incarnation,
                size,
                payload,
            }))
        };
        match duplicate {
            None => out.schedule(target_entity, arrival, packet(false, payload)),
            Some(duplicate_arrival) => {
                link.stats.duplicated += 1;
                link.stats.in_flight += 1;
                out.schedule(target_entity, arrival, packet(false, payload.clone()));
                out.schedule(target_entity, duplicate_arrival, packet(true, payload));
            }
        }
        link.stats.in_flight += 1;
        link.stats.assert_balanced();
        SendOutcome::Scheduled {
            id,
            arrival,
            duplicate_arrival: duplicate,
        }
    }

    /// True while no fault and no rule can touch a message: every node is up, no link is
    /// cut, clogged or degraded, and nothing judges what is sent.
    #[inline]
    fn is_calm(&self) -> bool {
        !self.timeline.any_active() && self.rules.is_empty()
    }

    /// [`Network::transmit`] on a calm network over a link that only delays: the copy
    /// arrives after its latency draw (FIFO-clamped if the link keeps order). The draws,
    /// counters and scheduled event are exactly those of the general path, which would
    /// find nothing to drop, queue, duplicate or reorder.
    fn transmit_delay_only(
        &mut self,
        now: SimTime,
        link_id: LinkId,
        size: u32,
        payload: P,
        out: &mut impl Sink<P>,
    ) -> SendOutcome {
        let id = PacketId(self.next_packet);
        self.next_packet += 1;
        let link = &mut self.links[link_id.index()];
        let (src, dst) = (
            &self.nodes[link.source.index()],
            &self.nodes[link.target.index()],
        );
        debug_assert!(
            src.down == 0 && dst.down == 0,
            "a node is down on a calm network"
        );
        let latency = draw_latency(&link.params, Degradation::NONE, &mut link.rng_latency);
        let arrival = clamp_arrival(link, now.saturating_add(latency));
        let packet = Packet {
            copy: Packet::<P>::copy_of(id, false),
            link: link_id,
            sent_at: now,
            source_incarnation: src.incarnation,
            target_incarnation: dst.incarnation,
            size,
            payload,
        };
        out.schedule(dst.entity, arrival, Delivery(Inner::Packet(packet)));
        link.stats.sent += 1;
        link.stats.in_flight += 1;
        link.stats.assert_balanced();
        SendOutcome::Scheduled {
            id,
            arrival,
            duplicate_arrival: None,
        }
    }

    /// Handles a network event at `now`: a copy reaching the end of its link, or a release
    /// of held copies. Returns what became of it; what must be scheduled or noted goes into
    /// `out`.
    pub fn arrive(
        &mut self,
        now: SimTime,
        delivery: Delivery<P>,
        out: &mut impl Sink<P>,
    ) -> Inbound<P> {
        self.advance(now);
        match delivery.0 {
            Inner::Packet(packet) => {
                if self.links[packet.link.index()].held.is_empty() {
                    self.settle(now, packet, out)
                } else {
                    // Copies ahead of it are held: it waits behind them, so that a release
                    // never lets a later copy overtake an earlier one.
                    self.hold(now, packet, out)
                }
            }
            Inner::Release(link_id) => {
                let link = &mut self.links[link_id.index()];
                if link.release_at == Some(now) {
                    link.release_at = None;
                }
                if link.held.is_empty() {
                    return Inbound::Idle;
                }
                let (source, target) = (link.source, link.target);
                if let Some(blocked) = self.timeline.blocked(source, target) {
                    self.ensure_release(link_id, blocked.until, out);
                    return Inbound::Idle;
                }
                let link = &mut self.links[link_id.index()];
                let packet = link.held.pop_front().expect("checked not empty");
                if !link.held.is_empty() {
                    // One copy per release event keeps `receive` to one message per call;
                    // the next release runs at the same instant, after this one.
                    self.ensure_release(link_id, Some(now), out);
                }
                self.settle(now, packet, out)
            }
        }
    }

    /// The arrival checks: crashes and partitions drop the copy, clogs and pauses hold it,
    /// otherwise it is handed over.
    fn settle(&mut self, now: SimTime, packet: Packet<P>, out: &mut impl Sink<P>) -> Inbound<P> {
        let link = &self.links[packet.link.index()];
        let (source, target) = (link.source, link.target);
        let (src, dst) = (&self.nodes[source.index()], &self.nodes[target.index()]);
        let dropped = if dst.incarnation != packet.target_incarnation {
            Some(DropReason::TargetCrashed)
        } else if src.incarnation != packet.source_incarnation {
            Some(DropReason::SourceCrashed)
        } else if self.timeline.is_cut(source, target) {
            Some(DropReason::Partitioned)
        } else {
            None
        };
        // A node that is down now crashed after the copy was sent (a copy sent to or by a
        // down node is dropped at send time), so its incarnation has moved on.
        assert!(
            dropped.is_some() || (dst.down == 0 && src.down == 0),
            "a copy from before a crash carries a stale incarnation"
        );
        if let Some(reason) = dropped {
            let link = &mut self.links[packet.link.index()];
            link.stats.in_flight -= 1;
            link.stats.record_drop(reason);
            link.stats.assert_balanced();
            out.note(drop_note(packet.id(), reason));
            return Inbound::Dropped {
                id: packet.id(),
                reason,
            };
        }
        if self.timeline.any_active() && self.timeline.blocked(source, target).is_some() {
            return self.hold(now, packet, out);
        }
        let link = &mut self.links[packet.link.index()];
        assert!(now >= packet.sent_at, "a copy arrives before it was sent");
        link.stats.in_flight -= 1;
        link.stats.record_delivery(now - packet.sent_at);
        link.stats.assert_balanced();
        Inbound::Delivered(Arrived {
            id: packet.id(),
            source,
            target,
            sent_at: packet.sent_at,
            size: packet.size,
            duplicate: packet.duplicate(),
            payload: packet.payload,
        })
    }

    fn hold(&mut self, now: SimTime, packet: Packet<P>, out: &mut impl Sink<P>) -> Inbound<P> {
        let id = packet.id();
        let link_id = packet.link;
        let link = &mut self.links[link_id.index()];
        link.held.push_back(packet);
        link.stats.held += 1;
        out.note(NOTE_HOLD ^ id.0);
        let until = match self.timeline.blocked(link.source, link.target) {
            Some(blocked) => blocked.until,
            // Not blocked, only queued behind held copies: their release is due now.
            None => Some(now),
        };
        self.ensure_release(link_id, until, out);
        Inbound::Held { id }
    }

    /// Makes sure a release event of `link` is pending at or before `until` (nothing to do
    /// for an open-ended block: ending the fault schedules the release).
    fn ensure_release(&mut self, link_id: LinkId, until: Option<SimTime>, out: &mut impl Sink<P>) {
        let Some(at) = until else { return };
        let now = self.timeline.now();
        assert!(at >= now, "release scheduled into the past");
        let link = &mut self.links[link_id.index()];
        if link.release_at.is_none_or(|pending| pending > at) {
            link.release_at = Some(at);
            let target = self.nodes[link.target.index()].entity;
            out.schedule(target, at, Delivery(Inner::Release(link_id)));
        }
    }

    /// Ends fault `id` at `now` (a pending fault never starts) and schedules the release of
    /// messages it held. False if it was already over.
    pub fn end_fault(&mut self, now: SimTime, id: FaultId, out: &mut impl Sink<P>) -> bool {
        self.advance(now);
        if !self.timeline.end(id, &mut self.nodes) {
            return false;
        }
        for i in 0..self.links.len() {
            if self.links[i].held.is_empty() {
                continue;
            }
            let (s, t) = (self.links[i].source, self.links[i].target);
            let until = self.timeline.blocked(s, t).map_or(Some(now), |b| b.until);
            self.ensure_release(LinkId(i as u32), until, out);
        }
        true
    }

    /// Crashes `node` at `now` until [`Network::restart`]: messages in flight to or from it
    /// are lost, messages sent to or by it are dropped.
    pub fn crash(&mut self, now: SimTime, node: NodeId) -> FaultId {
        self.node_ref(node);
        self.advance(now);
        let id = self.timeline.add(Effect::Crash(node), now, None);
        self.advance(now);
        id
    }

    /// Restarts `node` at `now` (ends every crash of it); false if it was up.
    pub fn restart(&mut self, now: SimTime, node: NodeId, out: &mut impl Sink<P>) -> bool {
        self.advance(now);
        let crashes = self.timeline.active_crashes(node);
        for &id in &crashes {
            self.end_fault(now, id, out);
        }
        !crashes.is_empty()
    }

    /// Pauses `node` at `now` until [`Network::resume`]: messages that reach it are held.
    pub fn pause(&mut self, now: SimTime, node: NodeId) -> FaultId {
        self.node_ref(node);
        self.advance(now);
        let id = self.timeline.add(Effect::Pause(node), now, None);
        self.advance(now);
        id
    }

    /// Resumes `node` at `now` (ends every pause of it) and schedules the release of what
    /// it held; false if it was not paused.
    pub fn resume(&mut self, now: SimTime, node: NodeId, out: &mut impl Sink<P>) -> bool {
        self.advance(now);
        let pauses = self.timeline.active_pauses(node);
        for &id in &pauses {
            self.end_fault(now, id, out);
        }
        !pauses.is_empty()
    }
}

/// One latency draw, degraded.
#[inline]
fn draw_latency(
    params: &LinkParams,
    degradation: Degradation,
    rng: &mut LazyStream,
) -> SimDuration {
    // A constant latency draws nothing (and never derives its stream); without a
    // degradation there is nothing to apply.
    let latency = match params.latency.as_constant() {
        Some(v) => v,
        None => params.latency.sample(rng.get()),
    };
    if degradation.is_none() {
        latency
    } else {
        degradation.apply(latency)
    }
}

/// The reordering delay of one copy: on a reordering link, a share of the copies waits
/// extra.
#[inline]
fn draw_reorder<P>(link: &mut Link<P>) -> SimDuration {
    match &link.params.order {
        Order::Reorder { ratio, extra } if unit_f64(link.rng_reorder.get()) < *ratio => {
            extra.sample(link.rng_reorder_delay.get())
        }
        _ => SimDuration::ZERO,
    }
}

/// Applies the FIFO clamp (a copy never arrives before one sent earlier on a FIFO link)
/// and remembers the latest arrival.
#[inline]
fn clamp_arrival<P>(link: &mut Link<P>, arrival: SimTime) -> SimTime {
    let arrival = match link.params.order {
        Order::Fifo => arrival.max(link.last_arrival),
        Order::Independent | Order::Reorder { .. } => arrival,
    };
    link.last_arrival = link.last_arrival.max(arrival);
    arrival
}
