//! Documents as text, through serde: JSON with `serde_json`, YAML with `serde-saphyr`'s
//! serializer (it quotes what YAML would read otherwise, such as `"5xx,reset"` or `"*"`). And
//! durations in each format's own syntax.

use serde_json::Value;
use sim_core::SimDuration;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// A protobuf `Duration` in JSON (Envoy, gRPC): seconds with 0, 3, 6 or 9 decimals, as
/// protobuf's JSON mapping writes it (`"2s"`, `"0.250s"`, `"0.000001500s"`).
pub fn proto_duration(d: SimDuration) -> Value {
    let n = d.as_nanos();
    let (whole, frac) = (n / NANOS_PER_SEC, n % NANOS_PER_SEC);
    let text = if frac == 0 {
        format!("{whole}s")
    } else if frac % 1_000_000 == 0 {
        format!("{whole}.{:03}s", frac / 1_000_000)
    } else if frac % 1_000 == 0 {
        format!("{whole}.{:06}s", frac / 1_000)
    } else {
        format!("{whole}.{frac:09}s")
    };
    Value::String(text)
}

/// A duration in one unit, exact, the largest that divides it: `"250ms"`, `"2s"`, `"90s"`,
/// `"5m"`, `"1h"`, `"1500us"`. Go's `time.ParseDuration` (Istio) and Spring Boot's simple
/// `Duration` form (resilience4j) both read it; `days` adds Spring's `d`.
pub fn unit_duration(d: SimDuration, days: bool) -> Value {
    let n = d.as_nanos();
    let units: [(u64, &str); 7] = [
        (86_400 * NANOS_PER_SEC, "d"),
        (3_600 * NANOS_PER_SEC, "h"),
        (60 * NANOS_PER_SEC, "m"),
        (NANOS_PER_SEC, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    let text = if n == 0 {
        "0s".to_string()
    } else {
        let (scale, unit) = units
            .iter()
            .filter(|(_, u)| days || *u != "d")
            .find(|(scale, _)| n.is_multiple_of(*scale))
            .copied()
            .unwrap_or((1, "ns"));
        format!("{}{unit}", n / scale)
    };
    Value::String(text)
}

/// An exported document: its values, and the syntax it is written in.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    /// YAML documents, `---` between them.
    Yaml(Vec<Value>),
    /// One JSON value.
    Json(Value),
}

impl Document {
    /// The document as text.
    pub fn text(&self) -> String {
        match self {
            Document::Yaml(docs) => yaml(docs),
            Document::Json(value) => json(value),
        }
    }

    /// Its values, one per YAML document.
    pub fn values(&self) -> &[Value] {
        match self {
            Document::Yaml(docs) => docs,
            Document::Json(value) => std::slice::from_ref(value),
        }
    }
}

/// `value` as pretty JSON, with a final newline.
pub fn json(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// `documents` as YAML, `---` between them.
pub fn yaml(documents: &[Value]) -> String {
    documents
        .iter()
        .map(|d| serde_saphyr::to_string(d).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("---\n")
}

/// A float as JSON writes it, whole numbers without a fraction (`2`, not `2.0`), as
/// configurations are usually written.
pub fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}
