//! The corpus test: every STF program of `stf/v1model`, `stf/ubpf` and `stf/psa` and every
//! sample of `samples/` that checks without errors and instantiates a v1model, ubpf or PSA
//! package must lower to a pipeline that verifies. Expected failures are listed in `known_failures.txt` with a
//! reason; the test fails on any other failure and reports listed programs that now pass.
//!
//! The corpus is `$KOI_CORPUS`, by default `../../../shared/corpus` from this crate.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// What happened to one program.
enum Outcome {
    /// Not a v1model/ubpf program, or it does not check: not counted.
    Skipped,
    Lowered,
    Failed(String),
}

fn corpus_dir() -> PathBuf {
    match std::env::var_os("KOI_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    }
}

fn known_failures() -> BTreeMap<String, String> {
    let text = include_str!("known_failures.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((p, why)) => (p.to_string(), why.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

fn lower_one(path: &Path, include: &Path) -> Outcome {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let opts = koi_syntax::PpOptions {
        include_dirs: vec![include.to_path_buf(), dir],
        defines: Vec::new(),
    };
    let (sm, program, diags) = koi_syntax::parse_file(path, &opts);
    if diags.has_errors() {
        return Outcome::Skipped;
    }
    let (checked, sdiags) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
    if sdiags.has_errors() {
        return Outcome::Skipped;
    }
    let Some(main) = &checked.main else {
        return Outcome::Skipped;
    };
    let package = checked.decl(main.package).map(|d| d.name.as_str());
    if !matches!(package, Some("V1Switch" | "ubpf" | "PSA_Switch")) {
        return Outcome::Skipped;
    }
    match koi_lower::lower(&program, &checked) {
        Ok(_) => Outcome::Lowered,
        Err(d) => {
            let first = d.list.first().map(|d| d.render(&sm)).unwrap_or_default();
            Outcome::Failed(first.lines().next().unwrap_or("").to_string())
        }
    }
}

/// Every `.p4` file under `dir`, recursively.
fn all_programs(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() && depth < 8 {
            all_programs(&p, out, depth + 1);
        } else if p.extension().is_some_and(|x| x == "p4") {
            out.push(p);
        }
    }
}

/// Lowering any program that checks, whatever its architecture, gives a pipeline or
/// diagnostics, never a panic.
#[test]
fn lowering_never_panics_on_the_whole_corpus() {
    let corpus = corpus_dir();
    if !corpus.is_dir() {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("skipping: no corpus at {}", corpus.display())
            ),
        );
        return;
    }
    let include = corpus.join("../reference/p4include");
    let mut files = Vec::new();
    all_programs(&corpus, &mut files, 0);
    files.sort();
    let mut panics = Vec::new();
    for path in &files {
        let r = catch_unwind(AssertUnwindSafe(|| {
            let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            let opts = koi_syntax::PpOptions {
                include_dirs: vec![include.clone(), dir],
                defines: Vec::new(),
            };
            let (_, program, diags) = koi_syntax::parse_file(path, &opts);
            if diags.has_errors() {
                return;
            }
            let (checked, sdiags) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
            if !sdiags.has_errors() && checked.main.is_some() {
                let _ = koi_lower::lower(&program, &checked);
            }
        }));
        if r.is_err() {
            panics.push(path.display().to_string());
        }
    }
    println!("{} programs, {} panics", files.len(), panics.len());
    assert!(panics.is_empty(), "lowering panicked on: {panics:?}");
}

fn programs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "p4"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn corpus_programs_lower_and_verify() {
    let corpus = corpus_dir();
    if !corpus.is_dir() {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("skipping: no corpus at {}", corpus.display())
            ),
        );
        return;
    }
    let include = corpus.join("../reference/p4include");
    let known = known_failures();
    let mut unexpected = Vec::new();
    let mut now_passing = Vec::new();
    for group in ["stf/v1model", "stf/ubpf", "stf/psa", "samples"] {
        let (mut lowered, mut total) = (0, 0);
        for path in programs(&corpus.join(group)) {
            let rel = format!("{group}/{}", path.file_name().unwrap().to_string_lossy());
            let outcome = catch_unwind(AssertUnwindSafe(|| lower_one(&path, &include)))
                .unwrap_or_else(|_| Outcome::Failed("panic".to_string()));
            match outcome {
                Outcome::Skipped => continue,
                Outcome::Lowered => {
                    lowered += 1;
                    if known.contains_key(&rel) {
                        now_passing.push(rel);
                    }
                }
                Outcome::Failed(why) => {
                    if !known.contains_key(&rel) {
                        unexpected.push(format!("{rel}: {why}"));
                    }
                }
            }
            total += 1;
        }
        println!("{group}: {lowered}/{total} lowered and verified");
    }
    for p in &now_passing {
        println!("listed in known_failures.txt but now lowers: {p}");
    }
    for u in &unexpected {
        println!("FAILED {u}");
    }
    assert!(
        unexpected.is_empty(),
        "{} unexpected failures",
        unexpected.len()
    );
}
