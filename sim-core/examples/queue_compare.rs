//! Event-queue designs compared on the workloads of the engine. Every design keeps the
//! engine's contract (increasing time, ties in scheduling order, O(1) cancellable timers):
//!
//! - `radix+slab`: sim-core's `EventQueue` (a radix heap of 16-byte `(time, slot,
//!   generation)` entries over the time's hexadecimal digits, payloads and sequence numbers
//!   in a slab);
//! - `binary+slotmap`: the engine's queue before it (std `BinaryHeap` of 24-byte `(time,
//!   seq, slot)` keys, payloads in a slotmap, stale keys swept when they pass half the heap);
//! - `radix inline`: the same radix heap holding `(time, seq, timer, payload)` inline, with
//!   a table of timer generations for cancellation;
//! - `4-ary+slotmap`: the `dary_heap` crate's 4-ary heap of `(time, seq, slot)` keys,
//!   payloads in a slotmap (the `binary+slotmap` design with a shallower heap);
//! - `radix-heap crate`: the `radix-heap` crate's `RadixHeapMap` keyed on `(time, seq)`
//!   (its ties would otherwise come out last in, first out), payloads in a slotmap; it has
//!   no way to drop cancelled keys before they surface;
//! - `inline binary`: std `BinaryHeap` with the payload inline, cancellation by a slotmap of
//!   live timers (the design sim-core started with);
//! - `priority-queue`: the `priority-queue` crate (`PriorityQueue<seq, Reverse<(time,
//!   seq)>>`), cancellation by keyed removal.
//!
//! Workloads: `hold-2` (two pending events, as in M/M/1), `hold-100k` and `hold-1m`
//! (100,000 and 1,000,000 pending), and `timeouts` (10,000 requests in flight, each with a
//! 30s timeout that its response, after ~Exp(100ms), cancels, as in a healthy
//! request/response model), with a 24-byte payload (target, request, kind); and
//! `timeouts-72B`, the same with a 72-byte payload, the size of a scenario's message.
//!
//! `cargo run --release -p sim-core --example queue_compare -- --ops 3000000`
//!
//! Prints ns per operation (one pop plus what it schedules), each design's best of
//! `--rounds` rounds that alternate the designs, and its ratio to `radix+slab` measured in
//! the same run. Every design must fire the same events: the run fails otherwise.
//!
//! Then one line per workload against the queue the engine had before (`binary+slotmap`, when
//! it ran), `ratio` being its time over this queue's (this queue's speed over its, as in the
//! table): `workload=.. engine_ns_per_op=.. binary_slotmap_ns_per_op=.. ratio=..`, e.g.
//! `-- --only timeouts-72B --designs binary+slotmap` for the common case of a scenario.

use clap::Parser;
use dary_heap::QuaternaryHeap;
use priority_queue::PriorityQueue;
use radix_heap::RadixHeapMap;
use sim_core::queue::EventQueue;
use sim_core::radix::{BUCKETS, Occupancy, bucket_of};
use sim_core::sample::Sampler;
use sim_core::{RngStream, Seed, SimDuration, SimTime};
use slotmap::{DefaultKey, SlotMap};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::num::NonZeroU32;

/// Event-queue design comparison.
#[derive(Parser)]
struct Args {
    /// Operations per workload.
    #[arg(long, default_value_t = 3_000_000)]
    ops: u64,
    /// Rounds (each design's best is kept).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Only the workloads whose name contains this.
    #[arg(long, default_value = "")]
    only: String,
    /// Only the designs whose name contains this (the first design, the ratios' baseline,
    /// always runs), e.g. to count one design's instructions under callgrind.
    #[arg(long, default_value = "")]
    designs: String,
}

/// What a workload attaches to its events.
trait Payload: Copy {
    fn new(target: u64, request: u64, kind: u64) -> Self;
    fn target(&self) -> u64;
    fn kind(&self) -> u64;
    /// A word that depends on every field, so that none is optimised away.
    fn check(&self) -> u64;
}

/// A payload the size of a small model message (target + request id + kind).
#[derive(Clone, Copy)]
struct Small {
    target: u64,
    request: u64,
    kind: u64,
}

impl Payload for Small {
    fn new(target: u64, request: u64, kind: u64) -> Self {
        Small {
            target,
            request,
            kind,
        }
    }
    fn target(&self) -> u64 {
        self.target
    }
    fn kind(&self) -> u64 {
        self.kind
    }
    fn check(&self) -> u64 {
        self.target ^ self.request ^ self.kind
    }
}

/// A payload the size of a scenario's message (a network delivery with its reply).
#[derive(Clone, Copy)]
struct Large {
    small: Small,
    rest: [u64; 6],
}

impl Payload for Large {
    fn new(target: u64, request: u64, kind: u64) -> Self {
        Large {
            small: Small::new(target, request, kind),
            rest: [request; 6],
        }
    }
    fn target(&self) -> u64 {
        self.small.target
    }
    fn kind(&self) -> u64 {
        self.small.kind
    }
    fn check(&self) -> u64 {
        self.small.check() ^ self.rest[5]
    }
}

/// What each design must do.
trait Queue<T> {
    type Timer: Copy;
    fn push(&mut self, time: u64, payload: T);
    fn push_timer(&mut self, time: u64, payload: T) -> Self::Timer;
    fn cancel(&mut self, timer: Self::Timer);
    fn pop(&mut self) -> Option<(u64, T)>;
}

// ---------------------------------------------------------------------------------------
// radix+slab: the engine's queue.

impl<T> Queue<T> for EventQueue<T> {
    type Timer = sim_core::TimerId;
    fn push(&mut self, time: u64, payload: T) {
        EventQueue::push(self, SimTime::from_nanos(time), payload);
    }
    fn push_timer(&mut self, time: u64, payload: T) -> Self::Timer {
        EventQueue::push_timer(self, SimTime::from_nanos(time), payload)
    }
    fn cancel(&mut self, timer: Self::Timer) {
        EventQueue::cancel(self, timer);
    }
    fn pop(&mut self) -> Option<(u64, T)> {
        EventQueue::pop(self).map(|s| (s.time.as_nanos(), s.payload))
    }
}

// ---------------------------------------------------------------------------------------
// binary+slotmap and 4-ary+slotmap: a heap of (time, seq, slot) keys, payloads in a
// slotmap, cancellation by slot removal, stale keys swept when they pass half of the heap.

#[derive(Clone, Copy)]
struct Key {
    time: u64,
    seq: u64,
    slot: DefaultKey,
}
impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    /// Reversed: both heaps are max-heaps.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// The part of std's and dary_heap's heaps that the keyed design uses.
trait KeyHeap: Default {
    fn push(&mut self, key: Key);
    fn pop(&mut self) -> Option<Key>;
    fn len(&self) -> usize;
    fn retain(&mut self, f: impl FnMut(&Key) -> bool);
}

impl KeyHeap for BinaryHeap<Key> {
    fn push(&mut self, key: Key) {
        BinaryHeap::push(self, key);
    }
    fn pop(&mut self) -> Option<Key> {
        BinaryHeap::pop(self)
    }
    fn len(&self) -> usize {
        BinaryHeap::len(self)
    }
    fn retain(&mut self, f: impl FnMut(&Key) -> bool) {
        BinaryHeap::retain(self, f);
    }
}

impl KeyHeap for QuaternaryHeap<Key> {
    fn push(&mut self, key: Key) {
        QuaternaryHeap::push(self, key);
    }
    fn pop(&mut self) -> Option<Key> {
        QuaternaryHeap::pop(self)
    }
    fn len(&self) -> usize {
        QuaternaryHeap::len(self)
    }
    fn retain(&mut self, f: impl FnMut(&Key) -> bool) {
        QuaternaryHeap::retain(self, f);
    }
}

struct Keyed<H, T> {
    heap: H,
    slots: SlotMap<DefaultKey, T>,
    seq: u64,
    stale: usize,
}

impl<H: KeyHeap, T> Default for Keyed<H, T> {
    fn default() -> Self {
        Keyed {
            heap: H::default(),
            slots: SlotMap::new(),
            seq: 0,
            stale: 0,
        }
    }
}

impl<H: KeyHeap, T> Queue<T> for Keyed<H, T> {
    type Timer = DefaultKey;
    fn push(&mut self, time: u64, payload: T) {
        self.push_timer(time, payload);
    }
    fn push_timer(&mut self, time: u64, payload: T) -> DefaultKey {
        let slot = self.slots.insert(payload);
        self.heap.push(Key {
            time,
            seq: self.seq,
            slot,
        });
        self.seq += 1;
        slot
    }
    fn cancel(&mut self, timer: DefaultKey) {
        if self.slots.remove(timer).is_some() {
            self.stale += 1;
            if self.stale >= 1024 && self.stale * 2 > self.heap.len() {
                let slots = &self.slots;
                self.heap.retain(|k| slots.contains_key(k.slot));
                self.stale = 0;
            }
        }
    }
    fn pop(&mut self) -> Option<(u64, T)> {
        loop {
            let key = self.heap.pop()?;
            match self.slots.remove(key.slot) {
                Some(payload) => return Some((key.time, payload)),
                None => self.stale -= 1,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// radix inline: the engine's radix heap over entries that carry the payload.

/// Entries of the radix heap: anything with a time.
trait Timed {
    fn time(&self) -> u64;
}

/// The radix heap of the engine's queue, over any entry, on the engine's index
/// (`sim_core::radix`; see sim-core's `queue.rs` for the reasoning; this copy serves the
/// inline design only).
struct Radix<E> {
    last: u64,
    due: Vec<E>,
    due_head: usize,
    buckets: [Vec<E>; BUCKETS],
    occupied: Occupancy,
}

impl<E: Timed + Copy> Radix<E> {
    fn new() -> Self {
        Radix {
            last: 0,
            due: Vec::new(),
            due_head: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
            occupied: Occupancy::default(),
        }
    }

    #[inline]
    fn push(&mut self, entry: E) {
        let time = entry.time();
        assert!(time >= self.last, "this copy is monotone only");
        if time == self.last {
            self.due.push(entry);
        } else {
            let b = bucket_of(time, self.last);
            self.buckets[b].push(entry);
            self.occupied.set(b);
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<E> {
        if let Some(&entry) = self.due.get(self.due_head) {
            self.due_head += 1;
            if self.due_head == self.due.len() {
                self.due.clear();
                self.due_head = 0;
            }
            return Some(entry);
        }
        let b = self.occupied.lowest()?;
        let (lower, upper) = self.buckets.split_at_mut(b);
        let bucket = &mut upper[0];
        if let [entry] = bucket[..] {
            bucket.clear();
            self.occupied.clear(b);
            self.last = entry.time();
            return Some(entry);
        }
        let earliest = bucket.iter().map(E::time).min()?;
        self.occupied.clear(b);
        self.last = earliest;
        let mut first = None;
        for entry in bucket.drain(..) {
            let time = entry.time();
            if time == earliest {
                if first.is_none() {
                    first = Some(entry);
                } else {
                    self.due.push(entry);
                }
            } else {
                let below = bucket_of(time, earliest);
                lower[below].push(entry);
                self.occupied.set(below);
            }
        }
        first
    }

    fn retain(&mut self, mut f: impl FnMut(&E) -> bool) {
        self.due.drain(..self.due_head);
        self.due_head = 0;
        self.due.retain(&mut f);
        for (b, bucket) in self.buckets.iter_mut().enumerate() {
            bucket.retain(&mut f);
            if bucket.is_empty() {
                self.occupied.clear(b);
            }
        }
    }
}

#[derive(Clone, Copy)]
struct TimerRef {
    slot: u32,
    generation: NonZeroU32,
}

#[derive(Clone, Copy)]
struct InlineRadixEntry<T> {
    time: u64,
    seq: u64,
    timer: Option<TimerRef>,
    payload: T,
}

impl<T> Timed for InlineRadixEntry<T> {
    fn time(&self) -> u64 {
        self.time
    }
}

struct RadixInline<T> {
    radix: Radix<InlineRadixEntry<T>>,
    /// The current generation of each timer slot; a timer is live while its entry's
    /// generation is the slot's and the slot is taken.
    timers: Vec<(NonZeroU32, bool)>,
    free: Vec<u32>,
    seq: u64,
    live: usize,
    stale: usize,
}

impl<T: Copy> Default for RadixInline<T> {
    fn default() -> Self {
        RadixInline {
            radix: Radix::new(),
            timers: Vec::new(),
            free: Vec::new(),
            seq: 0,
            live: 0,
            stale: 0,
        }
    }
}

impl<T: Copy> RadixInline<T> {
    fn insert(&mut self, time: u64, timer: Option<TimerRef>, payload: T) {
        self.radix.push(InlineRadixEntry {
            time,
            seq: self.seq,
            timer,
            payload,
        });
        self.seq += 1;
        self.live += 1;
    }

    /// Ends a timer: false if it already ended.
    fn end(&mut self, timer: TimerRef) -> bool {
        let (generation, taken) = &mut self.timers[timer.slot as usize];
        if *generation != timer.generation || !*taken {
            return false;
        }
        *generation = generation.checked_add(1).expect("generations last");
        *taken = false;
        self.free.push(timer.slot);
        true
    }
}

impl<T: Copy> Queue<T> for RadixInline<T> {
    type Timer = TimerRef;
    fn push(&mut self, time: u64, payload: T) {
        self.insert(time, None, payload);
    }
    fn push_timer(&mut self, time: u64, payload: T) -> TimerRef {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.timers.push((NonZeroU32::MIN, false));
                u32::try_from(self.timers.len() - 1).expect("few timers")
            }
        };
        let (generation, taken) = &mut self.timers[slot as usize];
        *taken = true;
        let timer = TimerRef {
            slot,
            generation: *generation,
        };
        self.insert(time, Some(timer), payload);
        timer
    }
    fn cancel(&mut self, timer: TimerRef) {
        if self.end(timer) {
            self.live -= 1;
            self.stale += 1;
            if self.stale >= 1024 && self.stale > self.live {
                let timers = &self.timers;
                self.radix.retain(|e| {
                    e.timer.is_none_or(|t| {
                        let (generation, taken) = timers[t.slot as usize];
                        taken && generation == t.generation
                    })
                });
                self.stale = 0;
            }
        }
    }
    fn pop(&mut self) -> Option<(u64, T)> {
        loop {
            let entry = self.radix.pop()?;
            if let Some(timer) = entry.timer
                && !self.end(timer)
            {
                self.stale -= 1;
                continue;
            }
            self.live -= 1;
            std::hint::black_box(entry.seq);
            return Some((entry.time, entry.payload));
        }
    }
}

// ---------------------------------------------------------------------------------------
// radix-heap crate: keyed on (time, seq) so that ties come out in scheduling order.

struct RadixCrate<T> {
    heap: RadixHeapMap<Reverse<(u64, u64)>, DefaultKey>,
    slots: SlotMap<DefaultKey, T>,
    seq: u64,
}

impl<T> Default for RadixCrate<T> {
    fn default() -> Self {
        RadixCrate {
            heap: RadixHeapMap::new(),
            slots: SlotMap::new(),
            seq: 0,
        }
    }
}

impl<T> Queue<T> for RadixCrate<T> {
    type Timer = DefaultKey;
    fn push(&mut self, time: u64, payload: T) {
        self.push_timer(time, payload);
    }
    fn push_timer(&mut self, time: u64, payload: T) -> DefaultKey {
        let slot = self.slots.insert(payload);
        self.heap.push(Reverse((time, self.seq)), slot);
        self.seq += 1;
        slot
    }
    fn cancel(&mut self, timer: DefaultKey) {
        // The crate cannot drop the key: it stays until it surfaces.
        self.slots.remove(timer);
    }
    fn pop(&mut self) -> Option<(u64, T)> {
        loop {
            let (Reverse((time, _)), slot) = self.heap.pop()?;
            if let Some(payload) = self.slots.remove(slot) {
                return Some((time, payload));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// inline binary: std BinaryHeap with inline payloads, a slotmap of live timers.

struct InlineEntry<T> {
    time: u64,
    seq: u64,
    timer: Option<DefaultKey>,
    payload: T,
}
impl<T> PartialEq for InlineEntry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl<T> Eq for InlineEntry<T> {}
impl<T> PartialOrd for InlineEntry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for InlineEntry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

struct InlineHeap<T> {
    heap: BinaryHeap<InlineEntry<T>>,
    timers: SlotMap<DefaultKey, ()>,
    seq: u64,
}

impl<T> Default for InlineHeap<T> {
    fn default() -> Self {
        InlineHeap {
            heap: BinaryHeap::new(),
            timers: SlotMap::new(),
            seq: 0,
        }
    }
}

impl<T> Queue<T> for InlineHeap<T> {
    type Timer = DefaultKey;
    fn push(&mut self, time: u64, payload: T) {
        self.seq += 1;
        self.heap.push(InlineEntry {
            time,
            seq: self.seq,
            timer: None,
            payload,
        });
    }
    fn push_timer(&mut self, time: u64, payload: T) -> DefaultKey {
        let key = self.timers.insert(());
        self.seq += 1;
        self.heap.push(InlineEntry {
            time,
            seq: self.seq,
            timer: Some(key),
            payload,
        });
        key
    }
    fn cancel(&mut self, timer: DefaultKey) {
        self.timers.remove(timer);
    }
    fn pop(&mut self) -> Option<(u64, T)> {
        loop {
            let e = self.heap.pop()?;
            if let Some(k) = e.timer
                && self.timers.remove(k).is_none()
            {
                continue;
            }
            return Some((e.time, e.payload));
        }
    }
}

// ---------------------------------------------------------------------------------------
// priority-queue crate.

/// The crate's item: the payload rides along, hashed and compared by its sequence number
/// only, so that cancelling by sequence number (`remove(&seq)`) finds it.
struct Item<T> {
    seq: u64,
    payload: T,
}
impl<T> PartialEq for Item<T> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl<T> Eq for Item<T> {}
impl<T> std::hash::Hash for Item<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.seq.hash(state);
    }
}
impl<T> std::borrow::Borrow<u64> for Item<T> {
    fn borrow(&self) -> &u64 {
        &self.seq
    }
}

struct Pq<T> {
    queue: PriorityQueue<Item<T>, Reverse<(u64, u64)>>,
    seq: u64,
}

impl<T> Default for Pq<T> {
    fn default() -> Self {
        Pq {
            queue: PriorityQueue::new(),
            seq: 0,
        }
    }
}

impl<T> Queue<T> for Pq<T> {
    type Timer = u64;
    fn push(&mut self, time: u64, payload: T) {
        self.push_timer(time, payload);
    }
    fn push_timer(&mut self, time: u64, payload: T) -> u64 {
        self.seq += 1;
        self.queue.push(
            Item {
                seq: self.seq,
                payload,
            },
            Reverse((time, self.seq)),
        );
        self.seq
    }
    fn cancel(&mut self, timer: u64) {
        self.queue.remove(&timer);
    }
    fn pop(&mut self) -> Option<(u64, T)> {
        let (item, Reverse((time, _))) = self.queue.pop()?;
        Some((time, item.payload))
    }
}

// ---------------------------------------------------------------------------------------
// Workloads.

fn hold<T: Payload, Q: Queue<T>>(q: &mut Q, pending: u64, ops: u64, rng: &mut RngStream) -> u64 {
    let gap = Sampler::exponential(SimDuration::from_secs(1));
    for i in 0..pending {
        q.push(gap.sample(rng).as_nanos(), T::new(i & 7, i, 1));
    }
    let mut check = 0u64;
    for i in 0..ops {
        let (now, p) = q.pop().expect("hold queue never empties");
        check = check.wrapping_mul(31).wrapping_add(p.check() ^ now);
        q.push(now + gap.sample(rng).as_nanos(), T::new(i & 7, i, 1));
    }
    check
}

/// Requests in flight, each with a 30s timeout that its response (after ~Exp(100ms)) cancels.
fn timeouts<T: Payload, Q: Queue<T>>(
    q: &mut Q,
    in_flight: u64,
    ops: u64,
    rng: &mut RngStream,
) -> u64 {
    const RESPONSE: u64 = 1;
    const TIMEOUT: u64 = 2;
    let latency = Sampler::exponential(SimDuration::from_millis(100));
    let timeout = SimDuration::from_secs(30).as_nanos();
    let mut timers: Vec<Option<Q::Timer>> = vec![None; in_flight as usize];
    let start = |q: &mut Q,
                 now: u64,
                 slot: u64,
                 rng: &mut RngStream,
                 timers: &mut Vec<Option<Q::Timer>>| {
        let t = q.push_timer(now + timeout, T::new(slot, slot, TIMEOUT));
        timers[slot as usize] = Some(t);
        q.push(
            now + latency.sample(rng).as_nanos(),
            T::new(slot, slot, RESPONSE),
        );
    };
    for slot in 0..in_flight {
        start(q, 0, slot, rng, &mut timers);
    }
    let mut check = 0u64;
    for _ in 0..ops {
        let (now, p) = q.pop().expect("requests keep the queue busy");
        check = check.wrapping_mul(31).wrapping_add(p.check() ^ now);
        if p.kind() == RESPONSE
            && let Some(t) = timers[p.target() as usize].take()
        {
            q.cancel(t);
        }
        start(q, now, p.target(), rng, &mut timers);
    }
    check
}

const DESIGNS: [&str; 7] = [
    "radix+slab",
    "binary+slotmap",
    "radix inline",
    "4-ary+slotmap",
    "radix-heap crate",
    "inline binary",
    "priority-queue",
];

/// Runs `workload` on design `which` and returns its check word.
fn run_one<T: Payload + 'static>(
    which: usize,
    workload: &str,
    pending: u64,
    ops: u64,
    rng: &mut RngStream,
) -> u64 {
    fn go<T: Payload, Q: Queue<T>>(
        mut q: Q,
        workload: &str,
        pending: u64,
        ops: u64,
        rng: &mut RngStream,
    ) -> u64 {
        if workload.starts_with("timeouts") {
            timeouts::<T, Q>(&mut q, pending, ops, rng)
        } else {
            hold::<T, Q>(&mut q, pending, ops, rng)
        }
    }
    match which {
        0 => go::<T, _>(EventQueue::<T>::new(), workload, pending, ops, rng),
        1 => go::<T, _>(
            Keyed::<BinaryHeap<Key>, T>::default(),
            workload,
            pending,
            ops,
            rng,
        ),
        2 => go::<T, _>(RadixInline::<T>::default(), workload, pending, ops, rng),
        3 => go::<T, _>(
            Keyed::<QuaternaryHeap<Key>, T>::default(),
            workload,
            pending,
            ops,
            rng,
        ),
        4 => go::<T, _>(RadixCrate::<T>::default(), workload, pending, ops, rng),
        5 => go::<T, _>(InlineHeap::<T>::default(), workload, pending, ops, rng),
        _ => go::<T, _>(Pq::<T>::default(), workload, pending, ops, rng),
    }
}

// Timing is the point of this benchmark; the simulation never reads the clock.
#[allow(clippy::disallowed_methods)]
fn measure(f: impl FnOnce() -> u64) -> (f64, u64) {
    let started = std::time::Instant::now();
    let check = f();
    (started.elapsed().as_secs_f64(), check)
}

fn main() {
    let args = Args::parse();
    let ops = args.ops;
    let workloads: [(&str, u64, bool); 6] = [
        ("hold-2", 2, false),
        ("hold-100k", 100_000, false),
        ("hold-1m", 1_000_000, false),
        ("timeouts", 10_000, false),
        ("timeouts-72B", 10_000, true),
        ("hold-100k-72B", 100_000, true),
    ];
    let workloads: Vec<_> = workloads
        .into_iter()
        .filter(|(name, ..)| name.contains(args.only.as_str()))
        .collect();
    print!("{:<18}", "ns/op (ratio)");
    for (name, ..) in &workloads {
        print!(" {name:>18}");
    }
    println!();
    let mut table = vec![vec![f64::INFINITY; workloads.len()]; DESIGNS.len()];
    for (w, &(workload, pending, large)) in workloads.iter().enumerate() {
        // Alternate the designs over the rounds and keep each one's best, so that a burst
        // of load on a shared machine does not decide the comparison.
        let mut expected = None;
        for _ in 0..args.rounds {
            for (which, row) in table.iter_mut().enumerate() {
                if which > 0 && !DESIGNS[which].contains(args.designs.as_str()) {
                    continue;
                }
                let mut rng = Seed(1).stream(workload);
                let (secs, check) = if large {
                    measure(|| run_one::<Large>(which, workload, pending, ops, &mut rng))
                } else {
                    measure(|| run_one::<Small>(which, workload, pending, ops, &mut rng))
                };
                assert_eq!(
                    *expected.get_or_insert(check),
                    check,
                    "{} fired other events than {} on {workload}",
                    DESIGNS[which],
                    DESIGNS[0]
                );
                row[w] = row[w].min(secs * 1e9 / ops as f64);
            }
        }
    }
    for (design, row) in DESIGNS.iter().zip(&table) {
        if row.iter().all(|ns| ns.is_infinite()) {
            continue;
        }
        print!("{design:<18}");
        for (w, ns) in row.iter().enumerate() {
            let cell = format!("{ns:.1} ({:.2}x)", ns / table[0][w]);
            print!(" {cell:>18}");
        }
        println!();
    }
    for (w, (workload, ..)) in workloads.iter().enumerate() {
        let (engine, before) = (table[0][w], table[1][w]);
        if before.is_finite() {
            println!(
                "workload={workload} engine_ns_per_op={engine:.1} binary_slotmap_ns_per_op={before:.1} ratio={:.2}",
                before / engine
            );
        }
    }
}
