//! No field of a pattern decision is dropped on the way to the world: a shaping limiter's
//! delay holds requests back, a breaker's and a limiter's "come back at" reach the retry
//! policy like a server's `Retry-After`. Each test runs a scenario and reads what a user
//! reads: its report.

use crate::support;

use support::{latency, run_text};

/// One open-loop client at `rate` calling `api` with `stack`, and `api` as given.
fn scenario(rate: &str, stack: &str, api: &str, faults: &str) -> String {
    format!(
        r#"Scenario(
            name: "t",
            duration: "20s",
            clients: {{ "c": (load: Open(rate: Constant("{rate}")), call: (target: "api", stack: [{stack}])) }},
            services: {{ "api": ({api}) }},
            faults: [{faults}],
        )"#
    )
}

#[test]
fn a_leaky_bucket_queue_at_admission_shapes_arrivals_to_its_rate() {
    // 50/s arrive; the service's leaky bucket releases 20/s and holds up to 40 waiting. The
    // admitted requests start work at its pace, each after waiting its turn.
    let r = run_text(&scenario(
        "50/s",
        "",
        r#"workers: 100, work: Constant(value: "1ms"), admission: [Limiter((kind: "leaky_queue", rate: "20/s", queue_capacity: 40))]"#,
        "",
    ));
    let api = &r.services[0];
    for b in &r.series[2..19] {
        let ok = b.services[0].ok;
        assert!((15..=25).contains(&ok), "{b:?}");
    }
    assert!(api.failed_by_reason["rate_limited"] > 500, "{api:?}");
    // A full bucket holds 40 requests at 20/s: the admitted wait up to 2s, most of them
    // close to that, since arrivals keep it full.
    let l = latency(&r);
    assert!(l.p50 > 1500.0 && l.max <= 2002.0, "{l:?}");
}

#[test]
fn a_leaky_bucket_queue_in_a_call_stack_paces_the_calls() {
    // The client's own leaky bucket lets 20 calls a second go; the service is fast and idle.
    let r = run_text(&scenario(
        "50/s",
        r#"Limiter((kind: "leaky_queue", rate: "20/s", queue_capacity: 10))"#,
        r#"workers: 100, work: Constant(value: "1ms")"#,
        "",
    ));
    for b in &r.series[2..19] {
        assert!((15..=25).contains(&b.services[0].arrivals), "{b:?}");
    }
    assert!(r.calls[0].counts.shaped > 300, "{:?}", r.calls[0].counts);
    // Up to 10 waiting at 20/s: half a second at most.
    let l = latency(&r);
    assert!(l.p50 > 300.0 && l.max <= 502.0, "{l:?}");
}

#[test]
fn a_retry_waits_for_the_open_breaker_to_half_open() {
    // Every request fails for 5s; the breaker opens for 1s at a time. A retry refused by the
    // open breaker is told when it will let calls through again and waits until then, so
    // requests that meet an open breaker near the end of the fault succeed after it.
    let stack = r#"Retry((max_attempts: 3, backoff: (strategy: Constant(delay: "10ms"), jitter: None))),
        Breaker((sliding_window_size: 10, minimum_number_of_calls: 10, wait_duration_in_open_state: "1s"))"#;
    let r = run_text(&scenario(
        "50/s",
        stack,
        r#"workers: 100, work: Constant(value: "1ms")"#,
        r#"(at: "0s", duration: "5s", kind: ErrorRate(service: "api", error_ratio: 1.0))"#,
    ));
    // Without the breaker's hint, a retry 10ms later is refused again and the request fails
    // within 30ms; with it, a retried request can take up to the breaker's open wait.
    assert!(latency(&r).max > 300.0, "{:?}", latency(&r));
    assert!(r.calls[0].rejected_by_reason["breaker_open"] > 0);
}

#[test]
fn a_retry_waits_for_the_client_limiter_to_refill() {
    // A fixed window of 10 calls per second refuses the rest with the time to the next
    // window; retries wait for it instead of failing 1ms later.
    let stack = r#"Retry((max_attempts: 2, backoff: (strategy: Constant(delay: "1ms"), jitter: None))),
        Limiter((kind: "fixed_window", limit: 10, window: "1s"))"#;
    let r = run_text(&scenario(
        "12/s",
        stack,
        r#"workers: 100, work: Constant(value: "1ms")"#,
        "",
    ));
    assert!(latency(&r).max > 100.0, "{:?}", latency(&r));
}

#[test]
fn a_setting_upstream_accepts_with_a_warning_runs_and_is_reported() {
    // Netflix's AIMD builder accepts an initial limit below the minimum and warns; so do we.
    let r = run_text(&scenario(
        "50/s",
        "",
        r#"workers: 10, work: Constant(value: "1ms"), admission: [Concurrency((kind: "aimd", initial_limit: 5))]"#,
        "",
    ));
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].starts_with("services.api.admission[0]."),
        "{:?}",
        r.warnings
    );
    let human = scenarios::report::Format::Human.render(&r);
    assert!(human.contains("\nwarnings\n"), "{human}");
}

#[test]
fn a_percentage_written_as_a_ratio_runs_and_is_reported_with_both_readings() {
    // resilience4j's `failureRateThreshold` is a percentage: 0.5 is half a percent, which
    // opens the breaker on almost any failure. Accepted, as upstream accepts it, and named.
    let r = run_text(&scenario(
        "50/s",
        "Breaker((failure_rate_threshold: 0.5))",
        r#"workers: 10, work: Constant(value: "1ms")"#,
        "",
    ));
    assert_eq!(
        r.warnings,
        [
            "clients.c.call.stack[0].failure_rate_threshold: 0.5 is a percentage, read as 0.5%; \
          if 50% was meant, write 50"
        ]
    );
    let human = scenarios::report::Format::Human.render(&r);
    assert!(
        human.contains("\nwarnings\n  clients.c.call.stack[0].failure_rate_threshold: 0.5"),
        "{human}"
    );
    let json = scenarios::report::Format::Json.render(&r);
    assert!(json.contains("read as 0.5%"), "{json}");
}
