//! The scenario file format: what a `.ron` file may say ([`schema`] and its parts), how it is
//! read ([`load`], [`read`]), overridden ([`overrides`]), validated ([`validate`]), held to its
//! limits ([`limits`], [`footprint`]) and judged by ([`verdict`]), and the one error type of all
//! of it ([`error`]).
//!
//! | module | what |
//! |---|---|
//! | [`schema`] | the serde types of a scenario file, and under it the types of its parts (traffic classes, pools, isolation, autoscaling, capacity events, answers, distributed limiters, stores) with their checks |
//! | [`load`] | the entry points: text, bytes or a file → a validated [`Scenario`](schema::Scenario) |
//! | [`overrides`] | `--set PATH=VALUE` and a file's `variants`, applied as edits on its tokens before it is read; [`overrides::Source`], a file read once |
//! | [`read`] | the one reading pipeline under both: the lexer and its `Text`, RON and its errors in the file's words, validation, [`read::Work`] |
//! | [`samples`] | the files of samples that `Empirical(file: ...)` declarations name, read with the scenario |
//! | [`validate`] | semantic checks with field paths |
//! | [`verdict`] | the thresholds of the metastability verdict, the triggers it is counted from, the checks of the expectations that need it |
//! | [`limits`] | every limit a scenario is held to: the fixed `*_MAX` and the memory budget and rate limit a command line may raise ([`limits::RunLimits`]) |
//! | [`footprint`] | the memory a scenario fixes and its arrival rates, held to its limits |
//! | [`series_bytes`] | what one report bucket costs, by what a run keeps (`Series`) and the requests a bucket holds |
//! | [`offered`] | what the clients offer each service on average over the run, against the most it can serve |
//! | [`grpc_status`] | gRPC's status codes, one table of names and numbers, for the gRPC import and the figures |
//! | [`warnings`] | settings that are accepted but may not mean what their author meant (a percentage written as a ratio, a service offered more than it can serve) |
//! | [`error`] | [`ScenarioError`](error::ScenarioError), and [`error::one_line`] for what a message quotes |
//!
//! Within the format, reading goes one way: [`load`] → [`overrides`] → [`read`] → [`samples`],
//! [`validate`], [`schema`]; [`limits`] and [`error`] use no other module of the crate.
//!
//! **Layer rule:** the format is the bottom layer of the crate. It uses `patterns`, `sim-core`
//! and `sim-net` (their config types), never the world, the figures, runs, reports,
//! experiments or the command line: what a file means is decided here, before anything runs.
//! The `layers` tidy test (`scenarios/tests/suite/tidy.rs`) holds every layer to its rule.

pub mod error;
pub mod footprint;
pub mod grpc_status;
pub mod limits;
pub mod load;
pub mod offered;
pub mod overrides;
pub mod read;
pub mod samples;
pub mod schema;
pub mod series_bytes;
pub mod validate;
pub mod verdict;
pub mod warnings;
