//! Load shedders on arbitrary input: conservation, bounds, and no panics.

use patterns::shedder::{
    AdaptiveThrottle, AdaptiveThrottleConfig, CoDelConfig, CoDelQueue, PidConfig, PidShedder,
    PriorityConfig, PriorityShedder, RpcQueue, RpcQueueConfig,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sim_core::{Seed, SimDuration, SimTime};

/// (gap in µs, arrivals, dequeues) per step.
fn steps() -> impl Strategy<Value = Vec<(u64, u8, u8)>> {
    proptest::collection::vec((0u64..20_000, 0u8..4, 0u8..3), 1..300)
}

/// Runs a queue discipline over `steps`, checking conservation: every request enqueued is
/// delivered, dropped, refused at the door, or still queued.
fn check<Q>(
    mut queue: Q,
    steps: &[(u64, u8, u8)],
    enqueue: impl Fn(&mut Q, SimTime, u64) -> bool,
    mut dequeue: impl FnMut(&mut Q, SimTime) -> (Option<u64>, usize),
    len: impl Fn(&Q) -> usize,
) -> Result<(), TestCaseError> {
    let mut now = SimTime::ZERO;
    let (mut offered, mut refused, mut delivered, mut dropped) = (0u64, 0u64, 0u64, 0u64);
    for &(gap, arrivals, dequeues) in steps {
        now += SimDuration::from_micros(gap);
        for _ in 0..arrivals {
            offered += 1;
            if !enqueue(&mut queue, now, offered) {
                refused += 1;
            }
        }
        for _ in 0..dequeues {
            let (d, n) = dequeue(&mut queue, now);
            delivered += u64::from(d.is_some());
            dropped += n as u64;
        }
        prop_assert_eq!(offered, refused + delivered + dropped + len(&queue) as u64);
    }
    Ok(())
}

/// RFC 8289's pseudocode transcribed as plainly as possible, with a request as the packet
/// unit: the reference the queue discipline is checked against.
struct RfcCodel {
    queue: std::collections::VecDeque<(u64, u64)>,
    target: u64,
    interval: u64,
    maxpacket: usize,
    first_above_time: u64,
    drop_next: u64,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

impl RfcCodel {
    fn control_law(&self, t: u64, count: u32) -> u64 {
        t + SimDuration::from_nanos_f64(self.interval as f64 / f64::from(count).sqrt()).as_nanos()
    }

    /// (packet, ok_to_drop)
    fn dodequeue(&mut self, now: u64) -> (Option<u64>, bool) {
        let Some((tstamp, id)) = self.queue.pop_front() else {
            self.first_above_time = 0;
            return (None, false);
        };
        let sojourn_time = now - tstamp;
        let mut ok_to_drop = false;
        if sojourn_time < self.target || self.queue.len() <= self.maxpacket {
            self.first_above_time = 0;
        } else if self.first_above_time == 0 {
            self.first_above_time = now + self.interval;
        } else if now >= self.first_above_time {
            ok_to_drop = true;
        }
        (Some(id), ok_to_drop)
    }

    /// (delivered, dropped)
    fn dequeue(&mut self, now: u64) -> (Option<u64>, Vec<u64>) {
        let mut dropped = Vec::new();
        let (mut p, mut ok_to_drop) = self.dodequeue(now);
        if p.is_none() {
            self.dropping = false;
            return (None, dropped);
        }
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            }
            while now >= self.drop_next && self.dropping {
                dropped.extend(p.take());
                self.count += 1;
                (p, ok_to_drop) = self.dodequeue(now);
                if !ok_to_drop {
                    self.dropping = false;
                } else {
                    self.drop_next = self.control_law(self.drop_next, self.count);
                }
            }
        } else if ok_to_drop {
            dropped.extend(p.take());
            (p, _) = self.dodequeue(now);
            self.dropping = true;
            let delta = self.count - self.lastcount;
            self.count = 1;
            if delta > 1 && now.saturating_sub(self.drop_next) < 16 * self.interval {
                self.count = delta;
            }
            self.drop_next = self.control_law(now, self.count);
            self.lastcount = self.count;
        }
        (p, dropped)
    }
}

/// A PID gain: zero (that term switched off) or up to 10.
fn gain() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 3 => 0f64..10.0]
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/admission_shedder_props.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn codel_conserves_requests(
        target_us in 1u64..20_000, extra_us in 1u64..200_000, capacity in 1usize..50,
        queue_len_min in 0usize..3, steps in steps(),
    ) {
        let config = CoDelConfig {
            target: SimDuration::from_micros(target_us),
            interval: SimDuration::from_micros(target_us + extra_us),
            queue_capacity: capacity,
            queue_len_min,
        };
        check(
            CoDelQueue::new(&config).unwrap(),
            &steps,
            |q, t, id| q.enqueue(t, id).is_ok(),
            |q, t| { let d = q.dequeue(t); (d.delivered.map(|x| x.0), d.dropped.len()) },
            |q| q.len(),
        )?;
    }

    #[test]
    fn rpc_queue_conserves_requests_and_never_serves_an_expired_one(
        target_us in 1u64..20_000, extra_us in 1u64..200_000, capacity in 1usize..50,
        lifo in any::<bool>(), steps in steps(),
    ) {
        let config = RpcQueueConfig {
            target: SimDuration::from_micros(target_us),
            interval: SimDuration::from_micros(target_us + extra_us),
            adaptive_lifo: lifo,
            queue_capacity: capacity,
        };
        let mut worst = Ok(());
        check(
            RpcQueue::new(&config).unwrap(),
            &steps,
            |q, t, id| q.enqueue(t, id).is_ok(),
            |q, t| {
                let d = q.dequeue(t);
                if let Some((_, sojourn)) = d.delivered
                    && sojourn > q.wait_max() {
                        worst = Err(TestCaseError::fail(format!("served after {sojourn}")));
                    }
                (d.delivered.map(|x| x.0), d.dropped.len())
            },
            |q| q.len(),
        )?;
        worst?;
    }

    #[test]
    fn pid_stays_in_range_on_any_signal(
        setpoint in prop_oneof![4 => -1e6f64..1e6, 1 => Just(f64::MAX), 1 => Just(-f64::MAX)],
        gains in (gain(), gain(), gain()), cap in 0f64..=1.0,
        signal in proptest::collection::vec((any::<u64>(), prop_oneof![any::<f64>(), -1e9f64..1e9]), 1..100),
    ) {
        let mut pid = PidShedder::new(&PidConfig {
            setpoint,
            gain_proportional: gains.0,
            gain_integral: gains.1,
            gain_derivative: gains.2,
            drop_ratio_max: cap,
        }).unwrap();
        let mut rng = Seed(1).stream("pid");
        for (t, m) in signal {
            let p = pid.update(SimTime::from_nanos(t), m);
            prop_assert!((0.0..=cap).contains(&p));
            let _ = pid.should_drop(&mut rng);
        }
    }

    #[test]
    fn throttle_and_priority_never_panic(
        k in prop_oneof![0.0f64..10.0, Just(f64::NAN)], window in any::<u64>(), buckets in 0u32..5000,
        calls in proptest::collection::vec((any::<u64>(), any::<bool>(), any::<usize>(), any::<f64>()), 0..100),
        thresholds in proptest::collection::vec(prop_oneof![-10f64..200.0, Just(f64::NAN)], 0..6),
    ) {
        let mut rng = Seed(2).stream("throttle");
        match AdaptiveThrottle::new(&AdaptiveThrottleConfig {
            accepts_multiplier: k,
            window: SimDuration::from_nanos(window),
            bucket_count: buckets,
        }) {
            Err(e) => prop_assert!(["accepts_multiplier", "window", "bucket_count"].contains(&e.field.as_str())),
            Ok(mut t) => for &(now, accepted, _, _) in &calls {
                let now = SimTime::from_nanos(now);
                let _ = t.try_send(now, &mut rng);
                if accepted { t.on_accepted(now) }
                let p = t.drop_probability(now);
                prop_assert!((0.0..1.0).contains(&p));
            },
        }
        match PriorityShedder::new(&PriorityConfig { shed_thresholds_percent: thresholds }) {
            Err(e) => prop_assert!(e.field.starts_with("shed_thresholds_percent")),
            Ok(mut s) => for &(_, _, class, load) in &calls {
                s.set_load(load);
                let shed = s.admit(class).is_err();
                // Less important classes are shed whenever a more important one is.
                if shed { prop_assert!(s.admit(0).is_err()) }
            },
        }
    }

    #[test]
    fn queue_configs_are_refused_with_a_field_or_never_panic(
        target in prop_oneof![Just(0u64), any::<u64>(), 1u64..10_000_000],
        interval in prop_oneof![Just(0u64), any::<u64>(), 1u64..100_000_000],
        capacity in 0usize..4, queue_len_min in 0usize..3, lifo in any::<bool>(),
        setpoint in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), -1e3f64..1e3],
        gain in prop_oneof![Just(-1.0f64), Just(f64::NAN), 0.0f64..1.0],
        cap in prop_oneof![Just(1.5f64), Just(f64::NAN), 0.0f64..=1.0],
        calls in proptest::collection::vec((any::<u64>(), any::<bool>()), 0..50),
    ) {
        let codel = CoDelConfig {
            target: SimDuration::from_nanos(target),
            interval: SimDuration::from_nanos(interval),
            queue_capacity: capacity,
            queue_len_min,
        };
        match CoDelQueue::new(&codel) {
            Err(e) => prop_assert!(["target", "interval", "queue_capacity"].contains(&e.field.as_str()), "{}", e),
            Ok(mut q) => for &(t, enqueue) in &calls {
                let t = SimTime::from_nanos(t);
                if enqueue { let _ = q.enqueue(t, 0u8); } else { let _ = q.dequeue(t); }
            },
        }
        let rpc = RpcQueueConfig {
            target: SimDuration::from_nanos(target),
            interval: SimDuration::from_nanos(interval),
            adaptive_lifo: lifo,
            queue_capacity: capacity,
        };
        match RpcQueue::new(&rpc) {
            Err(e) => prop_assert!(["target", "interval", "queue_capacity"].contains(&e.field.as_str()), "{}", e),
            Ok(mut q) => for &(t, enqueue) in &calls {
                let t = SimTime::from_nanos(t);
                if enqueue { let _ = q.enqueue(t, 0u8); } else { let _ = q.dequeue(t); }
            },
        }
        let pid = PidConfig { setpoint, gain_integral: gain, drop_ratio_max: cap, ..PidConfig::default() };
        match PidShedder::new(&pid) {
            Err(e) => prop_assert!(["setpoint", "gain_integral", "drop_ratio_max"].contains(&e.field.as_str()), "{}", e),
            Ok(mut p) => for &(t, _) in &calls {
                let r = p.update(SimTime::from_nanos(t), t as f64);
                prop_assert!((0.0..=cap).contains(&r));
            },
        }
    }

    /// The queue discipline delivers and drops exactly what the RFC's pseudocode does.
    #[test]
    fn codel_matches_the_rfc_pseudocode(
        target_us in 1u64..10_000, extra_us in 1u64..200_000, queue_len_min in 0usize..3,
        steps in proptest::collection::vec((0u64..3_000, 0u8..4, 0u8..3), 1..600),
    ) {
        let config = CoDelConfig {
            target: SimDuration::from_micros(target_us),
            interval: SimDuration::from_micros(target_us + extra_us),
            queue_capacity: 100_000,
            queue_len_min,
        };
        let mut q = CoDelQueue::new(&config).unwrap();
        let mut rfc = RfcCodel {
            queue: Default::default(),
            target: config.target.as_nanos(),
            interval: config.interval.as_nanos(),
            maxpacket: queue_len_min,
            first_above_time: 0,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
        };
        let mut now = 1u64; // The RFC uses 0 as "unset", so the reference starts after it.
        let mut id = 0u64;
        for (gap_us, arrivals, dequeues) in steps {
            now += gap_us * 1_000;
            for _ in 0..arrivals {
                q.enqueue(SimTime::from_nanos(now), id).unwrap();
                rfc.queue.push_back((now, id));
                id += 1;
            }
            for _ in 0..dequeues {
                let got = q.dequeue(SimTime::from_nanos(now));
                let (delivered, dropped) = rfc.dequeue(now);
                prop_assert_eq!(got.delivered.map(|d| d.0), delivered, "at {}ns", now);
                prop_assert_eq!(got.dropped.iter().map(|d| d.0).collect::<Vec<_>>(), dropped, "at {}ns", now);
            }
        }
    }
}
