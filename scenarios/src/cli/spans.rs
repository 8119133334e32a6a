//! `resim run --spans FILE`: the run, with every request it samples written as a trace to
//! FILE as the request ends. The file is written under a temporary name beside FILE and
//! renamed once complete, so a run that fails leaves nothing half-written.

use crate::figures::Followed;
use crate::format::schema::Scenario;
use crate::report::spans::{SpanFormat, SpanWriter, trace_of};
use crate::run::{RunOptions, RunOutput, run, run_streaming};
use sim_core::SimTime;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Where and how `--spans` writes.
pub(super) struct SpansFlags<'a> {
    pub(super) path: &'a str,
    pub(super) format: &'a str,
    pub(super) sample: f64,
}

/// The temporary file beside `path` that becomes it once complete.
fn partial(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "spans".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.partial"))
}

/// Runs `scenario`, writing its sampled requests as traces when `flags` ask; the error
/// says what went wrong in the user's words (a scenario's error, or a file that cannot be
/// written), and leaves no file behind.
pub(super) fn run_with_spans(
    scenario: &Scenario,
    file: &str,
    options: &RunOptions,
    flags: Option<SpansFlags>,
) -> Result<RunOutput, String> {
    let Some(flags) = flags else {
        return run(scenario, file, options).map_err(|e| e.to_string());
    };
    let format = SpanFormat::ALL
        .iter()
        .find(|(name, _)| *name == flags.format)
        .map(|(_, f)| *f)
        .expect("clap checks the format's name");
    let path = Path::new(flags.path);
    let temporary = partial(path);
    let cannot = |e: std::io::Error| {
        format!(
            "--spans {}: cannot write: {e}; give a path in a directory you can write to",
            flags.path
        )
    };
    let out = File::create(&temporary).map_err(cannot)?;
    let mut writer = SpanWriter::new(BufWriter::new(out), format).map_err(cannot)?;
    let options = RunOptions {
        sample_requests: Some(flags.sample),
        ..options.clone()
    };
    let seed = options.seed.unwrap_or(scenario.seed);
    let mut failed = None;
    let mut write = |f: Followed, stopped: Option<SimTime>| {
        if failed.is_none()
            && let Err(e) = writer.write(&trace_of(&f, seed, stopped))
        {
            failed = Some(e);
        }
    };
    let ran = run_streaming(scenario, file, &options, &mut write);
    let finished = match (ran, failed) {
        (Err(e), _) => Err(e.to_string()),
        (Ok(_), Some(e)) => Err(cannot(e)),
        (Ok(out), None) => writer
            .finish()
            .and_then(|(w, traces, spans)| {
                let f = w.into_inner().map_err(|e| e.into_error())?;
                f.sync_all()?;
                std::fs::rename(&temporary, path)?;
                eprintln!(
                    "wrote {}: {traces} requests as traces, {spans} spans ({})",
                    flags.path, flags.format
                );
                Ok(out)
            })
            .map_err(cannot),
    };
    if finished.is_err() {
        // Nothing half-written: the temporary file goes (it may not exist).
        let _ = std::fs::remove_file(&temporary);
    }
    finished
}
