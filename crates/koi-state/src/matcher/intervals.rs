//! An index of a one-field range table whose ranges are pairwise disjoint (a consistent-hash
//! ring's arcs, written as ranges): the ranges by lower bound, so that a lookup is a search
//! of the bound at or below the key instead of a scan of every entry.
//!
//! With disjoint ranges at most one entry holds a key, so priorities do not matter, and the
//! megaflow mask of a lookup needs only the bits that keep the key in the range it hit (or in
//! the gap between ranges it fell into): [`range_mask128`]'s aligned block around the key.
//! Every key with those bits lies in that range (or gap), hence in no other, and looks up as
//! the key did. The mask is never wider than the scan's, which also ORs in a witness of every
//! entry scanned before the hit.

use super::scan::{Test, range_mask128};
use koi_ir::Bits;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};

/// The ranges by lower bound: `lo -> (hi, entry index)`.
#[derive(Clone, Debug, Default)]
pub(super) struct Intervals {
    by_lo: BTreeMap<u128, (u128, u32)>,
}

impl Intervals {
    /// Adds entry `index` whose one test is `test`; false when it is not a range or overlaps
    /// one already held (the index then no longer answers for the table).
    pub(super) fn insert(&mut self, test: Test, index: u32) -> bool {
        let Test::Range { lo, hi, .. } = test else {
            return false;
        };
        let below = self.by_lo.range(..=lo).next_back();
        let above = self.by_lo.range((Excluded(lo), Unbounded)).next();
        if below.is_some_and(|(_, &(h, _))| h >= lo) || above.is_some_and(|(&l, _)| l <= hi) {
            return false;
        }
        self.by_lo.insert(lo, (hi, index));
        true
    }

    /// Removes entry `index` if it is the range starting at `test`'s lower bound.
    pub(super) fn remove(&mut self, test: Test, index: u32) {
        if let Test::Range { lo, .. } = test
            && self.by_lo.get(&lo).is_some_and(|&(_, i)| i == index)
        {
            self.by_lo.remove(&lo);
        }
    }

    /// The entry holding key `k` (of a field whose bits are `km`), and the bits that keep
    /// `k` in its range or in its gap into `masks`.
    pub(super) fn lookup(
        &self,
        key: &Bits,
        km: u128,
        masks: Option<&mut Vec<Bits>>,
    ) -> Option<u32> {
        let k = key.low_u128() & km;
        let below = self.by_lo.range(..=k).next_back();
        let (hit, lo, hi) = match below {
            Some((&lo, &(hi, i))) if k <= hi => (Some(i), lo, hi),
            _ => {
                // The gap between the range below (if any) and the one above.
                let lo = below.map_or(0, |(_, &(h, _))| h + 1);
                let hi = self
                    .by_lo
                    .range((Excluded(k), Unbounded))
                    .next()
                    .map_or(km, |(&l, _)| l - 1);
                (None, lo, hi)
            }
        };
        if let Some(m) = masks {
            m.clear();
            m.push(Bits::from_u128(key.width(), range_mask128(lo, hi, k, km)));
        }
        hit
    }
}
