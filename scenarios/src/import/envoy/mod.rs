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

mod route;

use super::ledger::{Ledger, Naming, Skip};
use super::model::{Host, Kind, System, Upstream, merge};
use super::node::{Found, Node, Owned, entries};
use super::ron::{self, Field, Ron};
use super::tree::{Doc, child, item_name};
use super::{ImportError, SourceFormat};
use route::{Limits, call_fields};
pub(super) use route::{STATUS_5XX, jittered_backoff};
use serde_json::Value;
use sim_core::SimDuration;

/// How comments name Envoy's paths.
const NAMING: Naming = Naming {
    format: SourceFormat::Envoy,
    label,
};

/// Where an imported value came from, as its comment says it: the path from the innermost
/// cluster, virtual host or HTTP filter (what a reader finds in the file), else whole.
fn label(path: &str) -> String {
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
    path[start..].to_string()
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
pub(super) struct Route<'a> {
    pub(super) route: Owned<'a>,
    pub(super) host: Owned<'a>,
}

/// The system of Envoy configurations: each one's clusters, merged in the order of the files.
pub fn read(docs: &[Doc]) -> Result<System, ImportError> {
    let systems = docs.iter().map(read_one).collect::<Result<Vec<_>, _>>()?;
    Ok(merge::merge(systems))
}

/// The system of one Envoy configuration: one upstream per cluster.
fn read_one(doc: &Doc) -> Result<System, ImportError> {
    let ledger = Ledger::new(NAMING);
    let mut found = Parts::default();
    walk(doc, &ledger, &doc.root, String::new(), &mut found)?;
    let mut upstreams = Vec::new();
    for c in &found.clusters {
        upstreams.push(cluster(c, &found)?);
    }
    let skipped = ledger.not_imported(doc, &|p| {
        known_reason(p).unwrap_or_else(super::ledger::no_counterpart)
    });
    Ok(System::of(SourceFormat::Envoy, upstreams, skipped))
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
fn cluster(c: &Owned, found: &Parts) -> Result<(Upstream, Vec<Field>), ImportError> {
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
    let upstream = Upstream {
        host: Host::plain(&name),
        kind: Kind::Cluster,
        origin: c.origin(&c.path),
        service,
    };
    Ok((upstream, call))
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
        n.origin(&path),
    )))
}

/// `outlier_detection` as the service's `outlier`.
fn outlier(o: &Owned) -> Result<Field, ImportError> {
    let n = o.node();
    let dflt = |k: &str| n.origin(&child(&o.path, k));
    let consecutive = match n.u32("consecutive_5xx")? {
        Some(f) => Field::from(
            "consecutive_failures",
            ron::scalar(f.value),
            n.origin(&f.path),
        ),
        None => Field::from(
            "consecutive_failures",
            ron::scalar(5),
            dflt("consecutive_5xx"),
        )
        .noted("Envoy's default"),
    };
    let ejection = match n.duration("base_ejection_time")? {
        Some(f) => Field::from("ejection", ron::duration(f.value), n.origin(&f.path)),
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
            n.origin(&f.path),
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
        n.error(
            &h.path,
            format!("an Envoy health check needs `{k}` (core.v3.HealthCheck.{k} is required)"),
        )
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
                n.origin(&interval.path),
            ),
            Field::from(
                "timeout",
                ron::duration(timeout.value),
                n.origin(&timeout.path),
            ),
            Field::from(
                "unhealthy_threshold",
                ron::scalar(unhealthy.value),
                n.origin(&unhealthy.path),
            ),
            Field::from(
                "healthy_threshold",
                ron::scalar(healthy.value),
                n.origin(&healthy.path),
            ),
        ]),
    ))
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
    push(
        &gn,
        &mut fields,
        f64s,
        "sample_aggregate_percentile",
        ron::float,
    );
    if let Some(c) = gn.object("concurrency_limit_params")? {
        let c = c.node();
        push(
            &gn,
            &mut fields,
            c.u32("max_concurrency_limit")?,
            "max_concurrency_limit",
            ron::scalar,
        );
        let interval = c.duration("concurrency_update_interval")?;
        push(
            &gn,
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
            gn,
            fields,
            m.duration("interval")?,
            "min_rtt_calc_interval",
            ron::duration,
        );
        push(
            gn,
            fields,
            m.u32("request_count")?,
            "min_rtt_calc_request_count",
            ron::scalar,
        );
        push(
            gn,
            fields,
            m.f64("jitter")?,
            "min_rtt_calc_jitter_percent",
            ron::float,
        );
        push(
            gn,
            fields,
            m.u32("min_concurrency")?,
            "min_concurrency",
            ron::scalar,
        );
        push(
            gn,
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

/// A field the file gives (read at `n`), under resim's `name`.
fn push<T>(
    n: &Node,
    fields: &mut Vec<Field>,
    found: Option<Found<T>>,
    name: &str,
    write: fn(T) -> Ron,
) {
    if let Some(f) = found {
        fields.push(Field::from(name, write(f.value), n.origin(&f.path)));
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
