//! The `resim` binary as a user runs it: exit codes, one-line errors, the replay line, JSON,
//! CSV, charts, the library list and the built-in example.

use crate::support;

use std::path::PathBuf;
use std::process::Command;
use support::resim_in;

/// A scratch directory, where `resim` runs and writes what it is asked to write.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resim-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(name: &str, text: &str) -> String {
    let path = scratch().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

const SMALL: &str = r#"// one client, one server
Scenario(
    name: "small",
    duration: "5s",
    clients: { "c": (load: Open(rate: Constant("200/s")), call: (target: "s", timeout: "1s")) },
    services: { "s": (workers: 4, work: Exponential(mean: "10ms")) },
    faults: [(at: "2s", duration: "1s", kind: Slowdown(service: "s", factor: 2.0))],
    expectations: [GoodputAtLeast(client: "c", after: "0s", min_ratio: 0.5)],
)
"#;

#[test]
fn run_prints_a_report_that_ends_with_the_replay_command() {
    let file = write("small.ron", SMALL);
    let o = resim_in(&scratch(), &["run", &file, "--seed", "42"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("summary"));
    assert!(o.stdout.contains("PASS c success ratio"));
    assert!(o.stdout.contains("digest "));
    let last = o.stdout.lines().last().unwrap();
    assert_eq!(last, format!("replay: resim run {file} --seed 42"));
}

#[test]
fn the_same_seed_prints_the_same_report() {
    let file = write("same.ron", SMALL);
    let a = resim_in(&scratch(), &["run", &file, "--seed", "9"]);
    let b = resim_in(&scratch(), &["run", &file, "--seed", "9"]);
    let c = resim_in(&scratch(), &["run", &file, "--seed", "10"]);
    assert_eq!(a.stdout, b.stdout);
    assert_ne!(a.stdout, c.stdout);
}

#[test]
fn a_failed_expectation_exits_1_and_names_the_seed() {
    let text = SMALL
        .replace("min_ratio: 0.5", "min_ratio: 1.0")
        .replace("factor: 2.0", "factor: 20.0");
    let file = write("failing.ron", &text);
    let o = resim_in(&scratch(), &["run", &file, "--seed", "3"]);
    assert_eq!(o.code, 1);
    assert!(o.stdout.contains("FAIL c success ratio"));
    assert!(o.stderr.contains("seed 3"), "{}", o.stderr);
    assert!(o.stderr.contains(&format!("resim run {file} --seed 3")));
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let file = write("bad.ron", &SMALL.replace("workers: 4", "workers: 0"));
    for args in [vec!["check", &file], vec!["run", &file]] {
        let o = resim_in(&scratch(), &args);
        assert_eq!(o.code, 2);
        assert_eq!(
            o.stderr,
            format!("{file}: services.s.workers: must be at least 1, got 0\n")
        );
    }
    let o = resim_in(&scratch(), &["check", "no-such-file.ron"]);
    assert_eq!(o.code, 2);
    assert_eq!(o.stderr.lines().count(), 1);
    assert!(
        o.stderr.starts_with("no-such-file.ron: cannot read"),
        "{}",
        o.stderr
    );

    let syntax = write("syntax.ron", &SMALL.replace("workers: 4,", "workers: 4"));
    let o = resim_in(&scratch(), &["check", &syntax]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.starts_with(&format!("{syntax}:6:")),
        "{}",
        o.stderr
    );
}

#[test]
fn overrides_are_validated_like_the_file() {
    let file = write("override.ron", SMALL);
    let o = resim_in(&scratch(), &["run", &file, "--duration", "1s"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("faults[0].at"), "{}", o.stderr);
    let o = resim_in(&scratch(), &["run", &file, "--duration", "10"]);
    assert_eq!(
        o.code, 2,
        "a unit-less duration is refused by the argument parser"
    );
    let o = resim_in(
        &scratch(),
        &[
            "run",
            &file,
            "--duration",
            "8s",
            "--bucket",
            "500ms",
            "--json",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let json: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(json["series"].as_array().unwrap().len(), 16);
}

#[test]
fn json_has_the_contract_fields() {
    let file = write("json.ron", SMALL);
    let o = resim_in(&scratch(), &["run", &file, "--seed", "5", "--json"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout.lines().count(), 1, "one object");
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["scenario"], "small");
    assert_eq!(v["seed"], 5);
    assert_eq!(v["digest"].as_str().unwrap().len(), 16);
    assert!(v["events"].as_u64().unwrap() > 1000);
    assert_eq!(v["stop_reason"], "time_limit");
    for field in [
        "offered",
        "attempts",
        "amplification",
        "successes",
        "failures_by_reason",
        "goodput_per_s",
    ] {
        assert!(!v["summary"][field].is_null(), "summary.{field}");
    }
    for q in ["p50", "p90", "p99", "p999", "max"] {
        assert!(v["summary"]["latency_ms"][q].as_f64().is_some(), "{q}");
    }
    assert_eq!(v["series"].as_array().unwrap().len(), 5);
    assert_eq!(v["services"][0]["name"], "s");
    assert_eq!(v["expectations"][0]["pass"], true);
}

#[test]
fn csv_writes_the_series() {
    let file = write("csv.ron", SMALL);
    let dir = scratch().join("csv-out");
    let o = resim_in(&scratch(), &["run", &file, "--csv", dir.to_str().unwrap()]);
    assert_eq!(o.code, 0);
    let text = std::fs::read_to_string(dir.join("series.csv")).unwrap();
    assert!(
        text.starts_with(
            "t_s,offered,successes,failures,goodput_ratio,goodput_per_s,latency_ms_mean,latency_ms_p99,s_arrivals"
        ),
        "{text}"
    );
    assert_eq!(text.lines().count(), 6, "a header and one row per second");
}

#[test]
fn svg_and_html_write_the_charts_and_the_page() {
    let file = write("charts.ron", SMALL);
    let dir = scratch().join("charts-out");
    let page = scratch().join("charts.html");
    let o = resim_in(
        &scratch(),
        &[
            "run",
            &file,
            "--svg",
            dir.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    // The report is printed as without the flags.
    assert!(o.stdout.starts_with("resim · small"), "{}", o.stdout);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "calls.svg",
            "expectations.svg",
            "latency.svg",
            "service-s.svg",
            "traffic.svg"
        ]
    );
    let traffic = std::fs::read_to_string(dir.join("traffic.svg")).unwrap();
    assert!(traffic.starts_with("<svg"), "{traffic}");
    assert!(traffic.contains("slowdown s ×2"), "{traffic}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&traffic.trim().to_string()),
        "the page holds the same chart"
    );

    // A place it cannot write is bad input, in one line.
    let o = resim_in(
        &scratch(),
        &["run", &file, "--html", "/nonexistent-dir/x.html"],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .starts_with("/nonexistent-dir/x.html: cannot write"),
        "{}",
        o.stderr
    );
}

#[test]
fn format_selects_the_renderer() {
    let file = write("format.ron", SMALL);
    let json = resim_in(
        &scratch(),
        &["run", &file, "--seed", "5", "--format", "json"],
    );
    assert_eq!(json.code, 0, "{}", json.stderr);
    assert_eq!(
        json.stdout,
        resim_in(&scratch(), &["run", &file, "--seed", "5", "--json"]).stdout
    );
    let human = resim_in(
        &scratch(),
        &["run", &file, "--seed", "5", "--format", "human"],
    );
    assert_eq!(
        human.stdout,
        resim_in(&scratch(), &["run", &file, "--seed", "5"]).stdout
    );
    assert!(human.stdout.starts_with("resim · small · seed 5"));
    let compact = resim_in(
        &scratch(),
        &["run", &file, "--seed", "5", "--format", "compact"],
    );
    assert!(compact.stdout.starts_with("offered "), "{}", compact.stdout);
    // The CSV on stdout is the file `--csv DIR` writes.
    let dir = scratch().join("format-out");
    let csv = resim_in(
        &scratch(),
        &[
            "run",
            &file,
            "--seed",
            "5",
            "--format",
            "csv",
            "--csv",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(csv.code, 0, "{}", csv.stderr);
    assert_eq!(
        csv.stdout,
        std::fs::read_to_string(dir.join("series.csv")).unwrap()
    );
    assert!(csv.stdout.starts_with("t_s,offered,"));
    // An unknown format, or two ways of choosing one, is bad input.
    let o = resim_in(&scratch(), &["run", &file, "--format", "xml"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("human, json, csv, compact"),
        "{}",
        o.stderr
    );
    let o = resim_in(&scratch(), &["run", &file, "--json", "--format", "csv"]);
    assert_eq!(o.code, 2);
}

#[test]
fn list_names_every_library_scenario_once() {
    let o = resim_in(&scratch(), &["list"]);
    assert_eq!(o.code, 0);
    assert_eq!(
        o.stdout.lines().count(),
        scenarios::cli::library::LIBRARY.len()
    );
    assert!(o.stdout.lines().any(|l| l.starts_with("metastable-retry ")));
    assert!(!o.stdout.contains("does not parse"));
}

#[test]
fn library_names_run_without_a_path() {
    let o = resim_in(&scratch(), &["check", "retry-storm"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("retry-storm: ok"));
}

#[test]
fn no_arguments_runs_the_built_in_example() {
    let o = resim_in(&scratch(), &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("resim · metastable-retry · seed 7"));
    assert!(
        o.stdout
            .trim_end()
            .ends_with("replay: resim run metastable-retry --seed 7")
    );
}

#[test]
fn trace_describes_a_window_of_the_history() {
    let file = write("trace.ron", SMALL);
    let o = resim_in(
        &scratch(),
        &["run", &file, "--seed", "4", "--trace", "2s..2.05s"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let trace: Vec<&str> = o
        .stdout
        .lines()
        .skip_while(|l| *l != "trace")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(trace.len() > 10, "{trace:?}");
    assert!(
        trace
            .iter()
            .any(|l| l.contains("fault-start") && l.contains("faults[0]"))
    );
    assert!(
        trace
            .iter()
            .any(|l| l.contains("deliver") && l.contains("s/0 attempt 1 of clients.c.call call #"))
    );
    // The same seed, the same story; the replay line is still last.
    let again = resim_in(
        &scratch(),
        &["run", &file, "--seed", "4", "--trace", "2s..2.05s"],
    );
    assert_eq!(o.stdout, again.stdout);
    assert!(o.stdout.trim_end().ends_with("--seed 4"));
    let o = resim_in(&scratch(), &["run", &file, "--trace", "2s"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("FROM..TO"), "{}", o.stderr);
}

#[test]
fn sweep_runs_a_range_of_seeds_and_names_the_failing_ones() {
    let file = write("sweep.ron", SMALL);
    let o = resim_in(&scratch(), &["sweep", &file, "--seeds", "1..4"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // One line per seed, then the statistics over them, then the verdict.
    assert_eq!(
        o.stdout.lines().filter(|l| l.starts_with("seed ")).count(),
        4
    );
    assert!(
        o.stdout
            .contains("\n  all seeds      4  100.0% [51.0, 100.0]"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("4 of 4 seeds pass")
    );
    // A bar the run meets at some seeds only: its p99 varies from about 90ms to 200ms with
    // the seed, against a bound of 100ms.
    let picky = write(
        "picky.ron",
        &SMALL.replace(
            "expectations: [GoodputAtLeast(client: \"c\", after: \"0s\", min_ratio: 0.5)]",
            "expectations: [P99AtMost(client: \"c\", max: \"100ms\")]",
        ),
    );
    let o = resim_in(&scratch(), &["sweep", &picky, "--seeds", "1..10"]);
    let passing = o.stdout.lines().filter(|l| l.contains(" PASS ")).count();
    let failing: Vec<&str> = o.stdout.lines().filter(|l| l.contains(" FAIL ")).collect();
    assert!(passing > 0 && !failing.is_empty(), "{}", o.stdout);
    assert_eq!(passing + failing.len(), 10);
    assert_eq!(o.code, 1);
    let first = failing[0].split_whitespace().nth(1).unwrap();
    let last = o.stdout.lines().last().unwrap();
    assert!(
        last.ends_with(&format!("replay: resim run {picky} --seed {first}")),
        "{last}"
    );
    let o = resim_in(&scratch(), &["sweep", &file, "--seeds", "5..1"]);
    assert_eq!(o.code, 2);
}

#[test]
fn a_run_over_the_memory_budget_stops_with_a_full_report_and_says_why() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/memory/overloaded-unbounded-queue.ron"
    );
    let o = resim_in(&scratch(), &["run", file, "--max-memory", "64MiB"]);
    // Exit codes as for any other stop: here the expectation failed.
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stdout
            .lines()
            .next()
            .unwrap()
            .ends_with("stopped: memory_limit"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("FAIL users success ratio"));
    assert!(
        o.stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("replay: resim run")
    );
    assert!(
        o.stderr.starts_with(&format!(
            "{file}: stopped: memory_limit: requests in flight ("
        )),
        "{}",
        o.stderr
    );
    let o = resim_in(
        &scratch(),
        &["run", file, "--max-memory", "64MiB", "--json"],
    );
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["stop_reason"], "memory_limit");
    assert!(
        v["stop_detail"]
            .as_str()
            .unwrap()
            .contains("bound the queue (services.api.queue.capacity)")
    );
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_resim"))
            .args(args)
            .current_dir(scratch())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("resim runs")
    };
    // A report far longer than a pipe holds, never read: writing it must fail, whenever
    // the reader goes.
    let mut child = spawn(&[
        "run",
        "metastable-retry",
        "--format",
        "csv",
        "--bucket",
        "10ms",
    ]);
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");

    // `head -1` on a sweep: the first line is read, the other seeds are not wanted.
    let file = write("small-sweep.ron", SMALL);
    let mut child = spawn(&["sweep", &file, "--seeds", "1..300", "--duration", "3s"]);
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("seed 1 "), "{first}");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn messages_held_by_a_clog_stop_the_run_at_the_memory_budget() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/memory/clogged-link.ron");
    let o = resim_in(
        &scratch(),
        &["run", file, "--max-memory", "16MiB", "--json"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["stop_reason"], "memory_limit");
    let detail = v["stop_detail"].as_str().unwrap();
    assert!(
        detail.contains(" messages held by clogs and paused nodes) hold about ")
            && detail.contains("end the clog or pause sooner"),
        "{detail}"
    );
    assert_eq!(v["summary"]["successes"], 0);
    assert!(
        v["summary"]["failures_by_reason"]["timeout"]
            .as_u64()
            .unwrap()
            > 1000
    );
}
