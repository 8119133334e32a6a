//! `resim import` reads traces: the round trip. The book's `traced-shop` (eight services,
//! calls in sequence, at once, on a share of requests, as one of two request types, and
//! fanned out) is run with spans in each format, the spans are imported, and the imported
//! scenario has the original's edges exactly, its call ratios, fan-out and arrival rate
//! within 2% (or four standard errors of the run's sample, where that is wider: the default
//! run is short), each service's work time passes a two-sample Kolmogorov–Smirnov test at 1%
//! against the original's, and, run again, the client's p50 is within 5% and p99 within 10%.
//!
//! `RESIM_TRACES_SECONDS=N` traces N seconds of the shop (default 20: 2,000 requests, a few
//! seconds of test time); at 200 and more the 2% bounds bind on their own.

use crate::support::workspace_root;
use scenarios::Scenario;
use scenarios::format::limits::RunLimits;
use scenarios::format::load::parse;
use scenarios::format::schema::{Load, Schedule};
use scenarios::import::{self, Input, Target};
use scenarios::report::spans::{SpanFormat, SpanWriter, trace_of};
use scenarios::run::{RunOptions, run, run_streaming};
use sim_core::Seed;
use sim_core::sample::Dist;
use std::collections::BTreeSet;

const SHOP: &str = "book/src/scenarios/traced-shop.ron";

fn shop(duration: &str) -> Scenario {
    let text = std::fs::read_to_string(workspace_root().join(SHOP)).expect("the shop");
    let mut s = parse(SHOP, &text).unwrap_or_else(|e| panic!("{e}"));
    s.duration = duration.parse().expect("a duration");
    s
}

fn seconds() -> u64 {
    std::env::var("RESIM_TRACES_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

/// The spans of a run of `scenario` in `format`.
fn spans(scenario: &Scenario, format: SpanFormat) -> String {
    let mut writer = SpanWriter::new(Vec::new(), format).expect("a vector takes bytes");
    let every = RunOptions {
        sample_requests: Some(1.0),
        ..RunOptions::default()
    };
    run_streaming(scenario, SHOP, &every, &mut |f, stopped| {
        writer
            .write(&trace_of(&f, scenario.seed, stopped))
            .expect("a vector takes bytes");
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (bytes, _, _) = writer.finish().expect("a vector takes bytes");
    String::from_utf8(bytes).expect("UTF-8")
}

/// The scenario imported from `text`, and its calibration report.
fn imported(file: &str, text: String) -> (Scenario, import::traces::Calibration, String) {
    let inputs = [Input {
        file: file.to_string(),
        text,
    }];
    let made = import::import(&inputs, None, &Target::default(), &RunLimits::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let s = parse("imported.ron", &made.text).unwrap_or_else(|e| panic!("{e}\n{}", made.text));
    (s, made.calibration.expect("traces were read"), made.text)
}

/// Who calls whom: (caller, callee), the client's call included.
fn edges(s: &Scenario) -> BTreeSet<(String, String)> {
    let clients = s
        .clients
        .iter()
        .map(|(n, c)| (n.clone(), c.call.target.clone()));
    let services = s
        .services
        .iter()
        .flat_map(|(n, sv)| sv.calls.iter().map(move |c| (n.clone(), c.target.clone())));
    clients.chain(services).collect()
}

/// The share of `caller`'s requests that call `callee`, and the leaves of each such call.
fn made(s: &Scenario, caller: &str, callee: &str) -> (f64, f64) {
    let sv = &s.services[caller];
    let i = sv
        .calls
        .iter()
        .position(|c| c.target == callee)
        .expect("an edge");
    let call = &sv.calls[i];
    let pick = sv.call_stages().iter().find_map(|st| match st {
        scenarios::format::schema::CallStage::Pick(calls) if calls.contains(&(i as u32)) => Some(
            calls
                .iter()
                .map(|&c| sv.calls[c as usize].weight)
                .sum::<f64>(),
        ),
        _ => None,
    });
    let share = pick.map_or(1.0, |sum| call.weight / sum) * call.call_ratio;
    (share, call.fan_out.as_ref().map_or(1.0, |f| f64::from(f.n)))
}

/// Kolmogorov–Smirnov's two-sample statistic D.
fn ks(mut a: Vec<u64>, mut b: Vec<u64>) -> f64 {
    a.sort_unstable();
    b.sort_unstable();
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    d
}

fn draws(dist: &Dist, n: usize, stream: &str) -> Vec<u64> {
    let sampler = dist.compile().expect("a valid distribution");
    let mut rng = Seed(11).stream(stream);
    (0..n)
        .map(|_| sampler.sample(&mut rng).as_nanos())
        .collect()
}

fn within(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: imported {got}, original {want}, allowed ±{tolerance}"
    );
}

fn round_trip(format: SpanFormat, file: &str) {
    let original = shop(&format!("{}s", seconds()));
    let (imported, calibration, text) = imported(file, spans(&original, format));
    assert_eq!(
        edges(&imported),
        edges(&original),
        "{file}: the edges\n{text}"
    );
    for row in &calibration.edges {
        let (want, fan_out) = made(&original, &row.caller, &row.callee);
        let (got, got_fan_out) = made(&imported, &row.caller, &row.callee);
        let n = row.jobs as f64 / row.call_ratio;
        let tolerance = (0.02f64).max(4.0 * (want * (1.0 - want) / n).sqrt());
        within(
            &format!("{file}: {} -> {} call ratio", row.caller, row.callee),
            got,
            want,
            tolerance,
        );
        within(
            &format!("{file}: {} -> {} fan-out", row.caller, row.callee),
            got_fan_out,
            fan_out,
            0.02 * fan_out,
        );
    }
    let rate = |s: &Scenario| match &s.clients["users"].load {
        Load::Open {
            rate: Schedule::Constant(r),
        } => r.as_per_second(),
        other => panic!("{file}: an open load at a constant rate, got {other:?}"),
    };
    let requests = 100.0 * seconds() as f64;
    within(
        &format!("{file}: arrival rate"),
        rate(&imported),
        100.0,
        100.0 * (0.02f64).max(4.0 / requests.sqrt()),
    );
    // The imported distribution is the import's estimate from the `n` work times it
    // measured, so it carries those `n` values' sampling error and no more: it is drawn
    // 20,000 times (close to the distribution itself), the original 4,000 times, and the
    // critical value at 1% counts all three samples (n measured, 20,000 and 4,000 draws).
    // Drawing only `n` from the import would count the measured sample's error twice.
    for (name, sv) in &original.services {
        let path = format!("services.{name}.work");
        let row = calibration
            .distributions
            .iter()
            .find(|d| d.path == path)
            .expect("measured");
        let (n, big, m) = (row.values as f64, 20_000, 4000);
        let d = ks(
            draws(&imported.services[name].work, big, name),
            draws(&sv.work, m, name),
        );
        let critical = 1.628 * (1.0 / n + 1.0 / big as f64 + 1.0 / m as f64).sqrt();
        assert!(
            d <= critical,
            "{file}: {name}'s work: KS D = {d:.4} > {critical:.4} (1%)\n{text}"
        );
    }
    // The shop's work is its own at any load, and its one rate is one rate.
    assert!(
        calibration.load.iter().all(|r| !r.warned),
        "{file}: {:?}",
        calibration.load
    );
    // Run again, long enough for a p99, at the same seed.
    let longer = |mut s: Scenario| {
        s.duration = "60s".parse().unwrap();
        let r = run(&s, SHOP, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        r.report
            .clients
            .iter()
            .find(|c| c.name == "users")
            .and_then(|c| c.latency_ms.clone())
            .expect("successes")
    };
    let (a, b) = (longer(original), longer(imported));
    within(&format!("{file}: p50"), b.p50, a.p50, 0.05 * a.p50);
    within(&format!("{file}: p99"), b.p99, a.p99, 0.10 * a.p99);
}

#[test]
fn otlp_spans_import_back_to_the_system_that_wrote_them() {
    round_trip(SpanFormat::Otlp, "shop.otlp.jsonl");
}

#[test]
fn jaeger_spans_import_back_to_the_system_that_wrote_them() {
    round_trip(SpanFormat::Jaeger, "shop.jaeger.json");
}

#[test]
fn zipkin_spans_import_back_to_the_system_that_wrote_them() {
    round_trip(SpanFormat::Zipkin, "shop.zipkin.json");
}

/// Traces of a load that steps up to near saturation, on one worker whose spans start when a
/// request arrives: the rate comes back as its four steps, each within four standard errors
/// of the declared rate, and the self time, which holds the queue, is said to grow with load.
#[test]
fn a_stepped_load_comes_back_as_steps_and_queueing_measured_as_work_is_warned() {
    let text = r#"Scenario(
        name: "ramp", duration: "20s", seed: 3,
        clients: { "users": (
            load: Open(rate: Steps([(at: "0s", rate: "100/s"), (at: "5s", rate: "300/s"),
                (at: "10s", rate: "600/s"), (at: "15s", rate: "800/s")])),
            call: (target: "api"),
        ) },
        services: { "api": (replicas: 1, workers: 1, work: Exponential(mean: "1ms")) },
    )"#;
    let original = parse("ramp.ron", text).unwrap_or_else(|e| panic!("{e}"));
    let (imported, calibration, text) = imported("ramp.jsonl", spans(&original, SpanFormat::Otlp));
    let Load::Open {
        rate: Schedule::Steps(steps),
    } = &imported.clients["users"].load
    else {
        panic!("a stepped rate:\n{text}");
    };
    let declared = [100.0, 300.0, 600.0, 800.0];
    assert_eq!(steps.len(), declared.len(), "{text}");
    for (i, (step, want)) in steps.iter().zip(declared).enumerate() {
        let got = step.rate.as_per_second();
        // Five seconds of a Poisson count: its standard error √(5·rate)/5.
        within(
            &format!("step {i}"),
            got,
            want,
            4.0 * (5.0 * want).sqrt() / 5.0,
        );
        let at = step.at.as_secs_f64();
        within(&format!("step {i} starts"), at, 5.0 * i as f64, 0.1);
    }
    let api = calibration
        .load
        .iter()
        .find(|r| r.path == "services.api.work")
        .expect("judged");
    assert!(api.warned && api.growth > 2.0, "{api:?}");
}

/// A call retried in the traced system: the edge's retried share is in the report, and
/// imported without the configuration that retries it, a line says the scenario has no
/// retry for the call the spans show sent again.
#[test]
fn retries_the_spans_show_and_no_policy_gives_are_a_line() {
    let text = r#"Scenario(
        name: "retried", duration: "10s", seed: 5,
        clients: { "users": (load: Open(rate: Constant("100/s")), call: (target: "api")) },
        services: {
            "api": (workers: 16, work: Exponential(mean: "1ms"), calls: [(target: "db",
                stack: [Retry(max_attempts: 3, backoff: (strategy: Constant(delay: "1ms")))])]),
            "db": (workers: 16, work: Exponential(mean: "1ms")),
        },
        faults: [(at: "0s", kind: ErrorRate(service: "db", error_ratio: 0.2))],
    )"#;
    let original = parse("retried.ron", text).unwrap_or_else(|e| panic!("{e}"));
    let (_, calibration, _) = imported("retried.jsonl", spans(&original, SpanFormat::Otlp));
    let edge = calibration
        .edges
        .iter()
        .find(|e| e.caller == "api" && e.callee == "db")
        .expect("the edge");
    // A second attempt after a 20% failure, a third after two: 20% of calls retried.
    within("retried", edge.retried, 0.2, 0.04);
    assert_eq!(edge.attempts_max, 3);
    assert!(
        calibration
            .disagreements
            .iter()
            .any(|l| l.contains("api -> db was sent more than once in")
                && l.contains("the scenario gives services.api.calls[0] no retry")),
        "{:?}",
        calibration.disagreements
    );
}

/// Attempts timed out in the traced system: the edge's share of deadline errors and the time
/// after which they came are in the report. Imported alone, a line says the scenario gives
/// the call no timeout. Written into the scenario that ran (`--into`), whose timeout is the
/// one the spans show, nothing is said; into one whose timeout is longer, a line.
#[test]
fn timeouts_the_spans_show_are_compared_with_the_scenarios_timeout() {
    let text = |timeout: &str| {
        format!(
            r#"Scenario(
        name: "timed", duration: "10s", seed: 5,
        clients: {{ "users": (load: Open(rate: Constant("100/s")), call: (target: "api")) }},
        services: {{
            "api": (workers: 16, work: Exponential(mean: "1ms"),
                calls: [(target: "db", timeout: "{timeout}")]),
            "db": (workers: 16, work: Exponential(mean: "8ms")),
        }},
    )"#
        )
    };
    let original = parse("timed.ron", &text("20ms")).unwrap_or_else(|e| panic!("{e}"));
    let spans = spans(&original, SpanFormat::Jaeger);
    let (_, calibration, _) = imported("timed.json", spans.clone());
    let edge = calibration
        .edges
        .iter()
        .find(|e| e.caller == "api" && e.callee == "db")
        .expect("the edge");
    // db's work is over 20ms in e^-2.5 = 8.2% of its jobs; four standard errors of ~1,000.
    within("timed out", edge.deadline_ratio, (-2.5f64).exp(), 0.035);
    assert_eq!(edge.deadline_after_ns, Some(20_000_000));
    assert!(edge.longest_success_ns.is_some_and(|l| l < 20_000_000));
    let said = |lines: &[String], what: &str| lines.iter().any(|l| l.contains(what));
    assert!(
        said(
            &calibration.disagreements,
            "api -> db ended in a deadline error on"
        ) && said(
            &calibration.disagreements,
            "the scenario gives services.api.calls[0] no timeout"
        ) && said(&calibration.disagreements, "a timeout of about 20ms"),
        "{:?}",
        calibration.disagreements
    );
    let into = |timeout: &str| {
        let target = Target {
            into: Some(Input {
                file: "timed.ron".into(),
                text: text(timeout),
            }),
            call: Some("services.api.calls[0]".into()),
            ..Target::default()
        };
        let traces = [Input {
            file: "timed.json".into(),
            text: spans.clone(),
        }];
        import::import(&traces, None, &target, &RunLimits::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .calibration
            .expect("traces were read")
            .disagreements
    };
    let lines = into("20ms");
    assert!(lines.is_empty(), "{lines:?}");
    let lines = into("50ms");
    assert!(
        lines.len() == 1 && lines[0].contains("but services.api.calls[0]'s timeout is 50ms"),
        "{lines:?}"
    );
}

/// `resim import FILE` of the traces corpus: its exit code, its scenario and its table.
fn corpus(file: &str, args: &[&str]) -> crate::support::Resim {
    let dir = workspace_root().join("scenarios/tests/import-corpus/traces");
    let mut all = vec!["import", file];
    all.extend_from_slice(args);
    crate::support::resim_in(&dir, &all)
}

fn shows(out: &crate::support::Resim, what: &[&str]) {
    assert_eq!(out.code, 0, "{}", out.stderr);
    let both = format!("{}\n{}", out.stdout, out.stderr);
    for w in what {
        assert!(both.contains(w), "missing {w:?} in:\n{both}");
    }
}

/// OTLP: frontend calls cart, then stripe, which records no spans (a virtual service named
/// by `peer.service`); cart publishes to mailer (a producer and a consumer: asynchronous);
/// cart's clock runs 2ms behind frontend's in one request (its server span starts before the
/// client span that sent it) and its time is still its own; one trace lost its root.
#[test]
fn otlp_corpus_has_a_virtual_peer_an_asynchronous_edge_clock_skew_and_a_truncated_trace() {
    let out = corpus("otlp-checkout.jsonl", &[]);
    shows(
        &out,
        &[
            "\"stripe\": (",
            "a virtual service: it records no spans",
            "cart -> mailer (async)",
            "frontend -> stripe",
            "25.00%",
            "1 spans without their parent",
            // cart's self time: 4ms less its 0.2ms publish, in every request, skewed or not.
            "work: Constant(value: \"3.8ms\")",
            // frontend's: 10ms less its calls' 8ms.
            "work: Constant(value: \"2ms\")",
            "latency: Constant(value: \"500µs\")",
            "Open(rate: Constant(\"10/s\"))",
        ],
    );
}

/// Jaeger: orders calls stock, billing (a peer without spans) and, by `FOLLOWS_FROM`, audit;
/// the probabilistic sampler's 0.5 doubles the rate; stock's clock skew moves nothing.
#[test]
fn jaeger_corpus_reads_follows_from_a_peer_the_sampler_and_skew() {
    let out = corpus("jaeger-orders.json", &[]);
    shows(
        &out,
        &[
            "orders -> audit (async)",
            "\"billing\": (",
            "rates scaled by sampling 0.5",
            "Open(rate: Constant(\"40/s\"))",
            "work: Constant(value: \"2ms\")",
            "1 spans without their parent",
        ],
    );
}

/// Zipkin: web calls api (a shared span id, as B3 writes it), api calls redis, seen only
/// as `remoteEndpoint`; api's clock is behind in one request.
#[test]
fn zipkin_corpus_reads_shared_spans_a_remote_endpoint_and_skew() {
    let out = corpus("zipkin-web.json", &["--sampling", "0.25"]);
    shows(
        &out,
        &[
            "web -> api",
            "api -> redis",
            "\"redis\": (",
            "work: Constant(value: \"4.9ms\")",
            "work: Constant(value: \"3ms\")",
            "1 spans without their parent",
            "rates scaled by sampling 0.25",
        ],
    );
}

/// A malformed span names the file, the trace and span ids and the field; exit 2; no file.
#[test]
fn a_malformed_span_names_its_file_trace_span_and_field_and_nothing_is_written() {
    let dir = workspace_root().join("target/traces-malformed");
    std::fs::create_dir_all(&dir).expect("a directory");
    let cases = [
        (
            "bad.jsonl",
            r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},"scopeSpans":[{"spans":[{"traceId":"ab12","spanId":"cd34","kind":2,"endTimeUnixNano":"5"}]}]}]}"#,
            "bad.jsonl: trace ab12, span cd34: startTimeUnixNano: missing",
        ),
        (
            "bad-jaeger.json",
            r#"{"data":[{"traceID":"t1","spans":[{"traceID":"t1","spanID":"s1","startTime":1,"duration":2,"processID":"p9","references":[],"tags":[]}],"processes":{"p1":{"serviceName":"a"}}}]}"#,
            "bad-jaeger.json: trace t1, span s1: processID: \"p9\" is not among the trace's `processes`",
        ),
        (
            "bad-zipkin.json",
            r#"[{"traceId":"t2","id":"s2","kind":"SERVER","timestamp":"soon","localEndpoint":{"serviceName":"a"}}]"#,
            "bad-zipkin.json: trace t2, span s2: timestamp: expected microseconds as a number, got \"soon\"",
        ),
        (
            "cut.jsonl",
            r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","#,
            "cut.jsonl:1:",
        ),
    ];
    for (file, text, says) in cases {
        std::fs::write(dir.join(file), text).expect("written");
        let _ = std::fs::remove_file(dir.join("out.ron"));
        let out = crate::support::resim_in(&dir, &["import", file, "--out", "out.ron"]);
        assert_eq!(out.code, 2, "{file}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{file}: {}", out.stderr);
        assert!(!dir.join("out.ron").exists(), "{file}: nothing is written");
    }
}

/// Traces and a configuration in one command: the topology from the traces (frontend calls
/// cart), the policies from Istio's rules for cart (its timeout and retries on frontend's
/// traced call, its outlier detection on the traced service), no second cart.
#[test]
fn traces_give_the_topology_and_a_configuration_its_policies() {
    let out = corpus("otlp-checkout.jsonl", &["istio-cart.yaml"]);
    shows(
        &out,
        &[
            "resim import: otlp-checkout.jsonl, istio-cart.yaml (traces, istio)",
            "-> services.frontend.calls[0].deadline = \"250ms\"",
            "-> services.frontend.calls[0].timeout = \"100ms\"",
            "-> services.cart.outlier",
        ],
    );
    assert_eq!(
        out.stdout.matches("\"cart\": (").count(),
        1,
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("\"app\""), "{}", out.stdout);
}
