//! Tidiness of `scenarios/src` that is its own: each layer of the crate uses only the layers
//! below it (`layers_use_only_the_layers_below_them`), and functions fit a screen, but for a
//! list of the long ones that may only get shorter (`functions_fit_a_screen`). The
//! determinism rules (no wall clock, OS entropy, hash containers or platform math) are scanned
//! in every simulation crate, this one included, by `tests/tests/tidy.rs`.

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

/// The layers of `scenarios/src`, each with the layers it may use (itself included), from the
/// bottom up: `format ← import` (importers write the format and use nothing else),
/// `format, import ← export` (exporters read the format, and the import's names of formats
/// and calls),
/// `format ← figures.rs ← world`, `figures.rs ← report` (the report is built from
/// the figures, never from the world), `world, report ← run ← experiment ← cli`. The same
/// rules open each folder's `mod.rs`.
const LAYERS: &[(&str, &[&str])] = &[
    ("format", &["format"]),
    ("import", &["format", "import"]),
    ("export", &["format", "import", "export"]),
    ("figures", &["format", "figures"]),
    ("world", &["format", "figures", "world"]),
    ("report", &["format", "figures", "report"]),
    ("run", &["format", "figures", "world", "report", "run"]),
    (
        "experiment",
        &["format", "figures", "report", "run", "export", "experiment"],
    ),
    (
        "cli",
        &[
            "format",
            "figures",
            "world",
            "report",
            "run",
            "experiment",
            "import",
            "export",
            "cli",
        ],
    ),
];

/// The layer of a module path's first segment (`world` for `world::call`, `figures` for the
/// file `figures.rs`).
fn layer_of(segment: &str) -> Option<&'static str> {
    LAYERS.iter().map(|(l, _)| *l).find(|l| *l == segment)
}

/// The module path of a file under `src` (`format/schema/mod.rs` is `format::schema`), or
/// `None` for the crate's roots (`lib.rs`, and `main.rs`, which only calls `cli`).
fn module_path(relative: &str) -> Option<Vec<String>> {
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    (!(parts == ["lib"] || parts == ["main"])).then_some(parts)
}

/// What the crate root re-exports (`Report` → `report`), read from `lib.rs`'s `pub use` lines, so
/// that `crate::Report` counts as a use of the report.
fn root_names(lib: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("pub use ")) {
        let line = line.trim_end_matches(';');
        let layer = line.split("::").next().unwrap_or_default().to_string();
        let last = line.rsplit("::").next().unwrap_or_default();
        for name in last.trim_matches(|c| c == '{' || c == '}').split(',') {
            names.push((name.trim().to_string(), layer.clone()));
        }
    }
    names
}

/// `text` without comments (each line kept, so line numbers stay) and without its unit-test
/// module: a test may use what the layer's users use. Clippy's `items_after_test_module` keeps
/// that module last in every file, so the code ends where it starts.
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|next| next.trim_start().starts_with("mod tests"))
        {
            break;
        }
        out.push(line.find("//").map_or(*line, |c| &line[..c]));
    }
    out.join("\n")
}

/// The items of the `{ … }` group that `text` starts with, trimmed (`{a, b::{c, d}}` gives
/// `a` and `b::{c, d}`).
fn group_items(text: &str) -> Vec<String> {
    let mut items = vec![String::new()];
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 1 => {
                items.push(String::new());
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            break;
        }
        if !(depth == 1 && c == '{') {
            items.last_mut().expect("one item at least").push(c);
        }
    }
    items
        .iter()
        .map(|i| i.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|i| !i.is_empty())
        .collect()
}

/// Every path that starts with `crate::` or climbs out with `super::` in `code` of the module
/// `module`: (line, the path as written, the crate's top-level segment it reaches).
fn crate_paths(code: &str, module: &[String]) -> Vec<(usize, String, String)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let (base, after) = if starts_word && rest.starts_with("crate::") {
            (Vec::new(), i + "crate::".len())
        } else if starts_word && rest.starts_with("super::") {
            let mut up = 0;
            let mut j = i;
            while code[j..].starts_with("super::") {
                up += 1;
                j += "super::".len();
            }
            if up <= module.len() {
                (module[..module.len() - up].to_vec(), j)
            } else {
                (Vec::new(), j)
            }
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let line = code[..i].matches('\n').count() + 1;
        let prefix = &code[i..after];
        // The path as written, or each item of a `{ … }` group, with its first segment.
        let items: Vec<String> = if code[after..].starts_with('{') {
            group_items(&code[after..])
                .into_iter()
                .map(|item| format!("{prefix}{item}"))
                .collect()
        } else {
            let path: String = code[after..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || "_:".contains(*c))
                .collect();
            vec![format!("{prefix}{}", path.trim_end_matches(':'))]
        };
        for written in items {
            let first = written[prefix.len()..]
                .split("::")
                .next()
                .unwrap_or_default()
                .to_string();
            let top = base.first().cloned().unwrap_or(first);
            found.push((line, written, top));
        }
        i = after;
    }
    found
}

#[test]
fn layers_use_only_the_layers_below_them() {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src/");
    let lib = std::fs::read_to_string(format!("{src}lib.rs")).unwrap();
    let roots = root_names(&lib);
    let mut found = Vec::new();
    let mut seen = 0;
    for (file, text) in sources() {
        let relative = file.strip_prefix(src).unwrap_or(&file).replace('\\', "/");
        let Some(module) = module_path(&relative) else {
            continue;
        };
        let Some((layer, allowed)) = LAYERS.iter().find(|(l, _)| *l == module[0]) else {
            found.push(format!(
                "scenarios/src/{relative}: belongs to no layer; add `{}` to LAYERS in scenarios/tests/suite/tidy.rs and a layer rule to its mod.rs",
                module[0]
            ));
            continue;
        };
        for (line, written, top) in crate_paths(&code(&text), &module) {
            seen += 1;
            let target = layer_of(&top).or_else(|| {
                roots
                    .iter()
                    .find(|(name, _)| *name == top)
                    .and_then(|(_, l)| layer_of(l))
            });
            let Some(target) = target else {
                found.push(format!(
                    "scenarios/src/{relative}:{line}: `{written}` reaches `{top}`, which is in no layer"
                ));
                continue;
            };
            if !allowed.contains(&target) {
                found.push(format!(
                    "scenarios/src/{relative}:{line}: `{written}` uses {target} from {layer}, against the direction of use: {layer} may use only {}",
                    allowed.join(", ")
                ));
            }
        }
    }
    // A scanner that reads nothing passes everything: the crate has hundreds of such paths.
    assert!(seen > 300, "only {seen} crate paths found in scenarios/src");
    assert!(
        found.is_empty(),
        "imports against the layers of scenarios (format ← figures.rs ← world, report ← run ← experiment ← cli):\n{}",
        found.join("\n")
    );
}

/// The longest a function of `scenarios/src` may be, in lines from its signature to its
/// closing brace: one that does not fit a screen does several things.
const FUNCTION_LINES_MAX: usize = 70;

/// The functions that were longer than [`FUNCTION_LINES_MAX`] when the check came in (file,
/// name, lines): each may shrink but not grow, and leaves the list once it fits; a function
/// not listed may not pass the limit. The list may only get shorter.
const LONG_FUNCTIONS: &[(&str, &str, usize)] = &[
    ("scenarios/src/cli/mod.rs", "main", 100),
    ("scenarios/src/cli/mod.rs", "run_file", 85),
    ("scenarios/src/experiment/shrink/mod.rs", "shrink", 128),
    ("scenarios/src/experiment/sweep.rs", "render", 96),
    ("scenarios/src/format/overrides/mod.rs", "apply", 99),
    ("scenarios/src/format/overrides/mod.rs", "syntax_blame", 73),
    ("scenarios/src/format/overrides/variants.rs", "find", 91),
    ("scenarios/src/format/read.rs", "explain", 114),
    ("scenarios/src/format/read.rs", "lex", 122),
    (
        "scenarios/src/format/schema/distributed.rs",
        "validate_limiter",
        111,
    ),
    ("scenarios/src/format/validate.rs", "call", 107),
    ("scenarios/src/format/validate.rs", "expectation", 105),
    ("scenarios/src/format/validate.rs", "fault", 159),
    ("scenarios/src/report/build.rs", "series_row", 130),
    ("scenarios/src/report/build.rs", "service", 117),
    ("scenarios/src/report/render/charts/marks.rs", "bound", 84),
    (
        "scenarios/src/report/render/charts/marks.rs",
        "breakers",
        136,
    ),
    (
        "scenarios/src/report/render/charts/marks.rs",
        "expectation_panel",
        138,
    ),
    (
        "scenarios/src/report/render/charts/mod.rs",
        "compare_charts",
        72,
    ),
    ("scenarios/src/report/render/charts/mod.rs", "service", 180),
    ("scenarios/src/report/render/compact.rs", "render", 124),
    ("scenarios/src/report/render/csv.rs", "render", 118),
    ("scenarios/src/report/render/html.rs", "components", 97),
    ("scenarios/src/report/render/human.rs", "call", 91),
    ("scenarios/src/report/render/human.rs", "service", 130),
    ("scenarios/src/world/distributed.rs", "build", 89),
    ("scenarios/src/world/mod.rs", "new", 103),
    ("scenarios/src/world/sharding.rs", "of", 76),
];

/// Every function of `text` (before its `#[cfg(test)]` module) with its first line and its
/// length in lines. Relies on rustfmt's layout: the body's closing brace sits alone at the
/// signature's indentation.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let Some(rest) = [
            "fn ",
            "pub fn ",
            "pub(crate) fn ",
            "pub(super) fn ",
            "const fn ",
            "pub const fn ",
        ]
        .iter()
        .find_map(|p| code.strip_prefix(p)) else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The signature ends with the body's `{`, or with `;` for a declaration.
        let Some(open) = (i..lines.len()).find(|&k| {
            let t = lines[k].trim_end();
            t.ends_with('{') || t.ends_with(';') || t.ends_with('}')
        }) else {
            continue;
        };
        let t = lines[open].trim_end();
        if t.ends_with(';') || (t.ends_with('}') && open == i) {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|&k| lines[k] == close) {
            out.push((name, i + 1, end - i + 1));
        }
    }
    out
}

#[test]
fn functions_fit_a_screen() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/");
    let mut problems = Vec::new();
    // The longest function of each listed name and file (a file may have two of one name).
    let mut longest = vec![None; LONG_FUNCTIONS.len()];
    let mut count = 0;
    for (path, text) in sources() {
        let file = format!("scenarios/{}", path.strip_prefix(root).unwrap_or(&path));
        for (name, line, length) in functions(&text) {
            count += 1;
            match LONG_FUNCTIONS
                .iter()
                .position(|(f, n, _)| *f == file && *n == name)
            {
                Some(k) => {
                    longest[k] = longest[k].max(Some((length, line)));
                }
                None if length > FUNCTION_LINES_MAX => problems.push(format!(
                    "{file}:{line}: `{name}` is {length} lines, more than {FUNCTION_LINES_MAX}; split it"
                )),
                None => {}
            }
        }
    }
    for ((file, name, max), found) in LONG_FUNCTIONS.iter().zip(longest) {
        match found {
            None => problems.push(format!(
                "{file}: `{name}` is in LONG_FUNCTIONS but not in the file; take it out"
            )),
            Some((length, line)) if length > *max => problems.push(format!(
                "{file}:{line}: `{name}` is {length} lines, more than the {max} it had when the check came in; split it"
            )),
            Some((length, line)) if length <= FUNCTION_LINES_MAX => problems.push(format!(
                "{file}:{line}: `{name}` is {length} lines and fits: take it out of LONG_FUNCTIONS"
            )),
            Some(_) => {}
        }
    }
    // A scanner that finds nothing would pass: the crate has hundreds of functions.
    assert!(count > 500, "found only {count} functions");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
