//! Experiments over many runs: [`Plan`] (grid points × seeds, maybe one partition of them),
//! [`run_plan`] (the runs in parallel, results in a fixed order whatever the number of
//! threads), [`RunRecord`] (one run's figures, a line of `--out FILE.jsonl`), [`render`] (what
//! `resim sweep` prints: per-run lines and per-point statistics) and [`merge`] (partitions
//! back into one sweep). A caller that embeds an experiment (Python) hands it a [`Control`]:
//! a flag that stops it and a [`Progress`] that counts its runs.
//!
//! | module | what |
//! |---|---|
//! | [`command`] | `resim sweep` and `resim merge` as the command line runs them |
//! | [`compare`] | two scenarios on the same seeds, paired differences with t-intervals |
//! | [`determinism`] | `--check-determinism`: a run made twice, the first divergent event |
//! | [`explore`] | `resim explore`: a run, and a second of the same seed following its sampled requests, as the explorer's data |
//! | [`phase`] | `resim phase`: stable, metastable or collapsed over two axes, as a table and an SVG |
//! | [`part`] | the `--out` files of a split phase map or tune: a header naming the experiment and the share, then its runs; checked and joined for `resim merge` |
//! | [`partition`] | `--partition K/N` and `--partition auto`: which share of a sweep's runs this process makes, from the flag or from a batch scheduler's array index |
//! | [`plan`] | grid axes, the runs of a sweep and their stable indices |
//! | [`sweep`] | running a plan, its records, the printed summary, merging |
//! | [`stats`] | Wilson intervals, mean and standard deviation, t-intervals |
//! | [`risk`] | `resim risk`: the probability of an event within a horizon, with its interval, by plain runs or multilevel splitting, and a run that reaches it |
//! | [`shrink`] | `resim shrink`: a smaller scenario that still fails the same expectation |
//! | [`tune`] | `resim tune`: racing candidate settings on common seeds against the expectations, and each finalist's margin to the stress where it breaks |
//!
//! **Layer rule:** experiments use runs, reports and the format; never the world (they read
//! finished reports) or the command line: what a name on a command line means comes in as an
//! [`Opener`].
//!
//! **Architecture Invariant**: an experiment only reads finished reports. Each run is one
//! single-threaded, seeded simulation; threads only decide which runs happen at once, and the
//! records are put in index order before anything is printed or written, so the output of a
//! sweep, a phase map or a tune is the same for any `-j` and for any split into partitions
//! (a split tune makes every run its race could ask for, and `merge` replays the race).

pub mod command;
pub mod compare;
pub mod determinism;
pub mod explore;
pub mod part;
pub mod partition;
pub mod phase;
pub mod plan;
pub mod risk;
pub mod shrink;
pub mod stats;
pub mod sweep;
pub mod tune;

pub use partition::{Partition, PartitionSpec};
pub use plan::{GridAxis, Plan};
pub use sweep::{
    RunRecord, SweepSetup, merge, render, run_plan, run_plan_with, summarise, to_jsonl,
};

use crate::Cancel;
use crate::format::error::ScenarioError;
use crate::format::overrides::Source;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How an experiment reads the scenario a command names: the command line gives its own
/// (a file, else a library scenario of that name), so that what a name means is said in one
/// place and an experiment only reads what it is handed.
pub type Opener<'a> = &'a dyn Fn(&str) -> Result<Source, ScenarioError>;

/// What a caller that embeds an experiment (Python) hands it besides the command: a flag that
/// stops it early, and a count of its runs to show; the command line gives neither, and
/// neither changes a run.
#[derive(Debug, Clone, Default)]
pub struct Control {
    /// Stops the experiment's runs at their next look (a Python caller's Ctrl-C).
    pub cancel: Option<Cancel>,
    /// Counts the runs asked for and the runs done, from the worker threads.
    pub progress: Option<Progress>,
}

impl Control {
    /// Counts `runs` more runs asked for.
    pub fn asked(&self, runs: u64) {
        if let Some(p) = &self.progress {
            p.0[0].fetch_add(runs, Ordering::Relaxed);
        }
    }

    /// Counts one run done.
    pub fn done(&self) {
        if let Some(p) = &self.progress {
            p.0[1].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// How far an experiment has come: runs done and runs asked for so far (a tune asks for more
/// as it goes), counted from the worker threads and read from another (Python's progress
/// bar); clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<[AtomicU64; 2]>);

impl Progress {
    /// Runs done, and runs asked for so far.
    pub fn get(&self) -> (u64, u64) {
        (
            self.0[1].load(Ordering::Relaxed),
            self.0[0].load(Ordering::Relaxed),
        )
    }
}
