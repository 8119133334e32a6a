//! Edits of a configuration's own text at the places its tree records ([`Spot`]s): a value
//! replaced where it is written, a field the file leaves out inserted beside its siblings with
//! their indentation, so that everything else of the file (comments, order, quoting, blank
//! lines) stays as it was; and the unified diff of what changed.
//!
//! Only values are edited: a scalar (plain, quoted, a number) or a flow list (`[a, b]`) is
//! replaced in place; a field is inserted before the first key of its mapping (a YAML block
//! mapping's, at that key's column, or a JSON object's). What cannot be placed so is an
//! error naming the place, and the caller lists it for the user to edit by hand.

use crate::import::tree::Spot;
use serde_json::Value;

/// One change of the text: the bytes `start..end` become `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// A file's text, with where its lines start.
pub struct Source<'a> {
    pub text: &'a str,
    lines: Vec<usize>,
    /// Whether the file is JSON (its objects are flow mappings).
    json: bool,
}

impl<'a> Source<'a> {
    pub fn new(text: &'a str, json: bool) -> Source<'a> {
        let mut lines = vec![0];
        lines.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source { text, lines, json }
    }

    /// The byte offset of `spot` (line and column from 1, the column in characters).
    pub fn offset(&self, spot: Spot) -> Option<usize> {
        let start = *self.lines.get(spot.line.checked_sub(1)? as usize)?;
        let column = spot.column.checked_sub(1)? as usize;
        let line = &self.text[start..];
        let at = line
            .char_indices()
            .nth(column)
            .map_or(line.len(), |(i, _)| i);
        Some(start + at)
    }

    /// The line that holds byte `at`: its start and its end (before the newline).
    fn line_of(&self, at: usize) -> (usize, usize) {
        let n = self.lines.partition_point(|&s| s <= at) - 1;
        let start = self.lines[n];
        let end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |e| start + e);
        (start, end)
    }

    /// The end of the value written at `start`, whose value is `old`: a quoted string to
    /// its closing quote, a flow list or object to its closing bracket, a plain scalar to
    /// the end of its text.
    fn value_end(&self, start: usize, old: &Value) -> Option<usize> {
        let rest = &self.text[start..];
        let first = rest.chars().next()?;
        let end = match first {
            '"' => {
                let mut escaped = false;
                rest.char_indices().skip(1).find_map(|(i, c)| {
                    let close = c == '"' && !escaped;
                    escaped = !escaped && c == '\\';
                    close.then_some(i + 1)
                })?
            }
            '\'' => {
                let b = rest.as_bytes();
                let mut i = 1;
                loop {
                    match b.get(i)? {
                        b'\'' if b.get(i + 1) == Some(&b'\'') => i += 2,
                        b'\'' => break i + 1,
                        _ => i += 1,
                    }
                }
            }
            '[' | '{' => {
                let mut depth = 0i32;
                let mut quoted = None;
                rest.char_indices().find_map(|(i, c)| {
                    match (quoted, c) {
                        (Some(q), c) if c == q => quoted = None,
                        (Some(_), _) => {}
                        (None, '"' | '\'') => quoted = Some(c),
                        (None, '[' | '{') => depth += 1,
                        (None, ']' | '}') => depth -= 1,
                        _ => {}
                    }
                    (depth == 0 && quoted.is_none()).then_some(i + 1)
                })?
            }
            _ => match old {
                Value::String(s) if rest.starts_with(s.as_str()) => s.len(),
                Value::String(_) | Value::Array(_) | Value::Object(_) => return None,
                _ => rest
                    .find(|c: char| ",}] \t\r\n#".contains(c))
                    .unwrap_or(rest.len()),
            },
        };
        Some(start + end)
    }

    /// `old`, written at `spot`, replaced by `new` in the same style (its quotes kept).
    pub fn replace(&self, spot: Spot, old: &Value, new: &Value) -> Result<Edit, String> {
        let start = self.offset(spot).ok_or("its place is not known")?;
        let end = self
            .value_end(start, old)
            .ok_or("it is written as a block over several lines")?;
        let was = &self.text[start..end];
        let text = match new {
            Value::String(s) if was.starts_with('\'') => format!("'{}'", s.replace('\'', "''")),
            Value::String(s) if was.starts_with('"') || !plain(s) => json(new),
            Value::String(s) => s.clone(),
            Value::Array(_) if !was.starts_with('[') => {
                return Err(
                    "it is written as a block list; a flow list `[…]` can be edited".into(),
                );
            }
            other => json(other).replace("\",\"", "\", \""),
        };
        Ok(Edit { start, end, text })
    }

    /// The field `key` = `value` inserted into the mapping whose children are `siblings`
    /// (each its key as written and the spot of its value, in any order), or into the empty
    /// flow mapping at `empty` when it has none.
    pub fn insert(
        &self,
        siblings: &[(String, Spot)],
        empty: Option<Spot>,
        key: &str,
        value: &Value,
    ) -> Result<Edit, String> {
        let mut placed: Vec<(usize, &str)> = siblings
            .iter()
            .filter_map(|(k, s)| Some((self.offset(*s)?, k.as_str())))
            .collect();
        placed.sort();
        let Some(&(first, first_key)) = placed.first() else {
            let at = empty
                .and_then(|s| self.offset(s))
                .filter(|&o| self.text[o..].starts_with('{'))
                .ok_or("the mapping it goes in is not written as `{}`")?;
            return Ok(Edit {
                start: at + 1,
                end: at + 1,
                text: format!(" {}: {} ", json(&Value::String(key.into())), json(value)),
            });
        };
        let (line_start, _) = self.line_of(first);
        let before = &self.text[line_start..first];
        // A JSON (flow) object: before its first key, as `"key": value, `.
        if let Some(quote) = before
            .rfind(&format!("\"{first_key}\""))
            .filter(|_| self.json)
        {
            let at = line_start + quote;
            let indent = &self.text[line_start..at];
            let gap = if indent.trim().is_empty() {
                format!("\n{indent}")
            } else {
                " ".into()
            };
            let field = format!(
                "{}: {},{gap}",
                json(&Value::String(key.into())),
                json(value)
            );
            return Ok(Edit {
                start: at,
                end: at,
                text: field,
            });
        }
        // A YAML block mapping: before its first key, at that key's column (after a list
        // item's `- `), the first key moved to the next line at the same indentation.
        let key_at = self.text[..first]
            .rmatch_indices(&format!("{first_key}:"))
            .map(|(k, _)| k)
            .find(|&k| k == 0 || self.text[..k].ends_with([' ', '\n', '-']))
            .ok_or("its first sibling's key is not written plainly")?;
        let (start, _) = self.line_of(key_at);
        let lead = &self.text[start..key_at];
        if lead.contains(['{', '[', '#']) {
            return Err("the mapping it goes in is written in flow style `{…}`".into());
        }
        let indent = " ".repeat(lead.chars().count());
        let lines = block(key, value, &indent);
        Ok(Edit {
            start: key_at,
            end: key_at,
            text: format!("{}\n{indent}", &lines[indent.len()..]),
        })
    }
}

/// `key: value` as YAML block lines at `indent` (a mapping's fields one level deeper).
fn block(key: &str, value: &Value, indent: &str) -> String {
    match value {
        Value::Object(map) => {
            let inner = format!("{indent}  ");
            let fields: Vec<String> = map.iter().map(|(k, v)| block(k, v, &inner)).collect();
            format!("{indent}{key}:\n{}", fields.join("\n"))
        }
        Value::String(s) if plain(s) => format!("{indent}{key}: {s}"),
        other => format!("{indent}{key}: {}", json(other).replace("\",\"", "\", \"")),
    }
}

/// Whether YAML reads `s` back as this string when written without quotes.
fn plain(s: &str) -> bool {
    let reserved = ["true", "false", "null", "yes", "no", "on", "off", "~"];
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-,".contains(c))
        && !s.starts_with(['-', '.', ','])
        && s.parse::<f64>().is_err()
        && !reserved.contains(&s.to_ascii_lowercase().as_str())
}

fn json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// `text` with `edits` made (edits that overlap an earlier one are an error).
pub fn apply(text: &str, mut edits: Vec<Edit>) -> Result<String, String> {
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for e in &edits {
        if e.start < at {
            return Err(format!("two edits at byte {}", e.start));
        }
        out.push_str(&text[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// The unified diff of `before` and `after`, both the file `file` (empty when equal).
pub fn diff(file: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(2)
        .header(file, &format!("{file} (exported)"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spot(line: u32, column: u32) -> Spot {
        Spot {
            file: 0,
            line,
            column,
        }
    }

    #[test]
    fn a_value_is_replaced_in_its_own_style() {
        let text = "a:\n  b: 5 # five\n  c: \"x\"\n  d: [1, 2]\n";
        let s = Source::new(text, false);
        let edits = vec![
            s.replace(spot(2, 6), &json!(5), &json!(7)).unwrap(),
            s.replace(spot(3, 6), &json!("x"), &json!("y")).unwrap(),
            s.replace(spot(4, 6), &json!([1, 2]), &json!([3])).unwrap(),
        ];
        assert_eq!(
            apply(text, edits).unwrap(),
            "a:\n  b: 7 # five\n  c: \"y\"\n  d: [3]\n"
        );
    }

    #[test]
    fn a_field_is_inserted_beside_its_siblings() {
        let yaml = "- name: db\n  x:\n    y: 1\n";
        let s = Source::new(yaml, false);
        let siblings = [
            ("name".to_string(), spot(1, 9)),
            ("x".to_string(), spot(3, 5)),
        ];
        let e = s
            .insert(&siblings, None, "z", &json!({ "w": "0.25s" }))
            .unwrap();
        assert_eq!(
            apply(yaml, vec![e]).unwrap(),
            "- z:\n    w: 0.25s\n  name: db\n  x:\n    y: 1\n"
        );
        let js = "{\n  \"a\": 1\n}\n";
        let s = Source::new(js, true);
        let e = s
            .insert(&[("a".into(), spot(2, 8))], None, "b", &json!(2))
            .unwrap();
        assert_eq!(
            apply(js, vec![e]).unwrap(),
            "{\n  \"b\": 2,\n  \"a\": 1\n}\n"
        );
    }
}
