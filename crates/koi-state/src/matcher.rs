//! Lookup structures of one table, chosen by its [`LookupKind`]: a hash map for exact tables,
//! a hash map per prefix length (longest first) for LPM tables, and a priority-ordered list
//! scanned in order for ternary and range tables (highest priority first; among equal
//! priorities the lowest handle index, which is the entry BMv2's entry list meets first).
//!
//! The matcher stores entry indices; the patterns live in the table's entries.

use crate::schema::{LookupKind, pattern_mask};
use koi_ir::{Bits, Pattern};
use std::cmp::Reverse;
use std::collections::BTreeMap;

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

/// A ternary or range table's entries in lookup order. When the table's fields are at most
/// [`NARROW_FIELDS`] of at most 128 bits each, each entry's patterns are also kept as `u128`
/// tests side by side (one entry's after another's), so that a lookup scans one array
/// instead of reading every entry's patterns.
#[derive(Clone, Debug, Default)]
pub struct ScanList {
    /// `(priority, index)` sorted by priority descending, then index ascending.
    order: Vec<(u32, u32)>,
    /// The fields' widths when the tests are kept (`None`: they are not).
    widths: Option<Vec<u32>>,
    /// `widths.len()` tests per entry of `order`, in its order.
    tests: Vec<Test>,
    /// Per entry of `order`: whether it has a pattern for every field (else it never hits).
    complete: Vec<bool>,
}

/// One pattern as a test of a key field's `u128` value, at the field's width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Test {
    /// `(k ^ v) & m == 0`: exact, mask, prefix and don't-care patterns.
    Mask { v: u128, m: u128 },
    /// `lo <= k <= hi`; `full`: every value of the field is in the range.
    Range { lo: u128, hi: u128, full: bool },
}

impl Test {
    /// Pattern `p` for a field of `w <= 128` bits, as [`matches128`] reads it.
    fn of(p: &Pattern, w: u32) -> Test {
        let km = low_mask(w);
        let low = |b: &Bits| b.low_u128() & km;
        match p {
            Pattern::Exact(v) => Test::Mask { v: low(v), m: km },
            Pattern::Mask { value, mask } => Test::Mask {
                v: low(value),
                m: low(mask),
            },
            Pattern::Prefix { value, len } => Test::Mask {
                v: low(value),
                m: km & !low_mask(w - (*len).min(w)),
            },
            Pattern::Range { lo, hi } => Test::Range {
                lo: low(lo),
                hi: low(hi),
                full: pattern_mask128(p, w) == 0,
            },
            Pattern::Any => Test::Mask { v: 0, m: 0 },
        }
    }

    #[inline]
    fn matches(self, k: u128) -> bool {
        match self {
            Test::Mask { v, m } => (k ^ v) & m == 0,
            Test::Range { lo, hi, .. } => lo <= k && k <= hi,
        }
    }

    /// [`mismatch128`]'s bits, else [`pattern_mask128`]'s mask, for a key `k` that fails.
    #[inline]
    fn witness(self, k: u128, km: u128) -> u128 {
        match self {
            Test::Mask { v, m } => {
                let d = (k ^ v) & m;
                if d != 0 {
                    1u128 << (127 - d.leading_zeros())
                } else {
                    m
                }
            }
            Test::Range { full: true, .. } => 0,
            Test::Range { lo, hi, .. } => range_mask128(lo, hi, k, km),
        }
    }

    /// [`hit_mask128`], for a key `k` that passes.
    #[inline]
    fn mask(self, k: u128, km: u128) -> u128 {
        match self {
            Test::Mask { m, .. } => m,
            Test::Range { full: true, .. } => 0,
            Test::Range { lo, hi, .. } => range_mask128(lo, hi, k, km),
        }
    }
}

impl ScanList {
    fn new(widths: &[u32]) -> ScanList {
        // (A scan table has a field; a list of no field keeps no tests.)
        let narrow =
            (1..=NARROW_FIELDS).contains(&widths.len()) && widths.iter().all(|&w| w <= 128);
        ScanList {
            widths: narrow.then(|| widths.to_vec()),
            ..ScanList::default()
        }
    }

    fn insert(&mut self, patterns: &[Pattern], priority: u32, index: u32) {
        let at = self
            .order
            .partition_point(|&(p, i)| (Reverse(p), i) < (Reverse(priority), index));
        self.order.insert(at, (priority, index));
        if let Some(widths) = &self.widths {
            let n = widths.len();
            // Fields without a pattern test nothing (the entry never hits: `complete`).
            let tests = widths.iter().enumerate().map(|(j, &w)| {
                patterns
                    .get(j)
                    .map_or(Test::Mask { v: 0, m: 0 }, |p| Test::of(p, w))
            });
            self.tests.splice(at * n..at * n, tests);
            self.complete.insert(at, patterns.len() == n);
        }
    }

    fn remove(&mut self, index: u32) {
        while let Some(at) = self.order.iter().position(|&(_, i)| i == index) {
            self.order.remove(at);
            if let Some(widths) = &self.widths {
                let n = widths.len();
                self.tests.drain(at * n..at * n + n);
                self.complete.remove(at);
            }
        }
    }

    fn clear(&mut self) {
        self.order.clear();
        self.tests.clear();
        self.complete.clear();
    }

    /// Whether the kept tests answer a lookup of `keys` (fields of the table's widths).
    fn compiled_for(&self, keys: &[Bits]) -> bool {
        self.widths.as_ref().is_some_and(|w| {
            w.len() == keys.len() && w.iter().zip(keys).all(|(w, k)| *w == k.width())
        })
    }
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
            Matcher::Scan(list) => list.remove(index),
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
            Matcher::Scan(list) if list.compiled_for(keys) => {
                lookup_scan_compiled(list, keys, masks)
            }
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

/// `fields` side by side, the first the most significant bit first, in whole bytes (the last
/// padded with zeros), and their width in bits.
fn pack(fields: &[Bits]) -> (Box<[u8]>, u32) {
    let w: u32 = fields.iter().map(Bits::width).sum();
    let mut out = vec![0u8; w.div_ceil(8) as usize];
    let mut at = 0u32;
    for f in fields {
        for i in (0..f.width()).rev() {
            if f.bit(i) {
                out[(at / 8) as usize] |= 0x80 >> (at % 8);
            }
            at += 1;
        }
    }
    (out.into_boxed_slice(), w)
}

/// How many leading bits `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> u32 {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => 8 * i as u32 + (a[i] ^ b[i]).leading_zeros(),
        None => 8 * a.len().min(b.len()) as u32,
    }
}

/// Prefixes, per length, in order (values packed by [`pack`], with how many entries have
/// each): which leading bits of a key decide the entries it can match, as a binary trie of the
/// prefixes tells (OVS's prefix tracking, `lib/classifier.c`; the trie is kept in the tests as
/// the reference). Along the key's path the trie goes as deep as the longest prefix that
/// shares its first bits with the key (up to its length), and the prefixes of one length
/// sharing the most with the key include one of its two neighbours in order. A copy of each
/// prefix instead of a node per bit, and any width. An LPM table keeps its LPM field's
/// prefixes; an exact table its whole keys (the fields side by side) as prefixes of their full
/// width, for which the answer is the leading bits up to the first where a missing key parts
/// from the entry sharing the most with it.
#[derive(Clone, Debug, Default)]
pub struct SortedPrefixes {
    by_len: BTreeMap<u32, BTreeMap<Box<[u8]>, u32>>,
    /// The values' width; `None` until the first prefix.
    width: Option<u32>,
    /// A prefix of another width came (not a table's): not used from then on.
    broken: bool,
}

impl SortedPrefixes {
    /// Adds prefix `value/len`, the value being `fields` side by side (bits past `len` zero).
    fn add(&mut self, fields: &[Bits], len: u32) {
        let (v, w) = pack(fields);
        if self.broken || self.width.is_some_and(|x| x != w) {
            self.broken = true;
            self.by_len.clear();
            return;
        }
        self.width = Some(w);
        *self
            .by_len
            .entry(len.min(w))
            .or_default()
            .entry(v)
            .or_insert(0) += 1;
    }

    /// Removes prefix `value/len` (added before).
    fn remove(&mut self, fields: &[Bits], len: u32) {
        let (v, w) = pack(fields);
        if self.broken || self.width != Some(w) {
            return;
        }
        let len = len.min(w);
        if let Some(set) = self.by_len.get_mut(&len) {
            if let Some(n) = set.get_mut(&v) {
                *n -= 1;
                if *n == 0 {
                    set.remove(&v);
                }
            }
            if set.is_empty() {
                self.by_len.remove(&len);
            }
        }
    }

    /// For a key's LPM field: how many leading bits decide which prefixes it matches (every
    /// key with the same leading bits matches the same ones, so no longer prefix than the
    /// key's matches either), and whether some prefix matches it (then the entry it hits
    /// depends on the other fields too). `None` before any prefix, or for keys of another
    /// width.
    fn decided(&self, key: &[Bits]) -> Option<(u32, bool)> {
        let (k, kw) = pack(key);
        let w = self.width.filter(|w| *w == kw && !self.broken)?;
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let k: &[u8] = &k;
        // Per length: how many of the key's first bits some prefix of that length shares
        // (at most the length).
        let shared: Vec<(u32, u32)> = self
            .by_len
            .iter()
            .map(|(&len, set)| {
                let below = set.range::<[u8], _>((Unbounded, Excluded(k))).next_back();
                let above = set.range::<[u8], _>((Included(k), Unbounded)).next();
                let most = [below, above]
                    .into_iter()
                    .flatten()
                    .map(|(e, _)| common_prefix(e, k))
                    .max()
                    .unwrap_or(0);
                (len, most.min(len))
            })
            .collect();
        // The depth the key's path reaches in the trie, whether a longer prefix goes on from
        // there the other way (its next bit then tells the key from it), and whether a prefix
        // ends on the path (matches the key).
        let depth = shared.iter().map(|&(_, c)| c).max().unwrap_or(0);
        let other = shared.iter().any(|&(len, c)| len > depth && c == depth);
        let on_path = shared.iter().any(|&(len, c)| c == len);
        let bits = if depth < w && other { depth + 1 } else { depth };
        Some((bits, on_path))
    }
}

/// A binary trie of an LPM field's prefixes, up to 128 bits wide, with per node the number of
/// prefixes through it and ending at it: the reference [`SortedPrefixes`] is tested against.
#[cfg(test)]
#[derive(Clone, Debug, Default)]
pub struct Trie {
    /// `nodes[0]` is the root (once there is one); a child link of 0 is no child.
    nodes: Vec<TrieNode>,
    free: Vec<u32>,
    /// The field's width; `None` until the first prefix.
    width: Option<u32>,
    /// A prefix wider than 128 bits (or of another width) came: the trie is not used.
    broken: bool,
}

#[cfg(test)]
#[derive(Clone, Copy, Debug, Default)]
struct TrieNode {
    child: [u32; 2],
    /// Prefixes through this node (ending here or below).
    refs: u32,
    /// Prefixes ending here.
    ends: u32,
}

#[cfg(test)]
impl Trie {
    fn bit(v: u128, width: u32, i: u32) -> usize {
        ((v >> (width - 1 - i)) & 1) as usize
    }

    /// Adds prefix `value/len` (the value's width is the field's).
    fn add(&mut self, value: &Bits, len: u32) {
        let w = value.width();
        if self.broken || w > 128 || self.width.is_some_and(|x| x != w) {
            self.disable();
            return;
        }
        if self.nodes.is_empty() {
            self.width = Some(w);
            self.nodes.push(TrieNode::default());
        }
        let v = value.low_u128();
        let mut n = 0usize;
        self.nodes[0].refs += 1;
        for i in 0..len.min(w) {
            let b = Self::bit(v, w, i);
            let c = match self.nodes[n].child[b] {
                0 => {
                    let id = self.alloc();
                    self.nodes[n].child[b] = id;
                    id
                }
                c => c,
            };
            n = c as usize;
            self.nodes[n].refs += 1;
        }
        self.nodes[n].ends += 1;
    }

    /// Keys the trie cannot hold came: it is not used from now on.
    fn disable(&mut self) {
        self.broken = true;
        self.nodes.clear();
        self.free.clear();
    }

    fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = TrieNode::default();
                i
            }
            None => {
                self.nodes.push(TrieNode::default());
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Removes prefix `value/len` (added before).
    fn remove(&mut self, value: &Bits, len: u32) {
        let Some(w) = self.width.filter(|w| *w == value.width() && !self.broken) else {
            return;
        };
        if self.nodes.is_empty() {
            return;
        }
        let v = value.low_u128();
        let mut n = 0usize;
        self.nodes[0].refs = self.nodes[0].refs.saturating_sub(1);
        for i in 0..len.min(w) {
            let b = Self::bit(v, w, i);
            let c = self.nodes[n].child[b] as usize;
            if c == 0 {
                return;
            }
            self.nodes[c].refs = self.nodes[c].refs.saturating_sub(1);
            if self.nodes[c].refs == 0 {
                // Nothing passes through `c` any more: unlink it and free its subtree.
                self.nodes[n].child[b] = 0;
                let mut stack = vec![c as u32];
                while let Some(x) = stack.pop() {
                    let node = self.nodes[x as usize];
                    stack.extend(node.child.iter().filter(|&&k| k != 0));
                    self.free.push(x);
                }
                return;
            }
            n = c;
        }
        self.nodes[n].ends = self.nodes[n].ends.saturating_sub(1);
    }

    /// For a key's LPM field: how many leading bits decide which prefixes it matches (every
    /// key with the same leading bits matches the same ones, so no longer prefix than the
    /// key's matches either), and whether some prefix lies on its path (then the entry it
    /// hits depends on the other fields too). `None` without a usable trie.
    fn decided(&self, key: &Bits) -> Option<(u32, bool)> {
        let w = self.width.filter(|w| *w == key.width() && !self.broken)?;
        let root = self.nodes.first()?;
        let v = key.low_u128();
        let mut n = 0usize;
        let mut on_path = root.ends > 0;
        for i in 0..w {
            let node = self.nodes[n];
            let b = Self::bit(v, w, i);
            match node.child[b] {
                // The path leaves the trie here: bit `i` tells the key from the prefixes
                // that go on the other way, if there are any.
                0 => return Some((if node.child[1 - b] == 0 { i } else { i + 1 }, on_path)),
                c => {
                    n = c as usize;
                    on_path |= self.nodes[n].ends > 0;
                }
            }
        }
        Some((w, on_path))
    }
}

fn lookup_scan<'a>(
    list: &[(u32, u32)],
    keys: &[Bits],
    patterns_of: impl Fn(u32) -> Option<&'a [Pattern]>,
    mut masks: Option<&mut Vec<Bits>>,
) -> Option<u32> {
    if let Some(m) = masks.as_deref_mut() {
        m.clear();
        m.extend(keys.iter().map(|k| Bits::zero(k.width())));
    }
    for &(_, i) in list {
        let Some(patterns) = patterns_of(i) else {
            continue;
        };
        let hit =
            patterns.len() == keys.len() && patterns.iter().zip(keys).all(|(p, k)| matches(p, k));
        if let Some(m) = masks.as_deref_mut() {
            // The entry hit: every bit it looks at matters (of a range, those that keep the key
            // in it). It missed: one bit where the key differs from it is enough (of a range,
            // the bits that keep the key out of it): every key with it misses it too; the most
            // significant such bit, so that keys differing only in low bits share the mask.
            let witness = match hit {
                true => None,
                false => patterns
                    .iter()
                    .zip(keys)
                    .enumerate()
                    .find(|(_, (p, k))| !matches(p, k))
                    .map(|(j, (p, k))| (j, mismatch_bit(p, k))),
            };
            for (j, ((acc, p), k)) in m.iter_mut().zip(patterns).zip(keys).enumerate() {
                match &witness {
                    // A one-bit witness in field `f`: nothing else of this entry matters.
                    Some((f, Some(bit))) if *f == j => *acc = acc.or(bit),
                    Some((_, Some(_))) => {}
                    // A miss without a one-bit witness (a range, a wide key): the field that
                    // missed, whole.
                    Some((f, None)) if *f == j => *acc = acc.or(&pattern_mask(p, k.width())),
                    Some((_, None)) => {}
                    None => *acc = acc.or(&hit_mask(p, k)),
                }
            }
        }
        if hit {
            return Some(i);
        }
    }
    None
}

/// Keys of at most this many fields, each at most 128 bits, are scanned in `u128`s.
const NARROW_FIELDS: usize = 16;

/// [`lookup_scan`] for keys of at most [`NARROW_FIELDS`] fields of at most 128 bits: the same
/// answer and masks, computed on the keys' `u128` values (no [`Bits`] per entry compared).
fn lookup_scan_narrow<'a>(
    list: &[(u32, u32)],
    keys: &[Bits],
    patterns_of: impl Fn(u32) -> Option<&'a [Pattern]>,
    masks: Option<&mut Vec<Bits>>,
) -> Option<u32> {
    let n = keys.len();
    let mut k = [0u128; NARROW_FIELDS];
    let mut w = [0u32; NARROW_FIELDS];
    for (j, key) in keys.iter().enumerate() {
        k[j] = key.low_u128();
        w[j] = key.width();
    }
    let want = masks.is_some();
    let mut acc = [0u128; NARROW_FIELDS];
    let mut found = None;
    for &(_, i) in list {
        let Some(patterns) = patterns_of(i) else {
            continue;
        };
        let fail = patterns
            .iter()
            .take(n)
            .enumerate()
            .position(|(j, p)| !matches128(p, k[j], w[j]));
        if want {
            match fail {
                // One bit where the key differs from the entry, else that field's pattern.
                Some(f) => {
                    acc[f] |= mismatch128(&patterns[f], k[f], w[f])
                        .unwrap_or_else(|| pattern_mask128(&patterns[f], w[f]));
                }
                None => {
                    for (j, p) in patterns.iter().take(n).enumerate() {
                        acc[j] |= hit_mask128(p, k[j], w[j]);
                    }
                }
            }
        }
        if fail.is_none() && patterns.len() == n {
            found = Some(i);
            break;
        }
    }
    if let Some(m) = masks {
        m.clear();
        m.extend((0..n).map(|j| Bits::from_u128(w[j], acc[j])));
    }
    found
}

/// [`lookup_scan_narrow`] on the list's kept tests (`list.compiled_for(keys)`): the same
/// answer and masks, without reading the entries.
fn lookup_scan_compiled(
    list: &ScanList,
    keys: &[Bits],
    masks: Option<&mut Vec<Bits>>,
) -> Option<u32> {
    let n = keys.len();
    let mut k = [0u128; NARROW_FIELDS];
    let mut km = [0u128; NARROW_FIELDS];
    for (j, key) in keys.iter().enumerate() {
        km[j] = low_mask(key.width());
        k[j] = key.low_u128() & km[j];
    }
    let want = masks.is_some();
    let mut acc = [0u128; NARROW_FIELDS];
    let mut found = None;
    let tests = list.tests.chunks_exact(n.max(1));
    for ((&(_, i), t), &complete) in list.order.iter().zip(tests).zip(&list.complete) {
        let fail = (0..n).find(|&j| !t[j].matches(k[j]));
        if want {
            match fail {
                Some(f) => acc[f] |= t[f].witness(k[f], km[f]),
                None => {
                    for j in 0..n {
                        acc[j] |= t[j].mask(k[j], km[j]);
                    }
                }
            }
        }
        if fail.is_none() && complete {
            found = Some(i);
            break;
        }
    }
    if let Some(m) = masks {
        m.clear();
        m.extend((0..n).map(|j| Bits::from_u128(keys[j].width(), acc[j])));
    }
    found
}

/// [`matches`] for a key of `w <= 128` bits whose value is `k`.
#[inline]
fn matches128(p: &Pattern, k: u128, w: u32) -> bool {
    let km = low_mask(w);
    let low = |b: &Bits| b.low_u128() & km;
    match p {
        Pattern::Exact(v) => low(v) == k,
        Pattern::Mask { value, mask } => (k ^ low(value)) & low(mask) == 0,
        Pattern::Prefix { value, len } => {
            let m = km & !low_mask(w - (*len).min(w));
            (k ^ low(value)) & m == 0
        }
        Pattern::Range { lo, hi } => low(lo) <= k && k <= low(hi),
        Pattern::Any => true,
    }
}

/// [`mismatch_bit`] for a key of `w <= 128` bits whose value is `k`, as a `u128`.
fn mismatch128(p: &Pattern, k: u128, w: u32) -> Option<u128> {
    if w == 0 {
        return None;
    }
    let km = low_mask(w);
    let low = |b: &Bits| b.low_u128() & km;
    let d = match p {
        Pattern::Exact(v) => (k ^ low(v)) & km,
        Pattern::Mask { value, mask } => (k ^ low(value)) & low(mask),
        Pattern::Prefix { value, len } => (k ^ low(value)) & km & !low_mask(w - (*len).min(w)),
        Pattern::Range { lo, hi } => {
            let (lo, hi) = (low(lo), low(hi));
            return (k < lo || k > hi).then(|| range_mask128(lo, hi, k & km, km));
        }
        Pattern::Any => return None,
    };
    (d != 0).then(|| 1u128 << (127 - d.leading_zeros()))
}

/// The key bits a hit on pattern `p` depends on, for a key of `w <= 128` bits whose value
/// is `k`: the pattern's mask, but for a range only the bits that keep the key inside it
/// ([`range_mask128`]).
fn hit_mask128(p: &Pattern, k: u128, w: u32) -> u128 {
    let km = low_mask(w);
    match p {
        Pattern::Range { lo, hi } if pattern_mask128(p, w) != 0 => {
            range_mask128(lo.low_u128() & km, hi.low_u128() & km, k & km, km)
        }
        _ => pattern_mask128(p, w),
    }
}

/// The key bits whether key `k` is in `[lo, hi]` depends on, for a field whose bits are
/// `km`: the leading bits of the largest aligned block of values around `k` (the values
/// that share those bits with it) lying wholly inside the range when `k` is in it, wholly
/// outside when not. Every key with those bits answers as `k` does, so a range need not make
/// a megaflow match its field exactly: the keys of one range take as few megaflows as the
/// blocks it splits into.
fn range_mask128(lo: u128, hi: u128, k: u128, km: u128) -> u128 {
    let inside = lo <= k && k <= hi;
    let w = 128 - km.leading_zeros();
    let mut j = 0;
    while j < w {
        let low = low_mask(j + 1);
        let (start, end) = (k & km & !low, (k & km) | low);
        let same = match inside {
            true => lo <= start && end <= hi,
            false => end < lo || start > hi,
        };
        if !same {
            break;
        }
        j += 1;
    }
    km & !low_mask(j)
}

/// [`pattern_mask`] for a field of `w <= 128` bits, as a `u128`.
fn pattern_mask128(p: &Pattern, w: u32) -> u128 {
    let km = low_mask(w);
    match p {
        Pattern::Exact(_) => km,
        Pattern::Mask { mask, .. } => mask.low_u128() & km,
        Pattern::Prefix { len, .. } => km & !low_mask(w - (*len).min(w)),
        Pattern::Range { lo, hi }
            if lo.is_zero() && hi.width() == w && hi.low_u128() & km == km =>
        {
            0
        }
        Pattern::Range { .. } => km,
        Pattern::Any => 0,
    }
}

/// For a pattern `p` that `key` does not match: a one-bit mask (of the key's width) of the
/// most significant bit where the key differs from the pattern's value under its mask (for
/// a range, the leading bits that keep every key sharing them out of it, [`range_mask128`]);
/// `None` (use the whole pattern mask) for keys over 128 bits.
fn mismatch_bit(p: &Pattern, key: &Bits) -> Option<Bits> {
    let w = key.width();
    if w > 128 {
        return None;
    }
    mismatch128(p, key.low_u128(), w).map(|b| Bits::from_u128(w, b))
}

/// The key bits a hit on pattern `p` by `key` depends on ([`hit_mask128`]; the whole
/// pattern mask for keys over 128 bits).
fn hit_mask(p: &Pattern, key: &Bits) -> Bits {
    let w = key.width();
    match w <= 128 {
        true => Bits::from_u128(w, hit_mask128(p, key.low_u128(), w)),
        false => pattern_mask(p, w),
    }
}

/// [`Pattern::matches`], on `u128`s for keys of at most 128 bits (no intermediate values):
/// patterns of another width compare after truncation or zero-extension to the key's
/// width, which keeps the low bits, and the low 128 bits of any value are `low_u128`.
fn matches(p: &Pattern, key: &Bits) -> bool {
    let w = key.width();
    if w > 128 {
        return p.matches(key);
    }
    matches128(p, key.low_u128(), w)
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn b(w: u32, v: u128) -> Bits {
        Bits::from_u128(w, v)
    }

    /// A pattern of an 8-bit or 16-bit field from random numbers.
    fn pattern(kind: u8, w: u32, v: u128, m: u128, len: u32) -> Pattern {
        match kind % 5 {
            0 => Pattern::Exact(b(w, v)),
            1 => Pattern::Mask {
                value: b(w, v),
                mask: b(w, m),
            },
            2 => Pattern::Prefix {
                value: b(w, v & !low_mask(w - len.min(w))),
                len: len.min(w),
            },
            3 => {
                let (lo, hi) = (v & low_mask(w), m & low_mask(w));
                Pattern::Range {
                    lo: b(w, lo.min(hi)),
                    hi: b(w, lo.max(hi)),
                }
            }
            _ => Pattern::Any,
        }
    }

    proptest! {
        /// The masks a scan reports are sound: every key that agrees with the looked-up key on
        /// the mask bits hits the same entry (or misses too).
        #[test]
        fn scan_masks_are_sound(
            entries in proptest::collection::vec(
                (any::<[u8; 2]>(), any::<[u128; 4]>(), 0u32..17, 0u32..8), 1..24),
            key in any::<[u128; 2]>(),
            others in proptest::collection::vec(any::<[u128; 2]>(), 1..16),
        ) {
            let widths = [8u32, 16];
            let mut m = Matcher::new(LookupKind::Range, None);
            let mut pats: Vec<Vec<Pattern>> = Vec::new();
            for (i, (kinds, vals, len, prio)) in entries.iter().enumerate() {
                let ps: Vec<Pattern> = (0..2)
                    .map(|f| pattern(kinds[f], widths[f], vals[2 * f], vals[2 * f + 1], *len))
                    .collect();
                m.insert(&ps, *prio, i as u32);
                pats.push(ps);
            }
            let of = |i: u32| pats.get(i as usize).map(|p| &p[..]);
            let k: Vec<Bits> = (0..2).map(|f| b(widths[f], key[f])).collect();
            let mut masks = Vec::new();
            let hit = m.lookup(&k, of, Some(&mut masks));
            for o in &others {
                // A key with the masked bits of `k` and random other bits.
                let q: Vec<Bits> = (0..2)
                    .map(|f| {
                        let mk = masks[f].low_u128();
                        b(widths[f], (k[f].low_u128() & mk) | (o[f] & !mk))
                    })
                    .collect();
                prop_assert_eq!(m.lookup(&q, of, None), hit, "key {:?} masks {:?} other {:?}", k, masks, q);
            }
        }
    }

    proptest! {
        /// The `u128` scan gives exactly the general scan's entry and masks, for fields of 0
        /// to 128 bits and entries with fewer patterns than the key has fields.
        #[test]
        fn narrow_scan_equals_the_general_scan(
            entries in proptest::collection::vec(
                (any::<[u8; 3]>(), any::<[u128; 6]>(), 0u32..130, any::<bool>()), 0..24),
            key in any::<[u128; 3]>(),
            widths in proptest::sample::subsequence(vec![0u32, 1, 7, 8, 13, 16, 64, 100, 128], 3),
        ) {
            let mut pats: Vec<Vec<Pattern>> = Vec::new();
            for (kinds, vals, len, short) in &entries {
                let fields = if *short { 2 } else { 3 };
                pats.push(
                    (0..fields)
                        .map(|f| pattern(kinds[f], widths[f], vals[2 * f], vals[2 * f + 1], *len))
                        .collect(),
                );
            }
            let list: Vec<(u32, u32)> = (0..pats.len() as u32).map(|i| (0, i)).collect();
            let of = |i: u32| pats.get(i as usize).map(|p| &p[..]);
            let k: Vec<Bits> = (0..3).map(|f| b(widths[f], key[f] & low_mask(widths[f]))).collect();
            let (mut general, mut narrow) = (Vec::new(), Vec::new());
            let a = lookup_scan(&list, &k, of, Some(&mut general));
            let b2 = lookup_scan_narrow(&list, &k, of, Some(&mut narrow));
            prop_assert_eq!(a, b2);
            prop_assert_eq!(general, narrow);
            prop_assert_eq!(lookup_scan_narrow(&list, &k, of, None), a);
        }
    }

    proptest! {
        /// A scan on the kept `u128` tests gives exactly the general scan's entry and masks,
        /// for fields of 0 to 128 bits, entries with fewer patterns than the key has fields,
        /// priorities, and entries removed.
        #[test]
        fn compiled_scan_equals_the_general_scan(
            entries in proptest::collection::vec(
                (any::<[u8; 3]>(), any::<[u128; 6]>(), 0u32..130, any::<bool>(), 0u32..4), 0..24),
            removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
            keys in proptest::collection::vec(any::<[u128; 3]>(), 1..8),
            widths in proptest::sample::subsequence(vec![0u32, 1, 7, 8, 13, 16, 64, 100, 128], 3),
        ) {
            let mut m = Matcher::with_widths(LookupKind::Range, None, &widths);
            let mut pats: Vec<Vec<Pattern>> = Vec::new();
            for (i, (kinds, vals, len, short, prio)) in entries.iter().enumerate() {
                let fields = if *short { 2 } else { 3 };
                let ps: Vec<Pattern> = (0..fields)
                    .map(|f| pattern(kinds[f], widths[f], vals[2 * f], vals[2 * f + 1], *len))
                    .collect();
                m.insert(&ps, *prio, i as u32);
                pats.push(ps);
            }
            let mut live: Vec<u32> = (0..pats.len() as u32).collect();
            for r in &removed {
                if live.is_empty() {
                    break;
                }
                let i = live.swap_remove(r.index(live.len()));
                m.remove(&pats[i as usize], i);
            }
            let Matcher::Scan(list) = &m else {
                panic!("scan expected")
            };
            prop_assert_eq!(list.order.len(), live.len());
            let of = |i: u32| pats.get(i as usize).map(|p| &p[..]);
            for key in &keys {
                let k: Vec<Bits> = (0..3).map(|f| b(widths[f], key[f] & low_mask(widths[f]))).collect();
                prop_assert!(list.compiled_for(&k));
                let (mut general, mut compiled) = (Vec::new(), Vec::new());
                let a = lookup_scan(&list.order, &k, of, Some(&mut general));
                let c = m.lookup(&k, of, Some(&mut compiled));
                prop_assert_eq!(a, c);
                prop_assert_eq!(&general, &compiled);
                prop_assert_eq!(m.lookup(&k, of, None), a);
            }
        }
    }

    proptest! {
        /// The one-field LPM lookup gives the general lookup's entry and mask, with few and
        /// with many longer entries (the witness bits, and the trie's path), for widths up to
        /// 128 bits.
        #[test]
        fn one_field_lpm_equals_the_general_lookup(
            w in prop::sample::select(vec![1u32, 8, 20, 32, 64, 100, 128]),
            routes in proptest::collection::vec((any::<u128>(), 0u32..=128), 0..90),
            keys in proptest::collection::vec(any::<u128>(), 1..12),
        ) {
            let mut m = Matcher::new(LookupKind::Lpm, Some(0));
            for (i, (v, len)) in routes.iter().enumerate() {
                let len = len % (w + 1);
                // Values near each other, so that prefixes nest.
                let v = ((v & 0xf) << w.saturating_sub(4).min(124) | (v >> 100)) & low_mask(w);
                let value = b(w, v & !low_mask(w - len));
                m.insert(&[Pattern::Prefix { value, len }], 0, i as u32);
            }
            let Matcher::Lpm { by_len, prefixes, .. } = &m else {
                panic!("lpm expected")
            };
            for k in &keys {
                let k = ((k & 0xf) << w.saturating_sub(4).min(124) | (k >> 100)) & low_mask(w);
                let key = [b(w, k)];
                let (mut general, mut one) = (Vec::new(), Vec::new());
                let a = lookup_lpm_fields(0, by_len, prefixes, &key, Some(&mut general));
                let c = lookup_lpm1(by_len, prefixes, &key[0], Some(&mut one));
                prop_assert_eq!(a, c);
                prop_assert_eq!(&general, &one);
                prop_assert_eq!(lookup_lpm1(by_len, prefixes, &key[0], None), a);
            }
        }
    }

    proptest! {
        /// The prefixes kept in order answer what the trie of them answers, for every key,
        /// as prefixes come and go (the same prefix several times too, as entries that share
        /// an LPM prefix and differ in other fields add it).
        #[test]
        fn sorted_prefixes_answer_as_the_trie(
            w in prop::sample::select(vec![1u32, 7, 8, 16, 33, 128]),
            ops in proptest::collection::vec((any::<u128>(), 0u32..=128, 0u8..4), 1..120),
            keys in proptest::collection::vec(any::<u128>(), 1..24),
        ) {
            let (mut sorted, mut trie) = (SortedPrefixes::default(), Trie::default());
            let mut live: Vec<(Bits, u32)> = Vec::new();
            for (v, len, op) in ops {
                let len = len % (w + 1);
                if op == 0 && !live.is_empty() {
                    let (value, len) = live.swap_remove((v % live.len() as u128) as usize);
                    sorted.remove(std::slice::from_ref(&value), len);
                    trie.remove(&value, len);
                } else {
                    // Values near each other, so that paths share long prefixes.
                    let v = (v & 0xf) << w.saturating_sub(4).min(124) | (v >> 100);
                    let value = b(w, v & !low_mask(w - len) & low_mask(w));
                    sorted.add(std::slice::from_ref(&value), len);
                    trie.add(&value, len);
                    live.push((value, len));
                }
                for k in &keys {
                    let k = (k & 0xf) << w.saturating_sub(4).min(124) | (k >> 100);
                    let key = b(w, k & low_mask(w));
                    prop_assert_eq!(sorted.decided(std::slice::from_ref(&key)), trie.decided(&key), "key {:?}", key);
                }
            }
        }
    }

    /// A matcher of `kind` given `entries` (entry `i` at index `i`, priority 0; duplicates
    /// left out), then without the ones `removed` picks; and the entries it keeps.
    fn populated(
        kind: LookupKind,
        lpm: Option<usize>,
        entries: impl Iterator<Item = Vec<Pattern>>,
        removed: &[prop::sample::Index],
    ) -> (Matcher, Vec<(Vec<Pattern>, u32)>) {
        let mut m = Matcher::new(kind, lpm);
        let mut live: Vec<(Vec<Pattern>, u32)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, ps) in entries.enumerate() {
            if seen.insert(format!("{ps:?}")) {
                m.insert(&ps, 0, i as u32);
                live.push((ps, i as u32));
            }
        }
        for r in removed {
            if live.is_empty() {
                break;
            }
            let (ps, i) = live.swap_remove(r.index(live.len()));
            m.remove(&ps, i);
        }
        (m, live)
    }

    /// The keys that agree with `k` on the bits of `masks` and take the other bits (of fields
    /// of `widths`) from each of `others`: each must get `hit` from `m` (the masks' soundness).
    fn agreeing_keys_agree(
        m: &Matcher,
        k: &[Bits],
        masks: &[Bits],
        widths: &[u32],
        others: &[[u16; 2]],
        hit: Option<u32>,
    ) -> Result<(), TestCaseError> {
        let none = |_| None;
        for o in others {
            let q: Vec<Bits> = widths
                .iter()
                .enumerate()
                .map(|(f, &w)| {
                    let mk = masks[f].low_u128();
                    b(
                        w,
                        (k[f].low_u128() & mk) | (u128::from(o[f]) & !mk & low_mask(w)),
                    )
                })
                .collect();
            prop_assert_eq!(
                m.lookup(&q, none, None),
                hit,
                "key {:?} masks {:?} other {:?}",
                k,
                masks,
                q
            );
        }
        Ok(())
    }

    proptest! {
        /// Exact and LPM masks are sound: every key that agrees with the looked-up key on the
        /// mask bits hits the same entry (or misses too). Keys and entries are drawn from few
        /// values so that hits, misses and near misses all happen.
        #[test]
        fn exact_and_lpm_masks_are_sound(
            lpm in any::<bool>(),
            entries in proptest::collection::vec((0u8..16, 0u8..4, 0u32..=12), 0..80),
            key in (0u8..16, 0u8..4),
            others in proptest::collection::vec(any::<[u16; 2]>(), 1..16),
        ) {
            let kind = if lpm { LookupKind::Lpm } else { LookupKind::Exact };
            let mut m = Matcher::new(kind, lpm.then_some(0));
            // Field 0: 12 bits, spread values; field 1: 3 bits.
            let spread = |v: u8| (u128::from(v) * 0x111) & 0xfff;
            let mut seen = std::collections::HashSet::new();
            for (i, (v, x, len)) in entries.iter().enumerate() {
                let p0 = if lpm {
                    Pattern::Prefix { value: b(12, spread(*v) & !low_mask(12 - len)), len: *len }
                } else {
                    Pattern::Exact(b(12, spread(*v)))
                };
                let ps = vec![p0, Pattern::Exact(b(3, u128::from(*x)))];
                if seen.insert(format!("{ps:?}")) {
                    m.insert(&ps, 0, i as u32);
                }
            }
            let none = |_| None;
            let k = [b(12, spread(key.0)), b(3, u128::from(key.1))];
            let mut masks = Vec::new();
            let hit = m.lookup(&k, none, Some(&mut masks));
            agreeing_keys_agree(&m, &k, &masks, &[12u32, 3], &others, hit)?;
        }
    }

    proptest! {
        /// LPM tables with more longer entries than [`WITNESS_LIMIT`] get their masks from the
        /// prefix trie: sound (every key agreeing on the mask bits gets the same result) and
        /// never beyond the longest prefix on the LPM field. Entries come and go so that the
        /// trie's removals are used (and lookups with few longer entries left use witness
        /// bits, which must be sound too).
        #[test]
        fn large_lpm_masks_are_sound(
            entries in proptest::collection::vec((any::<u16>(), 0u8..2, 0u32..=16), 65..300),
            removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
            keys in proptest::collection::vec((any::<u16>(), 0u8..2), 1..8),
            others in proptest::collection::vec(any::<[u16; 2]>(), 1..12),
        ) {
            let entries = entries.iter().map(|(v, x, len)| {
                vec![
                    Pattern::Prefix {
                        value: b(16, u128::from(*v) & !low_mask(16 - len)),
                        len: *len,
                    },
                    Pattern::Exact(b(1, u128::from(*x))),
                ]
            });
            let (m, live) = populated(LookupKind::Lpm, Some(0), entries, &removed);
            let longest = live.iter().map(|(ps, _)| prefix_len(ps.first())).max().unwrap_or(0);
            let none = |_| None;
            for key in &keys {
                let k = [b(16, u128::from(key.0)), b(1, u128::from(key.1))];
                let mut masks = Vec::new();
                let hit = m.lookup(&k, none, Some(&mut masks));
                // Only bits within the longest prefix (the old mask for large tables).
                prop_assert_eq!(masks[0].low_u128() & low_mask(16 - longest), 0, "longest prefix {}", longest);
                agreeing_keys_agree(&m, &k, &masks, &[16u32, 1], &others, hit)?;
            }
        }
    }

    proptest! {
        /// Exact tables with more entries than [`WITNESS_LIMIT`]: a miss's mask comes from the
        /// entries' keys in order (the fields' leading bits, in order) and is sound; a hit
        /// takes the whole key.
        #[test]
        fn large_exact_masks_are_sound(
            entries in proptest::collection::vec((any::<u16>(), 0u8..8), 65..300),
            removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
            keys in proptest::collection::vec((any::<u16>(), 0u8..8), 1..8),
            others in proptest::collection::vec(any::<[u16; 2]>(), 1..12),
        ) {
            let entries = entries.iter().map(|(v, x)| {
                vec![
                    Pattern::Exact(b(16, u128::from(*v))),
                    Pattern::Exact(b(3, u128::from(*x))),
                ]
            });
            let (m, live) = populated(LookupKind::Exact, None, entries, &removed);
            let none = |_| None;
            // The keys given, and keys of live entries (hits).
            let mut ks: Vec<(u16, u8)> = keys.clone();
            ks.extend(live.iter().take(3).map(|(ps, _)| match (&ps[0], &ps[1]) {
                (Pattern::Exact(a), Pattern::Exact(c)) => (a.low_u128() as u16, c.low_u128() as u8),
                _ => (0, 0),
            }));
            for key in &ks {
                let k = [b(16, u128::from(key.0)), b(3, u128::from(key.1))];
                let mut masks = Vec::new();
                let hit = m.lookup(&k, none, Some(&mut masks));
                if hit.is_some() {
                    prop_assert_eq!(&masks, &vec![b(16, 0xffff), b(3, 7)]);
                }
                agreeing_keys_agree(&m, &k, &masks, &[16u32, 3], &others, hit)?;
            }
        }
    }

    /// A wide field (200 bits) whose leading 16 bits are `v` and the rest `fill`.
    fn wide(v: u16, fill: u8) -> Bits {
        let mut bytes = vec![fill; 25];
        bytes[..2].copy_from_slice(&v.to_be_bytes());
        Bits::from_be_bytes(200, &bytes)
    }

    proptest! {
        /// Exact tables of keys wider than 128 bits, with fewer and more entries than
        /// [`WITNESS_LIMIT`]: a miss's mask (the leading bits that part it from every entry)
        /// is sound for keys that differ anywhere outside it, in either field.
        #[test]
        fn wide_exact_masks_are_sound(
            entries in proptest::collection::vec((any::<u16>(), 0u8..3, 0u8..8), 1..200),
            removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..30),
            keys in proptest::collection::vec((any::<u16>(), 0u8..3, 0u8..8), 1..6),
            others in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 26), 1..10),
        ) {
            let entries = entries.iter().map(|&(v, fill, x)| {
                vec![Pattern::Exact(wide(v, fill)), Pattern::Exact(b(3, u128::from(x)))]
            });
            let (m, live) = populated(LookupKind::Exact, None, entries, &removed);
            let none = |_| None;
            for &(v, fill, x) in &keys {
                let k = [wide(v, fill), b(3, u128::from(x))];
                let mut masks = Vec::new();
                let hit = m.lookup(&k, none, Some(&mut masks));
                if hit.is_some() {
                    prop_assert_eq!(&masks, &vec![Bits::ones(200), b(3, 7)]);
                    continue;
                }
                // Exactly the leading bits up to the first that parts the key from the entry
                // sharing the most with it (bit strings compared one by one).
                let bits = |f: &[Bits]| -> Vec<bool> {
                    f.iter().flat_map(|x| (0..x.width()).rev().map(|i| x.bit(i))).collect()
                };
                let kb = bits(&k);
                let shared = live
                    .iter()
                    .map(|(ps, _)| bits(&key_of(ps)).iter().zip(&kb).take_while(|(a, b)| a == b).count())
                    .max();
                if let Some(n) = shared {
                    let n = (n as u32 + 1).min(203);
                    prop_assert_eq!(&masks, &vec![Bits::prefix_mask(200, n.min(200)), Bits::prefix_mask(3, n.saturating_sub(200))]);
                }
                for o in &others {
                    let q: Vec<Bits> = [(200, &o[..25]), (3, &o[25..])]
                        .iter()
                        .enumerate()
                        .map(|(f, &(w, bytes))| {
                            let other = Bits::from_be_bytes(w, bytes);
                            k[f].and(&masks[f]).or(&other.and(&masks[f].not()))
                        })
                        .collect();
                    prop_assert_eq!(m.lookup(&q, none, None), None, "key {:?} masks {:?} other {:?}", k, masks, q);
                }
                // Every entry's own bits outside the mask: none of them can be hit (the mask
                // keeps a bit that parts the key from each entry).
                for (ps, _) in &live {
                    let e = key_of(ps);
                    let q: Vec<Bits> = (0..2)
                        .map(|f| k[f].and(&masks[f]).or(&e[f].and(&masks[f].not())))
                        .collect();
                    prop_assert_eq!(m.lookup(&q, none, None), None, "key {:?} masks {:?} entry {:?}", k, masks, e);
                }
            }
        }
    }

    proptest! {
        /// LPM on a field wider than 128 bits, with more longer entries than
        /// [`WITNESS_LIMIT`]: a lookup's mask is sound (keys agreeing on it, random or made of
        /// an entry's other bits, get the same answer) and stays within the longest prefix.
        #[test]
        fn wide_lpm_masks_are_sound(
            entries in proptest::collection::vec((any::<u16>(), 0u8..3, prop::sample::select(vec![4u32, 12, 16, 100, 200])), 65..150),
            keys in proptest::collection::vec((any::<u16>(), 0u8..3), 1..6),
            others in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 25), 1..8),
        ) {
            let entries = entries.iter().map(|&(v, fill, len)| {
                let value = wide(v, fill).and(&Bits::prefix_mask(200, len));
                vec![Pattern::Prefix { value, len }]
            });
            let (m, live) = populated(LookupKind::Lpm, Some(0), entries, &[]);
            let longest = live.iter().map(|(ps, _)| prefix_len(ps.first())).max().unwrap_or(0);
            let none = |_| None;
            for &(v, fill) in &keys {
                let k = [wide(v, fill)];
                let mut masks = Vec::new();
                let hit = m.lookup(&k, none, Some(&mut masks));
                prop_assert!(masks[0].and(&Bits::prefix_mask(200, longest).not()).is_zero());
                let agreeing = |other: &Bits| [k[0].and(&masks[0]).or(&other.and(&masks[0].not()))];
                for o in &others {
                    let q = agreeing(&Bits::from_be_bytes(200, o));
                    prop_assert_eq!(m.lookup(&q, none, None), hit, "key {:?} masks {:?}", k, masks);
                }
                for (ps, _) in &live {
                    let q = agreeing(&key_of(ps)[0]);
                    prop_assert_eq!(m.lookup(&q, none, None), hit, "key {:?} masks {:?}", k, masks);
                }
            }
        }
    }

    /// A consistent-hash ring: 480 ranges over a 32-bit point (each a server's arc). A point
    /// needs only the leading bits that keep it inside its arc and off the others, so that
    /// points of one arc share a few masks instead of each its own (an exact match), for
    /// points of 32 bits and of 128 (the widest that is not matched whole).
    #[test]
    fn range_lookups_need_only_the_bits_that_keep_the_key_in_its_range() {
        let arcs: Vec<(u128, u128)> = (0..480u128)
            .map(|i| (i * 8_947_848, (i + 1) * 8_947_848 - 1))
            .chain([(480 * 8_947_848, u128::from(u32::MAX))])
            .collect();
        for width in [32u32, 128] {
            let mut m = Matcher::new(LookupKind::Range, None);
            let mut pats = Vec::new();
            for (i, &(lo, hi)) in arcs.iter().enumerate() {
                let p = vec![Pattern::Range {
                    lo: b(width, lo),
                    hi: b(width, hi),
                }];
                m.insert(&p, 0, i as u32);
                pats.push(p);
            }
            let of = |i: u32| pats.get(i as usize).map(|p| &p[..]);
            let mut masks = Vec::new();
            let mut distinct = std::collections::HashSet::new();
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let point = u128::from(x as u32);
                let key = [b(width, point)];
                let hit = m
                    .lookup(&key, of, Some(&mut masks))
                    .expect("the ring covers all");
                let (lo, hi) = arcs[hit as usize];
                assert!(
                    lo <= point && point <= hi,
                    "w {width} {point:#x} hit {hit} [{lo:#x}, {hi:#x}]"
                );
                let mask = masks[0].low_u128();
                // Sound: the lowest and highest values that share the masked bits stay in
                // the arc (the masked values form one aligned block around the point).
                let (first, last) = (point & mask, point | (!mask & u128::from(u32::MAX)));
                assert!(
                    lo <= first && last <= hi,
                    "{point:#x} {mask:#x} [{lo:#x}, {hi:#x}]"
                );
                // The bits above the ring's 32 are all needed (values there are in no
                // arc); of its 32, the arc's leading bits, never all.
                let low = mask & u128::from(u32::MAX);
                assert_eq!(mask.count_ones() - low.count_ones(), width - 32);
                assert!((9..32).contains(&low.count_ones()), "{point:#x}: {mask:#x}");
                distinct.insert((hit, point & mask));
            }
            // 2,000 points in a few hundred blocks, not 2,000 exact matches.
            assert!(distinct.len() < 1500, "{}", distinct.len());
        }
    }

    /// An exact table of 1,000 IPv6 flows (source, destination, protocol, ports: 296 bits):
    /// a new flow needs only the leading bits that part it from every entry, not the whole
    /// key, and each flow keeps its own entries as it did.
    #[test]
    fn wide_exact_misses_need_only_the_bits_that_part_them() {
        let mut m = Matcher::new(LookupKind::Exact, None);
        let v6 = |hi: u128, lo: u128| b(128, (hi << 64) | lo);
        let flow = |i: u128| {
            [
                Pattern::Exact(v6(0x2001_0db8_0000_0000, i)),
                Pattern::Exact(v6(0x2001_0db8_ffff_0000, 1)),
                Pattern::Exact(b(8, 6)),
                Pattern::Exact(b(16, 1024 + i)),
                Pattern::Exact(b(16, 80)),
            ]
        };
        for i in 0..1000u128 {
            m.insert(&flow(i), 0, i as u32);
        }
        let none = |_| None;
        let mut masks = Vec::new();
        // Another /64: its source parts from every entry at bit 31 (0x0db8 vs 0x0db9).
        let k = [
            v6(0x2001_0db9_0000_0000, 7),
            v6(0x2001_0db8_ffff_0000, 1),
            b(8, 6),
            b(16, 1031),
            b(16, 80),
        ];
        assert_eq!(m.lookup(&k, none, Some(&mut masks)), None);
        assert_eq!(masks[0], Bits::prefix_mask(128, 32));
        assert!(masks[1..].iter().all(Bits::is_zero), "{masks:?}");
        // A known source to another destination: the source, then the destination's
        // leading bits up to where it parts.
        let k = [
            v6(0x2001_0db8_0000_0000, 7),
            v6(0x2001_0db8_fffe_0000, 1),
            b(8, 6),
            b(16, 1031),
            b(16, 80),
        ];
        assert_eq!(m.lookup(&k, none, Some(&mut masks)), None);
        assert_eq!(masks[0], Bits::ones(128));
        assert_eq!(masks[1], Bits::prefix_mask(128, 48));
        assert!(masks[2..].iter().all(Bits::is_zero), "{masks:?}");
        // A hit takes the whole key; a removed entry is a miss again.
        assert_eq!(m.lookup(&k_of(&flow(7)), none, Some(&mut masks)), Some(7));
        assert!(
            masks
                .iter()
                .zip([128, 128, 8, 16, 16])
                .all(|(x, w)| *x == Bits::ones(w))
        );
        m.remove(&flow(7), 7);
        assert_eq!(m.lookup(&k_of(&flow(7)), none, Some(&mut masks)), None);
        // Flow 7 (source ...0111) parts from flow 6 (...0110) only at the source's last bit.
        assert_eq!(masks[0], Bits::ones(128));
        assert!(masks[1..].iter().all(Bits::is_zero), "{masks:?}");
    }

    fn k_of(ps: &[Pattern]) -> Vec<Bits> {
        key_of(ps)
    }

    /// A MAC table of 1,000 entries: an unknown address needs only the bits that part it from
    /// every entry, not the whole key.
    #[test]
    fn large_exact_misses_need_only_the_bits_that_part_them() {
        let mut m = Matcher::new(LookupKind::Exact, None);
        let mac = |i: u128| {
            [
                Pattern::Exact(b(48, 0x0200_0000_0000 | i)),
                Pattern::Exact(b(12, 100)),
            ]
        };
        for i in 0..1000u128 {
            m.insert(&mac(i), 0, i as u32);
        }
        let none = |_| None;
        let mut masks = Vec::new();
        // 04:00:...: bit 5 of the first byte parts it from every entry (02 = 0000_0010, 04 = 0000_0100).
        let k = [b(48, 0x0400_0000_0001), b(12, 100)];
        assert_eq!(m.lookup(&k, none, Some(&mut masks)), None);
        assert_eq!(masks, [b(48, 0xfc00_0000_0000), b(12, 0)]);
        // A known address on another VLAN: 48 bits, then the VLAN's leading bits.
        let k = [b(48, 0x0200_0000_0005), b(12, 200)];
        assert_eq!(m.lookup(&k, none, Some(&mut masks)), None);
        assert_eq!(masks[0], b(48, 0xffff_ffff_ffff));
        // 100 = 0b0000_0110_0100 and 200 = 0b0000_1100_1000 part at their fifth bit.
        assert_eq!(masks[1], b(12, 0xf80));
        assert_eq!(
            m.lookup(
                &[b(48, 0x0200_0000_0005), b(12, 100)],
                none,
                Some(&mut masks)
            ),
            Some(5)
        );
        assert_eq!(masks, [b(48, 0xffff_ffff_ffff), b(12, 0xfff)]);
    }

    /// A route table of 1,000 /24s: a key outside every route needs only the bits that take
    /// it off the trie, not the longest prefix.
    #[test]
    fn large_lpm_misses_need_only_the_bits_that_leave_the_trie() {
        let mut m = Matcher::new(LookupKind::Lpm, Some(0));
        for i in 0..1000u128 {
            let p = [Pattern::Prefix {
                value: b(32, 0x0a00_0000 | (i << 8)),
                len: 24,
            }];
            m.insert(&p, 0, i as u32);
        }
        let none = |_| None;
        let mut masks = Vec::new();
        // 11.0.0.1: bit 7 of the first byte (0x0a vs 0x0b) leaves the trie.
        assert_eq!(
            m.lookup(&[b(32, 0x0b00_0001)], none, Some(&mut masks)),
            None
        );
        assert_eq!(masks, [b(32, 0xff00_0000)]);
        // 10.0.5.1 hits its /24: 24 bits.
        assert_eq!(
            m.lookup(&[b(32, 0x0a00_0501)], none, Some(&mut masks)),
            Some(5)
        );
        assert_eq!(masks, [b(32, 0xffff_ff00)]);
        // Routes with a second (exact) field; the first half removed: the masks are those of
        // a table built with the second half only.
        let route = |i: u128| {
            [
                Pattern::Prefix {
                    value: b(32, 0x0a00_0000 | (i << 8)),
                    len: 24,
                },
                Pattern::Exact(b(8, i & 0xff)),
            ]
        };
        let mut two = Matcher::new(LookupKind::Lpm, Some(0));
        let mut fresh = Matcher::new(LookupKind::Lpm, Some(0));
        // And 10.3.0.0/16 over some of them, removed too.
        let wide = [
            Pattern::Prefix {
                value: b(32, 0x0a03_0000),
                len: 16,
            },
            Pattern::Exact(b(8, 7)),
        ];
        two.insert(&wide, 0, 5000);
        for i in 0..1000u128 {
            two.insert(&route(i), 0, i as u32);
        }
        two.remove(&wide, 5000);
        for i in 0..1000u128 {
            if i < 500 {
                two.remove(&route(i), i as u32);
            } else {
                fresh.insert(&route(i), 0, i as u32);
            }
        }
        let keys = [
            0x0a00_0401u128,
            0x0a00_0501,
            0x0a01_f401,
            0x0a02_0000,
            0x0a03_f001,
            0x0b00_0000,
        ];
        for key in keys {
            for x in [0u128, 4, 0xf4] {
                let k = [b(32, key), b(8, x)];
                let mut want = Vec::new();
                let hit = fresh.lookup(&k, none, Some(&mut want));
                assert_eq!(two.lookup(&k, none, Some(&mut masks)), hit, "{key:#x} {x}");
                assert_eq!(masks, want, "{key:#x} {x}");
            }
        }
        // 10.0.4.1 with the routes from 10.1.244.0 on: 16 bits tell it from them, and the
        // second field does not matter.
        assert_eq!(
            two.lookup(&[b(32, 0x0a00_0401), b(8, 4)], none, Some(&mut masks)),
            None
        );
        assert_eq!(masks, [b(32, 0xffff_0000), b(8, 0)]);
    }

    #[test]
    fn exact_misses_need_one_bit_per_entry() {
        let mut m = Matcher::new(LookupKind::Exact, None);
        m.insert(&[Pattern::Exact(b(16, 0x1234))], 0, 0);
        m.insert(&[Pattern::Exact(b(16, 0x1200))], 0, 1);
        let none = |_| None;
        let mut masks = Vec::new();
        assert_eq!(m.lookup(&[b(16, 0x9234)], none, Some(&mut masks)), None);
        // Bit 15 tells 0x9234 from both entries.
        assert_eq!(masks, [b(16, 0x8000)]);
        assert_eq!(m.lookup(&[b(16, 0x1234)], none, Some(&mut masks)), Some(0));
        assert_eq!(masks, [b(16, 0xffff)]);
        let empty = Matcher::new(LookupKind::Exact, None);
        assert_eq!(empty.lookup(&[b(16, 7)], none, Some(&mut masks)), None);
        assert_eq!(masks, [b(16, 0)]);
    }

    #[test]
    fn lpm_prefers_the_longest_prefix() {
        let mut m = Matcher::new(LookupKind::Lpm, Some(0));
        let p8 = [Pattern::Prefix {
            value: b(32, 0x0a00_0000),
            len: 8,
        }];
        let p24 = [Pattern::Prefix {
            value: b(32, 0x0a01_0200),
            len: 24,
        }];
        m.insert(&p8, 0, 0);
        m.insert(&p24, 0, 1);
        let none = |_| None;
        assert_eq!(m.lookup(&[b(32, 0x0a01_0203)], none, None), Some(1));
        let mut masks = Vec::new();
        assert_eq!(
            m.lookup(&[b(32, 0x0a02_0203)], none, Some(&mut masks)),
            Some(0)
        );
        // The /8 hit and one bit telling the key from the /24 entry (bit 17: 0x02 vs 0x01).
        assert_eq!(masks, [b(32, 0xff02_0000)]);
        assert_eq!(m.lookup(&[b(32, 0x0b00_0000)], none, None), None);
        assert_eq!(m.find_duplicate(&p24, 0, none), Some(1));
        m.remove(&p24, 1);
        assert_eq!(m.lookup(&[b(32, 0x0a01_0203)], none, None), Some(0));
    }

    #[test]
    fn fast_matching_agrees_with_patterns() {
        let widths = [0u32, 1, 7, 8, 9, 32, 48, 64, 65, 127, 128, 129, 200];
        let vals = [
            0u128,
            1,
            0x80,
            0xff,
            0x1234_5678,
            u128::MAX,
            0xdead_beef_0000_0001,
        ];
        for &w in &widths {
            for &kv in &vals {
                let key = Bits::from_u128(w, kv);
                for &pw in &[w, w.saturating_sub(3), w + 5, 160] {
                    for &a in &vals {
                        for &c in &vals {
                            let pats = [
                                Pattern::Exact(b(pw, a)),
                                Pattern::Mask {
                                    value: b(pw, a),
                                    mask: b(pw, c),
                                },
                                Pattern::Prefix {
                                    value: b(pw, a),
                                    len: (c % 140) as u32,
                                },
                                Pattern::Range {
                                    lo: b(pw, a.min(c)),
                                    hi: b(pw, a.max(c)),
                                },
                                Pattern::Any,
                            ];
                            for p in &pats {
                                assert_eq!(matches(p, &key), p.matches(&key), "{p} {key:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn scan_orders_by_priority_then_index() {
        let mut m = Matcher::new(LookupKind::Ternary, None);
        m.insert(&[], 10, 2);
        m.insert(&[], 20, 5);
        m.insert(&[], 10, 1);
        let Matcher::Scan(list) = &m else {
            panic!("scan expected")
        };
        assert_eq!(list.order, [(20, 5), (10, 1), (10, 2)]);
    }
}
