//! The same forwarding written as a POF configuration and as a P4 program gives the same
//! output packets, over random packets: L2 by destination MAC; L3 by longest prefix with the
//! TTL decremented, the MAC rewritten and the IPv4 checksum computed again; a tunnel encap by
//! `add_field`. Each packet goes through the reference interpreter and the cached datapath of
//! both pipelines (the datapaths keep their caches from packet to packet, so later packets
//! are served from the megaflows earlier ones installed); all four must send the same packets
//! to the same ports.

use koi_interp::{Interpreter, Output};
use koi_state::{ManualClock, State};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestRunner};
use std::cell::RefCell;

const V1: &str = "#include <core.p4>\n#include <v1model.p4>\n";

const L2_POF: &str = "
protocol ethernet { field dst 0 48 field src 48 48 field type 96 16 }
table l2 exact size 16 { key ethernet.dst }
entry l2 1 match 00:00:00:00:00:01 { output 1 }
entry l2 2 match 00:00:00:00:00:02 { output 2 }
entry l2 3 match ff:ff:ff:ff:ff:ff { output 3 }
";

// POF reads only the bytes its fields cover (a packet of 6 bytes has a destination MAC), so
// the P4 program extracts just the destination.
const L2_P4: &str = "
header ethernet_t { bit<48> dst; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser P(packet_in pk, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); transition accept; }
}
control V(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop_() { mark_to_drop(sm); }
    table l2 {
        key = { h.eth.dst : exact; }
        actions = { fwd; drop_; }
        default_action = drop_();
        const entries = {
            0x000000000001 : fwd(1);
            0x000000000002 : fwd(2);
            0xffffffffffff : fwd(3);
        }
    }
    apply { if (h.eth.isValid()) { l2.apply(); } else { drop_(); } }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t h) { apply { pk.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
";

const L3_POF: &str = "
protocol ethernet { field dst 0 48 field src 48 48 field type 96 16 }
protocol ipv4 { field ttl 64 8 field checksum 80 16 field dst 128 32 }
table eth exact size 4 { key ethernet.type }
table route lpm size 16 { key ipv4.dst }
entry eth 1 match 0x0800 { goto route shift 112 }
entry route 1 match 10.0.0.0/8 {
  set_field ethernet.dst@0 00:00:00:00:0a:0a
  modify_field ipv4.ttl -1
  calculate_checksum ipv4.checksum 0 160
  output 1
}
entry route 2 match 10.1.2.0/24 {
  set_field ethernet.dst@0 00:00:00:00:0b:0b
  modify_field ipv4.ttl -1
  calculate_checksum ipv4.checksum 0 160
  output 2
}
entry route 3 match 192.168.1.1/32 { drop }
";

const L3_P4: &str = "
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
struct headers_t { ethernet_t eth; ipv4_t ip; }
struct meta_t { }
parser P(packet_in pk, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pk.extract(h.eth);
        transition select(h.eth.type) { 0x0800: ip; default: accept; }
    }
    state ip { pk.extract(h.ip); transition accept; }
}
control V(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action route(bit<48> mac, bit<9> port) {
        h.eth.dst = mac;
        h.ip.ttl = h.ip.ttl - 1;
        sm.egress_spec = port;
    }
    action drop_() { mark_to_drop(sm); }
    table lpm {
        key = { h.ip.dst : lpm; }
        actions = { route; drop_; }
        default_action = drop_();
        const entries = {
            0x0a000000 &&& 0xff000000 : route(0x00000000a0a, 1);
            0x0a010200 &&& 0xffffff00 : route(0x00000000b0b, 2);
            0xc0a80101 &&& 0xffffffff : drop_();
        }
    }
    apply { mark_to_drop(sm); if (h.ip.isValid()) { lpm.apply(); } }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) {
    apply {
        update_checksum(h.ip.isValid(), { h.ip.version, h.ip.ihl, h.ip.tos,
            h.ip.len, h.ip.id, h.ip.flags, h.ip.frag, h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst },
            h.ip.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pk, in headers_t h) { apply { pk.emit(h.eth); pk.emit(h.ip); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
";

const ENCAP_POF: &str = "
protocol ethernet { field dst 0 48 field src 48 48 field type 96 16 }
table eth exact size 4 { key ethernet.type }
entry eth 1 match 0x0800 { add_field 0 112 0x02000000000102000000000288b5 output 2 }
entry eth 2 match 0x0806 { output 1 }
";

const ENCAP_P4: &str = "
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_t outer; ethernet_t eth; }
struct meta_t { }
parser P(packet_in pk, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); transition accept; }
}
control V(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        mark_to_drop(sm);
        if (h.eth.isValid()) {
            if (h.eth.type == 0x0800) {
                h.outer.setValid();
                h.outer.dst = 0x020000000001;
                h.outer.src = 0x020000000002;
                h.outer.type = 0x88b5;
                sm.egress_spec = 2;
            } else if (h.eth.type == 0x0806) {
                sm.egress_spec = 1;
            }
        }
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t h) { apply { pk.emit(h.outer); pk.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
";

struct Side<'p> {
    interp: Interpreter<'p>,
    cached: koi_datapath::Datapath<'p>,
    si: State,
    sc: State,
}

/// One pipeline's engines and states: the states with `writes` installed (a POF
/// configuration's entries) and the `koi ctl` lines of `entries` run.
fn side<'p>(
    p: &'p koi_ir::Pipeline,
    writes: &[koi_pof::TableWrite],
    entries: &str,
) -> RefCell<Side<'p>> {
    let state = || {
        let mut s = State::new(p).unwrap();
        koi_pof::install(&mut s, writes).unwrap();
        for line in entries.lines() {
            if let Some(c) = koi_control::command::parse(line).unwrap() {
                koi_state::cli::execute(&mut s, &c).unwrap_or_else(|e| panic!("{line}: {e}"));
            }
        }
        s
    };
    RefCell::new(Side {
        interp: Interpreter::new(p).unwrap(),
        cached: koi_datapath::Datapath::new(p).unwrap(),
        si: state(),
        sc: state(),
    })
}

/// The pipeline a POF configuration compiles to, and its entries' writes.
fn pof_pipeline(src: &str) -> (koi_ir::Pipeline, Vec<koi_pof::TableWrite>) {
    let c = koi_pof::parse(src).unwrap_or_else(|e| panic!("{}", e.render("pof")));
    let (g, p) = koi_pof::compile(&c).unwrap_or_else(|e| panic!("{}", e.render("pof")));
    (p, g.writes)
}

fn p4_pipeline(src: &str) -> koi_ir::Pipeline {
    let text = format!("{V1}{src}");
    match koi_conformance::compile_str("equiv.p4", &text, &Default::default()) {
        Ok(c) => c.pipeline,
        Err(e) => panic!("{}", e.render()),
    }
}

/// A random packet, biased toward what the pipelines match: `dsts` are MACs for byte 0,
/// `ethertypes` for bytes 12-13, `ips` for bytes 30-33 (IPv4 destination).
fn packets(
    dsts: Vec<[u8; 6]>,
    ethertypes: Vec<u16>,
    ips: Vec<[u8; 4]>,
) -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<u8>(), 0..90),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(move |(mut p, d, t, i, v)| {
            if p.len() >= 6 && d % 4 != 0 {
                p[..6].copy_from_slice(&dsts[d as usize % dsts.len()]);
            }
            if p.len() >= 14 && t % 5 != 0 {
                p[12..14].copy_from_slice(&ethertypes[t as usize % ethertypes.len()].to_be_bytes());
            }
            if p.len() >= 34 && i % 4 != 0 {
                p[30..34].copy_from_slice(&ips[i as usize % ips.len()]);
            }
            if p.len() >= 15 && v % 2 == 0 {
                p[14] = 0x45;
            }
            p
        })
}

fn equivalent(pof: &str, p4: &str, strategy: impl Strategy<Value = Vec<u8>>) {
    equivalent_with(pof, "", p4, "", strategy)
}

/// [`equivalent`] with `koi ctl` command lines run on each pipeline's state first.
fn equivalent_with(
    pof: &str,
    pof_entries: &str,
    p4: &str,
    p4_entries: &str,
    strategy: impl Strategy<Value = Vec<u8>>,
) {
    let (a, writes) = pof_pipeline(pof);
    let b = p4_pipeline(p4);
    let clock = ManualClock::new(0);
    let (sa, sb) = (side(&a, &writes, pof_entries), side(&b, &[], p4_entries));
    let run = |s: &RefCell<Side>, pkt: &[u8], port: u64| -> (Vec<Output>, Vec<Output>) {
        let s = &mut *s.borrow_mut();
        let i = s
            .interp
            .process(&mut s.si, pkt, port, &clock)
            .unwrap()
            .outputs;
        let c = s
            .cached
            .process(&mut s.sc, pkt, port, &clock)
            .unwrap()
            .outputs;
        (i, c)
    };
    let mut runner = TestRunner::new(PtConfig {
        cases: 400,
        failure_persistence: None,
        ..PtConfig::default()
    });
    let sent = std::cell::Cell::new(0usize);
    runner
        .run(&(strategy, 1u64..4), |(pkt, port)| {
            let (pi, pc) = run(&sa, &pkt, port);
            let (qi, qc) = run(&sb, &pkt, port);
            prop_assert_eq!(&pi, &qi, "POF and P4 differ on {:02x?}", pkt);
            prop_assert_eq!(&pi, &pc, "POF: interpreter and datapath differ");
            prop_assert_eq!(&qi, &qc, "P4: interpreter and datapath differ");
            sent.set(sent.get() + usize::from(!pi.is_empty()));
            Ok(())
        })
        .unwrap();
    // Both outcomes were exercised: packets forwarded and packets dropped.
    assert!(sent.get() > 40, "too few packets forwarded: {}", sent.get());
    assert!(sent.get() < 390, "too few packets dropped: {}", sent.get());
}

#[test]
fn l2_forwarding_is_the_same_in_pof_and_p4() {
    equivalent(
        L2_POF,
        L2_P4,
        packets(
            vec![[0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 2], [0xff; 6]],
            vec![0x0800],
            vec![[0; 4]],
        ),
    );
}

#[test]
fn l3_forwarding_with_ttl_and_checksum_is_the_same_in_pof_and_p4() {
    equivalent(
        L3_POF,
        L3_P4,
        packets(
            vec![[0, 0, 0, 0, 0, 1]],
            vec![0x0800, 0x0800, 0x0806],
            vec![
                [10, 1, 2, 3],
                [10, 9, 9, 9],
                [192, 168, 1, 1],
                [10, 1, 3, 1],
            ],
        ),
    );
}

#[test]
fn a_tunnel_encap_by_add_field_is_the_same_in_pof_and_p4() {
    equivalent(
        ENCAP_POF,
        ENCAP_P4,
        packets(
            vec![[0, 0, 0, 0, 0, 1]],
            vec![0x0800, 0x0806, 0x86dd],
            vec![[0; 4]],
        ),
    );
}

/// K_POFVS's example (examples/pof/kpofvs.pof) and its P4 twin (examples/pof/kpofvs.p4 with
/// examples/pof/kpofvs.entries), which scripts/bench-pof.sh measures side by side: ARP
/// broadcast through group 1, IPv4 routed by /24 with TTL and checksum.
#[test]
fn the_kpofvs_example_is_the_same_in_pof_and_p4() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/pof");
    let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).unwrap();
    let p4 = read("kpofvs.p4").replace("#include <core.p4>\n#include <v1model.p4>\n", "");
    equivalent_with(
        &read("kpofvs.pof"),
        "mc_mgrp_create 1\nmc_node_create 0 1 2\nmc_node_associate 1 0\n",
        &p4,
        &read("kpofvs.entries"),
        packets(
            vec![[2, 0, 0, 0, 2, 1], [0xff; 6]],
            vec![0x0800, 0x0800, 0x0806],
            vec![[10, 0, 1, 7], [10, 0, 2, 1], [10, 0, 3, 1], [10, 1, 2, 1]],
        ),
    );
}
