//! An idempotency-key store: the server side of safe retries of non-idempotent operations.
//!
//! A client attaches a key to a request (and retries with the same key); the server asks
//! the store before doing the work. The store remembers, per key, a fingerprint of the
//! request (a hash of what it asked for) and, once the work is done, its result, for `ttl`
//! (Stripe keeps keys 24 hours).
//!
//! | the key is | same fingerprint | different fingerprint |
//! |---|---|---|
//! | unknown (or expired) | `Execute`: do the work, then [`IdempotencyStore::complete`] | — |
//! | in flight | `Conflict` (409, retry later) or `Wait` for the result, by config | `FingerprintMismatch` |
//! | done | `Replay` the stored result; nothing runs | `FingerprintMismatch` |
//!
//! So a retry never runs the work twice, and **concurrent duplicates never both execute**.
//! If the work fails without a result worth storing (the handler crashed, the caller gave
//! up), [`IdempotencyStore::abort`] forgets the key so that a retry can execute; waiters are
//! returned so the caller can tell them to retry. The store holds at most `capacity` keys;
//! when full, expired keys are swept, and if none is expired a new key is refused (`Full`)
//! rather than evicting a live one, which would break the guarantee.
//!
//! ```text
//!   (absent) ──begin──> Execute ──> [ InFlight { fingerprint, since, waiters } ]
//!                                       │ complete(result) ──> [ Done { fingerprint, result, expires_at } ]
//!                                       │ abort ─────────────> (absent)
//!   [ Done ] ──now ≥ expires_at──> (absent)
//! ```

mod store;

pub use crate::coalesce::WaiterId;
pub use store::{Begin, IdempotencyConfig, IdempotencyStore, InFlightPolicy};
