//! `resim explore FILE [OTHER] -o PAGE`: the run (and, with `--compare VARIANT`, the same seed
//! with that variant, or with `OTHER`, that file on the same seed) as the explorer's data,
//! written as one self-contained page (`--serve`, the same page from a local server, is
//! `serve.rs`).

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
    let out = args
        .out
        .as_deref()
        .expect("clap requires --out without --serve");
    let written = args.overrides.overrides(&args.file).and_then(|o| {
        let mut runs = vec![explored(
            &args.file,
            args.seed,
            args,
            limits,
            limit_flags,
            &o,
        )?];
        // The compared run: the same seed and `--set`s, with the variant or in the other file.
        let compared = match (&args.compare, &args.other) {
            (Some(variant), _) => Some((&args.file, Some(variant.clone()))),
            (None, Some(other)) => Some((other, None)),
            (None, None) => None,
        };
        if let Some((file, variant)) = compared {
            let overrides = Overrides {
                variant,
                sets: o.sets.clone(),
            };
            // The first run's seed, also when it is the file's own: common random numbers.
            let seed = Some(runs[0].seed);
            runs.push(explored(file, seed, args, limits, limit_flags, &overrides)?);
        }
        let html = page(&runs, None);
        std::fs::write(out, &html).map_err(|e| format!("{out}: cannot write: {e}"))?;
        Ok(summary(&runs, out, html.len()))
    });
    if let Ok(text) = &written
        && !emit(text)
    {
        return ExitCode::SUCCESS;
    }
    printed(written.map(|_| String::new()))
}

/// One run of `file` at `seed` with `overrides` (and `args`' duration and budget), as the
/// explorer's data.
fn explored(
    file: &str,
    seed: Option<u64>,
    args: &ExploreArgs,
    limits: &RunLimits,
    limit_flags: &str,
    overrides: &Overrides,
) -> Result<ExploreData, String> {
    let scenario = resolve(file, limits, overrides).map_err(|e| e.to_string())?;
    let options = ExploreOptions {
        seed,
        duration: args.duration,
        max_events: args.max_events,
        variant: overrides.variant.clone(),
        sets: overrides.sets.iter().map(|s| s.to_string()).collect(),
        replay_flags: format!("{limit_flags}{}", overrides.command_line()),
    };
    build(&scenario, file, &options).map_err(|e| e.to_string())
}

/// What `resim explore` prints: the page written, and what it holds.
fn summary(runs: &[ExploreData], out: &str, bytes: usize) -> String {
    let r = &runs[0];
    let compared = runs.get(1).map_or(String::new(), |c| match &c.variant {
        Some(variant) => format!(", compared with variant {variant} (digest {})", c.digest),
        None => format!(", compared with {} (digest {})", c.scenario, c.digest),
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
