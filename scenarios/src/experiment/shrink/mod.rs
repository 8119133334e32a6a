//! `resim shrink`: [`shrink`] takes a scenario whose expectation fails at a seed and searches
//! for a smaller one that still fails **the same expectation** at that seed, within a budget
//! of runs; [`Shrunk`] is the smallest found, with the list of changes and its text
//! ([`pretty::to_ron`]), and [`render`] is what the command prints.
//!
//! | module | what |
//! |---|---|
//! | [`reduce`] | the one-step reductions of a scenario, largest cuts first |
//! | [`pretty`] | a scenario written back as readable RON, defaults left out |
//!
//! The search is greedy delta debugging on the parsed scenario, never on its text: a pass
//! tries the candidates one change smaller than the current scenario in order, and the first
//! that is valid and still fails becomes the current one (the pass goes on from there, skipping
//! the changes it already saw fail to fail). Passes repeat until one changes nothing (a
//! fixpoint) or the budget of runs is spent. An invalid candidate costs no run; a candidate
//! that reads the same as one already run is not run again.
//!
//! The target is the expectation's kind and client, checked at its index in every candidate
//! (other expectations may go, so its index moves). The result is written as text, read back
//! and run once more before it is returned: a shrink never returns a scenario that passes.
//! Everything is in a fixed order (names sorted, lists in file order), so the same scenario
//! and seed shrink to the same file.

pub mod pretty;
pub mod reduce;

use crate::format::error::ScenarioError;
use crate::format::schema::Scenario;
use crate::format::validate::validate;
use crate::report::ExpectationResult;
use crate::{RunOptions, run};
use reduce::{Candidate, candidates, client_of};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The runs a shrink makes at most when the command line does not say.
pub const BUDGET_DEFAULT: u64 = 300;

/// What to shrink for.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// The seed at which the expectation fails.
    pub seed: u64,
    /// Which expectation: its index (`2` for `expectations[2]`) or words of its kind or of
    /// its text in the report; the first failing one when `None`.
    pub expectation: Option<String>,
    /// The most runs to make while searching (the final check is one more).
    pub budget: u64,
}

/// The smallest scenario found, and how it was found.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The scenario as the command line named it.
    pub file: String,
    /// The seed.
    pub seed: u64,
    /// The target: `expectations[i] Kind of client` in the original file.
    pub target: String,
    /// The target's index in the original and in the result.
    pub index: (usize, usize),
    /// The verdict on the target in the original run.
    pub before: ExpectationResult,
    /// The verdict on the target in the final run of the written text.
    pub after: ExpectationResult,
    /// The changes kept, in the order they were made.
    pub changes: Vec<String>,
    /// Runs made by the search (not counting the original and the final check).
    pub runs: u64,
    /// The budget.
    pub budget: u64,
    /// The search stopped because the budget was spent, not at a fixpoint.
    pub budget_spent: bool,
    /// Size of the original and of the result.
    pub sizes: (Size, Size),
    /// The smallest scenario.
    pub scenario: Scenario,
    /// Its text, as written.
    pub text: String,
}

/// How big a scenario is, in the things a shrink removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Clients.
    pub clients: usize,
    /// Services.
    pub services: usize,
    /// Downstream calls of all services.
    pub calls: usize,
    /// Pattern layers and admission layers.
    pub layers: usize,
    /// Faults.
    pub faults: usize,
    /// Expectations.
    pub expectations: usize,
    /// Simulated duration.
    pub duration: sim_core::SimDuration,
}

impl Size {
    /// The size of `s`.
    pub fn of(s: &Scenario) -> Size {
        let calls = s.services.values().map(|x| x.calls.len()).sum();
        let layers = s
            .clients
            .values()
            .map(|c| c.call.stack.len())
            .sum::<usize>()
            + s.services
                .values()
                .map(|x| x.admission.len() + x.calls.iter().map(|c| c.stack.len()).sum::<usize>())
                .sum::<usize>();
        Size {
            clients: s.clients.len(),
            services: s.services.len(),
            calls,
            layers,
            faults: s.faults.len(),
            expectations: s.expectations.len(),
            duration: s.duration,
        }
    }
}

/// Why a shrink did not start or could not finish: one line for stderr (exit code 2).
pub type Refusal = String;

/// Shrinks `scenario` (read from `file`) at `options.seed`; see the module docs.
pub fn shrink(scenario: &Scenario, file: &str, options: &ShrinkOptions) -> Result<Shrunk, Refusal> {
    let run_options = RunOptions {
        seed: Some(options.seed),
        ..RunOptions::default()
    };
    let first = run(scenario, file, &run_options).map_err(|e| e.to_string())?;
    let verdicts = &first.report.expectations;
    let target = pick_target(scenario, verdicts, options, file)?;
    let key = (
        scenario.expectations[target].name(),
        client_of(&scenario.expectations[target]).map(str::to_string),
    );
    let measured = verdicts[target].threshold.observed;
    let cause = commonest_failure(&first.report, &key.1);
    let label = format!(
        "expectations[{target}] {}{}",
        key.0,
        key.1
            .as_ref()
            .map(|c| format!(" of {c}"))
            .unwrap_or_default()
    );
    // Whether `c` is valid and still fails the target; `None` when it costs no run.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    seen.insert(pretty::to_ron(scenario)?);
    let mut runs = 0;
    let mut fails =
        |c: &Candidate, runs: &mut u64| -> Option<bool> {
            let e = &c.scenario.expectations.get(c.target)?;
            if (e.name(), client_of(e).map(str::to_string)) != key {
                return None;
            }
            validate(&c.scenario).ok()?;
            let text = pretty::to_ron(&c.scenario).ok()?;
            if !seen.insert(text) {
                return None;
            }
            *runs += 1;
            let out = run(&c.scenario, file, &run_options).ok()?;
            // The same failure: a figure that was measured must still be measured (a window
            // left with no requests also fails, but says nothing about the system).
            // And for the same reason: the client's commonest failure stays the same.
            Some(
                out.report.expectations.get(c.target).is_some_and(|v| {
                    !v.pass && (v.threshold.observed.is_some() || measured.is_none())
                }) && (cause.is_none() || commonest_failure(&out.report, &key.1) == cause),
            )
        };
    let mut current = Candidate {
        change: String::new(),
        scenario: scenario.clone(),
        target,
    };
    let mut changes = Vec::new();
    if !scenario.variants.is_empty() {
        // The result is the scenario as it ran (its --variant and --set applied), so the
        // file's other variants, which name paths that may be gone, are not written.
        changes.push(format!(
            "dropped the variants ({})",
            scenario.variants.join(", ")
        ));
    }
    let mut budget_spent = false;
    'passes: loop {
        let mut tried: BTreeSet<String> = BTreeSet::new();
        let mut changed = false;
        'pass: loop {
            for candidate in candidates(&current.scenario, current.target) {
                if !tried.insert(candidate.change.clone()) {
                    continue;
                }
                if runs >= options.budget {
                    budget_spent = true;
                    break 'passes;
                }
                if fails(&candidate, &mut runs) == Some(true) {
                    changes.push(candidate.change.clone());
                    current = candidate;
                    changed = true;
                    continue 'pass;
                }
            }
            break;
        }
        if !changed {
            break;
        }
    }
    // The result as it will be written, read back and run once more.
    let mut result = current.scenario;
    result.variants = Vec::new();
    if !changes.is_empty() {
        result.description = format!(
            "{} shrunk by resim shrink at seed {}: {label} still fails",
            scenario.name, options.seed
        );
    }
    let text = pretty::to_ron(&result)?;
    let reread = crate::format::load::parse_with(file, &text, &scenario.limits)
        .map_err(|e| format!("{file}: the shrunk scenario does not read back: {e}"))?;
    let last = run(&reread, file, &run_options).map_err(|e: ScenarioError| e.to_string())?;
    let after = last
        .report
        .expectations
        .get(current.target)
        .filter(|v| !v.pass)
        .cloned()
        .ok_or_else(|| {
            format!(
                "{file}: the shrunk scenario passes when run again; this is a bug in resim shrink"
            )
        })?;
    Ok(Shrunk {
        file: file.to_string(),
        seed: options.seed,
        target: label,
        index: (target, current.target),
        before: verdicts[target].clone(),
        after,
        changes,
        runs,
        budget: options.budget,
        budget_spent,
        sizes: (Size::of(scenario), Size::of(&result)),
        scenario: result,
        text,
    })
}

/// The commonest reason requests of `client` (of every client for `None`) failed for.
fn commonest_failure(report: &crate::Report, client: &Option<String>) -> Option<String> {
    let mut reasons: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for c in &report.clients {
        if client.as_ref().is_none_or(|name| name == &c.name) {
            for (reason, n) in &c.failures_by_reason {
                *reasons.entry(reason).or_default() += n;
            }
        }
    }
    // The largest count; of equal counts, the first name.
    let mut best: Option<(&str, u64)> = None;
    for (reason, n) in reasons {
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((reason, n));
        }
    }
    best.map(|(reason, _)| reason.to_string())
}

/// The index of the expectation to shrink for: the one asked for, which must fail, or the
/// first that fails.
fn pick_target(
    scenario: &Scenario,
    verdicts: &[ExpectationResult],
    options: &ShrinkOptions,
    file: &str,
) -> Result<usize, Refusal> {
    let seed = options.seed;
    let Some(asked) = &options.expectation else {
        return verdicts.iter().position(|v| !v.pass).ok_or_else(|| {
            format!(
                "{file}: every expectation holds at seed {seed}, so there is nothing to shrink; find a failing seed first (resim sweep {file} --seeds 1..100)"
            )
        });
    };
    let index = crate::report::why::expectation_named(scenario, verdicts, asked, file)?;
    if verdicts[index].pass {
        return Err(format!(
            "{file}: expectations[{index}] ({}) holds at seed {seed}, so there is nothing to shrink; choose a failing one or a failing seed",
            verdicts[index].expectation
        ));
    }
    Ok(index)
}

/// What `resim shrink` prints: the target, the changes, the sizes, the runs, and where the
/// file went (or the file itself when `written_to` is `None`).
pub fn render(s: &Shrunk, written_to: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "shrinking {} at seed {} for {}: {}: {}",
        s.file, s.seed, s.target, s.before.expectation, s.before.observed
    );
    let _ = writeln!(out, "\nkept {} changes:", s.changes.len());
    for c in &s.changes {
        let _ = writeln!(out, "  {c}");
    }
    let (a, b) = s.sizes;
    let _ = writeln!(out, "\n  {:<14} {:>8} {:>8}", "", "before", "after");
    for (name, x, y) in [
        ("clients", a.clients, b.clients),
        ("services", a.services, b.services),
        ("calls", a.calls, b.calls),
        ("layers", a.layers, b.layers),
        ("faults", a.faults, b.faults),
        ("expectations", a.expectations, b.expectations),
    ] {
        let _ = writeln!(out, "  {name:<14} {x:>8} {y:>8}");
    }
    let _ = writeln!(
        out,
        "  {:<14} {:>8} {:>8}",
        "duration",
        a.duration.to_string(),
        b.duration.to_string()
    );
    let _ = writeln!(
        out,
        "\n{} runs of a budget of {}{}, and one more of the written file: it still fails: {}: {}",
        s.runs,
        s.budget,
        if s.budget_spent {
            " (spent: a larger --budget may shrink further)"
        } else {
            " (stopped when no change kept it failing)"
        },
        s.after.expectation,
        s.after.observed
    );
    match written_to {
        Some(path) => {
            let _ = writeln!(
                out,
                "wrote {path}; replay: resim run {path} --seed {}",
                s.seed
            );
        }
        None => {
            let _ = writeln!(out, "\n{}", s.text.trim_end());
        }
    }
    out
}
