//! `resim import`'s command line as a user meets it: the help names every format, `.properties`,
//! several files and `-`; `-` reads stdin; `--table json` is the mapping table for tools;
//! `--into` takes a library scenario's name as `run` does, `--service` says which upstream
//! configures the call (a gRPC service `shop.Db` for a call to `db`), and the scenario's other
//! calls keep their text byte for byte.

use crate::support::{self, resim_in, workspace_root};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

const CORPUS: &str = "scenarios/tests/import-corpus";

/// `resim import ARGS` from the workspace root.
fn import(args: &[&str]) -> support::Resim {
    let mut all = vec!["import"];
    all.extend_from_slice(args);
    resim_in(&workspace_root(), &all)
}

/// A scratch file of this test process, holding `text`.
fn scratch(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("resim-import-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn help_lists_every_format_properties_several_files_and_stdin() {
    let out = import(&["--help"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for shown in [
        "Envoy",
        "Istio",
        "resilience4j",
        "gRPC",
        ".properties",
        "Several files",
        "`-` reads stdin",
        "--service",
        "--table",
        "library scenario",
    ] {
        assert!(
            out.stdout.contains(shown),
            "help shows {shown:?}:\n{}",
            out.stdout
        );
    }
    assert!(
        !out.stdout.contains("(Envoy v3, YAML or JSON) into"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_dash_reads_stdin() {
    let text = std::fs::read_to_string(
        workspace_root().join(format!("{CORPUS}/grpc-go/service-config.json")),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_resim"))
        .args(["import", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.starts_with("resim import: stdin (grpc)"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("max_attempts: 4"),
        "{stderr}"
    );
}

#[test]
fn the_table_as_json_names_each_source_with_its_place() {
    let file = format!("{CORPUS}/namespaces/reviews-prod.yaml");
    let out = import(&[&file, "--table", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let table: Value = serde_json::from_str(&out.stderr).expect("the table is JSON");
    assert_eq!(table["formats"][0], "istio");
    let attempts = table["imported"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["source"]["path"] == "[1].spec.http[0].retries.attempts")
        .expect("retries.attempts is imported");
    assert_eq!(attempts["source"]["file"], file.as_str());
    assert_eq!(attempts["source"]["line"], 31);
    assert_eq!(
        attempts["path"],
        "services.app.calls[0].stack[0].max_retries"
    );
    assert_eq!(attempts["value"], "3");
    assert!(
        table["not_imported"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["reason"].as_str().is_some_and(|r| !r.is_empty()))
    );
}

/// A scenario whose api calls `db` and `cache`, the second written as its team writes it.
const TWO_CALLS: &str = r#"// Two calls of api: an import into one keeps the other as written.
Scenario(
    name: "two",
    duration: "10s",
    clients: {
        "users": (load: Open(rate: Constant("50/s")), call: (target: "api")),
    },
    services: {
        "api": (
            workers: 10,
            work: Exponential(mean: "1ms"),
            call_mode: Pick,
            calls: [
                (target: "db", timeout: "1s"), // the database
                (target: "cache",   timeout: "50ms"),   // the cache, as its team writes it
            ],
        ),
        "db": (workers: 20, work: Exponential(mean: "5ms")),
        "cache": (workers: 20, work: Exponential(mean: "1ms")),
    },
)
"#;

/// A gRPC service config for `shop.Db`: the scenario calls it `db`.
const SHOP_DB: &str = r#"{"methodConfig": [{"name": [{"service": "shop.Db"}], "timeout": "0.5s",
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

#[test]
fn service_names_the_upstream_that_configures_the_call_and_other_calls_keep_their_text() {
    let into = scratch("two.ron", TWO_CALLS);
    let config = scratch("shop.json", SHOP_DB);
    let call = "services.api.calls[0]";
    // Without --service the call's target names no service of the file: the error says which
    // there are.
    let refused = import(&[&config, "--into", &into, "--call", call]);
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("shop.Db"), "{}", refused.stderr);
    let out = import(&[
        &config,
        "--into",
        &into,
        "--call",
        call,
        "--service",
        "shop.Db",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("max_attempts: 3"), "{}", out.stdout);
    // The scenario's names stay the user's, and the other call is as it was, byte for byte.
    assert!(out.stdout.contains("target: \"db\""), "{}", out.stdout);
    assert!(!out.stdout.contains("shop.Db\","), "{}", out.stdout);
    let other = r#"                (target: "cache",   timeout: "50ms"),   // the cache, as its team writes it"#;
    assert!(out.stdout.contains(other), "{}", out.stdout);
    let check = resim_in(
        &workspace_root(),
        &["check", &scratch("two-out.ron", &out.stdout)],
    );
    assert_eq!(check.code, 0, "{}", check.stderr);
}

#[test]
fn into_takes_a_library_scenario_as_run_does() {
    let config = format!("{CORPUS}/grpc-go/service-config.json");
    let call = "clients.users.call";
    let out = import(&[
        &config,
        "--into",
        "retry-storm",
        "--call",
        call,
        "--service",
        "grpc.examples.echo.Echo",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("max_attempts: 4"), "{}", out.stdout);
    assert!(
        out.stdout.contains("name: \"retry-storm\""),
        "{}",
        out.stdout
    );
}

/// Two hosts whose routes call each other: no request comes in from outside, and resim's calls
/// make no cycle. The import says so in the configuration's words, not as a bug of its own.
#[test]
fn a_cycle_of_routes_is_refused_in_the_configurations_words() {
    let route = |host: &str, caller: &str| {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{name: {host}}}\nspec:\n  hosts: [{host}]\n  http:\n  - match: [{{sourceLabels: {{app: {caller}}}}}]\n    route: [{{destination: {{host: {host}}}}}]\n"
        )
    };
    let file = scratch(
        "cycle.yaml",
        &format!("{}---\n{}", route("a", "b"), route("b", "a")),
    );
    let out = import(&[&file]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("cycle"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("bug of resim import"),
        "{}",
        out.stderr
    );
}
