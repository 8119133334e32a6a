//! `resim.sweep`: the runs of a scenario over seeds and a grid, on threads, as `resim sweep`
//! makes them (`experiment::command::sweep_records`), with the GIL released and Ctrl-C
//! stopping the sweep. The records are the lines `resim sweep --out FILE.jsonl` writes, in
//! index order whatever the number of threads. Seeds are a range, as `--seeds` gives them, or
//! a list of seeds in their order (`Plan::of_seeds`), which the command line has no flag for.

use crate::error;
use crate::interrupt::interruptible_ticking;
use crate::scenario::{Scenario, parse_duration};
use pyo3::prelude::*;
use scenarios::Cancel;
use scenarios::cli::{self, library};
use scenarios::experiment::command::{Sweep, sweep_records};
use scenarios::experiment::{Control, Plan, Progress, to_jsonl};
use scenarios::format::limits::RunLimits;

/// The seeds of a sweep: `(first, last)` both included, or a list.
#[derive(FromPyObject)]
pub enum Seeds {
    /// A range, as `--seeds FIRST..LAST`.
    Range(u64, u64),
    /// Seeds one by one, in their order.
    List(Vec<u64>),
}

/// The runs of `scenario` for `seeds` at every point of the grid (`--grid` texts), on `jobs`
/// threads (`None`: one per core): their records as JSON lines. `progress`, when given, is
/// called as `progress(done, total)` on the calling thread about every 50 ms and at the end.
#[pyfunction]
#[pyo3(signature = (scenario, seeds, grid, jobs=None, duration=None, progress=None))]
pub fn sweep(
    py: Python<'_>,
    scenario: &Scenario,
    seeds: Seeds,
    grid: Vec<String>,
    jobs: Option<usize>,
    duration: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let file = &scenario.file;
    let grid = cli::grid_axes(file, &grid).map_err(|m| error::flag(file, &m))?;
    let plan = match seeds {
        Seeds::Range(first, last) => Plan::new(&grid, (first, last), None),
        Seeds::List(list) => Plan::of_seeds(&grid, list, None),
    }
    .map_err(|m| error::flag(file, &format!("{file}: {m}")))?;
    let cancel = Cancel::default();
    let command = Sweep {
        file: file.clone(),
        seeds: plan.seeds,
        duration: parse_duration(file, duration.as_deref())?,
        overrides: scenario.overrides.clone(),
        grid,
        jobs,
        out: None,
        partition: None,
        cancel: Some(cancel.clone()),
    };
    let control = Control {
        cancel: Some(cancel.clone()),
        progress: Some(Progress::default()),
    };
    control.asked(plan.runs());
    let limits = RunLimits::default();
    let tick = ticker(progress, &control);
    let records = interruptible_ticking(py, &cancel, &tick, || {
        sweep_records(&command, &plan, &library::open, &limits, &|| control.done())
    })?;
    Ok(to_jsonl(&records.map_err(|e| error::to_py(&e))?))
}

/// What calls a Python `progress(done, total)` with `control`'s counts (nothing without one).
pub fn ticker(
    progress: Option<Py<PyAny>>,
    control: &Control,
) -> impl Fn(Python<'_>) -> PyResult<()> + '_ {
    move |py| match (&progress, &control.progress) {
        (Some(callback), Some(counts)) => callback.call1(py, counts.get()).map(|_| ()),
        _ => Ok(()),
    }
}
