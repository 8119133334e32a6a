//! [`ScenarioError`]: why a scenario file cannot be run, in one line with its location.

use patterns::ConfigError;
use std::fmt;

/// A scenario file that cannot be run. Every variant displays as one line that starts with
/// the file and says where and what: `file:line:column: message` for syntax errors,
/// `file: field.path: reason` for values that parse but make no sense, `file: --set
/// PATH=VALUE: reason` for an override on the command line, `file:line:column:
/// variants."NAME".field.path: reason` for a value in one of the file's variants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScenarioError {
    /// The file could not be read.
    Read {
        /// The path as given.
        file: String,
        /// What the operating system said.
        reason: String,
    },
    /// The RON text does not parse into a scenario (syntax, unknown field, wrong type, bad
    /// duration or rate string).
    Syntax {
        /// The path as given.
        file: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// The scenario parses but a value is impossible (see [`crate::format::validate`]).
    Invalid {
        /// The path as given.
        file: String,
        /// The field and the fix.
        error: ConfigError,
    },
    /// A command-line override (`--set`, `--grid`, `--x`, `--y`, `--variant`) that cannot be
    /// applied, or whose value does not parse or validate.
    Override {
        /// The path as given.
        file: String,
        /// The flag and its text as typed (`--set duration=30s`), or all of them when the
        /// error comes from no one of them alone.
        set: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A value in one of the file's `variants` that cannot be applied, or does not parse or
    /// validate, at the token in the `variants` map.
    Variant {
        /// The path as given.
        file: String,
        /// 1-based line of the token.
        line: usize,
        /// 1-based column of the token.
        column: usize,
        /// The field path within the variant: `variants."per-tenant".expectations[1].max_ratio`.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The run or sweep was stopped by its caller through a `run::Cancel` (a Python
    /// caller's Ctrl-C) before it ended: there is nothing to report.
    Cancelled {
        /// The path as given.
        file: String,
    },
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::Read { file, reason } => write!(f, "{file}: cannot read: {reason}"),
            ScenarioError::Syntax {
                file,
                line,
                column,
                message,
            } => write!(f, "{file}:{line}:{column}: {message}"),
            ScenarioError::Invalid { file, error } => write!(f, "{file}: {error}"),
            ScenarioError::Override { file, set, message } => {
                write!(f, "{file}: {set}: {message}")
            }
            ScenarioError::Variant {
                file,
                line,
                column,
                path,
                message,
            } => write!(f, "{file}:{line}:{column}: {path}: {message}"),
            ScenarioError::Cancelled { file } => write!(f, "{file}: interrupted"),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Text as one line, as messages show what was typed: each run of white space that holds a
/// line break becomes one space.
pub fn one_line(text: &str) -> String {
    if !text.contains(['\n', '\r']) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            run.push(c);
            continue;
        }
        if !run.is_empty() {
            out.push_str(if run.contains(['\n', '\r']) {
                " "
            } else {
                &run
            });
            run.clear();
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_shown_on_one_line() {
        assert_eq!(one_line("a\n   b  c\r\nd"), "a b  c d");
        assert_eq!(one_line("(at: 1s)"), "(at: 1s)");
    }
}
