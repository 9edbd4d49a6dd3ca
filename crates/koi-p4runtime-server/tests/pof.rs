//! The POF controller channel (`koi.pof.v1.Pof`) through a tonic client, against a switch
//! running a POF pipeline with pcap ports: only the P4Runtime primary changes the
//! configuration; a whole configuration set, read back structured and as text; entries added,
//! modified and removed while packets flow, each followed by the forwarding; refusals with the
//! codes the service names, leaving the configuration as it was.

mod support;

use koi_ports::PortSpec;
use koi_proto::p4runtime::Uint128;
use koi_proto::pof::pof_client::PofClient;
use koi_proto::pof::{
    self as pb, Change, GetConfigRequest, SetConfigRequest, WriteRequest, change,
};
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;
use tonic::Code;

/// Frames sent at a time: a poll thread reads a pcap pipe a whole batch at a time (it blocks
/// in the read until the batch is full).
const BATCH: usize = 32;

const KPOFVS: &str = include_str!("../../../examples/pof/kpofvs.pof");

fn spec(s: String) -> PortSpec {
    PortSpec::parse(&s).unwrap()
}

/// An IPv4 frame to `dst` (TTL 64, checksum right), in on port 1.
fn ipv4(dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&28u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 1, 1]);
    ip[16..20].copy_from_slice(&dst);
    f
}

/// Waits (bounded) until the pcap file at `path` holds `n` frames, and returns them.
fn wait_frames(path: &Path, n: usize) -> Vec<Vec<u8>> {
    let until = Instant::now() + PATIENCE;
    loop {
        let got = frames(path);
        if got.len() >= n || Instant::now() > until {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The device's configuration as GetConfig's text gives it.
async fn config_now(pof: &mut PofClient<tonic::transport::Channel>) -> koi_pof::Config {
    let text = pof
        .get_config(GetConfigRequest { device_id: DEVICE })
        .await
        .unwrap()
        .into_inner()
        .text;
    koi_pof::parse(&text).unwrap()
}

fn election(low: u64) -> Option<Uint128> {
    Some(Uint128 { high: 0, low })
}

fn route(id: u32, prefix: [u8; 4], len: u32, port: u64) -> pb::Entry {
    use pb::action::Action as A;
    use pb::instruction::Instruction as I;
    let field = |p: &str, f: &str| pb::FieldRef {
        r#ref: Some(pb::field_ref::Ref::Packet(pb::PacketField {
            protocol: p.into(),
            field: f.into(),
            base: None,
        })),
    };
    let actions = vec![
        A::ModifyField(pb::ModifyField {
            field: Some(field("ipv4", "ttl")),
            delta: -1,
        }),
        A::CalculateChecksum(pb::CalculateChecksum {
            field: Some(field("ipv4", "checksum")),
            offset: 0,
            length: 160,
        }),
        A::Output(port),
    ];
    pb::Entry {
        table: "ipv4_fwd".into(),
        id,
        priority: 0,
        matches: vec![pb::Match {
            r#match: Some(pb::r#match::Match::Prefix(pb::Prefix {
                value: prefix.to_vec(),
                length: len,
            })),
        }],
        instructions: vec![pb::Instruction {
            instruction: Some(I::ApplyActions(pb::ApplyActions {
                actions: actions
                    .into_iter()
                    .map(|a| pb::Action { action: Some(a) })
                    .collect(),
            })),
        }],
    }
}

fn write(changes: Vec<change::Change>, low: u64) -> WriteRequest {
    WriteRequest {
        device_id: DEVICE,
        election_id: election(low),
        role: String::new(),
        changes: changes
            .into_iter()
            .map(|c| Change { change: Some(c) })
            .collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_defines_and_edits_a_pof_pipeline_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in1.pcap");
    let out = |p: u32| dir.path().join(format!("out{p}.pcap"));
    let writer = pipe(&input);
    let empty = koi_runtime::Program::from_pof("pof", koi_pof::Config::default()).unwrap();
    let rig = Rig::serve(Rig::switch(
        vec![
            (1, spec(format!("pcap:{},", input.display())), 0),
            (2, spec(format!("pcap:,{}", out(2).display())), 0),
            (3, spec(format!("pcap:,{}", out(3).display())), 0),
        ],
        Some(empty),
    ));
    let mut pipe_in = writer.join().unwrap();
    let channel = tonic::transport::Channel::from_shared(rig.url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut pof = PofClient::new(channel);

    // Reading needs nothing; changing needs the primary.
    let got = pof
        .get_config(GetConfigRequest { device_id: DEVICE })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.config.unwrap(), pb::Config::default());
    let set = |low: u64, text: &str| SetConfigRequest {
        device_id: DEVICE,
        election_id: election(low),
        role: String::new(),
        config: None,
        text: text.into(),
        reset: false,
    };
    let e = pof.set_config(set(1, KPOFVS)).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    let mut p4rt = rig.client().await;
    let _primary = primary(&mut p4rt, 5).await;
    let e = pof.set_config(set(4, KPOFVS)).await.unwrap_err();
    assert_eq!(
        e.code(),
        Code::PermissionDenied,
        "a backup's election id: {e:?}"
    );

    // The example without its second route, as text; read back structured, and as text.
    let mut want = koi_pof::parse(KPOFVS).unwrap();
    want.entries
        .retain(|e| !(e.table == "ipv4_fwd" && e.id == 2));
    let r = pof
        .set_config(set(5, &koi_pof::print(&want)))
        .await
        .unwrap()
        .into_inner();
    assert!(r.report.contains("loaded"), "{}", r.report);
    assert!(!r.report.contains("koi-pof-grpc"), "{}", r.report);
    let got = pof
        .get_config(GetConfigRequest { device_id: DEVICE })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(koi_pof::parse(&got.text).unwrap(), want);
    assert_eq!(
        got.config.as_ref().unwrap().entries.len(),
        want.entries.len()
    );
    // The structured form loads to the same configuration.
    let r = pof
        .set_config(SetConfigRequest {
            config: got.config.clone(),
            text: String::new(),
            ..set(5, "")
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.report.contains("loaded"), "{}", r.report);
    let again = pof
        .get_config(GetConfigRequest { device_id: DEVICE })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.config, got.config);

    let frame = ipv4([10, 0, 2, 7]);
    // 10.0.2.0/24 gets a route: the packets go out of port 2 with the TTL one lower.
    let r = pof
        .write(write(
            vec![change::Change::AddEntry(route(2, [10, 0, 2, 0], 24, 2))],
            5,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.reports.len(), 1, "{r:?}");
    send(&mut pipe_in, &frame, BATCH);
    let got2 = wait_frames(&out(2), BATCH);
    assert_eq!(got2.len(), BATCH, "a batch out of port 2");
    assert_eq!(got2[0][14 + 8], 63, "TTL decremented");
    assert_eq!(got2[0][14 + 16..14 + 20], [10, 0, 2, 7]);
    // Modified to port 3.
    pof.write(write(
        vec![change::Change::ModifyEntry(route(2, [10, 0, 2, 0], 24, 3))],
        5,
    ))
    .await
    .unwrap();
    send(&mut pipe_in, &frame, BATCH);
    assert_eq!(
        wait_frames(&out(3), BATCH).len(),
        BATCH,
        "a batch out of port 3"
    );
    assert_eq!(records(&out(2)), BATCH, "none more out of port 2");
    // A miss of the routing table: what no route matches goes out of port 2.
    pof.write(write(
        vec![change::Change::SetMiss(pb::Miss {
            table: "ipv4_fwd".into(),
            instructions: vec![pb::Instruction {
                instruction: Some(pb::instruction::Instruction::ApplyActions(
                    pb::ApplyActions {
                        actions: vec![pb::Action {
                            action: Some(pb::action::Action::Output(2)),
                        }],
                    },
                )),
            }],
        })],
        5,
    ))
    .await
    .unwrap();
    send(&mut pipe_in, &ipv4([10, 0, 9, 1]), BATCH);
    let got2 = wait_frames(&out(2), 2 * BATCH);
    assert_eq!(
        got2.len(),
        2 * BATCH,
        "the miss sends a batch out of port 2"
    );
    assert_eq!(got2[BATCH][14 + 8], 64, "a miss leaves the TTL alone");
    pof.write(write(
        vec![change::Change::RemoveMiss("ipv4_fwd".into())],
        5,
    ))
    .await
    .unwrap();

    // Refusals, each with its code; what was before stays.
    let before = pof
        .get_config(GetConfigRequest { device_id: DEVICE })
        .await
        .unwrap()
        .into_inner()
        .text;
    let refused = |c: change::Change| write(vec![c], 5);
    let cases = [
        (
            refused(change::Change::AddEntry(route(2, [10, 0, 9, 0], 24, 2))),
            Code::AlreadyExists,
        ),
        (
            refused(change::Change::RemoveEntry(pb::EntryRef {
                table: "ipv4_fwd".into(),
                id: 99,
            })),
            Code::NotFound,
        ),
        (
            refused(change::Change::RemoveTable("nosuch".into())),
            Code::NotFound,
        ),
        (
            refused(change::Change::AddTable(pb::Table {
                name: "t { key".into(),
                ..Default::default()
            })),
            Code::InvalidArgument,
        ),
        // A route whose prefix is longer than the field: the command refuses it.
        (
            refused(change::Change::AddEntry(route(7, [10, 0, 3, 0], 40, 2))),
            Code::InvalidArgument,
        ),
        (
            WriteRequest {
                changes: vec![Change { change: None }],
                ..write(vec![], 5)
            },
            Code::InvalidArgument,
        ),
    ];
    for (req, code) in cases {
        let e = pof.write(req.clone()).await.unwrap_err();
        assert_eq!(e.code(), code, "{req:?}: {e:?}");
        assert!(e.message().starts_with("change 0: "), "{e:?}");
    }
    // A batch stops at its first failing change; the ones before it stay.
    let e = pof
        .write(write(
            vec![
                change::Change::AddEntry(route(3, [10, 0, 3, 0], 24, 2)),
                change::Change::RemoveEntry(pb::EntryRef {
                    table: "ipv4_fwd".into(),
                    id: 42,
                }),
                change::Change::AddEntry(route(4, [10, 0, 4, 0], 24, 2)),
            ],
            5,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert!(e.message().starts_with("change 1: "), "{e:?}");
    assert!(e.message().contains("(1 before it applied)"), "{e:?}");
    let now = config_now(&mut pof).await;
    let ids: Vec<u32> = now.entries_of("ipv4_fwd").map(|e| e.id).collect();
    assert_eq!(
        ids,
        vec![1, 2, 3],
        "the first change stayed, the third never ran"
    );
    assert_ne!(koi_pof::print(&now), before);

    // Removed: GetConfig no longer has it; an unknown device is NOT_FOUND.
    pof.write(write(
        vec![change::Change::RemoveEntry(pb::EntryRef {
            table: "ipv4_fwd".into(),
            id: 2,
        })],
        5,
    ))
    .await
    .unwrap();
    let now = config_now(&mut pof).await;
    assert!(!now.entries_of("ipv4_fwd").any(|e| e.id == 2));
    let e = pof
        .get_config(GetConfigRequest { device_id: 99 })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    drop(pipe_in);
}
