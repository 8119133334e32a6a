//! The event queue against a naive reference: a list of pending events searched linearly for
//! the smallest `(time, seq)`. Random sequences of pushes, timer pushes, cancellations (also of
//! fired or already-cancelled timers) and pops must give the same events in the same order,
//! including across the heap rebuilds that mass cancellation triggers.

use proptest::prelude::*;
use sim_core::queue::EventQueue;
use sim_core::{SimTime, TimerId};

#[derive(Clone, Debug)]
enum Op {
    Push(u64),
    PushTimer(u64),
    Cancel(usize),
    /// Cancel one of the 16 most recent timers: a response cancelling its own timeout.
    CancelRecent(usize),
    Pop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0u64..50).prop_map(Op::Push),
        4 => (0u64..50).prop_map(Op::PushTimer),
        4 => any::<usize>().prop_map(Op::Cancel),
        2 => Just(Op::Pop),
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
        let i = (0..self.pending.len()).min_by_key(|&i| (self.pending[i].0, self.pending[i].1))?;
        let (time, _, payload) = self.pending.swap_remove(i);
        Some((time, payload))
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
                queue.push(SimTime::from_nanos(now + dt), payload);
                naive.push(now + dt, payload);
            }
            Op::PushTimer(dt) => {
                let id = queue.push_timer(SimTime::from_nanos(now + dt), payload);
                naive.push(now + dt, payload);
                timers.push((id, payload));
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
                    prop_assert!(t >= now, "time went backwards");
                    now = t;
                }
            }
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
