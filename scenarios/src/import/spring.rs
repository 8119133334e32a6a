//! How Spring Boot binds configuration, the part `resilience4j`'s properties need: relaxed
//! names (`failure-rate-threshold`, `failureRateThreshold` and `failure_rate_threshold` are one
//! property), dotted YAML keys (`resilience4j.circuitbreaker:` is `resilience4j:` holding
//! `circuitbreaker:`), and `java.time.Duration` values (`500ms`, `10s`, ISO-8601 `PT0.5S`, or a
//! bare number of milliseconds, Spring's unit when a property names none).

use serde_json::{Map, Value};
use sim_core::SimDuration;

/// A property name in Spring's relaxed form: lower case, without `-` and `_`.
pub fn relaxed(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The key of `object` that names `property` (given relaxed), as the file writes it.
pub fn key_of<'a>(object: &'a Value, property: &str) -> Option<&'a str> {
    object
        .as_object()?
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.as_str())
        .find(|k| relaxed(k) == property)
}

/// The steps of a dotted key: `a.b` is two; `[a.b]` is one, `a.b`, as Spring reads a map key
/// in brackets (with its dots and every other character kept).
pub fn key_steps(key: &str) -> Vec<&str> {
    let mut steps = Vec::new();
    let (mut start, mut depth) = (0, 0usize);
    for (i, c) in key.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '.' if depth == 0 => {
                steps.push(&key[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    steps.push(&key[start..]);
    steps
        .into_iter()
        .map(
            |s| match s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                Some(inner) if !inner.is_empty() => inner,
                _ => s,
            },
        )
        .collect()
}

/// `name` as a key of a Spring map whose values are objects (resilience4j's `instances`):
/// as it is when Spring keeps it whole, else in brackets. Without them Spring splits a key at
/// its dots (`reviews.prod` binds an instance `reviews`, and `prod.…` to nothing) and drops
/// every character but letters, digits, `-` and `.`.
pub fn map_key(name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        name.to_string()
    } else {
        format!("[{name}]")
    }
}

/// `root` with every dotted key of a map split into nested maps, as Spring reads YAML
/// (`resilience4j.retry: {…}` is `resilience4j: {retry: {…}}`; a step in brackets, `[a.b]`, is
/// one key). A property given twice, or as a value and as a map, is an error naming its
/// dotted path.
pub fn nest(root: &Value) -> Result<Value, String> {
    match root {
        Value::Object(map) => {
            let mut out = Value::Object(Map::new());
            for (k, v) in map {
                put(&mut out, &key_steps(k), nest(v)?, k)?;
            }
            Ok(out)
        }
        Value::Array(items) => items
            .iter()
            .map(nest)
            .collect::<Result<_, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// Merges `value` at `steps` under `node` (both maps merge; anything else twice is an error).
fn put(node: &mut Value, steps: &[&str], value: Value, key: &str) -> Result<(), String> {
    let (first, rest) = steps.split_first().expect("a key has at least one step");
    let Value::Object(map) = node else {
        return Err(format!("{key}: given as a value and as a map; keep one"));
    };
    match (rest.is_empty(), map.get_mut(*first)) {
        (true, None) => {
            map.insert(first.to_string(), value);
            Ok(())
        }
        (true, Some(existing)) => match (existing, value) {
            (Value::Object(old), Value::Object(new)) => {
                for (k, v) in new {
                    put_one(old, k, v, key)?;
                }
                Ok(())
            }
            _ => Err(format!("{key}: given twice; keep one")),
        },
        (false, Some(child)) => put(child, rest, value, key),
        (false, None) => {
            let child = map
                .entry(first.to_string())
                .or_insert(Value::Object(Map::new()));
            put(child, rest, value, key)
        }
    }
}

fn put_one(map: &mut Map<String, Value>, k: String, v: Value, key: &str) -> Result<(), String> {
    let mut holder = Value::Object(std::mem::take(map));
    let result = put(&mut holder, &[k.as_str()], v, key);
    if let Value::Object(m) = holder {
        *map = m;
    }
    result
}

/// What a Spring `Duration` property accepts, for error messages.
pub const DURATION_FORMS: &str = "a duration as Spring reads it: a number of milliseconds (`500`), a number with a unit (`500ms`, `10s`, `2m`; units ns, us, ms, s, m, h, d) or ISO-8601 (`PT0.5S`)";

/// Nanoseconds of a Spring `Duration` value, or `None` if it is not one (or is negative).
pub fn duration(v: &Value) -> Option<u128> {
    match v {
        Value::Number(n) => n.as_u64().map(|ms| u128::from(ms) * 1_000_000),
        Value::String(s) => {
            let s = s.trim();
            if s.starts_with(['P', 'p']) {
                iso_duration(&s[1..])
            } else {
                simple_duration(s)
            }
        }
        _ => None,
    }
}

/// Spring's simple form: digits, then an optional unit (milliseconds when none).
fn simple_duration(s: &str) -> Option<u128> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u128 = digits.parse().ok()?;
    let scale: u128 = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1,
        "us" => 1_000,
        "" | "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// `java.time.Duration.parse` after its `P`: `nD`, then `T` and `nH`, `nM`, `n.nS`.
fn iso_duration(rest: &str) -> Option<u128> {
    let rest = rest.to_ascii_uppercase();
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d.to_string(), t.to_string()),
        Some(_) => return None,
        None => (rest.clone(), String::new()),
    };
    let mut total: u128 = 0;
    if !days.is_empty() {
        let n: u128 = days.strip_suffix('D')?.parse().ok()?;
        total += n * 86_400_000_000_000;
    }
    let mut number = String::new();
    for c in time.chars() {
        let scale: u128 = match c {
            'H' => 3_600_000_000_000,
            'M' => 60_000_000_000,
            'S' => {
                total += super::tree::decimal_seconds(&std::mem::take(&mut number))?;
                continue;
            }
            c if c.is_ascii_digit() || c == '.' => {
                number.push(c);
                continue;
            }
            _ => return None,
        };
        let n: u128 = std::mem::take(&mut number).parse().ok()?;
        total += n * scale;
    }
    (number.is_empty() && (!days.is_empty() || !time.is_empty())).then_some(total)
}

/// A duration within the scenario format's cap, from nanoseconds.
pub fn sim_duration(nanos: u128) -> Option<SimDuration> {
    (nanos <= u128::from(SimDuration::CONFIG_MAX.as_nanos()))
        .then(|| SimDuration::from_nanos(nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bracketed_map_keys_keep_their_dots() {
        assert_eq!(key_steps("resilience4j.retry"), ["resilience4j", "retry"]);
        assert_eq!(
            key_steps("instances.[reviews.prod].x"),
            ["instances", "reviews.prod", "x"]
        );
        assert_eq!(key_steps("[reviews.prod]"), ["reviews.prod"]);
        assert_eq!(map_key("backendA"), "backendA");
        assert_eq!(map_key("reviews.prod"), "[reviews.prod]");
        assert_eq!(map_key("reviews/v1"), "[reviews/v1]");
    }

    #[test]
    fn durations_in_springs_forms() {
        let ms = |v: Value| duration(&v).map(|n| n / 1_000_000);
        assert_eq!(ms(json!(500)), Some(500));
        assert_eq!(ms(json!("500")), Some(500));
        assert_eq!(ms(json!("500ms")), Some(500));
        assert_eq!(ms(json!("10s")), Some(10_000));
        assert_eq!(ms(json!("2m")), Some(120_000));
        assert_eq!(ms(json!("1h")), Some(3_600_000));
        assert_eq!(ms(json!("PT0.5S")), Some(500));
        assert_eq!(ms(json!("pt1m30s")), Some(90_000));
        assert_eq!(ms(json!("P1DT1S")), Some(86_401_000));
        for bad in [
            json!("0.5s"),
            json!("-1s"),
            json!("10 s"),
            json!("PT"),
            json!("P1"),
            json!(1.5),
            json!("5x"),
        ] {
            assert_eq!(duration(&bad), None, "{bad}");
        }
    }

    #[test]
    fn relaxed_names_and_dotted_keys() {
        assert_eq!(
            relaxed("failure-rate-threshold"),
            relaxed("failureRateThreshold")
        );
        let v = json!({"a.b": {"c": 1}, "a": {"b.d": 2}});
        assert_eq!(nest(&v).unwrap(), json!({"a": {"b": {"c": 1, "d": 2}}}));
        assert!(
            nest(&json!({"a.b": 1, "a": {"b": 2}}))
                .unwrap_err()
                .contains("given twice")
        );
        assert!(
            nest(&json!({"a": 1, "a.b": 2}))
                .unwrap_err()
                .contains("as a value and as a map")
        );
    }
}
