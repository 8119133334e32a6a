//! The library: every scenario shows what its header claims, in numbers, at its own seed;
//! its compact summary is snapshotted; and every run replays to the same digest.

use crate::support;

use scenarios::cli::library::{LIBRARY, find};
use scenarios::format::load::parse;
use scenarios::report::Format;
use scenarios::{Report, RunOptions, run};
use sim_core::sim::first_divergence;
use support::{call_report, failures, latency, service_report};

/// Runs library scenario `name` at its own seed, checks that its file's expectations hold,
/// snapshots its compact summary, and hands the report to `claims` for the numbers its header
/// promises.
fn check(name: &str, claims: impl FnOnce(&Report)) {
    let entry = find(name).unwrap_or_else(|| panic!("{name} is in the library"));
    let scenario = parse(entry.name, entry.text).unwrap();
    let report = run(&scenario, entry.name, &RunOptions::default())
        .unwrap()
        .report;
    assert_eq!(
        report.simulated_s,
        scenario.duration.as_secs_f64(),
        "{name} ran to its end ({})",
        report.stop_reason
    );
    for e in &report.expectations {
        assert!(
            e.pass,
            "{name}: {} — observed {}",
            e.expectation, e.observed
        );
    }
    insta::with_settings!({
        description => format!("scenario {name}, seed {}", report.seed),
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name.to_string(), Format::Compact.render(&report));
    });
    claims(&report);
}

#[test]
fn retry_storm_amplifies_and_outlives_the_slowdown() {
    let mut plain = 0.0;
    check("retry-storm", |r| {
        // Two layers of 3 attempts: up to 9 db attempts per request.
        plain = service_report(r, "db").load_factor;
        assert!(plain >= 7.0, "{plain}");
        assert!(
            r.summary.amplification >= 2.5,
            "{}",
            r.summary.amplification
        );
        assert!(r.goodput_ratio_between(40.0, 60.0) < 0.1);
        assert!(service_report(r, "db").wasted_work_s > 100.0);
    });
    check("retry-storm-full-jitter", |r| {
        let jittered = service_report(r, "db").load_factor;
        assert!(
            (jittered - plain).abs() / plain < 0.1,
            "{jittered} vs {plain}"
        );
        assert!(r.goodput_ratio_between(40.0, 60.0) < 0.1);
    });
    check("retry-storm-budget", |r| {
        // About one db attempt per request, even through the slowdown.
        let db = service_report(r, "db").load_factor;
        assert!(db <= 1.2, "{db}");
        assert!(r.goodput_ratio_between(25.0, 60.0) > 0.9);
        assert!(call_report(r, "clients.users.call").counts.budget_exhausted > 0);
        assert!(
            call_report(r, "services.api.calls[0]")
                .counts
                .budget_exhausted
                > 0
        );
    });
}

#[test]
fn cascading_failure_spreads_and_the_patterns_contain_it() {
    check("cascading-failure", |r| {
        assert!(r.goodput_ratio_between(12.0, 30.0) < 0.4);
        assert!(service_report(r, "api").ejections >= 1);
        assert!(
            r.goodput_ratio_between(35.0, 45.0) > 0.9,
            "recovers once the db does"
        );
    });
    check("cascading-failure-mitigated", |r| {
        assert!(r.goodput_ratio_between(12.0, 30.0) > 0.75);
        let db = call_report(r, "services.api.calls[0]");
        assert!(db.breakers[0].transitions_total >= 2);
        assert!(db.rejected_by_reason["breaker_open"] > 0);
    });
}

#[test]
fn metastable_retry_stays_down_unless_mitigated() {
    check("metastable-retry", |r| {
        // The spike ends at 15s; the last third of the run is 40s–60s.
        assert!(r.goodput_ratio_between(10.0, 15.0) < 0.9, "the spike hurts");
        assert!(
            r.goodput_ratio_between(40.0, 60.0) < 0.1,
            "and it stays down"
        );
        assert!(
            r.goodput_ratio_between(0.0, 10.0) > 0.95,
            "it was healthy before"
        );
    });
    for name in ["metastable-retry-budget", "metastable-retry-codel"] {
        check(name, |r| {
            // Back above 90% within 10s of the end of the spike, and staying there.
            assert!(r.goodput_ratio_between(25.0, 60.0) > 0.9, "{name}");
            assert!(
                r.series
                    .iter()
                    .filter(|b| b.t_s >= 25.0 && b.t_s < 59.0)
                    .all(|b| b.goodput_ratio >= 0.9),
                "{name}"
            );
        });
    }
}

#[test]
fn thundering_herd_needs_jitter() {
    check("thundering-herd", |r| {
        assert!(failures(r, "queue_full") >= 1000, "{:?}", r.summary);
    });
    check("thundering-herd-full-jitter", |r| {
        assert!(r.summary.failures <= 100, "{:?}", r.summary);
    });
}

#[test]
fn a_cache_stampede_needs_coalescing() {
    check("thundering-herd-cache", |r| {
        assert!(r.goodput_ratio_between(10.0, 14.0) < 0.3);
        assert!(r.goodput_ratio_between(0.0, 10.0) > 0.99);
        assert!(service_report(r, "db").queue_depth_replica_max >= 300);
    });
    check("thundering-herd-cache-coalesced", |r| {
        assert!(r.goodput_ratio_between(10.0, 14.0) > 0.95);
        assert!(service_report(r, "api").coalesced > 1000);
        // At most one fetch per hot key per replica: 10 keys × 2 replicas.
        assert!(service_report(r, "db").queue_depth_replica_max <= 20);
    });
}

#[test]
fn bulkheads_isolate_a_slow_dependency() {
    check("bulkhead-isolation", |r| {
        assert!(r.goodput_ratio_between(12.0, 30.0) < 0.5);
    });
    check("bulkhead-isolation-separate", |r| {
        assert!(r.goodput_ratio_between(12.0, 30.0) > 0.85);
        let payments = call_report(r, "services.frontend.calls[1]");
        assert!(payments.rejected_by_reason["bulkhead_full"] > 0);
    });
}

#[test]
fn fixed_window_admits_twice_its_limit_at_a_boundary() {
    check("limiter-comparison", |r| {
        // The most requests each limiter let through in any one second (ten 100ms buckets).
        let most_in_a_second = |name: &str| {
            let i = r.services.iter().position(|s| s.name == name).unwrap();
            let ok: Vec<u64> = r.series.iter().map(|b| b.services[i].ok).collect();
            ok.windows(10).map(|w| w.iter().sum::<u64>()).max().unwrap()
        };
        assert!(most_in_a_second("fixed-window") >= 190);
        for name in ["sliding-counter", "token-bucket", "gcra"] {
            let n = most_in_a_second(name);
            assert!(n <= 125, "{name}: {n}");
        }
    });
}

#[test]
fn shedding_keeps_goodput_through_an_overload_step() {
    check("shedding-codel-vs-pid-none", |r| {
        assert!(r.goodput_ratio_between(15.0, 40.0) < 0.05);
        // 20 workers busy for the 25s of the step is 500 worker-seconds: most of it wasted.
        assert!(
            service_report(r, "api").wasted_work_s > 400.0,
            "busy, but with expired work"
        );
    });
    check("shedding-codel-vs-pid-codel", |r| {
        assert!(r.goodput_ratio_between(15.0, 40.0) > 0.6);
        assert!(latency(r).p99 <= 150.0);
        assert!(failures(r, "shed") > 0);
    });
    check("shedding-codel-vs-pid-pid", |r| {
        assert!(r.goodput_ratio_between(15.0, 40.0) > 0.6);
        assert!(latency(r).p99 <= 300.0);
        assert!(service_report(r, "api").pid_drop_ratio_max > 0.2);
    });
}

/// The class figures of `client`'s class `class`.
fn class<'a>(r: &'a Report, client: &str, class: &str) -> &'a scenarios::report::ClassReport {
    let c = r.clients.iter().find(|c| c.name == client).unwrap();
    c.classes.iter().find(|k| k.name == class).unwrap()
}

#[test]
fn a_global_limit_starves_the_quiet_tenants_of_a_noisy_neighbour() {
    check("noisy-neighbour", |r| {
        // The steady tenants lose about four requests in five once the flood starts; the
        // flood gets as large a share of the 500/s as its share of the arrivals.
        let steady = class(r, "steady", "steady");
        assert!(steady.traffic.success_ratio.unwrap() < 0.6);
        assert_eq!(steady.tenants.len(), 10);
        for t in &steady.tenants {
            assert!(t.traffic.failures_by_reason["rate_limited"] > 300, "{t:?}");
        }
        let flood = class(r, "noisy", "flood");
        assert!(flood.traffic.goodput_per_s > 250.0);
    });
}

#[test]
fn the_critical_class_is_served_in_full_through_an_overload() {
    check("criticality-shedding", |r| {
        let checkout = class(r, "users", "checkout");
        let recommend = class(r, "users", "recommend");
        assert!(checkout.traffic.failures_by_reason.is_empty());
        // The sheddable class takes every refusal, and is still served: what capacity the
        // critical class leaves.
        assert_eq!(
            recommend.traffic.failures,
            recommend.traffic.failures_by_reason["shed"]
        );
        assert!(recommend.traffic.goodput_per_s > 200.0);
        assert!(failures(r, "shed") > 20_000);
    });
}

#[test]
fn distributed_limiter_race() {
    check("distributed-limiter-race", |r| {
        let l = &r.limiters[0];
        // Read-compute-write admits far beyond the 500 a second it was given.
        assert!(l.over_admitted > 10 * 500);
        // Every admission took a read and a write.
        assert!(l.round_trips >= 2 * l.admitted);
    });
}

#[test]
fn limiter_store_outage() {
    check("limiter-store-outage", |r| {
        let l = &r.limiters[0];
        assert!(l.store_failures > 0 && l.failed_open == l.store_failures);
        assert!(l.over_admitted > 0, "fail-open goes over the budget");
    });
}

#[test]
fn quota_leases() {
    check("quota-leases", |r| {
        let l = &r.limiters[0];
        assert!(l.round_trips * 5 < l.decisions);
        assert!(
            l.over_admitted <= 8 * 20 * 20,
            "at most a batch per replica per window"
        );
    });
}

#[test]
fn fan_out_tail() {
    check("fan-out-tail", |r| {
        // Most requests wait for at least one slow leaf and time out.
        assert!(r.goodput_ratio_between(0.0, 20.0) < 0.5);
    });
}

#[test]
fn optimistic_writers_on_one_row_conflict_and_back_off() {
    check("occ-contention", |r| {
        // 20 writers, one commit each; every other write was a version conflict, retried.
        let store = service_report(r, "db")
            .store
            .as_ref()
            .expect("the db has a store");
        assert_eq!((store.rows, store.commits), (1, 20));
        assert_eq!(store.conflicts, r.summary.attempts - 20);
        assert_eq!(failures(r, "version_conflict"), 0, "no writer gave up");
        assert!(store.conflicts >= 40, "{} conflicts", store.conflicts);
        let makespan = r.clients[0].makespan_ms.expect("every writer finished");
        assert!(makespan < 3_000.0, "{makespan}ms");
    });
}

#[test]
fn cache_entries_expiring_together_stampede() {
    check("cache-expiry", |r| {
        let refresh = service_report(r, "api").cache_refresh.as_ref().unwrap();
        assert_eq!(refresh.early_refreshes, 0);
        assert!(refresh.expired_misses > 100, "{refresh:?}");
        assert!(service_report(r, "db").queue_depth_replica_max > 100);
        assert!(failures(r, "timeout") > 100);
    });
}

#[test]
fn a_poison_pill_takes_every_customer_down_unless_cells_or_shards_contain_it() {
    let blast = |r: &Report| {
        service_report(r, "api")
            .blast_radius
            .clone()
            .expect("the api is poisoned")
    };
    let mut goodput = Vec::new();
    check("poison-pill", |r| {
        let b = blast(r);
        // Every replica crashed, and every unit (1,000 customers and the poisoner) lost all.
        assert_eq!(b.isolation, "none");
        assert_eq!(b.units, 1001);
        assert_eq!(b.units_lost_all, 1001);
        assert!(b.poison_crashes >= 8, "{b:?}");
        goodput.push(r.goodput_ratio_between(15.0, 40.0));
    });
    check("poison-pill-cells", |r| {
        let b = blast(r);
        // One cell of four: about a quarter of the units, and never part of a cell.
        assert_eq!(b.replicas_per_unit, 2);
        assert!((0.15..0.35).contains(&b.lost_all_ratio), "{b:?}");
        assert_eq!(b.units_lost_some, 0);
        assert_eq!(b.poison_crashes % 2, 0, "whole cells crash: {b:?}");
        goodput.push(r.goodput_ratio_between(15.0, 40.0));
    });
    check("poison-pill-shuffle-sharding", |r| {
        let b = blast(r);
        // About 1 in 28 lose both replicas, about 12 in 28 lose one of the two.
        assert!(b.lost_all_ratio < 0.06, "{b:?}");
        assert!((0.35..0.5).contains(&b.lost_some_ratio), "{b:?}");
        goodput.push(r.goodput_ratio_between(15.0, 40.0));
    });
    // While the poison lasts: almost nothing, about three in four, almost everything.
    assert!(goodput[0] < 0.1, "{goodput:?}");
    assert!(
        goodput[0] < goodput[1] && goodput[1] < goodput[2],
        "{goodput:?}"
    );
    assert!(goodput[2] > 0.95, "{goodput:?}");
}

#[test]
fn a_scaler_a_minute_late_lets_the_spike_turn_metastable() {
    check("autoscaler-lag", |r| {
        let scaling = service_report(r, "api").scaling.as_ref().unwrap();
        assert_eq!((scaling.replicas_min, scaling.replicas_max), (4, 4));
        assert_eq!(r.metastability.as_ref().unwrap().verdict, "metastable");
    });
}

#[test]
fn a_fast_scaler_adds_replicas_in_time_and_gives_them_back() {
    check("autoscaler-lag-fast", |r| {
        let scaling = service_report(r, "api").scaling.as_ref().unwrap();
        assert_eq!(scaling.replicas_max, 12);
        assert!(
            scaling.scale_ins >= 1 && scaling.cold_jobs > 0,
            "{scaling:?}"
        );
        assert_eq!(r.metastability.as_ref().unwrap().verdict, "recovered");
    });
}

#[test]
fn a_rolling_deploy_without_headroom_fails_requests_in_each_batch() {
    check("rolling-deploy", |r| {
        let scaling = service_report(r, "api").scaling.as_ref().unwrap();
        assert_eq!((scaling.replicas_min, scaling.deploy_restarts), (6, 8));
        assert!(failures(r, "queue_full") > 1000);
    });
    check("rolling-deploy-headroom", |r| {
        let scaling = service_report(r, "api").scaling.as_ref().unwrap();
        assert_eq!((scaling.replicas_min, scaling.deploy_restarts), (6, 8));
        assert_eq!(r.summary.failures, 0);
    });
}

#[test]
fn a_priority_queue_serves_the_critical_class_in_full_and_evicts_the_sheddable() {
    check("criticality-queue", |r| {
        let checkout = class(r, "users", "checkout");
        let recommend = class(r, "users", "recommend");
        assert!(checkout.traffic.failures_by_reason.is_empty());
        assert!(checkout.traffic.latency_ms.as_ref().unwrap().p99 < 100.0);
        // Every eviction and refusal at the full queue is a sheddable request.
        assert_eq!(
            recommend.traffic.failures_by_reason["queue_full"],
            failures(r, "queue_full")
        );
        assert!(recommend.traffic.goodput_per_s > 300.0);
    });
}

#[test]
fn a_tenant_bulkhead_holds_the_flood_to_its_workers() {
    check("tenant-bulkhead", |r| {
        let steady = class(r, "steady", "steady");
        assert!(steady.traffic.failures_by_reason.is_empty());
        assert_eq!(steady.tenants.len(), 10);
        let flood = class(r, "noisy", "flood");
        assert_eq!(
            flood.traffic.failures,
            flood.traffic.failures_by_reason["concurrency_limited"]
        );
        // Five slots per replica, two replicas, 10ms each: at most 1,000/s over the 20s of
        // the flood.
        assert!(flood.traffic.successes <= 20 * 1_000, "{:?}", flood.traffic);
        assert!(flood.traffic.successes > 20 * 900, "{:?}", flood.traffic);
    });
}

#[test]
fn rfc_codel_sheds_too_slowly_for_an_open_loop() {
    check("shedding-codel-rfc", |r| {
        // Some 30s of dropping at interval/sqrt(count): about (30 / 0.2)^2 drops.
        let shed = service_report(r, "api").failed_by_reason["shed"];
        assert!((20_000..30_000).contains(&shed), "{shed}");
        assert!(failures(r, "timeout") > 50_000);
    });
}

#[test]
fn capacity_events_show_in_the_library_runs() {
    check("gc-pause", |r| {
        let events = service_report(r, "api").capacity_events.as_ref().unwrap();
        assert_eq!(events.paused_s, 8.0);
        assert!(failures(r, "timeout") > 1000);
    });
    check("zone-failure", |r| {
        let events = service_report(r, "api").capacity_events.as_ref().unwrap();
        assert_eq!(events.zone_downs, 2);
        assert_eq!(r.summary.failures, 0);
    });
    check("liveness-death-spiral", |r| {
        let events = service_report(r, "api").capacity_events.as_ref().unwrap();
        assert!(events.liveness_restarts > 6, "{events:?}");
        assert!(failures(r, "unavailable") > 10_000);
    });
    check("liveness-death-spiral-dedicated", |r| {
        let events = service_report(r, "api").capacity_events.as_ref().unwrap();
        assert_eq!(events.liveness_restarts, 0);
    });
}

#[test]
fn users_that_pace_on_the_quota_avoid_the_refusals_that_hammering_users_get() {
    check("retry-after-429", |r| {
        assert!(failures(r, "rate_limited") > 60_000);
        assert_eq!(r.summary.successes, 3000);
    });
}

#[test]
fn client_errors_are_final_and_counted_apart() {
    check("client-errors", |r| {
        assert_eq!(r.summary.amplification, 1.0);
        assert_eq!(failures(r, "client_error"), r.summary.failures);
    });
}

#[test]
fn an_adaptive_timeout_rises_through_the_slowdown() {
    check("adaptive-timeout", |r| {
        let a = r.calls[0].adaptive_timeout.as_ref().unwrap();
        assert!(
            a.timeout_ms_max > 150.0 && a.timeout_ms_last < 100.0,
            "{a:?}"
        );
    });
}

#[test]
fn every_library_scenario_parses_and_says_what_it_shows() {
    assert_eq!(LIBRARY.len(), 44);
    for entry in LIBRARY {
        let s = parse(entry.name, entry.text).unwrap();
        assert_eq!(
            s.name, entry.name,
            "the file's name field matches its file name"
        );
        assert!(!s.description.is_empty(), "{}", entry.name);
        let header: Vec<&str> = entry
            .text
            .lines()
            .take_while(|l| l.starts_with("//"))
            .collect();
        assert!(
            header.len() >= 3,
            "{}: a header comment says what to look at",
            entry.name
        );
        assert!(
            header.iter().any(|l| l.contains("Look at")),
            "{}: the header says what to look at",
            entry.name
        );
    }
}

#[test]
fn every_library_scenario_replays_to_the_same_digest() {
    for entry in LIBRARY {
        let scenario = parse(entry.name, entry.text).unwrap();
        let mut digests = Vec::new();
        for seed in [1, 2, 3] {
            let options = RunOptions {
                seed: Some(seed),
                trace_capacity: 100_000,
                ..RunOptions::default()
            };
            let a = run(&scenario, entry.name, &options).unwrap();
            let b = run(&scenario, entry.name, &options).unwrap();
            if a.report.digest != b.report.digest {
                let at = first_divergence(&a.trace, &b.trace);
                panic!(
                    "{} seed {seed}: digests {} and {} differ; first divergence: {at:?}",
                    entry.name, a.report.digest, b.report.digest
                );
            }
            assert_eq!(a.report, b.report, "{} seed {seed}", entry.name);
            digests.push(a.report.digest);
        }
        digests.dedup();
        assert_eq!(digests.len(), 3, "{}: seeds change the history", entry.name);
    }
}

#[test]
fn pools_sized_beyond_the_database_limit_are_refused() {
    check("pool-exhaustion", |r| {
        // The pools together hold the database's 20 connections, never more; the next open
        // a replica's burst needs is refused and its request fails.
        let db = service_report(r, "db")
            .connections
            .as_ref()
            .expect("db connections");
        assert_eq!((db.max_connections, db.open_max), (Some(20), 20));
        let pool = call_report(r, "services.api.calls[0]")
            .pool
            .as_ref()
            .expect("a pool");
        assert_eq!(
            (pool.size, pool.pools, pool.connections_open_max),
            (10, 4, 20)
        );
        assert!(pool.pool_held_max <= 10);
        assert_eq!(pool.refused_opens, db.refused);
        assert!(pool.refused_opens > 100, "{} refused", pool.refused_opens);
        assert!(
            failures(r, "dependency") > 100,
            "{:?}",
            r.summary.failures_by_reason
        );
        // The database itself is far from busy: the failures are the pools', not its own.
        assert!(service_report(r, "db").utilisation < 0.3);
    });
}
