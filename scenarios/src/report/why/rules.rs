//! The rules of [`super::Why`]: each looks at one service or call site over a [`Stretch`]
//! and gives a [`Finding`] only when its condition holds, with the figures that made it hold.
//!
//! The thresholds are the constants below; a rule that needs a figure the run did not
//! measure (a queue without a capacity, a service where no job started) says nothing.

use super::super::{CallReport, Report, SeriesRow, ServiceReport, round3};
use super::window::{ServiceSpan, Stretch};
use super::{Finding, Rule};
use crate::format::schema::{Call, Scenario};
use std::collections::BTreeMap;

/// Workers count as saturated in a bucket at this mean busy share of those up.
const WORKERS_BUSY_RATIO: f64 = 0.9;
/// Stretches of saturated buckets named in a finding; the rest are counted.
const STRETCHES_NAMED: usize = 3;
/// Wasted work is worth saying from this share of the workers' busy time.
const WASTED_RATIO_MIN: f64 = 0.1;
/// Retries amplify the load at this many attempts per request, and this many times more
/// than before the stretch.
const AMPLIFICATION_MIN: f64 = 1.2;
/// The refusals that say an admission layer (limiter, shedder, bulkhead) was full.
const ADMISSION_REASONS: [&str; 4] = [
    "rate_limited",
    "concurrency_limited",
    "shed",
    "bulkhead_full",
];

/// The timeout a service's callers give it: the shortest over its call sites, and who sets it.
#[derive(Debug, Clone)]
pub(super) struct CallerTimeout {
    caller: String,
    timeout_ms: f64,
}

/// What the rules read besides the stretch: the report, and what it does not carry.
pub(super) struct Inputs<'a> {
    pub report: &'a Report,
    /// Per service: its callers' shortest timeout.
    timeouts: BTreeMap<String, CallerTimeout>,
    /// Per service: its queue's capacity per replica (absent: unbounded).
    capacities: BTreeMap<String, u32>,
    /// Per service: the mean time a worker held a job (its work and its downstream calls)
    /// over the whole run, in milliseconds, over the jobs that ended other than refused.
    holds_ms: BTreeMap<String, f64>,
}

impl<'a> Inputs<'a> {
    pub fn new(scenario: &Scenario, report: &'a Report) -> Inputs<'a> {
        let mut timeouts: BTreeMap<String, CallerTimeout> = BTreeMap::new();
        let mut note = |caller: &str, call: &Call| {
            let Some(t) = call.timeout else { return };
            let timeout_ms = t.as_millis_f64();
            let entry = timeouts.entry(call.target.clone());
            let e = entry.or_insert(CallerTimeout {
                caller: caller.to_string(),
                timeout_ms,
            });
            if timeout_ms < e.timeout_ms {
                *e = CallerTimeout {
                    caller: caller.to_string(),
                    timeout_ms,
                };
            }
        };
        for (name, c) in &scenario.clients {
            note(name, &c.call);
        }
        for (name, s) in &scenario.services {
            s.calls.iter().for_each(|c| note(name, c));
        }
        let capacities = scenario
            .services
            .iter()
            .filter_map(|(name, s)| Some((name.clone(), s.queue.capacity?)))
            .collect();
        let holds_ms = report
            .services
            .iter()
            .filter_map(|s| {
                let refused = refusals(&s.failed_by_reason);
                let failed: u64 = s.failed_by_reason.values().sum();
                let ended = (s.ok + failed).checked_sub(refused).filter(|n| *n > 0)?;
                let busy_s = s.busy_workers_mean * report.simulated_s;
                Some((s.name.clone(), 1e3 * busy_s / ended as f64))
            })
            .collect();
        Inputs {
            report,
            timeouts,
            capacities,
            holds_ms,
        }
    }

    /// The timeouts of the attempts made to `service` over `[from_s, to_s)`, at every call
    /// site that calls it.
    fn timeouts_toward(&self, service: &str, from_s: f64, to_s: f64) -> u64 {
        let paths: Vec<&str> = self
            .report
            .calls
            .iter()
            .filter(|c| c.target == service)
            .map(|c| c.path.as_str())
            .collect();
        self.rows(from_s, to_s)
            .flat_map(|r| &r.calls)
            .filter(|p| paths.contains(&&*p.path))
            .map(|p| p.timeouts)
            .sum()
    }

    /// What `service` refused or failed over `[from_s, to_s)`.
    fn failed_at(&self, service: &str, from_s: f64, to_s: f64) -> u64 {
        self.rows(from_s, to_s)
            .flat_map(|r| &r.services)
            .filter(|p| p.name == service)
            .map(|p| p.failed_by_reason.values().sum::<u64>())
            .sum()
    }

    fn rows(&self, from_s: f64, to_s: f64) -> impl Iterator<Item = &SeriesRow> {
        self.report
            .series
            .iter()
            .filter(move |r| r.t_s >= from_s && r.t_s < to_s)
    }
}

/// `service` and every service whose calls reach it, directly or through others.
fn upstream<'a>(calls: &'a [CallReport], service: &'a str) -> Vec<&'a str> {
    let mut out = vec![service];
    let mut i = 0;
    // Each service is added once: the walk ends even if calls made a cycle.
    while let Some(&s) = out.get(i) {
        for c in calls.iter().filter(|c| c.target == s) {
            if !out.contains(&c.caller.as_str()) {
                out.push(&c.caller);
            }
        }
        i += 1;
    }
    out
}

/// The attempts refused at admission or by a full queue, of `by_reason`.
fn refusals(by_reason: &BTreeMap<String, u64>) -> u64 {
    by_reason
        .iter()
        .filter(|(r, _)| *r == "queue_full" || ADMISSION_REASONS.contains(&r.as_str()))
        .map(|(_, n)| n)
        .sum()
}

/// What saturated, ranked by what each finding explains in the stretch (ties in the order
/// the rules are checked), then what held recovery back; `latency`: the failure is a
/// latency bound.
pub(super) fn findings(
    inputs: &Inputs,
    stretch: &Stretch,
    latency: bool,
) -> (Vec<Finding>, Vec<Finding>) {
    let mut saturated = Vec::new();
    let mut held_back = Vec::new();
    held_back.extend(retries_amplify(stretch));
    // Load beyond what the workers serve holds recovery back when retries made it; without
    // them it is the offered load, and the service is what saturated.
    let amplified = !held_back.is_empty();
    let failing = stretch.successes < stretch.offered;
    for v in &inputs.report.services {
        let Some(span) = stretch.services.get(&v.name) else {
            continue;
        };
        let service = Service {
            inputs,
            v,
            span,
            stretch,
        };
        // The whole run's figures say something of a window only where something failed in
        // it: a calm window is not blamed for the waits of another.
        if failing {
            saturated.extend(service.waits_past_timeout());
        }
        if latency {
            saturated.extend(service.waits_make_latency());
        }
        saturated.extend(service.workers_busy());
        saturated.extend(service.queue());
        saturated.extend(service.refused());
        if failing {
            saturated.extend(service.wasted_work());
        }
        let load = service.load_above_capacity();
        if amplified {
            held_back.extend(load);
        } else {
            saturated.extend(load);
        }
    }
    for (c, name) in inputs
        .report
        .calls
        .iter()
        .zip(call_names(&inputs.report.calls))
    {
        if failing {
            saturated.extend(pool_exhausted(c, &name));
        }
        held_back.extend(budget_refused(c, &name, stretch));
        held_back.extend(breaker_open(c, &name, stretch));
    }
    // A stable sort: among findings that explain as much, the order the rules are checked.
    // What held recovery back keeps the loop's order: the retries, then the load they made.
    saturated.sort_by_key(|f| std::cmp::Reverse(f.explained));
    (saturated, held_back)
}

/// `caller → target`, as the human report names a call site.
fn call_names(calls: &[CallReport]) -> Vec<String> {
    calls
        .iter()
        .map(|c| format!("{} → {}", c.caller, c.target))
        .collect()
}

fn finding(rule: Rule, subject: &str, text: String, evidence: &[(&str, f64)]) -> Finding {
    Finding {
        rule,
        subject: subject.to_string(),
        text,
        evidence: evidence
            .iter()
            .map(|(k, v)| (k.to_string(), round3(*v)))
            .collect(),
        explained: 0,
    }
}

impl Finding {
    /// The same, accounting for `n` failed attempts.
    fn explaining(self, n: u64) -> Finding {
        Finding {
            explained: n,
            ..self
        }
    }
}

/// A time in seconds as the findings print it (`25s`, `25.5s`).
fn secs(t: f64) -> String {
    format!("{}s", round3(t))
}

/// A duration in milliseconds as the findings print it.
fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}ms")
    } else {
        format!("{x:.1}ms")
    }
}

/// One service's rules.
struct Service<'a> {
    inputs: &'a Inputs<'a>,
    v: &'a ServiceReport,
    span: &'a ServiceSpan,
    stretch: &'a Stretch,
}

impl Service<'_> {
    fn name(&self) -> &str {
        &self.v.name
    }

    fn timeout(&self) -> Option<&CallerTimeout> {
        self.inputs.timeouts.get(self.name())
    }

    /// The mean time a worker held a job in the stretch (its worker-seconds over the jobs
    /// that ended in it other than refusals), or over the run when none ended in it.
    fn hold_ms(&self) -> Option<f64> {
        let refused = refusals(&self.span.failed_by_reason);
        let failed: u64 = self.span.failed_by_reason.values().sum();
        let ended = self.span.ok + failed - refused;
        if ended > 0 && self.span.busy_worker_s > 0.0 {
            return Some(1e3 * self.span.busy_worker_s / ended as f64);
        }
        self.inputs.holds_ms.get(self.name()).copied()
    }

    /// Waits in the queue as long as the callers wait at all (the whole run's p99).
    fn waits_past_timeout(&self) -> Option<Finding> {
        let t = self.timeout()?;
        let (p99, mean) = (self.v.wait_ms_p99?, self.v.wait_ms_mean?);
        (p99 >= t.timeout_ms).then(|| {
            finding(
                Rule::QueueWaitsPastTimeout,
                self.name(),
                format!(
                    "{}: queue waits reached past the {} timeout of {} → {} (whole run: wait p99 {}, mean {}): those callers had given up before the work started",
                    self.name(),
                    ms(t.timeout_ms),
                    t.caller,
                    self.name(),
                    ms(p99),
                    ms(mean)
                ),
                &[
                    ("wait_ms_p99", p99),
                    ("wait_ms_mean", mean),
                    ("timeout_ms", t.timeout_ms),
                ],
            )
            .explaining(self.inputs.timeouts_toward(
                self.name(),
                self.stretch.from_s,
                self.stretch.to_s,
            ))
        })
    }

    /// Queue waits made most of the clients' p99 (the whole run's figures).
    fn waits_make_latency(&self) -> Option<Finding> {
        let (wait, work) = (self.v.wait_ms_p99?, self.v.work_ms_p99?);
        let p99 = self.inputs.report.summary.latency_ms.as_ref()?.p99;
        (wait > work && wait >= 0.5 * p99).then(|| {
            finding(
                Rule::QueueWaitsMakeLatency,
                self.name(),
                format!(
                    "{}: time in its queue made most of the latency (whole run: wait p99 {}, work p99 {}, the clients' p99 {})",
                    self.name(),
                    ms(wait),
                    ms(work),
                    ms(p99)
                ),
                &[
                    ("wait_ms_p99", wait),
                    ("work_ms_p99", work),
                    ("latency_ms_p99", p99),
                ],
            )
        })
    }

    /// A queue that was full: what serving a full one takes against the callers' timeout.
    fn queue(&self) -> Option<Finding> {
        let capacity = *self.inputs.capacities.get(self.name())?;
        if self.span.queue_replica_max < u64::from(capacity) {
            return None;
        }
        let refused = self
            .span
            .failed_by_reason
            .get("queue_full")
            .copied()
            .unwrap_or(0);
        let workers = f64::from(self.v.workers);
        let drain = self.hold_ms().map(|h| f64::from(capacity) * h / workers);
        if let (Some(drain_ms), Some(t), Some(hold)) = (drain, self.timeout(), self.hold_ms())
            && drain_ms >= t.timeout_ms
        {
            return Some(finding(
                Rule::FullQueueOutlivesTimeout,
                self.name(),
                format!(
                    "{}: its queue was full ({capacity} per replica; {refused} attempts refused queue_full), and a full queue takes {capacity} × {} (a worker's time per job) / {} workers = {} to serve, longer than the {} timeout of {} → {}: every request queued behind it expires before service",
                    self.name(),
                    ms(hold),
                    self.v.workers,
                    ms(drain_ms),
                    ms(t.timeout_ms),
                    t.caller,
                    self.name()
                ),
                &[
                    ("queue_capacity", f64::from(capacity)),
                    ("hold_ms_mean", hold),
                    ("workers", workers),
                    ("drain_ms", drain_ms),
                    ("timeout_ms", t.timeout_ms),
                    ("refused", refused as f64),
                ],
            )
            .explaining(refused + self.inputs.timeouts_toward(self.name(), self.stretch.from_s, self.stretch.to_s)));
        }
        Some(finding(
            Rule::QueueFull,
            self.name(),
            format!(
                "{}: its queue was full ({capacity} per replica) and refused {refused} attempts (queue_full)",
                self.name()
            ),
            &[
                ("queue_capacity", f64::from(capacity)),
                ("refused", refused as f64),
            ],
        )
        .explaining(refused))
    }

    /// The attempts that failed over `[from_s, to_s)` at it and at every service that
    /// calls it, directly or not (what its saturation can explain: a caller's workers wait
    /// on it): what they refused or failed, and their callers' timeouts.
    fn failures_while(&self, from_s: f64, to_s: f64) -> u64 {
        upstream(&self.inputs.report.calls, self.name())
            .iter()
            .map(|s| {
                self.inputs.failed_at(s, from_s, to_s)
                    + self.inputs.timeouts_toward(s, from_s, to_s)
            })
            .sum()
    }

    /// The same over the whole stretch.
    fn failures(&self) -> u64 {
        self.failures_while(self.stretch.from_s, self.stretch.to_s)
    }

    /// The stretches of buckets in which the busy workers were at least 90% of those up:
    /// when the service saturated, which a mean over a longer window hides.
    fn workers_busy(&self) -> Option<Finding> {
        let bucket = self.inputs.report.bucket_s;
        // (from, to, busy summed, up summed, buckets)
        let mut runs: Vec<(f64, f64, f64, f64, u32)> = Vec::new();
        for &(t, busy, up) in &self.span.busy_by_bucket {
            if up <= 0.0 || busy < WORKERS_BUSY_RATIO * up {
                continue;
            }
            let end = (t + bucket).min(self.inputs.report.simulated_s);
            match runs.last_mut() {
                Some(r) if (r.1 - t).abs() < 1e-6 => {
                    (r.1, r.2, r.3, r.4) = (end, r.2 + busy, r.3 + up, r.4 + 1);
                }
                _ => runs.push((t, end, busy, up, 1)),
            }
        }
        let first = runs.first()?;
        let n: u32 = runs.iter().map(|r| r.4).sum();
        let busy = runs.iter().map(|r| r.2).sum::<f64>() / f64::from(n);
        let up = runs.iter().map(|r| r.3).sum::<f64>() / f64::from(n);
        let saturated_s: f64 = runs.iter().map(|r| r.1 - r.0).sum();
        let mut when: Vec<String> = runs
            .iter()
            .take(STRETCHES_NAMED)
            .map(|r| format!("from {} to {}", secs(r.0), secs(r.1)))
            .collect();
        if runs.len() > STRETCHES_NAMED {
            when.push(format!("{} more stretches", runs.len() - STRETCHES_NAMED));
        }
        let explained = runs.iter().map(|r| self.failures_while(r.0, r.1)).sum();
        let last = runs.last().expect("not empty");
        let text = format!(
            "{}: its workers were busy {busy:.1} of {} on average ({:.0}%) {}",
            self.name(),
            round3(up),
            100.0 * busy / up,
            when.join(", ")
        );
        let evidence = [
            ("busy_workers_mean", busy),
            ("capacity_workers_mean", up),
            ("saturated_s", saturated_s),
            ("saturated_from_s", first.0),
            ("saturated_to_s", last.1),
        ];
        Some(finding(Rule::WorkersBusy, self.name(), text, &evidence).explaining(explained))
    }

    /// Refusals by an admission layer: a limiter, a shedder or a bulkhead was full.
    fn refused(&self) -> Option<Finding> {
        let counts: Vec<(&str, u64)> = ADMISSION_REASONS
            .iter()
            .filter_map(|r| Some((*r, *self.span.failed_by_reason.get(*r)?)))
            .filter(|(_, n)| *n > 0)
            .collect();
        let total: u64 = counts.iter().map(|(_, n)| n).sum();
        (total > 0).then(|| {
            let words: Vec<String> = counts.iter().map(|(r, n)| format!("{r} {n}")).collect();
            let evidence: Vec<(&str, f64)> = counts.iter().map(|(r, n)| (*r, *n as f64)).collect();
            finding(
                Rule::Refused,
                self.name(),
                format!(
                    "{}: its admission refused {total} attempts ({})",
                    self.name(),
                    words.join(", ")
                ),
                &evidence,
            )
            .explaining(total)
        })
    }

    /// Worker time spent on callers that had left (the whole run's).
    fn wasted_work(&self) -> Option<Finding> {
        let busy_s = self.v.busy_workers_mean * self.inputs.report.simulated_s;
        let wasted = self.v.wasted_work_s;
        (busy_s > 0.0 && wasted >= WASTED_RATIO_MIN * busy_s).then(|| {
            finding(
                Rule::WastedWork,
                self.name(),
                format!(
                    "{}: {:.0}% of its workers' time (whole run: {wasted:.1}s in {} jobs) went to requests whose callers had already given up",
                    self.name(),
                    100.0 * wasted / busy_s,
                    self.v.wasted_jobs
                ),
                &[
                    ("wasted_work_s", wasted),
                    ("busy_work_s", busy_s),
                    ("wasted_jobs", self.v.wasted_jobs as f64),
                ],
            )
        })
    }

    /// More attempts arrived than the workers that were up could serve.
    fn load_above_capacity(&self) -> Option<Finding> {
        let hold = self.hold_ms()?;
        let seconds = self.stretch.seconds();
        if seconds <= 0.0 || hold <= 0.0 {
            return None;
        }
        let arrivals = self.span.arrivals as f64 / seconds;
        let capacity = self.span.capacity_mean * 1e3 / hold;
        (capacity > 0.0 && arrivals >= capacity).then(|| {
            finding(
                Rule::LoadAboveCapacity,
                self.name(),
                format!(
                    "{}: {arrivals:.0} attempts/s arrived, more than the {capacity:.0}/s its {:.0} workers serve at {} each",
                    self.name(),
                    self.span.capacity_mean,
                    ms(hold)
                ),
                &[
                    ("arrivals_per_s", arrivals),
                    ("capacity_per_s", capacity),
                    ("hold_ms_mean", hold),
                ],
            )
            .explaining(self.failures())
        })
    }
}

/// The clients made many more attempts per request than before the stretch.
fn retries_amplify(stretch: &Stretch) -> Option<Finding> {
    let now = stretch.attempts_per_request()?;
    let retries: u64 = stretch.calls.values().map(|c| c.retries).sum();
    let before = stretch.attempts_per_request_before();
    let grew = before.is_none_or(|b| now >= AMPLIFICATION_MIN * b);
    (retries > 0 && now >= AMPLIFICATION_MIN && grew).then(|| {
        let then = before.map_or(String::new(), |b| format!(" ({b:.2} before)"));
        let mut evidence = vec![("attempts_per_request", now), ("retries", retries as f64)];
        evidence.extend(before.map(|b| ("attempts_per_request_before", b)));
        finding(
            Rule::RetriesAmplify,
            "clients",
            format!(
                "retries multiplied the load: the clients made {now:.2} attempts per request{then}, {retries} retries"
            ),
            &evidence,
        )
    })
}

fn pool_exhausted(c: &CallReport, name: &str) -> Option<Finding> {
    let p = c.pool.as_ref()?;
    (p.checkout_timeouts > 0).then(|| {
        let wait = p.wait_ms_p99.map_or(String::new(), |w| format!(", wait p99 {}", ms(w)));
        finding(
            Rule::PoolExhausted,
            name,
            format!(
                "{name}: its connection pools ({} of {} connections) ran out: {} checkouts timed out (whole run{wait})",
                p.pools, p.size, p.checkout_timeouts
            ),
            &[
                ("checkout_timeouts", p.checkout_timeouts as f64),
                ("pool_size", f64::from(p.size)),
            ],
        )
    })
}

fn budget_refused(c: &CallReport, name: &str, stretch: &Stretch) -> Option<Finding> {
    let span = stretch.calls.get(&c.path)?;
    (span.budget_exhausted > 0).then(|| {
        finding(
            Rule::RetryBudgetRefused,
            name,
            format!(
                "{name}: its retry budget refused {} retries ({} allowed): those requests failed at their last attempt",
                span.budget_exhausted, span.retries
            ),
            &[
                ("budget_exhausted", span.budget_exhausted as f64),
                ("retries", span.retries as f64),
            ],
        )
        .explaining(span.budget_exhausted)
    })
}

/// Breakers open during the stretch: when the first opened, and how long they stayed open.
fn breaker_open(c: &CallReport, name: &str, stretch: &Stretch) -> Option<Finding> {
    let (from, to) = (stretch.from_s, stretch.to_s);
    let mut opened = 0;
    let (mut first, mut total, mut longest) = (f64::INFINITY, 0.0, 0.0_f64);
    for b in &c.breakers {
        let open: Vec<(f64, f64)> = b
            .spans
            .iter()
            .filter(|s| s.state == "open" && s.to_s > from && s.from_s < to)
            .map(|s| (s.from_s, s.to_s))
            .collect();
        if open.is_empty() {
            continue;
        }
        opened += 1;
        first = first.min(open[0].0);
        for (a, z) in open {
            total += z.min(to) - a.max(from);
            longest = longest.max(z - a);
        }
    }
    (opened > 0).then(|| {
        let mean = total / f64::from(opened);
        finding(
            Rule::BreakerOpen,
            name,
            format!(
                "{name}: {opened} of its {} breakers were open, the first from {}s, each open {mean:.1}s of the {:.0}s on average (longest stretch open {longest:.1}s)",
                c.breakers.len(),
                round3(first),
                to - from
            ),
            &[
                ("breakers_opened", f64::from(opened)),
                ("opened_first_s", first),
                ("open_s_mean", mean),
                ("open_s_max", longest),
            ],
        )
    })
}
