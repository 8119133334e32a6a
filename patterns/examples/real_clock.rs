//! The patterns in a real service: a circuit breaker and a retry policy driven by the wall
//! clock, around a dependency that is down for its first 300ms.
//!
//! Every machine in `patterns` takes `now` as an argument and never reads a clock, so the same
//! code runs in a simulation (where `now` is virtual) and here, where [`Clock`] turns
//! `std::time::Instant` into the `SimTime` the machines expect: nanoseconds since the clock was
//! made. The book's chapter "Using the patterns in a real service" includes this file.
//!
//! Run it with `cargo run -p patterns --example real_clock`; it takes about a second.

use patterns::backoff::{BackoffConfig, Jitter, Strategy};
use patterns::breaker::{Breaker, BreakerConfig, BreakerDecision, HalfOpenPolicy};
use patterns::retry::{Failure, RetryConfig, RetryDecision, RetryPolicy, Safety};
use sim_core::{Seed, SimDuration, SimTime};
use std::time::{Duration, Instant};

// ANCHOR: clock
/// The wall clock as the patterns see time: nanoseconds since `start`.
///
/// This is the one place that reads the wall clock. It is allowed here, in an example that
/// runs outside any simulation; inside one, time comes from the simulator and the workspace's
/// clippy configuration refuses `Instant::now`.
struct Clock {
    start: Instant,
}

impl Clock {
    #[allow(clippy::disallowed_methods)] // a real service's clock, outside any simulation
    fn new() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    fn now(&self) -> SimTime {
        // `elapsed` is monotonic: the machines never see time go backwards.
        let nanos = u64::try_from(self.start.elapsed().as_nanos()).expect("584 years");
        SimTime::from_nanos(nanos)
    }
}
// ANCHOR_END: clock

/// A dependency that refuses every call during its first `down_for` (a 503), then answers.
struct Dependency {
    down_until: SimTime,
    calls: u32,
}

impl Dependency {
    fn call(&mut self, now: SimTime) -> Result<(), Failure> {
        self.calls += 1;
        // A real call takes time: a millisecond of it.
        std::thread::sleep(Duration::from_millis(1));
        if now < self.down_until {
            Err(Failure::Status {
                code: 503,
                retry_after: None,
            })
        } else {
            Ok(())
        }
    }
}

// ANCHOR: config
fn breaker_config() -> BreakerConfig {
    BreakerConfig {
        // Open when half of the last 10 calls failed, once 5 have been made.
        sliding_window_size: 10,
        minimum_number_of_calls: 5,
        failure_rate_threshold: 50.0,
        // Stay open 100ms, then let 2 trial calls through.
        wait_duration_in_open_state: SimDuration::from_millis(100),
        half_open: HalfOpenPolicy::PermittedCalls {
            permitted_number_of_calls_in_half_open_state: 2,
        },
        ..BreakerConfig::default()
    }
}

fn retry_config() -> RetryConfig {
    RetryConfig {
        max_attempts: 3,
        backoff: BackoffConfig {
            strategy: Strategy::Exponential {
                delay_initial: SimDuration::from_millis(20),
                multiplier: 2.0,
                delay_max: SimDuration::from_millis(200),
            },
            jitter: Jitter::Full,
        },
        ..RetryConfig::default()
    }
}
// ANCHOR_END: config

// ANCHOR: request
/// One request: attempts through the breaker, retried by the policy, with real sleeps for the
/// policy's delays. Returns whether it succeeded.
fn request(
    clock: &Clock,
    breaker: &mut Breaker,
    retry: &mut RetryPolicy,
    rng: &mut sim_core::RngStream,
    dependency: &mut Dependency,
) -> bool {
    let deadline = clock.now() + SimDuration::from_secs(1);
    let mut state = retry.begin(clock.now(), Some(deadline), Safety::Idempotent);
    loop {
        // The breaker decides first; its refusal says when it will let a call through.
        let failure = match breaker.try_acquire(clock.now()) {
            BreakerDecision::Admit(permit) => match dependency.call(clock.now()) {
                Ok(()) => {
                    breaker.on_success(clock.now(), permit);
                    retry.on_success(clock.now(), &mut state);
                    return true;
                }
                Err(failure) => {
                    breaker.on_failure(clock.now(), permit);
                    failure
                }
            },
            BreakerDecision::Reject { retry_at, .. } => Failure::Status {
                code: 503,
                // Fail fast, and tell the retry policy when the breaker will be worth asking.
                retry_after: retry_at.map(|at| at - clock.now().min(at)),
            },
        };
        match retry.on_failure(clock.now(), &mut state, failure, rng) {
            RetryDecision::Retry { after, .. } => {
                std::thread::sleep(Duration::from_nanos(after.as_nanos()));
            }
            RetryDecision::GiveUp { .. } => return false,
        }
    }
}
// ANCHOR_END: request

fn main() {
    let clock = Clock::new();
    let mut breaker = Breaker::new(&breaker_config()).expect("a valid breaker config");
    let mut retry = RetryPolicy::new(retry_config()).expect("a valid retry config");
    // Jitter needs randomness, not reproducibility: a process seeds its stream from anything
    // that differs between processes. (A simulation seeds it from the run's seed instead.)
    let mut rng = Seed(u64::from(std::process::id())).stream("client/retries");
    let mut dependency = Dependency {
        down_until: SimTime::from_millis(300),
        calls: 0,
    };

    let mut succeeded = 0;
    let requests = 40;
    for _ in 0..requests {
        if request(&clock, &mut breaker, &mut retry, &mut rng, &mut dependency) {
            succeeded += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    println!(
        "{succeeded} of {requests} requests succeeded; the dependency saw {} calls",
        dependency.calls
    );
    for t in breaker.transitions() {
        println!(
            "{:>8.1}ms  {} -> {}  ({:?})",
            t.at.as_secs_f64() * 1000.0,
            t.from.name(),
            t.to.name(),
            t.cause
        );
    }
    assert_eq!(breaker.state().name(), "closed", "the dependency came back");
}
