//! An action whose directional parameter tables bind differently (`setbyte(hdr.h.a)` in
//! `tbl1`, `setbyte(hdr.h.b)` in `tbl2`, `setbyte(hdr.h.c)` in `tbl3` behind an action
//! profile): one P4Info action, written to and read from every table by its one id, each
//! table running its own specialisation.

mod common;

use common::*;
use koi_proto::p4runtime::{ActionProfileMember, TableEntry, entity::Entity as E};
use koi_state::ManualClock;

const FILE: &str = "specialised.p4";

/// The header `k a b c` after a packet with `k` (the other fields zero) went through the
/// interpreter.
fn run(r: &mut Rig, k: u8) -> Vec<u8> {
    let mut it = koi_interp::Interpreter::new(&r.pipeline).unwrap();
    let out = it
        .process(&mut r.s, &[k, 0, 0, 0], 1, &ManualClock::new(0))
        .unwrap();
    assert_eq!(out.outputs.len(), 1, "one packet out");
    out.outputs[0].bytes.clone()
}

fn set_entry(r: &Rig, table: &str, k: u8, val: u8) -> TableEntry {
    let id = r.action("I.setbyte");
    entry(
        r.table(table),
        vec![exact(1, &[k])],
        direct(action(id, &[&[val]])),
        0,
    )
}

#[test]
fn p4info_lists_one_action_every_table_refers_to() {
    let r = rig(FILE);
    let setbyte: Vec<_> = r
        .info
        .actions
        .iter()
        .filter(|a| a.preamble.as_ref().unwrap().name.ends_with("setbyte"))
        .collect();
    assert_eq!(setbyte.len(), 1, "{setbyte:?}");
    let pre = setbyte[0].preamble.as_ref().unwrap();
    assert_eq!(
        (pre.name.as_str(), pre.alias.as_str()),
        ("I.setbyte", "setbyte")
    );
    let params: Vec<_> = setbyte[0].params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(params, ["val"]);
    for t in ["tbl1", "tbl2", "tbl3"] {
        let table = r
            .info
            .tables
            .iter()
            .find(|x| x.preamble.as_ref().unwrap().alias == t)
            .unwrap();
        assert!(
            table.action_refs.iter().any(|a| a.id == pre.id),
            "{t} refers to I.setbyte"
        );
    }
}

#[test]
fn entries_by_the_one_id_run_each_tables_specialisation() {
    let mut r = rig(FILE);
    let e1 = set_entry(&r, "tbl1", 1, 0x11);
    let e2 = set_entry(&r, "tbl2", 1, 0x22);
    r.insert(te(e1.clone())).unwrap();
    r.insert(te(e2.clone())).unwrap();
    // Read back with the P4Info id, not an internal one.
    assert_eq!(r.entries("tbl1"), vec![e1.clone()]);
    assert_eq!(r.entries("tbl2"), vec![e2.clone()]);
    // A read filtered by that id finds each table's entry.
    let by_action = |t: &str| TableEntry {
        table_id: r.table(t),
        action: direct(action(r.action("I.setbyte"), &[])),
        ..Default::default()
    };
    assert_eq!(r.read_entries(by_action("tbl1")), vec![e1]);
    assert_eq!(r.read_entries(by_action("tbl2")), vec![e2.clone()]);
    // Each table's entry writes its own field.
    assert_eq!(run(&mut r, 1), [1, 0x11, 0x22, 0]);
    // Modify by the same id.
    let e2b = set_entry(&r, "tbl2", 1, 0x23);
    r.modify(te(e2b.clone())).unwrap();
    assert_eq!(r.entries("tbl2"), vec![e2b]);
    assert_eq!(run(&mut r, 1), [1, 0x11, 0x23, 0]);
}

#[test]
fn default_actions_by_the_one_id_run_each_tables_specialisation() {
    let mut r = rig(FILE);
    let mut d = set_entry(&r, "tbl2", 0, 0x33);
    d.r#match.clear();
    d.is_default_action = true;
    r.modify(te(d.clone())).unwrap();
    let q = TableEntry {
        table_id: r.table("tbl2"),
        is_default_action: true,
        ..Default::default()
    };
    assert_eq!(r.read_entries(q), vec![d]);
    // tbl1 misses (NoAction), tbl2 misses and runs its default: field b only.
    assert_eq!(run(&mut r, 9), [9, 0, 0x33, 0]);
}

#[test]
fn profile_members_run_their_tables_specialisation() {
    let mut r = rig(FILE);
    let id = r.action("I.setbyte");
    let profile = r.info.action_profiles[0].preamble.as_ref().unwrap().id;
    let m = E::ActionProfileMember(ActionProfileMember {
        action_profile_id: profile,
        member_id: 7,
        action: Some(action(id, &[b"\x44"])),
    });
    r.insert(m.clone()).unwrap();
    assert_eq!(r.read(m.clone()).unwrap(), vec![m]);
    let e = entry(r.table("tbl3"), vec![exact(1, &[5])], member(7), 0);
    r.insert(te(e.clone())).unwrap();
    assert_eq!(r.entries("tbl3"), vec![e]);
    assert_eq!(run(&mut r, 5), [5, 0, 0, 0x44]);
}
