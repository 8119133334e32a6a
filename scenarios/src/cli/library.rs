//! The scenario library: the files of `scenarios/library/`, embedded so that `resim list`
//! and `resim run NAME` work from any directory, and what a name on the command line means
//! (a file, else a library scenario: [`open`], [`resolve`]).

use crate::format::error::ScenarioError;
use crate::format::limits::RunLimits;
use crate::format::overrides::{Overrides, Source};
use crate::format::schema::Scenario;

/// One library scenario: its name (the file stem) and its text.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The file stem, e.g. `retry-storm-no-jitter`.
    pub name: &'static str,
    /// The RON text.
    pub text: &'static str,
}

macro_rules! entries {
    ($($name:literal),* $(,)?) => {
        &[$(Entry { name: $name, text: include_str!(concat!("../../library/", $name, ".ron")) }),*]
    };
}

/// Every library scenario, in `resim list` order.
pub const LIBRARY: &[Entry] = entries![
    "retry-storm",
    "retry-storm-full-jitter",
    "retry-storm-budget",
    "cascading-failure",
    "cascading-failure-mitigated",
    "metastable-retry",
    "metastable-retry-budget",
    "metastable-retry-codel",
    "thundering-herd",
    "thundering-herd-full-jitter",
    "thundering-herd-cache",
    "thundering-herd-cache-coalesced",
    "bulkhead-isolation",
    "bulkhead-isolation-separate",
    "limiter-comparison",
    "shedding-codel-vs-pid-none",
    "shedding-codel-vs-pid-codel",
    "shedding-codel-vs-pid-pid",
    "noisy-neighbour",
    "criticality-shedding",
    "distributed-limiter-race",
    "limiter-store-outage",
    "quota-leases",
    "fan-out-tail",
    "occ-contention",
    "cache-expiry",
    "poison-pill",
    "poison-pill-cells",
    "poison-pill-shuffle-sharding",
    "autoscaler-lag",
    "autoscaler-lag-fast",
    "rolling-deploy",
    "rolling-deploy-headroom",
    "criticality-queue",
    "tenant-bulkhead",
    "shedding-codel-rfc",
    "gc-pause",
    "zone-failure",
    "liveness-death-spiral",
    "liveness-death-spiral-dedicated",
    "retry-after-429",
    "client-errors",
    "adaptive-timeout",
    "pool-exhaustion",
];

/// The scenario `resim` runs when given no file.
pub const DEFAULT_EXAMPLE: &str = "metastable-retry";

/// The library scenario called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Entry> {
    LIBRARY.iter().find(|e| e.name == name)
}

/// The one-line description of a library scenario (its `description` field).
pub fn headline(entry: &Entry) -> String {
    match crate::format::load::parse(entry.name, entry.text) {
        Ok(s) => s.description,
        // The library is tested to parse; say so rather than hide it if it ever does not.
        Err(e) => format!("(does not parse: {e})"),
    }
}

/// A file on disk, else the library scenario of that name, with `overrides` applied and
/// validated against `limits` (every variant of the file checked first): what every `resim`
/// command that takes a scenario reads.
pub fn resolve(
    file: &str,
    limits: &RunLimits,
    overrides: &Overrides,
) -> Result<Scenario, ScenarioError> {
    Ok(resolve_each(file, limits, std::slice::from_ref(overrides))?.remove(0))
}

/// [`resolve`] for several sets of overrides (the points of a grid): the file is read and
/// checked once.
pub fn resolve_each(
    file: &str,
    limits: &RunLimits,
    each: &[Overrides],
) -> Result<Vec<Scenario>, ScenarioError> {
    open(file)?.apply_each(limits, each)
}

/// A file on disk, else the library scenario of that name, read (not yet checked): what the
/// command line hands to the experiments as their [`Opener`](crate::experiment::Opener).
pub fn open(file: &str) -> Result<Source, ScenarioError> {
    if !std::path::Path::new(file).exists()
        && let Some(entry) = find(file)
    {
        return Source::read(entry.name, entry.text);
    }
    crate::format::load::read_source(file)
}
