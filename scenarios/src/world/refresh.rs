//! Cache entries with a time to live, refreshed on expiry or early by XFetch (probabilistic
//! early expiration, Vattani, Chierichetti and Lowenstein, "Optimal Probabilistic Cache
//! Stampede Prevention", VLDB 2015).
//!
//! With `ttl`, each replica's cache holds its `keys` entries with an expiry each; all of them
//! are filled at time 0, so without early refresh they all expire together, every `ttl`,
//! and every hit in the moments after becomes a miss: a stampede on the dependency. A request
//! that the hit ratio counts as a hit picks a key (stream `services/<name>/cache-ttl`); an
//! expired key makes it a miss that refetches the key. With XFetch, a request on a live key
//! also refetches it early when `now − delta · beta · ln(u) ≥ expiry`, `u` uniform on (0, 1]
//! and `delta` the replica's last measured fetch time: the closer the expiry and the slower
//! the fetch, the likelier, so one request refreshes each key just before it would expire.
//! A refetch that succeeds sets the key's expiry to `now + ttl`.

use crate::figures::RefreshFigures;
use crate::format::schema::Cache;
use sim_core::sample::{open_unit_f64, uniform_below};
use sim_core::{RngStream, Seed, SimDuration, SimTime};

/// A fetch in flight, carried by its job: the key it refreshes (`None` for an ordinary miss,
/// which only measures the fetch time), and when it started.
#[derive(Debug, Clone, Copy)]
pub struct Fetch {
    key: Option<u32>,
    since: SimTime,
}

/// Why a request refetches its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refetch {
    /// The key expired.
    Expired,
    /// XFetch chose to refresh it before its expiry.
    Early,
}

/// The expiring entries of one service's caches.
#[derive(Debug, Clone)]
pub struct Refresh {
    ttl: SimDuration,
    beta: Option<f64>,
    /// Per replica, each key's expiry.
    expiry: Vec<Vec<SimTime>>,
    /// Per replica, the last fetch time measured (zero before the first).
    delta: Vec<SimDuration>,
    rng: RngStream,
    figures: RefreshFigures,
}

impl Refresh {
    /// The entries of service `service`'s caches, if its cache has a `ttl`.
    pub fn new(service: &str, cache: &Cache, replicas: u32, seed: Seed) -> Option<Refresh> {
        let ttl = cache.ttl?;
        let fresh = SimTime::ZERO.saturating_add(ttl);
        Some(Refresh {
            ttl,
            beta: cache.xfetch.as_ref().map(|x| x.beta),
            expiry: vec![vec![fresh; cache.keys as usize]; replicas as usize],
            delta: vec![SimDuration::ZERO; replicas as usize],
            rng: seed.stream(&format!("services/{service}/cache-ttl")),
            figures: RefreshFigures::default(),
        })
    }

    /// Gives its early-refresh draws fresh randomness from `seed` (a branch's).
    pub fn reseed(&mut self, seed: Seed) {
        self.rng.reseed(seed);
    }

    /// A request at replica `replica` that the hit ratio counts as a hit: `None` if its key
    /// is fresh and stays so, else its refetch of the key (the request is then a miss).
    pub fn consult(&mut self, now: SimTime, replica: usize) -> Option<Fetch> {
        let keys = self.expiry[replica].len() as u64;
        let key = uniform_below(&mut self.rng, keys) as u32;
        let expiry = self.expiry[replica][key as usize];
        let why = if now >= expiry {
            Refetch::Expired
        } else {
            let beta = self.beta?;
            let delta = self.delta[replica].as_nanos() as f64;
            // -ln(u) for u in (0, 1] is exponential with mean 1.
            let gap = delta * beta * -libm::log(open_unit_f64(&mut self.rng));
            if (now.as_nanos() as f64) + gap < expiry.as_nanos() as f64 {
                return None;
            }
            Refetch::Early
        };
        match why {
            Refetch::Expired => self.figures.expired_misses += 1,
            Refetch::Early => self.figures.early_refreshes += 1,
        }
        Some(Fetch {
            key: Some(key),
            since: now,
        })
    }

    /// An ordinary miss fetches at `now`: its fetch time, when it succeeds, is its replica's
    /// new `delta` (the same recomputation as a refresh's).
    pub fn measure(now: SimTime) -> Fetch {
        Fetch {
            key: None,
            since: now,
        }
    }

    /// A job of replica `r` that made `fetch` is answered at `now`: if it succeeded, its
    /// fetch time is the replica's new `delta`, and the key it refreshed, if any, is fresh
    /// again.
    pub fn complete(&mut self, now: SimTime, r: usize, f: Fetch, ok: bool) {
        if ok {
            self.delta[r] = now - f.since;
            if let Some(key) = f.key {
                self.expiry[r][key as usize] = now.saturating_add(self.ttl);
                self.figures.refreshes += 1;
            }
        }
    }

    /// Its figures.
    pub fn figures(&self) -> RefreshFigures {
        self.figures.clone()
    }
}
