//! `resim.ScenarioError`: every error the command line would print as one line and exit 2
//! with, raised with that same message and its place as attributes (`file`, `line`,
//! `column`, `path`; `None` where the error has none). A run or sweep stopped by Ctrl-C is
//! `KeyboardInterrupt`, not this.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use scenarios::ScenarioError as Error;

create_exception!(
    resim,
    ScenarioError,
    PyException,
    "A scenario that cannot be read, applied or run: the message the command line prints, with `file`, `line`, `column` and `path` attributes."
);

/// The place of an error: file, line, column, field path.
struct Place<'a> {
    file: &'a str,
    line: Option<usize>,
    column: Option<usize>,
    path: Option<&'a str>,
}

/// `error` as the Python exception to raise.
pub fn to_py(error: &Error) -> PyErr {
    let place = match error {
        Error::Cancelled { .. } => return PyKeyboardInterrupt::new_err(error.to_string()),
        Error::Read { file, .. } | Error::Override { file, .. } => Place {
            file,
            line: None,
            column: None,
            path: None,
        },
        Error::Syntax {
            file, line, column, ..
        } => Place {
            file,
            line: Some(*line),
            column: Some(*column),
            path: None,
        },
        Error::Invalid { file, error } => Place {
            file,
            line: None,
            column: None,
            path: Some(&error.field),
        },
        Error::Variant {
            file,
            line,
            column,
            path,
            ..
        } => Place {
            file,
            line: Some(*line),
            column: Some(*column),
            path: Some(path),
        },
    };
    raise(&error.to_string(), &place)
}

/// An error the command line reads from its flags (a malformed `--set` or `--grid`): the
/// message, about `file`.
pub fn flag(file: &str, message: &str) -> PyErr {
    let place = Place {
        file,
        line: None,
        column: None,
        path: None,
    };
    raise(message, &place)
}

fn raise(message: &str, place: &Place<'_>) -> PyErr {
    Python::attach(|py| {
        let error = ScenarioError::new_err(message.to_string());
        let value = error.value(py);
        let set = || -> PyResult<()> {
            value.setattr("message", message)?;
            value.setattr("file", place.file)?;
            value.setattr("line", place.line)?;
            value.setattr("column", place.column)?;
            value.setattr("path", place.path)
        };
        match set() {
            Ok(()) => error,
            Err(e) => e,
        }
    })
}
