//! The scenario library: the files of `scenarios/library/`, embedded so that `resim list`
//! and `resim run NAME` work from any directory.

/// One library scenario: its name (the file stem) and its text.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The file stem, e.g. `retry-storm-no-jitter`.
    pub name: &'static str,
    /// The RON text.
    pub text: &'static str,
}

macro_rules! entries {
    ($($name:literal),* $(,)?) => {
        &[$(Entry { name: $name, text: include_str!(concat!("../library/", $name, ".ron")) }),*]
    };
}

/// Every library scenario, in `resim list` order.
pub const LIBRARY: &[Entry] = entries!["metastable-retry",];

/// The scenario `resim` runs when given no file.
pub const DEFAULT_EXAMPLE: &str = "metastable-retry";

/// The library scenario called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Entry> {
    LIBRARY.iter().find(|e| e.name == name)
}

/// The first sentence of the file's header comment: what the scenario shows.
pub fn headline(entry: &Entry) -> String {
    let comment: Vec<&str> = entry
        .text
        .lines()
        .take_while(|l| l.starts_with("//"))
        .map(|l| l.trim_start_matches('/').trim())
        .collect();
    let text = comment.join(" ");
    let end = text.find(". ").map_or(text.len(), |i| i + 1);
    text[..end].trim_end_matches('.').to_string()
}
