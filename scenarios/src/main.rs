//! The `resim` command line: run a scenario, check one, or list the library.
//!
//! Exit codes: 0 ok, 1 an expectation failed, 2 bad input (the error is one line on stderr).

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use scenarios::library::{self, DEFAULT_EXAMPLE};
use scenarios::load::{load, parse};
use scenarios::{RunOptions, Scenario, ScenarioError, run};
use sim_core::SimDuration;
use std::process::ExitCode;

/// resim: a deterministic simulator for resilience patterns.
#[derive(Parser)]
#[command(name = "resim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file or a library scenario by name (no file: the built-in example).
    Run {
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
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
        /// Also write the time series to DIR/series.csv.
        #[arg(long, value_name = "DIR")]
        csv: Option<String>,
    },
    /// Validate a scenario without running it.
    Check {
        /// A `.ron` file, or the name of a library scenario.
        file: String,
    },
    /// List the library scenarios with what each shows.
    List,
}

/// A file on disk, else a library scenario of that name.
fn resolve(file: &str) -> Result<Scenario, ScenarioError> {
    if !std::path::Path::new(file).exists()
        && let Some(entry) = library::find(file)
    {
        return parse(entry.name, entry.text);
    }
    load(file)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Command::Run {
        file: None,
        seed: None,
        duration: None,
        bucket: None,
        max_events: None,
        trace: None,
        json: false,
        csv: None,
    });
    match command {
        Command::List => {
            for entry in library::LIBRARY {
                println!("{:<32} {}", entry.name, library::headline(entry));
            }
            ExitCode::SUCCESS
        }
        Command::Check { file } => match resolve(&file) {
            Ok(s) => {
                println!(
                    "{file}: ok ({}: {} clients, {} services, {} faults, {} expectations)",
                    s.name,
                    s.clients.len(),
                    s.services.len(),
                    s.faults.len(),
                    s.expectations.len()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Command::Run {
            file,
            seed,
            duration,
            bucket,
            max_events,
            trace,
            json,
            csv,
        } => {
            let file = file.unwrap_or_else(|| DEFAULT_EXAMPLE.to_string());
            let options = RunOptions {
                seed,
                duration,
                bucket,
                max_events,
                trace_capacity: 0,
                trace_window: trace,
            };
            let output = match resolve(&file).and_then(|s| run(&s, &file, &options)) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            let report = output.report;
            if let Some(dir) = csv
                && let Err(e) = write_csv(&dir, &report.csv())
            {
                eprintln!("{e:#}");
                return ExitCode::from(2);
            }
            if json {
                match serde_json::to_string(&report) {
                    Ok(text) => println!("{text}"),
                    Err(e) => {
                        eprintln!("cannot render the report as JSON: {e}");
                        return ExitCode::from(2);
                    }
                }
            } else {
                print!("{}", report.human());
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
    }
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
