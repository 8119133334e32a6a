//! What the world holds that grows with traffic ([`Live`]), read from its tables for the
//! run's memory check (`run.rs`): calls, jobs and races, the bytes their tables hold and may
//! hold before the next check, and what the calls carry.
//!
//! Everything a call or a job carries is either in its struct, and so counted with its table
//! (a job's store read, its cache fetch, a call's race key), or boxed by the call and counted
//! as it is carried and dropped (`World::carried_bytes`: a fan-out's gather, a store call's
//! slot, a reply's quota); no side table keyed by calls or jobs is left to forget.

use super::World;
use super::service::Service;
use slotmap::SlotMap;

/// What a world holds that grows with traffic ([`World::live`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Live {
    /// Calls in flight (each logical call, with its attempts).
    pub calls: usize,
    /// Jobs: attempts on their way to a replica, queued, worked on or waiting downstream.
    pub jobs: usize,
    /// Hedged calls' races.
    pub races: usize,
    /// Keys in the services' idempotency stores.
    pub idempotency_keys: usize,
    /// Bytes the tables of calls, jobs and races may hold before the next check: what they
    /// have reserved, or, for a table about to grow (within [`GROWTH_MARGIN`] entries of
    /// its capacity), the old and the doubled allocation that coexist while it grows; and
    /// what the calls carry on the heap. A fan-out starts many calls per event, and their
    /// tables' reservations, not the entries in use, set the heap's peak.
    pub reserved: u64,
    /// Bytes the same tables hold now: their capacity, before any growth; and what the calls
    /// carry on the heap.
    pub allocated: u64,
    /// The service with the most queued jobs, if any are queued.
    pub queued_most: Option<Queued>,
}

/// Entries a table may gain between two memory checks, at most: a check comes every few
/// thousand events (fewer with a fan-out) and an event starts at most a few calls per leaf.
pub const GROWTH_MARGIN: usize = 16_384;

/// The bytes `table` may hold before `margin` more entries arrive (see [`Live::reserved`]).
fn reserved<K: slotmap::Key, V>(table: &SlotMap<K, V>, margin: usize) -> u64 {
    // A slot holds the value and its version.
    let slot = std::mem::size_of::<V>() + std::mem::size_of::<u32>();
    sim_core::queue::reserved_bytes(table.len(), table.capacity(), slot, margin)
}

/// The longest queue of a service, over its replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    /// The service's name.
    pub service: String,
    /// Jobs waiting in its replicas' queues.
    pub queued: usize,
    /// Whether its queue is unbounded (`queue: (capacity: None)`).
    pub unbounded: bool,
}

impl World {
    /// What the world holds that grows with traffic, for the run's memory check: counts
    /// read from its tables, nothing kept on the way.
    pub fn live(&self) -> Live {
        let mut live = Live {
            calls: self.calls.len(),
            jobs: self.jobs.len(),
            races: self.races.len(),
            ..Live::default()
        };
        let tables = |margin| {
            reserved(&self.calls, margin)
                + reserved(&self.jobs, margin)
                + reserved(&self.races, margin)
                + self.carried_bytes
        };
        live.reserved = tables(GROWTH_MARGIN);
        live.allocated = tables(0);
        let mut most: Option<&Service> = None;
        for s in &self.services {
            live.idempotency_keys += s.idempotency_keys();
            if s.queued() > most.map_or(0, Service::queued) {
                most = Some(s);
            }
        }
        live.queued_most = most.map(|s| Queued {
            service: s.name().to_string(),
            queued: s.queued() as usize,
            unbounded: s.queue_unbounded(),
        });
        live
    }
}
