//! The book (`book/`) shows what the code does, and nothing else.
//!
//! - Every ```` ```text ```` block whose first line is `$ resim ...` is that command's real
//!   output: the test runs the `resim` binary with those arguments from the workspace root and
//!   compares stdout, then stderr, with the block. A page's blocks run in its order (pages
//!   in parallel), so a command may read what an earlier block of its page wrote. A server (`resim explore --serve`) does not
//!   end: its ```` ```console ```` blocks are checked by `serve.rs`. `UPDATE_BOOK=1 cargo test -p scenarios
//!   --test suite book::` rewrites every drifted block in place.
//! - Every scenario shown is a real file under `book/src/scenarios/`, pulled in with
//!   `{{#include}}` (a ```` ```ron ```` fence holds nothing else), and each one validates and
//!   runs to its end with its expectations met. Rust code is included the same way from a
//!   test or an example that `cargo test` compiles.
//! - Every chapter is in `SUMMARY.md`, and every relative link and include points at a file
//!   (and a heading or anchor) that exists.
//! - The numbers in the prose are claims: `claim(chapter, text)` asserts that the chapter says
//!   `text`, where the test builds `text` from a real run.
//!
//! The scenario reference's completeness is checked in `book_reference.rs`.

use crate::support;

use scenarios::format::load::load;
use scenarios::{Report, RunOptions, run};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use support::{
    call_report, class_report, client_failures, client_report, resim_in, run_library,
    run_library_with, service_report, workspace_root,
};

fn src() -> PathBuf {
    workspace_root().join("book/src")
}

/// Every file under `dir` whose name ends with `ext`, sorted.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == ext) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The chapter at `name` (relative to `book/src`).
fn chapter(name: &str) -> String {
    read(&src().join(name))
}

/// A fenced block: its info string, the line its body starts on (1-based), and the byte
/// range of its body in the file (from the line after the opening fence to the closing fence).
struct Fence {
    info: String,
    line: usize,
    body: std::ops::Range<usize>,
}

fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut open: Option<(String, usize, usize)> = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end();
        match &open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((info.trim().to_string(), i + 2, offset + line.len()));
                }
            }
            Some((info, first, start)) => {
                if trimmed == "```" {
                    out.push(Fence {
                        info: info.clone(),
                        line: *first,
                        body: *start..offset,
                    });
                    open = None;
                }
            }
        }
        offset += line.len();
    }
    assert!(open.is_none(), "a fence is left open");
    out
}

/// What `resim ARGS` prints, run from the workspace root: the command line, stdout, stderr.
fn resim_output(command: &str) -> String {
    let args: Vec<&str> = command
        .strip_prefix("$ resim")
        .expect("an output block starts with `$ resim`")
        .split_whitespace()
        // A word in single quotes is what a shell passes without them (the book's commands
        // can be pasted into one).
        .map(|a| {
            a.strip_prefix('\'')
                .and_then(|a| a.strip_suffix('\''))
                .unwrap_or(a)
        })
        .collect();
    let out = resim_in(&workspace_root(), &args);
    let mut text = format!("{command}\n");
    text.push_str(&out.stdout);
    text.push_str(&out.stderr);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// One output block of one chapter.
struct OutputBlock {
    file: PathBuf,
    line: usize,
    body: std::ops::Range<usize>,
    shown: String,
}

#[test]
fn every_output_in_the_book_and_the_readme_is_what_resim_prints() {
    let mut blocks = Vec::new();
    let mut pages = files(&src(), "md");
    pages.push(workspace_root().join("README.md"));
    for file in pages {
        let text = read(&file);
        for f in fences(&text) {
            let body = &text[f.body.clone()];
            if f.info == "text" && body.starts_with("$ resim") {
                blocks.push(OutputBlock {
                    file: file.clone(),
                    line: f.line,
                    body: f.body,
                    shown: body.to_string(),
                });
            } else if f.info == "console"
                && body.lines().next().is_some_and(|l| l.contains(" --serve"))
            {
                // A server does not end: `serve.rs` starts the command of such a block and
                // checks what it prints and answers.
            } else {
                assert!(
                    !body.starts_with("$ resim"),
                    "{}:{}: a resim command's output goes in a ```text fence, to be checked",
                    file.display(),
                    f.line
                );
            }
        }
    }
    assert!(!blocks.is_empty(), "the book shows some output");

    // The runs are independent processes: spread the pages over the machine's cores. A
    // page's blocks run in its order, so that a command may read a file an earlier block of
    // its page wrote (`resim run --spans`, then `resim import` of those spans).
    let mut pages: Vec<Vec<usize>> = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match pages.last_mut() {
            Some(page) if blocks[page[0]].file == block.file => page.push(i),
            _ => pages.push(vec![i]),
        }
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut actual: Vec<Option<String>> = vec![None; blocks.len()];
    let results = std::sync::Mutex::new(&mut actual);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let p = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(page) = pages.get(p) else { break };
                    for &i in page {
                        let command = blocks[i].shown.lines().next().unwrap();
                        let output = resim_output(command);
                        results.lock().unwrap()[i] = Some(output);
                    }
                }
            });
        }
    });

    let update = std::env::var_os("UPDATE_BOOK").is_some();
    let mut drifted = Vec::new();
    // Rewrite from the end of each file so that earlier byte ranges stay valid.
    for (block, output) in blocks.iter().zip(actual).rev() {
        let output = output.expect("every block ran");
        if block.shown == output {
            continue;
        }
        drifted.push(format!(
            "{}:{}: `{}` prints:\n{output}",
            block.file.display(),
            block.line,
            block.shown.lines().next().unwrap()
        ));
        if update {
            let mut text = read(&block.file);
            text.replace_range(block.body.clone(), &output);
            std::fs::write(&block.file, text).unwrap();
        }
    }
    assert!(
        update || drifted.is_empty(),
        "{} output block(s) in the book or the README have drifted; refresh them all with \
         `UPDATE_BOOK=1 cargo test -p scenarios --test suite book::`, then read the prose around \
         them:\n\n{}",
        drifted.len(),
        drifted.join("\n")
    );
}

/// `{{#include PATH}}` and `{{#include PATH:ANCHOR}}` directives of a chapter: (path, anchor).
fn includes(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for piece in text.split("{{#include ").skip(1) {
        let target = piece.split("}}").next().unwrap().trim();
        match target.split_once(':') {
            Some((path, anchor)) => out.push((path.to_string(), Some(anchor.to_string()))),
            None => out.push((target.to_string(), None)),
        }
    }
    out
}

#[test]
fn every_scenario_in_the_book_is_a_real_file_that_runs() {
    let mut included = BTreeSet::new();
    for file in files(&src(), "md") {
        let text = read(&file);
        for f in fences(&text) {
            // Scenarios and Rust code are real files: a scenario that runs, a test or an
            // example that compiles.
            if f.info != "ron" && !f.info.starts_with("rust") {
                continue;
            }
            for line in text[f.body.clone()].lines() {
                let line = line.trim();
                assert!(
                    line.starts_with("{{#include ") && line.ends_with("}}"),
                    "{}:{}: a ```ron or ```rust fence holds only {{{{#include}}}} lines \
                     (scenarios and code are real files, never pasted); found `{line}`",
                    file.display(),
                    f.line
                );
            }
        }
        for (path, _) in includes(&text) {
            let target = file.parent().unwrap().join(&path);
            included.insert(
                target
                    .canonicalize()
                    .unwrap_or_else(|e| panic!("{}: include {path}: {e}", file.display())),
            );
        }
    }
    let scenarios = files(&src().join("scenarios"), "ron");
    assert!(!scenarios.is_empty());
    for file in scenarios {
        assert!(
            included.contains(&file.canonicalize().unwrap()),
            "{} is in the book's scenarios but no chapter includes it",
            file.display()
        );
        let name = file.display().to_string();
        let scenario = load(&name).unwrap_or_else(|e| panic!("{e}"));
        let report = run(&scenario, &name, &RunOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .report;
        assert_eq!(
            report.simulated_s,
            scenario.duration.as_secs_f64(),
            "{name} runs to its end ({})",
            report.stop_reason
        );
        for e in &report.expectations {
            assert!(
                e.pass,
                "{name}: {} — observed {}",
                e.expectation, e.observed
            );
        }
    }
}

/// mdBook's id for a heading: lower case, spaces to dashes, only letters, digits, `-` and `_`.
fn heading_id(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The ids of a chapter's headings (outside fences).
fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut in_fence = false;
    let mut ids = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && line.starts_with('#') {
            ids.insert(heading_id(line.trim_start_matches('#')));
        }
    }
    ids
}

/// Relative link targets of a chapter: `](target)` outside fences and inline code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Inline code may show link syntax; drop it.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for piece in prose.split("](").skip(1) {
            let target = piece.split(')').next().unwrap();
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.push(target.to_string());
            }
        }
    }
    out
}

#[test]
fn every_chapter_is_listed_and_every_link_resolves() {
    let src = src();
    let summary = read(&src.join("SUMMARY.md"));
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|l| src.join(l).canonicalize().expect("SUMMARY.md names a file"))
        .collect();
    for file in files(&src, "md") {
        let name = file.strip_prefix(&src).unwrap();
        if name == Path::new("SUMMARY.md") {
            continue;
        }
        assert!(
            listed.contains(&file.canonicalize().unwrap()),
            "{} is not in SUMMARY.md",
            name.display()
        );
        let text = read(&file);
        let dir = file.parent().unwrap();
        for link in links(&text) {
            let (path, anchor) = match link.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            assert!(
                target.exists(),
                "{}: the link `{link}` points at nothing",
                name.display()
            );
            if let Some(anchor) = anchor {
                assert!(
                    heading_ids(&read(&target)).contains(anchor),
                    "{}: the link `{link}` names a heading that {} does not have",
                    name.display(),
                    target.display()
                );
            }
        }
        for (path, anchor) in includes(&text) {
            let target = dir.join(&path);
            assert!(
                target.exists(),
                "{}: `{{{{#include {path}}}}}` names no file",
                name.display()
            );
            if let Some(anchor) = anchor {
                let body = read(&target);
                assert!(
                    body.contains(&format!("ANCHOR: {anchor}"))
                        && body.contains(&format!("ANCHOR_END: {anchor}")),
                    "{}: {path} has no anchor {anchor}",
                    name.display()
                );
            }
        }
    }
}

// The claims: numbers the prose states, built from real runs.

/// Asserts that the chapter `name` says `text` (built by the caller from a run).
fn claim(name: &str, text: impl AsRef<str>) {
    let text = text.as_ref();
    // Prose is wrapped at any space; compare with runs of whitespace as one space.
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat(&chapter(name)).contains(&flat(text)),
        "{name} should say `{text}` (the number comes from the run: update the prose)"
    );
}

/// Runs a book scenario (relative to `book/src/scenarios`) at its own seed.
fn book_run(file: &str) -> Report {
    let path = src().join("scenarios").join(file);
    let scenario = load(&path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
    run(&scenario, file, &RunOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .report
}

fn percent(part: u64, whole: u64) -> String {
    format!("{:.1}%", 100.0 * part as f64 / whole as f64)
}

#[test]
fn getting_started_says_what_the_first_run_shows() {
    let page = "getting-started.md";
    let r = run_library("cascading-failure-mitigated");
    charts_are_current("cascading-failure-mitigated", &r);
    let s = &r.summary;
    claim(
        page,
        format!(
            "{} of the {} requests succeeded",
            percent(s.successes, s.offered),
            s.offered
        ),
    );
    assert_eq!(
        s.failures_by_reason.keys().collect::<Vec<_>>(),
        ["dependency"]
    );
    claim(page, "Here every failure is `dependency`");
    claim(
        page,
        format!(
            "api received one attempt per request (load {:.2})",
            service_report(&r, "api").load_factor
        ),
    );
    claim(
        page,
        format!(
            "only {:.2} per request reached the database",
            service_report(&r, "db").load_factor
        ),
    );
    let db = call_report(&r, "services.api.calls[0]");
    claim(
        page,
        format!(
            "the stack rejected {} calls because a breaker was open and {} because the bulkhead \
             was full",
            db.rejected_by_reason["breaker_open"], db.rejected_by_reason["bulkhead_full"]
        ),
    );
    assert!(r.expectations[0].observed.starts_with(&format!(
        "{:.1}%",
        100.0 * r.goodput_ratio_between(12.0, 30.0)
    )));
    claim(
        page,
        format!(
            "at least 75% success between 12s and 30s and got {:.1}%",
            100.0 * r.goodput_ratio_between(12.0, 30.0)
        ),
    );
    // The success line dips during the slowdown and is full again after it.
    assert!(r.goodput_ratio_between(0.0, 10.0) > 0.99);
    assert!((0.75..0.85).contains(&r.goodput_ratio_between(12.0, 30.0)));
    claim(page, "stays around four fifths");
    assert!(r.goodput_ratio_between(31.0, 45.0) > 0.99);
    // Another seed: numbers move a little, the digest entirely.
    let other = run_library_with("cascading-failure-mitigated", None, &[], Some(6));
    assert_ne!(other.digest, r.digest);
    let moved = (other.summary.successes as f64 / other.summary.offered as f64
        - s.successes as f64 / s.offered as f64)
        .abs();
    assert!(moved < 0.02, "{moved}");
}

#[test]
fn first_scenario_says_what_each_step_shows() {
    let page = "first-scenario.md";
    let one = book_run("first-1-two-tier.ron");
    let s = &one.summary;
    assert_eq!(s.failures, 0);
    assert_eq!(s.successes + s.requests_in_flight, s.offered);
    claim(
        page,
        format!(
            "Nothing goes wrong: {} of the requests succeed",
            percent(s.successes, s.offered)
        ),
    );
    claim(
        page,
        format!(
            "api's workers are busy {:.1}% of the time and the database's {:.1}%",
            100.0 * service_report(&one, "api").utilisation,
            100.0 * service_report(&one, "db").utilisation
        ),
    );
    assert_eq!(
        service_report(&one, "api").queue_depth_replica_max
            + service_report(&one, "db").queue_depth_replica_max,
        0
    );

    let two = book_run("first-2-slowdown.ron");
    let s = &two.summary;
    let api = service_report(&two, "api");
    assert_eq!(api.queue_depth_replica_max, 1000);
    claim(page, "fills up to its capacity of 1000 (`max 1000`)");
    claim(
        page,
        format!("wasted work ({:.1}s of api worker time)", api.wasted_work_s),
    );
    assert!(s.failures_by_reason["queue_full"] > 0);
    claim(
        page,
        format!(
            "Only {} of the requests succeed, and the p99 latency of those that do is {:.1}ms",
            percent(s.successes, s.offered),
            s.latency_ms.as_ref().unwrap().p99
        ),
    );
    assert!(two.goodput_ratio_between(12.0, 20.0) < 0.05);
    assert!(two.goodput_ratio_between(22.0, 30.0) > 0.99);

    let three = book_run("first-3-breaker-timeout.ron");
    let s = &three.summary;
    claim(
        page,
        format!("barely changes ({})", percent(s.successes, s.offered)),
    );
    let db = call_report(&three, "services.api.calls[0]");
    claim(
        page,
        format!(
            "The breaker refused {} calls at once (`breaker_open`) and the timeout cut {} more short",
            db.rejected_by_reason["breaker_open"], db.counts.timeouts
        ),
    );
    assert_eq!(call_report(&three, "clients.users.call").counts.timeouts, 0);
    assert_eq!(service_report(&three, "api").wasted_jobs, 0);
    claim(
        page,
        format!("keep a p99 of {:.1}ms", s.latency_ms.as_ref().unwrap().p99),
    );
    let first = &db.breakers[0].transitions[0];
    assert_eq!((first.from.as_str(), first.to.as_str()), ("closed", "open"));
    claim(page, format!("opening at {}s", first.t_s));
    assert_eq!(db.breakers[0].state, "closed");
    assert!(three.passed());

    let four = book_run("first-4-stages.ron");
    let api = service_report(&four, "api").arrivals;
    let made = |i: usize| {
        call_report(&four, &format!("services.api.calls[{i}]"))
            .counts
            .calls
    };
    // Requests still in their first stage when the run stops have made no call yet.
    assert!(api - made(0) < 10 && made(0) == made(1));
    claim(page, "Every request called `auth` and `catalog`");
    claim(
        page,
        format!(
            "`recs` was called on {:.0}% of them",
            100.0 * made(2) as f64 / made(1) as f64
        ),
    );
    let browse = made(3) as f64 / (made(3) + made(4)) as f64;
    assert!((0.88..0.92).contains(&browse), "{browse}");
    claim(page, "split the requests 9 to 1");
    assert!(four.passed());
}

fn ratio_percent(r: &Report, from_s: f64, to_s: f64) -> String {
    format!("{:.1}%", 100.0 * r.goodput_ratio_between(from_s, to_s))
}

#[test]
fn the_retry_storm_story_is_what_the_library_shows() {
    let page = "failures/retry-storm.md";
    let r = run_library("retry-storm");
    let db = service_report(&r, "db");
    claim(
        page,
        format!(
            "The clients made {:.2} attempts per request, and the api made {:.2} database \
             attempts per call: the database received {:.2} attempts per request offered",
            r.summary.amplification,
            call_report(&r, "services.api.calls[0]").amplification,
            db.load_factor
        ),
    );
    assert_eq!(db.queue_depth_replica_max, 1000);
    // Full from the slowdown to the end: every bucket from 12s on has a full queue at its peak.
    assert!(
        r.series
            .iter()
            .filter(|b| b.t_s >= 12.0)
            .all(|b| b.services[1].queue_total_max >= 999)
    );
    claim(
        page,
        format!("it spent {:.1}s of worker time", db.wasted_work_s),
    );
    claim(
        page,
        format!(
            "from 40s to the end, {} of the requests succeed",
            ratio_percent(&r, 40.0, 60.0)
        ),
    );
    assert!(
        r.goodput_ratio_between(20.0, 60.0) < 0.01,
        "it never comes back"
    );

    let jitter = run_library("retry-storm-full-jitter");
    claim(
        page,
        format!(
            "The database still receives {:.2} attempts per offered request",
            service_report(&jitter, "db").load_factor
        ),
    );
    assert!(jitter.goodput_ratio_between(40.0, 60.0) < 0.01);

    let budget = run_library("retry-storm-budget");
    claim(
        page,
        format!(
            "receives {:.2} attempts per offered request instead of {:.2}. The budget refused \
             {} retries at the client and {} at the api",
            service_report(&budget, "db").load_factor,
            db.load_factor,
            call_report(&budget, "clients.users.call")
                .counts
                .budget_exhausted,
            call_report(&budget, "services.api.calls[0]")
                .counts
                .budget_exhausted
        ),
    );
    assert!(budget.expectations[0].pass);
    let m = budget.metastability.as_ref().expect("the slowdown ends");
    claim(
        page,
        format!(
            "recovered {}s after the slowdown ended",
            m.recovered_after_s.expect("the budget recovers")
        ),
    );
}

#[test]
fn the_cascading_failure_story_is_what_the_library_shows() {
    let page = "failures/cascading-failure.md";
    let r = run_library("cascading-failure");
    claim(
        page,
        format!(
            "Only {:.0}% of requests reach the database (`load {:.2}`)",
            100.0 * service_report(&r, "db").load_factor,
            service_report(&r, "db").load_factor
        ),
    );
    let api = service_report(&r, "api");
    claim(
        page,
        format!(
            "between 12s and 30s only {} of the requests succeed",
            ratio_percent(&r, 12.0, 30.0)
        ),
    );
    claim(
        page,
        format!(
            "{} requests are refused at its door",
            api.failed_by_reason["queue_full"]
        ),
    );
    claim(
        page,
        format!("ejected api replicas {} times", api.ejections),
    );
    assert!(r.goodput_ratio_between(31.0, 45.0) > 0.95);

    let fixed = run_library("cascading-failure-mitigated");
    claim(
        page,
        format!(
            "Between 12s and 30s, {} of the requests succeed instead of {}",
            ratio_percent(&fixed, 12.0, 30.0),
            ratio_percent(&r, 12.0, 30.0)
        ),
    );
}

#[test]
fn the_metastable_story_is_what_the_library_shows() {
    let page = "failures/metastable-failure.md";
    let r = run_library("metastable-retry");
    claim(
        page,
        format!(
            "Before the spike, {} of the requests succeed",
            ratio_percent(&r, 0.0, 10.0)
        ),
    );
    let api = service_report(&r, "api");
    assert_eq!(api.queue_depth_replica_max, 500);
    claim(
        page,
        format!(
            "the api receives {:.2} attempts per offered request",
            api.load_factor
        ),
    );
    claim(
        page,
        format!(
            "from 40s to the end of the run {} of the requests succeed",
            ratio_percent(&r, 40.0, 60.0)
        ),
    );
    let wait = api.wait_ms_mean.unwrap();
    assert!(wait > 200.0);
    claim(page, format!("its mean wait is {wait:.1}ms"));
    claim(
        page,
        format!("it spent {:.1}s of worker time", api.wasted_work_s),
    );

    let budget = run_library("metastable-retry-budget");
    let codel = run_library("metastable-retry-codel");
    // The verdict's recovery time, as the reports print it.
    let back = |r: &Report| {
        let m = r
            .metastability
            .as_ref()
            .expect("a spike that ends gives a verdict");
        format!("{}s", m.recovered_after_s.expect("both recover"))
    };
    assert_eq!(
        r.metastability.as_ref().map(|m| m.verdict.as_str()),
        Some("metastable")
    );
    claim(
        page,
        format!(
            "With the budget, {} of all requests succeed and the service is healthy again \
             {} after the spike; with CoDel, {} succeed",
            percent(budget.summary.successes, budget.summary.offered),
            back(&budget),
            percent(codel.summary.successes, codel.summary.offered)
        ),
    );
    claim(page, format!("(recovered after {})", back(&codel)));
    assert!(service_report(&budget, "api").load_factor < 1.1);
}

#[test]
fn the_thundering_herd_story_is_what_the_library_shows() {
    let page = "failures/thundering-herd.md";
    let r = run_library("thundering-herd");
    let failed = r.summary.failures_by_reason["queue_full"];
    assert_eq!(r.summary.failures, failed);
    claim(
        page,
        format!(
            "{failed} requests fail with `queue_full` after spending all five attempts, although \
             the api is busy only {:.1}% of the time",
            100.0 * service_report(&r, "api").utilisation
        ),
    );
    // The waves: from 10s, a full bucket then an empty one, five times.
    let queue: Vec<u64> = r
        .series
        .iter()
        .map(|b| b.services[0].queue_total_max)
        .collect();
    for wave in 0..5 {
        let at = 20 + 2 * wave;
        assert!(queue[at] >= 20 && queue[at + 1] < 5, "{wave}: {queue:?}");
    }
    let jitter = run_library("thundering-herd-full-jitter");
    claim(
        page,
        format!(
            "{} requests fail instead of {failed}",
            jitter.summary.failures
        ),
    );
    assert!(jitter.summary.attempts < r.summary.attempts);

    let cache = run_library("thundering-herd-cache");
    claim(
        page,
        format!(
            "the database's queue climbs to {}, api workers pile up waiting on it, and between \
             10s and 14s only {} of the requests succeed",
            service_report(&cache, "db").queue_depth_replica_max,
            ratio_percent(&cache, 10.0, 14.0)
        ),
    );
    let coalesced = run_library("thundering-herd-cache-coalesced");
    claim(
        page,
        format!(
            "Between 10s and 14s, {} of the requests succeed, and the database's queue never \
             holds more than {} requests",
            ratio_percent(&coalesced, 10.0, 14.0),
            service_report(&coalesced, "db").queue_depth_replica_max
        ),
    );
}

fn client_percent(r: &Report, name: &str) -> String {
    let c = client_report(r, name);
    percent(c.successes, c.offered)
}

fn p99(c: &scenarios::report::ClientReport) -> String {
    format!("{:.1}ms", c.latency_ms.as_ref().unwrap().p99)
}

#[test]
fn the_retries_chapter_is_what_its_scenario_shows() {
    let page = "patterns/retries.md";
    let r = book_run("retries.ron");
    claim(
        page,
        format!(
            "Without retries, {} of the requests succeed, the 70% the error rate allows. With 3 \
             attempts, {} succeed",
            client_percent(&r, "once"),
            client_percent(&r, "retrying")
        ),
    );
    let a = call_report(&r, "clients.retrying.call").amplification;
    assert!((a - 1.39).abs() < 0.05, "close to 1 + 0.3 + 0.09: {a}");
    claim(page, format!("The price is {a:.2} attempts per request"));
    claim(
        page,
        format!(
            "({} against {})",
            p99(client_report(&r, "retrying")),
            p99(client_report(&r, "once"))
        ),
    );
}

#[test]
fn the_retry_budgets_chapter_is_what_its_scenario_shows() {
    let page = "patterns/retry-budgets.md";
    let r = book_run("retry-budgets.ron");
    let plain = call_report(&r, "clients.plain.call");
    let budgeted = call_report(&r, "clients.budgeted.call");
    claim(
        page,
        format!(
            "the plain client made {:.2} attempts per request (three per request during the \
             outage) and the budgeted one {:.2}: the budget refused {} retries",
            plain.amplification, budgeted.amplification, budgeted.counts.budget_exhausted
        ),
    );
    // During the outage (5s–15s) every attempt fails, and the plain client tries three times:
    // its service receives three attempts per request offered in those buckets.
    assert!(r.goodput_ratio_between(6.0, 14.0) == 0.0);
    let arrivals = |i: usize| -> u64 {
        r.series
            .iter()
            .filter(|b| (6.0..14.0).contains(&b.t_s))
            .map(|b| b.services[i].arrivals)
            .sum()
    };
    let offered: u64 = r
        .series
        .iter()
        .filter(|b| (6.0..14.0).contains(&b.t_s))
        .map(|b| b.offered)
        .sum();
    // api-a (index 0) gets three attempts per request of the plain client, about half of the
    // offered requests.
    let per_request = arrivals(0) as f64 / (offered as f64 / 2.0);
    assert!((2.8..3.2).contains(&per_request), "{per_request}");
    claim(
        page,
        format!(
            "{} of the plain client's requests succeeded against {} of the budgeted one's",
            client_percent(&r, "plain"),
            client_percent(&r, "budgeted")
        ),
    );
    assert!(r.goodput_ratio_between(16.0, 20.0) > 0.999);
    assert!(r.passed());
}

/// Brooker's published behaviour: below the threshold the retry breaker "behaves like N
/// retries", above it "like no retries"; first attempts always go.
#[test]
fn the_retry_breaker_section_is_what_its_scenario_shows() {
    let page = "patterns/retry-budgets.md";
    let r = book_run("retry-breaker.ron");
    let call = |client: &str| {
        call_report(&r, &format!("clients.{client}.call"))
            .counts
            .clone()
    };
    let per_request = |c: &scenarios::figures::CallStats| c.retries as f64 / c.calls as f64;
    let (plain_5, breaker_5) = (call("plain-5"), call("breaker-5"));
    let (plain_30, breaker_30) = (call("plain-30"), call("breaker-30"));
    // Below 10%: nothing refused, so as many retries per request as without it (0.05 + 0.05²,
    // each client on its own draws: about 300 retries, a standard deviation near 6%).
    assert_eq!(breaker_5.budget_exhausted, 0);
    let (a, b) = (per_request(&plain_5), per_request(&breaker_5));
    assert!(
        (a - 0.0525).abs() < 0.01 && (b - a).abs() < 0.15 * a,
        "{a} {b}"
    );
    claim(
        page,
        format!("{b:.3} retries per request behind it, {a:.3} without it"),
    );
    // Above: 0.3 + 0.09 retries per request without it, next to none with it.
    let (a, b) = (per_request(&plain_30), per_request(&breaker_30));
    assert!((a - 0.39).abs() < 0.03, "{a}");
    assert!(b < 0.002, "{b}");
    // First attempts are never refused: every request offered was sent.
    for (client, c) in [("breaker-5", &breaker_5), ("breaker-30", &breaker_30)] {
        assert_eq!(
            client_report(&r, client).offered,
            c.calls,
            "{client}: {c:?}"
        );
    }
    claim(
        page,
        format!(
            "the plain client made {a:.2} retries per request and the one behind the breaker \
             {b:.4} ({} retries,",
            breaker_30.retries
        ),
    );
    claim(
        page,
        format!(
            "the breaker refused {} retries",
            breaker_30.budget_exhausted
        ),
    );
    // What a client without retries gets at 30% failures.
    let ok = client_report(&r, "breaker-30");
    let ratio = ok.successes as f64 / ok.offered as f64;
    assert!((ratio - 0.7).abs() < 0.02, "{ratio}");
    claim(
        page,
        format!(
            "{} of its requests succeeded against {} of the plain client's",
            client_percent(&r, "breaker-30"),
            client_percent(&r, "plain-30")
        ),
    );
}

#[test]
fn the_timeouts_chapter_is_what_its_scenario_shows() {
    let page = "patterns/timeouts.md";
    let r = book_run("timeouts.ron");
    claim(
        page,
        format!(
            "The patient client's p99 is {}",
            p99(client_report(&r, "patient"))
        ),
    );
    claim(
        page,
        format!(
            "The bounded client's is {}",
            p99(client_report(&r, "bounded"))
        ),
    );
    let failed = client_report(&r, "bounded").failures;
    claim(page, format!("Only {failed} requests failed"));
    assert_eq!(client_report(&r, "patient").failures, 0);
    claim(
        page,
        format!(
            "The first api's workers are busy {:.1}% of the time, most of it waiting for the slow \
             tail; the second's {:.1}%",
            100.0 * service_report(&r, "api-a").utilisation,
            100.0 * service_report(&r, "api-b").utilisation
        ),
    );
    assert!(service_report(&r, "db-b").cancelled > 0);
}

#[test]
fn the_circuit_breakers_chapter_is_what_its_scenario_shows() {
    let page = "patterns/circuit-breakers.md";
    let r = book_run("circuit-breakers.ron");
    let plain = client_report(&r, "plain");
    let guarded = client_report(&r, "breaker");
    claim(
        page,
        format!(
            "the first api's queue grows to {} requests, {} requests time out at the client, and \
             the client's p99 is {}",
            service_report(&r, "api-a").queue_depth_replica_max,
            plain.failures_by_reason["timeout"],
            p99(plain)
        ),
    );
    let db = call_report(&r, "services.api-b.calls[0]");
    let breaker = &db.breakers[0];
    claim(
        page,
        format!(
            "the breaker opens at {}s and refuses {} calls at once",
            breaker.transitions[0].t_s, db.rejected_by_reason["breaker_open"]
        ),
    );
    claim(page, format!("its client's p99 is {}", p99(guarded)));
    assert!(!guarded.failures_by_reason.contains_key("timeout"));
    assert_eq!(breaker.state, "closed");
    claim(
        page,
        format!(
            "more successes ({} against {})",
            plain.successes, guarded.successes
        ),
    );
    assert!(r.passed());
}

#[test]
fn the_bulkheads_chapter_is_what_the_library_shows() {
    let page = "patterns/bulkheads.md";
    let shared = run_library("bulkhead-isolation");
    claim(
        page,
        format!(
            "Between 12s and 30s only {} of the requests succeed",
            ratio_percent(&shared, 12.0, 30.0)
        ),
    );
    assert!(shared.summary.failures_by_reason["queue_full"] > 0);
    let separate = run_library("bulkhead-isolation-separate");
    claim(
        page,
        format!(
            "Between 12s and 30s, {} succeed",
            ratio_percent(&separate, 12.0, 30.0)
        ),
    );
    assert!(
        call_report(&separate, "services.frontend.calls[1]").rejected_by_reason["bulkhead_full"]
            > 0
    );
}

#[test]
fn the_load_shedding_chapter_is_what_the_library_shows() {
    let page = "patterns/load-shedding.md";
    let none = run_library("shedding-codel-vs-pid-none");
    claim(
        page,
        format!(
            "With no shedding, {} of the requests offered between 15s and 40s succeed",
            ratio_percent(&none, 15.0, 40.0)
        ),
    );
    claim(
        page,
        format!(
            "the api does {:.1}s of wasted work",
            service_report(&none, "api").wasted_work_s
        ),
    );
    let codel = run_library("shedding-codel-vs-pid-codel");
    let pid = run_library("shedding-codel-vs-pid-pid");
    let p = |r: &Report| format!("{:.1}ms", r.summary.latency_ms.as_ref().unwrap().p99);
    claim(
        page,
        format!(
            "Between 15s and 40s, CoDel serves {} of the requests and the PID shedder {}",
            ratio_percent(&codel, 15.0, 40.0),
            ratio_percent(&pid, 15.0, 40.0)
        ),
    );
    claim(
        page,
        format!(
            "the p99 is {} and {} instead of {}",
            p(&codel),
            p(&pid),
            p(&none)
        ),
    );
}

#[test]
fn the_rate_limiters_chapter_is_what_the_library_shows() {
    let page = "patterns/rate-limiters.md";
    let r = run_library("limiter-comparison");
    // The most requests each limiter let through in any one second (ten 100ms buckets).
    let most_in_a_second = |name: &str| {
        let i = r.services.iter().position(|s| s.name == name).unwrap();
        let ok: Vec<u64> = r.series.iter().map(|b| b.services[i].ok).collect();
        ok.windows(10).map(|w| w.iter().sum::<u64>()).max().unwrap()
    };
    claim(
        page,
        format!(
            "The fixed window lets {} requests through in one second",
            most_in_a_second("fixed-window")
        ),
    );
    claim(
        page,
        format!(
            "let at most {}, {} and {} through in any one second",
            most_in_a_second("sliding-counter"),
            most_in_a_second("token-bucket"),
            most_in_a_second("gcra")
        ),
    );
}

#[test]
fn the_verification_chapter_agrees_with_queueing_theory() {
    use sim_core::queueing::{erlang_c, mmc_mean_wait};
    let page = "verification.md";
    let r = book_run("queueing.ron");
    for (name, workers, lambda) in [("mm1", 1u32, 50.0), ("mm4", 4, 300.0)] {
        let mu = 100.0;
        let s = service_report(&r, name);
        let rho = lambda / (mu * f64::from(workers));
        let waits = erlang_c(workers, lambda / mu);
        let wq_ms = 1000.0 * mmc_mean_wait(workers, lambda, mu);
        let measured_wq = s.wait_ms_mean.unwrap();
        let measured_waits = s.waited_ratio.unwrap();
        assert!(
            (measured_wq / wq_ms - 1.0).abs() < 0.03,
            "{name}: {measured_wq} vs {wq_ms}"
        );
        assert!(
            (measured_waits - waits).abs() < 0.01,
            "{name}: {measured_waits} vs {waits}"
        );
        assert!(
            (s.utilisation - rho).abs() < 0.005,
            "{name}: {} vs {rho}",
            s.utilisation
        );
        claim(
            page,
            format!(
                "| {:.1}% | {:.1}% | {:.1}% | {:.2}ms | {:.1}ms |",
                100.0 * rho,
                100.0 * waits,
                100.0 * measured_waits,
                wq_ms,
                measured_wq
            ),
        );
        // Little's law on the queue.
        assert!((s.queue_depth_total_mean - lambda * wq_ms / 1000.0).abs() < 0.1);
    }
}

#[test]
fn the_replay_chapter_is_what_the_runs_show() {
    let page = "replaying.md";
    let path = src().join("scenarios/replay.ron");
    let scenario = load(&path.display().to_string()).unwrap();
    let failing: Vec<u64> = (1..=20)
        .filter(|&seed| {
            let options = RunOptions {
                seed: Some(seed),
                ..RunOptions::default()
            };
            !run(&scenario, "replay.ron", &options)
                .unwrap()
                .report
                .passed()
        })
        .collect();
    assert_eq!(failing, [19]);
    claim(page, "One seed in twenty fails.");
    let options = |bucket: Option<&str>| RunOptions {
        seed: Some(19),
        bucket: bucket.map(|b| b.parse().unwrap()),
        ..RunOptions::default()
    };
    let r = run(&scenario, "replay.ron", &options(Some("500ms")))
        .unwrap()
        .report;
    let same = run(&scenario, "replay.ron", &options(None)).unwrap().report;
    assert_eq!(
        r.digest, same.digest,
        "the bucket width changes only the report"
    );
    claim(
        page,
        format!(
            "The expectation fails with a p99 of {:.1}ms",
            r.summary.latency_ms.as_ref().unwrap().p99
        ),
    );
    let api = service_report(&r, "api");
    let peak = r
        .series
        .iter()
        .max_by_key(|b| b.services[0].queue_total_max)
        .unwrap();
    assert!((4.0..5.0).contains(&peak.t_s), "{}", peak.t_s);
    claim(
        page,
        format!(
            "the queue peaks at {} requests in the buckets from 4s to 5s",
            api.queue_depth_replica_max
        ),
    );
    // `resim why`: seed 19 is its queue alone; the retry storm is a loop of retries.
    let why = &same.why[0];
    assert!(why.held_back.is_empty(), "{why:?}");
    let busy = why
        .saturated
        .iter()
        .find(|f| f.subject == "api" && f.evidence.contains_key("saturated_s"));
    let busy = &busy
        .expect("the worker was busy while the queue drained")
        .evidence;
    claim(
        page,
        format!(
            "Nothing was full: the api's one worker was busy without a break from {}s to {}s",
            busy["saturated_from_s"], busy["saturated_to_s"]
        ),
    );
    let storm = support::run_library("metastable-retry");
    let after = storm.why.iter().find(|w| !w.failed.is_empty()).unwrap();
    let attempts = after.attempts_per_request.unwrap();
    assert_eq!(libm::round(attempts), 3.0, "{attempts}");
    claim(
        page,
        "After the spike, the clients still make three attempts per request",
    );
}

#[test]
fn the_window_by_window_section_is_what_the_slowdown_shows() {
    let page = "replaying.md";
    let path = src().join("scenarios/slowdown-window.ron");
    let scenario = load(&path.display().to_string()).unwrap();
    let r = book_run("slowdown-window.ron");
    assert!(service_report(&r, "api").utilisation < 0.25);
    claim(
        page,
        "the api is busy less than a quarter of the time on average",
    );
    let slowdown = scenarios::report::why::explain(&scenario, &r, true);
    let fault = &slowdown[0];
    assert_eq!((fault.from_s, fault.to_s), (20.0, 30.0));
    assert_eq!(fault.failed_attempts[0].reason, "timeout");
    claim(page, "the users' attempts timed out");
    let busy = |service: &str| {
        let f = fault.saturated.iter();
        let mut f =
            f.filter(|f| f.subject == service && f.evidence.contains_key("saturated_from_s"));
        f.next().unwrap().evidence.clone()
    };
    let api = busy("api");
    assert_eq!(api["saturated_to_s"], 30.0);
    claim(
        page,
        format!("from {}s to the fault's end", api["saturated_from_s"]),
    );
    assert_eq!(busy("db")["saturated_from_s"], 20.0);
    claim(page, "and the db's from its start");
}

#[test]
fn the_hedging_chapter_is_what_its_scenario_shows() {
    let page = "patterns/hedging.md";
    let r = book_run("hedging.ron");
    claim(
        page,
        format!(
            "The single client's p99 is {}",
            p99(client_report(&r, "single"))
        ),
    );
    let hedged = call_report(&r, "clients.hedged.call");
    claim(
        page,
        format!(
            "The hedged client's is {}, for {:.2} attempts per request: {} hedges were sent and {} \
             of them answered first",
            p99(client_report(&r, "hedged")),
            hedged.amplification,
            hedged.counts.hedges,
            hedged.counts.hedge_wins
        ),
    );
    assert!(service_report(&r, "api-b").cancelled > 0);
    assert!(r.passed());
}

#[test]
fn the_fallbacks_chapter_is_what_its_scenario_shows() {
    let page = "patterns/fallbacks.md";
    let r = book_run("fallbacks.ron");
    let strict = client_report(&r, "strict");
    claim(
        page,
        format!(
            "{} errors, {} of its requests succeed",
            strict.failures_by_reason["error"],
            percent(strict.successes, strict.offered)
        ),
    );
    let degrading = client_report(&r, "degrading");
    assert_eq!(degrading.failures, 0);
    let c = call_report(&r, "clients.degrading.call");
    claim(
        page,
        format!(
            "{} from the last good answer during the first 5s of the outage, and {} with the \
             static default",
            c.counts.fallback_cache, c.counts.fallback_static
        ),
    );
}

/// The ratio an expectation observed (`80.1%` of `80.1% (649 of 810)`), found by the start of
/// its text (`once success ratio from 10s to 14s`).
fn observed(r: &Report, expectation: &str) -> String {
    let e = r
        .expectations
        .iter()
        .find(|e| e.expectation.starts_with(expectation))
        .unwrap_or_else(|| panic!("no expectation `{expectation}`"));
    assert!(e.pass, "{}: {}", e.expectation, e.observed);
    e.observed.split_whitespace().next().unwrap().to_string()
}

#[test]
fn the_concurrency_limits_chapter_is_what_its_scenario_shows() {
    let page = "patterns/concurrency-limits.md";
    let r = book_run("concurrency-limits.ron");
    let none = service_report(&r, "api-none");
    claim(
        page,
        format!(
            "From 7s to 15s only {} of the requests succeed, and the service does {:.1}s of \
             wasted work",
            observed(&r, "none success ratio from 7s to 15s"),
            none.wasted_work_s
        ),
    );
    assert!(client_failures(client_report(&r, "none"), "timeout") > 10_000);
    // Every limit refuses the excess and lets nothing time out; fixed, Gradient2 and Envoy
    // serve about two thirds of the spike (1000 of 1500 per second).
    for name in ["fixed", "aimd", "vegas", "gradient2", "envoy"] {
        let c = client_report(&r, name);
        assert_eq!(client_failures(c, "timeout"), 0, "{name}");
        assert!(client_failures(c, "concurrency_limited") > 4000, "{name}");
    }
    for name in ["gradient2", "envoy"] {
        let ratio: f64 = observed(&r, &format!("{name} success ratio from 5s to 15s"))
            .trim_end_matches('%')
            .parse()
            .unwrap();
        assert!((60.0..72.0).contains(&ratio), "{name}: {ratio}");
    }
    let wait = |name: &str| format!("{:.1}ms", service_report(&r, name).wait_ms_mean.unwrap());
    claim(
        page,
        format!("the fixed limit's mean wait is {}", wait("api-fixed")),
    );
    assert!(service_report(&r, "api-fixed").queue_depth_replica_max <= 10);
    claim(page, format!("holds the wait at {}", wait("api-gradient2")));
    claim(
        page,
        format!("at a concurrency of 3, at {}", wait("api-envoy")),
    );
    assert!(service_report(&r, "api-aimd").queue_depth_replica_max > 180);
    claim(
        page,
        format!(
            "its mean wait is {} and its p99 {}, against {} for the fixed limit",
            wait("api-aimd"),
            p99(client_report(&r, "aimd")),
            p99(client_report(&r, "fixed"))
        ),
    );
    claim(
        page,
        format!(
            "Even before the spike, at 70% load, only {} of its requests are admitted",
            observed(&r, "vegas success ratio from 0s to 5s")
        ),
    );
}

#[test]
fn the_idempotency_chapter_is_what_its_scenario_shows() {
    let page = "patterns/idempotency.md";
    let r = book_run("idempotency.ron");
    let once = client_report(&r, "unsafe");
    let timeouts = client_failures(once, "timeout");
    assert_eq!(once.failures, timeouts);
    claim(
        page,
        format!(
            "{} of its requests fail with a timeout",
            percent(timeouts, once.offered)
        ),
    );
    // The charges were made: each timed-out request is a job the service finished for nobody.
    assert_eq!(service_report(&r, "payments-a").wasted_jobs, timeouts);
    let blind = client_report(&r, "blind");
    assert!(blind.successes * once.offered > once.successes * blind.offered);
    let twice = service_report(&r, "payments-b").duplicate_executions;
    claim(
        page,
        format!(
            "its service ran {twice} charges a second time (`duplicate executions`): {twice} customers"
        ),
    );
    let keyed = service_report(&r, "payments-c");
    assert_eq!(keyed.duplicate_executions, 0);
    claim(
        page,
        format!(
            "{} retries found their charge finished and got its result back (`replayed`), and {} \
             arrived while the first attempt was still running",
            keyed.replayed, keyed.failed_by_reason["conflict"]
        ),
    );
    claim(
        page,
        format!(
            "the keyed client's p99 is {} against the blind client's {}",
            p99(client_report(&r, "keyed")),
            p99(blind)
        ),
    );
}

#[test]
fn the_health_checks_chapter_is_what_its_scenario_shows() {
    let page = "patterns/health-checks.md";
    let r = book_run("health-checks.ron");
    let lost = |name: &str| client_failures(client_report(&r, name), "unavailable");
    // Round robin: a third of 10s at 300/s.
    assert!((900..1100).contains(&lost("blind")), "{}", lost("blind"));
    claim(
        page,
        format!("whole 10 seconds: {} requests fail", lost("blind")),
    );
    let probed = service_report(&r, "api-probed");
    assert_eq!(probed.marked_unhealthy, 1);
    claim(
        page,
        format!(
            "The probed service loses {} before two probes in a row have failed (`marked \
             unhealthy 1`)",
            lost("probed")
        ),
    );
    let ejecting = service_report(&r, "api-ejecting");
    assert_eq!(lost("ejecting"), 5 * ejecting.ejections);
    claim(
        page,
        format!(
            "The ejecting service loses only {} requests, 5 for each of its {} ejections",
            lost("ejecting"),
            ejecting.ejections
        ),
    );
    for name in ["blind", "probed", "ejecting"] {
        assert_eq!(client_report(&r, name).failures, lost(name), "{name}");
    }
}

#[test]
fn the_network_faults_chapter_is_what_its_scenario_shows() {
    let page = "patterns/network-faults.md";
    let r = book_run("network-faults.ron");
    let once = observed(&r, "once success ratio from 10s to 14s");
    let ratio: f64 = once.trim_end_matches('%').parse().unwrap();
    assert!((ratio - 81.0).abs() < 3.0, "0.9 × 0.9: {ratio}");
    claim(
        page,
        format!(
            "The client that tries once gets {once} from 10s to 14s; the retrying client gets {}",
            observed(&r, "retrying success ratio from 10s to 14s")
        ),
    );
    claim(
        page,
        format!(
            "does not notice ({} from 4s to 8s)",
            observed(&r, "retrying success ratio from 4s to 8s")
        ),
    );
    claim(
        page,
        format!(
            "{} of its requests succeed in that window, and its service runs {} requests more \
             than once",
            observed(&r, "tight success ratio from 4s to 8s"),
            service_report(&r, "api-c").duplicate_executions
        ),
    );
    // The partition: every link to and from a service dropped messages.
    assert!(
        r.network
            .iter()
            .all(|l| l.dropped.values().sum::<u64>() > 0)
    );
    for name in ["once", "retrying", "tight"] {
        let c = client_report(&r, name);
        assert_eq!(c.failures, client_failures(c, "timeout"), "{name}");
    }
}

/// Runs a book scenario (relative to `book/src/scenarios`) with one of its variants.
fn book_variant_run(file: &str, variant: &str) -> Report {
    let path = src().join("scenarios").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    // Named by its path, so that the files of samples it names are found beside it.
    let path = path.display().to_string();
    let overrides = scenarios::format::overrides::Overrides {
        variant: Some(variant.to_string()),
        sets: Vec::new(),
    };
    let limits = scenarios::format::limits::RunLimits::default();
    let s = scenarios::format::overrides::parse_overridden(&path, &text, &limits, &overrides)
        .unwrap_or_else(|e| panic!("{e}"));
    run(&s, file, &RunOptions::default()).unwrap().report
}

#[test]
fn the_head_of_line_section_is_what_its_scenario_shows() {
    let page = "patterns/network-faults.md";
    let many = book_run("head-of-line.ron");
    let one = book_variant_run("head-of-line.ron", "one-connection");
    let to_api = |r: &Report| {
        r.network
            .iter()
            .find(|l| l.source == "users" && l.target == "api")
            .unwrap()
            .clone()
    };
    let (many_link, one_link) = (to_api(&many), to_api(&one));
    // A draw per message delivers what is declared; one connection delivers far later.
    assert!((many_link.latency_ms_p50 / many_link.declared_latency_ms_p50 - 1.0).abs() < 0.02);
    assert!((many_link.latency_ms_p99 / many_link.declared_latency_ms_p99 - 1.0).abs() < 0.05);
    assert!(one_link.latency_ms_p50 > 4.0 * one_link.declared_latency_ms_p50);
    claim(
        page,
        format!(
            "p50 {:.1} and p99 {:.1} delivered to the api, against {:.1} and {:.1} declared",
            many_link.latency_ms_p50,
            many_link.latency_ms_p99,
            many_link.declared_latency_ms_p50,
            many_link.declared_latency_ms_p99
        ),
    );
    claim(
        page,
        format!(
            "deliver p50 {:.1} and p99 {:.1}",
            one_link.latency_ms_p50, one_link.latency_ms_p99
        ),
    );
    let p50 = |r: &Report| r.summary.latency_ms.as_ref().unwrap().p50;
    claim(
        page,
        format!(
            "Users wait {:.1}ms at the median instead of {:.1}ms",
            p50(&one),
            p50(&many)
        ),
    );
    assert_eq!(service_report(&many, "api").queue_depth_replica_max, 0);
    claim(
        page,
        format!(
            "holds up to {} requests at once",
            service_report(&one, "api").queue_depth_replica_max
        ),
    );
}

#[test]
fn the_coalescing_chapter_is_what_its_scenario_shows() {
    let page = "patterns/coalescing.md";
    let r = book_run("coalescing.ron");
    let db = service_report(&r, "db-plain");
    claim(
        page,
        format!(
            "From 5s to 10s, only {} of the plain api's requests succeed: its database's queue \
             climbs to {} and waits there reach {:.1}ms at the p99",
            observed(&r, "plain success ratio from 5s to 10s"),
            db.queue_depth_replica_max,
            db.wait_ms_p99.unwrap()
        ),
    );
    assert!(service_report(&r, "api-plain").failed_by_reason["queue_full"] > 1000);
    let hot = service_report(&r, "api-hot");
    claim(
        page,
        format!(
            "serves {} of its requests in the same window: {} misses waited for a fetch already \
             in flight (`coalesced misses`) and its database's queue never held more than {} \
             requests",
            observed(&r, "hot-keys success ratio from 5s to 10s"),
            hot.coalesced,
            service_report(&r, "db-hot").queue_depth_replica_max
        ),
    );
    assert_eq!(service_report(&r, "api-many").coalesced, 0);
    claim(
        page,
        format!(
            "no miss is coalesced, and {} of the requests succeed",
            observed(&r, "many-keys success ratio from 5s to 10s")
        ),
    );
}

/// Mean and batch-means standard error of one figure taken per report bucket (each bucket of
/// a long run is a batch).
fn batch_mean(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

#[test]
fn the_verification_chapter_agrees_with_pollaczek_khinchine_erlang_b_and_mm1k() {
    use sim_core::queueing::{erlang_b, md1_mean_wait, mm1k_blocking, mm1k_mean_wait};
    let page = "verification.md";
    let r = book_run("queueing-loss.ron");
    let index = |name: &str| r.services.iter().position(|s| s.name == name).unwrap();
    let per_bucket = |name: &str, f: &dyn Fn(&scenarios::report::ServicePoint) -> f64| {
        let i = index(name);
        r.series
            .iter()
            .map(|b| f(&b.services[i]))
            .collect::<Vec<f64>>()
    };
    // Each check: the run resolves the tolerance (three standard errors inside it), and the
    // measured figure is within it.
    let check = |label: &str, measured: f64, theory: f64, batches: Vec<f64>, tolerance: f64| {
        let (_, error) = batch_mean(&batches);
        assert!(
            3.0 * error < tolerance * theory,
            "{label}: the run is too short, 3 standard errors are {:.2}% of the theory",
            300.0 * error / theory
        );
        assert!(
            (measured / theory - 1.0).abs() < tolerance,
            "{label}: {measured} vs {theory}"
        );
    };

    // M/D/1: λ = 250/s, constant 2ms. The queue length per bucket is Little's λ·W_q.
    let md1 = service_report(&r, "md1");
    let wq_theory = 1000.0 * md1_mean_wait(250.0, 0.002);
    let wq = md1.wait_ms_mean.unwrap();
    let lq = per_bucket("md1", &|p| p.queue_total_mean * 1000.0 / 250.0);
    check("M/D/1 W_q", wq, wq_theory, lq, 0.03);
    claim(
        page,
        format!(
            "| M/D/1, λ = 250/s, S = 2ms | W<sub>q</sub> | {wq_theory:.2}ms | {wq:.2}ms | {:+.1}% |",
            100.0 * (wq / wq_theory - 1.0)
        ),
    );

    // Erlang B: 4 workers, a = 3, no queue.
    let mm44 = service_report(&r, "mm44");
    let lost = mm44.failed_by_reason["concurrency_limited"];
    let b_theory = erlang_b(4, 3.0);
    let b = lost as f64 / mm44.arrivals as f64;
    let batches = per_bucket("mm44", &|p| 1.0 - p.ok as f64 / p.arrivals as f64);
    check("Erlang B", b, b_theory, batches, 0.03);
    assert_eq!(mm44.queue_depth_replica_max, 0);
    claim(
        page,
        format!(
            "| M/M/4/4, λ = 300/s, μ = 100/s | refused | {:.2}% | {:.2}% | {:+.1}% |",
            100.0 * b_theory,
            100.0 * b,
            100.0 * (b / b_theory - 1.0)
        ),
    );
    // The busy workers: a(1 − B).
    assert!((mm44.busy_workers_mean - 3.0 * (1.0 - b_theory)).abs() < 0.03);

    // M/M/1/5: one in service and four waiting.
    let mm15 = service_report(&r, "mm15");
    let p_theory = mm1k_blocking(450.0, 500.0, 5);
    let p = mm15.failed_by_reason["queue_full"] as f64 / mm15.arrivals as f64;
    let batches = per_bucket("mm15", &|s| 1.0 - s.ok as f64 / s.arrivals as f64);
    check("M/M/1/5 blocking", p, p_theory, batches, 0.03);
    claim(
        page,
        format!(
            "| M/M/1/5, λ = 450/s, μ = 500/s | refused | {:.2}% | {:.2}% | {:+.1}% |",
            100.0 * p_theory,
            100.0 * p,
            100.0 * (p / p_theory - 1.0)
        ),
    );
    let wq_theory = 1000.0 * mm1k_mean_wait(450.0, 500.0, 5);
    let wq = mm15.wait_ms_mean.unwrap();
    assert!((wq / wq_theory - 1.0).abs() < 0.03, "{wq} vs {wq_theory}");
    claim(
        page,
        format!(
            "| M/M/1/5, λ = 450/s, μ = 500/s | W<sub>q</sub> of the admitted | {wq_theory:.2}ms | {wq:.2}ms | {:+.1}% |",
            100.0 * (wq / wq_theory - 1.0)
        ),
    );
}

// The charts in the failure stories: what the prose reads off them, from the series they draw.

/// Mean of `f` over the buckets starting in `[from, to)` seconds.
fn mean_over(
    r: &Report,
    from: f64,
    to: f64,
    f: impl Fn(&scenarios::report::SeriesRow) -> f64,
) -> f64 {
    let rows: Vec<f64> = r
        .series
        .iter()
        .filter(|row| row.t_s >= from && row.t_s < to)
        .map(f)
        .collect();
    rows.iter().sum::<f64>() / rows.len() as f64
}

/// Largest `f` over the buckets starting in `[from, to)` seconds.
fn max_over(
    r: &Report,
    from: f64,
    to: f64,
    f: impl Fn(&scenarios::report::SeriesRow) -> f64,
) -> f64 {
    r.series
        .iter()
        .filter(|row| row.t_s >= from && row.t_s < to)
        .map(f)
        .fold(0.0, f64::max)
}

/// A figure as the prose rounds it: to the nearest hundred, with a thousands separator.
fn hundreds(x: f64) -> String {
    let n = (libm::round(x / 100.0) * 100.0) as u64;
    if n >= 1000 {
        format!("{},{:03}", n / 1000, n % 1000)
    } else {
        n.to_string()
    }
}

fn service_point<'a>(
    row: &'a scenarios::report::SeriesRow,
    name: &str,
) -> &'a scenarios::report::ServicePoint {
    row.services.iter().find(|s| s.name == name).unwrap()
}

/// The charts of library scenario `name` committed under `book/src/charts/` are the ones its
/// run draws today (`UPDATE_BOOK=1` rewrites them).
fn charts_are_current(name: &str, r: &Report) {
    let dir = src().join("charts").join(name);
    for c in scenarios::report::render::charts(r).expect("the charts draw") {
        let path = dir.join(format!("{}.svg", c.name));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == c.svg {
            continue;
        }
        if std::env::var_os("UPDATE_BOOK").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &c.svg).unwrap();
        } else {
            panic!(
                "{} is not what the run draws: regenerate the library's charts with \
                 `cargo run --release -p scenarios --example charts -- book/src/charts`",
                path.display()
            );
        }
    }
}

#[test]
fn the_failure_stories_read_their_charts_right() {
    let per_s = |r: &Report, n: u64| n as f64 / r.bucket_s;

    let r = run_library("metastable-retry");
    charts_are_current("metastable-retry", &r);
    let page = "failures/metastable-failure.md";
    let spike = max_over(&r, 10.0, 15.0, |row| per_s(&r, row.attempts));
    let offered = mean_over(&r, 20.0, 60.0, |row| per_s(&r, row.offered));
    let attempts = mean_over(&r, 20.0, 60.0, |row| per_s(&r, row.attempts));
    let goodput = max_over(&r, 20.0, 60.0, |row| row.goodput_per_s);
    claim(
        page,
        format!(
            "attempts jump to about {} per second during the spike",
            hundreds(spike)
        ),
    );
    claim(
        page,
        format!(
            "offered load is back to about {} per second",
            hundreds(offered)
        ),
    );
    claim(page, format!("attempts stay near {}", hundreds(attempts)));
    assert_eq!(
        goodput, 0.0,
        "{page} says goodput stays at zero after the spike"
    );

    let r = run_library("retry-storm");
    charts_are_current("retry-storm", &r);
    let page = "failures/retry-storm.md";
    let before = mean_over(&r, 0.0, 10.0, |row| per_s(&r, row.attempts));
    let after = mean_over(&r, 20.0, 60.0, |row| per_s(&r, row.attempts));
    claim(
        page,
        format!(
            "attempts jump from about {} to about {} per second",
            hundreds(before),
            hundreds(after)
        ),
    );
    assert!(after > before * 2.0);
    assert_eq!(max_over(&r, 20.0, 60.0, |row| row.goodput_per_s), 0.0);

    let r = run_library("cascading-failure");
    charts_are_current("cascading-failure", &r);
    let page = "failures/cascading-failure.md";
    let capacity = r.series[0]
        .services
        .iter()
        .find(|s| s.name == "api")
        .unwrap()
        .capacity_workers_mean;
    let full = r
        .series
        .iter()
        .find(|row| service_point(row, "api").busy_workers_max >= capacity)
        .expect("the api's workers fill up");
    claim(
        page,
        format!("climb to its capacity of {capacity} within two seconds"),
    );
    assert!(full.t_s >= 10.0 && full.t_s < 12.0, "full at {}", full.t_s);
    let queue = mean_over(&r, 14.0, 29.0, |row| {
        service_point(row, "api").queue_total_mean
    });
    claim(
        page,
        format!(
            "its queue stays at about {:.0} until the database recovers",
            queue
        ),
    );
    assert_eq!(
        max_over(
            &r,
            33.0,
            45.0,
            |row| service_point(row, "api").queue_total_max as f64
        ),
        0.0
    );

    let page = "failures/thundering-herd.md";
    let r = run_library("thundering-herd-cache");
    charts_are_current("thundering-herd-cache", &r);
    let stampede = max_over(&r, 10.0, 20.0, |row| {
        service_point(row, "db").queue_total_max as f64
    });
    let long = r
        .series
        .iter()
        .filter(|row| service_point(row, "db").queue_total_max as f64 >= stampede * 0.9)
        .count() as f64
        * r.bucket_s;
    claim(
        page,
        format!(
            "the queue holds about {} requests for {long:.0} seconds",
            hundreds(stampede)
        ),
    );
    let r = run_library("thundering-herd-cache-coalesced");
    charts_are_current("thundering-herd-cache-coalesced", &r);
    let coalesced = max_over(&r, 0.0, 30.0, |row| {
        service_point(row, "db").queue_total_max as f64
    });
    claim(page, format!("with it, never more than {coalesced:.0}"));
}

#[test]
fn the_experiments_chapter_says_what_ten_passing_seeds_prove() {
    let (lower, _) = scenarios::experiment::stats::wilson(10, 10);
    claim(
        "experiments.md",
        format!("they put it above {:.0}%", 100.0 * lower),
    );
}

#[test]
fn the_traffic_classes_chapter_is_what_the_library_shows() {
    let page = "patterns/traffic-classes.md";
    let class = |r: &Report, client: &str, name: &str| {
        r.clients
            .iter()
            .find(|c| c.name == client)
            .unwrap()
            .classes
            .iter()
            .find(|k| k.name == name)
            .unwrap()
            .traffic
            .clone()
    };
    let global = run_library("noisy-neighbour");
    let after = global
        .expectations
        .iter()
        .find(|e| e.expectation.contains("after 11s"))
        .unwrap();
    let observed = after.observed.split(' ').next().unwrap();
    claim(
        page,
        format!("the steady tenants get {observed} of their requests through"),
    );
    let overrides = scenarios::format::overrides::Overrides {
        variant: Some("per-tenant".to_string()),
        sets: Vec::new(),
    };
    let entry = scenarios::cli::library::find("noisy-neighbour").unwrap();
    let scenario = scenarios::format::overrides::parse_overridden(
        entry.name,
        entry.text,
        &scenarios::format::limits::RunLimits::default(),
        &overrides,
    )
    .unwrap();
    let tenant = run(&scenario, entry.name, &RunOptions::default())
        .unwrap()
        .report;
    let flood = class(&tenant, "noisy", "flood");
    let admitted = flood.offered - flood.failures_by_reason["rate_limited"];
    // The burst of 50, then 50 per second for the 20 seconds of the flood, less the refill
    // that falls on the end of the run.
    assert_eq!(admitted, 50 + 50 * 20 - 1);
    claim(
        page,
        format!("no more: {admitted} requests, its burst of 50"),
    );
    let steady = class(&tenant, "steady", "steady");
    assert!(steady.failures_by_reason.is_empty());

    let shed = run_library("criticality-shedding");
    charts_are_current("criticality-shedding", &shed);
    let recommend = class(&shed, "users", "recommend").success_ratio.unwrap();
    assert!(
        (0.3..0.37).contains(&recommend),
        "about a third: {recommend}"
    );
    claim(page, "which keeps about a third of its requests");
    let checkout = class(&shed, "users", "checkout");
    assert!(checkout.failures_by_reason.is_empty());
    let overrides = scenarios::format::overrides::Overrides {
        variant: Some("fifo".to_string()),
        sets: Vec::new(),
    };
    let entry = scenarios::cli::library::find("criticality-shedding").unwrap();
    let scenario = scenarios::format::overrides::parse_overridden(
        entry.name,
        entry.text,
        &scenarios::format::limits::RunLimits::default(),
        &overrides,
    )
    .unwrap();
    let fifo = run(&scenario, entry.name, &RunOptions::default())
        .unwrap()
        .report;
    let lost = 1.0 - class(&fifo, "users", "checkout").success_ratio.unwrap();
    assert!((1.0 / 3.0..0.4).contains(&lost), "over a third: {lost}");
    claim(
        page,
        "The checkout class loses over a third of its requests",
    );
    let p50 = fifo.summary.latency_ms.as_ref().unwrap().p50;
    assert!((190.0..210.0).contains(&p50), "about 200ms: {p50}");
    claim(page, "take about 200ms at the median");
}

#[test]
fn the_distributed_rate_limiting_chapter_is_what_its_runs_show() {
    let page = "patterns/distributed-rate-limiting.md";
    let path = src().join("scenarios").join("racy-limiter.ron");
    let text = read(&path);
    let over = |latency: &str, rate: &str| {
        let changed = text
            .replace(
                "Constant(value: \"100us\")",
                &format!("Constant(value: \"{latency}\")"),
            )
            .replace("Constant(\"1000/s\")", &format!("Constant(\"{rate}\")"));
        let scenario = scenarios::format::load::parse("racy-limiter.ron", &changed).unwrap();
        let r = run(&scenario, "racy-limiter.ron", &RunOptions::default())
            .unwrap()
            .report;
        r.limiters[0].over_admitted
    };
    for (latency, shown) in [("20us", "20µs"), ("100us", "100µs"), ("500us", "500µs")] {
        let row: Vec<String> = ["500/s", "1000/s", "2000/s"]
            .iter()
            .map(|rate| over(latency, rate).to_string())
            .collect();
        claim(page, format!("| {shown} | {} |", row.join(" | ")));
    }
    let race = run_library("distributed-limiter-race");
    assert_eq!(
        race.summary.successes,
        race.summary.offered - race.summary.requests_in_flight
    );
    let leases = run_library("quota-leases");
    let l = &leases.limiters[0];
    assert!(
        l.round_trips * 5 < l.decisions,
        "a tenth of the calls, roughly"
    );
    let p50 = leases.summary.latency_ms.as_ref().unwrap().p50;
    assert!(p50 < 2.0, "most requests do not wait for the store: {p50}");
}

#[test]
fn the_fan_out_chapter_is_what_its_runs_show() {
    let page = "patterns/fan-out.md";
    claim(page, "1 − 0.99^100 = 63%");
    let plain = run_library("fan-out-tail");
    let leaf = service_report(&plain, "leaf");
    // Every request offered sends its 100 leaves (those offered at the very end may not
    // have reached the leaves yet).
    assert!(leaf.arrivals >= 100 * (plain.summary.offered - plain.summary.requests_in_flight));
}

/// The poison-shards scenario of the book with `variant` at `seed`: the api's blast radius.
fn poison_shards(variant: &str, seed: u64) -> scenarios::report::BlastReport {
    let path = src().join("scenarios/poison-shards.ron");
    let text = std::fs::read_to_string(&path).unwrap();
    let overrides = scenarios::format::overrides::Overrides {
        variant: Some(variant.to_string()),
        sets: Vec::new(),
    };
    let limits = scenarios::format::limits::RunLimits::default();
    let s = scenarios::format::overrides::parse_overridden(
        "poison-shards.ron",
        &text,
        &limits,
        &overrides,
    )
    .unwrap();
    let options = RunOptions {
        seed: Some(seed),
        ..RunOptions::default()
    };
    let r = run(&s, "poison-shards.ron", &options).unwrap().report;
    r.services[0].blast_radius.clone().unwrap()
}

#[test]
fn the_blast_radius_story_is_what_the_library_shows() {
    let page = "failures/blast-radius.md";
    let blast = |r: &Report| service_report(r, "api").blast_radius.clone().unwrap();
    let window = |r: &Report| {
        let e = r
            .expectations
            .iter()
            .find(|e| e.expectation.contains("from 15s to 40s"))
            .unwrap();
        e.observed.clone()
    };
    let none = run_library("poison-pill");
    let b = blast(&none);
    claim(
        page,
        format!("every replica crashed ({} poison crashes", b.poison_crashes),
    );
    claim(page, format!("every one of the {} units", b.units));
    assert_eq!(b.units_lost_all, b.units);
    claim(
        page,
        format!("customers' success ratio is {}", window(&none)),
    );
    let cells = run_library("poison-pill-cells");
    let b = blast(&cells);
    claim(page, format!("{} crashes in all", words(b.poison_crashes)));
    claim(
        page,
        format!(
            "{} units ({}) lost everything, and no unit lost part",
            b.units_lost_all,
            percent(b.units_lost_all, b.units)
        ),
    );
    assert_eq!(b.units_lost_some, 0);
    let observed = window(&cells);
    claim(
        page,
        format!("{} of the customers' requests", &observed[..5]),
    );
    let shards = run_library("poison-pill-shuffle-sharding");
    let b = blast(&shards);
    claim(
        page,
        format!(
            "{} units ({}) drew the same pair",
            b.units_lost_all,
            percent(b.units_lost_all, b.units)
        ),
    );
    claim(
        page,
        format!(
            "{} units ({}) share one replica",
            b.units_lost_some,
            percent(b.units_lost_some, b.units)
        ),
    );
    let observed = window(&shards);
    claim(page, format!("lasted, {} of the", &observed[..5]));
    // The table: the acceptance test's measurement, rebuilt here.
    let pooled = |variant: &str| {
        let (mut all, mut some, mut n) = (0, 0, 0);
        for seed in 1..=40 {
            let b = poison_shards(variant, seed);
            all += b.units_lost_all - 1;
            some += b.units_lost_some;
            n += b.units - 1;
        }
        (all, some, n)
    };
    let (all, some, n) = pooled("shuffle-sharding");
    claim(
        page,
        format!(
            "| shuffle sharding, 2 of 8 | {all} of {n} ({:.2}%) |",
            100.0 * all as f64 / n as f64
        ),
    );
    claim(
        page,
        format!(
            "| {some} of {n} ({:.2}%) | 12/28",
            100.0 * some as f64 / n as f64
        ),
    );
    let (all, some, n) = pooled("cells");
    claim(
        page,
        format!(
            "| 4 cells of 2 | {all} of {n} ({:.2}%) |",
            100.0 * all as f64 / n as f64
        ),
    );
    assert_eq!(some, 0);
}

/// A small count in words, as the prose writes it.
fn words(n: u64) -> String {
    match n {
        2 => "two".to_string(),
        4 => "four".to_string(),
        6 => "six".to_string(),
        8 => "eight".to_string(),
        _ => n.to_string(),
    }
}

#[test]
fn the_capacity_chapter_reads_its_runs_right() {
    let page = "failures/capacity.md";
    let api = |r: &Report| r.services.iter().find(|s| s.name == "api").unwrap().clone();
    let replicas_at = |r: &Report, t: f64| {
        let row = r.series.iter().find(|row| row.t_s == t).unwrap();
        service_point(row, "api").replicas_in_rotation_mean.unwrap()
    };

    let slow = run_library("autoscaler-lag");
    let scaling = api(&slow).scaling.unwrap();
    assert_eq!((scaling.replicas_min, scaling.replicas_max), (4, 4));
    claim(page, "`replicas api in rotation min 4 max 4`");
    assert_eq!(slow.metastability.as_ref().unwrap().verdict, "metastable");

    let fast = run_library("autoscaler-lag-fast");
    charts_are_current("autoscaler-lag-fast", &fast);
    // Nothing before the 15s tick's replicas enter rotation at 20s, then 7, then 12 at 25s.
    assert_eq!(replicas_at(&fast, 19.0), 4.0);
    assert_eq!(replicas_at(&fast, 20.0), 7.0);
    assert_eq!(replicas_at(&fast, 24.0), 7.0);
    assert_eq!(replicas_at(&fast, 25.0), 12.0);
    claim(
        page,
        "three new replicas enter rotation at 20 seconds and five more at 25 seconds",
    );
    let m = fast.metastability.as_ref().unwrap();
    assert_eq!(m.recovered_after_s, Some(9.0));
    claim(page, "goodput is back 9 seconds after the spike");
    assert!(api(&fast).scaling.unwrap().scale_ins >= 1);

    let deploy = run_library("rolling-deploy");
    charts_are_current("rolling-deploy", &deploy);
    let scaling = api(&deploy).scaling.unwrap();
    assert_eq!((scaling.replicas_min, scaling.replicas_max), (6, 8));
    assert_eq!(scaling.deploy_restarts, 8);
    claim(page, "go from 8 to 6 and back four times");
    assert!(deploy.summary.failures > 0);
    let headroom = run_library("rolling-deploy-headroom");
    assert_eq!(headroom.summary.failures, 0);
    claim(page, "costs nothing a user would see");
}

#[test]
fn the_queue_and_tenant_sections_are_what_the_library_shows() {
    // A priority queue: the critical class in full; served oldest first, it loses like the
    // sheddable one, exactly as behind the shedder's `fifo` variant.
    let page = "patterns/traffic-classes.md";
    let queue = run_library("criticality-queue");
    assert!(
        class_report(&queue, "users", "checkout")
            .traffic
            .failures_by_reason
            .is_empty()
    );
    let shedder = run_library("criticality-shedding");
    assert!(
        class_report(&queue, "users", "recommend")
            .traffic
            .success_ratio
            > class_report(&shedder, "users", "recommend")
                .traffic
                .success_ratio
    );
    let fifo = run_library_with("criticality-queue", Some("fifo"), &[], None);
    let shed_fifo = run_library_with("criticality-shedding", Some("fifo"), &[], None);
    let checkout = &class_report(&fifo, "users", "checkout").traffic;
    assert_eq!(
        checkout.successes,
        class_report(&shed_fifo, "users", "checkout")
            .traffic
            .successes
    );
    claim(
        page,
        format!(
            "the checkout class gets {} of its requests through",
            percent(checkout.successes, checkout.offered)
        ),
    );

    // A per-tenant bulkhead: the flood at what its slots serve, by Little's law.
    let page = "patterns/bulkheads.md";
    let held = run_library("tenant-bulkhead");
    let flood = class_report(&held, "noisy", "flood").traffic.successes as f64 / 20.0;
    assert!(flood <= 1000.0, "{flood}");
    claim(
        page,
        format!("the flood is served at {flood:.0}/s during its 20s"),
    );
    assert!(
        class_report(&held, "steady", "steady")
            .traffic
            .failures_by_reason
            .is_empty()
    );
    let open = run_library_with("tenant-bulkhead", Some("unprotected"), &[], None);
    let after = open
        .expectations
        .iter()
        .find(|e| e.expectation.contains("after 11s"))
        .unwrap();
    let observed = after.observed.split(' ').next().unwrap();
    claim(
        page,
        format!("after 11s the steady tenants get {observed} of their requests through"),
    );

    // RFC CoDel: the control law's count for the step, and a little more for the drain.
    let page = "patterns/load-shedding.md";
    let rfc = run_library("shedding-codel-rfc");
    let shed = service_report(&rfc, "api").failed_by_reason["shed"];
    let law = (30.0_f64 / 0.2).powi(2) as u64;
    assert_eq!(law, 22_500);
    assert!(
        (law..law * 115 / 100).contains(&shed),
        "{shed} against {law}"
    );
    claim(page, format!("The api drops {shed} requests"));
}

#[test]
fn the_capacity_chapter_reads_its_pauses_zones_and_probes_right() {
    let page = "failures/capacity.md";
    let events = |r: &Report| {
        r.services
            .iter()
            .find(|s| s.name == "api")
            .unwrap()
            .capacity_events
            .clone()
            .unwrap()
    };
    let success_from = |r: &Report, from: f64| {
        let rows = r.series.iter().filter(|row| row.t_s >= from);
        let (ok, offered) = rows.fold((0, 0), |(o, n), row| (o + row.successes, n + row.offered));
        ok as f64 / offered as f64
    };

    let gc = run_library("gc-pause");
    assert_eq!(events(&gc).paused_s, 8.0);
    claim(page, "the time paused, 8 seconds");
    let failed = 1.0 - success_from(&gc, 10.0);
    assert!((0.02..0.03).contains(&failed), "{failed}");
    claim(page, "2.5% of the requests after 10 seconds fail");

    let zone = run_library("zone-failure");
    assert_eq!(zone.summary.failures, 0);
    claim(page, "no request fails");
    let office = zone.clients.iter().find(|c| c.name == "office").unwrap();
    assert!((4900..5100).contains(&office.offered), "{}", office.offered);
    claim(page, "offers 50 seconds of its load");

    let spiral = run_library("liveness-death-spiral");
    charts_are_current("liveness-death-spiral", &spiral);
    assert_eq!(events(&spiral).liveness_restarts, 18);
    claim(page, "restart 18 replicas in 120 seconds");
    let after = success_from(&spiral, 60.0);
    assert!((0.40..0.42).contains(&after), "{after}");
    claim(page, "only 41% of the requests succeed");
    let dedicated = run_library("liveness-death-spiral-dedicated");
    assert_eq!(events(&dedicated).liveness_restarts, 0);
    claim(page, "the same spike restarts nothing");
}

#[test]
fn the_client_error_adaptive_timeout_and_pacing_sections_are_what_the_library_shows() {
    let four = run_library("client-errors");
    let five = run_library_with("client-errors", Some("server-errors"), &[], None);
    claim(
        "patterns/retries.md",
        format!(
            "the amplification is {:.2} and the {} failures are all `client_error`",
            four.summary.amplification, four.services[0].failed_by_reason["client_error"]
        ),
    );
    assert_eq!(
        four.summary.failures,
        four.services[0].failed_by_reason["client_error"]
    );
    claim(
        "patterns/retries.md",
        format!(
            "makes {:.2} attempts per request, close to 1 + 0.2 + 0.2² = 1.24, and only {}",
            five.summary.amplification, five.summary.failures
        ),
    );
    let page = "patterns/timeouts.md";
    let adaptive = run_library("adaptive-timeout");
    let fixed = run_library_with("adaptive-timeout", Some("fixed"), &[], None);
    // The first expectation of each is the success ratio during the slowdown.
    let share = |r: &Report| {
        let observed = &r.expectations[0].observed;
        observed.split(' ').next().unwrap().to_string()
    };
    claim(
        page,
        format!(
            "{} of the requests succeed under the adaptive timeout and {} under the fixed one: {} attempts time out against {}",
            share(&adaptive),
            share(&fixed),
            adaptive.calls[0].counts.timeouts,
            fixed.calls[0].counts.timeouts
        ),
    );
    let a = adaptive.calls[0].adaptive_timeout.as_ref().unwrap();
    claim(
        page,
        format!(
            "went from {}ms to {}ms and was back at {}ms",
            a.timeout_ms_min, a.timeout_ms_max, a.timeout_ms_last
        ),
    );
    let page = "patterns/rate-limiters.md";
    let refused = |r: &Report| r.services[0].failed_by_reason["rate_limited"];
    let hammer = run_library("retry-after-429");
    let honour = run_library_with("retry-after-429", Some("retry-after"), &[], None);
    let paced = run_library_with("retry-after-429", Some("paced"), &[], None);
    claim(
        page,
        format!(
            "All three get the limit: {} successes",
            paced.summary.successes
        ),
    );
    assert!(hammer.summary.successes == paced.summary.successes);
    assert!(honour.summary.successes == paced.summary.successes);
    claim(
        page,
        format!(
            "refused {} times; users that retry after the `Retry-After` are refused {} times",
            refused(&hammer),
            refused(&honour)
        ),
    );
    claim(
        page,
        format!(
            "users that pace are refused {} times, by the requests already on their way when the quota ran out, and {} of their calls were held",
            refused(&paced),
            paced.calls[0].pace.as_ref().unwrap().held
        ),
    );
}

#[test]
fn the_connection_pools_section_is_what_the_library_shows() {
    let page = "failures/contention.md";
    let r = run_library("pool-exhaustion");
    let pool = call_report(&r, "services.api.calls[0]")
        .pool
        .clone()
        .unwrap();
    let db = service_report(&r, "db");
    claim(
        page,
        format!(
            "{} opens were refused and {} requests failed, with the database at {:.0}% of its workers",
            pool.refused_opens,
            r.summary.failures,
            100.0 * db.utilisation
        ),
    );
    assert_eq!(
        r.summary.failures_by_reason.get("dependency").copied(),
        Some(r.summary.failures)
    );
    let entry = scenarios::cli::library::find("pool-exhaustion").unwrap();
    let overrides = scenarios::format::overrides::Overrides {
        variant: Some("sized".to_string()),
        sets: Vec::new(),
    };
    let limits = scenarios::format::limits::RunLimits::default();
    let s =
        scenarios::format::overrides::parse_overridden(entry.name, entry.text, &limits, &overrides)
            .unwrap();
    let sized = run(&s, entry.name, &RunOptions::default()).unwrap().report;
    let pool = call_report(&sized, "services.api.calls[0]")
        .pool
        .clone()
        .unwrap();
    assert_eq!((pool.refused_opens, sized.summary.failures), (0, 0));
    claim(
        page,
        format!(
            "{:.1} ms at the 99th percentile of the checkouts",
            pool.wait_ms_p99.unwrap()
        ),
    );
}

#[test]
fn the_locks_section_is_what_the_library_shows() {
    let page = "failures/contention.md";
    let entry = scenarios::cli::library::find("occ-contention").unwrap();
    let runs = |variant: Option<&str>| {
        let overrides = scenarios::format::overrides::Overrides {
            variant: variant.map(str::to_string),
            sets: Vec::new(),
        };
        let limits = scenarios::format::limits::RunLimits::default();
        let s = scenarios::format::overrides::parse_overridden(
            entry.name, entry.text, &limits, &overrides,
        )
        .unwrap();
        run(&s, entry.name, &RunOptions::default()).unwrap().report
    };
    let locked = runs(Some("locked"));
    let optimistic = runs(None);
    let locks = locked.services[0]
        .store
        .as_ref()
        .unwrap()
        .locks
        .clone()
        .unwrap();
    claim(
        page,
        format!(
            "{} attempts for 20 writers, where optimistic writes with full jitter needed {}",
            locked.summary.attempts, optimistic.summary.attempts
        ),
    );
    claim(
        page,
        format!(
            "{} of the 20 writers waited, {:.1}s of waiting in all",
            locks.waits, locks.wait_s
        ),
    );
}

#[test]
fn the_measured_latencies_chapter_is_what_its_scenario_shows() {
    let page = "measured-latencies.md";
    let path = src().join("scenarios/measured-latency.ron");
    let scenario = load(&path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
    let declared_mean = scenario.services["db"]
        .work
        .compile()
        .unwrap()
        .mean_nanos()
        .unwrap()
        / 1e6;
    let r = book_run("measured-latency.ron");
    let db = service_report(&r, "db");
    let latency = client_report(&r, "api").latency_ms.clone().unwrap();
    // The work the run gave is the declared distribution, within the report histogram's 1%
    // and the sampling error of 42,000 draws.
    let (work_p50, work_p99) = (db.work_ms_p50.unwrap(), db.work_ms_p99.unwrap());
    assert!((work_p50 / db.declared_work_ms_p50.unwrap() - 1.0).abs() < 0.02);
    assert!((work_p99 / db.declared_work_ms_p99.unwrap() - 1.0).abs() < 0.03);
    // A latency is the wait plus the work: the mean latency less the mean wait is the mean
    // service time (no network section: no network delay).
    let wait = db.wait_ms_mean.unwrap();
    let service_time = latency.mean - wait;
    assert!(
        (service_time / declared_mean - 1.0).abs() < 0.02,
        "{service_time} against {declared_mean}"
    );
    claim(
        page,
        format!(
            "its p50 is {:.1}ms and its p99 {:.1}ms, where the db's work has {work_p50:.1}ms and \
             {work_p99:.1}ms",
            latency.p50, latency.p99
        ),
    );
    claim(
        page,
        format!(
            "the client's mean latency, {:.1}ms, less the db's mean wait, {wait:.1}ms, is \
             {service_time:.1}ms: the mean of the declared work, {declared_mean:.1}ms",
            latency.mean
        ),
    );
    // The histogram: the same measurement, drawn uniformly within its buckets.
    let histogram =
        service_report(&book_variant_run("measured-latency.ron", "histogram"), "db").clone();
    claim(
        page,
        format!(
            "declared p50 {:.1}ms and p99 {:.1}ms against the file's {:.1}ms and {:.1}ms",
            histogram.declared_work_ms_p50.unwrap(),
            histogram.declared_work_ms_p99.unwrap(),
            db.declared_work_ms_p50.unwrap(),
            db.declared_work_ms_p99.unwrap()
        ),
    );
    // The dashboard's latency as work: the queue is counted twice, and the db is overloaded.
    let dashboard = book_variant_run("measured-latency.ron", "dashboard");
    let overloaded = service_report(&dashboard, "db");
    assert!(overloaded.utilisation > db.utilisation);
    let dashboard_latency = client_report(&dashboard, "api").latency_ms.clone().unwrap();
    claim(
        page,
        format!(
            "the db is busy {:.1}% of the time instead of {:.1}%, and the client's p99 is {:.1}ms \
             instead of {:.1}ms",
            100.0 * overloaded.utilisation,
            100.0 * db.utilisation,
            dashboard_latency.p99,
            latency.p99
        ),
    );
}

/// The scenario "Your own system" runs (`book/src/own/imported.ron`) is what `resim import`
/// writes today from the chapter's resilience4j and Envoy files into its `system.ron`, one
/// after the other (`UPDATE_BOOK=1` rewrites both files), and it meets its expectations.
#[test]
fn the_own_system_chapter_runs_what_import_writes() {
    // The chapter's two imports, in its order: the web tier's resilience4j settings into the
    // users' call of our file (saved as own/web.ron), then the sidecar's Envoy configuration
    // into that file's api → db call (saved as own/imported.ron).
    let steps = [
        (
            "book/src/own/web-api.yml",
            "book/src/scenarios/own/system.ron",
            "clients.users.call",
            "own/web.ron",
        ),
        (
            "book/src/own/envoy-db.yaml",
            "book/src/own/web.ron",
            "services.api.calls[0]",
            "own/imported.ron",
        ),
    ];
    for (config, into, call, saved_as) in steps {
        let out = resim_in(
            &workspace_root(),
            &["import", config, "--into", into, "--call", call],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let path = src().join(saved_as);
        if std::env::var_os("UPDATE_BOOK").is_some() {
            std::fs::write(&path, &out.stdout).unwrap();
        }
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(
            saved == out.stdout,
            "{} is not what resim import writes today; rerun with UPDATE_BOOK=1",
            path.display()
        );
    }
    let name = src().join("own/imported.ron").display().to_string();
    let scenario = load(&name).unwrap_or_else(|e| panic!("{e}"));
    let report = run(&scenario, &name, &RunOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .report;
    assert!(report.passed(), "{:?}", report.expectations);
}
