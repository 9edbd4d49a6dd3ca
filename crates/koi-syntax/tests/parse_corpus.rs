//! Corpus test of the parser over p4c's test programs (`KOI_CORPUS`, by default
//! `../shared/corpus` beside the workspace).
//!
//! - every `samples/*.p4` and `stf/*/*.p4` must parse without error, except those listed in
//!   `parse_known_failures.txt` (each with a reason);
//! - for `errors/*.p4` whose p4c output has a `syntax error`, koi's first error should be on
//!   the same line: the number of matches is reported and must not fall below a floor;
//! - no `errors/*.p4` may make the parser panic.
//!
//! Programs go through koi's own preprocessor first (with p4c's `p4include` as `-I`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Matches of p4c's syntax-error lines that must not regress.
const MIN_SYNTAX_ERROR_MATCHES: usize = 22;

fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("KOI_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    dir.is_dir().then_some(dir)
}

// ---- running the parser over the corpus ------------------------------------------------

struct Outcome {
    /// First error: file, line, message.
    first_error: Option<(PathBuf, u32, String)>,
    errors: usize,
    bytes: usize,
    elapsed: Duration,
}

fn parse_program(corpus: &Path, path: &Path) -> Result<Outcome, String> {
    let opts = koi_syntax::PpOptions {
        include_dirs: vec![corpus.join("../reference/p4include")],
        defines: Vec::new(),
    };
    let mut sm = koi_syntax::SourceMap::new();
    let pdiags = koi_syntax::preprocess::preprocess_file(&mut sm, path, &opts);
    if pdiags.has_errors() {
        let first = pdiags.list.iter().find(|d| d.is_error());
        return Err(format!(
            "preprocessor: {}",
            first.map(|d| d.render(&sm)).unwrap_or_default()
        ));
    }
    let start = Instant::now();
    let text = sm.expanded.text.clone();
    let result = std::panic::catch_unwind(move || koi_syntax::parser::parse(&text));
    let elapsed = start.elapsed();
    let (_, diags) = result.map_err(|_| format!("PANIC in parser on {}", path.display()))?;
    let first_error = diags.list.iter().find(|d| d.is_error()).map(|d| {
        let (file, line) = d
            .span
            .and_then(|s| sm.locate(s.lo))
            .map(|l| (sm.file(l.file).path.clone(), l.line))
            .unwrap_or_default();
        (file, line, d.message.clone())
    });
    Ok(Outcome {
        first_error,
        errors: diags.error_count(),
        bytes: sm.expanded.text.len(),
        elapsed,
    })
}

fn p4_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "p4"));
    v.sort();
    v
}

fn positive_programs(corpus: &Path) -> Vec<PathBuf> {
    let mut all = p4_files(&corpus.join("samples"));
    let mut arch: Vec<PathBuf> = std::fs::read_dir(corpus.join("stf"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    arch.sort();
    for a in arch {
        all.extend(p4_files(&a));
    }
    all
}

fn known_failures() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parse_known_failures.txt");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn rel(corpus: &Path, p: &Path) -> String {
    p.strip_prefix(corpus).unwrap_or(p).display().to_string()
}

#[test]
fn corpus_positive_programs_parse() {
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
    let known = known_failures();
    let (mut ok, mut counted, mut bytes, mut time) = (0, 0, 0, Duration::ZERO);
    let (mut unexpected, mut fixed) = (Vec::new(), Vec::new());
    let mut known_seen = Vec::new();
    for path in positive_programs(&corpus) {
        let name = rel(&corpus, &path);
        let out = match parse_program(&corpus, &path) {
            Ok(o) => o,
            Err(e) if e.starts_with("PANIC") || !known.contains_key(&name) => {
                unexpected.push(format!("{name}: {e}"));
                continue;
            }
            Err(e) => {
                known_seen.push(format!("{name}: {e}"));
                continue;
            }
        };
        time += out.elapsed;
        bytes += out.bytes;
        counted += 1;
        match &out.first_error {
            None if known.contains_key(&name) => fixed.push(name),
            None => ok += 1,
            Some((f, l, m)) => {
                let f = rel(&corpus, f);
                let line = format!("{name}: {f}:{l}: {m} ({} errors)", out.errors);
                if known.contains_key(&name) {
                    known_seen.push(line);
                } else {
                    unexpected.push(line);
                }
            }
        }
    }
    let total = counted + known_seen.len();
    eprintln!(
        "samples+stf parsed without error: {ok}/{total} (known failures: {})",
        known_seen.len()
    );
    eprintln!(
        "parse time (debug build): {time:?} for {} KiB of preprocessed text",
        bytes / 1024
    );
    for m in &known_seen {
        eprintln!("  {m}");
    }
    for f in &fixed {
        eprintln!("listed as known failure but parses now: {f}");
    }
    assert!(
        unexpected.is_empty(),
        "unexpected parse failures:\n{}",
        unexpected.join("\n")
    );
}

/// The first line of p4c's stderr with `syntax error` in the program's own file.
fn p4c_syntax_error_line(stderr: &str, file_name: &str) -> Option<u32> {
    stderr.lines().find_map(|l| {
        let rest = l.strip_prefix(file_name)?.strip_prefix('(')?;
        let (num, tail) = rest.split_once(')')?;
        tail.starts_with(":syntax error")
            .then(|| num.parse().ok())?
    })
}

#[test]
fn corpus_syntax_errors_match_p4c_lines() {
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
    let (mut matched, mut syntax_total, mut other_rejected, mut other_total) = (0, 0, 0, 0);
    let (mut panics, mut report, mut time) = (Vec::new(), Vec::new(), Duration::ZERO);
    for path in p4_files(&corpus.join("errors")) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stderr = std::fs::read_to_string(path.with_extension("p4-stderr")).unwrap_or_default();
        let out = match parse_program(&corpus, &path) {
            Ok(o) => o,
            Err(e) if e.starts_with("PANIC") => {
                panics.push(e);
                continue;
            }
            Err(_) => continue,
        };
        time += out.elapsed;
        let koi_line = out
            .first_error
            .as_ref()
            .filter(|(f, _, _)| f == &path)
            .map(|(_, l, m)| (*l, m.clone()));
        match p4c_syntax_error_line(&stderr, &name) {
            Some(line) => {
                syntax_total += 1;
                if koi_line.as_ref().is_some_and(|(l, _)| *l == line) {
                    matched += 1;
                } else {
                    report.push(format!("{name}: p4c line {line}, koi {koi_line:?}"));
                }
            }
            None => {
                other_total += 1;
                if out.first_error.is_some() {
                    other_rejected += 1;
                }
            }
        }
    }
    eprintln!("syntax-error negatives rejected on p4c's line: {matched}/{syntax_total}");
    eprintln!("parse time of errors/*.p4 (debug build): {time:?}");
    for r in &report {
        eprintln!("  {r}");
    }
    eprintln!("other negatives already rejected by the parser: {other_rejected}/{other_total}");
    assert!(panics.is_empty(), "parser panics:\n{}", panics.join("\n"));
    assert!(
        matched >= MIN_SYNTAX_ERROR_MATCHES,
        "only {matched} syntax errors matched"
    );
}
