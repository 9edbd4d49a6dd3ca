//! Unit tests of the classifier's bookkeeping; the property tests are in `tests/`.

use super::*;

fn classifier(width: usize, limit: usize) -> Classifier<u32> {
    let mut config = ClassifierConfig::new(width);
    config.max_megaflows = limit;
    config.seed = Some(7);
    Classifier::new(&config).unwrap_or_else(|e| panic!("{e}"))
}

fn id_of(r: Result<Inserted<u32>, InsertError>) -> MegaflowId {
    r.unwrap_or_else(|e| panic!("{e}")).id
}

#[test]
fn insert_lookup_remove() {
    let mut c = classifier(3, 16);
    let a = id_of(c.insert(&[u64::MAX, 0, 0], &[1, 5, 5], 10, &[1]));
    let b = id_of(c.insert(&[u64::MAX, 0xff, 0], &[2, 0x7, 5], 20, &[1, 2]));
    assert_eq!(c.len(), 2);
    assert_eq!(c.subtable_count(), 2);
    assert_eq!(c.lookup(&[1, 9, 9]), Some((a, &10)));
    assert_eq!(c.lookup(&[2, 0x107, 0]), Some((b, &20)));
    assert_eq!(c.lookup(&[2, 0x108, 0]), None);
    assert_eq!(c.lookup(&[1, 9]), None, "wrong width misses");
    assert_eq!(c.hits(a), Some(1));
    let removed = c.remove(a).unwrap_or_else(|| panic!("a is live"));
    assert_eq!((removed.id, removed.value, removed.hits), (a, 10, 1));
    assert_eq!(c.get(a), None);
    assert_eq!(c.remove(a), None);
    assert_eq!(c.subtable_count(), 1, "the emptied subtable is dropped");
    assert_eq!(c.lookup(&[1, 9, 9]), None);
    let s = c.stats();
    assert_eq!((s.lookups, s.hits, s.misses), (5, 2, 3));
}

#[test]
fn same_masked_key_replaces() {
    let mut c = classifier(2, 16);
    let a = id_of(c.insert(&[0xf, 0], &[0x31, 0], 1, &[1]));
    let r = c.insert(&[0xf, 0], &[0x21, 7], 2, &[2]);
    assert_eq!(
        r,
        Ok(Inserted {
            id: a,
            replaced: Some(1),
            evicted: None
        })
    );
    assert_eq!(c.len(), 1);
    assert_eq!(c.tagged_count(1), 0);
    assert_eq!(c.tagged_count(2), 1);
    assert_eq!(c.find(&[1, 1]), Some((a, &2)));
}

#[test]
fn tags_invalidate() {
    let mut c = classifier(1, 64);
    let ids: Vec<_> = (0..20u64)
        .map(|i| id_of(c.insert(&[u64::MAX], &[i], i as u32, &[(i % 3) as u32, 9, 9])))
        .collect();
    assert_eq!(
        c.tags(ids[4]).map(|t| t.collect::<Vec<_>>()),
        Some(vec![1, 9])
    );
    assert_eq!(c.remove_tagged(1), 7);
    assert_eq!(c.len(), 13);
    assert_eq!(c.tagged_count(9), 13);
    assert!(c.get(ids[4]).is_none());
    let mut values = Vec::new();
    assert_eq!(c.remove_tagged_with(9, |r| values.push(r.value)), 13);
    values.sort_unstable();
    assert_eq!(values, vec![0, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]);
    assert!(c.is_empty());
    assert_eq!(c.subtable_count(), 0);
    assert_eq!(c.remove_tagged(9), 0);
}

#[test]
fn full_without_eviction_fails_and_zero_limit_fails() {
    let mut config = ClassifierConfig::new(1);
    config.max_megaflows = 2;
    config.evict_when_full = false;
    let mut c: Classifier<u8> = Classifier::new(&config).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.insert(&[1], &[0], 0, &[]).is_ok());
    assert!(c.insert(&[1], &[1], 0, &[]).is_ok());
    assert_eq!(
        c.insert(&[1], &[0], 5, &[]).map(|i| i.replaced),
        Ok(Some(0))
    );
    assert_eq!(c.insert(&[2], &[0], 0, &[]), Err(InsertError::Full));
    let mut z = classifier(1, 0);
    assert_eq!(z.insert(&[1], &[0], 0, &[]), Err(InsertError::Full));
    assert!(matches!(
        z.insert(&[1, 1], &[0], 0, &[]),
        Err(InsertError::WidthMismatch { .. })
    ));
}

#[test]
fn eviction_spares_megaflows_hit_since_their_insert() {
    let mut c = classifier(1, 4);
    let ids: Vec<_> = (0..4u64)
        .map(|i| id_of(c.insert(&[u64::MAX], &[i], i as u32, &[])))
        .collect();
    assert!(c.lookup(&[0]).is_some());
    assert!(c.hit(ids[2]).is_some());
    let r = c.insert(&[u64::MAX], &[10], 10, &[]);
    let evicted = r.map(|i| i.evicted.map(|e| e.value));
    assert_eq!(evicted, Ok(Some(1)));
    assert_eq!(c.len(), 4);
    assert_eq!(c.stats().evictions, 1);
}

#[test]
fn catch_all_mask_and_clear() {
    let mut c = classifier(2, 8);
    let a = id_of(c.insert(&[0, 0], &[3, 4], 1, &[5]));
    assert_eq!(c.lookup(&[9, 9]), Some((a, &1)));
    assert_eq!(c.clear(), 1);
    assert_eq!(c.get(a), None);
    assert_eq!(c.lookup(&[9, 9]), None);
    assert_eq!(c.subtable_count(), 0);
    assert_eq!(c.tagged_count(5), 0);
    let b = id_of(c.insert(&[0, 0], &[3, 4], 1, &[5]));
    assert_ne!(a, b, "a reused slot gets a new generation");
}

#[test]
fn ranking_moves_busy_subtables_first() {
    let mut config = ClassifierConfig::new(2);
    config.resort_interval = 16;
    config.seed = Some(1);
    let mut c: Classifier<u8> = Classifier::new(&config).unwrap_or_else(|e| panic!("{e}"));
    let a = id_of_u8(c.insert(&[u64::MAX, 0xff], &[1, 0], 1, &[]));
    let b = id_of_u8(c.insert(&[0xff, u64::MAX], &[0, 2], 2, &[]));
    assert_eq!(c.subtable_rank(b), Some(1));
    assert_eq!(c.subtable_is_staged(b), Some(true));
    for _ in 0..32 {
        assert!(c.lookup(&[0, 2]).is_some());
    }
    assert_eq!(c.subtable_rank(b), Some(0));
    assert_eq!(c.subtable_rank(a), Some(1));
    assert!(c.stats().resorts >= 1);
    // The busy subtable stops checking stage filters; the one that only missed keeps them.
    assert_eq!(c.subtable_is_staged(b), Some(false));
    assert_eq!(c.subtable_is_staged(a), Some(true));
}

fn id_of_u8(r: Result<Inserted<u8>, InsertError>) -> MegaflowId {
    r.unwrap_or_else(|e| panic!("{e}")).id
}

#[test]
fn stages_skip_subtables() {
    let mut c = classifier(4, 64);
    for i in 0..8u64 {
        id_of(c.insert(&[u64::MAX; 4], &[1, 2, 3, i], i as u32, &[]));
    }
    assert!(c.lookup(&[9, 2, 3, 1]).is_none());
    assert_eq!(c.stats().stage_skips, 1);
    assert!(c.lookup(&[1, 2, 3, 9]).is_none());
    assert_eq!(
        c.stats().stage_skips,
        1,
        "the last stage is the table itself"
    );
    assert_eq!(c.lookup(&[1, 2, 3, 5]).map(|(_, v)| *v), Some(5));
}

#[test]
fn a_churn_of_new_flows_never_evicts_an_established_one() {
    // 64 slots: 8 established flows, each hit once every 1,000 inserts of one-packet flows
    // (a flood far faster than the table turns over).
    let limit = 64;
    let mut c = classifier(1, limit);
    let established: Vec<_> = (0..8u64)
        .map(|i| id_of(c.insert(&[u64::MAX], &[i], i as u32, &[])))
        .collect();
    for &id in &established {
        assert!(c.hit(id).is_some(), "promoted by a first hit");
    }
    for n in 0..20_000u64 {
        let key = 1_000_000 + n;
        let r = c.insert(&[u64::MAX], &[key], 0, &[]);
        if let Ok(Some(e)) = r.as_ref().map(|i| i.evicted.as_ref()) {
            assert!(
                e.value == 0,
                "an established flow (value {}) was evicted",
                e.value
            );
        }
        if n % 1_000 == 0 {
            for (i, &id) in established.iter().enumerate() {
                assert_eq!(c.lookup(&[i as u64]).map(|(x, _)| x), Some(id));
            }
        }
    }
    assert_eq!(c.len(), limit);
    assert_eq!(c.stats().evictions, c.stats().probation_evictions);
    assert_eq!(c.on_probation(), limit - 8);
}

#[test]
fn a_new_flow_hit_again_while_on_probation_stays() {
    let limit = 64;
    let mut c = classifier(1, limit);
    for i in 0..limit as u64 {
        let _ = c.insert(&[u64::MAX], &[i], 0, &[]);
    }
    // A new flow among the churn, hit again after 4 more inserts: promoted, never evicted.
    let mut keep = None;
    for n in 0..5_000u64 {
        let key = 1_000 + n;
        let r = c.insert(&[u64::MAX], &[key], 1, &[]);
        if n == 100 {
            keep = r.ok().map(|i| i.id);
        }
        if n == 104 {
            assert!(keep.is_some_and(|id| c.hit(id).is_some()));
        }
    }
    assert!(keep.is_some_and(|id| c.get(id).is_some()));
}

#[test]
fn among_promoted_flows_the_least_hit_go_first() {
    // Every flow promoted, all hit again and again, but a busy eighth ten times as often: the
    // evictions (with nothing on probation) take the others.
    let limit = 64;
    let mut c = classifier(1, limit);
    let ids: Vec<_> = (0..limit as u64)
        .map(|i| id_of(c.insert(&[u64::MAX], &[i], i as u32, &[])))
        .collect();
    let busy = |i: usize| i.is_multiple_of(8);
    let mut evicted = Vec::new();
    for round in 0..200u64 {
        for (i, &id) in ids.iter().enumerate() {
            for _ in 0..if busy(i) { 10 } else { 1 } {
                let _ = c.hit(id);
            }
        }
        // A new flow, promoted at once (as a flow is by its second packet).
        if let Ok(ins) = c.insert(&[u64::MAX], &[1_000 + round], 999, &[]) {
            let _ = c.hit(ins.id);
            evicted.extend(ins.evicted.map(|e| e.value));
        }
    }
    assert!(!evicted.is_empty());
    for v in &evicted {
        assert!(
            *v == 999 || !busy(*v as usize),
            "busy flow {v} evicted: {evicted:?}"
        );
    }
    for (i, &id) in ids.iter().enumerate() {
        if busy(i) {
            assert!(c.get(id).is_some(), "busy flow {i} kept");
        }
    }
}

#[test]
fn promoted_flows_make_room_for_probation() {
    // Every flow promoted: the next inserts evict promoted flows until an eighth of the table
    // is on probation again, then only probationary ones.
    let limit = 64;
    let mut c = classifier(1, limit);
    let ids: Vec<_> = (0..limit as u64)
        .map(|i| id_of(c.insert(&[u64::MAX], &[i], 1, &[])))
        .collect();
    for &id in &ids {
        assert!(c.hit(id).is_some());
    }
    assert_eq!(c.on_probation(), 0);
    for n in 0..100u64 {
        let _ = c.insert(&[u64::MAX], &[1_000 + n], 0, &[]);
    }
    let promoted_evicted = c.stats().evictions - c.stats().probation_evictions;
    assert_eq!(promoted_evicted, (limit / 8) as u64);
    assert_eq!(c.on_probation(), limit / 8);
}
