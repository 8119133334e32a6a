//! The report as one JSON object, exactly as serde writes [`Report`]: the field names and
//! docs of [`crate::report`]'s types are the JSON contract.

use super::super::Report;

/// `report` as one line of JSON.
pub(super) fn render(report: &Report) -> String {
    let mut text =
        serde_json::to_string(report).expect("a report has string keys and finite or null numbers");
    text.push('\n');
    text
}
