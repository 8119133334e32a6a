//! Rare events by splitting: the probability that a simulation reaches an event that plain
//! runs almost never show, estimated by copying the runs that come closest to it and going on
//! from there on fresh randomness, each copy weighted by how many were dropped to make room.
//!
//! | item | what |
//! |---|---|
//! | [`Trajectory`] | what a model gives splitting: a state that can be copied, branched onto fresh random numbers, and advanced one event at a time, saying how close it is to the event |
//! | [`ams`] | Adaptive Multilevel Splitting over a set of starting points: the estimate, its levels, the events it cost, a path that reached the event |
//! | [`basin`] | one long run in the ordinary state: how often it leaves its basin, and copies of the states it leaves in, for splitting excursions |
//!
//! # The method
//!
//! [`ams`] is the generalised Adaptive Multilevel Splitting of Bréhier, Gazeau, Goudenège,
//! Lelièvre and Rousset (2016, *Unbiasedness of some generalized adaptive multilevel
//! splitting algorithms*), after Cérou and Guyader (2007): `N` trajectories run to their end
//! (the event, the horizon, or a return to the basin); each has a *score*, the highest value
//! its importance function took. At every iteration the level is the lowest score; *every*
//! trajectory at or below it is dropped (`K` of them: with integer importance functions,
//! such as a queue depth, many trajectories tie, and dropping only one of a tie would bias
//! the estimate), and each is replaced by a copy of a survivor, chosen uniformly, taken at
//! the first instant the survivor's importance went above the level and continued on fresh
//! random numbers. The estimate is the product over the iterations of `1 − K/N`, times the
//! share of the final trajectories that reached the event; the trajectories dropped while
//! their run ended in the event (possible for an event judged at the end of a run, never for
//! one that ends the run when it happens) count with the weight they had. It is unbiased for
//! any importance function and any `N ≥ 2`; a poor importance function costs variance, not
//! correctness. The iterations stop when at least half of the trajectories reached the event,
//! when every trajectory ties at the level (nothing survives: the estimate is what was
//! counted so far), at a highest level the caller sets, or at a budget of events; each is a
//! stopping time of the algorithm, which keeps the estimate unbiased.
//! A trajectory that says it was stopped from outside ([`Trajectory::stopped`], a caller's
//! Ctrl-C) ends the iterations at once; what they counted is then no estimate.
//!
//! Why this variant: fixed-level splitting (RESTART, fixed effort) needs its levels chosen
//! beforehand, which for a new model means a pilot run and a guess; AMS places its levels
//! where the trajectories are, needs only `N`, and its tie rule is exactly what integer
//! scores need. Its variance is estimated from independent replications (the caller runs
//! several and combines them), which also makes it trivially parallel and partitionable.
//!
//! A copy is taken without storing trajectories: each trajectory keeps the state it started
//! from and the event counts at which its score first passed each value (its *ladder*), and a
//! copy at level `z` replays the survivor from its start to the first rung above `z`. A model
//! whose run is a function of its seed and its branch points replays exactly, so this costs
//! events (reported), not memory: `N` states are held at a time, whatever the number of
//! levels.
//!
//! Every branch is named by the iteration (`level`) and the dropped slot it fills (`index`),
//! so a path that reached the event is its first state and a list of `(events, level, index)`
//! branch points: a replay command.

use crate::rng::RngStream;
use crate::time::{SimDuration, SimTime};

/// What a model gives splitting.
///
/// A trajectory must be deterministic given its state: a clone advanced by the same number of
/// events is the same trajectory, and [`Trajectory::branch`] is the only way its future
/// changes. The importance function (the score [`Position::At`] carries) may be any
/// function of the state; higher is closer to the event.
pub trait Trajectory: Clone {
    /// Executes one event and says where the trajectory is.
    fn step(&mut self) -> Position;
    /// Events executed since the run began (a clone keeps its original's count): the clock
    /// branch points are named by.
    fn events(&self) -> u64;
    /// The simulated time.
    fn time(&self) -> SimTime;
    /// Gives every random stream of the state fresh numbers, those of branch
    /// `(level, index)` of the run's seed, keeping each stream's identity.
    fn branch(&mut self, level: u32, index: u64);
    /// Whether the work was stopped from outside (a caller's Ctrl-C): splitting then ends
    /// within an event of every trajectory it runs or replays, with [`AmsStop::Stopped`], and
    /// [`basin`] ends its run. Looked at before every event; never, by default.
    fn stopped(&self) -> bool {
        false
    }
}

/// Where a trajectory is after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// Still going; the importance function is this.
    At(u64),
    /// The event happened: the run ends here, reaching it.
    Hit,
    /// The run ended without the event happening during it (its horizon, or nothing left to
    /// happen); `reached` says whether the event, judged at the end, is true of the run.
    End {
        /// Whether the run, as a whole, is the event (an expectation judged at the end).
        reached: bool,
    },
}

/// The score of a trajectory that hit the event: above every level.
pub const HIT: u64 = u64::MAX;

/// One branch point of a path: after `events` events, every stream took the numbers of
/// `(level, index)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Branch {
    /// Events executed when the branch was made.
    pub events: u64,
    /// The iteration that made it (0 for the starting points a caller branched).
    pub level: u32,
    /// The slot it filled.
    pub index: u64,
}

/// A starting point of [`ams`]: a state, the score it has already reached, and how it was
/// reached (which of the caller's origins, and the branches since).
#[derive(Clone, Debug)]
pub struct Start<T> {
    /// The state.
    pub state: T,
    /// The highest importance its path has had up to now (0 for a fresh run).
    pub score: u64,
    /// The caller's name for where it came from (a seed's index, a basin state's index).
    pub origin: usize,
    /// The branches from that origin to this state.
    pub branches: Vec<Branch>,
}

/// How [`ams`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmsConfig {
    /// Trajectories kept at once (`N`, at least 2).
    pub particles: usize,
    /// A trajectory whose importance falls to this value or below has returned to its basin
    /// and ends there (splitting excursions); `None`: trajectories end only at the event or
    /// their horizon.
    pub floor: Option<u64>,
    /// Events the whole run may spend (replays included) before it stops iterating.
    pub events_max: u64,
    /// No level at or above this is made (for an event judged at the end of a run, where a
    /// high score does not make the event certain: the share of the final trajectories that
    /// reached it is then the last factor); `None`: levels go up until the trajectories
    /// reach the event.
    pub level_max: Option<u64>,
}

/// One iteration of [`ams`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// The level: trajectories whose score was at most this were dropped.
    pub score: u64,
    /// How many were dropped (`K`); the iteration's conditional probability is `1 − K/N`.
    pub dropped: usize,
}

/// Why [`ams`] stopped iterating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmsStop {
    /// At least half of the trajectories reached the event.
    Reached,
    /// Every trajectory tied at the level: none could be continued.
    Extinct,
    /// The events budget was spent.
    Budget,
    /// The next level would have been at or above [`AmsConfig::level_max`].
    Top,
    /// [`Trajectory::stopped`]: the estimate is not one.
    Stopped,
}

/// What [`ams`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct AmsOutcome {
    /// The estimate of the probability of the event.
    pub estimate: f64,
    /// Each iteration's level and the trajectories it dropped.
    pub levels: Vec<Level>,
    /// Events executed, replays included.
    pub events: u64,
    /// Why it stopped.
    pub stop: AmsStop,
    /// The first trajectory (in slot order) that reached the event: its origin and branches.
    pub witness: Option<(usize, Vec<Branch>)>,
    /// The simulated time at which the witness's run ended.
    pub witness_time: Option<SimTime>,
}

/// A trajectory of [`ams`], run to its end.
#[derive(Clone, Debug)]
struct Particle<T> {
    start: Start<T>,
    /// The events at which its score first passed each value after its start, in increasing
    /// score (and events).
    ladder: Vec<(u64, u64)>,
    /// The highest importance of its whole path ([`HIT`] if it hit the event).
    score: u64,
    /// Whether its run is the event.
    reached: bool,
    /// When its run ended.
    end: SimTime,
}

/// Runs `start` to its end: the event, its horizon, or (with a floor) its return to the
/// basin. Returns the particle and the events it executed.
fn run<T: Trajectory>(start: Start<T>, floor: Option<u64>) -> (Particle<T>, u64) {
    let mut particle = Particle {
        score: start.score,
        reached: start.score == HIT,
        end: start.state.time(),
        ladder: Vec::new(),
        start,
    };
    if particle.reached {
        return (particle, 0);
    }
    let mut state = particle.start.state.clone();
    let before = state.events();
    while !state.stopped() {
        match state.step() {
            Position::At(score) => {
                if score > particle.score {
                    particle.score = score;
                    particle.ladder.push((score, state.events()));
                }
                if floor.is_some_and(|f| score <= f) {
                    break;
                }
            }
            Position::Hit => {
                particle.score = HIT;
                particle.reached = true;
                particle.ladder.push((HIT, state.events()));
                break;
            }
            Position::End { reached } => {
                particle.reached = reached;
                break;
            }
        }
    }
    particle.end = state.time();
    (particle, state.events() - before)
}

/// A copy of `survivor` at the first instant its importance went above `level`, branched as
/// `(iteration, index)`. Returns the start and the events replayed to reach it.
fn copy_above<T: Trajectory>(
    survivor: &Particle<T>,
    level: u64,
    iteration: u32,
    index: u64,
) -> (Start<T>, u64) {
    let start = &survivor.start;
    let mut state = start.state.clone();
    let mut branches = start.branches.clone();
    let (score, replayed) = if start.score > level {
        // Its path was above the level when it started: at its own branch point, which the
        // new branch replaces (a state branched twice at one instant has the second's numbers).
        branches.pop();
        (start.score, 0)
    } else {
        let &(score, at) = survivor
            .ladder
            .iter()
            .find(|&&(score, _)| score > level)
            .expect("a survivor's score is above the level, so its ladder passes it");
        let from = state.events();
        while state.events() < at && !state.stopped() {
            state.step();
        }
        (score, at - from)
    };
    state.branch(iteration, index);
    branches.push(Branch {
        events: state.events(),
        level: iteration,
        index,
    });
    let copy = Start {
        state,
        score,
        origin: start.origin,
        branches,
    };
    (copy, replayed)
}

/// Adaptive Multilevel Splitting from `starts` (one per trajectory: `config.particles` of
/// them), choosing survivors to copy with `choice`. See the module docs.
pub fn ams<T: Trajectory>(
    starts: Vec<Start<T>>,
    config: AmsConfig,
    choice: &mut RngStream,
) -> AmsOutcome {
    let n = config.particles;
    assert!(n >= 2, "splitting needs at least two trajectories, got {n}");
    assert_eq!(starts.len(), n, "one start per trajectory");
    let mut events = 0;
    let mut particles: Vec<Particle<T>> = starts
        .into_iter()
        .map(|s| {
            let (p, e) = run(s, config.floor);
            events += e;
            p
        })
        .collect();
    let mut weight = 1.0;
    let mut dropped_reached = 0.0;
    let mut levels = Vec::new();
    let stop = loop {
        if particles[0].start.state.stopped() {
            break AmsStop::Stopped;
        }
        let reached = particles.iter().filter(|p| p.reached).count();
        if 2 * reached >= n {
            break AmsStop::Reached;
        }
        if events >= config.events_max {
            break AmsStop::Budget;
        }
        let level = particles.iter().map(|p| p.score).min().expect("n ≥ 2");
        if config.level_max.is_some_and(|top| level >= top) {
            break AmsStop::Top;
        }
        let (low, survivors): (Vec<usize>, Vec<usize>) =
            (0..n).partition(|&i| particles[i].score <= level);
        let k = low.len();
        // What the dropped ones carried of the event, at the weight they had.
        dropped_reached +=
            weight * low.iter().filter(|&&i| particles[i].reached).count() as f64 / n as f64;
        levels.push(Level {
            score: level,
            dropped: k,
        });
        if survivors.is_empty() {
            weight = 0.0;
            break AmsStop::Extinct;
        }
        weight *= (n - k) as f64 / n as f64;
        let iteration = u32::try_from(levels.len()).expect("fewer than 2³² iterations");
        // Choose every survivor first, then run: the choices do not depend on the runs.
        let sources: Vec<usize> = low
            .iter()
            .map(|_| survivors[(choice.next_u64() % survivors.len() as u64) as usize])
            .collect();
        let copies: Vec<(usize, Particle<T>)> = low
            .iter()
            .zip(sources)
            .map(|(&slot, source)| {
                let (start, replayed) =
                    copy_above(&particles[source], level, iteration, slot as u64);
                let (p, e) = run(start, config.floor);
                events += replayed + e;
                (slot, p)
            })
            .collect();
        for (slot, p) in copies {
            particles[slot] = p;
        }
    };
    let reached = particles.iter().filter(|p| p.reached).count();
    let witness = particles.iter().find(|p| p.reached);
    AmsOutcome {
        estimate: dropped_reached + weight * reached as f64 / n as f64,
        levels,
        events,
        stop,
        witness: witness.map(|p| (p.start.origin, p.start.branches.clone())),
        witness_time: witness.map(|p| p.end),
    }
}

/// What [`basin`] saw of a long run in the ordinary state.
#[derive(Clone, Debug)]
pub struct Basin<T> {
    /// Times it left the basin: its importance went from at most `floor` to at least
    /// `entry` (each exit counted once, at the first event at or above `entry`).
    pub exits: u64,
    /// Exits in the first half of the time it ran, to compare with the second (a basin in
    /// its steady state leaves it as often in both).
    pub exits_first_half: u64,
    /// Copies of the state at exits spread evenly over the run (every exit until
    /// `keep_max` are kept, then every second, every fourth…), with the score each had.
    pub kept: Vec<(T, u64)>,
    /// The simulated time it ran.
    pub time: SimDuration,
    /// Events it executed.
    pub events: u64,
    /// Whether the run reached the event (which ends it).
    pub hit: bool,
    /// The longest time it spent above `floor` before coming back.
    pub longest_excursion: SimDuration,
}

/// Runs `state` until `until` (simulated time), its end or the event, counting its exits
/// from the basin (importance at most `floor`) to `entry`, and keeping copies of the state
/// at exits spread over the run: at most `keep_max` (at least 2) at a time, halved by
/// dropping every other copy when full, so that what is kept is every `2^k`th exit.
pub fn basin<T: Trajectory>(
    mut state: T,
    floor: u64,
    entry: u64,
    until: SimTime,
    keep_max: usize,
) -> Basin<T> {
    assert!(entry > floor && keep_max >= 2);
    let (start, began) = (state.events(), state.time());
    let middle = began + until.saturating_duration_since(began) / 2;
    let mut out = Basin {
        exits: 0,
        exits_first_half: 0,
        kept: Vec::new(),
        time: SimDuration::ZERO,
        events: 0,
        hit: false,
        longest_excursion: SimDuration::ZERO,
    };
    let mut keep_every = 1;
    let (mut inside, mut left_at) = (true, began);
    while state.time() < until && !state.stopped() {
        match state.step() {
            Position::At(score) => {
                if inside && score >= entry {
                    inside = false;
                    left_at = state.time();
                    if out.exits % keep_every == 0 {
                        if out.kept.len() == keep_max {
                            let mut i = 0;
                            out.kept.retain(|_| {
                                i += 1;
                                i % 2 == 1
                            });
                            keep_every *= 2;
                        }
                        if out.exits % keep_every == 0 {
                            out.kept.push((state.clone(), score));
                        }
                    }
                    out.exits += 1;
                    if state.time() < middle {
                        out.exits_first_half += 1;
                    }
                } else if !inside && score <= floor {
                    inside = true;
                    let excursion = state.time().saturating_duration_since(left_at);
                    out.longest_excursion = out.longest_excursion.max(excursion);
                }
            }
            Position::Hit => {
                out.hit = true;
                break;
            }
            Position::End { .. } => break,
        }
    }
    out.time = state.time().saturating_duration_since(began);
    out.events = state.events() - start;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Seed;

    /// The mean of independent estimates and their sample variance (n − 1).
    fn mean_and_variance(estimates: &[f64]) -> (f64, f64) {
        let n = estimates.len() as f64;
        let mean = estimates.iter().sum::<f64>() / n;
        let var = estimates
            .iter()
            .map(|e| (e - mean) * (e - mean))
            .sum::<f64>()
            / (n - 1.0);
        (mean, var)
    }

    /// A random walk on 0..=top that steps up with probability `up` (in 1/1000) and ends at 0
    /// or at `top` (the event), one step a millisecond: gambler's ruin, whose probability of
    /// reaching the top from 1 is exact.
    #[derive(Clone)]
    struct Walk {
        at: u64,
        top: u64,
        up: u64,
        seed: u64,
        rng: RngStream,
        steps: u64,
        horizon: Option<u64>,
        /// Stays at 0 instead of ending there.
        reflect: bool,
    }

    impl Walk {
        fn new(seed: u64, top: u64, up: u64) -> Walk {
            Walk {
                at: 1,
                top,
                up,
                seed,
                rng: Seed(seed).stream("walk"),
                steps: 0,
                horizon: None,
                reflect: false,
            }
        }
    }

    impl Trajectory for Walk {
        fn step(&mut self) -> Position {
            self.steps += 1;
            if self.rng.next_u64() % 1000 < self.up {
                self.at += 1;
            } else {
                self.at = self.at.saturating_sub(1);
            }
            if self.at == self.top {
                Position::Hit
            } else if (self.at == 0 && !self.reflect)
                || self.horizon.is_some_and(|h| self.steps >= h)
            {
                Position::End { reached: false }
            } else {
                Position::At(self.at)
            }
        }
        fn events(&self) -> u64 {
            self.steps
        }
        fn time(&self) -> SimTime {
            SimTime::ZERO + SimDuration::from_millis(self.steps)
        }
        fn branch(&mut self, level: u32, index: u64) {
            let name = format!("walk/{level}/{index}");
            self.rng = Seed(self.seed).stream(&name);
        }
    }

    /// Gambler's ruin: from 1, the probability of reaching `top` before 0.
    fn ruin(top: u64, up: f64) -> f64 {
        let r = (1.0 - up) / up;
        (1.0 - r) / (1.0 - libm::pow(r, top as f64))
    }

    fn walks(replication: u64, n: usize, top: u64, up: u64) -> Vec<Start<Walk>> {
        (0..n)
            .map(|i| Start {
                state: Walk::new(replication * 1_000 + i as u64, top, up),
                score: 1,
                origin: i,
                branches: Vec::new(),
            })
            .collect()
    }

    fn config(n: usize) -> AmsConfig {
        AmsConfig {
            particles: n,
            floor: None,
            events_max: u64::MAX,
            level_max: None,
        }
    }

    #[test]
    fn ams_matches_gamblers_ruin_far_below_what_plain_runs_see() {
        // p ≈ 1.7e-6: a million plain walks would see about two.
        let (top, up) = (16, 300);
        let exact = ruin(top, 0.3);
        let replications = 40;
        let estimates: Vec<f64> = (0..replications)
            .map(|r| {
                let mut choice = Seed(r).stream("choice");
                ams(walks(r, 50, top, up), config(50), &mut choice).estimate
            })
            .collect();
        let (mean, var) = mean_and_variance(&estimates);
        let half = 1.96 * libm::sqrt(var / replications as f64);
        assert!(
            (mean - exact).abs() <= half,
            "exact {exact:e}, estimate {mean:e} ± {half:e}"
        );
        // And it is precise: a relative error under 15% from 2,000 trajectories.
        // And it is precise: 2,000 trajectories put the 95% half-width under 30% of the
        // estimate, where plain walks would need (1.96/0.3)²/p ≈ 2.5×10⁷ for the same.
        assert!(half / mean < 0.3, "{mean:e} ± {half:e}");
    }

    #[test]
    fn ties_drop_every_trajectory_at_the_level() {
        let mut choice = Seed(3).stream("choice");
        let out = ams(walks(3, 20, 8, 400), config(20), &mut choice);
        // Integer scores tie: every level dropped every trajectory at or below it, so the
        // levels strictly increase and each iteration dropped at least one.
        assert!(
            out.levels.windows(2).all(|w| w[0].score < w[1].score),
            "{:?}",
            out.levels
        );
        assert!(out.levels.iter().all(|l| l.dropped >= 1));
        assert_eq!(out.stop, AmsStop::Reached);
    }

    #[test]
    fn a_witness_replays_to_the_event() {
        let mut choice = Seed(5).stream("choice");
        let out = ams(walks(5, 30, 14, 300), config(30), &mut choice);
        let (origin, branches) = out.witness.clone().expect("it reached the event");
        assert!(!branches.is_empty(), "a rare event needs branching");
        // Replay: the origin's fresh walk, branched at each point.
        let mut walk = Walk::new(5_000 + origin as u64, 14, 300);
        let mut last = Position::At(1);
        for b in &branches {
            while walk.events() < b.events {
                last = walk.step();
            }
            walk.branch(b.level, b.index);
        }
        while !matches!(last, Position::Hit | Position::End { .. }) {
            last = walk.step();
        }
        assert_eq!(last, Position::Hit);
        assert_eq!(Some(walk.time()), out.witness_time);
    }

    #[test]
    fn the_same_choices_give_the_same_answer() {
        let a = ams(
            walks(7, 20, 12, 300),
            config(20),
            &mut Seed(7).stream("choice"),
        );
        let b = ams(
            walks(7, 20, 12, 300),
            config(20),
            &mut Seed(7).stream("choice"),
        );
        assert_eq!(a, b);
        let c = ams(
            walks(7, 20, 12, 300),
            config(20),
            &mut Seed(8).stream("choice"),
        );
        assert_ne!(a.estimate, c.estimate);
    }

    #[test]
    fn an_event_judged_at_the_end_counts_the_dropped_runs_that_reached_it() {
        // The walk ends at its horizon; the event is "it ended at 1 or 2", which runs of a low
        // score reach as well as high ones, so dropping them without counting what they
        // reached would bias the estimate low. Exact by brute force over many plain walks
        // (p is not rare here).
        #[derive(Clone)]
        struct Ends(Walk);
        impl Trajectory for Ends {
            fn step(&mut self) -> Position {
                match self.0.step() {
                    Position::End { .. } => Position::End {
                        reached: (1..=2).contains(&self.0.at),
                    },
                    other => other,
                }
            }
            fn events(&self) -> u64 {
                self.0.events()
            }
            fn time(&self) -> SimTime {
                self.0.time()
            }
            fn branch(&mut self, level: u32, index: u64) {
                self.0.branch(level, index)
            }
        }
        let make = |seed: u64| {
            let mut w = Walk::new(seed, 1_000, 450);
            w.horizon = Some(30);
            Ends(w)
        };
        let plain = 200_000u64;
        let hits = (0..plain)
            .filter(|&s| {
                let mut e = make(1_000_000 + s);
                loop {
                    match e.step() {
                        Position::End { reached } => break reached,
                        Position::Hit => break true,
                        Position::At(_) => {}
                    }
                }
            })
            .count() as f64;
        let brute = hits / plain as f64;
        let replications = 60;
        let estimates: Vec<f64> = (0..replications)
            .map(|r| {
                let starts = (0..40)
                    .map(|i| Start {
                        state: make(r * 100 + i),
                        score: 1,
                        origin: i as usize,
                        branches: Vec::new(),
                    })
                    .collect();
                // Levels up to 6 of the horizon's 30: the factor of the final share is
                // then a large one, and the dropped runs still count.
                let top = AmsConfig {
                    level_max: Some(6),
                    ..config(40)
                };
                ams(starts, top, &mut Seed(r).stream("choice")).estimate
            })
            .collect();
        let (mean, var) = mean_and_variance(&estimates);
        let half =
            1.96 * libm::sqrt(var / replications as f64 + brute * (1.0 - brute) / plain as f64);
        assert!(
            (mean - brute).abs() <= half,
            "brute {brute}, AMS {mean} ± {half}"
        );
    }

    #[test]
    fn basin_counts_exits_and_keeps_copies() {
        let mut walk = Walk::new(11, 1_000, 450);
        walk.reflect = true;
        let until = SimTime::ZERO + SimDuration::from_secs(200);
        let b = basin(walk, 0, 3, until, 10);
        assert!(b.exits > 40, "{}", b.exits);
        // Every 2^k-th exit is kept: between half of `keep_max` and `keep_max` of them, the
        // first exit's among them, in the order of the run.
        assert!((5..=10).contains(&b.kept.len()), "{}", b.kept.len());
        assert!(b.kept.iter().all(|(_, score)| *score >= 3));
        assert!(b.kept.windows(2).all(|w| w[0].0.steps < w[1].0.steps));
        // A walk in its steady state leaves as often in both halves.
        let second = b.exits - b.exits_first_half;
        let spread = 3.0 * libm::sqrt(b.exits as f64);
        assert!((b.exits_first_half as f64 - second as f64).abs() < spread);
        assert!(!b.hit && b.time == SimDuration::from_secs(200));
    }

    /// A walk stopped from outside once its copies together executed `stop_at` events: the
    /// flag a caller's Ctrl-C sets, shared by every copy.
    #[derive(Clone)]
    struct Stoppable {
        walk: Walk,
        spent: std::rc::Rc<std::cell::Cell<u64>>,
        stop_at: u64,
    }

    impl Trajectory for Stoppable {
        fn step(&mut self) -> Position {
            self.spent.set(self.spent.get() + 1);
            self.walk.step()
        }
        fn events(&self) -> u64 {
            self.walk.events()
        }
        fn time(&self) -> SimTime {
            self.walk.time()
        }
        fn branch(&mut self, level: u32, index: u64) {
            self.walk.branch(level, index);
        }
        fn stopped(&self) -> bool {
            self.spent.get() >= self.stop_at
        }
    }

    #[test]
    fn a_stopped_trajectory_ends_splitting_at_its_next_event() {
        // p ≈ 10⁻¹⁴: unstopped, AMS would spend millions of events on it.
        let spent = std::rc::Rc::new(std::cell::Cell::new(0));
        let starts = walks(0, 20, 60, 300)
            .into_iter()
            .map(|s| Start {
                state: Stoppable {
                    walk: s.state,
                    spent: spent.clone(),
                    stop_at: 5_000,
                },
                score: s.score,
                origin: s.origin,
                branches: s.branches,
            })
            .collect();
        let mut choice = Seed(3).stream("choice");
        let out = ams(starts, config(20), &mut choice);
        assert_eq!(out.stop, AmsStop::Stopped);
        assert_eq!(spent.get(), 5_000, "not one event past the stop");

        let mut walk = Walk::new(11, 1_000, 450);
        walk.reflect = true;
        let spent = std::rc::Rc::new(std::cell::Cell::new(0));
        let stoppable = Stoppable {
            walk,
            spent: spent.clone(),
            stop_at: 1_000,
        };
        let b = basin(
            stoppable,
            0,
            3,
            SimTime::ZERO + SimDuration::from_secs(200),
            10,
        );
        assert_eq!((spent.get(), b.time), (1_000, SimDuration::from_secs(1)));
    }
}
