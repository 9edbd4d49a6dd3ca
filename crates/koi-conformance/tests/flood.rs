//! A flood of new flows against the cached datapath (issue: consistency and bounds): one
//! million packets through `examples/l2l3_acl.p4`, each to a different destination MAC (the
//! switching table matches it exactly and holds a few hundred learned addresses, too many to
//! tell an unknown one from all of them by a few bits, so each is a new megaflow, as in a MAC
//! flood),
//! interleaved with a few established routed flows. The megaflow limit and the slow-path rate limit must hold memory
//! under the configured bound and keep the established flows forwarded by their compiled
//! programs throughout, while the flood's packets beyond the slow-path budget are dropped.

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

#[test]
fn a_million_new_flows_stay_bounded_and_established_flows_keep_flowing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let compiled = koi_conformance::compile(
        &root.join("examples/l2l3_acl.p4"),
        &koi_syntax::PpOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let p = &compiled.pipeline;
    let mut state = State::new(p).expect("state");
    let entries = std::fs::read_to_string(root.join("examples/l2l3_acl.entries")).expect("entries");
    // The baseline's entries, and 300 learned hosts on VLAN 100 (a switch's MAC table: with
    // a handful of entries, a miss would need only a few bits of the address).
    let learned = (0..300).map(|i| {
        format!(
            "table_add switching switch_to 06:00:00:00:{:02x}:{:02x} 100 => 1",
            i >> 8,
            i & 0xff
        )
    });
    for line in entries.lines().map(str::to_string).chain(learned) {
        if let Some(c) = koi_control::command::parse(&line).expect("command") {
            koi_state::cli::execute(&mut state, &c).expect("entry");
        }
    }
    const LIMIT: usize = 4096;
    const RATE: u64 = 20_000;
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
    const FLOOD: u32 = 1_000_000;
    for i in 0..FLOOD {
        let f = frame_to(
            [
                2,
                0xaa,
                (i >> 24) as u8,
                (i >> 16) as u8,
                (i >> 8) as u8,
                i as u8,
            ],
            i,
        );
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
    assert!(info.megaflows <= LIMIT);
    // The bound: the megaflow limit's worth of keys, masks and table slots (a few hundred
    // bytes each) plus the microflow array and the signature cache (2 MiB), far below what a
    // million megaflows would take.
    assert!(max_memory < 8 << 20, "cache memory {max_memory} bytes");
    // The slow path ran at most its budget: one second of flood at RATE per second.
    assert!(
        stats.misses <= RATE + 100 + 16,
        "{} slow-path runs",
        stats.misses
    );
    assert!(limited >= u64::from(FLOOD) - RATE - 200);
    // Every established packet was forwarded, by its megaflow (re-installed after eviction
    // within the slow-path budget at worst).
    assert_eq!(est_sent, est_total, "established packets lost in the flood");
    assert_eq!(stats.compile_mismatch + stats.fast_parse_mismatch, 0);
}
