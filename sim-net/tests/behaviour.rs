//! What a user sees the network do, one behaviour at a time: crashes and restarts, clogs,
//! pauses, degradation, one-way partitions, rules, bandwidth, duplication, reordering,
//! configuration errors and determinism.
//!
//! Every test goes through `check`: a network config (RON), a script of commands, and the
//! readable outcome lines it produces.

mod common;

use common::{Msg, Record, World, control_at, run, send_at, world};
use sim_core::{Seed, SimDuration, SimTime};
use sim_net::{NetworkConfig, Verdict};

/// A command of a test script, at a time in milliseconds.
enum Cmd {
    Send(usize, usize, u64),
    Crash(usize),
    Restart(usize),
    Pause(usize),
    Resume(usize),
}

fn config(text: &str) -> NetworkConfig {
    ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .from_str(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Runs `script` on three nodes n0, n1, n2 with `network` (RON) and returns one line per
/// drop, hold and delivery: `<time> <source>-><target> #<tag> <what>`.
fn check(network: &str, script: &[(u64, Cmd)]) -> Vec<String> {
    check_with(network, script, |_| {})
}

fn check_with(network: &str, script: &[(u64, Cmd)], setup: impl FnOnce(&mut World)) -> Vec<String> {
    let (mut sim, nodes) = world(1, 3, &config(network));
    setup(sim.shared_mut());
    for (ms, cmd) in script {
        let at = SimTime::from_millis(*ms);
        match *cmd {
            Cmd::Send(s, t, tag) => send_at(&mut sim, at, nodes[s], nodes[t], tag),
            Cmd::Crash(n) => control_at(&mut sim, at, nodes[n], Msg::Crash),
            Cmd::Restart(n) => control_at(&mut sim, at, nodes[n], Msg::Restart),
            Cmd::Pause(n) => control_at(&mut sim, at, nodes[n], Msg::Pause),
            Cmd::Resume(n) => control_at(&mut sim, at, nodes[n], Msg::Resume),
        }
    }
    let log = run(&mut sim);
    let net = &sim.shared().net;
    let name = |n| net.node_name(n).to_string();
    // Which message each id is: drops and holds only name the id.
    let mut messages = std::collections::BTreeMap::new();
    let mut lines = Vec::new();
    for record in &log {
        match record {
            Record::Sent {
                at,
                source,
                target,
                tag,
                outcome,
            } => {
                let label = format!("{}->{} #{tag}", name(*source), name(*target));
                if let sim_net::SendOutcome::Dropped { reason, .. } = outcome {
                    lines.push(format!(
                        "{} {label} dropped at send: {reason}",
                        at.since_start()
                    ));
                }
                messages.insert(outcome.id(), label);
            }
            Record::Delivered {
                at,
                id,
                sent_at,
                duplicate,
                ..
            } => lines.push(format!(
                "{} {} delivered{} (sent {})",
                at.since_start(),
                messages[id],
                if *duplicate { " again" } else { "" },
                sent_at.since_start()
            )),
            Record::Dropped { at, id, reason } => lines.push(format!(
                "{} {} dropped: {reason}",
                at.since_start(),
                messages[id]
            )),
            Record::Held { at, id } => {
                lines.push(format!("{} {} held", at.since_start(), messages[id]))
            }
        }
    }
    lines
}

const TEN_MS: &str = r#"(default_link: (latency: Constant(value: "10ms")))"#;

#[test]
fn a_crash_loses_messages_in_flight_and_drops_new_ones_until_the_restart() {
    let lines = check(
        TEN_MS,
        &[
            (0, Cmd::Send(0, 1, 1)),
            (5, Cmd::Crash(1)),
            (6, Cmd::Send(0, 1, 2)),
            (6, Cmd::Send(1, 0, 3)),
            (7, Cmd::Restart(1)),
            (8, Cmd::Send(0, 1, 4)),
            (20, Cmd::Send(0, 1, 5)),
            (25, Cmd::Crash(0)),
            (26, Cmd::Restart(0)),
        ],
    );
    assert_eq!(
        lines,
        [
            "6ms n0->n1 #2 dropped at send: target_down",
            "6ms n1->n0 #3 dropped at send: source_down",
            "10ms n0->n1 #1 dropped: target_crashed",
            "18ms n0->n1 #4 delivered (sent 8ms)",
            "30ms n0->n1 #5 dropped: source_crashed",
        ]
    );
}

#[test]
fn a_clog_holds_messages_and_hands_them_over_in_order_when_it_ends() {
    let network = r#"(
        default_link: (latency: Constant(value: "10ms")),
        faults: [(start: "12ms", end: "30ms", kind: Clog(from: ["n0"], to: ["n1"], one_way: true))],
    )"#;
    let script: Vec<_> = (0..5).map(|i| (i * 5, Cmd::Send(0, 1, i))).collect();
    let lines = check(network, &script);
    assert_eq!(
        lines,
        [
            "10ms n0->n1 #0 delivered (sent 0s)",
            "15ms n0->n1 #1 held",
            "20ms n0->n1 #2 held",
            "25ms n0->n1 #3 held",
            "30ms n0->n1 #1 delivered (sent 5ms)",
            "30ms n0->n1 #4 held",
            "30ms n0->n1 #2 delivered (sent 10ms)",
            "30ms n0->n1 #3 delivered (sent 15ms)",
            "30ms n0->n1 #4 delivered (sent 20ms)",
        ],
        "#4 arrives as the clog ends, while #2 and #3 still wait: it waits behind them"
    );
}

#[test]
fn a_paused_node_gets_its_messages_when_it_resumes() {
    let lines = check(
        TEN_MS,
        &[
            (0, Cmd::Pause(1)),
            (0, Cmd::Send(0, 1, 1)),
            (1, Cmd::Send(2, 1, 2)),
            (2, Cmd::Send(1, 0, 3)),
            (50, Cmd::Resume(1)),
        ],
    );
    assert_eq!(
        lines,
        [
            "10ms n0->n1 #1 held",
            "11ms n2->n1 #2 held",
            "12ms n1->n0 #3 delivered (sent 2ms)",
            "50ms n0->n1 #1 delivered (sent 0s)",
            "50ms n2->n1 #2 delivered (sent 1ms)",
        ]
    );
}

#[test]
fn a_crash_during_a_hold_loses_the_held_messages() {
    let network = r#"(
        default_link: (latency: Constant(value: "10ms")),
        faults: [
            (start: "0s", end: "40ms", kind: Clog(from: ["n0"], to: ["n1"])),
            (start: "20ms", end: "30ms", kind: Crash(node: "n1")),
        ],
    )"#;
    let lines = check(
        network,
        &[(0, Cmd::Send(0, 1, 1)), (35, Cmd::Send(0, 1, 2))],
    );
    assert_eq!(
        lines,
        [
            "10ms n0->n1 #1 held",
            "40ms n0->n1 #1 dropped: target_crashed",
            "45ms n0->n1 #2 delivered (sent 35ms)",
        ]
    );
}

#[test]
fn a_one_way_partition_cuts_one_direction_and_in_flight_messages() {
    let network = r#"(
        default_link: (latency: Constant(value: "10ms")),
        faults: [(start: "5ms", end: "50ms", kind: Partition(from: ["n0"], to: ["n1"], one_way: true))],
    )"#;
    let lines = check(
        network,
        &[
            (0, Cmd::Send(0, 1, 1)),
            (6, Cmd::Send(0, 1, 2)),
            (6, Cmd::Send(1, 0, 3)),
            (6, Cmd::Send(0, 2, 4)),
            (50, Cmd::Send(0, 1, 5)),
        ],
    );
    assert_eq!(
        lines,
        [
            "6ms n0->n1 #2 dropped at send: partitioned",
            "10ms n0->n1 #1 dropped: partitioned",
            "16ms n1->n0 #3 delivered (sent 6ms)",
            "16ms n0->n2 #4 delivered (sent 6ms)",
            "60ms n0->n1 #5 delivered (sent 50ms)",
        ]
    );
}

#[test]
fn degradation_multiplies_and_adds_latency_and_adds_loss() {
    let network = |order: &str| {
        format!(
            r#"(
        default_link: (latency: Constant(value: "10ms"){order}),
        faults: [
            (start: "10ms", end: "20ms", kind: Degrade(from: ["n0"], to: ["n1"], latency_factor: 3, latency_added: "1ms")),
            (start: "20ms", end: "30ms", kind: Degrade(from: ["n0"], loss_ratio: 1)),
        ],
    )"#
        )
    };
    let script: Vec<_> = [0, 10, 20, 30]
        .into_iter()
        .map(|ms| (ms, Cmd::Send(0, 1, ms)))
        .collect();
    assert_eq!(
        check(&network(""), &script),
        [
            "10ms n0->n1 #0 delivered (sent 0s)",
            "20ms n0->n1 #20 dropped at send: lost",
            "40ms n0->n1 #30 delivered (sent 30ms)",
            "41ms n0->n1 #10 delivered (sent 10ms)",
        ],
        "#30 is not degraded: it takes its own 10ms"
    );
    assert_eq!(
        check(&network(", order: Fifo"), &script),
        [
            "10ms n0->n1 #0 delivered (sent 0s)",
            "20ms n0->n1 #20 dropped at send: lost",
            "41ms n0->n1 #10 delivered (sent 10ms)",
            "41ms n0->n1 #30 delivered (sent 30ms)",
        ],
        "#30 is not degraded but waits for #10 (FIFO)"
    );
}

#[test]
fn rules_run_in_install_order_and_the_first_drop_wins() {
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen_by_rule = seen.clone();
    let script: Vec<_> = (0..4).map(|i| (i, Cmd::Send(0, 1, i))).collect();
    let lines = check_with(TEN_MS, &script, |world| {
        world
            .net
            .add_rule(|_now, m: &sim_net::MessageView<'_, u64>| match *m.payload {
                1 => Verdict::Drop,
                2 => Verdict::Delay(SimDuration::from_millis(30)),
                _ => Verdict::Pass,
            });
        world
            .net
            .add_rule(move |_now, m: &sim_net::MessageView<'_, u64>| {
                seen_by_rule.borrow_mut().push(*m.payload);
                Verdict::Pass
            });
    });
    assert_eq!(
        lines,
        [
            "1ms n0->n1 #1 dropped at send: rule",
            "10ms n0->n1 #0 delivered (sent 0s)",
            "13ms n0->n1 #3 delivered (sent 3ms)",
            "42ms n0->n1 #2 delivered (sent 2ms)",
        ]
    );
    assert_eq!(*seen.borrow(), [0, 2, 3], "the second rule never saw #1");
}

#[test]
fn limited_bandwidth_serializes_and_tail_drops() {
    let network = r#"(default_link: (
        latency: Constant(value: "10ms"),
        bandwidth: (bytes_per_second: 1000, queue_capacity: 2),
    ))"#;
    // Each message is 100 bytes: 100ms on the wire.
    let script: Vec<_> = [0, 0, 0, 150]
        .into_iter()
        .enumerate()
        .map(|(i, ms)| (ms, Cmd::Send(0, 1, i as u64)))
        .collect();
    assert_eq!(
        check(network, &script),
        [
            "0s n0->n1 #2 dropped at send: queue_full",
            "110ms n0->n1 #0 delivered (sent 0s)",
            "210ms n0->n1 #1 delivered (sent 0s)",
            "310ms n0->n1 #3 delivered (sent 150ms)",
        ]
    );
}

#[test]
fn duplicates_arrive_twice_with_their_own_latency() {
    let network = r#"(default_link: (
        latency: Uniform(low: "10ms", high: "20ms"),
        duplicate_ratio: 1,
        order: Independent,
    ))"#;
    let lines = check(network, &[(0, Cmd::Send(0, 1, 7))]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("#7 delivered (sent")));
    assert!(lines.iter().any(|l| l.contains("#7 delivered again")));
}

/// The tags in delivery order on n0 → n1.
fn delivery_order(network: &str) -> Vec<u64> {
    let script: Vec<_> = (0..200).map(|i| (i, Cmd::Send(0, 1, i))).collect();
    check(network, &script)
        .iter()
        .map(|line| {
            let tag = line.split('#').nth(1).unwrap();
            tag.split(' ').next().unwrap().parse().unwrap()
        })
        .collect()
}

#[test]
fn fifo_links_never_reorder_and_reordering_links_do() {
    let sorted: Vec<u64> = (0..200).collect();
    let fifo = r#"(default_link: (latency: Uniform(low: "1ms", high: "50ms"), order: Fifo))"#;
    assert_eq!(delivery_order(fifo), sorted);
    // By default each message takes its own draw, so jitter alone reorders.
    let jittery = r#"(default_link: (latency: Uniform(low: "1ms", high: "50ms")))"#;
    assert_ne!(delivery_order(jittery), sorted);
    let reordering = r#"(default_link: (
        latency: Constant(value: "5ms"),
        order: Reorder(reordered_ratio: 0.2, extra_delay: Constant(value: "3500us")),
    ))"#;
    let order = delivery_order(reordering);
    assert_ne!(order, sorted);
    let overtaken = order.windows(2).filter(|w| w[0] > w[1]).count();
    assert!((20..=60).contains(&overtaken), "{overtaken} of 200");
}

#[test]
fn configuration_errors_name_the_path_and_the_known_nodes() {
    let (mut sim, _) = world(1, 2, &NetworkConfig::default());
    let net = &mut sim.shared_mut().net;
    let err = net
        .configure(&config(
            r#"(faults: [(start: "1s", kind: Partition(from: ["n0"], to: ["n1", "db"]))])"#,
        ))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "faults[0].kind.to[1]: unknown node \"db\" (known nodes: n0, n1)"
    );
    let err = net
        .configure(&config(r#"(links: [(from: "n9", to: "n0", link: ())])"#))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "links[0].from: unknown node \"n9\" (known nodes: n0, n1)"
    );
    let entity = net.node_entity(net.node("n0").unwrap());
    assert_eq!(
        net.add_node("n1", entity).unwrap_err().to_string(),
        "name: node \"n1\" is already registered; give each node its own name"
    );
}

/// The arrival times on n0 → n1 and the digest of a run with random latency and loss,
/// optionally with a third node also sending.
fn arrivals(seed: u64, with_third_node: bool) -> (Vec<SimTime>, String) {
    let network = r#"(default_link: (latency: Exponential(mean: "20ms"), loss_ratio: 0.1, order: Independent))"#;
    let (mut sim, nodes) = world(seed, 3, &config(network));
    for i in 0..100 {
        send_at(&mut sim, SimTime::from_millis(i), nodes[0], nodes[1], i);
        if with_third_node {
            send_at(
                &mut sim,
                SimTime::from_millis(i),
                nodes[2],
                nodes[1],
                1000 + i,
            );
        }
    }
    let log = run(&mut sim);
    let times = log
        .iter()
        .filter_map(|r| match r {
            Record::Delivered { at, tag, .. } if *tag < 1000 => Some(*at),
            _ => None,
        })
        .collect();
    (times, sim.digest().to_string())
}

#[test]
fn same_seed_same_history_and_other_links_do_not_shift_the_numbers() {
    let (times, digest) = arrivals(5, false);
    assert_eq!(arrivals(5, false), (times.clone(), digest.clone()));
    let (other_times, other_digest) = arrivals(6, false);
    assert_ne!(other_times, times);
    assert_ne!(other_digest, digest);
    let (times_with_third, digest_with_third) = arrivals(5, true);
    assert_eq!(times_with_third, times, "n0->n1 draws from its own streams");
    assert_ne!(digest_with_third, digest);
}

/// The deliveries and drops after `from` of a world on a lossy network (n0->n1 in use
/// before `from`, n2->n1 first used after it), and its digest; if `copy` is given, the world
/// is copied at `from`, the copy reseeded with the seed given, if any, and continued instead.
fn continued(from: SimTime, copy: Option<Option<Seed>>) -> (Vec<Record>, String) {
    let network = r#"(default_link: (latency: Exponential(mean: "20ms"), loss_ratio: 0.2, order: Independent))"#;
    let (mut sim, nodes) = world(5, 3, &config(network));
    for i in 0..200 {
        let at = SimTime::from_millis(i);
        send_at(&mut sim, at, nodes[0], nodes[1], i);
        if at > from {
            send_at(&mut sim, at, nodes[2], nodes[1], 1000 + i);
        }
    }
    if let Some(branch) = copy {
        sim.run_until(from);
        sim = sim.clone();
        if let Some(seed) = branch {
            sim.shared_mut().net.reseed(seed);
        }
    }
    let log = run(&mut sim);
    let after = log
        .into_iter()
        .filter(|r| matches!(r, Record::Delivered { at, .. } | Record::Dropped { at, .. } if *at > from))
        .collect();
    (after, sim.digest().to_string())
}

#[test]
fn a_copied_network_goes_on_as_the_original_and_a_reseeded_one_draws_anew() {
    let from = SimTime::from_millis(100);
    let (original, digest) = continued(from, None);
    assert_eq!(
        continued(from, Some(None)),
        (original.clone(), digest.clone())
    );
    let (branched, branched_digest) = continued(from, Some(Some(Seed(5).branch(1, 0))));
    assert_ne!(branched_digest, digest);
    // Both links draw anew: the one in use before the copy and the one first used after.
    for tags in [0..1000, 1000..2000] {
        let of = |log: &[Record]| -> Vec<Record> {
            log.iter()
                .filter(|r| match r {
                    Record::Delivered { tag, .. } => tags.contains(tag),
                    _ => false,
                })
                .cloned()
                .collect()
        };
        assert_ne!(of(&branched), of(&original), "tags {tags:?}");
    }
    assert_eq!(
        continued(from, Some(Some(Seed(5).branch(1, 0)))),
        (branched, branched_digest),
        "a branch is replayed by its seed"
    );
}

#[test]
fn the_report_lists_each_used_link_with_drops_by_reason() {
    let network = r#"(
        default_link: (latency: Constant(value: "10ms")),
        faults: [(start: "5ms", kind: Partition(from: ["n1"]))],
    )"#;
    let (mut sim, nodes) = world(1, 3, &config(network));
    send_at(&mut sim, SimTime::ZERO, nodes[0], nodes[1], 1);
    send_at(&mut sim, SimTime::ZERO, nodes[0], nodes[2], 2);
    send_at(&mut sim, SimTime::from_millis(6), nodes[1], nodes[0], 3);
    run(&mut sim);
    let report = sim.shared().net.report();
    let text: Vec<String> = report
        .iter()
        .map(|r| {
            format!(
                "{}->{} sent={} delivered={} in_flight={} dropped={:?} p99={:.1}ms",
                r.source, r.target, r.sent, r.delivered, r.in_flight, r.dropped, r.latency_ms_p99
            )
        })
        .collect();
    assert_eq!(
        text,
        [
            "n0->n1 sent=1 delivered=0 in_flight=0 dropped={\"partitioned\": 1} p99=0.0ms",
            "n0->n2 sent=1 delivered=1 in_flight=0 dropped={} p99=10.0ms",
            "n1->n0 sent=1 delivered=0 in_flight=0 dropped={\"partitioned\": 1} p99=0.0ms",
        ]
    );
}

/// Per tag on n0 → n1: the first copy's arrival time, or `None` if it was lost.
fn first_copies(duplicate_ratio: f64) -> Vec<Option<SimTime>> {
    let network = format!(
        r#"(default_link: (latency: Normal(mean: "20ms", std_dev: "15ms"), loss_ratio: 0.2, duplicate_ratio: {duplicate_ratio}, order: Independent))"#
    );
    let (mut sim, nodes) = world(9, 2, &config(&network));
    for i in 0..200 {
        send_at(&mut sim, SimTime::from_millis(i), nodes[0], nodes[1], i);
    }
    let log = run(&mut sim);
    let mut first = vec![None; 200];
    for record in &log {
        if let Record::Delivered {
            at,
            tag,
            duplicate: false,
            ..
        } = record
        {
            first[*tag as usize] = Some(*at);
        }
    }
    first
}

#[test]
fn turning_on_duplication_changes_neither_losses_nor_first_copy_latencies() {
    let without = first_copies(0.0);
    let with = first_copies(0.5);
    assert_eq!(without, with);
    let lost = without.iter().filter(|t| t.is_none()).count();
    assert!((20..=60).contains(&lost), "{lost} of 200 lost");
}
