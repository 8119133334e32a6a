//! The run loop: a [`Sim`] owns a world of [`Entity`] values (in a slotmap), the
//! [`EventQueue`], the clock, the [`Digest`] and the [`Limits`]; each event is a message to
//! one entity, handled with a [`Ctx`] through which the entity schedules further messages.
//!
//! Dispatch is static: a model defines one enum of its entity types and implements
//! [`Entity`] for it with a `match`, so the hot path has no boxing, no dynamic dispatch and no
//! allocation per event (the event queue's tables grow with the pending events and are reused).
//! State shared by all entities that is not itself an entity (the network, run-wide metrics)
//! lives in [`Entity::Shared`] and is handed to every handler through [`Ctx::shared`].
//!
//! **Ordering contract.** Events run in increasing time; events at the same instant run in
//! the order they were scheduled. An event is never scheduled before the current time
//! (asserted when scheduled) and never fires before it (asserted when it fires).

use crate::digest::Digest;
use crate::queue::{EventQueue, TimerId};
use crate::time::{SimDuration, SimTime};
use slotmap::{Key, SlotMap, new_key_type};
use std::fmt;

new_key_type! {
    /// The identity of an entity in a [`Sim`]; assigned in insertion order, so the same
    /// model built the same way gets the same ids.
    pub struct EntityId;
}

impl EntityId {
    /// A stable 64-bit form of the id (slot index and version), as folded into the digest.
    pub fn as_u64(self) -> u64 {
        self.data().as_ffi()
    }
}

/// A message that can be the payload of an event.
pub trait Message {
    /// A number that identifies what kind of event this is (and, if the model likes, the
    /// parts of its content that matter); it is folded into the run digest.
    fn kind(&self) -> u64;
}

/// A participant of the simulation: handles the messages addressed to it.
pub trait Entity {
    /// The messages this world's entities exchange.
    type Msg: Message;
    /// World state shared by all entities and not itself an entity; `()` if there is none.
    type Shared;

    /// Reacts to one message at `ctx.now()`.
    fn handle(&mut self, ctx: &mut Ctx<'_, Self::Msg, Self::Shared>, msg: Self::Msg);
}

/// What a handler can do: read the clock, reach the shared state, schedule and cancel.
pub struct Ctx<'a, M, S> {
    now: SimTime,
    me: EntityId,
    queue: &'a mut EventQueue<Target<M>>,
    digest: &'a mut Digest,
    stop: &'a mut bool,
    /// The world's shared state.
    pub shared: &'a mut S,
}

/// An event's payload: who receives it, and what.
#[derive(Clone)]
pub struct Target<M> {
    target: EntityId,
    msg: M,
}

impl<M, S> Ctx<'_, M, S> {
    /// The current virtual time.
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The entity handling this event.
    #[inline]
    pub fn me(&self) -> EntityId {
        self.me
    }

    /// Delivers `msg` to `target` after `delay` (zero delay: later in this same instant,
    /// after everything already scheduled for it).
    #[inline]
    pub fn send(&mut self, target: EntityId, delay: SimDuration, msg: M) {
        self.queue.push(self.now + delay, Target { target, msg });
    }

    /// Delivers `msg` to `target` at `time`, which must not be in the past.
    #[inline]
    pub fn send_at(&mut self, target: EntityId, time: SimTime, msg: M) {
        push_at(self.queue, self.now, target, time, msg);
    }

    /// Delivers `msg` to this entity after `delay`.
    #[inline]
    pub fn send_self(&mut self, delay: SimDuration, msg: M) {
        let me = self.me;
        self.send(me, delay, msg);
    }

    /// Like [`Ctx::send`], but cancellable: for timeouts, retries, periodic checks.
    #[inline]
    pub fn timer(&mut self, target: EntityId, delay: SimDuration, msg: M) -> TimerId {
        self.queue
            .push_timer(self.now + delay, Target { target, msg })
    }

    /// A cancellable message to this entity after `delay`.
    #[inline]
    pub fn timer_self(&mut self, delay: SimDuration, msg: M) -> TimerId {
        let me = self.me;
        self.timer(me, delay, msg)
    }

    /// Cancels a timer; false if it already fired or was already cancelled.
    #[inline]
    pub fn cancel(&mut self, timer: TimerId) -> bool {
        self.queue.cancel(timer)
    }

    /// Folds a word into the run digest, for outcomes that are not events of their own
    /// (a message dropped on the way, a request rejected without scheduling anything).
    #[inline]
    pub fn digest_note(&mut self, word: u64) {
        self.digest.mix(word);
    }

    /// Ends the run after this event ([`StopReason::Requested`]).
    pub fn stop(&mut self) {
        *self.stop = true;
    }

    /// The shared state and, beside it, the right to schedule messages and fold digest
    /// words: for code that decides, from inside the shared state, what to schedule (a
    /// network delivering straight into the event queue rather than through a buffer).
    #[inline]
    pub fn split(&mut self) -> (&mut S, Scheduler<'_, M>) {
        let scheduler = Scheduler {
            now: self.now,
            queue: self.queue,
            digest: self.digest,
        };
        (self.shared, scheduler)
    }
}

/// Schedules `msg` for `target` at `time`, asserting that `time` is not before `now`.
#[inline]
fn push_at<M>(
    queue: &mut EventQueue<Target<M>>,
    now: SimTime,
    target: EntityId,
    time: SimTime,
    msg: M,
) {
    assert!(
        time >= now,
        "event scheduled into the past: {time} < now {now}"
    );
    queue.push(time, Target { target, msg });
}

/// The scheduling half of a [`Ctx`], from [`Ctx::split`]: the same contract as
/// [`Ctx::send_at`] and [`Ctx::digest_note`].
pub struct Scheduler<'a, M> {
    now: SimTime,
    queue: &'a mut EventQueue<Target<M>>,
    digest: &'a mut Digest,
}

impl<M> Scheduler<'_, M> {
    /// The current virtual time.
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Delivers `msg` to `target` at `time`, which must not be in the past.
    #[inline]
    pub fn send_at(&mut self, target: EntityId, time: SimTime, msg: M) {
        push_at(self.queue, self.now, target, time, msg);
    }

    /// Folds `word` into the run digest.
    #[inline]
    pub fn digest_note(&mut self, word: u64) {
        self.digest.mix(word);
    }
}

/// The limits every run has: an event budget and a time limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most events the run may execute.
    pub max_events: u64,
    /// Virtual time after which nothing runs (events at exactly this time still run).
    pub time_limit: SimTime,
}

impl Limits {
    /// A budget of `max_events` and a time limit of `time_limit` after the start.
    pub fn new(max_events: u64, time_limit: SimDuration) -> Self {
        Limits {
            max_events,
            time_limit: SimTime::ZERO + time_limit,
        }
    }
}

/// Why a run (or one call of [`Sim::run_until`]) returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// No event was left to run.
    Idle,
    /// The run's time limit was reached.
    TimeLimit,
    /// The run's event budget was spent.
    EventBudget,
    /// A handler called [`Ctx::stop`].
    Requested,
    /// The time asked of [`Sim::run_until`] or [`Sim::run_for`] was reached; the run can go on.
    Reached,
    /// The model's memory budget was reached: what it holds while running (requests in
    /// flight, queued work) would not fit. The engine never returns it; a model that checks
    /// its own memory between [`Sim::run_events`] slices ends its run with it.
    MemoryLimit,
}

impl StopReason {
    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Idle => "idle",
            StopReason::TimeLimit => "time_limit",
            StopReason::EventBudget => "event_budget",
            StopReason::Requested => "requested",
            StopReason::Reached => "reached",
            StopReason::MemoryLimit => "memory_limit",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One executed event, as kept by the trace (see [`Sim::enable_trace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// When it ran.
    pub time: SimTime,
    /// Its sequence number.
    pub seq: u64,
    /// Its target, as [`EntityId::as_u64`].
    pub target: u64,
    /// Its [`Message::kind`].
    pub kind: u64,
}

impl fmt::Display for TraceRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "t={} seq={} target={:#x} kind={:#x}",
            self.time, self.seq, self.target, self.kind
        )
    }
}

/// The index and the two records where two traces first differ, if they do.
pub fn first_divergence(
    a: &[TraceRecord],
    b: &[TraceRecord],
) -> Option<(usize, Option<TraceRecord>, Option<TraceRecord>)> {
    let common = a.len().min(b.len());
    (0..common)
        .find(|&i| a[i] != b[i])
        .or((a.len() != b.len()).then_some(common))
        .map(|i| (i, a.get(i).copied(), b.get(i).copied()))
}

/// Keeps one more record in a trace that has room for it (out of the run loop's way).
#[cold]
#[inline(never)]
fn record(trace: &mut Option<(Vec<TraceRecord>, usize)>, record: TraceRecord) {
    if let Some((records, _)) = trace {
        records.push(record);
    }
}

/// A simulation: entities, pending events, the clock, the digest and the limits.
#[derive(Clone)]
pub struct Sim<E: Entity> {
    entities: SlotMap<EntityId, E>,
    shared: E::Shared,
    queue: EventQueue<Target<E::Msg>>,
    now: SimTime,
    digest: Digest,
    executed: u64,
    limits: Limits,
    stop_requested: bool,
    trace: Option<(Vec<TraceRecord>, usize)>,
}

impl<E: Entity> Sim<E> {
    /// An empty world with the given shared state and limits.
    pub fn new(shared: E::Shared, limits: Limits) -> Self {
        Sim {
            entities: SlotMap::with_key(),
            shared,
            queue: EventQueue::new(),
            now: SimTime::ZERO,
            digest: Digest::new(),
            executed: 0,
            limits,
            stop_requested: false,
            trace: None,
        }
    }

    /// Adds an entity and returns its id.
    pub fn add(&mut self, entity: E) -> EntityId {
        self.entities.insert(entity)
    }

    /// Adds an entity built from its own id (for entities that address themselves).
    pub fn add_with(&mut self, build: impl FnOnce(EntityId) -> E) -> EntityId {
        self.entities.insert_with_key(build)
    }

    /// The entity with this id.
    pub fn entity(&self, id: EntityId) -> &E {
        &self.entities[id]
    }

    /// The entity with this id, mutably (between events).
    pub fn entity_mut(&mut self, id: EntityId) -> &mut E {
        &mut self.entities[id]
    }

    /// The entity with this id, mutably, and the shared state (between events; for a model
    /// that reads both when a run ends).
    pub fn entity_and_shared(&mut self, id: EntityId) -> (&mut E, &E::Shared) {
        (&mut self.entities[id], &self.shared)
    }

    /// All entities in id order.
    pub fn entities(&self) -> impl Iterator<Item = (EntityId, &E)> {
        self.entities.iter()
    }

    /// The shared state.
    pub fn shared(&self) -> &E::Shared {
        &self.shared
    }

    /// The shared state, mutably (between events).
    pub fn shared_mut(&mut self) -> &mut E::Shared {
        &mut self.shared
    }

    /// Schedules `msg` for `target` at `time` from outside any handler (to start the run).
    pub fn schedule(&mut self, time: SimTime, target: EntityId, msg: E::Msg) {
        assert!(
            time >= self.now,
            "event scheduled into the past: {time} < now {}",
            self.now
        );
        assert!(self.entities.contains_key(target), "unknown target entity");
        self.queue.push(time, Target { target, msg });
    }

    /// The current virtual time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The digest of the history so far.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// Events executed so far.
    pub fn events_executed(&self) -> u64 {
        self.executed
    }

    /// The bytes the pending-event set may hold before `margin` more events are scheduled
    /// ([`EventQueue::reserved`]), for memory budgets.
    pub fn events_reserved(&self, margin: usize) -> u64 {
        self.queue.reserved(margin)
    }

    /// Live pending events.
    pub fn events_pending(&self) -> usize {
        self.queue.len()
    }

    /// The limits of this run.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Keeps a record of up to `capacity` executed events (the first ones), for comparing
    /// two runs event by event ([`first_divergence`]) or printing a window of the history.
    pub fn enable_trace(&mut self, capacity: usize) {
        self.trace = Some((Vec::with_capacity(capacity.min(1 << 20)), capacity));
    }

    /// The records kept since [`Sim::enable_trace`].
    pub fn trace(&self) -> &[TraceRecord] {
        self.trace.as_ref().map_or(&[], |(records, _)| records)
    }

    /// Executes the next event if there is one and the limits allow; returns why not
    /// otherwise.
    pub fn step(&mut self) -> Result<(), StopReason> {
        let before = self.executed;
        let events_max = self.limits.max_events.min(self.executed.saturating_add(1));
        let reason = self.advance(self.limits.time_limit, events_max);
        if self.executed > before {
            Ok(())
        } else {
            Err(reason)
        }
    }

    /// Executes the events due by `until` until `events_max` events have run in all, no event
    /// is due, or a handler asks to stop, and says why it stopped. The handler context is
    /// built once: each event only sets its clock and its target. The count of events runs in
    /// a local, and the trace costs an event one comparison with the count at which its room
    /// ends.
    fn advance(&mut self, until: SimTime, events_max: u64) -> StopReason {
        let Sim {
            entities,
            shared,
            queue,
            now,
            digest,
            executed: executed_total,
            limits,
            stop_requested,
            trace,
        } = self;
        let mut executed = *executed_total;
        let traced_until = trace.as_ref().map_or(0, |(records, capacity)| {
            executed.saturating_add(capacity.saturating_sub(records.len()) as u64)
        });
        let mut ctx = Ctx {
            now: *now,
            me: EntityId::default(),
            queue,
            digest,
            stop: stop_requested,
            shared,
        };
        let reason = loop {
            if *ctx.stop {
                break StopReason::Requested;
            }
            if executed >= events_max {
                break StopReason::EventBudget;
            }
            let event = match ctx.queue.pop_due(until) {
                Ok(event) => event,
                Err(None) => break StopReason::Idle,
                Err(Some(_)) if until >= limits.time_limit => break StopReason::TimeLimit,
                Err(Some(_)) => break StopReason::Reached,
            };
            assert!(
                event.time >= ctx.now,
                "event at {} fires before now {}",
                event.time,
                ctx.now
            );
            ctx.now = event.time;
            let Target { target, msg } = event.payload;
            let kind = msg.kind();
            let target_word = target.as_u64();
            ctx.digest
                .event(event.time.as_nanos(), event.seq, target_word, kind);
            if executed < traced_until {
                record(
                    trace,
                    TraceRecord {
                        time: event.time,
                        seq: event.seq,
                        target: target_word,
                        kind,
                    },
                );
            }
            executed += 1;
            let entity = entities
                .get_mut(target)
                .expect("events are only scheduled for entities of this world");
            ctx.me = target;
            entity.handle(&mut ctx, msg);
        };
        *now = ctx.now;
        *executed_total = executed;
        reason
    }

    /// Runs until the limits stop it, no event is left, or a handler asks to stop.
    pub fn run(&mut self) -> StopReason {
        self.run_until(self.limits.time_limit)
    }

    /// Runs every event up to and including `time` (capped by the time limit), then moves the
    /// clock to `time` if the run was not stopped for another reason.
    pub fn run_until(&mut self, time: SimTime) -> StopReason {
        let until = time.min(self.limits.time_limit);
        let reason = self.advance(until, self.limits.max_events);
        if matches!(
            reason,
            StopReason::Reached | StopReason::TimeLimit | StopReason::Idle
        ) && until > self.now
            && until != SimTime::MAX
        {
            self.now = until;
        }
        reason
    }

    /// Runs for `d` of virtual time from now (see [`Sim::run_until`]).
    pub fn run_for(&mut self, d: SimDuration) -> StopReason {
        self.run_until(self.now.saturating_add(d))
    }

    /// Runs like [`Sim::run`], but at most `count` more events: `None` when they ran and
    /// the run can go on, else why it stopped. A model checks what only it can measure
    /// (its memory) between slices, at no cost to each event: the slice's end is the event
    /// budget's own check. Running in slices gives the same history as one [`Sim::run`].
    pub fn run_events(&mut self, count: u64) -> Option<StopReason> {
        self.run_events_until(self.limits.time_limit, count)
    }

    /// Runs like [`Sim::run_until`], but at most `count` more events: `None` when they ran
    /// and the run can go on, else why it stopped ([`StopReason::Reached`] when `time` was
    /// reached first: it can go on too).
    pub fn run_events_until(&mut self, time: SimTime, count: u64) -> Option<StopReason> {
        let budget = self.limits.max_events;
        self.limits.max_events = budget.min(self.executed.saturating_add(count));
        let reason = self.run_until(time);
        self.limits.max_events = budget;
        (reason != StopReason::EventBudget || self.executed >= budget).then_some(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ping-pong pair: each hit is answered after 10ms until `left` runs out.
    #[derive(Clone)]
    struct Player {
        peer: Option<EntityId>,
        hits: u32,
        left: u32,
    }

    #[derive(Clone, Debug)]
    enum Msg {
        Ball,
        Timeout,
    }

    impl Message for Msg {
        fn kind(&self) -> u64 {
            match self {
                Msg::Ball => 1,
                Msg::Timeout => 2,
            }
        }
    }

    #[derive(Clone, Default)]
    struct Log(Vec<String>);

    impl Entity for Player {
        type Msg = Msg;
        type Shared = Log;
        fn handle(&mut self, ctx: &mut Ctx<'_, Msg, Log>, msg: Msg) {
            ctx.shared.0.push(format!("{} {:?}", ctx.now(), msg));
            if let Msg::Ball = msg {
                self.hits += 1;
                if self.left > 0 {
                    self.left -= 1;
                    let timeout = ctx.timer_self(SimDuration::from_millis(15), Msg::Timeout);
                    ctx.send(self.peer.unwrap(), SimDuration::from_millis(10), Msg::Ball);
                    ctx.cancel(timeout);
                }
            }
        }
    }

    fn pair(left: u32, limits: Limits) -> (Sim<Player>, EntityId, EntityId) {
        let mut sim = Sim::new(Log::default(), limits);
        let a = sim.add(Player {
            peer: None,
            hits: 0,
            left,
        });
        let b = sim.add(Player {
            peer: Some(a),
            hits: 0,
            left,
        });
        sim.entity_mut(a).peer = Some(b);
        sim.schedule(SimTime::ZERO, a, Msg::Ball);
        (sim, a, b)
    }

    #[test]
    fn runs_until_idle_and_cancelled_timers_never_fire() {
        let (mut sim, a, b) = pair(3, Limits::new(1_000, SimDuration::from_secs(10)));
        assert_eq!(sim.run(), StopReason::Idle);
        assert_eq!(sim.entity(a).hits + sim.entity(b).hits, 7);
        assert_eq!(sim.now(), SimTime::from_secs(10));
        assert!(sim.shared().0.iter().all(|line| !line.contains("Timeout")));
        assert_eq!(sim.shared().0.last().unwrap(), "0.060s Ball");
    }

    #[test]
    fn limits_stop_the_run_and_say_why() {
        let (mut sim, ..) = pair(1_000, Limits::new(5, SimDuration::from_secs(10)));
        assert_eq!(sim.run(), StopReason::EventBudget);
        assert_eq!(sim.events_executed(), 5);

        let (mut sim, ..) = pair(1_000, Limits::new(1_000_000, SimDuration::from_millis(95)));
        assert_eq!(sim.run(), StopReason::TimeLimit);
        assert_eq!(sim.events_executed(), 10, "events at 0..=90ms ran");
        assert_eq!(sim.now(), SimTime::from_millis(95));

        let (mut sim, ..) = pair(1_000, Limits::new(1_000_000, SimDuration::from_secs(1)));
        assert_eq!(
            sim.run_for(SimDuration::from_millis(25)),
            StopReason::Reached
        );
        assert_eq!(sim.now(), SimTime::from_millis(25));
        assert_eq!(sim.events_executed(), 3);
        assert_eq!(sim.step(), Ok(()));
        assert_eq!(sim.now(), SimTime::from_millis(30));
    }

    #[test]
    fn a_run_in_slices_is_the_same_run() {
        let whole = {
            let (mut sim, ..) = pair(1_000, Limits::new(1_000, SimDuration::from_secs(10)));
            let reason = sim.run();
            (reason, sim.digest(), sim.events_executed(), sim.now())
        };
        let (mut sim, ..) = pair(1_000, Limits::new(1_000, SimDuration::from_secs(10)));
        let mut slices = 0;
        let reason = loop {
            slices += 1;
            if let Some(reason) = sim.run_events(7) {
                break reason;
            }
            assert_eq!(sim.events_executed(), 7 * slices);
        };
        assert_eq!(whole.0, StopReason::EventBudget);
        assert_eq!(
            (reason, sim.digest(), sim.events_executed(), sim.now()),
            whole
        );
        assert_eq!(slices, 1_000_u64.div_ceil(7));
        assert_eq!(
            sim.limits().max_events,
            1_000,
            "the budget is the run's again"
        );

        let (mut sim, ..) = pair(3, Limits::new(1_000, SimDuration::from_secs(10)));
        assert_eq!(sim.run_events(1_000_000), Some(StopReason::Idle));
    }

    #[test]
    fn same_world_same_digest_and_trace() {
        let run = |left| {
            let (mut sim, ..) = pair(left, Limits::new(1_000, SimDuration::from_secs(10)));
            sim.enable_trace(100);
            sim.run();
            (sim.digest(), sim.trace().to_vec())
        };
        let (d1, t1) = run(20);
        let (d2, t2) = run(20);
        let (d3, t3) = run(21);
        assert_eq!(d1, d2);
        assert_eq!(first_divergence(&t1, &t2), None);
        assert_ne!(d1, d3);
        let (index, _, extra) = first_divergence(&t1, &t3).unwrap();
        assert_eq!(index, t1.len());
        assert!(extra.is_some());
    }

    #[test]
    fn a_clone_continues_as_the_original_would() {
        let (mut original, a, b) = pair(1_000, Limits::new(400, SimDuration::from_secs(10)));
        original.enable_trace(1_000);
        assert_eq!(original.run_events(77), None);
        let mut copy = original.clone();
        assert_eq!(copy.events_executed(), 77);
        assert_eq!(copy.digest(), original.digest());
        assert_eq!(original.run(), StopReason::EventBudget);
        assert_eq!(copy.run(), StopReason::EventBudget);
        assert_eq!(copy.digest(), original.digest());
        assert_eq!(first_divergence(copy.trace(), original.trace()), None);
        assert_eq!(copy.trace().len(), 400);
        assert_eq!(copy.shared().0, original.shared().0);
        let hits = |sim: &Sim<Player>| (sim.entity(a).hits, sim.entity(b).hits);
        assert_eq!(hits(&copy), hits(&original));
        // The copy owns its state: changing it leaves the original alone.
        copy.entity_mut(a).hits = 0;
        assert_ne!(hits(&copy), hits(&original));
    }

    #[test]
    #[allow(clippy::panic)]
    fn scheduling_into_the_past_is_a_bug() {
        let (mut sim, a, _) = pair(1, Limits::new(1_000, SimDuration::from_secs(10)));
        sim.run_for(SimDuration::from_secs(1));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sim.schedule(SimTime::from_millis(1), a, Msg::Ball);
        }));
        assert!(result.is_err());
    }
}
