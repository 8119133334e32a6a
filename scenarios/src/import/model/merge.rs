//! Several systems made one: what each format read (each from all of its files, merged as the
//! mesh or the library merges them) joined into the system the writer writes, in the order of
//! the files on the command line.
//!
//! An upstream two sources name (the same qualified host and subset: an Envoy cluster `db` and
//! a gRPC service `db`) is one upstream: the settings of the first source that sets a field
//! stand, and a later source's setting of the same field is listed as a conflict naming both
//! places. A route two sources give (the same caller, upstream and match) is one call: the
//! first source's stands, the later one is listed the same way.

use super::super::ledger::{Skip, Skipped};
use super::System;
use std::collections::BTreeMap;

/// `systems` as one, the first's settings standing where two set the same thing.
pub fn merge(systems: Vec<System>) -> System {
    let mut out = System::default();
    let mut index = Index::default();
    for system in systems {
        add(&mut out, &mut index, system);
    }
    out
}

/// Where each upstream and route of the merged system is, by what makes two the same, so
/// that a merge costs the size of the systems, not its square (a mesh has thousands of
/// hosts and tens of thousands of routes).
#[derive(Default)]
struct Index {
    /// By qualified host and subset.
    upstreams: BTreeMap<(String, Option<String>), usize>,
    /// By caller, upstream and match.
    routes: BTreeMap<(Option<String>, usize, Option<String>), usize>,
}

/// Adds `other` to `into`.
fn add(into: &mut System, index: &mut Index, other: System) {
    for f in other.formats {
        if !into.formats.contains(&f) {
            into.formats.push(f);
        }
    }
    into.skipped.extend(other.skipped);
    // Where each of `other`'s upstreams is in `into`.
    let mut at = Vec::with_capacity(other.upstreams.len());
    for u in other.upstreams {
        let key = (u.host.qualified.clone(), u.host.subset.clone());
        // Traces name a service by its `service.name` (`reviews`), a mesh by its host
        // (`reviews.prod.svc.cluster.local`): under traces, a host is the traced service of
        // its name.
        let traced = (!into.entries.is_empty())
            .then(|| {
                let plain = (u.host.name.clone(), None);
                index.upstreams.get(&plain).copied()
            })
            .flatten();
        match index.upstreams.get(&key).copied().or(traced).as_ref() {
            None => {
                at.push(into.upstreams.len());
                index.upstreams.insert(key, into.upstreams.len());
                into.upstreams.push(u);
            }
            Some(&i) => {
                at.push(i);
                let first = &mut into.upstreams[i];
                for field in u.service {
                    match first.service.iter().find(|f| f.name == field.name) {
                        Some(stands) => into.skipped.push(conflict(
                            field.source.clone().unwrap_or_else(|| u.origin.clone()),
                            &format!("`{}` of {}", field.name, first.host.qualified),
                            stands.source.as_ref().unwrap_or(&first.origin),
                        )),
                        None => first.service.push(field),
                    }
                }
            }
        }
    }
    for mut e in other.entries {
        e.upstream = at[e.upstream];
        into.entries.push(e);
    }
    for mut r in other.routes {
        r.upstream = at[r.upstream];
        if r.caller.is_none() && !into.entries.is_empty() && onto_traced(into, &r) {
            continue;
        }
        let key = (r.caller.clone(), r.upstream, r.matches.clone());
        match index.routes.get(&key) {
            Some(&stands) => {
                let what = format!(
                    "the call from {} to {}",
                    r.caller.as_deref().unwrap_or("the configured service"),
                    into.upstreams[r.upstream].host.qualified
                );
                let stands = into.routes[stands].origin.clone();
                into.skipped
                    .push(conflict(r.origin.clone(), &what, &stands));
            }
            None => {
                index.routes.insert(key, into.routes.len());
                into.routes.push(r);
            }
        }
    }
}

/// A configuration's route from its own service (`caller: None`) to an upstream that traces
/// show callers of: its call's settings join each traced call to that upstream, where the
/// trace did not set them (the topology is the traces', the policies the configuration's).
/// Whether there was such a call.
fn onto_traced(into: &mut System, route: &super::Route) -> bool {
    let mut found = false;
    for traced in into
        .routes
        .iter_mut()
        .filter(|t| t.upstream == route.upstream && t.caller.is_some())
    {
        found = true;
        for f in &route.call {
            if !traced.call.iter().any(|c| c.name == f.name) {
                traced.call.push(f.clone());
            }
        }
    }
    found
}

/// A setting at `origin` that another, at `stands`, already gave for `what`.
fn conflict(origin: super::Origin, what: &str, stands: &super::Origin) -> Skipped {
    Skipped {
        reason: format!(
            "{what} is also set by {} ({}), which comes first on the command line and is imported",
            stands.label,
            stands.place()
        ),
        origin,
        kind: Skip::Conflict,
    }
}
