//! A run is a value: copied mid-run, a copy goes on as the original (the same events, digest
//! and report); branched ([`Running::branch`]), every random stream draws anew, and the
//! branch is replayed by `--branch`. One small scenario per kind of component that draws
//! random numbers, in which that component is the only one that does, so that a branch
//! whose reseed forgot that component's streams would not diverge; every library scenario
//! copied and branched, with no stream of the world left on the run seed's key; and a
//! property: a copy made after any number of events goes on as the original.
//!
//! `RESIM_CLONE_CASES=N` runs the property on N generated scenarios (default 24).

use crate::support;

use proptest::prelude::*;
use scenarios::cli::library::LIBRARY;
use scenarios::format::load::parse;
use scenarios::run::{Branch, RunOutput, Running};
use scenarios::{Report, RunOptions, run};
use sim_core::Seed;
use sim_core::sim::first_divergence;
use support::{class_report, failures, latency};

/// Keeps every event of these small runs in the trace.
const TRACE: usize = 1 << 20;

fn traced() -> RunOptions {
    RunOptions {
        trace_capacity: TRACE,
        ..RunOptions::default()
    }
}

/// A 20s scenario of closed-loop users with a constant think time calling `api`, which
/// draws nothing as written (4 workers, constant work); the arguments add the one component
/// that draws random numbers: another `load`, words of the client's `call`, of the client,
/// another `api`, and sections of the scenario.
fn scenario(
    load: Option<&str>,
    call: &str,
    client: &str,
    api: Option<&str>,
    world: &str,
) -> String {
    let load = load.unwrap_or(r#"Closed(users: 8, think: Constant(value: "20ms"))"#);
    let api = api.unwrap_or(r#"workers: 4, work: Constant(value: "5ms")"#);
    format!(
        r#"Scenario(
            name: "clone",
            duration: "20s",
            seed: 7,
            clients: {{ "c": (load: {load}, call: (target: "api"{call}){client}) }},
            services: {{ "api": ({api}) }},
            {world}
        )"#
    )
}

/// A run of `text` copied after half its events: the original and the copy go on to the
/// same report, event for event, as the run without a copy; a branch of the copy diverges
/// after the copy point and not before, `differs` tells the component's own figure apart,
/// and `--branch` at that point replays the branch. `what` names the kind in failures.
fn check(what: &str, text: &str, differs: impl Fn(&Report, &Report) -> bool) {
    let s = parse("clone.ron", text).unwrap_or_else(|e| panic!("{what}: {e}"));
    let whole = run(&s, "clone.ron", &traced()).unwrap();
    let at = whole.report.events / 2;
    let mut original = Running::start(&s, "clone.ron", &traced()).unwrap();
    assert_eq!(original.advance_events(at), None, "{what}");
    let copy = original.clone();
    let mut branch = original.clone();
    branch.branch(1, 0);
    let [original, copy, branch] = [original, copy, branch].map(|mut r| {
        r.advance_to_end();
        r.finish()
    });
    for (name, out) in [("original", &original), ("copy", &copy)] {
        assert_same(what, name, out, &whole);
    }
    assert_ne!(
        branch.report.digest, whole.report.digest,
        "{what}: a branch draws anew"
    );
    let (diverged, ..) = first_divergence(&branch.trace, &whole.trace).expect("diverges");
    assert!(
        diverged as u64 >= at,
        "{what}: diverged at {diverged}, before the branch at {at}"
    );
    assert!(
        differs(&whole.report, &branch.report),
        "{what}: the component's draws are the same in the branch"
    );
    let replay = RunOptions {
        branches: vec![Branch {
            at,
            level: 1,
            index: 0,
        }],
        ..traced()
    };
    let replayed = run(&s, "clone.ron", &replay).unwrap();
    assert_same(what, "the replay of the branch", &replayed, &branch);
    assert!(
        branch
            .report
            .replay_command()
            .ends_with(&format!(" --branch {at}:1:0")),
        "{what}: {}",
        branch.report.replay_command()
    );
}

/// `out` is `expected`: the same history event for event, the same report.
fn assert_same(what: &str, name: &str, out: &RunOutput, expected: &RunOutput) {
    if let Some(at) = first_divergence(&out.trace, &expected.trace) {
        panic!("{what}: the {name} diverges at {at:?}");
    }
    assert_eq!(out.report, expected.report, "{what}: the {name}'s report");
}

#[test]
fn client_arrivals() {
    let text = scenario(Some(r#"Open(rate: Constant("300/s"))"#), "", "", None, "");
    check("arrivals", &text, |a, b| {
        a.summary.offered != b.summary.offered
    });
}

#[test]
fn service_work() {
    let api = r#"workers: 4, work: Exponential(mean: "5ms")"#;
    let text = scenario(None, "", "", Some(api), "");
    check("work", &text, |a, b| latency(a).mean != latency(b).mean);
}

#[test]
fn fault_error_rate() {
    // An error is retried (without jitter), so which requests fail shows in the events.
    let call = r#", stack: [Retry(max_attempts: 2, backoff: (strategy: Exponential(delay_initial: "10ms", multiplier: 2.0, delay_max: "100ms"), jitter: None))]"#;
    let faults = r#"faults: [(at: "0s", kind: ErrorRate(service: "api", error_ratio: 0.3))],"#;
    check(
        "error rate",
        &scenario(None, call, "", None, faults),
        |a, b| failures(a, "error") != failures(b, "error"),
    );
}

#[test]
fn balancer_picks() {
    // One worker a replica: which replica a request finds decides whether it waits.
    let api = r#"replicas: 3, workers: 1, balancer: Random, work: Constant(value: "5ms")"#;
    let text = scenario(None, "", "", Some(api), "");
    check("balancer", &text, |a, b| latency(a).mean != latency(b).mean);
}

#[test]
fn retry_jitter_at_a_call_site() {
    // One worker for eight users: attempts that wait too long in the queue time out, and
    // the backoff's jitter (gRPC's, the default) is the only draw.
    let call = r#", timeout: "10ms", stack: [Retry(max_attempts: 3)]"#;
    let api = r#"workers: 1, work: Constant(value: "4ms")"#;
    let text = scenario(None, call, "", Some(api), "");
    check("retry jitter", &text, |a, b| {
        latency(a).mean != latency(b).mean
    });
}

#[test]
fn traffic_mix() {
    // The classes cost the service's rate limiter differently, so which class a request is
    // decides whether it is refused.
    let classes = r#", classes: [(name: "a", share: 1), (name: "b", share: 1, cost: 5)]"#;
    let api = r#"workers: 4, work: Constant(value: "5ms"), admission: [Limiter((kind: "fixed_window", limit: 300, window: "1s"))]"#;
    check(
        "traffic mix",
        &scenario(None, "", classes, Some(api), ""),
        |a, b| {
            class_report(a, "c", "a").traffic.offered != class_report(b, "c", "a").traffic.offered
        },
    );
}

#[test]
fn network_link_latency() {
    let network = r#"network: (default_link: (latency: Exponential(mean: "2ms"))),"#;
    check(
        "link latency",
        &scenario(None, "", "", None, network),
        |a, b| latency(a).mean != latency(b).mean,
    );
}

#[test]
fn network_link_loss() {
    let network =
        r#"network: (default_link: (latency: Constant(value: "1ms"), loss_ratio: 0.05)),"#;
    let call = r#", timeout: "50ms""#;
    check(
        "link loss",
        &scenario(None, call, "", None, network),
        |a, b| failures(a, "timeout") != failures(b, "timeout"),
    );
}

#[test]
fn network_latency_fault() {
    let faults =
        r#"faults: [(at: "0s", kind: Latency(service: "api", extra: Exponential(mean: "3ms")))],"#;
    check(
        "latency fault",
        &scenario(None, "", "", None, faults),
        |a, b| latency(a).mean != latency(b).mean,
    );
}

/// Every library scenario, copied after 20,000 events: 20,000 more events of the copy are
/// those of the original; a branch leaves no stream of the world on the run seed's key (a
/// stream that `World::reseed` forgot shows its key in the world's `Debug`) and diverges.
#[test]
fn every_library_scenario_copies_and_branches() {
    for entry in LIBRARY {
        let s = parse(entry.name, entry.text).unwrap();
        let mut original = Running::start(&s, entry.name, &RunOptions::default()).unwrap();
        if original.advance_events(20_000).is_some() {
            continue;
        }
        let mut copy = original.clone();
        let mut branch = original.clone();
        let root = Seed(original.seed());
        branch.branch(2, 3);
        let world = format!("{:?}", branch.world());
        assert!(
            !world.contains(&root.fingerprint()) && !world.contains(&format!("{root:?}")),
            "{}: a stream of the world kept the run seed's key after a branch",
            entry.name
        );
        for r in [&mut original, &mut copy, &mut branch] {
            r.advance_events(20_000);
        }
        assert_eq!(copy.digest(), original.digest(), "{}", entry.name);
        assert_eq!(copy.now(), original.now(), "{}", entry.name);
        assert_ne!(branch.digest(), original.digest(), "{}", entry.name);
    }
}

fn cases() -> u32 {
    std::env::var("RESIM_CLONE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

/// A small generated scenario: an open-loop client, a service with replicas, a balancer, a
/// random work time, maybe an error rate, a retry policy, a lossy network.
fn generated() -> impl Strategy<Value = String> {
    (
        50u32..400,
        1u32..4,
        1u32..4,
        prop::sample::select(vec!["RoundRobin", "Random", "LeastOutstanding", "PowerOfTwo"]),
        1u32..20,
        prop::option::of(1u32..40),
        any::<bool>(),
        prop::option::of(1u32..10),
    )
        .prop_map(|(rate, replicas, workers, balancer, work_ms, errors, retry, loss)| {
            let errors = errors.map_or(String::new(), |p| {
                format!(r#"(at: "1s", kind: ErrorRate(service: "api", error_ratio: 0.{p:02}))"#)
            });
            let retry = if retry { r#", stack: [Retry(max_attempts: 3)]"# } else { "" };
            let network = loss.map_or(String::new(), |p| {
                format!(
                    r#"network: (default_link: (latency: Exponential(mean: "1ms"), loss_ratio: 0.0{p})),"#
                )
            });
            format!(
                r#"Scenario(
                    name: "generated",
                    duration: "5s",
                    clients: {{ "c": (load: Open(rate: Constant("{rate}/s")), call: (target: "api", timeout: "100ms"{retry})) }},
                    services: {{ "api": (replicas: {replicas}, workers: {workers}, balancer: {balancer}, work: Exponential(mean: "{work_ms}ms")) }},
                    faults: [{errors}],
                    {network}
                )"#
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Copied after any number of events, both copies go on to the same history.
    #[test]
    fn a_copy_at_any_event_goes_on_as_the_original(text in generated(), fraction in 0.0f64..1.0) {
        let s = parse("generated.ron", &text).unwrap();
        let whole = run(&s, "generated.ron", &traced()).unwrap();
        let at = (whole.report.events as f64 * fraction) as u64;
        let mut original = Running::start(&s, "generated.ron", &traced()).unwrap();
        prop_assert_eq!(original.advance_events(at), None);
        let copy = original.clone();
        for r in [original, copy] {
            let mut r = r;
            r.advance_to_end();
            let out = r.finish();
            prop_assert_eq!(first_divergence(&out.trace, &whole.trace), None);
            prop_assert_eq!(out.report.digest, whole.report.digest.clone());
        }
    }
}

/// The `digest` line of a human report.
fn digest_of(o: &support::Resim) -> String {
    o.stdout
        .lines()
        .find_map(|l| l.strip_prefix("digest "))
        .unwrap_or_else(|| panic!("no digest line: {}{}", o.stdout, o.stderr))
        .to_string()
}

const BRANCHED: [&str; 6] = [
    "run",
    "book/src/scenarios/replay.ron",
    "--seed",
    "19",
    "--duration",
    "8s",
];

/// `resim ARGS` from the workspace root, where `BRANCHED`'s file is.
fn resim(args: &[&str]) -> support::Resim {
    support::resim_in(&support::workspace_root(), args)
}

/// `--branch` on the command line: the same words give the same digest twice and another one
/// than the run without them, and the replay line that the report ends with gives it again.
#[test]
fn the_command_line_replays_a_branched_path() {
    let with = |extra: &[&str]| resim(&[&BRANCHED[..], extra].concat());
    let branches = ["--branch", "1000:1:0", "--branch", "2000:2:5"];
    let (a, b) = (with(&branches), with(&branches));
    assert_ne!(a.code, 2, "{}", a.stderr);
    assert_eq!(digest_of(&a), digest_of(&b));
    assert_ne!(digest_of(&a), digest_of(&with(&[])));
    assert_ne!(digest_of(&a), digest_of(&with(&branches[..2])));
    let replay = a.stdout.lines().last().unwrap();
    assert!(
        replay.ends_with("--seed 19 --duration 8s --branch 1000:1:0 --branch 2000:2:5"),
        "{replay}"
    );
    let words: Vec<&str> = replay
        .strip_prefix("replay: resim ")
        .expect("a replay line")
        .split(' ')
        .collect();
    assert_eq!(digest_of(&resim(&words)), digest_of(&a));
    let why = resim(&[&["why"][..], &BRANCHED[1..], &branches[..2]].concat());
    assert_eq!(why.code, 0, "{}", why.stderr);
    assert!(why.stdout.contains("--branch 1000:1:0"), "{}", why.stdout);
}

#[test]
fn malformed_or_out_of_order_branches_are_refused_in_the_users_words() {
    for (extra, words) in [
        (
            &["--branch", "1000:1"][..],
            "write a branch as AT:LEVEL:INDEX",
        ),
        (&["--branch", "x:1:0"], "AT \"x\" is not a whole number"),
        (
            &["--branch", "1000:1:-1"],
            "INDEX \"-1\" is not a whole number",
        ),
        (
            &["--branch", "2000:1:0", "--branch", "1000:1:1"],
            "book/src/scenarios/replay.ron: --branch 1000:1:1: comes after --branch 2000:1:0",
        ),
        (
            &["--branch", "999999999:1:0"],
            "the run stopped (time_limit) after",
        ),
    ] {
        let o = resim(&[&BRANCHED[..], extra].concat());
        assert_eq!(o.code, 2, "{extra:?}: {}", o.stderr);
        assert!(o.stderr.contains(words), "{extra:?}: {}", o.stderr);
    }
}
