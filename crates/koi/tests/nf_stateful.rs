//! The stateful network functions of `examples/` (firewall, NAPT, rate limiter): their STF
//! tests through the cached datapath and the interpreter alone (`koi test`, `--no-cache`),
//! and the structural facts of their `koi bench` runs: every packet runs a compiled program
//! (guarded by the state where the state decides), nothing replays the interpreter, nothing
//! is uncacheable, a handful of megaflows serves every connection. No timing is asserted.
//! The bench facts need the Python venv with scapy (`KOI_PYTHON`) for the traffic generators.

mod e2e;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn koi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .current_dir(e2e::repo())
        .output()
        .expect("run koi")
}

fn text(o: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `koi test PROG STF` with and without the cache; both must pass and check
/// `checked` packets.
fn stf(prog: &str, stf: &str, checked: usize) {
    for mode in [None, Some("--no-cache")] {
        let mut args = vec!["test", prog, stf];
        args.extend(mode);
        let o = koi(&args);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "koi {args:?}:\n{}", text(&o));
        assert!(
            out.contains(&format!("{checked} checked")),
            "koi {args:?}: expected {checked} packets checked:\n{out}"
        );
    }
}

#[test]
fn firewall_stf_tcp() {
    stf(
        "examples/firewall/firewall.p4",
        "examples/firewall/firewall_tcp.stf",
        18,
    );
}

#[test]
fn firewall_stf_udp_icmp() {
    stf(
        "examples/firewall/firewall.p4",
        "examples/firewall/firewall_udp_icmp.stf",
        10,
    );
}

/// A scratch directory of this test binary.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("nf_stateful_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// `koi bench ARGS --json` (short: structure only, no timing).
fn bench_json(args: &[&str]) -> Value {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.extend(["--seconds", "0.3", "--warmup", "0.3", "--json"]);
    let o = koi(&all);
    assert!(o.status.success(), "koi {all:?}:\n{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("JSON: {e}\n{}", text(&o)))
}

fn f64_at(v: &Value, path: &str) -> f64 {
    let mut x = v;
    for k in path.split('.') {
        x = &x[k];
    }
    x.as_f64().unwrap_or_else(|| panic!("`{path}`: {x}"))
}

/// What every function's bench must show: all packets compiled, nothing replayed or
/// uncacheable, every megaflow compiled and guarded, at most `max_megaflows` of them.
fn assert_cached(v: &Value, max_megaflows: f64) {
    assert_eq!(f64_at(v, "hit_rate.compiled"), 1.0, "{v}");
    assert_eq!(f64_at(v, "counters.uncacheable"), 0.0, "{v}");
    assert_eq!(f64_at(v, "warmup.uncacheable"), 0.0, "{v}");
    assert_eq!(v["replayed"], serde_json::json!({}), "{v}");
    let megaflows = f64_at(v, "cache.megaflows");
    assert!(megaflows <= max_megaflows, "{megaflows} megaflows: {v}");
    assert_eq!(f64_at(v, "cache.compiled"), megaflows, "{v}");
    assert_eq!(f64_at(v, "cache.guarded"), megaflows, "{v}");
}

/// Runs `script DIR ARGS...` with the venv's Python; false (after a SKIP or, in CI, a
/// failure) when there is no venv.
fn generate(test: &str, script: &str, dir: &Path, args: &[&str]) -> bool {
    let Some(python) = e2e::scapy_python(test) else {
        return false;
    };
    let o = Command::new(python)
        .arg(e2e::repo().join(script))
        .arg(dir)
        .args(args)
        .output()
        .expect("run the generator");
    assert!(o.status.success(), "{script}:\n{}", text(&o));
    true
}

#[test]
fn firewall_bench_every_packet_compiled_few_megaflows() {
    let test = "firewall_bench_every_packet_compiled_few_megaflows";
    let dir = scratch("firewall");
    if !generate(test, "examples/firewall/bench_pcap.py", &dir, &["300", "2"]) {
        return;
    }
    let inside = format!("1={}", dir.join("inside.pcap").display());
    let outside = format!("2={}", dir.join("outside.pcap").display());
    let v = bench_json(&[
        "examples/firewall/firewall.p4",
        "--entries",
        "examples/firewall/bench.entries",
        "--pcap",
        &inside,
        "--pcap",
        &outside,
    ]);
    // One megaflow per direction, protocol and kind of TCP segment, not per connection.
    assert_cached(&v, 12.0);
    // Every connection is established after the first pass and its packets come out (but
    // for a connection whose slot another holds, if the CRC-32s of two of the 300 meet).
    assert!(f64_at(&v, "outputs_per_packet") > 0.99, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rate_limiter_stf() {
    stf(
        "examples/rate_limiter/rate_limiter.p4",
        "examples/rate_limiter/rate_limiter.stf",
        25,
    );
}

#[test]
fn rate_limiter_bench_every_packet_compiled_few_megaflows() {
    let v = bench_json(&[
        "examples/rate_limiter/rate_limiter.p4",
        "--entries",
        "examples/rate_limiter/bench.entries",
        "--flows",
        "1000",
    ]);
    // One megaflow per source prefix, class and protocol path, not per flow.
    assert_cached(&v, 16.0);
    // The rates are far above the replay's: every packet green, forwarded.
    assert_eq!(f64_at(&v, "outputs_per_packet"), 1.0, "{v}");
}

#[test]
fn napt_stf() {
    stf("examples/napt/napt.p4", "examples/napt/napt.stf", 14);
}

#[test]
fn napt_bench_every_packet_compiled() {
    let dir = scratch("napt");
    // bench_pcap.py needs no scapy: any Python 3.
    let o = Command::new(e2e::python())
        .arg(e2e::repo().join("examples/napt/bench_pcap.py"))
        .arg(&dir)
        .args(["300", "2"])
        .output()
        .expect("run bench_pcap.py");
    assert!(o.status.success(), "bench_pcap.py:\n{}", text(&o));
    let inside = format!("1={}", dir.join("inside.pcap").display());
    let outside = format!("2={}", dir.join("outside.pcap").display());
    let v = bench_json(&[
        "examples/napt/napt.p4",
        "--entries",
        "examples/napt/bench.entries",
        "--pcap",
        &inside,
        "--pcap",
        &outside,
    ]);
    // Every packet compiled and guarded; a few megaflows (per direction and protocol), not
    // one per mapping.
    assert_cached(&v, 12.0);
    // Every connection whose slot is its own is translated both ways; the few whose slot
    // another took (300 in 32,768 slots) are dropped, and nothing else.
    assert!(f64_at(&v, "outputs_per_packet") > 0.97, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
