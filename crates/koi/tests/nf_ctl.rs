//! The VXLAN VTEP and DDoS mitigation examples (`examples/vxlan`, `examples/ddos`) without
//! namespaces: their STF tests in both of `koi test`'s modes; `koi trace` for what STF cannot
//! see (digests, registers) and for the encapsulation computed here from scratch (the outer
//! UDP source port by Linux's formula over a bitwise CRC-32, the outer IPv4 checksum);
//! and structural facts of `koi bench --json` at 10,000 flows: every packet runs a compiled
//! program, nothing is uncacheable or replayed, the DDoS megaflows are guarded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn koi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run koi")
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn tmp(name: &str) -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("nf_ctl_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn stf_tests_pass_with_and_without_the_cache() {
    for (prog, stf) in [
        ("examples/vxlan/vxlan.p4", "examples/vxlan/vxlan.stf"),
        ("examples/ddos/ddos.p4", "examples/ddos/ddos.stf"),
    ] {
        for mode in [None, Some("--no-cache")] {
            let mut args = vec!["test"];
            args.extend(mode);
            args.extend([prog, stf]);
            let out = ok(&koi(&args));
            assert!(out.starts_with("PASS"), "{prog} {mode:?}: {out}");
        }
    }
}

/// CRC-32 (ISO-HDLC, as zlib), bit by bit.
fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Linux's `udp_flow_src_port` over `hash`, with its default port range [32768, 60999].
fn linux_src_port(hash: u32) -> u16 {
    let h = hash ^ (hash << 16);
    ((u64::from(h) * (60999 - 32768)) >> 32) as u16 + 32768
}

/// What `koi trace` sends: (port, bytes) per output, and the whole trace.
fn trace(
    prog: &str,
    entries: &Path,
    port: u16,
    packets: &[Vec<u8>],
) -> (Vec<(u16, Vec<u8>)>, String) {
    let mut args = vec![
        "trace".to_string(),
        prog.to_string(),
        "--entries".into(),
        entries.display().to_string(),
        "--port".into(),
        port.to_string(),
    ];
    let pcap;
    if packets.len() == 1 {
        args.extend(["--packet".into(), hex(&packets[0])]);
    } else {
        pcap = tmp(&format!("trace-{}.pcap", crc32(&packets.concat())));
        write_pcap(&pcap, packets);
        args.extend(["--pcap".into(), pcap.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ok(&koi(&args));
    let results = out
        .lines()
        .filter_map(|l| l.strip_prefix("result: port "))
        .map(|r| {
            let mut p = r.splitn(3, ": ");
            let port = p.next().unwrap().parse().unwrap();
            (port, unhex(p.nth(1).unwrap().trim()))
        })
        .collect();
    (results, out)
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut f = vec![
        0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0,
    ];
    for fr in frames {
        f.extend([0u8; 8]);
        f.extend((fr.len() as u32).to_le_bytes());
        f.extend((fr.len() as u32).to_le_bytes());
        f.extend(fr);
    }
    std::fs::write(path, f).unwrap();
}

fn csum16(data: &[u8]) -> u16 {
    let mut s: u32 = data
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An untagged Ethernet/IPv4/UDP frame.
fn udp(
    smac: [u8; 6],
    dmac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
) -> Vec<u8> {
    let payload = b"koi nf_ctl";
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0];
    ip.extend(src);
    ip.extend(dst);
    let total = (20 + 8 + payload.len()) as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let c = csum16(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = Vec::new();
    f.extend(dmac);
    f.extend(smac);
    f.extend([0x08, 0x00]);
    f.extend(ip);
    f.extend(sport.to_be_bytes());
    f.extend(dport.to_be_bytes());
    f.extend(((8 + payload.len()) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend(payload);
    f
}

const H2: [u8; 6] = [2, 0, 0, 0, 0, 2];
const H4: [u8; 6] = [2, 0, 0, 0, 0, 4];

/// The encapsulation koi's VTEP must produce for `inner` (an untagged IPv4/UDP frame) sent
/// to 10.99.0.2 with VNI 5000, computed here from scratch.
fn vxlan_of(inner: &[u8]) -> Vec<u8> {
    // The flow hash's data: MACs, EtherType, addresses, protocol, ports (27 bytes).
    let mut key = inner[0..14].to_vec();
    key.extend(&inner[26..34]);
    key.push(inner[23]);
    key.extend(&inner[34..38]);
    let sport = linux_src_port(crc32(&key));
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 99, 0, 1, 10, 99, 0, 2,
    ];
    ip[2..4].copy_from_slice(&((20 + 8 + 8 + inner.len()) as u16).to_be_bytes());
    let c = csum16(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = vec![2, 0, 0, 0x99, 0, 2, 2, 0, 0, 0x99, 0, 1, 0x08, 0x00];
    f.extend(ip);
    f.extend(sport.to_be_bytes());
    f.extend(4789u16.to_be_bytes());
    f.extend(((8 + 8 + inner.len()) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend([0x08, 0, 0, 0, 0, 0x13, 0x88, 0]);
    f.extend(inner);
    f
}

fn vxlan_entries(extra: &str) -> PathBuf {
    let base = std::fs::read_to_string(root().join("examples/vxlan/vxlan.entries")).unwrap();
    let path = tmp(&format!("vxlan-{:08x}.entries", crc32(extra.as_bytes())));
    std::fs::write(&path, format!("{base}\n{extra}\n")).unwrap();
    path
}

/// Encapsulation toward a learnt remote MAC: one output, on the uplink, equal to what is
/// computed here (outer source port by Linux's formula, outer checksum right), for several
/// flows; an unknown source is reported by digest, a learnt one is not.
#[test]
fn vxlan_encapsulation_is_linuxs_and_learning_is_by_digest() {
    let entries = vxlan_entries(
        "table_add smac learnt 1 02:00:00:00:00:02 => 2 0\n\
         table_add dmac to_vtep 1 02:00:00:00:00:04 => 10.99.0.2",
    );
    let mut ports = std::collections::BTreeSet::new();
    for sport in [1000u16, 1001, 2000, 40000, 65535] {
        let inner = udp(H2, H4, [10, 0, 0, 2], [10, 0, 0, 4], sport, 53);
        let (outs, text) = trace(
            "examples/vxlan/vxlan.p4",
            &entries,
            2,
            std::slice::from_ref(&inner),
        );
        let want = vxlan_of(&inner);
        assert_eq!(outs, vec![(1, want.clone())], "{text}");
        assert!(
            !text.contains("Digest"),
            "a learnt source was reported:\n{text}"
        );
        let p = u16::from_be_bytes([want[34], want[35]]);
        assert!((32768..=60999).contains(&p));
        ports.insert(p);
    }
    assert!(ports.len() >= 4, "flows share source ports: {ports:?}");

    // An unknown source is reported, and so is a known one seen elsewhere (a move).
    for extra in ["", "table_add smac learnt 1 02:00:00:00:00:02 => 3 0"] {
        let entries = vxlan_entries(extra);
        let inner = udp(H2, H4, [10, 0, 0, 2], [10, 0, 0, 4], 7, 53);
        let (_, text) = trace("examples/vxlan/vxlan.p4", &entries, 2, &[inner]);
        assert!(
            text.contains("Digest { name: \"learn_t\" }"),
            "no report with `{extra}`:\n{text}"
        );
    }
}

/// Decapsulation: learnt remote sources are not reported; the inner frame leaves untouched on
/// the learnt port; a frame from the VTEP is flooded to the local ports only (the tagged one
/// with its VLAN tag).
#[test]
fn vxlan_decapsulation_and_split_horizon() {
    let inner = udp(H4, H2, [10, 0, 0, 4], [10, 0, 0, 2], 53, 1000);
    let mut outer = vxlan_of(&inner);
    // From the remote VTEP to us: swap the outer MACs and addresses (checksum unchanged).
    outer[0..12].copy_from_slice(&[2, 0, 0, 0x99, 0, 1, 2, 0, 0, 0x99, 0, 2]);
    outer[26..34].copy_from_slice(&[10, 99, 0, 2, 10, 99, 0, 1]);
    let learnt = vxlan_entries(
        "table_add smac learnt 1 02:00:00:00:00:04 => 0 10.99.0.2\n\
         table_add dmac to_port 1 02:00:00:00:00:02 => 2",
    );
    let (outs, text) = trace("examples/vxlan/vxlan.p4", &learnt, 1, &[outer.clone()]);
    assert_eq!(outs, vec![(2, inner.clone())], "{text}");
    assert!(!text.contains("Digest"), "{text}");

    let (outs, text) = trace("examples/vxlan/vxlan.p4", &vxlan_entries(""), 1, &[outer]);
    let mut tagged = inner[..12].to_vec();
    tagged.extend([0x81, 0x00, 0x00, 0x0a]);
    tagged.extend(&inner[12..]);
    assert_eq!(outs, vec![(2, inner), (3, tagged)], "{text}");
    assert!(text.contains("Digest { name: \"learn_t\" }"), "{text}");
}

fn ddos_entries(extra: &str) -> PathBuf {
    let base = std::fs::read_to_string(root().join("examples/ddos/ddos.entries")).unwrap();
    let path = tmp(&format!("ddos-{:08x}.entries", crc32(extra.as_bytes())));
    std::fs::write(&path, format!("{base}\n{extra}\n")).unwrap();
    path
}

fn tcp(src: [u8; 4], sport: u16, flags: u8) -> Vec<u8> {
    let mut f = udp(
        [2, 0, 0, 0, 0x0d, 1],
        [2, 0, 0, 0, 0x0d, 4],
        src,
        [10, 0, 13, 4],
        0,
        0,
    );
    f.truncate(34);
    f[23] = 6;
    f[16..18].copy_from_slice(&40u16.to_be_bytes());
    f[24..26].copy_from_slice(&[0, 0]);
    let c = csum16(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f.extend(sport.to_be_bytes());
    f.extend(80u16.to_be_bytes());
    f.extend([0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x20, 0, 0, 0, 0, 0]);
    f
}

/// Which packets of a trace (0-based) sent a digest, and the `reports` counter indices.
fn reports(text: &str) -> Vec<(usize, String)> {
    text.split("packet in: ")
        .skip(1)
        .enumerate()
        .filter(|(_, p)| p.contains("Digest { name: \"alarm_t\" }"))
        .map(|(i, p)| {
            let idx = p
                .split("reports.count(")
                .nth(1)
                .and_then(|r| r.split(')').next())
                .unwrap_or("?");
            (i, idx.to_string())
        })
        .collect()
}

/// A source over its packet threshold is reported once per interval (`-D EPOCH_SHIFT=3`:
/// intervals of 8 packets in `koi trace`'s clock of 1 us per packet), and afresh in the next;
/// SYNs that never complete are reported as half-open connections, while a client whose
/// handshakes complete is not.
#[test]
fn ddos_reports_once_per_interval_and_tells_syn_floods_from_clients() {
    let entries = ddos_entries("table_set_default thresholds set_thresholds 5 3");
    let udp_from = |i: u16| {
        udp(
            [2, 0, 0, 0, 0x0d, 1],
            [2, 0, 0, 0, 0x0d, 4],
            [10, 0, 13, 66],
            [10, 0, 13, 4],
            1000 + i,
            53,
        )
    };
    let flood: Vec<Vec<u8>> = (0..16).map(udp_from).collect();
    let (outs, text) = trace("examples/ddos/ddos.p4", &entries, 1, &flood);
    assert_eq!(outs.len(), 16, "detection alone drops nothing:\n{text}");
    assert_eq!(reports(&text), vec![(4, "32w1".into())], "{text}");
    let out = ok(&koi(&[
        "trace",
        "-D",
        "EPOCH_SHIFT=3",
        "examples/ddos/ddos.p4",
        "--entries",
        &entries.display().to_string(),
        "--port",
        "1",
        "--pcap",
        &{
            let p = tmp("flood16.pcap");
            write_pcap(&p, &flood);
            p.display().to_string()
        },
    ]));
    assert_eq!(
        reports(&out),
        vec![(4, "32w1".into()), (12, "32w1".into())],
        "{out}"
    );

    // A SYN flood: 4 SYNs from new ports, never completed: reported at the third.
    let syns: Vec<Vec<u8>> = (0..4)
        .map(|i| tcp([10, 0, 13, 77], 2000 + i, 0x02))
        .collect();
    let (_, text) = trace("examples/ddos/ddos.p4", &entries, 1, &syns);
    assert_eq!(reports(&text), vec![(2, "32w2".into())], "{text}");

    // A client: 4 connections, each SYN followed by its ACK, never over 1 half-open (the
    // packet threshold raised out of the way: 8 packets).
    let entries = ddos_entries("table_set_default thresholds set_thresholds 100 3");
    let mut client = Vec::new();
    for i in 0..4 {
        client.push(tcp([10, 0, 13, 3], 3000 + i, 0x02));
        client.push(tcp([10, 0, 13, 3], 3000 + i, 0x10));
    }
    let (outs, text) = trace("examples/ddos/ddos.p4", &entries, 1, &client);
    assert_eq!(outs.len(), 8, "{text}");
    assert_eq!(
        reports(&text),
        vec![],
        "a client completing its handshakes was reported:\n{text}"
    );
}

fn bench(prog: &str, entries: &Path, pcap: &Path, port: &str) -> serde_json::Value {
    let out = ok(&koi(&[
        "bench",
        prog,
        "--entries",
        &entries.display().to_string(),
        "--pcap",
        &pcap.display().to_string(),
        "--port",
        port,
        "--seconds",
        "0.3",
        "--warmup",
        "0",
        "--json",
    ]));
    serde_json::from_str(out.trim()).expect("one JSON object")
}

fn n(v: &serde_json::Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(|x| x.as_u64())
        .unwrap_or_else(|| panic!("no {path} in {v}"))
}

/// `koi bench` at 10,000 flows (frames built here, as the examples' bench_pcap.py build
/// them): every upcall installs a compiled megaflow, none is uncacheable or replayed, and
/// the timed run misses nothing; the DDoS program's megaflows are guarded (its sketches
/// decide whether to report).
#[test]
fn bench_at_10000_flows_runs_compiled_programs_only() {
    // VXLAN, encapsulating: 64 x 64 host pairs, 10,000 flows.
    let mac = |k: u8, i: u8| [2, 0, 0, k, 0, i];
    let mut learnt = String::new();
    for i in 0..64u8 {
        learnt += &format!(
            "table_add smac learnt 1 {l} => 2 0\ntable_add dmac to_vtep 1 {r} => 10.99.0.2\n",
            l = fmt_mac(mac(1, i)),
            r = fmt_mac(mac(2, i))
        );
    }
    let entries = vxlan_entries(&learnt);
    let frames: Vec<Vec<u8>> = (0..10_000u32)
        .map(|k| {
            let (a, b) = ((k % 64) as u8, ((k / 64) % 64) as u8);
            udp(
                mac(1, a),
                mac(2, b),
                [10, 0, 1, a],
                [10, 0, 2, b],
                1024 + (k / 4096) as u16,
                53,
            )
        })
        .collect();
    let pcap = tmp("vxlan-10000.pcap");
    write_pcap(&pcap, &frames);
    let r = bench("examples/vxlan/vxlan.p4", &entries, &pcap, "2");
    assert_eq!(n(&r, "/warmup/uncacheable"), 0, "{r}");
    assert_eq!(n(&r, "/warmup/upcalls"), n(&r, "/warmup/installs"), "{r}");
    assert_eq!(n(&r, "/counters/uncacheable"), 0, "{r}");
    assert_eq!(n(&r, "/counters/misses"), 0, "{r}");
    assert_eq!(
        n(&r, "/counters/compiled_hits"),
        n(&r, "/counters/packets"),
        "{r}"
    );
    assert_eq!(
        r.pointer("/replayed").map(|x| x.to_string()),
        Some("{}".into()),
        "{r}"
    );

    // DDoS, watching 2,500 clients' 10,000 flows.
    let frames: Vec<Vec<u8>> = (0..10_000u32)
        .map(|k| {
            let c = k / 4;
            let src = [10, 64, (c >> 8) as u8, c as u8];
            if k % 4 == 3 {
                udp(
                    [2, 0, 0, 0, 0x0d, 1],
                    [2, 0, 0, 0, 0x0d, 4],
                    src,
                    [10, 0, 13, 4],
                    20000,
                    53,
                )
            } else {
                tcp(src, 30000 + (k % 4) as u16, 0x10)
            }
        })
        .collect();
    let pcap = tmp("ddos-10000.pcap");
    write_pcap(&pcap, &frames);
    let r = bench(
        "examples/ddos/ddos.p4",
        &root().join("examples/ddos/ddos.entries"),
        &pcap,
        "1",
    );
    assert_eq!(n(&r, "/warmup/uncacheable"), 0, "{r}");
    assert_eq!(n(&r, "/counters/uncacheable"), 0, "{r}");
    assert_eq!(n(&r, "/counters/misses"), 0, "{r}");
    assert_eq!(
        n(&r, "/counters/compiled_hits"),
        n(&r, "/counters/packets"),
        "{r}"
    );
    assert_eq!(
        r.pointer("/replayed").map(|x| x.to_string()),
        Some("{}".into()),
        "{r}"
    );
    let megaflows = n(&r, "/cache/megaflows");
    assert!(megaflows >= 2, "{r}");
    assert_eq!(
        n(&r, "/cache/guarded"),
        megaflows,
        "every megaflow is guarded: {r}"
    );
}

fn fmt_mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}
