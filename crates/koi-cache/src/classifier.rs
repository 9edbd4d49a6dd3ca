//! The megaflow classifier: tuple-space search over (mask, masked key) → value.
//!
//! # Theory of operation
//!
//! A **megaflow** is what koi's slow path learns from one packet: the set of flow-key bits
//! that influenced any decision while the interpreter processed it (the *mask*), the values of
//! those bits (the *masked key*), and the resulting action program (the *value*, generic
//! here). Every packet whose key agrees with the masked key on the masked bits would be
//! processed identically, so the datapath can run the action program without the pipeline.
//!
//! ## Tuple space search
//!
//! Matching a key against many (mask, value) pairs is a wildcard-match problem; the
//! classifier solves it the way Open vSwitch does (`lib/classifier.h`, `lib/dpif-netdev.c`
//! "dpcls"), by *tuple space search* (Srinivasan et al., 1999): megaflows are grouped by
//! mask, one **subtable** per distinct mask, and each subtable is an exact-match hash table
//! on the masked key. A lookup visits subtables: it masks the key with the subtable's mask,
//! hashes, and probes. Cost grows with the number of distinct masks, not of megaflows; real
//! programs produce few masks (the L2L3-ACL program: a handful), because the slow path
//! un-wildcards the same fields for the same kind of traffic.
//!
//! ## No priorities
//!
//! OpenFlow's classifier must find the *highest-priority* match and so visits every subtable
//! (with pruning by maximum priority). Megaflows need no priorities: the slow path builds each
//! mask from every bit that influenced the outcome, so two megaflows that both match some key
//! were derived from packets that agree on all the bits either of them depends on, and
//! therefore carry the same actions. Any match is the right match, and a lookup stops at the
//! first subtable that matches. This is the invariant the caller must keep: **megaflows that
//! overlap must have equivalent values**. The classifier does not check it.
//!
//! Inserting a megaflow whose (mask, masked key) is already present does not add a second
//! one: the existing megaflow keeps its id and hit count and gets the new value and tags; the
//! old value is handed back in [`Inserted::replaced`]. (Two packets of one flow in a batch
//! both miss and both go to the slow path; the second install is then a replacement.)
//!
//! ## Subtable ranking
//!
//! Because the first match wins, the order of the visit only changes cost. Subtables are kept
//! in a vector ranked by recent hits, busiest first, so that most packets are served by the
//! first subtable probed. Re-ranking every hit would cost more than it saves; instead each
//! subtable counts its hits, and every `resort_interval` lookups the vector is sorted (in
//! place, no allocation) and the counts halved, so the ranking follows traffic shifts (OVS
//! re-sorts its `pvector` once per second).
//!
//! ## Staged lookup
//!
//! Most subtable probes miss: with M masks a packet matches in at most one subtable but may
//! visit M. A miss costs the hash of all masked words plus a table probe. Staged lookup
//! (Open vSwitch's `lib/classifier.c`, Pfaff et al., NSDI 2015) makes misses cheaper: the
//! key's words are grouped into **stages** (metadata, L2, L3, L4, chosen by the compiler as
//! PISCES §4.3 describes; see [`StageLayout`]); a prefix hash is chained stage by stage, and
//! after each stage the subtable checks a filter of the prefix hashes of all its megaflows up
//! to that stage. An absent prefix proves that no megaflow of the subtable matches, so the
//! probe stops after hashing only the first stages. (In OVS the main gain is narrower
//! megaflows, because a rejected subtable only un-wildcards the stages it looked at; koi's
//! slow path tracks its own wildcards, so here the gain is the cost of misses alone.)
//!
//! OVS keeps a counting hash map per stage; koi keeps a counting filter (an array of small
//! counters indexed by the prefix hash, see `stage_filter`), so that a check is one memory
//! load; a false "maybe" only costs the rest of the probe, and counting keeps removal exact.
//! Stages the mask does not touch are skipped; the last stage the mask touches is checked by
//! the table itself, whose hash is computed over all the words at once (two per multiply).
//! A single stage turns staging off.
//!
//! Stage checks are not free: on a probe that ends in a hit they are pure overhead. At each
//! re-ranking, every subtable looks at its probes in the interval and keeps checking its
//! filters only if at least two in three missed; the busy subtable at the front of the
//! ranking thus probes straight into its table, the ones behind it reject early. The filters
//! are maintained either way, and the answers do not depend on the choice. Fine stages cost
//! more than coarse ones (a filter check each): the default of one stage per word suits
//! tests; the compiler should group words by header.
//!
//! A subtable stores only its mask's nonzero words (in stage order), so a megaflow over 2 of
//! 16 words costs 2 words of storage and 2 words of hashing and comparison.
//!
//! ## Invalidation
//!
//! Each megaflow carries a small set of `u32` **tags**, typically the ids of the tables (and
//! externs) the slow path consulted. When the control plane changes a table, every megaflow
//! computed from its old contents must go before the write is acknowledged:
//! [`Classifier::remove_tagged`] removes them all, through a tag → megaflows index, in time
//! proportional to their number. Removed megaflows' slots get a new generation, so any
//! [`MegaflowId`] still held elsewhere (notably in the microflow cache) stops resolving: a
//! microflow hit is verified with [`Classifier::get`] or [`Classifier::hit`].
//!
//! ## Bounds and eviction
//!
//! The number of megaflows is limited (`max_megaflows`); at the limit an insert evicts a
//! victim and hands it back in [`Inserted::evicted`]. The policy is segmented (see
//! `megaflows`): a new megaflow is on probation until its first hit, and the oldest one on
//! probation goes first, so a churn of new flows evicts its own members and never an
//! established flow; only when few are on probation is the victim the least hit (by recent hit
//! rate) of a sample of the others — hits through the microflow cache count too, which the
//! datapath credits with [`Classifier::hit`]. Nothing grows
//! past what the limit implies: the slot array stops at `max_megaflows` slots, and subtables
//! (keys, tables, filters) give memory back as they empty and are dropped when empty, so
//! their memory follows the number of live megaflows ([`Classifier::memory_use`]).
//!
//! ## Costs
//!
//! `lookup` is O(subtables visited) and never allocates; a key of the wrong width misses.
//! `insert`, `remove` and eviction are O(tags + key width) amortised; `remove_tagged` is
//! O(megaflows removed). The counting lookups ([`Classifier::lookup`], [`Classifier::hit`])
//! take `&mut self`: a classifier belongs to one poll thread, like OVS's per-PMD dpcls.

mod megaflows;
mod stage_filter;
mod stats;
mod subtable;
mod tags;

pub use stats::{ClassifierStats, InsertError, Inserted, MemoryUse, Removed};

use crate::key::{KeyHasher, MegaflowId};
use crate::stages::{ConfigError, StageLayout};
use core::ops::Range;
use hashbrown::HashTable;
use megaflows::{Megaflow, Megaflows, TagRef};
use subtable::{Probe, Subtable};
use tags::TagIndex;

/// Construction parameters of a [`Classifier`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassifierConfig {
    /// Flow-key width in `u64` words.
    pub key_words: usize,
    /// Stages as word ranges in lookup order, partitioning `0..key_words`; empty means one
    /// stage per word.
    pub stages: Vec<Range<usize>>,
    /// Maximum number of megaflows.
    pub max_megaflows: usize,
    /// At the limit, evict (`true`) or fail the insert with [`InsertError::Full`].
    pub evict_when_full: bool,
    /// Lookups between subtable re-rankings.
    pub resort_interval: u64,
    /// Hash seed; `None` draws a random one (the production choice).
    pub seed: Option<u64>,
}

impl ClassifierConfig {
    /// Defaults for a key of `key_words` words: a stage per word, 65,536 megaflows (OVS's
    /// per-thread `MAX_FLOWS`) with eviction, re-ranking every 16,384 lookups, random seed.
    pub fn new(key_words: usize) -> Self {
        ClassifierConfig {
            key_words,
            stages: Vec::new(),
            max_megaflows: 65_536,
            evict_when_full: true,
            resort_interval: 1 << 14,
            seed: None,
        }
    }
}

/// The megaflow classifier; see the module documentation.
#[derive(Debug)]
pub struct Classifier<V> {
    layout: StageLayout,
    hasher: KeyHasher,
    subtables: Vec<Option<Subtable>>,
    free_subtables: Vec<u32>,
    by_mask: HashTable<u32>,
    ranked: Vec<u32>,
    megaflows: Megaflows<V>,
    /// Each slot's megaflow key, masked, at the full key width (`width` words per slot):
    /// [`Classifier::slot_matches`] compares a key against it and its subtable's mask
    /// word by word, without the subtable's compacted layout.
    exact: Vec<u64>,
    tags: TagIndex,
    evict: bool,
    resort_interval: u64,
    since_resort: u64,
    stats: ClassifierStats,
}

impl<V> Classifier<V> {
    /// An empty classifier.
    pub fn new(config: &ClassifierConfig) -> Result<Self, ConfigError> {
        let layout = if config.stages.is_empty() {
            StageLayout::per_word(config.key_words)?
        } else {
            StageLayout::new(config.key_words, &config.stages)?
        };
        let hasher = KeyHasher::from_seed(config.seed);
        Ok(Classifier {
            layout,
            tags: TagIndex::new(hasher.clone()),
            hasher,
            subtables: Vec::new(),
            free_subtables: Vec::new(),
            by_mask: HashTable::new(),
            ranked: Vec::new(),
            megaflows: Megaflows::new(config.max_megaflows),
            exact: Vec::new(),
            evict: config.evict_when_full,
            resort_interval: config.resort_interval.max(1),
            since_resort: 0,
            stats: ClassifierStats::default(),
        })
    }

    /// Flow-key width in words.
    pub fn key_words(&self) -> usize {
        self.layout.width()
    }

    /// Number of megaflows.
    pub fn len(&self) -> usize {
        self.megaflows.len()
    }

    /// Whether there are no megaflows.
    pub fn is_empty(&self) -> bool {
        self.megaflows.len() == 0
    }

    /// Megaflows on probation: not hit since their insert, the first to be evicted.
    pub fn on_probation(&self) -> usize {
        self.megaflows.on_probation()
    }

    /// The megaflow limit.
    pub fn limit(&self) -> usize {
        self.megaflows.limit()
    }

    /// Number of subtables (distinct masks).
    pub fn subtable_count(&self) -> usize {
        self.ranked.len()
    }

    /// The statistics counters.
    pub fn stats(&self) -> ClassifierStats {
        self.stats
    }

    /// Zeroes the statistics counters (not the per-megaflow hit counts).
    pub fn reset_stats(&mut self) {
        self.stats = ClassifierStats::default();
    }

    /// Finds a megaflow matching `key`, counting the lookup and the hit (which also protects
    /// the megaflow from eviction). A key of the wrong width misses. Never allocates.
    #[inline]
    pub fn lookup(&mut self, key: &[u64]) -> Option<(MegaflowId, &V)> {
        self.stats.lookups = self.stats.lookups.wrapping_add(1);
        self.since_resort += 1;
        if self.since_resort >= self.resort_interval {
            self.resort();
        }
        let Some(slot) = self.search_counted(key) else {
            self.stats.misses = self.stats.misses.wrapping_add(1);
            return None;
        };
        self.stats.hits = self.stats.hits.wrapping_add(1);
        let (id, flow) = self.megaflows.touch(slot)?;
        Some((id, &flow.value))
    }

    /// [`Classifier::search`] that also counts probes, per subtable and in the stats;
    /// returns the matching megaflow's slot.
    #[inline]
    fn search_counted(&mut self, key: &[u64]) -> Option<u32> {
        if key.len() != self.layout.width() {
            return None;
        }
        let (mut probed, mut skips, mut found) = (0, 0, None);
        for &st in &self.ranked {
            let Some(sub) = self.subtables.get_mut(st as usize).and_then(Option::as_mut) else {
                continue;
            };
            probed += 1;
            let probe = sub.probe(key, &self.hasher);
            sub.record(matches!(probe, Probe::Hit(_)));
            match probe {
                Probe::Hit(local) => {
                    found = sub.slot(local);
                    break;
                }
                Probe::StageMiss => skips += 1,
                Probe::Miss => {}
            }
        }
        self.stats.subtables_probed = self.stats.subtables_probed.wrapping_add(probed);
        self.stats.stage_skips = self.stats.stage_skips.wrapping_add(skips);
        found
    }

    /// Finds a megaflow matching `key` without counting anything (for inspection and tests).
    pub fn find(&self, key: &[u64]) -> Option<(MegaflowId, &V)> {
        let (st, local) = self.search(key)?;
        let slot = self.subtable(st)?.slot(local)?;
        self.megaflows.at(slot).map(|(id, f)| (id, &f.value))
    }

    /// Visits subtables in rank order; returns the first match (subtable, local index).
    fn search(&self, key: &[u64]) -> Option<(u32, u32)> {
        if key.len() != self.layout.width() {
            return None;
        }
        self.ranked
            .iter()
            .find_map(|&st| match self.subtable(st)?.probe(key, &self.hasher) {
                Probe::Hit(local) => Some((st, local)),
                Probe::StageMiss | Probe::Miss => None,
            })
    }

    fn subtable(&self, st: u32) -> Option<&Subtable> {
        self.subtables.get(st as usize)?.as_ref()
    }

    /// Re-ranks the subtables by recent hits, halves the counts, and lets each subtable
    /// decide whether to check its stage filters in the next interval.
    fn resort(&mut self) {
        self.since_resort = 0;
        self.stats.resorts = self.stats.resorts.wrapping_add(1);
        let subtables = &self.subtables;
        let hits = |st: &u32| {
            subtables
                .get(*st as usize)
                .and_then(Option::as_ref)
                .map_or(0, |s| s.hits)
        };
        self.ranked
            .sort_unstable_by_key(|st| core::cmp::Reverse(hits(st)));
        for sub in self.subtables.iter_mut().flatten() {
            sub.end_interval();
        }
    }

    /// The live megaflow's value.
    #[inline]
    pub fn get(&self, id: MegaflowId) -> Option<&V> {
        self.megaflows.get(id).map(|f| &f.value)
    }

    /// The live megaflow's value, mutably.
    pub fn get_mut(&mut self, id: MegaflowId) -> Option<&mut V> {
        self.megaflows.get_mut(id).map(|f| &mut f.value)
    }

    /// Like [`Classifier::get`], and credits the megaflow with a hit: the datapath calls this
    /// for packets the microflow cache served, so that their megaflow counts them and is not
    /// evicted as idle.
    #[inline]
    pub fn hit(&mut self, id: MegaflowId) -> Option<&V> {
        self.megaflows.touch_id(id).map(|f| &f.value)
    }

    /// [`Classifier::hit`] without the value: whether `id` is live (then credited).
    #[inline]
    pub fn credit(&mut self, id: MegaflowId) -> bool {
        self.hit(id).is_some()
    }

    /// The id of the live megaflow in slot `slot` if it matches `key`: the check of a
    /// [`crate::SignatureCache`] hint, one subtable's compare instead of a search (credit the
    /// hit with [`Classifier::hit`]).
    #[inline]
    pub fn slot_matches(&self, slot: u32, key: &[u64]) -> Option<MegaflowId> {
        let (id, flow) = self.megaflows.at(slot)?;
        let sub = self.subtables.get(flow.subtable as usize)?.as_ref()?;
        let w = self.layout.width();
        let at = slot as usize * w;
        let stored = self.exact.get(at..at + w)?;
        (key.len() == w && masked_equal(key, sub.mask(), stored)).then_some(id)
    }

    /// Packets the megaflow has served (lookups and [`Classifier::hit`] credits).
    pub fn hits(&self, id: MegaflowId) -> Option<u64> {
        self.megaflows.get(id).map(|f| f.hits)
    }

    /// The megaflow's tags, sorted and without duplicates.
    pub fn tags(&self, id: MegaflowId) -> Option<impl Iterator<Item = u32> + '_> {
        self.megaflows.get(id).map(|f| f.tags.iter().map(|t| t.tag))
    }

    /// The megaflow's mask.
    pub fn mask(&self, id: MegaflowId) -> Option<&[u64]> {
        let flow = self.megaflows.get(id)?;
        Some(self.subtable(flow.subtable)?.mask())
    }

    /// Number of live megaflows carrying `tag`.
    pub fn tagged_count(&self, tag: u32) -> usize {
        self.tags.count(tag)
    }

    /// All live megaflows, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (MegaflowId, &V)> + '_ {
        self.megaflows
            .live_slots()
            .filter_map(|slot| self.megaflows.at(slot).map(|(id, f)| (id, &f.value)))
    }
}

impl<V> Classifier<V> {
    /// Adds the megaflow `key & mask` → `value` carrying `tags`; see the module docs for
    /// replacement (same mask and masked key) and eviction (at the limit).
    pub fn insert(
        &mut self,
        mask: &[u64],
        key: &[u64],
        value: V,
        tags: &[u32],
    ) -> Result<Inserted<V>, InsertError> {
        self.check_width(mask, key)?;
        if let Some(id) = self.find_megaflow(mask, key) {
            let replaced = self.replace(id, value, tags);
            return Ok(Inserted {
                id,
                replaced,
                evicted: None,
            });
        }
        let evicted = if self.megaflows.is_full() {
            Some(self.evict_one()?)
        } else {
            None
        };
        let st = self.subtable_for(mask);
        let flow = Megaflow {
            value,
            subtable: st,
            local: 0,
            hits: 0,
            hits_seen: 0,
            score: 0,
            probation: true,
            tags: Box::new([]),
        };
        let id = self.megaflows.alloc(flow).ok_or(InsertError::Full)?;
        self.set_exact(id.slot, mask, key);
        let hasher = &self.hasher;
        let local = match self.subtables.get_mut(st as usize).and_then(Option::as_mut) {
            Some(sub) => sub.push(key, id.slot, hasher),
            None => 0,
        };
        let tag_refs = self.index_tags(id.slot, tags);
        if let Some(flow) = self.megaflows.get_mut(id) {
            flow.local = local;
            flow.tags = tag_refs;
        }
        self.stats.inserts = self.stats.inserts.wrapping_add(1);
        Ok(Inserted {
            id,
            replaced: None,
            evicted,
        })
    }

    /// Records slot `slot`'s masked key (see [`Classifier::exact`]).
    fn set_exact(&mut self, slot: u32, mask: &[u64], key: &[u64]) {
        let w = self.layout.width();
        let at = slot as usize * w;
        if self.exact.len() < at + w {
            self.exact.resize(at + w, 0);
        }
        if let Some(dst) = self.exact.get_mut(at..at + w) {
            for ((d, k), m) in dst.iter_mut().zip(key).zip(mask) {
                *d = k & m;
            }
        }
    }

    fn check_width(&self, mask: &[u64], key: &[u64]) -> Result<(), InsertError> {
        let expected = self.layout.width();
        if mask.len() == expected && key.len() == expected {
            Ok(())
        } else {
            Err(InsertError::WidthMismatch {
                expected,
                mask: mask.len(),
                key: key.len(),
            })
        }
    }

    /// The id of the megaflow with exactly this mask and masked key.
    pub fn find_megaflow(&self, mask: &[u64], key: &[u64]) -> Option<MegaflowId> {
        let st = self.subtable_of_mask(mask)?;
        let sub = self.subtable(st)?;
        let slot = sub.slot(sub.find_exact(key, &self.hasher)?)?;
        self.megaflows.at(slot).map(|(id, _)| id)
    }

    /// Gives an existing megaflow a new value and tags; returns the old value.
    fn replace(&mut self, id: MegaflowId, value: V, tags: &[u32]) -> Option<V> {
        let old_tags = core::mem::take(&mut self.megaflows.get_mut(id)?.tags);
        self.unindex_tags(&old_tags);
        let tag_refs = self.index_tags(id.slot, tags);
        let flow = self.megaflows.get_mut(id)?;
        flow.tags = tag_refs;
        let old = core::mem::replace(&mut flow.value, value);
        self.megaflows.promote(id);
        self.stats.replacements = self.stats.replacements.wrapping_add(1);
        Some(old)
    }

    /// Evicts the eviction policy's victim.
    fn evict_one(&mut self) -> Result<Removed<V>, InsertError> {
        if !self.evict {
            return Err(InsertError::Full);
        }
        let probation = self.megaflows.on_probation();
        let victim = self.megaflows.victim().ok_or(InsertError::Full)?;
        let removed = self.remove_slot(victim).ok_or(InsertError::Full)?;
        self.stats.evictions = self.stats.evictions.wrapping_add(1);
        if self.megaflows.on_probation() < probation {
            self.stats.probation_evictions = self.stats.probation_evictions.wrapping_add(1);
        }
        Ok(removed)
    }

    /// Records `slot` under each of `tags` (deduplicated).
    fn index_tags(&mut self, slot: u32, tags: &[u32]) -> Box<[TagRef]> {
        let mut sorted = tags.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        sorted
            .into_iter()
            .map(|tag| TagRef {
                tag,
                pos: self.tags.add(tag, slot),
            })
            .collect()
    }

    /// Removes tag-index entries, fixing the positions of the megaflows that moved.
    fn unindex_tags(&mut self, tag_refs: &[TagRef]) {
        for r in tag_refs {
            let Some(moved) = self.tags.remove(r.tag, r.pos) else {
                continue;
            };
            if let Some((_, flow)) = self.megaflows.at_mut(moved)
                && let Some(t) = flow.tags.iter_mut().find(|t| t.tag == r.tag)
            {
                t.pos = r.pos;
            }
        }
    }

    fn hash_mask(&self, mask: &[u64]) -> u64 {
        self.hasher.hash(mask)
    }

    fn subtable_of_mask(&self, mask: &[u64]) -> Option<u32> {
        let subtables = &self.subtables;
        let same = |st: &u32| {
            subtables
                .get(*st as usize)
                .and_then(Option::as_ref)
                .is_some_and(|s| s.mask() == mask)
        };
        self.by_mask.find(self.hash_mask(mask), same).copied()
    }

    /// The subtable for `mask`, created (ranked last) if absent.
    fn subtable_for(&mut self, mask: &[u64]) -> u32 {
        if let Some(st) = self.subtable_of_mask(mask) {
            return st;
        }
        let sub = Subtable::new(mask, &self.layout);
        let st = match self.free_subtables.pop() {
            Some(st) => {
                if let Some(place) = self.subtables.get_mut(st as usize) {
                    *place = Some(sub);
                }
                st
            }
            None => {
                self.subtables.push(Some(sub));
                (self.subtables.len() - 1) as u32
            }
        };
        let (hasher, subtables) = (&self.hasher, &self.subtables);
        let rehash = |st: &u32| {
            subtables
                .get(*st as usize)
                .and_then(Option::as_ref)
                .map_or(0, |s| hasher.hash(s.mask()))
        };
        self.by_mask.insert_unique(hasher.hash(mask), st, rehash);
        self.ranked.push(st);
        st
    }

    /// Drops an empty subtable.
    fn drop_subtable(&mut self, st: u32) {
        let Some(sub) = self.subtables.get_mut(st as usize).and_then(Option::take) else {
            return;
        };
        let hash = self.hash_mask(sub.mask());
        if let Ok(e) = self.by_mask.find_entry(hash, |&x| x == st) {
            e.remove();
        }
        self.ranked.retain(|&x| x != st);
        self.free_subtables.push(st);
    }
}

impl<V> Classifier<V> {
    /// Removes the megaflow `id`; `None` if it is not live.
    pub fn remove(&mut self, id: MegaflowId) -> Option<Removed<V>> {
        self.megaflows.get(id)?;
        let removed = self.remove_slot(id.slot)?;
        self.stats.removals = self.stats.removals.wrapping_add(1);
        Some(removed)
    }

    /// Removes every megaflow carrying `tag`; returns how many.
    pub fn remove_tagged(&mut self, tag: u32) -> usize {
        self.remove_tagged_with(tag, |_| {})
    }

    /// Removes every megaflow carrying `tag`, handing each to `sink`; returns how many.
    pub fn remove_tagged_with(&mut self, tag: u32, mut sink: impl FnMut(Removed<V>)) -> usize {
        let mut n = 0;
        for slot in self.tags.take(tag) {
            if let Some(removed) = self.remove_slot(slot) {
                sink(removed);
                n += 1;
            }
        }
        self.stats.removals = self.stats.removals.wrapping_add(n as u64);
        n
    }

    /// Removes every megaflow; returns how many. All their ids become stale.
    pub fn clear(&mut self) -> usize {
        let slots: Vec<u32> = self.megaflows.live_slots().collect();
        let mut n = 0;
        for slot in slots {
            if self.megaflows.free(slot).is_some() {
                n += 1;
            }
        }
        self.subtables = Vec::new();
        self.free_subtables = Vec::new();
        self.by_mask = HashTable::new();
        self.ranked = Vec::new();
        self.exact = Vec::new();
        self.tags.clear();
        self.stats.removals = self.stats.removals.wrapping_add(n as u64);
        n
    }

    /// Removes the megaflow in `slot` from the slab, its subtable and the tag index.
    fn remove_slot(&mut self, slot: u32) -> Option<Removed<V>> {
        let (id, flow) = self.megaflows.free(slot)?;
        let hasher = &self.hasher;
        if let Some(sub) = self
            .subtables
            .get_mut(flow.subtable as usize)
            .and_then(Option::as_mut)
        {
            let moved = sub.remove(flow.local, hasher);
            let now_empty = sub.len() == 0;
            if let Some((_, m)) = moved.and_then(|s| self.megaflows.at_mut(s)) {
                m.local = flow.local;
            }
            if now_empty {
                self.drop_subtable(flow.subtable);
            }
        }
        self.unindex_tags(&flow.tags);
        Some(Removed {
            id,
            value: flow.value,
            hits: flow.hits,
        })
    }

    /// Bytes used by the classifier, by part: its own struct and everything it allocated
    /// (not what the values themselves own).
    pub fn memory_use(&self) -> MemoryUse {
        let subtables: usize = self
            .subtables
            .iter()
            .flatten()
            .map(Subtable::memory_bytes)
            .sum();
        MemoryUse {
            slots: self.megaflows.memory_bytes() + self.exact.capacity() * 8,
            subtables: subtables
                + self.subtables.capacity() * size_of::<Option<Subtable>>()
                + (self.free_subtables.capacity() + self.ranked.capacity()) * 4
                + self.by_mask.allocation_size(),
            tag_index: self.tags.memory_bytes(),
            fixed: size_of::<Self>(),
        }
    }

    /// Total bytes used ([`Classifier::memory_use`] summed).
    pub fn memory_bytes(&self) -> usize {
        self.memory_use().total()
    }

    /// Whether the subtable holding `id` currently checks its stage filters.
    pub fn subtable_is_staged(&self, id: MegaflowId) -> Option<bool> {
        let st = self.megaflows.get(id)?.subtable;
        Some(self.subtable(st)?.is_staged())
    }

    /// The rank (0 = probed first) of the subtable holding `id`.
    #[doc(hidden)]
    pub fn subtable_rank(&self, id: MegaflowId) -> Option<usize> {
        let st = self.megaflows.get(id)?.subtable;
        self.ranked.iter().position(|&x| x == st)
    }
}

/// Whether `key` masked by `mask` is `stored` (all three of one width): every word
/// compared, without early exit.
#[inline]
fn masked_equal(key: &[u64], mask: &[u64], stored: &[u64]) -> bool {
    key.iter()
        .zip(mask)
        .zip(stored)
        .fold(0, |d, ((k, m), s)| d | ((k & m) ^ s))
        == 0
}

#[cfg(test)]
mod tests;
