//! koi's example programs compile, their entries files load, and a packet of the OVS baseline's
//! traffic goes where the program says: routed to port 2 by `l2l3_acl` and `l2l3`, switched by
//! `l2`.

use std::process::Command;

fn koi(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("run koi");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Host 0 on port 1 to the router: 198.18.0.1 -> 198.19.16.5, UDP 1024 -> 53, TTL 64.
const ROUTED: &str = "0200000000fe 020000000100 0800 4500002e 00010000 4011 0000 c6120001 c6131005 04000035001a0000 000000000000000000000000000000000000";

#[test]
fn every_example_compiles_to_ir_and_p4info() {
    for p in [
        "examples/l2.p4",
        "examples/l2l3.p4",
        "examples/l2l3_acl.p4",
        "examples/l2_forward.p4",
        "examples/psa_l2.p4",
        "examples/xdp_l2.p4",
    ] {
        for emit in ["ir", "p4info"] {
            let (code, out, err) = koi(&["compile", p, "--emit", emit]);
            assert_eq!(code, 0, "{p} --emit {emit}: {err}");
            assert!(!out.is_empty(), "{p} --emit {emit} printed nothing");
        }
    }
}

#[test]
fn routed_packet_leaves_on_port_2_with_ttl_63() {
    for (p, e) in [
        ("examples/l2l3_acl.p4", "examples/l2l3_acl.entries"),
        ("examples/l2l3.p4", "examples/l2l3.entries"),
    ] {
        let (code, out, err) = koi(&[
            "trace",
            p,
            "--entries",
            e,
            "--port",
            "1",
            "--packet",
            ROUTED,
        ]);
        assert_eq!(code, 0, "{p}: {err}");
        let result = out.lines().find(|l| l.starts_with("result:")).unwrap_or("");
        // New source MAC = router, destination = next hop 02:00:00:00:02:01, TTL 0x3f.
        assert!(
            result.starts_with(
                "result: port 2: 60 bytes: 0200000002010200000000fe08004500002e000100003f11"
            ),
            "{p}: {result}"
        );
    }
}

#[test]
fn l2_switches_by_destination_mac() {
    // To host 1 (odd: port 2) from host 0.
    let pkt = "020000000101 020000000100 88b5 00112233";
    let (code, out, err) = koi(&[
        "trace",
        "examples/l2.p4",
        "--entries",
        "examples/l2.entries",
        "--port",
        "1",
        "--packet",
        pkt,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("result: port 2: 18 bytes"), "{out}");
    // Unknown destination: dropped.
    let pkt = "0200000000aa 020000000100 88b5 00112233";
    let (_, out, _) = koi(&[
        "trace",
        "examples/l2.p4",
        "--entries",
        "examples/l2.entries",
        "--port",
        "1",
        "--packet",
        pkt,
    ]);
    assert!(out.contains("result: no packet sent"), "{out}");
}
