//! The simulated world, feature by feature, through what a report shows: queueing theory,
//! closed loops, balancers, crashes, cancellation, caches, network faults, capacity drops,
//! error rates, schedules and limits.

use crate::support;

use scenarios::format::load::parse;
use scenarios::{Report, RunOptions, run};
use sim_core::queueing::{erlang_c, mm1_mean_wait, mmc_mean_wait};
use support::{failures, latency, run_text, service_report};

/// A scenario with one open-loop client `c` calling `api`, and the given services and faults.
fn open(rate: &str, call: &str, duration: &str, services: &str, faults: &str) -> String {
    format!(
        r#"Scenario(
            name: "t",
            duration: "{duration}",
            clients: {{ "c": (load: Open(rate: Constant("{rate}")), call: (target: "api"{call})) }},
            services: {{ {services} }},
            faults: [{faults}],
        )"#
    )
}

fn close(observed: f64, expected: f64, tolerance: f64) -> bool {
    (observed - expected).abs() <= tolerance * expected
}

#[test]
fn mm1_matches_queueing_theory() {
    // λ = 50/s, μ = 100/s: mean time in system 1 / (μ − λ) = 20ms.
    let r = run_text(&open(
        "50/s",
        "",
        "4000s",
        r#""api": (workers: 1, queue: (capacity: None), work: Exponential(mean: "10ms"))"#,
        "",
    ));
    assert!(r.summary.offered > 190_000);
    assert!(close(latency(&r).mean, 20.0, 0.05), "{:?}", latency(&r));
}

#[test]
fn mmc_matches_queueing_theory() {
    // c = 4, λ = 300/s, μ = 100/s per worker: Erlang C wait plus 10ms of work.
    let expected_ms = (mmc_mean_wait(4, 300.0, 100.0) + 0.01) * 1000.0;
    let r = run_text(&open(
        "300/s",
        "",
        "1000s",
        r#""api": (workers: 4, queue: (capacity: None), work: Exponential(mean: "10ms"))"#,
        "",
    ));
    assert!(
        close(latency(&r).mean, expected_ms, 0.05),
        "{} vs {expected_ms}",
        latency(&r).mean
    );
}

#[test]
fn time_in_queue_matches_queueing_theory() {
    // The service's own figures: the mean time in queue W_q, and the share of arrivals that
    // found every worker busy (ρ for M/M/1, Erlang C for M/M/c).
    let wait = |workers: u32, rate: f64, duration: &str| {
        let r = run_text(&open(
            &format!("{rate}/s"),
            "",
            duration,
            &format!(
                r#""api": (workers: {workers}, queue: (capacity: None), work: Exponential(mean: "10ms"))"#
            ),
            "",
        ));
        let api = service_report(&r, "api");
        (api.wait_ms_mean.unwrap(), api.waited_ratio.unwrap())
    };
    // M/M/1, λ = 50/s, μ = 100/s: W_q = ρ / (μ − λ) = 10ms, and half the arrivals wait.
    let (mean, waited) = wait(1, 50.0, "4000s");
    assert!(
        close(mean, mm1_mean_wait(50.0, 100.0) * 1000.0, 0.05),
        "{mean}"
    );
    assert!(close(waited, 0.5, 0.02), "{waited}");
    // M/M/4, λ = 300/s, μ = 100/s per worker (W_q converges slowly at ρ = 0.75: 4000s).
    let (mean, waited) = wait(4, 300.0, "4000s");
    let expected = mmc_mean_wait(4, 300.0, 100.0) * 1000.0;
    assert!(close(mean, expected, 0.05), "{mean} vs {expected}");
    assert!(close(waited, erlang_c(4, 3.0), 0.02), "{waited}");
}

#[test]
fn closed_loop_throughput_follows_littles_law() {
    // 10 users, 90ms think + 10ms service: 10 / 0.1s = 100 requests per second.
    let r = run_text(
        r#"Scenario(
            name: "t",
            duration: "100s",
            clients: { "c": (load: Closed(users: 10, think: Constant(value: "90ms")), call: (target: "api")) },
            services: { "api": (workers: 10, work: Constant(value: "10ms")) },
        )"#,
    );
    assert!(
        close(r.summary.goodput_per_s, 100.0, 0.01),
        "{}",
        r.summary.goodput_per_s
    );
    assert!(close(latency(&r).max, 10.0, 0.001));
}

#[test]
fn smarter_balancers_queue_less() {
    let mean_for = |balancer: &str| {
        let r = run_text(&open(
            "320/s",
            "",
            "300s",
            &format!(
                r#""api": (replicas: 4, workers: 1, balancer: {balancer}, queue: (capacity: None), work: Exponential(mean: "10ms"))"#
            ),
            "",
        ));
        latency(&r).mean
    };
    let random = mean_for("Random");
    let round_robin = mean_for("RoundRobin");
    let two = mean_for("PowerOfTwo");
    let least = mean_for("LeastOutstanding");
    // Random makes four independent M/M/1 queues at ρ = 0.8: 50ms in the system.
    assert!(close(random, 50.0, 0.1), "{random}");
    assert!(
        least < two && two < random,
        "least {least} two {two} random {random}"
    );
    assert!(
        round_robin < random,
        "round robin {round_robin} random {random}"
    );
}

#[test]
fn a_crashed_replica_refuses_then_restarts_cold() {
    let r = run_text(&open(
        "100/s",
        r#", timeout: "1s""#,
        "20s",
        r#""api": (workers: 4, work: Constant(value: "5ms"), restart: "1s", cache: (hit_ratio: 1.0, warmup: "2s"))"#,
        r#"(at: "5s", duration: "2s", kind: Crash(service: "api"))"#,
    ));
    assert_eq!(service_report(&r, "api").crashes, 1);
    // Down from 5s to 8s (2s crash, 1s restart): about 300 connection errors.
    assert!(
        (250..=350).contains(&failures(&r, "unavailable")),
        "{:?}",
        r.summary
    );
    assert_eq!(r.series[9].goodput_ratio, 1.0);
    assert!(r.goodput_ratio_between(10.0, 20.0) > 0.99);
}

/// A client with a 100ms timeout calls an api whose only work is waiting 1s on a slow db.
fn abandoned(mode: &str) -> Report {
    run_text(&open(
        "20/s",
        r#", timeout: "100ms""#,
        "30s",
        &format!(
            r#""api": (workers: 100, work: Constant(value: "1ms"), on_abandoned: {mode}, calls: [(target: "db")]),
               "db": (workers: 100, work: Constant(value: "1s"), on_abandoned: {mode})"#
        ),
        "",
    ))
}

#[test]
fn cancellation_saves_the_work_of_callers_who_left() {
    let work = abandoned("Work");
    let cancel = abandoned("Cancel");
    for r in [&work, &cancel] {
        assert_eq!(r.summary.successes, 0, "every request times out");
    }
    let wasted =
        |r: &Report| service_report(r, "db").wasted_work_s + service_report(r, "api").wasted_work_s;
    // Serving anyway: every db call runs its full second for nobody, and the api waits for it.
    assert!(wasted(&work) > 1000.0, "{}", wasted(&work));
    // Cancellation stops the db work 100ms in.
    assert!(service_report(&cancel, "db").cancelled > 500);
    assert!(wasted(&cancel) < wasted(&work) / 5.0, "{}", wasted(&cancel));
}

/// A client with a 1s timeout offers 20/s to one worker that serves 10/s.
fn overloaded(mode: &str, discipline: &str) -> Report {
    run_text(&open(
        "20/s",
        r#", timeout: "1s""#,
        "60s",
        &format!(
            r#""api": (workers: 1, queue: (capacity: 10000, discipline: {discipline}), work: Constant(value: "100ms"), on_abandoned: {mode})"#
        ),
        "",
    ))
}

#[test]
fn dropping_expired_requests_and_lifo_keep_serving_the_live_ones() {
    let work = overloaded("Work", "Fifo");
    let drop = overloaded("DropExpired", "Fifo");
    let drop_lifo = overloaded("DropExpired", "AdaptiveLifo(threshold: \"100ms\")");
    // Serving in order, the queue soon holds only requests whose callers left.
    assert!(work.goodput_ratio_between(20.0, 60.0) < 0.01);
    assert!(service_report(&work, "api").wasted_work_s > 35.0);
    // Dropping them at the head of the queue frees the worker, but in FIFO order the requests
    // it then serves are the oldest still awaited, and most expire while being served.
    assert!(service_report(&drop, "api").dropped_expired > 500);
    let fifo = drop.goodput_ratio_between(20.0, 60.0);
    assert!(fifo > 0.05 && fifo < 0.2, "{fifo}");
    // Serving the newest first serves requests with time left: all the capacity is goodput.
    let lifo = drop_lifo.goodput_ratio_between(20.0, 60.0);
    assert!(close(lifo, 0.5, 0.1), "{lifo}");
}

#[test]
fn a_cache_shields_its_dependency_until_flushed() {
    let r = run_text(&open(
        "100/s",
        "",
        "30s",
        r#""api": (workers: 10, work: Constant(value: "1ms"), cache: (hit_ratio: 0.9, warmup: "5s"), calls: [(target: "db")]),
           "db": (workers: 10, work: Constant(value: "1ms"))"#,
        r#"(at: "10s", kind: CacheFlush(service: "api"))"#,
    ));
    let db_arrivals = |from: usize, to: usize| -> u64 {
        let i = r.services.iter().position(|s| s.name == "db").unwrap();
        r.series[from..to]
            .iter()
            .map(|b| b.services[i].arrivals)
            .sum()
    };
    // Warm: 10% of 100/s reach the db. Just after the flush: nearly all of them.
    assert!(close(db_arrivals(0, 10) as f64 / 10.0, 10.0, 0.3));
    assert!(db_arrivals(10, 11) > 60, "{}", db_arrivals(10, 11));
    assert!(db_arrivals(10, 13) > 150);
    assert!(close(db_arrivals(20, 30) as f64 / 10.0, 10.0, 0.3));
}

#[test]
fn network_faults_lose_delay_and_partition() {
    let base =
        r#""api": (workers: 10, work: Constant(value: "1ms"), latency: Constant(value: "5ms"))"#;
    let r = run_text(&open("100/s", r#", timeout: "1s""#, "20s", base, ""));
    assert!(
        close(latency(&r).max, 11.0, 0.001),
        "5ms each way and 1ms of work"
    );

    let r = run_text(&open(
        "100/s",
        r#", timeout: "1s""#,
        "20s",
        base,
        r#"(at: "5s", duration: "5s", kind: Latency(service: "api", extra: Constant(value: "100ms")))"#,
    ));
    assert!(close(latency(&r).max, 211.0, 0.001));

    let r = run_text(&open(
        "100/s",
        r#", timeout: "1s""#,
        "20s",
        base,
        r#"(at: "5s", duration: "2s", kind: Partition(service: "api"))"#,
    ));
    assert!(
        (190..=210).contains(&failures(&r, "timeout")),
        "{:?}",
        r.summary
    );
    assert!(service_report(&r, "api").messages_lost >= 190);

    let r = run_text(&open(
        "100/s",
        r#", timeout: "1s""#,
        "100s",
        base,
        r#"(at: "0s", kind: Loss(service: "api", loss_ratio: 0.1))"#,
    ));
    // A request survives if both its message and its reply do: 0.9² = 81%.
    let ok = r.summary.successes as f64 / r.summary.offered as f64;
    assert!(close(ok, 0.81, 0.03), "{ok}");
}

#[test]
fn a_capacity_drop_builds_a_queue() {
    let r = run_text(&open(
        "150/s",
        "",
        "30s",
        r#""api": (workers: 2, queue: (capacity: 10000), work: Constant(value: "10ms"))"#,
        r#"(at: "10s", duration: "10s", kind: CapacityDrop(service: "api", workers: 1))"#,
    ));
    let queue = |t: usize| r.series[t].services[0].queue_total_mean;
    assert!(queue(5) < 1.0);
    // One worker serves 100/s of 150/s: the queue grows by about 50 per second.
    assert!(queue(19) > 300.0, "{}", queue(19));
    // One replica: its longest queue is the total's, bucket by bucket and over the run.
    for b in &r.series {
        let s = &b.services[0];
        assert_eq!(s.queue_replica_max, s.queue_total_max, "at {}s", b.t_s);
    }
    let api = service_report(&r, "api");
    assert_eq!(api.queue_depth_replica_max, api.queue_depth_total_max);
    assert!(
        api.queue_depth_replica_max > 400,
        "{}",
        api.queue_depth_replica_max
    );
}

#[test]
fn errors_are_retried_by_the_policy() {
    let faults = r#"(at: "0s", kind: ErrorRate(service: "api", error_ratio: 0.3))"#;
    let api = r#""api": (workers: 10, work: Constant(value: "1ms"))"#;
    let r = run_text(&open("200/s", "", "50s", api, faults));
    let ratio = failures(&r, "error") as f64 / r.summary.offered as f64;
    assert!(close(ratio, 0.3, 0.05), "{ratio}");
    let retried = r#", stack: [Retry((max_attempts: 3, backoff: (strategy: Constant(delay: "10ms"), jitter: None)))]"#;
    let r = run_text(&open("200/s", retried, "50s", api, faults));
    // Three independent tries: 0.3³ = 2.7% fail.
    let ratio = r.summary.failures as f64 / r.summary.offered as f64;
    assert!(close(ratio, 0.027, 0.2), "{ratio}");
}

#[test]
fn schedules_and_spikes_shape_the_offered_load() {
    let r = run_text(
        r#"Scenario(
            name: "t",
            duration: "40s",
            clients: {
                "c": (
                    load: Open(rate: Ramp(from: "100/s", to: "300/s", start: "10s", end: "20s")),
                    call: (target: "api"),
                ),
            },
            services: { "api": (workers: 100, work: Constant(value: "1ms")) },
            faults: [(at: "30s", duration: "5s", kind: LoadSpike(client: "c", factor: 2.0))],
        )"#,
    );
    let offered = |from: usize, to: usize| -> f64 {
        r.series[from..to].iter().map(|b| b.offered).sum::<u64>() as f64 / (to - from) as f64
    };
    assert!(close(offered(0, 10), 100.0, 0.1));
    assert!(close(offered(10, 20), 200.0, 0.1));
    assert!(close(offered(20, 30), 300.0, 0.1));
    assert!(close(offered(30, 35), 600.0, 0.1));
    assert!(close(offered(35, 40), 300.0, 0.1));
}

#[test]
fn the_event_budget_stops_a_run_and_says_so() {
    let scenario = parse(
        "t.ron",
        &open(
            "1000/s",
            "",
            "60s",
            r#""api": (workers: 10, work: Constant(value: "1ms"))"#,
            "",
        ),
    )
    .unwrap();
    let options = RunOptions {
        max_events: Some(5_000),
        ..RunOptions::default()
    };
    let r = run(&scenario, "t.ron", &options).unwrap().report;
    assert_eq!(r.stop_reason, "event_budget");
    assert_eq!(r.events, 5_000);
    assert!(r.simulated_s < 60.0);
}

#[test]
fn a_network_section_routes_messages_through_sim_net() {
    let r = run_text(
        r#"Scenario(
            name: "t",
            duration: "20s",
            bucket: "250ms",
            clients: { "c": (load: Open(rate: Constant("100/s")), call: (target: "api", timeout: "500ms")) },
            services: {
                "api": (workers: 10, work: Constant(value: "1ms"), calls: [(target: "db", timeout: "200ms")]),
                "db": (workers: 10, work: Constant(value: "1ms")),
            },
            network: (
                default_link: (latency: Constant(value: "1ms")),
                links: [(from: "api", to: "db", link: (latency: Constant(value: "5ms")))],
                faults: [(start: "5s", end: "7s", kind: Partition(from: ["db"]))],
            ),
        )"#,
    );
    // 1ms each way to the api, 5ms each way to the db, 1ms of work at each.
    assert!(close(latency(&r).p50, 14.0, 0.01), "{:?}", latency(&r));
    let link = |from: &str, to: &str| {
        r.network
            .iter()
            .find(|l| l.source == from && l.target == to)
            .unwrap()
    };
    // The partition cuts the db off for 2s. Each of the api's 10 workers then sends a db call
    // that is lost and holds the worker for its 200ms timeout: 10 × 2s / 200ms = 100 losses.
    let lost: u64 = link("api", "db").dropped.values().sum();
    assert!((95..=105).contains(&lost), "{lost}");
    // Counted by the bucket of offer: requests offered in the partition's last half second
    // wait in the api's queue and reach the db after it ends, so they succeed.
    assert!(r.goodput_ratio_between(5.0, 6.5) < 0.05);
    assert!(r.goodput_ratio_between(8.0, 20.0) > 0.99);
    assert_eq!(link("c", "api").delivered, r.summary.offered);
}

#[test]
fn a_service_latency_and_network_faults_combine_with_a_network_section() {
    // The section's default link is 1ms, the db's latency puts 5ms on its links, and the
    // section's own entry for the c → api pair wins over the default: 3ms each way.
    let r = run_text(
        r#"Scenario(
            name: "t",
            duration: "20s",
            clients: { "c": (load: Open(rate: Constant("100/s")), call: (target: "api", timeout: "500ms")) },
            services: {
                "api": (workers: 10, work: Constant(value: "1ms"), calls: [(target: "db", timeout: "200ms")]),
                "db": (workers: 10, work: Constant(value: "1ms"), latency: Constant(value: "5ms")),
            },
            faults: [(at: "5s", duration: "2s", kind: Partition(service: "db"))],
            network: (
                default_link: (latency: Constant(value: "1ms")),
                links: [(from: "c", to: "api", link: (latency: Constant(value: "3ms")))],
            ),
        )"#,
    );
    assert!(close(latency(&r).p50, 18.0, 0.01), "{:?}", latency(&r));
    assert!(r.goodput_ratio_between(5.0, 6.0) < 0.05);
    assert!(r.goodput_ratio_between(8.0, 20.0) > 0.99);
}

#[test]
fn health_checks_route_around_a_crashed_replica() {
    let run_with = |health: &str| {
        run_text(&open(
            "300/s",
            r#", timeout: "1s""#,
            "30s",
            &format!(r#""api": (replicas: 3, workers: 10, work: Constant(value: "1ms"){health})"#),
            r#"(at: "10s", duration: "10s", kind: Crash(service: "api", replicas: 1))"#,
        ))
    };
    let blind = run_with("");
    let checked = run_with(
        r#", health_check: (interval: "1s", timeout: "500ms", unhealthy_threshold: 2, healthy_threshold: 2)"#,
    );
    // Round robin keeps sending a third of the traffic to the dead replica for 10s.
    assert!(close(failures(&blind, "unavailable") as f64, 1000.0, 0.1));
    // Two failed probes, at most two seconds, take it out of rotation.
    let lost = failures(&checked, "unavailable");
    assert!((80..=220).contains(&lost), "{lost}");
    assert_eq!(service_report(&checked, "api").marked_unhealthy, 1);
    assert!(checked.goodput_ratio_between(13.0, 30.0) > 0.999);
}

#[test]
fn adaptive_concurrency_limits_keep_an_overloaded_service_useful() {
    let with = |admission: &str| {
        run_text(&open(
            "1500/s",
            r#", timeout: "1s""#,
            "30s",
            &format!(
                r#""api": (workers: 10, queue: (capacity: 5000), work: Exponential(mean: "10ms"), admission: [{admission}])"#
            ),
            "",
        ))
    };
    // 1500/s against 1000/s of capacity: without a limit the queue outgrows the timeout.
    let none = with("");
    assert!(none.goodput_ratio_between(10.0, 30.0) < 0.05);
    let aimd = with(r#"Concurrency((kind: "aimd"))"#);
    let gradient2 = with(r#"Concurrency((kind: "gradient2"))"#);
    for r in [&aimd, &gradient2] {
        // All the capacity becomes goodput; the excess third is refused at once.
        assert!(r.goodput_ratio_between(10.0, 30.0) > 0.6);
        assert!(failures(r, "concurrency_limited") > 10_000);
    }
    // AIMD grows to its 200 cap while nothing times out; Gradient2 reads the latency and keeps
    // the queue short: its slowest requests wait less than AIMD's typical one. (Upstream's
    // RTT tolerance of 1.5 lets the short-term RTT rise half above the long-term one before
    // the limit is cut; its p99 was under 100ms before the tolerance and is about 104ms now.)
    assert!(latency(&aimd).p50 > 150.0, "{}", latency(&aimd).p50);
    assert!(
        latency(&gradient2).p99 < latency(&aimd).p50 * 0.6,
        "{} vs {}",
        latency(&gradient2).p99,
        latency(&aimd).p50
    );
}

#[test]
fn client_side_throttling_ends_a_metastable_retry_storm() {
    // metastable-retry with adaptive throttling (K = 2) on every attempt of the client.
    let text = scenarios::cli::library::find("metastable-retry")
        .unwrap()
        .text
        .replace(
            "                    )),\n                ],",
            "                    )),\n                    Throttle((accepts_multiplier: 2, window: \"10s\", bucket_count: 10)),\n                ],",
        )
        .replace("GoodputAtMost(client: \"users\", after: \"40s\", max_ratio: 0.1),", "");
    assert!(text.contains("Throttle("));
    let r = run_text(&text);
    // Without it, goodput stays below 10% to the end (see the library test).
    assert!(r.goodput_ratio_between(30.0, 60.0) > 0.95);
    assert!(failures(&r, "client_limited") > 1000);
}

#[test]
fn fan_out_waits_for_the_slowest_call_and_sequential_for_all() {
    let with = |mode: &str| {
        run_text(&open(
            "50/s",
            "",
            "20s",
            &format!(
                r#""api": (workers: 50, work: Constant(value: "1ms"), call_mode: {mode},
                           calls: [(target: "a"), (target: "b"), (target: "c")]),
                   "a": (workers: 50, work: Constant(value: "10ms")),
                   "b": (workers: 50, work: Constant(value: "20ms")),
                   "c": (workers: 50, work: Constant(value: "30ms"))"#
            ),
            "",
        ))
    };
    let fan_out = with("FanOut");
    let sequential = with("Sequential");
    assert!(
        close(latency(&fan_out).max, 31.0, 0.01),
        "{:?}",
        latency(&fan_out)
    );
    assert!(
        close(latency(&sequential).max, 61.0, 0.01),
        "{:?}",
        latency(&sequential)
    );
    for name in ["a", "b", "c"] {
        assert_eq!(
            service_report(&fan_out, name).arrivals,
            fan_out.summary.offered
        );
    }
}

#[test]
fn work_that_grows_with_load_turns_a_burst_into_a_collapse() {
    let with = |growth: &str| {
        run_text(&open(
            "600/s",
            r#", timeout: "2s""#,
            "60s",
            &format!(
                r#""api": (workers: 10, queue: (capacity: 10000), work: Exponential(mean: "10ms"), work_per_in_flight: {growth})"#
            ),
            r#"(at: "10s", duration: "5s", kind: LoadSpike(client: "c", factor: 2.0))"#,
        ))
    };
    // Work independent of load: the backlog of the spike drains and the service recovers.
    let plain = with("0");
    assert!(plain.goodput_ratio_between(30.0, 60.0) > 0.99);
    // Work that grows with the requests present: the backlog makes every request slower, so
    // the 600/s that was 60% of capacity no longer fits and the backlog never drains.
    let growing = with("0.02");
    assert!(
        growing.goodput_ratio_between(0.0, 10.0) > 0.99,
        "healthy before the spike"
    );
    assert!(growing.goodput_ratio_between(30.0, 60.0) < 0.1);
}

#[test]
fn extreme_but_valid_values_run_without_overflow() {
    let r = run_text(
        r#"Scenario(
            name: "t",
            duration: "100years",
            bucket: "1d",
            max_events: 20000,
            clients: {
                "open": (load: Open(rate: Constant("0.000001/s")), call: (target: "api", timeout: "100years")),
                "closed": (load: Closed(users: 3, think: Constant(value: "100years")), call: (target: "api")),
                "busy": (load: Open(rate: Constant("100/s")), call: (target: "api", deadline: "100years")),
            },
            services: {
                "api": (
                    workers: 1,
                    work: Exponential(mean: "1ms"),
                    restart: "100years",
                    admission: [Pid(interval: "100years", controller: (setpoint: 1, gain_proportional: 1, gain_integral: 1, gain_derivative: 0, drop_ratio_max: 0.5))],
                    health_check: (interval: "100years"),
                ),
            },
            faults: [
                (at: "1s", duration: "100years", kind: Slowdown(service: "api", factor: 1e300)),
                (at: "2s", duration: "100years", kind: Crash(service: "api")),
            ],
        )"#,
    );
    assert_eq!(r.stop_reason, "event_budget");
    let e = parse(
        "t.ron",
        &open(
            "1/s",
            "",
            "101years",
            r#""api": (workers: 1, work: Constant(value: "1ms"))"#,
            "",
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("longer than 100 years"), "{e}");
}

#[test]
fn retries_wait_for_the_servers_retry_after() {
    let with = |hint: &str| {
        run_text(&open(
            "150/s",
            r#", stack: [Retry((max_attempts: 3, backoff: (strategy: Constant(delay: "1ms"), jitter: None)))]"#,
            "30s",
            &format!(
                r#""api": (workers: 1, queue: (capacity: 1), work: Constant(value: "10ms"){hint})"#
            ),
            "",
        ))
    };
    // Refused for a full queue, a request retries 1ms later...
    let eager = with("");
    assert!(latency(&eager).max < 100.0, "{:?}", latency(&eager));
    // ...unless the server says when to come back: then the policy waits at least that long.
    let patient = with(r#", retry_after: "300ms""#);
    assert!(latency(&patient).max >= 300.0, "{:?}", latency(&patient));
}

#[test]
fn a_bulkhead_can_make_calls_wait_for_a_slot() {
    let with = |wait: &str| {
        run_text(&open(
            "400/s",
            &format!(
                r#", stack: [Bulkhead((max_concurrent_calls: 4, max_wait_duration: "{wait}", queue_capacity: 100))]"#
            ),
            "30s",
            r#""api": (workers: 10, work: Exponential(mean: "8ms"))"#,
            "",
        ))
    };
    // Four slots at about 8ms each serve ~500/s on average, but bursts of a Poisson 400/s
    // find them all busy: refused at once, or served after a short wait.
    let refuse = with("0s");
    let wait = with("50ms");
    let full = |r: &Report| failures(r, "bulkhead_full");
    assert!(full(&refuse) > 1000, "{}", full(&refuse));
    assert!(
        full(&wait) * 10 < full(&refuse),
        "{} vs {}",
        full(&wait),
        full(&refuse)
    );
    let c = &wait.calls[0].counts;
    assert!(c.bulkhead_waits > 1000);
    // A waiter never waits longer than max_wait_duration before its call starts.
    assert!(latency(&wait).p99 < 50.0 + 60.0, "{:?}", latency(&wait));
}

#[test]
fn per_bucket_percentiles_are_within_one_percent() {
    // Work uniform on [8ms, 9.8ms], no network: every request's latency is its work. About
    // 1,000 successes a bucket put the sample median within 0.3% of 8.9ms and the sample p99
    // within 0.1% of 9.782ms; the buckets' histograms keep two significant digits (1%).
    let r = run_text(&open(
        "1000/s",
        "",
        "10s",
        r#""api": (workers: 100, work: Uniform(low: "8ms", high: "9.8ms"))"#,
        "",
    ));
    for b in &r.series {
        let (p50, p99) = (b.latency_ms_p50.unwrap(), b.latency_ms_p99.unwrap());
        assert!(close(p50, 8.9, 0.013), "{b:?}");
        assert!(close(p99, 9.782, 0.011), "{b:?}");
    }
    // The p99 of each bucket reflects its slow requests: 2% at 100ms, about 20 of the 1000 a
    // second brings, so the 99th percentile is one of them.
    let r = run_text(&open(
        "1000/s",
        "",
        "10s",
        r#""api": (workers: 100, work: Mixture(components: [(weight: 98, dist: Constant(value: "1ms")), (weight: 2, dist: Constant(value: "100ms"))]))"#,
        "",
    ));
    for b in &r.series {
        assert!(
            b.latency_ms_p99.is_some_and(|p99| close(p99, 100.0, 0.01)),
            "{b:?}"
        );
    }
}

#[test]
fn hedging_cuts_the_tail_for_a_little_extra_load() {
    let with = |stack: &str| {
        run_text(&open(
            "200/s",
            &format!(r#", timeout: "2s", stack: [{stack}]"#),
            "30s",
            r#""api": (replicas: 4, workers: 50, work: Mixture(components: [(weight: 95, dist: Constant(value: "10ms")), (weight: 5, dist: Constant(value: "1s"))]))"#,
            "",
        ))
    };
    // One request in twenty takes a second.
    let plain = with("");
    assert!(latency(&plain).p99 >= 990.0, "{:?}", latency(&plain));
    // A hedge after 50ms races it; the hedge almost always wins.
    let hedged = with(r#"Hedge((delay: Fixed(delay: "50ms"), max_hedged_attempts: 1))"#);
    assert!(latency(&hedged).p99 <= 70.0, "{:?}", latency(&hedged));
    let c = &hedged.calls[0].counts;
    assert!(
        close(c.hedges as f64 / c.calls as f64, 0.05, 0.25),
        "{} of {}",
        c.hedges,
        c.calls
    );
    assert!(c.hedge_wins as f64 > 0.9 * c.hedges as f64);
    assert!(hedged.summary.amplification < 1.07);
    assert_eq!(hedged.summary.failures, 0);
    // With a budget, hedges and retries draw from one pool.
    let budgeted = with(
        r#"Hedge((delay: Fixed(delay: "50ms"), max_hedged_attempts: 1)), Retry((max_attempts: 2, budget: Window((budget_percent: 1, window: "1s", min_retries_per_window: 0))))"#,
    );
    let b = &budgeted.calls[0].counts;
    assert!(b.hedges * 3 < c.hedges, "{} vs {}", b.hedges, c.hedges);
}

#[test]
fn a_fallback_answers_from_the_last_good_answer_then_a_default() {
    let with = |stack: &str| {
        run_text(&open(
            "100/s",
            &format!(", stack: [{stack}]"),
            "30s",
            r#""api": (workers: 10, work: Constant(value: "1ms"))"#,
            r#"(at: "10s", duration: "10s", kind: ErrorRate(service: "api", error_ratio: 1.0))"#,
        ))
    };
    let plain = with("");
    assert!(close(plain.summary.failures as f64, 1000.0, 0.1));
    // The last good answer is served while it is at most 2s old: the outage's first 2s.
    let cache = with(r#"Fallback((use_cache: true, cache_age_max: "2s", use_static: false))"#);
    let c = &cache.calls[0].counts;
    assert!(
        close(c.fallback_cache as f64, 200.0, 0.15),
        "{}",
        c.fallback_cache
    );
    assert!(close(cache.summary.failures as f64, 800.0, 0.1));
    // A static default answers the rest.
    let both = with(r#"Fallback((use_cache: true, cache_age_max: "2s", use_static: true))"#);
    let b = &both.calls[0].counts;
    assert_eq!(both.summary.failures, 0);
    assert!(
        close(b.fallback_static as f64, 800.0, 0.1),
        "{}",
        b.fallback_static
    );
}

#[test]
fn idempotency_keys_make_retried_writes_run_once() {
    // A write whose first attempt times out at the client (100ms) while the server takes
    // 150ms: the retry runs the write a second time unless the server deduplicates it.
    let with = |safety: &str, store: &str| {
        run_text(&open(
            "50/s",
            &format!(
                r#", timeout: "100ms", safety: {safety}, stack: [Retry((max_attempts: 2, backoff: (strategy: Constant(delay: "100ms"), jitter: None)))]"#
            ),
            "20s",
            &format!(r#""api": (workers: 50, work: Constant(value: "150ms"){store})"#),
            "",
        ))
    };
    let plain = with("Idempotent", "");
    assert!(
        service_report(&plain, "api").duplicate_executions > 900,
        "{}",
        service_report(&plain, "api").duplicate_executions
    );
    // Unsafe: never retried, so never run twice (and every request fails its 100ms timeout).
    let careful = with("Unsafe", "");
    assert_eq!(service_report(&careful, "api").duplicate_executions, 0);
    assert_eq!(careful.calls[0].counts.retries, 0);
    // With a key and a store: the retry finds the first attempt finished and replays it.
    let keyed = with("IdempotencyKey", ", idempotency: (ttl: \"1h\")");
    let api = service_report(&keyed, "api");
    assert_eq!(api.duplicate_executions, 0);
    assert!(api.replayed > 900, "{}", api.replayed);
    assert!(keyed.goodput_ratio_between(1.0, 20.0) > 0.99);
}

#[test]
fn each_bucket_counts_the_outcomes_of_the_requests_offered_in_it() {
    // Work takes 1.5s, so every request finishes in a later bucket than it was offered in;
    // the rate drops tenfold at 5s. Counted at completion, the buckets after the drop would
    // show ten times more successes than offers.
    let r = run_text(
        r#"Scenario(
            name: "t",
            duration: "10s",
            clients: { "c": (load: Open(rate: Steps([(at: "0s", rate: "100/s"), (at: "5s", rate: "10/s")])), call: (target: "api")) },
            services: { "api": (workers: 1000, work: Constant(value: "1500ms")) },
        )"#,
    );
    for b in &r.series {
        assert!(b.successes + b.failures <= b.offered, "{b:?}");
        assert!(b.goodput_ratio <= 1.0, "{b:?}");
    }
    // Requests offered in the first 8.5s have finished by the end: all of them succeeded.
    for b in r.series.iter().filter(|b| b.t_s < 8.0) {
        assert_eq!(b.successes, b.offered, "{b:?}");
    }
}

#[test]
fn a_request_cancelled_while_queued_leaves_the_queue() {
    // 20/s arrive at a server that serves 10/s; callers give up after 150ms and the
    // cancellation reaches the server, so about three requests are ever waiting. The queue's
    // room of 10 is never used up by requests no one waits for (it was, when cancelled
    // requests stayed in the queue until they reached its front).
    let r = run_text(&open(
        "20/s",
        r#", timeout: "150ms""#,
        "60s",
        r#""api": (workers: 1, queue: (capacity: 10), work: Constant(value: "100ms"), on_abandoned: Cancel)"#,
        "",
    ));
    let api = service_report(&r, "api");
    assert_eq!(failures(&r, "queue_full"), 0, "{:?}", r.summary);
    // Little's law: 20/s waiting at most 150ms (less, for those served) holds under three.
    assert!(api.queue_depth_total_mean < 3.0, "{api:?}");
    assert!(api.cancelled > 500, "{api:?}");
}

#[test]
fn a_trace_follows_one_request_across_services() {
    let text = r#"Scenario(
        name: "t",
        duration: "5s",
        clients: { "c": (load: Open(rate: Constant("50/s")), call: (target: "api")) },
        services: {
            "api": (workers: 4, work: Constant(value: "2ms"), calls: [(target: "db")]),
            "db": (workers: 4, work: Constant(value: "3ms"), latency: Constant(value: "1ms")),
        },
    )"#;
    let scenario = parse("t.ron", text).unwrap();
    let options = RunOptions {
        trace_window: Some((
            sim_core::SimDuration::from_secs(2),
            sim_core::SimDuration::from_secs(3),
        )),
        ..RunOptions::default()
    };
    let r = run(&scenario, "t.ron", &options).unwrap().report;
    // Request ids are never reused: the db's attempts name the client request they serve.
    let request_of = |line: &str| {
        line.rsplit("(request #")
            .next()
            .map(|s| s.trim_end_matches(')').to_string())
    };
    let at_db: Vec<String> = r
        .trace
        .iter()
        .filter(|l| l.contains("deliver") && l.contains(" db/0 "))
        .filter_map(|l| request_of(l))
        .collect();
    assert!(at_db.len() > 20, "{:?}", r.trace);
    for id in &at_db {
        let mine = |l: &&String| l.ends_with(&format!("(request #{id})"));
        let story: Vec<&String> = r.trace.iter().filter(mine).collect();
        let seen = |what: &str| story.iter().any(|l| l.contains(what));
        if story.iter().any(|l| l.contains("arrival")) {
            continue;
        }
        assert!(
            seen(" api/0 ") && seen(" db/0 ") && seen("reply"),
            "{story:#?}"
        );
    }
    let distinct: std::collections::BTreeSet<&String> = at_db.iter().collect();
    assert_eq!(
        distinct.len(),
        at_db.len(),
        "one db attempt per request here"
    );
}

#[test]
fn files_the_fuzzer_found_run_cleanly() {
    // Two files the fuzz harness found panicking: a ramp longer than about 5.8 years (its
    // change points overflowed the clock) and replicas x workers beyond u32 (the report's
    // utilisation overflowed). Both now run and report.
    for (name, text) in [
        (
            "ramp-longer-than-6-years.ron",
            include_str!("../fuzz-found/ramp-longer-than-6-years.ron"),
        ),
        (
            "workers-times-replicas.ron",
            include_str!("../fuzz-found/workers-times-replicas.ron"),
        ),
    ] {
        let scenario = parse(name, text).unwrap_or_else(|e| panic!("{e}"));
        let options = RunOptions {
            max_events: Some(100_000),
            ..RunOptions::default()
        };
        let r = run(&scenario, name, &options).unwrap().report;
        assert!(r.events > 0, "{name}");
    }
}

/// Every kind of distribution a file may declare, for the tests of what is declared against
/// what runs.
/// The files of samples are found relative to the scenario, which these tests name `d.ron` (in
/// the crate's directory, where tests run).
const DISTRIBUTIONS: [&str; 13] = [
    r#"Constant(value: "5ms")"#,
    r#"Uniform(low: "1ms", high: "9ms")"#,
    r#"Exponential(mean: "4ms")"#,
    r#"Normal(mean: "10ms", std_dev: "2ms")"#,
    r#"LogNormal(median: "5ms", p99: "50ms")"#,
    r#"LogNormal(median: "5ms", sigma: 0.4)"#,
    r#"Pareto(scale: "2ms", shape: 2.5)"#,
    r#"Mixture(components: [(weight: 9, dist: Exponential(mean: "2ms")), (weight: 1, dist: Constant(value: "30ms"))])"#,
    r#"Empirical(values: ["500us", "700us", "900us", "2ms", "9ms"])"#,
    r#"Histogram(buckets: [("1ms", 120), ("2ms", 300), ("5ms", 390), ("20ms", 398), ("+Inf", 400)])"#,
    r#"Percentiles(p10: "1ms", p50: "4ms", p90: "12ms", p99: "40ms", p999: "120ms")"#,
    r#"Empirical(file: "tests/measured/db-latency.txt")"#,
    r#"Empirical(file: "tests/measured/db-latency.csv", column: "latency_ms", unit: "ms", weights: "count")"#,
];

/// The quantile `q` of a declared distribution, in milliseconds.
fn declared_ms(text: &str, q: f64) -> f64 {
    let scenario = parse(
        "d.ron",
        &open(
            "1/s",
            "",
            "1s",
            &format!(r#""api": (workers: 1, work: {text})"#),
            "",
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    scenario.services["api"]
        .work
        .compile()
        .unwrap()
        .quantile_nanos(q)
        / 1e6
}

#[test]
fn a_service_latency_is_what_each_message_gets() {
    // 20,000 requests a second over latencies of milliseconds: about a hundred messages on
    // each link at once. Each one takes its own draw, so the network table's delivered
    // percentiles are the declared ones: within the link histogram's two significant digits
    // (1%) and three standard errors of the sample quantile (at most 1.3% at the p99 of
    // these distributions over 100,000 messages).
    for text in DISTRIBUTIONS {
        let r = run_text(&open(
            "20000/s",
            r#", timeout: "10s""#,
            "5s",
            &format!(r#""api": (workers: 5000, work: Constant(value: "0s"), latency: {text})"#),
            "",
        ));
        let link = r
            .network
            .iter()
            .find(|l| l.source == "c" && l.target == "api")
            .unwrap();
        for (q, delivered, declared, tolerance) in [
            (0.5, link.latency_ms_p50, link.declared_latency_ms_p50, 0.02),
            (
                0.99,
                link.latency_ms_p99,
                link.declared_latency_ms_p99,
                0.05,
            ),
        ] {
            assert!(
                close(declared, declared_ms(text, q), 1e-9),
                "{text}: the report declares {declared}ms at q{q}"
            );
            assert!(
                close(delivered, declared, tolerance),
                "{text}: delivered q{q} {delivered}ms against {declared}ms declared"
            );
        }
    }
}

#[test]
fn served_work_is_the_declared_distribution() {
    // No network delay and more workers than requests in progress: a client's latency is
    // the work drawn for its request, and the clients' histogram keeps three significant
    // digits. 100,000 requests: three standard errors of the p99 are at most 1.3%.
    for text in DISTRIBUTIONS {
        let r = run_text(&open(
            "20000/s",
            r#", timeout: "10s""#,
            "5s",
            &format!(r#""api": (workers: 5000, work: {text})"#),
            "",
        ));
        let api = service_report(&r, "api");
        assert_eq!(api.queued, 0, "{text}: nothing waits");
        // The service table sets the work it measured beside the declared distribution's
        // quantiles (rounded to a microsecond); its histogram keeps two significant digits.
        for (q, measured, declared, tolerance) in [
            (0.5, api.work_ms_p50, api.declared_work_ms_p50, 0.02),
            (0.99, api.work_ms_p99, api.declared_work_ms_p99, 0.04),
        ] {
            let declared = declared.expect("the scenario declares the work");
            assert!(
                (declared - declared_ms(text, q)).abs() <= 5e-4,
                "{text}: the report declares {declared}ms at q{q}"
            );
            let measured = measured.expect("jobs started");
            assert!(
                close(measured, declared, tolerance),
                "{text}: work q{q} {measured}ms against {declared}ms declared"
            );
        }
        let l = latency(&r);
        for (q, served, tolerance) in [
            (0.5, l.p50, 0.015),
            (0.9, l.p90, 0.015),
            (0.99, l.p99, 0.03),
        ] {
            let declared = declared_ms(text, q);
            assert!(
                close(served, declared, tolerance),
                "{text}: served q{q} {served}ms against {declared}ms declared"
            );
        }
    }
}
