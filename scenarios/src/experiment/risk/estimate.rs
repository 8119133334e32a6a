//! From what the runs counted to a probability with its 95% interval, and to a mean time to
//! the event: the arithmetic of each method, and how the numbers are written for a reader.
//!
//! - Plain runs: `hits` of `runs` reached the event; the interval is Wilson's (honest near 0
//!   and for few hits, unlike the normal approximation).
//! - Splitting on whole runs: each replication is an unbiased estimate; the estimate is their
//!   mean, the interval Student's t over them (replications are independent by construction).
//! - Splitting excursions: each replication estimates a rate, the exits from the basin per
//!   second times the probability that an exit reaches the event; the rate's mean and t
//!   interval give P(within T) = 1 − e^(−rate·T) and the mean time 1/rate, both monotone in
//!   the rate, so the interval's ends map to theirs.
//!
//! Outside the simulation: `f64` is fine, with `libm` for what is not exactly rounded.

use crate::experiment::stats::{Moments, Z_95, t_interval, wilson};

/// A probability with its 95% interval, and the mean time to the event where it is known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The estimate.
    pub probability: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
    /// The mean time to the event in seconds, with its interval (estimate, low, high).
    pub mean_time: Option<(f64, f64, f64)>,
}

impl Estimate {
    /// The interval's half width over the estimate (infinite for an estimate of 0).
    pub fn relative_error(&self) -> f64 {
        if self.probability > 0.0 {
            (self.high - self.low) / 2.0 / self.probability
        } else {
            f64::INFINITY
        }
    }
}

/// `hits` of `runs` plain runs reached the event.
pub fn plain(hits: u64, runs: u64) -> Estimate {
    let (low, high) = wilson(hits, runs);
    Estimate {
        probability: if runs == 0 {
            0.0
        } else {
            hits as f64 / runs as f64
        },
        low,
        high,
        mean_time: None,
    }
}

/// The mean and the 95% t interval of independent estimates, the interval kept within
/// `[0, cap]` (`None` for fewer than two).
fn mean_interval(values: &[f64], cap: f64) -> Option<(f64, f64, f64)> {
    let (low, high) = t_interval(values)?;
    Some((
        Moments::of(values.iter().copied()).mean,
        low.clamp(0.0, cap),
        high.clamp(0.0, cap),
    ))
}

/// Independent replications of splitting on whole runs, each an unbiased estimate of the
/// probability.
pub fn replications(estimates: &[f64]) -> Option<Estimate> {
    let (probability, low, high) = mean_interval(estimates, 1.0)?;
    Some(Estimate {
        probability,
        low,
        high,
        mean_time: None,
    })
}

/// Independent replications of splitting excursions, each an estimate of the event's rate
/// per second; `horizon` in seconds.
pub fn rates(rates: &[f64], horizon: f64) -> Option<Estimate> {
    let (rate, low, high) = mean_interval(rates, f64::INFINITY)?;
    let within = |r: f64| -libm::expm1(-r * horizon);
    let mean_time = |r: f64| if r > 0.0 { 1.0 / r } else { f64::INFINITY };
    Some(Estimate {
        probability: within(rate),
        low: within(low),
        high: within(high),
        mean_time: Some((mean_time(rate), mean_time(high), mean_time(low))),
    })
}

/// The plain runs that would reach the relative error (half width over estimate) of
/// `estimate` at its probability (see [`plain_runs_at`]).
pub fn plain_runs_for(estimate: &Estimate) -> Option<f64> {
    let (p, e) = (estimate.probability, estimate.relative_error());
    (p > 0.0 && p < 1.0 && e.is_finite() && e > 0.0).then(|| plain_runs_at(p, e))
}

/// The plain runs whose 95% interval at probability `p` has a half width of `e` times `p`:
/// z²(1 − p)/(p·e²) (infinite at p = 0).
pub fn plain_runs_at(p: f64, e: f64) -> f64 {
    if p <= 0.0 {
        f64::INFINITY
    } else {
        Z_95 * Z_95 * (1.0 - p) / (p * e * e)
    }
}

/// A probability for a reader: a percentage from 1%, else `1.9×10⁻³`.
pub fn probability(p: f64) -> String {
    if p == 0.0 {
        "0".to_string()
    } else if p >= 0.01 {
        format!("{:.1}%", p * 100.0)
    } else {
        scientific(p)
    }
}

/// A positive number as `1.9×10⁻³` (two significant digits).
pub fn scientific(x: f64) -> String {
    let mut exponent = libm::floor(libm::log10(x)) as i32;
    let mut mantissa = x / libm::pow(10.0, f64::from(exponent));
    // 9.96 rounds to 10.0: write it as 1.0 of the next power.
    if mantissa >= 9.95 {
        mantissa /= 10.0;
        exponent += 1;
    }
    format!("{mantissa:.1}×10{}", superscript(exponent))
}

/// An interval for a reader, in the estimate's form: `[1.5, 2.4]×10⁻³` when both ends share
/// the estimate's power of ten, else each end written out.
pub fn interval(estimate: &Estimate) -> String {
    let p = estimate.probability;
    if p > 0.0 && p < 0.01 {
        let exponent = libm::floor(libm::log10(p)) as i32;
        let scale = libm::pow(10.0, f64::from(exponent));
        let (low, high) = (estimate.low / scale, estimate.high / scale);
        if low >= 0.1 && high < 100.0 {
            return format!("[{low:.1}, {high:.1}]×10{}", superscript(exponent));
        }
    }
    format!(
        "[{}, {}]",
        probability(estimate.low),
        probability(estimate.high)
    )
}

fn superscript(exponent: i32) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let mut out = String::new();
    if exponent < 0 {
        out.push('⁻');
    }
    for c in exponent.unsigned_abs().to_string().chars() {
        out.push(DIGITS[c.to_digit(10).expect("a digit") as usize]);
    }
    out
}

/// A span of seconds for a reader, rounded: `391ms` under a second, else as [`span`] writes it.
pub fn short_span(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.0}ms", seconds * 1e3)
    } else {
        span(seconds)
    }
}

/// A span of seconds for a reader, in the largest unit that keeps it at least 1: `1.4
/// years`, `3.2 days`, `5.0 hours`, `12 minutes`, `40s`.
pub fn span(seconds: f64) -> String {
    const UNITS: [(f64, &str); 4] = [
        (365.25 * 86_400.0, "years"),
        (86_400.0, "days"),
        (3_600.0, "hours"),
        (60.0, "minutes"),
    ];
    if !seconds.is_finite() {
        return "forever".to_string();
    }
    for (size, name) in UNITS {
        if seconds >= size {
            return format!("{:.1} {name}", seconds / size);
        }
    }
    format!("{seconds:.1}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_a_reader_writes_them() {
        assert_eq!(probability(0.0019), "1.9×10⁻³");
        assert_eq!(probability(0.412), "41.2%");
        assert_eq!(probability(3.2e-12), "3.2×10⁻¹²");
        assert_eq!(scientific(1.5e10), "1.5×10¹⁰");
        assert_eq!(scientific(0.000999), "1.0×10⁻³");
        let e = Estimate {
            probability: 0.0019,
            low: 0.0015,
            high: 0.0024,
            mean_time: None,
        };
        assert_eq!(interval(&e), "[1.5, 2.4]×10⁻³");
        assert_eq!(span(1.4 * 365.25 * 86_400.0), "1.4 years");
        assert_eq!(span(90.0), "1.5 minutes");
    }

    #[test]
    fn a_rate_maps_to_a_probability_and_a_mean_time() {
        // Rates of one per 1000s, over 100s: P = 1 − e^(−0.1).
        let e = rates(&[0.0009, 0.0011, 0.001, 0.001], 100.0).expect("four replications");
        assert!((e.probability - (1.0 - libm::exp(-0.1))).abs() < 1e-12);
        let (mean, low, high) = e.mean_time.expect("a rate gives a mean time");
        assert!((mean - 1000.0).abs() < 1e-9 && low < mean && mean < high);
        assert!(e.low < e.probability && e.probability < e.high);
        // The plain runs that would reach the same relative error.
        let n = plain_runs_for(&e).expect("a finite error");
        assert!(n > 1.0 / e.probability);
    }
}
