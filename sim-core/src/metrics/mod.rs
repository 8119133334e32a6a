//! Metric primitives for models: [`Counter`], [`LatencyHistogram`] (HdrHistogram),
//! and time-bucketed series ([`CountSeries`], [`GaugeSeries`]).
//!
//! Metrics observe a run; they never feed back into event order, so the floats they hold
//! for reporting do not touch determinism. Every figure is still a pure function of the
//! history, so two runs with the same digest report the same numbers.

use crate::time::{SimDuration, SimTime};

mod latency;

pub use latency::{FEW_COMPACT, FEW_PRECISE, LATENCY_MAX, LatencyHistogram};

/// A monotonic count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Counter(u64);

impl Counter {
    /// Adds one.
    #[inline]
    pub fn inc(&mut self) {
        self.0 += 1;
    }

    /// Adds `n`.
    #[inline]
    pub fn add(&mut self, n: u64) {
        self.0 += n;
    }

    /// The count.
    #[inline]
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Bucket index of `t` for buckets of `width`, starting at zero.
fn bucket_of(t: SimTime, width: SimDuration) -> usize {
    (t.as_nanos() / width.as_nanos()) as usize
}

/// Counts per time bucket (arrivals per second, errors per bucket, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct CountSeries {
    width: SimDuration,
    counts: Vec<u64>,
}

impl CountSeries {
    /// An empty series with buckets of `width` (must be positive).
    pub fn new(width: SimDuration) -> Self {
        assert!(!width.is_zero(), "series bucket width must be positive");
        CountSeries {
            width,
            counts: Vec::new(),
        }
    }

    /// Adds `n` to the bucket that holds `now`.
    #[inline]
    pub fn add(&mut self, now: SimTime, n: u64) {
        let i = bucket_of(now, self.width);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += n;
    }

    /// The bucket width.
    pub fn width(&self) -> SimDuration {
        self.width
    }

    /// Counts per bucket, from time zero; buckets after the last event are absent.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The count in bucket `i` (zero past the end).
    pub fn get(&self, i: usize) -> u64 {
        self.counts.get(i).copied().unwrap_or(0)
    }
}

/// One bucket of a [`GaugeSeries`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GaugeBucket {
    /// The time-weighted mean of the gauge over the bucket.
    pub mean: f64,
    /// The largest value the gauge held during the bucket.
    pub max: f64,
}

/// A gauge (queue depth, in-flight requests) sampled as a step function: per bucket, its
/// time-weighted mean and its maximum.
#[derive(Clone, Debug, PartialEq)]
pub struct GaugeSeries {
    width: SimDuration,
    value: f64,
    since: SimTime,
    /// Per bucket: integral of value·dt in value·ns, and the max.
    buckets: Vec<(f64, f64)>,
    /// The bucket `since` falls in and where it ends: a change within the same bucket (the
    /// common case: a gauge changes many times per bucket) needs no division.
    current: usize,
    current_end: u64,
}

impl GaugeSeries {
    /// A gauge at zero from time zero, with buckets of `width` (must be positive).
    pub fn new(width: SimDuration) -> Self {
        assert!(!width.is_zero(), "series bucket width must be positive");
        GaugeSeries {
            width,
            value: 0.0,
            since: SimTime::ZERO,
            buckets: vec![(0.0, 0.0)],
            current: 0,
            current_end: width.as_nanos(),
        }
    }

    fn bucket(&mut self, i: usize) -> &mut (f64, f64) {
        if i >= self.buckets.len() {
            let value = self.value;
            self.buckets.resize(i + 1, (0.0, value));
        }
        &mut self.buckets[i]
    }

    /// Integrates the current value from `self.since` up to `now`. A change within the
    /// current bucket (the common case) is a few instructions inlined into the caller; one
    /// that crosses a bucket's end takes the loop of [`GaugeSeries::cross`].
    #[inline]
    fn advance(&mut self, now: SimTime) {
        assert!(
            now >= self.since,
            "gauge updated at {now}, before {}",
            self.since
        );
        let end = now.as_nanos();
        if end >= self.current_end {
            self.cross(now);
            return;
        }
        let value = self.value;
        let dt = (end - self.since.as_nanos()) as f64;
        let b = &mut self.buckets[self.current];
        b.0 += value * dt;
        b.1 = b.1.max(value);
        self.since = now;
    }

    /// [`GaugeSeries::advance`] past the end of the current bucket.
    #[inline(never)]
    fn cross(&mut self, now: SimTime) {
        let end = now.as_nanos();
        let width = self.width.as_nanos();
        let mut t = self.since.as_nanos();
        while t < end {
            let i = (t / width) as usize;
            let bucket_end = ((i as u64) + 1).saturating_mul(width).min(end);
            let value = self.value;
            let b = self.bucket(i);
            b.0 += value * (bucket_end - t) as f64;
            b.1 = b.1.max(value);
            t = bucket_end;
        }
        self.since = now;
        self.current = (end / width) as usize;
        self.current_end = (self.current as u64 + 1).saturating_mul(width);
        self.bucket(self.current);
    }

    /// Sets the gauge to `value` from `now` on.
    #[inline]
    pub fn set(&mut self, now: SimTime, value: f64) {
        self.advance(now);
        self.value = value;
        let b = &mut self.buckets[self.current];
        b.1 = b.1.max(value);
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// Closes the series at `end` and returns one bucket per width from zero to `end`
    /// (a partial last bucket is averaged over its own length).
    pub fn finish(&mut self, end: SimTime) -> Vec<GaugeBucket> {
        self.advance(end);
        let width = self.width.as_nanos();
        let buckets_total = (end.as_nanos().div_ceil(width) as usize).max(1);
        (0..buckets_total)
            .map(|i| {
                let start = i as u64 * width;
                let length = (end.as_nanos().min(start + width) - start).max(1) as f64;
                let (integral, max) = self.buckets.get(i).copied().unwrap_or((0.0, self.value));
                GaugeBucket {
                    mean: integral / length,
                    max,
                }
            })
            .collect()
    }
}

/// The largest value any one of several step functions (one queue per replica) reaches in
/// each bucket: what a [`GaugeSeries`] of their sum cannot say.
///
/// Each source remembers its level, the bucket of its last change and its peak there, so a
/// change costs no scan of the other sources: a source that moves on to a later bucket
/// hands its peak to the bucket it leaves, and its level (constant meanwhile) to every
/// bucket it skipped. A source's level at the start of a bucket counts in that bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct PeakSeries {
    width: u64,
    /// Per bucket: the largest level handed in so far.
    peaks: Vec<u64>,
    sources: Vec<PeakSource>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct PeakSource {
    level: u64,
    bucket: usize,
    peak: u64,
}

impl PeakSeries {
    /// `sources` step functions at zero from time zero, with buckets of `width` (must be
    /// positive).
    pub fn new(width: SimDuration, sources: usize) -> Self {
        assert!(!width.is_zero(), "series bucket width must be positive");
        PeakSeries {
            width: width.as_nanos(),
            peaks: Vec::new(),
            sources: vec![
                PeakSource {
                    level: 0,
                    bucket: 0,
                    peak: 0,
                };
                sources
            ],
        }
    }

    /// Raises bucket `i`'s peak to at least `value`.
    fn hand_in(&mut self, i: usize, value: u64) {
        if value == 0 {
            return;
        }
        if i >= self.peaks.len() {
            self.peaks.resize(i + 1, 0);
        }
        self.peaks[i] = self.peaks[i].max(value);
    }

    /// Moves source `s` on to bucket `to`: its peak goes to the bucket it leaves, its
    /// level to every bucket it skips.
    fn move_on(&mut self, s: usize, to: usize) {
        let source = self.sources[s];
        if to == source.bucket {
            return;
        }
        assert!(to > source.bucket, "peak series moved back in time");
        self.hand_in(source.bucket, source.peak);
        if source.level > 0 {
            for i in source.bucket + 1..to {
                self.hand_in(i, source.level);
            }
        }
        self.sources[s] = PeakSource {
            level: source.level,
            bucket: to,
            peak: source.level,
        };
    }

    /// Source `s` is at `level` from `now` on.
    #[inline]
    pub fn set(&mut self, now: SimTime, s: usize, level: u64) {
        let source = &self.sources[s];
        // Most changes fall in the bucket of the source's last one: no division.
        let bucket_end = (source.bucket as u64 + 1).saturating_mul(self.width);
        if now.as_nanos() >= bucket_end {
            self.move_on(s, (now.as_nanos() / self.width) as usize);
        }
        let source = &mut self.sources[s];
        source.level = level;
        source.peak = source.peak.max(level);
    }

    /// Closes the series at `end` and returns the peak of each bucket from zero to `end`.
    pub fn finish(&mut self, end: SimTime) -> Vec<u64> {
        let buckets_total = (end.as_nanos().div_ceil(self.width) as usize).max(1);
        for s in 0..self.sources.len() {
            // Every bucket up to the last is handed in: moving on to one past it.
            let to = buckets_total.max(self.sources[s].bucket + 1);
            self.move_on(s, to);
        }
        let mut peaks = self.peaks.clone();
        peaks.resize(buckets_total, 0);
        peaks.truncate(buckets_total);
        peaks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_series_keeps_the_largest_source_per_bucket() {
        // Buckets of 10ns; two sources.
        let mut p = PeakSeries::new(SimDuration::from_nanos(10), 2);
        let t = SimTime::from_nanos;
        p.set(t(1), 0, 3); // bucket 0: source 0 reaches 3
        p.set(t(2), 0, 1);
        p.set(t(5), 1, 2); // bucket 0: source 1 reaches 2
        p.set(t(35), 1, 0); // source 1 held 2 through buckets 1 and 2, and into 3
        p.set(t(41), 0, 7); // source 0 held 1 through buckets 1 to 3, reaches 7 in 4
        p.set(t(42), 0, 0);
        assert_eq!(p.finish(t(60)), [3, 2, 2, 2, 7, 0]);
    }

    #[test]
    fn a_peak_series_counts_a_level_held_across_buckets_and_to_the_end() {
        let mut p = PeakSeries::new(SimDuration::from_nanos(10), 1);
        p.set(SimTime::from_nanos(15), 0, 4);
        // A partial last bucket counts; nothing past the end does.
        assert_eq!(p.finish(SimTime::from_nanos(33)), [0, 4, 4, 4]);
        let mut empty = PeakSeries::new(SimDuration::from_nanos(10), 3);
        assert_eq!(empty.finish(SimTime::ZERO), [0]);
    }

    #[test]
    fn count_series_buckets_by_time() {
        let mut s = CountSeries::new(SimDuration::from_secs(1));
        s.add(SimTime::from_millis(10), 1);
        s.add(SimTime::from_millis(999), 2);
        s.add(SimTime::from_millis(2500), 5);
        assert_eq!(s.counts(), [3, 0, 5]);
    }

    #[test]
    fn gauge_series_is_time_weighted() {
        let mut g = GaugeSeries::new(SimDuration::from_secs(1));
        g.set(SimTime::from_millis(500), 4.0);
        g.set(SimTime::from_millis(1_250), 0.0);
        g.set(SimTime::from_millis(1_500), 8.0);
        let buckets = g.finish(SimTime::from_millis(2_500));
        assert_eq!(buckets.len(), 3);
        assert_eq!(
            buckets[0],
            GaugeBucket {
                mean: 2.0,
                max: 4.0
            }
        );
        assert_eq!(
            buckets[1],
            GaugeBucket {
                mean: 5.0,
                max: 8.0
            }
        );
        assert_eq!(
            buckets[2],
            GaugeBucket {
                mean: 8.0,
                max: 8.0
            }
        );
    }
}
