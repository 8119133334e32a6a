//! A ring of ten time slots: the bounded memory behind the windowed budgets.

use sim_core::{SimDuration, SimTime};

/// How many slots a window is cut into.
pub(crate) const SLOTS: u64 = 10;

/// Per-slot sums of two integer counters over the last [`SLOTS`] slots of `width` each.
///
/// Slot `e` holds what happened during `[e · width, (e + 1) · width)`. The window at slot
/// `c` is slots `c − 9 ..= c`. Time that seems to go back is treated as the latest time seen,
/// so a caller's mistake cannot resurrect an expired slot.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SlotRing {
    width_nanos: u64,
    latest: u64,
    // (epoch, counters); the epoch u64::MAX marks a slot never written.
    slots: [(u64, [i64; 2]); SLOTS as usize],
}

impl SlotRing {
    pub(crate) fn new(window: SimDuration) -> Self {
        let width_nanos = (window.as_nanos() / SLOTS).max(1);
        SlotRing {
            width_nanos,
            latest: 0,
            slots: [(u64::MAX, [0; 2]); SLOTS as usize],
        }
    }

    fn epoch(&mut self, now: SimTime) -> u64 {
        let e = now.as_nanos() / self.width_nanos;
        self.latest = self.latest.max(e);
        self.latest
    }

    /// Adds `delta` to counter `which` in the slot of `now`.
    pub(crate) fn add(&mut self, now: SimTime, which: usize, delta: i64) {
        let e = self.epoch(now);
        let slot = &mut self.slots[(e % SLOTS) as usize];
        if slot.0 != e {
            *slot = (e, [0; 2]);
        }
        slot.1[which] += delta;
    }

    /// The sums of both counters over the window ending at `now`.
    pub(crate) fn sums(&mut self, now: SimTime) -> [i64; 2] {
        let e = self.epoch(now);
        let mut total = [0i64; 2];
        for (epoch, counters) in &self.slots {
            if *epoch <= e && e - *epoch < SLOTS {
                total[0] += counters[0];
                total[1] += counters[1];
            }
        }
        total
    }

    /// Every written slot's counters, current or expired, for invariant checks.
    pub(crate) fn counters(&self) -> impl Iterator<Item = [i64; 2]> + '_ {
        self.slots
            .iter()
            .filter(|(epoch, _)| *epoch != u64::MAX)
            .map(|(_, counters)| *counters)
    }
}
