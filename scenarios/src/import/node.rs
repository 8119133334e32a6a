//! A place in a configuration file as a reader walks it: [`Node`] (a value and its path, with
//! the file and its [`Ledger`]) and the typed reads every format shares (numbers, strings,
//! booleans, protobuf durations, objects, lists), each marking what it took and naming the
//! field, its line and its column when the value is not what the format expects.

use super::ImportError;
use super::ledger::{Ledger, Skip};
use super::model::Origin;
use super::tree::{Doc, child, decimal_seconds, item_name};
use serde_json::Value;
use sim_core::SimDuration;

/// A place in a file: its value and its path, with the ledger that records what is read.
#[derive(Clone)]
pub struct Node<'a> {
    /// The value there.
    pub value: &'a Value,
    /// Its path in the file.
    pub path: String,
    /// The file.
    pub doc: &'a Doc,
    /// What is read of the file.
    pub ledger: &'a Ledger,
}

/// A field read from a file, with its path.
pub struct Found<T> {
    /// The value as read.
    pub value: T,
    /// Where it is (`clusters[db].connect_timeout`).
    pub path: String,
}

/// A [`Node`] that owns its path (a child of another node).
pub type Owned<'a> = Node<'a>;

impl<'a> Node<'a> {
    /// The top of `doc`.
    pub fn root(doc: &'a Doc, ledger: &'a Ledger) -> Node<'a> {
        Node::at(doc, ledger, &doc.root, String::new())
    }

    /// The value `value` of `doc` at `path`.
    pub fn at(doc: &'a Doc, ledger: &'a Ledger, value: &'a Value, path: String) -> Node<'a> {
        Node {
            value,
            path,
            doc,
            ledger,
        }
    }

    /// The node itself (a reader's handle on an entry it keeps).
    pub fn node(&self) -> Node<'a> {
        self.clone()
    }

    /// Where `path` of this node's file is, as comments and the table name it.
    pub fn origin(&self, path: &str) -> Origin {
        self.ledger.origin(self.doc, path)
    }

    /// An error about the value at `path`: the file, the path, what was expected.
    pub fn error(&self, path: &str, message: impl std::fmt::Display) -> ImportError {
        ImportError::new(format!(
            "{}: {}: {message}",
            self.doc.file_of(self.doc.spots.at(path)),
            self.ledger.name(path)
        ))
    }

    /// The key field `k` has in the file (its own name, or the same in another case where the
    /// format's reader folds case).
    fn key(&self, k: &str) -> Option<&'a str> {
        self.ledger.key(self.value, &self.path, k)
    }

    /// The path of field `k`, as the file spells its key.
    pub fn path_of(&self, k: &str) -> String {
        child(&self.path, self.key(k).unwrap_or(k))
    }

    /// The raw value of field `k`, if present (not marked as used).
    pub fn raw(&self, k: &str) -> Option<&'a Value> {
        self.value.get(self.key(k)?).filter(|v| !v.is_null())
    }

    /// Marks field `k` as used.
    pub fn take(&self, k: &str) {
        self.ledger.take(&self.path_of(k));
    }

    /// Marks field `k` as left out, for `reason`.
    pub fn skip(&self, k: &str, kind: Skip, reason: impl Into<String>) {
        if self.raw(k).is_some() {
            self.ledger.skip(&self.path_of(k), kind, reason);
        }
    }

    /// An unsigned integer field (protobuf's `UInt32Value` is a plain number in JSON).
    pub fn u32(&self, k: &str) -> Result<Option<Found<u32>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = self.path_of(k);
        let n = match v {
            Value::Number(n) => n.as_u64(),
            // Protobuf's JSON form writes 64-bit integers as strings; YAML users quote numbers.
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        }
        .ok_or_else(|| self.error(&path, format!("expected an unsigned integer, got {v}")))?;
        let n = u32::try_from(n)
            .map_err(|_| self.error(&path, format!("expected at most {}, got {n}", u32::MAX)))?;
        self.ledger.take(&path);
        Ok(Some(Found { value: n, path }))
    }

    /// A number field (protobuf's `double`, or a `Percent` written `{value: 20}`).
    pub fn f64(&self, k: &str) -> Result<Option<Found<f64>>, ImportError> {
        let Some(mut v) = self.raw(k) else {
            return Ok(None);
        };
        let mut path = self.path_of(k);
        if let Some(inner) = v.get("value") {
            self.ledger.take(&path);
            path = child(&path, "value");
            v = inner;
        }
        let x = match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        }
        .filter(|x| x.is_finite())
        .ok_or_else(|| self.error(&path, format!("expected a number, got {v}")))?;
        self.ledger.take(&path);
        Ok(Some(Found { value: x, path }))
    }

    /// A string field.
    pub fn str(&self, k: &str) -> Result<Option<Found<String>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = self.path_of(k);
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return Err(self.error(&path, format!("expected a string, got {v}"))),
        };
        self.ledger.take(&path);
        Ok(Some(Found { value: s, path }))
    }

    /// A boolean field.
    pub fn bool(&self, k: &str) -> Result<Option<Found<bool>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = self.path_of(k);
        let b = match v {
            Value::Bool(b) => *b,
            Value::String(s) if s == "true" || s == "false" => s == "true",
            _ => return Err(self.error(&path, format!("expected true or false, got {v}"))),
        };
        self.ledger.take(&path);
        Ok(Some(Found { value: b, path }))
    }

    /// A protobuf `Duration`: `"0.25s"` as its JSON form writes it (what Envoy's YAML takes),
    /// or `{seconds: 1, nanos: 0}`.
    pub fn duration(&self, k: &str) -> Result<Option<Found<SimDuration>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = self.path_of(k);
        let d = proto_duration(v).ok_or_else(|| {
            self.error(
                &path,
                format!(
                    "expected a google.protobuf.Duration, seconds with an \"s\" suffix such as \"0.25s\" or \"5s\", got {v}"
                ),
            )
        })?;
        let d = checked(d).map_err(|m| self.error(&path, m))?;
        self.ledger.take(&path);
        Ok(Some(Found { value: d, path }))
    }

    /// The object at field `k`, if present.
    pub fn object(&self, k: &str) -> Result<Option<Node<'a>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = self.path_of(k);
        if !v.is_object() {
            return Err(self.error(
                &path,
                format!("expected an object (a map of fields), got {v}"),
            ));
        }
        Ok(Some(Node::at(self.doc, self.ledger, v, path)))
    }

    /// The entries of the list at field `k` (none when absent), each named as
    /// [`item_name`] names it.
    pub fn list(&self, k: &str) -> Result<Vec<Node<'a>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(Vec::new());
        };
        let path = self.path_of(k);
        let Value::Array(items) = v else {
            return Err(self.error(&path, format!("expected a list, got {v}")));
        };
        Ok(entries(self.doc, self.ledger, items, &path))
    }
}

/// The entries of the list `items` at `path`, named as [`item_name`] names them.
pub fn entries<'a>(
    doc: &'a Doc,
    ledger: &'a Ledger,
    items: &'a [Value],
    path: &str,
) -> Vec<Node<'a>> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| Node::at(doc, ledger, v, format!("{path}[{}]", item_name(v, i))))
        .collect()
}

/// A duration within the scenario format's cap (100 years).
fn checked(nanos: u128) -> Result<SimDuration, String> {
    let cap = SimDuration::CONFIG_MAX.as_nanos();
    if nanos > u128::from(cap) {
        return Err(format!(
            "is longer than resim accepts ({}); check the unit",
            SimDuration::CONFIG_MAX
        ));
    }
    Ok(SimDuration::from_nanos(nanos as u64))
}

/// Nanoseconds of a protobuf `Duration` in its JSON or object form.
fn proto_duration(v: &Value) -> Option<u128> {
    match v {
        Value::String(s) => decimal_seconds(s.trim().strip_suffix('s')?),
        Value::Object(o) => {
            let seconds = o.get("seconds").map_or(Some(0), |s| match s {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            })?;
            let nanos = o.get("nanos").map_or(Some(0), Value::as_u64)?;
            (nanos < 1_000_000_000).then(|| u128::from(seconds) * 1_000_000_000 + u128::from(nanos))
        }
        _ => None,
    }
}
