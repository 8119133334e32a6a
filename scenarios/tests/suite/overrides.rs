//! `--set PATH=VALUE` and a file's `variants`: an overridden scenario reads like a file that
//! says the same, and a bad override is one line that names it.

use crate::support;

use scenarios::Scenario;
use scenarios::cli::library;
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::{Override, Overrides, parse_overridden};
use scenarios::format::schema::{Layer, Load};
use support::{Resim, resim};

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
    parse_overridden(entry.name, entry.text, &RunLimits::default(), &overrides)
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
    assert!(
        e.starts_with("retry-storm: --set duration=\"5s\": faults[0].at: "),
        "{e}"
    );
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
        "retry-storm: --set clients.users.call.stack[3].max_attempts=5: `clients.users.call.stack` has 1 entries, so the index must be below 1; `[+]` adds one"
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
    let text = "Scenario(\n    name: \"x\",\n    variants: { \"big\": { \"services.api.workers\": 0 } },\n    duration: \"1s\",\n    clients: { \"c\": (load: Open(rate: Constant(\"1/s\")), call: (target: \"s\", timeout: \"1s\")) },\n    services: { \"s\": (workers: 1, work: Constant(value: \"1ms\")) },\n)";
    // Whether it is chosen or not.
    for variant in [None, Some("big")] {
        let e = parse_overridden(
            "x.ron",
            text,
            &RunLimits::default(),
            &Overrides {
                variant: variant.map(str::to_string),
                sets: vec![],
            },
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "x.ron:3:26: variants.\"big\".services.api.workers: `services` has no `api`; its names are: s"
        );
    }
    let e = parse_overridden(
        "x.ron",
        &text.replace("services.api.workers", "services.s.workers"),
        &RunLimits::default(),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "x.ron:3:48: variants.\"big\".services.s.workers: must be at least 1, got 0"
    );
    let malformed = text.replace("{ \"services.api.workers\": 0 }", "[1]");
    let e = parse_overridden(
        "x.ron",
        &malformed,
        &RunLimits::default(),
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
    let Resim {
        code, stderr: err, ..
    } = resim(&["run", "retry-storm", "--set", "services.api.workers=x"]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "retry-storm: --set services.api.workers=x: expected integer\n"
        )
    );
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&[
        "run",
        "metastable-retry",
        "--variant",
        "budget",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"budget_exhausted\""), "{out}");
    let Resim {
        code, stdout: out, ..
    } = resim(&["check", "metastable-retry"]);
    assert_eq!(code, 0);
    assert!(out.ends_with(", variants budget)\n"), "{out}");
}

#[test]
fn durations_and_rates_are_taken_as_typed_without_quotes() {
    // What the shell leaves of `--set duration="30s"` is `duration=30s`.
    let s = check(
        "retry-storm",
        None,
        &[
            "duration=30s",
            "bucket=250ms",
            "clients.users.load.rate=Constant(3000/s)",
            "services.db.work=Exponential(mean: 1.5ms)",
            "clients.users.call.timeout=1m30s",
        ],
    )
    .unwrap();
    assert_eq!(s.duration.to_string(), "30s");
    assert_eq!(s.bucket.to_string(), "250ms");
    let quoted = check(
        "retry-storm",
        None,
        &[
            "duration=\"30s\"",
            "bucket=\"250ms\"",
            "clients.users.load.rate=Constant(\"3000/s\")",
            "services.db.work=Exponential(mean: \"1.5ms\")",
            "clients.users.call.timeout=\"1m30s\"",
        ],
    )
    .unwrap();
    assert_eq!(s.clients, quoted.clients);
    assert_eq!(s.services, quoted.services);
    // Valid RON is left alone: a number in exponent form is a number, not a duration.
    assert_eq!(
        check("retry-storm", None, &["services.api.workers=1e3"]).unwrap_err(),
        "retry-storm: --set services.api.workers=1e3: invalid digit 'e' for base 10 integers"
    );
    // A unit where the field is not a duration is the parser's error, about the value as typed.
    assert_eq!(
        error("retry-storm", &["services.api.workers=30s"]),
        "retry-storm: --set services.api.workers=30s: expected a number here, found the string \"30s\""
    );
}

#[test]
fn check_takes_set_and_variant() {
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&["check", "retry-storm", "--set", "duration=30s"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "retry-storm --set 'duration=30s': ok (retry-storm: 1 clients, 2 services, 1 faults, 1 expectations)\n"
    );
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&["check", "metastable-retry", "--variant", "budget"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("metastable-retry --variant budget: ok (metastable-retry: "),
        "{out}"
    );
    let Resim {
        code, stderr: err, ..
    } = resim(&["check", "retry-storm", "--set", "services.api.workers=0"]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "retry-storm: --set services.api.workers=0: must be at least 1, got 0\n"
        )
    );
}

#[test]
fn a_list_takes_one_more_entry_with_plus() {
    let plain = check("retry-storm", None, &[]).unwrap();
    let s = check(
        "retry-storm",
        None,
        &[
            "faults[+]=(at: 30s, duration: 5s, kind: Crash(service: \"api\"))",
            "faults[+]=(at: 40s, duration: 1s, kind: Partition(service: \"db\"))",
        ],
    )
    .unwrap();
    assert_eq!(s.faults.len(), plain.faults.len() + 2);
    assert_eq!(s.faults[..1], plain.faults[..]);
    assert_eq!(s.faults[1].at.to_string(), "30s");
    assert_eq!(s.faults[2].at.to_string(), "40s");
    // An entry just added can be changed by a later override.
    let s = check(
        "retry-storm",
        None,
        &[
            "faults[+]=(at: 30s, duration: 1s, kind: Crash(service: \"api\"))",
            "faults[1].at=35s",
        ],
    )
    .unwrap();
    assert_eq!(s.faults[1].at.to_string(), "35s");
    let s = check(
        "metastable-retry",
        None,
        &["clients.users.call.stack[+]=Bulkhead(max_concurrent_calls: 10)"],
    )
    .unwrap();
    assert_eq!(s.clients["users"].call.stack.len(), 2);
    let e = error("retry-storm", &["services.api[+]=3"]);
    assert!(
        e.starts_with("retry-storm: --set services.api[+]=3: `services.api` is fields (")
            && e.ends_with("), so `[+]` leads nowhere; set `services.api` whole"),
        "{e}"
    );
}

#[test]
fn a_list_the_file_leaves_out_is_written_in_by_plus() {
    let s = check(
        "noisy-neighbour",
        None,
        &["faults[+]=(at: 12s, kind: Crash(service: \"api\"))"],
    )
    .unwrap();
    assert_eq!(s.faults.len(), 1);
    assert_eq!(s.faults[0].at.to_string(), "12s");
}

#[test]
fn an_error_that_an_override_caused_elsewhere_names_it_first() {
    // The fix the validator suggests (run longer) follows the flag: it cannot be read as
    // "run with --set duration=5s", the value that failed.
    assert_eq!(
        error("retry-storm", &["duration=5s"]),
        "retry-storm: --set duration=5s: faults[0].at: 10s is not before the end of the run (5s); move it earlier or run longer"
    );
}

#[test]
fn too_many_overrides_name_the_first_one_over() {
    let sets: Vec<String> = (1..=257)
        .map(|n| format!("services.api.workers={n}"))
        .collect();
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    assert_eq!(
        error("retry-storm", &sets),
        "retry-storm: --set services.api.workers=257: at most 256 overrides per run (a variant's and the command line's together); this is the 257th"
    );
}

#[test]
fn the_command_line_names_the_flag_and_the_value_as_typed() {
    let Resim {
        code, stderr: err, ..
    } = resim(&[
        "sweep",
        "retry-storm",
        "--seeds",
        "1..1",
        "--grid",
        "services.api.wrkers=1,2",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("retry-storm: --grid services.api.wrkers=1: unknown field `wrkers` in a service; expected one of"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let Resim {
        code, stderr: err, ..
    } = resim(&[
        "phase",
        "metastable-retry",
        "--x",
        "clients.users.call.stack[0].max_attempts=1..2:1",
        "--y",
        "duration=20s,0s",
    ]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "metastable-retry: --y duration=0s: must be longer than 0s\n"
        )
    );
    for (args, message) in [
        (
            vec!["run", "retry-storm", "--set", "services..workers=3"],
            "retry-storm: --set services..workers=3: a path is names joined by dots, e.g. services.api.workers\n",
        ),
        (
            vec!["run", "retry-storm", "--set", "workers"],
            "retry-storm: --set workers: write an override as PATH=VALUE, e.g. services.api.workers=32\n",
        ),
        (
            vec![
                "sweep",
                "retry-storm",
                "--seeds",
                "1..2",
                "--grid",
                "services.api.workers=1,,2",
            ],
            "retry-storm: --grid services.api.workers=1,,2: a grid value is empty\n",
        ),
        (
            vec!["phase", "retry-storm", "--x", "a=3..1:1", "--y", "b=1"],
            "retry-storm: --x a=3..1:1: a range goes up by a positive step, e.g. a=1..3:1\n",
        ),
        (
            vec!["run", "retry-storm", "--set", "name=storm"],
            "retry-storm: --set name=storm: expected a string in double quotes, which the shell takes away: write --set 'name=\"storm\"'\n",
        ),
    ] {
        let Resim {
            code, stderr: err, ..
        } = resim(&args);
        assert_eq!((code, err.as_str()), (2, message), "{args:?}");
    }
}

/// noisy-neighbour with `from` replaced by `to` in its `per-tenant` variant, as a file.
fn noisy_variant(name: &str, from: &str, to: &str) -> String {
    let text = library::find("noisy-neighbour").unwrap().text;
    let at = text.find("\"per-tenant\"").unwrap();
    assert!(text[at..].contains(from));
    let changed = format!("{}{}", &text[..at], text[at..].replacen(from, to, 1));
    let dir = std::env::temp_dir().join(format!("resim-overrides-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, changed).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn an_error_in_a_variant_says_where_in_the_variants_map() {
    let file = noisy_variant("ratio.ron", "max_ratio: 0.05", "max_ratio: 1.5");
    let Resim {
        code, stderr: err, ..
    } = resim(&["check", &file]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            format!("{file}:53:80: variants.\"per-tenant\".expectations[1].max_ratio: must be a ratio between 0 and 1, got 1.5\n").as_str()
        )
    );
    let file = noisy_variant("field.ron", "max_ratio: 0.05", "max_rato: 0.05");
    let Resim {
        code, stderr: err, ..
    } = resim(&["check", &file]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            format!("{file}:53:69: variants.\"per-tenant\".expectations[1].max_rato: unknown field `max_rato` in `ClassGoodputAtMost`; expected one of `client`, `class` or `max_ratio`\n").as_str()
        )
    );
    // `run` checks every variant as `check` does, chosen or not.
    let Resim {
        code,
        stderr: run_err,
        ..
    } = resim(&["run", &file]);
    assert_eq!((code, run_err), (2, err));
}

#[test]
fn a_variants_map_whose_brackets_go_wrong_says_where() {
    let text = library::find("metastable-retry").unwrap().text;
    let read = |text: &str| {
        parse_overridden("m.ron", text, &RunLimits::default(), &Overrides::default())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        read(&text.replacen(
            "[Recovers(within: \"10s\")]",
            "[Recovers(within: \"10s\")",
            1
        )),
        "m.ron:44:9: this `}` comes before the `[` opened at line 43, column 29 is closed, so `variants` cannot be read; close it, or write variants as { \"name\": { \"path\": value, … }, … }"
    );
    assert_eq!(
        read(&format!("{}\n)\n", text.trim_end())),
        "m.ron:47:2: unexpected `)` after the end of the scenario; remove it, or check the brackets before it"
    );
}

#[test]
fn a_name_that_cannot_be_a_field_is_refused_on_one_line() {
    assert_eq!(
        error("retry-storm", &["services.api.work ers=3"]),
        "retry-storm: --set services.api.work ers=3: `services.api` has no field `work ers`, and no field is called so: a field name is letters, digits and `_`"
    );
    // Found by the fuzz campaign: a variant's path may hold a line break (a RON string can);
    // the message still takes one line.
    let file = "tests/fuzz-found/variant-path-with-a-line-break.ron";
    let e = scenarios::format::load::load(file).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{file}:52:13: variants.\"exponential\".expec ations: the top level has no field `expec ations`, and no field is called so: a field name is letters, digits and `_`"
        )
    );
}

/// The report's replay command is every flag that shaped the run, and running it gives the
/// same run.
#[test]
fn the_replay_command_carries_every_flag_of_the_run() {
    let args = [
        "run",
        "metastable-retry",
        "--seed",
        "3",
        "--duration",
        "20s",
        "--max-memory",
        "1GiB",
        "--variant",
        "budget",
        "--set",
        "services.api.workers=9",
    ];
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&args);
    assert!(code < 2, "{err}");
    let replay = out
        .lines()
        .find_map(|l| l.strip_prefix("replay: "))
        .unwrap_or_else(|| panic!("no replay line in {out}"));
    assert_eq!(
        replay,
        "resim run metastable-retry --seed 3 --duration 20s --max-memory 1GiB \
         --variant budget --set 'services.api.workers=9'"
    );
    // The words as the shell passes them on (the quotes around the `--set` value removed).
    let words: Vec<String> = replay
        .split(' ')
        .skip(1)
        .map(|w| w.trim_matches('\'').to_string())
        .collect();
    let digest = |args: &[&str]| {
        let Resim {
            stdout: json,
            stderr: err,
            ..
        } = resim(&[args, &["--format", "json"]].concat());
        let report: serde_json::Value =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {err}"));
        (report["digest"].clone(), report["replay_flags"].clone())
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let first = digest(&args);
    assert_eq!(digest(&words), first);
    // Without the flags the run is another one.
    assert_ne!(
        digest(&["run", "metastable-retry", "--seed", "3"]).0,
        first.0
    );
}

/// `check` says what the report's warnings say: a percent field given a ratio is accepted,
/// and named with both readings.
#[test]
fn check_warns_about_a_percent_written_as_a_ratio() {
    let set = "services.api.calls[0].stack[1].failure_rate_threshold=0.5";
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&["check", "cascading-failure-mitigated", "--set", set]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(": ok ("), "{out}");
    assert!(
        err.starts_with(&format!(
            "cascading-failure-mitigated --set '{set}': warning: services.api.calls[0].stack[1].failure_rate_threshold"
        )),
        "{err}"
    );
    assert!(err.contains("0.5"), "{err}");
    let Resim { stderr: err, .. } = resim(&["check", "cascading-failure-mitigated"]);
    assert_eq!(err, "");
}
