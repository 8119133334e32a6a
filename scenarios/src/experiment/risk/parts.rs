//! `resim risk` as the command line runs it ([`command`]), and its `--out` parts: a share's
//! plain runs or replications, each line with its index in the plan, and `resim merge` of
//! them ([`merge`], [`merged`]) back to the estimate one machine makes.

use super::plain::PlainRun;
use super::replication::Replication;
use super::{Choice, Plan, Risk, RiskOutput, render, run};
use crate::experiment::Opener;
use crate::experiment::part;
use crate::experiment::partition::Partition;
use crate::format::limits::RunLimits;
use serde::{Deserialize, Serialize};

/// The kind of a risk part's header (`resim merge` tells experiments apart by it).
pub const PART_KIND: &str = "risk";

/// A line of a risk part: a plain run past the pilot, or a replication, with its index
/// among those of the plan (a plain run's counts from the first past the pilot).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// Its index in the plan.
    pub index: u64,
    /// The run or the replication.
    pub item: Item,
}

/// What a line holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Item {
    /// A plain run.
    Run(PlainRun),
    /// A replication.
    Replication(Replication),
}

impl part::Indexed for Line {
    fn index(&self) -> u64 {
        self.index
    }
}

/// What a part's header holds besides the share: the command, and what every share decided
/// the same way (the pilot and the plan).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartExperiment {
    /// The command.
    pub command: Risk,
    /// The scenario's name.
    pub scenario: String,
    /// The importance function used.
    pub importance: String,
    /// The pilot and the plan.
    pub choice: Choice,
}

/// This share of the estimate as a part for `resim merge`.
pub fn to_part(output: &RiskOutput, partition: Partition) -> String {
    let from = output.choice.pilot.len() as u64;
    let (total, lines): (u64, Vec<Line>) = match &output.choice.plan {
        Plan::Plain { runs } => (
            *runs - from,
            output
                .runs
                .iter()
                .map(|r| Line {
                    index: r.index - from,
                    item: Item::Run(r.clone()),
                })
                .collect(),
        ),
        Plan::Splitting { replications, .. } => (
            *replications,
            output
                .replications
                .iter()
                .map(|r| Line {
                    index: r.index,
                    item: Item::Replication(r.clone()),
                })
                .collect(),
        ),
    };
    let experiment = PartExperiment {
        command: output.command.clone(),
        scenario: output.scenario.clone(),
        importance: output.importance.clone(),
        choice: output.choice.clone(),
    };
    part::to_text(PART_KIND, partition, total, &experiment, &lines)
}

/// The whole estimate from the parts of every share (`(name, text)`).
pub fn merge(files: &[(String, String)]) -> Result<RiskOutput, String> {
    let (experiment, lines): (PartExperiment, Vec<Line>) = part::read_parts(PART_KIND, files)?;
    let mut runs = Vec::new();
    let mut replications = Vec::new();
    for line in lines {
        match line.item {
            Item::Run(r) => runs.push(r),
            Item::Replication(r) => replications.push(r),
        }
    }
    Ok(RiskOutput {
        command: experiment.command,
        scenario: experiment.scenario,
        importance: experiment.importance,
        choice: experiment.choice,
        runs,
        replications,
    })
}

/// How this process runs an estimate (nothing here changes the answer).
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// Print JSON.
    pub json: bool,
    /// `--out`: where the part goes.
    pub out: Option<String>,
    /// `-j`.
    pub jobs: Option<usize>,
    /// `--partition`.
    pub partition: Option<Partition>,
}

/// `resim risk` as the command line runs it: the estimate, printed, or this share's part
/// written to `--out`.
pub fn command(
    command: &Risk,
    flags: &Flags,
    open: Opener,
    limits: &RunLimits,
) -> Result<crate::experiment::command::Outcome, String> {
    let source = open(&command.file).map_err(|e| e.to_string())?;
    let command = Risk {
        fingerprint: source.fingerprint(),
        ..command.clone()
    };
    let output = run(
        &command,
        (open, limits),
        flags.jobs,
        flags.partition,
        &super::Control::default(),
    )?;
    if let Some(path) = &flags.out {
        let share = flags.partition.unwrap_or(Partition { part: 1, parts: 1 });
        std::fs::write(path, to_part(&output, share))
            .map_err(|e| format!("{path}: cannot write: {e}"))?;
        if let Some(share) = flags.partition {
            let made = output.runs.len() + output.replications.len();
            return Ok(crate::experiment::command::Outcome {
                text: format!(
                    "{}: part {share} of the estimate ({made} {}) written to {path}; `resim merge` the parts for the estimate\n",
                    command.file,
                    if output.runs.is_empty() {
                        "replications"
                    } else {
                        "plain runs"
                    }
                ),
                passed: true,
            });
        }
    }
    Ok(printed(&output, flags.json))
}

fn printed(output: &RiskOutput, json: bool) -> crate::experiment::command::Outcome {
    let answer = render::answer(output);
    crate::experiment::command::Outcome {
        text: if json {
            render::json(&answer) + "\n"
        } else {
            render::text(&answer)
        },
        passed: true,
    }
}

/// `resim merge` of a risk estimate's parts: what the unsplit command prints.
pub fn merged(
    files: &[(String, String)],
    json: bool,
) -> Result<crate::experiment::command::Outcome, String> {
    Ok(printed(&merge(files)?, json))
}
