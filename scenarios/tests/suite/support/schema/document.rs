//! A document as the tree the schema check walks: YAML or JSON, several YAML documents as a
//! list, a `.properties` file and Spring's dotted YAML keys as Spring nests them.

use scenarios::export::TargetFormat;
use serde_json::{Map, Value};

/// The document as a tree: YAML (several documents as a list) or JSON, a `.properties` file
/// as the tree of its dotted keys. Spring's dotted YAML keys are nested as Spring binds them.
pub(super) fn document(format: TargetFormat, file: &str, text: &str) -> Result<Value, String> {
    if file.ends_with(".properties") {
        return Ok(properties(text));
    }
    let mut docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| e.to_string())?;
    docs.retain(|d| !d.is_null());
    let doc = match docs.len() {
        1 => docs.remove(0),
        _ => Value::Array(docs),
    };
    Ok(match format {
        TargetFormat::Resilience4j => nest(&doc),
        _ => doc,
    })
}

/// A `.properties` text as a tree: `a.b[0]=x` is `{a: {b: ["x"]}}`; every value is text.
fn properties(text: &str) -> Value {
    let mut tree = Value::Object(Map::new());
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let (key, value) = line
            .split_once(['=', ':'])
            .map(|(k, v)| (k.trim(), v.trim()))
            .unwrap_or((line, ""));
        put(&mut tree, key, Value::String(value.to_string()));
    }
    tree
}

/// A YAML tree whose keys may be dotted (`resilience4j.retry:`), nested at each dot.
fn nest(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut tree = Value::Object(Map::new());
            for (k, v) in map {
                put(&mut tree, k, nest(v));
            }
            tree
        }
        other => other.clone(),
    }
}

/// `value` put at the dotted `key` of `tree`, merging objects: `a.b` is two steps, `[a.b]`
/// one (Spring's brackets keep a map key whole), `name[i]` an entry of a list.
fn put(tree: &mut Value, key: &str, value: Value) {
    let mut at = tree;
    for step in steps(key) {
        let (name, index) = match step.strip_suffix(']').and_then(|s| s.rsplit_once('[')) {
            Some((name, i)) if !name.is_empty() => (name, i.parse::<usize>().ok()),
            _ => (step.trim_start_matches('[').trim_end_matches(']'), None),
        };
        if !at.is_object() {
            // `a=1` then `a.b=2`: Spring keeps the deeper key; so does this tree.
            *at = Value::Object(Map::new());
        }
        at = at
            .as_object_mut()
            .expect("an object")
            .entry(name.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(i) = index {
            if !at.is_array() {
                *at = Value::Array(Vec::new());
            }
            let list = at.as_array_mut().expect("a list");
            list.resize(list.len().max(i + 1), Value::Object(Map::new()));
            at = &mut list[i];
        }
    }
    match (at, value) {
        (Value::Object(old), Value::Object(new)) => old.extend(new),
        (slot, value) => *slot = value,
    }
}

/// `key` split at each `.` outside brackets.
fn steps(key: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut depth) = (0, 0i32);
    for (i, c) in key.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '.' if depth == 0 => {
                out.push(&key[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&key[start..]);
    out
}
