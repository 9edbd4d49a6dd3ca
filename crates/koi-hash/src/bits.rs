//! Bit strings: the input of every hash and checksum.
//!
//! P4 hashes and checksums take a list of fields of arbitrary bit widths, concatenated
//! MSB-first: a `bit<4>`, a `bit<4>` and a `bit<9>` give a 17-bit string. [`BitString`]
//! holds such a string, packed MSB-first into bytes, and knows the two ways the reference
//! targets turn a string whose length is not a multiple of 8 into bytes:
//!
//! - [`BitString::as_bytes`], the v1model layout: BMv2's `BufBuilder` (in
//!   `src/bm_sim/calculations.cpp`) deparses each field at the current bit offset of a
//!   zero-filled buffer of `ceil(bits / 8)` bytes, so the string is left-aligned and the
//!   unused low bits of the last byte are zero (padding on the right).
//! - [`BitString::to_right_aligned_bytes`], the PSA `Hash` layout: psa_switch's
//!   `build_buffer` (in `targets/psa_switch/externs/psa_hash.cpp`) starts the first field at
//!   bit `8 * ceil(bits / 8) - bits`, so the string is right-aligned and the unused high bits
//!   of the first byte are zero (padding on the left).
//!
//! Byte-aligned strings have the same bytes in both layouts.

/// A string of bits, most significant bit first.
///
/// Invariant: `bytes.len() == ceil(len / 8)`, and the bits of the last byte past `len` are 0.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct BitString {
    bytes: Vec<u8>,
    len: usize,
}

impl std::fmt::Debug for BitString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BitString({} bits: ", self.len)?;
        for b in &self.bytes {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

impl BitString {
    /// An empty string.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty string with room for `bits` bits.
    pub fn with_capacity(bits: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bits.div_ceil(8)),
            len: 0,
        }
    }

    /// The string made of whole bytes `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Self {
            bytes: bytes.to_vec(),
            len: bytes.len() * 8,
        }
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the string has no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes all bits, keeping the allocation.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.len = 0;
    }

    /// Bit `i` (0 is the first, most significant bit), or `None` past the end.
    pub fn bit(&self, i: usize) -> Option<bool> {
        if i >= self.len {
            return None;
        }
        let byte = self.bytes.get(i / 8)?;
        Some(byte & (0x80 >> (i % 8)) != 0)
    }

    /// The v1model (BMv2 `BufBuilder`) bytes: the bits packed MSB-first, the unused low bits
    /// of the last byte zero.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The PSA `Hash` (psa_switch `build_buffer`) bytes: `ceil(len / 8)` bytes holding the
    /// bits right-aligned, the unused high bits of the first byte zero.
    pub fn to_right_aligned_bytes(&self) -> Vec<u8> {
        let pad = (8 - self.len % 8) % 8;
        if pad == 0 {
            return self.bytes.clone();
        }
        let mut out = Vec::with_capacity(self.bytes.len());
        let mut carry = 0u8;
        for &b in &self.bytes {
            out.push(carry | (b >> pad));
            carry = b << (8 - pad);
        }
        out
    }

    /// Appends `width` zero bits.
    pub fn push_zeros(&mut self, width: usize) {
        self.len += width;
        self.bytes.resize(self.len.div_ceil(8), 0);
    }

    /// Appends one bit (a P4 `bool` is one bit wide in a field list).
    pub fn push_bool(&mut self, bit: bool) {
        self.push_u64(u64::from(bit), 1);
    }

    /// Appends whole bytes.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        if self.len.is_multiple_of(8) {
            self.bytes.extend_from_slice(bytes);
            self.len += bytes.len() * 8;
        } else {
            for &b in bytes {
                self.push_byte_unaligned(b, 8);
            }
        }
    }

    /// Appends the low `width` bits of `value`, most significant first. Widths above 64
    /// are zero-extended on the left.
    pub fn push_u64(&mut self, value: u64, width: usize) {
        if width > 64 {
            self.push_zeros(width - 64);
            self.push_u64(value, 64);
            return;
        }
        if width == 0 {
            return;
        }
        // The last byte's bits and the value together, when they fit a u64: one append.
        let used = self.len % 8;
        let total = used + width;
        if total <= 64 {
            let head = match self.bytes.last() {
                Some(&b) if used > 0 => u64::from(b >> (8 - used)),
                _ => 0,
            };
            let v = if width == 64 {
                value
            } else {
                value & ((1u64 << width) - 1)
            };
            // (`head << width` stays within 64 bits: `used + width <= 64`; a 64-bit value
            // has no head.)
            let combined = if used == 0 { v } else { (head << width) | v };
            let n = total.div_ceil(8);
            // Left-aligned, its first `n` bytes are the ones to append: all eight are copied
            // (a copy of fixed length) and the rest cut off.
            let be = (combined << (64 - total)).to_be_bytes();
            let keep = self.bytes.len() - usize::from(used > 0);
            self.bytes.truncate(keep);
            self.bytes.extend_from_slice(&be);
            self.bytes.truncate(keep + n);
            self.len += width;
            return;
        }
        let mut left = width;
        while left > 0 {
            let n = left.min(8);
            left -= n;
            let chunk = ((value >> left) & ((1u64 << n) - 1)) as u8;
            self.push_byte_unaligned(chunk, n);
        }
    }

    /// Appends the low `width` bits of the big-endian number `value_be`, most significant
    /// first: the value of a `bit<width>` field as BMv2 stores it. If `value_be` has fewer
    /// than `width` bits it is zero-extended on the left; extra high bits are dropped.
    pub fn push(&mut self, value_be: &[u8], width: usize) {
        let have = value_be.len() * 8;
        if width > have {
            self.push_zeros(width - have);
            self.push_bytes(value_be);
            return;
        }
        // Skip the top `have - width` bits.
        let skip = have - width;
        let first = skip / 8;
        let lead = (8 - skip % 8) % 8; // bits to take from byte `first` when unaligned
        let mut rest = value_be.get(first..).unwrap_or(&[]);
        if lead != 0
            && let Some((&b, tail)) = rest.split_first()
        {
            self.push_byte_unaligned(b & ((1u8 << lead) - 1), lead);
            rest = tail;
        }
        self.push_bytes(rest);
    }

    /// Appends another bit string.
    pub fn push_bits(&mut self, other: &BitString) {
        let whole = other.len / 8;
        self.push_bytes(other.bytes.get(..whole).unwrap_or(&[]));
        let tail = other.len % 8;
        if tail != 0
            && let Some(&b) = other.bytes.get(whole)
        {
            self.push_byte_unaligned(b >> (8 - tail), tail);
        }
    }

    /// Appends the low `n` (1..=8) bits of `chunk`.
    fn push_byte_unaligned(&mut self, chunk: u8, n: usize) {
        debug_assert!((1..=8).contains(&n));
        let chunk = if n == 8 {
            chunk
        } else {
            chunk & ((1u8 << n) - 1)
        };
        let used = self.len % 8; // bits already used in the last byte
        if used == 0 {
            self.bytes.push(chunk << (8 - n));
        } else {
            let free = 8 - used;
            if let Some(last) = self.bytes.last_mut() {
                if n <= free {
                    *last |= chunk << (free - n);
                } else {
                    *last |= chunk >> (n - free);
                    self.bytes.push(chunk << (8 - (n - free)));
                }
            }
        }
        self.len += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seventeen_bits_pad_on_the_right_for_v1model() {
        // bit<4> 0xA, bit<4> 0x5, bit<9> 0x1FF
        let mut s = BitString::new();
        s.push_u64(0xA, 4);
        s.push_u64(0x5, 4);
        s.push_u64(0x1FF, 9);
        assert_eq!(s.len(), 17);
        assert_eq!(s.as_bytes(), &[0xA5, 0xFF, 0x80]);
        assert_eq!(s.to_right_aligned_bytes(), vec![0x01, 0x4B, 0xFF]);
    }

    #[test]
    fn twelve_bits_both_layouts() {
        let mut s = BitString::new();
        s.push_u64(0x456, 12);
        assert_eq!(s.as_bytes(), &[0x45, 0x60]);
        assert_eq!(s.to_right_aligned_bytes(), vec![0x04, 0x56]);
    }

    #[test]
    fn push_be_bytes_truncates_and_extends() {
        let mut s = BitString::new();
        s.push(&[0xFF, 0xAB], 12); // low 12 bits: 0xFAB
        assert_eq!(s.as_bytes(), &[0xFA, 0xB0]);
        let mut t = BitString::new();
        t.push(&[0xAB], 12); // zero-extended: 0x0AB
        assert_eq!(t.as_bytes(), &[0x0A, 0xB0]);
        let mut u = BitString::new();
        u.push_u64(1, 3);
        u.push(&[0x12, 0x34, 0x56], 24);
        assert_eq!(u.len(), 27);
        assert_eq!(u.as_bytes(), &[0x22, 0x46, 0x8A, 0xC0]);
    }

    #[test]
    fn push_bits_concatenates() {
        let mut a = BitString::new();
        a.push_u64(0b101, 3);
        let mut b = BitString::new();
        b.push_u64(0x3FF, 10);
        a.push_bits(&b);
        assert_eq!(a.len(), 13);
        assert_eq!(a.as_bytes(), &[0b1011_1111, 0b1111_1000]);
        assert_eq!(a.bit(0), Some(true));
        assert_eq!(a.bit(1), Some(false));
        assert_eq!(a.bit(12), Some(true));
        assert_eq!(a.bit(13), None);
    }

    mod props {
        use super::super::BitString;
        use proptest::prelude::*;

        /// The fields `(value, width)` as a list of bits, MSB first (the reference model).
        fn model(fields: &[(u64, usize)]) -> Vec<bool> {
            let mut bits = Vec::new();
            for &(v, w) in fields {
                for i in (0..w).rev() {
                    bits.push(i < 64 && (v >> i) & 1 == 1);
                }
            }
            bits
        }

        proptest! {
            #[test]
            fn pushes_match_bit_model(
                fields in proptest::collection::vec((any::<u64>(), 0usize..80), 0..12),
                split in any::<usize>(),
            ) {
                let expect = model(&fields);
                // push_u64 and push (big-endian bytes) build the same string.
                let mut a = BitString::new();
                let mut b = BitString::new();
                for &(v, w) in &fields {
                    a.push_u64(v, w);
                    b.push(&v.to_be_bytes(), w);
                }
                prop_assert_eq!(&a, &b);
                prop_assert_eq!(a.len(), expect.len());
                let got: Vec<bool> = (0..a.len()).filter_map(|i| a.bit(i)).collect();
                prop_assert_eq!(&got, &expect);
                // Trailing pad bits are zero, and the right-aligned layout is the same number.
                let mut left: Vec<bool> = expect.clone();
                left.resize(expect.len().div_ceil(8) * 8, false);
                let bytes: Vec<bool> = a
                    .as_bytes()
                    .iter()
                    .flat_map(|&x| (0..8).rev().map(move |i| (x >> i) & 1 == 1))
                    .collect();
                prop_assert_eq!(bytes, left);
                let mut right = vec![false; expect.len().div_ceil(8) * 8 - expect.len()];
                right.extend_from_slice(&expect);
                let rbytes: Vec<bool> = a
                    .to_right_aligned_bytes()
                    .iter()
                    .flat_map(|&x| (0..8).rev().map(move |i| (x >> i) & 1 == 1))
                    .collect();
                prop_assert_eq!(rbytes, right);
                // Splitting and re-joining with push_bits gives the same string.
                let cut = if fields.is_empty() { 0 } else { split % (fields.len() + 1) };
                let mut head = BitString::new();
                let mut tail = BitString::new();
                for (i, &(v, w)) in fields.iter().enumerate() {
                    if i < cut { head.push_u64(v, w) } else { tail.push_u64(v, w) }
                }
                head.push_bits(&tail);
                prop_assert_eq!(head, a);
            }
        }
    }

    #[test]
    fn wide_u64_is_zero_extended() {
        let mut s = BitString::new();
        s.push_u64(0xFF, 72);
        assert_eq!(s.as_bytes(), &[0, 0, 0, 0, 0, 0, 0, 0, 0xFF]);
    }
}
