//! Answers beyond success and 5xx, and what callers do with them: 4xx faults (never
//! retried), 429 faults with a `Retry-After` (honoured by the retry policy), the `Pace` layer
//! reading a rate-limited service's quota, and the `AdaptiveTimeout` layer. Each test runs a
//! scenario and reads its report, as a user would.

use crate::support;

use scenarios::Report;
use scenarios::report::CallReport;
use support::{run_library_with, run_text};

/// The client's call site.
fn client_call(r: &Report) -> &CallReport {
    r.calls
        .iter()
        .find(|c| c.path.starts_with("clients."))
        .expect("a client call")
}

/// One open-loop client at 100/s for 20s calling `api` (50 workers, 1ms of work) with a
/// retry policy of three attempts, under `fault` from the start.
fn retried(fault: &str) -> Report {
    run_text(&format!(
        r#"Scenario(
            name: "t",
            duration: "20s",
            clients: {{ "c": (load: Open(rate: Constant("100/s")), call: (target: "api", timeout: "1s",
                stack: [Retry(max_attempts: 3, backoff: (strategy: Constant(delay: "10ms"), jitter: None))])) }},
            services: {{ "api": (workers: 50, work: Constant(value: "1ms")) }},
            faults: [(at: "0s", kind: {fault})],
        )"#
    ))
}

#[test]
fn client_errors_are_not_retried_while_server_errors_are() {
    let four = retried(r#"ClientErrorRate(service: "api", error_ratio: 0.3)"#);
    let five = retried(r#"ErrorRate(service: "api", error_ratio: 0.3)"#);
    // A 4xx is final: one attempt per request, and the failures are the 4xx answers.
    assert_eq!(four.summary.amplification, 1.0, "{:?}", four.summary);
    let api = &four.services[0];
    let failed = four.summary.failures;
    assert_eq!(api.failed_by_reason["client_error"], failed);
    assert!(!api.failed_by_reason.contains_key("error"));
    let share = failed as f64 / four.summary.offered as f64;
    assert!((share - 0.3).abs() < 0.03, "{share}");
    // A 5xx is retried: 1 + p + p² attempts per request for p = 0.3, and p³ of them fail.
    let amp = five.summary.amplification;
    assert!((amp - 1.39).abs() < 0.04, "{amp}");
    let share = five.summary.failures as f64 / five.summary.offered as f64;
    assert!((share - 0.027).abs() < 0.012, "{share}");
}

/// The same client under a 429 fault from 5s to 10s with `retry_after`.
fn throttled(retry_after: &str) -> Report {
    run_text(&format!(
        r#"Scenario(
            name: "t",
            duration: "20s",
            clients: {{ "c": (load: Open(rate: Constant("100/s")), call: (target: "api", timeout: "1s",
                stack: [Retry(max_attempts: 2, retry_after_max: "10s", backoff: (strategy: Constant(delay: "10ms"), jitter: None))])) }},
            services: {{ "api": (workers: 50, work: Constant(value: "1ms")) }},
            faults: [(at: "5s", duration: "5s", kind: TooManyRequests(service: "api", refused_ratio: 1.0, retry_after: {retry_after}))],
        )"#
    ))
}

#[test]
fn a_retry_after_until_the_end_of_a_429_fault_saves_every_request() {
    // Every request of the fault's five seconds is refused once and told to come back at
    // 10s: its one retry then succeeds, so nothing fails, a quarter of the requests take two
    // attempts, and the longest waited the whole five seconds.
    let r = throttled(r#"Until("10s")"#);
    assert_eq!(r.summary.failures, 0, "{:?}", r.summary);
    assert!(
        (r.summary.amplification - 1.25).abs() < 0.02,
        "{:?}",
        r.summary
    );
    let l = r.summary.latency_ms.as_ref().unwrap();
    assert!(l.max > 4900.0 && l.max < 5010.0, "{l:?}");
    assert_eq!(
        r.services[0].failed_by_reason["rate_limited"],
        r.summary.attempts - r.summary.offered
    );
}

#[test]
fn a_fixed_retry_after_shorter_than_the_fault_is_refused_again() {
    // Told to wait 2s: the requests of 5s–8s retry into the fault and fail (three fifths of
    // the fault's requests, 15% of the run), those of 8s–10s retry after it and succeed.
    let r = throttled(r#"After("2s")"#);
    let share = r.summary.failures as f64 / r.summary.offered as f64;
    assert!((share - 0.15).abs() < 0.01, "{share}");
    let l = r.summary.latency_ms.as_ref().unwrap();
    assert!(l.max > 1990.0 && l.max < 2010.0, "{l:?}");
}

/// `users` closed-loop users (no think time to speak of) calling `api`, which admits 50
/// requests per one-second window, with `stack`.
fn windowed(stack: &str) -> Report {
    run_text(&format!(
        r#"Scenario(
            name: "t",
            duration: "20s",
            clients: {{ "c": (load: Closed(users: 20, think: Constant(value: "5ms")), call: (target: "api", timeout: "5s", stack: [{stack}])) }},
            services: {{ "api": (workers: 50, work: Constant(value: "1ms"),
                admission: [Limiter((kind: "fixed_window", limit: 50, window: "1s"))]) }},
        )"#
    ))
}

#[test]
fn pacing_on_the_quota_avoids_the_refusals_and_keeps_goodput_at_the_limit() {
    let hammer = windowed("");
    let paced = windowed("Pace()");
    let refused = |r: &Report| {
        r.services[0]
            .failed_by_reason
            .get("rate_limited")
            .copied()
            .unwrap_or(0)
    };
    // Both get the limit: 50 a window, 1,000 in 20s.
    for r in [&hammer, &paced] {
        assert!(
            (990..=1000).contains(&r.summary.successes),
            "{:?}",
            r.summary
        );
    }
    // Without the layer, users are refused for the rest of every window: thousands of 429s.
    assert!(refused(&hammer) > 20_000, "{}", refused(&hammer));
    // With it, only the requests already on their way when the last unit went are refused
    // (at most the 19 other users' requests, once per window).
    assert!(refused(&paced) <= 20 * 19, "{}", refused(&paced));
    let pace = client_call(&paced).pace.as_ref().expect("a pace report");
    assert!(pace.held >= 19 * 19, "{pace:?}");
    assert!(pace.exhausted_replies >= 20, "{pace:?}");
    assert!(client_call(&hammer).pace.is_none());
}

/// Open-loop 100/s to `api` (100 workers, exponential work of mean 10ms), slowed down
/// `factor` times from 10s to 20s, with either a fixed `timeout` or an adaptive one.
fn slowed(factor: u32, timeout: &str) -> Report {
    run_text(&format!(
        r#"Scenario(
            name: "t",
            duration: "30s",
            clients: {{ "c": (load: Open(rate: Constant("100/s")), call: (target: "api", {timeout})) }},
            services: {{ "api": (workers: 100, work: Exponential(mean: "10ms")) }},
            faults: [(at: "10s", duration: "10s", kind: Slowdown(service: "api", factor: {factor}))],
        )"#
    ))
}

const ADAPTIVE: &str = r#"stack: [AdaptiveTimeout(percentile: 99, multiplier: 1.5, floor: "10ms", ceiling: "2s", initial: "100ms", window: 200, min_samples: 20)]"#;

#[test]
fn an_adaptive_timeout_follows_a_slowdown_where_a_fixed_one_times_out() {
    // The healthy p99 of exponential work of mean 10ms is 10ms · ln 100 = 46ms: a fixed timeout
    // there times out 1% of attempts when healthy and e^(-46/30) = 22% under a 3× slowdown.
    let fixed = slowed(3, r#"timeout: "46ms""#);
    let adaptive = slowed(3, ADAPTIVE);
    let timeouts = |r: &Report| client_call(r).counts.timeouts;
    let offered_slow = 1000.0;
    let fixed_share = timeouts(&fixed) as f64 / offered_slow;
    assert!(fixed_share > 0.18, "{fixed_share}");
    assert!(
        timeouts(&adaptive) * 4 < timeouts(&fixed),
        "{} vs {}",
        timeouts(&adaptive),
        timeouts(&fixed)
    );
    // The timeout in use rises from about 1.5 × 46ms to about 1.5 × 138ms during the slowdown.
    let a = client_call(&adaptive)
        .adaptive_timeout
        .as_ref()
        .expect("an adaptive report");
    let series = |t: usize| {
        adaptive.series[t].calls[0]
            .timeout_ms_max
            .flatten()
            .unwrap()
    };
    assert!((50.0..=100.0).contains(&series(8)), "{}", series(8));
    assert!((150.0..=300.0).contains(&series(18)), "{}", series(18));
    assert!(a.timeout_ms_max >= series(18));
    // And comes back down after it.
    assert!(series(29) < 100.0, "{}", series(29));
}

#[test]
fn an_adaptive_timeout_waits_out_a_dependency_that_hangs() {
    // The trade-off: when the dependency becomes 50 times slower, the fixed timeout fails
    // requests after 46ms, while the adaptive one climbs to its ceiling and keeps callers
    // waiting up to 2s for the answers it still gets.
    let fixed = slowed(50, r#"timeout: "46ms""#);
    let adaptive = slowed(50, ADAPTIVE);
    let a = client_call(&adaptive).adaptive_timeout.as_ref().unwrap();
    assert_eq!(a.timeout_ms_max, 2000.0, "{a:?}");
    let p99 = |r: &Report| r.summary.latency_ms.as_ref().unwrap().p99;
    assert!(p99(&fixed) <= 46.5, "{}", p99(&fixed));
    assert!(p99(&adaptive) > 1000.0, "{}", p99(&adaptive));
    assert!(adaptive.summary.successes > fixed.summary.successes);
}

#[test]
fn the_library_scenarios_and_their_variants_meet_their_expectations() {
    let refused = |r: &Report| {
        r.services[0]
            .failed_by_reason
            .get("rate_limited")
            .copied()
            .unwrap_or(0)
    };
    let hammer = run_library_with("retry-after-429", None, &[], None);
    let honour = run_library_with("retry-after-429", Some("retry-after"), &[], None);
    let paced = run_library_with("retry-after-429", Some("paced"), &[], None);
    for r in [&hammer, &honour, &paced] {
        assert!(r.passed(), "{:?}", r.expectations);
        assert_eq!(r.summary.successes, 3000, "the limit: 100 a window for 30s");
    }
    // One refusal per user per window when the users honour Retry-After (50 users, 30
    // windows), a few per window when they pace, tens of thousands when they hammer.
    assert_eq!(refused(&honour), 50 * 30);
    assert!(refused(&paced) < 50, "{}", refused(&paced));
    assert!(
        refused(&hammer) > 40 * refused(&honour),
        "{}",
        refused(&hammer)
    );
    let errors = run_library_with("client-errors", None, &[], None);
    let server = run_library_with("client-errors", Some("server-errors"), &[], None);
    assert!(errors.passed() && server.passed());
    assert!(
        (server.summary.amplification - 1.24).abs() < 0.02,
        "{:?}",
        server.summary
    );
    let adaptive = run_library_with("adaptive-timeout", None, &[], None);
    let fixed = run_library_with("adaptive-timeout", Some("fixed"), &[], None);
    assert!(adaptive.passed() && fixed.passed());
    let timeouts = |r: &Report| client_call(r).counts.timeouts;
    assert!(
        timeouts(&adaptive) * 10 < timeouts(&fixed),
        "{} vs {}",
        timeouts(&adaptive),
        timeouts(&fixed)
    );
}
