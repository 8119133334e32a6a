//! The mapping table of an import: each source field, the scenario path it became and its
//! value; then every field not imported, with the reason. One table for every format, as text
//! (stderr, for people) or as JSON (`--table json`, for tools), from the same rows.

use super::super::ledger::{Skip, Skipped};
use super::super::ron::Row;
use super::{Origin, System};
use serde_json::{Value, json};

/// The order the table lists the fields not imported in: a conflict first, then values out
/// of range, simplifications, and what resim has no counterpart for.
const KINDS: [Skip; 4] = [
    Skip::Conflict,
    Skip::OutOfRange,
    Skip::Simplification,
    Skip::NoCounterpart,
];

/// The fields not imported, in the table's order.
fn skipped_in_order(system: &System) -> impl Iterator<Item = &Skipped> {
    KINDS
        .iter()
        .flat_map(|kind| system.skipped.iter().filter(move |s| s.kind == *kind))
}

/// The formats read, as the header names them.
fn formats(system: &System) -> String {
    // Traces are the one source with entries (where requests come in).
    let traces = (!system.entries.is_empty()).then_some("traces");
    traces
        .into_iter()
        .chain(system.formats.iter().map(|f| f.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table as text: what was imported where, then what was not and why.
pub fn text(system: &System, files: &[&str], rows: &[Row]) -> String {
    let mut out = format!("resim import: {} ({})\n", files.join(", "), formats(system));
    out.push_str(&format!(
        "imported, {} fields (source field -> scenario path = value):\n",
        rows.len()
    ));
    for r in rows {
        out.push_str(&format!("  {} -> {} = {}", r.source.label, r.path, r.value));
        if let Some(n) = &r.note {
            out.push_str(&format!("  ({n})"));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "not imported, {} fields (source field: reason):\n",
        system.skipped.len()
    ));
    for s in skipped_in_order(system) {
        // A conflict names both places: this one's here, the one that stands in the reason.
        let place = match s.kind {
            Skip::Conflict => format!(" ({})", s.origin.place()),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  {}{place}: {}: {}\n",
            s.origin.label,
            s.kind.label(),
            s.reason
        ));
    }
    out
}

/// Where a value came from, as the JSON table writes it.
fn origin(o: &Origin) -> Value {
    json!({
        "file": o.file,
        "line": o.line,
        "column": o.column,
        "path": o.path,
        "label": o.label,
    })
}

/// The table as one JSON object: `files`, `formats`, `imported` (each `source`, `path`,
/// `value`, `note`) and `not_imported` (each `source`, `kind`, `reason`).
pub fn json(system: &System, files: &[&str], rows: &[Row]) -> String {
    let imported: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "source": origin(&r.source),
                "path": r.path,
                "value": r.value,
                "note": r.note,
            })
        })
        .collect();
    let not_imported: Vec<Value> = skipped_in_order(system)
        .map(|s| {
            json!({
                "source": origin(&s.origin),
                "kind": s.kind.label(),
                "reason": s.reason,
            })
        })
        .collect();
    let table = json!({
        "files": files,
        "formats": system.formats.iter().map(|f| f.name()).collect::<Vec<_>>(),
        "imported": imported,
        "not_imported": not_imported,
    });
    let mut text = serde_json::to_string_pretty(&table).unwrap_or_default();
    text.push('\n');
    text
}
