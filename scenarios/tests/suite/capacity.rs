//! Capacity events: stop-the-world pauses, zone failures and liveness probes (the death
//! spiral), through the reports a user reads (the JSON report's `capacity_events` section,
//! its per-bucket `liveness_restarts`, the CSV columns, latency and goodput).

use crate::support;

use scenarios::report::{Format, Report};
use serde_json::Value;
use support::{run_library_with, run_text, with_json};

/// The success ratio of the requests offered in the buckets starting at or after `from_s`.
fn success_after(json: &Value, from_s: f64) -> f64 {
    let (mut offered, mut ok) = (0, 0);
    for row in json["series"].as_array().unwrap() {
        if row["t_s"].as_f64().unwrap() >= from_s {
            offered += row["offered"].as_u64().unwrap();
            ok += row["successes"].as_u64().unwrap();
        }
    }
    ok as f64 / offered as f64
}

/// The longest latency, in whole milliseconds (the histogram keeps three digits).
fn max_ms(report: &Report) -> u64 {
    report.summary.latency_ms.as_ref().unwrap().max as u64
}

fn events(json: &Value) -> &Value {
    &json["services"][0]["capacity_events"]
}

/// One request at time 0 on a replica of one worker, 100ms of work, and a pause of 200ms
/// at `at`.
fn one_request(at: &str) -> String {
    format!(
        r#"Scenario(
    name: "one-request",
    duration: "2s",
    clients: {{ "user": (load: OneShot(users: 1), call: (target: "api", timeout: "10s")) }},
    services: {{ "api": (workers: 1, work: Constant(value: "100ms")) }},
    faults: [(at: "{at}", duration: "200ms", kind: Pause(service: "api"))],
)"#
    )
}

#[test]
fn a_pause_freezes_the_work_in_progress_and_holds_arrivals_in_the_queue() {
    // Work under way when the pause starts (at 50ms) resumes after it: 100ms + 200ms.
    let (report, json) = with_json(run_text(&one_request("50ms")));
    assert_eq!(report.summary.successes, 1);
    assert_eq!(max_ms(&report), 300);
    assert_eq!(events(&json)["pauses"], 1);
    assert_eq!(events(&json)["paused_s"], 0.2);
    // A request that arrives during a pause waits in the queue until it ends.
    let (report, _) = with_json(run_text(&one_request("0s")));
    assert_eq!(max_ms(&report), 300);
    // A pause that begins after the work ended changes nothing.
    let (report, _) = with_json(run_text(&one_request("150ms")));
    assert_eq!(max_ms(&report), 100);
}

#[test]
fn periodic_pauses_of_half_the_replicas_cost_timeouts_and_set_the_p99() {
    let (paused, json) = with_json(run_library_with("gc-pause", None, &[], None));
    assert!(paused.passed(), "{:?}", paused.expectations);
    // Ten pauses (10s to 55s) of 2 replicas, 400ms each; the one that starts at the end
    // counts nothing.
    assert_eq!(events(&json)["paused_s"], 8.0);
    let timeouts = paused.summary.failures as f64 / paused.summary.offered as f64;
    assert!(timeouts > 0.01, "{timeouts}");
    // Without the pauses nothing fails and the p99 is a few times the work.
    let (calm, json) = with_json(run_library_with(
        "gc-pause",
        None,
        &[("faults", "[]")],
        None,
    ));
    assert_eq!(calm.summary.failures, 0);
    assert!(json["services"][0].get("capacity_events").is_none());
    let p99 = |r: &Report| r.summary.latency_ms.as_ref().unwrap().p99;
    assert!(p99(&calm) < 60.0, "{}", p99(&calm));
    // With a timeout longer than the pause nothing fails, but the p99 is in the pause.
    let (patient, _) = with_json(run_library_with("gc-pause", Some("patient"), &[], None));
    assert_eq!(patient.summary.failures, 0);
    assert!(
        (300.0..=400.0).contains(&p99(&patient)),
        "{}",
        p99(&patient)
    );
}

#[test]
fn a_zone_failure_takes_its_replicas_and_clients_out_until_it_ends() {
    let (report, json) = with_json(run_library_with("zone-failure", None, &[], None));
    assert!(report.passed(), "{:?}", report.expectations);
    let api = &json["services"][0];
    assert_eq!(api["capacity_events"]["zone_downs"], 2);
    assert_eq!(api["scaling"]["replicas_min"], 4);
    // The office client stands in the failed zone: it offers for 50 of the 70 seconds.
    let office = json["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "office")
        .unwrap();
    let offered = office["offered"].as_f64().unwrap();
    assert!((offered - 5000.0).abs() < 5.0 * 5000f64.sqrt(), "{offered}");
    for row in json["series"].as_array().unwrap() {
        let t = row["t_s"].as_f64().unwrap();
        let office = row["clients"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "office")
            .unwrap();
        if (20.0..40.0).contains(&t) {
            assert_eq!(office["offered"], 0, "at {t}s");
        }
    }
    // Without headroom the survivors are overloaded until the zone is back.
    let (tight, json) = with_json(run_library_with(
        "zone-failure",
        Some("no-headroom"),
        &[],
        None,
    ));
    assert!(tight.passed(), "{:?}", tight.expectations);
    assert!(success_after(&json, 50.0) > 0.99);
}

#[test]
fn liveness_probes_served_by_busy_workers_turn_a_spike_into_a_death_spiral_on_every_seed() {
    for seed in [1, 2, 3, 7] {
        let (spiral, json) = with_json(run_library_with(
            "liveness-death-spiral",
            None,
            &[],
            Some(seed),
        ));
        let restarts = events(&json)["liveness_restarts"].as_u64().unwrap();
        let after = success_after(&json, 60.0);
        // More restarts than replicas: replicas restarted once come back and fail again.
        assert!(restarts > 6, "seed {seed}: {restarts} restarts");
        assert!(after < 0.6, "seed {seed}: {after} after 60s");
        assert!(spiral.passed(), "seed {seed}: {:?}", spiral.expectations);
        // The per-bucket restarts add up to the total.
        let per_bucket: u64 = json["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["services"][0]["liveness_restarts"].as_u64().unwrap())
            .sum();
        assert_eq!(per_bucket, restarts);

        let (dedicated, json) = with_json(run_library_with(
            "liveness-death-spiral-dedicated",
            None,
            &[],
            Some(seed),
        ));
        assert_eq!(events(&json)["liveness_restarts"], 0, "seed {seed}");
        assert_eq!(events(&json)["liveness_probe_failures"], 0, "seed {seed}");
        assert!(success_after(&json, 60.0) > 0.999, "seed {seed}");
        assert!(
            dedicated.passed(),
            "seed {seed}: {:?}",
            dedicated.expectations
        );
    }
    // Without the spike, the same probes never fail: the spiral needs the overload.
    let (calm, json) = with_json(run_library_with(
        "liveness-death-spiral",
        None,
        &[("clients.users.load.rate", "Constant(\"1900/s\")")],
        None,
    ));
    assert_eq!(events(&json)["liveness_restarts"], 0);
    assert_eq!(calm.summary.failures, 0);
}

#[test]
fn liveness_restarts_are_in_the_csv_and_a_dedicated_probe_fails_only_in_a_pause() {
    let (spiral, _) = with_json(run_library_with("liveness-death-spiral", None, &[], None));
    let csv = Format::Csv.render(&spiral);
    let header = csv.lines().next().unwrap();
    assert!(header.ends_with("api_liveness_restarts"), "{header}");
    let total: u64 = csv
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        total,
        spiral.services[0]
            .capacity_events
            .as_ref()
            .unwrap()
            .liveness_restarts
    );
    // A 3-second pause every 5 seconds against a 1-second timeout: dedicated probes fail
    // and restart the paused replicas.
    let (_, json) = with_json(run_library_with(
        "liveness-death-spiral-dedicated",
        None,
        &[
            (
                "faults",
                "[(at: \"10s\", duration: \"3s\", kind: Pause(service: \"api\", replicas: Some(2), every: Some(\"5s\")))]",
            ),
            ("expectations", "[]"),
        ],
        None,
    ));
    assert!(events(&json)["liveness_restarts"].as_u64().unwrap() >= 2);
    assert!(events(&json)["pauses"].as_u64().unwrap() >= 2);
}
