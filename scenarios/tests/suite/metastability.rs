//! The metastability verdict: runs that recover, that never degrade, that stay down and that
//! were never healthy, in the library and in small files made for the purpose; the
//! expectations that use it; and what validation refuses.

use crate::support;

use scenarios::cli::library::find;
use scenarios::format::load::parse;
use scenarios::report::metastability::{Metastability, Verdict};
use scenarios::{Report, RunOptions};
use support::{run_file_text, run_library};

/// The run's verdict section, which every run with a trigger that ends has.
fn verdict(r: &Report) -> &Metastability {
    r.metastability
        .as_ref()
        .unwrap_or_else(|| panic!("{}: no verdict", r.scenario))
}

/// The success ratio of the requests offered in the bucket that starts at `t_s`.
fn ratio_at(r: &Report, t_s: f64) -> f64 {
    let row = r.series.iter().find(|b| b.t_s == t_s).unwrap();
    row.successes as f64 / row.offered as f64
}

/// A small open-loop service at `base`, spiking to `peak` from 10s to 15s: 8 workers of 10ms
/// (800/s), retries on a 200ms timeout.
fn spike(base: &str, peak: &str, duration: &str) -> String {
    format!(
        r#"Scenario(
    name: "spike",
    duration: "{duration}",
    seed: 3,
    clients: {{
        "users": (
            load: Open(rate: Spike(base: "{base}", peak: "{peak}", start: "10s", end: "15s")),
            call: (target: "api", timeout: "200ms", stack: [Retry((max_attempts: 4))]),
        ),
    }},
    services: {{ "api": (workers: 8, queue: (capacity: 400), work: Exponential(mean: "10ms")) }},
)"#
    )
}

#[test]
fn a_spike_that_leaves_room_never_degrades() {
    let r = run_file_text(
        "small.ron",
        &spike("200/s", "400/s", "30s"),
        &RunOptions::default(),
    );
    let m = verdict(&r);
    assert_eq!(m.verdict(), Verdict::NeverDegraded);
    assert_eq!(m.trigger_kind, "load_spike");
    assert_eq!(m.trigger_end_s, 15.0);
    assert_eq!(m.clients[0].degraded_from_s, None);
    // Every bucket from the spike on is what the verdict says: close to the baseline.
    let base = m.clients[0].baseline_success_ratio.unwrap();
    assert!(base > 0.99);
    for t in 10..29 {
        assert!(ratio_at(&r, f64::from(t)) >= 0.9 * base, "{t}s");
    }
}

#[test]
fn a_spike_past_capacity_with_retries_stays_down() {
    // 600/s on 800/s of capacity, then 1600/s for 5s: the timeouts' retries keep it full.
    let r = run_file_text(
        "storm.ron",
        &spike("600/s", "1600/s", "40s"),
        &RunOptions::default(),
    );
    let m = verdict(&r);
    assert_eq!(m.verdict(), Verdict::Metastable, "{m:?}");
    // Down in every bucket after the spike, as a user of the report sees it.
    for t in 16..39 {
        assert!(ratio_at(&r, f64::from(t)) < 0.5, "{t}s");
    }
    assert!(m.clients[0].degraded_from_s.unwrap() >= 10.0);
}

/// Without retries the same spike is over a second after it ends; a run that stops two
/// seconds into that recovery has not seen the 5s of health recovery needs, so its verdict
/// is metastable and says it may only be too short.
#[test]
fn a_run_that_ends_inside_a_recovery_says_a_longer_run_would_tell() {
    let text = spike("400/s", "1600/s", "30s").replace("max_attempts: 4", "max_attempts: 1");
    let whole = run_file_text("no-retry.ron", &text, &RunOptions::default());
    assert_eq!(
        verdict(&whole).verdict(),
        Verdict::Recovered {
            after: sim_core::SimDuration::from_secs(1)
        }
    );
    let short = run_file_text(
        "no-retry.ron",
        &text.replace("duration: \"30s\"", "duration: \"19s\""),
        &RunOptions::default(),
    );
    let m = verdict(&short);
    assert_eq!(m.verdict(), Verdict::Metastable);
    assert_eq!(
        m.clients[0].summary,
        "did not recover within the run: metastable; healthy for its last 2s (short of the 5s recovery needs): a longer run would tell"
    );
    // Down to the end, a storm's verdict says nothing of the kind.
    let storm = run_file_text(
        "storm.ron",
        &spike("600/s", "1600/s", "40s"),
        &RunOptions::default(),
    );
    assert_eq!(
        verdict(&storm).clients[0].summary,
        "did not recover within the run: metastable"
    );
}

#[test]
fn a_load_above_capacity_before_the_trigger_is_collapsed() {
    // 2000/s on 800/s of capacity: never healthy, so nothing to recover to.
    let r = run_file_text(
        "over.ron",
        &spike("2000/s", "2500/s", "30s"),
        &RunOptions::default(),
    );
    let m = verdict(&r);
    assert_eq!(m.verdict(), Verdict::Collapsed);
    let c = &m.clients[0];
    assert!(c.baseline_success_ratio.unwrap() < 0.9, "{c:?}");
    assert!(c.summary.starts_with("collapsed: "), "{}", c.summary);
}

#[test]
fn the_library_stays_down_or_recovers_as_its_stories_say() {
    for name in ["metastable-retry", "retry-storm"] {
        let r = run_library(name);
        assert_eq!(verdict(&r).verdict(), Verdict::Metastable, "{name}");
        assert!(r.passed(), "{name}: its Metastable expectation holds");
    }
    // The budget: the bucket at 15s (right after the spike) is still below 90% of the
    // baseline, the buckets from 16s on are above it: recovered 1s after the spike's end.
    let r = run_library("metastable-retry-budget");
    let m = verdict(&r);
    let c = &m.clients[0];
    let healthy = c.healthy_success_ratio.unwrap();
    assert!(ratio_at(&r, 15.0) < healthy);
    for t in 16..21 {
        assert!(ratio_at(&r, f64::from(t)) >= healthy, "{t}s");
    }
    assert_eq!(
        m.verdict(),
        Verdict::Recovered {
            after: "1s".parse().unwrap()
        }
    );
    assert_eq!(c.recovered_after_s, Some(1.0));
    assert!(r.passed());
    // retry-storm's budget: the slowdown ends at 20s; 20s and 21s are down, 22s on are up.
    let r = run_library("retry-storm-budget");
    let m = verdict(&r);
    let healthy = m.clients[0].healthy_success_ratio.unwrap();
    assert_eq!(m.trigger_kind, "slowdown");
    assert!(ratio_at(&r, 21.0) < healthy);
    for t in 22..27 {
        assert!(ratio_at(&r, f64::from(t)) >= healthy, "{t}s");
    }
    assert_eq!(m.clients[0].recovered_after_s, Some(2.0));
}

#[test]
fn a_cache_flush_is_an_instant_trigger() {
    let r = run_library("thundering-herd-cache");
    let m = verdict(&r);
    assert_eq!(m.trigger_kind, "cache_flush");
    assert_eq!(m.trigger_end_s, 10.0);
    // The cold cache takes the api down for seconds; back and holding from 18s.
    let Verdict::Recovered { after } = m.verdict() else {
        panic!("{m:?}")
    };
    let healthy = m.clients[0].healthy_success_ratio.unwrap();
    let back = 10.0 + after.as_secs_f64();
    assert!(ratio_at(&r, back - 1.0) < healthy);
    for t in 0..5 {
        assert!(ratio_at(&r, back + f64::from(t)) >= healthy);
    }
}

#[test]
fn steps_that_come_back_down_are_a_trigger_and_a_ramp_is_not() {
    let steps = r#"Scenario(
    name: "steps",
    duration: "30s",
    clients: { "users": (
        load: Open(rate: Steps([(at: "0s", rate: "100/s"), (at: "8s", rate: "300/s"), (at: "10s", rate: "500/s"), (at: "14s", rate: "100/s")])),
        call: (target: "api"),
    ) },
    services: { "api": (workers: 8, work: Exponential(mean: "10ms")) },
    expectations: [Recovers(within: "1s")],
)"#;
    let r = run_file_text("steps.ron", steps, &RunOptions::default());
    let m = verdict(&r);
    assert_eq!(m.trigger_kind, "load_step");
    // The stretch above 100/s began at 8s and ended at 14s.
    assert_eq!((m.baseline_to_s, m.trigger_end_s), (8.0, 14.0));
    assert_eq!(m.verdict(), Verdict::NeverDegraded);
    assert!(r.passed());
    let ramp = steps
        .replace(
            r#"Steps([(at: "0s", rate: "100/s"), (at: "8s", rate: "300/s"), (at: "10s", rate: "500/s"), (at: "14s", rate: "100/s")])"#,
            r#"Ramp(from: "100/s", to: "500/s", start: "5s", end: "10s")"#,
        )
        .replace("Recovers(within: \"1s\")", "");
    assert!(
        run_file_text("ramp.ron", &ramp, &RunOptions::default())
            .metastability
            .is_none()
    );
}

#[test]
fn the_expectations_judge_the_verdict_and_say_why_they_fail() {
    let text = find("metastable-retry-budget").unwrap().text;
    // Recovery took 1s: a limit under it fails, saying what happened.
    let strict = text.replace("Recovers(within: \"10s\")", "Recovers(within: \"500ms\")");
    let r = run_file_text("strict.ron", &strict, &RunOptions::default());
    let e = &r.expectations[0];
    assert!(!e.pass);
    assert_eq!(e.observed, "recovered after 1s");
    assert_eq!(e.threshold.from_s, 15.0);
    assert_eq!(e.threshold.observed, Some(1.0));
    // Metastable fails on a run that recovers, and Recovers on one that stays down.
    let wrong = text.replace("Recovers(within: \"10s\")", "Metastable(client: \"users\")");
    assert!(!run_file_text("wrong.ron", &wrong, &RunOptions::default()).passed());
    let down = find("metastable-retry").unwrap().text.replacen(
        "Metastable()",
        "Recovers(within: \"30s\")",
        1,
    );
    let r = run_file_text("down.ron", &down, &RunOptions::default());
    assert!(!r.passed());
    assert_eq!(
        r.expectations[0].observed,
        "did not recover within the run: metastable"
    );
    // A run cut short before the trigger ends could give no verdict: refused before it runs.
    let s = parse("cut.ron", text).unwrap();
    let options = scenarios::RunOptions {
        duration: Some("12s".parse().unwrap()),
        ..Default::default()
    };
    let e = scenarios::run(&s, "cut.ron", &options)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "cut.ron --duration 12s: expectations[0]: needs a verdict, but the trigger `load spike users ×2` ends at 15s, not before the end of the run; run longer or end it earlier (or judge a window with GoodputAtLeast or GoodputAtMost)"
    );
}

#[test]
fn thresholds_come_from_the_file_and_are_in_every_report() {
    let text = find("metastable-retry-budget").unwrap().text.replacen(
        "    expectations: [",
        "    verdict: (healthy_ratio: 0.5, sustain: \"3s\"),\n    expectations: [",
        1,
    );
    let r = run_file_text("loose.ron", &text, &RunOptions::default());
    let m = verdict(&r);
    assert_eq!((m.healthy_ratio, m.sustain_s), (0.5, 3.0));
    let human = scenarios::report::Format::Human.render(&r);
    assert!(
        human.contains("healthy bucket ≥ 50% of the baseline success ratio"),
        "{human}"
    );
    let json = scenarios::report::Format::Json.render(&r);
    assert!(
        json.contains("\"metastability\":{\"verdict\":\"recovered\""),
        "{json}"
    );
    let compact = scenarios::report::Format::Compact.render(&r);
    assert!(compact.contains("sustained 3s"), "{compact}");
}

#[test]
fn validation_asks_for_the_client_when_there_are_several() {
    let two = r#"Scenario(
    name: "two",
    duration: "20s",
    clients: {
        "a": (load: Open(rate: Constant("10/s")), call: (target: "api")),
        "b": (load: Open(rate: Constant("10/s")), call: (target: "api")),
    },
    services: { "api": (workers: 2, work: Constant(value: "1ms")) },
    faults: [(at: "5s", duration: "2s", kind: Slowdown(service: "api", factor: 2.0))],
    expectations: [Recovers(within: "5s")],
)"#;
    let e = parse("two.ron", two).unwrap_err().to_string();
    assert_eq!(
        e,
        "two.ron: expectations[0].client: the scenario has 2 clients; say which one the verdict is about, e.g. client: \"a\""
    );
    let named = two.replace("Recovers(within", "Recovers(client: \"b\", within");
    let r = run_file_text("two.ron", &named, &RunOptions::default());
    assert_eq!(verdict(&r).clients.len(), 2);
    assert!(r.passed());
}
