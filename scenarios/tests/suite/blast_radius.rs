//! Blast radius: one poison request under no isolation, cells and shuffle sharding, measured
//! over many seeds against the combinatorics.
//!
//! The scenario is the book's `poison-shards.ron`: 2,000 customers (tenant keys 1–2000) of an
//! api of 8 replicas, and a poisoner (tenant 0) whose requests, retried, crash every replica
//! they reach from 1s on. Crashed replicas do not come back within the run, so each run ends
//! with the poisoner's whole cell or shard down, and the report counts the customers that
//! went down with it. Given the poisoner's shard, each other customer's shard is an
//! independent uniform draw, so the customers that lost everything are a binomial count:
//! over `SEEDS` runs of 2,000 customers, the measured share must be within three standard
//! errors, `3 · sqrt(p (1 − p) / N)`, of the combinatorial `p`.

use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::{Overrides, parse_overridden};
use scenarios::report::BlastReport;
use scenarios::{RunOptions, run};

/// Runs, each with its own seed.
const SEEDS: u64 = 40;

/// Customers per run (the poisoner is one more unit).
const CUSTOMERS: u64 = 2000;

fn text() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../book/src/scenarios/poison-shards.ron"
    );
    std::fs::read_to_string(path).unwrap()
}

/// The book's scenario with `variant` (`cells`, `shuffle-sharding`, or none) and `sets`.
fn scenario(variant: Option<&str>, sets: &[&str]) -> Result<scenarios::Scenario, String> {
    let overrides = Overrides {
        variant: variant.map(str::to_string),
        sets: sets.iter().map(|s| s.parse().unwrap()).collect(),
    };
    parse_overridden(
        "poison-shards.ron",
        &text(),
        &RunLimits::default(),
        &overrides,
    )
    .map_err(|e| e.to_string())
}

/// The api's blast radius in a run of the scenario with `variant` and `sets` at `seed`.
fn blast_with(variant: Option<&str>, sets: &[&str], seed: u64) -> BlastReport {
    let s = scenario(variant, sets).unwrap();
    let options = RunOptions {
        seed: Some(seed),
        ..RunOptions::default()
    };
    let report = run(&s, "poison-shards.ron", &options).unwrap().report;
    report.services[0]
        .blast_radius
        .clone()
        .expect("a poisoned service reports its blast radius")
}

fn blast(variant: Option<&str>, seed: u64) -> BlastReport {
    blast_with(variant, &[], seed)
}

/// Over every seed: the customers (other than the poisoner) that lost all their replicas,
/// and those that lost some, each as a share of all customers of all runs, after checking
/// that the poison took down exactly the poisoner's `shard` replicas in every run.
fn shares(variant: &str, shard: u64) -> (f64, f64) {
    let (mut all, mut some) = (0, 0);
    for seed in 1..=SEEDS {
        let b = blast(Some(variant), seed);
        assert_eq!(b.units, CUSTOMERS + 1, "seed {seed}");
        assert_eq!(b.poison_crashes, shard, "seed {seed}: {b:?}");
        // The poisoner is one of the units that lost everything.
        assert!(b.units_lost_all >= 1, "seed {seed}: {b:?}");
        all += b.units_lost_all - 1;
        some += b.units_lost_some;
    }
    let n = (SEEDS * CUSTOMERS) as f64;
    (all as f64 / n, some as f64 / n)
}

/// Asserts that `measured` is within three binomial standard errors of `p` over `n` trials.
fn within_sampling_error(what: &str, measured: f64, p: f64) {
    let n = (SEEDS * CUSTOMERS) as f64;
    let se = (p * (1.0 - p) / n).sqrt();
    assert!(
        (measured - p).abs() <= 3.0 * se,
        "{what}: measured {measured:.5}, expected {p:.5} ± {:.5} (3 standard errors over {n} customers)",
        3.0 * se
    );
}

#[test]
fn shuffle_sharding_two_of_eight_takes_out_one_customer_in_28() {
    let (all, some) = shares("shuffle-sharding", 2);
    // The customers whose pair is the poisoner's: 1 of C(8, 2) = 28 pairs.
    within_sampling_error("lost all", all, 1.0 / 28.0);
    // Those whose pair shares exactly one replica with it: 2 · 6 of the 28 pairs.
    within_sampling_error("lost some", some, 12.0 / 28.0);
}

#[test]
fn four_cells_take_out_one_customer_in_four() {
    let (all, some) = shares("cells", 2);
    within_sampling_error("lost all", all, 1.0 / 4.0);
    // A cell goes down whole or not at all.
    assert_eq!(some, 0.0);
}

#[test]
fn without_isolation_the_poison_takes_every_replica_and_every_customer() {
    for seed in 1..=3 {
        let b = blast(None, seed);
        assert_eq!(b.isolation, "none");
        assert_eq!(b.poison_crashes, 8, "seed {seed}");
        assert_eq!(b.units_lost_all, CUSTOMERS + 1, "seed {seed}");
        assert_eq!(b.lost_all_ratio, 1.0);
    }
}

#[test]
fn a_shard_of_every_replica_is_no_isolation() {
    // Every unit's shard is the same 8 replicas: the poison takes them all, and everyone.
    let b = blast_with(
        None,
        &["services.api.isolation=ShuffleSharding(shard_size: 8)"],
        1,
    );
    assert_eq!(b.poison_crashes, 8);
    assert_eq!(b.units_lost_all, CUSTOMERS + 1);
}

#[test]
fn shard_tables_beyond_their_bound_are_refused_with_the_fix() {
    let sets = [
        "services.api.isolation=ShuffleSharding(shard_size: 8)",
        "clients.customers.classes[0].tenants.keys=1000000",
    ];
    let e = scenario(None, &sets).unwrap_err();
    // The error names the override that brought the shards in, and the figure.
    assert!(
        e.contains("1000001 caller units (tenant keys) × 8 replicas each"),
        "{e}"
    );
    assert!(
        e.contains("use fewer tenant keys or a smaller shard"),
        "{e}"
    );
}

#[test]
fn the_same_seed_draws_the_same_shards() {
    let sets = ["services.api.isolation=ShuffleSharding(shard_size: 3)"];
    assert_eq!(blast_with(None, &sets, 9), blast_with(None, &sets, 9));
}
