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

use koi_ports::PortSpec;
use koi_runtime::{Flags, PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn compile(version: u8) -> Arc<Program> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swap_count.p4");
    let flags = Flags {
        define: vec![format!("VERSION={version}")],
        ..Default::default()
    };
    Arc::new(Program::compile_file(&path, &flags).expect("the bench program"))
}

fn traffic(path: &Path, n: u32) {
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = PcapWriter::new(f).unwrap();
    let mut frame = vec![0u8; 60];
    frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    for i in 0..n {
        // 64 flows (source MACs), so that the caches hold several megaflows.
        frame[11] = (i % 64) as u8;
        frame[14..18].copy_from_slice(&i.to_be_bytes());
        w.write_packet(&PcapPacket::new(Duration::ZERO, 60, &frame))
            .unwrap();
    }
}

fn tx(sw: &Switch) -> u64 {
    sw.ports()[1]
        .port
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .stats()
        .tx_packets
}

fn main() {
    let n: u32 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(4_000_000);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    let output = dir.path().join("out.pcap");
    traffic(&input, n);
    let versions = [compile(1), compile(2)];
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![PipelineSetup {
            config: PipelineConfig {
                name: "default".into(),
                device_id: 1,
                cpu_port: None,
            },
            program: Some(Arc::clone(&versions[0])),
            init: Some(Box::new(|s: &mut koi_state::State| {
                let c = koi_control::command::parse("table_add route fwd 0x020000000002 => 2")
                    .map_err(|e| e.to_string())?
                    .ok_or("empty")?;
                koi_state::cli::execute(s, &c).map_err(|e| e.to_string())?;
                Ok(())
            })),
        }],
        ports: vec![
            (
                1,
                PortSpec::parse(&format!("pcap:{},", input.display())).unwrap(),
                0,
            ),
            (
                2,
                PortSpec::parse(&format!("pcap:,{}", output.display())).unwrap(),
                0,
            ),
        ],
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch");
    let pl = sw.pipeline(None).unwrap();
    let start = Instant::now();
    let mut reports = Vec::new();
    for k in 1..8u32 {
        let at = u64::from(n) * u64::from(k) / 8;
        while tx(&sw) < at {
            std::thread::sleep(Duration::from_micros(50));
        }
        let next = &versions[k as usize % 2];
        reports.push(pl.swap(Arc::clone(next), false).expect("swap"));
    }
    let mut last = (Instant::now(), tx(&sw));
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = tx(&sw);
        if now == last.1 {
            break;
        }
        last = (Instant::now(), now);
    }
    let elapsed = last.0.duration_since(start);
    let counted = sw.command(None, "register_read count 0").unwrap();
    sw.stop();
    sw.join();

    let mut r = PcapReader::new(std::io::BufReader::new(
        std::fs::File::open(&output).unwrap(),
    ))
    .unwrap();
    let (mut out, mut disorder, mut expect) = (0u64, 0u64, 0u32);
    let mut prev: Option<(Duration, u8)> = None;
    let mut swap_gaps = Vec::new();
    let mut other_gap = Duration::ZERO;
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        out += 1;
        let seq = u32::from_be_bytes(p.data[14..18].try_into().unwrap());
        if seq != expect {
            disorder += 1;
        }
        expect = seq + 1;
        let v = p.data[18];
        if let Some((t, pv)) = prev {
            let gap = p.timestamp.saturating_sub(t);
            if v != pv {
                if std::env::var_os("KOI_SWAP_BENCH_DEBUG").is_some() {
                    eprintln!("frame {seq}: version {pv} -> {v}");
                }
                swap_gaps.push(gap);
            } else {
                other_gap = other_gap.max(gap);
            }
        }
        prev = Some((p.timestamp, v));
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
