//! Lookup structures of one table, chosen by its [`LookupKind`]: a hash map for exact tables,
//! a hash map per prefix length (longest first) for LPM tables, and a priority-ordered list
//! scanned in order for ternary and range tables (highest priority first; among equal
//! priorities the lowest handle index, which is the entry BMv2's entry list meets first),
//! searched instead for a one-field table of disjoint ranges (`intervals`).
//!
//! The matcher stores entry indices; the patterns live in the table's entries.

use crate::schema::{LookupKind, pattern_mask};
use koi_ir::{Bits, Pattern};
use std::cmp::Reverse;
use std::collections::BTreeMap;

mod intervals;
mod prefixes;
mod scan;
pub use prefixes::SortedPrefixes;
#[cfg(test)]
use prefixes::Trie;
pub use scan::ScanList;
use scan::*;

/// Hash maps of keys: foldhash (fast, seeded per map), not SipHash; the keys are the table's
/// own and lookups are on the per-packet path.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// An LPM table's entries: per prefix length (longest first), the entries' keys (prefix
/// values masked) to their indices.
type ByLen = BTreeMap<Reverse<u32>, HashMap<Vec<Bits>, u32>>;

/// The lookup structure.
#[derive(Clone, Debug)]
pub enum Matcher {
    Exact {
        map: HashMap<Vec<Bits>, u32>,
        /// The entries' whole keys in order, for the megaflow masks of misses with too many
        /// entries to compare one by one.
        sorted: SortedPrefixes,
    },
    Lpm {
        /// Position of the LPM field among the match fields.
        field: usize,
        by_len: ByLen,
        /// The entries' prefixes of the LPM field, for the megaflow masks of lookups with
        /// too many longer entries to compare one by one.
        prefixes: SortedPrefixes,
    },
    /// Entries in lookup order (priority descending, then index ascending), with their
    /// patterns compiled for scanning.
    Scan(ScanList),
}

/// The exact-match key of an entry's canonical patterns (prefix values are already masked).
fn key_of(patterns: &[Pattern]) -> Vec<Bits> {
    patterns
        .iter()
        .map(|p| match p {
            Pattern::Exact(v) | Pattern::Prefix { value: v, .. } => v.clone(),
            Pattern::Mask { value, .. } => value.clone(),
            Pattern::Range { lo, .. } => lo.clone(),
            Pattern::Any => Bits::zero(0),
        })
        .collect()
}

fn prefix_len(p: Option<&Pattern>) -> u32 {
    match p {
        Some(Pattern::Prefix { len, .. }) => *len,
        _ => 0,
    }
}

impl Matcher {
    pub fn new(kind: LookupKind, lpm_field: Option<usize>) -> Matcher {
        match (kind, lpm_field) {
            (LookupKind::Lpm, Some(field)) => Matcher::Lpm {
                field,
                by_len: BTreeMap::new(),
                prefixes: SortedPrefixes::default(),
            },
            (LookupKind::Exact | LookupKind::Lpm, _) => Matcher::Exact {
                map: HashMap::default(),
                sorted: SortedPrefixes::default(),
            },
            (LookupKind::Ternary | LookupKind::Range, _) => Matcher::Scan(ScanList::default()),
        }
    }

    /// A matcher of `kind` for fields of `widths` (the table's match fields, in order).
    pub fn with_widths(kind: LookupKind, lpm_field: Option<usize>, widths: &[u32]) -> Matcher {
        match Matcher::new(kind, lpm_field) {
            Matcher::Scan(_) => Matcher::Scan(ScanList::new(widths)),
            m => m,
        }
    }

    /// The index of an entry with the same key (and, for priority tables, the same
    /// priority), using `patterns_of` to read the patterns of a stored entry.
    pub fn find_duplicate<'a>(
        &self,
        patterns: &[Pattern],
        priority: u32,
        patterns_of: impl Fn(u32) -> Option<&'a [Pattern]>,
    ) -> Option<u32> {
        match self {
            Matcher::Exact { map, .. } => map.get(&key_of(patterns)).copied(),
            Matcher::Lpm { field, by_len, .. } => {
                let len = prefix_len(patterns.get(*field));
                by_len.get(&Reverse(len))?.get(&key_of(patterns)).copied()
            }
            Matcher::Scan(list) => list
                .order
                .iter()
                .filter(|(p, _)| *p == priority)
                .map(|(_, i)| *i)
                .find(|i| patterns_of(*i) == Some(patterns)),
        }
    }

    pub fn insert(&mut self, patterns: &[Pattern], priority: u32, index: u32) {
        match self {
            Matcher::Exact { map, sorted } => {
                use std::collections::hash_map::Entry;
                match map.entry(key_of(patterns)) {
                    Entry::Occupied(mut e) => {
                        e.insert(index);
                    }
                    Entry::Vacant(e) => {
                        // The whole key, as a prefix of its full width.
                        sorted.add(e.key(), u32::MAX);
                        e.insert(index);
                    }
                }
            }
            Matcher::Lpm {
                field,
                by_len,
                prefixes,
            } => {
                let len = prefix_len(patterns.get(*field));
                let key = key_of(patterns);
                let prefix = key.get(*field).cloned();
                let new = by_len
                    .entry(Reverse(len))
                    .or_default()
                    .insert(key, index)
                    .is_none();
                if let (true, Some(v)) = (new, prefix) {
                    prefixes.add(std::slice::from_ref(&v), len);
                }
            }
            Matcher::Scan(list) => list.insert(patterns, priority, index),
        }
    }

    pub fn remove(&mut self, patterns: &[Pattern], index: u32) {
        match self {
            Matcher::Exact { map, sorted } => {
                let key = key_of(patterns);
                if map.remove(&key).is_some() {
                    sorted.remove(&key, u32::MAX);
                }
            }
            Matcher::Lpm {
                field,
                by_len,
                prefixes,
            } => {
                let len = Reverse(prefix_len(patterns.get(*field)));
                if let Some(m) = by_len.get_mut(&len) {
                    let key = key_of(patterns);
                    if m.remove(&key).is_some()
                        && let Some(v) = key.get(*field)
                    {
                        prefixes.remove(std::slice::from_ref(v), len.0);
                    }
                    if m.is_empty() {
                        by_len.remove(&len);
                    }
                }
            }
            Matcher::Scan(list) => list.remove(patterns, index),
        }
    }

    pub fn clear(&mut self) {
        match self {
            Matcher::Exact { map, sorted } => {
                map.clear();
                *sorted = SortedPrefixes::default();
            }
            Matcher::Lpm {
                by_len, prefixes, ..
            } => {
                by_len.clear();
                *prefixes = SortedPrefixes::default();
            }
            Matcher::Scan(list) => list.clear(),
        }
    }

    /// The index of the entry `keys` hits. When `masks` is given, it receives per field the
    /// key bits the result depended on (for megaflow masks).
    pub fn lookup<'a>(
        &self,
        keys: &[Bits],
        patterns_of: impl Fn(u32) -> Option<&'a [Pattern]>,
        masks: Option<&mut Vec<Bits>>,
    ) -> Option<u32> {
        match self {
            Matcher::Exact { map, sorted } => {
                let hit = map.get(keys).copied();
                if let Some(masks) = masks {
                    // A hit depends on every key bit; a miss only on one bit per entry that
                    // tells the key from it (when there are few entries to compare, of at
                    // most 128 bits a field), else on the leading bits (fields in order) that
                    // part it from every entry's key.
                    masks.clear();
                    masks.extend(keys.iter().map(|k| Bits::ones(k.width())));
                    let mut witnessed = false;
                    if hit.is_none() && map.len() <= WITNESS_LIMIT {
                        let mut w: Vec<Bits> = keys.iter().map(|k| Bits::zero(k.width())).collect();
                        if map.keys().all(|e| add_witness(&mut w, keys, e, None)) {
                            *masks = w;
                            witnessed = true;
                        }
                    }
                    if hit.is_none()
                        && !witnessed
                        && let Some((bits, _)) = sorted.decided(keys)
                    {
                        let mut left = bits;
                        for (m, k) in masks.iter_mut().zip(keys) {
                            let n = left.min(k.width());
                            *m = Bits::prefix_mask(k.width(), n);
                            left -= n;
                        }
                    }
                }
                hit
            }
            Matcher::Lpm {
                field,
                by_len,
                prefixes,
            } => lookup_lpm(*field, by_len, prefixes, keys, masks),
            // (A one-field table of disjoint ranges: a search, not a scan.)
            Matcher::Scan(list) if list.compiled_for(keys) => match &list.intervals {
                Some(iv) => iv.lookup(&keys[0], low_mask(keys[0].width()), masks),
                None => lookup_scan_compiled(list, keys, masks),
            },
            Matcher::Scan(list)
                if keys.len() <= NARROW_FIELDS && keys.iter().all(|k| k.width() <= 128) =>
            {
                lookup_scan_narrow(&list.order, keys, patterns_of, masks)
            }
            Matcher::Scan(list) => lookup_scan(&list.order, keys, patterns_of, masks),
        }
    }
}

/// At most this many entries are compared one by one for the witness bits of the entries a
/// lookup did not hit; beyond, the mask is the whole key (exact) or the longest prefix (LPM).
const WITNESS_LIMIT: usize = 64;

/// ORs into `masks` one bit where `keys` differs from entry `entry` (its values, prefix
/// values masked), comparing the LPM field `lpm.0` on its first `lpm.1` bits only: every key
/// with that bit misses the entry too. False if there is none to give (a field wider than
/// 128 bits, or no difference).
fn add_witness(
    masks: &mut [Bits],
    keys: &[Bits],
    entry: &[Bits],
    lpm: Option<(usize, u32)>,
) -> bool {
    for (j, (k, e)) in keys.iter().zip(entry).enumerate() {
        let w = k.width();
        if w > 128 {
            return false;
        }
        let care = match lpm {
            Some((f, len)) if f == j => low_mask(w) & !low_mask(w - len.min(w)),
            _ => low_mask(w),
        };
        let d = (k.low_u128() ^ e.low_u128()) & care;
        if d != 0 {
            let mut bit = Bits::zero(w);
            bit.set_bit(127 - d.leading_zeros(), true);
            if let Some(m) = masks.get_mut(j) {
                *m = m.or(&bit);
            }
            return true;
        }
    }
    false
}

fn lookup_lpm(
    field: usize,
    by_len: &ByLen,
    prefixes: &SortedPrefixes,
    keys: &[Bits],
    masks: Option<&mut Vec<Bits>>,
) -> Option<u32> {
    match keys {
        [key] if field == 0 && key.width() <= 128 => lookup_lpm1(by_len, prefixes, key, masks),
        _ => lookup_lpm_fields(field, by_len, prefixes, keys, masks),
    }
}

/// [`lookup_lpm`] for any key.
fn lookup_lpm_fields(
    field: usize,
    by_len: &ByLen,
    prefixes: &SortedPrefixes,
    keys: &[Bits],
    masks: Option<&mut Vec<Bits>>,
) -> Option<u32> {
    let original = keys.get(field)?;
    let mut probe = keys.to_vec();
    let mut found = None;
    for (Reverse(len), m) in by_len {
        probe[field] = original.and(&Bits::prefix_mask(original.width(), *len));
        if let Some(i) = m.get(&probe) {
            found = Some((*len, *i));
            break;
        }
    }
    if let Some(masks) = masks {
        // The hit depends on its prefix and the other fields; each longer entry (all of them
        // for a miss) only on one bit that tells the key from it, when there are few.
        let longer: usize = by_len
            .iter()
            .take_while(|(Reverse(len), _)| found.is_none_or(|(l, _)| *len > l))
            .map(|(_, m)| m.len())
            .sum();
        let mut w: Vec<Bits> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| match (found, i == field) {
                (None, _) => Bits::zero(k.width()),
                (Some((l, _)), true) => Bits::prefix_mask(k.width(), l),
                (Some(_), false) => Bits::ones(k.width()),
            })
            .collect();
        let precise = longer <= WITNESS_LIMIT
            && by_len
                .iter()
                .take_while(|(Reverse(len), _)| found.is_none_or(|(l, _)| *len > l))
                .all(|(Reverse(len), m)| {
                    m.keys()
                        .all(|e| add_witness(&mut w, keys, e, Some((field, *len))))
                });
        if !precise {
            // Too many longer entries to compare (or fields too wide): the key's path in the
            // trie of prefixes tells how many leading bits decide which entries its LPM field
            // can match; the other fields matter if some entry lies on that path.
            let decided = prefixes.decided(std::slice::from_ref(original));
            let longest = by_len.keys().next().map_or(0, |r| r.0);
            let (bits, on_path) = decided.unwrap_or((longest, true));
            let bits = bits.max(found.map_or(0, |(l, _)| l));
            w = keys
                .iter()
                .enumerate()
                .map(|(i, k)| match i == field {
                    true => Bits::prefix_mask(k.width(), bits),
                    false if on_path || found.is_some() => Bits::ones(k.width()),
                    false => Bits::zero(k.width()),
                })
                .collect();
        }
        *masks = w;
    }
    found.map(|(_, i)| i)
}

/// [`lookup_lpm`] for a key of one field of at most 128 bits: the same entry and mask,
/// computed on the key's `u128` value.
fn lookup_lpm1(
    by_len: &ByLen,
    prefixes: &SortedPrefixes,
    key: &Bits,
    masks: Option<&mut Vec<Bits>>,
) -> Option<u32> {
    let w = key.width();
    let k = key.low_u128() & low_mask(w);
    let prefix = |len: u32| low_mask(w) & !low_mask(w - len.min(w));
    let mut found = None;
    for (Reverse(len), m) in by_len {
        let probe = Bits::from_u128(w, k & prefix(*len));
        if let Some(i) = m.get(std::slice::from_ref(&probe)) {
            found = Some((*len, *i));
            break;
        }
    }
    if let Some(masks) = masks {
        // As in `lookup_lpm`: the hit's prefix, and one bit that tells the key from each
        // longer entry (all of them for a miss) when there are few, else the key's path in
        // the trie of prefixes.
        let longer = |len: u32| found.is_none_or(|(l, _)| len > l);
        let count: usize = by_len
            .iter()
            .take_while(|(Reverse(len), _)| longer(*len))
            .map(|(_, m)| m.len())
            .sum();
        let mut mask = found.map_or(0, |(l, _)| prefix(l));
        let mut precise = count <= WITNESS_LIMIT;
        if precise {
            'entries: for (Reverse(len), m) in by_len.iter().take_while(|(r, _)| longer(r.0)) {
                for e in m.keys() {
                    let d = (k ^ e.first().map_or(0, Bits::low_u128)) & prefix(*len);
                    if d == 0 {
                        precise = false;
                        break 'entries;
                    }
                    mask |= 1u128 << (127 - d.leading_zeros());
                }
            }
        }
        if !precise {
            let decided = prefixes.decided(std::slice::from_ref(key));
            let longest = by_len.keys().next().map_or(0, |r| r.0);
            let bits = decided.map_or(longest, |(b, _)| b);
            mask = prefix(bits.max(found.map_or(0, |(l, _)| l)));
        }
        masks.clear();
        masks.push(Bits::from_u128(w, mask));
    }
    found.map(|(_, i)| i)
}

/// The low `width` bits set (`width <= 128`).
fn low_mask(width: u32) -> u128 {
    match width {
        0 => 0,
        w if w >= 128 => u128::MAX,
        w => (1u128 << w) - 1,
    }
}

#[cfg(test)]
mod tests;
