//! `resim explore FILE --serve`: what-if on the user's machine. A local server gives the
//! run's page with the file's knobs (`--knob PATH=VALUES`) as controls; changing one re-runs
//! the scenario on the same seed with the file's `--set`s and the knobs, and the page shows
//! the new run beside the previous one.
//!
//! | module | what |
//! |---|---|
//! | this one | the command ([`explore`]): the knobs parsed, the file read once, how one run is made and shown ([`Rerun`] → [`Served`]), the progress it reports ([`Progress`]) |
//! | `server` | the server: bound to 127.0.0.1 only, its gate (Host, Origin, token), its routes, one run at a time |
//! | `http` | one HTTP/1.1 request read within limits, one response written |
//!
//! The server is generic over what it serves: it is given a [`RunFn`] that makes the page,
//! its data (JSON) and its digest from the knobs' overrides, and knows nothing of reports.
//! The page's script is `report/explore/serve.js`, after `window.RESIM_SERVE = {…};` (the
//! token, the knobs and their values, the routes): it draws the controls, posts a change,
//! polls `/progress` while the run goes, and redraws with `window.resimExplore.show(current,
//! previous)` where the page has it, else shows the new page beside the previous one.
//!
//! The token is drawn from the operating system's entropy: it guards the server, it is no
//! part of a simulation, and nothing of a run depends on it.

mod http;
mod server;

use super::args::ExploreArgs;
use super::library;
use crate::experiment::explore::{ExploreOptions, build_reporting};
use crate::experiment::tune::parse_param;
use crate::format::error::one_line;
use crate::format::limits::RunLimits;
use crate::format::overrides::{Flag, Override, Overrides};
use crate::report::explore::page;
use sim_core::SimTime;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The most knobs of one page.
pub const KNOBS_MAX: usize = 16;

/// One knob: a `--set` path and the values its control offers.
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    /// The path, as for `--set`.
    pub path: String,
    /// The values, as typed (RON).
    pub values: Vec<String>,
    /// Given as a range (`START..END[:STEP]`): a slider; else a list to choose from.
    pub range: bool,
}

impl Knob {
    /// `PATH=V1,V2,…` or `PATH=START..END[:STEP]` (as `resim tune --param` takes them); the
    /// error is the reason alone.
    pub fn parse(text: &str) -> Result<Knob, String> {
        let axis = parse_param(text)?;
        let range = text
            .split_once('=')
            .is_some_and(|(_, v)| v.contains("..") && !v.contains(','));
        Ok(Knob {
            path: axis.path,
            values: axis.values,
            range,
        })
    }
}

/// One run asked for: the knobs' overrides (only those set; the file's `--set`s come before
/// them), and the text of `window.RESIM_SERVE` for its page.
pub struct Rerun<'a> {
    /// The knobs' values as `--set` overrides.
    pub sets: &'a [Override],
    /// The JSON the page's script reads.
    pub serve: &'a str,
}

/// What a run gives the page: the page itself, its data, its digest and its replay command.
#[derive(Debug, Clone)]
pub struct Served {
    /// The whole page (with `serve.js`).
    pub page: String,
    /// The run's data as JSON text (what the page redraws from).
    pub data: String,
    /// The run's digest.
    pub digest: String,
    /// The command that replays the run.
    pub replay: String,
}

/// How one run is made: from its overrides, reporting its progress; the error is the
/// user's (a value the override validation refuses), said as `--set` says it.
pub type RunFn<'a> = dyn Fn(&Rerun, &Progress) -> Result<Served, String> + Sync + 'a;

/// How far the run going now is: events simulated and simulated time reached, updated every
/// [`PROGRESS_EVENTS`](crate::experiment::explore::PROGRESS_EVENTS) events, read by `GET /progress` (the page polls it).
#[derive(Debug, Default)]
pub struct Progress {
    running: AtomicBool,
    events: AtomicU64,
    simulated_ns: AtomicU64,
    duration_ns: AtomicU64,
}

impl Progress {
    /// A run of `duration_ns` starts.
    pub fn started(&self, duration_ns: u64) {
        self.events.store(0, Ordering::Relaxed);
        self.simulated_ns.store(0, Ordering::Relaxed);
        self.duration_ns.store(duration_ns, Ordering::Relaxed);
        self.running.store(true, Ordering::Relaxed);
    }

    /// The run has simulated `events` events, up to `now`.
    pub fn reached(&self, events: u64, now: SimTime) {
        self.events.store(events, Ordering::Relaxed);
        self.simulated_ns.store(now.as_nanos(), Ordering::Relaxed);
    }

    /// The run ended.
    pub fn ended(&self) {
        self.running.store(false, Ordering::Relaxed);
    }

    /// `{"running": …, "events": …, "simulated_s": …, "duration_s": …}`.
    pub fn json(&self) -> String {
        let seconds = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e9;
        serde_json::json!({
            "running": self.running.load(Ordering::Relaxed),
            "events": self.events.load(Ordering::Relaxed),
            "simulated_s": seconds(&self.simulated_ns),
            "duration_s": seconds(&self.duration_ns),
        })
        .to_string()
    }
}

/// `resim explore FILE --serve`: the knobs and the file checked (exit code 2 on bad input),
/// the first run made, the URL printed, then the server answers until Ctrl-C.
pub(super) fn explore(args: &ExploreArgs, limits: &RunLimits, limit_flags: &str) -> ExitCode {
    match serve_file(args, limits, limit_flags) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

fn serve_file(args: &ExploreArgs, limits: &RunLimits, limit_flags: &str) -> Result<(), String> {
    let file = &args.file;
    let base = args.overrides.overrides(file)?;
    let knobs = knobs_of(file, &args.knobs)?;
    let source = library::open(file).map_err(|e| e.to_string())?;
    let checked = source.check(limits).map_err(|e| e.to_string())?;
    // Every value a control offers is checked now, as `--set` would: a bad `--knob` is the
    // command's error, not a surprise on the page.
    for k in &knobs {
        for v in &k.values {
            let mut sets = base.sets.clone();
            sets.push(set(&k.path, v));
            let overrides = Overrides {
                variant: base.variant.clone(),
                sets,
            };
            source
                .apply(&checked, limits, &overrides)
                .map_err(|e| format!("--knob {}: {e}", k.path))?;
        }
    }
    let run = |rerun: &Rerun, progress: &Progress| -> Result<Served, String> {
        let mut overrides = base.clone();
        overrides.sets.extend_from_slice(rerun.sets);
        let scenario = source
            .apply(&checked, limits, &overrides)
            .map_err(|e| e.to_string())?;
        let options = ExploreOptions {
            seed: args.seed,
            duration: args.duration,
            max_events: args.max_events,
            variant: overrides.variant.clone(),
            sets: overrides.sets.iter().map(|s| s.to_string()).collect(),
            replay_flags: format!("{limit_flags}{}", overrides.command_line()),
        };
        progress.started(args.duration.unwrap_or(scenario.duration).as_nanos());
        let data = build_reporting(&scenario, file, &options, &|events, now| {
            progress.reached(events, now)
        })
        .map_err(|e| e.to_string())?;
        Ok(Served {
            page: page(std::slice::from_ref(&data), Some(rerun.serve)),
            data: serde_json::to_string(&data).expect("the explorer's data serialises"),
            digest: data.digest.clone(),
            replay: data.replay.clone(),
        })
    };
    let server = server::Server::bind(args.port)?;
    server.serve(knobs, &run, &|url| {
        println!("serving {file} at {url}");
        println!("(on 127.0.0.1 only; the page needs the token in this URL; Ctrl-C stops)");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
    })
}

/// The `--knob` texts as knobs, each error naming the flag and its text.
fn knobs_of(file: &str, texts: &[String]) -> Result<Vec<Knob>, String> {
    if texts.len() > KNOBS_MAX {
        return Err(format!(
            "{file}: {} knobs; at most {KNOBS_MAX} on one page",
            texts.len()
        ));
    }
    let mut knobs: Vec<Knob> = Vec::new();
    for text in texts {
        let knob =
            Knob::parse(text).map_err(|m| format!("{file}: --knob {}: {m}", one_line(text)))?;
        if knobs.iter().any(|k| k.path == knob.path) {
            return Err(format!(
                "{file}: --knob {}: this path is a knob already; give each knob once",
                one_line(text)
            ));
        }
        knobs.push(knob);
    }
    Ok(knobs)
}

fn set(path: &str, value: &str) -> Override {
    Override {
        path: path.to_string(),
        value: value.to_string(),
        flag: Flag::Set,
    }
}
