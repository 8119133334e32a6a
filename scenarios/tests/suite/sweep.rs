//! `resim sweep` and `resim merge` as a user runs them: the same output whatever `-j` is, the
//! partitions of a sweep merged give the sweep, statistics per grid point.

use crate::support;

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

/// The book's batch recipes (`book/src/batch/`), each run the way its scheduler runs it: the
/// command line its file holds, through `sh`, once per array task with the variables the
/// scheduler sets, from a directory holding the scenario and a `results/` folder. Each
/// recipe's parts merge into exactly the output of the sweep that was not split. The recipes
/// run on the first 1,000 of their 10,000 seeds (the partitions are cut the same way, and
/// four sweeps of 10,000 seeds took 26 s of CPU in a debug build); the chapter's
/// summary line is checked on all 10,000.
#[test]
fn the_batch_recipes_split_a_sweep_that_merges_to_the_unsplit_one() {
    let dir = std::env::temp_dir().join(format!("resim-batch-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let book = workspace_root().join("book/src");
    std::fs::copy(
        book.join("scenarios/batch-sweep.ron"),
        dir.join("batch-sweep.ron"),
    )
    .unwrap();
    let whole = resim_in(&dir, &["sweep", "batch-sweep.ron", "--seeds", "1..10000"]);
    assert_eq!((whole.code, whole.stderr.as_str()), (1, ""));
    // The experiments chapter quotes the summary line of this sweep.
    let summary = whole
        .stdout
        .lines()
        .find(|l| l.starts_with("  all seeds  10000"))
        .expect("the sweep prints its summary");
    let chapter = std::fs::read_to_string(book.join("experiments.md")).unwrap();
    assert!(
        chapter.contains(summary),
        "experiments.md shows:\n{summary}"
    );
    let recipe = |name: &str| {
        let text = std::fs::read_to_string(book.join("batch").join(name)).unwrap();
        assert!(
            text.contains("--seeds 1..10000"),
            "{name} sweeps 10,000 seeds"
        );
        text.replace("--seeds 1..10000", "--seeds 1..1000")
    };
    let whole = resim_in(&dir, &["sweep", "batch-sweep.ron", "--seeds", "1..1000"]);
    assert_eq!((whole.code, whole.stderr.as_str()), (1, ""));

    // Kubernetes: the container's `sh -c` argument, once per completion index.
    let job = recipe("indexed-job.yaml");
    let completions = yaml_number(&job, "completions:");
    let args = job
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("- resim "))
        .map(|rest| format!("resim {rest}"))
        .expect("the Job's args hold the resim command line");
    let tasks = (0..completions).map(|i| vec![("JOB_COMPLETION_INDEX", i.to_string())]);
    same(&run_tasks(&dir, &args, tasks), &whole.stdout, "Kubernetes");

    // Slurm: the script's command line, once per id of its `--array`, with the variables
    // sbatch sets for an array task.
    let script = recipe("sweep-array.sbatch");
    let array = script
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --array="))
        .expect("the script declares its array");
    let (min, max) = array.split_once('-').unwrap();
    let (min, max): (u64, u64) = (min.parse().unwrap(), max.parse().unwrap());
    let command = script
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let tasks = (min..=max).map(|id| {
        vec![
            ("SLURM_ARRAY_TASK_ID", id.to_string()),
            ("SLURM_ARRAY_TASK_MIN", min.to_string()),
            ("SLURM_ARRAY_TASK_MAX", max.to_string()),
            ("SLURM_ARRAY_TASK_STEP", "1".to_string()),
            ("SLURM_ARRAY_TASK_COUNT", (max - min + 1).to_string()),
            ("SLURM_CPUS_PER_TASK", "2".to_string()),
        ]
    });
    same(&run_tasks(&dir, &command, tasks), &whole.stdout, "Slurm");

    // GNU parallel: the recipe as it is where `parallel` is installed (CI installs it);
    // elsewhere each job of its one `parallel '…'` line, `{}` replaced as parallel would.
    let recipe = recipe("parallel.sh");
    let merged = if sh(&dir, "parallel --version", &[]).0 == 0 {
        clear_results(&dir);
        let (code, stdout, stderr) = sh(&dir, &recipe, &[]);
        assert_eq!((code, stderr.as_str()), (1, ""), "GNU parallel");
        stdout
    } else {
        let line = recipe
            .lines()
            .find(|l| l.starts_with("seq "))
            .expect("the recipe runs parallel over a seq");
        let jobs: u64 = line["seq ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let template = line
            .split('\'')
            .nth(1)
            .expect("parallel's command is quoted");
        let tasks = (1..=jobs).map(|k| vec![("PARALLEL_SEQ", k.to_string())]);
        let per_job = template.replace("{}", "$PARALLEL_SEQ");
        run_tasks(&dir, &per_job, tasks)
    };
    same(&merged, &whole.stdout, "GNU parallel");
}

/// Two outputs of 10,000 lines are the same; if not, the first line that differs.
fn same(merged: &str, whole: &str, recipe: &str) {
    let differs = merged.lines().zip(whole.lines()).position(|(a, b)| a != b);
    assert!(
        merged == whole,
        "{recipe}: the merged parts differ from the unsplit sweep at line {differs:?} (lines {} and {})",
        merged.lines().count(),
        whole.lines().count()
    );
}

/// The number after `key` on its line of a YAML file.
fn yaml_number(yaml: &str, key: &str) -> u64 {
    yaml.lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{key} in the manifest"))
}

/// `command` through `sh` from `dir`, with `resim` on the PATH and `vars` set: exit code,
/// stdout, stderr.
fn sh(dir: &std::path::Path, command: &str, vars: &[(&str, String)]) -> (i32, String, String) {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_resim"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PATH", path)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("sh runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn clear_results(dir: &std::path::Path) {
    let results = dir.join("results");
    let _ = std::fs::remove_dir_all(&results);
    std::fs::create_dir_all(&results).unwrap();
}

/// Runs `command` once per task (each with its variables) into a fresh `results/`, checks
/// that every task succeeded and made its share, and returns what `resim merge` prints.
fn run_tasks(
    dir: &std::path::Path,
    command: &str,
    tasks: impl Iterator<Item = Vec<(&'static str, String)>>,
) -> String {
    run_tasks_then_merge(dir, command, tasks, 1)
}

/// [`run_tasks`], with the exit code `resim merge` must give (1 for a sweep with failing
/// seeds, 0 for a phase map or a tune).
fn run_tasks_then_merge(
    dir: &std::path::Path,
    command: &str,
    tasks: impl Iterator<Item = Vec<(&'static str, String)>>,
    merge_code: i32,
) -> String {
    clear_results(dir);
    let mut parts = 0;
    for vars in tasks {
        let (code, _, stderr) = sh(dir, command, &vars);
        assert_eq!((code, stderr.as_str()), (0, ""), "{command} with {vars:?}");
        parts += 1;
    }
    let files = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".jsonl")
        })
        .count();
    assert_eq!(files, parts, "one part per task");
    let (code, stdout, stderr) = sh(dir, "resim merge results/part-*.jsonl", &[]);
    assert_eq!((code, stderr.as_str()), (merge_code, ""), "merge");
    stdout
}

/// The experiments chapter's phase and tune lines for an Indexed Job, run as Kubernetes runs
/// them (`JOB_COMPLETION_INDEX` from 0 to 9 with `auto/10`), on fewer seeds than the chapter
/// and in 25 s runs (10 s past the spike; the lines as written take minutes in a debug build;
/// the tune's levels at most 4 seeds each): every task writes its share, and the merge prints exactly what the
/// line prints without `--partition` and `--out`.
#[test]
fn the_batch_lines_of_phase_and_tune_merge_into_the_unsplit_answer() {
    let chapter =
        std::fs::read_to_string(workspace_root().join("book/src/experiments.md")).unwrap();
    let section = chapter
        .split("### Phase maps and tunes on a batch scheduler")
        .nth(1)
        .expect("the section is there");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section shows the lines");
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines.len(), 2, "a phase line and a tune line: {block}");
    let dir = std::env::temp_dir().join(format!("resim-batch-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let split = " --partition auto/10 --out results/part-$JOB_COMPLETION_INDEX.jsonl";
    let fewer = [
        " --seeds 1..1 --set duration=25s",
        " --seeds 1..2 --margin-seeds 2 --margin-seeds-max 4 --threshold 0.5 --confidence 0.8 --set duration=25s",
    ];
    for (line, seeds) in lines.iter().zip(fewer) {
        assert!(line.contains(split), "{line}");
        let command = format!("{line}{seeds}");
        let (code, whole, stderr) = sh(&dir, &command.replace(split, ""), &[]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{command}");
        let tasks = (0..10).map(|i| vec![("JOB_COMPLETION_INDEX", i.to_string())]);
        let merged = run_tasks_then_merge(&dir, &command, tasks, 0);
        same(&merged, &whole, line);
    }
}

/// `resim sweep retry-storm --seeds 1..4 --partition auto` with no scheduler's variables but
/// `vars`: its exit code and stderr.
fn partition_auto(vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_resim"));
    command
        .args([
            "sweep",
            "retry-storm",
            "--seeds",
            "1..4",
            "--partition",
            "auto",
        ])
        .current_dir(workspace_root());
    for name in [
        "SLURM_ARRAY_TASK_ID",
        "JOB_COMPLETION_INDEX",
        "AWS_BATCH_JOB_ARRAY_INDEX",
    ] {
        command.env_remove(name);
    }
    let out = command.envs(vars.iter().copied()).output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn partition_auto_without_an_array_task_says_what_it_looked_for() {
    let (code, err) = partition_auto(&[]);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("retry-storm: --partition auto: no array task in the environment"),
        "{err}"
    );
    let (code, err) = partition_auto(&[("JOB_COMPLETION_INDEX", "1")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("write auto/N"), "{err}");
}
