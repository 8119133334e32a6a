//! The pending-event set: [`EventQueue`], ordered by `(time, seq)`, with cancellable timers.
//!
//! **Ordering contract.** Events fire in increasing time; events at the same instant fire in
//! the order they were scheduled (each schedule takes the next sequence number). Nothing else
//! (the target, the payload, the memory layout) influences the order.
//!
//! **Design.** Payloads live in a `slotmap` slab; a binary heap (`std::collections::BinaryHeap`)
//! holds only 24-byte keys `(time, seq, slot)`, so a sift moves small entries whatever the
//! size of the model's messages. Popping removes the slot; cancelling a timer removes its slot
//! early (O(1)), and the key left in the heap is recognised as stale when it reaches the top:
//! its slot removal fails, which costs one version comparison and no dispatch. Stale keys
//! never outnumber live ones by much: when they make up more than half of the heap, the heap
//! is rebuilt without them (O(n), amortised O(1) per cancel), so memory follows the number of
//! live events even when almost every timeout is cancelled, as it is in a healthy
//! request/response model. ARCHITECTURE.md records the measurements behind choosing this over
//! the `priority-queue` crate.

use crate::time::SimTime;
use slotmap::{SlotMap, new_key_type};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

new_key_type! {
    /// The slab slot of a pending event.
    struct SlotKey;
}

/// A handle to a cancellable event, returned by [`EventQueue::push_timer`].
///
/// Cancelling a handle whose event already fired or was already cancelled does nothing, so
/// a model may cancel without first checking whether the timeout raced the response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerId(SlotKey);

/// An event taken from the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled<P> {
    /// When it fires.
    pub time: SimTime,
    /// Its sequence number: the order of scheduling, which breaks ties at equal times.
    pub seq: u64,
    /// What the model attached to it.
    pub payload: P,
}

#[derive(Clone, Copy)]
struct HeapKey {
    time: SimTime,
    seq: u64,
    slot: SlotKey,
}

impl PartialEq for HeapKey {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}

impl Eq for HeapKey {}

impl PartialOrd for HeapKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HeapKey {
    /// Reversed, because `BinaryHeap` is a max-heap and we want the earliest (time, seq).
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// Stale keys below this count are never worth a rebuild.
const COMPACT_MIN_STALE: usize = 1024;

/// Pending events ordered by `(time, seq)`; see the module docs for the contract.
pub struct EventQueue<P> {
    heap: BinaryHeap<HeapKey>,
    slots: SlotMap<SlotKey, P>,
    next_seq: u64,
    stale: usize,
    compactions: u64,
}

/// The bytes a growable table of `len` entries in `capacity` slots of `slot` bytes may hold
/// before `margin` more entries arrive: its capacity, or, when it must grow meanwhile, the old
/// allocation and the doubled one, which coexist while the entries move (the heap's peak).
/// Memory budgets count this rather than the entries in use: a table that has just doubled
/// holds twice what it uses. A table smaller than `margin` counts its capacity only: its
/// growth is small, and left to the budget's per-entry prices.
pub fn reserved_bytes(len: usize, capacity: usize, slot: usize, margin: usize) -> u64 {
    let bytes = (capacity as u64) * (slot as u64);
    if capacity >= margin && len + margin > capacity {
        3 * bytes
    } else {
        bytes
    }
}

impl<P> Default for EventQueue<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P> EventQueue<P> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue with room for `capacity` pending events.
    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            slots: SlotMap::with_capacity_and_key(capacity),
            next_seq: 0,
            stale: 0,
            compactions: 0,
        }
    }

    #[inline]
    fn insert(&mut self, time: SimTime, payload: P) -> (u64, SlotKey) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = self.slots.insert(payload);
        self.heap.push(HeapKey { time, seq, slot });
        (seq, slot)
    }

    /// Schedules an event and returns its sequence number.
    #[inline]
    pub fn push(&mut self, time: SimTime, payload: P) -> u64 {
        self.insert(time, payload).0
    }

    /// Schedules a cancellable event. (Every event is cancellable underneath; the handle is
    /// what lets the model do it.)
    #[inline]
    pub fn push_timer(&mut self, time: SimTime, payload: P) -> TimerId {
        TimerId(self.insert(time, payload).1)
    }

    /// Cancels a timer and drops its payload; returns false if it already fired or was
    /// already cancelled.
    #[inline]
    pub fn cancel(&mut self, timer: TimerId) -> bool {
        if self.slots.remove(timer.0).is_none() {
            return false;
        }
        self.stale += 1;
        if self.stale >= COMPACT_MIN_STALE && self.stale * 2 > self.heap.len() {
            self.compact();
        }
        true
    }

    /// True if the timer has neither fired nor been cancelled.
    pub fn is_pending(&self, timer: TimerId) -> bool {
        self.slots.contains_key(timer.0)
    }

    fn compact(&mut self) {
        let slots = &self.slots;
        self.heap.retain(|k| slots.contains_key(k.slot));
        self.stale = 0;
        self.compactions += 1;
        debug_assert_eq!(self.heap.len(), self.slots.len());
    }

    /// Removes and returns the earliest live event.
    #[inline]
    pub fn pop(&mut self) -> Option<Scheduled<P>> {
        self.pop_due(SimTime::MAX).ok()
    }

    /// Removes and returns the earliest live event if it is due at or before `until`;
    /// otherwise returns the time of the earliest live event (`None` if there is none).
    #[inline]
    pub fn pop_due(&mut self, until: SimTime) -> Result<Scheduled<P>, Option<SimTime>> {
        loop {
            let top = *self.heap.peek().ok_or(None)?;
            if top.time > until && self.slots.contains_key(top.slot) {
                return Err(Some(top.time));
            }
            self.heap.pop();
            match self.slots.remove(top.slot) {
                Some(payload) => {
                    return Ok(Scheduled {
                        time: top.time,
                        seq: top.seq,
                        payload,
                    });
                }
                None => self.stale -= 1,
            }
        }
    }

    /// Live (not cancelled) pending events.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The bytes the queue's tables may hold before `margin` more events are pushed (see
    /// [`reserved_bytes`]).
    pub fn reserved(&self, margin: usize) -> u64 {
        reserved_bytes(
            self.heap.len(),
            self.heap.capacity(),
            std::mem::size_of::<HeapKey>(),
            margin,
        ) + reserved_bytes(
            self.slots.len(),
            self.slots.capacity(),
            std::mem::size_of::<P>() + std::mem::size_of::<u32>(),
            margin,
        )
    }

    /// True when no live event is pending.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The number of events ever scheduled (the next sequence number).
    pub fn scheduled_total(&self) -> u64 {
        self.next_seq
    }

    /// How many times the heap was rebuilt to shed cancelled keys.
    pub fn compactions(&self) -> u64 {
        self.compactions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut EventQueue<&'static str>) -> Vec<(u64, &'static str)> {
        std::iter::from_fn(|| q.pop().map(|s| (s.time.as_nanos(), s.payload))).collect()
    }

    #[test]
    fn equal_times_fire_in_scheduling_order() {
        let mut q = EventQueue::new();
        q.push(SimTime::from_nanos(5), "b1");
        q.push(SimTime::from_nanos(1), "a");
        q.push(SimTime::from_nanos(5), "b2");
        q.push_timer(SimTime::from_nanos(5), "b3");
        q.push(SimTime::from_nanos(5), "b4");
        assert_eq!(
            drain(&mut q),
            [(1, "a"), (5, "b1"), (5, "b2"), (5, "b3"), (5, "b4")]
        );
    }

    #[test]
    fn cancelled_timers_never_fire_and_cancel_is_idempotent() {
        let mut q = EventQueue::new();
        let t1 = q.push_timer(SimTime::from_nanos(10), "timeout");
        q.push(SimTime::from_nanos(5), "response");
        assert!(q.cancel(t1));
        assert!(!q.cancel(t1));
        assert!(!q.is_pending(t1));
        assert_eq!(q.len(), 1);
        assert_eq!(drain(&mut q), [(5, "response")]);
        let t2 = q.push_timer(SimTime::from_nanos(20), "late");
        assert_eq!(drain(&mut q), [(20, "late")]);
        assert!(!q.cancel(t2), "a fired timer cannot be cancelled");
    }

    #[test]
    fn mass_cancellation_keeps_the_heap_small() {
        let mut q: EventQueue<u32> = EventQueue::new();
        let mut kept = 0;
        for i in 0..100_000u32 {
            let t = q.push_timer(SimTime::from_nanos(u64::from(i) + 1_000_000), i);
            if i % 100 == 0 {
                kept += 1;
            } else {
                q.cancel(t);
            }
            assert!(q.heap.len() <= 2 * q.len() + COMPACT_MIN_STALE);
        }
        assert_eq!(q.len(), kept);
        assert!(q.compactions() > 0);
        let fired: Vec<u32> = std::iter::from_fn(|| q.pop().map(|s| s.payload)).collect();
        assert_eq!(fired.len(), kept);
        assert!(fired.iter().all(|i| i % 100 == 0));
        assert!(fired.windows(2).all(|w| w[0] < w[1]));
    }
}
