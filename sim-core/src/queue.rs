//! The pending-event set: [`EventQueue`], ordered by `(time, seq)`, with cancellable timers.
//!
//! **Ordering contract.** Events fire in increasing time; events at the same instant fire in
//! the order they were scheduled (each schedule takes the next sequence number). Nothing else
//! (the target, the payload, the memory layout) influences the order.
//!
//! **Design.** A radix heap on the event times, with the payloads in a slab. The heap keeps
//! 16-byte entries `(time, slot, generation)` in 256 buckets, by the highest hexadecimal
//! digit in which their time differs from `last` (the time of the last event taken) and
//! their value there ([`crate::radix`]); entries at exactly `last` wait in a `due` list.
//! Scheduling appends to one bucket (O(1), no comparisons). When `due` runs dry, the lowest
//! non-empty bucket holds the earliest events: its smallest time becomes `last` and its
//! entries are spread over the buckets of lower digits and `due`, each entry moving down at
//! most 16 times in its life, over contiguous memory, where a binary heap pays a cache miss
//! per level once it outgrows the cache.
//! Appends and the spreading keep each bucket's order, so within a bucket entries of equal
//! time stay in scheduling order and `due` is first in, first out: ties are broken by the
//! structure itself, with no sequence number in the entries. The heap is fast because the
//! engine is monotone (it never schedules before the current time, and asserts it); an
//! event scheduled before `last` is still ordered correctly, at the cost of gathering the
//! entries of the buckets below it into one.
//!
//! The slab holds each pending event's sequence number and payload under a slot index and a
//! generation; a [`TimerId`] is the pair. Taking or cancelling an event frees its slot
//! (O(1)) and bumps the generation, so an entry left in a bucket by a cancellation is
//! recognised as stale when it surfaces (one generation comparison, no dispatch), and a slot
//! whose generation is spent is retired rather than reused. Stale entries never outnumber
//! live ones by much: when they make up more than half of the entries (and at least 1,024),
//! every bucket drops them (O(n), amortised O(1) per cancel), so memory follows the number
//! of live events even when almost every timeout is cancelled, as it is in a healthy
//! request/response model. The buckets' room follows them too: events pass through the
//! buckets in turn, and a table emptied while the room of all of them is over three entries
//! per pending event (beyond 64 each keeps) gives the rest back.
//!
//! ARCHITECTURE.md records the measurements behind this choice (against binary and 4-ary
//! heaps, inline payloads, the `radix-heap` and `priority-queue` crates).

use crate::radix::{BUCKETS, Occupancy, bucket_of};
use crate::time::SimTime;
use std::num::NonZeroU32;

/// A handle to a cancellable event, returned by [`EventQueue::push_timer`].
///
/// Cancelling a handle whose event already fired or was already cancelled does nothing, so
/// a model may cancel without first checking whether the timeout raced the response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerId {
    slot: u32,
    generation: NonZeroU32,
}

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

/// A pending event as the buckets hold it: its time and where its payload is.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    slot: u32,
    generation: NonZeroU32,
}

/// Room (in entries) that `due` and each bucket keep when emptied, whatever the budget (in
/// all, about what 64 buckets keeping 256 each kept).
const ROOM_KEPT: usize = 64;

/// Stale entries below this count are never worth a sweep.
const COMPACT_MIN_STALE: usize = 1024;

/// Pending events ordered by `(time, seq)`; see the module docs for the contract.
#[derive(Clone)]
pub struct EventQueue<P> {
    /// The time of the last event taken (0 before the first): every entry is at or after it.
    last: u64,
    /// Entries at exactly `last`, in scheduling order; those before `due_head` were taken.
    due: Vec<Entry>,
    due_head: usize,
    /// Entries after `last`, by the highest digit in which their time differs from it and
    /// their value there.
    buckets: [Vec<Entry>; BUCKETS],
    /// Bit `b` is set when `buckets[b]` is not empty.
    occupied: Occupancy,
    slab: Slab<P>,
    next_seq: u64,
    /// Events taken or cancelled: `next_seq - ended` are pending.
    ended: u64,
    /// Entries whose event was cancelled and that are still in `due` or a bucket.
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

    /// An empty queue with room for `capacity` pending payloads (the buckets grow as they
    /// are used).
    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            last: 0,
            due: Vec::new(),
            due_head: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
            occupied: Occupancy::default(),
            slab: Slab::with_capacity(capacity),
            next_seq: 0,
            ended: 0,
            stale: 0,
            compactions: 0,
        }
    }

    #[inline(always)]
    fn insert(&mut self, time: SimTime, payload: P) -> (u64, TimerId) {
        let time = time.as_nanos();
        if time < self.last {
            self.lower_to(time);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let (slot, generation) = self.slab.insert(seq, payload);
        let entry = Entry {
            time,
            slot,
            generation,
        };
        if time == self.last {
            self.due.push(entry);
        } else {
            let bucket = bucket_of(time, self.last);
            self.buckets[bucket].push(entry);
            self.occupied.set(bucket);
        }
        (seq, TimerId { slot, generation })
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
        self.insert(time, payload).1
    }

    /// Cancels a timer and drops its payload; returns false if it already fired or was
    /// already cancelled.
    #[inline]
    pub fn cancel(&mut self, timer: TimerId) -> bool {
        if self.slab.remove(timer.slot, timer.generation).is_none() {
            return false;
        }
        self.ended += 1;
        self.stale += 1;
        if self.stale >= COMPACT_MIN_STALE && self.stale > self.len() {
            self.compact();
        }
        true
    }

    /// True if the timer has neither fired nor been cancelled.
    pub fn is_pending(&self, timer: TimerId) -> bool {
        self.slab.contains(timer.slot, timer.generation)
    }

    /// Drops every stale entry, keeping the order of the rest.
    fn compact(&mut self) {
        let slab = &self.slab;
        let live = |e: &Entry| slab.contains(e.slot, e.generation);
        self.due.drain(..self.due_head);
        self.due_head = 0;
        self.due.retain(live);
        for (b, bucket) in self.buckets.iter_mut().enumerate() {
            bucket.retain(live);
            if bucket.is_empty() {
                self.occupied.clear(b);
            }
        }
        self.stale = 0;
        self.compactions += 1;
        self.debug_check();
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
            let Some(entry) = self.next_entry(until.as_nanos()) else {
                return Err(self.earliest());
            };
            match self.slab.remove(entry.slot, entry.generation) {
                Some((seq, payload)) => {
                    self.ended += 1;
                    return Ok(Scheduled {
                        time: SimTime::from_nanos(entry.time),
                        seq,
                        payload,
                    });
                }
                None => self.stale -= 1,
            }
        }
    }

    /// Takes the first entry in `(time, seq)` order, live or stale, if it is at or before
    /// `until`: the head of `due`, or else the earliest of the lowest occupied bucket. Nothing
    /// moves when nothing is due: `last` may not pass `until`, since a model may still
    /// schedule events before the earliest pending one.
    #[inline]
    fn next_entry(&mut self, until: u64) -> Option<Entry> {
        if let Some(&entry) = self.due.get(self.due_head) {
            if entry.time > until {
                return None;
            }
            self.due_head += 1;
            if self.due_head == self.due.len() {
                self.due.clear();
                self.due_head = 0;
                if self.due.capacity() > ROOM_KEPT && self.over_budget() {
                    self.due.shrink_to(ROOM_KEPT);
                }
            }
            return Some(entry);
        }
        let b = self.occupied.lowest()?;
        match self.buckets[b][..] {
            // The common cases of a short queue: one entry, nothing to spread; two, the
            // earlier is taken (the first of them at equal times) and the other moves.
            [only] => (only.time <= until).then(|| self.take_bucket(b, only, None)),
            [one, two] if two.time < one.time => {
                (two.time <= until).then(|| self.take_bucket(b, two, Some(one)))
            }
            [one, two] => (one.time <= until).then(|| self.take_bucket(b, one, Some(two))),
            _ => self.spread(b, until),
        }
    }

    /// Empties bucket `b`, which held `first` and, if any, `other`, not earlier: `first` is
    /// taken, and `other` waits in `due` if it is at the same time, else moves down.
    #[inline(always)]
    fn take_bucket(&mut self, b: usize, first: Entry, other: Option<Entry>) -> Entry {
        self.buckets[b].clear();
        self.occupied.clear(b);
        self.last = first.time;
        match other {
            None => {}
            Some(other) if other.time == first.time => self.due.push(other),
            Some(other) => self.move_down(other),
        }
        first
    }

    /// Puts an entry after `last` in its bucket.
    #[inline(always)]
    fn move_down(&mut self, entry: Entry) {
        let below = bucket_of(entry.time, self.last);
        self.buckets[below].push(entry);
        self.occupied.set(below);
    }

    /// Takes the earliest entry of bucket `b` (the lowest occupied) if it is at or before
    /// `until`: the bucket's smallest time becomes `last`, the first entry at that time is
    /// taken, the other entries at that time go to `due` and the rest to the lower buckets,
    /// in the bucket's order.
    fn spread(&mut self, b: usize, until: u64) -> Option<Entry> {
        let (lower, upper) = self.buckets.split_at_mut(b);
        let bucket = &mut upper[0];
        let earliest = bucket.iter().map(|e| e.time).min()?;
        if earliest > until {
            return None;
        }
        self.last = earliest;
        let mut first = None;
        // The bits of the buckets filled, gathered in a register: the pushes may allocate,
        // so `self.occupied` itself would be stored and reloaded for every entry.
        let mut filled = Occupancy::default();
        for &entry in bucket.iter() {
            if entry.time == earliest {
                if first.is_none() {
                    first = Some(entry);
                } else {
                    self.due.push(entry);
                }
            } else {
                let below = bucket_of(entry.time, earliest);
                debug_assert!(below < b, "an entry moved up a bucket");
                lower[below].push(entry);
                filled.set(below);
            }
        }
        self.occupied.clear(b);
        self.occupied.union(filled);
        bucket.clear();
        if bucket.capacity() > ROOM_KEPT && self.over_budget() {
            self.buckets[b].shrink_to(ROOM_KEPT);
        }
        first
    }

    /// True when `due` and the buckets together have room for more than three entries per
    /// pending event, beyond what each keeps anyway. Each bucket's room is its own, and the
    /// events move through the buckets in turn: without this budget, every bucket would keep
    /// room for the most entries it ever held, and a long run would hold room for several
    /// times its pending events. An emptied table with more than [`ROOM_KEPT`] gives the
    /// rest back while the room is over budget, which costs a reallocation only when the
    /// room is needed again.
    #[inline(never)]
    fn over_budget(&self) -> bool {
        let room = std::iter::once(&self.due)
            .chain(&self.buckets)
            .map(Vec::capacity)
            .sum::<usize>();
        room > 3 * self.len() + (BUCKETS + 1) * ROOM_KEPT
    }

    /// Moves `last` back to `time`, for an event scheduled before it: a model that schedules
    /// before the last event it took, or after `pop_due` went past stale entries to find
    /// nothing due. Every entry is at or after the old `last`, which differs from `time`
    /// first in digit `p`, where `last` has the larger value `v`, so that `last` belongs in
    /// bucket `h = 16 p + v` relative to `time`. The entries of `due` and of the buckets below
    /// `h` (all of lower digits: those of digit `p` hold values above `v`) share digit `p`
    /// with `last` and belong in `h` too; `h` itself is empty, and the buckets above keep
    /// their entries, which differ from `time` where they differed from `last`. Gathering
    /// keeps each bucket's order, and equal times were all in one place, so ties stay in
    /// scheduling order.
    #[cold]
    fn lower_to(&mut self, time: u64) {
        let h = bucket_of(self.last, time);
        let mut gathered = std::mem::take(&mut self.buckets[h]);
        debug_assert!(
            gathered.is_empty(),
            "bucket {h} held entries before `last`'s digit"
        );
        gathered.extend(self.due.drain(self.due_head..));
        self.due.clear();
        self.due_head = 0;
        for lower in &mut self.buckets[..h] {
            gathered.append(lower);
        }
        self.occupied.clear_below(h);
        if !gathered.is_empty() {
            self.occupied.set(h);
        }
        self.buckets[h] = gathered;
        self.last = time;
        self.debug_check();
    }

    /// The time of the earliest live event, dropping the stale entries met on the way.
    #[cold]
    fn earliest(&mut self) -> Option<SimTime> {
        let slab = &self.slab;
        let live = |e: &Entry| slab.contains(e.slot, e.generation);
        let mut dropped = 0;
        if self.due[self.due_head..].iter().any(live) {
            return Some(SimTime::from_nanos(self.last));
        }
        dropped += self.due.len() - self.due_head;
        self.due.clear();
        self.due_head = 0;
        let mut found = None;
        while let Some(b) = self.occupied.lowest() {
            let bucket = &mut self.buckets[b];
            let before = bucket.len();
            bucket.retain(live);
            dropped += before - bucket.len();
            if let Some(time) = bucket.iter().map(|e| e.time).min() {
                found = Some(SimTime::from_nanos(time));
                break;
            }
            self.occupied.clear(b);
        }
        self.stale -= dropped;
        found
    }

    /// Live (not cancelled) pending events.
    pub fn len(&self) -> usize {
        (self.next_seq - self.ended) as usize
    }

    /// The bytes the queue's tables may hold before `margin` more events are pushed (see
    /// [`reserved_bytes`]): the slab, `due` and each bucket.
    pub fn reserved(&self, margin: usize) -> u64 {
        let entry = std::mem::size_of::<Entry>();
        let entries: u64 = std::iter::once(&self.due)
            .chain(&self.buckets)
            .map(|b| reserved_bytes(b.len(), b.capacity(), entry, margin))
            .sum();
        entries
            + reserved_bytes(
                self.len(),
                self.slab.slots.capacity(),
                std::mem::size_of::<Slot<P>>(),
                margin,
            )
    }

    /// True when no live event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of events ever scheduled (the next sequence number).
    pub fn scheduled_total(&self) -> u64 {
        self.next_seq
    }

    /// How many times the buckets were swept of cancelled entries.
    pub fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Entries in `due` (not yet taken) and the buckets, live or stale.
    fn entries(&self) -> usize {
        self.due.len() - self.due_head + self.buckets.iter().map(Vec::len).sum::<usize>()
    }

    /// In debug builds, checks the whole structure: every entry is where its time says, the
    /// occupancy bits match, and the entries are the live events and the stale count.
    fn debug_check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        assert!(
            self.due[self.due_head..]
                .iter()
                .all(|e| e.time == self.last)
        );
        for (b, bucket) in self.buckets.iter().enumerate() {
            assert_eq!(self.occupied.has(b), !bucket.is_empty());
            assert!(
                bucket
                    .iter()
                    .all(|e| e.time > self.last && bucket_of(e.time, self.last) == b),
                "an entry in the wrong bucket"
            );
        }
        assert_eq!(self.entries(), self.len() + self.stale);
    }
}

/// Pending payloads by slot, with a generation per slot so that a handle or an entry of an
/// event that is gone never reaches the slot's next event.
#[derive(Clone)]
struct Slab<P> {
    slots: Vec<Slot<P>>,
    /// The most recently freed slot, reused first while it is still in cache; the free slots
    /// form a list through [`Slot::next_free`].
    free: Option<u32>,
}

#[derive(Clone)]
struct Slot<P> {
    generation: NonZeroU32,
    /// The next free slot, while this one is on the free list.
    next_free: Option<u32>,
    /// The pending event's sequence number and payload; `None` while the slot is free or
    /// retired (its generations spent: never reused, so no old handle can match a new event).
    event: Option<(u64, P)>,
}

impl<P> Slab<P> {
    fn with_capacity(capacity: usize) -> Self {
        Slab {
            slots: Vec::with_capacity(capacity),
            free: None,
        }
    }

    #[inline(always)]
    fn insert(&mut self, seq: u64, payload: P) -> (u32, NonZeroU32) {
        match self.free {
            Some(index) => {
                let slot = &mut self.slots[index as usize];
                debug_assert!(
                    slot.event.is_none(),
                    "slot {index} is on the free list but taken"
                );
                slot.event = Some((seq, payload));
                self.free = slot.next_free;
                (index, slot.generation)
            }
            None => {
                let index = u32::try_from(self.slots.len())
                    .expect("fewer than 2^32 event slots (pending and retired)");
                self.slots.push(Slot {
                    generation: NonZeroU32::MIN,
                    next_free: None,
                    event: Some((seq, payload)),
                });
                (index, NonZeroU32::MIN)
            }
        }
    }

    /// Frees the slot if it still holds the event of this generation, and returns the event.
    #[inline]
    fn remove(&mut self, index: u32, generation: NonZeroU32) -> Option<(u64, P)> {
        let slot = self.slots.get_mut(index as usize)?;
        if slot.generation != generation {
            return None;
        }
        let event = slot.event.take()?;
        // A slot whose generations are spent is retired: off the free list for good.
        if let Some(next) = generation.checked_add(1) {
            slot.generation = next;
            slot.next_free = self.free;
            self.free = Some(index);
        }
        Some(event)
    }

    #[inline]
    fn contains(&self, index: u32, generation: NonZeroU32) -> bool {
        self.slots
            .get(index as usize)
            .is_some_and(|slot| slot.generation == generation && slot.event.is_some())
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
    fn equal_times_keep_their_order_through_several_spreads() {
        // Times that share high bits but not low ones are spread several times before they
        // are due; the ties among them must come out in scheduling order all the same.
        let mut q = EventQueue::new();
        let times = [1 << 20, (1 << 20) + 3, 1 << 20, (1 << 20) + 3, 7, 1 << 20];
        for (i, t) in times.iter().enumerate() {
            q.push(SimTime::from_nanos(*t), i);
        }
        assert_eq!(q.pop().map(|s| s.payload), Some(4));
        q.push(SimTime::from_nanos((1 << 20) + 3), 6);
        q.push(SimTime::from_nanos(1 << 20), 7);
        let order: Vec<usize> = std::iter::from_fn(|| q.pop().map(|s| s.payload)).collect();
        assert_eq!(order, [0, 2, 5, 7, 1, 3, 6]);
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
        let t2 = q.push_timer(SimTime::from_nanos(20), "late");
        assert_eq!(t2.slot, t1.slot, "the freed slot is reused");
        assert!(q.is_pending(t2));
        assert!(
            !q.is_pending(t1),
            "an old handle does not reach the slot's new event"
        );
        assert!(!q.cancel(t1));
        assert_eq!(drain(&mut q), [(5, "response"), (20, "late")]);
        assert!(!q.cancel(t2), "a fired timer cannot be cancelled");
    }

    #[test]
    fn pop_due_reports_the_earliest_live_time_without_moving_on() {
        let mut q = EventQueue::new();
        let early = q.push_timer(SimTime::from_nanos(100), "early");
        q.push(SimTime::from_nanos(300), "late");
        q.cancel(early);
        assert_eq!(
            q.pop_due(SimTime::from_nanos(50)).err(),
            Some(Some(SimTime::from_nanos(300)))
        );
        // Nothing was taken, so an event before the earliest pending one may still come.
        q.push(SimTime::from_nanos(60), "between");
        assert_eq!(drain(&mut q), [(60, "between"), (300, "late")]);
        assert_eq!(q.pop_due(SimTime::MAX).err(), Some(None));
    }

    #[test]
    fn a_slot_whose_generations_are_spent_is_retired() {
        let mut q = EventQueue::new();
        let t = q.push_timer(SimTime::from_nanos(1), "old");
        q.slab.slots[t.slot as usize].generation = NonZeroU32::MAX;
        let spent = TimerId {
            slot: t.slot,
            generation: NonZeroU32::MAX,
        };
        assert!(q.cancel(spent));
        assert!(!q.is_pending(spent));
        let fresh = q.push_timer(SimTime::from_nanos(2), "new");
        assert_ne!(fresh.slot, t.slot, "a retired slot is never reused");
        assert!(!q.cancel(spent));
        assert_eq!(drain(&mut q), [(2, "new")]);
    }

    #[test]
    fn mass_cancellation_keeps_the_buckets_small() {
        let mut q: EventQueue<u32> = EventQueue::new();
        let mut kept = 0;
        for i in 0..100_000u32 {
            let t = q.push_timer(SimTime::from_nanos(u64::from(i) + 1_000_000), i);
            if i % 100 == 0 {
                kept += 1;
            } else {
                q.cancel(t);
            }
            assert!(q.entries() <= 2 * q.len() + COMPACT_MIN_STALE);
        }
        assert_eq!(q.len(), kept);
        assert!(q.compactions() > 0);
        let fired: Vec<u32> = std::iter::from_fn(|| q.pop().map(|s| s.payload)).collect();
        assert_eq!(fired.len(), kept);
        assert!(fired.iter().all(|i| i % 100 == 0));
        assert!(fired.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn room_follows_the_pending_events_over_a_long_run() {
        // A hold model: 20,000 pending events, each replaced at now + Exp(1s) when it fires,
        // over 50 simulated seconds, so that the events pass through every bucket up to the
        // 36th bit. Each bucket would otherwise keep room for the most entries it ever held.
        let pending = 20_000;
        let mut rng = crate::Seed(1).stream("hold");
        let gap = crate::Sampler::exponential(crate::SimDuration::from_secs(1));
        let mut q: EventQueue<u64> = EventQueue::new();
        for i in 0..pending {
            q.push(SimTime::ZERO + gap.sample(&mut rng), i);
        }
        let mut most = 0;
        for i in 0..1_000_000 {
            let s = q.pop().expect("the hold model never runs dry");
            q.push(s.time + gap.sample(&mut rng), i);
            if i % 1_000 == 0 {
                let room: usize = q.buckets.iter().map(Vec::capacity).sum();
                most = most.max(room + q.due.capacity());
            }
        }
        assert!(q.last > 1 << 35, "the run crossed the 35th bit: {}", q.last);
        // The budget is three entries per pending event beyond the room each table keeps; a
        // table may grow between two checks, so allow one more.
        let bound = 4 * q.len() + (BUCKETS + 1) * ROOM_KEPT;
        assert!(most <= bound, "room for {most} entries, over {bound}");
    }

    #[test]
    fn an_event_before_the_last_one_taken_still_comes_out_in_order() {
        let mut q = EventQueue::new();
        for (t, p) in [(10, "a"), (12, "c"), (12, "d"), (1 << 30, "far"), (11, "b")] {
            q.push(SimTime::from_nanos(t), p);
        }
        assert_eq!(q.pop().map(|s| s.payload), Some("a"));
        assert_eq!(q.pop().map(|s| s.payload), Some("b"));
        q.push(SimTime::from_nanos(3), "past");
        q.push(SimTime::from_nanos(12), "e");
        assert_eq!(
            drain(&mut q),
            [
                (3, "past"),
                (12, "c"),
                (12, "d"),
                (12, "e"),
                (1 << 30, "far")
            ]
        );
    }
}
