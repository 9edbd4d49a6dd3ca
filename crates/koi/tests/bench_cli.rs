//! `koi bench`: the JSON report of a short run on the L2L3-ACL example (its fields, packets
//! forwarded, a warm cache for 100 flows, megaflows installed), a bad program's `file:line:col`
//! diagnostic and exit code, and `--write-pcap`'s file.
//!
//! The traffic generator is checked two ways: its unit tests compare frames with fixed bytes
//! that scapy 2.8.0 produced through `gen_pcap.py` (always run), and
//! [`write_pcap_matches_gen_pcap_py`] here compares whole files with what `gen_pcap.py`
//! writes, when the script (`../shared/bench/ovs-dpdk/gen_pcap.py` next to the repository, or
//! `$KOI_GEN_PCAP`) and a python3 with scapy (`$KOI_PYTHON`, default `python3`) are available;
//! otherwise it says so and passes.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn koi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .output()
        .expect("run koi")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench_cli_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The JSON report of a `koi bench --json` run that must have succeeded.
fn json_report(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).expect("one JSON object")
}

/// The field at a dotted `path`; panics if it is missing (it may be `null`).
fn field<'v>(v: &'v Value, path: &str) -> &'v Value {
    let mut x = v;
    for k in path.split('.') {
        x = x
            .get(k)
            .unwrap_or_else(|| panic!("no field `{path}` in {v}"));
    }
    x
}

fn num(v: &Value, path: &str) -> f64 {
    let x = field(v, path);
    x.as_f64()
        .unwrap_or_else(|| panic!("`{path}` is not a number: {x}"))
}

#[test]
fn json_report_of_a_short_run() {
    let prog = example("l2l3_acl.p4");
    let entries = example("l2l3_acl.entries");
    let out = koi(&[
        "bench",
        &prog,
        "--entries",
        &entries,
        "--flows",
        "100",
        "--seconds",
        "0.2",
        "--warmup",
        "0.3",
        "--json",
    ]);
    let v = json_report(&out);
    for f in [
        "packets",
        "seconds",
        "mpps",
        "ns_per_packet",
        "outputs_per_packet",
        "stage_cycles_per_packet.parse",
        "stage_cycles_per_packet.microflow",
        "stage_cycles_per_packet.megaflow",
        "stage_cycles_per_packet.actions",
        "stage_cycles_per_packet.slow_path",
        "hit_rate.microflow",
        "hit_rate.megaflow",
        "hit_rate.total",
        "hit_rate.miss",
        "counters.installs",
        "cache.megaflows",
        "cache.subtables",
        "cache.memory_bytes",
        "warmup.packets",
        "warmup.upcalls",
    ] {
        num(&v, f);
    }
    for f in [
        "cycles_per_packet",
        "tsc_mhz",
        "slow_path_cycles_per_upcall",
        "cache.bytes_per_megaflow",
        "warmup.slow_path_cycles_per_upcall",
    ] {
        let x = field(&v, f);
        assert!(x.is_null() || x.is_number(), "`{f}`: {x}");
    }
    assert!(num(&v, "packets") > 0.0);
    assert!(num(&v, "mpps") > 0.0);
    // Profiled by default: the cached packets' stages are timed.
    for f in [
        "stage_cycles_per_packet.parse",
        "stage_cycles_per_packet.microflow",
        "stage_cycles_per_packet.actions",
    ] {
        assert!(num(&v, f) > 0.0, "`{f}` untimed: {v}");
    }
    assert!(
        num(&v, "hit_rate.total") > 0.9,
        "100 flows after warm-up should hit the caches: {v}"
    );
    assert!(num(&v, "cache.megaflows") >= 1.0);
    assert!(num(&v, "cache.subtables") >= 1.0);
    assert_eq!(num(&v, "traffic.flows"), 100.0);
    assert_eq!(num(&v, "errors"), 0.0);
    // Every packet is routed out of port 2 (none matches the ACL's drop entries).
    assert_eq!(num(&v, "outputs_per_packet"), 1.0);
    assert_eq!(num(&v, "batch"), koi_datapath::BATCH as f64);
    // Every megaflow of L2L3-ACL is compiled: no replays to report.
    assert_eq!(field(&v, "replayed"), &serde_json::json!({}), "{v}");
}

/// A program whose megaflows cannot be compiled (it resubmits): the report says how many
/// replay the interpreter on every hit, and why.
#[test]
fn replayed_megaflows_are_reported_with_their_reason() {
    let prog = tmp("resubmit.p4");
    std::fs::write(
        &prog,
        r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers { eth_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0) {
            resubmit_preserving_field_list(0);
        }
        sm.egress_spec = 2;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#,
    )
    .unwrap();
    let prog = prog.display().to_string();
    let args = [
        "bench",
        &prog,
        "--flows",
        "10",
        "--seconds",
        "0.1",
        "--warmup",
        "0.1",
    ];
    let out = koi(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("replayed    1 megaflows have no compiled program")
            && stdout.contains("resubmit (1)"),
        "{stdout}"
    );
    let mut json = args.to_vec();
    json.push("--json");
    let out = koi(&json);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(num(&v, "replayed.resubmit"), 1.0, "{v}");
}

/// The policer of `bench/`: its decisions on a meter's colour are guarded, so after the
/// warm-up every packet runs a compiled program (no upcall, nothing uncacheable), and the
/// report counts the guarded megaflow and its programs (one per colour seen).
#[test]
fn guarded_megaflows_are_reported() {
    let prog = root().join("bench/policer.p4").display().to_string();
    let entries = root().join("bench/policer.entries").display().to_string();
    let args = [
        "bench",
        &prog,
        "--entries",
        &entries,
        "--flows",
        "10",
        "--seconds",
        "0.2",
        "--warmup",
        "0.2",
        "--json",
    ];
    let out = koi(&args);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(num(&v, "cache.megaflows"), 1.0, "{v}");
    assert_eq!(num(&v, "cache.guarded"), 1.0, "{v}");
    assert!(num(&v, "cache.guarded_programs") >= 2.0, "{v}");
    assert_eq!(num(&v, "counters.uncacheable"), 0.0, "{v}");
    assert!(num(&v, "hit_rate.compiled") > 0.99, "{v}");
}

/// An XDP program (`examples/xdp_l2.p4`) through the caches: the L2L3 traffic's frames to
/// the router are redirected to port 2 by one megaflow, installed by the first packet, whose
/// compiled program (with native code) runs every packet after; nothing is replayed or
/// uncacheable.
#[test]
fn an_xdp_program_runs_from_compiled_programs() {
    let v = json_report(&koi(&[
        "bench",
        &example("xdp_l2.p4"),
        "--entries",
        &example("xdp_l2.entries"),
        "--flows",
        "100",
        "--seconds",
        "0.2",
        "--warmup",
        "0.2",
        "--json",
    ]));
    assert_eq!(num(&v, "errors"), 0.0, "{v}");
    assert_eq!(num(&v, "outputs_per_packet"), 1.0, "{v}");
    assert_eq!(num(&v, "warmup.upcalls"), 1.0, "{v}");
    assert_eq!(num(&v, "warmup.installs"), 1.0, "{v}");
    assert_eq!(num(&v, "warmup.uncacheable"), 0.0, "{v}");
    assert_eq!(num(&v, "cache.megaflows"), 1.0, "{v}");
    assert_eq!(num(&v, "cache.compiled"), 1.0, "{v}");
    assert_eq!(num(&v, "hit_rate.total"), 1.0, "{v}");
    assert_eq!(num(&v, "hit_rate.compiled"), 1.0, "{v}");
    assert_eq!(num(&v, "counters.uncacheable"), 0.0, "{v}");
    assert_eq!(field(&v, "replayed"), &serde_json::json!({}), "{v}");
}

#[test]
fn one_packet_at_a_time_gives_the_same_counts() {
    let prog = example("l2l3_acl.p4");
    let entries = example("l2l3_acl.entries");
    let run = |batch: &str| {
        let out = koi(&[
            "bench",
            &prog,
            "--entries",
            &entries,
            "--flows",
            "50",
            "--seconds",
            "0.1",
            "--warmup",
            "0",
            "--batch",
            batch,
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "--batch {batch}");
        let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim())
            .expect("one JSON object");
        v
    };
    for batch in ["1", "7"] {
        let v = run(batch);
        assert_eq!(num(&v, "batch").to_string(), batch);
        // The first pass (50 packets, 50 flows) installs the same megaflows either way.
        assert_eq!(
            num(&v, "warmup.upcalls"),
            run("32")["warmup"]["upcalls"].as_f64().unwrap_or(-1.0)
        );
        assert_eq!(num(&v, "outputs_per_packet"), 1.0);
        assert_eq!(num(&v, "errors"), 0.0);
    }
}

#[test]
fn bad_program_gives_a_located_diagnostic() {
    let p = tmp("bad.p4");
    std::fs::write(
        &p,
        "#include <v1model.p4>\nheader h_t { bit<8> f; }\ncontrol c(inout h_t h) { apply { h.g = 1; } }\n",
    )
    .unwrap();
    let out = koi(&["bench", p.to_str().unwrap(), "--flows", "1", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("bad.p4:3:"),
        "expected a bad.p4:LINE:COL diagnostic, got: {stderr}"
    );
    assert!(stderr.contains("error"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn usage_errors_exit_2() {
    let prog = example("l2l3_acl.p4");
    let out = koi(&["bench", &prog]);
    assert_eq!(out.status.code(), Some(2), "no traffic given");
    let out = koi(&["bench", &prog, "--flows", "0"]);
    assert_eq!(out.status.code(), Some(2), "--flows 0");
    let out = koi(&["bench", "/nonexistent/x.p4", "--flows", "1"]);
    assert_eq!(out.status.code(), Some(2), "missing program");
    for bad in ["0", "1025", "x"] {
        let out = koi(&["bench", &prog, "--flows", "1", "--batch", bad]);
        assert_eq!(out.status.code(), Some(2), "--batch {bad}");
    }
}

fn read_pcap(p: &Path) -> Vec<Vec<u8>> {
    let f = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut r = pcap_file::pcap::PcapReader::new(f).expect("a pcap file");
    let mut v = Vec::new();
    while let Some(pkt) = r.next_packet() {
        v.push(pkt.expect("a record").data.into_owned());
    }
    v
}

#[test]
fn write_pcap_then_bench_it() {
    let p = tmp("l2l3_3.pcap");
    let out = koi(&["bench", "--write-pcap", p.to_str().unwrap(), "--flows", "3"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frames = read_pcap(&p);
    assert_eq!(
        frames.len(),
        258,
        "gen_pcap.py repeats short lists to >= 256"
    );
    assert!(frames.iter().all(|f| f.len() == 60));
    assert_eq!(frames[0], frames[3]);

    let out = koi(&[
        "bench",
        &example("l2l3_acl.p4"),
        "--entries",
        &example("l2l3_acl.entries"),
        "--pcap",
        p.to_str().unwrap(),
        "--seconds",
        "0.1",
        "--warmup",
        "0",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(num(&v, "traffic.frames"), 258.0);
    assert!(num(&v, "packets") > 0.0);
}

#[test]
fn write_pcap_matches_gen_pcap_py() {
    let script = std::env::var_os("KOI_GEN_PCAP")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/bench/ovs-dpdk/gen_pcap.py"));
    let python = std::env::var("KOI_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_scapy = Command::new(&python)
        .args(["-c", "import scapy.all"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !script.exists() || !has_scapy {
        eprintln!(
            "skipped: needs {} and {python} with scapy (set KOI_GEN_PCAP, KOI_PYTHON); the unit tests compare fixed scapy bytes",
            script.display()
        );
        return;
    }
    for (kind, n) in [
        ("l2l3", "1"),
        ("l2l3", "100"),
        ("l2l3", "10000"),
        ("trivial", "7"),
    ] {
        let theirs = tmp(&format!("py_{kind}_{n}.pcap"));
        let ours = tmp(&format!("koi_{kind}_{n}.pcap"));
        let o = Command::new(&python)
            .arg(&script)
            .args([kind, n])
            .arg(&theirs)
            .output()
            .expect("run gen_pcap.py");
        assert!(
            o.status.success(),
            "gen_pcap.py: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let o = koi(&[
            "bench",
            "--write-pcap",
            ours.to_str().unwrap(),
            "--flows",
            n,
            "--traffic",
            kind,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (a, b) = (read_pcap(&theirs), read_pcap(&ours));
        assert_eq!(a.len(), b.len(), "{kind} {n}: frame count");
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "{kind} {n}: frame {i} differs");
        }
    }
}

#[test]
fn several_threads_share_one_state_and_their_counts_add_up() {
    let prog = example("l2l3_acl.p4");
    let entries = example("l2l3_acl.entries");
    let out = koi(&[
        "bench",
        &prog,
        "--entries",
        &entries,
        "--flows",
        "100",
        "--seconds",
        "0.3",
        "--warmup",
        "0.2",
        "--threads",
        "2",
        "--json",
    ]);
    let v = json_report(&out);
    let threads = field(&v, "threads").as_array().expect("threads").clone();
    assert_eq!(threads.len(), 2, "{v}");
    let each: Vec<f64> = threads.iter().map(|t| num(t, "packets")).collect();
    assert!(
        each.iter().all(|&n| n > 0.0),
        "every thread forwarded: {each:?}"
    );
    // The report's packets and the datapaths' counters are the threads' added up.
    assert_eq!(num(&v, "packets"), each.iter().sum::<f64>());
    assert_eq!(num(&v, "counters.packets"), num(&v, "packets"));
    let mpps: f64 = threads.iter().map(|t| num(t, "mpps")).sum();
    assert!(num(&v, "mpps") > 0.0 && mpps > 0.0);
    // Every packet is routed out once, whichever thread ran it.
    assert!((num(&v, "outputs_per_packet") - 1.0).abs() < 1e-9, "{v}");
    let bad = koi(&["bench", &prog, "--threads", "0"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `--pcap PORT=FILE` twice: the packets of both files, each on its port. L2L3-ACL routes the
/// baseline's frames arriving on port 1 and drops them on port 2 (VLAN 200 has no route for
/// that source), so exactly half of what is replayed comes out.
#[test]
fn pcaps_on_two_ports_are_replayed_together() {
    let p = tmp("l2l3_two_ports.pcap");
    let out = koi(&["bench", "--write-pcap", p.to_str().unwrap(), "--flows", "4"]);
    assert_eq!(out.status.code(), Some(0));
    let one = format!("1={}", p.display());
    let two = format!("2={}", p.display());
    let out = koi(&[
        "bench",
        &example("l2l3_acl.p4"),
        "--entries",
        &example("l2l3_acl.entries"),
        "--pcap",
        &one,
        "--pcap",
        &two,
        "--seconds",
        "0.1",
        "--warmup",
        "0",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(num(&v, "traffic.frames"), 512.0);
    assert_eq!(field(&v, "ports"), &serde_json::json!([1, 2]));
    assert_eq!(num(&v, "outputs_per_packet"), 0.5);
    // A bad port is refused.
    let out = koi(&[
        "bench",
        &example("l2l3_acl.p4"),
        "--pcap",
        "99999999999999999999=x.pcap",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// `--pof-config`: a POF configuration is benchmarked as the program koi compiles it to.
/// The router configuration routes every packet of the L2L3 traffic out of port 2 from the
/// caches, as its P4 twin (examples/pof/router.p4) does, with as many megaflows, every one
/// compiled.
#[test]
fn a_pof_configuration_is_benchmarked_like_its_p4_twin() {
    let run = |args: &[&str]| {
        let mut all = vec!["bench"];
        all.extend_from_slice(args);
        all.extend([
            "--flows",
            "200",
            "--seconds",
            "0.2",
            "--warmup",
            "0.3",
            "--json",
        ]);
        json_report(&koi(&all))
    };
    let pof = run(&["--pof-config", &example("pof/router.pof")]);
    let p4 = run(&[
        &example("pof/router.p4"),
        "--entries",
        &example("pof/router.entries"),
    ]);
    for v in [&pof, &p4] {
        assert_eq!(num(v, "errors"), 0.0, "{v}");
        assert_eq!(num(v, "outputs_per_packet"), 1.0, "{v}");
        assert!(num(v, "hit_rate.total") > 0.9, "{v}");
        assert_eq!(field(v, "replayed"), &serde_json::json!({}), "{v}");
    }
    assert_eq!(
        num(&pof, "cache.megaflows"),
        num(&p4, "cache.megaflows"),
        "pof {pof}\np4 {p4}"
    );
    let out = koi(&[
        "bench",
        "--pof-config",
        &example("pof/router.p4"),
        "--flows",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("router.p4:") && err.contains("expected"),
        "{err}"
    );
}
