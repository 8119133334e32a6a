//! The readable report: summary, clients, services, calls, the series as sparklines, the
//! network, expectations, the trace window, the digest, and the replay command as the last line.
//!
//! Writing to a `String` cannot fail, so the results of `writeln!` are ignored.

use super::super::{CallReport, LatencyMs, Report, ServiceReport, ratio};
use super::{Merge, call_names, decimal1, join_reasons, peak, short, sparkline, sparkline_unit};
use std::fmt::Write as _;

/// The readable report of `report`.
pub(super) fn render(report: &Report) -> String {
    page(report, true)
}

/// The readable report of `report`, with its `why` section or without it (the HTML page
/// shows the explanation once, in its own section).
pub(super) fn page(report: &Report, with_why: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "resim · {} · seed {} · {}s simulated · {} events · stopped: {}",
        report.scenario, report.seed, report.simulated_s, report.events, report.stop_reason
    );
    if let Some(detail) = &report.stop_detail {
        let _ = writeln!(o, "  {detail}");
    }
    summary(&mut o, report);
    clients(&mut o, report);
    super::classes::human(&mut o, report);
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "services (load: attempts arriving per request offered by the clients; busy: mean busy workers; queue: jobs waiting, summed over replicas; wait: time in queue)"
    );
    for v in &report.services {
        service(&mut o, v);
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "calls (amplification: attempts per call)");
    for (c, name) in report.calls.iter().zip(call_names(&report.calls)) {
        call(&mut o, c, &name);
    }
    series(&mut o, report);
    network(&mut o, report);
    limiters(&mut o, report);
    verdicts(&mut o, report);
    if with_why {
        why(&mut o, report);
    }
    if !report.warnings.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "warnings");
        for w in &report.warnings {
            let _ = writeln!(o, "  {w}");
        }
    }
    if !report.trace.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "trace");
        for line in &report.trace {
            let _ = writeln!(o, "  {line}");
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "digest {}", report.digest);
    let _ = writeln!(o, "replay: {}", report.replay_command());
    o
}

/// The expectations' verdicts, then the metastability verdict.
fn verdicts(o: &mut String, report: &Report) {
    if !report.expectations.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "expectations");
        for e in &report.expectations {
            let verdict = if e.pass { "PASS" } else { "FAIL" };
            let _ = writeln!(o, "  {verdict} {}: {}", e.expectation, e.observed);
            if let Some(w) = &e.warning {
                let _ = writeln!(o, "    warning: {w}");
            }
        }
    }
    if let Some(m) = &report.metastability {
        let _ = writeln!(o);
        let _ = writeln!(o, "metastability: {}", m.trigger_words());
        let _ = writeln!(o, "  thresholds: {}", m.thresholds());
        for c in &m.clients {
            match (c.baseline_success_ratio, c.healthy_success_ratio) {
                (Some(b), Some(h)) => {
                    let _ = writeln!(
                        o,
                        "  {} (baseline {:.1}% success, healthy from {:.1}%): {}",
                        c.name,
                        100.0 * b,
                        100.0 * h,
                        c.summary
                    );
                }
                _ => {
                    let _ = writeln!(o, "  {}: {}", c.name, c.summary);
                }
            }
        }
    }
}

/// Why what failed failed, as `resim why` says it (nothing when nothing failed).
fn why(o: &mut String, report: &Report) {
    if report.why.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "why");
    for w in &report.why {
        for (i, line) in w.lines().iter().enumerate() {
            let indent = if i == 0 { "  " } else { "    " };
            let _ = writeln!(o, "{indent}{line}");
        }
    }
}

fn summary(o: &mut String, report: &Report) {
    let s = &report.summary;
    let _ = writeln!(o);
    let _ = writeln!(o, "summary");
    let _ = writeln!(
        o,
        "  offered {:>10}   ({:.1}/s)   attempts {}   amplification {:.2} (client attempts per request)",
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
    let _ = writeln!(
        o,
        "  in flight {:>8}   still waiting for their outcome when the run stopped",
        s.requests_in_flight
    );
    let l = |q: fn(&LatencyMs) -> f64| decimal1(s.latency_ms.as_ref().map(q));
    let _ = writeln!(
        o,
        "  latency ms   p50 {}   p90 {}   p99 {}   p999 {}   max {}",
        l(|l| l.p50),
        l(|l| l.p90),
        l(|l| l.p99),
        l(|l| l.p999),
        l(|l| l.max)
    );
    for c in &report.clients {
        if let Some(m) = c.makespan_ms {
            let _ = writeln!(
                o,
                "  makespan ms  {m:.1}   {}: until the last of its one-shot users finished",
                c.name
            );
        }
    }
}

/// One line per client, when there is more than one (the summary already shows one).
fn clients(o: &mut String, report: &Report) {
    if report.clients.len() <= 1 {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "clients");
    for c in &report.clients {
        let _ = writeln!(
            o,
            "  {:<16} offered {:>8}  ok {:>8}  goodput {:>8.1}/s  p99 {}ms  {}",
            c.name,
            c.offered,
            c.successes,
            c.goodput_per_s,
            decimal1(c.latency_ms.as_ref().map(|l| l.p99)),
            join_reasons(&c.failures_by_reason)
        );
    }
}

/// A service's line, then one line of whatever else happened to it.
/// The service time the run gave a service's jobs beside the quantiles of its declared `work`.
fn work(v: &ServiceReport) -> String {
    format!(
        "work ms p50 {} p99 {}  declared p50 {} p99 {}",
        decimal1(v.work_ms_p50),
        decimal1(v.work_ms_p99),
        decimal1(v.declared_work_ms_p50),
        decimal1(v.declared_work_ms_p99)
    )
}

/// The indent of a service's second line: under the first line's figures, past its name.
const UNDER_NAME: &str = "                   ";

fn service(o: &mut String, v: &ServiceReport) {
    let _ = writeln!(
        o,
        "  {:<16} load {:>6.2}  util {:>5.1}%  busy {:>7.1}  queue mean {:>7.1} max {:>5}  arrivals {:>8}  ok {:>8}  {}",
        v.name,
        v.load_factor,
        100.0 * v.utilisation,
        v.busy_workers_mean,
        v.queue_depth_total_mean,
        v.queue_depth_total_max,
        v.arrivals,
        v.ok,
        work(v)
    );
    if v.queued > 0 {
        // Each replica has a queue of its own: with several, say what one of them held.
        let per_replica = if v.replicas > 1 {
            format!(
                "  per replica: queue mean {:.1} max {}",
                v.queue_depth_replica_mean, v.queue_depth_replica_max
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "{UNDER_NAME}queued {} ({:.1}% of arrivals)  wait ms mean {} p99 {}{per_replica}",
            v.queued,
            100.0 * v.waited_ratio.unwrap_or_default(),
            decimal1(v.wait_ms_mean),
            decimal1(v.wait_ms_p99)
        );
    }
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
        ("shaped", v.shaped),
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
    if let Some(f) = &v.cache_refresh {
        extra.push(format!(
            "cache entries: expired misses {}, early refreshes {}, refreshes {}",
            f.expired_misses, f.early_refreshes, f.refreshes
        ));
    }
    if let Some(sc) = &v.scaling {
        extra.push(format!(
            "replicas in rotation: min {}, max {}, mean {:.1}; scale-outs {} (+{}), scale-ins {} (-{}); deploy restarts {}; cold jobs {}; lost at stop {}",
            sc.replicas_min,
            sc.replicas_max,
            sc.replicas_mean,
            sc.scale_outs,
            sc.replicas_added,
            sc.scale_ins,
            sc.replicas_removed,
            sc.deploy_restarts,
            sc.cold_jobs,
            sc.lost_at_stop
        ));
    }
    if let Some(ce) = &v.capacity_events {
        extra.push(format!(
            "capacity events: pauses {} ({:.1}s paused), zone downs {}, liveness probes {} (failed {}), liveness restarts {}",
            ce.pauses,
            ce.paused_s,
            ce.zone_downs,
            ce.liveness_probes,
            ce.liveness_probe_failures,
            ce.liveness_restarts
        ));
    }
    if let Some(st) = &v.store {
        extra.push(format!(
            "store: {} rows, commits {}, conflicts {} ({} per commit)",
            st.rows,
            st.commits,
            st.conflicts,
            decimal1(st.conflicts_per_commit)
        ));
        if let Some(l) = &st.locks {
            extra.push(format!(
                "locks: taken {}, waited {} ({:.1}s in all, p99 {} ms), timeouts {} (queue full {}), longest queue {}",
                l.acquired,
                l.waits,
                l.wait_s,
                decimal1(l.wait_ms_p99),
                l.timeouts,
                l.queue_full,
                l.queue_max_seen
            ));
        }
    }
    if let Some(b) = &v.blast_radius {
        extra.push(super::blast::human(b));
    }
    if let Some(c) = &v.connections {
        let limit = c
            .max_connections
            .map_or_else(|| "unlimited".to_string(), |m| m.to_string());
        extra.push(format!(
            "connections open max {} of max_connections {limit}, refused opens {}",
            c.open_max, c.refused
        ));
    }
    if !extra.is_empty() {
        let _ = writeln!(o, "  {:<16} {}", "", extra.join("  "));
    }
}

/// A call site's line, then one line per pattern that acted on it.
fn call(o: &mut String, c: &CallReport, name: &str) {
    let n = &c.counts;
    let _ = writeln!(
        o,
        "  {:<28} calls {:>8}  attempts {:>8}  amplification {:>5.2}  retries {:>7}  budget exhausted {:>6}  timeouts {:>7}  late replies {:>7}",
        name,
        n.calls,
        n.attempts,
        c.amplification,
        n.retries,
        n.budget_exhausted,
        n.timeouts,
        n.late_replies
    );
    let mut notes = Vec::new();
    if n.fallback_cache + n.fallback_static > 0 {
        notes.push(format!(
            "failures answered by the fallback: {} from the last good answer, {} static",
            n.fallback_cache, n.fallback_static
        ));
    }
    if n.hedges > 0 {
        notes.push(format!(
            "hedges sent: {}, won by a hedge: {}",
            n.hedges, n.hedge_wins
        ));
    }
    if n.shaped > 0 {
        notes.push(format!("shaped by a rate limiter: {}", n.shaped));
    }
    if n.bulkhead_waits > 0 {
        notes.push(format!("waited for a bulkhead slot: {}", n.bulkhead_waits));
    }
    if let Some(p) = &c.pace {
        notes.push(format!(
            "paced on the target's quota: {} held, {}s in all ({} replies with none left)",
            p.held,
            decimal1(Some(p.held_ms / 1000.0)),
            p.exhausted_replies
        ));
    }
    if let Some(a) = &c.adaptive_timeout {
        notes.push(format!(
            "adaptive timeout: {}ms at the end, from {}ms to {}ms",
            a.timeout_ms_last, a.timeout_ms_min, a.timeout_ms_max
        ));
    }
    if !c.rejected_by_reason.is_empty() {
        notes.push(format!(
            "rejected by the stack: {}",
            join_reasons(&c.rejected_by_reason)
        ));
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
        let colon = if first.is_empty() { "" } else { ": " };
        notes.push(format!(
            "breaker{owner} {} after {} transitions{colon}{}",
            b.state,
            b.transitions_total,
            first.join(", ")
        ));
    }
    if let Some(p) = &c.pool {
        notes.push(format!(
            "pool: size {} × {} pools, connections open max {} (one pool {}), checkouts {}, waited {} (p99 {} ms), checkout timeouts {}, opened {}, refused opens {}, closed idle {}",
            p.size,
            p.pools,
            p.connections_open_max,
            p.pool_held_max,
            p.checkouts,
            p.waits,
            decimal1(p.wait_ms_p99),
            p.checkout_timeouts,
            p.opened,
            p.refused_opens,
            p.closed_idle
        ));
    }
    for note in notes {
        let _ = writeln!(o, "  {:<28} {note}", "");
    }
}

/// The series as sparklines, one line per figure.
fn series(o: &mut String, report: &Report) {
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "over time, {} (success and p99: of the requests offered in it; goodput: successes completed in it; queues: jobs waiting, summed over replicas)",
        sparkline_unit(report)
    );
    let _ = writeln!(
        o,
        "  success  {}",
        sparkline(
            report.series.iter().map(|r| r.goodput_ratio),
            1.0,
            Merge::Mean
        )
    );
    let goodput_peak = report
        .series
        .iter()
        .map(|r| r.goodput_per_s)
        .fold(0.0, f64::max);
    let _ = writeln!(
        o,
        "  goodput  {}  (peak {}/s)",
        sparkline(
            report.series.iter().map(|r| r.goodput_per_s),
            goodput_peak,
            Merge::Mean
        ),
        peak(goodput_peak)
    );
    let p99_peak = report
        .series
        .iter()
        .filter_map(|r| r.latency_ms_p99)
        .fold(0.0, f64::max);
    // A bucket without a success has no latency to show: it stays blank.
    let p99 = report
        .series
        .iter()
        .map(|r| r.latency_ms_p99.unwrap_or(f64::NAN));
    let _ = writeln!(
        o,
        "  p99      {}  (peak {}ms)",
        sparkline(p99, p99_peak, Merge::Max),
        peak(p99_peak)
    );
    for (i, v) in report.services.iter().enumerate() {
        let queue = || {
            report
                .series
                .iter()
                .map(move |r| r.services[i].queue_total_mean)
        };
        let top = queue().fold(0.0, f64::max);
        let _ = writeln!(
            o,
            "  {:<8} {}  (peak {})",
            short(&v.name),
            sparkline(queue(), top, Merge::Mean),
            peak(top)
        );
    }
}

/// One line per link that carried something, when the scenario has a network section.
fn network(o: &mut String, report: &Report) {
    if report.network.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "network");
    for l in report.network.iter().filter(|l| l.sent > 0) {
        let dropped: u64 = l.dropped.values().sum();
        // sim-net reports 0 for the latency of a link that delivered nothing: show none.
        let latency = |x: f64| decimal1((l.delivered > 0).then_some(x));
        let _ = writeln!(
            o,
            "  {:<24} sent {:>8}  delivered {:>8}  dropped {:>6}  latency ms p50 {} p99 {}  declared p50 {} p99 {}",
            format!("{} → {}", l.source, l.target),
            l.sent,
            l.delivered,
            dropped,
            latency(l.latency_ms_p50),
            latency(l.latency_ms_p99),
            decimal1(Some(l.declared_latency_ms_p50)),
            decimal1(Some(l.declared_latency_ms_p99))
        );
    }
}

/// Two lines per distributed rate limiter, when the scenario has one.
fn limiters(o: &mut String, report: &Report) {
    if report.limiters.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "distributed limiters (over-admitted: admissions the limit, kept exactly, would have refused)"
    );
    for l in &report.limiters {
        let _ = writeln!(
            o,
            "  {} ({}): decisions {}  round-trips {}  admitted {}  refused {} ({} cached)  over-admitted {}",
            l.path,
            l.state,
            l.decisions,
            l.round_trips,
            l.admitted,
            l.refused,
            l.refused_cached,
            l.over_admitted
        );
        let _ = writeln!(
            o,
            "    store failures {}: decided open {}, closed {}  lease tokens {}",
            l.store_failures, l.failed_open, l.failed_closed, l.lease_tokens
        );
    }
}
