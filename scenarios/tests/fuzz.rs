//! Fuzzing `resim check` and bounded runs with whole scenario files.
//!
//! Five generators feed one property:
//!
//! - **structured**: scenario files generated from the schema (proptest), with every layer,
//!   fault, balancer, queue discipline, admission control, distribution and the network
//!   section, and now and then an extreme value (0, `u32::MAX`, `"100y"`, `"1/ns"`, `1e300`,
//!   NaN, a bare number, a name that does not exist, a call back up the chain);
//! - **bytes**: the library files with bytes flipped, inserted (not always UTF-8), deleted or
//!   repeated;
//! - **tokens**: the library files with numbers, names and strings replaced by extreme ones,
//!   tokens deleted, repeated or swapped, parentheses doubled, and stray text inserted (quotes,
//!   escapes, comment marks, characters of several bytes);
//! - **variants**: the library files that name variants, with the tokens of their `variants`
//!   map (names, paths and values) edited as above, and replaced by paths, durations and rates
//!   without quotes and whole values;
//! - **sets**: library files with command-line overrides, written as first lines of the file
//!   (`// --set PATH=VALUE`, which the property applies as `--set` would): paths that lead
//!   somewhere, nowhere or into a list (`faults[+]`), values as a user types them (`30s`,
//!   `Constant(3000/s)`) and extreme ones.
//!
//! The property, for each input: reading it (what `resim check` does: the file and each of
//! its variants) either fails with one line that says where (`file:line:column: `, `file:
//! field.path: `, `file:line:column: variants."NAME".field.path: ` for a value in a variant,
//! `file: --set PATH=VALUE: ` for a command-line override, as typed), the exit code 2, or
//! succeeds; a scenario that reads is run twice within a small event budget, both runs give
//! the same digest (or the same located error) and the report renders, and so does one of its
//! variants (chosen by the input's hash); nothing panics. Those
//! are exits 0, 1 and 2 and nothing else. The heap's peak while an input is read and run
//! (counted by a global allocator) stays within the input's memory budget: 256 MiB, or for
//! one input in eight a budget so small that runs stop at it while running (`memory_limit`,
//! which must come with the figure that reached it).
//!
//! Failures are shrunk by proptest and written to `CARGO_TARGET_TMPDIR/fuzz-found/` (or
//! `RESIM_FUZZ_OUT`), one file each, ready for `resim check` and `resim run`. The inputs are
//! the same on every run (a fixed seed), so CI is reproducible.
//!
//! Knobs (environment variables):
//!
//! - `RESIM_FUZZ_CASES=N`: inputs per generator (default 4000 structured with few extremes,
//!   2000 structured with many, 2000 of each mutation kind: 14,000 inputs);
//! - `RESIM_FUZZ_SEED=N`: another sequence of inputs (a long campaign runs several);
//! - `RESIM_FUZZ_LOG=FILE`: write each input to FILE before it runs, so an input that kills
//!   the process (a stack overflow or an allocation failure, which no test can catch) is left
//!   behind;
//! - `RESIM_FUZZ_REASONS=1`: list more of the most frequent refusals in the summary, and
//!   `RESIM_FUZZ_DUMP=TEXT`: write the refused inputs whose message contains TEXT to
//!   `CARGO_TARGET_TMPDIR`, to see what a generator gets wrong.
//!
//! A long campaign: `RESIM_FUZZ_CASES=100000 cargo test --release -p scenarios --test fuzz --
//! --nocapture`.

use peak_alloc::PeakAlloc;
use proptest::prelude::*;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use scenarios::ScenarioError;
use scenarios::cli::library::LIBRARY;
use scenarios::format::limits::RunLimits;
use scenarios::format::load::parse_bytes;
use scenarios::format::overrides::{Flag, Override, Overrides, parse_overridden};
use scenarios::report::Format;
use scenarios::{RunOptions, run};
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The event budget of each run: enough to reach faults and expectations in small
/// scenarios, small enough for thousands of runs.
const EVENTS_MAX: u64 = 10_000;

/// The most shrinking steps for one failure.
const SHRINK_STEPS_MAX: u32 = 2_000;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The memory budget of a fuzzed run: 256 MiB keeps every accepted input cheap to run (a
/// generated file may ask for millions of report buckets, which validation then refuses
/// with a located message, which is also what is being tested).
const MEMORY_MAX: u64 = 256 << 20;

/// The small budget one input in [`SMALL_BUDGET_ODDS`] gets: the program's share and 1 MiB,
/// so that runs reach the memory limit while running and end with `memory_limit`.
const MEMORY_SMALL: u64 = 9 << 20;

/// One input in this many runs with [`MEMORY_SMALL`].
const SMALL_BUDGET_ODDS: u64 = 8;

/// Every allocation is counted, so that the heap's peak during each input is held to the
/// input's memory budget.
#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// The limits of a fuzzed run of `bytes`: the budget depends on the input only, so a failure
/// replays.
fn limits(bytes: &[u8]) -> RunLimits {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    RunLimits {
        memory_max: if hash.is_multiple_of(SMALL_BUDGET_ODDS) {
            MEMORY_SMALL
        } else {
            MEMORY_MAX
        },
        ..RunLimits::default()
    }
}

/// Panics (and budget overruns) this harness found in code that is being rewritten elsewhere
/// (the world and the report), each shown by a file under `tests/fuzz-found/` that has it:
/// (what the failure message contains, where, the file). They are counted and listed, not
/// failed on, so that CI keeps catching new ones; an entry goes when its file runs cleanly.
const KNOWN: &[(&str, &str, &str)] = &[];

/// The known panic `failure` is, if it is one.
fn known(failure: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(message, place, _)| failure.contains(message) && failure.contains(place))
        .map(|(_, _, file)| *file)
}

/// What happened to one input.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Refused with a located message (exit 2): the message without its place.
    Refused(String),
    /// Read, but a run override made it invalid (exit 2).
    RunRefused,
    /// Ran; expectations passed (exit 0) or failed (exit 1); `memory`: it stopped at the
    /// memory limit.
    Ran { passed: bool, memory: bool },
}

/// Checks that an error is one line that starts with the file and a place; `sets` are the
/// input's command-line overrides, which an error about them names as typed.
fn located(e: &ScenarioError, file: &str, sets: &[Override]) -> Result<(), String> {
    let line = e.to_string();
    if line.contains('\n') {
        return Err(format!("an error of more than one line: {line:?}"));
    }
    let ok = match e {
        ScenarioError::Syntax {
            line: l, column, ..
        } => *l >= 1 && *column >= 1 && line.starts_with(&format!("{file}:{l}:{column}: ")),
        ScenarioError::Invalid { error, .. } => {
            !error.field.is_empty() && line.starts_with(&format!("{file}: {}: ", error.field))
        }
        ScenarioError::Variant {
            line: l,
            column,
            path,
            ..
        } => {
            *l >= 1
                && *column >= 1
                && path.starts_with("variants.")
                && line.starts_with(&format!("{file}:{l}:{column}: {path}: "))
        }
        ScenarioError::Override { set, .. } => {
            let all: Vec<String> = sets.iter().map(Override::label).collect();
            (sets.iter().any(|o| *set == o.label()) || *set == all.join(" "))
                && line.starts_with(&format!("{file}: {set}: "))
        }
        // Nothing cancels the fuzzer's runs.
        ScenarioError::Read { .. } | ScenarioError::Cancelled { .. } => false,
    };
    if !ok {
        return Err(format!("an error that does not say where: {line:?}"));
    }
    let message = line.rsplit(": ").next().unwrap_or_default();
    if message.ends_with('.') {
        return Err(format!("an error that ends with a period: {line:?}"));
    }
    Ok(())
}

/// The property. `Err` holds what went wrong.
fn property(file: &str, bytes: &[u8]) -> Result<Outcome, String> {
    let limits = limits(bytes);
    let before = ALLOCATOR.current_usage() as u64;
    ALLOCATOR.reset_peak_usage();
    let outcome = checked(file, bytes, &limits)?;
    let peak = (ALLOCATOR.peak_usage() as u64).saturating_sub(before);
    if peak > limits.memory_max {
        return Err(format!(
            "over the memory budget: a heap of {peak} bytes at its peak, budget {}",
            limits.memory_max
        ));
    }
    Ok(outcome)
}

/// The command-line overrides an input starts with: one `// --set PATH=VALUE` line each.
fn header_sets(bytes: &[u8]) -> Vec<Override> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .map_while(|l| l.strip_prefix("// --set "))
        .filter_map(|o| Override::parse(Flag::Set, o).ok())
        .collect()
}

/// Reading `bytes` (with the overrides of its first lines) and running what reads, twice, and
/// one of its variants.
fn checked(file: &str, bytes: &[u8], limits: &RunLimits) -> Result<Outcome, String> {
    let sets = header_sets(bytes);
    let read = if sets.is_empty() {
        parse_bytes(file, bytes, limits)
    } else {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("a set input not UTF-8: {e}"))?;
        let overrides = Overrides {
            variant: None,
            sets: sets.clone(),
        };
        parse_overridden(file, text, limits, &overrides)
    };
    let scenario = match read {
        Ok(s) => s,
        Err(e) => {
            located(&e, file, &sets)?;
            return Ok(Outcome::Refused(what_was_wrong(&e)));
        }
    };
    let outcome = ran(&scenario, file)?;
    // A variant that checks runs as the file does.
    if sets.is_empty() && !scenario.variants.is_empty() {
        let pick = bytes.len() % scenario.variants.len();
        let text = std::str::from_utf8(bytes).map_err(|e| format!("read but not UTF-8: {e}"))?;
        let overrides = Overrides {
            variant: Some(scenario.variants[pick].clone()),
            sets: Vec::new(),
        };
        let variant = parse_overridden(file, text, limits, &overrides).map_err(|e| {
            format!(
                "the variant {:?} checks, but does not read when chosen: {e}",
                scenario.variants[pick]
            )
        })?;
        ran(&variant, file)?;
    }
    Ok(outcome)
}

/// Runs a scenario that reads, twice: the same digest, reports that render.
fn ran(scenario: &scenarios::Scenario, file: &str) -> Result<Outcome, String> {
    let options = RunOptions {
        max_events: Some(EVENTS_MAX),
        ..RunOptions::default()
    };
    let first = run(scenario, file, &options);
    let second = run(scenario, file, &options);
    match (first, second) {
        (Ok(a), Ok(b)) => {
            if a.report.digest != b.report.digest {
                return Err(format!(
                    "two runs, two digests: {} and {}",
                    a.report.digest, b.report.digest
                ));
            }
            // What `resim run` prints, in each of its forms.
            for format in [Format::Human, Format::Json, Format::Csv, Format::Compact] {
                let _ = format.render(&a.report);
            }
            serde_json::to_string(&a.report).map_err(|e| format!("no JSON report: {e}"))?;
            let memory = a.report.stop_reason == "memory_limit";
            if memory != a.report.stop_detail.is_some() {
                return Err(format!(
                    "stopped by {} with the detail {:?}",
                    a.report.stop_reason, a.report.stop_detail
                ));
            }
            Ok(Outcome::Ran {
                passed: a.report.passed(),
                memory,
            })
        }
        (Err(a), Err(b)) => {
            located(&a, file, &[])?;
            if a != b {
                return Err(format!("two runs, two errors: {a} and {b}"));
            }
            Ok(Outcome::RunRefused)
        }
        (a, b) => Err(format!(
            "one run failed and the other did not: {:?} / {:?}",
            a.err(),
            b.err()
        )),
    }
}

/// An error's kind, for the summary: the field path without names and indices, or the
/// syntax message without its values.
fn what_was_wrong(e: &ScenarioError) -> String {
    let text = match e {
        ScenarioError::Invalid { error, .. } => format!("{}: {}", error.field, error.reason),
        ScenarioError::Syntax { message, .. } => message.clone(),
        ScenarioError::Read { reason, .. } => reason.clone(),
        ScenarioError::Cancelled { .. } => "interrupted".to_string(),
        ScenarioError::Override { message, .. } | ScenarioError::Variant { message, .. } => {
            message.clone()
        }
    };
    text.chars().take(70).collect()
}

thread_local! {
    /// The message of the last panic on this thread, kept by the quiet hook.
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The property with panics caught and turned into failures.
fn guarded(file: &str, bytes: &[u8]) -> Result<Outcome, String> {
    if let Ok(path) = std::env::var("RESIM_FUZZ_LOG") {
        let _ = std::fs::write(path, bytes);
    }
    match catch_unwind(AssertUnwindSafe(|| property(file, bytes))) {
        Ok(result) => result,
        Err(_) => Err(format!(
            "panic: {}",
            PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "(no message)".to_string())
        )),
    }
}

/// Counts of one generator's inputs.
#[derive(Debug, Default)]
struct Tally {
    inputs: u64,
    refused: u64,
    /// How often each kind of refusal came up.
    reasons: std::collections::BTreeMap<String, u64>,
    run_refused: u64,
    passed: u64,
    failed_expectations: u64,
    /// Runs that stopped at the memory limit.
    memory_limit: u64,
    /// (file written, what went wrong).
    failures: Vec<(String, String)>,
    /// Known panics (see [`KNOWN`]), by the file that shows them.
    known: std::collections::BTreeMap<&'static str, u64>,
}

/// Runs `cases` inputs of `strategy` through the property, shrinking each failure.
fn campaign<S: Strategy>(
    name: &str,
    strategy: S,
    cases: u64,
    seed: u64,
    input: impl Fn(&S::Value) -> Vec<u8>,
) -> Tally {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..8 + name.len().min(24)].copy_from_slice(&name.as_bytes()[..name.len().min(24)]);
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &key);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let mut tally = Tally::default();
    let file = format!("{name}.ron");
    for case in 0..cases {
        let Ok(mut tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        tally.inputs += 1;
        let bytes = input(&tree.current());
        let failure = match guarded(&file, &bytes) {
            Ok(Outcome::Refused(why)) => {
                tally.refused += 1;
                if let Ok(wanted) = std::env::var("RESIM_FUZZ_DUMP")
                    && why.contains(&wanted)
                {
                    let _ = std::fs::write(
                        format!("{}/refused-{name}-{case}.ron", env!("CARGO_TARGET_TMPDIR")),
                        &bytes,
                    );
                }
                *tally.reasons.entry(why).or_default() += 1;
                continue;
            }
            Ok(Outcome::RunRefused) => {
                tally.run_refused += 1;
                continue;
            }
            Ok(Outcome::Ran { passed, memory }) => {
                if passed {
                    tally.passed += 1;
                } else {
                    tally.failed_expectations += 1;
                }
                tally.memory_limit += u64::from(memory);
                continue;
            }
            Err(failure) => match known(&failure) {
                Some(file) => {
                    *tally.known.entry(file).or_default() += 1;
                    continue;
                }
                None => failure,
            },
        };
        // Shrink: simpler inputs while they still fail in a way not yet known (proptest's
        // protocol).
        let mut smallest = (bytes, failure);
        let mut steps = 0;
        if tree.simplify() {
            while steps < SHRINK_STEPS_MAX {
                steps += 1;
                let bytes = input(&tree.current());
                match guarded(&file, &bytes) {
                    Err(failure) if known(&failure).is_none() => {
                        smallest = (bytes, failure);
                        if !tree.simplify() {
                            break;
                        }
                    }
                    _ => {
                        if !tree.complicate() {
                            break;
                        }
                    }
                }
            }
        }
        let dir = std::env::var("RESIM_FUZZ_OUT")
            .unwrap_or_else(|_| format!("{}/fuzz-found", env!("CARGO_TARGET_TMPDIR")));
        let _ = std::fs::create_dir_all(&dir);
        let path = format!("{dir}/{name}-{seed}-{case}.ron");
        let _ = std::fs::write(&path, &smallest.0);
        tally.failures.push((path, smallest.1));
    }
    tally
}

// ---------------------------------------------------------------------------------------
// Structured generation.

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

thread_local! {
    /// One value in this many is extreme, in the strategies being built (swarm testing: one
    /// campaign has few extremes, so that most files are valid and run; another has many).
    static ODDS: std::cell::Cell<u32> = const { std::cell::Cell::new(300) };
}

/// `f` with one value in `odds` extreme in the strategies built meanwhile.
fn with_odds<T>(odds: u32, f: impl FnOnce() -> T) -> T {
    let before = ODDS.with(|o| o.replace(odds));
    let result = f();
    ODDS.with(|o| o.set(before));
    result
}

/// Mostly ordinary values, now and then an extreme one (see [`ODDS`]: with one in 300, about
/// one generated file in five holds one, as a file has a hundred values or so).
fn usual_or_extreme(
    usual: impl Strategy<Value = String> + 'static,
    extreme: Vec<&'static str>,
) -> BoxedStrategy<String> {
    let odds = ODDS.with(|o| o.get());
    prop_oneof![
        odds => usual,
        1 => prop::sample::select(extreme).prop_map(str::to_string),
    ]
    .boxed()
}

fn duration() -> BoxedStrategy<String> {
    usual_or_extreme(
        prop::sample::select(vec![
            "1ms", "2ms", "5ms", "10ms", "20ms", "50ms", "100ms", "250ms", "500ms", "1s", "2s",
            "5s",
        ])
        .prop_map(quoted),
        vec![
            "\"0s\"",
            "\"1ns\"",
            "\"100y\"",
            "\"101y\"",
            "\"1000000y\"",
            "\"99y 364d\"",
            "\"-1s\"",
            "\"10\"",
            "60",
            "1.5",
            "\"\"",
            "\"18446744073709551615ns\"",
        ],
    )
}

/// A duration longer than every usual [`duration`].
fn long_duration() -> BoxedStrategy<String> {
    usual_or_extreme(
        prop::sample::select(vec!["6s", "10s", "20s"]).prop_map(quoted),
        vec!["\"1ns\"", "\"100y\""],
    )
}

fn rate() -> BoxedStrategy<String> {
    usual_or_extreme(
        prop::sample::select(vec![
            "1/s", "10/s", "50/s", "100/s", "500/s", "30/min", "2/ms",
        ])
        .prop_map(quoted),
        vec![
            "\"0/s\"",
            "\"1e-300/s\"",
            "\"1/ns\"",
            "\"2/ns\"",
            "\"1e308/ns\"",
            "\"1000000/s\"",
            "\"1000001/s\"",
            "\"NaN/s\"",
            "\"inf/s\"",
            "100",
            "\"-1/s\"",
        ],
    )
}

fn count(usual: std::ops::Range<u32>) -> BoxedStrategy<String> {
    usual_or_extreme(
        usual.prop_map(|n| n.to_string()),
        vec![
            "0",
            "1",
            "4294967295",
            "4294967296",
            "18446744073709551615",
            "-1",
            "1.5",
            "\"3\"",
        ],
    )
}

fn float(usual: std::ops::Range<f64>) -> BoxedStrategy<String> {
    usual_or_extreme(
        usual.prop_map(|x| format!("{x:?}")),
        vec![
            "0.0", "-1.0", "1e300", "-1e300", "NaN", "inf", "1e-300", "100", "\"0.5\"",
        ],
    )
}

fn ratio() -> BoxedStrategy<String> {
    float(0.0..1.0)
}

fn boolean() -> BoxedStrategy<String> {
    prop_oneof![Just("true".to_string()), Just("false".to_string())].boxed()
}

/// `Name(fields)` or, now and then, `Name((fields))`, the older form.
fn struct_variant(name: &'static str, fields: Vec<String>) -> BoxedStrategy<String> {
    let body = fields.join(", ");
    prop_oneof![
        3 => Just(format!("{name}({body})")),
        1 => Just(format!("{name}(({body}))")),
    ]
    .boxed()
}

/// Optional fields: each present or not; a field whose value is empty is left out.
fn fields(parts: Vec<(&'static str, BoxedStrategy<String>)>) -> BoxedStrategy<Vec<String>> {
    let strategies: Vec<BoxedStrategy<Option<String>>> = parts
        .into_iter()
        .map(|(field, value)| {
            proptest::option::of(value.prop_map(move |v| {
                if v.is_empty() {
                    String::new()
                } else {
                    format!("{field}: {v}")
                }
            }))
            .boxed()
        })
        .collect();
    strategies
        .prop_map(|v| v.into_iter().flatten().filter(|f| !f.is_empty()).collect())
        .boxed()
}

fn dist() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        duration().prop_map(|v| format!("Constant(value: {v})")),
        (duration(), long_duration()).prop_map(|(a, b)| format!("Uniform(low: {a}, high: {b})")),
        duration().prop_map(|v| format!("Exponential(mean: {v})")),
        (duration(), duration()).prop_map(|(a, b)| format!("Normal(mean: {a}, std_dev: {b})")),
        (duration(), long_duration())
            .prop_map(|(a, b)| format!("LogNormal(median: {a}, p99: {b})")),
        (duration(), float(0.0..3.0))
            .prop_map(|(a, s)| format!("LogNormal(median: {a}, sigma: {s})")),
        (duration(), float(1.1..4.0)).prop_map(|(a, s)| format!("Pareto(scale: {a}, shape: {s})")),
        prop::collection::vec(duration(), 1..4)
            .prop_map(|v| format!("Empirical(values: [{}])", v.join(", "))),
    ];
    leaf.prop_recursive(3, 8, 3, |inner| {
        prop::collection::vec((float(0.1..10.0), inner), 1..3)
            .prop_map(|parts| {
                let components: Vec<String> = parts
                    .into_iter()
                    .map(|(w, d)| format!("(weight: {w}, dist: {d})"))
                    .collect();
                format!("Mixture(components: [{}])", components.join(", "))
            })
            .boxed()
    })
    .boxed()
}

fn backoff() -> BoxedStrategy<String> {
    let strategy = prop_oneof![
        duration().prop_map(|d| format!("Constant(delay: {d})")),
        (duration(), duration(), long_duration())
            .prop_map(|(a, b, c)| format!("Linear(delay_initial: {a}, step: {b}, delay_max: {c})")),
        (duration(), float(1.0..3.0), long_duration()).prop_map(|(a, m, c)| format!(
            "Exponential(delay_initial: {a}, multiplier: {m}, delay_max: {c})"
        )),
    ];
    let jitter = prop_oneof![
        Just("None".to_string()),
        Just("Full".to_string()),
        Just("Equal".to_string()),
        Just("Decorrelated".to_string()),
        float(0.0..100.0).prop_map(|p| format!("Proportional(spread_percent: {p})")),
    ];
    fields(vec![
        ("strategy", strategy.boxed()),
        ("jitter", jitter.boxed()),
    ])
    .prop_map(|f| format!("({})", f.join(", ")))
    .boxed()
}

fn budget() -> BoxedStrategy<String> {
    prop_oneof![
        (count(1..100), ratio()).prop_flat_map(|(t, r)| struct_variant(
            "Throttling",
            vec![format!("max_tokens: {t}"), format!("token_ratio: {r}")]
        )),
        (float(0.0..100.0), duration(), count(0..20)).prop_flat_map(|(p, w, m)| struct_variant(
            "Window",
            vec![
                format!("budget_percent: {p}"),
                format!("window: {w}"),
                format!("min_retries_per_window: {m}")
            ]
        )),
        (float(0.0..100.0), count(0..20)).prop_flat_map(|(p, m)| struct_variant(
            "Concurrency",
            vec![
                format!("budget_percent: {p}"),
                format!("min_retry_concurrency: {m}")
            ]
        )),
        (duration(), count(0..20), ratio()).prop_flat_map(|(t, m, r)| struct_variant(
            "Tps",
            vec![
                format!("ttl: {t}"),
                format!("min_per_sec: {m}"),
                format!("retry_ratio: {r}")
            ]
        )),
        (float(0.0..100.0), duration(), count(0..20)).prop_flat_map(|(p, w, m)| struct_variant(
            "RetryBreaker",
            vec![
                format!("failure_rate_threshold: {p}"),
                format!("window: {w}"),
                format!("minimum_number_of_calls: {m}")
            ]
        )),
    ]
    .boxed()
}

fn limiter() -> BoxedStrategy<String> {
    prop_oneof![
        (
            prop::sample::select(vec!["fixed_window", "sliding_log", "sliding_counter"]),
            count(1..200),
            duration()
        )
            .prop_map(|(k, l, w)| format!("kind: \"{k}\", limit: {l}, window: {w}")),
        (
            prop::sample::select(vec!["token_bucket", "leaky_meter", "gcra"]),
            rate(),
            count(1..200)
        )
            .prop_map(|(k, r, b)| format!("kind: \"{k}\", rate: {r}, burst: {b}")),
        (rate(), count(1..200))
            .prop_map(|(r, q)| format!("kind: \"leaky_queue\", rate: {r}, queue_capacity: {q}")),
    ]
    .boxed()
}

/// A call's stack: up to four layers of different kinds, in any order.
fn stack() -> BoxedStrategy<String> {
    // A Pace layer is refused unless its target has an admission limiter, which the
    // generator does not know: it comes in one stack of forty.
    (
        prop::sample::subsequence((0..8usize).collect::<Vec<_>>(), 0..4),
        0..40u32,
    )
        .prop_map(|(mut kinds, pace)| {
            if pace == 0 && kinds.len() < 4 {
                kinds.push(8);
            }
            kinds
        })
        .prop_shuffle()
        .prop_flat_map(|kinds| kinds.into_iter().map(layer).collect::<Vec<_>>())
        .prop_map(|layers| format!("[{}]", layers.join(", ")))
        .boxed()
}

/// A layer of kind `kind` (0 to 8: Retry, Breaker, Bulkhead, Limiter, Hedge, Fallback,
/// Throttle, AdaptiveTimeout, Pace).
fn layer(kind: usize) -> BoxedStrategy<String> {
    let all: [BoxedStrategy<String>; 9] = [
        fields(vec![
            ("max_attempts", count(1..5)),
            ("backoff", backoff()),
            ("retry_on_timeout", boolean()),
            ("retry_on_conflict", boolean()),
            ("retry_after_max", duration()),
            ("budget", budget()),
        ])
        .prop_flat_map(|f| struct_variant("Retry", f)).boxed(),
        fields(vec![
            ("failure_rate_threshold", float(1.0..100.0)),
            ("slow_call_duration_threshold", duration()),
            (
                "sliding_window_type",
                prop_oneof![Just("count_based".to_string()), Just("time_based".to_string())]
                    .boxed()
            ),
            ("sliding_window_size", count(1..100)),
            ("minimum_number_of_calls", count(1..100)),
            ("consecutive_failure_threshold", count(1..10)),
            ("wait_duration_in_open_state", duration()),
            ("wait_duration_in_open_state_multiplier", float(1.0..3.0)),
            (
                "wait_duration_in_open_state_max",
                usual_or_extreme(Just("\"10m\"".to_string()), vec!["\"1ns\""]),
            ),
            ("automatic_transition_from_open_to_half_open_enabled", boolean()),
            (
                "half_open",
                prop_oneof![
                    count(1..10).prop_map(|n| format!(
                        "(kind: \"permitted_calls\", permitted_number_of_calls_in_half_open_state: {n})"
                    )),
                    Just("(kind: \"single_probe\")".to_string()),
                    (count(1..10), count(1..10)).prop_map(|(p, s)| format!(
                        "(kind: \"success_threshold\", permitted_calls: {p}, success_threshold: {s})"
                    )),
                    duration().prop_map(|d| format!("(kind: \"ramp\", ramp_duration: {d})")),
                ]
                .boxed()
            ),
            ("max_wait_duration_in_half_open_state", duration()),
        ])
        .prop_flat_map(|f| struct_variant("Breaker", f)).boxed(),
        fields(vec![
            ("max_concurrent_calls", count(1..20)),
            ("max_wait_duration", duration()),
            ("queue_capacity", count(0..20)),
        ])
        .prop_flat_map(|f| struct_variant("Bulkhead", f)).boxed(),
        limiter().prop_flat_map(|l| struct_variant("Limiter", vec![l])).boxed(),
        fields(vec![
            (
                "delay",
                prop_oneof![
                    duration().prop_map(|d| format!("Fixed(delay: {d})")),
                    (float(0.0..100.0), count(1..100), count(1..20), duration()).prop_map(
                        |(p, w, m, i)| format!(
                            "Percentile(percentile: {p}, window: {w}, min_samples: {m}, initial: {i})"
                        )
                    ),
                ]
                .boxed()
            ),
            ("max_hedged_attempts", count(1..3)),
        ])
        .prop_flat_map(|f| struct_variant("Hedge", f)).boxed(),
        fields(vec![
            ("use_cache", boolean()),
            ("cache_age_max", duration()),
            ("use_static", boolean()),
        ])
        .prop_flat_map(|f| struct_variant("Fallback", f)).boxed(),
        (float(1.0..3.0), duration(), count(1..20)).prop_flat_map(|(m, w, b)| struct_variant(
            "Throttle",
            vec![
                format!("accepts_multiplier: {m}"),
                format!("window: {w}"),
                format!("bucket_count: {b}")
            ]
        )).boxed(),
        // Small windows keep the runs within the memory budget.
        fields(vec![
            ("percentile", float(1.0..100.0)),
            ("multiplier", float(1.0..3.0)),
            // Any floor, initial and ceiling drawn here are in order; the mutations try others.
            ("floor", prop::sample::select(vec!["\"1ms\"", "\"5ms\"", "\"10ms\""]).prop_map(str::to_string).boxed()),
            ("ceiling", prop::sample::select(vec!["\"1s\"", "\"2s\"", "\"10s\""]).prop_map(str::to_string).boxed()),
            ("initial", prop::sample::select(vec!["\"10ms\"", "\"100ms\"", "\"1s\""]).prop_map(str::to_string).boxed()),
            ("window", count(20..100)),
            ("min_samples", count(1..20)),
        ])
        .prop_flat_map(|f| struct_variant("AdaptiveTimeout", f)).boxed(),
        fields(vec![("hold_max", duration())])
            .prop_flat_map(|f| struct_variant("Pace", f)).boxed(),
    ];
    all.into_iter().nth(kind).expect("nine kinds of layer")
}

/// A call to one of `targets` (a name that may not exist, now and then); a service's call
/// (`pooled`) may have a connection pool.
fn call(targets: Vec<String>, pooled: bool) -> BoxedStrategy<String> {
    let pool = if pooled {
        (count(1..6), duration(), duration(), duration())
            .prop_map(|(n, c, t, i)| {
                format!("(size: {n}, checkout_timeout: {c}, connect_time: {t}, idle_timeout: {i})")
            })
            .boxed()
    } else {
        Just(String::new()).boxed()
    };
    // A share of requests, on a service's calls (a client's call is made on every request).
    let call_ratio = if pooled {
        ratio()
    } else {
        Just(String::new()).boxed()
    };
    let target = usual_or_extreme(
        prop::sample::select(targets).prop_map(|t| quoted(&t)),
        vec!["\"nowhere\"", "\"\"", "nowhere"],
    );
    (
        target,
        fields(vec![
            ("timeout", duration()),
            ("deadline", duration()),
            ("weight", float(0.0..2.0)),
            ("call_ratio", call_ratio),
            (
                "fan_out",
                // A quorum of at most n, mostly: the extreme generator and the mutations
                // try the others.
                (1u32..50, proptest::option::of(0.0..1.0f64))
                    .prop_map(|(n, k)| match k {
                        Some(share) => {
                            let k = ((f64::from(n) * share).ceil() as u32).max(1);
                            format!("(n: {n}, quorum: {k})")
                        }
                        None => format!("(n: {n})"),
                    })
                    .boxed(),
            ),
            (
                "safety",
                prop::sample::select(vec!["Idempotent", "IdempotencyKey", "Unsafe"])
                    .prop_map(str::to_string)
                    .boxed(),
            ),
            ("pool", pool),
        ]),
        stack(),
    )
        .prop_map(|(target, mut f, stack)| {
            // An adaptive timeout takes the place of the call's timeout.
            if stack.contains("AdaptiveTimeout") {
                f.retain(|field| !field.starts_with("timeout:"));
            }
            f.insert(0, format!("target: {target}"));
            f.push(format!("stack: {stack}"));
            format!("({})", f.join(", "))
        })
        .boxed()
}

fn schedule() -> BoxedStrategy<String> {
    prop_oneof![
        4 => rate().prop_map(|r| format!("Constant({r})")),
        1 => (prop::collection::btree_set(0u32..10_000, 1..4), prop::collection::vec(rate(), 4)).prop_map(|(ats, rates)| {
            let steps: Vec<String> = ats
                .into_iter()
                .zip(rates)
                .map(|(at, r)| format!("(at: \"{at}ms\", rate: {r})"))
                .collect();
            format!("Steps([{}])", steps.join(", "))
        }),
        1 => (rate(), rate(), duration(), duration()).prop_map(|(a, b, s, e)| format!(
            "Ramp(from: {a}, to: {b}, start: {s}, end: {e})"
        )),
        1 => (rate(), rate(), duration(), duration()).prop_map(|(a, b, s, e)| format!(
            "Spike(base: {a}, peak: {b}, start: {s}, end: {e})"
        )),
    ]
    .boxed()
}

fn client(services: Vec<String>) -> BoxedStrategy<String> {
    let load = prop_oneof![
        3 => schedule().prop_map(|s| format!("Open(rate: {s})")),
        1 => (count(1..50), dist()).prop_map(|(u, t)| format!("Closed(users: {u}, think: {t})")),
        1 => (count(1..50), duration())
            .prop_map(|(u, s)| format!("OneShot(users: {u}, spread: {s})")),
    ];
    let classes = prop_oneof![
        2 => Just(String::new()),
        1 => prop::collection::vec(class(), 1..4).prop_map(|cs| {
            let named: Vec<String> = cs
                .into_iter()
                .enumerate()
                .map(|(i, c)| format!("(name: \"k{i}\", {c})"))
                .collect();
            format!(", classes: [{}]", named.join(", "))
        }),
    ];
    (load, call(services, false), classes)
        .prop_map(|(load, call, classes)| format!("(load: {load}, call: {call}{classes})"))
        .boxed()
}

/// A request class's fields after its name: a share, and now and then a priority, a cost,
/// tenants and retry safety.
fn class() -> BoxedStrategy<String> {
    let priority = prop_oneof![
        Just("CriticalPlus".to_string()),
        Just("Critical".to_string()),
        Just("SheddablePlus".to_string()),
        Just("Sheddable".to_string()),
        count(0..64).prop_map(|n| format!("Level({n})")),
    ];
    let popularity = prop_oneof![
        Just("Uniform".to_string()),
        float(0.0..3.0).prop_map(|e| format!("Zipf(exponent: {e})")),
    ];
    let tenants =
        (count(1..10_000), count(0..1000), popularity, count(0..20)).prop_map(|(k, f, p, r)| {
            format!("(keys: {k}, first: {f}, popularity: {p}, reported: {r})")
        });
    (
        float(0.0..5.0),
        fields(vec![
            ("priority", priority.boxed()),
            ("cost", count(1..20)),
            ("tenants", tenants.boxed()),
            ("retry", boolean()),
        ]),
    )
        .prop_map(|(share, mut f)| {
            f.insert(0, format!("share: {share}"));
            f.join(", ")
        })
        .boxed()
}

/// Admission control: a rate limiter, a concurrency limit, a PID shedder, a keyed or shadow
/// rate limit, a priority shedder, a distributed limiter with its store among `names` and a
/// per-tenant bulkhead, each at most once, in any order.
fn admission(names: Vec<String>) -> BoxedStrategy<String> {
    prop::sample::subsequence(vec![0usize, 1, 2, 3, 4, 5, 6], 0..4)
        .prop_shuffle()
        .prop_flat_map(move |kinds| {
            kinds
                .into_iter()
                .map(|k| {
                    if k == 5 {
                        distributed(names.clone())
                    } else if k == 6 {
                        (count(1..20), prop::option::of(count(1..50)))
                            .prop_map(|(c, k)| match k {
                                Some(k) => {
                                    format!("TenantBulkhead(max_concurrent: {c}, max_keys: {k})")
                                }
                                None => format!("TenantBulkhead(max_concurrent: {c})"),
                            })
                            .boxed()
                    } else {
                        admission_of(k)
                    }
                })
                .collect::<Vec<_>>()
        })
        .prop_map(|parts| format!("[{}]", parts.join(", ")))
        .boxed()
}

/// A distributed limiter: its state local, central (atomic or not, either clock, skewed) or
/// leased from a store among `names` (now and then its own service, or none).
fn distributed(names: Vec<String>) -> BoxedStrategy<String> {
    let store = usual_or_extreme(
        prop::sample::select(names).prop_map(|t| quoted(&t)),
        vec!["\"nowhere\"", "\"\""],
    );
    let state = prop_oneof![
        Just("Local".to_string()),
        (
            store.clone(),
            any::<bool>(),
            prop::sample::select(vec!["Store", "Replica"]),
            proptest::option::of(dist()),
        )
            .prop_map(|(s, atomic, clock, skew)| {
                let skew = skew.map_or(String::new(), |d| format!(", skew: {d}"));
                format!("Central(store: {s}, atomic: {atomic}, clock: {clock}{skew})")
            }),
        (store, count(1..200)).prop_map(|(s, b)| format!("Lease(store: {s}, batch: {b})")),
    ];
    (
        limiter(),
        state,
        fields(vec![
            (
                "on_store_failure",
                prop::sample::select(vec!["Open", "Closed"])
                    .prop_map(str::to_string)
                    .boxed(),
            ),
            ("timeout", duration()),
            ("cache", duration()),
        ]),
    )
        .prop_map(|(limiter, state, f)| {
            let mut parts = vec![format!("limiter: ({limiter})"), format!("state: {state}")];
            parts.extend(f);
            format!("Distributed({})", parts.join(", "))
        })
        .boxed()
}

fn admission_of(kind: usize) -> BoxedStrategy<String> {
    let all: [BoxedStrategy<String>; 5] = [
        limiter().prop_flat_map(|l| struct_variant("Limiter", vec![l])).boxed(),
        prop_oneof![
            count(1..50).prop_map(|n| format!("kind: \"fixed\", limit: {n}")),
            Just("kind: \"aimd\"".to_string()),
            Just("kind: \"vegas\"".to_string()),
            Just("kind: \"gradient2\"".to_string()),
            Just("kind: \"envoy_gradient\"".to_string()),
        ]
        .prop_flat_map(|k| struct_variant("Concurrency", vec![k]))
        .boxed(),
        (
            duration(),
            float(0.0..50.0),
            float(0.0..1.0),
            float(0.0..1.0),
            float(0.0..1.0),
            ratio()
        )
            .prop_map(|(i, s, p, g, d, m)| format!(
                "Pid(interval: {i}, controller: (setpoint: {s}, gain_proportional: {p}, gain_integral: {g}, gain_derivative: {d}, drop_ratio_max: {m}))"
            ))
            .boxed(),
        (
            limiter(),
            fields(vec![
                (
                    "key",
                    prop_oneof![Just("Global".to_string()), Just("Tenant".to_string())].boxed(),
                ),
                ("max_keys", count(1..1000)),
                ("idle_timeout", duration()),
                (
                    "when_full",
                    prop_oneof![
                        Just("reject_new_keys".to_string()),
                        Just("evict_soonest".to_string())
                    ]
                    .boxed(),
                ),
                ("shadow", boolean()),
            ]),
        )
            .prop_map(|(l, mut f)| {
                f.insert(0, format!("limiter: ({l})"));
                format!("RateLimit({})", f.join(", "))
            })
            .boxed(),
        // Non-decreasing thresholds, as validation wants; the mutations try the others.
        prop::collection::vec(1.0..300.0f64, 1..5)
            .prop_map(|mut t| {
                t.sort_by(f64::total_cmp);
                let t: Vec<String> = t.iter().map(|x| format!("{x:.1}")).collect();
                format!("Priority(shed_thresholds_percent: [{}])", t.join(", "))
            })
            .boxed(),
    ];
    all.into_iter()
        .nth(kind)
        .expect("five kinds of admission control")
}

/// Service `index` of `names`; its calls go further down the list, now and then back up.
/// With a `network` section, latency belongs to the links.
fn service(index: usize, names: Vec<String>, network: bool) -> BoxedStrategy<String> {
    let below: Vec<String> = names[index + 1..].to_vec();
    let targets = if below.is_empty() {
        names.clone()
    } else {
        below
    };
    let calls = if index + 1 < names.len() {
        prop::collection::vec(call(targets, true), 0..3).boxed()
    } else {
        prop_oneof![
            30 => Just(Vec::new()),
            1 => prop::collection::vec(call(names.clone(), true), 1..2),
        ]
        .boxed()
    };
    let discipline = prop_oneof![
        Just("Fifo".to_string()),
        Just("Lifo".to_string()),
        duration().prop_map(|t| format!("AdaptiveLifo(threshold: {t})")),
        (duration(), duration(), boolean())
            .prop_map(|(t, i, a)| format!("CoDel(target: {t}, interval: {i}, adaptive_lifo: {a})")),
        Just("Priority".to_string()),
        // Target below interval, as validation wants (the mutations try the others).
        (
            prop::sample::select(vec!["\"1ms\"", "\"5ms\"", "\"20ms\""]),
            prop::sample::select(vec!["\"50ms\"", "\"100ms\"", "\"1s\""]),
        )
            .prop_map(|(t, i)| format!("CoDelRfc(target: {t}, interval: {i})")),
    ];
    let queue = (
        usual_or_extreme(
            (1u32..100).prop_map(|n| n.to_string()),
            vec!["None", "0", "4294967295"],
        ),
        discipline,
    )
        .prop_map(|(c, d)| format!("(capacity: {c}, discipline: {d})"));
    let select = |v: Vec<&'static str>| prop::sample::select(v).prop_map(str::to_string).boxed();
    (
        count(1..20),
        dist(),
        calls,
        fields(vec![
            ("replicas", count(1..4)),
            ("queue", queue.boxed()),
            ("work_per_in_flight", float(0.0..0.1)),
            ("call_mode", select(vec!["Sequential", "FanOut", "Pick"])),
            ("on_abandoned", select(vec!["Work", "DropExpired", "Cancel"])),
            ("balancer", select(vec!["RoundRobin", "Random", "LeastOutstanding", "PowerOfTwo"])),
            (
                "outlier",
                (count(1..10), duration(), float(0.0..100.0))
                    .prop_map(|(c, e, p)| format!(
                        "(consecutive_failures: {c}, ejection: {e}, max_ejection_percent: {p})"
                    ))
                    .boxed(),
            ),
            (
                "health_check",
                (duration(), duration(), count(1..5), count(1..5))
                    .prop_map(|(i, t, u, h)| format!(
                        "(interval: {i}, timeout: {t}, unhealthy_threshold: {u}, healthy_threshold: {h})"
                    ))
                    .boxed(),
            ),
            (
                "cache",
                (ratio(), duration(), count(1..100), boolean(), duration(), float(0.0..3.0))
                    .prop_map(|(h, w, k, c, ttl, beta)| {
                        let coalesce = if c == "true" { ", coalesce: (max_keys: 100, max_waiters: 10)" } else { "" };
                        // A ttl with XFetch, a ttl alone, or neither, by the same coin.
                        let refresh = match c.as_str() {
                            "true" => format!(", ttl: {ttl}, xfetch: (beta: {beta})"),
                            _ if k.len() % 2 == 0 => format!(", ttl: {ttl}"),
                            _ => String::new(),
                        };
                        format!("(hit_ratio: {h}, warmup: {w}, keys: {k}{coalesce}{refresh})")
                    })
                    .boxed(),
            ),
            ("restart", duration()),
            (
                "idempotency",
                (duration(), count(1..1000))
                    .prop_map(|(t, c)| format!("(ttl: {t}, in_flight: Conflict, capacity: {c})"))
                    .boxed(),
            ),
            ("retry_after", duration()),
            (
                "store",
                (count(1..100), float(0.0..3.0), boolean(), (boolean(), duration(), count(1..20)))
                    .prop_map(|(rows, exponent, zipf, (locked, wait, queue))| {
                        let key = if zipf == "true" {
                            format!("Zipf(exponent: {exponent})")
                        } else {
                            "Uniform".to_string()
                        };
                        let op = if locked == "true" {
                            format!("Locked(wait_timeout: {wait}, queue_max: {queue})")
                        } else {
                            "OccUpdate".to_string()
                        };
                        format!("(rows: {rows}, key: {key}, op: {op})")
                    })
                    .boxed(),
            ),
            (
                "autoscale",
                // Mostly valid: the generated replicas (1 to 3) lie within [1, 3..8].
                (
                    Just("1".to_string()),
                    count(3..8),
                    prop_oneof![
                        float(0.05..1.0).prop_map(|t| format!("Utilisation(target_ratio: {t})")),
                        float(0.1..20.0).prop_map(|q| format!("QueueDepth(per_replica: {q})")),
                    ],
                    (duration(), duration(), float(0.0..0.5)),
                    (duration(), duration(), duration(), duration(), duration()),
                )
                    .prop_map(|(min, max, metric, (period, delay, tolerance), (out, inn, stab, startup, drain))| format!(
                        "(min_replicas: {min}, max_replicas: {max}, metric: {metric}, period: {period}, delay: {delay}, tolerance_ratio: {tolerance}, scale_out_cooldown: {out}, scale_in_cooldown: {inn}, scale_in_stabilisation: {stab}, startup: {startup}, drain: {drain})"
                    ))
                    .boxed(),
            ),
            ("max_connections", count(1..20)),
            (
                "cold_start",
                (float(1.0..5.0), duration())
                    .prop_map(|(f, w)| format!("(factor: {f}, warmup: {w})"))
                    .boxed(),
            ),
            // With a network section, latency belongs to the links.
            ("latency", if network { Just(String::new()).boxed() } else { dist() }),
            // Mostly absent, and mostly one cell or shard of one replica (valid with any
            // number of replicas), so that most generated files stay valid.
            (
                "isolation",
                prop_oneof![
                    4 => Just(String::new()),
                    2 => Just("Cells(count: 1)".to_string()),
                    2 => Just("ShuffleSharding(shard_size: 1)".to_string()),
                    1 => count(1..4).prop_map(|c| format!("Cells(count: {c})")),
                    1 => count(1..4).prop_map(|k| format!("ShuffleSharding(shard_size: {k})")),
                ]
                .boxed(),
            ),
            // Mostly no zones or one, which fits any number of replicas.
            (
                "zones",
                prop_oneof![
                    6 => Just(String::new()),
                    3 => Just("Some(1)".to_string()),
                    1 => count(1..3).prop_map(|z| format!("Some({z})")),
                ]
                    .boxed(),
            ),
            (
                "liveness",
                (duration(), duration(), count(1..4), boolean())
                    .prop_map(|(p, t, k, dedicated)| {
                        let by = if dedicated == "true" { "Dedicated" } else { "Workers" };
                        format!("Some((period: {p}, timeout: {t}, failure_threshold: {k}, served_by: {by}))")
                    })
                    .boxed(),
            ),
        ]),
        admission(names.clone()),
    )
        .prop_map(|(workers, work, calls, mut f, admission)| {
            f.insert(0, format!("workers: {workers}"));
            f.insert(1, format!("work: {work}"));
            f.push(format!("calls: [{}]", calls.join(", ")));
            f.push(format!("admission: {admission}"));
            format!("({})", f.join(", "))
        })
        .boxed()
}

fn fault(clients: Vec<String>, services: Vec<String>) -> BoxedStrategy<String> {
    let svc = prop::sample::select(services.clone()).prop_map(|s| quoted(&s));
    let cl = prop::sample::select(clients).prop_map(|s| quoted(&s));
    let kind = prop_oneof![
        (svc.clone(), float(0.5..10.0))
            .prop_map(|(s, f)| format!("Slowdown(service: {s}, factor: {f})")),
        (svc.clone(), ratio())
            .prop_map(|(s, r)| format!("ErrorRate(service: {s}, error_ratio: {r})")),
        (svc.clone(), count(0..3))
            .prop_map(|(s, w)| format!("CapacityDrop(service: {s}, workers: {w})")),
        (svc.clone(), proptest::option::of(count(1..3))).prop_map(|(s, r)| match r {
            Some(r) => format!("Crash(service: {s}, replicas: {r})"),
            None => format!("Crash(service: {s})"),
        }),
        (cl, float(0.5..5.0)).prop_map(|(c, f)| format!("LoadSpike(client: {c}, factor: {f})")),
        (svc.clone(), dist()).prop_map(|(s, d)| format!("Latency(service: {s}, extra: {d})")),
        (svc.clone(), ratio()).prop_map(|(s, r)| format!("Loss(service: {s}, loss_ratio: {r})")),
        svc.clone().prop_map(|s| format!("Partition(service: {s})")),
        svc.clone()
            .prop_map(|s| format!("CacheFlush(service: {s})")),
        // Tenant 0 is every classless client's: mostly that one.
        (
            svc.clone(),
            prop_oneof![3 => Just("0".to_string()), 1 => count(0..3)]
        )
            .prop_map(|(s, t)| format!("Poison(service: {s}, tenant: {t})")),
        (svc.clone(), count(1..2), duration(), duration()).prop_map(|(s, b, d, w)| format!(
            "Deploy(service: {s}, batch: {b}, downtime: {d}, warmup: {w})"
        )),
        (
            svc.clone(),
            proptest::option::of(count(1..3)),
            proptest::option::of(duration())
        )
            .prop_map(|(s, r, every)| {
                let r = r.map_or(String::new(), |r| format!(", replicas: Some({r})"));
                let every = every.map_or(String::new(), |e| format!(", every: Some({e})"));
                format!("Pause(service: {s}{r}{every})")
            }),
        count(0..2).prop_map(|z| format!("ZoneFailure(zone: {z})")),
        (svc.clone(), ratio())
            .prop_map(|(s, r)| format!("ClientErrorRate(service: {s}, error_ratio: {r})")),
        (
            svc,
            ratio(),
            prop_oneof![
                duration().prop_map(|d| format!("After({d})")),
                duration().prop_map(|d| format!("Until({d})")),
            ]
        )
            .prop_map(|(s, r, a)| format!(
                "TooManyRequests(service: {s}, refused_ratio: {r}, retry_after: {a})"
            )),
    ];
    (duration(), proptest::option::of(duration()), kind)
        .prop_map(|(at, d, kind)| match d {
            Some(d) => format!("(at: {at}, duration: {d}, kind: {kind})"),
            None => format!("(at: {at}, kind: {kind})"),
        })
        .boxed()
}

fn network(nodes: Vec<String>) -> BoxedStrategy<String> {
    let node = prop::sample::select(nodes).prop_map(|n| quoted(&n));
    let link = fields(vec![
        ("latency", dist()),
        ("loss_ratio", ratio()),
        ("duplicate_ratio", ratio()),
        (
            "order",
            prop_oneof![
                Just("Fifo".to_string()),
                Just("Independent".to_string()),
                (ratio(), dist())
                    .prop_map(|(r, d)| format!("Reorder(reordered_ratio: {r}, extra_delay: {d})")),
            ]
            .boxed(),
        ),
        (
            "bandwidth",
            (count(1..1_000_000), count(1..100))
                .prop_map(|(b, q)| format!("(bytes_per_second: {b}, queue_capacity: {q})"))
                .boxed(),
        ),
    ])
    .prop_map(|f| format!("({})", f.join(", ")));
    let kind = prop_oneof![
        (node.clone(), node.clone(), boolean())
            .prop_map(|(a, b, o)| format!("Partition(from: [{a}], to: [{b}], one_way: {o})")),
        (node.clone(), float(1.0..5.0), duration(), ratio()).prop_map(|(a, f, d, l)| format!(
            "Degrade(from: [{a}], latency_factor: {f}, latency_added: {d}, loss_ratio: {l})"
        )),
        (node.clone(), node.clone()).prop_map(|(a, b)| format!("Clog(from: [{a}], to: [{b}])")),
        node.clone().prop_map(|n| format!("Crash(node: {n})")),
        node.clone().prop_map(|n| format!("Pause(node: {n})")),
    ];
    let fault =
        (duration(), proptest::option::of(duration()), kind).prop_map(|(s, e, k)| match e {
            Some(e) => format!("(start: {s}, end: {e}, kind: {k})"),
            None => format!("(start: {s}, kind: {k})"),
        });
    (
        link.clone(),
        prop::collection::vec((node.clone(), node, boolean(), link), 0..3),
        prop::collection::vec(fault, 0..3),
    )
        .prop_map(|(default_link, links, faults)| {
            let links: Vec<String> = links
                .into_iter()
                .map(|(a, b, o, l)| format!("(from: {a}, to: {b}, one_way: {o}, link: {l})"))
                .collect();
            format!(
                "(default_link: {default_link}, links: [{}], faults: [{}])",
                links.join(", "),
                faults.join(", ")
            )
        })
        .boxed()
}

fn expectation(clients: Vec<String>) -> BoxedStrategy<String> {
    let cl = prop::sample::select(clients).prop_map(|s| quoted(&s));
    prop_oneof![
        4 => (cl.clone(), duration(), ratio()).prop_map(|(c, a, r)| format!(
            "GoodputAtLeast(client: {c}, after: {a}, min_ratio: {r})"
        )),
        4 => (cl.clone(), duration(), duration(), ratio()).prop_map(|(c, a, u, r)| format!(
            "GoodputAtMost(client: {c}, after: {a}, until: {u}, max_ratio: {r})"
        )),
        4 => (cl.clone(), duration()).prop_map(|(c, m)| format!("P99AtMost(client: {c}, max: {m})")),
        4 => float(0.5..5.0).prop_map(|m| format!("AmplificationAtMost(max: {m})")),
        4 => (cl.clone(), duration(), duration(), ratio()).prop_map(|(c, a, w, r)| format!(
            "RecoveredWithin(client: {c}, after: {a}, within: {w}, min_ratio: {r})"
        )),
        // The verdict's expectations, with the client left out as often as named.
        4 => (proptest::option::of(cl.clone()), duration()).prop_map(|(c, w)| match c {
            Some(c) => format!("Recovers(client: {c}, within: {w})"),
            None => format!("Recovers(within: {w})"),
        }),
        4 => proptest::option::of(cl.clone()).prop_map(|c| match c {
            Some(c) => format!("Metastable(client: {c})"),
            None => "Metastable()".to_string(),
        }),
        4 => (cl, count(0..3), ratio()).prop_map(|(c, k, r)| format!(
            "ClassGoodputAtLeast(client: {c}, class: \"k{k}\", min_ratio: {r})"
        )),
        // Every scenario has a service `s0`; it reports a blast radius when it is isolated or
        // poisoned.
        1 => ratio().prop_map(|r| format!("BlastRadiusAtMost(service: \"s0\", max_ratio: {r})")),
    ]
    .boxed()
}

/// The `verdict` section: each threshold present or not.
fn verdict() -> BoxedStrategy<String> {
    (
        proptest::option::of(ratio()),
        proptest::option::of(ratio()),
        proptest::option::of(duration()),
    )
        .prop_map(|(h, b, s)| {
            let mut fields = Vec::new();
            if let Some(h) = h {
                fields.push(format!("healthy_ratio: {h}"));
            }
            if let Some(b) = b {
                fields.push(format!("baseline_min_ratio: {b}"));
            }
            if let Some(s) = s {
                fields.push(format!("sustain: {s}"));
            }
            format!("    verdict: ({}),\n", fields.join(", "))
        })
        .boxed()
}

/// A whole scenario file.
fn scenario() -> BoxedStrategy<String> {
    (1usize..4, 1usize..5, prop::bool::weighted(0.2))
        .prop_flat_map(|(nc, ns, with_network)| {
            let clients: Vec<String> = (0..nc).map(|i| format!("c{i}")).collect();
            let services: Vec<String> = (0..ns).map(|i| format!("s{i}")).collect();
            let nodes: Vec<String> = clients.iter().chain(&services).cloned().collect();
            let client_strategies: Vec<BoxedStrategy<String>> =
                clients.iter().map(|_| client(services.clone())).collect();
            let service_strategies: Vec<BoxedStrategy<String>> =
                (0..ns).map(|i| service(i, services.clone(), with_network)).collect();
            (
                Just(clients.clone()),
                Just(services.clone()),
                client_strategies,
                service_strategies,
                usual_or_extreme(
                    prop::sample::select(vec!["5s", "10s", "30s", "60s"]).prop_map(quoted),
                    vec!["\"100y\"", "\"1ns\"", "\"1y\"", "\"0s\""],
                ),
                proptest::option::of(usual_or_extreme(
                    prop::sample::select(vec!["100ms", "1s", "5s"]).prop_map(quoted),
                    vec!["\"1ns\"", "\"1us\"", "\"1y\""],
                )),
                prop::collection::vec(fault(clients.clone(), services.clone()), 0..4),
                if with_network {
                    network(nodes).prop_map(Some).boxed()
                } else {
                    Just(None).boxed()
                },
                prop::collection::vec(expectation(clients), 0..3),
                any::<u64>(),
                proptest::option::of(verdict()),
            )
        })
        .prop_map(
            |(
                clients,
                services,
                cs,
                ss,
                duration,
                bucket,
                faults,
                network,
                expectations,
                seed,
                verdict,
            )| {
                let cs: Vec<String> = clients
                    .iter()
                    .zip(cs)
                    .map(|(n, c)| format!("        {n:?}: {c},"))
                    .collect();
                let ss: Vec<String> = services
                    .iter()
                    .zip(ss)
                    .map(|(n, s)| format!("        {n:?}: {s},"))
                    .collect();
                let bucket = bucket.map_or(String::new(), |b| format!("    bucket: {b},\n"));
                let network = network.map_or(String::new(), |n| format!("    network: {n},\n"));
                let verdict = verdict.unwrap_or_default();
                format!(
                    "// generated by scenarios/tests/fuzz.rs\nScenario(\n    name: \"fuzz\",\n    duration: {duration},\n    seed: {seed},\n{bucket}    clients: {{\n{}\n    }},\n    services: {{\n{}\n    }},\n    faults: [{}],\n{network}    expectations: [{}],\n{verdict})\n",
                    cs.join("\n"),
                    ss.join("\n"),
                    faults.join(", "),
                    expectations.join(", "),
                )
            },
        )
        .boxed()
}

// ---------------------------------------------------------------------------------------
// Mutations of the library files.

/// One change to a file's bytes, at a position given as a fraction of its length.
#[derive(Debug, Clone)]
enum ByteEdit {
    Flip(u16, u8),
    Insert(u16, Vec<u8>),
    Delete(u16, u8),
    Repeat(u16, u8),
    Truncate(u16),
}

fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    prop_oneof![
        (any::<u16>(), 1u8..=255).prop_map(|(at, x)| ByteEdit::Flip(at, x)),
        (any::<u16>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, b)| ByteEdit::Insert(at, b)),
        (any::<u16>(), any::<u8>()).prop_map(|(at, n)| ByteEdit::Delete(at, n)),
        (any::<u16>(), any::<u8>()).prop_map(|(at, n)| ByteEdit::Repeat(at, n)),
        any::<u16>().prop_map(ByteEdit::Truncate),
    ]
}

fn at(fraction: u16, len: usize) -> usize {
    (len as u64 * u64::from(fraction) / (u64::from(u16::MAX) + 1)) as usize
}

fn apply_bytes(text: &[u8], edits: &[ByteEdit]) -> Vec<u8> {
    let mut b = text.to_vec();
    for e in edits {
        let len = b.len();
        match e {
            ByteEdit::Flip(f, x) if len > 0 => {
                let i = at(*f, len);
                b[i] ^= x;
            }
            ByteEdit::Insert(f, bytes) => {
                let i = at(*f, len + 1);
                b.splice(i..i, bytes.iter().copied());
            }
            ByteEdit::Delete(f, n) => {
                let i = at(*f, len);
                let end = (i + usize::from(*n)).min(len);
                b.drain(i..end);
            }
            ByteEdit::Repeat(f, n) => {
                let i = at(*f, len);
                let end = (i + usize::from(*n)).min(len);
                let piece = b[i..end].to_vec();
                b.splice(end..end, piece);
            }
            ByteEdit::Truncate(f) => b.truncate(at(*f, len + 1)),
            ByteEdit::Flip(..) => {}
        }
    }
    b
}

/// Splits RON text into tokens (strings, words and numbers, single characters, runs of
/// whitespace) that join back into the text.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = i;
        let c = chars[i];
        if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(chars.len());
        } else if c.is_alphanumeric() || c == '_' || c == '.' || c == '-' {
            while i < chars.len()
                && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '.' | '-'))
            {
                i += 1;
            }
        } else if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
        } else {
            i += 1;
        }
        out.push(chars[start..i].iter().collect());
    }
    out
}

/// Values that make good trouble where a token was.
const EXTREMES: &[&str] = &[
    "0",
    "1",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "0.0",
    "\"0s\"",
    "\"1ns\"",
    "\"100y\"",
    "\"1000000y\"",
    "\"1/ns\"",
    "\"1e308/ns\"",
    "\"0/s\"",
    "\"\"",
    "None",
    "true",
    "()",
    "[]",
    "{}",
    "Full",
    "\"api\"",
];

/// One change to a file's tokens; indices are fractions of the token count.
#[derive(Debug, Clone)]
enum TokenEdit {
    Replace(u16, usize),
    Delete(u16, u8),
    Repeat(u16, u8),
    Swap(u16, u16),
    Copy(u16, u16),
    Double(u16),
    /// Any text (quotes, escapes, characters of several bytes), before a token.
    Text(u16, String),
}

fn token_edit() -> impl Strategy<Value = TokenEdit> {
    token_edit_of(EXTREMES.len())
}

/// A token edit whose `Replace` picks one of `extremes` values.
fn token_edit_of(extremes: usize) -> impl Strategy<Value = TokenEdit> {
    prop_oneof![
        3 => (any::<u16>(), 0..extremes).prop_map(|(a, v)| TokenEdit::Replace(a, v)),
        1 => (any::<u16>(), 1u8..8).prop_map(|(a, n)| TokenEdit::Delete(a, n)),
        1 => (any::<u16>(), 1u8..40).prop_map(|(a, n)| TokenEdit::Repeat(a, n)),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| TokenEdit::Swap(a, b)),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| TokenEdit::Copy(a, b)),
        1 => any::<u16>().prop_map(TokenEdit::Double),
        1 => (any::<u16>(), "[\"'\\\\/*#r()]{0,3}\\PC{0,4}").prop_map(|(a, t)| TokenEdit::Text(a, t)),
    ]
}

fn apply_tokens(text: &str, edits: &[TokenEdit]) -> Vec<u8> {
    apply_tokens_of(text, edits, EXTREMES)
}

/// [`apply_tokens`] with `extremes` as the values a `Replace` puts in.
fn apply_tokens_of(text: &str, edits: &[TokenEdit], extremes: &[&str]) -> Vec<u8> {
    let mut t = tokens(text);
    // Edits aim at the tokens that carry meaning, not at whitespace.
    let meaningful = |t: &[String]| -> Vec<usize> {
        (0..t.len()).filter(|&i| !t[i].trim().is_empty()).collect()
    };
    for e in edits {
        let m = meaningful(&t);
        if m.is_empty() {
            break;
        }
        let pick = |f: u16| m[at(f, m.len())];
        match e {
            TokenEdit::Replace(a, v) => {
                let i = pick(*a);
                t[i] = extremes[*v % extremes.len()].to_string();
            }
            TokenEdit::Delete(a, n) => {
                let i = pick(*a);
                let end = (i + usize::from(*n)).min(t.len());
                t.drain(i..end);
            }
            TokenEdit::Repeat(a, n) => {
                let i = pick(*a);
                let end = (i + usize::from(*n)).min(t.len());
                let piece = t[i..end].to_vec();
                t.splice(end..end, piece);
            }
            TokenEdit::Swap(a, b) => {
                let (i, j) = (pick(*a), pick(*b));
                t.swap(i, j);
            }
            TokenEdit::Copy(a, b) => {
                let (i, j) = (pick(*a), pick(*b));
                t[j] = t[i].clone();
            }
            TokenEdit::Text(a, text) => {
                let i = pick(*a);
                t.insert(i, text.clone());
            }
            TokenEdit::Double(a) => {
                let i = pick(*a);
                if t[i] == "(" {
                    t[i] = "((".to_string();
                    // Close it where the group closes.
                    let mut depth = 0i32;
                    for token in t.iter_mut().skip(i) {
                        depth += token.matches('(').count() as i32;
                        depth -= token.matches(')').count() as i32;
                        if depth <= 0 {
                            token.push(')');
                            break;
                        }
                    }
                }
            }
        }
    }
    t.concat().into_bytes()
}

/// What a mutated variant may get where a token was: the extremes, paths (that lead somewhere,
/// nowhere, or into a list), values as a user types them, whole values.
const VARIANT_EXTREMES: &[&str] = &[
    "0",
    "-1",
    "4294967296",
    "1e308",
    "NaN",
    "\"0s\"",
    "\"100y\"",
    "\"1/ns\"",
    "\"\"",
    "None",
    "()",
    "[]",
    "{}",
    "\"api\"",
    "30s",
    "500/s",
    "Constant(3000/s)",
    "Exponential(mean: 5ms)",
    "(at: \"5s\", duration: \"1s\", kind: Crash(service: \"api\"))",
    "Retry(max_attempts: 0)",
    "[GoodputAtLeast(client: \"users\", after: \"0s\", min_ratio: 1.5)]",
    "\"duration\"",
    "\"bucket\"",
    "\"variants\"",
    "\"faults\"",
    "\"faults[+]\"",
    "\"faults[9]\"",
    "\"faults[+].at\"",
    "\"expectations[0]\"",
    "\"expectations[+]\"",
    "\"services.api.workers\"",
    "\"services.api[+]\"",
    "\"services.nowhere.workers\"",
    "\"clients.users.call.stack[0].max_attempts\"",
    "\"clients.users.call.stack[+]\"",
    "\"clients.users.load.rate\"",
    "\"a..b\"",
    "\"x[\"",
    "\"services\"",
    "\"services.\\\"api\\\".workers\"",
    "\"services.\\\"shop.Db\\\".calls[0]\"",
    "\"services.\\\"api.workers\"",
];

/// The library files that name variants, each with the byte range of its `variants` map.
fn variant_files() -> Vec<(usize, std::ops::Range<usize>)> {
    LIBRARY
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let start = e.text.find("variants: {")? + "variants: ".len();
            let b = e.text.as_bytes();
            let (mut depth, mut j, mut quoted) = (0usize, start, false);
            while j < b.len() {
                match b[j] {
                    b'\\' if quoted => j += 1,
                    b'"' => quoted = !quoted,
                    b'{' if !quoted => depth += 1,
                    b'}' if !quoted => {
                        depth -= 1;
                        if depth == 0 {
                            return Some((i, start..j + 1));
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        })
        .collect()
}

/// Paths a `--set` may name: ones that lead somewhere in most library files, into a list,
/// nowhere, or are malformed.
const SET_PATHS: &[&str] = &[
    "duration",
    "bucket",
    "seed",
    "name",
    "faults",
    "faults[+]",
    "faults[0]",
    "faults[0].at",
    "faults[3]",
    "expectations",
    "expectations[+]",
    "expectations[0]",
    "services.api.workers",
    "services.api.queue",
    "services.api.queue.capacity",
    "services.api.calls[+]",
    "services.api.work",
    "services.db.workers",
    "services.api[+]",
    "clients.users.load",
    "clients.users.load.rate",
    "clients.users.call.timeout",
    "clients.users.call.stack",
    "clients.users.call.stack[0]",
    "clients.users.call.stack[0].max_attempts",
    "clients.users.call.stack[+]",
    "network",
    "variants",
    "verdict.sustain",
    "x..y",
    // Quoted names (a name with dots is written so): one that exists, one that does not,
    // one with what needs quoting, a quote left open, a quote not followed by a dot.
    "services.\"api\".workers",
    "\"clients\".\"users\".call.stack[0]",
    "services.\"shop.Db\".workers",
    "services.\"a=b \\\" c\".calls[0]",
    "services.\"api.workers",
    "services.\"api\"workers",
    "services.\"\".workers",
];

/// Values as a user types them on a command line.
const SET_VALUES: &[&str] = &[
    "30s",
    "1.5s",
    "1m30s",
    "250ms",
    "0s",
    "-1s",
    "100y",
    "500/s",
    "1/ns",
    "0/s",
    "Constant(3000/s)",
    "Exponential(mean: 5ms)",
    "Open(rate: Constant(100/s))",
    "32",
    "0",
    "-1",
    "1e3",
    "0x10",
    "4294967296",
    "NaN",
    "\"30s\"",
    "(at: 5s, duration: 1s, kind: Crash(service: \"api\"))",
    "(at: 5s, kind: Slowdown(service: \"db\", factor: 3.0))",
    "(target: \"db\", timeout: 1s)",
    "GoodputAtLeast(client: \"users\", after: 0s, min_ratio: 0.5)",
    "Retry(max_attempts: 2)",
    "Bulkhead(max_concurrent_calls: 3)",
    "(capacity: 10)",
    "[]",
    "{}",
    "storm",
    "\"api\"",
    "3, 4",
    "(",
    "))",
    "µs",
    "1µs",
    "5 s",
];

#[test]
fn fuzzed_files_exit_0_1_or_2_with_a_located_message_and_replay() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        PANIC.with(|p| *p.borrow_mut() = Some(format!("{message}{location}")));
    }));
    // What the harness found before holds first: every file under `tests/fuzz-found/`.
    let mut found: Vec<_> = std::fs::read_dir("tests/fuzz-found")
        .expect("tests/fuzz-found")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    found.sort();
    for path in found {
        let bytes = std::fs::read(&path).expect("a found file");
        let file = path.file_name().unwrap().to_string_lossy();
        let known_file = KNOWN.iter().any(|(_, _, f)| *f == file);
        if let Err(e) = property(&file, &bytes).or_else(|e| {
            if known_file {
                Ok(Outcome::RunRefused)
            } else {
                Err(e)
            }
        }) {
            // The panic hook keeps panic messages for the harness: say it on stdout too.
            println!("{}: {e}", path.display());
            panic!("{}: {e}", path.display());
        }
    }
    let seed = env_u64("RESIM_FUZZ_SEED").unwrap_or(10);
    let cases = env_u64("RESIM_FUZZ_CASES");
    let structured = cases.unwrap_or(4000);
    let mutated = cases.unwrap_or(2000);
    let library = || 0..LIBRARY.len();

    let tallies = [
        (
            "structured",
            campaign("structured", scenario(), structured, seed, |text| {
                text.clone().into_bytes()
            }),
        ),
        (
            "extreme",
            // Strategies are also built while generating (`prop_flat_map`), so the odds hold
            // for the whole campaign.
            with_odds(60, || {
                campaign("extreme", scenario(), mutated, seed, |text| {
                    text.clone().into_bytes()
                })
            }),
        ),
        (
            "bytes",
            campaign(
                "bytes",
                (library(), prop::collection::vec(byte_edit(), 1..5)),
                mutated,
                seed,
                |(file, edits)| apply_bytes(LIBRARY[*file].text.as_bytes(), edits),
            ),
        ),
        (
            "tokens",
            campaign(
                "tokens",
                (library(), prop::collection::vec(token_edit(), 1..5)),
                mutated,
                seed,
                |(file, edits)| apply_tokens(LIBRARY[*file].text, edits),
            ),
        ),
        (
            "variants",
            campaign(
                "variants",
                (
                    0..variant_files().len(),
                    prop::collection::vec(token_edit_of(VARIANT_EXTREMES.len()), 1..4),
                ),
                mutated,
                seed,
                |(k, edits)| {
                    let (file, range) = variant_files().swap_remove(*k);
                    let text = LIBRARY[file].text;
                    let mut out = text.as_bytes()[..range.start].to_vec();
                    out.extend(apply_tokens_of(
                        &text[range.clone()],
                        edits,
                        VARIANT_EXTREMES,
                    ));
                    out.extend(&text.as_bytes()[range.end..]);
                    out
                },
            ),
        ),
        (
            "sets",
            campaign(
                "sets",
                (
                    library(),
                    prop::collection::vec((0..SET_PATHS.len(), 0..SET_VALUES.len()), 1..4),
                ),
                mutated,
                seed,
                |(file, sets)| {
                    let mut out: String = sets
                        .iter()
                        .map(|(p, v)| format!("// --set {}={}\n", SET_PATHS[*p], SET_VALUES[*v]))
                        .collect();
                    out.push_str(LIBRARY[*file].text);
                    out.into_bytes()
                },
            ),
        ),
    ];
    let _ = std::panic::take_hook();

    let mut failures = Vec::new();
    for (name, t) in &tallies {
        println!(
            "{name:<10} inputs {:>7}  refused {:>7}  refused at run {:>5}  ran {:>6} (expectations passed {}, failed {}; stopped at the memory limit {})  failures {}",
            t.inputs,
            t.refused,
            t.run_refused,
            t.passed + t.failed_expectations,
            t.passed,
            t.failed_expectations,
            t.memory_limit,
            t.failures.len()
        );
        for (file, n) in &t.known {
            println!("    {n:>6}  known failure, see tests/fuzz-found/{file}");
        }
        let mut reasons: Vec<(&String, &u64)> = t.reasons.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (why, n) in reasons
            .iter()
            .take(8 * usize::from(std::env::var("RESIM_FUZZ_REASONS").is_ok()) + 8)
        {
            println!("    {n:>6}  {why}");
        }
        failures.extend(t.failures.iter().cloned());
    }
    // Each generator must reach the runs, not only the parser: a generator whose every input
    // is refused tests nothing beyond the first error.
    let (_, structured) = &tallies[0];
    assert!(
        structured.passed + structured.failed_expectations > structured.inputs / 10,
        "too few generated scenarios are valid: {structured:?}"
    );
    assert!(
        failures.is_empty(),
        "{} failing inputs (shrunk):\n{}",
        failures.len(),
        failures
            .iter()
            .map(|(path, what)| format!("  {path}: {what}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
