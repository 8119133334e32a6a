//! `resim sweep` and `resim merge` as a user runs them: the same output whatever `-j` is, the
//! partitions of a sweep merged give the sweep, statistics per grid point.

mod support;

use scenarios::experiment::{RunRecord, summarise};
use support::{Resim, resim_in, workspace_root};

fn scratch(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("resim-sweep-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).display().to_string()
}

/// A sweep of the replay scenario over 8 seeds and two grid points (16 short runs), with extra
/// arguments; returns stdout and the JSON lines written.
fn sweep_replay(extra: &[&str], out: &str) -> (i32, String, String) {
    let out = scratch(out);
    let mut args = vec![
        "sweep",
        "book/src/scenarios/replay.ron",
        "--seeds",
        "12..19",
        "--grid",
        "services.api.workers=1,2",
        "--out",
        &out,
    ];
    args.extend_from_slice(extra);
    let Resim {
        code,
        stdout,
        stderr,
    } = resim_in(&workspace_root(), &args);
    assert!(code == 0 || code == 1, "{stderr}");
    assert_eq!(stderr, "", "no progress bar when stderr is not a terminal");
    (code, stdout, std::fs::read_to_string(&out).unwrap())
}

fn records(jsonl: &str) -> Vec<RunRecord> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_output_is_the_same_whatever_the_number_of_threads() {
    let (code_1, out_1, jsonl_1) = sweep_replay(&["-j", "1"], "j1.jsonl");
    let (code_2, out_2, jsonl_2) = sweep_replay(&["-j", "2"], "j2.jsonl");
    assert_eq!(out_1, out_2);
    assert_eq!(jsonl_1, jsonl_2);
    assert_eq!(code_1, code_2);
    assert_eq!(jsonl_1.lines().count(), 16);
    // Seed 19 fails at 1 worker (the book's replay chapter); 2 workers pass every seed.
    assert_eq!(code_1, 1);
    assert!(out_1.ends_with(
        "15 of 16 runs pass; failing: 19 at services.api.workers=1; replay: resim run book/src/scenarios/replay.ron --seed 19 --set 'services.api.workers=1'\n"
    ), "{out_1}");
}

#[test]
fn partitions_merged_are_the_unsplit_sweep() {
    let (_, whole, whole_jsonl) = sweep_replay(&[], "whole.jsonl");
    let (_, _, part_1) = sweep_replay(&["--partition", "1/2"], "part1.jsonl");
    let (_, _, part_2) = sweep_replay(&["--partition", "2/2"], "part2.jsonl");
    assert_eq!(part_1.lines().count(), 8);
    assert_eq!(part_2.lines().count(), 8);
    let mut joined: Vec<&str> = part_1.lines().chain(part_2.lines()).collect();
    joined.sort_by_key(|l| serde_json::from_str::<RunRecord>(l).unwrap().index);
    assert_eq!(joined.join("\n") + "\n", whole_jsonl);
    let Resim {
        code,
        stdout: merged,
        stderr: err,
    } = resim_in(
        &workspace_root(),
        &["merge", &scratch("part2.jsonl"), &scratch("part1.jsonl")],
    );
    assert_eq!((code, err.as_str()), (1, ""));
    assert_eq!(merged, whole);
}

#[test]
fn merge_refuses_what_is_not_one_whole_sweep() {
    sweep_replay(&["--partition", "1/2"], "m1.jsonl");
    let Resim {
        code, stderr: err, ..
    } = resim_in(&workspace_root(), &["merge", &scratch("m1.jsonl")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("8 of 16 runs; 8 missing (give every partition of the sweep)"),
        "{err}"
    );
    let Resim {
        code, stderr: err, ..
    } = resim_in(
        &workspace_root(),
        &["merge", &scratch("m1.jsonl"), &scratch("m1.jsonl")],
    );
    assert_eq!(code, 2);
    assert!(err.contains("is there twice"), "{err}");
    std::fs::write(scratch("bad.jsonl"), "{\"index\": 0}\n").unwrap();
    let Resim {
        code, stderr: err, ..
    } = resim_in(&workspace_root(), &["merge", &scratch("bad.jsonl")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("bad.jsonl:1: not a line of `resim sweep --out`"),
        "{err}"
    );
}

#[test]
fn each_grid_point_has_its_statistics() {
    let (_, out, jsonl) = sweep_replay(&[], "stats.jsonl");
    let records = records(&jsonl);
    let points = summarise(&records);
    assert_eq!(points.len(), 2);
    let (one, two) = (&points[0], &points[1]);
    assert_eq!(
        (one.point.as_str(), one.runs, one.passed),
        ("services.api.workers=1", 8, 7)
    );
    assert_eq!((two.runs, two.passed), (8, 8));
    // Twice the workers: a much lower p99, beyond the spread of either.
    assert!(two.p99_ms.mean + two.p99_ms.sd() < one.p99_ms.mean - one.p99_ms.sd());
    let mean: f64 = records[..8].iter().map(|r| r.goodput_per_s).sum::<f64>() / 8.0;
    assert!((one.goodput_per_s.mean - mean).abs() < 1e-9);
    assert!(
        out.contains("  services.api.workers=1      8  87.5% [52.9, 97.8]"),
        "{out}"
    );
}

#[test]
fn bad_arguments_are_errors_before_any_run() {
    let Resim {
        code, stderr: err, ..
    } = resim_in(
        &workspace_root(),
        &[
            "sweep",
            "retry-storm",
            "--seeds",
            "1..3",
            "--grid",
            "services.api.workers=8,x",
        ],
    );
    assert_eq!(code, 2);
    // The flag as given: the grid's value, not a `--set`.
    assert_eq!(
        err,
        "retry-storm: --grid services.api.workers=x: expected integer\n"
    );
    let Resim {
        code, stderr: err, ..
    } = resim_in(
        &workspace_root(),
        &[
            "sweep",
            "retry-storm",
            "--seeds",
            "1..3",
            "--partition",
            "3/2",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("write a partition as K/N with 1 ≤ K ≤ N"),
        "{err}"
    );
}
