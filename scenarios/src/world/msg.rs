//! The world's events ([`Msg`]) and what travels over the network between a caller and a
//! service ([`Packet`]). Each event is small and allocates nothing; its
//! [`kind`](Message::kind) word names the component and the request it is for, so the digest
//! tells two histories apart even when they differ only in which call an event was for.

use super::outcome::Outcome;
use super::{CallKey, JobKey, Side};
use sim_core::{Message, SimDuration};
use slotmap::Key;

/// What travels over the virtual network: the three messages between a caller and a
/// service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// An attempt on its way to its replica.
    Deliver {
        /// The job.
        job: JobKey,
    },
    /// A reply on its way back.
    Reply {
        /// The call.
        call: CallKey,
        /// The attempt it answers.
        attempt: u32,
        /// What happened.
        outcome: Outcome,
        /// The server's `Retry-After` on an overload refusal.
        retry_after: Option<SimDuration>,
    },
    /// A cancellation on its way to the replica.
    Cancel {
        /// The job.
        job: JobKey,
    },
}

/// The network a world's messages travel: sim-net's, in the simulation's shared state.
pub type Net = sim_net::Network<Packet>;

/// The events of the world.
#[derive(Clone, Debug)]
pub enum Msg {
    /// A message handed to sim-net arrives (or is due for a decision) at its target.
    Net(sim_net::Delivery<Packet>),
    /// An open-loop client's next arrival (`emit`), or a wake-up at a rate change to redraw.
    Arrival {
        /// The client.
        client: u32,
        /// Whether a request arrives (false: only redraw the next arrival).
        emit: bool,
    },
    /// A closed-loop user finished thinking.
    Think {
        /// The client.
        client: u32,
        /// The user.
        user: u32,
    },
    /// A job's work is done.
    WorkDone {
        /// The job.
        job: JobKey,
    },
    /// A job a shaping rate limiter held back at admission may go on.
    Released {
        /// The job.
        job: JobKey,
    },
    /// The caller stops waiting for an attempt.
    Timeout {
        /// The call.
        call: CallKey,
        /// The attempt number.
        attempt: u32,
    },
    /// A backoff delay ended: the next attempt starts.
    Retry {
        /// The call.
        call: CallKey,
    },
    /// A shaping rate limiter of a call's stack lets the call go on past its gate.
    GateReleased {
        /// The call.
        call: CallKey,
    },
    /// A fault begins.
    FaultStart {
        /// Index in the scenario's fault list.
        fault: u32,
    },
    /// A fault ends.
    FaultEnd {
        /// Index in the scenario's fault list.
        fault: u32,
    },
    /// A crashed replica is up again (cold).
    Restart {
        /// The service.
        service: u32,
        /// The replica.
        replica: u32,
    },
    /// A PID shedder measures and updates.
    PidTick {
        /// The service.
        service: u32,
    },
    /// Active health checks probe a service's replicas.
    HealthTick {
        /// The service.
        service: u32,
    },
    /// A hedged call may send its next hedge.
    HedgeTimer {
        /// The hedged call.
        call: CallKey,
    },
    /// An autoscaler reads its metric and decides.
    ScaleTick {
        /// The service.
        service: u32,
    },
    /// A replica slot's start-up, drain or deploy downtime ends.
    Scaled {
        /// The service.
        service: u32,
        /// The replica slot.
        replica: u32,
    },
    /// A rolling deploy's next batch leaves rotation.
    DeployBatch {
        /// Index in the scenario's fault list.
        fault: u32,
    },
    /// A liveness probe goes to a replica.
    LivenessTick {
        /// The service.
        service: u32,
        /// The replica slot.
        replica: u32,
    },
    /// A replica's liveness probe sent one timeout ago fails if still unanswered.
    LivenessDeadline {
        /// The service.
        service: u32,
        /// The replica slot.
        replica: u32,
    },
    /// A bulkhead's waits may have timed out.
    BulkheadExpire {
        /// The call site instance.
        site: u32,
        /// Which gate list.
        side: Side,
        /// The gate's index in its list.
        gate: u8,
    },
    /// A connection pool's open ends (accepted, or refused by the target).
    PoolOpened {
        /// The call site instance that owns the pool.
        site: u32,
        /// Whether the target refused it.
        refused: bool,
    },
    /// A waiting attempt's checkout timeout at its connection pool.
    CheckoutTimeout {
        /// The call.
        call: CallKey,
        /// The attempt number.
        attempt: u32,
    },
    /// A connection pool's oldest idle connection may have timed out.
    PoolEvict {
        /// The call site instance that owns the pool.
        site: u32,
    },
    /// A job waiting for its row's lock times out.
    LockTimeout {
        /// The job.
        job: JobKey,
    },
}

// Every event is moved into the event queue's slab, out of it and into its handler: a
// network delivery, the largest event and two in four of a request's, fits in 64 bytes.
const _: () = assert!(std::mem::size_of::<Msg>() <= 64);

impl From<sim_net::Delivery<Packet>> for Msg {
    fn from(d: sim_net::Delivery<Packet>) -> Self {
        Msg::Net(d)
    }
}

impl Packet {
    /// What a trace line calls the packet's arrival (`deliver`, `reply`, `cancel`).
    pub fn trace_name(&self) -> &'static str {
        match self {
            Packet::Deliver { .. } => "deliver",
            Packet::Reply { .. } => "reply",
            Packet::Cancel { .. } => "cancel",
        }
    }
}

impl Msg {
    /// What a trace line calls the event (`work-done`); a delivery is named by its packet,
    /// and a wake-up of the network to release held messages is `network`.
    pub fn trace_name(&self) -> &'static str {
        self.facts().0
    }

    /// The event's trace name and its digest word: a tag in the top byte, under it a word
    /// that names the component and the request the event is for. Both come from one match
    /// so that a new event is given both at once.
    #[inline(always)]
    fn facts(&self) -> (&'static str, u64) {
        let key = |k: u64| k & 0x00ff_ffff_ffff_ffff;
        let call_attempt =
            |call: CallKey, attempt: u32| call.data().as_ffi() ^ (u64::from(attempt) << 40);
        let pair = |high: u32, low: u32| (u64::from(high) << 32) | u64::from(low);
        let (name, tag, word) = match *self {
            // sim-net's word names the packet and its copy, tagged apart from ours.
            Msg::Net(ref d) => {
                let name = d.payload().map_or("network", Packet::trace_name);
                return (name, d.kind());
            }
            Msg::Arrival { client, emit } => (
                if emit { "arrival" } else { "rate-change" },
                1,
                (u64::from(client) << 1) | u64::from(emit),
            ),
            Msg::Think { client, user } => ("user-ready", 2, pair(client, user)),
            Msg::Released { job } => ("released", 3, job.data().as_ffi()),
            Msg::WorkDone { job } => ("work-done", 4, job.data().as_ffi()),
            Msg::GateReleased { call } => ("gate-release", 5, call.data().as_ffi()),
            Msg::Timeout { call, attempt } => ("timeout", 6, call_attempt(call, attempt)),
            Msg::Retry { call } => ("retry", 7, call.data().as_ffi()),
            Msg::FaultStart { fault } => ("fault-start", 9, u64::from(fault)),
            Msg::FaultEnd { fault } => ("fault-end", 10, u64::from(fault)),
            Msg::Restart { service, replica } => ("restart", 11, pair(service, replica)),
            Msg::PidTick { service } => ("pid-update", 12, u64::from(service)),
            Msg::HealthTick { service } => ("health-check", 13, u64::from(service)),
            Msg::BulkheadExpire { site, side, gate } => (
                "bulkhead-wait-ends",
                14,
                (u64::from(site) << 16) | ((side as u64) << 8) | u64::from(gate),
            ),
            Msg::HedgeTimer { call } => ("hedge-timer", 15, call.data().as_ffi()),
            Msg::ScaleTick { service } => ("scale-tick", 16, u64::from(service)),
            Msg::Scaled { service, replica } => ("replica-slot", 17, pair(service, replica)),
            Msg::DeployBatch { fault } => ("deploy-batch", 18, u64::from(fault)),
            Msg::LivenessTick { service, replica } => {
                ("liveness-probe", 19, pair(service, replica))
            }
            Msg::LivenessDeadline { service, replica } => {
                ("liveness-deadline", 20, pair(service, replica))
            }
            Msg::PoolOpened { site, refused } => (
                if refused {
                    "pool-refused"
                } else {
                    "pool-opened"
                },
                21,
                (u64::from(site) << 1) | u64::from(refused),
            ),
            Msg::CheckoutTimeout { call, attempt } => {
                ("checkout-timeout", 22, call_attempt(call, attempt))
            }
            Msg::PoolEvict { site } => ("pool-evict", 23, u64::from(site)),
            Msg::LockTimeout { job } => ("lock-timeout", 24, job.data().as_ffi()),
        };
        (name, (tag << 56) | key(word))
    }
}

impl Message for Msg {
    fn kind(&self) -> u64 {
        // Asked once per event for the digest: a network message's word needs no name (finding
        // the name of a packet would read its payload on every delivery).
        match self {
            Msg::Net(d) => d.kind(),
            _ => self.facts().1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::Side;
    use std::collections::BTreeSet;

    /// One event of each kind (both names of the events that have two).
    fn every_event() -> Vec<Msg> {
        let (call, job) = (CallKey::default(), JobKey::default());
        vec![
            Msg::Arrival {
                client: 0,
                emit: true,
            },
            Msg::Arrival {
                client: 0,
                emit: false,
            },
            Msg::Think { client: 0, user: 0 },
            Msg::WorkDone { job },
            Msg::Released { job },
            Msg::Timeout { call, attempt: 1 },
            Msg::Retry { call },
            Msg::GateReleased { call },
            Msg::FaultStart { fault: 0 },
            Msg::FaultEnd { fault: 0 },
            Msg::Restart {
                service: 0,
                replica: 0,
            },
            Msg::PidTick { service: 0 },
            Msg::HealthTick { service: 0 },
            Msg::HedgeTimer { call },
            Msg::ScaleTick { service: 0 },
            Msg::Scaled {
                service: 0,
                replica: 0,
            },
            Msg::DeployBatch { fault: 0 },
            Msg::LivenessTick {
                service: 0,
                replica: 0,
            },
            Msg::LivenessDeadline {
                service: 0,
                replica: 0,
            },
            Msg::BulkheadExpire {
                site: 0,
                side: Side::Outer,
                gate: 0,
            },
            Msg::PoolOpened {
                site: 0,
                refused: false,
            },
            Msg::PoolOpened {
                site: 0,
                refused: true,
            },
            Msg::CheckoutTimeout { call, attempt: 1 },
            Msg::PoolEvict { site: 0 },
            Msg::LockTimeout { job },
        ]
    }

    #[test]
    fn every_event_has_a_trace_name_of_its_own() {
        let events = every_event();
        let names: BTreeSet<_> = events.iter().map(Msg::trace_name).collect();
        assert_eq!(
            names.len(),
            events.len(),
            "two events share a name: {names:?}"
        );
        for name in &names {
            assert!(!name.is_empty() && !name.contains(' '), "{name:?}");
        }
        // The network's names are its packets' and `network`, none of them an event's.
        let packets = [
            Packet::Deliver {
                job: JobKey::default(),
            },
            Packet::Cancel {
                job: JobKey::default(),
            },
            Packet::Reply {
                call: CallKey::default(),
                attempt: 1,
                outcome: Outcome::Ok,
                retry_after: None,
            },
        ];
        let mut all = names.clone();
        all.extend(packets.iter().map(Packet::trace_name));
        all.insert("network");
        assert_eq!(all.len(), names.len() + packets.len() + 1, "{all:?}");
    }

    #[test]
    fn every_event_kind_has_a_tag_of_its_own() {
        // The two events of one kind with two names share their tag.
        let tags: BTreeSet<_> = every_event().iter().map(|m| m.kind() >> 56).collect();
        assert_eq!(tags.len(), every_event().len() - 2, "{tags:?}");
    }
}
