//! The statistics of an experiment: [`wilson`] intervals for pass rates, [`clopper_pearson`]
//! bounds for the probability of a failure, [`Moments`] (mean and standard deviation),
//! [`t_interval`] for the mean of paired differences, and [`sign_test`] for two pass/fail
//! records on the same seeds.
//!
//! Outside the simulation: nothing here feeds back into a run, so `f64` arithmetic is fine; only
//! `sqrt` (exactly rounded everywhere) and `libm` are used, so results are the same on every
//! machine.

/// The two-sided 95% quantile of the standard normal distribution.
pub const Z_95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval at 95% for `successes` out of `trials`: a pass rate's confidence
/// interval that stays inside [0, 1] and is honest for rates near 0 or 1 and small samples
/// (unlike the normal approximation). `(0, 1)` when there are no trials.
pub fn wilson(successes: u64, trials: u64) -> (f64, f64) {
    assert!(
        successes <= trials,
        "{successes} successes of {trials} trials"
    );
    if trials == 0 {
        return (0.0, 1.0);
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = Z_95 * Z_95;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = Z_95 / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The exact (Clopper–Pearson) bounds on a probability from `events` out of `trials`, each
/// one-sided at level `1 − alpha`: the lower bound is the `p` at which `events` or more would
/// happen with probability `alpha`, the upper the `p` at which `events` or fewer would. A
/// two-sided interval at 95% is `alpha = 0.025`. `(0, 1)` when there are no trials.
///
/// Where a verdict rests on a bound near 0 ("P(metastable) is at most 10%") from a few dozen
/// seeds, the exact bound is the one to use: its coverage is at least the nominal level for
/// every `p` and `n` (it is conservative), where the Wilson interval's dips below it near 0
/// and 1 for small samples (Brown, Cai & DasGupta 2001). No crate is needed for it: each end
/// is the root of a binomial tail, found here by bisection on the tail summed in logarithms
/// (`libm::lgamma`), the same sum as [`sign_test`]'s.
pub fn clopper_pearson(events: u64, trials: u64, alpha: f64) -> (f64, f64) {
    assert!(events <= trials, "{events} events of {trials} trials");
    assert!(alpha > 0.0 && alpha < 1.0, "alpha {alpha} outside (0, 1)");
    if trials == 0 {
        return (0.0, 1.0);
    }
    let lower = if events == 0 {
        0.0
    } else {
        // P(X ≥ events | p) grows with p: the p at which it reaches alpha.
        root(|p| 1.0 - binomial_cdf(events - 1, trials, p) - alpha)
    };
    let upper = if events == trials {
        1.0
    } else {
        // P(X ≤ events | p) falls as p grows: the p at which it falls to alpha.
        root(|p| alpha - binomial_cdf(events, trials, p))
    };
    (lower, upper)
}

/// The root in (0, 1) of `f`, which is increasing there, by bisection to within 1e-15 (the
/// bounds' last digits are not worth more).
fn root(f: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    // Each step halves the bracket: 60 steps take it below 1e-18.
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// P(X ≤ `k`) for X binomial with `n` trials of probability `p` in (0, 1), summed term by
/// term in logarithms.
fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    let ln_n = libm::lgamma(n as f64 + 1.0);
    let (ln_p, ln_q) = (libm::log(p), libm::log1p(-p));
    let sum: f64 = (0..=k.min(n))
        .map(|i| {
            let ln_choose =
                ln_n - libm::lgamma(i as f64 + 1.0) - libm::lgamma((n - i) as f64 + 1.0);
            libm::exp(ln_choose + i as f64 * ln_p + (n - i) as f64 * ln_q)
        })
        .sum();
    sum.min(1.0)
}

/// Count, mean and sample standard deviation of a list of values (Welford's update, stable for
/// values far from zero).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Moments {
    /// How many values.
    pub count: u64,
    /// Their mean (0 when there are none).
    pub mean: f64,
    /// The sum of squared distances from the mean.
    m2: f64,
}

impl Moments {
    /// The moments of `values`, in their order.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Moments {
        let mut m = Moments::default();
        for v in values {
            m.add(v);
        }
        m
    }

    /// Takes one more value.
    pub fn add(&mut self, value: f64) {
        self.count += 1;
        let delta = value - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (value - self.mean);
    }

    /// The sample standard deviation (n − 1 in the denominator); 0 for fewer than two values.
    pub fn sd(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        (self.m2 / (self.count - 1) as f64).sqrt()
    }
}

/// The 95% confidence interval of the mean of `differences` (Student's t with n − 1 degrees
/// of freedom): `None` for fewer than two values.
pub fn t_interval(differences: &[f64]) -> Option<(f64, f64)> {
    let m = Moments::of(differences.iter().copied());
    if m.count < 2 {
        return None;
    }
    let half = t_quantile_975(m.count - 1) * m.sd() / (m.count as f64).sqrt();
    Some((m.mean - half, m.mean + half))
}

/// The 97.5% quantile of Student's t distribution with `df` degrees of freedom (two-sided
/// 95%): exact table values up to 30, then the Cornish–Fisher expansion around the normal
/// quantile, within 1e-4 of the exact value from 31 on.
pub fn t_quantile_975(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706_205, 4.302_653, 3.182_446, 2.776_445, 2.570_582, 2.446_912, 2.364_624, 2.306_004,
        2.262_157, 2.228_139, 2.200_985, 2.178_813, 2.160_369, 2.144_787, 2.131_450, 2.119_905,
        2.109_816, 2.100_922, 2.093_024, 2.085_963, 2.079_614, 2.073_873, 2.068_658, 2.063_899,
        2.059_539, 2.055_529, 2.051_831, 2.048_407, 2.045_230, 2.042_272,
    ];
    assert!(df >= 1, "a t quantile needs at least one degree of freedom");
    if let Some(&t) = TABLE.get(df as usize - 1) {
        return t;
    }
    let z = Z_95;
    let n = df as f64;
    let z3 = z * z * z;
    let (z5, z7) = (z3 * z * z, z3 * z * z * z * z);
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
}

/// The exact one-sided sign test (McNemar's exact test) on paired pass/fail outcomes: of the
/// seeds where two settings disagree, `worse` went to the first and `better` to the second;
/// the result is the probability of `worse` or more of `worse + better` fair coin tosses,
/// the p-value of "the second passes no more often than the first". 1 when they never
/// disagree. Summed in logarithms (`libm::lgamma`), so it stays finite for thousands of seeds.
pub fn sign_test(worse: u64, better: u64) -> f64 {
    let n = worse + better;
    if n == 0 {
        return 1.0;
    }
    let ln_n = libm::lgamma(n as f64 + 1.0);
    let half = n as f64 * core::f64::consts::LN_2;
    let p: f64 = (worse..=n)
        .map(|k| {
            libm::exp(
                ln_n - libm::lgamma(k as f64 + 1.0) - libm::lgamma((n - k) as f64 + 1.0) - half,
            )
        })
        .sum();
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn wilson_intervals_match_published_values() {
        // Values from Newcombe (1998), table I, and the closed form for 0 of n.
        let (lo, hi) = wilson(81, 263);
        assert!(
            close(lo, 0.2553, 1e-4) && close(hi, 0.3662, 1e-4),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(15, 148);
        assert!(
            close(lo, 0.0624, 1e-4) && close(hi, 0.1605, 1e-4),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(0, 20);
        assert!(
            close(lo, 0.0, 1e-12) && close(hi, 0.1611, 1e-4),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(1, 29);
        assert!(
            close(lo, 0.0061, 1e-4) && close(hi, 0.1718, 1e-4),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(5, 10);
        assert!(
            close(lo, 0.2366, 1e-4) && close(hi, 0.7634, 1e-4),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(20, 20);
        assert!(
            close(lo, 0.8389, 1e-4) && close(hi, 1.0, 1e-12),
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }

    #[test]
    fn clopper_pearson_bounds_match_published_and_closed_form_values() {
        let check = |events, trials, alpha, lo: f64, hi: f64| {
            let (l, h) = clopper_pearson(events, trials, alpha);
            assert!(
                close(l, lo, 1e-5) && close(h, hi, 1e-5),
                "{events}/{trials} at {alpha}: {l} {h}, expected {lo} {hi}"
            );
        };
        // 95% two-sided: 1 of 10 (Agresti & Coull 1998), 81 of 263 (Newcombe 1998, table I,
        // the exact method), and values from the beta quantiles the bounds are (mpmath).
        check(1, 10, 0.025, 0.002_529, 0.445_016);
        check(81, 263, 0.025, 0.252_737, 0.367_622);
        check(5, 10, 0.025, 0.187_086, 0.812_914);
        check(3, 20, 0.025, 0.032_071, 0.378_927);
        check(2, 1000, 0.025, 0.000_242, 0.007_206);
        check(1, 60, 0.01, 0.000_167, 0.105_582);
        check(13, 60, 0.01, 0.107_151, 0.365_286);
        // None or all: the closed forms 1 − alpha^(1/n) and alpha^(1/n).
        for (n, alpha) in [(20u64, 0.025), (60, 0.01), (5, 0.05)] {
            let edge = libm::pow(alpha, 1.0 / n as f64);
            check(0, n, alpha, 0.0, 1.0 - edge);
            check(n, n, alpha, edge, 1.0);
        }
        assert_eq!(clopper_pearson(0, 0, 0.025), (0.0, 1.0));
    }

    #[test]
    fn clopper_pearson_is_never_narrower_than_wilson_at_the_same_level() {
        for (events, trials) in [(0, 5), (1, 10), (3, 20), (10, 40), (81, 263)] {
            let (cl, ch) = clopper_pearson(events, trials, 0.025);
            let (wl, wh) = wilson(events, trials);
            assert!(cl <= wl + 1e-12 && ch >= wh - 1e-12, "{events}/{trials}");
        }
    }

    #[test]
    fn moments_are_the_textbook_ones() {
        let m = Moments::of([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m.count, 8);
        assert!(close(m.mean, 5.0, 1e-12));
        // Sample variance 32/7.
        assert!(close(m.sd(), (32.0f64 / 7.0).sqrt(), 1e-12));
        assert_eq!(Moments::of([3.0]).sd(), 0.0);
    }

    #[test]
    fn t_quantiles_match_tables_and_approach_the_normal() {
        assert!(close(t_quantile_975(1), 12.7062, 1e-4));
        assert!(close(t_quantile_975(19), 2.0930, 1e-4));
        // Exact values: 2.0395 (31), 2.0211 (40), 2.0086 (50), 1.9840 (100).
        assert!(close(t_quantile_975(31), 2.0395, 1e-4));
        assert!(close(t_quantile_975(40), 2.0211, 1e-4));
        assert!(close(t_quantile_975(50), 2.0086, 1e-4));
        assert!(close(t_quantile_975(100), 1.9840, 1e-4));
        assert!(close(t_quantile_975(1_000_000), Z_95, 1e-5));
    }

    #[test]
    fn sign_tests_match_the_binomial_tails() {
        // 5 of 5 discordant pairs one way: 1/32; 8 of 10: (45 + 10 + 1)/1024.
        assert!(close(sign_test(5, 0), 1.0 / 32.0, 1e-12));
        assert!(close(sign_test(8, 2), 56.0 / 1024.0, 1e-12));
        assert!(close(sign_test(0, 7), 1.0, 1e-12));
        assert_eq!(sign_test(0, 0), 1.0);
        // Large n: 5100 of 10000 is about 2.0 standard deviations: 0.0233 (normal tail with
        // continuity correction 0.02303).
        assert!(close(sign_test(5100, 4900), 0.0233, 2e-4));
    }

    #[test]
    fn a_t_interval_of_known_data() {
        // Mean 1, sample sd sqrt(2/3), n 4: half width t(3) × sd / 2.
        let (lo, hi) = t_interval(&[0.0, 1.0, 2.0, 1.0]).unwrap();
        let m = Moments::of([0.0, 1.0, 2.0, 1.0]);
        let half = t_quantile_975(3) * m.sd() / 2.0;
        assert!(close(lo, m.mean - half, 1e-12) && close(hi, m.mean + half, 1e-12));
        assert!(close(half, 3.182_446 * (2.0f64 / 3.0).sqrt() / 2.0, 1e-9));
        assert_eq!(t_interval(&[1.0]), None);
    }
}
