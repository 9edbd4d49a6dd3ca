//! The microflow cache: hits, stale megaflows, generation invalidation, and the insertion
//! policy under 10k round-robin flows.

use koi_cache::{
    ClassifierConfig, FlowCache, KeyHasher, MegaflowId, Microflow, MicroflowConfig, Tier,
};

const WIDTH: usize = 3;

fn flow_key(i: u64) -> [u64; WIDTH] {
    [i, i.wrapping_mul(0x9e37_79b9_7f4a_7c15), 7]
}

fn flow_cache(inv_prob: u32) -> FlowCache<u64> {
    let mut c = ClassifierConfig::new(WIDTH);
    c.seed = Some(11);
    let mut m = MicroflowConfig::new(WIDTH);
    m.insert_inv_prob = inv_prob;
    FlowCache::new(&c, Some(&m)).expect("valid config")
}

#[test]
fn hits_after_insert_stale_after_removal_and_invalidation() {
    let mut fc = flow_cache(1);
    let key = flow_key(1);
    assert!(fc.lookup(&key).is_none(), "empty: upcall");
    let id = fc
        .install(&[u64::MAX, 0, 0], &key, 10, &[4])
        .expect("install")
        .id;
    assert_eq!(fc.lookup(&key), Some((id, &10, Tier::Microflow)));
    assert_eq!(
        fc.classifier().hits(id),
        Some(1),
        "microflow hits are credited"
    );

    // Invalidate the megaflow: the microflow entry is stale and must not be used.
    assert_eq!(fc.classifier_mut().remove_tagged(4), 1);
    assert!(fc.lookup(&key).is_none());
    assert_eq!(fc.stale_hits(), 1);

    // A new megaflow for the same packet (another id) refreshes the entry in place.
    let id2 = fc
        .install(&[u64::MAX, 0, 0], &key, 20, &[4])
        .expect("install")
        .id;
    assert_ne!(id, id2);
    assert_eq!(fc.lookup(&key), Some((id2, &20, Tier::Microflow)));

    // A megaflow that the microflow does not know yet serves other keys of the megaflow.
    let other = [1, 99, 99];
    assert_eq!(fc.lookup(&other), Some((id2, &20, Tier::Megaflow)));
    assert_eq!(fc.lookup(&other), Some((id2, &20, Tier::Microflow)));

    // Generation bump: everything leaves the microflow tier, the megaflow still serves.
    fc.microflow_mut().expect("enabled").invalidate_all();
    assert_eq!(fc.lookup(&key), Some((id2, &20, Tier::Megaflow)));
    assert_eq!(fc.stale_hits(), 1);
}

#[test]
fn evicted_megaflow_makes_its_microflow_entry_stale() {
    let mut c = ClassifierConfig::new(WIDTH);
    c.max_megaflows = 1;
    let mut m = MicroflowConfig::new(WIDTH);
    m.insert_inv_prob = 1;
    let mut fc: FlowCache<u64> = FlowCache::new(&c, Some(&m)).expect("valid config");
    let (a, b) = (flow_key(1), flow_key(2));
    let id_a = fc
        .install(&[u64::MAX; WIDTH], &a, 1, &[])
        .expect("install")
        .id;
    assert_eq!(fc.lookup(&a), Some((id_a, &1, Tier::Microflow)));
    let r = fc.install(&[u64::MAX; WIDTH], &b, 2, &[]).expect("install");
    assert_eq!(
        r.evicted.map(|e| (e.id, e.value, e.hits)),
        Some((id_a, 1, 1))
    );
    assert!(fc.lookup(&a).is_none(), "a stale microflow entry is a miss");
    assert_eq!(fc.stale_hits(), 1);
    assert_eq!(fc.lookup(&b), Some((r.id, &2, Tier::Microflow)));
}

#[test]
fn replaced_megaflow_keeps_id_and_serves_new_value() {
    let mut fc = flow_cache(1);
    let key = flow_key(5);
    let id = fc
        .install(&[u64::MAX; WIDTH], &key, 1, &[])
        .expect("install")
        .id;
    assert_eq!(fc.lookup(&key), Some((id, &1, Tier::Microflow)));
    let again = fc
        .install(&[u64::MAX; WIDTH], &key, 2, &[])
        .expect("install");
    assert_eq!((again.id, again.replaced), (id, Some(1)));
    assert_eq!(fc.lookup(&key), Some((id, &2, Tier::Microflow)));
}

/// Runs `flows` flows round-robin through a bare microflow cache, inserting on every miss
/// (subject to the policy); returns the hit rate over `measure` rounds after `warm` rounds.
fn round_robin_hit_rate(
    (inv_prob, ways): (u32, usize),
    flows: u64,
    warm: usize,
    measure: usize,
) -> f64 {
    let mut config = MicroflowConfig::new(WIDTH);
    config.insert_inv_prob = inv_prob;
    config.ways = ways;
    let mut m = Microflow::new(&config).expect("valid config");
    let hasher = KeyHasher::with_seed(5);
    let keys: Vec<_> = (0..flows)
        .map(|i| (flow_key(i), hasher.hash(&flow_key(i))))
        .collect();
    let id = MegaflowId::from_bits(1);
    for round in 0..warm + measure {
        if round == warm {
            m.reset_stats();
        }
        for (key, hash) in &keys {
            if m.lookup(key, *hash).is_none() {
                m.insert(key, *hash, id);
            }
        }
    }
    assert!(m.occupancy() <= m.capacity());
    m.stats().hit_rate()
}

/// What the policy predicts for round-robin traffic once warm: every set of `w` ways caches
/// `min(k, w)` of its `k` flows; with insertion probability `p`, each round a set with
/// `k > w` flows sees about `(k - w) p` replacements, and half of them cost a hit that round.
fn predicted_hit_rate((inv_prob, ways): (u32, usize), flows: u64) -> f64 {
    let mut config = MicroflowConfig::new(WIDTH);
    config.ways = ways;
    let m = Microflow::new(&config).expect("valid config");
    let hasher = KeyHasher::with_seed(5);
    let mut per_set = vec![0u32; m.capacity() / ways];
    for i in 0..flows {
        per_set[m.set_index(hasher.hash(&flow_key(i)))] += 1;
    }
    let w = ways as u32;
    let cached: u32 = per_set.iter().map(|&k| k.min(w)).sum();
    let excess: u32 = per_set.iter().map(|&k| k.saturating_sub(w)).sum();
    let p = 1.0 / f64::from(inv_prob);
    (f64::from(cached) - 0.5 * p * f64::from(excess)) / flows as f64
}

#[test]
fn ten_thousand_round_robin_flows_do_not_thrash() {
    let flows = 10_000;
    for ways in [2, 4] {
        let predicted = predicted_hit_rate((100, ways), flows);
        let measured = round_robin_hit_rate((100, ways), flows, 500, 40);
        let always = round_robin_hit_rate((1, ways), flows, 20, 40);
        eprintln!(
            "10k flows round-robin, 8192 entries, {ways} ways: insert 1/100 -> hit rate \
             {measured:.4} (predicted {predicted:.4}); insert always -> {always:.4}"
        );
        assert!(
            (measured - predicted).abs() < 0.01,
            "{measured} vs {predicted}"
        );
        assert!(
            always < measured - 0.15,
            "always-insert should thrash: {always}"
        );
    }
}

#[test]
fn fewer_flows_than_entries_all_hit() {
    // 1,000 flows in 4,096 sets: a set rarely gets more than 2, so almost all are cached.
    let predicted = predicted_hit_rate((100, 2), 1000);
    let measured = round_robin_hit_rate((100, 2), 1000, 1500, 20);
    assert!(predicted > 0.99);
    assert!(
        (measured - predicted).abs() < 0.01,
        "{measured} vs {predicted}"
    );
}
