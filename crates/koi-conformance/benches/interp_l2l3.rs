//! Speed of the reference interpreter (koi's slow path) on the L2L3-ACL program of the Open
//! vSwitch baseline (`examples/l2l3_acl.p4` with `examples/l2l3_acl.entries`), on the baseline's
//! traffic: 60-byte untagged Ethernet/IPv4/UDP-or-TCP frames from host 0 to the router MAC on
//! port 1, destinations spread over the 16 routes, N distinct flows.
//!
//! `cargo bench -p koi-conformance --bench interp_l2l3 [-- FLOWS [SECONDS [cached|upcall|upcall-traced]]]`
//! prints packets/s (with `cached`: through koi's cached datapath; with `upcall`: through the
//! datapath with its megaflows removed before every packet, so that each is a slow-path upcall
//! with wildcard tracking and a megaflow install; `upcall-traced`: the same without the trace
//! memo, so that every upcall runs the tracer),
//! nanoseconds per packet and cycles per packet at the CPU's nominal TSC frequency (read from
//! /proc/cpuinfo). A benchmark, not a test: the machine is shared and the numbers are noisy.

use koi_interp::Interpreter;
use koi_state::{ManualClock, State};
use std::path::Path;
use std::time::{Duration, Instant};

/// The allocator `koi` itself uses, so that the slow path's allocations cost what they do there.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let flows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let seconds: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let compiled = match koi_conformance::compile(
        &root.join("examples/l2l3_acl.p4"),
        &koi_syntax::PpOptions::default(),
    ) {
        Ok(c) => c,
        Err(e) => panic!("{}", e.render()),
    };
    let p = &compiled.pipeline;
    let mut state = State::new(p).expect("state");
    let entries = std::fs::read_to_string(root.join("examples/l2l3_acl.entries")).expect("entries");
    for line in entries.lines() {
        if let Some(c) = koi_control::command::parse(line).expect("command") {
            koi_state::cli::execute(&mut state, &c).expect("entry");
        }
    }
    let packets = l2l3_frames(flows);
    let mode = args.get(2).map_or("", String::as_str);
    let upcall = mode == "upcall" || mode == "upcall-traced";
    let cached = mode == "cached" || upcall;
    let mut interp = Interpreter::new(p).expect("interpreter");
    let config = koi_datapath::DatapathConfig {
        trace_memo: mode != "upcall-traced",
        ..Default::default()
    };
    let mut dp = koi_datapath::Datapath::with_config(p, koi_interp::Options::default(), config)
        .expect("datapath");
    let clock = ManualClock::new(0);
    let mut run = |state: &mut State, f: &[u8]| {
        if cached {
            if upcall {
                dp.flush();
            }
            let mut n = 0;
            let _ = dp.process_with(state, f, 1, &clock, &mut |_, _| n += 1);
            return n;
        }
        interp
            .process(state, f, 1, &clock)
            .map(|o| o.outputs.len())
            .unwrap_or(0)
    };
    // Warm up (this fills the caches), and check that the traffic is forwarded.
    let mut sent = 0;
    for f in &packets {
        sent += run(&mut state, f);
    }
    assert!(sent > 0, "the warm-up forwarded nothing");
    let (mut n, start, cpu0) = (0u64, Instant::now(), cpu_seconds());
    let budget = Duration::from_secs_f64(seconds);
    while start.elapsed() < budget {
        for f in packets.iter().cycle().take(4096) {
            let _ = run(&mut state, f);
            n += 1;
        }
    }
    // CPU time of this process, not wall time: the machine is shared.
    let secs = (cpu_seconds() - cpu0).max(1e-3);
    if cached {
        eprintln!(
            "{:?}\n{:?}\n{:?}",
            dp.stats(),
            dp.cache_info(),
            dp.not_compiled_reasons()
        );
        for f in dp.dump_flows(2) {
            eprintln!("{f}");
        }
    }
    let ns = secs * 1e9 / n as f64;
    let mhz = tsc_mhz();
    println!(
        "{}, L2L3-ACL, {flows} flows: {n} packets in {secs:.2} s: {:.0} packets/s, {ns:.0} ns/packet, {:.0} cycles/packet at {mhz:.0} MHz",
        if upcall {
            "slow path (every packet an upcall)"
        } else if cached {
            "cached datapath"
        } else {
            "interpreter"
        },
        n as f64 / secs,
        ns * mhz / 1000.0
    );
}

/// User plus system CPU time of this process, from /proc/self/stat (clock ticks of 10 ms).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // Fields after the command: state(skipped, not a number) ppid pgrp ... utime is field 14.
    (f.get(10).copied().unwrap_or(0.0) + f.get(11).copied().unwrap_or(0.0)) / 100.0
}

/// The nominal CPU frequency (the TSC rate on constant-TSC machines), from /proc/cpuinfo.
fn tsc_mhz() -> f64 {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("cpu MHz"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(1000.0)
}

/// The baseline's frames (gen_pcap.py `l2l3`): flow i goes to route i % 16, alternating
/// UDP/53 and TCP/80 (ACK), source address and port varying per flow, TTL 64, padded to 60.
fn l2l3_frames(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let r = (i % 16) as u8;
            let h = ((i / 16) % 250 + 1) as u8;
            let dst = [198, 19, r * 16 + ((i / 4000) % 16) as u8, h];
            let src = [198, 18, ((i >> 8) & 0xff) as u8, (i & 0xff) as u8];
            let sport = (1024 + (i * 7) % 60000) as u16;
            frame(src, dst, sport, i % 2 == 0)
        })
        .collect()
}

fn frame(src: [u8; 4], dst: [u8; 4], sport: u16, udp: bool) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 0xfe, 2, 0, 0, 0, 1, 0, 0x08, 0x00];
    let l4_len: u16 = if udp { 8 } else { 20 };
    let total = 20 + l4_len;
    let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0, 0, 64];
    ip.push(if udp { 17 } else { 6 });
    ip.extend_from_slice(&[0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = checksum(&ip);
    ip[10] = (c >> 8) as u8;
    ip[11] = c as u8;
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    if udp {
        f.extend_from_slice(&[0, 53, 0, 8, 0, 0]);
    } else {
        f.extend_from_slice(&[
            0, 80, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0,
        ]);
    }
    f.resize(60, 0);
    f
}

fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}
