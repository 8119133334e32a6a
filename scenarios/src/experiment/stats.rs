//! The statistics of an experiment: [`wilson`] intervals for pass rates, [`Moments`] (mean and
//! standard deviation), [`t_interval`] for the mean of paired differences, and
//! [`sign_test`] for two pass/fail records on the same seeds.
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
