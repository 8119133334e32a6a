//! `resim sweep` and `resim merge` as the command line runs them: [`Sweep`] in, the text to
//! print and whether every run passed out. The progress bar is drawn on stderr only when it
//! is a terminal.

use super::Opener;
use super::part::kind_of;
use super::phase::MapOutput;
use super::plan::{GridAxis, Partition, Plan};
use super::sweep::{RunRecord, SweepSetup, merge, render, run_plan, to_jsonl};
use crate::Cancel;
use crate::format::error::ScenarioError;
use crate::format::limits::RunLimits;
use crate::format::overrides::Overrides;
use sim_core::SimDuration;
use std::io::IsTerminal as _;

/// What `resim sweep` was asked.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// A file or a library scenario.
    pub file: String,
    /// First and last seed.
    pub seeds: (u64, u64),
    /// `--duration`.
    pub duration: Option<SimDuration>,
    /// `--variant` and `--set`, for every run.
    pub overrides: Overrides,
    /// `--grid` axes.
    pub grid: Vec<GridAxis>,
    /// `-j`: threads (`None`: one per core).
    pub jobs: Option<usize>,
    /// `--out`: where to write the records.
    pub out: Option<String>,
    /// `--partition K/N`.
    pub partition: Option<Partition>,
    /// Stops the sweep early when cancelled (a Python caller's Ctrl-C; `None` on the command
    /// line).
    pub cancel: Option<Cancel>,
}

/// What a command has to say: stdout, and whether every run passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The text for stdout.
    pub text: String,
    /// Every run met its expectations.
    pub passed: bool,
}

/// Runs a sweep of the scenario `open` reads. Every grid point is read and validated before
/// any run starts; an error is one line for stderr (exit code 2).
pub fn sweep(command: &Sweep, open: Opener<'_>, limits: &RunLimits) -> Result<Outcome, String> {
    let plan = Plan::new(&command.grid, command.seeds, command.partition)?;
    let bar = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(plan.specs().len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} runs  {elapsed} elapsed, about {eta} left",
            )
            .expect("a valid template"),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let records = sweep_records(command, &plan, open, limits, &|| bar.inc(1));
    bar.finish_and_clear();
    let records = records.map_err(|e| e.to_string())?;
    if let Some(path) = &command.out {
        std::fs::write(path, to_jsonl(&records))
            .map_err(|e| format!("{path}: cannot write: {e}"))?;
    }
    Ok(outcome(&records))
}

/// The records of the runs of `plan` (the plan of `command`'s grid, seeds and partition) in
/// index order (its `--out` lines), whatever `command.jobs`: what `resim sweep` prints from,
/// and what `resim.sweep` gives Python. Every grid point is read and validated before any
/// run starts; `progress` is called after each run (from the worker threads), and
/// `command.cancel` stops the sweep early with [`ScenarioError::Cancelled`].
pub fn sweep_records(
    command: &Sweep,
    plan: &Plan,
    open: Opener<'_>,
    limits: &RunLimits,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<RunRecord>, ScenarioError> {
    let each = plan.overrides_each(&command.overrides);
    let scenarios = open(&command.file).and_then(|source| source.apply_each(limits, &each))?;
    let words: Vec<String> = each.iter().map(Overrides::command_line).collect();
    let setup = SweepSetup {
        file: &command.file,
        scenarios: &scenarios,
        overrides: &words,
        duration: command.duration,
        cancel: command.cancel.clone(),
    };
    run_plan(&setup, plan, command.jobs, progress)
}

/// `resim merge`: what the unsplit sweep, phase map or tune prints, from the `--out` files of
/// its partitions; which of the three the first file's first line says. A tune's merge reads
/// the scenario again (through `open`) to replay the race on the parts' runs.
pub fn merge_files(
    paths: &[String],
    output: &MapOutput,
    open: Opener<'_>,
    limits: &RunLimits,
) -> Result<Outcome, String> {
    let mut files = Vec::with_capacity(paths.len());
    for p in paths {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{p}: cannot read: {e}"))?;
        files.push((p.clone(), text));
    }
    let kind = files.first().and_then(|(_, text)| kind_of(text));
    match kind.as_deref() {
        Some("phase") => super::phase::merge(&files, output),
        Some("tune") => {
            if output.json {
                return Err(format!(
                    "{}: a tune prints text; --format json is for a phase map's parts",
                    paths[0]
                ));
            }
            super::tune::merge(&files, output.svg.as_deref(), open, limits)
        }
        Some(super::risk::PART_KIND) => {
            if output.svg.is_some() {
                return Err(format!(
                    "{}: a risk estimate draws no chart; --svg is for a phase map's or a tune's parts",
                    paths[0]
                ));
            }
            super::risk::merged(&files, output.json)
        }
        Some(other) => Err(format!(
            "{}: a part of `{other}`, which resim merge does not know; give the --out files of resim sweep, phase, tune or risk",
            paths[0]
        )),
        None => {
            if output.json || output.svg.is_some() {
                return Err(format!(
                    "{}: a sweep's parts print text only; --format json and --svg are for a phase map's parts (--svg also for a tune's)",
                    paths[0]
                ));
            }
            Ok(outcome(&merge(&files)?))
        }
    }
}

fn outcome(records: &[RunRecord]) -> Outcome {
    Outcome {
        text: render(records),
        passed: records.iter().all(|r| r.passed),
    }
}

/// What `resim compare` writes besides its table.
#[derive(Debug, Clone, Default)]
pub struct CompareOutput {
    /// `--format json`: one JSON object instead of the table.
    pub json: bool,
    /// `--svg DIR`: the charts of the first seed, both sides on the same axes.
    pub svg: Option<String>,
    /// `--html FILE`: one page with the table and those charts.
    pub html: Option<String>,
}

/// `resim compare`: the table of [`super::compare::render`] (or its JSON); it passes whatever
/// the figures.
pub fn compare_command(
    files: &[String],
    variants: &[String],
    sets: &[crate::format::overrides::Override],
    (seeds, duration, jobs): ((u64, u64), Option<SimDuration>, Option<usize>),
    open: Opener<'_>,
    limits: &RunLimits,
    output: &CompareOutput,
) -> Result<Outcome, String> {
    let sides = super::compare::sides(files, variants, sets)?;
    let comparison = super::compare::compare(
        &sides,
        seeds,
        duration,
        (jobs, &super::Control::default()),
        open,
        limits,
    )?;
    if (output.svg.is_some() || output.html.is_some())
        && let Some(first) = &comparison.first
    {
        let charts = crate::report::render::charts::compare_charts(
            &first.0,
            &first.1,
            (&comparison.labels.0, &comparison.labels.1),
        )
        .map_err(|e| e.to_string())?;
        if let Some(dir) = &output.svg {
            std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: cannot create: {e}"))?;
            for c in &charts {
                let path = std::path::Path::new(dir).join(format!("{}.svg", c.name));
                std::fs::write(&path, &c.svg)
                    .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
            }
        }
        if let Some(file) = &output.html {
            std::fs::write(file, super::compare::render_html(&comparison, &charts))
                .map_err(|e| format!("{file}: cannot write: {e}"))?;
        }
    }
    Ok(Outcome {
        text: if output.json {
            super::compare::render_json(&comparison)
        } else {
            super::compare::render(&comparison)
        },
        passed: true,
    })
}
