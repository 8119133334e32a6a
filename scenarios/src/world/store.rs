//! A service's keyed store under optimistic concurrency (see [`crate::contention`]): the
//! versions of its rows, the read each working job made, and the store's figures.
//!
//! A job reads when its work starts ([`StoreState::read`]) and writes when its work is done
//! ([`StoreState::write`]); the write commits (the row's version moves on) only if the version
//! is still the one the job read. A job that never writes (lost in a crash, cancelled) leaves
//! its read behind in a secondary map keyed by the job's slot, where the next job of that slot
//! replaces it: nothing grows with the number of requests.

use super::JobKey;
use crate::contention::{KeyDist, Store};
use crate::figures::StoreFigures;
use sim_core::sample::{uniform_below, unit_f64};
use sim_core::{RngStream, Seed};
use slotmap::SecondaryMap;

/// A read in flight: the row and the version it saw.
#[derive(Debug, Clone, Copy)]
pub struct Read {
    row: u32,
    version: u64,
}

/// How a row is picked.
#[derive(Debug)]
enum Picker {
    /// One row: nothing to draw.
    Single,
    /// Uniform over `rows`.
    Uniform { rows: u32 },
    /// Zipf: the cumulative weights of rows 1..=n, normalised to end at 1.
    Zipf { cumulative: Vec<f64> },
}

/// The state of one service's store.
#[derive(Debug)]
pub struct StoreState {
    versions: Vec<u64>,
    reads: SecondaryMap<JobKey, Read>,
    picker: Picker,
    rng: RngStream,
    figures: StoreFigures,
}

impl StoreState {
    /// The store of service `service`, with its rows at version 0.
    pub fn new(service: &str, config: &Store, seed: Seed) -> Self {
        let picker = match (&config.key, config.rows) {
            (_, 1) => Picker::Single,
            (KeyDist::Uniform, rows) => Picker::Uniform { rows },
            (KeyDist::Zipf { exponent }, rows) => {
                let mut total = 0.0;
                let mut cumulative: Vec<f64> = (1..=rows)
                    .map(|i| {
                        total += 1.0 / libm::pow(f64::from(i), *exponent);
                        total
                    })
                    .collect();
                for c in &mut cumulative {
                    *c /= total;
                }
                Picker::Zipf { cumulative }
            }
        };
        StoreState {
            versions: vec![0; config.rows as usize],
            reads: SecondaryMap::new(),
            picker,
            rng: seed.stream(&format!("services/{service}/store")),
            figures: StoreFigures {
                rows: config.rows,
                ..StoreFigures::default()
            },
        }
    }

    /// `job` starts its work: it picks its row and reads its version.
    pub fn read(&mut self, job: JobKey) {
        let row = match &self.picker {
            Picker::Single => 0,
            Picker::Uniform { rows } => uniform_below(&mut self.rng, u64::from(*rows)) as u32,
            Picker::Zipf { cumulative } => {
                let u = unit_f64(&mut self.rng);
                // The first row whose cumulative weight exceeds u; rounding may leave the
                // last weight a hair under 1, so the index is clamped to the last row.
                let i = cumulative.partition_point(|c| *c <= u);
                i.min(cumulative.len() - 1) as u32
            }
        };
        let version = self.versions[row as usize];
        self.reads.insert(job, Read { row, version });
        self.figures.reads += 1;
    }

    /// `job`'s work is done: its write commits (true) or conflicts (false).
    pub fn write(&mut self, job: JobKey) -> bool {
        let read = self
            .reads
            .remove(job)
            .expect("a job writes only after it read, when its work started");
        let current = &mut self.versions[read.row as usize];
        if *current == read.version {
            *current += 1;
            self.figures.commits += 1;
            true
        } else {
            self.figures.conflicts += 1;
            false
        }
    }

    /// Its figures.
    /// The reads in flight, a side table of the jobs (for the memory check).
    pub fn reads(&self) -> &SecondaryMap<JobKey, Read> {
        &self.reads
    }

    pub fn figures(&self) -> StoreFigures {
        let mut f = self.figures.clone();
        f.hottest_row_commits = self.versions.iter().copied().max().unwrap_or(0);
        f
    }
}
