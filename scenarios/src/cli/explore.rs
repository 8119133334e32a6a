//! `resim explore FILE -o PAGE`: the run (and, with `--compare VARIANT`, the same seed with
//! that variant) as the explorer's data, written as one self-contained page.

use super::args::ExploreArgs;
use super::library::resolve;
use super::{emit, printed};
use crate::experiment::explore::{ExploreOptions, build};
use crate::format::limits::RunLimits;
use crate::format::overrides::Overrides;
use crate::report::explore::{ExploreData, page};
use std::process::ExitCode;

/// Writes the page; exit code 0 (whatever the run's expectations say), 2 on bad input or a
/// page that cannot be written.
pub(super) fn explore_file(args: &ExploreArgs, limits: &RunLimits, limit_flags: &str) -> ExitCode {
    let written = args.overrides.overrides(&args.file).and_then(|o| {
        let mut runs = vec![explored(args, limits, limit_flags, &o)?];
        if let Some(variant) = &args.compare {
            let compared = Overrides {
                variant: Some(variant.clone()),
                sets: o.sets.clone(),
            };
            runs.push(explored(args, limits, limit_flags, &compared)?);
        }
        let html = page(&runs, None);
        std::fs::write(&args.out, &html).map_err(|e| format!("{}: cannot write: {e}", args.out))?;
        Ok(summary(&runs, &args.out, html.len()))
    });
    if let Ok(text) = &written
        && !emit(text)
    {
        return ExitCode::SUCCESS;
    }
    printed(written.map(|_| String::new()))
}

/// One run of `args.file` with `overrides`, as the explorer's data.
fn explored(
    args: &ExploreArgs,
    limits: &RunLimits,
    limit_flags: &str,
    overrides: &Overrides,
) -> Result<ExploreData, String> {
    let scenario = resolve(&args.file, limits, overrides).map_err(|e| e.to_string())?;
    let options = ExploreOptions {
        seed: args.seed,
        duration: args.duration,
        variant: overrides.variant.clone(),
        sets: overrides.sets.iter().map(|s| s.to_string()).collect(),
        replay_flags: format!("{limit_flags}{}", overrides.command_line()),
    };
    build(&scenario, &args.file, &options).map_err(|e| e.to_string())
}

/// What `resim explore` prints: the page written, and what it holds.
fn summary(runs: &[ExploreData], out: &str, bytes: usize) -> String {
    let r = &runs[0];
    let compared = runs.get(1).map_or(String::new(), |c| {
        format!(
            ", compared with variant {} (digest {})",
            c.variant.as_deref().unwrap_or("-"),
            c.digest
        )
    });
    format!(
        "wrote {out} ({:.1} MB): {} · seed {} · digest {}{compared} · {} buckets, {} sampled requests ({} failed, {} slow; {} with their tree), why for {} windows\nopen it in a browser; replay: {}\n",
        bytes as f64 / 1e6,
        r.scenario,
        r.seed,
        r.digest,
        r.t_s.len(),
        r.samples.len(),
        r.samples.iter().filter(|s| s.reason != "slow").count(),
        r.samples.iter().filter(|s| s.reason == "slow").count(),
        r.trees.len(),
        r.why_windows.len() + r.why_grid.len(),
        r.replay
    )
}
