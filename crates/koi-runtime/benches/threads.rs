//! How the switch runtime scales with poll threads today (issue 21's baseline): the L2L3-ACL
//! pipeline (`examples/l2l3_acl.p4` and its entries, plus the same entries for port 3) with
//! the Open vSwitch baseline's traffic at 10,000 flows (`koi bench --write-pcap`, made by the
//! caller's koi binary or given as FILE), replayed from pcap ports as fast as the poll
//! threads take it, to /dev/null:
//!
//! - `one pipeline`: ports 1 and 3 (the same traffic each) in one pipeline, with 1 and with 2
//!   poll threads (each thread with its own replica of the state);
//! - the same with 2 threads while a writer adds and deletes `switching` entries (a MAC
//!   the traffic does not use) 10,000 times a second through `Pipeline::update`, reporting
//!   what a P4Runtime server reports for them (an insert into an all-exact table: its misses;
//!   a delete: that entry);
//! - `two pipelines`: the same program and entries loaded twice, one input port each, 2
//!   threads: nothing shared but the process.
//!
//! `cargo bench -p koi-runtime --bench threads -- PCAP` (PCAP: the traffic file,
//! `koi bench --write-pcap PCAP --flows 10000`). Benchmarks are never tests: nothing here
//! asserts a speed.

use koi_ports::PortSpec;
use koi_runtime::{PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The L2L3-ACL entries, with port 3 configured as port 1 is (VLAN 100).
fn entries() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("examples/l2l3_acl.entries")).unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    lines.push("table_add vlan_ingress push_vlan 3 0 0&&&0 => 100 10".into());
    lines.push("table_add vlan_ingress tagged 3 1 100&&&0xfff => 10".into());
    lines
}

fn setup(name: &str, device_id: u64, program: &Arc<Program>) -> PipelineSetup {
    let lines = entries();
    PipelineSetup {
        config: PipelineConfig {
            name: name.into(),
            device_id,
            cpu_port: None,
        },
        program: Some(Arc::clone(program)),
        init: Some(Box::new(move |s: &mut koi_state::State| {
            for l in &lines {
                if let Some(c) = koi_control::command::parse(l).map_err(|e| e.to_string())? {
                    koi_state::cli::execute(s, &c).map_err(|e| e.to_string())?;
                }
            }
            Ok(())
        })),
    }
}

/// Forwards until the ports' output stops growing; Mpps over the run. With `writes`, a
/// writer changes the `switching` table that many times a second meanwhile; also returns
/// the writes done per second.
fn run(cfg: SwitchConfig, writes: u32) -> (f64, f64, Duration) {
    let sw = Switch::start(cfg).expect("switch");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = (writes > 0).then(|| {
        let (sw, stop) = (Arc::clone(&sw), Arc::clone(&stop));
        std::thread::spawn(move || writer(&sw, writes, &stop))
    });
    let tx = |sw: &Switch| sw.port_totals().tx_packets;
    let start = Instant::now();
    let mut last = (start, 0);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = tx(&sw);
        if now == last.1 && now > 0 {
            break;
        }
        if now != last.1 {
            last = (Instant::now(), now);
        }
        if start.elapsed() > Duration::from_secs(300) {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (done, busy) = writer.map_or((0, Duration::ZERO), |w| w.join().unwrap());
    sw.stop();
    sw.join();
    let secs = last.0.duration_since(start).as_secs_f64();
    (
        last.1 as f64 / secs / 1e6,
        done as f64 / secs,
        busy / (done.max(1) as u32),
    )
}

/// Adds and deletes a `switching` entry in turn, `rate` times a second, until `stop`;
/// returns how many writes it made and the time spent in them.
fn writer(sw: &Switch, rate: u32, stop: &std::sync::atomic::AtomicBool) -> (u64, Duration) {
    let pl = sw.pipeline(None).expect("pipeline");
    let add =
        koi_control::command::parse("table_add switching switch_to 02:00:00:00:09:99 300 => 1")
            .unwrap()
            .unwrap();
    let start = Instant::now();
    let mut n: u64 = 0;
    let mut handle: Option<u32> = None;
    let mut busy = Duration::ZERO;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let due = start + Duration::from_secs_f64(n as f64 / f64::from(rate));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let t0 = Instant::now();
        let r = pl.update(|s, ch| {
            let t = s.table_id("switching").unwrap();
            match handle {
                None => {
                    // "... Entry has been added with handle N"
                    let out = koi_state::cli::execute(s, &add).unwrap();
                    ch.misses(t);
                    out.split_whitespace().last().and_then(|h| h.parse().ok())
                }
                Some(h) => {
                    s.table_delete("switching", h).unwrap();
                    ch.entry(t, koi_state::handles::split_handle(h).0);
                    None
                }
            }
        });
        busy += t0.elapsed();
        handle = r.expect("update");
        n += 1;
    }
    (n, busy)
}

fn main() {
    let pcap = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .expect("usage: threads PCAP (koi bench --write-pcap PCAP --flows 10000)");
    // The flows over and over: at least 2,000,000 frames per input port.
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("traffic.pcap");
    {
        use pcap_file::pcap::{PcapReader, PcapWriter};
        let mut frames = Vec::new();
        let mut r = PcapReader::new(std::fs::File::open(&pcap).expect("PCAP")).unwrap();
        while let Some(p) = r.next_packet() {
            frames.push(p.unwrap().into_owned());
        }
        let f = std::io::BufWriter::new(std::fs::File::create(&long).unwrap());
        let mut w = PcapWriter::new(f).unwrap();
        let mut n = 0;
        while n < 2_000_000 && !frames.is_empty() {
            for p in &frames {
                w.write_packet(p).unwrap();
                n += 1;
            }
        }
    }
    let pcap = long.display().to_string();
    let program = Arc::new(
        Program::compile_file(&repo().join("examples/l2l3_acl.p4"), &Default::default())
            .expect("l2l3_acl"),
    );
    let input = || PortSpec::parse(&format!("pcap:{pcap},")).unwrap();
    let sink = || PortSpec::parse("pcap:,/dev/null").unwrap();
    for round in 1..=2 {
        for threads in [1, 2] {
            let (rate, _, _) = run(
                SwitchConfig {
                    pipelines: vec![setup("default", 1, &program)],
                    ports: vec![(1, input(), 0), (3, input(), 0), (2, sink(), 0)],
                    patches: vec![],
                    threads,
                    cache: Some(Default::default()),
                },
                0,
            );
            println!(
                "round {round}: one pipeline, two input ports, {threads} thread(s): {rate:.2} Mpps"
            );
        }
        let (rate, writes, each) = run(
            SwitchConfig {
                pipelines: vec![setup("default", 1, &program)],
                ports: vec![(1, input(), 0), (3, input(), 0), (2, sink(), 0)],
                patches: vec![],
                threads: 2,
                cache: Some(Default::default()),
            },
            10_000,
        );
        println!(
            "round {round}: one pipeline, two input ports, 2 threads, writer: {rate:.2} Mpps, \
             {writes:.0} writes/s, {:.1} us a write",
            each.as_secs_f64() * 1e6
        );
        let (rate, _, _) = run(
            SwitchConfig {
                pipelines: vec![setup("a", 1, &program), setup("b", 2, &program)],
                ports: vec![
                    (1, input(), 0),
                    (1, input(), 1),
                    (2, sink(), 0),
                    (2, sink(), 1),
                ],
                patches: vec![],
                threads: 2,
                cache: Some(Default::default()),
            },
            0,
        );
        println!("round {round}: two pipelines, one input port each, 2 threads: {rate:.2} Mpps");
    }
}
