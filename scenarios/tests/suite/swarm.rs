//! Swarm testing: random topologies, pattern stacks, loads and fault timelines (the settings
//! themselves drawn at random, as TigerBeetle's VOPR does) run without panicking, account
//! for every request, and replay to the same digest.

use proptest::prelude::*;
use scenarios::format::load::parse;
use scenarios::{RunOptions, run};

/// One service of the generated chain.
#[derive(Debug, Clone)]
struct Svc {
    replicas: u32,
    workers: u32,
    capacity: Option<u32>,
    discipline: usize,
    abandoned: usize,
    balancer: usize,
    work_ms: u32,
    growth: bool,
    mode: usize,
    outlier: bool,
    cache: bool,
    admission: usize,
    call_stack: Stack,
}

/// A call's pattern stack.
#[derive(Debug, Clone)]
struct Stack {
    timeout_ms: Option<u32>,
    retry: Option<(u32, usize, bool)>,
    breaker: bool,
    bulkhead: Option<u32>,
    limiter: bool,
    retry_first: bool,
}

fn stack() -> impl Strategy<Value = Stack> {
    (
        proptest::option::of(5u32..300),
        proptest::option::of((1u32..5, 0usize..3, any::<bool>())),
        any::<bool>(),
        proptest::option::of(1u32..20),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(timeout_ms, retry, breaker, bulkhead, limiter, retry_first)| Stack {
                timeout_ms,
                retry,
                breaker,
                bulkhead,
                limiter,
                retry_first,
            },
        )
}

fn service() -> impl Strategy<Value = Svc> {
    (
        (
            1u32..4,
            1u32..8,
            proptest::option::of(1u32..60),
            0usize..4,
            0usize..3,
            0usize..4,
        ),
        (
            1u32..20,
            any::<bool>(),
            0usize..3,
            any::<bool>(),
            any::<bool>(),
            0usize..4,
        ),
        stack(),
    )
        .prop_map(
            |(
                (replicas, workers, capacity, discipline, abandoned, balancer),
                (work_ms, growth, mode, outlier, cache, admission),
                call_stack,
            )| Svc {
                replicas,
                workers,
                capacity,
                discipline,
                abandoned,
                balancer,
                work_ms,
                growth,
                mode,
                outlier,
                cache,
                admission,
                call_stack,
            },
        )
}

fn call_text(target: &str, s: &Stack) -> String {
    let mut layers = Vec::new();
    if s.breaker {
        layers.push(
            "Breaker((sliding_window_size: 10, minimum_number_of_calls: 5, wait_duration_in_open_state: \"200ms\"))"
                .to_string(),
        );
    }
    if let Some(n) = s.bulkhead {
        // Odd sizes wait up to 20ms for a slot, even ones refuse at once.
        let wait = if n % 2 == 1 { "20ms" } else { "0s" };
        layers.push(format!(
            "Bulkhead((max_concurrent_calls: {n}, max_wait_duration: \"{wait}\", queue_capacity: 5))"
        ));
    }
    if s.limiter {
        layers.push("Limiter((kind: \"token_bucket\", rate: \"200/s\", burst: 20))".to_string());
    }
    // A fallback when both the limiter and the breaker are on.
    if s.breaker && s.limiter {
        layers.push(
            "Fallback((use_cache: true, cache_age_max: \"100ms\", use_static: false))".to_string(),
        );
    }
    // Hedge when the limiter is off and the breaker on: a different mix from the other flags.
    if s.breaker && !s.limiter {
        layers.push("Hedge((delay: Fixed(delay: \"15ms\"), max_hedged_attempts: 2))".to_string());
    }
    if let Some((attempts, jitter, budget)) = s.retry {
        let jitter = ["None", "Full", "Decorrelated"][jitter];
        let budget = if budget {
            ", budget: Window((budget_percent: 20, window: \"1s\", min_retries_per_window: 2))"
        } else {
            ""
        };
        let retry = format!(
            "Retry((max_attempts: {attempts}, backoff: (strategy: Exponential(delay_initial: \"5ms\", multiplier: 2.0, delay_max: \"50ms\"), jitter: {jitter}){budget}))"
        );
        if s.retry_first {
            layers.insert(0, retry);
        } else {
            layers.push(retry);
        }
    }
    let timeout = s
        .timeout_ms
        .map_or(String::new(), |t| format!(", timeout: \"{t}ms\""));
    // The safety follows the timeout: keyed writes or unsafe ones with one, reads without.
    let safety = match s.timeout_ms.map(|t| t % 3) {
        Some(0) => "Unsafe",
        Some(_) => "IdempotencyKey",
        None => "Idempotent",
    };
    format!(
        "(target: \"{target}\"{timeout}, safety: {safety}, stack: [{}])",
        layers.join(", ")
    )
}

fn scenario(
    load: (bool, u32),
    client: &Stack,
    services: &[Svc],
    faults: &[(usize, u32, u32, usize)],
) -> String {
    let open = load.0;
    let load = if open {
        format!("Open(rate: Constant(\"{}/s\"))", load.1 * 20)
    } else {
        format!(
            "Closed(users: {}, think: Exponential(mean: \"20ms\"))",
            load.1
        )
    };
    let mut text = format!(
        "Scenario(name: \"swarm\", duration: \"3s\", bucket: \"500ms\",\n clients: {{ \"c\": (load: {load}, call: {}) }},\n services: {{\n",
        call_text("s0", client)
    );
    for (i, s) in services.iter().enumerate() {
        let capacity = s.capacity.map_or("None".to_string(), |c| c.to_string());
        let discipline = [
            "Fifo",
            "Lifo",
            "AdaptiveLifo(threshold: \"5ms\")",
            "CoDel()",
        ][s.discipline];
        let abandoned = ["Work", "DropExpired", "Cancel"][s.abandoned];
        let balancer = ["RoundRobin", "Random", "LeastOutstanding", "PowerOfTwo"][s.balancer];
        let mode = ["Sequential", "FanOut", "Pick"][s.mode];
        let calls = if i + 1 < services.len() {
            let mut calls = vec![call_text(&format!("s{}", i + 1), &s.call_stack)];
            if i + 2 < services.len() {
                calls.push(call_text(&format!("s{}", i + 2), &s.call_stack));
            }
            calls.join(", ")
        } else {
            String::new()
        };
        let admission = [
            "",
            "Concurrency((kind: \"aimd\"))",
            "Limiter((kind: \"fixed_window\", limit: 50, window: \"100ms\"))",
            "Pid(interval: \"50ms\", controller: (setpoint: 5, gain_proportional: 0.05, gain_integral: 0.5, gain_derivative: 0, drop_ratio_max: 0.9))",
        ][s.admission];
        text.push_str(&format!(
            "  \"s{i}\": (replicas: {}, workers: {}, queue: (capacity: {capacity}, discipline: {discipline}), work: Exponential(mean: \"{}ms\"), work_per_in_flight: {}, on_abandoned: {abandoned}, balancer: {balancer}, call_mode: {mode}, calls: [{calls}], admission: [{admission}]{}{}{}, restart: \"100ms\"),\n",
            s.replicas,
            s.workers,
            s.work_ms,
            if s.growth { 0.05 } else { 0.0 },
            if s.outlier { ", outlier: (consecutive_failures: 3, ejection: \"300ms\", max_ejection_percent: 50)" } else { "" },
            if s.cache { ", cache: (hit_ratio: 0.5, warmup: \"500ms\", keys: 3, coalesce: (max_keys: 2, max_waiters: 4))" } else { "" },
            if s.growth { ", idempotency: (ttl: \"1s\", capacity: 50)" } else { "" },
        ));
    }
    text.push_str(" },\n faults: [\n");
    for &(kind, at, len, target) in faults {
        let target = target % services.len();
        let svc = format!("s{target}");
        // A cache flush needs a cache; without one the fault slows the service down instead.
        let kind = if kind > 6 && !open && !services[target].cache {
            0
        } else {
            kind
        };
        let kind = match kind {
            0 => format!("Slowdown(service: \"{svc}\", factor: 5.0)"),
            1 => format!("ErrorRate(service: \"{svc}\", error_ratio: 0.5)"),
            2 => format!("CapacityDrop(service: \"{svc}\", workers: 0)"),
            3 => format!("Crash(service: \"{svc}\")"),
            4 => format!("Latency(service: \"{svc}\", extra: Constant(value: \"30ms\"))"),
            5 => format!("Loss(service: \"{svc}\", loss_ratio: 0.3)"),
            6 => format!("Partition(service: \"{svc}\")"),
            _ if open => "LoadSpike(client: \"c\", factor: 3.0)".to_string(),
            _ => format!("CacheFlush(service: \"{svc}\")"),
        };
        text.push_str(&format!(
            "  (at: \"{at}ms\", duration: \"{len}ms\", kind: {kind}),\n"
        ));
    }
    text.push_str(" ],\n)\n");
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_worlds_account_for_every_request_and_replay(
        load in (any::<bool>(), 1u32..20),
        client in stack(),
        services in proptest::collection::vec(service(), 1..4),
        faults in proptest::collection::vec((0usize..8, 0u32..2500, 1u32..1500, 0usize..3), 0..4),
        seed in 0u64..1000,
    ) {
        let text = scenario(load, &client, &services, &faults);
        let parsed = parse("swarm.ron", &text);
        let s = match parsed {
            Ok(s) => s,
            Err(e) => return Err(TestCaseError::fail(format!("{e}\n{text}"))),
        };
        let options = RunOptions { seed: Some(seed), trace_capacity: 10_000, ..RunOptions::default() };
        let a = run(&s, "swarm.ron", &options).unwrap();
        let r = &a.report;
        prop_assert!(r.stop_reason == "time_limit" || r.stop_reason == "idle", "{}", r.stop_reason);
        prop_assert_eq!(
            r.summary.offered,
            r.summary.successes + r.summary.failures + a.requests_in_flight,
            "every request ends once, or is still in flight\n{}", text
        );
        let b = run(&s, "swarm.ron", &options).unwrap();
        if a.report.digest != b.report.digest {
            let at = sim_core::sim::first_divergence(&a.trace, &b.trace);
            return Err(TestCaseError::fail(format!("digests differ; first divergence {at:?}\n{text}")));
        }
    }
}
