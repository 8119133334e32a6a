//! The `resim` command line: run a scenario, check one, or list the library.
//!
//! Exit codes: 0 ok, 1 an expectation failed, 2 bad input (the error is one line on stderr).
//! A reader that goes away (`resim list | head -1`) ends the output quietly, with the exit
//! code of what was done so far.

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use scenarios::library::{self, DEFAULT_EXAMPLE};
use scenarios::limits::{Bytes, Limits};
use scenarios::load::{load_with, parse_with};
use scenarios::report::Format;
use scenarios::{RunOptions, Scenario, ScenarioError, run};
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
    /// Run a scenario once per seed of a range and say which seeds fail an expectation.
    Sweep {
        /// A `.ron` file, or the name of a library scenario.
        file: String,
        /// The seeds, e.g. "1..20" (both ends included).
        #[arg(long, value_name = "FROM..TO", value_parser = parse_seeds)]
        seeds: (u64, u64),
        /// Simulated duration, e.g. "120s".
        #[arg(long)]
        duration: Option<SimDuration>,
    },
    /// Validate a scenario without running it.
    Check {
        /// A `.ron` file, or the name of a library scenario.
        file: String,
    },
    /// List the library scenarios with what each shows.
    List,
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
}

/// A file on disk, else a library scenario of that name, validated against `limits`.
fn resolve(file: &str, limits: &Limits) -> Result<Scenario, ScenarioError> {
    if !std::path::Path::new(file).exists()
        && let Some(entry) = library::find(file)
    {
        return parse_with(entry.name, entry.text, limits);
    }
    load_with(file, limits)
}

fn main() -> ExitCode {
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
        Command::Sweep {
            file,
            seeds,
            duration,
        } => sweep(&file, seeds, duration, &limits),
        Command::Check { file } => match resolve(&file, &limits) {
            Ok(s) => {
                emit(&format!(
                    "{file}: ok ({}: {} clients, {} services, {} faults, {} expectations)\n",
                    s.name,
                    s.clients.len(),
                    s.services.len(),
                    s.faults.len(),
                    s.expectations.len()
                ));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Command::Run(args) => run_file(args, &limits),
    }
}

/// `resim run`: the report on stdout in the chosen format, the series in DIR/series.csv if
/// asked, and exit code 1 with the replay command when an expectation failed.
fn run_file(args: RunArgs, limits: &Limits) -> ExitCode {
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
    let report = match resolve(&file, limits).and_then(|s| run(&s, &file, &options)) {
        Ok(o) => o.report,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = args.csv
        && let Err(e) = write_csv(&dir, &Format::Csv.render(&report))
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
            report.replay_command()
        );
        ExitCode::from(1)
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

/// One line per seed, then which seeds failed and how to replay the first.
fn sweep(
    file: &str,
    (from, to): (u64, u64),
    duration: Option<SimDuration>,
    limits: &Limits,
) -> ExitCode {
    let scenario = match resolve(file, limits) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut failing = Vec::new();
    for seed in from..=to {
        let options = RunOptions {
            seed: Some(seed),
            duration,
            ..RunOptions::default()
        };
        let report = match run(&scenario, file, &options) {
            Ok(o) => o.report,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let s = &report.summary;
        let ok = if s.offered == 0 {
            1.0
        } else {
            s.successes as f64 / s.offered as f64
        };
        if !report.passed() {
            failing.push(seed);
        }
        let line = format!(
            "seed {seed:<8} {}  digest {}  success {:>5.1}%  p99 {:>8}ms  amplification {:.2}\n",
            if report.passed() { "PASS" } else { "FAIL" },
            report.digest,
            100.0 * ok,
            s.latency_ms
                .as_ref()
                .map_or_else(|| "–".to_string(), |l| format!("{:.1}", l.p99)),
            s.amplification
        );
        if !emit(&line) {
            // Nobody reads the rest: the seeds run so far decide the exit code.
            return if failing.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            };
        }
    }
    let total = to - from + 1;
    if failing.is_empty() {
        emit(&format!("{total} of {total} seeds pass\n"));
        return ExitCode::SUCCESS;
    }
    let list: Vec<String> = failing.iter().map(u64::to_string).collect();
    emit(&format!(
        "{} of {total} seeds pass; failing: {}; replay: resim run {file} --seed {}\n",
        total - failing.len() as u64,
        list.join(", "),
        failing[0]
    ));
    ExitCode::from(1)
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

fn write_csv(dir: &str, text: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{dir}: cannot create directory"))?;
    let path = std::path::Path::new(dir).join("series.csv");
    std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))
}
