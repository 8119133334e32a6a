//! Which share of a sweep's runs this process makes: [`Partition`] (`--partition K/N`, run
//! `i` belongs to share `i mod N + 1`) and [`PartitionSpec`], the flag as typed, which may
//! also be `auto` or `auto/N`: the share then comes from the array index a batch scheduler
//! gives each of its tasks, so one job definition runs every share unchanged.
//!
//! | scheduler | index (from 0) | number of shares |
//! |---|---|---|
//! | Slurm job array (`sbatch --array`) | `(SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP` | `SLURM_ARRAY_TASK_COUNT` |
//! | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` | the `N` of `auto/N` (the Job's `completions`; Kubernetes does not put it in the environment) |
//! | AWS Batch array job | `AWS_BATCH_JOB_ARRAY_INDEX` | `AWS_BATCH_JOB_ARRAY_SIZE` |
//!
//! The environment is read by the command line and handed here as a lookup, so what a
//! variable means is decided (and tested) in one place. Nothing here touches a simulation:
//! the share only decides which runs this process makes, never what a run does.

use std::fmt;
use std::str::FromStr;

/// `--partition K/N`: this process makes the runs whose index is `K − 1` modulo `N` (as
/// cargo-nextest counts: K from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// Which share, from 1.
    pub part: u64,
    /// How many shares.
    pub parts: u64,
}

impl Partition {
    /// Whether run `index` is in this share.
    pub fn contains(&self, index: u64) -> bool {
        index % self.parts == self.part - 1
    }
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{text:?}: write a partition as K/N with 1 ≤ K ≤ N, e.g. 1/2, or auto to take it from a batch scheduler's array index"
            )
        };
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let (part, parts) = (
            k.trim().parse::<u64>().map_err(|_| bad())?,
            n.trim().parse::<u64>().map_err(|_| bad())?,
        );
        if part == 0 || part > parts {
            return Err(bad());
        }
        Ok(Partition { part, parts })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.part, self.parts)
    }
}

/// `--partition` as typed: a share given outright, or `auto` (`auto/N`) to take it from the
/// environment of a batch scheduler's array task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionSpec {
    /// `K/N`.
    Given(Partition),
    /// `auto` or `auto/N`: the index from the scheduler, the number of shares from it or
    /// from `N`.
    Auto {
        /// The `N` of `auto/N`, if given.
        parts: Option<u64>,
    },
}

impl FromStr for PartitionSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let Some(rest) = text.trim().strip_prefix("auto") else {
            return text.parse().map(PartitionSpec::Given);
        };
        if rest.is_empty() {
            return Ok(PartitionSpec::Auto { parts: None });
        }
        match rest.strip_prefix('/').map(|n| n.trim().parse::<u64>()) {
            Some(Ok(n)) if n >= 1 => Ok(PartitionSpec::Auto { parts: Some(n) }),
            _ => Err(format!(
                "{text:?}: write auto, or auto/N with N ≥ 1 the number of array tasks, e.g. auto/10"
            )),
        }
    }
}

/// What one scheduler's array variables say: the task's index from 0 and, if the scheduler
/// gives it, the number of tasks.
struct Found {
    scheduler: &'static str,
    index: u64,
    count: Option<u64>,
}

impl PartitionSpec {
    /// The share this process makes; `env` looks a variable up (the command line passes the
    /// process environment). The error says what is missing or inconsistent and how to fix it.
    pub fn resolve(self, env: &dyn Fn(&str) -> Option<String>) -> Result<Partition, String> {
        let given = match self {
            PartitionSpec::Given(p) => return Ok(p),
            PartitionSpec::Auto { parts } => parts,
        };
        let found: Vec<Found> = [slurm(env), kubernetes(env), aws_batch(env)]
            .into_iter()
            .filter_map(Result::transpose)
            .collect::<Result<_, _>>()?;
        let found = match found.as_slice() {
            [one] => one,
            [] => {
                return Err(
                    "--partition auto: no array task in the environment (looked for Slurm's SLURM_ARRAY_TASK_ID, Kubernetes' JOB_COMPLETION_INDEX, AWS Batch's AWS_BATCH_JOB_ARRAY_INDEX); run it as an array task, or give the share as --partition K/N"
                        .to_string(),
                );
            }
            several => {
                let names: Vec<&str> = several.iter().map(|f| f.scheduler).collect();
                return Err(format!(
                    "--partition auto: the environment holds the array variables of {}; which one runs this process is unclear, give the share as --partition K/N",
                    names.join(" and ")
                ));
            }
        };
        let parts = match (found.count, given) {
            (Some(n), Some(g)) if n != g => {
                return Err(format!(
                    "--partition auto/{g}: {} says there are {n} array tasks, not {g}; write auto/{n}, or auto alone",
                    found.scheduler
                ));
            }
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) => {
                return Err(format!(
                    "--partition auto: {} gives this task's index ({}) but not the number of tasks; write auto/N with N the number of tasks (a Kubernetes Job's completions)",
                    found.scheduler, found.index
                ));
            }
        };
        if found.index >= parts {
            return Err(format!(
                "--partition auto: {} gives index {} of {parts} tasks (indices run from 0 to {}); give the number of tasks the array has",
                found.scheduler,
                found.index,
                parts - 1
            ));
        }
        Ok(Partition {
            part: found.index + 1,
            parts,
        })
    }
}

/// The value of `name` as a whole number, if it is set; an error if it is set to anything else.
fn number(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<u64>, String> {
    env(name)
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| format!("--partition auto: {name}={v:?} is not a whole number"))
        })
        .transpose()
}

/// A Slurm job array task: ids may start anywhere and step (`--array=1-100:3`), so the
/// index counts tasks from the array's first id.
fn slurm(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Found>, String> {
    let Some(id) = number(env, "SLURM_ARRAY_TASK_ID")? else {
        return Ok(None);
    };
    let min = number(env, "SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
    let step = number(env, "SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
    if id < min || (id - min) % step != 0 {
        return Err(format!(
            "--partition auto: SLURM_ARRAY_TASK_ID={id} is not a task of an array from {min} by {step}"
        ));
    }
    Ok(Some(Found {
        scheduler: "Slurm (SLURM_ARRAY_TASK_ID)",
        index: (id - min) / step,
        count: number(env, "SLURM_ARRAY_TASK_COUNT")?,
    }))
}

/// A pod of a Kubernetes Indexed Job: the index only.
fn kubernetes(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Found>, String> {
    Ok(number(env, "JOB_COMPLETION_INDEX")?.map(|index| Found {
        scheduler: "Kubernetes (JOB_COMPLETION_INDEX)",
        index,
        count: None,
    }))
}

/// A child of an AWS Batch array job.
fn aws_batch(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Found>, String> {
    let Some(index) = number(env, "AWS_BATCH_JOB_ARRAY_INDEX")? else {
        return Ok(None);
    };
    Ok(Some(Found {
        scheduler: "AWS Batch (AWS_BATCH_JOB_ARRAY_INDEX)",
        index,
        count: number(env, "AWS_BATCH_JOB_ARRAY_SIZE")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(flag: &str, vars: &[(&str, &str)]) -> Result<String, String> {
        let spec: PartitionSpec = flag.parse()?;
        let env = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        spec.resolve(&env).map(|p| p.to_string())
    }

    #[test]
    fn a_given_share_is_kept_and_checked() {
        assert_eq!(
            resolve("2/3", &[("JOB_COMPLETION_INDEX", "0")]).unwrap(),
            "2/3"
        );
        assert!(resolve("0/2", &[]).is_err());
        assert!(resolve("3/2", &[]).is_err());
        assert!(
            resolve("auto/0", &[])
                .unwrap_err()
                .contains("auto/N with N ≥ 1")
        );
        assert!(resolve("autox", &[]).is_err());
    }

    #[test]
    fn each_scheduler_gives_the_share_from_its_index() {
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "7"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_STEP", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        // Ids 1, 4, 7, 10: id 7 is the third task.
        assert_eq!(resolve("auto", &slurm).unwrap(), "3/4");
        assert_eq!(resolve("auto/4", &slurm).unwrap(), "3/4");
        let k8s = [("JOB_COMPLETION_INDEX", "9")];
        assert_eq!(resolve("auto/10", &k8s).unwrap(), "10/10");
        let aws = [
            ("AWS_BATCH_JOB_ARRAY_INDEX", "0"),
            ("AWS_BATCH_JOB_ARRAY_SIZE", "5"),
        ];
        assert_eq!(resolve("auto", &aws).unwrap(), "1/5");
    }

    #[test]
    fn what_is_missing_or_inconsistent_is_said() {
        let none = resolve("auto", &[]).unwrap_err();
        assert!(none.contains("JOB_COMPLETION_INDEX") && none.contains("--partition K/N"));
        let k8s = resolve("auto", &[("JOB_COMPLETION_INDEX", "3")]).unwrap_err();
        assert!(k8s.contains("write auto/N"), "{k8s}");
        let out = resolve("auto/3", &[("JOB_COMPLETION_INDEX", "3")]).unwrap_err();
        assert!(out.contains("index 3 of 3 tasks"), "{out}");
        let aws = [
            ("AWS_BATCH_JOB_ARRAY_INDEX", "1"),
            ("AWS_BATCH_JOB_ARRAY_SIZE", "5"),
        ];
        let differ = resolve("auto/4", &aws).unwrap_err();
        assert!(differ.contains("5 array tasks, not 4"), "{differ}");
        let both = [
            ("JOB_COMPLETION_INDEX", "1"),
            ("AWS_BATCH_JOB_ARRAY_INDEX", "1"),
        ];
        assert!(resolve("auto/4", &both).unwrap_err().contains("Kubernetes"));
        let bad = resolve("auto/4", &[("JOB_COMPLETION_INDEX", "x")]).unwrap_err();
        assert!(bad.contains("not a whole number"), "{bad}");
        let off = [("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_STEP", "4")];
        assert!(resolve("auto/4", &off).unwrap_err().contains("not a task"));
    }
}
