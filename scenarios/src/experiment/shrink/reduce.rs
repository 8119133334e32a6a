//! The one-step reductions of a scenario: [`candidates`] lists every scenario one change
//! smaller than the current one, largest cuts first (drop a client, a service, a fault, a
//! call, a layer; shorten the run; lower a count; simplify a distribution). Each candidate
//! carries the index its target expectation moved to, and a candidate that would lose the
//! target is not made.
//!
//! Longer than 600 lines on purpose: one short block per kind of part a scenario has, in the
//! order the search tries them; split over files, that order would no longer read top to
//! bottom.

use crate::format::schema::{Expectation, FaultKind, FaultTarget, Layer, Load, Scenario, Schedule};
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
        Expectation::AmplificationAtMost { .. } | Expectation::BlastRadiusAtMost { .. } => None,
    }
}

/// Every scenario one change smaller than `s` (whose target expectation is at `target`).
pub fn candidates(s: &Scenario, target: usize) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut push = |change: String, scenario: Scenario, target: usize| {
        out.push(Candidate {
            change,
            scenario,
            target,
        })
    };
    let target_client = client_of(&s.expectations[target]).map(str::to_string);

    // Other expectations: all at once, then one by one.
    if s.expectations.len() > 1 {
        let mut c = s.clone();
        c.expectations = vec![s.expectations[target].clone()];
        push("dropped the other expectations".to_string(), c, 0);
    }
    for (i, e) in s.expectations.iter().enumerate() {
        if i != target {
            let mut c = s.clone();
            c.expectations.remove(i);
            let t = if i < target { target - 1 } else { target };
            push(format!("dropped expectations[{i}] ({})", e.name()), c, t);
        }
    }
    // Clients, with what is about them.
    for name in s.clients.keys() {
        if Some(name) == target_client.as_ref() || s.clients.len() == 1 {
            continue;
        }
        let mut c = s.clone();
        c.clients.remove(name);
        c.faults
            .retain(|f| f.kind.target() != FaultTarget::Client(name));
        if let Some(t) = retain_expectations(&mut c, target, |e| client_of(e) != Some(name)) {
            push(format!("dropped client {name}"), c, t);
        }
    }
    // Services no client calls, with the calls to them and their faults.
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
        push(
            format!("dropped service {name} and the calls to it"),
            c,
            target,
        );
    }
    for (i, f) in s.faults.iter().enumerate() {
        let mut c = s.clone();
        c.faults.remove(i);
        let (kind, of) = (f.kind.name(), f.kind.target());
        push(format!("dropped faults[{i}] ({kind} of {of})"), c, target);
    }
    if s.network.is_some() {
        let mut c = s.clone();
        c.network = None;
        push("dropped the network section".to_string(), c, target);
    }
    for (name, service) in &s.services {
        for (i, call) in service.calls.iter().enumerate() {
            let mut c = s.clone();
            c.services.get_mut(name).expect("listed").calls.remove(i);
            push(
                format!("dropped services.{name}.calls[{i}] (to {})", call.target),
                c,
                target,
            );
        }
    }
    // Pattern layers of every call site.
    for (name, client) in &s.clients {
        for (i, layer) in client.call.stack.iter().enumerate() {
            let mut c = s.clone();
            c.clients
                .get_mut(name)
                .expect("listed")
                .call
                .stack
                .remove(i);
            push(
                format!("dropped clients.{name}.call.stack[{i}] ({})", layer.name()),
                c,
                target,
            );
        }
    }
    for (name, service) in &s.services {
        for (k, call) in service.calls.iter().enumerate() {
            for (i, layer) in call.stack.iter().enumerate() {
                let mut c = s.clone();
                c.services.get_mut(name).expect("listed").calls[k]
                    .stack
                    .remove(i);
                push(
                    format!(
                        "dropped services.{name}.calls[{k}].stack[{i}] ({})",
                        layer.name()
                    ),
                    c,
                    target,
                );
            }
        }
        for i in 0..service.admission.len() {
            let mut c = s.clone();
            c.services
                .get_mut(name)
                .expect("listed")
                .admission
                .remove(i);
            push(format!("dropped services.{name}.admission[{i}]"), c, target);
        }
    }
    // A service's optional parts.
    for (name, service) in &s.services {
        let mut drop =
            |what: &str, present: bool, f: &dyn Fn(&mut crate::format::schema::Service)| {
                if present {
                    let mut c = s.clone();
                    f(c.services.get_mut(name).expect("listed"));
                    push(format!("dropped services.{name}.{what}"), c, target);
                }
            };
        drop("outlier", service.outlier.is_some(), &|x| x.outlier = None);
        drop("health_check", service.health_check.is_some(), &|x| {
            x.health_check = None
        });
        drop("cache", service.cache.is_some(), &|x| x.cache = None);
        drop("idempotency", service.idempotency.is_some(), &|x| {
            x.idempotency = None
        });
        drop("latency", service.latency.is_some(), &|x| x.latency = None);
        drop("restart", service.restart.is_some(), &|x| x.restart = None);
        drop("retry_after", service.retry_after.is_some(), &|x| {
            x.retry_after = None
        });
    }
    // A shorter run: cut its end, or its quiet start.
    // Whole buckets, so the report's series keep their width.
    let bucket = s.bucket.as_nanos().max(1);
    let whole = |nanos: u64| SimDuration::from_nanos(nanos / bucket * bucket);
    for (num, den) in [(1, 2), (3, 4)] {
        let d = whole(s.duration.as_nanos() / den * num);
        if let Some(c) = cut_end(s, d) {
            push(
                format!("shortened the run from {} to {d}", s.duration),
                c,
                target,
            );
        }
    }
    if let Some(start) = first_moment(s) {
        let shift = whole(start.as_nanos() / 2);
        if !shift.is_zero() {
            let mut c = s.clone();
            shift_earlier(&mut c, shift);
            push(
                format!("started the story {shift} earlier (run {} shorter)", shift),
                c,
                target,
            );
        }
    }
    // Lower counts and rates.
    for (name, client) in &s.clients {
        match &client.load {
            Load::Open { rate } => {
                if let Some((what, simpler)) = simpler_schedule(rate) {
                    let mut c = s.clone();
                    c.clients.get_mut(name).expect("listed").load = Load::Open { rate: simpler };
                    push(format!("clients.{name}.load: {what}"), c, target);
                }
            }
            Load::Closed { users, think } => {
                if *users > 1 {
                    let mut c = s.clone();
                    c.clients.get_mut(name).expect("listed").load = Load::Closed {
                        users: users / 2,
                        think: think.clone(),
                    };
                    push(
                        format!("clients.{name}.load.users {users} → {}", users / 2),
                        c,
                        target,
                    );
                }
            }
            Load::OneShot { users, spread } => {
                if *users > 1 {
                    let mut c = s.clone();
                    c.clients.get_mut(name).expect("listed").load = Load::OneShot {
                        users: users / 2,
                        spread: *spread,
                    };
                    push(
                        format!("clients.{name}.load.users {users} → {}", users / 2),
                        c,
                        target,
                    );
                }
            }
        }
    }
    // Fewer workers alone would make any scenario fail by overload, so capacity only goes
    // down with the load: replicas merged into one of the same size, or the whole system at
    // half scale (every rate, user count and worker pool halved).
    for (name, service) in &s.services {
        if service.replicas > 1 {
            let mut c = s.clone();
            let x = c.services.get_mut(name).expect("listed");
            x.workers = x.workers.saturating_mul(x.replicas);
            x.replicas = 1;
            push(
                format!(
                    "services.{name}: {} replicas of {} workers → 1 of {}",
                    service.replicas,
                    service.workers,
                    service.workers.saturating_mul(service.replicas)
                ),
                c,
                target,
            );
        }
    }
    if let Some(c) = half_scale(s) {
        push(
            "the whole system at half scale (rates, users and workers)".to_string(),
            c,
            target,
        );
    }
    for (name, client) in &s.clients {
        for (i, layer) in client.call.stack.iter().enumerate() {
            if let Layer::Retry(r) = layer
                && r.max_attempts > 2
            {
                let mut c = s.clone();
                if let Layer::Retry(r) = &mut c.clients.get_mut(name).expect("listed").call.stack[i]
                {
                    r.max_attempts -= 1;
                }
                push(
                    format!(
                        "clients.{name}.call.stack[{i}].max_attempts {} → {}",
                        r.max_attempts,
                        r.max_attempts - 1
                    ),
                    c,
                    target,
                );
            }
        }
    }
    for (name, service) in &s.services {
        for (k, call) in service.calls.iter().enumerate() {
            for (i, layer) in call.stack.iter().enumerate() {
                if let Layer::Retry(r) = layer
                    && r.max_attempts > 2
                {
                    let mut c = s.clone();
                    if let Layer::Retry(r) =
                        &mut c.services.get_mut(name).expect("listed").calls[k].stack[i]
                    {
                        r.max_attempts -= 1;
                    }
                    push(
                        format!(
                            "services.{name}.calls[{k}].stack[{i}].max_attempts {} → {}",
                            r.max_attempts,
                            r.max_attempts - 1
                        ),
                        c,
                        target,
                    );
                }
            }
        }
    }
    // Simpler distributions.
    let count = dists(&mut s.clone()).len();
    for k in 0..count {
        let mut probe = s.clone();
        let (path, dist) = dists(&mut probe).swap_remove(k);
        for (what, simpler) in simpler_dists(dist) {
            let mut c = s.clone();
            *dists(&mut c).swap_remove(k).1 = simpler;
            push(format!("{path}: {what}"), c, target);
        }
    }
    out
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
