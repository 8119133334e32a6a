//! Distributions made from measurements: a Prometheus histogram ([`Histogram`]), a few
//! percentiles ([`PercentileFit`]) and a list of samples ([`Samples`]), each compiled once
//! with what drawing, the distribution function and the quantile function need, so that all
//! three are exact for the distribution the declaration defines.
//!
//! | kind | draw | between the points it is given |
//! |---|---|---|
//! | histogram | inversion: one uniform, then its bucket by cumulative count | uniform within a bucket; the first bucket from 0; the `+Inf` bucket's share at the largest finite bound |
//! | percentiles | one standard normal draw Z, then `exp` of the line through its segment | ln x linear in the normal score z = Φ⁻¹(q); beyond the first and last points, the lines of the first and last segments |
//! | samples | one sample, each equally likely (`uniform_below`), or by weight (one uniform and its cumulative weight) | no interpolation: only the measured values are drawn |
//!
//! The histogram's rules are Prometheus's `histogram_quantile`: its quantiles are what this
//! module's [`Histogram::quantile`] returns. The percentiles' rule makes a fit through a p50
//! and a p99 exactly `LogNormal(median, p99)`, draw for draw.

use super::{DistError, dist_error, normal_cdf, standard_normal};
use super::{inverse_normal_cdf, uniform_below, unit_f64};
use crate::time::SimDuration;
use rand_core::Rng;
use std::sync::Arc;

/// The upper bound (`le`) of a bucket of a Prometheus histogram: a duration, or `"+Inf"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Le {
    /// Observations at most this long.
    At(SimDuration),
    /// Every observation (Prometheus's last bucket, whose count is the total).
    Inf,
}

impl std::fmt::Display for Le {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Le::At(d) => write!(f, "{d}"),
            Le::Inf => f.write_str("+Inf"),
        }
    }
}

impl serde::Serialize for Le {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Le {
    /// `"+Inf"` or a duration string; a bare number is refused with the fix, since
    /// Prometheus writes `le` in seconds and resim's durations carry their unit.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Le;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a bucket bound: a duration such as \"5ms\" or \"0.005s\", or \"+Inf\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Le, E> {
                if v.trim().eq_ignore_ascii_case("+inf") || v.trim().eq_ignore_ascii_case("inf") {
                    return Ok(Le::Inf);
                }
                use serde::de::IntoDeserializer;
                let d: serde::de::value::StrDeserializer<'_, E> = v.into_deserializer();
                <SimDuration as serde::Deserialize>::deserialize(d).map(Le::At)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Le, E> {
                Err(E::custom(bare_bound(&v.to_string())))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Le, E> {
                Err(E::custom(bare_bound(&v.to_string())))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Le, E> {
                Err(E::custom(bare_bound(&v.to_string())))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

fn bare_bound(v: &str) -> String {
    format!("a bucket bound needs a unit: Prometheus's le=\"{v}\" is in seconds, so write \"{v}s\"")
}

/// One bucket of a Prometheus histogram as scraped: its upper bound and the cumulative count
/// of observations at or below it.
pub type Bucket = (Le, f64);

/// A Prometheus histogram compiled for sampling: `edges[0] = 0` and then the finite upper
/// bounds, `cumulative[i]` the share of all observations at or below `edges[i]`; what the
/// `+Inf` bucket holds beyond the last finite bound (`1 - cumulative[last]`) is drawn as
/// that bound, as `histogram_quantile` answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    edges: Vec<f64>,
    cumulative: Vec<f64>,
}

impl Histogram {
    /// Checks the buckets (bounds increasing, `+Inf` last, counts cumulative and not all
    /// zero) and normalises the counts.
    pub fn new(buckets: &[Bucket]) -> Result<Histogram, DistError> {
        if buckets.is_empty() {
            return Err(dist_error(
                "buckets",
                "must list at least one bucket as (le, cumulative count), e.g. [(\"5ms\", 120), (\"10ms\", 300), (\"+Inf\", 310)]",
            ));
        }
        let mut edges = vec![0.0];
        let mut counts = vec![0.0];
        let mut previous: Option<(Le, f64)> = None;
        for (i, &(le, count)) in buckets.iter().enumerate() {
            let field = || format!("buckets[{i}]");
            if !(count.is_finite() && count >= 0.0) {
                return Err(dist_error(
                    field(),
                    format!("the count must be a finite number, not negative, got {count}"),
                ));
            }
            if let Some((before, count_before)) = previous {
                let increasing = match (before, le) {
                    (Le::At(a), Le::At(b)) => b > a,
                    (Le::At(_), Le::Inf) => true,
                    (Le::Inf, _) => false,
                };
                if !increasing {
                    return Err(dist_error(
                        field(),
                        format!(
                            "bounds must increase: le {le} is not above the bucket before it ({before}); \"+Inf\" comes last"
                        ),
                    ));
                }
                if count < count_before {
                    return Err(dist_error(
                        field(),
                        format!(
                            "counts are cumulative (each bucket counts every observation at or below its bound) and must not decrease: {count} after {count_before}"
                        ),
                    ));
                }
            }
            if let Le::At(d) = le {
                edges.push(d.as_nanos() as f64);
                counts.push(count);
            }
            previous = Some((le, count));
        }
        let total = buckets[buckets.len() - 1].1;
        let finite = counts[counts.len() - 1];
        if edges.len() == 1 {
            return Err(dist_error(
                "buckets",
                "needs a bucket with a finite bound: \"+Inf\" alone says nothing about the values",
            ));
        }
        if total <= 0.0 {
            return Err(dist_error(
                "buckets",
                "the counts are all zero: there is nothing to sample; scrape the histogram after it has observed something",
            ));
        }
        if finite <= 0.0 {
            return Err(dist_error(
                "buckets",
                "every observation is in the \"+Inf\" bucket: add finite buckets that hold them",
            ));
        }
        let cumulative = counts.iter().map(|c| c / total).collect();
        Ok(Histogram { edges, cumulative })
    }

    /// The largest finite bound, where the `+Inf` bucket's share is drawn.
    fn top(&self) -> f64 {
        self.edges[self.edges.len() - 1]
    }

    /// One draw by inversion: a uniform, its bucket, and its place in the bucket.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.quantile_at(unit_f64(rng))
    }

    /// The inverse distribution function at `u` in [0, 1): the smallest x with F(x) ≥ u
    /// (for u = 0, the start of the first bucket that holds anything).
    fn quantile_at(&self, u: f64) -> f64 {
        // The first edge whose share is above u: the bucket that holds u ends there.
        let j = self.cumulative.partition_point(|c| *c <= u);
        if j == self.cumulative.len() {
            return self.top();
        }
        let (low, high) = (self.edges[j - 1], self.edges[j]);
        let (below, at) = (self.cumulative[j - 1], self.cumulative[j]);
        low + (high - low) * ((u - below) / (at - below))
    }

    /// The smallest x with F(x) ≥ q, 0 < q < 1: Prometheus's `histogram_quantile`.
    pub fn quantile(&self, q: f64) -> f64 {
        // The first edge whose share reaches q.
        let j = self.cumulative.partition_point(|c| *c < q);
        if j == self.cumulative.len() {
            return self.top();
        }
        let (low, high) = (self.edges[j - 1], self.edges[j]);
        let (below, at) = (self.cumulative[j - 1], self.cumulative[j]);
        low + (high - low) * ((q - below) / (at - below))
    }

    /// F(x): the shares of the buckets below x, and a linear part of the bucket x is in.
    pub fn cdf(&self, x: f64) -> f64 {
        if x < 0.0 {
            return 0.0;
        }
        if x >= self.top() {
            return 1.0;
        }
        // edges[0] = 0 <= x < top, so 1 <= j < len.
        let j = self.edges.partition_point(|e| *e <= x);
        let (low, high) = (self.edges[j - 1], self.edges[j]);
        let (below, at) = (self.cumulative[j - 1], self.cumulative[j]);
        below + (at - below) * ((x - low) / (high - low))
    }

    /// The mean: each bucket's share at its middle, the `+Inf` share at the top.
    pub fn mean(&self) -> f64 {
        let mut mean = 0.0;
        for j in 1..self.edges.len() {
            let share = self.cumulative[j] - self.cumulative[j - 1];
            mean += share * (self.edges[j - 1] + self.edges[j]) / 2.0;
        }
        mean + (1.0 - self.cumulative[self.cumulative.len() - 1]) * self.top()
    }
}

/// The percentiles a [`Dist::Percentiles`](super::Dist::Percentiles) may name: the field,
/// its probability, and its normal score Φ⁻¹(q) to double precision (the p99's is
/// [`Z_P99`](super::Z_P99), the constant `LogNormal(median, p99)` divides by).
pub const PERCENTILES: [(&str, f64, f64); 11] = [
    ("p1", 0.01, -super::Z_P99),
    ("p5", 0.05, -1.644_853_626_951_472_7),
    ("p10", 0.1, -1.281_551_565_544_600_5),
    ("p25", 0.25, -0.674_489_750_196_081_7),
    ("p50", 0.5, 0.0),
    ("p75", 0.75, 0.674_489_750_196_081_7),
    ("p90", 0.9, 1.281_551_565_544_600_5),
    ("p95", 0.95, 1.644_853_626_951_472_7),
    ("p99", 0.99, super::Z_P99),
    ("p999", 0.999, 3.090_232_306_167_813_5),
    ("p9999", 0.9999, 3.719_016_485_455_680_6),
];

/// One given percentile: its probability, normal score, value (ns) and its logarithm.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    q: f64,
    z: f64,
    x: f64,
    ln_x: f64,
}

/// A monotone fit through given percentiles: ln x is linear in the normal score z = Φ⁻¹(q)
/// between two given points (a log-normal piece through each pair), and the first and last
/// pieces go on below and above. Through a p50 and a p99 alone it is `LogNormal(median,
/// p99)`.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileFit {
    points: Vec<Point>,
    /// d ln x / dz of the piece from `points[i]` to `points[i + 1]`.
    slopes: Vec<f64>,
}

impl PercentileFit {
    /// `given[i]` is the value of [`PERCENTILES`]`[i]`, if given; at least two must be, and
    /// each above the one before.
    pub fn new(given: &[Option<SimDuration>; 11]) -> Result<PercentileFit, DistError> {
        let mut points: Vec<Point> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (value, &(name, q, z)) in given.iter().zip(&PERCENTILES) {
            let Some(value) = value else { continue };
            let x = value.as_nanos() as f64;
            if x <= 0.0 {
                return Err(dist_error(name, "must be greater than 0s"));
            }
            if let (Some(before), Some(before_name)) = (points.last(), names.last())
                && x <= before.x
            {
                return Err(dist_error(
                    name,
                    format!(
                        "must be above {before_name} ({}), got {value}: percentiles increase",
                        SimDuration::from_nanos_f64(before.x)
                    ),
                ));
            }
            points.push(Point {
                q,
                z,
                x,
                ln_x: libm::log(x),
            });
            names.push(name);
        }
        if points.len() < 2 {
            let all: Vec<&str> = PERCENTILES.iter().map(|p| p.0).collect();
            return Err(dist_error(
                "",
                format!(
                    "give at least two percentiles, from {}, e.g. Percentiles(p50: \"4ms\", p99: \"40ms\")",
                    all.join(", ")
                ),
            ));
        }
        // The same arithmetic as LogNormal's σ = ln(p99 / median) / z₀.₉₉, so that a fit
        // through those two points draws what LogNormal draws.
        let slopes = points
            .windows(2)
            .map(|w| libm::log(w[1].x / w[0].x) / (w[1].z - w[0].z))
            .collect();
        Ok(PercentileFit { points, slopes })
    }

    /// The piece whose line holds normal score `z` (the first below the first point, the
    /// last above the last).
    fn piece_of_z(&self, z: f64) -> usize {
        let inner = &self.points[1..self.points.len() - 1];
        inner.partition_point(|p| p.z <= z)
    }

    fn at_z(&self, z: f64) -> f64 {
        let i = self.piece_of_z(z);
        let p = &self.points[i];
        libm::exp(p.ln_x + self.slopes[i] * (z - p.z))
    }

    /// One draw: a standard normal score and its value on the fit.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.at_z(standard_normal(rng))
    }

    /// The q-quantile: a given percentile exactly, else the fit at Φ⁻¹(q).
    pub fn quantile(&self, q: f64) -> f64 {
        if let Some(p) = self.points.iter().find(|p| p.q == q) {
            return p.x;
        }
        self.at_z(inverse_normal_cdf(q))
    }

    /// F(x) = Φ(z) for the score z whose value on the fit is x.
    pub fn cdf(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        let ln_x = libm::log(x);
        let inner = &self.points[1..self.points.len() - 1];
        let i = inner.partition_point(|p| p.ln_x <= ln_x);
        let p = &self.points[i];
        normal_cdf(p.z + (ln_x - p.ln_x) / self.slopes[i])
    }

    /// The mean, piece by piece: on a piece where x = e^(a + b z), the part of E\[X\] from z in
    /// (lo, hi) is e^(a + b²/2) (Φ(hi − b) − Φ(lo − b)).
    pub fn mean(&self) -> f64 {
        let last = self.slopes.len() - 1;
        let mut mean = 0.0;
        for (i, &b) in self.slopes.iter().enumerate() {
            let p = &self.points[i];
            let a = p.ln_x - b * p.z;
            let below = if i == 0 { 0.0 } else { normal_cdf(p.z - b) };
            let above = if i == last {
                1.0
            } else {
                normal_cdf(self.points[i + 1].z - b)
            };
            mean += libm::exp(a + b * b / 2.0) * (above - below);
        }
        mean
    }
}

/// Measured values, sorted, each equally likely or weighted: what the scenario format reads
/// from a file of samples and hands to a [`Dist::Empirical`](super::Dist::Empirical). Cheap
/// to clone (the values are shared), so every run of a sweep shares one copy.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    sorted: Arc<[u64]>,
    /// The cumulative share of the weights up to each sorted value, ending at 1.
    cumulative: Option<Arc<[f64]>>,
    mean: f64,
}

impl Samples {
    /// The values, with a weight for each (`None`: each counts once). Values above
    /// [`SAMPLE_MAX`](super::SAMPLE_MAX) are clamped to it; weights must be finite, not
    /// negative and not all zero, and as many as the values.
    pub fn new(values: &[SimDuration], weights: Option<&[f64]>) -> Result<Samples, DistError> {
        if values.is_empty() {
            return Err(dist_error("file", "holds no samples"));
        }
        let nanos = |v: &SimDuration| (*v).min(super::SAMPLE_MAX).as_nanos();
        let Some(weights) = weights else {
            let mut sorted: Vec<u64> = values.iter().map(nanos).collect();
            sorted.sort_unstable();
            let mean = sorted.iter().map(|&v| v as f64).sum::<f64>() / sorted.len() as f64;
            return Ok(Samples {
                sorted: sorted.into(),
                cumulative: None,
                mean,
            });
        };
        assert_eq!(values.len(), weights.len(), "one weight per value");
        let mut pairs: Vec<(u64, f64)> = Vec::with_capacity(values.len());
        for (v, &w) in values.iter().zip(weights) {
            if !(w.is_finite() && w >= 0.0) {
                return Err(dist_error(
                    "weights",
                    format!("a weight must be a finite number, not negative, got {w}"),
                ));
            }
            pairs.push((nanos(v), w));
        }
        // A stable sort on the value alone: equal values keep the file's order.
        pairs.sort_by_key(|p| p.0);
        let total: f64 = pairs.iter().map(|p| p.1).sum();
        if total <= 0.0 {
            return Err(dist_error("weights", "the weights must not all be zero"));
        }
        let mut running = 0.0;
        let mut cumulative = Vec::with_capacity(pairs.len());
        let mut mean = 0.0;
        for &(v, w) in &pairs {
            running += w;
            cumulative.push(running / total);
            mean += v as f64 * (w / total);
        }
        Ok(Samples {
            sorted: pairs.iter().map(|p| p.0).collect(),
            cumulative: Some(cumulative.into()),
            mean,
        })
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Never true: a `Samples` holds at least one value.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// One draw: a value, each equally likely, or chosen by weight.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> SimDuration {
        let i = match &self.cumulative {
            None => uniform_below(rng, self.sorted.len() as u64) as usize,
            Some(c) => {
                let u = unit_f64(rng);
                c.partition_point(|c| *c <= u).min(self.sorted.len() - 1)
            }
        };
        SimDuration::from_nanos(self.sorted[i])
    }

    /// The smallest value whose share at or below it reaches q.
    pub fn quantile(&self, q: f64) -> f64 {
        let n = self.sorted.len();
        let i = match &self.cumulative {
            None => (libm::ceil(q * n as f64) as usize).clamp(1, n) - 1,
            Some(c) => c.partition_point(|c| *c < q).min(n - 1),
        };
        self.sorted[i] as f64
    }

    /// The share of the values (or of the weight) at or below x.
    pub fn cdf(&self, x: f64) -> f64 {
        let at_most = self.sorted.partition_point(|&v| v as f64 <= x);
        if at_most == 0 {
            return 0.0;
        }
        match &self.cumulative {
            None => at_most as f64 / self.sorted.len() as f64,
            Some(c) => c[at_most - 1],
        }
    }

    /// The mean (weighted, with weights).
    pub fn mean(&self) -> f64 {
        self.mean
    }
}
