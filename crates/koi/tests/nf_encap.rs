//! The tunnelling network functions without namespaces: `examples/mpls`, `examples/upf` and
//! `examples/bng`.
//!
//! - Their STF tests pass through the cached datapath and through the interpreter alone
//!   (`koi test`, with and without `--no-cache`). The STF files hold frames scapy built with
//!   the protocols' own layers (MPLS, GTP-U and the PDU session container, Dot1AD, PPPoE) and
//!   the examples' entries: [`stf_files_are_what_scapy_builds`] runs each example's
//!   `gen_stf.py --check`, which builds them again and compares, byte for byte.
//! - `koi bench` facts of their traffic (each example's `bench_pcap.py`): every megaflow has a
//!   compiled program (none replays the interpreter, no run is uncacheable), every packet of
//!   the timed run hits one, and each packet gives one output; how many megaflows each
//!   function makes and how many are guarded (the BNG's downstream meter: one per subscriber).
//!   Cycles are measured by `koi bench` itself (docs/benchmarks.md), never here.
//!
//! The scapy parts need `KOI_PYTHON` (`scripts/py-venv.sh`); without it they print a `SKIP`
//! line, or fail under `KOI_E2E_REQUIRED`/`CI` (see `e2e/mod.rs`).

mod e2e;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FUNCTIONS: [&str; 3] = ["mpls", "upf", "bng"];

fn koi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .current_dir(e2e::repo())
        .output()
        .expect("run koi")
}

fn example(name: &str) -> PathBuf {
    e2e::repo().join("examples").join(name)
}

fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("nf_encap_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmpdir");
    d
}

fn stf_files(name: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(example(name))
        .expect("example dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "stf"))
        .collect();
    v.sort();
    v
}

#[test]
fn stf_tests_pass_cached_and_interpreted() {
    let mut ran = 0;
    for f in FUNCTIONS {
        let prog = example(f).join(format!("{f}.p4"));
        let files = stf_files(f);
        assert!(files.len() >= 2, "{f}: STF files {files:?}");
        for stf in files {
            for mode in [None, Some("--no-cache")] {
                let (p, s) = (prog.display().to_string(), stf.display().to_string());
                let mut args = vec!["test", p.as_str(), s.as_str()];
                args.extend(mode);
                let o = koi(&args);
                let out = String::from_utf8_lossy(&o.stdout);
                assert!(
                    o.status.success() && out.starts_with("PASS"),
                    "koi {}:\n{out}{}",
                    args.join(" "),
                    String::from_utf8_lossy(&o.stderr)
                );
                ran += 1;
            }
        }
    }
    assert_eq!(ran, 2 * (3 + 2 + 3));
}

/// A mutated expectation fails: the STF runs compare every byte.
#[test]
fn a_changed_byte_of_an_expected_frame_fails_its_stf_test() {
    let stf = std::fs::read_to_string(example("upf").join("downlink.stf")).expect("stf");
    // The first expected frame, one nibble of its TEID changed (byte 46 of the frame).
    let mut done = false;
    let changed: Vec<String> = stf
        .lines()
        .map(|l| match l.strip_prefix("expect 1 ") {
            Some(hex) if !done => {
                done = true;
                let mut h = hex.to_string();
                let at = 2 * 46;
                let c = if &h[at..at + 1] == "0" { "1" } else { "0" };
                h.replace_range(at..at + 1, c);
                format!("expect 1 {h}")
            }
            _ => l.to_string(),
        })
        .collect();
    assert!(done);
    let d = tmp("mutated");
    let f = d.join("downlink.stf");
    std::fs::write(&f, changed.join("\n") + "\n").expect("write");
    let prog = example("upf").join("upf.p4").display().to_string();
    let o = koi(&["test", &prog, &f.display().to_string()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("byte 46 differs"), "{out}");
}

/// Each example's `gen_stf.py --check`: the committed STF files are what scapy builds.
#[test]
fn stf_files_are_what_scapy_builds() {
    let Some(py) = e2e::scapy_python("stf_files_are_what_scapy_builds") else {
        return;
    };
    for f in FUNCTIONS {
        let o = Command::new(&py)
            .arg(example(f).join("gen_stf.py"))
            .arg("--check")
            .output()
            .expect("gen_stf.py");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{f}/gen_stf.py --check:\n{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            out.matches(": as scapy builds it").count(),
            stf_files(f).len(),
            "{out}"
        );
    }
}

/// `bench_pcap.py ARGS...` of example `name`, with a fresh output directory.
fn bench_traffic(py: &Path, name: &str, args: &[&str]) {
    let o = Command::new(py)
        .arg(example(name).join("bench_pcap.py"))
        .args(args)
        .output()
        .expect("bench_pcap.py");
    assert!(
        o.status.success(),
        "{name}/bench_pcap.py {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A short `koi bench --json` run.
fn bench(prog: &Path, entries: &Path, pcap: &Path) -> Value {
    let (p, e, c) = (
        prog.display().to_string(),
        entries.display().to_string(),
        pcap.display().to_string(),
    );
    let o = koi(&[
        "bench",
        &p,
        "--entries",
        &e,
        "--pcap",
        &c,
        "--seconds",
        "0.3",
        "--warmup",
        "0.5",
        "--json",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "koi bench {p}: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(out.trim()).expect("one JSON object")
}

fn num(v: &Value, path: &str) -> f64 {
    let mut x = v;
    for k in path.split('.') {
        x = x.get(k).unwrap_or_else(|| panic!("no `{path}` in {v}"));
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("`{path}` is not a number: {x}"))
}

/// What every function's benchmark holds: every megaflow compiled, none replayed, nothing
/// uncacheable, no error, every timed packet a compiled hit with one output.
fn assert_all_compiled(what: &str, v: &Value) {
    assert_eq!(num(v, "errors"), 0.0, "{what}: {v}");
    assert_eq!(num(v, "warmup.uncacheable"), 0.0, "{what}: {v}");
    assert_eq!(v["replayed"], serde_json::json!({}), "{what}: {v}");
    assert_eq!(
        num(v, "cache.compiled"),
        num(v, "cache.megaflows"),
        "{what}: {v}"
    );
    assert_eq!(num(v, "counters.misses"), 0.0, "{what}: {v}");
    assert_eq!(
        num(v, "counters.compiled_hits"),
        num(v, "counters.packets"),
        "{what}: {v}"
    );
    assert_eq!(num(v, "outputs_per_packet"), 1.0, "{what}: {v}");
}

#[test]
fn mpls_roles_bench_on_four_compiled_megaflows_each() {
    let Some(py) = e2e::scapy_python("mpls_roles_bench_on_four_compiled_megaflows_each") else {
        return;
    };
    let d = tmp("mpls");
    for role in ["pe1", "p", "pe2"] {
        let pcap = d.join(format!("{role}.pcap"));
        bench_traffic(
            &py,
            "mpls",
            &[
                "--role",
                role,
                "--flows",
                "2000",
                &pcap.display().to_string(),
            ],
        );
        let v = bench(
            &example("mpls").join("mpls.p4"),
            &example("mpls").join(format!("{role}.entries")),
            &pcap,
        );
        assert_all_compiled(role, &v);
        // 2,000 flows over four ways through the program: a megaflow per way (the label
        // stack or the FEC's prefix), whatever the hosts and ports.
        assert_eq!(num(&v, "cache.megaflows"), 4.0, "{role}: {v}");
        assert_eq!(num(&v, "cache.guarded"), 0.0, "{role}: {v}");
    }
}

#[test]
fn upf_bench_compiles_a_megaflow_per_session_and_direction() {
    let Some(py) = e2e::scapy_python("upf_bench_compiles_a_megaflow_per_session_and_direction")
    else {
        return;
    };
    let d = tmp("upf");
    let (pcap, entries) = (d.join("upf.pcap"), d.join("upf.entries"));
    bench_traffic(
        &py,
        "upf",
        &[
            "--flows",
            "2000",
            "--sessions",
            "100",
            &pcap.display().to_string(),
            &entries.display().to_string(),
        ],
    );
    let v = bench(&example("upf").join("upf.p4"), &entries, &pcap);
    assert_all_compiled("upf", &v);
    // A megaflow per session and direction: uplink its TEID and UE address, downlink the UE
    // address; the parser's test for GTP-U (UDP port 2152) needs one bit of the other
    // traffic's UDP ports, and the check of parser_error none, so the UE's ports and flows
    // share it.
    assert_eq!(num(&v, "cache.megaflows"), 200.0, "{v}");
    assert_eq!(num(&v, "cache.guarded"), 0.0, "{v}");
}

#[test]
fn bng_bench_compiles_a_megaflow_per_subscriber_and_direction() {
    let Some(py) = e2e::scapy_python("bng_bench_compiles_a_megaflow_per_subscriber_and_direction")
    else {
        return;
    };
    let d = tmp("bng");
    let (pcap, entries) = (d.join("bng.pcap"), d.join("bng.entries"));
    bench_traffic(
        &py,
        "bng",
        &[
            "--flows",
            "2000",
            "--subscribers",
            "100",
            &pcap.display().to_string(),
            &entries.display().to_string(),
        ],
    );
    let v = bench(&example("bng").join("bng.p4"), &entries, &pcap);
    assert_all_compiled("bng", &v);
    // A megaflow per subscriber and direction; the downstream ones guarded by the meter's
    // colour (policed subscribers' red packets are dropped by the same megaflow's other arm).
    assert_eq!(num(&v, "cache.megaflows"), 200.0, "{v}");
    assert_eq!(num(&v, "cache.guarded"), 100.0, "{v}");
}
