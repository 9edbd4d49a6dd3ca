//! Rolling back a batch whose last update fails restores everything a controller or
//! simple_switch_CLI can see, and the state behaves afterwards exactly as a copy taken
//! before the batch (same entry, member, group and node handles).

mod common;

use common::*;
use koi_p4runtime::{P4Error, Undo};
use koi_proto::p4runtime::{
    self as p4, ActionProfileAction, ActionProfileActionSet, ActionProfileGroup,
    ActionProfileMember, CloneSessionEntry, CounterData, CounterEntry, DigestEntry,
    DirectCounterEntry, DirectMeterEntry, Index, MeterConfig, MeterEntry, MulticastGroupEntry,
    P4Data, PacketReplicationEngineEntry, RegisterEntry, Replica, TableEntry, ValueSetEntry,
    ValueSetMember, action_profile_group::Member, digest_entry, entity::Entity as E,
    p4_data::Data as D, packet_replication_engine_entry::Type as P, replica::PortKind,
    table_action::Type as A, update::Type,
};
use tonic::Code;

/// Applies `batch` with one undo log; the last update must fail; rolls back. Checks that the
/// batch did change what `observe` sees before it was rolled back.
fn run_and_roll_back(r: &mut Rig, batch: Vec<(Type, E)>) {
    let before = observe(r);
    let mut undo = Undo::default();
    let n = batch.len();
    for (i, (ty, e)) in batch.into_iter().enumerate() {
        let res: Result<_, P4Error> =
            koi_p4runtime::apply(&mut r.t, &mut r.s, &update(ty, e), &mut undo);
        if i + 1 < n {
            res.unwrap_or_else(|e| panic!("update {i}: {e}"));
        } else {
            assert!(res.is_err(), "the last update must fail");
        }
    }
    assert!(!undo.is_empty());
    assert_ne!(observe(r), before);
    koi_p4runtime::rollback(&mut r.t, &mut r.s, undo);
}

fn cfg(cir: i64) -> Option<MeterConfig> {
    Some(MeterConfig {
        cir,
        cburst: 3,
        pir: cir * 2,
        pburst: 6,
        eburst: 0,
    })
}

fn cd(b: i64, p: i64) -> Option<CounterData> {
    Some(CounterData {
        byte_count: b,
        packet_count: p,
    })
}

fn rep(port: u8, instance: u32) -> Replica {
    Replica {
        port_kind: Some(PortKind::Port(vec![port])),
        instance,
        backup_replicas: vec![],
    }
}

fn mcast(id: u32, replicas: Vec<Replica>) -> E {
    E::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
        r#type: Some(P::MulticastGroupEntry(MulticastGroupEntry {
            multicast_group_id: id,
            replicas,
            metadata: b"m".to_vec(),
        })),
    })
}

fn clone_s(id: u32, replicas: Vec<Replica>) -> E {
    E::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
        r#type: Some(P::CloneSessionEntry(CloneSessionEntry {
            session_id: id,
            replicas,
            ..Default::default()
        })),
    })
}

#[allow(deprecated)]
fn t_exact(r: &Rig, mac: u8, port: u8) -> TableEntry {
    let mut e = entry(
        r.table("t_exact"),
        vec![exact(1, &[mac]), exact(2, b"\x01")],
        direct(action(r.action("fwd_m"), &[&[port]])),
        0,
    );
    e.counter_data = cd(u64::from(mac) as i64 * 10, 1);
    e.meter_config = cfg(1000 * i64::from(mac));
    e.idle_timeout_ns = 5_000;
    e.metadata = vec![mac; 3];
    e.controller_metadata = u64::from(port);
    e
}

fn hit_all(r: &mut Rig) {
    let t = r.s.table_id("I.t_exact").unwrap();
    let idx: Vec<u32> =
        r.s.table_by_id(t)
            .unwrap()
            .entries()
            .map(|e| e.handle & 0xff_ffff)
            .collect();
    for i in idx {
        r.s.record_hit(t, i, 100, 7);
        r.s.execute_direct_meter(t, i, 100, 7);
    }
}

#[test]
fn table_and_pre_batches_roll_back_exactly() {
    let mut r = rig("tables.p4");
    // Before the batch: entries with resources, a hit or two, a default, PRE objects.
    for mac in 1..=3 {
        r.insert(te(t_exact(&r, mac, mac))).unwrap();
    }
    hit_all(&mut r);
    let mut d = entry(
        r.table("t_lpm"),
        vec![],
        direct(action(r.action("route"), &[b"\x01", b"\x02"])),
        0,
    );
    d.is_default_action = true;
    d.metadata = b"dflt".to_vec();
    r.modify(te(d)).unwrap();
    r.insert(mcast(1, vec![rep(1, 1), rep(2, 1)])).unwrap();
    r.insert(mcast(2, vec![rep(3, 0)])).unwrap();
    r.insert(clone_s(1, vec![rep(4, 0)])).unwrap();
    r.insert(clone_s(2, vec![rep(4, 1), rep(5, 2)])).unwrap();
    r.s.pre.node_create(9, &[9], &[]).unwrap();
    let before = observe(&r);
    let copy_s = r.s.clone();
    let copy_t = r.t.clone();

    let t_lpm = r.table("t_lpm");
    let key = |r: &Rig, mac: u8| {
        let mut k = t_exact(r, mac, 0);
        k.action = None;
        k
    };
    let mut modified = t_exact(&r, 2, 9);
    modified.meter_config = None;
    modified.idle_timeout_ns = 0;
    modified.metadata = Vec::new();
    let mut reset_default = TableEntry {
        table_id: t_lpm,
        is_default_action: true,
        ..Default::default()
    };
    reset_default.action = None;
    let mut dflt2 = entry(
        r.table("t_ternary"),
        vec![],
        direct(action(r.action("fwd"), &[b"\x04"])),
        0,
    );
    dflt2.is_default_action = true;
    let batch = vec![
        (Type::Insert, te(t_exact(&r, 4, 4))),
        (Type::Modify, te(modified)),
        (Type::Delete, te(key(&r, 1))),
        (Type::Insert, te(t_exact(&r, 1, 7))),
        (
            Type::Modify,
            E::DirectCounterEntry(DirectCounterEntry {
                table_entry: Some(key(&r, 3)),
                data: cd(1, 1),
            }),
        ),
        (
            Type::Modify,
            E::DirectMeterEntry(DirectMeterEntry {
                table_entry: Some(key(&r, 3)),
                config: None,
                counter_data: None,
            }),
        ),
        (Type::Modify, te(reset_default)),
        (Type::Modify, te(dflt2)),
        (
            Type::Insert,
            te(entry(
                r.table("t_ternary"),
                vec![exact(2, b"\x01")],
                direct(action(r.action("fwd"), &[b"\x01"])),
                9,
            )),
        ),
        (
            Type::Delete,
            te(entry(r.table("t_init"), vec![exact(1, b"\x11")], None, 0)),
        ),
        (
            Type::Modify,
            te(entry(
                r.table("t_init"),
                vec![exact(1, b"\x06")],
                direct(action(r.action("drop"), &[])),
                0,
            )),
        ),
        (
            Type::Insert,
            te(entry(
                r.table("t_translated"),
                vec![exact(1, b"\x01"), exact(2, b"new")],
                direct(action(r.action("NoAction"), &[])),
                0,
            )),
        ),
        (Type::Insert, mcast(3, vec![rep(7, 7)])),
        (Type::Modify, mcast(1, vec![rep(8, 8)])),
        (Type::Delete, mcast(2, vec![])),
        (Type::Insert, clone_s(3, vec![rep(1, 0), rep(2, 0)])),
        (Type::Modify, clone_s(1, vec![rep(6, 3), rep(7, 3)])),
        (Type::Delete, clone_s(2, vec![])),
        // The table holds 4 entries: this one is refused.
        (Type::Insert, te(t_exact(&r, 6, 6))),
    ];
    run_and_roll_back(&mut r, batch);
    assert_eq!(observe(&r), before);

    // The rolled-back state and the copy behave the same from here on.
    let mut twin = Rig {
        t: copy_t,
        s: copy_s,
        info: r.info.clone(),
        pipeline: r.pipeline.clone(),
    };
    for rig in [&mut r, &mut twin] {
        rig.delete(te(key(rig, 2))).unwrap();
        rig.insert(te(t_exact(rig, 9, 9))).unwrap();
        rig.insert(te(t_exact(rig, 8, 8))).unwrap();
        rig.insert(mcast(4, vec![rep(1, 2)])).unwrap();
        rig.insert(clone_s(5, vec![rep(1, 2), rep(1, 3)])).unwrap();
    }
    assert_eq!(observe(&r), observe(&twin));
}

fn mem(r: &Rig, profile: &str, id: u32, port: u8) -> E {
    E::ActionProfileMember(ActionProfileMember {
        action_profile_id: r.profile(profile),
        member_id: id,
        action: Some(action(r.action("fwd"), &[&[port]])),
    })
}

fn grp(r: &Rig, id: u32, members: &[u32]) -> E {
    E::ActionProfileGroup(ActionProfileGroup {
        action_profile_id: r.profile("sel"),
        group_id: id,
        members: members
            .iter()
            .map(|&m| Member {
                member_id: m,
                weight: 1,
                watch_kind: None,
            })
            .collect(),
        max_size: 0,
    })
}

fn bits(v: &[u8]) -> Option<P4Data> {
    Some(P4Data {
        data: Some(D::Bitstring(v.to_vec())),
    })
}

#[test]
fn profile_and_extern_batches_roll_back_exactly() {
    let mut r = rig("externs.p4");
    for i in 1..=4 {
        r.insert(mem(&r, "ap", i, i as u8)).unwrap();
        r.insert(mem(&r, "sel", i, i as u8)).unwrap();
    }
    r.insert(grp(&r, 10, &[1, 2])).unwrap();
    r.insert(grp(&r, 11, &[3])).unwrap();
    r.insert(te(entry(
        r.table("t_ap"),
        vec![exact(1, b"\x01")],
        member(1),
        0,
    )))
    .unwrap();
    r.insert(te(entry(
        r.table("t_sel"),
        vec![exact(1, b"\x01")],
        group(10),
        0,
    )))
    .unwrap();
    r.insert(te(entry(
        r.table("t_sel"),
        vec![exact(1, b"\x02")],
        group(11),
        0,
    )))
    .unwrap();
    let reg = |r: &Rig, name: &str, i: Option<i64>, d| {
        E::RegisterEntry(RegisterEntry {
            register_id: r.register(name),
            index: i.map(|index| Index { index }),
            data: d,
        })
    };
    r.modify(reg(&r, "r32", Some(3), bits(b"\x33"))).unwrap();
    let counter = |r: &Rig, i: Option<i64>, d| {
        E::CounterEntry(CounterEntry {
            counter_id: r.counter("c_pkts"),
            index: i.map(|index| Index { index }),
            data: d,
        })
    };
    r.modify(counter(&r, Some(1), cd(5, 5))).unwrap();
    let meter = |r: &Rig, i: Option<i64>, c| {
        E::MeterEntry(MeterEntry {
            meter_id: r.meter("m_pkts"),
            index: i.map(|index| Index { index }),
            config: c,
            counter_data: None,
        })
    };
    r.modify(meter(&r, Some(1), cfg(10))).unwrap();
    let ext = r.s.extern_id("I.m_pkts").unwrap();
    r.s.execute_meter(ext, 1, 64, 5_000);
    let vs = |r: &Rig, m: &[&[u8]]| {
        E::ValueSetEntry(ValueSetEntry {
            value_set_id: r.value_set("vs_types"),
            members: m
                .iter()
                .map(|v| ValueSetMember {
                    r#match: vec![exact(1, v)],
                })
                .collect(),
        })
    };
    r.modify(vs(&r, &[b"\x01", b"\x02"])).unwrap();
    let dg = |r: &Rig, t: i64| {
        E::DigestEntry(DigestEntry {
            digest_id: r.digest("learn_t"),
            config: Some(digest_entry::Config {
                max_timeout_ns: t,
                max_list_size: 1,
                ack_timeout_ns: 0,
            }),
        })
    };
    r.insert(dg(&r, 5)).unwrap();
    let before = observe(&r);
    let (copy_s, copy_t) = (r.s.clone(), r.t.clone());

    let batch = vec![
        (Type::Insert, mem(&r, "ap", 9, 9)),
        (Type::Modify, mem(&r, "ap", 1, 7)),
        (Type::Delete, mem(&r, "ap", 2, 0)),
        (
            Type::Modify,
            te(entry(
                r.table("t_ap"),
                vec![exact(1, b"\x01")],
                member(9),
                0,
            )),
        ),
        (Type::Delete, mem(&r, "ap", 1, 0)),
        (Type::Insert, mem(&r, "sel", 9, 9)),
        (Type::Insert, grp(&r, 12, &[4, 9])),
        (Type::Modify, grp(&r, 10, &[3, 4])),
        (
            Type::Delete,
            te(entry(r.table("t_sel"), vec![exact(1, b"\x02")], None, 0)),
        ),
        (Type::Delete, grp(&r, 11, &[])),
        (Type::Delete, mem(&r, "sel", 2, 0)),
        (
            Type::Modify,
            te(entry(
                r.table("t_sel"),
                vec![exact(1, b"\x01")],
                group(12),
                0,
            )),
        ),
        (Type::Modify, reg(&r, "r32", Some(3), bits(b"\x44"))),
        (Type::Modify, reg(&r, "r32", None, bits(b"\x55"))),
        (
            Type::Modify,
            reg(
                &r,
                "r_pair",
                Some(1),
                Some(P4Data {
                    data: Some(D::Struct(p4::P4StructLike {
                        members: vec![bits(b"\x01").unwrap(), bits(b"\x02").unwrap()],
                    })),
                }),
            ),
        ),
        (Type::Modify, counter(&r, None, cd(9, 9))),
        (Type::Modify, counter(&r, Some(1), cd(1, 1))),
        (Type::Modify, meter(&r, Some(1), None)),
        (Type::Modify, meter(&r, None, cfg(99))),
        (Type::Modify, vs(&r, &[b"\x03"])),
        (Type::Modify, dg(&r, 6)),
        (Type::Delete, dg(&r, 0)),
        (Type::Insert, dg(&r, 7)),
        // A member still used by group 12: refused.
        (Type::Delete, mem(&r, "sel", 9, 0)),
    ];
    run_and_roll_back(&mut r, batch);
    assert_eq!(observe(&r), before);
    // The meter's buckets are back too: both meters mark the next packets alike.
    let mut twin = Rig {
        t: copy_t,
        s: copy_s,
        info: r.info.clone(),
        pipeline: r.pipeline.clone(),
    };
    for _ in 0..5 {
        assert_eq!(
            r.s.execute_meter(ext, 1, 64, 6_000),
            twin.s.execute_meter(ext, 1, 64, 6_000)
        );
    }
    for rig in [&mut r, &mut twin] {
        rig.insert(mem(rig, "ap", 20, 1)).unwrap();
        rig.insert(mem(rig, "sel", 20, 1)).unwrap();
        rig.insert(grp(rig, 20, &[20])).unwrap();
    }
    assert_eq!(observe(&r), observe(&twin));
}

fn set(r: &Rig, ports: &[u8]) -> Option<p4::TableAction> {
    Some(p4::TableAction {
        r#type: Some(A::ActionProfileActionSet(ActionProfileActionSet {
            action_profile_actions: ports
                .iter()
                .map(|p| ActionProfileAction {
                    action: Some(action(r.action("fwd"), &[&[*p]])),
                    weight: 1,
                    watch_kind: None,
                })
                .collect(),
            ..Default::default()
        })),
    })
}

#[test]
fn one_shot_batches_roll_back_exactly() {
    let mut r = rig("externs.p4");
    let sel = |r: &Rig, k: u8, a| entry(r.table("t_sel"), vec![exact(1, &[k])], a, 0);
    r.insert(te(sel(&r, 1, set(&r, &[1, 2])))).unwrap();
    r.insert(te(sel(&r, 2, set(&r, &[3])))).unwrap();
    let before = observe(&r);
    let batch = vec![
        (Type::Insert, te(sel(&r, 3, set(&r, &[4, 5, 6])))),
        (Type::Modify, te(sel(&r, 1, set(&r, &[7])))),
        (Type::Delete, te(sel(&r, 2, None))),
        // 16 members at most: 1 + 3 + 13 > 16.
        (Type::Insert, te(sel(&r, 4, set(&r, &[1; 13])))),
    ];
    run_and_roll_back(&mut r, batch);
    assert_eq!(observe(&r), before);
    let big = te(sel(&r, 4, set(&r, &[1; 15])));
    assert_eq!(r.refused(Type::Insert, big), Code::ResourceExhausted);
    assert_eq!(observe(&r), before);
}
