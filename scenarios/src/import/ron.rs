//! [`Ron`]: a scenario value as an importer builds it, each field with the [`Origin`] it came
//! from, written as RON text whose every imported value carries a `//` comment naming that
//! origin, and listed as rows of the mapping table.
//!
//! Written by hand rather than by `ron::ser`: the serializer has no comments, and the text is
//! read back through [`crate::format::load::parse`] by the importer, so what is written is
//! checked to load and validate like any file.

use super::model::Origin;

/// A value of the scenario format.
#[derive(Debug, Clone, PartialEq)]
pub enum Ron {
    /// A number, a quoted string, a unit variant: written as it is.
    Scalar(String),
    /// `Name(field: …)` or `(field: …)`.
    Struct {
        /// The variant or struct name, if written.
        name: Option<String>,
        /// Its fields in order.
        fields: Vec<Field>,
    },
    /// `[…]`.
    List(Vec<Field>),
    /// `{"name": …}`: each field's name is a key.
    Map(Vec<Field>),
}

/// One field (or list entry: its `name` is empty) and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The field's name, empty for a list entry.
    pub name: String,
    /// Its value.
    pub value: Ron,
    /// Where it came from (`envoy: clusters[db].connect_timeout`), written as its comment;
    /// `None` for a value no configuration gave (a placeholder says so in `note`).
    pub source: Option<Origin>,
    /// A few words on the mapping (`Envoy's default`), written after the source.
    pub note: Option<String>,
}

impl Field {
    /// A field that came from `source`.
    pub fn from(name: &str, value: Ron, source: Origin) -> Field {
        Field {
            name: name.to_string(),
            value,
            source: Some(source),
            note: None,
        }
    }

    /// A field with no source of its own (a wrapper whose fields carry theirs, or a
    /// placeholder with a `note`).
    pub fn plain(name: &str, value: Ron) -> Field {
        Field {
            name: name.to_string(),
            value,
            source: None,
            note: None,
        }
    }

    /// The same field with a note.
    pub fn noted(mut self, note: impl Into<String>) -> Field {
        self.note = Some(note.into());
        self
    }

    fn comment(&self) -> Option<String> {
        match (&self.source, &self.note) {
            (Some(s), Some(n)) => Some(format!("{} ({n})", s.label)),
            (Some(s), None) => Some(s.label.clone()),
            (None, Some(n)) => Some(n.clone()),
            (None, None) => None,
        }
    }
}

/// A quoted string.
pub fn string(s: &str) -> Ron {
    Ron::Scalar(format!("{s:?}"))
}

/// A duration as the format writes it (`"250ms"`).
pub fn duration(d: sim_core::SimDuration) -> Ron {
    Ron::Scalar(format!("\"{d}\""))
}

/// An integer or any displayable scalar.
pub fn scalar(x: impl std::fmt::Display) -> Ron {
    Ron::Scalar(x.to_string())
}

/// A float, always with a decimal point (RON reads `2` as an integer).
pub fn float(x: f64) -> Ron {
    let text = format!("{x}");
    Ron::Scalar(if text.contains(['.', 'e', 'E']) {
        text
    } else {
        format!("{text}.0")
    })
}

/// A list of HTTP statuses, as `retry_on_status` takes it: ascending, each once.
pub fn statuses(codes: &[u16]) -> Ron {
    let mut codes = codes.to_vec();
    codes.sort_unstable();
    codes.dedup();
    let list = codes
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    Ron::Scalar(format!("[{list}]"))
}
/// `Name(fields)`.
pub fn named(name: &str, fields: Vec<Field>) -> Ron {
    Ron::Struct {
        name: Some(name.to_string()),
        fields,
    }
}

/// `(fields)`.
pub fn fields(fields: Vec<Field>) -> Ron {
    Ron::Struct { name: None, fields }
}

impl Ron {
    /// Whether it is written on one line: no comment inside, and short.
    fn inline(&self) -> Option<String> {
        match self {
            Ron::Scalar(s) => Some(s.clone()),
            Ron::Struct { name, fields } => {
                let inner = inline_fields(fields)?;
                Some(format!("{}({inner})", name.as_deref().unwrap_or("")))
            }
            Ron::List(items) => Some(format!("[{}]", inline_fields(items)?)),
            Ron::Map(_) => None,
        }
        .filter(|s| s.len() <= 60)
    }

    /// The value as RON at `indent` levels of four spaces (its first line is not indented:
    /// it follows its field name).
    pub fn write(&self, indent: usize, out: &mut String) {
        if let Some(line) = self.inline() {
            out.push_str(&line);
            return;
        }
        let (open, close, items) = match self {
            Ron::Scalar(s) => {
                out.push_str(s);
                return;
            }
            Ron::Struct { name, fields } => {
                (format!("{}(", name.as_deref().unwrap_or("")), ")", fields)
            }
            Ron::List(items) => ("[".to_string(), "]", items),
            Ron::Map(items) => ("{".to_string(), "}", items),
        };
        let quoted = matches!(self, Ron::Map(_));
        out.push_str(&open);
        out.push('\n');
        let pad = "    ".repeat(indent + 1);
        for f in items {
            out.push_str(&pad);
            if quoted {
                out.push_str(&format!("{:?}: ", f.name));
            } else if !f.name.is_empty() {
                out.push_str(&f.name);
                out.push_str(": ");
            }
            f.value.write(indent + 1, out);
            out.push(',');
            if let Some(c) = f.comment() {
                out.push_str(" // ");
                out.push_str(&c);
            }
            out.push('\n');
        }
        out.push_str(&"    ".repeat(indent));
        out.push_str(close);
    }

    /// The value on one line, comments left out (the mapping table's value column).
    pub fn one_line(&self) -> String {
        match self {
            Ron::Scalar(s) => s.clone(),
            Ron::Struct { name, fields } => format!(
                "{}({})",
                name.as_deref().unwrap_or(""),
                fields
                    .iter()
                    .map(one_line_field)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Ron::Map(items) => format!(
                "{{{}}}",
                items
                    .iter()
                    .map(|f| format!("{:?}: {}", f.name, f.value.one_line()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Ron::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(one_line_field)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

fn one_line_field(f: &Field) -> String {
    if f.name.is_empty() {
        f.value.one_line()
    } else {
        format!("{}: {}", f.name, f.value.one_line())
    }
}

fn inline_fields(fields: &[Field]) -> Option<String> {
    let mut parts = Vec::new();
    for f in fields {
        if f.comment().is_some() {
            return None;
        }
        let v = f.value.inline()?;
        parts.push(if f.name.is_empty() {
            v
        } else {
            format!("{}: {v}", f.name)
        });
    }
    Some(parts.join(", "))
}

/// One row of the mapping table: a source field, the scenario path it became, its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Where it came from (`envoy: clusters[db].outlier_detection.consecutive_5xx`).
    pub source: Origin,
    /// `services.db.outlier.consecutive_failures`.
    pub path: String,
    /// The value written, on one line.
    pub value: String,
    /// The note, if any.
    pub note: Option<String>,
}

/// The rows of every field with a source under `field`, whose scenario path is `path`.
pub fn rows(path: &str, field: &Field, out: &mut Vec<Row>) {
    if let Some(source) = &field.source {
        out.push(Row {
            source: source.clone(),
            path: path.to_string(),
            value: field.value.one_line(),
            note: field.note.clone(),
        });
        return;
    }
    match &field.value {
        Ron::Scalar(_) => {}
        Ron::Struct { fields, .. } | Ron::Map(fields) => {
            for f in fields {
                rows(&format!("{path}.{}", f.name), f, out);
            }
        }
        Ron::List(items) => {
            for (i, f) in items.iter().enumerate() {
                rows(&format!("{path}[{i}]"), f, out);
            }
        }
    }
}
