//! The charts of every library scenario, as `resim run NAME --svg OUTDIR/NAME` writes them,
//! into `OUTDIR/NAME/*.svg` (and with `--png`, a PNG of each, rendered with resvg and the
//! system's fonts, to look at).
//!
//! `cargo run --release -p scenarios --example charts -- OUTDIR [--png]`
//!
//! Each scenario runs at its own seed and settings, like `resim run NAME`, so the files are
//! what a reader gets from that command.

use scenarios::library::LIBRARY;
use scenarios::load::parse;
use scenarios::report::render;
use scenarios::{RunOptions, run};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let png = args.iter().any(|a| a == "--png");
    let Some(out) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: charts OUTDIR [--png]");
        std::process::exit(2);
    };
    let mut options = resvg::usvg::Options::default();
    if png {
        // The charts ask for the generic `sans-serif`, which fontdb maps to Arial unless told
        // otherwise; DejaVu Sans is the sans font most Linux systems have.
        let fonts = options.fontdb_mut();
        fonts.load_system_fonts();
        fonts.set_sans_serif_family("DejaVu Sans");
    }
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
                let tree = resvg::usvg::Tree::from_str(&c.svg, &options).expect("the SVG parses");
                let size = tree.size().to_int_size();
                let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
                    .expect("a chart has a size");
                resvg::render(
                    &tree,
                    resvg::tiny_skia::Transform::default(),
                    &mut pixmap.as_mut(),
                );
                pixmap
                    .save_png(path.with_extension("png"))
                    .expect("the PNG can be written");
            }
        }
        println!("{}: {} charts", dir.display(), charts.len());
    }
}
