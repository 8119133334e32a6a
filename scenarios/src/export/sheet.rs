//! [`Sheet`]: the mapping table of an export, kept as the writers go: each scenario path with
//! the target field it became and the value written, then each setting not exported with the
//! reason. Nothing the call or its target sets is passed over without a line.

use super::TargetFormat;

/// What was written where, and what was not and why.
#[derive(Debug, Default)]
pub struct Sheet {
    rows: Vec<(String, String, String)>,
    /// Rows that carry a setting (not only the upstream's name).
    settings: usize,
    left: Vec<(String, String, String)>,
    /// Values the format needs and the scenario does not have: `(field, value, what to fill in)`.
    placeholders: Vec<(String, String, String)>,
}

impl Sheet {
    /// `path` (of the scenario) written as `field` (of the target format) = `value`.
    pub fn put(&mut self, path: impl Into<String>, field: impl Into<String>, value: impl ToString) {
        self.rows
            .push((path.into(), field.into(), value.to_string()));
        self.settings += 1;
    }

    /// `path` written as `field`, a name rather than a setting (the upstream's).
    pub fn name(
        &mut self,
        path: impl Into<String>,
        field: impl Into<String>,
        value: impl ToString,
    ) {
        self.rows
            .push((path.into(), field.into(), value.to_string()));
    }

    /// `path` (= `value`) not exported, for `reason`.
    pub fn leave(
        &mut self,
        path: impl Into<String>,
        value: impl ToString,
        reason: impl Into<String>,
    ) {
        self.left
            .push((path.into(), value.to_string(), reason.into()));
    }

    /// `field` written as `value`, a placeholder the user fills in (`what`) before applying.
    pub fn placeholder(
        &mut self,
        field: impl Into<String>,
        value: impl ToString,
        what: impl Into<String>,
    ) {
        self.placeholders
            .push((field.into(), value.to_string(), what.into()));
    }

    /// How many settings were written.
    pub fn written(&self) -> usize {
        self.settings
    }

    /// The table, for stderr.
    pub fn table(&self, call: &str, format: TargetFormat) -> String {
        let mut out = format!("resim export: {call} ({})\n", format.name());
        out.push_str(&format!(
            "exported, {} values (scenario path -> {} field = value):\n",
            self.rows.len(),
            format.name()
        ));
        for (path, field, value) in &self.rows {
            out.push_str(&format!("  {path} -> {field} = {value}\n"));
        }
        out.push_str(&format!(
            "not exported, {} settings (scenario path = value: reason):\n",
            self.left.len()
        ));
        for (path, value, reason) in &self.left {
            out.push_str(&format!("  {path} = {value}: {reason}\n"));
        }
        if !self.placeholders.is_empty() {
            out.push_str(&format!(
                "placeholders, {} values the format needs and the scenario does not have (fill them in before applying; --against ORIGINAL keeps the original's):\n",
                self.placeholders.len()
            ));
            for (field, value, what) in &self.placeholders {
                out.push_str(&format!("  {field} = {value}: {what}\n"));
            }
        }
        out
    }
}

/// A scenario value on one line, as RON writes it (the table's value column), with names as
/// scenario files write them: `jitter: None`, not the raw identifier `r#None` RON's writer
/// uses for a variant that shares a name with `Option`'s.
pub fn ron<T: serde::Serialize>(value: &T) -> String {
    unraw(&::ron::to_string(value).unwrap_or_default())
}

/// `text` without the `r#` of raw identifiers outside strings.
fn unraw(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut prev) = (false, false, ' ');
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if c == 'r' && chars.peek() == Some(&'#') && !(prev.is_alphanumeric() || prev == '_')
        {
            chars.next();
            prev = '#';
            continue;
        }
        out.push(c);
        prev = c;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn raw_identifiers_are_written_as_scenario_files_write_them() {
        assert_eq!(
            super::unraw(r#"(strategy:Constant(delay:"250ms"),jitter:r#None)"#),
            r#"(strategy:Constant(delay:"250ms"),jitter:None)"#
        );
        assert_eq!(
            super::unraw(r#"("a r#b \" r#c",r#None)"#),
            r#"("a r#b \" r#c",None)"#
        );
    }
}
