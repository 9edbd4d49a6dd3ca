//! Floods of new flows against the cached datapath (issue: consistency and bounds): one
//! million packets through `examples/l2l3_acl.p4`, interleaved with a few established routed
//! flows, at a million packets per second. Memory must stay under the configured bound, the
//! slow path within its rate limit, and the established flows forwarded by their compiled
//! programs throughout.
//!
//! - A MAC flood: each packet to a different unknown destination MAC (and from a different
//!   address and port). The switching table's megaflow masks for a miss take only the bits
//!   that tell an address from every learned one (the trie of its keys), so the million flows
//!   fall into a handful of megaflows and cost a handful of slow-path runs.
//! - New megaflows beyond the slow-path budget: each packet to one of a thousand unknown
//!   addresses that differ from a learned one only in the last bit (so each needs a megaflow
//!   of its own): the slow path installs them at its rate, drops the misses beyond it, and the
//!   established flows keep flowing meanwhile.

use koi_datapath::{Datapath, DatapathConfig, PathTaken};
use koi_state::{ManualClock, State};
use std::path::Path;

fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        s += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// A 60-byte UDP frame from host 0 to the router MAC, routed by the L2L3-ACL entries.
fn frame(i: u32) -> Vec<u8> {
    frame_to([2, 0, 0, 0, 0, 0xfe], i)
}

/// The same frame to MAC `dst` (an unknown MAC is dropped by the switching table, after a
/// slow-path run that installs a megaflow for exactly that MAC).
fn frame_to(dst: [u8; 6], i: u32) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&[2, 0, 0, 0, 1, 0, 0x08, 0x00]);
    let src = [10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
    let dst = [198, 19, ((i % 16) * 16) as u8, 1];
    let mut ip = vec![0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&(1024 + (i % 50_000) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 53, 0, 8, 0, 0]);
    f.resize(60, 0);
    f
}

/// What a flood run saw.
struct Flood {
    megaflows: usize,
    misses: u64,
    max_memory: usize,
    limited: u64,
    mismatches: u64,
}

/// Runs `FLOOD` packets to `dst(i)` with `learned` addresses in the switching table,
/// interleaved with the established flows, checking that every established packet is
/// forwarded.
fn flood(learned: &[[u8; 6]], dst: impl Fn(u32) -> [u8; 6]) -> Flood {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let compiled = koi_conformance::compile(
        &root.join("examples/l2l3_acl.p4"),
        &koi_syntax::PpOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let p = &compiled.pipeline;
    let mut state = State::new(p).expect("state");
    let entries = std::fs::read_to_string(root.join("examples/l2l3_acl.entries")).expect("entries");
    let learned = learned.iter().map(|m| {
        format!(
            "table_add switching switch_to {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} 100 => 1",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    });
    for line in entries.lines().map(str::to_string).chain(learned) {
        if let Some(c) = koi_control::command::parse(&line).expect("command") {
            koi_state::cli::execute(&mut state, &c).expect("entry");
        }
    }
    let config = DatapathConfig {
        max_megaflows: LIMIT,
        upcall_rate: RATE,
        upcall_burst: 100,
        seed: Some(7),
        ..DatapathConfig::default()
    };
    let mut dp = Datapath::with_config(p, koi_interp::Options::default(), config).expect("dp");
    let clock = ManualClock::new(0);
    let established: Vec<Vec<u8>> = (0..16).map(|i| frame(0x00ff_0000 + i)).collect();
    // Install the established flows first.
    for f in &established {
        let mut out = 0;
        dp.process_with(&mut state, f, 1, &clock, &mut |_, _| out += 1)
            .expect("process");
        assert_eq!(out, 1, "an established flow is not forwarded");
        clock.advance_ns(1_000_000);
    }
    let mut max_memory = 0;
    let (mut limited, mut est_sent, mut est_total) = (0u64, 0u64, 0u64);
    for i in 0..FLOOD {
        let f = frame_to(dst(i), i);
        let s = dp
            .process_with(&mut state, &f, 1, &clock, &mut |_, _| {})
            .expect("process");
        if s.path == PathTaken::Limited {
            limited += 1;
        }
        // One microsecond per flood packet: a million new flows per second.
        clock.advance_ns(1_000);
        if i % 64 == 0 {
            let e = &established[(i / 64) as usize % established.len()];
            let mut out = 0;
            let s = dp
                .process_with(&mut state, e, 1, &clock, &mut |_, _| out += 1)
                .expect("process");
            est_total += 1;
            est_sent += out;
            assert!(
                matches!(s.path, PathTaken::Compiled(_)) || s.path == PathTaken::Slow,
                "established flow took {:?}",
                s.path
            );
        }
        if i % 65_536 == 0 {
            let info = dp.cache_info();
            assert!(info.megaflows <= LIMIT, "{} megaflows", info.megaflows);
            max_memory = max_memory.max(info.memory_bytes);
        }
    }
    let info = dp.cache_info();
    let stats = dp.stats();
    println!("{info:?}\n{stats:?}\nmax memory {max_memory} bytes, {limited} limited");
    // Every established packet was forwarded, by its megaflow (re-installed after eviction
    // within the slow-path budget at worst).
    assert_eq!(est_sent, est_total, "established packets lost in the flood");
    Flood {
        megaflows: info.megaflows,
        misses: stats.misses,
        max_memory: max_memory.max(info.memory_bytes),
        limited,
        mismatches: stats.compile_mismatch + stats.fast_parse_mismatch,
    }
}

const LIMIT: usize = 4096;
const RATE: u64 = 20_000;
const FLOOD: u32 = 1_000_000;

/// The bounds every flood keeps.
fn bounded(f: &Flood) {
    assert!(f.megaflows <= LIMIT);
    // The megaflow limit's worth of keys, masks and table slots (a few hundred bytes each)
    // plus the microflow array and the signature cache (2 MiB), far below what a million
    // megaflows would take.
    assert!(
        f.max_memory < 8 << 20,
        "cache memory {} bytes",
        f.max_memory
    );
    // At most the slow path's budget: one second of flood at RATE per second.
    assert!(f.misses <= RATE + 100 + 16, "{} slow-path runs", f.misses);
    assert_eq!(f.mismatches, 0);
}

#[test]
fn a_mac_flood_falls_into_a_few_megaflows() {
    // 300 learned hosts on VLAN 100 (a switch's MAC table, more than the 64 entries a miss's
    // mask is computed from one by one).
    let learned: Vec<[u8; 6]> = (0..300u32)
        .map(|i| [6, 0, 0, 0, (i >> 8) as u8, i as u8])
        .collect();
    let f = flood(&learned, |i| {
        [
            2,
            0xaa,
            (i >> 24) as u8,
            (i >> 16) as u8,
            (i >> 8) as u8,
            i as u8,
        ]
    });
    bounded(&f);
    // 02:aa:... leaves the trie of the learned 06:00:... addresses at the sixth bit: one
    // megaflow serves the whole flood.
    assert!(f.megaflows <= 16 + 4, "{} megaflows", f.megaflows);
    assert!(f.misses <= 16 + 4, "{} slow-path runs", f.misses);
    assert_eq!(f.limited, 0);
}

#[test]
fn new_megaflows_beyond_the_slow_path_budget_are_dropped() {
    // 1,000 learned hosts at even addresses; the flood goes to the odd ones, each a thousand
    // packets apart: every one needs a megaflow of its own (all 48 bits of its address).
    let mac = |n: u32| [6, 0, 0, 0, (n >> 8) as u8, n as u8];
    let learned: Vec<[u8; 6]> = (0..1000u32).map(|i| mac(2 * i)).collect();
    let f = flood(&learned, |i| mac(2 * (i % 1000) + 1));
    bounded(&f);
    // All thousand got their megaflow, at the slow path's rate: the first 100 misses from
    // the burst, then 20 per millisecond while 1,000 packets a millisecond arrive, most of
    // them still without one (about 45 ms of mostly dropped misses).
    assert!(f.megaflows >= 1000, "{} megaflows", f.megaflows);
    assert!(f.limited > 10_000, "{} misses dropped", f.limited);
    assert!(f.misses >= 1000, "{} slow-path runs", f.misses);
}
