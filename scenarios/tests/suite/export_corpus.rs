//! `resim export --against ORIGINAL` on the import corpus (`scenarios/tests/import-corpus/`):
//! each call written back into the file that configures it, as a user applies an export.
//!
//! - Unchanged, the export is the original, byte for byte (every field of the original equal,
//!   its comments and order kept), and the diff is empty.
//! - Changed (the call's retry allows one more attempt, or else its deadline doubles; a lone
//!   DestinationRule's connection pool doubles), the
//!   export differs from the original in that field alone (its line, or the lines of a field
//!   the original left to its default), and importing it gives the changed scenario:
//!   import → change → export → import is the same scenario.
//!
//! - Written back, the file conforms to its format's schema as well as the original did (no
//!   problem the original does not have: the resilience4j 0.x names of `application.yml` are
//!   the original's).
//!
//! - Every file of the corpus is written back in a test (`BACKS`, one call into one file, each
//!   with its change; `export_split.rs`'s `SPLITS`, originals split across files).
//!
//! `application.yml` writes Spring's dotted keys (`resilience4j.retry:`): a change is placed
//! under the dotted key that covers its path, as Spring reads it.

use scenarios::Scenario;
use scenarios::export::{self, Against, TargetFormat};
use scenarios::format::limits::RunLimits;
use scenarios::format::load::parse;
use scenarios::format::schema::{Call, Layer};
use scenarios::import::{self, Input};

use crate::export_schemas::corpus_format;
use crate::export_split::SPLITS;
use crate::import_corpus::{CORPUS, corpus_files};
use crate::support::{schema, workspace_root};

/// A call of a corpus scenario written back into one file: the scenario imported from
/// `from`, its call to `target` exported to `to` as the upstream `service`, against `file`,
/// after `change` (a setting the file writes, or its default for the object the file has).
struct Back {
    from: &'static [&'static str],
    target: &'static str,
    service: &'static str,
    to: TargetFormat,
    file: &'static str,
    change: fn(&mut Call) -> String,
}

const BACKS: &[Back] = &[
    Back {
        from: &["front-proxy/envoy.yaml"],
        target: "search",
        service: "search",
        to: TargetFormat::Envoy,
        file: "front-proxy/envoy.yaml",
        change,
    },
    Back {
        from: &["front-proxy/envoy.yaml"],
        target: "cart",
        service: "cart",
        to: TargetFormat::Envoy,
        file: "front-proxy/envoy.yaml",
        change,
    },
    Back {
        from: &["envoy-runtime/filters-off.yaml"],
        target: "db",
        service: "db",
        to: TargetFormat::Envoy,
        file: "envoy-runtime/filters-off.yaml",
        change,
    },
    // The VirtualServices alone: with the DestinationRules imported too, the call has their
    // pool and outlier ejection, which no object of this file holds (listed as not written
    // back: `export_split.rs`'s `a_change_no_against_file_has_an_object_for_is_listed_not_dropped`).
    Back {
        from: &["bookinfo/virtual-service-all-v1.yaml"],
        target: "reviews",
        service: "reviews/v1",
        to: TargetFormat::Istio,
        file: "bookinfo/virtual-service-all-v1.yaml",
        change,
    },
    Back {
        from: &["namespaces/reviews-prod.yaml"],
        target: "reviews",
        service: "reviews",
        to: TargetFormat::Istio,
        file: "namespaces/reviews-prod.yaml",
        change,
    },
    Back {
        from: &["grpc-go/service-config.json"],
        target: "grpc.examples.echo.Echo",
        service: "grpc.examples.echo.Echo",
        to: TargetFormat::Grpc,
        file: "grpc-go/service-config.json",
        change,
    },
    Back {
        from: &["resilience4j/application.yml"],
        target: "backendA",
        service: "backendA",
        to: TargetFormat::Resilience4j,
        file: "resilience4j/application.yml",
        change,
    },
    Back {
        from: &["resilience4j/application.properties"],
        target: "backendA",
        service: "backendA",
        to: TargetFormat::Resilience4j,
        file: "resilience4j/application.properties",
        change,
    },
    // A weighted split after a matched route: the call to v1 has a weight of its own.
    Back {
        from: &["bookinfo/virtual-service-reviews-50-v3.yaml"],
        target: "reviews-v1",
        service: "reviews/v1",
        to: TargetFormat::Istio,
        file: "bookinfo/virtual-service-reviews-50-v3.yaml",
        change,
    },
    // The later rule of prod's reviews, on its own: its canary subset's route.
    Back {
        from: &["namespaces/reviews-prod-later.yaml"],
        target: "reviews",
        service: "reviews/canary",
        to: TargetFormat::Istio,
        file: "namespaces/reviews-prod-later.yaml",
        change,
    },
    // A DestinationRule alone (Istio's default route, which has no place in the file): its
    // connection pool.
    Back {
        from: &["namespaces/reviews-staging.yaml"],
        target: "reviews",
        service: "reviews",
        to: TargetFormat::Istio,
        file: "namespaces/reviews-staging.yaml",
        change: twice_the_connections,
    },
];

pub(crate) fn input(file: &str) -> Input {
    let path = workspace_root().join(CORPUS).join(file);
    Input {
        file: file.to_string(),
        text: std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    }
}

/// `inputs` imported as a new scenario: its text and the scenario.
pub(crate) fn imported(inputs: &[Input]) -> (String, Scenario) {
    let out = import::import(inputs, None, &Default::default(), &RunLimits::default())
        .unwrap_or_else(|e| panic!("import: {e}"));
    let scenario = parse("imported.ron", &out.text).expect("an import loads");
    (out.text, scenario)
}

/// The path of the call to `target` (the first, among the services' calls).
pub(crate) fn call_to(s: &Scenario, target: &str) -> String {
    s.services
        .iter()
        .flat_map(|(name, service)| {
            service
                .calls
                .iter()
                .enumerate()
                .map(move |(i, c)| (name, i, c))
        })
        .find(|(_, _, c)| c.target == target)
        .map(|(name, i, _)| format!("services.{name}.calls[{i}]"))
        .unwrap_or_else(|| panic!("no call to {target}"))
}

pub(crate) fn call_mut<'s>(s: &'s mut Scenario, path: &str) -> &'s mut Call {
    let (name, i) = path
        .strip_prefix("services.")
        .and_then(|p| p.strip_suffix(']'))
        .and_then(|p| p.rsplit_once(".calls["))
        .expect("a service's call");
    &mut s.services.get_mut(name).expect("the service").calls[i.parse::<usize>().unwrap()]
}

/// The call at `path` and its target's settings, as RON.
pub(crate) fn call_and_target(s: &Scenario, path: &str) -> String {
    let (name, i) = path
        .strip_prefix("services.")
        .and_then(|p| p.strip_suffix(']'))
        .and_then(|p| p.rsplit_once(".calls["))
        .expect("a service's call");
    let call = &s.services[name].calls[i.parse::<usize>().unwrap()];
    let target = &s.services[&call.target];
    ron::to_string(&(
        call.timeout,
        call.deadline,
        &call.stack,
        &target.balancer,
        &target.outlier,
        &target.health_check,
    ))
    .expect("a call serializes")
}

/// One more attempt for the call's retry (at most gRPC's 5), or else twice its deadline:
/// what the change was, in words.
fn change(call: &mut Call) -> String {
    for layer in &mut call.stack {
        if let Layer::Retry(r) = layer
            && r.max_attempts < 5
        {
            r.max_attempts += 1;
            return format!("max_attempts {}", r.max_attempts);
        }
    }
    // A request queued in Envoy's or Istio's pool waits until the route's timeout ends it:
    // the bulkhead's wait is the deadline, and moves with it.
    let deadline = call.deadline.expect("a call with a retry or a deadline");
    let longer = deadline.saturating_mul(2);
    for layer in &mut call.stack {
        if let Layer::Bulkhead(b) = layer
            && b.max_wait_duration == deadline
        {
            b.max_wait_duration = longer;
        }
    }
    call.deadline = Some(longer);
    format!("deadline {longer}")
}

/// Twice the connections of the call's bulkhead (a connection pool's limit).
fn twice_the_connections(call: &mut Call) -> String {
    for layer in &mut call.stack {
        if let Layer::Bulkhead(b) = layer {
            b.max_concurrent_calls *= 2;
            return format!("max_concurrent_calls {}", b.max_concurrent_calls);
        }
    }
    panic!("a call with a bulkhead")
}

/// The lines of `a` that `b` drops and the lines it adds.
pub(crate) fn changed_lines(a: &str, b: &str) -> (Vec<String>, Vec<String>) {
    let (mut dropped, mut added) = (Vec::new(), Vec::new());
    for c in similar::TextDiff::from_lines(a, b).iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Delete => dropped.push(c.to_string()),
            similar::ChangeTag::Insert => added.push(c.to_string()),
            similar::ChangeTag::Equal => {}
        }
    }
    (dropped, added)
}

fn check(back: &Back) {
    let inputs: Vec<Input> = back.from.iter().map(|f| input(f)).collect();
    let (text, scenario) = imported(&inputs);
    let call = call_to(&scenario, back.target);
    let against = Against {
        originals: vec![input(back.file)],
        scenario: Input {
            file: "imported.ron".into(),
            text,
        },
    };
    let export = |s: &Scenario| {
        export::export_against(
            s,
            "imported.ron",
            &call,
            back.to,
            Some(back.service),
            &against,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", back.file))
    };
    let unchanged = export(&scenario);
    assert_eq!(
        unchanged.text, against.originals[0].text,
        "{}: the unchanged call exported is the original:\n{}",
        back.file, unchanged.table
    );
    assert!(unchanged.diff.is_empty(), "{}", unchanged.diff);

    let mut changed = scenario.clone();
    let what = (back.change)(call_mut(&mut changed, &call));
    let out = export(&changed);
    // One value replaced is one line; a field the original left to its default, inserted,
    // is its line and those of the objects it is in.
    let (dropped, added) = changed_lines(&against.originals[0].text, &out.text);
    assert!(
        dropped.len() <= 1 && (1..=3).contains(&added.len()),
        "{}: {what} changes one field:\n{}\n{}",
        back.file,
        out.diff,
        out.table
    );
    assert!(!out.table.contains("not written back"), "{}", out.table);
    // Written back, the file conforms to its format's schema, as its reader reads it, as
    // well as the original did.
    let (format, reader) = corpus_format(back.file);
    let was = schema::problems(format, back.file, &against.originals[0].text, reader);
    let found = schema::problems(format, back.file, &out.text, reader);
    let added: Vec<&String> = found.iter().filter(|p| !was.contains(p)).collect();
    assert!(added.is_empty(), "{}: {what}: {added:#?}", back.file);
    // Imported again, the written-back file gives the changed call.
    let again: Vec<Input> = inputs
        .iter()
        .map(|i| {
            if i.file == back.file {
                Input {
                    file: i.file.clone(),
                    text: out.text.clone(),
                }
            } else {
                i.clone()
            }
        })
        .collect();
    let (_, reimported) = imported(&again);
    assert_eq!(
        call_and_target(&reimported, &call),
        call_and_target(&changed, &call),
        "{}: {what}, written back and imported again:\n{}",
        back.file,
        out.diff
    );
}

#[test]
fn a_call_exported_against_its_original_changes_only_what_the_scenario_changed() {
    for back in BACKS {
        check(back);
    }
}

/// Every file of the corpus is written back in a test: a call exported against it (`BACKS`),
/// or a change sent to it among the files of a split original (`SPLITS`).
#[test]
fn every_corpus_file_is_exported_against() {
    let tested: Vec<&str> = BACKS
        .iter()
        .map(|b| b.file)
        .chain(SPLITS.iter().flat_map(|s| s.files.iter().copied()))
        .collect();
    for name in corpus_files() {
        assert!(
            tested.contains(&name.as_str()),
            "{name} is exported against in no test of export_corpus.rs"
        );
    }
}

/// Spring's dotted keys at any depth, mixed with nesting (`resilience4j:` holding
/// `retry.instances.backendA:`, and `resilience4j.circuitbreaker.instances.backendA.…` as one
/// key): a change is written at the key that holds it, in place.
#[test]
fn a_change_is_written_under_springs_dotted_keys_in_place() {
    let original = Input {
        file: "application.yml".into(),
        text: "resilience4j:\n  retry.instances.backendA:\n    maxAttempts: 3\n    waitDuration: 100ms\nresilience4j.circuitbreaker.instances.backendA.failureRateThreshold: 50\n".into(),
    };
    let (text, scenario) = imported(std::slice::from_ref(&original));
    let call = call_to(&scenario, "backendA");
    let against = Against {
        originals: vec![original.clone()],
        scenario: Input {
            file: "imported.ron".into(),
            text,
        },
    };
    let mut changed = scenario.clone();
    for layer in &mut call_mut(&mut changed, &call).stack {
        match layer {
            Layer::Retry(r) => r.max_attempts = 4,
            Layer::Breaker(b) => b.failure_rate_threshold = 60.0,
            _ => {}
        }
    }
    let r4j = TargetFormat::Resilience4j;
    let out = export::export_against(
        &changed,
        "imported.ron",
        &call,
        r4j,
        Some("backendA"),
        &against,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.text,
        original
            .text
            .replace("maxAttempts: 3", "maxAttempts: 4")
            .replace("Threshold: 50", "Threshold: 60"),
        "{}\n{}",
        out.diff,
        out.table
    );
}
