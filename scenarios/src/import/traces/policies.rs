//! The retries and timeouts the spans show against the policies of the scenario imported (a
//! new one, or the one `--into` wrote into): a line for each call the traces saw retried that
//! no policy retries, retried more often than its policy allows, or failing without a retry
//! where its policy retries; and for each call whose attempts ended in deadline errors where
//! the scenario sets no timeout, or after a time other than its timeout, or that succeeded
//! after longer than its timeout allows. What a user reads when the configuration given is
//! not the one the traced system ran, or when something else (a client library, a second
//! proxy) retries or times out too.

use super::{Calibration, EdgeRow};
use crate::Scenario;
use crate::format::schema::{Call, Layer};
use sim_core::SimDuration;

/// How far a timeout may be from the time the spans show it (a share of it): a span is timed
/// from a little before its timer starts to a little after it fires.
const TIMEOUT_SLACK: f64 = 0.1;

/// The disagreements between `calibration`'s edges and the calls of `scenario`, each a line
/// in the user's words.
pub fn disagreements(calibration: &Calibration, scenario: &Scenario) -> Vec<String> {
    let mut lines = Vec::new();
    for edge in &calibration.edges {
        let Some(service) = scenario.services.get(&edge.caller) else {
            continue;
        };
        let Some(i) = service.calls.iter().position(|c| c.target == edge.callee) else {
            continue;
        };
        let path = format!("services.{}.calls[{i}]", edge.caller);
        lines.extend(retries(edge, &service.calls[i], &path));
        lines.extend(timeouts(edge, &service.calls[i], &path));
    }
    lines
}

/// Where the spans' retries disagree with `call`'s `Retry`.
fn retries(edge: &EdgeRow, call: &Call, path: &str) -> Option<String> {
    let allowed = call.stack.iter().find_map(|layer| match layer {
        Layer::Retry(r) => Some(u64::from(r.max_attempts)),
        _ => None,
    });
    let seen = format!(
        "traces: {} -> {} was sent more than once in {:.2}% of the jobs calling it (up to {} attempts)",
        edge.caller,
        edge.callee,
        100.0 * edge.retried,
        edge.attempts_max
    );
    match allowed {
        None if edge.attempts_max > 1 => Some(format!(
            "{seen}, and the scenario gives {path} no retry: import the configuration that retries it with the traces, or add a Retry to its stack (or the callee is called twice in one job)"
        )),
        Some(max) if edge.attempts_max > max => Some(format!(
            "{seen}, more than the {max} that {path}'s Retry allows: something else retries too (a client library, a second proxy), or the configuration given is not the one that ran"
        )),
        Some(max) if max > 1 && edge.attempts_max <= 1 && edge.error_ratio > 0.0 => Some(format!(
            "traces: {} -> {} failed on {:.2}% of its spans and was never sent twice, but {path}'s Retry allows {max} attempts: the configuration given may not be the one that ran, or its retries are on outcomes these failures are not",
            edge.caller,
            edge.callee,
            100.0 * edge.error_ratio
        )),
        _ => None,
    }
}

/// Where the spans' deadline errors and attempt times disagree with `call`'s timeouts: its
/// per-attempt `timeout`, an `AdaptiveTimeout`'s floor and ceiling, its `deadline`.
fn timeouts(edge: &EdgeRow, call: &Call, path: &str) -> Vec<String> {
    let adaptive = call.stack.iter().find_map(|layer| match layer {
        Layer::AdaptiveTimeout(a) => Some((a.floor.as_nanos(), a.ceiling.as_nanos())),
        _ => None,
    });
    let deadline = call.deadline.map(SimDuration::as_nanos);
    // The longest an attempt may last, and the shortest a timed-out one may (nanoseconds),
    // with what sets them.
    let (low, high, said) = match (call.timeout, adaptive, deadline) {
        (Some(t), _, _) => (
            t.as_nanos(),
            t.as_nanos(),
            format!("{path}'s timeout is {t}"),
        ),
        (None, Some((floor, ceiling)), _) => (
            floor,
            ceiling,
            format!(
                "{path}'s AdaptiveTimeout keeps its timeout between {} and {}",
                SimDuration::from_nanos(floor),
                SimDuration::from_nanos(ceiling)
            ),
        ),
        (None, None, Some(d)) => (
            0,
            d,
            format!("{path}'s deadline is {}", SimDuration::from_nanos(d)),
        ),
        (None, None, None) => (0, u64::MAX, String::new()),
    };
    let mut lines = Vec::new();
    let slack = |x: u64, by: f64| x as f64 * by;
    if let Some(after) = edge.deadline_after_ns {
        let seen = format!(
            "traces: {} -> {} ended in a deadline error on {:.2}% of its attempts, after {} (the median)",
            edge.caller,
            edge.callee,
            100.0 * edge.deadline_ratio,
            shown(after)
        );
        if said.is_empty() {
            lines.push(format!(
                "{seen}, and the scenario gives {path} no timeout: import the configuration that sets it (a route's or a gRPC method's timeout) with the traces, or give the call a timeout of about {}",
                shown(after)
            ));
        } else if (after as f64) < slack(low, 1.0 - TIMEOUT_SLACK)
            || (after as f64) > slack(high, 1.0 + TIMEOUT_SLACK)
        {
            lines.push(format!(
                "{seen}, but {said}: another timeout ends these attempts (a client library's, a second proxy's, the request's deadline), or the configuration given is not the one that ran"
            ));
        }
    }
    if high < u64::MAX {
        let limit = slack(high, 1.0 + TIMEOUT_SLACK) as u64;
        let share = edge.longer_than(limit);
        if share > 0.0 {
            lines.push(format!(
                "traces: {:.2}% of {} -> {}'s successful attempts lasted longer than {said} allows (the longest {}): the configuration given may not be the one that ran",
                100.0 * share,
                edge.caller,
                edge.callee,
                shown(edge.longest_success_ns.unwrap_or(limit))
            ));
        }
    }
    lines
}

/// A measured time to three significant figures (`20.4ms`, not `20.417238ms`).
fn shown(nanos: u64) -> SimDuration {
    let mut unit = 1;
    while nanos / unit >= 1000 {
        unit *= 10;
    }
    SimDuration::from_nanos((nanos + unit / 2) / unit * unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(retried: f64, attempts_max: u64, error_ratio: f64) -> Calibration {
        Calibration {
            edges: vec![EdgeRow {
                caller: "api".into(),
                callee: "db".into(),
                spans: 100,
                jobs: 100,
                call_ratio: 1.0,
                fan_out: 1.0,
                error_ratio,
                asynchronous: false,
                virtual_callee: false,
                retried,
                attempts_max,
                deadline_ratio: 0.0,
                deadline_after_ns: None,
                longest_success_ns: None,
                successes: Vec::new(),
            }],
            ..Calibration::default()
        }
    }

    fn scenario(stack: &str) -> Scenario {
        with_call(&format!("stack: [{stack}]"))
    }

    /// A scenario whose `api` calls `db` with `fields`.
    fn with_call(fields: &str) -> Scenario {
        let text = format!(
            r#"Scenario(name: "s", duration: "1s",
                clients: {{ "users": (load: Open(rate: Constant("1/s")), call: (target: "api")) }},
                services: {{
                    "api": (workers: 1, work: Constant(value: "1ms"), calls: [(target: "db", {fields})]),
                    "db": (workers: 1, work: Constant(value: "1ms")),
                }})"#
        );
        crate::format::load::parse("s.ron", &text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// 10% of api -> db's attempts timed out after 20.4ms; the others succeeded within 1ms to
    /// 19ms.
    fn timed_out() -> Calibration {
        let mut c = edge(0.0, 1, 0.1);
        let e = &mut c.edges[0];
        e.deadline_ratio = 0.1;
        e.deadline_after_ns = Some(20_417_238);
        e.successes = (1..=19).map(|ms| ms * 1_000_000).collect();
        e.longest_success_ns = Some(19_000_000);
        c
    }

    #[test]
    fn deadline_errors_without_a_timeout_or_after_another_one_are_lines() {
        let lines = disagreements(&timed_out(), &with_call(""));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("ended in a deadline error on 10.00% of its attempts, after 20.4ms")
                && lines[0].contains("gives services.api.calls[0] no timeout")
                && lines[0].contains("a timeout of about 20.4ms"),
            "{lines:?}"
        );
        // The timeout the spans show, within a tenth: nothing to say.
        assert!(disagreements(&timed_out(), &with_call(r#"timeout: "20ms""#)).is_empty());
        assert!(disagreements(&timed_out(), &with_call(r#"deadline: "1s""#)).is_empty());
        let adaptive =
            r#"stack: [AdaptiveTimeout(floor: "5ms", ceiling: "30ms", initial: "25ms")]"#;
        assert!(disagreements(&timed_out(), &with_call(adaptive)).is_empty());
        // Longer than the spans show: another timeout ends them first.
        let lines = disagreements(&timed_out(), &with_call(r#"timeout: "50ms""#));
        assert!(
            lines.len() == 1 && lines[0].contains("but services.api.calls[0]'s timeout is 50ms"),
            "{lines:?}"
        );
        // Shorter: and the successes that lasted longer than it allows.
        let lines = disagreements(&timed_out(), &with_call(r#"timeout: "10ms""#));
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[1].starts_with("traces: 42.11% of api -> db's successful attempts lasted longer than services.api.calls[0]'s timeout is 10ms allows (the longest 19ms)"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_measured_time_is_shown_to_three_figures() {
        assert_eq!(shown(20_417_238).to_string(), "20.4ms");
        assert_eq!(shown(250_000_000).to_string(), "250ms");
        assert_eq!(shown(1_234_567_890).to_string(), "1.23s");
        assert_eq!(shown(999).to_string(), "999ns");
    }

    #[test]
    fn more_attempts_than_the_policy_allows_and_failures_never_retried_are_lines() {
        let two = scenario("Retry(max_attempts: 2)");
        let lines = disagreements(&edge(0.1, 4, 0.2), &two);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("up to 4 attempts")
                && lines[0].contains("more than the 2 that services.api.calls[0]'s Retry allows"),
            "{lines:?}"
        );
        let lines = disagreements(&edge(0.0, 1, 0.2), &two);
        assert!(
            lines.len() == 1
                && lines[0].contains("failed on 20.00% of its spans and was never sent twice"),
            "{lines:?}"
        );
        // Within the policy, or no failures to retry: nothing to say.
        assert!(disagreements(&edge(0.1, 2, 0.2), &two).is_empty());
        assert!(disagreements(&edge(0.0, 1, 0.0), &two).is_empty());
        assert!(disagreements(&edge(0.0, 1, 0.2), &scenario("")).is_empty());
    }
}
