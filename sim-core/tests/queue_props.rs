//! The event queue against a naive reference: a list of pending events searched linearly for
//! the smallest `(time, seq)`. Random sequences of pushes (also before the last event taken,
//! which the engine never does but the queue still orders), timer pushes, cancellations (also
//! of fired or already-cancelled timers), pops and bounded pops (`pop_due`) must give the same
//! events in the same order, including across the sweeps that mass cancellation triggers and
//! over times whose bits differ anywhere from the lowest to the highest, so that entries cross
//! many of the radix heap's buckets.

use proptest::prelude::*;
use sim_core::queue::EventQueue;
use sim_core::{SimTime, TimerId};

#[derive(Clone, Debug)]
enum Op {
    Push(u64),
    PushTimer(u64),
    /// Push this long before the last event taken (at 0 if that is earlier).
    PushEarlier(u64),
    Cancel(usize),
    /// Cancel one of the 16 most recent timers: a response cancelling its own timeout.
    CancelRecent(usize),
    Pop,
    /// Pop only what is due this long after the last event taken.
    PopDue(u64),
}

/// A delay: mostly short, with many ties, sometimes anywhere up to 2^62 ns.
fn delay() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0u64..50,
        1 => (0u32..62, any::<u64>()).prop_map(|(bits, x)| x >> (63 - bits)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => delay().prop_map(Op::Push),
        4 => delay().prop_map(Op::PushTimer),
        1 => delay().prop_map(Op::PushEarlier),
        4 => any::<usize>().prop_map(Op::Cancel),
        2 => Just(Op::Pop),
        2 => delay().prop_map(Op::PopDue),
    ]
}

/// Mostly timers and cancellations, as in a request/response model: timeouts far beyond the
/// responses that cancel them, so cancelled keys pile up instead of surfacing.
fn cancel_heavy_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0u64..50).prop_map(Op::Push),
        8 => (100_000u64..200_000).prop_map(Op::PushTimer),
        1 => any::<usize>().prop_map(Op::Cancel),
        7 => any::<usize>().prop_map(Op::CancelRecent),
        1 => Just(Op::Pop),
    ]
}

/// The reference: pending (time, seq, payload) and the set of live timer payloads.
#[derive(Default)]
struct Naive {
    pending: Vec<(u64, u64, u32)>,
    next_seq: u64,
}

impl Naive {
    fn push(&mut self, time: u64, payload: u32) {
        self.pending.push((time, self.next_seq, payload));
        self.next_seq += 1;
    }
    fn cancel(&mut self, payload: u32) -> bool {
        let before = self.pending.len();
        self.pending.retain(|e| e.2 != payload);
        before != self.pending.len()
    }
    fn pop(&mut self) -> Option<(u64, u32)> {
        self.pop_due(u64::MAX).ok()
    }
    /// The earliest event if it is due by `until`, else the earliest time if there is one.
    fn pop_due(&mut self, until: u64) -> Result<(u64, u32), Option<u64>> {
        let i = (0..self.pending.len()).min_by_key(|&i| (self.pending[i].0, self.pending[i].1));
        let i = i.ok_or(None)?;
        if self.pending[i].0 > until {
            return Err(Some(self.pending[i].0));
        }
        let (time, _, payload) = self.pending.swap_remove(i);
        Ok((time, payload))
    }
}

/// Runs `ops` against both queues; returns how many heap rebuilds the real queue did.
fn check(ops: &[Op]) -> Result<u64, TestCaseError> {
    let mut queue: EventQueue<u32> = EventQueue::new();
    let mut naive = Naive::default();
    let mut timers: Vec<(TimerId, u32)> = Vec::new();
    let mut now = 0u64;
    for (payload, op) in (0u32..).zip(ops) {
        match op {
            Op::Push(dt) => {
                queue.push(SimTime::from_nanos(now.saturating_add(*dt)), payload);
                naive.push(now.saturating_add(*dt), payload);
            }
            Op::PushTimer(dt) => {
                let id = queue.push_timer(SimTime::from_nanos(now.saturating_add(*dt)), payload);
                naive.push(now.saturating_add(*dt), payload);
                timers.push((id, payload));
            }
            Op::PushEarlier(back) => {
                let time = now.saturating_sub(*back);
                queue.push(SimTime::from_nanos(time), payload);
                naive.push(time, payload);
            }
            Op::Cancel(_) | Op::CancelRecent(_) if timers.is_empty() => {}
            Op::Cancel(i) | Op::CancelRecent(i) => {
                let index = match op {
                    Op::CancelRecent(_) => timers.len() - 1 - i % timers.len().min(16),
                    _ => i % timers.len(),
                };
                let (id, p) = timers[index];
                prop_assert_eq!(queue.cancel(id), naive.cancel(p));
                prop_assert!(!queue.is_pending(id));
            }
            Op::Pop => {
                let got = queue.pop().map(|s| (s.time.as_nanos(), s.payload));
                let want = naive.pop();
                prop_assert_eq!(got, want);
                if let Some((t, _)) = got {
                    now = t;
                }
            }
            Op::PopDue(dt) => {
                let until = now.saturating_add(*dt);
                let got = queue
                    .pop_due(SimTime::from_nanos(until))
                    .map(|s| (s.time.as_nanos(), s.payload))
                    .map_err(|e| e.map(SimTime::as_nanos));
                prop_assert_eq!(got, naive.pop_due(until));
                if let Ok((t, _)) = got {
                    now = t;
                }
            }
        }
        // The recent timers (the ones a model would still cancel) are pending exactly when
        // the reference still holds them.
        for &(id, p) in timers.iter().rev().take(16) {
            prop_assert_eq!(queue.is_pending(id), naive.pending.iter().any(|e| e.2 == p));
        }
        prop_assert_eq!(queue.len(), naive.pending.len());
    }
    // Drain: the rest must come out in the same order too.
    loop {
        let got = queue.pop().map(|s| (s.time.as_nanos(), s.payload));
        prop_assert_eq!(got, naive.pop());
        if got.is_none() {
            return Ok(queue.compactions());
        }
    }
}

proptest! {
    #[test]
    fn matches_the_naive_queue(ops in proptest::collection::vec(op(), 0..400)) {
        check(&ops)?;
    }

    #[test]
    fn matches_the_naive_queue_through_compactions(
        tail in proptest::collection::vec(cancel_heavy_op(), 1_000..3_000)
    ) {
        // A fixed prefix crosses the rebuild threshold (1,024 stale keys, more than half the
        // heap) for certain: 1,500 far-away timers, then each cancelled in turn. The random
        // tail then runs on a rebuilt heap and may rebuild it again.
        let mut ops: Vec<Op> = (0..1_500).map(|_| Op::PushTimer(100_000)).collect();
        ops.extend((0..1_500).map(Op::Cancel));
        ops.extend(tail);
        let compactions = check(&ops)?;
        prop_assert!(compactions > 0, "the run never rebuilt the heap: the test lost its point");
    }

    #[test]
    fn durations_display_and_parse_back(nanos in 0u64..=u64::MAX / 2) {
        let d = sim_core::SimDuration::from_nanos(nanos);
        let text = d.to_string().replace('µ', "u");
        prop_assert_eq!(text.parse::<sim_core::SimDuration>(), Ok(d), "{}", text);
    }
}
