//! The scan of a ternary or range table: its entries in lookup order, their patterns kept as
//! `u128` tests where the fields allow, and the key bits each answer depends on (one telling
//! bit per entry missed, a range's aligned blocks), for megaflow masks.

use super::intervals::Intervals;
use super::*;
/// A ternary or range table's entries in lookup order. When the table's fields are at most
/// [`NARROW_FIELDS`] of at most 128 bits each, each entry's patterns are also kept as `u128`
/// tests side by side (one entry's after another's), so that a lookup scans one array
/// instead of reading every entry's patterns.
#[derive(Clone, Debug, Default)]
pub struct ScanList {
    /// `(priority, index)` sorted by priority descending, then index ascending.
    pub(super) order: Vec<(u32, u32)>,
    /// The fields' widths when the tests are kept (`None`: they are not).
    pub(super) widths: Option<Vec<u32>>,
    /// `widths.len()` tests per entry of `order`, in its order.
    pub(super) tests: Vec<Test>,
    /// Per entry of `order`: whether it has a pattern for every field (else it never hits).
    pub(super) complete: Vec<bool>,
    /// A one-field table whose entries are all disjoint ranges: their index (`None` once an
    /// entry is not such a range, until the table is cleared).
    pub(super) intervals: Option<Intervals>,
}

/// One pattern as a test of a key field's `u128` value, at the field's width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Test {
    /// `(k ^ v) & m == 0`: exact, mask, prefix and don't-care patterns.
    Mask { v: u128, m: u128 },
    /// `lo <= k <= hi`; `full`: every value of the field is in the range.
    Range { lo: u128, hi: u128, full: bool },
}

impl Test {
    /// Pattern `p` for a field of `w <= 128` bits, as [`matches128`] reads it.
    pub(super) fn of(p: &Pattern, w: u32) -> Test {
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
    pub(super) fn matches(self, k: u128) -> bool {
        match self {
            Test::Mask { v, m } => (k ^ v) & m == 0,
            Test::Range { lo, hi, .. } => lo <= k && k <= hi,
        }
    }

    /// [`mismatch128`]'s bits, else [`pattern_mask128`]'s mask, for a key `k` that fails.
    #[inline]
    pub(super) fn witness(self, k: u128, km: u128) -> u128 {
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
    pub(super) fn mask(self, k: u128, km: u128) -> u128 {
        match self {
            Test::Mask { m, .. } => m,
            Test::Range { full: true, .. } => 0,
            Test::Range { lo, hi, .. } => range_mask128(lo, hi, k, km),
        }
    }
}

impl ScanList {
    pub(super) fn new(widths: &[u32]) -> ScanList {
        // (A scan table has a field; a list of no field keeps no tests.)
        let narrow =
            (1..=NARROW_FIELDS).contains(&widths.len()) && widths.iter().all(|&w| w <= 128);
        let widths = narrow.then(|| widths.to_vec());
        ScanList {
            intervals: searchable(&widths).then(Intervals::default),
            widths,
            ..ScanList::default()
        }
    }

    pub(super) fn insert(&mut self, patterns: &[Pattern], priority: u32, index: u32) {
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
            if let Some(iv) = &mut self.intervals {
                let fits = patterns.len() == 1 && iv.insert(self.tests[at], index);
                if !fits {
                    self.intervals = None;
                }
            }
        }
    }

    /// Removes entry `index`, whose patterns are `patterns`.
    pub(super) fn remove(&mut self, patterns: &[Pattern], index: u32) {
        if let (Some(iv), Some(w), Some(p)) = (&mut self.intervals, &self.widths, patterns.first())
        {
            iv.remove(Test::of(p, w[0]), index);
        }
        while let Some(at) = self.order.iter().position(|&(_, i)| i == index) {
            self.order.remove(at);
            if let Some(widths) = &self.widths {
                let n = widths.len();
                self.tests.drain(at * n..at * n + n);
                self.complete.remove(at);
            }
        }
    }

    pub(super) fn clear(&mut self) {
        self.order.clear();
        self.tests.clear();
        self.complete.clear();
        self.intervals = searchable(&self.widths).then(Intervals::default);
    }

    /// Whether the kept tests answer a lookup of `keys` (fields of the table's widths).
    pub(super) fn compiled_for(&self, keys: &[Bits]) -> bool {
        self.widths.as_ref().is_some_and(|w| {
            w.len() == keys.len() && w.iter().zip(keys).all(|(w, k)| *w == k.width())
        })
    }
}

/// Whether a list of kept tests for fields of `widths` may be searched ([`Intervals`]): one
/// field, of at least one bit.
fn searchable(widths: &Option<Vec<u32>>) -> bool {
    matches!(widths.as_deref(), Some([w]) if *w > 0)
}

pub(super) fn lookup_scan<'a>(
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
pub(super) const NARROW_FIELDS: usize = 16;

/// [`lookup_scan`] for keys of at most [`NARROW_FIELDS`] fields of at most 128 bits: the same
/// answer and masks, computed on the keys' `u128` values (no [`Bits`] per entry compared).
pub(super) fn lookup_scan_narrow<'a>(
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
pub(super) fn lookup_scan_compiled(
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
pub(super) fn matches128(p: &Pattern, k: u128, w: u32) -> bool {
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
pub(super) fn mismatch128(p: &Pattern, k: u128, w: u32) -> Option<u128> {
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
pub(super) fn hit_mask128(p: &Pattern, k: u128, w: u32) -> u128 {
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
pub(super) fn range_mask128(lo: u128, hi: u128, k: u128, km: u128) -> u128 {
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
pub(super) fn pattern_mask128(p: &Pattern, w: u32) -> u128 {
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
pub(super) fn mismatch_bit(p: &Pattern, key: &Bits) -> Option<Bits> {
    let w = key.width();
    if w > 128 {
        return None;
    }
    mismatch128(p, key.low_u128(), w).map(|b| Bits::from_u128(w, b))
}

/// The key bits a hit on pattern `p` by `key` depends on ([`hit_mask128`]; the whole
/// pattern mask for keys over 128 bits).
pub(super) fn hit_mask(p: &Pattern, key: &Bits) -> Bits {
    let w = key.width();
    match w <= 128 {
        true => Bits::from_u128(w, hit_mask128(p, key.low_u128(), w)),
        false => pattern_mask(p, w),
    }
}

/// [`Pattern::matches`], on `u128`s for keys of at most 128 bits (no intermediate values):
/// patterns of another width compare after truncation or zero-extension to the key's
/// width, which keeps the low bits, and the low 128 bits of any value are `low_u128`.
pub(super) fn matches(p: &Pattern, key: &Bits) -> bool {
    let w = key.width();
    if w > 128 {
        return p.matches(key);
    }
    matches128(p, key.low_u128(), w)
}
