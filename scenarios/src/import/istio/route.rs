//! A VirtualService's HTTP route as a call: its timeout (the call's deadline), its retries
//! (or Istio's default policy) with their conditions and back-off, and the connection pool's
//! limits as a per-attempt bulkhead; and Istio's durations, as Go writes them.

use super::objects::resolve;
use super::policy::{Limits, Sourced};
use super::{Destination, Share};
use crate::import::ImportError;
use crate::import::envoy::{STATUS_5XX, jittered_backoff};
use crate::import::ledger::Skip;
use crate::import::model::Origin;
use crate::import::node::{Found, Node, Owned};
use crate::import::ron::{self, Field, Ron};
use crate::import::tree::{child, words};
use patterns::bulkhead::BULKHEAD_SIZE_MAX;
use sim_core::SimDuration;

/// A duration as Istio's YAML writes it: Go's `1h`, `1m`, `1s`, `100ms`, `1.5s`, `1m30s`
/// A duration as Istio's YAML writes it: Go's `1h`, `1m`, `1s`, `100ms`, `1.5s`, `1m30s`
/// (units h, m, s, ms, us, µs, ns), or protobuf's `"0.25s"`.
pub(super) fn duration(n: &Node, k: &str) -> Result<Option<Found<SimDuration>>, ImportError> {
    let Some(v) = n.raw(k) else {
        return Ok(None);
    };
    let path = child(&n.path, k);
    let nanos = v
        .as_str()
        .and_then(go_duration)
        .filter(|d| *d <= u128::from(SimDuration::CONFIG_MAX.as_nanos()));
    let nanos = nanos.ok_or_else(|| {
        n.error(&path, format!("expected a duration such as \"100ms\", \"1.5s\", \"5m\" or \"1h\" (units h, m, s, ms, us, ns), got {v}"))
    })?;
    n.ledger.take(&path);
    Ok(Some(Found {
        value: SimDuration::from_nanos(nanos as u64),
        path,
    }))
}

/// Nanoseconds of a Go duration (`time.ParseDuration`'s grammar, no sign).
fn go_duration(s: &str) -> Option<u128> {
    let s = s.trim();
    if s == "0" {
        return Some(0);
    }
    let mut rest = s;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, tail) = rest.split_at(number_len);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let scale: u128 = match unit {
            "h" => 3_600_000_000_000,
            "m" => 60_000_000_000,
            "s" => 1_000_000_000,
            "ms" => 1_000_000,
            "us" | "µs" => 1_000,
            "ns" => 1,
            _ => return None,
        };
        let seconds = crate::import::tree::decimal_seconds(number)?;
        total = total.checked_add(seconds.checked_mul(scale)? / 1_000_000_000)?;
        rest = tail;
    }
    (!s.is_empty()).then_some(total)
}

/// The fields of an HTTP route resim has no counterpart for.
fn route_skips(h: &Owned) {
    h.take("name");
    h.skip(
        "fault",
        Skip::Simplification,
        "Istio's fault injection: write it as the scenario's `faults` (ErrorRate, Slowdown)",
    );
    for k in [
        "mirror",
        "mirrorPercentage",
        "mirrors",
        "rewrite",
        "redirect",
        "headers",
        "corsPolicy",
        "directResponse",
        "delegate",
    ] {
        h.skip(
            k,
            Skip::NoCounterpart,
            "not a resilience setting resim models",
        );
    }
}

/// The fields of a VirtualService's spec that are not routes.
fn spec_skips(spec: &Owned) {
    spec.skip(
        "gateways",
        Skip::NoCounterpart,
        "resim's calls come from a service's sidecar: gateways are not modelled",
    );
    spec.skip(
        "exportTo",
        Skip::NoCounterpart,
        "which namespaces see the rule: every caller of the import sees every host",
    );
    for k in ["tcp", "tls"] {
        spec.skip(
            k,
            Skip::NoCounterpart,
            "TCP and TLS routes carry no retry or timeout policy",
        );
    }
}

/// The destinations of a VirtualService's HTTP routes; its short hosts are in `namespace`.
pub(super) fn destinations<'a>(
    spec: &Owned<'a>,
    namespace: &str,
) -> Result<Vec<Destination<'a>>, ImportError> {
    spec_skips(spec);
    let mut https = Vec::new();
    for http in spec.list("http")? {
        route_skips(&http);
        let (caller, matches) = matched(&http)?;
        https.push((http, caller, matches));
    }
    let conditional = https.iter().filter(|h| h.2.is_some()).count();
    let (share_matched, share_rest) = shares(conditional, https.len() - conditional);
    let mut out = Vec::new();
    for (http, caller, matches) in https {
        let share = match (&matches, share_matched) {
            (_, None) => None,
            (Some(m), Some(s)) => Some(Share::Matched(s, m.clone())),
            (None, _) => share_rest.map(Share::Rest),
        };
        let entries = http.list("route")?;
        let split = entries.len() > 1;
        for entry in entries {
            entry.skip(
                "headers",
                Skip::NoCounterpart,
                "not a resilience setting resim models",
            );
            let weight = entry.u32("weight")?;
            if let Some(w) = weight.as_ref().filter(|w| w.value == 0) {
                entry.ledger.skip(
                    &entry.path,
                    Skip::OutOfRange,
                    format!(
                        "weight {}: the route sends this destination nothing",
                        w.value
                    ),
                );
                continue;
            }
            let d = entry.object("destination")?.ok_or_else(|| {
                entry.error(
                    &child(&entry.path, "destination"),
                    "a route needs a `destination` with a `host`",
                )
            })?;
            let host = d
                .str("host")?
                .ok_or_else(|| d.error(&child(&d.path, "host"), "a destination needs `host`"))?;
            d.skip(
                "port",
                Skip::NoCounterpart,
                "resim's services have no ports",
            );
            out.push(Destination {
                host: resolve(&d, &host, namespace)?,
                subset: d.str("subset")?,
                http: http.clone(),
                weight: weight.filter(|_| split),
                share: share.clone(),
                entry,
                caller: caller.clone(),
                matches: matches.clone(),
            });
        }
    }
    Ok(out)
}

/// The share of a host's requests each route with conditions takes, and each route without
/// them, of `conditional` and `plain` routes (`None` when no route has conditions). Istio
/// tries the routes in order and the first that matches takes the request; weights split a
/// route's requests among its own destinations only. How many requests match a route's
/// conditions is not in the configuration: each such route takes an equal share of the
/// host's requests (a placeholder), the routes without conditions the rest.
fn shares(conditional: usize, plain: usize) -> (Option<f64>, Option<f64>) {
    let matched = match (conditional, plain) {
        (0, _) => None,
        (k, 0) => Some(1.0 / k as f64),
        (k, _) => Some(1.0 / (k + 1) as f64),
    };
    let rest = matched.map(|s| (1.0 - s * conditional as f64) / plain.max(1) as f64);
    (matched, rest)
}

/// The calling service a route's `match` names (`sourceLabels.app`), and what it matches,
/// in Istio's words; the conditions themselves are listed, as resim's requests carry no
/// paths or headers.
fn matched(http: &Owned) -> Result<(Option<String>, Option<String>), ImportError> {
    let mut callers: Vec<String> = Vec::new();
    let mut any = Vec::new();
    for m in http.list("match")? {
        let mut all = Vec::new();
        if let Some(labels) = m.object("sourceLabels")? {
            match labels.str("app")? {
                Some(app) => callers.push(app.value),
                None => labels.ledger.skip(&labels.path, Skip::Simplification, "resim names a calling service by its `app` label; the route applies to every caller"),
            }
            for (k, _) in labels.value.as_object().into_iter().flatten() {
                if k != "app" {
                    labels.skip(k, Skip::Simplification, "resim's calling service is one set of replicas: a version or other label of the caller is not told apart");
                }
            }
        }
        for (k, v) in m.value.as_object().into_iter().flatten() {
            if k == "sourceLabels" {
                continue;
            }
            all.push(format!("{k} {}", words(v)));
            m.skip(k, Skip::Simplification, "resim's requests carry no paths or headers: the route is a call of its own, and the share of the host's requests that match it is a placeholder weight (an equal share of the host's routes): set it to your traffic's");
        }
        if !all.is_empty() {
            any.push(all.join(" and "));
        }
    }
    callers.dedup();
    let caller = match callers.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [first, ..] => {
            http.ledger.skip(
                &child(&http.path, "match"),
                Skip::Simplification,
                format!(
                    "the route's matches name several callers ({}); its call is {first}'s",
                    callers.join(", ")
                ),
            );
            Some(first.clone())
        }
    };
    Ok((caller, (!any.is_empty()).then(|| any.join(" or "))))
}

/// The call's `deadline`, `timeout` and `stack` from the route (or Istio's default, said to
/// come from `default_route`) and the connection pool.
pub(super) fn call_fields(
    route: Option<&Destination>,
    default_route: &Origin,
    limits: &Limits,
) -> Result<Vec<Field>, ImportError> {
    let mut fields = Vec::new();
    let mut stack = Vec::new();
    let mut deadline = None;
    let retries = match route {
        Some(r) => {
            let n = &r.http;
            if let Some(t) = duration(n, "timeout")?.filter(|t| !t.value.is_zero()) {
                let origin = n.origin(&t.path);
                fields.push(
                    Field::from("deadline", ron::duration(t.value), origin.clone())
                        .noted("the route's timeout spans every retry"),
                );
                deadline = Some((t.value, origin));
            }
            n.object("retries")?
        }
        None => None,
    };
    let default_at = match route {
        Some(r) => r.http.origin(&child(&r.http.path, "retries")),
        None => default_route.clone(),
    };
    let (retry, per_try) = retry(retries.as_ref(), &default_at, limits)?;
    if let Some((t, origin)) = per_try {
        fields.push(Field::from("timeout", ron::duration(t), origin).noted("one attempt's"));
    }
    stack.extend(retry);
    if let Some(in_flight) = &limits.in_flight {
        stack.push(bulkhead(in_flight, limits.pending.as_ref(), deadline));
    }
    fields.push(Field::plain("stack", Ron::List(stack)));
    Ok(fields)
}

/// Envoy's circuit breakers as a per-attempt bulkhead.
fn bulkhead(
    in_flight: &Sourced<u32>,
    pending: Option<&Sourced<u32>>,
    deadline: Option<(SimDuration, Origin)>,
) -> Field {
    let mut fields = vec![in_flight.field("max_concurrent_calls", ron::scalar(in_flight.value))];
    fields.push(match pending {
        Some(p) => p.field("queue_capacity", ron::scalar(p.value)),
        None => Field::plain("queue_capacity", ron::scalar(BULKHEAD_SIZE_MAX))
            .noted("http1MaxPendingRequests unset: Istio's 2^32-1, no bound; resim's largest"),
    });
    fields.push(match deadline {
        Some((d, origin)) => Field::from("max_wait_duration", ron::duration(d), origin),
        None => Field::plain(
            "max_wait_duration",
            ron::duration(SimDuration::from_secs(3600)),
        )
        .noted("no route timeout: a pending request waits as long as it takes; an hour here"),
    });
    Field::plain("", ron::named("Bulkhead", fields)).noted(
        "the connection pool is Envoy's circuit breakers: limits on what is in flight from one sidecar, not a resilience4j breaker; its overflow is never retried (the retry's retry_on_local_rejection: false)",
    )
}

/// A duration with where it came from.
type Timed = (SimDuration, Origin);

/// Istio's default `retryOn`.
const RETRY_ON_DEFAULT: &str =
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";

/// `retries` (or Istio's default, said to come from `default_at`) as a `Retry` layer, and its
/// `perTryTimeout`.
fn retry(
    retries: Option<&Owned>,
    default_at: &Origin,
    limits: &Limits,
) -> Result<(Option<Field>, Option<Timed>), ImportError> {
    let Some(n) = retries else {
        let mut fields = vec![
            Field::from("max_retries", ron::scalar(2), default_at.clone()).noted("Istio's default"),
        ];
        fields.push(backoff(None, default_at));
        fields.extend(
            conditions(RETRY_ON_DEFAULT, &[503], default_at, None)
                .noted_all("Istio's default retryOn, with 503"),
        );
        fields.push(no_overflow_retry(default_at.clone()));
        fields.extend(budget(limits));
        return Ok((Some(Field::plain("", ron::named("Retry", fields))), None));
    };
    let attempts = n.u32("attempts")?;
    if attempts.as_ref().is_some_and(|a| a.value == 0)
        || attempts.is_none() && n.value.as_object().is_some_and(|m| m.is_empty())
    {
        n.skip(
            "perTryTimeout",
            Skip::Simplification,
            "attempts is 0: Istio sets no retry policy, and no per-try timeout with it",
        );
        return Ok((None, None));
    }
    let count = match &attempts {
        Some(a) => Field::from("max_retries", ron::scalar(a.value), n.origin(&a.path)),
        None => Field::from(
            "max_retries",
            ron::scalar(2),
            n.origin(&child(&n.path, "attempts")),
        )
        .noted("Istio's default"),
    };
    let per_try = duration(n, "perTryTimeout")?.map(|t| (t.value, n.origin(&t.path)));
    let base = duration(n, "backoff")?.map(|b| (b.value, n.origin(&b.path)));
    let mut fields = vec![count, backoff(base, &n.origin(&n.path))];
    fields.extend(retry_on(n)?);
    fields.extend(budget(limits));
    n.skip(
        "retryRemoteLocalities",
        Skip::NoCounterpart,
        "resim's replicas have no localities",
    );
    n.skip(
        "retryIgnorePreviousHosts",
        Skip::Simplification,
        "the balancer picks each retry's replica afresh; it may pick the same one",
    );
    Ok((Some(Field::plain("", ron::named("Retry", fields))), per_try))
}

/// `retries.retryOn` (or Istio's default, with 503) as the retry's conditions, and the
/// overflow the sidecar never retries; `n` is `retries`.
fn retry_on(n: &Node) -> Result<Vec<Field>, ImportError> {
    let on = n.str("retryOn")?;
    let mut fields = match &on {
        Some(f) => conditions(&f.value, &[], &n.origin(&f.path), Some((n, &f.path))),
        None => conditions(
            RETRY_ON_DEFAULT,
            &[503],
            &n.origin(&child(&n.path, "retryOn")),
            None,
        )
        .noted_all("Istio's default retryOn, with 503"),
    };
    let on_at = match &on {
        Some(f) => f.path.clone(),
        None => child(&n.path, "retryOn"),
    };
    fields.push(no_overflow_retry(n.origin(&on_at)));
    Ok(fields)
}

/// The sidecar's Envoy never retries what its circuit breakers refused; `source` names the
/// retries' `retryOn`.
fn no_overflow_retry(source: Origin) -> Field {
    Field::from("retry_on_local_rejection", ron::scalar(false), source).noted(
        "the sidecar's Envoy never retries an overflow, a request the connectionPool limits refused",
    )
}

/// The traffic policy's `retryBudget` (Envoy's `retry_budget`, Istio's defaults 20% and 3)
/// as the retry's concurrency budget, or else `http.maxRetries` as one of no percentage.
fn budget(limits: &Limits) -> Option<Field> {
    if let Some(b) = &limits.budget {
        let (percent, min) = b.value;
        return Some(b.field(
            "budget",
            Ron::Scalar(format!(
                "Concurrency(budget_percent: {}, min_retry_concurrency: {min})",
                ron::float(percent).one_line()
            )),
        ));
    }
    limits.retries.as_ref().map(|m| {
        m.field(
            "budget",
            Ron::Scalar(format!(
                "Concurrency(budget_percent: 0.0, min_retry_concurrency: {})",
                m.value
            )),
        )
        .noted("Envoy's max_retries: retries in flight at once")
    })
}

/// Envoy's back-off: `base` (25ms by default, said to come from `at`) doubling, capped at ten
/// times it, fully jittered.
fn backoff(base: Option<(SimDuration, Origin)>, at: &Origin) -> Field {
    let (delay, source, note) = match base {
        Some((b, origin)) => (b, origin, None),
        None => (
            SimDuration::from_millis(25),
            at.clone(),
            Some("Envoy's default base interval, which Istio keeps"),
        ),
    };
    let initial = Field::from("delay_initial", ron::duration(delay), source.clone());
    let initial = match note {
        Some(n) => initial.noted(n),
        None => initial,
    };
    let max = Field::from(
        "delay_max",
        ron::duration(delay.saturating_mul(10)),
        source.clone(),
    )
    .noted("Envoy's default: 10 × the base interval");
    jittered_backoff(initial, max, &source)
}

/// Notes on a list of fields.
trait NotedAll {
    fn noted_all(self, note: &str) -> Vec<Field>;
}

impl NotedAll for Vec<Field> {
    fn noted_all(self, note: &str) -> Vec<Field> {
        self.into_iter().map(|f| f.noted(note)).collect()
    }
}

/// The retry conditions of Envoy's `retry_on` (Istio passes `retryOn` on, its numbers as
/// `retriable_status_codes`), and the gRPC ones, as the retry's fields. `file` is where the
/// conditions are written, to list the ones resim has no counterpart for.
fn conditions(
    text: &str,
    codes: &[u16],
    source: &Origin,
    file: Option<(&Node, &str)>,
) -> Vec<Field> {
    let mut statuses: Vec<u16> = codes.to_vec();
    let (mut timeout, mut connection, mut throttled, mut conflict) = (false, false, false, false);
    for c in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        match c {
            "5xx" => {
                statuses.extend(STATUS_5XX);
                (timeout, connection) = (true, true);
            }
            "gateway-error" => {
                statuses.extend([502, 503, 504]);
                timeout = true;
            }
            "reset" => (timeout, connection) = (true, true),
            "connect-failure" | "refused-stream" | "reset-before-request" => connection = true,
            "retriable-4xx" => conflict = true,
            "envoy-ratelimited" | "resource-exhausted" => throttled = true,
            "unavailable" => statuses.push(503),
            "internal" => statuses.push(500),
            "deadline-exceeded" => statuses.push(504),
            // Istio adds it when retryOn holds status codes; the codes are what it names.
            "retriable-status-codes" => {}
            code if code.parse::<u16>().is_ok() => match code.parse::<u16>().unwrap_or(0) {
                c @ 500..=599 => statuses.push(c),
                429 => throttled = true,
                409 => conflict = true,
                other => {
                    if let Some((n, path)) = file {
                        n.ledger.skip(
                            &format!("{path}:{other}"),
                            Skip::OutOfRange,
                            format!("resim retries 5xx statuses, 429 and 409, not {other}"),
                        );
                    }
                }
            },
            other => {
                if let Some((n, path)) = file {
                    n.ledger.skip(
                        &format!("{path}:{other}"),
                        Skip::NoCounterpart,
                        format!(
                            "the retry condition {other:?} has no counterpart in resim's outcomes"
                        ),
                    );
                }
            }
        }
    }
    let field = |name: &str, value: Ron| Field::from(name, value, source.clone());
    vec![
        field("retry_on_status", ron::statuses(&statuses)),
        field("retry_on_timeout", ron::scalar(timeout)),
        field("retry_on_connection_error", ron::scalar(connection)),
        field("retry_on_throttled", ron::scalar(throttled)),
        field("retry_on_conflict", ron::scalar(conflict)),
    ]
}
