//! Egress ports and multicast groups taken from the packet (source routing, a port sent
//! back to where it came from, a group in a header): the slow path matches the fields the
//! traffic manager's inputs come from, so that each megaflow sends to a fixed port and runs
//! a compiled program, one megaflow per port. Every packet must give the interpreter's
//! outputs, the drop port included.

mod common;

use common::{Twin, compile_str};

const ROUTES: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header route_t { bit<1> bos; bit<15> port; }
struct headers { eth_t eth; route_t[4] routes; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x1234: route;
            0x5678: group;
            default: accept;
        }
    }
    state route {
        pkt.extract(hdr.routes.next);
        transition select(hdr.routes.last.bos) {
            1: accept;
            default: route;
        }
    }
    state group {
        pkt.extract(hdr.routes.next);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.eth.type == 0x5678) {
            sm.mcast_grp = (bit<16>) hdr.routes[0].port;
        } else if (hdr.routes[0].isValid()) {
            sm.egress_spec = (bit<9>) hdr.routes[0].port;
            hdr.routes.pop_front(1);
        } else {
            sm.egress_spec = sm.ingress_port;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { hdr.eth.src = (bit<48>) sm.egress_port; }
}
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.routes);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// A frame of type `ty` with `routes` (15-bit ports; the last has the bottom-of-stack bit).
fn frame(ty: u16, routes: &[u16]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend(ty.to_be_bytes());
    for (i, r) in routes.iter().enumerate() {
        let bos = u16::from(i + 1 == routes.len()) << 15;
        f.extend((bos | r).to_be_bytes());
    }
    f.extend([0xee; 8]);
    f
}

#[test]
fn ports_and_groups_from_the_packet_run_compiled() {
    use koi_datapath::{PathTaken, Tier};
    let p = compile_str(ROUTES).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |s| {
        s.pre.group_create(7).unwrap_or_else(|e| panic!("{e}"));
        let node = s
            .pre
            .node_create(1, &[1, 2], &[])
            .unwrap_or_else(|e| panic!("{e}"));
        s.pre.associate(7, node).unwrap_or_else(|e| panic!("{e}"));
    });
    let compiled =
        |t: PathTaken| matches!(t, PathTaken::Compiled(Tier::Microflow | Tier::Megaflow));
    // Each first port: one megaflow, then compiled hits whatever the later routes.
    for first in [1u16, 2, 3, 511] {
        let (out, path) = twin.send(&frame(0x1234, &[first, 9, 4]), 0);
        assert_eq!(path, PathTaken::Slow, "port {first}");
        if first == 511 {
            assert!(out.is_empty(), "the drop port drops: {out:?}");
        } else {
            assert_eq!(out.len(), 1);
            assert_eq!(u64::from(first), out[0].0);
            // Egress saw the port in `egress_port`.
            assert_eq!(
                out[0].1[6..12],
                [0, 0, 0, 0, (first >> 8) as u8, first as u8]
            );
        }
        for rest in [[5u16, 6], [7, 8], [0, 1]] {
            let (_, path) = twin.send(&frame(0x1234, &[first, rest[0], rest[1]]), 0);
            assert!(compiled(path), "port {first}: {path:?}");
        }
    }
    // Sent back where it came from: one megaflow per ingress port.
    for port in [1u64, 2, 3] {
        let (out, path) = twin.send(&frame(0x0800, &[]), port);
        assert_eq!(path, PathTaken::Slow);
        assert_eq!(out[0].0, port);
        let (_, path) = twin.send(&frame(0x0800, &[]), port);
        assert!(compiled(path), "{path:?}");
    }
    // A multicast group from the packet: the replicas, then compiled hits.
    let (out, path) = twin.send(&frame(0x5678, &[7]), 0);
    assert_eq!(path, PathTaken::Slow);
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), [1, 2]);
    let (_, path) = twin.send(&frame(0x5678, &[7]), 0);
    assert!(compiled(path), "{path:?}");
    let s = twin.dp.stats();
    assert_eq!(s.not_compiled, 0, "no megaflow replays: {s:?}");
    assert_eq!(s.compile_mismatch, 0, "{s:?}");
}
