//! The stress a margin is searched on: `--stress PATH=START..END[:STEP]` as a grid of levels
//! `START + k × STEP`, or `--margin-at-least PATH=VALUE` as a grid of one; each level as a
//! value for `--set` (with the range's unit) and as the override that sets it.

use crate::format::overrides::{Flag, Override, split_override};
use serde::{Deserialize, Serialize};

/// `--stress PATH=START..END[:STEP]`: a numeric path, maybe with a unit (`1600/s..4000/s`,
/// `2s..20s`), bisected on the grid `START + k × STEP`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stress {
    /// The path, as for `--set`.
    pub path: String,
    /// The lowest stress.
    #[serde(with = "super::super::part::exact_f64")]
    pub start: f64,
    /// The grid's step (default: 1 for integers, a 64th of the range otherwise).
    #[serde(with = "super::super::part::exact_f64")]
    pub step: f64,
    /// The highest k: the grid is `0..=steps`.
    pub steps: u64,
    /// What follows each number (`/s`, `s`, `ms`, or nothing).
    pub unit: String,
    /// Decimals shown (0 for integers).
    pub decimals: usize,
    /// The flag it came from, which errors about its values name.
    pub flag: Flag,
}

impl Stress {
    /// `PATH=START..END[:STEP]`; the error is the reason alone.
    pub fn parse(text: &str) -> Result<Stress, String> {
        let example = "write the stress as PATH=START..END[:STEP], e.g. clients.users.load.rate.peak=1600/s..4000/s:100";
        // A quoted name may hold `=` (`services."a=b".workers`): split as `--set` splits.
        let (path, range) = split_override(text).ok_or_else(|| example.to_string())?;
        let (range, step) = match range.split_once(':') {
            Some((r, s)) => (r, Some(s.trim())),
            None => (range, None),
        };
        let (start, end) = range.split_once("..").ok_or_else(|| example.to_string())?;
        let (start, unit) = number_and_unit(start).ok_or_else(|| example.to_string())?;
        let (end, end_unit) = number_and_unit(end).ok_or_else(|| example.to_string())?;
        if unit != end_unit {
            return Err(format!(
                "the two ends have different units ({unit:?} and {end_unit:?}); write both alike"
            ));
        }
        let step_value = match step {
            Some(s) => Some(
                number_and_unit(s)
                    .filter(|(_, u)| u.is_empty() || *u == unit)
                    .ok_or_else(|| format!("the step {s:?} is not a number in the range's unit"))?
                    .0,
            ),
            None => None,
        };
        Stress::new(path.trim(), (start, end), step_value, unit, Flag::Stress)
    }

    fn new(
        path: &str,
        (a, b): (f64, f64),
        step: Option<f64>,
        unit: String,
        flag: Flag,
    ) -> Result<Stress, String> {
        if path.is_empty() {
            return Err("the stress needs a path before `=`".to_string());
        }
        Override::parse(flag, &format!("{path}=1"))?;
        if b <= a {
            return Err(format!(
                "the range {a}..{b} must go up; write START..END with START < END"
            ));
        }
        let integral =
            a.fract() == 0.0 && b.fract() == 0.0 && step.is_none_or(|s| s.fract() == 0.0);
        let step = step.unwrap_or(if integral { 1.0 } else { (b - a) / 64.0 });
        if step <= 0.0 {
            return Err("the step must be positive".to_string());
        }
        let steps = libm::floor((b - a) / step + 1e-9) as u64;
        let decimals = if integral { 0 } else { 3 };
        Ok(Stress {
            path: path.to_string(),
            start: a,
            step,
            steps,
            unit,
            decimals,
            flag,
        })
    }

    /// `--margin-at-least PATH=VALUE`: a grid of that one level; the error is the reason alone.
    pub fn point(text: &str) -> Result<Stress, String> {
        let example =
            "write the margin as PATH=VALUE, e.g. load=1.5 or clients.users.load.rate.base=1500/s";
        let (path, value) = split_override(text).ok_or_else(|| example.to_string())?;
        if value.contains("..") {
            return Err(format!("{example}: one level, not a range"));
        }
        let (value, unit) = number_and_unit(value).ok_or_else(|| example.to_string())?;
        let mut stress = Stress::new(
            path.trim(),
            (value, value + 1.0),
            Some(1.0),
            unit,
            Flag::MarginAtLeast,
        )?;
        stress.steps = 0;
        Ok(stress)
    }

    /// The stress at grid point `k`.
    pub fn at(&self, k: u64) -> f64 {
        self.start + self.step * k as f64
    }

    /// The stress at grid point `k` as a value for `--set` (`2400/s`).
    pub fn value(&self, k: u64) -> String {
        let text = format!("{:.*}", self.decimals, self.at(k));
        // `2.500` reads as `2.5`; integers keep no point.
        let text = if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        };
        format!("{text}{}", self.unit)
    }

    /// The override that sets the stress to grid point `k`.
    pub fn set(&self, k: u64) -> Override {
        Override {
            path: self.path.clone(),
            value: self.value(k),
            flag: self.flag,
        }
    }
}

/// `1600/s` as `(1600, "/s")`, `0.5` as `(0.5, "")`: a number, then maybe a unit of letters
/// and `/`.
pub(super) fn number_and_unit(text: &str) -> Option<(f64, String)> {
    let text = text.trim().trim_matches('"');
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value = number.parse::<f64>().ok().filter(|v| v.is_finite())?;
    unit.chars()
        .all(|c| c.is_ascii_alphabetic() || c == '/')
        .then(|| (value, unit.to_string()))
}
