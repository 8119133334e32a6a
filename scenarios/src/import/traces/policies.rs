//! The retries the spans show against the policies of the scenario imported: a line for each
//! call the traces saw retried that no policy retries, retried more often than its policy
//! allows, or failing without a retry where its policy retries. What a user reads when the
//! configuration given is not the one the traced system ran, or when something else (a
//! client library, a second proxy) retries too.

use super::Calibration;
use crate::Scenario;
use crate::format::schema::Layer;

/// The disagreements between `calibration`'s edges and the calls of `scenario`, the one the
/// import wrote, each a line in the user's words.
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
        let allowed = service.calls[i].stack.iter().find_map(|layer| match layer {
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
            None if edge.attempts_max > 1 => lines.push(format!(
                "{seen}, and the scenario gives {path} no retry: import the configuration that retries it with the traces, or add a Retry to its stack (or the callee is called twice in one job)"
            )),
            Some(max) if edge.attempts_max > max => lines.push(format!(
                "{seen}, more than the {max} that {path}'s Retry allows: something else retries too (a client library, a second proxy), or the configuration given is not the one that ran"
            )),
            Some(max) if max > 1 && edge.attempts_max <= 1 && edge.error_ratio > 0.0 => {
                lines.push(format!(
                    "traces: {} -> {} failed on {:.2}% of its spans and was never sent twice, but {path}'s Retry allows {max} attempts: the configuration given may not be the one that ran, or its retries are on outcomes these failures are not",
                    edge.caller,
                    edge.callee,
                    100.0 * edge.error_ratio
                ));
            }
            _ => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::traces::system::EdgeRow;

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
            }],
            ..Calibration::default()
        }
    }

    fn scenario(stack: &str) -> Scenario {
        let text = format!(
            r#"Scenario(name: "s", duration: "1s",
                clients: {{ "users": (load: Open(rate: Constant("1/s")), call: (target: "api")) }},
                services: {{
                    "api": (workers: 1, work: Constant(value: "1ms"), calls: [(target: "db", stack: [{stack}])]),
                    "db": (workers: 1, work: Constant(value: "1ms")),
                }})"#
        );
        crate::format::load::parse("s.ron", &text).unwrap_or_else(|e| panic!("{e}"))
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
