//! The pipeline-swap benchmark (issue 21's numbers for docs/benchmarks.md): the switch
//! runtime forwards numbered 60-byte frames from a pcap file (read as fast as the poll thread
//! takes them) to a pcap file (each frame stamped when written), through
//! `tests/swap_count.p4`, which counts every frame in a register and marks it with its
//! program version. While the frames flow, the program is swapped with its state carried over
//! (`Pipeline::swap`, what `koi ctl load` does) several times, alternating two versions.
//!
//! Reported: the forwarding rate; frames lost (in minus out), frames out of order, whether the
//! register's count equals the frames in; per swap, the time from the request to the new
//! program in place and to the last poll thread on it; the longest gap between two frames
//! written around each swap (the frame before the first of the new version and that frame)
//! next to the longest gap anywhere else.
//!
//! `cargo bench -p koi-runtime --bench swap [-- FRAMES]` (default 4,000,000). Benchmarks are
//! never tests: nothing here asserts a speed.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{count_program, counting_pipeline, frames, start_pcap_switch, traffic, tx};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let n: u32 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(4_000_000);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    let output = dir.path().join("out.pcap");
    // 64 flows (source MACs), so that the caches hold several megaflows.
    traffic(&input, n, 64);
    let versions = [count_program(&[]), count_program(&["VERSION=2"])];
    let sw = start_pcap_switch(
        counting_pipeline("default", 1, 2, Arc::clone(&versions[0])),
        &input,
        &output,
        1,
    );
    let pl = sw.pipeline(None).unwrap();
    let start = Instant::now();
    let mut reports = Vec::new();
    for k in 1..8u32 {
        let at = u64::from(n) * u64::from(k) / 8;
        while tx(&sw, 0, 2) < at {
            std::thread::sleep(Duration::from_micros(50));
        }
        let next = &versions[k as usize % 2];
        reports.push(pl.swap(Arc::clone(next), false).expect("swap"));
    }
    let mut last = (Instant::now(), tx(&sw, 0, 2));
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = tx(&sw, 0, 2);
        if now == last.1 {
            break;
        }
        last = (Instant::now(), now);
    }
    let elapsed = last.0.duration_since(start);
    let counted = sw.command(None, "register_read count 0").unwrap();
    sw.stop();
    sw.join();

    let (mut out, mut disorder, mut expect) = (0u64, 0u64, 0u32);
    let mut prev: Option<(Duration, u8)> = None;
    let mut swap_gaps = Vec::new();
    let mut other_gap = Duration::ZERO;
    for (seq, v, timestamp) in frames(&output) {
        out += 1;
        if seq != expect {
            disorder += 1;
        }
        expect = seq + 1;
        if let Some((t, pv)) = prev {
            let gap = timestamp.saturating_sub(t);
            if v != pv {
                if std::env::var_os("KOI_SWAP_BENCH_DEBUG").is_some() {
                    eprintln!("frame {seq}: version {pv} -> {v}");
                }
                swap_gaps.push(gap);
            } else {
                other_gap = other_gap.max(gap);
            }
        }
        prev = Some((timestamp, v));
    }
    println!(
        "swap under load: {n} frames in, {out} out ({} lost, {disorder} out of order) in {:.2} s ({:.2} Mpps), 7 swaps with the state carried over",
        u64::from(n) - out,
        elapsed.as_secs_f64(),
        out as f64 / elapsed.as_secs_f64() / 1e6
    );
    println!("  register count: {} (frames in: {n})", counted.trim_end());
    for (i, r) in reports.iter().enumerate() {
        println!(
            "  swap {}: new program in place after {:.2} ms, every poll thread on it after {}; gap between the last frame of the old program and the first of the new: {}",
            i + 1,
            r.swapped_in.as_secs_f64() * 1e3,
            r.all_threads_moved.map_or("-".to_string(), |d| format!(
                "{:.2} ms",
                d.as_secs_f64() * 1e3
            )),
            swap_gaps.get(i).map_or("-".to_string(), |g| format!(
                "{:.3} ms",
                g.as_secs_f64() * 1e3
            ))
        );
    }
    println!(
        "  longest gap between two frames of the same program: {:.3} ms",
        other_gap.as_secs_f64() * 1e3
    );
}
