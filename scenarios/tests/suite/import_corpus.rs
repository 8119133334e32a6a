//! The import corpus (`scenarios/tests/import-corpus/`): configurations written here in the
//! shapes of upstream examples (Istio's bookinfo split into files, rules of one host in two
//! namespaces, an Envoy front proxy with a dozen clusters, filters switched off by their
//! runtime flags, a grpc-go service config with capitalised keys, resilience4j YAML and
//! `.properties` with exception lists and 0.x names), each case imported the way a user runs
//! it (`resim import FILE…` from the corpus directory), its scenario and table a snapshot
//! (`import_corpus__<case>`), what it is for checked in the output, the scenario checked and
//! run briefly. Export and re-import of the corpus, each call written back into the file that
//! configures it, are in `export_corpus.rs`.
//!
//! The behaviour test below shows what the corpus means when it runs: resilience4j's
//! `retryExceptions` whitelist that leaves out the rate limiter's refusals does not retry them
//! (the call's amplification 1.00, where retrying them, as the import did before it read the
//! list, multiplies the attempts).

use crate::support::{self, call_report, resim_in, run_file_text, workspace_root};
use scenarios::RunOptions;

pub(crate) const CORPUS: &str = "scenarios/tests/import-corpus";

/// One case of the corpus: the files imported together, and what its output must show (each
/// a piece of the scenario or the table, in the words a user reads).
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) files: &'static [&'static str],
    shows: &'static [&'static str],
}

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "bookinfo_split",
        files: &[
            "bookinfo/destination-rule-all.yaml",
            "bookinfo/virtual-service-all-v1.yaml",
        ],
        shows: &[
            // Four hosts from two files, each routed to its v1 subset, none defined twice.
            "\"productpage\": (",
            "\"reviews\": (",
            "\"ratings\": (",
            "\"details\": (",
            "(the subset v1 of ratings.default.svc.cluster.local",
            "retries.attempts -> services.app.calls[2].stack[0].max_retries = 2",
        ],
    },
    Case {
        name: "bookinfo_reviews_split",
        files: &[
            "bookinfo/destination-rule-all.yaml",
            "bookinfo/virtual-service-reviews-50-v3.yaml",
        ],
        shows: &[
            // jason's route to v2, and the 50/50 split to v1 and v3: three subsets, three calls.
            "target: \"reviews-v2\"",
            "target: \"reviews-v1\"",
            "target: \"reviews-v3\"",
            "weight: 0.5",
            "the route for headers end-user exact jason",
            // v3's own load balancer replaces the host's.
            "subsets[v3].trafficPolicy.loadBalancer.simple -> services.reviews-v3.balancer",
        ],
    },
    Case {
        name: "namespaces",
        files: &[
            "namespaces/reviews-prod.yaml",
            "namespaces/reviews-prod-later.yaml",
            "namespaces/reviews-staging.yaml",
        ],
        shows: &[
            // Two hosts called reviews stay two services.
            "\"reviews.prod\": (",
            "\"reviews.staging\": (",
            // The older rule's limit stands; the later one is a conflict naming both places.
            "a conflict",
            "namespaces/reviews-prod.yaml:",
            "namespaces/reviews-prod-later.yaml:",
        ],
    },
    Case {
        name: "front_proxy",
        files: &["front-proxy/envoy.yaml"],
        shows: &[
            // Twelve clusters, twelve calls of the proxy's own service (node.cluster).
            "\"front-proxy\": (",
            "routes[11].route.retry_policy.num_retries -> services.front-proxy.calls[11].stack[0].max_retries = 2",
            "the route for prefix /search",
            "outlier_detection.consecutive_5xx -> services.search.outlier.consecutive_failures = 5",
        ],
    },
    Case {
        name: "envoy_runtime_off",
        files: &["envoy-runtime/filters-off.yaml"],
        shows: &[
            "the filter is off: its `enabled.default_value` is false",
            "the filter is off: `filter_enabled` is 0% of requests",
        ],
    },
    Case {
        name: "grpc_go_keys",
        files: &["grpc-go/service-config.json"],
        shows: &[
            "max_attempts: 4",
            "retryPolicy.MaxAttempts (read as maxAttempts: grpc-go matches a service config's keys case-insensitively",
        ],
    },
    Case {
        name: "resilience4j_yaml_and_properties",
        files: &[
            "resilience4j/application.yml",
            "resilience4j/application.properties",
        ],
        shows: &[
            // The .properties value stands over the YAML one, and the table says so.
            "retry.instances.backendA.max-attempts -> services.app.calls[0].stack[0].max_attempts = 4",
            "Spring reads a .properties file over a YAML one",
            // The whitelist leaves out the limiter's refusals: they are not retried.
            "retry_on_local_rejection: false",
            // resilience4j 0.x names.
            "ringBufferSizeInClosedState",
        ],
    },
];

/// `resim import FILES` from the corpus directory.
fn import(args: &[&str]) -> support::Resim {
    let mut all = vec!["import"];
    all.extend_from_slice(args);
    resim_in(&workspace_root().join(CORPUS), &all)
}

/// The scenario `text` imported by `case`, run for two seconds: it loads, and requests go
/// through it.
fn runs_briefly(case: &str, text: &str) {
    let placeholder = "duration: \"60s\"";
    assert!(
        text.contains(placeholder),
        "{case}: the duration placeholder"
    );
    let brief = text.replace(placeholder, "duration: \"2s\"");
    let report = run_file_text(&format!("{case}.ron"), &brief, &RunOptions::default());
    assert!(report.summary.offered > 0, "{case}: no request offered");
    assert!(report.summary.successes > 0, "{case}: no request succeeded");
}

/// One case: imported, its output a snapshot showing what it is for, checked and run.
fn check(case: &Case) {
    let out = import(case.files);
    assert_eq!(out.code, 0, "{}: {}", case.name, out.stderr);
    let both = format!("{}\n---- stderr ----\n{}", out.stdout, out.stderr);
    for shown in case.shows {
        assert!(
            both.contains(shown),
            "{}: shows {shown:?}:\n{both}",
            case.name
        );
    }
    assert!(
        !out.stderr.contains("resim has no counterpart"),
        "{}: a generic reason:\n{}",
        case.name,
        out.stderr
    );
    insta::with_settings!({ description => format!("cd {CORPUS} && resim import {}", case.files.join(" ")) }, {
        insta::assert_snapshot!(case.name, both);
    });
    runs_briefly(case.name, &out.stdout);
}

#[test]
fn every_corpus_case_imports_checks_and_runs() {
    for case in CASES {
        check(case);
    }
}

/// The configuration files of the corpus, as `DIR/FILE` under it; not `traces/`, whose
/// trace files and the configuration imported with them `traces_import.rs` tests.
pub(crate) fn corpus_files() -> Vec<String> {
    let root = workspace_root().join(CORPUS);
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap();
        if !dir.path().is_dir() || dir.file_name() == "traces" {
            continue;
        }
        for file in std::fs::read_dir(dir.path()).unwrap() {
            out.push(format!(
                "{}/{}",
                dir.file_name().to_string_lossy(),
                file.unwrap().file_name().to_string_lossy()
            ));
        }
    }
    out.sort();
    out
}

/// Every file of the corpus is in a case, so a file added is tested.
#[test]
fn every_corpus_file_is_in_a_case() {
    for name in corpus_files() {
        assert!(
            CASES.iter().any(|c| c.files.contains(&name.as_str())),
            "{name} is in no case of import_corpus.rs"
        );
    }
}

/// The amplification of the call to backendA (its retry around a breaker and a rate limiter
/// of 10 a second) in the resilience4j case run 10 seconds at the placeholder load (about 50
/// calls a second to backendA), each of `sets` (`from=>to`) replacing the first `from` of the
/// imported scenario.
fn amplification(sets: &[&str]) -> f64 {
    let out = import(&[
        "resilience4j/application.yml",
        "resilience4j/application.properties",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut text = out.stdout.replace("duration: \"60s\"", "duration: \"10s\"");
    for set in sets {
        let (from, to) = set.split_once("=>").unwrap();
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    let report = run_file_text("resilience4j.ron", &text, &RunOptions::default());
    let call = call_report(&report, "services.app.calls[0]");
    assert_eq!(call.target, "backendA");
    call.amplification
}

/// resilience4j's `retryExceptions` names what is retried: the demo's whitelist (server
/// errors, timeouts, I/O) leaves out `RequestNotPermitted`, so the rate limiter's refusals are
/// not retried and each call is one attempt, though the limiter refuses most of them.
/// Retrying them as 429s, as the import did before it read the list (every `retry_on` on),
/// makes each refused call try again up to `maxAttempts`.
#[test]
fn a_retry_whitelist_without_the_limiters_refusals_does_not_retry_them() {
    let declared = amplification(&[]);
    assert_eq!(declared, 1.0, "the configuration retries no refusal");
    let everything = amplification(&[
        "retry_on_throttled: false=>retry_on_throttled: true",
        "retry_on_local_rejection: false=>retry_on_local_rejection: true",
    ]);
    assert!(
        everything > 2.0,
        "retrying the refusals amplifies: {everything}"
    );
}

/// bookinfo's reviews VirtualService: a route for jason's requests (a header `match`), then a
/// 50/50 split of the rest. Istio takes the first route that matches and splits by weight
/// only within a route, so the host's calls share what one host's call gets (weight 1, as
/// productpage's), the split's two halves are equal shares of what the match leaves, and the
/// matched share, which the configuration does not give, is a placeholder said so.
#[test]
fn a_matched_route_shares_its_hosts_requests_with_the_split_after_it() {
    let out = import(CASES[1].files);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let scenario = scenarios::format::load::parse("imported.ron", &out.stdout).expect("loads");
    let calls = &scenario.services["app"].calls;
    let weight = |target: &str| {
        calls
            .iter()
            .find(|c| c.target == target)
            .unwrap_or_else(|| panic!("a call to {target}"))
            .weight
    };
    let reviews = weight("reviews-v1") + weight("reviews-v2") + weight("reviews-v3");
    assert_eq!(reviews, weight("productpage"), "{}", out.stdout);
    assert_eq!(weight("reviews-v1"), weight("reviews-v3"));
    assert_eq!(
        weight("reviews-v1") + weight("reviews-v3"),
        1.0 - weight("reviews-v2")
    );
    assert!(
        out.stdout.contains(
            "placeholder: the share of the host's requests that match headers end-user exact jason"
        ),
        "{}",
        out.stdout
    );
}
