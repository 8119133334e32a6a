//! What a link declares is what its messages get: with thousands of messages in flight at
//! once, the one-way latencies a link delivers follow its `latency` distribution, for every
//! kind of distribution, by a Kolmogorov–Smirnov test against the distribution function the
//! declaration defines. And the one exception a user chooses: a `Fifo` link (one TCP
//! connection) delivers much later than it declares under the same load (head-of-line
//! blocking).

mod common;

use common::{Record, run, send_at, world};
use sim_core::sample::Samples;
use sim_core::{Dist, SimDuration, SimTime};
use sim_net::{LinkConfig, NetworkConfig};

/// Messages per distribution: the KS test's critical value at 99.9% is 1.95 / sqrt(n).
const MESSAGES: u64 = 20_000;

/// One message every 10µs: with latencies of milliseconds, hundreds are in flight at once.
const GAP_NANOS: u64 = 10_000;

fn config(text: &str) -> NetworkConfig {
    ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .from_str(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn dist(text: &str) -> Dist {
    config(&format!("(default_link: (latency: {text}))"))
        .default_link
        .latency
}

/// The one-way latencies (ns) of `MESSAGES` messages sent n0 → n1 over `network`, and the
/// most that were in flight at once.
fn delivered(network: &str) -> (Vec<u64>, usize) {
    delivered_over(&config(network))
}

/// The same over a network built in Rust.
fn delivered_over(network: &NetworkConfig) -> (Vec<u64>, usize) {
    let (mut sim, nodes) = world(7, 2, network);
    for i in 0..MESSAGES {
        send_at(
            &mut sim,
            SimTime::from_nanos(i * GAP_NANOS),
            nodes[0],
            nodes[1],
            i,
        );
    }
    let mut latencies = Vec::new();
    let mut in_flight: i64 = 0;
    let mut in_flight_max: i64 = 0;
    for record in run(&mut sim) {
        match record {
            Record::Sent { .. } => in_flight += 1,
            Record::Delivered { at, sent_at, .. } => {
                in_flight -= 1;
                latencies.push((at - sent_at).as_nanos());
            }
            other => panic!("nothing is dropped or held here: {other:?}"),
        }
        in_flight_max = in_flight_max.max(in_flight);
    }
    assert_eq!(latencies.len() as u64, MESSAGES);
    (latencies, in_flight_max as usize)
}

/// The Kolmogorov–Smirnov distance between the sample and the distribution function `cdf`.
/// Draws are rounded to the nanosecond, so the function is read half a nanosecond on either
/// side of each distinct value, which makes the test exact for discrete distributions too.
fn ks_distance(sample: &mut [u64], cdf: impl Fn(f64) -> f64) -> f64 {
    sample.sort_unstable();
    let n = sample.len() as f64;
    let mut distance: f64 = 0.0;
    let mut i = 0;
    while i < sample.len() {
        let x = sample[i];
        let below = i as f64 / n;
        while i < sample.len() && sample[i] == x {
            i += 1;
        }
        let at_or_below = i as f64 / n;
        let x = x as f64;
        distance = distance
            .max((at_or_below - cdf(x + 0.5)).abs())
            .max((below - cdf(x - 0.5)).abs());
    }
    distance
}

/// Every kind of distribution a file may declare.
const DISTRIBUTIONS: [&str; 11] = [
    r#"Constant(value: "5ms")"#,
    r#"Uniform(low: "1ms", high: "9ms")"#,
    r#"Exponential(mean: "4ms")"#,
    r#"Normal(mean: "10ms", std_dev: "2ms")"#,
    r#"LogNormal(median: "5ms", p99: "50ms")"#,
    r#"LogNormal(median: "5ms", sigma: 0.4)"#,
    r#"Pareto(scale: "2ms", shape: 2.5)"#,
    r#"Mixture(components: [(weight: 9, dist: Exponential(mean: "2ms")), (weight: 1, dist: Constant(value: "30ms"))])"#,
    r#"Empirical(values: ["500us", "700us", "900us", "2ms", "9ms"])"#,
    r#"Histogram(buckets: [("1ms", 120), ("2ms", 300), ("5ms", 390), ("20ms", 398), ("+Inf", 400)])"#,
    r#"Percentiles(p10: "1ms", p50: "4ms", p90: "12ms", p99: "40ms", p999: "120ms")"#,
];

/// A file of samples as the scenario format hands it over: 1,000 values from 0.5ms to about
/// 20ms, each weighted by how often it was seen.
fn measured_samples() -> Dist {
    let values: Vec<SimDuration> = (0..1000u64)
        .map(|i| SimDuration::from_nanos(500_000 + i * i * 20))
        .collect();
    let weights: Vec<f64> = (0..1000u64).map(|i| (1 + i % 7) as f64).collect();
    Dist::Empirical {
        values: Vec::new(),
        file: Some("measured.csv".into()),
        column: Some("latency".into()),
        unit: None,
        weights: Some("count".into()),
        samples: Some(Samples::new(&values, Some(&weights)).unwrap()),
    }
}

#[test]
fn delivered_latency_follows_the_declared_distribution() {
    let critical = 1.95 / (MESSAGES as f64).sqrt();
    let declared = DISTRIBUTIONS
        .iter()
        .map(|text| (text.to_string(), dist(text)))
        .chain([(
            "Empirical(file: ..., weights: ...)".to_string(),
            measured_samples(),
        )]);
    for (text, declaration) in declared {
        let sampler = declaration.compile().unwrap();
        let network = NetworkConfig {
            default_link: LinkConfig::with_latency(declaration),
            ..NetworkConfig::default()
        };
        let (mut latencies, in_flight_max) = delivered_over(&network);
        assert!(
            in_flight_max >= 50,
            "{text}: only {in_flight_max} messages were in flight at once"
        );
        let d = ks_distance(&mut latencies, |x| sampler.cdf_nanos(x));
        println!(
            "{text:<60} in flight {in_flight_max:>5}  KS distance {d:.4} (critical {critical:.4})"
        );
        assert!(
            d < critical,
            "{text}: delivered latencies are {d:.4} from the declared distribution (critical value {critical:.4})"
        );
    }
}

#[test]
fn a_fifo_link_delivers_later_than_it_declares_under_load() {
    let text = r#"LogNormal(median: "5ms", p99: "50ms")"#;
    let sampler = dist(text).compile().unwrap();
    let median = |network: String| {
        let (mut latencies, _) = delivered(&network);
        latencies.sort_unstable();
        latencies[latencies.len() / 2] as f64
    };
    let declared = sampler.quantile_nanos(0.5);
    let independent = median(format!("(default_link: (latency: {text}))"));
    let fifo = median(format!("(default_link: (latency: {text}, order: Fifo))"));
    assert!(
        (independent / declared - 1.0).abs() < 0.05,
        "default link: median {independent} against {declared} declared"
    );
    assert!(
        fifo > 4.0 * declared,
        "a FIFO link under load: median {fifo}, no more than 4× the {declared} declared"
    );
}
