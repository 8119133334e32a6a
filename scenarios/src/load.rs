//! Reading a scenario: RON text → [`Scenario`] → validated, or a [`ScenarioError`].

use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::schema::Scenario;
use crate::validate::validate;

/// Parses and validates scenario text against the default [`Limits`]; `file` names it in
/// errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    parse_with(file, text, &Limits::default())
}

/// Parses scenario text and validates it against `limits`, which the scenario keeps
/// ([`Scenario::limits`]) for the validation of a run's overrides.
pub fn parse_with(file: &str, text: &str, limits: &Limits) -> Result<Scenario, ScenarioError> {
    let options =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let mut scenario: Scenario = options.from_str(text).map_err(|e| ScenarioError::Syntax {
        file: file.to_string(),
        line: e.span.start.line,
        column: e.span.start.col,
        // RON's messages may span lines (a list of expected fields); a report line stays one.
        message: one_line(&e.code.to_string()),
    })?;
    scenario.limits = limits.clone();
    validate(&scenario).map_err(|error| ScenarioError::Invalid {
        file: file.to_string(),
        error,
    })?;
    Ok(scenario)
}

/// Reads, parses and validates the scenario file at `path` against the default [`Limits`]
/// (the only file reading in resim).
pub fn load(path: &str) -> Result<Scenario, ScenarioError> {
    load_with(path, &Limits::default())
}

/// Reads, parses and validates the scenario file at `path` against `limits`.
pub fn load_with(path: &str, limits: &Limits) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Read {
        file: path.to_string(),
        reason: e.to_string(),
    })?;
    parse_with(path, &text, limits)
}

fn one_line(message: &str) -> String {
    let joined: Vec<&str> = message.split_whitespace().collect();
    let mut line = joined.join(" ");
    if let Some(stripped) = line.strip_suffix('.') {
        line = stripped.to_string();
    }
    // Error lines are lowercase throughout resim; RON capitalises its messages.
    let mut chars = line.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => line,
    }
}
