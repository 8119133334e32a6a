//! A service's counts and gauges while it runs — arrivals and answers per report bucket,
//! waits, busy workers, queued jobs and the capacity of its replicas up in rotation — and
//! the part of its figures they make when the run ends.
//!
//! The service tells its [`Gauges`] of every change (a worker taken or freed, a queue
//! longer or shorter, a replica down or up); the busy and queue totals are checked against
//! what the replicas hold after every event in debug builds.

use super::buckets::Buckets;
use super::client::bucket_mut;
use super::outcome::Reason;
use crate::figures::{ReasonCounts, ServiceBucket, ServiceCounts};
use sim_core::metrics::{GaugeSeries, LatencyHistogram, PeakSeries};
use sim_core::{SimDuration, SimTime};

/// Per-bucket figures kept while running.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    arrivals: u64,
    ok: u64,
}

/// A service's counts and gauges.
#[derive(Debug, Clone)]
pub struct Gauges {
    counts: ServiceCounts,
    wait: LatencyHistogram,
    /// Attempts that found a free worker (a wait of zero), kept apart from `wait` because
    /// they are most attempts of a healthy service and a count is cheaper than a record.
    waits_zero: u64,
    tallies: Vec<Tally>,
    /// Refusals and failures per bucket, apart from `tallies`: most buckets of most services
    /// have none, and arrivals stay on a small entry.
    failed_series: Vec<ReasonCounts>,
    bucket: SimDuration,
    /// The bucket of an instant, for the counts per bucket.
    buckets: Buckets,
    /// Queued jobs over the replicas.
    queue_series: GaugeSeries,
    /// The longest queue of one replica, per bucket; `None` with one replica slot, whose
    /// queue is the total (so a one-replica service pays nothing for it).
    queue_peaks: Option<PeakSeries>,
    busy_series: GaugeSeries,
    /// Workers of the replicas that are up in rotation: changes only with faults, scaling
    /// and the replicas' lives.
    capacity_series: GaugeSeries,
    busy_total: u32,
    queued_total: u32,
    busy_since: SimTime,
}

impl Gauges {
    /// The gauges of a service with `slots` replica slots whose capacity is `capacity`
    /// workers at time 0, in report buckets of `bucket`.
    pub fn new(bucket: SimDuration, slots: usize, capacity: f64) -> Gauges {
        let mut capacity_series = GaugeSeries::new(bucket);
        capacity_series.set(SimTime::ZERO, capacity);
        Gauges {
            counts: ServiceCounts::default(),
            wait: LatencyHistogram::compact(),
            waits_zero: 0,
            tallies: Vec::new(),
            failed_series: Vec::new(),
            bucket,
            buckets: Buckets::new(bucket),
            queue_series: GaugeSeries::new(bucket),
            queue_peaks: (slots > 1).then(|| PeakSeries::new(bucket, slots)),
            busy_series: GaugeSeries::new(bucket),
            capacity_series,
            busy_total: 0,
            queued_total: 0,
            busy_since: SimTime::ZERO,
        }
    }

    /// The report bucket's width.
    pub fn bucket(&self) -> SimDuration {
        self.bucket
    }

    /// Its counters.
    pub fn counts(&mut self) -> &mut ServiceCounts {
        &mut self.counts
    }

    /// Attempts refused or failed for `reason`, so far.
    pub fn failed(&self, reason: Reason) -> u64 {
        self.counts.failed.get(reason)
    }

    /// Counts an attempt arriving at `now`.
    #[inline]
    pub fn record_arrival(&mut self, now: SimTime) {
        self.counts.arrivals += 1;
        let i = self.buckets.of(now);
        bucket_mut(&mut self.tallies, i).arrivals += 1;
    }

    /// Counts an attempt answered at `now` (a success is counted per bucket too).
    #[inline]
    pub fn record_answer(&mut self, now: SimTime, reason: Option<Reason>) {
        let i = self.buckets.of(now);
        match reason {
            None => {
                self.counts.ok += 1;
                bucket_mut(&mut self.tallies, i).ok += 1;
            }
            Some(r) => {
                self.counts.failed.add(r);
                bucket_mut(&mut self.failed_series, i).add(r);
            }
        }
    }

    /// A worker took a job that waited `sojourn` (zero: it found the worker free).
    pub fn record_wait(&mut self, sojourn: SimDuration) {
        if sojourn.is_zero() {
            self.waits_zero += 1;
        } else {
            self.wait.record(sojourn);
        }
    }

    /// Busy workers integrated over time up to `now`, in worker-nanoseconds.
    pub fn busy_integral(&self, now: SimTime) -> u128 {
        let held = now.saturating_duration_since(self.busy_since).as_nanos();
        u128::from(self.counts.busy_ns) + u128::from(self.busy_total) * u128::from(held)
    }

    /// Busy workers change by `delta` at `now`.
    pub fn busy_change(&mut self, now: SimTime, delta: i32) {
        let held = now.saturating_duration_since(self.busy_since).as_nanos();
        self.counts.busy_ns += u64::from(self.busy_total) * held;
        self.busy_since = now;
        self.busy_total = self
            .busy_total
            .checked_add_signed(delta)
            .expect("busy count");
        self.busy_series.set(now, f64::from(self.busy_total));
    }

    /// Jobs waiting in the replicas' queues.
    pub fn queued(&self) -> u32 {
        self.queued_total
    }

    /// The queue of replica `r`, now `length` long, has just changed by `delta` jobs at
    /// `now`; returns the jobs queued over the replicas.
    #[inline]
    pub fn queue_change(&mut self, now: SimTime, r: usize, length: u64, delta: i32) -> u32 {
        self.queued_total = self
            .queued_total
            .checked_add_signed(delta)
            .expect("queue count");
        if let Some(peaks) = &mut self.queue_peaks {
            peaks.set(now, r, length);
        }
        self.queue_series.set(now, f64::from(self.queued_total));
        self.queued_total
    }

    /// The workers of the replicas up in rotation are `workers` from `now` on.
    pub fn capacity(&mut self, now: SimTime, workers: f64) {
        self.capacity_series.set(now, workers);
    }

    /// Asserts that the gauges of service `name` count what its replicas hold: `busy`
    /// workers and `queued` jobs.
    pub fn check(&self, name: &str, busy: u32, queued: usize) {
        assert_eq!(self.busy_total, busy, "{name}: busy workers gauge");
        assert_eq!(self.queued_total as usize, queued, "{name}: queue gauge");
    }

    /// Closes the gauges at `end`: the counts, the waits and `buckets` report buckets.
    pub fn finish(
        &mut self,
        end: SimTime,
        buckets: usize,
    ) -> (ServiceCounts, LatencyHistogram, Vec<ServiceBucket>) {
        self.busy_change(end, 0);
        let queue = self.queue_series.finish(end);
        let queue_peaks = self.queue_peaks.as_mut().map(|p| p.finish(end));
        let busy = self.busy_series.finish(end);
        let capacity = self.capacity_series.finish(end);
        let mut wait = self.wait.clone();
        wait.record_n(SimDuration::ZERO, self.waits_zero);
        let series = (0..buckets)
            .map(|i| {
                let t = self.tallies.get(i).copied().unwrap_or_default();
                ServiceBucket {
                    arrivals: t.arrivals,
                    ok: t.ok,
                    queue: queue.get(i).copied().unwrap_or_default(),
                    queue_replica_max: match &queue_peaks {
                        Some(peaks) => peaks.get(i).copied().unwrap_or_default(),
                        // One replica: its queue is the total.
                        None => queue.get(i).map_or(0, |q| q.max as u64),
                    },
                    busy: busy.get(i).copied().unwrap_or_default(),
                    capacity: capacity.get(i).copied().unwrap_or_default(),
                    failed: self.failed_series.get(i).copied().unwrap_or_default(),
                }
            })
            .collect();
        (self.counts.clone(), wait, series)
    }
}
