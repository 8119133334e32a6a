//! The Chrome trace-event format (`{"traceEvents": [...]}`), which ui.perfetto.dev and
//! chrome://tracing open: a span is a complete event (`"ph": "X"`) in microseconds, a
//! process per client or service (`pid`, named by a `process_name` metadata event), a thread
//! per replica and lane (`tid`); a span's events are instant events on its thread, its
//! attributes and ids its `args`.
//!
//! # Decisions
//!
//! The viewers nest the complete events of one thread by time, so two spans on a thread
//! must not overlap unless one holds the other; a replica's jobs overlap (it has workers).
//! Each span goes to the first lane of its replica whose last span ended by its start, and
//! a new lane when none has: every span written to a lane ended before the lane's last end,
//! so no two spans of a lane overlap, in whatever order requests end. The lanes are what
//! the writer keeps: one time per lane.

use super::{Trace, Value, hex};
use serde_json::{Map, Value as Json, json};
use sim_core::SimTime;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// The processes and lanes met so far.
#[derive(Debug, Default)]
pub(super) struct Lanes {
    /// Each service or client: its pid, and each replica's lanes (their last end, their tid).
    processes: BTreeMap<String, Process>,
    /// Events written so far (a comma goes before every one but the first).
    written: u64,
}

#[derive(Debug)]
struct Process {
    pid: u32,
    lanes: BTreeMap<Option<u32>, Vec<(SimTime, u32)>>,
    threads: u32,
}

/// Nanoseconds as microseconds, exactly (a float with up to three decimals).
fn micros(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

fn arg(v: &Value) -> Json {
    match v {
        Value::Int(i) => json!(i),
        Value::Str(s) => json!(s),
        Value::Bool(b) => json!(b),
    }
}

impl Lanes {
    fn emit(&mut self, out: &mut impl Write, event: &Json) -> io::Result<()> {
        if self.written > 0 {
            out.write_all(b",\n")?;
        }
        self.written += 1;
        serde_json::to_writer(&mut *out, event)?;
        Ok(())
    }

    /// The pid and tid for a span of `service`'s `replica` from `start` to `end`, naming
    /// a new process or thread first.
    fn place(
        &mut self,
        out: &mut impl Write,
        service: &str,
        replica: Option<u32>,
        (start, end): (SimTime, SimTime),
    ) -> io::Result<(u32, u32)> {
        let next_pid = self.processes.len() as u32 + 1;
        let mut named = Vec::new();
        let p = self.processes.entry(service.to_string()).or_insert_with(|| {
            named.push(json!({ "ph": "M", "name": "process_name", "pid": next_pid, "tid": 0, "args": { "name": service } }));
            Process {
                pid: next_pid,
                lanes: BTreeMap::new(),
                threads: 0,
            }
        });
        let lanes = p.lanes.entry(replica).or_default();
        let tid = match lanes.iter_mut().find(|(last, _)| *last <= start) {
            Some(lane) => {
                lane.0 = end;
                lane.1
            }
            None => {
                p.threads += 1;
                let tid = p.threads;
                let name = match replica {
                    Some(r) => format!("{service}/{r} #{}", lanes.len() + 1),
                    None => format!("{service} #{}", lanes.len() + 1),
                };
                named.push(json!({ "ph": "M", "name": "thread_name", "pid": p.pid, "tid": tid, "args": { "name": name } }));
                lanes.push((end, tid));
                tid
            }
        };
        let pid = p.pid;
        for e in &named {
            self.emit(out, e)?;
        }
        Ok((pid, tid))
    }

    /// Writes the spans of `trace`.
    pub(super) fn write(&mut self, out: &mut impl Write, trace: &Trace) -> io::Result<()> {
        let trace_id = hex(trace.id, 32);
        for s in &trace.spans {
            let (pid, tid) = self.place(out, &s.service, s.replica, (s.start, s.end))?;
            let mut args: Map<String, Json> = s
                .attributes
                .iter()
                .map(|(k, v)| ((*k).to_string(), arg(v)))
                .collect();
            args.insert("trace_id".into(), json!(trace_id));
            args.insert("span_id".into(), json!(hex(u128::from(s.id), 16)));
            if let Some(p) = s.parent {
                args.insert("parent_span_id".into(), json!(hex(u128::from(p), 16)));
            }
            if let Some(why) = &s.error {
                args.insert("error".into(), json!(why));
            }
            let cat = match s.kind {
                super::Kind::Internal => "call",
                super::Kind::Client => "attempt",
                super::Kind::Server => "job",
            };
            let event = json!({
                "name": s.name,
                "cat": cat,
                "ph": "X",
                "ts": micros(s.start.as_nanos()),
                "dur": micros(s.end.as_nanos() - s.start.as_nanos()),
                "pid": pid,
                "tid": tid,
                "args": args,
            });
            self.emit(out, &event)?;
            for e in &s.events {
                let args: Map<String, Json> = e
                    .attributes
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), arg(v)))
                    .collect();
                let instant = json!({
                    "name": e.name,
                    "cat": cat,
                    "ph": "i",
                    "s": "t",
                    "ts": micros(e.at.as_nanos()),
                    "pid": pid,
                    "tid": tid,
                    "args": args,
                });
                self.emit(out, &instant)?;
            }
        }
        Ok(())
    }

    /// Ends the document.
    pub(super) fn finish(&mut self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(b"\n]}\n")
    }
}
