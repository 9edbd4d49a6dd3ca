//! Hashes as flow-key fields: a decision on a `hash` of packet fields that only the parser
//! writes makes megaflows match the hash's bits, not the bytes hashed. A consistent-hash
//! ring over a variable-length key (as a memcached load balancer routes requests) and ECMP
//! buckets over two fields must give the interpreter's outputs on every packet, with far
//! fewer megaflows than distinct keys; a program that rewrites a hashed field gets no hash
//! key (its megaflows match the fields, as before).

mod common;

use common::{Rng, Twin, compile_str};
use koi_datapath::PathTaken;
use koi_ir::{Bits, Pattern};
use koi_state::{ActionSpec, EntrySpec, State};

/// Ethernet, then (EtherType 0x88b5) a key of `len` bytes; the ring routes by the key's
/// CRC-32 through a copy and a slice, as AppSwitch's point is taken from the CRC.
const RING: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header len_t { bit<8> len; }
header key_t { varbit<2000> key; }
struct headers { eth_t eth; len_t len; key_t k; }
struct meta_t { bit<32> crc; bit<32> point; bit<16> low; }
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88b5: key; default: accept; }
    }
    state key {
        pkt.extract(hdr.len);
        pkt.extract(hdr.k, (bit<32>) hdr.len.len * 8);
        transition accept;
    }
}
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action to(bit<9> port, bit<48> mac) { sm.egress_spec = port; hdr.eth.dst = mac; }
    action drop() { mark_to_drop(sm); }
    table ring {
        key = { meta.point: range; }
        actions = { to; drop; }
        default_action = drop();
    }
    table low {
        key = { meta.low: exact; }
        actions = { to; drop; }
        default_action = drop();
    }
    apply {
        if (hdr.k.isValid()) {
            hash(meta.crc, HashAlgorithm.crc32, 32w0, { hdr.k.key }, 64w0x100000000);
            bit<32> tmp = meta.crc;
            meta.point = tmp;
            if (hdr.eth.src == 1) {
                // The key's low bits through a slice: an exact match on them.
                meta.low = meta.crc[15:0];
                low.apply();
            } else {
                ring.apply();
            }
        } else {
            sm.egress_spec = 1;
        }
    }
}
control V(inout headers hdr, inout meta_t meta) { apply { } }
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.len); pkt.emit(hdr.k); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// `arcs` ranges of equal size over the 32-bit ring, each to port `1 + i % 4`.
fn ring_entries(state: &mut State, arcs: u64) {
    let size = (1u64 << 32) / arcs;
    for i in 0..arcs {
        let hi = if i == arcs - 1 {
            u64::from(u32::MAX)
        } else {
            (i + 1) * size - 1
        };
        let spec = EntrySpec {
            keys: vec![Pattern::Range {
                lo: Bits::from_u64(32, i * size),
                hi: Bits::from_u64(32, hi),
            }],
            action: ActionSpec::action(
                "to",
                vec![Bits::from_u64(9, 1 + i % 4), Bits::from_u64(48, 0xa0 + i)],
            ),
            priority: Some(1),
            timeout_ns: None,
        };
        state
            .table_add("ring", spec)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// `n` keys of `len` lowercase letters from the seed.
fn letter_keys(seed: u64, n: usize, len: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| (0..len).map(|_| b'a' + (rng.next() % 26) as u8).collect())
        .collect()
}

/// Sends each key once from `src` (the twin checks every output against the interpreter's)
/// and returns the megaflows learnt, which must be in `expected`; then each key again, every
/// one a compiled hit that learns nothing.
fn learn_then_hit(
    twin: &mut Twin,
    src: u8,
    keys: &[Vec<u8>],
    expected: std::ops::Range<usize>,
) -> usize {
    for k in keys {
        twin.send(&key_frame(src, k), 1);
    }
    let flows = twin.dp.megaflows();
    assert!(expected.contains(&flows), "{flows} megaflows");
    for k in keys {
        let (_, path) = twin.send(&key_frame(src, k), 1);
        assert!(matches!(path, PathTaken::Compiled(_)), "{path:?}");
    }
    assert_eq!(twin.dp.megaflows(), flows);
    flows
}

fn key_frame(src: u8, key: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f[11] = src;
    f.extend_from_slice(&[0x88, 0xb5, key.len() as u8]);
    f.extend_from_slice(key);
    f.extend_from_slice(b"payload");
    f
}

#[test]
fn a_ring_over_a_key_hash_shares_megaflows_between_keys() {
    let p = compile_str(RING).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |s| ring_entries(s, 64));
    let hk = twin.dp.layout().hash_keys();
    assert_eq!(hk.len(), 1, "{hk:?}");
    assert_eq!(hk[0].name, "crc32(hdr.k.key)");
    let printed = twin.dp.layout().to_string();
    assert!(
        printed.contains("crc32(hdr.k.key) -> meta.crc"),
        "{printed}"
    );
    let keys = letter_keys(0x5eed_1234_9876_abcd, 2000, 16);
    // 2,000 keys of one length over 64 arcs: the megaflows are the blocks the keys' points
    // fall in, not one per key (an exact match on the CRC, or on the key, would be 2,000).
    learn_then_hit(&mut twin, 0, &keys, 64..1000);
    let dump = twin.dp.dump_flows(4).join("\n");
    assert!(dump.contains("crc32(hdr.k.key)="), "{dump}");
    // Keys of other lengths and bytes outside the ASCII letters: still the interpreter's
    // outputs.
    let mut rng = Rng(0x5eed_1234_9876_abce);
    for n in [1usize, 2, 15, 17, 200, 250] {
        for _ in 0..20 {
            let k: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            twin.send(&key_frame(0, &k), 1);
            twin.send(&key_frame(0, &k), 1);
        }
    }
}

#[test]
fn a_slice_of_a_key_hash_matched_exactly_needs_only_its_bits() {
    let p = compile_str(RING).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |s| {
        for v in 0..4u64 {
            let spec = EntrySpec {
                keys: vec![Pattern::Exact(Bits::from_u64(16, v))],
                action: ActionSpec::action(
                    "to",
                    vec![Bits::from_u64(9, 1 + v), Bits::from_u64(48, 0xb0 + v)],
                ),
                priority: None,
                timeout_ns: None,
            };
            s.table_add("low", spec).unwrap_or_else(|e| panic!("{e}"));
        }
    });
    let mut rng = Rng(77);
    let mut sent = Vec::new();
    for _ in 0..300 {
        let k: Vec<u8> = (0..8).map(|_| rng.next() as u8).collect();
        twin.send(&key_frame(1, &k), 1);
        sent.push(k);
    }
    for k in &sent {
        let (_, path) = twin.send(&key_frame(1, k), 1);
        assert!(matches!(path, PathTaken::Compiled(_)), "{path:?}");
    }
    // The exact table on the CRC's low 16 bits: every megaflow matches some of those bits
    // (all 16 for a hit; for a miss one bit telling it from each entry) and nothing of the
    // key's eight bytes, so keys whose CRCs agree there share one.
    let flows = twin.dp.megaflows();
    assert!(flows < 60, "{flows}");
    for f in twin.dp.dump_flows(1000) {
        assert!(!f.contains("hdr.k.key="), "{f}");
        let at = f.find("crc32(hdr.k.key)=").unwrap_or_else(|| panic!("{f}"));
        let field = f[at..].split([',', ' ']).next().unwrap_or("");
        let mask = match field.split_once('/') {
            Some((_, m)) => u64::from_str_radix(m.trim_start_matches("0x"), 16).unwrap_or(0),
            None => u64::from(u32::MAX),
        };
        assert!(mask != 0 && mask <= 0xffff, "{f}");
    }
}

/// ECMP: a bucket of four from a CRC-16 of two fields, chosen by an exact table.
const ECMP: &str = r#"
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    table bucket {
        key = { meta.y: exact; }
        actions = { to; NoAction; }
    }
    apply {
        if (hdr.h.isValid()) {
            hash(meta.y, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.b }, 32w4);
            bucket.apply();
        }
    }
}
"#;

/// The four buckets, to ports 2 to 5.
fn bucket_entries(state: &mut State) {
    for v in 0..4u64 {
        let spec = EntrySpec {
            keys: vec![Pattern::Exact(Bits::from_u64(16, v))],
            action: ActionSpec::action("to", vec![Bits::from_u64(9, 2 + v)]),
            priority: None,
            timeout_ns: None,
        };
        state
            .table_add("bucket", spec)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn ecmp_buckets_take_one_megaflow_each() {
    let p = common::eth_h_program(common::ETH_H_PARSER, ECMP);
    let mut twin = Twin::new(&p, bucket_entries);
    assert_eq!(twin.dp.layout().hash_keys().len(), 1);
    let mut ports = std::collections::BTreeSet::new();
    for a in 0..=255u8 {
        let b = a.wrapping_mul(37);
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x88, 0xb5, a, b]);
        let (out, _) = twin.send(&f, 1);
        ports.extend(out.iter().map(|o| o.0));
    }
    assert_eq!(ports.len(), 4, "{ports:?}");
    assert_eq!(twin.dp.megaflows(), 4);
}

/// The same program, but an action rewrites a hashed field: the field's value when the
/// hash runs need not be the parsed one, so the hash is no key field.
#[test]
fn a_hash_of_a_rewritten_field_is_no_key_field() {
    let ingress = ECMP.replace(
        "action to(bit<9> port) { sm.egress_spec = port; }",
        "action to(bit<9> port) { sm.egress_spec = port; hdr.h.a = 1; }",
    );
    let p = common::eth_h_program(common::ETH_H_PARSER, &ingress);
    let mut twin = Twin::new(&p, bucket_entries);
    assert!(twin.dp.layout().hash_keys().is_empty());
    for a in 0..40u8 {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x88, 0xb5, a, 3]);
        twin.send(&f, 1);
    }
    // One megaflow per (a, b): the hash's fields are matched.
    assert_eq!(twin.dp.megaflows(), 40);
}

/// The fast path computes a hash key only once some megaflow matches its bits: while the
/// bucket table is empty no megaflow needs the hash; once entries are added (and the
/// megaflows invalidated, as every table write does), the buckets' megaflows match it, and
/// every packet still gives the interpreter's outputs, a second round all from the cache.
#[test]
fn a_hash_key_first_needed_after_packets_are_cached_is_computed_from_then_on() {
    let p = common::eth_h_program(common::ETH_H_PARSER, ECMP);
    let mut twin = Twin::new(&p, |_| {});
    let frame = |a: u8| {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x88, 0xb5, a, a.wrapping_mul(37)]);
        f
    };
    for round in 0..2 {
        for a in 0..64u8 {
            let (_, path) = twin.send(&frame(a), 1);
            if round == 1 {
                assert!(matches!(path, PathTaken::Compiled(_)), "{path:?}");
            }
        }
    }
    assert_eq!(twin.dp.megaflows(), 1);
    bucket_entries(&mut twin.sd);
    bucket_entries(&mut twin.si);
    twin.dp.invalidate_all();
    let mut ports = std::collections::BTreeSet::new();
    for round in 0..2 {
        for a in 0..=255u8 {
            let (out, path) = twin.send(&frame(a), 1);
            ports.extend(out.iter().map(|o| o.0));
            if round == 1 {
                assert!(matches!(path, PathTaken::Compiled(_)), "{path:?}");
            }
        }
    }
    assert_eq!(ports.len(), 4, "{ports:?}");
    assert_eq!(twin.dp.megaflows(), 4);
}

#[test]
fn a_key_seen_again_is_a_microflow_hit() {
    // The lookup hash reads the hash keys' words as 0 (native templates give it before the
    // hash keys are computed); the microflow entry a lookup offers must be found by the
    // next lookup of the same key.
    let p = compile_str(RING).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |s| ring_entries(s, 64));
    // A fixed seed (the microflow tier inserts one miss in 100, by a seeded draw), no
    // signature cache (so that the microflow tier is never bypassed), and no native code
    // (whose parse-path templates give the hash themselves): the datapath hashes the key
    // the templates wrote, beside the hash keys it then computes.
    let config = koi_datapath::DatapathConfig {
        jit_after: None,
        seed: Some(7),
        signature_entries: 0,
        ..koi_datapath::DatapathConfig::default()
    };
    twin.dp = koi_datapath::Datapath::with_config(&p, koi_interp::Options::default(), config)
        .unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<Vec<u8>> = (0..8u8)
        .map(|i| (0..24).map(|j| b'a' + (i + j) % 26).collect())
        .collect();
    for _ in 0..600 {
        for k in &keys {
            twin.send(&key_frame(0, k), 1);
        }
    }
    for k in &keys {
        let (_, path) = twin.send(&key_frame(0, k), 1);
        assert!(
            matches!(path, PathTaken::Compiled(koi_datapath::Tier::Microflow)),
            "{path:?}"
        );
    }
}

/// [`RING`] with the point taken from a `crc16_custom` of the key (AppSwitch's `crc16`
/// mode: its controller sets the calculation to CRC-16/XMODEM, as twemproxy hashes).
fn custom_ring() -> String {
    RING.replace(
        "hash(meta.crc, HashAlgorithm.crc32, 32w0, { hdr.k.key }, 64w0x100000000);",
        "hash(meta.crc, HashAlgorithm.crc16_custom, 32w0, { hdr.k.key }, 64w0x100000000);",
    )
}

#[test]
fn a_custom_crc_is_a_hash_key_computed_with_the_control_planes_parameters() {
    let src = custom_ring();
    assert!(src.contains("crc16_custom"));
    let p = compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let xmodem = |s: &mut State| {
        s.set_custom_crc("calc_0", koi_hash::crc::CRC16_XMODEM)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    // 16 arcs over the 16 bits a CRC-16 gives (the ring's 32-bit points below 0x10000).
    let mut twin = Twin::new(&p, |s| {
        xmodem(s);
        for i in 0..16u64 {
            let spec = EntrySpec {
                keys: vec![Pattern::Range {
                    lo: Bits::from_u64(32, i << 12),
                    hi: Bits::from_u64(
                        32,
                        if i == 15 {
                            u64::from(u32::MAX)
                        } else {
                            ((i + 1) << 12) - 1
                        },
                    ),
                }],
                action: ActionSpec::action(
                    "to",
                    vec![Bits::from_u64(9, 1 + i % 4), Bits::from_u64(48, 0xa0 + i)],
                ),
                priority: Some(1),
                timeout_ns: None,
            };
            s.table_add("ring", spec).unwrap_or_else(|e| panic!("{e}"));
        }
    });
    let hk = twin.dp.layout().hash_keys();
    assert_eq!(hk.len(), 1, "{hk:?}");
    assert_eq!(hk[0].name, "crc16_custom(hdr.k.key)");
    assert!(hk[0].is_custom());
    let keys = letter_keys(0x0000_ddc0_ffee_1234, 1000, 20);
    let flows = learn_then_hit(&mut twin, 0, &keys, 16..500);
    // Every key again: compiled hits, and the ports the XMODEM CRC gives (the twin checks
    // the interpreter's outputs; this checks the parameters were the control plane's).
    let arc_port = |k: &[u8]| {
        let crc = koi_hash::crc::Crc::new(koi_hash::crc::CRC16_XMODEM)
            .unwrap_or_else(|e| panic!("{e:?}"))
            .checksum(k);
        1 + (crc >> 12) % 4
    };
    for k in &keys {
        let (out, path) = twin.send(&key_frame(0, k), 1);
        assert!(matches!(path, PathTaken::Compiled(_)), "{path:?}");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, arc_port(k), "key {k:?}");
    }
    assert_eq!(twin.dp.megaflows(), flows);
    // The control plane changes the parameters (back to BMv2's CRC-16/ARC): the caches are
    // flushed, as the runtime does on such a write, and the hash keys follow the new ones.
    for s in [&mut twin.sd, &mut twin.si] {
        s.set_custom_crc("calc_0", koi_hash::crc::CRC16_ARC)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    twin.dp.invalidate_all();
    let arc = koi_hash::crc::Crc::new(koi_hash::crc::CRC16_ARC).unwrap_or_else(|e| panic!("{e:?}"));
    let mut moved = 0;
    for _ in 0..2 {
        for k in &keys {
            let (out, _) = twin.send(&key_frame(0, k), 1);
            let want = 1 + (arc.checksum(k) >> 12) % 4;
            assert_eq!(out[0].0, want, "key {k:?}");
            moved += usize::from(want != arc_port(k));
        }
    }
    assert!(moved > 0, "the new parameters moved no key");
}

#[test]
fn a_concatenation_of_hash_bits_masks_each_hash_keys_bits() {
    // As AppSwitch's `crc16` mode builds twemproxy's value: bytes of three CRCs side by side.
    let src = RING.replace(
        "hash(meta.crc, HashAlgorithm.crc32, 32w0, { hdr.k.key }, 64w0x100000000);",
        "bit<16> a; bit<16> b; bit<16> c;
            hash(a, HashAlgorithm.crc16_custom, 16w0, { hdr.k.key }, 32w0x10000);
            hash(b, HashAlgorithm.crc16, 16w0, { hdr.len.len, hdr.k.key }, 32w0x10000);
            hash(c, HashAlgorithm.crc16_custom, 16w0, { hdr.eth.src, hdr.k.key }, 32w0x10000);
            meta.crc = a[15:8] ++ b[15:8] ++ c;",
    );
    assert!(src.contains("meta.crc = a[15:8]"));
    let p = compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = Twin::new(&p, |s| {
        for calc in ["calc_0", "calc_1"] {
            s.set_custom_crc(calc, koi_hash::crc::CRC16_XMODEM)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        ring_entries(s, 64);
    });
    assert_eq!(twin.dp.layout().hash_keys().len(), 3);
    let keys = letter_keys(0xc0c0_a5a5_1234_0001, 1000, 20);
    // The ring's 64 arcs read the point's top 6 bits: the first CRC's top bits. (Matching
    // the fields hashed would be 1,000 megaflows.)
    learn_then_hit(&mut twin, 0, &keys, 64..300);
    // The exact match on the point's low 16 bits (the slice `meta.crc[15:0]`): the third
    // CRC's bits, one megaflow per value.
    for k in keys.iter().take(100) {
        twin.send(&key_frame(1, k), 1);
    }
}
