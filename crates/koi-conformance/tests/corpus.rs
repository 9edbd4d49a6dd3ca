//! p4c's STF corpus through koi (`koi conformance` on `stf/v1model`, `stf/ubpf`, `stf/psa`,
//! `stf/ebpf` and `stf/xdp`): every test passes except those listed, with a reason, in
//! `known_failures_<arch>.txt` beside this file.
//! A listed test that passes is reported so that the list can shrink; an unlisted failure
//! fails this test. The corpus runs twice: with the interpreter and with the cached datapath.
//! Without the corpus the test says so and passes.

use koi_conformance::corpus::{discover, run_case};
use koi_conformance::stf::RunOptions;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> Option<PathBuf> {
    let p = std::env::var_os("KOI_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus")
        });
    p.is_dir().then_some(p)
}

fn known(arch: &str) -> BTreeMap<String, String> {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/known_failures_{arch}.txt"));
    std::fs::read_to_string(f)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(n, r)| (n.trim().to_string(), r.trim().to_string()))
        .collect()
}

fn run_arch(arch: &str, cache: bool) {
    let Some(root) = corpus() else {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("corpus absent: STF conformance for {arch} skipped")
            ),
        );
        return;
    };
    let opts = koi_syntax::PpOptions {
        include_dirs: vec![root.join("../reference/p4include")],
        defines: Vec::new(),
    };
    let known = known(arch);
    let cases = discover(&root.join("stf").join(arch));
    assert!(!cases.is_empty(), "no STF tests found for {arch}");
    let (mut passed, mut unexpected, mut fixed) = (0, Vec::new(), Vec::new());
    for c in &cases {
        let r = run_case(c, &opts, &RunOptions { cache }, None);
        match (r.verdict.passed(), known.contains_key(&c.name)) {
            (true, false) => passed += 1,
            (true, true) => {
                passed += 1;
                fixed.push(c.name.clone());
            }
            (false, true) => {}
            (false, false) => unexpected.push(format!("{}: {}", c.name, r.verdict)),
        }
    }
    println!(
        "stf/{arch} (cache: {cache}): {passed} passed, {} failed ({} known)",
        cases.len() - passed,
        known.len()
    );
    for f in &fixed {
        println!("listed in known_failures_{arch}.txt but passes now: {f}");
    }
    assert!(
        unexpected.is_empty(),
        "STF tests failing that are not known failures:\n{}",
        unexpected.join("\n")
    );
}

#[test]
fn stf_v1model() {
    run_arch("v1model", false);
}

/// The same corpus through the cached datapath: the same verdicts (BRIEF §4's invariant).
#[test]
fn stf_v1model_cached() {
    run_arch("v1model", true);
}

#[test]
fn stf_ubpf() {
    run_arch("ubpf", false);
}

#[test]
fn stf_ubpf_cached() {
    run_arch("ubpf", true);
}

#[test]
fn stf_psa() {
    run_arch("psa", false);
}

#[test]
fn stf_psa_cached() {
    run_arch("psa", true);
}

#[test]
fn stf_ebpf() {
    run_arch("ebpf", false);
}

#[test]
fn stf_ebpf_cached() {
    run_arch("ebpf", true);
}

#[test]
fn stf_xdp() {
    run_arch("xdp", false);
}

#[test]
fn stf_xdp_cached() {
    run_arch("xdp", true);
}
