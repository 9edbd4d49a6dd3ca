//! The microflow cache: exact match on the whole flow key, pointing at a megaflow.
//!
//! # Theory of operation
//!
//! The megaflow classifier costs one hash and probe per subtable visited; a packet of a flow
//! seen recently can skip all that. The microflow cache (OVS's "exact match cache", EMC) maps
//! a whole flow key to the [`MegaflowId`] that served it. It is a fixed array of
//! `entries` slots organised as set-associative sets of `ways` entries (2 by default, like
//! OVS's two EMC candidates): the key's hash picks the set (low bits) and a 32-bit signature
//! (high bits); a lookup reads the entries of one set — adjacent, 16 bytes each, so up to 4
//! ways share a cache line — and compares the stored key only when signature and generation
//! agree. It never allocates after construction and never grows.
//!
//! A hit is only a hint: the megaflow it names may have been removed, invalidated or evicted
//! since. The caller verifies it with [`Classifier::hit`](crate::Classifier::hit), which
//! resolves the id only if the slot's generation still matches, and treats a stale id as a
//! miss (then the megaflow lookup refreshes the entry in place).
//!
//! ## Why insertion is probabilistic
//!
//! Inserting on every miss thrashes as soon as more flows are active than the cache holds.
//! With 10,000 flows sent round-robin and 8,192 entries, each insertion evicts an entry whose
//! flow will come back before the newcomer does, so hits collapse while every packet still
//! pays for the insertion (OVS's EMC at 10k flows, `bench/ovs-dpdk`). OVS therefore inserts
//! with probability 1/`emc-insert-inv-prob` (default 1/100), and so does this cache
//! ([`MicroflowConfig::insert_inv_prob`]): an entry is displaced only once per ~100 misses of
//! its set's other flows, so the cache settles on a stable subset of flows that it serves
//! from then on. In a set with `k` competing flows and `w` ways, `min(k, w)` of them are
//! cached in steady state, so the round-robin hit rate approaches `Σ_sets min(k, w) / flows`
//! (for 10,000 flows and 8,192 entries: about 0.66 with 2 ways, 0.72 with 4) instead of
//! collapsing (0.43 when inserting on every miss, 2 ways). A long-lived flow enters after
//! ~100 packets, an insignificant delay; flows of a few packets mostly never enter, which
//! is what an exact-match cache of limited size should prefer. The draw is a xorshift64
//! generator: no system call, a few cycles, deterministic for a given seed.
//!
//! ## Invalidation
//!
//! Each entry carries the cache's generation at insertion; [`Microflow::invalidate_all`]
//! bumps the generation, emptying the cache in O(1). Megaflow removals need no flush here,
//! because stale ids are caught on use.

use crate::key::MegaflowId;
use crate::stages::{ConfigError, MAX_KEY_WORDS};

/// Default entries per set.
pub const WAYS: usize = 2;

/// Largest supported number of entries per set.
pub const MAX_WAYS: usize = 16;

/// Construction parameters of a [`Microflow`] cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroflowConfig {
    /// Flow-key width in `u64` words.
    pub key_words: usize,
    /// Number of entries: a power of two, at least `ways`.
    pub entries: usize,
    /// Entries per set: a power of two up to [`MAX_WAYS`].
    pub ways: usize,
    /// Insert on a miss with probability `1 / insert_inv_prob`; 1 inserts always, 0 never
    /// (which disables the cache, like OVS's `emc-insert-inv-prob=0`).
    pub insert_inv_prob: u32,
    /// Seed of the insertion draw.
    pub seed: u64,
}

impl MicroflowConfig {
    /// OVS's defaults: 8,192 entries, 2 ways, insertion probability 1/100.
    pub fn new(key_words: usize) -> Self {
        MicroflowConfig {
            key_words,
            entries: 8192,
            ways: WAYS,
            insert_inv_prob: 100,
            seed: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

/// Counters of a [`Microflow`] cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MicroflowStats {
    /// Calls to `lookup`.
    pub lookups: u64,
    /// Lookups that found the key (whether or not the megaflow was still live).
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// New entries written.
    pub inserts: u64,
    /// Inserts that found the key present and re-pointed it.
    pub updates: u64,
    /// Inserts that lost the draw.
    pub skipped: u64,
    /// Inserts that displaced a valid entry of another key.
    pub replacements: u64,
}

impl MicroflowStats {
    /// Fraction of lookups that hit (0 without lookups).
    pub fn hit_rate(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            self.hits as f64 / self.lookups as f64
        }
    }
}

/// What [`Microflow::insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insertion {
    /// The key was new and now has an entry.
    Inserted,
    /// The key was present; its entry now names the new megaflow.
    Updated,
    /// The key was new and lost the insertion draw (or has the wrong width).
    Skipped,
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    sig: u32,
    generation: u32,
    id: u64,
}

/// The microflow cache; see the module documentation.
#[derive(Debug)]
pub struct Microflow {
    width: usize,
    ways: usize,
    set_mask: usize,
    entries: Box<[Entry]>,
    keys: Box<[u64]>,
    generation: u32,
    /// Insert when a 32-bit draw is `<=` this; `None` never.
    threshold: Option<u32>,
    rng: u64,
    stats: MicroflowStats,
}

/// Whether `a == b`, without a call to `memcmp` (keys are a few words long): one fold of the
/// words' differences, which the compiler vectorises, with no branch per word.
#[inline]
fn same_words(a: &[u64], b: &[u64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

impl Microflow {
    /// An empty cache; all memory is allocated here.
    pub fn new(config: &MicroflowConfig) -> Result<Self, ConfigError> {
        let (width, n) = (config.key_words, config.entries);
        if width == 0 || width > MAX_KEY_WORDS {
            return Err(ConfigError::BadWidth(width));
        }
        let ways = config.ways;
        if ways == 0 || ways > MAX_WAYS || !ways.is_power_of_two() {
            return Err(ConfigError::BadWays(ways));
        }
        if n < ways || !n.is_power_of_two() || n.checked_mul(width).is_none() {
            return Err(ConfigError::BadCapacity(n));
        }
        let threshold = match config.insert_inv_prob {
            0 => None,
            p => Some(u32::MAX / p),
        };
        Ok(Microflow {
            width,
            ways,
            set_mask: n / ways - 1,
            entries: vec![Entry::default(); n].into_boxed_slice(),
            keys: vec![0; n * width].into_boxed_slice(),
            generation: 1,
            threshold,
            rng: config.seed | 1,
            stats: MicroflowStats::default(),
        })
    }

    /// Number of entries.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Entries in use (O(entries): for reports, not per packet).
    pub fn occupied(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.generation == self.generation)
            .count()
    }

    /// Entries per set.
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// The set that `hash` selects (for tests and analysis).
    pub fn set_index(&self, hash: u64) -> usize {
        hash as usize & self.set_mask
    }

    /// Hands `fetch` the addresses of `hash`'s set (its entries and their keys), for a
    /// prefetch before the lookup. Reads nothing.
    #[inline]
    pub fn prefetch(&self, hash: u64, fetch: impl Fn(*const u8) + Copy) {
        let base = self.set_index(hash) * self.ways;
        if let Some(e) = self.entries.get(base) {
            fetch(std::ptr::from_ref(e).cast());
        }
        if let Some(k) = self.keys.get(base * self.width) {
            fetch(std::ptr::from_ref(k).cast());
        }
    }

    /// The statistics counters.
    pub fn stats(&self) -> MicroflowStats {
        self.stats
    }

    /// Zeroes the statistics counters.
    pub fn reset_stats(&mut self) {
        self.stats = MicroflowStats::default();
    }

    /// The megaflow last recorded for `key` (whose hash under the datapath's
    /// [`KeyHasher`](crate::KeyHasher) is `hash`), if cached. Verify it before use.
    #[inline]
    pub fn lookup(&mut self, key: &[u64], hash: u64) -> Option<MegaflowId> {
        self.stats.lookups = self.stats.lookups.wrapping_add(1);
        match self.find(key, hash) {
            Some(i) => {
                self.stats.hits = self.stats.hits.wrapping_add(1);
                self.entries.get(i).map(|e| MegaflowId::from_bits(e.id))
            }
            None => {
                self.stats.misses = self.stats.misses.wrapping_add(1);
                None
            }
        }
    }

    /// The index of `key`'s valid entry.
    #[inline]
    fn find(&self, key: &[u64], hash: u64) -> Option<usize> {
        let base = self.set_index(hash) * self.ways;
        let sig = (hash >> 32) as u32;
        let w = self.width;
        // Plain index loops: the signature and generation decide before the key is read,
        // and the key compare needs no iterator state (this is the per-packet path).
        for i in base..base + self.ways {
            let e = self.entries.get(i)?;
            if e.sig == sig
                && e.generation == self.generation
                && let Some(k) = self.keys.get(i * w..i * w + w)
                && same_words(k, key)
            {
                return Some(i);
            }
        }
        None
    }

    /// Records that `key` is served by megaflow `id`: always if the key is present, else with
    /// the configured probability. Never allocates.
    pub fn insert(&mut self, key: &[u64], hash: u64, id: MegaflowId) -> Insertion {
        if key.len() != self.width {
            return Insertion::Skipped;
        }
        if let Some(e) = self.find(key, hash).and_then(|i| self.entries.get_mut(i)) {
            e.id = id.to_bits();
            self.stats.updates = self.stats.updates.wrapping_add(1);
            return Insertion::Updated;
        }
        self.insert_absent(key, hash, id)
    }

    /// [`Microflow::insert`] for a key a lookup just missed (so not present): without
    /// looking it up again.
    pub fn insert_absent(&mut self, key: &[u64], hash: u64, id: MegaflowId) -> Insertion {
        if key.len() != self.width {
            return Insertion::Skipped;
        }
        let draw = self.next_random();
        if self.threshold.is_none_or(|t| draw as u32 > t) {
            self.stats.skipped = self.stats.skipped.wrapping_add(1);
            return Insertion::Skipped;
        }
        let i = self.victim(hash, draw >> 32);
        self.write(i, key, hash, id);
        Insertion::Inserted
    }

    /// The way to (over)write in `hash`'s set: an invalid one, else one chosen by `bits`.
    fn victim(&self, hash: u64, bits: u64) -> usize {
        let base = self.set_index(hash) * self.ways;
        let free = (base..base + self.ways).find(|&i| {
            self.entries
                .get(i)
                .is_none_or(|e| e.generation != self.generation)
        });
        free.unwrap_or(base + (bits as usize & (self.ways - 1)))
    }

    fn write(&mut self, i: usize, key: &[u64], hash: u64, id: MegaflowId) {
        let generation = self.generation;
        let Some(e) = self.entries.get_mut(i) else {
            return;
        };
        if e.generation == generation {
            self.stats.replacements = self.stats.replacements.wrapping_add(1);
        }
        *e = Entry {
            sig: (hash >> 32) as u32,
            generation,
            id: id.to_bits(),
        };
        if let Some(slot) = self.keys.get_mut(i * self.width..(i + 1) * self.width) {
            slot.copy_from_slice(key);
        }
        self.stats.inserts = self.stats.inserts.wrapping_add(1);
    }

    /// Forgets `key`'s entry; returns whether it had one.
    pub fn remove(&mut self, key: &[u64], hash: u64) -> bool {
        match self.find(key, hash).and_then(|i| self.entries.get_mut(i)) {
            Some(e) => {
                e.generation = 0;
                true
            }
            None => false,
        }
    }

    /// Empties the cache in O(1) by moving to a new generation.
    pub fn invalidate_all(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // After 2^32 bumps old generations could come back: really clear, once.
            self.entries.fill(Entry::default());
            self.generation = 1;
        }
    }

    /// Number of valid entries (O(capacity); for tests and reports).
    pub fn occupancy(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.generation == self.generation)
            .count()
    }

    /// Bytes used: the struct and its two arrays (fixed at construction).
    pub fn memory_bytes(&self) -> usize {
        size_of::<Self>() + self.entries.len() * size_of::<Entry>() + self.keys.len() * 8
    }

    /// xorshift64: cheap, deterministic, good enough for an insertion coin.
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_words_is_slice_equality_at_every_width() {
        for n in 0..12usize {
            let a: Vec<u64> = (0..n as u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .collect();
            assert!(same_words(&a, &a.clone()), "{n} words");
            for i in 0..n {
                for bit in [0, 17, 63] {
                    let mut b = a.clone();
                    b[i] ^= 1 << bit;
                    assert!(!same_words(&a, &b), "{n} words, word {i} bit {bit}");
                }
            }
            let longer: Vec<u64> = a.iter().copied().chain([0]).collect();
            assert!(!same_words(&a, &longer), "{n} against {} words", n + 1);
        }
    }

    fn cache(inv: u32) -> Microflow {
        let mut c = MicroflowConfig::new(2);
        c.entries = 8;
        c.insert_inv_prob = inv;
        Microflow::new(&c).unwrap_or_else(|e| panic!("{e}"))
    }

    fn id(slot: u32) -> MegaflowId {
        MegaflowId {
            slot,
            generation: 3,
        }
    }

    #[test]
    fn hit_after_insert_and_invalidate_all() {
        let mut m = cache(1);
        assert_eq!(m.lookup(&[1, 2], 77), None);
        assert_eq!(m.insert(&[1, 2], 77, id(5)), Insertion::Inserted);
        assert_eq!(m.lookup(&[1, 2], 77), Some(id(5)));
        assert_eq!(m.lookup(&[1, 3], 77), None, "same hash, other key");
        assert_eq!(m.insert(&[1, 2], 77, id(6)), Insertion::Updated);
        assert_eq!(m.lookup(&[1, 2], 77), Some(id(6)));
        m.invalidate_all();
        assert_eq!(m.lookup(&[1, 2], 77), None);
        assert_eq!(m.occupancy(), 0);
    }

    #[test]
    fn never_inserts_with_zero_probability_and_rejects_bad_widths() {
        let mut m = cache(0);
        assert_eq!(m.insert(&[1, 2], 1, id(1)), Insertion::Skipped);
        assert_eq!(m.insert(&[1], 1, id(1)), Insertion::Skipped);
        assert_eq!(m.lookup(&[1], 1), None);
        assert_eq!(m.occupancy(), 0);
    }

    #[test]
    fn a_set_holds_two_ways() {
        let mut m = cache(1);
        // Hashes 1, 5, 9 all select set 1 of 4.
        for (h, k) in [(1u64, 10u64), (5, 11), (9, 12)] {
            m.insert(&[k, 0], h, id(k as u32));
        }
        let hits = [(1u64, 10u64), (5, 11), (9, 12)]
            .iter()
            .filter(|(h, k)| m.lookup(&[*k, 0], *h).is_some())
            .count();
        assert_eq!(hits, 2);
        assert_eq!(m.stats().replacements, 1);
    }

    #[test]
    fn generation_wrap_really_clears() {
        let mut m = cache(1);
        m.insert(&[1, 2], 3, id(1));
        m.generation = u32::MAX;
        m.invalidate_all();
        assert_eq!(m.generation, 1);
        assert_eq!(m.lookup(&[1, 2], 3), None);
    }

    #[test]
    fn bad_configs_are_rejected() {
        let mut c = MicroflowConfig::new(2);
        c.entries = 6;
        assert_eq!(Microflow::new(&c).err(), Some(ConfigError::BadCapacity(6)));
        c.entries = 1;
        assert_eq!(Microflow::new(&c).err(), Some(ConfigError::BadCapacity(1)));
        c.entries = 8;
        c.ways = 3;
        assert_eq!(Microflow::new(&c).err(), Some(ConfigError::BadWays(3)));
        let c = MicroflowConfig::new(0);
        assert_eq!(Microflow::new(&c).err(), Some(ConfigError::BadWidth(0)));
    }
}
