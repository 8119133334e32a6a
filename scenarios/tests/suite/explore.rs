//! `resim explore`: the explorer's data of a run (its series by bucket, the windows' why, the
//! sampled requests and their trees) and its page. The page in a browser is checked by
//! `scripts/check-explore`.

use scenarios::experiment::explore::{ExploreOptions, build};
use scenarios::report::explore::{ExploreData, GRID_PARTS, TREES_MAX, page};
use scenarios::report::why::request;
use scenarios::{RunOptions, run};
use std::collections::BTreeMap;

use crate::support::{resim, workspace_root};

/// The book's windowed-why scenario: a 10s db slowdown saturates the api, the users time out.
const SLOWDOWN: &str = "book/src/scenarios/slowdown-window.ron";

fn slowdown() -> (scenarios::format::schema::Scenario, String) {
    let file = workspace_root().join(SLOWDOWN).display().to_string();
    let text = std::fs::read_to_string(&file).unwrap();
    (scenarios::format::load::parse(&file, &text).unwrap(), file)
}

fn explored() -> (ExploreData, scenarios::format::schema::Scenario, String) {
    let (scenario, file) = slowdown();
    let data = build(&scenario, &file, &ExploreOptions::default()).unwrap();
    (data, scenario, file)
}

#[test]
fn recording_samples_and_trees_leaves_the_run_as_it_was() {
    let (data, scenario, file) = explored();
    let plain = run(&scenario, &file, &RunOptions::default()).unwrap();
    assert_eq!(data.digest, plain.report.digest);
    // The page's lines are the report's series.
    let p99 = data
        .lines
        .iter()
        .find(|l| l.key == "latency_ms_p99")
        .unwrap();
    let from_report: Vec<Option<f64>> = plain
        .report
        .series
        .iter()
        .map(|r| r.latency_ms_p99)
        .collect();
    assert_eq!(p99.values, from_report);
    let queue = data
        .lines
        .iter()
        .find(|l| l.key == "service/api/queue")
        .unwrap();
    let from_report: Vec<Option<f64>> = plain
        .report
        .series
        .iter()
        .map(|r| Some(r.services[0].queue_total_mean))
        .collect();
    assert_eq!(queue.values, from_report);
}

#[test]
fn samples_are_failed_and_slowest_requests_of_their_bucket_and_bounded() {
    let (data, _, _) = explored();
    let line = |key: &str| data.lines.iter().find(|l| l.key == key).unwrap();
    let mut per: BTreeMap<(usize, &str), usize> = BTreeMap::new();
    for s in data.samples.iter().filter(|s| s.reason != "slow") {
        *per.entry((s.bucket, s.reason)).or_default() += 1;
        assert!(line("failures").values[s.bucket].unwrap() > 0.0, "{s:?}");
    }
    assert!(!per.is_empty());
    assert!(
        per.values()
            .all(|&n| n <= scenarios::figures::EXAMPLES_PER_BUCKET)
    );
    // The slowest success of each bucket is the one whose latency is the bucket's max.
    let slow: Vec<_> = data.samples.iter().filter(|s| s.reason == "slow").collect();
    let with_successes = line("successes")
        .values
        .iter()
        .filter(|v| v.unwrap() > 0.0)
        .count();
    assert!(slow.len() >= with_successes && slow.len() <= 2 * with_successes);
    for (bucket, max) in line("latency_ms_max").values.iter().enumerate() {
        let Some(max) = max else { continue };
        let slowest = slow.iter().filter(|s| s.bucket == bucket);
        let slowest = slowest.map(|s| s.latency_ms.unwrap()).fold(0.0, f64::max);
        assert_eq!(slowest, *max, "bucket {bucket}");
    }
    assert!(!data.trees.is_empty() && data.trees.len() <= TREES_MAX);
    // Each tree is what `resim why --request` says of the request, followed alone.
    let (scenario, file) = slowdown();
    for t in data.trees.iter().step_by(data.trees.len().div_ceil(3)) {
        let alone = RunOptions {
            follow_request: Some(t.request),
            ..RunOptions::default()
        };
        let out = run(&scenario, &file, &alone).unwrap();
        let why = request::explain(&out.followed.unwrap(), &file).unwrap();
        assert_eq!(t.lines, why.lines(), "request #{}", t.request);
        let sample = data
            .samples
            .iter()
            .find(|s| s.request == t.request)
            .unwrap();
        let outcome = if sample.reason == "slow" {
            "ok"
        } else {
            sample.reason
        };
        assert_eq!(why.outcome, outcome);
        let bucket = (why.offered_s / data.bucket_s) as usize;
        assert_eq!(bucket, sample.bucket, "request #{}", t.request);
    }
}

#[test]
fn the_grid_explains_the_slowdown_from_its_window() {
    let (data, _, _) = explored();
    let parts = GRID_PARTS as usize;
    assert_eq!(data.why_grid.len(), parts * (parts + 1) / 2);
    // 60s in 20 parts: the window from 21s to 30s is on the grid, and it finds the api
    // saturated; the window before the slowdown finds nothing saturated.
    let at = |from: f64, to: f64| {
        let w = data
            .why_grid
            .iter()
            .find(|w| (w.from_s - from).abs() < 1e-6 && (w.to_s - to).abs() < 1e-6);
        w.unwrap_or_else(|| panic!("{from}..{to} is on the grid"))
    };
    let during = at(21.0, 30.0);
    assert!(
        during
            .saturated
            .iter()
            .any(|f| f.subject == "api" && f.text.contains("busy")),
        "{:#?}",
        during.saturated
    );
    assert!(during.failed_attempts.iter().any(|r| r.reason == "timeout"));
    let before = at(0.0, 18.0);
    assert!(before.saturated.is_empty(), "{:#?}", before.saturated);
    // The default windows are the run's: the slowdown and the recovery after it.
    assert!(
        data.why_windows
            .iter()
            .any(|w| w.window.contains("slowdown db"))
    );
}

#[test]
fn the_page_is_self_contained_and_carries_both_runs() {
    let (data, _, _) = explored();
    let html = page(&[data.clone(), data.clone()], None);
    assert!(html.contains("window.resimExplore"));
    // The SVG namespace is a name, not a place the page goes to; the empty icon is a `data:`
    // URL, which asks nothing (it keeps the browser from asking for `/favicon.ico`).
    let elsewhere = html.replace("\"http://www.w3.org/2000/svg\"", "").replacen(
        "<link rel=\"icon\" href=\"data:,\">",
        "",
        1,
    );
    for outside in ["http://", "https://", "src=", "href=", "@import", "url("] {
        assert!(!elsewhere.contains(outside), "{outside}");
    }
    let start = html.find("id=\"resim-data\">").unwrap() + "id=\"resim-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let runs: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 2);
    let served = page(&[data], Some("{\"token\":\"</script>\"}"));
    assert!(served.contains("window.RESIM_SERVE = {\"token\":\"\\u003c/script>\"};"));
    // The serving script comes after the page's own, whose `show` it calls; a page written to
    // a file has none.
    let serving = served.find("\"resim-serve\"").expect("the serving script");
    assert!(served.find("window.resimExplore = ").unwrap() < serving);
    assert!(!html.contains("\"resim-serve\""));
}

#[test]
fn the_command_writes_the_page_and_says_what_it_holds() {
    let dir = workspace_root().join("target/explore-test");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("slowdown.html");
    let file = workspace_root().join(SLOWDOWN);
    let r = resim(&[
        "explore",
        file.to_str().unwrap(),
        "--set",
        "duration=40s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("wrote "), "{}", r.stdout);
    assert!(r.stdout.contains("--set 'duration=40s'"), "{}", r.stdout);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("\"sets\":[\"duration=40s\"]"));
    // Bad input: exit code 2, the error names the flag.
    let r = resim(&[
        "explore",
        file.to_str().unwrap(),
        "--set",
        "nothing=1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("nothing"), "{}", r.stderr);
    let r = resim(&[
        "explore",
        file.to_str().unwrap(),
        "--compare",
        "nope",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("nope"), "{}", r.stderr);
}

#[test]
fn a_second_file_is_run_on_the_first_s_seed_and_compared() {
    let dir = workspace_root().join("target/explore-test");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("two-files.html");
    let file = workspace_root().join(SLOWDOWN);
    let r = resim(&[
        "explore",
        file.to_str().unwrap(),
        "retry-storm",
        "--set",
        "duration=30s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seed = r.stdout.split(" · seed ").nth(1).unwrap();
    let seed = seed.split(' ').next().unwrap();
    // Common random numbers: the other file at this file's seed, with the same --set.
    let alone = resim(&[
        "run",
        "retry-storm",
        "--seed",
        seed,
        "--set",
        "duration=30s",
        "--format",
        "json",
    ]);
    let alone: serde_json::Value = serde_json::from_str(&alone.stdout).unwrap();
    let digest = alone["digest"].as_str().unwrap();
    assert!(
        r.stdout
            .contains(&format!("compared with retry-storm (digest {digest})")),
        "{}",
        r.stdout
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains(&format!("\"digest\":\"{digest}\"")));
    // Two things to compare with at once is refused, as bad input.
    let r = resim(&[
        "explore",
        file.to_str().unwrap(),
        "retry-storm",
        "--compare",
        "x",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
