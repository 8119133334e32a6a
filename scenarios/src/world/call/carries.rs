//! What a call carries beside its attempts ([`Carries`]): a race, a gather, a store slot or
//! a reply's quota, each boxed but the race, in the call so that it goes with it
//! (`World::end_call`); the world counts the boxed bytes for the memory check.

use super::Call;
use crate::world::distributed::StoreSlot;
use crate::world::fanout::Gather;
use crate::world::pace::Quota;
use crate::world::{CallKey, HedgeKey, World};

/// What a call carries beside its attempts, by the kind of call it is: most carry nothing
/// and pay this enum's 16 bytes; the rest is boxed, counted in `World::carried_bytes`
/// for the memory check, and removed with the call by [`World::end_call`].
#[derive(Debug, Clone)]
pub enum Carries {
    /// Nothing.
    Nothing,
    /// A hedged call's shell: its race (`world::hedge`).
    Race(HedgeKey),
    /// A fan-out call's shell: its leaves (`world::fanout`).
    Gather(Box<Gather>),
    /// A distributed limiter's store call: what it carries to the store and what the store
    /// answers (`world::distributed`).
    Store(Box<StoreSlot>),
    /// The quota that the reply to attempt `.0` brings, from when the reply leaves its
    /// service until it arrives (`world::pace`; only a call site with a `Pace` layer reads
    /// one).
    Quota(Box<(u32, Quota)>),
}

impl Carries {
    /// The heap bytes it holds.
    pub fn heap_bytes(&self) -> u64 {
        let bytes = match self {
            Carries::Nothing | Carries::Race(_) => 0,
            Carries::Gather(g) => std::mem::size_of::<Gather>() + g.leaves_bytes(),
            Carries::Store(_) => std::mem::size_of::<StoreSlot>(),
            Carries::Quota(_) => std::mem::size_of::<(u32, Quota)>(),
        };
        bytes as u64
    }
}

impl Carries {
    /// The store slot it is, taken out (it then carries nothing).
    pub fn take_store(&mut self) -> Option<Box<StoreSlot>> {
        match std::mem::replace(self, Carries::Nothing) {
            Carries::Store(slot) => Some(slot),
            other => {
                *self = other;
                None
            }
        }
    }
}

impl Call {
    /// Its race, if it is a hedged call's shell.
    pub fn race(&self) -> Option<HedgeKey> {
        match self.carries {
            Carries::Race(race) => Some(race),
            _ => None,
        }
    }
}

impl World {
    /// Call `key` carries `what` from now on (instead of a quota, if it carried one).
    pub(in crate::world) fn carry(&mut self, key: CallKey, what: Carries) {
        let call = &mut self.calls[key];
        let replaces = matches!(
            (&call.carries, &what),
            (Carries::Nothing, _) | (Carries::Quota(_), Carries::Quota(_))
        );
        assert!(replaces, "a call carries one thing: {:?}", call.carries);
        self.carried_bytes -= call.carries.heap_bytes();
        self.carried_bytes += what.heap_bytes();
        call.carries = what;
    }

    /// What call `key` carries, taken from it (it then carries nothing).
    pub(in crate::world) fn uncarry(&mut self, key: CallKey) -> Carries {
        let carries = std::mem::replace(&mut self.calls[key].carries, Carries::Nothing);
        self.carried_bytes -= carries.heap_bytes();
        carries
    }
}
