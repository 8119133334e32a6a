//! What a run keeps per report bucket (`RunOptions::series`): a run that keeps only its
//! clients' counts (`Series::Clients`, what `resim risk` runs) is the same run, judged the
//! same, with no series rows, and its memory estimate counts only what it keeps.

use crate::support::library_scenario;
use scenarios::format::footprint::footprint;
use scenarios::format::limits::RunLimits;
use scenarios::format::load::parse_with;
use scenarios::report::Report;
use scenarios::{RunOptions, Series, run};

/// `name` with `sets`, run at its own seed keeping `series`.
fn report(name: &str, sets: &[(&str, &str)], series: Series) -> Report {
    let scenario = library_scenario(name, None, sets);
    let options = RunOptions {
        series,
        ..RunOptions::default()
    };
    run(&scenario, name, &options)
        .unwrap_or_else(|e| panic!("{e}"))
        .report
}

/// Whether two report figures agree to the report's three decimals (a mean over one bucket
/// of the run and a sum over many of its buckets may round apart in the last digit).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-3 * a.abs().max(1.0)
}

/// Checks that the run of `name` keeping only its clients' series is the run keeping them
/// all, judged the same, and has no rows; returns the two reports.
fn check(name: &str, sets: &[(&str, &str)]) -> (Report, Report) {
    let all = report(name, sets, Series::All);
    let clients = report(name, sets, Series::Clients);
    assert_eq!(clients.digest, all.digest, "{name}: the same run");
    assert_eq!(clients.events, all.events, "{name}");
    assert_eq!(clients.summary, all.summary, "{name}: the same totals");
    assert_eq!(clients.clients, all.clients, "{name}: the same clients");
    assert_eq!(clients.calls, all.calls, "{name}: the same calls");
    assert_eq!(
        clients.expectations, all.expectations,
        "{name}: same verdicts"
    );
    let verdict = |r: &Report| r.metastability.as_ref().map(|m| m.verdict());
    assert_eq!(
        verdict(&clients),
        verdict(&all),
        "{name}: same metastability"
    );
    assert!(!all.series.is_empty(), "{name}");
    assert!(clients.series.is_empty(), "{name}: no rows");
    assert!(
        clients.why.is_empty(),
        "{name}: the explanations read the rows"
    );
    // The services' figures over the run, from one bucket of the whole run.
    for (c, a) in clients.services.iter().zip(&all.services) {
        assert_eq!(
            (c.arrivals, c.ok, c.queue_depth_total_max),
            (a.arrivals, a.ok, a.queue_depth_total_max),
            "{name}: {}",
            a.name
        );
        for (x, y) in [
            (c.queue_depth_total_mean, a.queue_depth_total_mean),
            (c.busy_workers_mean, a.busy_workers_mean),
            (c.utilisation, a.utilisation),
        ] {
            assert!(close(x, y), "{name}: {}: {x} against {y}", a.name);
        }
    }
    (all, clients)
}

#[test]
fn a_run_that_keeps_only_its_clients_series_is_the_same_run_judged_the_same() {
    // A metastable collapse after a spike (its `Metastable` expectation holds), and a
    // recovery with a retry budget (`Recovers`), both judged on the clients' buckets.
    let (all, clients) = check("metastable-retry", &[]);
    assert!(all.passed() && clients.passed(), "metastable in both");
    let (m_all, m_clients) = (all.metastability.unwrap(), clients.metastability.unwrap());
    assert_eq!(m_clients.clients, m_all.clients);
    let (d_all, d_clients) = (m_all.during.unwrap(), m_clients.during.unwrap());
    assert_eq!(d_clients.success_ratio, d_all.success_ratio);
    assert!(d_all.latency_ms_p99.is_some());
    assert!(
        d_clients.latency_ms_p99.is_none(),
        "no latencies per bucket"
    );
    check(
        "metastable-retry",
        &[(
            "clients.users.call.stack[0].budget",
            r#"Window((budget_percent: 10, window: "5s", min_retries_per_window: 10))"#,
        )],
    );
    // Two tiers, a breaker and replicas (several call sites and their instances).
    check("cascading-failure", &[]);
}

#[test]
fn the_memory_estimate_counts_only_the_series_a_run_keeps() {
    let text = r#"Scenario(
        name: "long",
        duration: "24h",
        bucket: "10ms",
        clients: { "users": (load: Open(rate: Constant("50/s")), call: (target: "api")) },
        services: { "api": (workers: 1, queue: (capacity: 24), work: Exponential(mean: "10ms")) },
    )"#;
    // Read whatever its estimate: the estimate is what is looked at.
    let limits = RunLimits {
        memory_max: 1 << 50,
        ..RunLimits::default()
    };
    let mut scenario = parse_with("long.ron", text, &limits).unwrap_or_else(|e| panic!("{e}"));
    let total = |s: &scenarios::Scenario| footprint(s).iter().map(|p| p.bytes).sum::<u64>();
    let all = total(&scenario);
    scenario.series = Series::Clients;
    let clients = total(&scenario);
    // 8,640,000 buckets of one client's counts (40 bytes, in a list grown by doubling).
    assert!(clients <= 8_640_000 * 80 + (1 << 20), "{clients}");
    assert!(clients * 4 < all, "{clients} against {all}");
}
