//! koi's own STF tests (`tests/stf/<arch>/NAME.p4` with `NAME.stf`, at the repository root):
//! behaviours of v1model's externs and traffic manager, of PSA's packet paths and externs, of
//! uBPF, eBPF filters and XDP that p4c's corpus does not exercise. Every one must pass, with the interpreter and with the cached datapath; there is
//! no list of known failures here.

use koi_conformance::corpus::{discover, run_test_with};
use koi_conformance::stf::RunOptions;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/stf")
}

#[test]
fn every_own_stf_test_passes() {
    own_stf(false);
}

#[test]
fn every_own_stf_test_passes_with_the_cache() {
    own_stf(true);
}

fn own_stf(cache: bool) {
    let root = root();
    let cases = discover(&root);
    // Guards against the tests silently disappearing (a moved directory, a renamed file).
    assert!(
        cases.len() >= 10,
        "expected koi's own STF tests under {}, found {}",
        root.display(),
        cases.len()
    );
    for arch in ["v1model", "ubpf", "psa", "ebpf", "xdp"] {
        assert!(
            cases.iter().any(|c| c.name.starts_with(arch)),
            "no own STF test for {arch}"
        );
    }
    let opts = koi_syntax::PpOptions::default();
    let mut failed = Vec::new();
    for c in &cases {
        let r = run_test_with(&c.name, &c.program, &c.stf, &opts, &RunOptions { cache });
        println!(
            "{} (cache: {cache}): {} ({} packets in, {} checked)",
            r.name, r.verdict, r.packets_in, r.packets_checked
        );
        if !r.verdict.passed() {
            failed.push(format!("{}: {:?}", r.name, r.verdict));
        } else if r.packets_checked == 0 {
            failed.push(format!("{}: passed without checking a packet", r.name));
        }
        for n in &r.notes {
            // A control-plane line the switch refused would make the test meaningless.
            if n.contains("was refused") {
                failed.push(format!("{}: {n}", r.name));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "own STF tests failed:\n{}",
        failed.join("\n")
    );
}
