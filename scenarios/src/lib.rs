//! scenarios: the scenario format of resim, its validation, the simulated world, reports and
//! the `resim` command line.
//!
//! The main types:
//!
//! - [`Scenario`] (in [`format::schema`]): what a `.ron` file says — clients, services, the
//!   calls between them with their pattern stacks, an optional sim-net network, a fault
//!   timeline, expectations. Pattern configurations are the `patterns` crate's own types, under their
//!   own names and defaults.
//! - [`format::load::parse`] / [`format::load::load`]: text → validated [`Scenario`], or a
//!   one-line [`ScenarioError`]: `file:line:column: message` for syntax, `file: field.path:
//!   reason` for meaning.
//! - [`world::World`]: the simulated world, one `sim_core` entity that holds every client,
//!   service, replica, call and job, driven by [`world::Msg`] events.
//! - [`run()`]: a scenario, a seed and overrides ([`RunOptions`]) in; a [`RunOutput`] with a
//!   [`Report`] out, within the run's event budget and time limit; [`report::Format`]
//!   renders it (human, JSON, CSV, compact).
//! - [`cli::library`]: the canonical failures, embedded from `scenarios/library/*.ron`.
//!
//! Module map, one layer per row from the bottom up. A layer uses only layers of the rows
//! before its own, and not every one of them: `format ← figures.rs ← world`; `figures.rs ← report` (the
//! report is built from the figures, never from the world); `world, report ← run ←
//! experiment ← cli`; `format ← import`, and `format, import ← export ← experiment, cli`. Each folder's `mod.rs` opens with its rule, and the tidy test
//! `layers_use_only_the_layers_below_them` (`scenarios/tests/suite/tidy.rs`) fails on an import
//! against it.
//!
//! | layer | modules | what |
//! |---|---|---|
//! | [`format`](mod@format) | [`format::schema`] (its parts: [`answers`](format::schema::answers), [`capacity`](format::schema::capacity), [`contention`](format::schema::contention), [`distributed`](format::schema::distributed), [`isolation`](format::schema::isolation), [`pool`](format::schema::pool), [`scaling`](format::schema::scaling), [`traffic`](format::schema::traffic)), [`format::load`], [`format::overrides`], [`format::read`], [`format::validate`], [`format::verdict`], [`format::limits`], [`format::footprint`], [`format::warnings`], [`format::error`] | the file format: what a file may say, how it is read, overridden, validated, held to its limits, and the settings of its verdict |
//! | [`import`] | [`import::model`] ([`merge`](import::model::merge), [`table`](import::model::table)), [`import::tree`], [`import::node`], [`import::ledger`], [`import::ron`] | `resim import`: production configurations (Envoy, Istio, resilience4j, gRPC) read into one neutral model of a system, with the origin of every value, and written as scenario RON with a mapping table; beside the format, above it |
//! | [`export`] | | `resim export` and `tune --export`: one call of a scenario written back as Envoy, Istio, resilience4j or gRPC configuration, with the table of what went where and what was not exported; above the format and the import |
//! | [`figures`] | | the plain data a finished run hands over: the world's boundary |
//! | [`world`] | [`world::msg`], [`world::stack`], [`world::traffic`] (and private modules, one per thing that owns state) | clients, balancers, services, calls, caches, faults on sim-core (and sim-net) |
//! | [`report`] | [`report::metastability`], [`report::render`] ([`report::render::charts`](mod@report::render::charts), [`report::render::charts::heatmap`]), [`report::spans`] | the report built from the figures, verdicts on expectations, one renderer per format; followed requests written as traces |
//! | [`run`](mod@run) | | one run within its limits: the world built, run, and reported |
//! | [`experiment`] | [`experiment::plan`], [`experiment::sweep`], [`experiment::stats`], [`experiment::command`], [`experiment::compare`], [`experiment::phase`], [`experiment::shrink`] ([`pretty`](experiment::shrink::pretty), [`reduce`](experiment::shrink::reduce)), [`experiment::determinism`] | many runs: sweeps over seeds and grids in parallel, their statistics, comparisons, phase maps, shrinking, a run made twice |
//! | [`cli`] | [`cli::library`] | the `resim` command line: its arguments, the dispatch, the embedded library and what a name means (a file, else a library scenario) |
//!
//! Which `patterns` machines the world runs: retry policy (backoff, jitter, budgets,
//! Retry-After, operation safety), circuit breaker, bulkhead (refusing or waiting), rate
//! limiters (all kinds), adaptive throttling, hedging, fallback chains, idempotency-key stores,
//! concurrency limits (fixed, AIMD, Vegas, Gradient2, Envoy gradient), the PID shedder, CoDel
//! for RPC queues with adaptive LIFO, single-flight coalescing, and, reading a request's
//! class and tenant ([`format::schema::traffic`]), the priority shedder, limiters keyed per
//! tenant, composite (peek then commit) and shadow limits, with each request's cost, CoDel in
//! its RFC 8289 form as a queue discipline (`CoDelRfc`), and adaptive per-attempt timeouts.
//!
//! Only this crate does I/O in resim, and only at its edges: [`format::load::load`] reads a
//! file and the command line ([`cli`]) writes reports.
//!
//! ```
//! use scenarios::{RunOptions, format::load::parse, run};
//!
//! let text = r#"
//! Scenario(
//!     name: "one-server",
//!     duration: "10s",
//!     clients: { "c": (load: Open(rate: Constant("50/s")), call: (target: "s", timeout: "1s")) },
//!     services: { "s": (workers: 2, work: Exponential(mean: "10ms")) },
//!     expectations: [GoodputAtLeast(client: "c", after: "0s", min_ratio: 0.99)],
//! )"#;
//! let scenario = parse("one-server.ron", text).unwrap();
//! let out = run(&scenario, "one-server.ron", &RunOptions { seed: Some(7), ..RunOptions::default() }).unwrap();
//! assert!(out.report.passed());
//! assert_eq!(out.report.stop_reason, "time_limit");
//! // The same seed replays to the same digest.
//! let again = run(&scenario, "one-server.ron", &RunOptions { seed: Some(7), ..RunOptions::default() }).unwrap();
//! assert_eq!(out.report.digest, again.report.digest);
//! ```

pub mod cli;
pub mod experiment;
pub mod export;
pub mod figures;
pub mod format;
pub mod import;
pub mod report;
pub mod run;
pub mod world;

pub use format::error::ScenarioError;
pub use format::schema::{Scenario, Series};
pub use report::Report;
pub use run::{Cancel, RunOptions, RunOutput, run};
