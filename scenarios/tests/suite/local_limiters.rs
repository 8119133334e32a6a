//! The 'Local' baseline of distributed rate limiting: a limit enforced by each replica on its
//! own admits N·r under saturation when there are N replicas of rate r, because no replica
//! knows what the others admitted. A central limiter (one budget for the fleet) is compared
//! with this.

use crate::support;

use scenarios::Report;
use support::run_text_at;

/// A gateway of `replicas` replicas, each with its own token bucket of 100/s (burst 10) on its
/// call to the backend, saturated by 4,000 requests per second for 10s.
fn saturated_gateway(replicas: u32, seed: u64) -> Report {
    let text = format!(
        r#"Scenario(
        name: "local",
        duration: "10s",
        clients: {{ "c": (load: Open(rate: Constant("4000/s")), call: (target: "gateway", timeout: "1s")) }},
        services: {{
            "gateway": (replicas: {replicas}, workers: 200, work: Constant(value: "0s"),
                calls: [(target: "backend", stack: [Limiter((kind: "token_bucket", rate: "100/s", burst: 10))])]),
            "backend": (workers: 100, work: Constant(value: "1ms")),
        }},
    )"#
    );
    run_text_at(&text, seed)
}

/// What the backend received: the attempts the gateway's limiters let through.
fn admitted(r: &Report) -> u64 {
    r.services
        .iter()
        .find(|s| s.name == "backend")
        .unwrap()
        .arrivals
}

#[test]
fn n_local_limiters_of_rate_r_admit_n_times_r_under_saturation() {
    for seed in 1..=2 {
        // One replica: the burst, then one token every 10ms; the 1,000th refill falls at
        // 10s, the end of the run. Every replica sees at least 500 arrivals per second, five
        // times its rate, so each token is taken a few milliseconds after its refill.
        let one = admitted(&saturated_gateway(1, seed));
        assert_eq!(one, 10 + 1000 - 1, "seed {seed}");
        for n in [2u64, 4, 8] {
            let fleet = admitted(&saturated_gateway(n as u32, seed));
            assert_eq!(fleet, n * one, "seed {seed}, {n} replicas");
        }
    }
}
