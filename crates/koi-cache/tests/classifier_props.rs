//! Property tests: the classifier against the linear-scan reference, staged against unstaged.

use koi_cache::{Classifier, ClassifierConfig, Inserted, MegaflowId, Reference};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Range;

/// One step of a test scenario.
#[derive(Clone, Debug)]
enum Op {
    /// Insert `key & masks[mask]` with `value` and `tags`.
    Insert {
        mask: usize,
        key: Vec<u64>,
        value: u32,
        tags: Vec<u32>,
    },
    /// Remove the `n`-th live megaflow (modulo their number).
    Remove(usize),
    /// Remove every megaflow tagged `tag`.
    RemoveTag(u32),
    /// Look up the `base`-th inserted key (or `key` if none) with one bit flipped, or
    /// unchanged if `flip` is `None`.
    Lookup {
        base: usize,
        key: Vec<u64>,
        flip: Option<(usize, u32)>,
    },
    Clear,
}

/// A key word: mostly from a tiny alphabet so that keys collide under masks.
fn word() -> impl Strategy<Value = u64> + Clone {
    prop_oneof![4 => 0..4u64, 1 => any::<u64>()]
}

fn mask_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        3 => Just(u64::MAX),
        1 => Just(0xff),
        1 => Just(0xffff_0000),
        1 => (0..64u32).prop_map(|b| 1u64 << b),
        1 => any::<u64>(),
    ]
}

fn op(width: usize, masks: usize) -> impl Strategy<Value = Op> {
    let key = prop::collection::vec(word(), width);
    prop_oneof![
        6 => (0..masks, key.clone(), 0..1000u32, prop::collection::vec(0..6u32, 0..4))
            .prop_map(|(mask, key, value, tags)| Op::Insert { mask, key, value, tags }),
        2 => any::<usize>().prop_map(Op::Remove),
        1 => (0..6u32).prop_map(Op::RemoveTag),
        8 => (any::<usize>(), key, prop::option::of((0..width, 0..64u32)))
            .prop_map(|(base, key, flip)| Op::Lookup { base, key, flip }),
        1 => Just(Op::Clear),
    ]
}

/// A scenario: key width, mask pool, operations.
fn scenario(max_masks: usize) -> impl Strategy<Value = (usize, Vec<Vec<u64>>, Vec<Op>)> {
    (1..=5usize, 1..=max_masks).prop_flat_map(|(width, n)| {
        let masks = prop::collection::vec(prop::collection::vec(mask_word(), width), n);
        (
            Just(width),
            masks,
            prop::collection::vec(op(width, n), 1..200),
        )
    })
}

/// Whether megaflows `(m1, k1)` and `(m2, k2)` share a matching key.
fn overlap(m1: &[u64], k1: &[u64], m2: &[u64], k2: &[u64]) -> bool {
    (0..m1.len()).all(|i| (k1[i] ^ k2[i]) & m1[i] & m2[i] == 0)
}

fn masked(key: &[u64], mask: &[u64]) -> Vec<u64> {
    key.iter().zip(mask).map(|(k, m)| k & m).collect()
}

/// The classifier and the reference side by side.
struct Harness {
    cls: Classifier<u32>,
    reference: Reference<u32>,
    /// Live megaflows: id → (mask, masked key, value).
    live: BTreeMap<MegaflowId, (Vec<u64>, Vec<u64>, u32)>,
    keys: Vec<Vec<u64>>,
    /// Generate megaflows so that overlapping ones have equal values (koi's guarantee).
    disjoint: bool,
}

impl Harness {
    fn new(width: usize, stages: Vec<Range<usize>>, limit: usize, disjoint: bool) -> Self {
        let mut config = ClassifierConfig::new(width);
        config.stages = stages;
        config.max_megaflows = limit;
        config.resort_interval = 7;
        config.seed = Some(42);
        Harness {
            cls: Classifier::new(&config).expect("valid config"),
            reference: Reference::new(width),
            live: BTreeMap::new(),
            keys: Vec::new(),
            disjoint,
        }
    }

    /// The value to insert for `(mask, key)`: `value`, or that of the megaflows it overlaps;
    /// `None` if those disagree.
    fn value_for(&self, mask: &[u64], key: &[u64], value: u32) -> Option<u32> {
        if !self.disjoint {
            return Some(value);
        }
        let mk = masked(key, mask);
        let mut found = None;
        for (m, k, v) in self.live.values() {
            let same = *m == *mask && *k == mk;
            if !same && overlap(m, k, mask, &mk) && found.replace(*v).is_some_and(|f| f != *v) {
                return None;
            }
        }
        Some(found.unwrap_or(value))
    }

    /// Applies `op`; returns the lookup result, if it was a lookup.
    fn apply(&mut self, masks: &[Vec<u64>], op: &Op) -> Option<Option<(MegaflowId, u32)>> {
        match op {
            Op::Insert {
                mask,
                key,
                value,
                tags,
            } => self.insert(&masks[*mask], key, *value, tags),
            Op::Remove(n) => self.remove(*n),
            Op::RemoveTag(tag) => self.remove_tag(*tag),
            Op::Lookup { base, key, flip } => return Some(self.lookup(*base, key, *flip)),
            Op::Clear => {
                assert_eq!(self.cls.clear(), self.reference.len());
                self.reference.clear();
                self.live.clear();
            }
        }
        assert_eq!(self.cls.len(), self.reference.len());
        assert!(self.cls.len() <= self.cls.limit());
        None
    }

    fn insert(&mut self, mask: &[u64], key: &[u64], value: u32, tags: &[u32]) {
        let Some(value) = self.value_for(mask, key, value) else {
            return;
        };
        self.keys.push(key.to_vec());
        let Inserted {
            id,
            replaced,
            evicted,
        } = self.cls.insert(mask, key, value, tags).expect("insert");
        if let Some(gone) = evicted {
            let (m, k, v) = self.live.remove(&gone.id).expect("evicted a live megaflow");
            assert_eq!(gone.value, v);
            assert_eq!(self.reference.remove(&m, &k), Some(v));
        }
        assert_eq!(replaced, self.reference.insert(mask, key, value, tags));
        self.live
            .insert(id, (mask.to_vec(), masked(key, mask), value));
    }

    fn remove(&mut self, n: usize) {
        let Some(&id) = self.live.keys().nth(n % self.live.len().max(1)) else {
            return;
        };
        let (m, k, v) = self.live.remove(&id).expect("live");
        let removed = self.cls.remove(id).expect("classifier has it");
        assert_eq!(removed.value, v);
        assert_eq!(self.reference.remove(&m, &k), Some(v));
        assert!(self.cls.get(id).is_none());
    }

    fn remove_tag(&mut self, tag: u32) {
        let n = self.cls.remove_tagged(tag);
        assert_eq!(n, self.reference.remove_tagged(tag));
        let cls = &self.cls;
        self.live.retain(|id, _| cls.get(*id).is_some());
        assert_eq!(cls.tagged_count(tag), 0);
    }

    fn lookup(
        &mut self,
        base: usize,
        key: &[u64],
        flip: Option<(usize, u32)>,
    ) -> Option<(MegaflowId, u32)> {
        let mut key = match self.keys.len() {
            0 => key.to_vec(),
            n => self.keys[base % n].clone(),
        };
        if let Some((w, b)) = flip {
            key[w] ^= 1 << b;
        }
        let found = self.cls.lookup(&key).map(|(id, v)| (id, *v));
        assert_eq!(found, self.cls.find(&key).map(|(id, v)| (id, *v)));
        match found {
            Some((id, v)) => {
                let (m, k, lv) = self.live.get(&id).expect("a live megaflow");
                assert_eq!(v, *lv);
                assert_eq!(self.cls.mask(id), Some(&m[..]));
                assert_eq!(masked(&key, m), *k, "the megaflow matches the key");
                if self.disjoint {
                    assert_eq!(self.reference.lookup(&key), Some(&v));
                } else {
                    assert!(self.reference.matching(&key).any(|rv| *rv == v));
                }
            }
            None => assert_eq!(self.reference.lookup(&key), None),
        }
        found
    }
}

fn run(width: usize, masks: &[Vec<u64>], ops: &[Op], limit: usize, disjoint: bool) {
    let mut h = Harness::new(width, Vec::new(), limit, disjoint);
    for op in ops {
        h.apply(masks, op);
    }
}

/// Anything of any length: the caches must neither panic nor misbehave on wrong widths.
fn ragged() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(word(), 0..7)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Masks, keys and lookups of arbitrary widths: wrong widths are errors or misses, never
    /// panics, and never disturb the megaflows of the right width.
    #[test]
    fn wrong_widths_are_rejected(
        ops in prop::collection::vec((ragged(), ragged(), ragged(), any::<u64>()), 1..60),
    ) {
        let mut c: Classifier<usize> = Classifier::new(&ClassifierConfig::new(3)).expect("valid");
        let mut m = koi_cache::Microflow::new(&{
            let mut m = koi_cache::MicroflowConfig::new(3);
            m.entries = 16;
            m.insert_inv_prob = 1;
            m
        })
        .expect("valid");
        let mut good = 0;
        for (n, (mask, key, probe, hash)) in ops.iter().enumerate() {
            let r = c.insert(mask, key, n, &[n as u32 % 3]);
            prop_assert_eq!(r.is_ok(), mask.len() == 3 && key.len() == 3);
            good += usize::from(r.is_ok_and(|i| i.replaced.is_none()));
            prop_assert_eq!(c.len(), good);
            let found = c.lookup(probe);
            prop_assert!(found.is_none() || probe.len() == 3);
            m.insert(probe, *hash, MegaflowId::from_bits(*hash));
            let cached = m.lookup(probe, *hash);
            prop_assert!(cached.is_none() || probe.len() == 3);
        }
    }

    /// Few masks, non-overlapping megaflows: the classifier finds exactly what the scan does.
    #[test]
    fn agrees_with_reference_few_masks((width, masks, ops) in scenario(3)) {
        run(width, &masks, &ops, 1 << 20, true);
    }

    /// Many masks, non-overlapping megaflows.
    #[test]
    fn agrees_with_reference_many_masks((width, masks, ops) in scenario(40)) {
        run(width, &masks, &ops, 1 << 20, true);
    }

    /// Overlapping megaflows with different values (which koi never produces): every hit is
    /// still a live megaflow that matches, and misses agree.
    #[test]
    fn hits_are_matching_megaflows_with_overlaps((width, masks, ops) in scenario(12)) {
        run(width, &masks, &ops, 1 << 20, false);
    }

    /// A small limit: evictions happen, the bound holds, and what remains agrees.
    #[test]
    fn agrees_with_reference_under_eviction(
        (width, masks, ops) in scenario(8),
        limit in 1..12usize,
    ) {
        run(width, &masks, &ops, limit, true);
    }

    /// Per-word stages, one stage, and stages in a permuted order all answer alike.
    #[test]
    fn staged_lookup_equals_unstaged((width, masks, ops) in scenario(12)) {
        let permuted: Vec<Range<usize>> = (0..width).rev().map(|w| w..w + 1).collect();
        let whole: Vec<Range<usize>> = std::iter::once(0..width).collect();
        let halves = if width > 1 {
            vec![width / 2..width, 0..width / 2]
        } else {
            whole.clone()
        };
        let mut hs = [
            Harness::new(width, Vec::new(), 1 << 20, true),
            Harness::new(width, whole, 1 << 20, true),
            Harness::new(width, permuted, 1 << 20, true),
            Harness::new(width, halves, 1 << 20, true),
        ];
        for op in &ops {
            let results: Vec<_> = hs.iter_mut().map(|h| h.apply(&masks, op)).collect();
            prop_assert!(results.iter().all(|r| *r == results[0]), "{results:?}");
        }
        prop_assert_eq!(hs[1].cls.stats().stage_skips, 0);
    }
}
