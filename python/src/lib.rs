//! resim from Python: the `resim._resim` extension module, which the `resim` package
//! (`python/resim/`) wraps in Python's idioms (DataFrames, properties, stubs). Thin by design:
//! it converts Python arguments into the `scenarios` crate's types, calls the library
//! functions the command line calls, and hands the results back as the command line's own
//! JSON and CSV texts; it holds no simulation, reading or reporting logic of its own.
//!
//! | module | what |
//! |---|---|
//! | `error` | `ScenarioError` as a Python exception with the error's place as attributes |
//! | `experiments` | `compare`, `phase`, `tune`, `risk`: the command line's words parsed by its parser, run by the library |
//! | `interrupt` | running work with the GIL released, stopped by Ctrl-C within a slice of events |
//! | `requests` | the client requests a run keeps whole when asked, as `--spans` writes them, a row each |
//! | `scenario` | `load`, a loaded scenario, its runs and their reports |
//! | `sweep` | many runs on threads, one record per run |
//!
//! All of it is the `extension` feature, which maturin turns on: built by `cargo` without it
//! (`cargo test --workspace`), the crate is empty and needs neither pyo3 nor Python.

#![cfg(feature = "extension")]

mod error;
mod experiments;
mod interrupt;
mod requests;
mod scenario;
mod sweep;

use pyo3::prelude::*;

/// The library scenarios, in `resim list` order: `(name, description)` pairs.
#[pyfunction]
fn library() -> Vec<(&'static str, String)> {
    scenarios::cli::library::LIBRARY
        .iter()
        .map(|entry| (entry.name, scenarios::cli::library::headline(entry)))
        .collect()
}

/// The module: its functions, classes and exception.
#[pymodule]
fn _resim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(library, m)?)?;
    m.add_function(wrap_pyfunction!(scenario::load, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep, m)?)?;
    m.add_function(wrap_pyfunction!(experiments::compare, m)?)?;
    m.add_function(wrap_pyfunction!(experiments::phase, m)?)?;
    m.add_function(wrap_pyfunction!(experiments::tune, m)?)?;
    m.add_function(wrap_pyfunction!(experiments::risk, m)?)?;
    m.add_class::<scenario::Scenario>()?;
    m.add_class::<scenario::Run>()?;
    m.add("ScenarioError", m.py().get_type::<error::ScenarioError>())?;
    m.add("CANCEL_CHECK_EVENTS", scenarios::run::CANCEL_CHECK_EVENTS)?;
    Ok(())
}
