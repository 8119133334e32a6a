//! Envoy (v3 API) into the neutral model: each cluster an upstream, and each route that sends
//! to it a call of the service whose Envoy it is (`node.cluster`, else the configuration's own
//! service), with the route's policy. The files given are read together: a bootstrap's
//! routes may send to clusters of another file.
//!
//! | module | what |
//! |---|---|
//! | `route` | a route's timeout, retry policy and hedging, and the cluster's circuit breakers, as a call |
//! | `filters` | the HTTP filters: adaptive concurrency as admission (off when its runtime flag's default is), the others listed |
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
//! The adaptive concurrency filter guards the service whose sidecar it sits in: admission of
//! the cluster's service, one per replica. A filter switched off by its runtime flag's default
//! (`enabled.default_value: false`, `filter_enabled` at 0%) is imported as off: listed, not
//! written.

mod filters;
mod route;

use super::ledger::{Ledger, Naming, Skip};
use super::model::{Host, Kind, System, Upstream};
use super::node::{Found, Node, Owned, entries};
use super::ron::{self, Field};
use super::tree::{self, Doc, child, item_name, words};
use super::{ImportError, SourceFormat};
use filters::{admission, other_filters};
use route::{Limits, call_fields};
pub(super) use route::{STATUS_5XX, jittered_backoff};
use serde_json::Value;
use sim_core::SimDuration;

/// How comments name Envoy's paths.
const NAMING: Naming = Naming {
    format: SourceFormat::Envoy,
    label,
    fold_case: None,
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

/// What a walk of the files found.
#[derive(Default)]
struct Parts<'a> {
    clusters: Vec<Owned<'a>>,
    /// Routes with the retry and hedge policies of their virtual host.
    routes: Vec<Route<'a>>,
    filters: Vec<Owned<'a>>,
}

/// One route, with its virtual host and the service whose Envoy has it.
#[derive(Clone)]
pub(super) struct Route<'a> {
    pub(super) route: Owned<'a>,
    pub(super) host: Owned<'a>,
    /// The Envoy's `node.cluster`: the service it fronts, which makes the calls.
    caller: Option<String>,
}

/// The system of Envoy configurations, read together: a listener's routes in one file may
/// send to clusters of another (a bootstrap and its CDS and RDS files).
pub fn read(docs: &[Doc]) -> Result<System, ImportError> {
    let ledgers: Vec<Ledger> = docs.iter().map(|_| Ledger::new(NAMING)).collect();
    let mut found = Parts::default();
    for (doc, ledger) in docs.iter().zip(&ledgers) {
        let routes = found.routes.len();
        walk(doc, ledger, &doc.root, String::new(), &mut found)?;
        let caller = caller(&Node::root(doc, ledger))?;
        for r in &mut found.routes[routes..] {
            r.caller.clone_from(&caller);
        }
    }
    let mut system = System {
        formats: vec![SourceFormat::Envoy],
        ..System::default()
    };
    let mut seen: Vec<(String, &Owned)> = Vec::new();
    for c in &found.clusters {
        let name = c
            .str("name")?
            .ok_or_else(|| c.error(&c.path, "a cluster needs a `name` (Cluster.name)"))?
            .value;
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            c.ledger.skip(&c.path, Skip::Conflict, format!("the cluster {name:?} is also defined at {}, which comes first and is imported; Envoy refuses two clusters of one name", first.doc.place(&first.path)));
            continue;
        }
        seen.push((name.clone(), c));
        cluster(c, &name, &found, &mut system)?;
    }
    other_filters(&found.filters)?;
    for (doc, ledger) in docs.iter().zip(&ledgers) {
        system.skipped.extend(ledger.not_imported(doc, &reason));
    }
    Ok(system)
}

/// The service whose Envoy a bootstrap is (`node.cluster`), which makes its routes' calls.
fn caller(root: &Node) -> Result<Option<String>, ImportError> {
    let Some(node) = root.object("node")? else {
        return Ok(None);
    };
    node.skip(
        "id",
        Skip::NoCounterpart,
        "the Envoy's own identity: its calls are its service's (`node.cluster`)",
    );
    node.skip(
        "metadata",
        Skip::NoCounterpart,
        "the Envoy's own identity: its calls are its service's (`node.cluster`)",
    );
    node.skip(
        "locality",
        Skip::NoCounterpart,
        "resim's replicas have no localities",
    );
    Ok(node.str("cluster")?.map(|c| c.value))
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
                                found.routes.push(Route {
                                    route,
                                    host,
                                    caller: None,
                                });
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

/// One cluster `name`: its service settings, and a call to it for each route that sends to
/// it (one without a route's policy when none does), into `system`.
fn cluster(c: &Owned, name: &str, found: &Parts, system: &mut System) -> Result<(), ImportError> {
    let n = c.node();
    let mut service = service_settings(c)?;
    let http2 = n.raw("http2_protocol_options").is_some()
        || n.raw("typed_extension_protocol_options")
            .is_some_and(|v| v.to_string().contains("http2_protocol_options"));
    let limits = Limits::read(&n, http2)?;
    let routes: Vec<&Route> = found
        .routes
        .iter()
        .filter(|r| route_cluster(r) == Some(name))
        .collect();
    let upstream = system.upstreams.len();
    let mut retried = false;
    let mut calls = Vec::new();
    for r in &routes {
        let call = call_fields(Some(r), &limits)?;
        retried |= call.iter().any(|f| f.value.one_line().contains("Retry("));
        calls.push(super::model::Route {
            caller: r.caller.clone(),
            upstream,
            matches: route_match(r),
            origin: r.route.origin(&r.route.path),
            destination: None,
            call,
        });
    }
    if routes.is_empty() {
        calls.push(super::model::Route {
            caller: None,
            upstream,
            matches: None,
            origin: c.origin(&c.path),
            destination: None,
            call: call_fields(None, &limits)?,
        });
    }
    if let (false, Some(p)) = (retried, &limits.budget.path) {
        n.ledger.skip(p, Skip::Simplification, "no route to the cluster has a retry policy: Envoy retries nothing, so its retry limit never acts");
    }
    service.extend(admission(&found.filters, &routes)?);
    system.upstreams.push(Upstream {
        host: Host::plain(name),
        kind: Kind::Cluster,
        origin: c.origin(&c.path),
        service,
    });
    system.routes.extend(calls);
    Ok(())
}

/// A cluster's settings as its service's: balancer, outlier detection, the first health
/// check.
fn service_settings(c: &Owned) -> Result<Vec<Field>, ImportError> {
    let n = c.node();
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
        c.ledger.skip(
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
    Ok(service)
}

/// What a route matches, when it matches less than every request (a prefix `/`).
fn route_match(r: &Route) -> Option<String> {
    let m = r.route.value.get("match")?.as_object()?;
    let all = m.len() == 1 && m.get("prefix").and_then(Value::as_str) == Some("/");
    (!all).then(|| {
        m.iter()
            .map(|(k, v)| format!("{k} {}", words(v)))
            .collect::<Vec<_>>()
            .join(" and ")
    })
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

/// Why a field nothing read is left out, for fields whose reason is known.
fn known_reason(path: &str) -> Option<(Skip, String)> {
    let last = last_segment(path);
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
        "address"
        | "listener_filters"
        | "admin"
        | "stat_prefix"
        | "codec_type"
        | "access_log"
        | "name"
        | "per_connection_buffer_limit_bytes"
        | "use_remote_address"
        | "generate_request_id"
        | "server_name" => "the proxy's own setup, not a resilience setting",
        "@type" => "the message's type, which tells the import what it reads",
        "domains" => "which hosts the virtual host answers for: a resim call names its service",
        "layered_runtime" | "runtime" => {
            "runtime layers: the import takes each runtime switch at its default value"
        }
        "filter_chain_match" | "socket_options" | "tcp_keepalive" => {
            "how the proxy accepts connections, not a resilience setting"
        }
        _ => return None,
    };
    Some((Skip::NoCounterpart, reason.to_string()))
}

/// The last step of `path` (`name` of `a.b.name`, `http_filters` of `a.http_filters[x.y]`).
fn last_segment(path: &str) -> &str {
    let parent = tree::parent(path).unwrap_or("");
    let rest = path[parent.len()..].trim_start_matches('.');
    match rest.strip_prefix('[') {
        // A list entry: named by its list.
        Some(_) => last_segment(parent),
        None => rest,
    }
}

/// Why a field of an Envoy file nothing read is left out.
fn reason(path: &str) -> (Skip, String) {
    known_reason(path).unwrap_or_else(|| {
        (
            Skip::NoCounterpart,
            format!(
                "not a field of Envoy's v3 API that the import reads ({}): a setting resim does not model, a newer field, or a misspelling",
                last_segment(path)
            ),
        )
    })
}
