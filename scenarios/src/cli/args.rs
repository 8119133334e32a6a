//! What each `resim` command takes: the clap types of the command line, and the parsers of
//! the values its flags are written in (seeds, windows, `--set`).

use crate::experiment::PartitionSpec;
use crate::experiment::{risk, shrink, tune};
use crate::format::error::one_line;
use crate::format::limits::{Bytes, RunLimits};
use crate::format::overrides::{Flag, Override, Overrides};
use crate::report::Format;
use crate::run::Branch;
use clap::{Args, Parser, Subcommand};
use sim_core::{Rate, SimDuration};

/// resim: a deterministic simulator for resilience patterns.
#[derive(Parser)]
#[command(name = "resim", version, about)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Option<Command>,
    #[command(flatten)]
    pub(super) limits: LimitArgs,
}

/// What validation lets a run use; a scenario over them is refused before it runs.
#[derive(clap::Args)]
pub(super) struct LimitArgs {
    /// The memory budget of a run, e.g. "8GiB" (default: 4GiB).
    #[arg(long, value_name = "SIZE", global = true)]
    pub(super) max_memory: Option<Bytes>,
    /// The fastest arrival rate of one client, e.g. "5000000/s" (default: 1000000/s).
    #[arg(long, value_name = "RATE", global = true)]
    pub(super) max_rate: Option<Rate>,
}

impl LimitArgs {
    /// The flags as command-line words (` --max-memory 1GiB`), exact, for a replay.
    pub(super) fn command_line(&self) -> String {
        let mut words = String::new();
        if let Some(Bytes(m)) = self.max_memory {
            // In the largest binary unit that holds it exactly, as a user would type it.
            let (n, unit) = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
                .into_iter()
                .find(|(size, _)| m > 0 && m.is_multiple_of(*size))
                .map_or((m, ""), |(size, unit)| (m / size, unit));
            words.push_str(&format!(" --max-memory {n}{unit}"));
        }
        if let Some(r) = self.max_rate {
            words.push_str(&format!(" --max-rate {r}"));
        }
        words
    }

    pub(super) fn limits(&self) -> RunLimits {
        let mut limits = RunLimits::default();
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
pub(super) enum Command {
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
    /// Find the settings that meet the scenario's expectations: race the candidate values of
    /// the `--param` knobs on common seeds, put out those that fail, recommend the cheapest
    /// (`--minimize`) or the one farthest from breaking (`--maximize-margin`), and give the
    /// run that decided it.
    Tune(TuneArgs),
    /// Estimate the probability that an event happens within a horizon, with its 95%
    /// interval, down to events too rare for plain runs to show (multilevel splitting), and
    /// give one run that reaches it as a command that replays it.
    Risk(RiskArgs),
    /// Search for a smaller scenario that still fails the same expectation at a seed: drop
    /// clients, services, calls, layers and faults, shorten the run, lower counts.
    Shrink(ShrinkArgs),
    /// Say why a run failed, from its figures: for each expectation that failed (or the one
    /// asked for) and a metastability verdict that is not a recovery, the failure reasons
    /// that dominate, what saturated (workers, queues, pools, limiters) and what held
    /// recovery back (retries, breakers, a retry budget).
    Why(WhyArgs),
    /// Write one self-contained HTML page to explore a run: linked charts (hover, drag to
    /// zoom), a timeline of faults, breakers and expectations, the topology at any instant,
    /// the failed requests of a bucket and their stories, why by window, and with
    /// `--compare` a second run on the same seed overlaid. With `--serve`, what-if on this
    /// machine: a local server (127.0.0.1 only, a random token in the URL it prints) gives
    /// the page with each `--knob` as a control; changing one re-runs the scenario on the same
    /// seed and draws the new run over the previous one; it runs until Ctrl-C. Exit code 0
    /// whatever the run's expectations say; 2 on bad input.
    Explore(ExploreArgs),
    /// Print the output of a sweep, a phase map or a tune from the `--out` files of all its
    /// partitions.
    Merge(MergeArgs),
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
    /// Read production resilience configurations into a scenario: Envoy v3 (YAML or JSON),
    /// Istio DestinationRules and VirtualServices, resilience4j's Spring Boot configuration
    /// (`application.yml` or `.properties`) and gRPC service configs (JSON). Several files
    /// (of one format or several, `-` for stdin) are one system: without `--into` every
    /// upstream becomes a service and every route a call. Every imported value carries a
    /// comment naming its source (file field), and a mapping table on stderr lists each
    /// source field with the scenario path it became, and every field not imported with the
    /// reason.
    Import(ImportArgs),
    /// Write a call's pattern stack, and the settings of the service it calls, in a production
    /// configuration format (the inverse of `import`): Envoy v3 (a cluster and a route), Istio
    /// (a DestinationRule and a VirtualService), resilience4j (`application.yml`) or a gRPC
    /// service config. The document goes to stdout, and a table to stderr of each scenario
    /// path with the field it became, every setting not exported with the reason, and the
    /// placeholders written where the format needs a value the scenario does not have (an
    /// Envoy cluster's endpoints). With `--against ORIGINAL`, the original configuration is
    /// written back with only the fields the scenario changed changed (its comments and order
    /// kept), and the unified diff follows the table on stderr.
    Export(ExportArgs),
}

/// Changes to a scenario before it runs: one of its variants, then `--set` overrides.
#[derive(Args, Default, Clone)]
pub(super) struct OverrideArgs {
    /// Change a value before the run, e.g. `services.api.workers=32` or `duration=30s` (the
    /// path as errors name it, the value in the file's RON syntax, where a duration or a rate
    /// may go without quotes); `faults[+]=(…)` appends to a list; repeatable, a later one wins.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub(super) sets: Vec<String>,
    /// Apply one of the file's named `variants` (before any --set).
    #[arg(long, value_name = "NAME")]
    pub(super) variant: Option<String>,
}

impl OverrideArgs {
    /// The overrides, or the one-line error about the first `--set` that is malformed.
    pub(super) fn overrides(&self, file: &str) -> Result<Overrides, String> {
        Ok(Overrides {
            variant: self.variant.clone(),
            sets: parse_sets(file, &self.sets)?,
        })
    }
}

/// `--set` texts as overrides, or the one-line error about the first malformed one.
pub(super) fn parse_sets(file: &str, sets: &[String]) -> Result<Vec<Override>, String> {
    sets.iter()
        .map(|text| {
            Override::parse(Flag::Set, text).map_err(|m| flag_error(file, Flag::Set, text, &m))
        })
        .collect()
}

/// An error about a flag: the file, the flag and its text as typed, and what is wrong.
pub(super) fn flag_error(file: &str, flag: Flag, text: &str, message: &str) -> String {
    format!("{file}: {flag} {}: {message}", one_line(text))
}

/// What `resim explore` takes.
#[derive(Args)]
pub(super) struct ExploreArgs {
    /// A `.ron` file, or the name of a library scenario.
    pub(super) file: String,
    /// A second file (or library name) to compare with: run on the same seed with the same
    /// `--set`s (not `--variant`) and overlaid, as `--compare` overlays a variant.
    #[arg(value_name = "OTHER", conflicts_with_all = ["compare", "serve"])]
    pub(super) other: Option<String>,
    /// The seed (default: the scenario's own); with `--serve`, of every run.
    #[arg(long)]
    pub(super) seed: Option<u64>,
    /// Simulated duration, e.g. "120s".
    #[arg(long)]
    pub(super) duration: Option<SimDuration>,
    /// The event budget of each run.
    #[arg(long)]
    pub(super) max_events: Option<u64>,
    /// Also run the file with this variant of its `variants` (instead of `--variant`, with
    /// the same `--set`s and seed) and overlay it, with the difference per bucket.
    #[arg(long, value_name = "VARIANT", conflicts_with = "serve")]
    pub(super) compare: Option<String>,
    /// The page to write.
    #[arg(
        short = 'o',
        long = "out",
        value_name = "FILE",
        required_unless_present = "serve",
        conflicts_with = "serve"
    )]
    pub(super) out: Option<String>,
    /// Serve the page from a local server on 127.0.0.1 (never another address), with the
    /// knobs as controls: changing one re-runs the scenario and redraws. Prints the URL,
    /// with its token; a request without the token, from another site (`Origin`) or to
    /// another host name (`Host`) is refused.
    #[arg(long)]
    pub(super) serve: bool,
    /// The port to listen on (default: a free one, printed).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "serve")]
    pub(super) port: u16,
    /// A control on the page: a `--set` path and the values it offers, `PATH=V1,V2,…` (a
    /// list) or `PATH=START..END[:STEP]` (a slider; step 1 by default), e.g.
    /// `services.api.workers=8..64:8`; repeatable. Every value is checked as `--set` checks
    /// it, when the server starts and when the page sends it.
    #[arg(long = "knob", value_name = "PATH=VALUES", requires = "serve")]
    pub(super) knobs: Vec<String>,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
}

/// What `resim sweep` takes.
#[derive(Args)]
pub(super) struct SweepArgs {
    /// A `.ron` file, or the name of a library scenario.
    pub(super) file: String,
    /// The seeds, e.g. "1..20" (both ends included).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_seeds)]
    pub(super) seeds: (u64, u64),
    /// Simulated duration, e.g. "120s".
    #[arg(long)]
    pub(super) duration: Option<SimDuration>,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
    /// Run every seed for each of these values, e.g. `services.db.workers=16,32`; repeatable
    /// (the grid is every combination).
    #[arg(long, value_name = "PATH=V1,V2,…")]
    pub(super) grid: Vec<String>,
    /// Runs at once (default: one per core); the output is the same whatever it is.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub(super) jobs: Option<u16>,
    /// Also write one JSON line per run to FILE (for `resim merge`, or your own analysis).
    #[arg(long, value_name = "FILE.jsonl")]
    pub(super) out: Option<String>,
    /// Make only every N-th run, starting at the K-th (K/N, e.g. 1/2), to split a sweep
    /// across machines; `resim merge` joins the parts. `auto` (or `auto/N`) takes K and N
    /// from a Slurm, Kubernetes Indexed Job or AWS Batch array task's environment.
    #[arg(long, value_name = "K/N|auto[/N]")]
    pub(super) partition: Option<PartitionSpec>,
}

/// What `resim phase` takes.
#[derive(Args)]
pub(super) struct PhaseArgs {
    /// A `.ron` file, or the name of a library scenario.
    pub(super) file: String,
    /// The columns: `PATH=V1,V2,…` or `PATH=START..END:STEP`, e.g.
    /// `clients.users.call.stack[0].max_attempts=1..4:1`.
    #[arg(long, value_name = "PATH=VALUES")]
    pub(super) x: String,
    /// The rows, as for `--x`.
    #[arg(long, value_name = "PATH=VALUES")]
    pub(super) y: String,
    /// The seeds of every cell, e.g. "1..5" (both ends included).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_seeds, default_value = "1..5")]
    pub(super) seeds: (u64, u64),
    /// Runs at once (default: one per core); the map is the same whatever it is.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub(super) jobs: Option<u16>,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
    /// Also draw the map as an SVG heat map in FILE.
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<String>,
    /// How to print the map.
    #[arg(long, value_enum, default_value = "text")]
    pub(super) format: PhaseFormat,
    /// Also write one JSON line per run to FILE, after a first line that names the map: a
    /// part for `resim merge`.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(super) out: Option<String>,
    /// Make only every N-th run, starting at the K-th (K/N), into `--out`, to split a map
    /// across machines; `resim merge` joins the parts into the map. `auto` (or `auto/N`) takes
    /// K and N from a Slurm, Kubernetes Indexed Job or AWS Batch array task's environment.
    #[arg(long, value_name = "K/N|auto[/N]")]
    pub(super) partition: Option<PartitionSpec>,
}

/// What `resim merge` takes.
#[derive(Args)]
pub(super) struct MergeArgs {
    /// The `--out` files of `resim sweep`, `phase` or `tune` with `--partition K/N`, one per
    /// partition.
    #[arg(required = true, value_name = "FILE.jsonl")]
    pub(super) files: Vec<String>,
    /// How to print a phase map (as `resim phase --format`).
    #[arg(long, value_enum, default_value = "text")]
    pub(super) format: PhaseFormat,
    /// Also draw a phase map as an SVG heat map, or a tune's margins, in FILE (as `resim phase
    /// --svg` and `resim tune --svg`).
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<String>,
}

/// What `resim tune` takes.
#[derive(Args)]
#[command(group(clap::ArgGroup::new("margin").args(["maximize_margin", "margin_at_least"])))]
pub(super) struct TuneArgs {
    /// A `.ron` file, or the name of a library scenario.
    pub(super) file: String,
    /// A knob and its candidate values: `PATH=V1,V2,…` (as for `sweep --grid`) or
    /// `PATH=START..END[:STEP]`, e.g. `services.api.workers=1..8`; repeatable (the candidates
    /// are every combination).
    #[arg(long = "param", value_name = "PATH=VALUES", required = true)]
    pub(super) params: Vec<String>,
    /// The seeds the race may use, e.g. "1..100" (both ends included).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_seeds, default_value = "1..40")]
    pub(super) seeds: (u64, u64),
    /// The most runs the race makes (default: every seed for every candidate).
    #[arg(long, value_name = "RUNS")]
    pub(super) budget: Option<u64>,
    /// Recommend the least value of this `--param` path among the candidates that meet the
    /// requirement, e.g. `services.api.workers`.
    #[arg(long, value_name = "PATH", conflicts_with = "maximize_margin")]
    pub(super) minimize: Option<String>,
    /// With `--minimize`: only among those shown to hold this one stress level (P(metastable)
    /// and P(an expectation fails) at most `--threshold`), e.g. `load=1.5` or
    /// `clients.users.load.rate.base=1500/s`.
    #[arg(long, value_name = "PATH=VALUE", requires = "minimize")]
    pub(super) margin_at_least: Option<String>,
    /// Recommend the finalist that takes the most `--stress` before it breaks.
    #[arg(long, requires = "stress")]
    pub(super) maximize_margin: bool,
    /// The stress for `--maximize-margin`: `PATH=START..END[:STEP]`, e.g.
    /// `clients.users.load.rate.peak=1600/s..4000/s:100`.
    #[arg(
        long,
        value_name = "PATH=START..END[:STEP]",
        requires = "maximize_margin"
    )]
    pub(super) stress: Option<String>,
    /// The share of seeds that must pass (default 1: every seed); below 1, judged with the
    /// 95% Wilson interval.
    #[arg(long, value_name = "R", default_value_t = 1.0)]
    pub(super) pass_rate: f64,
    /// Runs at once (default: one per core); the answer is the same whatever it is.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub(super) jobs: Option<u16>,
    /// The first batch of seeds of each stress level, from the first of `--seeds`; more follow
    /// (doubling) while a level's verdict is undecided.
    #[arg(long, value_name = "N", default_value_t = tune::margin::MARGIN_SEEDS, value_parser = clap::value_parser!(u64).range(1..), requires = "margin")]
    pub(super) margin_seeds: u64,
    /// The most seeds a stress level runs.
    #[arg(long, value_name = "N", default_value_t = tune::margin::MARGIN_SEEDS_MAX, value_parser = clap::value_parser!(u64).range(1..100_000), requires = "margin")]
    pub(super) margin_seeds_max: u64,
    /// The most P(metastable), and P(an expectation fails), a stress level may have to hold.
    #[arg(long, value_name = "P", default_value_t = tune::margin::THRESHOLD, requires = "margin")]
    pub(super) threshold: f64,
    /// The confidence of each level's verdicts (exact bounds, shared over the looks).
    #[arg(long, value_name = "C", default_value_t = tune::margin::CONFIDENCE, requires = "margin")]
    pub(super) confidence: f64,
    /// Also write one JSON line per run to FILE; with `--partition`, the share's runs as a part
    /// for `resim merge`.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(super) out: Option<String>,
    /// Make only every N-th run of every run the race and the margins could ask for, starting
    /// at the K-th (K/N), into `--out`, to split a tune across machines; `resim merge` replays
    /// the race on the parts and prints the answer. `auto` (or `auto/N`) takes K and N from a
    /// Slurm, Kubernetes Indexed Job or AWS Batch array task's environment.
    #[arg(long, value_name = "K/N|auto[/N]")]
    pub(super) partition: Option<PartitionSpec>,
    /// Also draw the finalists' margins in FILE, like the phase map (with
    /// `--maximize-margin`).
    #[arg(long, value_name = "FILE", requires = "maximize_margin")]
    pub(super) svg: Option<String>,
    /// After the recommendation, print the recommended call stack in this format (as
    /// `resim export` writes it), for the call `--call` names.
    #[arg(long, value_name = "FORMAT", requires = "call", value_parser = ["envoy", "istio", "resilience4j", "grpc"])]
    pub(super) export: Option<String>,
    /// The call `--export` writes, e.g. `services.api.calls[0]`.
    #[arg(long, value_name = "PATH", requires = "export")]
    pub(super) call: Option<String>,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
}

/// What `resim risk` takes.
#[derive(Args)]
pub(super) struct RiskArgs {
    /// A `.ron` file, or the name of a library scenario.
    pub(super) file: String,
    /// The event: `REASON:SERVICE` or `REASON:CLIENT` (the first failure for that reason
    /// there, e.g. `queue_full:api`, `timeout:users`), `queue:SERVICE>=DEPTH`,
    /// `expectation:N` (the file's `expectations[N]` failing) or `metastable` (the
    /// metastability verdict not a recovery).
    #[arg(long, value_name = "EVENT")]
    pub(super) event: String,
    /// How long after the start the event must happen, e.g. `24h` (the file's timeline as
    /// written, up to it).
    #[arg(long, value_name = "DURATION")]
    pub(super) horizon: SimDuration,
    /// The seeds, from the first: plain runs use them in order, splitting's runs derive from
    /// the first.
    #[arg(long, value_name = "FROM..TO", value_parser = parse_risk_seeds, default_value = "1..1000000")]
    pub(super) seeds: (u64, u64),
    /// What may be simulated: events (`2e8`, `2e8events`) or runs (`500runs`).
    #[arg(long, value_name = "EVENTS|RUNS", default_value = "1e8")]
    pub(super) budget: risk::Budget,
    /// `auto` (plain runs where they reach --rel-error within the budget, else splitting),
    /// `plain`, `splitting` (whole runs) or `excursions` (from the basin of a steady state).
    #[arg(long, value_enum, default_value = "auto")]
    pub(super) method: RiskMethod,
    /// The importance function splitting follows: `queue:SERVICE` or `queued` (default:
    /// the event's service's queue; `queued` for a client's failure or an event judged on
    /// the whole run).
    #[arg(long, value_name = "FUNCTION")]
    pub(super) importance: Option<String>,
    /// Trajectories per replication of splitting.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub(super) particles: u64,
    /// Independent replications of splitting (their spread is the interval).
    #[arg(long, value_name = "R", default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub(super) replications: u64,
    /// The relative error (95% half width over the estimate) plain runs must reach within
    /// the budget to be chosen.
    #[arg(long, value_name = "E", default_value_t = 0.2)]
    pub(super) rel_error: f64,
    /// Runs at once (default: one per core); the estimate is the same whatever it is.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub(super) jobs: Option<u16>,
    /// Print one JSON object instead of the text.
    #[arg(long)]
    pub(super) json: bool,
    /// Also write every plain run or replication to FILE (a part that `resim merge` reads);
    /// with `--partition`, this share's.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(super) out: Option<String>,
    /// Make only every N-th plain run or replication, from the K-th (K/N), into `--out`;
    /// `resim merge` gives the estimate of all the parts. `auto` (or `auto/N`) reads K and N
    /// from a batch scheduler's array task.
    #[arg(long, value_name = "K/N|auto[/N]", requires = "out")]
    pub(super) partition: Option<PartitionSpec>,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
}

/// `resim risk --method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum RiskMethod {
    /// Plain runs where they reach the relative error within the budget, else splitting.
    Auto,
    /// Plain runs.
    Plain,
    /// Splitting whole runs.
    Splitting,
    /// Splitting excursions from the basin of a steady state.
    Excursions,
}

/// How `resim phase` prints its map.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum PhaseFormat {
    /// A table: rows are y values, columns x values.
    Text,
    /// One JSON object with every cell's counts.
    Json,
}

/// What `resim shrink` takes.
#[derive(Args)]
pub(super) struct ShrinkArgs {
    /// A `.ron` file, or the name of a library scenario.
    pub(super) file: String,
    /// The seed at which an expectation fails.
    #[arg(long)]
    pub(super) seed: u64,
    /// Which expectation to keep failing: its index (`2` for `expectations[2]`), its kind
    /// (`GoodputAtMost`) or words of its text in the report (default: the first that fails).
    #[arg(long, value_name = "K|TEXT")]
    pub(super) expectation: Option<String>,
    /// The most runs the search makes.
    #[arg(long, value_name = "RUNS", default_value_t = shrink::BUDGET_DEFAULT)]
    pub(super) budget: u64,
    /// Write the smaller scenario to FILE (default: print it after the summary).
    #[arg(long, value_name = "FILE")]
    pub(super) out: Option<String>,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
}

/// What `resim why` takes.
#[derive(Args)]
pub(super) struct WhyArgs {
    /// A `.ron` file, or the name of a library scenario.
    pub(super) file: String,
    /// The seed of the run to explain (default: the scenario's own).
    #[arg(long)]
    pub(super) seed: Option<u64>,
    /// Explain this expectation only: its index (`2` for `expectations[2]`), its kind
    /// (`GoodputAtLeast`) or words of its text in the report (default: everything that failed).
    #[arg(long, value_name = "K|TEXT")]
    pub(super) expectation: Option<String>,
    /// Follow one request instead: its id (`request #N` in a trace, or an example `resim why`
    /// names); says every call and attempt made for it, and the cause of its outcome.
    #[arg(long, value_name = "ID", conflicts_with = "expectation")]
    pub(super) request: Option<u64>,
    /// Explain one window of the run, e.g. "20s..32s": what failed in it and why, from what
    /// happened in it (default: each trigger of the file and the recovery after it, or where
    /// the failures concentrate).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_window, conflicts_with_all = ["expectation", "request"])]
    pub(super) window: Option<(SimDuration, SimDuration)>,
    /// Print one JSON object instead of the text.
    #[arg(long)]
    pub(super) json: bool,
    /// Simulated duration, e.g. "120s".
    #[arg(long)]
    pub(super) duration: Option<SimDuration>,
    /// Replays a branched path, as `resim run` does.
    #[arg(long, value_name = "AT:LEVEL:INDEX")]
    pub(super) branch: Vec<Branch>,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
}

/// What `resim run` takes; all of it optional, so `resim` alone runs the built-in example.
#[derive(Args, Default)]
pub(super) struct RunArgs {
    /// A `.ron` file, or the name of a library scenario (see `resim list`).
    pub(super) file: Option<String>,
    /// The seed (default: the scenario's own).
    #[arg(long)]
    pub(super) seed: Option<u64>,
    /// Simulated duration, e.g. "120s".
    #[arg(long)]
    pub(super) duration: Option<SimDuration>,
    /// Report bucket width, e.g. "500ms".
    #[arg(long)]
    pub(super) bucket: Option<SimDuration>,
    /// The event budget (the run stops and says so when it is spent).
    #[arg(long)]
    pub(super) max_events: Option<u64>,
    /// After AT events, give every random stream fresh randomness from the seed of branch
    /// INDEX at level LEVEL (derived from the run seed): replays a path that `resim risk`
    /// found; repeatable, in the order of AT.
    #[arg(long, value_name = "AT:LEVEL:INDEX")]
    pub(super) branch: Vec<Branch>,
    /// Describe every event between two instants, e.g. "10s..10.5s".
    #[arg(long, value_name = "FROM..TO", value_parser = parse_window)]
    pub(super) trace: Option<(SimDuration, SimDuration)>,
    /// How to print the report.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub(super) format: Option<Format>,
    /// Print one JSON object instead of the readable report (`--format json`).
    #[arg(long, conflicts_with = "format")]
    pub(super) json: bool,
    /// Also write the time series to DIR/series.csv (as `--format csv` prints it).
    #[arg(long, value_name = "DIR")]
    pub(super) csv: Option<String>,
    /// Also write one SVG chart per figure to DIR (traffic, latency, each service, breakers,
    /// call sites, expectations).
    #[arg(long, value_name = "DIR")]
    pub(super) svg: Option<String>,
    /// Also write one self-contained HTML page with the report's tables and every chart.
    #[arg(long, value_name = "FILE")]
    pub(super) html: Option<String>,
    /// Also write the simulated requests as traces to FILE: a span per request, call,
    /// attempt and job, written as each request ends (the run is the same: same digest).
    #[arg(long, value_name = "FILE", conflicts_with = "check_determinism")]
    pub(super) spans: Option<String>,
    /// The format of `--spans`: OTLP JSON lines (the OpenTelemetry Collector's file
    /// exporter), Jaeger JSON (the UI's upload), Zipkin v2 JSON, or Perfetto (Chrome trace
    /// events, for ui.perfetto.dev).
    #[arg(long, value_name = "FORMAT", value_parser = ["otlp", "jaeger", "zipkin", "perfetto"], default_value = "otlp", requires = "spans")]
    pub(super) spans_format: String,
    /// The share of the requests `--spans` writes, from 0 to 1, chosen by their trace ids
    /// (whole requests, the same ones for the same seed).
    #[arg(long, value_name = "RATIO", value_parser = parse_ratio, default_value = "1", requires = "spans")]
    pub(super) spans_sample: f64,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
    /// Run twice and compare the digests; on a difference, show the first divergent event
    /// (exit code 1) instead of the report.
    #[arg(long)]
    pub(super) check_determinism: bool,
}

/// A ratio from 0 to 1.
fn parse_ratio(text: &str) -> Result<f64, String> {
    let usage = "write a ratio from 0 to 1, e.g. 0.1 for a tenth of the requests";
    match text.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        Ok(_) => Err(format!("{text:?} is not between 0 and 1; {usage}")),
        Err(_) => Err(format!("{text:?} is not a number; {usage}")),
    }
}

/// The most seeds one sweep runs.
const SWEEP_SEEDS_MAX: u64 = 10_000;

/// `FROM..TO`, both included.
fn parse_seeds(text: &str) -> Result<(u64, u64), String> {
    seed_range(text, SWEEP_SEEDS_MAX, "per sweep")
}

/// `FROM..TO` for `resim risk`, whose plain runs may be many more than a sweep's; its
/// splitting derives seeds past the range's first, so the seeds stay far from `u64::MAX`.
fn parse_risk_seeds(text: &str) -> Result<(u64, u64), String> {
    let range = seed_range(text, risk::SEEDS_MAX, "per estimate")?;
    if range.1 > u64::MAX / 2 {
        return Err(format!("{text:?}: seeds up to {} only", u64::MAX / 2));
    }
    Ok(range)
}

/// `FROM..TO`, both ends included, at most `max` seeds.
fn seed_range(text: &str, max: u64, per: &str) -> Result<(u64, u64), String> {
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
    if to - from >= max {
        return Err(format!("{text:?}: at most {max} seeds {per}"));
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

/// What `resim import` takes.
#[derive(Args)]
pub(super) struct ImportArgs {
    /// The configuration files, read together as one system: Envoy (`.yaml`, `.json`),
    /// Istio (`.yaml`, several objects a file), resilience4j (`application.yml`,
    /// `application.properties`; a `.properties` file over a YAML one, as Spring reads them),
    /// gRPC service configs (`.json`); traces (OTLP JSON as the Collector's file exporter
    /// writes it, Jaeger's JSON, Zipkin v2 JSON), whose services and calls make the topology
    /// the configurations' policies join; `-` reads stdin.
    #[arg(required = true, value_name = "FILE")]
    pub(super) files: Vec<String>,
    /// The share of requests the traces kept (0–1), where their spans do not say it: arrival
    /// rates are divided by it.
    #[arg(long, value_name = "RATIO")]
    pub(super) sampling: Option<f64>,
    /// Write the calibration report of the traces (span counts per edge, unpaired spans, each
    /// distribution's fit) to this JSON file.
    #[arg(long, value_name = "FILE.json")]
    pub(super) report: Option<String>,
    /// The format of the files (default: recognised from each one's content).
    #[arg(long, value_name = "FORMAT", value_parser = ["envoy", "istio", "resilience4j", "grpc"])]
    pub(super) from: Option<String>,
    /// An existing scenario (a `.ron` file, or the name of a library scenario) to write one
    /// imported call stack and its target's settings into (default: write a new scenario).
    #[arg(long, value_name = "SCENARIO")]
    pub(super) into: Option<String>,
    /// The call of the `--into` scenario that the configuration configures, e.g.
    /// `services.api.calls[0]` or `clients.users.call`.
    #[arg(long, value_name = "PATH")]
    pub(super) call: Option<String>,
    /// The upstream of the configuration (an Envoy cluster, an Istio host, a resilience4j
    /// instance, a gRPC service) that configures `--call` (default: the one named as the
    /// call's target), e.g. `shop.Db` or `reviews.prod.svc.cluster.local/v2`.
    #[arg(long, value_name = "NAME")]
    pub(super) service: Option<String>,
    /// How the mapping table on stderr is written: `text` for people, `json` for tools.
    #[arg(long, value_name = "FORM", value_parser = ["text", "json"], default_value = "text")]
    pub(super) table: String,
    /// Write the scenario to this file instead of stdout.
    #[arg(long, value_name = "NEW.ron")]
    pub(super) out: Option<String>,
}

/// What `resim export` takes.
#[derive(Args)]
pub(super) struct ExportArgs {
    /// A `.ron` file, or the name of a library scenario.
    pub(super) file: String,
    /// The call to export, e.g. `services.api.calls[0]` or `clients.users.call`; or a
    /// service, `services.api`, to export every call it makes at once.
    #[arg(long, value_name = "PATH")]
    pub(super) call: String,
    /// The format to write.
    #[arg(long, value_name = "FORMAT", value_parser = ["envoy", "istio", "resilience4j", "grpc"])]
    pub(super) to: String,
    /// The upstream's name in the configuration (the Envoy cluster, the Istio host, the
    /// resilience4j instance, the gRPC service; default: the call's target); `HOST/SUBSET` is
    /// an Istio subset, `SERVICE/METHOD` a gRPC method.
    #[arg(long, value_name = "NAME")]
    pub(super) service: Option<String>,
    /// The configuration the call's configuration is in today, one file or several (`--against
    /// A.yaml B.yaml`, or `--against` repeated; read together as `import` reads them): write
    /// it back with only the fields the scenario changed changed, in its own text (its
    /// comments, order and formatting kept), and print the unified diff on stderr. Several
    /// files need `--out DIR`. A change no object of the files holds (a host's
    /// DestinationRule when only its VirtualServices are given) is listed under `not written
    /// back`, and the command exits 1 after writing the rest. Without `--against`, complete
    /// objects are written, with placeholders (said so in the table) where the scenario has no
    /// value.
    #[arg(long, value_name = "ORIGINAL", num_args = 1..)]
    pub(super) against: Vec<String>,
    /// Write the configuration to this file instead of stdout; with several `--against`
    /// files, a directory to write each of them into, under its own name (a file no change
    /// reaches is written as it was, byte for byte).
    #[arg(long, value_name = "FILE|DIR")]
    pub(super) out: Option<String>,
    #[command(flatten)]
    pub(super) overrides: OverrideArgs,
}
