//! PSA's clones through the cached datapath, each packet compared with the interpreter alone:
//! CLONE_I2E copies (the packet as received, parsed again by the egress parser) and CLONE_E2E
//! copies (the packet as egress deparsed it) are compiled after the first packet of each
//! megaflow, with decisions of the clone's egress pass on headers that only the clone holds
//! matched; an ingress clone is not cached where the ingress parser reads the packet other
//! than by extracting headers (a `lookahead`).

mod common;

use common::{compiled, eth_h_frame as frame, exact_entry};
use koi_datapath::PathTaken;
use koi_ir::Bits;
use koi_state::MirrorTarget;

/// Ingress parses Ethernet and `h` (`PEEK` first: a statement of its start state), rewrites
/// `h.a` from a table on `h.b`, and for `h.b` 9 only mirrors the packet (clone session 9,
/// the packet itself dropped); others go to port 2. The ingress deparser emits Ethernet
/// alone (`h` is decapsulated). The egress parser extracts Ethernet, and `h` for an ingress
/// clone (whose packet is the one received). Egress drops a clone whose (original) `h.a`
/// is 5, and else writes `h.b` from `h.a`.
fn mirror(peek: &str) -> String {
    common::psa_program(&common::PsaBlocks {
        ingress_parser: &format!(
            "state start {{ {peek} pkt.extract(hdr.eth); pkt.extract(hdr.h); transition accept; }}"
        ),
        ingress: r#"
    action set_a(bit<8> a) { hdr.h.a = a; }
    table t { key = { hdr.h.b : exact; } actions = { set_a; NoAction; }
              default_action = NoAction(); }
    apply {
        t.apply();
        if (hdr.h.b == 9) {
            ostd.clone = true;
            ostd.clone_session_id = (CloneSessionId_t) 9;
            ingress_drop(ostd);
        } else {
            send_to_port(ostd, (PortId_t) 2);
        }
    }"#,
        ingress_deparser: "pkt.emit(hdr.eth);",
        egress_parser: r#"
    state start {
        pkt.extract(hdr.eth);
        transition select(istd.packet_path) {
            PSA_PacketPath_t.CLONE_I2E: parse_h;
            default: accept;
        }
    }
    state parse_h { pkt.extract(hdr.h); transition accept; }"#,
        egress: r#"
    apply {
        if (hdr.h.isValid()) {
            if (hdr.h.a == 5) { egress_drop(ostd); } else { hdr.h.b = hdr.h.a; }
        }
    }"#,
        ..common::PsaBlocks::default()
    })
}

/// Mirrored packets (`h.b` 9, `h.a` rewritten to 7 in ingress) whose original `h.a` is 5
/// are dropped by the clone's egress, the others sent to the session's port with `h.b` set
/// to the original `h.a`: compiled after the first packet of each value of `h.a`, which the
/// megaflow matches although no header ingress emits holds it. Unicast packets around them
/// are cached too.
#[test]
fn ingress_clones_are_compiled() {
    let p = common::compile_str(&mirror("")).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        s.mirroring_add(9, MirrorTarget::Port(4))
            .unwrap_or_else(|e| panic!("{e}"));
        exact_entry(s, "t", 9, 8, "set_a", vec![Bits::from_u64(8, 7)]);
    });
    for round in 0..4u8 {
        for (a, out) in [(5, 0), (6, 1), (8, 1), (5, 0)] {
            let (got, path) = twin.send(&frame(a, 9, round), 1);
            assert_eq!(got.len(), out, "a {a}, round {round}: {got:?}");
            if let [(port, bytes)] = got.as_slice() {
                assert_eq!(*port, 4);
                assert_eq!(bytes[14..16], [a, a], "the clone holds the original h");
            }
            if round > 0 {
                assert!(compiled(path), "a {a}, round {round}: {path:?}");
            }
        }
        let (got, path) = twin.send(&frame(1, 3, round), 1);
        assert_eq!(got.len(), 1, "unicast: {got:?}");
        assert_eq!(
            round > 0,
            path != PathTaken::Slow,
            "unicast {round}: {path:?}"
        );
    }
    let s = twin.dp.stats();
    assert_eq!((s.misses, s.uncacheable, s.compiled), (4, 0, 4), "{s:?}");
    assert_eq!(twin.dp.megaflows(), 4);
}

/// The ingress parser peeks at the packet (`lookahead`) before extracting: what an ingress
/// clone's egress parser extracts is then not modelled, and mirrored packets take the
/// interpreter every time, with its outputs.
#[test]
fn ingress_clones_after_a_lookahead_take_the_interpreter() {
    let src = mirror("bit<8> first = pkt.lookahead<bit<8>>();");
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        s.mirroring_add(9, MirrorTarget::Port(4))
            .unwrap_or_else(|e| panic!("{e}"));
    });
    for round in 0..3u8 {
        for (a, out) in [(5, 0), (6, 1)] {
            let (got, path) = twin.send(&frame(a, 9, round), 1);
            assert_eq!(got.len(), out, "a {a}: {got:?}");
            assert_eq!(path, PathTaken::Slow, "a {a}, round {round}");
        }
    }
    let s = twin.dp.stats();
    assert_eq!((s.installs, s.uncacheable), (0, 6), "{s:?}");
}

/// Every packet goes to port 2; egress rewrites `h.b` to `h.a + 1` and mirrors a unicast
/// packet whose `h.b` was 9 (clone session 9). The clone (the packet as egress deparsed it,
/// parsed again) is dropped when its `h.b` is 6 (an original `h.a` of 5), else sent with `h.a`
/// set to the port it goes to.
const EGRESS_MIRROR: common::PsaBlocks<'static> = common::PsaBlocks {
    ingress_parser: "state start { pkt.extract(hdr.eth); pkt.extract(hdr.h); transition accept; }",
    ingress: "apply { send_to_port(ostd, (PortId_t) 2); }",
    ingress_deparser: "pkt.emit(hdr.eth); pkt.emit(hdr.h);",
    egress_parser: "state start { pkt.extract(hdr.eth); pkt.extract(hdr.h); transition accept; }",
    egress: r#"
    apply {
        if (istd.packet_path == PSA_PacketPath_t.CLONE_E2E) {
            if (hdr.h.b == 6) { egress_drop(ostd); } else { hdr.h.a = (bit<8>) (bit<32>) istd.egress_port; }
        } else {
            if (hdr.h.b == 9) {
                ostd.clone = true;
                ostd.clone_session_id = (CloneSessionId_t) 9;
            }
            hdr.h.b = hdr.h.a + 1;
        }
    }"#,
    egress_deparser: "pkt.emit(hdr.eth); pkt.emit(hdr.h);",
};

/// Egress clones are compiled after the first packet of each megaflow; the clone's decision
/// on the header egress rewrote follows the original `h.a` it was computed from.
#[test]
fn egress_clones_are_compiled() {
    let src = common::psa_program(&EGRESS_MIRROR);
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        s.mirroring_add(9, MirrorTarget::Port(4))
            .unwrap_or_else(|e| panic!("{e}"));
    });
    for round in 0..4u8 {
        // (a, b, packets out): mirrored, the clone dropped; mirrored (twice); not mirrored.
        for (a, b, out) in [(5, 9, 1), (6, 9, 2), (7, 9, 2), (5, 3, 1)] {
            let (got, path) = twin.send(&frame(a, b, round), 1);
            assert_eq!(got.len(), out, "a {a} b {b}, round {round}: {got:?}");
            assert_eq!(got[0].0, 2);
            assert_eq!(got[0].1[14..16], [a, a + 1]);
            if let Some((port, bytes)) = got.get(1) {
                assert_eq!((*port, &bytes[14..16]), (4, &[4, a + 1][..]), "the clone");
            }
            if round > 0 {
                assert!(compiled(path), "a {a} b {b}, round {round}: {path:?}");
            }
        }
    }
    let s = twin.dp.stats();
    assert_eq!(
        (s.uncacheable, s.not_compiled, s.compile_mismatch),
        (0, 0, 0),
        "{s:?}"
    );
}
