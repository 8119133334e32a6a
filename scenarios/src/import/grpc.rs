//! A gRPC service config (JSON, gRFC A2 and A6) into the scenario format: each service a
//! `methodConfig` names is a call to a service of that name, with the config's policy.
//!
//! # Decisions
//!
//! `timeout` is the whole RPC's deadline, across retries and hedges: the call's `deadline`.
//! `retryPolicy` is a `Retry`: `maxAttempts` counts the first attempt and gRPC caps it at 5
//! (a larger value is read as 5, as gRPC does); the n-th retry waits uniform on
//! `[0, min(initialBackoff · backoffMultiplier^(n-1), maxBackoff))`, which is resim's
//! `Exponential` with `Full` jitter. `retryableStatusCodes` become the outcomes resim has:
//! `UNAVAILABLE` is a 503 and a failed connection (gRPC reports both so), `INTERNAL`,
//! `UNKNOWN` and `DATA_LOSS` a 500, `UNIMPLEMENTED` a 501, `DEADLINE_EXCEEDED` a server's
//! 504, `RESOURCE_EXHAUSTED` a 429, `ABORTED` a 409; codes resim's answers never carry are
//! listed. `hedgingPolicy` is a `Hedge` after `hedgingDelay`, `maxAttempts - 1` hedges.
//! `retryThrottling` is gRPC's own token bucket, resim's `Throttling` budget, on every retry
//! policy of the file (gRPC keeps one bucket per server name; a call here is one server).

use super::ledger::{Ledger, Naming, Skip};
use super::model::{Host, Kind, System, Upstream, merge};
use super::node::{Found, Node, Owned};
use super::ron::{self, Field, Ron};
use super::tree::{Doc, child};
use super::{ImportError, SourceFormat};
use crate::format::grpc_status::GrpcCode;
use serde_json::Value;
use sim_core::SimDuration;

/// gRPC's cap on `maxAttempts`, for retries and hedges alike.
const ATTEMPTS_MAX: u32 = 5;

/// How comments name a service config's paths: as they are.
const NAMING: Naming = Naming {
    format: SourceFormat::Grpc,
    label: str::to_string,
    fold_case: Some(
        "grpc-go matches a service config's keys case-insensitively; grpc-java and gRPC's C core (C++, Python, Ruby, PHP) match them exactly and would not read it",
    ),
};

/// The system of service configs: each one's services, merged in the order of the files.
pub fn read(docs: &[Doc]) -> Result<System, ImportError> {
    let systems = docs.iter().map(read_one).collect::<Result<Vec<_>, _>>()?;
    Ok(merge::merge(systems))
}

/// The system of one service config: one upstream per service named, in the file's order.
fn read_one(doc: &Doc) -> Result<System, ImportError> {
    let ledger = Ledger::new(NAMING);
    let root = Node::root(doc, &ledger);
    let throttling = throttling(&root)?;
    let mut upstreams: Vec<(Upstream, Vec<Field>)> = Vec::new();
    for m in root.list("methodConfig")? {
        let names = new_services(&m, &upstreams)?;
        if names.is_empty() {
            ledger.skip(&m.path, Skip::Simplification, "a call has one stack: an earlier methodConfig names the same services, and the first is imported");
            continue;
        }
        let policy = method_policy(&m.node(), throttling.as_ref())?;
        for (name, entry) in names {
            let upstream = Upstream {
                host: Host::plain(&name),
                kind: Kind::Service,
                origin: entry.origin(&entry.path),
                service: Vec::new(),
            };
            upstreams.push((upstream, policy.clone()));
        }
    }
    let skipped = ledger.not_imported(doc, &|p| {
        known_reason(p).unwrap_or_else(|| super::ledger::unknown("a gRPC service config", p))
    });
    Ok(System::of(SourceFormat::Grpc, upstreams, skipped))
}

/// The services `m` names that no earlier methodConfig did, each with its name entry; an
/// entry without a service (`{}`) names every service, `default` here.
fn new_services<'a>(
    m: &Owned<'a>,
    upstreams: &[(Upstream, Vec<Field>)],
) -> Result<Vec<(String, Owned<'a>)>, ImportError> {
    let mut out: Vec<(String, Owned<'a>)> = Vec::new();
    for entry in m.node().list("name")? {
        let e = entry.node();
        let service = e.str("service")?.map(|f| f.value).unwrap_or_default();
        if e.raw("method").is_some() {
            e.skip(
                "method",
                Skip::Simplification,
                "resim's calls have no methods: the policy is imported for the whole service",
            );
        }
        let name = if service.is_empty() {
            // `{}` names every service: the entry itself is what is imported.
            e.ledger.take(&entry.path);
            "default".to_string()
        } else {
            service
        };
        let taken = upstreams.iter().any(|(u, _)| u.host.name == name)
            || out.iter().any(|(n, _)| *n == name);
        if taken {
            e.ledger.skip(
                &entry.path,
                Skip::Simplification,
                "a call has one stack: the first methodConfig naming this service is imported",
            );
            continue;
        }
        out.push((name, entry));
    }
    Ok(out)
}

/// The call's fields of one `methodConfig`: its deadline and stack.
fn method_policy(n: &Node, throttling: Option<&Field>) -> Result<Vec<Field>, ImportError> {
    let mut fields = Vec::new();
    if let Some(t) = n.duration("timeout")? {
        fields.push(
            Field::from("deadline", ron::duration(t.value), n.origin(&t.path))
                .noted("gRPC's timeout spans every attempt and hedge"),
        );
    }
    let retry = n.object("retryPolicy")?;
    let hedge = n.object("hedgingPolicy")?;
    let mut stack = Vec::new();
    match (retry, hedge) {
        (Some(_), Some(h)) => {
            return Err(n.error(
                &h.path,
                "a methodConfig may set retryPolicy or hedgingPolicy, not both (gRFC A6)",
            ));
        }
        (Some(r), None) => stack.push(retry_policy(&r, throttling)?),
        (None, Some(h)) => {
            stack.push(hedging_policy(&h)?);
            if throttling.is_some() {
                n.ledger.skip(
                    &format!("retryThrottling.maxTokens:{}", h.path),
                    Skip::Simplification,
                    "gRPC's throttling also holds back hedges; resim's hedges draw only on a Retry's budget, and this call has no retryPolicy",
                );
            }
        }
        (None, None) => {}
    }
    fields.push(Field::plain("stack", Ron::List(stack)));
    Ok(fields)
}

/// `maxAttempts` of a policy: required, at least 2, capped at 5 as gRPC caps it.
fn attempts(n: &Node, policy: &str) -> Result<Field, ImportError> {
    let at = child(&n.path, "maxAttempts");
    let a = n.u32("maxAttempts")?.ok_or_else(|| {
        n.error(
            &at,
            format!("{policy} needs maxAttempts, at least 2 (gRFC A6)"),
        )
    })?;
    if a.value < 2 {
        return Err(n.error(
            &a.path,
            format!("must be at least 2 (gRFC A6), got {}", a.value),
        ));
    }
    let capped = a.value.min(ATTEMPTS_MAX);
    let f = Field::from("max_attempts", ron::scalar(capped), n.origin(&a.path));
    Ok(if a.value > ATTEMPTS_MAX {
        f.noted(format!("gRPC caps maxAttempts at 5, so {} is 5", a.value))
    } else {
        f
    })
}

/// A required positive duration of a policy.
fn positive(n: &Node, k: &str, policy: &str) -> Result<Found<SimDuration>, ImportError> {
    let at = child(&n.path, k);
    let d = n
        .duration(k)?
        .ok_or_else(|| n.error(&at, format!("{policy} needs {k} (gRFC A6)")))?;
    if d.value.is_zero() {
        return Err(n.error(&d.path, "must be positive (gRFC A6)"));
    }
    Ok(d)
}

/// `retryPolicy` as a `Retry` layer.
fn retry_policy(r: &Owned, throttling: Option<&Field>) -> Result<Field, ImportError> {
    let n = r.node();
    let attempts = attempts(&n, "a retryPolicy")?;
    let initial = positive(&n, "initialBackoff", "a retryPolicy")?;
    let max = positive(&n, "maxBackoff", "a retryPolicy")?;
    let day = SimDuration::from_secs(86_400);
    for d in [&initial, &max] {
        if d.value > day {
            return Err(n.error(
                &d.path,
                "must be at most 1 day (resim's cap on a retry's wait)",
            ));
        }
    }
    let at = child(&r.path, "backoffMultiplier");
    let mult = n
        .f64("backoffMultiplier")?
        .ok_or_else(|| n.error(&at, "a retryPolicy needs backoffMultiplier (gRFC A6)"))?;
    if !(1.0..=100.0).contains(&mult.value) {
        return Err(n.error(
            &mult.path,
            format!(
                "must be in [1, 100] here (resim's backoff does not shrink), got {}",
                mult.value
            ),
        ));
    }
    let strategy = ron::named(
        "Exponential",
        vec![
            Field::from(
                "delay_initial",
                ron::duration(initial.value),
                n.origin(&initial.path),
            ),
            Field::from("multiplier", ron::float(mult.value), n.origin(&mult.path)),
            Field::from(
                "delay_max",
                ron::duration(max.value.max(initial.value)),
                n.origin(&max.path),
            ),
        ],
    );
    let jitter = Field::from("jitter", ron::scalar("Full"), n.origin(&r.path))
        .noted("gRPC's backoff: uniform on [0, the capped exponential)");
    let backoff = Field::plain(
        "backoff",
        ron::fields(vec![Field::plain("strategy", strategy), jitter]),
    );
    let mut fields = vec![attempts, backoff];
    fields.extend(retryable(&n)?);
    fields.extend(throttling.cloned());
    Ok(Field::plain("", ron::named("Retry", fields)))
}

/// `retryableStatusCodes` as the outcomes resim retries.
fn retryable(n: &Node) -> Result<Vec<Field>, ImportError> {
    let at = n.path_of("retryableStatusCodes");
    let codes = n.raw("retryableStatusCodes").and_then(Value::as_array).filter(|c| !c.is_empty()).ok_or_else(|| {
        n.error(&at, "a retryPolicy needs retryableStatusCodes, a non-empty list such as [\"UNAVAILABLE\"] (gRFC A6)")
    })?;
    let (mut statuses, mut connection, mut throttled, mut conflict) =
        (Vec::new(), false, false, false);
    for (i, code) in codes.iter().enumerate() {
        let path = format!("{at}[{i}]");
        let status = match code {
            Value::String(s) => GrpcCode::from_name_ignoring_case(s.trim()),
            Value::Number(x) => x.as_u64().and_then(GrpcCode::from_number),
            _ => None,
        }
        .ok_or_else(|| n.error(&path, format!("expected a gRPC status code (a name such as \"UNAVAILABLE\", or its number), got {code}")))?;
        match status {
            GrpcCode::UNAVAILABLE => {
                statuses.push(503);
                connection = true;
            }
            GrpcCode::INTERNAL | GrpcCode::UNKNOWN | GrpcCode::DATA_LOSS => statuses.push(500),
            GrpcCode::UNIMPLEMENTED => statuses.push(501),
            GrpcCode::DEADLINE_EXCEEDED => statuses.push(504),
            GrpcCode::RESOURCE_EXHAUSTED => throttled = true,
            GrpcCode::ABORTED => conflict = true,
            other => {
                n.ledger.skip(&path, Skip::OutOfRange, format!("resim's answers never carry {}: a status, a timeout, a refused or lost connection, 429 or 409", other.name()));
                continue;
            }
        }
        n.ledger.take(&path);
    }
    let field = |name: &str, value: Ron| Field::from(name, value, n.origin(&at));
    Ok(vec![
        field("retry_on_status", ron::statuses(&statuses)),
        field("retry_on_timeout", ron::scalar(false))
            .noted("gRPC's deadline spans the call: an attempt never times out alone"),
        field("retry_on_connection_error", ron::scalar(connection)),
        field("retry_on_throttled", ron::scalar(throttled)),
        field("retry_on_conflict", ron::scalar(conflict)),
    ])
}

/// `hedgingPolicy` as a `Hedge` layer.
fn hedging_policy(h: &Owned) -> Result<Field, ImportError> {
    let n = h.node();
    let attempts = attempts(&n, "a hedgingPolicy")?;
    let hedges = match &attempts.value {
        Ron::Scalar(s) => s.parse::<u32>().unwrap_or(2) - 1,
        _ => 1,
    };
    let delay = match n.duration("hedgingDelay")? {
        Some(d) => Field::from(
            "delay",
            Ron::Scalar(format!("Fixed(delay: \"{}\")", d.value)),
            n.origin(&d.path),
        ),
        None => Field::from(
            "delay",
            Ron::Scalar("Fixed(delay: \"0s\")".into()),
            n.origin(&child(&h.path, "hedgingDelay")),
        )
        .noted("gRPC's default: every attempt at once"),
    };
    n.skip("nonFatalStatusCodes", Skip::Simplification, "resim's attempts race until the first success; a failed attempt neither ends the call nor sends the next hedge early");
    let count = Field::from(
        "max_hedged_attempts",
        ron::scalar(hedges),
        attempts.source.clone().unwrap_or_else(|| n.origin(&h.path)),
    )
    .noted("maxAttempts counts the first attempt; resim counts hedges");
    Ok(Field::plain("", ron::named("Hedge", vec![delay, count])))
}

/// `retryThrottling` as resim's `Throttling` budget.
fn throttling(root: &Node) -> Result<Option<Field>, ImportError> {
    let Some(t) = root.object("retryThrottling")? else {
        return Ok(None);
    };
    let n = t.node();
    let need = |k: &str| {
        n.error(
            &child(&t.path, k),
            format!("retryThrottling needs {k} (gRFC A6)"),
        )
    };
    let max = n.f64("maxTokens")?.ok_or_else(|| need("maxTokens"))?;
    if !(max.value > 0.0 && max.value <= 1000.0) || max.value.fract() != 0.0 {
        return Err(n.error(&max.path, format!("must be a whole number in [1, 1000] here (gRPC takes (0, 1000]; resim counts whole tokens), got {}", max.value)));
    }
    let ratio = n.f64("tokenRatio")?.ok_or_else(|| need("tokenRatio"))?;
    if !(0.001..=1000.0).contains(&ratio.value) {
        return Err(n.error(
            &ratio.path,
            format!(
                "must be in [0.001, 1000] (gRPC keeps three decimals), got {}",
                ratio.value
            ),
        ));
    }
    let value = format!(
        "Throttling(max_tokens: {}, token_ratio: {})",
        max.value as u32,
        ron::float(ratio.value).one_line()
    );
    Ok(Some(
        Field::from("budget", Ron::Scalar(value), n.origin(&t.path))
            .noted("gRPC's retry throttling: a failure takes a token, a success gives back tokenRatio; no retry below half"),
    ))
}

/// Why a field nothing read is left out, for fields whose reason is known.
fn known_reason(path: &str) -> Option<(Skip, String)> {
    let last = path.rsplit('.').next().unwrap_or(path);
    // grpc-go reads keys in any case.
    let last = last.split('[').next().unwrap_or(last).to_ascii_lowercase();
    let reason = match last.as_str() {
        "waitforready" => {
            "resim's calls do not wait for a connection to be ready: an attempt to a replica that is down fails at once"
        }
        "maxrequestmessagebytes" | "maxresponsemessagebytes" => "resim's messages have no size",
        "loadbalancingconfig" | "loadbalancingpolicy" => {
            "the calling channel's balancer: set the target service's `balancer` (resim balances at the service)"
        }
        "healthcheckconfig" => "set the target service's `health_check`",
        _ => return None,
    };
    Some((Skip::NoCounterpart, reason.to_string()))
}
