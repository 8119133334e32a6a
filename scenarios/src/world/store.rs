//! A service's keyed store under optimistic concurrency (see [`crate::format::schema::contention`]): the
//! versions of its rows, the read each working job made, and the store's figures.
//!
//! A job reads when its work starts ([`StoreState::read`]) and writes when its work is done
//! ([`StoreState::write`]); the write commits (the row's version moves on) only if the version
//! is still the one the job read. The read is the job's: its stage carries it while it works
//! or waits for its row's lock (`job::Stage`), and it goes with the job, so nothing here grows
//! with the number of requests.
//!
//! Under `Locked` the job also takes its row's lock when its work would start
//! ([`StoreState::lock`]): at once if the row is free, else it waits in the row's FIFO queue
//! (holding its worker). The lock is given back when the work ends or the job goes
//! ([`StoreState::unlock`], called wherever a job is removed), and passes to the first
//! waiter, whose work the world then starts. Only locked rows have an entry, so the table
//! grows with the rows in use, not with the rows of the store.

use super::JobKey;
use crate::figures::{LockFigures, StoreFigures};
use crate::format::schema::contention::{KeyDist, Store, StoreOp};
use sim_core::metrics::LatencyHistogram;
use sim_core::sample::{uniform_below, unit_f64};
use sim_core::{RngStream, Seed, SimDuration, SimTime};
use std::collections::{BTreeMap, VecDeque};

/// A job's request for its row's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// It holds the lock.
    Held,
    /// It waits in the row's queue, at most this long.
    Wait(SimDuration),
    /// The row's queue is full: it fails at once.
    Full,
}

/// A locked row: its holder and the jobs waiting for it, with when they started waiting.
#[derive(Debug, Clone)]
struct RowLock {
    holder: JobKey,
    waiters: VecDeque<(JobKey, SimTime)>,
}

/// The row locks of a `Locked` store.
#[derive(Debug, Clone)]
struct Locks {
    wait_timeout: SimDuration,
    queue_max: u32,
    rows: BTreeMap<u32, RowLock>,
    wait: LatencyHistogram,
    figures: LockFigures,
}

/// A read in flight: the row and the version it saw.
#[derive(Debug, Clone, Copy)]
pub struct Read {
    row: u32,
    version: u64,
}

/// How a row is picked.
#[derive(Debug, Clone)]
enum Picker {
    /// One row: nothing to draw.
    Single,
    /// Uniform over `rows`.
    Uniform { rows: u32 },
    /// Zipf: the cumulative weights of rows 1..=n, normalised to end at 1.
    Zipf { cumulative: Vec<f64> },
}

/// The state of one service's store.
#[derive(Debug, Clone)]
pub struct StoreState {
    versions: Vec<u64>,
    picker: Picker,
    rng: RngStream,
    figures: StoreFigures,
    /// Its row locks, if its op is `Locked`.
    locks: Option<Locks>,
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
            picker,
            rng: seed.stream(&format!("services/{service}/store")),
            figures: StoreFigures {
                rows: config.rows,
                ..StoreFigures::default()
            },
            locks: match config.op {
                StoreOp::OccUpdate => None,
                StoreOp::Locked {
                    wait_timeout,
                    queue_max,
                } => Some(Locks {
                    wait_timeout,
                    queue_max,
                    rows: BTreeMap::new(),
                    wait: LatencyHistogram::compact(),
                    figures: LockFigures::default(),
                }),
            },
        }
    }

    /// Gives its row picks fresh randomness from `seed` (a branch's).
    pub fn reseed(&mut self, seed: Seed) {
        self.rng.reseed(seed);
    }

    /// Whether its writers take locks.
    #[inline]
    pub fn locking(&self) -> bool {
        self.locks.is_some()
    }

    /// `job`, which has made `read`, asks for its row's lock.
    pub fn lock(&mut self, job: JobKey, read: Read, now: SimTime) -> Lock {
        let row = read.row;
        let locks = self.locks.as_mut().expect("a locking store");
        let Some(held) = locks.rows.get_mut(&row) else {
            locks.rows.insert(
                row,
                RowLock {
                    holder: job,
                    waiters: VecDeque::new(),
                },
            );
            locks.figures.acquired += 1;
            locks.wait.record(SimDuration::ZERO);
            return Lock::Held;
        };
        if held.waiters.len() as u32 >= locks.queue_max {
            locks.figures.queue_full += 1;
            return Lock::Full;
        }
        held.waiters.push_back((job, now));
        locks.figures.waits += 1;
        let queued = held.waiters.len() as u32;
        locks.figures.queue_max_seen = locks.figures.queue_max_seen.max(queued);
        Lock::Wait(locks.wait_timeout)
    }

    /// `job`, which made `read` (if it read), gives back its row's lock, or leaves the row's
    /// queue (`timed_out`: its wait timed out), if it holds or waits for one; the job the
    /// lock passes to, if any.
    pub fn unlock(
        &mut self,
        job: JobKey,
        read: Option<Read>,
        now: SimTime,
        timed_out: bool,
    ) -> Option<JobKey> {
        let locks = self.locks.as_mut()?;
        let row = read?.row;
        let held = locks.rows.get_mut(&row)?;
        if held.holder != job {
            let k = held.waiters.iter().position(|(w, _)| *w == job)?;
            held.waiters.remove(k);
            if timed_out {
                locks.figures.timeouts += 1;
            }
            return None;
        }
        match held.waiters.pop_front() {
            Some((next, since)) => {
                held.holder = next;
                let waited = now - since;
                locks.figures.acquired += 1;
                locks.figures.wait_total += waited;
                locks.wait.record(waited);
                Some(next)
            }
            None => {
                locks.rows.remove(&row);
                None
            }
        }
    }

    /// Asserts that every lock holder and waiter is a live job (`live`): no lock leaks.
    pub fn check_locks(&self, live: impl Fn(JobKey, bool) -> bool) {
        let Some(locks) = &self.locks else {
            return;
        };
        for (row, l) in &locks.rows {
            assert!(live(l.holder, true), "row {row}: its lock holder is gone");
            for (w, _) in &l.waiters {
                assert!(live(*w, false), "row {row}: a waiter for its lock is gone");
            }
        }
    }

    /// A job starts its work: it picks its row and reads its version.
    pub fn read(&mut self) -> Read {
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
        self.figures.reads += 1;
        Read { row, version }
    }

    /// The work of a job that made `read` is done: its write commits (true) or conflicts
    /// (false). A locked row cannot have moved since its holder read it: the write commits.
    pub fn write(&mut self, read: Read) -> bool {
        if self.locks.is_some() {
            self.versions[read.row as usize] += 1;
            self.figures.commits += 1;
            return true;
        }
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
    pub fn figures(&self) -> StoreFigures {
        let mut f = self.figures.clone();
        f.hottest_row_commits = self.versions.iter().copied().max().unwrap_or(0);
        f.locks = self.locks.as_ref().map(|l| LockFigures {
            wait_p99: (l.wait.count() > 0).then(|| l.wait.quantile(0.99)),
            timeouts: l.figures.timeouts + l.figures.queue_full,
            ..l.figures.clone()
        });
        f
    }
}
