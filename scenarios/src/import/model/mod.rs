//! The neutral model of a real system, which every format reads into and the one writer
//! writes from: [`System`], its [`Upstream`]s (the clusters, hosts, instances and services a
//! configuration sends to, each with its namespace and subset), its [`Route`]s (which caller
//! calls which upstream, under which match) and the policies of both in resim's words (a
//! call's timeouts and pattern stack, a service's balancer, outlier ejection, health check and
//! admission), each value with the [`Origin`] it came from: file, line, column and path.
//!
//! Everything a format says that the model does not carry is a [`Skipped`] line with its
//! origin and a reason, conflicts among them with both places.
//!
//! | module | what |
//! |---|---|
//! | `merge` | the systems of several formats (and files) made one: the same upstream and route from two sources, and each conflict with both places |
//! | `table` | the mapping table: what went where, then what did not and why, as text or JSON |
//!
//! # Decisions
//!
//! A policy is held as the scenario values it means (`ron::Field`s: names, values, notes), not
//! as a second copy of the scenario schema: the format readers map semantics once, into resim's
//! words, and the model keeps where each value came from (file, line, column, the path in the
//! file) so that the table, the comments and a later export back into the file all read the
//! same origins. What the model owns is the system's shape: which upstreams there are (a host
//! and its namespace, a subset of it), who calls them, and what no reader took.

pub mod merge;
pub mod table;

use super::SourceFormat;
use super::ledger::Skipped;
use super::ron::Field;
use std::fmt;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file, as given on the command line.
    pub file: String,
    /// Its line, from 1 (0 when not known).
    pub line: u32,
    /// Its column, from 1 (0 when not known).
    pub column: u32,
    /// The field's path in the file's tree (`clusters[db].connect_timeout`), which an export
    /// back into the file follows.
    pub path: String,
    /// How comments and the table name it: the format and the path in the format's words
    /// (`istio: DestinationRule[reviews].spec.host`).
    pub label: String,
}

impl Origin {
    /// A value no field gave, described by `label` (Istio's default route to a host).
    pub fn described(file: &str, label: impl Into<String>) -> Origin {
        Origin {
            file: file.to_string(),
            line: 0,
            column: 0,
            path: String::new(),
            label: label.into(),
        }
    }

    /// `file:line:column`, or the file where the place is not known.
    pub fn place(&self) -> String {
        if self.line == 0 {
            self.file.clone()
        } else {
            format!("{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// A host as a configuration names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The name as the scenario's service is called (`reviews` for
    /// `reviews.prod.svc.cluster.local`, the Envoy cluster's name, the instance's).
    pub name: String,
    /// Its namespace, where the format has them (Istio).
    pub namespace: Option<String>,
    /// The name that tells it apart from every other host (`reviews.prod.svc.cluster.local`;
    /// the name itself where the format has no namespaces).
    pub qualified: String,
    /// The subset (a version: a label selector over the host's endpoints), when a route names
    /// one.
    pub subset: Option<String>,
}

impl Host {
    /// A host of a format without namespaces.
    pub fn plain(name: &str) -> Host {
        Host {
            name: name.to_string(),
            namespace: None,
            qualified: name.to_string(),
            subset: None,
        }
    }

    /// Whether `name` names this host: its name, its qualified name, or either with its
    /// subset (`reviews`, `reviews.prod.svc.cluster.local`, `reviews/v2`).
    pub fn answers_to(&self, name: &str) -> bool {
        let (base, subset) = match name.split_once('/') {
            Some((b, s)) => (b, Some(s)),
            None => (name, None),
        };
        let named = base == self.name
            || base == self.qualified
            || self
                .namespace
                .as_ref()
                .is_some_and(|ns| base == format!("{}.{ns}", self.name));
        named && (subset.is_none() || subset == self.subset.as_deref())
    }
}

/// What kind of upstream a format has, as messages name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An Envoy cluster.
    Cluster,
    /// An Istio host.
    Host,
    /// A resilience4j instance.
    Instance,
    /// A gRPC service.
    Service,
}

impl Kind {
    /// The plural, as a list of them is introduced (`it has the clusters: db`).
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Cluster => "clusters",
            Kind::Host => "hosts",
            Kind::Instance => "instances",
            Kind::Service => "services",
        }
    }
}

/// One upstream: a service of the system, and its settings as a target.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// The host it is.
    pub host: Host,
    /// What the format calls it.
    pub kind: Kind,
    /// Where it is declared.
    pub origin: Origin,
    /// Fields of the target service (`balancer`, `outlier`, `health_check`, `admission`).
    pub service: Vec<Field>,
}

/// One route: a caller's call to an upstream.
#[derive(Debug, Clone)]
pub struct Route {
    /// The calling service, when the configuration names it; `None` is the service whose
    /// sidecar or client library the configuration is.
    pub caller: Option<String>,
    /// The upstream called, an index into [`System::upstreams`].
    pub upstream: usize,
    /// What the route matches, in the format's words, when it matches less than all requests.
    pub matches: Option<String>,
    /// Where the route is.
    pub origin: Origin,
    /// Where the route names its upstream's subset, when it names one.
    pub destination: Option<Origin>,
    /// Fields of the call (`timeout`, `deadline`, `stack`, `weight`).
    pub call: Vec<Field>,
}

/// Where requests come into the system from outside, as traces show it: a client and the
/// service it calls, with its load.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The client's name (the service of the root client span, else `users`).
    pub client: String,
    /// The upstream called, an index into [`System::upstreams`].
    pub upstream: usize,
    /// The client's `load`.
    pub load: Field,
}

/// A system as its configurations describe it.
#[derive(Debug, Clone, Default)]
pub struct System {
    /// The formats read, in the order of the files.
    pub formats: Vec<SourceFormat>,
    /// Its upstreams, in the order the files name them.
    pub upstreams: Vec<Upstream>,
    /// Its routes, in the order the files name them.
    pub routes: Vec<Route>,
    /// Fields not imported, with where they are and why.
    pub skipped: Vec<Skipped>,
    /// Where requests come in, where traces show it (configurations do not: the writer then
    /// makes a client for each caller nobody calls).
    pub entries: Vec<Entry>,
}

impl System {
    /// A system of one format whose upstreams are each called once, by the configuration's
    /// own service, with `call` (the shape of a sidecar's or a client library's file).
    pub fn of(
        format: SourceFormat,
        upstreams: Vec<(Upstream, Vec<Field>)>,
        skipped: Vec<Skipped>,
    ) -> System {
        let mut system = System {
            formats: vec![format],
            skipped,
            ..System::default()
        };
        for (upstream, call) in upstreams {
            system.routes.push(Route {
                caller: None,
                upstream: system.upstreams.len(),
                matches: None,
                origin: upstream.origin.clone(),
                destination: None,
                call,
            });
            system.upstreams.push(upstream);
        }
        system
    }

    /// The index of the upstream `host` names (its qualified name and subset), if any.
    pub fn find(&self, host: &Host) -> Option<usize> {
        self.upstreams
            .iter()
            .position(|u| u.host.qualified == host.qualified && u.host.subset == host.subset)
    }

    /// The kind of upstream most of the system's are (for messages).
    pub fn kind(&self) -> Kind {
        self.upstreams.first().map_or(Kind::Cluster, |u| u.kind)
    }
}
