//! Properties of the network under generated topologies, traffic and fault timelines:
//! partitions are respected, nothing beats the minimum latency, nothing is lost or doubled
//! without loss, duplication or faults, FIFO links keep order, crashed nodes receive
//! nothing, and clogs and pauses delay without losing.

mod common;

use common::{Msg, Record, control_at, deliveries, run, send_at, sends, world};
use proptest::prelude::*;
use sim_core::{Dist, SimDuration, SimTime};
use sim_net::{FaultConfig, FaultKind, LinkConfig, LinkOrder, NetworkConfig, NodeId, SendOutcome};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Partition,
    Crash,
    Clog,
    Pause,
}

/// One generated fault: node indexes and a window in microseconds.
#[derive(Clone, Debug)]
struct FaultPlan {
    shape: Shape,
    from: Vec<usize>,
    to: Vec<usize>,
    one_way: bool,
    start_us: u64,
    length_us: u64,
    /// Installed without an end and ended by an `end_fault` command at the same instant,
    /// instead of by the timeline.
    ended_by_command: bool,
}

impl FaultPlan {
    fn window(&self) -> (SimTime, SimTime) {
        let start = SimTime::from_nanos(self.start_us * 1_000);
        (
            start,
            start + SimDuration::from_micros(self.length_us.max(1)),
        )
    }

    fn active_at(&self, t: SimTime) -> bool {
        let (start, end) = self.window();
        start <= t && t < end
    }

    /// The same selection rule as the network's, written out again as the oracle.
    fn selects(&self, source: usize, target: usize) -> bool {
        let in_to = |n: usize| {
            if self.to.is_empty() {
                !self.from.contains(&n)
            } else {
                self.to.contains(&n)
            }
        };
        (self.from.contains(&source) && in_to(target))
            || (!self.one_way && self.from.contains(&target) && in_to(source))
    }

    fn config(&self) -> FaultConfig {
        let mut config = self.timed_config();
        if self.ended_by_command {
            config.end = None;
        }
        config
    }

    fn timed_config(&self) -> FaultConfig {
        let names = |list: &[usize]| list.iter().map(|i| format!("n{i}")).collect::<Vec<_>>();
        let (from, to, one_way) = (names(&self.from), names(&self.to), self.one_way);
        let kind = match self.shape {
            Shape::Partition => FaultKind::Partition { from, to, one_way },
            Shape::Clog => FaultKind::Clog { from, to, one_way },
            Shape::Crash => FaultKind::Crash {
                node: from[0].clone(),
            },
            Shape::Pause => FaultKind::Pause {
                node: from[0].clone(),
            },
        };
        let (start, end) = self.window();
        FaultConfig::new(start.since_start(), Some(end.since_start()), kind)
    }
}

#[derive(Clone, Debug)]
struct Plan {
    nodes: usize,
    latency_low_us: u64,
    latency_span_us: u64,
    fifo: bool,
    loss_ratio: f64,
    duplicate_ratio: f64,
    /// (send time in µs, source, target)
    sends: Vec<(u64, usize, usize)>,
    faults: Vec<FaultPlan>,
    seed: u64,
}

fn fault_plan(nodes: usize, shapes: Vec<Shape>) -> impl Strategy<Value = FaultPlan> {
    (
        prop::sample::select(shapes),
        prop::collection::vec(0..nodes, 1..=2),
        prop::collection::vec(0..nodes, 0..=2),
        any::<bool>(),
        0u64..200_000,
        1u64..120_000,
        any::<bool>(),
    )
        .prop_map(
            |(shape, from, to, one_way, start_us, length_us, ended_by_command)| FaultPlan {
                shape,
                from,
                to,
                one_way,
                start_us,
                length_us,
                ended_by_command,
            },
        )
}

fn plan(lossy: bool, shapes: Vec<Shape>) -> impl Strategy<Value = Plan> {
    (2usize..=4).prop_flat_map(move |nodes| {
        let faults = if shapes.is_empty() {
            Just(Vec::new()).boxed()
        } else {
            prop::collection::vec(fault_plan(nodes, shapes.clone()), 1..=3).boxed()
        };
        // Drawn either way so both kinds of plan shrink alike; zeroed below when not lossy.
        let ratio = 0.0..0.3;
        (
            Just(nodes),
            0u64..5_000,
            0u64..30_000,
            any::<bool>(),
            ratio.clone(),
            ratio,
            prop::collection::vec((0u64..250_000, 0..nodes, 0..nodes), 1..80),
            faults,
            any::<u64>(),
        )
            .prop_map(
                move |(
                    nodes,
                    latency_low_us,
                    latency_span_us,
                    fifo,
                    loss_ratio,
                    duplicate_ratio,
                    sends,
                    faults,
                    seed,
                )| Plan {
                    nodes,
                    latency_low_us,
                    latency_span_us,
                    fifo,
                    loss_ratio: if lossy { loss_ratio } else { 0.0 },
                    duplicate_ratio: if lossy { duplicate_ratio } else { 0.0 },
                    sends,
                    faults,
                    seed,
                },
            )
    })
}

/// Runs a plan and returns its log.
fn check(plan: &Plan) -> Vec<Record> {
    let low = SimDuration::from_micros(plan.latency_low_us);
    let config = NetworkConfig {
        default_link: LinkConfig {
            latency: Dist::Uniform {
                low,
                high: low + SimDuration::from_micros(plan.latency_span_us),
            },
            loss_ratio: plan.loss_ratio,
            duplicate_ratio: plan.duplicate_ratio,
            order: if plan.fifo {
                LinkOrder::Fifo
            } else {
                LinkOrder::Independent
            },
            bandwidth: None,
        },
        links: vec![],
        faults: vec![],
    };
    let (mut sim, nodes) = world(plan.seed, plan.nodes, &config);
    for fault in &plan.faults {
        let id = sim.shared_mut().net.add_fault(&fault.config()).unwrap();
        if fault.ended_by_command {
            control_at(&mut sim, fault.window().1, nodes[0], Msg::EndFault(id));
        }
    }
    for (tag, &(at_us, s, t)) in plan.sends.iter().enumerate() {
        send_at(
            &mut sim,
            SimTime::from_nanos(at_us * 1_000),
            nodes[s],
            nodes[t],
            tag as u64,
        );
    }
    let log = run(&mut sim);
    let totals = sim.shared().net.totals();
    assert_eq!(totals.in_flight, 0, "every copy ended: {totals:?}");
    assert_eq!(totals.sent, plan.sends.len() as u64);
    log
}

fn index(node: NodeId) -> usize {
    node.as_u32() as usize
}

/// Delivery order per link is send order (ids are handed out in send order).
fn assert_fifo(log: &[Record]) -> Result<(), TestCaseError> {
    let mut last = std::collections::BTreeMap::new();
    for (at, s, t, id, ..) in deliveries(log) {
        if let Some(previous) = last.insert((s, t), id) {
            prop_assert!(
                previous <= id,
                "{s:?}->{t:?}: {id:?} delivered at {at} after {previous:?}"
            );
        }
    }
    Ok(())
}

/// Every message sent is delivered exactly once.
fn assert_exactly_once(plan: &Plan, log: &[Record]) -> Result<(), TestCaseError> {
    let mut tags: Vec<u64> = deliveries(log).iter().map(|d| d.5).collect();
    tags.sort_unstable();
    let expected: Vec<u64> = (0..plan.sends.len() as u64).collect();
    prop_assert_eq!(tags, expected);
    let all_scheduled = sends(log)
        .iter()
        .all(|s| matches!(s.4, SendOutcome::Scheduled { .. }));
    prop_assert!(all_scheduled, "a message was dropped at send time");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn partitions_crashes_and_latency_bounds_hold(
        plan in plan(true, vec![Shape::Partition, Shape::Crash])
    ) {
        let log = check(&plan);
        let low = SimDuration::from_micros(plan.latency_low_us);
        for (at, s, t, id, sent_at, _) in deliveries(&log) {
            prop_assert!(at >= sent_at + low, "{id:?} sent at {sent_at} arrived at {at}, below {low}");
            let (si, ti) = (index(s), index(t));
            for f in &plan.faults {
                let (start, end) = f.window();
                match f.shape {
                    Shape::Partition => prop_assert!(
                        !(f.active_at(at) && f.selects(si, ti)),
                        "{id:?} delivered across {f:?} at {at}"
                    ),
                    Shape::Crash => {
                        let node = f.from[0];
                        // Down on [start, end), and whatever was in flight when it went
                        // down is lost too.
                        prop_assert!(
                            !((node == si || node == ti) && start <= at && end > sent_at),
                            "{id:?} ({si}->{ti}, sent {sent_at}, delivered {at}) survived {f:?}"
                        );
                    }
                    Shape::Clog | Shape::Pause => unreachable!(),
                }
            }
        }
        if plan.fifo {
            assert_fifo(&log)?;
        }
    }

    #[test]
    fn without_loss_duplication_or_faults_every_message_arrives_once(
        plan in plan(false, vec![])
    ) {
        let log = check(&plan);
        assert_exactly_once(&plan, &log)?;
        if plan.fifo {
            assert_fifo(&log)?;
        }
    }

    #[test]
    fn clogs_and_pauses_delay_but_never_lose_or_reorder(
        plan in plan(false, vec![Shape::Clog, Shape::Pause])
    ) {
        let log = check(&plan);
        assert_exactly_once(&plan, &log)?;
        if plan.fifo {
            assert_fifo(&log)?;
        }
        for (at, s, t, id, ..) in deliveries(&log) {
            let (si, ti) = (index(s), index(t));
            for f in &plan.faults {
                let blocks = match f.shape {
                    Shape::Clog => f.selects(si, ti),
                    Shape::Pause => f.from[0] == ti,
                    _ => unreachable!(),
                };
                prop_assert!(!(blocks && f.active_at(at)), "{id:?} delivered at {at} during {f:?}");
            }
        }
    }
}
