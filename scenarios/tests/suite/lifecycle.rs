//! A replica's life where two causes meet: a pause and a deploy, two crash faults, a crash
//! and a zone failure, a crash and the liveness probes' count, a zone failure under cells,
//! as the report tells them (paused time, failures by reason, the success over time, the
//! liveness figures).

use crate::support;

use serde_json::Value;
use support::{failures, run_text, with_json};

/// Successes over offered requests in the report buckets starting in `[from_s, until_s)`.
fn success_between(json: &Value, from_s: f64, until_s: f64) -> (u64, u64) {
    let (mut offered, mut ok) = (0, 0);
    for row in json["series"].as_array().expect("a series") {
        let t = row["t_s"].as_f64().expect("a bucket start");
        if t >= from_s && t < until_s {
            offered += row["offered"].as_u64().expect("offered");
            ok += row["successes"].as_u64().expect("successes");
        }
    }
    (ok, offered)
}

fn capacity_events(json: &Value) -> &Value {
    &json["services"][0]["capacity_events"]
}

/// One api of `replicas` replicas (one worker, 1ms of work) under 100 requests a second,
/// with `extra` service fields and `faults`.
fn api(replicas: u32, extra: &str, faults: &str) -> String {
    format!(
        r#"Scenario(
    name: "lifecycle",
    duration: "10s",
    bucket: "500ms",
    clients: {{ "users": (load: Open(rate: Constant("100/s")), call: (target: "api", timeout: "1s")) }},
    services: {{ "api": (replicas: {replicas}, workers: 1, work: Constant(value: "1ms"), balancer: RoundRobin, {extra}) }},
    faults: [{faults}],
)"#
    )
}

#[test]
fn a_replica_stopped_while_paused_is_not_counted_paused_after_it_stops() {
    // Replica 0 is paused from 1s for 8s; the deploy takes it out at 2s and stops it at 3s
    // (then it is back, a new process that no pause holds). Paused: 1s to 3s.
    let (_, json) = with_json(run_text(&api(
        2,
        "",
        r#"(at: "1s", duration: "8s", kind: Pause(service: "api", replicas: Some(1))),
           (at: "2s", kind: Deploy(service: "api", batch: 1, downtime: "1s", warmup: "1s"))"#,
    )));
    assert_eq!(capacity_events(&json)["pauses"], 1);
    assert_eq!(capacity_events(&json)["paused_s"], 2.0);
}

#[test]
fn a_replica_two_crash_faults_hold_is_down_until_the_last_one_ends() {
    // Crashed at 1s by the first fault and again at 1.5s by the second: the first fault's
    // end at 2s does not bring it back while the second still holds it, until 3s.
    let (report, json) = with_json(run_text(&api(
        1,
        "",
        r#"(at: "1s", duration: "1s", kind: Crash(service: "api")),
           (at: "1500ms", duration: "1500ms", kind: Crash(service: "api"))"#,
    )));
    let (ok, offered) = success_between(&json, 1.0, 3.0);
    assert!(offered >= 190, "{offered}");
    assert_eq!(
        ok, 0,
        "no success while a crash fault holds the only replica"
    );
    let (ok, offered) = success_between(&json, 3.0, 10.0);
    assert_eq!(ok, offered, "every request after the last fault ends");
    assert!(failures(&report, "unavailable") >= 190);
}

#[test]
fn a_replica_crashed_when_its_zone_fails_comes_back_with_the_zone() {
    // Replica 0 (zone 0) crashes at 1s; zone 0 fails at 2s, while it is down; the crash
    // ends at 3s with the zone still failed, so it waits for the zone, back at 5s. From
    // then on every replica serves again.
    let (report, json) = with_json(run_text(&api(
        3,
        "zones: Some(3)",
        r#"(at: "1s", duration: "2s", kind: Crash(service: "api", replicas: Some(1))),
           (at: "2s", duration: "3s", kind: ZoneFailure(zone: 0))"#,
    )));
    let (ok, offered) = success_between(&json, 5.5, 10.0);
    assert!(offered > 400, "{offered}");
    assert_eq!(ok, offered, "replica 0 is back after its zone");
    // Before the zone failed, a third of the requests met the crashed replica.
    let (ok, offered) = success_between(&json, 1.0, 2.0);
    assert!(ok < offered, "{ok}/{offered}");
    assert!(failures(&report, "unavailable") > 0);
}

#[test]
fn a_restarted_replica_starts_its_liveness_probes_afresh() {
    // Twenty requests of 400ms each from 0s keep the one worker busy: the probes at 1s and
    // 2s wait behind them and fail (2 of the 3 failures in a row that restart it). The
    // replica crashes at 2.7s (its queue is lost) and is back at 2.8s, a new process whose
    // probes count from zero: the pause from 3s to 3.6s fails one probe, not three, so the
    // probes never restart it.
    let text = r#"Scenario(
    name: "probes-at-a-crash",
    duration: "10s",
    clients: { "users": (load: OneShot(users: 20), call: (target: "api", timeout: "20s")) },
    services: { "api": (
        workers: 1,
        queue: (capacity: 30),
        work: Constant(value: "400ms"),
        liveness: Some((period: "1s", timeout: "500ms", failure_threshold: 3, served_by: Workers)),
    ) },
    faults: [
        (at: "2700ms", duration: "100ms", kind: Crash(service: "api")),
        (at: "3s", duration: "600ms", kind: Pause(service: "api")),
    ],
)"#;
    let (_, json) = with_json(run_text(text));
    let events = capacity_events(&json);
    assert_eq!(events["liveness_probe_failures"], 3, "{events}");
    assert_eq!(events["liveness_restarts"], 0, "{events}");
}

#[test]
fn a_cell_sends_its_requests_to_its_replicas_in_rotation() {
    // Two cells of two replicas over two zones: cell 0 is replicas 0 and 1, zone 0 is
    // replicas 0 and 2. With zone 0 failed each cell still has a replica in rotation,
    // with room for every request.
    let text = r#"Scenario(
    name: "cells-over-zones",
    duration: "10s",
    bucket: "500ms",
    clients: { "users": (
        load: Open(rate: Constant("100/s")),
        call: (target: "api", timeout: "1s"),
        classes: [(name: "customer", share: 1, tenants: (keys: 100, first: 1))],
    ) },
    services: { "api": (
        replicas: 4,
        workers: 1,
        work: Constant(value: "1ms"),
        balancer: RoundRobin,
        isolation: Cells(count: 2),
        zones: Some(2),
        restart: "1s",
    ) },
    faults: [(at: "2s", duration: "3s", kind: ZoneFailure(zone: 0))],
)"#;
    let (report, json) = with_json(run_text(text));
    let (ok, offered) = success_between(&json, 0.0, 10.0);
    assert!(offered > 900, "{offered}");
    assert_eq!(
        ok,
        offered,
        "{} unavailable",
        failures(&report, "unavailable")
    );
}

#[test]
fn a_replica_the_scaler_parked_is_not_a_lost_one() {
    // Two cells of two replicas (cell 0: replicas 0 and 1; cell 1: 2 and 3) at a tenth of
    // their capacity: the scaler parks the highest slot, replica 3, within the first
    // seconds. The crash at 20s takes the three in rotation: cell 0 lost all its replicas,
    // cell 1 lost one (its other one was parked, not lost). The units' draw puts 55 of the
    // 100 in cell 0.
    let text = r#"Scenario(
    name: "parked-is-not-lost",
    duration: "30s",
    clients: { "users": (
        load: Open(rate: Constant("100/s")),
        call: (target: "api", timeout: "1s"),
        classes: [(name: "customer", share: 1, tenants: (keys: 100, first: 1))],
    ) },
    services: { "api": (
        replicas: 4,
        workers: 4,
        work: Constant(value: "4ms"),
        isolation: Cells(count: 2),
        autoscale: (
            min_replicas: 3,
            max_replicas: 4,
            metric: Utilisation(target_ratio: 0.6),
            period: "1s",
            delay: "0s",
            startup: "1s",
            drain: "1s",
            scale_in_stabilisation: "1s",
        ),
    ) },
    faults: [(at: "20s", duration: "5s", kind: Crash(service: "api", replicas: Some(3)))],
)"#;
    let report = run_text(text);
    let blast = support::service_report(&report, "api")
        .blast_radius
        .as_ref()
        .expect("an isolated service reports its blast radius");
    assert_eq!(blast.units, 100);
    assert_eq!(blast.units_lost_all, 55, "{blast:?}");
    assert_eq!(blast.units_lost_some, 45, "{blast:?}");
}
