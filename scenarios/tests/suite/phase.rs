//! `resim phase`: the phase map of metastable-retry over spike size × retry attempts, the one
//! the book shows. Its table and SVG are snapshotted, the SVG renders (resvg) with the three
//! colours where the cells are, the map is the same on one thread and on two, and the book's
//! copy of the SVG is what the map draws (`UPDATE_BOOK=1` rewrites it).
//!
//! Cost: 6 × 4 cells × 3 seeds of a 30s run, twice (one and two threads): about 10 seconds of
//! CPU in the test profile.

use crate::support;

use scenarios::cli::library;
use scenarios::experiment::phase::{
    Phase, parse_axis, phase_map, render_json, render_svg, render_text,
};
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::{Override, Overrides};
use support::{Resim, resim};

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
