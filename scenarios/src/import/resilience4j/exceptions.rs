//! The exception classes a resilience4j configuration names, as the outcomes resim tells
//! apart: a gate's own refusal (`BulkheadFullException`, `CallNotPermittedException`,
//! `RequestNotPermitted`) is the `retry_on_local_rejection` switch of resim's retry.

use super::{
    BULKHEAD_FULL, CALL_NOT_PERMITTED, Chain, GATE_EXCEPTIONS, Module, REQUEST_NOT_PERMITTED,
};
use crate::import::ledger::Skip;
use crate::import::ron::{self, Field};
use crate::import::tree::child;
use serde_json::Value;

/// The exception each module throws when it refuses a call (a bulkhead of either kind when
/// full, a breaker when open, a rate limiter when out of permits).
fn refusal(m: Module) -> Option<&'static str> {
    match m {
        Module::Bulkhead | Module::ThreadPoolBulkhead => Some(BULKHEAD_FULL),
        Module::CircuitBreaker => Some(CALL_NOT_PERMITTED),
        Module::RateLimiter => Some(REQUEST_NOT_PERMITTED),
        Module::Retry | Module::TimeLimiter => None,
    }
}

/// `ignoreExceptions` naming the refusals of resilience4j's own gates: the retry does not
/// retry what they refuse (`retry_on_local_rejection: false`). resim turns that on or off
/// for all of a call's gates at once, so it is imported when the list names the refusal of
/// every gate inside the retry (`gates`), and listed as left out when it names only some.
pub(super) fn ignored_refusals(c: &Chain, gates: &[Module]) -> Option<Field> {
    let (n, k) = c.find("ignoreexceptions")?;
    let names: Vec<String> = match n.raw(k)? {
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.trim().to_string())
            .collect(),
        Value::String(s) => s.split(',').map(|s| s.trim().to_string()).collect(),
        _ => return None,
    };
    let named = |e: &str| names.iter().any(|x| x == e);
    if !GATE_EXCEPTIONS.iter().any(|e| named(e)) {
        return None;
    }
    let path = child(&n.path, k);
    let missing: Vec<&str> = gates
        .iter()
        .filter_map(|g| refusal(*g))
        .filter(|e| !named(e))
        .collect();
    if !missing.is_empty() {
        n.ledger.skip(&path, Skip::Simplification, format!("resim stops retrying the refusals of every gate of the call or of none; this list leaves out {}", missing.join(", ")));
        return None;
    }
    n.take(k);
    let others = names.iter().any(|x| !GATE_EXCEPTIONS.contains(&x.as_str()));
    let field = Field::from(
        "retry_on_local_rejection",
        ron::scalar(false),
        c.origin(&path),
    );
    Some(if others {
        field.noted("the other classes listed are the application's; resim's failures are outcomes, retried as the other retry_on fields say")
    } else {
        field
    })
}
