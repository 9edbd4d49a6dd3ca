//! The p4c corpus: every `samples/*.p4` must check without errors and every `errors/*.p4` must
//! be rejected (with the first error on a line p4c also reported), except the known failures
//! listed, with reasons, in `known_failures_samples.txt` and `known_failures_errors.txt`.
//!
//! The corpus is found through `KOI_CORPUS` (default `../../../shared/corpus` from this crate);
//! when it is absent the tests say so and pass. Includes of `../p4_16_samples/` (p4c's name for
//! the corpus's `samples/`) resolve as in p4c's tree (see `p4c_layout`). Set `KOI_CORPUS_VERBOSE=1` to list every
//! failure.

use koi_sema::CheckOptions;
use koi_syntax::PpOptions;
use std::collections::{BTreeSet, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("KOI_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    dir.is_dir().then_some(dir)
}

/// Names listed in a known-failures file (`name.p4 reason...`, `#` comments).
fn known(file: &str) -> HashSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

fn programs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "p4"));
    v.sort();
    v
}

/// The outcome of checking one program.
struct Outcome {
    /// Rendered errors (parse and check).
    errors: Vec<String>,
    /// `(file name, line)` of the first error.
    first: Option<(String, u32)>,
}

/// An include directory that makes p4c's `#include "../p4_16_samples/NAME.p4"` resolve.
///
/// In p4c's tree `p4_16_samples/` and `p4_16_errors/` are side by side; this corpus names them
/// `samples/` and `errors/`. The directory returned, `p4c-layout/p4_16_errors` under the test's
/// scratch directory, has `p4c-layout/p4_16_samples` beside it, a link to the corpus's
/// `samples/`. `None` where links cannot be made.
fn p4c_layout(corpus: &Path) -> Option<PathBuf> {
    static LAYOUT: OnceLock<Option<PathBuf>> = OnceLock::new();
    LAYOUT
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("p4c-layout");
            let errors = root.join("p4_16_errors");
            std::fs::create_dir_all(&errors).ok()?;
            let link = root.join("p4_16_samples");
            let target = corpus.join("samples").canonicalize().ok()?;
            if std::fs::read_link(&link).ok().as_ref() != Some(&target) {
                let _ = std::fs::remove_file(&link);
                #[cfg(unix)]
                std::os::unix::fs::symlink(&target, &link).ok()?;
                #[cfg(not(unix))]
                return None;
            }
            Some(errors)
        })
        .clone()
}

fn check_file(corpus: &Path, path: &Path) -> Outcome {
    let mut include_dirs = vec![
        corpus.join("../reference/p4include"),
        path.parent().map(Path::to_path_buf).unwrap_or_default(),
    ];
    include_dirs.extend(p4c_layout(corpus));
    let opts = PpOptions {
        include_dirs,
        defines: Vec::new(),
    };
    let (sm, prog, pdiags) = koi_syntax::parse_file(path, &opts);
    let (_, diags) = if pdiags.has_errors() {
        (koi_sema::Checked::default(), koi_syntax::Diagnostics::new())
    } else {
        koi_sema::check(&prog, &CheckOptions::default())
    };
    let errs: Vec<&koi_syntax::Diagnostic> = pdiags
        .list
        .iter()
        .chain(diags.list.iter())
        .filter(|d| d.is_error())
        .collect();
    let first = errs.first().and_then(|d| d.line(&sm)).map(|(f, l)| {
        let name = Path::new(&f)
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or(f);
        (name, l)
    });
    Outcome {
        errors: errs.iter().map(|d| d.render(&sm)).collect(),
        first,
    }
}

/// Runs `f` on a thread with a large stack, reporting a panic as `Err`.
fn guarded(corpus: &Path, path: &Path) -> Result<Outcome, String> {
    let (c, p) = (corpus.to_path_buf(), path.to_path_buf());
    let h = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || catch_unwind(AssertUnwindSafe(|| check_file(&c, &p))))
        .map_err(|e| e.to_string())?;
    match h.join() {
        Ok(Ok(o)) => Ok(o),
        _ => Err(format!("panic while checking {}", path.display())),
    }
}

/// Lines p4c reported for a program (`name.p4(14): ...`, `name.p4(47):syntax error`).
fn p4c_lines(stderr: &str, name: &str) -> BTreeSet<u32> {
    let prefix = format!("{name}(");
    stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(&prefix))
        .filter_map(|rest| rest.split(')').next()?.parse().ok())
        .collect()
}

fn verbose() -> bool {
    std::env::var_os("KOI_CORPUS_VERBOSE").is_some()
}

#[test]
fn samples_are_accepted() {
    let Some(corpus) = corpus_dir() else {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("corpus test skipped: the corpus is absent (set KOI_CORPUS)")
            ),
        );
        return;
    };
    let known = known("known_failures_samples.txt");
    let (mut accepted, mut total, mut panics, mut unexpected) = (0, 0, Vec::new(), Vec::new());
    for p in programs(&corpus.join("samples")) {
        total += 1;
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        match guarded(&corpus, &p) {
            Err(e) => panics.push(e),
            Ok(o) if o.errors.is_empty() => accepted += 1,
            Ok(o) => {
                if !known.contains(&name) {
                    unexpected.push(format!(
                        "{name}:\n{}",
                        o.errors.first().cloned().unwrap_or_default()
                    ));
                }
            }
        }
    }
    println!("samples accepted: {accepted}/{total}");
    if verbose() {
        for u in &unexpected {
            println!("REJECTED {u}");
        }
    }
    assert!(panics.is_empty(), "panics: {panics:#?}");
    assert!(
        unexpected.is_empty(),
        "{} samples rejected unexpectedly, e.g.:\n{}",
        unexpected.len(),
        unexpected
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn errors_are_rejected() {
    let Some(corpus) = corpus_dir() else {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("corpus test skipped: the corpus is absent (set KOI_CORPUS)")
            ),
        );
        return;
    };
    let known = known("known_failures_errors.txt");
    let (mut rejected, mut same_line, mut total) = (0, 0, 0);
    let (mut panics, mut unexpected, mut other_line) = (Vec::new(), Vec::new(), Vec::new());
    for p in programs(&corpus.join("errors")) {
        total += 1;
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let stderr = std::fs::read_to_string(p.with_extension("p4-stderr")).unwrap_or_default();
        let lines = p4c_lines(&stderr, &name);
        match guarded(&corpus, &p) {
            Err(e) => panics.push(e),
            Ok(o) if o.errors.is_empty() => {
                if !known.contains(&name) {
                    unexpected.push(name);
                }
            }
            Ok(o) => {
                rejected += 1;
                match &o.first {
                    Some((f, l)) if *f == name && lines.contains(l) => same_line += 1,
                    _ => other_line.push(format!("{name} p4c lines {lines:?}:\n{}", o.errors[0])),
                }
            }
        }
    }
    println!("errors rejected: {rejected}/{total}");
    println!("errors with the first error on a line p4c reported: {same_line}/{total}");
    if verbose() {
        for u in &unexpected {
            println!("ACCEPTED {u}");
        }
        for u in &other_line {
            println!("OTHER LINE {u}");
        }
    }
    assert!(panics.is_empty(), "panics: {panics:#?}");
    assert!(
        unexpected.is_empty(),
        "{} error programs accepted unexpectedly: {unexpected:?}",
        unexpected.len()
    );
    // A ratchet: the number of first errors on p4c's line may only go up.
    assert!(
        same_line >= MIN_SAME_LINE,
        "first error on p4c's line for {same_line} programs, fewer than the {MIN_SAME_LINE} reached before"
    );
}

/// Programs of `errors/` whose first koi error is on a line p4c reported, as reached so far.
const MIN_SAME_LINE: usize = 404;
