//! `resim import`: production configurations (Envoy v3, resilience4j, gRPC service configs)
//! read into the scenario format.
//!
//! The fixtures under `tests/import/` are written after each project's documented schema, one
//! per feature. For each: the scenario written and the mapping table on stderr are snapshots
//! (`import__<format>_<fixture>`), and what is written loads (the importer checks it, and the
//! runs below run it). Malformed files get one line each with the file, the place and what
//! the source format expected, exit code 2. The runs show the imported behaviour: an imported
//! `outlier_detection` ejects a failing host after `consecutive_5xx` failures and returns it
//! after `base_ejection_time`; an imported resilience4j retry makes the declared attempts and
//! waits, its rate limiter waits for the next period, its breaker opens at its failure rate
//! threshold once its minimum calls are recorded; an imported gRPC retry policy retries its
//! status codes only, with full-jitter waits of the declared mean; an imported Istio
//! VirtualService retries on 5xx and per-try timeouts within the route's timeout, and
//! `http1MaxPendingRequests` bounds the queue.

use crate::support;

use scenarios::RunOptions;
use std::path::PathBuf;
use support::{resim_in, run_file_text, service_report, workspace_root};

/// `resim import ARGS` from the workspace root: its exit code, stdout and stderr.
fn import(args: &[&str]) -> support::Resim {
    let mut all = vec!["import"];
    all.extend_from_slice(args);
    resim_in(&workspace_root(), &all)
}

const FIXTURES: &str = "scenarios/tests/import";

/// The scenario and the table of `resim import FIXTURE` (an Envoy fixture), as one snapshot.
fn check_fixture(name: &str) {
    check_format("envoy", name);
}

/// The scenario and the table of `resim import tests/import/FORMAT/NAME`, as one snapshot
/// named `FORMAT_NAME`.
fn check_format(format: &str, name: &str) {
    let path = format!("{FIXTURES}/{format}/{name}");
    let out = import(&[&path]);
    assert_eq!(out.code, 0, "resim import {path}: {}", out.stderr);
    let snapshot = format!("{}\n---- stderr ----\n{}", out.stdout, out.stderr);
    insta::with_settings!({ description => format!("resim import {path}") }, {
        insta::assert_snapshot!(
            format!("{format}_{}", name.replace(['.', '-'], "_")),
            snapshot
        );
    });
}

#[test]
fn envoy_outlier_detection() {
    check_fixture("outlier.yaml");
}

#[test]
fn envoy_circuit_breakers_over_http1() {
    check_fixture("circuit-breakers.yaml");
}

#[test]
fn envoy_retry_budget_health_check_and_http2_from_xds_json() {
    check_fixture("retry-budget.json");
}

#[test]
fn envoy_route_retry_policy_and_adaptive_concurrency() {
    check_fixture("route-retry.yaml");
}

#[test]
fn envoy_hedge_on_per_try_timeout() {
    check_fixture("hedge.yaml");
}

/// Circuit breakers under a retry policy: the retry never retries their overflow.
#[test]
fn envoy_overflow_is_not_retried() {
    check_fixture("overflow.yaml");
}

/// A configuration in resilience4j 0.x's names (its Spring Boot demo's) imports as the 1.x
/// names it became.
#[test]
fn resilience4j_names_from_before_1_0() {
    check_format("resilience4j", "legacy.yml");
}

/// `ignoreExceptions` naming the refusals of every gate of an instance turns their retry off;
/// naming only some of them is listed as left out, with the ones it leaves out.
#[test]
fn resilience4j_ignored_refusals() {
    check_format("resilience4j", "refusals.yml");
}

/// resilience4j's Spring Boot demo shape: dotted keys, `configs.default` and a named config,
/// instances with a `baseConfig`, all six modules, Spring's own settings beside them.
#[test]
fn resilience4j_upstream_demo_shape() {
    check_format("resilience4j", "demo.yml");
}

/// `application.properties`: kebab-case names, aspect orders that put the breaker outside the
/// retry and the time limiter outside both, exponential and randomized waits, a thread pool.
#[test]
fn resilience4j_properties_with_aspect_orders() {
    check_format("resilience4j", "application.properties");
}

/// A count-based CircuitBreaker instance, its minimum calls below its window.
#[test]
fn resilience4j_count_based_breaker() {
    check_format("resilience4j", "breaker.yml");
}

/// A gRPC service config with a retry policy (maxAttempts above gRPC's cap of 5), status
/// codes by name, lower case and number, a method-specific name, retry throttling.
#[test]
fn grpc_retry_policy_and_throttling() {
    check_format("grpc", "retry.json");
}

/// A gRPC hedging policy for every service (`name: [{}]`).
#[test]
fn grpc_hedging_policy() {
    check_format("grpc", "hedging.json");
}

/// Every malformed file, and every command line that cannot be done, gets one line with the
/// file and the place, and exit code 2.
#[test]
fn malformed_configurations_get_one_line_and_exit_code_2() {
    let mut lines = Vec::new();
    let dir = workspace_root().join(FIXTURES).join("malformed");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let into = format!("{FIXTURES}/into-base.ron");
    let outlier = format!("{FIXTURES}/envoy/outlier.yaml");
    let mut cases: Vec<Vec<String>> = names
        .iter()
        .map(|n| vec![format!("{FIXTURES}/malformed/{n}")])
        .collect();
    cases.push(vec![
        outlier.clone(),
        "--call".into(),
        "services.api.calls[0]".into(),
    ]);
    cases.push(vec![outlier.clone(), "--into".into(), into.clone()]);
    let wrong = "clients.users.call";
    cases.push(vec![
        outlier.clone(),
        "--into".into(),
        into.clone(),
        "--call".into(),
        wrong.into(),
    ]);
    cases.push(vec![
        outlier.clone(),
        "--into".into(),
        into.clone(),
        "--call".into(),
        "services.api.calls[3]".into(),
    ]);
    cases.push(vec![outlier.clone(), "--from".into(), "istio".into()]);
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = import(&args);
        assert_eq!(
            out.code, 2,
            "resim import {args:?} should fail with 2: {}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "nothing on stdout: {}", out.stdout);
        let text = out.stderr.trim_end();
        assert!(!text.contains('\n'), "one line: {text}");
        assert!(!text.contains("panicked"), "no panic: {text}");
        lines.push(format!("resim import {}\n  {text}", args.join(" ")));
    }
    insta::with_settings!({ description => "one line per malformed file under tests/import/malformed, and per command line that cannot be done" }, {
        insta::assert_snapshot!("malformed", lines.join("\n"));
    });
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resim-import-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `tests/import/into-base.ron` with `config` imported into its api → db call, as text.
fn imported_into_base(config: &str) -> String {
    let dir = scratch("into");
    let out_file = dir.join(format!("{}.ron", config.replace(['/', '.'], "-")));
    let out = import(&[
        &format!("{FIXTURES}/{config}"),
        "--into",
        &format!("{FIXTURES}/into-base.ron"),
        "--call",
        "services.api.calls[0]",
        "--out",
        out_file.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::fs::read_to_string(out_file).unwrap()
}

/// The imported scenario written into an existing one: the call replaced whole (what the
/// import does not set kept), the target's settings written in, the file's comments kept.
#[test]
fn envoy_into_an_existing_scenario() {
    let written = imported_into_base("envoy/outlier.yaml");
    insta::with_settings!({ description => "resim import tests/import/envoy/outlier.yaml --into tests/import/into-base.ron --call services.api.calls[0]" }, {
        insta::assert_snapshot!("envoy_into_base", written);
    });
}

/// The number of times db's replicas were ejected in `text` run at its seed.
fn ejections(text: &str) -> u64 {
    let report = run_file_text("imported.ron", text, &RunOptions::default());
    service_report(&report, "db").ejections
}

/// Envoy's `outlier_detection` as imported behaves as Envoy's: a host that keeps failing is
/// ejected after `consecutive_5xx` failures in a row and comes back after
/// `base_ejection_time`, to be ejected again while it still fails. The first db replica is
/// down for 20s: with a 5s ejection it is ejected about 20 / 5 = 4 times (once, then again each
/// time it comes back); with 10s, about twice; with `consecutive_5xx` above what the crash can
/// fail, never.
#[test]
fn envoy_imported_outlier_detection_ejects_and_returns_the_host() {
    let text = imported_into_base("envoy/outlier.yaml");
    assert!(text.contains(
        "consecutive_failures: 3, // envoy: clusters[db].outlier_detection.consecutive_5xx"
    ));
    let five = ejections(&text);
    assert!(
        (4..=5).contains(&five),
        "20s down, out 5s each time: {five} ejections"
    );
    let ten = ejections(&text.replace("ejection: \"5s\"", "ejection: \"10s\""));
    assert!(
        (2..=3).contains(&ten),
        "20s down, out 10s each time: {ten} ejections"
    );
    let never =
        ejections(&text.replace("consecutive_failures: 3,", "consecutive_failures: 1000000,"));
    assert_eq!(never, 0, "a run of a million failures is never reached");
}

/// `tests/import/into-oneshot.ron` (one user calls db once; db fails everything) with
/// `config` imported into its call, as text.
fn imported_into_oneshot(config: &str) -> String {
    let dir = scratch("oneshot");
    let out_file = dir.join(format!("{}.ron", config.replace(['/', '.'], "-")));
    let out = import(&[
        &format!("{FIXTURES}/{config}"),
        "--into",
        &format!("{FIXTURES}/into-oneshot.ron"),
        "--call",
        "clients.users.call",
        "--out",
        out_file.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::fs::read_to_string(out_file).unwrap()
}

/// (attempts db saw, failures by reason, makespan in ms) of `text` run at its seed.
fn oneshot(text: &str) -> (u64, std::collections::BTreeMap<String, u64>, f64) {
    let report = run_file_text("imported.ron", text, &RunOptions::default());
    let client = support::client_report(&report, "users");
    (
        service_report(&report, "db").arrivals,
        client.failures_by_reason.clone(),
        client.makespan_ms.expect("the one-shot user finished"),
    )
}

/// resilience4j's Retry as imported makes the attempts and waits the file declares: four
/// attempts, waiting 100ms, 200ms and 400ms (exponential, doubling) between them, so the
/// failing call ends after 700ms of waits and four 1ms attempts; two attempts wait once.
#[test]
fn resilience4j_imported_retry_makes_the_declared_attempts_and_waits() {
    let text = imported_into_oneshot("resilience4j/retry.yml");
    let (attempts, _, makespan) = oneshot(&text);
    assert_eq!(attempts, 4);
    assert!((makespan - 704.0).abs() < 0.5, "makespan {makespan}ms");
    let (attempts, _, makespan) = oneshot(&text.replace("max_attempts: 4,", "max_attempts: 2,"));
    assert_eq!(attempts, 2);
    assert!((makespan - 102.0).abs() < 0.5, "makespan {makespan}ms");
}

/// resilience4j's RateLimiter as imported hands out `limitForPeriod` permissions per
/// `limitRefreshPeriod` and lets a call wait up to `timeoutDuration` for a later period's:
/// ten users at once, two permissions per 500ms, pass in pairs at 0, 0.5s, ... 2s with a 3s
/// wait; with a 1s wait the pairs after 1s are refused (`client_limited`).
#[test]
fn resilience4j_imported_rate_limiter_waits_for_the_next_period() {
    let text = imported_into_oneshot("resilience4j/ratelimiter.yml");
    let ten = text.replace("OneShot(users: 1)", "OneShot(users: 10)");
    let (attempts, refused, makespan) = oneshot(&ten);
    assert_eq!(attempts, 10);
    assert!(!refused.contains_key("client_limited"), "{refused:?}");
    assert!((makespan - 2001.0).abs() < 0.5, "makespan {makespan}ms");
    let short = ten.replace("wait_max: \"3s\"", "wait_max: \"1s\"");
    let (attempts, refused, _) = oneshot(&short);
    assert_eq!(attempts, 6, "three pairs within 1s");
    assert_eq!(refused.get("client_limited"), Some(&4), "{refused:?}");
}

/// gRPC's retry policy as imported retries the declared status codes only, up to
/// `maxAttempts`, each retry waiting uniform on [0, initialBackoff · multiplier^(n-1)): db's
/// 500 is `INTERNAL`, so three attempts with waits of mean 50ms and 100ms (150ms in all, over
/// 200 seeds within a few standard errors of 4.6ms); with `UNAVAILABLE` only, no retry.
#[test]
fn grpc_imported_retry_policy_retries_its_codes_with_full_jitter() {
    let text = imported_into_oneshot("grpc/db-retry.json");
    let (mut total, seeds) = (0.0, 200);
    for seed in 0..seeds {
        let report = run_file_text("imported.ron", &text, &support::at_seed(Some(seed)));
        assert_eq!(service_report(&report, "db").arrivals, 3);
        let makespan = support::client_report(&report, "users")
            .makespan_ms
            .unwrap();
        assert!(
            (3.0..303.0).contains(&makespan),
            "seed {seed}: {makespan}ms"
        );
        total += makespan - 3.0;
    }
    let mean = total / f64::from(seeds as u32);
    assert!(
        (mean - 150.0).abs() < 20.0,
        "mean wait {mean}ms, expected 150ms"
    );
    let unavailable = text.replace("retry_on_status: [500]", "retry_on_status: [503]");
    assert_eq!(
        oneshot(&unavailable).0,
        1,
        "a 500 is not UNAVAILABLE: no retry"
    );
}

/// Istio's reference shapes: a DestinationRule with a connection pool, outlier detection and
/// two subsets, and a VirtualService routing to v2 with a timeout and retries, in one
/// multi-document YAML file (`---` between them).
#[test]
fn istio_destination_rule_and_virtual_service() {
    check_format("istio", "reviews.yaml");
}

/// A VirtualService alone: a route timeout, retries on 5xx with a per-try timeout.
#[test]
fn istio_virtual_service_retries() {
    check_format("istio", "retries.yaml");
}

/// A traffic policy's `retryBudget` (Istio 1.27): a `Concurrency` budget, with the pool's
/// `maxRetries` listed as ignored, as Envoy ignores `max_retries` beside a `retry_budget`.
#[test]
fn istio_retry_budget() {
    check_format("istio", "retry-budget.yaml");
}

/// The `budget` line of an imported scenario: the value, without its comment.
fn budget_line(stdout: &str) -> String {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("budget:"))
        .unwrap_or_else(|| panic!("no budget in:\n{stdout}"));
    line.split(" //").next().unwrap().trim().to_string()
}

/// Istio is a front for Envoy: a DestinationRule's `retryBudget` imports as the same budget
/// as the Envoy cluster `retry_budget` it becomes, beside a `max_retries` both ignore, for
/// each mix of given and defaulted numbers (20% and 3 when left out).
#[test]
fn istio_retry_budget_imports_as_envoys() {
    let dir = scratch("budget-envoy");
    for (i, (percent, min)) in [
        (Some(25), Some(5)),
        (None, None),
        (Some(0), Some(7)),
        (Some(100), None),
        (None, Some(1)),
    ]
    .into_iter()
    .enumerate()
    {
        // The fields given, in a flow mapping's syntax.
        let given = |fields: [Option<String>; 2]| {
            fields.into_iter().flatten().collect::<Vec<_>>().join(", ")
        };
        let istio_budget = given([
            percent.map(|p| format!("percent: {p}")),
            min.map(|m| format!("minRetryConcurrency: {m}")),
        ]);
        let envoy_budget = given([
            percent.map(|p| format!("budget_percent: {{ value: {p} }}")),
            min.map(|m| format!("min_retry_concurrency: {m}")),
        ]);
        let istio = dir.join(format!("istio-{i}.yaml"));
        std::fs::write(&istio, format!("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {{ name: ratings }}\nspec:\n  host: ratings\n  trafficPolicy:\n    connectionPool: {{ http: {{ maxRetries: 10 }} }}\n    retryBudget: {{ {istio_budget} }}\n---\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{ name: ratings }}\nspec:\n  hosts: [ratings]\n  http:\n  - route: [{{ destination: {{ host: ratings }} }}]\n    retries: {{ attempts: 3, retryOn: 5xx }}\n")).unwrap();
        let envoy = dir.join(format!("envoy-{i}.yaml"));
        std::fs::write(&envoy, format!("static_resources:\n  listeners:\n  - name: ingress\n    filter_chains:\n    - filters:\n      - name: envoy.filters.network.http_connection_manager\n        typed_config:\n          \"@type\": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n          stat_prefix: ingress_http\n          route_config:\n            virtual_hosts:\n            - name: backend\n              domains: [\"*\"]\n              routes:\n              - match: {{ prefix: / }}\n                route: {{ cluster: ratings, retry_policy: {{ retry_on: 5xx, num_retries: 3 }} }}\n  clusters:\n  - name: ratings\n    circuit_breakers: {{ thresholds: [{{ max_retries: 10, retry_budget: {{ {envoy_budget} }} }}] }}\n")).unwrap();
        let istio = import(&[istio.to_str().unwrap()]);
        let envoy = import(&[envoy.to_str().unwrap()]);
        assert_eq!(istio.code, 0, "{}", istio.stderr);
        assert_eq!(envoy.code, 0, "{}", envoy.stderr);
        let line = budget_line(&istio.stdout);
        let expected = format!(
            "budget: Concurrency(budget_percent: {}.0, min_retry_concurrency: {}),",
            percent.unwrap_or(20),
            min.unwrap_or(3)
        );
        assert_eq!(line, expected, "case {i}: {percent:?}, {min:?}");
        assert_eq!(
            line,
            budget_line(&envoy.stdout),
            "case {i}: {percent:?}, {min:?}"
        );
        assert!(
            istio
                .stderr
                .contains("maxRetries: a simplification: Envoy ignores max_retries"),
            "{}",
            istio.stderr
        );
    }
}

/// A subset's `retryBudget` replaces the host's whole: its percent, Istio's default floor of
/// 3 for what it leaves out, and its `budgetInterval` listed (resim's budget counts only the
/// requests in flight).
#[test]
fn istio_subset_retry_budget_replaces_the_hosts() {
    let out = import(&[&format!("{FIXTURES}/istio/retry-budget-subset.yaml")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        budget_line(&out.stdout),
        "budget: Concurrency(budget_percent: 50.0, min_retry_concurrency: 3),"
    );
    for listed in [
        "spec.trafficPolicy.retryBudget: a simplification: the subset's retryBudget replaces it whole",
        "subsets[canary].trafficPolicy.retryBudget.budgetInterval: no counterpart",
    ] {
        assert!(out.stderr.contains(listed), "{listed} in:\n{}", out.stderr);
    }
}

/// A retry budget's percent outside 0..100 is refused, with the field and the range.
#[test]
fn istio_retry_budget_percent_out_of_range_is_refused() {
    let dir = scratch("budget-range");
    let file = dir.join("over.yaml");
    let text = std::fs::read_to_string(
        workspace_root()
            .join(FIXTURES)
            .join("istio/retry-budget.yaml"),
    )
    .unwrap()
    .replace("percent: 25", "percent: 250");
    std::fs::write(&file, text).unwrap();
    let out = import(&[file.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("DestinationRule[ratings].spec.trafficPolicy.retryBudget.percent: ")
            && out
                .stderr
                .contains("expected a percentage from 0 to 100, got 250"),
        "{}",
        out.stderr
    );
}

/// A `kind: List` (as `kubectl get -o json` writes it): a weighted split over two subsets,
/// consistent hashing, gateway errors only, HTTP/2, a host with Istio's default route, and an
/// object of another kind.
#[test]
fn istio_list_with_defaults_and_splits() {
    check_format("istio", "list.json");
}

/// Istio written into an existing scenario: the call replaced, the host's settings written in.
#[test]
fn istio_into_an_existing_scenario() {
    let text = imported_into_oneshot("istio/pending.yaml");
    insta::with_settings!({ description => "resim import tests/import/istio/pending.yaml --into tests/import/into-oneshot.ron --call clients.users.call" }, {
        insta::assert_snapshot!("istio_into_oneshot", text);
    });
}

/// Istio's `http1MaxPendingRequests` as imported bounds the queue for a connection: ten
/// users call db at once through `maxConnections: 1` and `http1MaxPendingRequests: 1`, so one
/// request is in flight, one waits, and the other eight are refused at once as overflow (no
/// retry: `attempts: 0`); a bound of 3 lets four through, two connections and 3 pending five.
#[test]
fn istio_imported_pending_requests_bound_the_queue() {
    let text = imported_into_oneshot("istio/pending.yaml")
        .replace("OneShot(users: 1)", "OneShot(users: 10)");
    let check = |text: &str, through: u64| {
        let (attempts, failures, _) = oneshot(text);
        assert_eq!(attempts, through, "reached db: {failures:?}");
        let refused: u64 = failures
            .iter()
            .filter(|(reason, _)| reason.as_str() != "error")
            .map(|(_, n)| n)
            .sum();
        assert_eq!(refused, 10 - through, "refused before db: {failures:?}");
    };
    check(&text, 2);
    check(&text.replace("queue_capacity: 1,", "queue_capacity: 3,"), 4);
    let two = text
        .replace("queue_capacity: 1,", "queue_capacity: 3,")
        .replace("max_concurrent_calls: 1,", "max_concurrent_calls: 2,");
    check(&two, 5);
}

/// Envoy's router never retries an overflow, and the imported retry does not either: ten
/// users call db at once through one connection and one pending request, and db fails every
/// request. Two requests get through and each makes its four attempts (a retry waits for the
/// connection like any request); the eight refused by the circuit breakers fail at once as
/// `bulkhead_full`. Retrying local rejections (resim's default, resilience4j's) instead sends
/// the refused requests back after their backoff, so more reach db and fewer end refused.
#[test]
fn envoy_imported_retry_never_retries_an_overflow() {
    let text = imported_into_oneshot("envoy/overflow.yaml")
        .replace("OneShot(users: 1)", "OneShot(users: 10)");
    assert!(text.contains("retry_on_local_rejection: false,"), "{text}");
    let (attempts, failures, _) = oneshot(&text);
    assert_eq!(
        attempts, 8,
        "two requests, four attempts each: {failures:?}"
    );
    assert_eq!(failures.get("bulkhead_full"), Some(&8), "{failures:?}");
    assert_eq!(failures.get("error"), Some(&2), "{failures:?}");
    let retried = text.replace(
        "retry_on_local_rejection: false,",
        "retry_on_local_rejection: true,",
    );
    let (attempts, failures, _) = oneshot(&retried);
    assert!(
        attempts > 8,
        "refused requests came back: {attempts} attempts, {failures:?}"
    );
    let refused = failures.get("bulkhead_full").copied().unwrap_or(0);
    assert!(refused < 8, "fewer end refused: {failures:?}");
}

/// resilience4j's CircuitBreaker as imported opens as resilience4j's does: once
/// `minimumNumberOfCalls` calls are recorded, at a failure rate of at least
/// `failureRateThreshold` percent, and then refuses every call for `waitDurationInOpenState`
/// (a minute, longer than the run). One user calls db again 1ms after each answer: with
/// every call failing, or 60% of them, db sees exactly the 100 calls the breaker needs before
/// it judges; with 40% failing it never opens; judged after 200 calls, db sees 200.
#[test]
fn resilience4j_imported_breaker_opens_at_its_threshold_after_its_minimum_calls() {
    let text = imported_into_oneshot("resilience4j/breaker.yml").replace(
        "OneShot(users: 1)",
        "Closed(users: 1, think: Constant(value: \"1ms\"))",
    );
    let failing = |ratio: &str| text.replace("error_ratio: 1.0", &format!("error_ratio: {ratio}"));
    let calls = |text: &str| {
        let report = run_file_text("imported.ron", text, &RunOptions::default());
        let refused = support::client_report(&report, "users")
            .failures_by_reason
            .get("breaker_open")
            .copied();
        (service_report(&report, "db").arrivals, refused)
    };
    let (all, refused) = calls(&text);
    assert_eq!(all, 100);
    assert!(refused.is_some_and(|n| n > 10_000), "{refused:?}");
    assert_eq!(calls(&failing("0.6")).0, 100);
    let (below, refused) = calls(&failing("0.4"));
    assert!(below > 10_000, "{below} calls");
    assert_eq!(refused, None, "never open below the threshold");
    let later = text.replace(
        "minimum_number_of_calls: 100,",
        "minimum_number_of_calls: 200,",
    );
    assert_eq!(calls(&later).0, 200);
}

/// Istio's VirtualService `retries` and `timeout` as imported behave as the sidecar's: on a
/// 5xx, `attempts: 2` retries twice (three attempts at db); each attempt is cut at
/// `perTryTimeout` and retried (a 5xx covers an upstream that does not answer), and the
/// route's `timeout` spans them all: db takes 2s, so three attempts of 300ms and two back-offs
/// end within the 1s; with no retries the one attempt ends at 300ms.
#[test]
fn istio_imported_virtual_service_retries_and_deadline() {
    let text = imported_into_oneshot("istio/retries.yaml");
    let (attempts, failures, _) = oneshot(&text);
    assert_eq!(attempts, 3);
    assert_eq!(failures.get("error"), Some(&1), "{failures:?}");
    let slow = text
        .replace(
            "faults: [(at: \"0s\", kind: ErrorRate(service: \"db\", error_ratio: 1.0))]",
            "faults: []",
        )
        .replace(
            "work: Constant(value: \"1ms\")",
            "work: Constant(value: \"2s\")",
        );
    let (attempts, failures, makespan) = oneshot(&slow);
    assert_eq!(attempts, 3);
    assert_eq!(failures.get("timeout"), Some(&1), "{failures:?}");
    assert!((900.0..1000.0).contains(&makespan), "makespan {makespan}ms");
    let (attempts, _, makespan) = oneshot(&slow.replace("max_retries: 2,", "max_retries: 0,"));
    assert_eq!(attempts, 1);
    assert!((makespan - 300.0).abs() < 0.5, "makespan {makespan}ms");
}
