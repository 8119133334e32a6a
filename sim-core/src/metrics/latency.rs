//! [`LatencyHistogram`]: HdrHistogram bins that grow with the largest value recorded, count in
//! 32 bits until a total could pass `u32::MAX`, and hold a histogram's first values as they are
//! until bins take fewer bytes.

use crate::time::SimDuration;
use hdrhistogram::Histogram;
use std::borrow::Cow;

/// The largest latency a histogram tracks exactly (one hour); longer values are recorded as
/// one hour and counted in [`LatencyHistogram::clamped`].
pub const LATENCY_MAX: SimDuration = SimDuration::from_secs(3600);

/// A latency histogram (HdrHistogram) up to one hour: [`LatencyHistogram::new`] keeps 3
/// significant digits from 1ns, [`LatencyHistogram::compact`] 2 significant digits from 1µs
/// (a few kilobytes instead of a hundred or more, for models with one histogram per
/// component). Both grow only as far as the largest value recorded.
///
/// A histogram keeps its first values as they are, while they take fewer bytes than its
/// smallest bins would ([`FEW_PRECISE`], [`FEW_COMPACT`] values), and puts them into bins
/// when one more would not fit: a world of many rarely used components (ten thousand clients
/// that call once a second) holds a few hundred bytes per histogram, not kilobytes. Every
/// figure is read from the bins, so it is the same as if the values had been binned as they
/// came.
///
/// The bins count in 32 bits and widen to 64 bits before their total could pass
/// `u32::MAX` (no single count can pass the total), so no count ever saturates: a run of
/// fewer than four billion values keeps half the bytes.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    counts: Counts,
    clamped: u64,
}

/// The bins are boxed: a histogram that keeps its values as they are (most histograms of
/// a long run in fine buckets keep a few, or none) is the size of its list, 40 bytes, not of
/// hdrhistogram's 100-byte header.
#[derive(Clone, Debug)]
enum Counts {
    Narrow(Box<Histogram<u32>>),
    Wide(Box<Histogram<u64>>),
    Few(Few),
}

/// The values of a histogram that has not needed bins yet, with the bins they go into.
#[derive(Clone, Debug)]
struct Few {
    /// In nanoseconds, clamped to [`LATENCY_MAX`], in the order recorded.
    values: Vec<u64>,
    /// The bins' lowest discernible value and significant digits.
    low: u64,
    sigfig: u8,
}

/// Values a precise histogram keeps as they are: 8 KB, the bytes of its smallest bins.
pub const FEW_PRECISE: usize = 1024;
/// Values a compact histogram keeps as they are: 1 KB, the bytes of its smallest bins.
pub const FEW_COMPACT: usize = 128;

impl Few {
    fn new(low: u64, sigfig: u8) -> Self {
        Few {
            values: Vec::new(),
            low,
            sigfig,
        }
    }

    /// How many values it keeps before they go into bins.
    fn limit(&self) -> usize {
        if self.sigfig >= 3 {
            FEW_PRECISE
        } else {
            FEW_COMPACT
        }
    }

    /// Its values in bins allocated up to the largest of them, as a histogram that had
    /// recorded them one by one would hold them.
    fn binned(&self) -> Histogram<u32> {
        let high = self.values.iter().copied().max().unwrap_or(0);
        let mut h = Histogram::new_with_bounds(self.low, high.max(2 * self.low), self.sigfig)
            .expect("the bounds of a histogram's own bins are valid");
        for &nanos in &self.values {
            record_into(&mut h, nanos, 1);
        }
        h
    }
}

/// `$read` of the bins of `$histogram` (of either width), its kept values binned first: the
/// two widths answer through the same hdrhistogram methods.
macro_rules! on_bins {
    ($histogram:expr, |$h:ident| $read:expr) => {
        match &$histogram.binned().counts {
            Counts::Wide($h) => $read,
            Counts::Narrow($h) => $read,
            Counts::Few(_) => unreachable!("binned() leaves no kept values"),
        }
    };
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Records `n` values of `nanos` (already clamped to [`LATENCY_MAX`]). A histogram covers
/// only up to the largest value it has recorded: one above that grows it (out of line: it
/// happens once per octave at most); the saturating form only serves values below its
/// lowest discernible value.
#[inline]
fn record_into<T: hdrhistogram::Counter>(h: &mut Histogram<T>, nanos: u64, n: T) {
    if h.record_n(nanos, n).is_err() {
        grow_and_record(h, nanos, n);
    }
}

#[cold]
#[inline(never)]
fn grow_and_record<T: hdrhistogram::Counter>(h: &mut Histogram<T>, nanos: u64, n: T) {
    if nanos > h.high() {
        *h = grown(h, nanos);
        h.record_n(nanos, n)
            .expect("a histogram grown to a value records it");
    } else {
        h.saturating_record_n(nanos, n);
    }
}

/// The same values in a histogram that reaches up to `high`, with the same bins (the same
/// lowest value and precision, more of them at the top), allocated at its exact size.
/// hdrhistogram's own auto-resize grows its counts by `Vec::resize`, whose doubling leaves
/// up to half of them unused; none of its figures depend on how far up the bins go.
fn grown<T: hdrhistogram::Counter>(h: &Histogram<T>, high: u64) -> Histogram<T> {
    let mut grown = Histogram::new_with_bounds(h.low(), high.max(2 * h.low()), h.sigfig())
        .expect("the bounds of a valid histogram, raised, are valid");
    grown
        .add(h)
        .expect("a histogram with the same bins and a higher top takes every value");
    grown
}

/// Adds `source`'s values to `h`, grown first to reach `source`'s largest value.
fn add_into<T: hdrhistogram::Counter>(h: &mut Histogram<T>, source: &Histogram<T>) {
    if source.max() > h.high() {
        *h = grown(h, source.max());
    }
    h.add(source)
        .expect("a histogram grown to the other's largest value takes every one of its values");
}

/// The same values with 64-bit counts.
fn widen(narrow: &Histogram<u32>) -> Histogram<u64> {
    let mut wide = Histogram::new_with_bounds(narrow.low(), narrow.high(), narrow.sigfig())
        .expect("the bounds of a valid histogram are valid");
    // Same bounds and precision: each bin's highest value lands in the same bin.
    for bin in narrow.iter_recorded() {
        record_into(
            &mut wide,
            bin.value_iterated_to(),
            u64::from(bin.count_at_value()),
        );
    }
    wide
}

impl LatencyHistogram {
    /// An empty histogram. Its memory grows with the values recorded (up to 8 KB for its
    /// first 1,024 values, then 8 KB for bins up to 2µs and 135 KB for values of an hour),
    /// with the same figures as one allocated up to the hour.
    pub fn new() -> Self {
        LatencyHistogram {
            counts: Counts::Few(Few::new(1, 3)),
            clamped: 0,
        }
    }

    /// An empty histogram with 2 significant digits (values within 1%) from 1µs, whose
    /// memory grows with the values recorded, up to one hour. It merges with
    /// [`LatencyHistogram::new`] in either direction.
    pub fn compact() -> Self {
        LatencyHistogram {
            counts: Counts::Few(Few::new(1_000, 2)),
            clamped: 0,
        }
    }

    /// Records one latency.
    #[inline]
    pub fn record(&mut self, latency: SimDuration) {
        self.record_n(latency, 1);
    }

    /// Records `n` values of `latency` (nothing when `n` is zero).
    #[inline]
    pub fn record_n(&mut self, latency: SimDuration, n: u64) {
        if n == 0 {
            return;
        }
        let nanos = latency.as_nanos().max(1);
        if nanos > LATENCY_MAX.as_nanos() {
            self.clamped += n;
        }
        self.record_nanos(nanos.min(LATENCY_MAX.as_nanos()), n);
    }

    /// Records `n` (at least one) values of `nanos`, already clamped.
    #[inline]
    fn record_nanos(&mut self, nanos: u64, n: u64) {
        match &mut self.counts {
            Counts::Narrow(h) => match u32::try_from(h.len().saturating_add(n)) {
                // The total bounds every count, so a total that fits keeps every count exact.
                Ok(_) => record_into(h, nanos, n as u32),
                Err(_) => {
                    let mut wide = widen(h);
                    record_into(&mut wide, nanos, n);
                    self.counts = Counts::Wide(Box::new(wide));
                }
            },
            Counts::Wide(h) => record_into(h, nanos, n),
            Counts::Few(few) => {
                if (few.values.len() as u64).saturating_add(n) <= few.limit() as u64 {
                    few.values.extend((0..n).map(|_| nanos));
                } else {
                    self.bin_and_record(nanos, n);
                }
            }
        }
    }

    /// Puts the values kept as they are into bins, then records `n` values of `nanos`.
    #[cold]
    #[inline(never)]
    fn bin_and_record(&mut self, nanos: u64, n: u64) {
        self.bin();
        self.record_nanos(nanos, n);
    }

    /// Puts the values kept as they are, if any, into bins.
    fn bin(&mut self) {
        if let Counts::Few(few) = &self.counts {
            self.counts = Counts::Narrow(Box::new(few.binned()));
        }
    }

    /// This histogram with its values in bins: a borrow unless it keeps them as they are. A
    /// caller that reads several figures asks for it once.
    pub fn binned(&self) -> Cow<'_, LatencyHistogram> {
        match &self.counts {
            Counts::Few(few) => Cow::Owned(LatencyHistogram {
                counts: Counts::Narrow(Box::new(few.binned())),
                clamped: self.clamped,
            }),
            _ => Cow::Borrowed(self),
        }
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        match &self.counts {
            Counts::Wide(h) => h.len(),
            Counts::Narrow(h) => h.len(),
            Counts::Few(few) => few.values.len() as u64,
        }
    }

    /// The bytes it takes on the heap: its bins (they grow with the largest value recorded,
    /// and are allocated at their exact size) and their header, or its values while it keeps
    /// them as they are.
    pub fn heap_bytes(&self) -> u64 {
        use std::mem::size_of;
        match &self.counts {
            Counts::Wide(h) => h.distinct_values() as u64 * 8 + size_of::<Histogram<u64>>() as u64,
            Counts::Narrow(h) => {
                h.distinct_values() as u64 * 4 + size_of::<Histogram<u32>>() as u64
            }
            Counts::Few(few) => few.values.capacity() as u64 * 8,
        }
    }

    /// Values above [`LATENCY_MAX`], recorded as the maximum.
    pub fn clamped(&self) -> u64 {
        self.clamped
    }

    /// The value at quantile `q` (0 ≤ q ≤ 1), within the histogram's precision; zero when empty.
    pub fn quantile(&self, q: f64) -> SimDuration {
        if self.count() == 0 {
            return SimDuration::ZERO;
        }
        SimDuration::from_nanos(on_bins!(self, |h| h.value_at_quantile(q)))
    }

    /// The mean; zero when empty.
    pub fn mean(&self) -> SimDuration {
        SimDuration::from_nanos_f64(on_bins!(self, |h| h.mean()))
    }

    /// The largest value (within precision); zero when empty.
    pub fn max(&self) -> SimDuration {
        SimDuration::from_nanos(on_bins!(self, |h| h.max()))
    }

    /// The smallest value (within precision); zero when empty.
    pub fn min(&self) -> SimDuration {
        SimDuration::from_nanos(on_bins!(self, |h| h.min()))
    }

    /// Adds all of `other`'s values to this histogram.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        if let Counts::Few(source) = &other.counts
            && self.bins_are(source)
        {
            // Values going into the same bins: recorded as they are, as the other's bins
            // would have added them.
            for &nanos in &source.values {
                self.record_nanos(nanos, 1);
            }
            self.clamped += other.clamped;
            return;
        }
        let other = other.binned();
        self.bin();
        if let (Counts::Narrow(h), Counts::Narrow(source)) = (&mut self.counts, &other.counts)
            && u32::try_from(h.len().saturating_add(source.len())).is_ok()
        {
            // The merged total bounds every count: the counts stay 32 bits wide.
            add_into(h, source);
            self.clamped += other.clamped;
            return;
        }
        let other_narrow;
        let source = match &other.counts {
            Counts::Wide(h) => h,
            Counts::Narrow(h) => {
                other_narrow = widen(h);
                &other_narrow
            }
            Counts::Few(_) => unreachable!("binned"),
        };
        if let Counts::Narrow(h) = &self.counts {
            self.counts = Counts::Wide(Box::new(widen(h)));
        }
        let Counts::Wide(h) = &mut self.counts else {
            unreachable!("widened above");
        };
        add_into(h, source);
        self.clamped += other.clamped;
    }

    /// Whether `few`'s values go into this histogram's bins.
    fn bins_are(&self, few: &Few) -> bool {
        let bins = match &self.counts {
            Counts::Narrow(h) => (h.low(), h.sigfig()),
            Counts::Wide(h) => (h.low(), h.sigfig()),
            Counts::Few(mine) => (mine.low, mine.sigfig),
        };
        bins == (few.low, few.sigfig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `h` after recording 1ms, 2ms, ..., 1000ms and one value of two hours (past the limit).
    fn a_thousand_ms_and_two_hours(mut h: LatencyHistogram) -> LatencyHistogram {
        for ms in 1..=1000 {
            h.record(SimDuration::from_millis(ms));
        }
        h.record(SimDuration::from_secs(7200));
        h
    }

    /// Whether `d` is within 1% of `ms` milliseconds.
    fn within_1pct(d: SimDuration, ms: f64) -> bool {
        (d.as_millis_f64() - ms).abs() <= ms * 0.01
    }

    #[test]
    fn histogram_quantiles_are_within_precision() {
        let h = a_thousand_ms_and_two_hours(LatencyHistogram::new());
        assert_eq!(h.count(), 1001);
        assert_eq!(h.clamped(), 1);
        let p50 = h.quantile(0.5).as_millis_f64();
        assert!((p50 - 501.0).abs() <= 1.0, "{p50}");
        let p99 = h.quantile(0.99).as_millis_f64();
        assert!((p99 - 991.0).abs() <= 1.0, "{p99}");
        assert!((h.max().as_secs_f64() - 3600.0).abs() < 4.0);
    }

    #[test]
    fn compact_histograms_grow_to_their_values_and_merge_with_full_ones() {
        let mut compact = a_thousand_ms_and_two_hours(LatencyHistogram::compact());
        assert_eq!(compact.clamped(), 1);
        let within = within_1pct;
        assert!(
            within(compact.quantile(0.5), 501.0),
            "{}",
            compact.quantile(0.5)
        );
        assert!(
            within(compact.quantile(0.99), 991.0),
            "{}",
            compact.quantile(0.99)
        );
        assert!(within(compact.max(), 3_600_000.0), "{}", compact.max());
        let mut full = LatencyHistogram::new();
        full.merge(&compact);
        assert_eq!(full.count(), 1001);
        assert!(within(full.quantile(0.99), 991.0));
        compact.merge(&full);
        assert_eq!(compact.count(), 2002);
    }

    #[test]
    fn a_compact_histogram_widens_its_counts_before_one_could_saturate() {
        let mut compact = LatencyHistogram::compact();
        let ms = SimDuration::from_millis(5);
        compact.record_n(ms, u64::from(u32::MAX) - 1);
        compact.record(SimDuration::from_millis(50));
        assert!(matches!(compact.counts, Counts::Narrow(_)));
        // The total would pass u32::MAX: the counts widen, and nothing saturates.
        compact.record_n(ms, 3);
        assert!(matches!(compact.counts, Counts::Wide(_)));
        assert_eq!(compact.count(), u64::from(u32::MAX) + 3);
        compact.record_n(ms, u64::from(u32::MAX));
        assert_eq!(compact.count(), 2 * u64::from(u32::MAX) + 3);
        let within = within_1pct;
        assert!(
            within(compact.quantile(0.5), 5.0),
            "{}",
            compact.quantile(0.5)
        );
        assert!(within(compact.max(), 50.0), "{}", compact.max());
    }

    #[test]
    fn a_merge_widens_the_counts_before_its_total_could_saturate() {
        let ms = SimDuration::from_millis(5);
        let (mut merged, mut one) = (LatencyHistogram::new(), LatencyHistogram::new());
        merged.record_n(ms, u64::from(u32::MAX) - 1);
        one.record(SimDuration::from_millis(7));
        merged.merge(&one);
        assert!(matches!(merged.counts, Counts::Narrow(_)));
        assert_eq!(merged.count(), u64::from(u32::MAX));
        merged.merge(&one);
        assert!(matches!(merged.counts, Counts::Wide(_)));
        assert_eq!(merged.count(), u64::from(u32::MAX) + 1);
        let within = |d: SimDuration, ms: f64| (d.as_millis_f64() - ms).abs() <= ms * 0.001;
        assert!(
            within(merged.quantile(0.5), 5.0),
            "{}",
            merged.quantile(0.5)
        );
        assert!(within(merged.max(), 7.0), "{}", merged.max());
    }

    /// A precise histogram allocated up to the hour, as [`LatencyHistogram::new`] was.
    fn full_size() -> LatencyHistogram {
        LatencyHistogram {
            counts: Counts::Wide(Box::new(
                Histogram::new_with_bounds(1, LATENCY_MAX.as_nanos(), 3).unwrap(),
            )),
            clamped: 0,
        }
    }

    fn assert_same_figures(a: &LatencyHistogram, b: &LatencyHistogram) {
        assert_eq!((a.count(), a.clamped()), (b.count(), b.clamped()));
        for q in [0.0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(a.quantile(q), b.quantile(q), "quantile {q}");
        }
        assert_eq!((a.min(), a.max(), a.mean()), (b.min(), b.max(), b.mean()));
    }

    /// An empty histogram with `kind`'s bins (precise or compact) that bins every value as
    /// it comes, as histograms did before they kept their first values.
    fn binned_from_the_start(kind: &LatencyHistogram) -> LatencyHistogram {
        let Counts::Few(few) = &kind.counts else {
            panic!("a new histogram keeps its values")
        };
        LatencyHistogram {
            counts: Counts::Narrow(Box::new(
                Histogram::new_with_bounds(few.low, 2 * few.low, few.sigfig).unwrap(),
            )),
            clamped: 0,
        }
    }

    #[test]
    fn a_histogram_keeps_its_first_values_then_bins_them_with_the_same_figures() {
        for (kind, limit) in [
            (LatencyHistogram::new(), FEW_PRECISE),
            (LatencyHistogram::compact(), FEW_COMPACT),
        ] {
            let (mut few, mut binned) = (kind.clone(), binned_from_the_start(&kind));
            assert_same_figures(&few, &binned);
            // From 1ns (below the compact one's lowest value) to past the hour.
            for i in 0..limit as u64 + 5 {
                let ns = 1 + (i * i * 7_919) % 9_973 * (1 << (i % 43));
                few.record(SimDuration::from_nanos(ns));
                binned.record(SimDuration::from_nanos(ns));
                let kept = few.count() <= limit as u64;
                assert_eq!(matches!(few.counts, Counts::Few(_)), kept, "after {i}");
                if kept {
                    assert!(few.heap_bytes() <= limit as u64 * 8);
                }
                if i % 61 == 0 || i + 1 >= limit as u64 {
                    assert_same_figures(&few, &binned);
                }
            }
            assert!(few.clamped() > 0);
            // `record_n` past the limit bins at once.
            let mut many = kind.clone();
            many.record_n(SimDuration::from_micros(5), limit as u64 + 1);
            assert!(matches!(many.counts, Counts::Narrow(_)));
            // As many values as a total can count, into a histogram that keeps values: they
            // go into bins, which widen to 64 bits at once.
            let mut most = kind.clone();
            most.record(SimDuration::from_micros(7));
            most.record_n(SimDuration::from_micros(5), u64::MAX - 1);
            assert!(matches!(most.counts, Counts::Wide(_)));
            assert_eq!(most.count(), u64::MAX);
        }
    }

    /// A histogram (precise or compact) and values to record into it.
    fn kinds_and_values() -> impl Strategy<Value = Vec<(bool, Vec<u64>)>> {
        prop::collection::vec(
            (
                any::<bool>(),
                prop::collection::vec(1u64..5_000_000_000_000, 0..1_200),
            ),
            1..5,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Histograms that keep their first values, merged in any order into a precise or
        /// a compact one, give the figures of histograms that binned every value as it came.
        #[test]
        fn kept_values_merge_into_the_figures_of_binned_ones(
            parts in kinds_and_values(),
            into_compact in any::<bool>(),
        ) {
            let kind = |compact: bool| if compact {
                LatencyHistogram::compact()
            } else {
                LatencyHistogram::new()
            };
            let mut few_all = kind(into_compact);
            let mut binned_all = binned_from_the_start(&few_all);
            for (compact, values) in &parts {
                let (mut few, mut binned) = (kind(*compact), binned_from_the_start(&kind(*compact)));
                for &ns in values {
                    few.record(SimDuration::from_nanos(ns));
                    binned.record(SimDuration::from_nanos(ns));
                }
                assert_same_figures(&few, &binned);
                few_all.merge(&few);
                binned_all.merge(&binned);
                assert_same_figures(&few_all, &binned_all);
            }
        }
    }

    #[test]
    fn a_growing_histogram_has_the_figures_of_a_full_size_one() {
        // Latencies rising over the octaves from 3ns to past the hour, so the growing one
        // grows many times, with repeats and a clamped value.
        let values = (1..4_000u64).map(|i| 3 + i * i * i % 9_973 * (1 << (i % 29)));
        let (mut growing, mut full) = (LatencyHistogram::new(), full_size());
        for (i, ns) in values.enumerate() {
            let n = 1 + i as u64 % 3;
            growing.record_n(SimDuration::from_nanos(ns), n);
            full.record_n(SimDuration::from_nanos(ns), n);
            if i % 500 == 0 {
                assert_same_figures(&growing, &full);
            }
        }
        growing.record(SimDuration::from_secs(7_200));
        full.record(SimDuration::from_secs(7_200));
        assert_same_figures(&growing, &full);
        assert_eq!(growing.clamped(), 1);
        // Small values only: a fraction of the full size, allocated at its exact size.
        let mut small = LatencyHistogram::new();
        let mut small_full = full_size();
        for us in 1..=2_000 {
            small.record(SimDuration::from_micros(us));
            small_full.record(SimDuration::from_micros(us));
        }
        assert_same_figures(&small, &small_full);
        assert!(small.heap_bytes() * 2 < small_full.heap_bytes());
        // Merges, either way and between two growing ones, give the full size's figures.
        let mut merged_full = full_size();
        merged_full.merge(&small_full);
        merged_full.merge(&full);
        let mut into_growing = LatencyHistogram::new();
        into_growing.merge(&small);
        into_growing.merge(&growing);
        assert_same_figures(&into_growing, &merged_full);
        let mut into_full = full_size();
        into_full.merge(&small);
        into_full.merge(&growing);
        assert_same_figures(&into_full, &merged_full);
        small.merge(&full);
        assert_same_figures(&small, &merged_full);
        let mut compact = LatencyHistogram::compact();
        compact.record(SimDuration::from_millis(40));
        let (mut a, mut b) = (LatencyHistogram::new(), full_size());
        a.merge(&compact);
        b.merge(&compact);
        assert_same_figures(&a, &b);
    }

    /// A histogram that keeps its values (an empty one, most of a long run's histograms per
    /// bucket) is the size of its list: the bins and their header are boxed.
    #[test]
    fn a_histogram_without_bins_is_small() {
        assert!(std::mem::size_of::<LatencyHistogram>() <= 48);
        assert_eq!(LatencyHistogram::compact().heap_bytes(), 0);
    }

    #[test]
    fn widening_keeps_every_figure_of_a_compact_histogram() {
        let mut narrow = LatencyHistogram::compact();
        for us in (1..5_000u64).map(|i| i * i % 7_919 * 37 + 900) {
            narrow.record(SimDuration::from_micros(us));
        }
        let Counts::Narrow(h) = &narrow.counts else {
            panic!("a compact histogram starts narrow");
        };
        let wide = LatencyHistogram {
            counts: Counts::Wide(Box::new(widen(h))),
            clamped: narrow.clamped,
        };
        assert_eq!(wide.count(), narrow.count());
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(wide.quantile(q), narrow.quantile(q), "quantile {q}");
        }
        assert_eq!(
            (wide.min(), wide.max(), wide.mean()),
            (narrow.min(), narrow.max(), narrow.mean())
        );
    }
}
