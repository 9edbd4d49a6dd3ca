//! PSA, eBPF filter and XDP programs through the cached datapath, each packet compared with
//! the interpreter alone: `examples/psa_l2.p4`'s unicast, flooding and default drop are
//! cached (hits after the first packet of each, nothing uncacheable); an egress decision on a
//! header the ingress control rewrote is cached per value of what it was computed from; the
//! packets PSA resubmits are replayed (`later_passes.rs`), those whose egress parser reads
//! past the headers the ingress deparser emitted take the interpreter every time, those it
//! clones are compiled
//! (`psa_clones.rs`); an egress parse of part of the
//! emitted headers is replayed; an egress port taken from the packet is compiled per port;
//! eBPF filters and XDP programs are compiled like uBPF's.

mod common;

use common::{compiled, eth_h_frame as frame, exact_entry as entry, replayed};
use koi_datapath::PathTaken;
use koi_ir::Bits;
use koi_state::MirrorTarget;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// An Ethernet frame to `dst` (the last byte of the MAC; 0xff: broadcast) from `src`.
fn eth(dst: u8, src: u8, seq: u8) -> Vec<u8> {
    let mut f = if dst == 0xff {
        vec![0xff; 6]
    } else {
        vec![2, 0, 0, 0, 0, dst]
    };
    f.extend_from_slice(&[2, 0, 0, 0, 0, src, 0x88, 0xb5]);
    f.resize(60, seq);
    f
}

#[test]
fn psa_l2_unicast_flood_and_drop_are_cached() {
    let p = common::compile_file(&root().join("examples/psa_l2.p4"), None)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        let port = |n| vec![Bits::from_u64(32, n)];
        entry(s, "dmac", 0x0200_0000_000b, 48, "forward", port(2));
        entry(s, "dmac", 0xffff_ffff_ffff, 48, "flood", port(1));
        s.pre.group_create(1).unwrap_or_else(|e| panic!("{e}"));
        let n = s
            .pre
            .node_create(0, &[2, 3], &[])
            .unwrap_or_else(|e| panic!("{e}"));
        s.pre.associate(1, n).unwrap_or_else(|e| panic!("{e}"));
    });
    // Per kind, packets from many sources (which nothing decides on): one megaflow each.
    for (dst, outputs) in [(0x0b, 1), (0xff, 2), (0x0c, 0)] {
        for (i, src) in (0x10..0x18u8).enumerate() {
            let (got, path) = twin.send(&eth(dst, src, i as u8), 1);
            assert_eq!(got.len(), outputs, "{got:?}");
            if i == 0 {
                assert_eq!(path, PathTaken::Slow);
            } else {
                assert!(compiled(path), "packet {i} to {dst:#x}: {path:?}");
            }
        }
    }
    let s = twin.dp.stats();
    assert_eq!((s.misses, s.installs, s.uncacheable), (3, 3, 0), "{s:?}");
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (3, 0, 0),
        "{s:?}"
    );
    assert_eq!(twin.dp.megaflows(), 3);
    // The register and the counters were updated by every replay as by the interpreter.
    assert_eq!(format!("{:?}", twin.si), format!("{:?}", twin.sd));
}

/// Ingress parses Ethernet and `h`, sets `h.a` from a table on `h.b` (else leaves it), and
/// sends to port 2 (clone session `h.b` when `h.b` is 9; resubmits when it is 8, once); the
/// ingress deparser emits what `EMIT` says. The egress parser extracts what `EGRESS_PARSE`
/// says; egress drops the packet when `h.a` is 5, and else writes `h.b` from `h.a`.
fn program(emit: &str, egress_parse: &str) -> String {
    common::psa_program(&common::PsaBlocks {
        ingress: r#"
    action set_a(bit<8> a) { hdr.h.a = a; }
    table t { key = { hdr.h.b : exact; } actions = { set_a; NoAction; }
              default_action = NoAction(); }
    apply {
        t.apply();
        send_to_port(ostd, (PortId_t) 2);
        if (hdr.h.b == 9) {
            ostd.clone = true;
            ostd.clone_session_id = (CloneSessionId_t) 9;
        }
        if (hdr.h.b == 8 && istd.packet_path != PSA_PacketPath_t.RESUBMIT) {
            ostd.resubmit = true;
        }
    }"#,
        ingress_deparser: emit,
        egress_parser: &format!("state start {{ {egress_parse} transition accept; }}"),
        egress: "apply { if (hdr.h.a == 5) { egress_drop(ostd); } else { hdr.h.b = hdr.h.a; } }",
        ..common::PsaBlocks::default()
    })
}

/// Ingress writes `h.a` from a table (b = 1 gives a = 5, which egress drops; b = 2 gives 7)
/// or leaves it (b = 3): the egress decision on `h.a` is cached per value of the fields it is
/// computed from, and every packet gets the interpreter's outputs.
#[test]
fn egress_decisions_on_rewritten_headers_are_cached_per_value() {
    let src = program(
        "pkt.emit(hdr.eth); pkt.emit(hdr.h);",
        "pkt.extract(hdr.eth); pkt.extract(hdr.h);",
    );
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        entry(s, "t", 1, 8, "set_a", vec![Bits::from_u64(8, 5)]);
        entry(s, "t", 2, 8, "set_a", vec![Bits::from_u64(8, 7)]);
    });
    for round in 0..3u8 {
        // (b, a): dropped, sent with b = 7, sent with b = a (two values of a).
        for (b, a, out) in [(1, 0, 0), (2, 0, 1), (3, 5, 0), (3, 6, 1), (3, 4, 1)] {
            let (got, path) = twin.send(&frame(a, b, round), 1);
            assert_eq!(got.len(), out, "b {b} a {a}: {got:?}");
            if round > 0 {
                assert!(compiled(path), "b {b} a {a}, round {round}: {path:?}");
            }
        }
    }
    let s = twin.dp.stats();
    assert_eq!((s.misses, s.uncacheable, s.compiled), (5, 0, 5), "{s:?}");
}

/// A packet PSA resubmits is cached, its hits replayed (more in `later_passes.rs`); a packet
/// it clones (CLONE_I2E to a configured session) is compiled (more in
/// `psa_clones.rs`), as are the unicast packets around them.
#[test]
fn resubmissions_are_replayed_clones_are_compiled() {
    let src = program(
        "pkt.emit(hdr.eth); pkt.emit(hdr.h);",
        "pkt.extract(hdr.eth); pkt.extract(hdr.h);",
    );
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        s.mirroring_add(9, MirrorTarget::Port(4))
            .unwrap_or_else(|e| panic!("{e}"));
    });
    for round in 0..4u8 {
        let (got, path) = twin.send(&frame(1, 9, round), 1);
        assert_eq!(got.len(), 2, "the packet and its clone: {got:?}");
        assert_eq!(round > 0, compiled(path), "clone, round {round}: {path:?}");
        let (got, path) = twin.send(&frame(1, 8, round), 1);
        assert_eq!(got.len(), 1, "resubmitted once: {got:?}");
        assert_eq!(
            round > 0,
            replayed(path),
            "resubmit, round {round}: {path:?}"
        );
        let (_, path) = twin.send(&frame(1, 3, round), 1);
        assert_eq!(
            round > 0,
            compiled(path),
            "unicast, round {round}: {path:?}"
        );
    }
    let s = twin.dp.stats();
    assert_eq!((s.installs, s.uncacheable), (3, 0), "{s:?}");
}

/// The ingress deparser emits only Ethernet; the egress parser extracts Ethernet and `h`,
/// which then comes from the payload (no key holds it): such packets are never cached, and
/// egress still drops exactly those with a = 5.
#[test]
fn egress_parses_past_the_emitted_headers_are_not_cached() {
    let src = program(
        "pkt.emit(hdr.eth);",
        "pkt.extract(hdr.eth); pkt.extract(hdr.h);",
    );
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    for round in 0..3u8 {
        for (a, out) in [(5, 0), (6, 1)] {
            // (The ingress parse consumed h: the egress parser reads the payload after it.)
            let mut f = frame(1, 3, round);
            f[16] = a;
            let (got, path) = twin.send(&f, 1);
            assert_eq!(got.len(), out, "a {a}: {got:?}");
            assert_eq!(path, PathTaken::Slow, "a {a}, round {round}");
        }
    }
    let s = twin.dp.stats();
    assert_eq!((s.installs, s.uncacheable), (0, 6), "{s:?}");
}

/// An eBPF filter accepting packets whose `h.a` is in a table (and rewriting `h.b`, which
/// the packet that leaves does not show: it leaves as it came in; and counting them in a
/// `CounterArray`): accepted and dropped
/// packets, on two ports, and packets too short for the parser are all compiled, hits after
/// the first of each; an accepted packet goes back out of its own input port.
#[test]
fn ebpf_filters_are_compiled() {
    const EBPF: &str = r#"
#include <core.p4>
#include <ebpf_model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
parser P(packet_in pkt, out headers_t hdr) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control F(inout headers_t hdr, out bool accept) {
    CounterArray(32w2, false) seen;
    action yes() { accept = true; hdr.h.b = 9; seen.increment(32w1); }
    action no() { accept = false; }
    table t { key = { hdr.h.a : exact; } actions = { yes; no; } default_action = no(); }
    apply { t.apply(); }
}
ebpfFilter(P(), F()) main;
"#;
    let p = common::compile_str(EBPF).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| entry(s, "t", 7, 8, "yes", Vec::new()));
    for round in 0..3u8 {
        for (a, port, out) in [(7u8, 3, 1), (8, 3, 0), (7, 5, 1), (8, 5, 0)] {
            let pkt = [a, round, 0xca, 0xfe];
            let (got, path) = twin.send(&pkt, port);
            assert_eq!(got.len(), out, "a {a}: {got:?}");
            if out == 1 {
                assert_eq!(
                    got[0],
                    (port, pkt.to_vec()),
                    "as it came in, to its own port"
                );
            }
            assert_eq!(round > 0, compiled(path), "a {a}, round {round}: {path:?}");
        }
        let (got, path) = twin.send(&[7], 3);
        assert!(got.is_empty(), "too short for the parser: dropped");
        assert_eq!(round > 0, compiled(path), "short, round {round}: {path:?}");
    }
    let s = twin.dp.stats();
    assert_eq!((s.installs, s.uncacheable), (5, 0), "{s:?}");
    // The accepted packets counted, by the compiled programs as by the interpreter.
    let seen = |st: &koi_state::State| {
        st.counter_read("F.seen", 1)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(seen(&twin.sd), seen(&twin.si));
    assert_eq!(seen(&twin.sd).packets, 6);
}

/// An XDP program redirecting by a table on `h.a` (else `XDP_DROP`), decrementing `h.b`, or
/// sending back out of the input port when `h.a` is 1: every outcome is compiled (the XDP
/// verdict taken from the megaflow, the input port matched where the packet goes back out).
#[test]
fn xdp_programs_are_cached() {
    const XDP: &str = r#"
#include <core.p4>
#include <xdp_model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
parser P(packet_in pkt, out headers_t hdr) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control S(inout headers_t hdr, in xdp_input imd, out xdp_output omd) {
    action to(bit<32> port) { omd.output_port = port; omd.output_action = xdp_action.XDP_REDIRECT; }
    action drop() { omd.output_action = xdp_action.XDP_DROP; }
    table t { key = { hdr.h.a : exact; } actions = { to; drop; } default_action = drop(); }
    apply {
        hdr.h.b = hdr.h.b - 1;
        if (hdr.h.a == 1) {
            omd.output_action = xdp_action.XDP_TX;
        } else {
            t.apply();
        }
    }
}
control D(in headers_t hdr, packet_out pkt) { apply { pkt.emit(hdr.h); } }
xdp(P(), S(), D()) main;
"#;
    let p = common::compile_str(XDP).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        entry(s, "t", 7, 8, "to", vec![Bits::from_u64(32, 4)])
    });
    let mut paths = Vec::new();
    for round in 0..3u8 {
        for (a, port, out) in [
            (7u8, 3, Some(4)),
            (8, 3, None),
            (1, 3, Some(3)),
            (1, 5, Some(5)),
        ] {
            let (got, path) = twin.send(&[a, 10 + round, 0xca, 0xfe], port);
            assert_eq!(got.first().map(|o| o.0), out, "a {a} on {port}: {got:?}");
            if let Some(o) = got.first() {
                assert_eq!(o.1[1], 9 + round);
            }
            paths.push(path);
        }
    }
    // The first round misses (`XDP_TX` once per input port: its megaflow matches the port
    // it sends back to), the others run compiled programs.
    common::assert_compiled_except(&paths, &[0, 1, 2, 3]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.installs, s.compiled, s.not_compiled, s.uncacheable),
        (4, 4, 0, 0),
        "{s:?}"
    );
}

/// The ingress deparser emits Ethernet and `h`; the egress parser extracts Ethernet alone, so
/// `h`'s bytes stay ahead of the payload: cached, but replayed (the compiled output is the
/// egress headers and then the payload after the ingress parse), with the interpreter's
/// outputs.
#[test]
fn egress_parses_of_part_of_the_emitted_headers_are_replayed() {
    let src = program(
        "pkt.emit(hdr.eth); pkt.emit(hdr.h);",
        "pkt.extract(hdr.eth);",
    );
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    for round in 0..3u8 {
        let (got, path) = twin.send(&frame(5, 3, round), 1);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(round > 0, replayed(path), "round {round}: {path:?}");
    }
    let s = twin.dp.stats();
    assert_eq!((s.installs, s.uncacheable, s.compiled), (1, 0, 0), "{s:?}");
}

/// Ingress sends to the port `h.b` names (source routing): the megaflow matches `h.b` whole,
/// so each port is a compiled program of its own, and every packet leaves where the
/// interpreter sends it.
#[test]
fn psa_egress_ports_from_the_packet_are_compiled_per_port() {
    let src = common::psa_passes(
        "send_to_port(ostd, (PortId_t) (bit<32>) hdr.h.b); hdr.h.a = hdr.h.a + 1;",
        "hdr.h.b = (bit<8>) (bit<32>) istd.egress_port;",
    );
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    for round in 0..3u8 {
        for b in [2u8, 3, 7] {
            let (got, path) = twin.send(&frame(10 + round, b, round), 1);
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].0, u64::from(b));
            assert_eq!(got[0].1[14..16], [11 + round, b]);
            paths.push(path);
        }
    }
    common::assert_compiled_except(&paths, &[0, 1, 2]);
    let s = twin.dp.stats();
    assert_eq!((s.installs, s.compiled, s.uncacheable), (3, 3, 0), "{s:?}");
}

/// Ingress sets the class of service from the packet (`h.b`) and egress writes what it
/// receives as `istd.class_of_service` into `h.a`: the class is the traffic manager's input,
/// so the megaflow matches what it is computed from and each class is a compiled program of
/// its own; a packet of another class never takes the first one's program (p4c's
/// psa-unicast-or-drop writes the class into the packet the same way; a program compiled with
/// the first packet's class once sent every class that).
#[test]
fn the_class_of_service_reaches_egress_as_the_packet_sets_it() {
    let src = common::psa_passes(
        concat!(
            "send_to_port(ostd, (PortId_t) 2);",
            "ostd.class_of_service = (ClassOfService_t) (ClassOfServiceUint_t) hdr.h.b;"
        ),
        "hdr.h.a = (bit<8>) (ClassOfServiceUint_t) istd.class_of_service;",
    );
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    for round in 0..3u8 {
        for b in [2u8, 3] {
            let (got, path) = twin.send(&frame(9, b, round), 1);
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].1[14], b, "b {b}: the class the packet set");
            paths.push(path);
        }
    }
    // One megaflow per class: the first packet of each takes the slow path.
    common::assert_compiled_except(&paths, &[0, 1]);
    let s = twin.dp.stats();
    assert_eq!((s.installs, s.compiled, s.uncacheable), (2, 2, 0), "{s:?}");
}
