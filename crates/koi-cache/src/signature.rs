//! The signature cache: a compact hint from a key's hash to the megaflow that served it
//! (Open vSwitch's SMC, "signature match cache"), between the microflow cache and the
//! classifier.
//!
//! The microflow cache stores whole keys, so its entries are large (a 7-word key takes 72
//! bytes with its entry) and at some thousands of flows it no longer fits in the CPU's caches
//! or holds every flow: at 10,000 flows an 8192-entry microflow cache serves two packets in
//! three, and the others pay a tuple-space search over every subtable. The signature cache
//! stores 8 bytes per flow: 32 bits of the key's hash and the megaflow's slot. A lookup reads
//! one 32-byte bucket and, on a signature match, checks the key against that one megaflow's
//! mask and masked key ([`crate::Classifier::hit_slot`]): a probe of one subtable instead of
//! all of them.
//!
//! **Soundness.** An entry is only a hint: whatever it names, the answer is a live megaflow
//! that matches the key, verified, or nothing (then the classifier is searched). Stale entries
//! need no invalidation: a removed megaflow's slot is empty or holds another megaflow, which
//! serves the key only if it matches it, and any live megaflow matching a key is a correct
//! answer for it (megaflows are all correct for every key they match; the classifier returns
//! any of them too).
//!
//! **Layout.** Buckets of [`WAYS`] entries, each a `u64`: signature (high half, the hash's
//! high 32 bits) and slot + 1 (low half; 0 is an empty way). A key's bucket is chosen by
//! hash bits above the microflow cache's set index, so that keys sharing a microflow set are
//! spread here. Insertion replaces the way with the same signature, else an empty way, else
//! one picked by other hash bits.

/// Entries per bucket (four `u64`s: half a cache line).
pub const WAYS: usize = 4;

/// Counters of a [`SignatureCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignatureStats {
    /// Probes whose signature matched a way.
    pub candidates: u64,
    /// Candidates whose megaflow matched the key (the others were stale or collisions).
    pub hits: u64,
    pub inserts: u64,
}

/// The signature cache (see the module doc).
#[derive(Debug)]
pub struct SignatureCache {
    entries: Box<[u64]>,
    bucket_mask: usize,
    stats: SignatureStats,
}

impl SignatureCache {
    /// A cache of `entries` entries (rounded up to a power of two, at least one bucket).
    pub fn new(entries: usize) -> SignatureCache {
        let n = entries.max(WAYS).next_power_of_two();
        SignatureCache {
            entries: vec![0; n].into_boxed_slice(),
            bucket_mask: n / WAYS - 1,
            stats: SignatureStats::default(),
        }
    }

    /// Number of entries.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Bytes of the table.
    pub fn memory_bytes(&self) -> usize {
        self.entries.len() * size_of::<u64>()
    }

    /// The counters.
    pub fn stats(&self) -> SignatureStats {
        self.stats
    }

    #[inline]
    fn bucket(&self, hash: u64) -> usize {
        ((hash >> 16) as usize & self.bucket_mask) * WAYS
    }

    /// The slot that served a key hashing to `hash`, if a way has its signature (a hint to
    /// verify).
    #[inline]
    pub fn get(&mut self, hash: u64) -> Option<u32> {
        let b = self.bucket(hash);
        let sig = hash >> 32;
        let way = self
            .entries
            .get(b..b + WAYS)?
            .iter()
            .find(|&&e| e >> 32 == sig && e as u32 != 0)?;
        self.stats.candidates = self.stats.candidates.wrapping_add(1);
        Some((*way as u32).wrapping_sub(1))
    }

    /// Counts a candidate that was verified.
    #[inline]
    pub fn count_hit(&mut self) {
        self.stats.hits = self.stats.hits.wrapping_add(1);
    }

    /// Remembers that megaflow slot `slot` serves the key hashing to `hash`.
    pub fn insert(&mut self, hash: u64, slot: u32) {
        let b = self.bucket(hash);
        let sig = hash >> 32;
        let entry = (sig << 32) | u64::from(slot.wrapping_add(1));
        let Some(set) = self.entries.get_mut(b..b + WAYS) else {
            return;
        };
        let way = set
            .iter()
            .position(|&e| e >> 32 == sig && e as u32 != 0)
            .or_else(|| set.iter().position(|&e| e as u32 == 0))
            .unwrap_or((hash >> 48) as usize % WAYS);
        set[way] = entry;
        self.stats.inserts = self.stats.inserts.wrapping_add(1);
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.entries.fill(0);
    }

    /// Hands `fetch` the address of `hash`'s bucket, for a prefetch before the lookup.
    #[inline]
    pub fn prefetch(&self, hash: u64, fetch: impl Fn(*const u8) + Copy) {
        if let Some(e) = self.entries.get(self.bucket(hash)) {
            fetch(std::ptr::from_ref(e).cast());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_and_replaces() {
        let mut c = SignatureCache::new(8);
        assert_eq!(c.capacity(), 8);
        let h = 0xabcd_0000_0001_0000u64;
        assert_eq!(c.get(h), None);
        c.insert(h, 0);
        assert_eq!(c.get(h), Some(0));
        c.insert(h, 7);
        assert_eq!(c.get(h), Some(7), "same signature: the way is updated");
        // Four other signatures in the same bucket: one of them displaces a way.
        for s in 1..=4u64 {
            c.insert((s << 32) | 0x1_0000, s as u32 + 10);
        }
        let present = (1..=4u64)
            .filter(|s| c.get((s << 32) | 0x1_0000).is_some())
            .count()
            + usize::from(c.get(h).is_some());
        assert_eq!(present, WAYS);
        // Another bucket is untouched.
        assert_eq!(c.get(0xabcd_0000_0000_0000), None);
        c.clear();
        assert_eq!(c.get(h), None);
    }
}
