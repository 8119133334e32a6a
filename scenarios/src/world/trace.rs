//! The trace window: every event between two instants, one line each, so that one request
//! can be followed across services.
//!
//! Calls carry ids that are unique over the whole run (`call #17`), and every call names the
//! client request it serves (`request #5`); an attempt at a replica names its call and its
//! attempt number. A downstream call made for request #5 is `request #5` too.

use super::msg::{Msg, Packet};
use super::{CallKey, JobKey, World};
use sim_core::SimTime;

/// The most events a trace window describes.
pub const TRACE_LINES_MAX: usize = 10_000;

/// The window asked for and the lines written so far.
#[derive(Debug)]
pub struct Trace {
    from: SimTime,
    to: SimTime,
    lines: Vec<String>,
    left_out: u64,
}

impl Trace {
    /// A trace of the events in `[from, to]`.
    pub fn new(from: SimTime, to: SimTime) -> Trace {
        Trace {
            from,
            to,
            lines: Vec::new(),
            left_out: 0,
        }
    }

    /// Whether an event at `now` belongs to the window.
    pub fn covers(&self, now: SimTime) -> bool {
        now >= self.from && now <= self.to
    }

    /// The lines, and how many events were left out past the limit.
    pub fn finish(self) -> (Vec<String>, u64) {
        (self.lines, self.left_out)
    }
}

impl World {
    /// Describes one event of the trace window.
    pub(super) fn record(&mut self, now: SimTime, msg: &Msg) {
        let Some(trace) = &self.trace else {
            return;
        };
        if !trace.covers(now) {
            return;
        }
        if trace.lines.len() >= TRACE_LINES_MAX {
            self.trace.as_mut().expect("checked above").left_out += 1;
            return;
        }
        let (what, detail) = self.describe(msg);
        let line = format!("{:<14} {what:<12} {detail}", now.to_string());
        self.trace.as_mut().expect("checked above").lines.push(line);
    }

    fn call_label(&self, k: CallKey) -> String {
        match self.calls.get(k) {
            Some(c) => format!("{} call #{}", self.sites[c.site as usize].path(), c.id),
            None => "a call already over".to_string(),
        }
    }

    fn call_name(&self, k: CallKey) -> String {
        match self.calls.get(k) {
            Some(c) => format!("{} (request #{})", self.call_label(k), c.request),
            None => self.call_label(k),
        }
    }

    fn job_name(&self, k: JobKey) -> String {
        match self.jobs.get(k) {
            Some(j) => format!(
                "{}/{} attempt {} of {} (request #{})",
                self.services[j.service()].name(),
                j.replica(),
                j.attempt(),
                self.call_label(j.call()),
                j.request()
            ),
            None => "an attempt already over".to_string(),
        }
    }

    fn describe(&self, msg: &Msg) -> (&'static str, String) {
        match msg {
            Msg::Net(d) => match d.payload() {
                Some(Packet::Deliver { job }) => ("deliver", self.job_name(*job)),
                Some(Packet::Reply {
                    call,
                    attempt,
                    outcome,
                    ..
                }) => (
                    "reply",
                    format!(
                        "attempt {attempt} {} to {}",
                        outcome.name(),
                        self.call_name(*call)
                    ),
                ),
                Some(Packet::Cancel { job }) => ("cancel", self.job_name(*job)),
                None => ("network", "held messages are released".to_string()),
            },
            Msg::Arrival { client, emit } => (
                if *emit { "arrival" } else { "rate-change" },
                self.clients[*client as usize].name().to_string(),
            ),
            Msg::Think { client, user } => (
                "user-ready",
                format!("{} user {user}", self.clients[*client as usize].name()),
            ),
            Msg::Released { job } => ("released", self.job_name(*job)),
            Msg::WorkDone { job } => ("work-done", self.job_name(*job)),
            Msg::Timeout { call, attempt } => (
                "timeout",
                format!("attempt {attempt} of {}", self.call_name(*call)),
            ),
            Msg::Retry { call } => ("retry", self.call_name(*call)),
            Msg::GateReleased { call } => ("gate-release", self.call_name(*call)),
            Msg::FaultStart { fault } => ("fault-start", format!("faults[{fault}]")),
            Msg::FaultEnd { fault } => ("fault-end", format!("faults[{fault}]")),
            Msg::Restart { service, replica } => (
                "restart",
                format!("{}/{replica}", self.services[*service as usize].name()),
            ),
            Msg::PidTick { service } => (
                "pid-update",
                self.services[*service as usize].name().to_string(),
            ),
            Msg::HealthTick { service } => (
                "health-check",
                self.services[*service as usize].name().to_string(),
            ),
            Msg::HedgeTimer { call } => ("hedge-timer", self.call_name(*call)),
            Msg::ScaleTick { service } => (
                "scale-tick",
                self.services[*service as usize].name().to_string(),
            ),
            Msg::Scaled { service, replica } => (
                "replica-slot",
                format!("{}/{replica}", self.services[*service as usize].name()),
            ),
            Msg::DeployBatch { fault } => ("deploy-batch", format!("faults[{fault}]")),
            Msg::LivenessTick { service, replica } => (
                "liveness-probe",
                format!("{}/{replica}", self.services[*service as usize].name()),
            ),
            Msg::LivenessDeadline { service, replica } => (
                "liveness-deadline",
                format!("{}/{replica}", self.services[*service as usize].name()),
            ),
            Msg::PoolOpened { site, refused } => (
                if *refused {
                    "pool-refused"
                } else {
                    "pool-opened"
                },
                self.sites[*site as usize].path().to_string(),
            ),
            Msg::CheckoutTimeout { call, attempt } => (
                "checkout-timeout",
                format!("{} attempt {attempt}", self.call_name(*call)),
            ),
            Msg::LockTimeout { job } => ("lock-timeout", self.job_name(*job)),
            Msg::PoolEvict { site } => {
                ("pool-evict", self.sites[*site as usize].path().to_string())
            }
            Msg::BulkheadExpire { site, .. } => (
                "bulkhead-wait-ends",
                self.sites[*site as usize].path().to_string(),
            ),
        }
    }
}
