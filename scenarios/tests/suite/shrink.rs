//! `resim shrink`: deliberately bloated failing scenarios shrink to the core that causes their
//! failure, the result fails the same expectation when read back and run, a passing scenario
//! is refused, and no budget makes a shrink return a scenario that passes.

use crate::support;

use proptest::prelude::*;
use scenarios::experiment::shrink::{ShrinkOptions, Shrunk, shrink};
use scenarios::format::load;
use scenarios::format::schema::{Expectation, FaultKind, Layer};
use scenarios::{RunOptions, run};
use support::{Resim, resim};

const RETRY_STORM: &str = "tests/shrink/retry-storm-bloated.ron";
const CHECKOUT: &str = "tests/shrink/checkout-timeouts-bloated.ron";

/// Shrinks `file` at `seed` with `budget` runs, and checks the promise every shrink keeps:
/// the written text reads back and fails the same expectation at the same seed.
fn check(file: &str, seed: u64, budget: u64) -> Shrunk {
    let scenario = load::load(file).unwrap();
    let options = ShrinkOptions {
        seed,
        expectation: None,
        budget,
    };
    let shrunk = shrink(&scenario, file, &options).unwrap();
    assert!(shrunk.runs <= budget, "{} runs", shrunk.runs);
    let reread = load::parse("shrunk.ron", &shrunk.text).unwrap();
    let report = run(
        &reread,
        "shrunk.ron",
        &RunOptions {
            seed: Some(seed),
            ..RunOptions::default()
        },
    )
    .unwrap()
    .report;
    // The same expectation fails: its kind and client, and the figure it bounds.
    let (before, after) = shrunk.index;
    assert!(
        !report.expectations[after].pass,
        "the shrunk file passes:\n{}",
        shrunk.text
    );
    let kind = |e: &Expectation| {
        format!("{e:?}")
            .split([' ', '{'])
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        kind(&scenario.expectations[before]),
        kind(&reread.expectations[after])
    );
    assert_eq!(report.expectations[after], shrunk.after);
    assert_eq!(
        shrunk.before.threshold.metric,
        shrunk.after.threshold.metric
    );
    assert_eq!(
        shrunk.before.threshold.client,
        shrunk.after.threshold.client
    );
    shrunk
}

fn names<T>(map: &std::collections::BTreeMap<String, T>) -> Vec<&str> {
    map.keys().map(String::as_str).collect()
}

#[test]
fn a_retry_storm_among_unrelated_parts_shrinks_to_the_storm() {
    let s = check(RETRY_STORM, 3, 300);
    let r = &s.scenario;
    assert_eq!(r.expectations.len(), 1, "{}", s.text);
    // What is left is the storm: the users, the api, the db, its slowdown and the retries.
    assert_eq!(names(&r.clients), ["users"], "{}", s.text);
    assert_eq!(names(&r.services), ["api", "db"], "{}", s.text);
    assert!(
        matches!(&r.faults[..], [f] if matches!(&f.kind, FaultKind::Slowdown { service, .. } if service == "db")),
        "{}",
        s.text
    );
    let retries = r.services["api"].calls[0]
        .stack
        .iter()
        .filter(|l| matches!(l, Layer::Retry(_)))
        .count()
        + r.clients["users"]
            .call
            .stack
            .iter()
            .filter(|l| matches!(l, Layer::Retry(_)))
            .count();
    assert!(retries >= 1, "the retries cause the storm:\n{}", s.text);
    // What was not: the other client and its services, the index's errors, the other
    // expectation, the bulkhead and the admission limit.
    for gone in [
        "dropped client reports",
        "dropped service search and the calls to it",
        "dropped service index and the calls to it",
        "dropped the other expectations",
        "dropped clients.users.call.stack[0] (Bulkhead)",
        "dropped services.api.admission[0]",
    ] {
        assert!(
            s.changes.iter().any(|c| c == gone),
            "{gone}: {:?}",
            s.changes
        );
    }
    assert!(r.services["api"].admission.is_empty());
    assert!(r.duration < load::load(RETRY_STORM).unwrap().duration);
    assert!(s.after.observed.starts_with("0.0%"), "{}", s.after.observed);
}

#[test]
fn a_timeout_longer_than_the_callers_shrinks_to_the_path_it_holds() {
    let s = check(CHECKOUT, 3, 300);
    let r = &s.scenario;
    assert_eq!(r.expectations.len(), 1, "{}", s.text);
    assert_eq!(names(&r.clients), ["shoppers"], "{}", s.text);
    assert_eq!(
        names(&r.services),
        ["gateway", "orders", "payments"],
        "{}",
        s.text
    );
    // The misconfiguration stays: orders waits 5s for payments, its callers 1s.
    let to_payments = &r.services["orders"].calls;
    assert_eq!(to_payments.len(), 1, "{}", s.text);
    assert_eq!(to_payments[0].target, "payments");
    assert_eq!(to_payments[0].timeout, Some("5s".parse().unwrap()));
    assert!(
        matches!(&r.faults[..], [f] if matches!(&f.kind, FaultKind::Slowdown { service, .. } if service == "payments")),
        "{}",
        s.text
    );
    // The breaker that never opened, the other tiers and their faults are gone.
    for gone in [
        "dropped client admin",
        "dropped service auth and the calls to it",
        "dropped service catalog and the calls to it",
        "dropped service recommendations and the calls to it",
        "dropped services.orders.calls[0].stack[0] (Breaker)",
    ] {
        assert!(
            s.changes.iter().any(|c| c == gone),
            "{gone}: {:?}",
            s.changes
        );
    }
    assert_eq!(s.sizes.1.faults, 1);
    assert_eq!(s.sizes.0.faults, 3);
}

#[test]
fn the_same_scenario_and_seed_shrink_to_the_same_file() {
    let a = check(CHECKOUT, 3, 60);
    let b = check(CHECKOUT, 3, 60);
    assert_eq!(a.text, b.text);
    assert_eq!(a.changes, b.changes);
}

#[test]
fn a_scenario_that_passes_is_refused() {
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&["shrink", "retry-storm", "--seed", "3"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.starts_with(
            "retry-storm: every expectation holds at seed 3, so there is nothing to shrink"
        ),
        "{err}"
    );
    // An expectation that holds, named by its kind, is refused too.
    let Resim {
        code, stderr: err, ..
    } = resim(&[
        "shrink",
        RETRY_STORM,
        "--seed",
        "3",
        "--expectation",
        "P99AtMost",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("expectations[0] (reports p99 latency at most 2s) holds at seed 3"),
        "{err}"
    );
    let Resim {
        code, stderr: err, ..
    } = resim(&["shrink", RETRY_STORM, "--seed", "3", "--expectation", "7"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--expectation 7: there are 2 expectations: [0] P99AtMost"),
        "{err}"
    );
}

#[test]
fn the_command_line_writes_a_file_that_fails_when_run() {
    let dir = std::env::temp_dir().join(format!("resim-shrink-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("small.ron");
    let out = out.to_str().unwrap();
    let Resim {
        code,
        stdout: text,
        stderr: err,
    } = resim(&[
        "shrink",
        CHECKOUT,
        "--seed",
        "3",
        "--budget",
        "20",
        "--expectation",
        "shoppers success",
        "--out",
        out,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("20 runs of a budget of 20 (spent"), "{text}");
    assert!(
        text.contains(&format!("wrote {out}; replay: resim run {out} --seed 3")),
        "{text}"
    );
    let Resim {
        code,
        stdout: report,
        ..
    } = resim(&["run", out, "--seed", "3", "--format", "compact"]);
    assert_eq!(code, 1, "{report}");
    assert!(report.contains("FAIL shoppers success ratio"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Whatever the budget and the failing seed, the returned file fails (`check` runs it).
    #[test]
    fn no_budget_returns_a_file_that_passes(budget in 0u64..40, seed in 1u64..4, storm in any::<bool>()) {
        let file = if storm { RETRY_STORM } else { CHECKOUT };
        let scenario = load::load(file).unwrap();
        let first = run(&scenario, file, &RunOptions { seed: Some(seed), ..RunOptions::default() }).unwrap();
        prop_assume!(!first.report.passed());
        check(file, seed, budget);
    }
}
