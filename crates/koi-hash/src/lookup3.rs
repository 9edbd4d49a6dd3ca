//! Bob Jenkins' lookup3 `hashlittle` and `hashlittle2` (public domain, 2006).
//!
//! ubpf_model's `HashAlgorithm.lookup3`: p4c's uBPF back end compiles `hash(...)` to the
//! helper `ubpf_hash(&key, sizeof(key))` (`backends/ubpf/ubpfControl.cpp`), which the uBPF
//! switch (P4rt-OVS) implements as `hashlittle(item, (uint32_t)size, 0)`. See
//! [`crate::ubpf`] for the key's byte layout.
//!
//! `hashlittle` reads the key as little-endian 32-bit words, 12 bytes per round; the last 1 to
//! 12 bytes are zero-padded to 12 and followed by the `final` mix, and an empty key returns
//! the initial `c` unmixed. This is the byte-by-byte path of lookup3.c, which gives the same
//! result as its word-at-a-time paths on little-endian machines.

#[inline]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

#[inline]
fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

fn le_word(bytes: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    for (d, s) in w.iter_mut().zip(bytes) {
        *d = *s;
    }
    u32::from_le_bytes(w)
}

/// Runs lookup3 over `key` from the initial state `(a, b, c)`; returns the final `(b, c)`.
fn run(key: &[u8], mut a: u32, mut b: u32, mut c: u32) -> (u32, u32) {
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(le_word(&k[0..4]));
        b = b.wrapping_add(le_word(&k[4..8]));
        c = c.wrapping_add(le_word(&k[8..12]));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return (b, c);
    }
    a = a.wrapping_add(le_word(k.get(0..).unwrap_or(&[])));
    b = b.wrapping_add(le_word(k.get(4..).unwrap_or(&[])));
    c = c.wrapping_add(le_word(k.get(8..).unwrap_or(&[])));
    final_mix(&mut a, &mut b, &mut c);
    (b, c)
}

/// lookup3 `hashlittle(key, length, initval)`. The length is taken modulo 2^32, as the C
/// function's `size_t` to `uint32_t` arithmetic does.
pub fn hashlittle(key: &[u8], initval: u32) -> u32 {
    let init = 0xDEAD_BEEFu32
        .wrapping_add(key.len() as u32)
        .wrapping_add(initval);
    run(key, init, init, init).1
}

/// lookup3 `hashlittle2(key, length, &pc, &pb)`: returns the new `(pc, pb)`; `pc` alone is
/// `hashlittle(key, pc)` when `pb` is 0.
pub fn hashlittle2(key: &[u8], pc: u32, pb: u32) -> (u32, u32) {
    let init = 0xDEAD_BEEFu32
        .wrapping_add(key.len() as u32)
        .wrapping_add(pc);
    let (b, c) = run(key, init, init, init.wrapping_add(pb));
    (c, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOUR_SCORE: &[u8] = b"Four score and seven years ago";

    // driver5() of lookup3.c: the published known-answer vectors.
    #[test]
    fn driver5_vectors() {
        assert_eq!(hashlittle2(b"", 0, 0), (0xDEAD_BEEF, 0xDEAD_BEEF));
        assert_eq!(hashlittle2(b"", 0, 0xDEAD_BEEF), (0xBD5B_7DDE, 0xDEAD_BEEF));
        assert_eq!(
            hashlittle2(b"", 0xDEAD_BEEF, 0xDEAD_BEEF),
            (0x9C09_3CCD, 0xBD5B_7DDE)
        );
        assert_eq!(hashlittle2(FOUR_SCORE, 0, 0), (0x1777_0551, 0xCE72_26E6));
        assert_eq!(hashlittle2(FOUR_SCORE, 0, 1), (0xE360_7CAE, 0xBD37_1DE4));
        assert_eq!(hashlittle2(FOUR_SCORE, 1, 0), (0xCD62_8161, 0x6CBE_A4B3));
        assert_eq!(hashlittle(FOUR_SCORE, 0), 0x1777_0551);
        assert_eq!(hashlittle(FOUR_SCORE, 1), 0xCD62_8161);
        assert_eq!(hashlittle(b"", 0), 0xDEAD_BEEF);
    }

    #[test]
    fn every_length_is_total() {
        // Lengths around the 12-byte rounds, including exact multiples of 12.
        let data: Vec<u8> = (0..40u8).collect();
        let mut seen = std::collections::HashSet::new();
        for n in 0..=data.len() {
            assert!(seen.insert(hashlittle(&data[..n], 0)), "collision at {n}");
        }
    }
}
