//! What the P4Runtime server tests share: a switch with its server on an ephemeral localhost
//! port, a tonic client, and builders for the messages the tests send.

#![allow(dead_code)]

use koi_p4runtime_server::{Server, ServerConfig};
use koi_proto::p4info::P4Info;
use koi_proto::p4runtime::p4_runtime_client::P4RuntimeClient;
use koi_proto::p4runtime::{
    Entity, FieldMatch, ForwardingPipelineConfig, MasterArbitrationUpdate, ReadRequest,
    SetForwardingPipelineConfigRequest, StreamMessageRequest, StreamMessageResponse, TableAction,
    TableEntry, Uint128, Update, WriteRequest, entity, field_match, stream_message_request,
    stream_message_response, table_action, update, write_request::Atomicity,
};
use koi_runtime::{PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

pub const DEVICE: u64 = 7;
pub const CPU_PORT: u64 = 255;
/// A bound on waiting for something that should happen; never a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(20);

pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A program of `examples/`, compiled.
pub fn program(name: &str) -> Program {
    Program::compile_file(&examples().join(name), &Default::default()).expect("compiles")
}

/// A running switch (ports as given, no program) with its P4Runtime server.
pub struct Rig {
    pub switch: Arc<Switch>,
    pub server: Option<Server>,
}

impl Rig {
    pub fn new(ports: Vec<(u64, koi_ports::PortSpec, usize)>) -> Rig {
        Rig::with_program(ports, None)
    }

    pub fn with_program(
        ports: Vec<(u64, koi_ports::PortSpec, usize)>,
        program: Option<Program>,
    ) -> Rig {
        Rig::serve(Rig::switch(ports, program))
    }

    /// The switch a rig serves: device [`DEVICE`] with `program` over `ports`.
    pub fn switch(
        ports: Vec<(u64, koi_ports::PortSpec, usize)>,
        program: Option<Program>,
    ) -> Arc<Switch> {
        Switch::start(SwitchConfig {
            pipelines: vec![PipelineSetup {
                config: PipelineConfig {
                    name: "default".into(),
                    device_id: DEVICE,
                    cpu_port: Some(CPU_PORT),
                },
                program: program.map(Arc::new),
                init: None,
            }],
            ports,
            patches: vec![],
            threads: 1,
            cache: Some(Default::default()),
        })
        .expect("switch starts")
    }

    /// A P4Runtime server on an ephemeral localhost port for a switch started by the test;
    /// dropping the rig stops both.
    pub fn serve(switch: Arc<Switch>) -> Rig {
        Rig::serve_with(switch, ServerConfig::new("127.0.0.1:0".parse().unwrap()))
    }

    /// As [`Rig::serve`], with the server configured by `cfg`.
    pub fn serve_with(switch: Arc<Switch>, cfg: ServerConfig) -> Rig {
        let server = Server::start(Arc::clone(&switch), cfg).expect("server starts");
        Rig {
            switch,
            server: Some(server),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.server.as_ref().unwrap().local_addr())
    }

    pub async fn client(&self) -> P4RuntimeClient<Channel> {
        let channel = Channel::from_shared(self.url())
            .expect("a URL")
            .connect()
            .await
            .expect("connects");
        P4RuntimeClient::new(channel).max_decoding_message_size(64 << 20)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
        self.switch.stop();
        self.switch.join();
    }
}

pub fn eid(low: u64) -> Option<Uint128> {
    Some(Uint128 { high: 0, low })
}

/// An open StreamChannel.
pub struct Stream {
    pub tx: mpsc::Sender<StreamMessageRequest>,
    pub rx: tonic::Streaming<StreamMessageResponse>,
}

impl Stream {
    pub async fn open(c: &mut P4RuntimeClient<Channel>) -> Stream {
        let (tx, rx) = mpsc::channel(64);
        let resp = c
            .stream_channel(ReceiverStream::new(rx))
            .await
            .expect("stream opens");
        Stream {
            tx,
            rx: resp.into_inner(),
        }
    }

    pub async fn send(&self, u: stream_message_request::Update) {
        self.tx
            .send(StreamMessageRequest { update: Some(u) })
            .await
            .expect("stream open");
    }

    pub async fn arbitrate(&self, device: u64, election: Option<u64>) {
        self.send(stream_message_request::Update::Arbitration(
            MasterArbitrationUpdate {
                device_id: device,
                election_id: election.and_then(eid),
                ..Default::default()
            },
        ))
        .await;
    }

    /// The next message, within [`PATIENCE`].
    pub async fn next(&mut self) -> Result<stream_message_response::Update, tonic::Status> {
        match tokio::time::timeout(PATIENCE, self.rx.next()).await {
            Ok(Some(Ok(m))) => Ok(m.update.expect("a message with content")),
            Ok(Some(Err(s))) => Err(s),
            Ok(None) => Err(tonic::Status::cancelled("stream ended")),
            Err(_) => panic!("no stream message within {PATIENCE:?}"),
        }
    }

    /// The next arbitration update's status code.
    pub async fn arbitration_code(&mut self) -> i32 {
        match self.next().await {
            Ok(stream_message_response::Update::Arbitration(a)) => a.status.unwrap().code,
            other => panic!("expected an arbitration update, got {other:?}"),
        }
    }

    /// Whether a message arrives within `d`.
    pub async fn quiet_for(&mut self, d: Duration) -> bool {
        tokio::time::timeout(d, self.rx.next()).await.is_err()
    }
}

/// Opens a stream and becomes primary with election id `low`.
pub async fn primary(c: &mut P4RuntimeClient<Channel>, low: u64) -> Stream {
    let mut s = Stream::open(c).await;
    s.arbitrate(DEVICE, Some(low)).await;
    assert_eq!(s.arbitration_code().await, 0, "primary");
    s
}

/// A `SetForwardingPipelineConfig` request for `program` with koi's P4Info.
pub fn set_config(
    program: &Program,
    action: koi_proto::p4runtime::set_forwarding_pipeline_config_request::Action,
    election: u64,
) -> SetForwardingPipelineConfigRequest {
    SetForwardingPipelineConfigRequest {
        device_id: DEVICE,
        election_id: eid(election),
        action: action as i32,
        config: Some(ForwardingPipelineConfig {
            p4info: Some(p4info(program)),
            p4_device_config: program.device_config.clone(),
            cookie: Some(koi_proto::p4runtime::forwarding_pipeline_config::Cookie {
                cookie: 0xc0ffee,
            }),
        }),
        ..Default::default()
    }
}

pub fn p4info(p: &Program) -> P4Info {
    p.p4info.clone().expect("a P4Info")
}

/// The P4Info id of the object named `name` (table, action, digest, ...).
pub fn id(info: &P4Info, name: &str) -> u32 {
    let pre = info
        .tables
        .iter()
        .filter_map(|t| t.preamble.as_ref())
        .chain(info.actions.iter().filter_map(|a| a.preamble.as_ref()))
        .chain(info.digests.iter().filter_map(|a| a.preamble.as_ref()))
        .chain(
            info.direct_counters
                .iter()
                .filter_map(|a| a.preamble.as_ref()),
        )
        .chain(
            info.controller_packet_metadata
                .iter()
                .filter_map(|a| a.preamble.as_ref()),
        )
        .find(|p| p.name == name || p.alias == name)
        .unwrap_or_else(|| panic!("no {name} in the P4Info"));
    pre.id
}

/// The gRPC status's `p4.v1.Error` details.
pub fn details(s: &tonic::Status) -> Vec<koi_proto::p4runtime::Error> {
    use prost::Message;
    let rpc = koi_proto::google_rpc::Status::decode(s.details()).expect("google.rpc.Status");
    rpc.details
        .iter()
        .map(|a| koi_proto::p4runtime::Error::decode(a.value.as_slice()).unwrap())
        .collect()
}

/// Every entity a Read of `e` (a wildcard, typically) returns.
pub async fn read_all(
    c: &mut P4RuntimeClient<Channel>,
    e: Entity,
) -> Result<Vec<Entity>, tonic::Status> {
    let req = ReadRequest {
        device_id: DEVICE,
        entities: vec![e],
        ..Default::default()
    };
    let mut stream = c.read(req).await?.into_inner();
    let mut out = Vec::new();
    while let Some(r) = stream.next().await {
        out.extend(r?.entities);
    }
    Ok(out)
}

/// Every entry of table `table` (P4Info id), as Read returns them.
pub async fn read_table(
    c: &mut P4RuntimeClient<Channel>,
    table: u32,
) -> Result<Vec<TableEntry>, tonic::Status> {
    let all = Entity {
        entity: Some(entity::Entity::TableEntry(TableEntry {
            table_id: table,
            ..Default::default()
        })),
    };
    Ok(read_all(c, all)
        .await?
        .into_iter()
        .filter_map(|e| match e.entity {
            Some(entity::Entity::TableEntry(t)) => Some(t),
            _ => None,
        })
        .collect())
}

/// A `dmac` entry sending `mac` to `port`.
pub fn dmac(info: &koi_proto::p4info::P4Info, mac: [u8; 6], port: u16) -> TableEntry {
    exact_entry(info, "dmac", "forward", &mac, &port.to_be_bytes())
}

/// An entry of `table` matching its one exact field against `key`, running `action` with its
/// one parameter `param`.
pub fn exact_entry(
    info: &koi_proto::p4info::P4Info,
    table: &str,
    action: &str,
    key: &[u8],
    param: &[u8],
) -> TableEntry {
    TableEntry {
        table_id: id(info, table),
        r#match: vec![FieldMatch {
            field_id: 1,
            field_match_type: Some(field_match::FieldMatchType::Exact(field_match::Exact {
                value: key.to_vec(),
            })),
        }],
        action: Some(TableAction {
            r#type: Some(table_action::Type::Action(koi_proto::p4runtime::Action {
                action_id: id(info, action),
                params: vec![koi_proto::p4runtime::action::Param {
                    param_id: 1,
                    value: param.to_vec(),
                }],
            })),
        }),
        ..Default::default()
    }
}

pub fn upd(kind: update::Type, e: TableEntry) -> Update {
    Update {
        r#type: kind as i32,
        entity: Some(Entity {
            entity: Some(entity::Entity::TableEntry(e)),
        }),
    }
}

pub fn write(updates: Vec<Update>, election: u64, atomicity: Atomicity) -> WriteRequest {
    WriteRequest {
        device_id: DEVICE,
        election_id: eid(election),
        updates,
        atomicity: atomicity as i32,
        ..Default::default()
    }
}

/// A named pipe a pcap port reads frames from, opened for writing in a thread (opening a
/// pipe waits for the other end), its pcap file header written.
pub fn pipe(path: &std::path::Path) -> std::thread::JoinHandle<std::fs::File> {
    use std::io::Write;
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "mkfifo {}", path.display());
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
        let header = pcap_file::pcap::PcapWriter::new(Vec::new())
            .unwrap()
            .into_writer();
        f.write_all(&header).unwrap();
        f
    })
}

/// Writes `n` copies of `frame` into a pipe [`pipe`] opened.
pub fn send(f: &mut std::fs::File, frame: &[u8], n: usize) {
    use pcap_file::pcap::{PcapPacket, PcapWriter};
    use std::io::Write;
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for _ in 0..n {
        w.write_packet(&PcapPacket::new(Duration::ZERO, frame.len() as u32, frame))
            .unwrap();
    }
    // Without the file header the writer added.
    let bytes = w.into_writer();
    f.write_all(&bytes[24..]).unwrap();
}

/// The frames in the pcap file a port writes (0 while it does not exist yet).
pub fn frames(path: &std::path::Path) -> Vec<Vec<u8>> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let Ok(mut r) = pcap_file::pcap::PcapReader::new(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while let Some(Ok(p)) = r.next_packet() {
        out.push(p.data.to_vec());
    }
    out
}

/// The number of frames in a pcap file a port writes.
pub fn records(path: &std::path::Path) -> usize {
    frames(path).len()
}
