//! The recommendation: among the finalists that meet the requirement (and, with
//! `--margin-at-least`, hold the margin asked for), the best by the objective's rules, in
//! order; and, when the first rule left several level, the tie and the rule that broke it.
//!
//! | objective | rules, in order |
//! |---|---|
//! | `--maximize-margin` | the margin (the highest level at which both verdicts hold), the higher of the two verdicts' own margins, the smaller share of runs that did not hold at the level above the margin, more seeds passed in the race, the order of the `--param` values |
//! | `--minimize PATH` | the least cost, the order of the `--param` values |
//! | pass rate | more seeds passed in the race, the order of the `--param` values |
//!
//! The last rule always decides, and says so: when it is the one that broke the tie, nothing
//! measured told the candidates apart, and the answer says that it is a tie.

use super::Objective;
use super::margin::Margin;
use super::race::meets_requirement;
use super::render::Tuned;
use std::cmp::Ordering;

/// A rule: which of two candidates it prefers (`Greater`: the first), and its words.
struct Rule<'a> {
    words: &'static str,
    compare: Box<dyn Fn(usize, usize) -> Ordering + 'a>,
}

/// What the recommendation is, and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The candidate recommended.
    pub recommended: usize,
    /// The others level with it on the first rule, in the order of the `--param` values.
    pub tied: Vec<usize>,
    /// What they are level on: `the margin`, `cost`, `the seeds passed`.
    pub tie: &'static str,
    /// The rule that broke the tie (`None` without one).
    pub rule: Option<&'static str>,
    /// Whether the rule that broke it is the order of the values: nothing measured did.
    pub by_order: bool,
}

/// The recommendation as data, for a caller that reads it (Python's `resim.tune`): the
/// candidate (`candidate`, its `settings` by path, `words` to add to a command line), its
/// race (`runs`, `passed`), its `cost` with `--minimize`, its `margin` (the stress value up to
/// which both verdicts hold) with a stress, and how it was chosen (`tied`, `tie`, `rule`,
/// `by_order`, as [`Choice`] says).
pub fn to_json(t: &Tuned<'_>, c: &Choice) -> serde_json::Value {
    let r = &t.candidates[c.recommended];
    let (runs, passed) = t.race.tally(c.recommended);
    let settings: serde_json::Map<String, serde_json::Value> = r
        .sets
        .iter()
        .map(|o| (o.path.clone(), o.value.clone().into()))
        .collect();
    let margin = t
        .margin(c.recommended)
        .and_then(Margin::both)
        .zip(t.command.stress())
        .map(|(k, s)| s.value(k));
    let tied: Vec<&str> = c
        .tied
        .iter()
        .map(|&i| t.candidates[i].label.as_str())
        .collect();
    serde_json::json!({
        "candidate": r.label,
        "settings": settings,
        "words": r.words,
        "runs": runs,
        "passed": passed,
        "cost": r.cost,
        "margin": margin,
        "tied": tied,
        "tie": c.tie,
        "rule": c.rule,
        "by_order": c.by_order,
    })
}

/// Whether candidate `c` meets the race's requirement.
pub fn meets(t: &Tuned<'_>, c: usize) -> bool {
    let (runs, passed) = t.race.tally(c);
    meets_requirement(passed, runs, t.command.pass_rate)
}

/// The recommendation of `t`, or `None` when no finalist qualifies.
pub fn choose(t: &Tuned<'_>) -> Option<Choice> {
    let mut ok: Vec<usize> = t
        .race
        .finalists()
        .into_iter()
        .filter(|&c| meets(t, c))
        .collect();
    if t.command.margin_at_least.is_some() {
        // Only those shown to hold the margin asked for.
        ok.retain(|&c| t.margin(c).and_then(Margin::both).is_some());
    }
    let rules = rules(t);
    let better = |a: usize, b: usize| {
        rules
            .iter()
            .map(|r| (r.compare)(a, b))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let recommended = ok
        .iter()
        .copied()
        .reduce(|best, c| if better(c, best).is_gt() { c } else { best })?;
    let tied: Vec<usize> = ok
        .iter()
        .copied()
        .filter(|&c| c != recommended && (rules[0].compare)(c, recommended).is_eq())
        .collect();
    // The deepest rule any of them needed: the one that broke the tie.
    let deepest = tied
        .iter()
        .map(|&c| {
            rules
                .iter()
                .position(|r| (r.compare)(recommended, c).is_ne())
                .expect("the order of the values tells any two apart")
        })
        .max();
    let tie = match t.command.objective {
        Objective::Margin(_) => "the margin",
        Objective::Minimize(_) => "cost",
        Objective::PassRate => "the seeds passed",
    };
    Some(Choice {
        recommended,
        tied,
        tie,
        rule: deepest.map(|i| rules[i].words),
        by_order: deepest == Some(rules.len() - 1),
    })
}

/// The rules of `t`'s objective, in order; the last is the order of the values.
fn rules<'a>(t: &'a Tuned<'a>) -> Vec<Rule<'a>> {
    let passed = move |c: usize| t.race.tally(c).1;
    let mut rules: Vec<Rule<'a>> = match &t.command.objective {
        Objective::Minimize(_) => vec![Rule {
            words: "the least cost",
            compare: Box::new(move |a, b| {
                let cost = |c: usize| t.candidates[c].cost.expect("a cost for each candidate");
                cost(b).total_cmp(&cost(a))
            }),
        }],
        Objective::Margin(_) => {
            let held = move |c: usize, of: fn(&Margin) -> Option<u64>| {
                t.margin(c).and_then(of).map_or(0, |k| k + 1)
            };
            vec![
                Rule {
                    words: "the margin",
                    compare: Box::new(move |a, b| {
                        held(a, Margin::both).cmp(&held(b, Margin::both))
                    }),
                },
                Rule {
                    words: "the higher of the two verdicts' own margins",
                    compare: Box::new(move |a, b| {
                        let wider =
                            |c| held(c, |m| m.stable.holds).max(held(c, |m| m.expectations.holds));
                        wider(a).cmp(&wider(b))
                    }),
                },
                Rule {
                    words: "the smaller share of runs that did not hold at the level above the margin",
                    compare: Box::new(move |a, b| {
                        // events / runs compared as fractions, exactly: fewer is better.
                        let (ea, na) = above(t, a);
                        let (eb, nb) = above(t, b);
                        (u128::from(eb) * u128::from(na)).cmp(&(u128::from(ea) * u128::from(nb)))
                    }),
                },
                Rule {
                    words: "more seeds passed in the race",
                    compare: Box::new(move |a, b| passed(a).cmp(&passed(b))),
                },
            ]
        }
        Objective::PassRate => vec![Rule {
            words: "more seeds passed in the race",
            compare: Box::new(move |a, b| passed(a).cmp(&passed(b))),
        }],
    };
    rules.push(Rule {
        words: "the order of the --param values",
        compare: Box::new(|a, b| b.cmp(&a)),
    });
    rules
}

/// At the level just above candidate `c`'s margin: the runs that did not hold (not stable,
/// or an expectation failed) and the runs; `(0, 1)` when it held to the end or no level
/// above was tried.
fn above(t: &Tuned<'_>, c: usize) -> (u64, u64) {
    let Some(m) = t.margin(c) else {
        return (0, 1);
    };
    let k = m.both().map_or(0, |k| k + 1);
    match t.margins.and_then(|all| all.level(c, k)) {
        Some(level) if level.tally.runs > 0 => (level.tally.broken, level.tally.runs),
        _ => (0, 1),
    }
}
