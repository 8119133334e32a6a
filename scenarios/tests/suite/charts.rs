//! Charts: what `resim run --svg` and `--html` write. The SVG of two library scenarios is
//! snapshotted; every chart of every library scenario is rendered by a real SVG renderer
//! (resvg) and must show something besides its background; the same run gives the same
//! bytes; the HTML page needs nothing from the network.

use crate::support;

use scenarios::cli::library::{LIBRARY, find};
use scenarios::format::load::parse;
use scenarios::report::render::{self, Chart};
use scenarios::{RunOptions, run};
use support::run_library;

/// Rendered by resvg (without fonts: text is not drawn, lines and areas are): the share of
/// pixels that differ from the white background, and whether anything at all was drawn
/// beside white and the grid's light grey.
fn render(chart: &Chart) -> (f64, bool) {
    let options = resvg::usvg::Options::default();
    let tree = resvg::usvg::Tree::from_str(&chart.svg, &options)
        .unwrap_or_else(|e| panic!("{}: not valid SVG: {e}", chart.name));
    let size = tree.size().to_int_size();
    assert!(
        size.width() >= 600 && size.height() >= 200,
        "{}: {size:?}",
        chart.name
    );
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let pixels = pixmap.pixels();
    let inked = pixels
        .iter()
        .filter(|p| (p.red(), p.green(), p.blue()) != (255, 255, 255))
        .count();
    // A saturated pixel: a line, a band or a shaded window, not the grey of the grid.
    let coloured = pixels.iter().any(|p| {
        let (r, g, b) = (p.red() as i32, p.green() as i32, p.blue() as i32);
        (r - g).abs().max((g - b).abs()).max((r - b).abs()) > 40
    });
    (inked as f64 / pixels.len() as f64, coloured)
}

#[test]
fn every_chart_of_every_library_scenario_renders_with_something_drawn() {
    for entry in LIBRARY {
        let r = run_library(entry.name);
        let charts = render::charts(&r).unwrap();
        let names: Vec<&str> = charts.iter().map(|c| c.name.as_str()).collect();
        for must in ["traffic", "latency", "calls"] {
            assert!(names.contains(&must), "{}: {names:?}", entry.name);
        }
        for s in &r.services {
            let name = format!("service-{}", s.name);
            assert!(names.contains(&name.as_str()), "{}: {names:?}", entry.name);
        }
        assert_eq!(
            names.contains(&"expectations"),
            !r.expectations.is_empty(),
            "{}",
            entry.name
        );
        assert_eq!(
            names.contains(&"breakers"),
            r.calls.iter().any(|c| !c.breakers.is_empty()),
            "{}",
            entry.name
        );
        for c in &charts {
            let (inked, coloured) = render(c);
            // A chart of nothing (no call site retried or timed out) has axes and says so.
            let says_nothing = c.svg.contains("no retries, budget refusals or timeouts");
            assert!(
                inked > 0.01 && (coloured || says_nothing),
                "{} {}: {:.1}% of pixels drawn, coloured: {coloured}",
                entry.name,
                c.name,
                100.0 * inked
            );
        }
    }
}

#[test]
fn the_same_run_draws_the_same_bytes() {
    let a = render::charts(&run_library("cascading-failure-mitigated")).unwrap();
    let b = render::charts(&run_library("cascading-failure-mitigated")).unwrap();
    assert_eq!(a, b);
}

/// Snapshots every chart of library scenario `name`.
fn snapshot(name: &str) {
    let r = run_library(name);
    for c in render::charts(&r).unwrap() {
        insta::with_settings!({
            description => format!("scenario {name}, seed {}, chart {}", r.seed, c.name),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("{name}__{}", c.name), c.svg);
        });
    }
}

#[test]
fn the_charts_of_a_thundering_herd() {
    snapshot("thundering-herd");
}

#[test]
fn the_charts_of_a_mitigated_cascade() {
    snapshot("cascading-failure-mitigated");
}

#[test]
fn the_charts_show_what_the_report_says() {
    let r = run_library("cascading-failure-mitigated");
    let charts = render::charts(&r).unwrap();
    let svg = |name: &str| {
        &charts
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no chart {name}"))
            .svg
    };
    // Axes say what they measure, in which unit; the fault is named where it is shaded.
    assert!(svg("traffic").contains("time (s, simulated)"));
    assert!(svg("traffic").contains("requests per second"));
    assert!(svg("latency").contains("latency (ms"));
    for c in &charts {
        assert!(c.svg.contains("slowdown db ×100"), "{}", c.name);
    }
    // One row per breaker: three replicas of api each hold one on their call to db.
    for replica in 0..3 {
        assert!(svg("breakers").contains(&format!("api → db r{replica}")));
    }
    // Both expectations held: their bounds are drawn in the colour of a pass.
    assert_eq!(r.expectations.len(), 2);
    let expectations = svg("expectations");
    assert_eq!(expectations.matches("PASS").count(), 2);
    assert!(!expectations.contains("FAIL"));
    assert!(expectations.contains("#008C46"), "the pass colour");
}

#[test]
fn a_failed_expectation_is_drawn_red() {
    let entry = find("metastable-retry").unwrap();
    // The spike's storm never ends: a bound that wants recovery fails.
    let text = entry.text.replacen(
        "expectations: [",
        "expectations: [RecoveredWithin(client: \"users\", after: \"15s\", within: \"10s\", min_ratio: 0.9), ",
        1,
    );
    let scenario = parse("m.ron", &text).unwrap();
    let r = run(&scenario, "m.ron", &RunOptions::default())
        .unwrap()
        .report;
    assert!(!r.passed());
    let charts = render::charts(&r).unwrap();
    let e = &charts
        .iter()
        .find(|c| c.name == "expectations")
        .unwrap()
        .svg;
    assert!(e.contains("FAIL users back to 90.0% success"), "{e}");
    assert!(e.contains("#C81E1E"), "the fail colour");
}

#[test]
fn the_html_page_is_self_contained() {
    let r = run_library("metastable-retry");
    let charts = render::charts(&r).unwrap();
    let page = render::html(&r, &charts);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("<svg").count(), charts.len());
    for outside in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!page.contains(outside), "{outside}");
    }
    // The report's tables and its text are there.
    assert!(page.contains("<h2>Services</h2>"));
    assert!(page.contains("users stays down after the trigger ends"));
    assert!(page.contains("<h2>Metastability</h2>"));
    assert!(page.contains(&r.replay_command()));
    // It points at what the explorer adds, with the command for the same run.
    assert!(page.contains("<code>resim explore metastable-retry --seed 7 -o explore.html</code>"));
}

/// The numbers of a chart's y-axis tick labels (the right-aligned texts left of the plot).
fn y_ticks(svg: &str) -> Vec<f64> {
    svg.split("<text")
        .filter(|t| t.contains("text-anchor=\"end\""))
        .filter_map(|t| t.split('>').nth(1)?.split('<').next()?.trim().parse().ok())
        .collect()
}

#[test]
fn a_log_latency_axis_starts_well_below_every_line() {
    // A p50 just above 10ms and a tail of 1s: a log axis whose lowest decade was the
    // floor of the smallest value started at 10ms and drew the p50 along the axis.
    let text = r#"Scenario(
        name: "axis",
        duration: "10s",
        clients: { "c": (load: Open(rate: Constant("500/s")), call: (target: "api")) },
        services: { "api": (workers: 1000, work: Mixture(components: [
            (weight: 97, dist: Uniform(low: "10.5ms", high: "11ms")),
            (weight: 3, dist: Constant(value: "1s")),
        ])) },
    )"#;
    let scenario = parse("axis.ron", text).unwrap();
    let r = run(&scenario, "axis.ron", &RunOptions::default())
        .unwrap()
        .report;
    let p50_min = r
        .series
        .iter()
        .filter_map(|b| b.latency_ms_p50)
        .fold(f64::MAX, f64::min);
    assert!((10.5..11.2).contains(&p50_min), "{p50_min}");
    let charts = render::charts(&r).unwrap();
    let latency = &charts.iter().find(|c| c.name == "latency").unwrap().svg;
    assert!(latency.contains("log scale"));
    let lowest = y_ticks(latency).into_iter().fold(f64::MAX, f64::min);
    assert!(
        lowest <= p50_min / 2.0,
        "the axis starts at {lowest}ms, the p50 is {p50_min}ms"
    );
}

#[test]
fn the_service_chart_names_summed_and_per_replica_queues() {
    let r = run_library("cascading-failure");
    let charts = render::charts(&r).unwrap();
    let api = &charts.iter().find(|c| c.name == "service-api").unwrap().svg;
    // api has three replicas: the summed queue and the longest queue of one of them (db has one).
    assert!(api.contains("all replicas (mean)"), "{api}");
    assert!(api.contains("all replicas (max)"));
    assert!(api.contains("one replica (max)"));
    let db = &charts.iter().find(|c| c.name == "service-db").unwrap().svg;
    assert!(!db.contains("one replica (max)"), "db has one replica");
}
