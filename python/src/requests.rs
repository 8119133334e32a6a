//! What `Run.requests()` reads: the client requests a run kept whole when asked
//! (`Scenario.run(requests=SHARE)`), which are the ones `resim run --spans FILE --spans-sample
//! SHARE` writes as traces: the same share, chosen by their trace ids, the same spans
//! (`report::spans::trace_of`). A run that does not ask keeps none and takes the path of a
//! plain run. One JSON object per request: its id and trace id, its client and the call it
//! made, when it started and ended, its outcome, its attempts and spans.

use scenarios::figures::Followed;
use scenarios::report::spans::{Kind, Trace, Value, trace_of};
use scenarios::run::{RunOptions, RunOutput, run_streaming};
use scenarios::{Scenario, ScenarioError};
use sim_core::SimTime;

/// `scenario` run with `options`, keeping `share` (0 to 1) of its client requests whole, as
/// `resim run --spans` does: the run's output (the same run: same digest) and each kept
/// request as a JSON line, in the order they ended.
pub fn run_keeping(
    scenario: &Scenario,
    file: &str,
    options: &RunOptions,
    share: f64,
) -> Result<(RunOutput, String), ScenarioError> {
    let options = RunOptions {
        sample_requests: Some(share),
        ..options.clone()
    };
    let seed = options.seed.unwrap_or(scenario.seed);
    let mut lines = String::new();
    let mut keep = |f: Followed, stopped: Option<SimTime>| {
        lines.push_str(&row(&trace_of(&f, seed, stopped)).to_string());
        lines.push('\n');
    };
    let out = run_streaming(scenario, file, &options, &mut keep)?;
    Ok((out, lines))
}

/// One request's row: its root span (the client's call) and the attempts under it.
fn row(trace: &Trace) -> serde_json::Value {
    let Some(root) = trace.spans.iter().find(|s| s.parent.is_none()) else {
        return serde_json::json!({ "request": trace.request, "spans": 0 });
    };
    let attempts = trace
        .spans
        .iter()
        .filter(|s| s.parent == Some(root.id) && s.kind == Kind::Client)
        .count();
    let in_flight = root
        .attributes
        .iter()
        .any(|(name, v)| *name == "resim.in_flight" && *v == Value::Bool(true));
    let ns = |t: SimTime| t.as_nanos();
    serde_json::json!({
        "request": trace.request,
        "trace_id": format!("{:032x}", trace.id),
        "client": root.service,
        "call": root.name,
        "target": root.peer,
        "start_ns": ns(root.start),
        "end_ns": ns(root.end),
        "latency_ms": (ns(root.end) - ns(root.start)) as f64 / 1e6,
        "outcome": root.error.as_deref().unwrap_or("ok"),
        "attempts": attempts,
        "spans": trace.spans.len(),
        "in_flight": in_flight,
    })
}
