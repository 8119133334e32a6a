//! Connection pools, in the scenario format: a service call's [`Pool`] of connections toward
//! its target (one pool per calling replica), and the target's own `max_connections`.
//!
//! An attempt of a pooled call checks a connection out before it is sent and gives it back
//! when it ends (its reply, its timeout, its cancellation). With an idle connection it goes
//! at once; otherwise it waits in the pool's FIFO queue, and the pool opens a connection
//! for it if it holds fewer than `size` (opening takes `connect_time`). A wait longer than
//! `checkout_timeout` fails the attempt with `pool_timeout`. An open that would take the
//! target beyond its `max_connections` (over every pool toward it) is refused: after the
//! `connect_time` of the handshake the first waiter fails with `connection_refused`.
//! Connections idle for `idle_timeout` are closed. The worker of the calling job is held
//! all along: the pool is distinct from the worker pool.
//!
//! The names and defaults are HikariCP's where it has one: `size` is `maximumPoolSize`
//! (10), `checkout_timeout` is `connectionTimeout` (30s), `idle_timeout` is `idleTimeout`
//! (10 minutes); the pool starts empty and opens connections on demand (HikariCP's
//! `minimumIdle` of 0). The world's side is `world::pool`.

use crate::format::limits::POOL_SIZE_MAX;
use serde::{Deserialize, Serialize};
use sim_core::{ConfigError, SimDuration};

/// A pool of connections from each replica of the calling service to the call's target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// The most connections the pool holds, open or opening (HikariCP's
    /// `maximumPoolSize`).
    #[serde(default = "default_size")]
    pub size: u32,
    /// How long an attempt waits for a connection before it fails with `pool_timeout`
    /// (HikariCP's `connectionTimeout`).
    #[serde(default = "default_checkout_timeout")]
    pub checkout_timeout: SimDuration,
    /// How long opening a connection takes (the handshake: TCP, TLS, authentication); a
    /// refused open fails after it too.
    #[serde(default = "default_connect_time")]
    pub connect_time: SimDuration,
    /// A connection idle this long is closed (HikariCP's `idleTimeout`).
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: SimDuration,
}

fn default_size() -> u32 {
    10
}

fn default_checkout_timeout() -> SimDuration {
    SimDuration::from_secs(30)
}

fn default_connect_time() -> SimDuration {
    SimDuration::from_millis(5)
}

fn default_idle_timeout() -> SimDuration {
    SimDuration::from_secs(600)
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            size: default_size(),
            checkout_timeout: default_checkout_timeout(),
            connect_time: default_connect_time(),
            idle_timeout: default_idle_timeout(),
        }
    }
}

impl Pool {
    /// Checks the pool; field names are relative to it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=POOL_SIZE_MAX).contains(&self.size) {
            return Err(ConfigError::new(
                "size",
                format!("must be in [1, {POOL_SIZE_MAX}], got {}", self.size),
            ));
        }
        for (field, d) in [
            ("checkout_timeout", self.checkout_timeout),
            ("idle_timeout", self.idle_timeout),
        ] {
            if d.is_zero() {
                return Err(ConfigError::new(field, "must be positive, got 0s"));
            }
        }
        Ok(())
    }
}
