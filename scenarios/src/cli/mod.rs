//! The `resim` command line: run a scenario, check one, sweep, compare, map, shrink, merge,
//! import a production configuration, or list the library. [`main`] is the whole binary; `src/main.rs` only calls it.
//!
//! | module | what |
//! |---|---|
//! | `args` | what each command takes: the clap types, and the parsers of seeds and windows |
//! | [`embed`] | the experiments' command lines for a caller that embeds resim (Python): parsed and checked as `resim` does, run by the caller |
//! | `convert` | `resim export`'s output: one configuration, or the files `--against` writes back into a directory |
//! | `explore` | `resim explore`: the explorer's page of a run, and of a variant compared with it |
//! | [`library`] | the embedded scenario library, and what a name on the command line means: a file, else a library scenario ([`library::resolve`]) |
//! | `serve` | `resim explore --serve`: the local server of what-if runs (127.0.0.1, a token, Host and Origin checked) |
//! | `spans` | `resim run --spans`: the run with its sampled requests streamed to a file as traces, nothing half-written |
//!
//! Exit codes: 0 ok, 1 an expectation failed, 2 bad input (the error is one line on stderr).
//! A reader that goes away (`resim list | head -1`) ends the output quietly, with the exit
//! code of what was done so far.
//!
//! **Layer rule:** the command line is the top layer: it may use every other one (the format,
//! runs, reports, experiments) and nothing uses it. It is the only place that reads flags,
//! prints, and decides what a name means; the experiments get its [`library::open`].

mod args;
mod convert;
pub mod embed;
mod explore;
pub mod library;
mod serve;
mod spans;

use crate::experiment::command::{
    CompareOutput, Outcome, Sweep, compare_command, merge_files, sweep,
};
use crate::experiment::determinism::{self, Verdict, check_determinism};
use crate::experiment::{GridAxis, phase, risk, shrink, tune};
use crate::format::error::ScenarioError;
use crate::format::limits::RunLimits;
use crate::format::overrides::{Flag, Overrides};
use crate::format::schema::Scenario;
use crate::import;
use crate::report::{Format, Report, render, why};
use crate::run::{RunOptions, run};
use anyhow::Context as _;
use args::{
    Cli, Command, ImportArgs, PhaseFormat, RunArgs, ShrinkArgs, WhyArgs, flag_error, parse_sets,
};
use clap::Parser as _;
use convert::export_call;
use explore::explore_file;
use library::{DEFAULT_EXAMPLE, resolve};
use std::process::ExitCode;

/// The `resim` binary: parses the command line, runs the command, and gives the exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let limits = cli.limits.limits();
    let command = cli.command.unwrap_or(Command::Run(RunArgs::default()));
    match command {
        Command::List => list(),
        Command::Sweep(args) => {
            report_outcome(sweep_of(args).and_then(|c| sweep(&c, &library::open, &limits)))
        }
        Command::Phase(args) => report_outcome(phase_of(&args).and_then(|c| {
            let output = phase::MapOutput {
                json: args.format == PhaseFormat::Json,
                svg: args.svg.clone(),
            };
            phase::phase_command(&c, &output, &library::open, &limits)
        })),
        Command::Tune(args) => report_outcome(
            tune_of(&args).and_then(|c| tune::tune_command(&c, &library::open, &limits)),
        ),
        Command::Risk(args) => report_outcome(
            risk_of(&args)
                .and_then(|(c, flags)| risk::command(&c, &flags, &library::open, &limits)),
        ),
        Command::Merge(args) => {
            let output = phase::MapOutput {
                json: args.format == PhaseFormat::Json,
                svg: args.svg,
            };
            report_outcome(merge_files(&args.files, &output, &library::open, &limits))
        }
        Command::Shrink(args) => shrink_file(&args, &limits),
        Command::Why(args) => why_file(&args, &limits, &cli.limits.command_line()),
        Command::Explore(args) if args.serve => {
            serve::explore(&args, &limits, &cli.limits.command_line())
        }
        Command::Explore(args) => explore_file(&args, &limits, &cli.limits.command_line()),
        Command::Compare {
            files,
            variants,
            sets,
            seeds,
            duration,
            jobs,
            format,
            svg,
            html,
        } => report_outcome(parse_sets(&files[0], &sets).and_then(|sets| {
            compare_command(
                &files,
                &variants,
                &sets,
                (seeds, duration, jobs.map(usize::from)),
                &library::open,
                &limits,
                &CompareOutput {
                    json: format == "json",
                    svg,
                    html,
                },
            )
        })),
        Command::Check { file, overrides } => match overrides
            .overrides(&file)
            .and_then(|o| check(&file, &limits, &o).map_err(|e| e.to_string()))
        {
            Ok((s, words)) => {
                let variants = if s.variants.is_empty() {
                    String::new()
                } else {
                    format!(", variants {}", s.variants.join(", "))
                };
                emit(&format!(
                    "{file}{words}: ok ({}: {} clients, {} services, {} faults, {} expectations{variants})\n",
                    s.name,
                    s.clients.len(),
                    s.services.len(),
                    s.faults.len(),
                    s.expectations.len()
                ));
                // Accepted settings that may not mean what their author meant, as the
                // report's `warnings` lists them.
                for w in crate::format::warnings::warnings(&s) {
                    eprintln!("{file}{words}: warning: {w}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Command::Run(args) => run_file(args, &limits, &cli.limits.command_line()),
        Command::Import(args) => import_files(&args, &limits),
        Command::Export(args) => export_call(&args, &limits),
    }
}

/// `resim sweep`'s arguments as a [`Sweep`]: the grid parsed, the overrides read, and the
/// partition resolved (`--partition auto` from the environment of a batch array task).
fn sweep_of(args: args::SweepArgs) -> Result<Sweep, String> {
    let file = args.file.clone();
    let grid = grid_axes(&file, &args.grid);
    let partition = resolve_partition(&file, args.partition);
    let overrides = args.overrides.overrides(&file)?;
    Ok(Sweep {
        file: args.file,
        seeds: args.seeds,
        duration: args.duration,
        overrides,
        grid: grid?,
        jobs: args.jobs.map(usize::from),
        out: args.out,
        partition: partition?,
        cancel: None,
    })
}

/// `--grid PATH=V1,V2,…` texts as the axes of a sweep, or the one-line error about the first
/// malformed one, as `resim sweep` reads them (and `resim.sweep` in Python).
pub fn grid_axes(file: &str, texts: &[String]) -> Result<Vec<GridAxis>, String> {
    texts
        .iter()
        .map(|text| {
            GridAxis::parse(Flag::Grid, text).map_err(|m| flag_error(file, Flag::Grid, text, &m))
        })
        .collect()
}

/// `--variant NAME` and `--set PATH=VALUE` texts as [`Overrides`], or the one-line error about
/// the first malformed `--set`, as every command that reads a scenario takes them (and
/// `resim.load` in Python).
pub fn overrides(
    file: &str,
    variant: Option<String>,
    sets: &[String],
) -> Result<Overrides, String> {
    args::OverrideArgs {
        sets: sets.to_vec(),
        variant,
    }
    .overrides(file)
}

/// `resim phase`'s arguments as a [`phase::Phase`]: the axes parsed, each error naming the
/// flag and its text, and the partition resolved.
fn phase_of(args: &args::PhaseArgs) -> Result<phase::Phase, String> {
    let file = &args.file;
    let axis = |flag: Flag, text: &str| {
        phase::parse_axis_of(flag, text).map_err(|m| flag_error(file, flag, text, &m))
    };
    Ok(phase::Phase {
        x: axis(Flag::X, &args.x)?,
        y: axis(Flag::Y, &args.y)?,
        overrides: args.overrides.overrides(file)?,
        file: file.clone(),
        seeds: args.seeds,
        jobs: args.jobs.map(usize::from),
        partition: resolve_partition(file, args.partition)?,
        out: args.out.clone(),
        control: Default::default(),
    })
}

/// `--partition` as the share this process makes (`auto` from the environment of a batch
/// array task), or the error naming the file.
fn resolve_partition(
    file: &str,
    spec: Option<crate::experiment::PartitionSpec>,
) -> Result<Option<crate::experiment::Partition>, String> {
    spec.map(|p| p.resolve(&|name| std::env::var(name).ok()))
        .transpose()
        .map_err(|m| format!("{file}: {m}"))
}

/// `resim risk`'s arguments as a [`risk::Risk`] and how this process runs it.
fn risk_of(args: &args::RiskArgs) -> Result<(risk::Risk, risk::Flags), String> {
    let file = &args.file;
    if !(args.rel_error > 0.0 && args.rel_error < 1.0) {
        return Err(format!(
            "{file}: --rel-error {}: a ratio above 0 and below 1, e.g. 0.2 for ±20%",
            args.rel_error
        ));
    }
    if args.horizon.is_zero() {
        return Err(format!(
            "{file}: --horizon 0s: give a horizon above 0, e.g. 1h"
        ));
    }
    let method = match args.method {
        args::RiskMethod::Auto => risk::MethodChoice::Auto,
        args::RiskMethod::Plain => risk::MethodChoice::Plain,
        args::RiskMethod::Splitting => risk::MethodChoice::Splitting,
        args::RiskMethod::Excursions => risk::MethodChoice::Excursions,
    };
    let command = risk::Risk {
        file: file.clone(),
        event: args.event.clone(),
        horizon: args.horizon,
        seeds: args.seeds,
        budget: args.budget,
        method,
        importance: args.importance.clone(),
        particles: args.particles as usize,
        replications: args.replications,
        relative_error: args.rel_error,
        overrides: args.overrides.overrides(file)?,
        fingerprint: String::new(),
    };
    let flags = risk::Flags {
        json: args.json,
        out: args.out.clone(),
        jobs: args.jobs.map(usize::from),
        partition: resolve_partition(file, args.partition)?,
    };
    Ok((command, flags))
}

/// `resim tune`'s arguments as a [`tune::Tune`]: the knobs and the stress parsed, each error
/// naming the flag and its text.
fn tune_of(args: &args::TuneArgs) -> Result<tune::Tune, String> {
    let file = &args.file;
    let params = args
        .params
        .iter()
        .map(|text| tune::parse_param(text).map_err(|m| flag_error(file, Flag::Param, text, &m)))
        .collect::<Result<Vec<GridAxis>, String>>()?;
    for (i, a) in params.iter().enumerate() {
        if params[..i].iter().any(|b| b.path == a.path) {
            return Err(format!(
                "{file}: --param {} is given twice; give each knob once",
                a.path
            ));
        }
    }
    let objective = match (&args.minimize, &args.stress) {
        (Some(path), _) => tune::Objective::Minimize(path.clone()),
        (None, Some(text)) => tune::Objective::Margin(
            tune::Stress::parse(text).map_err(|m| flag_error(file, Flag::Stress, text, &m))?,
        ),
        (None, None) => tune::Objective::PassRate,
    };
    Ok(tune::Tune {
        file: file.clone(),
        params,
        seeds: args.seeds,
        budget: args.budget,
        pass_rate: args.pass_rate,
        objective,
        overrides: args.overrides.overrides(file)?,
        margin_seeds: args.margin_seeds,
        margin_seeds_max: args.margin_seeds_max,
        threshold: args.threshold,
        confidence: args.confidence,
        margin_at_least: args
            .margin_at_least
            .as_deref()
            .map(|text| {
                tune::Stress::point(text)
                    .map_err(|m| flag_error(file, Flag::MarginAtLeast, text, &m))
            })
            .transpose()?,
        jobs: args.jobs.map(usize::from),
        out: args.out.clone(),
        svg: args.svg.clone(),
        partition: resolve_partition(file, args.partition)?,
        export: match (&args.export, &args.call) {
            (Some(format), Some(call)) => Some((format.parse()?, call.clone())),
            _ => None,
        },
    })
}

/// `resim list`: each library scenario with its headline.
fn list() -> ExitCode {
    for entry in library::LIBRARY {
        if !emit(&format!(
            "{:<32} {}\n",
            entry.name,
            library::headline(entry)
        )) {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// `resim import`: the scenario on stdout (or in `out`), the mapping table on stderr; exit
/// code 2 on bad input.
fn import_files(args: &ImportArgs, limits: &RunLimits) -> ExitCode {
    let ImportArgs {
        files,
        from,
        into,
        call,
        service,
        table,
        out,
        sampling,
        report,
    } = args;
    let imported = (|| {
        if let Some(r) = sampling
            && !(*r > 0.0 && *r <= 1.0)
        {
            return Err(format!(
                "--sampling: must be the share of requests traced, above 0 and at most 1, got {r}"
            ));
        }
        // A trace file is read from disk as the import goes; a configuration whole.
        let (mut inputs, mut streamed) = (Vec::new(), Vec::new());
        for f in files {
            let traced = match f.as_str() {
                "-" => None,
                _ => import::traces::TraceFile::sniff(f)
                    .map_err(|e| format!("{f}: cannot read: {e}"))?,
            };
            match traced {
                Some(t) => streamed.push(t),
                None => inputs.push(import_input(f)?),
            }
        }
        let from = from.as_deref().map(str::parse).transpose()?;
        let target = import::Target {
            into: into.as_deref().map(into_scenario).transpose()?,
            call: call.clone(),
            service: service.clone(),
            table: if table == "json" {
                import::TableForm::Json
            } else {
                import::TableForm::Text
            },
            sampling: *sampling,
        };
        let imported = import::import_streamed(&inputs, &streamed, from, &target, limits)
            .map_err(|e| e.to_string())?;
        if let Some(path) = report {
            let calibration = imported.calibration.as_ref().ok_or_else(|| {
                format!(
                    "--report {path}: the calibration report is of traces, and no file given is one"
                )
            })?;
            let json = serde_json::to_string_pretty(calibration).map_err(|e| e.to_string())?;
            std::fs::write(path, json + "\n").map_err(|e| format!("{path}: cannot write: {e}"))?;
        }
        Ok(imported)
    })();
    converted(imported.map(|i| (i.table, i.text)), out.as_deref())
}

/// A configuration file of `resim import`, `-` being stdin.
pub(super) fn import_input(file: &str) -> Result<import::Input, String> {
    let text = if file == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("stdin: cannot read: {e}"))
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("{file}: cannot read: {e}"))
    }?;
    Ok(import::Input {
        file: if file == "-" { "stdin" } else { file }.to_string(),
        text,
    })
}

/// The scenario `--into` names: a file, else a library scenario, as `run` reads names.
pub(super) fn into_scenario(name: &str) -> Result<import::Input, String> {
    if !std::path::Path::new(name).exists()
        && let Some(entry) = library::find(name)
    {
        return Ok(import::Input {
            file: entry.name.to_string(),
            text: entry.text.to_string(),
        });
    }
    std::fs::read_to_string(name)
        .map(|text| import::Input {
            file: name.to_string(),
            text,
        })
        .map_err(|e| {
            format!("{name}: cannot read: {e} (--into takes a .ron file or a library scenario's name; `resim list` lists them)")
        })
}

/// What `resim import` or `resim export` made of a configuration: on bad input its error and
/// exit code 2; else its mapping table on stderr and its `text` into the file `out`, or on
/// stdout without one (exit code 2 if the file cannot be written).
pub(super) fn converted(made: Result<(String, String), String>, out: Option<&str>) -> ExitCode {
    let (table, text) = match made {
        Ok(made) => made,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    eprint!("{table}");
    match out {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &text) {
                eprintln!("{path}: cannot write: {e}");
                return ExitCode::from(2);
            }
        }
        None => {
            emit(&text);
        }
    }
    ExitCode::SUCCESS
}

/// `resim check`: the file and each of its variants parse and validate, and so does what the
/// overrides make of it. The scenario as overridden, with the names of the file's variants,
/// and the command-line words of the overrides.
fn check(
    file: &str,
    limits: &RunLimits,
    overrides: &Overrides,
) -> Result<(Scenario, String), ScenarioError> {
    Ok((resolve(file, limits, overrides)?, overrides.command_line()))
}

/// `resim run`: the report on stdout in the chosen format, the series in DIR/series.csv if
/// asked, and exit code 1 with the replay command when an expectation failed.
fn run_file(args: RunArgs, limits: &RunLimits, limit_flags: &str) -> ExitCode {
    let json = args.json.then_some(Format::Json);
    let format = json.or(args.format).unwrap_or(Format::Human);
    let file = args.file.unwrap_or_else(|| DEFAULT_EXAMPLE.to_string());
    let options = RunOptions {
        seed: args.seed,
        duration: args.duration,
        bucket: args.bucket,
        max_events: args.max_events,
        trace_window: args.trace,
        branches: args.branch.clone(),
        ..RunOptions::default()
    };
    let overrides = match args.overrides.overrides(&file) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if args.check_determinism {
        return determinism_file(&file, limits, &overrides, &options);
    }
    let flags = args.spans.as_deref().map(|path| spans::SpansFlags {
        path,
        format: &args.spans_format,
        sample: args.spans_sample,
    });
    let ran = resolve(&file, limits, &overrides)
        .map_err(|e| e.to_string())
        .and_then(|s| spans::run_with_spans(&s, &file, &options, flags));
    let mut report = match ran {
        Ok(o) => o.report,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // The report's replay command carries every flag that shaped the run.
    report.replay_flags = format!(
        "{}{limit_flags}{}",
        report.replay_flags,
        overrides.command_line()
    );
    if let Some(dir) = args.csv
        && let Err(e) = write_csv(&dir, &Format::Csv.render(&report))
    {
        eprintln!("{e:#}");
        return ExitCode::from(2);
    }
    if (args.svg.is_some() || args.html.is_some())
        && let Err(e) = write_charts(&report, args.svg.as_deref(), args.html.as_deref())
    {
        eprintln!("{e:#}");
        return ExitCode::from(2);
    }
    emit(&format.render(&report));
    // The report says why the run stopped early; a report read by a program (CSV, JSON)
    // may not be read by a person, so the memory limit is said on stderr too.
    if let Some(detail) = &report.stop_detail {
        eprintln!("{file}: stopped: {}: {detail}", report.stop_reason);
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "expectation failed for seed {}; replay: {}",
            report.seed,
            report.replay_command(),
        );
        ExitCode::from(1)
    }
}

/// `resim run --check-determinism`: the run twice, compared; exit code 1 when they differ.
fn determinism_file(
    file: &str,
    limits: &RunLimits,
    overrides: &Overrides,
    options: &RunOptions,
) -> ExitCode {
    match resolve(file, limits, overrides).and_then(|s| {
        Ok((
            check_determinism(&s, file, options)?,
            options.seed.unwrap_or(s.seed),
        ))
    }) {
        Ok((verdict, seed)) => {
            emit(&determinism::render(&verdict, seed));
            match verdict {
                Verdict::Same { .. } => ExitCode::SUCCESS,
                Verdict::Different { .. } => ExitCode::from(1),
            }
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

/// `resim shrink`: the summary (and the file, unless `--out`); exit code 2 when nothing
/// fails or the input is bad.
fn shrink_file(args: &ShrinkArgs, limits: &RunLimits) -> ExitCode {
    let options = shrink::ShrinkOptions {
        seed: args.seed,
        expectation: args.expectation.clone(),
        budget: args.budget,
    };
    let shrunk = args
        .overrides
        .overrides(&args.file)
        .and_then(|o| resolve(&args.file, limits, &o).map_err(|e| e.to_string()))
        .and_then(|s| shrink::shrink(&s, &args.file, &options));
    let written = shrunk.and_then(|s| match &args.out {
        Some(path) => std::fs::write(path, &s.text)
            .map(|()| shrink::render(&s, Some(path)))
            .map_err(|e| format!("{path}: cannot write: {e}")),
        None => Ok(shrink::render(&s, None)),
    });
    printed(written)
}

/// `resim why`: the explanation of what failed in one run (or that nothing did), exit code 0;
/// 2 on bad input.
fn why_file(args: &WhyArgs, limits: &RunLimits, limit_flags: &str) -> ExitCode {
    let options = RunOptions {
        seed: args.seed,
        duration: args.duration,
        follow_request: args.request,
        // The explanations name failed requests to follow: only `resim why` collects them.
        failed_examples: args.request.is_none(),
        branches: args.branch.clone(),
        ..RunOptions::default()
    };
    let explained = args.overrides.overrides(&args.file).and_then(|o| {
        let s = resolve(&args.file, limits, &o).map_err(|e| e.to_string())?;
        let out = run(&s, &args.file, &options).map_err(|e| e.to_string())?;
        let mut report = out.report;
        report.replay_flags = format!("{}{limit_flags}{}", report.replay_flags, o.command_line());
        match &out.followed {
            Some(f) => why::render_request(&report, f, &args.file, args.json),
            None => {
                let asked = match (&args.expectation, args.window) {
                    (Some(e), _) => why::Asked::Expectation(e),
                    (None, Some((from, to))) => {
                        why::Asked::Window(from.as_secs_f64(), to.as_secs_f64())
                    }
                    (None, None) => why::Asked::All,
                };
                let examples = &out.failed_examples;
                why::render(&s, &report, asked, examples, &args.file, args.json)
            }
        }
    });
    printed(explained)
}

/// A command's text on stdout, exit code 0; or its error on stderr, exit code 2.
fn printed(made: Result<String, String>) -> ExitCode {
    match made {
        Ok(text) => {
            emit(&text);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

/// Writes `text` to stdout; false when the reader has gone (a closed pipe, as in
/// `resim run x | head -1`), which is not an error: the rest is not wanted, and the command
/// ends quietly. Any other failure to write (a full disk) is said on stderr, exit code 2.
fn emit(text: &str) -> bool {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => false,
        Err(e) => {
            eprintln!("resim: cannot write the output: {e}");
            std::process::exit(2);
        }
    }
}

/// Prints a sweep's or merge's text; exit code 1 when a run failed, 2 on an error.
fn report_outcome(outcome: Result<Outcome, String>) -> ExitCode {
    match outcome {
        Ok(o) => {
            emit(&o.text);
            if o.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

/// The charts of `report` as DIR/NAME.svg, and the HTML page as FILE, as asked.
fn write_charts(report: &Report, svg: Option<&str>, html: Option<&str>) -> anyhow::Result<()> {
    let charts = render::charts(report)?;
    if let Some(dir) = svg {
        std::fs::create_dir_all(dir).with_context(|| format!("{dir}: cannot create directory"))?;
        for c in &charts {
            let path = std::path::Path::new(dir).join(format!("{}.svg", c.name));
            std::fs::write(&path, &c.svg)
                .with_context(|| format!("{}: cannot write", path.display()))?;
        }
    }
    if let Some(file) = html {
        std::fs::write(file, render::html(report, &charts))
            .with_context(|| format!("{file}: cannot write"))?;
    }
    Ok(())
}

fn write_csv(dir: &str, text: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{dir}: cannot create directory"))?;
    let path = std::path::Path::new(dir).join("series.csv");
    std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))
}
