//! The charts of every library scenario, as `resim run NAME --svg OUTDIR/NAME` writes them,
//! into `OUTDIR/NAME/*.svg` (and with `--png`, a PNG of each, rendered with resvg and the
//! system's fonts, to look at).
//!
//! `cargo run --release -p scenarios --example charts -- OUTDIR [--png]`
//!
//! `cargo run --release -p scenarios --example charts -- --png-of FILE.svg…` only renders the
//! given SVG files (`resim compare --svg DIR` writes some) to PNGs beside them.
//!
//! Each scenario runs at its own seed and settings, like `resim run NAME`, so the files are
//! what a reader gets from that command.

use scenarios::cli::library::LIBRARY;
use scenarios::format::load::parse;
use scenarios::report::render;
use scenarios::{RunOptions, run};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--png-of") {
        let options = png_options();
        for file in &args[1..] {
            let svg = std::fs::read_to_string(file).expect("the SVG can be read");
            save_png(&svg, &options, &Path::new(file).with_extension("png"));
        }
        return;
    }
    let png = args.iter().any(|a| a == "--png");
    let Some(out) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: charts OUTDIR [--png]");
        std::process::exit(2);
    };
    let options = if png {
        png_options()
    } else {
        resvg::usvg::Options::default()
    };
    for entry in LIBRARY {
        let scenario = parse(entry.name, entry.text).expect("library scenarios parse");
        let report = run(&scenario, entry.name, &RunOptions::default())
            .expect("library scenarios run")
            .report;
        let charts = render::charts(&report).expect("charts draw");
        let dir = Path::new(out).join(entry.name);
        std::fs::create_dir_all(&dir).expect("the output directory can be created");
        for c in &charts {
            let path = dir.join(format!("{}.svg", c.name));
            std::fs::write(&path, &c.svg).expect("the chart can be written");
            if png {
                save_png(&c.svg, &options, &path.with_extension("png"));
            }
        }
        println!("{}: {} charts", dir.display(), charts.len());
    }
}

/// Options that find the system's fonts: the charts ask for the generic `sans-serif`, which
/// fontdb maps to Arial unless told otherwise; DejaVu Sans is the sans font most Linux
/// systems have.
fn png_options() -> resvg::usvg::Options<'static> {
    let mut options = resvg::usvg::Options::default();
    let fonts = options.fontdb_mut();
    fonts.load_system_fonts();
    fonts.set_sans_serif_family("DejaVu Sans");
    options
}

fn save_png(svg: &str, options: &resvg::usvg::Options<'_>, path: &Path) {
    let tree = resvg::usvg::Tree::from_str(svg, options).expect("the SVG parses");
    let size = tree.size().to_int_size();
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("a chart has a size");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap.save_png(path).expect("the PNG can be written");
}
