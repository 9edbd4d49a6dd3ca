//! The P4Runtime benchmark (issue 20's numbers for docs/benchmarks.md), a real tonic client
//! against koi's server in the same process, on `benches/p4rt_bench.p4` (one exact table of
//! a million entries):
//!
//! - `inserts`: table inserts per second, 1,000 per Write (100 Writes) and 1 per Write
//!   (10,000 Writes, each awaited before the next), three rounds each on a fresh pipeline;
//! - `forwarding`: the switch's forwarding rate (a pcap file of 60-byte frames over 1,000
//!   flows, read as fast as the poll thread takes it, sent to a pcap writer on /dev/null),
//!   idle and while a client writes 10,000 entries per second into the table the traffic
//!   uses (batches of 100 every 10 ms, and single-entry Writes);
//! - `latency` (root: veth pairs in a network namespace it makes and removes; the server and
//!   client stay on the host's loopback): after each Write that adds the entry for a
//!   destination returns, one frame to that destination is sent; the time until it comes out
//!   of the switch's other port, and how many were not forwarded by the new entry; for
//!   comparison, the same for a frame to an older entry (a megaflow miss) and that frame
//!   again (a hit).
//!
//! `cargo bench -p koi-p4runtime-server --bench p4runtime [-- inserts|forwarding|latency]`
//! (all three by default). Benchmarks are never tests: nothing here asserts a speed.

use koi_p4runtime_server::{Server, ServerConfig};
use koi_ports::PortSpec;
use koi_proto::p4runtime::p4_runtime_client::P4RuntimeClient;
use koi_proto::p4runtime::set_forwarding_pipeline_config_request::Action as SetAction;
use koi_proto::p4runtime::{
    Action, Entity, FieldMatch, ForwardingPipelineConfig, MasterArbitrationUpdate,
    SetForwardingPipelineConfigRequest, StreamMessageRequest, TableAction, TableEntry, Uint128,
    Update, WriteRequest, action::Param, entity, field_match, stream_message_request, table_action,
    update,
};
use koi_runtime::{PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

const DEVICE: u64 = 1;
const FLOWS: u64 = 1000;
const FRAMES: u64 = 4_000_000;

type Client = P4RuntimeClient<Channel>;

fn program() -> Arc<Program> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/p4rt_bench.p4");
    Arc::new(Program::compile_file(&path, &Default::default()).expect("the bench program"))
}

/// A switch with `ports` (and `program` loaded, with an entry per traffic flow) and its
/// server on an ephemeral localhost port.
fn rig(ports: Vec<(u64, PortSpec, usize)>, program: Option<Arc<Program>>) -> (Arc<Switch>, Server) {
    let sw = switch(ports, program);
    let server = serve(&sw);
    (sw, server)
}

/// A switch with `ports` (and `program` loaded, with an entry per traffic flow).
fn switch(ports: Vec<(u64, PortSpec, usize)>, program: Option<Arc<Program>>) -> Arc<Switch> {
    let init: Option<koi_runtime::StateInit> = program.as_ref().map(|_| {
        Box::new(|s: &mut koi_state::State| {
            for f in 0..FLOWS {
                let cmd = format!("table_add fwd forward {:#x} => 2", mac(f));
                let c = koi_control::command::parse(&cmd)
                    .map_err(|e| e.to_string())?
                    .ok_or("empty")?;
                koi_state::cli::execute(s, &c).map_err(|e| e.to_string())?;
            }
            Ok(())
        }) as koi_runtime::StateInit
    });
    Switch::start(SwitchConfig {
        pipelines: vec![PipelineSetup {
            config: PipelineConfig {
                name: "default".into(),
                device_id: DEVICE,
                cpu_port: None,
            },
            program,
            init,
        }],
        ports,
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch")
}

/// `sw`'s P4Runtime server on an ephemeral port of the calling thread's loopback.
fn serve(sw: &Arc<Switch>) -> Server {
    Server::start(
        Arc::clone(sw),
        ServerConfig::new("127.0.0.1:0".parse().unwrap()),
    )
    .expect("server")
}

/// Traffic flow `f`'s destination MAC (the table's first entries), and insert `i`'s
/// (disjoint).
fn mac(f: u64) -> u64 {
    0x0200_0000_0000 | f
}
fn insert_mac(i: u64) -> u64 {
    0x0600_0000_0000 | i
}

fn entry(table: u32, action: u32, dst: u64) -> Update {
    Update {
        r#type: update::Type::Insert as i32,
        entity: Some(Entity {
            entity: Some(entity::Entity::TableEntry(TableEntry {
                table_id: table,
                r#match: vec![FieldMatch {
                    field_id: 1,
                    field_match_type: Some(field_match::FieldMatchType::Exact(
                        field_match::Exact {
                            value: dst.to_be_bytes()[2..].to_vec(),
                        },
                    )),
                }],
                action: Some(TableAction {
                    r#type: Some(table_action::Type::Action(Action {
                        action_id: action,
                        params: vec![Param {
                            param_id: 1,
                            value: vec![2],
                        }],
                    })),
                }),
                ..Default::default()
            })),
        }),
    }
}

/// A primary connection to the device, with the pipeline loaded through
/// SetForwardingPipelineConfig unless `loaded`; returns the client, the open stream, and the
/// ids of table `fwd` and action `forward`.
async fn connect(
    server: &Server,
    program: &Program,
    loaded: bool,
) -> (Client, mpsc::Sender<StreamMessageRequest>, u32, u32) {
    let channel = Channel::from_shared(format!("http://{}", server.local_addr()))
        .unwrap()
        .connect()
        .await
        .expect("connect");
    let mut c = P4RuntimeClient::new(channel);
    let (tx, rx) = mpsc::channel(8);
    let mut stream = c
        .stream_channel(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    tx.send(StreamMessageRequest {
        update: Some(stream_message_request::Update::Arbitration(
            MasterArbitrationUpdate {
                device_id: DEVICE,
                election_id: Some(Uint128 { high: 0, low: 1 }),
                ..Default::default()
            },
        )),
    })
    .await
    .unwrap();
    let _ = stream.message().await.expect("arbitration answer");
    let info = program.p4info.clone().unwrap();
    if !loaded {
        c.set_forwarding_pipeline_config(SetForwardingPipelineConfigRequest {
            device_id: DEVICE,
            election_id: Some(Uint128 { high: 0, low: 1 }),
            action: SetAction::VerifyAndCommit as i32,
            config: Some(ForwardingPipelineConfig {
                p4info: Some(info.clone()),
                p4_device_config: program.device_config.clone(),
                cookie: None,
            }),
            ..Default::default()
        })
        .await
        .expect("pipeline");
    }
    let table = info.tables[0].preamble.as_ref().unwrap().id;
    let action = info
        .actions
        .iter()
        .find(|a| a.preamble.as_ref().unwrap().name.ends_with("forward"))
        .unwrap()
        .preamble
        .as_ref()
        .unwrap()
        .id;
    tokio::spawn(async move { while let Ok(Some(_)) = stream.message().await {} });
    (c, tx, table, action)
}

async fn write(c: &mut Client, updates: Vec<Update>) {
    c.write(WriteRequest {
        device_id: DEVICE,
        election_id: Some(Uint128 { high: 0, low: 1 }),
        updates,
        ..Default::default()
    })
    .await
    .expect("write");
}

async fn inserts() {
    let prog = program();
    let (sw, server) = rig(vec![], None);
    println!("inserts (1,000 per Write: 100 Writes; 1 per Write: 10,000 Writes)");
    for round in 1..=3 {
        let (mut c, _s, table, action) = connect(&server, &prog, false).await;
        let t = Instant::now();
        for b in 0..100u64 {
            let ups = (0..1000).map(|i| entry(table, action, insert_mac(b * 1000 + i)));
            write(&mut c, ups.collect()).await;
        }
        let batched = 100_000.0 / t.elapsed().as_secs_f64();
        let t = Instant::now();
        for i in 0..10_000u64 {
            write(&mut c, vec![entry(table, action, insert_mac(200_000 + i))]).await;
        }
        let single = 10_000.0 / t.elapsed().as_secs_f64();
        println!(
            "  round {round}: {batched:.0} inserts/s in batches of 1,000; {single:.0} inserts/s one per Write"
        );
    }
    server.shutdown();
    sw.stop();
    sw.join();
}

/// Writes `frames` 60-byte frames over [`FLOWS`] destinations to a pcap file.
fn traffic(path: &std::path::Path, frames: u64) {
    use pcap_file::pcap::{PcapPacket, PcapWriter};
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = PcapWriter::new(f).unwrap();
    let mut frame = vec![0u8; 60];
    frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0xff, 0xff]);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    for i in 0..frames {
        frame[..6].copy_from_slice(&mac(i % FLOWS).to_be_bytes()[2..]);
        w.write_packet(&PcapPacket::new(Duration::ZERO, 60, &frame))
            .unwrap();
    }
}

/// How the forwarding run's client writes.
#[derive(Clone, Copy, Debug)]
enum Writer {
    Idle,
    /// `n` entries per Write, 10,000 entries per second.
    Batches(u64),
}

/// Frames forwarded per second while the client writes as `how`.
async fn forwarding_run(pcap: &std::path::Path, how: Writer) -> (f64, u64) {
    let prog = program();
    let ports = vec![
        (
            1,
            PortSpec::parse(&format!("pcap:{},", pcap.display())).unwrap(),
            0,
        ),
        (2, PortSpec::parse("pcap:,/dev/null").unwrap(), 0),
    ];
    let (sw, server) = rig(ports, Some(Arc::clone(&prog)));
    let (mut c, _s, table, action) = connect(&server, &prog, true).await;
    let tx = |sw: &Switch| {
        sw.ports()[1]
            .port
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stats()
            .tx_packets
    };
    let (t0, tx0) = (Instant::now(), tx(&sw));
    let mut written = 0u64;
    let mut last = (t0, tx0);
    loop {
        match how {
            Writer::Idle => tokio::time::sleep(Duration::from_millis(10)).await,
            Writer::Batches(n) => {
                // 10,000 entries per second: a batch every n/10 ms.
                let due = t0 + Duration::from_micros(written * 100);
                tokio::time::sleep_until(due.into()).await;
                let ups = (0..n).map(|i| entry(table, action, insert_mac(written + i)));
                write(&mut c, ups.collect()).await;
                written += n;
            }
        }
        let now = (Instant::now(), tx(&sw));
        if now.1 == last.1 && now.0.duration_since(last.0) > Duration::from_millis(200) {
            break;
        }
        if now.1 != last.1 {
            last = now;
        }
    }
    let rate = (last.1 - tx0) as f64 / last.0.duration_since(t0).as_secs_f64();
    server.shutdown();
    sw.stop();
    sw.join();
    (rate, written)
}

async fn forwarding() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("traffic.pcap");
    traffic(&pcap, FRAMES);
    println!(
        "forwarding ({FRAMES} frames over {FLOWS} flows, pcap in, /dev/null out; the client writes 10,000 entries/s into the same table)"
    );
    for round in 1..=2 {
        for how in [
            Writer::Idle,
            Writer::Batches(100),
            Writer::Batches(1),
            Writer::Idle,
        ] {
            let (rate, written) = forwarding_run(&pcap, how).await;
            println!(
                "  round {round}: {how:?}: {:.2} Mpps forwarded ({written} entries written)",
                rate / 1e6
            );
        }
    }
}

/// `ip` with `args`; whether it succeeded.
fn ip(args: &[&str]) -> bool {
    std::process::Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

async fn latency() {
    let ns = format!("koi-p4rt-bench-{}", std::process::id());
    if !ip(&["netns", "add", &ns]) {
        println!("latency: skipped (needs root to make a network namespace)");
        return;
    }
    for (h, s) in [("h1", "s1"), ("h2", "s2")] {
        ip(&[
            "-n", &ns, "link", "add", h, "type", "veth", "peer", "name", s,
        ]);
        ip(&["-n", &ns, "link", "set", h, "up"]);
        ip(&["-n", &ns, "link", "set", s, "up"]);
    }
    let prog = program();
    let ports = vec![
        (1, PortSpec::parse("s1").unwrap(), 0),
        (2, PortSpec::parse("s2").unwrap(), 0),
    ];
    // The switch's ports in the namespace, its server on the host's loopback (where the
    // client is).
    let sw = koi_ports::netns::run_in(&ns, || switch(ports, Some(Arc::clone(&prog))))
        .expect("namespace");
    let server = serve(&sw);
    let (mut h1, mut h2) = koi_ports::netns::run_in(&ns, || {
        (
            koi_ports::open(&PortSpec::parse("h1").unwrap()).unwrap(),
            koi_ports::open(&PortSpec::parse("h2").unwrap()).unwrap(),
        )
    })
    .expect("namespace");
    let (mut c, _s, table, action) = connect(&server, &prog, true).await;
    let mut batch = koi_ports::Batch::new(koi_ports::DEFAULT_SNAPLEN);
    let frame_to = |dst: u64| {
        let mut frame = vec![0u8; 60];
        frame[..6].copy_from_slice(&dst.to_be_bytes()[2..]);
        frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0xff, 0xfe]);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]);
        frame
    };
    // Sends `frame` from h1; how long until it comes out at h2 (None: not within 100 ms).
    let mut through = |frame: &[u8]| {
        let sent = Instant::now();
        h1.send(frame).unwrap();
        h1.flush().unwrap();
        loop {
            let _ = h2.recv_batch(&mut batch);
            if batch.packets().iter().any(|p| p[..6] == frame[..6]) {
                return Some(sent.elapsed());
            }
            if sent.elapsed() > Duration::from_millis(100) {
                return None;
            }
        }
    };
    // Three kinds of frame: to a destination whose entry was just written (the Write
    // returned), to a destination installed long ago but not seen since the last write (a
    // megaflow miss: the slow path), and the same frame again (a cache hit).
    let (mut after_write, mut new_flow, mut hit) = (Vec::new(), Vec::new(), Vec::new());
    let mut missed = 0;
    let trials = 500u64;
    for i in 0..trials {
        let dst = insert_mac(i);
        write(&mut c, vec![entry(table, action, dst)]).await;
        match through(&frame_to(dst)) {
            Some(t) => after_write.push(t),
            None => missed += 1,
        }
        let known = frame_to(mac(i % FLOWS));
        new_flow.extend(through(&known));
        hit.extend(through(&known));
    }
    let pct = |v: &mut Vec<Duration>, p: usize| {
        v.sort();
        v.get(v.len() * p / 100).copied().unwrap_or_default()
    };
    println!("latency ({trials} Writes of one entry, frames over veth through the switch):");
    for (what, v) in [
        ("to the entry just written", &mut after_write),
        ("to an older entry, first frame", &mut new_flow),
        ("the same frame again", &mut hit),
    ] {
        println!(
            "  {what}: median {:?}, p90 {:?}, p99 {:?} ({} frames)",
            pct(v, 50),
            pct(v, 90),
            pct(v, 99),
            v.len()
        );
    }
    println!("  {missed} frames to a new entry not forwarded by it");
    server.shutdown();
    sw.stop();
    sw.join();
    ip(&["netns", "del", &ns]);
}

fn main() {
    let what: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let want = |w: &str| what.is_empty() || what.iter().any(|a| a == w);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        if want("inserts") {
            inserts().await;
        }
        if want("forwarding") {
            forwarding().await;
        }
        if want("latency") {
            latency().await;
        }
    });
}
