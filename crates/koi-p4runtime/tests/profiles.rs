//! Action profile members and groups, and one-shot action selector programming.

mod common;

use common::*;
use koi_proto::p4runtime::{
    self as p4, ActionProfileAction, ActionProfileActionSet, ActionProfileGroup,
    ActionProfileMember, TableEntry, action_profile_group::Member, entity::Entity as E,
    table_action::Type as A, update::Type,
};
use tonic::Code;

fn mem(r: &Rig, profile: &str, id: u32, port: &[u8]) -> E {
    E::ActionProfileMember(ActionProfileMember {
        action_profile_id: r.profile(profile),
        member_id: id,
        action: Some(action(r.action("fwd"), &[port])),
    })
}

fn grp(r: &Rig, id: u32, members: &[(u32, i32)], max_size: i32) -> ActionProfileGroup {
    ActionProfileGroup {
        action_profile_id: r.profile("sel"),
        group_id: id,
        members: members
            .iter()
            .map(|&(m, w)| Member {
                member_id: m,
                weight: w,
                watch_kind: None,
            })
            .collect(),
        max_size,
    }
}

fn ap_entry(r: &Rig, mac: &[u8], a: Option<p4::TableAction>) -> TableEntry {
    entry(r.table("t_ap"), vec![exact(1, mac)], a, 0)
}

fn sel_entry(r: &Rig, ty: &[u8], a: Option<p4::TableAction>) -> TableEntry {
    entry(r.table("t_sel"), vec![exact(1, ty)], a, 0)
}

#[test]
fn members_are_written_read_and_referenced() {
    let mut r = rig("externs.p4");
    let m = mem(&r, "ap", 100, b"\x01");
    assert_eq!(r.insert(m.clone()), Ok(koi_p4runtime::Effect::All));
    assert_eq!(r.read(m.clone()).unwrap(), vec![m.clone()]);
    assert_eq!(r.refused(Type::Insert, m.clone()), Code::AlreadyExists);
    // Refusals: id 0, unknown profile, no action, an action of no table of the profile.
    assert_eq!(
        r.refused(Type::Insert, mem(&r, "ap", 0, b"\x01")),
        Code::InvalidArgument
    );
    let E::ActionProfileMember(mut x) = mem(&r, "ap", 5, b"\x01") else {
        unreachable!()
    };
    x.action_profile_id = 0x1100_0001;
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileMember(x.clone())),
        Code::NotFound
    );
    x.action_profile_id = r.profile("ap");
    x.action = None;
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileMember(x.clone())),
        Code::InvalidArgument
    );
    x.action = Some(action(r.action("count_it"), &[]));
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileMember(x.clone())),
        Code::InvalidArgument
    );
    // NoAction is only the tables' default action: no member runs it.
    x.action = Some(action(r.action("NoAction"), &[]));
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileMember(x)),
        Code::PermissionDenied
    );
    // Entries point at members by the controller's id.
    let e = ap_entry(&r, b"\x0a", member(100));
    r.insert(te(e.clone())).unwrap();
    assert_eq!(r.entries("I.t_ap"), vec![e]);
    assert_eq!(
        r.refused(Type::Insert, te(ap_entry(&r, b"\x0b", member(7)))),
        Code::NotFound
    );
    let a = direct(action(r.action("fwd"), &[b"\x01"]));
    assert_eq!(
        r.refused(Type::Insert, te(ap_entry(&r, b"\x0b", a))),
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(Type::Insert, te(ap_entry(&r, b"\x0b", group(1)))),
        Code::InvalidArgument
    );
    // A used member cannot go; a modified one runs its new action.
    assert_eq!(r.refused(Type::Delete, m.clone()), Code::FailedPrecondition);
    let m2 = mem(&r, "ap", 100, b"\x05");
    r.modify(m2.clone()).unwrap();
    assert_eq!(
        r.read(E::ActionProfileMember(Default::default())).unwrap(),
        vec![m2.clone()]
    );
    assert_eq!(
        r.refused(Type::Modify, mem(&r, "ap", 101, b"\x05")),
        Code::NotFound
    );
    r.delete(te(ap_entry(&r, b"\x0a", None))).unwrap();
    r.delete(m2.clone()).unwrap();
    assert_eq!(r.refused(Type::Delete, m2), Code::NotFound);
    assert!(
        r.read(E::ActionProfileMember(Default::default()))
            .unwrap()
            .is_empty()
    );
    // The profile holds 16 members.
    for i in 1..=16 {
        r.insert(mem(&r, "ap", i, b"\x01")).unwrap();
    }
    assert_eq!(
        r.refused(Type::Insert, mem(&r, "ap", 17, b"\x01")),
        Code::ResourceExhausted
    );
    // Profiles without selector have no groups.
    let mut g = grp(&r, 1, &[(1, 1)], 0);
    g.action_profile_id = r.profile("ap");
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileGroup(g)),
        Code::InvalidArgument
    );
}

#[test]
fn groups_are_written_read_and_referenced() {
    let mut r = rig("externs.p4");
    for (i, p) in [(1u32, b"\x01"), (2, b"\x02"), (3, b"\x03")] {
        r.insert(mem(&r, "sel", i, p)).unwrap();
    }
    let mut g = grp(&r, 10, &[(2, 1), (1, 1)], 0);
    g.members[0].watch_kind = Some(p4::action_profile_group::member::WatchKind::WatchPort(
        b"\x05".to_vec(),
    ));
    r.insert(E::ActionProfileGroup(g.clone())).unwrap();
    assert_eq!(
        r.read(E::ActionProfileGroup(g.clone())).unwrap(),
        vec![E::ActionProfileGroup(g.clone())]
    );
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileGroup(g.clone())),
        Code::AlreadyExists
    );
    // The data plane chooses among the group's members.
    let ext = r.s.extern_id("I.sel").unwrap();
    let prof = r.s.profile_by_id(ext).unwrap();
    assert_eq!(prof.groups.iter().next().unwrap().1.members.len(), 2);
    // Refusals.
    let cases = [
        (grp(&r, 11, &[(9, 1)], 0), Code::NotFound),
        (grp(&r, 11, &[(1, 1), (1, 1)], 0), Code::InvalidArgument),
        (grp(&r, 11, &[(1, 0)], 0), Code::InvalidArgument),
        (grp(&r, 11, &[(1, -1)], 0), Code::InvalidArgument),
        (grp(&r, 11, &[(1, 2)], 0), Code::Unimplemented),
        (grp(&r, 11, &[(1, 1), (2, 1)], 1), Code::ResourceExhausted),
        (grp(&r, 11, &[(1, 1)], -1), Code::InvalidArgument),
        (grp(&r, 0, &[(1, 1)], 0), Code::InvalidArgument),
    ];
    for (i, (g, code)) in cases.into_iter().enumerate() {
        assert_eq!(
            r.refused(Type::Insert, E::ActionProfileGroup(g)),
            code,
            "case {i}"
        );
    }
    // MODIFY replaces the members; max_size cannot change.
    let g2 = grp(&r, 10, &[(3, 1)], 0);
    r.modify(E::ActionProfileGroup(g2.clone())).unwrap();
    assert_eq!(
        r.read(E::ActionProfileGroup(Default::default())).unwrap(),
        vec![E::ActionProfileGroup(g2.clone())]
    );
    assert_eq!(
        r.refused(
            Type::Modify,
            E::ActionProfileGroup(grp(&r, 10, &[(3, 1)], 4))
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(
            Type::Modify,
            E::ActionProfileGroup(grp(&r, 12, &[(3, 1)], 0))
        ),
        Code::NotFound
    );
    // Members 1 and 2 are free again, 3 is in the group.
    r.delete(mem(&r, "sel", 1, b"\x01")).unwrap();
    assert_eq!(
        r.refused(Type::Delete, mem(&r, "sel", 3, b"\x03")),
        Code::FailedPrecondition
    );
    // Entries point at groups and members; a used group cannot go.
    let e = sel_entry(&r, b"\x08\x00", group(10));
    r.insert(te(e.clone())).unwrap();
    let e2 = sel_entry(&r, b"\x08\x06", member(2));
    r.insert(te(e2.clone())).unwrap();
    assert_eq!(r.entries("I.t_sel"), vec![e.clone(), e2]);
    assert_eq!(
        r.refused(Type::Insert, te(sel_entry(&r, b"\x01", group(99)))),
        Code::NotFound
    );
    assert_eq!(
        r.refused(Type::Delete, E::ActionProfileGroup(g2.clone())),
        Code::FailedPrecondition
    );
    r.delete(te(e)).unwrap();
    r.delete(E::ActionProfileGroup(g2.clone())).unwrap();
    assert_eq!(
        r.refused(Type::Delete, E::ActionProfileGroup(g2)),
        Code::NotFound
    );
    r.delete(mem(&r, "sel", 3, b"\x03")).unwrap();
    assert!(
        r.read(E::ActionProfileGroup(Default::default()))
            .unwrap()
            .is_empty()
    );
}

fn set(r: &Rig, ports: &[&[u8]]) -> Option<p4::TableAction> {
    Some(p4::TableAction {
        r#type: Some(A::ActionProfileActionSet(ActionProfileActionSet {
            action_profile_actions: ports
                .iter()
                .map(|p| ActionProfileAction {
                    action: Some(action(r.action("fwd"), &[p])),
                    weight: 1,
                    watch_kind: Some(p4::action_profile_action::WatchKind::WatchPort(p.to_vec())),
                })
                .collect(),
            ..Default::default()
        })),
    })
}

fn profile_counts(r: &Rig) -> (usize, usize) {
    let p = r.s.profile("I.sel").unwrap();
    (p.members.len(), p.groups.len())
}

#[test]
fn one_shot_action_sets() {
    let mut r = rig("externs.p4");
    let e = sel_entry(&r, b"\x08\x00", set(&r, &[b"\x01", b"\x02", b"\x02"]));
    r.insert(te(e.clone())).unwrap();
    // Read back as written; the members and group behind it are not shown.
    assert_eq!(r.entries("I.t_sel"), vec![e.clone()]);
    assert!(
        r.read(E::ActionProfileMember(Default::default()))
            .unwrap()
            .is_empty()
    );
    assert!(
        r.read(E::ActionProfileGroup(Default::default()))
            .unwrap()
            .is_empty()
    );
    assert_eq!(profile_counts(&r), (3, 1));
    // MODIFY replaces them, DELETE removes them.
    let m = sel_entry(&r, b"\x08\x00", set(&r, &[b"\x07"]));
    r.modify(te(m.clone())).unwrap();
    assert_eq!(r.entries("I.t_sel"), vec![m.clone()]);
    assert_eq!(profile_counts(&r), (1, 1));
    // A selector programmed with one-shots takes no members, groups or member entries.
    assert_eq!(
        r.refused(Type::Insert, mem(&r, "sel", 1, b"\x01")),
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(Type::Insert, E::ActionProfileGroup(grp(&r, 1, &[], 0))),
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(Type::Insert, te(sel_entry(&r, b"\x01", member(1)))),
        Code::InvalidArgument
    );
    r.delete(te(m)).unwrap();
    assert_eq!(profile_counts(&r), (0, 0));
    assert!(r.entries("I.t_sel").is_empty());
    // Refusals, each leaving nothing behind.
    let with = |f: &dyn Fn(&mut ActionProfileActionSet)| {
        let mut s = match set(&r, &[b"\x01"]).unwrap().r#type {
            Some(A::ActionProfileActionSet(s)) => s,
            _ => unreachable!(),
        };
        f(&mut s);
        sel_entry(
            &r,
            b"\x01",
            Some(p4::TableAction {
                r#type: Some(A::ActionProfileActionSet(s)),
            }),
        )
    };
    let cases = [
        (
            with(&|s| s.group_action = Some(action(r.action("nop"), &[]))),
            Code::Unimplemented,
        ),
        (with(&|s| s.action_selection_mode = 2), Code::Unimplemented),
        (with(&|s| s.size_semantics = 1), Code::Unimplemented),
        (
            with(&|s| s.action_profile_actions[0].weight = 3),
            Code::Unimplemented,
        ),
        (
            with(&|s| s.action_profile_actions[0].weight = 0),
            Code::InvalidArgument,
        ),
        (
            with(&|s| s.action_profile_actions[0].action = None),
            Code::InvalidArgument,
        ),
        (
            with(&|s| s.action_profile_actions[0].action = Some(action(r.action("count_it"), &[]))),
            Code::InvalidArgument,
        ),
        (
            sel_entry(&r, b"\x01", set(&r, &[&b"\x01"[..]; 17])),
            Code::ResourceExhausted,
        ),
    ];
    for (i, (e, code)) in cases.into_iter().enumerate() {
        assert_eq!(r.refused(Type::Insert, te(e)), code, "case {i}");
        assert_eq!(profile_counts(&r), (0, 0), "case {i}");
    }
    // A table without selector takes no action set.
    let e = ap_entry(&r, b"\x01", set(&r, &[b"\x01"]));
    assert_eq!(r.refused(Type::Insert, te(e)), Code::InvalidArgument);
    // A duplicate entry refused after the set was built leaves nothing behind either.
    r.insert(te(sel_entry(&r, b"\x05", set(&r, &[b"\x01"]))))
        .unwrap();
    assert_eq!(
        r.refused(
            Type::Insert,
            te(sel_entry(&r, b"\x05", set(&r, &[b"\x02"])))
        ),
        Code::AlreadyExists
    );
    assert_eq!(profile_counts(&r), (1, 1));
    let full = TableEntry {
        table_id: r.table("t_sel"),
        ..Default::default()
    };
    assert_eq!(r.read_entries(full).len(), 1);
}
