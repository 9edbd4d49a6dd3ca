//! Hostile input: huge indices and lists, wrong widths, empty and random messages never
//! panic, and refused updates change nothing.

mod common;

use common::*;
use koi_p4runtime::{Target, Undo};
use koi_proto::p4runtime::{
    self as p4, ActionProfileGroup, ActionProfileMember, Entity, Index, RegisterEntry, TableEntry,
    Update, ValueSetEntry, ValueSetMember, action_profile_group::Member, entity::Entity as E,
    update::Type,
};
use prost::Message;
use tonic::Code;

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[test]
fn huge_lists_and_indices_are_refused_quickly() {
    let mut r = rig("externs.p4");
    // A group of a million members (unknown ones, then one known member a million times).
    let mut g = ActionProfileGroup {
        action_profile_id: r.profile("sel"),
        group_id: 1,
        members: (1..=1_000_000)
            .map(|m| Member {
                member_id: m,
                weight: 1,
                watch_kind: None,
            })
            .collect(),
        max_size: 0,
    };
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileGroup(g.clone())),
        Code::NotFound
    );
    r.insert(E::ActionProfileMember(ActionProfileMember {
        action_profile_id: r.profile("sel"),
        member_id: 1,
        action: Some(action(r.action("nop"), &[])),
    }))
    .unwrap();
    let after_member = observe(&r);
    for m in &mut g.members {
        m.member_id = 1;
    }
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileGroup(g)),
        Code::InvalidArgument
    );
    // A value set of a million members, a table entry of a million fields, an action of a
    // million parameters.
    let vs = ValueSetEntry {
        value_set_id: r.value_set("vs_types"),
        members: vec![
            ValueSetMember {
                r#match: vec![exact(1, b"\x01")]
            };
            1_000_000
        ],
    };
    assert_eq!(
        r.refused(Type::Modify, E::ValueSetEntry(vs)),
        Code::ResourceExhausted
    );
    let e = entry(
        r.table("t_plain"),
        vec![exact(1, b"\x01"); 1_000_000],
        direct(action(r.action("nop"), &[])),
        0,
    );
    assert_eq!(r.refused(Type::Insert, te(e)), Code::InvalidArgument);
    let big = vec![&b"\x01"[..]; 1_000_000];
    let e = entry(
        r.table("t_plain"),
        vec![exact(1, b"\x01")],
        direct(action(r.action("nop"), &big)),
        0,
    );
    assert_eq!(r.refused(Type::Insert, te(e)), Code::InvalidArgument);
    // Huge and negative indices.
    for (i, code) in [
        (i64::MAX, Code::OutOfRange),
        (i64::MIN, Code::InvalidArgument),
    ] {
        let reg = RegisterEntry {
            register_id: r.register("r32"),
            index: Some(Index { index: i }),
            data: Some(p4::P4Data {
                data: Some(p4::p4_data::Data::Bitstring(vec![1])),
            }),
        };
        assert_eq!(r.refused(Type::Modify, E::RegisterEntry(reg.clone())), code);
        assert_eq!(r.read(E::RegisterEntry(reg)).unwrap_err().code, code);
    }
    assert_eq!(observe(&r), after_member);
    // A megabyte of zero padding is still an in-range value.
    let mut long = vec![0u8; 1 << 20];
    long.push(5);
    let e = entry(
        r.table("t_plain"),
        vec![exact(1, &long)],
        direct(action(r.action("nop"), &[])),
        0,
    );
    r.insert(te(e)).unwrap();
    assert_eq!(r.entries("I.t_plain")[0].r#match, vec![exact(1, b"\x05")]);
}

#[test]
fn mismatched_p4info_is_refused() {
    let a = rig("tables.p4");
    let b = rig("externs.p4");
    assert_eq!(
        Target::new(a.info.clone(), &b.s).unwrap_err().code,
        Code::InvalidArgument
    );
    assert!(Target::new(Default::default(), &b.s).is_ok());
}

/// Valid updates of every kind, to mutate.
fn seeds(r: &Rig) -> Vec<Update> {
    let mut v = vec![
        update(
            Type::Insert,
            te(entry(
                r.table("t_plain"),
                vec![exact(1, b"\x07")],
                direct(action(r.action("nop"), &[])),
                0,
            )),
        ),
        update(
            Type::Insert,
            E::ActionProfileMember(ActionProfileMember {
                action_profile_id: r.profile("sel"),
                member_id: 3,
                action: Some(action(r.action("fwd"), &[b"\x01"])),
            }),
        ),
        update(
            Type::Insert,
            E::ActionProfileGroup(ActionProfileGroup {
                action_profile_id: r.profile("sel"),
                group_id: 3,
                members: vec![Member {
                    member_id: 3,
                    weight: 1,
                    watch_kind: None,
                }],
                max_size: 2,
            }),
        ),
        update(
            Type::Modify,
            E::RegisterEntry(RegisterEntry {
                register_id: r.register("r_pair"),
                index: Some(Index { index: 1 }),
                data: Some(p4::P4Data {
                    data: Some(p4::p4_data::Data::Struct(p4::P4StructLike {
                        members: vec![
                            p4::P4Data {
                                data: Some(p4::p4_data::Data::Bitstring(vec![1, 2])),
                            },
                            p4::P4Data {
                                data: Some(p4::p4_data::Data::Bitstring(vec![3])),
                            },
                        ],
                    })),
                }),
            }),
        ),
        update(
            Type::Modify,
            E::ValueSetEntry(ValueSetEntry {
                value_set_id: r.value_set("vs_types"),
                members: vec![ValueSetMember {
                    r#match: vec![exact(1, b"\x88\xb5")],
                }],
            }),
        ),
    ];
    let mut sel = entry(r.table("t_sel"), vec![exact(1, b"\x01")], None, 0);
    sel.action = Some(p4::TableAction {
        r#type: Some(p4::table_action::Type::ActionProfileActionSet(
            p4::ActionProfileActionSet {
                action_profile_actions: vec![p4::ActionProfileAction {
                    action: Some(action(r.action("fwd"), &[b"\x02"])),
                    weight: 1,
                    watch_kind: None,
                }],
                ..Default::default()
            },
        )),
    });
    v.push(update(Type::Insert, te(sel)));
    v
}

#[test]
fn random_and_mutated_messages_never_panic_and_refusals_change_nothing() {
    for file in ["externs.p4", "tables.p4"] {
        let mut r = rig(file);
        let seeds: Vec<Vec<u8>> = seeds(&rig("externs.p4"))
            .iter()
            .map(|u| u.encode_to_vec())
            .collect();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut accepted = 0;
        for round in 0..6_000 {
            let bytes = if round % 3 == 0 {
                (0..rng.below(64))
                    .map(|_| rng.next() as u8)
                    .collect::<Vec<u8>>()
            } else {
                let mut b = seeds[rng.below(seeds.len() as u64) as usize].clone();
                for _ in 0..=rng.below(4) {
                    let i = rng.below(b.len() as u64) as usize;
                    match rng.below(3) {
                        0 => b[i] = rng.next() as u8,
                        1 => b.insert(i, rng.next() as u8),
                        _ => {
                            b.remove(i);
                        }
                    }
                    if b.is_empty() {
                        break;
                    }
                }
                b
            };
            if let Ok(u) = Update::decode(&bytes[..]) {
                let before = observe(&r);
                let mut undo = Undo::default();
                match koi_p4runtime::apply(&mut r.t, &mut r.s, &u, &mut undo) {
                    Ok(_) => accepted += 1,
                    Err(e) => {
                        assert!(!e.message.is_empty());
                        assert!(undo.is_empty());
                        assert_eq!(
                            observe(&r),
                            before,
                            "refused update changed the state: {u:?}"
                        );
                    }
                }
                if let Some(e) = &u.entity {
                    let _ = koi_p4runtime::read(&r.t, &r.s, e, &mut |_| {});
                }
            }
            if let Ok(e) = Entity::decode(&bytes[..]) {
                let _ = koi_p4runtime::read(&r.t, &r.s, &e, &mut |_| {});
            }
            if let Ok(p) = p4::PacketOut::decode(&bytes[..]) {
                let _ = koi_p4runtime::packet_out(&r.t, &p);
            }
            let _ = koi_p4runtime::packet_in(&r.t, &bytes);
        }
        let _ = koi_p4runtime::idle_notifications(&mut r.t, &mut r.s, u64::MAX);
        assert!(file == "tables.p4" || accepted > 0);
        // Every entry read back can be written back (modify) as it is.
        let all = r.read_entries(TableEntry::default());
        for mut e in all.into_iter().filter(|e| !e.is_const) {
            e.is_const = false;
            r.modify(te(e)).unwrap();
        }
    }
}
