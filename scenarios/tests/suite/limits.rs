//! The sizes real systems have (issue 38): a service with dozens of calls, a stack with more
//! gates than a call keeps inline, and a generated mesh of many hosts with many routes each,
//! checked and run. The full mesh (1,000 hosts × 20 routes) runs with `RESIM_SLOW_TESTS=1`;
//! CI runs one of 200 hosts, built the same way.

use crate::support;

use scenarios::format::limits::{CALLS_MAX, LAYERS_MAX};
use scenarios::format::load::parse;
use support::{call_report, run_text, service_report};

#[path = "../../examples/mesh/generate.rs"]
mod generate;

/// A scenario whose service `api` makes `calls` calls in `mode`, each to its own backend
/// (`b0`, `b1`, …) with `stack`; the client sends 200 requests a second for 2s.
fn fan(calls: usize, mode: &str, stack: &str) -> String {
    let mut text = String::from(
        r#"Scenario(name: "fan", duration: "2s", clients: { "users": (load: Open(rate: Constant("200/s")), call: (target: "api", timeout: "1s")) }, services: { "api": (workers: 64, work: Constant(value: "1ms"), "#,
    );
    text.push_str(&format!("call_mode: {mode}, calls: ["));
    for i in 0..calls {
        text.push_str(&format!(
            r#"(target: "b{i}", timeout: "300ms", stack: [{stack}]),"#
        ));
    }
    text.push_str("]),");
    for i in 0..calls {
        text.push_str(&format!(
            r#""b{i}": (workers: 16, work: Exponential(mean: "2ms")),"#
        ));
    }
    text.push_str("})");
    text
}

/// The error of `text` as a user reads it.
fn refused(text: &str) -> String {
    parse("fan.ron", text).expect_err("refused").to_string()
}

#[test]
fn a_service_makes_dozens_of_calls_each_to_its_own_target() {
    // Nine calls were refused before issue 38 (at most 8); a frontend calls dozens.
    for (calls, mode) in [(9, "Sequential"), (40, "FanOut"), (40, "Pick")] {
        let r = run_text(&fan(calls, mode, ""));
        let offered = r.summary.offered;
        assert!(offered > 300, "{mode}: {offered}");
        let s = &r.summary;
        assert_eq!(s.failures, 0, "{mode}: {s:?}");
        assert_eq!(s.successes + s.requests_in_flight, offered, "{mode}");
        let per_call: Vec<u64> = (0..calls)
            .map(|i| {
                call_report(&r, &format!("services.api.calls[{i}]"))
                    .counts
                    .calls
            })
            .collect();
        match mode {
            // Every request makes every call (those still in flight, not all of them yet).
            "Sequential" | "FanOut" => {
                assert!(per_call.iter().all(|&n| n >= s.successes && n <= offered));
            }
            // Each request makes one, by equal weight: each call gets about 1/40 of them.
            _ => {
                let picked: u64 = per_call.iter().sum();
                assert!(picked >= s.successes && picked <= offered, "{picked}");
                assert!(per_call.iter().all(|&n| n > 0), "{per_call:?}");
            }
        }
        // Each backend gets exactly the calls made to it (the report rounds to 3 decimals).
        for (i, &n) in per_call.iter().enumerate() {
            let b = service_report(&r, &format!("b{i}"));
            let expected = n as f64 / offered as f64;
            assert!(
                (b.load_factor - expected).abs() < 0.001,
                "{mode} b{i}: {} {expected}",
                b.load_factor
            );
        }
    }
}

#[test]
fn a_fan_out_beyond_the_inline_slots_cancels_every_call_still_out() {
    // 30 calls fanned out to backends too slow for the load: the client's 1s timeout ends
    // most requests while calls are still out, and the cancellation reaches every one of
    // the 30 (the job keeps 30 slots, boxed beyond the 8 it keeps inline).
    let text = fan(30, "FanOut", "")
        .replace(
            r#"work: Exponential(mean: "2ms")"#,
            r#"work: Exponential(mean: "400ms"), on_abandoned: Cancel"#,
        )
        .replace(r#"timeout: "300ms""#, r#"timeout: "5s""#)
        .replace(
            r#"work: Constant(value: "1ms"),"#,
            r#"work: Constant(value: "1ms"), on_abandoned: Cancel,"#,
        );
    let r = run_text(&text);
    let s = &r.summary;
    assert!(s.successes < s.offered / 10, "{s:?}");
    assert_eq!(s.offered, s.successes + s.failures + s.requests_in_flight);
    // The backends' calls time out after 5s, later than the run: what stopped their jobs
    // is the cancellation of the api's jobs, passed on to every call still out.
    for i in 0..30 {
        let b = service_report(&r, &format!("b{i}"));
        assert!(
            b.cancelled > 0,
            "the calls to b{i} still out were cancelled"
        );
    }
}

#[test]
fn a_stack_holds_more_gates_than_a_call_keeps_inline() {
    // Eight gates (six fit inline): the last, a bulkhead of one slot, refuses what the seven
    // open ones let through, and every slot taken is given back.
    let open = "Limiter((kind: \"token_bucket\", rate: \"100000/s\", burst: 1000)), ".repeat(7);
    let stack = format!("{open}Bulkhead((max_concurrent_calls: 1, max_wait_duration: \"0s\"))");
    let r = run_text(&fan(1, "Sequential", &stack));
    let call = call_report(&r, "services.api.calls[0]");
    let full = call
        .rejected_by_reason
        .get("bulkhead_full")
        .copied()
        .unwrap_or(0);
    assert!(full > 0, "{:?}", call.rejected_by_reason);
    assert_eq!(
        call.rejected_by_reason.len(),
        1,
        "only the bulkhead refuses"
    );
    // The bulkhead's one slot is taken and given back through the boxed permits: every call
    // but the one it holds at the end succeeded or was refused.
    assert!(call.counts.successes > 100, "{:?}", call.counts);
    assert!(
        call.counts.calls - call.counts.successes - full <= 1,
        "{:?}",
        call.counts
    );
}

#[test]
fn counts_over_the_limits_are_refused_with_the_limit() {
    let error = refused(&fan(CALLS_MAX + 1, "Pick", ""));
    assert!(
        error.contains(&format!(
            "services.api.calls: may list at most {CALLS_MAX} calls, got {}",
            CALLS_MAX + 1
        )),
        "{error}"
    );
    let error = refused(&fan(
        1,
        "Sequential",
        &"Limiter((kind: \"token_bucket\", rate: \"1/s\", burst: 1)), ".repeat(LAYERS_MAX + 1),
    ));
    assert!(
        error.contains(&format!(
            "services.api.calls[0].stack: may hold at most {LAYERS_MAX} layers, got {}",
            LAYERS_MAX + 1
        )),
        "{error}"
    );
}

/// Checks the mesh of `services` hosts × 20 routes (a retry and a breaker each) and runs it for 2s at 500 requests a
/// second: every host and route is in the report, and the requests end as a healthy mesh's do.
fn mesh(services: usize) {
    let calls = 20;
    let text = generate::mesh(services, calls, 2, 500.0, 2);
    let scenario = parse("mesh.ron", &text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.services.len(), services + calls);
    let r = scenarios::run(&scenario, "mesh.ron", &scenarios::RunOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .report;
    assert_eq!(r.stop_reason, "time_limit");
    assert_eq!(r.services.len(), services + calls);
    // A call site per route, and one per client.
    assert_eq!(r.calls.len(), services * calls + r.clients.len());
    let s = &r.summary;
    assert!(s.offered > 800, "{s:?}");
    assert_eq!(s.offered, s.successes + s.failures + s.requests_in_flight);
    assert!(s.successes * 100 >= s.offered * 99, "{s:?}");
    // Each request crosses one host per layer and ends at a backend: the backends together
    // see about every request once.
    let backends: f64 = (0..calls)
        .map(|j| service_report(&r, &format!("b{j:02}")).load_factor)
        .sum();
    assert!((0.95..=1.05).contains(&backends), "{backends}");
}

#[test]
fn a_mesh_of_two_hundred_hosts_with_twenty_routes_each_checks_and_runs() {
    mesh(200);
}

#[test]
fn a_mesh_of_a_thousand_hosts_with_twenty_routes_each_checks_and_runs() {
    // A few seconds in a release build, a minute in a debug one: with RESIM_SLOW_TESTS=1.
    if std::env::var_os("RESIM_SLOW_TESTS").is_some() {
        mesh(1000);
    }
}

/// A `kind: List` of `hosts` hosts, as `kubectl get -o yaml` prints applied rules: a
/// DestinationRule (a connection pool) and a VirtualService per host, so `2 × hosts` items;
/// the VirtualService of host `h` has an HTTP route per caller `callers(h)` names, each matched
/// by `sourceLabels.app`, with a timeout and retries.
fn istio_list(hosts: usize, callers: &dyn Fn(usize) -> Vec<String>) -> String {
    use std::fmt::Write;
    let mut out = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for h in 0..hosts {
        let _ = write!(
            out,
            "- apiVersion: networking.istio.io/v1
  kind: DestinationRule
  metadata: {{name: h{h}, namespace: mesh}}
  spec:
    host: h{h}
    trafficPolicy: {{connectionPool: {{tcp: {{maxConnections: 100}}}}}}
- apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata: {{name: h{h}, namespace: mesh}}
  spec:
    hosts: [h{h}]
    http:
"
        );
        for caller in callers(h) {
            let _ = writeln!(
                out,
                "    - {{match: [{{sourceLabels: {{app: {caller}}}}}], route: [{{destination: {{host: h{h}}}}}], timeout: 2s, retries: {{attempts: 2, perTryTimeout: 500ms}}}}"
            );
        }
    }
    out
}

/// `text` imported as a new scenario: each service's number of calls, by name.
fn imported_calls(text: &str) -> std::collections::BTreeMap<String, usize> {
    let input = scenarios::import::Input {
        file: "mesh.yaml".into(),
        text: text.to_string(),
    };
    let limits = scenarios::format::limits::RunLimits::default();
    let out = scenarios::import::import(&[input], None, &Default::default(), &limits)
        .unwrap_or_else(|e| panic!("{e}"));
    let scenario = parse("imported.ron", &out.text).unwrap_or_else(|e| panic!("{e}"));
    scenario
        .services
        .iter()
        .map(|(name, s)| (name.clone(), s.calls.len()))
        .collect()
}

/// A 5,000-item `kind: List` (issue 38's "Why": it took 21 s and was then refused at 8
/// calls a service): 2,500 hosts, each routed from one of five front services (500 calls
/// each), imports with every route a call. With `RESIM_SLOW_TESTS=1`, also the List of
/// `bench_import`'s mesh at 5,000 items, 2,500 hosts each called by the 20 before it.
#[test]
fn a_kind_list_of_five_thousand_items_imports_every_route_as_a_call() {
    let hosts = 2_500;
    let text = istio_list(hosts, &|h| vec![format!("front{}", h % 5)]);
    assert_eq!(text.matches("\n- apiVersion").count(), 5_000);
    let calls = imported_calls(&text);
    assert_eq!(
        calls.len(),
        hosts + 5,
        "every host and every front a service"
    );
    for f in 0..5 {
        assert_eq!(calls[&format!("front{f}")], hosts / 5, "front{f}");
    }
    assert_eq!(calls.values().sum::<usize>(), hosts);

    if std::env::var_os("RESIM_SLOW_TESTS").is_some() {
        let routes = 20;
        let text = istio_list(hosts, &|h| {
            (h.saturating_sub(routes)..h)
                .map(|c| format!("h{c}"))
                .collect()
        });
        let calls = imported_calls(&text);
        let expected: usize = (0..hosts).map(|h| h.min(routes)).sum();
        // h0 has no route: Istio's default route to it, from the configuration's own service.
        assert_eq!(calls.values().sum::<usize>(), expected + 1);
        assert_eq!(calls[&format!("h{}", hosts - routes - 1)], routes);
    }
}
