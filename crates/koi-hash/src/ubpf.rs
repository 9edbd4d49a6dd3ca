//! ubpf_model's externs: `hash(out bit<32>, HashAlgorithm.lookup3, data)` and the incremental
//! checksum helpers `csum_replace2` / `csum_replace4`, as p4c's uBPF back end compiles them.
//!
//! **hash.** p4c (`backends/ubpf/ubpfControl.cpp`, `createHashKeyInstance`) copies the data
//! tuple into a C struct and calls `ubpf_hash(&key, sizeof(key))`, i.e. lookup3
//! `hashlittle(key, sizeof(key), 0)` ([`crate::lookup3`]). The struct (`UBPFListType` in
//! `backends/ubpf/ubpfType.cpp`) has one member per tuple element, of C type `uint8_t`,
//! `uint16_t`, `uint32_t` or `uint64_t` for widths up to 8, 16, 32 and 64 bits, holding the
//! value in host (little-endian) byte order, as the uBPF back end keeps header fields. After
//! every member whose width rounded up to bytes is an odd number of bytes, p4c inserts a
//! one-byte zero padding member `uint8_t padN[1]`. The C compiler then aligns each member to
//! its size and rounds the struct size up to its largest member; [`hash_key`] assumes those
//! implicit padding bytes are zero (the struct is declared with an initializer).
//!
//! **csum_replace2 / csum_replace4.** The generated code defines (`UbpfTarget::
//! emitChecksumHelpers`, `backends/ubpf/target.cpp`) `csum_replace2(csum, old, new) =
//! ~csum16_add(csum16_sub(~csum, old), new)` on 16-bit values with end-around carry
//! (RFC 1624 eqn 3), and `csum_replace4(csum, from, to) =
//! csum_fold(csum32_add(csum32_sub(~(uint32_t)csum, from), to))` on 32-bit values, where
//! `csum_fold(c)` is the top half of `~c - rotate(c, 16)`. [`csum_replace2`] and
//! [`csum_replace4`] repeat that arithmetic operation for operation.

use crate::lookup3::hashlittle;

/// One element of the data tuple: the element's value and its width in bits (1..=64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element {
    /// The value; bits above `width` are ignored.
    pub value: u64,
    /// Width in bits.
    pub width: u32,
}

/// The bytes `ubpf_hash` hashes for the data tuple `elements`, or `None` if an element's width
/// is 0 or above 64 (the uBPF back end has no scalar C type for it).
pub fn hash_key(elements: &[Element]) -> Option<Vec<u8>> {
    let mut key = Vec::new();
    let mut max_align = 1;
    for e in elements {
        let size = match e.width {
            1..=8 => 1,
            9..=16 => 2,
            17..=32 => 4,
            33..=64 => 8,
            _ => return None,
        };
        max_align = max_align.max(size);
        key.resize(key.len().next_multiple_of(size), 0);
        let value = if e.width == 64 {
            e.value
        } else {
            e.value & ((1u64 << e.width) - 1)
        };
        key.extend_from_slice(value.to_le_bytes().get(..size).unwrap_or(&[]));
        // p4c's explicit padding: one byte after a member of an odd number of bytes.
        if e.width.div_ceil(8) % 2 == 1 {
            key.push(0);
        }
    }
    key.resize(key.len().next_multiple_of(max_align), 0);
    Some(key)
}

/// ubpf_model `hash(result, HashAlgorithm.lookup3, data)`: lookup3 `hashlittle` with initial
/// value 0 over [`hash_key`]. `None` if an element is wider than 64 bits or 0 bits wide.
pub fn hash(elements: &[Element]) -> Option<u32> {
    hash_key(elements).map(|k| hashlittle(&k, 0))
}

const fn csum16_add(csum: u16, addend: u16) -> u16 {
    let res = csum.wrapping_add(addend);
    res.wrapping_add((res < addend) as u16)
}

const fn csum16_sub(csum: u16, addend: u16) -> u16 {
    csum16_add(csum, !addend)
}

/// ubpf_model `csum_replace2(csum, old, new)`: the checksum `csum` updated for a 16-bit field
/// that changed from `old` to `new` (RFC 1624 eqn 3).
pub const fn csum_replace2(csum: u16, old: u16, new: u16) -> u16 {
    !csum16_add(csum16_sub(!csum, old), new)
}

const fn csum32_add(csum: u32, addend: u32) -> u32 {
    let res = csum.wrapping_add(addend);
    res.wrapping_add((res < addend) as u32)
}

const fn csum32_sub(csum: u32, addend: u32) -> u32 {
    csum32_add(csum, !addend)
}

const fn csum_fold(csum: u32) -> u16 {
    let r = csum.rotate_left(16);
    ((!csum).wrapping_sub(r) >> 16) as u16
}

/// ubpf_model `csum_replace4(csum, old, new)`: the checksum `csum` updated for a 32-bit field
/// that changed from `old` to `new`.
pub const fn csum_replace4(csum: u16, old: u32, new: u32) -> u16 {
    let tmp = csum32_sub(!(csum as u32), old);
    csum_fold(csum32_add(tmp, new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{csum16, incremental_update};
    use proptest::prelude::*;

    fn e(value: u64, width: u32) -> Element {
        Element { value, width }
    }

    #[test]
    fn key_layout_follows_c_struct_rules() {
        // struct { uint32_t f0; uint8_t f1; uint8_t pad0[1]; uint16_t f2; }
        let k = hash_key(&[e(0x0A00_0001, 32), e(6, 8), e(0x1F90, 16)]);
        assert_eq!(k, Some(vec![1, 0, 0, 0x0A, 6, 0, 0x90, 0x1F]));
        // struct { uint8_t f0; uint8_t pad0[1]; [pad 2] uint32_t f1; }
        let k = hash_key(&[e(0xAB, 8), e(0x1122_3344, 32)]);
        assert_eq!(k, Some(vec![0xAB, 0, 0, 0, 0x44, 0x33, 0x22, 0x11]));
        // struct { uint32_t f0 /* bit<24> */; uint8_t pad0[1]; [pad 3] }
        let k = hash_key(&[e(0xFF12_3456, 24)]);
        assert_eq!(k, Some(vec![0x56, 0x34, 0x12, 0, 0, 0, 0, 0]));
        // struct { uint16_t f0; [pad 6] uint64_t f1 /* bit<48> */; }
        let k = hash_key(&[e(0xBEEF, 16), e(0x0102_0304_0506, 48)]);
        assert_eq!(
            k,
            Some(vec![0xEF, 0xBE, 0, 0, 0, 0, 0, 0, 6, 5, 4, 3, 2, 1, 0, 0])
        );
        assert_eq!(hash_key(&[e(1, 65)]), None);
        assert_eq!(hash_key(&[e(1, 0)]), None);
        assert_eq!(hash_key(&[]), Some(vec![]));
    }

    #[test]
    fn hash_is_hashlittle_of_key() {
        let k = [e(0x0A00_0001, 32), e(0x0A00_0002, 32)];
        let bytes = [1, 0, 0, 0x0A, 2, 0, 0, 0x0A];
        assert_eq!(hash(&k), Some(hashlittle(&bytes, 0)));
        assert_eq!(hash(&[]), Some(0xDEAD_BEEF));
    }

    #[test]
    fn csum_replace2_ttl_decrement() {
        // IPv4 header 4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7: TTL 0x40 -> 0x3f
        // changes word 0x4011 to 0x3f11; the new checksum is 0xb961.
        assert_eq!(csum_replace2(0xB861, 0x4011, 0x3F11), 0xB961);
    }

    #[test]
    fn csum_replace4_address_change() {
        let mut hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let hc = csum16(&hdr);
        hdr[16..20].copy_from_slice(&[0x0A, 0x01, 0x00, 0x05]);
        assert_eq!(csum_replace4(hc, 0xC0A8_00C7, 0x0A01_0005), csum16(&hdr));
    }

    proptest! {
        #[test]
        fn csum_replace2_is_rfc1624(c in any::<u16>(), o in any::<u16>(), n in any::<u16>()) {
            prop_assert_eq!(csum_replace2(c, o, n), incremental_update(c, o, n));
        }

        #[test]
        fn csum_replace4_matches_recompute(
            mut words in proptest::collection::vec(any::<u16>(), 3..16),
            new in any::<u32>(),
        ) {
            let bytes = |w: &[u16]| w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
            let hc = csum16(&bytes(&words));
            let old = (u32::from(words[0]) << 16) | u32::from(words[1]);
            words[0] = (new >> 16) as u16;
            words[1] = new as u16;
            let data = bytes(&words);
            let got = csum_replace4(hc, old, new);
            if data.iter().all(|&b| b == 0) {
                prop_assert_eq!(got, 0);
            } else {
                prop_assert_eq!(got, csum16(&data));
            }
        }
    }
}
