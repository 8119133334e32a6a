//! A call as resilience4j's Spring Boot configuration (`application.yml`): one instance per
//! module, all named after the upstream (one annotated method's `@Retry`, `@CircuitBreaker`,
//! … share the name), in the modules' aspect order. The inverse of the import's
//! `resilience4j` module: a `Retry` is `retry`, a `Breaker` `circuitbreaker`, a fixed-window
//! `Limiter` `ratelimiter`, the call's `timeout` (inside the Retry) or `deadline` (outside it)
//! `timelimiter`, a `Bulkhead` `bulkhead` (a semaphore) or `thread-pool-bulkhead` (a queue).
//! When the stack's order is not Spring's default (Retry, CircuitBreaker, RateLimiter,
//! TimeLimiter, Bulkhead, outer first), the `…AspectOrder` properties say it.

use super::sheet::{Sheet, ron};
use super::text::{Document, number, unit_duration};
use super::{Target, leave_layer, leave_service};
use crate::format::schema::Layer;
use crate::import::resilience4j::GATE_EXCEPTIONS;
use crate::import::spring::map_key;
use patterns::backoff::{Jitter, Strategy};
use patterns::breaker::{BreakerConfig, HalfOpenPolicy, SlidingWindowType, StateAfterWait};
use patterns::budget::BudgetConfig;
use patterns::bulkhead::{BULKHEAD_SIZE_MAX, BulkheadConfig};
use patterns::limiter::LimiterConfig;
use patterns::retry::RetryConfig;
use serde_json::{Map, Value, json};
use sim_core::SimDuration;

const HOUR: SimDuration = SimDuration::from_secs(3600);
/// Every 5xx status: what resilience4j's retry of every exception retries (the import's).
const STATUS_5XX: [u16; 11] = [500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511];

fn spring(d: SimDuration) -> Value {
    unit_duration(d, true)
}

/// resilience4j's modules, outer first in Spring's default aspect order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Module {
    Retry,
    CircuitBreaker,
    RateLimiter,
    TimeLimiter,
    Bulkhead,
}

impl Module {
    fn order_property(self) -> &'static str {
        match self {
            Module::Retry => "retryAspectOrder",
            Module::CircuitBreaker => "circuitBreakerAspectOrder",
            Module::RateLimiter => "rateLimiterAspectOrder",
            Module::TimeLimiter => "timeLimiterAspectOrder",
            Module::Bulkhead => "bulkheadAspectOrder",
        }
    }
}

/// The configuration being written: each module's instance, and the modules in stack order.
#[derive(Default)]
struct Modules {
    /// `(module key, instance properties)`, `thread-pool-bulkhead` for a queueing bulkhead.
    instances: Vec<(Module, &'static str, Map<String, Value>)>,
}

impl Modules {
    fn has(&self, m: Module) -> bool {
        self.instances.iter().any(|(x, _, _)| *x == m)
    }
}

/// The `application.yml` of `t`.
pub fn write(t: &Target, sheet: &mut Sheet) -> Document {
    let mut modules = Modules::default();
    let retry_at = t.retry_index();
    for (i, layer) in t.call.stack.iter().enumerate() {
        let module = match layer {
            Layer::Retry(_) => Module::Retry,
            Layer::Breaker(_) => Module::CircuitBreaker,
            Layer::Limiter(_) => Module::RateLimiter,
            Layer::Bulkhead(_) => Module::Bulkhead,
            Layer::Hedge(_) => {
                leave_layer(t, i, sheet, "no counterpart: resilience4j does not hedge");
                continue;
            }
            Layer::Fallback(_) => {
                leave_layer(
                    t,
                    i,
                    sheet,
                    "resilience4j's fallback is a method of the application (`fallbackMethod`), not configuration",
                );
                continue;
            }
            Layer::Throttle(_) | Layer::Pace(_) | Layer::AdaptiveTimeout(_) => {
                leave_layer(t, i, sheet, "no counterpart in resilience4j");
                continue;
            }
        };
        if modules.has(module) {
            leave_layer(
                t,
                i,
                sheet,
                "an instance name has one instance per module: the first is written",
            );
            continue;
        }
        let written = match layer {
            Layer::Retry(r) => Some((Module::Retry, "retry", retry(t, i, r, sheet))),
            Layer::Breaker(b) => Some((
                Module::CircuitBreaker,
                "circuitbreaker",
                breaker(t, i, b, sheet),
            )),
            Layer::Limiter(l) => {
                limiter(t, i, l, sheet).map(|p| (Module::RateLimiter, "ratelimiter", p))
            }
            Layer::Bulkhead(b) => Some(bulkhead(t, i, b, sheet)),
            _ => None,
        };
        modules.instances.extend(written);
    }
    time_limiter(t, retry_at, sheet, &mut modules);
    leave_service(t, sheet, &[], "resilience4j");
    let order = aspect_order(t, &modules);
    let mut top = Map::new();
    for (module, key, props) in modules.instances {
        let mut section = Map::new();
        if let Some(n) = order.iter().position(|m| *m == module) {
            section.insert(module.order_property().into(), json!(n + 1));
        }
        let mut instances = Map::new();
        instances.insert(map_key(&t.name), Value::Object(props));
        section.insert("instances".into(), Value::Object(instances));
        top.insert(key.into(), Value::Object(section));
    }
    Document::Yaml(vec![json!({ "resilience4j": Value::Object(top) })])
}

/// The property path of the instance in `module`.
fn property(t: &Target, module: &str, p: &str) -> String {
    format!("resilience4j.{module}.instances.{}.{p}", map_key(&t.name))
}

/// The modules in the stack's order (the TimeLimiter inside the Retry for a timeout, outside
/// it for a deadline), when that is not Spring's default order; else none.
fn aspect_order(t: &Target, modules: &Modules) -> Vec<Module> {
    let mut order: Vec<Module> = t
        .call
        .stack
        .iter()
        .filter_map(|l| match l {
            Layer::Retry(_) => Some(Module::Retry),
            Layer::Breaker(_) => Some(Module::CircuitBreaker),
            Layer::Limiter(_) => Some(Module::RateLimiter),
            Layer::Bulkhead(_) => Some(Module::Bulkhead),
            _ => None,
        })
        .filter(|m| {
            modules
                .instances
                .iter()
                .any(|(x, key, _)| x == m && *key != "thread-pool-bulkhead")
        })
        .collect();
    order.dedup();
    if modules.has(Module::TimeLimiter) {
        let retry = order.iter().position(|m| *m == Module::Retry);
        let outside = t.call.timeout.is_none() && t.call.deadline.is_some();
        match (retry, outside) {
            (Some(r), true) => order.insert(r, Module::TimeLimiter),
            (Some(r), false) => order.insert(r + 1, Module::TimeLimiter),
            (None, _) => order.push(Module::TimeLimiter),
        }
    }
    // Spring's default places the TimeLimiter inside the Retry, after the breaker and limiter:
    // any place inside the Retry reads the same (it bounds each attempt).
    let mut sorted = order.clone();
    sorted.sort();
    let inside_retry_same = |a: &[Module]| -> Vec<Module> {
        a.iter()
            .copied()
            .filter(|m| *m != Module::TimeLimiter)
            .collect()
    };
    let time_limiter_inside = match (
        order.iter().position(|m| *m == Module::Retry),
        order.iter().position(|m| *m == Module::TimeLimiter),
    ) {
        (Some(r), Some(tl)) => tl > r,
        _ => true,
    };
    if inside_retry_same(&order) == inside_retry_same(&sorted) && time_limiter_inside {
        return Vec::new();
    }
    order
}

/// A `Retry` as a retry instance.
fn retry(t: &Target, i: usize, r: &RetryConfig, sheet: &mut Sheet) -> Map<String, Value> {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let p = |k: &str| property(t, "retry", k);
    let mut props = Map::new();
    props.insert("maxAttempts".into(), json!(r.max_attempts));
    sheet.put(at("max_attempts"), p("maxAttempts"), r.max_attempts);
    wait(t, i, r, sheet, &mut props);
    let every = r.retry_on_timeout
        && r.retry_on_connection_error
        && r.retry_on_throttled
        && r.retry_on_conflict
        && STATUS_5XX.iter().all(|c| r.retry_on_status.contains(c));
    if !r.retry_on_local_rejection {
        // The rejections of resilience4j's own gates are its own exception classes.
        props.insert("ignoreExceptions".into(), json!(GATE_EXCEPTIONS));
        sheet.put(
            at("retry_on_local_rejection"),
            p("ignoreExceptions"),
            GATE_EXCEPTIONS.join(", "),
        );
    }
    if !every {
        sheet.leave(at("retry_on_*"), "some outcomes", "resilience4j retries every exception unless retryExceptions or ignoreExceptions name exception classes, which are the application's: list the ones your client throws for the outcomes this retry does not retry");
    }
    match &r.budget {
        Some(b @ BudgetConfig::RetryBreaker(_)) => sheet.leave(at("budget"), ron(b), "no counterpart: resilience4j's CircuitBreaker opens on the failure rate but then refuses first attempts too, where this breaker stops only retries; its retry has no budget"),
        Some(b) => sheet.leave(at("budget"), ron(b), "no counterpart: resilience4j's retry has no budget"),
        None => {}
    }
    sheet.leave(
        at("retry_after_max"),
        r.retry_after_max,
        "no counterpart: resilience4j's retry ignores a Retry-After",
    );
    if r.attempt_duration_min != RetryConfig::default().attempt_duration_min {
        sheet.leave(
            at("attempt_duration_min"),
            r.attempt_duration_min,
            "no counterpart: resilience4j starts an attempt whatever time is left",
        );
    }
    props
}

/// The retry's back-off as `waitDuration`, exponential backoff and randomized wait.
fn wait(t: &Target, i: usize, r: &RetryConfig, sheet: &mut Sheet, props: &mut Map<String, Value>) {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let p = |k: &str| property(t, "retry", k);
    let (initial, exponential) = match r.backoff.strategy {
        Strategy::Constant { delay } => (Some(delay), None),
        Strategy::Exponential {
            delay_initial,
            multiplier,
            delay_max,
        } => (Some(delay_initial), Some((multiplier, delay_max))),
        Strategy::Linear { .. } => (None, None),
    };
    let strategy = format!("{}.backoff.strategy", t.layer(i));
    match initial {
        Some(d) => {
            props.insert("waitDuration".into(), spring(d));
            sheet.put(format!("{strategy}.delay{}", if exponential.is_some() { "_initial" } else { "" }), p("waitDuration"), d);
        }
        None => sheet.leave(&strategy, ron(&r.backoff.strategy), "resilience4j's waits are fixed or exponential; a linear back-off has no counterpart, and resilience4j's 500ms applies"),
    }
    if let (Some(_), Some((multiplier, max))) = (initial, exponential) {
        props.insert("enableExponentialBackoff".into(), json!(true));
        props.insert("exponentialBackoffMultiplier".into(), number(multiplier));
        props.insert("exponentialMaxWaitDuration".into(), spring(max));
        sheet.put(
            format!("{strategy}.multiplier"),
            p("exponentialBackoffMultiplier"),
            multiplier,
        );
        sheet.put(
            format!("{strategy}.delay_max"),
            p("exponentialMaxWaitDuration"),
            max,
        );
    }
    match r.backoff.jitter {
        Jitter::None => {}
        Jitter::Proportional { spread_percent } if spread_percent < 100.0 && initial.is_some() => {
            props.insert("enableRandomizedWait".into(), json!(true));
            props.insert("randomizedWaitFactor".into(), number(spread_percent / 100.0));
            sheet.put(at("backoff.jitter"), p("randomizedWaitFactor"), spread_percent / 100.0);
        }
        ref other => sheet.leave(at("backoff.jitter"), ron(other), "resilience4j's randomized wait is uniform on wait · [1 − factor, 1 + factor] with factor below 1 (Proportional(spread_percent < 100)); this jitter has no counterpart, and the wait is written unjittered"),
    }
}

/// The breaker's settings that resilience4j has, as `(resim field, property, value)`.
fn settings(b: &BreakerConfig) -> Vec<(&'static str, &'static str, Value)> {
    let window = match b.sliding_window_type {
        SlidingWindowType::CountBased => "COUNT_BASED",
        SlidingWindowType::TimeBased => "TIME_BASED",
    };
    let state = match b.transition_to_state_after_wait_duration {
        StateAfterWait::Open => "OPEN",
        StateAfterWait::Closed => "CLOSED",
    };
    let automatic = b.automatic_transition_from_open_to_half_open_enabled;
    let mut written = vec![
        (
            "failure_rate_threshold",
            "failureRateThreshold",
            number(b.failure_rate_threshold),
        ),
        (
            "slow_call_rate_threshold",
            "slowCallRateThreshold",
            number(b.slow_call_rate_threshold),
        ),
        (
            "slow_call_duration_threshold",
            "slowCallDurationThreshold",
            spring(b.slow_call_duration_threshold),
        ),
        ("sliding_window_type", "slidingWindowType", json!(window)),
        (
            "sliding_window_size",
            "slidingWindowSize",
            json!(b.sliding_window_size),
        ),
        (
            "minimum_number_of_calls",
            "minimumNumberOfCalls",
            json!(b.minimum_number_of_calls),
        ),
        (
            "wait_duration_in_open_state",
            "waitDurationInOpenState",
            spring(b.wait_duration_in_open_state),
        ),
        (
            "automatic_transition_from_open_to_half_open_enabled",
            "automaticTransitionFromOpenToHalfOpenEnabled",
            json!(automatic),
        ),
        (
            "max_wait_duration_in_half_open_state",
            "maxWaitDurationInHalfOpenState",
            spring(b.max_wait_duration_in_half_open_state),
        ),
        (
            "transition_to_state_after_wait_duration",
            "transitionToStateAfterWaitDuration",
            json!(state),
        ),
    ];
    written.extend(open_wait_backoff(b));
    written
}

/// The open wait's back-off, when it has one: enabled, its multiplier and its cap.
fn open_wait_backoff(b: &BreakerConfig) -> Vec<(&'static str, &'static str, Value)> {
    let mut written = Vec::new();
    let d = BreakerConfig::default();
    // resim's open wait backs off only when told to; resilience4j's does with the flag.
    if b.wait_duration_in_open_state_multiplier != d.wait_duration_in_open_state_multiplier
        || b.wait_duration_in_open_state_max != d.wait_duration_in_open_state_max
    {
        let multiplier = b.wait_duration_in_open_state_multiplier;
        written.push((
            "wait_duration_in_open_state_multiplier",
            "enableExponentialBackoff",
            json!(true),
        ));
        written.push((
            "wait_duration_in_open_state_multiplier",
            "exponentialBackoffMultiplier",
            number(multiplier),
        ));
        written.push((
            "wait_duration_in_open_state_max",
            "exponentialMaxWaitDurationInOpenState",
            spring(b.wait_duration_in_open_state_max),
        ));
    }
    written
}

/// A `Breaker` as a circuitbreaker instance: resilience4j's names, every one written.
fn breaker(t: &Target, i: usize, b: &BreakerConfig, sheet: &mut Sheet) -> Map<String, Value> {
    let mut written = settings(b);
    match b.half_open {
        HalfOpenPolicy::PermittedCalls { permitted_number_of_calls_in_half_open_state: n } => {
            written.push(("half_open.permitted_number_of_calls_in_half_open_state", "permittedNumberOfCallsInHalfOpenState", json!(n)));
        }
        ref other => sheet.leave(format!("{}.half_open", t.layer(i)), ron(other), "resilience4j's half-open state lets permittedNumberOfCallsInHalfOpenState calls through and judges them by the thresholds (kind: \"permitted_calls\"); this policy has no counterpart"),
    }
    if let Some(n) = b.consecutive_failure_threshold {
        sheet.leave(format!("{}.consecutive_failure_threshold", t.layer(i)), n, "no counterpart: resilience4j's breaker judges failure rates over its window, not failures in a row");
    }
    // A setting at the value the import reads where the property is unset (resim's default,
    // resilience4j's) is left unset, so nothing is added that the configuration did not say.
    let mut defaults = settings(&BreakerConfig::default());
    defaults.push(("", "permittedNumberOfCallsInHalfOpenState", json!(10)));
    let mut props = Map::new();
    for (field, name, value) in written {
        let shown = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string);
        let default = defaults.iter().any(|(_, n, v)| *n == name && *v == value);
        sheet.put(
            format!("{}.{field}", t.layer(i)),
            property(t, "circuitbreaker", name),
            if default {
                format!("{shown} (resilience4j's default: left unset)")
            } else {
                shown
            },
        );
        if !default {
            props.insert(name.into(), value);
        }
    }
    props
}

/// A fixed-window `Limiter` as a ratelimiter instance (resilience4j's `AtomicRateLimiter`).
fn limiter(
    t: &Target,
    i: usize,
    l: &LimiterConfig,
    sheet: &mut Sheet,
) -> Option<Map<String, Value>> {
    let LimiterConfig::FixedWindow(w) = l else {
        leave_layer(
            t,
            i,
            sheet,
            "resilience4j's rate limiter refreshes limitForPeriod permissions at each period's start: a fixed window (kind: \"fixed_window\"); this limiter has no counterpart",
        );
        return None;
    };
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let p = |k: &str| property(t, "ratelimiter", k);
    sheet.put(at("limit"), p("limitForPeriod"), w.limit);
    sheet.put(at("window"), p("limitRefreshPeriod"), w.window);
    sheet.put(at("wait_max"), p("timeoutDuration"), w.wait_max);
    let mut props = Map::new();
    props.insert("limitForPeriod".into(), json!(w.limit));
    props.insert("limitRefreshPeriod".into(), spring(w.window));
    props.insert("timeoutDuration".into(), spring(w.wait_max));
    Some(props)
}

/// A `Bulkhead`: a `thread-pool-bulkhead` when a queued call waits as long as it takes (an
/// hour, as the import writes it) in a bounded queue, else a semaphore `bulkhead` (nobody
/// waits, or any number may wait up to `maxWaitDuration`).
fn bulkhead(
    t: &Target,
    i: usize,
    b: &BulkheadConfig,
    sheet: &mut Sheet,
) -> (Module, &'static str, Map<String, Value>) {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let mut props = Map::new();
    let semaphore = b.queue_capacity == BULKHEAD_SIZE_MAX || b.max_wait_duration != HOUR;
    if !semaphore {
        let p = |k: &str| property(t, "thread-pool-bulkhead", k);
        props.insert("coreThreadPoolSize".into(), json!(b.max_concurrent_calls));
        props.insert("maxThreadPoolSize".into(), json!(b.max_concurrent_calls));
        props.insert("queueCapacity".into(), json!(b.queue_capacity));
        sheet.put(
            at("max_concurrent_calls"),
            format!("{}, {}", p("coreThreadPoolSize"), p("maxThreadPoolSize")),
            b.max_concurrent_calls,
        );
        sheet.put(at("queue_capacity"), p("queueCapacity"), b.queue_capacity);
        sheet.put(
            at("max_wait_duration"),
            "(a queued task waits for a thread as long as it takes)",
            b.max_wait_duration,
        );
        return (Module::Bulkhead, "thread-pool-bulkhead", props);
    }
    let p = |k: &str| property(t, "bulkhead", k);
    props.insert("maxConcurrentCalls".into(), json!(b.max_concurrent_calls));
    sheet.put(
        at("max_concurrent_calls"),
        p("maxConcurrentCalls"),
        b.max_concurrent_calls,
    );
    let wait = if b.queue_capacity == 0 {
        SimDuration::ZERO
    } else {
        b.max_wait_duration
    };
    props.insert("maxWaitDuration".into(), spring(wait));
    sheet.put(at("max_wait_duration"), p("maxWaitDuration"), wait);
    match (b.queue_capacity, wait.is_zero()) {
        (0, _) => {
            sheet.put(at("queue_capacity"), p("maxWaitDuration"), "0: nobody waits");
            if !b.max_wait_duration.is_zero() {
                sheet.leave(at("max_wait_duration"), b.max_wait_duration, "with queue_capacity 0 nobody waits: maxWaitDuration 0 is written");
            }
        }
        (BULKHEAD_SIZE_MAX, false) => sheet.put(at("queue_capacity"), "(resilience4j's semaphore lets any number wait)", b.queue_capacity),
        (q, _) => sheet.leave(at("queue_capacity"), q, "resilience4j's semaphore bulkhead bounds the wait, not the waiters (a thread-pool bulkhead bounds its queue, and its tasks wait as long as it takes: max_wait_duration 1h)"),
    }
    (Module::Bulkhead, "bulkhead", props)
}

/// The call's `timeout` (each attempt's, inside the Retry) or `deadline` (outside it) as the
/// timelimiter instance.
fn time_limiter(t: &Target, retry_at: Option<usize>, sheet: &mut Sheet, modules: &mut Modules) {
    let p = property(t, "timelimiter", "timeoutDuration");
    let (written, left) = match (t.call.timeout, t.call.deadline) {
        (Some(timeout), deadline) => (
            Some(("timeout", timeout)),
            deadline.map(|d| ("deadline", d)),
        ),
        (None, Some(deadline)) => (Some(("deadline", deadline)), None),
        (None, None) => (None, None),
    };
    if let Some((field, d)) = written {
        let mut props = Map::new();
        props.insert("timeoutDuration".into(), spring(d));
        let place = match (field, retry_at) {
            (_, None) => "(no Retry: the one attempt's)",
            ("timeout", Some(_)) => "(inside the Retry: each attempt's)",
            _ => "(outside the Retry: every attempt's together)",
        };
        sheet.put(format!("{}.{field}", t.path), format!("{p} {place}"), d);
        modules
            .instances
            .push((Module::TimeLimiter, "timelimiter", props));
    }
    if let Some((field, d)) = left {
        sheet.leave(format!("{}.{field}", t.path), d, "an instance name has one TimeLimiter, written from the call's timeout; a deadline over every attempt would be a second one, outside the Retry");
    }
}
