//! [`ExploreData`]: everything the explorer page (`resim explore`) shows of one run, as plain
//! data built from the run's report, its failed examples and the trees of the requests it
//! sampled; and [`page`], the self-contained HTML page that draws one run or two.
//!
//! | module | what |
//! |---|---|
//! | `series` | the report's series as columns: one line of values per figure, by bucket |
//! | `page` | the HTML page: the data as JSON, the stylesheet and the script (files under `assets/`, included at build time) |
//!
//! **Layer rule:** as the rest of the report, this module sees a run only through its report,
//! its failed examples and its followed requests; `experiment::explore::build` runs the
//! scenario and hands them over.
//!
//! # Decisions
//!
//! *Series as columns.* A line is a key (`service/api/queue`), a chart and one value per
//! bucket (`null` where the report has none): a 1-hour run at 1 s buckets is 3,600 numbers a
//! line, where the report's rows would repeat every name in every bucket.
//!
//! *Why, by window, precomputed.* The page cannot run the rules, so it carries
//! [`why::window`] for the run's default windows (each trigger and the recovery after it) and
//! for every window of a grid cutting the run in [`GRID_PARTS`] parts (20 parts, 210 windows:
//! each from one cut to a later one). A zoom snaps to the nearest of them (the smallest
//! distance between the two ends) and the page says which window the findings are for; 20
//! parts keep the snap within 2.5% of the run at each end for a few hundred kilobytes. The
//! server of `explore --serve` can answer the exact window.
//!
//! *Samples.* The requests a bucket lists are the examples the world keeps while it runs: the
//! first [`crate::figures::EXAMPLES_PER_BUCKET`] failed requests of each reason in each bucket
//! and its [`crate::figures::SLOW_PER_BUCKET`] slowest successes. They are chosen by rule, not
//! by chance (no random stream, so none of the run's draws can move), bounded per bucket, and
//! recorded without changing the run: the first failures of a reason are what `resim why`
//! names, and the slowest successes are the ones a reader of a latency chart asks about. The
//! trees of at most [`TREES_MAX`] of them, spread evenly over the run, come from a second run
//! of the same seed that follows those requests; the others list the command that explains
//! them.

mod page;
mod series;

pub use page::page;
pub use series::{ChartSpec, Line};

use super::{Report, StateSpan, round3, why};
use crate::figures::{FailedExample, Followed, SlowExample};
use crate::format::schema::Scenario;
use serde::Serialize;

/// The parts the run is cut into for the grid of precomputed windows.
pub const GRID_PARTS: u32 = 20;

/// The most request trees a page carries (a tree is about a kilobyte of text).
pub const TREES_MAX: usize = 600;

/// One run, as the explorer page shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExploreData {
    /// The scenario's name.
    pub scenario: String,
    /// The file it came from.
    pub file: String,
    /// The seed.
    pub seed: u64,
    /// The run's digest, 16 hex digits.
    pub digest: String,
    /// The variant it ran with, if any.
    pub variant: Option<String>,
    /// The `--set` overrides it ran with, as typed.
    pub sets: Vec<String>,
    /// The command that replays it.
    pub replay: String,
    /// Why it stopped.
    pub stop_reason: String,
    /// Simulated seconds.
    pub simulated_s: f64,
    /// The width of a bucket, in seconds.
    pub bucket_s: f64,
    /// Each bucket's start, in seconds.
    pub t_s: Vec<f64>,
    /// The charts, in the order the page draws them.
    pub charts: Vec<ChartSpec>,
    /// The lines of every chart, by bucket.
    pub lines: Vec<Line>,
    /// What the scrubber marks: faults, breaker transitions, expectations' windows, the
    /// metastability verdict.
    pub marks: Vec<Mark>,
    /// Clients and services, and the calls between them.
    pub topology: Topology,
    /// Why, for the run's default windows (each trigger and the recovery after it, or where
    /// failures concentrate).
    pub why_windows: Vec<why::Why>,
    /// Why, for every window of the grid.
    pub why_grid: Vec<why::Why>,
    /// Sampled failed requests, by bucket.
    pub samples: Vec<Sample>,
    /// The trees of sampled requests, as `resim why --request` prints them.
    pub trees: Vec<Tree>,
}

/// Something the scrubber marks.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Mark {
    /// `fault`, `breaker`, `expectation` or `verdict`.
    pub kind: &'static str,
    /// In words.
    pub label: String,
    /// Start, in seconds.
    pub from_s: f64,
    /// End, in seconds (`null`: an instant, or to the run's end).
    pub to_s: Option<f64>,
    /// For an expectation, whether it held; for the verdict, whether the run recovered.
    pub pass: Option<bool>,
}

/// Clients and services as nodes, call sites as edges.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Topology {
    /// The nodes: clients, then services, in file order.
    pub nodes: Vec<Node>,
    /// One edge per call site.
    pub edges: Vec<Edge>,
}

/// A client or a service.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Node {
    /// Its name.
    pub name: String,
    /// `client` or `service`.
    pub kind: &'static str,
    /// A service's workers over its replicas (0 for a client).
    pub workers: u64,
}

/// A call site: who calls whom.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Edge {
    /// Its path in the file (the key of its lines).
    pub path: String,
    /// The caller.
    pub source: String,
    /// The service called.
    pub target: String,
    /// The states of its breakers over time (one list per breaker).
    pub breakers: Vec<Vec<StateSpan>>,
}

/// A sampled request of a bucket.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Sample {
    /// Its id.
    pub request: u64,
    /// The bucket it was offered in.
    pub bucket: usize,
    /// Why it failed, or `slow`: one of the slowest successes of its bucket.
    pub reason: &'static str,
    /// For a slow success, its latency in milliseconds.
    pub latency_ms: Option<f64>,
}

/// A followed request, as `resim why --request` explains it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Tree {
    /// Its id.
    pub request: u64,
    /// The lines `resim why --request` prints for it: its heading, cause and calls.
    pub lines: Vec<String>,
    /// The command that prints it.
    pub command: String,
}

/// What a run left for the explorer besides its report.
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    /// The failed examples the run kept.
    pub examples: &'a [FailedExample],
    /// The slowest successes of each bucket.
    pub slow: &'a [SlowExample],
    /// The requests a second run of the same seed followed.
    pub followed: &'a [Followed],
}

/// The sampled requests whose trees a page carries: at most [`TREES_MAX`], each kind spread
/// evenly over the run; failed requests first (up to half, or all the room when there are
/// fewer slow ones), the slowest successes in the room left.
pub fn tree_requests(failed: &[FailedExample], slow: &[SlowExample]) -> Vec<u64> {
    let spread = |ids: Vec<u64>, room: usize| -> Vec<u64> {
        let step = ids.len().div_ceil(room.max(1)).max(1);
        ids.into_iter().step_by(step).take(room).collect()
    };
    let failed: Vec<u64> = failed.iter().map(|e| e.request).collect();
    let room = TREES_MAX.saturating_sub(slow.len().min(TREES_MAX / 2));
    let mut out = spread(failed, room);
    let slow: Vec<u64> = slow.iter().map(|e| e.request).collect();
    out.extend(spread(slow, TREES_MAX - out.len()));
    out
}

impl ExploreData {
    /// The explorer's data of the run of `scenario` that `report` describes, with what it
    /// recorded; `variant` and `sets` are what it ran with.
    pub fn new(
        scenario: &Scenario,
        report: &Report,
        recorded: Recorded<'_>,
        variant: Option<String>,
        sets: Vec<String>,
    ) -> ExploreData {
        let (charts, lines) = series::columns(report);
        ExploreData {
            scenario: report.scenario.clone(),
            file: report.file.clone(),
            seed: report.seed,
            digest: report.digest.clone(),
            variant,
            sets,
            replay: report.replay_command(),
            stop_reason: report.stop_reason.clone(),
            simulated_s: report.simulated_s,
            bucket_s: report.bucket_s,
            t_s: report.series.iter().map(|r| r.t_s).collect(),
            charts,
            lines,
            marks: marks(report),
            topology: topology(report),
            why_windows: why::explain(scenario, report, true),
            why_grid: grid(scenario, report),
            samples: samples(recorded),
            trees: trees(report, recorded.followed),
        }
    }
}

/// The failed examples, then the slow ones.
fn samples(recorded: Recorded<'_>) -> Vec<Sample> {
    let failed = recorded.examples.iter().map(|e| Sample {
        request: e.request,
        bucket: e.bucket,
        reason: e.reason.name(),
        latency_ms: None,
    });
    let slow = recorded.slow.iter().map(|e| Sample {
        request: e.request,
        bucket: e.bucket,
        reason: "slow",
        latency_ms: Some(round3(e.latency.as_nanos() as f64 / 1e6)),
    });
    failed.chain(slow).collect()
}

/// Why, for each window of the grid: from each cut to each later one.
fn grid(scenario: &Scenario, report: &Report) -> Vec<why::Why> {
    let cut = |i: u32| report.simulated_s * f64::from(i) / f64::from(GRID_PARTS);
    let mut out = Vec::new();
    for i in 0..GRID_PARTS {
        for j in i + 1..=GRID_PARTS {
            let mut w = why::window(scenario, report, cut(i), cut(j));
            w.window = format!("{:.3}s..{:.3}s", cut(i), cut(j));
            out.push(w);
        }
    }
    out
}

/// The trees of the requests a run followed (those with an id no request has are left out).
fn trees(report: &Report, followed: &[Followed]) -> Vec<Tree> {
    followed
        .iter()
        .filter_map(|f| {
            let why = why::request::explain(f, &report.file).ok()?;
            Some(Tree {
                request: f.request,
                lines: why.lines(),
                command: why::request_command(report, f.request),
            })
        })
        .collect()
}

/// The scrubber's marks: faults, breaker transitions, expectations, the verdict.
fn marks(report: &Report) -> Vec<Mark> {
    let mut out: Vec<Mark> = report
        .timeline
        .iter()
        .map(|w| Mark {
            kind: "fault",
            label: w.label.clone(),
            from_s: w.from_s,
            to_s: w.to_s,
            pass: None,
        })
        .collect();
    for c in &report.calls {
        for b in &c.breakers {
            out.extend(b.transitions.iter().map(|t| Mark {
                kind: "breaker",
                label: format!("{} → {}: {} → {}", c.caller, c.target, t.from, t.to),
                from_s: t.t_s,
                to_s: None,
                pass: None,
            }));
        }
    }
    out.extend(report.expectations.iter().map(|e| Mark {
        kind: "expectation",
        label: format!("{}: {}", e.expectation, e.observed),
        from_s: e.threshold.from_s,
        to_s: e.threshold.to_s,
        pass: Some(e.pass),
    }));
    if let Some(m) = &report.metastability {
        out.push(Mark {
            kind: "verdict",
            label: format!("metastability: {}", m.verdict.replace('_', " ")),
            from_s: m.trigger_end_s,
            to_s: None,
            pass: Some(m.recovered_after_s.is_some()),
        });
    }
    out
}

/// Clients and services, and one edge per call site.
fn topology(report: &Report) -> Topology {
    let clients = report.clients.iter().map(|c| Node {
        name: c.name.clone(),
        kind: "client",
        workers: 0,
    });
    let services = report.services.iter().map(|s| Node {
        name: s.name.clone(),
        kind: "service",
        workers: u64::from(s.replicas) * u64::from(s.workers),
    });
    Topology {
        nodes: clients.chain(services).collect(),
        edges: report
            .calls
            .iter()
            .map(|c| Edge {
                path: c.path.clone(),
                source: c.caller.clone(),
                target: c.target.clone(),
                breakers: c.breakers.iter().map(|b| b.spans.clone()).collect(),
            })
            .collect(),
    }
}
