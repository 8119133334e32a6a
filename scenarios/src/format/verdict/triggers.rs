//! The triggers of a scenario's timeline (see the parent module for what counts) and the
//! [`Window`] a verdict is judged over.

use crate::format::schema::{FaultKind, Load, Scenario, Schedule, times};
use sim_core::SimDuration;

/// A disturbance on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    /// What it is, as the report's timeline names it (`load_spike`, `slowdown`, `load_step`).
    pub kind: String,
    /// A short description (`load spike users ×2`).
    pub label: String,
    /// When it starts.
    pub start: SimDuration,
    /// When it ends; `None` for a fault that lasts to the end of the run.
    pub end: Option<SimDuration>,
}

/// The scenario's disturbances, in the order of the timeline: the clients' schedules by
/// client name, then the faults in file order. See the module docs for what counts.
pub fn triggers(scenario: &Scenario) -> Vec<Trigger> {
    let mut out = Vec::new();
    for (name, c) in &scenario.clients {
        let Load::Open { rate } = &c.load else {
            continue;
        };
        match rate {
            Schedule::Spike {
                base,
                peak,
                start,
                end,
            } if base != peak => {
                let (b, p) = (base.as_per_second(), peak.as_per_second());
                let label = if b > 0.0 {
                    format!("load spike {name} {}", times(p / b))
                } else {
                    format!("load spike {name} to {peak}")
                };
                out.push(Trigger {
                    kind: "load_spike".to_string(),
                    label,
                    start: *start,
                    end: Some(*end),
                });
            }
            Schedule::Steps(steps) => {
                // A step down ends the stretch of steps above its rate that precedes it.
                for i in 1..steps.len() {
                    let low = steps[i].rate.as_per_second();
                    if low >= steps[i - 1].rate.as_per_second() {
                        continue;
                    }
                    let mut j = i - 1;
                    while j > 0 && steps[j - 1].rate.as_per_second() > low {
                        j -= 1;
                    }
                    out.push(Trigger {
                        kind: "load_step".to_string(),
                        label: format!(
                            "load step {name} {} → {}",
                            steps[i - 1].rate,
                            steps[i].rate
                        ),
                        start: steps[j].at,
                        end: Some(steps[i].at),
                    });
                }
            }
            _ => {}
        }
    }
    for f in &scenario.faults {
        // A flush is an instant that ends where it starts.
        let end = match &f.kind {
            FaultKind::CacheFlush { .. } => Some(f.at),
            _ => f.end(scenario),
        };
        out.push(Trigger {
            kind: f.kind.snake_name(),
            label: f.kind.short_label(),
            start: f.at,
            end,
        });
    }
    out
}

/// The window a verdict is judged over: the first trigger's start and the last trigger's end.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// When the first trigger starts (the baseline ends here).
    pub first_start: SimDuration,
    /// The trigger that ends last.
    pub last: Trigger,
    /// How many triggers the scenario has.
    pub triggers: usize,
}

/// Why a scenario has no verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoVerdict {
    /// Nothing on the timeline disturbs the run.
    NoTrigger,
    /// A fault lasts to the end of the run (its label).
    Endless(String),
    /// The last trigger ends at or after this run's end.
    EndsLate {
        /// Its label.
        label: String,
        /// When it ends.
        end: SimDuration,
    },
}

impl std::fmt::Display for NoVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoVerdict::NoTrigger => write!(
                f,
                "the scenario has no trigger that ends (a fault with a `duration`, a cache flush, a `Spike` schedule or `Steps` that go back down)"
            ),
            NoVerdict::Endless(label) => write!(
                f,
                "the fault `{label}` has no `duration`, so it lasts to the end of the run and nothing can recover from it; give it a `duration`"
            ),
            NoVerdict::EndsLate { label, end } => write!(
                f,
                "the trigger `{label}` ends at {end}, not before the end of the run; run longer or end it earlier"
            ),
        }
    }
}

/// The window of `scenario` for a run that ends at `run_end`.
pub fn window(scenario: &Scenario, run_end: SimDuration) -> Result<Window, NoVerdict> {
    let all = triggers(scenario);
    if let Some(t) = all.iter().find(|t| t.end.is_none()) {
        return Err(NoVerdict::Endless(t.label.clone()));
    }
    let last = all
        .iter()
        .max_by_key(|t| t.end)
        .ok_or(NoVerdict::NoTrigger)?
        .clone();
    let end = last.end.expect("endless triggers are refused above");
    if end >= run_end {
        return Err(NoVerdict::EndsLate {
            label: last.label,
            end,
        });
    }
    Ok(Window {
        first_start: all.iter().map(|t| t.start).min().expect("not empty"),
        last,
        triggers: all.len(),
    })
}
