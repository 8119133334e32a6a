//! What may not mean what it reads as, said where a user looks: a latency expectation that
//! passes on a small share of the requests says so under its verdict, and `resim check`
//! warns when the clients offer a service more than it can serve, with the numbers.

use crate::support;

use support::{Resim, resim_in, workspace_root};

fn resim(args: &[&str]) -> Resim {
    resim_in(&workspace_root(), args)
}

const REPLAY: &str = "book/src/scenarios/replay.ron";

/// The replay chapter's api (one worker, 10ms of work, a p99 of at most 250ms) at `rate`,
/// with a queue of 5 and a timeout of 100ms: what `resim run` prints, and its exit code.
fn replay_at(rate: &str, extra: &[&str]) -> Resim {
    let rate = format!("clients.users.load.rate=Constant(\"{rate}\")");
    let mut args = vec![
        "run",
        REPLAY,
        "--set",
        &rate,
        "--set",
        "clients.users.call.timeout=100ms",
        "--set",
        "services.api.queue.capacity=5",
    ];
    args.extend_from_slice(extra);
    resim(&args)
}

/// The lines of a report's `expectations` section.
fn expectation_lines(stdout: &str) -> Vec<&str> {
    let from = stdout
        .find("\nexpectations\n")
        .expect("an expectations section")
        + 14;
    stdout[from..]
        .lines()
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn a_p99_that_passes_on_a_few_successes_says_so_under_its_verdict() {
    // 80 times the api's capacity: 1.1% of the requests succeed, and those were quick.
    let r = replay_at("8000/s", &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(
        expectation_lines(&r.stdout),
        [
            "  PASS users p99 latency at most 250ms: 97.5ms",
            "    warning: judged on the successes only, 1.1% (877 of 79824) of the requests of users that ended; with more than 1% failing, fewer than 99% of all requests were served, within the bound or not: bound the failures too, e.g. GoodputAtLeast(client: \"users\", after: \"0s\", min_ratio: 0.99)",
        ]
    );
    let json = replay_at("8000/s", &["--json"]);
    let report: serde_json::Value =
        serde_json::from_str(json.stdout.lines().next().unwrap()).unwrap();
    let warning = report["expectations"][0]["warning"].as_str().unwrap();
    assert!(
        warning.starts_with("judged on the successes only, 1.1%"),
        "{warning}"
    );
    // The suggested expectation is one the file format takes, and it fails here.
    let suggested = "expectations=[P99AtMost(client: \"users\", max: \"250ms\"), GoodputAtLeast(client: \"users\", after: \"0s\", min_ratio: 0.99)]";
    let both = replay_at("8000/s", &["--set", suggested]);
    assert_eq!(both.code, 1, "{}", both.stdout);
    assert!(
        both.stdout
            .contains("FAIL users success ratio after 0s at least 99.0%: 1.1%"),
        "{}",
        both.stdout
    );
}

#[test]
fn a_p99_judged_on_nearly_every_request_carries_no_warning() {
    // The file as written: 80/s, every request succeeds.
    let r = resim(&["run", REPLAY, "--json"]);
    let report: serde_json::Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    let e = &report["expectations"][0];
    assert_eq!(e["pass"], true);
    assert!(e.get("warning").is_none(), "{e}");
    // At 200/s, twice the capacity, about half fail.
    let r = replay_at("200/s", &[]);
    let lines = expectation_lines(&r.stdout);
    assert!(
        lines.len() == 2 && lines[1].starts_with("    warning: judged on the successes only, "),
        "{lines:?}"
    );
}

#[test]
fn a_mean_wait_over_the_few_attempts_that_started_work_says_so() {
    // Five Erlangs on four workers with a queue of one: a third of the attempts are refused,
    // and those that got in waited little.
    let r = resim(&[
        "run",
        "book/src/scenarios/mmc-wait.ron",
        "--set",
        "services.api.workers=4",
        "--set",
        "services.api.queue.capacity=1",
    ]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(
        expectation_lines(&r.stdout),
        [
            "  PASS api mean wait in queue at most 30ms: 10.0ms",
            "    warning: judged on the attempts that started work only, 65.7% (3331 of 5071) of those that reached the service; the rest (refused, shed, dropped or still queued) had no wait to count and would have waited longest: bound them too, e.g. with a GoodputAtLeast on its callers",
        ]
    );
}

/// `resim check ARGS`: exit code 0 and its warnings (stderr), one a line.
fn check_warnings(args: &[&str]) -> Vec<String> {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    let r = resim(&all);
    assert_eq!(r.code, 0, "{all:?}: {}", r.stderr);
    assert!(r.stdout.contains(": ok ("), "{}", r.stdout);
    r.stderr.lines().map(str::to_string).collect()
}

#[test]
fn check_warns_when_the_clients_offer_a_service_more_than_it_can_serve() {
    // retry-storm's users offer 800/s; its db serves 16 workers / 10ms = 1600/s, and with
    // three times the work, 533/s.
    assert_eq!(check_warnings(&["retry-storm"]), Vec::<String>::new());
    let slow = "services.db.work=Exponential(mean:\"30ms\")";
    assert_eq!(
        check_warnings(&["retry-storm", "--set", slow]),
        [format!(
            "retry-storm --set '{slow}': warning: services.db: the clients offer it 800/s on average over the run (users, through api), more than the 533/s it can serve (16 workers × 1 replica / 30ms mean work): whatever the seed, at least 267/s of it is refused, times out or waits in a queue that stays full; unless that is what the scenario is about, give it more workers or replicas, or offer less"
        )]
    );
    // The run's report says the same.
    let r = resim(&["run", "retry-storm", "--set", slow, "--set", "duration=25s"]);
    assert!(
        r.stdout
            .contains("\nwarnings\n  services.db: the clients offer it 800/s"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

/// A scenario whose users call `front`, which calls `db` as `calls` says, `front` having
/// `extra` (RON fields).
fn front(calls: &str, extra: &str) -> String {
    format!(
        r#"Scenario(
            name: "front",
            duration: "60s",
            clients: {{ "users": (load: Open(rate: Spike(base: "500/s", peak: "4000/s", start: "10s", end: "20s")), call: (target: "front")) }},
            services: {{
                "front": (workers: 1000, work: Constant(value: "1ms"), calls: [{calls}]{extra}),
                "db": (workers: 10, work: Exponential(mean: "10ms")),
                "search": (workers: 5, work: Exponential(mean: "10ms")),
            }},
        )"#
    )
}

#[test]
fn what_reaches_a_service_is_the_mean_rate_through_picks_caches_and_fan_outs() {
    let dir = std::env::temp_dir().join(format!("resim-warnings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let warned = |name: &str, text: String| {
        let path = dir.join(name).display().to_string();
        std::fs::write(&path, text).unwrap();
        let said: Vec<String> = check_warnings(&[&path])
            .into_iter()
            .map(|w| w.replace(&format!("{path}: warning: "), ""))
            .collect();
        said
    };
    // The spike counts for its 10 seconds: (500 × 50 + 4000 × 10) / 60 = 1083/s on average,
    // above db's 1000/s.
    let all = warned("all.ron", front(r#"(target: "db")"#, ""));
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(
        all[0].starts_with("services.db: the clients offer it 1083/s on average over the run (users, through front), more than the 1000/s it can serve (10 workers × 1 replica / 10ms mean work)"),
        "{all:?}"
    );
    // A warm cache that answers half: 542/s reach db.
    assert!(
        warned(
            "cached.ron",
            front(r#"(target: "db")"#, ", cache: (hit_ratio: 0.5)")
        )
        .is_empty()
    );
    // Picking db for one request in four: 271/s there, and 813/s to search (500/s).
    let picked = front(
        r#"(target: "db", weight: 1.0), (target: "search", weight: 3.0)"#,
        ", call_mode: Pick",
    );
    let said = warned("picked.ron", picked);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("services.search: the clients offer it 813/s"),
        "{said:?}"
    );
    // A fan-out to two leaves: twice what one call would send.
    let fanned = front(
        r#"(target: "db", fan_out: (n: 2))"#,
        ", cache: (hit_ratio: 0.5)",
    );
    let said = warned("fanned.ron", fanned);
    assert!(
        said.len() == 1 && said[0].starts_with("services.db: the clients offer it 1083/s"),
        "{said:?}"
    );
}
