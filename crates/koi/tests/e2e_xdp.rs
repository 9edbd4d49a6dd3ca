//! `koi run` on AF_XDP ports (`--port N=xdp:IFNAME`, driver-mode XDP on veth): the three routed
//! hosts of `e2e_three_hosts.rs` with every host port opened as AF_XDP instead of AF_PACKET;
//! ping and a TCP transfer between every pair, then `koi ctl cache_show` and the port counters
//! must show the traffic. Needs root, ping and ethtool (see `e2e/mod.rs`).

mod e2e;
use e2e::{HOSTS3, three_host_router_kind};

#[test]
fn three_hosts_forward_over_af_xdp_ports() {
    let test = "three_hosts_forward_over_af_xdp_ports";
    let Some(lab) = three_host_router_kind(test, &[], "", "xdp:") else {
        return;
    };
    for (a, b) in [(1, 2), (2, 3), (3, 1)] {
        let (addr_a, addr_b) = (HOSTS3[a - 1].3, HOSTS3[b - 1].3);
        lab.ping(a, addr_b, 3).unwrap_or_else(|e| panic!("{e}"));
        lab.ping(b, addr_a, 3).unwrap_or_else(|e| panic!("{e}"));
        lab.tcp_transfer(a, b, addr_b, 5101, 512 << 10)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    for n in 1..=3 {
        let s = lab.port_stats(n);
        assert!(s.rx_packets > 300 && s.tx_packets > 300, "port {n}: {s:?}");
    }
    let show = lab.ctl(&["port_show"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        show.contains("xdp:"),
        "port_show does not name the xdp ports:\n{show}"
    );
    let cache = lab.ctl(&["cache_show"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(cache.contains("megaflows"), "{cache}");
}
