//! Request coalescing ("single flight"): concurrent requests for the same key share one
//! call to the dependency.
//!
//! The first request for a key leads: it makes the call. Requests for the same key that
//! arrive while the call is in flight follow: they wait, and when the leader calls
//! [`Coalescer::complete`] they get its result (the caller delivers it to the returned
//! waiters). A completed key is forgotten, so the next request leads a new call; caching
//! results is a different pattern. Both the keys in flight and the followers per key are
//! bounded ([`CoalesceConfig`]); beyond a bound the request is rejected with the reason, not
//! queued without limit.
//!
//! ```text
//!   (no flight) ──join──> Lead ──> [ InFlight { leader_since, waiters: [] } ]
//!                                     │ join ──> Follow { waiter }  (waiters += waiter)
//!                                     │ complete ──> the waiters ──> (no flight)
//! ```

mod machine;

pub use machine::{CoalesceConfig, CoalesceRejection, Coalescer, Join, WaiterId};
