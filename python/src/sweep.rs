//! `resim.sweep`: the runs of a scenario over seeds and a grid, on threads, as `resim sweep`
//! makes them (`experiment::command::sweep_records`), with the GIL released and Ctrl-C
//! stopping the sweep. The records are the lines `resim sweep --out FILE.jsonl` writes, in
//! index order whatever the number of threads.

use crate::error;
use crate::interrupt::interruptible;
use crate::scenario::{Scenario, parse_duration};
use pyo3::prelude::*;
use scenarios::Cancel;
use scenarios::cli::{self, library};
use scenarios::experiment::command::{Sweep, sweep_records};
use scenarios::experiment::{Plan, to_jsonl};
use scenarios::format::limits::RunLimits;

/// The runs of `scenario` for the seeds `first..=last` at every point of the grid (`--grid`
/// texts), on `jobs` threads (`None`: one per core): their records as JSON lines.
#[pyfunction]
#[pyo3(signature = (scenario, first, last, grid, jobs=None, duration=None))]
pub fn sweep(
    py: Python<'_>,
    scenario: &Scenario,
    first: u64,
    last: u64,
    grid: Vec<String>,
    jobs: Option<usize>,
    duration: Option<String>,
) -> PyResult<String> {
    let file = &scenario.file;
    let grid = cli::grid_axes(file, &grid).map_err(|m| error::flag(file, &m))?;
    let cancel = Cancel::default();
    let command = Sweep {
        file: file.clone(),
        seeds: (first, last),
        duration: parse_duration(file, duration.as_deref())?,
        overrides: scenario.overrides.clone(),
        grid,
        jobs,
        out: None,
        partition: None,
        cancel: Some(cancel.clone()),
    };
    let plan = Plan::new(&command.grid, command.seeds, None)
        .map_err(|m| error::flag(file, &format!("{file}: {m}")))?;
    let limits = RunLimits::default();
    let records = interruptible(py, &cancel, || {
        sweep_records(&command, &plan, &library::open, &limits, &|| {})
    })?;
    Ok(to_jsonl(&records.map_err(|e| error::to_py(&e))?))
}
