//! Lookup cost of the classifier and the microflow cache.
//!
//! `cargo bench -p koi-cache --bench lookup`. Each benchmark iteration is one lookup; the
//! keys cycle round-robin over the flows. Megaflows are spread evenly over the subtables (one
//! mask each), so a hit probes about `(subtables + 1) / 2` subtables on average.

use divan::{Bencher, black_box};
use koi_cache::{Classifier, ClassifierConfig, FlowCache, MicroflowConfig};

fn main() {
    divan::main();
}

/// Flow-key width: 6 words (in_port+validity, eth, vlan+ethertype, ipv4 src/dst, l4 ports).
const WIDTH: usize = 6;

/// Eight distinct masks, shaped like L2/L3/L4 megaflows.
const MASKS: [[u64; WIDTH]; 8] = [
    [u64::MAX, u64::MAX, 0xffff, 0, 0, 0],
    [u64::MAX, u64::MAX, 0xffff, 0xffff_f000_0000_0000, 0, 0],
    [u64::MAX, u64::MAX, 0xffff, u64::MAX, 0, 0],
    [u64::MAX, u64::MAX, 0xffff, u64::MAX, 0xff, u64::MAX],
    [
        u64::MAX,
        0xffff_ffff_ffff,
        0xffff,
        0xffff_ff00_0000_0000,
        0,
        0,
    ],
    [u64::MAX, 0, 0xffff, u64::MAX, 0xff, 0xffff],
    [u64::MAX, u64::MAX, 0, 0, 0, 0],
    [u64::MAX; WIDTH],
];

/// The `i`-th flow's key: distinct in every word so that each mask separates flows.
fn key(i: u64) -> [u64; WIDTH] {
    let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    [i, x, x >> 16, x.rotate_left(21), x.rotate_left(7), x ^ i]
}

fn keys(flows: usize) -> Vec<[u64; WIDTH]> {
    (0..flows as u64).map(key).collect()
}

fn config() -> ClassifierConfig {
    let mut c = ClassifierConfig::new(WIDTH);
    c.seed = Some(1);
    c
}

/// A classifier holding one megaflow per flow, flow `i` in subtable `i % subtables`.
fn classifier(flows: usize, subtables: usize) -> Classifier<u64> {
    classifier_with(config(), flows, subtables)
}

fn classifier_with(config: ClassifierConfig, flows: usize, subtables: usize) -> Classifier<u64> {
    let mut c = Classifier::new(&config).expect("valid config");
    for (i, k) in keys(flows).iter().enumerate() {
        c.insert(&MASKS[i % subtables], k, i as u64, &[1])
            .expect("insert");
    }
    c
}

/// The same with staging off (one stage): every probe hashes all masked words.
fn unstaged(flows: usize, subtables: usize) -> Classifier<u64> {
    let mut config = config();
    config.stages = std::iter::once(0..WIDTH).collect();
    classifier_with(config, flows, subtables)
}

/// A closure returning the keys round-robin.
fn cycle<'a>(keys: &'a [[u64; WIDTH]]) -> impl FnMut() -> &'a [u64] {
    let mut i = 0;
    move || {
        i += 1;
        if i == keys.len() {
            i = 0;
        }
        &keys[i]
    }
}

/// Megaflow (classifier) hit, no microflow tier.
#[divan::bench(consts = [1, 2, 4, 8], args = [1, 100, 10_000])]
fn megaflow_hit<const SUBTABLES: usize>(bencher: Bencher, flows: usize) {
    let mut c = classifier(flows, SUBTABLES);
    let keys = keys(flows);
    let mut next = cycle(&keys);
    bencher.bench_local(|| black_box(c.lookup(black_box(next())).map(|(_, v)| *v)));
}

/// Megaflow miss: every subtable probed (staged lookup rejects after the first word).
#[divan::bench(consts = [1, 2, 4, 8], args = [1, 100, 10_000])]
fn megaflow_miss<const SUBTABLES: usize>(bencher: Bencher, flows: usize) {
    let mut c = classifier(flows, SUBTABLES);
    let keys: Vec<_> = (0..flows as u64).map(|i| key(i + (1 << 40))).collect();
    let mut next = cycle(&keys);
    bencher.bench_local(|| black_box(c.lookup(black_box(next())).map(|(_, v)| *v)));
}

/// Megaflow hit with staging off.
#[divan::bench(consts = [1, 8], args = [100, 10_000])]
fn megaflow_hit_unstaged<const SUBTABLES: usize>(bencher: Bencher, flows: usize) {
    let mut c = unstaged(flows, SUBTABLES);
    let keys = keys(flows);
    let mut next = cycle(&keys);
    bencher.bench_local(|| black_box(c.lookup(black_box(next())).map(|(_, v)| *v)));
}

/// Megaflow miss with staging off.
#[divan::bench(consts = [1, 8], args = [100, 10_000])]
fn megaflow_miss_unstaged<const SUBTABLES: usize>(bencher: Bencher, flows: usize) {
    let mut c = unstaged(flows, SUBTABLES);
    let keys: Vec<_> = (0..flows as u64).map(|i| key(i + (1 << 40))).collect();
    let mut next = cycle(&keys);
    bencher.bench_local(|| black_box(c.lookup(black_box(next())).map(|(_, v)| *v)));
}

/// A two-tier cache with `flows` megaflows in `subtables` subtables, warmed up.
fn flow_cache(flows: usize, subtables: usize, inv_prob: u32) -> FlowCache<u64> {
    let mut m = MicroflowConfig::new(WIDTH);
    m.insert_inv_prob = inv_prob;
    let mut fc = FlowCache::new(&config(), Some(&m)).expect("valid config");
    let keys = keys(flows);
    for (i, k) in keys.iter().enumerate() {
        fc.install(&MASKS[i % subtables], k, i as u64, &[1])
            .expect("install");
    }
    for _ in 0..300 {
        for k in &keys {
            black_box(fc.lookup(k).is_some());
        }
    }
    fc
}

/// Two tiers, microflow hit: the whole path (hash key, microflow probe, verify megaflow).
#[divan::bench(args = [1, 100])]
fn microflow_hit(bencher: Bencher, flows: usize) {
    let mut fc = flow_cache(flows, 8, 1);
    let keys = keys(flows);
    let mut next = cycle(&keys);
    bencher.bench_local(|| black_box(fc.lookup(black_box(next())).map(|(_, v, _)| *v)));
}

/// Two tiers at 10k flows with the default 1/100 insertion (about 2/3 microflow hits, the
/// rest megaflow hits), and with the microflow tier off.
#[divan::bench(consts = [1, 8], args = [(10_000, 100), (10_000, 0)])]
fn two_tiers<const SUBTABLES: usize>(bencher: Bencher, (flows, inv_prob): (usize, u32)) {
    let mut fc = flow_cache(flows, SUBTABLES, inv_prob);
    let keys = keys(flows);
    let mut next = cycle(&keys);
    bencher.bench_local(|| black_box(fc.lookup(black_box(next())).map(|(_, v, _)| *v)));
}
