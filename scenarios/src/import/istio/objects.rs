//! The objects of Istio files: each `DestinationRule` and `VirtualService` with its name,
//! namespace and creation time, the order pilot takes them in, and their hosts resolved as
//! pilot resolves them.
//!
//! # Decisions
//!
//! **Order.** Where two objects configure one host, pilot takes them oldest first: by
//! `metadata.creationTimestamp`, then by name, then by namespace (its
//! `sortConfigByCreationTime`; creation times are whole seconds, so objects applied together
//! tie and go by name). An object without a creation time (a file not yet applied) is taken
//! as applied now, after every dated one, and so among the undated ones by name too.
//!
//! **Hosts.** A short host (`reviews`, no dot) is the service of that name in the object's
//! namespace: `reviews.NAMESPACE.svc.cluster.local` (pilot's `ResolveShortnameToFQDN`, with
//! the default domain); a host with a dot is taken as written, as pilot takes it. An object
//! with no `metadata.namespace` is in `default`, where `kubectl apply` puts it without `-n`.

use crate::import::ImportError;
use crate::import::ledger::{Ledger, Skip};
use crate::import::node::{Found, Node, Owned};
use crate::import::tree::Doc;
use serde_json::Value;
use std::cmp::Ordering;
use std::time::{Duration, UNIX_EPOCH};

/// The kinds imported.
pub(super) const KINDS: [&str; 2] = ["DestinationRule", "VirtualService"];

/// The namespace of an object that names none.
const DEFAULT_NAMESPACE: &str = "default";

/// The domain of a cluster's services, Istio's default.
const DOMAIN: &str = "svc.cluster.local";

/// One object: what it is, its name and namespace, when it was made, and where it is.
pub(super) struct Object<'a> {
    /// `DestinationRule` or `VirtualService`.
    pub kind: &'static str,
    /// `metadata.name`, else its index in the file.
    pub name: String,
    /// `metadata.namespace`, else `default`.
    pub namespace: String,
    /// `metadata.creationTimestamp`, in seconds since 1970.
    pub created: Option<u64>,
    /// The object.
    pub node: Owned<'a>,
    /// Its place among the objects of every file, in the order of the files.
    pub order: usize,
}

impl Object<'_> {
    /// Pilot's order: the older first, then by name and namespace; undated last.
    pub fn pilot_order(&self, other: &Object) -> Ordering {
        let when = |o: &Object| o.created.unwrap_or(u64::MAX);
        when(self)
            .cmp(&when(other))
            .then_with(|| self.name.cmp(&other.name))
            .then_with(|| self.namespace.cmp(&other.namespace))
    }

    /// How messages name the object: `DestinationRule[reviews]` and where it is.
    pub fn named(&self) -> String {
        format!(
            "{}[{}] ({})",
            self.kind,
            self.name,
            self.node.doc.place(&self.node.path)
        )
    }
}

/// The Istio objects of `doc`, in its order, numbered from `*order` on; objects of other kinds
/// are listed as not imported.
pub(super) fn read<'a>(
    doc: &'a Doc,
    ledger: &'a Ledger,
    order: &mut usize,
) -> Result<Vec<Object<'a>>, ImportError> {
    let root = Node::root(doc, ledger);
    let items: Vec<Owned<'a>> = match &doc.root {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| Owned::at(doc, ledger, v, format!("[{i}]")))
            .collect(),
        _ if doc.root.get("kind").and_then(Value::as_str) == Some("List") => {
            root.take("kind");
            root.take("apiVersion");
            root.skip("metadata", Skip::NoCounterpart, "the list's own metadata");
            root.list("items")?
                .into_iter()
                .enumerate()
                .map(|(i, o)| Owned::at(doc, ledger, o.value, format!("items[{i}]")))
                .collect()
        }
        _ => vec![root],
    };
    let mut out = Vec::new();
    for (i, o) in items.into_iter().enumerate() {
        let kind = o.str("kind")?.map(|k| k.value).unwrap_or_default();
        let Some(kind) = KINDS.iter().find(|k| **k == kind) else {
            ledger.skip(
                &o.path,
                Skip::NoCounterpart,
                format!("a {kind:?} object: the import reads DestinationRule and VirtualService"),
            );
            continue;
        };
        o.take("apiVersion");
        let (name, namespace, created) = metadata(&o, i)?;
        out.push(Object {
            kind,
            name,
            namespace: namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_string()),
            created,
            node: o,
            order: *order,
        });
        *order += 1;
    }
    ledger.name_objects(
        out.iter()
            .map(|o| (o.node.path.clone(), format!("{}[{}]", o.kind, o.name)))
            .collect(),
    );
    Ok(out)
}

/// An object's name (else its index `i`), namespace and creation time.
fn metadata(o: &Owned, i: usize) -> Result<(String, Option<String>, Option<u64>), ImportError> {
    let Some(m) = o.object("metadata")? else {
        return Ok((i.to_string(), None, None));
    };
    let name = m.str("name")?.map_or(i.to_string(), |n| n.value);
    let namespace = m.str("namespace")?.map(|n| n.value);
    let created = match m.str("creationTimestamp")? {
        Some(t) => Some(seconds(&t.value).ok_or_else(|| {
            m.error(
                &t.path,
                format!(
                    "expected a time as Kubernetes writes it, RFC 3339 such as \"2024-05-21T09:21:42Z\", got {:?}",
                    t.value
                ),
            )
        })?),
        None => None,
    };
    for k in ["labels", "annotations"] {
        m.skip(
            k,
            Skip::NoCounterpart,
            "Kubernetes metadata, not a resilience setting",
        );
    }
    for k in [
        "uid",
        "resourceVersion",
        "generation",
        "managedFields",
        "selfLink",
        "finalizers",
        "ownerReferences",
        "generateName",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        m.skip(
            k,
            Skip::NoCounterpart,
            "Kubernetes bookkeeping of the object, not a setting",
        );
    }
    Ok((name, namespace, created))
}

/// Seconds since 1970 of an RFC 3339 time (`2024-05-21T09:21:42Z`, `…+02:00`).
fn seconds(text: &str) -> Option<u64> {
    let text = text.trim();
    // humantime reads UTC times; an offset is taken off by hand.
    let (utc, offset) = match text.len().checked_sub(6).map(|i| text.split_at(i)) {
        Some((time, zone))
            if (zone.starts_with('+') || zone.starts_with('-')) && zone.as_bytes()[3] == b':' =>
        {
            let hours: u64 = zone[1..3].parse().ok()?;
            let minutes: u64 = zone[4..].parse().ok()?;
            let offset = (hours * 60 + minutes) * 60;
            (format!("{time}Z"), (zone.starts_with('+'), offset))
        }
        _ => (text.to_string(), (true, 0)),
    };
    let at = humantime::parse_rfc3339(&utc).ok()?;
    let secs = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    match offset {
        // Local time ahead of UTC: UTC is earlier.
        (true, off) => secs.checked_sub(off),
        (false, off) => secs.checked_add(off),
    }
}

/// A host as pilot resolves it, and its name in the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HostName {
    /// Its first label (`reviews`).
    pub short: String,
    /// Its namespace, for a service of the cluster.
    pub namespace: Option<String>,
    /// The full name pilot matches (`reviews.prod.svc.cluster.local`).
    pub fqdn: String,
}

/// The host `host` (read at `n`) of an object in `namespace`, resolved as pilot resolves it.
pub(super) fn resolve(
    n: &Node,
    host: &Found<String>,
    namespace: &str,
) -> Result<HostName, ImportError> {
    let written = host.value.trim();
    let short = written.split('.').next().unwrap_or_default().to_string();
    if short.is_empty() || written.contains('*') {
        return Err(n.error(
            &host.path,
            format!("expected a service's host such as \"reviews\" or \"reviews.prod.svc.cluster.local\", got {:?} (the import needs one service, not a wildcard)", host.value),
        ));
    }
    if !written.contains('.') {
        return Ok(HostName {
            fqdn: format!("{short}.{namespace}.{DOMAIN}"),
            namespace: Some(namespace.to_string()),
            short,
        });
    }
    // `NAME.NAMESPACE.svc.cluster.local` names its namespace.
    let labels: Vec<&str> = written.split('.').collect();
    let namespace = (written.ends_with(&format!(".{DOMAIN}")) && labels.len() == 5)
        .then(|| labels[1].to_string());
    Ok(HostName {
        short,
        namespace,
        fqdn: written.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_times_as_kubernetes_writes_them() {
        assert_eq!(seconds("1970-01-01T00:01:00Z"), Some(60));
        assert_eq!(seconds("1970-01-01T02:01:00+02:00"), Some(60));
        assert_eq!(seconds("1970-01-01T00:00:00-00:01"), Some(60));
        assert_eq!(seconds("2018-05-21T09:21:42.5Z"), Some(1_526_894_502));
        assert_eq!(seconds("yesterday"), None);
    }
}
