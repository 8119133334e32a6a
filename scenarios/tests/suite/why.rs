//! `resim why` and the reports' "why" section: on scenarios whose cause is known by
//! construction, the explanation names it (with the figures that show it) and names nothing it
//! cannot show; a run where nothing failed says so; bad input is exit code 2.

use crate::support;

use scenarios::RunOptions;
use scenarios::report::why::request::{self, RequestWhy};
use scenarios::report::why::{Finding, Rule, SpanKind, Why};
use scenarios::report::{Format, Report, render};
use support::{resim, run_library, run_text};

/// A db slowed down to half the capacity its traffic needs, behind a frontend whose workers
/// wait on it (thread-per-request) and whose queue holds 200 per replica: a full queue takes
/// 200 × ~81ms / 8 workers ≈ 2s to serve, four times the users' 500ms timeout, so the
/// requests that queue expire before service and success during the slowdown is about 0%.
const DB_SLOWDOWN: &str = r#"Scenario(
    name: "db-slowdown-deep-queue",
    duration: "30s",
    seed: 1,
    clients: {
        "users": (
            load: Open(rate: Constant("400/s")),
            call: (target: "frontend", timeout: "500ms"),
        ),
    },
    services: {
        "frontend": (
            replicas: 2,
            workers: 8,
            queue: (capacity: 200),
            work: Constant(value: "1ms"),
            calls: [(target: "db", timeout: "2s")],
        ),
        "db": (workers: 16, work: Exponential(mean: "10ms")),
    },
    faults: [(at: "10s", duration: "10s", kind: Slowdown(service: "db", factor: 8.0))],
    expectations: [GoodputAtLeast(client: "users", after: "10s", until: "20s", min_ratio: 0.4)],
)"#;

/// The findings of `why` by rule and subject, as `rule subject` words.
fn rules(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| format!("{:?} {}", f.rule, f.subject))
        .collect()
}

/// The finding of `rule` about `subject`, which must be there.
fn finding<'a>(findings: &'a [Finding], rule: Rule, subject: &str) -> &'a Finding {
    findings
        .iter()
        .find(|f| f.rule == rule && f.subject == subject)
        .unwrap_or_else(|| panic!("no {rule:?} about {subject} in {:?}", rules(findings)))
}

/// The one window of `report` that explains the failure whose text starts with `failed`.
fn explaining<'a>(report: &'a Report, failed: &str) -> &'a Why {
    let windows: Vec<&Why> = report
        .why
        .iter()
        .filter(|w| w.failed.iter().any(|f| f.text.starts_with(failed)))
        .collect();
    assert_eq!(windows.len(), 1, "{failed}: {:#?}", report.why);
    windows[0]
}

#[test]
fn the_metastable_retry_storm_is_waits_past_the_timeout_in_a_full_queue() {
    let report = run_library("metastable-retry");
    // Its expectation holds: the verdict is what failed, and the window after the spike
    // explains it.
    let why = explaining(&report, "metastability");
    assert_eq!(why.failed.len(), 1, "{:?}", why.failed);
    assert_eq!(why.failed[0].expectation, None);
    assert_eq!(why.kind, SpanKind::Recovery);
    assert_eq!(why.window, "after load spike users ×2");
    // After the spike ended at 15s, almost nothing succeeded.
    assert_eq!(why.from_s, 15.0);
    assert!(why.success_ratio.unwrap() < 0.05, "{why:?}");
    // By construction: 500 queued / 16 workers × 10ms ≈ 312ms, past the 200ms timeout.
    let queue = finding(&why.saturated, Rule::FullQueueOutlivesTimeout, "api");
    let drain = queue.evidence["drain_ms"];
    assert!((290.0..340.0).contains(&drain), "{queue:?}");
    assert_eq!(queue.evidence["timeout_ms"], 200.0);
    assert_eq!(queue.evidence["queue_capacity"], 500.0);
    assert!(
        queue.text.contains("expires before service"),
        "{}",
        queue.text
    );
    // The findings over the whole run's figures are shown once, in the spike's window, the
    // first of the run.
    let spike = &report.why[0];
    assert_eq!(
        (spike.kind, spike.from_s, spike.to_s),
        (SpanKind::Trigger, 10.0, 15.0)
    );
    let waits = finding(&spike.saturated, Rule::QueueWaitsPastTimeout, "api");
    assert!(waits.evidence["wait_ms_p99"] >= 200.0, "{waits:?}");
    finding(&spike.saturated, Rule::WastedWork, "api");
    assert!(why.saturated.iter().all(|f| !f.text.contains("(whole run")));
    // What kept it down: three attempts per request, more than the workers serve.
    let retries = finding(&why.held_back, Rule::RetriesAmplify, "clients");
    assert!(
        retries.evidence["attempts_per_request"] > 2.5,
        "{retries:?}"
    );
    assert_eq!(retries.evidence["attempts_per_request_before"], 1.0);
    let load = finding(&why.held_back, Rule::LoadAboveCapacity, "api");
    assert!(load.evidence["arrivals_per_s"] > load.evidence["capacity_per_s"]);
    // No breaker, pool, limiter or budget in the scenario: none is named.
    for f in why.saturated.iter().chain(&why.held_back) {
        assert!(
            !matches!(
                f.rule,
                Rule::BreakerOpen | Rule::PoolExhausted | Rule::Refused | Rule::RetryBudgetRefused
            ),
            "{f:?}"
        );
    }
}

#[test]
fn a_db_slowdown_fails_at_the_frontend_queue_that_outlives_the_timeout() {
    let report = run_text(DB_SLOWDOWN);
    assert!(!report.passed());
    // The expectation's window is the fault's: the trigger window explains it.
    let why = explaining(&report, "expectations[0]");
    assert_eq!(why.kind, SpanKind::Trigger);
    assert_eq!((why.from_s, why.to_s), (10.0, 20.0));
    assert!(why.success_ratio.unwrap() < 0.1, "{why:?}");
    let queue = finding(&why.saturated, Rule::FullQueueOutlivesTimeout, "frontend");
    // A worker holds a job for its 1ms and the db's 8 × 10ms: 200 × 81ms / 8 ≈ 2s.
    assert!(
        (1500.0..2500.0).contains(&queue.evidence["drain_ms"]),
        "{queue:?}"
    );
    assert_eq!(queue.evidence["timeout_ms"], 500.0);
    finding(&why.saturated, Rule::WorkersBusy, "db");
    finding(&why.saturated, Rule::WorkersBusy, "frontend");
    // 400/s arrive at a frontend whose 16 workers serve about 16 / 81ms ≈ 200/s.
    let load = finding(&why.saturated, Rule::LoadAboveCapacity, "frontend");
    assert!(load.evidence["capacity_per_s"] < 250.0, "{load:?}");
    // The db's queue is unbounded: no queue finding about it. No retries: nothing amplified.
    assert!(
        !why.saturated
            .iter()
            .any(|f| f.subject == "db" && f.rule == Rule::FullQueueOutlivesTimeout),
        "{:?}",
        rules(&why.saturated)
    );
    assert!(why.held_back.is_empty(), "{:?}", rules(&why.held_back));
}

#[test]
fn a_run_where_nothing_failed_says_so_and_its_reports_have_no_why() {
    // The budget variant recovers, and its expectation holds.
    let report = run_library("metastable-retry-budget");
    assert!(report.passed());
    assert!(report.why.is_empty(), "{:#?}", report.why);
    assert!(!Format::Human.render(&report).contains("\nwhy\n"));
    assert!(
        !support::json(&report)
            .as_object()
            .unwrap()
            .contains_key("why")
    );
    let out = resim(&["why", "metastable-retry-budget"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("nothing failed: its expectation held; metastability: recovered"),
        "{}",
        out.stdout
    );
}

#[test]
fn the_human_and_html_reports_carry_the_same_explanation() {
    let report = run_library("metastable-retry");
    let human = Format::Human.render(&report);
    let charts = render::charts(&report).unwrap();
    let html = render::html(&report, &charts);
    assert!(html.contains("<h2 id=\"why\">Why</h2>"));
    for f in &report.why[0].saturated {
        assert!(human.contains(&f.text), "{}", f.text);
    }
    let json = support::json(&report);
    assert_eq!(json["why"][0]["saturated"][0]["rule"], "workers_busy");
    // The page shows each window's findings once: not again in its readable report.
    for w in &report.why {
        for f in w.saturated.iter().chain(&w.held_back) {
            let text = f
                .text
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            assert_eq!(html.matches(&text).count(), 1, "{}", f.text);
        }
        assert_eq!(html.matches(&w.heading()).count(), 1, "{}", w.heading());
    }
    // Each chart's caption is above it, and the page is not held to a narrow column.
    for figure in html.split("<figure").skip(1) {
        let caption = figure.find("<figcaption>").expect("a caption");
        assert!(
            caption < figure.find("<svg").expect("a chart"),
            "{figure:.200}"
        );
    }
    assert!(!html.contains("max-width:1000px"));
}

#[test]
fn resim_why_explains_the_metastable_retry_storm() {
    let out = resim(&["why", "metastable-retry", "--seed", "7"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::with_settings!({ description => "resim why metastable-retry --seed 7" }, {
        insta::assert_snapshot!("metastable_retry", out.stdout);
    });
}

#[test]
fn resim_why_refuses_what_it_cannot_explain() {
    let check = |args: &[&str], said: &str| {
        let out = resim(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stdout);
        assert!(out.stderr.contains(said), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    };
    check(
        &["why", "metastable-retry", "--expectation", "3"],
        "metastable-retry: --expectation 3: there is 1 expectation: [0] Metastable",
    );
    check(
        &["why", "metastable-retry", "--expectation", "Recovers"],
        "--expectation \"Recovers\" names none of the expectations: [0] Metastable",
    );
    check(
        &["why", "metastable-retry", "--seed", "-1"],
        "unexpected argument '-1'",
    );
    check(
        &["why", "metastable-retry", "--seed", "18446744073709551616"],
        "number too large",
    );
    check(&["why", "no-such-scenario"], "no-such-scenario");
    check(
        &["why", "metastable-retry", "--set", "services.api.workers=0"],
        "services.api.workers",
    );
}

#[test]
fn resim_why_of_an_expectation_that_held_says_so() {
    let out = resim(&["why", "metastable-retry", "--expectation", "0"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "expectations[0] users stays down after the trigger ends: holds (did not recover within the run: metastable): nothing failed to explain"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn a_broken_latency_bound_at_an_unsaturated_api_is_its_queue_and_a_short_saturation() {
    // The replay chapter's seed 19: an api at 80% load whose p99 goes past 250ms in a 10s
    // run through a short run of close arrivals; no queue was full, and its worker was busy
    // without a break only while that queue drained (the window's buckets show it).
    let out = resim(&["why", "../book/src/scenarios/replay.ron", "--seed", "19"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("api: time in its queue made most of the latency"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("api: its workers were busy 1.0 of 1 on average (96%) from 4s to 6s"),
        "{}",
        out.stdout
    );
    for rule in ["queue was full", "retries", "breakers"] {
        assert!(!out.stdout.contains(rule), "{rule}: {}", out.stdout);
    }
}

// ---- one request: `resim why --request ID` -------------------------------------------------

/// A client whose retries a budget of 10% (at least 5 a window) holds back, at an api that
/// fails every attempt: once the budget's floor of retries is spent, a failed request is
/// not retried, and the budget is what said no.
const BUDGET: &str = r#"Scenario(
    name: "budget-refuses",
    duration: "1s",
    seed: 1,
    clients: {
        "users": (
            load: Open(rate: Constant("50/s")),
            call: (
                target: "api",
                timeout: "100ms",
                stack: [Retry((
                    max_attempts: 3,
                    backoff: (strategy: Constant(delay: "10ms"), jitter: None),
                    budget: Window((budget_percent: 10, window: "5s", min_retries_per_window: 5)),
                ))],
            ),
        ),
    },
    services: { "api": (workers: 4, work: Constant(value: "1ms")) },
    faults: [(at: "0s", kind: ErrorRate(service: "api", error_ratio: 1.0))],
)"#;

/// The same client without a budget, at an api that fails half its attempts: some requests
/// fail their first attempt and succeed on a retry.
const FLAKY: &str = r#"Scenario(
    name: "flaky-api",
    duration: "1s",
    seed: 3,
    clients: {
        "users": (
            load: Open(rate: Constant("50/s")),
            call: (
                target: "api",
                timeout: "100ms",
                stack: [Retry((
                    max_attempts: 3,
                    backoff: (strategy: Constant(delay: "10ms"), jitter: None),
                ))],
            ),
        ),
    },
    services: { "api": (workers: 4, work: Constant(value: "1ms")) },
    faults: [(at: "0s", kind: ErrorRate(service: "api", error_ratio: 0.5))],
)"#;

/// Request `id` of the run of `text`, followed, and the run's report.
fn follow(text: &str, id: u64) -> (RequestWhy, Report) {
    let scenario = scenarios::format::load::parse("test.ron", text).unwrap();
    let options = RunOptions {
        follow_request: Some(id),
        ..RunOptions::default()
    };
    let out = scenarios::run(&scenario, "test.ron", &options).unwrap();
    let followed = out.followed.expect("a followed run records its request");
    (request::explain(&followed, "test.ron").unwrap(), out.report)
}

/// `resim why ARGS` as JSON, with exit code 0.
fn why_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["why"];
    all.extend(args);
    all.push("--json");
    let out = resim(&all);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn a_request_of_the_metastable_storm_waited_past_its_timeout_behind_callers_already_gone() {
    // Request #30011, offered at 25.1s, ten seconds after the spike ended: by construction
    // each attempt joins a full queue (500 × 10ms / 16 workers ≈ 312ms) and its caller
    // gives up at 200ms, as did the callers of the jobs ahead of it.
    let out = resim(&[
        "why",
        "metastable-retry",
        "--seed",
        "7",
        "--request",
        "30011",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::with_settings!({ description => "resim why metastable-retry --seed 7 --request 30011" }, {
        insta::assert_snapshot!("request_metastable_retry", out.stdout);
    });
    let json = why_json(&["metastable-retry", "--seed", "7", "--request", "30011"]);
    let r = &json["request"];
    assert_eq!(r["outcome"], "timeout");
    assert_eq!(r["attempts"], 3);
    let attempts = r["call"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3);
    for a in attempts {
        assert_eq!(a["replica"], "api/0", "{a}");
        assert_eq!(a["outcome"], "timeout", "{a}");
        let q = &a["queued"];
        assert!(
            q["waited_ms"].as_f64().unwrap() > a["timeout_ms"].as_f64().unwrap(),
            "{a}"
        );
        let (taken, gone) = (
            q["taken"].as_u64().unwrap(),
            q["taken_gone"].as_u64().unwrap(),
        );
        assert!(taken > 400 && gone * 10 >= taken * 9, "{a}");
        // Its own job was served anyway, for a caller already gone: wasted work.
        assert_eq!(a["at_replica"]["caller_gone"], true, "{a}");
    }
    assert_eq!(attempts[2]["decision"], "attempts_exhausted");
    let cause = r["cause"].as_str().unwrap();
    assert!(
        cause.contains("each attempt waited in api's queue past the 200ms timeout"),
        "{cause}"
    );
    assert!(cause.contains("callers already gone"), "{cause}");
}

#[test]
fn following_a_request_does_not_change_the_run() {
    let plain = why_json(&["metastable-retry", "--seed", "7"]);
    let followed = why_json(&["metastable-retry", "--seed", "7", "--request", "30011"]);
    assert_eq!(plain["digest"], followed["digest"]);
    assert_eq!(plain["digest"], "5ba33c25d6b13eeb");
    let (_, report) = follow(BUDGET, 3);
    assert_eq!(report.digest, support::run_text(BUDGET).digest);
}

#[test]
fn the_explanation_names_failed_requests_and_how_to_follow_one() {
    let json = why_json(&["metastable-retry", "--seed", "7"]);
    let after = json["why"].as_array().unwrap().iter();
    let after = after.clone().find(|w| w["kind"] == "recovery").unwrap();
    let examples = after["examples"].as_array().unwrap();
    // The two reasons of the stretch after the spike, two requests each, all offered in it.
    let reasons: Vec<&str> = examples
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["queue_full", "queue_full", "timeout", "timeout"]);
    let out = resim(&["why", "metastable-retry", "--seed", "7"]);
    let first = examples[0]["request"].as_u64().unwrap();
    let command = format!("follow one: resim why metastable-retry --seed 7 --request {first}");
    assert!(out.stdout.contains(&command), "{}", out.stdout);
    // The example is a request that failed with its reason.
    let id = first.to_string();
    let followed = why_json(&["metastable-retry", "--seed", "7", "--request", &id]);
    assert_eq!(followed["request"]["outcome"], "queue_full");
    assert!(followed["request"]["offered_s"].as_f64().unwrap() >= 15.0);
}

#[test]
fn a_retry_the_budget_refused_is_said_to_be_the_budget() {
    // The budget has room for its floor of 5 retries and one per 10 requests: the first
    // requests spend it, and request #20's second attempt fails when there is none left.
    let (why, _) = follow(BUDGET, 20);
    assert_eq!(why.outcome, "error");
    let last = why.call.attempts.last().unwrap();
    assert!(why.attempts < 3, "{why:#?}");
    assert_eq!(last.decision.as_deref(), Some("budget_exhausted"));
    assert_eq!(last.at_replica.as_ref().unwrap().outcome, "error");
    assert!(
        why.cause.ends_with("no retry: the retry budget refused it"),
        "{}",
        why.cause
    );
    insta::with_settings!({ description => "budget-refuses (BUDGET in why.rs), seed 1, request #20" }, {
        insta::assert_snapshot!("request_budget_refused", why.lines().join("\n"));
    });
}

#[test]
fn a_request_that_succeeded_on_a_retry_says_what_the_first_attempt_met() {
    // The first request whose first attempt failed and whose second succeeded.
    let (why, _) = (1..=50)
        .map(|id| follow(FLAKY, id))
        .find(|(w, _)| w.outcome == "ok" && w.attempts == 2)
        .expect("half the attempts fail: some request succeeds on its retry");
    let first = &why.call.attempts[0];
    assert_eq!(first.outcome.as_deref(), Some("error"));
    assert_eq!(first.decision.as_deref(), Some("retry"));
    assert_eq!(first.retry_after_ms, Some(10.0));
    assert_eq!(why.call.attempts[1].outcome.as_deref(), Some("ok"));
    assert!(
        why.cause.starts_with("succeeded at attempt 2")
            && why
                .cause
                .contains("attempt 1 failed with an error at api/0"),
        "{}",
        why.cause
    );
    let description = format!(
        "flaky-api (FLAKY in why.rs), seed 3, request #{}",
        why.request
    );
    insta::with_settings!({ description => description }, {
        insta::assert_snapshot!("request_succeeded_on_retry", why.lines().join("\n"));
    });
}

#[test]
fn an_id_no_request_has_is_refused_with_the_ids_the_run_offered() {
    let out = resim(&["why", "metastable-retry", "--request", "99999999"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "metastable-retry: --request 99999999: no request of the run has the id 99999999; \
             the run offered 64923 requests, with ids from 1 to 64923"
        ),
        "{}",
        out.stderr
    );
    // The id of a downstream call, and 0 (which a distributed limiter's leases carry), are
    // not requests either.
    let file = "../book/src/own/imported.ron";
    let args = [
        "why",
        file,
        "--seed",
        "1",
        "--variant",
        "twice-peak",
        "--request",
        "3318",
    ];
    let out = resim(&args);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let said = "--request 3318: #3318 is a downstream call of request #2831, not a request";
    assert!(out.stderr.contains(said), "{}", out.stderr);
    let out = resim(&["why", "metastable-retry", "--request", "0"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let said = "no request of the run has the id 0";
    assert!(out.stderr.contains(said), "{}", out.stderr);
    let out = resim(&[
        "why",
        "metastable-retry",
        "--request",
        "3",
        "--expectation",
        "0",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("cannot be used with"), "{}", out.stderr);
}

#[test]
fn a_request_that_failed_downstream_names_the_downstream_call_and_its_cause() {
    // The own-system chapter's imported api → db at twice its peak, an example its `resim
    // why` names: the api's call to the db timed out, and the api's retry budget was spent.
    let file = "../book/src/own/imported.ron";
    let args = [
        file,
        "--seed",
        "1",
        "--variant",
        "twice-peak",
        "--request",
        "2831",
    ];
    let json = why_json(&args);
    let r = &json["request"];
    assert_eq!(r["outcome"], "dependency");
    let api = &r["call"]["attempts"][0];
    assert_eq!(api["at_replica"]["outcome"], "dependency");
    let db = &api["calls"][0];
    assert_eq!(
        (&db["target"], &db["outcome"]),
        (&"db".into(), &"timeout".into())
    );
    assert_eq!(db["attempts"][0]["decision"], "budget_exhausted");
    let cause = r["cause"].as_str().unwrap();
    assert!(
        cause.contains("its call #3318 to db ended with timeout")
            && cause.ends_with("no retry: the retry budget refused it)"),
        "{cause}"
    );
}
