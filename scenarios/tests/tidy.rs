//! Tidiness of the simulation code in `scenarios/src`: nothing reads the wall clock or OS
//! entropy, no hash containers (their order is not deterministic), no platform math.

/// Every `.rs` file under `scenarios/src`, with its text.
fn sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path.display().to_string(), text));
            }
        }
    }
    out.sort();
    out
}

/// Fails with every line that contains one of `words`.
fn check(words: &[&str]) {
    let mut found = Vec::new();
    for (file, text) in sources() {
        for (i, line) in text.lines().enumerate() {
            for w in words {
                if line.contains(w) {
                    found.push(format!("{file}:{}: {w}", i + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "forbidden in scenarios/src:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_wall_clock_or_os_entropy() {
    check(&[
        "Instant::now",
        "SystemTime::now",
        "thread_rng",
        "getrandom",
        "from_entropy",
    ]);
}

#[test]
fn no_hash_containers() {
    check(&["HashMap", "HashSet"]);
}

#[test]
fn no_platform_transcendental_functions() {
    check(&[".ln()", ".exp()", ".powf(", ".powi(", ".sin()", ".cos()"]);
}
