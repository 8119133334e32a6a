//! The calls of a scenario as `--call` names them: `clients.NAME.call` and
//! `services.NAME.calls[I]` (import writes into one, export reads one).

use crate::format::overrides::segment;
use crate::format::schema::{Call, Scenario};

/// The call at `path` of `scenario`: `clients.NAME.call` or `services.NAME.calls[I]`.
pub fn call_at<'s>(scenario: &'s Scenario, path: &str) -> Option<&'s Call> {
    let rest = path.strip_prefix("clients.").map(|r| (true, r));
    let rest = rest.or_else(|| path.strip_prefix("services.").map(|r| (false, r)));
    let (client, rest) = rest?;
    if client {
        let name = rest.strip_suffix(".call")?;
        scenario
            .clients
            .get(name.trim_matches('"'))
            .map(|c| &c.call)
    } else {
        let (name, i) = service_call(scenario, path)?;
        scenario.services[name].calls.get(i)
    }
}

/// The service and the index of the call at `path`, when it is `services.NAME.calls[I]`.
pub fn service_call<'s>(scenario: &'s Scenario, path: &str) -> Option<(&'s str, usize)> {
    let rest = path.strip_prefix("services.")?;
    let (name, index) = rest.strip_suffix(']')?.rsplit_once(".calls[")?;
    let i: usize = index.parse().ok()?;
    let (name, _) = scenario.services.get_key_value(name.trim_matches('"'))?;
    Some((name, i))
}

/// The calls of a scenario, as `--call` names them.
pub fn call_paths(scenario: &Scenario) -> Vec<String> {
    let clients = scenario
        .clients
        .keys()
        .map(|c| format!("clients.{}.call", segment(c)));
    let services = scenario.services.iter().flat_map(|(name, s)| {
        (0..s.calls.len()).map(move |i| format!("services.{}.calls[{i}]", segment(name)))
    });
    clients.chain(services).collect()
}
