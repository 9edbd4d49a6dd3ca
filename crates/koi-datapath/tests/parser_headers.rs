//! Header operations inside parser states, as sub-parsers produce them (their `out` headers
//! are copied out, their locals invalidated) and as programs write them: `setInvalid`,
//! `setValid`, header copies and union members extracted in turn. The fast parser follows
//! them: a header's bits and its validity are tracked apart (an invalid header keeps its
//! fields, which later decisions may read), and every packet must give the interpreter's
//! outputs, with a flow key equal to the interpreter's on every slow-path run.

mod common;

use common::{Rng, Twin, compile_str};

const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> t; bit<8> v; }
header b_t { bit<16> w; }
header_union u_t { a_t a; b_t b; }
struct headers { a_t first; a_t second; a_t copy; b_t extra; u_t u; }
struct meta_t { bit<8> x; }
parser Sub(packet_in pkt, out a_t o) {
    state start { pkt.extract(o); transition accept; }
}
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    Sub() sub;
    state start {
        pkt.extract(hdr.first);
        transition select(hdr.first.t) {
            1: two;
            2: uni;
            3: valid;
            4: recopy;
            default: accept;
        }
    }
    state two {
        sub.apply(pkt, hdr.second);
        hdr.copy = hdr.first;
        hdr.first.setInvalid();
        transition select(hdr.second.t) {
            5: accept;
            default: more;
        }
    }
    state more {
        pkt.extract(hdr.extra);
        transition accept;
    }
    state uni {
        pkt.extract(hdr.u.a);
        pkt.extract(hdr.u.b);
        hdr.copy = hdr.second;
        transition select(hdr.copy.isValid()) {
            false: accept;
            default: more;
        }
    }
    state valid {
        pkt.extract(hdr.extra);
        hdr.extra.setInvalid();
        hdr.extra.setValid();
        transition accept;
    }
    state recopy {
        sub.apply(pkt, hdr.second);
        hdr.first = hdr.second;
        transition select(hdr.first.v) {
            8: accept;
            default: more;
        }
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.first.v == 7) {
            sm.egress_spec = 1;
        } else if (hdr.u.a.v == 9) {
            sm.egress_spec = 3;
        } else if (hdr.extra.isValid()) {
            sm.egress_spec = 2;
            hdr.extra.w = hdr.extra.w + 1;
        } else {
            sm.egress_spec = 4;
        }
        if (hdr.copy.isValid()) {
            hdr.copy.v = hdr.copy.v + 1;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.first);
        pkt.emit(hdr.second);
        pkt.emit(hdr.copy);
        pkt.emit(hdr.extra);
        pkt.emit(hdr.u);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// Sends `pkt` twice through a fresh datapath for `p`: the first takes the slow path, the
/// second runs the compiled program the first installed. The first's outputs.
fn slow_then_compiled(p: &koi_ir::Pipeline, pkt: &[u8], what: &str) -> Vec<(u64, Vec<u8>)> {
    use koi_datapath::{PathTaken, Tier};
    let mut twin = Twin::new(p, |_| {});
    let (out, first) = twin.send(pkt, 0);
    assert_eq!(first, PathTaken::Slow, "{what}");
    let (_, again) = twin.send(pkt, 0);
    assert!(
        matches!(again, PathTaken::Compiled(Tier::Microflow | Tier::Megaflow)),
        "{what}: {again:?}"
    );
    out
}

#[test]
fn header_operations_in_parser_states_are_followed_exactly() {
    let p = compile_str(PROG).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(
        twin.dp.has_fast_parser(),
        "the fast parser follows setInvalid, setValid, header copies and unions"
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // A few values per byte, so that flows repeat and hit the caches.
    let byte = |rng: &mut Rng, i: usize| -> u8 {
        let r = rng.next();
        match i {
            0 => 1 + (r % 5) as u8,
            _ => [0u8, 5, 7, 8, 9, 0xff][(r % 6) as usize],
        }
    };
    for _ in 0..3000 {
        let len = 2 + (rng.next() % 9) as usize;
        let pkt: Vec<u8> = (0..len).map(|i| byte(&mut rng, i)).collect();
        twin.send(&pkt, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch, 0, "{s:?}");
    assert_eq!(s.compile_mismatch, 0, "{s:?}");
    // Short packets fail a length check (uncacheable) and paths that move a header's bits
    // after reading them are replayed; the rest run compiled programs.
    assert!(s.compiled_hits > 800, "{s:?}");
    assert!(s.jit_templates > 0, "{s:?}");
}

/// The paths one by one: the second packet of each hits the megaflow the first installed.
#[test]
fn each_path_is_compiled_or_replayed_as_expected() {
    use koi_datapath::{PathTaken, Tier};
    let p = compile_str(PROG).unwrap_or_else(|e| panic!("{e}"));
    let compiled =
        |t: PathTaken| matches!(t, PathTaken::Compiled(Tier::Microflow | Tier::Megaflow));
    let cases: [(&str, &[u8], u64, bool); 5] = [
        // Sub-parser copy-out, header copy, then `first` invalid: its stale `v` (7) decides.
        ("copy-out and setInvalid", &[1, 7, 5, 0], 1, true),
        // `u.a` extracted, then `u.b`: `u.a` is invalid but keeps `v` = 9, which decides;
        // `copy` is a copy of `second`, invalid.
        ("union members in turn", &[2, 0, 0, 9, 0xab, 0xcd], 3, true),
        // A header copied over after a `select` read it: replayed, not compiled.
        ("bits moved after a select", &[4, 0, 0, 8], 4, false),
        // `extra` extracted, invalidated, made valid again: its fields are zero (v1model).
        ("setValid", &[3, 0, 0x12, 0x34], 2, true),
        // Nothing special.
        ("plain", &[9, 1], 4, true),
    ];
    for (what, pkt, port, fast) in cases {
        let mut twin = Twin::new(&p, |_| {});
        let (out, first) = twin.send(pkt, 0);
        assert_eq!(first, PathTaken::Slow, "{what}");
        assert_eq!(out.first().map(|o| o.0), Some(port), "{what}: {out:?}");
        let (_, again) = twin.send(pkt, 0);
        assert_eq!(compiled(again), fast, "{what}: {again:?}");
        if !fast {
            assert!(matches!(again, PathTaken::Replayed(_)), "{what}: {again:?}");
        }
        assert_eq!(twin.dp.stats().fast_parse_mismatch, 0, "{what}");
    }
}

/// `advance` by a packet field: the headers after it move with the value, so a parse-path
/// template holds for that value only.
const ADVANCE: &str = r#"
#include <core.p4>
#include <v1model.p4>
header skip_t { bit<8> n; }
header h_t { bit<8> f; bit<8> g; }
struct headers { skip_t skip; h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.skip);
        pkt.advance((bit<32>) hdr.skip.n);
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
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.skip);
        pkt.emit(hdr.h);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn advance_by_a_packet_value_is_followed() {
    let p = compile_str(ADVANCE).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(twin.dp.has_fast_parser());
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..3000 {
        // Skips of 0 to 3 bytes (and a few bit counts that are not whole bytes).
        let n = [0u8, 8, 16, 24, 3][(rng.next() % 5) as usize];
        let len = 1 + (rng.next() % 8) as usize;
        let mut pkt: Vec<u8> = (0..len)
            .map(|_| [0u8, 1, 2][(rng.next() % 3) as usize])
            .collect();
        pkt[0] = n;
        twin.send(&pkt, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
    assert!(s.compiled_hits > 1000, "{s:?}");
    assert!(s.jit_templates >= 2, "{s:?}");
    // The same packet twice: the second runs the compiled program.
    let out = slow_then_compiled(&p, &[16, 9, 9, 1, 5], "advance by 16");
    assert_eq!(out.first().map(|o| o.0), Some(1));
}

/// An MPLS label stack: the parser loops on `stack.last`'s bottom-of-stack bit, and a
/// `verify` reads `stack.last` too. The stack element a `select` reads is the one its index
/// names when the select runs, not at the end of the parse. Parser errors (a fourth label,
/// a TTL the `verify` rejects) go on to ingress with `parser_error` set, as v1model does.
const MPLS: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<8> type; }
header mpls_t { bit<20> label; bit<3> tc; bit<1> bos; bit<8> ttl; }
header ip_t { bit<8> proto; bit<8> x; }
struct headers { eth_t eth; mpls_t[3] mpls; ip_t ip; }
error { LowTtl }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x47: label;
            default: accept;
        }
    }
    state label {
        pkt.extract(hdr.mpls.next);
        verify(hdr.mpls.last.ttl >= 2, error.LowTtl);
        transition select(hdr.mpls.last.bos) {
            0: label;
            1: ip;
        }
    }
    state ip {
        pkt.extract(hdr.ip);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.StackOutOfBounds) {
            sm.egress_spec = 4;
        } else if (sm.parser_error != error.NoError) {
            sm.egress_spec = 5;
        } else if (hdr.mpls[1].isValid() && hdr.mpls[1].label == 5) {
            sm.egress_spec = 1;
        } else if (hdr.ip.isValid()) {
            sm.egress_spec = 2;
            hdr.ip.x = hdr.ip.x + 1;
        } else {
            sm.egress_spec = 3;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.ip);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// One label: 20-bit label, bottom-of-stack bit, TTL.
fn label(l: u32, bos: bool, ttl: u8) -> [u8; 4] {
    let w = (l << 12) | (u32::from(bos) << 8) | u32::from(ttl);
    w.to_be_bytes()
}

#[test]
fn a_select_on_the_last_stack_element_is_followed() {
    let p = compile_str(MPLS).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(twin.dp.has_fast_parser());
    let mut rng = Rng(0x0bad_cafe_f00d_5eed);
    for _ in 0..3000 {
        let mut pkt = vec![if rng.next().is_multiple_of(8) {
            0x11
        } else {
            0x47
        }];
        // Up to four labels (one more than the stack holds), the last usually with the
        // bottom-of-stack bit, TTLs of 2 and 3 and a few of 1 (rejected by the verify), and
        // a few packets cut short.
        let n = 1 + (rng.next() % 4) as usize;
        for i in 0..n {
            let bos = i + 1 == n && !rng.next().is_multiple_of(8);
            let ttl = if rng.next().is_multiple_of(16) {
                1
            } else {
                2 + (rng.next() % 2) as u8
            };
            pkt.extend(label((rng.next() % 7) as u32, bos, ttl));
        }
        pkt.extend([6, (rng.next() % 3) as u8]);
        if rng.next().is_multiple_of(10) {
            pkt.truncate(pkt.len() - 1 - (rng.next() % 4) as usize);
        }
        twin.send(&pkt, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
    // Every megaflow has a compiled program, error paths included; only packets cut short
    // are not cached (their length decides).
    assert_eq!(s.not_compiled, 0, "{:?}", twin.dp.not_compiled_reasons());
    assert!(s.compiled_hits + s.uncacheable > 2800, "{s:?}");
    // Parse-path templates check the element each `select` and `verify` read, and serve
    // most packets, a full stack's path included (the rest: parses a failed `verify`
    // stopped, and each path's first packets).
    assert!(s.jit_templates >= 3, "{s:?}");
    assert!(s.template_hits > 3 * s.full_parses, "{s:?}");
    // The same packet twice: the first takes the slow path, the second runs the compiled
    // program. Two labels, the second at the bottom with label 5; four labels, one more
    // than the stack holds; a TTL the `verify` rejects.
    let two = [label(3, false, 9), label(5, true, 9)];
    let four = [
        label(1, false, 9),
        label(2, false, 9),
        label(3, false, 9),
        label(4, true, 9),
    ];
    let bad_ttl = [label(3, false, 9), label(5, true, 1)];
    let cases: [(&str, &[[u8; 4]], u64); 3] = [
        ("two labels", &two, 1),
        ("stack out of bounds", &four, 4),
        ("verify failed", &bad_ttl, 5),
    ];
    for (what, labels, port) in cases {
        let mut pkt = vec![0x47];
        for l in labels {
            pkt.extend(l);
        }
        pkt.extend([6, 1]);
        let out = slow_then_compiled(&p, &pkt, what);
        assert_eq!(out.first().map(|o| o.0), Some(port), "{what}");
    }
}

/// Parsers that compute: metadata from arithmetic, shifts, comparisons (signed too) and
/// logic on fields, variables read back (a counter), a field of `stack.last`, a `verify` on
/// a compound condition and a `select` on a computed value. The ingress both decides on the results
/// and writes them into the packet, so every value the fast parser and the tracer compute
/// is compared with the interpreter's.
const COMPUTE: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> t; bit<8> u; bit<16> w; }
header s_t { bit<4> k; bit<4> n; }
header out_t { bit<8> sum; bit<8> shifted; bit<8> flags; bit<8> count; bit<8> last; }
struct headers { a_t a; s_t[3] s; out_t o; }
struct meta_t { bit<8> sum; bit<8> shifted; bit<8> count; bit<8> last; bool big; bit<1> odd; bool neg; }
error { Bad }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        m.sum = hdr.a.t + hdr.a.u * 3;
        m.shifted = (hdr.a.t << 2) ^ (hdr.a.u >> 3);
        m.big = hdr.a.w > 16w1000 && hdr.a.t != 0;
        m.odd = (bit<1>) (hdr.a.u % 2);
        m.neg = (int<8>) hdr.a.u < 0;
        verify(hdr.a.t != 0xff && !(hdr.a.u == 0xfe), error.Bad);
        transition select(hdr.a.t & 0x0f) {
            1: elems;
            default: accept;
        }
    }
    state elems {
        pkt.extract(hdr.s.next);
        m.count = m.count + 1;
        m.last = (bit<8>) hdr.s.last.k;
        transition select(hdr.s.last.n) {
            0: accept;
            default: elems;
        }
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.o.setValid();
        hdr.o.sum = m.sum;
        hdr.o.shifted = m.shifted;
        hdr.o.flags = (m.big ? 8w2 : 8w0) | (m.neg ? 8w4 : 8w0) | (bit<8>) m.odd;
        hdr.o.count = m.count;
        hdr.o.last = m.last;
        if (sm.parser_error != error.NoError) {
            sm.egress_spec = 9;
        } else if (m.big) {
            sm.egress_spec = 1;
        } else if (m.neg) {
            sm.egress_spec = 4;
        } else if (m.count == 2) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.a);
        pkt.emit(hdr.s);
        pkt.emit(hdr.o);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn parser_computations_are_followed() {
    let p = compile_str(COMPUTE).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(
        twin.dp.has_fast_parser(),
        "the fast parser computes arithmetic, comparisons and logic"
    );
    let mut rng = Rng(0x5151_2323_7777_0001);
    for _ in 0..3000 {
        let t = [0x01u8, 0x11, 0x02, 0xff, 0x21][(rng.next() % 5) as usize];
        let u = [0u8, 1, 7, 0xfe, 0x80][(rng.next() % 5) as usize];
        let w = [0u16, 999, 1001, 0xffff][(rng.next() % 4) as usize].to_be_bytes();
        let mut pkt = vec![t, u, w[0], w[1]];
        // Up to four stack elements (one more than the stack holds), each with a key and
        // a "more" nibble.
        for i in 0..(rng.next() % 5) {
            let more = if rng.next().is_multiple_of(3) || i == 3 {
                0
            } else {
                1
            };
            pkt.push(((rng.next() % 16) as u8) << 4 | more);
        }
        pkt.extend([0xaa, 0xbb]);
        twin.send(&pkt, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
    assert_eq!(s.not_compiled, 0, "{:?}", twin.dp.not_compiled_reasons());
    // Each megaflow's first packet took the slow path; packets cut short are not cached.
    assert_eq!(s.compiled_hits + s.installs + s.uncacheable, 3000, "{s:?}");
}

/// `lookahead` into metadata and into a `select`: the packet bits at the cursor, without
/// moving it; a packet too short for a lookahead is the interpreter's (not cached).
const LOOKAHEAD: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> t; bit<8> v; }
header b_t { bit<8> x; }
struct headers { a_t a; b_t b; }
struct meta_t { bit<16> peek; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        m.peek = pkt.lookahead<bit<16>>();
        pkt.extract(hdr.a);
        transition select(pkt.lookahead<bit<8>>()) {
            1: b;
            default: accept;
        }
    }
    state b { pkt.extract(hdr.b); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.a.v = m.peek[7:0] + 1;
        if (m.peek[15:8] == 5) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.a); pkt.emit(hdr.b); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn lookahead_is_followed() {
    let p = compile_str(LOOKAHEAD).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(
        twin.dp.has_fast_parser(),
        "the fast parser follows lookahead"
    );
    let mut rng = Rng(0x0ddb_a11c_afe0_0001);
    for _ in 0..2000 {
        let len = 1 + (rng.next() % 5) as usize;
        let pkt: Vec<u8> = (0..len)
            .map(|_| [0u8, 1, 5, 9][(rng.next() % 4) as usize])
            .collect();
        twin.send(&pkt, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
    assert_eq!(s.not_compiled, 0, "{:?}", twin.dp.not_compiled_reasons());
    assert_eq!(s.compiled_hits + s.installs + s.uncacheable, 2000, "{s:?}");
    // The same packet twice: the second runs the compiled program.
    let out = slow_then_compiled(&p, &[5, 9, 1, 7], "lookahead");
    assert_eq!(out.first(), Some(&(1, vec![5, 10, 1, 7])));
}

/// A `lookahead` past the last header, whose value no decision reads: parse-path templates
/// serve such paths, and hold only for packets long enough for the lookahead.
const LOOKAHEAD_PAST: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> t; bit<8> v; }
struct headers { a_t a; }
struct meta_t { bit<16> peek; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        m.peek = pkt.lookahead<bit<16>>();
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.a.v = m.peek[7:0];
        if (hdr.a.t == 5) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.a); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn a_lookahead_past_the_headers_is_followed_by_templates() {
    let p = compile_str(LOOKAHEAD_PAST).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    let mut rng = Rng(0x7777_1234_0000_abcd);
    for _ in 0..2000 {
        // 2 and 3 bytes: too short for the lookahead; 4 and 5: long enough.
        let len = 2 + (rng.next() % 4) as usize;
        let pkt: Vec<u8> = (0..len)
            .map(|_| [5u8, 6, 7][(rng.next() % 3) as usize])
            .collect();
        twin.send(&pkt, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
    assert_eq!(s.not_compiled, 0, "{:?}", twin.dp.not_compiled_reasons());
    // Packets too short for the lookahead are cached too, apart from the long ones with the
    // same header (their keys hold where the parse stopped): a megaflow per value of `a.t`
    // (the comparison reads all of it) and length class, 3 x 2.
    assert_eq!(s.uncacheable, 0, "{s:?}");
    assert_eq!(s.misses, 6, "{s:?}");
    // Long and short packets each take a template (the short one's holds for packets
    // shorter than the lookahead needs): a full parse for the first packet of each only.
    assert!(s.template_hits > 1990, "{s:?}");
    assert_eq!((s.full_parses, s.jit_templates), (2, 2), "{s:?}");
}

/// A `verify` on a variable the parser assigned, which neither the key nor a `select`
/// reads: every parse must still compute it (a parse that skipped the assignment would
/// check a stale value and take the wrong path).
const VERIFY_VAR: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> t; bit<8> v; }
header b_t { bit<8> y; }
struct headers { a_t a; b_t b; }
struct meta_t { bit<8> x; }
error { Three }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        m.x = hdr.a.t + 1;
        verify(m.x != 4, error.Three);
        pkt.extract(hdr.b);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        // `t` itself decides nothing: one megaflow serves every `t` with `b` valid.
        if (hdr.b.isValid()) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 3;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.a); pkt.emit(hdr.b); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn a_verify_on_a_parser_variable_is_computed_on_every_parse() {
    let p = compile_str(VERIFY_VAR).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    for round in 0..3 {
        for t in 0..8u8 {
            let (out, _) = twin.send(&[t, round, 0xbb], 0);
            assert_eq!(out.first().map(|o| o.0), Some(if t == 3 { 3 } else { 1 }));
        }
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
}

/// Assignments to fields of extracted headers in parser states (as an inlined sub-parser
/// writing its `out` header does): the field is the assigned value until its header is
/// extracted again; a `select` on it and the flow key read that value.
const OVERWRITE: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> t; bit<8> v; }
header b_t { bit<8> w; }
struct headers { a_t a; b_t b; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        transition select(hdr.a.t) {
            1: set;
            2: computed;
            3: again;
            default: accept;
        }
    }
    state set {
        hdr.a.v = 42;
        transition accept;
    }
    state computed {
        hdr.a.v = hdr.a.t + hdr.a.v;
        transition select(hdr.a.v) {
            10: more;
            default: accept;
        }
    }
    state again {
        hdr.a.v = 42;
        pkt.extract(hdr.a);
        transition accept;
    }
    state more {
        pkt.extract(hdr.b);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.a.v == 42) {
            sm.egress_spec = 1;
        } else if (hdr.b.isValid()) {
            sm.egress_spec = 2;
            hdr.b.w = hdr.b.w + 1;
        } else {
            sm.egress_spec = 3;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn assignments_to_extracted_headers_are_followed() {
    use koi_datapath::{PathTaken, Tier};
    let p = compile_str(OVERWRITE).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    assert!(twin.dp.has_fast_parser());
    let mut rng = Rng(0x3c6e_f372_fe94_f82b);
    for _ in 0..3000 {
        let r = rng.next();
        let t = [1u8, 2, 3, 4][(r % 4) as usize];
        let v = [0u8, 8, 9, 40, 42][((r >> 8) % 5) as usize];
        let len = 2 + ((r >> 16) % 4) as usize;
        let mut f = vec![t, v];
        f.extend((2..len).map(|i| (r >> (24 + 8 * i)) as u8 % 3));
        twin.send(&f, 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.fast_parse_mismatch + s.compile_mismatch, 0, "{s:?}");
    assert!(s.compiled_hits > 1500, "{s:?}");
    assert!(s.jit_templates >= 3, "{s:?}");
    let compiled =
        |t: PathTaken| matches!(t, PathTaken::Compiled(Tier::Microflow | Tier::Megaflow));
    // (t, v, extra, port, compiled): the assigned value decides, the computed one selects.
    let cases: [(u8, u8, u8, u64, bool); 4] = [
        (1, 0, 5, 1, true),
        (2, 8, 5, 2, true),
        (2, 9, 5, 3, true),
        // Extracted again after the assignment: the packet's bits, replayed.
        (3, 3, 0, 3, false),
    ];
    for (t, v, extra, port, fast) in cases {
        let mut twin = Twin::new(&p, |_| {});
        let pkt = [t, v, extra, 9];
        let (out, first) = twin.send(&pkt, 0);
        assert_eq!(first, PathTaken::Slow);
        assert_eq!(out[0].0, port, "{pkt:?}");
        let (_, again) = twin.send(&pkt, 0);
        assert_eq!(compiled(again), fast, "{pkt:?}: {again:?}");
    }
}

/// A header extracted again after a `select` read it: the key (the final bits) of such a
/// packet can equal the key of a packet that took another path (`a` = 2 0 either way
/// below), so it must not run the other path's compiled program.
const AGAIN: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> t; bit<8> v; }
struct headers { a_t a; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        transition select(hdr.a.t) {
            3: again;
            default: accept;
        }
    }
    state again {
        pkt.extract(hdr.a);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.a.v = hdr.a.v + 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.a); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn a_header_extracted_again_does_not_take_another_paths_megaflow() {
    let p = compile_str(AGAIN).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    // Twice each, in both orders: the compiled megaflow of `2 0` and the packets whose
    // second header is `2 0`.
    for pkt in [
        [2u8, 0, 7, 7],
        [2, 0, 7, 7],
        [3, 1, 2, 0],
        [3, 1, 2, 0],
        [2, 0, 9, 9],
    ] {
        twin.send(&pkt, 0);
    }
    let mut twin = Twin::new(&p, |_| {});
    for pkt in [
        [3u8, 1, 2, 0],
        [3, 1, 2, 0],
        [2, 0, 7, 7],
        [2, 0, 7, 7],
        [3, 5, 2, 0],
    ] {
        twin.send(&pkt, 0);
    }
}

/// A field a `select` read, then overwritten: the key holds the new value only, so two
/// paths (an `advance` or not before `b`) have equal keys and must not share a program.
const DECIDED_THEN_OVERWRITTEN: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> t; bit<8> v; }
header b_t { bit<8> w; }
struct headers { a_t a; b_t b; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        transition select(hdr.a.v) {
            1: skip;
            default: plain;
        }
    }
    state skip {
        pkt.advance(8);
        pkt.extract(hdr.b);
        hdr.a.v = 0;
        transition accept;
    }
    state plain {
        pkt.extract(hdr.b);
        hdr.a.v = 0;
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.b.w = hdr.b.w + 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.a); pkt.emit(hdr.b); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn a_field_decided_on_then_overwritten_does_not_share_a_megaflow() {
    let p = compile_str(DECIDED_THEN_OVERWRITTEN).unwrap_or_else(|e| panic!("{e}"));
    for order in [
        [[5u8, 1, 9, 7, 3], [5, 0, 7, 3, 3]],
        [[5, 0, 7, 3, 3], [5, 1, 9, 7, 3]],
    ] {
        let mut twin = Twin::new(&p, |_| {});
        for pkt in [order[0], order[0], order[1], order[1]] {
            twin.send(&pkt, 0);
        }
    }
}
