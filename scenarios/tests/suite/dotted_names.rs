//! Names with dots (issue 38): a service named as an import names it (`helloworld.Greeter`,
//! `shop.Db`) is addressable wherever a path is taken (`--set`, `--grid`, `variants`, the
//! paths errors print), by writing the name in double quotes; a quote left open or a name
//! that is not there is one line in the user's words.

use crate::support;

use scenarios::Scenario;
use scenarios::format::limits::RunLimits;
use scenarios::format::load::parse;
use scenarios::format::overrides::{Override, Overrides, parse_overridden};
use scenarios::format::schema::Layer;
use support::resim;

const GRPC: &str = r#"Scenario(
    name: "grpc",
    duration: "2s",
    clients: { "users": (load: Open(rate: Constant("100/s")), call: (target: "helloworld.Greeter", timeout: "1s")) },
    services: {
        "helloworld.Greeter": (workers: 4, work: Constant(value: "1ms"), calls: [(target: "shop.Db", timeout: "500ms")]),
        "shop.Db": (workers: 4, work: Constant(value: "2ms")),
    },
    variants: { "small": { "services.\"shop.Db\".workers": 1 } },
)"#;

/// The scenario with `sets`, or the error as a user reads it.
fn check(sets: &[&str]) -> Result<Scenario, String> {
    let overrides = Overrides {
        variant: None,
        sets: sets
            .iter()
            .map(|s| s.parse::<Override>())
            .collect::<Result<_, _>>()?,
    };
    parse_overridden("grpc.ron", GRPC, &RunLimits::default(), &overrides).map_err(|e| e.to_string())
}

#[test]
fn a_quoted_name_is_one_step_of_a_path() {
    let s = check(&[
        "services.\"helloworld.Greeter\".workers=8",
        "services.\"helloworld.Greeter\".calls[0].timeout=250ms",
        "services.\"helloworld.Greeter\".calls[0].stack=[Retry(max_attempts: 3)]",
        "services.\"shop.Db\".replicas=3",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let greeter = &s.services["helloworld.Greeter"];
    assert_eq!(greeter.workers, 8);
    assert_eq!(
        greeter.calls[0].timeout.map(|t| t.to_string()),
        Some("250ms".into())
    );
    assert!(matches!(&greeter.calls[0].stack[..], [Layer::Retry(r)] if r.max_attempts == 3));
    assert_eq!(s.services["shop.Db"].replicas, 3);
    // Any name may be quoted, and the file's variant's quoted path reads the same.
    let plain = check(&["services.\"shop.Db\".workers=1"]).unwrap();
    let variant = parse_overridden(
        "grpc.ron",
        GRPC,
        &RunLimits::default(),
        &Overrides {
            variant: Some("small".into()),
            sets: Vec::new(),
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(variant.services, plain.services);
    assert_eq!(
        check(&["\"clients\".\"users\".call.timeout=2s"])
            .unwrap()
            .clients["users"]
            .call
            .timeout
            .map(|t| t.to_string()),
        Some("2s".into())
    );
}

#[test]
fn a_quote_left_open_or_a_name_not_there_is_said_in_the_users_words() {
    let error = |set: &str| check(&[set]).expect_err(set);
    // (The command line adds the flag and the text as typed: see the last test.)
    assert_eq!(
        error("services.\"shop.Db.workers=2"),
        "the quote at character 10 is not closed; a name with dots is written in double quotes, e.g. services.\"shop.Db\".workers"
    );
    assert!(
        error("services.\"shop.DB\".workers=2").ends_with(
            "`services` has no `\"shop.DB\"`; its names are: \"helloworld.Greeter\", \"shop.Db\""
        ),
        "{}",
        error("services.\"shop.DB\".workers=2")
    );
    // Without its quotes, a name with dots reads as two steps: the error says how to write it.
    assert!(
        error("services.shop.Db.workers=2").ends_with(
            "`services` has no `shop`; its names are: \"helloworld.Greeter\", \"shop.Db\"; a name with dots is written in double quotes: `\"shop.Db\"`"
        ),
        "{}",
        error("services.shop.Db.workers=2")
    );
}

#[test]
fn errors_print_paths_that_set_takes_back() {
    // A validation error in a service with dots names its path quoted, and that path,
    // given back to --set, reaches the value.
    // The validator's path is the override's own: the error blames the override alone.
    assert_eq!(
        check(&["services.\"shop.Db\".workers=0"]).expect_err("0 workers"),
        "grpc.ron: --set services.\"shop.Db\".workers=0: must be at least 1, got 0"
    );
    let bad = GRPC.replace(
        "(workers: 4, work: Constant(value: \"2ms\"))",
        "(workers: 0, work: Constant(value: \"2ms\"))",
    );
    let error = parse("grpc.ron", &bad).expect_err("0 workers").to_string();
    assert!(
        error.contains("services.\"shop.Db\".workers: must be at least 1, got 0"),
        "{error}"
    );
    let report = support::run_text(GRPC);
    assert_eq!(
        report
            .calls
            .iter()
            .map(|c| c.path.as_str())
            .collect::<Vec<_>>(),
        [
            "clients.users.call",
            "services.\"helloworld.Greeter\".calls[0]"
        ]
    );
}

#[test]
fn the_command_line_takes_quoted_names_in_every_flag_that_takes_a_path() {
    let dir = std::env::temp_dir().join(format!("resim-dotted-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("grpc.ron");
    std::fs::write(&file, GRPC).unwrap();
    let file = file.to_string_lossy().into_owned();
    let run = resim(&[
        "run",
        &file,
        "--set",
        "services.\"shop.Db\".workers=2",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"workers\":2"), "{}", run.stdout);
    let sweep = resim(&[
        "sweep",
        &file,
        "--seeds",
        "1..1",
        "--grid",
        "services.\"helloworld.Greeter\".workers=1,2",
    ]);
    assert_eq!(sweep.code, 0, "{}", sweep.stderr);
    assert!(
        sweep
            .stdout
            .contains("services.\"helloworld.Greeter\".workers"),
        "{}",
        sweep.stdout
    );
    let open = resim(&["check", &file, "--set", "services.\"shop.Db.workers=2"]);
    assert_eq!(open.code, 2);
    assert!(
        open.stderr
            .contains("the quote at character 10 is not closed"),
        "{}",
        open.stderr
    );
}
