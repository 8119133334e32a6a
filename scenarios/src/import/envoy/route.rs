//! Envoy's routes and circuit breakers as a call: the route's timeout, retry and hedge
//! policies, and the cluster's limits on what is in flight (see the module docs of
//! [`super`] for the decisions).

use super::Route;
use crate::import::ImportError;
use crate::import::ledger::Skip;
use crate::import::model::Origin;
use crate::import::node::{Found, Node, Owned};
use crate::import::ron::{self, Field, Ron};
use crate::import::tree::child;
use serde_json::Value;
use sim_core::SimDuration;

/// A value with the path it came from (or the default's path and a note).
#[derive(Clone)]
pub(super) struct Sourced<T> {
    value: T,
    source: Origin,
    note: Option<&'static str>,
    /// The field's path when the file has it.
    pub(super) path: Option<String>,
}

impl<T> Sourced<T> {
    /// A value the file gives (read at `n`).
    fn read(n: &Node, f: Found<T>) -> Sourced<T> {
        Sourced {
            value: f.value,
            source: n.origin(&f.path),
            note: None,
            path: Some(f.path),
        }
    }

    /// A default for a field at `path` the file (read at `n`) leaves out.
    fn absent(n: &Node, value: T, path: &str, note: &'static str) -> Sourced<T> {
        Sourced {
            value,
            source: n.origin(path),
            note: Some(note),
            path: None,
        }
    }

    fn field(&self, name: &str, ron: Ron) -> Field {
        let f = Field::from(name, ron, self.source.clone());
        match self.note {
            Some(n) => f.noted(n),
            None => f,
        }
    }
}

/// The circuit breakers of the default priority.
pub(super) struct Limits {
    /// Attempts in flight: `max_requests`, and `max_connections` over HTTP/1.1.
    in_flight: Sourced<u32>,
    /// Attempts waiting for a connection (HTTP/1.1): `max_pending_requests`.
    pending: Option<Sourced<u32>>,
    /// `(budget_percent, min_retry_concurrency)`.
    pub(super) budget: Sourced<(f64, u32)>,
}

impl Limits {
    pub(super) fn read(n: &Node, http2: bool) -> Result<Limits, ImportError> {
        let default = Self::default_thresholds(n)?;
        let base = child(&n.path, "circuit_breakers.thresholds[DEFAULT]");
        let at = default.as_ref().map_or(base.clone(), |t| t.path.clone());
        let read = |k: &str, dflt: u32| -> Result<Sourced<u32>, ImportError> {
            let found = match &default {
                Some(t) => t.node().u32(k)?,
                None => None,
            };
            Ok(match found {
                Some(f) => Sourced::read(n, f),
                None => Sourced::absent(n, dflt, &child(&at, k), "Envoy's default"),
            })
        };
        let requests = read("max_requests", 1024)?;
        let connections = read("max_connections", 1024)?;
        let pending = read("max_pending_requests", 1024)?;
        let retries = read("max_retries", 3)?;
        let in_flight = Self::in_flight(n, http2, requests, &connections, &pending);
        let budget = Self::budget(&default, retries)?;
        if let Some(t) = &default {
            t.node().skip(
                "max_connection_pools",
                Skip::NoCounterpart,
                "resim has one connection pool per call and replica",
            );
            t.node().skip(
                "track_remaining",
                Skip::NoCounterpart,
                "a statistic, not a behaviour",
            );
        }
        Ok(Limits {
            in_flight,
            pending: (!http2).then_some(pending),
            budget,
        })
    }

    /// The thresholds of the `DEFAULT` priority (those of other priorities are listed).
    fn default_thresholds<'a>(n: &Node<'a>) -> Result<Option<Owned<'a>>, ImportError> {
        let thresholds = match n.object("circuit_breakers")? {
            Some(cb) => cb.node().list("thresholds")?,
            None => Vec::new(),
        };
        let mut default = None;
        for t in thresholds {
            let priority = t.node().str("priority")?;
            match priority.as_ref().map(|p| p.value.as_str()) {
                None | Some("DEFAULT") => default = Some(t),
                Some(_) => t.node().ledger.skip(&t.path, Skip::NoCounterpart, "resim's requests have no routing priority; the DEFAULT thresholds are imported"),
            }
        }
        Ok(default)
    }

    /// Attempts in flight: `max_requests`, or over HTTP/1.1 `max_connections` when it is lower
    /// (one request per connection); the limit that does not bind is listed.
    fn in_flight(
        n: &Node,
        http2: bool,
        requests: Sourced<u32>,
        connections: &Sourced<u32>,
        pending: &Sourced<u32>,
    ) -> Sourced<u32> {
        if http2 {
            n.ledger.skip(&child(&n.path, "http2_protocol_options"), Skip::Simplification, "read as HTTP/2: requests share connections, so max_requests alone bounds them and max_connections and max_pending_requests are not imported");
            for p in [&connections.path, &pending.path].into_iter().flatten() {
                n.ledger.skip(
                    p,
                    Skip::Simplification,
                    "over HTTP/2 requests share connections: max_requests bounds them",
                );
            }
        }
        if http2 || requests.value <= connections.value {
            if let (false, Some(p)) = (http2, &connections.path) {
                n.ledger.skip(
                    p,
                    Skip::Simplification,
                    format!(
                        "max_requests ({}) is the lower limit and binds first",
                        requests.value
                    ),
                );
            }
            requests
        } else {
            if let Some(p) = &requests.path {
                n.ledger.skip(p, Skip::Simplification, format!("over HTTP/1.1 a connection carries one request, so max_connections ({}) binds first", connections.value));
            }
            connections.clone()
        }
    }

    /// `retry_budget` when set (it replaces `max_retries`, as in Envoy), else `max_retries`
    /// as a budget of no percentage and that many retries at once.
    fn budget(
        default: &Option<Owned>,
        retries: Sourced<u32>,
    ) -> Result<Sourced<(f64, u32)>, ImportError> {
        let Some(t) = default else {
            return Ok(Sourced {
                value: (0.0, retries.value),
                source: retries.source,
                note: retries.note,
                path: retries.path,
            });
        };
        let Some(b) = t.node().object("retry_budget")? else {
            return Ok(Sourced {
                value: (0.0, retries.value),
                source: retries.source,
                note: retries.note,
                path: retries.path,
            });
        };
        if t.node().raw("max_retries").is_some() {
            t.node().ledger.skip(
                &child(&t.path, "max_retries"),
                Skip::Simplification,
                "Envoy ignores max_retries when retry_budget is set, and so does the import",
            );
        }
        let bn = b.node();
        let percent = bn.f64("budget_percent")?;
        let min = bn.u32("min_retry_concurrency")?;
        Ok(Sourced {
            value: (
                percent.as_ref().map_or(20.0, |p| p.value),
                min.as_ref().map_or(3, |m| m.value),
            ),
            source: b.origin(&b.path),
            note: (percent.is_none() || min.is_none())
                .then_some("Envoy's defaults for what it leaves out: 20%, 3"),
            path: Some(b.path.clone()),
        })
    }
}

/// The call's `deadline`, `timeout` and `stack` from the route (if any) and the limits.
pub(super) fn call_fields(
    route: Option<&Route>,
    limits: &Limits,
) -> Result<Vec<Field>, ImportError> {
    let mut fields = Vec::new();
    let mut stack = Vec::new();
    let mut deadline = None;
    if let Some(r) = route {
        let n = r.route.node();
        let action = n
            .object("route")?
            .ok_or_else(|| n.error(&r.route.path, "expected a route action (`route:`)"))?;
        let a = action.node();
        a.take("cluster");
        let timeout = a.duration("timeout")?;
        deadline = match &timeout {
            Some(t) if t.value.is_zero() => None,
            Some(t) => Some(Sourced {
                value: t.value,
                source: a.origin(&t.path),
                note: None,
                path: None,
            }),
            None => Some(Sourced {
                value: SimDuration::from_secs(15),
                source: a.origin(&child(&action.path, "timeout")),
                note: Some("Envoy's default"),
                path: None,
            }),
        };
        if let Some(d) = &deadline {
            fields.push(d.field("deadline", ron::duration(d.value)));
        }
        n.skip("match", Skip::Simplification, "resim's requests carry no paths or headers: each route is a call of its own, its share of the requests the call's weight");
        let retry = policy(&a, &r.host, "retry_policy")?;
        let hedge = policy(&a, &r.host, "hedge_policy")?;
        let (retry_layer, per_try) = match &retry {
            Some(p) => retry_policy(p, limits)?,
            None => (None, None),
        };
        let hedged = match &hedge {
            Some(h) => hedge_policy(h, per_try.as_ref(), retry.as_ref())?,
            None => None,
        };
        if let (Some(t), None) = (&per_try, &hedged) {
            fields.push(Field::from(
                "timeout",
                ron::duration(t.value),
                a.origin(&t.path),
            ));
        }
        stack.extend(hedged);
        stack.extend(retry_layer);
    }
    stack.push(bulkhead(limits, deadline.as_ref()));
    fields.push(Field::plain("stack", Ron::List(stack)));
    Ok(fields)
}

/// The route's `retry_policy` or `hedge_policy`, else its virtual host's (a route's replaces
/// its host's, as in Envoy).
fn policy<'a>(
    action: &Node<'a>,
    host: &Owned<'a>,
    k: &str,
) -> Result<Option<Owned<'a>>, ImportError> {
    let own = action.object(k)?;
    let from_host = host.node().object(k)?;
    if let (Some(_), Some(h)) = (&own, &from_host) {
        host.node().ledger.skip(
            &h.path,
            Skip::Simplification,
            format!("the route's own {k} replaces its virtual host's, as in Envoy"),
        );
        return Ok(own);
    }
    Ok(own.or(from_host))
}

/// The 5xx statuses of HTTP (RFC 9110 and the registry), which Envoy's `5xx` retries.
pub(crate) const STATUS_5XX: [u16; 11] = [500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511];

/// The fields of a retry policy that resim has no counterpart for, or simplifies.
const RETRY_NOT_IMPORTED: [(&str, Skip, &str); 6] = [
    (
        "per_try_idle_timeout",
        Skip::NoCounterpart,
        "resim's attempts stream nothing: an attempt is answered whole or times out",
    ),
    (
        "retry_host_predicate",
        Skip::Simplification,
        "the balancer picks each retry's replica afresh; it may pick the same one",
    ),
    (
        "host_selection_retry_max_attempts",
        Skip::Simplification,
        "the balancer picks each retry's replica afresh; it may pick the same one",
    ),
    (
        "retry_priority",
        Skip::NoCounterpart,
        "resim has no priority levels of hosts",
    ),
    (
        "retriable_headers",
        Skip::NoCounterpart,
        "resim's answers carry no headers but the status and Retry-After",
    ),
    (
        "retriable_request_headers",
        Skip::NoCounterpart,
        "resim's requests carry no headers",
    ),
];

/// `retry_policy` as a `Retry` layer, and its `per_try_timeout`.
fn retry_policy(
    p: &Owned,
    limits: &Limits,
) -> Result<(Option<Field>, Option<Found<SimDuration>>), ImportError> {
    let n = p.node();
    let on = Retriable::read(&n)?;
    let retries = match n.u32("num_retries")? {
        Some(f) => Field::from("max_retries", ron::scalar(f.value), n.origin(&f.path)),
        None => Field::from(
            "max_retries",
            ron::scalar(1),
            n.origin(&child(&p.path, "num_retries")),
        )
        .noted("Envoy's default"),
    };
    let per_try = n.duration("per_try_timeout")?;
    let mut fields = vec![retries, backoff(&n)?];
    fields.extend(on.fields);
    if let Some(r) = n.object("rate_limited_retry_back_off")? {
        r.node().take("reset_headers");
        let max = r.node().duration("max_interval")?;
        fields.push(match max {
            Some(m) => Field::from("retry_after_max", ron::duration(m.value), n.origin(&m.path)),
            None => Field::from(
                "retry_after_max",
                ron::duration(SimDuration::from_secs(300)),
                n.origin(&child(&r.path, "max_interval")),
            )
            .noted("Envoy's default"),
        });
    }
    let (percent, min) = limits.budget.value;
    fields.push(limits.budget.field(
        "budget",
        Ron::Scalar(format!(
            "Concurrency(budget_percent: {}, min_retry_concurrency: {min})",
            ron::float(percent).one_line()
        )),
    ));
    for (k, kind, reason) in RETRY_NOT_IMPORTED {
        n.skip(k, kind, reason);
    }
    Ok((Some(Field::plain("", ron::named("Retry", fields))), per_try))
}

const TEN_TIMES: &str = "Envoy's default: 10 × base_interval";

/// Envoy's `retry_back_off` (or its default), as resim's backoff.
fn backoff(n: &Node) -> Result<Field, ImportError> {
    let at = child(&n.path, "retry_back_off");
    let (base, max) = match n.object("retry_back_off")? {
        Some(b) => {
            let bn = b.node();
            let base = bn.duration("base_interval")?.ok_or_else(|| {
                n.error(&at, "a retry_back_off needs `base_interval` (RetryPolicy.RetryBackOff.base_interval is required)")
            })?;
            let max = match bn.duration("max_interval")? {
                Some(m) => Sourced::read(n, m),
                None => Sourced::absent(
                    n,
                    base.value.saturating_mul(10),
                    &child(&b.path, "max_interval"),
                    TEN_TIMES,
                ),
            };
            (Sourced::read(n, base), max)
        }
        None => (
            Sourced::absent(
                n,
                SimDuration::from_millis(25),
                &child(&at, "base_interval"),
                "Envoy's default",
            ),
            Sourced::absent(
                n,
                SimDuration::from_millis(250),
                &child(&at, "max_interval"),
                TEN_TIMES,
            ),
        ),
    };
    if max.value < base.value {
        return Err(n.error(
            &at,
            format!(
                "max_interval ({}) must be at least base_interval ({}), as Envoy requires",
                max.value, base.value
            ),
        ));
    }
    Ok(jittered_backoff(
        base.field("delay_initial", ron::duration(base.value)),
        max.field("delay_max", ron::duration(max.value)),
        &n.origin(&at),
    ))
}

/// Envoy's back-off as a retry's `backoff`: from `initial` doubling up to `max`, fully
/// jittered; `source` names where the policy is (Istio's importer writes the same).
pub(crate) fn jittered_backoff(initial: Field, max: Field, source: &Origin) -> Field {
    Field::plain(
        "backoff",
        ron::fields(vec![
            Field::plain(
                "strategy",
                ron::named(
                    "Exponential",
                    vec![
                        initial,
                        Field::from("multiplier", ron::float(2.0), source.clone())
                            .noted("Envoy's back-off doubles with each retry"),
                        max,
                    ],
                ),
            ),
            Field::from("jitter", ron::scalar("Full"), source.clone())
                .noted("Envoy's back-off is fully jittered: uniform on [0, the interval)"),
        ]),
    )
}

/// The `retry_on` conditions that retry a connection error.
const CONNECTION: [&str; 5] = [
    "5xx",
    "reset",
    "connect-failure",
    "refused-stream",
    "reset-before-request",
];

/// The `retry_on` conditions the import knows.
const KNOWN: [&str; 9] = [
    "5xx",
    "gateway-error",
    "reset",
    "connect-failure",
    "refused-stream",
    "reset-before-request",
    "retriable-4xx",
    "retriable-status-codes",
    "envoy-ratelimited",
];

/// What `retry_on` (and `retriable_status_codes`) retries, as the retry's fields.
struct Retriable {
    fields: Vec<Field>,
}

impl Retriable {
    fn read(n: &Node) -> Result<Retriable, ImportError> {
        let on = n.str("retry_on")?;
        let (conditions, source) = match &on {
            Some(f) => (
                f.value
                    .split(',')
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty())
                    .collect::<Vec<_>>(),
                n.origin(&f.path),
            ),
            None => (Vec::new(), n.origin(&child(&n.path, "retry_on"))),
        };
        let has = |c: &str| conditions.iter().any(|x| x == c);
        let mut statuses: Vec<u16> = Vec::new();
        if has("5xx") {
            statuses.extend(STATUS_5XX);
        } else if has("gateway-error") {
            statuses.extend([502, 503, 504]);
        }
        let mut throttled = has("envoy-ratelimited");
        if has("retriable-status-codes") {
            throttled |= Self::status_codes(n, &mut statuses);
        }
        let timeout = has("5xx") || has("gateway-error") || has("reset");
        let connection = CONNECTION.iter().any(|c| has(c));
        for c in conditions.iter().filter(|c| !KNOWN.contains(&c.as_str())) {
            n.ledger.skip(
                &format!("{}:{c}", child(&n.path, "retry_on")),
                Skip::NoCounterpart,
                format!("the retry condition {c:?} has no counterpart in resim's outcomes"),
            );
        }
        let field = |name: &str, value: Ron| Field::from(name, value, source.clone());
        Ok(Retriable {
            fields: vec![
                field("retry_on_status", ron::statuses(&statuses)),
                field("retry_on_timeout", ron::scalar(timeout)),
                field("retry_on_connection_error", ron::scalar(connection)),
                field("retry_on_throttled", ron::scalar(throttled)),
                field("retry_on_conflict", ron::scalar(has("retriable-4xx"))),
                field("retry_on_local_rejection", ron::scalar(false)).noted(
                    "Envoy never retries an overflow, a request its circuit breakers refused",
                ),
            ],
        })
    }
}

impl Retriable {
    /// `retriable_status_codes`: the 5xx into `statuses`; whether 429 is among them. A 4xx
    /// other than 429 is listed as out of range.
    fn status_codes(n: &Node, statuses: &mut Vec<u16>) -> bool {
        let mut throttled = false;
        let codes = n.raw("retriable_status_codes").and_then(Value::as_array);
        for (i, code) in codes.into_iter().flatten().enumerate() {
            let path = format!("{}[{i}]", child(&n.path, "retriable_status_codes"));
            match code.as_u64() {
                Some(c @ 500..=599) => statuses.push(c as u16),
                Some(429) => throttled = true,
                _ => {
                    n.ledger.skip(&path, Skip::OutOfRange, format!("resim retries 5xx statuses, 429 (retry_on_throttled) and 409 (retriable-4xx), not {code}"));
                    continue;
                }
            }
            n.ledger.take(&path);
        }
        throttled
    }
}

/// `hedge_policy` as a `Hedge` layer: only `hedge_on_per_try_timeout` sends hedges.
fn hedge_policy(
    h: &Owned,
    per_try: Option<&Found<SimDuration>>,
    retry: Option<&Owned>,
) -> Result<Option<Field>, ImportError> {
    let n = h.node();
    for k in ["initial_requests", "additional_request_chance"] {
        n.skip(
            k,
            Skip::NoCounterpart,
            "a resim hedge races a slow attempt; it does not start with several requests",
        );
    }
    let on_timeout = n.bool("hedge_on_per_try_timeout")?;
    let Some(on) = on_timeout.filter(|f| f.value) else {
        return Ok(None);
    };
    let Some(per_try) = per_try else {
        n.ledger.skip(&on.path, Skip::OutOfRange, "Envoy hedges on a per-try timeout only when the retry policy sets per_try_timeout; this one does not");
        return Ok(None);
    };
    let retries = retry
        .and_then(|r| r.value.get("num_retries"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    Ok(Some(Field::plain(
        "",
        ron::named("Hedge", vec![
            Field::from("delay", Ron::Scalar(format!("Fixed(delay: \"{}\")", per_try.value)), {
                let mut o = n.origin(&on.path);
                o.label = format!("{} ({})", o.label, per_try.path);
                o
            }),
            Field::from("max_hedged_attempts", ron::scalar(retries.clamp(1, 10)), n.origin(&on.path))
                .noted("each per-try timeout starts the next attempt without cancelling the last, up to num_retries"),
        ]),
    )))
}

/// The circuit breakers' limits on attempts in flight, as a per-attempt bulkhead.
fn bulkhead(limits: &Limits, deadline: Option<&Sourced<SimDuration>>) -> Field {
    let mut fields = vec![
        limits
            .in_flight
            .field("max_concurrent_calls", ron::scalar(limits.in_flight.value)),
    ];
    match &limits.pending {
        Some(p) => {
            fields.push(p.field("queue_capacity", ron::scalar(p.value)));
            // A pending request waits until the route's timeout ends it.
            fields.push(match deadline {
                Some(d) => d.field("max_wait_duration", ron::duration(d.value)),
                None => Field::plain(
                    "max_wait_duration",
                    ron::duration(SimDuration::from_secs(3600)),
                )
                .noted(
                    "no route timeout: a pending request waits as long as it takes; an hour here",
                ),
            });
        }
        None => {
            fields.push(
                Field::plain("queue_capacity", ron::scalar(0))
                    .noted("over HTTP/2 requests share connections and wait for none"),
            );
        }
    }
    Field::plain("", ron::named("Bulkhead", fields)).noted(
        "Envoy's circuit breakers: limits on what is in flight to the cluster, not a resilience4j breaker; its overflow is never retried (the retry's retry_on_local_rejection: false)",
    )
}
