//! [`Report::build`]: the report of a finished run, from its scenario, its metadata and its
//! figures. Nothing here sees the world; every figure is a function of [`Figures`].

use super::types::*;
use super::{ratio, reasons, round3, verdicts};
use crate::figures::{
    BreakerFigures, CallSiteFigures, ClientBucket, ClientFigures, Figures, LimiterFigures,
    ReasonCounts, RunMeta, ServiceBucket, ServiceFigures,
};
use crate::figures::{ClassFigures, TrafficFigures};
use crate::format::schema::{FaultKind, Load, Scenario, Schedule, times};
use sim_core::metrics::{GaugeBucket, LatencyHistogram};
use sim_core::{SimDuration, SimTime};
use std::sync::Arc;

/// `a / b`, or 0 when `b` is zero (then `a` is zero too: nothing was offered or called).
fn per(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

/// The links a report lists: every link that carried something when the scenario says
/// anything about its network (a `network` section, a service latency, a network fault) or
/// when a message was lost; otherwise messages took no time and nothing was lost, and the
/// list would only repeat the calls.
fn network(scenario: &Scenario, figures: &Figures) -> Vec<sim_net::LinkReport> {
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

/// How many breaker transitions a report lists (the count is always complete).
const TRANSITIONS_LISTED: usize = 32;

impl Report {
    /// Builds the report of a finished run from its scenario, its metadata and its figures.
    pub fn build(scenario: &Scenario, meta: &RunMeta, figures: &Figures) -> Report {
        // First: the check walks a JSON copy of the whole scenario, gone before the rows
        // below exist (it was a tenth of a large world's peak when made beside them).
        let warnings = crate::format::warnings::warnings(scenario);
        let secs = figures.end.as_secs_f64().max(1e-9);
        let summary = summary(figures, secs);
        let offered = summary.offered;
        let metastability = super::metastability::judge(scenario, figures);
        let expectations = scenario
            .expectations
            .iter()
            .map(|e| verdicts::judge(e, figures, &summary, &metastability))
            .collect();
        let mut trace = figures.trace.clone();
        if figures.trace_left_out > 0 {
            trace.push(format!(
                "(and {} more events in the window, left out)",
                figures.trace_left_out
            ));
        }
        let mut report = Report {
            scenario: scenario.name.clone(),
            file: meta.file.clone(),
            seed: meta.seed,
            digest: format!("{:016x}", meta.digest),
            events: meta.events,
            stop_reason: meta.stop.as_str().to_string(),
            stop_detail: meta.stop_detail.clone(),
            replay_flags: meta.replay_flags.clone(),
            simulated_s: round3(figures.end.as_secs_f64()),
            bucket_s: round3(figures.bucket.as_secs_f64()),
            summary,
            clients: figures.clients.iter().map(|c| client(c, secs)).collect(),
            services: figures
                .services
                .iter()
                .map(|s| service(s, figures, offered, declared_work(scenario, &s.name)))
                .collect(),
            calls: figures
                .call_sites
                .iter()
                .map(|site| call(site, figures.end))
                .collect(),
            // A run that kept only its clients' series has no rows (`Series::Clients`).
            series: match figures.series_kept() {
                true => {
                    let names = SeriesNames::of(figures);
                    (0..figures.bucket_count())
                        .map(|i| series_row(figures, &names, i))
                        .collect()
                }
                false => Vec::new(),
            },
            timeline: timeline(scenario, figures.end),
            expectations,
            metastability: metastability.ok(),
            network: network(scenario, figures),
            limiters: figures.distributed.clone(),
            trace,
            warnings,
            why: Vec::new(),
        };
        // The explanations read the rows.
        if figures.series_kept() {
            report.why = super::why::explain(scenario, &report, false);
            super::why::add_examples(&mut report.why, &figures.failed_examples, report.bucket_s);
        }
        report
    }
}

/// A duration in milliseconds, rounded for display.
fn ms(d: SimDuration) -> f64 {
    round3(d.as_millis_f64())
}

impl LatencyMs {
    /// The figures of `h`; `None` when it is empty.
    fn of(h: &LatencyHistogram) -> Option<Self> {
        if h.count() == 0 {
            return None;
        }
        let h = h.binned();
        Some(LatencyMs {
            p50: ms(h.quantile(0.5)),
            p90: ms(h.quantile(0.9)),
            p99: ms(h.quantile(0.99)),
            p999: ms(h.quantile(0.999)),
            max: ms(h.max()),
            mean: ms(h.mean()),
        })
    }
}

/// Totals over every client; `secs` is the simulated time.
fn summary(figures: &Figures, secs: f64) -> Summary {
    let mut failed = ReasonCounts::default();
    for c in &figures.clients {
        failed.absorb(&c.failed);
    }
    let offered: u64 = figures.clients.iter().map(ClientFigures::offered).sum();
    let successes: u64 = figures.clients.iter().map(ClientFigures::successes).sum();
    let failures = figures.clients.iter().map(ClientFigures::failures).sum();
    // The clients' call sites make the offered requests: their attempts are what the
    // clients paid, whatever the tiers below them did with each one.
    let attempts: u64 = figures
        .call_sites
        .iter()
        .filter(|site| site.from_client)
        .map(|site| site.counts.attempts)
        .sum();
    Summary {
        offered,
        attempts,
        amplification: round3(per(attempts, offered)),
        successes,
        failures,
        requests_in_flight: figures.requests_in_flight,
        failures_by_reason: reasons(&failed),
        goodput_per_s: round3(successes as f64 / secs),
        offered_per_s: round3(offered as f64 / secs),
        latency_ms: LatencyMs::of(&figures.latency),
    }
}

fn client(c: &ClientFigures, secs: f64) -> ClientReport {
    ClientReport {
        name: c.name.clone(),
        offered: c.offered(),
        successes: c.successes(),
        failures: c.failures(),
        failures_by_reason: reasons(&c.failed),
        goodput_per_s: round3(c.successes() as f64 / secs),
        latency_ms: LatencyMs::of(&c.latency),
        makespan_ms: c.makespan.map(|d| round3(d.as_nanos() as f64 / 1e6)),
        classes: c.classes.iter().map(|k| class(k, secs)).collect(),
    }
}

fn traffic(t: &TrafficFigures, secs: f64) -> TrafficReport {
    TrafficReport {
        offered: t.offered,
        successes: t.successes,
        failures: t.failed.total(),
        failures_by_reason: reasons(&t.failed),
        goodput_per_s: round3(t.successes as f64 / secs),
        success_ratio: (t.offered > 0).then(|| round3(ratio(t.successes, t.offered))),
        latency_ms: LatencyMs::of(&t.latency),
    }
}

fn class(k: &ClassFigures, secs: f64) -> ClassReport {
    let mut tenants = Vec::new();
    if let Some(t) = &k.tenants {
        for (rank, f) in t.ranked.iter().enumerate() {
            tenants.push(TenantReport {
                tenant: (u64::from(t.first) + rank as u64).to_string(),
                keys: 1,
                traffic: traffic(f, secs),
            });
        }
        let others = t.keys - t.ranked.len() as u32;
        if others > 0 {
            tenants.push(TenantReport {
                tenant: "others".to_string(),
                keys: others,
                traffic: traffic(&t.others, secs),
            });
        }
    }
    ClassReport {
        name: k.name.clone(),
        priority: k.priority,
        cost: k.cost,
        traffic: traffic(&k.total, secs),
        tenants,
    }
}

/// The time-weighted mean of a gauge over the whole run (a partial last bucket weighs its
/// own length).
fn run_mean(s: &ServiceFigures, figures: &Figures, gauge: fn(&ServiceBucket) -> f64) -> f64 {
    let (end, width) = (figures.end.as_nanos(), figures.series_bucket.as_nanos());
    let total: f64 = s
        .buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let start = i as u64 * width;
            gauge(b) * (end.min(start.saturating_add(width)) - start) as f64
        })
        // From +0.0: an empty f64 sum is -0.0, which would print as "-0.0".
        .fold(0.0, |total, x| total + x);
    total / end.max(1) as f64
}

/// Service `s`; `offered` is the number of requests all clients offered.
/// The p50 and p99 of the `work` the file declares for service `name`, in milliseconds.
fn declared_work(scenario: &Scenario, name: &str) -> (Option<f64>, Option<f64>) {
    let work = scenario
        .services
        .get(name)
        .and_then(|s| s.work.compile().ok());
    let at = |q: f64| work.as_ref().map(|w| round3(w.quantile_nanos(q) / 1e6));
    (at(0.5), at(0.99))
}

/// The replicas of a service: in f64, since replicas × workers can exceed u32, and those
/// that join and leave rotation count by their time-weighted mean.
fn replicas_mean(s: &ServiceFigures) -> f64 {
    s.scaling.as_ref().map_or(f64::from(s.replicas), |f| {
        f.replicas.iter().map(|b| b.mean).sum::<f64>() / f.replicas.len().max(1) as f64
    })
}

/// The largest of a figure over a service's buckets (0 without buckets).
fn bucket_max(s: &ServiceFigures, figure: impl Fn(&ServiceBucket) -> u64) -> u64 {
    s.buckets.iter().map(figure).max().unwrap_or(0)
}

fn service(
    s: &ServiceFigures,
    figures: &Figures,
    offered: u64,
    (declared_p50, declared_p99): (Option<f64>, Option<f64>),
) -> ServiceReport {
    let replicas = replicas_mean(s);
    let workers_total = replicas * f64::from(s.workers);
    let c = &s.counts;
    let (wait, work) = (s.wait.binned(), s.work.binned());
    ServiceReport {
        name: s.name.clone(),
        replicas: s.replicas,
        workers: s.workers,
        load_factor: round3(per(c.arrivals, offered)),
        utilisation: round3(
            c.busy_ns as f64 / (workers_total * figures.end.as_nanos().max(1) as f64),
        ),
        queue_depth_total_mean: round3(run_mean(s, figures, |b| b.queue.mean)),
        queue_depth_total_max: bucket_max(s, |b| b.queue.max as u64),
        queue_depth_replica_mean: round3(
            run_mean(s, figures, |b| b.queue.mean) / replicas.max(f64::MIN_POSITIVE),
        ),
        queue_depth_replica_max: bucket_max(s, |b| b.queue_replica_max),
        queued: c.queued,
        waited_ratio: (c.arrivals > 0).then(|| round3(c.queued as f64 / c.arrivals as f64)),
        wait_ms_mean: (wait.count() > 0).then(|| ms(wait.mean())),
        wait_ms_p99: (wait.count() > 0).then(|| ms(wait.quantile(0.99))),
        work_ms_p50: (work.count() > 0).then(|| ms(work.quantile(0.5))),
        work_ms_p99: (work.count() > 0).then(|| ms(work.quantile(0.99))),
        declared_work_ms_p50: declared_p50,
        declared_work_ms_p99: declared_p99,
        busy_workers_mean: round3(run_mean(s, figures, |b| b.busy.mean)),
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
        shaped: c.shaped,
        shadow_refusals: c.shadow_refusals,
        coalesced: c.coalesced,
        ejections: c.ejections,
        marked_unhealthy: c.marked_unhealthy,
        crashes: c.crashes,
        messages_lost: c.messages_lost,
        pid_drop_ratio_max: round3(s.pid_drop_ratio_max),
        store: s.store.as_ref().map(|st| StoreReport {
            rows: st.rows,
            reads: st.reads,
            commits: st.commits,
            conflicts: st.conflicts,
            conflicts_per_commit: (st.commits > 0)
                .then(|| round3(st.conflicts as f64 / st.commits as f64)),
            hottest_row_commits: st.hottest_row_commits,
            locks: st.locks.as_ref().map(|l| LockReport {
                acquired: l.acquired,
                waits: l.waits,
                wait_s: round3(l.wait_total.as_secs_f64()),
                wait_ms_p99: l.wait_p99.map(ms),
                timeouts: l.timeouts,
                queue_full: l.queue_full,
                queue_max_seen: l.queue_max_seen,
            }),
        }),
        cache_refresh: s.refresh.as_ref().map(|f| RefreshReport {
            expired_misses: f.expired_misses,
            early_refreshes: f.early_refreshes,
            refreshes: f.refreshes,
        }),
        blast_radius: s.blast.as_ref().map(|b| BlastReport {
            isolation: b.isolation.to_string(),
            units: b.units,
            replicas_per_unit: b.replicas_per_unit,
            units_lost_all: b.units_lost_all,
            lost_all_ratio: round3(per(b.units_lost_all, b.units)),
            units_lost_some: b.units_lost_some,
            lost_some_ratio: round3(per(b.units_lost_some, b.units)),
            poison_crashes: b.poison_crashes,
        }),
        scaling: s.scaling.as_ref().map(|f| ScalingReport {
            replicas_min: f.replicas_min,
            replicas_max: f.replicas_max,
            replicas_mean: round3(
                f.replicas.iter().map(|b| b.mean).sum::<f64>() / f.replicas.len().max(1) as f64,
            ),
            scale_outs: f.scale_outs,
            scale_ins: f.scale_ins,
            replicas_added: f.replicas_added,
            replicas_removed: f.replicas_removed,
            deploy_restarts: f.deploy_restarts,
            lost_at_stop: f.lost_at_stop,
            cold_jobs: f.cold_jobs,
        }),
        capacity_events: s.capacity.as_ref().map(|f| CapacityEventsReport {
            pauses: f.pauses,
            paused_s: round3(f.paused_ns as f64 / 1e9),
            zone_downs: f.zone_downs,
            liveness_probes: f.probes,
            liveness_probe_failures: f.probe_failures,
            liveness_restarts: f.liveness_restarts,
        }),
        connections: s.connections.as_ref().map(|c| ConnectionsReport {
            max_connections: c.max_connections,
            open_max: c.open_max,
            refused: c.refused,
        }),
    }
}

fn call(site: &CallSiteFigures, end: SimTime) -> CallReport {
    CallReport {
        path: site.path.clone(),
        caller: site.caller.clone(),
        target: site.target.clone(),
        amplification: round3(per(site.counts.attempts, site.counts.calls)),
        counts: site.counts.clone(),
        rejected_by_reason: reasons(&site.counts.rejected),
        breakers: site.breakers.iter().map(|b| breaker(b, end)).collect(),
        pace: site.pace.map(|p| PaceReport {
            held: p.held,
            held_ms: round3(p.held_ns as f64 / 1e6),
            held_ms_mean: (p.held > 0).then(|| round3(p.held_ns as f64 / 1e6 / p.held as f64)),
            exhausted_replies: p.exhausted_replies,
            resets_too_far: p.resets_too_far,
        }),
        adaptive_timeout: site.adaptive_timeout.map(|a| AdaptiveTimeoutReport {
            timeout_ms_min: round3(a.timeout_ns_min as f64 / 1e6),
            timeout_ms_max: round3(a.timeout_ns_max as f64 / 1e6),
            timeout_ms_last: round3(a.timeout_ns_last as f64 / 1e6),
            observed: a.observed,
        }),
        pool: site.pool.as_ref().map(|p| PoolReport {
            size: p.size,
            pools: p.pools,
            checkouts: p.checkouts,
            waits: p.waits,
            wait_ms_p99: p.wait_p99.map(ms),
            checkout_timeouts: p.checkout_timeouts,
            opened: p.opened,
            refused_opens: p.refused_opens,
            closed_idle: p.closed_idle,
            connections_open_max: p.connections_open_max,
            pool_held_max: p.pool_held_max,
        }),
    }
}

/// A breaker's states from zero to `end`: closed until its first transition (or `unknown`
/// when it dropped older transitions), then each transition's target state until the next.
fn spans(b: &BreakerFigures, end: SimTime) -> Vec<StateSpan> {
    let dropped = b.transitions_total > b.transitions.len() as u64;
    let mut state = match b.transitions.first() {
        Some(_) if dropped => "unknown",
        Some(t) => t.from.name(),
        None => b.state.name(),
    };
    let mut from = SimTime::ZERO;
    let mut out = Vec::with_capacity(b.transitions.len() + 1);
    for t in &b.transitions {
        let at = t.at.min(end);
        if at > from {
            out.push(StateSpan {
                from_s: round3(from.as_secs_f64()),
                to_s: round3(at.as_secs_f64()),
                state: state.to_string(),
            });
        }
        from = at;
        state = t.to.name();
    }
    if end > from {
        out.push(StateSpan {
            from_s: round3(from.as_secs_f64()),
            to_s: round3(end.as_secs_f64()),
            state: state.to_string(),
        });
    }
    out
}

fn breaker(b: &BreakerFigures, end: SimTime) -> BreakerReport {
    BreakerReport {
        replica: b.replica,
        state: b.state.name().to_string(),
        transitions_total: b.transitions_total,
        transitions: b
            .transitions
            .iter()
            .take(TRANSITIONS_LISTED)
            .map(|t| Transition {
                t_s: round3(t.at.as_secs_f64()),
                from: t.from.name().to_string(),
                to: t.to.name().to_string(),
            })
            .collect(),
        spans: spans(b, end),
    }
}

/// The scenario's faults and load spikes as windows of the run `[0, end)`, in file order
/// (the spikes of clients' `Spike` schedules first, by client name).
fn timeline(scenario: &Scenario, end: SimTime) -> Vec<TimelineWindow> {
    let end_s = end.as_secs_f64();
    let mut out = Vec::new();
    let mut push =
        |kind: &str, target: &str, label: String, from: SimDuration, to: Option<SimDuration>| {
            let from_s = from.as_secs_f64();
            if from_s > end_s {
                return;
            }
            out.push(TimelineWindow {
                kind: kind.to_string(),
                target: target.to_string(),
                label,
                from_s: round3(from_s),
                to_s: to.map(|t| round3(t.as_secs_f64().min(end_s))),
            });
        };
    for (name, c) in &scenario.clients {
        if let Load::Open {
            rate:
                Schedule::Spike {
                    base,
                    peak,
                    start,
                    end,
                },
        } = &c.load
        {
            let (b, p) = (base.as_per_second(), peak.as_per_second());
            let label = if b > 0.0 {
                format!("load spike {name} {}", times(p / b))
            } else {
                format!("load spike {name} to {peak}")
            };
            push("load_spike", name, label, *start, Some(*end));
        }
    }
    for f in &scenario.faults {
        let to = f.end(scenario);
        push(
            &f.kind.snake_name(),
            &f.kind.target().to_string(),
            f.kind.label(f.duration),
            f.at,
            to,
        );
    }
    out
}

/// The names a series row's points carry, made once for all the rows: a row has a point
/// per client and per call site, and a `String` each was a third of a large world's peak.
struct SeriesNames {
    clients: Vec<Arc<str>>,
    calls: Vec<Arc<str>>,
}

impl SeriesNames {
    fn of(figures: &Figures) -> SeriesNames {
        SeriesNames {
            clients: figures
                .clients
                .iter()
                .map(|c| c.name.as_str().into())
                .collect(),
            calls: figures
                .call_sites
                .iter()
                .map(|c| c.path.as_str().into())
                .collect(),
        }
    }
}

/// Service `sv`'s point of report bucket `i`.
fn service_point(sv: &ServiceFigures, i: usize) -> ServicePoint {
    let b = sv.buckets.get(i).copied().unwrap_or_default();
    let in_rotation = sv
        .scaling
        .as_ref()
        .map(|f| round3(f.replicas.get(i).map_or(0.0, |b| b.mean)));
    let replicas = in_rotation.unwrap_or(f64::from(sv.replicas));
    ServicePoint {
        name: sv.name.clone(),
        arrivals: b.arrivals,
        ok: b.ok,
        queue_total_mean: round3(b.queue.mean),
        queue_total_max: b.queue.max as u64,
        queue_replica_mean: round3(b.queue.mean / replicas.max(f64::MIN_POSITIVE)),
        queue_replica_max: b.queue_replica_max,
        busy_workers_mean: round3(b.busy.mean),
        busy_workers_max: round3(b.busy.max),
        capacity_workers_mean: round3(b.capacity.mean),
        replicas_in_rotation_mean: in_rotation,
        failed_by_reason: reasons(&b.failed),
        units_without_replicas_max: sv
            .blast
            .as_ref()
            .map(|f| f.units_down_max.get(i).copied().unwrap_or_default()),
        liveness_restarts: sv
            .capacity
            .as_ref()
            .filter(|f| f.liveness)
            .map(|f| f.restarts_per_bucket.get(i).copied().unwrap_or_default()),
        connections_open_max: sv
            .connections
            .as_ref()
            .map(|c| c.open_by_bucket.get(i).copied().unwrap_or_default()),
        limiters: sv.limiters.as_ref().map(|f| limiter_point(f, i)),
    }
}

/// A service's limiters in report bucket `i`.
fn limiter_point(f: &LimiterFigures, i: usize) -> Box<LimiterPoint> {
    let at = |series: &[GaugeBucket]| {
        let b = (!series.is_empty()).then(|| series.get(i).copied().unwrap_or_default());
        (b.map(|b| round3(b.mean)), b.map(|b| round3(b.max)))
    };
    let (concurrency_limit_mean, concurrency_limit_max) = at(&f.concurrency_limit);
    let (concurrency_in_flight_mean, concurrency_in_flight_max) = at(&f.concurrency_in_flight);
    let (pid_drop_ratio_mean, pid_drop_ratio_max) = at(&f.pid_drop_ratio);
    Box::new(LimiterPoint {
        concurrency_limit_mean,
        concurrency_limit_max,
        concurrency_in_flight_mean,
        concurrency_in_flight_max,
        pid_drop_ratio_mean,
        pid_drop_ratio_max,
    })
}

/// Report bucket `i`, over all clients and per service.
fn series_row(figures: &Figures, names: &SeriesNames, i: usize) -> SeriesRow {
    let total =
        figures
            .clients
            .iter()
            .map(|c| c.bucket(i))
            .fold(ClientBucket::default(), |mut t, b| {
                t.offered += b.offered;
                t.successes += b.successes;
                t.failures += b.failures;
                t.latency_sum_ns += b.latency_sum_ns;
                t.completed_ok += b.completed_ok;
                t
            });
    let run_bucket = figures.buckets.get(i);
    let latencies = run_bucket
        .filter(|b| b.latency.count() > 0)
        .map(|b| b.latency.binned());
    let latency_max = SimDuration::from_nanos(run_bucket.map_or(0, |b| b.latency_max_ns));
    // The last bucket may end early, with the run.
    let start = figures.bucket * i as u64;
    let length = (figures.end - SimTime::ZERO)
        .min(start + figures.bucket)
        .saturating_sub(start);
    SeriesRow {
        t_s: round3(start.as_secs_f64()),
        offered: total.offered,
        attempts: figures
            .call_sites
            .iter()
            .filter(|site| site.from_client)
            .map(|site| site.buckets.get(i).map_or(0, |b| b.attempts))
            .sum(),
        successes: total.successes,
        failures: total.failures,
        goodput_ratio: round3(ratio(total.successes, total.offered)),
        goodput_per_s: round3(total.completed_ok as f64 / length.as_secs_f64().max(1e-9)),
        latency_ms_mean: (total.successes > 0)
            .then(|| round3(total.latency_sum_ns as f64 / total.successes as f64 / 1e6)),
        // A bin's upper edge can lie above every latency in it: no quantile exceeds the max.
        latency_ms_p50: latencies
            .as_ref()
            .map(|h| ms(h.quantile(0.5).min(latency_max))),
        latency_ms_p99: latencies.map(|h| ms(h.quantile(0.99).min(latency_max))),
        latency_ms_max: (total.successes > 0).then(|| ms(latency_max)),
        clients: figures
            .clients
            .iter()
            .zip(&names.clients)
            .map(|(c, name)| {
                let b = c.bucket(i);
                ClientPoint {
                    name: name.clone(),
                    offered: b.offered,
                    successes: b.successes,
                    failures: b.failures,
                }
            })
            .collect(),
        classes: figures
            .clients
            .iter()
            .flat_map(|c| {
                c.classes.iter().map(move |k| {
                    let b = k.buckets.get(i).copied().unwrap_or_default();
                    ClassPoint {
                        class: format!("{}/{}", c.name, k.name),
                        offered: b.offered,
                        successes: b.successes,
                    }
                })
            })
            .collect(),
        services: figures
            .services
            .iter()
            .map(|sv| service_point(sv, i))
            .collect(),
        calls: figures
            .call_sites
            .iter()
            .zip(&names.calls)
            .map(|(site, path)| {
                let b = site.buckets.get(i).copied().unwrap_or_default();
                CallPoint {
                    path: path.clone(),
                    attempts: b.attempts,
                    retries: b.retries,
                    budget_exhausted: b.budget_exhausted,
                    timeouts: b.timeouts,
                    timeout_ms_max: site.adaptive_timeout.map(|_| {
                        (b.timeout_ns_max > 0).then(|| round3(b.timeout_ns_max as f64 / 1e6))
                    }),
                    connections_open_max: site
                        .pool
                        .as_ref()
                        .map(|p| p.open_by_bucket.get(i).copied().unwrap_or_default()),
                }
            })
            .collect(),
    }
}
