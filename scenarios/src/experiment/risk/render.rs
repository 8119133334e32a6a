//! What `resim risk` prints: the [`Answer`] made from every plain run or replication (the
//! estimate, its interval, the mean time, what it cost and what plain runs would have
//! cost), as text for a reader and as one JSON object.

use super::estimate::{self, Estimate};
use super::plain::PlainRun;
use super::replication::{Split, Witness};
use super::{Plan, RiskOutput};
use serde::Serialize;
use sim_core::SimDuration;

/// The estimate and everything said about it.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    /// The scenario's name.
    pub scenario: String,
    /// The file, as named.
    pub file: String,
    /// The event, as written.
    pub event: String,
    /// The horizon, as a duration.
    pub horizon: String,
    /// `plain`, `splitting` or `excursions`.
    pub method: String,
    /// Why that method.
    pub reason: String,
    /// The importance function (splitting).
    pub importance: Option<String>,
    /// The probability that the event happens within the horizon.
    pub probability: f64,
    /// Its 95% interval's lower end.
    pub low: f64,
    /// Its 95% interval's upper end.
    pub high: f64,
    /// The interval's half width over the estimate.
    pub relative_error: f64,
    /// The mean time to the event in seconds, where estimated (excursions).
    pub mean_time_to_event: Option<f64>,
    /// Its interval, in seconds.
    pub mean_time_to_event_interval: Option<(f64, f64)>,
    /// Events simulated in all, the pilot and replays included.
    pub events: u64,
    /// Plain runs made (the pilot's included).
    pub runs: u64,
    /// Plain runs that reached the event.
    pub hits: u64,
    /// Trajectories per replication and replications (splitting).
    pub particles: Option<usize>,
    /// Replications of splitting.
    pub replications: Option<u64>,
    /// Each level of the first replication: the importance it passed and the share of
    /// trajectories that went on past it (splitting).
    pub levels: Vec<(u64, f64)>,
    /// The premise of splitting excursions: each check and whether it held.
    pub premise: Vec<(String, bool)>,
    /// The plain runs that would reach the same relative error, and their events.
    pub plain_runs_needed: Option<f64>,
    /// The events of those plain runs.
    pub plain_events_needed: Option<f64>,
    /// A command that replays one run that reached the event.
    pub replay: Option<String>,
    /// When that run reached it, in seconds.
    pub replay_at: Option<f64>,
    /// What a reader should know about the estimate (a premise that failed, an estimate
    /// of 0).
    pub notes: Vec<String>,
}

/// The command that replays `witness`.
fn replay(output: &RiskOutput, seed: u64, branches: &[(u64, u32, u64)]) -> String {
    let c = &output.command;
    let mut words = format!(
        "resim run {} --seed {seed} --duration {}{}",
        c.file,
        c.horizon,
        c.overrides.command_line()
    );
    for (events, level, index) in branches {
        words.push_str(&format!(" --branch {events}:{level}:{index}"));
    }
    words
}

/// What a method's runs give: its name, the estimate, and what the answer says of them.
struct Made {
    method: &'static str,
    estimate: Estimate,
    particles: Option<usize>,
    replications: Option<u64>,
    levels: Vec<(u64, f64)>,
    /// A run that reached the event: its seed, branch points and time.
    witness: Option<Witness>,
}

/// The replications of splitting, on whole runs or excursions, made into an estimate; a
/// plain run's cost learnt from the basin runs where the pilot finished none.
fn split_made(
    output: &RiskOutput,
    split: Split,
    horizon: f64,
    cost_of_run: &mut Option<f64>,
    notes: &mut Vec<String>,
) -> Made {
    let values: Vec<f64> = output.replications.iter().map(|r| r.estimate).collect();
    let (method, e) = match split {
        Split::Whole => ("splitting", estimate::replications(&values)),
        Split::Excursions { .. } => {
            if cost_of_run.is_none() {
                *cost_of_run = basin_cost(output, horizon);
            }
            ("excursions", estimate::rates(&values, horizon))
        }
    };
    let estimate = e.unwrap_or_else(|| {
        notes.push("fewer than two replications: no interval".to_string());
        Estimate {
            probability: values.first().copied().unwrap_or(0.0),
            low: 0.0,
            high: 1.0,
            mean_time: None,
        }
    });
    let witness = output.replications.iter().find_map(|r| r.witness.clone());
    let levels = output
        .replications
        .first()
        .map(|r| r.levels.clone())
        .unwrap_or_default();
    let budget_stops = output
        .replications
        .iter()
        .filter(|r| r.stop == "budget")
        .count();
    // Where nothing reached the event, the note that says so replaces this one.
    if budget_stops > 0 && estimate.probability > 0.0 {
        notes.push(format!(
            "{budget_stops} of {} replications spent their share of the budget before their trajectories reached the event; the estimate stays unbiased, its interval wider (raise --budget)",
            output.replications.len()
        ));
    }
    Made {
        method,
        estimate,
        particles: None,
        replications: None,
        levels,
        witness,
    }
}

/// An upper bound of what a plain run to the horizon costs, from the basin runs' events per
/// second (a replication's events include its splitting): `None` without basin time.
fn basin_cost(output: &RiskOutput, horizon: f64) -> Option<f64> {
    let with_basin = || output.replications.iter().filter(|r| r.basin.is_some());
    let basin_events: u64 = with_basin().map(|r| r.events).sum();
    let basin_time: u64 = with_basin()
        .filter_map(|r| r.basin.as_ref())
        .map(|b| b.time_ns)
        .sum();
    (basin_time > 0)
        .then(|| basin_events as f64 / SimDuration::from_nanos(basin_time).as_secs_f64() * horizon)
}

/// The premise of the method, each check with whether it held, and the notes a reader needs:
/// an estimate of 0, a premise of splitting excursions that failed.
fn premise(
    output: &RiskOutput,
    method: &str,
    estimate: &Estimate,
    notes: &mut Vec<String>,
) -> Vec<(String, bool)> {
    if estimate.probability == 0.0 && method == "plain" {
        notes.push(
            "no run reached the event: the estimate is 0 and the interval only bounds what this budget can see"
                .to_string(),
        );
    } else if estimate.probability == 0.0 {
        notes.push(
            "no trajectory reached the event within the budget, so splitting has no estimate: it is rarer than this budget can see from where the levels stopped; raise --budget"
                .to_string(),
        );
    }
    let mut premise = output.choice.premise.clone();
    premise.extend(super::basin_premise(
        output.command.horizon,
        &output.replications,
    ));
    for (check, held) in &premise {
        if !held && method == "excursions" {
            notes.push(format!(
                "the premise of splitting excursions failed: {check}"
            ));
        }
    }
    premise
}

/// What the plan's runs give.
fn made(
    output: &RiskOutput,
    runs: &[&PlainRun],
    horizon: f64,
    cost_of_run: &mut Option<f64>,
    notes: &mut Vec<String>,
) -> Made {
    let hits = runs.iter().filter(|r| r.reached).count() as u64;
    match &output.choice.plan {
        Plan::Plain { .. } => Made {
            method: "plain",
            estimate: estimate::plain(hits, runs.len() as u64),
            particles: None,
            replications: None,
            levels: Vec::new(),
            witness: runs.iter().find(|r| r.reached).map(|r| Witness {
                seed: r.seed,
                branches: Vec::new(),
                at_ns: r.end_ns,
            }),
        },
        Plan::Splitting {
            split,
            particles,
            replications,
            ..
        } => {
            let mut made = split_made(output, *split, horizon, cost_of_run, notes);
            made.particles = Some(*particles);
            made.replications = Some(*replications);
            made
        }
    }
}

/// The answer of a whole estimate.
pub fn answer(output: &RiskOutput) -> Answer {
    let c = &output.command;
    let horizon = c.horizon.as_secs_f64();
    let pilot = &output.choice.pilot;
    let runs: Vec<_> = pilot.iter().chain(&output.runs).collect();
    let hits = runs.iter().filter(|r| r.reached).count() as u64;
    let run_events: u64 = runs.iter().map(|r| r.events).sum();
    let finished: Vec<_> = runs.iter().filter(|r| r.finished).collect();
    // What a plain run to the horizon costs: the pilot's finished runs' mean, else the rate
    // of the basin runs.
    let mut cost_of_run = if finished.is_empty() {
        None
    } else {
        Some(finished.iter().map(|r| r.events).sum::<u64>() as f64 / finished.len() as f64)
    };
    let mut notes = Vec::new();
    let Made {
        method,
        estimate,
        particles,
        replications,
        levels,
        witness,
    } = made(output, &runs, horizon, &mut cost_of_run, &mut notes);
    let premise = premise(output, method, &estimate, &mut notes);
    let split_events: u64 = output.replications.iter().map(|r| r.events).sum();
    let plain_runs_needed = (method != "plain")
        .then(|| estimate::plain_runs_for(&estimate))
        .flatten();
    let plain_events_needed = plain_runs_needed.zip(cost_of_run).map(|(n, c)| n * c);
    Answer {
        scenario: output.scenario.clone(),
        file: c.file.clone(),
        event: c.event.clone(),
        horizon: c.horizon.to_string(),
        method: method.to_string(),
        reason: output.choice.reason.clone(),
        importance: (method != "plain").then(|| output.importance.clone()),
        probability: estimate.probability,
        low: estimate.low,
        high: estimate.high,
        relative_error: estimate.relative_error(),
        mean_time_to_event: estimate.mean_time.map(|(m, _, _)| m),
        mean_time_to_event_interval: estimate.mean_time.map(|(_, l, h)| (l, h)),
        events: run_events + split_events,
        runs: runs.len() as u64,
        hits,
        particles,
        replications,
        levels,
        premise,
        plain_runs_needed,
        plain_events_needed,
        replay: witness
            .as_ref()
            .map(|w| replay(output, w.seed, &w.branches)),
        replay_at: witness.map(|w| SimDuration::from_nanos(w.at_ns).as_secs_f64()),
        notes,
    }
}

/// A count for a reader: thousands separated, or `1.5×10¹⁰` from ten million.
fn count(n: f64) -> String {
    if n >= 1e7 {
        return estimate::scientific(n);
    }
    let digits = format!("{n:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The method's lines: its name and size, why it was chosen, its premise and its levels.
fn method_lines(a: &Answer) -> String {
    let mut out = format!("\nmethod: {}", a.method);
    match (a.particles, a.replications) {
        (Some(n), Some(r)) => out.push_str(&format!(
            " (adaptive multilevel splitting, {n} trajectories × {r} replications, importance {})\n",
            a.importance.as_deref().unwrap_or("-")
        )),
        _ => out.push_str(&format!(
            " ({} runs, {} reached the event)\n",
            count(a.runs as f64),
            count(a.hits as f64)
        )),
    }
    out.push_str(&format!("  why: {}\n", a.reason));
    for (check, held) in &a.premise {
        out.push_str(&format!(
            "  premise: {check}: {}\n",
            if *held { "holds" } else { "does not hold" }
        ));
    }
    if !a.levels.is_empty() {
        let shown: Vec<String> = a
            .levels
            .iter()
            .take(12)
            .map(|(score, share)| format!("> {score}: {share:.2}"))
            .collect();
        let more = if a.levels.len() > 12 {
            format!(", … ({} levels)", a.levels.len())
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  levels of the first replication (importance passed: share that went on): {}{more}\n",
            shown.join(", ")
        ));
    }
    out
}

/// What `resim risk` prints when splitting reached nothing: its replications all say 0, so
/// there is no interval to give, only how far the levels went and what to do.
fn unreached(a: &Answer) -> String {
    let deepest = a.levels.last().map_or(String::new(), |(score, _)| {
        format!("; its first replication's levels went past importance {score}")
    });
    let mut out = format!(
        "P({} within {}): not estimated: no trajectory reached the event{deepest}\n",
        a.event, a.horizon
    );
    out.push_str(&method_lines(a));
    out.push_str(&format!("\nsimulated {} events\n", count(a.events as f64)));
    for note in &a.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

/// What `resim risk` prints.
pub fn text(a: &Answer) -> String {
    let mut out = format!(
        "resim risk · {} · event {} within {}\n\n",
        a.scenario, a.event, a.horizon
    );
    let e = Estimate {
        probability: a.probability,
        low: a.low,
        high: a.high,
        mean_time: None,
    };
    if a.probability == 0.0 && a.particles.is_some() {
        out.push_str(&unreached(a));
        return out;
    }
    out.push_str(&format!(
        "P({} within {}) = {} {}",
        a.event,
        a.horizon,
        estimate::probability(a.probability),
        estimate::interval(&e)
    ));
    if a.relative_error.is_finite() {
        out.push_str(&format!("  (±{:.0}%)", a.relative_error * 100.0));
    }
    out.push('\n');
    if let (Some(m), Some((low, high))) = (a.mean_time_to_event, a.mean_time_to_event_interval) {
        out.push_str(&format!(
            "mean time to it ≈ {} [{}, {}]\n",
            estimate::span(m),
            estimate::span(low),
            estimate::span(high)
        ));
    }
    out.push_str(&method_lines(a));
    out.push_str(&format!("\nsimulated {} events", count(a.events as f64)));
    if let (Some(runs), Some(events)) = (a.plain_runs_needed, a.plain_events_needed) {
        out.push_str(&format!(
            "; plain runs would need ≈ {} runs ({} events) for the same ±{:.0}%: {:.0}× more",
            count(runs),
            count(events),
            a.relative_error * 100.0,
            events / a.events.max(1) as f64
        ));
    }
    out.push('\n');
    for note in &a.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    match (&a.replay, a.replay_at) {
        (Some(r), Some(at)) => {
            out.push_str(&format!("one run that reached it (at {at:.3}s): {r}\n"))
        }
        _ => out.push_str("no run reached the event, so there is none to replay\n"),
    }
    out
}

/// The answer as one JSON object.
pub fn json(a: &Answer) -> String {
    serde_json::to_string_pretty(a).expect("an answer is plain data")
}
