//! Portable sampling: [`Dist`] (what a scenario file says) compiles into a [`Sampler`]
//! (what the hot path draws from), plus the primitive draws every model needs.
//!
//! The algorithms are ours and written down here, because they are part of the replay
//! contract: a dependency that changed its algorithm would silently change every recorded
//! seed. Transcendental functions come from `libm`, a pure-Rust port of musl's math library,
//! so `ln`, `exp`, `pow`, `cos` give bit-identical results on every platform and in debug and
//! release builds. Only IEEE-754 basic operations (`+ - * /`, `sqrt`), which are correctly
//! rounded everywhere, are used directly.
//!
//! | draw | algorithm |
//! |---|---|
//! | [`unit_f64`] | top 53 bits of a `u64`, times 2⁻⁵³: uniform on [0, 1) |
//! | [`open_unit_f64`] | the same plus one ulp step: uniform on (0, 1], safe for `ln` |
//! | [`uniform_below`] | Lemire's multiply-shift with rejection: unbiased integer in [0, n) |
//! | [`exponential`] | inversion: −mean · ln U |
//! | [`standard_normal`] | Box–Muller, one output per call (the pair's twin is discarded) |
//! | normal | mean + sd · Z, redrawn while negative (at most 64 times, then 0) |
//! | log-normal | exp(μ + σ · Z), μ = ln median; from a p99, σ = ln(p99 / median) / z₀.₉₉ |
//! | Pareto | inversion: scale · U^(−1/shape) |
//! | mixture | one uniform picks the component by cumulative weight, then the component draws |
//! | empirical | one of the listed values, each equally likely; from a file: one of its samples, each equally likely or by its weight |
//! | histogram | inversion: one uniform, its bucket by cumulative count, uniform within it ([`measured`]) |
//! | percentiles | one standard normal Z, then exp of the piecewise-linear ln x(z) through the given points ([`measured`]) |
//!
//! Samples are integer nanoseconds, rounded to nearest and clamped to [`SAMPLE_MAX`] so that
//! `now + sample` cannot overflow in any run shorter than a few centuries.

pub mod measured;

use crate::error::ConfigError;
use crate::time::SimDuration;
pub use measured::{Bucket, Le, PERCENTILES, Samples};
use measured::{Histogram, PercentileFit};
use rand_core::Rng;
use serde::{Deserialize, Serialize};

/// The largest value a sampler returns (10¹⁸ ns, about 31.7 years).
pub const SAMPLE_MAX: SimDuration = SimDuration::from_nanos(1_000_000_000_000_000_000);

/// Φ⁻¹(0.99): the standard normal's 99th percentile.
pub const Z_P99: f64 = 2.326_347_874_040_840_8;

const TWO_POW_MINUS_53: f64 = 1.0 / (1u64 << 53) as f64;

/// Uniform on [0, 1).
#[inline]
pub fn unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * TWO_POW_MINUS_53
}

/// Uniform on (0, 1]: never zero, so `ln` of it is finite.
#[inline]
pub fn open_unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * TWO_POW_MINUS_53
}

/// True with probability `p` (clamped to [0, 1]).
#[inline]
pub fn bernoulli<R: Rng + ?Sized>(rng: &mut R, p: f64) -> bool {
    unit_f64(rng) < p
}

/// Uniform integer in `[0, n)`, without modulo bias (Lemire, 2019). `n` must be positive.
#[inline]
pub fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    assert!(n > 0, "uniform_below(0) has no values to choose from");
    let threshold = n.wrapping_neg() % n;
    // The loop ends with probability 1 - threshold/2^64 per round; the bound keeps it finite.
    for _ in 0..64 {
        let m = u128::from(rng.next_u64()) * u128::from(n);
        if (m as u64) >= threshold {
            return (m >> 64) as u64;
        }
    }
    // Unreachable in practice (probability below 2^-64 per round); fall back to biased.
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// Exponential with the given mean (any unit): −mean · ln U, U on (0, 1].
#[inline]
pub fn exponential<R: Rng + ?Sized>(rng: &mut R, mean: f64) -> f64 {
    -mean * libm::log(open_unit_f64(rng))
}

/// A standard normal draw (Box–Muller, cosine branch).
#[inline]
pub fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1 = open_unit_f64(rng);
    let u2 = unit_f64(rng);
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * core::f64::consts::PI * u2)
}

/// Φ⁻¹(p) for p in (0, 1), by Acklam's rational approximation (relative error below 1.2e-9).
pub fn inverse_normal_cdf(p: f64) -> f64 {
    assert!(
        p > 0.0 && p < 1.0,
        "inverse_normal_cdf needs 0 < p < 1, got {p}"
    );
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    const P_LOW: f64 = 0.024_25;
    if p < P_LOW {
        tail(libm::sqrt(-2.0 * libm::log(p)))
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail(libm::sqrt(-2.0 * libm::log(1.0 - p)))
    }
}

/// A distribution of durations, as written in a scenario file (RON, externally tagged):
///
/// ```ron
/// Exponential(mean: "100ms")
/// LogNormal(median: "40ms", p99: "400ms")
/// Mixture(components: [(weight: 95, dist: Constant(value: "100ms")), (weight: 5, dist: Constant(value: "100s"))])
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Dist {
    /// Always `value`.
    Constant {
        /// The value every draw returns.
        value: SimDuration,
    },
    /// Uniform on `[low, high]`.
    Uniform {
        /// Smallest value.
        low: SimDuration,
        /// Largest value.
        high: SimDuration,
    },
    /// Exponential (memoryless) with the given mean: Poisson arrivals, M/M/c service.
    Exponential {
        /// The mean (1/rate).
        mean: SimDuration,
    },
    /// Normal, truncated at zero by redrawing negative values.
    Normal {
        /// Mean before truncation.
        mean: SimDuration,
        /// Standard deviation before truncation.
        std_dev: SimDuration,
    },
    /// Log-normal given by its median and either `sigma` (of the underlying normal) or its
    /// 99th percentile: the usual shape of service latency.
    LogNormal {
        /// The median (e^μ).
        median: SimDuration,
        /// σ of ln(X); give this or `p99`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sigma: Option<f64>,
        /// The 99th percentile; give this or `sigma`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p99: Option<SimDuration>,
    },
    /// Pareto (heavy tail): `scale` is the minimum, `shape` the tail index α (mean is finite
    /// only for α > 1).
    Pareto {
        /// The minimum value (x_m).
        scale: SimDuration,
        /// The tail index α; smaller is heavier.
        shape: f64,
    },
    /// A discrete mixture: each draw picks a component with probability proportional to its
    /// weight ("95% 100ms, 5% 100s").
    Mixture {
        /// The components and their relative weights.
        components: Vec<Component>,
    },
    /// One of the listed values, each equally likely (e.g. latencies measured in production),
    /// or one of the samples of a file, which the scenario format reads when it reads the
    /// scenario (sim-core does no I/O: it is handed the [`Samples`]).
    Empirical {
        /// The observed values; give these or `file`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        values: Vec<SimDuration>,
        /// A file of samples, relative to the scenario file; give this or `values`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
        /// The CSV column that holds the samples (by its header); without it, the file holds
        /// one sample per line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        column: Option<String>,
        /// The unit of samples written as bare numbers (`"ns"`, `"us"`, `"ms"`, `"s"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unit: Option<String>,
        /// The CSV column that holds each sample's weight (a count of observations).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weights: Option<String>,
        /// The samples of `file`, once read; never part of the file's text.
        #[serde(skip)]
        samples: Option<Samples>,
    },
    /// A Prometheus histogram as scraped: each bucket's upper bound `le` and the cumulative
    /// count of observations at or below it, the last bound may be `"+Inf"`. Draws are
    /// uniform within a bucket, the first from 0, and the `+Inf` bucket's observations are
    /// drawn as the largest finite bound (as `histogram_quantile` answers them).
    Histogram {
        /// `(le, cumulative count)` pairs, bounds increasing.
        buckets: Vec<Bucket>,
    },
    /// A monotone fit through measured percentiles (at least two of `p1`, `p5`, `p10`,
    /// `p25`, `p50`, `p75`, `p90`, `p95`, `p99`, `p999`, `p9999`): ln x linear in the normal
    /// score between them, so that `p50` and `p99` alone give `LogNormal(median, p99)`.
    Percentiles {
        /// The 1st percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p1: Option<SimDuration>,
        /// The 5th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p5: Option<SimDuration>,
        /// The 10th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p10: Option<SimDuration>,
        /// The 25th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p25: Option<SimDuration>,
        /// The median.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p50: Option<SimDuration>,
        /// The 75th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p75: Option<SimDuration>,
        /// The 90th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p90: Option<SimDuration>,
        /// The 95th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p95: Option<SimDuration>,
        /// The 99th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p99: Option<SimDuration>,
        /// The 99.9th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p999: Option<SimDuration>,
        /// The 99.99th percentile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p9999: Option<SimDuration>,
    },
}

/// One part of a [`Dist::Mixture`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// Relative weight; weights need not sum to anything in particular.
    pub weight: f64,
    /// The distribution drawn from when this component is picked.
    pub dist: Dist,
}

/// Why a [`Dist`] cannot be sampled: the field (relative to the distribution) and the fix.
/// The same type as every other `validate()` error in resim.
pub type DistError = ConfigError;

fn dist_error(field: impl Into<String>, reason: impl Into<String>) -> DistError {
    ConfigError::new(field, reason)
}

/// A compiled distribution: parameters checked and precomputed, ready to draw from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampler {
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Constant(SimDuration),
    Uniform {
        low: f64,
        span: f64,
    },
    Exponential {
        mean: f64,
    },
    Normal {
        mean: f64,
        std_dev: f64,
    },
    LogNormal {
        mu: f64,
        sigma: f64,
    },
    Pareto {
        scale: f64,
        shape: f64,
    },
    Mixture {
        cumulative: Vec<f64>,
        parts: Vec<Sampler>,
    },
    Empirical {
        values: Vec<SimDuration>,
    },
    Samples(Samples),
    Histogram(Histogram),
    Percentiles(PercentileFit),
}

fn positive_finite(field: &str, x: f64) -> Result<f64, DistError> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(dist_error(
            field,
            format!("must be a positive finite number, got {x}"),
        ))
    }
}

impl Dist {
    /// A constant distribution.
    pub fn constant(value: SimDuration) -> Self {
        Dist::Constant { value }
    }

    /// An exponential distribution with the given mean.
    pub fn exponential(mean: SimDuration) -> Self {
        Dist::Exponential { mean }
    }

    /// The values of a `Percentiles` declaration in the order of [`PERCENTILES`] (all `None`
    /// for any other kind).
    pub fn percentiles(&self) -> [Option<SimDuration>; 11] {
        match self {
            Dist::Percentiles {
                p1,
                p5,
                p10,
                p25,
                p50,
                p75,
                p90,
                p95,
                p99,
                p999,
                p9999,
            } => [
                *p1, *p5, *p10, *p25, *p50, *p75, *p90, *p95, *p99, *p999, *p9999,
            ],
            _ => [None; 11],
        }
    }

    /// Checks the parameters; the error names the field and the fix.
    pub fn validate(&self) -> Result<(), DistError> {
        self.compile().map(|_| ())
    }

    /// Checks the parameters and precomputes what sampling needs.
    pub fn compile(&self) -> Result<Sampler, DistError> {
        let kind = match self {
            Dist::Constant { value } => Kind::Constant((*value).min(SAMPLE_MAX)),
            Dist::Uniform { low, high } => {
                if low > high {
                    return Err(dist_error(
                        "high",
                        format!("must not be below low ({low}), got {high}"),
                    ));
                }
                Kind::Uniform {
                    low: low.as_nanos() as f64,
                    span: (high.as_nanos() - low.as_nanos()) as f64,
                }
            }
            Dist::Exponential { mean } => {
                if mean.is_zero() {
                    return Err(dist_error(
                        "mean",
                        "must be greater than 0s (use Constant(value: \"0s\") for no delay)",
                    ));
                }
                Kind::Exponential {
                    mean: mean.as_nanos() as f64,
                }
            }
            Dist::Normal { mean, std_dev } => Kind::Normal {
                mean: mean.as_nanos() as f64,
                std_dev: std_dev.as_nanos() as f64,
            },
            Dist::LogNormal { median, sigma, p99 } => {
                if median.is_zero() {
                    return Err(dist_error("median", "must be greater than 0s"));
                }
                let sigma = match (sigma, p99) {
                    (Some(s), None) => positive_finite("sigma", *s)?,
                    (None, Some(p99)) => {
                        if p99 <= median {
                            return Err(dist_error(
                                "p99",
                                format!("must be above the median ({median}), got {p99}"),
                            ));
                        }
                        libm::log(p99.as_nanos() as f64 / median.as_nanos() as f64) / Z_P99
                    }
                    _ => {
                        return Err(dist_error(
                            "sigma",
                            "give exactly one of sigma or p99 with the median",
                        ));
                    }
                };
                Kind::LogNormal {
                    mu: libm::log(median.as_nanos() as f64),
                    sigma,
                }
            }
            Dist::Pareto { scale, shape } => {
                if scale.is_zero() {
                    return Err(dist_error("scale", "must be greater than 0s"));
                }
                Kind::Pareto {
                    scale: scale.as_nanos() as f64,
                    shape: positive_finite("shape", *shape)?,
                }
            }
            Dist::Mixture { components } => {
                if components.is_empty() {
                    return Err(dist_error("components", "must list at least one component"));
                }
                let mut total = 0.0;
                let mut cumulative = Vec::with_capacity(components.len());
                let mut parts = Vec::with_capacity(components.len());
                for (i, c) in components.iter().enumerate() {
                    if !(c.weight.is_finite() && c.weight >= 0.0) {
                        return Err(dist_error(
                            format!("components[{i}].weight"),
                            format!("must be a finite number, not negative, got {}", c.weight),
                        ));
                    }
                    total += c.weight;
                    cumulative.push(total);
                    parts.push(
                        c.dist
                            .compile()
                            .map_err(|e| e.at(&format!("components[{i}].dist")))?,
                    );
                }
                if total <= 0.0 {
                    return Err(dist_error("components", "the weights must not all be zero"));
                }
                for c in &mut cumulative {
                    *c /= total;
                }
                Kind::Mixture { cumulative, parts }
            }
            Dist::Empirical { .. } => empirical(self)?,
            Dist::Histogram { buckets } => Kind::Histogram(Histogram::new(buckets)?),
            Dist::Percentiles { .. } => Kind::Percentiles(PercentileFit::new(&self.percentiles())?),
        };
        Ok(Sampler { kind })
    }
}

/// An `Empirical` declaration compiled: the listed values, or the samples read from its file.
fn empirical(d: &Dist) -> Result<Kind, DistError> {
    let Dist::Empirical {
        values,
        file,
        column,
        unit,
        weights,
        samples,
    } = d
    else {
        unreachable!("empirical() is called on an Empirical declaration");
    };
    let Some(file) = file else {
        for (field, given) in [
            ("column", column.is_some()),
            ("unit", unit.is_some()),
            ("weights", weights.is_some()),
        ] {
            if given {
                return Err(dist_error(
                    field,
                    "describes a file of samples: add file: \"...\" or remove it",
                ));
            }
        }
        if values.is_empty() {
            return Err(dist_error(
                "values",
                "must list at least one value, or name a file of samples with file: \"...\"",
            ));
        }
        return Ok(Kind::Empirical {
            values: values.iter().map(|v| (*v).min(SAMPLE_MAX)).collect(),
        });
    };
    if !values.is_empty() {
        return Err(dist_error(
            "values",
            "give the values or a file of samples, not both",
        ));
    }
    match samples {
        Some(s) => Ok(Kind::Samples(s.clone())),
        None => Err(dist_error(
            "file",
            format!(
                "the samples of {file:?} have not been read: a scenario's files of samples are read when the scenario is (scenarios::format::load)"
            ),
        )),
    }
}

#[inline]
fn clamp_nanos(nanos: f64) -> SimDuration {
    // Clamping the float first keeps one comparison off the integer path; SAMPLE_MAX is
    // exactly representable as an f64.
    SimDuration::from_nanos_f64(nanos.min(SAMPLE_MAX.as_nanos() as f64))
}

impl Sampler {
    /// The value of a constant sampler, which draws nothing (`None` for any other).
    #[inline]
    pub fn as_constant(&self) -> Option<SimDuration> {
        match self.kind {
            Kind::Constant(v) => Some(v),
            _ => None,
        }
    }

    /// A sampler that always returns `value`.
    pub fn constant(value: SimDuration) -> Self {
        Sampler {
            kind: Kind::Constant(value.min(SAMPLE_MAX)),
        }
    }

    /// An exponential sampler with the given mean (must be positive).
    pub fn exponential(mean: SimDuration) -> Self {
        assert!(!mean.is_zero(), "exponential sampler needs a positive mean");
        Sampler {
            kind: Kind::Exponential {
                mean: mean.as_nanos() as f64,
            },
        }
    }

    /// Draws one value.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> SimDuration {
        match &self.kind {
            Kind::Constant(v) => *v,
            Kind::Uniform { low, span } => clamp_nanos(low + span * unit_f64(rng)),
            Kind::Exponential { mean } => clamp_nanos(exponential(rng, *mean)),
            Kind::Normal { mean, std_dev } => {
                for _ in 0..64 {
                    let x = mean + std_dev * standard_normal(rng);
                    if x >= 0.0 {
                        return clamp_nanos(x);
                    }
                }
                SimDuration::ZERO
            }
            Kind::LogNormal { mu, sigma } => {
                clamp_nanos(libm::exp(mu + sigma * standard_normal(rng)))
            }
            Kind::Pareto { scale, shape } => {
                clamp_nanos(scale * libm::pow(open_unit_f64(rng), -1.0 / shape))
            }
            Kind::Mixture { cumulative, parts } => {
                let u = unit_f64(rng);
                let i = cumulative.partition_point(|c| *c <= u).min(parts.len() - 1);
                parts[i].sample(rng)
            }
            Kind::Empirical { values } => values[uniform_below(rng, values.len() as u64) as usize],
            Kind::Samples(s) => s.sample(rng),
            Kind::Histogram(h) => clamp_nanos(h.sample(rng)),
            Kind::Percentiles(p) => clamp_nanos(p.sample(rng)),
        }
    }

    /// The theoretical mean in nanoseconds, where it is finite and known in closed form
    /// (the truncated normal reports its untruncated mean).
    pub fn mean_nanos(&self) -> Option<f64> {
        match &self.kind {
            Kind::Constant(v) => Some(v.as_nanos() as f64),
            Kind::Uniform { low, span } => Some(low + span / 2.0),
            Kind::Exponential { mean } => Some(*mean),
            Kind::Normal { mean, .. } => Some(*mean),
            Kind::LogNormal { mu, sigma } => Some(libm::exp(mu + sigma * sigma / 2.0)),
            Kind::Pareto { scale, shape } => (*shape > 1.0).then(|| shape * scale / (shape - 1.0)),
            Kind::Mixture { cumulative, parts } => {
                let mut previous = 0.0;
                let mut mean = 0.0;
                for (c, part) in cumulative.iter().zip(parts) {
                    mean += (c - previous) * part.mean_nanos()?;
                    previous = *c;
                }
                Some(mean)
            }
            Kind::Empirical { values } => {
                Some(values.iter().map(|v| v.as_nanos() as f64).sum::<f64>() / values.len() as f64)
            }
            Kind::Samples(s) => Some(s.mean()),
            Kind::Histogram(h) => Some(h.mean()),
            Kind::Percentiles(p) => Some(p.mean()),
        }
    }

    /// The `q`-quantile in nanoseconds (0 < q < 1) of the distribution draws follow: the
    /// smallest `x` with `cdf_nanos(x) ≥ q`. Exact for every kind but a mixture of
    /// continuous parts, which is found by bisection on its distribution function to within
    /// a nanosecond. The truncated normal's is that of the normal conditioned on `x ≥ 0`,
    /// which is what redrawing negative values gives.
    pub fn quantile_nanos(&self, q: f64) -> f64 {
        assert!(q > 0.0 && q < 1.0, "quantile needs 0 < q < 1, got {q}");
        match &self.kind {
            Kind::Constant(v) => v.as_nanos() as f64,
            Kind::Uniform { low, span } => low + span * q,
            Kind::Exponential { mean } => -mean * libm::log(1.0 - q),
            Kind::Normal { mean, std_dev } => {
                if *std_dev == 0.0 {
                    return mean.max(0.0);
                }
                let below = normal_cdf(-mean / std_dev);
                let x = mean + std_dev * inverse_normal_cdf(below + q * (1.0 - below));
                x.max(0.0)
            }
            Kind::LogNormal { mu, sigma } => libm::exp(mu + sigma * inverse_normal_cdf(q)),
            Kind::Pareto { scale, shape } => scale * libm::pow(1.0 - q, -1.0 / shape),
            Kind::Mixture { parts, .. } => {
                // The answer lies between the smallest and the largest of the parts' own
                // q-quantiles, where the mixture's distribution function crosses q.
                let ends = parts.iter().map(|p| p.quantile_nanos(q));
                let (mut low, mut high) =
                    ends.fold((f64::MAX, 0.0f64), |(l, h), x| (l.min(x), h.max(x)));
                if self.cdf_nanos(low) >= q {
                    return low;
                }
                // Invariant: cdf(low) < q <= cdf(high). 200 halvings reach any f64 interval's
                // resolution; stop at a nanosecond.
                for _ in 0..200 {
                    if high - low <= 1.0 {
                        break;
                    }
                    let mid = low + (high - low) / 2.0;
                    if self.cdf_nanos(mid) >= q {
                        high = mid;
                    } else {
                        low = mid;
                    }
                }
                high
            }
            Kind::Empirical { values } => {
                let mut sorted: Vec<u64> = values.iter().map(|v| v.as_nanos()).collect();
                sorted.sort_unstable();
                let rank = libm::ceil(q * sorted.len() as f64) as usize;
                sorted[rank.clamp(1, sorted.len()) - 1] as f64
            }
            Kind::Samples(s) => s.quantile(q),
            Kind::Histogram(h) => h.quantile(q),
            Kind::Percentiles(p) => p.quantile(q),
        }
    }

    /// The probability that a draw is at most `x` nanoseconds (before rounding to the
    /// nanosecond), for a Kolmogorov–Smirnov test or a report of what a file declared.
    pub fn cdf_nanos(&self, x: f64) -> f64 {
        match &self.kind {
            Kind::Constant(v) => f64::from(u8::from(x >= v.as_nanos() as f64)),
            Kind::Uniform { low, span } => {
                if *span == 0.0 {
                    f64::from(u8::from(x >= *low))
                } else {
                    ((x - low) / span).clamp(0.0, 1.0)
                }
            }
            Kind::Exponential { mean } => {
                if x <= 0.0 {
                    0.0
                } else {
                    1.0 - libm::exp(-x / mean)
                }
            }
            Kind::Normal { mean, std_dev } => {
                if x < 0.0 {
                    return 0.0;
                }
                if *std_dev == 0.0 {
                    return f64::from(u8::from(x >= *mean));
                }
                let below = normal_cdf(-mean / std_dev);
                ((normal_cdf((x - mean) / std_dev) - below) / (1.0 - below)).clamp(0.0, 1.0)
            }
            Kind::LogNormal { mu, sigma } => {
                if x <= 0.0 {
                    0.0
                } else {
                    normal_cdf((libm::log(x) - mu) / sigma)
                }
            }
            Kind::Pareto { scale, shape } => {
                if x < *scale {
                    0.0
                } else {
                    1.0 - libm::pow(scale / x, *shape)
                }
            }
            Kind::Mixture { cumulative, parts } => {
                let mut previous = 0.0;
                let mut p = 0.0;
                for (c, part) in cumulative.iter().zip(parts) {
                    p += (c - previous) * part.cdf_nanos(x);
                    previous = *c;
                }
                p.clamp(0.0, 1.0)
            }
            Kind::Empirical { values } => {
                let at_most = values.iter().filter(|v| v.as_nanos() as f64 <= x).count();
                at_most as f64 / values.len() as f64
            }
            Kind::Samples(s) => s.cdf(x),
            Kind::Histogram(h) => h.cdf(x),
            Kind::Percentiles(p) => p.cdf(x),
        }
    }
}

/// Φ(z), the standard normal distribution function, through `libm::erfc`.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / core::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Seed;

    fn dist(text: &str) -> Dist {
        // Scenario files are parsed with `implicit_some`, so optional fields need no `Some(..)`.
        ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn first_draws_are_pinned() {
        // The replay contract for every sampler: a change here changes every recorded run.
        let cases = [
            "Constant(value: \"5ms\")",
            "Uniform(low: \"10ms\", high: \"20ms\")",
            "Exponential(mean: \"100ms\")",
            "Normal(mean: \"50ms\", std_dev: \"10ms\")",
            "LogNormal(median: \"40ms\", sigma: 0.5)",
            "LogNormal(median: \"40ms\", p99: \"400ms\")",
            "Pareto(scale: \"10ms\", shape: 1.5)",
            "Mixture(components: [(weight: 95, dist: Constant(value: \"100ms\")), (weight: 5, dist: Constant(value: \"100s\"))])",
            "Empirical(values: [\"1ms\", \"2ms\", \"3ms\", \"50ms\"])",
        ];
        let mut text = String::new();
        for case in cases {
            let sampler = dist(case).compile().unwrap();
            let mut rng = Seed(42).stream("sampler-snapshot");
            let draws: Vec<String> = (0..8)
                .map(|_| sampler.sample(&mut rng).as_nanos().to_string())
                .collect();
            text.push_str(&format!("{case}\n    {}\n", draws.join(" ")));
        }
        insta::assert_snapshot!("sample__first_draws", text);
    }

    #[test]
    fn means_match_theory_within_three_standard_errors() {
        let cases = [
            "Uniform(low: \"10ms\", high: \"20ms\")",
            "Exponential(mean: \"100ms\")",
            "Normal(mean: \"50ms\", std_dev: \"10ms\")",
            "LogNormal(median: \"40ms\", sigma: 0.5)",
            "Pareto(scale: \"10ms\", shape: 3.5)",
            "Mixture(components: [(weight: 95, dist: Constant(value: \"100ms\")), (weight: 5, dist: Constant(value: \"1s\"))])",
        ];
        let n = 200_000;
        for case in cases {
            let sampler = dist(case).compile().unwrap();
            let mut rng = Seed(3).stream(case);
            let xs: Vec<f64> = (0..n)
                .map(|_| sampler.sample(&mut rng).as_nanos() as f64)
                .collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
            let se = (var / n as f64).sqrt();
            let expected = sampler.mean_nanos().unwrap();
            assert!(
                (mean - expected).abs() <= 3.0 * se,
                "{case}: mean {mean} vs {expected} (se {se})"
            );
        }
    }

    #[test]
    fn quantiles_match_theory() {
        for case in [
            "Exponential(mean: \"100ms\")",
            "LogNormal(median: \"40ms\", p99: \"400ms\")",
            "Pareto(scale: \"10ms\", shape: 2.0)",
        ] {
            let sampler = dist(case).compile().unwrap();
            let mut rng = Seed(5).stream(case);
            let mut xs: Vec<u64> = (0..200_000)
                .map(|_| sampler.sample(&mut rng).as_nanos())
                .collect();
            xs.sort_unstable();
            for q in [0.5, 0.9, 0.99] {
                let measured = xs[(q * xs.len() as f64) as usize] as f64;
                let expected = sampler.quantile_nanos(q);
                assert!(
                    (measured / expected - 1.0).abs() < 0.03,
                    "{case} q{q}: {measured} vs {expected}"
                );
            }
        }
        let p99 = dist("LogNormal(median: \"40ms\", p99: \"400ms\")")
            .compile()
            .unwrap()
            .quantile_nanos(0.99);
        assert!((p99 / 400e6 - 1.0).abs() < 1e-6, "{p99}");
    }

    #[test]
    fn quantiles_and_the_distribution_function_agree_for_every_kind() {
        for case in [
            "Constant(value: \"5ms\")",
            "Uniform(low: \"10ms\", high: \"20ms\")",
            "Exponential(mean: \"100ms\")",
            "Normal(mean: \"10ms\", std_dev: \"2ms\")",
            "Normal(mean: \"1ms\", std_dev: \"2ms\")",
            "LogNormal(median: \"40ms\", p99: \"400ms\")",
            "Pareto(scale: \"10ms\", shape: 2.0)",
            "Mixture(components: [(weight: 9, dist: Exponential(mean: \"2ms\")), (weight: 1, dist: Constant(value: \"30ms\"))])",
            "Empirical(values: [\"1ms\", \"2ms\", \"3ms\", \"50ms\"])",
            HISTOGRAM,
            "Histogram(buckets: [(\"0s\", 10), (\"5ms\", 60), (\"10ms\", 60), (\"20ms\", 100)])",
            PERCENTILES_FIT,
            "Percentiles(p50: \"4ms\", p99: \"40ms\")",
        ] {
            let sampler = dist(case).compile().unwrap();
            for q in [0.01, 0.25, 0.5, 0.9, 0.99, 0.999] {
                let x = sampler.quantile_nanos(q);
                // The smallest x with F(x) >= q: F reaches q at x, and not a nanosecond before
                // (up to float rounding of F for the continuous kinds).
                assert!(sampler.cdf_nanos(x) >= q - 1e-9, "{case} q{q}: F({x}) < q");
                assert!(
                    sampler.cdf_nanos(x - 1.0) <= q + 1e-9,
                    "{case} q{q}: F({x} - 1ns) > q"
                );
            }
        }
        // Redrawing the negative values of Normal(1ms, 2ms) moves its median above its
        // untruncated mean, and nothing lies below zero.
        let truncated = dist("Normal(mean: \"1ms\", std_dev: \"2ms\")")
            .compile()
            .unwrap();
        assert!(truncated.quantile_nanos(0.5) > 1e6);
        assert_eq!(truncated.cdf_nanos(-1.0), 0.0);
        // The mixture's median is found by bisection within a nanosecond of the closed form:
        // 9/10 Exponential(2ms), so F(x) = 0.9 (1 - e^(-x/2ms)) = 0.5 at x = 2ms · ln(1.8/0.8).
        let mixture = dist("Mixture(components: [(weight: 9, dist: Exponential(mean: \"2ms\")), (weight: 1, dist: Constant(value: \"30ms\"))])").compile().unwrap();
        let exact = 2e6 * libm::log(1.8 / 0.8);
        assert!((mixture.quantile_nanos(0.5) - exact).abs() <= 1.0);
        assert_eq!(mixture.quantile_nanos(0.95), 30e6);
    }

    const HISTOGRAM: &str = "Histogram(buckets: [(\"5ms\", 120), (\"10ms\", 300), (\"25ms\", 390), (\"100ms\", 398), (\"+Inf\", 400)])";
    const PERCENTILES_FIT: &str =
        "Percentiles(p50: \"4ms\", p90: \"12ms\", p99: \"40ms\", p999: \"120ms\")";

    #[test]
    fn measured_kinds_first_draws_are_pinned() {
        // The replay contract of the kinds made from measurements, in a snapshot of their
        // own so that the older kinds' snapshot stays as it was.
        let mut text = String::new();
        let samples = Samples::new(
            &[1, 2, 3, 50].map(SimDuration::from_millis),
            Some(&[1.0, 1.0, 5.0, 1.0]),
        )
        .unwrap();
        let file = Dist::Empirical {
            values: Vec::new(),
            file: Some("db.csv".into()),
            column: None,
            unit: None,
            weights: Some("count".into()),
            samples: Some(samples),
        };
        for (case, d) in [
            (HISTOGRAM, dist(HISTOGRAM)),
            (PERCENTILES_FIT, dist(PERCENTILES_FIT)),
            ("Empirical(file) 1ms 2ms 3ms 50ms weighted 1 1 5 1", file),
        ] {
            let sampler = d.compile().unwrap();
            let mut rng = Seed(42).stream("sampler-snapshot");
            let draws: Vec<String> = (0..8)
                .map(|_| sampler.sample(&mut rng).as_nanos().to_string())
                .collect();
            text.push_str(&format!("{case}\n    {}\n", draws.join(" ")));
        }
        insta::assert_snapshot!("sample__first_draws_measured", text);
    }

    #[test]
    fn a_histogram_answers_as_histogram_quantile_does() {
        // Prometheus's histogram_quantile: rank q · total, linear within the bucket that
        // holds it, the first bucket from 0, and the largest finite bound for a rank in +Inf.
        let h = dist(HISTOGRAM).compile().unwrap();
        let at = |q: f64| h.quantile_nanos(q) / 1e6;
        // rank 200 of 400 is in (5ms, 10ms]: 5 + 5 · (200 - 120) / 180.
        assert!(
            (at(0.5) - (5.0 + 5.0 * 80.0 / 180.0)).abs() < 1e-9,
            "{}",
            at(0.5)
        );
        // rank 60 is in the first bucket, from 0: 5 · 60 / 120.
        assert!((at(0.15) - 2.5).abs() < 1e-9);
        // rank 399 is in +Inf: the largest finite bound.
        assert_eq!(at(0.9975), 100.0);
        assert!((h.cdf_nanos(100e6 - 1.0) - 398.0 / 400.0).abs() < 1e-9);
        assert_eq!(h.cdf_nanos(100e6), 1.0);
        // The mean: each bucket's middle, the +Inf share at 100ms.
        let mean = (120.0 * 2.5 + 180.0 * 7.5 + 90.0 * 17.5 + 8.0 * 62.5 + 2.0 * 100.0) / 400.0;
        assert!((h.mean_nanos().unwrap() / 1e6 - mean).abs() < 1e-9);
    }

    #[test]
    fn percentiles_through_a_p50_and_a_p99_are_the_log_normal() {
        let fit = dist("Percentiles(p50: \"40ms\", p99: \"400ms\")")
            .compile()
            .unwrap();
        let log_normal = dist("LogNormal(median: \"40ms\", p99: \"400ms\")")
            .compile()
            .unwrap();
        let (mut a, mut b) = (Seed(8).stream("fit"), Seed(8).stream("fit"));
        for _ in 0..10_000 {
            assert_eq!(fit.sample(&mut a), log_normal.sample(&mut b));
        }
        for q in [0.001, 0.1, 0.5, 0.9, 0.99, 0.9999] {
            // Both go through Acklam's Φ⁻¹ (relative error below 1.2e-9), except at the
            // given p50 and p99, which the fit returns exactly.
            let (x, y) = (fit.quantile_nanos(q), log_normal.quantile_nanos(q));
            assert!((x / y - 1.0).abs() < 1e-8, "q{q}: {x} vs {y}");
        }
        let (x, y) = (fit.mean_nanos().unwrap(), log_normal.mean_nanos().unwrap());
        assert!((x / y - 1.0).abs() < 1e-12, "mean {x} vs {y}");
        // The given percentiles are the quantiles, exactly; between them the fit rises.
        let fit = dist(PERCENTILES_FIT).compile().unwrap();
        for (q, ms) in [(0.5, 4.0), (0.9, 12.0), (0.99, 40.0), (0.999, 120.0)] {
            assert_eq!(fit.quantile_nanos(q), ms * 1e6);
            assert!((fit.cdf_nanos(ms * 1e6) - q).abs() < 1e-9);
        }
        assert!(fit.quantile_nanos(0.95) > 12e6 && fit.quantile_nanos(0.95) < 40e6);
    }

    #[test]
    fn weighted_samples_count_their_weight() {
        let values = [3, 1, 2, 50].map(SimDuration::from_millis);
        let s = Samples::new(&values, Some(&[5.0, 1.0, 1.0, 1.0])).unwrap();
        // Sorted 1, 2, 3, 50 with weights 1, 1, 5, 1 of 8.
        assert_eq!(s.quantile(0.25), 2e6);
        assert_eq!(s.quantile(0.26), 3e6);
        assert_eq!(s.quantile(0.875), 3e6);
        assert_eq!(s.quantile(0.9), 50e6);
        assert_eq!(s.cdf(2.9e6), 0.25);
        assert!((s.mean() - (1.0 + 2.0 + 15.0 + 50.0) / 8.0 * 1e6).abs() < 1e-6);
        let plain = Samples::new(&values, None).unwrap();
        assert_eq!(plain.quantile(0.5), 2e6);
        assert_eq!(plain.cdf(3e6), 0.75);
        assert_eq!(
            Samples::new(&values, Some(&[0.0; 4])).unwrap_err().field,
            "weights"
        );
    }

    #[test]
    fn bad_parameters_name_the_field() {
        for (case, field) in [
            ("Uniform(low: \"2s\", high: \"1s\")", "high"),
            ("Exponential(mean: \"0s\")", "mean"),
            ("LogNormal(median: \"1s\")", "sigma"),
            (
                "LogNormal(median: \"1s\", sigma: 0.3, p99: \"3s\")",
                "sigma",
            ),
            ("LogNormal(median: \"1s\", p99: \"1s\")", "p99"),
            ("Pareto(scale: \"1ms\", shape: 0.0)", "shape"),
            ("Mixture(components: [])", "components"),
            (
                "Mixture(components: [(weight: 1, dist: Constant(value: \"1s\")), (weight: -1, dist: Constant(value: \"1s\"))])",
                "components[1].weight",
            ),
            (
                "Mixture(components: [(weight: 1, dist: Exponential(mean: \"0s\"))])",
                "components[0].dist.mean",
            ),
            ("Empirical(values: [])", "values"),
            ("Empirical(file: \"x.csv\")", "file"),
            ("Empirical(values: [\"1ms\"], column: \"ms\")", "column"),
            ("Histogram(buckets: [])", "buckets"),
            (
                "Histogram(buckets: [(\"5ms\", 0), (\"+Inf\", 0)])",
                "buckets",
            ),
            ("Histogram(buckets: [(\"+Inf\", 10)])", "buckets"),
            (
                "Histogram(buckets: [(\"5ms\", 0), (\"+Inf\", 10)])",
                "buckets",
            ),
            (
                "Histogram(buckets: [(\"5ms\", 10), (\"10ms\", 9)])",
                "buckets[1]",
            ),
            (
                "Histogram(buckets: [(\"5ms\", 10), (\"5ms\", 12)])",
                "buckets[1]",
            ),
            (
                "Histogram(buckets: [(\"+Inf\", 10), (\"5ms\", 12)])",
                "buckets[1]",
            ),
            ("Histogram(buckets: [(\"5ms\", -1)])", "buckets[0]"),
            ("Percentiles(p99: \"40ms\")", ""),
            ("Percentiles(p50: \"40ms\", p90: \"40ms\")", "p90"),
            (
                "Percentiles(p50: \"40ms\", p90: \"12ms\", p99: \"80ms\")",
                "p90",
            ),
            ("Percentiles(p10: \"0s\", p90: \"12ms\")", "p10"),
        ] {
            let err = dist(case).validate().unwrap_err();
            assert_eq!(err.field, field, "{case}: {err}");
        }
    }

    #[test]
    fn uniform_below_is_in_range_and_covers_it() {
        let mut rng = Seed(1).stream("below");
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[uniform_below(&mut rng, 7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 850 && c < 1150), "{seen:?}");
    }

    #[test]
    fn inverse_normal_cdf_matches_known_values() {
        assert!((inverse_normal_cdf(0.99) - Z_P99).abs() < 1e-8);
        assert!(inverse_normal_cdf(0.5).abs() < 1e-12);
        assert!((inverse_normal_cdf(0.001) + 3.090_232_306_167_813_6).abs() < 1e-8);
    }
}
