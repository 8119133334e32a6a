//! A configuration file read into one tree, whatever its syntax (YAML through `serde-saphyr`,
//! a multi-document YAML file as the list of its documents, JSON through `serde_json`, Java
//! properties through `import::properties`), with where each of its values is ([`Spots`]).
//!
//! The tree is a `serde_json::Value`: every parser gives one, so every reader walks the same
//! shape. A syntax error keeps the parser's line and column; an error in a value names the
//! field by its line, column and path in the file (`clusters[db].outlier_detection.interval`),
//! the way the source format's own documentation names it. Paths name a list entry by its
//! `name` field when it has one (as Envoy and Istio name clusters, routes and filters), else
//! by its index.
//!
//! # Decisions
//!
//! Where a value is comes from the same parse as the value for YAML (`serde-saphyr`'s
//! `Spanned`, the location of every node), and from a second parse of the text as YAML for
//! JSON (JSON is YAML 1.2; `serde_json` keeps its own messages for syntax errors): a JSON file
//! YAML cannot read has its values' paths but no lines. Places are recorded to a depth of 64,
//! the nesting YAML is read to; a deeper value is placed at its nearest recorded ancestor.
//! The YAML budget on nodes and events grows with the text (one node per byte at most without
//! aliases), so a mesh of thousands of hosts reads, while an alias bomb is still refused.

use super::ImportError;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use serde_saphyr::{Location, Spanned};
use std::collections::BTreeMap;
use std::fmt;

/// A parsed configuration: one file, or several merged into one tree (Spring's property
/// sources), each value with where it is.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The path as given on the command line (for a merged tree, the files joined by `, `).
    pub file: String,
    /// The files the tree's values come from, in the order their [`Spot`]s number them.
    pub files: Vec<String>,
    /// Its content.
    pub root: Value,
    /// Where each value is.
    pub spots: Spots,
}

/// Which syntax a file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// YAML (a JSON file is YAML too, but is read by `serde_json` for its own messages).
    Yaml,
    /// JSON.
    Json,
    /// Java properties (Spring's `application.properties`), read by `import::properties`.
    Properties,
}

/// A place in one of a [`Doc`]'s files: its line and column, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spot {
    /// The file, as an index into [`Doc::files`].
    pub file: usize,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub column: u32,
}

/// Where each value of a tree is, by its path (as the ledger names paths).
#[derive(Debug, Clone, Default)]
pub struct Spots(BTreeMap<String, Spot>);

/// How deep places are recorded (YAML is read to this depth).
const SPOT_DEPTH_MAX: usize = 64;

impl Spots {
    /// Where `path` is: its own place, else its nearest placed ancestor's (a field the file
    /// leaves out is placed at the object it would be in). A condition inside a value
    /// (`retry_on:foo`) is placed at the value.
    pub fn at(&self, path: &str) -> Option<Spot> {
        let mut path = path.split(':').next().unwrap_or(path);
        loop {
            if let Some(s) = self.0.get(path) {
                return Some(*s);
            }
            path = parent(path)?;
        }
    }

    /// Where `path` itself is, if its place is recorded (no ancestor's).
    pub fn exact(&self, path: &str) -> Option<Spot> {
        self.0.get(path).copied()
    }

    /// Records every value of `value` (at `path`) that `loc` places, in file `file`.
    fn record(&mut self, path: &str, value: &Value, loc: &LocNode, file: usize, depth: usize) {
        self.0.insert(path.to_string(), loc.spot(file));
        if depth >= SPOT_DEPTH_MAX {
            return;
        }
        match (value, &loc.kids) {
            (Value::Object(map), Kids::Map(kids)) => {
                // Keys in file order, looked up by name: both trees hold the same keys.
                let by_key: BTreeMap<&str, &LocNode> =
                    kids.iter().map(|(k, l)| (k.as_str(), l)).collect();
                for (k, v) in map {
                    if let Some(l) = by_key.get(k.as_str()) {
                        self.record(&child(path, k), v, l, file, depth + 1);
                    }
                }
            }
            (Value::Array(items), Kids::Seq(kids)) => {
                for (i, (v, l)) in items.iter().zip(kids).enumerate() {
                    let at = format!("{path}[{}]", item_name(v, i));
                    // Two entries of one name: the first is where the name points.
                    if !self.0.contains_key(&at) {
                        self.record(&at, v, l, file, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// These places, moved to file `file`.
    pub fn in_file(mut self, file: usize) -> Spots {
        for s in self.0.values_mut() {
            s.file = file;
        }
        self
    }

    /// Adds `other`'s places, which win over these.
    pub fn overlay(&mut self, other: Spots) {
        self.0.extend(other.0);
    }

    /// Places from `(path, line, column)` triples (a `.properties` file's keys).
    pub fn from_lines(lines: impl IntoIterator<Item = (String, u32, u32)>) -> Spots {
        Spots(
            lines
                .into_iter()
                .map(|(path, line, column)| {
                    let spot = Spot {
                        file: 0,
                        line,
                        column,
                    };
                    (path, spot)
                })
                .collect(),
        )
    }
}

/// The path that holds `path`: `a.b` for `a.b.c` and `a.b[x.y]`; `None` at the top.
pub fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    // The last `.` or `[` outside brackets (a list entry's name may hold dots).
    let mut depth = 0usize;
    for (i, c) in path.char_indices().rev() {
        match c {
            ']' => depth += 1,
            '[' if depth == 1 => return Some(&path[..i]),
            '[' => depth = depth.saturating_sub(1),
            '.' if depth == 0 => return Some(&path[..i]),
            _ => {}
        }
    }
    Some("")
}

impl Doc {
    /// Reads `text` as `syntax`. A syntax error is `file:line:column: message`.
    pub fn parse(file: &str, text: &str, syntax: Syntax) -> Result<Doc, ImportError> {
        let (root, spots) = match syntax {
            Syntax::Json => {
                let root = serde_json::from_str::<Value>(text).map_err(|e| {
                    ImportError::new(format!(
                        "{file}:{}:{}: {}",
                        e.line(),
                        e.column(),
                        json_message(&e)
                    ))
                })?;
                // JSON is YAML: its places from a YAML parse, if YAML reads it.
                let spots = match yaml(file, text) {
                    Ok((_, loc)) => {
                        let mut spots = Spots::default();
                        spots.record("", &root, &loc, 0, 0);
                        spots
                    }
                    Err(_) => Spots::default(),
                };
                (root, spots)
            }
            Syntax::Properties => super::properties::parse(file, text)?,
            Syntax::Yaml => {
                let (root, loc) = yaml(file, text)?;
                let mut spots = Spots::default();
                spots.record("", &root, &loc, 0, 0);
                (root, spots)
            }
        };
        Ok(Doc {
            file: file.to_string(),
            files: vec![file.to_string()],
            root,
            spots,
        })
    }

    /// The file `spot` is in (the doc's first when unknown).
    pub fn file_of(&self, spot: Option<Spot>) -> &str {
        spot.and_then(|s| self.files.get(s.file))
            .or(self.files.first())
            .map_or(self.file.as_str(), String::as_str)
    }

    /// `file:line:column` of `path`, or the file alone where the place is not known.
    pub fn place(&self, path: &str) -> String {
        let spot = self.spots.at(path);
        let file = self.file_of(spot);
        match spot {
            Some(s) => format!("{file}:{}:{}", s.line, s.column),
            None => file.to_string(),
        }
    }
}

/// The place of a node and of its children.
#[derive(Debug, Default)]
struct LocNode {
    line: u32,
    column: u32,
    kids: Kids,
}

#[derive(Debug, Default)]
enum Kids {
    #[default]
    None,
    Seq(Vec<LocNode>),
    Map(Vec<(String, LocNode)>),
}

impl LocNode {
    fn at(location: &Location, kids: Kids) -> LocNode {
        LocNode {
            line: u32::try_from(location.line()).unwrap_or(u32::MAX),
            column: u32::try_from(location.column()).unwrap_or(u32::MAX),
            kids,
        }
    }

    fn spot(&self, file: usize) -> Spot {
        Spot {
            file,
            line: self.line,
            column: self.column,
        }
    }
}

/// A YAML node as read: its value, and the places of its children.
struct Placed {
    value: Value,
    kids: Kids,
}

impl<'de> Deserialize<'de> for Placed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Placed, D::Error> {
        d.deserialize_any(PlacedVisitor)
    }
}

struct PlacedVisitor;

fn leaf(value: Value) -> Placed {
    Placed {
        value,
        kids: Kids::None,
    }
}

impl<'de> Visitor<'de> for PlacedVisitor {
    type Value = Placed;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Placed, E> {
        Ok(leaf(Value::Bool(b)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Placed, E> {
        Ok(leaf(Value::from(n)))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Placed, E> {
        Ok(leaf(Value::from(n)))
    }

    fn visit_f64<E>(self, x: f64) -> Result<Placed, E> {
        // A non-finite number has no JSON form: it stays the text it was.
        Ok(leaf(serde_json::Number::from_f64(x).map_or_else(
            || Value::String(x.to_string()),
            Value::Number,
        )))
    }

    fn visit_str<E>(self, s: &str) -> Result<Placed, E> {
        Ok(leaf(Value::String(s.to_string())))
    }

    fn visit_string<E>(self, s: String) -> Result<Placed, E> {
        Ok(leaf(Value::String(s)))
    }

    fn visit_unit<E>(self) -> Result<Placed, E> {
        Ok(leaf(Value::Null))
    }

    fn visit_none<E>(self) -> Result<Placed, E> {
        Ok(leaf(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Placed, D::Error> {
        Placed::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Placed, A::Error> {
        let (mut values, mut kids) = (Vec::new(), Vec::new());
        while let Some(item) = seq.next_element::<Spanned<Placed>>()? {
            kids.push(LocNode::at(&item.referenced, item.value.kids));
            values.push(item.value.value);
        }
        Ok(Placed {
            value: Value::Array(values),
            kids: Kids::Seq(kids),
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Placed, A::Error> {
        let (mut values, mut kids) = (Map::new(), Vec::new());
        while let Some(key) = map.next_key::<Key>()? {
            let item = map.next_value::<Spanned<Placed>>()?;
            kids.push((
                key.0.clone(),
                LocNode::at(&item.referenced, item.value.kids),
            ));
            values.insert(key.0, item.value.value);
        }
        Ok(Placed {
            value: Value::Object(values),
            kids: Kids::Map(kids),
        })
    }
}

/// A mapping key as text, whatever scalar it is (`1: x` has the key `"1"`).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping key that is a plain value (a name or a number)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(Key(s.to_string()))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Key, E> {
                Ok(Key(b.to_string()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Key, E> {
                Ok(Key(n.to_string()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Key, E> {
                Ok(Key(n.to_string()))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Key, E> {
                Ok(Key(x.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
                Ok(Key("null".to_string()))
            }
        }
        d.deserialize_any(KeyVisitor)
    }
}

/// The parser's options: duplicate keys refused (as Kubernetes, Envoy and Spring refuse
/// them), and a budget on nodes and events that grows with the text.
fn options(text: &str) -> serde_saphyr::Options {
    let bytes = text.len();
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: bytes.max(250_000),
            max_events: bytes.saturating_mul(2).max(1_000_000),
        },
    }
}

/// A YAML text: one document as its value; several (`---` between them, as `kubectl` files
/// hold) as the list of their values, empty documents left out.
fn yaml(file: &str, text: &str) -> Result<(Value, LocNode), ImportError> {
    // An empty file is an empty map, not an error of its own.
    if text.trim().is_empty() {
        return Ok((Value::Object(Map::new()), LocNode::default()));
    }
    let one = serde_saphyr::from_str_with_options::<Spanned<Placed>>(text, options(text));
    let several = |e: &serde_saphyr::Error| {
        matches!(
            e.without_snippet(),
            serde_saphyr::Error::MultipleDocuments { .. }
        )
    };
    match one {
        Ok(p) => Ok((p.value.value, LocNode::at(&p.referenced, p.value.kids))),
        Err(e) if several(&e) => {
            let docs =
                serde_saphyr::from_multiple_with_options::<Spanned<Placed>>(text, options(text))
                    .map_err(|e| yaml_error(file, &e))?;
            let mut docs: Vec<Spanned<Placed>> = docs
                .into_iter()
                .filter(|d| !d.value.value.is_null())
                .collect();
            Ok(match docs.len() {
                0 => (Value::Object(Map::new()), LocNode::default()),
                1 => {
                    let p = docs.remove(0);
                    (p.value.value, LocNode::at(&p.referenced, p.value.kids))
                }
                _ => {
                    let first = LocNode::at(&docs[0].referenced, Kids::None);
                    let (mut values, mut kids) = (Vec::new(), Vec::new());
                    for d in docs {
                        kids.push(LocNode::at(&d.referenced, d.value.kids));
                        values.push(d.value.value);
                    }
                    let loc = LocNode {
                        kids: Kids::Seq(kids),
                        ..first
                    };
                    (Value::Array(values), loc)
                }
            })
        }
        Err(e) => Err(yaml_error(file, &e)),
    }
}

/// serde_json's message without its own " at line L column C" (the location comes first).
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// A YAML error in the user's words: where, what, and for the errors a configuration meets,
/// how to fix it.
fn yaml_error(file: &str, e: &serde_saphyr::Error) -> ImportError {
    let options = serde_saphyr::render_options! {
        snippets: serde_saphyr::SnippetMode::Off,
    };
    let message = match e.without_snippet() {
        serde_saphyr::Error::DuplicateMappingKey { key, .. } => format!(
            "{} is given twice in one mapping; keep one (Kubernetes, Envoy and Spring refuse a repeated key too)",
            key.as_deref()
                .map_or("a key".to_string(), |k| format!("`{k}`"))
        ),
        serde_saphyr::Error::Budget { breach, .. } => budget_message(breach),
        _ if format!("{e:?}").contains("Alias") => ALIASES.to_string(),
        _ => {
            let message = e.render_with_options(options);
            // The rendering may carry its own " at line L, column C"; the location comes first.
            let message = match message.find(" at line ") {
                Some(i) => message[..i].to_string(),
                None => message,
            };
            let message = message.lines().next().unwrap_or_default().trim();
            // The reader also reports a breached budget, and its own nesting limit, as plain
            // text (`budget breached: Nodes { nodes: 250001 }`): the parser's words, not the
            // user's.
            if message.contains("budget breached") && !message.contains("Depth") {
                ALIASES.to_string()
            } else if message.contains("budget breached") || message.contains("recursion limit") {
                too_deep()
            } else {
                message.to_string()
            }
        }
    };
    match e.location() {
        Some(l) if l.line() > 0 => ImportError::new(format!(
            "{file}:{}:{}: {message} (YAML)",
            l.line(),
            l.column()
        )),
        _ => ImportError::new(format!("{file}: {message} (YAML)")),
    }
}

/// Aliases that expand past the budget, in the user's words.
const ALIASES: &str = "its anchors and aliases (`&a`, `*a`) expand to more values than the file has bytes; write the values out, or check for aliases that repeat each other";

/// Nesting past what the reader follows, in the user's words (the reader's limit is its own,
/// a few hundred levels, so no number is given).
fn too_deep() -> String {
    "nests deeper than the YAML reader follows, far deeper than any configuration; check the brackets and the indentation from here".to_string()
}

/// What a breached YAML budget means for a configuration file.
fn budget_message(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    match breach {
        B::Depth { .. } => too_deep(),
        B::Documents { .. } => {
            "holds more than 1,024 documents (`---`); split it into several files".to_string()
        }
        B::Nodes { .. }
        | B::Events { .. }
        | B::Aliases { .. }
        | B::Anchors { .. }
        | B::AliasAnchorRatio { .. }
        | B::RecordedAnchorEvents { .. } => ALIASES.to_string(),
        other => format!(
            "is larger than a configuration the import reads ({}); split it",
            breach_name(other)
        ),
    }
}

/// The budget breached, in words.
fn breach_name(breach: &serde_saphyr::budget::BudgetBreach) -> &'static str {
    use serde_saphyr::budget::BudgetBreach as B;
    match breach {
        B::ScalarBytes { .. } => "64 MiB of text in its values",
        B::MergeKeys { .. } => "more than 10,000 merge keys `<<`",
        _ => "a limit of the YAML reader",
    }
}

/// The path of field `k` under `path` (the top level has an empty path).
pub fn child(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// How a list entry is named in a path: by its `name` field when it has one (as Envoy and
/// Istio name clusters, routes and filters), else by its index.
pub fn item_name(v: &Value, i: usize) -> String {
    match v.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => i.to_string(),
    }
}

/// A value in words, as a note names what a route matches: `prefix /api`,
/// `headers end-user exact jason`.
pub fn words(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k} {}", words(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(items) => items.iter().map(words).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// Nanoseconds of `"1.25"` seconds (at most nine decimals, as protobuf allows).
pub fn decimal_seconds(s: &str) -> Option<u128> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 9
        || whole.len() > 12
    {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let frac_nanos: u128 = format!("{frac:0<9}").parse().ok()?;
    Some(whole * 1_000_000_000 + frac_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_skip_dots_inside_a_list_entrys_name() {
        assert_eq!(parent("a.b.c"), Some("a.b"));
        assert_eq!(parent("a.b[x.y]"), Some("a.b"));
        assert_eq!(parent("a[x.y].z"), Some("a[x.y]"));
        assert_eq!(parent("a"), Some(""));
        assert_eq!(parent(""), None);
    }

    /// A hostile file gets the user's words: an alias bomb (9 levels of 9 aliases each, 9⁹
    /// values from a few hundred bytes) and 200,000 levels of nesting.
    #[test]
    fn an_alias_bomb_and_deep_nesting_are_refused_in_the_users_words() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let aliases = vec![format!("*a{}", i - 1); 9].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{aliases}]\n"));
        }
        let deep = format!("a: {}{}\n", "[".repeat(200_000), "]".repeat(200_000));
        for (text, says) in [
            (bomb, "anchors and aliases"),
            (deep, "nests deeper than the YAML reader follows"),
        ] {
            let Err(refusal) = Doc::parse("f.yaml", &text, Syntax::Yaml) else {
                panic!("{says}: read as a configuration");
            };
            let message = refusal.to_string();
            assert!(message.starts_with("f.yaml"), "{message}");
            assert!(message.contains(says), "{message}");
            for internal in ["budget breached", "Nodes {", "recursion limit", "r#"] {
                assert!(!message.contains(internal), "{message}");
            }
        }
    }

    #[test]
    fn every_value_of_yaml_and_json_is_placed() {
        let yaml = "clusters:\n- name: db\n  lb_policy: RANDOM\n- name: api\n";
        let doc = Doc::parse("f.yaml", yaml, Syntax::Yaml).unwrap();
        let at = |p: &str| doc.spots.at(p).map(|s| (s.line, s.column));
        assert_eq!(at("clusters[db].lb_policy"), Some((3, 14)));
        assert_eq!(at("clusters[api]"), Some((4, 3)));
        // A field left out is placed at its object.
        assert_eq!(at("clusters[api].lb_policy"), Some((4, 3)));
        let json = "{\n  \"a\": {\n    \"b\": [1, {\"name\": \"x\", \"c\": true}]\n  }\n}";
        let doc = Doc::parse("f.json", json, Syntax::Json).unwrap();
        let at = |p: &str| doc.spots.at(p).map(|s| (s.line, s.column));
        assert_eq!(at("a.b[x].c"), Some((3, 33)));
        assert_eq!(at("a.b[0]"), Some((3, 11)));
    }
}
