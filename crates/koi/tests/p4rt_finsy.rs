//! finsy (an asyncio P4Runtime controller framework) programs a running koi: `koi run`
//! without a program, three hosts on ports 1-3, its P4Runtime server on the switch
//! namespace's loopback; `tests/p4runtime/finsy_client.py` connects with finsy's `Switch`
//! (which pushes `all_kinds.p4`) and checks, with frames sent and received by the hosts,
//! table entries of every match kind inserted, read, modified and deleted, counters and meters
//! (direct and indirect), a multicast group, packet-out and packet-in, and digests
//! (DigestEntry, DigestLists with the unknown sources and their ports, acknowledgements,
//! duplicates suppressed, none for a source the controller installed). The test asserts that
//! every check ran and passed, then reads the state the client left with `koi ctl`.
//!
//! Needs root and `KOI_PYTHON` (`scripts/py-venv.sh`); see `p4rt/mod.rs`.

mod e2e;
mod p4rt;

use e2e::{Lab, Layout};

/// The checks `finsy_client.py` prints, in order (each line's start).
const CHECKS: &[&str] = &[
    "finsy: connected, primary",
    "finsy pushed the pipeline",
    "exact: entry inserted and read back",
    "exact: frame forwarded to port 2",
    "exact: modified to port 3",
    "exact: deleted, frame dropped",
    "exact: koi ctl table_dump no longer shows it",
    "multicast: group 1 reads back ((1, 2, 3))",
    "multicast: broadcast from port 3 reaches ports 1 and 2, not 3",
    "multicast: group modified to port 1",
    "lpm: routes read back",
    "lpm: 10.1.2.3 routed by the /16 to port 3 (TTL 63)",
    "lpm: /16 deleted, 10.1.2.3 takes the /8 to port 2",
    "ternary/range/optional: entry read back",
    "acl: UDP 1500 from 192.0.2.9 denied",
    "acl: UDP 2001 allowed",
    "acl: direct counter of the entry counts 1",
    "acl: entry deleted, allowed",
    "counters: port_in[3] = ",
    "counters: written through P4Runtime, read by koi ctl",
    "meters: port_meter[2] config reads back",
    "meters: 1 packet/s",
    "meters: config cleared, 20 of 20 pass",
    "meters: direct meter config reads back",
    "meters: direct meter 1 packet/s",
    "packet-out: payload leaves on port 3",
    "packet-in: the frame with ingress_port 1",
    "digests: DigestEntry reads back",
    "digests: one per unknown source, with its port",
    "digests: a learnt source sends none, a new one does",
    "digests: after the ack, an unknown source is reported again",
    "digests: DigestEntry deleted",
];

#[test]
fn finsy_programs_every_match_kind_counter_meter_group_packet_io_and_digests() {
    let test = "p4rt_finsy";
    let Some(py) = p4rt::python(test, "KOI_PYTHON", "import finsy") else {
        return;
    };
    let Some(lab) = Lab::new(test, 3, Layout::HostPerNs) else {
        return;
    };
    let (sw, out) = p4rt::run_all_kinds_client(
        &lab,
        &py,
        "finsy_client.py",
        CHECKS,
        "finsy client: all checks passed",
    );

    // What the client left, as koi ctl sees it: in `l2` the marker, broadcast and CPU
    // entries; the /8 route; no ACL entry; the policer entry of host 2 with its direct meter;
    // multicast group 1 (port 1 only) and 9; in `known_src` the source the client learnt.
    assert_eq!(sw.num_entries("AllIngress.l2"), 3, "{}", sw.log());
    assert_eq!(sw.num_entries("AllIngress.routes"), 1);
    assert_eq!(sw.num_entries("AllIngress.acl"), 0);
    assert_eq!(sw.num_entries("AllIngress.policer"), 1);
    let known = sw.must_ctl(&["table_dump", "AllIngress.known_src"]);
    assert!(
        known.contains("EXACT-02:00:00:00:0a:01"),
        "known_src:\n{known}"
    );
    let mc = sw.must_ctl(&["mc_dump"]);
    assert!(
        mc.contains("mgrp(9)") && mc.contains("mgrp(1)") && mc.contains("(ports=[1], lags=[])"),
        "mc_dump:\n{mc}"
    );
    assert!(sw.tx_packets(1) >= 20, "{}", sw.must_ctl(&["port_show"]));
    println!("{}", out.stdout);
}
