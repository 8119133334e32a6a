//! [`ScenarioError`]: why a scenario file cannot be run, in one line with its location.

use patterns::ConfigError;
use std::fmt;

/// A scenario file that cannot be run. Every variant displays as one line that starts with
/// the file and says where and what: `file:line:column: message` for syntax errors,
/// `file: field.path: reason` for values that parse but make no sense, `file: --set
/// PATH=VALUE: reason` for an override.
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
    /// The scenario parses but a value is impossible (see [`crate::validate`]).
    Invalid {
        /// The path as given.
        file: String,
        /// The field and the fix.
        error: ConfigError,
    },
    /// An override (`--set PATH=VALUE`, or one of the file's `variants`) that cannot be
    /// applied, or whose value does not parse or validate.
    Override {
        /// The path as given.
        file: String,
        /// The override as the user wrote it: `--set PATH=VALUE`, or
        /// `variant "NAME": PATH=VALUE`.
        set: String,
        /// What is wrong and how to fix it.
        message: String,
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
        }
    }
}

impl std::error::Error for ScenarioError {}
