//! One subtable of the classifier: the megaflows that share one mask.
//!
//! A subtable keeps only the key words its mask touches (the "significant" words, in stage
//! order), like OVS's miniflows: a mask over 2 of 16 words stores and compares 2 words per
//! megaflow. Masked keys live in one flat arena (`keys`, `width()` words per entry) indexed by
//! a dense local index; the hash table maps a masked-key hash to the local index. Removal
//! swaps the last entry into the hole, so the arena never has gaps, and shrinks the storage
//! when it falls below a quarter full, so that memory follows the number of megaflows.
//!
//! For staged lookup the subtable keeps, for each stage boundary that falls strictly inside
//! its significant words, a counting filter of the hashes of its megaflows' masked prefixes up
//! to that boundary (OVS keeps counting hash maps; see `stage_filter`). The prefix hashes are
//! chained stage by stage; the table hash is computed separately over all the words, two at
//! a time, so that a probe that skips the stage checks pays for no stage boundaries. A probe
//! that checks the stages and passes them all hashes twice; the staging decision
//! ([`Subtable::end_interval`]) keeps that case rare.

use super::stage_filter::StageFilter;
use crate::key::KeyHasher;
use crate::stages::StageLayout;
use core::hash::Hasher;
use foldhash::fast::FoldHasher;
use hashbrown::HashTable;

/// What probing a subtable found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The megaflow at this local index matches.
    Hit(u32),
    /// A stage's prefix hash was absent: no megaflow here can match.
    StageMiss,
    /// All stages passed but no masked key is equal.
    Miss,
}

/// The megaflows of one mask.
#[derive(Debug)]
pub(crate) struct Subtable {
    /// The whole mask, which identifies the subtable.
    mask: Box<[u64]>,
    /// Indices of the mask's nonzero words, in stage order.
    words: Box<[u16]>,
    /// The mask word for each entry of `words`.
    bits: Box<[u64]>,
    /// Stage checks, in order, each ending strictly before `words.len()`.
    stages: Box<[StageFilter]>,
    /// Masked significant words of every megaflow, `words.len()` per entry.
    keys: Vec<u64>,
    /// The classifier slot of every megaflow, by local index.
    slots: Vec<u32>,
    /// Local index by masked-key hash.
    table: HashTable<u32>,
    /// Hits, halved at every ranking pass: the ranking key.
    pub(crate) hits: u64,
    /// Probes and hits since the last ranking pass, for the staging decision.
    window_probes: u64,
    window_hits: u64,
    /// Whether probes check the stage filters (see [`Subtable::end_interval`]).
    staged: bool,
}

impl Subtable {
    /// An empty subtable for `mask` (which has the layout's width).
    pub(crate) fn new(mask: &[u64], layout: &StageLayout) -> Subtable {
        // Sized once: the boxed slices below then take these buffers as they are.
        let n = mask.iter().filter(|&&m| m != 0).count();
        let mut words = Vec::with_capacity(n);
        let mut bits = Vec::with_capacity(n);
        let mut stages = Vec::with_capacity(layout.ends().len());
        let mut start = 0;
        for &end in layout.ends() {
            let stage = layout.order().get(start..end as usize).unwrap_or(&[]);
            for &w in stage {
                let m = mask.get(usize::from(w)).copied().unwrap_or(0);
                if m != 0 {
                    words.push(w);
                    bits.push(m);
                }
            }
            start = end as usize;
            let added = stages.last().map_or(0, |s: &StageFilter| s.end) < words.len();
            if added {
                stages.push(StageFilter::new(words.len()));
            }
        }
        // The last stage that adds words is checked by the main table itself.
        stages.pop();
        Subtable {
            mask: mask.into(),
            words: words.into(),
            bits: bits.into(),
            stages: stages.into(),
            // (Room for a first megaflow.)
            keys: Vec::with_capacity(n),
            slots: Vec::with_capacity(1),
            table: HashTable::new(),
            hits: 0,
            window_probes: 0,
            window_hits: 0,
            staged: true,
        }
    }

    /// The subtable's mask.
    pub(crate) fn mask(&self) -> &[u64] {
        &self.mask
    }

    /// Number of significant words per megaflow.
    fn width(&self) -> usize {
        self.words.len()
    }

    /// Number of megaflows.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The classifier slot of the megaflow at `local`.
    #[inline]
    pub(crate) fn slot(&self, local: u32) -> Option<u32> {
        self.slots.get(local as usize).copied()
    }

    /// The key word `w`, masked.
    #[inline]
    fn masked_word(key: &[u64], w: u16, bits: u64) -> u64 {
        key.get(usize::from(w)).copied().unwrap_or(0) & bits
    }

    /// The stored masked words of the megaflow at `local`.
    #[inline]
    fn stored(&self, local: usize) -> &[u64] {
        let k = self.width();
        self.keys.get(local * k..local * k + k).unwrap_or(&[])
    }

    /// Whether the stored megaflow at `local` matches `key`.
    #[inline]
    pub(crate) fn matches(&self, local: u32, key: &[u64]) -> bool {
        let stored = self.stored(local as usize);
        stored.len() == self.width()
            && stored
                .iter()
                .zip(self.words.iter().zip(self.bits.iter()))
                .all(|(s, (&w, &b))| *s == Self::masked_word(key, w, b))
    }

    /// Looks `key` (a whole flow key) up: the stage checks if enabled, then the table.
    #[inline]
    pub(crate) fn probe(&self, key: &[u64], hasher: &KeyHasher) -> Probe {
        if self.staged && !self.stages_pass(key, hasher) {
            return Probe::StageMiss;
        }
        match self.find_exact(key, hasher) {
            Some(local) => Probe::Hit(local),
            None => Probe::Miss,
        }
    }

    /// Whether every stage filter may hold `key`'s masked prefix.
    #[inline]
    fn stages_pass(&self, key: &[u64], hasher: &KeyHasher) -> bool {
        let mut h = hasher.hasher();
        let mut pos = 0;
        self.stages.iter().all(|stage| {
            self.hash_words(&mut h, key, pos, stage.end);
            pos = stage.end;
            stage.contains(h.finish())
        })
    }

    /// Counts a probe by a counted lookup.
    #[inline]
    pub(crate) fn record(&mut self, hit: bool) {
        self.window_probes = self.window_probes.wrapping_add(1);
        if hit {
            self.window_hits = self.window_hits.wrapping_add(1);
            self.hits = self.hits.wrapping_add(1);
        }
    }

    /// Closes a ranking interval: halves the ranking hits and decides whether the next
    /// interval's probes check the stage filters.
    ///
    /// Stage checks make a probe that ends in a hit dearer (a filter load per stage) and a
    /// probe that would miss cheaper (it stops after the first stages instead of hashing
    /// every word and probing the table). So they pay off for subtables that mostly miss
    /// (those ranked behind the busy ones) and not for the one serving most packets: checks
    /// stay on while at least two probes in three miss. Answers are the same either way.
    pub(crate) fn end_interval(&mut self) {
        if self.window_probes > 0 {
            let misses = self.window_probes - self.window_hits.min(self.window_probes);
            self.staged = misses.saturating_mul(3) >= self.window_probes.saturating_mul(2);
        }
        self.window_probes = 0;
        self.window_hits = 0;
        self.hits /= 2;
    }

    /// Whether probes check the stage filters.
    pub(crate) fn is_staged(&self) -> bool {
        self.staged && !self.stages.is_empty()
    }

    /// Feeds the masked significant words `from..to` of `key` to `h` (one stage's segment).
    #[inline]
    fn hash_words(&self, h: &mut FoldHasher<'_>, key: &[u64], from: usize, to: usize) {
        let words = self.words.get(from..to).unwrap_or(&[]);
        let bits = self.bits.get(from..to).unwrap_or(&[]);
        feed(
            h,
            words
                .iter()
                .zip(bits)
                .map(|(&w, &b)| Self::masked_word(key, w, b)),
        );
    }

    /// The local index of the megaflow whose masked key equals `key & mask`, if any.
    #[inline]
    pub(crate) fn find_exact(&self, key: &[u64], hasher: &KeyHasher) -> Option<u32> {
        let mut h = hasher.hasher();
        self.hash_words(&mut h, key, 0, self.width());
        let hash = h.finish();
        self.table.find(hash, |&i| self.matches(i, key)).copied()
    }

    /// Adds a megaflow for `key` (masked here) stored in classifier slot `slot`; the caller has
    /// checked with [`Subtable::find_exact`] that it is not present. Returns its local index.
    pub(crate) fn push(&mut self, key: &[u64], slot: u32, hasher: &KeyHasher) -> u32 {
        let local = self.slots.len() as u32;
        for (&w, &b) in self.words.iter().zip(self.bits.iter()) {
            self.keys.push(Self::masked_word(key, w, b));
        }
        self.slots.push(slot);
        let (k, keys) = (self.width(), &self.keys);
        let stored = stored_of(keys, k, local as usize);
        prefix_hashes(hasher, stored, &mut self.stages, StageFilter::add);
        self.table
            .insert_unique(hash_stored(hasher, stored), local, |&i| {
                hash_stored(hasher, stored_of(keys, k, i as usize))
            });
        self.resize_filters(hasher);
        local
    }

    /// Removes the megaflow at `local`. If another megaflow moved into `local` to fill the hole,
    /// returns its classifier slot.
    pub(crate) fn remove(&mut self, local: u32, hasher: &KeyHasher) -> Option<u32> {
        let k = self.width();
        let last = u32::try_from(self.slots.len().checked_sub(1)?).ok()?;
        if local > last {
            return None;
        }
        let stored = stored_of(&self.keys, k, local as usize);
        prefix_hashes(hasher, stored, &mut self.stages, StageFilter::remove);
        let hash = hash_stored(hasher, stored);
        if let Ok(e) = self.table.find_entry(hash, |&i| i == local) {
            e.remove();
        }
        let moved = if local == last {
            None
        } else {
            self.move_last_to(local, last, hasher)
        };
        self.keys.truncate(last as usize * k);
        self.slots.truncate(last as usize);
        self.shrink(hasher);
        self.resize_filters(hasher);
        moved
    }

    /// Moves the megaflow at `last` to `local` and re-points its table entry; returns its slot.
    fn move_last_to(&mut self, local: u32, last: u32, hasher: &KeyHasher) -> Option<u32> {
        let k = self.width();
        let (l, t) = (local as usize * k, last as usize * k);
        if t + k > self.keys.len() {
            return None;
        }
        self.keys.copy_within(t..t + k, l);
        let hash = hash_stored(hasher, self.stored(local as usize));
        if let Some(e) = self.table.find_mut(hash, |&i| i == last) {
            *e = local;
        }
        let slot = self.slots.get(last as usize).copied()?;
        *self.slots.get_mut(local as usize)? = slot;
        Some(slot)
    }

    /// Rebuilds the stage filters from the stored keys if their size no longer suits.
    fn resize_filters(&mut self, hasher: &KeyHasher) {
        let n = self.len();
        let Some(len) = self.stages.first().and_then(|s| s.resize_for(n)) else {
            return;
        };
        for stage in self.stages.iter_mut() {
            stage.reset(len);
        }
        let k = self.width();
        for local in 0..n {
            let stored = stored_of(&self.keys, k, local);
            prefix_hashes(hasher, stored, &mut self.stages, StageFilter::add);
        }
    }

    /// Gives memory back once the subtable is less than a quarter full.
    fn shrink(&mut self, hasher: &KeyHasher) {
        let (k, keys) = (self.width(), &self.keys);
        shrink_table(&mut self.table, |&i| {
            hash_stored(hasher, stored_of(keys, k, i as usize))
        });
        shrink_vec(&mut self.keys);
        shrink_vec(&mut self.slots);
    }

    /// Heap bytes held by this subtable.
    pub(crate) fn memory_bytes(&self) -> usize {
        let fixed = (self.mask.len() + self.bits.len()) * 8 + self.words.len() * 2;
        let stages: usize = self
            .stages
            .iter()
            .map(|s| size_of::<StageFilter>() + s.memory_bytes())
            .sum();
        fixed
            + stages
            + self.keys.capacity() * 8
            + self.slots.capacity() * 4
            + self.table.allocation_size()
    }
}

/// The stored words of entry `local` in an arena of `k` words per entry.
fn stored_of(keys: &[u64], k: usize, local: usize) -> &[u64] {
    keys.get(local * k..local * k + k).unwrap_or(&[])
}

/// Hashes stored masked words stage by stage, calling `at_stage` with each stage filter and
/// the prefix hash at its end.
fn prefix_hashes(
    hasher: &KeyHasher,
    stored: &[u64],
    stages: &mut [StageFilter],
    mut at_stage: impl FnMut(&mut StageFilter, u64),
) {
    let mut h = hasher.hasher();
    let mut pos = 0;
    for stage in stages.iter_mut() {
        feed(
            &mut h,
            stored.get(pos..stage.end).unwrap_or(&[]).iter().copied(),
        );
        pos = stage.end;
        at_stage(stage, h.finish());
    }
}

/// Feeds words to `h` two at a time (one folded multiply per pair), an odd last word alone.
/// The hash therefore depends on how a word sequence is split into calls: prefix hashes are
/// fed stage by stage, table hashes all at once, for stored keys and lookups alike.
#[inline]
fn feed(h: &mut FoldHasher<'_>, mut words: impl Iterator<Item = u64>) {
    while let Some(a) = words.next() {
        match words.next() {
            Some(b) => h.write_u128(u128::from(a) | (u128::from(b) << 64)),
            None => h.write_u64(a),
        }
    }
}

/// The table hash of stored masked words (equal to that of a matching key).
fn hash_stored(hasher: &KeyHasher, stored: &[u64]) -> u64 {
    let mut h = hasher.hasher();
    feed(&mut h, stored.iter().copied());
    h.finish()
}

/// Halves a table's capacity while it is less than a quarter full.
fn shrink_table<T>(table: &mut HashTable<T>, hasher: impl Fn(&T) -> u64) {
    if table.capacity() > 64 && table.len() * 4 < table.capacity() {
        table.shrink_to(table.len() * 2, hasher);
    }
}

/// Halves a vector's capacity while it is less than a quarter full.
fn shrink_vec<T>(v: &mut Vec<T>) {
    if v.capacity() > 64 && v.len() * 4 < v.capacity() {
        v.shrink_to(v.len() * 2);
    }
}
