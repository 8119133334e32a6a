//! What scenarios' integration tests share: running the `resim` binary ([`resim`],
//! [`resim_in`]), parsing a scenario and running it ([`run_text`], [`run_file_text`],
//! [`run_library`], [`run_library_with`]), the JSON of a report ([`json`], [`with_json`]),
//! and finding things in a report ([`service_report`], [`client_report`], [`call_report`],
//! [`class_report`], [`latency`], and the failure counts by reason [`failures`],
//! [`client_failures`], [`class_failures`]).
//!
//! A test file uses it with `mod support;`. It is a module, not a crate: each test binary
//! compiles its own copy and uses only some of the helpers, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod schema;

use scenarios::cli::library::find;
use scenarios::format::limits::RunLimits;
use scenarios::format::load::parse;
use scenarios::format::overrides::{Override, Overrides, parse_overridden};
use scenarios::report::{
    CallReport, ClassReport, ClientReport, Format, LatencyMs, Report, ServiceReport,
};
use scenarios::{RunOptions, Scenario, run};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one invocation of `resim` gave back.
pub struct Resim {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `resim ARGS` run from the crate's directory (`scenarios/`).
pub fn resim(args: &[&str]) -> Resim {
    resim_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// `resim ARGS` run from `dir`: the workspace root for commands that name files as a reader
/// of the book types them, a scratch directory for commands that write files.
pub fn resim_in(dir: &Path, args: &[&str]) -> Resim {
    let out = Command::new(env!("CARGO_BIN_EXE_resim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("resim runs");
    Resim {
        code: out.status.code().expect("resim exits by itself"),
        stdout: String::from_utf8(out.stdout).expect("resim's stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("resim's stderr is UTF-8"),
    }
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("scenarios/ is in the workspace")
        .to_path_buf()
}

/// Parses `text` as the file `file` and runs it with `options`.
pub fn run_file_text(file: &str, text: &str, options: &RunOptions) -> Report {
    let scenario = parse(file, text).unwrap_or_else(|e| panic!("{e}"));
    run(&scenario, file, options)
        .unwrap_or_else(|e| panic!("{e}"))
        .report
}

/// Parses and runs a scenario written for the test (as `test.ron`) at its own seed.
pub fn run_text(text: &str) -> Report {
    run_file_text("test.ron", text, &RunOptions::default())
}

/// Parses and runs a scenario written for the test (as `test.ron`) at `seed`.
pub fn run_text_at(text: &str, seed: u64) -> Report {
    run_file_text("test.ron", text, &at_seed(Some(seed)))
}

/// Run options that differ from the defaults only in the seed (`None`: the file's own).
pub fn at_seed(seed: Option<u64>) -> RunOptions {
    RunOptions {
        seed,
        ..RunOptions::default()
    }
}

/// Library scenario `name` as `resim run NAME --variant V --set PATH=VALUE...` reads it.
pub fn library_scenario(name: &str, variant: Option<&str>, sets: &[(&str, &str)]) -> Scenario {
    let entry = find(name).unwrap_or_else(|| panic!("{name} is in the library"));
    let overrides = Overrides {
        variant: variant.map(str::to_string),
        sets: sets
            .iter()
            .map(|(path, value)| Override {
                path: path.to_string(),
                value: value.to_string(),
                ..Override::default()
            })
            .collect(),
    };
    parse_overridden(entry.name, entry.text, &RunLimits::default(), &overrides)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs library scenario `name` at its own seed.
pub fn run_library(name: &str) -> Report {
    run_library_with(name, None, &[], None)
}

/// Runs library scenario `name` with `variant` and `sets` applied, at `seed` (`None`: its
/// own).
pub fn run_library_with(
    name: &str,
    variant: Option<&str>,
    sets: &[(&str, &str)],
    seed: Option<u64>,
) -> Report {
    let scenario = library_scenario(name, variant, sets);
    run(&scenario, name, &at_seed(seed))
        .unwrap_or_else(|e| panic!("{e}"))
        .report
}

/// The report as the JSON `resim run --json` prints.
pub fn json(report: &Report) -> Value {
    serde_json::from_str(&Format::Json.render(report)).expect("the JSON report parses")
}

/// The report of service `name`.
pub fn service_report<'a>(r: &'a Report, name: &str) -> &'a ServiceReport {
    r.services
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no service {name}"))
}

/// The report of client `name`.
pub fn client_report<'a>(r: &'a Report, name: &str) -> &'a ClientReport {
    r.clients
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no client {name}"))
}

/// The report of the call site at `path` (`services.api.calls[0]`).
pub fn call_report<'a>(r: &'a Report, path: &str) -> &'a CallReport {
    r.calls
        .iter()
        .find(|c| c.path == path)
        .unwrap_or_else(|| panic!("no call site {path}"))
}

/// The report of the class `class` of client `client`.
pub fn class_report<'a>(r: &'a Report, client: &str, class: &str) -> &'a ClassReport {
    client_report(r, client)
        .classes
        .iter()
        .find(|k| k.name == class)
        .unwrap_or_else(|| panic!("no class {class} in client {client}"))
}

/// The clients' latency figures (the run had successes).
pub fn latency(r: &Report) -> &LatencyMs {
    r.summary
        .latency_ms
        .as_ref()
        .expect("some requests succeeded")
}

/// The requests of the whole run that failed for `reason`.
pub fn failures(r: &Report, reason: &str) -> u64 {
    r.summary
        .failures_by_reason
        .get(reason)
        .copied()
        .unwrap_or(0)
}

/// The requests of client `c` that failed for `reason`.
pub fn client_failures(c: &ClientReport, reason: &str) -> u64 {
    c.failures_by_reason.get(reason).copied().unwrap_or(0)
}

/// The requests of class `c` that failed for `reason`.
pub fn class_failures(c: &ClassReport, reason: &str) -> u64 {
    c.traffic
        .failures_by_reason
        .get(reason)
        .copied()
        .unwrap_or(0)
}

/// The report and its JSON, for tests that read both.
pub fn with_json(report: Report) -> (Report, Value) {
    let value = json(&report);
    (report, value)
}
