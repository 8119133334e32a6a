//! The scenario file format: what a `.ron` file may say ([`schema`] and its parts), how it is
//! read ([`load`]), overridden ([`overrides`]), validated ([`validate`]) and held to its limits
//! ([`limits`]), and the one error type of all of it ([`error`]).
//!
//! | module | what |
//! |---|---|
//! | [`schema`] | the serde types of a scenario file, and under it the types of its parts (traffic classes, pools, isolation, autoscaling, capacity events, answers, distributed limiters, stores) |
//! | [`load`] | parsing (RON with implicit `Some`) and reading files |
//! | [`overrides`] | `--set PATH=VALUE` and a file's `variants`, applied as edits on its tokens before it is read; [`overrides::Source`], a file read once |
//! | [`validate`] | semantic checks with field paths |
//! | [`limits`] | the memory budget and rate limit of a run, and what a scenario needs |
//! | [`warnings`] | settings that are accepted but may not mean what their author meant (a percentage written as a ratio) |
//! | [`error`] | [`ScenarioError`](error::ScenarioError) |
//!
//! **Layer rule:** the format is the bottom layer of the crate: it uses `patterns`, `sim-core`
//! and `sim-net` (their config types), never the world, the figures, runs, reports,
//! experiments or the command line. What a file means is decided here, before anything runs.

pub mod error;
pub mod limits;
pub mod load;
pub mod overrides;
pub mod schema;
pub mod validate;
pub mod warnings;
