//! Load shedders: CoDel's drop schedule, the RPC queue, PID, priority and adaptive throttling.

use patterns::shedder::{
    AdaptiveThrottle, AdaptiveThrottleConfig, CoDelConfig, CoDelQueue, PidConfig, PidShedder,
    PriorityConfig, PriorityShedder, RpcQueue, RpcQueueConfig, drop_probability,
};
use sim_core::{Seed, SimDuration, SimTime};

const TICK: SimDuration = SimDuration::from_micros(100);

/// Drives a CoDel queue: `arrivals(t)` says how many requests arrive at tick `t`, one request is
/// dequeued per tick, until `end`. Returns the times of CoDel's drops.
fn check_codel(
    config: &CoDelConfig,
    end: SimTime,
    arrivals: impl Fn(SimTime) -> u32,
) -> Vec<SimTime> {
    let mut q = CoDelQueue::new(config).unwrap();
    let mut drops = Vec::new();
    let mut now = SimTime::ZERO;
    let mut id = 0u64;
    while now <= end {
        for _ in 0..arrivals(now) {
            q.enqueue(now, id).unwrap();
            id += 1;
        }
        let d = q.dequeue(now);
        drops.extend(d.dropped.iter().map(|_| now));
        now += TICK;
    }
    drops
}

/// The control law computed here, independently of the crate: t(k+1) = t(k) + interval / √k,
/// and a drop happens at the first dequeue tick at or after its scheduled time.
fn schedule(entry: SimTime, interval: SimDuration, first_count: u32, n: usize) -> Vec<SimTime> {
    let mut scheduled = vec![entry];
    let mut count = first_count;
    let mut next =
        entry + SimDuration::from_nanos_f64(interval.as_nanos() as f64 / f64::from(count).sqrt());
    while scheduled.len() < n {
        scheduled.push(next);
        count += 1;
        next += SimDuration::from_nanos_f64(interval.as_nanos() as f64 / f64::from(count).sqrt());
    }
    let tick = TICK.as_nanos();
    scheduled
        .into_iter()
        .map(|t| SimTime::from_nanos(t.as_nanos().div_ceil(tick) * tick))
        .collect()
}

fn ms(n: u64) -> SimTime {
    SimTime::from_millis(n)
}

#[test]
fn codel_first_ten_drops_follow_the_control_law() {
    let config = CoDelConfig {
        queue_capacity: 100_000,
        ..CoDelConfig::default()
    };
    // 20 000 requests at time 0, one dequeue per 100µs: the head's sojourn is `now`, above the
    // 5ms target from 5ms on, so dropping starts one interval later, at 105ms.
    let drops = check_codel(&config, ms(900), |t| {
        if t == SimTime::ZERO { 20_000 } else { 0 }
    });
    let expected = schedule(ms(105), config.interval, 1, 10);
    assert_eq!(
        expected.iter().map(|t| t.as_nanos()).collect::<Vec<_>>(),
        [
            105_000_000,
            205_000_000,
            275_800_000,
            333_500_000,
            383_500_000,
            428_200_000,
            469_000_000,
            506_800_000,
            542_200_000,
            575_500_000
        ],
        "the hand-checked schedule"
    );
    assert_eq!(&drops[..10], &expected[..]);
}

/// Sojourn above target until `leave`, below it for a while (fresh arrivals served at once),
/// then above again from `back`: the second dropping period starts with the count the RFC
/// prescribes.
fn reentry_drops(back: SimTime) -> Vec<SimTime> {
    let config = CoDelConfig {
        queue_capacity: 100_000,
        ..CoDelConfig::default()
    };
    let leave = ms(700);
    let mut q = CoDelQueue::new(&config).unwrap();
    let mut drops = Vec::new();
    let mut now = SimTime::ZERO;
    while now <= back + SimDuration::from_millis(800) {
        // Phase 1: a big backlog from time 0. Phase 2: the backlog is flushed at `leave` and
        // each tick brings one fresh request. Phase 3: from `back`, a new backlog builds.
        if now == SimTime::ZERO {
            for i in 0..20_000u64 {
                q.enqueue(now, i).unwrap();
            }
        }
        if now == leave {
            while !q.is_empty() {
                let _ = q.dequeue(now);
            }
        }
        if now >= leave {
            q.enqueue(now, 0).unwrap();
        }
        if now == back {
            for i in 0..20_000u64 {
                q.enqueue(now, i).unwrap();
            }
        }
        if now != leave {
            let d = q.dequeue(now);
            drops.extend(d.dropped.iter().map(|_| now));
        }
        now += TICK;
    }
    drops
}

#[test]
fn codel_reentering_soon_reuses_the_count() {
    // Dropping from 105ms until the flush at 700ms; the flush ends the dropping state with
    // `count` at the number of drops so far and `lastcount` at 1. The backlog from 800ms
    // re-enters at 905ms (sojourn above target from 805ms, plus an interval), within 16
    // intervals of the last drop_next, so count restarts at count − lastcount, and the second
    // drop comes interval/√(count − 1) after the first.
    let interval = SimDuration::from_millis(100);
    let first_period = schedule(ms(105), interval, 1, 20);
    let dropped_before_flush = first_period.iter().filter(|&&t| t < ms(700)).count();
    assert_eq!(dropped_before_flush, 14, "the hand-checked count");
    let drops = reentry_drops(ms(800));
    let before: Vec<_> = drops.iter().filter(|&&t| t < ms(700)).copied().collect();
    assert_eq!(before, first_period[..dropped_before_flush]);
    let second: Vec<_> = drops.iter().filter(|&&t| t > ms(800)).copied().collect();
    let reused = dropped_before_flush as u32 - 1;
    assert_eq!(&second[..4], &schedule(ms(905), interval, reused, 4)[..]);
    // Not the fresh start it would be without the reuse rule.
    assert_ne!(&second[..4], &schedule(ms(905), interval, 1, 4)[..]);
}

#[test]
fn codel_reentering_after_sixteen_intervals_starts_over() {
    let drops = reentry_drops(ms(3000));
    let second: Vec<_> = drops.iter().filter(|&&t| t > ms(3000)).copied().collect();
    assert_eq!(
        &second[..4],
        &schedule(ms(3105), SimDuration::from_millis(100), 1, 4)[..]
    );
}

#[test]
fn codel_does_not_drop_a_short_queue_or_a_passing_burst() {
    let config = CoDelConfig {
        queue_capacity: 100_000,
        ..CoDelConfig::default()
    };
    // Two requests per tick against one dequeue: the queue grows, but by 0.1ms of delay per
    // tick, so the sojourn passes 5ms after 5ms... which is a standing queue: drops begin.
    let drops = check_codel(&config, ms(300), |_| 2);
    assert!(!drops.is_empty());
    // One request per tick, served at once: sojourn 0, never a drop.
    assert!(check_codel(&config, ms(1000), |_| 1).is_empty());
    // A burst of 60 at 0 drains in 6ms: above target for 1ms only, never for an interval.
    assert!(
        check_codel(&config, ms(1000), |t| if t == SimTime::ZERO {
            60
        } else {
            0
        })
        .is_empty()
    );
}

#[test]
fn codel_remove_takes_a_cancelled_request_out_and_the_head_moves() {
    let mut q = CoDelQueue::new(&CoDelConfig::default()).unwrap();
    for (i, t) in [(1, 0), (2, 10), (3, 20)] {
        q.enqueue(ms(t), i).unwrap();
    }
    assert_eq!(q.oldest(), Some(ms(0)));
    assert!(q.remove(&1));
    assert!(!q.remove(&1));
    assert_eq!((q.len(), q.oldest()), (2, Some(ms(10))));
    let out = q.dequeue(ms(20));
    assert_eq!(out.delivered, Some((2, SimDuration::from_millis(10))));
    assert!(out.dropped.is_empty());
}

#[test]
fn codel_refuses_arrivals_at_capacity_and_invalid_configs() {
    let mut q = CoDelQueue::new(&CoDelConfig {
        queue_capacity: 1,
        ..CoDelConfig::default()
    })
    .unwrap();
    assert_eq!(q.enqueue(SimTime::ZERO, 1), Ok(()));
    assert_eq!(q.enqueue(SimTime::ZERO, 2), Err(2));
    let e = CoDelConfig {
        interval: SimDuration::from_millis(5),
        ..CoDelConfig::default()
    }
    .validate()
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "interval: must be longer than target (5ms), got 5ms"
    );
}

#[test]
fn rpc_queue_sheds_by_queueing_delay_and_serves_newest_first_when_overloaded() {
    let mut q = RpcQueue::new(&RpcQueueConfig::default()).unwrap();
    // 30 requests at 0, one served every 10ms: not overloaded yet, so they are served in
    // arrival order and may wait up to the interval (100ms).
    for i in 0..30u64 {
        q.enqueue(ms(0), i).unwrap();
    }
    for (n, t) in (10..100).step_by(10).enumerate() {
        let d = q.dequeue(ms(t));
        assert_eq!(d.delivered, Some((n as u64, SimDuration::from_millis(t))));
        assert!(d.dropped.is_empty());
    }
    assert!(!q.overloaded());
    // The first interval ends at 100ms with a shortest sojourn of 10ms > 5ms: overloaded. The
    // limit drops to 5ms, so the 21 requests left (100ms old) are all dropped.
    let d = q.dequeue(ms(100));
    assert!(q.overloaded());
    assert_eq!(q.wait_max(), SimDuration::from_millis(5));
    assert_eq!((d.delivered, d.dropped.len()), (None, 21));
    // Adaptive LIFO: newest first while overloaded.
    q.enqueue(ms(104), 104).unwrap();
    q.enqueue(ms(105), 105).unwrap();
    let d = q.dequeue(ms(106));
    assert_eq!(d.delivered, Some((105, SimDuration::from_millis(1))));
    let d = q.dequeue(ms(107));
    assert_eq!(d.delivered, Some((104, SimDuration::from_millis(3))));
    // An interval whose queue emptied is not overloaded.
    let _ = q.dequeue(ms(200));
    assert!(!q.overloaded());
}

#[test]
fn pid_raises_the_drop_ratio_while_above_setpoint_and_winds_down() {
    let mut pid = PidShedder::new(&PidConfig::default()).unwrap();
    // 40ms delay against a 20ms setpoint for 20s: P = 0.01 × 20 = 0.2 at once; I grows by
    // 0.05 × 20 = 1 per second, held at the 0.9 cap.
    let mut ratios = Vec::new();
    for s in 0..=20 {
        ratios.push(pid.update(SimTime::from_secs(s), 40.0));
    }
    assert!((ratios[0] - 0.2).abs() < 1e-12);
    assert_eq!(ratios[1..], [0.9; 20]);
    // Anti-windup: the integral stopped at 0.9 instead of growing to 20, so one second at
    // 10ms (P = −0.1, I = 0.9 − 0.5 = 0.4) brings the ratio down to 0.3 at once.
    let after = pid.update(SimTime::from_secs(21), 10.0);
    assert!((after - 0.3).abs() < 1e-12, "wound up: {after}");
    let mut later = after;
    for s in 22..60 {
        later = pid.update(SimTime::from_secs(s), 10.0);
    }
    assert_eq!(later, 0.0);
    // The RNG decides per request, with the probability set.
    pid.update(SimTime::from_secs(61), 1000.0);
    let mut rng = Seed(7).stream("pid");
    let drops = (0..10_000).filter(|_| pid.should_drop(&mut rng)).count();
    assert!((8_800..=9_200).contains(&drops), "{drops}");
}

#[test]
fn pid_recovers_from_an_absurd_measurement() {
    // One finite but absurd measurement (a unit mix-up, a counter read as a delay) at the
    // first update, where no time has passed yet: an integral-only controller's increment
    // is (gain × error) × dt = ∞ × 0. The controller must still follow the signal after it.
    let mut pid = PidShedder::new(&PidConfig {
        gain_proportional: 0.0,
        gain_integral: 10.0,
        ..PidConfig::default()
    })
    .unwrap();
    assert_eq!(
        pid.update(SimTime::ZERO, f64::MAX),
        0.0,
        "no time, no integral yet"
    );
    // 40ms against 20ms for a second: I grows by 10 × 20, held at the 0.9 cap.
    assert_eq!(pid.update(SimTime::from_secs(1), 40.0), 0.9);
    // At the setpoint minus 1ms for a second: I falls by 10 × 1 per second, to 0.
    assert_eq!(pid.update(SimTime::from_secs(2), 19.0), 0.0);
}

#[test]
fn priority_shedder_drops_least_important_first() {
    let mut s = PriorityShedder::new(&PriorityConfig::default()).unwrap();
    let admitted = |s: &mut PriorityShedder| (0..4).map(|c| s.admit(c).is_ok()).collect::<Vec<_>>();
    s.set_load(50.0);
    assert_eq!(admitted(&mut s), [true, true, true, true]);
    s.set_load(90.0);
    assert_eq!(admitted(&mut s), [false, false, true, true]);
    s.set_load(130.0);
    assert_eq!(admitted(&mut s), [false, false, false, false]);
    assert_eq!(s.shed_by_class(), [2, 2, 1, 1]);
    let e = PriorityConfig {
        shed_thresholds_percent: vec![80.0, 70.0],
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "shed_thresholds_percent[1]");
}

#[test]
fn adaptive_throttling_worked_example() {
    // K = 1.5 and 60% of requests accepted: (requests − 1.5 × 0.6 × requests) / (requests + 1)
    // = 0.1 × requests / (requests + 1), about 10%.
    assert_eq!(drop_probability(1000, 600, 1.5), 100.0 / 1001.0);
    assert!((drop_probability(1000, 600, 1.5) - 0.1).abs() < 1e-3);
    assert_eq!(drop_probability(1000, 700, 1.5), 0.0);
    assert_eq!(drop_probability(0, 0, 2.0), 0.0);

    let mut t = AdaptiveThrottle::new(&AdaptiveThrottleConfig {
        accepts_multiplier: 1.5,
        ..AdaptiveThrottleConfig::default()
    })
    .unwrap();
    let mut rng = Seed(3).stream("throttle");
    // 1000 requests in a minute, the backend accepting 60% of them.
    for i in 0..1000u64 {
        let now = SimTime::from_millis(i * 60);
        let _ = t.try_send(now, &mut rng);
        if i % 5 < 3 {
            t.on_accepted(now);
        }
    }
    let p = t.drop_probability(SimTime::from_secs(60));
    assert_eq!(p, 100.0 / 1001.0);
    // Two minutes later the history is gone.
    assert_eq!(t.drop_probability(SimTime::from_secs(181)), 0.0);
}
