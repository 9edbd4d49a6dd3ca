//! Checksums over the payload (`verify_checksum_with_payload`, `update_checksum_with_payload`)
//! in compiled programs: a NAT-like rewrite of the IPv4 destination and the UDP port with
//! the UDP checksum (pseudo-header, header and payload) checked on the way in and recomputed
//! on the way out, and a checksum over an odd number of bytes of fields and the payload.
//! Every frame must give the interpreter's outputs, whatever its payload length, and run a
//! compiled program once its megaflow is installed; a decision on the checksum check, which
//! the payload decides, is never cached.

mod common;

use common::{Rng, Twin, compile_str, csum};

const NAT: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct headers { eth_t eth; ipv4_t ipv4; udp_t udp; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.proto) {
            17: udp;
            default: accept;
        }
    }
    state udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) {
    apply {
        verify_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.src, hdr.ipv4.dst, 8w0, hdr.ipv4.proto, hdr.udp.len,
              hdr.udp.sport, hdr.udp.dport, hdr.udp.len },
            hdr.udp.csum, HashAlgorithm.csum16);
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (CHECKED && sm.checksum_error == 1) {
            sm.egress_spec = 2;
        } else if (hdr.udp.isValid()) {
            sm.egress_spec = 1;
            hdr.ipv4.dst = 0x0a000063;
            hdr.udp.dport = hdr.udp.dport + 1;
        } else {
            sm.egress_spec = 3;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) {
    apply {
        update_checksum_with_payload(hdr.udp.isValid() && hdr.udp.csum != 0,
            { hdr.ipv4.src, hdr.ipv4.dst, 8w0, hdr.ipv4.proto, hdr.udp.len,
              hdr.udp.sport, hdr.udp.dport, hdr.udp.len },
            hdr.udp.csum, HashAlgorithm.csum16);
        // Over an odd number of bytes before the payload.
        update_checksum_with_payload(hdr.udp.isValid(), { hdr.ipv4.ttl },
            hdr.ipv4.id, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// The UDP checksum of `frame` (Ethernet, 20-byte IPv4, UDP, payload) as the program
/// defines it: pseudo-header, UDP header without its checksum, payload.
fn udp_csum(frame: &[u8]) -> u16 {
    let ip = &frame[14..34];
    let udp = &frame[34..];
    let mut d = Vec::new();
    d.extend(&ip[12..20]);
    d.extend([0, ip[9]]);
    d.extend(&udp[4..6]);
    d.extend(&udp[0..6]);
    d.extend(&udp[8..]);
    csum(&d)
}

/// An Ethernet/IPv4/UDP frame with `payload`, its UDP checksum right unless `bad`.
fn frame(sport: u16, payload: &[u8], bad: bool) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
    let ulen = (8 + payload.len()) as u16;
    f.extend([
        0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    f.extend(sport.to_be_bytes());
    f.extend(53u16.to_be_bytes());
    f.extend(ulen.to_be_bytes());
    f.extend([0, 0]);
    f.extend(payload);
    let c = udp_csum(&f) ^ u16::from(bad);
    f[40..42].copy_from_slice(&c.to_be_bytes());
    f
}

/// Frames with payloads of 0 to 40 bytes, one in five with a wrong UDP checksum, through
/// the program (with `checked`, its ingress drops those to port 2); the outputs are checked
/// against the interpreter's and against checksums computed here.
fn run(checked: bool) -> koi_datapath::DatapathStats {
    let src = NAT.replace("CHECKED", if checked { "true" } else { "false" });
    let p = compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    let mut rng = Rng(0x510e_527f_ade6_82d1);
    let mut forwarded = 0;
    for _ in 0..3000 {
        let r = rng.next();
        let len = (r % 41) as usize;
        let payload: Vec<u8> = (0..len).map(|i| (r >> (i % 48)) as u8).collect();
        let bad = (r >> 50).is_multiple_of(5);
        let f = frame((r >> 56) as u16 % 4, &payload, bad);
        let (out, _) = twin.send(&f, 0);
        assert_eq!(out.len(), 1);
        let (port, bytes) = &out[0];
        assert_eq!(*port, if bad && checked { 2 } else { 1 }, "{f:?}");
        if *port == 1 {
            forwarded += 1;
            assert_eq!(&bytes[30..34], &[10, 0, 0, 99], "destination rewritten");
            // The recomputed UDP checksum is right for the rewritten frame.
            let c = u16::from_be_bytes([bytes[40], bytes[41]]);
            assert_eq!(c, udp_csum(bytes), "UDP checksum of {bytes:?}");
            // The odd one: the TTL byte, then the payload from its low half on.
            let mut d = vec![bytes[22]];
            d.extend(&bytes[42..]);
            assert_eq!(u16::from_be_bytes([bytes[18], bytes[19]]), csum(&d));
        }
    }
    assert!(forwarded > 2000);
    let s = twin.dp.stats();
    assert_eq!(s.compile_mismatch, 0, "{s:?}");
    assert_eq!(s.not_compiled, 0, "no megaflow replays: {s:?}");
    s
}

#[test]
fn payload_checksums_are_compiled_for_every_payload_length() {
    let s = run(false);
    assert!(s.compiled_hits > 2500, "{s:?}");
    assert!(s.jit_compiled > 0, "{s:?}");
}

/// The payload decides `checksum_error`, which no flow key holds: the compiled program
/// checks the decision per packet (a guard on the checksum over the payload), so frames with
/// wrong checksums are never forwarded by a megaflow a right one made (each frame's port is
/// asserted above), and the two ways are two arms of one megaflow: two slow-path runs, then
/// compiled hits for every frame.
#[test]
fn a_decision_on_a_payload_checksum_is_checked_per_packet() {
    let s = run(true);
    assert_eq!(s.misses, 2, "{s:?}");
    assert_eq!(s.compiled_hits, 2998, "{s:?}");
    assert_eq!(s.uncacheable, 0, "{s:?}");
}
