//! The ping-pong example: its timeline is pinned, and the same seed gives the same digest.

#[allow(dead_code)] // the example's `main` is not called here
#[path = "../examples/ping_pong.rs"]
mod ping_pong;

#[test]
fn the_timeline_shows_the_partition_and_the_recovery() {
    let report = ping_pong::run(7);
    insta::with_settings!({
        description => "cargo run -p sim-net --example ping_pong -- --seed 7",
        omit_expression => true,
    }, {
        insta::assert_snapshot!("ping_pong__partition_heals", report.text);
    });
}

#[test]
fn same_seed_same_digest_other_seed_other_digest() {
    let first = ping_pong::run(7);
    let again = ping_pong::run(7);
    assert_eq!(
        sim_core::sim::first_divergence(&first.trace, &again.trace),
        None,
        "the same seed replayed a different history"
    );
    assert_eq!(first.digest, again.digest);
    assert_eq!(first.text, again.text);
    assert_ne!(ping_pong::run(8).digest, first.digest);
}
