//! `resim run --spans`: simulated requests written as traces. A run with spans is the run
//! without them (same digest); the spans count what the report counts; each failed attempt
//! carries its reason's row of the reference's table; a retry's backoff lies between its two
//! attempts; parents come before children; sampling keeps about its share, whole; the OTLP
//! output is read by the OpenTelemetry project's own types (`opentelemetry-proto`, serde);
//! bad flags are refused with nothing written.

use crate::support::{library_scenario, resim_in, service_report, workspace_root};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use scenarios::report::spans::{Kind, SpanFormat, SpanWriter, Trace, Value, trace_of};
use scenarios::run::{RunOptions, run, run_streaming};
use scenarios::{Report, Scenario};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};

/// The report, the traces and the bytes of `format` of a run of `scenario` sampling `ratio`.
fn check(scenario: &Scenario, ratio: f64, format: SpanFormat) -> (Report, Vec<Trace>, Vec<u8>) {
    let options = RunOptions {
        sample_requests: Some(ratio),
        ..RunOptions::default()
    };
    let mut writer = SpanWriter::new(Vec::new(), format).expect("a vector takes bytes");
    let mut traces = Vec::new();
    let out = run_streaming(scenario, "test.ron", &options, &mut |f, stopped| {
        let t = trace_of(&f, scenario.seed, stopped);
        writer.write(&t).expect("a vector takes bytes");
        traces.push(t);
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (bytes, _, _) = writer.finish().expect("a vector takes bytes");
    (out.report, traces, bytes)
}

/// Library scenario `name` for `duration` (past its faults' starts), without its
/// expectations (a verdict needs its trigger to end within the run).
fn library(name: &str, duration: &str) -> Scenario {
    library_scenario(
        name,
        None,
        &[("duration", duration), ("expectations", "[]")],
    )
}

fn attribute<'a>(span: &'a scenarios::report::spans::Span, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

#[test]
fn a_run_with_spans_has_the_digest_of_the_run_without() {
    for (name, duration, ratio) in [
        ("retry-storm", "11s", 1.0),
        ("fan-out-tail", "3s", 0.3),
        ("cascading-failure", "11s", 1.0),
        ("poison-pill", "11s", 0.3),
    ] {
        let s = library(name, duration);
        let plain = run(&s, name, &RunOptions::default()).expect("runs");
        {
            let (report, traces, _) = check(&s, ratio, SpanFormat::Otlp);
            assert_eq!(report.digest, plain.report.digest, "{name} at {ratio}");
            assert_eq!(report.events, plain.report.events, "{name} at {ratio}");
            assert!(!traces.is_empty(), "{name} at {ratio}: no trace");
        }
    }
}

#[test]
fn spans_count_what_the_report_counts() {
    let s = library("retry-storm", "12s");
    let (report, traces, _) = check(&s, 1.0, SpanFormat::Otlp);
    let spans = || traces.iter().flat_map(|t| t.spans.iter());
    // A trace per offered request, each with one root.
    assert_eq!(traces.len() as u64, report.summary.offered);
    for t in &traces {
        assert_eq!(t.spans.iter().filter(|s| s.parent.is_none()).count(), 1);
    }
    for call in &report.calls {
        let ids: BTreeSet<u64> = spans()
            .filter(|s| s.kind == Kind::Internal && s.name == call.path)
            .map(|s| s.id)
            .collect();
        let attempts = spans()
            .filter(|s| s.kind == Kind::Client && s.parent.is_some_and(|p| ids.contains(&p)))
            .count();
        assert_eq!(ids.len() as u64, call.counts.calls, "{}: calls", call.path);
        assert_eq!(
            attempts as u64, call.counts.attempts,
            "{}: attempts",
            call.path
        );
    }
    for service in &report.services {
        let jobs = spans()
            .filter(|s| s.kind == Kind::Server && s.service == service.name)
            .count();
        assert_eq!(jobs as u64, service.arrivals, "{}: jobs", service.name);
    }
    assert!(service_report(&report, "db").arrivals > 0);
}

/// The rows of the reference's table of failure reasons: the status and the gRPC code.
fn reference_rows() -> BTreeMap<String, (Option<i64>, String)> {
    let text = std::fs::read_to_string(workspace_root().join("book/src/reference.md"))
        .expect("the reference is readable");
    let table = text
        .split("### Failure reasons")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .expect("the reference has its failure reasons");
    table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let status = cells[3]
                .split(|c: char| !c.is_ascii_digit())
                .find(|w| w.len() == 3)
                .map(|w| w.parse().expect("three digits"));
            let code = cells[4].trim_matches('`').to_string();
            (cells[1].trim_matches('`').to_string(), (status, code))
        })
        .collect()
}

/// gRPC's status codes by name, as `grpc/status.proto` numbers them.
const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

#[test]
fn each_failed_attempt_carries_its_reasons_row_of_the_reference() {
    let rows = reference_rows();
    assert_eq!(rows.len(), scenarios::figures::REASONS.len());
    let mut seen = BTreeSet::new();
    for (name, duration) in [("retry-storm", "12s"), ("pool-exhaustion", "10s")] {
        let (_, traces, _) = check(&library(name, duration), 1.0, SpanFormat::Otlp);
        for span in traces.iter().flat_map(|t| t.spans.iter()) {
            let Some(Value::Str(reason)) = attribute(span, "error.type") else {
                continue;
            };
            let Some((status, code)) = rows.get(reason) else {
                // A job cancelled or lost at its replica has no row: nobody answered.
                assert!(reason == "cancelled" || reason == "lost", "{reason}");
                continue;
            };
            let http = match attribute(span, "http.response.status_code") {
                Some(Value::Int(s)) => Some(*s),
                _ => None,
            };
            assert_eq!(http, *status, "{reason}: status");
            let grpc = GRPC_CODES
                .iter()
                .position(|c| c == code)
                .expect("a gRPC code") as i64;
            assert_eq!(
                attribute(span, "rpc.grpc.status_code"),
                Some(&Value::Int(grpc)),
                "{reason}: gRPC code"
            );
            assert_eq!(span.error.as_deref(), Some(reason.as_str()));
            seen.insert(reason.clone());
        }
    }
    assert!(seen.len() >= 3, "only {seen:?}");
}

#[test]
fn a_retrys_backoff_lies_between_its_two_attempts() {
    let (_, traces, _) = check(&library("retry-storm", "12s"), 1.0, SpanFormat::Otlp);
    let mut retries = 0;
    for t in &traces {
        for call in t.spans.iter().filter(|s| s.kind == Kind::Internal) {
            let attempts: BTreeMap<i64, &scenarios::report::spans::Span> = t
                .spans
                .iter()
                .filter(|s| s.kind == Kind::Client && s.parent == Some(call.id))
                .map(|s| match attribute(s, "resim.attempt") {
                    Some(Value::Int(n)) => (*n, s),
                    _ => panic!("an attempt has its number"),
                })
                .collect();
            for backoff in call.events.iter().filter(|e| e.name == "backoff") {
                let n = match &backoff.attributes[..] {
                    [
                        ("resim.attempt", Value::Int(n)),
                        ("resim.retry.backoff_ns", Value::Int(ns)),
                    ] => {
                        let failed = attempts[n];
                        assert_eq!(failed.end, backoff.at);
                        assert!(failed.error.is_some(), "a retry follows a failure");
                        let after = backoff.at + sim_core::SimDuration::from_nanos(*ns as u64);
                        if let Some(next) = attempts.get(&(n + 1)) {
                            assert!(
                                next.start >= after,
                                "attempt {} starts before its backoff ends",
                                n + 1
                            );
                        }
                        *n
                    }
                    other => panic!("a backoff's attributes: {other:?}"),
                };
                assert!(attempts.contains_key(&(n + 1)) || call.end >= backoff.at);
                retries += 1;
            }
        }
    }
    assert!(retries > 100, "{retries} retries");
}

#[test]
fn parents_come_before_their_children_and_hold_them() {
    let (_, traces, _) = check(&library("fan-out-tail", "2s"), 1.0, SpanFormat::Otlp);
    for t in &traces {
        let mut before: BTreeMap<u64, &scenarios::report::spans::Span> = BTreeMap::new();
        for s in &t.spans {
            if let Some(p) = s.parent {
                let parent: &&scenarios::report::spans::Span = before
                    .get(&p)
                    .unwrap_or_else(|| panic!("{}: parent after child", s.name));
                assert!(
                    parent.start <= s.start,
                    "{}: starts before its parent",
                    s.name
                );
            }
            assert!(s.start <= s.end);
            before.insert(s.id, s);
        }
    }
    // A fan-out's leaves hang under its call: 100 leaf calls per search call.
    let t = &traces[0];
    let fan = t
        .spans
        .iter()
        .find(|s| s.name == "services.search.calls[0]")
        .expect("a fan-out");
    let leaves = t
        .spans
        .iter()
        .filter(|s| s.parent == Some(fan.id) && s.kind == Kind::Internal);
    assert_eq!(leaves.count(), 100);
}

#[test]
fn sampling_keeps_about_its_share_of_whole_requests() {
    let s = library("retry-storm", "12s");
    let (report, all, _) = check(&s, 1.0, SpanFormat::Otlp);
    let (_, tenth, _) = check(&s, 0.1, SpanFormat::Otlp);
    let n = report.summary.offered as f64;
    // Binomial(n, 0.1): within four standard deviations.
    let sd = (n * 0.1 * 0.9).sqrt();
    assert!(
        (tenth.len() as f64 - n * 0.1).abs() < 4.0 * sd,
        "{} of {n} kept",
        tenth.len()
    );
    // Each kept request is the whole trace the full run wrote of it.
    let by_request: BTreeMap<u64, &Trace> = all.iter().map(|t| (t.request, t)).collect();
    for t in &tenth {
        assert_eq!(
            Some(&t),
            by_request.get(&t.request),
            "request {}",
            t.request
        );
    }
}

#[test]
fn the_same_file_and_seed_write_the_same_bytes() {
    let s = library("retry-storm", "11s");
    for (_, format) in SpanFormat::ALL {
        let (_, _, a) = check(&s, 0.2, format);
        let (_, _, b) = check(&s, 0.2, format);
        assert!(a == b, "{format:?}");
    }
}

#[test]
fn opentelemetrys_own_types_read_the_otlp_lines() {
    let s = library("retry-storm", "11s");
    let (_, traces, bytes) = check(&s, 0.2, SpanFormat::Otlp);
    let text = String::from_utf8(bytes).expect("UTF-8");
    let mut spans = 0;
    let mut errors = 0;
    for (line, t) in text.lines().zip(&traces) {
        let request: ExportTraceServiceRequest =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let mut ids = BTreeSet::new();
        for rs in &request.resource_spans {
            let resource = rs.resource.as_ref().expect("a resource");
            assert_eq!(resource.attributes[0].key, "service.name");
            for span in rs.scope_spans.iter().flat_map(|ss| ss.spans.iter()) {
                assert_eq!(span.trace_id, t.id.to_be_bytes().to_vec());
                assert_eq!(span.span_id.len(), 8);
                assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
                assert!((1..=3).contains(&span.kind), "kind {}", span.kind);
                let status = span.status.as_ref().map_or(0, |s| s.code);
                errors += usize::from(status == 2);
                ids.insert(span.span_id.clone());
                spans += 1;
            }
        }
        // Every parent is a span of the same request.
        for rs in &request.resource_spans {
            for span in rs.scope_spans.iter().flat_map(|ss| ss.spans.iter()) {
                assert!(span.parent_span_id.is_empty() || ids.contains(&span.parent_span_id));
            }
        }
    }
    let written: usize = traces.iter().map(|t| t.spans.len()).sum();
    assert_eq!(spans, written);
    let failed = traces
        .iter()
        .flat_map(|t| t.spans.iter())
        .filter(|s| s.error.is_some());
    assert_eq!(errors, failed.count());
}

/// The documents of the three other formats, as their readers take them.
#[test]
fn jaeger_zipkin_and_perfetto_documents_have_their_shapes() {
    let s = library("retry-storm", "11s");
    let (_, traces, bytes) = check(&s, 0.1, SpanFormat::Jaeger);
    let doc: Json = serde_json::from_slice(&bytes).expect("one JSON document");
    let data = doc["data"].as_array().expect("data");
    assert_eq!(data.len(), traces.len());
    for trace in data {
        let processes = trace["processes"].as_object().expect("processes");
        for span in trace["spans"].as_array().expect("spans") {
            let p = span["processID"].as_str().expect("a process id");
            assert!(processes[p]["serviceName"].is_string());
            assert_eq!(span["traceID"], trace["traceID"]);
            assert_eq!(span["spanID"].as_str().map(str::len), Some(16));
            assert!(span["startTime"].is_u64() && span["duration"].is_u64());
            for tag in span["tags"].as_array().expect("tags") {
                let ty = tag["type"].as_str().expect("a typed tag");
                assert!(["string", "bool", "int64"].contains(&ty));
            }
        }
    }
    let (_, traces, bytes) = check(&s, 0.1, SpanFormat::Zipkin);
    let list: Vec<Json> = serde_json::from_slice(&bytes).expect("a list of spans");
    assert_eq!(
        list.len(),
        traces.iter().map(|t| t.spans.len()).sum::<usize>()
    );
    for span in &list {
        assert_eq!(span["traceId"].as_str().map(str::len), Some(32));
        assert_eq!(span["id"].as_str().map(str::len), Some(16));
        assert!(span["duration"].as_u64().is_some_and(|d| d >= 1));
        assert!(
            span["tags"]
                .as_object()
                .expect("tags")
                .values()
                .all(Json::is_string)
        );
        assert!(matches!(
            span.get("kind").and_then(Json::as_str),
            None | Some("CLIENT" | "SERVER")
        ));
    }
    let (_, _, bytes) = check(&s, 0.1, SpanFormat::Perfetto);
    let doc: Json = serde_json::from_slice(&bytes).expect("one JSON document");
    // No two complete events of a thread overlap unless one holds the other.
    let mut threads: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().expect("traceEvents") {
        if e["ph"] == "X" {
            let (ts, dur) = (
                e["ts"].as_f64().expect("ts"),
                e["dur"].as_f64().expect("dur"),
            );
            let key = (
                e["pid"].as_u64().expect("pid"),
                e["tid"].as_u64().expect("tid"),
            );
            threads.entry(key).or_default().push((ts, ts + dur));
        }
    }
    for spans in threads.values_mut() {
        spans.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "{w:?} overlap on one thread");
        }
    }
}

#[test]
fn bad_flags_are_refused_and_nothing_is_written() {
    let dir = workspace_root().join("target/spans-flags");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let out = dir.join("out.json");
    let _ = std::fs::remove_file(&out);
    let path = out.to_str().expect("a UTF-8 path");
    for (args, says) in [
        (
            vec!["--spans", path, "--spans-sample", "2"],
            "between 0 and 1",
        ),
        (vec!["--spans", path, "--spans-format", "otel"], "otlp"),
        (vec!["--spans", "/nonexistent-dir/x.json"], "cannot write"),
    ] {
        let mut all = vec!["run", "fan-out-tail", "--duration", "1s"];
        all.extend(args);
        let r = resim_in(&dir, &all);
        assert_eq!(r.code, 2, "{all:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{all:?}: {}", r.stderr);
        assert!(!out.exists(), "{all:?} wrote a file");
    }
    let r = resim_in(
        &dir,
        &["run", "fan-out-tail", "--duration", "2s", "--spans", path],
    );
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let lines = std::fs::read_to_string(&out)
        .expect("written")
        .lines()
        .count();
    assert!(lines > 50, "{lines} requests");
    let leftovers = std::fs::read_dir(&dir).expect("listed").count();
    assert_eq!(leftovers, 1, "a temporary file was left");
}

/// The span the chapter "Requests as traces" shows is one that `resim run retry-storm
/// --spans-format zipkin --spans-sample 0.01` writes.
#[test]
fn the_chapters_span_is_one_the_run_writes() {
    let text = std::fs::read_to_string(workspace_root().join("book/src/traces.md"))
        .expect("the chapter is readable");
    let shown = text
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the chapter shows a span");
    let shown: Json = serde_json::from_str(shown).expect("the shown span is JSON");
    let s = library_scenario("retry-storm", None, &[]);
    let (_, _, bytes) = check(&s, 0.01, SpanFormat::Zipkin);
    let list: Vec<Json> = serde_json::from_slice(&bytes).expect("a list of spans");
    let written = list.iter().find(|s| s["id"] == shown["id"]);
    assert_eq!(
        written,
        Some(&shown),
        "the chapter's span is not what the run writes"
    );
}
