//! The P4Runtime server through a real gRPC client (tonic): capabilities, arbitration, pipeline
//! configs, Write and Read with their batch errors, one state with `koi ctl`'s commands, and
//! packet-out / packet-in through the CPU port. A switch without ports: no privileges needed.

mod support;

use koi_proto::p4runtime::set_forwarding_pipeline_config_request::Action;
use koi_proto::p4runtime::{
    CapabilitiesRequest, GetForwardingPipelineConfigRequest, PacketMetadata, PacketOut,
    field_match, get_forwarding_pipeline_config_request::ResponseType, stream_message_request,
    stream_message_response, table_action, update, write_request::Atomicity,
};
use support::*;
use tonic::Code;

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_and_unknown_devices() {
    let rig = Rig::new(vec![]);
    let mut c = rig.client().await;
    let caps = c
        .capabilities(CapabilitiesRequest { device_id: 0 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(caps.p4runtime_api_version, "1.5.0");
    let e = c
        .capabilities(CapabilitiesRequest { device_id: 99 })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = c
        .get_forwarding_pipeline_config(GetForwardingPipelineConfigRequest {
            device_id: 99,
            response_type: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    // A stream for an unknown device is ended with NOT_FOUND.
    let mut s = Stream::open(&mut c).await;
    s.arbitrate(99, Some(1)).await;
    assert_eq!(s.next().await.unwrap_err().code(), Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_highest_election_id_writes_and_everyone_hears_of_changes() {
    let rig = Rig::new(vec![]);
    let mut c = rig.client().await;
    let prog = program("l2_learning.p4");
    let mut first = primary(&mut c, 1).await;
    let mut second = Stream::open(&mut c).await;
    second.arbitrate(DEVICE, Some(2)).await;
    assert_eq!(second.arbitration_code().await, 0);
    assert_eq!(first.arbitration_code().await, Code::AlreadyExists as i32);
    // The backup may not change the pipeline, the primary may.
    let e = c
        .set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 2))
        .await
        .unwrap();
    let info = p4info(&prog);
    let e = c
        .write(write(
            vec![upd(update::Type::Insert, dmac(&info, MAC_A, 1))],
            1,
            Atomicity::ContinueOnError,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // The primary leaves: the backup hears there is none, and nobody may write.
    drop(second);
    assert_eq!(first.arbitration_code().await, Code::NotFound as i32);
    let e = c
        .write(write(
            vec![upd(update::Type::Insert, dmac(&info, MAC_A, 1))],
            2,
            Atomicity::ContinueOnError,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // Re-arbitrating with the highest id seen makes the first primary.
    first.arbitrate(DEVICE, Some(2)).await;
    assert_eq!(first.arbitration_code().await, 0);
    c.write(write(
        vec![upd(update::Type::Insert, dmac(&info, MAC_A, 1))],
        2,
        Atomicity::ContinueOnError,
    ))
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_program_reads_and_writes_fail_the_precondition() {
    let rig = Rig::new(vec![]);
    let mut c = rig.client().await;
    let _s = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    let info = p4info(&prog);
    let e = c
        .write(write(
            vec![upd(update::Type::Insert, dmac(&info, MAC_A, 1))],
            1,
            Atomicity::ContinueOnError,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    let e = read_table(&mut c, 0).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    let got = c
        .get_forwarding_pipeline_config(GetForwardingPipelineConfigRequest {
            device_id: DEVICE,
            response_type: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(got.config.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_must_compile_and_its_p4info_agree_with_the_program() {
    let rig = Rig::new(vec![]);
    let mut c = rig.client().await;
    let _s = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    // A P4Info with another table id.
    let mut req = set_config(&prog, Action::Verify, 1);
    let cfg = req.config.as_mut().unwrap();
    let t = &mut cfg.p4info.as_mut().unwrap().tables[0];
    t.preamble.as_mut().unwrap().id += 1;
    let e = c.set_forwarding_pipeline_config(req).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("LearnIngress.smac"), "{}", e.message());
    // A program that does not compile: the diagnostics say where.
    let mut req = set_config(&prog, Action::VerifyAndCommit, 1);
    req.config.as_mut().unwrap().p4_device_config =
        b"koi-device-config 1\nname: broken.p4\n\ncontrol C() { apply { x = 1; } }\n".to_vec();
    let e = c.set_forwarding_pipeline_config(req).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("broken.p4:1:"), "{}", e.message());
    // A BMv2 JSON wrapped as the tutorials send it.
    let mut req = set_config(&prog, Action::Verify, 1);
    req.config.as_mut().unwrap().p4_device_config =
        prost::Message::encode_to_vec(&koi_proto::p4::tmp::P4DeviceConfig {
            reassign: true,
            extras: None,
            device_data: b"{\"program\": \"x.p4\"}".to_vec(),
        });
    let e = c.set_forwarding_pipeline_config(req).await.unwrap_err();
    assert!(e.message().contains("BMv2 JSON"), "{}", e.message());
    // Nothing was loaded by any of these.
    assert!(rig.switch.pipeline(None).unwrap().image().is_none());
    // The same program wrapped in P4DeviceConfig loads, and Get gives back what was set.
    let mut req = set_config(&prog, Action::VerifyAndCommit, 1);
    let wrapped = prost::Message::encode_to_vec(&koi_proto::p4::tmp::P4DeviceConfig {
        reassign: true,
        extras: None,
        device_data: prog.device_config.clone(),
    });
    req.config.as_mut().unwrap().p4_device_config = wrapped.clone();
    c.set_forwarding_pipeline_config(req).await.unwrap();
    let get = |rt: ResponseType| GetForwardingPipelineConfigRequest {
        device_id: DEVICE,
        response_type: rt as i32,
    };
    let all = c
        .get_forwarding_pipeline_config(get(ResponseType::All))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert_eq!(all.cookie.unwrap().cookie, 0xc0ffee);
    assert_eq!(all.p4info.unwrap(), p4info(&prog));
    assert_eq!(all.p4_device_config, wrapped);
    let cookie = c
        .get_forwarding_pipeline_config(get(ResponseType::CookieOnly))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert!(cookie.p4info.is_none() && cookie.p4_device_config.is_empty());
    assert_eq!(cookie.cookie.unwrap().cookie, 0xc0ffee);
    let pc = c
        .get_forwarding_pipeline_config(get(ResponseType::P4infoAndCookie))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert!(pc.p4info.is_some() && pc.p4_device_config.is_empty());
    let dc = c
        .get_forwarding_pipeline_config(get(ResponseType::DeviceConfigAndCookie))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert!(dc.p4info.is_none() && !dc.p4_device_config.is_empty());
    // RECONCILE_AND_COMMIT needs a config; COMMIT needs a saved config.
    let mut reconcile = set_config(&prog, Action::ReconcileAndCommit, 1);
    reconcile.config = None;
    let e = c
        .set_forwarding_pipeline_config(reconcile)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let mut commit = set_config(&prog, Action::Commit, 1);
    commit.config = None;
    let e = c.set_forwarding_pipeline_config(commit).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = c
        .set_forwarding_pipeline_config(set_config(&prog, Action::Commit, 1))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_report_each_update_and_roll_back_when_asked() {
    let rig = Rig::new(vec![]);
    let mut c = rig.client().await;
    let _s = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    let info = p4info(&prog);
    let table = id(&info, "dmac");
    c.write(write(
        vec![upd(update::Type::Insert, dmac(&info, MAC_A, 1))],
        1,
        Atomicity::ContinueOnError,
    ))
    .await
    .unwrap();
    // Continue on error: the duplicate fails, the others land.
    let e = c
        .write(write(
            vec![
                upd(update::Type::Modify, dmac(&info, MAC_A, 3)),
                upd(update::Type::Insert, dmac(&info, MAC_A, 2)),
                upd(update::Type::Insert, dmac(&info, MAC_B, 2)),
            ],
            1,
            Atomicity::ContinueOnError,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unknown);
    let codes: Vec<i32> = details(&e).iter().map(|d| d.canonical_code).collect();
    assert_eq!(codes, vec![0, Code::AlreadyExists as i32, 0]);
    let entries = read_table(&mut c, table).await.unwrap();
    assert_eq!(entries.len(), 2);
    // Rollback: the delete and the insert before the failure are taken back.
    let mac_c = [0x02, 0, 0, 0, 0, 0x0c];
    let e = c
        .write(write(
            vec![
                upd(update::Type::Delete, dmac(&info, MAC_B, 0)),
                upd(update::Type::Insert, dmac(&info, mac_c, 4)),
                upd(update::Type::Insert, dmac(&info, MAC_A, 4)),
            ],
            1,
            Atomicity::RollbackOnError,
        ))
        .await
        .unwrap_err();
    let codes: Vec<i32> = details(&e).iter().map(|d| d.canonical_code).collect();
    let aborted = Code::Aborted as i32;
    assert_eq!(codes, vec![aborted, aborted, Code::AlreadyExists as i32]);
    let after = read_table(&mut c, table).await.unwrap();
    assert_eq!(after, entries, "the state is as before the batch");
    // What P4Runtime wrote, koi ctl reads; and the reverse.
    let dump = rig.switch.command(None, "table_dump dmac").unwrap();
    assert!(
        dump.contains("02:00:00:00:00:0a") || dump.contains("0x02000000000a"),
        "{dump}"
    );
    rig.switch
        .command(None, "table_add dmac forward 0x02000000000c => 5")
        .unwrap();
    let entries = read_table(&mut c, table).await.unwrap();
    assert_eq!(entries.len(), 3);
    let c_entry = entries
        .iter()
        .find(|e| {
            matches!(&e.r#match[0].field_match_type,
                Some(field_match::FieldMatchType::Exact(x)) if x.value == mac_c.to_vec())
        })
        .expect("the entry koi ctl added");
    let Some(table_action::Type::Action(a)) = c_entry.action.as_ref().unwrap().r#type.as_ref()
    else {
        panic!("an action");
    };
    assert_eq!(a.params[0].value, vec![5], "canonical bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_config_takes_the_writes_until_commit_loads_it() {
    let rig = Rig::new(vec![]);
    let mut c = rig.client().await;
    let _s = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    let info = p4info(&prog);
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    let pl = rig.switch.pipeline(None).unwrap();
    assert_eq!(pl.generation(), 1);
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndSave, 1))
        .await
        .unwrap();
    c.write(write(
        vec![upd(update::Type::Insert, dmac(&info, MAC_B, 2))],
        1,
        Atomicity::ContinueOnError,
    ))
    .await
    .unwrap();
    // The live program has not changed and does not have the entry...
    assert_eq!(pl.generation(), 1);
    let live = rig.switch.command(None, "table_num_entries dmac").unwrap();
    assert!(live.trim().ends_with('0'), "{live}");
    // ... but reads see the saved config's state.
    assert_eq!(
        read_table(&mut c, id(&info, "dmac")).await.unwrap().len(),
        1
    );
    let mut commit = set_config(&prog, Action::Commit, 1);
    commit.config = None;
    c.set_forwarding_pipeline_config(commit).await.unwrap();
    assert_eq!(pl.generation(), 2);
    let live = rig.switch.command(None, "table_num_entries dmac").unwrap();
    assert!(live.trim().ends_with('1'), "{live}");
    assert_eq!(
        read_table(&mut c, id(&info, "dmac")).await.unwrap().len(),
        1
    );
    // VERIFY_AND_COMMIT starts afresh.
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    assert_eq!(pl.generation(), 3);
    assert!(
        read_table(&mut c, id(&info, "dmac"))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_out_to_the_cpu_port_comes_back_as_a_packet_in() {
    let rig = Rig::new(vec![]);
    let mut c = rig.client().await;
    let mut s = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    let info = p4info(&prog);
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    let out_meta = info
        .controller_packet_metadata
        .iter()
        .find(|m| m.preamble.as_ref().unwrap().name == "packet_out")
        .unwrap();
    let egress = out_meta
        .metadata
        .iter()
        .find(|m| m.name == "egress_port")
        .unwrap()
        .id;
    let mut frame = vec![0u8; 14];
    frame[..6].copy_from_slice(&MAC_B);
    frame[6..12].copy_from_slice(&MAC_A);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    frame.extend_from_slice(b"hello koi");
    let mut pad = 0;
    for m in &out_meta.metadata {
        if m.id != egress {
            pad = m.id;
        }
    }
    s.send(stream_message_request::Update::Packet(PacketOut {
        payload: frame.clone(),
        metadata: vec![
            PacketMetadata {
                metadata_id: egress,
                value: vec![0xff],
            },
            PacketMetadata {
                metadata_id: pad,
                value: vec![0],
            },
        ],
    }))
    .await;
    match s.next().await.unwrap() {
        stream_message_response::Update::Packet(p) => {
            assert_eq!(p.payload, frame);
            assert_eq!(p.metadata.len(), 2, "{p:?}");
        }
        other => panic!("expected a packet-in, got {other:?}"),
    }
    // Metadata that does not fit the P4Info: a stream error, nothing sent.
    s.send(stream_message_request::Update::Packet(PacketOut {
        payload: frame.clone(),
        metadata: vec![PacketMetadata {
            metadata_id: 99,
            value: vec![1],
        }],
    }))
    .await;
    match s.next().await.unwrap() {
        stream_message_response::Update::Error(e) => {
            assert_eq!(e.canonical_code, Code::InvalidArgument as i32, "{e:?}");
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
    // A backup's packet is refused.
    let mut backup = Stream::open(&mut c).await;
    backup.arbitrate(DEVICE, Some(0)).await;
    assert_eq!(backup.arbitration_code().await, Code::AlreadyExists as i32);
    backup
        .send(stream_message_request::Update::Packet(PacketOut {
            payload: frame,
            metadata: vec![],
        }))
        .await;
    match backup.next().await.unwrap() {
        stream_message_response::Update::Error(e) => {
            assert_eq!(e.canonical_code, Code::PermissionDenied as i32);
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
    let pl = rig.switch.pipeline(None).unwrap();
    assert_eq!(
        pl.counters
            .packet_outs
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}
