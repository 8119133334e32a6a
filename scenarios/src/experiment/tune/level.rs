//! One stress level of a finalist: the seeds it ran, how they went, and the two verdicts the
//! margin reads from them, each with its confidence.
//!
//! - **Stability.** A run does not hold when it did not recover (metastable) or was degraded
//!   before the trigger: its verdict is collapsed, or its baseline success ratio is under the
//!   verdict's `healthy_ratio` times the candidate's own baseline as the file is (its race
//!   runs), so that a stress which already hurts before anything happens is not read as a
//!   system that recovers (79% success before a spike, recovering to 79%, holds nothing).
//! - **Expectations.** A run does not hold when one of the file's expectations failed.
//!
//! Each verdict is a test of "P(the run does not hold) ≤ `--threshold`" on the level's seeds:
//! it **holds** when the exact (Clopper–Pearson) upper bound is at most the threshold,
//! **breaks** when the lower bound is above it, and is **undecided** otherwise. Seeds come in
//! batches ([`Looks`]): the first `--margin-seeds`, then doubling up to
//! `--margin-seeds-max`, a level taking the next batch only while one of its verdicts is
//! undecided. Looking after each batch and stopping when the answer is clear would make the
//! error of a verdict more likely than one look's; each look's bounds are therefore at
//! `(1 − confidence) / looks` on each side (Bonferroni), so that the chance that a level is
//! said to hold when its probability is above the threshold (or to break when it is at most)
//! stays within `1 − confidence` however the looks fall.

use super::super::phase::Class;
use super::super::stats::clopper_pearson;
use super::TuneRun;

/// The seeds a level is judged on at each look: the first batch, then doubling, up to the
/// most; cumulative counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Looks(pub Vec<u64>);

impl Looks {
    /// `first`, `2 × first`, … while below `max`, then `max`.
    pub fn of(first: u64, max: u64) -> Looks {
        let first = first.clamp(1, max.max(1));
        let mut looks = vec![first];
        while let Some(&n) = looks.last()
            && n < max
        {
            looks.push((n * 2).min(max));
        }
        Looks(looks)
    }

    /// The most seeds a level runs.
    pub fn max(&self) -> u64 {
        *self.0.last().expect("at least one look")
    }

    /// Each bound's level: `(1 − confidence) / looks` on each side.
    pub fn alpha(&self, confidence: f64) -> f64 {
        (1.0 - confidence) / self.0.len() as f64
    }

    /// The seeds after the look that follows `n` seeds (`None` once the most are run).
    pub fn next(&self, n: u64) -> Option<u64> {
        self.0.iter().copied().find(|&l| l > n)
    }
}

/// What one verdict of a level says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The upper bound is at most the threshold.
    Holds,
    /// The lower bound is above the threshold.
    Breaks,
    /// Neither, yet (or after the most seeds).
    Undecided,
}

impl Decision {
    /// The word the tables use.
    pub fn word(self) -> &'static str {
        match self {
            Decision::Holds => "holds",
            Decision::Breaks => "breaks",
            Decision::Undecided => "undecided",
        }
    }

    /// `events` of `runs` against `threshold`, each bound at `alpha`.
    pub fn of(events: u64, runs: u64, threshold: f64, alpha: f64) -> Decision {
        if runs == 0 {
            return Decision::Undecided;
        }
        let (low, high) = clopper_pearson(events, runs, alpha);
        if high <= threshold {
            Decision::Holds
        } else if low > threshold {
            Decision::Breaks
        } else {
            Decision::Undecided
        }
    }
}

/// How the runs of a level went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Seeds run.
    pub runs: u64,
    /// Runs that did not recover.
    pub metastable: u64,
    /// Runs degraded before the trigger (see the module docs).
    pub degraded: u64,
    /// Runs where an expectation failed.
    pub failed: u64,
    /// Runs that did not hold one verdict or the other.
    pub broken: u64,
    /// The sum and count of the runs' baseline success ratios, for their mean.
    baseline: (f64, u64),
    /// The replay command of the first run that did not recover or was degraded.
    pub first_unstable: Option<String>,
    /// The replay command of the first run that failed an expectation.
    pub first_failed: Option<String>,
}

impl Tally {
    /// Counts `run`, degraded when its baseline is under `healthy_min`.
    pub fn add(&mut self, run: &TuneRun, healthy_min: Option<f64>) {
        self.runs += 1;
        let degraded = match run.class {
            None | Some(Class::Collapsed) => true,
            Some(_) => run.baseline.zip(healthy_min).is_some_and(|(b, h)| b < h),
        };
        if degraded {
            self.degraded += 1;
        } else if run.class == Some(Class::Metastable) {
            self.metastable += 1;
        }
        if (degraded || run.class == Some(Class::Metastable)) && self.first_unstable.is_none() {
            self.first_unstable = Some(run.record.replay.clone());
        }
        if degraded || run.class == Some(Class::Metastable) || !run.passed() {
            self.broken += 1;
        }
        if !run.passed() {
            self.failed += 1;
            self.first_failed
                .get_or_insert_with(|| run.record.replay.clone());
        }
        if let Some(b) = run.baseline {
            self.baseline.0 += b;
            self.baseline.1 += 1;
        }
    }

    /// Runs that do not hold the stability verdict: metastable or degraded.
    pub fn unstable(&self) -> u64 {
        self.metastable + self.degraded
    }

    /// The mean baseline success ratio of the runs that had one.
    pub fn baseline_mean(&self) -> Option<f64> {
        (self.baseline.1 > 0).then(|| self.baseline.0 / self.baseline.1 as f64)
    }
}

/// A level of one finalist: its grid point, its runs so far and its two verdicts.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// The finalist.
    pub candidate: usize,
    /// The stress's grid point.
    pub k: u64,
    /// How its runs went.
    pub tally: Tally,
    /// Stability: metastable or degraded at most the threshold.
    pub stable: Decision,
    /// Expectations: a failure at most the threshold.
    pub expectations: Decision,
}

impl Level {
    /// A level not yet run.
    pub fn new(candidate: usize, k: u64) -> Level {
        Level {
            candidate,
            k,
            tally: Tally::default(),
            stable: Decision::Undecided,
            expectations: Decision::Undecided,
        }
    }

    /// Decides both verdicts on the runs so far.
    pub fn decide(&mut self, threshold: f64, alpha: f64) {
        let t = &self.tally;
        self.stable = Decision::of(t.unstable(), t.runs, threshold, alpha);
        self.expectations = Decision::of(t.failed, t.runs, threshold, alpha);
    }

    /// Whether both verdicts are decided, or the level has run its most seeds.
    pub fn settled(&self, looks: &Looks) -> bool {
        self.tally.runs >= looks.max()
            || (self.stable != Decision::Undecided && self.expectations != Decision::Undecided)
    }

    /// Whether the degraded runs are most of those that do not hold: the level is then
    /// degraded before the trigger rather than metastable.
    pub fn mostly_degraded(&self) -> bool {
        self.tally.degraded > self.tally.metastable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_double_from_the_first_batch_up_to_the_most() {
        assert_eq!(Looks::of(5, 60).0, [5, 10, 20, 40, 60]);
        assert_eq!(Looks::of(5, 80).0, [5, 10, 20, 40, 80]);
        assert_eq!(Looks::of(3, 3).0, [3]);
        assert_eq!(Looks::of(10, 5).0, [5]);
        let looks = Looks::of(5, 60);
        assert_eq!(looks.next(0), Some(5));
        assert_eq!(looks.next(20), Some(40));
        assert_eq!(looks.next(60), None);
        assert!((looks.alpha(0.95) - 0.01).abs() < 1e-15);
    }

    /// The decisions already made, by (events, runs): the bounds take a bisection each.
    type Known = std::collections::BTreeMap<(u64, u64), Decision>;

    /// The sequential verdict on a level whose runs fail with probability `p`, drawn from
    /// `rng`: batches at the looks of 5 up to 60 seeds, stopping at the first decision.
    fn verdict(p: f64, rng: &mut sim_core::RngStream, known: &mut Known) -> Decision {
        let looks = Looks::of(5, 60);
        let alpha = looks.alpha(0.95);
        let (mut events, mut runs) = (0, 0);
        for &n in &looks.0 {
            while runs < n {
                // A uniform draw in [0, 1) from the top 53 bits.
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                events += u64::from(u < p);
                runs += 1;
            }
            let d = *known
                .entry((events, runs))
                .or_insert_with(|| Decision::of(events, runs, 0.1, alpha));
            if d != Decision::Undecided {
                return d;
            }
        }
        Decision::Undecided
    }

    #[test]
    fn each_verdict_is_wrong_no_more_often_than_its_confidence_allows() {
        // 4000 levels either side of a threshold of 10%, just by it, where a wrong verdict is
        // likeliest: at 10.01% a "holds" is wrong, at 9.99% a "breaks" is; each at most 5% of
        // the time, however the looks fall. Without the Bonferroni share (5% a side at every
        // look) a "breaks" at 9.99% comes 8.6% of the time (exact, over the five looks); with
        // it, 1.8%.
        let mut rng = sim_core::Seed(7).stream("test/levels");
        let known = &mut Known::new();
        let reps = 4000;
        for (p, wrong) in [(0.1001, Decision::Holds), (0.0999, Decision::Breaks)] {
            let n = (0..reps)
                .filter(|_| verdict(p, &mut rng, known) == wrong)
                .count();
            assert!(
                (n as f64) < 0.05 * reps as f64,
                "at p = {p}, {n} of {reps} levels were said to {}",
                wrong.word()
            );
        }
        // And the verdicts do come: far from the threshold, almost always the right one.
        let right = (0..reps)
            .filter(|_| verdict(0.0, &mut rng, known) == Decision::Holds)
            .count();
        assert_eq!(right, reps, "no failure in 60 seeds holds");
        let right = (0..reps)
            .filter(|_| verdict(0.5, &mut rng, known) == Decision::Breaks)
            .count();
        assert!(
            right as f64 > 0.99 * reps as f64,
            "{right} of {reps} at 50% broke"
        );
    }

    #[test]
    fn a_verdict_needs_its_bound_on_the_right_side_of_the_threshold() {
        // At 0.01 a side: no failure in 60 seeds holds (upper bound 7.4%), one does not
        // (10.6%), nor none in 40 (10.9%); 3 of 5 break (lower bound 10.6%), 2 of 5 do not
        // (3.3%).
        assert_eq!(Decision::of(0, 60, 0.1, 0.01), Decision::Holds);
        assert_eq!(Decision::of(1, 60, 0.1, 0.01), Decision::Undecided);
        assert_eq!(Decision::of(3, 5, 0.1, 0.01), Decision::Breaks);
        assert_eq!(Decision::of(2, 5, 0.1, 0.01), Decision::Undecided);
        assert_eq!(Decision::of(0, 40, 0.1, 0.01), Decision::Undecided);
        assert_eq!(Decision::of(0, 0, 0.1, 0.01), Decision::Undecided);
    }
}
