//! The per-stage filter of a subtable: which masked-key prefixes may be present.
//!
//! OVS keeps, per stage, a counting hash map of prefix hashes. A lookup only needs "maybe
//! present" or "certainly absent", so koi keeps a *counting filter* instead: an array of `u8`
//! counters indexed by the prefix hash. `add` increments the prefix's counter, `remove`
//! decrements it, and a zero counter proves that no megaflow of the subtable has the prefix.
//! A check is one load, against a hash-table probe with a key comparison.
//!
//! Two prefixes that share a counter make a check answer "maybe" for an absent prefix, which
//! only costs the rest of that subtable's probe. A counter that reaches 255 sticks there
//! (a removal can no longer know whether it is the last one), again erring on "maybe". The
//! subtable rebuilds its filters from its stored keys whenever the number of megaflows leaves
//! `[len / 16, len / 2]`, which keeps the false-positive rate roughly between 6% and 40%,
//! memory between 2 and 16 bytes per megaflow per stage, and clears stuck counters.

/// A counting filter over the prefix hashes at one stage boundary.
#[derive(Debug)]
pub(super) struct StageFilter {
    /// Number of significant words hashed before this check.
    pub(super) end: usize,
    /// Power-of-two many counters.
    counters: Box<[u8]>,
}

impl StageFilter {
    /// Smallest filter, in counters.
    const MIN_LEN: usize = 64;

    /// An empty filter checked after `end` significant words.
    pub(super) fn new(end: usize) -> Self {
        StageFilter {
            end,
            counters: vec![0; Self::MIN_LEN].into_boxed_slice(),
        }
    }

    #[inline]
    fn index(&self, hash: u64) -> usize {
        hash as usize & self.counters.len().wrapping_sub(1)
    }

    /// Whether some megaflow may have a prefix with this hash.
    #[inline]
    pub(super) fn contains(&self, hash: u64) -> bool {
        self.counters.get(self.index(hash)).is_some_and(|&c| c != 0)
    }

    /// Counts a megaflow's prefix hash.
    pub(super) fn add(&mut self, hash: u64) {
        let i = self.index(hash);
        if let Some(c) = self.counters.get_mut(i) {
            *c = c.saturating_add(1);
        }
    }

    /// Uncounts a megaflow's prefix hash (a stuck counter stays).
    pub(super) fn remove(&mut self, hash: u64) {
        let i = self.index(hash);
        if let Some(c) = self.counters.get_mut(i)
            && *c != u8::MAX
        {
            *c = c.saturating_sub(1);
        }
    }

    /// The size a filter for `n` megaflows should be rebuilt at, if this one is out of range.
    pub(super) fn resize_for(&self, n: usize) -> Option<usize> {
        let len = self.counters.len();
        let out_of_range = n > len / 2 || (len > Self::MIN_LEN && n < len / 16);
        out_of_range.then(|| n.saturating_mul(4).next_power_of_two().max(Self::MIN_LEN))
    }

    /// Empties the filter and gives it `len` counters (a power of two).
    pub(super) fn reset(&mut self, len: usize) {
        self.counters = vec![0; len.max(Self::MIN_LEN)].into_boxed_slice();
    }

    /// Heap bytes.
    pub(super) fn memory_bytes(&self) -> usize {
        self.counters.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_sticks() {
        let mut f = StageFilter::new(1);
        assert!(!f.contains(5));
        f.add(5);
        f.add(5 + 64);
        assert!(f.contains(5), "shared counter");
        f.remove(5);
        assert!(f.contains(5 + 64));
        f.remove(5 + 64);
        assert!(!f.contains(5));
        for _ in 0..300 {
            f.add(9);
        }
        for _ in 0..300 {
            f.remove(9);
        }
        assert!(f.contains(9), "a saturated counter sticks");
        assert_eq!(f.resize_for(32), None);
        assert_eq!(f.resize_for(33), Some(256));
        f.reset(256);
        assert!(!f.contains(9));
        assert_eq!(f.resize_for(15), Some(64));
    }
}
