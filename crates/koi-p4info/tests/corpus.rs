//! The corpus test: every sample of `samples/` (and its subdirectories) with a golden P4Info (`X.p4.p4info.txtpb`) is
//! parsed, checked, lowered with `koi_lower` and given to [`koi_p4info::generate`]; the result
//! must have no difference from p4c's golden (`koi_proto::compare`).
//!
//! Samples that do not get there, or differ, are listed in `known_failures.txt` with a reason;
//! the test fails on any other failure and prints the listed samples that now match. Set
//! `KOI_P4INFO_CORPUS_REPORT=1` to print every failure with its first differences (the raw
//! material for `known_failures.txt`).
//!
//! The corpus is `$KOI_CORPUS`, by default `../../../shared/corpus` from this crate; p4c's
//! include files are taken from `../reference/p4include` next to it, as `koi-lower`'s corpus
//! test does.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Why a sample does not match.
enum Outcome {
    /// No difference; `true` when the text is also byte for byte p4c's.
    Matched(bool),
    /// It could not be compared (parse, check or lowering failure, generation error).
    Failed(String),
    /// Generated, but different from the golden: the differences.
    Differs(Vec<String>),
}

fn corpus_dir() -> PathBuf {
    match std::env::var_os("KOI_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    }
}

fn known_failures() -> BTreeMap<String, String> {
    include_str!("known_failures.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((p, why)) => (p.to_string(), why.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

fn run_one(program: &Path, golden: &Path, include: &Path) -> Outcome {
    let dir = program.parent().unwrap_or(Path::new(".")).to_path_buf();
    let opts = koi_syntax::PpOptions {
        include_dirs: vec![include.to_path_buf(), dir],
        defines: Vec::new(),
    };
    let (sm, ast, diags) = koi_syntax::parse_file(program, &opts);
    if diags.has_errors() {
        let first = diags
            .list
            .first()
            .map(|d| d.render(&sm))
            .unwrap_or_default();
        return Outcome::Failed(format!("parse: {}", first_line(&first)));
    }
    let (checked, sdiags) = koi_sema::check(&ast, &koi_sema::CheckOptions::default());
    if sdiags.has_errors() {
        let first = sdiags
            .list
            .first()
            .map(|d| d.render(&sm))
            .unwrap_or_default();
        return Outcome::Failed(format!("check: {}", first_line(&first)));
    }
    let pipeline = match koi_lower::lower(&ast, &checked) {
        Ok(p) => p,
        Err(d) => {
            let first = d.list.first().map(|d| d.render(&sm)).unwrap_or_default();
            return Outcome::Failed(format!("lower: {}", first_line(&first)));
        }
    };
    let info = match koi_p4info::generate(&pipeline) {
        Ok(i) => i,
        Err(e) => return Outcome::Failed(format!("generate: {e}")),
    };
    let text = std::fs::read_to_string(golden).unwrap_or_default();
    let expected = match koi_proto::p4info_from_text(&text) {
        Ok(g) => g,
        Err(e) => return Outcome::Failed(format!("golden: {e}")),
    };
    let diff = koi_proto::compare(&expected, &info);
    if diff.is_empty() {
        Outcome::Matched(koi_p4info::to_text(&info) == text)
    } else {
        Outcome::Differs(diff)
    }
}

/// `(program, golden)` for every sample with a golden under `dir` and its subdirectories
/// (p4c's larger programs, such as `pins/` and `dash/`, have one each), sorted.
fn samples(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for p in rd.filter_map(|e| e.ok().map(|e| e.path())) {
        if p.is_dir() {
            out.extend(samples(&p));
            continue;
        }
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(program) = name.strip_suffix(".p4info.txtpb") {
            out.push((dir.join(program), p.clone()));
        }
    }
    out.sort();
    out
}

#[test]
fn corpus_samples_match_p4c_p4info() {
    let corpus = corpus_dir();
    if !corpus.join("samples").is_dir() {
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
    let report = std::env::var_os("KOI_P4INFO_CORPUS_REPORT").is_some();
    let known = known_failures();
    let (mut matched, mut same_text, mut total) = (0, 0, 0);
    let (mut unexpected, mut now_matching) = (Vec::new(), Vec::new());
    let root = corpus.join("samples");
    for (program, golden) in samples(&root) {
        // The path under samples/: the file name for most, `pins/pins_wbb.p4` in a subdirectory.
        let name = program
            .strip_prefix(&root)
            .unwrap_or(&program)
            .to_string_lossy()
            .into_owned();
        total += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| run_one(&program, &golden, &include)))
            .unwrap_or_else(|_| Outcome::Failed("panic".into()));
        let why = match outcome {
            Outcome::Matched(same) => {
                matched += 1;
                same_text += usize::from(same);
                if report && !same {
                    println!("TEXT {name} same P4Info, different text");
                }
                if known.contains_key(&name) {
                    now_matching.push(name);
                }
                continue;
            }
            Outcome::Failed(why) => why,
            Outcome::Differs(diff) => {
                let shown: Vec<&String> = diff.iter().take(3).collect();
                format!("p4info: {} difference(s): {shown:?}", diff.len())
            }
        };
        if report {
            println!("FAIL {name} {why}");
        }
        if !known.contains_key(&name) {
            unexpected.push(format!("{name}: {why}"));
        }
    }
    println!("samples: {matched}/{total} P4Infos identical to p4c's ({same_text} also as text)");
    for n in &now_matching {
        println!("listed in known_failures.txt but now matches: {n}");
    }
    for u in &unexpected {
        println!("UNEXPECTED {u}");
    }
    assert!(
        unexpected.is_empty(),
        "{} unexpected failures",
        unexpected.len()
    );
}
