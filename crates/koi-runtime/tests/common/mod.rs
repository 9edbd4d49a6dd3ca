//! What koi-runtime's tests and benchmarks share: the counting program
//! (`tests/swap_count.p4`), numbered traffic in pcap files, pipelines that run it, and readers
//! of what came out.

#![allow(dead_code)]

use koi_ports::PortSpec;
use koi_runtime::{Flags, PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// `tests/swap_count.p4` compiled with the `-D` definitions `defines` (`VERSION=2`,
/// `EXTRA_KEY`).
pub fn count_program(defines: &[&str]) -> Arc<Program> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swap_count.p4");
    let flags = Flags {
        define: defines.iter().map(|d| d.to_string()).collect(),
        ..Default::default()
    };
    Arc::new(Program::compile_file(&path, &flags).expect("the counting program"))
}

/// Writes `n` 60-byte frames to 02:..:02, numbered 0.. in their `seq` header, from `flows`
/// source MACs in turn, to the pcap file `path`.
pub fn traffic(path: &Path, n: u32, flows: u32) {
    traffic_to(path, n, flows, 2)
}

/// As [`traffic`], to 02:00:00:00:00:`dst`.
pub fn traffic_to(path: &Path, n: u32, flows: u32, dst: u8) {
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = PcapWriter::new(f).unwrap();
    let mut frame = vec![0u8; 60];
    frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
    frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    for i in 0..n {
        frame[11] = (i % flows.max(1)) as u8;
        frame[14..18].copy_from_slice(&i.to_be_bytes());
        w.write_packet(&PcapPacket::new(Duration::ZERO, 60, &frame))
            .unwrap();
    }
}

/// A pipeline running `program` (the counting program) whose `route` table sends frames to
/// 02:..:02 to port `to`.
pub fn counting_pipeline(
    name: &str,
    device_id: u64,
    to: u64,
    program: Arc<Program>,
) -> PipelineSetup {
    let cmd = format!("table_add route fwd 0x020000000002 => {to}");
    PipelineSetup {
        config: PipelineConfig {
            name: name.into(),
            device_id,
            cpu_port: None,
        },
        program: Some(program),
        init: Some(Box::new(move |s: &mut koi_state::State| {
            let c = koi_control::command::parse(&cmd)
                .map_err(|e| e.to_string())?
                .ok_or("empty")?;
            koi_state::cli::execute(s, &c).map_err(|e| e.to_string())?;
            Ok(())
        })),
    }
}

/// A port reading the pcap file `path` as fast as the switch takes it.
pub fn pcap_in(path: &Path) -> PortSpec {
    PortSpec::parse(&format!("pcap:{},", path.display())).unwrap()
}

/// A port writing the pcap file `path`.
pub fn pcap_out(path: &Path) -> PortSpec {
    PortSpec::parse(&format!("pcap:,{}", path.display())).unwrap()
}

/// A switch of one pipeline, `pipeline`, forwarding from port 1 (the pcap file `input`) to
/// port 2 (the pcap file `output`) with `threads` poll threads and the flow caches.
pub fn start_pcap_switch(
    pipeline: PipelineSetup,
    input: &Path,
    output: &Path,
    threads: usize,
) -> Arc<Switch> {
    Switch::start(SwitchConfig {
        pipelines: vec![pipeline],
        ports: vec![(1, pcap_in(input), 0), (2, pcap_out(output), 0)],
        patches: vec![],
        threads,
        cache: Some(Default::default()),
    })
    .expect("switch")
}

/// Frames sent by port `num` of pipeline `pipeline` (index) so far.
pub fn tx(sw: &Switch, pipeline: usize, num: u64) -> u64 {
    sw.ports()
        .iter()
        .find(|s| s.pipeline == pipeline && s.num == num)
        .map_or(0, |s| {
            s.port
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .stats()
                .tx_packets
        })
}

/// The frames of pcap file `path`: (sequence number, version byte, time written).
pub fn frames(path: &Path) -> Vec<(u32, u8, Duration)> {
    let mut r =
        PcapReader::new(std::io::BufReader::new(std::fs::File::open(path).unwrap())).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let seq = u32::from_be_bytes(p.data[14..18].try_into().unwrap());
        out.push((seq, p.data[18], p.timestamp));
    }
    out
}

/// Asserts that `frames` are numbered 0, 1, ... `n - 1`: none lost, none out of order.
pub fn assert_in_order(frames: &[(u32, u8, Duration)], n: u32, what: &str) {
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.0, i as u32, "{what}: frame {i} lost or out of order");
    }
    assert_eq!(frames.len(), n as usize, "{what}: frames out");
}
