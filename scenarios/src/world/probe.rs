//! What a running world says of itself between events, for estimates made while it runs
//! (`resim risk` reads a count after every event to know how close a run is to its event and
//! whether it happened): a few counts the world keeps anyway, each read in constant time, so
//! a probe costs nothing to a run that does not read it.

use super::World;
use super::outcome::Reason;

/// A count a running world can be asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Jobs waiting in a service's queues, summed over its replicas (the service's index in
    /// the scenario's order of names).
    Queue(usize),
    /// Jobs waiting at every service.
    Queued,
    /// Attempts a service refused or failed for a reason, so far.
    ServiceFailures(usize, Reason),
    /// Requests of a client (by index) that failed for a reason, so far.
    ClientFailures(usize, Reason),
    /// Requests of a client that ended, so far (successes and failures).
    ClientEnded(usize),
    /// Requests of a client that succeeded, so far.
    ClientSucceeded(usize),
    /// A service's concurrency limit now, summed over its replicas up and in rotation (0
    /// without one), read from the limiters themselves (in time linear in its replicas).
    ConcurrencyLimit(usize),
    /// Requests a service's concurrency limiters hold now, summed over its replicas.
    ConcurrencyInFlight(usize),
}

impl World {
    /// The count `probe` names, now.
    #[inline]
    pub fn probe(&self, probe: Probe) -> u64 {
        match probe {
            Probe::Queue(s) => u64::from(self.services[s].queued()),
            Probe::Queued => self.services.iter().map(|s| u64::from(s.queued())).sum(),
            Probe::ServiceFailures(s, reason) => self.services[s].failed(reason),
            Probe::ClientFailures(c, reason) => self.clients[c].figures().failed.get(reason),
            Probe::ClientEnded(c) => {
                let f = self.clients[c].figures();
                f.latency.count() + f.failed.total()
            }
            Probe::ClientSucceeded(c) => self.clients[c].figures().latency.count(),
            Probe::ConcurrencyLimit(s) => self.services[s].concurrency_totals().0,
            Probe::ConcurrencyInFlight(s) => self.services[s].concurrency_totals().1,
        }
    }

    /// The index of the service called `name`, for a [`Probe`].
    pub fn service_named(&self, name: &str) -> Option<usize> {
        self.services.iter().position(|s| s.name() == name)
    }

    /// The index of the client called `name`, for a [`Probe`].
    pub fn client_named(&self, name: &str) -> Option<usize> {
        self.clients.iter().position(|c| c.name() == name)
    }
}
