//! [`Override`], [`Overrides`] and [`Source`]: `--set PATH=VALUE` (and `--grid`, `--x`, `--y`)
//! and a file's named `variants`, applied as edits on the file's tokens before RON reads the
//! text, so an overridden scenario is parsed and validated exactly like a file that says the
//! same.
//!
//! A path names a place the way errors do: `services.api.workers`,
//! `clients.users.call.stack[0].max_attempts`; `[+]` at its end appends to a list
//! (`faults[+]`); a name with a dot is quoted (`services."shop.Db".workers`, `path.rs`). A value is RON, as the file would write it (`32`, `"500ms"`,
//! `Retry(max_attempts: 2)`); on the command line a duration or a rate may go without its
//! quotes (`30s`, `500/s`, `Constant(3000/s)`), which the shell would take away anyway (see
//! `typed.rs`). An override replaces the value at its path; a field the file leaves out (so it
//! takes its default) is written in, and so is a list that `[+]` appends to. A path that leads
//! nowhere is an error listing what is there; a value that does not parse or validate is the
//! parser's or the validator's error, told about the override: on the command line the flag
//! and the value as typed (`--set duration=30s: …`), in a file the line and column of the
//! token in the `variants` map and the path within the variant
//! (`variants."per-tenant".expectations[1].max_ratio`), never the value itself.
//!
//! `load_overrides` turns one factor (`resim tune --stress load=…`) into the overrides that
//! scale every open-loop client's rates (`load.rs`).
//!
//! A file may name sets of overrides, which `--variant NAME` applies before any `--set`:
//!
//! ```ron
//! variants: {
//!     "budget": { "services.api.calls[0].stack[0].budget": (ratio: 0.1) },
//! },
//! ```
//!
//! Reading is linear: a [`Source`] lexes the file once and finds its variants; checking it
//! ([`Source::check`]) reads the file without its `variants` field once, then each variant
//! as edits on those same tokens (`edit.rs`), so a variant costs its own bytes and one parse
//! and validation of the scenario it makes, never the other variants' bytes.

mod edit;
mod load;
mod path;
mod typed;
mod variants;

use crate::format::error::{ScenarioError, one_line};
use crate::format::limits::OVERRIDES_MAX;
use crate::format::limits::RunLimits;
use crate::format::read::{Text, duplicate_key, line_column, parse_text, ron_error, validate_with};
use crate::format::schema::Scenario;
use edit::{Build, Place};
use std::fmt;
use std::str::FromStr;
use variants::Variant;

pub use load::{LOAD, load_overrides};
use path::{Step, parse_path, path_text};
pub use path::{segment, split_override};

/// The command-line flag that gave an override, which its errors name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Flag {
    /// `--set PATH=VALUE`.
    #[default]
    Set,
    /// One value of `--grid PATH=V1,V2,…` (`resim sweep`).
    Grid,
    /// One value of `--x` (`resim phase`).
    X,
    /// One value of `--y` (`resim phase`).
    Y,
    /// One value of `--param` (`resim tune`).
    Param,
    /// One value of `--stress` (`resim tune`).
    Stress,
    /// The value of `--margin-at-least` (`resim tune`).
    MarginAtLeast,
}

impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flag::Set => "--set",
            Flag::Grid => "--grid",
            Flag::X => "--x",
            Flag::Y => "--y",
            Flag::Param => "--param",
            Flag::Stress => "--stress",
            Flag::MarginAtLeast => "--margin-at-least",
        })
    }
}

/// One `PATH=VALUE`: the value at `path` becomes `value`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Override {
    /// Where, as errors name places: `services.api.workers`, `clients.users.call.stack[0]`;
    /// `faults[+]` appends.
    pub path: String,
    /// The new value as typed: RON, where a duration or a rate may go without quotes.
    pub value: String,
    /// The flag that gave it.
    pub flag: Flag,
}

impl Override {
    /// `PATH=VALUE` as given to `flag`; the error is the reason alone (the caller names the
    /// flag and the text).
    pub fn parse(flag: Flag, text: &str) -> Result<Override, String> {
        let example = "write an override as PATH=VALUE, e.g. services.api.workers=32";
        let (path, value) = split_override(text).ok_or_else(|| example.to_string())?;
        let (path, value) = (path.trim(), value.trim());
        if path.is_empty() || value.is_empty() {
            return Err(example.to_string());
        }
        parse_path(path)?;
        Ok(Override {
            path: path.to_string(),
            value: value.to_string(),
            flag,
        })
    }

    /// The override as errors name it: the flag and the text as typed, on one line.
    pub fn label(&self) -> String {
        format!("{} {self}", self.flag)
    }
}

impl FromStr for Override {
    type Err = String;

    /// A `--set`.
    fn from_str(text: &str) -> Result<Self, String> {
        Override::parse(Flag::Set, text)
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", one_line(&self.path), one_line(&self.value))
    }
}

/// What to change in a scenario before it runs: a variant of the file (applied first), then
/// the command line's overrides in their order (a later one wins).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Overrides {
    /// The name of one of the file's `variants`.
    pub variant: Option<String>,
    /// `--set` overrides (and a grid point's `--grid`, `--x`, `--y` values).
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

    /// The flags as given, for an error that no one of them explains alone.
    fn labels(&self) -> String {
        let mut words: Vec<String> = Vec::new();
        if let Some(v) = &self.variant {
            words.push(format!("--variant {v}"));
        }
        words.extend(self.sets.iter().map(Override::label));
        words.join(" ")
    }

    fn is_empty(&self) -> bool {
        self.variant.is_none() && self.sets.is_empty()
    }
}

/// Parses scenario text, applies `overrides` and validates the result against `limits`, with
/// every variant of the file checked first: the one way a scenario is read
/// ([`crate::format::load::parse_with`] calls it with no overrides).
pub fn parse_overridden(
    file: &str,
    text: &str,
    limits: &RunLimits,
    overrides: &Overrides,
) -> Result<Scenario, ScenarioError> {
    let source = Source::read(file, text)?;
    let scenario = source.check(limits)?;
    source.apply(&scenario, limits, overrides)
}

/// A scenario file read once: its tokens and its variants, from which the file as written,
/// each variant and any overrides are read without lexing it again.
#[derive(Debug, Clone)]
pub struct Source {
    file: String,
    /// The whole file (without a byte-order mark).
    base: Text,
    variants: Vec<Variant>,
    /// The tokens of the `variants` field, left out of every scenario.
    cut: Option<(usize, usize)>,
}

/// What went wrong in a build, before it is put in the words of its context.
struct Blame {
    /// The override it is about, if one is.
    owner: Option<usize>,
    /// The byte of the file it is at, if it is in the file.
    at: Option<usize>,
    /// The field path (of the scenario) it is about, if known.
    path: Option<String>,
    message: String,
    /// RON wanted a string: on a command line, the shell took its quotes away.
    wanted_string: Option<String>,
}

impl Source {
    /// Lexes `text` and finds its variants: a malformed `variants` map is an error at its
    /// place.
    pub fn read(file: &str, text: &str) -> Result<Source, ScenarioError> {
        // Editors may save a byte-order mark; it is invisible there, so columns skip it too.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let base = Text::new(text);
        let found = variants::find(&base, &Build::new(&base, None));
        let (variants, cut) = found.map_err(|(at, message)| {
            let (line, column) = line_column(&base.text, at);
            ScenarioError::Syntax {
                file: file.to_string(),
                line,
                column,
                message,
            }
        })?;
        Ok(Source {
            file: file.to_string(),
            base,
            variants,
            cut,
        })
    }

    /// A fingerprint of the file's text (64-bit FNV-1a, in hex): the parts of an experiment
    /// made on several machines record it, so that parts of a file that changed in between
    /// are not merged.
    pub fn fingerprint(&self) -> String {
        format!("{:016x}", sim_core::rng::fnv1a64(&self.base.text))
    }

    /// The names of the file's variants, in its order.
    pub fn variant_names(&self) -> Vec<String> {
        self.variants.iter().map(|v| v.name.clone()).collect()
    }

    /// What `resim check` does: the file as written, then each of its variants, parsed and
    /// validated against `limits`. The file's scenario, with the names of its variants.
    pub fn check(&self, limits: &RunLimits) -> Result<Scenario, ScenarioError> {
        let blanked;
        let base = match self.cut {
            Some((start, end)) => {
                let t = &self.base.tokens;
                blanked = self.base.blanked(t[start].start, t[end - 1].end);
                &blanked
            }
            None => &self.base,
        };
        let mut scenario = parse_text(&self.file, base)?;
        self.said_once(&scenario)?;
        scenario = validate_with(&self.file, scenario, limits)?;
        for variant in &self.variants {
            self.check_variant(variant, limits)?;
        }
        scenario.variants = self.variant_names();
        Ok(scenario)
    }

    /// A service that says how its calls run twice (`call_mode` and `stages`) is an error at
    /// its `call_mode` in the file ([`crate::format::schema::stages::mixed`]); validation
    /// says it by path alone for a scenario made otherwise.
    fn said_once(&self, scenario: &Scenario) -> Result<(), ScenarioError> {
        let Some((path, message)) = crate::format::schema::stages::mixed(scenario) else {
            return Ok(());
        };
        let build = Build::new(&self.base, self.cut);
        let steps = parse_path(&path).expect("a path resim writes parses");
        let (place, _) = build.walk(&steps);
        let (byte, _) = build.bytes(place);
        let (line, column) = line_column(&self.base.text, byte);
        Err(ScenarioError::Syntax {
            file: self.file.clone(),
            line,
            column,
            message: format!("{path}: {message}"),
        })
    }

    /// The scenarios of several sets of overrides (the points of a grid): the file and its
    /// variants are checked once ([`Source::check`]), then each set is applied ([`Source::apply`]).
    pub fn apply_each(
        &self,
        limits: &RunLimits,
        each: &[Overrides],
    ) -> Result<Vec<Scenario>, ScenarioError> {
        let checked = self.check(limits)?;
        each.iter()
            .map(|overrides| self.apply(&checked, limits, overrides))
            .collect()
    }

    /// The scenario `checked` (what [`Source::check`] gave) with `overrides` applied, parsed
    /// and validated against `limits`.
    pub fn apply(
        &self,
        checked: &Scenario,
        limits: &RunLimits,
        overrides: &Overrides,
    ) -> Result<Scenario, ScenarioError> {
        if overrides.is_empty() {
            return Ok(checked.clone());
        }
        let error = |set: String, message: String| ScenarioError::Override {
            file: self.file.clone(),
            set,
            message,
        };
        let entries: &[variants::Entry] = match &overrides.variant {
            None => &[],
            Some(name) => match self.variants.iter().find(|v| v.name == *name) {
                Some(v) => &v.entries,
                None => {
                    let names = self.variant_names();
                    return Err(error(
                        format!("--variant {name}"),
                        if names.is_empty() {
                            "the file has no variants".to_string()
                        } else {
                            format!("no such variant; the file has: {}", names.join(", "))
                        },
                    ));
                }
            },
        };
        if let Some(over) = overrides
            .sets
            .get(OVERRIDES_MAX.saturating_sub(entries.len()))
        {
            return Err(error(
                over.label(),
                format!(
                    "at most {OVERRIDES_MAX} overrides per run (a variant's and the command line's together); this is the {}th",
                    OVERRIDES_MAX + 1
                ),
            ));
        }
        let mut build = Build::new(&self.base, self.cut);
        for (k, e) in entries.iter().enumerate() {
            // The variant was checked on its own: its paths lead somewhere.
            build.apply(k, &e.steps, e.value).map_err(|m| {
                error(
                    format!(
                        "--variant {}",
                        overrides.variant.clone().unwrap_or_default()
                    ),
                    m,
                )
            })?;
        }
        let mut steps: Vec<Vec<Step>> = entries.iter().map(|e| e.steps.clone()).collect();
        for (n, o) in overrides.sets.iter().enumerate() {
            let owner = entries.len() + n;
            let path = parse_path(&o.path).map_err(|m| error(o.label(), m))?;
            let ron = typed::quote_units(&o.value);
            let value = build.piece(owner, &ron);
            check_single_value(&build, value).map_err(|m| error(o.label(), m))?;
            build
                .apply(owner, &path, value)
                .map_err(|m| error(o.label(), m))?;
            steps.push(path);
        }
        let mut scenario = self.read_build(&build, &steps, limits).map_err(|b| {
            let line = match b.owner {
                Some(k) if k >= entries.len() => Some(&overrides.sets[k - entries.len()]),
                _ => None,
            };
            match line {
                Some(o) => {
                    let message = match (&b.wanted_string, &b.path) {
                        (Some(fixed), _) => format!(
                            "expected a string in double quotes, which the shell takes away: write {} '{}={fixed}'",
                            o.flag, o.path
                        ),
                        (None, Some(path)) if *path != o.path => {
                            format!("{path}: {}", b.message)
                        }
                        _ => b.message,
                    };
                    error(o.label(), message)
                }
                None => error(
                    overrides.labels(),
                    match &b.path {
                        Some(path) => format!("{path}: {}", b.message),
                        None => b.message,
                    },
                ),
            }
        })?;
        scenario.variants = self.variant_names();
        Ok(scenario)
    }

    /// The file's text with `sets` applied as edits (its `variants` kept, every byte the edits
    /// leave alone copied as written, comments included): what `resim import --into` writes.
    /// Values are RON as written (no unquoted units); the caller reads the text back to check it.
    pub fn rewrite(&self, sets: &[Override]) -> Result<String, ScenarioError> {
        let mut build = Build::new(&self.base, None);
        for (owner, o) in sets.iter().enumerate() {
            let error = |message: String| ScenarioError::Override {
                file: self.file.clone(),
                set: o.path.clone(),
                message,
            };
            let path = parse_path(&o.path).map_err(error)?;
            let value = build.piece(owner, &o.value);
            check_single_value(&build, value).map_err(error)?;
            build.apply(owner, &path, value).map_err(error)?;
        }
        // The edits write from the first token to the last: what is around them (the
        // file's opening comment, its last newline) is copied as it is.
        let text = &self.base.text;
        let (first, last) = match (self.base.tokens.first(), self.base.tokens.last()) {
            (Some(f), Some(l)) => (f.start, l.end),
            _ => (text.len(), text.len()),
        };
        Ok(format!(
            "{}{}{}",
            &text[..first],
            build.emit().text,
            &text[last..]
        ))
    }

    /// A variant on its own: its errors point into the `variants` map.
    fn check_variant(&self, variant: &Variant, limits: &RunLimits) -> Result<(), ScenarioError> {
        let located = |at: usize, path: String, message: String| {
            let (line, column) = line_column(&self.base.text, at);
            ScenarioError::Variant {
                file: self.file.clone(),
                line,
                column,
                path,
                message,
            }
        };
        let name = format!("variants.{}", quoted(&variant.name));
        // A path is a string of the file, which may hold a line break.
        let under = |path: &str| format!("{name}.{}", one_line(path));
        if let Some(over) = variant.entries.get(OVERRIDES_MAX) {
            return Err(located(
                over.at,
                under(&over.path),
                format!(
                    "at most {OVERRIDES_MAX} overrides per run (a variant's and the command line's together); this is the {}th: split the variant",
                    OVERRIDES_MAX + 1
                ),
            ));
        }
        let mut build = Build::new(&self.base, self.cut);
        for (owner, e) in variant.entries.iter().enumerate() {
            build
                .apply(owner, &e.steps, e.value)
                .map_err(|m| located(e.at, under(&e.path), m))?;
        }
        let steps: Vec<Vec<Step>> = variant.entries.iter().map(|e| e.steps.clone()).collect();
        self.read_build(&build, &steps, limits)
            .map(|_| ())
            .map_err(|b| match b.owner {
                Some(owner) => {
                    let e = &variant.entries[owner];
                    let at = b.at.unwrap_or(self.base.tokens[e.value.start].start);
                    let path = b.path.unwrap_or_else(|| e.path.clone());
                    located(at, under(&path), b.message)
                }
                // What the variant changed made something else wrong: at its only value, or at
                // its name.
                None => {
                    let message = match &b.path {
                        Some(path) => format!("{path}: {}", b.message),
                        None => b.message,
                    };
                    match variant.entries.as_slice() {
                        [only] => located(
                            self.base.tokens[only.value.start].start,
                            under(&only.path),
                            message,
                        ),
                        _ => located(variant.at, name.clone(), message),
                    }
                }
            })
    }

    /// Reads the scenario a build makes: its text is parsed (duplicate names in an override's
    /// value first) and validated. `steps` are each override's path.
    fn read_build(
        &self,
        build: &Build,
        steps: &[Vec<Step>],
        limits: &RunLimits,
    ) -> Result<Scenario, Blame> {
        for (owner, value) in build.values() {
            let t = build.text(value.text);
            if let Some(d) = duplicate_key(t, value.start..value.end) {
                let first = build
                    .file_byte(value.text, d.first)
                    .map(|b| line_column(&self.base.text, b))
                    .unwrap_or_else(|| line_column(&t.text, d.first));
                return Err(Blame {
                    owner: Some(owner),
                    at: build.file_byte(value.text, d.second),
                    path: Some(path_text(
                        &[steps[owner].as_slice(), &build.path_within(value, d.second)].concat(),
                    )),
                    message: d.message(first),
                    wanted_string: None,
                });
            }
        }
        let emitted = build.emit();
        let scenario = match crate::format::read::deserialize_scenario(&emitted.text) {
            Ok(s) => s,
            Err(e) => return Err(self.syntax_blame(build, &emitted, steps, &e)),
        };
        validate_with(&self.file, scenario, limits).map_err(|e| match e {
            ScenarioError::Invalid { error, .. } => {
                let field = parse_path(&error.field).ok();
                let owner = field.as_ref().and_then(|field| {
                    steps
                        .iter()
                        .rposition(|s| s.len() <= field.len() && field[..s.len()] == s[..])
                });
                let at = match (owner, &field) {
                    (Some(k), Some(field)) => {
                        let (place, _) = build.walk(field);
                        let (byte, _) = build.bytes(place);
                        build
                            .file_byte(place.text, byte)
                            .filter(|_| build.owner(place.text, byte) == Some(k))
                    }
                    _ => None,
                };
                Blame {
                    owner,
                    at,
                    path: Some(error.field),
                    message: error.reason,
                    wanted_string: None,
                }
            }
            other => Blame {
                owner: None,
                at: None,
                path: None,
                message: other.to_string(),
                wanted_string: None,
            },
        })
    }

    /// A RON error in a build's text, about the override whose value it is in (or whose path
    /// leads closest to it).
    fn syntax_blame(
        &self,
        build: &Build,
        emitted: &edit::Emitted,
        steps: &[Vec<Step>],
        e: &ron::error::SpannedError,
    ) -> Blame {
        let lexed = Text::new(&emitted.text);
        let line_of = |byte: usize| {
            let (text, b) = emitted.origin(byte);
            build
                .file_byte(text, b)
                .map_or(1, |f| line_column(&self.base.text, f).0)
        };
        let (byte, message) = ron_error(&lexed, e, &line_of);
        // RON may point at the white space before the token it did not want.
        let token = lexed
            .tokens
            .get(lexed.tokens.partition_point(|t| t.end <= byte));
        let byte = token.map_or(byte, |t| t.start.max(byte));
        let (text, at) = emitted.origin(byte);
        let wanted_string = matches!(e.code, ron::error::Error::ExpectedString)
            .then_some(token)
            .flatten()
            .filter(|t| t.kind != crate::format::read::Kind::Text)
            .and_then(|t| {
                // The value with the word RON wanted as a string in quotes.
                let (text, lo) = emitted.origin(t.start);
                let piece = &build.text(text).text;
                let hi = lo + (t.end - t.start);
                Some(format!(
                    "{}\"{}\"{}",
                    piece.get(..lo)?,
                    piece.get(lo..hi)?,
                    piece.get(hi..)?
                ))
            });
        match build.owner(text, at) {
            Some(owner) => {
                let value = build.value(owner);
                let inner = if value.text == text {
                    build.path_within(value, at)
                } else {
                    Vec::new()
                };
                Blame {
                    owner: Some(owner),
                    at: build.file_byte(text, at),
                    path: Some(path_text(&[steps[owner].as_slice(), &inner].concat())),
                    message,
                    wanted_string: wanted_string.filter(|_| value.text == text),
                }
            }
            None => {
                // The file's own text, wrong only with the overrides (a limiter's `kind`
                // changed, and the fields of the old kind remain): the override whose path
                // shares most with the place.
                let place = build.path_within(build.root(), at);
                let shared =
                    |s: &Vec<Step>| s.iter().zip(&place).take_while(|(a, b)| a == b).count();
                let owner = (0..steps.len())
                    .rev()
                    .max_by_key(|&k| (shared(&steps[k]), k));
                Blame {
                    owner,
                    at: None,
                    path: owner.map(|k| path_text(&steps[k])),
                    message,
                    wanted_string: None,
                }
            }
        }
    }
}

/// A variant's name as its path shows it: `"per-tenant"`.
fn quoted(name: &str) -> String {
    format!("{name:?}")
}

/// A command-line value is one RON value: balanced brackets, no comma or colon outside them.
fn check_single_value(build: &Build, value: Place) -> Result<(), String> {
    let t = build.text(value.text);
    let one = "the value must be one RON value, e.g. 32, \"500ms\" or (capacity: 10)";
    let mut i = value.start;
    let mut values = 0;
    while i < value.end {
        // `Name(…)` is one value with its group.
        if t.tokens[i].kind == crate::format::read::Kind::Name
            && t.tokens
                .get(i + 1)
                .is_some_and(|t| t.kind == crate::format::read::Kind::Open(b'('))
        {
            i += 1;
        }
        match t.tokens[i].kind {
            crate::format::read::Kind::Open(_) => match t.pairs[i] {
                Some(c) => i = c + 1,
                None => return Err(format!("{one}; a bracket is not closed")),
            },
            crate::format::read::Kind::Close(_) => {
                return Err(format!("{one}; a bracket closes that was not opened"));
            }
            crate::format::read::Kind::Comma | crate::format::read::Kind::Colon => {
                return Err(one.to_string());
            }
            _ => i += 1,
        }
        values += 1;
    }
    if values != 1 {
        return Err(one.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_only() {
        let value = |text: &str| {
            let base = Text::new("()");
            let mut build = Build::new(&base, None);
            let place = build.piece(0, text);
            check_single_value(&build, place)
        };
        assert!(value("32").is_ok());
        assert!(value("Retry((max_attempts: 2))").is_ok());
        assert!(value("(capacity: 3)").is_ok());
        assert!(value("3, workers: 4").is_err());
        assert!(value("(").is_err());
        assert!(value("1 2").is_err());
    }
}
