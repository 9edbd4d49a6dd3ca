//! The matchers' answers and masks, checked against the patterns one by one.

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
        let live = remove_some(&mut m, &pats, &removed);
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
/// Removes from `m` (holding entry `i` with patterns `pats[i]`) the entries `removed` picks
/// among those left; returns the indices left.
fn remove_some(
    m: &mut Matcher,
    pats: &[Vec<Pattern>],
    removed: &[prop::sample::Index],
) -> Vec<u32> {
    let mut live: Vec<u32> = (0..pats.len() as u32).collect();
    for r in removed {
        if live.is_empty() {
            break;
        }
        let i = live.swap_remove(r.index(live.len()));
        m.remove(&pats[i as usize], i);
    }
    live
}

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

proptest! {
    /// A one-field range table of disjoint ranges (cut from sorted points, some gaps left,
    /// some entries removed) is searched, not scanned: the same entry as the general scan
    /// for every key, a mask that is sound (every key agreeing on it looks up the same
    /// entry, or misses too) and never wider than the scan's. An overlapping range (or a
    /// non-range pattern) added makes the table scan again, with the same answers.
    #[test]
    fn disjoint_ranges_are_searched(
        width in prop::sample::select(vec![1u32, 8, 16, 32, 100, 128]),
        cuts in proptest::collection::btree_set(any::<u128>(), 0..40),
        gaps in any::<u64>(),
        removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        keys in proptest::collection::vec(any::<u128>(), 1..12),
        others in proptest::collection::vec(any::<u128>(), 1..8),
        spoil in 0u8..3,
    ) {
        let km = low_mask(width);
        let points: Vec<u128> = cuts.into_iter().map(|c| c & km).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        let mut m = Matcher::with_widths(LookupKind::Range, None, &[width]);
        let mut pats: Vec<Vec<Pattern>> = Vec::new();
        for (i, w) in points.windows(2).enumerate() {
            // Every other range a bit short of the next point, leaving a gap (when it can).
            let hi = if gaps >> (i % 64) & 1 == 1 && w[1] - w[0] >= 2 { w[1] - 2 } else { w[1] - 1 };
            let p = vec![Pattern::Range { lo: b(width, w[0]), hi: b(width, hi) }];
            m.insert(&p, (i % 3) as u32, i as u32);
            pats.push(p);
        }
        let mut live = remove_some(&mut m, &pats, &removed);
        let searched = |m: &Matcher| matches!(m, Matcher::Scan(l) if l.intervals.is_some());
        prop_assert!(searched(&m));
        // An entry that overlaps another (or is no range): scanned again.
        let extra = match spoil {
            1 if !points.is_empty() => Some(Pattern::Range { lo: b(width, points[0]), hi: b(width, points[0]) }),
            2 => Some(Pattern::Exact(b(width, keys[0] & km))),
            _ => None,
        };
        if let Some(p) = extra {
            // (The first point starts entry 0's range, if there is one and it is left.)
            let overlaps = spoil == 2 || live.contains(&0);
            let i = pats.len() as u32;
            m.insert(std::slice::from_ref(&p), 5, i);
            pats.push(vec![p]);
            live.push(i);
            prop_assert_eq!(searched(&m), !overlaps);
        }
        let Matcher::Scan(list) = &m else { panic!("scan expected") };
        let of = |i: u32| pats.get(i as usize).map(|p| &p[..]);
        let none = |_| None;
        for &key in &keys {
            let k = [b(width, key & km)];
            let (mut general, mut got) = (Vec::new(), Vec::new());
            let want = lookup_scan(&list.order, &k, of, Some(&mut general));
            let hit = m.lookup(&k, of, Some(&mut got));
            prop_assert_eq!(hit, want);
            let mask = got[0].low_u128();
            prop_assert_eq!(mask & !general[0].low_u128(), 0, "wider than the scan's");
            for &o in &others {
                let q = [b(width, (key & km & mask) | (o & km & !mask))];
                prop_assert_eq!(m.lookup(&q, none, None), hit, "key {:#x} mask {:#x}", key & km, mask);
            }
        }
    }
}

/// A consistent-hash ring of 640 arcs with gaps: every arc's points hit it, the gaps' miss,
/// and each answer's mask is the aligned block around the point, within its arc or gap.
#[test]
fn ring_lookups_are_searched() {
    let mut m = Matcher::with_widths(LookupKind::Range, None, &[32]);
    let step = u128::from(u32::MAX) / 640;
    for i in 0..640u128 {
        let (lo, hi) = (i * step, i * step + step / 2);
        m.insert(
            &[Pattern::Range {
                lo: b(32, lo),
                hi: b(32, hi),
            }],
            0,
            i as u32,
        );
    }
    let Matcher::Scan(list) = &m else {
        panic!("scan expected")
    };
    assert!(list.intervals.is_some());
    let none = |_| None;
    let mut masks = Vec::new();
    for i in 0..640u128 {
        for (point, hit) in [
            (i * step + 3, Some(i as u32)),
            (i * step + step / 2 + 2, None),
        ] {
            assert_eq!(
                m.lookup(&[b(32, point)], none, Some(&mut masks)),
                hit,
                "{point:#x}"
            );
            let mask = masks[0].low_u128();
            let (first, last) = (point & mask, point | (!mask & u128::from(u32::MAX)));
            let (lo, hi) = match hit {
                Some(_) => (i * step, i * step + step / 2),
                None => (
                    i * step + step / 2 + 1,
                    ((i + 1) * step - 1).min(u128::from(u32::MAX)),
                ),
            };
            assert!(
                lo <= first && last <= hi,
                "{point:#x} {mask:#x} [{lo:#x}, {hi:#x}]"
            );
        }
    }
}
