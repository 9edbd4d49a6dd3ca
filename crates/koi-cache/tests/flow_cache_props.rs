//! The flow cache with all its tiers (microflow, signature cache, classifier) against the
//! linear-scan reference: whatever serves a lookup, the answer is a live megaflow that matches
//! the key, and there is one exactly when the reference has one. The tiers are made tiny so
//! that signatures collide, hints go stale through removals and evictions, and slots are
//! reused by other megaflows.

use koi_cache::{ClassifierConfig, FlowCache, MegaflowId, MicroflowConfig, Reference, Tier};
use proptest::prelude::*;
use std::collections::BTreeMap;

const WIDTH: usize = 2;

#[derive(Clone, Debug)]
enum Op {
    /// Install (mask index, key, tag).
    Install(usize, [u64; WIDTH], u32),
    /// Remove the megaflows with a tag.
    RemoveTag(u32),
    /// Look up a key: an installed one (by index, with a bit flipped or not) or a random one.
    Lookup(usize, Option<(usize, u32)>, [u64; WIDTH]),
}

fn small_word() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..4, any::<u64>()]
}

fn op() -> impl Strategy<Value = Op> {
    let key = || [small_word(), small_word()];
    prop_oneof![
        3 => (0usize..4, key(), 0u32..3).prop_map(|(m, k, t)| Op::Install(m, k, t)),
        1 => (0u32..3).prop_map(Op::RemoveTag),
        8 => (any::<usize>(), proptest::option::of((0usize..WIDTH, 0u32..64)), key())
            .prop_map(|(i, f, k)| Op::Lookup(i, f, k)),
    ]
}

const MASKS: [[u64; WIDTH]; 4] = [[u64::MAX, u64::MAX], [u64::MAX, 0], [0xff, 0xf0], [0, 0]];

fn masked(key: &[u64], mask: &[u64]) -> Vec<u64> {
    key.iter().zip(mask).map(|(k, m)| k & m).collect()
}

/// Runs `ops` through a flow cache with `limit` megaflows, a 4-entry microflow tier (or
/// none) and a signature cache of `signatures` entries, and through the reference. Megaflows
/// that overlap get equal values, as koi's do (each is right for every key it matches).
fn run(ops: &[Op], limit: usize, microflow: bool, signatures: usize) {
    let mut config = ClassifierConfig::new(WIDTH);
    config.max_megaflows = limit;
    config.seed = Some(3);
    let mut m = MicroflowConfig::new(WIDTH);
    m.entries = 4;
    m.insert_inv_prob = 1;
    let mut fc: FlowCache<u32> = FlowCache::new(&config, microflow.then_some(&m))
        .expect("valid config")
        .with_signatures(signatures);
    let mut reference: Reference<u32> = Reference::new(WIDTH);
    // Live megaflows: id -> (mask, masked key, value).
    let mut live: BTreeMap<MegaflowId, (Vec<u64>, Vec<u64>, u32)> = BTreeMap::new();
    let mut keys: Vec<[u64; WIDTH]> = Vec::new();
    let mut next_value = 1u32;
    for op in ops {
        match op {
            Op::Install(mi, key, tag) => {
                let mask = &MASKS[*mi];
                let mk = masked(key, mask);
                let mut value = None;
                let mut clash = false;
                for (lm, lk, v) in live.values() {
                    let same = lm[..] == mask[..] && *lk == mk;
                    let both: Vec<u64> = lm.iter().zip(mask).map(|(a, b)| a & b).collect();
                    if !same
                        && masked(lk, &both) == masked(&mk, &both)
                        && value.replace(*v).is_some_and(|x| x != *v)
                    {
                        clash = true;
                    }
                }
                if clash {
                    continue;
                }
                let value = value.unwrap_or_else(|| {
                    next_value += 1;
                    next_value
                });
                let ins = fc.install(mask, key, value, &[*tag]).expect("install");
                if let Some(gone) = ins.evicted {
                    let (gm, gk, _) = live.remove(&gone.id).expect("evicted a live megaflow");
                    assert_eq!(reference.remove(&gm, &gk), Some(gone.value));
                }
                reference.insert(mask, key, value, &[*tag]);
                live.insert(ins.id, (mask.to_vec(), mk, value));
                keys.push(*key);
            }
            Op::RemoveTag(tag) => {
                let n = fc.classifier_mut().remove_tagged(*tag);
                assert_eq!(n, reference.remove_tagged(*tag));
                live.retain(|id, _| fc.classifier().get(*id).is_some());
            }
            Op::Lookup(i, flip, random) => {
                let mut key = if keys.is_empty() {
                    *random
                } else {
                    keys[i % keys.len()]
                };
                if let Some((w, b)) = flip {
                    key[*w] ^= 1 << b;
                }
                let want = reference.lookup(&key).copied();
                match fc.lookup(&key).map(|(id, v, tier)| (id, *v, tier)) {
                    Some((id, v, tier)) => {
                        let (lm, lk, lv) = live.get(&id).expect("a live megaflow");
                        assert_eq!(masked(&key, lm), *lk, "{tier:?}: not a match for {key:?}");
                        assert_eq!(v, *lv);
                        assert_eq!(Some(v), want, "{tier:?} for {key:?}");
                        if !microflow {
                            assert_eq!(tier, Tier::Megaflow);
                        }
                    }
                    None => assert_eq!(want, None, "no tier found the megaflow for {key:?}"),
                }
            }
        }
        assert_eq!(fc.classifier().len(), reference.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_tier_answers_like_the_reference(
        ops in prop::collection::vec(op(), 1..120),
        limit in 1usize..6,
        microflow in any::<bool>(),
        signatures in prop_oneof![Just(0usize), Just(4), Just(64)],
    ) {
        run(&ops, limit, microflow, signatures);
    }
}

/// The microflow tier is bypassed while it misses and comes back once the traffic narrows.
#[test]
fn microflow_bypass_follows_the_hit_rate() {
    let mut config = ClassifierConfig::new(WIDTH);
    config.seed = Some(1);
    let mut m = MicroflowConfig::new(WIDTH);
    m.entries = 64;
    m.insert_inv_prob = 1;
    let mut fc: FlowCache<u32> = FlowCache::new(&config, Some(&m))
        .expect("valid config")
        .with_signatures(1 << 16);
    fc.install(&[0, 0], &[0, 0], 1, &[]).expect("install");
    // 10,000 distinct keys round-robin: far more than 64 microflow entries.
    for round in 0..3u64 {
        for k in 0..10_000u64 {
            assert!(fc.lookup(&[k, round]).is_some());
        }
    }
    assert!(
        fc.microflow_bypassed(),
        "a ~1% hit rate must bypass the tier"
    );
    let skipped = fc.bypassed_lookups();
    assert!(skipped > 20_000, "{skipped} lookups skipped it");
    // One key from now on: the sampled probes insert it and see hits, and the tier returns.
    for _ in 0..(koi_cache::flow_cache::WINDOW * koi_cache::flow_cache::SAMPLE * 2) {
        fc.lookup(&[7, 7]);
    }
    assert!(
        !fc.microflow_bypassed(),
        "a 100% hit rate brings the tier back"
    );
    assert_eq!(fc.lookup(&[7, 7]).map(|(_, _, t)| t), Some(Tier::Microflow));
    assert!(fc.signatures().is_some_and(|s| s.stats().hits > 0));
}

/// Without a signature cache the microflow tier is never bypassed (the classifier's search
/// is what a miss would cost).
#[test]
fn no_bypass_without_signatures() {
    let mut config = ClassifierConfig::new(WIDTH);
    config.seed = Some(1);
    let mut m = MicroflowConfig::new(WIDTH);
    m.entries = 64;
    let mut fc: FlowCache<u32> = FlowCache::new(&config, Some(&m)).expect("valid config");
    fc.install(&[0, 0], &[0, 0], 1, &[]).expect("install");
    for k in 0..20_000u64 {
        assert!(fc.lookup(&[k, 0]).is_some());
    }
    assert!(!fc.microflow_bypassed());
    assert_eq!(fc.bypassed_lookups(), 0);
}
