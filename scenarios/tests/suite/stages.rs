//! A service's calls in stages (`stages`, `call_ratio`): what is declared is what runs. A
//! call is made on its ratio of requests (against a binomial interval), a stage's calls
//! overlap and the next stage starts when the stage ends (read from a followed request), a
//! failure fails the request when its stage ends, `Pick` picks by weight, and the old
//! `call_mode`s run as the stages they stand for, digest for digest.

use crate::support::*;
use scenarios::RunOptions;
use scenarios::experiment::stats::clopper_pearson;
use scenarios::figures::{Followed, What};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// A scenario whose client `c` offers `rate` to `api` until 1s before the end, so that every
/// request has ended when the run does.
fn scenario(rate: &str, duration_s: u64, services: &str, faults: &str) -> String {
    format!(
        r#"Scenario(
            name: "t",
            duration: "{duration_s}s",
            clients: {{ "c": (load: Open(rate: Steps([(at: "0s", rate: "{rate}"), (at: "{}s", rate: "0/s")])), call: (target: "api")) }},
            services: {{ {services} }},
            faults: [{faults}],
        )"#,
        duration_s - 1
    )
}

/// Whether `made` of `trials` is a share the ratio `p` gives, at 99.9%.
fn binomial(made: u64, trials: u64, p: f64) -> bool {
    let (lo, hi) = clopper_pearson(made, trials, 0.001);
    lo <= p && p <= hi
}

#[test]
fn a_call_is_made_on_its_call_ratio_of_requests_and_a_pick_by_weight() {
    let r = run_text(&scenario(
        "2000/s",
        11,
        r#""api": (workers: 100, work: Constant(value: "1ms"),
                   calls: [(target: "a", call_ratio: 0.3), (target: "b", call_ratio: 0.05),
                           (target: "c", weight: 3, call_ratio: 0.5), (target: "d", weight: 1), (target: "e")],
                   stages: [All([0, 1]), Pick([2, 3]), All([4])]),
           "a": (workers: 100, work: Constant(value: "1ms")),
           "b": (workers: 100, work: Constant(value: "1ms")),
           "c": (workers: 100, work: Constant(value: "1ms")),
           "d": (workers: 100, work: Constant(value: "1ms")),
           "e": (workers: 100, work: Constant(value: "1ms"))"#,
        "",
    ));
    let requests = service_report(&r, "api").arrivals;
    assert!(requests > 19_000, "{requests}");
    assert_eq!(
        r.summary.successes, r.summary.offered,
        "every request ends well"
    );
    let made = |i: usize| {
        call_report(&r, &format!("services.api.calls[{i}]"))
            .counts
            .calls
    };
    for (i, p) in [(0, 0.3), (1, 0.05), (2, 0.75 * 0.5), (3, 0.25), (4, 1.0)] {
        assert!(
            binomial(made(i), requests, p),
            "calls[{i}]: made on {} of {requests} requests, declared {p}",
            made(i)
        );
    }
    assert_eq!(made(4), requests, "a call of ratio 1 on every request");
    // The pick is by weight (3:1), and its ratio applies to the call picked: c was picked on
    // about 3/4 of the requests and made on half of those.
    let picked_c = requests - made(3);
    assert!(
        binomial(made(2), picked_c, 0.5),
        "{} of {picked_c}",
        made(2)
    );
}

/// The steps of request `id` of a run of `text`, followed.
fn follow(text: &str, id: u64) -> (Followed, scenarios::report::Report) {
    let scenario = scenarios::format::load::parse("test.ron", text).unwrap();
    let options = RunOptions {
        follow_request: Some(id),
        ..RunOptions::default()
    };
    let out = scenarios::run(&scenario, "test.ron", &options).unwrap();
    (out.followed.expect("followed"), out.report)
}

/// When each call site's call of a followed request started and finished.
fn call_times(f: &Followed) -> BTreeMap<String, (SimTime, SimTime)> {
    let mut path_of = BTreeMap::new();
    let mut times = BTreeMap::new();
    for step in &f.steps {
        match &step.what {
            What::Call { path, .. } => {
                path_of.insert(step.call, path.clone());
                times.insert(path.clone(), (step.at, SimTime::MAX));
            }
            What::Finished { .. } => {
                times.get_mut(&path_of[&step.call]).unwrap().1 = step.at;
            }
            _ => {}
        }
    }
    times
}

const STAGED: &str = r#""api": (workers: 10, work: Constant(value: "1ms"),
                   calls: [(target: "a"), (target: "b"), (target: "c"), (target: "d")],
                   stages: [All([0]), All([1, 2]), All([3])]),
           "a": (workers: 10, work: Constant(value: "10ms")),
           "b": (workers: 10, work: Constant(value: "20ms")),
           "c": (workers: 10, work: Constant(value: "30ms")),
           "d": (workers: 10, work: Constant(value: "5ms"))"#;

#[test]
fn a_stage_runs_its_calls_at_once_and_the_next_starts_when_it_ends() {
    let (f, r) = follow(&scenario("10/s", 5, STAGED, ""), 1);
    let t = call_times(&f);
    let at = |i: usize| t[&format!("services.api.calls[{i}]")];
    let ms = |a: SimTime, b: SimTime| (b - a).as_nanos() as f64 / 1e6;
    // b and c start together, when a has finished: they overlap.
    assert_eq!(at(1).0, at(0).1);
    assert_eq!(at(2).0, at(0).1);
    assert!(at(1).1 > at(2).0 && at(2).1 > at(1).0, "b and c overlap");
    assert_eq!(ms(at(1).0, at(1).1), 20.0);
    assert_eq!(ms(at(2).0, at(2).1), 30.0);
    // d starts when the slower of the stage (c) has finished, not when b has.
    assert_eq!(at(3).0, at(2).1);
    // A request: 1ms of work, then 10, max(20, 30) and 5: 46ms, every one.
    let l = latency(&r);
    assert!(
        (l.p50 - 46.0).abs() < 0.1 && (l.max - 46.0).abs() < 0.1,
        "{l:?}"
    );
}

#[test]
fn a_failed_call_fails_the_request_when_its_stage_ends_and_later_stages_are_not_made() {
    let services = r#""api": (workers: 10, work: Constant(value: "1ms"),
                   calls: [(target: "bad"), (target: "slow"), (target: "after")],
                   stages: [All([0, 1]), All([2])]),
           "bad": (workers: 10, work: Constant(value: "5ms")),
           "slow": (workers: 10, work: Constant(value: "30ms")),
           "after": (workers: 10, work: Constant(value: "1ms"))"#;
    let fault = r#"(at: "0s", kind: ErrorRate(service: "bad", error_ratio: 1.0))"#;
    let (f, r) = follow(&scenario("10/s", 5, services, fault), 1);
    assert_eq!(r.summary.successes, 0);
    assert_eq!(failures(&r, "dependency"), r.summary.offered);
    assert_eq!(
        service_report(&r, "after").arrivals,
        0,
        "no stage after a failure"
    );
    // The request fails when its stage ends: after the slow call, not the failed one.
    let t = call_times(&f);
    assert!(!t.contains_key("services.api.calls[2]"));
    let (start, end) = t["clients.c.call"];
    assert_eq!(end - start, SimDuration::from_millis(31));
    assert_eq!(end, t["services.api.calls[1]"].1);
}

#[test]
fn a_failed_optional_call_fails_the_request_it_was_made_for() {
    let services = r#""api": (workers: 100, work: Constant(value: "1ms"),
                   calls: [(target: "ok"), (target: "bad", call_ratio: 0.2)],
                   stages: [All([0, 1])]),
           "ok": (workers: 100, work: Constant(value: "1ms")),
           "bad": (workers: 100, work: Constant(value: "1ms"))"#;
    let fault = r#"(at: "0s", kind: ErrorRate(service: "bad", error_ratio: 1.0))"#;
    let r = run_text(&scenario("1000/s", 11, services, fault));
    let made = call_report(&r, "services.api.calls[1]").counts.calls;
    // Each request that made the optional call failed, and only those.
    assert_eq!(failures(&r, "dependency"), made);
    assert_eq!(r.summary.successes + made, r.summary.offered);
    assert!(binomial(made, r.summary.offered, 0.2), "{made}");
}

#[test]
fn each_call_mode_runs_as_the_stages_it_stands_for() {
    let with = |how: &str, b: &str| {
        let services = format!(
            r#""api": (workers: 20, work: Exponential(mean: "1ms"), {how},
                       calls: [(target: "a", weight: 2), ({b}), (target: "c", weight: 0.5)]),
               "a": (workers: 4, work: Exponential(mean: "10ms")),
               "b": (workers: 4, work: Exponential(mean: "20ms")),
               "c": (workers: 4, work: Exponential(mean: "30ms"))"#
        );
        let r = run_text(&scenario("100/s", 10, &services, ""));
        assert!(r.summary.successes > 500);
        r.digest
    };
    let b = r#"target: "b""#;
    let pairs = [
        (
            "call_mode: Sequential",
            "stages: [All([0]), All([1]), All([2])]",
        ),
        ("call_mode: FanOut", "stages: [All([0, 1, 2])]"),
        ("call_mode: Pick", "stages: [Pick([0, 1, 2])]"),
    ];
    let mut digests = Vec::new();
    for (old, new) in pairs {
        assert_eq!(with(old, b), with(new, b), "{old} and {new}");
        digests.push(with(old, b));
    }
    digests.dedup();
    assert_eq!(digests.len(), 3, "three different runs");
    assert_eq!(with("call_mode: Sequential", b), with("stages: []", b));
    // A ratio of 1 draws nothing: the same run; below 1, another.
    let kept = r#"target: "b", call_ratio: 1.0"#;
    let fewer = r#"target: "b", call_ratio: 0.9"#;
    assert_eq!(
        with("call_mode: FanOut", b),
        with("call_mode: FanOut", kept)
    );
    assert_ne!(
        with("call_mode: FanOut", b),
        with("call_mode: FanOut", fewer)
    );
}

#[test]
fn export_lists_a_call_ratio_and_a_stage_as_having_no_counterpart() {
    let file = "book/src/scenarios/first-4-stages.ron";
    for to in ["envoy", "istio", "grpc", "resilience4j"] {
        let export = |i: usize| {
            let call = format!("services.api.calls[{i}]");
            let deadline = format!("{call}.deadline=1s");
            let args = [
                "export", file, "--call", &call, "--to", to, "--set", &deadline,
            ];
            let out = resim_in(&workspace_root(), &args);
            assert_eq!(out.code, 0, "{to}: {}", out.stderr);
            out.stderr
        };
        let recs = export(2);
        assert!(
            recs.contains("services.api.calls[2].call_ratio")
                && recs.contains("0.3: no counterpart: which requests make a call"),
            "{to}: {recs}"
        );
        assert!(
            recs.contains("services.api.stages[1]") && recs.contains("All([1, 2]): no counterpart"),
            "{to}: {recs}"
        );
        // A call on every request in a stage of its own says nothing of either.
        let auth = export(0);
        assert!(
            !auth.contains("call_ratio") && !auth.contains("stages"),
            "{to}: {auth}"
        );
    }
}
