//! Corpus test of the preprocessor: every P4 program of p4c's conformance corpus (samples, STF
//! tests, error tests) preprocesses without a preprocessor error, except the few listed in
//! [`EXPECTED_ERRORS`] that must fail. The corpus is found through `KOI_CORPUS` (default
//! `../../../shared/corpus` from this crate); without it the test says so and passes.

use koi_syntax::{PpOptions, SourceMap, preprocess};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Programs whose preprocessing must fail, with the first error expected and why.
const EXPECTED_ERRORS: &[(&str, &str, &str)] = &[
    (
        "samples/issue5094-typedef-bmv2.p4",
        "cannot find include file \"../p4_16_samples/arith-skeleton.p4\"",
        "p4c's tree has p4_16_samples/ next to p4_16_errors/; this corpus renamed it samples/",
    ),
    (
        "errors/issue5094-meta-bmv2.p4",
        "cannot find include file \"../p4_16_samples/arith-skeleton.p4\"",
        "same: the corpus has no p4_16_samples/ directory",
    ),
    (
        "errors/issue5094-string-bmv2.p4",
        "cannot find include file \"../p4_16_samples/arith-skeleton.p4\"",
        "same: the corpus has no p4_16_samples/ directory",
    ),
    (
        "errors/issue5094-type-bmv2.p4",
        "cannot find include file \"../p4_16_samples/arith-skeleton.p4\"",
        "same: the corpus has no p4_16_samples/ directory",
    ),
    (
        "errors/key-name.p4",
        "cannot find include file \"../p4_16_samples/arith-inline-skeleton.p4\"",
        "same: the corpus has no p4_16_samples/ directory",
    ),
    (
        "samples/fabric_20190420/fabric.p4",
        "cannot find include file \"include/checksum.p4\"",
        "the corpus copy of fabric_20190420/include/ has no checksum.p4",
    ),
    (
        "samples/vss-example.p4",
        "cannot find include file \"very_simple_model.p4\"",
        "very_simple_model.p4 is not part of the corpus or of p4include",
    ),
    (
        "samples/lj_example.p4",
        "cannot find include file \"very_simple_model.p4\"",
        "very_simple_model.p4 is not part of the corpus or of p4include",
    ),
];

fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("KOI_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    dir.is_dir().then_some(dir)
}

/// `*.p4` files under `dir`, recursively, sorted.
fn p4_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            p4_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "p4") {
            out.push(p);
        }
    }
}

/// The first preprocessor error of a file, rendered, if any.
fn first_error(path: &Path, p4include: &Path) -> Option<(String, String)> {
    let opts = PpOptions {
        include_dirs: vec![
            p4include.to_path_buf(),
            path.parent().map(Path::to_path_buf).unwrap_or_default(),
        ],
        defines: Vec::new(),
    };
    let mut sm = SourceMap::new();
    let diags = preprocess::preprocess_file(&mut sm, path, &opts);
    let lines = sm.expanded.text.lines().count();
    assert_eq!(
        lines,
        sm.expanded.lines.len(),
        "{}: line map",
        path.display()
    );
    let e = diags.list.iter().find(|d| d.is_error())?;
    Some((e.message.clone(), e.render(&sm)))
}

#[test]
fn corpus_preprocesses() {
    let Some(corpus) = corpus_dir() else {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("preprocess corpus test SKIPPED: corpus absent (set KOI_CORPUS)")
            ),
        );
        return;
    };
    let p4include = corpus.join("../reference/p4include");
    let mut files = Vec::new();
    p4_files(&corpus.join("samples"), &mut files);
    p4_files(&corpus.join("stf"), &mut files);
    p4_files(&corpus.join("errors"), &mut files);
    let start = Instant::now();
    let mut unexpected = Vec::new();
    let mut expected_seen = 0;
    let expected_present = EXPECTED_ERRORS
        .iter()
        .filter(|(name, _, _)| corpus.join(name).is_file())
        .count();
    for f in &files {
        let rel = f.strip_prefix(&corpus).unwrap_or(f).display().to_string();
        let expected = EXPECTED_ERRORS.iter().find(|(name, _, _)| *name == rel);
        match (first_error(f, &p4include), expected) {
            (None, None) => {}
            (Some((msg, _)), Some((_, want, _))) if msg == *want => expected_seen += 1,
            (Some((_, rendered)), _) => unexpected.push(rendered),
            (None, Some(_)) => unexpected.push(format!("{rel}: expected an error, got none\n")),
        }
    }
    println!(
        "preprocessed {} corpus files in {:.2?} ({} expected failures)",
        files.len(),
        start.elapsed(),
        expected_seen
    );
    assert!(!files.is_empty(), "no .p4 files in {}", corpus.display());
    assert!(
        unexpected.is_empty(),
        "unexpected results:\n{}",
        unexpected.concat()
    );
    assert_eq!(expected_seen, expected_present);
}
