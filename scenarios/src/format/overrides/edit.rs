//! [`Build`]: overrides applied as edits on the token tree of a file that was lexed once.
//!
//! A value is a [`Place`]: a range of tokens of one text, the file's or a piece's (the text of
//! a `--set` value, or a written-in field with the groups around it). Applying an override
//! walks its path over the tree and records an [`Edit`] where it ends: a value replaced, a
//! field written in after an open bracket, an entry appended before a close bracket. Nothing is
//! copied or lexed again: the file's tokens are shared by every variant, an edit costs the
//! length of its path and of its value, and a later override can walk into the value of an
//! earlier one (its place is a place like any other). [`Build::emit`] writes the scenario's text
//! once, skipping what was replaced or cut, with a map from each byte it wrote back to the byte
//! of the text it came from, so that an error in the scenario RON reads is told at its place in
//! the file, or about the override whose value it is in.

use super::Step;
use super::path::segment;
use crate::format::error::one_line;
use crate::format::read::{Kind, Text};
use std::collections::BTreeMap;

/// The tokens `start..end` (end exclusive) of text `text`: 0 is the file, `n` the piece `n − 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub(super) text: usize,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// What a value's text looks like, as far as a path can go into it.
pub(super) enum Shape {
    /// `(field: …)` or `Name(field: …)`: the open and close tokens.
    Fields(usize, usize),
    /// `[…]`.
    List(usize, usize),
    /// `{"name": …}`.
    Map(usize, usize),
    /// Anything else: a number, a string, `None`, `Constant("800/s")`.
    Scalar,
}

/// A text an override brought: its value, maybe inside written-in groups.
struct Piece {
    text: Text,
    /// The override it belongs to (its index in the build).
    owner: usize,
    /// Bytes `at..at + len` are a copy of the bytes from `source_byte` of text `source`.
    copy: Option<(usize, usize, usize, usize)>,
}

/// One change to a text, keyed by `(text, token, order)`.
#[derive(Debug, Clone)]
enum Edit {
    /// The tokens from the key's to `end` are left out (the file's `variants` field).
    Cut { end: usize },
    /// The value from the key's token to `end` is `with` instead.
    Replace { end: usize, with: Place },
    /// Fields written in after the open bracket of the key's token, in order.
    Insert(Vec<(String, Place)>),
    /// Entries appended before the close bracket of the key's token, in order.
    Append(Vec<Place>),
}

/// The most names an error lists when a name is not there (a mesh has thousands).
const NAMES_SHOWN_MAX: usize = 12;

const REPLACE: u8 = 0;
const INSERT: u8 = 1;
const APPEND: u8 = 2;

/// A scenario being made: the file, the pieces and the edits.
pub(super) struct Build<'a> {
    base: &'a Text,
    pieces: Vec<Piece>,
    edits: BTreeMap<(usize, usize, u8), Edit>,
    /// The value of each override applied, by owner.
    values: Vec<Place>,
}

/// The text a build wrote, and where each part of it came from.
pub(super) struct Emitted {
    pub(super) text: String,
    /// `(first byte written, text, byte of that text, written by the build rather than copied)`.
    segments: Vec<(usize, usize, usize, bool)>,
}

impl Emitted {
    /// The text and byte that the byte `at` of the emitted text came from.
    pub(super) fn origin(&self, at: usize) -> (usize, usize) {
        let k = self
            .segments
            .partition_point(|s| s.0 <= at)
            .saturating_sub(1);
        match self.segments.get(k) {
            Some(&(out, text, byte, false)) => (text, byte + (at - out)),
            Some(&(_, text, byte, true)) => (text, byte),
            None => (0, 0),
        }
    }

    fn copy(&mut self, text_id: usize, text: &str, lo: usize, hi: usize) {
        if lo < hi {
            self.segments.push((self.text.len(), text_id, lo, false));
            self.text.push_str(&text[lo..hi]);
        }
    }

    fn write(&mut self, s: &str, text_id: usize, byte: usize) {
        self.segments.push((self.text.len(), text_id, byte, true));
        self.text.push_str(s);
    }
}

impl<'a> Build<'a> {
    /// A build of `base`, with the tokens `cut` left out.
    pub(super) fn new(base: &'a Text, cut: Option<(usize, usize)>) -> Build<'a> {
        let mut edits = BTreeMap::new();
        if let Some((start, end)) = cut {
            edits.insert((0, start, REPLACE), Edit::Cut { end });
        }
        Build {
            base,
            pieces: Vec::new(),
            edits,
            values: Vec::new(),
        }
    }

    pub(super) fn text(&self, id: usize) -> &Text {
        match id {
            0 => self.base,
            n => &self.pieces[n - 1].text,
        }
    }

    /// The whole file.
    pub(super) fn root(&self) -> Place {
        Place {
            text: 0,
            start: 0,
            end: self.base.tokens.len(),
        }
    }

    /// A new piece of text for override `owner` (RON as it will be read), as a place.
    pub(super) fn piece(&mut self, owner: usize, text: &str) -> Place {
        self.push_piece(Piece {
            text: Text::new(text),
            owner,
            copy: None,
        })
    }

    fn push_piece(&mut self, piece: Piece) -> Place {
        let end = piece.text.tokens.len();
        self.pieces.push(piece);
        Place {
            text: self.pieces.len(),
            start: 0,
            end,
        }
    }

    /// `prefix`, the text of `value`, `suffix`: a new piece of override `owner`.
    fn wrap(&mut self, owner: usize, prefix: &str, value: Place, suffix: &str) -> Place {
        let t = self.text(value.text);
        let (lo, hi) = self.bytes(value);
        let source = &t.text[lo..hi];
        let text = format!("{prefix}{source}{suffix}");
        self.push_piece(Piece {
            text: Text::new(&text),
            owner,
            copy: Some((prefix.len(), hi - lo, value.text, lo)),
        })
    }

    /// The bytes a place spans in its text.
    pub(super) fn bytes(&self, p: Place) -> (usize, usize) {
        let t = self.text(p.text);
        if p.start >= p.end {
            let at = t.tokens.get(p.start).map_or(t.text.len(), |k| k.start);
            return (at, at);
        }
        (t.tokens[p.start].start, t.tokens[p.end - 1].end)
    }

    /// The place a value is now: what replaced it, if anything did.
    pub(super) fn resolve(&self, mut p: Place) -> Place {
        while let Some(Edit::Replace { with, .. }) = self.edits.get(&(p.text, p.start, REPLACE)) {
            p = *with;
        }
        p
    }

    pub(super) fn shape(&self, v: Place) -> Shape {
        let t = self.text(v.text);
        if v.start >= v.end {
            return Shape::Scalar;
        }
        let open = if t.tokens[v.start].kind == Kind::Name && v.start + 1 < v.end {
            v.start + 1
        } else {
            v.start
        };
        let Some(close) = t.pairs[open] else {
            return Shape::Scalar;
        };
        if close + 1 != v.end {
            return Shape::Scalar;
        }
        match t.tokens[open].kind {
            Kind::Open(b'(') => {
                let keyed = self
                    .entries(v.text, open, close)
                    .iter()
                    .all(|e| self.key(*e).is_some());
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
    pub(super) fn entries(&self, text: usize, open: usize, close: usize) -> Vec<Place> {
        let t = self.text(text);
        let mut out = Vec::new();
        let mut i = open + 1;
        let mut start = i;
        while i < close {
            match t.tokens[i].kind {
                Kind::Open(_) => i = t.pairs[i].unwrap_or(close) + 1,
                Kind::Comma => {
                    if start < i {
                        out.push(Place {
                            text,
                            start,
                            end: i,
                        });
                    }
                    i += 1;
                    start = i;
                }
                _ => i += 1,
            }
        }
        if start < close {
            out.push(Place {
                text,
                start,
                end: close,
            });
        }
        out
    }

    /// `key: value` → the key (a field name or a quoted map key) and the value.
    pub(super) fn key(&self, e: Place) -> Option<(String, Place)> {
        let t = self.text(e.text);
        if e.start + 2 > e.end || t.tokens[e.start + 1].kind != Kind::Colon {
            return None;
        }
        let raw = &t.text[t.tokens[e.start].start..t.tokens[e.start].end];
        let key = match t.tokens[e.start].kind {
            Kind::Name => raw.trim_start_matches("r#").to_string(),
            Kind::Text => ron::from_str::<String>(raw).ok()?,
            _ => return None,
        };
        Some((
            key,
            Place {
                text: e.text,
                start: e.start + 2,
                end: e.end,
            },
        ))
    }

    /// The value of field or map key `k` of the group `open..=close`: one written in by an
    /// earlier override, else the text's own.
    fn field(&self, text: usize, open: usize, close: usize, k: &str) -> Option<Place> {
        if let Some(Edit::Insert(written)) = self.edits.get(&(text, open, INSERT))
            && let Some((_, p)) = written.iter().rev().find(|(key, _)| key == k)
        {
            return Some(*p);
        }
        self.entries(text, open, close)
            .into_iter()
            .filter_map(|e| self.key(e))
            .find(|(key, _)| key == k)
            .map(|(_, v)| v)
    }

    /// The entries of the list `open..=close`: its own, then those appended.
    fn list(&self, text: usize, open: usize, close: usize) -> Vec<Place> {
        let mut entries = self.entries(text, open, close);
        if let Some(Edit::Append(more)) = self.edits.get(&(text, close, APPEND)) {
            entries.extend(more.iter().copied());
        }
        entries
    }

    /// One step of a path from the value at `at` (resolved): the value it leads to, or why it
    /// leads nowhere. `Ok(None)` when the step is a field the text leaves out.
    fn step(&self, at: Place, step: &Step) -> Result<Option<Place>, Nowhere> {
        match (step, self.shape(at)) {
            (Step::Key(k), Shape::Fields(open, close)) => Ok(self.field(at.text, open, close, k)),
            (Step::Key(k), Shape::Map(open, close)) => self
                .field(at.text, open, close, k)
                .map(Some)
                .ok_or_else(|| Nowhere::NoName {
                    names: self
                        .entries(at.text, open, close)
                        .into_iter()
                        .filter_map(|e| self.key(e).map(|(k, _)| k))
                        .collect(),
                }),
            (Step::Index(i), Shape::List(open, close)) => {
                let entries = self.list(at.text, open, close);
                entries
                    .get(*i)
                    .copied()
                    .map(Some)
                    .ok_or(Nowhere::Index { len: entries.len() })
            }
            (_, shape) => Err(Nowhere::Shape(shape)),
        }
    }

    /// Applies override `owner`: the value at `steps` becomes `value` (a place of the file or
    /// of a piece of `owner`). The error says why the path leads nowhere.
    pub(super) fn apply(
        &mut self,
        owner: usize,
        steps: &[Step],
        value: Place,
    ) -> Result<(), String> {
        debug_assert_eq!(owner, self.values.len(), "overrides are applied in order");
        self.values.push(value);
        let mut anchor = self.root();
        for (n, step) in steps.iter().enumerate() {
            let walked = one_line(&super::path_text(&steps[..n]));
            let place = if n == 0 {
                "the top level".to_string()
            } else {
                format!("`{walked}`")
            };
            let at = self.resolve(anchor);
            if n == 0 && *step == Step::Key("variants".to_string()) {
                return Err(
                    "`variants` names the file's variants and is not a value to set; choose one with --variant NAME"
                        .to_string(),
                );
            }
            if *step == Step::Append {
                let Shape::List(_, close) = self.shape(at) else {
                    return Err(self.nowhere(&place, at, step, Nowhere::Shape(self.shape(at))));
                };
                match self
                    .edits
                    .entry((at.text, close, APPEND))
                    .or_insert_with(|| Edit::Append(Vec::new()))
                {
                    Edit::Append(more) => more.push(value),
                    _ => unreachable!("append edits are keyed apart"),
                }
                return Ok(());
            }
            match self.step(at, step) {
                Ok(Some(next)) => anchor = next,
                Ok(None) => {
                    let Step::Key(k) = step else {
                        unreachable!("only a field can be left out")
                    };
                    let Shape::Fields(open, close) = self.shape(at) else {
                        unreachable!("a field left out is in fields")
                    };
                    return self.write_in(
                        owner,
                        (at.text, open, close),
                        k,
                        &steps[n + 1..],
                        value,
                        &place,
                    );
                }
                Err(why) => return Err(self.nowhere(&place, at, step, why)),
            }
        }
        self.edits.insert(
            (anchor.text, anchor.start, REPLACE),
            Edit::Replace {
                end: anchor.end,
                with: value,
            },
        );
        Ok(())
    }

    /// Field `k`, which the group `open..=close` leaves out, written in: `value`, inside one
    /// group per key of `rest` and a list if `rest` ends with `[+]`.
    #[allow(clippy::too_many_arguments)]
    fn write_in(
        &mut self,
        owner: usize,
        (text, open, close): (usize, usize, usize),
        k: &str,
        rest: &[Step],
        value: Place,
        place: &str,
    ) -> Result<(), String> {
        // The name is written into the text as it is: it must read as one.
        let name = |k: &str| {
            k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if let Some(bad) = std::iter::once(k)
            .chain(rest.iter().filter_map(|s| match s {
                Step::Key(key) => Some(key.as_str()),
                _ => None,
            }))
            .find(|k| !name(k))
        {
            return Err(format!(
                "{place} has no field `{}`, and no field is called so: a field name is letters, digits and `_`",
                one_line(bad)
            ));
        }
        if rest.iter().any(|s| matches!(s, Step::Index(_))) {
            let written: Vec<String> = self
                .entries(text, open, close)
                .into_iter()
                .filter_map(|e| self.key(e).map(|(k, _)| k))
                .collect();
            return Err(format!(
                "{place} has no `{k}` written (it has: {}); set `{k}` whole instead of a part of it",
                written.join(", ")
            ));
        }
        let (mut prefix, mut suffix) = (String::new(), String::new());
        for s in rest {
            match s {
                Step::Key(key) => {
                    prefix.push_str(&format!("({key}: "));
                    suffix.insert(0, ')');
                }
                Step::Append => {
                    prefix.push('[');
                    suffix.insert(0, ']');
                }
                Step::Index(_) => unreachable!("refused above"),
            }
        }
        let written = if prefix.is_empty() {
            value
        } else {
            self.wrap(owner, &prefix, value, &suffix)
        };
        match self
            .edits
            .entry((text, open, INSERT))
            .or_insert_with(|| Edit::Insert(Vec::new()))
        {
            Edit::Insert(fields) => fields.push((k.to_string(), written)),
            _ => unreachable!("insert edits are keyed apart"),
        }
        Ok(())
    }

    /// Why `step` from `at` (called `place`) leads nowhere, in words.
    fn nowhere(&self, place: &str, at: Place, step: &Step, why: Nowhere) -> String {
        match why {
            Nowhere::NoName { names } => {
                let Step::Key(k) = step else { unreachable!() };
                // A name with dots written without its quotes reads as several steps: say
                // how to write the names it begins.
                let dotted: Vec<String> = names
                    .iter()
                    .filter(|n| {
                        n.strip_prefix(k.as_str())
                            .is_some_and(|r| r.starts_with('.'))
                    })
                    .map(|n| format!("`{}`", one_line(&segment(n))))
                    .collect();
                let hint = if dotted.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; a name with dots is written in double quotes: {}",
                        dotted.join(", ")
                    )
                };
                let total = names.len();
                let mut shown: Vec<String> = names
                    .iter()
                    .take(NAMES_SHOWN_MAX)
                    .map(|n| one_line(&segment(n)))
                    .collect();
                if total > NAMES_SHOWN_MAX {
                    shown.push(format!("… ({total} in all)"));
                }
                format!(
                    "{place} has no `{}`; its names are: {}{hint}",
                    one_line(&segment(k)),
                    shown.join(", ")
                )
            }
            Nowhere::Index { len } => format!(
                "{place} has {len} entries, so the index must be below {len}; `[+]` adds one"
            ),
            Nowhere::Shape(shape) => {
                let (lo, hi) = self.bytes(at);
                let shown = &self.text(at.text).text[lo..hi];
                let shown = shown.split_whitespace().collect::<Vec<_>>().join(" ");
                let shown = if shown.chars().count() > 40 {
                    format!("{}…", shown.chars().take(40).collect::<String>())
                } else {
                    shown
                };
                let what = match shape {
                    Shape::Fields(..) => "fields",
                    Shape::List(..) => "a list",
                    Shape::Map(..) => "a map of names",
                    Shape::Scalar => "a single value",
                };
                let step = match step {
                    Step::Key(k) => format!("`.{}`", one_line(&segment(k))),
                    Step::Index(i) => format!("`[{i}]`"),
                    Step::Append => "`[+]`".to_string(),
                };
                format!("{place} is {what} (`{shown}`), so {step} leads nowhere; set {place} whole")
            }
        }
    }

    /// The deepest place `steps` reach in the scenario as edited, and how many steps that
    /// took (a field left to its default ends the walk where the field would be).
    pub(super) fn walk(&self, steps: &[Step]) -> (Place, usize) {
        let mut at = self.resolve(self.root());
        for (n, step) in steps.iter().enumerate() {
            match self.step(at, step) {
                Ok(Some(next)) => at = self.resolve(next),
                _ => return (at, n),
            }
        }
        (at, steps.len())
    }

    /// The path from `within` (a value in its own text) down to the byte `byte` of that text,
    /// as far as the structure goes: `[1].max_ratio` for a byte in the second entry's field.
    pub(super) fn path_within(&self, within: Place, byte: usize) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut at = within;
        let contains = |p: Place| {
            let (lo, hi) = self.bytes(p);
            lo <= byte && byte < hi
        };
        // Each step goes one group deeper; the depth of a text bounds the loop.
        for _ in 0..self.text(within.text).tokens.len() {
            let (open, close, listed) = match self.shape(at) {
                Shape::Fields(o, c) | Shape::Map(o, c) => (o, c, false),
                Shape::List(o, c) => (o, c, true),
                Shape::Scalar => break,
            };
            let entries = self.entries(at.text, open, close);
            let Some((i, entry)) = entries.iter().enumerate().find(|(_, e)| contains(**e)) else {
                break;
            };
            if listed {
                steps.push(Step::Index(i));
                at = *entry;
                continue;
            }
            let Some((key, value)) = self.key(*entry) else {
                break;
            };
            steps.push(Step::Key(key));
            if !contains(value) {
                break;
            }
            at = value;
        }
        steps
    }

    /// The override whose value the byte `byte` of text `text` is part of, if any.
    pub(super) fn owner(&self, text: usize, byte: usize) -> Option<usize> {
        if text > 0 {
            return Some(self.pieces[text - 1].owner);
        }
        self.values.iter().rposition(|v| {
            let (lo, hi) = self.bytes(*v);
            v.text == 0 && lo <= byte && byte < hi.max(lo + 1)
        })
    }

    /// The byte of the file that the byte `byte` of text `text` is, if it is one.
    pub(super) fn file_byte(&self, mut text: usize, mut byte: usize) -> Option<usize> {
        // Each copy points to an earlier text: the loop ends.
        while text > 0 {
            let (at, len, source, from) = self.pieces[text - 1].copy?;
            if byte < at || byte >= at + len {
                return None;
            }
            (text, byte) = (source, from + byte - at);
        }
        Some(byte)
    }

    /// The value of override `owner`.
    pub(super) fn value(&self, owner: usize) -> Place {
        self.values[owner]
    }

    /// Each override's value, to check on its own (duplicate names in a map).
    pub(super) fn values(&self) -> impl Iterator<Item = (usize, Place)> + '_ {
        self.values.iter().copied().enumerate()
    }

    /// The scenario's text, as RON will read it.
    pub(super) fn emit(&self) -> Emitted {
        let mut out = Emitted {
            text: String::with_capacity(self.base.text.len()),
            segments: Vec::new(),
        };
        self.emit_place(self.root(), &mut out);
        out
    }

    fn emit_place(&self, p: Place, out: &mut Emitted) {
        let p = self.resolve(p);
        if p.start >= p.end {
            return;
        }
        let t = self.text(p.text);
        let mut pos = t.tokens[p.start].start;
        let mut skip_to = p.start;
        for (&(_, token, _), edit) in self
            .edits
            .range((p.text, p.start, REPLACE)..(p.text, p.end, REPLACE))
        {
            if token < skip_to {
                continue;
            }
            match edit {
                Edit::Cut { end } => {
                    out.copy(p.text, &t.text, pos, t.tokens[token].start);
                    pos = t.tokens[end - 1].end;
                    skip_to = *end;
                }
                Edit::Replace { end, with } => {
                    out.copy(p.text, &t.text, pos, t.tokens[token].start);
                    self.emit_place(*with, out);
                    pos = t.tokens[end - 1].end;
                    skip_to = *end;
                }
                Edit::Insert(fields) => {
                    let after = t.tokens[token].end;
                    out.copy(p.text, &t.text, pos, after);
                    pos = after;
                    // Where the fields are written one a line, a new one gets a line of its
                    // own at their indentation (an import writing into a file keeps its look).
                    let indent = t.text[after..].strip_prefix('\n').map(|line| {
                        let text = line.trim_start_matches(' ');
                        &line[..line.len() - text.len()]
                    });
                    for (key, value) in fields {
                        let (byte, _) = self.bytes(*value);
                        let lead = match indent {
                            Some(indent) => format!("\n{indent}{key}: "),
                            None => format!(" {key}: "),
                        };
                        out.write(&lead, value.text, byte);
                        self.emit_place(*value, out);
                        out.write(",", value.text, byte);
                    }
                }
                Edit::Append(values) => {
                    let before = t.tokens[token].start;
                    out.copy(p.text, &t.text, pos, before);
                    pos = before;
                    let mut separator = match t.tokens[token - 1].kind {
                        Kind::Open(_) | Kind::Comma => " ",
                        _ => ", ",
                    };
                    for value in values {
                        let (byte, _) = self.bytes(*value);
                        out.write(separator, value.text, byte);
                        self.emit_place(*value, out);
                        separator = ", ";
                    }
                }
            }
        }
        out.copy(p.text, &t.text, pos, t.tokens[p.end - 1].end);
    }
}

/// Why a step of a path leads nowhere.
enum Nowhere {
    /// A map without that name.
    NoName { names: Vec<String> },
    /// A list with fewer entries.
    Index { len: usize },
    /// A value the step cannot go into.
    Shape(Shape),
}
