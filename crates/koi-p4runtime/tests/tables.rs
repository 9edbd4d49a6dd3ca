//! Table entries: every match kind, priorities, don't-care fields, bytestrings, errors,
//! default entries, const and initialised tables, cookies, read filters, translations.

mod common;

use common::*;
use koi_proto::p4runtime::{self as p4, TableEntry, entity::Entity as E, update::Type};
use tonic::Code;

fn exact_entry(r: &Rig, mac: &[u8], small: &[u8], port: &[u8]) -> TableEntry {
    entry(
        r.table("t_exact"),
        vec![exact(1, mac), exact(2, small)],
        direct(action(r.action("fwd_m"), &[port])),
        0,
    )
}

#[test]
fn exact_entries_insert_modify_delete_with_read_write_symmetry() {
    let mut r = rig("tables.p4");
    let w = exact_entry(&r, b"\x0a\x00\x00\x00\x00\x01", b"\x07", b"\x03");
    // Keys all exact: a new entry concerns only the packets that missed the table.
    let t = r.s.table_id("I.t_exact").unwrap();
    assert_eq!(
        r.insert(te(w.clone())),
        Ok(koi_p4runtime::Effect::Misses(t))
    );
    assert_eq!(r.entries("I.t_exact"), vec![w.clone()]);
    assert_eq!(r.refused(Type::Insert, te(w.clone())), Code::AlreadyExists);
    // MODIFY changes the action, keeps the key.
    let mut m = w.clone();
    m.action = direct(action(r.action("fwd_m"), &[b"\x01\xff"]));
    // A modify concerns only the packets that hit that entry.
    let modified = r.modify(te(m.clone())).unwrap();
    assert!(
        matches!(modified, koi_p4runtime::Effect::Entry(mt, _) if mt == t),
        "{modified:?}"
    );
    assert_eq!(r.entries("I.t_exact"), vec![m.clone()]);
    // A MODIFY without action keeps the action.
    let mut keep = m.clone();
    keep.action = None;
    r.modify(te(keep)).unwrap();
    assert_eq!(r.entries("I.t_exact"), vec![m.clone()]);
    // DELETE considers the key only (a nonsensical action is ignored).
    let mut d = w.clone();
    d.action = direct(action(999, &[]));
    assert_eq!(r.delete(te(d.clone())), Ok(modified));
    assert!(r.entries("I.t_exact").is_empty());
    assert_eq!(r.refused(Type::Delete, te(d)), Code::NotFound);
    assert_eq!(r.refused(Type::Modify, te(m)), Code::NotFound);
}

#[test]
fn full_tables_are_resource_exhausted() {
    let mut r = rig("tables.p4");
    for i in 0..4u8 {
        r.insert(te(exact_entry(&r, &[i + 1], b"\x01", b"\x01")))
            .unwrap();
    }
    let e = exact_entry(&r, b"\x09", b"\x01", b"\x01");
    assert_eq!(r.refused(Type::Insert, te(e)), Code::ResourceExhausted);
}

#[test]
fn lpm_entries_and_their_rules() {
    let mut r = rig("tables.p4");
    let t = r.table("t_lpm");
    let route = |r: &Rig| {
        direct(action(
            r.action("route"),
            &[b"\x01\x02\x03\x04\x05\x06", b"\x01"],
        ))
    };
    let w = entry(t, vec![lpm(1, b"\x0a\x00\x00\x00", 8)], route(&r), 0);
    r.insert(te(w.clone())).unwrap();
    let w32 = entry(t, vec![lpm(1, b"\x0a\x00\x00\x01", 32)], route(&r), 0);
    // A longer prefix takes packets that hit the /8: every flow of the table is suspect.
    assert_eq!(
        r.insert(te(w32.clone())),
        Ok(koi_p4runtime::Effect::Table(
            r.s.table_id("I.t_lpm").unwrap()
        ))
    );
    assert_eq!(r.entries("I.t_lpm"), vec![w.clone(), w32.clone()]);
    // The don't-care entry leaves the field out; a /0 written out is refused.
    let dc = entry(t, vec![], route(&r), 0);
    r.insert(te(dc.clone())).unwrap();
    assert_eq!(r.entries("I.t_lpm").len(), 3);
    let zero = entry(t, vec![lpm(1, b"\x00", 0)], route(&r), 0);
    assert_eq!(r.refused(Type::Insert, te(zero)), Code::InvalidArgument);
    // Bits past the prefix, prefixes longer than the field.
    let trailing = entry(t, vec![lpm(1, b"\x0a\x00\x00\x01", 24)], route(&r), 0);
    assert_eq!(r.refused(Type::Insert, te(trailing)), Code::InvalidArgument);
    let long = entry(t, vec![lpm(1, b"\x0a\x00\x00\x01", 33)], route(&r), 0);
    assert_eq!(r.refused(Type::Insert, te(long)), Code::InvalidArgument);
    let neg = entry(t, vec![lpm(1, b"\x0a", -1)], route(&r), 0);
    assert_eq!(r.refused(Type::Insert, te(neg)), Code::InvalidArgument);
    // A read with a match gets that entry only.
    let q = entry(t, vec![lpm(1, b"\x0a\x00\x00\x00", 8)], None, 0);
    assert_eq!(r.read_entries(q), vec![w]);
    let none = entry(t, vec![lpm(1, b"\x0b\x00\x00\x00", 8)], None, 0);
    assert!(r.read_entries(none).is_empty());
}

#[test]
fn ternary_entries_priorities_and_dont_cares() {
    let mut r = rig("tables.p4");
    let t = r.table("t_ternary");
    let fwd = |r: &Rig, p: &[u8]| direct(action(r.action("fwd"), &[p]));
    let a = entry(
        t,
        vec![
            ternary(1, b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00"),
            exact(2, b"\x06"),
        ],
        fwd(&r, b"\x01"),
        10,
    );
    r.insert(te(a.clone())).unwrap();
    // The same key at another priority is another entry; at the same one, a duplicate.
    let mut b = a.clone();
    b.priority = 20;
    r.insert(te(b.clone())).unwrap();
    assert_eq!(r.refused(Type::Insert, te(a.clone())), Code::AlreadyExists);
    // Priorities are required here.
    let mut p0 = a.clone();
    p0.priority = 0;
    assert_eq!(
        r.refused(Type::Insert, te(p0.clone())),
        Code::InvalidArgument
    );
    p0.priority = -3;
    assert_eq!(r.refused(Type::Insert, te(p0)), Code::InvalidArgument);
    // An omitted ternary field is a don't-care and reads back omitted.
    let dc = entry(t, vec![exact(2, b"\x11")], fwd(&r, b"\x02"), 5);
    r.insert(te(dc.clone())).unwrap();
    let q = entry(t, vec![exact(2, b"\x11")], None, 5);
    assert_eq!(r.read_entries(q), vec![dc]);
    // Mask 0 written out, value bits outside the mask: refused.
    let m0 = entry(
        t,
        vec![ternary(1, b"\x00", b"\x00"), exact(2, b"\x01")],
        fwd(&r, b"\x01"),
        1,
    );
    assert_eq!(r.refused(Type::Insert, te(m0)), Code::InvalidArgument);
    let outside = entry(
        t,
        vec![ternary(1, b"\x0a\x01", b"\xff\x00"), exact(2, b"\x01")],
        fwd(&r, b"\x01"),
        1,
    );
    assert_eq!(r.refused(Type::Insert, te(outside)), Code::InvalidArgument);
    // Reads: by match and priority, by match at any priority, by priority.
    let q = entry(t, a.r#match.clone(), None, 20);
    assert_eq!(r.read_entries(q), vec![b.clone()]);
    let q = entry(t, a.r#match.clone(), None, 0);
    assert_eq!(r.read_entries(q).len(), 2);
    let q = entry(t, vec![], None, 10);
    assert_eq!(r.read_entries(q), vec![a.clone()]);
    // DELETE needs the priority to find the entry.
    let mut d = a.clone();
    d.priority = 11;
    assert_eq!(r.refused(Type::Delete, te(d)), Code::NotFound);
    r.delete(te(a)).unwrap();
    assert_eq!(r.entries("I.t_ternary").len(), 2);
}

#[test]
fn range_and_optional_entries() {
    let mut r = rig("tables.p4");
    let t = r.table("t_range");
    let fwd = direct(action(r.action("fwd"), &[b"\x01"]));
    let w = entry(t, vec![range(1, b"\x10", b"\x01\x00")], fwd.clone(), 3);
    r.insert(te(w.clone())).unwrap();
    assert_eq!(r.entries("I.t_range"), vec![w]);
    let full = entry(t, vec![range(1, b"\x00", b"\xff\xff")], fwd.clone(), 4);
    assert_eq!(r.refused(Type::Insert, te(full)), Code::InvalidArgument);
    let backwards = entry(t, vec![range(1, b"\x20", b"\x10")], fwd.clone(), 4);
    assert_eq!(
        r.refused(Type::Insert, te(backwards)),
        Code::InvalidArgument
    );
    let dc = entry(t, vec![], fwd.clone(), 1);
    r.insert(te(dc.clone())).unwrap();
    assert_eq!(r.read_entries(entry(t, vec![], None, 1)), vec![dc]);

    let t = r.table("t_optional");
    let w = entry(
        t,
        vec![optional(1, b"\x40"), exact(2, b"\x06")],
        fwd.clone(),
        2,
    );
    r.insert(te(w.clone())).unwrap();
    let wild = entry(t, vec![exact(2, b"\x06")], fwd.clone(), 1);
    r.insert(te(wild.clone())).unwrap();
    assert_eq!(r.entries("I.t_optional"), vec![w, wild]);
    // A match of the wrong kind for the field.
    let wrong = entry(t, vec![exact(1, b"\x40"), exact(2, b"\x06")], fwd, 3);
    assert_eq!(r.refused(Type::Insert, te(wrong)), Code::InvalidArgument);
}

#[test]
fn bytestrings_are_canonical_on_read_and_range_checked() {
    let mut r = rig("tables.p4");
    // Zero-padded values, as p4lang's tutorial controllers send them, read back shortest.
    let padded = exact_entry(
        &r,
        b"\x00\x00\x00\x00\x00\x00\x00\x05",
        b"\x00\x07",
        b"\x00\x00\x00\x03",
    );
    r.insert(te(padded)).unwrap();
    assert_eq!(
        r.entries("I.t_exact"),
        vec![exact_entry(&r, b"\x05", b"\x07", b"\x03")]
    );
    // A zero value is one byte.
    r.insert(te(exact_entry(&r, b"\x00\x00", b"\x00", b"\x00")))
        .unwrap();
    assert!(
        r.entries("I.t_exact")
            .contains(&exact_entry(&r, b"\x00", b"\x00", b"\x00"))
    );
    // Too wide for the field (12 bits), for the parameter (9 bits), empty.
    let wide = exact_entry(&r, b"\x01", b"\x10\x00", b"\x01");
    assert_eq!(r.refused(Type::Insert, te(wide)), Code::OutOfRange);
    let wide = exact_entry(&r, b"\x02", b"\x01", b"\x02\x00");
    assert_eq!(r.refused(Type::Insert, te(wide)), Code::OutOfRange);
    let empty = exact_entry(&r, b"", b"\x01", b"\x01");
    assert_eq!(r.refused(Type::Insert, te(empty)), Code::OutOfRange);
    let empty = exact_entry(&r, b"\x03", b"\x01", b"");
    assert_eq!(r.refused(Type::Insert, te(empty)), Code::OutOfRange);
}

#[test]
fn malformed_entries_are_refused_with_the_spec_codes() {
    let mut r = rig("tables.p4");
    let good = exact_entry(&r, b"\x01", b"\x01", b"\x01");
    let with = |f: &dyn Fn(&mut TableEntry)| {
        let mut e = good.clone();
        f(&mut e);
        te(e)
    };
    let cases: Vec<(E, Code)> = vec![
        (with(&|e| e.table_id = 0), Code::InvalidArgument),
        (with(&|e| e.table_id = 0x0200_0001), Code::NotFound),
        (
            with(&|e| e.r#match.push(exact(9, b"\x01"))),
            Code::InvalidArgument,
        ),
        (
            with(&|e| e.r#match.push(exact(1, b"\x02"))),
            Code::InvalidArgument,
        ),
        (
            with(&|e| {
                e.r#match.pop();
            }),
            Code::InvalidArgument,
        ),
        (
            with(&|e| e.r#match[0].field_match_type = None),
            Code::InvalidArgument,
        ),
        (
            with(&|e| e.r#match[0] = lpm(1, b"\x01", 48)),
            Code::InvalidArgument,
        ),
        (with(&|e| e.action = None), Code::InvalidArgument),
        (
            with(&|e| e.action = Some(p4::TableAction { r#type: None })),
            Code::InvalidArgument,
        ),
        (
            with(&|e| e.action = direct(action(0, &[]))),
            Code::InvalidArgument,
        ),
        (
            with(&|e| e.action = direct(action(12345, &[]))),
            Code::InvalidArgument,
        ),
        (
            with(&|e| e.action = direct(action(r.action("route"), &[b"\x01", b"\x01"]))),
            Code::InvalidArgument,
        ),
        (
            with(&|e| e.action = direct(action(r.action("NoAction"), &[]))),
            Code::PermissionDenied,
        ),
        (
            with(&|e| e.action = direct(action(r.action("fwd_m"), &[]))),
            Code::InvalidArgument,
        ),
        (
            with(&|e| e.action = direct(action(r.action("fwd_m"), &[b"\x01", b"\x02"]))),
            Code::InvalidArgument,
        ),
        (
            with(&|e| {
                let mut a = action(r.action("fwd_m"), &[b"\x01"]);
                a.params.push(a.params[0].clone());
                e.action = direct(a);
            }),
            Code::InvalidArgument,
        ),
        (with(&|e| e.action = member(1)), Code::InvalidArgument),
        (with(&|e| e.priority = 1), Code::InvalidArgument),
        (with(&|e| e.is_const = true), Code::InvalidArgument),
        (
            with(&|e| e.time_since_last_hit = Some(Default::default())),
            Code::InvalidArgument,
        ),
        (with(&|e| e.idle_timeout_ns = -1), Code::InvalidArgument),
        (
            with(&|e| e.meter_counter_data = Some(Default::default())),
            Code::Unimplemented,
        ),
        (
            with(&|e| {
                e.counter_data = Some(p4::CounterData {
                    byte_count: -1,
                    packet_count: 0,
                })
            }),
            Code::InvalidArgument,
        ),
        (
            with(&|e| {
                e.meter_config = Some(p4::MeterConfig {
                    cir: 5,
                    cburst: 1,
                    pir: 1,
                    pburst: 1,
                    eburst: 0,
                })
            }),
            Code::InvalidArgument,
        ),
    ];
    for (i, (e, code)) in cases.into_iter().enumerate() {
        assert_eq!(r.refused(Type::Insert, e), code, "case {i}");
    }
    assert!(r.entries("I.t_exact").is_empty());
    // Resources and timeouts on tables without them.
    let mut lpm_e = entry(
        r.table("t_lpm"),
        vec![lpm(1, b"\x0a", 8)],
        direct(action(r.action("drop"), &[])),
        0,
    );
    lpm_e.r#match = vec![lpm(1, b"\x0a\x00\x00\x00", 8)];
    let mut c = lpm_e.clone();
    c.counter_data = Some(Default::default());
    assert_eq!(r.refused(Type::Insert, te(c)), Code::InvalidArgument);
    let mut m = lpm_e.clone();
    m.meter_config = Some(Default::default());
    assert_eq!(r.refused(Type::Insert, te(m)), Code::InvalidArgument);
    let mut i = lpm_e.clone();
    i.idle_timeout_ns = 5;
    assert_eq!(r.refused(Type::Insert, te(i)), Code::InvalidArgument);
    // Updates without type or entity, extern entries.
    let mut undo = koi_p4runtime::Undo::default();
    let u = update(Type::Unspecified, te(lpm_e.clone()));
    let err = koi_p4runtime::apply(&mut r.t, &mut r.s, &u, &mut undo).unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    let u = p4::Update {
        r#type: Type::Insert as i32,
        entity: None,
    };
    assert_eq!(
        koi_p4runtime::apply(&mut r.t, &mut r.s, &u, &mut undo)
            .unwrap_err()
            .code,
        Code::InvalidArgument
    );
    let u = p4::Update {
        r#type: 77,
        entity: Some(p4::Entity { entity: None }),
    };
    assert_eq!(
        koi_p4runtime::apply(&mut r.t, &mut r.s, &u, &mut undo)
            .unwrap_err()
            .code,
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(Type::Insert, E::ExternEntry(Default::default())),
        Code::Unimplemented
    );
    assert!(undo.is_empty());
    assert_eq!(
        r.read(E::ExternEntry(Default::default())).unwrap_err().code,
        Code::Unimplemented
    );
}

#[test]
fn action_scopes_are_permission_denied() {
    let mut r = rig("tables.p4");
    let t = r.table("t_ternary");
    let m = vec![ternary(1, b"\x01", b"\xff"), exact(2, b"\x01")];
    // @defaultonly drop in an entry, @tableonly set_small as the default.
    let e = entry(t, m.clone(), direct(action(r.action("drop"), &[])), 1);
    assert_eq!(r.refused(Type::Insert, te(e)), Code::PermissionDenied);
    let e = entry(t, m, direct(action(r.action("set_small"), &[b"\x01"])), 1);
    r.insert(te(e)).unwrap();
    let mut d = entry(
        t,
        vec![],
        direct(action(r.action("set_small"), &[b"\x01"])),
        0,
    );
    d.is_default_action = true;
    assert_eq!(r.refused(Type::Modify, te(d)), Code::PermissionDenied);
}

fn default_of(r: &Rig, table: &str) -> TableEntry {
    let q = TableEntry {
        table_id: r.table(table),
        is_default_action: true,
        ..Default::default()
    };
    let mut v = r.read_entries(q);
    assert_eq!(v.len(), 1);
    v.remove(0)
}

#[test]
#[allow(deprecated)]
fn default_entries_are_modified_and_reset() {
    let mut r = rig("tables.p4");
    let t = r.table("t_lpm");
    let initial = default_of(&r, "I.t_lpm");
    assert_eq!(initial.action, direct(action(r.action("drop"), &[])));
    assert!(!initial.is_const);
    let mut d = entry(
        t,
        vec![],
        direct(action(r.action("route"), &[b"\x0a\x0b", b"\x02"])),
        0,
    );
    d.is_default_action = true;
    d.metadata = b"cookie".to_vec();
    d.controller_metadata = 42;
    r.modify(te(d.clone())).unwrap();
    assert_eq!(default_of(&r, "I.t_lpm"), d);
    // The default entry is not among the entries.
    assert!(r.entries("I.t_lpm").is_empty());
    // INSERT, DELETE, a match, a priority, a timeout: refused.
    assert_eq!(
        r.refused(Type::Insert, te(d.clone())),
        Code::InvalidArgument
    );
    assert_eq!(
        r.refused(Type::Delete, te(d.clone())),
        Code::InvalidArgument
    );
    let mut m = d.clone();
    m.r#match = vec![lpm(1, b"\x0a\x00\x00\x00", 8)];
    assert_eq!(r.refused(Type::Modify, te(m)), Code::InvalidArgument);
    let mut p = d.clone();
    p.priority = 1;
    assert_eq!(r.refused(Type::Modify, te(p)), Code::InvalidArgument);
    let mut i = d.clone();
    i.idle_timeout_ns = 10;
    assert_eq!(r.refused(Type::Modify, te(i)), Code::InvalidArgument);
    // An unset action restores the program's default and clears the cookies.
    let reset = TableEntry {
        table_id: t,
        is_default_action: true,
        ..Default::default()
    };
    r.modify(te(reset)).unwrap();
    assert_eq!(default_of(&r, "I.t_lpm"), initial);
    // Const default actions, indirect tables' defaults, direct resources of defaults.
    let mut c = entry(
        r.table("t_const_default"),
        vec![],
        direct(action(r.action("fwd"), &[b"\x01"])),
        0,
    );
    c.is_default_action = true;
    assert_eq!(r.refused(Type::Modify, te(c)), Code::PermissionDenied);
    assert!(default_of(&r, "I.t_const_default").is_const);
    let mut k = entry(
        r.table("t_keyless"),
        vec![],
        direct(action(r.action("drop"), &[])),
        0,
    );
    k.is_default_action = true;
    r.modify(te(k.clone())).unwrap();
    assert_eq!(default_of(&r, "I.t_keyless"), k);
    let mut dm = k.clone();
    dm.counter_data = Some(Default::default());
    assert_eq!(r.refused(Type::Modify, te(dm)), Code::InvalidArgument);
    let mut de = entry(
        r.table("t_exact"),
        vec![],
        direct(action(r.action("drop"), &[])),
        0,
    );
    de.is_default_action = true;
    r.modify(te(de.clone())).unwrap();
    de.counter_data = Some(Default::default());
    assert_eq!(r.refused(Type::Modify, te(de)), Code::Unimplemented);
}

#[test]
fn keyless_tables_take_no_entries() {
    let mut r = rig("tables.p4");
    let e = entry(
        r.table("t_keyless"),
        vec![],
        direct(action(r.action("drop"), &[])),
        0,
    );
    assert_eq!(r.refused(Type::Insert, te(e)), Code::InvalidArgument);
}

#[test]
fn const_tables_are_readable_and_permission_denied() {
    let mut r = rig("tables.p4");
    let got = r.entries("I.t_const");
    assert_eq!(got.len(), 3);
    let t = r.table("t_const");
    let first = &got[0];
    assert_eq!(first.r#match, vec![ternary(1, b"\x08\x00", b"\xff\xff")]);
    assert_eq!(first.action, direct(action(r.action("fwd"), &[b"\x01"])));
    assert!(
        first.is_const && first.priority > got[1].priority && got[1].priority > got[2].priority
    );
    assert!(got[2].r#match.is_empty());
    let new = entry(
        t,
        vec![ternary(1, b"\x01", b"\xff")],
        direct(action(r.action("drop"), &[])),
        100,
    );
    assert_eq!(r.refused(Type::Insert, te(new)), Code::PermissionDenied);
    let mut del = first.clone();
    del.is_const = false;
    assert_eq!(
        r.refused(Type::Delete, te(del.clone())),
        Code::PermissionDenied
    );
    let mut m = del.clone();
    m.action = direct(action(r.action("drop"), &[]));
    assert_eq!(r.refused(Type::Modify, te(m)), Code::PermissionDenied);
    // A MODIFY without action (direct resources only) is allowed.
    let mut ok = del.clone();
    ok.action = None;
    r.modify(te(ok)).unwrap();
    assert_eq!(r.entries("I.t_const"), got);
}

#[test]
fn initial_entries_are_readable_and_writable() {
    let mut r = rig("tables.p4");
    let t = r.table("t_init");
    let fwd = |r: &Rig, p: &[u8]| direct(action(r.action("fwd"), &[p]));
    let got = r.entries("I.t_init");
    assert_eq!(
        got,
        vec![
            entry(t, vec![exact(1, b"\x06")], fwd(&r, b"\x06"), 0),
            entry(t, vec![exact(1, b"\x11")], fwd(&r, b"\x11"), 0),
        ]
    );
    r.modify(te(entry(t, vec![exact(1, b"\x06")], fwd(&r, b"\x09"), 0)))
        .unwrap();
    r.delete(te(entry(t, vec![exact(1, b"\x11")], None, 0)))
        .unwrap();
    r.insert(te(entry(t, vec![exact(1, b"\x01")], fwd(&r, b"\x01"), 0)))
        .unwrap();
    assert_eq!(r.entries("I.t_init").len(), 2);
}

#[test]
#[allow(deprecated)]
fn cookies_are_kept_and_filter_reads() {
    let mut r = rig("tables.p4");
    let mut a = exact_entry(&r, b"\x01", b"\x01", b"\x01");
    a.metadata = b"\x00\x01cookie".to_vec();
    a.controller_metadata = 7;
    let mut b = exact_entry(&r, b"\x02", b"\x01", b"\x01");
    b.metadata = b"other".to_vec();
    r.insert(te(a.clone())).unwrap();
    r.insert(te(b.clone())).unwrap();
    assert_eq!(r.entries("I.t_exact"), vec![a.clone(), b.clone()]);
    let q = TableEntry {
        table_id: r.table("t_exact"),
        metadata: b"other".to_vec(),
        ..Default::default()
    };
    assert_eq!(r.read_entries(q), vec![b.clone()]);
    let q = TableEntry {
        table_id: r.table("t_exact"),
        controller_metadata: 7,
        ..Default::default()
    };
    assert_eq!(r.read_entries(q), vec![a.clone()]);
    // MODIFY replaces the cookies (full snapshot).
    let mut m = a.clone();
    m.metadata = Vec::new();
    m.controller_metadata = 0;
    r.modify(te(m.clone())).unwrap();
    assert_eq!(r.entries("I.t_exact")[0], m);
}

#[test]
fn wildcard_reads_and_filters() {
    let mut r = rig("tables.p4");
    r.insert(te(exact_entry(&r, b"\x01", b"\x01", b"\x01")))
        .unwrap();
    let drop = entry(
        r.table("t_lpm"),
        vec![lpm(1, b"\x0a\x00\x00\x00", 8)],
        direct(action(r.action("drop"), &[])),
        0,
    );
    r.insert(te(drop.clone())).unwrap();
    // Every table: the two entries, the const table's 3, the initial 2.
    let all = r.read_entries(TableEntry::default());
    assert_eq!(all.len(), 7);
    let bad = TableEntry {
        priority: 3,
        ..Default::default()
    };
    assert_eq!(r.read(te(bad)).unwrap_err().code, Code::InvalidArgument);
    let bad = TableEntry {
        is_default_action: true,
        ..Default::default()
    };
    assert_eq!(r.read(te(bad)).unwrap_err().code, Code::InvalidArgument);
    // By action id.
    let q = entry(
        r.table("t_lpm"),
        vec![],
        direct(action(r.action("drop"), &[])),
        0,
    );
    assert_eq!(r.read_entries(q), vec![drop]);
    let q = entry(
        r.table("t_lpm"),
        vec![],
        direct(action(r.action("route"), &[])),
        0,
    );
    assert!(r.read_entries(q).is_empty());
    let q = entry(r.table("t_lpm"), vec![], member(1), 0);
    assert_eq!(r.read(te(q)).unwrap_err().code, Code::Unimplemented);
    // Unknown table, bad match.
    let q = TableEntry {
        table_id: 0x0200_0001,
        ..Default::default()
    };
    assert_eq!(r.read(te(q)).unwrap_err().code, Code::NotFound);
    let q = entry(r.table("t_lpm"), vec![exact(1, b"\x01")], None, 0);
    assert_eq!(r.read(te(q)).unwrap_err().code, Code::InvalidArgument);
    // time_since_last_hit on a table without idle timeout.
    let q = TableEntry {
        table_id: r.table("t_lpm"),
        time_since_last_hit: Some(Default::default()),
        ..Default::default()
    };
    assert_eq!(r.read(te(q)).unwrap_err().code, Code::InvalidArgument);
}

#[test]
fn translated_fields_and_params() {
    let mut r = rig("tables.p4");
    let t = r.table("t_translated");
    let tid = r.s.table_id("I.t_translated").unwrap();
    // port_t: controller bit<32>, data plane bit<9>, translated 1:1.
    let w = entry(
        t,
        vec![exact(1, b"\x00\x00\x01\x05"), exact(2, b"red")],
        direct(action(r.action("set_port"), &[b"\x00\x00\x00\x07"])),
        0,
    );
    r.insert(te(w)).unwrap();
    let canonical = entry(
        t,
        vec![exact(1, b"\x01\x05"), exact(2, b"red")],
        direct(action(r.action("set_port"), &[b"\x07"])),
        0,
    );
    assert_eq!(r.entries("I.t_translated"), vec![canonical.clone()]);
    let dump = koi_state::cli_format::dump_table(&r.s, tid).unwrap();
    assert!(
        dump.contains("EXACT-01:05") && dump.contains("EXACT-00"),
        "{dump}"
    );
    // A second string gets the next value; the first keeps its own.
    let v = entry(
        t,
        vec![exact(1, b"\x01"), exact(2, b"blue")],
        direct(action(r.action("set_vrf"), &[b"red"])),
        0,
    );
    r.insert(te(v.clone())).unwrap();
    let dump = koi_state::cli_format::dump_table(&r.s, tid).unwrap();
    assert!(
        dump.contains("EXACT-01") && dump.contains("I.set_vrf - 00"),
        "{dump}"
    );
    assert_eq!(r.entries("I.t_translated"), vec![canonical, v]);
    // A controller value that does not fit the data plane's 9 bits.
    let far = entry(
        t,
        vec![exact(1, b"\x00\x00\x02\x00"), exact(2, b"red")],
        direct(action(r.action("NoAction"), &[])),
        0,
    );
    assert_eq!(r.refused(Type::Insert, te(far)), Code::OutOfRange);
    // Reads by an unknown string find nothing (and allocate nothing).
    let q = entry(t, vec![exact(1, b"\x01\x05"), exact(2, b"green")], None, 0);
    assert!(r.read_entries(q).is_empty());
    // LPM on a translated field: full prefix only.
    let tl = r.table("t_translated_lpm");
    let full = entry(
        tl,
        vec![lpm(1, b"\x00\x00\x00\x05", 32)],
        direct(action(r.action("NoAction"), &[])),
        0,
    );
    r.insert(te(full)).unwrap();
    let got = r.entries("I.t_translated_lpm");
    assert_eq!(
        got,
        vec![entry(
            tl,
            vec![lpm(1, b"\x05", 32)],
            direct(action(r.action("NoAction"), &[])),
            0
        )]
    );
    let part = entry(
        tl,
        vec![lpm(1, b"\x00\x00\x01\x00", 24)],
        direct(action(r.action("NoAction"), &[])),
        0,
    );
    assert_eq!(r.refused(Type::Insert, te(part)), Code::Unimplemented);
}

/// An action with a parameter that the program only calls (`drop_for(reason)`, from a table's
/// action and from `apply`): P4Info lists it without the parameter, as p4c does, and the
/// target takes that P4Info; entries of the table, whose action calls it, are written and
/// read as any.
#[test]
fn actions_only_called_are_listed_without_parameters() {
    let mut r = rig("called_actions.p4");
    let called = r
        .info
        .actions
        .iter()
        .find(|a| a.preamble.as_ref().is_some_and(|p| p.name == "I.drop_for"))
        .expect("I.drop_for in P4Info");
    assert!(called.params.is_empty(), "{called:?}");
    let deny = entry(
        r.table("t"),
        vec![exact(1, b"\x05")],
        direct(action(r.action("deny"), &[])),
        0,
    );
    let fwd = entry(
        r.table("t"),
        vec![exact(1, b"\x06")],
        direct(action(r.action("fwd"), &[b"\x02"])),
        0,
    );
    r.insert(te(deny.clone())).expect("deny");
    r.insert(te(fwd.clone())).expect("fwd");
    assert_eq!(r.entries("I.t"), vec![deny, fwd]);
}
