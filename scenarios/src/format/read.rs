//! Reading scenario text, the one pipeline under [`load`](crate::format::load) and
//! [`overrides`](crate::format::overrides): text lexed once (a `Text`), RON → [`Scenario`],
//! RON's errors in the file's words, validation, and the count of what reading costs
//! ([`Work`]). Both of its users stand on it; it uses neither.
//!
//! Longer than most files on purpose: the token pass and the error translation share the
//! positions they compute, and splitting them would pass those around for nothing.
//!
//! Before serde sees the text, one pass over its tokens (strings, comments, brackets, names)
//! does what RON cannot:
//!
//! - it lets the doubled parentheses of a pattern layer (`Retry((max_attempts: 3))`) through
//!   alongside the single ones that RON's `unwrap_variant_newtypes` extension reads
//!   (`Retry(max_attempts: 3)`), by blanking the inner pair, so every column stays where it was;
//! - it finds a name given twice in a map, so the error can say where both are.
//!
//! RON's errors are then put in the scenario's words: a name where RON wanted an identifier
//! is looked up again with a stand-in name, so the error lists the variants or fields that
//! would fit; internal type names (`RawRetryConfig`) become the names a file uses (`Retry`).
//! The text is at most [`FILE_BYTES_MAX`](crate::format::limits::FILE_BYTES_MAX) long (what
//! [`load`](crate::format::load) reads) and nests at most [`NESTING_MAX`] levels deep; beyond
//! that RON would recurse deeper than a thread's stack allows.

use crate::format::error::ScenarioError;
use crate::format::limits::{NESTING_MAX, RunLimits};
use crate::format::samples::read_samples;
use crate::format::schema::Scenario;
use crate::format::validate::validate;
use ron::error::{Error as RonError, Position, SpannedError};
use std::collections::BTreeMap;

/// Parses scenario text (without a `variants` field) into a [`Scenario`], without validating
/// it: syntax errors carry the line and column.
pub(crate) fn parse_syntax(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    parse_text(file, &Text::new(text))
}

/// Parses text already lexed (whose `variants` field is blanked) into a [`Scenario`], without
/// validating it: syntax errors carry the line and column.
pub(crate) fn parse_text(file: &str, t: &Text) -> Result<Scenario, ScenarioError> {
    let duplicate = duplicate_key(t, 0..t.tokens.len());
    let syntax = |(line, column): (usize, usize), message: String| ScenarioError::Syntax {
        file: file.to_string(),
        line,
        column,
        message,
    };
    let at = |byte: usize| line_column(&t.text, byte);
    let duplicate = duplicate.map(|d| (at(d.second), d.message(at(d.first))));
    let scenario = match deserialize(&t.text) {
        Ok(s) => s,
        Err(e) => {
            let position = (e.span.start.line, e.span.start.col);
            if let Some((d, message)) = duplicate
                && d <= position
            {
                return Err(syntax(d, message));
            }
            let (byte, message) = ron_error(t, &e, &|b| at(b).0);
            return Err(syntax(at(byte), message));
        }
    };
    if let Some((d, message)) = duplicate {
        return Err(syntax(d, message));
    }
    Ok(scenario)
}

/// RON's error in the scenario's words, and the byte of `t` where it is; `line_of` says
/// which line of the file a byte of `t` is on.
pub(crate) fn ron_error(
    t: &Text,
    e: &SpannedError,
    line_of: &dyn Fn(usize) -> usize,
) -> (usize, String) {
    let message = one_line(&explain(&t.text, &t.tokens, e, line_of));
    let byte =
        name_position(&t.text, &t.tokens, e).unwrap_or_else(|| offset_of(&t.text, e.span.start));
    (byte, message)
}

/// Parses a scenario out of text that is not a file (an overridden scenario made of pieces):
/// `Ok`, or RON's error, to be explained with [`ron_error`] on the text lexed.
pub(crate) fn deserialize_scenario(text: &str) -> Result<Scenario, SpannedError> {
    deserialize(text)
}

/// Reads the files of samples a parsed scenario names (relative to `file`) and validates it
/// against `limits`, which it keeps.
pub(crate) fn validate_with(
    file: &str,
    mut scenario: Scenario,
    limits: &RunLimits,
) -> Result<Scenario, ScenarioError> {
    scenario.limits = limits.clone();
    count(|w| w.validations += 1);
    let invalid = |error| ScenarioError::Invalid {
        file: file.to_string(),
        error,
    };
    read_samples(file, &mut scenario).map_err(invalid)?;
    validate(&scenario).map_err(invalid)?;
    Ok(scenario)
}

/// What reading scenario text has cost on this thread: the measure of the work that checking a
/// file takes, which a test can hold to a bound (reading runs on one thread, so the counts of
/// one check are exact whatever else runs beside it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Bytes the lexer read.
    pub bytes_lexed: u64,
    /// Bytes RON parsed into a scenario.
    pub bytes_parsed: u64,
    /// Scenarios validated.
    pub validations: u64,
}

thread_local! {
    static WORK: std::cell::Cell<Work> = const { std::cell::Cell::new(Work { bytes_lexed: 0, bytes_parsed: 0, validations: 0 }) };
}

/// The reading work done on this thread so far (see [`Work`]); a check's cost is the
/// difference of two readings.
pub fn work() -> Work {
    WORK.with(std::cell::Cell::get)
}

fn count(f: impl FnOnce(&mut Work)) {
    WORK.with(|w| {
        let mut now = w.get();
        f(&mut now);
        w.set(now);
    });
}

fn deserialize(text: &str) -> Result<Scenario, SpannedError> {
    count(|w| w.bytes_parsed += text.len() as u64);
    use ron::extensions::Extensions;
    ron::Options::default()
        .with_default_extension(Extensions::IMPLICIT_SOME | Extensions::UNWRAP_VARIANT_NEWTYPES)
        .with_recursion_limit(NESTING_MAX)
        .from_str(text)
}

/// What a token is; only what the passes below need to tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Open(u8),
    Close(u8),
    Comma,
    Colon,
    /// An identifier (a field, variant or struct name, `true`, `None`).
    Name,
    /// A string literal, raw or not.
    Text,
    /// Numbers, characters and anything else.
    Other,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// RON text read once: the text with the doubled parentheses of pattern layers blanked (see
/// [`unwrap_doubled`]; every byte stays where it was), its tokens, and for each opening bracket
/// the token that closes it.
#[derive(Debug, Clone)]
pub(crate) struct Text {
    pub(crate) text: String,
    pub(crate) tokens: Vec<Token>,
    pub(crate) pairs: Vec<Option<usize>>,
}

impl Text {
    /// Lexes `text` (once) and blanks its doubled parentheses.
    pub(crate) fn new(text: &str) -> Text {
        let tokens = lex(text);
        let pairs = pair_brackets(&tokens);
        let (text, blanked) = unwrap_doubled(text, &tokens, &pairs);
        if blanked.is_empty() {
            return Text {
                text,
                tokens,
                pairs,
            };
        }
        let tokens: Vec<Token> = tokens
            .into_iter()
            .enumerate()
            .filter(|(i, _)| blanked.binary_search(i).is_err())
            .map(|(_, t)| t)
            .collect();
        let pairs = pair_brackets(&tokens);
        Text {
            text,
            tokens,
            pairs,
        }
    }

    /// This text with the bytes `lo..hi` blanked (newlines kept, so positions stay) and their
    /// tokens gone.
    pub(crate) fn blanked(&self, lo: usize, hi: usize) -> Text {
        let mut text = String::with_capacity(self.text.len());
        text.push_str(&self.text[..lo]);
        text.extend(
            self.text[lo..hi]
                .chars()
                .map(|c| if c == '\n' || c == '\r' { c } else { ' ' }),
        );
        text.push_str(&self.text[hi..]);
        // Characters of several bytes became one space each (so columns stay): the bytes
        // after them move back.
        let region = text.len() - lo - (self.text.len() - hi);
        let shift = (hi - lo) - region;
        let tokens: Vec<Token> = self
            .tokens
            .iter()
            .filter(|t| t.end <= lo || t.start >= hi)
            .map(|t| {
                if t.start >= hi {
                    Token {
                        kind: t.kind,
                        start: t.start - shift,
                        end: t.end - shift,
                    }
                } else {
                    *t
                }
            })
            .collect();
        let pairs = pair_brackets(&tokens);
        Text {
            text,
            tokens,
            pairs,
        }
    }
}

/// The tokens of RON text, skipping whitespace and comments. Malformed text (an unclosed
/// string or comment) ends the list; the parser reports it.
pub(crate) fn lex(text: &str) -> Vec<Token> {
    count(|w| w.bytes_lexed += text.len() as u64);
    let b = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let c = b[i];
        let next = b.get(i + 1).copied();
        let kind = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'/' if next == Some(b'/') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |n| i + n);
                continue;
            }
            b'/' if next == Some(b'*') => {
                // Block comments nest in RON.
                let mut depth = 0usize;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                continue;
            }
            b'(' | b'[' | b'{' => {
                i += 1;
                Kind::Open(c)
            }
            b')' | b']' | b'}' => {
                i += 1;
                Kind::Close(c)
            }
            b',' => {
                i += 1;
                Kind::Comma
            }
            b':' => {
                i += 1;
                Kind::Colon
            }
            b'"' => {
                i = quoted_end(b, i + 1);
                Kind::Text
            }
            b'b' if next == Some(b'"') => {
                i = quoted_end(b, i + 2);
                Kind::Text
            }
            b'r' | b'b' if raw_string_start(b, i).is_some() => {
                let (open_end, hashes) = raw_string_start(b, i).unwrap_or((i + 1, 0));
                i = raw_string_end(b, open_end, hashes);
                Kind::Text
            }
            b'\'' => {
                i += 1;
                if b.get(i) == Some(&b'\\') {
                    i += 2;
                } else {
                    i += utf8_len(b.get(i).copied().unwrap_or(0));
                }
                if b.get(i) == Some(&b'\'') {
                    i += 1;
                }
                i = i.min(b.len());
                Kind::Other
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                // `r#name` is a raw identifier.
                if c == b'r' && next == Some(b'#') {
                    i += 2;
                }
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                Kind::Name
            }
            c if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.') => {
                i += 1;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'.'
                        || (matches!(b[i], b'-' | b'+') && matches!(b[i - 1], b'e' | b'E')))
                {
                    i += 1;
                }
                Kind::Other
            }
            c => {
                i += utf8_len(c);
                i = i.min(b.len());
                Kind::Other
            }
        };
        // Escapes skip a byte, whatever follows; a token always ends between characters.
        while i < b.len() && !text.is_char_boundary(i) {
            i += 1;
        }
        tokens.push(Token {
            kind,
            start,
            end: i,
        });
    }
    tokens
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

/// The end of a quoted string whose content starts at `i` (after the closing quote).
fn quoted_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// For `r"`, `r#"`, `br##"` … at `i`: where the content starts and how many `#` close it.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = i + usize::from(b[i] == b'b') + 1;
    if b.get(j - 1) != Some(&b'r') {
        return None;
    }
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    (b.get(j) == Some(&b'"')).then_some((j + 1, hashes))
}

fn raw_string_end(b: &[u8], mut i: usize, hashes: usize) -> usize {
    while i < b.len() {
        if b[i] == b'"'
            && b[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    b.len()
}

/// For each opening bracket, the index of the token that closes it. A stray or mismatched
/// bracket leaves its partner unpaired; the parser reports it.
pub(crate) fn pair_brackets(tokens: &[Token]) -> Vec<Option<usize>> {
    let mut pairs = vec![None; tokens.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            Kind::Open(_) => open.push(i),
            Kind::Close(c) => {
                let partner = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if let Some(&o) = open.last()
                    && tokens[o].kind == Kind::Open(partner)
                {
                    open.pop();
                    pairs[o] = Some(i);
                }
            }
            _ => {}
        }
    }
    pairs
}

/// `Name((…))` → `Name( … )`: the doubled form of a newtype variant (a pattern layer, a
/// budget) read as the single one, which is what `unwrap_variant_newtypes` expects. Only a
/// pair that is the whole content of the outer one is blanked, so tuples stay tuples. Also
/// returns the blanked tokens, in order.
pub(crate) fn unwrap_doubled(
    text: &str,
    tokens: &[Token],
    pairs: &[Option<usize>],
) -> (String, Vec<usize>) {
    let mut bytes = text.as_bytes().to_vec();
    let mut blanked = Vec::new();
    for i in 2..tokens.len() {
        if tokens[i - 2].kind != Kind::Name
            || tokens[i - 1].kind != Kind::Open(b'(')
            || tokens[i].kind != Kind::Open(b'(')
        {
            continue;
        }
        let (Some(outer), Some(inner)) = (pairs[i - 1], pairs[i]) else {
            continue;
        };
        let whole =
            outer == inner + 1 || (outer == inner + 2 && tokens[inner + 1].kind == Kind::Comma);
        if whole {
            bytes[tokens[i].start] = b' ';
            bytes[tokens[inner].start] = b' ';
            blanked.push(i);
            blanked.push(inner);
        }
    }
    blanked.sort_unstable();
    // Only ASCII parentheses were replaced, by ASCII spaces.
    let text = String::from_utf8(bytes).unwrap_or_else(|_| text.to_string());
    (text, blanked)
}

/// A name given twice in one map.
pub(crate) struct Duplicate {
    /// The byte where the second starts.
    pub(crate) second: usize,
    /// The byte where the first starts.
    pub(crate) first: usize,
    /// What the name is (`service`, `client`, `key`) and the name as written.
    what: &'static str,
    key: String,
}

impl Duplicate {
    /// The message, given where the first is.
    pub(crate) fn message(&self, (line, column): (usize, usize)) -> String {
        format!(
            "{} {} is defined twice (first at line {line}, column {column}); rename one or merge them",
            self.what,
            crate::format::error::one_line(&self.key)
        )
    }
}

/// The first key (in the order of the text) given twice in one `{ … }` map among the tokens
/// `range` of `t`, if any.
pub(crate) fn duplicate_key(t: &Text, range: std::ops::Range<usize>) -> Option<Duplicate> {
    let (text, tokens, pairs) = (&t.text, &t.tokens, &t.pairs);
    let mut found: Option<(usize, usize, usize)> = None; // (second, first, map)
    for o in range {
        let (Kind::Open(b'{'), Some(close)) = (tokens[o].kind, pairs[o]) else {
            continue;
        };
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        let mut i = o + 1;
        while i < close {
            if tokens[i].kind == Kind::Text
                && tokens.get(i + 1).map(|t| t.kind) == Some(Kind::Colon)
            {
                let key = &text[tokens[i].start..tokens[i].end];
                if let Some(&first) = seen.get(key) {
                    if found.is_none_or(|(second, _, _)| i < second) {
                        found = Some((i, first, o));
                    }
                    break;
                }
                seen.insert(key, i);
            }
            // On to the next entry, stepping over nested brackets.
            while i < close && tokens[i].kind != Kind::Comma {
                i = match (tokens[i].kind, pairs[i]) {
                    (Kind::Open(_), Some(end)) => end + 1,
                    (Kind::Open(_), None) => close,
                    _ => i + 1,
                };
            }
            i += 1;
        }
    }
    let (second, first, map) = found?;
    let what = match map
        .checked_sub(2)
        .filter(|&n| tokens[n + 1].kind == Kind::Colon && tokens[n].kind == Kind::Name)
        .map(|n| &text[tokens[n].start..tokens[n].end])
    {
        Some("services") => "service",
        Some("clients") => "client",
        _ => "key",
    };
    Some(Duplicate {
        second: tokens[second].start,
        first: tokens[first].start,
        what,
        key: text[tokens[second].start..tokens[second].end].to_string(),
    })
}

/// 1-based line and column (in characters, as RON counts them) of byte `offset`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = 1 + before.matches('\n').count();
    let column = 1 + before
        .rsplit('\n')
        .next()
        .map_or(0, |last| last.chars().count());
    (line, column)
}

/// The byte offset of a RON position.
pub(crate) fn offset_of(text: &str, p: Position) -> usize {
    let mut offset = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if n + 1 == p.line {
            return offset
                + line
                    .char_indices()
                    .nth(p.col.saturating_sub(1))
                    .map_or(line.len(), |(i, _)| i);
        }
        offset += line.len();
    }
    text.len()
}

/// The byte where a name RON did not want starts: RON may point at the whitespace before it.
fn name_position(text: &str, tokens: &[Token], e: &SpannedError) -> Option<usize> {
    if !matches!(
        e.code,
        RonError::ExpectedIdentifier
            | RonError::SuggestRawIdentifier(_)
            | RonError::InvalidIdentifier(_)
    ) {
        return None;
    }
    let at = offset_of(text, e.span.start);
    let t = tokens.get(tokens.partition_point(|t| t.end <= at))?;
    Some(t.start.max(at))
}

/// RON's error in the scenario's words, with the fix where one can be told.
fn explain(
    text: &str,
    tokens: &[Token],
    e: &SpannedError,
    line_of: &dyn Fn(usize) -> usize,
) -> String {
    let at = offset_of(text, e.span.start);
    let k = tokens.partition_point(|t| t.end <= at);
    let token = tokens.get(k);
    let shown = token.map_or("the end of the file", |t| &text[t.start..t.end]);
    let found = token.map_or(shown.to_string(), |t| quoted_token(t, shown));
    let is = |kind: Kind| token.is_some_and(|t| t.kind == kind);
    match &e.code {
        RonError::ExceededRecursionLimit => format!(
            "the file nests more than {NESTING_MAX} levels deep here (a Mixture inside a Mixture inside …); flatten the nesting"
        ),
        RonError::ExpectedIdentifier
        | RonError::SuggestRawIdentifier(_)
        | RonError::InvalidIdentifier(_) => names_expected(text, tokens, k),
        RonError::ExpectedString if is(Kind::Name) || is(Kind::Other) => {
            format!("expected a string in double quotes here, e.g. \"{shown}\"")
        }
        RonError::ExpectedFloat | RonError::ExpectedInteger if is(Kind::Text) => {
            let inner = shown.trim_matches('"');
            if inner.trim().parse::<f64>().is_ok() {
                format!(
                    "expected a number here, written without quotes: {}",
                    inner.trim()
                )
            } else {
                format!("expected a number here, found the string {shown}")
            }
        }
        RonError::ExpectedInteger if shown.contains('.') => {
            format!("expected a whole number here, got {found}")
        }
        // RON reads the `1` of `1.5` as a whole number and then wants a comma.
        RonError::ExpectedComma
            if token.is_some_and(|t| t.kind == Kind::Other && t.start < at)
                && shown.parse::<f64>().is_ok() =>
        {
            format!("expected a whole number here, got {found}")
        }
        RonError::ExpectedComma => {
            // A string whose closing quote is missing ends at the next quote, lines later.
            let before = k.checked_sub(1).map(|p| tokens[p]);
            match before {
                Some(b) if b.kind == Kind::Text && text[b.start..b.end].contains('\n') => {
                    let line = line_of(b.start);
                    format!(
                        "expected a comma here; the string that opens on line {line} ends only here: is its closing quote missing?"
                    )
                }
                _ => format!("expected a comma before {found}"),
            }
        }
        RonError::IntegerOutOfBounds => format!(
            "the number {found} is out of range here (too large, or negative where only 0 and up are allowed)"
        ),
        RonError::Eof => {
            "the file ends too early: a bracket is not closed, or a value is missing".to_string()
        }
        RonError::TrailingCharacters => format!(
            "unexpected {found} after the end of the scenario; remove it, or check the brackets before it"
        ),
        RonError::ExpectedNamedStructLike(name) => {
            format!("expected `(` to open {} here, found {found}", thing(name))
        }
        RonError::ExpectedDifferentStructName { expected, found } => format!(
            "expected `(` to open {}, found the name `{found}`",
            thing(expected)
        ),
        RonError::InvalidValueForType { expected, found } => format!(
            "expected {} but found {found} instead",
            in_scenario_words(expected)
        ),
        RonError::NoSuchStructField {
            expected,
            found,
            outer,
        } => format!(
            "unknown field `{found}`{}; expected {}",
            outer
                .as_deref()
                .map_or(String::new(), |o| format!(" in {}", thing(o))),
            one_of(expected)
        ),
        RonError::MissingStructField { field, outer } => format!(
            "missing field `{field}`{}; add `{field}: ..`",
            outer
                .as_deref()
                .map_or(String::new(), |o| format!(" in {}", thing(o))),
        ),
        RonError::DuplicateStructField { field, outer } => format!(
            "field `{field}` given twice{}; remove one",
            outer
                .as_deref()
                .map_or(String::new(), |o| format!(" in {}", thing(o))),
        ),
        RonError::NoSuchEnumVariant {
            expected,
            found,
            outer,
        } => format!(
            "unknown variant `{found}`{}; expected {}",
            outer
                .as_deref()
                .map_or(String::new(), |o| format!(" for {}", thing(o))),
            one_of(expected)
        ),
        RonError::Message(m) => in_scenario_words(m),
        other => other.to_string(),
    }
}

/// A token as an error shows it: a string as written, anything else in backquotes (so that
/// `..` or `1.` cannot end a message with a period).
fn quoted_token(t: &Token, shown: &str) -> String {
    if t.kind == Kind::Text {
        shown.to_string()
    } else {
        format!("`{shown}`")
    }
}

/// A stand-in name that no scenario type knows, so RON lists the ones it does.
const PROBE: &str = "resim_probe";

/// What names would fit where RON wanted an identifier (token `k`): parse again with a
/// stand-in there, and the error lists the enum variants or the struct fields.
fn names_expected(text: &str, tokens: &[Token], k: usize) -> String {
    let Some(t) = tokens.get(k) else {
        return "expected a name here (a field or a variant), found the end of the file"
            .to_string();
    };
    let shown = &text[t.start..t.end];
    let found = quoted_token(t, shown);
    let unquoted = shown.trim_matches('"');
    let field = (k >= 2 && tokens[k - 1].kind == Kind::Colon && tokens[k - 2].kind == Kind::Name)
        .then(|| &text[tokens[k - 2].start..tokens[k - 2].end]);
    // The name of what the token opens, as in `Retry(3)`.
    let enclosing =
        (k >= 2 && tokens[k - 1].kind == Kind::Open(b'(') && tokens[k - 2].kind == Kind::Name)
            .then(|| text[tokens[k - 2].start..tokens[k - 2].end].to_string());
    let probe = format!("{}{PROBE}{}", &text[..t.start], &text[t.end..]);
    let listed = match deserialize(&probe) {
        Err(SpannedError {
            code: RonError::NoSuchEnumVariant {
                expected, found, ..
            },
            ..
        }) if found == PROBE => Some((expected, "variant", None)),
        Err(SpannedError {
            code:
                RonError::NoSuchStructField {
                    expected,
                    found,
                    outer,
                },
            ..
        }) if found == PROBE => Some((expected, "field", outer)),
        _ => None,
    };
    match listed {
        Some((names, what, _)) if t.kind == Kind::Text && names.contains(&unquoted) => {
            format!("{shown} is a {what} name, not a string: write it without quotes, `{unquoted}`")
        }
        Some((names, "variant", _)) => {
            let example = match field {
                Some(f) => format!("{f}: {}", names[0]),
                None => names[0].to_string(),
            };
            format!(
                "expected {} here (a name, without quotes), e.g. `{example}`; found {found}",
                one_of(names)
            )
        }
        Some((names, _, outer)) => format!(
            "expected a field name{} here, {}, e.g. `{}: ..`; found {found}",
            outer
                .or(enclosing)
                .map_or(String::new(), |o| format!(" of {}", thing(&o))),
            one_of(names),
            names[0]
        ),
        None => {
            format!("expected a name here (a field or a variant, without quotes); found {found}")
        }
    }
}

/// `one of `a`, `b` or `c``, as RON words its lists.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [] => "nothing".to_string(),
        [one] => one.clone(),
        [rest @ .., last] => format!("one of {} or {last}", rest.join(", ")),
    }
}

/// What a file calls the value that a Rust type reads: `Service` → "a service", `Dist` → "a
/// distribution", `RawRetryConfig` → "`Retry`". Error messages never show the Rust names.
fn thing(name: &str) -> String {
    let word = match name {
        "Scenario" => "the scenario",
        "Client" => "a client",
        "Call" => "a call",
        "Service" => "a service",
        "Pool" => "a connection pool",
        "QueueConfig" => "a queue",
        "Outlier" => "outlier ejection",
        "HealthCheck" => "a health check",
        "Cache" => "a cache",
        "Fault" | "FaultKind" => "a fault",
        "Step" => "a step",
        "Component" => "a mixture component",
        "Load" => "a load",
        "Schedule" => "a rate schedule",
        "Layer" => "a pattern layer",
        "Discipline" => "a queue discipline",
        "CallMode" => "a call mode",
        "CallStage" => "a call stage",
        "Abandoned" => "on_abandoned",
        "Admission" => "admission control",
        "Balancer" => "a balancer",
        "Expectation" => "an expectation",
        "CallSafety" => "a call safety",
        "Dist" => "a distribution",
        "BackoffConfig" => "a backoff",
        "Strategy" => "a backoff strategy",
        "Jitter" => "a jitter",
        "BudgetConfig" => "a retry budget",
        "HedgeDelay" => "a hedge delay",
        "HalfOpenPolicy" => "a half-open policy",
        "SlidingWindowType" => "a sliding window type",
        "PidConfig" => "a PID controller",
        "CoalesceConfig" => "coalescing",
        "IdempotencyConfig" => "an idempotency store",
        "InFlightPolicy" => "an in-flight policy",
        "NetworkConfig" => "the network section",
        "LinkConfig" | "LinkOverride" => "a link",
        "FaultConfig" => "a network fault",
        "LinkOrder" => "a link order",
        "BandwidthConfig" => "a bandwidth",
        "AdaptiveThrottleConfig" => "`Throttle`",
        "WindowBudgetConfig" => "`Window`",
        "ConcurrencyBudgetConfig" => "`Concurrency`",
        _ => {
            // Pattern layers and budgets, as written: `RawRetryConfig` → `Retry`.
            let name = name.strip_prefix("Raw").unwrap_or(name);
            return format!("`{}`", name.strip_suffix("Config").unwrap_or(name));
        }
    };
    word.to_string()
}

/// A serde `expecting` phrase in the file's words: `struct RawRetryConfig` becomes
/// `` `Retry` ``, `struct Service` becomes "a service".
fn in_scenario_words(text: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(' ') {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        if words.last().is_some_and(|w| w == "struct" || w == "enum")
            && bare.chars().next().is_some_and(char::is_uppercase)
        {
            words.pop();
            words.push(word.replace(bare, &thing(bare)));
        } else {
            words.push(word.to_string());
        }
    }
    words.join(" ")
}

fn one_line(message: &str) -> String {
    let joined: Vec<&str> = message.split_whitespace().collect();
    let mut line = joined.join(" ");
    if let Some(stripped) = line.strip_suffix('.') {
        line = stripped.to_string();
    }
    // Error lines are lowercase throughout resim; RON capitalises its messages.
    let mut chars = line.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubled_parentheses_are_blanked_in_place() {
        let text = r#"[Retry((max_attempts: 3)), Retry((a: 1),), Pair((1, 2), 3), Some(("x"))]"#;
        let tokens = lex(text);
        let pairs = pair_brackets(&tokens);
        assert_eq!(
            unwrap_doubled(text, &tokens, &pairs).0,
            r#"[Retry( max_attempts: 3 ), Retry( a: 1 ,), Pair((1, 2), 3), Some( "x" )]"#
        );
        // The text read once has the same tokens as the blanked text lexed again.
        let once = Text::new(text);
        let again = lex(&once.text);
        assert_eq!(
            once.tokens
                .iter()
                .map(|t| (t.start, t.end))
                .collect::<Vec<_>>(),
            again.iter().map(|t| (t.start, t.end)).collect::<Vec<_>>()
        );
        assert_eq!(once.pairs, pair_brackets(&again));
    }

    #[test]
    fn a_blanked_region_keeps_the_columns_after_it() {
        let text = "(a: \"µµ\", b: (1))";
        let t = Text::new(text);
        let lo = text.find('\"').unwrap();
        let hi = text.find(',').unwrap();
        let b = t.blanked(lo, hi);
        assert_eq!(b.text, "(a:     , b: (1))");
        let again = lex(&b.text);
        assert_eq!(
            b.tokens
                .iter()
                .map(|t| (t.start, t.end))
                .collect::<Vec<_>>(),
            again.iter().map(|t| (t.start, t.end)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn strings_and_comments_hide_brackets() {
        let text = "(a: \"((\", /* ) /* nested */ ) */ b: r#\"\"(\"#, c: '(', d: 1e-3)";
        let kinds: Vec<Kind> = lex(text).iter().map(|t| t.kind).collect();
        assert_eq!(kinds.first(), Some(&Kind::Open(b'(')));
        assert_eq!(kinds.last(), Some(&Kind::Close(b')')));
        assert_eq!(
            kinds.iter().filter(|k| matches!(k, Kind::Open(_))).count(),
            1
        );
    }

    #[test]
    fn tokens_end_between_characters() {
        for text in ["'\\ꬨ_*'h", "\"\\ꬨ\"", "'ꬨ", "r#\"ꬨ"] {
            for t in lex(text) {
                assert!(
                    text.is_char_boundary(t.start) && text.is_char_boundary(t.end),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn positions_count_characters() {
        let text = "ab\nµc d";
        assert_eq!(line_column(text, text.find('d').unwrap()), (2, 4));
        assert_eq!(
            offset_of(text, Position { line: 2, col: 4 }),
            text.find('d').unwrap()
        );
    }
}
