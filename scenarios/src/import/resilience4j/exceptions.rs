//! The exception classes a resilience4j configuration names, as the outcomes resim tells
//! apart: a 5xx status, an attempt's timeout, a failed connection, a 429, a 409, and the
//! refusals of the call's own gates (`BulkheadFullException`, `CallNotPermittedException`,
//! `RequestNotPermitted`).
//!
//! # Decisions
//!
//! resilience4j decides by class (and subclass): a `Retry` retries an exception that
//! `retryExceptions` names (all of them without the list) unless `ignoreExceptions` names it;
//! a `CircuitBreaker` records as a failure what `recordExceptions` names (all without it)
//! unless `ignoreExceptions` does. A class stands for the outcomes the common clients throw
//! it for: Spring's `HttpServerErrorException` (and `WebClientResponseException`, Feign's
//! `FeignException`) for 5xx statuses, each nested class (`…$ServiceUnavailable`) for its
//! own; `HttpClientErrorException` for the 4xx resim answers, 429 and 409; the
//! TimeLimiter's `java.util.concurrent.TimeoutException` for an attempt's timeout when the
//! instance has a TimeLimiter, and `java.io.IOException` (`SocketTimeoutException`, Spring's
//! `ResourceAccessException`) for the client's own timeouts and failed connections; the
//! gates' exceptions for their refusals; `Exception` and `Throwable` for all. A class the
//! table does not know is the application's or another library's: resim has no outcome for
//! it, and it is listed. resim's retry has a switch per outcome (`retry_on_status`,
//! `retry_on_timeout`, `retry_on_connection_error`, `retry_on_throttled`,
//! `retry_on_conflict`, and `retry_on_local_rejection` for every gate's refusal at once);
//! its breaker counts every failure, so a list that records less is listed with what it
//! leaves out.

use super::{BULKHEAD_FULL, CALL_NOT_PERMITTED, Chain, Module, REQUEST_NOT_PERMITTED};
use crate::import::envoy::STATUS_5XX;
use crate::import::ledger::Skip;
use crate::import::model::Origin;
use crate::import::ron::{self, Field};
use crate::import::tree::child;
use serde_json::Value;

/// A set of outcomes: one bit per 5xx status of [`STATUS_5XX`], then the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Outcomes(u32);

const TIMEOUT_LIMITER: u32 = 1 << 16;
const TIMEOUT_CLIENT: u32 = 1 << 17;
const CONNECTION: u32 = 1 << 18;
const THROTTLED: u32 = 1 << 19;
const CONFLICT: u32 = 1 << 20;
const BULKHEAD: u32 = 1 << 21;
const BREAKER: u32 = 1 << 22;
const LIMITER: u32 = 1 << 23;
/// Every 5xx status.
const SERVER: u32 = (1 << STATUS_5XX.len()) - 1;
/// What an I/O exception stands for: the client's timeouts and failed connections.
const IO: u32 = TIMEOUT_CLIENT | CONNECTION;
/// An HTTP client's response exceptions: the statuses resim answers with.
const RESPONSES: u32 = SERVER | THROTTLED | CONFLICT;
/// The gates' refusals.
const REFUSALS: u32 = BULKHEAD | BREAKER | LIMITER;
const ALL: u32 = RESPONSES | IO | TIMEOUT_LIMITER | REFUSALS;

impl Outcomes {
    fn has(self, bits: u32) -> bool {
        self.0 & bits == bits
    }

    fn any(self, bits: u32) -> bool {
        self.0 & bits != 0
    }

    /// The 5xx statuses in the set.
    fn statuses(self) -> Vec<u16> {
        (0..STATUS_5XX.len())
            .filter(|i| self.0 & (1 << i) != 0)
            .map(|i| STATUS_5XX[i])
            .collect()
    }

    /// The outcomes of `other` this set lacks, in words.
    fn lacking(self, other: u32) -> Vec<String> {
        let missing = other & !self.0;
        let mut out: Vec<String> = (0..STATUS_5XX.len())
            .filter(|i| missing & (1 << i) != 0)
            .map(|i| STATUS_5XX[i].to_string())
            .collect();
        if out.len() == STATUS_5XX.len() {
            out = vec!["5xx statuses".to_string()];
        } else if !out.is_empty() {
            out = vec![format!("the statuses {}", out.join(", "))];
        }
        for (bit, words) in [
            (TIMEOUT_LIMITER, "the TimeLimiter's timeouts"),
            (TIMEOUT_CLIENT, "timeouts"),
            (CONNECTION, "failed connections"),
            (THROTTLED, "429s"),
            (CONFLICT, "409s"),
            (BULKHEAD, "the bulkhead's refusals"),
            (BREAKER, "the breaker's refusals"),
            (LIMITER, "the rate limiter's refusals"),
        ] {
            if missing & bit != 0 {
                out.push(words.to_string());
            }
        }
        out
    }
}

/// A 5xx or 4xx status by the name Spring, WebClient and Feign give its nested exception.
fn nested_status(name: &str) -> Option<u32> {
    let code: u16 = match name {
        "InternalServerError" => 500,
        "NotImplemented" => 501,
        "BadGateway" => 502,
        "ServiceUnavailable" => 503,
        "GatewayTimeout" => 504,
        "HttpVersionNotSupported" => 505,
        "TooManyRequests" => return Some(THROTTLED),
        "Conflict" => return Some(CONFLICT),
        // Another 4xx: resim answers none of them.
        _ => return Some(0),
    };
    STATUS_5XX.iter().position(|c| *c == code).map(|i| 1 << i)
}

/// The outcomes `class` (a fully qualified name) stands for; `None` for a class the table
/// does not know.
fn covers(class: &str) -> Option<u32> {
    let (outer, nested) = match class.split_once('$') {
        Some((o, n)) => (o, Some(n)),
        None => (class, None),
    };
    let base = match outer {
        "java.lang.Throwable" | "java.lang.Exception" => ALL,
        // Every exception resilience4j and the HTTP clients throw but for the checked ones.
        "java.lang.RuntimeException" => RESPONSES | IO | REFUSALS,
        "java.util.concurrent.TimeoutException" => TIMEOUT_LIMITER,
        "java.io.IOException" => IO,
        "java.net.SocketTimeoutException" => TIMEOUT_CLIENT,
        "java.net.ConnectException"
        | "java.net.NoRouteToHostException"
        | "java.net.UnknownHostException"
        | "java.net.SocketException" => CONNECTION,
        "org.springframework.web.client.RestClientException"
        | "org.springframework.web.reactive.function.client.WebClientException"
        | "feign.FeignException" => RESPONSES | IO,
        "org.springframework.web.client.ResourceAccessException"
        | "org.springframework.web.reactive.function.client.WebClientRequestException"
        | "feign.RetryableException" => IO,
        "org.springframework.web.client.RestClientResponseException"
        | "org.springframework.web.client.HttpStatusCodeException"
        | "org.springframework.web.reactive.function.client.WebClientResponseException" => {
            RESPONSES
        }
        "org.springframework.web.client.HttpServerErrorException" => SERVER,
        "org.springframework.web.client.HttpClientErrorException" => THROTTLED | CONFLICT,
        BULKHEAD_FULL => BULKHEAD,
        CALL_NOT_PERMITTED => BREAKER,
        REQUEST_NOT_PERMITTED => LIMITER,
        _ => return None,
    };
    match nested {
        None => Some(base),
        Some("FeignServerException") => Some(SERVER),
        Some("FeignClientException") => Some(THROTTLED | CONFLICT),
        Some(n) => nested_status(n).map(|bits| bits & base),
    }
}

/// The refusal each gate module stands for.
fn refusal(m: Module) -> u32 {
    match m {
        Module::Bulkhead | Module::ThreadPoolBulkhead => BULKHEAD,
        Module::CircuitBreaker => BREAKER,
        Module::RateLimiter => LIMITER,
        Module::Retry | Module::TimeLimiter => 0,
    }
}

/// A list property of `c` (`retryExceptions`), read: the outcomes its classes stand for, and
/// where it is; each class the table does not know is listed. `None` when not set.
fn list(c: &Chain, property: &str) -> Option<(Outcomes, Origin)> {
    let (n, k) = c.find(property)?;
    let path = child(&n.path, k);
    let classes: Vec<(String, String)> = match n.raw(k)? {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((v.as_str()?.trim().to_string(), format!("{path}[{i}]"))))
            .collect(),
        // A `.properties` list: comma-separated.
        Value::String(s) => s
            .split(',')
            .map(|x| (x.trim().to_string(), path.clone()))
            .collect(),
        _ => Vec::new(),
    };
    let mut outcomes = 0;
    for (class, at) in &classes {
        match covers(class) {
            Some(bits) => {
                outcomes |= bits;
                n.ledger.take(at);
            }
            None => n.ledger.skip(at, Skip::NoCounterpart, format!("{class} is not an exception resim's outcomes stand for (a status, a timeout, a failed connection, a gate's refusal): the application's or another library's, which resim's services do not throw")),
        }
    }
    n.ledger.take(&path);
    Some((Outcomes(outcomes), c.origin(&path)))
}

/// A predicate property of `c`: Java code resim cannot read, listed.
fn predicate(c: &Chain, property: &str, what: &str) {
    c.skip(
        property,
        Skip::NoCounterpart,
        &format!("Java code named by class: resim cannot read what it decides; {what}"),
    );
}

/// The Retry's `retry_on_*` fields: what it retries by its exception lists, in resim's
/// outcomes. `gates` are the modules inside the retry; `time_limited` says whether the
/// instance has a TimeLimiter (whose timeouts are its `TimeoutException`).
pub(super) fn retried(c: &Chain, gates: &[Module], time_limited: bool) -> Vec<Field> {
    predicate(
        c,
        "retryexceptionpredicate",
        "the import retries as the exception lists say",
    );
    predicate(c, "resultpredicate", "resim retries failures, not results");
    let retry = list(c, "retryexceptions");
    let ignore = list(c, "ignoreexceptions");
    let mut retried = retry.as_ref().map_or(ALL, |(o, _)| o.0);
    if let Some((o, _)) = &ignore {
        retried &= !o.0;
    }
    let retried = Outcomes(retried);
    // Each field comes from the list that decided it.
    let from = |bits: u32| -> Origin {
        match (&retry, &ignore) {
            (_, Some((o, origin))) if o.any(bits) => origin.clone(),
            (Some((_, origin)), _) => origin.clone(),
            _ => c.origin(&c.at),
        }
    };
    let timeout = if time_limited {
        TIMEOUT_LIMITER
    } else {
        TIMEOUT_CLIENT
    };
    let mut fields = vec![
        Field::from(
            "retry_on_status",
            ron::statuses(&retried.statuses()),
            from(SERVER),
        ),
        Field::from(
            "retry_on_timeout",
            ron::scalar(retried.has(timeout)),
            from(timeout),
        ),
        Field::from(
            "retry_on_connection_error",
            ron::scalar(retried.has(CONNECTION)),
            from(CONNECTION),
        ),
        Field::from(
            "retry_on_throttled",
            ron::scalar(retried.has(THROTTLED)),
            from(THROTTLED),
        ),
        Field::from(
            "retry_on_conflict",
            ron::scalar(retried.has(CONFLICT)),
            from(CONFLICT),
        ),
    ];
    if retry.is_none() && ignore.is_none() {
        fields[0] = fields[0].clone().noted("resilience4j retries every exception unless retryExceptions, ignoreExceptions or a predicate say otherwise");
    }
    fields.extend(refusals(gates, retried, &from));
    fields
}

/// `retry_on_local_rejection`, when the lists decide it: the refusals of the gates inside
/// the retry, retried or not; resim turns them on or off together, and retries a refusal as
/// the status it stands for (503 for a bulkhead or a breaker, 429 for a rate limiter).
fn refusals(gates: &[Module], retried: Outcomes, from: &dyn Fn(u32) -> Origin) -> Option<Field> {
    let inside = gates.iter().fold(0, |bits, g| bits | refusal(*g));
    if inside == 0 {
        return None;
    }
    let field = |on: bool| Field::from("retry_on_local_rejection", ron::scalar(on), from(inside));
    if !retried.any(inside) {
        return Some(field(false));
    }
    let mut notes = Vec::new();
    if !retried.has(inside) {
        notes.push(format!(
            "resim retries the refusals of every gate of the call or of none: this configuration does not retry {}, which are retried here",
            retried.lacking(inside).join(", ")
        ));
    }
    let stand_for_503 = inside & (BULKHEAD | BREAKER) != 0 && !retried.statuses().contains(&503);
    let stand_for_429 = inside & LIMITER != 0 && !retried.has(THROTTLED);
    if stand_for_503 || stand_for_429 {
        notes.push("resim retries a refusal as the status it stands for (503 for a bulkhead or a breaker, 429 for a rate limiter), which this configuration does not retry: those refusals are not retried here".to_string());
    }
    // Every refusal retried, as resilience4j and resim do by default: nothing to say.
    (!notes.is_empty()).then(|| field(true).noted(notes.join("; ")))
}

/// The CircuitBreaker's exception lists against what resim's breaker records (every
/// failure): listed with what they leave out where they record less.
pub(super) fn recorded(c: &Chain) {
    predicate(
        c,
        "recordfailurepredicate",
        "resim's breaker records every failure",
    );
    predicate(
        c,
        "ignoreexceptionpredicate",
        "resim's breaker records every failure",
    );
    predicate(
        c,
        "recordresultpredicate",
        "resim's breaker records failures, not results",
    );
    let record = list(c, "recordexceptions");
    let ignore = list(c, "ignoreexceptions");
    let mut recorded = record.as_ref().map_or(ALL, |(o, _)| o.0);
    if let Some((o, _)) = &ignore {
        recorded &= !o.0;
    }
    // The failures resim's breaker sees; a timeout is one whichever class stands for it.
    let failures = RESPONSES | CONNECTION;
    let timeouts = TIMEOUT_LIMITER | TIMEOUT_CLIENT;
    let mut missing = Outcomes(recorded).lacking(failures);
    if recorded & timeouts == 0 {
        missing.push("timeouts".to_string());
    }
    if missing.is_empty() {
        return;
    }
    let reason = format!(
        "resim's breaker records every failure, and resilience4j's records only what these lists leave: not {} (resilience4j counts them as successes, or ignores them)",
        missing.join(", ")
    );
    for (property, found) in [("recordexceptions", &record), ("ignoreexceptions", &ignore)] {
        if found.is_some()
            && let Some((n, k)) = c.find(property)
        {
            n.ledger
                .skip(&child(&n.path, k), Skip::Simplification, reason.clone());
        }
    }
}
