//! The one-step reductions of a scenario: [`candidates`] lists every scenario one change
//! smaller than the current one, largest cuts first (drop a client, a service, a fault, a
//! call, a layer; shorten the run; lower a count; simplify a distribution). Each candidate
//! carries the index its target expectation moved to, and a candidate that would lose the
//! target is not made.
//!
//! Longer than 600 lines on purpose: one short function per kind of part a scenario has,
//! which `candidates` calls in the order the search tries them; split over files, that order
//! would no longer read top to bottom.

use crate::format::schema::{
    Expectation, FaultKind, FaultTarget, Layer, Load, Scenario, Schedule, Service,
};
use sim_core::{Dist, Rate, SimDuration};

/// A scenario one change smaller, and what the change was.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The change, as the shrink report lists it (also its identity within a pass).
    pub change: String,
    /// The smaller scenario.
    pub scenario: Scenario,
    /// Where the target expectation is in it.
    pub target: usize,
}

/// The client an expectation is about (`None` for all clients).
pub fn client_of(e: &Expectation) -> Option<&str> {
    match e {
        Expectation::GoodputAtLeast { client, .. }
        | Expectation::GoodputAtMost { client, .. }
        | Expectation::P99AtMost { client, .. }
        | Expectation::RecoveredWithin { client, .. }
        | Expectation::ClassGoodputAtLeast { client, .. }
        | Expectation::ClassGoodputAtMost { client, .. } => Some(client),
        Expectation::Recovers { client, .. } | Expectation::Metastable { client } => {
            client.as_deref()
        }
        Expectation::AmplificationAtMost { .. }
        | Expectation::BlastRadiusAtMost { .. }
        | Expectation::MeanWaitAtMost { .. } => None,
    }
}

/// Every scenario one change smaller than `s` (whose target expectation is at `target`), in
/// the order the search tries them: largest cuts first.
pub fn candidates(s: &Scenario, target: usize) -> Vec<Candidate> {
    let mut out = Out {
        s,
        target,
        list: Vec::new(),
    };
    other_expectations(&mut out);
    other_clients(&mut out);
    uncalled_services(&mut out);
    faults_and_network(&mut out);
    service_calls(&mut out);
    layers(&mut out);
    optional_parts(&mut out);
    shorter_run(&mut out);
    lower_loads(&mut out);
    less_capacity(&mut out);
    fewer_attempts(&mut out);
    simpler_distributions(&mut out);
    out.list
}

/// The candidates made so far, from the scenario `s` whose target expectation is at `target`.
struct Out<'a> {
    s: &'a Scenario,
    target: usize,
    list: Vec<Candidate>,
}

impl Out<'_> {
    /// A candidate whose target expectation stayed where it was.
    fn push(&mut self, change: String, scenario: Scenario) {
        let target = self.target;
        self.push_at(change, scenario, target);
    }

    /// A candidate whose target expectation moved to `target`.
    fn push_at(&mut self, change: String, scenario: Scenario, target: usize) {
        debug_assert!(
            target < scenario.expectations.len(),
            "a candidate keeps its target"
        );
        self.list.push(Candidate {
            change,
            scenario,
            target,
        });
    }
}

/// The other expectations: all at once, then one by one.
fn other_expectations(out: &mut Out) {
    let (s, target) = (out.s, out.target);
    if s.expectations.len() > 1 {
        let mut c = s.clone();
        c.expectations = vec![s.expectations[target].clone()];
        out.push_at("dropped the other expectations".to_string(), c, 0);
    }
    for (i, e) in s.expectations.iter().enumerate() {
        if i != target {
            let mut c = s.clone();
            c.expectations.remove(i);
            let t = if i < target { target - 1 } else { target };
            out.push_at(format!("dropped expectations[{i}] ({})", e.name()), c, t);
        }
    }
}

/// Clients other than the target's, with the faults and expectations about them.
fn other_clients(out: &mut Out) {
    let s = out.s;
    let target_client = client_of(&s.expectations[out.target]).map(str::to_string);
    for name in s.clients.keys() {
        if Some(name) == target_client.as_ref() || s.clients.len() == 1 {
            continue;
        }
        let mut c = s.clone();
        c.clients.remove(name);
        c.faults
            .retain(|f| f.kind.target() != FaultTarget::Client(name));
        if let Some(t) = retain_expectations(&mut c, out.target, |e| client_of(e) != Some(name)) {
            out.push_at(format!("dropped client {name}"), c, t);
        }
    }
}

/// Services no client calls, with the calls to them and their faults.
fn uncalled_services(out: &mut Out) {
    let s = out.s;
    for name in s.services.keys() {
        if s.clients.values().any(|cl| &cl.call.target == name) {
            continue;
        }
        let mut c = s.clone();
        c.services.remove(name);
        for service in c.services.values_mut() {
            service.calls.retain(|call| &call.target != name);
        }
        c.faults
            .retain(|f| f.kind.target() != FaultTarget::Service(name));
        out.push(format!("dropped service {name} and the calls to it"), c);
    }
}

/// Each fault, then the network section.
fn faults_and_network(out: &mut Out) {
    let s = out.s;
    for (i, f) in s.faults.iter().enumerate() {
        let mut c = s.clone();
        c.faults.remove(i);
        let (kind, of) = (f.kind.name(), f.kind.target());
        out.push(format!("dropped faults[{i}] ({kind} of {of})"), c);
    }
    if s.network.is_some() {
        let mut c = s.clone();
        c.network = None;
        out.push("dropped the network section".to_string(), c);
    }
}

/// Each call a service makes downstream.
fn service_calls(out: &mut Out) {
    let s = out.s;
    for (name, service) in &s.services {
        for (i, call) in service.calls.iter().enumerate() {
            let mut c = s.clone();
            c.services.get_mut(name).expect("listed").remove_call(i);
            out.push(
                format!("dropped services.{name}.calls[{i}] (to {})", call.target),
                c,
            );
        }
    }
}

/// Pattern layers of every call site, then each service's admission layers.
fn layers(out: &mut Out) {
    let s = out.s;
    for (name, client) in &s.clients {
        for (i, layer) in client.call.stack.iter().enumerate() {
            let mut c = s.clone();
            let stack = &mut c.clients.get_mut(name).expect("listed").call.stack;
            stack.remove(i);
            let what = layer.name();
            out.push(
                format!("dropped clients.{name}.call.stack[{i}] ({what})"),
                c,
            );
        }
    }
    for (name, service) in &s.services {
        for (k, call) in service.calls.iter().enumerate() {
            for (i, layer) in call.stack.iter().enumerate() {
                let mut c = s.clone();
                let stack = &mut c.services.get_mut(name).expect("listed").calls[k].stack;
                stack.remove(i);
                let what = layer.name();
                let change = format!("dropped services.{name}.calls[{k}].stack[{i}] ({what})");
                out.push(change, c);
            }
        }
        for i in 0..service.admission.len() {
            let mut c = s.clone();
            let admission = &mut c.services.get_mut(name).expect("listed").admission;
            admission.remove(i);
            out.push(format!("dropped services.{name}.admission[{i}]"), c);
        }
    }
}

/// A service's optional parts, one at a time.
fn optional_parts(out: &mut Out) {
    type Part = (&'static str, fn(&Service) -> bool, fn(&mut Service));
    const PARTS: &[Part] = &[
        ("outlier", |x| x.outlier.is_some(), |x| x.outlier = None),
        (
            "health_check",
            |x| x.health_check.is_some(),
            |x| x.health_check = None,
        ),
        ("cache", |x| x.cache.is_some(), |x| x.cache = None),
        (
            "idempotency",
            |x| x.idempotency.is_some(),
            |x| x.idempotency = None,
        ),
        ("latency", |x| x.latency.is_some(), |x| x.latency = None),
        ("restart", |x| x.restart.is_some(), |x| x.restart = None),
        (
            "retry_after",
            |x| x.retry_after.is_some(),
            |x| x.retry_after = None,
        ),
    ];
    let s = out.s;
    for (name, service) in &s.services {
        for (what, present, drop) in PARTS {
            if present(service) {
                let mut c = s.clone();
                drop(c.services.get_mut(name).expect("listed"));
                out.push(format!("dropped services.{name}.{what}"), c);
            }
        }
    }
}

/// A shorter run: its end cut, or its quiet start. Whole buckets, so the report's series
/// keep their width.
fn shorter_run(out: &mut Out) {
    let s = out.s;
    let bucket = s.bucket.as_nanos().max(1);
    let whole = |nanos: u64| SimDuration::from_nanos(nanos / bucket * bucket);
    for (num, den) in [(1, 2), (3, 4)] {
        let d = whole(s.duration.as_nanos() / den * num);
        if let Some(c) = cut_end(s, d) {
            out.push(format!("shortened the run from {} to {d}", s.duration), c);
        }
    }
    if let Some(start) = first_moment(s) {
        let shift = whole(start.as_nanos() / 2);
        if !shift.is_zero() {
            let mut c = s.clone();
            shift_earlier(&mut c, shift);
            let change = format!("started the story {shift} earlier (run {shift} shorter)");
            out.push(change, c);
        }
    }
}

/// Each client's load, lower: a simpler rate schedule, or half the users.
fn lower_loads(out: &mut Out) {
    let s = out.s;
    for (name, client) in &s.clients {
        let (change, load) = match &client.load {
            Load::Open { rate } => match simpler_schedule(rate) {
                Some((what, simpler)) => (what, Load::Open { rate: simpler }),
                None => continue,
            },
            Load::Closed { users, think } if *users > 1 => (
                format!("load.users {users} → {}", users / 2),
                Load::Closed {
                    users: users / 2,
                    think: think.clone(),
                },
            ),
            Load::OneShot { users, spread } if *users > 1 => (
                format!("load.users {users} → {}", users / 2),
                Load::OneShot {
                    users: users / 2,
                    spread: *spread,
                },
            ),
            Load::Closed { .. } | Load::OneShot { .. } => continue,
        };
        let mut c = s.clone();
        c.clients.get_mut(name).expect("listed").load = load;
        let sep = if matches!(client.load, Load::Open { .. }) {
            ".load: "
        } else {
            "."
        };
        out.push(format!("clients.{name}{sep}{change}"), c);
    }
}

/// Fewer workers alone would make any scenario fail by overload, so capacity only goes down
/// with the load: replicas merged into one of the same size, or the whole system at half
/// scale (every rate, user count and worker pool halved).
fn less_capacity(out: &mut Out) {
    let s = out.s;
    for (name, service) in &s.services {
        if service.replicas > 1 {
            let mut c = s.clone();
            let x = c.services.get_mut(name).expect("listed");
            let merged = x.workers.saturating_mul(x.replicas);
            x.workers = merged;
            x.replicas = 1;
            let (replicas, workers) = (service.replicas, service.workers);
            let change = format!(
                "services.{name}: {replicas} replicas of {workers} workers → 1 of {merged}"
            );
            out.push(change, c);
        }
    }
    if let Some(c) = half_scale(s) {
        let change = "the whole system at half scale (rates, users and workers)";
        out.push(change.to_string(), c);
    }
}

/// One attempt fewer for every retry layer that allows more than two, at clients then at
/// services' calls.
fn fewer_attempts(out: &mut Out) {
    let s = out.s;
    for (name, client) in &s.clients {
        for (i, layer) in client.call.stack.iter().enumerate() {
            if let Some((fewer, change)) = one_attempt_fewer(layer) {
                let mut c = s.clone();
                c.clients.get_mut(name).expect("listed").call.stack[i] = fewer;
                out.push(format!("clients.{name}.call.stack[{i}].{change}"), c);
            }
        }
    }
    for (name, service) in &s.services {
        for (k, call) in service.calls.iter().enumerate() {
            for (i, layer) in call.stack.iter().enumerate() {
                if let Some((fewer, change)) = one_attempt_fewer(layer) {
                    let mut c = s.clone();
                    c.services.get_mut(name).expect("listed").calls[k].stack[i] = fewer;
                    out.push(format!("services.{name}.calls[{k}].stack[{i}].{change}"), c);
                }
            }
        }
    }
}

/// `layer` with one attempt fewer, and the change, when it is a retry that allows more than
/// two.
fn one_attempt_fewer(layer: &Layer) -> Option<(Layer, String)> {
    let Layer::Retry(r) = layer else {
        return None;
    };
    if r.max_attempts <= 2 {
        return None;
    }
    let mut fewer = r.clone();
    fewer.max_attempts -= 1;
    let change = format!("max_attempts {} → {}", r.max_attempts, fewer.max_attempts);
    Some((Layer::Retry(fewer), change))
}

/// Every distribution in the scenario, simpler.
fn simpler_distributions(out: &mut Out) {
    let s = out.s;
    let count = dists(&mut s.clone()).len();
    for k in 0..count {
        let mut probe = s.clone();
        let (path, dist) = dists(&mut probe).swap_remove(k);
        for (what, simpler) in simpler_dists(dist) {
            let mut c = s.clone();
            *dists(&mut c).swap_remove(k).1 = simpler;
            out.push(format!("{path}: {what}"), c);
        }
    }
}

/// Every rate and user count halved, and every service's workers; `None` when a pool of one
/// worker would have to halve.
fn half_scale(s: &Scenario) -> Option<Scenario> {
    let mut c = s.clone();
    for service in c.services.values_mut() {
        if service.workers < 2 {
            return None;
        }
        service.workers /= 2;
    }
    let half = |r: &mut Rate| *r = Rate::per_second(r.as_per_second() / 2.0);
    for client in c.clients.values_mut() {
        match &mut client.load {
            Load::Open { rate } => match rate {
                Schedule::Constant(r) => half(r),
                Schedule::Steps(steps) => steps.iter_mut().for_each(|st| half(&mut st.rate)),
                Schedule::Ramp { from, to, .. } => {
                    half(from);
                    half(to);
                }
                Schedule::Spike { base, peak, .. } => {
                    half(base);
                    half(peak);
                }
            },
            Load::Closed { users, .. } | Load::OneShot { users, .. } => {
                if *users < 2 {
                    return None;
                }
                *users /= 2;
            }
        }
    }
    Some(c)
}

/// Keeps the expectations `keep` accepts and the target; `None` if the target would go.
fn retain_expectations(
    s: &mut Scenario,
    target: usize,
    keep: impl Fn(&Expectation) -> bool,
) -> Option<usize> {
    if !keep(&s.expectations[target]) {
        return None;
    }
    let before = s.expectations[..target].iter().filter(|e| !keep(e)).count();
    s.expectations.retain(|e| keep(e));
    Some(target - before)
}

/// `s` run for `d` instead: faults from `d` on are dropped and the others end by `d`, an
/// expectation window that ended after `d` runs to the end. `None` if nothing changes.
fn cut_end(s: &Scenario, d: SimDuration) -> Option<Scenario> {
    if d.is_zero() || d >= s.duration {
        return None;
    }
    let mut c = s.clone();
    c.duration = d;
    c.faults.retain(|f| f.at < d);
    for f in &mut c.faults {
        if let Some(length) = f.duration
            && f.at.saturating_add(length) > d
        {
            f.duration = Some(d.saturating_sub(f.at));
        }
    }
    for e in &mut c.expectations {
        if let Expectation::GoodputAtLeast { until, .. } | Expectation::GoodputAtMost { until, .. } =
            e
            && until.is_some_and(|u| u >= d)
        {
            *until = None;
        }
    }
    Some(c)
}

/// The earliest moment something happens on the timeline after the start: a fault, a change
/// of load, an expectation's window.
fn first_moment(s: &Scenario) -> Option<SimDuration> {
    let mut times: Vec<SimDuration> = s.faults.iter().map(|f| f.at).collect();
    for client in s.clients.values() {
        if let Load::Open { rate } = &client.load {
            match rate {
                Schedule::Constant(_) => {}
                Schedule::Steps(steps) => times.extend(steps.iter().map(|st| st.at)),
                Schedule::Ramp { start, .. } | Schedule::Spike { start, .. } => times.push(*start),
            }
        }
    }
    for e in &s.expectations {
        match e {
            Expectation::GoodputAtLeast { after, .. }
            | Expectation::GoodputAtMost { after, .. }
            | Expectation::RecoveredWithin { after, .. } => times.push(*after),
            // Over the whole run: there is no quiet start to cut. The verdict's expectations
            // measure their baseline before the trigger, so the start is not quiet either.
            Expectation::P99AtMost { .. }
            | Expectation::MeanWaitAtMost { .. }
            | Expectation::AmplificationAtMost { .. }
            | Expectation::Recovers { .. }
            | Expectation::Metastable { .. }
            | Expectation::ClassGoodputAtLeast { .. }
            | Expectation::ClassGoodputAtMost { .. }
            | Expectation::BlastRadiusAtMost { .. } => {
                return None;
            }
        }
    }
    times.into_iter().min().filter(|t| !t.is_zero())
}

/// Moves every moment of the timeline `shift` earlier and shortens the run by as much.
fn shift_earlier(s: &mut Scenario, shift: SimDuration) {
    let earlier = |t: &mut SimDuration| *t = t.saturating_sub(shift);
    earlier(&mut s.duration);
    for f in &mut s.faults {
        earlier(&mut f.at);
    }
    for client in s.clients.values_mut() {
        if let Load::Open { rate } = &mut client.load {
            match rate {
                Schedule::Constant(_) => {}
                Schedule::Steps(steps) => steps.iter_mut().for_each(|st| earlier(&mut st.at)),
                Schedule::Ramp { start, end, .. } | Schedule::Spike { start, end, .. } => {
                    earlier(start);
                    earlier(end);
                }
            }
        }
    }
    for e in &mut s.expectations {
        match e {
            Expectation::GoodputAtLeast { after, until, .. }
            | Expectation::GoodputAtMost { after, until, .. } => {
                earlier(after);
                if let Some(u) = until {
                    earlier(u);
                }
            }
            Expectation::RecoveredWithin { after, .. } => earlier(after),
            Expectation::P99AtMost { .. }
            | Expectation::MeanWaitAtMost { .. }
            | Expectation::AmplificationAtMost { .. }
            | Expectation::Recovers { .. }
            | Expectation::Metastable { .. }
            | Expectation::ClassGoodputAtLeast { .. }
            | Expectation::ClassGoodputAtMost { .. }
            | Expectation::BlastRadiusAtMost { .. } => {}
        }
    }
}

/// A simpler schedule: half the rate, or a schedule without its changes.
fn simpler_schedule(rate: &Schedule) -> Option<(String, Schedule)> {
    // Whole requests per second, so the file reads as a person would write it.
    let half = |r: &Rate| Rate::per_second((r.as_per_second() / 2.0).floor());
    match rate {
        Schedule::Constant(r) if r.as_per_second() >= 2.0 => Some((
            format!("rate {r} → {}", half(r)),
            Schedule::Constant(half(r)),
        )),
        Schedule::Constant(_) => None,
        Schedule::Steps(steps) => {
            let top = steps
                .iter()
                .map(|st| st.rate)
                .max_by(|a, b| a.as_per_second().total_cmp(&b.as_per_second()))?;
            Some((
                format!("Steps → Constant({top}), their highest"),
                Schedule::Constant(top),
            ))
        }
        Schedule::Ramp { to, .. } => Some((
            format!("Ramp → Constant({to}), its end"),
            Schedule::Constant(*to),
        )),
        Schedule::Spike { base, .. } => Some((
            format!("Spike → Constant({base}), its base"),
            Schedule::Constant(*base),
        )),
    }
}

/// Every distribution of the scenario that shapes its traffic, with its path.
fn dists(s: &mut Scenario) -> Vec<(String, &mut Dist)> {
    let mut out = Vec::new();
    for (name, client) in s.clients.iter_mut() {
        if let Load::Closed { think, .. } = &mut client.load {
            out.push((format!("clients.{name}.load.think"), think));
        }
    }
    for (name, service) in s.services.iter_mut() {
        out.push((format!("services.{name}.work"), &mut service.work));
        if let Some(latency) = &mut service.latency {
            out.push((format!("services.{name}.latency"), latency));
        }
    }
    for (i, f) in s.faults.iter_mut().enumerate() {
        if let FaultKind::Latency { extra, .. } = &mut f.kind {
            out.push((format!("faults[{i}].kind.extra"), extra));
        }
    }
    out
}

/// Simpler distributions of about the same mean: a mixture's components (heaviest first), a
/// heavy tail or a bell as an exponential, an exponential as a constant.
fn simpler_dists(d: &Dist) -> Vec<(String, Dist)> {
    let mean_of = |nanos: f64| SimDuration::from_nanos_f64(nanos.max(1.0));
    let exponential = |mean: SimDuration| {
        (
            format!("→ Exponential(mean: \"{mean}\")"),
            Dist::Exponential { mean },
        )
    };
    let constant = |value: SimDuration| {
        (
            format!("→ Constant(value: \"{value}\")"),
            Dist::Constant { value },
        )
    };
    match d {
        Dist::Constant { .. } => Vec::new(),
        Dist::Exponential { mean } => vec![constant(*mean)],
        Dist::Uniform { low, high } => vec![constant(mean_of(
            (low.as_nanos() as f64 + high.as_nanos() as f64) / 2.0,
        ))],
        Dist::Normal { mean, .. } => vec![exponential(*mean), constant(*mean)],
        Dist::LogNormal { median, sigma, p99 } => {
            // p99 = median · e^(2.3263 σ).
            let sigma = sigma.or_else(|| {
                p99.map(|p| {
                    libm::log(p.as_nanos() as f64 / median.as_nanos() as f64) / 2.326_347_874
                })
            });
            let mut out = Vec::new();
            if let Some(sigma) = sigma {
                let mean = mean_of(median.as_nanos() as f64 * libm::exp(sigma * sigma / 2.0));
                out.push(exponential(mean));
            }
            out.push(constant(*median));
            out
        }
        Dist::Pareto { scale, shape } => {
            let mut out = Vec::new();
            if *shape > 1.0 {
                out.push(exponential(mean_of(
                    scale.as_nanos() as f64 * shape / (shape - 1.0),
                )));
            }
            out.push(constant(*scale));
            out
        }
        Dist::Mixture { components } => {
            let mut order: Vec<usize> = (0..components.len()).collect();
            order.sort_by(|&a, &b| components[b].weight.total_cmp(&components[a].weight));
            order
                .into_iter()
                .map(|i| {
                    (
                        format!(
                            "Mixture → its component {i} (weight {})",
                            components[i].weight
                        ),
                        components[i].dist.clone(),
                    )
                })
                .collect()
        }
        // Measured ones (samples, a histogram, percentiles): a constant at their mean.
        Dist::Empirical { .. } | Dist::Histogram { .. } | Dist::Percentiles { .. } => {
            mean(d).map(constant).into_iter().collect()
        }
    }
}

/// The mean of a distribution, where it has one.
fn mean(d: &Dist) -> Option<SimDuration> {
    let nanos = d.compile().ok()?.mean_nanos()?;
    Some(SimDuration::from_nanos_f64(nanos.max(1.0)))
}
