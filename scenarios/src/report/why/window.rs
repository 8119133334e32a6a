//! [`Stretch`]: the report's series summed over the buckets a failure is about, per service
//! and per call site, and over the buckets before it (what the clients did while healthy).
//!
//! A stretch is whole buckets, those that start in `[from, to)`; without an end it stops
//! before the run's last bucket, which holds the requests still in flight when the run
//! stopped (they would count as failures), as the metastability verdict reads it.

use super::super::{CallReport, Report, SeriesRow, round3};
use super::ReasonShare;
use std::collections::BTreeMap;

/// A service over the stretch.
#[derive(Debug, Default, Clone)]
pub(super) struct ServiceSpan {
    /// Attempts arriving.
    pub arrivals: u64,
    /// Attempts answered with success.
    pub ok: u64,
    /// Worker-seconds busy.
    pub busy_worker_s: f64,
    /// Mean busy workers (the buckets' means, averaged).
    pub busy_mean: f64,
    /// Workers of the replicas that are up (the same).
    pub capacity_mean: f64,
    /// The longest queue of one replica.
    pub queue_replica_max: u64,
    /// Per bucket: its start, mean busy workers and workers up.
    pub busy_by_bucket: Vec<(f64, f64, f64)>,
    /// Attempts refused or failed, by reason.
    pub failed_by_reason: BTreeMap<String, u64>,
}

/// A call site over the stretch.
#[derive(Debug, Default, Clone)]
pub(super) struct CallSpan {
    /// Retries scheduled.
    pub retries: u64,
    /// Retries the budget refused.
    pub budget_exhausted: u64,
    /// Attempts started.
    pub attempts: u64,
    /// Attempts the caller stopped waiting for.
    pub timeouts: u64,
}

/// The series over a stretch of the run.
#[derive(Debug, Clone)]
pub(super) struct Stretch {
    /// Start, in seconds (a bucket's start).
    pub from_s: f64,
    /// End, in seconds (a bucket's start, or the run's end).
    pub to_s: f64,
    /// Requests offered in it.
    pub offered: u64,
    /// Of those, the ones that succeeded.
    pub successes: u64,
    /// Attempts the clients started in it.
    pub attempts: u64,
    /// Requests offered before `before_s` (the healthy part of the run), and the attempts
    /// started then.
    pub before: (u64, u64),
    /// Per service, by name.
    pub services: BTreeMap<String, ServiceSpan>,
    /// Per call site, by path.
    pub calls: BTreeMap<String, CallSpan>,
}

impl Stretch {
    /// The buckets of `report` that start in `[from_s, to_s)` (to the run's last bucket,
    /// left out, without `to_s`), and what the clients did in those before `before_s`.
    pub fn of(report: &Report, from_s: f64, to_s: Option<f64>, before_s: f64) -> Stretch {
        let last = report.series.len().saturating_sub(1);
        let rows: Vec<&SeriesRow> = report
            .series
            .iter()
            .enumerate()
            .filter(|(i, r)| r.t_s >= from_s && to_s.map_or(*i < last, |to| r.t_s < to))
            .map(|(_, r)| r)
            .collect();
        let end = rows.last().map_or(from_s, |r| r.t_s + report.bucket_s);
        let mut out = Stretch {
            from_s: round3(from_s),
            to_s: round3(to_s.map_or(end, |to| to.min(report.simulated_s))),
            offered: 0,
            successes: 0,
            attempts: 0,
            before: report
                .series
                .iter()
                .filter(|r| r.t_s < before_s)
                .fold((0, 0), |(o, a), r| (o + r.offered, a + r.attempts)),
            services: BTreeMap::new(),
            calls: BTreeMap::new(),
        };
        for r in &rows {
            out.add(r, report.bucket_s);
        }
        let n = rows.len().max(1) as f64;
        for s in out.services.values_mut() {
            s.busy_mean /= n;
            s.capacity_mean /= n;
        }
        out
    }

    fn add(&mut self, r: &SeriesRow, bucket_s: f64) {
        self.offered += r.offered;
        self.successes += r.successes;
        self.attempts += r.attempts;
        for p in &r.services {
            let s = self.services.entry(p.name.clone()).or_default();
            s.arrivals += p.arrivals;
            s.ok += p.ok;
            s.busy_worker_s += p.busy_workers_mean * bucket_s;
            s.busy_mean += p.busy_workers_mean;
            s.capacity_mean += p.capacity_workers_mean;
            s.queue_replica_max = s.queue_replica_max.max(p.queue_replica_max);
            s.busy_by_bucket
                .push((r.t_s, p.busy_workers_mean, p.capacity_workers_mean));
            for (reason, n) in &p.failed_by_reason {
                *s.failed_by_reason.entry(reason.clone()).or_default() += n;
            }
        }
        for p in &r.calls {
            let c = self.calls.entry(p.path.to_string()).or_default();
            c.retries += p.retries;
            c.budget_exhausted += p.budget_exhausted;
            c.attempts += p.attempts;
            c.timeouts += p.timeouts;
        }
    }

    /// Its length in seconds.
    pub fn seconds(&self) -> f64 {
        self.to_s - self.from_s
    }

    /// Attempts per request offered in it.
    pub fn attempts_per_request(&self) -> Option<f64> {
        (self.offered > 0).then(|| self.attempts as f64 / self.offered as f64)
    }

    /// Attempts per request offered before it.
    pub fn attempts_per_request_before(&self) -> Option<f64> {
        let (offered, attempts) = self.before;
        (offered > 0).then(|| attempts as f64 / offered as f64)
    }

    /// The attempts that failed in it: the timeouts at each call site (`users → api`), and
    /// what each service refused or failed, by reason; the most first.
    pub fn failed_attempts(&self, calls: &[CallReport]) -> Vec<ReasonShare> {
        let mut counts = Vec::new();
        for c in calls {
            if let Some(span) = self.calls.get(&c.path) {
                let at = format!("{} → {}", c.caller, c.target);
                counts.push(("timeout".to_string(), at, span.timeouts));
            }
        }
        for (name, s) in &self.services {
            for (reason, n) in &s.failed_by_reason {
                counts.push((reason.clone(), name.clone(), *n));
            }
        }
        super::shares(counts)
    }
}
