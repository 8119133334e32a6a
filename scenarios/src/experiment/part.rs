//! The `--out` files of a phase map or a tune made in shares (`--partition K/N`): "parts".
//! A part's first line is a [`Header`] that says which experiment it belongs to (`kind`, and
//! the experiment itself: its command, the scenario's fingerprint) and which share it is;
//! each following line is one run. [`read_parts`] checks that the files given to
//! `resim merge` are every share of one experiment, once each, and returns the runs of all of
//! them in index order.
//!
//! A sweep's `--out` has no header (its lines are [`super::RunRecord`]s, each naming its
//! sweep), so [`kind_of`] tells the three apart by the first line alone.
//!
//! # Decisions
//!
//! - The whole experiment is written in every header, and the parts must agree on it exactly:
//!   a part made with other flags, or from a scenario file that changed in between, is
//!   refused by name instead of merged into an answer nobody asked for.
//! - A run's index decides its share (`index mod N`), as for sweeps, so a part's lines are
//!   checked against the share its header claims.

use super::partition::Partition;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The first line of a part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header<T> {
    /// `phase` or `tune`: the command that wrote it.
    pub kind: String,
    /// Which share, `K/N`.
    pub partition: String,
    /// The runs of the whole experiment, every share together.
    pub runs: u64,
    /// What the experiment is; every part of one experiment has the same.
    pub experiment: T,
}

/// A line of a part after the header: one run, with its index in the whole experiment.
pub trait Indexed {
    /// The run's index.
    fn index(&self) -> u64;
}

/// What wrote a `--out` file, from its first line: `Some("phase")`, `Some("tune")`, or `None`
/// for a sweep's (or anything else, which the sweep's merge then refuses line by line).
pub fn kind_of(text: &str) -> Option<String> {
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    let value: serde_json::Value = serde_json::from_str(first).ok()?;
    value.get("kind")?.as_str().map(str::to_string)
}

/// A part as text: the header, then one JSON line per run, in the order given.
pub fn to_text<T: Serialize, R: Serialize>(
    kind: &str,
    partition: Partition,
    runs: u64,
    experiment: &T,
    lines: &[R],
) -> String {
    let header = Header {
        kind: kind.to_string(),
        partition: partition.to_string(),
        runs,
        experiment,
    };
    let mut out = serde_json::to_string(&header).expect("a header is plain data");
    out.push('\n');
    for line in lines {
        out.push_str(&serde_json::to_string(line).expect("a run is plain data"));
        out.push('\n');
    }
    out
}

/// The experiment and every run of the parts `files` (`(name, text)`) of a `kind`
/// experiment, the runs in index order; an error (one line, naming the file) when a file is
/// not such a part, when the parts are of different experiments, when a share is there twice
/// or missing, or when a run is not where its share says.
pub fn read_parts<T, R>(kind: &str, files: &[(String, String)]) -> Result<(T, Vec<R>), String>
where
    T: DeserializeOwned + PartialEq,
    R: DeserializeOwned + Indexed,
{
    let mut first: Option<(T, u64, u64, &str)> = None;
    let mut shares: BTreeMap<u64, &str> = BTreeMap::new();
    let mut runs: Vec<(R, String)> = Vec::new();
    for (name, text) in files {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (header, share) = header_of::<T>(kind, name, lines.next().map(|(_, l)| l))?;
        match &first {
            None => first = Some((header.experiment, header.runs, share.parts, name)),
            Some((experiment, total, parts, other)) => {
                if *experiment != header.experiment || *total != header.runs {
                    return Err(format!(
                        "{name}: a part of another {kind} than {other} (its command or scenario differs); merge the parts of one experiment"
                    ));
                }
                if *parts != share.parts {
                    return Err(format!(
                        "{name}: part {share}, but {other} is a part of {parts}; merge the parts of one split"
                    ));
                }
            }
        }
        if let Some(other) = shares.insert(share.part, name) {
            return Err(format!(
                "{other} and {name}: both are part {share} (the same part given twice?)"
            ));
        }
        for (n, line) in lines {
            let run: R = serde_json::from_str(line).map_err(|e| {
                format!("{name}:{}: not a run of a `resim {kind}` part: {e}", n + 1)
            })?;
            if !share.contains(run.index()) {
                return Err(format!(
                    "{name}:{}: run {} is not in part {share}",
                    n + 1,
                    run.index()
                ));
            }
            runs.push((run, format!("{name}:{}", n + 1)));
        }
    }
    let (experiment, total, parts, _) = first.ok_or("no parts given")?;
    let missing: Vec<String> = (1..=parts)
        .filter(|k| !shares.contains_key(k))
        .map(|k| format!("{k}/{parts}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "part {} missing: give every part of the {kind} (here {} of {parts})",
            missing.join(", "),
            shares.len()
        ));
    }
    Ok((experiment, every_run(kind, runs, total)?))
}

/// The header of the part `name` from its first line, and the share it claims.
fn header_of<T: DeserializeOwned>(
    kind: &str,
    name: &str,
    first: Option<&str>,
) -> Result<(Header<T>, Partition), String> {
    let head = first.ok_or_else(|| format!("{name}: empty; give the --out files of the parts"))?;
    let header: Header<T> = serde_json::from_str(head).map_err(|e| {
        format!("{name}:1: not the first line of a `resim {kind} --partition` part: {e}")
    })?;
    if header.kind != kind {
        return Err(format!(
            "{name}: a part of `resim {}`, not of `resim {kind}`; merge the parts of one experiment",
            header.kind
        ));
    }
    let share: Partition = header
        .partition
        .parse()
        .map_err(|e| format!("{name}:1: partition: {e}"))?;
    Ok((header, share))
}

/// `runs` (each with where it was read) in index order: an error when one is there twice, is
/// beyond the experiment's `total`, or when some are missing.
fn every_run<R: Indexed>(
    kind: &str,
    mut runs: Vec<(R, String)>,
    total: u64,
) -> Result<Vec<R>, String> {
    runs.sort_by_key(|(r, _)| r.index());
    for w in runs.windows(2) {
        if w[0].0.index() == w[1].0.index() {
            return Err(format!(
                "{} and {}: run {} is there twice",
                w[0].1,
                w[1].1,
                w[0].0.index()
            ));
        }
    }
    if let Some((r, at)) = runs.iter().find(|(r, _)| r.index() >= total) {
        return Err(format!(
            "{at}: run {} of a {kind} of {total} runs",
            r.index()
        ));
    }
    if runs.len() as u64 != total {
        return Err(format!(
            "{} of {total} runs in the parts; {} missing (a part was cut short?)",
            runs.len(),
            total - runs.len() as u64
        ));
    }
    Ok(runs.into_iter().map(|(r, _)| r).collect())
}

/// A number in a header, written as Rust writes it (the shortest text that reads back to the
/// same `f64`) and read with Rust's exact parser, so that every part and the merge hold the
/// very same number: serde_json's own float reading may be a unit in the last place off.
pub mod exact_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `value` as a string.
    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    /// Reads the string [`serialize`] wrote.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
