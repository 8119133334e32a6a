//! scenarios: the scenario format of resim, its validation, the simulated world, reports and
//! the `resim` command line.
//!
//! The main types:
//!
//! - [`Scenario`] (in [`schema`]): what a `.ron` file says — clients, services, the calls
//!   between them with their pattern stacks, a fault timeline, expectations.
//! - [`load::parse`] / [`load::load`]: text → validated [`Scenario`], or a one-line
//!   [`ScenarioError`] with the file and line:column (syntax) or field path (meaning).
//! - [`world::World`]: the simulated world, one `sim_core` entity that holds every client,
//!   service, replica, call and job.
//! - [`run::run`]: a scenario and a seed in, a [`Report`] out (human, JSON, CSV, compact).
//! - [`library`]: the canonical failures, embedded from `scenarios/library/*.ron`.
//!
//! Module map:
//!
//! | module | what |
//! |---|---|
//! | [`schema`] | the serde types of a scenario file |
//! | [`load`] | parsing (RON with implicit `Some`) and reading files |
//! | [`validate`] | semantic checks with field paths |
//! | [`error`] | [`ScenarioError`] |
//! | [`world`] | clients, balancers, services, calls, faults on sim-core |
//! | [`world::stack`] | the state machines behind pattern stacks and admission control |
//! | [`run`] | one run within its limits |
//! | [`report`] | figures, verdicts on expectations, renderings |
//! | [`library`] | the embedded scenario library |
//!
//! Only this crate does I/O in resim, and only at its edges: [`load::load`] reads a file and
//! the binary writes reports.

pub mod error;
pub mod library;
pub mod load;
pub mod report;
pub mod run;
pub mod schema;
pub mod validate;
pub mod world;

pub use error::ScenarioError;
pub use report::Report;
pub use run::{RunOptions, RunOutput, run};
pub use schema::Scenario;
