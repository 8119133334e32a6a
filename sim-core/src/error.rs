//! [`ConfigError`]: what every `validate()` in resim returns (distributions, network,
//! patterns, scenarios), so that one error shape carries a field path from a pattern config
//! up to the scenario file that embeds it.

use std::fmt;

/// An invalid configuration value: the field path, what is wrong, and how to fix it.
///
/// Displayed as `field: reason`, e.g. `failure_rate_threshold: must be in (0, 100], got 120`.
/// Callers that embed a config in a larger document prefix the path with [`ConfigError::at`],
/// so a scenario error reads `services.api.breaker.failure_rate_threshold: ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The offending field, relative to the config that was validated.
    pub field: String,
    /// What is wrong and how to fix it (lowercase, no trailing period).
    pub reason: String,
}

impl ConfigError {
    /// An error for `field`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error with `prefix` put in front of the field path.
    pub fn at(mut self, prefix: &str) -> Self {
        self.field = if self.field.is_empty() {
            prefix.to_string()
        } else if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_compose_into_a_path() {
        let e = ConfigError::new("failure_rate_threshold", "must be in (0, 100], got 120")
            .at("breaker")
            .at("services.api");
        assert_eq!(
            e.to_string(),
            "services.api.breaker.failure_rate_threshold: must be in (0, 100], got 120"
        );
        assert_eq!(ConfigError::new("[2]", "x").at("stack").field, "stack[2]");
    }
}
