//! Istio (`networking.istio.io`) into the scenario format: each host a `DestinationRule` or a
//! `VirtualService` route names becomes the service of that name and the call to it.
//!
//! A file holds one object, several (a multi-document YAML file, `---` between them, as
//! `kubectl` files are) or a `kind: List` with `items`. Objects of other kinds are listed.
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

use super::envoy::STATUS_5XX;
use super::ron::{self, Field, Ron};
use super::tree::{Doc, Found, Ledger, Node, Owned, Skip, child};
use super::{ImportError, Plan, SourceFormat, Upstream};
use patterns::bulkhead::BULKHEAD_SIZE_MAX;
use serde_json::Value;
use sim_core::SimDuration;

/// The kinds imported.
const KINDS: [&str; 2] = ["DestinationRule", "VirtualService"];

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

/// Paths of the file as comments name them: `DestinationRule[reviews].spec.host`.
struct Labels(Vec<(String, String)>);

impl Labels {
    /// `path` with its object named by kind and name: `DestinationRule[reviews].spec.host`
    /// for `[0].spec.host`.
    fn name(&self, path: &str) -> String {
        let found = self.0.iter().rev().find(|(prefix, _)| {
            path == prefix
                || prefix.is_empty()
                || path.starts_with(&format!("{prefix}."))
                || path.starts_with(&format!("{prefix}["))
        });
        match found {
            Some((prefix, label)) => {
                let rest = path[prefix.len()..].trim_start_matches('.');
                if rest.is_empty() {
                    label.clone()
                } else {
                    format!("{label}.{rest}")
                }
            }
            None => path.to_string(),
        }
    }

    /// `path` as a comment names its source.
    fn src(&self, path: &str) -> String {
        format!("istio: {}", self.name(path))
    }

    /// `error` (`FILE: PATH: message`) with its path named as the mapping table names it.
    fn relabel(&self, file: &str, error: ImportError) -> ImportError {
        let named = error
            .0
            .strip_prefix(&format!("{file}: "))
            .and_then(|rest| rest.split_once(": "))
            .map(|(path, message)| format!("{file}: {}: {message}", self.name(path)));
        named.map_or(error, ImportError)
    }
}

/// The objects of the file, in order.
fn objects<'a>(doc: &'a Doc, ledger: &'a Ledger) -> Result<Vec<Object<'a>>, ImportError> {
    let root = Owned::at(doc, ledger, &doc.root, String::new());
    let items: Vec<Owned<'a>> = match &doc.root {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| Owned::at(doc, ledger, v, format!("[{i}]")))
            .collect(),
        _ if doc.root.get("kind").and_then(Value::as_str) == Some("List") => {
            let n = root.node();
            n.take("kind");
            n.take("apiVersion");
            n.skip("metadata", Skip::NoCounterpart, "the list's own metadata");
            n.list("items")?
                .into_iter()
                .enumerate()
                .map(|(i, o)| Owned::at(doc, ledger, o.value, format!("items[{i}]")))
                .collect()
        }
        _ => vec![root],
    };
    let mut out = Vec::new();
    for o in items {
        let n = o.node();
        let kind = n.str("kind")?.map(|k| k.value).unwrap_or_default();
        if !KINDS.contains(&kind.as_str()) {
            ledger.skip(
                &o.path,
                Skip::NoCounterpart,
                format!("a {kind:?} object: the import reads DestinationRule and VirtualService"),
            );
            continue;
        }
        n.take("apiVersion");
        out.push(Object { kind, owned: o });
    }
    Ok(out)
}

/// The object's name (`metadata.name`), else its index.
fn object_name(o: &Owned, i: usize) -> String {
    let n = o.node();
    if let Ok(Some(m)) = n.object("metadata") {
        let name = m.node().str("name").ok().flatten();
        m.node().skip(
            "namespace",
            Skip::NoCounterpart,
            "resim's services have one namespace: hosts are named by their first label",
        );
        for k in ["labels", "annotations"] {
            m.node().skip(
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

/// The plan of an Istio file: one upstream per host, in the order the file names them.
pub fn plan(doc: &Doc) -> Result<Plan, ImportError> {
    let ledger = Ledger::default();
    let objects = objects(doc, &ledger)?;
    let mut labels = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let label = format!("{}[{}]", o.kind, object_name(&o.owned, i));
        labels.push((o.owned.path.clone(), label));
    }
    let labels = Labels(labels);
    upstreams(doc, &objects, &ledger, &labels).map_err(|e| labels.relabel(&doc.file, e))
}

/// The upstreams of the file's objects, and what was not imported.
fn upstreams(
    doc: &Doc,
    objects: &[Object],
    ledger: &Ledger,
    labels: &Labels,
) -> Result<Plan, ImportError> {
    let mut rules: Vec<(String, Owned)> = Vec::new();
    let mut routes: Vec<Route> = Vec::new();
    for o in objects {
        let spec = o.owned.node().object("spec")?.ok_or_else(|| {
            o.owned.node().error(
                &child(&o.owned.path, "spec"),
                format!("a {} needs a `spec`", o.kind),
            )
        })?;
        if o.kind == "DestinationRule" {
            let host = spec.node().str("host")?.ok_or_else(|| {
                spec.node().error(
                    &child(&spec.path, "host"),
                    "a DestinationRule needs `host`, the service it applies to",
                )
            })?;
            let name = short(&spec.node(), &host)?;
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
        upstreams.push(upstream(host, rule, route, labels)?);
    }
    unused_routes(&routes, &hosts);
    let skipped = ledger
        .not_imported(&doc.root)
        .into_iter()
        .map(|(path, kind, reason)| (labels.src(&path), kind, reason))
        .collect();
    Ok(Plan {
        format: Some(SourceFormat::Istio),
        upstreams,
        skipped,
    })
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
            r.http.node().skip(
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
struct Route<'a> {
    host: String,
    subset: Option<Found<String>>,
    http: Owned<'a>,
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
    let n = spec.node();
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
        let h = http.node();
        route_skips(&h);
        let entries = h.list("route")?;
        for entry in entries {
            let e = entry.node();
            e.skip(
                "weight",
                Skip::Simplification,
                "a call goes to its host whole: the split's weights are not imported",
            );
            e.skip(
                "headers",
                Skip::NoCounterpart,
                "not a resilience setting resim models",
            );
            let d = e.object("destination")?.ok_or_else(|| {
                e.error(
                    &child(&entry.path, "destination"),
                    "a route needs a `destination` with a `host`",
                )
            })?;
            let dn = d.node();
            let host = dn
                .str("host")?
                .ok_or_else(|| dn.error(&child(&d.path, "host"), "a destination needs `host`"))?;
            dn.skip(
                "port",
                Skip::NoCounterpart,
                "resim's services have no ports",
            );
            out.push(Route {
                host: short(&dn, &host)?,
                subset: dn.str("subset")?,
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
    labels: &Labels,
) -> Result<Upstream, ImportError> {
    let policy = match rule {
        Some(r) => Policy::merged(r, route.and_then(|r| r.subset.as_ref()))?,
        None => Policy::default(),
    };
    let mut service = Vec::new();
    if let Some(r) = rule {
        service.extend(balancer(&policy, r, labels)?);
        if let Some(o) = &policy.outlier {
            service.extend(outlier(o, labels)?);
        }
    }
    let mut limits = match &policy.pool {
        Some(p) => Limits::read(p, labels)?,
        None => Limits::default(),
    };
    if let Some(b) = &policy.retry_budget {
        limits.budget = Some(retry_budget(b, labels)?);
        if let Some(m) = limits.retries.take() {
            b.node().ledger.skip(&m.path, Skip::Simplification, "Envoy ignores max_retries when a retry budget is set (pilot writes both into one threshold), and so does the import");
        }
    }
    let call = call_fields(host, route, &limits, labels)?;
    let source = match (rule, route) {
        (Some(r), _) => labels.src(&child(&r.path, "host")),
        (None, Some(r)) => labels.src(&r.destination),
        (None, None) => unreachable!("a host comes from a rule or a route"),
    };
    Ok(Upstream {
        name: host.to_string(),
        source,
        call,
        service,
    })
}

/// A traffic policy's components after the subset's replaced the host's.
#[derive(Default)]
struct Policy<'a> {
    pool: Option<Owned<'a>>,
    outlier: Option<Owned<'a>>,
    balancer: Option<Owned<'a>>,
    retry_budget: Option<Owned<'a>>,
}

impl<'a> Policy<'a> {
    fn merged(spec: &Owned<'a>, subset: Option<&Found<String>>) -> Result<Policy<'a>, ImportError> {
        let n = spec.node();
        n.take("host");
        n.skip(
            "exportTo",
            Skip::NoCounterpart,
            "resim's services have one namespace",
        );
        n.skip(
            "workloadSelector",
            Skip::NoCounterpart,
            "the rule applies to the calling service the import writes",
        );
        let mut policy = Policy::default();
        if let Some(t) = n.object("trafficPolicy")? {
            policy.read(&t)?;
        }
        let subsets = n.list("subsets")?;
        let wanted = subset.map(|s| s.value.as_str());
        if let Some(s) = subset
            && !subsets
                .iter()
                .any(|o| o.value.get("name").and_then(Value::as_str) == Some(&s.value))
        {
            return Err(n.error(&s.path, format!("names the subset {:?}, which the DestinationRule of its host does not define (it has: {}); Istio sends such traffic nowhere (503)", s.value, names(&subsets))));
        }
        for s in &subsets {
            let sn = s.node();
            let name = sn.str("name")?.map(|f| f.value);
            if name.as_deref() != wanted || wanted.is_none() {
                let why = match wanted {
                    Some(_) => {
                        "a subset's policy acts on the traffic routed to it; the import takes the subset the first route names"
                    }
                    None => {
                        "a subset's policy acts on the traffic routed to it, and no route of the file names this one"
                    }
                };
                sn.ledger.skip(&s.path, Skip::Simplification, why);
                continue;
            }
            sn.skip(
                "labels",
                Skip::Simplification,
                "the subset's endpoints are the service's replicas",
            );
            if let Some(t) = sn.object("trafficPolicy")? {
                policy.read(&t)?;
            }
        }
        Ok(policy)
    }

    /// The components `t` sets replace the ones read so far, whole, as pilot merges them.
    fn read(&mut self, t: &Owned<'a>) -> Result<(), ImportError> {
        let n = t.node();
        let replace = |slot: &mut Option<Owned<'a>>, new: Option<Owned<'a>>| {
            if let Some(new) = new {
                if let Some(old) = slot.take() {
                    old.node().ledger.skip(
                        &old.path,
                        Skip::Simplification,
                        format!(
                            "the subset's {} replaces it whole, as Istio merges policies",
                            new.path.rsplit('.').next().unwrap_or_default()
                        ),
                    );
                }
                *slot = Some(new);
            }
        };
        replace(&mut self.pool, n.object("connectionPool")?);
        replace(&mut self.outlier, n.object("outlierDetection")?);
        replace(&mut self.balancer, n.object("loadBalancer")?);
        replace(&mut self.retry_budget, n.object("retryBudget")?);
        n.skip(
            "tls",
            Skip::NoCounterpart,
            "TLS: resim's network is latency and loss",
        );
        n.skip(
            "portLevelSettings",
            Skip::NoCounterpart,
            "resim's services have no ports: the policy for every port is imported",
        );
        n.skip(
            "tunnel",
            Skip::NoCounterpart,
            "not a resilience setting resim models",
        );
        n.skip(
            "proxyProtocol",
            Skip::NoCounterpart,
            "not a resilience setting resim models",
        );
        Ok(())
    }
}

fn names(subsets: &[Owned]) -> String {
    subsets
        .iter()
        .filter_map(|s| s.value.get("name").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A duration as Istio's YAML writes it: Go's `1h`, `1m`, `1s`, `100ms`, `1.5s`, `1m30s`
/// (units h, m, s, ms, us, µs, ns), or protobuf's `"0.25s"`.
fn duration(n: &Node, k: &str) -> Result<Option<Found<SimDuration>>, ImportError> {
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
        let seconds = super::tree::decimal_seconds(number)?;
        total = total.checked_add(seconds.checked_mul(scale)? / 1_000_000_000)?;
        rest = tail;
    }
    (!s.is_empty()).then_some(total)
}

/// A non-negative `int32` limit of the connection pool; 0 is Istio's unset.
fn limit(n: &Node, k: &str) -> Result<Option<Found<u32>>, ImportError> {
    if let Some(Value::Number(x)) = n.raw(k)
        && x.as_i64().is_some_and(|x| x < 0)
    {
        return Err(n.error(
            &child(&n.path, k),
            format!("must be at least 0 (0 is Istio's unset: no limit), got {x}"),
        ));
    }
    let found = n.u32(k)?;
    Ok(match found {
        Some(f) if f.value == 0 => {
            n.ledger.skip(
                &f.path,
                Skip::Simplification,
                "0 is Istio's unset: Envoy's limit stays at 2^32-1, no limit",
            );
            None
        }
        other => other,
    })
}

/// `loadBalancer` as the service's balancer (Istio's default, LEAST_REQUEST, when unset).
fn balancer(policy: &Policy, rule: &Owned, labels: &Labels) -> Result<Option<Field>, ImportError> {
    let default = |path: &str| {
        Field::from("balancer", ron::scalar("PowerOfTwo"), labels.src(path))
            .noted("Istio's default: LEAST_REQUEST, Envoy's two random choices")
    };
    let Some(lb) = &policy.balancer else {
        return Ok(Some(default(&child(
            &child(&rule.path, "trafficPolicy"),
            "loadBalancer",
        ))));
    };
    let n = lb.node();
    for k in ["localityLbSetting", "warmupDurationSecs", "warmup"] {
        n.skip(
            k,
            Skip::NoCounterpart,
            "resim's replicas have no localities and no warm-up window",
        );
    }
    if n.raw("consistentHash").is_some() {
        n.skip(
            "consistentHash",
            Skip::NoCounterpart,
            "resim's balancers do not hash requests to replicas: the service keeps its balancer",
        );
        return Ok(None);
    }
    let Some(simple) = n.str("simple")? else {
        return Ok(Some(default(&lb.path)));
    };
    let picked = match simple.value.as_str() {
        "ROUND_ROBIN" => "RoundRobin",
        "RANDOM" => "Random",
        "LEAST_REQUEST" | "LEAST_CONN" => "PowerOfTwo",
        "UNSPECIFIED" => return Ok(Some(default(&simple.path))),
        "PASSTHROUGH" => {
            n.ledger.skip(&simple.path, Skip::NoCounterpart, "PASSTHROUGH sends to the address the caller asked for: resim's calls name a service, not a replica; the service keeps its balancer");
            return Ok(None);
        }
        other => {
            return Err(n.error(&simple.path, format!("expected ROUND_ROBIN, LEAST_REQUEST, RANDOM, PASSTHROUGH or UNSPECIFIED, got {other:?}")));
        }
    };
    let f = Field::from("balancer", ron::scalar(picked), labels.src(&simple.path));
    Ok(Some(if picked == "PowerOfTwo" {
        f.noted("Envoy's LEAST_REQUEST compares two random replicas")
    } else {
        f
    }))
}

/// The failures in a row that eject a host: `consecutive5xxErrors` (5 by default, 0 off) or
/// `consecutiveGatewayErrors` when lower; `None` when neither ejects.
fn consecutive(o: &Owned, labels: &Labels) -> Result<Option<Field>, ImportError> {
    let n = o.node();
    let at = |k: &str| labels.src(&child(&o.path, k));
    let five = n.u32("consecutive5xxErrors")?;
    let gateway = n.u32("consecutiveGatewayErrors")?.filter(|g| g.value > 0);
    let five_on = five.as_ref().is_none_or(|f| f.value > 0);
    let field = match (&five, five_on, &gateway) {
        (_, true, Some(g)) if five.as_ref().is_none_or(|f| g.value < f.value) => {
            if let Some(f) = &five {
                n.ledger.skip(&f.path, Skip::Simplification, format!("resim counts every failure on one counter: consecutiveGatewayErrors ({}) is lower and binds first on gateway errors; a run of 500s ejects after {} in Istio", g.value, f.value));
            }
            Field::from("consecutive_failures", ron::scalar(g.value), labels.src(&g.path)).noted("resim's counter counts every failure, Envoy's gateway counter 502, 503, 504 and connection failures")
        }
        (Some(f), true, _) => {
            if let Some(g) = &gateway {
                n.ledger.skip(&g.path, Skip::Simplification, "gateway errors are 5xx too: at or above consecutive5xxErrors it never binds first, as Istio's reference says");
            }
            Field::from("consecutive_failures", ron::scalar(f.value), labels.src(&f.path))
        }
        (None, true, _) => Field::from("consecutive_failures", ron::scalar(5), at("consecutive5xxErrors")).noted("Istio's default"),
        (_, false, Some(g)) => Field::from("consecutive_failures", ron::scalar(g.value), labels.src(&g.path)).noted("consecutive5xxErrors is 0: only gateway errors eject; resim's counter counts every failure"),
        (_, false, None) => {
            n.ledger.skip(&o.path, Skip::OutOfRange, "consecutive5xxErrors is 0 and consecutiveGatewayErrors unset: Envoy ejects no host, so no `outlier` is written");
            return Ok(None);
        }
    };
    Ok(Some(field))
}

/// `outlierDetection` as the service's `outlier`, if it ejects at all.
fn outlier(o: &Owned, labels: &Labels) -> Result<Option<Field>, ImportError> {
    let n = o.node();
    let at = |k: &str| labels.src(&child(&o.path, k));
    let Some(consecutive) = consecutive(o, labels)? else {
        return Ok(None);
    };
    let ejection = match duration(&n, "baseEjectionTime")? {
        Some(f) => Field::from("ejection", ron::duration(f.value), labels.src(&f.path)),
        None => Field::from(
            "ejection",
            ron::duration(SimDuration::from_secs(30)),
            at("baseEjectionTime"),
        )
        .noted("Istio's default"),
    };
    let percent = match limit(&n, "maxEjectionPercent")? {
        Some(f) if f.value <= 100 => Field::from(
            "max_ejection_percent",
            ron::float(f64::from(f.value)),
            labels.src(&f.path),
        ),
        Some(f) => {
            return Err(n.error(
                &f.path,
                format!("must be in [0, 100] (a percent), got {}", f.value),
            ));
        }
        None => Field::from(
            "max_ejection_percent",
            ron::float(10.0),
            at("maxEjectionPercent"),
        )
        .noted("Istio's default"),
    };
    if duration(&n, "interval")?.is_some() {
        n.ledger.skip(&child(&o.path, "interval"), Skip::Simplification, "resim ejects at the failure that completes the run and returns the host when its ejection time is over; Envoy's sweep interval only delays the return");
    }
    match n.u32("minHealthPercent")? {
        Some(m) if m.value == 0 => n.ledger.skip(&m.path, Skip::Simplification, "0 turns Envoy's panic threshold off, and resim has none: nothing to write"),
        Some(m) => n.ledger.skip(&m.path, Skip::NoCounterpart, "resim's balancer has no panic mode: below this share of healthy hosts Envoy balances over all of them, resim keeps ejecting up to max_ejection_percent"),
        None => {}
    }
    n.skip(
        "consecutiveErrors",
        Skip::Simplification,
        "deprecated by Istio (consecutive5xxErrors replaces it)",
    );
    n.skip(
        "maxEjectionTime",
        Skip::Simplification,
        "resim ejects for the same time every time",
    );
    for k in [
        "splitExternalLocalOriginErrors",
        "consecutiveLocalOriginFailures",
    ] {
        n.skip(k, Skip::Simplification, "resim counts every failure and timeout toward consecutive failures, as Envoy does when the errors are not split");
    }
    Ok(Some(Field::plain(
        "outlier",
        ron::fields(vec![consecutive, ejection, percent]),
    )))
}

/// A limit with its source and note.
#[derive(Clone)]
struct Sourced<T> {
    value: T,
    /// The field's path in the file.
    path: String,
    source: String,
    note: Option<&'static str>,
}

impl<T> Sourced<T> {
    fn field(&self, name: &str, ron: Ron) -> Field {
        let f = Field::from(name, ron, self.source.clone());
        match self.note {
            Some(n) => f.noted(n),
            None => f,
        }
    }
}

/// The connection pool's limits, as Envoy's circuit breakers.
#[derive(Default)]
struct Limits {
    /// Attempts in flight, when a limit is set.
    in_flight: Option<Sourced<u32>>,
    /// Attempts waiting for a connection, when set.
    pending: Option<Sourced<u32>>,
    /// Retries in flight at once, when set.
    retries: Option<Sourced<u32>>,
    /// The traffic policy's `retryBudget` as `(percent, min_retry_concurrency)`, when set:
    /// it replaces `retries`.
    budget: Option<Sourced<(f64, u32)>>,
}

/// A limit of the pool as read, clamped to what resim's bulkhead takes.
fn sourced(f: Found<u32>, labels: &Labels) -> Sourced<u32> {
    let big = f.value > BULKHEAD_SIZE_MAX;
    Sourced {
        value: f.value.min(BULKHEAD_SIZE_MAX),
        source: labels.src(&f.path),
        path: f.path,
        note: big.then_some("resim's bulkhead takes at most 1,000,000"),
    }
}

impl Limits {
    fn read(pool: &Owned, labels: &Labels) -> Result<Limits, ImportError> {
        let n = pool.node();
        let tcp = n.object("tcp")?;
        let http = n.object("http")?;
        let (mut connections, mut requests, mut pending, mut retries) = (None, None, None, None);
        let mut http2 = false;
        if let Some(t) = &tcp {
            let t = t.node();
            connections = limit(&t, "maxConnections")?;
            if duration(&t, "connectTimeout")?.is_some() {
                t.ledger.skip(&child(&t.path, "connectTimeout"), Skip::Simplification, "resim opens connections only for a call's `pool` (its `connect_time` is how long an open takes); without one, an unreachable replica fails the attempt at once");
            }
            for k in ["tcpKeepalive", "maxConnectionDuration", "idleTimeout"] {
                t.skip(k, Skip::NoCounterpart, "resim's attempts hold no connections unless the call has a `pool`: connection lifetimes are not modelled here");
            }
        }
        if let Some(h) = &http {
            let h = h.node();
            requests = limit(&h, "http2MaxRequests")?;
            pending = limit(&h, "http1MaxPendingRequests")?;
            retries = limit(&h, "maxRetries")?;
            http2 = h
                .str("h2UpgradePolicy")?
                .is_some_and(|p| p.value == "UPGRADE");
            for k in [
                "maxRequestsPerConnection",
                "idleTimeout",
                "maxConcurrentStreams",
            ] {
                h.skip(k, Skip::NoCounterpart, "resim's attempts hold no connections unless the call has a `pool`: connection reuse is not modelled here");
            }
            h.skip(
                "useClientProtocol",
                Skip::NoCounterpart,
                "the wire protocol: resim's network is latency and loss",
            );
        }
        if let (true, Some(c)) = (http2, &connections) {
            n.ledger.skip(&c.path, Skip::Simplification, "h2UpgradePolicy: UPGRADE: requests share HTTP/2 connections, so http2MaxRequests alone bounds them");
            connections = None;
        }
        let in_flight = match (connections, requests) {
            (Some(c), Some(r)) if c.value < r.value => {
                n.ledger.skip(&r.path, Skip::Simplification, format!("over HTTP/1.1 a connection carries one request, so maxConnections ({}) binds first", c.value));
                Some(c)
            }
            (Some(c), Some(r)) => {
                n.ledger.skip(
                    &c.path,
                    Skip::Simplification,
                    format!(
                        "http2MaxRequests ({}) is the lower limit and binds first",
                        r.value
                    ),
                );
                Some(r)
            }
            (c, r) => c.or(r),
        };
        if let (None, Some(p)) = (&in_flight, &pending) {
            n.ledger.skip(&p.path, Skip::Simplification, "no maxConnections or http2MaxRequests: nothing waits for a connection in resim, so the pending bound never acts");
            pending = None;
        }
        Ok(Limits {
            in_flight: in_flight.map(|f| sourced(f, labels)),
            pending: pending.map(|f| sourced(f, labels)),
            retries: retries.map(|f| sourced(f, labels)),
            budget: None,
        })
    }
}

/// The call's `deadline`, `timeout` and `stack` from the route (or Istio's default) and the
/// connection pool.
fn call_fields(
    host: &str,
    route: Option<&Route>,
    limits: &Limits,
    labels: &Labels,
) -> Result<Vec<Field>, ImportError> {
    let mut fields = Vec::new();
    let mut stack = Vec::new();
    let mut deadline = None;
    let retries = match route {
        Some(r) => {
            let n = r.http.node();
            if let Some(t) = duration(&n, "timeout")?.filter(|t| !t.value.is_zero()) {
                fields.push(
                    Field::from("deadline", ron::duration(t.value), labels.src(&t.path))
                        .noted("the route's timeout spans every retry"),
                );
                deadline = Some(t);
            }
            n.object("retries")?
        }
        None => None,
    };
    let default_at = match route {
        Some(r) => labels.src(&child(&r.http.path, "retries")),
        None => format!("istio: the default route to {host}"),
    };
    let (retry, per_try) = retry(retries.as_ref(), &default_at, limits, labels)?;
    if let Some(t) = per_try {
        fields.push(
            Field::from("timeout", ron::duration(t.value), labels.src(&t.path))
                .noted("one attempt's"),
        );
    }
    stack.extend(retry);
    if let Some(in_flight) = &limits.in_flight {
        stack.push(bulkhead(
            in_flight,
            limits.pending.as_ref(),
            deadline.as_ref(),
            labels,
        ));
    }
    fields.push(Field::plain("stack", Ron::List(stack)));
    Ok(fields)
}

/// Envoy's circuit breakers as a per-attempt bulkhead.
fn bulkhead(
    in_flight: &Sourced<u32>,
    pending: Option<&Sourced<u32>>,
    deadline: Option<&Found<SimDuration>>,
    labels: &Labels,
) -> Field {
    let mut fields = vec![in_flight.field("max_concurrent_calls", ron::scalar(in_flight.value))];
    fields.push(match pending {
        Some(p) => p.field("queue_capacity", ron::scalar(p.value)),
        None => Field::plain("queue_capacity", ron::scalar(BULKHEAD_SIZE_MAX))
            .noted("http1MaxPendingRequests unset: Istio's 2^32-1, no bound; resim's largest"),
    });
    fields.push(match deadline {
        Some(d) => Field::from(
            "max_wait_duration",
            ron::duration(d.value),
            labels.src(&d.path),
        ),
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

/// Istio's default `retryOn`.
const RETRY_ON_DEFAULT: &str =
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";

/// `retries` (or Istio's default) as a `Retry` layer, and its `perTryTimeout`.
fn retry(
    retries: Option<&Owned>,
    default_at: &str,
    limits: &Limits,
    labels: &Labels,
) -> Result<(Option<Field>, Option<Found<SimDuration>>), ImportError> {
    let Some(r) = retries else {
        let mut fields =
            vec![Field::from("max_retries", ron::scalar(2), default_at).noted("Istio's default")];
        fields.push(backoff(None, default_at, labels));
        fields.extend(
            conditions(RETRY_ON_DEFAULT, &[503], default_at, None)
                .noted_all("Istio's default retryOn, with 503"),
        );
        fields.push(no_overflow_retry(default_at.to_string()));
        fields.extend(budget(limits));
        return Ok((Some(Field::plain("", ron::named("Retry", fields))), None));
    };
    let n = r.node();
    let attempts = n.u32("attempts")?;
    if attempts.as_ref().is_some_and(|a| a.value == 0)
        || attempts.is_none() && r.value.as_object().is_some_and(|m| m.is_empty())
    {
        n.skip(
            "perTryTimeout",
            Skip::Simplification,
            "attempts is 0: Istio sets no retry policy, and no per-try timeout with it",
        );
        return Ok((None, None));
    }
    let count = match &attempts {
        Some(a) => Field::from("max_retries", ron::scalar(a.value), labels.src(&a.path)),
        None => Field::from(
            "max_retries",
            ron::scalar(2),
            labels.src(&child(&r.path, "attempts")),
        )
        .noted("Istio's default"),
    };
    let per_try = duration(&n, "perTryTimeout")?;
    let base = duration(&n, "backoff")?;
    let mut fields = vec![count, backoff(base, &labels.src(&r.path), labels)];
    fields.extend(retry_on(&n, &r.path, labels)?);
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
/// overflow the sidecar never retries. `at` is the path of `retries`.
fn retry_on(n: &Node, at: &str, labels: &Labels) -> Result<Vec<Field>, ImportError> {
    let on = n.str("retryOn")?;
    let mut fields = match &on {
        Some(f) => conditions(&f.value, &[], &labels.src(&f.path), Some((n, &f.path))),
        None => conditions(
            RETRY_ON_DEFAULT,
            &[503],
            &labels.src(&child(at, "retryOn")),
            None,
        )
        .noted_all("Istio's default retryOn, with 503"),
    };
    let on_at = match &on {
        Some(f) => f.path.clone(),
        None => child(at, "retryOn"),
    };
    fields.push(no_overflow_retry(labels.src(&on_at)));
    Ok(fields)
}

/// The sidecar's Envoy never retries what its circuit breakers refused; `source` names the
/// retries' `retryOn`.
fn no_overflow_retry(source: String) -> Field {
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

/// `trafficPolicy.retryBudget`: retries in flight up to `percent` of the requests in flight
/// (and pending), and at least `minRetryConcurrency`, as Envoy's cluster `retry_budget`.
fn retry_budget(b: &Owned, labels: &Labels) -> Result<Sourced<(f64, u32)>, ImportError> {
    let n = b.node();
    let percent = n.f64("percent")?;
    if let Some(p) = percent
        .as_ref()
        .filter(|p| !(0.0..=100.0).contains(&p.value))
    {
        return Err(n.error(
            &p.path,
            format!("expected a percentage from 0 to 100, got {}", p.value),
        ));
    }
    // A plain uint32: 0 is proto3's unset, and Istio's 3 applies.
    let min = n.u32("minRetryConcurrency")?.filter(|m| m.value > 0);
    if let Some(i) = duration(&n, "budgetInterval")?
        && !i.value.is_zero()
    {
        n.ledger.skip(&i.path, Skip::NoCounterpart, "resim's Concurrency budget counts the requests in flight now; a budgetInterval also counts those started within it, which allows more retries: the budget is imported without it");
    }
    Ok(Sourced {
        value: (
            percent.as_ref().map_or(20.0, |p| p.value),
            min.as_ref().map_or(3, |m| m.value),
        ),
        path: b.path.clone(),
        source: labels.src(&b.path),
        note: match (percent.is_none(), min.is_none()) {
            (true, true) => Some("Istio's defaults: 20% and 3"),
            (true, false) => Some("Istio's default percent: 20%"),
            (false, true) => Some("Istio's default minRetryConcurrency: 3, where 0 is unset"),
            (false, false) => None,
        },
    })
}

/// Envoy's back-off: `base` (25ms by default) doubling, capped at ten times it, fully jittered.
fn backoff(base: Option<Found<SimDuration>>, at: &str, labels: &Labels) -> Field {
    let (delay, source, note) = match &base {
        Some(b) => (b.value, labels.src(&b.path), None),
        None => (
            SimDuration::from_millis(25),
            at.to_string(),
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
    super::envoy::jittered_backoff(initial, max, &source)
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
fn conditions(text: &str, codes: &[u16], source: &str, file: Option<(&Node, &str)>) -> Vec<Field> {
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
    let field = |name: &str, value: Ron| Field::from(name, value, source.to_string());
    vec![
        field("retry_on_status", ron::statuses(&statuses)),
        field("retry_on_timeout", ron::scalar(timeout)),
        field("retry_on_connection_error", ron::scalar(connection)),
        field("retry_on_throttled", ron::scalar(throttled)),
        field("retry_on_conflict", ron::scalar(conflict)),
    ]
}
