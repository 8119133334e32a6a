//! Envoy (v3 API) into the scenario format: each cluster becomes the service it names and the
//! call to it, with the policy of the routes that send to it.
//!
//! What is read, wherever it is in the file (a bootstrap's `static_resources`, a list of
//! `clusters`, xDS `resources`, a `RouteConfiguration`): every list called `clusters`, every
//! `virtual_hosts` (their routes, matched to a cluster by `route.cluster`) and every
//! `http_filters` (the adaptive concurrency and local rate limit filters).
//!
//! # Decisions
//!
//! Semantics, not names. A cluster's circuit breakers are limits on what is in flight toward
//! it from one Envoy: `max_requests` (and, over HTTP/1.1, `max_connections`, one request per
//! connection) is a per-attempt bulkhead, `max_pending_requests` its queue, and `max_retries`
//! (or `retry_budget`) a concurrency retry budget (`budget_percent` of the requests in flight,
//! at least `min_retry_concurrency`). A request the circuit breakers refuse is an overflow,
//! which Envoy's router never retries: the imported retry says `retry_on_local_rejection:
//! false`. They apply with Envoy's defaults (1024, 1024, 1024, 3)
//! when the file does not set them, as they do in Envoy. A route's `timeout` spans every retry
//! (the call's `deadline`, 15s by default, `0s` for none); `per_try_timeout` is one attempt's
//! (the call's `timeout`). The retry backoff is Envoy's fully jittered exponential: the n-th
//! retry waits uniform on `[0, base · 2^(n-1))`, capped at `max_interval` (10 × base by
//! default), which is resim's `Exponential(multiplier: 2)` with `Full` jitter. Hedging on a
//! per-try timeout lets the timed-out attempt run on while the next races it: a hedge after
//! `per_try_timeout`, and no per-attempt timeout. Outlier detection's `consecutive_5xx` is
//! resim's `outlier` (failures and timeouts in a row eject a replica for the ejection time).
//! The adaptive concurrency and local rate limit filters guard the service whose sidecar they
//! sit in: admission of the cluster's service, one per replica for the concurrency limit.

use super::ron::{self, Field, Ron};
use super::tree::{Doc, Found, Ledger, Node, Owned, Skip, child, item_name};
use super::{ImportError, Plan, SourceFormat, Upstream};
use serde_json::Value;
use sim_core::SimDuration;

/// Where an imported value came from, as its comment says it: the path from the innermost
/// cluster, virtual host or HTTP filter (what a reader finds in the file), else whole.
fn src(path: &str) -> String {
    let start = ["clusters[", "virtual_hosts[", "http_filters[", "resources["]
        .iter()
        .filter_map(|m| {
            path.match_indices(m)
                .filter(|(i, _)| *i == 0 || path.as_bytes()[i - 1] == b'.')
                .map(|(i, _)| i)
                .last()
        })
        .max()
        .unwrap_or(0);
    format!("envoy: {}", &path[start..])
}

/// What a walk of the file found.
#[derive(Default)]
struct Parts<'a> {
    clusters: Vec<Owned<'a>>,
    /// Routes with the retry and hedge policies of their virtual host.
    routes: Vec<Route<'a>>,
    filters: Vec<Owned<'a>>,
}

#[derive(Clone)]
struct Route<'a> {
    route: Owned<'a>,
    host: Owned<'a>,
}

/// The plan of an Envoy configuration: one upstream per cluster.
pub fn plan(doc: &Doc) -> Result<Plan, ImportError> {
    let ledger = Ledger::default();
    let mut found = Parts::default();
    walk(doc, &ledger, &doc.root, String::new(), &mut found)?;
    let mut upstreams = Vec::new();
    for c in &found.clusters {
        upstreams.push(cluster(c, &found)?);
    }
    Ok(Plan::of(
        SourceFormat::Envoy,
        upstreams,
        (doc, &ledger),
        src,
        known_reason,
    ))
}

/// The entries of the list `items` at `path`, named as [`item_name`] names them.
fn entries<'a>(doc: &'a Doc, ledger: &'a Ledger, items: &'a [Value], path: &str) -> Vec<Owned<'a>> {
    let name = |(i, v): (usize, &'a Value)| {
        Owned::at(doc, ledger, v, format!("{path}[{}]", item_name(v, i)))
    };
    items.iter().enumerate().map(name).collect()
}

/// Finds the clusters, routes and HTTP filters anywhere in the file.
fn walk<'a>(
    doc: &'a Doc,
    ledger: &'a Ledger,
    value: &'a Value,
    path: String,
    found: &mut Parts<'a>,
) -> Result<(), ImportError> {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let here = child(&path, k);
                let items = v.as_array();
                match (k.as_str(), items) {
                    ("clusters", Some(items)) => {
                        found.clusters.extend(entries(doc, ledger, items, &here));
                    }
                    ("virtual_hosts", Some(hosts)) => {
                        for host in entries(doc, ledger, hosts, &here) {
                            for route in host.node().list("routes")? {
                                let host = host.clone();
                                found.routes.push(Route { route, host });
                            }
                        }
                    }
                    ("http_filters", Some(filters)) => {
                        found.filters.extend(entries(doc, ledger, filters, &here));
                    }
                    ("resources", Some(items)) => {
                        for (i, r) in items.iter().enumerate() {
                            let p = format!("{here}[{}]", item_name(r, i));
                            let is_cluster = r
                                .get("@type")
                                .and_then(Value::as_str)
                                .is_some_and(|t| t.ends_with(".Cluster"));
                            if is_cluster {
                                ledger.take(&child(&p, "@type"));
                                found.clusters.push(Owned::at(doc, ledger, r, p));
                            } else {
                                walk(doc, ledger, r, p, found)?;
                            }
                        }
                    }
                    _ => walk(doc, ledger, v, here, found)?,
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(
                    doc,
                    ledger,
                    v,
                    format!("{path}[{}]", item_name(v, i)),
                    found,
                )?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// One cluster: its service settings, and the call to it with its routes' policy.
fn cluster(c: &Owned, found: &Parts) -> Result<Upstream, ImportError> {
    let n = c.node();
    let name = n
        .str("name")?
        .ok_or_else(|| n.error(&c.path, "a cluster needs a `name` (Cluster.name)"))?
        .value;
    let mut service = Vec::new();
    if let Some(b) = balancer(&n)? {
        service.push(b);
    }
    if let Some(o) = n.object("outlier_detection")? {
        service.push(outlier(&o)?);
    }
    let checks = n.list("health_checks")?;
    if let Some(h) = checks.first() {
        service.push(health_check(h)?);
    }
    for extra in checks.iter().skip(1) {
        c.node().ledger.skip(
            &extra.path,
            Skip::Simplification,
            "resim probes a service with one health check; the first is imported",
        );
    }
    n.skip(
        "connect_timeout",
        Skip::Simplification,
        "resim opens connections only for a call's `pool` (its `connect_time` is how long an open takes); without one, an unreachable replica fails the attempt at once",
    );
    let http2 = n.raw("http2_protocol_options").is_some()
        || n.raw("typed_extension_protocol_options")
            .is_some_and(|v| v.to_string().contains("http2_protocol_options"));
    let limits = Limits::read(&n, http2)?;
    let routes: Vec<&Route> = found
        .routes
        .iter()
        .filter(|r| route_cluster(r) == Some(name.as_str()))
        .collect();
    for r in routes.iter().skip(1) {
        r.route.node().ledger.skip(
            &r.route.path,
            Skip::Simplification,
            "a call has one stack: the first route to the cluster is imported (give each route a call of its own with --into)",
        );
    }
    let call = call_fields(routes.first().copied(), &limits)?;
    let retried = call.iter().any(|f| f.value.one_line().contains("Retry("));
    if let (false, Some(p)) = (retried, &limits.budget.path) {
        n.ledger.skip(p, Skip::Simplification, "no route to the cluster has a retry policy: Envoy retries nothing, so its retry limit never acts");
    }
    service.extend(admission(&found.filters, &routes)?);
    Ok(Upstream {
        source: src(&c.path),
        name,
        call,
        service,
    })
}

/// The filters that guard `routes` (a filter guards the routes of its own connection
/// manager) as the service's `admission`, if any.
fn admission(filters: &[Owned], routes: &[&Route]) -> Result<Option<Field>, ImportError> {
    let mut admission = Vec::new();
    for f in filters {
        let manager = f.path.rsplit_once(".http_filters[").map_or("", |(m, _)| m);
        let routed = routes
            .iter()
            .any(|r| r.route.path.starts_with(&format!("{manager}.")));
        if routed && let Some(a) = filter(f)? {
            admission.push(a);
        }
    }
    Ok((!admission.is_empty()).then(|| Field::plain("admission", Ron::List(admission))))
}

fn route_cluster<'a>(r: &'a Route) -> Option<&'a str> {
    r.route.value.get("route")?.get("cluster")?.as_str()
}

/// `lb_policy` as a balancer.
fn balancer(n: &Node) -> Result<Option<Field>, ImportError> {
    // Without one, Envoy balances round robin, as resim does: nothing to write.
    let Some(Found { value, path }) = n.str("lb_policy")? else {
        return Ok(None);
    };
    let picked = match value.as_str() {
        "ROUND_ROBIN" => "RoundRobin",
        "RANDOM" => "Random",
        "LEAST_REQUEST" => {
            let choices = match n.object("least_request_lb_config")? {
                Some(l) => l.node().u32("choice_count")?,
                None => None,
            };
            match choices {
                None => "PowerOfTwo",
                Some(c) if c.value == 2 => "PowerOfTwo",
                Some(c) => {
                    n.ledger.skip(
                        &c.path,
                        Skip::OutOfRange,
                        format!("resim's balancers compare 2 replicas (PowerOfTwo) or all of them (LeastOutstanding), not {}; PowerOfTwo is written", c.value),
                    );
                    "PowerOfTwo"
                }
            }
        }
        other => {
            n.ledger.skip(
                &path,
                Skip::NoCounterpart,
                format!("{other}: resim's balancers are round robin, random, power of two choices and least outstanding; the service keeps its balancer"),
            );
            return Ok(None);
        }
    };
    Ok(Some(Field::from(
        "balancer",
        ron::scalar(picked),
        src(&path),
    )))
}

/// `outlier_detection` as the service's `outlier`.
fn outlier(o: &Owned) -> Result<Field, ImportError> {
    let n = o.node();
    let dflt = |k: &str| src(&child(&o.path, k));
    let consecutive = match n.u32("consecutive_5xx")? {
        Some(f) => Field::from("consecutive_failures", ron::scalar(f.value), src(&f.path)),
        None => Field::from(
            "consecutive_failures",
            ron::scalar(5),
            dflt("consecutive_5xx"),
        )
        .noted("Envoy's default"),
    };
    let ejection = match n.duration("base_ejection_time")? {
        Some(f) => Field::from("ejection", ron::duration(f.value), src(&f.path)),
        None => Field::from(
            "ejection",
            ron::duration(SimDuration::from_secs(30)),
            dflt("base_ejection_time"),
        )
        .noted("Envoy's default"),
    };
    let percent = match n.u32("max_ejection_percent")? {
        Some(f) => Field::from(
            "max_ejection_percent",
            ron::float(f64::from(f.value)),
            src(&f.path),
        ),
        None => Field::from(
            "max_ejection_percent",
            ron::float(10.0),
            dflt("max_ejection_percent"),
        )
        .noted("Envoy's default"),
    };
    if let Some(e) = n.u32("enforcing_consecutive_5xx")?
        && e.value != 100
    {
        n.ledger.skip(
            &e.path,
            Skip::OutOfRange,
            format!("resim enforces every ejection (100%), not {}%", e.value),
        );
    }
    n.skip("interval", Skip::Simplification, "resim ejects at the failure that completes the run of consecutive failures and returns the host when its ejection time is over; Envoy's sweep interval is for the success-rate and failure-percentage checks, which resim does not have");
    n.skip("max_ejection_time", Skip::Simplification, "resim ejects for the same time every time; Envoy multiplies base_ejection_time by the times a host was ejected, up to max_ejection_time");
    n.skip("split_external_local_origin_errors", Skip::Simplification, "resim counts every failure and timeout toward consecutive failures, as Envoy does when this is false");
    Ok(Field::plain(
        "outlier",
        ron::fields(vec![consecutive, ejection, percent]),
    ))
}

/// The first of `health_checks` as the service's `health_check`.
fn health_check(h: &Owned) -> Result<Field, ImportError> {
    let n = h.node();
    let need = |k: &str| {
        ImportError::new(format!(
            "{}: {}: an Envoy health check needs `{k}` (core.v3.HealthCheck.{k} is required)",
            n.doc.file, h.path
        ))
    };
    let interval = n.duration("interval")?.ok_or_else(|| need("interval"))?;
    let timeout = n.duration("timeout")?.ok_or_else(|| need("timeout"))?;
    let unhealthy = n
        .u32("unhealthy_threshold")?
        .ok_or_else(|| need("unhealthy_threshold"))?;
    let healthy = n
        .u32("healthy_threshold")?
        .ok_or_else(|| need("healthy_threshold"))?;
    for probe in ["http_health_check", "grpc_health_check", "tcp_health_check"] {
        n.skip(probe, Skip::Simplification, "a resim probe fails when the replica is down, its queue is full, or its oldest queued request has waited longer than the probe's timeout; what it asks for is not modelled");
    }
    Ok(Field::plain(
        "health_check",
        ron::fields(vec![
            Field::from(
                "interval",
                ron::duration(interval.value),
                src(&interval.path),
            ),
            Field::from("timeout", ron::duration(timeout.value), src(&timeout.path)),
            Field::from(
                "unhealthy_threshold",
                ron::scalar(unhealthy.value),
                src(&unhealthy.path),
            ),
            Field::from(
                "healthy_threshold",
                ron::scalar(healthy.value),
                src(&healthy.path),
            ),
        ]),
    ))
}

/// A value with the path it came from (or the default's path and a note).
#[derive(Clone)]
struct Sourced<T> {
    value: T,
    source: String,
    note: Option<&'static str>,
    /// The field's path when the file has it.
    path: Option<String>,
}

impl<T> Sourced<T> {
    /// A value the file gives.
    fn read(f: Found<T>) -> Sourced<T> {
        Sourced {
            value: f.value,
            source: src(&f.path),
            note: None,
            path: Some(f.path),
        }
    }

    /// A default for a field at `path` the file leaves out.
    fn absent(value: T, path: &str, note: &'static str) -> Sourced<T> {
        Sourced {
            value,
            source: src(path),
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
struct Limits {
    /// Attempts in flight: `max_requests`, and `max_connections` over HTTP/1.1.
    in_flight: Sourced<u32>,
    /// Attempts waiting for a connection (HTTP/1.1): `max_pending_requests`.
    pending: Option<Sourced<u32>>,
    /// `(budget_percent, min_retry_concurrency)`.
    budget: Sourced<(f64, u32)>,
}

impl Limits {
    fn read(n: &Node, http2: bool) -> Result<Limits, ImportError> {
        let default = Self::default_thresholds(n)?;
        let base = child(&n.path, "circuit_breakers.thresholds[DEFAULT]");
        let at = default.as_ref().map_or(base.clone(), |t| t.path.clone());
        let read = |k: &str, dflt: u32| -> Result<Sourced<u32>, ImportError> {
            let found = match &default {
                Some(t) => t.node().u32(k)?,
                None => None,
            };
            Ok(match found {
                Some(f) => Sourced::read(f),
                None => Sourced::absent(dflt, &child(&at, k), "Envoy's default"),
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
            source: src(&b.path),
            note: (percent.is_none() || min.is_none())
                .then_some("Envoy's defaults for what it leaves out: 20%, 3"),
            path: Some(b.path.clone()),
        })
    }
}

/// The call's `deadline`, `timeout` and `stack` from the route (if any) and the limits.
fn call_fields(route: Option<&Route>, limits: &Limits) -> Result<Vec<Field>, ImportError> {
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
                source: src(&t.path),
                note: None,
                path: None,
            }),
            None => Some(Sourced {
                value: SimDuration::from_secs(15),
                source: src(&child(&action.path, "timeout")),
                note: Some("Envoy's default"),
                path: None,
            }),
        };
        if let Some(d) = &deadline {
            fields.push(d.field("deadline", ron::duration(d.value)));
        }
        n.skip("match", Skip::Simplification, "resim's calls carry no paths or headers; the route's policy is imported for the cluster it sends to");
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
            fields.push(Field::from("timeout", ron::duration(t.value), src(&t.path)));
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
pub(super) const STATUS_5XX: [u16; 11] = [500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511];

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
        Some(f) => Field::from("max_retries", ron::scalar(f.value), src(&f.path)),
        None => Field::from(
            "max_retries",
            ron::scalar(1),
            src(&child(&p.path, "num_retries")),
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
            Some(m) => Field::from("retry_after_max", ron::duration(m.value), src(&m.path)),
            None => Field::from(
                "retry_after_max",
                ron::duration(SimDuration::from_secs(300)),
                src(&child(&r.path, "max_interval")),
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
                Some(m) => Sourced::read(m),
                None => Sourced::absent(
                    base.value.saturating_mul(10),
                    &child(&b.path, "max_interval"),
                    TEN_TIMES,
                ),
            };
            (Sourced::read(base), max)
        }
        None => (
            Sourced::absent(
                SimDuration::from_millis(25),
                &child(&at, "base_interval"),
                "Envoy's default",
            ),
            Sourced::absent(
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
        &src(&at),
    ))
}

/// Envoy's back-off as a retry's `backoff`: from `initial` doubling up to `max`, fully
/// jittered; `source` names where the policy is (Istio's importer writes the same).
pub(super) fn jittered_backoff(initial: Field, max: Field, source: &str) -> Field {
    Field::plain(
        "backoff",
        ron::fields(vec![
            Field::plain(
                "strategy",
                ron::named(
                    "Exponential",
                    vec![
                        initial,
                        Field::from("multiplier", ron::float(2.0), source.to_string())
                            .noted("Envoy's back-off doubles with each retry"),
                        max,
                    ],
                ),
            ),
            Field::from("jitter", ron::scalar("Full"), source.to_string())
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
                src(&f.path),
            ),
            None => (Vec::new(), src(&child(&n.path, "retry_on"))),
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
            Field::from("delay", Ron::Scalar(format!("Fixed(delay: \"{}\")", per_try.value)), format!("{} ({})", src(&on.path), per_try.path)),
            Field::from("max_hedged_attempts", ron::scalar(retries.clamp(1, 10)), src(&on.path))
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

/// The adaptive concurrency filter as the service's admission, when it sits before the
/// cluster (every filter applies to every route of its listener).
fn filter(f: &Owned) -> Result<Option<Field>, ImportError> {
    let n = f.node();
    let name = n.raw("name").and_then(Value::as_str).unwrap_or_default();
    if !name.contains("adaptive_concurrency") {
        return Ok(None);
    }
    n.take("name");
    let Some(config) = n.object("typed_config")? else {
        return Ok(None);
    };
    let cn = config.node();
    cn.take("@type");
    let Some(g) = cn.object("gradient_controller_config")? else {
        return Ok(None);
    };
    let gn = g.node();
    let mut fields = vec![Field::plain("kind", ron::string("envoy_gradient"))];
    let f64s = gn.f64("sample_aggregate_percentile")?;
    push(&mut fields, f64s, "sample_aggregate_percentile", ron::float);
    if let Some(c) = gn.object("concurrency_limit_params")? {
        let c = c.node();
        push(
            &mut fields,
            c.u32("max_concurrency_limit")?,
            "max_concurrency_limit",
            ron::scalar,
        );
        let interval = c.duration("concurrency_update_interval")?;
        push(
            &mut fields,
            interval,
            "concurrency_update_interval",
            ron::duration,
        );
    }
    min_rtt(&gn, &mut fields)?;
    cn.skip(
        "enabled",
        Skip::Simplification,
        "runtime switches: the filter is imported as on",
    );
    Ok(Some(
        Field::plain("", ron::named("Concurrency", fields))
            .noted("one limiter per replica, as one per sidecar"),
    ))
}

/// The gradient controller's `min_rtt_calc_params`, under resim's names.
fn min_rtt(gn: &Node, fields: &mut Vec<Field>) -> Result<(), ImportError> {
    if let Some(m) = gn.object("min_rtt_calc_params")? {
        let m = m.node();
        push(
            fields,
            m.duration("interval")?,
            "min_rtt_calc_interval",
            ron::duration,
        );
        push(
            fields,
            m.u32("request_count")?,
            "min_rtt_calc_request_count",
            ron::scalar,
        );
        push(
            fields,
            m.f64("jitter")?,
            "min_rtt_calc_jitter_percent",
            ron::float,
        );
        push(
            fields,
            m.u32("min_concurrency")?,
            "min_concurrency",
            ron::scalar,
        );
        push(
            fields,
            m.f64("buffer")?,
            "min_rtt_buffer_percent",
            ron::float,
        );
        let why = "resim measures minRTT; a fixed minRTT is not modelled";
        m.skip("fixed_value", Skip::NoCounterpart, why);
    }
    Ok(())
}

/// A field the file gives, under resim's `name`.
fn push<T>(fields: &mut Vec<Field>, found: Option<Found<T>>, name: &str, write: fn(T) -> Ron) {
    if let Some(f) = found {
        fields.push(Field::from(name, write(f.value), src(&f.path)));
    }
}

/// Why a field nothing read is left out, for fields whose reason is known.
fn known_reason(path: &str) -> Option<(Skip, String)> {
    let last = path.rsplit('.').next().unwrap_or(path);
    let last = last.split('[').next().unwrap_or(last);
    let reason = match last {
        "load_assignment" | "hosts" => {
            "resim's service has a number of `replicas`, not endpoints: set it"
        }
        "type" | "dns_lookup_family" | "dns_refresh_rate" | "respect_dns_ttl" => {
            "service discovery: resim's replicas are known from the start"
        }
        "transport_socket" | "upstream_http_protocol_options" | "common_http_protocol_options" => {
            "the wire protocol and TLS: resim's network is latency and loss"
        }
        "address" | "listener_filters" | "admin" | "stat_prefix" | "codec_type" | "access_log" => {
            "the proxy's own setup, not a resilience setting"
        }
        _ => return None,
    };
    Some((Skip::NoCounterpart, reason.to_string()))
}
