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
#[derive(Debug, Clone)]
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
        let (what, detail) = (msg.trace_name(), self.describe(msg));
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

    /// What the event is about: the attempt, call, client, service or replica it names.
    fn describe(&self, msg: &Msg) -> String {
        let service = |s: u32| self.services[s as usize].name();
        match msg {
            Msg::Net(d) => match d.payload() {
                Some(Packet::Deliver { job } | Packet::Cancel { job }) => self.job_name(*job),
                Some(Packet::Reply {
                    call,
                    attempt,
                    outcome,
                    ..
                }) => format!(
                    "attempt {attempt} {} to {}",
                    outcome.name(),
                    self.call_name(*call)
                ),
                None => "held messages are released".to_string(),
            },
            Msg::Arrival { client, .. } => self.clients[*client as usize].name().to_string(),
            Msg::Think { client, user } => {
                format!("{} user {user}", self.clients[*client as usize].name())
            }
            Msg::Released { job } | Msg::WorkDone { job } | Msg::LockTimeout { job } => {
                self.job_name(*job)
            }
            Msg::Timeout { call, attempt } => {
                format!("attempt {attempt} of {}", self.call_name(*call))
            }
            Msg::Retry { call } | Msg::GateReleased { call } | Msg::HedgeTimer { call } => {
                self.call_name(*call)
            }
            Msg::FaultStart { fault } | Msg::FaultEnd { fault } | Msg::DeployBatch { fault } => {
                format!("faults[{fault}]")
            }
            Msg::PidTick { service: s }
            | Msg::HealthTick { service: s }
            | Msg::ScaleTick { service: s } => service(*s).to_string(),
            Msg::Restart {
                service: s,
                replica,
            }
            | Msg::Scaled {
                service: s,
                replica,
            }
            | Msg::LivenessTick {
                service: s,
                replica,
            }
            | Msg::LivenessDeadline {
                service: s,
                replica,
            } => {
                format!("{}/{replica}", service(*s))
            }
            Msg::PoolOpened { site, .. }
            | Msg::PoolEvict { site }
            | Msg::BulkheadExpire { site, .. } => self.sites[*site as usize].path().to_string(),
            Msg::CheckoutTimeout { call, attempt } => {
                format!("{} attempt {attempt}", self.call_name(*call))
            }
        }
    }
}
