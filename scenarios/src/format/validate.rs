//! Semantic checks of a parsed [`Scenario`]: every error names the field path and the fix.
//!
//! One file on purpose (about 700 lines): every semantic rule of a scenario with its field
//! path, in the order of the file's sections, so that the rules read as one list.
//!
//! Parsing already guarantees types, units and known field names; this module checks what
//! types cannot say: that names refer to something, that the call graph has no cycle, that
//! counts are positive, ratios lie in 0–1, distributions can be sampled and faults and
//! expectations aim at something that exists within the run, each count within its `*_MAX`
//! ([`crate::format::limits`]). Last, it checks that the run fits its
//! [`RunLimits`](crate::format::limits::RunLimits): arrival rates within the rate limit, and the
//! memory the file fixes within the memory budget (see [`crate::format::footprint`]).
//!
//! Every check is a loop over the file's own lists, never a recursion, so a file with tens of
//! thousands of services cannot overflow the stack.

use crate::format::limits::{CALLS_MAX, DURATION_MAX, LAYERS_MAX, REPLICAS_MAX};
use crate::format::overrides::segment;
use crate::format::schema::*;
use patterns::ConfigError;
use patterns::retry::RetryPolicy;
use sim_core::{Dist, SimDuration};
use std::collections::BTreeMap;

/// The most names an error lists when it says which names exist.
const NAMES_LISTED_MAX: usize = 12;

type Check = Result<(), ConfigError>;

fn err(field: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::new(field, reason)
}

/// An admission layer of a kind a service may have once (`what`), refused when one of
/// the `earlier` layers is of the same kind.
fn only_one(earlier: &[Admission], layer: &Admission, field: &str, what: &str) -> Check {
    let kind = std::mem::discriminant(layer);
    if earlier.iter().any(|e| std::mem::discriminant(e) == kind) {
        return Err(err(
            field,
            format!("a service may have one {what}; merge them"),
        ));
    }
    Ok(())
}

/// A fault's count of replicas: at least one, at most the service's `total`.
fn replicas_of(field: &str, n: u32, total: u32) -> Check {
    at_least_one(field, n)?;
    if n > total {
        return Err(err(
            field,
            format!("the service has {total} replicas, got {n}"),
        ));
    }
    Ok(())
}

fn at_least_one(field: &str, value: u32) -> Check {
    if value == 0 {
        return Err(err(field, "must be at least 1, got 0"));
    }
    Ok(())
}

fn ratio(field: &str, value: f64) -> Check {
    if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
        return Err(err(
            field,
            format!("must be a ratio between 0 and 1, got {value}"),
        ));
    }
    Ok(())
}

fn percent(field: &str, value: f64) -> Check {
    if !(value.is_finite() && (0.0..=100.0).contains(&value)) {
        return Err(err(
            field,
            format!("must be a percentage between 0 and 100, got {value}"),
        ));
    }
    Ok(())
}

fn positive(field: &str, value: f64) -> Check {
    if !(value.is_finite() && value > 0.0) {
        return Err(err(
            field,
            format!("must be a positive finite number, got {value}"),
        ));
    }
    Ok(())
}

fn nonzero(field: &str, d: SimDuration) -> Check {
    if d.is_zero() {
        return Err(err(field, "must be longer than 0s"));
    }
    clock(field, d)
}

/// At most 100 years, like every duration of a file: files are capped when they are read,
/// and scenarios built in Rust are capped here.
fn clock(field: &str, d: SimDuration) -> Check {
    if d > DURATION_MAX {
        return Err(err(
            field,
            format!("must be at most 100 years (\"100y\"), got {d}"),
        ));
    }
    Ok(())
}

/// `"a", "b", "c"` or, for long lists, `"a", "b", … (250 in all)`. Names are quoted as the
/// file writes them: they may hold commas, spaces or a final period.
fn listed<'a>(names: impl ExactSizeIterator<Item = &'a String>) -> String {
    let total = names.len();
    let shown: Vec<String> = names
        .take(NAMES_LISTED_MAX)
        .map(|n| format!("{n:?}"))
        .collect();
    if total > NAMES_LISTED_MAX {
        format!("{}, … ({total} in all)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

fn dist(field: &str, d: &Dist) -> Check {
    d.validate()
        .map_err(|e| ConfigError::new(e.field, e.reason).at(field))
}

fn known_service(field: &str, name: &str, services: &BTreeMap<String, Service>) -> Check {
    if services.contains_key(name) {
        return Ok(());
    }
    Err(err(
        field,
        format!(
            "unknown service {name:?}; known services: {}",
            listed(services.keys())
        ),
    ))
}

fn known_client(field: &str, name: &str, clients: &BTreeMap<String, Client>) -> Check {
    if clients.contains_key(name) {
        return Ok(());
    }
    Err(err(
        field,
        format!(
            "unknown client {name:?}; known clients: {}",
            listed(clients.keys())
        ),
    ))
}

fn within_run(field: &str, t: SimDuration, duration: SimDuration) -> Check {
    if t >= duration {
        return Err(err(
            field,
            format!(
                "{t} is not before the end of the run ({duration}); move it earlier or run longer"
            ),
        ));
    }
    Ok(())
}

/// Checks a whole scenario against its own [`Scenario::limits`]; the first problem found is
/// returned.
pub fn validate(s: &Scenario) -> Check {
    if s.name.trim().is_empty() {
        return Err(err("name", "must not be empty"));
    }
    nonzero("duration", s.duration)?;
    if s.duration > DURATION_MAX {
        return Err(err(
            "duration",
            format!(
                "must be at most 100 years of simulated time, got {}",
                s.duration
            ),
        ));
    }
    nonzero("bucket", s.bucket)?;
    if s.bucket > s.duration {
        return Err(err(
            "bucket",
            format!(
                "must not be longer than the run ({}), got {}",
                s.duration, s.bucket
            ),
        ));
    }
    if s.max_events == 0 {
        return Err(err("max_events", "must be at least 1, got 0"));
    }
    if s.clients.is_empty() {
        return Err(err("clients", "must name at least one client"));
    }
    if s.services.is_empty() {
        return Err(err("services", "must name at least one service"));
    }
    nodes(s)?;
    for (name, client) in &s.clients {
        let path = format!("clients.{}", segment(name));
        load(&format!("{path}.load"), &client.load)?;
        client_call(&format!("{path}.call"), &client.call, &s.services)?;
        crate::format::schema::traffic::validate_classes(
            &format!("{path}.classes"),
            &client.classes,
        )?;
        if let Some(z) = client.zone {
            zone_in_range(&format!("{path}.zone"), z, s)?;
        }
    }
    for (name, service) in &s.services {
        self::service(&format!("services.{}", segment(name)), service, &s.services)?;
    }
    cycles(&s.services)?;
    for (i, f) in s.faults.iter().enumerate() {
        fault(&format!("faults[{i}]"), f, s)?;
    }
    for (i, e) in s.expectations.iter().enumerate() {
        expectation(&format!("expectations[{i}]"), e, s)?;
    }
    crate::format::schema::isolation::check(s)?;
    if let Some(n) = &s.network {
        network(n, s)?;
    }
    s.verdict.validate().map_err(|e| e.at("verdict"))?;
    crate::format::footprint::check_rates(s, &s.limits)?;
    crate::format::footprint::check_memory(s, &s.limits)
}

/// Every client and service has a name, and a network node of its own: a client that
/// shares its name with a service is the node `clients.NAME`, which no other client or
/// service may be called.
fn nodes(s: &Scenario) -> Check {
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    let clients = s.clients.keys().map(|n| ("clients", n, s.client_node(n)));
    let services = s.services.keys().map(|n| ("services", n, n.clone()));
    for (kind, name, node) in clients.chain(services) {
        if name.is_empty() {
            return Err(err(
                kind,
                format!(
                    "a name is empty (\"\"); give each of the {kind} a name, e.g. \"{}\"",
                    if kind == "clients" { "users" } else { "api" }
                ),
            ));
        }
        let field = format!("{kind}.{}", segment(name));
        if let Some(other) = taken.insert(node.clone(), field.clone()) {
            return Err(err(
                field,
                format!(
                    "its network node would be called {node:?}, like that of {other}; rename one of them"
                ),
            ));
        }
    }
    Ok(())
}

/// The network section: sim-net's own checks and node names that exist. A service's
/// `latency` and the scenario's network faults are sim-net settings too (see the world's
/// network module), so they may be combined with it.
fn network(n: &NetworkConfig, s: &Scenario) -> Check {
    let mut net: sim_net::Network<()> = sim_net::Network::new(sim_core::Seed(0));
    for name in s.clients.keys().chain(s.services.keys()) {
        net.add_node(name, slotmap::Key::null()).map_err(|e| {
            err(
                format!("services.{}", segment(name)),
                format!(
                    "{}; clients and services share one namespace on the network",
                    e.reason
                ),
            )
        })?;
    }
    net.configure(n).map_err(|e| e.at("network"))
}

fn load(path: &str, l: &Load) -> Check {
    match l {
        Load::Open { rate } => schedule(&format!("{path}.rate"), rate),
        Load::Closed { users, think } => {
            at_least_one(&format!("{path}.users"), *users)?;
            dist(&format!("{path}.think"), think)
        }
        Load::OneShot { users, spread } => {
            at_least_one(&format!("{path}.users"), *users)?;
            clock(&format!("{path}.spread"), *spread)
        }
    }
}

fn schedule(path: &str, s: &Schedule) -> Check {
    match s {
        Schedule::Constant(_) => Ok(()),
        Schedule::Steps(steps) => {
            if steps.is_empty() {
                return Err(err(path, "must list at least one step"));
            }
            for (i, step) in steps.iter().enumerate() {
                clock(&format!("{path}[{i}].at"), step.at)?;
            }
            for (i, pair) in steps.windows(2).enumerate() {
                if pair[1].at <= pair[0].at {
                    return Err(err(
                        format!("{path}[{}].at", i + 1),
                        format!(
                            "steps must be in increasing time, got {} after {}",
                            pair[1].at, pair[0].at
                        ),
                    ));
                }
            }
            Ok(())
        }
        Schedule::Ramp { start, end, .. } | Schedule::Spike { start, end, .. } => {
            clock(&format!("{path}.start"), *start)?;
            clock(&format!("{path}.end"), *end)?;
            if end <= start {
                return Err(err(
                    format!("{path}.end"),
                    format!("must be after start ({start}), got {end}"),
                ));
            }
            Ok(())
        }
    }
}

/// A client's call: a call, without a pool, made on every request.
fn client_call(path: &str, c: &Call, services: &BTreeMap<String, Service>) -> Check {
    call(path, c, services)?;
    if c.pool.is_some() {
        return Err(err(
            format!("{path}.pool"),
            "a client's call has no connection pool: put the pool on a service's call",
        ));
    }
    if c.call_ratio != 1.0 {
        return Err(err(
            format!("{path}.call_ratio"),
            format!(
                "a client's call is made on every request, got {}; lower the client's rate instead, or put the share on a service's call",
                c.call_ratio
            ),
        ));
    }
    Ok(())
}

fn call(path: &str, c: &Call, services: &BTreeMap<String, Service>) -> Check {
    known_service(&format!("{path}.target"), &c.target, services)?;
    if let Some(t) = c.timeout {
        nonzero(&format!("{path}.timeout"), t)?;
    }
    if let Some(d) = c.deadline {
        nonzero(&format!("{path}.deadline"), d)?;
    }
    if c.stack.len() > LAYERS_MAX {
        return Err(err(
            format!("{path}.stack"),
            format!(
                "may hold at most {LAYERS_MAX} layers, got {}",
                c.stack.len()
            ),
        ));
    }
    if !(c.weight.is_finite() && c.weight >= 0.0) {
        return Err(err(
            format!("{path}.weight"),
            format!("must be a finite number, not negative, got {}", c.weight),
        ));
    }
    if let Some(f) = &c.fan_out {
        crate::format::schema::distributed::validate_fan_out(&format!("{path}.fan_out"), f)?;
    }
    if let Some(p) = &c.pool {
        let ppath = format!("{path}.pool");
        p.validate().map_err(|e| e.at(&ppath))?;
        clock(&format!("{ppath}.checkout_timeout"), p.checkout_timeout)?;
        clock(&format!("{ppath}.connect_time"), p.connect_time)?;
        clock(&format!("{ppath}.idle_timeout"), p.idle_timeout)?;
    }
    let mut retries = 0;
    for (i, layer) in c.stack.iter().enumerate() {
        let lpath = format!("{path}.stack[{i}]");
        match layer {
            Layer::Retry(r) => {
                retries += 1;
                if retries > 1 {
                    return Err(err(lpath, "a stack may hold one Retry layer; merge them"));
                }
                RetryPolicy::new(r.clone()).map_err(|e| e.at(&lpath))?;
            }
            Layer::Breaker(b) => b.validate().map_err(|e| e.at(&lpath))?,
            Layer::Bulkhead(b) => b.validate().map_err(|e| e.at(&lpath))?,
            Layer::Limiter(l) => l.validate().map_err(|e| e.at(&lpath))?,
            Layer::Throttle(t) => t.validate().map_err(|e| e.at(&lpath))?,
            Layer::Fallback(f) => {
                if c.stack[..i].iter().any(|l| matches!(l, Layer::Fallback(_))) {
                    return Err(err(
                        lpath,
                        "a stack may hold one Fallback layer; merge them",
                    ));
                }
                f.validate().map_err(|e| e.at(&lpath))?
            }
            Layer::Hedge(h) => {
                if c.stack[..i].iter().any(|l| matches!(l, Layer::Hedge(_))) {
                    return Err(err(lpath, "a stack may hold one Hedge layer; merge them"));
                }
                h.validate().map_err(|e| e.at(&lpath))?
            }
            Layer::AdaptiveTimeout(a) => {
                if c.stack[..i]
                    .iter()
                    .any(|l| matches!(l, Layer::AdaptiveTimeout(_)))
                {
                    return Err(err(
                        lpath,
                        "a stack may hold one AdaptiveTimeout layer; merge them",
                    ));
                }
                if let Some(t) = c.timeout {
                    return Err(err(
                        lpath,
                        format!(
                            "an adaptive timeout takes the place of the call's timeout ({t}); leave `timeout` out or drop the layer"
                        ),
                    ));
                }
                a.validate().map_err(|e| e.at(&lpath))?
            }
            Layer::Pace(p) => {
                if c.stack[..i].iter().any(|l| matches!(l, Layer::Pace(_))) {
                    return Err(err(lpath, "a stack may hold one Pace layer; merge them"));
                }
                p.validate().map_err(|e| e.at(&lpath))?;
                let target = &services[&c.target];
                if !target
                    .admission
                    .iter()
                    .any(|a| matches!(a, Admission::Limiter(_)))
                {
                    return Err(err(
                        lpath,
                        format!(
                            "service {:?} has no admission Limiter, so its replies carry no quota to pace on; add `admission: [Limiter(..)]` to it or drop the layer",
                            c.target
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn service(path: &str, s: &Service, services: &BTreeMap<String, Service>) -> Check {
    at_least_one(&format!("{path}.replicas"), s.replicas)?;
    if s.replicas > REPLICAS_MAX {
        return Err(err(
            format!("{path}.replicas"),
            format!("must be at most {REPLICAS_MAX}, got {}", s.replicas),
        ));
    }
    at_least_one(&format!("{path}.workers"), s.workers)?;
    queue(&format!("{path}.queue"), &s.queue)?;
    dist(&format!("{path}.work"), &s.work)?;
    if !(s.work_per_in_flight.is_finite() && s.work_per_in_flight >= 0.0) {
        return Err(err(
            format!("{path}.work_per_in_flight"),
            format!(
                "must be a finite number, not negative, got {}",
                s.work_per_in_flight
            ),
        ));
    }
    service_calls(path, s, services)?;
    for (i, a) in s.admission.iter().enumerate() {
        admission(path, s, i, a, services)?;
    }
    upstream_protections(path, s)?;
    if let Some(c) = &s.cache {
        cache(&format!("{path}.cache"), c)?;
    }
    if let Some(l) = &s.latency {
        dist(&format!("{path}.latency"), l)?;
    }
    if let Some(r) = s.restart {
        clock(&format!("{path}.restart"), r)?;
    }
    if let Some(r) = s.retry_after {
        clock(&format!("{path}.retry_after"), r)?;
    }
    if let Some(c) = &s.cache {
        clock(&format!("{path}.cache.warmup"), c.warmup)?;
    }
    if let Some(st) = &s.store {
        st.validate().map_err(|e| e.at(&format!("{path}.store")))?;
    }
    scaling(path, s)?;
    capacity_events(path, s)
}

/// A service's queue (`path` is `services.NAME.queue`): its capacity and discipline.
fn queue(path: &str, q: &QueueConfig) -> Check {
    if q.capacity == Some(0) {
        return Err(err(
            format!("{path}.capacity"),
            "must be at least 1, got 0 (leave it out for the default, or write None for unbounded)",
        ));
    }
    match &q.discipline {
        Discipline::Fifo | Discipline::Lifo | Discipline::Priority => Ok(()),
        Discipline::AdaptiveLifo { threshold } => {
            nonzero(&format!("{path}.discipline.threshold"), *threshold)
        }
        Discipline::CoDel {
            target, interval, ..
        }
        | Discipline::CoDelRfc { target, interval } => {
            nonzero(&format!("{path}.discipline.target"), *target)?;
            clock(&format!("{path}.discipline.interval"), *interval)?;
            if interval <= target {
                return Err(err(
                    format!("{path}.discipline.interval"),
                    format!("must be longer than target ({target}), got {interval}"),
                ));
            }
            if let Discipline::CoDelRfc { target, interval } = &q.discipline {
                patterns::shedder::CoDelConfig {
                    target: *target,
                    interval: *interval,
                    ..Default::default()
                }
                .validate()
                .map_err(|e| e.at(&format!("{path}.discipline")))?;
            }
            Ok(())
        }
    }
}

/// A service's calls downstream: how many, each call, its connection limit, and the stages
/// they run in ([`crate::format::schema::stages`]).
fn service_calls(path: &str, s: &Service, services: &BTreeMap<String, Service>) -> Check {
    if s.calls.len() > CALLS_MAX {
        return Err(err(
            format!("{path}.calls"),
            format!("may list at most {CALLS_MAX} calls, got {}", s.calls.len()),
        ));
    }
    for (i, c) in s.calls.iter().enumerate() {
        call(&format!("{path}.calls[{i}]"), c, services)?;
    }
    if let Some(m) = s.max_connections {
        at_least_one(&format!("{path}.max_connections"), m)?;
    }
    crate::format::schema::stages::validate(path, s)
}

/// The service's `i`th admission layer `a` (`path` is the service's).
fn admission(
    path: &str,
    s: &Service,
    i: usize,
    a: &Admission,
    services: &BTreeMap<String, Service>,
) -> Check {
    let apath = format!("{path}.admission[{i}]");
    match a {
        Admission::Limiter(l) => l.validate().map_err(|e| e.at(&apath)),
        Admission::Concurrency(c) => {
            only_one(&s.admission[..i], a, &apath, "Concurrency limit")?;
            c.validate().map_err(|e| e.at(&apath))
        }
        Admission::Pid {
            interval,
            controller,
        } => {
            nonzero(&format!("{apath}.interval"), *interval)?;
            controller
                .validate()
                .map_err(|e| e.at(&format!("{apath}.controller")))
        }
        Admission::RateLimit(k) => crate::format::schema::traffic::validate_keyed_limit(&apath, k),
        Admission::Priority(p) => p.validate().map_err(|e| e.at(&apath)),
        Admission::Distributed(d) => crate::format::schema::distributed::validate_limiter(
            &apath,
            own_name(path),
            d,
            services,
        ),
        Admission::TenantBulkhead(b) => {
            only_one(&s.admission[..i], a, &apath, "TenantBulkhead")?;
            b.validate().map_err(|e| e.at(&apath))
        }
    }
}

/// What the service's callers use to judge and spare it: outlier ejection, idempotency keys,
/// health checks.
fn upstream_protections(path: &str, s: &Service) -> Check {
    if let Some(o) = &s.outlier {
        at_least_one(
            &format!("{path}.outlier.consecutive_failures"),
            o.consecutive_failures,
        )?;
        nonzero(&format!("{path}.outlier.ejection"), o.ejection)?;
        percent(
            &format!("{path}.outlier.max_ejection_percent"),
            o.max_ejection_percent,
        )?;
    }
    if let Some(i) = &s.idempotency {
        let ipath = format!("{path}.idempotency");
        i.validate().map_err(|e| e.at(&ipath))?;
        if i.in_flight == patterns::idempotency::InFlightPolicy::Wait {
            return Err(err(
                format!("{ipath}.in_flight"),
                "waiting for the first request's result is not simulated; use Conflict",
            ));
        }
    }
    if let Some(h) = &s.health_check {
        nonzero(&format!("{path}.health_check.interval"), h.interval)?;
        nonzero(&format!("{path}.health_check.timeout"), h.timeout)?;
        at_least_one(
            &format!("{path}.health_check.unhealthy_threshold"),
            h.unhealthy_threshold,
        )?;
        at_least_one(
            &format!("{path}.health_check.healthy_threshold"),
            h.healthy_threshold,
        )?;
    }
    Ok(())
}

/// A service's cache (`path` is `services.NAME.cache`), but for its warmup, which is checked
/// with the service's other clocks.
fn cache(path: &str, c: &Cache) -> Check {
    ratio(&format!("{path}.hit_ratio"), c.hit_ratio)?;
    at_least_one(&format!("{path}.keys"), c.keys)?;
    if let Some(co) = &c.coalesce {
        co.validate()
            .map_err(|e| e.at(&format!("{path}.coalesce")))?;
    }
    if let Some(ttl) = c.ttl {
        nonzero(&format!("{path}.ttl"), ttl)?;
    }
    if let Some(x) = &c.xfetch {
        if c.ttl.is_none() {
            return Err(err(
                format!("{path}.xfetch"),
                "refreshes entries before they expire, but the cache has no ttl; \
                 add `ttl: \"10s\"` to the cache or remove xfetch",
            ));
        }
        if !(x.beta.is_finite() && x.beta > 0.0 && x.beta <= 100.0) {
            return Err(err(
                format!("{path}.xfetch.beta"),
                format!(
                    "must be in (0, 100] (1 is the usual choice), got {}",
                    x.beta
                ),
            ));
        }
    }
    Ok(())
}

/// A service's zones and liveness probes ([`crate::format::schema::capacity`]).
fn capacity_events(path: &str, s: &Service) -> Check {
    if let Some(z) = s.zones {
        crate::format::schema::capacity::validate_zones(z, s.replicas).map_err(|e| e.at(path))?;
    }
    if let Some(l) = &s.liveness {
        let lpath = format!("{path}.liveness");
        l.validate().map_err(|e| e.at(&lpath))?;
        clock(&format!("{lpath}.period"), l.period)?;
        clock(&format!("{lpath}.timeout"), l.timeout)?;
    }
    Ok(())
}

/// A service's autoscaler and cold start ([`crate::format::schema::scaling`]).
fn scaling(path: &str, s: &Service) -> Check {
    if let Some(a) = &s.autoscale {
        let apath = format!("{path}.autoscale");
        a.validate().map_err(|e| e.at(&apath))?;
        if !(a.min_replicas..=a.max_replicas).contains(&s.replicas) {
            return Err(err(
                format!("{path}.replicas"),
                format!(
                    "the replicas it starts with must lie within autoscale's [min_replicas, max_replicas] = [{}, {}], got {}",
                    a.min_replicas, a.max_replicas, s.replicas
                ),
            ));
        }
        if a.max_replicas > REPLICAS_MAX {
            return Err(err(
                format!("{apath}.max_replicas"),
                format!("must be at most {REPLICAS_MAX}, got {}", a.max_replicas),
            ));
        }
        for (name, d) in [
            ("period", a.period),
            ("delay", a.delay),
            ("scale_out_cooldown", a.scale_out_cooldown),
            ("scale_in_cooldown", a.scale_in_cooldown),
            ("scale_in_stabilisation", a.scale_in_stabilisation),
            ("startup", a.startup),
            ("drain", a.drain),
        ] {
            clock(&format!("{apath}.{name}"), d)?;
        }
    }
    if let Some(c) = &s.cold_start {
        let cpath = format!("{path}.cold_start");
        c.validate().map_err(|e| e.at(&cpath))?;
        clock(&format!("{cpath}.warmup"), c.warmup)?;
    }
    Ok(())
}

/// Finds a cycle in the call graph by depth-first search in name order, so the same file
/// always reports the same cycle. The search keeps its own stack (a call chain may be tens of
/// thousands of services long, deeper than the thread's stack would allow a recursion).
/// The service name of a path `services.NAME`.
fn own_name(path: &str) -> &str {
    path.strip_prefix("services.").unwrap_or(path)
}

fn cycles(services: &BTreeMap<String, Service>) -> Check {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let names: Vec<&String> = services.keys().collect();
    let nodes: Vec<&Service> = services.values().collect();
    let index: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut marks = vec![Mark::New; names.len()];
    // The path from the root: each service with the index of its next call to follow.
    let mut path: Vec<(usize, usize)> = Vec::new();
    for root in 0..names.len() {
        if marks[root] != Mark::New {
            continue;
        }
        marks[root] = Mark::OnPath;
        path.push((root, 0));
        while let Some(top) = path.last_mut() {
            let (i, k) = *top;
            let Some(c) = nodes[i].calls.get(k) else {
                marks[i] = Mark::Done;
                path.pop();
                continue;
            };
            top.1 += 1;
            let j = index[c.target.as_str()];
            match marks[j] {
                Mark::OnPath => {
                    let start = path.iter().position(|&(p, _)| p == j).unwrap_or(0);
                    let mut chain: Vec<&str> = path[start..]
                        .iter()
                        .map(|&(p, _)| names[p].as_str())
                        .collect();
                    chain.push(names[j]);
                    return Err(err(
                        format!("services.{}.calls[{k}].target", segment(names[i])),
                        format!(
                            "the call graph has a cycle ({}); a request would never finish",
                            shown_chain(&chain)
                        ),
                    ));
                }
                Mark::New => {
                    marks[j] = Mark::OnPath;
                    path.push((j, 0));
                }
                Mark::Done => {}
            }
        }
    }
    Ok(())
}

/// `a -> b -> a`, or its two ends for a long cycle.
fn shown_chain(chain: &[&str]) -> String {
    if chain.len() <= NAMES_LISTED_MAX {
        return chain.join(" -> ");
    }
    let half = NAMES_LISTED_MAX / 2;
    format!(
        "{} -> … -> {}, {} services",
        chain[..half].join(" -> "),
        chain[chain.len() - half..].join(" -> "),
        chain.len() - 1
    )
}

fn fault(path: &str, f: &Fault, s: &Scenario) -> Check {
    within_run(&format!("{path}.at"), f.at, s.duration)?;
    if let Some(d) = f.duration {
        nonzero(&format!("{path}.duration"), d)?;
    }
    let kpath = format!("{path}.kind");
    // What it acts on first: the checks of each kind below may look it up.
    match f.kind.target() {
        FaultTarget::Service(name) => {
            known_service(&format!("{kpath}.service"), name, &s.services)?
        }
        FaultTarget::Client(name) => known_client(&format!("{kpath}.client"), name, &s.clients)?,
        FaultTarget::Zone(zone) => zone_in_range(&format!("{kpath}.zone"), zone, s)?,
    }
    match &f.kind {
        FaultKind::Slowdown { factor, .. } => positive(&format!("{kpath}.factor"), *factor),
        FaultKind::ErrorRate { error_ratio, .. } => {
            ratio(&format!("{kpath}.error_ratio"), *error_ratio)
        }
        FaultKind::CapacityDrop { service, workers } => {
            let full = s.services[service].workers;
            if *workers >= full {
                return Err(err(
                    format!("{kpath}.workers"),
                    format!(
                        "must be below the service's {full} workers to drop capacity, got {workers}"
                    ),
                ));
            }
            Ok(())
        }
        FaultKind::Crash { service, replicas } => {
            if let Some(n) = replicas {
                replicas_of(
                    &format!("{kpath}.replicas"),
                    *n,
                    s.services[service].replicas,
                )?;
            }
            Ok(())
        }
        FaultKind::LoadSpike { client, factor } => {
            if !matches!(s.clients[client].load, Load::Open { .. }) {
                return Err(err(
                    format!("{kpath}.client"),
                    format!(
                        "client {client:?} is closed-loop; a load spike needs an open-loop client"
                    ),
                ));
            }
            positive(&format!("{kpath}.factor"), *factor)
        }
        FaultKind::Latency { extra, .. } => dist(&format!("{kpath}.extra"), extra),
        FaultKind::Loss { loss_ratio, .. } => ratio(&format!("{kpath}.loss_ratio"), *loss_ratio),
        FaultKind::Partition { .. } | FaultKind::Poison { .. } => Ok(()),
        FaultKind::Deploy {
            service,
            batch,
            downtime,
            warmup,
        } => {
            if f.duration.is_some() {
                return Err(err(
                    format!("{path}.duration"),
                    "a deploy's length follows from its batches, downtime and warmup; leave `duration` out",
                ));
            }
            let total = s.services[service].replicas;
            at_least_one(&format!("{kpath}.batch"), *batch)?;
            if *batch > total {
                return Err(err(
                    format!("{kpath}.batch"),
                    format!(
                        "the service has {total} replicas, got a batch of {batch}; restart at most {total} at a time"
                    ),
                ));
            }
            nonzero(&format!("{kpath}.downtime"), *downtime)?;
            clock(&format!("{kpath}.warmup"), *warmup)
        }
        FaultKind::CacheFlush { service } => {
            if s.services[service].cache.is_none() {
                return Err(err(
                    format!("{kpath}.service"),
                    format!(
                        "service {service:?} has no cache to flush; add `cache: (hit_ratio: ..)` to it"
                    ),
                ));
            }
            Ok(())
        }
        FaultKind::Pause {
            service,
            replicas,
            every,
        } => {
            let Some(d) = f.duration else {
                return Err(err(
                    format!("{path}.duration"),
                    "a pause needs a `duration` (how long the world stops, e.g. \"300ms\")",
                ));
            };
            if let Some(n) = replicas {
                replicas_of(
                    &format!("{kpath}.replicas"),
                    *n,
                    s.services[service].replicas,
                )?;
            }
            if let Some(p) = every {
                clock(&format!("{kpath}.every"), *p)?;
                crate::format::schema::capacity::validate_every(*p, d).map_err(|e| e.at(&kpath))?;
            }
            Ok(())
        }
        FaultKind::ZoneFailure { .. } => {
            if f.duration.is_none() {
                return Err(err(
                    format!("{path}.duration"),
                    "a zone failure needs a `duration` (its replicas restart after it)",
                ));
            }
            Ok(())
        }
        FaultKind::ClientErrorRate { error_ratio, .. } => {
            ratio(&format!("{kpath}.error_ratio"), *error_ratio)
        }
        FaultKind::TooManyRequests {
            refused_ratio,
            retry_after,
            ..
        } => {
            ratio(&format!("{kpath}.refused_ratio"), *refused_ratio)?;
            retry_after.validate(&format!("{kpath}.retry_after"), s.duration)
        }
    }
}

/// A zone named by a client or a fault is one of the zones some service spreads over.
fn zone_in_range(field: &str, zone: u32, s: &Scenario) -> Check {
    let zones = s.services.values().filter_map(|v| v.zones).max();
    match zones {
        None => Err(err(
            field,
            format!("no service has `zones`, got zone {zone}; give the services `zones: Some(3)`"),
        )),
        Some(n) if zone >= n => Err(err(
            field,
            format!(
                "must be below {n}, the most zones of any service (zones count from 0), got {zone}"
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// A goodput window is counted in whole report buckets (`[after / bucket, until / bucket)`,
/// by the bucket a request was offered in); one that holds none would judge no request at
/// all. Any bucket no wider than the window puts a bucket boundary inside it.
fn whole_buckets(field: &str, after: SimDuration, until: SimDuration, s: &Scenario) -> Check {
    let bucket = s.bucket.as_nanos();
    let buckets = s.duration.as_nanos().div_ceil(bucket);
    let from = after.as_nanos() / bucket;
    let to = (until.as_nanos() / bucket).min(buckets);
    if to <= from {
        return Err(err(
            field,
            format!(
                "the window from {after} to {until} holds no whole report bucket of {} \
                 (windows are counted in whole buckets), so no request would be judged; use a \
                 bucket of at most {} (`bucket`, or --bucket) or a wider window",
                s.bucket,
                until - after
            ),
        ));
    }
    Ok(())
}

/// An expectation's window from `after` to `until` (or the end): within the run, in order,
/// in whole report buckets.
fn window(path: &str, after: SimDuration, until: Option<SimDuration>, s: &Scenario) -> Check {
    within_run(&format!("{path}.after"), after, s.duration)?;
    let Some(u) = until else { return Ok(()) };
    clock(&format!("{path}.until"), u)?;
    if u <= after {
        return Err(err(
            format!("{path}.until"),
            format!("must be after `after` ({after}), got {u}"),
        ));
    }
    whole_buckets(&format!("{path}.until"), after, u, s)
}

fn expectation(path: &str, e: &Expectation, s: &Scenario) -> Check {
    let cl = |name: &str| known_client(&format!("{path}.client"), name, &s.clients);
    match e {
        Expectation::GoodputAtLeast {
            client,
            after,
            until,
            min_ratio: r,
        }
        | Expectation::GoodputAtMost {
            client,
            after,
            until,
            max_ratio: r,
        } => {
            cl(client)?;
            window(path, *after, *until, s)?;
            let name = if matches!(e, Expectation::GoodputAtLeast { .. }) {
                "min_ratio"
            } else {
                "max_ratio"
            };
            ratio(&format!("{path}.{name}"), *r)
        }
        Expectation::P99AtMost { client, max } => {
            cl(client)?;
            nonzero(&format!("{path}.max"), *max)
        }
        Expectation::MeanWaitAtMost { service, max } => {
            known_service(&format!("{path}.service"), service, &s.services)?;
            nonzero(&format!("{path}.max"), *max)
        }
        Expectation::AmplificationAtMost { max } => positive(&format!("{path}.max"), *max),
        Expectation::RecoveredWithin {
            client,
            after,
            within,
            min_ratio,
        } => {
            cl(client)?;
            within_run(&format!("{path}.after"), *after, s.duration)?;
            nonzero(&format!("{path}.within"), *within)?;
            ratio(&format!("{path}.min_ratio"), *min_ratio)
        }
        Expectation::Recovers { client, .. } | Expectation::Metastable { client } => {
            if let Some(c) = client {
                cl(c)?;
            }
            crate::format::verdict::validate_expectation(path, client.is_some(), s)?;
            match e {
                Expectation::Recovers { within, .. } => nonzero(&format!("{path}.within"), *within),
                _ => Ok(()),
            }
        }
        Expectation::ClassGoodputAtLeast {
            client,
            class,
            min_ratio: r,
        }
        | Expectation::ClassGoodputAtMost {
            client,
            class,
            max_ratio: r,
        } => {
            cl(client)?;
            let classes = &s.clients[client].classes;
            if !classes.iter().any(|c| &c.name == class) {
                let names: Vec<String> = classes.iter().map(|c| c.name.clone()).collect();
                return Err(err(
                    format!("{path}.class"),
                    if names.is_empty() {
                        format!(
                            "client {client:?} declares no classes; add `classes: [..]` to it or use GoodputAtLeast/GoodputAtMost"
                        )
                    } else {
                        format!(
                            "unknown class {class:?} of client {client:?}; its classes: {}",
                            listed(names.iter())
                        )
                    },
                ));
            }
            let name = if matches!(e, Expectation::ClassGoodputAtLeast { .. }) {
                "min_ratio"
            } else {
                "max_ratio"
            };
            ratio(&format!("{path}.{name}"), *r)
        }
        Expectation::BlastRadiusAtMost { service, max_ratio } => {
            crate::format::schema::isolation::check_expectation(path, service, s)?;
            ratio(&format!("{path}.max_ratio"), *max_ratio)
        }
    }
}
