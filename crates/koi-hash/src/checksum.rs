//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624), and BMv2's `xor16`.
//!
//! BMv2's `csum16` (and its alias `cksum16`, `src/bm_sim/calculations.cpp`) sums the buffer as
//! little-endian 64-bit words with end-around carry, folds to 16 bits and returns
//! `ntohs(~sum)`. Because the ones'-complement sum is byte-order independent (RFC 1071 §2(B)),
//! that is exactly [`csum16`]: the complement of the ones'-complement sum of the big-endian
//! 16-bit words, an odd final byte padded with a zero byte after it. An all-zero buffer gives
//! 0xFFFF; a buffer whose sum is 0xFFFF gives 0x0000. IPv4, TCP and UDP checksums written by
//! BMv2's `update_checksum(..., HashAlgorithm.csum16)` are this value.

/// Adds two 16-bit numbers in ones'-complement arithmetic (end-around carry).
///
/// The result is 0 only if both operands are 0.
pub const fn ones_add(a: u16, b: u16) -> u16 {
    let s = a as u32 + b as u32;
    ((s & 0xFFFF) + (s >> 16)) as u16
}

/// Folds a wide accumulator of 16-bit words to 16 bits with end-around carry.
///
/// The result is 0 only if `acc` is 0.
pub const fn fold(mut acc: u64) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    acc as u16
}

/// The ones'-complement sum of `bytes` as big-endian 16-bit words, an odd final byte padded
/// with a zero byte (RFC 1071). 0 only for an all-zero (or empty) buffer.
pub fn ones_complement_sum(bytes: &[u8]) -> u16 {
    fold(sum_words(bytes))
}

/// Unfolded sum of the big-endian 16-bit words of `bytes` (odd tail padded with zero).
fn sum_words(bytes: &[u8]) -> u64 {
    let mut acc: u64 = 0;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        // Four 16-bit words at once; each partial sum fits in 18 bits.
        acc += (w >> 48) + ((w >> 32) & 0xFFFF) + ((w >> 16) & 0xFFFF) + (w & 0xFFFF);
        if acc >= 1 << 62 {
            acc = u64::from(fold(acc));
        }
    }
    let mut words = chunks.remainder().chunks(2);
    for w in &mut words {
        let hi = u64::from(w[0]);
        let lo = w.get(1).map_or(0, |&b| u64::from(b));
        acc += (hi << 8) | lo;
    }
    acc
}

/// The Internet checksum of a byte string given in pieces (the fields of a header, say),
/// without assembling it: [`Csum16::finish`] equals [`csum16`] of the concatenation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Csum16 {
    sum: u64,
    /// The pieces so far had an odd length: the next byte is the low half of a word.
    odd: bool,
}

impl Csum16 {
    /// Appends `bytes`.
    #[inline]
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if self.odd {
            let Some((&x, rest)) = bytes.split_first() else {
                return;
            };
            self.sum += u64::from(x);
            bytes = rest;
        }
        // An odd tail is padded with a zero byte after it, as the next piece's first byte
        // then fills in.
        self.sum += sum_words(bytes);
        self.odd = bytes.len() % 2 == 1;
        if self.sum >= 1 << 62 {
            self.sum = u64::from(fold(self.sum));
        }
    }

    /// Resumes a checksum whose data so far has checksum `csum` ([`Csum16::finish`]'s
    /// value) and `odd` length in bytes: feeding more then finishing equals the checksum of
    /// the whole.
    pub fn resume(csum: u16, odd: bool) -> Csum16 {
        Csum16 {
            sum: u64::from(!csum),
            odd,
        }
    }

    /// The checksum of everything fed.
    pub fn finish(self) -> u16 {
        !fold(self.sum)
    }
}

/// BMv2's `csum16` / `cksum16`: the Internet checksum of `bytes`, `!ones_complement_sum`.
pub fn csum16(bytes: &[u8]) -> u16 {
    !ones_complement_sum(bytes)
}

/// BMv2's `xor16`: the XOR of the big-endian 16-bit words of `bytes`, an odd final byte
/// padded with a zero byte after it (`xor_hash<uint16_t>` with `emitAsInteger`).
pub fn xor16(bytes: &[u8]) -> u16 {
    bytes.chunks(2).fold(0u16, |x, w| {
        let hi = u16::from(w[0]);
        let lo = w.get(1).map_or(0, |&b| u16::from(b));
        x ^ ((hi << 8) | lo)
    })
}

/// Incremental update of an Internet checksum after one 16-bit word of the data changed from
/// `old` to `new`: RFC 1624 equation 3, `HC' = ~(~HC + ~m + m')`, in ones'-complement
/// arithmetic.
///
/// It equals recomputing [`csum16`] over the new data in every case but one: when the new data
/// is entirely zero, a recomputation gives 0xFFFF where this gives 0x0000 (the two zeros of
/// ones'-complement arithmetic; RFC 1624 §3). The data IPv4, TCP and UDP checksum are never
/// all zero.
pub const fn incremental_update(hc: u16, old: u16, new: u16) -> u16 {
    !ones_add(ones_add(!hc, !old), new)
}

/// Incremental update of an Internet checksum after the bytes at byte offset `offset` of the
/// checksummed data changed from `old` to `new` (any length, any offset: bytes at an odd
/// offset are the low halves of their 16-bit words). Returns `None` if `old` and `new` differ
/// in length.
///
/// Same result as applying [`incremental_update`] to each 16-bit word the change touches, so
/// the same single exception: all-zero new data gives 0x0000, not 0xFFFF.
pub fn incremental_update_bytes(hc: u16, offset: usize, old: &[u8], new: &[u8]) -> Option<u16> {
    if old.len() != new.len() {
        return None;
    }
    // A leading zero byte aligns data at an odd offset; zero bytes add nothing to either sum.
    let lead = offset % 2;
    let mut acc = u64::from(!hc);
    let mut add = |bytes: &[u8], complement: bool| {
        let mut aligned = Vec::with_capacity(bytes.len() + 2);
        aligned.resize(lead, 0);
        aligned.extend_from_slice(bytes);
        for w in aligned.chunks(2) {
            let hi = u16::from(w[0]);
            let lo = w.get(1).map_or(0, |&b| u16::from(b));
            let word = (hi << 8) | lo;
            acc += u64::from(if complement { !word } else { word });
        }
    };
    add(old, true);
    add(new, false);
    Some(!fold(acc))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BMv2's algorithm, literally: little-endian 64/32/16/8-bit loads with end-around carry,
    /// then `ntohs(~fold)`.
    fn bmv2_cksum16(buf: &[u8]) -> u16 {
        let mut sum: u64 = 0;
        let mut add = |s: u64| {
            sum = sum.wrapping_add(s);
            if sum < s {
                sum += 1;
            }
        };
        let mut i = 0;
        while buf.len() - i >= 8 {
            let mut w = [0u8; 8];
            w.copy_from_slice(&buf[i..i + 8]);
            add(u64::from_le_bytes(w));
            i += 8;
        }
        let len = buf.len() - i;
        if len & 4 != 0 {
            add(u64::from(u32::from_le_bytes([
                buf[i],
                buf[i + 1],
                buf[i + 2],
                buf[i + 3],
            ])));
            i += 4;
        }
        if len & 2 != 0 {
            add(u64::from(u16::from_le_bytes([buf[i], buf[i + 1]])));
            i += 2;
        }
        if len & 1 != 0 {
            add(u64::from(buf[i]));
        }
        let (t2, mut t1) = ((sum >> 32) as u32, sum as u32);
        t1 = t1.wrapping_add(t2);
        if t1 < t2 {
            t1 += 1;
        }
        let (t4, mut t3) = ((t1 >> 16) as u16, t1 as u16);
        t3 = t3.wrapping_add(t4);
        if t3 < t4 {
            t3 += 1;
        }
        u16::from_be(!t3)
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: words 0001 f203 f4f5 f6f7 sum to 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(ones_complement_sum(&data), 0xDDF2);
        assert_eq!(csum16(&data), !0xDDF2);
    }

    #[test]
    fn ipv4_header_checksum() {
        // 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7, a commonly cited
        // IPv4 header whose checksum is 0xb861.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(csum16(&hdr), 0xB861);
        let mut with = hdr;
        with[10] = 0xb8;
        with[11] = 0x61;
        assert_eq!(csum16(&with), 0);
    }

    #[test]
    fn zero_representations() {
        assert_eq!(csum16(&[]), 0xFFFF);
        assert_eq!(csum16(&[0, 0, 0]), 0xFFFF);
        assert_eq!(csum16(&[0xFF, 0xFF]), 0x0000);
        assert_eq!(csum16(&[0xFF, 0xFE, 0x00, 0x01]), 0x0000);
        assert_eq!(ones_add(0xFFFF, 0x0001), 0x0001);
        assert_eq!(ones_add(0, 0), 0);
    }

    #[test]
    fn odd_length_pads_after() {
        assert_eq!(ones_complement_sum(&[0x12]), 0x1200);
        assert_eq!(ones_complement_sum(&[0x00, 0x01, 0x12]), 0x1201);
        assert_eq!(xor16(&[0x12]), 0x1200);
    }

    #[test]
    fn xor16_words() {
        assert_eq!(xor16(&[]), 0);
        assert_eq!(xor16(&[0x12, 0x34, 0x56, 0x78]), 0x1234 ^ 0x5678);
        assert_eq!(xor16(&[0x12, 0x34, 0x12, 0x34, 0xAB]), 0xAB00);
    }

    #[test]
    fn bmv2_literal_matches_on_edge_cases() {
        for data in [
            &[][..],
            &[0],
            &[0xFF],
            &[0xFF, 0xFF],
            &[0xFF; 7],
            &[0xFF; 8],
            &[0xFF; 9],
            &[0xFF; 17],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF],
        ] {
            assert_eq!(csum16(data), bmv2_cksum16(data), "{data:02x?}");
        }
    }

    #[test]
    fn incremental_bytes_at_odd_offset() {
        let mut data: Vec<u8> = (1..=21u8).collect();
        let hc = csum16(&data);
        let old = data[5..8].to_vec();
        data[5..8].copy_from_slice(&[0xAA, 0xBB, 0xCC]);
        let got = incremental_update_bytes(hc, 5, &old, &data[5..8]);
        assert_eq!(got, Some(csum16(&data)));
        assert_eq!(incremental_update_bytes(hc, 0, &[1], &[1, 2]), None);
    }

    #[test]
    fn incremental_all_zero_exception() {
        // Data 0x0001 -> 0x0000: recomputation says 0xFFFF, RFC 1624 eqn 3 says 0x0000.
        let hc = csum16(&[0x00, 0x01]);
        assert_eq!(incremental_update(hc, 0x0001, 0x0000), 0x0000);
        assert_eq!(csum16(&[0x00, 0x00]), 0xFFFF);
    }

    mod props {
        use super::super::*;
        use super::bmv2_cksum16;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn csum16_in_pieces_equals_csum16(
                data in proptest::collection::vec(any::<u8>(), 0..64),
                cuts in proptest::collection::vec(0usize..64, 0..6),
            ) {
                let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
                cuts.sort_unstable();
                let mut sum = Csum16::default();
                let mut at = 0;
                for c in cuts.into_iter().chain([data.len()]) {
                    sum.feed(&data[at..c]);
                    at = c;
                }
                prop_assert_eq!(sum.finish(), csum16(&data));
            }

            /// A checksum resumed from the checksum of a prefix (and its length's parity)
            /// equals the checksum of the whole.
            #[test]
            fn resumed_csum16_equals_csum16(
                data in proptest::collection::vec(any::<u8>(), 0..64),
                cut in 0usize..64,
            ) {
                let cut = cut.min(data.len());
                let mut c = Csum16::resume(csum16(&data[..cut]), cut % 2 == 1);
                c.feed(&data[cut..]);
                prop_assert_eq!(c.finish(), csum16(&data));
            }

            #[test]
            fn csum16_equals_bmv2_literal(data in proptest::collection::vec(any::<u8>(), 0..80)) {
                prop_assert_eq!(csum16(&data), bmv2_cksum16(&data));
            }

            #[test]
            fn incremental_equals_recompute(
                mut data in proptest::collection::vec(any::<u8>(), 2..64),
                idx in any::<usize>(),
                new in any::<u16>(),
            ) {
                let words = data.len() / 2;
                let i = idx % words;
                let hc = csum16(&data);
                let old = u16::from_be_bytes([data[2 * i], data[2 * i + 1]]);
                data[2 * i..2 * i + 2].copy_from_slice(&new.to_be_bytes());
                let inc = incremental_update(hc, old, new);
                if data.iter().all(|&b| b == 0) {
                    prop_assert_eq!(inc, 0x0000);
                    prop_assert_eq!(csum16(&data), 0xFFFF);
                } else {
                    prop_assert_eq!(inc, csum16(&data));
                }
            }

            #[test]
            fn incremental_bytes_equals_recompute(
                mut data in proptest::collection::vec(any::<u8>(), 1..64),
                start in any::<usize>(),
                len in 0usize..12,
                fill in proptest::collection::vec(any::<u8>(), 12),
            ) {
                let start = start % data.len();
                let end = (start + len).min(data.len());
                let hc = csum16(&data);
                let old = data[start..end].to_vec();
                data[start..end].copy_from_slice(&fill[..end - start]);
                let inc = incremental_update_bytes(hc, start, &old, &data[start..end]);
                if start == end {
                    // Nothing changed: the checksum stays as it was (the all-zero exception
                    // is that of an updated word).
                    prop_assert_eq!(inc, Some(hc));
                } else if data.iter().all(|&b| b == 0) {
                    prop_assert_eq!(inc, Some(0x0000));
                } else {
                    prop_assert_eq!(inc, Some(csum16(&data)));
                }
            }
        }
    }
}
