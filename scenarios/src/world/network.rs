//! The one network model: every message between a caller and a service travels sim-net,
//! whether or not the scenario has a `network` section.
//!
//! Each client and each service is a node (a service's replicas share it). Links get their
//! settings, from weakest to strongest, from: the network section's `default_link` (without a
//! section, a link with no delay and no loss); a service's `latency`, which sets both
//! directions of every link between it and its callers; and the section's own `links`.
//! The scenario's network faults become sim-net's: `Partition` cuts every link of the
//! service, `Loss` degrades them, and `Latency` is a rule that delays each message to or from
//! the service by a draw of its `extra` distribution (its own random stream, so it shifts no
//! other draw; overlapping latency faults add up).

use super::msg::{Net, Packet};
use crate::format::schema::{FaultKind, Scenario};
use sim_core::{ConfigError, EntityId, RngStream, Sampler, Seed, SimDuration, SimTime};
use sim_net::{FaultConfig, LinkConfig, NodeId, Rule, Verdict};

/// Builds the network of `s` for a run with `seed`, every node played by `entity`. Returns
/// the network and the nodes: the clients' first, then the services', in name order.
pub fn build(
    s: &Scenario,
    seed: Seed,
    entity: EntityId,
) -> Result<(Net, Vec<NodeId>), ConfigError> {
    let mut net = Net::new(seed);
    if s.network.is_none() {
        net.set_default_link(&LinkConfig::with_latency(sim_core::Dist::constant(
            SimDuration::ZERO,
        )))?;
    }
    let mut nodes = Vec::new();
    for name in s.clients.keys() {
        nodes.push(net.add_node(&s.client_node(name), entity)?);
    }
    for name in s.services.keys() {
        nodes.push(net.add_node(name, entity)?);
    }
    // The services in the order of their keys (and of their nodes), searched by name.
    let names: Vec<&str> = s.services.keys().map(String::as_str).collect();
    let service_node = |name: &str| {
        let i = names.binary_search(&name).expect("targets are validated");
        nodes[s.clients.len() + i]
    };
    let callers = s
        .clients
        .iter()
        .enumerate()
        .map(|(i, (_, c))| (nodes[i], &c.call.target))
        .chain(s.services.iter().flat_map(|(name, sv)| {
            sv.calls
                .iter()
                .map(move |c| (service_node(name), &c.target))
        }))
        // A distributed limiter's service calls its store.
        .chain(s.services.iter().flat_map(|(name, sv)| {
            sv.admission
                .iter()
                .filter_map(crate::format::schema::distributed::store_of)
                .map(move |store| (service_node(name), store))
        }));
    for (caller, target) in callers {
        if let Some(latency) = &s.services[target].latency {
            let link = LinkConfig::with_latency(latency.clone());
            net.set_link(caller, service_node(target), &link)?;
            net.set_link(service_node(target), caller, &link)?;
        }
    }
    if let Some(section) = &s.network {
        net.configure(section).map_err(|e| e.at("network"))?;
    }
    for (i, f) in s.faults.iter().enumerate() {
        install_fault(&mut net, f, seed, service_node)
            .map_err(|e| e.at(&format!("faults[{i}]")))?;
    }
    Ok((net, nodes))
}

/// Puts one of the scenario's network faults on sim-net's timeline (other faults are the
/// world's).
fn install_fault(
    net: &mut Net,
    f: &crate::format::schema::Fault,
    seed: Seed,
    service_node: impl Fn(&str) -> NodeId,
) -> Result<(), ConfigError> {
    let start = f.at;
    let end = f.duration.map(|d| start.saturating_add(d));
    let all_links_of = |service: &str| vec![service.to_string()];
    let kind = match &f.kind {
        FaultKind::Partition { service } => sim_net::FaultKind::Partition {
            from: all_links_of(service),
            to: Vec::new(),
            one_way: false,
        },
        FaultKind::Loss {
            service,
            loss_ratio,
        } => sim_net::FaultKind::Degrade {
            from: all_links_of(service),
            to: Vec::new(),
            one_way: false,
            latency_factor: 1.0,
            latency_added: SimDuration::ZERO,
            loss_ratio: *loss_ratio,
        },
        FaultKind::Latency { service, extra } => {
            let node = service_node(service);
            net.add_rule(ExtraLatency {
                node,
                from: SimTime::ZERO + start,
                to: end.map(|e| SimTime::ZERO + e),
                sampler: extra.compile()?,
                rng: seed.stream(&format!("faults/latency/{service}/{}", start.as_nanos())),
            });
            return Ok(());
        }
        _ => return Ok(()),
    };
    net.add_fault(&FaultConfig::new(start, end, kind))?;
    Ok(())
}

/// A `Latency` fault: every message to or from `node` between `from` and `to` waits a draw
/// of `sampler` more. A type rather than a closure so that a branch reseeds its stream.
#[derive(Clone)]
struct ExtraLatency {
    node: NodeId,
    from: SimTime,
    to: Option<SimTime>,
    sampler: Sampler,
    rng: RngStream,
}

impl Rule<Packet> for ExtraLatency {
    fn judge(&mut self, now: SimTime, m: &sim_net::MessageView<'_, Packet>) -> Verdict {
        let active = now >= self.from && self.to.is_none_or(|to| now < to);
        if active && (m.source == self.node || m.target == self.node) {
            Verdict::Delay(self.sampler.sample(&mut self.rng))
        } else {
            Verdict::Pass
        }
    }

    fn reseed(&mut self, seed: Seed) {
        self.rng.reseed(seed);
    }
}
