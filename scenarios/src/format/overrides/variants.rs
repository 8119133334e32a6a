//! The file's `variants` map, found once on the file's tokens: each variant's name and, for
//! each of its paths, the path's steps and the place of its value, so a variant is applied
//! without reading the file again and its errors point into the map.

use super::edit::{Build, Place, Shape};
use super::{Step, parse_path};
use crate::format::read::{Kind, Text};

/// One variant: its name and its overrides, in the file's order.
#[derive(Debug, Clone)]
pub(super) struct Variant {
    pub(super) name: String,
    /// The byte where its name starts.
    pub(super) at: usize,
    pub(super) entries: Vec<Entry>,
}

/// One `"path": value` of a variant.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) path: String,
    pub(super) steps: Vec<Step>,
    /// The byte where the path starts.
    pub(super) at: usize,
    /// The value, a place of the file.
    pub(super) value: Place,
}

/// The file's variants and the tokens of the `variants` field (with the comma after it), or
/// the byte where the map is malformed and what is wrong.
pub(super) type Found = (Vec<Variant>, Option<(usize, usize)>);

/// Finds the `variants` field of the file `base` (read by `build`, which has no edits yet).
pub(super) fn find(base: &Text, build: &Build) -> Result<Found, (usize, String)> {
    let mut root = build.root();
    if root.start >= root.end {
        return Ok((Vec::new(), None));
    }
    // The scenario's own group, whatever follows it (RON tells of that).
    let t = &base.tokens;
    let open = usize::from(t[0].kind == Kind::Name);
    if let Some(Some(close)) = base.pairs.get(open) {
        root.end = close + 1;
    }
    let Shape::Fields(open, close) = build.shape(root) else {
        return unbalanced(base).map_or(Ok((Vec::new(), None)), Err);
    };
    let entries = build.entries(0, open, close);
    let Some((entry, value)) = entries.iter().find_map(|e| {
        build
            .key(*e)
            .filter(|(k, _)| k == "variants")
            .map(|(_, v)| (*e, v))
    }) else {
        return Ok((Vec::new(), None));
    };
    let at = |token: usize| base.tokens[token].start;
    let wrong = |token: usize, message: &str| {
        (
            at(token),
            format!("{message}; write variants as {{ \"name\": {{ \"path\": value, … }}, … }}"),
        )
    };
    let Shape::Map(vo, vc) = build.shape(value) else {
        return Err(wrong(value.start, "`variants` is a map of names"));
    };
    let mut variants: Vec<Variant> = Vec::new();
    for e in build.entries(0, vo, vc) {
        let Some((name, sets)) = build
            .key(e)
            .filter(|_| base.tokens[e.start].kind == Kind::Text)
        else {
            return Err(wrong(e.start, "a variant is named by a quoted string"));
        };
        if variants.iter().any(|v| v.name == name) {
            return Err(wrong(
                e.start,
                &format!("the variant {name:?} is given twice"),
            ));
        }
        let Shape::Map(so, sc) = build.shape(sets) else {
            return Err(wrong(
                sets.start,
                &format!("the variant {name:?} is a map of paths to values"),
            ));
        };
        let mut list = Vec::new();
        for s in build.entries(0, so, sc) {
            let Some((path, v)) = build
                .key(s)
                .filter(|_| base.tokens[s.start].kind == Kind::Text)
            else {
                return Err(wrong(s.start, "a path is a quoted string"));
            };
            // `"path": ,` has no value: its token range is empty.
            if v.start >= v.end {
                return Err(wrong(s.start, "a path needs a value after its colon"));
            }
            let steps = parse_path(&path).map_err(|m| (at(s.start), m))?;
            list.push(Entry {
                path,
                steps,
                at: at(s.start),
                value: v,
            });
        }
        variants.push(Variant {
            name,
            at: at(e.start),
            entries: list,
        });
    }
    // The field and the comma after it.
    let end = if base
        .tokens
        .get(entry.end)
        .is_some_and(|t| t.kind == Kind::Comma)
    {
        entry.end + 1
    } else {
        entry.end
    };
    Ok((variants, Some((entry.start, end))))
}

/// Where the brackets of a `variants` field that cannot be read go wrong: the first close
/// bracket after `variants:` that does not close the last bracket opened, or the last one left
/// open. `None` when the top level has no `variants:` or its brackets are right (the parser
/// tells what is wrong then).
fn unbalanced(base: &Text) -> Option<(usize, String)> {
    let t = &base.tokens;
    let word = |i: usize| &base.text[t[i].start..t[i].end];
    let mut open: Vec<usize> = Vec::new();
    let mut variants = None;
    let fix = "write variants as { \"name\": { \"path\": value, … }, … }";
    for i in 0..t.len() {
        match t[i].kind {
            Kind::Open(_) => open.push(i),
            Kind::Close(c) => {
                let partner = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                match open.last() {
                    Some(&o) if t[o].kind == Kind::Open(partner) => {
                        open.pop();
                    }
                    Some(_)
                        if variants.is_some()
                            && !open.iter().any(|&o| t[o].kind == Kind::Open(partner)) =>
                    {
                        return Some((
                            t[i].start,
                            format!(
                                "this `{}` closes nothing that is open, so `variants` cannot be read; remove it, or {fix}",
                                word(i)
                            ),
                        ));
                    }
                    Some(&o) if variants.is_some() => {
                        let (line, column) =
                            crate::format::read::line_column(&base.text, t[o].start);
                        return Some((
                            t[i].start,
                            format!(
                                "this `{}` comes before the `{}` opened at line {line}, column {column} is closed, so `variants` cannot be read; close it, or {fix}",
                                word(i),
                                word(o)
                            ),
                        ));
                    }
                    _ => return None,
                }
            }
            Kind::Name
                if open.len() == 1
                    && word(i) == "variants"
                    && t.get(i + 1).is_some_and(|n| n.kind == Kind::Colon) =>
            {
                variants = Some(i);
            }
            _ => {}
        }
    }
    let last = *open.last()?;
    variants.filter(|&v| last > v).map(|_| {
        (
            t[last].start,
            format!(
                "this `{}` is not closed, so `variants` cannot be read; close it, or {fix}",
                word(last)
            ),
        )
    })
}
