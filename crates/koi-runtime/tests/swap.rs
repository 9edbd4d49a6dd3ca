//! Pipeline swap while forwarding (`Pipeline::swap`, what `koi ctl load` does): a pcap port
//! feeds numbered frames as fast as the poll thread takes them, and the program is replaced
//! several times while they flow, alternating between two versions that count every packet
//! in the same register and mark it with their version. Nothing may be lost, the register
//! must count every packet exactly across the swaps, the frames must come out in order, and
//! each frame wholly by one version (the marks change only at a swap, v1 then v2 ...). A
//! swap whose state cannot be carried over is refused and changes nothing.

use koi_ports::PortSpec;
use koi_runtime::{PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A bound on waiting for something that should happen; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(120);

/// `tests/swap_count.p4` with `-D` definitions `defines`.
fn compile(defines: &[&str]) -> Arc<Program> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swap_count.p4");
    let flags = koi_runtime::Flags {
        define: defines.iter().map(|d| d.to_string()).collect(),
        ..Default::default()
    };
    Arc::new(Program::compile_file(&path, &flags).expect("compiles"))
}

/// `n` frames to 02:..:02, numbered 0.. in their `seq` header.
fn traffic(path: &Path, n: u32) {
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = PcapWriter::new(f).unwrap();
    let mut frame = vec![0u8; 60];
    frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    for i in 0..n {
        frame[14..18].copy_from_slice(&i.to_be_bytes());
        w.write_packet(&PcapPacket::new(Duration::ZERO, 60, &frame))
            .unwrap();
    }
}

fn tx(sw: &Switch, port: usize) -> u64 {
    sw.ports()[port]
        .port
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .stats()
        .tx_packets
}

#[test]
fn swaps_under_traffic_lose_nothing_and_carry_the_counts_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = compile(&[]);
    let v2 = compile(&["VERSION=2"]);
    let n: u32 = 60_000;
    let input = dir.path().join("in.pcap");
    let output = dir.path().join("out.pcap");
    traffic(&input, n);
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![PipelineSetup {
            config: PipelineConfig {
                name: "default".into(),
                device_id: 1,
                cpu_port: None,
            },
            program: Some(Arc::clone(&v1)),
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

    // Swap at a few points of the stream, alternating versions, state carried over.
    let start = Instant::now();
    let mut swaps = 0;
    for (k, at) in [n / 8, n / 4, n / 2, 3 * n / 4].into_iter().enumerate() {
        while tx(&sw, 1) < u64::from(at) && start.elapsed() < PATIENCE {
            std::thread::sleep(Duration::from_micros(100));
        }
        if tx(&sw, 1) >= u64::from(n) {
            break;
        }
        let next = if k % 2 == 0 { &v2 } else { &v1 };
        let report = pl.swap(Arc::clone(next), false).expect("swap");
        let carried = report.carried.clone().unwrap().join("\n");
        assert!(
            carried.contains("I.route"),
            "the table entry is carried: {report}"
        );
        swaps += 1;
    }
    while tx(&sw, 1) < u64::from(n) && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(1));
    }
    let counted = sw.command(None, "register_read count 0");
    sw.stop();
    sw.join();
    assert!(swaps >= 2, "the traffic ended before the swaps: {swaps}");

    // Every frame out, in order; the version marks change only at the swaps.
    let mut r = PcapReader::new(std::fs::File::open(&output).unwrap()).unwrap();
    let mut next_seq = 0u32;
    let mut changes = 0;
    let mut last_version = 1u8;
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let seq = u32::from_be_bytes(p.data[14..18].try_into().unwrap());
        assert_eq!(seq, next_seq, "frame {next_seq} lost or out of order");
        next_seq += 1;
        let v = p.data[18];
        if v != last_version {
            changes += 1;
            last_version = v;
        }
    }
    assert_eq!(next_seq, n, "frames out");
    assert_eq!(
        changes, swaps,
        "each swap changes the version once, at one frame"
    );
    let counted = counted.expect("register_read");
    assert!(
        counted.trim_end().ends_with(&format!("= {n}")),
        "the register counts every frame across {swaps} swaps: {counted}"
    );
}

#[test]
fn a_swap_that_cannot_carry_the_state_changes_nothing() {
    let v1 = compile(&[]);
    // The same table with another key: its entry cannot be carried over.
    let v2 = compile(&["VERSION=2", "EXTRA_KEY"]);
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![PipelineSetup {
            config: PipelineConfig {
                name: "default".into(),
                device_id: 1,
                cpu_port: None,
            },
            program: Some(Arc::clone(&v1)),
            init: None,
        }],
        ports: vec![],
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch");
    sw.command(None, "table_add route fwd 0x020000000002 => 2")
        .unwrap();
    sw.command(None, "register_write count 0 77").unwrap();
    let before = sw.pipeline(None).unwrap().generation();
    let e = sw.pipeline(None).unwrap().swap(v2, false).unwrap_err();
    assert!(
        e.contains("nothing changed") && e.contains("I.route"),
        "{e}"
    );
    assert_eq!(sw.pipeline(None).unwrap().generation(), before);
    let dump = sw.command(None, "table_dump route").unwrap();
    assert!(dump.contains("fwd"), "{dump}");
    let r = sw.command(None, "register_read count 0").unwrap();
    assert!(r.trim_end().ends_with("77"), "{r}");
    // `koi ctl load --reset` (fresh state) takes it.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swap_count.p4");
    let out = sw
        .command(
            None,
            &format!("load {} -D VERSION=2 -D EXTRA_KEY --reset", path.display()),
        )
        .unwrap();
    assert!(out.contains("state: fresh"), "{out}");
    assert_eq!(sw.pipeline(None).unwrap().generation(), before + 1);
    let r = sw.command(None, "register_read count 0").unwrap();
    assert!(r.trim_end().ends_with("= 0"), "{r}");
    sw.stop();
    sw.join();
}
