//! `resim compare`: two scenarios on the same seeds, with the differences a reader of the
//! library expects, and nothing where there is no difference.

use scenarios::experiment::compare::{Comparison, Row, compare, sides};
use scenarios::limits::Limits;
use scenarios::overrides::Override;
use std::process::Command;

/// Compares two files, or a file with variants, over seeds 1..5 with `sets` on both sides.
fn check(files: &[&str], variants: &[&str], sets: &[&str]) -> Comparison {
    let files: Vec<String> = files.iter().map(|s| s.to_string()).collect();
    let variants: Vec<String> = variants.iter().map(|s| s.to_string()).collect();
    let sets: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let sides = sides(&files, &variants, &sets).unwrap();
    compare(&sides, (1, 5), None, None, &Limits::default()).unwrap()
}

fn row<'a>(c: &'a Comparison, name: &str) -> &'a Row {
    c.rows.iter().find(|r| r.name == name).unwrap()
}

#[test]
fn a_retry_budget_lowers_amplification_and_raises_goodput_in_a_retry_storm() {
    // Shortened to 30s (the storm is under way from 10s); expectations are about 60s runs.
    let c = check(
        &["retry-storm", "retry-storm-budget"],
        &[],
        &["duration=\"30s\"", "expectations=[]"],
    );
    let amplification = row(&c, "amplification");
    assert!(amplification.significant(), "{amplification:?}");
    assert!(
        amplification.interval.unwrap().1 < -1.0,
        "{amplification:?}"
    );
    let goodput = row(&c, "goodput/s");
    assert!(
        goodput.significant() && goodput.difference.mean > 100.0,
        "{goodput:?}"
    );
}

#[test]
fn the_budget_variant_of_metastable_retry_recovers_significantly() {
    let c = check(&["metastable-retry"], &["budget"], &[]);
    assert_eq!(c.labels.1, "metastable-retry --variant budget");
    let amplification = row(&c, "amplification");
    assert!(
        amplification.significant() && amplification.difference.mean < -1.0,
        "{amplification:?}"
    );
    let success = row(&c, "success %");
    assert!(
        success.significant() && success.difference.mean > 50.0,
        "{success:?}"
    );
    // Each side meets its own expectations: the storm persists without the budget, and
    // recovers with it.
    assert_eq!(c.passed, (5, 5));
}

#[test]
fn a_scenario_against_itself_differs_in_nothing() {
    let c = check(
        &["retry-storm", "retry-storm"],
        &[],
        &["duration=\"15s\"", "expectations=[]"],
    );
    for r in &c.rows {
        assert_eq!(r.difference.mean, 0.0, "{r:?}");
        assert_eq!(r.interval, Some((0.0, 0.0)), "{r:?}");
        assert!(!r.significant());
        assert!(
            r.a.sd() > 0.0 || r.name == "amplification",
            "the seeds differ: {r:?}"
        );
    }
}

#[test]
fn the_command_line_prints_the_table_and_refuses_a_third_side() {
    let resim = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_resim"))
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code().unwrap(),
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8(o.stderr).unwrap(),
        )
    };
    let (code, out, err) = resim(&[
        "compare",
        "retry-storm",
        "retry-storm-budget",
        "--seeds",
        "1..3",
        "--set",
        "duration=\"15s\"",
        "--set",
        "expectations=[]",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("A: retry-storm\nB: retry-storm-budget\nseeds 1..3"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("  amplification") && l.ends_with("significant")),
        "{out}"
    );
    let (code, _, err) = resim(&["compare", "retry-storm"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("compare two files"), "{err}");
}
