//! `RECONCILE_AND_COMMIT`: a new program with the forwarding state carried over. Entries
//! (with their direct counters), multicast groups and digest configs written through
//! P4Runtime read back the same after it, through P4Runtime and `koi ctl`; a program whose
//! state cannot be carried over is INVALID_ARGUMENT listing why, and nothing changes;
//! `koi ctl load` on the same switch carries the controller's records over too.

mod support;

use koi_proto::p4runtime::set_forwarding_pipeline_config_request::Action;
use koi_proto::p4runtime::{
    DigestEntry, Entity, MulticastGroupEntry, PacketReplicationEngineEntry, Replica, digest_entry,
    entity, packet_replication_engine_entry, replica, update, write_request::Atomicity,
};
use koi_runtime::Program;
use support::*;
use tonic::Code;

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];

fn mc_group(ports: &[u32]) -> Entity {
    Entity {
        entity: Some(entity::Entity::PacketReplicationEngineEntry(
            PacketReplicationEngineEntry {
                r#type: Some(packet_replication_engine_entry::Type::MulticastGroupEntry(
                    MulticastGroupEntry {
                        multicast_group_id: 1,
                        replicas: ports
                            .iter()
                            .map(|p| Replica {
                                instance: 0,
                                port_kind: Some(replica::PortKind::Port(p.to_be_bytes().to_vec())),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    },
                )),
            },
        )),
    }
}

fn digest(info: &koi_proto::p4info::P4Info) -> Entity {
    Entity {
        entity: Some(entity::Entity::DigestEntry(DigestEntry {
            digest_id: info.digests[0].preamble.as_ref().unwrap().id,
            config: Some(digest_entry::Config {
                max_timeout_ns: 1_000_000,
                max_list_size: 8,
                ack_timeout_ns: 5_000_000,
            }),
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_and_commit_carries_the_forwarding_state_over() {
    let rig = Rig::new(vec![]);
    let mut c = rig.client().await;
    let _s = primary(&mut c, 1).await;
    let prog = program("l2_learning.p4");
    let info = p4info(&prog);
    c.set_forwarding_pipeline_config(set_config(&prog, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    let entry = dmac(&info, MAC_A, 2);
    let any_pre = Entity {
        entity: Some(entity::Entity::PacketReplicationEngineEntry(
            PacketReplicationEngineEntry {
                r#type: Some(packet_replication_engine_entry::Type::MulticastGroupEntry(
                    MulticastGroupEntry::default(),
                )),
            },
        )),
    };
    let any_digest = Entity {
        entity: Some(entity::Entity::DigestEntry(DigestEntry::default())),
    };
    let entity_of = |e: koi_proto::p4runtime::TableEntry| Entity {
        entity: Some(entity::Entity::TableEntry(e)),
    };
    c.write(write(
        vec![
            upd(update::Type::Insert, entry.clone()),
            update_of(update::Type::Insert, mc_group(&[1, 2, 3])),
            update_of(update::Type::Insert, digest(&info)),
        ],
        1,
        Atomicity::ContinueOnError,
    ))
    .await
    .unwrap();
    let table = entity_of(koi_proto::p4runtime::TableEntry {
        table_id: entry.table_id,
        ..Default::default()
    });
    let before = (
        read_all(&mut c, table.clone()).await.unwrap(),
        read_all(&mut c, any_pre.clone()).await.unwrap(),
        read_all(&mut c, any_digest.clone()).await.unwrap(),
    );
    assert_eq!(before.0.len(), 1);
    assert_eq!(before.1.len(), 1);
    assert_eq!(before.2.len(), 1);
    let pl = rig.switch.pipeline(None).unwrap();
    let generation = pl.generation();

    // The same program again, reconciled: everything reads back the same.
    c.set_forwarding_pipeline_config(set_config(&prog, Action::ReconcileAndCommit, 1))
        .await
        .unwrap();
    assert_eq!(pl.generation(), generation + 1);
    let after = (
        read_all(&mut c, table.clone()).await.unwrap(),
        read_all(&mut c, any_pre.clone()).await.unwrap(),
        read_all(&mut c, any_digest.clone()).await.unwrap(),
    );
    assert_eq!(after, before);
    let dump = rig.switch.command(None, "table_dump dmac").unwrap();
    assert!(
        dump.contains("02:00:00:00:00:0a") || dump.contains("0x02000000000a"),
        "{dump}"
    );

    // A program whose dmac matches another field: the entry cannot be carried over.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(examples().join("l2_learning.p4"))
        .unwrap()
        .replace(
            "key = { hdr.eth.dst : exact; }",
            "key = { hdr.eth.dst : ternary; }",
        );
    let path = dir.path().join("l2_ternary.p4");
    std::fs::write(&path, text).unwrap();
    let other = Program::compile_file(&path, &Default::default()).unwrap();
    let e = c
        .set_forwarding_pipeline_config(set_config(&other, Action::ReconcileAndCommit, 1))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("dmac"), "{}", e.message());
    assert_eq!(pl.generation(), generation + 1, "nothing changed");
    assert_eq!(read_all(&mut c, table.clone()).await.unwrap(), before.0);

    // `koi ctl load` of the same program: the controller's records follow it too.
    let out = rig
        .switch
        .command(
            None,
            &format!("load {}", examples().join("l2_learning.p4").display()),
        )
        .unwrap();
    assert!(out.contains("state carried over"), "{out}");
    assert_eq!(pl.generation(), generation + 2);
    assert_eq!(read_all(&mut c, table).await.unwrap(), before.0);
    assert_eq!(read_all(&mut c, any_pre).await.unwrap(), before.1);
    assert_eq!(read_all(&mut c, any_digest).await.unwrap(), before.2);
}

fn update_of(kind: update::Type, e: Entity) -> koi_proto::p4runtime::Update {
    koi_proto::p4runtime::Update {
        r#type: kind as i32,
        entity: Some(e),
    }
}
