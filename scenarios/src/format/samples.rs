//! Files of samples: every `Empirical(file: ...)` of a scenario, read when the scenario is
//! (sim-core does no I/O: it is handed the samples). A file is found relative to the
//! scenario file, and holds either one duration per line or, with `column`, a CSV table whose
//! header names that column (and, with `weights`, a column of counts). A sample is a
//! duration with its unit (`4.2ms`, humantime's syntax) or a bare number in the declaration's
//! `unit`. Errors name the declaration's field, the file and its line.
//!
//! Every reading of a scenario reads its files again (a variant, an override): the files are
//! data the scenario names, as its text is, and reading them once per scenario keeps what a
//! run sees what the disk held when it was checked.

use crate::format::limits::{SAMPLE_FILE_BYTES_MAX, SAMPLES_MAX};
use crate::format::overrides::segment;
use crate::format::schema::{Admission, FaultKind, Load, Scenario};
use crate::format::schema::{DistributedLimiter, LimiterState};
use patterns::ConfigError;
use sim_core::sample::Samples;
use sim_core::{Dist, SimDuration};
use sim_net::{LinkConfig, LinkOrder};
use std::io::Read as _;
use std::path::Path;

/// Reads the samples of every `Empirical(file: ...)` of `scenario`, relative to the directory
/// of `scenario_file`. A declaration whose samples are already there is left alone.
pub(crate) fn read_samples(
    scenario_file: &str,
    scenario: &mut Scenario,
) -> Result<(), ConfigError> {
    let base = Path::new(scenario_file).parent().unwrap_or(Path::new(""));
    for (path, dist) in declared(scenario) {
        visit(&path, dist, &mut |path, d| read_one(base, path, d))?;
    }
    Ok(())
}

/// Calls `f` on `d` and on every distribution inside it (a mixture's components).
fn visit(
    path: &str,
    d: &mut Dist,
    f: &mut dyn FnMut(&str, &mut Dist) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    if let Dist::Mixture { components } = d {
        for (i, c) in components.iter_mut().enumerate() {
            visit(&format!("{path}.components[{i}].dist"), &mut c.dist, f)?;
        }
        return Ok(());
    }
    f(path, d)
}

/// Every distribution a scenario declares, with its field path.
fn declared(s: &mut Scenario) -> Vec<(String, &mut Dist)> {
    let mut out = Vec::new();
    for (name, client) in &mut s.clients {
        if let Load::Closed { think, .. } = &mut client.load {
            out.push((format!("clients.{}.load.think", segment(name)), think));
        }
    }
    for (name, service) in &mut s.services {
        out.push((
            format!("services.{}.work", segment(name)),
            &mut service.work,
        ));
        if let Some(latency) = &mut service.latency {
            out.push((format!("services.{}.latency", segment(name)), latency));
        }
        for (i, a) in service.admission.iter_mut().enumerate() {
            if let Admission::Distributed(DistributedLimiter {
                state:
                    LimiterState::Central {
                        skew: Some(skew), ..
                    },
                ..
            }) = a
            {
                out.push((
                    format!("services.{}.admission[{i}].state.skew", segment(name)),
                    &mut **skew,
                ));
            }
        }
    }
    for (i, f) in s.faults.iter_mut().enumerate() {
        if let FaultKind::Latency { extra, .. } = &mut f.kind {
            out.push((format!("faults[{i}].kind.extra"), extra));
        }
    }
    if let Some(network) = &mut s.network {
        link(
            &mut out,
            "network.default_link".into(),
            &mut network.default_link,
        );
        for (i, l) in network.links.iter_mut().enumerate() {
            link(&mut out, format!("network.links[{i}].link"), &mut l.link);
        }
    }
    out
}

fn link<'a>(out: &mut Vec<(String, &'a mut Dist)>, path: String, l: &'a mut LinkConfig) {
    if let LinkOrder::Reorder { extra_delay, .. } = &mut l.order {
        out.push((format!("{path}.order.extra_delay"), extra_delay));
    }
    out.push((format!("{path}.latency"), &mut l.latency));
}

/// What a declaration says of its file.
struct Spec<'a> {
    file: &'a str,
    column: Option<&'a str>,
    weights: Option<&'a str>,
    /// Nanoseconds per unit of a bare number, with the unit's name.
    unit: Option<(f64, &'a str)>,
}

fn read_one(base: &Path, path: &str, d: &mut Dist) -> Result<(), ConfigError> {
    let Dist::Empirical {
        values,
        file: Some(file),
        column,
        unit,
        weights,
        samples,
    } = d
    else {
        return Ok(());
    };
    // Values and a file at once is the declaration's own error, which validation gives.
    if samples.is_some() || !values.is_empty() {
        return Ok(());
    }
    let at = |field: &str, reason: String| ConfigError::new(format!("{path}.{field}"), reason);
    let unit = match unit.as_deref() {
        None => None,
        Some(u) => Some((
            nanos_per(u).ok_or_else(|| {
                at(
                    "unit",
                    format!(
                        "unknown unit {u:?}; write one of \"ns\", \"us\", \"ms\", \"s\", \"m\""
                    ),
                )
            })?,
            u,
        )),
    };
    if weights.is_some() && column.is_none() {
        return Err(at(
            "weights",
            "names a column of a CSV file: add column: \"...\" for the samples' column".into(),
        ));
    }
    let spec = Spec {
        file,
        column: column.as_deref(),
        weights: weights.as_deref(),
        unit,
    };
    let shown = base.join(spec.file);
    let text = read_text(&shown).map_err(|reason| at("file", reason))?;
    let (values, counts) = match spec.column {
        None => lines(&text, &spec),
        Some(column) => table(&text, &spec, column),
    }
    .map_err(|(line, reason)| at("file", format!("{}:{line}: {reason}", shown.display())))?;
    let read = Samples::new(&values, counts.as_deref())
        .map_err(|e| at("file", format!("{}: {}", shown.display(), e.reason)))?;
    *samples = Some(read);
    Ok(())
}

/// Nanoseconds in one of `unit`.
fn nanos_per(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        _ => return None,
    })
}

/// The file as UTF-8 text, or why not.
fn read_text(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot read the file of samples {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(SAMPLE_FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the file of samples {}: {e}", path.display()))?;
    if bytes.len() as u64 > SAMPLE_FILE_BYTES_MAX {
        return Err(format!(
            "{} is larger than {} MiB, the most a file of samples may be; sample it down or give a Histogram",
            path.display(),
            SAMPLE_FILE_BYTES_MAX >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        format!(
            "{}:{line}: not UTF-8 text; save it as UTF-8",
            path.display()
        )
    })
}

/// An error at a line of the file: the line (1-based) and what is wrong.
type AtLine = (usize, String);

/// One sample per line; blank lines and lines starting with `#` are skipped.
fn lines(text: &str, spec: &Spec) -> Result<(Vec<SimDuration>, Option<Vec<f64>>), AtLine> {
    let mut values = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim().trim_start_matches('\u{feff}');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let v = sample(line, spec.unit).map_err(|reason| (i + 1, reason))?;
        push(&mut values, v, i + 1)?;
    }
    if values.is_empty() {
        return Err((
            1,
            "holds no samples: write one duration per line, e.g. 4.2ms".into(),
        ));
    }
    Ok((values, None))
}

fn push(values: &mut Vec<SimDuration>, v: SimDuration, line: usize) -> Result<(), AtLine> {
    if values.len() >= SAMPLES_MAX {
        return Err((
            line,
            format!(
                "more than {SAMPLES_MAX} samples, the most one file may give; sample it down or give a Histogram"
            ),
        ));
    }
    values.push(v);
    Ok(())
}

/// A CSV table with a header: the samples in `column`, their weights in `spec.weights`.
fn table(
    text: &str,
    spec: &Spec,
    column: &str,
) -> Result<(Vec<SimDuration>, Option<Vec<f64>>), AtLine> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| (1, format!("not a CSV table: {e}")))?
        .clone();
    let find = |name: &str| {
        header.iter().position(|h| h.trim() == name).ok_or_else(|| {
            let names: Vec<String> = header.iter().map(|h| format!("{:?}", h.trim())).collect();
            (
                1,
                format!(
                    "no column {name:?} in the header; its columns: {}",
                    names.join(", ")
                ),
            )
        })
    };
    let value_at = find(column)?;
    let weight_at = spec.weights.map(find).transpose()?;
    let mut values = Vec::new();
    let mut weights = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            (line, format!("not a CSV row: {e}"))
        })?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let cell = |at: usize, name: &str| {
            record.get(at).map(str::trim).ok_or_else(|| {
                (
                    line,
                    format!("the row has {} cells, no column {name:?}", record.len()),
                )
            })
        };
        let text = cell(value_at, column)?;
        if text.is_empty() {
            continue;
        }
        let v = sample(text, spec.unit).map_err(|reason| (line, reason))?;
        if let (Some(at), Some(name)) = (weight_at, spec.weights) {
            weights.push(weight(cell(at, name)?).map_err(|reason| (line, reason))?);
        }
        push(&mut values, v, line)?;
    }
    if values.is_empty() {
        return Err((2, format!("no samples in column {column:?}")));
    }
    Ok((values, weight_at.map(|_| weights)))
}

/// A weight: a count of observations, finite and not negative.
fn weight(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(w) if w.is_finite() && w >= 0.0 => Ok(w),
        _ => Err(format!(
            "{text:?} is not a weight: write a count, a number not negative"
        )),
    }
}

/// A sample: a duration with its unit, or a bare number in `unit`.
fn sample(text: &str, unit: Option<(f64, &str)>) -> Result<SimDuration, String> {
    let d = match text.parse::<f64>() {
        Ok(number) => {
            let Some((nanos, _)) = unit else {
                return Err(format!(
                    "{text:?} has no unit: write it with one (\"{text}ms\") or add unit: \"ms\" (or \"us\", \"s\") to the declaration"
                ));
            };
            if !(number.is_finite() && number >= 0.0) {
                return Err(format!(
                    "{text:?} is not a duration: samples are finite and not negative"
                ));
            }
            let nanos = number * nanos;
            if nanos > SimDuration::CONFIG_MAX.as_nanos() as f64 {
                return Err(format!("{text:?} is longer than 100 years"));
            }
            SimDuration::from_nanos_f64(nanos)
        }
        Err(_) => text.parse::<SimDuration>().map_err(|e| e.to_string())?,
    };
    if d > SimDuration::CONFIG_MAX {
        return Err(format!("{text:?} is longer than 100 years"));
    }
    Ok(d)
}
