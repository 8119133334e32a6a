//! The README shows real output: what `cargo run --release` prints (the built-in example) and
//! what `resim list` prints. A change to the world, a report or the library that changes them
//! fails here until the README is brought up to date.

use scenarios::cli::library::{self, DEFAULT_EXAMPLE};
use scenarios::report::Format;
use scenarios::{RunOptions, run};

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    std::fs::read_to_string(path).expect("README.md is at the workspace root")
}

/// The fenced block between `<!-- {marker}:begin -->` and `<!-- {marker}:end -->`.
fn block(text: &str, marker: &str) -> String {
    let begin = format!("<!-- {marker}:begin -->");
    let end = format!("<!-- {marker}:end -->");
    let start = text
        .find(&begin)
        .unwrap_or_else(|| panic!("README has no {begin}"));
    let stop = text
        .find(&end)
        .unwrap_or_else(|| panic!("README has no {end}"));
    let inner = text[start + begin.len()..stop].trim();
    let inner = inner
        .strip_prefix("```text")
        .expect("the block is a ```text fence");
    let inner = inner.strip_suffix("```").expect("the block ends its fence");
    inner.trim_matches('\n').to_string()
}

fn check(marker: &str, actual: &str) {
    let shown = block(&readme(), marker);
    let actual = actual.trim_end_matches('\n');
    assert!(
        shown == actual,
        "README.md block `{marker}` has drifted; replace it with:\n{actual}"
    );
}

#[test]
fn readme_shows_what_the_first_command_prints() {
    // `cargo run --release` runs `resim` with no arguments: the built-in library example with
    // the default options, exactly as below.
    let entry = library::find(DEFAULT_EXAMPLE).expect("the built-in example is in the library");
    let scenario =
        scenarios::format::load::parse(entry.name, entry.text).expect("library scenarios parse");
    let output = run(&scenario, DEFAULT_EXAMPLE, &RunOptions::default()).expect("it runs");
    check("resim-output", &Format::Human.render(&output.report));
}

#[test]
fn readme_lists_the_library() {
    let listing: Vec<String> = library::LIBRARY
        .iter()
        .map(|entry| format!("{:<32} {}", entry.name, library::headline(entry)))
        .collect();
    check("resim-list", &listing.join("\n"));
}
