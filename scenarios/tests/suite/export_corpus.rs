//! `resim export --against ORIGINAL` on the import corpus (`scenarios/tests/import-corpus/`):
//! each call written back into the file that configures it, as a user applies an export.
//!
//! - Unchanged, the export is the original, byte for byte (every field of the original equal,
//!   its comments and order kept), and the diff is empty.
//! - Changed (the call's retry allows one more attempt, or else its deadline doubles), the
//!   export differs from the original in that field alone (its line, or the lines of a field
//!   the original left to its default), and importing it gives the changed scenario:
//!   import → change → export → import is the same scenario.
//!
//! - Written back, the file conforms to its format's schema as well as the original did (no
//!   problem the original does not have: the resilience4j 0.x names of `application.yml` are
//!   the original's).
//!
//! - Against an original split across files (bookinfo's DestinationRules and VirtualServices;
//!   resilience4j's YAML and `.properties`), each change goes into the file that configures
//!   it, a file no change reaches stays byte for byte, and a property both Spring files set is
//!   written where Spring reads it (the `.properties` file), said so.
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
use crate::support::{resim_in, schema, workspace_root};

const CORPUS: &str = "scenarios/tests/import-corpus";

/// A call of a corpus scenario written back into one file: the scenario imported from
/// `from`, its call to `target` exported to `to` as the upstream `service`, against `file`.
struct Back {
    from: &'static [&'static str],
    target: &'static str,
    service: &'static str,
    to: TargetFormat,
    file: &'static str,
}

const BACKS: &[Back] = &[
    Back {
        from: &["front-proxy/envoy.yaml"],
        target: "search",
        service: "search",
        to: TargetFormat::Envoy,
        file: "front-proxy/envoy.yaml",
    },
    Back {
        from: &["front-proxy/envoy.yaml"],
        target: "cart",
        service: "cart",
        to: TargetFormat::Envoy,
        file: "front-proxy/envoy.yaml",
    },
    Back {
        from: &["envoy-runtime/filters-off.yaml"],
        target: "db",
        service: "db",
        to: TargetFormat::Envoy,
        file: "envoy-runtime/filters-off.yaml",
    },
    Back {
        from: &[
            "bookinfo/destination-rule-all.yaml",
            "bookinfo/virtual-service-all-v1.yaml",
        ],
        target: "reviews",
        service: "reviews/v1",
        to: TargetFormat::Istio,
        file: "bookinfo/virtual-service-all-v1.yaml",
    },
    Back {
        from: &["namespaces/reviews-prod.yaml"],
        target: "reviews",
        service: "reviews",
        to: TargetFormat::Istio,
        file: "namespaces/reviews-prod.yaml",
    },
    Back {
        from: &["grpc-go/service-config.json"],
        target: "grpc.examples.echo.Echo",
        service: "grpc.examples.echo.Echo",
        to: TargetFormat::Grpc,
        file: "grpc-go/service-config.json",
    },
    Back {
        from: &["resilience4j/application.yml"],
        target: "backendA",
        service: "backendA",
        to: TargetFormat::Resilience4j,
        file: "resilience4j/application.yml",
    },
    Back {
        from: &["resilience4j/application.properties"],
        target: "backendA",
        service: "backendA",
        to: TargetFormat::Resilience4j,
        file: "resilience4j/application.properties",
    },
];

fn input(file: &str) -> Input {
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
fn call_to(s: &Scenario, target: &str) -> String {
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

fn call_mut<'s>(s: &'s mut Scenario, path: &str) -> &'s mut Call {
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
    let what = change(call_mut(&mut changed, &call));
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

/// The files `files` of the corpus imported together, the call to `target` changed by
/// `edit`, and exported as `service` against all of them: the export, the changed scenario
/// and the inputs.
fn split(
    files: &[&str],
    target: &str,
    service: &str,
    to: TargetFormat,
    edit: &dyn Fn(&mut Scenario, &str),
) -> (export::Exported, Scenario, Vec<Input>, String) {
    let inputs: Vec<Input> = files.iter().map(|f| input(f)).collect();
    let (text, scenario) = imported(&inputs);
    let call = call_to(&scenario, target);
    let against = Against {
        originals: inputs.clone(),
        scenario: Input {
            file: "imported.ron".into(),
            text,
        },
    };
    let export = |s: &Scenario| {
        export::export_against(s, "imported.ron", &call, to, Some(service), &against)
            .unwrap_or_else(|e| panic!("{files:?}: {e}"))
    };
    let unchanged = export(&scenario);
    for (w, i) in unchanged.files.iter().zip(&inputs) {
        assert_eq!(
            w.text, i.text,
            "{}: unchanged:\n{}",
            i.file, unchanged.table
        );
        assert!(!w.changed);
    }
    let mut changed = scenario.clone();
    edit(&mut changed, &call);
    let out = export(&changed);
    // Imported again, the files written back give the changed call.
    let again: Vec<Input> = out
        .files
        .iter()
        .map(|w| Input {
            file: w.file.clone(),
            text: w.text.clone(),
        })
        .collect();
    let (_, reimported) = imported(&again);
    assert_eq!(
        call_and_target(&reimported, &call),
        call_and_target(&changed, &call),
        "{files:?}, written back and imported again:\n{}\n{}",
        out.table,
        out.diff
    );
    for (w, i) in out.files.iter().zip(&inputs) {
        let (format, reader) = corpus_format(&i.file);
        let was = schema::problems(format, &i.file, &i.text, reader);
        let found = schema::problems(format, &i.file, &w.text, reader);
        let added: Vec<&String> = found.iter().filter(|p| !was.contains(p)).collect();
        assert!(added.is_empty(), "{}: {added:#?}", i.file);
    }
    (out, changed, inputs, call)
}

/// The lines of the written-back `file` of `out` that differ from its original, dropped and
/// added.
fn file_lines(out: &export::Exported, inputs: &[Input], file: &str) -> (Vec<String>, Vec<String>) {
    let i = inputs
        .iter()
        .position(|i| i.file.ends_with(file))
        .expect("the file");
    changed_lines(&inputs[i].text, &out.files[i].text)
}

/// One more attempt for the call's retry.
fn one_more_attempt(s: &mut Scenario, call: &str) {
    for layer in &mut call_mut(s, call).stack {
        if let Layer::Retry(r) = layer {
            r.max_attempts += 1;
        }
    }
}

/// The first of two files left byte for byte, the second changed.
fn only_the_second_changed(out: &export::Exported, inputs: &[Input]) {
    assert!(
        !out.files[0].changed && out.files[1].changed,
        "{}",
        out.table
    );
    assert_eq!(out.files[0].text, inputs[0].text);
}

const BOOKINFO: [&str; 2] = [
    "bookinfo/destination-rule-all.yaml",
    "bookinfo/virtual-service-all-v1.yaml",
];

/// Istio's split layout: a change of the route goes into the VirtualService's file and leaves
/// the DestinationRules' byte for byte; a change of the host's outlier ejection goes into the
/// DestinationRule's, into the subset the call is routed to (which has no outlierDetection of
/// its own, so the host's is written there whole with the change, as Istio replaces a
/// component whole), and both files change when both are changed.
#[test]
fn against_split_istio_files_each_change_goes_to_its_own_file() {
    let (out, _, inputs, _) = split(
        &BOOKINFO,
        "reviews",
        "reviews/v1",
        TargetFormat::Istio,
        &one_more_attempt,
    );
    only_the_second_changed(&out, &inputs);
    assert!(
        out.table.contains("written into bookinfo/destination-rule-all.yaml: nothing changed (left as it was, byte for byte)"),
        "{}",
        out.table
    );
    assert!(
        out.diff
            .contains("+++ bookinfo/virtual-service-all-v1.yaml (exported)"),
        "{}",
        out.diff
    );

    let both = |s: &mut Scenario, call: &str| {
        one_more_attempt(s, call);
        let target = call_mut(s, call).target.clone();
        let outlier = s
            .services
            .get_mut(&target)
            .unwrap()
            .outlier
            .as_mut()
            .expect("an outlier");
        outlier.consecutive_failures += 1;
    };
    let (out, _, inputs, _) = split(
        &BOOKINFO,
        "reviews",
        "reviews/v1",
        TargetFormat::Istio,
        &both,
    );
    assert!(out.files.iter().all(|w| w.changed), "{}", out.table);
    let (dropped, added) = file_lines(&out, &inputs, "destination-rule-all.yaml");
    // The subset's first key moves to the line after the block inserted before it.
    assert_eq!(dropped, ["  - name: v1\n"], "{}", out.diff);
    assert!(
        added.contains(&"    name: v1\n".to_string()),
        "{}",
        out.diff
    );
    // The subset's entry gains the host's outlierDetection, with consecutive5xxErrors 4.
    assert!(
        added.iter().any(|l| l.contains("outlierDetection:"))
            && added.iter().any(|l| l.contains("consecutive5xxErrors: 4"))
            && added.iter().any(|l| l.contains("interval: 10s")),
        "{added:?}\n{}",
        out.diff
    );
    assert!(
        out.table
            .contains("replaces the host's whole with a subset's"),
        "{}",
        out.table
    );
    let (dropped, added) = file_lines(&out, &inputs, "virtual-service-all-v1.yaml");
    assert!(
        dropped.len() <= 1 && (1..=3).contains(&added.len()),
        "{}",
        out.diff
    );
}

const SPRING: [&str; 2] = [
    "resilience4j/application.yml",
    "resilience4j/application.properties",
];

/// Spring's YAML and `.properties`: a property the `.properties` file sets is changed there
/// (the YAML untouched, byte for byte), one the YAML alone sets in the YAML; one neither sets
/// at the instance goes to the `.properties` file when both write the instance's block (the
/// higher precedence); one both set is written into the `.properties` file, whose value
/// Spring reads, and the table says so.
#[test]
fn against_spring_yaml_and_properties_each_change_goes_where_spring_reads_it() {
    let (out, _, inputs, _) = split(
        &SPRING,
        "backendA",
        "backendA",
        TargetFormat::Resilience4j,
        &one_more_attempt,
    );
    only_the_second_changed(&out, &inputs);
    assert_eq!(
        file_lines(&out, &inputs, "application.properties"),
        (
            vec!["resilience4j.retry.instances.backendA.max-attempts=4\n".to_string()],
            vec!["resilience4j.retry.instances.backendA.max-attempts=5\n".to_string()]
        ),
        "{}",
        out.diff
    );

    let delay = |s: &mut Scenario, call: &str| {
        for layer in &mut call_mut(s, call).stack {
            if let Layer::Retry(r) = layer
                && let patterns::backoff::Strategy::Constant { delay } = &mut r.backoff.strategy
            {
                *delay = delay.saturating_mul(3);
            }
        }
    };
    // The limiter is set in the YAML alone (its instance's block), the attempts in the
    // `.properties` file: each is changed where it is.
    let both = |s: &mut Scenario, call: &str| {
        one_more_attempt(s, call);
        for layer in &mut call_mut(s, call).stack {
            if let Layer::Limiter(patterns::limiter::LimiterConfig::FixedWindow(l)) = layer {
                l.limit *= 2;
            }
        }
    };
    let (out, _, inputs, _) = split(
        &SPRING,
        "backendA",
        "backendA",
        TargetFormat::Resilience4j,
        &both,
    );
    assert!(out.files.iter().all(|w| w.changed), "{}", out.table);
    let (dropped, added) = file_lines(&out, &inputs, "application.yml");
    assert_eq!(
        (dropped, added),
        (
            vec!["      limitForPeriod: 10\n".to_string()],
            vec!["      limitForPeriod: 20\n".to_string()]
        ),
        "{}",
        out.diff
    );
    // A property no file sets for the instance (its wait, from the YAML's `configs.default`)
    // goes to the file of higher precedence when both write the instance's block.
    let (out, _, inputs, _) = split(
        &SPRING,
        "backendA",
        "backendA",
        TargetFormat::Resilience4j,
        &delay,
    );
    assert!(!out.files[0].changed, "{}", out.table);
    let (dropped, added) = file_lines(&out, &inputs, "application.properties");
    assert!(
        dropped.is_empty()
            && added == ["resilience4j.retry.instances.backendA.waitDuration=300ms\n"],
        "{}",
        out.diff
    );

    let (out, _, inputs, _) = split(
        &SPRING,
        "backendB",
        "backendB",
        TargetFormat::Resilience4j,
        &delay,
    );
    only_the_second_changed(&out, &inputs);
    assert!(
        out.table.contains("also set in resilience4j/application.yml; written into resilience4j/application.properties, whose value Spring reads: Spring reads a .properties file over a YAML one"),
        "{}",
        out.table
    );
}

/// The command line: `--against A B` writes both files back into `--out DIR`, under their own
/// names (the one no change reaches byte for byte), with the table and each file's diff on
/// stderr; without `--out` it says to give a directory (exit code 2).
#[test]
fn against_several_files_writes_each_into_the_out_directory() {
    let root = workspace_root();
    let dir = std::env::temp_dir().join(format!("resim-against-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ron = dir.join("bookinfo.ron").to_string_lossy().into_owned();
    let files = BOOKINFO.map(|f| format!("{CORPUS}/{f}"));
    let out = resim_in(&root, &["import", &files[0], &files[1], "--out", &ron]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut args = vec![
        "export",
        &ron,
        "--call",
        "services.app.calls[1]",
        "--to",
        "istio",
        "--service",
        "reviews/v1",
        "--set",
        "services.app.calls[1].stack[0].max_retries=3",
        "--against",
        &files[0],
        &files[1],
    ];
    let out = resim_in(&root, &args);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("give --out DIR"), "{}", out.stderr);
    let written = dir.join("written").to_string_lossy().into_owned();
    args.extend(["--out", &written]);
    let out = resim_in(&root, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let read = |f: &str| std::fs::read_to_string(std::path::Path::new(f)).unwrap();
    let rule = read(&format!("{written}/destination-rule-all.yaml"));
    assert_eq!(rule, read(&root.join(&files[0]).to_string_lossy()));
    let routes = read(&format!("{written}/virtual-service-all-v1.yaml"));
    let (dropped, added) = changed_lines(&read(&root.join(&files[1]).to_string_lossy()), &routes);
    // The retries inserted before the route's first key, which moves to the next line.
    assert_eq!(dropped, ["  - route:\n"]);
    assert_eq!(
        added,
        ["  - retries:\n", "      attempts: 3\n", "    route:\n"]
    );
    for shown in [
        "destination-rule-all.yaml: nothing changed (left as it was, byte for byte)",
        "virtual-service-all-v1.yaml: only the fields the scenario changed (the diff below)",
        "+++ scenarios/tests/import-corpus/bookinfo/virtual-service-all-v1.yaml (exported)",
    ] {
        assert!(out.stderr.contains(shown), "{shown}:\n{}", out.stderr);
    }
    std::fs::remove_dir_all(&dir).ok();
}
