//! `resim export --against` over an original split across files of the import corpus
//! (`scenarios/tests/import-corpus/`): bookinfo's DestinationRules and VirtualServices,
//! resilience4j's YAML and `.properties`. Each change goes into the file that configures it, a
//! file no change reaches stays byte for byte, a property both Spring files set is written
//! where Spring reads it (the `.properties` file), said so, and the command line writes each
//! file into `--out DIR`. The files written back import to the changed scenario and conform
//! to their format's schema as well as the originals did. One file at a time is
//! `export_corpus.rs`, whose helpers these tests share.

use scenarios::Scenario;
use scenarios::export::{self, Against, TargetFormat};
use scenarios::format::schema::Layer;
use scenarios::import::Input;

use crate::export_corpus::{call_and_target, call_mut, call_to, changed_lines, imported, input};
use crate::export_schemas::corpus_format;
use crate::import_corpus::CORPUS;
use crate::support::{resim_in, schema, workspace_root};

/// An original split across files of the corpus: the files imported together and exported
/// against, the call's target and the upstream that configures it.
pub(crate) struct Split {
    pub(crate) files: &'static [&'static str],
    target: &'static str,
    service: &'static str,
    to: TargetFormat,
}

/// bookinfo's DestinationRules and VirtualServices, the call to reviews' v1.
const BOOKINFO: Split = Split {
    files: &[
        "bookinfo/destination-rule-all.yaml",
        "bookinfo/virtual-service-all-v1.yaml",
    ],
    target: "reviews",
    service: "reviews/v1",
    to: TargetFormat::Istio,
};

/// resilience4j's YAML and `.properties`, the call to backendA.
const SPRING_A: Split = Split {
    files: &[
        "resilience4j/application.yml",
        "resilience4j/application.properties",
    ],
    target: "backendA",
    service: "backendA",
    to: TargetFormat::Resilience4j,
};

/// The same files, the call to backendB.
const SPRING_B: Split = Split {
    target: "backendB",
    service: "backendB",
    ..SPRING_A
};

pub(crate) const SPLITS: [&Split; 3] = [&BOOKINFO, &SPRING_A, &SPRING_B];

/// The files of `split` imported together, its call changed by `edit`, and exported against
/// all of them: the export, the changed scenario and the inputs.
fn split(
    split: &Split,
    edit: &dyn Fn(&mut Scenario, &str),
) -> (export::Exported, Scenario, Vec<Input>, String) {
    let (files, target, service, to) = (split.files, split.target, split.service, split.to);
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

/// Istio's split layout: a change of the route goes into the VirtualService's file and leaves
/// the DestinationRules' byte for byte; a change of the host's outlier ejection goes into the
/// DestinationRule's, into the subset the call is routed to (which has no outlierDetection of
/// its own, so the host's is written there whole with the change, as Istio replaces a
/// component whole), and both files change when both are changed.
#[test]
fn against_split_istio_files_each_change_goes_to_its_own_file() {
    let (out, _, inputs, _) = split(&BOOKINFO, &one_more_attempt);
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
    let (out, _, inputs, _) = split(&BOOKINFO, &both);
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

/// Spring's YAML and `.properties`: a property the `.properties` file sets is changed there
/// (the YAML untouched, byte for byte), one the YAML alone sets in the YAML; one neither sets
/// at the instance goes to the `.properties` file when both write the instance's block (the
/// higher precedence); one both set is written into the `.properties` file, whose value
/// Spring reads, and the table says so.
#[test]
fn against_spring_yaml_and_properties_each_change_goes_where_spring_reads_it() {
    let (out, _, inputs, _) = split(&SPRING_A, &one_more_attempt);
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
    let (out, _, inputs, _) = split(&SPRING_A, &both);
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
    let (out, _, inputs, _) = split(&SPRING_A, &delay);
    assert!(!out.files[0].changed, "{}", out.table);
    let (dropped, added) = file_lines(&out, &inputs, "application.properties");
    assert!(
        dropped.is_empty()
            && added == ["resilience4j.retry.instances.backendA.waitDuration=300ms\n"],
        "{}",
        out.diff
    );

    let (out, _, inputs, _) = split(&SPRING_B, &delay);
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
    let files: Vec<String> = BOOKINFO
        .files
        .iter()
        .map(|f| format!("{CORPUS}/{f}"))
        .collect();
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

/// bookinfo's rules beside the staging team's lone DestinationRule, imported together.
const WITH_STAGING: [&str; 3] = [
    "bookinfo/destination-rule-all.yaml",
    "bookinfo/virtual-service-all-v1.yaml",
    "namespaces/reviews-staging.yaml",
];

/// The scenario `WITH_STAGING` imports, as its text and as read.
fn with_staging() -> (Vec<Input>, String, Scenario) {
    let inputs: Vec<Input> = WITH_STAGING.iter().map(|f| input(f)).collect();
    let (text, scenario) = imported(&inputs);
    (inputs, text, scenario)
}

/// The call at `call` of `scenario` (imported as `text`) exported to Istio as `service`,
/// against `originals`.
fn against(
    scenario: &Scenario,
    text: &str,
    call: &str,
    service: &str,
    originals: &[Input],
) -> export::Exported {
    let against = Against {
        originals: originals.to_vec(),
        scenario: Input {
            file: "imported.ron".into(),
            text: text.to_string(),
        },
    };
    export::export_against(
        scenario,
        "imported.ron",
        call,
        TargetFormat::Istio,
        Some(service),
        &against,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The lines of `table` under `not written back, N changes no object …`, and N.
fn no_object(table: &str) -> (usize, Vec<&str>) {
    let Some(at) = table.find("not written back, ") else {
        return (0, Vec::new());
    };
    let heading = &table[at..];
    let n = heading["not written back, ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    let lines = heading
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect();
    (n, lines)
}

/// Exported against bookinfo's VirtualServices alone, a change of reviews' route is written
/// into their file, and every change under its DestinationRule, which no file given has, is
/// listed with the call, the field in Istio's words and its new value, and counted in
/// `unwritten` (before issue 38's fix it was dropped, and the table said "nothing changed").
/// Given the rules' file too, the same change is written there and nothing is left.
#[test]
fn a_change_no_against_file_has_an_object_for_is_listed_not_dropped() {
    let (inputs, text, scenario) = with_staging();
    let call = call_to(&scenario, "reviews.default");
    let mut changed = scenario.clone();
    for layer in &mut call_mut(&mut changed, &call).stack {
        match layer {
            Layer::Retry(r) => r.max_attempts += 1,
            Layer::Bulkhead(b) => b.max_concurrent_calls = 40,
            _ => {}
        }
    }
    let routes = &inputs[1..2];
    let out = against(&changed, &text, &call, "reviews/v1", routes);
    let (dropped, added) = changed_lines(&routes[0].text, &out.text);
    assert_eq!(
        (dropped, added),
        (
            vec!["  - route:\n".to_string()],
            vec![
                "  - retries:\n".to_string(),
                "      attempts: 3\n".to_string(),
                "    route:\n".to_string()
            ]
        ),
        "{}",
        out.diff
    );
    let (n, lines) = no_object(&out.table);
    let rule = "services.app.calls[1] (reviews/v1): DestinationRule[reviews].spec.subsets[v1].trafficPolicy";
    for field in [
        "connectionPool.tcp.maxConnections = 40",
        "connectionPool.http.http2MaxRequests = 40",
    ] {
        let shown = format!("{rule}.{field}: no object of the --against files holds it");
        assert!(lines.contains(&shown.as_str()), "{shown}:\n{}", out.table);
    }
    assert_eq!(
        (n, out.unwritten),
        (lines.len(), lines.len()),
        "{}",
        out.table
    );
    // Only what the rule holds is listed: the route's change is written, not listed.
    assert!(lines.iter().all(|l| l.starts_with(rule)), "{}", out.table);

    // The rules' file given too: everything is written, nothing listed.
    let both = against(&changed, &text, &call, "reviews/v1", &inputs[..2]);
    assert_eq!(both.unwritten, 0, "{}", both.table);
    assert!(!both.table.contains("not written back"), "{}", both.table);
    assert!(both.files.iter().all(|w| w.changed), "{}", both.table);

    // The staging team's lone rule, its connection pool changed, exported as the route the
    // VirtualServices have for reviews: the route is as it was, the pool listed.
    let staging = call_to(&scenario, "reviews.staging");
    let mut changed = scenario.clone();
    for layer in &mut call_mut(&mut changed, &staging).stack {
        if let Layer::Bulkhead(b) = layer {
            b.max_concurrent_calls = 10;
        }
    }
    let out = against(&changed, &text, &staging, "reviews/v1", routes);
    assert_eq!(out.text, routes[0].text, "{}", out.diff);
    let (_, lines) = no_object(&out.table);
    let shown = format!(
        "{staging} (reviews/v1): DestinationRule[reviews].spec.subsets[v1].trafficPolicy.connectionPool.tcp.maxConnections = 10: no object of the --against files holds it"
    );
    assert!(lines.contains(&shown.as_str()), "{shown}:\n{}", out.table);
    assert!(out.unwritten >= 1, "{}", out.table);
}

/// The command line: a change no `--against` file has an object for makes `resim export`
/// exit 1 (after writing what it could), with the change listed and a last line that says
/// so.
#[test]
fn resim_export_exits_1_when_a_change_is_not_written_back() {
    let root = workspace_root();
    let dir = std::env::temp_dir().join(format!("resim-unwritten-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ron = dir.join("staging.ron").to_string_lossy().into_owned();
    let files: Vec<String> = WITH_STAGING
        .iter()
        .map(|f| format!("{CORPUS}/{f}"))
        .collect();
    let out = resim_in(
        &root,
        &["import", &files[0], &files[1], &files[2], "--out", &ron],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let written = dir.join("routes.yaml").to_string_lossy().into_owned();
    let args = [
        "export",
        &ron,
        "--call",
        "services.app.calls[1]",
        "--to",
        "istio",
        "--service",
        "reviews/v1",
        "--set",
        "services.app.calls[1].stack[1].max_concurrent_calls=40",
        "--against",
        &files[1],
        "--out",
        &written,
    ];
    let out = resim_in(&root, &args);
    assert_eq!(out.code, 1, "{}", out.stderr);
    for shown in [
        "DestinationRule[reviews].spec.subsets[v1].trafficPolicy.connectionPool.tcp.maxConnections = 40: no object of the --against files holds it",
        "changes of the scenario not written back (listed above under `not written back`); the others are written; exit code 1",
    ] {
        assert!(out.stderr.contains(shown), "{shown}:\n{}", out.stderr);
    }
    let read = |f: &str| std::fs::read_to_string(std::path::Path::new(f)).unwrap();
    assert_eq!(
        read(&written),
        read(&root.join(&files[1]).to_string_lossy())
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// An Envoy configuration split as xDS serves it, clusters (CDS) apart from routes (RDS):
/// exported against the front proxy's clusters alone, a retry change of the call to search is
/// listed (the route that holds it is not given), and the cluster gains the retry's circuit
/// breaker as Envoy's schema has it, `thresholds` a list of one entry (written in flow style,
/// as the edits write a list; it was `thresholds: 3`, a number where a list goes), the file
/// conforming as the original does.
#[test]
fn against_envoy_clusters_alone_the_routes_changes_are_listed_and_the_clusters_conform() {
    let full = input("front-proxy/envoy.yaml");
    let (text, scenario) = imported(std::slice::from_ref(&full));
    let at = full.text.find("\n  clusters:").expect("the clusters") + 1;
    let clusters = Input {
        file: "front-proxy/clusters.yaml".into(),
        text: format!("static_resources:\n{}", &full.text[at..]),
    };
    let call = call_to(&scenario, "search");
    let mut changed = scenario.clone();
    one_more_attempt(&mut changed, &call);
    let against = Against {
        originals: vec![clusters.clone()],
        scenario: Input {
            file: "imported.ron".into(),
            text,
        },
    };
    let out = export::export_against(
        &changed,
        "imported.ron",
        &call,
        TargetFormat::Envoy,
        Some("search"),
        &against,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (_, lines) = no_object(&out.table);
    let shown = format!(
        "{call} (search): RouteConfiguration[search].virtual_hosts[search].routes[0].route.retry_policy.num_retries = 3: no object of the --against files holds it"
    );
    assert!(lines.contains(&shown.as_str()), "{shown}:\n{}", out.table);
    assert_eq!(out.unwritten, lines.len(), "{}", out.table);
    let (dropped, added) = changed_lines(&clusters.text, &out.text);
    assert_eq!(dropped, ["  - name: search\n"], "{}", out.diff);
    assert_eq!(
        added,
        [
            "  - circuit_breakers:\n",
            "      thresholds: [{\"max_retries\":3}]\n",
            "    name: search\n"
        ],
        "{}",
        out.diff
    );
    let (format, reader) = corpus_format("front-proxy/envoy.yaml");
    let was = schema::problems(format, &clusters.file, &clusters.text, reader);
    let found = schema::problems(format, &clusters.file, &out.text, reader);
    let more: Vec<&String> = found.iter().filter(|p| !was.contains(p)).collect();
    assert!(more.is_empty(), "{more:#?}\n{}", out.diff);
}
