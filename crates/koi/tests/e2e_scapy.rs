//! scapy through koi: two host namespaces wired by veth pairs to `koi run`; scapy frames crafted
//! and sent in host 1's namespace, sniffed in host 2's, and checked byte for byte where the
//! program defines them (tests/scapy/koi_frames.py has the cases).
//!
//! - `examples/l2l3_acl.p4` with `examples/l2l3_acl.entries`: routed IPv4 UDP and TCP (MACs
//!   rewritten, TTL decremented, IPv4 checksum recomputed, longest prefix), a VLAN-tagged
//!   frame (popped), ACL drops and near misses, unknown MACs and the like must not arrive.
//! - `examples/l2_forward.p4`: every kind of frame crosses unchanged, both ways.
//!
//! Needs root and `KOI_PYTHON` (a Python with scapy: `scripts/py-venv.sh`); see `e2e/mod.rs`.

mod e2e;
use e2e::{Lab, Layout, PATIENCE, Proc, repo, scapy_python};
use std::path::Path;

/// Sniffs suite `suite` on host `to` while host `from` sends it; panics with the report if a
/// case failed.
fn exchange(lab: &Lab, py: &Path, from: usize, to: usize, suite: &str) -> String {
    let script = repo().join("tests/scapy/koi_frames.py");
    let (tx, rx) = (lab.host(from), lab.host(to));
    let mut sniffer = Proc::spawn(
        lab.cmd(&rx.ns, py)
            .arg(&script)
            .args(["sniff", &rx.ifname, suite]),
    );
    assert!(
        sniffer.wait_line("ready", PATIENCE),
        "the sniffer did not start:\n{}",
        sniffer.output_so_far()
    );
    let sent = e2e::run(
        lab.cmd(&tx.ns, py)
            .arg(&script)
            .args(["send", &tx.ifname, suite]),
        PATIENCE,
    );
    assert!(sent.ok(), "scapy send {suite}: {}", sent.show());
    let report = sniffer.finish(PATIENCE);
    assert!(
        report.ok(),
        "scapy {suite} from host {from} to host {to}:\n{}",
        report.show()
    );
    println!("{}", report.stdout);
    report.stdout
}

#[test]
fn scapy_l2l3_acl_routes_rewrites_and_drops() {
    let test = "scapy_l2l3_acl_routes_rewrites_and_drops";
    let Some(py) = scapy_python(test) else { return };
    let Some(mut lab) = Lab::new(test, 2, Layout::HostPerNs) else {
        return;
    };
    let root = repo();
    lab.start_koi(
        &root.join("examples/l2l3_acl.p4"),
        &root.join("examples/l2l3_acl.entries"),
        &[],
    );
    let report = exchange(&lab, &py, 1, 2, "l2l3_acl");
    assert!(report.contains("17 cases ok, 0 failed"), "{report}");
    // koi saw every frame on port 1, sent the 10 forwarded ones out of port 2 and counted the
    // 7 others as the program's drops.
    let (p1, p2) = (lab.port_stats(1), lab.port_stats(2));
    assert!(p1.rx_packets >= 17, "{p1:?}");
    assert!(p2.tx_packets >= 10, "{p2:?}");
    assert!(lab.stat("program") >= 7, "{}", lab.ctl(&["stats"]).unwrap());
    assert!(lab.koi_alive());
}

#[test]
fn scapy_l2_forward_carries_every_frame_unchanged() {
    let test = "scapy_l2_forward_carries_every_frame_unchanged";
    let Some(py) = scapy_python(test) else { return };
    let Some(mut lab) = Lab::new(test, 2, Layout::HostPerNs) else {
        return;
    };
    let root = repo();
    lab.start_koi(
        &root.join("examples/l2_forward.p4"),
        &root.join("examples/l2_forward.entries"),
        &[],
    );
    exchange(&lab, &py, 1, 2, "l2_forward");
    exchange(&lab, &py, 2, 1, "l2_forward_back");
    let (p1, p2) = (lab.port_stats(1), lab.port_stats(2));
    assert!(p1.rx_packets >= 11 && p1.tx_packets >= 11, "{p1:?}");
    assert!(p2.rx_packets >= 11 && p2.tx_packets >= 11, "{p2:?}");
}
