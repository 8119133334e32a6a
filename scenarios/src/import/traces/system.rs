//! The figures of every trace ([`Figures`]) as a [`System`]: each service that recorded jobs
//! an upstream with its measured `work` (and `latency` where its callers' client spans take
//! longer than its server spans), each peer that recorded none a virtual upstream, each
//! callee a route of its caller with its `call_ratio`, its Pick `weight` and its `fan_out`,
//! each caller's calls in `stages` (from which calls overlapped and which never came
//! together), and each service requests arrive at from outside an entry with its rate; and
//! the [`Calibration`] report of what the figures rest on.
//!
//! # Decisions
//!
//! - **A histogram of the measured values, not a fitted family.** A fitted distribution
//!   (log-normal, exponential) would need a goodness-of-fit test that passes on every
//!   service, and a failed fit would still need the histogram. The format's `Histogram`
//!   (Prometheus' cumulative buckets, drawn uniformly within a bucket) with bounds at 50
//!   quantiles of the values keeps every bucket at about 2% of them, so the CDF drawn is
//!   within about 2% of the measured one everywhere (the report's `D` says how far), in one
//!   line of at most about 100 bounds where `Empirical` would write thousands of values; a
//!   value many share (a constant part) gets a bucket of its own, 1ns wide. A service whose
//!   values are all one is `Constant`.
//! - **Stages from overlap, Pick from exclusion.** Calls ordered by their mean start after
//!   the job's start; a call overlapping the stage before in most jobs that make both runs
//!   with it (`All`); calls that never come in one job, where chance would bring them
//!   together at least 5 times, are one `Pick` (request types), each weighted by its share.

use super::calibration::{Calibration, DistributionRow, EdgeRow};
use super::graph::{Arrivals, Figures, Service};
use crate::format::schema::{CallStage, stages::written};
use crate::import::ImportError;
use crate::import::model::{Entry, Host, Kind, Origin, Route, System, Upstream};
use crate::import::ron::{self, Field, Ron};
use sim_core::SimDuration;

/// Histogram buckets a measured distribution is written with (about): the bounds at which
/// quantiles, in parts per 100,000. Every 2% up to the 90th percentile, then closer towards
/// the largest value, so that a long tail is drawn from where its values are: the last
/// bucket holds 0.1% of them, where one of 2% would spread the top 2% evenly up to the
/// largest value and put the drawn p99 far above the measured one.
const LEVELS: [usize; 53] = {
    let mut levels = [0; 53];
    let mut k = 0;
    while k < 45 {
        levels[k] = (k + 1) * 2_000;
        k += 1;
    }
    let tail = [
        93_000, 96_000, 98_000, 99_000, 99_500, 99_800, 99_900, 100_000,
    ];
    let mut t = 0;
    while t < tail.len() {
        levels[45 + t] = tail[t];
        t += 1;
    }
    levels
};

/// A bucket that holds more than this share of the values (in parts per 100,000) at its
/// upper bound alone is split, that value a bucket of its own.
const SHARED: usize = 1_000;

/// The system the figures show.
pub fn system(
    figures: &Figures,
    files: &[&str],
    sampling: Option<f64>,
) -> Result<(System, Calibration), ImportError> {
    let sampling = figures.sampling.or(sampling).unwrap_or(1.0);
    let file = files.join(", ");
    let origin = |label: String| Origin::described(&file, label);
    let mut calibration = Calibration {
        traces: figures.traces,
        spans: figures.spans,
        unpaired: figures.unpaired,
        orphans: figures.orphans,
        self_calls: figures.self_calls,
        truncated: figures.truncated,
        sampling,
        ..Calibration::default()
    };
    if figures.services.values().all(|s| s.jobs == 0) {
        return Err(ImportError::new(format!(
            "{file}: no server span in {} spans: the import needs the spans of requests received (kind SERVER or CONSUMER) with their service's name",
            figures.spans
        )));
    }
    let names: Vec<&String> = figures.services.keys().collect();
    // A system of no configuration format: its formats are those of the files merged in.
    let mut system = System::default();
    for (name, service) in &figures.services {
        let upstream = upstream(name, service, &origin, &mut calibration);
        system.upstreams.push(upstream);
    }
    for (i, (name, service)) in figures.services.iter().enumerate() {
        let (order, stages) = stages(service);
        for callee in &order {
            let route = route(name, service, callee, &stages, &origin, &mut calibration);
            let upstream = names
                .iter()
                .position(|n| *n == callee)
                .expect("every callee is a service");
            system.routes.push(Route { upstream, ..route });
            if let Some(row) = calibration.edges.last_mut() {
                row.virtual_callee = figures.services[callee].jobs == 0;
            }
        }
        if order.len() > 1 {
            system.upstreams[i].service.push(
                Field::from(
                    "stages",
                    Ron::Scalar(written(&stages)),
                    origin(format!("traces: {name}'s calls")),
                )
                .noted("from which calls overlapped and which never came in one request"),
            );
        }
    }
    for ((client, service), arrivals) in &figures.entries {
        let upstream = names
            .iter()
            .position(|n| *n == service)
            .expect("an entry is a service");
        let load = load(client, service, arrivals, sampling, &origin);
        system.entries.push(Entry {
            client: client.clone(),
            upstream,
            load,
        });
    }
    Ok((system, calibration))
}

/// The load of a client: its requests' mean rate over the traces, divided by the share
/// traced.
fn load(
    client: &str,
    service: &str,
    arrivals: &Arrivals,
    sampling: f64,
    origin: &dyn Fn(String) -> Origin,
) -> Field {
    let seconds = (arrivals.last - arrivals.first) as f64 / 1e9;
    let rate = if arrivals.count > 1 && seconds > 0.0 {
        (arrivals.count - 1) as f64 / seconds / sampling
    } else {
        arrivals.count as f64 / sampling
    };
    let (schedule, how) = match super::load::steps(&arrivals.per_second, arrivals.first) {
        Some(steps) => {
            let written: Vec<String> = steps
                .iter()
                .map(|&(at, r)| {
                    let at = SimDuration::from_nanos(at / 1_000_000 * 1_000_000);
                    format!(
                        "(at: \"{at}\", rate: \"{}/s\")",
                        rounded(r / sampling, 1000.0)
                    )
                })
                .collect();
            (
                format!("Steps([{}])", written.join(", ")),
                format!(
                    "{} steps: the arrivals a second vary more than one rate's would",
                    steps.len()
                ),
            )
        }
        None => (
            format!("Constant(\"{}/s\")", rounded(rate, 1000.0)),
            "one rate: the arrivals a second vary as one rate's would".to_string(),
        ),
    };
    Field::from(
        "load",
        Ron::Scalar(format!("Open(rate: {schedule})")),
        origin(format!(
            "traces: {} requests from {client} to {service}",
            arrivals.count
        )),
    )
    .noted(format!(
        "over {seconds:.3}s, {how}, scaled by the sampling ratio {sampling}"
    ))
}

/// A service as an upstream: its work and network time, measured.
fn upstream(
    name: &str,
    service: &Service,
    origin: &dyn Fn(String) -> Origin,
    calibration: &mut Calibration,
) -> Upstream {
    let mut fields = Vec::new();
    let virtual_peer = service.jobs == 0;
    let mut measured =
        |field: &str, values: &super::graph::Reservoir, label: String, note: &str| {
            let (value, form, distance) = measured(&values.values);
            calibration.distributions.push(DistributionRow {
                path: format!("services.{name}.{field}"),
                values: values.seen,
                form: form.to_string(),
                distance,
            });
            fields.push(Field::from(field, value, origin(label)).noted(note.to_string()));
        };
    if let Some(row) = super::load::growth(&format!("services.{name}.work"), &service.load) {
        calibration.load.push(row);
    }
    if virtual_peer {
        measured(
            "work",
            &service.seen_by_callers,
            format!(
                "traces: {} client spans to {name}",
                service.seen_by_callers.seen
            ),
            "a virtual service: it records no spans, its work is its calls as its callers saw them",
        );
    } else {
        measured(
            "work",
            &service.work,
            format!("traces: {} server spans of {name}", service.jobs),
            "self time: each span's duration less its calls' intervals",
        );
        if median(&service.network.values) > 0 {
            measured(
                "latency",
                &service.network,
                format!("traces: {} calls to {name}", service.network.seen),
                "one way: the client span's duration less the server span's, halved",
            );
        }
    }
    Upstream {
        host: Host::plain(name),
        kind: Kind::Service,
        origin: origin(format!("traces: service {name}")),
        service: fields,
    }
}

/// The route from `caller` to `callee`, with its ratio, weight and fan-out.
fn route(
    caller: &str,
    service: &Service,
    callee: &str,
    stages: &[CallStage],
    origin: &dyn Fn(String) -> Origin,
    calibration: &mut Calibration,
) -> Route {
    let edge = &service.callees[callee];
    let label = format!("traces: {caller} → {callee}");
    let call = call_fields(service, callee, stages, &origin(label.clone()));
    let fan_out = edge.leaves as f64 / edge.calls.max(1) as f64;
    let share = edge.jobs as f64 / service.jobs.max(1) as f64;
    let error_ratio = edge.errors as f64 / edge.spans.max(1) as f64;
    let successes = sorted(&edge.ok_times.values);
    calibration.edges.push(EdgeRow {
        caller: caller.to_string(),
        callee: callee.to_string(),
        spans: edge.spans,
        jobs: edge.jobs,
        call_ratio: share,
        fan_out,
        error_ratio,
        asynchronous: edge.asynchronous,
        virtual_callee: false,
        retried: edge.retried as f64 / edge.jobs.max(1) as f64,
        attempts_max: edge.attempts_max,
        deadline_ratio: edge.deadlines as f64 / edge.spans.max(1) as f64,
        deadline_after_ns: (edge.deadlines > 0).then(|| median(&edge.deadline_times.values)),
        longest_success_ns: successes.last().copied(),
        successes,
    });
    let said = format!(
        "{label} ({} spans, {:.2}% failed{})",
        edge.spans,
        100.0 * error_ratio,
        if edge.asynchronous {
            "; asynchronous: the caller did not wait for it, a resim call is waited for"
        } else {
            ""
        }
    );
    Route {
        caller: Some(caller.to_string()),
        upstream: 0,
        matches: None,
        origin: origin(said.clone()),
        destination: Some(origin(said)),
        call,
    }
}

/// A call's `weight` (in a Pick), `call_ratio` and `fan_out`, from where `origin` says.
fn call_fields(
    service: &Service,
    callee: &str,
    stages: &[CallStage],
    origin: &Origin,
) -> Vec<Field> {
    let edge = &service.callees[callee];
    let jobs = service.jobs.max(1) as f64;
    let share = edge.jobs as f64 / jobs;
    let order = service_order(service);
    let index = order.iter().position(|c| c == callee).unwrap_or(0) as u32;
    let pick = stages.iter().find_map(|s| match s {
        CallStage::Pick(calls) if calls.contains(&index) => Some(calls),
        _ => None,
    });
    let made = format!("made on {} of {} requests", edge.jobs, service.jobs);
    let mut call = Vec::new();
    let (ratio, said) = match pick {
        Some(calls) => {
            call.push(
                Field::from(
                    "weight",
                    ron::float(rounded(share, 10_000.0)),
                    origin.clone(),
                )
                .noted(format!("{made}, never with the others of its Pick")),
            );
            let picked: u64 = calls
                .iter()
                .map(|&c| service.callees[&order[c as usize]].jobs)
                .sum();
            let said = format!("its Pick made on {picked} of {} requests", service.jobs);
            (picked as f64 / jobs, said)
        }
        None => (share, made),
    };
    if ratio < 0.9995 {
        call.push(
            Field::from(
                "call_ratio",
                ron::float(rounded(ratio, 10_000.0)),
                origin.clone(),
            )
            .noted(said),
        );
    }
    let fan_out = edge.leaves as f64 / edge.calls.max(1) as f64;
    if fan_out >= 1.5 {
        call.push(
            Field::from(
                "fan_out",
                Ron::Scalar(format!("(n: {})", fan_out.round())),
                origin.clone(),
            )
            .noted(format!("{fan_out:.2} leaves a call on average")),
        );
    }
    call
}

/// A service's callees by their mean start after the job's start.
fn service_order(service: &Service) -> Vec<String> {
    let mut order: Vec<(f64, &String)> = service
        .callees
        .iter()
        .map(|(name, e)| (e.offset_sum / e.jobs.max(1) as f64, name))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
    order.into_iter().map(|(_, n)| n.clone()).collect()
}

/// A service's callees in order, and its stages over their indices.
fn stages(service: &Service) -> (Vec<String>, Vec<CallStage>) {
    let order = service_order(service);
    let jobs = service.jobs.max(1) as f64;
    let pair = |a: &str, b: &str| {
        let key = if a < b {
            (a.to_string(), b.to_string())
        } else {
            (b.to_string(), a.to_string())
        };
        service.pairs.get(&key).copied().unwrap_or((0, 0))
    };
    let exclusive = |a: &str, b: &str| {
        let expected = service.callees[a].jobs as f64 * service.callees[b].jobs as f64 / jobs;
        pair(a, b).0 == 0 && expected >= 5.0
    };
    // Units: a call alone, or calls that never come together (a Pick).
    let mut units: Vec<Vec<usize>> = Vec::new();
    for (i, c) in order.iter().enumerate() {
        match units
            .iter_mut()
            .find(|u| u.iter().all(|&m| exclusive(&order[m], c)))
        {
            Some(u) => u.push(i),
            None => units.push(vec![i]),
        }
    }
    let mut stages: Vec<CallStage> = Vec::new();
    for unit in units {
        let ids: Vec<u32> = unit.iter().map(|&i| i as u32).collect();
        if unit.len() > 1 {
            stages.push(CallStage::Pick(ids));
            continue;
        }
        let joins = match stages.last() {
            Some(CallStage::All(calls)) => {
                let (together, overlapped) = pair(&order[calls[0] as usize], &order[unit[0]]);
                together > 0 && overlapped * 2 > together
            }
            _ => false,
        };
        match (joins, stages.last_mut()) {
            (true, Some(CallStage::All(calls))) => calls.push(ids[0]),
            _ => stages.push(CallStage::All(ids)),
        }
    }
    (order, stages)
}

/// `values` as the format's distribution: `Constant` when all are one, else a `Histogram`
/// with bounds at quantiles; with the form's name and its largest CDF distance from them.
fn measured(values: &[u64]) -> (Ron, &'static str, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let (Some(&low), Some(&high)) = (sorted.first(), sorted.last()) else {
        return (
            Ron::Scalar("Constant(value: \"0s\")".to_string()),
            "Constant",
            0.0,
        );
    };
    if low == high {
        let value = format!("Constant(value: \"{}\")", SimDuration::from_nanos(low));
        return (Ron::Scalar(value), "Constant", 0.0);
    }
    let bounds = bounds(&sorted);
    let written: Vec<String> = bounds
        .iter()
        .map(|(le, count)| format!("(\"{}\", {count})", SimDuration::from_nanos(*le)))
        .collect();
    let distance = histogram_distance(&sorted, &bounds);
    (
        Ron::Scalar(format!("Histogram(buckets: [{}])", written.join(", "))),
        "Histogram",
        distance,
    )
}

/// The histogram's bounds for `sorted` (at least two distinct values): each an upper bound
/// and the count of values at or below it, at the quantiles `LEVELS` names.
fn bounds(sorted: &[u64]) -> Vec<(u64, usize)> {
    let low = sorted[0];
    let n = sorted.len();
    // The first bound just below the least value, with no observation: draws start there.
    let mut bounds: Vec<(u64, usize)> = vec![(low.saturating_sub(1), 0)];
    for level in LEVELS {
        let at = sorted[(level * n).div_ceil(100_000) - 1];
        let count = sorted.partition_point(|&v| v <= at);
        if bounds.last().is_some_and(|&(b, _)| b >= at) {
            continue;
        }
        // A value many share (a constant part, a clock's resolution) is a bucket of its own,
        // which draws it exactly, instead of spread over the bucket below.
        let below = sorted.partition_point(|&v| v < at);
        if (count - below) * 100_000 > SHARED * n
            && bounds.last().is_some_and(|&(b, c)| b < at - 1 && c < below)
        {
            bounds.push((at - 1, below));
        }
        bounds.push((at, count));
    }
    bounds
}

/// The largest distance between the CDF of `sorted` and that of the histogram `bounds`
/// (uniform within each bucket), at each value.
fn histogram_distance(sorted: &[u64], bounds: &[(u64, usize)]) -> f64 {
    let n = sorted.len() as f64;
    let total = bounds.last().map_or(1, |b| b.1).max(1) as f64;
    let cdf = |x: u64| {
        let k = bounds.partition_point(|&(b, _)| b < x);
        if k == 0 {
            return 0.0;
        }
        if k == bounds.len() {
            return 1.0;
        }
        let (lo, clo) = bounds[k - 1];
        let (hi, chi) = bounds[k];
        let within = (x - lo) as f64 / (hi - lo).max(1) as f64;
        (clo as f64 + within * (chi - clo) as f64) / total
    };
    // At each distinct value, the empirical CDF just before it and at it, against the
    // histogram's just below it and at it (a value many share is a step, not a slope).
    let mut worst: f64 = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let x = sorted[i];
        let after = sorted.partition_point(|&v| v <= x);
        let before = cdf(x.saturating_sub(1));
        worst = worst
            .max((before - i as f64 / n).abs())
            .max((cdf(x) - after as f64 / n).abs());
        i = after;
    }
    worst
}

fn median(values: &[u64]) -> u64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// `values` sorted.
fn sorted(values: &[u64]) -> Vec<u64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    v
}

/// `x` to the nearest `1/per`.
fn rounded(x: f64, per: f64) -> f64 {
    (x * per).round() / per
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_is_a_constant_and_many_a_histogram_within_two_percent() {
        let (value, form, d) = measured(&[2_000_000; 7]);
        assert_eq!(
            (value.one_line().as_str(), form, d),
            ("Constant(value: \"2ms\")", "Constant", 0.0)
        );
        // An exponential-like spread, and a value most share beside a few others.
        let spread: Vec<u64> = (1..=5000u64).map(|i| i * i % 9973 * 1000 + 1).collect();
        let (_, form, d) = measured(&spread);
        assert_eq!(form, "Histogram");
        assert!(d < 0.025, "D = {d}");
        let mut atom = vec![1_000_000u64; 990];
        atom.extend((1..=10).map(|i| i * 100_000));
        let (_, _, d) = measured(&atom);
        assert!(d < 0.025, "an atom is drawn exactly: D = {d}");
    }

    /// The histogram's quantile `p`: the bound below it and the uniform share of its bucket.
    fn quantile(bounds: &[(u64, usize)], p: f64) -> f64 {
        let total = bounds.last().expect("bounds").1 as f64;
        let k = bounds.partition_point(|&(_, c)| (c as f64) < p * total);
        let ((lo, clo), (hi, chi)) = (bounds[k - 1], bounds[k]);
        let within = (p * total - clo as f64) / (chi - clo) as f64;
        lo as f64 + within * (hi - lo) as f64
    }

    #[test]
    fn a_long_tail_is_drawn_where_its_values_are() {
        // 2,000 exponential values (mean 1ms), at their expected quantiles.
        let n = 2000;
        let values: Vec<u64> = (0..n)
            .map(|i| (-libm::log(1.0 - (i as f64 + 0.5) / n as f64) * 1e6) as u64)
            .collect();
        let bounds = bounds(&values);
        for p in [0.5, 0.9, 0.99, 0.999] {
            let measured = values[(p * n as f64).ceil() as usize - 1] as f64;
            let drawn = quantile(&bounds, p);
            assert!(
                (drawn / measured - 1.0).abs() < 0.02,
                "p{p}: drawn {drawn}, measured {measured}"
            );
        }
    }
}
