//! `resim.load` and what it gives: a [`Scenario`] read as `resim run NAME --variant V --set …`
//! reads it (a file, else a library scenario; every variant checked; the overrides applied and
//! validated), and its runs, each a [`Run`] holding the report `resim run` prints from.

use crate::error;
use crate::interrupt::interruptible;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use scenarios::cli::{self, library};
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::Overrides;
use scenarios::report::{Format, render};
use scenarios::{Cancel, Report, RunOptions};
use sim_core::SimDuration;
use std::sync::Arc;

/// A scenario read and validated, with its overrides applied: what `resim.load` gives.
#[pyclass(frozen, module = "resim._resim")]
pub struct Scenario {
    /// The file or library name as given.
    pub(crate) file: String,
    /// The variant and `set` overrides, for the replay command and for sweeps.
    pub(crate) overrides: Overrides,
    /// The scenario as overridden.
    pub(crate) scenario: Arc<scenarios::Scenario>,
}

/// Reads `file` (a `.ron` file, else the name of a library scenario) with the variant `variant`
/// and the `--set` texts `sets` applied, as `resim run` reads it.
#[pyfunction]
#[pyo3(signature = (file, sets, variant=None))]
pub fn load(file: String, sets: Vec<String>, variant: Option<String>) -> PyResult<Scenario> {
    let overrides = cli::overrides(&file, variant, &sets).map_err(|m| error::flag(&file, &m))?;
    let scenario =
        library::resolve(&file, &RunLimits::default(), &overrides).map_err(|e| error::to_py(&e))?;
    Ok(Scenario {
        file,
        overrides,
        scenario: Arc::new(scenario),
    })
}

#[pymethods]
impl Scenario {
    /// The file or library name as given to `load`.
    #[getter]
    fn file(&self) -> &str {
        &self.file
    }

    /// The scenario's `name` field.
    #[getter]
    fn name(&self) -> &str {
        &self.scenario.name
    }

    /// The scenario's own seed, which a run without one uses.
    #[getter]
    fn seed(&self) -> u64 {
        self.scenario.seed
    }

    /// The names of the file's variants.
    #[getter]
    fn variants(&self) -> Vec<String> {
        self.scenario.variants.clone()
    }

    /// The command-line words of the overrides (` --variant V --set 'P=V'`).
    #[getter]
    fn overrides(&self) -> String {
        self.overrides.command_line()
    }

    /// Runs the scenario once, with the GIL released; Ctrl-C stops it. With `requests`, a
    /// share from 0 to 1, the run keeps that share of its client requests whole, as `resim run
    /// --spans FILE --spans-sample SHARE` writes them (the same run: same digest).
    #[pyo3(signature = (seed=None, duration=None, max_events=None, requests=None))]
    fn run(
        &self,
        py: Python<'_>,
        seed: Option<u64>,
        duration: Option<String>,
        max_events: Option<u64>,
        requests: Option<f64>,
    ) -> PyResult<Run> {
        let duration = parse_duration(&self.file, duration.as_deref())?;
        let cancel = Cancel::default();
        let options = RunOptions {
            seed,
            duration,
            max_events,
            cancel: Some(cancel.clone()),
            ..RunOptions::default()
        };
        let (scenario, file) = (&self.scenario, self.file.as_str());
        let ran = interruptible(py, &cancel, || match requests {
            None => scenarios::run(scenario, file, &options).map(|out| (out, None)),
            Some(share) => crate::requests::run_keeping(scenario, file, &options, share)
                .map(|(out, kept)| (out, Some(kept))),
        })?;
        let (out, requests) = ran.map_err(|e| error::to_py(&e))?;
        let mut report = out.report;
        // The replay command carries the overrides, as `resim run`'s does.
        report.replay_flags = format!("{}{}", report.replay_flags, self.overrides.command_line());
        Ok(Run { report, requests })
    }

    fn __repr__(&self) -> String {
        format!(
            "<resim.Scenario {:?} from {:?}{}>",
            self.scenario.name,
            self.file,
            self.overrides.command_line()
        )
    }
}

/// A duration as `--duration` takes it (`"30s"`, `"2m"`), or the error naming it.
pub fn parse_duration(file: &str, text: Option<&str>) -> PyResult<Option<SimDuration>> {
    text.map(|t| {
        t.parse::<SimDuration>()
            .map_err(|e| error::flag(file, &format!("{file}: duration {t:?}: {e}")))
    })
    .transpose()
}

/// One run's report, as `resim run` prints it in each of its formats.
#[pyclass(frozen, module = "resim._resim")]
pub struct Run {
    report: Report,
    /// The requests the run kept whole, a JSON line each, when it was asked to.
    requests: Option<String>,
}

#[pymethods]
impl Run {
    /// The run's digest (hex): the same file, overrides and seed give the same digest.
    #[getter]
    fn digest(&self) -> &str {
        &self.report.digest
    }

    /// The seed the run used.
    #[getter]
    fn seed(&self) -> u64 {
        self.report.seed
    }

    /// Events executed.
    #[getter]
    fn events(&self) -> u64 {
        self.report.events
    }

    /// Why the run stopped (`time_limit`, `event_budget`, `memory_limit`, `no_events`).
    #[getter]
    fn stop_reason(&self) -> &str {
        &self.report.stop_reason
    }

    /// Whether every expectation held.
    #[getter]
    fn passed(&self) -> bool {
        self.report.passed()
    }

    /// The command that replays this run.
    #[getter]
    fn replay(&self) -> String {
        self.report.replay_command()
    }

    /// The requests the run kept whole, a JSON line each (`None`: it was not asked to keep
    /// any).
    fn kept_requests(&self) -> Option<&str> {
        self.requests.as_deref()
    }

    /// The report as `resim run --json` prints it.
    fn to_json(&self) -> String {
        Format::Json.render(&self.report)
    }

    /// The series as `resim run --format csv` prints it.
    fn to_csv(&self) -> String {
        Format::Csv.render(&self.report)
    }

    /// The report as `resim run` prints it.
    fn to_text(&self) -> String {
        Format::Human.render(&self.report)
    }

    /// The charts `resim run --svg DIR` draws: `(name, svg)` pairs.
    fn charts(&self) -> PyResult<Vec<(String, String)>> {
        let charts =
            render::charts(&self.report).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(charts.into_iter().map(|c| (c.name, c.svg)).collect())
    }

    /// The page `resim run --html FILE` writes.
    fn to_html(&self) -> PyResult<String> {
        let charts =
            render::charts(&self.report).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(render::html(&self.report, &charts))
    }

    fn __repr__(&self) -> String {
        format!(
            "<resim.Run {} seed {} digest {} {}>",
            self.report.scenario,
            self.report.seed,
            self.report.digest,
            if self.report.passed() {
                "passed"
            } else {
                "failed"
            }
        )
    }
}
