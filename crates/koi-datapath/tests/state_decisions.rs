//! Decisions on state (register values, meter colours, `random`, a table keyed by a
//! register value) are run per packet by the compiled programs: each program carries guards,
//! the way its run took at each such decision, and a packet whose guards fail tries the
//! megaflow's other programs (arms), then takes the slow path, whose run becomes one more
//! arm. Every packet must give the interpreter's outputs and leave the interpreter's state
//! (register values, meter buckets, counters, the generator's draws), also when a guard
//! fails after the program updated registers and meters (the updates are undone).

mod common;

use common::{Rng, Twin, compile_str};
use koi_datapath::{DatapathStats, PathTaken};
use koi_state::meter::MeterRate;

const PRELUDE: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers { eth_t eth; }
struct meta_t { bit<32> v; bit<8> color; bit<8> r; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); } }
"#;

/// The program with ingress `ingress`.
fn program(ingress: &str) -> String {
    format!("{PRELUDE}\n{ingress}\nV1Switch(P(), V(), I(), E(), C(), D()) main;\n")
}

/// An Ethernet frame to `dst` from `src` with 8 bytes of payload.
fn frame(dst: u8, src: u8) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, dst, 0, 0, 0, 0, 0, src, 0x88, 0xb5];
    f.extend([0xab; 8]);
    f
}

/// Asserts the two states are the same (registers, meters, counters, tables).
fn same_state(twin: &Twin<'_>) {
    assert_eq!(format!("{:?}", twin.sd), format!("{:?}", twin.si));
}

/// A two-rate meter's rates: committed and peak, each tokens per microsecond and a burst.
fn rates(committed: f64, cburst: u64, peak: f64, pburst: u64) -> [MeterRate; 2] {
    [
        MeterRate {
            rate: committed,
            burst: cburst,
        },
        MeterRate {
            rate: peak,
            burst: pburst,
        },
    ]
}

fn compiled(p: PathTaken) -> bool {
    matches!(p, PathTaken::Compiled(_))
}

fn check(s: &DatapathStats) {
    assert_eq!(s.compile_mismatch, 0, "{s:?}");
    assert_eq!(s.not_compiled, 0, "no megaflow replays: {s:?}");
    assert_eq!(s.uncacheable, 0, "{s:?}");
}

/// A per-source packet counter in a register; past three packets a source is dropped.
const THRESHOLD: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(256) seen;
    apply {
        seen.read(m.v, (bit<32>) hdr.eth.src[7:0]);
        m.v = m.v + 1;
        seen.write((bit<32>) hdr.eth.src[7:0], m.v);
        if (m.v > 3) {
            mark_to_drop(sm);
        } else {
            sm.egress_spec = 1;
            hdr.eth.type = (bit<16>) m.v;
        }
    }
}
"#;

#[test]
fn a_decision_on_a_register_value_runs_per_packet() {
    let p = compile_str(&program(THRESHOLD)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    let mut paths = Vec::new();
    for i in 0..6u8 {
        let (out, path) = twin.send(&frame(1, 7), 0);
        paths.push(path);
        if i < 3 {
            assert_eq!(out.len(), 1, "packet {i}");
            assert_eq!(out[0].1[12..14], [0, i + 1], "the count reached the packet");
        } else {
            assert!(out.is_empty(), "packet {i} is over the threshold");
        }
    }
    // The first packet installs the forwarding arm; the fourth fails its guard (its write is
    // undone) and adds the dropping arm; the others run compiled.
    assert_eq!(paths[0], PathTaken::Slow, "{paths:?}");
    assert_eq!(paths[3], PathTaken::Slow, "{paths:?}");
    for i in [1, 2, 4, 5] {
        assert!(compiled(paths[i]), "packet {i}: {paths:?}");
    }
    same_state(&twin);
    assert_eq!(
        twin.sd.register_read("I.seen", 7).map(|b| b.low_u64()).ok(),
        Some(6),
        "each packet counted once"
    );
    // Another source: its own counter, the same megaflow (the source is not in the mask:
    // the register index is computed per packet), the same two arms.
    let before = twin.dp.stats();
    for _ in 0..5 {
        twin.send(&frame(1, 9), 0);
    }
    let s = twin.dp.stats();
    assert_eq!(s.misses, before.misses, "{s:?}");
    assert_eq!(twin.dp.megaflows(), 1);
    same_state(&twin);
    check(&s);
}

/// A policer: an indexed packet meter per source; red is dropped, yellow is marked.
const POLICER: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    meter(16, MeterType.packets) police;
    apply {
        police.execute_meter((bit<32>) hdr.eth.src[3:0], m.color);
        if (m.color == V1MODEL_METER_COLOR_RED) {
            mark_to_drop(sm);
        } else {
            sm.egress_spec = 1;
            if (m.color == V1MODEL_METER_COLOR_YELLOW) {
                hdr.eth.type = 0xffff;
            }
        }
    }
}
"#;

#[test]
fn meter_colours_are_decided_per_packet_by_compiled_programs() {
    let p = compile_str(&program(POLICER)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |s| {
        // 1 packet per millisecond committed, 2 peak; bursts of 4 and 8.
        let rates = rates(0.001, 4, 0.002, 8);
        s.meter_set_rates("I.police", None, &rates)
            .unwrap_or_else(|e| panic!("{e}"));
    });
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut green, mut yellow, mut red) = (0, 0, 0);
    for _ in 0..3000 {
        let r = rng.next();
        // Bursts and gaps: most packets 10-160 us apart, some 5 ms.
        let gap = if r.is_multiple_of(50) {
            5_000_000
        } else {
            10_000 + (r >> 8) % 150_000
        };
        twin.clock.advance_ns(gap);
        let (out, _) = twin.send(&frame(1, (r >> 32) as u8 % 3), 0);
        match out.first() {
            None => red += 1,
            Some((_, b)) if b[12..14] == [0xff, 0xff] => yellow += 1,
            Some(_) => green += 1,
        }
    }
    assert!(
        green > 100 && yellow > 100 && red > 100,
        "{green} {yellow} {red}"
    );
    same_state(&twin);
    let s = twin.dp.stats();
    check(&s);
    // One megaflow; an arm per colour.
    assert_eq!(twin.dp.megaflows(), 1);
    assert_eq!(s.misses, 3, "{s:?}");
    assert_eq!(s.compiled_hits, 2997, "{s:?}");
}

/// Sampling: one packet in four (on average) goes to port 2 as well.
const SAMPLER: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        random(m.r, 0, 3);
        if (m.r == 0) {
            sm.mcast_grp = 1;
        } else {
            sm.egress_spec = 1;
        }
    }
}
"#;

#[test]
fn decisions_on_random_values_are_drawn_per_packet() {
    let p = compile_str(&program(SAMPLER)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |s| {
        s.pre.group_create(1).unwrap_or_else(|e| panic!("{e}"));
        let node = s
            .pre
            .node_create(1, &[1, 2], &[])
            .unwrap_or_else(|e| panic!("{e}"));
        s.pre.associate(1, node).unwrap_or_else(|e| panic!("{e}"));
    });
    let mut sampled = 0;
    for i in 0..2000u32 {
        let (out, _) = twin.send(&frame(1, i as u8), 0);
        sampled += usize::from(out.len() == 2);
    }
    // The twin asserted every packet's outputs: the datapath drew the interpreter's values,
    // also after guards failed (their draws are taken back).
    assert!((350..650).contains(&sampled), "{sampled}");
    let s = twin.dp.stats();
    check(&s);
    assert_eq!(s.misses, 2, "{s:?}");
    assert_eq!(s.compiled_hits, 1998, "{s:?}");
}

/// `random` only for frames to 0x..ff: the egress port is written from a random value on
/// that path only, from the destination on the other (with a parser decision and a
/// recirculation that never happens here, so that later passes could see state). Frames that
/// do not draw must be cached as data-only flows; frames that draw must draw per packet.
/// (`crates/koi/tests/appswitch.rs` has a program whose frames were all uncacheable before a
/// run that draws nothing was taken as holding no state-derived value.)
const RANDOM_ON_ONE_PATH: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<16> v; }
struct headers { eth_t eth; tag_t tag; }
struct meta_t { bit<8> r; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x88b5: tag;
            default: accept;
        }
    }
    state tag { pkt.extract(hdr.tag); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action send(bit<9> port) { sm.egress_spec = port; }
    apply {
        if (hdr.eth.dst[7:0] == 0xff) {
            random(m.r, 1, 4);
            send((bit<9>) m.r);
        } else {
            send((bit<9>) hdr.eth.dst[1:0]);
        }
        if (hdr.tag.v == 7) {
            recirculate_preserving_field_list(0);
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn random_on_a_path_not_taken_leaves_the_flow_cacheable() {
    let p = compile_str(RANDOM_ON_ONE_PATH).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    // Frames that never draw: cached like any data-only flow (one megaflow per port bits).
    for i in 0..400u32 {
        let (out, _) = twin.send(&frame((i % 4) as u8, i as u8), 0);
        assert_eq!(out.first().map(|o| o.0), Some(u64::from(i % 4)));
    }
    let s = twin.dp.stats();
    assert_eq!((s.uncacheable, s.compile_mismatch), (0, 0), "{s:?}");
    assert_eq!(s.misses, 4, "{s:?}");
    assert_eq!(s.installs, 4, "{s:?}");
    // Frames that draw: each takes a random port, as the interpreter draws it (the twin
    // checks every output), decided per packet.
    let mut ports = std::collections::BTreeSet::new();
    for i in 0..400u32 {
        let (out, _) = twin.send(&frame(0xff, i as u8), 0);
        ports.extend(out.first().map(|o| o.0));
    }
    assert_eq!(ports.into_iter().collect::<Vec<_>>(), [1, 2, 3, 4]);
    same_state(&twin);
}

/// A table keyed by a register value (a round-robin over four next hops).
const ROUND_ROBIN: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(1) next;
    action to(bit<9> port) { sm.egress_spec = port; }
    table hop {
        key = { m.v: exact; }
        actions = { to; NoAction; }
        const entries = { 0: to(1); 1: to(2); 2: to(3); }
        default_action = NoAction();
    }
    apply {
        next.read(m.v, 0);
        next.write(0, (m.v + 1) & 3);
        hop.apply();
        if (sm.egress_spec == 0) { mark_to_drop(sm); }
    }
}
"#;

#[test]
fn a_table_keyed_by_a_register_value_is_guarded_per_key() {
    let p = compile_str(&program(ROUND_ROBIN)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    let mut ports = Vec::new();
    for i in 0..400u32 {
        let (out, _) = twin.send(&frame(1, i as u8), 0);
        ports.push(out.first().map_or(0, |o| o.0));
    }
    assert_eq!(ports[..8], [1, 2, 3, 0, 1, 2, 3, 0]);
    same_state(&twin);
    let s = twin.dp.stats();
    check(&s);
    // An arm per register value.
    assert_eq!(s.misses, 4, "{s:?}");
    assert_eq!(s.compiled_hits, 396, "{s:?}");
    // The dump shows the guards and the arms.
    let dump = twin.dp.dump_flows(10).join("");
    assert!(dump.contains("guard"), "{dump}");
    assert!(dump.contains("arm 3"), "{dump}");
}

/// A table write still removes a guarded megaflow with all its arms.
#[test]
fn a_table_write_removes_a_guarded_megaflow() {
    let src = ROUND_ROBIN.replace("const entries", "entries");
    let p = compile_str(&program(&src)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    for i in 0..8u8 {
        twin.send(&frame(1, i), 0);
    }
    assert_eq!(twin.dp.megaflows(), 1);
    let table = p
        .tables
        .iter()
        .find(|(_, t)| t.preamble.name == "I.hop")
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no table"));
    twin.dp.on_table_write(table);
    assert_eq!(twin.dp.megaflows(), 0);
}

/// A direct meter's colour (per table entry) decides: its execution is undone too when a
/// guard fails.
const DIRECT: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) dm;
    action fwd(bit<9> port) { sm.egress_spec = port; dm.read(m.color); }
    table t {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; NoAction; }
        meters = dm;
        default_action = NoAction();
    }
    apply {
        t.apply();
        if (m.color == V1MODEL_METER_COLOR_RED) { mark_to_drop(sm); }
    }
}
"#;

#[test]
fn direct_meter_colours_are_decided_per_packet() {
    use koi_ir::{Bits, Pattern};
    use koi_state::{ActionSpec, EntrySpec};
    let p = compile_str(&program(DIRECT)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |s| {
        for (dst, port) in [(1u64, 1u64), (2, 2)] {
            let spec = EntrySpec {
                keys: vec![Pattern::Exact(Bits::from_u64(48, dst))],
                action: ActionSpec::action("fwd", vec![Bits::from_u64(9, port)]),
                priority: None,
                timeout_ns: None,
            };
            let h = s.table_add("t", spec).unwrap_or_else(|e| panic!("{e}"));
            let rates = rates(0.001, 2, 0.002, 4);
            s.meter_set_rates("I.dm", Some(u64::from(h)), &rates)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    });
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut dropped = 0;
    for _ in 0..2000 {
        let r = rng.next();
        twin.clock.advance_ns(20_000 + r % 200_000);
        let (out, _) = twin.send(&frame(1 + (r >> 40) as u8 % 2, 3), 0);
        dropped += usize::from(out.is_empty());
    }
    assert!((100..1900).contains(&dropped), "{dropped}");
    same_state(&twin);
    let s = twin.dp.stats();
    check(&s);
    // Per destination (an entry each), an arm per way of the colour decision.
    assert_eq!(s.misses, 4, "{s:?}");
}

/// Over the threshold, the program applies a table on the destination, which it does not
/// look at below it: that arm's run depends on key bits beyond the megaflow's mask, so it
/// applies only to packets with its destination (an arm per destination, up to the limit;
/// the packets of destinations beyond it take the slow path, uncached).
const THEN_ROUTE: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(1) seen;
    action to(bit<9> port) { sm.egress_spec = port; }
    table route {
        key = { hdr.eth.dst: exact; }
        actions = { to; NoAction; }
        const entries = {
            1: to(5); 2: to(6); 11: to(11); 12: to(12); 13: to(13); 14: to(14); 15: to(15);
            16: to(16); 17: to(17); 18: to(18); 19: to(19); 20: to(20);
        }
        default_action = to(7);
    }
    apply {
        seen.read(m.v, 0);
        seen.write(0, m.v + 1);
        if (m.v < 2) {
            sm.egress_spec = 1;
        } else {
            route.apply();
        }
    }
}
"#;

#[test]
fn an_arm_that_depends_on_more_key_bits_applies_only_to_them() {
    let p = compile_str(&program(THEN_ROUTE)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    let mut ports = Vec::new();
    for dst in [1u8, 2, 1, 2, 1, 2, 3, 1, 2, 3] {
        let (out, _) = twin.send(&frame(dst, 3), 0);
        ports.push(out[0].0);
    }
    assert_eq!(ports, [1, 1, 5, 6, 5, 6, 7, 5, 6, 7]);
    same_state(&twin);
    let s = twin.dp.stats();
    check(&s);
    assert_eq!(twin.dp.megaflows(), 1);
    // The first arm, then one per destination over the threshold.
    assert_eq!(s.misses, 4, "{s:?}");
    // The dump shows what each arm matches beyond the megaflow.
    let dump = twin.dp.dump_flows(10).join("");
    assert!(
        dump.contains("else (arm 1, where hdr.eth.dst=0x1"),
        "{dump}"
    );
    assert!(
        dump.contains("else (arm 2, where hdr.eth.dst=0x2"),
        "{dump}"
    );
    // Past the arm limit, packets are still right (the twin checks each), only not cached.
    for dst in 11..=20u8 {
        let (out, _) = twin.send(&frame(dst, 3), 0);
        assert_eq!(out[0].0, u64::from(dst));
        let (out, _) = twin.send(&frame(dst, 3), 0);
        assert_eq!(out[0].0, u64::from(dst));
    }
    same_state(&twin);
    let s = twin.dp.stats();
    assert_eq!(s.compile_mismatch, 0, "{s:?}");
    assert_eq!(
        s.misses,
        4 + 4 + 2 * 6,
        "4 more arms, then each packet: {s:?}"
    );
    assert_eq!(s.uncacheable, 2 * 6, "{s:?}");
}

/// The egress port read from a register (a round-robin over ports 1-3, and the drop port
/// while a register says so): the port is guarded, an arm per port.
const PORT_FROM_REGISTER: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<9>>(1) rr;
    register<bit<9>>(1) down;
    apply {
        bit<9> p;
        rr.read(p, 0);
        rr.write(0, p == 3 ? 9w1 : p + 1);
        bit<9> d;
        down.read(d, 0);
        sm.egress_spec = d == 0 ? p : d;
    }
}
"#;

#[test]
fn an_egress_port_from_a_register_is_guarded_per_port() {
    let p = compile_str(&program(PORT_FROM_REGISTER)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    let mut ports = Vec::new();
    for i in 0..300u32 {
        let (out, _) = twin.send(&frame(1, i as u8), 0);
        ports.push(out.first().map(|o| o.0));
    }
    assert_eq!(ports[..5], [Some(0), Some(1), Some(2), Some(3), Some(1)]);
    let s = twin.dp.stats();
    check(&s);
    assert_eq!(s.misses, 4, "{s:?}");
    assert_eq!(s.compiled_hits, 296, "{s:?}");
    // The control plane sets the drop port: one more arm, every packet dropped.
    for st in [&mut twin.sd, &mut twin.si] {
        st.register_write("I.down", 0, &koi_ir::Bits::from_u64(9, 511))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    for i in 0..50u32 {
        let (out, _) = twin.send(&frame(1, i as u8), 0);
        assert!(out.is_empty());
    }
    same_state(&twin);
    let s = twin.dp.stats();
    check(&s);
    assert_eq!(s.misses, 5, "{s:?}");
}

/// What the property test does between packets.
#[derive(Clone, Debug)]
enum Op {
    /// A frame to `dst` from `src`, `gap` microseconds after the last event.
    Packet { dst: u8, src: u8, gap: u64 },
    /// The control plane writes `value` at `index` of the program's register `reg`.
    RegWrite { reg: usize, index: u64, value: u64 },
    /// The control plane sets every cell of the program's meters to these rates (tokens
    /// per microsecond, committed then peak; bursts of 3 and 6 tokens).
    Rates { committed: f64, peak: f64 },
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        8 => (0u8..4, 0u8..4, 0u64..1500).prop_map(|(dst, src, gap)| Op::Packet { dst, src, gap }),
        1 => (0usize..2, 0u64..4, 0u64..5).prop_map(|(reg, index, value)| Op::RegWrite { reg, index, value }),
        1 => (1u32..20, 1u32..20).prop_map(|(c, p)| Op::Rates {
            committed: f64::from(c) / 10_000.0,
            peak: f64::from(c + p) / 10_000.0,
        }),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Random traffic, time gaps and control-plane writes to the registers and meters the
    /// decisions read, through each of the programs above: every packet's outputs and drops,
    /// and the final state, are the interpreter's (guards that fail after the program wrote
    /// registers and executed meters included).
    #[test]
    fn random_traffic_and_state_writes_give_the_interpreters_results(
        which in 0usize..6,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let (src, regs): (&str, &[&str]) = match which {
            0 => (THRESHOLD, &["I.seen"]),
            1 => (POLICER, &[]),
            2 => (ROUND_ROBIN, &["I.next"]),
            3 => (PORT_FROM_REGISTER, &["I.rr", "I.down"]),
            4 => (THEN_ROUTE, &["I.seen"]),
            _ => (DIRECT, &[]),
        };
        let p = compile_str(&program(src)).unwrap_or_else(|e| panic!("{e}"));
        let initial = rates(0.001, 3, 0.002, 6);
        let mut twin = Twin::new(&p, |s| {
            if which == 1 {
                s.meter_set_rates("I.police", None, &initial).unwrap_or_else(|e| panic!("{e}"));
            }
            if which == 5 {
                use koi_ir::{Bits, Pattern};
                use koi_state::{ActionSpec, EntrySpec};
                for dst in 1u64..3 {
                    let spec = EntrySpec {
                        keys: vec![Pattern::Exact(Bits::from_u64(48, dst))],
                        action: ActionSpec::action("fwd", vec![Bits::from_u64(9, dst)]),
                        priority: None,
                        timeout_ns: None,
                    };
                    let h = s.table_add("t", spec).unwrap_or_else(|e| panic!("{e}"));
                    s.meter_set_rates("I.dm", Some(u64::from(h)), &initial)
                        .unwrap_or_else(|e| panic!("{e}"));
                }
            }
        });
        for op in ops {
            match op {
                Op::Packet { dst, src, gap } => {
                    twin.clock.advance_ns(gap * 1000);
                    twin.send(&frame(dst, src), 0);
                }
                Op::RegWrite { reg, index, value } => {
                    let Some(name) = regs.get(reg) else { continue };
                    for st in [&mut twin.sd, &mut twin.si] {
                        let w = st.register_read(name, 0).map_or(32, |b| b.width());
                        let _ = st.register_write(name, index, &koi_ir::Bits::from_u64(w, value));
                    }
                }
                Op::Rates { committed, peak } => {
                    let rates = rates(committed, 3, peak, 6);
                    for st in [&mut twin.sd, &mut twin.si] {
                        match which {
                            1 => st.meter_set_rates("I.police", None, &rates),
                            5 => (0..2).try_for_each(|h| st.meter_set_rates("I.dm", Some(h), &rates)),
                            _ => Ok(()),
                        }
                        .unwrap_or_else(|e| panic!("{e}"));
                    }
                }
            }
        }
        same_state(&twin);
        let s = twin.dp.stats();
        proptest::prop_assert_eq!(s.compile_mismatch, 0);
        proptest::prop_assert_eq!(s.not_compiled, 0);
    }
}

/// Timestamps and the packet's length are per-packet inputs the compiled program reads:
/// written into the packet (as in-band telemetry does), and decided on (a new flowlet when
/// the gap since the flow's last packet exceeds 1 ms, as flowlet switching does).
const TIMES: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<48>>(256) last;
    apply {
        bit<48> seen;
        last.read(seen, (bit<32>) hdr.eth.src[7:0]);
        last.write((bit<32>) hdr.eth.src[7:0], sm.ingress_global_timestamp);
        if (sm.ingress_global_timestamp - seen > 1000) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
        hdr.eth.dst = sm.ingress_global_timestamp;
        hdr.eth.type = (bit<16>) sm.packet_length;
    }
}
"#;

/// The same in egress: the egress timestamp and the time queued.
const EGRESS_TIMES: &str = r#"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 3; }
}
"#;

#[test]
fn timestamps_and_lengths_are_read_per_packet() {
    let p = compile_str(&program(TIMES)).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut ports = [0usize; 3];
    for i in 0..600u32 {
        let r = rng.next();
        twin.clock.advance_ns(100_000 + r % 1_500_000);
        let mut f = frame(1, (r >> 32) as u8 % 4);
        f.extend(std::iter::repeat_n(0x77, (r >> 40) as usize % 30));
        let (out, _) = twin.send(&f, 0);
        assert_eq!(out.len(), 1, "packet {i}");
        ports[out[0].0 as usize] += 1;
        let b = &out[0].1;
        assert_eq!(
            u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]]),
            koi_state::Clock::now_ns(&twin.clock) / 1000,
            "the timestamp in the packet"
        );
        assert_eq!(usize::from(u16::from_be_bytes([b[12], b[13]])), f.len());
    }
    assert!(ports[1] > 50 && ports[2] > 50, "{ports:?}");
    same_state(&twin);
    let s = twin.dp.stats();
    check(&s);
    // One megaflow: an arm per way of the flowlet decision.
    assert_eq!(s.misses, 2, "{s:?}");
    // In egress.
    let src = program(EGRESS_TIMES).replace(
        "control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }",
        "control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
            apply {
                hdr.eth.src = sm.egress_global_timestamp + (bit<48>) sm.deq_timedelta;
                if (sm.enq_timestamp != (bit<32>) sm.egress_global_timestamp) { mark_to_drop(sm); }
            }
        }",
    );
    assert!(src.contains("deq_timedelta"));
    let p = compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |_| {});
    for i in 0..50u8 {
        twin.clock.advance_ns(123_456);
        let (out, path) = twin.send(&frame(1, i), 0);
        assert_eq!(out.len(), 1);
        if i > 0 {
            assert!(compiled(path), "{path:?}");
        }
    }
    check(&twin.dp.stats());
}
