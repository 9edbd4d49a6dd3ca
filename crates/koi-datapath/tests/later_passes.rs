//! Resubmitted and recirculated packets (v1model, PSA) through the cached datapath, each
//! packet compared with the interpreter alone. A later parse reads another packet than the
//! first: a resubmitted packet as it came in, a recirculated one as the deparser emitted it.
//! What it extracts may be bytes the first parse put in another header, or in none, so the
//! megaflow of such a run matches the headers that packet holds whole; a later parse that
//! reads past them (into the payload, which no key holds) is never cached. Packets that
//! differ only where the later parse reads must not share a megaflow's outcome.

mod common;

use common::{ETH_H_HEADERS, replayed};
use koi_datapath::PathTaken;

/// A v1model program of [`ETH_H_HEADERS`] (plus `h2_t { bit<16> c; }` and a field list of
/// `meta.x`), parser states `states`, and ingress and egress bodies; the deparser emits
/// `eth`, `h` and `h2`.
fn program(states: &str, ingress: &str, egress: &str) -> koi_ir::Pipeline {
    let src = format!(
        r#"{ETH_H_HEADERS}
header h2_t {{ bit<16> c; }}
struct all_t {{ eth_t eth; h_t h; h2_t h2; }}
struct m_t {{ @field_list(1) bit<8> x; }}
parser P(packet_in pkt, out all_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
{states}
}}
control V(inout all_t hdr, inout m_t meta) {{ apply {{ }} }}
control I(inout all_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
    apply {{ {ingress} }}
}}
control E(inout all_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
    apply {{ {egress} }}
}}
control C(inout all_t hdr, inout m_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in all_t hdr) {{
    apply {{ pkt.emit(hdr.eth); pkt.emit(hdr.h); pkt.emit(hdr.h2); }}
}}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
    );
    common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"))
}

/// Ethernet (type 0x88b5), then bytes `a`, `b`, then `seq`s to 60 bytes.
fn frame(a: u8, b: u8, seq: u8) -> Vec<u8> {
    common::eth_h_frame(a, b, seq)
}

/// Sends the frame of each `(a, b, port)` of `cases` in three rounds (other payloads each
/// time): it must leave on `port` (with `h.a` rewritten to `b + 1` when `rewritten`), take the
/// slow path in the first round and a path `later` accepts after. Returns the datapath's
/// (installs, uncacheable).
fn rounds(
    twin: &mut common::Twin<'_>,
    cases: &[(u8, u8, u64)],
    rewritten: bool,
    later: fn(PathTaken) -> bool,
) -> (u64, u64) {
    for round in 0..3u8 {
        for &(a, b, port) in cases {
            let (got, path) = twin.send(&frame(a, b, round), 1);
            let ports: Vec<u64> = got.iter().map(|(p, _)| *p).collect();
            assert_eq!(ports, [port], "a {a} b {b}, round {round}");
            if rewritten {
                assert_eq!(got[0].1[14], b + 1, "h.a rewritten");
            }
            if round == 0 {
                assert_eq!(path, PathTaken::Slow, "a {a} b {b}");
            } else {
                assert!(later(path), "a {a} b {b}, round {round}: {path:?}");
            }
        }
    }
    let s = twin.dp.stats();
    (s.installs, s.uncacheable)
}

/// Still the slow path.
fn slow(p: PathTaken) -> bool {
    p == PathTaken::Slow
}

/// A hit, replayed or compiled.
fn hit(p: PathTaken) -> bool {
    p != PathTaken::Slow
}

/// The first parse extracts `eth` and `h`; the resubmitted packet's parse (`meta.x` 1)
/// extracts `eth` and then the same two bytes as `h2`, whose value the second ingress pass
/// sends by. Every value of those bytes is its own megaflow, each hit replayed.
#[test]
fn v1model_resubmissions_match_the_bytes_the_next_parse_reinterprets() {
    let p = program(
        r#"
    state start {
        pkt.extract(hdr.eth);
        transition select(meta.x) { 1: again; default: first; }
    }
    state first { pkt.extract(hdr.h); transition accept; }
    state again { pkt.extract(hdr.h2); transition accept; }"#,
        r#"
        if (meta.x == 0) {
            meta.x = 1;
            resubmit_preserving_field_list(1);
        } else if (hdr.h2.c == 0x0102) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }"#,
        "",
    );
    let mut twin = common::Twin::new(&p, |_| {});
    let cases = [(1, 2, 2), (1, 3, 3), (9, 2, 3)];
    assert_eq!(rounds(&mut twin, &cases, false, replayed), (3, 0));
}

/// The first pass rewrites `h.a` from `h.b` and recirculates (egress, port 1); the
/// recirculated packet's parse reads the emitted `h`, and the second ingress pass sends by
/// `h.a`. Packets with the same headers share a megaflow (whatever their payload); `h.b`
/// chooses the port.
#[test]
fn v1model_recirculations_match_the_emitted_headers() {
    let p = program(
        r#"
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88b5: parse_h; default: accept; }
    }
    state parse_h { pkt.extract(hdr.h); transition accept; }"#,
        r#"
        if (sm.instance_type == 0) {
            hdr.h.a = hdr.h.b + 1;
            sm.egress_spec = 1;
        } else if (hdr.h.a == 5) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }"#,
        "if (sm.egress_port == 1) { recirculate_preserving_field_list(1); }",
    );
    let mut twin = common::Twin::new(&p, |_| {});
    let cases = [(0, 4, 2), (7, 4, 2), (0, 5, 3)];
    assert_eq!(rounds(&mut twin, &cases, true, replayed), (3, 0));
}

/// The recirculated packet's parse extracts `h2` from what the first pass left as payload
/// (the first parse extracted only Ethernet): no key holds those bytes, so such runs are
/// never cached, and each packet goes where its own bytes say.
#[test]
fn v1model_recirculated_parses_past_the_emitted_headers_are_not_cached() {
    let p = program(
        r#"
    state start {
        pkt.extract(hdr.eth);
        transition select(meta.x) { 1: more; default: accept; }
    }
    state more { pkt.extract(hdr.h2); transition accept; }"#,
        r#"
        if (meta.x == 0) {
            meta.x = 1;
            sm.egress_spec = 1;
        } else if (hdr.h2.c == 0x0102) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }"#,
        "if (sm.egress_port == 1) { recirculate_preserving_field_list(1); }",
    );
    let mut twin = common::Twin::new(&p, |_| {});
    let cases = [(1, 2, 2), (1, 3, 3)];
    assert_eq!(rounds(&mut twin, &cases, false, slow), (0, 6));
}

/// [`common::psa_passes`], compiled.
fn psa_program(ingress: &str, egress: &str) -> koi_ir::Pipeline {
    common::compile_str(&common::psa_passes(ingress, egress)).unwrap_or_else(|e| panic!("{e}"))
}

/// PSA: a packet ingress resubmits (once, when `h.b` is 8) is cached, its second pass
/// replayed (the others compiled); the resubmitted pass sends by `h.a`.
#[test]
fn psa_resubmissions_are_cached() {
    let p = psa_program(
        r#"
        if (hdr.h.b == 8 && istd.packet_path != PSA_PacketPath_t.RESUBMIT) {
            ostd.drop = false;
            ostd.resubmit = true;
        } else if (hdr.h.a == 1) {
            send_to_port(ostd, (PortId_t) 2);
        } else {
            send_to_port(ostd, (PortId_t) 3);
        }"#,
        "",
    );
    let mut twin = common::Twin::new(&p, |_| {});
    let cases = [(1, 8, 2), (2, 8, 3), (1, 7, 2)];
    assert_eq!(rounds(&mut twin, &cases, false, hit), (3, 0));
}

/// PSA: ingress sends a packet to PSA_PORT_RECIRCULATE; egress rewrites `h.a` from `h.b` on
/// the way; the recirculated pass sends by the rewritten `h.a`. Cached, hits replayed, and
/// each packet where its own `h.b` says.
#[test]
fn psa_recirculations_are_cached() {
    let p = psa_program(
        r#"
        if (istd.packet_path != PSA_PacketPath_t.RECIRCULATE) {
            send_to_port(ostd, PSA_PORT_RECIRCULATE);
        } else if (hdr.h.a == 5) {
            send_to_port(ostd, (PortId_t) 2);
        } else {
            send_to_port(ostd, (PortId_t) 3);
        }"#,
        "if (istd.egress_port == PSA_PORT_RECIRCULATE) { hdr.h.a = hdr.h.b + 1; }",
    );
    let mut twin = common::Twin::new(&p, |_| {});
    let cases = [(0, 4, 2), (7, 4, 2), (0, 5, 3)];
    assert_eq!(rounds(&mut twin, &cases, true, replayed), (3, 0));
}
