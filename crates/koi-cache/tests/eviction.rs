//! The megaflow limit under a flood: bounded length and memory, and hot megaflows survive.

use koi_cache::{Classifier, ClassifierConfig, MegaflowId};

const WIDTH: usize = 4;
const LIMIT: usize = 65_536;

const MASKS: [[u64; WIDTH]; 4] = [
    [u64::MAX, 0, 0, 0],
    [u64::MAX, 0xffff_ffff, 0, 0],
    [u64::MAX, 0, u64::MAX, 0],
    [u64::MAX; WIDTH],
];

/// The `i`-th distinct flood key (distinct in word 0, which every mask keeps).
fn key(i: u64) -> [u64; WIDTH] {
    [
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        i * 3,
        i ^ 0x55,
        i.rotate_left(17),
    ]
}

fn classifier(limit: usize) -> Classifier<u64> {
    let mut config = ClassifierConfig::new(WIDTH);
    config.max_megaflows = limit;
    config.seed = Some(3);
    Classifier::new(&config).expect("valid config")
}

/// 1M distinct megaflows into a 64k classifier while 200 hot flows keep being forwarded,
/// half through classifier lookups and half through microflow-style `hit` credits.
#[test]
fn flood_of_a_million_megaflows_stays_bounded_and_spares_hot_flows() {
    let mut c = classifier(LIMIT);
    let hot: Vec<(u64, MegaflowId)> = (0..200u64)
        .map(|i| {
            let k = key(1 << 40 | i);
            let id = c.insert(&MASKS[3], &k, i, &[1]).expect("insert").id;
            (1 << 40 | i, id)
        })
        .collect();
    let flood = 1_000_000u64;
    let (mut full_bytes, mut max_bytes, mut evicted) = (0, 0, 0u64);
    for i in 0..flood {
        let r = c
            .insert(&MASKS[i as usize % 4], &key(i), i, &[(i % 16) as u32 + 2])
            .expect("insert with eviction never fails");
        evicted += u64::from(r.evicted.is_some());
        assert!(c.len() <= LIMIT);
        if i % 1000 == 0 {
            forward_hot(&mut c, &hot);
        }
        if i % 4096 == 0 || i == flood - 1 {
            let bytes = c.memory_bytes();
            if full_bytes == 0 && c.len() == LIMIT {
                full_bytes = bytes;
            }
            max_bytes = max_bytes.max(bytes);
        }
    }
    assert_eq!(c.len(), LIMIT);
    assert_eq!(evicted, flood + 200 - LIMIT as u64);
    assert_eq!(c.stats().evictions, evicted);
    forward_hot(&mut c, &hot);
    assert!(full_bytes > 0);
    eprintln!("flood: {full_bytes} bytes when first full, at most {max_bytes} bytes later");
    assert!(
        max_bytes <= full_bytes * 2,
        "memory grew after the limit was reached: {full_bytes} -> {max_bytes}"
    );
    let per_flow = c.memory_bytes() as f64 / c.len() as f64;
    let parts = c.memory_use();
    let per = |b: usize| b as f64 / c.len() as f64;
    eprintln!(
        "flood: per megaflow: slots {:.1}, subtables {:.1}, tag index {:.1} bytes",
        per(parts.slots),
        per(parts.subtables),
        per(parts.tag_index)
    );
    eprintln!(
        "flood: {} megaflows, {} subtables, {} bytes, {per_flow:.1} bytes/megaflow \
         (max {max_bytes} bytes), {evicted} evictions",
        c.len(),
        c.subtable_count(),
        c.memory_bytes()
    );
    assert!(per_flow < 200.0, "{per_flow} bytes per megaflow");
}

/// Forwards one packet of every hot flow and checks it is served by its original megaflow.
fn forward_hot(c: &mut Classifier<u64>, hot: &[(u64, MegaflowId)]) {
    for (n, &(k, id)) in hot.iter().enumerate() {
        if n % 2 == 0 {
            let found = c.lookup(&key(k)).map(|(id, v)| (id, *v));
            assert_eq!(found, Some((id, n as u64)), "hot flow {n} was evicted");
        } else {
            assert_eq!(c.hit(id), Some(&(n as u64)), "hot flow {n} was evicted");
        }
    }
}

/// A flood over many distinct masks (one subtable each): subtables are dropped as they
/// empty, so memory stays bounded too.
#[test]
fn flood_over_many_masks_stays_bounded() {
    let limit = 4096;
    let mut c = classifier(limit);
    let (mut full_bytes, mut max_bytes) = (0, 0);
    for i in 0..200_000u64 {
        let m = i % 1500;
        let mask = [u64::MAX, m, m.rotate_left(32), 0];
        c.insert(&mask, &key(i), i, &[(m % 7) as u32])
            .expect("insert with eviction never fails");
        assert!(c.len() <= limit);
        assert!(c.subtable_count() <= c.len());
        if i % 512 == 0 {
            let bytes = c.memory_bytes();
            if full_bytes == 0 && c.len() == limit {
                full_bytes = bytes;
            }
            max_bytes = max_bytes.max(bytes);
        }
    }
    assert!(full_bytes > 0);
    eprintln!(
        "many masks: {} megaflows, {} subtables, {} bytes ({:.0} per megaflow), max {max_bytes}",
        c.len(),
        c.subtable_count(),
        c.memory_bytes(),
        c.memory_bytes() as f64 / c.len() as f64
    );
    assert!(max_bytes <= full_bytes * 2, "{full_bytes} -> {max_bytes}");
    // Invalidation still finds every megaflow of a tag.
    let tagged = c.tagged_count(3);
    assert!(tagged > 0);
    assert_eq!(c.remove_tagged(3), tagged);
    assert_eq!(c.tagged_count(3), 0);
}

/// Removing most megaflows gives memory back.
#[test]
fn memory_follows_len_down() {
    let mut c = classifier(LIMIT);
    let ids: Vec<_> = (0..50_000u64)
        .map(|i| c.insert(&MASKS[3], &key(i), i, &[]).expect("insert").id)
        .collect();
    let big = c.memory_use();
    for id in &ids[100..] {
        assert!(c.remove(*id).is_some());
    }
    let small = c.memory_use();
    eprintln!("50k megaflows: {big:?}\n100 megaflows: {small:?}");
    // The slot array stays at its high-water mark (at most the limit); the rest shrinks.
    assert_eq!(small.slots, big.slots);
    assert!(small.subtables < big.subtables / 50, "{big:?} -> {small:?}");
    assert!(small.tag_index <= big.tag_index, "{big:?} -> {small:?}");
}
