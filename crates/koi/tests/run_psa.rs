//! A PSA program through the CLI (no privileges needed): `koi run` forwards pcap files
//! between ports with `examples/psa_l2.p4` (unicast by table, flooding by multicast group,
//! PSA's default drop), `koi ctl` reads and writes its table, counters and register while it
//! runs and loads it again with its state carried over, `koi trace` shows the packet paths,
//! and `koi bench` runs it from the caches (every packet of a flow after its first a hit of
//! a compiled program, a megaflow installed per flow, nothing uncacheable).

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Instant;

mod ctl_support;
use ctl_support::{PATIENCE, ok, records, root, tmpdir, write_pcap};

/// A frame from `src` to `dst` (the last byte of each MAC), `seq` in the payload.
fn eth(dst: u8, src: u8, seq: u8) -> Vec<u8> {
    let d = if dst == 0xff {
        [0xff; 6]
    } else {
        [0x02, 0, 0, 0, 0, dst]
    };
    let mut f = d.to_vec();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, src, 0x88, 0xb5, seq]);
    f.resize(60, seq);
    f
}

fn koi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .output()
        .expect("run koi")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn example(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

/// The frames of a pcap file.
fn frames(p: &Path) -> Vec<Vec<u8>> {
    use pcap_file::pcap::PcapReader;
    let Ok(f) = std::fs::File::open(p) else {
        return Vec::new();
    };
    let Ok(mut r) = PcapReader::new(f) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    while let Some(Ok(p)) = r.next_packet() {
        v.push(p.data.into_owned());
    }
    v
}

fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            assert!(s.success(), "koi run exited with {s:?}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("koi run did not stop on SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn koi_run_forwards_floods_and_drops_with_a_psa_program_and_koi_ctl_reads_its_state() {
    let dir = tmpdir("run_psa", "l2");
    let sock = dir.join("koi.sock");
    // 5 frames to ...0b (port 2), 3 broadcasts (ports 2 and 3), 2 to an unknown MAC (dropped).
    let mut sent = Vec::new();
    for i in 0..5 {
        sent.push(eth(0x0b, 0x0a, i));
    }
    for i in 5..8 {
        sent.push(eth(0xff, 0x0a, i));
    }
    for i in 8..10 {
        sent.push(eth(0x0c, 0x0a, i));
    }
    let inp = dir.join("in.pcap");
    write_pcap(&inp, &sent);
    let (out2, out3) = (dir.join("out2.pcap"), dir.join("out3.pcap"));
    let child = Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(["run", "--grpc", "none"])
        .arg(example("psa_l2.p4"))
        .arg("--entries")
        .arg(example("psa_l2.entries"))
        .arg("--port")
        .arg(format!("1=pcap:{},", inp.display()))
        .arg("--port")
        .arg(format!("2=pcap:,{}", out2.display()))
        .arg("--port")
        .arg(format!("3=pcap:,{}", out3.display()))
        .arg("--ctl")
        .arg(&sock)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start koi run");
    let deadline = Instant::now() + PATIENCE;
    while (records(&out2) < 8 || records(&out3) < 3 || !sock.exists()) && Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Port 2: the 5 unicast frames and the 3 broadcasts, in order; port 3: the broadcasts.
    assert_eq!(frames(&out2), sent[..8].to_vec());
    assert_eq!(frames(&out3), sent[5..8].to_vec());

    // The ingress counter and register saw all 10 frames on port 1; egress counted 8 and 3.
    let rx = ok(&sock, &["counter_read", "ingress.rx", "1"]);
    assert!(
        rx.contains("packets=10") && rx.contains("bytes=600"),
        "{rx}"
    );
    let tx2 = ok(&sock, &["counter_read", "egress.tx", "2"]);
    assert!(tx2.contains("packets=8, bytes=480"), "{tx2}");
    let tx3 = ok(&sock, &["counter_read", "egress.tx", "3"]);
    assert!(tx3.contains("packets=3, bytes=180"), "{tx3}");
    let seen = ok(&sock, &["register_read", "ingress.seen", "1"]);
    assert!(seen.contains("10"), "{seen}");
    ok(&sock, &["register_write", "ingress.seen", "1", "7"]);
    let seen = ok(&sock, &["register_read", "ingress.seen", "1"]);
    assert!(
        seen.contains("= 7") || seen.trim_end().ends_with('7'),
        "{seen}"
    );
    let dump = ok(&sock, &["table_dump", "ingress.dmac"]);
    assert!(
        dump.contains("ingress.forward") && dump.contains("ingress.flood"),
        "{dump}"
    );
    ok(&sock, &["table_num_entries", "ingress.dmac"]);
    // Loading the program again while it runs carries the PSA state over.
    let load = ok(&sock, &["load", &example("psa_l2.p4")]);
    assert!(load.contains("table ingress.dmac: 3 entries"), "{load}");
    assert!(load.contains("multicast groups: 1 group, 1 node"), "{load}");
    let rx = ok(&sock, &["counter_read", "ingress.rx", "1"]);
    assert!(rx.contains("packets=10, bytes=600"), "{rx}");
    stop(child);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn koi_trace_shows_a_psa_programs_packet_paths() {
    let frame: String = eth(0xff, 0x0a, 1)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let o = koi(&[
        "trace",
        &example("psa_l2.p4"),
        "--entries",
        &example("psa_l2.entries"),
        "--packet",
        &frame,
        "--port",
        "1",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("ingress pass: packet_path NORMAL"), "{t}");
    assert!(t.contains("[ingress_parser] IngressParserImpl"), "{t}");
    assert!(t.contains("[ingress_deparser] IngressDeparserImpl"), "{t}");
    assert!(t.contains("Multicast { group: 1, copies: 2 }"), "{t}");
    for port in [2, 3] {
        assert!(
            t.contains(&format!(
                "egress pass: packet_path NORMAL_MULTICAST, egress_port {port}, instance 0"
            )),
            "{t}"
        );
        assert!(
            t.contains(&format!("packet out: port {port}, 60 bytes")),
            "{t}"
        );
    }
    // A frame no entry matches: PSA's default drop at the end of ingress.
    let frame: String = eth(0x0c, 0x0a, 1)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let o = koi(&[
        "trace",
        &example("psa_l2.p4"),
        "--entries",
        &example("psa_l2.entries"),
        "--packet",
        &frame,
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("Drop(Ingress)"), "{t}");
    assert!(!t.contains("egress pass"), "{t}");
}

#[test]
fn koi_bench_runs_a_psa_program_from_the_caches() {
    let dir = tmpdir("run_psa", "bench");
    let inp = dir.join("in.pcap");
    // Unicast to port 2 from 20 sources, then broadcasts (flooded to ports 2 and 3) from 10:
    // one megaflow each, whatever the source.
    let mut sent: Vec<Vec<u8>> = (0..20).map(|i| eth(0x0b, 0x10 + i, i)).collect();
    sent.extend((0..10).map(|i| eth(0xff, 0x40 + i, i)));
    write_pcap(&inp, &sent);
    let o = koi(&[
        "bench",
        &example("psa_l2.p4"),
        "--entries",
        &example("psa_l2.entries"),
        "--pcap",
        &inp.display().to_string(),
        "--seconds",
        "0.2",
        "--warmup",
        "0.1",
        "--json",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let n = |p: &str| {
        p.split('.')
            .fold(&v, |v, k| &v[k])
            .as_f64()
            .unwrap_or_else(|| panic!("{p}: {v}"))
    };
    assert!(n("packets") > 0.0, "{v}");
    assert_eq!(n("errors"), 0.0, "{v}");
    // 20 frames out once, 10 out twice.
    assert!((n("outputs_per_packet") - 40.0 / 30.0).abs() < 0.01, "{v}");
    // The first pass: a miss per flow, each installing its megaflow, none uncacheable.
    assert_eq!(n("warmup.upcalls"), 2.0, "{v}");
    assert_eq!(n("warmup.installs"), 2.0, "{v}");
    assert_eq!(n("warmup.uncacheable"), 0.0, "{v}");
    assert_eq!(n("cache.megaflows"), 2.0, "{v}");
    // Measured: every packet a hit run by a compiled program (with native code), none
    // replayed by the interpreter.
    assert_eq!(n("hit_rate.total"), 1.0, "{v}");
    assert_eq!(n("hit_rate.compiled"), 1.0, "{v}");
    assert_eq!(n("cache.compiled"), 2.0, "{v}");
    assert_eq!(n("counters.uncacheable"), 0.0, "{v}");
    assert_eq!(n("counters.misses"), 0.0, "{v}");
    assert_eq!(v["replayed"], serde_json::json!({}), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
