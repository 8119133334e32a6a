//! [`Report`]: what a run shows, built from the world after the run; rendered as a human
//! report ([`Report::human`]), one JSON object (serde), a compact summary for snapshots
//! ([`Report::compact`]) and a CSV of the time series ([`Report::csv`]).
//!
//! Every figure is a pure function of the run's history, so two runs with the same digest
//! print the same report. Floats appear only here, rounded for display.

use crate::figures::{
    CallStats, ClientBucket, ClientFigures, Figures, ReasonCounts, RunMeta, ServiceBucket,
};
use crate::schema::{Expectation, FaultKind, Scenario};
use patterns::breaker::StateKind;
use serde::Serialize;
use sim_core::SimDuration;
use sim_core::metrics::LatencyHistogram;
use sim_net::LinkReport;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencyMs {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

impl LatencyMs {
    fn of(h: &LatencyHistogram) -> Self {
        let ms = |d: SimDuration| round3(d.as_millis_f64());
        LatencyMs {
            p50: ms(h.quantile(0.5)),
            p90: ms(h.quantile(0.9)),
            p99: ms(h.quantile(0.99)),
            p999: ms(h.quantile(0.999)),
            max: ms(h.max()),
            mean: ms(h.mean()),
        }
    }
}

/// Totals over every client.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// Requests the clients offered.
    pub offered: u64,
    /// Attempts that reached any service (client attempts, retries and downstream calls).
    pub attempts: u64,
    /// `attempts / offered`: the work one offered request causes in the system.
    pub amplification: f64,
    /// Requests that succeeded.
    pub successes: u64,
    /// Requests that failed.
    pub failures: u64,
    /// Failed requests by reason (only reasons that occurred).
    pub failures_by_reason: BTreeMap<String, u64>,
    /// Successes per simulated second.
    pub goodput_per_s: f64,
    /// Offered requests per simulated second.
    pub offered_per_s: f64,
    /// Latency of successful requests as the clients saw it.
    pub latency_ms: LatencyMs,
}

/// One client's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClientReport {
    /// Its name.
    pub name: String,
    /// Requests offered.
    pub offered: u64,
    /// Requests that succeeded.
    pub successes: u64,
    /// Requests that failed.
    pub failures: u64,
    /// Failures by reason.
    pub failures_by_reason: BTreeMap<String, u64>,
    /// Successes per simulated second.
    pub goodput_per_s: f64,
    /// Latency of its successful requests.
    pub latency_ms: LatencyMs,
}

/// One service's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServiceReport {
    /// Its name.
    pub name: String,
    /// Replicas.
    pub replicas: u32,
    /// Workers per replica.
    pub workers: u32,
    /// Mean busy fraction of all workers.
    pub utilisation: f64,
    /// Mean total queue length.
    pub queue_depth_mean: f64,
    /// Largest queue length of one replica.
    pub queue_depth_max: u64,
    /// Mean busy workers (requests in service or waiting on dependencies).
    pub in_flight_mean: f64,
    /// Attempts that reached it.
    pub arrivals: u64,
    /// Attempts it answered with success.
    pub ok: u64,
    /// Attempts it rejected or failed, by reason.
    pub failed_by_reason: BTreeMap<String, u64>,
    /// Jobs dropped because their deadline had passed.
    pub dropped_expired: u64,
    /// Jobs stopped by cancellation.
    pub cancelled: u64,
    /// Jobs served for callers that had given up.
    pub wasted_jobs: u64,
    /// Worker seconds spent on them.
    pub wasted_work_s: f64,
    /// Cache hits.
    pub cache_hits: u64,
    /// Attempts that ran the operation again (no idempotency store deduplicated them).
    pub duplicate_executions: u64,
    /// Attempts answered from the idempotency store without running.
    pub replayed: u64,
    /// Cache misses that waited for another request's fetch of the same key.
    pub coalesced: u64,
    /// Outlier ejections.
    pub ejections: u64,
    /// Times active health checks took a replica out of rotation.
    pub marked_unhealthy: u64,
    /// Replica crashes.
    pub crashes: u64,
    /// Messages lost on the way to or from it.
    pub messages_lost: u64,
    /// Highest drop probability of its PID shedder.
    pub pid_drop_ratio_max: f64,
}

/// A breaker transition.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Transition {
    /// When, in seconds.
    pub t_s: f64,
    /// From state.
    pub from: String,
    /// To state.
    pub to: String,
}

/// One breaker's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BreakerReport {
    /// The replica of the calling service that holds it (`None` for a client's).
    pub replica: Option<u32>,
    /// State at the end.
    pub state: String,
    /// Transitions in total.
    pub transitions_total: u64,
    /// The first transitions.
    pub transitions: Vec<Transition>,
}

/// One call site's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallReport {
    /// Where it is in the file.
    pub path: String,
    /// Its counters, summed over the replicas of the calling service (serialised in place).
    #[serde(flatten)]
    pub counts: CallStats,
    /// Rejections by a layer of the stack, by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Its breakers, outermost first (one set per replica of the calling service).
    pub breakers: Vec<BreakerReport>,
}

/// Per-service values of one bucket.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServicePoint {
    /// The service.
    pub name: String,
    /// Attempts arriving.
    pub arrivals: u64,
    /// Attempts answered with success.
    pub ok: u64,
    /// Mean total queue length.
    pub queue_mean: f64,
    /// Largest total queue length.
    pub queue_max: f64,
    /// Mean busy workers.
    pub busy_mean: f64,
}

/// One report bucket.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeriesRow {
    /// Start of the bucket, in seconds.
    pub t_s: f64,
    /// Requests offered in it (all clients).
    pub offered: u64,
    /// Requests that succeeded in it.
    pub successes: u64,
    /// Requests that failed in it.
    pub failures: u64,
    /// `successes / offered` (1 when nothing was offered).
    pub goodput_ratio: f64,
    /// Mean latency of the successes, in milliseconds.
    pub latency_mean_ms: f64,
    /// 99th percentile latency of the successes, in milliseconds (the upper edge of its log
    /// bin: within 25% above the true value).
    pub latency_p99_ms: f64,
    /// Per service.
    pub services: Vec<ServicePoint>,
}

/// The verdict on one expectation.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExpectationResult {
    /// What was expected.
    pub expectation: String,
    /// What was observed.
    pub observed: String,
    /// Whether it held.
    pub pass: bool,
}

/// Everything a run shows.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// The file it came from.
    pub file: String,
    /// The seed of the run.
    pub seed: u64,
    /// The run digest, as 16 hex digits.
    pub digest: String,
    /// Events executed.
    pub events: u64,
    /// Why the run stopped.
    pub stop_reason: String,
    /// Simulated seconds.
    pub simulated_s: f64,
    /// Report bucket width in seconds.
    pub bucket_s: f64,
    /// Totals.
    pub summary: Summary,
    /// Per client.
    pub clients: Vec<ClientReport>,
    /// Per service.
    pub services: Vec<ServiceReport>,
    /// Per call site.
    pub calls: Vec<CallReport>,
    /// One entry per bucket.
    pub series: Vec<SeriesRow>,
    /// Verdicts.
    pub expectations: Vec<ExpectationResult>,
    /// Per network link, when the scenario has a `network` section.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<LinkReport>,
    /// The events of the trace window, when one was asked for (`--trace FROM..TO`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<String>,
}

/// How many breaker transitions a report lists (the count is always complete).
const TRANSITIONS_LISTED: usize = 32;

fn state_name(s: StateKind) -> &'static str {
    match s {
        StateKind::Closed => "closed",
        StateKind::Open => "open",
        StateKind::HalfOpen => "half_open",
        StateKind::ForcedOpen => "forced_open",
        StateKind::ForcedClosed => "forced_closed",
        StateKind::Disabled => "disabled",
    }
}

fn round3(x: f64) -> f64 {
    libm::round(x * 1000.0) / 1000.0
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

fn reasons(counts: &ReasonCounts) -> BTreeMap<String, u64> {
    counts
        .nonzero()
        .map(|(r, n)| (r.name().to_string(), n))
        .collect()
}

/// The links a report lists: every link that carried something when the scenario says
/// anything about its network (a `network` section, a service latency, a network fault) or
/// when a message was lost; otherwise messages took no time and nothing was lost, and the
/// list would only repeat the calls.
fn network_figures(scenario: &Scenario, figures: &Figures) -> Vec<LinkReport> {
    let described = scenario.network.is_some()
        || scenario.services.values().any(|s| s.latency.is_some())
        || scenario.faults.iter().any(|f| {
            matches!(
                f.kind,
                FaultKind::Latency { .. } | FaultKind::Loss { .. } | FaultKind::Partition { .. }
            )
        });
    let lost = figures.links.iter().any(|l| l.sent > l.delivered);
    if described || lost {
        figures.links.clone()
    } else {
        Vec::new()
    }
}

fn bucket_index(t: SimDuration, bucket: SimDuration) -> usize {
    (t.as_nanos() / bucket.as_nanos()) as usize
}

/// The successes and offered requests of a client among the requests offered in buckets
/// `[from, to)`.
fn window_ratio(c: &ClientFigures, from: usize, to: usize) -> (u64, u64) {
    let to = to.min(c.buckets.len());
    let window = c.buckets.get(from.min(to)..to).unwrap_or_default();
    let offered = window.iter().map(|b| b.offered).sum();
    let ok = window.iter().map(|b| b.successes).sum();
    (ok, offered)
}

impl Report {
    /// Builds the report of a finished run from its scenario, its metadata and its figures.
    pub fn build(scenario: &Scenario, meta: &RunMeta, figures: &Figures) -> Report {
        let end = figures.end;
        let bucket = figures.bucket;
        let secs = end.as_secs_f64().max(1e-9);
        let buckets = figures.bucket_count();

        let mut failed = ReasonCounts::default();
        let (mut offered, mut successes, mut failures) = (0, 0, 0);
        let clients: Vec<ClientReport> = figures
            .clients
            .iter()
            .map(|c| {
                let (o, s, f) = (c.offered(), c.successes(), c.failures());
                offered += o;
                successes += s;
                failures += f;
                failed.absorb(&c.failed);
                ClientReport {
                    name: c.name.clone(),
                    offered: o,
                    successes: s,
                    failures: f,
                    failures_by_reason: reasons(&c.failed),
                    goodput_per_s: round3(s as f64 / secs),
                    latency_ms: LatencyMs::of(&c.latency),
                }
            })
            .collect();
        let attempts: u64 = figures.services.iter().map(|s| s.counts.arrivals).sum();
        let summary = Summary {
            offered,
            attempts,
            amplification: round3(ratio(attempts, offered.max(1))),
            successes,
            failures,
            failures_by_reason: reasons(&failed),
            goodput_per_s: round3(successes as f64 / secs),
            offered_per_s: round3(offered as f64 / secs),
            latency_ms: LatencyMs::of(&figures.latency),
        };

        let services: Vec<ServiceReport> = figures
            .services
            .iter()
            .map(|s| {
                let mean = |gauge: fn(&ServiceBucket) -> f64| {
                    let total: f64 = s
                        .buckets
                        .iter()
                        .enumerate()
                        .map(|(i, b)| {
                            let start = i as u64 * bucket.as_nanos();
                            let len =
                                (end.as_nanos().min(start + bucket.as_nanos()) - start) as f64;
                            gauge(b) * len
                        })
                        .sum();
                    total / end.as_nanos().max(1) as f64
                };
                let workers_total = f64::from(s.replicas * s.workers);
                let c = &s.counts;
                ServiceReport {
                    name: s.name.clone(),
                    replicas: s.replicas,
                    workers: s.workers,
                    utilisation: round3(
                        c.busy_ns as f64 / (workers_total * end.as_nanos().max(1) as f64),
                    ),
                    queue_depth_mean: round3(mean(|b| b.queue.mean)),
                    queue_depth_max: c.queue_depth_max,
                    in_flight_mean: round3(mean(|b| b.busy.mean)),
                    arrivals: c.arrivals,
                    ok: c.ok,
                    failed_by_reason: reasons(&c.failed),
                    dropped_expired: c.dropped_expired,
                    cancelled: c.cancelled,
                    wasted_jobs: c.wasted_jobs,
                    wasted_work_s: round3(c.wasted_ns as f64 / 1e9),
                    cache_hits: c.cache_hits,
                    duplicate_executions: c.duplicate_executions,
                    replayed: c.replayed,
                    coalesced: c.coalesced,
                    ejections: c.ejections,
                    marked_unhealthy: c.marked_unhealthy,
                    crashes: c.crashes,
                    messages_lost: c.messages_lost,
                    pid_drop_ratio_max: round3(s.pid_drop_ratio_max),
                }
            })
            .collect();

        let calls: Vec<CallReport> = figures
            .call_sites
            .iter()
            .map(|site| CallReport {
                path: site.path.clone(),
                counts: site.counts.clone(),
                rejected_by_reason: reasons(&site.counts.rejected),
                breakers: site
                    .breakers
                    .iter()
                    .map(|b| BreakerReport {
                        replica: b.replica,
                        state: state_name(b.state).to_string(),
                        transitions_total: b.transitions_total,
                        transitions: b
                            .transitions
                            .iter()
                            .take(TRANSITIONS_LISTED)
                            .map(|t| Transition {
                                t_s: round3(t.at.as_secs_f64()),
                                from: state_name(t.from).to_string(),
                                to: state_name(t.to).to_string(),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect();

        let series = (0..buckets)
            .map(|i| {
                let total = figures.clients.iter().map(|c| c.bucket(i)).fold(
                    ClientBucket::default(),
                    |mut t, b| {
                        t.offered += b.offered;
                        t.successes += b.successes;
                        t.failures += b.failures;
                        t.latency_sum_ns += b.latency_sum_ns;
                        t
                    },
                );
                let bins = figures
                    .buckets
                    .get(i)
                    .map(|b| b.latency)
                    .unwrap_or_default();
                SeriesRow {
                    latency_p99_ms: round3(bins.quantile(0.99).unwrap_or_default().as_millis_f64()),
                    t_s: round3((bucket * i as u64).as_secs_f64()),
                    offered: total.offered,
                    successes: total.successes,
                    failures: total.failures,
                    goodput_ratio: round3(ratio(total.successes, total.offered)),
                    latency_mean_ms: round3(if total.successes == 0 {
                        0.0
                    } else {
                        total.latency_sum_ns as f64 / total.successes as f64 / 1e6
                    }),
                    services: figures
                        .services
                        .iter()
                        .map(|sv| {
                            let b = sv.buckets.get(i).copied().unwrap_or_default();
                            ServicePoint {
                                name: sv.name.clone(),
                                arrivals: b.arrivals,
                                ok: b.ok,
                                queue_mean: round3(b.queue.mean),
                                queue_max: round3(b.queue.max),
                                busy_mean: round3(b.busy.mean),
                            }
                        })
                        .collect(),
                }
            })
            .collect();

        let expectations = scenario
            .expectations
            .iter()
            .map(|e| judge(e, figures, &summary, bucket, buckets))
            .collect();

        let mut trace = figures.trace.clone();
        if figures.trace_left_out > 0 {
            trace.push(format!(
                "(and {} more events in the window, left out)",
                figures.trace_left_out
            ));
        }
        Report {
            scenario: scenario.name.clone(),
            file: meta.file.clone(),
            seed: meta.seed,
            digest: format!("{:016x}", meta.digest),
            events: meta.events,
            stop_reason: meta.stop.as_str().to_string(),
            simulated_s: round3(end.as_secs_f64()),
            bucket_s: round3(bucket.as_secs_f64()),
            summary,
            clients,
            services,
            calls,
            series,
            expectations,
            network: network_figures(scenario, figures),
            trace,
        }
    }

    /// True when every expectation held.
    pub fn passed(&self) -> bool {
        self.expectations.iter().all(|e| e.pass)
    }

    /// The success ratio of all clients over `[from, to)` seconds, from the series.
    pub fn goodput_ratio_between(&self, from_s: f64, to_s: f64) -> f64 {
        let (ok, offered) = self
            .series
            .iter()
            .filter(|r| r.t_s >= from_s && r.t_s < to_s)
            .fold((0, 0), |(a, b), r| (a + r.successes, b + r.offered));
        ratio(ok, offered)
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        format!("resim run {} --seed {}", self.file, self.seed)
    }

    /// The readable report: summary, components, expectations, digest, and the replay
    /// command as the last line.
    pub fn human(&self) -> String {
        let mut o = String::new();
        let s = &self.summary;
        let _ = writeln!(
            o,
            "resim · {} · seed {} · {}s simulated · {} events · stopped: {}",
            self.scenario, self.seed, self.simulated_s, self.events, self.stop_reason
        );
        let _ = writeln!(o);
        let _ = writeln!(o, "summary");
        let _ = writeln!(
            o,
            "  offered {:>10}   ({:.1}/s)   attempts {}   amplification {:.2}",
            s.offered, s.offered_per_s, s.attempts, s.amplification
        );
        let _ = writeln!(
            o,
            "  successes {:>8}   ({:.1}%)   goodput {:.1}/s",
            s.successes,
            100.0 * ratio(s.successes, s.offered),
            s.goodput_per_s
        );
        let _ = writeln!(
            o,
            "  failures {:>9}   {}",
            s.failures,
            join_reasons(&s.failures_by_reason)
        );
        let l = &s.latency_ms;
        let _ = writeln!(
            o,
            "  latency ms   p50 {:.1}   p90 {:.1}   p99 {:.1}   p999 {:.1}   max {:.1}",
            l.p50, l.p90, l.p99, l.p999, l.max
        );
        if self.clients.len() > 1 {
            let _ = writeln!(o);
            let _ = writeln!(o, "clients");
            for c in &self.clients {
                let _ = writeln!(
                    o,
                    "  {:<16} offered {:>8}  ok {:>8}  goodput {:>8.1}/s  p99 {:.1}ms  {}",
                    c.name,
                    c.offered,
                    c.successes,
                    c.goodput_per_s,
                    c.latency_ms.p99,
                    join_reasons(&c.failures_by_reason)
                );
            }
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "services");
        for v in &self.services {
            let _ = writeln!(
                o,
                "  {:<16} util {:>5.1}%  in-flight {:>7.1}  queue mean {:>7.1} max {:>5}  arrivals {:>8}  ok {:>8}",
                v.name,
                100.0 * v.utilisation,
                v.in_flight_mean,
                v.queue_depth_mean,
                v.queue_depth_max,
                v.arrivals,
                v.ok
            );
            let mut extra = Vec::new();
            if !v.failed_by_reason.is_empty() {
                extra.push(format!("failed: {}", join_reasons(&v.failed_by_reason)));
            }
            for (name, n) in [
                ("wasted jobs", v.wasted_jobs),
                ("dropped expired", v.dropped_expired),
                ("cancelled", v.cancelled),
                ("cache hits", v.cache_hits),
                ("duplicate executions", v.duplicate_executions),
                ("replayed", v.replayed),
                ("coalesced misses", v.coalesced),
                ("ejections", v.ejections),
                ("marked unhealthy", v.marked_unhealthy),
                ("crashes", v.crashes),
                ("lost messages", v.messages_lost),
            ] {
                if n > 0 {
                    extra.push(format!("{name} {n}"));
                }
            }
            if v.wasted_work_s > 0.0 {
                extra.push(format!("wasted work {:.1}s", v.wasted_work_s));
            }
            if v.pid_drop_ratio_max > 0.0 {
                extra.push(format!("pid drop max {:.0}%", 100.0 * v.pid_drop_ratio_max));
            }
            if !extra.is_empty() {
                let _ = writeln!(o, "  {:<16} {}", "", extra.join("  "));
            }
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "calls");
        for c in &self.calls {
            let _ = writeln!(
                o,
                "  {:<28} calls {:>8}  attempts {:>8}  retries {:>7}  budget exhausted {:>6}  timeouts {:>7}  late replies {:>7}",
                c.path,
                c.counts.calls,
                c.counts.attempts,
                c.counts.retries,
                c.counts.budget_exhausted,
                c.counts.timeouts,
                c.counts.late_replies
            );
            if c.counts.fallback_cache + c.counts.fallback_static > 0 {
                let _ = writeln!(
                    o,
                    "  {:<28} failures answered by the fallback: {} from the last good answer, {} static",
                    "", c.counts.fallback_cache, c.counts.fallback_static
                );
            }
            if c.counts.hedges > 0 {
                let _ = writeln!(
                    o,
                    "  {:<28} hedges sent: {}, won by a hedge: {}",
                    "", c.counts.hedges, c.counts.hedge_wins
                );
            }
            if c.counts.bulkhead_waits > 0 {
                let _ = writeln!(
                    o,
                    "  {:<28} waited for a bulkhead slot: {}",
                    "", c.counts.bulkhead_waits
                );
            }
            if !c.rejected_by_reason.is_empty() {
                let _ = writeln!(
                    o,
                    "  {:<28} rejected by the stack: {}",
                    "",
                    join_reasons(&c.rejected_by_reason)
                );
            }
            for b in &c.breakers {
                let first: Vec<String> = b
                    .transitions
                    .iter()
                    .take(4)
                    .map(|t| format!("{}s {}→{}", t.t_s, t.from, t.to))
                    .collect();
                let owner = b
                    .replica
                    .map_or(String::new(), |r| format!(" (replica {r})"));
                let _ = writeln!(
                    o,
                    "  {:<28} breaker{owner} {} after {} transitions{}{}",
                    "",
                    b.state,
                    b.transitions_total,
                    if first.is_empty() { "" } else { ": " },
                    first.join(", ")
                );
            }
        }
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "over time (success ratio, p99 latency, then each service's queue, per bucket)"
        );
        let _ = writeln!(
            o,
            "  goodput  {}",
            sparkline(self.series.iter().map(|r| r.goodput_ratio), 1.0)
        );
        let p99_peak = self
            .series
            .iter()
            .map(|r| r.latency_p99_ms)
            .fold(0.0, f64::max);
        let _ = writeln!(
            o,
            "  p99      {}  (peak {:.0}ms)",
            // A bucket without a success has no latency to show: it stays blank.
            sparkline(
                self.series.iter().map(|r| if r.successes == 0 {
                    f64::NAN
                } else {
                    r.latency_p99_ms
                }),
                p99_peak
            ),
            p99_peak
        );
        for (i, v) in self.services.iter().enumerate() {
            let peak = self
                .series
                .iter()
                .map(|r| r.services[i].queue_mean)
                .fold(0.0, f64::max);
            let _ = writeln!(
                o,
                "  {:<8} {}  (peak {:.0})",
                short(&v.name),
                sparkline(self.series.iter().map(|r| r.services[i].queue_mean), peak),
                peak
            );
        }
        if !self.network.is_empty() {
            let _ = writeln!(o);
            let _ = writeln!(o, "network");
            for l in self.network.iter().filter(|l| l.sent > 0) {
                let dropped: u64 = l.dropped.values().sum();
                let _ = writeln!(
                    o,
                    "  {:<24} sent {:>8}  delivered {:>8}  dropped {:>6}  latency ms p50 {:.1} p99 {:.1}",
                    format!("{} → {}", l.source, l.target),
                    l.sent,
                    l.delivered,
                    dropped,
                    l.latency_ms_p50,
                    l.latency_ms_p99
                );
            }
        }
        if !self.expectations.is_empty() {
            let _ = writeln!(o);
            let _ = writeln!(o, "expectations");
            for e in &self.expectations {
                let _ = writeln!(
                    o,
                    "  {} {}: {}",
                    if e.pass { "PASS" } else { "FAIL" },
                    e.expectation,
                    e.observed
                );
            }
        }
        if !self.trace.is_empty() {
            let _ = writeln!(o);
            let _ = writeln!(o, "trace");
            for line in &self.trace {
                let _ = writeln!(o, "  {line}");
            }
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "digest {}", self.digest);
        let _ = writeln!(o, "replay: {}", self.replay_command());
        o
    }

    /// A compact summary with fixed columns and rounded values, for snapshots.
    pub fn compact(&self) -> String {
        let mut o = String::new();
        let s = &self.summary;
        let _ = writeln!(
            o,
            "offered {} attempts {} amplification {:.2} ok {} failed {} ({})",
            s.offered,
            s.attempts,
            s.amplification,
            s.successes,
            s.failures,
            join_reasons(&s.failures_by_reason)
        );
        let l = &s.latency_ms;
        let _ = writeln!(
            o,
            "goodput {:.1}/s latency ms p50 {:.1} p90 {:.1} p99 {:.1} max {:.1}",
            s.goodput_per_s, l.p50, l.p90, l.p99, l.max
        );
        for v in &self.services {
            let _ = writeln!(
                o,
                "service {:<10} util {:>5.1}% queue mean {:>7.1} max {:>5} wasted {:>7.1}s ejections {}",
                v.name,
                100.0 * v.utilisation,
                v.queue_depth_mean,
                v.queue_depth_max,
                v.wasted_work_s,
                v.ejections
            );
        }
        for c in &self.calls {
            let _ = writeln!(
                o,
                "call {:<26} attempts {:>7} retries {:>7} budget_exhausted {:>6} breaker transitions {}",
                c.path,
                c.counts.attempts,
                c.counts.retries,
                c.counts.budget_exhausted,
                c.breakers.iter().map(|b| b.transitions_total).sum::<u64>()
            );
        }
        let _ = writeln!(
            o,
            "goodput per bucket {}",
            sparkline(self.series.iter().map(|r| r.goodput_ratio), 1.0)
        );
        for e in &self.expectations {
            let _ = writeln!(
                o,
                "{} {}: {}",
                if e.pass { "PASS" } else { "FAIL" },
                e.expectation,
                e.observed
            );
        }
        let _ = writeln!(
            o,
            "digest {} events {} stop {}",
            self.digest, self.events, self.stop_reason
        );
        o
    }

    /// The time series as CSV: one row per bucket, per-service columns after the totals.
    pub fn csv(&self) -> String {
        let mut o = String::from(
            "t_s,offered,successes,failures,goodput_ratio,latency_mean_ms,latency_p99_ms",
        );
        for v in &self.services {
            let n = &v.name;
            let _ = write!(
                o,
                ",{n}_arrivals,{n}_ok,{n}_queue_mean,{n}_queue_max,{n}_busy_mean"
            );
        }
        o.push('\n');
        for r in &self.series {
            let _ = write!(
                o,
                "{},{},{},{},{},{},{}",
                r.t_s,
                r.offered,
                r.successes,
                r.failures,
                r.goodput_ratio,
                r.latency_mean_ms,
                r.latency_p99_ms
            );
            for p in &r.services {
                let _ = write!(
                    o,
                    ",{},{},{},{},{}",
                    p.arrivals, p.ok, p.queue_mean, p.queue_max, p.busy_mean
                );
            }
            o.push('\n');
        }
        o
    }
}

fn short(name: &str) -> String {
    name.chars().take(8).collect()
}

fn join_reasons(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".to_string();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One character per value (at most 60, neighbouring values averaged into one column); NaN
/// values are left out, and a column of only NaN is blank.
fn sparkline(values: impl Iterator<Item = f64>, top: f64) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let v: Vec<f64> = values.collect();
    if v.is_empty() {
        return String::new();
    }
    let columns = v.len().min(60);
    (0..columns)
        .map(|c| {
            let from = c * v.len() / columns;
            let to = ((c + 1) * v.len() / columns).max(from + 1);
            let known: Vec<f64> = v[from..to]
                .iter()
                .copied()
                .filter(|x| !x.is_nan())
                .collect();
            if known.is_empty() {
                return ' ';
            }
            let mean = known.iter().sum::<f64>() / known.len() as f64;
            let x = if top > 0.0 {
                (mean / top).clamp(0.0, 1.0)
            } else {
                0.0
            };
            BARS[libm::round(x * 7.0) as usize]
        })
        .collect()
}

fn judge(
    e: &Expectation,
    figures: &Figures,
    summary: &Summary,
    bucket: SimDuration,
    buckets: usize,
) -> ExpectationResult {
    let client = |name: &str| {
        figures
            .clients
            .iter()
            .find(|c| c.name == name)
            .expect("expectation clients are checked by validation")
    };
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    match e {
        Expectation::GoodputAtLeast {
            client: name,
            after,
            until,
            min_ratio: r,
        }
        | Expectation::GoodputAtMost {
            client: name,
            after,
            until,
            max_ratio: r,
        } => {
            let at_least = matches!(e, Expectation::GoodputAtLeast { .. });
            let to = until.map_or(buckets, |u| bucket_index(u, bucket).min(buckets));
            let (ok, offered) = window_ratio(client(name), bucket_index(*after, bucket), to);
            let observed = ratio(ok, offered);
            let window = match until {
                Some(u) => format!("from {after} to {u}"),
                None => format!("after {after}"),
            };
            ExpectationResult {
                expectation: format!(
                    "{name} success ratio {window} at {} {}",
                    if at_least { "least" } else { "most" },
                    pct(*r)
                ),
                observed: format!("{} ({ok} of {offered})", pct(observed)),
                pass: if at_least {
                    observed >= *r
                } else {
                    observed <= *r
                },
            }
        }
        Expectation::P99AtMost { client: name, max } => {
            let p99 = client(name).latency.quantile(0.99);
            ExpectationResult {
                expectation: format!("{name} p99 latency at most {max}"),
                observed: format!("{:.1}ms", p99.as_millis_f64()),
                pass: p99 <= *max,
            }
        }
        Expectation::AmplificationAtMost { max } => ExpectationResult {
            expectation: format!("amplification at most {max:.2}"),
            observed: format!("{:.2}", summary.amplification),
            pass: summary.amplification <= *max,
        },
        Expectation::RecoveredWithin {
            client: name,
            after,
            within,
            min_ratio,
        } => {
            let stats = client(name);
            // The last bucket holds requests still in flight when the run stopped.
            let last = buckets.saturating_sub(1);
            let first = after.as_nanos().div_ceil(bucket.as_nanos()) as usize;
            let good = |i: usize| {
                let (ok, offered) = window_ratio(stats, i, i + 1);
                ratio(ok, offered) >= *min_ratio
            };
            let recovered = (first..last).find(|&k| (k..last).all(good));
            let expectation = format!(
                "{name} back to {} success within {within} after {after}",
                pct(*min_ratio)
            );
            match recovered {
                Some(k) => {
                    let at = bucket * k as u64;
                    let took = at.saturating_sub(*after);
                    ExpectationResult {
                        expectation,
                        observed: format!("recovered {took} after"),
                        pass: took <= *within,
                    }
                }
                None => ExpectationResult {
                    expectation,
                    observed: "never recovered".to_string(),
                    pass: false,
                },
            }
        }
    }
}
