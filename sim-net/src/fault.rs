//! The fault timeline: faults resolved to node ids, their start and end edges in time order,
//! and the questions the network asks of the active ones (is this link cut, degraded,
//! blocked?).
//!
//! Faults cost no events: the timeline is applied lazily. Before every network operation at
//! time `now`, the timeline applies the edges at or before `now` in `(time,
//! install order)` order, so the network sees the same state it would if each edge had been
//! an event. The only fault that needs an event of its own is the end of a clog or a pause
//! with messages held (they must be handed over at that instant, not at the next send); the
//! network schedules that release itself when it holds the first message.
//!
//! A fault is active on `[start, end)`: an edge at exactly `now` is applied before the
//! operation at `now`.

use crate::NodeId;
use crate::network::Node;
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// The handle of a fault, for [`crate::end_fault`]; ids follow install order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FaultId(pub(crate) u32);

/// A set of directed links between two groups of nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LinkSet {
    /// Sorted, not empty.
    pub from: Vec<NodeId>,
    /// Sorted; empty means every node not in `from`.
    pub to: Vec<NodeId>,
    pub one_way: bool,
}

impl LinkSet {
    pub fn new(mut from: Vec<NodeId>, mut to: Vec<NodeId>, one_way: bool) -> Self {
        from.sort_unstable();
        from.dedup();
        to.sort_unstable();
        to.dedup();
        assert!(
            !from.is_empty(),
            "a link set needs at least one source node"
        );
        LinkSet { from, to, one_way }
    }

    fn in_to(&self, node: NodeId) -> bool {
        if self.to.is_empty() {
            self.from.binary_search(&node).is_err()
        } else {
            self.to.binary_search(&node).is_ok()
        }
    }

    /// True if the directed link `source → target` belongs to the set.
    pub fn contains(&self, source: NodeId, target: NodeId) -> bool {
        let forward = self.from.binary_search(&source).is_ok() && self.in_to(target);
        let backward =
            !self.one_way && self.from.binary_search(&target).is_ok() && self.in_to(source);
        forward || backward
    }
}

/// What a fault does, with names resolved.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Effect {
    Cut(LinkSet),
    Degrade {
        links: LinkSet,
        latency_factor: f64,
        latency_added: SimDuration,
        loss_ratio: f64,
    },
    Clog(LinkSet),
    Crash(NodeId),
    Pause(NodeId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Pending,
    Active,
    Over,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edge {
    Start,
    End,
}

#[derive(Clone, Debug)]
struct FaultState {
    effect: Effect,
    end: Option<SimTime>,
    phase: Phase,
    start_key: (SimTime, u64),
    end_key: Option<(SimTime, u64)>,
}

/// How a degradation changes the messages sent over one link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Degradation {
    pub latency_factor: f64,
    pub latency_added: SimDuration,
    pub loss_ratio: f64,
}

impl Degradation {
    pub const NONE: Degradation = Degradation {
        latency_factor: 1.0,
        latency_added: SimDuration::ZERO,
        loss_ratio: 0.0,
    };

    #[inline]
    pub fn is_none(&self) -> bool {
        *self == Degradation::NONE
    }

    pub fn apply(&self, latency: SimDuration) -> SimDuration {
        if self.is_none() {
            return latency;
        }
        latency
            .mul_f64(self.latency_factor)
            .saturating_add(self.latency_added)
    }
}

/// Why a link holds its arrivals, and until when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Blocked {
    /// When the last blocking fault ends, if every blocking fault has an end.
    pub until: Option<SimTime>,
}

/// Every installed fault and the edges still to apply.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timeline {
    faults: Vec<FaultState>,
    edges: BTreeMap<(SimTime, u64), (FaultId, Edge)>,
    /// No edge is due before this time (a lower bound: it may be earlier than the first
    /// edge after an `end`), so that `advance` between edges is one comparison.
    next_edge: SimTime,
    next_seq: u64,
    /// Active faults in install order; usually empty, which is the fast path.
    active: Vec<FaultId>,
    now: SimTime,
}

impl Timeline {
    /// The time of the last `advance`.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// True if any fault is active.
    #[inline]
    pub fn any_active(&self) -> bool {
        !self.active.is_empty()
    }

    /// Installs a fault active on `[start, end)`; `start` must not be before the last
    /// `advance` (checked by the caller, which turns it into a user error).
    pub fn add(&mut self, effect: Effect, start: SimTime, end: Option<SimTime>) -> FaultId {
        assert!(start >= self.now, "fault starts in the past");
        assert!(
            end.is_none_or(|end| end > start),
            "fault ends before it starts"
        );
        let id = FaultId(u32::try_from(self.faults.len()).expect("fewer than 2^32 faults"));
        let start_key = self.key(start);
        self.edges.insert(start_key, (id, Edge::Start));
        self.next_edge = self.next_edge.min(start);
        let end_key = end.map(|end| {
            let key = self.key(end);
            self.edges.insert(key, (id, Edge::End));
            key
        });
        self.faults.push(FaultState {
            effect,
            end,
            phase: Phase::Pending,
            start_key,
            end_key,
        });
        id
    }

    fn key(&mut self, time: SimTime) -> (SimTime, u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        (time, seq)
    }

    /// Applies every edge at or before `now`, in time order, then install order. Between
    /// edges (almost always) this is one comparison, inlined at the call site.
    #[inline]
    pub fn advance(&mut self, now: SimTime, nodes: &mut [Node]) {
        assert!(
            now >= self.now,
            "network used at {now}, after it was used at {}",
            self.now
        );
        self.now = now;
        if now >= self.next_edge {
            self.apply_edges(now, nodes);
        }
    }

    #[cold]
    fn apply_edges(&mut self, now: SimTime, nodes: &mut [Node]) {
        self.next_edge = SimTime::MAX;
        while let Some(entry) = self.edges.first_entry() {
            if entry.key().0 > now {
                self.next_edge = entry.key().0;
                break;
            }
            let (id, edge) = entry.remove();
            match edge {
                Edge::Start => self.start(id, nodes),
                Edge::End => self.finish(id, nodes),
            }
        }
    }

    fn start(&mut self, id: FaultId, nodes: &mut [Node]) {
        let fault = &mut self.faults[id.0 as usize];
        assert_eq!(fault.phase, Phase::Pending, "fault started twice");
        fault.phase = Phase::Active;
        match fault.effect {
            Effect::Crash(node) => {
                let node = &mut nodes[node.index()];
                node.down += 1;
                // A new incarnation: copies sent to or by the old one are recognised as
                // lost when they arrive, even after a restart.
                node.incarnation += 1;
            }
            Effect::Pause(node) => nodes[node.index()].paused += 1,
            Effect::Cut(_) | Effect::Degrade { .. } | Effect::Clog(_) => {}
        }
        let at = self.active.partition_point(|&a| a < id);
        self.active.insert(at, id);
    }

    fn finish(&mut self, id: FaultId, nodes: &mut [Node]) {
        let fault = &mut self.faults[id.0 as usize];
        assert_eq!(fault.phase, Phase::Active, "fault ended while not active");
        fault.phase = Phase::Over;
        match fault.effect {
            Effect::Crash(node) => {
                let node = &mut nodes[node.index()];
                assert!(node.down > 0);
                node.down -= 1;
            }
            Effect::Pause(node) => {
                let node = &mut nodes[node.index()];
                assert!(node.paused > 0);
                node.paused -= 1;
            }
            Effect::Cut(_) | Effect::Degrade { .. } | Effect::Clog(_) => {}
        }
        let at = self
            .active
            .binary_search(&id)
            .expect("an active fault is in the active list");
        self.active.remove(at);
    }

    /// Ends fault `id` at `now` (after `advance(now)`): an active fault ends, a pending one
    /// never starts. Returns false if it was already over or `id` is unknown.
    pub fn end(&mut self, id: FaultId, nodes: &mut [Node]) -> bool {
        let now = self.now;
        let Some(fault) = self.faults.get_mut(id.0 as usize) else {
            return false;
        };
        let phase = fault.phase;
        if phase == Phase::Over {
            return false;
        }
        fault.end = Some(now);
        if let Some(key) = fault.end_key.take() {
            self.edges.remove(&key);
        }
        if phase == Phase::Pending {
            fault.phase = Phase::Over;
            let start_key = fault.start_key;
            self.edges.remove(&start_key);
        } else {
            self.finish(id, nodes);
        }
        true
    }

    /// The active faults' effects, in install order.
    fn active_effects(&self) -> impl Iterator<Item = (FaultId, &Effect, Option<SimTime>)> {
        self.active.iter().map(|&id| {
            let fault = &self.faults[id.0 as usize];
            (id, &fault.effect, fault.end)
        })
    }

    /// The active crash faults of `node`.
    pub fn active_crashes(&self, node: NodeId) -> Vec<FaultId> {
        self.matching(|e| matches!(e, Effect::Crash(n) if *n == node))
    }

    /// The active pause faults of `node`.
    pub fn active_pauses(&self, node: NodeId) -> Vec<FaultId> {
        self.matching(|e| matches!(e, Effect::Pause(n) if *n == node))
    }

    fn matching(&self, matches: impl Fn(&Effect) -> bool) -> Vec<FaultId> {
        self.active_effects()
            .filter(|(_, e, _)| matches(e))
            .map(|(id, _, _)| id)
            .collect()
    }

    /// True if an active partition cuts `source → target`.
    #[inline]
    pub fn is_cut(&self, source: NodeId, target: NodeId) -> bool {
        self.any_active()
            && self
                .active_effects()
                .any(|(_, e, _)| matches!(e, Effect::Cut(links) if links.contains(source, target)))
    }

    /// The combined degradation of `source → target`: factors multiply, added latencies
    /// add up, losses combine as independent chances.
    pub fn degradation(&self, source: NodeId, target: NodeId) -> Degradation {
        let mut d = Degradation::NONE;
        for (_, effect, _) in self.active_effects() {
            if let Effect::Degrade {
                links,
                latency_factor,
                latency_added,
                loss_ratio,
            } = effect
                && links.contains(source, target)
            {
                d.latency_factor *= latency_factor;
                d.latency_added = d.latency_added.saturating_add(*latency_added);
                d.loss_ratio = 1.0 - (1.0 - d.loss_ratio) * (1.0 - loss_ratio);
            }
        }
        d
    }

    /// Whether arrivals on `source → target` are held now (a clog on the link or a paused
    /// target), and until when.
    pub fn blocked(&self, source: NodeId, target: NodeId) -> Option<Blocked> {
        let mut blocked: Option<Blocked> = None;
        for (_, effect, end) in self.active_effects() {
            let blocks = match effect {
                Effect::Clog(links) => links.contains(source, target),
                Effect::Pause(node) => *node == target,
                _ => false,
            };
            if blocks {
                let until = match blocked {
                    None => end,
                    Some(b) => b.until.zip(end).map(|(a, b)| a.max(b)),
                };
                blocked = Some(Blocked { until });
            }
        }
        blocked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[u32]) -> Vec<NodeId> {
        list.iter().map(|&i| NodeId(i)).collect()
    }

    #[test]
    fn link_sets_select_between_groups() {
        let both = LinkSet::new(ids(&[0, 1]), ids(&[2]), false);
        assert!(both.contains(NodeId(0), NodeId(2)));
        assert!(both.contains(NodeId(2), NodeId(1)));
        assert!(!both.contains(NodeId(0), NodeId(1)));
        let one_way = LinkSet::new(ids(&[0]), ids(&[2]), true);
        assert!(one_way.contains(NodeId(0), NodeId(2)));
        assert!(!one_way.contains(NodeId(2), NodeId(0)));
        let isolate = LinkSet::new(ids(&[1]), vec![], false);
        assert!(isolate.contains(NodeId(1), NodeId(5)));
        assert!(isolate.contains(NodeId(3), NodeId(1)));
        assert!(!isolate.contains(NodeId(3), NodeId(4)));
        assert!(!isolate.contains(NodeId(1), NodeId(1)));
    }

    #[test]
    fn edges_apply_in_time_order_and_faults_can_end_early() {
        let mut nodes = vec![Node::new("a", None), Node::new("b", None)];
        let mut timeline = Timeline::default();
        let cut = Effect::Cut(LinkSet::new(ids(&[0]), ids(&[1]), false));
        let partition = timeline.add(cut, SimTime::from_secs(1), Some(SimTime::from_secs(2)));
        let crash = timeline.add(Effect::Crash(NodeId(1)), SimTime::from_secs(1), None);
        timeline.advance(SimTime::from_millis(999), &mut nodes);
        assert!(!timeline.is_cut(NodeId(0), NodeId(1)));
        assert_eq!(nodes[1].incarnation, 0);
        timeline.advance(SimTime::from_secs(1), &mut nodes);
        assert!(timeline.is_cut(NodeId(1), NodeId(0)));
        assert_eq!((nodes[1].down, nodes[1].incarnation), (1, 1));
        timeline.advance(SimTime::from_secs(2), &mut nodes);
        assert!(!timeline.is_cut(NodeId(0), NodeId(1)));
        assert!(timeline.end(crash, &mut nodes));
        assert_eq!((nodes[1].down, nodes[1].incarnation), (0, 1));
        assert!(!timeline.end(crash, &mut nodes), "already over");
        assert!(!timeline.end(partition, &mut nodes), "already over");
        assert!(!timeline.any_active());
    }

    #[test]
    fn blocking_lasts_until_the_last_blocking_fault_ends() {
        let mut nodes = vec![Node::new("a", None), Node::new("b", None)];
        let mut timeline = Timeline::default();
        let clog = Effect::Clog(LinkSet::new(ids(&[0]), ids(&[1]), true));
        timeline.add(clog, SimTime::ZERO, Some(SimTime::from_secs(3)));
        timeline.add(
            Effect::Pause(NodeId(1)),
            SimTime::ZERO,
            Some(SimTime::from_secs(5)),
        );
        timeline.advance(SimTime::ZERO, &mut nodes);
        let until = |t: &Timeline, s, d| t.blocked(NodeId(s), NodeId(d)).map(|b| b.until);
        assert_eq!(until(&timeline, 0, 1), Some(Some(SimTime::from_secs(5))));
        assert_eq!(
            until(&timeline, 1, 0),
            None,
            "one-way clog, and a is not paused"
        );
        timeline.advance(SimTime::from_secs(5), &mut nodes);
        assert_eq!(until(&timeline, 0, 1), None);
    }
}
