//! Which object of an original configuration each object of an export stands for
//! ([`Anchor`]): the cluster and the route of an Envoy upstream, the DestinationRule (or its
//! subset's entry) and the VirtualService's route of an Istio host, the resilience4j
//! configuration, the gRPC `methodConfig` that names the service and the config's top; and
//! keys matched as the formats match them (Spring's relaxed names, grpc-go's any case,
//! protobuf JSON's camelCase: case, `-` and `_` aside).

use super::TargetFormat;
use serde_json::{Map, Value};

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Key {
    Field(String),
    Index(usize),
}

/// An object of the exported document and the object of the original it stands for.
pub(super) struct Anchor {
    pub(super) exported: Vec<Key>,
    pub(super) original: Vec<Key>,
    /// Fields of the exported object that are not the original's to change (names, matches).
    pub(super) skip: &'static [&'static str],
}

/// A key as the formats compare them: case, `-` and `_` aside.
pub(super) fn same_key(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| *c != '-' && *c != '_')
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    norm(a) == norm(b)
}

/// The field of `v` that `k` names, as the original writes its key.
pub(super) fn field<'v>(v: &'v Value, k: &str) -> Option<(&'v str, &'v Value)> {
    let map = v.as_object()?;
    map.get_key_value(k)
        .or_else(|| map.iter().find(|(x, _)| same_key(x, k)))
        .map(|(x, v)| (x.as_str(), v))
}

fn f(k: &str) -> Key {
    Key::Field(k.to_string())
}

/// The anchors of the upstream `name` in the original `root`.
pub(super) fn anchors(format: TargetFormat, name: &str, root: &Value) -> Vec<Anchor> {
    let mut out = Vec::new();
    let doc0 = |keys: &[Key]| -> Vec<Key> {
        std::iter::once(Key::Index(0))
            .chain(keys.iter().cloned())
            .collect()
    };
    match format {
        TargetFormat::Envoy => envoy(name, root, &mut out),
        TargetFormat::Istio => istio(name, root, &mut out),
        TargetFormat::Resilience4j => out.push(Anchor {
            exported: vec![Key::Index(0)],
            original: Vec::new(),
            skip: &[],
        }),
        TargetFormat::Grpc => {
            let names_it = |v: &Value, _: Option<&str>| {
                field(v, "name")
                    .and_then(|(_, n)| n.as_array())
                    .is_some_and(|entries| {
                        entries.iter().any(|e| {
                            field(e, "service").and_then(|(_, s)| s.as_str()) == Some(name)
                                || name == "default" && e.as_object().is_some_and(Map::is_empty)
                        })
                    })
            };
            if let Some(at) = find(root, &mut Vec::new(), &names_it) {
                out.push(Anchor {
                    exported: doc0(&[f("methodConfig"), Key::Index(0)]),
                    original: at,
                    skip: &["name"],
                });
                out.push(Anchor {
                    exported: vec![Key::Index(0)],
                    original: Vec::new(),
                    skip: &["methodConfig"],
                });
            }
        }
    }
    out
}

/// The Envoy anchors: the cluster named `name` and the route to it.
fn envoy(name: &str, root: &Value, out: &mut Vec<Anchor>) {
    let doc0 = |keys: &[Key]| -> Vec<Key> {
        std::iter::once(Key::Index(0))
            .chain(keys.iter().cloned())
            .collect()
    };
    if let Some(at) = find(root, &mut Vec::new(), &|v, parent| {
        v.get("name").and_then(Value::as_str) == Some(name)
            && (parent == Some("clusters")
                || v.get("@type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.ends_with(".Cluster")))
    }) {
        out.push(Anchor {
            exported: doc0(&[f("resources"), Key::Index(0)]),
            original: at,
            skip: &[],
        });
    }
    if let Some(at) = find(root, &mut Vec::new(), &|v, _| {
        v.get("route")
            .and_then(|r| r.get("cluster"))
            .and_then(Value::as_str)
            == Some(name)
    }) {
        out.push(Anchor {
            exported: doc0(&[
                f("resources"),
                Key::Index(1),
                f("virtual_hosts"),
                Key::Index(0),
                f("routes"),
                Key::Index(0),
            ]),
            original: at,
            skip: &["match"],
        });
    }
}

/// The Istio anchors: the DestinationRule of the host (or its subset's entry) and the
/// VirtualService route to it. `name` is `host` or `host/subset`, the host as the scenario
/// names it (`reviews`, or `reviews.prod` where the import named its namespace).
fn istio(name: &str, root: &Value, out: &mut Vec<Anchor>) {
    let (host, subset) = match name.split_once('/') {
        Some((h, s)) => (h, Some(s)),
        None => (name, None),
    };
    let kind = |v: &Value, k: &str| v.get("kind").and_then(Value::as_str) == Some(k);
    let rule = find(root, &mut Vec::new(), &|v, _| {
        kind(v, "DestinationRule")
            && v.pointer("/spec/host")
                .and_then(Value::as_str)
                .is_some_and(|h| is_host(h, namespace(v), host))
    });
    if let Some(mut at) = rule {
        at.push(f("spec"));
        match subset {
            None => out.push(Anchor {
                exported: vec![Key::Index(0), f("spec")],
                original: at,
                skip: &["host", "subsets"],
            }),
            Some(s) => {
                let entry = value_at(root, &at)
                    .and_then(|v| v.get("subsets"))
                    .and_then(Value::as_array)
                    .and_then(|l| {
                        l.iter()
                            .position(|e| e.get("name").and_then(Value::as_str) == Some(s))
                    });
                if let Some(i) = entry {
                    at.extend([f("subsets"), Key::Index(i)]);
                    out.push(Anchor {
                        exported: vec![Key::Index(0), f("spec"), f("subsets"), Key::Index(0)],
                        original: at,
                        skip: &["name", "labels"],
                    });
                }
            }
        }
    }
    if let Some(at) = route(root, host, subset) {
        out.push(Anchor {
            exported: vec![Key::Index(1), f("spec"), f("http"), Key::Index(0)],
            original: at,
            skip: &["route", "match"],
        });
    }
}

/// The path of the first route of a VirtualService to `host` (and `subset`), its hosts
/// resolved in the VirtualService's namespace.
fn route(root: &Value, host: &str, subset: Option<&str>) -> Option<Vec<Key>> {
    let route_to = |v: &Value, parent: Option<&str>, ns: &str| {
        parent == Some("http")
            && v.get("route").and_then(Value::as_array).is_some_and(|ds| {
                ds.iter().any(|d| {
                    d.pointer("/destination/host")
                        .and_then(Value::as_str)
                        .is_some_and(|h| is_host(h, ns, host))
                        && d.pointer("/destination/subset").and_then(Value::as_str) == subset
                })
            })
    };
    // The route's path inside the VirtualService, kept from the search that found it.
    let inside = std::cell::RefCell::new(Vec::new());
    find(root, &mut Vec::new(), &|v, _| {
        v.get("kind").and_then(Value::as_str) == Some("VirtualService")
            && find(v, &mut Vec::new(), &|r, p| route_to(r, p, namespace(v)))
                .map(|path| *inside.borrow_mut() = path)
                .is_some()
    })
    .map(|mut at| {
        at.append(&mut inside.borrow_mut());
        at
    })
}

/// A Kubernetes object's namespace (`default` where its metadata names none).
fn namespace(object: &Value) -> &str {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
}

/// Whether the host `h`, written in an object of namespace `ns`, is the scenario's `name`:
/// written as `name`, or, resolved as pilot resolves it (a short host is in its object's
/// namespace; `reviews.prod.svc.cluster.local` names its own), the same short name and,
/// where `name` names one (`reviews.prod`), the same namespace.
fn is_host(h: &str, ns: &str, name: &str) -> bool {
    if h == name {
        return true;
    }
    let mut labels = h.split('.');
    let short = labels.next().unwrap_or_default();
    let their = labels.next().unwrap_or(ns);
    match name.split_once('.') {
        Some((s, n)) => short == s && their == n,
        None => short == name,
    }
}

/// The value at `path` under `root`.
fn value_at<'v>(root: &'v Value, path: &[Key]) -> Option<&'v Value> {
    path.iter().try_fold(root, |v, k| match k {
        Key::Field(x) => v.get(x),
        Key::Index(i) => v.get(i),
    })
}

/// The path of the first value under `v` (depth first, in the file's order) that `pred`
/// holds for, given the key of the field or list it is in.
fn find(
    v: &Value,
    at: &mut Vec<Key>,
    pred: &dyn Fn(&Value, Option<&str>) -> bool,
) -> Option<Vec<Key>> {
    fn go(
        v: &Value,
        parent: Option<&str>,
        at: &mut Vec<Key>,
        pred: &dyn Fn(&Value, Option<&str>) -> bool,
    ) -> Option<Vec<Key>> {
        if v.is_object() && pred(v, parent) {
            return Some(at.clone());
        }
        match v {
            Value::Object(map) => map.iter().find_map(|(k, x)| {
                at.push(Key::Field(k.clone()));
                let r = go(x, Some(k), at, pred);
                at.pop();
                r
            }),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| {
                at.push(Key::Index(i));
                let r = go(x, parent, at, pred);
                at.pop();
                r
            }),
            _ => None,
        }
    }
    go(v, None, at, pred)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Two namespaces' rules and routes for `reviews`, staging's first: the scenario's
    /// `reviews.prod` is anchored in prod's, whether its host is written short (resolved in
    /// its object's namespace) or in full; a bare `reviews` takes the first.
    #[test]
    fn a_namespaced_host_is_anchored_in_its_own_namespace() {
        let rule = |ns: &str, host: &str| {
            json!({"kind": "DestinationRule", "metadata": {"name": "reviews", "namespace": ns},
                   "spec": {"host": host}})
        };
        let service = |ns: &str| {
            json!({"kind": "VirtualService", "metadata": {"name": "reviews", "namespace": ns},
                   "spec": {"hosts": ["reviews"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]}})
        };
        let root = json!([
            rule("staging", "reviews"),
            rule("other", "reviews.prod.svc.cluster.local"),
            service("staging"),
            service("prod"),
        ]);
        let originals = |name: &str| -> Vec<Vec<Key>> {
            anchors(TargetFormat::Istio, name, &root)
                .into_iter()
                .map(|a| a.original)
                .collect()
        };
        let at = |i: usize, rest: &[Key]| {
            std::iter::once(Key::Index(i))
                .chain(rest.iter().cloned())
                .collect::<Vec<_>>()
        };
        let http0 = [f("spec"), f("http"), Key::Index(0)];
        assert_eq!(
            originals("reviews.prod"),
            vec![at(1, &[f("spec")]), at(3, &http0)]
        );
        assert_eq!(
            originals("reviews.staging"),
            vec![at(0, &[f("spec")]), at(2, &http0)]
        );
        assert_eq!(
            originals("reviews"),
            vec![at(0, &[f("spec")]), at(2, &http0)]
        );
        assert!(originals("ratings.prod").is_empty());
    }
}
