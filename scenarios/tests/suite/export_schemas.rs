//! What `resim export` writes, checked against each format's published schema (vendored in
//! `scenarios/tests/schemas/`, checked by `support::schema`): every export snapshot, every
//! service of every import-corpus case exported to every format, and the corpus files
//! themselves. The controls show that the check can fail: a misspelt field, a value of the
//! wrong type and a duration the format does not read are each refused, in each format.
//! The exports written back into their originals (`--against`) are checked in
//! `export_corpus.rs`.

use crate::import_corpus::{CASES, CORPUS};
use crate::support::schema::{Reader, problems};
use crate::support::workspace_root;
use scenarios::export::{self, TargetFormat};
use scenarios::format::limits::RunLimits;
use scenarios::format::load::parse;
use scenarios::import::{self, Input};

const FORMATS: [(TargetFormat, &str); 4] = [
    (TargetFormat::Envoy, "envoy"),
    (TargetFormat::Istio, "istio"),
    (TargetFormat::Resilience4j, "resilience4j"),
    (TargetFormat::Grpc, "grpc"),
];

/// The name an export document of `format` has on disk (YAML, or JSON for gRPC).
fn file_of(format: TargetFormat) -> &'static str {
    match format {
        TargetFormat::Envoy => "envoy.yaml",
        TargetFormat::Istio => "istio.yaml",
        TargetFormat::Resilience4j => "application.yml",
        TargetFormat::Grpc => "service-config.json",
    }
}

/// `text` conforms to `format`'s schema as `reader` reads it; else the problems, with `what`.
fn conforms(format: TargetFormat, file: &str, text: &str, reader: Reader, what: &str) {
    let found = problems(format, file, text, reader);
    assert!(
        found.is_empty(),
        "{what} does not conform to the schema:\n{}\n---\n{text}",
        found.join("\n")
    );
}

/// Every `suite__export__*` snapshot's document (what `resim export` printed on stdout), in
/// the format its command exported to.
#[test]
fn every_export_snapshot_conforms_to_its_format_schema() {
    let dir = workspace_root().join("scenarios/tests/suite/snapshots");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("the snapshots") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("suite__export__") || name.contains("malformed") {
            continue;
        }
        let snap = std::fs::read_to_string(&path).expect("a snapshot");
        let to = snap
            .split("--to ")
            .nth(1)
            .and_then(|t| t.split(['"', ' ', ';']).next())
            .unwrap_or_else(|| panic!("{name}: its description names --to"));
        let (format, _) = FORMATS
            .iter()
            .find(|(_, n)| *n == to)
            .unwrap_or_else(|| panic!("{name}: --to {to}"));
        let body = snap.splitn(3, "---\n").nth(2).expect("the snapshot's body");
        let document = body.split("\n---- stderr ----").next().unwrap();
        conforms(*format, file_of(*format), document, Reader::Strict, &name);
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} export snapshots found");
}

/// Each service of each corpus case that calls others, exported whole
/// (`--call services.NAME`) to each format.
#[test]
fn every_corpus_service_exported_to_every_format_conforms() {
    let mut checked = 0;
    for case in CASES {
        let inputs: Vec<Input> = case.files.iter().map(|f| corpus_input(f)).collect();
        let out = import::import(&inputs, None, &Default::default(), &RunLimits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let scenario = parse("imported.ron", &out.text).expect("an import loads");
        for (name, service) in &scenario.services {
            if service.calls.is_empty() {
                continue;
            }
            for (format, to) in FORMATS {
                let call = format!("services.{name}");
                let exported = export::export(&scenario, "imported.ron", &call, format, None)
                    .unwrap_or_else(|e| panic!("{}: {call} to {to}: {e}", case.name));
                let what = format!("{}: {call} exported to {to}", case.name);
                conforms(
                    format,
                    file_of(format),
                    &exported.text,
                    Reader::Strict,
                    &what,
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} exports checked");
}

pub(crate) fn corpus_input(file: &str) -> Input {
    let path = workspace_root().join(CORPUS).join(file);
    Input {
        file: file.to_string(),
        text: std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    }
}

/// The format of a corpus file and the reader it was written for.
pub(crate) fn corpus_format(file: &str) -> (TargetFormat, Reader) {
    match file.split('/').next().unwrap() {
        "bookinfo" | "namespaces" => (TargetFormat::Istio, Reader::Strict),
        "front-proxy" | "envoy-runtime" => (TargetFormat::Envoy, Reader::Strict),
        "grpc-go" => (TargetFormat::Grpc, Reader::GrpcGo),
        "resilience4j" => (TargetFormat::Resilience4j, Reader::Strict),
        other => panic!("{other}: a corpus directory this test does not know"),
    }
}

/// The corpus files conform, as the implementation they were written for reads them, save
/// what they were written to show: grpc-go's capitalised keys, which grpc-java's parser
/// (protobuf's JSON mapping) refuses, and the resilience4j 0.x names, which resilience4j 2
/// does not bind (Spring ignores them: the instance runs on defaults).
#[test]
fn the_corpus_files_conform_save_what_they_show() {
    for case in CASES {
        for file in case.files {
            let (format, reader) = corpus_format(file);
            let text = corpus_input(file).text;
            let found = problems(format, file, &text, reader);
            let expected: &[&str] = match *file {
                "resilience4j/application.yml" => &[
                    "circuitbreaker.instances.backendB.ringBufferSizeInClosedState: unknown field",
                    "circuitbreaker.instances.backendB.ringBufferSizeInHalfOpenState: unknown field",
                    "circuitbreaker.instances.backendB.waitInterval: unknown field",
                    "retry.instances.backendB.maxRetryAttempts: unknown field",
                ],
                _ => &[],
            };
            assert_eq!(found.len(), expected.len(), "{file}:\n{}", found.join("\n"));
            for (f, e) in found.iter().zip(expected) {
                assert!(f.contains(e), "{file}: {f} is not {e}");
            }
        }
    }
    let grpc_go = corpus_input("grpc-go/service-config.json").text;
    let strict = problems(TargetFormat::Grpc, "grpc-go", &grpc_go, Reader::Strict);
    assert_eq!(strict.len(), 5, "{}", strict.join("\n"));
    assert!(
        strict[0].contains("methodConfig[0].retryPolicy."),
        "{}",
        strict[0]
    );
}

/// `text` with `from` replaced by `to`: the problems found in it.
fn broken(format: TargetFormat, text: &str, from: &str, to: &str) -> Vec<String> {
    assert!(
        text.contains(from),
        "{from:?} is not in the control document"
    );
    problems(
        format,
        file_of(format),
        &text.replacen(from, to, 1),
        Reader::Strict,
    )
}

/// A document's problems must name the field and say what is wrong.
fn refused(found: &[String], path: &str, what: &str) {
    assert!(
        found.iter().any(|p| p.contains(path) && p.contains(what)),
        "{path} ({what}) is not among:\n{}",
        found.join("\n")
    );
}

/// The controls: each format's export, conforming, then with one field misspelt, one value
/// of the wrong type, and one out of range or in a syntax the format does not read.
#[test]
fn a_misspelt_field_or_a_wrong_type_is_refused_in_every_format() {
    let exported = |fixture: &str, to: TargetFormat| {
        let input = Input {
            file: fixture.rsplit('/').next().unwrap().to_string(),
            text: std::fs::read_to_string(
                workspace_root()
                    .join("scenarios/tests/import")
                    .join(fixture),
            )
            .expect("the fixture"),
        };
        let out = import::import(&[input], None, &Default::default(), &RunLimits::default())
            .expect("the fixture imports");
        let scenario = parse("imported.ron", &out.text).expect("it loads");
        let text = export::export(&scenario, "imported.ron", "services.app.calls[0]", to, None)
            .expect("it exports")
            .text;
        conforms(to, file_of(to), &text, Reader::Strict, fixture);
        text
    };

    let envoy = exported("envoy/hedge.yaml", TargetFormat::Envoy);
    let e = TargetFormat::Envoy;
    refused(
        &broken(e, &envoy, "max_requests:", "max_request:"),
        "thresholds[0].max_request",
        "unknown field",
    );
    refused(
        &broken(e, &envoy, "num_retries: 2", "num_retries: [2]"),
        "retry_policy.num_retries",
        "expected integer or string",
    );
    refused(
        &broken(e, &envoy, "num_retries: 2", "num_retries: two"),
        "retry_policy.num_retries",
        "expected a uint32",
    );
    refused(
        &broken(e, &envoy, "timeout: 1s", "timeout: 1000ms"),
        "routes[0].route.timeout",
        "duration in seconds",
    );
    refused(
        &broken(
            e,
            &envoy,
            "lb_policy: LEAST_REQUEST",
            "lb_policy: LEAST_REQUESTS",
        ),
        "lb_policy",
        "is not one of",
    );
    refused(
        &broken(e, &envoy, "  name: search\n", "  nam: search\n"),
        "resources[0]",
        "name is required",
    );

    // protoc-gen-validate's ranges, which Envoy applies at load.
    for (from, to, path, what) in [
        (
            "connect_timeout: 5s",
            "connect_timeout: 0s",
            "resources[0].connect_timeout",
            "must be more than 0s (protoc-gen-validate, envoy/config/cluster/v3/cluster.proto:883)",
        ),
        (
            "max_ejection_percent: 10",
            "max_ejection_percent: 101",
            "outlier_detection.max_ejection_percent",
            "must be at most 100",
        ),
        (
            "base_interval: 0.025s",
            "base_interval: 0s",
            "retry_back_off.base_interval",
            "must be more than 0s",
        ),
        (
            "port_value: 80",
            "port_value: 70000",
            "socket_address.port_value",
            "must be at most 65535",
        ),
    ] {
        refused(&broken(e, &envoy, from, to), path, what);
    }
    let budget = r#"{"resources": [{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "db", "circuit_breakers": {"thresholds": [{"retry_budget": {"budget_percent": {"value": 20.0}}}]}}]}"#;
    conforms(e, file_of(e), budget, Reader::Strict, "a retry budget");
    refused(
        &broken(e, budget, "20.0", "150.0"),
        "budget_percent.value",
        "must be within [0, 100]",
    );

    let istio = exported("istio/retries.yaml", TargetFormat::Istio);
    let i = TargetFormat::Istio;
    refused(
        &broken(i, &istio, "retryOn:", "retry_on:"),
        "http[0].retries.retry_on",
        "unknown field",
    );
    refused(
        &broken(i, &istio, "attempts: 2", "attempts: two"),
        "retries.attempts",
        "expected integer",
    );
    refused(
        &broken(i, &istio, "perTryTimeout: 300ms", "perTryTimeout: 0.5ms"),
        "retries.perTryTimeout",
        "valid duration",
    );
    refused(
        &broken(i, &istio, "perTryTimeout: 300ms", "perTryTimeout: 300"),
        "retries.perTryTimeout",
        "expected string",
    );
    refused(
        &broken(i, &istio, "simple: LEAST_REQUEST", "simple: LEASTREQUEST"),
        "loadBalancer.simple",
        "is not one of",
    );
    refused(
        &broken(i, &istio, "  host: db\n", "  hots: db\n"),
        "spec",
        "host is required",
    );

    // Istio's CEL rules on a workload selector's labels.
    let selector = "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: db\nspec:\n  host: db\n  workloadSelector:\n    matchLabels:\n      app: web\n";
    conforms(
        i,
        file_of(i),
        selector,
        Reader::Strict,
        "a workload selector",
    );
    refused(
        &broken(i, selector, "app: web", "app*: web"),
        "matchLabels",
        "\"app*\"",
    );
    refused(
        &broken(i, selector, "app: web", "app: w*"),
        "matchLabels",
        "w*",
    );

    let grpc = exported("grpc/hedging.json", TargetFormat::Grpc);
    let g = TargetFormat::Grpc;
    refused(
        &broken(g, &grpc, "\"maxAttempts\"", "\"maxAttempt\""),
        "hedgingPolicy.maxAttempt",
        "unknown field",
    );
    refused(
        &broken(g, &grpc, "\"maxAttempts\": 3", "\"maxAttempts\": true"),
        "hedgingPolicy.maxAttempts",
        "expected integer or string",
    );
    refused(
        &broken(
            g,
            &grpc,
            "\"timeout\": \"0.800s\"",
            "\"timeout\": \"800ms\"",
        ),
        "methodConfig[0].timeout",
        "duration in seconds",
    );

    let r4j = exported("resilience4j/demo.yml", TargetFormat::Resilience4j);
    let r = TargetFormat::Resilience4j;
    refused(
        &broken(r, &r4j, "maxAttempts:", "maxAttempt:"),
        "retry.instances.inventory.maxAttempt",
        "unknown field",
    );
    refused(
        &broken(r, &r4j, "maxAttempts: 3", "maxAttempts: three"),
        "maxAttempts",
        "converts to integer",
    );
    refused(
        &broken(r, &r4j, "waitDuration: 250ms", "waitDuration: 0.25s"),
        "waitDuration",
        "a duration as Spring reads one",
    );
    refused(
        &broken(r, &r4j, "ratelimiter:", "ratelimitter:"),
        "resilience4j.ratelimitter",
        "unknown field",
    );
}

/// Spring's relaxed names and `.properties` are read as Spring reads them: kebab-case names
/// and text values conform, a misspelt kebab-case name does not.
#[test]
fn resilience4j_properties_are_read_as_spring_binds_them() {
    let r = TargetFormat::Resilience4j;
    let good = "resilience4j.retry.instances.a.max-attempts=4\n\
                resilience4j.retry.instances.a.retry-exceptions[0]=java.io.IOException\n\
                resilience4j.circuitbreaker.instances.a.sliding-window-type=time-based\n";
    assert_eq!(
        problems(r, "application.properties", good, Reader::Strict),
        Vec::<String>::new()
    );
    let bad = good.replace("max-attempts", "max-attemps");
    refused(
        &problems(r, "application.properties", &bad, Reader::Strict),
        "instances.a.max-attemps",
        "unknown field",
    );
    let bad = good.replace("time-based", "sliding");
    refused(
        &problems(r, "application.properties", &bad, Reader::Strict),
        "sliding-window-type",
        "one of",
    );
}

/// Found by the schema check: an instance name with a dot (an Istio host in a namespace,
/// `reviews.prod`) was written as a plain key, which Spring splits at the dot (an instance
/// `reviews` on defaults, and `prod.maxAttempts` bound to nothing). It is written in Spring's
/// brackets, `"[reviews.prod]"`, conforms, and is read back as the same name.
#[test]
fn a_dotted_instance_name_is_written_in_brackets_and_read_back() {
    let inputs: Vec<Input> = [
        "namespaces/reviews-prod.yaml",
        "namespaces/reviews-staging.yaml",
    ]
    .iter()
    .map(|f| corpus_input(f))
    .collect();
    let out = import::import(&inputs, None, &Default::default(), &RunLimits::default())
        .expect("the corpus imports");
    let scenario = parse("imported.ron", &out.text).expect("it loads");
    let r = TargetFormat::Resilience4j;
    let exported = export::export(&scenario, "imported.ron", "services.app", r, None)
        .expect("it exports")
        .text;
    assert!(exported.contains("\"[reviews.prod]\":"), "{exported}");
    conforms(
        r,
        "application.yml",
        &exported,
        Reader::Strict,
        "the export",
    );
    let back = Input {
        file: "application.yml".into(),
        text: exported.clone(),
    };
    let again = import::import(&[back], None, &Default::default(), &RunLimits::default())
        .unwrap_or_else(|e| panic!("{e}\n{exported}"));
    let again = parse("again.ron", &again.text).expect("it loads");
    let targets = |s: &scenarios::Scenario| {
        let mut t: Vec<String> = s
            .services
            .values()
            .flat_map(|v| v.calls.iter().map(|c| c.target.clone()))
            .collect();
        t.sort();
        t
    };
    assert_eq!(targets(&again), targets(&scenario));
}

/// Every field the range rules name is a field of Envoy's extract.
#[test]
fn the_envoy_range_rules_name_fields_of_the_schema() {
    let missing = crate::support::schema::range_rules_name_fields_of_the_extract();
    assert!(missing.is_empty(), "{missing:?}");
}
