//! `resim risk`: estimates checked against exact answers (an M/M/1 queue with a waiting room,
//! whose first refusal is a birth–death first passage), against plain runs where the event is
//! frequent, against a sweep of 400 seeds of a library scenario (with RESIM_SLOW_TESTS=1), for
//! determinism across threads and shares, and for a replay of the run that
//! reached the event.

use crate::support::resim;
use scenarios::cli::library::open;
use scenarios::experiment::Control;
use scenarios::experiment::risk::render::{Answer, answer};
use scenarios::experiment::risk::{self, Budget, MethodChoice, Risk};
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::Overrides;
use sim_core::SimDuration;
use sim_core::queueing::mm1k_first_refusal_by;

const RARE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/risk/mm1k-rare.ron");
const FREQUENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/risk/mm1k-frequent.ron");

fn command(file: &str, horizon: SimDuration, seeds: (u64, u64), budget: Budget) -> Risk {
    Risk {
        file: file.to_string(),
        event: "queue_full:api".to_string(),
        horizon,
        seeds,
        budget,
        method: MethodChoice::Auto,
        importance: None,
        particles: 100,
        replications: 10,
        relative_error: 0.2,
        overrides: Overrides::default(),
        fingerprint: String::new(),
    }
}

/// The estimate of `command` on `jobs` threads.
fn check(command: &Risk, jobs: usize) -> Answer {
    let out = risk::run(
        command,
        (&open, &RunLimits::default()),
        Some(jobs),
        None,
        &Control::default(),
    );
    answer(&out.expect("the estimate runs"))
}

#[test]
fn a_rare_full_queue_is_estimated_within_its_interval_by_splitting() {
    // λ = 50/s, μ = 100/s, 17 in the system at most: P(first refusal within 10s) ≈ 9.5e-4.
    let exact = mm1k_first_refusal_by(50.0, 100.0, 17, 10.0);
    assert!((5e-4..2e-3).contains(&exact), "{exact}");
    let c = Risk {
        replications: 40,
        ..command(
            RARE,
            SimDuration::from_secs(10),
            (1, 1_000_000),
            Budget::Events(4_000_000),
        )
    };
    let a = check(&c, 2);
    assert_eq!(a.method, "excursions", "{}", a.reason);
    assert!(
        a.low <= exact && exact <= a.high,
        "exact {exact:e} outside [{:e}, {:e}] (estimate {:e})",
        a.low,
        a.high,
        a.probability
    );
    assert!(a.relative_error < 0.4, "{}", a.relative_error);
    // Far fewer events than plain runs would need for the same interval (the benchmark
    // `bench_risk` measures how many fewer against plain runs made in the same process).
    let plain = a
        .plain_events_needed
        .expect("the plain runs' cost is known");
    assert!(plain > 10.0 * a.events as f64, "{plain} vs {}", a.events);
    // The mean time to the first refusal is the birth–death mean, 10,485s, within its
    // interval.
    let mean = sim_core::queueing::mm1k_first_refusal_mean(50.0, 100.0, 17);
    let (low, high) = a
        .mean_time_to_event_interval
        .expect("excursions give a mean time");
    assert!(
        low <= mean && mean <= high,
        "{mean} outside [{low}, {high}]"
    );
}

#[test]
fn a_frequent_full_queue_is_counted_by_plain_runs_whose_interval_covers_the_truth() {
    let exact = mm1k_first_refusal_by(50.0, 100.0, 5, 1.2);
    assert!((0.3..0.5).contains(&exact), "{exact}");
    let repetitions = 40;
    let mut covered = 0;
    for r in 0..repetitions {
        let seeds = (1 + r * 10_000, (r + 1) * 10_000);
        let a = check(
            &command(
                FREQUENT,
                SimDuration::from_millis(1200),
                seeds,
                Budget::Events(1_000_000),
            ),
            2,
        );
        assert_eq!(a.method, "plain", "{}", a.reason);
        assert!(a.relative_error <= 0.21, "{}", a.relative_error);
        if a.low <= exact && exact <= a.high {
            covered += 1;
        }
    }
    // A 95% interval covers the truth in about 38 of 40; fewer than 34 is a broken interval.
    assert!(covered >= 34, "covered {covered} of {repetitions}");
}

#[test]
fn the_estimate_is_the_same_on_one_thread_and_two() {
    let c = command(
        RARE,
        SimDuration::from_secs(10),
        (1, 1_000_000),
        Budget::Events(600_000),
    );
    let (one, two) = (check(&c, 1), check(&c, 2));
    assert_eq!(
        serde_json::to_string(&one).unwrap(),
        serde_json::to_string(&two).unwrap()
    );
}

#[test]
fn partitions_merged_give_the_whole_estimate() {
    let dir = tempdir();
    let base = [
        "risk",
        RARE,
        "--event",
        "queue_full:api",
        "--horizon",
        "10s",
        "--budget",
        "6e5",
        "--json",
    ];
    let whole = resim(&base);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let mut parts = Vec::new();
    for k in 1..=2 {
        let out = dir.join(format!("part{k}.jsonl"));
        let out = out.to_str().unwrap().to_string();
        let share = format!("{k}/2");
        let mut args = base.to_vec();
        args.extend(["--partition", &share, "--out", &out]);
        let r = resim(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        parts.push(out);
    }
    let merged = resim(&["merge", &parts[0], &parts[1], "--format", "json"]);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    assert_eq!(merged.stdout, whole.stdout);
}

#[test]
fn the_run_that_reached_the_event_replays_to_it() {
    let a = check(
        &command(
            RARE,
            SimDuration::from_secs(10),
            (1, 1_000_000),
            Budget::Events(600_000),
        ),
        2,
    );
    let replay = a.replay.expect("a path reached the event");
    assert!(replay.contains("--branch"), "{replay}");
    let mut words: Vec<&str> = replay.split_whitespace().skip(1).collect();
    words.push("--json");
    let first = resim(&words);
    let again = resim(&words);
    assert_eq!(first.stdout, again.stdout, "a replay is bit for bit");
    let report: serde_json::Value = serde_json::from_str(&first.stdout).expect("JSON");
    let refused = report["summary"]["failures_by_reason"]["queue_full"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        refused >= 1,
        "the replayed run has its refusal: {}",
        first.stdout
    );
}

/// The library's `metastable-retry` with a smaller spike, 1,630/s for 5s: it turns
/// metastable on about a quarter of its seeds.
const SPIKE: &str =
    r#"clients.users.load.rate=Spike(base: "1000/s", peak: "1630/s", start: "10s", end: "15s")"#;

#[test]
fn splitting_agrees_with_four_hundred_seeds_where_a_quarter_collapse() {
    // 400 runs of a sweep and 1,000 trajectories of splitting: about three minutes of CPU in
    // a debug build, so with RESIM_SLOW_TESTS=1 only.
    if std::env::var_os("RESIM_SLOW_TESTS").is_none() {
        return;
    }
    let set = ["--set", SPIKE, "--set", "duration=30s"];
    let sweep = resim(
        &[
            &["sweep", "metastable-retry", "--seeds", "1..400"],
            &set[..],
        ]
        .concat(),
    );
    // Exit code 1: some seeds fail `Metastable()`, which passes where the run turned metastable.
    assert_eq!(sweep.code, 1, "{}", sweep.stderr);
    let line = sweep
        .stdout
        .lines()
        .find(|l| l.contains(" of 400 seeds pass"))
        .expect("the sweep counts its passes");
    let collapsed: f64 = line.split(' ').next().unwrap().parse().unwrap();
    let brute = collapsed / 400.0;
    assert!((0.1..=0.5).contains(&brute), "{line}");
    let risk = resim(
        &[
            &[
                "risk",
                "metastable-retry",
                "--event",
                "metastable",
                "--horizon",
                "30s",
            ][..],
            &[
                "--method",
                "splitting",
                "--seeds",
                "100001..200000",
                "--json",
            ],
            &set,
        ]
        .concat(),
    );
    assert_eq!(risk.code, 0, "{}", risk.stderr);
    let a: serde_json::Value = serde_json::from_str(&risk.stdout).expect("JSON");
    assert_eq!(a["method"], "splitting", "{}", risk.stdout);
    let (p, low, high) = (
        a["probability"].as_f64().unwrap(),
        a["low"].as_f64().unwrap(),
        a["high"].as_f64().unwrap(),
    );
    // Within their joint uncertainty: the difference against both standard errors combined
    // (the sweep's binomial one, and splitting's from its 95% interval).
    let brute_se = (brute * (1.0 - brute) / 400.0).sqrt();
    let risk_se = (high - low) / (2.0 * 1.96);
    let joint = (brute_se * brute_se + risk_se * risk_se).sqrt();
    assert!(
        (p - brute).abs() <= 1.96 * joint,
        "splitting {p:.3} [{low:.3}, {high:.3}] against {collapsed} of 400 seeds ({brute:.3} ± {:.3})",
        1.96 * brute_se
    );
}

#[test]
fn splitting_that_reaches_nothing_gives_no_estimate_rather_than_a_zero() {
    // Far too small a budget for a probability of 10⁻³: every replication stops at 0, and
    // an interval [0, 0] would read as certainty that the event never happens.
    let r = resim(&[
        "risk",
        RARE,
        "--event",
        "queue_full:api",
        "--horizon",
        "10s",
        "--budget",
        "3e4",
        "--method",
        "excursions",
        "--replications",
        "2",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("P(queue_full:api within 10s): not estimated: no trajectory reached the event; its first replication's levels went past importance "),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("[0, 0]") && !r.stdout.contains("forever"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("raise --budget"), "{}", r.stdout);
    assert!(!r.stdout.contains("stays unbiased"), "{}", r.stdout);
}

#[test]
fn a_malformed_event_is_refused_in_the_users_words() {
    for (event, says) in [
        ("queue_ful:api", "neither a failure reason"),
        ("queue_full:nope", "no service or client \"nope\""),
        ("queue:api>=0", "a depth of at least 1"),
        ("expectation:3", "no expectations"),
        ("oops", "expected REASON:SERVICE"),
    ] {
        let r = resim(&["risk", RARE, "--event", event, "--horizon", "10s"]);
        assert_eq!(r.code, 2, "{event}: {}", r.stdout);
        assert!(r.stderr.contains(says), "{event}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    }
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("resim-risk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}
