//! Values as each format's reader converts them: protobuf's integers and durations, Go's
//! durations (Istio's CEL rules), Spring's durations and relaxed names.

use serde_json::Value;

/// A name without case, `-` or `_`: Spring's relaxed binding's canonical form.
pub(super) fn relaxed(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A proto field name as the JSON mapping writes it: `max_requests` is `maxRequests`.
pub(super) fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in name.chars() {
        match c {
            '_' => up = true,
            c if up => {
                out.extend(c.to_uppercase());
                up = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// `format`: a protobuf integer's range (a number or a string of digits), a float, a
/// `google.protobuf.Duration` (`1.5s`); `date-time` and `byte` are not checked.
pub(super) fn format_ok(format: &str, value: &Value) -> Result<(), String> {
    let range = |lo: i128, hi: i128| -> Result<(), String> {
        let n = match value {
            Value::Number(n) => n.as_i64().map(i128::from).or(n.as_u64().map(i128::from)),
            Value::String(t) => t.parse::<i128>().ok(),
            _ => None,
        };
        match n {
            Some(n) if (lo..=hi).contains(&n) => Ok(()),
            _ => Err(format!("expected a {format} ({lo} to {hi}), got {value}")),
        }
    };
    match format {
        "int32" => range(i32::MIN.into(), i32::MAX.into()),
        "uint32" => range(0, u32::MAX.into()),
        "int64" => range(i64::MIN.into(), i64::MAX.into()),
        "uint64" => range(0, u64::MAX.into()),
        "double" | "float" => match value {
            Value::Number(_) => Ok(()),
            Value::String(t)
                if ["NaN", "Infinity", "-Infinity"].contains(&t.as_str())
                    || t.parse::<f64>().is_ok() =>
            {
                Ok(())
            }
            _ => Err(format!("expected a number, got {value}")),
        },
        "google-duration" => match value.as_str() {
            Some(t) if proto_duration(t) => Ok(()),
            _ => Err(format!(
                "expected a duration in seconds with an s (\"1.5s\", \"0.100s\"), got {value}"
            )),
        },
        "date-time" | "byte" => Ok(()),
        other => panic!("format {other:?} is not understood by this check"),
    }
}

/// `google.protobuf.Duration` in JSON: `-?digits(.digits)?s`, at most nine decimals.
fn proto_duration(t: &str) -> bool {
    let Some(t) = t.strip_suffix('s') else {
        return false;
    };
    let t = t.strip_prefix('-').unwrap_or(t);
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |d: &str| d.chars().all(|c| c.is_ascii_digit());
    (!whole.is_empty() || !frac.is_empty()) && digits(whole) && digits(frac) && frac.len() <= 9
}

/// A Go duration (`1h2m`, `1.5s`, `250ms`, `0`), as CEL's `duration()` reads it: nanoseconds.
pub(super) fn go_duration_ns(t: &str) -> Option<u128> {
    if t == "0" {
        return Some(0);
    }
    let mut rest = t;
    let mut total = 0f64;
    while !rest.is_empty() {
        let n = rest.find(|c: char| !c.is_ascii_digit() && c != '.')?;
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let (unit, len) = [
            ("ns", 1e0, 2),
            ("us", 1e3, 2),
            ("µs", 1e3, 3),
            ("ms", 1e6, 2),
            ("h", 3.6e12, 1),
            ("m", 6e10, 1),
            ("s", 1e9, 1),
        ]
        .iter()
        .find(|(u, _, _)| rest.starts_with(u))
        .map(|(_, scale, len)| (*scale, *len))?;
        total += value * unit;
        rest = &rest[len..];
    }
    Some(total as u128)
}

/// A duration as Spring's `DurationStyle` reads one: `10s`, `250ms`, `3` (milliseconds), or
/// ISO-8601 (`PT10S`).
pub(super) fn spring_duration(t: &str) -> bool {
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    if t.starts_with(['P', 'p']) {
        return t.len() > 1;
    }
    let n = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    n > 0
        && ["", "ns", "us", "ms", "s", "m", "h", "d"]
            .contains(&t[n..].to_ascii_lowercase().as_str())
}
