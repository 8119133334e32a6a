//! `resim why` by window: the windows it finds (each trigger and the recovery after it, or
//! where failures concentrate), the findings computed from what happened in a window and
//! ranked by what they explain there, `--window`, and `why --request` in time order.

use crate::support;

use scenarios::report::Report;
use scenarios::report::why::windows::{self, CONCENTRATION_FACTOR, Span, SpanKind};
use support::{resim, run_library, run_text};

const SLOWDOWN: &str = "../book/src/scenarios/slowdown-window.ron";

/// `resim why ARGS --json`, with exit code 0.
fn why_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["why"];
    all.extend(args);
    all.push("--json");
    let out = resim(&all);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// The finding of `rule` about `subject` in a window's JSON list, which must be there.
fn finding<'a>(list: &'a serde_json::Value, rule: &str, subject: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule && f["subject"] == subject)
        .unwrap_or_else(|| panic!("no {rule} about {subject} in {list:#}"))
}

#[test]
fn a_failure_in_a_slowdown_window_is_explained_by_what_happened_in_it() {
    // By construction: from 20s the db is 5.8 times slower (58ms a job on 10 workers:
    // 172/s for 200/s), the api's 40 workers all wait on it within a second, and its queue
    // fills toward 200 while the users wait at most 1s. Over the 60s run the api is mostly
    // idle: only the window shows it saturated.
    let json = why_json(&[SLOWDOWN]);
    let why = json["why"].as_array().unwrap();
    assert_eq!(why.len(), 1, "{json:#}");
    let w = &why[0];
    assert_eq!(w["kind"], "trigger");
    assert_eq!(w["window"], "slowdown db ×5.8");
    assert_eq!(
        (w["from_s"].as_f64(), w["to_s"].as_f64()),
        (Some(20.0), Some(30.0))
    );
    // What failed in it: the users' attempts timed out, and a few were refused.
    let failed = w["failed_attempts"].as_array().unwrap();
    assert_eq!(
        (&failed[0]["reason"], &failed[0]["at"]),
        (&"timeout".into(), &"users → api".into())
    );
    let timeouts = failed[0]["count"].as_u64().unwrap();
    assert!(timeouts > 300, "{failed:?}");
    assert_eq!(
        (&failed[1]["reason"], &failed[1]["at"]),
        (&"queue_full".into(), &"api".into())
    );
    // The first cause: the api saturated inside the fault's window (not from its start), and
    // that explains every failed attempt of the window.
    let saturated = &w["saturated"];
    let busy = &saturated[0];
    assert_eq!(
        (&busy["rule"], &busy["subject"]),
        (&"workers_busy".into(), &"api".into())
    );
    let e = &busy["evidence"];
    let (from, to) = (
        e["saturated_from_s"].as_f64().unwrap(),
        e["saturated_to_s"].as_f64().unwrap(),
    );
    assert!(
        (20.5..=23.0).contains(&from) && (28.0..=31.0).contains(&to),
        "{busy:#}"
    );
    assert!(e["busy_workers_mean"].as_f64().unwrap() >= 36.0, "{busy:#}");
    let all: u64 = failed.iter().map(|f| f["count"].as_u64().unwrap()).sum();
    assert_eq!(busy["explained"].as_u64(), Some(all), "{busy:#}");
    let text = busy["text"].as_str().unwrap();
    assert!(text.contains(&format!("from {from}s to {to}s")), "{text}");
    // The slowed db saturated through the whole fault, and explains the same failures: its
    // callers' workers waited on it.
    let db = finding(saturated, "workers_busy", "db");
    assert_eq!(
        db["evidence"]["saturated_from_s"].as_f64(),
        Some(20.0),
        "{db:#}"
    );
    assert_eq!(db["explained"].as_u64(), Some(all), "{db:#}");
    // The full queue is named, and why its callers expired: it drains slower than they wait.
    let queue = finding(saturated, "full_queue_outlives_timeout", "api");
    assert_eq!(
        queue["evidence"]["refused"].as_f64(),
        failed[1]["count"].as_f64()
    );
    // What the whole run's averages say: an api busy a quarter of the time.
    let text = std::fs::read_to_string(SLOWDOWN).unwrap();
    let report = support::run_file_text(SLOWDOWN, &text, &scenarios::RunOptions::default());
    let api = report.services.iter().find(|s| s.name == "api").unwrap();
    assert!(api.utilisation < 0.3, "{}", api.utilisation);
    // The text names the window and its cause first.
    let out = resim(&["why", SLOWDOWN]);
    assert!(
        out.stdout.contains("\n20s to 30s · slowdown db ×5.8\n"),
        "{}",
        out.stdout
    );
    let first_finding = out
        .stdout
        .lines()
        .skip_while(|l| !l.ends_with("where it failed:"))
        .nth(1);
    assert!(
        first_finding
            .unwrap()
            .contains("api: its workers were busy 40.0 of 40"),
        "{}",
        out.stdout
    );
}

#[test]
fn why_window_explains_the_window_asked_for_from_its_buckets() {
    let json = why_json(&[SLOWDOWN, "--window", "20s..32s"]);
    let why = json["why"].as_array().unwrap();
    assert_eq!(why.len(), 1);
    let w = &why[0];
    assert_eq!(
        (w["kind"].as_str(), w["from_s"].as_f64(), w["to_s"].as_f64()),
        (Some("asked"), Some(20.0), Some(32.0))
    );
    finding(&w["saturated"], "workers_busy", "api");
    assert_eq!(w["failed_attempts"][0]["reason"], "timeout");
    let offered = w["offered"].as_u64().unwrap();
    assert!((2200..2600).contains(&offered), "12s at 200/s: {offered}");
    // Before the fault nothing failed and nothing saturated: the window is what is read.
    let calm = why_json(&[SLOWDOWN, "--window", "5s..15s"]);
    let c = &calm["why"][0];
    assert_eq!(c["success_ratio"].as_f64(), Some(1.0));
    assert!(c["saturated"].as_array().unwrap().is_empty(), "{c:#}");
    assert!(c["failed_attempts"].as_array().unwrap().is_empty(), "{c:#}");
    let out = resim(&["why", SLOWDOWN, "--window", "20s..32s"]);
    assert!(
        out.stdout.contains("\n20s to 32s · the window asked for\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_window_outside_the_run_or_written_wrong_is_refused_with_exit_code_2() {
    let check = |window: &str, said: &str| {
        let out = resim(&["why", SLOWDOWN, "--window", window]);
        assert_eq!(out.code, 2, "{window}: {}", out.stdout);
        assert!(out.stderr.contains(said), "{window}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    };
    check("32s..20s", "the window ends before it starts");
    check("20s", "write the window as FROM..TO");
    check("20s..20s", "is empty: give FROM..TO with TO after FROM");
    check("70s..80s", "starts after the run, which is 60s long");
    let out = resim(&["why", SLOWDOWN, "--window", "20s..32s", "--request", "5"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("cannot be used with"), "{}", out.stderr);
}

/// The buckets of `report` the window rules read (all but the last), as (start, failure
/// ratio, failures).
fn buckets(report: &Report) -> Vec<(f64, f64, u64)> {
    let n = report.series.len() - 1;
    report.series[..n]
        .iter()
        .map(|r| {
            (
                r.t_s,
                r.failures as f64 / r.offered.max(1) as f64,
                r.failures,
            )
        })
        .collect()
}

#[test]
fn each_trigger_has_its_window_and_a_recovery_until_the_failures_are_back_down() {
    // The retry storm never recovers: the recovery runs to the run's last bucket.
    let report = run_library("metastable-retry");
    let found = windows::find(&report);
    let kinds: Vec<(SpanKind, f64, f64)> =
        found.iter().map(|s| (s.kind, s.from_s, s.to_s)).collect();
    assert_eq!(
        kinds,
        [
            (SpanKind::Trigger, 10.0, 15.0),
            (SpanKind::Recovery, 15.0, 59.0)
        ]
    );
    // With a budget it recovers: the recovery ends at the first bucket back at the healthy
    // level (twice the failure ratio before the trigger, at least 1%), and none before it is.
    let report = support::run_library_with("metastable-retry", Some("budget"), &[], None);
    let found = windows::find(&report);
    let recovery = found
        .iter()
        .find(|s| s.kind == SpanKind::Recovery)
        .expect("a recovery");
    let all = buckets(&report);
    let healthy = |t: f64| all.iter().find(|b| b.0 == t).unwrap().1 <= windows::HEALTHY_RATIO_MIN;
    assert!(healthy(recovery.to_s), "{recovery:?}");
    let mut t = recovery.from_s;
    while t < recovery.to_s {
        assert!(!healthy(t), "{t}: {recovery:?}");
        t += report.bucket_s;
    }
}

/// An api at 90% of its capacity for 10s of a 30s run, when its load steps up (a schedule
/// of the load, not a trigger on the timeline): failures concentrate in those seconds.
const STEP: &str = r#"Scenario(
    name: "load-step",
    duration: "30s",
    seed: 1,
    clients: {
        "users": (
            load: Open(rate: Steps([(at: "0s", rate: "100/s"), (at: "10s", rate: "190/s"), (at: "20s", rate: "100/s")])),
            call: (target: "api", timeout: "100ms"),
        ),
    },
    services: { "api": (workers: 2, work: Exponential(mean: "10ms")) },
)"#;

#[test]
fn without_triggers_the_windows_are_where_failures_concentrate() {
    let report = run_text(STEP);
    assert!(report.timeline.is_empty());
    let found = windows::find(&report);
    assert!(!found.is_empty());
    let all = buckets(&report);
    let (failed, offered) = all
        .iter()
        .zip(&report.series)
        .fold((0, 0), |(f, o), (b, r)| (f + b.2, o + r.offered));
    let run = failed as f64 / offered as f64;
    let high = |b: &(f64, f64, u64)| b.2 > 0 && b.1 >= CONCENTRATION_FACTOR * run;
    let inside = |t: f64, s: &Span| t >= s.from_s && t < s.to_s;
    for s in &found {
        assert_eq!(s.kind, SpanKind::Concentrated);
        // A window starts and ends with a bucket over the threshold.
        let first = all.iter().find(|b| b.0 == s.from_s).unwrap();
        let last = all.iter().rev().find(|b| inside(b.0, s)).unwrap();
        assert!(high(first) && high(last), "{s:?}");
        assert!((10.0..20.0).contains(&s.from_s), "{s:?}");
    }
    // Every bucket over the threshold is in a window.
    for b in all.iter().filter(|b| high(b)) {
        assert!(found.iter().any(|s| inside(b.0, s)), "{b:?}: {found:?}");
    }
}

#[test]
fn a_followed_request_reads_in_time_order_and_names_an_attempt_out_of_its_place() {
    // Request #30011 of the retry storm: each attempt waited past its timeout, and its job
    // was served after the caller had moved on to the next attempt.
    let out = resim(&[
        "why",
        "metastable-retry",
        "--seed",
        "7",
        "--request",
        "30011",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let chain: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("  ") && l.trim_start().as_bytes()[0].is_ascii_digit())
        .collect();
    let times: Vec<f64> = chain
        .iter()
        .map(|l| l.trim_start().split('s').next().unwrap().parse().unwrap())
        .collect();
    assert!(times.len() > 10, "{}", out.stdout);
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{}", out.stdout);
    // A line of attempt 1 printed after attempt 2 was sent says whose it is, and how the
    // caller stood.
    let sent2 = chain
        .iter()
        .position(|l| l.contains("attempt 2 sent"))
        .unwrap();
    let late = chain[sent2..]
        .iter()
        .position(|l| l.contains("attempt 1: "))
        .expect("a late line of attempt 1");
    assert!(
        chain[sent2 + late].contains("attempt 1: a worker took it after"),
        "{}",
        out.stdout
    );
    let answered = chain[sent2 + late + 1];
    assert!(
        answered.contains("api/0 answered ok")
            && answered.contains("after users had given up on this attempt"),
        "{answered}"
    );
    assert!(!out.stdout.contains("the caller got"), "{}", out.stdout);
}

#[test]
fn a_call_with_one_attempt_allowed_says_so() {
    let text = r#"Scenario(
        name: "one-attempt",
        duration: "1s",
        seed: 3,
        clients: {
            "users": (
                load: Open(rate: Constant("50/s")),
                call: (target: "api", timeout: "100ms", stack: [Retry((max_attempts: 1))]),
            ),
        },
        services: { "api": (workers: 4, work: Constant(value: "1ms")) },
        faults: [(at: "0s", kind: ErrorRate(service: "api", error_ratio: 1.0))],
    )"#;
    let scenario = scenarios::format::load::parse("test.ron", text).unwrap();
    let options = scenarios::RunOptions {
        follow_request: Some(1),
        ..Default::default()
    };
    let out = scenarios::run(&scenario, "test.ron", &options).unwrap();
    let why = scenarios::report::why::request::explain(&out.followed.unwrap(), "test.ron").unwrap();
    let lines = why.lines().join("\n");
    assert!(
        lines.contains("no retry: the policy allows one attempt"),
        "{lines}"
    );
    assert!(!lines.contains("all 1 attempts"), "{lines}");
}
