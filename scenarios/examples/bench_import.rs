//! Benchmark: `resim import` of a mesh of the size real systems have (issue 38). It generates
//! the Istio rules of a mesh of `--hosts` hosts, each calling `--routes` others (one
//! `kind: List` file, as `kubectl get -o yaml` prints it: a DestinationRule per host with a
//! connection pool and outlier detection, and a VirtualService per host whose HTTP routes
//! each name a caller by `sourceLabels.app`, with a timeout and retries), and times its
//! import (reading the file into the model, merging, writing the scenario, and reading the
//! scenario back to check it, as `resim import` does), alternating rounds with the baseline,
//! the same mesh of 10 hosts, and compares the time per route: a cost linear in the hosts
//! and routes gives a ratio near 1.
//!
//! `cargo run --release -p scenarios --example bench_import`
//! `cargo run --release -p scenarios --example bench_import -- --hosts 200 --rounds 1`
//! `cargo run --release -p scenarios --example bench_import -- --hosts 5000 --write mesh.yaml`
//! writes the mesh and times nothing, for `resim import mesh.yaml` (its wall time, or its
//! instructions under callgrind with `--toggle-collect='scenarios::import::import'`).
//!
//! The last line: `hosts=.. routes=.. bytes=.. import_secs=.. us_per_route=..
//! baseline_us_per_route=.. ratio=..`, the ratio being the mesh's time per route (medians over
//! the rounds) over the baseline's.

use clap::Parser;
use scenarios::format::limits::RunLimits;
use scenarios::import::{Input, Target, import};
use std::fmt::Write;
use std::time::Instant;

/// The baseline's hosts.
const BASELINE_HOSTS: usize = 10;

/// A mesh's import time against a small one's, per route.
#[derive(Parser)]
struct Args {
    /// Hosts of the mesh.
    #[arg(long, default_value_t = 1000)]
    hosts: usize,
    /// Hosts each host calls.
    #[arg(long, default_value_t = 20)]
    routes: usize,
    /// Rounds of mesh and baseline, alternating.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Write the mesh's rules to this file instead of timing its import.
    #[arg(long)]
    write: Option<std::path::PathBuf>,
}

/// The Istio rules of `hosts` hosts in `kind: List`: host `i` calls hosts `i+1 … i+routes`
/// (those there are: no cycle, as resim's calls have none), so each VirtualService has an
/// HTTP route per caller, `routes` of them but for the first hosts.
fn mesh(hosts: usize, routes: usize) -> String {
    let mut out = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for h in 0..hosts {
        let _ = write!(
            out,
            "- apiVersion: networking.istio.io/v1
  kind: DestinationRule
  metadata: {{name: h{h}, namespace: mesh}}
  spec:
    host: h{h}
    trafficPolicy:
      connectionPool: {{tcp: {{maxConnections: 100}}, http: {{http1MaxPendingRequests: 10}}}}
      outlierDetection: {{consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s}}
- apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata: {{name: h{h}, namespace: mesh}}
  spec:
    hosts: [h{h}]
    http:
"
        );
        for caller in h.saturating_sub(routes)..h {
            let _ = write!(
                out,
                "    - match: [{{sourceLabels: {{app: h{caller}}}}}]
      route: [{{destination: {{host: h{h}}}}}]
      timeout: 2s
      retries: {{attempts: 2, perTryTimeout: 500ms, retryOn: 5xx}}
"
            );
        }
    }
    out
}

/// Seconds to import `text`.
// Timing is the point of a benchmark; the simulations never read the wall clock.
#[allow(clippy::disallowed_methods)]
fn import_secs(text: &str) -> f64 {
    let input = Input {
        file: "mesh.yaml".to_string(),
        text: text.to_string(),
    };
    let limits = RunLimits::default();
    let started = Instant::now();
    let imported = import(&[input], None, &Target::default(), &limits).expect("the mesh imports");
    let secs = started.elapsed().as_secs_f64();
    assert!(imported.text.contains("services:"));
    secs
}

/// The routes of `mesh(hosts, routes)`.
fn routes_of(hosts: usize, routes: usize) -> usize {
    (0..hosts).map(|h| h.min(routes)).sum()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let args = Args::parse();
    let big = mesh(args.hosts, args.routes);
    if let Some(file) = &args.write {
        std::fs::write(file, &big).expect("the mesh is written");
        return;
    }
    let small = mesh(BASELINE_HOSTS, args.routes);
    let routes_big = routes_of(args.hosts, args.routes) as f64;
    let routes_small = routes_of(BASELINE_HOSTS, args.routes) as f64;
    let (mut times, mut baseline) = (Vec::new(), Vec::new());
    for round in 0..args.rounds.max(1) {
        let t = import_secs(&big);
        // The baseline is short: many imports make one sample.
        let repeat = 20;
        let b = (0..repeat).map(|_| import_secs(&small)).sum::<f64>() / f64::from(repeat);
        println!("round {round}: mesh {t:.3}s, baseline {:.6}s", b);
        times.push(t);
        baseline.push(b);
    }
    let t = median(times);
    let per_route = t / routes_big * 1e6;
    let baseline_per_route = median(baseline) / routes_small * 1e6;
    println!(
        "hosts={} routes={} bytes={} import_secs={t:.3} us_per_route={per_route:.1} baseline_us_per_route={baseline_per_route:.1} ratio={:.2}",
        args.hosts,
        routes_big,
        big.len(),
        per_route / baseline_per_route
    );
}
