//! Three hosts routed by koi: `koi run examples/l2l3_acl.p4` with the example's entries plus
//! test-local ones for a third port (VLAN 300) and a host route to each host; three host
//! namespaces with real IPv4 stacks on ports 1, 2 and 3. Between every pair: ping both ways and
//! a TCP transfer (Python sockets; length and SHA-256 of what arrived are checked). Then the
//! counters that `koi ctl port_show` reports must account for the traffic on every port.
//! Needs root, ping and ethtool (see `e2e/mod.rs` for what happens when they are missing).

mod e2e;
use e2e::{HOSTS3, three_host_router};

#[test]
fn three_hosts_ping_and_transfer_between_every_pair() {
    let test = "three_hosts_ping_and_transfer_between_every_pair";
    let Some(lab) = three_host_router(test, &[]) else {
        return;
    };
    for (a, b) in [(1, 2), (2, 3), (3, 1)] {
        let (addr_a, addr_b) = (HOSTS3[a - 1].3, HOSTS3[b - 1].3);
        lab.ping(a, addr_b, 3).unwrap_or_else(|e| panic!("{e}"));
        lab.ping(b, addr_a, 3).unwrap_or_else(|e| panic!("{e}"));
        lab.tcp_transfer(a, b, addr_b, 5001, 1 << 20)
            .unwrap_or_else(|e| panic!("{e}"));
        lab.tcp_transfer(b, a, addr_a, 5002, 256 << 10)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // 1 MiB + 256 KiB went out of and into every port (in 1448-byte segments at most).
    for n in 1..=3 {
        let s = lab.port_stats(n);
        assert!(
            s.rx_packets > 800 && s.tx_packets > 800 && s.rx_bytes > (1 << 20),
            "port {n}: {s:?}"
        );
        assert_eq!(s.drops(), 0, "port {n}: {s:?}");
    }
}
