//! The flow-key analysis on small programs: what is in the key, what is not, and why.

mod common;

use koi_datapath::{Coverage, DecisionKind, FlowKeyLayout, Source};
use koi_ir::{Bits, Pipeline};

use common::ETH_H_PARSER as PARSER;

fn program(parser: &str, ingress: &str) -> Pipeline {
    common::eth_h_program(parser, ingress)
}

/// The names of the key fields.
fn key_names(l: &FlowKeyLayout) -> Vec<String> {
    l.fields().iter().map(|f| f.name.clone()).collect()
}

fn has(l: &FlowKeyLayout, name: &str) -> bool {
    l.fields().iter().any(|f| f.name == name)
}

#[test]
fn a_field_only_copied_is_not_in_the_key() {
    let p = program(
        PARSER,
        r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply { hdr.eth.src = hdr.eth.dst; sm.egress_spec = 1; }
        }"#,
    );
    let l = FlowKeyLayout::new(&p);
    // The select reads the EtherType; emit reads both validity bits; nothing else decides.
    assert_eq!(
        key_names(&l),
        ["hdr.eth.$valid", "hdr.eth.type", "hdr.h.$valid"],
        "{l}"
    );
    assert!(!has(&l, "hdr.eth.dst") && !has(&l, "hdr.eth.src"));
    assert_eq!(l.key_words(), 1, "18 bits: both groups share one word");
    // h's fields are never read nor rewritten: the fast path may copy h as opaque bytes.
    let h = p.phv.header_by_name("hdr.h").unwrap();
    assert_eq!(l.opaque_headers(), [h]);
}

#[test]
fn metadata_computed_from_two_fields_puts_both_in_the_key() {
    let p = program(
        PARSER,
        r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            action fwd(bit<9> port) { sm.egress_spec = port; }
            table t { key = { meta.x : exact; } actions = { fwd; NoAction; } }
            apply { meta.x = hdr.h.a ^ hdr.h.b; t.apply(); }
        }"#,
    );
    let l = FlowKeyLayout::new(&p);
    assert!(has(&l, "hdr.h.a") && has(&l, "hdr.h.b"), "{l}");
    assert!(
        !has(&l, "meta.x"),
        "metadata is not a key field, its sources are"
    );
    assert!(l.opaque_headers().is_empty());
    // An influence on meta.x maps to all bits of both sources.
    let x = p.phv.slot_by_name("meta.x").unwrap();
    let mut mask = vec![0u64; l.key_words()];
    assert_eq!(l.mask_for(x, &Bits::ones(8), &mut mask), Coverage::Covered);
    let ones: u32 = mask.iter().map(|w| w.count_ones()).sum();
    assert_eq!(ones, 16);
    // An influence on one bit of a key field maps to exactly that key bit.
    let a = p.phv.slot_by_name("hdr.h.a").unwrap();
    let mut m2 = vec![0u64; l.key_words()];
    assert_eq!(
        l.mask_for(a, &Bits::from_u64(8, 0x80), &mut m2),
        Coverage::Covered
    );
    let fa = l.field_of(a).unwrap();
    let k = fa.key_offset as usize;
    assert_eq!(m2.iter().map(|w| w.count_ones()).sum::<u32>(), 1);
    assert_eq!(
        m2[k / 64] >> (63 - k % 64) & 1,
        1,
        "bit 7 of a is the field's first key bit"
    );
}

#[test]
fn a_select_on_a_lookahead_keys_the_lookahead() {
    let parser = r#"
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        transition select(pkt.lookahead<bit<8>>()) { 0x45: parse_h; default: parse_eth; }
    }
    state parse_h { pkt.extract(hdr.h); transition accept; }
    state parse_eth { pkt.extract(hdr.eth); transition accept; }
}
"#;
    let p = program(
        parser,
        r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply { }
        }"#,
    );
    let l = FlowKeyLayout::new(&p);
    let look: Vec<_> = l
        .fields()
        .iter()
        .filter(|f| f.header.is_none() && f.source == Source::Packet)
        .collect();
    assert_eq!(look.len(), 1, "{l}");
    assert_eq!(look[0].width, 8);
    // The lookahead comes first in parse order: its group precedes the headers'.
    assert_eq!(l.groups()[0].header, None);
    assert!(has(&l, "hdr.h.$valid") && has(&l, "hdr.eth.$valid"));
}

#[test]
fn a_register_value_in_an_if_is_state_dependent() {
    let p = program(
        PARSER,
        r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            register<bit<8>>(16) r;
            action fwd(bit<9> port) { sm.egress_spec = port; }
            table t { key = { meta.y : exact; } actions = { fwd; NoAction; } }
            apply {
                bit<8> v;
                r.read(v, (bit<32>) hdr.h.a);
                if (v > 3) { meta.y = 7; }
                t.apply();
            }
        }"#,
    );
    let l = FlowKeyLayout::new(&p);
    let st: Vec<_> = l.state_dependent().collect();
    // The branch reads the register's value; the table's key was written under it.
    assert!(st.iter().any(|d| d.kind == DecisionKind::Branch), "{l}");
    assert!(st.iter().any(|d| d.kind == DecisionKind::TableKey), "{l}");
    // The select and the emits do not depend on state.
    assert!(
        l.decisions()
            .iter()
            .filter(|d| d.kind == DecisionKind::Select)
            .all(|d| !d.state_dependent)
    );
    let y = p.phv.slot_by_name("meta.y").unwrap();
    let mut mask = vec![0u64; l.key_words()];
    assert_eq!(
        l.mask_for(y, &Bits::ones(16), &mut mask),
        Coverage::StateDependent
    );
}

#[test]
fn an_optionally_emitted_header_keys_its_validity() {
    let p = program(
        PARSER,
        r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply { }
        }"#,
    );
    let l = FlowKeyLayout::new(&p);
    let valid = p.phv.slot_by_name("hdr.h.$valid").unwrap();
    let f = l.field_of(valid).expect("h's validity is a key field");
    assert_eq!((f.width, f.source), (1, Source::Packet));
    assert!(
        l.decisions()
            .iter()
            .any(|d| d.kind == DecisionKind::Emit && d.reads == [valid])
    );
}

#[test]
fn ingress_port_is_keyed_when_a_table_matches_it() {
    let ingress = r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            action fwd(bit<9> port) { sm.egress_spec = port; }
            table t { key = { sm.ingress_port : exact; } actions = { fwd; NoAction; } }
            apply { t.apply(); }
        }"#;
    let l = FlowKeyLayout::new(&program(PARSER, ingress));
    let f = l
        .fields()
        .iter()
        .find(|f| f.name.ends_with("ingress_port"))
        .expect("ingress_port");
    assert_eq!(
        (f.width, f.source, f.key_offset),
        (9, Source::Architecture, 0)
    );
    assert_eq!(l.groups()[0].name, "architecture");
    // Without the table, a port only written to a header is not in the key.
    let plain = r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply { hdr.eth.src = (bit<48>) sm.ingress_port; sm.egress_spec = 1; }
        }"#;
    let l = FlowKeyLayout::new(&program(PARSER, plain));
    assert!(
        !l.fields().iter().any(|f| f.name.ends_with("ingress_port")),
        "{l}"
    );
    // The traffic manager reads the egress port: a port computed from the ingress port is
    // in the key (the slow path matches it when a compiled program needs the port fixed).
    let back = r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply { sm.egress_spec = sm.ingress_port; }
        }"#;
    let l = FlowKeyLayout::new(&program(PARSER, back));
    assert!(
        l.fields().iter().any(|f| f.name.ends_with("ingress_port")),
        "{l}"
    );
    assert!(
        l.decisions()
            .iter()
            .any(|d| d.kind == DecisionKind::TrafficManager)
    );
}

#[test]
fn slices_narrow_the_field() {
    let ingress = r#"control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
            apply { if (hdr.eth.dst[7:0] == 1) { sm.egress_spec = 2; } }
        }"#;
    let p = program(PARSER, ingress);
    let l = FlowKeyLayout::new(&p);
    let dst = p.phv.slot_by_name("hdr.eth.dst").unwrap();
    let f = l.field_of(dst).expect("dst's low byte");
    assert_eq!((f.width, f.lsb), (8, 0), "{l}");
    let mut mask = vec![0u64; l.key_words()];
    // The interpreter reports the slice's bits: covered. A bit above it is not in the key.
    assert_eq!(
        l.mask_for(dst, &Bits::from_u64(48, 0xff), &mut mask),
        Coverage::Covered
    );
    assert_eq!(
        l.mask_for(dst, &Bits::from_u64(48, 0x100), &mut mask),
        Coverage::Uncovered
    );
    assert!(l.to_string().contains("hdr.eth.dst[7:0]"));
}
