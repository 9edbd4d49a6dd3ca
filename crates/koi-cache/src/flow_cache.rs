//! The two cache tiers together, as one poll thread's datapath uses them.
//!
//! [`FlowCache::lookup`] hashes the key, tries the microflow cache, verifies its hit against
//! the classifier (a stale id is a miss), falls back to the classifier and, on a megaflow hit,
//! offers the key to the microflow cache (probabilistically). A miss is the caller's upcall:
//! it runs the slow path and calls [`FlowCache::install`]. Everything here is per thread
//! (`&mut self`), like OVS's per-PMD EMC and dpcls.

use crate::classifier::{Classifier, ClassifierConfig, InsertError, Inserted};
use crate::key::{MegaflowId, WordHash};
use crate::microflow::{Microflow, MicroflowConfig};
use crate::stages::ConfigError;

/// Which tier served a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// The microflow cache (verified against the classifier).
    Microflow,
    /// The megaflow classifier.
    Megaflow,
}

/// A microflow cache in front of a megaflow classifier.
#[derive(Debug)]
pub struct FlowCache<V> {
    hasher: WordHash,
    microflow: Option<Microflow>,
    classifier: Classifier<V>,
    stale: u64,
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
            microflow: microflow.map(Microflow::new).transpose()?,
            classifier: Classifier::new(classifier)?,
            stale: 0,
        })
    }

    /// The hash the microflow tier uses for `key`, for callers that compute it early (e.g.
    /// to prefetch).
    #[inline]
    pub fn hash(&self, key: &[u64]) -> u64 {
        self.hasher.hash(key)
    }

    /// The seed of [`FlowCache::hash`] ([`WordHash`]), for code that computes it itself.
    pub fn hash_seed(&self) -> u64 {
        self.hasher.seed()
    }

    /// Looks `key` up in both tiers. Never allocates.
    #[inline]
    pub fn lookup(&mut self, key: &[u64]) -> Option<(MegaflowId, &V, Tier)> {
        let hash = self.hasher.hash(key);
        self.lookup_hashed(key, hash)
    }

    /// [`FlowCache::lookup`] with the key's [`FlowCache::hash`] already computed.
    #[inline]
    pub fn lookup_hashed(&mut self, key: &[u64], hash: u64) -> Option<(MegaflowId, &V, Tier)> {
        let cached = self.microflow.as_mut().and_then(|m| m.lookup(key, hash));
        if let Some(id) = cached {
            if self.classifier.get(id).is_some() {
                // Borrowck: the value is returned from the branch that found it.
                return self.classifier.hit(id).map(|v| (id, v, Tier::Microflow));
            }
            self.stale = self.stale.wrapping_add(1);
        }
        let (id, value) = self.classifier.lookup(key)?;
        if let Some(m) = self.microflow.as_mut() {
            m.insert(key, hash, id);
        }
        Some((id, value, Tier::Megaflow))
    }

    /// Prefetches what a lookup of a key hashing to `hash` reads first (its microflow set)
    /// with `fetch`.
    #[inline]
    pub fn prefetch(&self, hash: u64, fetch: fn(*const u8)) {
        if let Some(m) = &self.microflow {
            m.prefetch(hash, fetch);
        }
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
        if let Some(m) = self.microflow.as_mut() {
            m.insert(key, self.hasher.hash(key), inserted.id);
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
        self.classifier.memory_bytes() + self.microflow.as_ref().map_or(0, Microflow::memory_bytes)
    }
}
