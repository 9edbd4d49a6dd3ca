//! The flow key of `examples/l2l3_acl.p4`.

mod common;

use koi_datapath::{FlowKeyLayout, Source, stages};
use std::path::Path;

fn l2l3() -> koi_ir::Pipeline {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/l2l3_acl.p4");
    common::compile_file(&path, None).unwrap_or_else(|e| panic!("{e}"))
}

/// The key, derived from the program by hand:
///
/// - `std.ingress_port`: `vlan_ingress` matches it. `std.egress_port` (matched by
///   `vlan_egress`) comes from `egress_spec` through the traffic manager, and `egress_spec`
///   only ever holds action parameters or `mark_to_drop`'s constant: decided by the ingress
///   tables, nothing to key.
/// - `hdr.eth`: validity (emitted), `dst` (`switching`, `routable`), `src` (`routable`),
///   `ether_type` (the start state's select). `push_vlan` copies `eth.ether_type` into
///   `vlan.ether_type`, which a later decision could read: already keyed.
/// - `hdr.vlan`: validity (`vlan_ingress` key, emit), `vid` (`vlan_ingress`, `switching`,
///   `routable`, `vlan_egress`), `ether_type` (select). `pcp`/`dei` are only written.
/// - `hdr.ipv4`: validity (branch, emit, `update_checksum`'s condition), `ihl`,
///   `frag_offset`, `protocol` (select; `protocol` also in `acl`), `src` (`acl`), `dst`
///   (`routing`, `acl`). `ttl` is decremented and checksummed but decides nothing.
/// - `hdr.tcp`, `hdr.udp`: validity (emit), and `sport`/`dport` because the parser copies
///   them into `meta.l4_sport`/`meta.l4_dport`, which `acl` matches; the metadata are not key
///   fields, their sources are.
#[test]
fn the_l2l3_key_is_exactly_what_its_decisions_read() {
    let p = l2l3();
    let l = FlowKeyLayout::new(&p);
    println!("{l}");
    let names: Vec<&str> = l.fields().iter().map(|f| f.name.as_str()).collect();
    let expected = [
        "std.ingress_port",
        "hdr.eth.$valid",
        "hdr.eth.dst",
        "hdr.eth.src",
        "hdr.eth.ether_type",
        "hdr.vlan.$valid",
        "hdr.vlan.vid",
        "hdr.vlan.ether_type",
        "hdr.ipv4.$valid",
        "hdr.ipv4.ihl",
        "hdr.ipv4.frag_offset",
        "hdr.ipv4.protocol",
        "hdr.ipv4.src",
        "hdr.ipv4.dst",
        "hdr.tcp.$valid",
        "hdr.tcp.sport",
        "hdr.tcp.dport",
        "hdr.udp.$valid",
        "hdr.udp.sport",
        "hdr.udp.dport",
    ];
    assert_eq!(names, expected);
    assert!(l.fields()[1..].iter().all(|f| f.source == Source::Packet));
    assert_eq!(l.fields()[0].source, Source::Architecture);
    // 9 + 113 + 29 + 90 + 33 + 33 bits; a group starts a new word unless it fits the rest of
    // the current one (tcp shares ipv4's second word).
    assert_eq!(l.key_bits(), 307);
    assert_eq!(l.key_words(), 7);
    assert_eq!(stages(&l), [0..1, 1..3, 3..4, 4..6, 6..7]);
    assert_eq!(l.state_dependent().count(), 0);
    // Every parsed header has fields some statement reads: nothing to copy opaquely.
    assert!(l.opaque_headers().is_empty());
    // The stages fit the classifier.
    let mut cfg = koi_cache::ClassifierConfig::new(l.key_words());
    cfg.stages = stages(&l);
    assert!(koi_cache::StageLayout::new(cfg.key_words, &cfg.stages).is_ok());
}
