//! A DestinationRule's traffic policy, and its subsets': the connection pool (Envoy's circuit
//! breakers), outlier detection, the load balancer and the retry budget, each component a
//! subset sets replacing the host's whole, as pilot merges them.

use super::Rule;
use super::route::duration;
use crate::import::ImportError;
use crate::import::ledger::Skip;
use crate::import::model::Origin;
use crate::import::node::{Found, Node, Owned};
use crate::import::ron::{self, Field, Ron};
use crate::import::tree::child;
use patterns::bulkhead::BULKHEAD_SIZE_MAX;
use serde_json::Value;
use sim_core::SimDuration;
use std::collections::BTreeSet;

/// A traffic policy's components after the subset's replaced the host's.
#[derive(Default)]
pub(super) struct Policy<'a> {
    pub(super) pool: Option<Owned<'a>>,
    pub(super) outlier: Option<Owned<'a>>,
    pub(super) balancer: Option<Owned<'a>>,
    pub(super) retry_budget: Option<Owned<'a>>,
    /// The host's components a subset's replaced.
    pub(super) replaced: Vec<Owned<'a>>,
}

/// The name of a subset entry.
fn subset_name<'v>(s: &'v Owned) -> Option<&'v str> {
    s.value.get("name").and_then(Value::as_str)
}

/// The subset `name` of `rule`.
fn subset<'r, 'a>(rule: &'r Rule<'a>, name: &str) -> Option<&'r Owned<'a>> {
    rule.subsets.iter().find(|s| subset_name(s) == Some(name))
}

/// A route naming a subset its host's rules do not define is refused, as Istio answers its
/// traffic with 503s; `entry` is the route's destination.
pub(super) fn check_subset(
    rule: &Rule,
    entry: &Owned,
    s: &Found<String>,
) -> Result<(), ImportError> {
    if subset(rule, &s.value).is_some() {
        return Ok(());
    }
    let names: Vec<&str> = rule.subsets.iter().filter_map(subset_name).collect();
    Err(entry.error(
        &s.path,
        format!(
            "names the subset {:?}, which the DestinationRule of its host does not define (it has: {}); Istio sends such traffic nowhere (503)",
            s.value,
            names.join(", ")
        ),
    ))
}

/// Where subset `name` of `rule` is defined.
pub(super) fn subset_origin(rule: &Rule, name: &str) -> Origin {
    match subset(rule, name) {
        Some(s) => s.origin(&s.path),
        None => rule.spec.origin(&rule.spec.path),
    }
}

/// Lists the subsets of `rule` no route names (their policy acts only on traffic routed to
/// them), and the labels of those routes name; `routed` holds each host and subset a route
/// names.
pub(super) fn unrouted_subsets(rule: &Rule, routed: &BTreeSet<(&str, Option<&str>)>) {
    for s in &rule.subsets {
        let routed = routed.contains(&(rule.host.fqdn.as_str(), subset_name(s)));
        if routed {
            s.skip(
                "labels",
                Skip::Simplification,
                "the subset's endpoints are its service's replicas",
            );
        } else {
            s.ledger.skip(
                &s.path,
                Skip::Simplification,
                "a subset's policy acts on the traffic routed to it, and no route of the files names this one",
            );
        }
    }
}

impl<'a> Policy<'a> {
    /// The policy of `rule`'s host, or of its subset `subset`: the subset's components replace
    /// the host's whole.
    pub(super) fn of(
        rule: &Rule<'a>,
        subset_named: Option<&str>,
    ) -> Result<Policy<'a>, ImportError> {
        let n = &rule.spec;
        n.take("host");
        n.skip(
            "exportTo",
            Skip::NoCounterpart,
            "which namespaces see the rule: every caller of the import sees every host",
        );
        n.skip(
            "workloadSelector",
            Skip::NoCounterpart,
            "the rule applies to the calling service the import writes",
        );
        let mut policy = Policy::default();
        if let Some(t) = &rule.policy {
            policy.read(t, false)?;
        }
        if let Some(s) = subset_named.and_then(|name| subset(rule, name)) {
            s.take("name");
            if let Some(t) = s.object("trafficPolicy")? {
                policy.read(&t, true)?;
            }
        }
        Ok(policy)
    }

    /// The components `t` sets replace the ones read so far, whole, as pilot merges them;
    /// `subset` says whether `t` is a subset's.
    fn read(&mut self, t: &Owned<'a>, subset: bool) -> Result<(), ImportError> {
        let mut replaced = Vec::new();
        let mut replace = |slot: &mut Option<Owned<'a>>, new: Option<Owned<'a>>| {
            if let Some(new) = new {
                if let (true, Some(old)) = (subset, slot.take()) {
                    replaced.push(old);
                }
                *slot = Some(new);
            }
        };
        replace(&mut self.pool, t.object("connectionPool")?);
        replace(&mut self.outlier, t.object("outlierDetection")?);
        replace(&mut self.balancer, t.object("loadBalancer")?);
        replace(&mut self.retry_budget, t.object("retryBudget")?);
        self.replaced.extend(replaced);
        t.skip(
            "tls",
            Skip::NoCounterpart,
            "TLS: resim's network is latency and loss",
        );
        t.skip(
            "portLevelSettings",
            Skip::NoCounterpart,
            "resim's services have no ports: the policy for every port is imported",
        );
        t.skip(
            "tunnel",
            Skip::NoCounterpart,
            "not a resilience setting resim models",
        );
        t.skip(
            "proxyProtocol",
            Skip::NoCounterpart,
            "not a resilience setting resim models",
        );
        Ok(())
    }

    /// The host's components this policy uses.
    pub(super) fn used(&self) -> impl Iterator<Item = &Owned<'a>> {
        [
            &self.pool,
            &self.outlier,
            &self.balancer,
            &self.retry_budget,
        ]
        .into_iter()
        .flatten()
    }
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

/// Istio's balancer where nothing sets one (no `loadBalancer`, or no DestinationRule for
/// the host at all: pilot gives every cluster it makes LEAST_REQUEST), from `origin`.
pub(super) fn default_balancer(origin: Origin) -> Field {
    Field::from("balancer", ron::scalar("PowerOfTwo"), origin)
        .noted("Istio's default: LEAST_REQUEST, Envoy's two random choices")
}

/// `loadBalancer` as the service's balancer (Istio's default, LEAST_REQUEST, when unset).
pub(super) fn balancer(policy: &Policy, rule: &Owned) -> Result<Option<Field>, ImportError> {
    let default = |path: &str| default_balancer(rule.origin(path));
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
    let f = Field::from("balancer", ron::scalar(picked), n.origin(&simple.path));
    Ok(Some(if picked == "PowerOfTwo" {
        f.noted("Envoy's LEAST_REQUEST compares two random replicas")
    } else {
        f
    }))
}

/// The failures in a row that eject a host: `consecutive5xxErrors` (5 by default, 0 off) or
/// `consecutiveGatewayErrors` when lower; `None` when neither ejects.
fn consecutive(o: &Owned) -> Result<Option<Field>, ImportError> {
    let n = o.node();
    let at = |k: &str| o.origin(&child(&o.path, k));
    let five = n.u32("consecutive5xxErrors")?;
    let gateway = n.u32("consecutiveGatewayErrors")?.filter(|g| g.value > 0);
    let five_on = five.as_ref().is_none_or(|f| f.value > 0);
    let field = match (&five, five_on, &gateway) {
        (_, true, Some(g)) if five.as_ref().is_none_or(|f| g.value < f.value) => {
            if let Some(f) = &five {
                n.ledger.skip(&f.path, Skip::Simplification, format!("resim counts every failure on one counter: consecutiveGatewayErrors ({}) is lower and binds first on gateway errors; a run of 500s ejects after {} in Istio", g.value, f.value));
            }
            Field::from("consecutive_failures", ron::scalar(g.value), o.origin(&g.path)).noted("resim's counter counts every failure, Envoy's gateway counter 502, 503, 504 and connection failures")
        }
        (Some(f), true, _) => {
            if let Some(g) = &gateway {
                n.ledger.skip(&g.path, Skip::Simplification, "gateway errors are 5xx too: at or above consecutive5xxErrors it never binds first, as Istio's reference says");
            }
            Field::from("consecutive_failures", ron::scalar(f.value), o.origin(&f.path))
        }
        (None, true, _) => Field::from("consecutive_failures", ron::scalar(5), at("consecutive5xxErrors")).noted("Istio's default"),
        (_, false, Some(g)) => Field::from("consecutive_failures", ron::scalar(g.value), o.origin(&g.path)).noted("consecutive5xxErrors is 0: only gateway errors eject; resim's counter counts every failure"),
        (_, false, None) => {
            n.ledger.skip(&o.path, Skip::OutOfRange, "consecutive5xxErrors is 0 and consecutiveGatewayErrors unset: Envoy ejects no host, so no `outlier` is written");
            return Ok(None);
        }
    };
    Ok(Some(field))
}

/// `outlierDetection` as the service's `outlier`, if it ejects at all.
pub(super) fn outlier(o: &Owned) -> Result<Option<Field>, ImportError> {
    let n = o.node();
    let at = |k: &str| o.origin(&child(&o.path, k));
    let Some(consecutive) = consecutive(o)? else {
        return Ok(None);
    };
    let ejection = match duration(&n, "baseEjectionTime")? {
        Some(f) => Field::from("ejection", ron::duration(f.value), o.origin(&f.path)),
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
            o.origin(&f.path),
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
pub(super) struct Sourced<T> {
    pub(super) value: T,
    /// The field's path in the file.
    pub(super) path: String,
    pub(super) source: Origin,
    pub(super) note: Option<&'static str>,
}

impl<T> Sourced<T> {
    pub(super) fn field(&self, name: &str, ron: Ron) -> Field {
        let f = Field::from(name, ron, self.source.clone());
        match self.note {
            Some(n) => f.noted(n),
            None => f,
        }
    }
}

/// The connection pool's limits, as Envoy's circuit breakers.
#[derive(Default)]
pub(super) struct Limits {
    /// Attempts in flight, when a limit is set.
    pub(super) in_flight: Option<Sourced<u32>>,
    /// Attempts waiting for a connection, when set.
    pub(super) pending: Option<Sourced<u32>>,
    /// Retries in flight at once, when set.
    pub(super) retries: Option<Sourced<u32>>,
    /// The traffic policy's `retryBudget` as `(percent, min_retry_concurrency)`, when set:
    /// it replaces `retries`.
    pub(super) budget: Option<Sourced<(f64, u32)>>,
}

/// A limit of the pool as read, clamped to what resim's bulkhead takes.
fn sourced(n: &Node, f: Found<u32>) -> Sourced<u32> {
    let big = f.value > BULKHEAD_SIZE_MAX;
    Sourced {
        value: f.value.min(BULKHEAD_SIZE_MAX),
        source: n.origin(&f.path),
        path: f.path,
        note: big.then_some("resim's bulkhead takes at most 1,000,000"),
    }
}

impl Limits {
    pub(super) fn read(pool: &Owned) -> Result<Limits, ImportError> {
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
            in_flight: in_flight.map(|f| sourced(pool, f)),
            pending: pending.map(|f| sourced(pool, f)),
            retries: retries.map(|f| sourced(pool, f)),
            budget: None,
        })
    }
}

/// `trafficPolicy.retryBudget`: retries in flight up to `percent` of the requests in flight
/// (and pending), and at least `minRetryConcurrency`, as Envoy's cluster `retry_budget`.
pub(super) fn retry_budget(b: &Owned) -> Result<Sourced<(f64, u32)>, ImportError> {
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
        source: b.origin(&b.path),
        note: match (percent.is_none(), min.is_none()) {
            (true, true) => Some("Istio's defaults: 20% and 3"),
            (true, false) => Some("Istio's default percent: 20%"),
            (false, true) => Some("Istio's default minRetryConcurrency: 3, where 0 is unset"),
            (false, false) => None,
        },
    })
}
