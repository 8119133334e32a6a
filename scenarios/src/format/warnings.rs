//! Settings a scenario may hold that read as something its author may not have meant: the
//! file is accepted, and the report (and `resim check`) names the field and both readings.
//!
//! - **A percentage written as a ratio.** A field in percent (0–100: every `_percent`, the
//!   breaker's `failure_rate_threshold` and `slow_call_rate_threshold`, which keep
//!   resilience4j's names, and every `percentile`) given a value in (0, 1] reads as at most
//!   1%; `0.5` was probably meant as 50%.
//! - **What upstream warns about.** The concurrency limits' builders accept some settings
//!   with a warning (an initial limit outside its bounds); so does resim.
//!
//! The percentages are found by walking the scenario as serde writes it, so a field added to
//! any pattern's configuration is covered by its name alone.

use crate::format::overrides::segment;
use crate::format::schema::{Admission, Scenario};
use serde_json::Value;

/// Whether a field of this name holds a percentage (0–100).
fn is_percent(name: &str) -> bool {
    name.ends_with("_percent")
        || name.ends_with("percentile")
        || name == "failure_rate_threshold"
        || name == "slow_call_rate_threshold"
}

/// The maps of a scenario whose keys are names the file chose (not field names or variant
/// tags), by their field at the top level.
fn names_map(field: &str) -> bool {
    matches!(field, "clients" | "services")
}

/// Every warning for `scenario`, each starting with the field path.
pub fn warnings(scenario: &Scenario) -> Vec<String> {
    let mut out = Vec::new();
    for (name, service) in &scenario.services {
        for (i, a) in service.admission.iter().enumerate() {
            if let Admission::Concurrency(c) = a {
                for w in c.warnings() {
                    out.push(format!("services.{}.admission[{i}].{w}", segment(name)));
                }
            }
        }
    }
    let tree = serde_json::to_value(scenario).expect("a scenario serializes");
    percent_warnings(&tree, &mut out);
    out
}

/// One step of a field path, as the walk keeps it.
#[derive(Clone, Copy)]
enum Segment<'a> {
    Key(&'a str),
    /// A key of a map of names (`services`, `clients`): quoted if it holds a dot.
    Name(&'a str),
    Index(usize),
}

/// The field path of `steps` (a variant's tag is no step: `None`).
fn path_of(steps: &[Option<Segment>]) -> String {
    let mut text = String::new();
    for step in steps.iter().flatten() {
        match step {
            Segment::Index(i) => text.push_str(&format!("[{i}]")),
            Segment::Key(k) | Segment::Name(k) => {
                if !text.is_empty() {
                    text.push('.');
                }
                match step {
                    Segment::Name(k) => text.push_str(&segment(k)),
                    _ => text.push_str(k),
                }
            }
        }
    }
    text
}

/// The percentages in (0, 1] in `tree`, walked depth first with an explicit stack (no
/// recursion: a file's nesting is bounded, but this walk needs no bound of its own). The walk
/// keeps the steps from the root to the node it is at, and writes a path only for a field
/// that holds a percentage, so that a mesh of thousands of calls costs its nodes and its
/// depth, not a string per node.
fn percent_warnings(tree: &Value, out: &mut Vec<String>) {
    // (value, its depth, the step to it, whether it is a map of names).
    let mut stack: Vec<(&Value, usize, Option<Segment>, bool)> = vec![(tree, 0, None, false)];
    let mut steps: Vec<Option<Segment>> = Vec::new();
    let mut found = Vec::new();
    while let Some((value, depth, step, names)) = stack.pop() {
        steps.truncate(depth);
        steps.push(step);
        match value {
            Value::Object(fields) => {
                // An externally tagged variant, `{"Breaker": {...}}`: the tag is not a step
                // of a field path.
                let tagged = fields.len() == 1
                    && !names
                    && fields
                        .keys()
                        .next()
                        .is_some_and(|k| k.starts_with(|c: char| c.is_ascii_uppercase()));
                for (key, v) in fields {
                    let child = match (tagged, names) {
                        (true, _) => None,
                        (false, true) => Some(Segment::Name(key)),
                        (false, false) => Some(Segment::Key(key)),
                    };
                    if !tagged && is_percent(key) {
                        steps.push(child);
                        check_percent(&path_of(&steps), v, &mut found);
                        steps.pop();
                    }
                    let of_names = depth == 0 && !tagged && names_map(key);
                    stack.push((v, depth + 1, child, of_names));
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    stack.push((v, depth + 1, Some(Segment::Index(i)), false));
                }
            }
            _ => {}
        }
    }
    // In the order of their paths, whatever the walk's.
    found.sort();
    out.extend(found);
}

/// A warning for each value of `field` (a number, or a list of them) in (0, 1].
fn check_percent(field: &str, value: &Value, found: &mut Vec<String>) {
    let values: Vec<(String, f64)> = match value {
        Value::Number(n) => n
            .as_f64()
            .map(|x| (field.to_string(), x))
            .into_iter()
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((format!("{field}[{i}]"), v.as_f64()?)))
            .collect(),
        _ => Vec::new(),
    };
    for (path, x) in values {
        if x > 0.0 && x <= 1.0 {
            found.push(format!(
                "{path}: {x} is a percentage, read as {x}%; if {} was meant, write {}",
                percent_of_ratio(x),
                trim(x * 100.0)
            ));
        }
    }
}

/// `x` as the percentage it would be if it were a ratio: `50%`.
fn percent_of_ratio(x: f64) -> String {
    format!("{}%", trim(x * 100.0))
}

/// A number without a trailing `.0`, rounded to six decimals (0.07 × 100 is 7.000000000000001).
fn trim(x: f64) -> String {
    let rounded = libm::round(x * 1e6) / 1e6;
    format!("{rounded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings_of(stack: &str) -> Vec<String> {
        let text = format!(
            r#"Scenario(
                name: "w",
                duration: "1s",
                clients: {{ "Users": (load: Open(rate: Constant("1/s")), call: (target: "api", stack: [{stack}])) }},
                services: {{ "api": (workers: 1, work: Constant(value: "1ms")) }},
            )"#
        );
        warnings(&crate::format::load::parse("w.ron", &text).unwrap_or_else(|e| panic!("{e}")))
    }

    #[test]
    fn a_percentage_written_as_a_ratio_is_named_with_both_readings() {
        assert_eq!(
            warnings_of("Breaker(failure_rate_threshold: 0.5)"),
            [
                "clients.Users.call.stack[0].failure_rate_threshold: 0.5 is a percentage, \
              read as 0.5%; if 50% was meant, write 50"
            ]
        );
        // 1 is 1%, not 100%.
        assert_eq!(
            warnings_of("Breaker(slow_call_rate_threshold: 1)"),
            [
                "clients.Users.call.stack[0].slow_call_rate_threshold: 1 is a percentage, \
              read as 1%; if 100% was meant, write 100"
            ]
        );
    }

    #[test]
    fn a_name_with_dots_is_quoted_in_the_path() {
        let text = r#"Scenario(
            name: "w",
            duration: "1s",
            clients: { "users": (load: Open(rate: Constant("1/s")), call: (target: "shop.Api")) },
            services: {
                "shop.Api": (workers: 1, work: Constant(value: "1ms"), calls: [(target: "shop.Db", stack: [Breaker(failure_rate_threshold: 0.5)])]),
                "shop.Db": (workers: 1, work: Constant(value: "1ms")),
            },
        )"#;
        let s = crate::format::load::parse("w.ron", text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            warnings(&s),
            [
                "services.\"shop.Api\".calls[0].stack[0].failure_rate_threshold: 0.5 is a \
                 percentage, read as 0.5%; if 50% was meant, write 50"
            ]
        );
    }

    #[test]
    fn percentages_above_one_and_zero_pass_quietly() {
        assert!(warnings_of("Breaker(failure_rate_threshold: 50)").is_empty());
        assert!(warnings_of("Breaker(failure_rate_threshold: 1.5)").is_empty());
        // The breaker's defaults are percentages too (50): nothing to say.
        assert!(warnings_of("Breaker()").is_empty());
    }
}
