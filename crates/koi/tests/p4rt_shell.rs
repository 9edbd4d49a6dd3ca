//! p4runtime-shell (p4lang's P4Runtime client, `p4runtime_sh`) programs a running koi: `koi
//! run` without a program, three hosts on ports 1-3, its P4Runtime server on the switch
//! namespace's loopback; `tests/p4runtime/shell_client.py` pushes `all_kinds.p4` and checks,
//! with frames sent and received by the hosts, insert/modify/delete/read of table entries of
//! every match kind (exact, LPM, ternary, range, optional), indirect and direct counters and
//! meters, multicast groups, packet-out and packet-in, and that what P4Runtime writes `koi
//! ctl` reads and the reverse. The test asserts that every check ran and passed, then reads the
//! state the client left with `koi ctl`.
//!
//! Needs root and `KOI_PYTHON_SHELL` (`scripts/py-venv.sh shell`); see `p4rt/mod.rs`.

mod e2e;
mod p4rt;

use e2e::{Lab, Layout};

/// The checks `shell_client.py` prints, in order (each line's start).
const CHECKS: &[&str] = &[
    "pipeline pushed",
    "koi ctl stats names the program pushed",
    "exact: entry inserted and read back",
    "exact: koi ctl table_dump shows the entry",
    "exact: frame to 02:..:02 forwarded to port 2 only",
    "exact: modified to port 3",
    "exact: inserting the same key again is ALREADY_EXISTS",
    "exact: entry deleted",
    "exact: after delete the frame is dropped",
    "exact: an entry added with koi ctl table_add reads back through P4Runtime",
    "exact: koi ctl dump",
    "exact: the koi ctl entry deleted through P4Runtime",
    "multicast: group 1 reads back with ports [2, 3]",
    "multicast: koi ctl mc_dump shows group 1",
    "multicast: broadcast from port 1 reaches ports 2 and 3",
    "multicast: group modified to port 2 only",
    "multicast: group of every port; the copy back to the ingress port is pruned",
    "multicast: group 1 deleted",
    "lpm: two routes read back",
    "lpm: 10.1.2.3 takes the /16 to port 3",
    "lpm: 10.2.0.1 takes the /8 to port 2",
    "lpm: /16 modified to port 1",
    "lpm: /16 deleted, 10.1.2.3 falls back to the /8",
    "lpm: koi ctl table_dump shows the /8 alone",
    "ternary/range/optional: entry reads back",
    "ternary/range/optional: don't-care fields",
    "acl: 192.0.2.1 -> UDP 1500 denied",
    "acl: UDP 2500 (outside the range) allowed",
    "acl: 192.0.2.7 allowed by priority 20",
    "acl: another source allowed",
    "acl: direct counter of the deny entry: 1 packet",
    "acl: entry modified to allow",
    "acl: direct counter reset by the modify",
    "acl: optional-only entry denies UDP",
    "acl: every entry deleted",
    "acl: empty table allows",
    "counters: 5 frames from port 3 out",
    "counters: port_in[3] counted 5 packets",
    "counters: koi ctl counter_read agrees",
    "counters: written through P4Runtime",
    "counters: koi ctl reads the written value",
    "counters: koi ctl counter_reset reads back as 0",
    "counters: wildcard read gives every cell (512)",
    "meters: unconfigured, 20 of 20 frames pass",
    "meters: port_meter[3] config reads back",
    "meters: koi ctl meter_get_rates",
    "meters: 1 packet/s, burst 1",
    "meters: config removed, 20 of 20 pass again",
    "meters: direct meter config of the policer entry reads back",
    "meters: direct meter 1 packet/s",
    "meters: direct meter raised, 20 of 20 pass",
    "packet-out: the payload leaves on port 2 unchanged",
    "packet-in: one PacketIn (1)",
    "packet-in: the frame, with ingress_port 3",
];

#[test]
fn p4runtime_shell_programs_every_match_kind_counter_meter_group_and_packet_io() {
    let test = "p4rt_shell";
    let Some(py) = p4rt::python(
        test,
        "KOI_PYTHON_SHELL",
        "import p4runtime_sh.shell, scapy.all",
    ) else {
        return;
    };
    let Some(lab) = Lab::new(test, 3, Layout::HostPerNs) else {
        return;
    };
    let (sw, out) = p4rt::run_all_kinds_client(
        &lab,
        &py,
        "shell_client.py",
        CHECKS,
        "shell client: all checks passed",
    );

    // What the client left, as koi ctl sees it: the marker entry of `l2` (everything else it
    // deleted), the /8 route, no ACL or policer entry, multicast group 9 and not group 1.
    assert_eq!(sw.num_entries("AllIngress.l2"), 1, "{}", sw.log());
    assert_eq!(sw.num_entries("AllIngress.routes"), 1);
    assert_eq!(sw.num_entries("AllIngress.acl"), 0);
    assert_eq!(sw.num_entries("AllIngress.policer"), 0);
    let mc = sw.must_ctl(&["mc_dump"]);
    assert!(
        mc.contains("mgrp(9)") && !mc.contains("mgrp(1)"),
        "mc_dump:\n{mc}"
    );
    let stats = sw.must_ctl(&["stats"]);
    assert!(stats.contains("all_kinds.p4"), "stats:\n{stats}");
    // Frames really crossed the switch: port 2 sent at least the frames the checks saw.
    assert!(sw.tx_packets(2) >= 20, "{}", sw.must_ctl(&["port_show"]));
    println!("{}", out.stdout);
}
