//! Envoy's HTTP filters: the adaptive concurrency filter as a service's admission (off where
//! its runtime flag's default turns it off), and the others listed for what they are (the
//! router, a local rate limit that is off or one per Envoy, fault injection).

use super::Route;
use crate::import::ImportError;
use crate::import::ledger::Skip;
use crate::import::node::{Found, Node, Owned};
use crate::import::ron::{self, Field, Ron};
use serde_json::Value;

/// The filters that guard `routes` (a filter guards the routes of its own connection
/// manager) as the service's `admission`, if any.
pub(super) fn admission(
    filters: &[Owned],
    routes: &[&Route],
) -> Result<Option<Field>, ImportError> {
    let mut admission = Vec::new();
    for f in filters {
        let manager = f.path.rsplit_once(".http_filters[").map_or("", |(m, _)| m);
        // The same file, and under the same connection manager.
        let routed = routes.iter().any(|r| {
            std::ptr::eq(r.route.doc, f.doc) && r.route.path.starts_with(&format!("{manager}."))
        });
        if routed && let Some(a) = filter(f)? {
            admission.push(a);
        }
    }
    Ok((!admission.is_empty()).then(|| Field::plain("admission", Ron::List(admission))))
}

/// The adaptive concurrency filter as the service's admission, when it sits before the
/// cluster (every filter applies to every route of its listener).
fn filter(f: &Owned) -> Result<Option<Field>, ImportError> {
    let n = f.node();
    let name = n.raw("name").and_then(Value::as_str).unwrap_or_default();
    if !name.contains("adaptive_concurrency") {
        return Ok(None);
    }
    n.take("name");
    let Some(config) = n.object("typed_config")? else {
        return Ok(None);
    };
    let cn = config.node();
    cn.take("@type");
    let Some(g) = cn.object("gradient_controller_config")? else {
        return Ok(None);
    };
    let gn = g.node();
    let mut fields = vec![Field::plain("kind", ron::string("envoy_gradient"))];
    let f64s = gn.f64("sample_aggregate_percentile")?;
    push(
        &gn,
        &mut fields,
        f64s,
        "sample_aggregate_percentile",
        ron::float,
    );
    if let Some(c) = gn.object("concurrency_limit_params")? {
        let c = c.node();
        push(
            &gn,
            &mut fields,
            c.u32("max_concurrency_limit")?,
            "max_concurrency_limit",
            ron::scalar,
        );
        let interval = c.duration("concurrency_update_interval")?;
        push(
            &gn,
            &mut fields,
            interval,
            "concurrency_update_interval",
            ron::duration,
        );
    }
    min_rtt(&gn, &mut fields)?;
    if !enabled(&cn)? {
        // Off unless a runtime override turns it on: nothing of it acts.
        f.ledger.skip(&f.path, Skip::OutOfRange, "the filter is off: its `enabled.default_value` is false, so Envoy lets every request through unless the runtime key turns it on; set it to true to import the filter");
        return Ok(None);
    }
    Ok(Some(
        Field::plain("", ron::named("Concurrency", fields))
            .noted("one limiter per replica, as one per sidecar"),
    ))
}

/// Whether the filter's `enabled` runtime flag is on by default (it is when unset, as
/// Envoy's `RuntimeFeatureFlag` is); its runtime key is listed: a running Envoy may flip it.
fn enabled(config: &Node) -> Result<bool, ImportError> {
    let Some(e) = config.object("enabled")? else {
        return Ok(true);
    };
    e.skip(
        "runtime_key",
        Skip::Simplification,
        "a runtime key may switch the filter in a running Envoy; the import takes its `default_value`",
    );
    Ok(e.bool("default_value")?.is_none_or(|d| d.value))
}

/// The gradient controller's `min_rtt_calc_params`, under resim's names.
fn min_rtt(gn: &Node, fields: &mut Vec<Field>) -> Result<(), ImportError> {
    if let Some(m) = gn.object("min_rtt_calc_params")? {
        let m = m.node();
        push(
            gn,
            fields,
            m.duration("interval")?,
            "min_rtt_calc_interval",
            ron::duration,
        );
        push(
            gn,
            fields,
            m.u32("request_count")?,
            "min_rtt_calc_request_count",
            ron::scalar,
        );
        push(
            gn,
            fields,
            m.f64("jitter")?,
            "min_rtt_calc_jitter_percent",
            ron::float,
        );
        push(
            gn,
            fields,
            m.u32("min_concurrency")?,
            "min_concurrency",
            ron::scalar,
        );
        push(
            gn,
            fields,
            m.f64("buffer")?,
            "min_rtt_buffer_percent",
            ron::float,
        );
        let why = "resim measures minRTT; a fixed minRTT is not modelled";
        m.skip("fixed_value", Skip::NoCounterpart, why);
    }
    Ok(())
}

/// A field the file gives (read at `n`), under resim's `name`.
fn push<T>(
    n: &Node,
    fields: &mut Vec<Field>,
    found: Option<Found<T>>,
    name: &str,
    write: fn(T) -> Ron,
) {
    if let Some(f) = found {
        fields.push(Field::from(name, write(f.value), n.origin(&f.path)));
    }
}

/// The HTTP filters the import does not read as a service's admission, listed for what they
/// are: the router, a local rate limit (off, or one per Envoy), and the others.
pub(super) fn other_filters(filters: &[Owned]) -> Result<(), ImportError> {
    for f in filters {
        let name = f.raw("name").and_then(Value::as_str).unwrap_or_default();
        let (kind, reason) = if name.contains("adaptive_concurrency") {
            continue;
        } else if name.ends_with(".router") {
            (
                Skip::NoCounterpart,
                "the router sends each request on its route, which is what resim's calls do"
                    .to_string(),
            )
        } else if name.contains("local_ratelimit") {
            local_rate_limit(f)?
        } else if name.ends_with(".fault") {
            (Skip::Simplification, "Envoy's fault injection: write it as the scenario's `faults` (ErrorRate, Slowdown)".to_string())
        } else {
            (
                Skip::NoCounterpart,
                format!(
                    "the HTTP filter {name:?} is not one the import reads (it reads the adaptive concurrency filter)"
                ),
            )
        };
        f.ledger.skip(&f.path, kind, reason);
    }
    Ok(())
}

/// A local rate limit filter: off when it enables itself for 0% of requests (its default),
/// else a token bucket per Envoy, which resim's service-wide limiters are not.
fn local_rate_limit(f: &Owned) -> Result<(Skip, String), ImportError> {
    let percent = match f
        .object("typed_config")?
        .map(|c| c.object("filter_enabled"))
        .transpose()?
        .flatten()
    {
        Some(e) => match e.object("default_value")? {
            Some(d) => {
                let numerator = d.u32("numerator")?.map_or(0, |n| n.value);
                let denominator = match d.str("denominator")?.as_ref().map(|x| x.value.as_str()) {
                    Some("TEN_THOUSAND") => 10_000,
                    Some("MILLION") => 1_000_000,
                    _ => 100,
                };
                f64::from(numerator) * 100.0 / f64::from(denominator)
            }
            None => 0.0,
        },
        None => 0.0,
    };
    Ok(if percent == 0.0 {
        (Skip::OutOfRange, "the filter is off: `filter_enabled` is 0% of requests (Envoy's default for it), so it limits nothing unless its runtime key turns it on".to_string())
    } else {
        (
            Skip::NoCounterpart,
            format!(
                "a token bucket per Envoy instance for {percent}% of requests: resim's rate limits are one per service (`admission: [Limiter(…)]`), so it is not imported; write one at the bucket's rate times the replicas"
            ),
        )
    })
}
