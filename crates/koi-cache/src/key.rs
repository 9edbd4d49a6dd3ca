//! Flow keys, masks, megaflow ids and the seeded key hash.
//!
//! A **flow key** is a fixed-length bit string, packed into `u64` words, holding exactly the
//! packet-header-vector bits that any forwarding decision of the loaded program can depend on
//! (header validity bits included). Its length in words is fixed per program and therefore per
//! cache instance, chosen at run time (typically 2..16 words). A **mask** has the same shape: a
//! 1 bit means "this key bit matters". The **masked key** is `key & mask`, word by word.
//!
//! The caches take keys as `&[u64]` so that the datapath can pass a key it extracted into a
//! reusable buffer without copying it; [`FlowKey`] and [`Mask`] are owned forms for the slow
//! path and for tests. Every hash of key words goes through [`KeyHasher`], foldhash seeded at
//! construction: packet fields choose the keys, so an unseeded hash would let a sender aim all
//! its flows at one hash bucket (HashDoS).

use core::hash::{BuildHasher, Hasher};
use foldhash::SharedSeed;
use foldhash::fast::{FoldHasher, SeedableRandomState};

/// Identifies one megaflow in a [`Classifier`](crate::Classifier): a slot and the slot's
/// generation at insertion time.
///
/// Removing a megaflow (explicitly, by tag, by eviction or by `clear`) bumps its slot's
/// generation, so every copy of the old id (for example in the microflow cache) is detected as
/// stale by [`Classifier::get`](crate::Classifier::get) instead of reaching whatever megaflow
/// reuses the slot. Generations never wrap: a slot is retired at the last one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MegaflowId {
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}

impl MegaflowId {
    /// The slot index, dense in `0..limit`: usable to index per-megaflow side tables.
    pub fn slot(self) -> u32 {
        self.slot
    }

    /// The generation of the slot that this id names.
    pub fn generation(self) -> u32 {
        self.generation
    }

    /// Packs the id into one `u64` (slot in the low half).
    pub fn to_bits(self) -> u64 {
        u64::from(self.slot) | (u64::from(self.generation) << 32)
    }

    /// Unpacks an id packed by [`MegaflowId::to_bits`].
    pub fn from_bits(bits: u64) -> Self {
        MegaflowId {
            slot: bits as u32,
            generation: (bits >> 32) as u32,
        }
    }
}

/// The seeded hash of whole flow keys that the microflow tier uses: one folded multiply per
/// pair of words, `h = fold(h ^ a, b ^ pad)` from `h = seed` (a last odd word pairs with 0),
/// where `fold(x, y)` is the XOR of the two halves of the 128-bit product (foldhash's mixing
/// step, which takes 16 bytes per multiply the same way) and `pad` is derived from the seed
/// ([`WordHash::pad`]). It is written down here because the datapath's native parse-path
/// templates compute it while they extract the key, so it must stay exactly this function.
/// The seed is random unless a test fixes it (HashDoS, as for [`KeyHasher`]); the pad is
/// secret with it, so a packet cannot choose a word that zeroes a product.
#[derive(Clone, Copy, Debug)]
pub struct WordHash {
    seed: u64,
    pad: u64,
}

impl WordHash {
    /// The multiplier.
    pub const MUL: u64 = 0x9E37_79B9_7F4A_7C15;

    /// A random seed if `seed` is `None`, else `seed`.
    pub fn from_seed(seed: Option<u64>) -> Self {
        let seed = seed.unwrap_or_else(|| {
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(0x006b_6f69_u64)
        });
        WordHash {
            seed,
            pad: fold_mul(seed ^ Self::MUL, Self::MUL),
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The second word of each pair is XORed with this, derived from the seed.
    pub fn pad(&self) -> u64 {
        self.pad
    }

    /// The hash of `words`.
    #[inline]
    pub fn hash(&self, words: &[u64]) -> u64 {
        let (pairs, last) = words.as_chunks::<2>();
        let h = pairs
            .iter()
            .fold(self.seed, |h, [a, b]| fold_mul(h ^ a, b ^ self.pad));
        match last {
            [a] => fold_mul(h ^ a, self.pad),
            _ => h,
        }
    }

    /// The hash of `words` with the words at indexes `zero` read as 0: what [`WordHash::hash`]
    /// gives for the key whose words there are 0, without writing it.
    pub fn hash_excluding(&self, words: &[u64], zero: std::ops::Range<usize>) -> u64 {
        let w = |i: usize| match zero.contains(&i) {
            true => 0,
            false => words.get(i).copied().unwrap_or(0),
        };
        let mut h = self.seed;
        let mut i = 0;
        while i + 1 < words.len() {
            h = fold_mul(h ^ w(i), w(i + 1) ^ self.pad);
            i += 2;
        }
        match i < words.len() {
            true => fold_mul(h ^ w(i), self.pad),
            false => h,
        }
    }
}

/// The XOR of the low and high halves of `a * b` (128 bits).
#[inline(always)]
pub const fn fold_mul(a: u64, b: u64) -> u64 {
    let p = (a as u128) * (b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The seeded hash of flow-key words (foldhash, `fast` variant).
///
/// All caches of one datapath may share one seed, but nothing requires it: the classifier and
/// the microflow cache never compare each other's hashes.
#[derive(Clone, Debug)]
pub struct KeyHasher {
    state: SeedableRandomState,
}

impl KeyHasher {
    /// A hasher with a random seed, drawn per process and per instance (the production choice).
    pub fn random() -> Self {
        KeyHasher {
            state: SeedableRandomState::random(),
        }
    }

    /// A hasher with a fixed seed, for reproducible tests and benchmarks.
    pub fn with_seed(seed: u64) -> Self {
        KeyHasher {
            state: SeedableRandomState::with_seed(seed, SharedSeed::global_fixed()),
        }
    }

    /// A random hasher if `seed` is `None`, else a fixed one.
    pub fn from_seed(seed: Option<u64>) -> Self {
        seed.map_or_else(Self::random, Self::with_seed)
    }

    /// Hashes all of `words`.
    #[inline]
    pub fn hash(&self, words: &[u64]) -> u64 {
        let mut h = self.hasher();
        for &w in words {
            h.write_u64(w);
        }
        h.finish()
    }

    /// A fresh incremental hasher, for hashing masked words one at a time.
    #[inline]
    pub(crate) fn hasher(&self) -> FoldHasher<'static> {
        self.state.build_hasher()
    }
}

/// An owned flow key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    words: Box<[u64]>,
}

impl FlowKey {
    /// The all-zero key of `width` words.
    pub fn zero(width: usize) -> Self {
        FlowKey {
            words: vec![0; width].into_boxed_slice(),
        }
    }

    /// A key holding a copy of `words`.
    pub fn from_words(words: &[u64]) -> Self {
        FlowKey {
            words: words.into(),
        }
    }

    /// The key's words.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The key's words, for filling in.
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// `self & mask`, word by word (missing mask words count as zero).
    pub fn masked(&self, mask: &Mask) -> FlowKey {
        let words = self
            .words
            .iter()
            .enumerate()
            .map(|(i, w)| w & mask.words.get(i).copied().unwrap_or(0))
            .collect();
        FlowKey { words }
    }
}

impl AsRef<[u64]> for FlowKey {
    fn as_ref(&self) -> &[u64] {
        &self.words
    }
}

/// An owned mask: a 1 bit means the key bit takes part in the match.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mask {
    words: Box<[u64]>,
}

impl Mask {
    /// The mask that matches every key (no bit matters).
    pub fn wildcard(width: usize) -> Self {
        Mask {
            words: vec![0; width].into_boxed_slice(),
        }
    }

    /// The mask of an exact match on every bit.
    pub fn exact(width: usize) -> Self {
        Mask {
            words: vec![u64::MAX; width].into_boxed_slice(),
        }
    }

    /// A mask holding a copy of `words`.
    pub fn from_words(words: &[u64]) -> Self {
        Mask {
            words: words.into(),
        }
    }

    /// The mask's words.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Adds the bits `bits` of word `word` to the mask (no-op for a word out of range).
    pub fn unwildcard(&mut self, word: usize, bits: u64) {
        if let Some(w) = self.words.get_mut(word) {
            *w |= bits;
        }
    }

    /// Whether `key` matches the megaflow `(self, masked)`: `key & self == masked`.
    pub fn matches(&self, key: &[u64], masked: &[u64]) -> bool {
        key.len() == self.words.len()
            && masked.len() == self.words.len()
            && masked_eq(key, &self.words, masked)
    }
}

impl AsRef<[u64]> for Mask {
    fn as_ref(&self) -> &[u64] {
        &self.words
    }
}

/// `key & mask == masked` over the common length of the three slices.
pub(crate) fn masked_eq(key: &[u64], mask: &[u64], masked: &[u64]) -> bool {
    key.iter()
        .zip(mask)
        .zip(masked)
        .all(|((k, m), v)| k & m == *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_bits_round_trip() {
        let id = MegaflowId {
            slot: 7,
            generation: 0xdead_beef,
        };
        assert_eq!(MegaflowId::from_bits(id.to_bits()), id);
    }

    #[test]
    fn seeded_hashes_are_reproducible_and_seed_dependent() {
        let a = KeyHasher::with_seed(1);
        let b = KeyHasher::with_seed(1);
        let c = KeyHasher::with_seed(2);
        let key = [1, 2, 3];
        assert_eq!(a.hash(&key), b.hash(&key));
        assert_ne!(a.hash(&key), c.hash(&key));
    }

    #[test]
    fn masks_match() {
        let mut m = Mask::wildcard(2);
        m.unwildcard(1, 0xff);
        m.unwildcard(5, 1);
        let k = FlowKey::from_words(&[9, 0x1234]);
        let masked = k.masked(&m);
        assert_eq!(masked.words(), &[0, 0x34]);
        assert!(m.matches(k.words(), masked.words()));
        assert!(!m.matches(&[9, 0x1235], masked.words()));
        assert!(!m.matches(&[9], masked.words()));
    }

    #[test]
    fn word_hash_is_the_documented_fold() {
        let h = WordHash::from_seed(Some(7));
        let pad = fold_mul(7 ^ WordHash::MUL, WordHash::MUL);
        assert_eq!(h.pad(), pad);
        assert_eq!(WordHash::from_seed(Some(42)).hash(&[]), 42);
        // fold(x, 1) = x: the product fits 64 bits.
        assert_eq!(h.hash(&[3, 1 ^ pad]), 7 ^ 3);
        let by_hand = fold_mul(fold_mul(7 ^ 3, 5 ^ pad) ^ 9, pad);
        assert_eq!(h.hash(&[3, 5, 9]), by_hand);
        assert_ne!(h.hash(&[3, 5]), h.hash(&[5, 3]));
        assert_ne!(h.hash(&[3, 5]), h.hash(&[3, 5, 0]));
        assert_ne!(h.hash(&[3, 5]), WordHash::from_seed(Some(8)).hash(&[3, 5]));
        assert_eq!(fold_mul(u64::MAX, 2), (u64::MAX - 1) ^ 1);
    }

    #[test]
    fn word_hash_excluding_reads_the_range_as_zero() {
        let h = WordHash::from_seed(Some(99));
        let words: Vec<u64> = (1..=7u64).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
        for len in 0..=words.len() {
            for a in 0..=len {
                for b in a..=len + 1 {
                    let mut zeroed = words[..len].to_vec();
                    for w in zeroed.iter_mut().take(b.min(len)).skip(a) {
                        *w = 0;
                    }
                    assert_eq!(
                        h.hash_excluding(&words[..len], a..b),
                        h.hash(&zeroed),
                        "{len} words without {a}..{b}"
                    );
                }
            }
        }
        // Excluding changes the hash of a key whose excluded words are not zero.
        assert_ne!(h.hash_excluding(&words, 2..3), h.hash(&words));
    }

    #[test]
    fn word_hash_spreads_keys_that_differ_in_one_bit() {
        // The microflow and signature caches index by low bits and sign with the high half:
        // keys one bit apart (anywhere in a 7-word key) should land in different sets.
        let h = WordHash::from_seed(Some(0x5eed));
        let base = [0x0123_4567_89ab_cdef_u64, 2, 3, 4, 5, 6, 7];
        let mut sets = std::collections::HashSet::new();
        let mut sigs = std::collections::HashSet::new();
        for w in 0..base.len() {
            for bit in 0..64 {
                let mut k = base;
                k[w] ^= 1 << bit;
                let x = h.hash(&k);
                sets.insert(x & 0xfff);
                sigs.insert(x >> 32);
            }
        }
        // 448 keys into 4,096 sets: a uniform hash gives about 425 distinct sets.
        assert!(sets.len() > 400, "{} sets", sets.len());
        assert_eq!(sigs.len(), 448);
    }
}
