//! The cached datapath on a small program: megaflows are installed and hit, replay gives the
//! interpreter's outputs and counters on packets that differ outside the mask, a table write
//! is obeyed by the very next packet, and state-dependent runs are not cached.

mod common;

use koi_datapath::Datapath;
use koi_interp::Interpreter;
use koi_ir::{Bits, Pattern, Pipeline};
use koi_state::{ActionSpec, EntrySpec, ManualClock, State};

/// `fwd` matches the Ethernet destination: `to(port)` or, by default, `to(2)`; a counter
/// counts every packet by ingress port; `h` is decremented when present.
const INGRESS: &str = r#"
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets) seen;
    register<bit<8>>(1) last;
    action to(bit<9> port) { sm.egress_spec = port; }
    table fwd { key = { hdr.eth.dst: exact; } actions = { to; } default_action = to(2); }
    apply {
        seen.count((bit<32>) sm.ingress_port);
        fwd.apply();
        if (hdr.h.isValid()) {
            hdr.h.a = hdr.h.a - 1;
            last.write(0, hdr.h.b);
        }
    }
}
"#;

fn program() -> Pipeline {
    common::eth_h_program(common::ETH_H_PARSER, INGRESS)
}

/// An Ethernet frame to `dst` with EtherType 0x88b5, `h = (a, b)`, and `payload`.
fn frame(dst: u8, a: u8, b: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, dst, 0, 0, 0, 0, 0, 0xee, 0x88, 0xb5, a, b];
    f.extend_from_slice(payload);
    f
}

fn add_entry(state: &mut State, dst: u8, port: u64) {
    let spec = EntrySpec {
        keys: vec![Pattern::Exact(Bits::from_u64(48, u64::from(dst)))],
        action: ActionSpec::action("to", vec![Bits::from_u64(9, port)]),
        priority: None,
        timeout_ns: None,
    };
    state
        .table_add("fwd", spec)
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn hits_replay_the_interpreter_on_packets_differing_outside_the_mask() {
    let p = program();
    let mut dp = Datapath::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let mut interp = Interpreter::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let mut sd = State::new(&p).unwrap_or_else(|e| panic!("{e}"));
    add_entry(&mut sd, 7, 5);
    let mut si = sd.clone();
    let clock = ManualClock::new(0);
    // Same destination and EtherType: one megaflow; `h` and the payload vary.
    let packets = [
        frame(7, 10, 1, b"xyz"),
        frame(7, 20, 2, b""),
        frame(7, 30, 3, b"a longer payload"),
        frame(7, 40, 4, b"q"),
    ];
    for pkt in &packets {
        let a = interp.process(&mut si, pkt, 1, &clock);
        let b = dp.process(&mut sd, pkt, 1, &clock);
        assert_eq!(a, b);
        let out = b.unwrap_or_else(|e| panic!("{e}")).outputs;
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].port, 5);
        assert_eq!(out[0].bytes[14], pkt[14] - 1);
    }
    let s = dp.stats();
    assert_eq!((s.misses, s.installs), (1, 1), "{s:?}");
    assert_eq!(s.microflow_hits + s.megaflow_hits, 3, "{s:?}");
    assert_eq!(dp.megaflows(), 1);
    // The counter and the register were updated by every replay.
    assert_eq!(format!("{si:?}"), format!("{sd:?}"));
    let seen = sd
        .counter_read("I.seen", 1)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(seen.packets, 4);
    let last = sd
        .register_read("I.last", 0)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(last.to_u64(), Some(4));
    // Another destination is another megaflow.
    let b = dp.process(&mut sd, &frame(8, 1, 1, b""), 1, &clock);
    assert_eq!(b.map(|o| o.outputs[0].port).ok(), Some(2));
    assert_eq!(dp.stats().misses, 2);
}

#[test]
fn the_next_packet_after_a_table_write_follows_the_new_entry() {
    let p = program();
    let mut dp = Datapath::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let mut state = State::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(0);
    let pkt = frame(9, 1, 1, b"");
    let port = |dp: &mut Datapath<'_>, state: &mut State| {
        let o = dp.process(state, &pkt, 1, &clock);
        o.map(|o| o.outputs[0].port).ok()
    };
    // A miss, then a hit: the default action.
    assert_eq!(port(&mut dp, &mut state), Some(2));
    assert_eq!(port(&mut dp, &mut state), Some(2));
    assert_eq!(dp.stats().megaflow_hits + dp.stats().microflow_hits, 1);
    // The entry is written and the datapath told: the very next packet follows it.
    add_entry(&mut state, 9, 6);
    let t = state.table_id("fwd").unwrap_or_else(|e| panic!("{e}"));
    dp.on_table_write(t);
    assert_eq!(dp.stats().invalidated, 1);
    assert_eq!(port(&mut dp, &mut state), Some(6));
    assert_eq!(port(&mut dp, &mut state), Some(6));
    // Not telling it would forward by the stale megaflow: the cache is really in use.
    let spec = ActionSpec::action("to", vec![Bits::from_u64(9, 3)]);
    state
        .table_set_default("fwd", spec)
        .unwrap_or_else(|e| panic!("{e}"));
    let other = frame(10, 1, 1, b"");
    let o = dp.process(&mut state, &other, 1, &clock);
    assert_eq!(o.map(|o| o.outputs[0].port).ok(), Some(3));
    state
        .table_set_default("fwd", ActionSpec::action("to", vec![Bits::from_u64(9, 4)]))
        .unwrap_or_else(|e| panic!("{e}"));
    let o = dp.process(&mut state, &other, 1, &clock);
    assert_eq!(
        o.map(|o| o.outputs[0].port).ok(),
        Some(3),
        "stale without invalidation"
    );
    dp.on_table_write(t);
    let o = dp.process(&mut state, &other, 1, &clock);
    assert_eq!(o.map(|o| o.outputs[0].port).ok(), Some(4));
}

/// A change to one entry removes only the megaflows that hit it; a change to what misses the
/// table (a new entry of an exact table, the default action) only those that missed.
#[test]
fn entry_and_miss_writes_remove_only_the_megaflows_they_concern() {
    let p = program();
    let mut dp = Datapath::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let mut state = State::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(0);
    add_entry(&mut state, 1, 5);
    add_entry(&mut state, 2, 6);
    let t = state.table_id("fwd").unwrap_or_else(|e| panic!("{e}"));
    let port = |dp: &mut Datapath<'_>, state: &mut State, dst: u8| {
        let o = dp.process(state, &frame(dst, 1, 1, b""), 1, &clock);
        o.map(|o| o.outputs[0].port).ok()
    };
    for (dst, want) in [(1, 5), (2, 6), (3, 2)] {
        assert_eq!(port(&mut dp, &mut state, dst), Some(want));
    }
    assert_eq!(dp.megaflows(), 3);
    // Entry 0 (dst 1) gets another port: only its megaflow goes.
    let h = state.table("fwd").unwrap().entries().next().unwrap().handle;
    state
        .table_modify(
            "fwd",
            h,
            ActionSpec::action("to", vec![Bits::from_u64(9, 7)]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    dp.on_entry_write(t, h & 0xff_ffff);
    assert_eq!(dp.megaflows(), 2);
    assert_eq!(dp.stats().invalidated, 1);
    assert_eq!(port(&mut dp, &mut state, 1), Some(7));
    // A new entry for dst 3, which missed: only the miss's megaflow goes.
    add_entry(&mut state, 3, 4);
    dp.on_table_misses(t);
    assert_eq!(dp.stats().invalidated, 2);
    assert_eq!(port(&mut dp, &mut state, 3), Some(4));
    let misses = dp.stats().misses;
    assert_eq!(port(&mut dp, &mut state, 2), Some(6), "still cached");
    assert_eq!(dp.stats().misses, misses);
}

/// Ingress-to-egress and egress-to-egress clones (to a port and to a multicast group, with
/// a field list) are compiled: after the first packet, every packet of the flow is executed by
/// the compiled program, with the interpreter's outputs, in its order.
#[test]
fn clones_are_compiled_and_give_the_interpreters_outputs() {
    use koi_state::MirrorTarget;
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/stf/v1model/clone-i2e-e2e.p4");
    let p = common::compile_file(&file, None).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |sd| {
        sd.mirroring_add(5, MirrorTarget::Port(2))
            .unwrap_or_else(|e| panic!("{e}"));
        sd.pre.group_create(7).unwrap_or_else(|e| panic!("{e}"));
        let node = sd
            .pre
            .node_create(3, &[3, 4], &[])
            .unwrap_or_else(|e| panic!("{e}"));
        sd.pre.associate(7, node).unwrap_or_else(|e| panic!("{e}"));
        sd.mirroring_add(6, MirrorTarget::Group(7))
            .unwrap_or_else(|e| panic!("{e}"));
    });
    let mut paths = Vec::new();
    for (i, payload) in [&b"\xca\xfe"[..], b"", b"a longer payload", b"q"]
        .iter()
        .enumerate()
    {
        let mut pkt = vec![0u8, 0, 0, 0, 0, 0, i as u8, 0];
        pkt.extend_from_slice(payload);
        let (got, path) = twin.send(&pkt, 0);
        paths.push(path);
        // In queue order: the I2E clone (queued at the end of ingress, before the original),
        // the original, then the original's two E2E copies (ports 3 and 4).
        let ports: Vec<u64> = got.iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [2, 1, 3, 4], "packet {i}");
        // The I2E clone is the packet as it entered, with instance_type 1 and port 2.
        assert_eq!(got[0].1[..4], [1, 2, 0, 0]);
        assert_eq!(got[0].1[6..], pkt[6..]);
        // The E2E copies keep meta.x (field list) and have egress_rid 3.
        assert_eq!(got[2].1[..6], [2, 3, 3, 0xaa, 0xe0, 0x55]);
    }
    common::assert_compiled_except(&paths, &[0]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (1, 0, 0),
        "{s:?}"
    );
}

/// A uBPF program: `h.a` is decremented, the packet leaves on port `h.b`, or is dropped with
/// `mark_to_drop` when `h.b` is 0. Both outcomes are compiled; every hit gives the
/// interpreter's outputs and drops.
#[test]
fn ubpf_programs_are_compiled() {
    const UBPF: &str = r#"
#include <core.p4>
#define UBPF_MODEL_VERSION 20200515
#include <ubpf_model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata std) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout headers hdr, inout meta_t m, inout standard_metadata std) {
    apply {
        hdr.h.a = hdr.h.a - 1;
        if (hdr.h.b == 0) {
            mark_to_drop();
        } else {
            std.output_port = (bit<32>) hdr.h.b;
        }
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
ubpf(P(), C(), D()) main;
"#;
    let p = common::compile_str(UBPF).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    for b in [3u8, 0] {
        for a in [10u8, 20, 30] {
            let pkt = [a, b, 0xca, 0xfe];
            let (got, path) = twin.send(&pkt, 1);
            if b == 3 {
                assert_eq!(got, [(3, vec![a - 1, 3, 0xca, 0xfe])]);
            } else {
                assert!(
                    got.is_empty() && twin.drops.len() == 1,
                    "{got:?} {:?}",
                    twin.drops
                );
            }
            paths.push(path);
        }
    }
    common::assert_compiled_except(&paths, &[0, 3]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (2, 0, 0),
        "{s:?}"
    );
}

/// A uBPF parser that rejects (explicitly, by a failed `verify`, or by a `select` without
/// match) sends the packet out unchanged, without the pipeline: such paths are compiled too.
#[test]
fn ubpf_rejected_packets_are_compiled() {
    const UBPF: &str = r#"
#include <core.p4>
#define UBPF_MODEL_VERSION 20200515
#include <ubpf_model.p4>
header h_t { bit<8> t; bit<8> v; }
header g_t { bit<8> x; }
struct headers { h_t h; g_t g; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata std) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.v != 9, error.NoMatch);
        transition select(hdr.h.t) {
            1: more;
            2: reject;
        }
    }
    state more { pkt.extract(hdr.g); transition accept; }
}
control C(inout headers hdr, inout meta_t m, inout standard_metadata std) {
    apply {
        hdr.g.x = hdr.g.x + 1;
        std.output_port = 5;
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.g); } }
ubpf(P(), C(), D()) main;
"#;
    let p = common::compile_str(UBPF).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    // Accepted; rejected explicitly; by the verify; by a select without match.
    let packets: [(&[u8], u64, &[u8]); 4] = [
        (&[1, 0, 7, 0xee], 5, &[1, 0, 8, 0xee]),
        (&[2, 0, 7, 0xee], 0, &[2, 0, 7, 0xee]),
        (&[1, 9, 7, 0xee], 0, &[1, 9, 7, 0xee]),
        (&[3, 0, 7, 0xee], 0, &[3, 0, 7, 0xee]),
    ];
    for (pkt, port, out) in packets {
        for _ in 0..2 {
            let (got, path) = twin.send(pkt, 1);
            assert_eq!(got, [(port, out.to_vec())], "{pkt:?}");
            paths.push(path);
        }
    }
    common::assert_compiled_except(&paths, &[0, 2, 4, 6]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (4, 0, 0),
        "{s:?}"
    );
}

/// v1model `truncate` with a length read from the packet (not a decision, so one megaflow
/// serves every length) is compiled: the unicast copy is cut to the smallest length given,
/// multicast replicas are not cut (they do not inherit it), an egress `truncate` cuts its own
/// instance.
#[test]
fn truncate_is_compiled_per_instance() {
    const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; bit<8> m; bit<8> eg; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        truncate((bit<32>) hdr.h.n);
        truncate((bit<32>) hdr.h.m);
        if (hdr.h.eg == 1) {
            sm.mcast_grp = 5;
        } else {
            sm.egress_spec = 2;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_rid == 9) { truncate(4); }
    }
}
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let p = common::compile_str(PROG).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |sd| {
        sd.pre.group_create(5).unwrap_or_else(|e| panic!("{e}"));
        for (rid, port) in [(8, 3), (9, 4)] {
            let node = sd
                .pre
                .node_create(rid, &[port], &[])
                .unwrap_or_else(|e| panic!("{e}"));
            sd.pre.associate(5, node).unwrap_or_else(|e| panic!("{e}"));
        }
    });
    let payload = [0x10u8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17];
    let mut paths = Vec::new();
    for eg in [0u8, 1] {
        for (n, m) in [(5u8, 200u8), (200, 7), (2, 3), (0, 0)] {
            let mut pkt = vec![n, m, eg];
            pkt.extend_from_slice(&payload);
            let (got, path) = twin.send(&pkt, 1);
            let cut = usize::from(n.min(m)).min(pkt.len());
            if eg == 0 {
                assert_eq!(got, [(2, pkt[..cut].to_vec())]);
            } else {
                assert_eq!(got, [(3, pkt.clone()), (4, pkt[..4].to_vec())]);
            }
            paths.push(path);
        }
    }
    common::assert_compiled_except(&paths, &[0, 4]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (2, 0, 0),
        "{s:?}"
    );
}

/// uBPF's `csum_replace2` (an RFC 1624 incremental checksum update written by the program) is
/// compiled: one megaflow serves packets with different TTLs and checksums (right or wrong),
/// each updated exactly as the interpreter does.
#[test]
fn ubpf_incremental_checksum_is_compiled() {
    const UBPF: &str = r#"
#include <core.p4>
#define UBPF_MODEL_VERSION 20200515
#include <ubpf_model.p4>
header ip_t { bit<8> ttl; bit<8> proto; bit<16> csum; }
struct headers { ip_t ip; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata std) {
    state start { pkt.extract(hdr.ip); transition accept; }
}
control C(inout headers hdr, inout meta_t m, inout standard_metadata std) {
    apply {
        bit<16> old = hdr.ip.ttl ++ hdr.ip.proto;
        hdr.ip.ttl = hdr.ip.ttl - 1;
        hdr.ip.csum = csum_replace2(hdr.ip.csum, old, hdr.ip.ttl ++ hdr.ip.proto);
        std.output_port = 7;
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ip); } }
ubpf(P(), C(), D()) main;
"#;
    let p = common::compile_str(UBPF).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    for (ttl, proto, csum) in [
        (64u8, 6u8, 0x1234u16),
        (1, 17, 0xffff),
        (0, 0, 0),
        (200, 1, 0xabcd),
    ] {
        let c = csum.to_be_bytes();
        let pkt = [ttl, proto, c[0], c[1], 0xee];
        let (got, path) = twin.send(&pkt, 1);
        let new = koi_hash::ubpf::csum_replace2(
            csum,
            u16::from_be_bytes([ttl, proto]),
            u16::from_be_bytes([ttl.wrapping_sub(1), proto]),
        );
        assert_eq!(got[0].1[2..4], new.to_be_bytes());
        paths.push(path);
    }
    common::assert_compiled_except(&paths, &[0]);
    assert_eq!(twin.dp.stats().compile_mismatch, 0);
}

/// `update_checksum` and `verify_checksum` whose condition reads a field no decision reads
/// (so one megaflow holds packets where it is true and packets where it is false) are
/// compiled: the checksum is written only where the condition holds, `checksum_error` set
/// only where it holds and the checksum is wrong.
#[test]
fn checksums_with_varying_conditions_are_compiled() {
    const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> flag; bit<8> a; bit<16> csum; bit<8> err; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers hdr, inout meta_t m) {
    apply {
        verify_checksum(hdr.h.flag == 2, { hdr.h.a }, hdr.h.csum, HashAlgorithm.csum16);
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.h.err = (bit<8>) sm.checksum_error;
        hdr.h.a = hdr.h.a + 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) {
    apply {
        update_checksum(hdr.h.flag == 1, { hdr.h.a }, hdr.h.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let p = common::compile_str(PROG).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    let good = |a: u8| koi_hash::checksum::csum16(&[a]).to_be_bytes();
    let cases = [
        [0u8, 5, 0x12, 0x34, 0],
        [1, 5, 0x12, 0x34, 0],
        [2, 9, good(9)[0], good(9)[1], 0],
        [2, 9, 0x00, 0x01, 0],
        [1, 200, 0, 0, 0],
        [0, 7, 0xff, 0xff, 0],
    ];
    for pkt in cases {
        let (got, path) = twin.send(&pkt, 1);
        let out = &got[0].1;
        let a = pkt[1].wrapping_add(1);
        match pkt[0] {
            1 => assert_eq!(out[2..4], good(a), "{pkt:?}"),
            _ => assert_eq!(out[2..4], pkt[2..4], "{pkt:?}"),
        }
        let bad = pkt[0] == 2 && pkt[2..4] != good(pkt[1]);
        assert_eq!(out[4], u8::from(bad), "{pkt:?}");
        paths.push(path);
    }
    common::assert_compiled_except(&paths, &[0]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (1, 0, 0),
        "{s:?}"
    );
}

/// Header-stack elements read at an index taken from the packet (no decision reads it, so one
/// megaflow holds every index, in range or past the end) are compiled; a write's index is a
/// decision (the interpreter reports it), so each written element is its own megaflow.
#[test]
fn runtime_stack_indices_are_compiled() {
    const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
header i_t { bit<8> rd; bit<8> wr; bit<8> got; }
header e_t { bit<8> v; }
struct headers { i_t i; e_t[3] s; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.i);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.i.got = hdr.s[hdr.i.rd].v;
        hdr.s[hdr.i.wr].v = hdr.i.got + 0x10;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.i); pkt.emit(hdr.s); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let p = common::compile_str(PROG).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    for (rd, wr) in [(0u8, 1u8), (2, 1), (1, 1), (7, 1), (0, 9), (2, 9), (200, 9)] {
        let pkt = [rd, wr, 0, 0xa0, 0xa1, 0xa2, 0xff];
        let (got, path) = twin.send(&pkt, 1);
        let read = pkt
            .get(3 + usize::from(rd))
            .filter(|_| rd < 3)
            .copied()
            .unwrap_or(0);
        let mut expect = pkt.to_vec();
        expect[2] = read;
        if wr < 3 {
            expect[3 + usize::from(wr)] = read.wrapping_add(0x10);
        }
        assert_eq!(got, [(1, expect)], "packet {pkt:?}");
        paths.push(path);
    }
    common::assert_compiled_except(&paths, &[0, 4]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (2, 0, 0),
        "{s:?}"
    );
}

/// uBPF's `hash(result, lookup3, data)` over packet fields is compiled: one megaflow serves
/// every value, each hashed as the interpreter hashes it.
#[test]
fn ubpf_lookup3_hash_is_compiled() {
    const UBPF: &str = r#"
#include <core.p4>
#define UBPF_MODEL_VERSION 20200515
#include <ubpf_model.p4>
header h_t { bit<16> p; bit<8> q; bit<32> h; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata std) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout headers hdr, inout meta_t m, inout standard_metadata std) {
    apply {
        hash(hdr.h.h, HashAlgorithm.lookup3, { hdr.h.p, hdr.h.q });
        std.output_port = 1;
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
ubpf(P(), C(), D()) main;
"#;
    let p = common::compile_str(UBPF).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    for (pv, q) in [(1u16, 2u8), (0xbeef, 0), (0, 0xff), (80, 6)] {
        let mut pkt = pv.to_be_bytes().to_vec();
        pkt.extend_from_slice(&[q, 0, 0, 0, 0, 0x55]);
        let (got, path) = twin.send(&pkt, 1);
        let h = koi_hash::ubpf::hash(&[
            koi_hash::ubpf::Element {
                value: u64::from(pv),
                width: 16,
            },
            koi_hash::ubpf::Element {
                value: u64::from(q),
                width: 8,
            },
        ])
        .unwrap_or_else(|| panic!("hash"));
        assert_eq!(got[0].1[3..7], h.to_be_bytes(), "packet {pkt:?}");
        paths.push(path);
    }
    common::assert_compiled_except(&paths, &[0]);
    assert_eq!(twin.dp.stats().compile_mismatch, 0);
}

/// A learning switch's `digest` of unknown source addresses is compiled: the packets of a
/// flow from an unknown source stay on the fast path and send the same messages as the
/// interpreter, in the same order, with values (the EtherType here) the megaflow does not fix.
#[test]
fn digests_are_compiled() {
    const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers { eth_t eth; }
struct learn_t { bit<48> src; bit<16> type; bit<9> port; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action learn() { digest<learn_t>(1, { hdr.eth.src, hdr.eth.type, sm.ingress_port }); }
    action known() { }
    table smac { key = { hdr.eth.src: exact; } actions = { learn; known; } default_action = learn(); }
    apply { smac.apply(); sm.egress_spec = 2; }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let p = common::compile_str(PROG).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    for (ty, port) in [(0x88b5_u16, 1u64), (0x0800, 1), (0x1234, 3), (0x86dd, 1)] {
        let t = ty.to_be_bytes();
        let mut pkt = vec![0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0x0c, t[0], t[1]];
        pkt.extend_from_slice(b"data");
        let want = twin
            .interp
            .process(&mut twin.si, &pkt, port, &twin.clock)
            .unwrap_or_else(|e| panic!("{e}"));
        let got = twin
            .dp
            .process(&mut twin.sd, &pkt, port, &twin.clock)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.outputs, want.outputs);
        assert_eq!(got.report, want.report);
        let s = twin.dp.stats();
        paths.push((s.misses, s.compiled_hits));
    }
    let (a, b) = (twin.si.take_digests(), twin.sd.take_digests());
    assert_eq!(a.len(), 4);
    assert_eq!(a, b);
    assert_eq!(b[2].fields[0].1, Bits::from_u64(48, 0x0200_0000_000c));
    assert_eq!(b[2].fields[1].1, Bits::from_u64(16, 0x1234));
    assert_eq!(b[3].fields[1].1, Bits::from_u64(16, 0x86dd));
    assert_eq!(b[2].fields[2].1, Bits::from_u64(9, 3));
    // One megaflow (the EtherType and the port are only data): one miss, then compiled.
    assert_eq!(paths, [(1, 0), (1, 1), (1, 2), (1, 3)]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (1, 0, 0),
        "{s:?}"
    );
}

/// `random` values that only reach the packet (no decision reads them) are compiled: the
/// program draws them per packet from the interpreter's generator, so the values are those
/// the interpreter alone gives.
#[test]
fn random_values_are_drawn_per_packet_by_compiled_programs() {
    const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> lo; bit<8> hi; bit<8> r; bit<16> s; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        random(hdr.h.r, hdr.h.lo, hdr.h.hi);
        random(hdr.h.s, (bit<16>) 1000, (bit<16>) 2000);
        sm.egress_spec = 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let p = common::compile_str(PROG).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..40u8 {
        let (lo, hi) = (i, i.saturating_add(3 * i));
        let pkt = [lo, hi, 0, 0, 0, 0xee];
        let (got, path) = twin.send(&pkt, 1);
        let out = &got[0].1;
        assert!((lo..=hi).contains(&out[2]), "{out:?}");
        let sv = u16::from_be_bytes([out[3], out[4]]);
        assert!((1000..=2000).contains(&sv), "{out:?}");
        seen.insert(sv);
        paths.push(path);
    }
    // Really drawn per packet, not frozen into the program.
    assert!(seen.len() > 30, "{seen:?}");
    common::assert_compiled_except(&paths, &[0]);
    let s = twin.dp.stats();
    assert_eq!(
        (s.compiled, s.compile_mismatch, s.not_compiled),
        (1, 0, 0),
        "{s:?}"
    );
}

/// Packets too short for the parser (runts) are cached like other packets, for the lengths
/// at which their parse stops where it did: a runt's megaflow holds only for packets of its
/// parse that are as short (a longer one would have parsed on), and longer packets never
/// take it.
#[test]
fn runts_are_cached_for_the_lengths_they_stop_at() {
    use koi_datapath::PathTaken;
    let p = program();
    let mut t = common::Twin::new(&p, |s| add_entry(s, 9, 4));
    let compiled = |p: PathTaken| matches!(p, PathTaken::Compiled(_));
    let whole = frame(9, 1, 1, b"");
    assert_eq!(t.send(&whole, 1).1, PathTaken::Slow);
    // Too short for `h` (the EtherType says it follows): 14 and 15 bytes stop there.
    assert_eq!(t.send(&whole[..15], 1).1, PathTaken::Slow);
    assert!(compiled(t.send(&whole[..14], 1).1));
    assert!(compiled(t.send(&whole[..15], 1).1));
    // Too short for Ethernet: another stop, one megaflow for every length below 14.
    assert_eq!(t.send(&whole[..10], 1).1, PathTaken::Slow);
    for n in [1, 7, 13, 10] {
        assert!(compiled(t.send(&whole[..n], 1).1), "{n} bytes");
    }
    // Longer packets of the same headers keep their own megaflow.
    assert!(compiled(t.send(&whole, 1).1));
    assert!(compiled(t.send(&frame(9, 1, 1, b"xy"), 1).1));
    let s = t.dp.stats();
    assert_eq!((s.misses, s.installs, s.uncacheable), (3, 3, 0), "{s:?}");
    assert_eq!((s.compiled, s.compile_mismatch), (3, 0), "{s:?}");
    // The listing shows where each runt's parse stopped: 112 bits for Ethernet, 128 for `h`.
    let flows = t.dp.dump_flows(10).join("\n");
    assert_eq!(flows.matches("too_short_for_bit=").count(), 2, "{flows}");
    assert!(flows.contains("too_short_for_bit=112"), "{flows}");
    assert!(flows.contains("too_short_for_bit=128"), "{flows}");
}

/// Runts of new flows are admitted by the slow-path rate limit like other misses, so a flood
/// of them cannot take the interpreter away from everything else; cached flows keep being
/// forwarded.
#[test]
fn runts_of_new_flows_are_rate_limited_like_misses() {
    use koi_datapath::{DatapathConfig, PathTaken};
    let p = program();
    let config = || DatapathConfig {
        upcall_rate: 10,
        upcall_burst: 5,
        ..DatapathConfig::default()
    };
    let mut dp = Datapath::with_config(&p, koi_interp::Options::default(), config())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut state = State::new(&p).unwrap_or_else(|e| panic!("{e}"));
    // A megaflow per destination: each runt below is a new flow.
    for dst in 1..=40 {
        add_entry(&mut state, dst, 4);
    }
    let clock = ManualClock::new(0);
    let path = |dp: &mut Datapath<'_>, state: &mut State, pkt: &[u8]| {
        dp.process_with(state, pkt, 1, &clock, &mut |_, _| {})
            .map(|s| s.path)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let whole = frame(40, 1, 1, b"");
    assert_eq!(path(&mut dp, &mut state, &whole), PathTaken::Slow);
    // Too short for `h`.
    let runt = |dst: u8| frame(dst, 1, 1, b"")[..15].to_vec();
    let mut taken = Vec::new();
    for dst in 1..=20 {
        taken.push(path(&mut dp, &mut state, &runt(dst)));
        // The cached flow is still a compiled hit.
        assert!(matches!(
            path(&mut dp, &mut state, &whole),
            PathTaken::Compiled(_)
        ));
    }
    let slow = taken.iter().filter(|p| **p == PathTaken::Slow).count();
    assert_eq!(
        slow, 4,
        "the burst's tokens left after the first miss: {taken:?}"
    );
    assert_eq!(
        taken.iter().filter(|p| **p == PathTaken::Limited).count(),
        16
    );
    assert_eq!(dp.stats().upcalls_limited, 16);
    // A runt whose flow is cached is a hit, whatever the limit.
    assert!(matches!(
        path(&mut dp, &mut state, &runt(1)),
        PathTaken::Compiled(_)
    ));
    // Tokens come back with time.
    clock.advance_ns(1_000_000_000);
    assert_eq!(path(&mut dp, &mut state, &runt(30)), PathTaken::Slow);
    // The same in batches: 5 tokens for 32 new runts.
    let mut dp = Datapath::with_config(&p, koi_interp::Options::default(), config())
        .unwrap_or_else(|e| panic!("{e}"));
    let runts: Vec<Vec<u8>> = (1..=32).map(runt).collect();
    let batch: Vec<&[u8]> = runts.iter().map(Vec::as_slice).collect();
    let mut limited = 0;
    dp.process_batch(
        &mut state,
        &batch,
        1,
        &clock,
        &mut |_, _, _| {},
        &mut |_, s| limited += usize::from(s.is_ok_and(|s| s.path == PathTaken::Limited)),
    );
    assert_eq!(limited, 27);
}

/// A decision on a slice of a field (or on its width cast) depends on those bits only: the
/// run is cached, and packets that differ in the field's other bits share its megaflow.
#[test]
fn decisions_on_slices_match_only_their_bits() {
    let ingress = r#"
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.eth.src[7:0] == 1 || (bit<4>) hdr.eth.dst == 2) {
            sm.egress_spec = 3;
        }
    }
}
"#;
    let p = common::eth_h_program(common::ETH_H_PARSER, ingress);
    let mut t = common::Twin::new(&p, |_| {});
    let frame = |dst_hi: u8, dst: u8, src_hi: u8, src: u8| {
        vec![
            dst_hi, 0, 0, 0, 0, dst, src_hi, 0, 0, 0, 0, src, 0x88, 0xb5, 1, 2,
        ]
    };
    for (dst_hi, src_hi) in [(0, 0), (7, 0), (0, 9), (0xff, 0xff)] {
        let (out, _) = t.send(&frame(dst_hi, 0x13, src_hi, 1), 1);
        assert_eq!(out[0].0, 3);
        let (out, _) = t.send(&frame(dst_hi, 0x13, src_hi, 5), 1);
        assert_eq!(out[0].0, 0);
    }
    let s = t.dp.stats();
    assert_eq!(s.uncacheable, 0, "{s:?}");
    // One megaflow per value of the low source byte's test (the low destination bits decide
    // only when it fails), whatever the upper bits.
    assert_eq!(s.misses, 2, "{s:?}");
}

/// Deferring: a batch runs its hits and hands back, unprocessed, its misses and the packets
/// of flows that have a packet handed back before them (nothing sent for them, no state
/// touched); run later in order, every packet gets what the datapath alone gives it, and the
/// state ends the same.
#[test]
fn deferred_packets_run_later_get_what_the_datapath_alone_gives_them() {
    use koi_datapath::{Deferral, PathTaken};
    use std::cell::RefCell;
    use std::collections::HashSet;
    struct Pending(RefCell<HashSet<u64>>);
    impl Deferral for Pending {
        fn waits(&self, hash: u64) -> bool {
            self.0.borrow().contains(&hash)
        }
        fn defers_miss(&self) -> bool {
            true
        }
    }
    let p = program();
    let clock = ManualClock::new(0);
    let fresh = || {
        let mut state = State::new(&p).unwrap_or_else(|e| panic!("{e}"));
        for dst in 1..=4 {
            add_entry(&mut state, dst, u64::from(dst) + 2);
        }
        let dp = Datapath::new(&p).unwrap_or_else(|e| panic!("{e}"));
        (dp, state)
    };
    let warm = frame(1, 9, 1, b"");
    let batch = [
        frame(2, 9, 2, b""),
        frame(1, 8, 3, b""),
        frame(2, 7, 4, b""),
        frame(3, 9, 5, b""),
        frame(1, 6, 6, b""),
    ];
    // Alone: everything in order.
    let (mut dp, mut alone) = fresh();
    dp.process_with(&mut alone, &warm, 1, &clock, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let mut want: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); batch.len()];
    dp.process_batch(
        &mut alone,
        &batch,
        1,
        &clock,
        &mut |i, to, b| want[i].push((to, b.to_vec())),
        &mut |_, r| assert!(r.is_ok()),
    );
    // Deferring.
    let (mut dp, mut state) = fresh();
    dp.process_with(&mut state, &warm, 1, &clock, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let before = state
        .counter_read("I.seen", 1)
        .unwrap_or_else(|e| panic!("{e}"));
    let pending = Pending(RefCell::new(HashSet::new()));
    let mut got: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); batch.len()];
    let mut deferred = Vec::new();
    dp.process_batch_deferring(
        &mut state,
        &batch,
        1,
        &clock,
        None::<fn(*const u8)>,
        &pending,
        &mut |i, to, b| got[i].push((to, b.to_vec())),
        &mut |i, r| {
            if let Ok(s) = r
                && let PathTaken::Deferred(h) = s.path
            {
                pending.0.borrow_mut().extend(h);
                deferred.push(i);
            }
        },
    );
    // Flow 2's first packet misses, its second waits behind it, flow 3 misses; flow 1 hits.
    assert_eq!(deferred, [0, 2, 3]);
    assert!(deferred.iter().all(|&i| got[i].is_empty()));
    let after = state
        .counter_read("I.seen", 1)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after.packets, before.packets + 2, "only the hits counted");
    assert_eq!(dp.stats().deferred, 3);
    for &i in &deferred {
        let path = dp
            .process_with(&mut state, &batch[i], 1, &clock, &mut |to, b| {
                got[i].push((to, b.to_vec()))
            })
            .map(|s| s.path)
            .unwrap_or_else(|e| panic!("{e}"));
        let hit = matches!(path, PathTaken::Compiled(_));
        assert_eq!(hit, i == 2, "packet {i}: {path:?}");
    }
    assert_eq!(got, want);
    let seen = |s: &State| {
        s.counter_read("I.seen", 1)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(seen(&alone), seen(&state));
    // Packets of different flows ran in another order: `last` holds the `b` of the last
    // packet run, flow 3's (5) here, packet 4's (6) alone.
    let last = |s: &State| s.register_read("I.last", 0).ok().map(|b| b.low_u64());
    assert_eq!((last(&alone), last(&state)), (Some(6), Some(5)));
    assert_eq!(dp.stats().packets, 1 + batch.len() as u64);
}

/// A branch on `ingress_global_timestamp` (state the architecture writes, no statement) is a
/// guard of the compiled program, taken per packet: a packet of the same flow at another time
/// takes the other way (it once took the recorded way, whatever the time).
#[test]
fn decisions_on_timestamps_are_guarded() {
    const TIMED: &str = r#"
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_global_timestamp > 1000) { sm.egress_spec = 3; } else { sm.egress_spec = 4; }
    }
}
"#;
    let p = common::eth_h_program(common::ETH_H_PARSER, TIMED);
    let mut twin = common::Twin::new(&p, |_| {});
    let pkt = frame(1, 1, 2, b"");
    let mut paths = Vec::new();
    for (t, port) in [(0u64, 4), (5_000_000, 3), (0, 4), (5_000_000, 3)] {
        twin.clock.set_ns(t);
        let (got, path) = twin.send(&pkt, 1);
        assert_eq!(got.len(), 1, "at {t} ns: {got:?}");
        assert_eq!(got[0].0, port, "at {t} ns");
        paths.push(path);
    }
    // The first packet and the first at the other time (its guard failed: a new arm) are
    // slow-path runs; then each way's arm applies.
    common::assert_compiled_except(&paths, &[0, 1]);
    assert_eq!(twin.dp.stats().uncacheable, 0);
}
