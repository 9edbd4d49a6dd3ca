//! Varbit headers on the fast path: IPv4 options parsed as a varbit whose size the packet
//! gives, in the two ways programs write it (a `lookahead` of the IHL before one `extract`
//! of the whole header, or an options header after the base header), emitted again and
//! covered by the IPv4 checksum; TCP options sized by a 104-bit `lookahead` of the TCP
//! header up to its data offset. Every packet must give the interpreter's outputs; packets
//! with well-formed options must run compiled programs through parse-path templates (one per
//! IHL), not replays; bad IHLs (below 5, options past the end of the packet) must still give
//! the interpreter's outcome.

mod common;

use common::{Rng, Twin, compile_str, csum};

/// One header with the options as its last field, sized by a `lookahead` of the IHL (as
/// p4c's checksum tests write it).
const LOOKAHEAD: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ihl_t { bit<4> version; bit<4> ihl; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
    varbit<320> options;
}
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct headers { eth_t eth; ipv4_t ipv4; udp_t udp; }
struct meta_t { }
error { BadIhl }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x0800: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4,
            (bit<32>)(8 * (4 * (bit<9>)(pkt.lookahead<ihl_t>().ihl) - 20)));
        verify(hdr.ipv4.ihl >= 5, error.BadIhl);
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
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src,
              hdr.ipv4.dst, hdr.ipv4.options },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) {
            sm.egress_spec = 3;
        } else if (sm.checksum_error == 1) {
            sm.egress_spec = 4;
        } else if (hdr.udp.isValid()) {
            sm.egress_spec = 1;
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            hdr.udp.sport = hdr.udp.sport + 1;
        } else {
            sm.egress_spec = 2;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src,
              hdr.ipv4.dst, hdr.ipv4.options },
            hdr.ipv4.csum, HashAlgorithm.csum16);
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

/// The base header, then an options header sized by the base header's IHL.
const SEPARATE: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
header opts_t { varbit<320> data; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct headers { eth_t eth; ipv4_t ipv4; opts_t opts; udp_t udp; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x0800: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.opts, ((bit<32>)hdr.ipv4.ihl - 5) * 32);
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
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) {
            sm.egress_spec = 3;
        } else if (hdr.udp.isValid()) {
            sm.egress_spec = 1;
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        } else {
            sm.egress_spec = 2;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src,
              hdr.ipv4.dst, hdr.opts.data },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.opts);
        pkt.emit(hdr.udp);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// An Ethernet/IPv4/UDP frame with IHL `ihl` (options of `4 * (ihl - 5)` bytes, each
/// `opt`), a right checksum unless `bad_csum`, a UDP header from `sport` and `extra`
/// payload bytes; cut to `cut` bytes if given.
fn frame(ihl: u8, opt: u8, sport: u16, bad_csum: bool, cut: Option<usize>) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
    let opts = 4 * usize::from(ihl.saturating_sub(5));
    let mut ip = vec![
        0x40 | ihl,
        0,
        0,
        0,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ];
    ip.extend(std::iter::repeat_n(opt, opts));
    let total = (ip.len() + 8 + 6) as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let c = csum(&ip) ^ u16::from(bad_csum);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend(ip);
    f.extend(sport.to_be_bytes());
    f.extend([0, 53, 0, 14, 0, 0]);
    f.extend([0xaa; 6]);
    if let Some(n) = cut {
        f.truncate(n);
    }
    f
}

/// Random frames through both programs: well-formed ones with every IHL from 5 to 15,
/// checksums right and wrong, and bad ones (IHL below 5, options past the end of the
/// frame). Each must give the interpreter's outputs, and the well-formed ones must run
/// compiled programs.
fn run(src: &str) -> koi_datapath::DatapathStats {
    let p = compile_str(src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(
        twin.dp.has_fast_parser(),
        "the fast parser follows varbit extracts"
    );
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for i in 0..4000 {
        let r = rng.next();
        let ihl = match r % 10 {
            0 => (r >> 8) as u8 % 5, // below 5
            _ => 5 + ((r >> 8) % 11) as u8,
        };
        let bad_csum = (r >> 16).is_multiple_of(7);
        // Some frames end inside the options or the UDP header.
        let cut = (r >> 20)
            .is_multiple_of(9)
            .then(|| 14 + ((r >> 24) % 60) as usize);
        let f = frame(ihl, (r >> 32) as u8 % 3, (i % 50) as u16, bad_csum, cut);
        twin.send(&f, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch, 0, "{s:?}");
    assert_eq!(s.compile_mismatch, 0, "{s:?}");
    assert_eq!(s.not_compiled, 0, "no megaflow replays: {s:?}");
    assert!(s.compiled_hits > 2500, "{s:?}");
    // One parse-path template per IHL, with native code.
    assert!(s.jit_templates >= 11, "{s:?}");
    s
}

#[test]
fn options_sized_by_a_lookahead_run_compiled() {
    run(LOOKAHEAD);
}

#[test]
fn an_options_header_sized_by_the_base_header_runs_compiled() {
    run(SEPARATE);
}

/// Sends frames with IHL 7 (options of 8 bytes): the first takes the slow path, then each
/// of `others` (option byte, UDP source port, whether it must hit a megaflow). The outputs
/// are checked: TTL decremented, options kept, the IPv4 checksum over header and options
/// right.
fn ihl7(src: &str, others: &[(u8, u16, bool)]) {
    use koi_datapath::{PathTaken, Tier};
    let p = compile_str(src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    let (out, first) = twin.send(&frame(7, 1, 1000, false, None), 0);
    assert_eq!(first, PathTaken::Slow);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 1, "forwarded on port 1");
    for &(opt, sport, hit) in others {
        let (out, path) = twin.send(&frame(7, opt, sport, false, None), 0);
        let compiled = matches!(path, PathTaken::Compiled(Tier::Microflow | Tier::Megaflow));
        assert_eq!(compiled, hit, "options {opt}, port {sport}: {path:?}");
        if !hit {
            assert_eq!(path, PathTaken::Slow);
        }
        let ip = &out[0].1[14..14 + 28];
        assert_eq!(ip[8], 63, "TTL");
        assert_eq!(csum(ip), 0, "checksum of the output's IPv4 header");
        assert!(ip[20..].iter().all(|&b| b == opt), "options kept");
    }
    let (_, path) = twin.send(&frame(6, 1, 1000, false, None), 0);
    assert_eq!(path, PathTaken::Slow, "another IHL is another megaflow");
    assert_eq!(twin.dp.stats().not_compiled, 0);
}

/// Without a checksum check, the option bytes decide nothing: the megaflow the first frame
/// installed serves every option value of that length (they are copied and summed, not
/// matched).
#[test]
fn one_megaflow_serves_every_option_value_of_one_length() {
    ihl7(SEPARATE, &[(2, 1000, true), (0, 7, true), (0xff, 9, true)]);
}

/// `verify_checksum` over the options decides the egress port (through `checksum_error`):
/// each header and options value is a megaflow of its own, while the UDP port, which
/// decides nothing, stays wildcarded.
#[test]
fn a_checksum_check_over_the_options_matches_them() {
    ihl7(
        LOOKAHEAD,
        &[(1, 7, true), (1, 9, true), (2, 1000, false), (2, 8, true)],
    );
}

/// A size computed into a parser variable that is overwritten after it decided: the
/// parse-path template must pin what the variable held then (the flow key has only its
/// final value).
const OVERWRITTEN: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; }
header h_t { bit<8> f; bit<8> g; }
struct headers { a_t a; h_t h; }
struct meta_t { bit<8> n; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        m.n = hdr.a.x;
        pkt.advance((bit<32>) m.n);
        m.n = 0;
        pkt.extract(hdr.h);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.f == 1) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
            hdr.h.g = hdr.h.g + 1;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.a); pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn a_size_from_an_overwritten_variable_is_pinned() {
    let p = compile_str(OVERWRITTEN).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(twin.dp.has_fast_parser());
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for _ in 0..3000 {
        let r = rng.next();
        let skip = [0u8, 8, 16][(r % 3) as usize];
        let mut f = vec![skip];
        f.extend((0..6).map(|i| [0u8, 1, 2][((r >> (8 + 2 * i)) % 3) as usize]));
        twin.send(&f, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
    assert!(s.compiled_hits > 2000, "{s:?}");
    // One template per skip, each pinning the byte the skip came from.
    assert!(s.jit_templates >= 3, "{s:?}");
}

/// TCP options sized by a `lookahead` of the TCP header up to its data offset: 104 bits,
/// read through slices of the lookahead's value.
const TCP: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
header tcp_upto_offset_t {
    bit<16> sport; bit<16> dport; bit<32> seq; bit<32> ack; bit<4> offset; bit<4> rest;
}
header tcp_t {
    bit<16> sport; bit<16> dport; bit<32> seq; bit<32> ack; bit<4> offset; bit<4> res;
    bit<8> flags; bit<16> window; bit<16> csum; bit<16> urgent; varbit<320> options;
}
struct headers { eth_t eth; ipv4_t ipv4; tcp_t tcp; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.proto) {
            6: tcp;
            default: accept;
        }
    }
    state tcp {
        pkt.extract(hdr.tcp,
            (bit<32>)(8 * (4 * (bit<9>)(pkt.lookahead<tcp_upto_offset_t>().offset) - 20)));
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) {
            sm.egress_spec = 3;
        } else if (hdr.tcp.dport == 80) {
            sm.egress_spec = 1;
            hdr.tcp.window = hdr.tcp.window - 1;
        } else {
            sm.egress_spec = 2;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn tcp_options_sized_by_a_wide_lookahead_run_compiled() {
    let p = compile_str(TCP).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(
        twin.dp.has_fast_parser(),
        "a 104-bit lookahead read through slices"
    );
    let mut rng = Rng(0x6a09_e667_f3bc_c908);
    for _ in 0..4000 {
        let r = rng.next();
        let offset = match r % 10 {
            0 => (r >> 8) as u8 % 5, // below 5: a size above the maximum
            _ => 5 + ((r >> 8) % 11) as u8,
        };
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        let dport: u16 = if (r >> 16).is_multiple_of(3) { 80 } else { 443 };
        f.extend(((r >> 20) as u16 % 20).to_be_bytes());
        f.extend(dport.to_be_bytes());
        f.extend([
            0,
            0,
            0,
            1,
            0,
            0,
            0,
            0,
            offset << 4,
            0x10,
            0x20,
            0x00,
            0,
            0,
            0,
            0,
        ]);
        f.extend(std::iter::repeat_n(
            1u8,
            4 * usize::from(offset.saturating_sub(5)),
        ));
        f.extend([0xcc; 4]);
        if (r >> 40).is_multiple_of(9) {
            f.truncate(34 + ((r >> 44) % 40) as usize);
        }
        twin.send(&f, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
    assert_eq!(s.not_compiled, 0, "no megaflow replays: {s:?}");
    assert!(s.compiled_hits > 2500, "{s:?}");
    assert!(s.jit_templates >= 11, "one template per data offset: {s:?}");
}
