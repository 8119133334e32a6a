//! Istio (`networking.istio.io`) into the scenario format: each host a `DestinationRule` or a
//! `VirtualService` route names becomes the service of that name and the call to it.
//!
//! A file holds one object, several (a multi-document YAML file, `---` between them, as
//! `kubectl` files are) or a `kind: List` with `items`. Objects of other kinds are listed.
//!
//! | module | what |
//! |---|---|
//! | `policy` | a DestinationRule's traffic policy (and its subsets'): connection pool, outlier detection, load balancer, retry budget |
//! | `route` | a VirtualService's HTTP route as a call: timeout, retries and their conditions, the pool's limits as a bulkhead |
//!
//! # Decisions
//!
//! Istio is a front for Envoy: pilot turns a `DestinationRule` into an Envoy cluster and a
//! `VirtualService` route into an Envoy route, so each field maps to what its Envoy setting
//! maps to in [`super::envoy`]. A host is named by its first label (`reviews` for
//! `reviews.prod.svc.cluster.local`). The connection pool is the cluster's circuit breakers:
//! `tcp.maxConnections` (HTTP/1.1, one request per connection) and `http.http2MaxRequests`
//! bound the attempts in flight from one sidecar (a per-attempt `Bulkhead`, the lower of the
//! two), `http.http1MaxPendingRequests` is its pending queue, `http.maxRetries` the retries in
//! flight at once; Istio leaves every limit it is not given at 2^32-1, so an unset limit is no
//! limit. The traffic policy's `retryBudget` is the cluster's `retry_budget` (a `Concurrency`
//! budget: `percent` of the requests in flight, 20% by default, at least
//! `minRetryConcurrency`, 3 by default), and replaces `maxRetries` as it does in Envoy.
//! Outlier detection is Envoy's: `consecutive5xxErrors` (5 by default, 0 turns it off) or,
//! when lower, `consecutiveGatewayErrors` is resim's `outlier`. A route's `timeout`
//! spans every retry (the call's `deadline`; none by default, as Istio turns Envoy's 15s off),
//! `perTryTimeout` is one attempt's, `attempts` counts retries, with Envoy's back-off (25ms
//! base, or `retries.backoff`, fully jittered, capped at ten times the base). Without
//! `retries` Istio's default applies: 2 retries on `connect-failure,refused-stream,
//! unavailable,cancelled,retriable-status-codes` with 503; `attempts: 0` retries nothing.
//!
//! **Subsets.** A subset is a version of the host (a label selector over its endpoints); a
//! call here goes to one service, so the subset the first route to the host names is the one
//! imported: its `trafficPolicy` components (connection pool, outlier detection, load
//! balancer, retry budget) replace the host's whole components, as pilot merges them. Other
//! subsets are listed: their policies act only on traffic routed to them.

mod policy;
mod route;

use super::ledger::{Ledger, Naming, Skip};
use super::model::{Host, Kind, Origin, System, Upstream, merge};
use super::node::{Found, Node, Owned};
use super::ron::Field;
use super::tree::{Doc, child};
use super::{ImportError, SourceFormat};
use policy::{Limits, Policy};
use serde_json::Value;

/// The kinds imported.
const KINDS: [&str; 2] = ["DestinationRule", "VirtualService"];

/// How comments name Istio's paths: by the object (`DestinationRule[reviews].spec.host`).
const NAMING: Naming = Naming {
    format: SourceFormat::Istio,
    label: str::to_string,
};

/// Whether `root` is an Istio object, a list of them, or a `kind: List` holding them.
pub fn holds_istio(root: &Value) -> bool {
    let is = |v: &Value| {
        v.get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| KINDS.contains(&k))
    };
    match root {
        Value::Array(items) => items.iter().any(is),
        _ if root.get("kind").and_then(Value::as_str) == Some("List") => root
            .get("items")
            .and_then(Value::as_array)
            .is_some_and(|i| i.iter().any(is)),
        _ => is(root),
    }
}

/// One object of the file: its kind, its name and where it is.
struct Object<'a> {
    kind: String,
    owned: Owned<'a>,
}

/// The objects of the file, in order.
fn objects<'a>(doc: &'a Doc, ledger: &'a Ledger) -> Result<Vec<Object<'a>>, ImportError> {
    let root = Node::root(doc, ledger);
    let items: Vec<Owned<'a>> = match &doc.root {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| Owned::at(doc, ledger, v, format!("[{i}]")))
            .collect(),
        _ if doc.root.get("kind").and_then(Value::as_str) == Some("List") => {
            root.take("kind");
            root.take("apiVersion");
            root.skip("metadata", Skip::NoCounterpart, "the list's own metadata");
            root.list("items")?
                .into_iter()
                .enumerate()
                .map(|(i, o)| Owned::at(doc, ledger, o.value, format!("items[{i}]")))
                .collect()
        }
        _ => vec![root],
    };
    let mut out = Vec::new();
    for o in items {
        let kind = o.str("kind")?.map(|k| k.value).unwrap_or_default();
        if !KINDS.contains(&kind.as_str()) {
            ledger.skip(
                &o.path,
                Skip::NoCounterpart,
                format!("a {kind:?} object: the import reads DestinationRule and VirtualService"),
            );
            continue;
        }
        o.take("apiVersion");
        out.push(Object { kind, owned: o });
    }
    Ok(out)
}

/// The object's name (`metadata.name`), else its index.
fn object_name(o: &Owned, i: usize) -> String {
    if let Ok(Some(m)) = o.object("metadata") {
        let name = m.str("name").ok().flatten();
        m.skip(
            "namespace",
            Skip::NoCounterpart,
            "resim's services have one namespace: hosts are named by their first label",
        );
        for k in ["labels", "annotations"] {
            m.skip(
                k,
                Skip::NoCounterpart,
                "Kubernetes metadata, not a resilience setting",
            );
        }
        if let Some(name) = name {
            return name.value;
        }
    }
    i.to_string()
}

/// The system of Istio files: each one's hosts, merged in the order of the files.
pub fn read(docs: &[Doc]) -> Result<System, ImportError> {
    let systems = docs.iter().map(read_one).collect::<Result<Vec<_>, _>>()?;
    Ok(merge::merge(systems))
}

/// The system of one Istio file: one upstream per host, in the order the file names them.
fn read_one(doc: &Doc) -> Result<System, ImportError> {
    let ledger = Ledger::new(NAMING);
    let objects = objects(doc, &ledger)?;
    let mut labels = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let label = format!("{}[{}]", o.kind, object_name(&o.owned, i));
        labels.push((o.owned.path.clone(), label));
    }
    ledger.name_objects(labels);
    let upstreams = upstreams(&objects, &ledger)?;
    let skipped = ledger.not_imported(doc, &|_| super::ledger::no_counterpart());
    Ok(System::of(SourceFormat::Istio, upstreams, skipped))
}

/// The upstreams of the file's objects, each with its call.
fn upstreams<'a>(
    objects: &[Object<'a>],
    ledger: &Ledger,
) -> Result<Vec<(Upstream, Vec<Field>)>, ImportError> {
    let mut rules: Vec<(String, Owned)> = Vec::new();
    let mut routes: Vec<Route> = Vec::new();
    for o in objects {
        let spec = o.owned.object("spec")?.ok_or_else(|| {
            o.owned.error(
                &child(&o.owned.path, "spec"),
                format!("a {} needs a `spec`", o.kind),
            )
        })?;
        if o.kind == "DestinationRule" {
            let host = spec.str("host")?.ok_or_else(|| {
                spec.error(
                    &child(&spec.path, "host"),
                    "a DestinationRule needs `host`, the service it applies to",
                )
            })?;
            let name = short(&spec, &host)?;
            if rules.iter().any(|(h, _)| *h == name) {
                ledger.skip(&o.owned.path, Skip::Simplification, format!("an earlier DestinationRule has the host {name:?}; Istio applies the oldest, the import the first"));
                continue;
            }
            rules.push((name, spec));
        } else {
            routes.extend(virtual_service(&spec)?);
        }
    }
    let mut hosts: Vec<String> = rules.iter().map(|(h, _)| h.clone()).collect();
    for r in &routes {
        if !hosts.contains(&r.host) {
            hosts.push(r.host.clone());
        }
    }
    let mut upstreams = Vec::new();
    for host in &hosts {
        let rule = rules.iter().find(|(h, _)| h == host).map(|(_, s)| s);
        let route = routes.iter().find(|r| r.host == *host);
        for later in routes.iter().filter(|r| r.host == *host).skip(1) {
            ledger.skip(
                &later.destination,
                Skip::Simplification,
                "a call has one stack: the first destination to the host (its route's policy and its subset) is imported; give each route a call of its own with --into",
            );
        }
        upstreams.push(upstream(host, rule, route)?);
    }
    unused_routes(&routes, &hosts);
    Ok(upstreams)
}

/// The timeout and retries of HTTP routes no call was imported from, listed.
fn unused_routes(routes: &[Route], hosts: &[String]) {
    let used: Vec<&str> = hosts
        .iter()
        .filter_map(|h| routes.iter().find(|r| r.host == *h))
        .map(|r| r.http.path.as_str())
        .collect();
    for r in routes
        .iter()
        .filter(|r| !used.contains(&r.http.path.as_str()))
    {
        for k in ["timeout", "retries"] {
            r.http.skip(
                k,
                Skip::Simplification,
                "a call has one stack: an earlier route to the same host is imported",
            );
        }
    }
}

/// A host's first label: the service's name here.
fn short(n: &Node, host: &Found<String>) -> Result<String, ImportError> {
    let name = host.value.split('.').next().unwrap_or_default().to_string();
    if name.is_empty() || name.contains('*') {
        return Err(n.error(
            &host.path,
            format!("expected a service's host such as \"reviews\" or \"reviews.prod.svc.cluster.local\", got {:?} (the import needs one service, not a wildcard)", host.value),
        ));
    }
    Ok(name)
}

/// One destination of an HTTP route: its host, subset and the route's policy.
pub(super) struct Route<'a> {
    host: String,
    subset: Option<Found<String>>,
    pub(super) http: Owned<'a>,
    /// The path of the destination entry.
    destination: String,
}

/// The fields of an HTTP route resim has no counterpart for.
fn route_skips(h: &Node) {
    h.take("name");
    h.skip("match", Skip::Simplification, "resim's calls carry no paths or headers; the route's policy is imported for the hosts it sends to");
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

/// The destinations of a VirtualService's HTTP routes.
fn virtual_service<'a>(spec: &Owned<'a>) -> Result<Vec<Route<'a>>, ImportError> {
    let n = spec;
    n.take("hosts");
    n.skip(
        "gateways",
        Skip::NoCounterpart,
        "resim's calls come from a service's sidecar: gateways are not modelled",
    );
    n.skip(
        "exportTo",
        Skip::NoCounterpart,
        "resim's services have one namespace",
    );
    for k in ["tcp", "tls"] {
        n.skip(
            k,
            Skip::NoCounterpart,
            "TCP and TLS routes carry no retry or timeout policy",
        );
    }
    let mut out = Vec::new();
    for http in n.list("http")? {
        route_skips(&http);
        for entry in http.list("route")? {
            entry.skip(
                "weight",
                Skip::Simplification,
                "a call goes to its host whole: the split's weights are not imported",
            );
            entry.skip(
                "headers",
                Skip::NoCounterpart,
                "not a resilience setting resim models",
            );
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
            out.push(Route {
                host: short(&d, &host)?,
                subset: d.str("subset")?,
                http: http.clone(),
                destination: entry.path.clone(),
            });
        }
    }
    Ok(out)
}

/// One host: its service settings from its DestinationRule, its call from its route.
fn upstream(
    host: &str,
    rule: Option<&Owned>,
    route: Option<&Route>,
) -> Result<(Upstream, Vec<Field>), ImportError> {
    let policy = match rule {
        Some(r) => Policy::merged(r, route.and_then(|r| r.subset.as_ref()))?,
        None => Policy::default(),
    };
    let mut service = Vec::new();
    if let Some(r) = rule {
        service.extend(policy::balancer(&policy, r)?);
        if let Some(o) = &policy.outlier {
            service.extend(policy::outlier(o)?);
        }
    }
    let mut limits = match &policy.pool {
        Some(p) => Limits::read(p)?,
        None => Limits::default(),
    };
    if let Some(b) = &policy.retry_budget {
        limits.budget = Some(policy::retry_budget(b)?);
        if let Some(m) = limits.retries.take() {
            b.ledger.skip(&m.path, Skip::Simplification, "Envoy ignores max_retries when a retry budget is set (pilot writes both into one threshold), and so does the import");
        }
    }
    // Where Istio's default route to a host with no VirtualService is said to come from.
    let file = match (rule, route) {
        (Some(r), _) => &r.doc.file,
        (None, Some(r)) => &r.http.doc.file,
        (None, None) => unreachable!("a host comes from a rule or a route"),
    };
    let default_route = Origin::described(file, format!("istio: the default route to {host}"));
    let call = route::call_fields(route, &default_route, &limits)?;
    let origin = match (rule, route) {
        (Some(r), _) => r.origin(&child(&r.path, "host")),
        (None, Some(r)) => r.http.origin(&r.destination),
        (None, None) => unreachable!("a host comes from a rule or a route"),
    };
    let upstream = Upstream {
        host: Host::plain(host),
        kind: Kind::Host,
        origin,
        service,
    };
    Ok((upstream, call))
}
