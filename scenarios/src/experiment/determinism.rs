//! [`check_determinism`]: a run made twice, its digests compared, and on a difference the first
//! event where the two histories part, described (`resim run FILE --check-determinism`).
//!
//! A run is a function of the scenario and the seed; when two runs of the same ones differ,
//! something read state the seed does not fix (a clock, a hash map's order, an address). The
//! first divergent event is where to look: both runs keep a trace of their first
//! [`TRACE_EVENTS_MAX`] events, and the instant of the first difference is then described event
//! by event, for each run, by a third and fourth run with a trace window there.

use crate::format::error::ScenarioError;
use crate::format::schema::Scenario;
use crate::{RunOptions, run};
use sim_core::SimDuration;
use sim_core::sim::{TraceRecord, first_divergence};
use std::fmt::Write as _;

/// How many events of each run the check compares record by record (32 bytes each).
pub const TRACE_EVENTS_MAX: usize = 4_000_000;

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Both runs gave this digest after this many events.
    Same {
        /// The digest of both.
        digest: String,
        /// Events each run executed.
        events: u64,
    },
    /// The runs differ.
    Different {
        /// The two digests.
        digests: (String, String),
        /// The index of the first differing event and the two records there (`None`: that run
        /// had ended), or `None` when the traced events all agree (the divergence is later).
        first: Option<(usize, Option<TraceRecord>, Option<TraceRecord>)>,
        /// Each run's description of the events at the instant of the first difference.
        described: (Vec<String>, Vec<String>),
    },
}

/// Runs `scenario` twice with `options` and compares the two histories.
pub fn check_determinism(
    scenario: &Scenario,
    file: &str,
    options: &RunOptions,
) -> Result<Verdict, ScenarioError> {
    let traced = RunOptions {
        trace_capacity: TRACE_EVENTS_MAX,
        trace_window: None,
        ..options.clone()
    };
    let a = run(scenario, file, &traced)?;
    let b = run(scenario, file, &traced)?;
    if a.report.digest == b.report.digest {
        return Ok(Verdict::Same {
            digest: a.report.digest,
            events: a.report.events,
        });
    }
    let first = first_divergence(&a.trace, &b.trace);
    let described = match first.as_ref().and_then(|(_, x, y)| x.or(*y)) {
        Some(record) => {
            let at = SimDuration::from_nanos(record.time.as_nanos());
            let window = RunOptions {
                trace_window: Some((at, at)),
                trace_capacity: 0,
                ..options.clone()
            };
            (
                run(scenario, file, &window)?.report.trace,
                run(scenario, file, &window)?.report.trace,
            )
        }
        None => (Vec::new(), Vec::new()),
    };
    Ok(Verdict::Different {
        digests: (a.report.digest, b.report.digest),
        first,
        described,
    })
}

/// The verdict as `resim run --check-determinism` prints it.
pub fn render(verdict: &Verdict, seed: u64) -> String {
    let mut out = String::new();
    match verdict {
        Verdict::Same { digest, events } => {
            let _ = writeln!(
                out,
                "deterministic: two runs of seed {seed} gave digest {digest} after {events} events each"
            );
        }
        Verdict::Different {
            digests,
            first,
            described,
        } => {
            let _ = writeln!(
                out,
                "not deterministic: two runs of seed {seed} gave digests {} and {}",
                digests.0, digests.1
            );
            let show = |r: &Option<TraceRecord>| {
                r.map_or("(the run had ended)".to_string(), |r| r.to_string())
            };
            match first {
                Some((i, x, y)) => {
                    let _ = writeln!(out, "first divergent event: #{i}");
                    let _ = writeln!(out, "  run 1: {}", show(x));
                    let _ = writeln!(out, "  run 2: {}", show(y));
                    for (n, lines) in [(1, &described.0), (2, &described.1)] {
                        let _ = writeln!(out, "events at that instant, run {n}:");
                        for l in lines {
                            let _ = writeln!(out, "  {l}");
                        }
                    }
                }
                None => {
                    let _ = writeln!(
                        out,
                        "the first {TRACE_EVENTS_MAX} events agree; the runs part later"
                    );
                }
            }
        }
    }
    out
}
