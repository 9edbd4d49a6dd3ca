//! Property: extracting the key from a PHV and reading each field back gives the PHV slot's
//! bits (the field's span of them), for random PHV contents; and mapping a field slot's full
//! influence mask gives exactly the field's key bits.

mod common;

use koi_datapath::{Coverage, FlowKeyLayout};
use koi_ir::{Bits, Pipeline};
use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// Odd widths, a 128-bit field (several copies per field), fields straddling words, a slice.
const WIDE: &str = r#"
#include <core.p4>
#include <v1model.p4>
header a_t { bit<3> x; bit<128> big; bit<5> y; bit<70> odd; bit<2> z; }
struct headers { a_t a; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.a); transition select(hdr.a.x) { 1: accept; default: reject; } }
}
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.a.big : ternary; hdr.a.odd : exact; sm.ingress_port : exact; }
        actions = { fwd; NoAction; }
    }
    apply { if (hdr.a.y[3:1] == 2) { t.apply(); } }
}
control V(inout headers hdr, inout meta_t meta) { apply { } }
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.a); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

fn programs() -> &'static [(Pipeline, FlowKeyLayout)] {
    static P: OnceLock<Vec<(Pipeline, FlowKeyLayout)>> = OnceLock::new();
    P.get_or_init(|| {
        let l2l3 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/l2l3_acl.p4");
        let ps = [common::compile_file(&l2l3, None), common::compile_str(WIDE)];
        ps.into_iter()
            .map(|p| {
                let p = p.unwrap_or_else(|e| panic!("{e}"));
                let l = FlowKeyLayout::new(&p);
                (p, l)
            })
            .collect()
    })
}

#[test]
fn the_wide_program_has_the_fields_it_should() {
    let (p, l) = &programs()[1];
    let names: Vec<&str> = l.fields().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "sm.ingress_port",
            "hdr.a.$valid",
            "hdr.a.x",
            "hdr.a.big",
            "hdr.a.y",
            "hdr.a.odd"
        ],
        "{l}"
    );
    let y = p.phv.slot_by_name("hdr.a.y").unwrap();
    let f = l.field_of(y).unwrap();
    assert_eq!((f.lsb, f.width), (1, 3));
}

proptest! {
    #[test]
    fn extract_then_read_back_gives_the_slot_bits(
        which in 0usize..2,
        seed in proptest::collection::vec(any::<u8>(), 1..64),
    ) {
        let (p, l) = &programs()[which];
        let n = (p.phv.width as usize).div_ceil(8);
        let phv: Vec<u8> = (0..n).map(|i| seed[i % seed.len()].wrapping_mul(i as u8 | 1) ^ (i as u8)).collect();
        let mut key = vec![0u64; l.key_words()];
        l.extract(&phv, &mut key);
        let mut used = vec![0u64; l.key_words()];
        for (i, f) in l.fields().iter().enumerate() {
            let want = Bits::read_bits(&phv, f.phv_offset as usize, f.width).unwrap();
            prop_assert_eq!(l.read_field(&key, i).unwrap(), want, "field {}", &f.name);
            // The field's bits of the slot, as an influence mask, map to its key bits exactly.
            let slot_mask = Bits::ones(f.width).resize(f.slot_width).shl(u64::from(f.lsb));
            let mut m = vec![0u64; l.key_words()];
            let slot = p.phv.slots.get(f.slot).unwrap();
            let derived = matches!(l.mask_for(f.slot, &slot_mask, &mut m), Coverage::Covered);
            prop_assert!(derived, "{}", slot.name);
            let bits: u32 = m.iter().map(|w| w.count_ones()).sum();
            prop_assert!(bits >= f.width);
            for (u, w) in used.iter_mut().zip(&m) { *u |= w; }
        }
        // Padding stays zero.
        for (k, u) in key.iter().zip(&used) {
            prop_assert_eq!(k & !u, 0);
        }
    }

    #[test]
    fn a_partial_mask_covers_the_union_of_its_bits(
        which in 0usize..2,
        field in 0usize..16,
        bits in any::<u128>(),
    ) {
        // Whatever runs of bits an influence mask has (a prefix, scattered bits), it maps to
        // the key bits its bits map to one by one.
        let (p, l) = &programs()[which];
        let f = &l.fields()[field % l.fields().len()];
        let v = bits & if f.width >= 128 { u128::MAX } else { (1u128 << f.width) - 1 };
        let mask = Bits::from_u128(f.width, v).resize(f.slot_width).shl(u64::from(f.lsb));
        let mut whole = vec![0u64; l.key_words()];
        let cov = l.mask_for(f.slot, &mask, &mut whole);
        let mut union = vec![0u64; l.key_words()];
        for i in (0..f.width).filter(|&i| (v >> i) & 1 == 1) {
            let one = Bits::from_u128(f.width, 1 << i).resize(f.slot_width).shl(u64::from(f.lsb));
            prop_assert_eq!(l.mask_for(f.slot, &one, &mut union), cov);
        }
        prop_assert_eq!(whole, union, "{} mask {:#x}", &f.name, v);
        let _ = p;
    }
}
