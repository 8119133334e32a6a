//! `--set PATH=VALUE` and a file's `variants`: an overridden scenario reads like a file that
//! says the same, and a bad override is one line that names it.

use scenarios::Scenario;
use scenarios::library;
use scenarios::limits::Limits;
use scenarios::overrides::{Override, Overrides, parse_overridden};
use scenarios::schema::{Layer, Load};
use std::process::Command;

/// The library scenario `name` with `sets` (and a variant) applied, or the error as a user
/// reads it.
fn check(name: &str, variant: Option<&str>, sets: &[&str]) -> Result<Scenario, String> {
    let entry = library::find(name).expect("a library scenario");
    let overrides = Overrides {
        variant: variant.map(str::to_string),
        sets: sets
            .iter()
            .map(|s| s.parse::<Override>().unwrap())
            .collect(),
    };
    parse_overridden(entry.name, entry.text, &Limits::default(), &overrides)
        .map_err(|e| e.to_string())
}

fn error(name: &str, sets: &[&str]) -> String {
    check(name, None, sets).expect_err("the override is refused")
}

#[test]
fn a_value_is_replaced_where_the_path_points() {
    let s = check(
        "retry-storm",
        None,
        &[
            "services.api.workers=32",
            "clients.users.call.stack[0].max_attempts=5",
            "duration=\"45s\"",
        ],
    )
    .unwrap();
    assert_eq!(s.services["api"].workers, 32);
    assert_eq!(s.duration.to_string(), "45s");
    let Layer::Retry(retry) = &s.clients["users"].call.stack[0] else {
        panic!("the stack still starts with a retry")
    };
    assert_eq!(retry.max_attempts, 5);
    // Everything else is as the file says.
    let plain = check("retry-storm", None, &[]).unwrap();
    assert_eq!(s.services["db"], plain.services["db"]);
    assert_eq!(s.faults, plain.faults);
}

#[test]
fn a_field_the_file_leaves_out_is_written_in() {
    let plain = check("retry-storm", None, &[]).unwrap();
    let s = check(
        "retry-storm",
        None,
        &["bucket=\"250ms\"", "services.db.replicas=3"],
    )
    .unwrap();
    assert_ne!(plain.bucket, s.bucket);
    assert_eq!(s.bucket.to_string(), "250ms");
    assert_eq!(s.services["db"].replicas, 3);
}

#[test]
fn a_later_override_wins() {
    let s = check(
        "retry-storm",
        None,
        &["services.api.workers=32", "services.api.workers=64"],
    )
    .unwrap();
    assert_eq!(s.services["api"].workers, 64);
}

#[test]
fn a_whole_structure_can_be_set_in_ron() {
    let s = check(
        "retry-storm",
        None,
        &["clients.users.load=Open(rate: Constant(\"100/s\"))"],
    )
    .unwrap();
    let Load::Open { .. } = s.clients["users"].load else {
        panic!("still an open load")
    };
    assert_ne!(
        s.clients["users"].load,
        check("retry-storm", None, &[]).unwrap().clients["users"].load
    );
}

#[test]
fn a_value_of_the_wrong_type_is_the_parsers_error_about_the_override() {
    assert_eq!(
        error("retry-storm", &["services.api.workers=x"]),
        "retry-storm: --set services.api.workers=x: expected integer"
    );
}

#[test]
fn an_impossible_value_is_the_validators_error_about_the_override() {
    assert_eq!(
        error("retry-storm", &["services.api.workers=0"]),
        "retry-storm: --set services.api.workers=0: must be at least 1, got 0"
    );
    // An error elsewhere that an override caused says which overrides applied.
    let e = error("retry-storm", &["duration=\"5s\""]);
    assert!(e.starts_with("retry-storm: faults[0].at: "), "{e}");
    assert!(e.ends_with("(with --set duration=\"5s\")"), "{e}");
}

#[test]
fn an_unknown_path_lists_what_is_there() {
    let e = error("retry-storm", &["services.api.wrkers=3"]);
    assert!(e.starts_with("retry-storm: --set services.api.wrkers=3: unknown field `wrkers` in a service; expected one of `replicas`, `workers`"), "{e}");
    assert_eq!(
        error("retry-storm", &["services.apix.workers=3"]),
        "retry-storm: --set services.apix.workers=3: `services` has no `apix`; its names are: api, db"
    );
    assert_eq!(
        error(
            "retry-storm",
            &["clients.users.call.stack[3].max_attempts=5"]
        ),
        "retry-storm: --set clients.users.call.stack[3].max_attempts=5: `clients.users.call.stack` has 1 entries, so the index must be below 1"
    );
    assert_eq!(
        error("retry-storm", &["duration.x=1"]),
        "retry-storm: --set duration.x=1: `duration` is a single value (`\"60s\"`), so `.x` leads nowhere; set `duration` whole"
    );
}

#[test]
fn a_value_is_one_ron_value() {
    let e = error("retry-storm", &["services.api.workers=3, replicas: 9"]);
    assert!(e.contains("the value must be one RON value"), "{e}");
    assert!("services.api.workers".parse::<Override>().is_err());
    assert!("=3".parse::<Override>().is_err());
    assert!("stack[x]=3".parse::<Override>().is_err());
}

#[test]
fn a_variant_applies_its_overrides_and_set_comes_after() {
    let plain = check("metastable-retry", None, &[]).unwrap();
    assert_eq!(plain.variants, ["budget"]);
    let budget = check("metastable-retry", Some("budget"), &[]).unwrap();
    let (Layer::Retry(a), Layer::Retry(b)) = (
        &plain.clients["users"].call.stack[0],
        &budget.clients["users"].call.stack[0],
    ) else {
        panic!("both start with a retry")
    };
    assert!(a.budget.is_none() && b.budget.is_some());
    assert_ne!(plain.expectations, budget.expectations);
    let later = check(
        "metastable-retry",
        Some("budget"),
        &["services.api.workers=20"],
    )
    .unwrap();
    assert_eq!(later.services["api"].workers, 20);
    assert_eq!(later.clients, budget.clients);
    assert_eq!(
        check("metastable-retry", Some("nope"), &[]).unwrap_err(),
        "metastable-retry: --variant nope: no such variant; the file has: budget"
    );
    assert_eq!(
        check("retry-storm", Some("budget"), &[]).unwrap_err(),
        "retry-storm: --variant budget: the file has no variants"
    );
}

#[test]
fn a_bad_variant_is_an_error_at_its_line() {
    let text = "Scenario(\n    name: \"x\",\n    variants: { \"big\": { \"services.api.workers\": 0 } },\n    duration: \"1s\",\n    clients: {},\n    services: {},\n)";
    let e = parse_overridden(
        "x.ron",
        text,
        &Limits::default(),
        &Overrides {
            variant: Some("big".into()),
            sets: vec![],
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("x.ron: variant \"big\": services.api.workers=0: `services` has no `api`"),
        "{e}"
    );
    let malformed = text.replace("{ \"services.api.workers\": 0 }", "[1]");
    let e = parse_overridden(
        "x.ron",
        &malformed,
        &Limits::default(),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("x.ron:3:24: the variant \"big\" is a map of paths to values"),
        "{e}"
    );
}

#[test]
fn the_command_line_takes_set_and_variant_and_exits_2_on_a_bad_one() {
    let resim = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_resim"))
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code().unwrap(),
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8(o.stderr).unwrap(),
        )
    };
    let (code, _, err) = resim(&["run", "retry-storm", "--set", "services.api.workers=x"]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "retry-storm: --set services.api.workers=x: expected integer\n"
        )
    );
    let (code, out, err) = resim(&[
        "run",
        "metastable-retry",
        "--variant",
        "budget",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"budget_exhausted\""), "{out}");
    let (code, out, _) = resim(&["check", "metastable-retry"]);
    assert_eq!(code, 0);
    assert!(out.ends_with(", variants budget)\n"), "{out}");
}
