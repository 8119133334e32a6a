//! One resilience4j instance's modules as the layers of a call, in aspect order.

use super::exceptions::{recorded, retried};
use super::{Chain, Module, field, set, within};
use crate::import::ImportError;
use crate::import::ledger::Skip;
use crate::import::model::{Host, Kind, Upstream};
use crate::import::node::Found;
use crate::import::ron::{self, Field, Ron};
use crate::import::spring::relaxed;
use patterns::breaker::BreakerConfig;
use sim_core::SimDuration;

/// resim's cap on a retry's wait and on an uncapped exponential wait (one day).
const DAY: SimDuration = SimDuration::from_secs(86_400);

/// The call to instance `name`: its layers in `order` (outer first), the TimeLimiter as its
/// `timeout` inside the Retry or its `deadline` outside it.
pub(super) fn upstream(
    name: &str,
    chains: &[Chain],
    order: &[Module],
) -> Result<(Upstream, Vec<Field>), ImportError> {
    let has = |m: Module| chains.iter().any(|c| c.module == m);
    let mut stack = Vec::new();
    let mut call = Vec::new();
    let mut retried = false;
    for m in order {
        let Some(c) = chains.iter().find(|c| c.module == *m) else {
            continue;
        };
        match m {
            Module::Retry => {
                let gates: Vec<Module> = order
                    .iter()
                    .skip_while(|o| **o != Module::Retry)
                    .filter(|o| has(**o))
                    .copied()
                    .collect();
                stack.push(retry(c, &gates, has(Module::TimeLimiter))?);
                retried = true;
            }
            Module::CircuitBreaker => stack.push(breaker(c)?),
            Module::RateLimiter => stack.push(limiter(c)?),
            Module::TimeLimiter => call.push(time_limiter(c, retried, has(Module::Retry))?),
            Module::Bulkhead => stack.push(bulkhead(c)?),
            Module::ThreadPoolBulkhead if has(Module::Bulkhead) => {
                let first = c.layers.first().expect("a chain has its instance");
                first.node().ledger.skip(&first.path, Skip::Simplification, "@Bulkhead names one type; this instance is also a semaphore bulkhead, which is imported");
            }
            Module::ThreadPoolBulkhead => stack.push(thread_pool(c)?),
        }
    }
    call.push(Field::plain("stack", Ron::List(stack)));
    let first = chains
        .first()
        .expect("an instance name comes from an instance");
    let upstream = Upstream {
        host: Host::plain(name),
        kind: Kind::Instance,
        origin: first.origin(&first.at),
        service: Vec::new(),
    };
    Ok((upstream, call))
}

/// A `Retry` layer, with the gates inside it.
fn retry(c: &Chain, gates: &[Module], time_limited: bool) -> Result<Field, ImportError> {
    // Spring reads `maxAttempts: 0` as not set.
    let attempts = c.u32("maxattempts")?.filter(|f| f.value != 0);
    within(
        c,
        &attempts,
        |n| n <= 100,
        "must be at most 100 (resim's cap on attempts)",
    )?;
    c.skip(
        "failaftermaxattempts",
        Skip::NoCounterpart,
        "it concerns results retried by a result predicate; resim retries failures only",
    );
    let mut fields = vec![
        field(
            c,
            "max_attempts",
            attempts,
            3,
            &c.absent("maxAttempts"),
            ron::scalar,
        ),
        backoff(c)?,
    ];
    fields.extend(retried(c, gates, time_limited));
    Ok(Field::plain("", ron::named("Retry", fields)))
}

/// The Retry's interval function as resim's backoff: fixed, exponential, randomised or both,
/// as resilience4j's Spring binding chooses (only when `waitDuration` is set).
fn backoff(c: &Chain) -> Result<Field, ImportError> {
    let wait = c.duration("waitduration")?;
    within(
        c,
        &wait,
        |d| d <= DAY,
        "must be at most 1 day (resim's cap on a retry's wait)",
    )?;
    let flag = |p: &str| -> Result<Option<Found<bool>>, ImportError> { c.bool(p) };
    let exponential = flag("enableexponentialbackoff")?.filter(|f| f.value);
    let randomized = flag("enablerandomizedwait")?.filter(|f| f.value);
    let multiplier = c.f64("exponentialbackoffmultiplier")?;
    within(
        c,
        &multiplier,
        |m| (1.0..=100.0).contains(&m),
        "must be in [1, 100] (resim's backoff does not shrink)",
    )?;
    let factor = c.f64("randomizedwaitfactor")?;
    within(c, &factor, |f| (0.0..1.0).contains(&f), "must be in [0, 1)")?;
    let max = c.duration("exponentialmaxwaitduration")?;
    let Some(wait) = wait else {
        for p in [
            "enableexponentialbackoff",
            "enablerandomizedwait",
            "exponentialbackoffmultiplier",
            "randomizedwaitfactor",
            "exponentialmaxwaitduration",
        ] {
            c.skip(p, Skip::OutOfRange, "resilience4j's Spring binding applies it only with waitDuration set; the fixed 500ms wait applies");
        }
        let delay = field(
            c,
            "delay",
            None,
            SimDuration::from_millis(500),
            &c.absent("waitDuration"),
            ron::duration,
        );
        return Ok(backoff_field(
            ron::named("Constant", vec![delay]),
            jitter_none(),
        ));
    };
    let strategy = strategy(c, wait, exponential.is_some(), multiplier, max);
    let jitter = match &randomized {
        Some(r) => jitter(c, r, factor.as_ref(), exponential.is_some()),
        None => {
            c.skip(
                "randomizedwaitfactor",
                Skip::OutOfRange,
                "enableRandomizedWait is not true, so resilience4j does not use it",
            );
            jitter_none()
        }
    };
    Ok(backoff_field(strategy, jitter))
}

/// The Retry's wait before jitter: exponential from `waitDuration` when enabled, else fixed.
fn strategy(
    c: &Chain,
    wait: Found<SimDuration>,
    exponential: bool,
    multiplier: Option<Found<f64>>,
    max: Option<Found<SimDuration>>,
) -> Ron {
    let initial = Sourced(wait);
    if !exponential {
        for p in ["exponentialbackoffmultiplier", "exponentialmaxwaitduration"] {
            c.skip(
                p,
                Skip::OutOfRange,
                "enableExponentialBackoff is not true, so resilience4j does not use it",
            );
        }
        return ron::named("Constant", vec![initial.field(c, "delay")]);
    }
    let mult = field(
        c,
        "multiplier",
        multiplier,
        1.5,
        &c.absent("exponentialBackoffMultiplier"),
        ron::float,
    );
    let cap = match max {
        Some(m) => Field::from("delay_max", ron::duration(m.value), c.origin(&m.path)),
        None => Field::from(
            "delay_max",
            ron::duration(DAY),
            c.origin(&c.absent("exponentialMaxWaitDuration")),
        )
        .noted("resilience4j does not cap the wait; resim caps it at 1 day"),
    };
    ron::named(
        "Exponential",
        vec![initial.field(c, "delay_initial"), mult, cap],
    )
}

/// resilience4j's randomized wait as proportional jitter.
fn jitter(
    c: &Chain,
    randomized: &Found<bool>,
    factor: Option<&Found<f64>>,
    exponential: bool,
) -> Field {
    let spread = factor.map_or(50.0, |f| f.value * 100.0);
    let from = factor.map_or(c.origin(&randomized.path), |f| c.origin(&f.path));
    let mut note =
        "resilience4j's randomized wait: uniform on wait · [1 − factor, 1 + factor]".to_string();
    if factor.is_none() {
        note.push_str("; resilience4j's default factor 0.5");
    }
    if exponential {
        note.push_str("; resilience4j caps after randomising, resim before");
    }
    let value = format!(
        "Proportional(spread_percent: {})",
        ron::float(spread).one_line()
    );
    Field::from("jitter", Ron::Scalar(value), from).noted(note)
}

/// A value read from the file, written as the field it becomes.
struct Sourced(Found<SimDuration>);

impl Sourced {
    fn field(&self, c: &Chain, name: &str) -> Field {
        Field::from(name, ron::duration(self.0.value), c.origin(&self.0.path))
    }
}

fn jitter_none() -> Field {
    Field::plain("jitter", ron::scalar("None"))
        .noted("resilience4j waits exactly, unless enableRandomizedWait")
}

fn backoff_field(strategy: Ron, jitter: Field) -> Field {
    Field::plain(
        "backoff",
        ron::fields(vec![Field::plain("strategy", strategy), jitter]),
    )
}

/// A `Breaker` layer: the properties the file sets, under resim's names (resilience4j's, in
/// snake case), and the half-open wait resim needs.
fn breaker(c: &Chain) -> Result<Field, ImportError> {
    recorded(c);
    let percent = |p: &str| percent(c, p);
    let count = |p: &str| count(c, p);
    let positive = |p: &str| positive(c, p);
    let mut fields: Vec<Field> = [
        set(
            c,
            "failure_rate_threshold",
            percent("failureratethreshold")?,
            ron::float,
        ),
        set(
            c,
            "slow_call_rate_threshold",
            percent("slowcallratethreshold")?,
            ron::float,
        ),
        set(
            c,
            "slow_call_duration_threshold",
            positive("slowcalldurationthreshold")?,
            ron::duration,
        ),
        window_type(c)?,
        set(
            c,
            "sliding_window_size",
            count("slidingwindowsize")?,
            ron::scalar,
        ),
        set(
            c,
            "minimum_number_of_calls",
            count("minimumnumberofcalls")?,
            ron::scalar,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    fields.extend(open_wait(c, positive("waitdurationinopenstate")?)?);
    let automatic = c.bool("automatictransitionfromopentohalfopenenabled")?;
    fields.extend(set(
        c,
        "automatic_transition_from_open_to_half_open_enabled",
        automatic,
        ron::scalar,
    ));
    if let Some(n) = count("permittednumberofcallsinhalfopenstate")? {
        let inner = Ron::Scalar(format!(
            "(kind: \"permitted_calls\", permitted_number_of_calls_in_half_open_state: {})",
            n.value
        ));
        fields.push(Field::from("half_open", inner, c.origin(&n.path)));
    }
    fields.extend(half_open_wait(c)?);
    c.skip(
        "initialstate",
        Skip::Simplification,
        "a resim breaker starts closed",
    );
    Ok(Field::plain("", ron::named("Breaker", fields)))
}

/// A percentage in (0, 100], as resilience4j's thresholds.
fn percent(c: &Chain, p: &str) -> Result<Option<Found<f64>>, ImportError> {
    let f = c.f64(p)?;
    within(c, &f, |x| x > 0.0 && x <= 100.0, "must be in (0, 100]")?;
    Ok(f)
}

/// A count of calls, at least 1 and within resim's cap on a window.
fn count(c: &Chain, p: &str) -> Result<Option<Found<u32>>, ImportError> {
    let f = c.u32(p)?;
    let ok = |n: u32| (1..=1_000_000).contains(&n);
    within(
        c,
        &f,
        ok,
        "must be in [1, 1000000] (resim's cap on a window)",
    )?;
    Ok(f)
}

/// A positive duration.
fn positive(c: &Chain, p: &str) -> Result<Option<Found<SimDuration>>, ImportError> {
    let f = c.duration(p)?;
    within(c, &f, |d| !d.is_zero(), "must be positive")?;
    Ok(f)
}

/// Lists each of `properties` the chain sets as not imported, for `reason`.
fn skip_all(c: &Chain, properties: &[&str], kind: Skip, reason: &str) {
    for p in properties {
        c.skip(p, kind, reason);
    }
}

/// `slidingWindowType`, as Spring binds an enum (relaxed).
fn window_type(c: &Chain) -> Result<Option<Field>, ImportError> {
    let Some(t) = c.str("slidingwindowtype")? else {
        return Ok(None);
    };
    let value = match relaxed(&t.value).as_str() {
        "countbased" => "count_based",
        "timebased" => "time_based",
        _ => {
            let layer = c.layers.first().expect("a chain has its instance").node();
            return Err(layer.error(
                &t.path,
                format!("expected COUNT_BASED or TIME_BASED, got {:?}", t.value),
            ));
        }
    };
    Ok(Some(Field::from(
        "sliding_window_type",
        ron::scalar(value),
        c.origin(&t.path),
    )))
}

/// `waitDurationInOpenState` and its exponential backoff.
fn open_wait(c: &Chain, wait: Option<Found<SimDuration>>) -> Result<Vec<Field>, ImportError> {
    let random = ["enablerandomizedwait", "randomizedwaitfactor"];
    skip_all(
        c,
        &random,
        Skip::Simplification,
        "resim's open wait is not randomised",
    );
    let exponential = c.bool("enableexponentialbackoff")?.filter(|f| f.value);
    let multiplier = c.f64("exponentialbackoffmultiplier")?;
    let ok = |m: f64| (1.0..=100.0).contains(&m);
    within(
        c,
        &multiplier,
        ok,
        "must be in [1, 100] (resim's open wait does not shrink)",
    )?;
    let max = c.duration("exponentialmaxwaitdurationinopenstate")?;
    let backoff = [
        "exponentialbackoffmultiplier",
        "exponentialmaxwaitdurationinopenstate",
    ];
    let Some(wait) = wait else {
        let all = ["enableexponentialbackoff", backoff[0], backoff[1]];
        skip_all(
            c,
            &all,
            Skip::OutOfRange,
            "resilience4j's Spring binding applies it only with waitDurationInOpenState set",
        );
        return Ok(Vec::new());
    };
    let mut fields = vec![Field::from(
        "wait_duration_in_open_state",
        ron::duration(wait.value),
        c.origin(&wait.path),
    )];
    let Some(e) = exponential else {
        skip_all(
            c,
            &backoff,
            Skip::OutOfRange,
            "enableExponentialBackoff is not true, so resilience4j does not use it",
        );
        fields.extend(fixed_open_wait_cap(c, &wait));
        return Ok(fields);
    };
    let name = "wait_duration_in_open_state_multiplier";
    fields.push(match multiplier {
        Some(m) => Field::from(name, ron::float(m.value), c.origin(&m.path)),
        None => {
            Field::from(name, ron::float(1.5), c.origin(&e.path)).noted("resilience4j's default")
        }
    });
    let name = "wait_duration_in_open_state_max";
    fields.push(match max {
        Some(m) if m.value >= wait.value => {
            Field::from(name, ron::duration(m.value), c.origin(&m.path))
        }
        Some(m) => {
            let layer = c.layers.first().expect("a chain has its instance").node();
            let message = format!("must be at least waitDurationInOpenState ({})", wait.value);
            return Err(layer.error(&m.path, message));
        }
        None => Field::from(name, ron::duration(DAY), c.origin(&e.path))
            .noted("resilience4j does not cap the wait; resim caps it at 1 day"),
    });
    Ok(fields)
}

/// resim's cap on the open wait defaults to 60s and must not be below the wait: a longer
/// fixed wait (no back-off) is its own cap, which a multiplier of 1 never reaches.
fn fixed_open_wait_cap(c: &Chain, wait: &Found<SimDuration>) -> Option<Field> {
    let cap = BreakerConfig::default().wait_duration_in_open_state_max;
    (wait.value > cap).then(|| {
        Field::from(
            "wait_duration_in_open_state_max",
            ron::duration(wait.value),
            c.origin(&wait.path),
        )
        .noted("the open wait does not back off: its cap is the wait")
    })
}

/// `maxWaitDurationInHalfOpenState` and where the breaker goes after it.
fn half_open_wait(c: &Chain) -> Result<Vec<Field>, ImportError> {
    let wait = c.duration("maxwaitdurationinhalfopenstate")?;
    let mut fields = vec![match wait {
        Some(w) if !w.value.is_zero() => Field::from(
            "max_wait_duration_in_half_open_state",
            ron::duration(w.value),
            c.origin(&w.path),
        ),
        found => {
            let at = found.map_or(c.absent("maxWaitDurationInHalfOpenState"), |f| f.path);
            Field::from("max_wait_duration_in_half_open_state", ron::duration(SimDuration::from_secs(60)), c.origin(&at))
                .noted("resilience4j's 0 waits in half-open for ever; resim refuses that wedge and waits 60s")
        }
    }];
    if let Some(t) = c.str("transitiontostateafterwaitduration")? {
        let state = match relaxed(&t.value).as_str() {
            "open" => "open",
            "closed" => "closed",
            _ => {
                let layer = c.layers.first().expect("a chain has its instance").node();
                return Err(layer.error(
                    &t.path,
                    format!("expected OPEN or CLOSED, got {:?}", t.value),
                ));
            }
        };
        fields.push(Field::from(
            "transition_to_state_after_wait_duration",
            ron::scalar(state),
            c.origin(&t.path),
        ));
    }
    Ok(fields)
}

/// A `Limiter` layer: resilience4j's limiter hands out `limitForPeriod` permissions per
/// `limitRefreshPeriod`, refreshed all at once at each period's start: a fixed window.
fn limiter(c: &Chain) -> Result<Field, ImportError> {
    let limit = c.u32("limitforperiod")?;
    within(c, &limit, |n| n >= 1, "must be at least 1")?;
    let period = c.duration("limitrefreshperiod")?;
    within(c, &period, |d| !d.is_zero(), "must be at least 1ns")?;
    let wait = c.duration("timeoutduration")?;
    let fields =
        vec![
        Field::plain("kind", ron::string("fixed_window")).noted(
            "resilience4j's AtomicRateLimiter: a fixed number of permissions per refresh period",
        ),
        field(c, "limit", limit, 50, &c.absent("limitForPeriod"), ron::scalar),
        field(
            c,
            "window",
            period,
            SimDuration::from_nanos(500),
            &c.absent("limitRefreshPeriod"),
            ron::duration,
        ),
        field(
            c,
            "wait_max",
            wait,
            SimDuration::from_secs(5),
            &c.absent("timeoutDuration"),
            ron::duration,
        )
        .noted("a call waits for a later period's permission up to this long, else is refused"),
    ];
    Ok(Field::plain("", ron::named("Limiter", fields)))
}

/// The TimeLimiter as the call's `timeout` (one attempt's: inside the Retry, or with no
/// Retry) or `deadline` (outside the Retry).
fn time_limiter(c: &Chain, inside: bool, retry: bool) -> Result<Field, ImportError> {
    let timeout = c.duration("timeoutduration")?;
    within(c, &timeout, |d| !d.is_zero(), "must be positive")?;
    c.skip("cancelrunningfuture", Skip::Simplification, "it cancels the caller's future; whether the target stops working on it is the target service's `abandoned` setting in resim, which the import leaves as it is");
    let (name, note) = match (retry, inside) {
        (false, _) => ("timeout", "no Retry: the call's one attempt's"),
        (true, true) => ("timeout", "inside the Retry: each attempt's"),
        (true, false) => ("deadline", "outside the Retry: every attempt's together"),
    };
    let f = field(
        c,
        name,
        timeout,
        SimDuration::from_secs(1),
        &c.absent("timeoutDuration"),
        ron::duration,
    );
    let note = match &f.note {
        Some(n) => format!("{n}; {note}"),
        None => note.to_string(),
    };
    Ok(f.noted(note))
}

/// A semaphore `Bulkhead` layer.
fn bulkhead(c: &Chain) -> Result<Field, ImportError> {
    let calls = c.u32("maxconcurrentcalls")?;
    within(
        c,
        &calls,
        |n| n <= 1_000_000,
        "must be at most 1000000 (resim's cap)",
    )?;
    let wait = c.duration("maxwaitduration")?;
    let waits = wait.as_ref().is_some_and(|w| !w.value.is_zero());
    let queue = if waits {
        Field::plain("queue_capacity", ron::scalar(1_000_000)).noted("resilience4j's semaphore lets any number of callers wait; resim bounds every queue, here at its largest")
    } else {
        Field::plain("queue_capacity", ron::scalar(0)).noted("with no wait, nobody queues")
    };
    c.skip(
        "faircallhandlingenabled",
        Skip::Simplification,
        "waiters are served in arrival order, resilience4j's default (true)",
    );
    let fields = vec![
        field(
            c,
            "max_concurrent_calls",
            calls,
            25,
            &c.absent("maxConcurrentCalls"),
            ron::scalar,
        ),
        field(
            c,
            "max_wait_duration",
            wait,
            SimDuration::ZERO,
            &c.absent("maxWaitDuration"),
            ron::duration,
        ),
        queue,
    ];
    Ok(Field::plain("", ron::named("Bulkhead", fields)))
}

/// A thread-pool bulkhead as a `Bulkhead` layer: `coreThreadPoolSize` running, `queueCapacity`
/// queued (Java's pool starts more threads only once its queue is full).
fn thread_pool(c: &Chain) -> Result<Field, ImportError> {
    let core = c.u32("corethreadpoolsize")?;
    within(
        c,
        &core,
        |n| (1..=1_000_000).contains(&n),
        "must be in [1, 1000000]",
    )?;
    let queue = c.u32("queuecapacity")?;
    within(
        c,
        &queue,
        |n| n <= 1_000_000,
        "must be at most 1000000 (resim's cap)",
    )?;
    c.skip("maxthreadpoolsize", Skip::Simplification, "Java's pool starts threads beyond coreThreadPoolSize only when its queue is full; resim runs coreThreadPoolSize at once and queues the rest");
    c.skip(
        "keepaliveduration",
        Skip::NoCounterpart,
        "threads beyond the core are not modelled",
    );
    let running = match core {
        Some(f) => Field::from("max_concurrent_calls", ron::scalar(f.value), c.origin(&f.path)),
        None => Field::from("max_concurrent_calls", ron::scalar(3), c.origin(&c.absent("coreThreadPoolSize")))
            .noted("placeholder: resilience4j's default is the processors of the machine minus one; set it to yours"),
    };
    let fields = vec![
        running,
        field(
            c,
            "queue_capacity",
            queue,
            100,
            &c.absent("queueCapacity"),
            ron::scalar,
        ),
        Field::plain(
            "max_wait_duration",
            ron::duration(SimDuration::from_secs(3600)),
        )
        .noted("a queued task waits for a thread as long as it takes; an hour here"),
    ];
    Ok(Field::plain("", ron::named("Bulkhead", fields)))
}
