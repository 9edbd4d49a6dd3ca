//! The cache tiers together, as one poll thread's datapath uses them.
//!
//! [`FlowCache::lookup`] hashes the key, tries the microflow cache, verifies its hit against
//! the classifier (a stale id is a miss), then the signature cache's hint if there is one
//! ([`crate::signature`], verified against the one megaflow it names), then falls back to the
//! classifier's search; a megaflow found without the microflow cache is offered to it
//! (probabilistically) and to the signature cache.
//!
//! **Microflow bypass.** The microflow cache pays only when it serves nearly every packet:
//! its probe reads a set of whole keys (72 bytes per entry for a 7-word key), while a
//! signature-cache hit costs about as much, so at a 66% hit rate (10,000 flows in 8,192
//! entries) the probe, the misses' extra work and the cache lines it occupies cost more than
//! they save, and at 100,000 flows (7% hits) much more. With a signature cache present, the
//! flow cache therefore measures the microflow hit rate over windows of [`WINDOW`] probes and
//! stops probing while it is below [`MIN_HIT_RATE`]; while bypassed, one lookup in
//! [`SAMPLE`] still probes (and inserts), so the rate keeps being measured and the tier comes
//! back when the traffic narrows to flows it holds. Answers are the same either way: the
//! microflow cache only remembers which megaflow served a key. A miss is the caller's upcall:
//! it runs the slow path and calls [`FlowCache::install`]. Everything here is per thread
//! (`&mut self`), like OVS's per-PMD EMC and dpcls.

use crate::classifier::{Classifier, ClassifierConfig, InsertError, Inserted};
use crate::key::{MegaflowId, WordHash};
use crate::microflow::{Microflow, MicroflowConfig};
use crate::signature::SignatureCache;
use crate::stages::ConfigError;

/// Which tier served a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// The microflow cache (verified against the classifier).
    Microflow,
    /// The megaflow classifier.
    Megaflow,
}

/// Offers `key` (served by megaflow `id`) to the microflow tier after a probe: `Some(true)`
/// if the probe did not find it, `Some(false)` if it found a stale id; `None`: no probe.
#[inline]
fn offer_microflow(
    m: Option<&mut Microflow>,
    offer: Option<bool>,
    key: &[u64],
    hash: u64,
    id: MegaflowId,
) {
    match (m, offer) {
        (Some(m), Some(true)) => {
            m.insert_absent(key, hash, id);
        }
        (Some(m), Some(false)) => {
            m.insert(key, hash, id);
        }
        _ => {}
    }
}

/// Microflow probes per measurement window of the bypass decision.
pub const WINDOW: u32 = 4096;

/// Hit rate (percent) below which the microflow tier is bypassed (with a signature cache).
pub const MIN_HIT_RATE: u32 = 90;

/// While bypassed, one lookup in this many still probes the microflow tier.
pub const SAMPLE: u32 = 16;

/// A microflow cache and a signature cache in front of a megaflow classifier.
#[derive(Debug)]
pub struct FlowCache<V> {
    hasher: WordHash,
    /// Key words the lookup hash reads as 0 ([`FlowCache::exclude_from_hash`]).
    unhashed: std::ops::Range<usize>,
    microflow: Option<Microflow>,
    signatures: Option<SignatureCache>,
    classifier: Classifier<V>,
    stale: u64,
    /// The bypass decision: whether the microflow tier is bypassed, probes and hits in the
    /// current window, lookups until the next sampled probe, and lookups that skipped it.
    bypass: bool,
    window_probes: u32,
    window_hits: u32,
    until_sample: u32,
    bypassed: u64,
}

impl<V> FlowCache<V> {
    /// Both tiers; `microflow: None` runs the classifier alone. The key widths must agree.
    pub fn new(
        classifier: &ClassifierConfig,
        microflow: Option<&MicroflowConfig>,
    ) -> Result<Self, ConfigError> {
        if microflow.is_some_and(|m| m.key_words != classifier.key_words) {
            return Err(ConfigError::BadWidth(classifier.key_words));
        }
        Ok(FlowCache {
            hasher: WordHash::from_seed(classifier.seed.map(|s| s ^ 0x5eed)),
            unhashed: 0..0,
            microflow: microflow.map(Microflow::new).transpose()?,
            signatures: None,
            classifier: Classifier::new(classifier)?,
            stale: 0,
            bypass: false,
            window_probes: 0,
            window_hits: 0,
            until_sample: 0,
            bypassed: 0,
        })
    }

    /// Adds a signature cache of `entries` entries (0: none) between the microflow cache and
    /// the classifier.
    pub fn with_signatures(mut self, entries: usize) -> Self {
        self.signatures = (entries > 0).then(|| SignatureCache::new(entries));
        self
    }

    /// The hash the microflow tier uses for `key`, for callers that compute it early (e.g.
    /// to prefetch).
    #[inline]
    pub fn hash(&self, key: &[u64]) -> u64 {
        match self.unhashed.is_empty() {
            true => self.hasher.hash(key),
            false => self.hasher.hash_excluding(key, self.unhashed.clone()),
        }
    }

    /// Makes the lookup hash read key words `words` as 0: words that are a function of the
    /// others (the datapath's hash keys), which the hash then need not wait for. Both the
    /// microflow tier and the signature cache verify what the hash finds against the whole
    /// key, so the hash only has to spread keys, not tell them apart.
    pub fn exclude_from_hash(&mut self, words: std::ops::Range<usize>) {
        self.unhashed = words;
    }

    /// The seed of [`FlowCache::hash`] ([`WordHash`]), for code that computes it itself.
    pub fn hash_seed(&self) -> u64 {
        self.hasher.seed()
    }

    /// Looks `key` up in both tiers. Never allocates.
    #[inline]
    pub fn lookup(&mut self, key: &[u64]) -> Option<(MegaflowId, &V, Tier)> {
        let hash = self.hash(key);
        self.lookup_hashed(key, hash)
    }

    /// [`FlowCache::lookup`] with the key's [`FlowCache::hash`] already computed.
    #[inline(always)]
    pub fn lookup_hashed(&mut self, key: &[u64], hash: u64) -> Option<(MegaflowId, &V, Tier)> {
        let probe = self.microflow.is_some() && self.probe_microflow();
        // The key to offer the microflow tier: not there (a probe missed it), or there with a
        // stale id (to update); not offered without a probe (bypassed).
        let mut offer = None;
        if probe {
            let cached = self.microflow.as_mut().and_then(|m| m.lookup(key, hash));
            self.count_probe(cached.is_some());
            match cached {
                Some(id) if self.classifier.credit(id) => {
                    return self.classifier.get(id).map(|v| (id, v, Tier::Microflow));
                }
                Some(_) => {
                    self.stale = self.stale.wrapping_add(1);
                    offer = Some(false);
                }
                None => offer = Some(true),
            }
        }
        if let Some(s) = self.signatures.as_mut()
            && let Some(slot) = s.get(hash)
            && let Some(id) = self.classifier.slot_matches(slot, key)
        {
            s.count_hit();
            offer_microflow(self.microflow.as_mut(), offer, key, hash, id);
            return self.classifier.hit(id).map(|v| (id, v, Tier::Megaflow));
        }
        self.search(key, hash, offer)
    }

    /// The lookup when neither the microflow tier nor the signature cache's hint served it:
    /// the classifier's search. Out of line, so that the hits run a smaller function.
    #[inline(never)]
    fn search(
        &mut self,
        key: &[u64],
        hash: u64,
        offer: Option<bool>,
    ) -> Option<(MegaflowId, &V, Tier)> {
        let (id, value) = self.classifier.lookup(key)?;
        offer_microflow(self.microflow.as_mut(), offer, key, hash, id);
        if let Some(s) = self.signatures.as_mut() {
            s.insert(hash, id.slot());
        }
        Some((id, value, Tier::Megaflow))
    }

    /// Prefetches what a lookup of a key hashing to `hash` reads first (its microflow set)
    /// with `fetch`.
    #[inline]
    pub fn prefetch(&self, hash: u64, fetch: impl Fn(*const u8) + Copy) {
        if let Some(m) = self.microflow.as_ref().filter(|_| !self.bypass) {
            m.prefetch(hash, fetch);
        }
        if let Some(s) = &self.signatures {
            s.prefetch(hash, fetch);
        }
    }

    /// Whether this lookup probes the microflow tier (see the module doc).
    #[inline]
    fn probe_microflow(&mut self) -> bool {
        if !self.bypass {
            return true;
        }
        if self.until_sample == 0 {
            self.until_sample = SAMPLE - 1;
            return true;
        }
        self.until_sample -= 1;
        self.bypassed = self.bypassed.wrapping_add(1);
        false
    }

    /// Counts a microflow probe; closes the window (and decides the bypass) when it is full.
    #[inline]
    fn count_probe(&mut self, hit: bool) {
        self.window_probes += 1;
        self.window_hits += u32::from(hit);
        if self.window_probes >= WINDOW {
            self.bypass = self.signatures.is_some()
                && u64::from(self.window_hits) * 100
                    < u64::from(self.window_probes) * u64::from(MIN_HIT_RATE);
            self.window_probes = 0;
            self.window_hits = 0;
        }
    }

    /// Whether the microflow tier is bypassed now (see the module doc).
    pub fn microflow_bypassed(&self) -> bool {
        self.bypass
    }

    /// Lookups that skipped the microflow tier because it was bypassed.
    pub fn bypassed_lookups(&self) -> u64 {
        self.bypassed
    }

    /// The signature cache, if there is one.
    pub fn signatures(&self) -> Option<&SignatureCache> {
        self.signatures.as_ref()
    }

    /// Installs a megaflow computed by the slow path for the packet whose key is `key`, and
    /// offers `key` to the microflow cache.
    pub fn install(
        &mut self,
        mask: &[u64],
        key: &[u64],
        value: V,
        tags: &[u32],
    ) -> Result<Inserted<V>, InsertError> {
        let inserted = self.classifier.insert(mask, key, value, tags)?;
        let hash = self.hash(key);
        if let Some(m) = self.microflow.as_mut() {
            m.insert(key, hash, inserted.id);
        }
        Ok(inserted)
    }

    /// The classifier, for removal, invalidation and statistics.
    pub fn classifier(&self) -> &Classifier<V> {
        &self.classifier
    }

    /// The classifier, mutably. Removing megaflows needs no microflow flush: stale ids are
    /// detected on use.
    pub fn classifier_mut(&mut self) -> &mut Classifier<V> {
        &mut self.classifier
    }

    /// The microflow tier, if enabled.
    pub fn microflow(&self) -> Option<&Microflow> {
        self.microflow.as_ref()
    }

    /// The microflow tier, mutably, if enabled.
    pub fn microflow_mut(&mut self) -> Option<&mut Microflow> {
        self.microflow.as_mut()
    }

    /// Microflow hits whose megaflow was gone (counted as misses of that tier).
    pub fn stale_hits(&self) -> u64 {
        self.stale
    }

    /// Bytes used by both tiers.
    pub fn memory_bytes(&self) -> usize {
        self.classifier.memory_bytes()
            + self.microflow.as_ref().map_or(0, Microflow::memory_bytes)
            + self
                .signatures
                .as_ref()
                .map_or(0, SignatureCache::memory_bytes)
    }
}
