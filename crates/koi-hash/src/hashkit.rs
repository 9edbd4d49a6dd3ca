//! The key hashes of libmemcached's hashkit as twemproxy (nutcracker) computes them on x86-64:
//! `one_at_a_time`, `md5`, `hsieh`, `murmur` and `jenkins` (its `crc16`, `crc32`, `crc32a`
//! and FNV hashes are in [`crate::crc`] and [`crate::fnv`]). Each gives the 32-bit value
//! twemproxy places a key by, quirks included:
//!
//! - [`one_at_a_time`]: Bob Jenkins' one-at-a-time hash, each byte read as a C `char`, which is
//!   signed on x86: a byte of 0x80 or more enters as `0xFFFFFF00 | byte`.
//! - [`md5`]: the first four bytes of the key's MD5 digest, little-endian.
//! - [`hsieh`]: Paul Hsieh's SuperFastHash with hash 0 to start (not the key's length), its
//!   16-bit reads little-endian; when three bytes are left over, the third is read as a signed
//!   `char` (sign-extended before its shift by 18), the others unsigned.
//! - [`murmur`]: MurmurHash2 with the seed `0xdeadbeef * length`, 4-byte blocks little-endian.
//! - [`jenkins`]: lookup3's `hashlittle` with the initial value 13 ([`crate::lookup3`]).

/// A byte as a C `signed char` converted to `uint32_t`.
fn signed_char(b: u8) -> u32 {
    b as i8 as i32 as u32
}

/// Twemproxy's `one_at_a_time`.
pub fn one_at_a_time(key: &[u8]) -> u32 {
    let mut h = key.iter().fold(0u32, |h, &b| {
        let h = h.wrapping_add(signed_char(b));
        let h = h.wrapping_add(h << 10);
        h ^ (h >> 6)
    });
    h = h.wrapping_add(h << 3);
    h ^= h >> 11;
    h.wrapping_add(h << 15)
}

/// Twemproxy's `md5`: the first four bytes of MD5(`key`) as a little-endian number.
pub fn md5(key: &[u8]) -> u32 {
    let d = md5_digest(key);
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// Twemproxy's `hsieh` (SuperFastHash from 0; an empty key hashes to 0).
pub fn hsieh(key: &[u8]) -> u32 {
    if key.is_empty() {
        return 0;
    }
    let get16 = |b: &[u8]| u32::from(b[0]) | (u32::from(b[1]) << 8);
    let mut h: u32 = 0;
    let mut blocks = key.chunks_exact(4);
    for c in &mut blocks {
        h = h.wrapping_add(get16(&c[0..2]));
        let tmp = (get16(&c[2..4]) << 11) ^ h;
        h = (h << 16) ^ tmp;
        h = h.wrapping_add(h >> 11);
    }
    let rest = blocks.remainder();
    match rest.len() {
        3 => {
            h = h.wrapping_add(get16(&rest[0..2]));
            h ^= h << 16;
            h ^= signed_char(rest[2]) << 18;
            h = h.wrapping_add(h >> 11);
        }
        2 => {
            h = h.wrapping_add(get16(rest));
            h ^= h << 11;
            h = h.wrapping_add(h >> 17);
        }
        1 => {
            h = h.wrapping_add(u32::from(rest[0]));
            h ^= h << 10;
            h = h.wrapping_add(h >> 1);
        }
        _ => {}
    }
    h ^= h << 3;
    h = h.wrapping_add(h >> 5);
    h ^= h << 4;
    h = h.wrapping_add(h >> 17);
    h ^= h << 25;
    h.wrapping_add(h >> 6)
}

/// Twemproxy's `murmur` (MurmurHash2, seeded with `0xdeadbeef * length`).
pub fn murmur(key: &[u8]) -> u32 {
    const M: u32 = 0x5bd1_e995;
    // (A key longer than 4 GiB: C's `(uint32_t)length`.)
    let len = key.len() as u32;
    let mut h = 0xdead_beefu32.wrapping_mul(len) ^ len;
    let mut blocks = key.chunks_exact(4);
    for c in &mut blocks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]).wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate().rev() {
            h ^= u32::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

/// Twemproxy's `jenkins`: lookup3's `hashlittle` with the initial value 13.
pub fn jenkins(key: &[u8]) -> u32 {
    crate::lookup3::hashlittle(key, 13)
}

/// MD5's per-step shifts, by round and step within the round (RFC 1321).
const MD5_S: [u32; 16] = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];

/// MD5's constants: `floor(|sin(i + 1)| * 2^32)` (RFC 1321).
const MD5_K: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

/// The MD5 digest of `data` (RFC 1321), without allocating: whole blocks straight from
/// `data`, the padded tail (one or two blocks) from a buffer on the stack.
pub fn md5_digest(data: &[u8]) -> [u8; 16] {
    let mut st: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    let mut blocks = data.chunks_exact(64);
    for block in &mut blocks {
        md5_block(&mut st, block);
    }
    let rest = blocks.remainder();
    let mut tail = [0u8; 128];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let n = if rest.len() < 56 { 64 } else { 128 };
    let bit_len = (data.len() as u64).wrapping_mul(8);
    tail[n - 8..n].copy_from_slice(&bit_len.to_le_bytes());
    for block in tail[..n].chunks_exact(64) {
        md5_block(&mut st, block);
    }
    let mut out = [0u8; 16];
    for (o, w) in out.chunks_exact_mut(4).zip(st) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// One 64-byte block into the state `st`.
fn md5_block(st: &mut [u32; 4], block: &[u8]) {
    let m: [u32; 16] = std::array::from_fn(|i| {
        u32::from_le_bytes([
            block[4 * i],
            block[4 * i + 1],
            block[4 * i + 2],
            block[4 * i + 3],
        ])
    });
    let [mut a, mut b, mut c, mut d] = *st;
    for (i, &ki) in MD5_K.iter().enumerate() {
        let (f, g) = match i / 16 {
            0 => ((b & c) | (!b & d), i),
            1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
            2 => (b ^ c ^ d, (3 * i + 5) % 16),
            _ => (c ^ (b | !d), (7 * i) % 16),
        };
        let t = a.wrapping_add(f).wrapping_add(ki).wrapping_add(m[g]);
        a = d;
        d = c;
        c = b;
        b = b.wrapping_add(t.rotate_left(MD5_S[(i / 16) * 4 + i % 4]));
    }
    for (s, v) in st.iter_mut().zip([a, b, c, d]) {
        *s = s.wrapping_add(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The constants are RFC 1321's formula.
    #[test]
    fn md5_constants_are_the_sines() {
        for (i, &k) in MD5_K.iter().enumerate() {
            assert_eq!(
                k,
                ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32,
                "{i}"
            );
        }
    }

    /// RFC 1321's test suite (and lengths around the padding's block boundary).
    #[test]
    fn md5_digests_are_rfc_1321s() {
        let cases: [(&[u8], &str); 7] = [
            (b"", "d41d8cd98f00b204e9800998ecf8427e"),
            (b"a", "0cc175b9c0f1b6a831c399e269772661"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                b"abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
            (
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ];
        for (data, want) in cases {
            assert_eq!(hex(&md5_digest(data)), want, "{data:?}");
        }
        // 55, 56, 63, 64 and 65 bytes: one or two tail blocks (digests of `a` repeated).
        let lens: [(usize, &str); 5] = [
            (55, "ef1772b6dff9a122358552954ad0df65"),
            (56, "3b0c8ac703f828b04c6c197006d17218"),
            (63, "b06521f39153d618550606be297466d5"),
            (64, "014842d480b571495a4a0363793f7367"),
            (65, "c743a45e0d2e6a95cb859adae0248435"),
        ];
        for (n, want) in lens {
            assert_eq!(hex(&md5_digest(&vec![b'a'; n])), want, "{n}");
        }
        assert_eq!(md5(b""), 0xd98c_1dd4);
    }

    /// The values of twemproxy's own functions (src/hashkit, built with gcc on x86-64) for
    /// keys of every remainder modulo 4 and 12, with bytes of 0x80 and more.
    #[test]
    fn hashes_are_twemproxys() {
        let keys: [&[u8]; 6] = [
            b"",
            b"a",
            b"key-17-xxxxxxxxx",
            b"cl\xc3\xa9-\xff",
            b"\x80\x81\x82",
            b"abcdefghijklmnopqrstuvwxy",
        ];
        let want: [[u32; 5]; 6] = [
            [
                0x0000_0000,
                0xd98c_1dd4,
                0x0000_0000,
                0x0000_0000,
                0xdead_befc,
            ],
            [
                0xca2e_9442,
                0xb975_c10c,
                0x9364_2e87,
                0x4b41_757c,
                0xe0a3_8690,
            ],
            [
                0xf855_6d68,
                0xcaf0_73e6,
                0x2609_1d76,
                0x4c37_20f2,
                0x05cc_36da,
            ],
            [
                0x9ad7_97b1,
                0xa162_0136,
                0x6853_ffd4,
                0x9ad7_a4cf,
                0x95c1_3bcf,
            ],
            [
                0xe8cc_e13b,
                0x0a76_85b3,
                0x6bc3_7572,
                0x5822_874f,
                0x3015_dd51,
            ],
            [
                0x6012_0ab5,
                0x3140_78f1,
                0x30e0_b519,
                0xe415_82e0,
                0x547a_928b,
            ],
        ];
        // (Per key: one_at_a_time, md5, hsieh, murmur, jenkins.)
        for (key, w) in keys.iter().zip(want) {
            let got = [
                one_at_a_time(key),
                md5(key),
                hsieh(key),
                murmur(key),
                jenkins(key),
            ];
            assert_eq!(got, w, "{key:?}");
        }
    }
}
