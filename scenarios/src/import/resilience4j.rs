//! resilience4j's Spring Boot configuration (`application.yml` or `.properties`) into the
//! scenario format: each instance name is a call to a service of that name, through the
//! layers its modules configure, in the order Spring's aspects apply them.
//!
//! # Decisions
//!
//! An instance name is what a method's annotations share (`@Retry(name = "backendA")`,
//! `@CircuitBreaker(name = "backendA")`), so the instances of every module with one name make
//! one call's stack. Each instance's properties are resolved as resilience4j resolves them:
//! the instance's own, then its `baseConfig` (and that config's `baseConfig`), else the config
//! of its own name, else `configs.default`; then resilience4j's defaults. A property an
//! earlier layer overrides is listed as not imported, with the place that overrides it.
//!
//! The layers are composed as Spring Boot orders the aspects: Retry ( CircuitBreaker (
//! RateLimiter ( TimeLimiter ( Bulkhead ( call ))))), unless `retryAspectOrder`,
//! `circuitBreakerAspectOrder`, `rateLimiterAspectOrder`, `timeLimiterAspectOrder` or
//! `bulkheadAspectOrder` say otherwise (a lower order is an outer aspect). A layer inside the
//! Retry acts on every attempt; one outside it, once per call. The TimeLimiter is the call's
//! `timeout` (one attempt's) inside the Retry, its `deadline` outside.
//!
//! Semantics, not names: resilience4j retries and records every exception unless told
//! otherwise, so the Retry retries every failure resim has (timeouts, connection errors,
//! every 5xx, 429 and 409) and the breaker counts every failure; exception classes and
//! predicates are listed as not imported. A semaphore bulkhead lets any number of callers
//! wait; a thread-pool bulkhead runs `coreThreadPoolSize` tasks and queues `queueCapacity`.

use super::ledger::{Ledger, Naming, Skip};
use super::model::{Origin, System};
use super::node::{Found, Node, Owned};
use super::ron::{Field, Ron};
use super::spring::{self, DURATION_FORMS, key_of, relaxed};
use super::tree::{Doc, child};
use super::{ImportError, SourceFormat};
use serde_json::Value;
use sim_core::SimDuration;
use std::collections::BTreeSet;

mod exceptions;
mod layers;
pub(crate) mod sources;

/// How comments name Spring's paths: under `resilience4j`, from the module on.
const NAMING: Naming = Naming {
    format: SourceFormat::Resilience4j,
    label,
    fold_case: None,
};

/// A path as comments write it after `resilience4j: `.
pub(super) fn label(path: &str) -> String {
    path.strip_prefix("resilience4j.")
        .unwrap_or(path)
        .to_string()
}

/// resilience4j's modules, in the decorator order of Spring Boot's default aspect orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Module {
    Retry,
    CircuitBreaker,
    RateLimiter,
    TimeLimiter,
    Bulkhead,
    ThreadPoolBulkhead,
}

impl Module {
    const ALL: [Module; 6] = [
        Module::Retry,
        Module::CircuitBreaker,
        Module::RateLimiter,
        Module::TimeLimiter,
        Module::Bulkhead,
        Module::ThreadPoolBulkhead,
    ];

    /// The key under `resilience4j` (relaxed).
    fn key(self) -> &'static str {
        match self {
            Module::Retry => "retry",
            Module::CircuitBreaker => "circuitbreaker",
            Module::RateLimiter => "ratelimiter",
            Module::TimeLimiter => "timelimiter",
            Module::Bulkhead => "bulkhead",
            Module::ThreadPoolBulkhead => "threadpoolbulkhead",
        }
    }

    /// The aspect order property and its default in Spring Boot 3 (`Ordered.LOWEST_PRECEDENCE`
    /// minus 5 to 1); the thread-pool bulkhead is applied by the bulkhead's aspect.
    fn aspect(self) -> (Module, &'static str, i64) {
        let lowest = i64::from(i32::MAX);
        match self {
            Module::Retry => (self, "retryaspectorder", lowest - 5),
            Module::CircuitBreaker => (self, "circuitbreakeraspectorder", lowest - 4),
            Module::RateLimiter => (self, "ratelimiteraspectorder", lowest - 3),
            Module::TimeLimiter => (self, "timelimiteraspectorder", lowest - 2),
            Module::Bulkhead | Module::ThreadPoolBulkhead => {
                (Module::Bulkhead, "bulkheadaspectorder", lowest - 1)
            }
        }
    }
}

/// What resilience4j's bulkheads (both kinds) throw when they refuse a call.
pub(crate) const BULKHEAD_FULL: &str = "io.github.resilience4j.bulkhead.BulkheadFullException";
/// What its circuit breaker throws when it refuses a call.
pub(crate) const CALL_NOT_PERMITTED: &str =
    "io.github.resilience4j.circuitbreaker.CallNotPermittedException";
/// What its rate limiter throws when it refuses a call.
pub(crate) const REQUEST_NOT_PERMITTED: &str =
    "io.github.resilience4j.ratelimiter.RequestNotPermitted";
/// The exceptions resilience4j's gates throw when they refuse a call.
pub(crate) const GATE_EXCEPTIONS: [&str; 3] =
    [BULKHEAD_FULL, CALL_NOT_PERMITTED, REQUEST_NOT_PERMITTED];

/// One instance's properties in one module: the maps that give them, first wins.
pub(super) struct Chain<'a> {
    pub(super) module: Module,
    /// The instance, then its configs in the order resilience4j consults them.
    pub(super) layers: Vec<Owned<'a>>,
    /// Where the instance's own properties are (or would be).
    pub(super) at: String,
}

/// Properties renamed in resilience4j 1.0, as (today's name, the 0.x name), relaxed: files
/// written for 0.x (its Spring Boot demo among them) still say them.
const RENAMED: [(&str, &str); 6] = [
    ("slidingwindowsize", "ringbuffersizeinclosedstate"),
    (
        "permittednumberofcallsinhalfopenstate",
        "ringbuffersizeinhalfopenstate",
    ),
    ("waitdurationinopenstate", "waitinterval"),
    ("maxattempts", "maxretryattempts"),
    ("maxconcurrentcalls", "maxconcurrentcall"),
    ("maxwaitduration", "maxwaittime"),
];

impl<'a> Chain<'a> {
    /// The first layer that sets `property` (relaxed), or its 0.x name, and the key it writes.
    fn find(&self, property: &str) -> Option<(Node<'a>, &'a str)> {
        let old = RENAMED
            .iter()
            .find(|(now, _)| *now == property)
            .map(|r| r.1);
        self.layers.iter().find_map(|l| {
            key_of(l.value, property)
                .or_else(|| old.and_then(|o| key_of(l.value, o)))
                .map(|k| (l.node(), k))
        })
    }

    /// The path a property the file leaves out would have in the instance.
    pub(super) fn absent(&self, name: &str) -> String {
        child(&self.at, name)
    }

    /// Where `path` is, as comments name it.
    pub(super) fn origin(&self, path: &str) -> Origin {
        self.layers
            .first()
            .expect("a chain has its instance")
            .origin(path)
    }

    pub(super) fn u32(&self, property: &str) -> Result<Option<Found<u32>>, ImportError> {
        match self.find(property) {
            Some((n, k)) => n.u32(k),
            None => Ok(None),
        }
    }

    pub(super) fn f64(&self, property: &str) -> Result<Option<Found<f64>>, ImportError> {
        match self.find(property) {
            Some((n, k)) => n.f64(k),
            None => Ok(None),
        }
    }

    pub(super) fn bool(&self, property: &str) -> Result<Option<Found<bool>>, ImportError> {
        match self.find(property) {
            Some((n, k)) => n.bool(k),
            None => Ok(None),
        }
    }

    pub(super) fn str(&self, property: &str) -> Result<Option<Found<String>>, ImportError> {
        match self.find(property) {
            Some((n, k)) => n.str(k),
            None => Ok(None),
        }
    }

    /// A `java.time.Duration` property, as Spring reads it.
    pub(super) fn duration(
        &self,
        property: &str,
    ) -> Result<Option<Found<SimDuration>>, ImportError> {
        let Some((n, k)) = self.find(property) else {
            return Ok(None);
        };
        let path = child(&n.path, k);
        let v = n.raw(k).expect("found keys have values");
        let d = spring::duration(v)
            .ok_or_else(|| n.error(&path, format!("expected {DURATION_FORMS}, got {v}")))?;
        let d = spring::sim_duration(d).ok_or_else(|| {
            n.error(
                &path,
                format!("is longer than resim accepts ({})", SimDuration::CONFIG_MAX),
            )
        })?;
        n.take(k);
        Ok(Some(Found { value: d, path }))
    }

    /// Marks `property` (in whichever layer sets it) as left out, for `reason`.
    pub(super) fn skip(&self, property: &str, kind: Skip, reason: &str) {
        if let Some((n, k)) = self.find(property) {
            n.skip(k, kind, reason);
        }
    }

    /// Lists every property a later layer sets that an earlier one overrides (and that no
    /// other instance took).
    fn overridden(&self, ledger: &Ledger) {
        for (i, layer) in self.layers.iter().enumerate().skip(1) {
            let Some(map) = layer.value.as_object() else {
                continue;
            };
            for k in map.keys() {
                let earlier = self.layers[..i]
                    .iter()
                    .find_map(|l| key_of(l.value, &relaxed(k)).map(|w| child(&l.path, w)));
                let path = child(&layer.path, k);
                if let (Some(by), false) = (earlier, ledger.is_taken(&path)) {
                    ledger.skip(
                        &path,
                        Skip::Simplification,
                        format!("overridden by {}", ledger.label(&by)),
                    );
                }
            }
        }
    }
}

/// The system of Spring configurations: each one's instances, merged in the order of the
/// files.
pub fn read(docs: &[Doc]) -> Result<System, ImportError> {
    let (doc, replaced) = sources::environment(docs)?;
    let mut system = read_one(&doc)?;
    system.skipped.extend(replaced);
    Ok(system)
}

/// The system of one resilience4j environment (its files made one): one upstream per
/// instance name.
fn read_one(doc: &Doc) -> Result<System, ImportError> {
    let ledger = Ledger::new(NAMING);
    let root = Node::root(doc, &ledger);
    let top = key_of(&doc.root, "resilience4j")
        .and_then(|k| root.node().object(k).transpose())
        .transpose()?
        .ok_or_else(|| {
            ImportError::new(format!(
                "{}: no `resilience4j:` settings (expected resilience4j.retry, .circuitbreaker, .ratelimiter, .timelimiter, .bulkhead or .thread-pool-bulkhead)",
                doc.file
            ))
        })?;
    let modules = read_modules(&top)?;
    let order = aspect_order(&modules)?;
    let mut upstreams = Vec::new();
    let mut all = Vec::new();
    for name in instance_names(&modules) {
        let chains = modules
            .iter()
            .filter_map(|(m, node)| chain(*m, node, &name).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        upstreams.push(layers::upstream(&name, &chains, &order)?);
        all.extend(chains);
    }
    for c in &all {
        c.overridden(&ledger);
    }
    unused_configs(&modules, &ledger);
    let skipped = ledger.not_imported(doc, &|p| {
        known_reason(p)
            .unwrap_or_else(|| super::ledger::unknown("resilience4j's Spring Boot properties", p))
    });
    Ok(System::of(SourceFormat::Resilience4j, upstreams, skipped))
}

/// The modules `resilience4j` sets; a key that is none of them is listed.
fn read_modules<'a>(top: &Owned<'a>) -> Result<Vec<(Module, Owned<'a>)>, ImportError> {
    let n = top.node();
    let mut out = Vec::new();
    for m in Module::ALL {
        if let Some(k) = key_of(top.value, m.key())
            && let Some(o) = n.object(k)?
        {
            out.push((m, o));
        }
    }
    Ok(out)
}

/// Each module's place in the decorator order: outer first.
fn aspect_order(modules: &[(Module, Owned)]) -> Result<Vec<Module>, ImportError> {
    let mut ranked = Vec::new();
    for m in Module::ALL {
        let (owner, property, default) = m.aspect();
        let set = modules
            .iter()
            .find(|(o, _)| *o == owner)
            .and_then(|(_, node)| key_of(node.value, property).map(|k| (node.node(), k)));
        let order = match set {
            Some((n, k)) => {
                let path = child(&n.path, k);
                let v = n.raw(k).expect("found keys have values");
                let order = match v {
                    Value::Number(x) => x.as_i64(),
                    Value::String(s) => s.trim().parse().ok(),
                    _ => None,
                }
                .ok_or_else(|| {
                    n.error(
                        &path,
                        format!(
                            "expected an integer (Spring's Ordered: lower runs outside), got {v}"
                        ),
                    )
                })?;
                n.take(k);
                order
            }
            None => default,
        };
        ranked.push((order, m));
    }
    ranked.sort();
    Ok(ranked.into_iter().map(|(_, m)| m).collect())
}

/// Every instance name of every module, in name order.
fn instance_names(modules: &[(Module, Owned)]) -> Vec<String> {
    let mut names = BTreeSet::new();
    for (_, node) in modules {
        let instances = key_of(node.value, "instances").and_then(|k| node.value.get(k));
        let backends = key_of(node.value, "backends").and_then(|k| node.value.get(k));
        for map in [instances, backends].into_iter().flatten() {
            if let Some(map) = map.as_object() {
                names.extend(map.keys().cloned());
            }
        }
    }
    names.into_iter().collect()
}

/// The properties of instance `name` in `module`, resolved as resilience4j resolves them;
/// `None` when the module has no such instance.
fn chain<'a>(
    module: Module,
    node: &Owned<'a>,
    name: &str,
) -> Result<Option<Chain<'a>>, ImportError> {
    let n = node.node();
    let group = |g: &str| -> Result<Option<Owned<'a>>, ImportError> {
        match key_of(node.value, g) {
            Some(k) => n.object(k),
            None => Ok(None),
        }
    };
    let instances = match group("instances")? {
        Some(i) => Some(i),
        None => group("backends")?,
    };
    let configs = group("configs")?;
    let Some(instance) = instances.and_then(|i| i.node().object(name).transpose()) else {
        return Ok(None);
    };
    let instance = instance?;
    let at = instance.path.clone();
    let mut layers = vec![instance];
    let mut seen = vec![name.to_string()];
    loop {
        let last = layers
            .last()
            .expect("the instance is the first layer")
            .node();
        let next = match base_config(module, &last, configs.as_ref(), &mut seen)? {
            Some(c) => c,
            // resilience4j consults the config named after the instance, else `default`, for
            // an instance (not for a config) without a baseConfig.
            None if layers.len() == 1 && key_of(last.value, "baseconfig").is_none() => {
                match config_named(configs.as_ref(), name)? {
                    Some(c) => c,
                    None => match config_named(configs.as_ref(), "default")? {
                        Some(d) => d,
                        None => break,
                    },
                }
            }
            None => break,
        };
        layers.push(next);
    }
    Ok(Some(Chain { module, layers, at }))
}

/// The config `name` of `configs`, if any.
fn config_named<'a>(
    configs: Option<&Owned<'a>>,
    name: &str,
) -> Result<Option<Owned<'a>>, ImportError> {
    match configs {
        Some(cs) => cs.node().object(name),
        None => Ok(None),
    }
}

/// The config `last`'s `baseConfig` names, if it names one; `seen` holds the names already
/// in the chain (a name seen twice is a cycle).
fn base_config<'a>(
    module: Module,
    last: &Node<'a>,
    configs: Option<&Owned<'a>>,
    seen: &mut Vec<String>,
) -> Result<Option<Owned<'a>>, ImportError> {
    let Some(k) = key_of(last.value, "baseconfig") else {
        return Ok(None);
    };
    let b = last.str(k)?.expect("found keys have values");
    if seen.contains(&b.value) {
        let cycle = seen.join(" -> ");
        let message = format!("circular baseConfig: {cycle} leads back to {:?}", b.value);
        return Err(last.error(&b.path, message));
    }
    let found = config_named(configs, &b.value)?.ok_or_else(|| {
        let names = configs
            .and_then(|c| c.value.as_object())
            .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        last.error(&b.path, format!("names the config {:?}, which resilience4j.{}.configs does not have (it has: {names})", b.value, module.key()))
    })?;
    seen.push(b.value);
    Ok(Some(found))
}

/// Marks the configs no instance resolved to as templates nothing uses.
fn unused_configs(modules: &[(Module, Owned)], ledger: &Ledger) {
    for (_, node) in modules {
        let Some(k) = key_of(node.value, "configs") else {
            continue;
        };
        let Some(map) = node.value.get(k).and_then(Value::as_object) else {
            continue;
        };
        for (name, props) in map {
            let path = child(&child(&node.path, k), name);
            let mut used = Vec::new();
            ledger.unused(
                &path,
                props,
                &|p| super::ledger::unknown("resilience4j", p),
                &mut used,
            );
            let untouched = used.len() == 1 && used[0].0 == path;
            if untouched {
                ledger.skip(&path, Skip::NoCounterpart, "a config no imported instance uses (through baseConfig, its name or `default`)");
            }
        }
    }
}

/// Why a property nothing read is left out, for properties whose reason is known.
fn known_reason(path: &str) -> Option<(Skip, String)> {
    if !path.starts_with("resilience4j") {
        return Some((
            Skip::NoCounterpart,
            "not a resilience4j setting".to_string(),
        ));
    }
    let last = path.rsplit('.').next().unwrap_or(path);
    let last = relaxed(last.split('[').next().unwrap_or(last));
    let reason = match last.as_str() {
        "registerhealthindicator"
        | "allowhealthindicatortofail"
        | "eventconsumerbuffersize"
        | "subscribeforevents"
        | "writablestacktraceenabled"
        | "ignoreclassbindingexceptions" => {
            "monitoring and diagnostics (health indicators, events, stack traces), not behaviour"
        }
        "baseconfig" => "resolved: the properties it names are imported in this instance's place",
        "contextpropagators" | "intervalbifunction" | "consumeresultbeforeretryattempt" => {
            "Java code named by class; resim has no counterpart"
        }
        _ => return None,
    };
    Some((Skip::NoCounterpart, reason.to_string()))
}

/// A field read from `found`, or resilience4j's `default` at the place the instance would set
/// it, written with `write`.
pub(super) fn field<T>(
    c: &Chain,
    name: &str,
    found: Option<Found<T>>,
    default: T,
    absent: &str,
    write: fn(T) -> Ron,
) -> Field {
    match found {
        Some(f) => Field::from(name, write(f.value), c.origin(&f.path)),
        None => Field::from(name, write(default), c.origin(absent)).noted("resilience4j's default"),
    }
}

/// A field read from `found`, if the file sets it.
pub(super) fn set<T>(
    c: &Chain,
    name: &str,
    found: Option<Found<T>>,
    write: fn(T) -> Ron,
) -> Option<Field> {
    found.map(|f| Field::from(name, write(f.value), c.origin(&f.path)))
}

/// A number read from the file within what resilience4j accepts.
pub(super) fn within<T: PartialOrd + std::fmt::Display + Copy>(
    c: &Chain,
    found: &Option<Found<T>>,
    ok: impl Fn(T) -> bool,
    expected: &str,
) -> Result<(), ImportError> {
    match found {
        Some(f) if !ok(f.value) => {
            let layer = c.layers.first().expect("a chain has its instance").node();
            Err(layer.error(
                &f.path,
                format!("{expected}, as resilience4j requires; got {}", f.value),
            ))
        }
        _ => Ok(()),
    }
}
