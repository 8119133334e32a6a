//! A Java `.properties` file (Spring's `application.properties`) read into the same tree a
//! YAML file gives: `a.b[0].c=value` becomes `{"a": {"b": [{"c": "value"}]}}`, every value a
//! string, as Spring binds them.
//!
//! The grammar is `java.util.Properties.load`'s, the part configuration files use: a line
//! whose first non-blank character is `#` or `!` is a comment; a key ends at the first
//! unescaped `=`, `:` or blank (blanks around the separator are not part of either side); a
//! line ending in an odd number of backslashes continues on the next one, whose leading
//! blanks are dropped; `\t`, `\n`, `\r`, `\f`, `\uXXXX` and `\` before any other character
//! are escapes. Spring's multi-document separator (`#---`) is a comment here: one file is one
//! document. Keys then name a place in the tree by Spring's rules: `.` between map keys,
//! `[N]` for a list entry (`[key]` for a map key that holds dots).
//!
//! Written here rather than taken from the `java-properties` crate: that crate (last release
//! 2023) reads into a `HashMap`, losing the lines an error should name, and brings `regex`
//! and `lazy_static` for what is this short reader.

use super::ImportError;
use super::tree::{Spots, child, item_name};
use serde_json::{Map, Value};

/// The tree of a `.properties` file, and where each property is (the line and column of its
/// key); an error is `file:line:column: what`.
pub fn parse(file: &str, text: &str) -> Result<(Value, Spots), ImportError> {
    let mut root = Value::Object(Map::new());
    let mut placed = Vec::new();
    for (line, column, key, value) in logical_lines(text) {
        let at = |column: usize, message: String| {
            ImportError::new(format!("{file}:{line}:{column}: {message} (.properties)"))
        };
        let steps = key_steps(&key).map_err(|(column, m)| at(column, m))?;
        insert(&mut root, &steps, value).map_err(|m| at(column, format!("{key}: {m}")))?;
        placed.push((steps, line, column));
    }
    // Paths name list entries as every tree's do (by a `name` field), so the places are
    // named once the tree is whole.
    let spots = Spots::from_lines(
        placed
            .into_iter()
            .map(|(steps, line, column)| (path_of(&root, &steps), line as u32, column as u32)),
    );
    Ok((root, spots))
}

/// The path of `steps` in `root`, as the ledger names paths.
fn path_of(root: &Value, steps: &[Step]) -> String {
    let mut path = String::new();
    let mut node = root;
    for step in steps {
        match step {
            Step::Key(k) => {
                path = child(&path, k);
                node = node.get(k).unwrap_or(&Value::Null);
            }
            Step::Index(i) => {
                let item = node.get(*i).unwrap_or(&Value::Null);
                path = format!("{path}[{}]", item_name(item, *i));
                node = item;
            }
        }
    }
    path
}

/// One step of a key's path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The key-value pairs of `text`, each with the line and column its key starts at.
fn logical_lines(text: &str) -> Vec<(usize, usize, String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, first)) = lines.next() {
        let trimmed = first.trim_start();
        if trimmed.is_empty() || trimmed.starts_with(['#', '!']) {
            continue;
        }
        let mut joined = trimmed.to_string();
        while ends_continued(&joined) {
            joined.pop();
            match lines.next() {
                Some((_, next)) => joined.push_str(next.trim_start()),
                None => break,
            }
        }
        let (key, value) = split_pair(&joined);
        let column = first.chars().count() - trimmed.chars().count() + 1;
        out.push((i + 1, column, unescape(&key), unescape(&value)));
    }
    out
}

/// Whether a line ends in an odd number of backslashes (it continues on the next).
fn ends_continued(line: &str) -> bool {
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// The raw key and value of a logical line.
fn split_pair(line: &str) -> (String, String) {
    let mut key = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                key.push(c);
                if let Some(n) = chars.next() {
                    key.push(n);
                }
            }
            '=' | ':' => break,
            c if c == ' ' || c == '\t' || c == '\u{c}' => {
                // Blanks end the key; one `=` or `:` after them is still the separator.
                while chars
                    .peek()
                    .is_some_and(|c| matches!(c, ' ' | '\t' | '\u{c}'))
                {
                    chars.next();
                }
                if chars.peek().is_some_and(|c| matches!(c, '=' | ':')) {
                    chars.next();
                }
                break;
            }
            c => key.push(c),
        }
    }
    let value: String = chars.collect();
    (key, value.trim_start().to_string())
}

/// The text of a key or value with its escapes resolved.
fn unescape(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.clone().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(u) if hex.len() == 4 => {
                        out.push(u);
                        for _ in 0..4 {
                            chars.next();
                        }
                    }
                    _ => out.push('u'),
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The steps of `key` (`a.b[0].c`), or the column of the first error and what it is.
fn key_steps(key: &str) -> Result<Vec<Step>, (usize, String)> {
    let expected = "expected a key such as `resilience4j.retry.instances.backend.max-attempts` (names joined by `.`, list entries as `[0]`)";
    let mut steps = Vec::new();
    let mut word = String::new();
    // Right after a `]`, a `.` or `[` needs no name before it.
    let mut after_bracket = false;
    let mut chars = key.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '.' | '[' if word.is_empty() && !after_bracket => {
                return Err((i + 1, format!("an empty name in {key:?}: {expected}")));
            }
            '.' => {
                if !after_bracket {
                    steps.push(Step::Key(std::mem::take(&mut word)));
                }
                after_bracket = false;
                if key[i + 1..].is_empty() {
                    return Err((i + 1, format!("{key:?} ends without a name: {expected}")));
                }
            }
            '[' => {
                if !word.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut word)));
                }
                let inner: String = chars
                    .by_ref()
                    .map(|(_, c)| c)
                    .take_while(|&c| c != ']')
                    .collect();
                steps.push(match inner.parse::<usize>() {
                    Ok(n) => Step::Index(n),
                    Err(_) if !inner.is_empty() => Step::Key(inner),
                    Err(_) => return Err((i + 1, format!("an empty `[]` in {key:?}: {expected}"))),
                });
                after_bracket = true;
            }
            ']' => {
                return Err((
                    i + 1,
                    format!("a `]` without its `[` in {key:?}: {expected}"),
                ));
            }
            c if after_bracket => {
                return Err((
                    i + 1,
                    format!("{c:?} right after `]` in {key:?}: {expected}"),
                ));
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        steps.push(Step::Key(word));
    }
    if steps.is_empty() {
        return Err((1, format!("an empty key: {expected}")));
    }
    Ok(steps)
}

/// Puts `value` at `steps` under `node`; a key given twice, or as a value and as a parent, is
/// an error.
fn insert(node: &mut Value, steps: &[Step], value: String) -> Result<(), String> {
    let Some((step, rest)) = steps.split_first() else {
        return match node {
            Value::Null => {
                *node = Value::String(value);
                Ok(())
            }
            Value::String(_) => Err("given twice; keep one".to_string()),
            _ => Err("given a value and also fields under it; keep one".to_string()),
        };
    };
    if node.is_null() {
        *node = match step {
            Step::Key(_) => Value::Object(Map::new()),
            Step::Index(_) => Value::Array(Vec::new()),
        };
    }
    let child = match (step, node) {
        (Step::Key(k), Value::Object(map)) => map.entry(k.clone()).or_insert(Value::Null),
        (Step::Index(i), Value::Array(items)) => {
            if *i > items.len() {
                return Err(format!(
                    "list entry [{i}] given before [{}]; number the entries from 0 without gaps",
                    items.len()
                ));
            }
            if *i == items.len() {
                items.push(Value::Null);
            }
            &mut items[*i]
        }
        (_, Value::String(_)) => {
            return Err("given a value and also fields under it; keep one".to_string());
        }
        (Step::Key(k), _) => return Err(format!("`{k}` under a list; keep one")),
        (Step::Index(i), _) => return Err(format!("[{i}] under a map; keep one")),
    };
    insert(child, rest, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> String {
        match parse("a.properties", text) {
            Ok((v, _)) => v.to_string(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_grammar_of_java_properties() {
        assert_eq!(
            check("a.b=1\na.c = x y \n"),
            r#"{"a":{"b":"1","c":"x y "}}"#
        );
        assert_eq!(
            check("# c\n! c\n\n  a:1\nb 2\nc\t=\t3"),
            r#"{"a":"1","b":"2","c":"3"}"#
        );
        assert_eq!(check("a=one\\\n    two"), r#"{"a":"onetwo"}"#);
        assert_eq!(check("a=ends\\\\\nb=2"), r#"{"a":"ends\\","b":"2"}"#);
        assert_eq!(check("a\\=b=c\\u0041\\t"), r#"{"a=b":"cA\t"}"#);
        assert_eq!(check("a="), r#"{"a":""}"#);
    }

    #[test]
    fn keys_name_maps_and_lists() {
        assert_eq!(
            check("x.l[0].n=a\nx.l[1].n=b\nx.l[0].m=c"),
            r#"{"x":{"l":[{"m":"c","n":"a"},{"n":"b"}]}}"#
        );
        assert_eq!(check("m[a.b].c=1"), r#"{"m":{"a.b":{"c":"1"}}}"#);
    }

    #[test]
    fn errors_name_the_line_and_what_is_wrong() {
        assert_eq!(
            check("a=1\na=2"),
            "a.properties:2:1: a: given twice; keep one (.properties)"
        );
        assert!(check("a=1\na.b=2").starts_with("a.properties:2:1: a.b: given a value"));
        assert!(check("l[1]=x").contains("list entry [1] given before [0]"));
        assert!(check("a..b=1").starts_with("a.properties:1:3: an empty name"));
        assert!(check("a.=1").contains("ends without a name"));
        assert!(check("a[]=1").contains("an empty `[]`"));
    }
}
