//! The `resim` command line: run a scenario, check one, sweep, compare, map, shrink, merge, or
//! list the library. [`main`] is the whole binary; `src/main.rs` only calls it.
//!
//! | module | what |
//! |---|---|
//! | [`library`] | the embedded scenario library, and what a name on the command line means: a file, else a library scenario ([`library::resolve`]) |
//!
//! Exit codes: 0 ok, 1 an expectation failed, 2 bad input (the error is one line on stderr).
//! A reader that goes away (`resim list | head -1`) ends the output quietly, with the exit
//! code of what was done so far.
//!
//! **Layer rule:** the command line is the top layer: it may use every other one (the format,
//! runs, reports, experiments) and nothing uses it. It is the only place that reads flags,
//! prints, and decides what a name means; the experiments get its [`library::open`].

pub mod library;

use crate::experiment::command::{
    CompareOutput, Outcome, Sweep, compare_command, merge_files, sweep,
};
use crate::experiment::determinism::{self, Verdict, check_determinism};
use crate::experiment::{GridAxis, Partition, phase, shrink};
use crate::format::error::{ScenarioError, one_line};
use crate::format::limits::{Bytes, Limits};
use crate::format::overrides::{Flag, Override, Overrides};
use crate::format::schema::Scenario;
use crate::report::{Format, Report, render};
use crate::run::{RunOptions, run};
use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use library::{DEFAULT_EXAMPLE, resolve};
use sim_core::{Rate, SimDuration};
use std::process::ExitCode;

/// resim: a deterministic simulator for resilience patterns.
#[derive(Parser)]
#[command(name = "resim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    limits: LimitArgs,
}

/// What validation lets a run use; a scenario over them is refused before it runs.
#[derive(clap::Args)]
struct LimitArgs {
    /// The memory budget of a run, e.g. "8GiB" (default: 4GiB).
    #[arg(long, value_name = "SIZE", global = true)]
    max_memory: Option<Bytes>,
    /// The fastest arrival rate of one client, e.g. "5000000/s" (default: 1000000/s).
    #[arg(long, value_name = "RATE", global = true)]
    max_rate: Option<Rate>,
}

impl LimitArgs {
    /// The flags as command-line words (` --max-memory 1073741824`), exact, for a replay.
    fn command_line(&self) -> String {
        let mut words = String::new();
        if let Some(Bytes(m)) = self.max_memory {
            words.push_str(&format!(" --max-memory {m}"));
        }
        if let Some(r) = self.max_rate {
            words.push_str(&format!(" --max-rate {r}"));
        }
        words
    }

    fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        if let Some(Bytes(m)) = self.max_memory {
            limits.memory_max = m;
        }
        if let Some(r) = self.max_rate {
            limits.rate_max = r;
        }
        limits
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file or a library scenario by name (no file: the built-in example).
    Run(RunArgs),
    /// Run a scenario once per seed of a range (and per grid point), in parallel; say which
    /// runs fail an expectation and give statistics per grid point.
    Sweep(SweepArgs),
    /// Run two scenarios on the same seeds and compare their figures: two files, or one file
    /// and one or two of its variants.
    Compare {
        /// Two files (or library names), or one with `--variant`.
        #[arg(required = true, num_args = 1..=2, value_name = "FILE")]
        files: Vec<String>,
        /// A variant of the file: two to compare them, one to compare it with the file as
        /// written.
        #[arg(long = "variant", value_name = "NAME")]
        variants: Vec<String>,
        /// Change a value on both sides (as for `run`).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
        /// The seeds, e.g. "1..20" (both ends included).
        #[arg(long, value_name = "FROM..TO", value_parser = parse_seeds, default_value = "1..20")]
        seeds: (u64, u64),
        /// Simulated duration, e.g. "120s".
        #[arg(long)]
        duration: Option<SimDuration>,
        /// Runs at once (default: one per core).
        #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
        /// `text` (the table) or `json` (the same figures as one JSON object).
        #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
        format: String,
        /// Also write the charts of the first seed to DIR: goodput and p99 latency of both
        /// sides on the same axes.
        #[arg(long, value_name = "DIR")]
        svg: Option<String>,
        /// Also write one HTML page with the table and those charts.
        #[arg(long, value_name = "FILE")]
        html: Option<String>,
    },
    /// Map where a scenario is stable, metastable or collapsed over two axes of values: each
    /// cell runs the seeds and counts their metastability verdicts.
    Phase(PhaseArgs),
    /// Search for a smaller scenario that still fails the same expectation at a seed: drop
    /// clients, services, calls, layers and faults, shorten the run, lower counts.
    Shrink(ShrinkArgs),
    /// Print the output of a sweep from the `--out` files of all its partitions.
    Merge {
        /// The `--out` files of `resim sweep --partition K/N`, one per partition.
        #[arg(required = true, value_name = "FILE.jsonl")]
        files: Vec<String>,
    },
    /// Validate a scenario and each of its variants without running it (with `--variant` and
    /// `--set`, also what they make).
    Check {
        /// A `.ron` file, or the name of a library scenario.
        file: String,
        #[command(flatten)]
        overrides: OverrideArgs,
    },
    /// List the library scenarios with what each shows.
    List,
}

/// Changes to a scenario before it runs: one of its variants, then `--set` overrides.
#[derive(Args, Default, Clone)]
struct OverrideArgs {
    /// Change a value before the run, e.g. `services.api.workers=32` or `duration=30s` (the
    /// path as errors name it, the value in the file's RON syntax, where a duration or a rate
    /// may go without quotes); `faults[+]=(…)` appends to a list; repeatable, a later one wins.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Apply one of the file's named `variants` (before any --set).
    #[arg(long, value_name = "NAME")]
    variant: Option<String>,
}

impl OverrideArgs {
    /// The overrides, or the one-line error about the first `--set` that is malformed.
    fn overrides(&self, file: &str) -> Result<Overrides, String> {
        Ok(Overrides {
            variant: self.variant.clone(),
            sets: parse_sets(file, &self.sets)?,
        })
    }
}

/// `--set` texts as overrides, or the one-line error about the first malformed one.
fn parse_sets(file: &str, sets: &[String]) -> Result<Vec<Override>, String> {
    sets.iter()
        .map(|text| {
            Override::parse(Flag::Set, text).map_err(|m| flag_error(file, Flag::Set, text, &m))
        })
        .collect()
}

/// An error about a flag: the file, the flag and its text as typed, and what is wrong.
fn flag_error(file: &str, flag: Flag, text: &str, message: &str) -> String {
    format!("{file}: {flag} {}: {message}", one_line(text))
}

/// What `resim sweep` takes.
#[derive(Args)]
struct SweepArgs {
    /// A `.ron` file, or the name of a library scenario.
    file: String,
    /// The seeds, e.g. "1..20" (both ends included).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_seeds)]
    seeds: (u64, u64),
    /// Simulated duration, e.g. "120s".
    #[arg(long)]
    duration: Option<SimDuration>,
    #[command(flatten)]
    overrides: OverrideArgs,
    /// Run every seed for each of these values, e.g. `services.db.workers=16,32`; repeatable
    /// (the grid is every combination).
    #[arg(long, value_name = "PATH=V1,V2,…")]
    grid: Vec<String>,
    /// Runs at once (default: one per core); the output is the same whatever it is.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Also write one JSON line per run to FILE (for `resim merge`, or your own analysis).
    #[arg(long, value_name = "FILE.jsonl")]
    out: Option<String>,
    /// Make only every N-th run, starting at the K-th (K/N, e.g. 1/2), to split a sweep
    /// across machines; `resim merge` joins the parts.
    #[arg(long, value_name = "K/N")]
    partition: Option<Partition>,
}

/// What `resim phase` takes.
#[derive(Args)]
struct PhaseArgs {
    /// A `.ron` file, or the name of a library scenario.
    file: String,
    /// The columns: `PATH=V1,V2,…` or `PATH=START..END:STEP`, e.g.
    /// `clients.users.call.stack[0].max_attempts=1..4:1`.
    #[arg(long, value_name = "PATH=VALUES")]
    x: String,
    /// The rows, as for `--x`.
    #[arg(long, value_name = "PATH=VALUES")]
    y: String,
    /// The seeds of every cell, e.g. "1..5" (both ends included).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_seeds, default_value = "1..5")]
    seeds: (u64, u64),
    /// Runs at once (default: one per core); the map is the same whatever it is.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    #[command(flatten)]
    overrides: OverrideArgs,
    /// Also draw the map as an SVG heat map in FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<String>,
    /// How to print the map.
    #[arg(long, value_enum, default_value = "text")]
    format: PhaseFormat,
}

/// How `resim phase` prints its map.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PhaseFormat {
    /// A table: rows are y values, columns x values.
    Text,
    /// One JSON object with every cell's counts.
    Json,
}

/// What `resim shrink` takes.
#[derive(Args)]
struct ShrinkArgs {
    /// A `.ron` file, or the name of a library scenario.
    file: String,
    /// The seed at which an expectation fails.
    #[arg(long)]
    seed: u64,
    /// Which expectation to keep failing: its index (`2` for `expectations[2]`), its kind
    /// (`GoodputAtMost`) or words of its text in the report (default: the first that fails).
    #[arg(long, value_name = "K|TEXT")]
    expectation: Option<String>,
    /// The most runs the search makes.
    #[arg(long, value_name = "RUNS", default_value_t = shrink::BUDGET_DEFAULT)]
    budget: u64,
    /// Write the smaller scenario to FILE (default: print it after the summary).
    #[arg(long, value_name = "FILE")]
    out: Option<String>,
    #[command(flatten)]
    overrides: OverrideArgs,
}

/// What `resim run` takes; all of it optional, so `resim` alone runs the built-in example.
#[derive(Args, Default)]
struct RunArgs {
    /// A `.ron` file, or the name of a library scenario (see `resim list`).
    file: Option<String>,
    /// The seed (default: the scenario's own).
    #[arg(long)]
    seed: Option<u64>,
    /// Simulated duration, e.g. "120s".
    #[arg(long)]
    duration: Option<SimDuration>,
    /// Report bucket width, e.g. "500ms".
    #[arg(long)]
    bucket: Option<SimDuration>,
    /// The event budget (the run stops and says so when it is spent).
    #[arg(long)]
    max_events: Option<u64>,
    /// Describe every event between two instants, e.g. "10s..10.5s".
    #[arg(long, value_name = "FROM..TO", value_parser = parse_window)]
    trace: Option<(SimDuration, SimDuration)>,
    /// How to print the report.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<Format>,
    /// Print one JSON object instead of the readable report (`--format json`).
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Also write the time series to DIR/series.csv (as `--format csv` prints it).
    #[arg(long, value_name = "DIR")]
    csv: Option<String>,
    /// Also write one SVG chart per figure to DIR (traffic, latency, each service, breakers,
    /// call sites, expectations).
    #[arg(long, value_name = "DIR")]
    svg: Option<String>,
    /// Also write one self-contained HTML page with the report's tables and every chart.
    #[arg(long, value_name = "FILE")]
    html: Option<String>,
    #[command(flatten)]
    overrides: OverrideArgs,
    /// Run twice and compare the digests; on a difference, show the first divergent event
    /// (exit code 1) instead of the report.
    #[arg(long)]
    check_determinism: bool,
}

/// The `resim` binary: parses the command line, runs the command, and gives the exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let limits = cli.limits.limits();
    let command = cli.command.unwrap_or(Command::Run(RunArgs::default()));
    match command {
        Command::List => {
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
        Command::Sweep(args) => {
            let file = args.file.clone();
            let grid: Result<Vec<GridAxis>, String> = args
                .grid
                .iter()
                .map(|text| {
                    GridAxis::parse(Flag::Grid, text)
                        .map_err(|m| flag_error(&file, Flag::Grid, text, &m))
                })
                .collect();
            let command = args.overrides.overrides(&file).and_then(|overrides| {
                Ok(Sweep {
                    file: args.file,
                    seeds: args.seeds,
                    duration: args.duration,
                    overrides,
                    grid: grid?,
                    jobs: args.jobs.map(usize::from),
                    out: args.out,
                    partition: args.partition,
                })
            });
            report_outcome(command.and_then(|c| sweep(&c, &library::open, &limits)))
        }
        Command::Phase(args) => {
            let file = args.file.clone();
            let axis = |flag: Flag, text: &str| {
                phase::parse_axis_of(flag, text).map_err(|m| flag_error(&file, flag, text, &m))
            };
            let command = (|| {
                Ok(phase::Phase {
                    x: axis(Flag::X, &args.x)?,
                    y: axis(Flag::Y, &args.y)?,
                    overrides: args.overrides.overrides(&file)?,
                    file: args.file.clone(),
                    seeds: args.seeds,
                    jobs: args.jobs.map(usize::from),
                })
            })();
            let json = args.format == PhaseFormat::Json;
            report_outcome(command.and_then(|c| {
                phase::phase_command(&c, json, args.svg.as_deref(), &library::open, &limits)
            }))
        }
        Command::Merge { files } => report_outcome(merge_files(&files)),
        Command::Shrink(args) => shrink_file(&args, &limits),
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
    }
}

/// `resim check`: the file and each of its variants parse and validate, and so does what the
/// overrides make of it. The scenario as overridden, with the names of the file's variants,
/// and the command-line words of the overrides.
fn check(
    file: &str,
    limits: &Limits,
    overrides: &Overrides,
) -> Result<(Scenario, String), ScenarioError> {
    Ok((resolve(file, limits, overrides)?, overrides.command_line()))
}

/// `resim run`: the report on stdout in the chosen format, the series in DIR/series.csv if
/// asked, and exit code 1 with the replay command when an expectation failed.
fn run_file(args: RunArgs, limits: &Limits, limit_flags: &str) -> ExitCode {
    let format = if args.json {
        Format::Json
    } else {
        args.format.unwrap_or(Format::Human)
    };
    let file = args.file.unwrap_or_else(|| DEFAULT_EXAMPLE.to_string());
    let options = RunOptions {
        seed: args.seed,
        duration: args.duration,
        bucket: args.bucket,
        max_events: args.max_events,
        trace_capacity: 0,
        trace_window: args.trace,
    };
    let overrides = match args.overrides.overrides(&file) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if args.check_determinism {
        return match resolve(&file, limits, &overrides).and_then(|s| {
            Ok((
                check_determinism(&s, &file, &options)?,
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
        };
    }
    let mut report = match resolve(&file, limits, &overrides).and_then(|s| run(&s, &file, &options))
    {
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

/// `resim shrink`: the summary (and the file, unless `--out`); exit code 2 when nothing
/// fails or the input is bad.
fn shrink_file(args: &ShrinkArgs, limits: &Limits) -> ExitCode {
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
    match written {
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

/// The most seeds one sweep runs.
const SWEEP_SEEDS_MAX: u64 = 10_000;

/// `FROM..TO`, both included.
fn parse_seeds(text: &str) -> Result<(u64, u64), String> {
    let (from, to) = text
        .split_once("..")
        .ok_or_else(|| format!("{text:?}: write the seeds as FROM..TO, e.g. 1..20"))?;
    let parse = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("{t:?} is not a seed (a whole number)"))
    };
    let (from, to) = (parse(from)?, parse(to)?);
    if to < from {
        return Err(format!("{text:?}: the range ends before it starts"));
    }
    if to - from >= SWEEP_SEEDS_MAX {
        return Err(format!(
            "{text:?}: at most {SWEEP_SEEDS_MAX} seeds per sweep"
        ));
    }
    Ok((from, to))
}

/// `FROM..TO`, two durations since the start of the run.
fn parse_window(text: &str) -> Result<(SimDuration, SimDuration), String> {
    let (from, to) = text
        .split_once("..")
        .ok_or_else(|| format!("{text:?}: write the window as FROM..TO, e.g. 10s..10.5s"))?;
    let from: SimDuration = from.parse().map_err(|e| format!("{e}"))?;
    let to: SimDuration = to.parse().map_err(|e| format!("{e}"))?;
    if to < from {
        return Err(format!("{text:?}: the window ends before it starts"));
    }
    Ok((from, to))
}
