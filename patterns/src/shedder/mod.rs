//! Load shedders: refuse some work early so the work that is admitted finishes in time.
//!
//! | type | decides on | output |
//! |---|---|---|
//! | [`CoDelQueue`] | the head's sojourn time (RFC 8289) | drops at dequeue |
//! | [`RpcQueue`] | shortest sojourn over an interval; adaptive LIFO | drops expired requests at dequeue |
//! | [`PidShedder`] | a measured signal against a setpoint | a drop probability (RNG injected) |
//! | [`LevelQueue`] | each request's priority level | the least important wait longest and are evicted first |
//! | [`PriorityShedder`] | a load percentage against per-class thresholds | shed the least important classes first |
//! | [`AdaptiveThrottle`] | the client's own requests and accepts | a local rejection probability |
//!
//! CoDel, exactly as RFC 8289's pseudocode (target 5ms, interval 100ms):
//!
//! ```text
//!                    sojourn ≥ target (and more than queue_len_min queued)
//!   ┌──────────────┐ ─────────────────────────────────▶ ┌──────────────────────────────┐
//!   │ IDLE         │   first_above = now + interval      │ IDLE, first_above set         │
//!   │ first_above  │ ◀───────────────────────────────── │                               │
//!   │   = none     │          sojourn < target           └──────────────────────────────┘
//!   └──────────────┘                                         │ now ≥ first_above:
//!          ▲                                                 │ drop one; count = 1, or
//!          │ sojourn < target, or queue empty                │ count − lastcount if > 1 and
//!          │                                                 ▼ within 16 intervals of drop_next
//!   ┌─────────────────────────────────────────────────────────────────┐
//!   │ DROPPING: at each dequeue with now ≥ drop_next, drop, count += 1, │
//!   │ drop_next = drop_next + interval / √count                          │
//!   └─────────────────────────────────────────────────────────────────┘
//! ```
//!
//! The RPC queue, judged once per `interval` on the shortest sojourn of the requests it
//! delivered (zero if the queue emptied):
//!
//! ```text
//!   ┌────────────────────────────────┐  shortest sojourn > target  ┌──────────────────────────────────┐
//!   │ NOT OVERLOADED                 │ ──────────────────────────▶ │ OVERLOADED                       │
//!   │ FIFO; drop after `interval`    │ ◀────────────────────────── │ LIFO (adaptive_lifo); drop after │
//!   └────────────────────────────────┘  shortest sojourn ≤ target  │ `target`                         │
//!                                                                  └──────────────────────────────────┘
//! ```
//!
//! Serving newest first makes the delivered sojourns short, so under sustained overload the
//! judge sees a short sojourn and lets the queue go back to FIFO for an interval before it
//! trips again: the state alternates interval by interval rather than holding.

mod codel;
mod level_queue;
mod pid;
mod priority;
mod rpc;
mod throttle;

pub use codel::{CoDelConfig, CoDelQueue, CoDelState, Dequeued, control_law};
pub use level_queue::{Enqueued, LevelQueue};
pub use pid::{PidConfig, PidShedder};
pub use priority::{PRIORITY_CLASSES_MAX, PriorityConfig, PriorityShedder, Shed};
pub use rpc::{RpcDequeued, RpcQueue, RpcQueueConfig};
pub use throttle::{AdaptiveThrottle, AdaptiveThrottleConfig, drop_probability};
