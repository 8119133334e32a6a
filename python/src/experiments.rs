//! `resim.compare`, `resim.phase`, `resim.tune` and `resim.risk`: the words of the command
//! line's experiment (`compare FILE … --seeds A..B`, built by `resim/_experiments.py`), read by
//! the command line's own parser (`cli::embed`), with the scenario's variant and overrides put
//! in, then run by the library with the GIL released and Ctrl-C stopping it. What comes back
//! is what the command prints with `--format json`/`--json` and as text (and `--out`'s lines
//! for a tune), for the Python layer to read as dicts and tables.

use crate::error;
use crate::interrupt::interruptible_ticking;
use crate::scenario::Scenario;
use crate::sweep::ticker;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use scenarios::Cancel;
use scenarios::cli::embed::{Experiment, experiment};
use scenarios::cli::library;
use scenarios::experiment::{self as ex, Control, Progress};
use scenarios::format::limits::RunLimits;

/// The experiment `words` ask for, or the command line's error about them.
fn parsed(file: &str, words: &[String]) -> PyResult<Experiment> {
    experiment(words).map_err(|m| error::flag(file, &m))
}

/// `work` run with the GIL released under a fresh [`Control`], whose flag Ctrl-C sets and
/// whose counts tick `progress(done, total)` as for a sweep; its error as `ScenarioError` of
/// `file`.
fn controlled<T: Send>(
    py: Python<'_>,
    file: &str,
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(Control, &RunLimits) -> Result<T, String> + Send,
) -> PyResult<T> {
    let cancel = Cancel::default();
    let control = Control {
        cancel: Some(cancel.clone()),
        progress: Some(Progress::default()),
    };
    let tick = ticker(progress, &control);
    let limits = RunLimits::default();
    let work_control = control.clone();
    let done = interruptible_ticking(py, &cancel, &tick, || work(work_control, &limits))?;
    done.map_err(failed(file))
}

/// Words that ask for another experiment than the function runs: a bug of the Python layer.
fn not_the(words: &[String]) -> PyErr {
    PyRuntimeError::new_err(format!(
        "resim: not the experiment asked for: {words:?} (a bug: please report it)"
    ))
}

/// The work's error (a line the command line would print) as `ScenarioError`.
fn failed(file: &str) -> impl Fn(String) -> PyErr + '_ {
    move |m| error::flag(file, &m)
}

/// `resim compare` of `a` and `b` (each with its own variant and overrides; its label the file
/// and those words): the comparison as `--format json` and as the text table;
/// `progress(done, total)` called as for a sweep, over both sides' runs.
#[pyfunction]
#[pyo3(signature = (a, b, words, progress=None))]
pub fn compare(
    py: Python<'_>,
    a: &Scenario,
    b: &Scenario,
    words: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, String)> {
    let Experiment::Compare {
        seeds,
        duration,
        jobs,
    } = parsed(&a.file, &words)?
    else {
        return Err(not_the(&words));
    };
    let side = |s: &Scenario| ex::compare::Side {
        label: format!("{}{}", s.file, s.overrides.command_line()),
        file: s.file.clone(),
        overrides: s.overrides.clone(),
    };
    let sides = [side(a), side(b)];
    let c = controlled(py, &a.file, progress, |control, limits| {
        ex::compare::compare(
            &sides,
            seeds,
            duration,
            (jobs, &control),
            &library::open,
            limits,
        )
    })?;
    Ok((ex::compare::render_json(&c), ex::compare::render(&c)))
}

/// `resim phase` of `scenario`: the map as `--format json`, as text and as the SVG of `--svg`;
/// `progress(done, total)` called as for a sweep.
#[pyfunction]
#[pyo3(signature = (scenario, words, progress=None))]
pub fn phase(
    py: Python<'_>,
    scenario: &Scenario,
    words: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, String, String)> {
    let Experiment::Phase(mut command) = parsed(&scenario.file, &words)? else {
        return Err(not_the(&words));
    };
    command.overrides = scenario.overrides.clone();
    let map = controlled(py, &scenario.file, progress, |control, limits| {
        command.control = control;
        ex::phase::phase_map(&command, &library::open, limits)
    })?;
    let svg = ex::phase::render_svg(&map).map_err(failed(&scenario.file))?;
    Ok((
        ex::phase::render_json(&map),
        ex::phase::render_text(&map),
        svg,
    ))
}

/// `resim tune` of `scenario`: what it prints, whether a candidate met the requirement, the
/// lines of `--out` and the recommendation as JSON (`None` without one); `progress(done,
/// total)` called as for a sweep (the total grows as the race asks for more runs).
#[pyfunction]
#[pyo3(signature = (scenario, words, progress=None))]
pub fn tune(
    py: Python<'_>,
    scenario: &Scenario,
    words: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, bool, String, Option<String>)> {
    let Experiment::Tune(mut command) = parsed(&scenario.file, &words)? else {
        return Err(not_the(&words));
    };
    command.overrides = scenario.overrides.clone();
    let answer = controlled(py, &scenario.file, progress, |control, limits| {
        ex::tune::tune_answer(&command, &library::open, limits, control)
    })?;
    let recommendation = answer.recommendation.map(|r| r.to_string());
    Ok((
        answer.outcome.text,
        answer.outcome.passed,
        answer.runs,
        recommendation,
    ))
}

/// `resim risk` of `scenario`: the answer as `--json` and as text; `progress(done, total)`
/// called as for a sweep, counting the pilot's plain runs, then the plan's plain runs or
/// replications of splitting (the total grows when the plan is made).
#[pyfunction]
#[pyo3(signature = (scenario, words, progress=None))]
pub fn risk(
    py: Python<'_>,
    scenario: &Scenario,
    words: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, String)> {
    let Experiment::Risk(mut command, flags) = parsed(&scenario.file, &words)? else {
        return Err(not_the(&words));
    };
    command.overrides = scenario.overrides.clone();
    let output = controlled(py, &scenario.file, progress, |control, limits| {
        ex::risk::run(
            &command,
            (&library::open, limits),
            flags.jobs,
            None,
            &control,
        )
    })?;
    let answer = ex::risk::render::answer(&output);
    Ok((
        ex::risk::render::json(&answer),
        ex::risk::render::text(&answer),
    ))
}
