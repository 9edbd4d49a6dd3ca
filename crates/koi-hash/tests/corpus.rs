//! Cross-checks against p4c's STF tests (`shared/corpus/stf/`): the packets below are copied
//! from the `.stf` files named in each test, and the hash or checksum koi computes over the
//! program's field list must be the value in the expected output packet.

use koi_hash::BitString;
use koi_hash::psa::{InternetChecksum, PsaHash, PsaHashAlgorithm};
use koi_hash::v1model::{Calculation, HashAlgorithm};

/// Bytes of a hex string; spaces are ignored.
fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .map(|b| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => 0,
        })
        .collect();
    digits.chunks(2).map(|p| (p[0] << 4) | p[1]).collect()
}

/// The `width`-bit field at bit offset `off` of `bytes`.
fn field(bytes: &[u8], off: usize, width: usize) -> u64 {
    (off..off + width).fold(0, |v, i| {
        (v << 1) | u64::from((bytes[i / 8] >> (7 - i % 8)) & 1)
    })
}

/// Pushes the fields `(width, ...)` read one after the other from `bytes`, skipping none.
fn push_fields(out: &mut BitString, bytes: &[u8], widths: &[usize]) {
    let mut off = 0;
    for &w in widths {
        out.push_u64(field(bytes, off, w), w);
        off += w;
    }
}

/// An IPv4 header (starting at `ip`) and where its parts are.
struct Ipv4<'a> {
    hdr: &'a [u8],
}

impl<'a> Ipv4<'a> {
    fn at(pkt: &'a [u8], off: usize) -> Self {
        let ihl = usize::from(pkt[off] & 0x0F);
        Self {
            hdr: &pkt[off..off + 4 * ihl],
        }
    }
    fn checksum(&self) -> u64 {
        field(self.hdr, 80, 16)
    }
    fn protocol(&self) -> u64 {
        field(self.hdr, 72, 8)
    }
    fn total_len(&self) -> u64 {
        field(self.hdr, 16, 16)
    }
    fn src_dst(&self) -> &'a [u8] {
        &self.hdr[12..20]
    }
    /// The field list of the corpus programs' IPv4 `verify_checksum` / `update_checksum`:
    /// version, ihl, diffserv, totalLen, identification, flags, fragOffset, ttl, protocol,
    /// srcAddr, dstAddr (and options, if `with_options`), skipping hdrChecksum.
    fn field_list(&self, with_options: bool) -> BitString {
        let mut b = BitString::new();
        push_fields(&mut b, self.hdr, &[4, 4, 8, 16, 16, 3, 13, 8, 8]);
        b.push_u64(field(self.hdr, 96, 32), 32);
        b.push_u64(field(self.hdr, 128, 32), 32);
        if with_options {
            b.push_bytes(&self.hdr[20..]);
        }
        b
    }
}

fn csum16() -> Calculation {
    Calculation::new(HashAlgorithm::Csum16)
}

// v1model/constant-in-calculation-bmv2: hash(h.a, crc16, 10w0, { 16w1 }, 10w4); packet ABAB
// comes out as 0001.
#[test]
fn constant_in_calculation() {
    let mut data = BitString::new();
    data.push_u64(1, 16);
    let c = Calculation::new(HashAlgorithm::Crc16);
    assert_eq!(c.hash(&data, 0, 4, 16), Some(0x0001));
}

// v1model/issue1049-bmv2: hash(hash1, crc16, 16w0, { srcAddr, dstAddr, protocol }, 0xffff),
// then dstAddr = hash1 ++ 7w0 ++ (hash1 < 0x8000) ++ 8w0 ++ (0xdead or 0xc001).
#[test]
fn issue1049_crc16_of_addresses_and_protocol() {
    let cases = [
        (
            "0000 0000 0000 0000 0000 0000 0800 4500 0014 0001 0000 4000 4cce 0c0c 0c0c 1402 0202",
            "8208 0000 c001",
        ),
        (
            "0000 0000 0000 0000 0000 0000 0800 4500 0014 0001 0000 4006 59de 0a01 0101 1402 0202",
            "64bf 0100 dead",
        ),
    ];
    let c = Calculation::new(HashAlgorithm::Crc16);
    for (input, expected_dst_mac) in cases {
        let pkt = hex(input);
        let ip = Ipv4::at(&pkt, 14);
        let mut data = BitString::new();
        data.push_bytes(ip.src_dst());
        data.push_u64(ip.protocol(), 8);
        let h = c.hash(&data, 0, 0xFFFF, 16).unwrap_or(u64::MAX);
        let drop = u64::from(h < 0x8000);
        let tail = if drop == 1 { 0xDEAD } else { 0xC001 };
        let mac = (h << 32) | (drop << 24) | tail;
        assert_eq!(mac.to_be_bytes()[2..].to_vec(), hex(expected_dst_mac));
    }
}

// v1model/issue655-bmv2: ingress does d = d + 1; verify/update_checksum(true, { d }, c, csum16).
#[test]
fn issue655_csum16_of_one_word() {
    let vectors = [
        ("0000 0000", "0001 FFFE"),
        ("0001 FFFE", "0002 FFFD"),
        ("FFFF 0000", "0000 FFFF"),
        ("FFFE 1000", "FFFF 0000"),
        ("FFFD 1000", "FFFE 0001"),
        ("FFFE 0001", "FFFF 0000"),
    ];
    let c = csum16();
    for (input, expected) in vectors {
        let (pkt, out) = (hex(input), hex(expected));
        let d = field(&pkt, 0, 16).wrapping_add(1) & 0xFFFF;
        let mut data = BitString::new();
        data.push_u64(d, 16);
        assert_eq!(field(&out, 0, 16), d);
        assert_eq!(c.update(&data, 16), Some(field(&out, 16, 16)), "{input}");
    }
}

// v1model/checksum1-bmv2: IPv4 header with options; update_checksum over the header fields
// and options. Inputs are verified, outputs carry the recomputed checksum.
#[test]
fn checksum1_ipv4_with_options() {
    let packets = [
        (
            "525400123502080027018bbc0800 4500002800010000400664bf0a00020f0a010001 16a1005000000000000000005002200062e10000",
            "525400123502080027018bbc0800 45000028000100003f0665bb0a00020f0a010005 16a2005000000000000000005002200062e10000",
        ),
        (
            "525400123502080027018bbc0800 4600002c000100004006cdb30a00020f0a02030483031000 157d005000000000000000005002200061010000",
            "525400123502080027018bbc0800 4600002c000100003f06ceaf0a00020f0a02030883031000 157e005000000000000000005002200061010000",
        ),
    ];
    let c = csum16();
    for (input, expected) in packets {
        let (pkt, out) = (hex(input), hex(expected));
        let ip = Ipv4::at(&pkt, 14);
        assert_eq!(c.verify(&ip.field_list(true), ip.checksum()), Some(true));
        let ip = Ipv4::at(&out, 14);
        assert_eq!(c.update(&ip.field_list(true), 16), Some(ip.checksum()));
    }
}

/// The TCP or UDP field list of checksum-l4-bmv2 (pseudo-header, L4 header without its
/// checksum, TCP options) followed by the payload.
fn l4_field_list(pkt: &[u8], ip: &Ipv4<'_>, l4: usize) -> (BitString, u64) {
    let l4_len = ip.total_len() - 4 * u64::from(ip.hdr[0] & 0x0F);
    let mut b = BitString::new();
    b.push_bytes(ip.src_dst());
    b.push_u64(0, 8);
    b.push_u64(ip.protocol(), 8);
    b.push_u64(l4_len, 16);
    let seg = &pkt[l4..];
    if ip.protocol() == 6 {
        let data_offset = usize::from(seg[12] >> 4);
        // srcPort dstPort seqNo ackNo dataOffset res ecn ctrl window; skip checksum; urgentPtr
        push_fields(&mut b, seg, &[16, 16, 32, 32, 4, 3, 3, 6, 16]);
        b.push_u64(field(seg, 144, 16), 16);
        b.push_bytes(&seg[20..4 * data_offset]); // options
        b.push_bytes(&seg[4 * data_offset..]); // payload
        (b, field(seg, 128, 16))
    } else {
        push_fields(&mut b, seg, &[16, 16, 16]);
        b.push_bytes(&seg[8..]);
        (b, field(seg, 48, 16))
    }
}

// v1model/checksum-l4-bmv2: IPv4 (with options) checksum plus TCP and UDP checksums computed
// by update_checksum_with_payload over the pseudo-header, the L4 header and the payload.
#[test]
fn checksum_l4_tcp_and_udp_with_payload() {
    let packets = [
        (
            "525400123502080027018bbc08004500003800010000400664af0a00020f0a01000116a1005000000000000000005002200047a6000064656164626565666465616462656566",
            "525400123502080027018BBC080045000038000100003F0665AB0A00020F0A01000516A2005000000000000000005002200047A1000064656164626565666465616462656566",
        ),
        (
            "525400123502080027018bbc08004600003c000100004006174bc0a801bf0a02030483031000157d00500000000000000000500220008f6d000064656164626565666465616462656566",
            "525400123502080027018BBC08004600003C000100003F061847C0A801BF0A02030883031000157E00500000000000000000500220008F68000064656164626565666465616462656566",
        ),
        (
            "CA0107FC001C11111111111108004500002C00010000401166BA0A0100040A01000116A100500018B99B64656164626565666465616462656566",
            "CA0107FC001C11111111111108004500002C000100003F1167B60A0100040A01000516A200500018B99664656164626565666465616462656566",
        ),
        (
            "525400123502080027018bbc0800460000440001000040061743c0a801bf0a02030483031000157d00500000000000000000700220006ae500000204027c0000000064656164626565666465616462656566",
            "525400123502080027018BBC080046000044000100003F06183FC0A801BF0A02030883031000157E00500000000000000000700220006AE000000204027C0000000064656164626565666465616462656566",
        ),
    ];
    let c = csum16();
    for (input, expected) in packets {
        for (pkt, is_output) in [(hex(input), false), (hex(expected), true)] {
            let ip = Ipv4::at(&pkt, 14);
            let l4 = 14 + ip.hdr.len();
            let (data, l4_checksum) = l4_field_list(&pkt, &ip, l4);
            if is_output {
                assert_eq!(c.update(&ip.field_list(true), 16), Some(ip.checksum()));
                assert_eq!(c.update(&data, 16), Some(l4_checksum), "{expected}");
            } else {
                assert_eq!(c.verify(&ip.field_list(true), ip.checksum()), Some(true));
                assert_eq!(c.verify(&data, l4_checksum), Some(true), "{input}");
            }
        }
    }
}

// v1model/checksum2-bmv2: verify_checksum(hdr.ipv4.isValid(), ...); a failed verification
// makes ingress write 0xbad to the source MAC. Only the third packet (checksum 64d3 instead of
// 64d2) fails.
#[test]
fn checksum2_verify() {
    let inputs = [
        (
            "66778899aabb 001122334455 0800  4500001b 00010000 400064d2 0a00020f 0a010001  7061796c6f6164",
            true,
        ),
        (
            "66778899aabb 001122334455 0800  3500001b 00010000 400074d2 0a00020f 0a010001  7061796c6f6164",
            true,
        ),
        (
            "66778899aabb 001122334455 0800  4500001b 00010000 400064d3 0a00020f 0a010001  7061796c6f6164",
            false,
        ),
    ];
    let c = csum16();
    for (input, ok) in inputs {
        let pkt = hex(input);
        let ip = Ipv4::at(&pkt, 14);
        assert_eq!(
            c.verify(&ip.field_list(false), ip.checksum()),
            Some(ok),
            "{input}"
        );
    }
}

// v1model/checksum3-bmv2: ingress decrements TTL, update_checksum(hdr.ipv4.isValid(), ...)
// rewrites the checksum, even the wrong one of the third packet.
#[test]
fn checksum3_update() {
    let outputs = [
        "66778899aabb 001122334455 0800  4500001b 00010000 3f0065d2 0a00020f 0a010001  7061796c6f6164",
        "000000000bad 001122334455 0800  3500001b 00010000 3f0075d2 0a00020f 0a010001  7061796c6f6164",
        "66778899aabb 001122334455 0800  4500001b 00010000 3f0065d2 0a00020f 0a010001  7061796c6f6164",
    ];
    let c = csum16();
    for out in outputs {
        let pkt = hex(out);
        let ip = Ipv4::at(&pkt, 14);
        assert_eq!(
            c.update(&ip.field_list(false), 16),
            Some(ip.checksum()),
            "{out}"
        );
    }
}

// v1model/v1model-special-ops-bmv2: update_checksum(hdr.ipv4.isValid() && ihl == 5, ...) after
// resubmit, recirculate, clones and multicast rewrote addresses and TTLs.
#[test]
fn v1model_special_ops_ipv4_checksums() {
    let ipv4_headers = [
        "4500 001c 0001 0000 3f11 e56c 0afc8102 0a010065",
        "4500 001c 0001 0000 3e11 11a4 0ac75663 0a010002",
        "4500 001c 0001 0000 3f11 6588 0a00020f 0a030037",
        "4500 001c 0001 0000 4011 6488 0a00020f 0a030037",
        "4500 001c 0001 0000 3f11 6492 0a00020f 0a2f0101",
    ];
    let c = csum16();
    for h in ipv4_headers {
        let hdr = hex(h);
        let ip = Ipv4::at(&hdr, 0);
        assert_eq!(
            c.update(&ip.field_list(false), 16),
            Some(ip.checksum()),
            "{h}"
        );
    }
}

// psa/hash-extern-bmv2: Hash<bit<16>>(CRC16) over { bit<12> 0x456 } must be 0xfe82 (then
// etherType becomes 7); in egress get_hash(4w6, { IPv4 fields }, 4w10) is written to
// hdrChecksum: 0x000c.
#[test]
fn psa_hash_extern() {
    let h = PsaHash::new(PsaHashAlgorithm::Crc16);
    let mut a = BitString::new();
    a.push_u64(0x456, 12);
    assert_eq!(h.get_hash(&a, 16), 0xFE82);
    // The v1model layout (45 60) would give another value: PSA pads on the left.
    let v1 = Calculation::new(HashAlgorithm::Crc16).compute(&a);
    assert_ne!(v1, Some(0xFE82));

    let pkt = hex("525400123502080027018bbc0800 45000038000100004006 ba50 0a00020f0a010001");
    let ip = Ipv4::at(&pkt, 14);
    assert_eq!(h.get_hash_mod(6, &ip.field_list(false), 10, 16), 0x000C);
}

// psa/internet_checksum1-bmv2: the egress deparser computes the IPv4 checksum from scratch
// with InternetChecksum and writes it; the packet comes out unchanged, so the result is the
// input's b6ab. The parser's verify() passes too.
#[test]
fn psa_internet_checksum1() {
    let pkt = hex("525400123502080027018bbc0800 00FE C523 FDA1 D68A AF02 b6ab 0000 0001 0000 0002");
    let hdr = &pkt[14..];
    let mut ck = InternetChecksum::new();
    let mut words = BitString::new();
    push_fields(&mut words, hdr, &[4, 4, 8, 16, 16, 3, 13, 8, 8]);
    words.push_bytes(&hdr[12..20]);
    ck.add(&words);
    assert_eq!(ck.get(), 0xB6AB);
    assert!(ck.get_verify(0xB6AB));
    // Parser: subtract the addresses; the deparser's set_state(6) + add: state only.
    ck.subtract(&BitString::from_bytes(&hdr[12..20]));
    ck.set_state(6);
    ck.add(&BitString::from_bytes(&hdr[12..20]));
    assert_eq!(ck.get_state(), 6 + 1 + 2);
}
