//! A service's limiters over time in the report's series (`series[].services[].limiters`):
//! the concurrency limit and the requests its limiters hold, and a PID shedder's drop
//! probability, compared with the limiters' own state read between the events of the run that
//! made them, and with the AIMD rule; a service without a limiter gets none.

use scenarios::format::load::parse;
use scenarios::run::Running;
use scenarios::world::Probe;
use scenarios::{Report, RunOptions, run};

/// One service `api` (one replica, 2 workers, 100 ms of work) under 100 requests/s, its
/// concurrency limit `admission`, every answer an error from 5 s to 7 s.
fn scenario(admission: &str) -> String {
    format!(
        r#"Scenario(
    name: "limiter-series",
    duration: "12s",
    seed: 3,
    clients: {{
        "users": (load: Open(rate: Constant("100/s")), call: (target: "api", timeout: "60s")),
    }},
    services: {{
        "api": (workers: 2, queue: (capacity: 1000), work: Constant(value: "100ms"),
            admission: [{admission}]),
    }},
    faults: [(at: "5s", duration: "2s", kind: ErrorRate(service: "api", error_ratio: 1.0))],
)"#
    )
}

/// AIMD from 2 up to 1000 that halves on each failure and never counts a success as slow.
const AIMD: &str = r#"Concurrency(kind: "aimd", initial_limit: 2, min_limit: 2, max_limit: 1000,
    backoff_ratio: 0.5, timeout: "600s")"#;

/// Per bucket of `width` ns up to `end`, the time-weighted mean and the maximum of a step
/// function given as (time, value) after each event.
fn buckets(steps: &[(u64, u64)], width: u64, end: u64) -> Vec<(f64, u64)> {
    let n = end.div_ceil(width) as usize;
    let mut out = vec![(0.0, 0); n];
    for (k, &(t, v)) in steps.iter().enumerate() {
        let until = steps.get(k + 1).map_or(end, |s| s.0);
        let mut at = t;
        loop {
            let i = ((at / width) as usize).min(n - 1);
            out[i].1 = out[i].1.max(v);
            let edge = ((i as u64 + 1) * width).min(until);
            out[i].0 += v as f64 * (edge - at) as f64;
            if edge >= until {
                break;
            }
            at = edge;
        }
    }
    for (i, b) in out.iter_mut().enumerate() {
        let length = (end.min((i as u64 + 1) * width) - i as u64 * width) as f64;
        b.0 /= length;
    }
    out
}

/// Runs `text` event by event, reading its service's concurrency limit and requests in
/// flight from the limiters after each event; returns the report and both step functions.
type Steps = Vec<(u64, u64)>;
fn stepped(text: &str) -> (Report, Steps, Steps) {
    let s = parse("limiter-series.ron", text).unwrap();
    let mut running = Running::start(&s, "limiter-series.ron", &RunOptions::default()).unwrap();
    let api = running.service_index("api").unwrap();
    let read = |r: &Running| {
        let t = r.now().as_nanos();
        let limit = r.probe(Probe::ConcurrencyLimit(api));
        let in_flight = r.probe(Probe::ConcurrencyInFlight(api));
        ((t, limit), (t, in_flight))
    };
    let (l, f) = read(&running);
    let (mut limits, mut flights) = (vec![l], vec![f]);
    while running.step().is_none() {
        let (l, f) = read(&running);
        limits.push(l);
        flights.push(f);
    }
    (running.finish().report, limits, flights)
}

/// The service `api`'s limiter figure `key` in each bucket of `report`.
fn series(report: &Report, key: &str) -> Vec<f64> {
    let json = serde_json::to_value(report).unwrap();
    json["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let api = &row["services"][0];
            assert_eq!(api["name"], "api");
            api["limiters"][key]
                .as_f64()
                .unwrap_or_else(|| panic!("no {key} in {api}"))
        })
        .collect()
}

/// The series of an AIMD limit and its requests in flight are the limiter's own state,
/// integrated over each bucket (mean) and at its highest (max), as the run moved it.
#[test]
fn an_aimd_limit_s_series_is_the_limiter_s_state_over_each_bucket() {
    let (report, limits, flights) = stepped(&scenario(AIMD));
    let width = (report.bucket_s * 1e9) as u64;
    let end = (report.simulated_s * 1e9) as u64;
    for (name, steps, mean, max) in [
        (
            "limit",
            &limits,
            "concurrency_limit_mean",
            "concurrency_limit_max",
        ),
        (
            "in flight",
            &flights,
            "concurrency_in_flight_mean",
            "concurrency_in_flight_max",
        ),
    ] {
        let expected = buckets(steps, width, end);
        let (means, maxima) = (series(&report, mean), series(&report, max));
        assert_eq!(means.len(), expected.len(), "{name}: one value per bucket");
        for (i, (m, most)) in expected.into_iter().enumerate() {
            assert!(
                (means[i] - m).abs() <= 5e-4 + 1e-9 * m,
                "{name}, bucket {i}: the series says {} on average, the limiter held {m}",
                means[i]
            );
            // Read after each event, the limiter may have passed a higher value within one.
            assert!(
                maxima[i] >= most as f64,
                "{name}, bucket {i}: the series' most is {}, the limiter held {most} after an event",
                maxima[i]
            );
        }
    }
    // The limit moved both ways: grew under load and fell in the errors.
    let most = series(&report, "concurrency_limit_max");
    assert!(most[4] > 20.0 && most[6] == 2.0, "{most:?}");
}

/// AIMD's rule, seen in the report alone. Each failure halves the limit (rounded down, never
/// below its floor of 2), so a bucket of errors only starts where the bucket before ended and
/// the next one starts where that many halvings lead. Each success of a request admitted with
/// at least half the limit in flight raises it by one, and nothing else does: over a bucket
/// without failures the limit rises (and ends at its highest) by at most its successes, and
/// by most of them while the limiter is full (100 requests/s against 20 answered).
#[test]
fn an_aimd_limit_grows_by_one_per_success_and_halves_on_each_failure() {
    let s = parse("limiter-series.ron", &scenario(AIMD)).unwrap();
    let report = run(&s, "limiter-series.ron", &RunOptions::default())
        .unwrap()
        .report;
    let most = series(&report, "concurrency_limit_max");
    let ok: Vec<u64> = report.series.iter().map(|r| r.services[0].ok).collect();
    let failed: Vec<u64> = report
        .series
        .iter()
        .map(|r| {
            let failed = &r.services[0].failed_by_reason;
            // Refusals by the limit itself are no sample: only answered failures halve it.
            failed.values().sum::<u64>() - failed.get("concurrency_limited").unwrap_or(&0)
        })
        .collect();
    // Where the limit stands at the start of a bucket, when the bucket before says.
    let mut start = Some(2.0);
    let (mut rising, mut falling) = (0, 0);
    for i in 0..most.len() {
        let (n, successes) = (failed[i], ok[i] as f64);
        start = match (n, ok[i], start) {
            (0, _, Some(from)) => {
                let rose = most[i] - from;
                assert!(
                    rose <= successes && rose >= 0.75 * successes,
                    "bucket {i}: from {from} to {} with {successes} successes",
                    most[i]
                );
                rising += 1;
                Some(most[i])
            }
            (n, 0, Some(from)) => {
                assert_eq!(most[i], from, "bucket {i}: errors only, from {from}");
                falling += 1;
                Some((0..n).fold(from, |v, _| (v * 0.5).floor().max(2.0)))
            }
            (0, _, None) => Some(most[i]),
            _ => None,
        };
    }
    assert!(
        rising >= 8 && falling == 2,
        "{rising} and {falling} buckets checked: {most:?}"
    );
}
