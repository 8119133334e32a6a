//! `resim export`'s output: the configuration on stdout or in `--out FILE`, or, with several
//! `--against` files, each of them written back into `--out DIR`; the mapping table and the
//! diffs on stderr. Exit code 1 when a change of the scenario could not be written back (after
//! writing the rest), 2 on bad input.

use super::args::ExportArgs;
use super::library::resolve;
use super::{converted, import_input, into_scenario};
use crate::export;
use crate::format::limits::RunLimits;
use std::process::ExitCode;

/// `resim export`: the configuration on stdout (or in `out`), the mapping table on stderr;
/// exit code 1 when a change is not written back, 2 on bad input.
pub(super) fn export_call(args: &ExportArgs, limits: &RunLimits) -> ExitCode {
    let exported = (|| {
        let overrides = args.overrides.overrides(&args.file)?;
        let scenario = resolve(&args.file, limits, &overrides).map_err(|e| e.to_string())?;
        let format: export::TargetFormat = args.to.parse()?;
        let service = args.service.as_deref();
        if args.against.is_empty() {
            return export::export(&scenario, &args.file, &args.call, format, service)
                .map_err(|e| e.to_string());
        }
        if args.against.len() > 1 && args.out.is_none() {
            return Err(format!(
                "--against: {} files are written back as {} files: give --out DIR, a directory to write each into under its own name",
                args.against.len(),
                args.against.len()
            ));
        }
        let against = export::Against {
            originals: args
                .against
                .iter()
                .map(|f| import_input(f))
                .collect::<Result<_, _>>()?,
            scenario: into_scenario(&args.file)?,
        };
        export::export_against(&scenario, &args.file, &args.call, format, service, &against)
            .map_err(|e| e.to_string())
    })();
    let unwritten = exported.as_ref().map_or(0, |e| e.unwritten);
    let code = match (exported, args.out.as_deref()) {
        (Ok(e), Some(dir)) if e.files.len() > 1 => written_back(&e, dir),
        (exported, out) => converted(exported.map(|e| (e.table + &e.diff, e.text)), out),
    };
    // What was written back is written; a change that was not must not pass for success in
    // a script (`resim export … && kubectl apply …`).
    if code == ExitCode::SUCCESS && unwritten > 0 {
        eprintln!(
            "resim export: {unwritten} changes of the scenario not written back (listed above under `not written back`); the others are written; exit code 1"
        );
        return ExitCode::from(1);
    }
    code
}

/// `resim export --against A B --out DIR`: the table and each file's diff on stderr, every
/// original written into `dir` under its own name (exit code 2 if two have one name, or a
/// file cannot be written).
fn written_back(exported: &export::Exported, dir: &str) -> ExitCode {
    let name = |f: &str| {
        std::path::Path::new(f)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    };
    let mut names = Vec::new();
    for w in &exported.files {
        match name(&w.file) {
            Some(n) if !names.contains(&n) => names.push(n),
            _ => {
                eprintln!(
                    "--out {dir}: {}: another --against file has its name, or it has none: give files of distinct names",
                    w.file
                );
                return ExitCode::from(2);
            }
        }
    }
    eprint!("{}{}", exported.table, exported.diff);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("{dir}: cannot make the directory: {e}");
        return ExitCode::from(2);
    }
    for (w, n) in exported.files.iter().zip(&names) {
        let path = std::path::Path::new(dir).join(n);
        if let Err(e) = std::fs::write(&path, &w.text) {
            eprintln!("{}: cannot write: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
