//! The engine against queueing theory: mean time in queue of M/M/1 and M/M/c (Erlang C).
//!
//! Each check asserts two things: that the run is long enough to resolve the 2% tolerance
//! (three batch-means standard errors inside it), and that the measured mean is within 2% of
//! the formula. The first keeps the second honest: a run too short to tell would pass by luck.
//! More seeds and a heavier load run with `RESIM_SLOW_TESTS=1`.

use sim_core::queueing::{MmcParams, run_mmc};

const TOLERANCE: f64 = 0.02;

fn check(servers: u32, arrival_rate: f64, customers: u64, seed: u64) {
    let params = MmcParams {
        servers,
        arrival_rate,
        service_rate: 1.0,
        customers,
        seed,
    };
    let report = run_mmc(params);
    let theory = params.theory_mean_wait();
    let label = format!("M/M/{servers} λ={arrival_rate} μ=1 customers={customers} seed={seed}");
    let resolution = 3.0 * report.mean_wait_standard_error / theory;
    assert!(
        resolution < TOLERANCE,
        "{label}: run too short, 3 standard errors are {:.2}% of the mean",
        resolution * 100.0
    );
    let error = report.mean_wait_secs / theory - 1.0;
    assert!(
        error.abs() < TOLERANCE,
        "{label}: mean wait {:.5}s vs theory {theory:.5}s ({:+.2}%, standard error {:.5}s)",
        report.mean_wait_secs,
        error * 100.0,
        report.mean_wait_standard_error
    );
}

fn slow_tests() -> bool {
    std::env::var_os("RESIM_SLOW_TESTS").is_some()
}

#[test]
fn mm1_at_half_load() {
    check(1, 0.5, 2_000_000, 1);
}

#[test]
fn mm1_at_eighty_percent() {
    check(1, 0.8, 6_000_000, 1);
}

#[test]
fn mm1_at_ninety_percent() {
    // Waiting times at ρ = 0.9 are strongly correlated from customer to customer, so the
    // run must be long: 16M customers put three standard errors near 1.8% of the mean.
    check(1, 0.9, 16_000_000, 1);
}

#[test]
fn mm2_at_eighty_percent_matches_erlang_c() {
    check(2, 1.6, 8_000_000, 1);
}

#[test]
fn mm4_at_eighty_percent_matches_erlang_c() {
    check(4, 3.2, 8_000_000, 1);
}

#[test]
fn more_seeds_and_heavier_load_when_slow_tests_are_on() {
    if !slow_tests() {
        return;
    }
    for seed in 2..=6 {
        check(1, 0.5, 2_000_000, seed);
        check(1, 0.8, 6_000_000, seed);
        check(1, 0.9, 16_000_000, seed);
        check(2, 1.6, 8_000_000, seed);
        check(4, 3.2, 8_000_000, seed);
    }
    check(8, 7.6, 40_000_000, 1);
}
