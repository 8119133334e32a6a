//! The scenario reference (`book/src/reference.md`) names every field and variant a scenario
//! file may hold, and nothing else.
//!
//! The names come from the deserializer itself, not from a list kept by hand: a probe with an
//! unknown field or variant makes serde answer with every name it accepts. A type the file
//! format reaches is listed below with its probe; its section in the reference (the heading
//! `### Name`) has a table whose first column holds each of those names in backticks, and
//! `Variant.field` for the fields of a struct-like variant. A field added to the code and not
//! to the reference fails here, and so does a reference row the code no longer accepts.

use ron::error::Error;
use serde::de::DeserializeOwned;
use std::collections::BTreeSet;

const PROBE: &str = "zzz_probe";

/// What the deserializer of a type says about an input.
type Probe = fn(&str) -> Option<Error>;

fn probe<T: DeserializeOwned>(text: &str) -> Option<Error> {
    ron::from_str::<T>(text).err().map(|e| e.code)
}

/// The kinds of types in the format.
#[derive(Clone, Copy)]
enum Kind {
    /// A struct: `(field: ..)`.
    Struct,
    /// An externally tagged enum: `Variant`, `Variant(..)`, `Variant(field: ..)`.
    Enum,
    /// An internally tagged enum: `(kind: "variant", field: ..)`.
    Tagged,
}

/// Every type of the format, by the name its reference section uses.
fn types() -> Vec<(&'static str, Kind, Probe)> {
    use Kind::*;
    use patterns::{backoff, breaker, budget, concurrency, limiter, shedder};
    use scenarios::format::schema as s;
    vec![
        ("Scenario", Struct, probe::<s::Scenario>),
        ("Client", Struct, probe::<s::Client>),
        ("Load", Enum, probe::<s::Load>),
        ("RequestClass", Struct, probe::<s::RequestClass>),
        ("Priority", Enum, probe::<s::Priority>),
        ("Tenants", Struct, probe::<s::Tenants>),
        ("Popularity", Enum, probe::<s::Popularity>),
        ("Schedule", Enum, probe::<s::Schedule>),
        ("Step", Struct, probe::<s::Step>),
        ("Dist", Enum, probe::<sim_core::Dist>),
        ("Component", Struct, probe::<sim_core::sample::Component>),
        ("Call", Struct, probe::<s::Call>),
        ("CallSafety", Enum, probe::<s::CallSafety>),
        ("Layer", Enum, probe::<s::Layer>),
        ("Retry", Struct, probe::<s::RetryConfig>),
        ("Backoff", Struct, probe::<backoff::BackoffConfig>),
        ("Strategy", Enum, probe::<backoff::Strategy>),
        ("Jitter", Enum, probe::<backoff::Jitter>),
        ("Budget", Enum, probe::<budget::BudgetConfig>),
        (
            "ThrottlingBudget",
            Struct,
            probe::<budget::ThrottlingConfig>,
        ),
        ("WindowBudget", Struct, probe::<budget::WindowBudgetConfig>),
        (
            "ConcurrencyBudget",
            Struct,
            probe::<budget::ConcurrencyBudgetConfig>,
        ),
        ("TpsBudget", Struct, probe::<budget::TpsConfig>),
        (
            "RetryBreakerBudget",
            Struct,
            probe::<budget::RetryBreakerConfig>,
        ),
        ("Breaker", Struct, probe::<s::BreakerConfig>),
        (
            "SlidingWindowType",
            Enum,
            probe::<breaker::SlidingWindowType>,
        ),
        ("HalfOpenPolicy", Tagged, probe::<breaker::HalfOpenPolicy>),
        ("StateAfterWait", Enum, probe::<breaker::StateAfterWait>),
        ("Bulkhead", Struct, probe::<s::BulkheadConfig>),
        ("Limiter", Tagged, probe::<limiter::LimiterConfig>),
        ("Hedge", Struct, probe::<s::HedgeConfig>),
        ("HedgeDelay", Enum, probe::<patterns::hedge::HedgeDelay>),
        ("Fallback", Struct, probe::<s::FallbackConfig>),
        ("Throttle", Struct, probe::<shedder::AdaptiveThrottleConfig>),
        ("Service", Struct, probe::<s::Service>),
        ("QueueConfig", Struct, probe::<s::QueueConfig>),
        ("Discipline", Enum, probe::<s::Discipline>),
        ("CallMode", Enum, probe::<s::CallMode>),
        ("Abandoned", Enum, probe::<s::Abandoned>),
        ("Admission", Enum, probe::<s::Admission>),
        (
            "Concurrency",
            Tagged,
            probe::<concurrency::ConcurrencyConfig>,
        ),
        ("Pid", Struct, probe::<shedder::PidConfig>),
        ("RateLimit", Struct, probe::<s::KeyedLimit>),
        ("LimitKey", Enum, probe::<s::LimitKey>),
        ("PriorityShedder", Struct, probe::<s::PriorityConfig>),
        ("Distributed", Struct, probe::<s::DistributedLimiter>),
        (
            "TenantBulkhead",
            Struct,
            probe::<patterns::bulkhead::KeyedBulkheadConfig>,
        ),
        ("LimiterState", Enum, probe::<s::LimiterState>),
        ("StoreClock", Enum, probe::<s::StoreClock>),
        ("OnStoreFailure", Enum, probe::<s::OnStoreFailure>),
        ("FanOut", Struct, probe::<s::FanOut>),
        (
            "Pool",
            Struct,
            probe::<scenarios::format::schema::pool::Pool>,
        ),
        ("Balancer", Enum, probe::<s::Balancer>),
        ("Outlier", Struct, probe::<s::Outlier>),
        ("HealthCheck", Struct, probe::<s::HealthCheck>),
        ("Cache", Struct, probe::<s::Cache>),
        ("Coalesce", Struct, probe::<s::CoalesceConfig>),
        ("XFetch", Struct, probe::<s::XFetch>),
        ("Store", Struct, probe::<s::Store>),
        ("KeyDist", Enum, probe::<s::KeyDist>),
        ("StoreOp", Enum, probe::<s::StoreOp>),
        ("Isolation", Enum, probe::<s::Isolation>),
        (
            "Autoscale",
            Struct,
            probe::<scenarios::format::schema::scaling::Autoscale>,
        ),
        (
            "ScaleMetric",
            Enum,
            probe::<scenarios::format::schema::scaling::ScaleMetric>,
        ),
        (
            "ColdStart",
            Struct,
            probe::<scenarios::format::schema::scaling::ColdStart>,
        ),
        ("Idempotency", Struct, probe::<s::IdempotencyConfig>),
        (
            "InFlightPolicy",
            Enum,
            probe::<patterns::idempotency::InFlightPolicy>,
        ),
        ("Fault", Struct, probe::<s::Fault>),
        ("FaultKind", Enum, probe::<s::FaultKind>),
        ("Expectation", Enum, probe::<s::Expectation>),
        ("Verdict", Struct, probe::<s::VerdictConfig>),
        ("Network", Struct, probe::<s::NetworkConfig>),
        ("Link", Struct, probe::<sim_net::LinkConfig>),
        ("LinkOrder", Enum, probe::<sim_net::LinkOrder>),
        ("Bandwidth", Struct, probe::<sim_net::BandwidthConfig>),
        ("LinkOverride", Struct, probe::<sim_net::LinkOverride>),
        ("NetworkFault", Struct, probe::<sim_net::FaultConfig>),
        ("NetworkFaultKind", Enum, probe::<sim_net::FaultKind>),
    ]
}

fn fields(error: Option<Error>) -> Option<Vec<String>> {
    match error {
        Some(Error::NoSuchStructField { expected, .. }) => {
            Some(expected.iter().map(|s| s.to_string()).collect())
        }
        _ => None,
    }
}

/// The names the deserializer of a type accepts: fields, variants, and `Variant.field`.
fn accepted(kind: Kind, probe: Probe) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    match kind {
        Kind::Struct => {
            let found = fields(probe(&format!("({PROBE}: 0)")));
            names.extend(found.expect("a struct refuses an unknown field and names its own"));
        }
        Kind::Enum | Kind::Tagged => {
            let text = match kind {
                Kind::Enum => PROBE.to_string(),
                _ => format!("(kind: \"{PROBE}\")"),
            };
            let variants = match probe(&text) {
                Some(Error::NoSuchEnumVariant { expected, .. }) => expected,
                other => panic!("an enum names its variants, got {other:?}"),
            };
            for v in variants {
                names.insert(v.to_string());
                let text = match kind {
                    Kind::Enum => format!("{v}({PROBE}: 0)"),
                    _ => format!("(kind: \"{v}\", {PROBE}: 0)"),
                };
                for f in fields(probe(&text)).unwrap_or_default() {
                    if f != "kind" {
                        names.insert(format!("{v}.{f}"));
                    }
                }
            }
        }
    }
    names
}

/// The names in the first column of the table of section `### {name}` of the reference.
fn documented(reference: &str, name: &str) -> BTreeSet<String> {
    let heading = format!("### {name}");
    let start = reference
        .lines()
        .position(|l| l.trim_end() == heading)
        .unwrap_or_else(|| panic!("the reference has no section `{heading}`"));
    let mut names = BTreeSet::new();
    for line in reference.lines().skip(start + 1) {
        if line.starts_with('#') {
            break;
        }
        let Some(row) = line.strip_prefix('|') else {
            continue;
        };
        let cell = row.split('|').next().unwrap_or_default();
        let mut ticks = cell.split('`');
        if let (Some(_), Some(name)) = (ticks.next(), ticks.next()) {
            names.insert(name.to_string());
        }
    }
    names
}

#[test]
fn the_reference_names_every_field_and_variant_and_no_other() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src/reference.md");
    let reference = std::fs::read_to_string(path).expect("book/src/reference.md exists");
    let mut problems = Vec::new();
    for (name, kind, p) in types() {
        let code = accepted(kind, p);
        let book = documented(&reference, name);
        for missing in code.difference(&book) {
            problems.push(format!(
                "### {name}: `{missing}` is accepted by the code but missing"
            ));
        }
        for stale in book.difference(&code) {
            problems.push(format!(
                "### {name}: `{stale}` is documented but the code refuses it"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "book/src/reference.md and the scenario format disagree:\n{}",
        problems.join("\n")
    );
}

/// The cells of the rows of the table of section `### {name}`, by the name in the row's
/// first cell.
fn rows(reference: &str, name: &str) -> Vec<(String, Vec<String>)> {
    let heading = format!("### {name}");
    let start = reference
        .lines()
        .position(|l| l.trim_end() == heading)
        .unwrap_or_else(|| panic!("the reference has no section `{heading}`"));
    let mut out = Vec::new();
    for line in reference.lines().skip(start + 1) {
        if line.starts_with('#') {
            break;
        }
        let Some(row) = line.strip_prefix('|') else {
            continue;
        };
        let cells: Vec<String> = row.split('|').map(|c| c.trim().to_string()).collect();
        if let Some(name) = cells[0].strip_prefix('`').and_then(|c| c.strip_suffix('`')) {
            out.push((name.to_string(), cells.clone()));
        }
    }
    out
}

#[test]
fn the_reference_gives_each_failure_reason_the_status_a_retry_policy_sees() {
    use patterns::retry::Failure;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src/reference.md");
    let reference = std::fs::read_to_string(path).expect("book/src/reference.md exists");
    let table = rows(&reference, "Failure reasons");
    let listed: Vec<&str> = table.iter().map(|(n, _)| n.as_str()).collect();
    let reasons: Vec<&str> = scenarios::world::REASONS.iter().map(|r| r.name()).collect();
    assert_eq!(listed, reasons, "one row per reason, in the report's order");
    for (reason, (name, cells)) in scenarios::world::REASONS.iter().zip(&table) {
        let status = match scenarios::world::failure_of(*reason, None) {
            Failure::Timeout => "none: no answer".to_string(),
            Failure::ConnectionError => "a connection error".to_string(),
            Failure::Status { code, .. } => code.to_string(),
            Failure::Conflict => "409".to_string(),
            Failure::LocalRejection { code, .. } => format!("{code}, a local rejection"),
        };
        assert_eq!(cells[2], status, "{name}: the status a retry policy sees");
    }
}
