//! Istio (`networking.istio.io`) into the neutral model: each host a `DestinationRule` or a
//! `VirtualService` route names is an upstream (each subset a route names, one of its own),
//! and each destination of an HTTP route a call to it.
//!
//! A file holds one object, several (a multi-document YAML file, `---` between them, as
//! `kubectl` files are) or a `kind: List` with `items`; the objects of every file given are
//! read together, as the mesh reads them once applied. Objects of other kinds are listed.
//!
//! | module | what |
//! |---|---|
//! | `objects` | the objects with their names, namespaces and creation times, pilot's order, hosts resolved as pilot resolves them |
//! | `policy` | a DestinationRule's traffic policy (and its subsets'): connection pool, outlier detection, load balancer, retry budget |
//! | `route` | a VirtualService's HTTP route as a call: timeout, retries and their conditions, the pool's limits as a bulkhead |
//!
//! # Decisions
//!
//! Istio is a front for Envoy: pilot turns a `DestinationRule` into an Envoy cluster and a
//! `VirtualService` route into an Envoy route, so each field maps to what its Envoy setting
//! maps to in [`super::envoy`]. A host is the service named by its first label (`reviews` for
//! `reviews.prod.svc.cluster.local`), qualified by its namespace where two namespaces have a
//! host of that name (`reviews.prod`, `reviews.staging`). The connection pool is the
//! cluster's circuit breakers: `tcp.maxConnections` (HTTP/1.1, one request per connection)
//! and `http.http2MaxRequests` bound the attempts in flight from one sidecar (a per-attempt
//! `Bulkhead`, the lower of the two), `http.http1MaxPendingRequests` is its pending queue,
//! `http.maxRetries` the retries in flight at once; Istio leaves every limit it is not given
//! at 2^32-1, so an unset limit is no limit. The traffic policy's `retryBudget` is the
//! cluster's `retry_budget` (a `Concurrency` budget: `percent` of the requests in flight, 20%
//! by default, at least `minRetryConcurrency`, 3 by default), and replaces `maxRetries` as it
//! does in Envoy. Outlier detection is Envoy's: `consecutive5xxErrors` (5 by default, 0 turns
//! it off) or, when lower, `consecutiveGatewayErrors` is resim's `outlier`. A route's
//! `timeout` spans every retry (the call's `deadline`; none by default, as Istio turns Envoy's
//! 15s off), `perTryTimeout` is one attempt's, `attempts` counts retries, with Envoy's
//! back-off (25ms base, or `retries.backoff`, fully jittered, capped at ten times the base).
//! Without `retries` Istio's default applies: 2 retries on `connect-failure,refused-stream,
//! unavailable,cancelled,retriable-status-codes` with 503; `attempts: 0` retries nothing.
//!
//! **Several rules for one host.** DestinationRules of one host are merged as pilot merges
//! them, oldest first ([`objects`]' order): each subset's first definition stands, and the
//! first top-level `trafficPolicy`; a later duplicate is listed as a conflict naming the one
//! that stands. Sidecars do not merge VirtualServices: the oldest of a host is used, a later
//! one listed the same way.
//!
//! **Subsets.** A subset is a version of the host: a label selector over its endpoints, so a
//! set of replicas of their own. Each subset a route names is an upstream (a service of its
//! own when routes reach several subsets of one host: `reviews-v1`, `reviews-v2`), whose
//! traffic policy is the host's with the subset's components (connection pool, outlier
//! detection, load balancer, retry budget) replacing the host's whole, as pilot merges them.
//! A subset no route names is listed: its policy acts only on traffic routed to it.
//!
//! **Routes.** Every destination of an HTTP route is a call of its own; a weighted split's
//! `weight`s are the calls' weights (each request of the calling service picks one call). A
//! route's `match` is not modelled (resim's requests carry no paths or headers) but for
//! `sourceLabels.app`, which names the calling service; without it the caller is the
//! service whose sidecar the configuration is, `app`. Istio takes the first route whose
//! `match` a request meets, and a route's weights split only its own requests: where some of
//! a host's routes have conditions, the host's requests are shared among its routes (the
//! calls' weights sum to what one route's would), each route with conditions a placeholder
//! share (an equal share of the routes: how many requests match is not in the
//! configuration), the routes without conditions the rest, each split by its own weights.

mod objects;
mod policy;
mod route;

use super::ledger::{Ledger, Naming, Skip};
use super::model::{Host, Kind, Origin, Route as Call, System, Upstream};
use super::node::{Found, Owned};
use super::ron::{self, Field};
use super::tree::{Doc, child};
use super::{ImportError, SourceFormat};
use objects::{HostName, Object, resolve};
use policy::{Limits, Policy};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// How comments name Istio's paths: by the object (`DestinationRule[reviews].spec.host`).
const NAMING: Naming = Naming {
    format: SourceFormat::Istio,
    label: str::to_string,
    fold_case: None,
};

/// Whether `root` is an Istio object, a list of them, or a `kind: List` holding them.
pub fn holds_istio(root: &Value) -> bool {
    let is = |v: &Value| {
        v.get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| objects::KINDS.contains(&k))
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

/// The system of Istio files, read together as the mesh reads them once applied.
pub fn read(docs: &[Doc]) -> Result<System, ImportError> {
    let ledgers: Vec<Ledger> = docs.iter().map(|_| Ledger::new(NAMING)).collect();
    let mut all = Vec::new();
    let mut order = 0;
    for (doc, ledger) in docs.iter().zip(&ledgers) {
        all.extend(objects::read(doc, ledger, &mut order)?);
    }
    let rules = rules(&all)?;
    let routes = routes(&all)?;
    let mut system = System {
        formats: vec![SourceFormat::Istio],
        ..System::default()
    };
    build(&rules, &routes, &mut system)?;
    for (doc, ledger) in docs.iter().zip(&ledgers) {
        system.skipped.extend(ledger.not_imported(doc, &|p| {
            super::ledger::unknown("Istio's networking API", p)
        }));
    }
    Ok(system)
}

/// The merged DestinationRules of one host.
struct Rule<'a> {
    host: HostName,
    /// The spec of the oldest rule, where the host is named.
    spec: Owned<'a>,
    /// The first top-level traffic policy, oldest first.
    policy: Option<Owned<'a>>,
    /// The subsets, each by its first definition.
    subsets: Vec<Owned<'a>>,
    /// The file order of the oldest rule.
    order: usize,
}

/// The spec of object `o`.
fn spec<'a>(o: &Object<'a>) -> Result<Owned<'a>, ImportError> {
    o.node.object("spec")?.ok_or_else(|| {
        o.node.error(
            &child(&o.node.path, "spec"),
            format!("a {} needs a `spec`", o.kind),
        )
    })
}

/// A setting at `at` (of `o`) that an older one, `stands`, gives first: listed as a conflict.
fn conflict(at: &Owned, path: &str, what: &str, stands: &Object) {
    at.ledger.skip(
        path,
        Skip::Conflict,
        format!(
            "{what}: the older {} gives it first, and Istio uses the oldest",
            stands.named()
        ),
    );
}

/// The DestinationRules merged by host, oldest first within a host, hosts in file order.
fn rules<'a>(all: &[Object<'a>]) -> Result<Vec<Rule<'a>>, ImportError> {
    let mut rules: Vec<(Rule<'a>, &Object<'a>)> = Vec::new();
    // Each host's rule in `rules`, by its full name.
    let mut of_host: BTreeMap<String, usize> = BTreeMap::new();
    let mut drs: Vec<&Object> = all.iter().filter(|o| o.kind == "DestinationRule").collect();
    drs.sort_by(|a, b| a.pilot_order(b));
    for o in drs {
        let spec = spec(o)?;
        let host = spec.str("host")?.ok_or_else(|| {
            spec.error(
                &child(&spec.path, "host"),
                "a DestinationRule needs `host`, the service it applies to",
            )
        })?;
        let host = resolve(&spec, &host, &o.namespace)?;
        let policy = spec.object("trafficPolicy")?;
        let subsets = spec.list("subsets")?;
        let Some(&i) = of_host.get(&host.fqdn) else {
            of_host.insert(host.fqdn.clone(), rules.len());
            rules.push((
                Rule {
                    host,
                    spec,
                    policy,
                    subsets,
                    order: o.order,
                },
                o,
            ));
            continue;
        };
        // A later rule of the host: its new subsets join, the rest is the older one's.
        let (rule, first) = &mut rules[i];
        spec.take("host");
        if let Some(p) = policy {
            match &rule.policy {
                Some(_) => conflict(&spec, &p.path, "the host's trafficPolicy", first),
                None => rule.policy = Some(p),
            }
        }
        for s in subsets {
            let name = s
                .value
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let defined = rule
                .subsets
                .iter()
                .any(|d| d.value.get("name").and_then(Value::as_str) == Some(name));
            if defined {
                conflict(&s, &s.path, &format!("the subset {name:?}"), first);
            } else {
                rule.subsets.push(s);
            }
        }
        rule.order = rule.order.min(o.order);
    }
    let mut rules: Vec<Rule> = rules.into_iter().map(|(r, _)| r).collect();
    rules.sort_by_key(|r| r.order);
    Ok(rules)
}

/// One destination of an HTTP route.
pub(super) struct Destination<'a> {
    host: HostName,
    subset: Option<Found<String>>,
    /// The HTTP route (its timeout and retries).
    pub(super) http: Owned<'a>,
    /// The destination's entry in the route.
    entry: Owned<'a>,
    /// Its `weight`, when the route splits its traffic.
    weight: Option<Found<u32>>,
    /// The route's share of the host's requests, when some of its routes have conditions.
    share: Option<Share>,
    /// The calling service `match.sourceLabels.app` names.
    caller: Option<String>,
    /// What the route matches, in Istio's words.
    matches: Option<String>,
}

/// A route's share of its host's requests, when routes of the host have conditions (Istio
/// takes the first route that matches a request).
#[derive(Debug, Clone)]
pub(super) enum Share {
    /// A route with conditions (in Istio's words): a placeholder share, as the configuration
    /// does not say how many requests match.
    Matched(f64, String),
    /// A route without conditions: what the routes with conditions leave.
    Rest(f64),
}

/// The destinations of the VirtualServices that stand (the oldest of each host), in file
/// order.
fn routes<'a>(all: &[Object<'a>]) -> Result<Vec<Destination<'a>>, ImportError> {
    let mut vss: Vec<&Object> = all.iter().filter(|o| o.kind == "VirtualService").collect();
    vss.sort_by(|a, b| a.pilot_order(b));
    // The object that claims each host first, by its full name.
    let mut claimed: BTreeMap<String, &Object> = BTreeMap::new();
    let mut standing: Vec<(&Object, Owned)> = Vec::new();
    for o in vss {
        let spec = spec(o)?;
        let mut new = false;
        for h in spec.list("hosts")? {
            let Some(written) = h.value.as_str() else {
                return Err(h.error(&h.path, format!("expected a host name, got {}", h.value)));
            };
            let found = Found {
                value: written.to_string(),
                path: h.path.clone(),
            };
            // A gateway's host (`bookinfo.example.com`, `*`) names no service: it claims
            // nothing from the sidecars.
            let Ok(host) = resolve(&h, &found, &o.namespace) else {
                h.ledger.take(&h.path);
                new = true;
                continue;
            };
            match claimed.get(&host.fqdn) {
                Some(first) => conflict(&h, &h.path, &format!("the host {written:?}"), first),
                None => {
                    h.ledger.take(&h.path);
                    claimed.insert(host.fqdn, o);
                    new = true;
                }
            }
        }
        if new || spec.raw("hosts").is_none() {
            standing.push((o, spec));
        } else {
            // Every host of it is an older one's: the sidecars never use its routes.
            for k in ["http", "tcp", "tls"] {
                spec.skip(k, Skip::Conflict, "an older VirtualService has every host of this one (listed at its `hosts`), and the sidecars use only the oldest");
            }
        }
    }
    standing.sort_by_key(|(o, _)| o.order);
    let mut out = Vec::new();
    for (o, spec) in standing {
        out.extend(route::destinations(&spec, &o.namespace)?);
    }
    Ok(out)
}

/// An upstream of the system being built: its host and subset, the rule it has, and the
/// routes to it.
struct Target<'r, 'a> {
    host: HostName,
    subset: Option<String>,
    rule: Option<&'r Rule<'a>>,
    routes: Vec<&'r Destination<'a>>,
}

/// The upstreams and calls of `rules` and `routes`, into `system`.
fn build(rules: &[Rule], routes: &[Destination], system: &mut System) -> Result<(), ImportError> {
    let targets = targets(rules, routes)?;
    // A host's component a subset's replaces is listed, unless another upstream of the host
    // (the host itself, another subset) uses it.
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut replaced: Vec<Owned> = Vec::new();
    for t in &targets {
        let policy = upstream(t, system)?;
        used.extend(policy.used().map(|c| c.path.clone()));
        replaced.extend(policy.replaced);
    }
    for old in replaced.iter().filter(|o| !used.contains(&o.path)) {
        let what = old.path.rsplit('.').next().unwrap_or_default();
        old.ledger.skip(
            &old.path,
            Skip::Simplification,
            format!("the subset's {what} replaces it whole, as Istio merges policies"),
        );
    }
    let routed: BTreeSet<(&str, Option<&str>)> = routes
        .iter()
        .map(|d| {
            (
                d.host.fqdn.as_str(),
                d.subset.as_ref().map(|s| s.value.as_str()),
            )
        })
        .collect();
    for rule in rules {
        policy::unrouted_subsets(rule, &routed);
    }
    Ok(())
}

/// The upstreams of `rules` and `routes`, each with its routes: the hosts of the rules first,
/// as the files give them, then those only routes name. The rules, the targets and the hosts
/// routed without a subset are looked up by name, so that a mesh of thousands of hosts and
/// tens of thousands of routes costs its size, not their product.
fn targets<'r, 'a>(
    rules: &'r [Rule<'a>],
    routes: &'r [Destination<'a>],
) -> Result<Vec<Target<'r, 'a>>, ImportError> {
    let rule_of: BTreeMap<&str, &Rule> = rules
        .iter()
        .rev()
        .map(|r| (r.host.fqdn.as_str(), r))
        .collect();
    // The hosts some route sends to without naming a subset.
    let bare_routed: BTreeSet<&str> = routes
        .iter()
        .filter(|d| d.subset.is_none())
        .map(|d| d.host.fqdn.as_str())
        .collect();
    let mut targets: Vec<Target> = Vec::new();
    // Each target's place by host and subset.
    let mut at: BTreeMap<(String, Option<String>), usize> = BTreeMap::new();
    for rule in rules {
        at.entry((rule.host.fqdn.clone(), None))
            .or_insert(targets.len());
        targets.push(Target {
            host: rule.host.clone(),
            subset: None,
            rule: Some(rule),
            routes: Vec::new(),
        });
    }
    for d in routes {
        let subset = d.subset.as_ref().map(|s| s.value.clone());
        let rule = rule_of.get(d.host.fqdn.as_str()).copied();
        if let (Some(r), Some(s)) = (rule, &d.subset) {
            policy::check_subset(r, &d.entry, s)?;
        }
        let key = (d.host.fqdn.clone(), subset.clone());
        if let Some(&i) = at.get(&key) {
            targets[i].routes.push(d);
            continue;
        }
        // A rule's host routed to a subset only: the subset takes the host's place.
        let bare_key = (d.host.fqdn.clone(), None);
        let bare = at
            .get(&bare_key)
            .copied()
            .filter(|&i| targets[i].routes.is_empty());
        let target = Target {
            host: d.host.clone(),
            subset,
            rule,
            routes: vec![d],
        };
        match bare {
            Some(i) if !bare_routed.contains(d.host.fqdn.as_str()) => {
                at.remove(&bare_key);
                at.insert(key, i);
                targets[i] = target;
            }
            _ => {
                at.insert(key, targets.len());
                targets.push(target);
            }
        }
    }
    Ok(targets)
}

/// The settings of the host's service: its rule's balancer and outlier detection, or, for a
/// host only a VirtualService routes to, pilot's defaults (LEAST_REQUEST among them).
fn service_fields(t: &Target<'_, '_>, policy: &Policy<'_>) -> Result<Vec<Field>, ImportError> {
    let mut service = Vec::new();
    match (t.rule, t.routes.first()) {
        (Some(r), _) => {
            service.extend(policy::balancer(policy, &r.spec)?);
            if let Some(o) = &policy.outlier {
                service.extend(policy::outlier(o)?);
            }
        }
        (None, Some(d)) => service.push(policy::default_balancer(
            d.entry.origin(&child(&d.entry.path, "destination")),
        )),
        (None, None) => {}
    }
    Ok(service)
}

/// One upstream and its calls, into `system`; the policy it has.
fn upstream<'a>(t: &Target<'_, 'a>, system: &mut System) -> Result<Policy<'a>, ImportError> {
    let policy = match t.rule {
        Some(r) => Policy::of(r, t.subset.as_deref())?,
        None => Policy::default(),
    };
    let service = service_fields(t, &policy)?;
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
    let origin = match (t.rule, &t.subset, t.routes.first()) {
        (Some(r), Some(s), _) => policy::subset_origin(r, s),
        (Some(r), None, _) => r.spec.origin(&child(&r.spec.path, "host")),
        (None, _, Some(d)) => d.entry.origin(&d.entry.path),
        (None, _, None) => unreachable!("a host comes from a rule or a route"),
    };
    let index = system.upstreams.len();
    system.upstreams.push(Upstream {
        host: Host {
            name: t.host.short.clone(),
            namespace: t.host.namespace.clone(),
            qualified: t.host.fqdn.clone(),
            subset: t.subset.clone(),
        },
        kind: Kind::Host,
        origin: origin.clone(),
        service,
    });
    if t.routes.is_empty() {
        // No VirtualService: Istio's default route.
        let label = format!("istio: the default route to {}", t.host.short);
        let default_route = Origin::described(&origin.file, label);
        system.routes.push(Call {
            caller: None,
            upstream: index,
            matches: None,
            origin: default_route.clone(),
            destination: None,
            call: route::call_fields(None, &default_route, &limits)?,
        });
    }
    for d in &t.routes {
        let mut call = route::call_fields(Some(d), &d.http.origin(&d.http.path), &limits)?;
        call.extend(weight(d));
        system.routes.push(Call {
            caller: d.caller.clone(),
            upstream: index,
            matches: d.matches.clone(),
            origin: d.http.origin(&d.http.path),
            destination: d.subset.as_ref().map(|s| d.entry.origin(&s.path)),
            call,
        });
    }
    Ok(policy)
}

/// A split route's share of its requests, as the call's weight, and the route's own share of
/// its host's requests when routes of the host have conditions.
fn weight(d: &Destination) -> Option<Field> {
    let split = d.weight.as_ref().map(|w| f64::from(w.value) / 100.0);
    let field = |value: f64| match &d.weight {
        Some(w) => Field::from("weight", ron::float(value), d.entry.origin(&w.path)),
        None => Field::plain("weight", ron::float(value)),
    };
    match &d.share {
        // A route that takes every request of its host (the only route, with a `match`) has
        // the share it would have without one.
        Some(Share::Matched(s, _) | Share::Rest(s)) if *s >= 1.0 => split.map(|w| field(w).noted("the route's share of its requests: each request of the caller picks one call by weight")),
        None => split.map(|w| field(w).noted("the route's share of its requests: each request of the caller picks one call by weight")),
        Some(Share::Matched(s, m)) => Some(field(s * split.unwrap_or(1.0)).noted(format!(
            "placeholder: the share of the host's requests that match {m} ({}, an equal share of the host's routes), which the configuration does not say: set it to your traffic's; Istio takes the first route that matches{}",
            ron::float(*s).one_line(),
            if split.is_some() { ", and the route's weights split its share" } else { "" }
        ))),
        Some(Share::Rest(s)) => Some(field(s * split.unwrap_or(1.0)).noted(format!(
            "the requests no route with conditions takes ({} of the host's){}: Istio takes the first route that matches, and weights split only within a route",
            ron::float(*s).one_line(),
            if split.is_some() { ", split by the route's weights" } else { "" }
        ))),
    }
}
