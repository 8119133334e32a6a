//! Same model + same seed ⇒ same digest, in every build profile; another seed ⇒ another
//! digest. `.ci/run` runs this file in both the dev and the release profile against the same
//! committed snapshots, so a profile-dependent result (a float that rounds differently, an
//! iteration order that changes) fails one of the two.

use sim_core::queueing::{MmcParams, run_mmc};

fn check_mm1(customers: u64, seed: u64) -> String {
    let first = run_mmc(MmcParams::mm1(customers, seed));
    let second = run_mmc(MmcParams::mm1(customers, seed));
    assert_eq!(
        first.digest, second.digest,
        "seed {seed}: two runs of the same model diverged"
    );
    assert_eq!(first, second);
    format!(
        "mm1 customers={customers} seed={seed} events={} end={} mean_wait_s={:.9} digest={}",
        first.events, first.end, first.mean_wait_secs, first.digest
    )
}

#[test]
fn mm1_digest_is_reproducible_and_pinned() {
    // The snapshot is shared by the debug and the release run of this test.
    let lines: Vec<String> = (1..=3).map(|seed| check_mm1(200_000, seed)).collect();
    insta::assert_snapshot!("determinism__mm1_digests", lines.join("\n"));
}

#[test]
fn another_seed_gives_another_digest() {
    let digests: Vec<_> = (1..=20)
        .map(|seed| run_mmc(MmcParams::mm1(2_000, seed)).digest)
        .collect();
    let mut unique = digests.clone();
    unique.sort_by_key(|d| d.value());
    unique.dedup();
    assert_eq!(
        unique.len(),
        digests.len(),
        "two seeds gave the same digest"
    );
}

#[test]
fn a_different_history_gives_a_different_digest() {
    let base = MmcParams::mm1(2_000, 1);
    let faster = MmcParams {
        service_rate: 1.0001,
        ..base
    };
    assert_ne!(run_mmc(base).digest, run_mmc(faster).digest);
}

#[test]
fn library_digests_are_pinned() {
    // Every library scenario at its own seed: the same digest in the dev and the release
    // profile (this snapshot is shared by both runs of this file in `.ci/run`), and the
    // same as when the snapshot was taken.
    let lines: Vec<String> = scenarios::cli::library::LIBRARY
        .iter()
        .map(|entry| {
            let scenario = scenarios::format::load::parse(entry.name, entry.text).expect("valid");
            let out = scenarios::run(&scenario, entry.name, &scenarios::RunOptions::default())
                .expect("the library runs");
            let r = &out.report;
            format!(
                "{:<32} seed {} events {:>8} digest {}",
                entry.name, r.seed, r.events, r.digest
            )
        })
        .collect();
    insta::assert_snapshot!("determinism__library_digests", lines.join("\n"));
}
