//! Native code for action programs ([`koi_datapath::program::Jit`]): a program computing every
//! kind of expression the JIT lowers, over byte-aligned and unaligned fields of 1 to 64 bits,
//! gives the interpreter's outputs on random packets once it runs as native code; so do
//! koi's FNV hashes.

mod common;

/// Every field of `h` is rewritten from the others; `update_checksum` covers a mix of
/// aligned and computed fields, with aligned runs of 16, 32, 48, 64 and 176 packet bits (summed
/// in 16-, 32- and 64-bit loads).
const OPS: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t {
    bit<8> a; bit<8> b; bit<16> c; bit<16> d; bit<32> e; bit<32> f; bit<48> g;
    bit<64> x; bit<64> y; bit<3> p; bit<13> q; bit<7> r; bit<1> s; int<8> sa; int<8> sb;
    bit<16> csum;
}
header o_t {
    bit<8> add; bit<8> sub; bit<16> mul; bit<32> div; bit<32> rem; bit<8> shl; bit<32> shr;
    bit<8> sat; bit<8> sats; bit<8> cmp; bit<32> cat; bit<8> sl; bit<16> sx; bit<8> neg;
    bit<16> inv; bit<16> mix; bit<16> pick; bit<64> wide; bit<64> wmul; bit<5> odd; bit<3> pad;
    int<8> ashr; bit<48> gx;
}
struct headers { h_t h; o_t o; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.o); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.o.add = hdr.h.a + hdr.h.b;
        hdr.o.sub = hdr.h.a - hdr.h.b;
        hdr.o.mul = hdr.h.c * hdr.h.d;
        hdr.o.div = hdr.h.e / hdr.h.f;
        hdr.o.rem = hdr.h.e % hdr.h.f;
        hdr.o.shl = hdr.h.a << hdr.h.b[3:0];
        hdr.o.shr = hdr.h.e >> hdr.h.f[5:0];
        hdr.o.sat = hdr.h.a |+| hdr.h.b;
        hdr.o.sats = hdr.h.a |-| hdr.h.b;
        hdr.o.cmp = (bit<1>) (hdr.h.sa < hdr.h.sb) ++ (bit<1>) (hdr.h.a < hdr.h.b)
            ++ (bit<1>) (hdr.h.c >= hdr.h.d) ++ (bit<1>) (hdr.h.sa >= hdr.h.sb)
            ++ (bit<1>) (hdr.h.e == hdr.h.f) ++ (bit<1>) (hdr.h.e != hdr.h.f)
            ++ (bit<1>) (hdr.h.a > 3 && hdr.h.b < 9) ++ (bit<1>) (hdr.h.a > 3 || hdr.h.b < 9);
        hdr.o.cat = hdr.h.a ++ hdr.h.b ++ hdr.h.c;
        hdr.o.sl = hdr.h.x[47:40];
        hdr.o.sx = (bit<16>) ((int<16>) hdr.h.sa);
        hdr.o.neg = -hdr.h.a;
        hdr.o.inv = ~hdr.h.c ^ (hdr.h.d & 0x0ff0) | (hdr.h.c & 3);
        hdr.o.mix = hdr.h.p ++ hdr.h.q;
        hdr.o.pick = hdr.h.s == 1 ? hdr.h.c : hdr.h.d;
        hdr.o.wide = hdr.h.x + (hdr.h.y >> 3);
        hdr.o.wmul = hdr.h.y * 3 - hdr.h.x;
        hdr.o.odd = hdr.h.r[6:2] + 1;
        hdr.o.ashr = hdr.h.sa >> hdr.h.b[2:0];
        hdr.o.gx = hdr.h.g ^ 48w0x0102030405;
        hdr.h.p = hdr.h.p + 1;
        hdr.h.q = hdr.h.q ^ 13w0x1abc;
        hdr.h.r = hdr.h.r - 1;
        hdr.h.s = ~hdr.h.s;
        sm.egress_spec = 2;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) {
    apply {
        update_checksum(true, { hdr.h.e, hdr.h.f, hdr.h.a, hdr.h.b, hdr.h.c, hdr.h.p, hdr.h.q,
            hdr.o.add, hdr.o.sub, hdr.h.g, hdr.h.x, hdr.h.y }, hdr.h.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.o); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// A small deterministic generator of packet bytes.
fn bytes(seed: &mut u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed >> 24) as u8
        })
        .collect()
}

/// Asserts that the twin's datapath ran more than `hits` packets with compiled programs,
/// every one of which got native code.
fn assert_native(twin: &common::Twin<'_>, hits: u64) {
    let st = twin.dp.stats();
    assert_eq!(st.compile_mismatch, 0, "{st:?}");
    assert!(
        st.compiled_hits > hits,
        "{st:?} {:?}",
        twin.dp.not_compiled_reasons()
    );
    assert!(st.jit_compiled > 0, "no native code: {st:?}");
    assert_eq!(st.jit_not_compiled, 0, "{st:?}");
}

#[test]
fn native_code_gives_the_interpreters_outputs() {
    let p = common::compile_str(OPS).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    // h is 43 bytes, o 58; a payload of 5.
    let len = 43 + 58 + 5;
    let mut specials = vec![vec![0u8; len], vec![0xff; len]];
    for v in &mut specials {
        // Divide by zero and by one.
        let one = u8::from(v[0] == 0xff);
        v[10..14].copy_from_slice(&[0, 0, 0, one]);
    }
    for i in 0..300 {
        let pkt = match specials.get(i) {
            Some(v) => v.clone(),
            None => bytes(&mut seed, len),
        };
        twin.send(&pkt, 1);
    }
    assert_native(&twin, 200);
    let flows = twin.dp.dump_flows(8).concat();
    assert!(flows.contains(" actions (native):"), "{flows}");
}

/// Two parse paths (a tag selected by EtherType, then a port-dependent extra header) and a
/// length-dependent key: packets alternate between the paths, so each path's template gets
/// native code and must refuse the other path's packets.
const PATHS: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> type; }
header x_t { bit<8> v; }
struct headers { eth_t eth; tag_t tag; x_t x; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x8100: tag; default: more; }
    }
    state tag { pkt.extract(hdr.tag); transition more; }
    state more {
        transition select(sm.ingress_port) { 2: x; default: accept; }
    }
    state x { pkt.extract(hdr.x); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.tag.isValid()) {
            sm.egress_spec = (bit<9>) hdr.tag.vid[3:0];
            hdr.tag.pcp = hdr.tag.pcp + 1;
        } else if (hdr.x.isValid()) {
            sm.egress_spec = (bit<9>) hdr.x.v[2:0];
        } else {
            sm.egress_spec = (bit<9>) hdr.eth.dst[3:0];
        }
        hdr.eth.src = hdr.eth.src + (bit<48>) sm.packet_length;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); pkt.emit(hdr.x); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn native_templates_keep_to_their_parse_path() {
    let p = common::compile_str(PATHS).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for i in 0..400 {
        let mut pkt = bytes(&mut seed, 20 + i % 7);
        // Tagged, untagged (with the extra header on port 2), and a short tagged packet that
        // no template may accept.
        match i % 3 {
            0 => pkt[12..14].copy_from_slice(&[0x81, 0x00]),
            1 => pkt[12..14].copy_from_slice(&[0x08, 0x00]),
            _ => {
                pkt[12..14].copy_from_slice(&[0x81, 0x00]);
                pkt.truncate(16);
            }
        }
        let port = if i % 5 == 0 { 2 } else { 1 };
        twin.send(&pkt, port);
    }
    let st = twin.dp.stats();
    assert!(st.jit_templates >= 2, "{st:?}");
    assert_eq!(st.jit_mismatch, 0, "{st:?}");
}

/// Three parse paths told apart by one byte (`l3.proto`): tcp-like, udp-like, neither.
const PROTOS: &str = r#"
#include <core.p4>
#include <v1model.p4>
header l3_t { bit<8> ver; bit<8> proto; bit<16> len; }
header a_t { bit<16> sport; bit<16> dport; bit<8> flags; }
header b_t { bit<16> sport; bit<16> dport; }
struct headers { l3_t l3; a_t a; b_t b; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.l3);
        transition select(hdr.l3.ver, hdr.l3.proto) {
            (4, 6): parse_a;
            (4, 17): parse_b;
            default: accept;
        }
    }
    state parse_a { pkt.extract(hdr.a); transition accept; }
    state parse_b { pkt.extract(hdr.b); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.a.isValid()) {
            sm.egress_spec = (bit<9>) hdr.a.dport[2:0];
            hdr.a.flags = hdr.a.flags + 1;
        } else if (hdr.b.isValid()) {
            sm.egress_spec = (bit<9>) hdr.b.sport[2:0];
        } else {
            sm.egress_spec = 7;
        }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.l3); pkt.emit(hdr.a); pkt.emit(hdr.b); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn a_mix_of_paths_takes_the_template_its_protocol_byte_names() {
    let p = common::compile_str(PROTOS).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..600 {
        let mut pkt = bytes(&mut seed, 12 + i % 5);
        // An even mix of the two protocols, a few of neither, and a few too short for
        // their path (no template may take those).
        pkt[0] = 4;
        pkt[1] = match i % 7 {
            0 => 1,
            k if k % 2 == 0 => 6,
            _ => 17,
        };
        if i % 11 == 0 {
            pkt.truncate(6);
        }
        twin.send(&pkt, 1);
    }
    let st = twin.dp.stats();
    assert!(st.jit_templates >= 2, "{st:?}");
    assert_eq!(st.jit_mismatch, 0, "{st:?}");
    // Once both paths have native code, a packet of either is guessed right.
    assert!(st.template_guesses > 300, "{st:?}");
}

/// What native code hands to the interpreter's own functions: v1model hashes over aligned and
/// unaligned data, saturating signed arithmetic, and a register value read by the program.
const HELPED: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<3> p; bit<13> q; bit<32> e; int<8> sa; int<8> sb; bit<8> i; }
header o_t {
    bit<32> crc32; bit<16> crc16; bit<16> id; bit<16> x16; bit<8> small; int<8> adds;
    int<8> subs; bit<32> reg; bit<16> wide;
}
struct headers { h_t h; o_t o; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.o); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(16) r;
    apply {
        hash(hdr.o.crc32, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.h.e }, 32w0xffffffff);
        hash(hdr.o.crc16, HashAlgorithm.crc16, 16w0, { hdr.h.p, hdr.h.q, hdr.h.a + 1 }, 17w0x10000);
        hash(hdr.o.id, HashAlgorithm.identity, 16w0, { hdr.h.q, hdr.h.p }, 17w0x10000);
        hash(hdr.o.x16, HashAlgorithm.xor16, 16w0, { hdr.h.e, hdr.h.p }, 17w0x10000);
        hash(hdr.o.small, HashAlgorithm.crc32, 8w5, { hdr.h.e }, 16w100);
        hdr.o.adds = hdr.h.sa |+| hdr.h.sb;
        hdr.o.subs = hdr.h.sa |-| hdr.h.sb;
        bit<32> v;
        r.read(v, (bit<32>) hdr.h.i[3:0]);
        r.write((bit<32>) hdr.h.i[3:0], v + hdr.h.e);
        hdr.o.reg = v + 1;
        sm.egress_spec = 3;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.o); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn native_code_calls_the_interpreters_functions_exactly() {
    let p = common::compile_str(HELPED).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut seed = 0x0123_4567_89ab_cdefu64;
    // h is 10 bytes, o 19; a payload of 3.
    for _ in 0..300 {
        let pkt = bytes(&mut seed, 10 + 19 + 3);
        twin.send(&pkt, 1);
    }
    assert_native(&twin, 200);
    // The registers ended the same both ways.
    assert_eq!(format!("{:?}", twin.sd), format!("{:?}", twin.si));
}

/// koi's FNV members of v1model's `HashAlgorithm` (bytes as unsigned and as signed chars),
/// over aligned and unaligned fields and a
/// varbit key of 0 to `KEY` bytes (the first byte's low bits: `LEN` is `2:0` or `4:0`)
/// followed by a byte (as AppSwitch hashes its keys), into results of 16, 32 and 64 bits.
const FNV: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; bit<8> a; bit<3> p; bit<13> q; bit<32> e; }
header k_t { varbit<256> k; }
header o_t {
    bit<64> a64; bit<32> a32; bit<64> f64; bit<32> f32; bit<32> low; bit<32> low1; bit<16> m;
    bit<32> sa32; bit<32> s1low;
}
struct headers { h_t h; k_t k; o_t o; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.k, (bit<32>) hdr.h.n[LEN] * 8);
        pkt.extract(hdr.o);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hash(hdr.o.a64, HashAlgorithm.fnv1a_64, 64w0, { hdr.h.a, hdr.h.e }, 64w0xffffffffffffffff);
        hash(hdr.o.a32, HashAlgorithm.fnv1a_32, 32w0, { hdr.h.p, hdr.h.q, hdr.h.a }, 64w0x100000000);
        hash(hdr.o.f64, HashAlgorithm.fnv1_64, 64w0, { hdr.h.e, hdr.h.p }, 64w0xffffffffffffffff);
        hash(hdr.o.f32, HashAlgorithm.fnv1_32, 32w0, { hdr.h.q }, 33w0x100000000);
        hash(hdr.o.low, HashAlgorithm.fnv1a_64, 32w0, { hdr.k.k, hdr.h.a }, 64w0x100000000);
        hash(hdr.o.low1, HashAlgorithm.fnv1_64, 32w0, { hdr.k.k }, 64w0x100000000);
        hash(hdr.o.m, HashAlgorithm.fnv1a_32, 16w7, { hdr.h.e }, 16w1000);
        hash(hdr.o.sa32, HashAlgorithm.fnv1a_32_signed, 32w0, { hdr.k.k, hdr.h.a }, 64w0x100000000);
        hash(hdr.o.s1low, HashAlgorithm.fnv1_64_signed, 32w0, { hdr.k.k }, 64w0x100000000);
        sm.egress_spec = 2;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.k); pkt.emit(hdr.o); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// A byte as the FNV hashes take it: its value, or (`signed`) a signed char's, sign-extended.
fn widen(b: u8, signed: bool) -> u64 {
    if signed {
        b as i8 as i64 as u64
    } else {
        u64::from(b)
    }
}

/// FNV-1 (`a` false) or FNV-1a of `bytes`, 64 bits (offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3), the bytes taken as [`widen`] takes them.
fn fnv64(bytes: &[u8], a: bool, signed: bool) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        let v = widen(b, signed);
        if a {
            (h ^ v).wrapping_mul(0x100_0000_01b3)
        } else {
            h.wrapping_mul(0x100_0000_01b3) ^ v
        }
    })
}

/// FNV-1a of `bytes`, 32 bits (offset basis 0x811c9dc5, prime 0x01000193), the bytes taken
/// as [`widen`] takes them.
fn fnv1a32(bytes: &[u8], signed: bool) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ widen(b, signed) as u32).wrapping_mul(0x0100_0193)
    })
}

/// Sends 400 random packets of [`FNV`] with keys of up to `max_key` bytes (7 or 31) through
/// a twin, checking each output against FNV computed here; returns the twin.
fn fnv_twin(p: &koi_ir::Pipeline, max_key: u8) -> common::Twin<'_> {
    let mut twin = common::Twin::new(p, |_| {});
    let mut seed = 0x5eed_f00d_1234_5678u64;
    let k = usize::from(max_key);
    // h is 8 bytes, the key up to `max_key`, o 42; a payload of 3.
    for i in 0..400 {
        let mut pkt = bytes(&mut seed, 8 + k + 42 + 3);
        if i % 4 == 0 {
            // The key's bytes at and above 0x80 too.
            for b in &mut pkt[8..8 + k] {
                *b |= 0x80;
            }
        }
        let n = usize::from(pkt[0] & max_key);
        let (outs, _) = twin.send(&pkt, 1);
        let [(2, out)] = outs.as_slice() else {
            panic!("one output on port 2: {outs:?}");
        };
        // The values written, against FNV computed here.
        let (a, e, key) = (pkt[1], &pkt[4..8], &pkt[8..8 + n]);
        let o = &out[8 + n..8 + n + 42];
        let be =
            |r: std::ops::Range<usize>| o[r].iter().fold(0u64, |v, b| (v << 8) | u64::from(*b));
        let ae: Vec<u8> = [a].iter().chain(e).copied().collect();
        assert_eq!(be(0..8), fnv64(&ae, true, false) % u64::MAX, "packet {i}");
        let key_a: Vec<u8> = key.iter().copied().chain([a]).collect();
        assert_eq!(
            be(24..28),
            fnv64(&key_a, true, false) & 0xffff_ffff,
            "packet {i}"
        );
        assert_eq!(
            be(28..32),
            fnv64(key, false, false) & 0xffff_ffff,
            "packet {i}"
        );
        assert_eq!(
            be(32..34),
            7 + u64::from(fnv1a32(e, false)) % 1000,
            "packet {i}"
        );
        assert_eq!(be(34..38), u64::from(fnv1a32(&key_a, true)), "packet {i}");
        assert_eq!(
            be(38..42),
            fnv64(key, false, true) & 0xffff_ffff,
            "packet {i}"
        );
    }
    twin
}

#[test]
fn fnv_hashes_are_the_interpreters_compiled_and_native() {
    // Keys of up to 7 bytes: every program gets native code.
    let p = common::compile_str(&FNV.replace("LEN", "2:0")).unwrap_or_else(|e| panic!("{e}"));
    assert_native(&fnv_twin(&p, 7), 300);
    // Up to 31: a hash over a varbit of more than 64 bits keeps an interpreted action
    // program (as a CRC does), compiled all the same.
    let p = common::compile_str(&FNV.replace("LEN", "4:0")).unwrap_or_else(|e| panic!("{e}"));
    let st = fnv_twin(&p, 31).dp.stats();
    assert_eq!(st.compile_mismatch, 0, "{st:?}");
    assert_eq!(st.not_compiled, 0, "{st:?}");
    assert!(st.compiled_hits > 300, "{st:?}");
}

/// Twemproxy's five hashkit hashes (`hashkit_*`) over a varbit key of 0 to 7 bytes and a
/// byte, into 32-bit results; the last also by 1000 from 5, into 16 bits.
const HASHKIT: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; bit<8> a; }
header k_t { varbit<56> k; }
header o_t { bit<32> oat; bit<32> md5; bit<32> hsieh; bit<32> murmur; bit<32> jenkins; bit<16> m; }
struct headers { h_t h; k_t k; o_t o; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.k, (bit<32>) hdr.h.n[2:0] * 8);
        pkt.extract(hdr.o);
        transition accept;
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hash(hdr.o.oat, HashAlgorithm.hashkit_one_at_a_time, 32w0, { hdr.k.k, hdr.h.a }, 64w0x100000000);
        hash(hdr.o.md5, HashAlgorithm.hashkit_md5, 32w0, { hdr.k.k, hdr.h.a }, 64w0x100000000);
        hash(hdr.o.hsieh, HashAlgorithm.hashkit_hsieh, 32w0, { hdr.k.k, hdr.h.a }, 64w0x100000000);
        hash(hdr.o.murmur, HashAlgorithm.hashkit_murmur, 32w0, { hdr.k.k, hdr.h.a }, 64w0x100000000);
        hash(hdr.o.jenkins, HashAlgorithm.hashkit_jenkins, 32w0, { hdr.k.k, hdr.h.a }, 64w0x100000000);
        hash(hdr.o.m, HashAlgorithm.hashkit_jenkins, 16w5, { hdr.k.k }, 16w1000);
        sm.egress_spec = 2;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.k); pkt.emit(hdr.o); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// 400 random packets of [`HASHKIT`] (a quarter with key bytes of 0x80 and more), each
/// output against koi-hash's functions (which its tests check against twemproxy's): the
/// interpreter's values, compiled and native.
#[test]
fn hashkit_hashes_are_the_interpreters_compiled_and_native() {
    use koi_hash::hashkit;
    let p = common::compile_str(HASHKIT).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    let mut seed = 0x0123_4567_89ab_cdefu64;
    for i in 0..400 {
        let mut pkt = bytes(&mut seed, 2 + 7 + 22 + 3);
        if i % 4 == 0 {
            for b in &mut pkt[2..9] {
                *b |= 0x80;
            }
        }
        let n = usize::from(pkt[0] & 7);
        let (outs, _) = twin.send(&pkt, 1);
        let [(2, out)] = outs.as_slice() else {
            panic!("one output on port 2: {outs:?}");
        };
        let key = &pkt[2..2 + n];
        let key_a: Vec<u8> = key.iter().copied().chain([pkt[1]]).collect();
        let o = &out[2 + n..2 + n + 22];
        let be =
            |r: std::ops::Range<usize>| o[r].iter().fold(0u32, |v, b| (v << 8) | u32::from(*b));
        let want = [
            hashkit::one_at_a_time(&key_a),
            hashkit::md5(&key_a),
            hashkit::hsieh(&key_a),
            hashkit::murmur(&key_a),
            hashkit::jenkins(&key_a),
        ];
        let got: Vec<u32> = (0..5).map(|j| be(4 * j..4 * j + 4)).collect();
        assert_eq!(got, want, "packet {i}");
        assert_eq!(be(20..22), 5 + hashkit::jenkins(key) % 1000, "packet {i}");
    }
    assert_native(&twin, 300);
}

/// One program per table entry: each rewrites the destination with its own constant.
const PER_ENTRY: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<48> dst; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<48> d) { hdr.h.dst = d; sm.egress_spec = 1; }
    table t { key = { hdr.h.k: exact; } actions = { set; NoAction; } default_action = NoAction(); }
    apply { t.apply(); }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// One program per table entry, each of its own shape: the entry's constant is an operand of
/// the computation (`dst ^ d`), not just a value written.
const PER_ENTRY_SHAPES: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<48> dst; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<48> d) { hdr.h.dst = hdr.h.dst ^ d; sm.egress_spec = 1; }
    table t { key = { hdr.h.k: exact; } actions = { set; NoAction; } default_action = NoAction(); }
    apply { t.apply(); }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// Ten entries of `program`, entry `k` with action `set(0x200 + k)` (48 bits).
fn ten_entries(program: &str) -> (koi_ir::Pipeline, koi_state::State) {
    let p = common::compile_str(program).unwrap_or_else(|e| panic!("{e}"));
    let mut state = koi_state::State::new(&p).unwrap_or_else(|e| panic!("{e}"));
    for k in 0..10u64 {
        let spec = koi_state::EntrySpec {
            keys: vec![koi_ir::Pattern::Exact(koi_ir::Bits::from_u64(8, k))],
            action: koi_state::ActionSpec::action(
                "set",
                vec![koi_ir::Bits::from_u64(48, 0x200 + k)],
            ),
            priority: None,
            timeout_ns: None,
        };
        state.table_add("t", spec).unwrap_or_else(|e| panic!("{e}"));
    }
    (p, state)
}

/// A datapath over `p` that compiles from the first hit, `rate` compiles a second in bursts
/// of `burst`.
fn rate_limited(p: &koi_ir::Pipeline, rate: u64, burst: u64) -> koi_datapath::Datapath<'_> {
    let config = koi_datapath::DatapathConfig {
        jit_after: Some(1),
        jit_rate: rate,
        jit_burst: burst,
        ..koi_datapath::DatapathConfig::default()
    };
    koi_datapath::Datapath::with_config(p, koi_interp::Options::default(), config)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Compiles are rate-limited like upcalls: with a bucket of 3 and 1 per second, the parse
/// template and ten hot programs (each of its own shape) at one instant get 3 compiles
/// between them; the others stay interpreted (and exact) until the clock gives tokens back.
#[test]
fn compiles_are_rate_limited() {
    use koi_state::Clock;
    let (p, mut state) = ten_entries(PER_ENTRY_SHAPES);
    let mut dp = rate_limited(&p, 1, 3);
    let mut interp = koi_interp::Interpreter::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let clock = koi_state::ManualClock::new(1_000);
    let mut si = state.clone();
    let mut send = |dp: &mut koi_datapath::Datapath<'_>, k: u8| {
        let pkt = [k, 0, 0, 0, 0, 0, 0, 9];
        let want = interp.process(&mut si, &pkt, 2, &clock);
        assert_eq!(dp.process(&mut state, &pkt, 2, &clock), want);
    };
    // Each flow: a miss, then hits (the first hit makes its program hot).
    for _ in 0..3 {
        for k in 0..10 {
            send(&mut dp, k);
        }
    }
    let st = dp.stats();
    assert_eq!(st.jit_templates, 1, "{st:?}");
    assert_eq!(st.jit_compiled, 2, "{st:?}");
    assert!(st.jit_deferred > 0, "{st:?}");
    clock.advance_ns(2_000_000_000);
    assert!(clock.now_ns() > 2_000_000_000);
    for k in 0..10 {
        send(&mut dp, k);
    }
    // Two seconds gave two tokens back.
    assert_eq!(dp.stats().jit_compiled, 4, "{:?}", dp.stats());
}

/// Taking the code of a shape that has some compiles nothing, so it needs no token: with a
/// bucket of 2, the template and the first program of `PER_ENTRY`'s shape take both, and
/// the nine other programs of that shape get native code at once all the same.
#[test]
fn programs_of_a_compiled_shape_take_its_code_without_a_token() {
    let (p, mut state) = ten_entries(PER_ENTRY);
    let mut dp = rate_limited(&p, 1, 2);
    let mut interp = koi_interp::Interpreter::new(&p).unwrap_or_else(|e| panic!("{e}"));
    let clock = koi_state::ManualClock::new(1_000);
    let mut si = state.clone();
    for _ in 0..3 {
        for k in 0..10u8 {
            let pkt = [k, 0, 0, 0, 0, 0, 0, 9];
            let want = interp.process(&mut si, &pkt, 2, &clock);
            assert_eq!(dp.process(&mut state, &pkt, 2, &clock), want);
        }
    }
    let st = dp.stats();
    assert_eq!(st.jit_templates, 1, "{st:?}");
    assert_eq!(st.jit_compiled, 10, "{st:?}");
    assert_eq!(st.jit_modules, 2, "{st:?}");
    assert_eq!(st.jit_deferred, 0, "{st:?}");
}

/// Programs that differ only in the constants they write share one module of native code,
/// each with its own constants: ten entries, ten programs, two modules (with the template's).
#[test]
fn programs_of_one_shape_share_their_code() {
    let p = common::compile_str(PER_ENTRY).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        for k in 0..10u64 {
            let spec = koi_state::EntrySpec {
                keys: vec![koi_ir::Pattern::Exact(koi_ir::Bits::from_u64(8, k))],
                action: koi_state::ActionSpec::action(
                    "set",
                    vec![koi_ir::Bits::from_u64(48, 0x0a0b_0c0d_0e00 + k)],
                ),
                priority: None,
                timeout_ns: None,
            };
            s.table_add("t", spec).unwrap_or_else(|e| panic!("{e}"));
        }
    });
    for _ in 0..40 {
        for k in 0..10u8 {
            twin.send(&[k, 0, 0, 0, 0, 0, 0, 9], 2);
        }
    }
    let st = twin.dp.stats();
    assert_eq!(st.jit_compiled, 10, "{st:?}");
    assert_eq!(st.jit_mismatch, 0, "{st:?}");
    assert_eq!(st.jit_modules, 2, "{st:?}");
}

/// One program per session, as a tunnel endpoint makes them: each counts into its session's
/// counter (an index from the entry) and writes its tunnel id, which the checksum also
/// covers, so the entry's constants are operands as well as values written. `INDEX` is the
/// counter's index: the session's, or (`per_packet`) one read from the packet.
const PER_SESSION: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<32> teid; bit<48> dst; bit<16> csum; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    counter(16, CounterType.packets_and_bytes) usage;
    action set(bit<32> session, bit<32> teid, bit<48> d) {
        usage.count(INDEX);
        hdr.h.teid = teid;
        hdr.h.dst = hdr.h.dst ^ d;
        sm.egress_spec = 1;
    }
    table t { key = { hdr.h.k: exact; } actions = { set; NoAction; } default_action = NoAction(); }
    apply { t.apply(); }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) {
    apply {
        update_checksum(true, { hdr.h.teid, hdr.h.dst }, hdr.h.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// [`PER_SESSION`] with counter index `index`, ten sessions, each of its ten packets sent
/// four times through a twin: the native modules made (the parse template's included).
fn per_session_modules(index: &str) -> u64 {
    let src = PER_SESSION.replace("INDEX", index);
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |s| {
        for k in 0..10u64 {
            let spec = koi_state::EntrySpec {
                keys: vec![koi_ir::Pattern::Exact(koi_ir::Bits::from_u64(8, k))],
                action: koi_state::ActionSpec::action(
                    "set",
                    vec![
                        koi_ir::Bits::from_u64(32, k + 1),
                        koi_ir::Bits::from_u64(32, 0x00a0_0000 + 7 * k),
                        koi_ir::Bits::from_u64(48, 0x0a0b_0c0d_0e00 + k),
                    ],
                ),
                priority: None,
                timeout_ns: None,
            };
            s.table_add("t", spec).unwrap_or_else(|e| panic!("{e}"));
        }
    });
    for round in 0..4u8 {
        for k in 0..10u8 {
            twin.send(&[k, 0, 0, 0, 0, 0, 0, 0, 0, 0, round, 0, 0], 2);
        }
    }
    let st = twin.dp.stats();
    assert_eq!(st.jit_compiled, 10, "{st:?}");
    assert_eq!(st.jit_mismatch, 0, "{st:?}");
    // Every session counted its packets and bytes as the interpreter did.
    assert_eq!(format!("{:?}", twin.sd), format!("{:?}", twin.si));
    st.jit_modules
}

/// Programs with state operations whose values are constants share native code by their
/// loose shape, each with its own constants (its tunnel id, in the checksum too): ten
/// sessions, two modules (one with the template's).
#[test]
fn sessions_with_their_own_counters_share_their_code() {
    assert_eq!(per_session_modules("session"), 2);
}

/// A state operation with a value from the packet (a counter indexed by a header field the
/// megaflow does not match, so not a constant of the program)
/// keeps that value's native code: a module per program (and the template's).
#[test]
fn a_state_value_from_the_packet_keeps_its_own_code() {
    assert_eq!(per_session_modules("(bit<32>) hdr.h.csum[3:0]"), 11);
}

/// A parser that tells one port value from all others, as a UDP port tells GTP-U or VXLAN
/// from the rest: `select(port) { 4789: x; default: accept; }`.
const ONE_PORT: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<16> port; }
header x_t { bit<8> v; }
struct headers { h_t h; x_t x; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.port) { 4789: x; default: accept; }
    }
    state x { pkt.extract(hdr.x); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = hdr.x.isValid() ? 9w2 : 9w1;
        hdr.h.k = hdr.h.k + 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.x); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// The default way of such a select holds for every value but 4789: one parse-path
/// template takes the packets of 60 ports (each would need a template of its own, and the
/// eight kept would leave most packets to full parses), and a packet to 4789 takes the other
/// way, never the default one's template; outputs as the interpreter's.
#[test]
fn a_select_default_after_exact_values_is_one_template() {
    let p = common::compile_str(ONE_PORT).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    for round in 0..3u8 {
        for port in (1000u16..1060).chain([4789]) {
            let [hi, lo] = port.to_be_bytes();
            let (outs, _) = twin.send(&[round, hi, lo, 7, 0, 0], 1);
            let want = if port == 4789 { 2 } else { 1 };
            assert_eq!(outs.len(), 1, "port {port}");
            assert_eq!(outs[0].0, want, "port {port}");
        }
    }
    let st = twin.dp.stats();
    // One full parse per way, the first packet of each; templates for the rest.
    assert_eq!(st.full_parses, 2, "{st:?}");
    assert_eq!(st.template_hits, 3 * 61 - 2, "{st:?}");
    // The select depended on one bit of the port (the highest where 1000-1059 differ from
    // 4789): one megaflow for the 60 ports, one for 4789.
    assert_eq!(st.installs, 2, "{st:?}");
}

/// `ONE_PORT` with a check of `parser_error` (as functions that count malformed packets
/// have): that decision depends on nothing the parse path's own decisions do not fix, so the
/// 60 ports still share a megaflow; runts, which stop the parse early, get theirs, and every
/// output is the interpreter's.
#[test]
fn a_check_of_parser_error_keeps_the_path_s_masks() {
    let src = ONE_PORT.replace(
        "sm.egress_spec = hdr.x.isValid() ? 9w2 : 9w1;",
        "if (sm.parser_error != error.NoError) { mark_to_drop(sm); return; }\n\
         sm.egress_spec = hdr.x.isValid() ? 9w2 : 9w1;",
    );
    assert_ne!(src, ONE_PORT);
    let p = common::compile_str(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    for round in 0..3u8 {
        for port in (1000u16..1060).chain([4789]) {
            let [hi, lo] = port.to_be_bytes();
            let (outs, _) = twin.send(&[round, hi, lo, 7, 0, 0], 1);
            assert_eq!(outs.len(), 1, "port {port}");
            // Too short for h (a parse error): dropped; 4789 without room for x: dropped.
            let (outs, _) = twin.send(&[round, hi], 1);
            assert!(outs.is_empty(), "runt of port {port}");
            let (outs, _) = twin.send(&[round, hi, lo], 1);
            assert_eq!(
                outs.len(),
                usize::from(port != 4789),
                "port {port} without x"
            );
        }
    }
    let st = twin.dp.stats();
    assert!(st.installs <= 6, "a megaflow per port? {st:?}");
}

/// `verify` in the parser: the fast parser follows it (a failed one leaves the packet to the
/// interpreter, which sets the parser error), and a parse-path template carries it as a range
/// check, so that a template made by a passing packet never takes a failing one.
const VERIFIED: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<4> version; bit<4> ihl; bit<8> next; }
header x_t { bit<8> v; }
struct headers { h_t h; x_t x; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.version == 4, error.NoMatch);
        verify(hdr.h.ihl >= 5, error.StackOutOfBounds);
        transition select(hdr.h.next) { 1: x; default: accept; }
    }
    state x { pkt.extract(hdr.x); verify(7 > hdr.x.v, error.HeaderTooShort); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = sm.parser_error == error.NoError ? 9w1 : 9w2;
        hdr.h.next = hdr.h.next + 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.x); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn verify_is_followed_and_templates_check_its_range() {
    let p = common::compile_str(VERIFIED).unwrap_or_else(|e| panic!("{e}"));
    let mut twin = common::Twin::new(&p, |_| {});
    assert!(twin.dp.has_fast_parser());
    // The same packets through a datapath without native code: its templates' own checks.
    let config = koi_datapath::DatapathConfig {
        jit_after: None,
        ..koi_datapath::DatapathConfig::default()
    };
    let mut plain = koi_datapath::Datapath::with_config(&p, koi_interp::Options::default(), config)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut plain_state = twin.sd.clone();
    let mut seed = 0x5151_7777_0000_0001u64;
    let mut ports = std::collections::BTreeSet::new();
    for i in 0..400 {
        let mut pkt = bytes(&mut seed, 8);
        // Mostly version 4 with an ihl of 5 to 15, sometimes anything; `next` 1 half the
        // time; `x.v` mostly below 7.
        if i % 4 != 3 {
            pkt[0] = 0x40 | (5 + pkt[0] % 11);
        }
        pkt[1] = if i % 2 == 0 { 1 } else { 0 };
        if i % 5 != 4 {
            pkt[2] &= 3;
        }
        let (out, _) = twin.send(&pkt, 1);
        ports.extend(out.iter().map(|(port, _)| *port));
        let o = plain
            .process(&mut plain_state, &pkt, 1, &twin.clock)
            .unwrap_or_else(|e| panic!("{e}"));
        let plain_out: Vec<_> = o
            .outputs
            .iter()
            .map(|o| (o.port, o.bytes.clone()))
            .collect();
        assert_eq!(plain_out, out, "packet {pkt:?}");
    }
    let st = twin.dp.stats();
    // Both outcomes happened, and passing packets were compiled.
    assert_eq!(ports.into_iter().collect::<Vec<_>>(), vec![1, 2], "{st:?}");
    assert!(st.compiled_hits > 150, "{st:?}");
    assert!(st.jit_templates >= 1, "{st:?}");
}
