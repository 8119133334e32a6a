//! Reading a scenario: a file or text → RON → [`Scenario`] → validated, or a
//! [`ScenarioError`]. Each of the file's `variants` is checked too. The entry points of the
//! format: they read the bytes and hand them to [`Source`] (a file read once, with its
//! overrides), which stands on [`read`](crate::format::read).

use crate::format::error::ScenarioError;
use crate::format::limits::{FILE_BYTES_MAX, RunLimits};
use crate::format::overrides::{Overrides, Source, parse_overridden};
use crate::format::read::line_column;
use crate::format::schema::Scenario;
use std::io::Read as _;

/// Parses and validates scenario text against the default [`RunLimits`]; `file` names it in
/// errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    parse_with(file, text, &RunLimits::default())
}

/// Parses scenario text and validates it against `limits`, which the scenario keeps
/// ([`Scenario::limits`]) for the validation of a run's overrides. Each of the file's
/// `variants` is applied, parsed and validated too (as `resim check` and `resim run` do), and
/// named in [`Scenario::variants`]; the scenario returned is the file as written (see
/// [`crate::format::overrides`] for the variants).
pub fn parse_with(file: &str, text: &str, limits: &RunLimits) -> Result<Scenario, ScenarioError> {
    parse_overridden(file, text, limits, &Overrides::default())
}

/// Parses and validates the bytes of a scenario file (and each of its variants): text that is
/// not UTF-8 is an error with the line and column of the first byte that is not.
pub fn parse_bytes(
    file: &str,
    bytes: &[u8],
    limits: &RunLimits,
) -> Result<Scenario, ScenarioError> {
    parse_overridden(file, utf8(file, bytes)?, limits, &Overrides::default())
}

/// The bytes as text, or an error at the first byte that is not UTF-8.
fn utf8<'a>(file: &str, bytes: &'a [u8]) -> Result<&'a str, ScenarioError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let good = &bytes[..e.valid_up_to()];
        let good = std::str::from_utf8(good).unwrap_or_default();
        let (line, column) = line_column(good, good.len());
        ScenarioError::Syntax {
            file: file.to_string(),
            line,
            column,
            message: format!(
                "the file is not UTF-8 text (byte 0x{:02x} here); save it as UTF-8",
                bytes[e.valid_up_to()]
            ),
        }
    })
}

/// Reads, parses and validates the scenario file at `path` (and each of its variants) against
/// the default [`RunLimits`].
pub fn load(path: &str) -> Result<Scenario, ScenarioError> {
    load_with(path, &RunLimits::default())
}

/// Reads, parses and validates the scenario file at `path` (and each of its variants) against
/// `limits`.
pub fn load_with(path: &str, limits: &RunLimits) -> Result<Scenario, ScenarioError> {
    load_bytes(path, limits, &Overrides::default())
}

/// Reads the scenario file at `path`, checks it and each of its variants, applies
/// `overrides`, and validates the result against `limits`.
pub fn load_bytes(
    path: &str,
    limits: &RunLimits,
    overrides: &Overrides,
) -> Result<Scenario, ScenarioError> {
    let source = read_source(path)?;
    let checked = source.check(limits)?;
    source.apply(&checked, limits, overrides)
}

/// Reads the scenario file at `path` (the only file reading in resim) and lexes it.
pub fn read_source(path: &str) -> Result<Source, ScenarioError> {
    let read = |reason: String| ScenarioError::Read {
        file: path.to_string(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| read(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| read(e.to_string()))?;
    if bytes.len() as u64 > FILE_BYTES_MAX {
        return Err(read(format!(
            "the file is larger than {} MiB, the most a scenario file may be",
            FILE_BYTES_MAX >> 20
        )));
    }
    Source::read(path, utf8(path, &bytes)?)
}
