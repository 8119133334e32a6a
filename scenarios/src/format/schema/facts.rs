//! What the schema's enums say about themselves, so that no other module keeps a copy of
//! the fact in a match of its own: a fault's name as the file spells it, what it acts on
//! ([`FaultTarget`]) and its labels; an expectation's and a pattern layer's name.
//!
//! A new fault kind, expectation or layer is described here once: the compiler asks for it in
//! each match below (the timeline's `label` falls back on the short label), and the tests
//! below fail until a sample of it is given with its facts.

use super::{Expectation, Fault, FaultKind, Layer, Scenario};
use sim_core::SimDuration;
use std::fmt;

/// What a fault acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultTarget<'a> {
    /// A service, by name.
    Service(&'a str),
    /// A client, by name.
    Client(&'a str),
    /// A zone, from 0.
    Zone(u32),
}

/// The name of the service or client, or `zone 1`: the report's timeline shows it.
impl fmt::Display for FaultTarget<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultTarget::Service(name) | FaultTarget::Client(name) => f.write_str(name),
            FaultTarget::Zone(zone) => write!(f, "zone {zone}"),
        }
    }
}

/// A factor for a label: `×4`, `×1.5` (to a thousandth).
pub fn times(factor: f64) -> String {
    format!("×{}", round3(factor))
}

fn round3(x: f64) -> f64 {
    libm::round(x * 1000.0) / 1000.0
}

impl FaultKind {
    /// The variant's name as a file spells it (`ErrorRate`).
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Slowdown { .. } => "Slowdown",
            FaultKind::ErrorRate { .. } => "ErrorRate",
            FaultKind::CapacityDrop { .. } => "CapacityDrop",
            FaultKind::Crash { .. } => "Crash",
            FaultKind::LoadSpike { .. } => "LoadSpike",
            FaultKind::Latency { .. } => "Latency",
            FaultKind::Loss { .. } => "Loss",
            FaultKind::Partition { .. } => "Partition",
            FaultKind::CacheFlush { .. } => "CacheFlush",
            FaultKind::Poison { .. } => "Poison",
            FaultKind::Deploy { .. } => "Deploy",
            FaultKind::Pause { .. } => "Pause",
            FaultKind::ZoneFailure { .. } => "ZoneFailure",
            FaultKind::ClientErrorRate { .. } => "ClientErrorRate",
            FaultKind::TooManyRequests { .. } => "TooManyRequests",
        }
    }

    /// The name in snake case (`error_rate`): the `kind` of the report's timeline windows and
    /// of the verdict's triggers.
    pub fn snake_name(&self) -> String {
        let mut out = String::new();
        for (i, c) in self.name().char_indices() {
            if c.is_ascii_uppercase() {
                if i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        }
        out
    }

    /// The service, client or zone it acts on.
    pub fn target(&self) -> FaultTarget<'_> {
        match self {
            FaultKind::Slowdown { service, .. }
            | FaultKind::ErrorRate { service, .. }
            | FaultKind::CapacityDrop { service, .. }
            | FaultKind::Crash { service, .. }
            | FaultKind::Latency { service, .. }
            | FaultKind::Loss { service, .. }
            | FaultKind::Partition { service }
            | FaultKind::CacheFlush { service }
            | FaultKind::Poison { service, .. }
            | FaultKind::Deploy { service, .. }
            | FaultKind::Pause { service, .. }
            | FaultKind::ClientErrorRate { service, .. }
            | FaultKind::TooManyRequests { service, .. } => FaultTarget::Service(service),
            FaultKind::LoadSpike { client, .. } => FaultTarget::Client(client),
            FaultKind::ZoneFailure { zone } => FaultTarget::Zone(*zone),
        }
    }

    /// The label of the report's timeline (and so of the charts): what, where and how much
    /// (`errors api 12.5%`, `crash api (2 replicas)`, `deploy api (2 at a time)`). A
    /// periodic pause shows `duration`, the fault's.
    pub fn label(&self, duration: Option<SimDuration>) -> String {
        match self {
            FaultKind::ErrorRate {
                service,
                error_ratio,
            } => format!("errors {service} {}%", round3(100.0 * error_ratio)),
            FaultKind::Crash {
                service,
                replicas: Some(n),
            } => format!("crash {service} ({n} replicas)"),
            FaultKind::Loss {
                service,
                loss_ratio,
            } => format!("loss {service} {}%", round3(100.0 * loss_ratio)),
            FaultKind::ClientErrorRate {
                service,
                error_ratio,
            } => format!("4xx {service} {}%", round3(100.0 * error_ratio)),
            FaultKind::TooManyRequests {
                service,
                refused_ratio,
                ..
            } => format!("429 {service} {}%", round3(100.0 * refused_ratio)),
            FaultKind::Deploy { service, batch, .. } => {
                format!("deploy {service} ({batch} at a time)")
            }
            FaultKind::Pause {
                service,
                replicas,
                every,
            } => {
                let of = replicas.map_or(String::new(), |n| format!(" ({n} replicas)"));
                match every {
                    Some(p) => {
                        let d = duration.unwrap_or_default();
                        format!("pause {service}{of} {d} every {p}")
                    }
                    None => format!("pause {service}{of}"),
                }
            }
            _ => self.short_label(),
        }
    }

    /// The label of a trigger in the metastability verdict (`the last trigger ended`): what
    /// and where, with a slowdown's or a load spike's factor, and, of the ratios, only an
    /// error rate's, to a tenth of a percent (`errors api 12.3%`). The timeline's
    /// [`label`](FaultKind::label) gives every ratio, to a thousandth of a percent; the two
    /// are kept apart because both are in the book's outputs.
    pub fn short_label(&self) -> String {
        match self {
            FaultKind::Slowdown { service, factor } => {
                format!("slowdown {service} {}", times(*factor))
            }
            FaultKind::ErrorRate {
                service,
                error_ratio,
            } => format!(
                "errors {service} {}%",
                libm::round(1000.0 * error_ratio) / 10.0
            ),
            FaultKind::CapacityDrop { service, workers } => {
                format!("capacity drop {service} to {workers} workers")
            }
            FaultKind::Crash { service, .. } => format!("crash {service}"),
            FaultKind::LoadSpike { client, factor } => {
                format!("load spike {client} {}", times(*factor))
            }
            FaultKind::Latency { service, .. } => format!("latency {service}"),
            FaultKind::Loss { service, .. } => format!("loss {service}"),
            FaultKind::Partition { service } => format!("partition {service}"),
            FaultKind::CacheFlush { service } => format!("cache flush {service}"),
            FaultKind::Poison { service, tenant } => format!("poison {service} tenant {tenant}"),
            FaultKind::Deploy { service, .. } => format!("deploy {service}"),
            FaultKind::Pause { service, .. } => format!("pause {service}"),
            FaultKind::ZoneFailure { zone } => format!("zone {zone} fails"),
            FaultKind::ClientErrorRate { service, .. } => format!("4xx {service}"),
            FaultKind::TooManyRequests { service, .. } => format!("429 {service}"),
        }
    }
}

impl Fault {
    /// When the fault stops disturbing `scenario`: a deploy when its last batch has warmed
    /// up, a fault with a duration when that ends; `None` for a periodic pause (it lasts to
    /// the end of the run), a cache flush (an instant) and a fault without a duration.
    pub fn end(&self, scenario: &Scenario) -> Option<SimDuration> {
        match &self.kind {
            FaultKind::CacheFlush { .. } | FaultKind::Pause { every: Some(_), .. } => None,
            FaultKind::Deploy {
                service,
                batch,
                downtime,
                warmup,
            } => {
                let replicas = scenario.services.get(service).map_or(1, |s| s.replicas);
                Some(super::scaling::deploy_end(
                    self.at, replicas, *batch, *downtime, *warmup,
                ))
            }
            _ => self.duration.map(|d| self.at.saturating_add(d)),
        }
    }
}

impl Expectation {
    /// The variant's name as a file spells it (`GoodputAtLeast`).
    pub fn name(&self) -> &'static str {
        match self {
            Expectation::GoodputAtLeast { .. } => "GoodputAtLeast",
            Expectation::GoodputAtMost { .. } => "GoodputAtMost",
            Expectation::P99AtMost { .. } => "P99AtMost",
            Expectation::MeanWaitAtMost { .. } => "MeanWaitAtMost",
            Expectation::AmplificationAtMost { .. } => "AmplificationAtMost",
            Expectation::RecoveredWithin { .. } => "RecoveredWithin",
            Expectation::Recovers { .. } => "Recovers",
            Expectation::Metastable { .. } => "Metastable",
            Expectation::ClassGoodputAtLeast { .. } => "ClassGoodputAtLeast",
            Expectation::ClassGoodputAtMost { .. } => "ClassGoodputAtMost",
            Expectation::BlastRadiusAtMost { .. } => "BlastRadiusAtMost",
        }
    }
}

impl Layer {
    /// The variant's name as a file spells it (`Retry`).
    pub fn name(&self) -> &'static str {
        match self {
            Layer::Retry(_) => "Retry",
            Layer::Breaker(_) => "Breaker",
            Layer::Bulkhead(_) => "Bulkhead",
            Layer::Limiter(_) => "Limiter",
            Layer::Hedge(_) => "Hedge",
            Layer::Fallback(_) => "Fallback",
            Layer::Throttle(_) => "Throttle",
            Layer::AdaptiveTimeout(_) => "AdaptiveTimeout",
            Layer::Pace(_) => "Pace",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::{
        AdaptiveThrottleConfig, AdaptiveTimeoutConfig, BreakerConfig, BulkheadConfig,
        FallbackConfig, HedgeConfig, LimiterConfig, PaceConfig, RetryConfig,
    };
    use serde::de::DeserializeOwned;

    /// Every variant of `T`, as serde knows them: RON's error for a variant no enum has
    /// lists them, so a variant added to the schema shows up here without a copy of its name.
    fn variants<T: DeserializeOwned + fmt::Debug>() -> &'static [&'static str] {
        match ron::from_str::<T>("NoSuchVariant").map_err(|e| e.code) {
            Err(ron::error::Error::NoSuchEnumVariant { expected, .. }) => expected,
            other => panic!("expected RON to refuse the variant and list the others: {other:?}"),
        }
    }

    /// One scenario with a fault of each kind, in the order the schema declares them.
    const EVERY_FAULT: &str = r#"Scenario(
        name: "facts",
        duration: "60s",
        clients: {
            "web": (load: Open(rate: Constant("100/s")), call: (target: "api", timeout: "1s")),
        },
        services: {
            "api": (
                replicas: 4,
                workers: 8,
                work: Exponential(mean: "5ms"),
                cache: (hit_ratio: 0.5),
                zones: Some(3),
                restart: "1s",
            ),
        },
        faults: [
            (at: "1s", duration: "1s", kind: Slowdown(service: "api", factor: 4.0)),
            (at: "1s", duration: "1s", kind: ErrorRate(service: "api", error_ratio: 0.12345)),
            (at: "1s", duration: "1s", kind: CapacityDrop(service: "api", workers: 2)),
            (at: "1s", duration: "1s", kind: Crash(service: "api", replicas: 2)),
            (at: "1s", duration: "1s", kind: LoadSpike(client: "web", factor: 1.5)),
            (at: "1s", duration: "1s", kind: Latency(service: "api", extra: Constant(value: "1ms"))),
            (at: "1s", duration: "1s", kind: Loss(service: "api", loss_ratio: 0.12345)),
            (at: "1s", duration: "1s", kind: Partition(service: "api")),
            (at: "1s", kind: CacheFlush(service: "api")),
            (at: "1s", duration: "1s", kind: Poison(service: "api", tenant: 0)),
            (at: "1s", kind: Deploy(service: "api", batch: 2, downtime: "1s")),
            (at: "1s", duration: "300ms", kind: Pause(service: "api", replicas: 1, every: "10s")),
            (at: "1s", duration: "1s", kind: ZoneFailure(zone: 1)),
            (at: "1s", duration: "1s", kind: ClientErrorRate(service: "api", error_ratio: 0.2)),
            (at: "1s", duration: "1s", kind: TooManyRequests(service: "api", refused_ratio: 0.25, retry_after: After("2s"))),
        ],
    )"#;

    #[test]
    fn every_fault_kind_says_its_name_target_and_labels() {
        let s = crate::format::load::parse("facts.ron", EVERY_FAULT).expect("a valid scenario");
        // (name, target, timeline label, trigger label), in the schema's order.
        let facts = [
            ("Slowdown", "api", "slowdown api ×4", "slowdown api ×4"),
            ("ErrorRate", "api", "errors api 12.345%", "errors api 12.3%"),
            (
                "CapacityDrop",
                "api",
                "capacity drop api to 2 workers",
                "capacity drop api to 2 workers",
            ),
            ("Crash", "api", "crash api (2 replicas)", "crash api"),
            (
                "LoadSpike",
                "web",
                "load spike web ×1.5",
                "load spike web ×1.5",
            ),
            ("Latency", "api", "latency api", "latency api"),
            ("Loss", "api", "loss api 12.345%", "loss api"),
            ("Partition", "api", "partition api", "partition api"),
            ("CacheFlush", "api", "cache flush api", "cache flush api"),
            (
                "Poison",
                "api",
                "poison api tenant 0",
                "poison api tenant 0",
            ),
            ("Deploy", "api", "deploy api (2 at a time)", "deploy api"),
            (
                "Pause",
                "api",
                "pause api (1 replicas) 300ms every 10s",
                "pause api",
            ),
            ("ZoneFailure", "zone 1", "zone 1 fails", "zone 1 fails"),
            ("ClientErrorRate", "api", "4xx api 20%", "4xx api"),
            ("TooManyRequests", "api", "429 api 25%", "429 api"),
        ];
        assert_eq!(s.faults.len(), facts.len());
        for (f, (name, target, label, short)) in s.faults.iter().zip(facts) {
            assert_eq!(f.kind.name(), name);
            assert_eq!(f.kind.target().to_string(), target, "{name}");
            assert_eq!(f.kind.label(f.duration), label, "{name}");
            assert_eq!(f.kind.short_label(), short, "{name}");
        }
        let names: Vec<_> = s.faults.iter().map(|f| f.kind.name()).collect();
        assert_eq!(
            names,
            variants::<FaultKind>(),
            "one fault of each kind, in order"
        );
    }

    #[test]
    fn a_fault_kind_acts_on_a_client_a_zone_or_a_service() {
        let s = crate::format::load::parse("facts.ron", EVERY_FAULT).expect("a valid scenario");
        for f in &s.faults {
            let expected = match f.kind.name() {
                "LoadSpike" => FaultTarget::Client("web"),
                "ZoneFailure" => FaultTarget::Zone(1),
                _ => FaultTarget::Service("api"),
            };
            assert_eq!(f.kind.target(), expected, "{}", f.kind.name());
        }
    }

    #[test]
    fn a_fault_kinds_snake_name_is_its_timeline_kind() {
        let s = crate::format::load::parse("facts.ron", EVERY_FAULT).expect("a valid scenario");
        let snake: Vec<_> = s.faults.iter().map(|f| f.kind.snake_name()).collect();
        assert_eq!(
            snake,
            [
                "slowdown",
                "error_rate",
                "capacity_drop",
                "crash",
                "load_spike",
                "latency",
                "loss",
                "partition",
                "cache_flush",
                "poison",
                "deploy",
                "pause",
                "zone_failure",
                "client_error_rate",
                "too_many_requests",
            ]
        );
    }

    #[test]
    fn every_expectation_says_the_name_it_is_read_by() {
        let texts = [
            r#"GoodputAtLeast(client: "web", after: "1s", min_ratio: 0.5)"#,
            r#"GoodputAtMost(client: "web", after: "1s", max_ratio: 0.5)"#,
            r#"P99AtMost(client: "web", max: "1s")"#,
            r#"MeanWaitAtMost(service: "api", max: "10ms")"#,
            "AmplificationAtMost(max: 2.0)",
            r#"RecoveredWithin(client: "web", after: "1s", within: "1s")"#,
            r#"Recovers(within: "1s")"#,
            "Metastable()",
            r#"ClassGoodputAtLeast(client: "web", class: "gold", min_ratio: 0.5)"#,
            r#"ClassGoodputAtMost(client: "web", class: "gold", max_ratio: 0.5)"#,
            r#"BlastRadiusAtMost(service: "api", max_ratio: 0.5)"#,
        ];
        let mut names = Vec::new();
        for text in texts {
            let e: Expectation = ron::from_str(text).expect("a valid expectation");
            assert!(text.starts_with(&format!("{}(", e.name())), "{text}");
            names.push(e.name());
        }
        assert_eq!(names, variants::<Expectation>(), "one of each, in order");
    }

    #[test]
    fn every_layer_says_the_name_it_is_written_with() {
        let layers = [
            Layer::Retry(RetryConfig::default()),
            Layer::Breaker(BreakerConfig::default()),
            Layer::Bulkhead(BulkheadConfig::default()),
            Layer::Limiter(LimiterConfig::default()),
            Layer::Hedge(HedgeConfig::default()),
            Layer::Fallback(FallbackConfig::default()),
            Layer::Throttle(AdaptiveThrottleConfig::default()),
            Layer::AdaptiveTimeout(AdaptiveTimeoutConfig::default()),
            Layer::Pace(PaceConfig::default()),
        ];
        for layer in &layers {
            let text = ron::to_string(layer).expect("serialisable");
            assert!(text.starts_with(&format!("{}(", layer.name())), "{text}");
            let back: Layer = ron::from_str(&text).expect("read back");
            assert_eq!(back.name(), layer.name());
        }
        let names: Vec<_> = layers.iter().map(Layer::name).collect();
        assert_eq!(names, variants::<Layer>(), "one of each, in order");
    }
}
