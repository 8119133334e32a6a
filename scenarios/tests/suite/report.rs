//! The report, figure by figure. Most tests write a run's figures by hand (they are plain
//! data) so that each says exactly what was measured and what a reader of the report sees:
//! the human report, the compact summary, the JSON object and the CSV series.

use scenarios::Report;
use scenarios::figures::{
    CallSiteFigures, CallStats, ClientBucket, ClientFigures, Figures, RunBucket, RunMeta,
    ServiceCounts, ServiceFigures,
};
use scenarios::format::load::parse;
use scenarios::report::Format;
use sim_core::metrics::LatencyHistogram;
use sim_core::{SimDuration, SimTime, StopReason};
use sim_net::LinkReport;

/// Figures of a run of `buckets.len()` buckets of `bucket`, with one client `c` whose
/// buckets are `buckets` and nothing else measured.
fn figures(bucket: SimDuration, buckets: Vec<ClientBucket>) -> Figures {
    Figures {
        end: SimTime::ZERO + bucket * buckets.len() as u64,
        bucket,
        series_bucket: bucket,
        latency: LatencyHistogram::new(),
        clients: vec![ClientFigures {
            name: "c".to_string(),
            failed: Default::default(),
            latency: LatencyHistogram::compact(),
            buckets,
            classes: Vec::new(),
            makespan: None,
        }],
        services: Vec::new(),
        call_sites: Vec::new(),
        buckets: Vec::new(),
        links: Vec::new(),
        duplicates_ignored: 0,
        requests_in_flight: 0,
        trace: Vec::new(),
        trace_left_out: 0,
        distributed: Vec::new(),
        followed: None,
        followed_requests: Vec::new(),
        failed_examples: Vec::new(),
        slow_examples: Vec::new(),
    }
}

/// The report of `figures` for a scenario with one client `c` calling `api`, expecting
/// `expectations` (RON).
fn check(expectations: &str, figures: &Figures) -> Report {
    let text = format!(
        r#"Scenario(
            name: "t",
            duration: "{}s",
            clients: {{ "c": (load: Open(rate: Constant("100/s")), call: (target: "api")) }},
            services: {{ "api": (workers: 1, work: Constant(value: "1ms")) }},
            expectations: [{expectations}],
        )"#,
        (figures.end - SimTime::ZERO).as_secs_f64().max(1.0)
    );
    let scenario = parse("t.ron", &text).unwrap_or_else(|e| panic!("{e}"));
    let meta = RunMeta {
        file: "t.ron".to_string(),
        seed: 1,
        digest: 0,
        events: 0,
        stop: StopReason::TimeLimit,
        stop_detail: None,
        replay_flags: String::new(),
    };
    Report::build(&scenario, &meta, figures)
}

/// What the human report says about each expectation, one line each.
fn verdicts(report: &Report) -> Vec<String> {
    Format::Human
        .render(report)
        .lines()
        .skip_while(|l| *l != "expectations")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.trim().to_string())
        .collect()
}

/// A bucket of 100 offers with `ok` successes.
fn offered(ok: u64) -> ClientBucket {
    ClientBucket {
        offered: 100,
        successes: ok,
        failures: 100 - ok,
        ..ClientBucket::default()
    }
}

#[test]
fn recovery_is_judged_in_one_pass_over_many_buckets() {
    // 200,000 buckets of 10ms (2,000s). Judged by trying every start and scanning forward
    // from each, a bad bucket near the end made this take minutes.
    let n = 200_000;
    let ms10 = SimDuration::from_millis(10);
    // Every bucket offers 100 requests; those in `bad` see half of them succeed.
    let with_bad = |bad: std::ops::Range<usize>| {
        let ok = |i: usize| if bad.contains(&i) { 50 } else { 100 };
        figures(ms10, (0..n).map(|i| offered(ok(i))).collect())
    };
    let expect = r#"RecoveredWithin(client: "c", after: "1000s", within: "1s")"#;

    // Bad from 1000s to 1000.5s, good after: recovered 500ms after.
    let dip = with_bad(100_000..100_050);
    assert_eq!(
        verdicts(&check(expect, &dip)),
        ["PASS c back to 90.0% success within 1s after 1000s: recovered 500ms after"]
    );
    // Only the buckets after `after` count, and a bad stretch before it does not.
    let early = with_bad(0..99_000);
    assert_eq!(
        verdicts(&check(expect, &early)),
        ["PASS c back to 90.0% success within 1s after 1000s: recovered 0s after"]
    );
    // Slower than `within`: observed, and failed.
    let slow = with_bad(100_000..100_200);
    assert_eq!(
        verdicts(&check(expect, &slow)),
        ["FAIL c back to 90.0% success within 1s after 1000s: recovered 2s after"]
    );
    // A bad bucket just before the last: never recovered.
    let relapse = with_bad(n - 2..n - 1);
    assert_eq!(
        verdicts(&check(expect, &relapse)),
        ["FAIL c back to 90.0% success within 1s after 1000s: never recovered"]
    );
    // The last bucket holds requests still in flight at the end: it does not count.
    let last = with_bad(n - 1..n);
    assert_eq!(
        verdicts(&check(expect, &last)),
        ["PASS c back to 90.0% success within 1s after 1000s: recovered 0s after"]
    );
}

#[test]
fn a_goodput_window_without_requests_fails_and_says_so() {
    // Ten buckets of 1s; nothing is offered from 3s to 6s (a client switched off, or users
    // all stuck), and everything offered elsewhere succeeds.
    let quiet = |i: usize| {
        if (3..6).contains(&i) {
            ClientBucket::default()
        } else {
            offered(100)
        }
    };
    let f = figures(
        SimDuration::from_secs(1),
        (0..10).map(quiet).collect::<Vec<_>>(),
    );
    // Over no requests, neither bound is met: 0 of 0 is not 100%, nor 0%.
    let report = check(
        r#"GoodputAtLeast(client: "c", after: "3s", until: "6s", min_ratio: 0.9),
           GoodputAtMost(client: "c", after: "3s", until: "6s", max_ratio: 0.5),
           GoodputAtLeast(client: "c", after: "2s", until: "7s", min_ratio: 0.9)"#,
        &f,
    );
    assert_eq!(
        verdicts(&report),
        [
            "FAIL c success ratio from 3s to 6s at least 90.0%: no requests in the window",
            "FAIL c success ratio from 3s to 6s at most 50.0%: no requests in the window",
            "PASS c success ratio from 2s to 7s at least 90.0%: 100.0% (200 of 200)",
        ]
    );
    assert!(!report.passed());
}

#[test]
fn recovery_needs_requests_that_succeed_not_silence() {
    // Ten buckets of 1s: bad from 3s to 5s, then nothing offered until the end (a client
    // whose users are all stuck, say). Silence after the fault is not a recovery.
    let silent_after = |i: usize| match i {
        3..5 => offered(10),
        5.. => ClientBucket::default(),
        _ => offered(100),
    };
    let f = figures(
        SimDuration::from_secs(1),
        (0..10).map(silent_after).collect(),
    );
    let expect = r#"RecoveredWithin(client: "c", after: "3s", within: "5s")"#;
    assert_eq!(
        verdicts(&check(expect, &f)),
        ["FAIL c back to 90.0% success within 5s after 3s: never recovered"]
    );
    // Quiet buckets between good ones neither break a recovery nor start it: recovery is at
    // the first good bucket that was offered requests (7s, 4s after the fault's end).
    let gaps = |i: usize| match i {
        3..5 => offered(10),
        5 | 6 | 8 => ClientBucket::default(),
        _ => offered(100),
    };
    let f = figures(SimDuration::from_secs(1), (0..10).map(gaps).collect());
    assert_eq!(
        verdicts(&check(expect, &f)),
        ["PASS c back to 90.0% success within 5s after 3s: recovered 4s after"]
    );
}

/// The report rendered as JSON, parsed back.
fn json(report: &Report) -> serde_json::Value {
    serde_json::from_str(&Format::Json.render(report)).expect("the JSON rendering parses")
}

/// The line of `text` that starts (after its indentation) with `start`.
fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starts with {start:?} in\n{text}"))
}

#[test]
fn a_run_or_bucket_without_successes_has_no_latency() {
    // Two buckets of 1s: 100 requests at 20ms each, then 100 failures.
    let second = SimDuration::from_secs(1);
    let mut f = figures(second, vec![offered(100), offered(0)]);
    f.clients[0].buckets[0].latency_sum_ns = 100 * 20_000_000;
    let mut run_bucket = RunBucket::default();
    for _ in 0..100 {
        f.latency.record(SimDuration::from_millis(20));
        f.clients[0].latency.record(SimDuration::from_millis(20));
        run_bucket.record(SimDuration::from_millis(20));
    }
    f.buckets = vec![run_bucket];
    let r = check("", &f);
    let v = json(&r);
    assert_eq!(v["series"][0]["latency_ms_mean"], 20.0);
    assert_eq!(v["series"][0]["latency_ms_max"], 20.0);
    // The quantiles of a bucket are the upper edges of their log bins: within 25% above.
    for q in ["latency_ms_p50", "latency_ms_p99"] {
        let x = v["series"][0][q].as_f64().unwrap();
        assert!((20.0..=25.0).contains(&x), "{q}: {x}");
    }
    for q in [
        "latency_ms_mean",
        "latency_ms_p50",
        "latency_ms_p99",
        "latency_ms_max",
    ] {
        assert!(v["series"][1][q].is_null(), "{q}: {v}");
    }
    let csv = Format::Csv.render(&r);
    assert!(csv.lines().nth(2).unwrap().ends_with(",0,,"), "{csv}");

    // Nothing succeeds at all: no latency anywhere, and no p99 bound is met.
    let f = figures(second, vec![offered(0), offered(0)]);
    let r = check(r#"P99AtMost(client: "c", max: "1s")"#, &f);
    let v = json(&r);
    assert!(v["summary"]["latency_ms"].is_null(), "{v}");
    assert!(v["clients"][0]["latency_ms"].is_null(), "{v}");
    let human = Format::Human.render(&r);
    assert_eq!(
        line(&human, "latency ms"),
        "  latency ms   p50 –   p90 –   p99 –   p999 –   max –"
    );
    assert_eq!(
        verdicts(&r),
        ["FAIL c p99 latency at most 1s: no successes"]
    );
    let compact = Format::Compact.render(&r);
    assert!(
        compact.contains("latency ms p50 – p90 – p99 – max –"),
        "{compact}"
    );
}

/// Every key of a JSON value, as a dotted path (`series[].services[].arrivals`), once each.
fn keys(v: &serde_json::Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, child) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                out.insert(p.clone());
                keys(child, &p, out);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                keys(item, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// A small run with most of what a report can show: two tiers, retries, a breaker, a
/// network section and a fault.
const RICH: &str = r#"Scenario(
    name: "rich",
    duration: "10s",
    clients: { "c": (load: Open(rate: Constant("200/s")), call: (target: "api", timeout: "500ms",
        stack: [Retry((max_attempts: 2)), Breaker((failure_rate_threshold: 50))])) },
    services: {
        "api": (workers: 8, work: Exponential(mean: "2ms"), calls: [(target: "db", timeout: "100ms")]),
        "db": (workers: 4, queue: (capacity: 50), work: Exponential(mean: "10ms")),
    },
    network: (default_link: (latency: Constant(value: "1ms"))),
    faults: [(at: "4s", duration: "2s", kind: Slowdown(service: "db", factor: 4.0))],
    expectations: [GoodputAtLeast(client: "c", after: "0s", min_ratio: 0.1)],
)"#;

/// The report of [`RICH`] at its default seed.
fn rich() -> Report {
    let scenario = parse("rich.ron", RICH).unwrap_or_else(|e| panic!("{e}"));
    scenarios::run(&scenario, "rich.ron", &Default::default())
        .unwrap()
        .report
}

#[test]
fn json_keys_name_the_unit_then_the_qualifier() {
    let r = rich();
    let mut all = std::collections::BTreeSet::new();
    keys(&json(&r), "", &mut all);
    assert!(
        all.contains("calls[].breakers[].transitions[].t_s"),
        "{all:?}"
    );
    assert!(all.contains("network[].latency_ms_p99"), "{all:?}");
    // Qualifiers last, as in `latency_ms_max`: no unit after a qualifier within a key.
    const UNITS: [&str; 5] = ["ns", "ms", "s", "ratio", "percent"];
    const QUALIFIERS: [&str; 8] = ["mean", "max", "min", "total", "p50", "p90", "p99", "p999"];
    for path in &all {
        let key = path.rsplit('.').next().unwrap();
        let words: Vec<&str> = key.split('_').collect();
        if let Some(q) = words.iter().position(|w| QUALIFIERS.contains(w)) {
            assert!(
                !words[q..].iter().any(|w| UNITS.contains(w)),
                "{path}: the unit comes before the qualifier"
            );
        }
        assert_eq!(key, key.to_lowercase(), "{path}: snake case");
    }
    // "In flight" is for requests admitted and not yet answered (and messages on a link);
    // busy workers are called so.
    for path in &all {
        assert!(
            !path.contains("in_flight")
                || path == "network[].in_flight"
                || path == "summary.requests_in_flight",
            "{path}"
        );
    }
    assert!(all.contains("services[].busy_workers_mean"), "{all:?}");
    assert!(
        all.contains("series[].services[].busy_workers_mean"),
        "{all:?}"
    );
}

/// A call site from `caller` to `target` at `path`, with nothing counted.
fn site(path: &str, caller: &str, target: &str) -> CallSiteFigures {
    CallSiteFigures {
        path: path.to_string(),
        caller: caller.to_string(),
        target: target.to_string(),
        from_client: path.starts_with("clients."),
        counts: CallStats::default(),
        breakers: Vec::new(),
        buckets: Vec::new(),
        pace: None,
        adaptive_timeout: None,
        pool: None,
    }
}

#[test]
fn call_sites_are_named_by_caller_and_target() {
    let r = rich();
    let human = Format::Human.render(&r);
    assert!(line(&human, "c → api").contains("calls"), "{human}");
    assert!(line(&human, "api → db").contains("calls"), "{human}");
    assert!(!human.contains("clients.c.call"), "{human}");
    let compact = Format::Compact.render(&r);
    assert!(
        line(&compact, "call c → api ").contains("attempts"),
        "{compact}"
    );
    assert!(
        line(&compact, "call api → db ").contains("attempts"),
        "{compact}"
    );
    // JSON keeps the field path and names both ends.
    let v = json(&r);
    assert_eq!(v["calls"][0]["path"], "clients.c.call");
    assert_eq!(v["calls"][0]["caller"], "c");
    assert_eq!(v["calls"][0]["target"], "api");
    assert_eq!(v["calls"][1]["path"], "services.api.calls[0]");
    assert_eq!(v["calls"][1]["caller"], "api");
    assert_eq!(v["calls"][1]["target"], "db");

    // Two calls of one caller to the same target are told apart by their place in the file.
    let mut f = figures(SimDuration::from_secs(1), vec![offered(100)]);
    f.call_sites = vec![
        site("clients.c.call", "c", "api"),
        site("services.api.calls[0]", "api", "db"),
        site("services.api.calls[1]", "api", "db"),
    ];
    let human = Format::Human.render(&check("", &f));
    assert!(line(&human, "c → api  ").contains("calls"), "{human}");
    assert!(
        line(&human, "api → db (calls[0])").contains("calls"),
        "{human}"
    );
    assert!(
        line(&human, "api → db (calls[1])").contains("calls"),
        "{human}"
    );
}

/// A service `name` with `arrivals` attempts and nothing else counted.
fn service(name: &str, arrivals: u64) -> ServiceFigures {
    ServiceFigures {
        name: name.to_string(),
        replicas: 1,
        workers: 10,
        counts: ServiceCounts {
            arrivals,
            ..ServiceCounts::default()
        },
        wait: LatencyHistogram::compact(),
        work: LatencyHistogram::compact(),
        pid_drop_ratio_max: 0.0,
        buckets: Vec::new(),
        limiters: None,
        store: None,
        refresh: None,
        blast: None,
        scaling: None,
        capacity: None,
        connections: None,
    }
}

/// One client `c` calling `api`, which calls `db`, for 10s, with `stack` on the client's call.
fn two_tier(stack: &str) -> Report {
    let text = format!(
        r#"Scenario(
            name: "two-tier",
            duration: "10s",
            clients: {{ "c": (load: Open(rate: Constant("100/s")), call: (target: "api", stack: [{stack}])) }},
            services: {{
                "api": (workers: 10, work: Constant(value: "1ms"), calls: [(target: "db")]),
                "db": (workers: 10, work: Constant(value: "1ms")),
            }},
        )"#
    );
    let scenario = parse("two-tier.ron", &text).unwrap_or_else(|e| panic!("{e}"));
    scenarios::run(&scenario, "two-tier.ron", &Default::default())
        .unwrap()
        .report
}

#[test]
fn amplification_is_per_client_request_and_load_is_per_tier() {
    // A healthy two-tier system: one attempt per request at each tier.
    let r = two_tier("");
    let v = json(&r);
    assert_eq!(v["summary"]["amplification"], 1.0, "{}", v["summary"]);
    assert_eq!(v["summary"]["attempts"], v["summary"]["offered"]);
    // (A request or two are still on their way to the db at the end.)
    let about_one = |x: &serde_json::Value| (x.as_f64().unwrap() - 1.0).abs() < 0.01;
    for i in 0..2 {
        assert!(
            about_one(&v["services"][i]["load_factor"]),
            "{}",
            v["services"][i]
        );
        assert!(
            about_one(&v["calls"][i]["amplification"]),
            "{}",
            v["calls"][i]
        );
    }
    let human = Format::Human.render(&r);
    assert!(
        line(&human, "offered").contains("amplification 1.00"),
        "{human}"
    );
    assert!(
        human.contains("\nservices (load: attempts arriving per request offered by the clients;")
    );
    assert!(line(&human, "api  ").contains("load   1.00"), "{human}");
    assert!(line(&human, "db  ").contains("load   1.00"), "{human}");
    let compact = Format::Compact.render(&r);
    assert!(
        line(&compact, "service db ").contains("load   1.00"),
        "{compact}"
    );
    assert!(
        line(&compact, "offered").contains("amplification 1.00"),
        "{compact}"
    );
    assert!(human.contains("\ncalls (amplification: attempts per call)\n"));

    // Retries at both tiers: the clients pay 1.5 attempts per request, the api sees those,
    // and the db sees the api's 2 attempts per call, 3 per offered request.
    let mut f = figures(SimDuration::from_secs(1), vec![offered(100)]);
    f.services = vec![service("api", 150), service("db", 300)];
    let mut client = site("clients.c.call", "c", "api");
    (client.counts.calls, client.counts.attempts) = (100, 150);
    let mut api = site("services.api.calls[0]", "api", "db");
    (api.counts.calls, api.counts.attempts) = (150, 300);
    f.call_sites = vec![client, api];
    let r = check("AmplificationAtMost(max: 2.0)", &f);
    let v = json(&r);
    assert_eq!(v["summary"]["attempts"], 150);
    assert_eq!(v["summary"]["amplification"], 1.5);
    assert_eq!(v["services"][0]["load_factor"], 1.5);
    assert_eq!(v["services"][1]["load_factor"], 3.0);
    assert_eq!(v["calls"][0]["amplification"], 1.5);
    assert_eq!(v["calls"][1]["amplification"], 2.0);
    assert_eq!(
        verdicts(&r),
        ["PASS client amplification at most 2.00: 1.50"]
    );
    let human = Format::Human.render(&r);
    assert!(
        line(&human, "api → db").contains("amplification  2.00"),
        "{human}"
    );
}

#[test]
fn a_service_shows_how_many_arrivals_waited_and_how_long() {
    // 100 arrivals: 70 found a free worker, 30 waited 10ms each.
    let mut f = figures(SimDuration::from_secs(1), vec![offered(100)]);
    let mut api = service("api", 100);
    api.counts.queued = 30;
    for i in 0..100 {
        let waited = if i < 30 { 10 } else { 0 };
        api.wait.record(SimDuration::from_millis(waited));
    }
    f.services = vec![api, service("db", 0)];
    let r = check("", &f);
    let v = json(&r);
    let api = &v["services"][0];
    assert_eq!(api["queued"], 30);
    assert_eq!(api["waited_ratio"], 0.3);
    let mean = api["wait_ms_mean"].as_f64().unwrap();
    assert!((mean - 3.0).abs() < 0.05, "{mean}");
    let p99 = api["wait_ms_p99"].as_f64().unwrap();
    assert!((p99 - 10.0).abs() < 0.1, "{p99}");
    // Nothing arrived at the db: no share and no wait to show.
    let db = &v["services"][1];
    assert!(
        db["waited_ratio"].is_null() && db["wait_ms_mean"].is_null(),
        "{db}"
    );
    let human = Format::Human.render(&r);
    assert!(human.contains("; wait: time in queue)\n"), "{human}");
    assert_eq!(
        line(&human, "queued").trim(),
        "queued 30 (30.0% of arrivals)  wait ms mean 3.0 p99 10.0"
    );
}

#[test]
fn the_series_counts_outcomes_by_offer_and_goodput_by_completion() {
    // Every request takes a bucket to answer. Bucket 0 offers 100 that all succeed during
    // bucket 1; bucket 1 offers 100 of which half succeed during bucket 2; the last bucket,
    // half a second long, offers 10 still in flight at the end.
    let mut f = figures(
        SimDuration::from_secs(1),
        vec![
            offered(100),
            offered(50),
            ClientBucket {
                offered: 10,
                ..ClientBucket::default()
            },
        ],
    );
    f.end = SimTime::ZERO + SimDuration::from_millis(2500);
    f.clients[0].buckets[1].completed_ok = 100;
    f.clients[0].buckets[2].completed_ok = 50;
    f.requests_in_flight = 10;
    let r = check("", &f);
    let v = json(&r);
    let series = |key: &str| -> Vec<f64> {
        (0..3)
            .map(|i| v["series"][i][key].as_f64().unwrap())
            .collect()
    };
    // Requests in flight at the end have not succeeded: the last ratio is 0.
    assert_eq!(series("goodput_ratio"), [1.0, 0.5, 0.0]);
    assert_eq!(series("goodput_per_s"), [0.0, 100.0, 100.0]);
    let s = &v["summary"];
    assert_eq!(s["requests_in_flight"], 10);
    assert_eq!(s["offered"], 210);
    assert_eq!(
        s["successes"].as_u64().unwrap() + s["failures"].as_u64().unwrap(),
        200
    );
    let human = Format::Human.render(&r);
    assert_eq!(
        line(&human, "in flight"),
        "  in flight       10   still waiting for their outcome when the run stopped"
    );
    assert!(
        line(&human, "over time").contains("of the requests offered in it"),
        "{human}"
    );
    assert!(
        line(&human, "goodput  ").contains("(peak 100/s)"),
        "{human}"
    );
    let compact = Format::Compact.render(&r);
    assert!(
        line(&compact, "offered").ends_with(" in flight 10"),
        "{compact}"
    );
    let csv = Format::Csv.render(&r);
    assert!(csv.starts_with("t_s,offered,successes,failures,goodput_ratio,goodput_per_s,"));
    assert!(
        csv.lines().nth(3).unwrap().starts_with("2,10,0,0,0,100,"),
        "{csv}"
    );
}

#[test]
fn counters_are_shown_when_something_happened() {
    let mut f = figures(SimDuration::from_secs(1), vec![offered(100)]);
    let mut api = service("api", 100);
    api.counts.shaped = 3;
    api.counts.queued = 7;
    f.services = vec![api, service("db", 100)];
    let mut call = site("clients.c.call", "c", "api");
    (call.counts.calls, call.counts.attempts, call.counts.shaped) = (100, 100, 5);
    f.call_sites = vec![call, site("services.api.calls[0]", "api", "db")];
    let r = check("", &f);
    let human = Format::Human.render(&r);
    assert!(
        line(&human, "shaped by a rate limiter").ends_with(": 5"),
        "{human}"
    );
    assert!(
        line(&human, "queued 7 ").contains("7.0% of arrivals"),
        "{human}"
    );
    let api_extra = human
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("api "))
        .nth(2)
        .unwrap();
    assert!(api_extra.contains("shaped 3"), "{human}");
    // Nothing of the kind at the db: no line for it.
    assert_eq!(human.matches("shaped").count(), 2, "{human}");
    assert_eq!(human.matches("queued").count(), 1, "{human}");
    // Services without buckets have zero means, not negative zeros.
    assert!(!human.contains("-0.0"), "{human}");
    let v = json(&r);
    assert_eq!(v["services"][0]["shaped"], 3);
    assert_eq!(v["calls"][0]["shaped"], 5);
}

#[test]
fn a_link_that_delivered_nothing_has_no_latency() {
    let mut f = figures(SimDuration::from_secs(1), vec![offered(0)]);
    f.links = vec![LinkReport {
        source: "c".to_string(),
        target: "api".to_string(),
        sent: 100,
        delivered: 0,
        duplicated: 0,
        held: 0,
        in_flight: 0,
        dropped: [("partition", 100)].into_iter().collect(),
        latency_ms_p50: 0.0,
        latency_ms_p99: 0.0,
        latency_ms_max: 0.0,
        declared_latency_ms_p50: 5.0,
        declared_latency_ms_p99: 50.0,
    }];
    let human = Format::Human.render(&check("", &f));
    assert!(
        line(&human, "c → api").ends_with("latency ms p50 – p99 –  declared p50 5.0 p99 50.0"),
        "{human}"
    );
}

/// A service `api` of `replicas` replicas whose buckets have these summed queue means and
/// maxima and these longest queues of one replica.
fn queued_service(replicas: u32, buckets: &[(f64, f64, u64)]) -> ServiceFigures {
    let mut api = service("api", 100);
    api.replicas = replicas;
    api.counts.queued = 10;
    api.buckets = buckets
        .iter()
        .map(|&(mean, max, one)| scenarios::figures::ServiceBucket {
            queue: sim_core::metrics::GaugeBucket { mean, max },
            queue_replica_max: one,
            ..Default::default()
        })
        .collect();
    api
}

#[test]
fn queue_figures_say_whether_they_are_summed_or_per_replica() {
    // Eight replicas, each holding up to 200: 1,600 at once over all of them. A report used
    // to print the summed mean beside one replica's max ("queue mean 282.1 max 200").
    let buckets = [(240.0, 1600.0, 200), (320.0, 1600.0, 200)];
    let mut f = figures(SimDuration::from_secs(1), vec![offered(100), offered(100)]);
    f.services = vec![queued_service(8, &buckets)];
    let r = check("", &f);
    let api = &json(&r)["services"][0];
    assert_eq!(api["queue_depth_total_mean"], 280.0);
    assert_eq!(api["queue_depth_total_max"], 1600);
    assert_eq!(api["queue_depth_replica_mean"], 35.0);
    assert_eq!(api["queue_depth_replica_max"], 200);
    let human = Format::Human.render(&r);
    assert!(
        line(&human, "api").contains("queue mean   280.0 max  1600"),
        "{human}"
    );
    assert!(
        human.contains("queue: jobs waiting, summed over replicas"),
        "{human}"
    );
    assert!(
        line(&human, "queued").ends_with("per replica: queue mean 35.0 max 200"),
        "{human}"
    );
    let point = &json(&r)["series"][1]["services"][0];
    assert_eq!(point["queue_total_mean"], 320.0);
    assert_eq!(point["queue_total_max"], 1600);
    assert_eq!(point["queue_replica_mean"], 40.0);
    assert_eq!(point["queue_replica_max"], 200);
    let csv = Format::Csv.render(&r);
    assert!(
        csv.lines().next().unwrap().contains(
            "api_queue_total_mean,api_queue_total_max,api_queue_replica_mean,api_queue_replica_max"
        ),
        "{csv}"
    );
    assert!(
        csv.lines().nth(2).unwrap().contains(",320,1600,40,200,"),
        "{csv}"
    );
}

#[test]
fn a_sparkline_peak_reads_what_its_bars_show() {
    // A queue whose mean peaks at 0.4: its bars reach the top, so its peak cannot read 0.
    let buckets = [(0.0, 0.0, 0), (0.2, 1.0, 1), (0.4, 1.0, 1)];
    let mut f = figures(
        SimDuration::from_secs(1),
        vec![offered(10), offered(10), offered(10)],
    );
    f.services = vec![queued_service(1, &buckets)];
    let human = Format::Human.render(&check("", &f));
    assert!(human.contains("  api      ▁▅█  (peak 0.40)\n"), "{human}");
}

#[test]
fn a_sparkline_says_how_many_buckets_a_character_stands_for() {
    // 90 buckets of 1s do not fit 60 characters: each character is 2 buckets, 45 in all,
    // and the report says so.
    let mut f = figures(SimDuration::from_secs(1), vec![offered(10); 90]);
    f.services = vec![queued_service(1, &[(1.0, 1.0, 1); 90])];
    let r = check("", &f);
    let human = Format::Human.render(&r);
    assert!(
        human.contains("over time, one character per 2s (2 buckets of 1s)"),
        "{human}"
    );
    let success = line(&human, "success ")
        .trim()
        .trim_start_matches("success")
        .trim();
    assert_eq!(success.chars().count(), 45, "{success}");
    let compact = Format::Compact.render(&r);
    assert!(compact.contains("success per 2 buckets "), "{compact}");
    // 60 buckets fit: one character each.
    let f = figures(SimDuration::from_secs(1), vec![offered(10); 60]);
    let human = Format::Human.render(&check("", &f));
    assert!(
        human.contains("over time, one character per bucket of 1s"),
        "{human}"
    );
}
