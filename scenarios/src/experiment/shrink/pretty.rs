//! [`to_ron`]: a [`Scenario`] written back as a readable file, in the file's own field names.
//!
//! `ron::ser` writes every field, defaults included, one per line. Two passes make that read
//! like a file a person wrote, each checked by reading the text back: a field whose removal
//! reads back as the same scenario (it held its default) is left out, and a bracket whose
//! contents fit on one line of at most [`WIDTH`] columns is closed on that line. The result
//! always reads back as the scenario it was made from; when a pass cannot keep that
//! promise, its output is not used.

use crate::format::schema::Scenario;

/// The widest line a bracket is folded into.
pub const WIDTH: usize = 100;

/// The scenario as RON text that reads back (`format::load::parse`) as the same scenario.
pub fn to_ron(scenario: &Scenario) -> Result<String, String> {
    let config = ron::ser::PrettyConfig::new()
        .indentor("    ")
        .struct_names(false)
        .extensions(ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES);
    let full = ron::ser::to_string_pretty(scenario, config)
        .map_err(|e| format!("cannot write the scenario as RON: {e}"))?;
    // The loader always reads with the extensions; the header would only be noise.
    let full: String = full
        .lines()
        .filter(|l| !l.starts_with("#!["))
        .map(|l| format!("{l}\n"))
        .collect();
    if !reads_as(&full, scenario) {
        return Err("the scenario does not read back from its own RON text".to_string());
    }
    let pruned = prune(&full, scenario);
    // Files are read with implicit `Some`: `timeout: "1s"`, not `timeout: Some("1s")`.
    let bare = unwrap_some(&pruned);
    let pruned = if reads_as(&bare, scenario) {
        bare
    } else {
        pruned
    };
    let folded = fold(&pruned);
    Ok(if reads_as(&folded, scenario) {
        folded
    } else {
        pruned
    })
}

/// Whether `text` reads back as `scenario` (syntax only: the scenario was valid already).
fn reads_as(text: &str, scenario: &Scenario) -> bool {
    match crate::format::read::parse_syntax("shrunk", text) {
        Ok(mut s) => {
            s.limits = scenario.limits.clone();
            s.variants = scenario.variants.clone();
            &s == scenario
        }
        Err(_) => false,
    }
}

/// The change in bracket depth over `line`, brackets inside strings not counted.
fn balance(line: &str) -> i64 {
    let (mut depth, mut in_string, mut escaped) = (0, false, false);
    for c in line.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// The last line of the item that starts at `start` (where the brackets it opens close).
fn item_end(lines: &[&str], start: usize) -> usize {
    let mut depth = 0;
    for (i, line) in lines.iter().enumerate().skip(start) {
        depth += balance(line);
        if depth <= 0 {
            return i;
        }
    }
    lines.len() - 1
}

/// Whether a line starts a struct field (`name: value`), as opposed to a map entry or an
/// element.
fn is_field(line: &str) -> bool {
    let t = line.trim_start();
    let name: String = t
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
        .collect();
    !name.is_empty() && t[name.len()..].starts_with(": ")
}

/// The text with every `: Some(x)` written `: x`.
fn unwrap_some(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(": Some(") {
        let open = at + ": Some(".len();
        out.push_str(&rest[..at + 2]);
        // The matching parenthesis, on the same line or a later one.
        let mut depth = 1;
        let mut close = None;
        let mut in_string = false;
        let mut escaped = false;
        for (i, c) in rest[open..].char_indices() {
            if in_string {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_string = true,
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else {
            out.push_str(&rest[at + 2..]);
            return out;
        };
        out.push_str(&rest[open..close]);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Leaves out, last to first, every field whose removal reads back as the same scenario.
fn prune(text: &str, scenario: &Scenario) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut i = lines.len();
    while i > 0 {
        i -= 1;
        if !is_field(&lines[i]) {
            continue;
        }
        let view: Vec<&str> = lines.iter().map(String::as_str).collect();
        let end = item_end(&view, i);
        let candidate: String = view[..i]
            .iter()
            .chain(&view[end + 1..])
            .map(|l| format!("{l}\n"))
            .collect();
        if reads_as(&candidate, scenario) {
            lines.drain(i..=end);
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Closes on one line every bracket whose contents fit in [`WIDTH`] columns, innermost first;
/// the top two levels (the scenario's own fields and its maps) stay one item per line.
fn fold(text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    loop {
        let mut changed = false;
        let mut i = 0;
        while i < lines.len() {
            let indent = lines[i].len() - lines[i].trim_start().len();
            if indent >= 8 && balance(&lines[i]) > 0 {
                let view: Vec<&str> = lines.iter().map(String::as_str).collect();
                let end = item_end(&view, i);
                let inner = &view[i + 1..end];
                // Innermost first: fold only brackets whose items are one line each.
                if end > i && inner.iter().all(|l| balance(l) == 0) {
                    let mut items: Vec<String> =
                        inner.iter().map(|l| l.trim().to_string()).collect();
                    if let Some(last) = items.last_mut()
                        && last.ends_with(',')
                    {
                        last.pop();
                    }
                    let one = format!(
                        "{}{}{}",
                        view[i].trim_end(),
                        items.join(" "),
                        view[end].trim_start()
                    );
                    if one.chars().count() <= WIDTH {
                        lines.splice(i..=end, [one]);
                        changed = true;
                    }
                }
            }
            i += 1;
        }
        if !changed {
            break;
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_library_scenario_reads_back_from_its_shortened_text() {
        for entry in crate::cli::library::LIBRARY {
            let s = crate::format::load::parse(entry.name, entry.text).unwrap();
            let text = to_ron(&s).unwrap();
            assert!(reads_as(&text, &s), "{}:\n{text}", entry.name);
        }
    }

    #[test]
    fn defaults_are_left_out_and_small_brackets_folded() {
        let s = crate::format::load::parse(
            "retry-storm",
            crate::cli::library::find("retry-storm").unwrap().text,
        )
        .unwrap();
        let text = to_ron(&s).unwrap();
        assert!(!text.contains("retry_on_status"), "{text}");
        assert!(!text.contains("on_abandoned"), "{text}");
        // The db's queue capacity is the default (1000), so it is left out, and so is the
        // retries' `max_attempts: 3`; what is not a default stays.
        assert!(
            text.contains("\"db\": (workers: 16, work: Exponential(mean: \"10ms\")),"),
            "{text}"
        );
        assert!(!text.contains("max_attempts"), "{text}");
        assert!(text.contains("jitter: r#None"), "{text}");
    }
}
