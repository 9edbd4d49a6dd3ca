//! p4lang's PTF against koi: `koi run` in a switch namespace, the other ends of its veth pairs
//! in one tester namespace, and the `ptf` CLI run there on the modules of tests/ptf
//! (`ptf --test-dir tests/ptf --interface 1@h1 --interface 2@h2 MODULE`; PTF port N is koi
//! port N). The test fails, printing PTF's output, unless ptf exits 0 having run every test of
//! the module.
//!
//! Needs root and `KOI_PYTHON` (a Python with ptf and scapy: `scripts/py-venv.sh`); see
//! `e2e/mod.rs`.

mod e2e;
use e2e::{Lab, Layout, repo, scapy_python};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `ptf` script of the Python environment `py` (beside it), else `ptf` on the PATH.
fn ptf_cli(py: &Path) -> PathBuf {
    let beside = py.with_file_name("ptf");
    if beside.exists() {
        beside
    } else {
        PathBuf::from("ptf")
    }
}

/// Runs PTF module `module` (`tests` tests) against `koi run PROGRAM --entries ENTRIES`.
fn ptf(test: &str, program: &str, entries: &str, module: &str, tests: usize) {
    let Some(py) = scapy_python(test) else { return };
    let Some(mut lab) = Lab::new(test, 2, Layout::Tester) else {
        return;
    };
    let root = repo();
    lab.start_koi(&root.join(program), &root.join(entries), &[]);
    let mut cmd = lab.cmd(&lab.host(1).ns, ptf_cli(&py));
    cmd.arg("--test-dir")
        .arg(root.join("tests/ptf"))
        .args(["--interface", &format!("1@{}", lab.host(1).ifname)])
        .args(["--interface", &format!("2@{}", lab.host(2).ifname)])
        .arg("--log-file")
        .arg(lab.dir.join("ptf.log"))
        .args([
            "--default-timeout",
            "2",
            "--default-negative-timeout",
            "0.3",
        ])
        .arg(module)
        .current_dir(&lab.dir);
    let out = e2e::run(&mut cmd, Duration::from_secs(60));
    let log = std::fs::read_to_string(lab.dir.join("ptf.log")).unwrap_or_default();
    let all = format!("{}\n--- ptf.log\n{log}", out.show());
    assert!(out.ok(), "ptf {module} failed:\n{all}");
    // ptf exits 0 when it selected no test at all: check that every test ran and passed.
    assert!(
        out.stderr.contains(&format!("Ran {tests} test")) && out.stderr.contains("\nOK"),
        "ptf {module}: expected {tests} tests to run and pass:\n{all}"
    );
    println!("{}", out.stderr);
    assert!(lab.koi_alive(), "koi died:\n{}", lab.koi_output());
}

#[test]
fn ptf_l2l3_acl() {
    ptf(
        "ptf_l2l3_acl",
        "examples/l2l3_acl.p4",
        "examples/l2l3_acl.entries",
        "l2l3_acl",
        8,
    );
}

#[test]
fn ptf_l2_forward() {
    ptf(
        "ptf_l2_forward",
        "examples/l2_forward.p4",
        "examples/l2_forward.entries",
        "l2_forward",
        2,
    );
}
