//! Capacity that changes while the load does: the autoscaler (its lag against a load spike,
//! scale-in with draining), cold starts and rolling deploys, through the reports a user reads
//! (the JSON report's `scaling` section and its replicas-in-rotation series, the CSV columns).

use crate::support;

use scenarios::format::load::parse;
use scenarios::report::{Format, Report};
use scenarios::{RunOptions, run};
use serde_json::Value;
use support::{run_library_with, with_json};

/// The api's replicas in rotation per bucket, from the JSON series, with each bucket's start.
fn replicas_over_time(json: &Value) -> Vec<(f64, f64)> {
    json["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let api = &row["services"][0];
            assert_eq!(api["name"], "api");
            (
                row["t_s"].as_f64().unwrap(),
                api["replicas_in_rotation_mean"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn verdict(json: &Value) -> &str {
    json["metastability"]["verdict"].as_str().unwrap()
}

#[test]
fn a_slow_scaler_lets_a_spike_turn_metastable_where_a_fast_one_or_a_retry_budget_recovers() {
    // Slow: one-minute datapoints a minute old and a minute to start; nothing is added in
    // the 120 s run, and the retry storm outlives the spike.
    let (slow, json) = with_json(run_library_with("autoscaler-lag", None, &[], None));
    assert!(slow.passed(), "{:?}", slow.expectations);
    assert_eq!(verdict(&json), "metastable");
    let replicas = replicas_over_time(&json);
    assert!(replicas.iter().all(|(_, n)| *n == 4.0), "{replicas:?}");
    assert_eq!(json["services"][0]["scaling"]["replicas_max"], 4);

    // Fast: 5 s datapoints read at once, 5 s to start. Replicas arrive during the spike
    // (10 s to 15 s) or right after it, the service recovers, and after the 30 s scale-in
    // stabilisation the scaler gives replicas back.
    let (fast, json) = with_json(run_library_with("autoscaler-lag", Some("fast"), &[], None));
    assert!(fast.passed(), "{:?}", fast.expectations);
    assert_eq!(verdict(&json), "recovered");
    let replicas = replicas_over_time(&json);
    let before: Vec<f64> = replicas
        .iter()
        .filter(|(t, _)| *t < 10.0)
        .map(|r| r.1)
        .collect();
    assert!(before.iter().all(|n| *n == 4.0), "{replicas:?}");
    let early = replicas
        .iter()
        .filter(|(t, _)| *t <= 25.0)
        .map(|r| r.1)
        .fold(0.0, f64::max);
    assert!(early > 8.0, "replicas added by 25s: {replicas:?}");
    let last = replicas.last().unwrap().1;
    assert!(last < early, "scaled in by the end: {replicas:?}");
    let scaling = &json["services"][0]["scaling"];
    assert!(scaling["scale_outs"].as_u64().unwrap() >= 1);
    assert!(scaling["scale_ins"].as_u64().unwrap() >= 1);
    assert!(
        scaling["cold_jobs"].as_u64().unwrap() > 0,
        "new replicas start cold"
    );

    // The same slow scaler with a 10% retry budget: the storm never forms.
    let (budget, json) = with_json(run_library_with(
        "autoscaler-lag",
        Some("budget"),
        &[],
        None,
    ));
    assert!(budget.passed(), "{:?}", budget.expectations);
    assert_eq!(verdict(&json), "recovered");

    // The library's standalone fast file is the fast variant.
    let (file, _) = with_json(run_library_with("autoscaler-lag-fast", None, &[], None));
    assert_eq!(file.summary.successes, fast.summary.successes);
}

#[test]
fn a_rolling_deploy_takes_a_batch_out_of_rotation_at_a_time_and_costs_only_without_headroom() {
    let (tight, json) = with_json(run_library_with("rolling-deploy", None, &[], None));
    assert!(tight.passed(), "{:?}", tight.expectations);
    let scaling = &json["services"][0]["scaling"];
    assert_eq!(scaling["replicas_min"], 6, "2 of 8 out at a time");
    assert_eq!(scaling["replicas_max"], 8);
    assert_eq!(scaling["deploy_restarts"], 8, "every replica once");
    for (t, n) in replicas_over_time(&json) {
        if !(20.0..80.0).contains(&t) {
            assert_eq!(n, 8.0, "all in rotation outside the deploy, at {t}s");
        } else {
            assert!((6.0..=8.0).contains(&n), "{n} at {t}s");
        }
    }
    assert!(tight.summary.failures > 0);
    let (headroom, json) = with_json(run_library_with("rolling-deploy-headroom", None, &[], None));
    assert!(headroom.passed(), "{:?}", headroom.expectations);
    assert_eq!(json["services"][0]["scaling"]["deploy_restarts"], 8);
    assert_eq!(headroom.summary.failures, 0);
}

#[test]
fn cold_starts_slow_the_first_requests_of_a_restarted_replica() {
    let (cold, json) = with_json(run_library_with("rolling-deploy-headroom", None, &[], None));
    let (warm, _) = with_json(run_library_with(
        "rolling-deploy-headroom",
        None,
        &[("services.api.cold_start", "None")],
        None,
    ));
    assert!(
        json["services"][0]["scaling"]["cold_jobs"]
            .as_u64()
            .unwrap()
            > 0
    );
    let p99 = |r: &Report| r.summary.latency_ms.as_ref().unwrap().p99;
    assert!(p99(&cold) > p99(&warm), "{} vs {}", p99(&cold), p99(&warm));
}

/// A file with an api of 4 replicas under light load (`rate` of `work` each) that its
/// scaler takes down to 1.
fn scale_in(rate: &str, work: &str, drain: &str) -> Value {
    let text = format!(
        r#"Scenario(
    name: "scale-in",
    duration: "30s",
    clients: {{ "c": (load: Open(rate: Constant("{rate}")), call: (target: "api", timeout: "10s")) }},
    services: {{
        "api": (
            replicas: 4,
            workers: 4,
            work: Constant(value: "{work}"),
            autoscale: (
                min_replicas: 1,
                max_replicas: 4,
                metric: Utilisation(target_ratio: 0.8),
                period: "1s",
                scale_in_stabilisation: "0s",
                drain: "{drain}",
            ),
        ),
    }},
)"#
    );
    let scenario = parse("scale-in.ron", &text).unwrap();
    let report = run(&scenario, "scale-in.ron", &RunOptions::default())
        .unwrap()
        .report;
    serde_json::from_str(&Format::Json.render(&report)).unwrap()
}

#[test]
fn scale_in_drains_what_a_replica_holds_and_loses_only_what_outlasts_the_drain() {
    // Short work: every replica leaving rotation is empty long before its drain ends.
    let json = scale_in("20/s", "10ms", "5s");
    let scaling = &json["services"][0]["scaling"];
    assert_eq!(scaling["replicas_min"], 1);
    assert_eq!(scaling["lost_at_stop"], 0);
    assert_eq!(json["summary"]["failures"], 0);
    // Work longer than the drain: what a replica holds when it stops is lost, and its
    // callers see the failure.
    let json = scale_in("1/s", "3s", "100ms");
    let lost = json["services"][0]["scaling"]["lost_at_stop"]
        .as_u64()
        .unwrap();
    assert!(lost > 0);
    assert!(json["summary"]["failures"].as_u64().unwrap() > 0);
}

#[test]
fn a_scenario_without_scaling_reports_none_and_the_csv_has_a_column_for_one_with() {
    let (plain, json) = with_json(run_library_with("metastable-retry", None, &[], None));
    assert!(json["services"][0].get("scaling").is_none());
    assert!(
        json["series"][0]["services"][0]
            .get("replicas_in_rotation_mean")
            .is_none()
    );
    assert!(!Format::Csv.render(&plain).contains("replicas_in_rotation"));
    let (scaled, _) = with_json(run_library_with("rolling-deploy", None, &[], None));
    let csv = Format::Csv.render(&scaled);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|h| *h == "api_replicas_in_rotation_mean")
        .expect("a column for the api");
    let values: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(column).unwrap().parse().unwrap())
        .collect();
    assert_eq!(values.iter().cloned().fold(f64::MAX, f64::min), 6.0);
}
