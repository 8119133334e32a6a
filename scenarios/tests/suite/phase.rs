//! `resim phase`: the phase map of metastable-retry over spike size × retry attempts, the one
//! the book shows. Its table and SVG are snapshotted, the SVG renders (resvg) with the three
//! colours where the cells are, the map is the same on one thread and on two, and the book's
//! copy of the SVG is what the map draws (`UPDATE_BOOK=1` rewrites it).
//!
//! A map split with `--partition` and joined with `resim merge` is the map of one machine,
//! byte for byte (table, JSON and SVG), and parts that are missing, doubled or of another map
//! are refused. The axis `load` scales every client's rates: its map is the map of the rates
//! it stands for, run for run.
//!
//! Cost: 6 × 4 cells × 3 seeds of a 30s run, twice (one and two threads): about 10 seconds of
//! CPU in the test profile; the split and load maps, a few seconds more.

use crate::support;

use scenarios::cli::library;
use scenarios::experiment::phase::{
    Phase, parse_axis, phase_map, render_json, render_svg, render_text,
};
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::{Override, Overrides};
use support::{Resim, resim, resim_in, workspace_root};

/// The book's map, on `jobs` threads.
fn book_map(jobs: usize) -> scenarios::experiment::phase::PhaseMap {
    let command = Phase {
        file: "metastable-retry".to_string(),
        x: parse_axis("clients.users.call.stack[0].max_attempts=1..4:1").unwrap(),
        y: parse_axis(
            "clients.users.load.rate.peak=\"1200/s\",\"1400/s\",\"1600/s\",\"1800/s\",\"2000/s\",\"2500/s\"",
        )
        .unwrap(),
        seeds: (1, 3),
        overrides: Overrides {
            variant: None,
            sets: vec!["duration=\"30s\"".parse::<Override>().unwrap()],
        },
        jobs: Some(jobs),
        partition: None,
        out: None,
        control: Default::default(),
    };
    phase_map(&command, &library::open, &RunLimits::default()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_metastable_region_of_metastable_retry_is_mapped() {
    let map = book_map(2);
    assert_eq!(map, book_map(1), "the same map whatever -j is");
    let text = render_text(&map);
    let svg = render_svg(&map).unwrap();
    let cell = |x: &str, y: &str| {
        map.cells
            .iter()
            .find(|c| c.x == x && c.y == y)
            .unwrap_or_else(|| panic!("{x} {y}"))
    };
    // Without retries every spike is survived; with them, spikes to 1800/s and more are not.
    for y in ["1200/s", "1400/s", "1600/s", "1800/s", "2000/s", "2500/s"] {
        assert_eq!(cell("1", y).stable, 3, "{y}");
    }
    for x in ["2", "3", "4"] {
        assert_eq!(cell(x, "1400/s").stable, 3, "{x}");
        assert_eq!(cell(x, "2000/s").metastable, 3, "{x}");
    }
    assert!(map.cells.iter().all(|c| c.collapsed == 0));
    assert!(render_json(&map).contains("\"metastable\":3"));
    insta::with_settings!({ description => "resim phase metastable-retry --x clients.users.call.stack[0].max_attempts=1..4:1 --y clients.users.load.rate.peak=1200/s..2500/s --seeds 1..3 --set duration=\"30s\"" }, {
        insta::assert_snapshot!("metastable_retry_table", text);
        insta::assert_snapshot!("metastable_retry_svg", svg);
    });

    // resvg reads it, and the cells are drawn in the classes' colours.
    let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
        .unwrap_or_else(|e| panic!("not valid SVG: {e}"));
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let (mut green, mut red) = (0, 0);
    for p in pixmap.pixels() {
        let (r, g, b) = (
            i32::from(p.red()),
            i32::from(p.green()),
            i32::from(p.blue()),
        );
        if g > r + 60 && g > b + 30 {
            green += 1;
        } else if r > g + 60 && r > b + 60 {
            red += 1;
        }
    }
    // 15 stable cells and 9 metastable ones (and three split), each about 195 × 44 pixels.
    assert!(green > 100_000 && red > 60_000, "green {green}, red {red}");

    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../book/src/charts/phase-metastable-retry.svg"
    );
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if committed != svg {
        assert!(
            std::env::var_os("UPDATE_BOOK").is_some(),
            "{path} is not what the map draws: rerun with UPDATE_BOOK=1"
        );
        std::fs::write(path, &svg).unwrap();
    }
}

#[test]
fn a_map_without_a_trigger_or_with_one_axis_twice_is_refused_before_running() {
    let dir = std::env::temp_dir().join(format!("resim-phase-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("calm.ron");
    std::fs::write(
        &file,
        r#"Scenario(
    name: "calm",
    duration: "10s",
    clients: { "users": (load: Open(rate: Constant("100/s")), call: (target: "api")) },
    services: { "api": (workers: 2, work: Constant(value: "1ms")) },
)"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&[
        "phase",
        path,
        "--x",
        "services.api.workers=1,2",
        "--y",
        "services.api.replicas=1,2",
    ]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "{path}: at services.api.replicas=1 services.api.workers=1: no metastability verdict: the scenario has no trigger that ends (a fault with a `duration`, a cache flush, a `Spike` schedule or `Steps` that go back down)"
        )
    );
    let Resim {
        code, stderr: err, ..
    } = resim(&[
        "phase",
        "metastable-retry",
        "--x",
        "services.api.workers=8,16",
        "--y",
        "services.api.workers=8,16",
    ]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim_end(),
        "--x and --y both set services.api.workers; give the two axes different paths"
    );
    let Resim {
        code, stderr: err, ..
    } = resim(&["phase", "metastable-retry", "--x", "a=3..1:1", "--y", "b=1"]);
    assert_eq!(code, 2);
    assert!(err.contains("a range goes up by a positive step"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn scratch(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("resim-phase-parts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).display().to_string()
}

/// `resim ARGS` from the workspace root; exit code 0 and nothing on stderr.
fn ok(args: &[&str]) -> String {
    let r = resim_in(&workspace_root(), args);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (0, ""),
        "{args:?}: {}",
        r.stdout
    );
    r.stdout
}

/// A small map of metastable-retry (2 × 2 cells, 2 seeds), with `extra` arguments.
fn small_map(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "phase",
        "metastable-retry",
        "--x",
        "clients.users.call.stack[0].max_attempts=1..2:1",
        "--y",
        "clients.users.load.rate.peak=1400/s,2000/s",
        "--seeds",
        "1..2",
        "--set",
        "duration=25s",
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn a_split_map_merges_into_the_map_of_one_machine() {
    let (svg_whole, svg_merged) = (scratch("whole.svg"), scratch("merged.svg"));
    let whole = ok(&strs(&small_map(&["--svg", &svg_whole])));
    let json = ok(&strs(&small_map(&["--format", "json"])));
    let (one, two) = (scratch("part-1.jsonl"), scratch("part-2.jsonl"));
    let said = ok(&strs(&small_map(&["--partition", "1/2", "--out", &one])));
    assert_eq!(
        said,
        format!(
            "phase map of metastable-retry: part 1/2, 4 of 8 runs, written to {one}; `resim merge` of every part prints the map\n"
        )
    );
    ok(&strs(&small_map(&[
        "--partition",
        "2/2",
        "--out",
        &two,
        "-j",
        "1",
    ])));
    // In any order, as the table, as JSON, and drawn.
    assert_eq!(ok(&["merge", &two, &one, "--svg", &svg_merged]), whole);
    assert_eq!(ok(&["merge", &one, &two, "--format", "json"]), json);
    assert_eq!(
        std::fs::read_to_string(&svg_merged).unwrap(),
        std::fs::read_to_string(&svg_whole).unwrap()
    );
    // `--out` of the whole map is one part: merged alone, it is the map.
    let all = scratch("all.jsonl");
    assert_eq!(ok(&strs(&small_map(&["--out", &all]))), whole);
    assert_eq!(ok(&["merge", &all]), whole);
}

#[test]
fn merge_refuses_parts_missing_doubled_or_of_another_map() {
    let (one, two) = (scratch("m-1.jsonl"), scratch("m-2.jsonl"));
    ok(&strs(&small_map(&["--partition", "1/2", "--out", &one])));
    let other = scratch("other-2.jsonl");
    let mut args = small_map(&["--partition", "2/2", "--out", &other]);
    args[7] = "1..3".to_string();
    ok(&strs(&args));
    let refused = |files: &[&str], message: &str| {
        let mut args = vec!["merge"];
        args.extend_from_slice(files);
        let r = resim_in(&workspace_root(), &args);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (2, ""),
            "{files:?}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(message), "{files:?}: {}", r.stderr);
    };
    refused(&[&one], "part 2/2 missing: give every part");
    refused(
        &[&one, &one],
        "both are part 1/2 (the same part given twice?)",
    );
    refused(&[&one, &other], "a part of another phase");
    std::fs::write(&two, "{\"kind\":\"phase\"}\n").unwrap();
    refused(
        &[&one, &two],
        "not the first line of a `resim phase --partition` part",
    );
    // A share with nowhere to go is refused before it runs.
    let r = resim_in(
        &workspace_root(),
        &strs(&small_map(&["--partition", "1/2"])),
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("give --out FILE.jsonl"), "{}", r.stderr);
}

/// retry-storm (one client at a constant 800/s) over `--x`, with every run's digest from
/// `--out`: the map's table and the digests.
fn storm_map(x: &str, name: &str) -> (String, Vec<String>) {
    let out = scratch(name);
    let text = ok(&[
        "phase",
        "retry-storm",
        "--x",
        x,
        "--y",
        "clients.users.call.stack[0].max_attempts=1,3",
        "--seeds",
        "1..2",
        "--set",
        "duration=30s",
        "--out",
        &out,
    ]);
    let digests = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["digest"].to_string())
        .collect();
    (text, digests)
}

#[test]
fn a_load_axis_is_the_map_of_the_rates_it_stands_for() {
    let (by_load, load_runs) = storm_map("load=0.5,1,1.25", "load.jsonl");
    let (by_rate, rate_runs) = storm_map(
        "clients.users.load.rate=Constant(\"400/s\"),Constant(\"800/s\"),Constant(\"1000/s\")",
        "rate.jsonl",
    );
    assert_eq!(load_runs.len(), 12);
    assert_eq!(load_runs, rate_runs, "the same runs, seed for seed");
    assert!(
        by_load.contains("columns: x = load (a multiplier of every client's rates)\n"),
        "{by_load}"
    );
    let cells = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains(" │ ") && !l.starts_with("y\\x"))
            .map(|l| l.split_whitespace().skip(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(cells(&by_load), cells(&by_rate), "{by_load}{by_rate}");
    assert!(by_load.contains("S2    M2    M2"), "{by_load}");
}

#[test]
fn a_load_multiplier_that_is_not_a_positive_number_is_refused() {
    for (x, value) in [
        ("load=0,1", "0"),
        ("load=-1..1:1", "-1"),
        ("load=abc", "abc"),
    ] {
        let r = resim_in(
            &workspace_root(),
            &[
                "phase",
                "retry-storm",
                "--x",
                x,
                "--y",
                "services.db.workers=16",
            ],
        );
        assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{x}");
        assert_eq!(
            r.stderr.trim_end(),
            format!(
                "retry-storm: --x {x}: load={value}: a load multiplier must be a positive number, e.g. load=0.5..3:0.25"
            )
        );
    }
    // A population of users has no rate to scale.
    let r = resim_in(
        &workspace_root(),
        &[
            "phase",
            "retry-after-429",
            "--x",
            "load=1,2",
            "--y",
            "services.api.workers=1,3",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("--x load=1: load scales open-loop rates"),
        "{}",
        r.stderr
    );
}
