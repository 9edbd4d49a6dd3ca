//! Multicast groups and clone sessions.

mod common;

use common::*;
use koi_proto::p4runtime::{
    BackupReplica, CloneSessionEntry, MulticastGroupEntry, PacketReplicationEngineEntry, Replica,
    entity::Entity as E, packet_replication_engine_entry::Type as P, replica::PortKind,
    update::Type,
};
use koi_state::MirrorTarget;
use tonic::Code;

fn rep(port: &[u8], instance: u32) -> Replica {
    Replica {
        port_kind: Some(PortKind::Port(port.to_vec())),
        instance,
        backup_replicas: vec![],
    }
}

fn mcast(id: u32, replicas: Vec<Replica>, metadata: &[u8]) -> E {
    E::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
        r#type: Some(P::MulticastGroupEntry(MulticastGroupEntry {
            multicast_group_id: id,
            replicas,
            metadata: metadata.to_vec(),
        })),
    })
}

fn clone_s(id: u32, replicas: Vec<Replica>) -> CloneSessionEntry {
    CloneSessionEntry {
        session_id: id,
        replicas,
        ..Default::default()
    }
}

fn cl(c: CloneSessionEntry) -> E {
    E::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
        r#type: Some(P::CloneSessionEntry(c)),
    })
}

fn pairs(r: &Rig, g: u32) -> Vec<(u32, u16)> {
    r.s.replicate(g).iter().map(|x| (x.port, x.rid)).collect()
}

#[test]
#[allow(deprecated)]
fn multicast_groups() {
    let mut r = rig("tables.p4");
    let w = mcast(
        5,
        vec![rep(b"\x03", 1), rep(b"\x01", 1), rep(b"\x02", 2)],
        b"cookie",
    );
    assert_eq!(r.insert(w.clone()), Ok(koi_p4runtime::Effect::All));
    // Read back as written (order and all); the data plane replicates to each pair.
    assert_eq!(r.read(mcast(5, vec![], b"")).unwrap(), vec![w.clone()]);
    assert_eq!(r.read(mcast(0, vec![], b"")).unwrap(), vec![w.clone()]);
    assert_eq!(pairs(&r, 5), vec![(1, 1), (3, 1), (2, 2)]);
    assert_eq!(r.refused(Type::Insert, w.clone()), Code::AlreadyExists);
    // MODIFY replaces the replicas; zero-padded ports and the deprecated field work.
    let legacy = Replica {
        port_kind: Some(PortKind::EgressPort(9)),
        instance: 0,
        backup_replicas: vec![],
    };
    let m = mcast(5, vec![rep(b"\x00\x00\x00\x07", 3), legacy], b"");
    r.modify(m.clone()).unwrap();
    assert_eq!(r.read(mcast(5, vec![], b"")).unwrap(), vec![m]);
    assert_eq!(pairs(&r, 5), vec![(7, 3), (9, 0)]);
    // Refusals, none of which changes the group.
    let cases = [
        (
            mcast(0, vec![rep(b"\x01", 0)], b""),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            mcast(0x1_0000, vec![rep(b"\x01", 0)], b""),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            mcast(6, vec![rep(b"\x02\x00", 0)], b""),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            mcast(6, vec![rep(b"", 0)], b""),
            Type::Insert,
            Code::OutOfRange,
        ),
        (
            mcast(6, vec![rep(b"\x01\x00\x00\x00\x00", 0)], b""),
            Type::Insert,
            Code::OutOfRange,
        ),
        (
            mcast(6, vec![rep(b"\x01", 0x1_0000)], b""),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            mcast(6, vec![rep(b"\x01", 1), rep(b"\x01", 1)], b""),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            mcast(
                6,
                vec![Replica {
                    port_kind: None,
                    instance: 0,
                    backup_replicas: vec![],
                }],
                b"",
            ),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            mcast(
                6,
                vec![Replica {
                    backup_replicas: vec![BackupReplica {
                        port: b"\x02".to_vec(),
                        instance: 1,
                    }],
                    ..rep(b"\x01", 1)
                }],
                b"",
            ),
            Type::Insert,
            Code::Unimplemented,
        ),
        (
            mcast(5, vec![rep(b"\x01", 1), rep(b"\x01", 1)], b""),
            Type::Modify,
            Code::InvalidArgument,
        ),
        (
            mcast(6, vec![rep(b"\x01", 1)], b""),
            Type::Modify,
            Code::NotFound,
        ),
        (mcast(6, vec![], b""), Type::Delete, Code::NotFound),
    ];
    for (i, (e, ty, code)) in cases.into_iter().enumerate() {
        assert_eq!(r.refused(ty, e), code, "case {i}");
    }
    assert_eq!(pairs(&r, 5), vec![(7, 3), (9, 0)]);
    // A group written by `koi ctl` reads as koi-state has it.
    r.s.pre.group_create(9).unwrap();
    let n = r.s.pre.node_create(4, &[2, 1], &[]).unwrap();
    r.s.pre.associate(9, n).unwrap();
    assert_eq!(
        r.read(mcast(9, vec![], b"")).unwrap(),
        vec![mcast(9, vec![rep(b"\x01", 4), rep(b"\x02", 4)], b"")]
    );
    r.delete(mcast(5, vec![], b"")).unwrap();
    assert!(r.s.replicate(5).is_empty());
    assert_eq!(r.read(mcast(0, vec![], b"")).unwrap().len(), 1);
}

#[test]
fn clone_sessions() {
    let mut r = rig("tables.p4");
    let one = clone_s(3, vec![rep(b"\x05", 0)]);
    r.insert(cl(one.clone())).unwrap();
    assert_eq!(r.s.mirror_session(3), Some(MirrorTarget::Port(5)));
    assert_eq!(
        r.read(cl(clone_s(3, vec![]))).unwrap(),
        vec![cl(one.clone())]
    );
    assert_eq!(
        r.refused(Type::Insert, cl(one.clone())),
        Code::AlreadyExists
    );
    // Several replicas copy through a hidden multicast group.
    let many = clone_s(3, vec![rep(b"\x01", 1), rep(b"\x02", 2)]);
    r.modify(cl(many.clone())).unwrap();
    let g = koi_p4runtime::CLONE_GROUP_BASE + 3;
    assert_eq!(r.s.mirror_session(3), Some(MirrorTarget::Group(g)));
    assert_eq!(pairs(&r, g), vec![(1, 1), (2, 2)]);
    assert_eq!(
        r.read(cl(clone_s(0, vec![]))).unwrap(),
        vec![cl(many.clone())]
    );
    assert!(r.read(mcast(0, vec![], b"")).unwrap().is_empty());
    // Back to one port: the hidden group goes.
    r.modify(cl(one.clone())).unwrap();
    assert!(r.s.replicate(g).is_empty());
    // Refusals.
    let cases = [
        (
            clone_s(0, vec![rep(b"\x01", 0)]),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            clone_s(40_000, vec![rep(b"\x01", 0)]),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            CloneSessionEntry {
                packet_length_bytes: 100,
                ..clone_s(4, vec![])
            },
            Type::Insert,
            Code::Unimplemented,
        ),
        (
            CloneSessionEntry {
                packet_length_bytes: -1,
                ..clone_s(4, vec![])
            },
            Type::Insert,
            Code::InvalidArgument,
        ),
        (
            CloneSessionEntry {
                class_of_service: 2,
                ..clone_s(4, vec![])
            },
            Type::Insert,
            Code::Unimplemented,
        ),
        (
            clone_s(4, vec![rep(b"\x02\x00", 0)]),
            Type::Insert,
            Code::InvalidArgument,
        ),
        (clone_s(4, vec![]), Type::Modify, Code::NotFound),
        (clone_s(4, vec![]), Type::Delete, Code::NotFound),
    ];
    for (i, (c, ty, code)) in cases.into_iter().enumerate() {
        assert_eq!(r.refused(ty, cl(c)), code, "case {i}");
    }
    r.delete(cl(clone_s(3, vec![]))).unwrap();
    assert_eq!(r.s.mirror_session(3), None);
    assert!(r.read(cl(clone_s(0, vec![]))).unwrap().is_empty());
    // A session with no replica clones nothing.
    r.insert(cl(clone_s(8, vec![]))).unwrap();
    assert_eq!(
        r.read(cl(clone_s(8, vec![]))).unwrap(),
        vec![cl(clone_s(8, vec![]))]
    );
    let empty = PacketReplicationEngineEntry { r#type: None };
    assert_eq!(
        r.refused(Type::Insert, E::PacketReplicationEngineEntry(empty.clone())),
        Code::InvalidArgument
    );
    assert_eq!(
        r.read(E::PacketReplicationEngineEntry(empty))
            .unwrap_err()
            .code,
        Code::InvalidArgument
    );
}
