//! The one syntax of a path, for every place that takes one (`--set`, `--grid`, `--x`/`--y`,
//! `tune --param`, `variants`, and the field paths errors name): [`parse_path`] reads it
//! into [`Step`]s, [`path_text`] writes steps back, [`segment`] writes one name as a path
//! segment, and [`split_override`] finds the `=` that ends a path on the command line.
//!
//! A path is names joined by dots, each followed by any number of indices: `services.api.
//! calls[0].stack[1].max_attempts`; `[+]` at its end appends to a list. A name that holds a
//! dot, a bracket, a quote, `=` or a space (an imported `helloworld.Greeter`, `shop.Db`) is
//! written in double quotes, the quote and the backslash inside escaped by a backslash:
//! `services."helloworld.Greeter".workers`, `services."shop.Db".calls[0].timeout`. Any
//! name may be quoted; [`segment`] quotes only the names that need it, so that every path an
//! error prints can be given back to `--set` as it is.
//!
//! Reading is one pass over the characters, so a path costs its length.

use std::borrow::Cow;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// A field or a map key (a service's, a client's name), unquoted.
    Key(String),
    /// `[N]`: an entry of a list.
    Index(usize),
    /// `[+]`: a new entry at the end of a list.
    Append,
}

const NAMES: &str = "a path is names joined by dots, e.g. services.api.workers";
const INDEX: &str = "an index is written [N], or [+] to add an entry, e.g. stack[0]";
const APPEND_ENDS: &str = "`[+]` adds an entry to a list and ends a path, e.g. faults[+]";
const QUOTED: &str =
    "a name with dots is written in double quotes, e.g. services.\"shop.Db\".workers";

/// Whether `name` must be quoted to be one segment of a path.
fn needs_quotes(name: &str) -> bool {
    name.is_empty()
        || name
            .chars()
            .any(|c| matches!(c, '.' | '[' | ']' | '"' | '\\' | '=') || c.is_whitespace())
}

/// `name` as one segment of a path: as it is, or in double quotes if it holds a dot, a
/// bracket, a quote, `=` or a space (`"helloworld.Greeter"`).
pub fn segment(name: &str) -> Cow<'_, str> {
    if !needs_quotes(name) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Cow::Owned(out)
}

/// `PATH=VALUE` (or `PATH=V1,V2,…`) split at its first `=` outside a quoted name; with a
/// quote left open, at its first `=`, so that the path's error says so.
pub fn split_override(text: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '=' if !quoted => return Some((&text[..i], &text[i + 1..])),
            _ => {}
        }
    }
    text.split_once('=')
}

/// The steps of `path`, or why it is not one, in the user's words.
pub(super) fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut chars = path.char_indices().peekable();
    loop {
        if steps.last() == Some(&Step::Append) {
            return Err(APPEND_ENDS.to_string());
        }
        // A name: quoted, or up to the next dot or bracket.
        let key = match chars.peek() {
            Some(&(open, '"')) => {
                chars.next();
                Some(quoted_name(path, open, &mut chars)?)
            }
            _ => plain_name(&mut chars)?,
        };
        let indexed = chars.peek().is_some_and(|&(_, c)| c == '[');
        match key {
            Some(k) => steps.push(Step::Key(k)),
            // An index needs a name before it: `[0]` alone or `a..b` is not a path.
            None if steps.is_empty() || !indexed => return Err(NAMES.to_string()),
            None => {}
        }
        while chars.peek().is_some_and(|&(_, c)| c == '[') {
            if steps.last() == Some(&Step::Append) {
                return Err(APPEND_ENDS.to_string());
            }
            chars.next();
            let mut inside = String::new();
            loop {
                match chars.next() {
                    None => return Err(INDEX.to_string()),
                    Some((_, ']')) => break,
                    Some((_, c)) => inside.push(c),
                }
            }
            if inside == "+" {
                steps.push(Step::Append);
            } else {
                let i = inside.parse::<usize>().map_err(|_| INDEX.to_string())?;
                steps.push(Step::Index(i));
            }
            if let Some(&(_, c)) = chars.peek()
                && c != '.'
                && c != '['
            {
                return Err("put a dot after an index, e.g. stack[0].budget".to_string());
            }
        }
        match chars.next() {
            None => return Ok(steps),
            Some((_, '.')) if chars.peek().is_none() => return Err(NAMES.to_string()),
            Some(_) => {}
        }
    }
}

/// The characters of a path, as `parse_path` reads them.
type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// A quoted name, its opening quote (at byte `open` of `path`) read.
fn quoted_name(path: &str, open: usize, chars: &mut Chars) -> Result<String, String> {
    let mut name = String::new();
    loop {
        match chars.next() {
            None => {
                return Err(format!(
                    "the quote at character {} is not closed; {QUOTED}",
                    path[..open].chars().count() + 1
                ));
            }
            Some((_, '"')) => break,
            Some((_, '\\')) => match chars.next() {
                Some((_, c @ ('"' | '\\'))) => name.push(c),
                _ => {
                    return Err(format!(
                        "inside quotes, a backslash escapes a quote or a backslash (\\\" or \\\\); {QUOTED}"
                    ));
                }
            },
            Some((_, c)) => name.push(c),
        }
    }
    if name.is_empty() {
        return Err(format!("a quoted name is not empty; {QUOTED}"));
    }
    if let Some(&(_, c)) = chars.peek()
        && c != '.'
        && c != '['
    {
        return Err(format!(
            "put a dot after a quoted name, e.g. services.\"shop.Db\".workers; found `{c}` after \"{name}\""
        ));
    }
    Ok(name)
}

/// A name up to the next dot or bracket (`None` when there is none).
fn plain_name(chars: &mut Chars) -> Result<Option<String>, String> {
    let mut name = String::new();
    while let Some(&(_, c)) = chars.peek() {
        if c == '.' || c == '[' {
            break;
        }
        if c == '"' || c == ']' {
            return Err(format!(
                "`{c}` inside a name; {QUOTED}, and an index follows a name, e.g. stack[0]"
            ));
        }
        name.push(c);
        chars.next();
    }
    Ok((!name.is_empty()).then_some(name))
}

/// Steps as a path: `services.api.calls[0]`, `services."shop.Db".workers`.
pub(super) fn path_text(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        match s {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&segment(k));
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Append => out.push_str("[+]"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(path: &str) -> Vec<Step> {
        parse_path(path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn paths_parse_into_steps() {
        assert_eq!(
            keys("clients.users.call.stack[0].max_attempts"),
            vec![
                Step::Key("clients".into()),
                Step::Key("users".into()),
                Step::Key("call".into()),
                Step::Key("stack".into()),
                Step::Index(0),
                Step::Key("max_attempts".into()),
            ]
        );
        assert_eq!(
            keys("faults[+]"),
            vec![Step::Key("faults".into()), Step::Append]
        );
        for bad in [
            "a..b",
            "stack[x]",
            "stack[0]x",
            "faults[+].at",
            "faults[+][0]",
            ".a",
            "a.",
            "[0]",
            "stack[0",
        ] {
            assert!(parse_path(bad).is_err(), "{bad}");
        }
        for path in ["services.api.calls[0].stack[1]", "faults[+]", "duration"] {
            assert_eq!(path_text(&keys(path)), path);
        }
    }

    #[test]
    fn names_with_dots_are_quoted() {
        assert_eq!(
            keys("services.\"helloworld.Greeter\".calls[0].timeout"),
            vec![
                Step::Key("services".into()),
                Step::Key("helloworld.Greeter".into()),
                Step::Key("calls".into()),
                Step::Index(0),
                Step::Key("timeout".into()),
            ]
        );
        // Any name may be quoted; a quote and a backslash inside are escaped.
        assert_eq!(keys("\"services\".api"), keys("services.api"));
        assert_eq!(
            keys(r#"services."a \"b\" \\ c=d""#)[1],
            Step::Key(r#"a "b" \ c=d"#.into())
        );
        for name in [
            "helloworld.Greeter",
            "a=b",
            "x[0]",
            "two words",
            r#"q"\"#,
            "plain-name",
        ] {
            let path = format!("services.{}.workers", segment(name));
            assert_eq!(keys(&path)[1], Step::Key(name.into()), "{path}");
            assert_eq!(path_text(&keys(&path)), path);
        }
        assert_eq!(segment("plain-name"), "plain-name");
        assert_eq!(segment("shop.Db"), "\"shop.Db\"");
    }

    #[test]
    fn a_bad_quote_says_how_to_write_one() {
        let error = |path: &str| parse_path(path).expect_err(path);
        assert_eq!(
            error("services.\"helloworld.Greeter.workers"),
            "the quote at character 10 is not closed; a name with dots is written in double quotes, e.g. services.\"shop.Db\".workers"
        );
        assert!(error("services.\"shop.Db\"workers").starts_with("put a dot after a quoted name"));
        assert!(error("services.\"\".workers").starts_with("a quoted name is not empty"));
        assert!(error("services.shop\"Db\".workers").starts_with("`\"` inside a name"));
        assert!(error("services.\"a\\b\".workers").starts_with("inside quotes, a backslash"));
    }

    #[test]
    fn an_override_splits_at_its_first_equals_outside_quotes() {
        let split = |text| split_override(text).map(|(path, _)| path);
        assert_eq!(
            split("services.api.workers=8"),
            Some("services.api.workers")
        );
        assert_eq!(
            split("services.\"a=b\".workers=8"),
            Some("services.\"a=b\".workers")
        );
        assert_eq!(
            split("services.\"a\\\"=b\".workers=8"),
            Some("services.\"a\\\"=b\".workers")
        );
        // A quote left open: the path ends at the first `=` and says what is wrong.
        assert_eq!(
            split("services.\"a.workers=8"),
            Some("services.\"a.workers")
        );
        assert_eq!(split("services.api.workers"), None);
    }
}
