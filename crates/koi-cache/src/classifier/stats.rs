//! Classifier statistics and the records of megaflows leaving the classifier.

use crate::key::MegaflowId;

/// Counters of a [`Classifier`](crate::Classifier), cumulative since construction or
/// [`Classifier::reset_stats`](crate::Classifier::reset_stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassifierStats {
    /// Calls to `lookup`.
    pub lookups: u64,
    /// Lookups that found a megaflow.
    pub hits: u64,
    /// Lookups that found none.
    pub misses: u64,
    /// Subtables visited by lookups (hash computed at least for the first stage).
    pub subtables_probed: u64,
    /// Subtable visits cut short by an absent stage-prefix hash.
    pub stage_skips: u64,
    /// Megaflows added (not counting replacements).
    pub inserts: u64,
    /// Inserts whose masked key was present: value and tags replaced in place.
    pub replacements: u64,
    /// Megaflows removed by `remove`, `remove_tagged` or `clear`.
    pub removals: u64,
    /// Megaflows evicted to make room under the limit.
    pub evictions: u64,
    /// Evictions of megaflows still on probation (never hit since their insert); the others
    /// evicted promoted megaflows that a whole turn of the clock hand had not seen hit.
    pub probation_evictions: u64,
    /// Subtable re-rankings.
    pub resorts: u64,
}

impl ClassifierStats {
    /// Average number of subtables visited per lookup (0 without lookups).
    pub fn avg_subtables_per_lookup(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            self.subtables_probed as f64 / self.lookups as f64
        }
    }

    /// Fraction of lookups that hit (0 without lookups).
    pub fn hit_rate(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            self.hits as f64 / self.lookups as f64
        }
    }
}

/// A megaflow that left the classifier (removed, invalidated or evicted), handed back so that
/// the datapath can credit its statistics and release what its value holds.
#[derive(Debug, PartialEq, Eq)]
pub struct Removed<V> {
    /// Its id, now stale.
    pub id: MegaflowId,
    /// Its value.
    pub value: V,
    /// Packets it served: classifier hits plus [`Classifier::hit`](crate::Classifier::hit)
    /// credits (microflow hits).
    pub hits: u64,
}

/// The result of a successful [`Classifier::insert`](crate::Classifier::insert).
#[derive(Debug, PartialEq, Eq)]
pub struct Inserted<V> {
    /// The megaflow's id (the existing id if its masked key was present).
    pub id: MegaflowId,
    /// The value replaced, if the masked key was present.
    pub replaced: Option<V>,
    /// The megaflow evicted to make room, if the classifier was full.
    pub evicted: Option<Removed<V>>,
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The classifier is at its limit and eviction is off (or the limit is 0).
    Full,
    /// The mask or key does not have the classifier's width.
    WidthMismatch {
        /// The classifier's key width in words.
        expected: usize,
        /// The mask's width.
        mask: usize,
        /// The key's width.
        key: usize,
    },
}

impl core::fmt::Display for InsertError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            InsertError::Full => f.write_str("megaflow classifier full"),
            InsertError::WidthMismatch {
                expected,
                mask,
                key,
            } => write!(
                f,
                "flow-key width mismatch: classifier {expected} words, mask {mask}, key {key}"
            ),
        }
    }
}

impl std::error::Error for InsertError {}

/// Where a [`Classifier`](crate::Classifier)'s memory goes, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUse {
    /// The megaflow slots (value, counters, tag positions) and the free list: grows to the
    /// high-water mark of live megaflows, never past the limit.
    pub slots: usize,
    /// Subtables: masked keys, hash tables, stage filters, and the subtable directory;
    /// follows the number of live megaflows up and down.
    pub subtables: usize,
    /// The tag → megaflows index.
    pub tag_index: usize,
    /// The classifier struct itself.
    pub fixed: usize,
}

impl MemoryUse {
    /// The sum of the parts.
    pub fn total(&self) -> usize {
        self.slots + self.subtables + self.tag_index + self.fixed
    }
}
