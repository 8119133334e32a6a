//! [`Override`] and [`Overrides`]: `--set PATH=VALUE` and a file's named `variants`, applied to
//! the text of a scenario before it is read, so an overridden scenario is parsed and validated
//! exactly like a file that says the same.
//!
//! A path names a place the way errors do: `services.api.workers`,
//! `clients.users.call.stack[0].max_attempts`. A value is RON, as the file would write it
//! (`32`, `"500ms"`, `Retry(max_attempts: 2)`). An override replaces the text of the value at
//! its path; a field the file leaves out (so it takes its default) is written in. A path that
//! leads nowhere is an error listing what is there; a value that does not parse or validate is
//! the parser's or the validator's error, told about the override instead of a line of the file.
//!
//! A file may name sets of overrides, which `--variant NAME` applies before any `--set`:
//!
//! ```ron
//! variants: {
//!     "budget": { "services.api.calls[0].stack[0].budget": (ratio: 0.1) },
//! },
//! ```
//!
//! The `variants` field is cut out of the text (blanked, so every line and column stays) before
//! the scenario is read: serde never sees it.
//!
//! Longer than most files on purpose: the path walk over the token tree, the splice of a value
//! and the cut of `variants` all work on the token positions `load.rs` computes, and their
//! errors quote them; split apart, they would hand those positions around for nothing.

use crate::error::ScenarioError;
use crate::limits::Limits;
use crate::load::{Kind, Token, lex, line_column, offset_of, pair_brackets, parse_syntax};
use crate::load::{unwrap_doubled, validate_with};
use crate::schema::Scenario;
use std::fmt;
use std::str::FromStr;

/// One `PATH=VALUE`: the value at `path` becomes `value` (RON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// Where, as errors name places: `services.api.workers`, `clients.users.call.stack[0]`.
    pub path: String,
    /// The new value, in the file's RON syntax.
    pub value: String,
}

impl FromStr for Override {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (path, value) = text.split_once('=').ok_or_else(|| {
            format!("{text:?}: write an override as PATH=VALUE, e.g. services.api.workers=32")
        })?;
        let (path, value) = (path.trim(), value.trim());
        if path.is_empty() || value.is_empty() {
            return Err(format!(
                "{text:?}: write an override as PATH=VALUE, e.g. services.api.workers=32"
            ));
        }
        parse_path(path).map_err(|e| format!("{text:?}: {e}"))?;
        Ok(Override {
            path: path.to_string(),
            value: value.to_string(),
        })
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.path, self.value)
    }
}

/// What to change in a scenario before it runs: a variant of the file (applied first), then
/// the `--set` overrides in their order (a later one wins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// The name of one of the file's `variants`.
    pub variant: Option<String>,
    /// `--set` overrides.
    pub sets: Vec<Override>,
}

impl Overrides {
    /// The command-line words that reproduce these overrides (` --variant budget --set …`),
    /// empty when there are none.
    pub fn command_line(&self) -> String {
        let mut out = String::new();
        if let Some(v) = &self.variant {
            out.push_str(&format!(" --variant {v}"));
        }
        for s in &self.sets {
            out.push_str(&format!(" --set '{s}'"));
        }
        out
    }
}

/// The most overrides one scenario takes (a variant's and the command line's together).
pub const OVERRIDES_MAX: usize = 256;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for piece in path.split('.') {
        let (key, mut rest) = match piece.find('[') {
            Some(i) => piece.split_at(i),
            None => (piece, ""),
        };
        if key.is_empty() && (steps.is_empty() || rest.is_empty()) {
            return Err(format!(
                "{path}: a path is names joined by dots, e.g. services.api.workers"
            ));
        }
        if !key.is_empty() {
            steps.push(Step::Key(key.to_string()));
        }
        while !rest.is_empty() {
            let close = rest
                .find(']')
                .ok_or_else(|| format!("{path}: an index is written [N], e.g. stack[0]"))?;
            let n = rest[1..close]
                .parse::<usize>()
                .map_err(|_| format!("{path}: an index is written [N], e.g. stack[0]"))?;
            steps.push(Step::Index(n));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(format!(
                    "{path}: put a dot after an index, e.g. stack[0].budget"
                ));
            }
        }
    }
    Ok(steps)
}

/// Parses scenario text, applies `overrides` and validates the result against `limits`: the
/// one way a scenario is read ([`crate::load::parse_with`] calls it with no overrides).
pub fn parse_overridden(
    file: &str,
    text: &str,
    limits: &Limits,
    overrides: &Overrides,
) -> Result<Scenario, ScenarioError> {
    // Editors may save a byte-order mark; it is invisible there, so columns skip it too.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (base, variants) = cut_variants(file, text)?;
    let mut sets: Vec<(String, Override)> = Vec::new();
    if let Some(name) = &overrides.variant {
        let Some((_, list)) = variants.iter().find(|(n, _)| n == name) else {
            let names: Vec<&str> = variants.iter().map(|(n, _)| n.as_str()).collect();
            return Err(ScenarioError::Override {
                file: file.to_string(),
                set: format!("--variant {name}"),
                message: if names.is_empty() {
                    "the file has no variants".to_string()
                } else {
                    format!("no such variant; the file has: {}", names.join(", "))
                },
            });
        };
        sets.extend(
            list.iter()
                .map(|o| (format!("variant {name:?}: {o}"), o.clone())),
        );
    }
    sets.extend(
        overrides
            .sets
            .iter()
            .map(|o| (format!("--set {o}"), o.clone())),
    );
    if sets.len() > OVERRIDES_MAX {
        return Err(ScenarioError::Override {
            file: file.to_string(),
            set: format!(
                "--set {}",
                overrides
                    .sets
                    .last()
                    .map_or(String::new(), |o| o.to_string())
            ),
            message: format!("at most {OVERRIDES_MAX} overrides per run"),
        });
    }
    // The file on its own first, so its own errors keep their lines and columns.
    let mut scenario = parse_syntax(file, &base)?;
    if !sets.is_empty() {
        let mut text = base;
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for (label, o) in &sets {
            let error = |message: String| ScenarioError::Override {
                file: file.to_string(),
                set: label.clone(),
                message,
            };
            let (next, span) = apply(&text, o).map_err(error)?;
            // Spans after the splice move with it; a span inside it is gone.
            let shift = next.len() as isize - text.len() as isize;
            let replaced_end = text.len() - (next.len() - span.1);
            spans = spans
                .into_iter()
                .filter(|&(a, b)| b <= span.0 || a >= replaced_end)
                .map(|(a, b)| {
                    if a >= replaced_end {
                        ((a as isize + shift) as usize, (b as isize + shift) as usize)
                    } else {
                        (a, b)
                    }
                })
                .collect();
            spans.push(span);
            text = next;
        }
        scenario = parse_syntax(file, &text).map_err(|e| match e {
            ScenarioError::Syntax {
                line,
                column,
                message,
                ..
            } => {
                let at = offset_of(&text, ron::error::Position { line, col: column });
                let k = spans
                    .iter()
                    .rposition(|&(a, b)| a <= at && at <= b)
                    .unwrap_or(sets.len() - 1);
                ScenarioError::Override {
                    file: file.to_string(),
                    set: sets[k].0.clone(),
                    message,
                }
            }
            other => other,
        })?;
    }
    scenario.variants = variants.into_iter().map(|(n, _)| n).collect();
    validate_with(file, scenario, limits).map_err(|e| match e {
        ScenarioError::Invalid { file, error } => {
            let under = |path: &str| {
                error.field == path
                    || error.field.starts_with(&format!("{path}."))
                    || error.field.starts_with(&format!("{path}["))
            };
            match sets.iter().rev().find(|(_, o)| under(&o.path)) {
                Some((label, o)) => ScenarioError::Override {
                    file,
                    set: label.clone(),
                    message: if error.field == o.path {
                        error.reason
                    } else {
                        error.to_string()
                    },
                },
                // Not the overridden value itself, but it may be what an override changed
                // that makes it wrong (a shorter duration, fewer workers): say which applied.
                None if !sets.is_empty() => {
                    let labels: Vec<&str> = sets.iter().map(|(l, _)| l.as_str()).collect();
                    ScenarioError::Invalid {
                        file,
                        error: sim_core::ConfigError::new(
                            error.field,
                            format!("{} (with {})", error.reason, labels.join(", ")),
                        ),
                    }
                }
                None => ScenarioError::Invalid { file, error },
            }
        }
        other => other,
    })
}

/// A value: the tokens `start..end` of the text (`end` exclusive).
#[derive(Debug, Clone, Copy)]
struct Value {
    start: usize,
    end: usize,
}

/// What a value's text looks like, as far as a path can go into it.
enum Shape {
    /// `(field: …)` or `Name(field: …)`: the open and close tokens.
    Fields(usize, usize),
    /// `[…]`.
    List(usize, usize),
    /// `{"name": …}`.
    Map(usize, usize),
    /// Anything else: a number, a string, `None`, `Constant("800/s")`.
    Scalar,
}

struct Tree<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pairs: Vec<Option<usize>>,
}

impl Tree<'_> {
    fn shape(&self, v: Value) -> Shape {
        let t = &self.tokens;
        let open = if t[v.start].kind == Kind::Name && v.start + 1 < v.end {
            v.start + 1
        } else {
            v.start
        };
        let Some(close) = self.pairs[open] else {
            return Shape::Scalar;
        };
        if close + 1 != v.end {
            return Shape::Scalar;
        }
        match t[open].kind {
            Kind::Open(b'(') => {
                let entries = self.entries(open, close);
                let keyed = entries.iter().all(|e| self.key(*e).is_some());
                if keyed {
                    Shape::Fields(open, close)
                } else {
                    Shape::Scalar
                }
            }
            Kind::Open(b'[') if open == v.start => Shape::List(open, close),
            Kind::Open(b'{') if open == v.start => Shape::Map(open, close),
            _ => Shape::Scalar,
        }
    }

    /// The comma-separated entries between an open token and its close.
    fn entries(&self, open: usize, close: usize) -> Vec<Value> {
        let mut out = Vec::new();
        let mut i = open + 1;
        let mut start = i;
        while i < close {
            match self.tokens[i].kind {
                Kind::Open(_) => i = self.pairs[i].unwrap_or(close) + 1,
                Kind::Comma => {
                    if start < i {
                        out.push(Value { start, end: i });
                    }
                    i += 1;
                    start = i;
                }
                _ => i += 1,
            }
        }
        if start < close {
            out.push(Value { start, end: close });
        }
        out
    }

    /// `key: value` → the key (a field name or a quoted map key) and the value.
    fn key(&self, e: Value) -> Option<(String, Value)> {
        let t = &self.tokens;
        if e.start + 2 > e.end || t[e.start + 1].kind != Kind::Colon {
            return None;
        }
        let raw = &self.text[t[e.start].start..t[e.start].end];
        let key = match t[e.start].kind {
            Kind::Name => raw.trim_start_matches("r#").to_string(),
            Kind::Text => ron::from_str::<String>(raw).ok()?,
            _ => return None,
        };
        Some((
            key,
            Value {
                start: e.start + 2,
                end: e.end,
            },
        ))
    }

    fn bytes(&self, v: Value) -> (usize, usize) {
        (self.tokens[v.start].start, self.tokens[v.end - 1].end)
    }

    fn of(text: &str) -> Tree<'_> {
        let tokens = lex(text);
        let pairs = pair_brackets(&tokens);
        Tree {
            text,
            tokens,
            pairs,
        }
    }
}

/// The text with the override applied, and the byte range its value now takes.
fn apply(text: &str, o: &Override) -> Result<(String, (usize, usize)), String> {
    check_single_value(&o.value)?;
    let steps = parse_path(&o.path)?;
    let normal = {
        let t = Tree::of(text);
        unwrap_doubled(text, &t.tokens, &t.pairs)
    };
    let tree = Tree::of(&normal);
    if tree.tokens.is_empty() {
        return Err("the file is empty".to_string());
    }
    let mut at = Value {
        start: 0,
        end: tree.tokens.len(),
    };
    let mut walked = String::new();
    for (n, step) in steps.iter().enumerate() {
        let place = if walked.is_empty() {
            "the top level".to_string()
        } else {
            format!("`{walked}`")
        };
        match (step, tree.shape(at)) {
            (Step::Key(k), Shape::Fields(open, close)) => {
                let entries = tree.entries(open, close);
                let found = entries
                    .iter()
                    .filter_map(|e| tree.key(*e))
                    .find(|(key, _)| key == k);
                match found {
                    Some((_, v)) => at = v,
                    None => {
                        // Not written: write it in, with what is left of the path as nested
                        // fields; the parser says whether the field exists.
                        if steps[n..].iter().any(|s| matches!(s, Step::Index(_))) {
                            let written: Vec<String> = entries
                                .iter()
                                .filter_map(|e| tree.key(*e))
                                .map(|(k, _)| k)
                                .collect();
                            return Err(format!(
                                "{place} has no `{k}` written (it has: {}); set `{k}` whole instead of a part of it",
                                written.join(", ")
                            ));
                        }
                        let mut inserted = o.value.clone();
                        for s in steps[n + 1..].iter().rev() {
                            if let Step::Key(key) = s {
                                inserted = format!("({key}: {inserted})");
                            }
                        }
                        let insert = format!("{k}: {inserted}, ");
                        let at_byte = tree.tokens[open].end;
                        let mut out = normal.clone();
                        out.insert_str(at_byte, &insert);
                        return Ok((out, (at_byte, at_byte + insert.len())));
                    }
                }
            }
            (Step::Key(k), Shape::Map(open, close)) => {
                let entries: Vec<(String, Value)> = tree
                    .entries(open, close)
                    .into_iter()
                    .filter_map(|e| tree.key(e))
                    .collect();
                match entries.iter().find(|(key, _)| key == k) {
                    Some((_, v)) => at = *v,
                    None => {
                        let names: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
                        return Err(format!(
                            "{place} has no `{k}`; its names are: {}",
                            names.join(", ")
                        ));
                    }
                }
            }
            (Step::Index(i), Shape::List(open, close)) => {
                let entries = tree.entries(open, close);
                match entries.get(*i) {
                    Some(v) => at = *v,
                    None => {
                        return Err(format!(
                            "{place} has {} entries, so the index must be below {}",
                            entries.len(),
                            entries.len()
                        ));
                    }
                }
            }
            (step, shape) => {
                let (lo, hi) = tree.bytes(at);
                let shown = &normal[lo..hi];
                let shown = if shown.chars().count() > 40 {
                    format!("{}…", shown.chars().take(40).collect::<String>())
                } else {
                    shown.to_string()
                };
                let what = match shape {
                    Shape::Fields(..) => "fields",
                    Shape::List(..) => "a list",
                    Shape::Map(..) => "a map of names",
                    Shape::Scalar => "a single value",
                };
                let step = match step {
                    Step::Key(k) => format!("`.{k}`"),
                    Step::Index(i) => format!("`[{i}]`"),
                };
                return Err(format!(
                    "{place} is {what} (`{}`), so {step} leads nowhere; set {place} whole",
                    shown.split_whitespace().collect::<Vec<_>>().join(" ")
                ));
            }
        }
        match step {
            Step::Key(k) if walked.is_empty() => walked.push_str(k),
            Step::Key(k) => {
                walked.push('.');
                walked.push_str(k);
            }
            Step::Index(i) => walked.push_str(&format!("[{i}]")),
        }
    }
    let (lo, hi) = tree.bytes(at);
    let mut out = String::with_capacity(normal.len() + o.value.len());
    out.push_str(&normal[..lo]);
    out.push_str(&o.value);
    out.push_str(&normal[hi..]);
    Ok((out, (lo, lo + o.value.len())))
}

/// A value is one RON value: balanced brackets, no comma or colon outside them.
fn check_single_value(value: &str) -> Result<(), String> {
    let tree = Tree::of(value);
    let one = "the value must be one RON value, e.g. 32, \"500ms\" or (capacity: 10)";
    let mut i = 0;
    let mut values = 0;
    while i < tree.tokens.len() {
        // `Name(…)` is one value with its group.
        if tree.tokens[i].kind == Kind::Name
            && tree
                .tokens
                .get(i + 1)
                .is_some_and(|t| t.kind == Kind::Open(b'('))
        {
            i += 1;
        }
        match tree.tokens[i].kind {
            Kind::Open(_) => match tree.pairs[i] {
                Some(c) => i = c + 1,
                None => return Err(format!("{one}; a bracket is not closed")),
            },
            Kind::Close(_) => return Err(format!("{one}; a bracket closes that was not opened")),
            Kind::Comma | Kind::Colon => return Err(one.to_string()),
            _ => i += 1,
        }
        values += 1;
    }
    if values != 1 {
        return Err(one.to_string());
    }
    Ok(())
}

/// A named list of overrides from the file.
type Variant = (String, Vec<Override>);

/// The text with its top-level `variants` field blanked (every line and column kept), and the
/// variants it declared, in the file's order.
fn cut_variants(file: &str, text: &str) -> Result<(String, Vec<Variant>), ScenarioError> {
    let tree = Tree::of(text);
    if tree.tokens.is_empty() {
        return Ok((text.to_string(), Vec::new()));
    }
    let top = Value {
        start: 0,
        end: tree.tokens.len(),
    };
    let Shape::Fields(open, close) = tree.shape(top) else {
        return Ok((text.to_string(), Vec::new()));
    };
    let entries = tree.entries(open, close);
    let Some((entry, value)) = entries.iter().find_map(|e| {
        tree.key(*e)
            .filter(|(k, _)| k == "variants")
            .map(|(_, v)| (*e, v))
    }) else {
        return Ok((text.to_string(), Vec::new()));
    };
    let syntax = |token: usize, message: &str| {
        let (line, column) = line_column(text, tree.tokens[token].start);
        ScenarioError::Syntax {
            file: file.to_string(),
            line,
            column,
            message: format!(
                "{message}; write variants as {{ \"name\": {{ \"path\": value, … }}, … }}"
            ),
        }
    };
    let Shape::Map(vo, vc) = tree.shape(value) else {
        return Err(syntax(value.start, "`variants` is a map of names"));
    };
    let mut variants: Vec<Variant> = Vec::new();
    for e in tree.entries(vo, vc) {
        let Some((name, sets)) = tree
            .key(e)
            .filter(|_| tree.tokens[e.start].kind == Kind::Text)
        else {
            return Err(syntax(e.start, "a variant is named by a quoted string"));
        };
        if variants.iter().any(|(n, _)| *n == name) {
            return Err(syntax(
                e.start,
                &format!("the variant {name:?} is given twice"),
            ));
        }
        let Shape::Map(so, sc) = tree.shape(sets) else {
            return Err(syntax(
                sets.start,
                &format!("the variant {name:?} is a map of paths to values"),
            ));
        };
        let mut list = Vec::new();
        for s in tree.entries(so, sc) {
            let Some((path, v)) = tree
                .key(s)
                .filter(|_| tree.tokens[s.start].kind == Kind::Text)
            else {
                return Err(syntax(s.start, "a path is a quoted string"));
            };
            // `"path": ,` has no value: its token range is empty.
            if v.start >= v.end {
                return Err(syntax(s.start, "a path needs a value after its colon"));
            }
            let (lo, hi) = tree.bytes(v);
            let o = format!("{path}={}", &text[lo..hi]);
            let o: Override = o.parse().map_err(|m: String| syntax(s.start, &m))?;
            list.push(o);
        }
        variants.push((name, list));
    }
    // Blank the field and the comma after it, keeping newlines so positions stay.
    let lo = tree.tokens[entry.start].start;
    let mut hi = tree.tokens[entry.end - 1].end;
    if tree
        .tokens
        .get(entry.end)
        .is_some_and(|t| t.kind == Kind::Comma)
    {
        hi = tree.tokens[entry.end].end;
    }
    let blanked: String = text[lo..hi]
        .chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect();
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..lo]);
    out.push_str(&blanked);
    out.push_str(&text[hi..]);
    Ok((out, variants))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_into_steps() {
        assert_eq!(
            parse_path("clients.users.call.stack[0].max_attempts").unwrap(),
            vec![
                Step::Key("clients".into()),
                Step::Key("users".into()),
                Step::Key("call".into()),
                Step::Key("stack".into()),
                Step::Index(0),
                Step::Key("max_attempts".into()),
            ]
        );
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("stack[x]").is_err());
        assert!(parse_path("stack[0]x").is_err());
    }

    #[test]
    fn one_value_only() {
        assert!(check_single_value("32").is_ok());
        assert!(check_single_value("Retry((max_attempts: 2))").is_ok());
        assert!(check_single_value("(capacity: 3)").is_ok());
        assert!(check_single_value("3, workers: 4").is_err());
        assert!(check_single_value("(").is_err());
        assert!(check_single_value("1 2").is_err());
    }
}
