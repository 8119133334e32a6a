//! sim-core: the deterministic discrete-event engine under resim.
//!
//! The main types:
//!
//! - [`SimTime`] and [`SimDuration`]: integer nanoseconds; [`Rate`]: `"500/s"`.
//! - [`Sim`]: a world of [`Entity`] values in a slotmap, run by one loop over an
//!   [`EventQueue`] ordered by `(time, seq)`, with an event budget and a time limit
//!   ([`Limits`]) and a [`StopReason`] when it returns. Handlers act through a [`Ctx`].
//! - [`Seed`] and [`RngStream`]: one ChaCha8 stream per (run seed, stable name).
//! - [`Dist`] and [`Sampler`]: portable sampling (libm) of durations in nanoseconds.
//! - [`Digest`]: a 64-bit hash folded over every executed event.
//! - [`metrics`]: counters, HdrHistogram latency histograms, time-bucketed series.
//!
//! Module map:
//!
//! | module | what |
//! |---|---|
//! | [`time`] | `SimTime`, `SimDuration`, `Rate`, their parsing and display |
//! | [`queue`] | the pending-event set and cancellable timers |
//! | [`radix`] | the radix heap's index: buckets by hexadecimal digit, their occupancy |
//! | [`sim`] | the run loop, entities, context, limits, trace |
//! | [`rng`] | named random streams |
//! | [`sample`] | distributions and primitive draws |
//! | [`digest`] | the run digest |
//! | [`error`] | [`ConfigError`], the error of every `validate()` |
//! | [`metrics`] | counters, histograms, series |
//! | [`queueing`] | the M/M/c reference model and its theory |
//! | [`splitting`] | rare events by splitting: Adaptive Multilevel Splitting over copyable trajectories, and a basin's exits |
//!
//! **Determinism contract.** Same model + same seed ⇒ the same events in the same order and
//! the same digest, on every platform, in debug and release. Nothing here reads the wall clock
//! or OS entropy; events at the same instant run in the order they were scheduled; floats
//! never hold time; transcendental functions come from `libm`.
//!
//! A minimal model:
//!
//! ```
//! use sim_core::{Ctx, Entity, Limits, Message, Sim, SimDuration, SimTime, StopReason};
//!
//! struct Ticker { ticks: u32 }
//! struct Tick;
//! impl Message for Tick { fn kind(&self) -> u64 { 1 } }
//! impl Entity for Ticker {
//!     type Msg = Tick;
//!     type Shared = ();
//!     fn handle(&mut self, ctx: &mut Ctx<'_, Tick, ()>, _: Tick) {
//!         self.ticks += 1;
//!         ctx.send_self(SimDuration::from_millis(100), Tick);
//!     }
//! }
//!
//! let mut sim = Sim::new((), Limits::new(1_000, SimDuration::from_secs(1)));
//! let id = sim.add(Ticker { ticks: 0 });
//! sim.schedule(SimTime::ZERO, id, Tick);
//! assert_eq!(sim.run(), StopReason::TimeLimit);
//! assert_eq!(sim.entity(id).ticks, 11); // 0ms, 100ms, ..., 1000ms
//! ```

pub mod digest;
pub mod error;
pub mod metrics;
pub mod queue;
pub mod queueing;
pub mod radix;
pub mod rng;
pub mod sample;
pub mod sim;
pub mod splitting;
pub mod time;

pub use digest::Digest;
pub use error::ConfigError;
pub use queue::{EventQueue, TimerId};
pub use rng::{RngStream, Seed};
pub use sample::{Dist, DistError, Sampler};
pub use sim::{Ctx, Entity, EntityId, Limits, Message, Scheduler, Sim, StopReason, TraceRecord};
pub use time::{Rate, SimDuration, SimTime};
