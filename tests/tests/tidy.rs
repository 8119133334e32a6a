//! Tidy: the determinism rules of DESIGN.md, checked on the source of every simulation crate.
//!
//! Inside `sim-core/src`, `sim-net/src`, `patterns/src` and `scenarios/src` nothing may read
//! the wall clock or OS entropy, use `HashMap`/`HashSet` (their iteration order is random per
//! process), or call the platform's transcendental float functions (`f64::ln`, `exp`, `powf`,
//! `powi`, trigonometry...): those differ between platforms and `powi` even between build
//! profiles. Use `libm` instead. Comment lines are not checked; the few uses outside any
//! simulation are listed in `ALLOWED` with why (the token of the explorer's local server).

use std::path::{Path, PathBuf};

/// (pattern, why it is forbidden)
const FORBIDDEN: &[(&str, &str)] = &[
    (
        "Instant::now",
        "wall clock in a simulation crate; use Ctx::now",
    ),
    (
        "SystemTime::now",
        "wall clock in a simulation crate; use Ctx::now",
    ),
    (
        "thread_rng",
        "OS entropy; use a named stream from sim_core::Seed",
    ),
    (
        "rand::random",
        "OS entropy; use a named stream from sim_core::Seed",
    ),
    (
        "OsRng",
        "OS entropy; use a named stream from sim_core::Seed",
    ),
    (
        "getrandom",
        "OS entropy; use a named stream from sim_core::Seed",
    ),
    (
        "from_entropy",
        "OS entropy; use a named stream from sim_core::Seed",
    ),
    (
        "from_os_rng",
        "OS entropy; use a named stream from sim_core::Seed",
    ),
    (
        "HashMap",
        "random iteration order; use BTreeMap, Vec or slotmap",
    ),
    ("HashSet", "random iteration order; use BTreeSet or Vec"),
    (".ln()", "platform float math; use libm::log"),
    (".log(", "platform float math; use libm::log"),
    (".log2()", "platform float math; use libm::log2"),
    (".log10()", "platform float math; use libm::log10"),
    (".exp()", "platform float math; use libm::exp"),
    (".exp2()", "platform float math; use libm::exp2"),
    (".exp_m1()", "platform float math; use libm::expm1"),
    (".ln_1p()", "platform float math; use libm::log1p"),
    (".powf(", "platform float math; use libm::pow"),
    (
        ".powi(",
        "platform float math, differs between build profiles; use libm::pow",
    ),
    (".sin()", "platform float math; use libm::sin"),
    (".cos()", "platform float math; use libm::cos"),
    (".tan()", "platform float math; use libm::tan"),
    (".cbrt()", "platform float math; use libm::cbrt"),
    (".hypot(", "platform float math; use libm::hypot"),
    ("f64::ln", "platform float math; use libm::log"),
    ("f64::exp", "platform float math; use libm::exp"),
    ("f64::powf", "platform float math; use libm::pow"),
];

const SIMULATION_CRATES: &[&str] = &["sim-core", "sim-net", "patterns", "scenarios"];

/// (file, pattern, why it is allowed there): the few places outside any simulation that need
/// what a simulation must not use.
const ALLOWED: &[(&str, &str, &str)] = &[(
    "scenarios/src/cli/serve/server.rs",
    "getrandom",
    "the token of `resim explore --serve`'s local server guards it and is no part of a run",
)];

/// Every forbidden use in `text`, as `(line number, pattern, why)`.
fn violations(text: &str) -> Vec<(usize, &'static str, &'static str)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        // Ignore a trailing comment, so that a line may explain itself.
        let code = code.split(" //").next().unwrap_or(code);
        for &(pattern, why) in FORBIDDEN {
            if code.contains(pattern) {
                found.push((i + 1, pattern, why));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_scanner_finds_what_it_must() {
    let sample = "let t = std::time::Instant::now();\n// HashMap in a comment is fine\nlet m: HashMap<u32, u32> = HashMap::new();\nlet y = x.powi(2);\nlet z = libm::log(x); // not x.ln()\n";
    let found: Vec<(usize, &str)> = violations(sample).iter().map(|v| (v.0, v.1)).collect();
    assert_eq!(found, [(1, "Instant::now"), (3, "HashMap"), (4, ".powi(")]);
}

#[test]
fn simulation_crates_follow_the_determinism_rules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in SIMULATION_CRATES {
        rust_files(&root.join(krate).join("src"), &mut files);
    }
    assert!(
        files.len() >= 8,
        "the tidy scan found only {} files: is the workspace layout as expected?",
        files.len()
    );
    let mut report = String::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("source files are readable");
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, pattern, why) in violations(&text) {
            if ALLOWED
                .iter()
                .any(|(f, p, _)| *f == shown.replace('\\', "/") && *p == pattern)
            {
                continue;
            }
            report.push_str(&format!("{shown}:{line}: `{pattern}`: {why}\n"));
        }
    }
    assert!(report.is_empty(), "determinism rules broken:\n{report}");
}
