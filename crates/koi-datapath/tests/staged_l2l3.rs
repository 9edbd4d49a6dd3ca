//! `examples/l2l3_acl.p4` with `@koi_stage` annotations that reorder the classifier's lookup
//! stages: the stages follow the annotations, and the cached datapath still gives the
//! interpreter's outputs and state on every packet.

mod common;

use koi_datapath::{Datapath, FlowKeyLayout, stages};
use koi_interp::Interpreter;
use koi_ir::{Bits, Pattern, Pipeline};
use koi_state::{ActionSpec, EntrySpec, ManualClock, State};
use std::path::Path;

/// The example with IPv4 and TCP looked up first (instance annotations) and Ethernet last
/// (a type annotation); VLAN and UDP keep their default numbers.
fn annotated_source() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/l2l3_acl.p4");
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    let edits = [
        ("header ethernet_t {", "@koi_stage(8) header ethernet_t {"),
        ("    ipv4_t     ipv4;", "    @koi_stage(0) ipv4_t ipv4;"),
        ("    tcp_t      tcp;", "    @koi_stage(1) tcp_t tcp;"),
    ];
    edits.iter().fold(src, |s, (from, to)| {
        assert_eq!(s.matches(from).count(), 1, "{from:?} in the example");
        s.replacen(from, to, 1)
    })
}

fn annotated() -> Pipeline {
    common::compile_str(&annotated_source()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_annotations_reorder_the_stages() {
    let p = annotated();
    let l = FlowKeyLayout::new(&p);
    println!("{l}");
    let hints: Vec<(&str, Option<u32>)> = l
        .groups()
        .iter()
        .map(|g| (g.name.as_str(), g.stage))
        .collect();
    assert_eq!(
        hints,
        [
            ("architecture", None),
            ("hdr.eth", Some(8)),
            ("hdr.vlan", None),
            ("hdr.ipv4", Some(0)),
            ("hdr.tcp", Some(1)),
            ("hdr.udp", None),
        ]
    );
    // Same key as without annotations (see `l2l3.rs`: stages [0..1, 1..3, 3..4, 4..6, 6..7]).
    // Numbers: architecture 0, eth 8, vlan 2, ipv4 0, tcp 1 (its only word is ipv4's second,
    // number 0), udp 5. Stage 0 is words 0 and 4..6, then vlan, udp, and eth last.
    assert_eq!(l.key_words(), 7);
    let st = stages(&l);
    assert_eq!(st, [0..1, 4..6, 3..4, 6..7, 1..3]);
    assert!(koi_cache::StageLayout::new(l.key_words(), &st).is_ok());
}

/// One entry: `keys`, `action(args)`, an optional priority.
fn add(s: &mut State, table: &str, keys: Vec<Pattern>, action: &str, args: Vec<Bits>, prio: u32) {
    let spec = EntrySpec {
        keys,
        action: ActionSpec::action(action, args),
        priority: (prio > 0).then_some(prio),
        timeout_ns: None,
    };
    s.table_add(table, spec)
        .unwrap_or_else(|e| panic!("{table}: {e}"));
}

fn x(w: u32, v: u64) -> Pattern {
    Pattern::Exact(Bits::from_u64(w, v))
}

fn t(w: u32, v: u64, m: u64) -> Pattern {
    Pattern::Mask {
        value: Bits::from_u64(w, v),
        mask: Bits::from_u64(w, m),
    }
}

fn b(w: u32, v: u64) -> Bits {
    Bits::from_u64(w, v)
}

const ROUTER: u64 = 0x0200_0000_00fe;

fn host(n: u64) -> u64 {
    0x0200_0000_0100 + n
}

fn ip(a: u8, b: u8, c: u8, d: u8) -> u64 {
    u64::from(u32::from_be_bytes([a, b, c, d]))
}

/// Some of `l2l3_acl.entries`: VLANs 100 (port 1) and 200 (port 2), two hosts, routing to
/// 198.19.0.0/16 and a default route, one ACL drop.
fn entries(s: &mut State) {
    for (port, vid) in [(1, 100), (2, 200)] {
        let untagged = vec![x(9, port), x(1, 0), t(12, 0, 0)];
        add(
            s,
            "vlan_ingress",
            untagged,
            "push_vlan",
            vec![b(12, vid)],
            10,
        );
        let tagged = vec![x(9, port), x(1, 1), t(12, vid, 0xfff)];
        add(s, "vlan_ingress", tagged, "tagged", vec![], 10);
        add(
            s,
            "switching",
            vec![x(48, ROUTER), x(12, vid)],
            "to_router",
            vec![],
            0,
        );
        for eg in [1, 2] {
            add(
                s,
                "vlan_egress",
                vec![x(9, eg), x(12, vid)],
                "pop_vlan",
                vec![],
                0,
            );
        }
    }
    add(
        s,
        "switching",
        vec![x(48, host(0)), x(12, 100)],
        "switch_to",
        vec![b(9, 1)],
        0,
    );
    add(
        s,
        "switching",
        vec![x(48, host(1)), x(12, 200)],
        "switch_to",
        vec![b(9, 2)],
        0,
    );
    let routable = vec![x(48, host(0)), x(48, ROUTER), x(12, 100)];
    add(s, "routable", routable, "routable_ok", vec![], 0);
    for (prefix, len, nh) in [(ip(198, 19, 0, 0), 16, 3), (0, 0, 0)] {
        let key = vec![Pattern::Prefix {
            value: b(32, prefix),
            len,
        }];
        let args = vec![b(48, ROUTER), b(48, 0x0200_0000_0200 + nh), b(9, 2)];
        add(s, "routing", key, "set_nexthop", args, 0);
    }
    let acl = vec![
        t(8, 6, 0xff),
        t(32, ip(198, 18, 201, 2), u64::from(u32::MAX)),
        t(32, ip(198, 19, 16, 2), u64::from(u32::MAX)),
        t(16, 40001, 0xffff),
        t(16, 80, 0xffff),
    ];
    add(s, "acl", acl, "drop", vec![], 100);
}

fn mac(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// An Ethernet frame (with a VLAN tag if `vid` is given) carrying `payload` of `ether_type`.
fn frame(dst: u64, src: u64, vid: Option<u16>, ether_type: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&mac(dst));
    f.extend_from_slice(&mac(src));
    if let Some(v) = vid {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&ether_type.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An IPv4 header (no options) with `proto`, `src`, `dst`, then `l4`.
fn ipv4(proto: u8, src: u64, dst: u64, l4: &[u8]) -> Vec<u8> {
    let total = (20 + l4.len()) as u16;
    let mut h = vec![0x45, 0];
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[0, 1, 0, 0, 64, proto, 0, 0]);
    h.extend_from_slice(&(src as u32).to_be_bytes());
    h.extend_from_slice(&(dst as u32).to_be_bytes());
    h.extend_from_slice(l4);
    h
}

/// TCP (20 bytes) or UDP (8 bytes) ports and padding.
fn l4(proto: u8, sport: u16, dport: u16) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&sport.to_be_bytes());
    v.extend_from_slice(&dport.to_be_bytes());
    v.resize(if proto == 6 { 20 } else { 8 }, 0);
    v
}

fn routed(proto: u8, src: u64, dst: u64, sport: u16, dport: u16, vid: Option<u16>) -> Vec<u8> {
    let l = l4(proto, sport, dport);
    frame(ROUTER, host(0), vid, 0x0800, &ipv4(proto, src, dst, &l))
}

/// Runs the packets through a datapath and an interpreter on `p`, twice, asserting equal
/// outputs and final states; returns the datapath's statistics and how many packets were sent.
fn run(
    p: &Pipeline,
    expected_stages: &[std::ops::Range<usize>],
) -> (koi_datapath::DatapathStats, usize) {
    let mut dp = Datapath::new(p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stages(dp.layout()), expected_stages);
    let mut interp = Interpreter::new(p).unwrap_or_else(|e| panic!("{e}"));
    let mut sd = State::new(p).unwrap_or_else(|e| panic!("{e}"));
    entries(&mut sd);
    let mut si = sd.clone();
    let clock = ManualClock::new(0);
    let (a, c) = (ip(198, 18, 201, 2), ip(198, 19, 16, 2));
    let packets: Vec<(Vec<u8>, u64)> = vec![
        // Switched on VLAN 100, untagged in and out.
        (frame(host(0), host(5), None, 0x0800, b"one"), 1),
        (frame(host(0), host(6), None, 0x0800, b"two, longer"), 1),
        // Tagged on VLAN 100; on port 2 the tag does not match: dropped.
        (frame(host(0), host(5), Some(100), 0x0800, b"tagged"), 1),
        (frame(host(0), host(5), Some(100), 0x0800, b"tagged"), 2),
        // Routed TCP: the ACL drops one flow, allows others.
        (routed(6, a, c, 40001, 80, None), 1),
        (routed(6, a, c, 40001, 81, None), 1),
        (routed(6, a, c, 40002, 81, None), 1),
        (routed(6, a, ip(198, 19, 1, 1), 1234, 80, Some(100)), 1),
        (routed(6, a, ip(10, 0, 0, 1), 1234, 80, None), 1),
        // Routed UDP, then the same flows again (cache hits).
        (routed(17, a, c, 53, 53, None), 1),
        (routed(17, a, ip(10, 0, 0, 2), 53, 53, None), 1),
        (routed(6, a, c, 40001, 80, None), 1),
        (routed(6, a, c, 40001, 81, None), 1),
        (routed(17, a, c, 53, 53, None), 1),
        (frame(host(0), host(7), None, 0x0800, b"three"), 1),
        // Unknown destination: dropped; not IPv4 to the router: dropped.
        (frame(host(9), host(0), None, 0x0800, b""), 1),
        (frame(ROUTER, host(0), None, 0x86dd, b"v6"), 1),
    ];
    let mut sent = 0;
    for round in 0..2 {
        for (i, (pkt, port)) in packets.iter().enumerate() {
            let want = interp.process(&mut si, pkt, *port, &clock);
            let got = dp.process(&mut sd, pkt, *port, &clock);
            assert_eq!(got, want, "round {round}, packet {i}");
            sent += want.map_or(0, |o| o.outputs.len());
        }
    }
    assert_eq!(format!("{si:?}"), format!("{sd:?}"));
    assert!(sent > 0 && sent < 2 * packets.len(), "{sent}");
    (dp.stats(), sent)
}

#[test]
fn the_annotated_program_forwards_as_the_interpreter_does() {
    let (s, sent) = run(&annotated(), &[0..1, 4..6, 3..4, 6..7, 1..3]);
    assert!(s.installs > 0 && s.compiled_hits > 0, "{s:?}");
    assert_eq!((s.compile_mismatch, s.fast_parse_mismatch), (0, 0), "{s:?}");
    // The stages change the cost of a lookup, never its answer: the example without
    // annotations caches and hits the same packets.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/l2l3_acl.p4");
    let plain = common::compile_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
    let (d, dsent) = run(&plain, &[0..1, 1..3, 3..4, 4..6, 6..7]);
    let summary = |s: &koi_datapath::DatapathStats| {
        (
            s.misses,
            s.installs,
            s.uncacheable,
            s.microflow_hits + s.megaflow_hits,
            s.packets,
        )
    };
    assert_eq!(summary(&s), summary(&d), "{s:?}\n{d:?}");
    assert_eq!(sent, dsent);
}
