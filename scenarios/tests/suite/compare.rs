//! `resim compare`: two scenarios on the same seeds, with the differences a reader of the
//! library expects, and nothing where there is no difference.

use crate::support;

use scenarios::cli::library;
use scenarios::experiment::Control;
use scenarios::experiment::compare::{Comparison, Row, compare, sides};
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::Override;
use support::{Resim, resim};

/// Compares two files, or a file with variants, over seeds 1..5 with `sets` on both sides.
fn check(files: &[&str], variants: &[&str], sets: &[&str]) -> Comparison {
    let files: Vec<String> = files.iter().map(|s| s.to_string()).collect();
    let variants: Vec<String> = variants.iter().map(|s| s.to_string()).collect();
    let sets: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let sides = sides(&files, &variants, &sets).unwrap();
    compare(
        &sides,
        (1, 5),
        None,
        (None, &Control::default()),
        &library::open,
        &RunLimits::default(),
    )
    .unwrap()
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
    // The verdicts say the same, and the recovery time is read from the runs that recovered.
    assert_eq!(c.verdicts.0.get("metastable"), Some(&5), "{:?}", c.verdicts);
    let recovered = c.verdicts.1.get("recovered").copied().unwrap_or(0)
        + c.verdicts.1.get("never_degraded").copied().unwrap_or(0);
    assert_eq!(recovered, 5, "{:?}", c.verdicts);
    let recovery = row(&c, "recovery s");
    assert_eq!((recovery.a.count, recovery.b.count), (0, 5), "{recovery:?}");
    assert!(recovery.b.mean < 10.0, "{recovery:?}");
    // No paired difference where one side never recovered.
    assert_eq!(recovery.difference.count, 0);
}

#[test]
fn a_scenario_against_itself_differs_in_nothing() {
    let c = check(
        &["retry-storm", "retry-storm"],
        &[],
        &["duration=\"15s\"", "expectations=[]"],
    );
    // In 15s the spike has not ended: no verdict, and no recovery time on either side.
    assert!(c.verdicts.0.is_empty() && c.verdicts.1.is_empty());
    assert_eq!(row(&c, "recovery s").a.count, 0);
    for r in c.rows.iter().filter(|r| r.name != "recovery s") {
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
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&[
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
    let Resim {
        code, stderr: err, ..
    } = resim(&["compare", "retry-storm"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("compare two files"), "{err}");
}

#[test]
fn a_bulkhead_on_the_slow_call_keeps_the_catalog_serving() {
    let c = check(
        &["bulkhead-isolation", "bulkhead-isolation-separate"],
        &[],
        &[],
    );
    let success = row(&c, "success %");
    assert!(
        success.significant() && success.difference.mean > 15.0,
        "{success:?}"
    );
    let p99 = row(&c, "p99 ms");
    assert!(p99.significant() && p99.difference.mean < -300.0, "{p99:?}");
    // Less work on requests whose callers left: the frontend no longer queues behind payments.
    let wasted = row(&c, "wasted work s");
    assert!(
        wasted.significant() && wasted.difference.mean < 0.0,
        "{wasted:?}"
    );
    // Neither side retries, so there is nothing to amplify: no difference, and none claimed.
    let amplification = row(&c, "amplification");
    assert_eq!(amplification.difference.mean, 0.0);
    assert!(!amplification.significant());
}

#[test]
fn codel_ends_the_metastable_retry_storm_and_its_wasted_work() {
    let c = check(&["metastable-retry", "metastable-retry-codel"], &[], &[]);
    let success = row(&c, "success %");
    assert!(
        success.significant() && success.difference.mean > 50.0,
        "{success:?}"
    );
    let amplification = row(&c, "amplification");
    assert!(
        amplification.significant() && amplification.difference.mean < -1.0,
        "{amplification:?}"
    );
    // CoDel drops what waited too long before any work is done on it: no wasted work at all.
    let wasted = row(&c, "wasted work s");
    assert!(wasted.significant(), "{wasted:?}");
    assert!(wasted.a.mean > 100.0, "{wasted:?}");
    assert_eq!(wasted.b.mean, 0.0, "{wasted:?}");
}

#[test]
fn json_gives_every_figure_of_the_table_and_svg_draws_both_sides() {
    let dir = std::env::temp_dir().join(format!("resim-compare-{}", std::process::id()));
    let svg = dir.join("charts");
    let html = dir.join("compare.html");
    let o = resim(&[
        "compare",
        "retry-storm",
        "retry-storm-budget",
        "--seeds",
        "1..3",
        "--set",
        "duration=\"15s\"",
        "--set",
        "expectations=[]",
        "--format",
        "json",
        "--svg",
        svg.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let json: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(json["a"], "retry-storm");
    assert_eq!(json["b"], "retry-storm-budget");
    assert_eq!(json["seeds"], serde_json::json!([1, 3]));
    let figures: Vec<&str> = json["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["figure"].as_str().unwrap())
        .collect();
    assert_eq!(
        figures,
        [
            "goodput/s",
            "success %",
            "p99 ms",
            "amplification",
            "wasted work s",
            "recovery s"
        ]
    );
    let amplification = &json["figures"][3];
    assert_eq!(amplification["significant"], true);
    assert_eq!(amplification["a"]["count"], 3);
    let (lo, hi) = (
        amplification["interval"][0].as_f64().unwrap(),
        amplification["interval"][1].as_f64().unwrap(),
    );
    let mean = amplification["difference"]["mean"].as_f64().unwrap();
    assert!(lo <= mean && mean <= hi && hi < 0.0, "{amplification}");
    for name in ["compare-goodput", "compare-latency"] {
        let text = std::fs::read_to_string(svg.join(format!("{name}.svg"))).unwrap();
        assert!(text.contains("A: retry-storm"), "{name}");
        assert!(text.contains("B: retry-storm-budget"), "{name}");
        assert!(text.contains("seed 1"), "{name}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("wasted work s") && page.matches("<svg").count() == 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The trigger and after rows are the run's figures over the stretches the verdict reads,
/// computed again here from each seed's per-bucket series: the success ratio by bucket of
/// offer, and the successes completed per second.
#[test]
fn the_trigger_and_after_rows_are_the_runs_figures_over_those_stretches() {
    let c = check(&["metastable-retry"], &["budget"], &[]);
    // The spike is 10s to 15s; the run is 60s and its last bucket holds what is in flight.
    assert_eq!(c.windows.0, Some((10.0, 15.0, Some(59.0))));
    assert_eq!(c.windows.0, c.windows.1);
    for (side, variant) in [(0, None), (1, Some("budget"))] {
        let (mut success, mut goodput) = (Vec::new(), Vec::new());
        for seed in 1..=5 {
            let r = support::run_library_with("metastable-retry", variant, &[], Some(seed));
            let stretch = |from: f64, to: f64| {
                let rows: Vec<_> = r
                    .series
                    .iter()
                    .filter(|b| b.t_s >= from && b.t_s < to)
                    .collect();
                let offered: u64 = rows.iter().map(|b| b.offered).sum();
                let ok: u64 = rows.iter().map(|b| b.successes).sum();
                let per_s: f64 = rows.iter().map(|b| b.goodput_per_s).sum::<f64>() / (to - from);
                (100.0 * ok as f64 / offered as f64, per_s)
            };
            let (during, after) = (stretch(10.0, 15.0), stretch(15.0, 59.0));
            success.push((during.0, after.0));
            goodput.push((during.1, after.1));
        }
        let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
        let pick = |r: &Row| if side == 0 { r.a.mean } else { r.b.mean };
        let near = |name: &str, expected: f64, within: f64| {
            let shown = pick(row(&c, name));
            assert!(
                (shown - expected).abs() <= within,
                "side {side} {name}: {shown} against {expected} from the series"
            );
        };
        // Rounded to 3 decimals per run (a ratio) or per bucket (a rate).
        near(
            "trigger success %",
            mean(success.iter().map(|s| s.0).collect()),
            0.05,
        );
        near(
            "after success %",
            mean(success.iter().map(|s| s.1).collect()),
            0.05,
        );
        near(
            "trigger goodput/s",
            mean(goodput.iter().map(|g| g.0).collect()),
            0.01,
        );
        near(
            "after goodput/s",
            mean(goodput.iter().map(|g| g.1).collect()),
            0.01,
        );
    }
    // The storm: no request offered after the spike succeeds without the budget, nearly all
    // with it; during the spike both sides fail alike (the overload, not the retries, is what
    // fails them then), so the whole-run figures hide where the difference is.
    let after = row(&c, "after success %");
    assert!(after.a.mean < 1.0 && after.b.mean > 95.0, "{after:?}");
    assert!(after.significant());
    let during = row(&c, "trigger success %");
    assert!(!during.significant(), "{during:?}");
    // A run with no trigger that ends has no such rows.
    let none = check(
        &["retry-storm", "retry-storm"],
        &[],
        &["duration=\"15s\"", "expectations=[]"],
    );
    assert!(
        none.rows
            .iter()
            .all(|r| !r.name.starts_with("trigger ") && !r.name.starts_with("after ")),
        "{:?}",
        none.rows
    );
}
