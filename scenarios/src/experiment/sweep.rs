//! Running a [`Plan`] in parallel into [`RunRecord`]s, and what a sweep prints: one line per
//! run, then a [`PointSummary`] per grid point. [`merge`] reads the records of several
//! partitions back and gives the same output as the sweep that was not split.

use super::plan::{Plan, RunSpec};
use super::stats::{Moments, wilson};
use crate::format::error::ScenarioError;
use crate::format::schema::Scenario;
use crate::{Cancel, Report, RunOptions, run};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use std::fmt::Write as _;

/// The figures of one run of a sweep: one line of `--out FILE.jsonl`, with its keys in this
/// order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    /// The run's stable index in the whole sweep ([`RunSpec::index`]).
    pub index: u64,
    /// How many runs the whole sweep makes (all partitions).
    pub runs: u64,
    /// The scenario as the command line named it.
    pub file: String,
    /// The grid point's overrides (empty without a grid).
    pub point: String,
    /// The seed.
    pub seed: u64,
    /// Whether every expectation held.
    pub passed: bool,
    /// The run's digest.
    pub digest: String,
    /// Requests offered.
    pub offered: u64,
    /// Requests that succeeded.
    pub successes: u64,
    /// `successes / offered` (1 when nothing was offered).
    pub success_ratio: f64,
    /// Successes per simulated second.
    pub goodput_per_s: f64,
    /// The 99th percentile of request latency, when any request finished.
    pub p99_ms: Option<f64>,
    /// Client attempts per request.
    pub amplification: f64,
    /// The command that replays this run.
    pub replay: String,
}

/// What every run of a sweep shares.
pub struct SweepSetup<'a> {
    /// The scenario as named on the command line.
    pub file: &'a str,
    /// Each grid point's scenario, read and validated.
    pub scenarios: &'a [Scenario],
    /// The command-line words of each point's overrides (for the replay command).
    pub overrides: &'a [String],
    /// `--duration`, if given.
    pub duration: Option<SimDuration>,
    /// Stops the sweep when cancelled (a Python caller's Ctrl-C): runs not yet started are
    /// not started, runs under way stop at their next look, and the sweep gives
    /// [`ScenarioError::Cancelled`].
    pub cancel: Option<Cancel>,
}

/// Makes the runs of `plan` on `jobs` threads (`None`: one per core) and returns their records
/// in index order, whatever the number of threads. `progress` is called from the worker
/// threads after each run.
pub fn run_plan(
    setup: &SweepSetup<'_>,
    plan: &Plan,
    jobs: Option<usize>,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<RunRecord>, ScenarioError> {
    run_plan_with(setup, plan, jobs, progress, &|spec, report| {
        record(setup, plan, spec, &report)
    })
}

/// Makes the runs of `plan` as [`run_plan`] does and keeps what `keep` takes from each run's
/// report, in index order whatever the number of threads.
pub fn run_plan_with<T: Send>(
    setup: &SweepSetup<'_>,
    plan: &Plan,
    jobs: Option<usize>,
    progress: &(dyn Fn() + Sync),
    keep: &(dyn Fn(&RunSpec, Report) -> T + Sync),
) -> Result<Vec<T>, ScenarioError> {
    let specs = plan.specs();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(|e| ScenarioError::Read {
            file: setup.file.to_string(),
            reason: format!("cannot start the worker threads: {e}"),
        })?;
    let results: Vec<Result<T, ScenarioError>> = pool.install(|| {
        specs
            .par_iter()
            .map(|spec| {
                let kept = one_run(setup, spec).map(|report| keep(spec, report));
                progress();
                kept
            })
            .collect()
    });
    // `collect` keeps the order of `specs`: index order.
    results.into_iter().collect()
}

fn one_run(setup: &SweepSetup<'_>, spec: &RunSpec) -> Result<Report, ScenarioError> {
    if setup.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
        return Err(ScenarioError::Cancelled {
            file: setup.file.to_string(),
        });
    }
    let options = RunOptions {
        seed: Some(spec.seed),
        duration: setup.duration,
        cancel: setup.cancel.clone(),
        ..RunOptions::default()
    };
    Ok(run(&setup.scenarios[spec.point], setup.file, &options)?.report)
}

fn record(setup: &SweepSetup<'_>, plan: &Plan, spec: &RunSpec, report: &Report) -> RunRecord {
    RunRecord {
        index: spec.index,
        runs: plan.runs(),
        ..RunRecord::of(
            report,
            setup.file,
            plan.label(spec.point),
            &setup.overrides[spec.point],
        )
    }
}

impl RunRecord {
    /// The record of `report`, a run of `file` at the grid point `point` whose overrides are
    /// the command-line words `overrides`; its index and the count of runs are 0, for the
    /// experiment to number.
    pub fn of(report: &Report, file: &str, point: String, overrides: &str) -> RunRecord {
        let s = &report.summary;
        RunRecord {
            index: 0,
            runs: 0,
            file: file.to_string(),
            point,
            seed: report.seed,
            passed: report.passed(),
            digest: report.digest.clone(),
            offered: s.offered,
            successes: s.successes,
            success_ratio: if s.offered == 0 {
                1.0
            } else {
                s.successes as f64 / s.offered as f64
            },
            goodput_per_s: s.goodput_per_s,
            p99_ms: s.latency_ms.as_ref().map(|l| l.p99),
            amplification: s.amplification,
            replay: format!("{}{overrides}", report.replay_command()),
        }
    }
}

/// The aggregate of one grid point's runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSummary {
    /// The grid point's overrides.
    pub point: String,
    /// Runs made.
    pub runs: u64,
    /// Runs whose expectations all held.
    pub passed: u64,
    /// The 95% Wilson interval of the pass rate.
    pub pass_interval: (f64, f64),
    /// Goodput per second over the runs.
    pub goodput_per_s: Moments,
    /// Success ratio over the runs.
    pub success_ratio: Moments,
    /// p99 latency over the runs that have one.
    pub p99_ms: Moments,
    /// Amplification over the runs.
    pub amplification: Moments,
}

/// One summary per grid point, in the order of the records (which are in index order).
pub fn summarise(records: &[RunRecord]) -> Vec<PointSummary> {
    let mut out: Vec<PointSummary> = Vec::new();
    for r in records {
        if out.last().is_none_or(|p| p.point != r.point) {
            out.push(PointSummary {
                point: r.point.clone(),
                runs: 0,
                passed: 0,
                pass_interval: (0.0, 1.0),
                goodput_per_s: Moments::default(),
                success_ratio: Moments::default(),
                p99_ms: Moments::default(),
                amplification: Moments::default(),
            });
        }
        let p = out.last_mut().expect("pushed above");
        p.runs += 1;
        p.passed += u64::from(r.passed);
        p.pass_interval = wilson(p.passed, p.runs);
        p.goodput_per_s.add(r.goodput_per_s);
        p.success_ratio.add(r.success_ratio);
        if let Some(v) = r.p99_ms {
            p.p99_ms.add(v);
        }
        p.amplification.add(r.amplification);
    }
    out
}

/// The most failing runs the last line names.
const FAILING_SHOWN_MAX: usize = 20;

/// What `resim sweep` (and `resim merge`) prints for `records` (in index order): one line per
/// run, the aggregate per grid point, then which runs failed and how to replay the first.
pub fn render(records: &[RunRecord]) -> String {
    let mut out = String::new();
    let grid = records.iter().any(|r| !r.point.is_empty());
    let width = records
        .iter()
        .map(|r| r.point.chars().count())
        .max()
        .unwrap_or(0);
    for r in records {
        if grid {
            let _ = write!(out, "{:<width$}  ", r.point);
        }
        let _ = writeln!(
            out,
            "seed {:<8} {}  digest {}  success {:>5.1}%  p99 {:>8}ms  amplification {:.2}",
            r.seed,
            if r.passed { "PASS" } else { "FAIL" },
            r.digest,
            100.0 * r.success_ratio,
            r.p99_ms
                .map_or_else(|| "–".to_string(), |v| format!("{v:.1}")),
            r.amplification
        );
    }
    let summaries = summarise(records);
    let width = width.max("point".len());
    out.push_str(
        "\nper grid point (mean ± standard deviation over the seeds; pass rate with its 95% Wilson interval)\n",
    );
    let _ = writeln!(
        out,
        "  {:<width$}  {:>5}  {:<22}  {:>16}  {:>16}  {:>16}  {:>13}",
        if grid { "point" } else { "" },
        "runs",
        "pass rate",
        "goodput/s",
        "success %",
        "p99 ms",
        "amplification"
    );
    for p in &summaries {
        let pass = format!(
            "{:.1}% [{:.1}, {:.1}]",
            100.0 * p.passed as f64 / p.runs as f64,
            100.0 * p.pass_interval.0,
            100.0 * p.pass_interval.1
        );
        let pm = |m: &Moments, scale: f64, digits: usize| {
            if m.count == 0 {
                "–".to_string()
            } else {
                format!("{:.digits$} ± {:.digits$}", scale * m.mean, scale * m.sd())
            }
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {:>5}  {:<22}  {:>16}  {:>16}  {:>16}  {:>13}",
            if grid { p.point.as_str() } else { "all seeds" },
            p.runs,
            pass,
            pm(&p.goodput_per_s, 1.0, 1),
            pm(&p.success_ratio, 100.0, 1),
            pm(&p.p99_ms, 1.0, 1),
            pm(&p.amplification, 1.0, 2),
        );
    }
    let total = records.len();
    let failing: Vec<&RunRecord> = records.iter().filter(|r| !r.passed).collect();
    let noun = if grid { "runs" } else { "seeds" };
    if failing.is_empty() {
        let _ = writeln!(out, "{total} of {total} {noun} pass");
        return out;
    }
    let mut list: Vec<String> = failing
        .iter()
        .take(FAILING_SHOWN_MAX)
        .map(|r| {
            if grid {
                format!("{} at {}", r.seed, r.point)
            } else {
                r.seed.to_string()
            }
        })
        .collect();
    if failing.len() > FAILING_SHOWN_MAX {
        list.push(format!("and {} more", failing.len() - FAILING_SHOWN_MAX));
    }
    let _ = writeln!(
        out,
        "{} of {total} {noun} pass; failing: {}; replay: {}",
        total - failing.len(),
        list.join(", "),
        failing[0].replay
    );
    out
}

/// The records as JSON lines, in the order given.
pub fn to_jsonl(records: &[RunRecord]) -> String {
    let mut out = String::new();
    for r in records {
        out.push_str(&serde_json::to_string(r).expect("a record is plain data"));
        out.push('\n');
    }
    out
}

/// The records of several `--out` files (`(name, text)`), in index order: an error when a line
/// is not a record, when the files come from different sweeps, when a run is there twice, or
/// when runs are missing.
pub fn merge(files: &[(String, String)]) -> Result<Vec<RunRecord>, String> {
    let mut records: Vec<(RunRecord, String)> = Vec::new();
    for (name, text) in files {
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let r: RunRecord = serde_json::from_str(line)
                .map_err(|e| format!("{name}:{}: not a line of `resim sweep --out`: {e}", n + 1))?;
            records.push((r, format!("{name}:{}", n + 1)));
        }
    }
    let Some((first, _)) = records.first() else {
        return Err("no runs in the files".to_string());
    };
    let (runs, file) = (first.runs, first.file.clone());
    if let Some((r, at)) = records
        .iter()
        .find(|(r, _)| r.runs != runs || r.file != file)
    {
        return Err(format!(
            "{at}: a run of another sweep ({} of {} runs, not {file} of {runs}); merge the partitions of one sweep",
            r.file, r.runs
        ));
    }
    records.sort_by_key(|(r, _)| r.index);
    for w in records.windows(2) {
        if w[0].0.index == w[1].0.index {
            return Err(format!(
                "{} and {}: run {} is there twice (the same partition given twice?)",
                w[0].1, w[1].1, w[0].0.index
            ));
        }
    }
    if let Some((r, at)) = records.iter().find(|(r, _)| r.index >= runs) {
        return Err(format!("{at}: run {} of a sweep of {runs} runs", r.index));
    }
    if records.len() as u64 != runs {
        let missing = runs - records.len() as u64;
        return Err(format!(
            "{} of {runs} runs; {missing} missing (give every partition of the sweep)",
            records.len()
        ));
    }
    Ok(records.into_iter().map(|(r, _)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::load::parse;

    fn scenario() -> Scenario {
        parse(
            "cancel.ron",
            r#"Scenario(
                name: "cancel",
                duration: "20s",
                clients: { "c": (load: Open(rate: Constant("5000/s")), call: (target: "s", timeout: "1s")) },
                services: { "s": (workers: 8, work: Exponential(mean: "1ms")) },
            )"#,
        )
        .expect("valid")
    }

    fn options(cancel: Option<Cancel>) -> RunOptions {
        RunOptions {
            seed: Some(3),
            cancel,
            ..RunOptions::default()
        }
    }

    #[test]
    fn a_run_that_is_not_cancelled_is_the_same_run() {
        let s = scenario();
        let plain = run(&s, "cancel.ron", &options(None)).expect("runs");
        let watched = run(&s, "cancel.ron", &options(Some(Cancel::default()))).expect("runs");
        // More events than one slice, so that the run was looked at between slices.
        assert!(plain.report.events > 3 * crate::run::CANCEL_CHECK_EVENTS);
        assert_eq!(plain.report.digest, watched.report.digest);
        assert_eq!(plain.report.events, watched.report.events);
    }

    #[test]
    fn a_cancelled_run_and_sweep_end_with_cancelled() {
        let s = scenario();
        let cancel = Cancel::default();
        cancel.cancel();
        let cancelled = |e: ScenarioError| {
            assert_eq!(e.to_string(), "cancel.ron: interrupted");
            matches!(e, ScenarioError::Cancelled { .. })
        };
        let ran = run(&s, "cancel.ron", &options(Some(cancel.clone())));
        assert!(ran.map(|_| ()).map_err(cancelled) == Err(true));
        let scenarios = [s];
        let setup = SweepSetup {
            file: "cancel.ron",
            scenarios: &scenarios,
            overrides: &[String::new()],
            duration: None,
            cancel: Some(cancel),
        };
        let plan = Plan::new(&[], (1, 4), None).expect("a plan");
        let swept = run_plan(&setup, &plan, Some(2), &|| {});
        assert!(swept.map(|_| ()).map_err(cancelled) == Err(true));
    }
}
