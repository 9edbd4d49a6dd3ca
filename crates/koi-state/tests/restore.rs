//! The restore API: entries found by match key, their changeable parts, and exact undos of
//! adds, deletes, modifications, default actions, members and groups.

use koi_ir::*;
use koi_state::{ActionSpec, Cookie, CounterValue, EntryAction, EntrySpec, State};

fn b(w: u32, v: u128) -> Bits {
    Bits::from_u128(w, v)
}

/// An exact table, a ternary table, and a table with an action profile.
fn state() -> (State, TableId, TableId, TableId, ExternId) {
    let mut p = Pipeline::new(Architecture::V1Model);
    let k = Expr::Slot(p.phv.add_slot("meta.k", Ty::Bits(8), SlotKind::Metadata));
    let nop = p.actions.push(Action::new("NoAction", vec![], vec![]));
    let set = p.actions.push(Action::new(
        "ig.set",
        vec![ActionParam::bits("v", 8)],
        vec![],
    ));
    let ap = p.externs.push(Extern {
        preamble: Preamble::new("ig.ap"),
        type_name: "action_profile".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::ActionProfile { size: 8 },
    });
    let mk = |name: &str, kind: MatchKind| {
        let mut t = Table::new(name, nop);
        t.keys = vec![TableKey {
            expr: k.clone(),
            field: MatchField::new("meta.k", 8, kind),
        }];
        t.actions = vec![TableAction::new(set), TableAction::new(nop)];
        t
    };
    let e = p.tables.push(mk("ig.exact", MatchKind::Exact));
    let t = p.tables.push(mk("ig.tern", MatchKind::Ternary));
    let mut indirect = mk("ig.ind", MatchKind::Exact);
    indirect.implementation = Some(ap);
    let i = p.tables.push(indirect);
    (State::new(&p).unwrap(), e, t, i, ap)
}

fn add(s: &mut State, t: TableId, k: u128, v: u128) -> u32 {
    let spec = EntrySpec {
        keys: vec![Pattern::Exact(b(8, k))],
        action: ActionSpec::action("ig.set", vec![b(8, v)]),
        priority: None,
        timeout_ns: None,
    };
    s.table_add_id(t, spec).unwrap()
}

#[test]
fn entries_are_found_by_key_in_any_form() {
    let (mut s, e, t, _, _) = state();
    let h = add(&mut s, e, 5, 1);
    assert_eq!(
        s.table_find(e, &[Pattern::Exact(b(8, 5))], None),
        Ok(Some(h))
    );
    assert_eq!(s.table_find(e, &[Pattern::Exact(b(8, 6))], None), Ok(None));
    let spec = EntrySpec {
        keys: vec![Pattern::Mask {
            value: b(8, 0x1f),
            mask: b(8, 0xf0),
        }],
        action: ActionSpec::action("ig.set", vec![b(8, 1)]),
        priority: Some(3),
        timeout_ns: None,
    };
    let h = s.table_add_id(t, spec.clone()).unwrap();
    // The canonical form (value masked) finds it; another priority does not.
    let canon = [Pattern::Mask {
        value: b(8, 0x10),
        mask: b(8, 0xf0),
    }];
    assert_eq!(s.table_find(t, &canon, Some(3)), Ok(Some(h)));
    assert_eq!(s.table_find(t, &spec.keys, Some(3)), Ok(Some(h)));
    assert_eq!(s.table_find(t, &canon, Some(4)), Ok(None));
    assert!(s.table_find(t, &[], Some(3)).is_err());
}

#[test]
fn unadd_and_restore_give_handles_back() {
    let (mut s, e, _, _, _) = state();
    let a = add(&mut s, e, 1, 1);
    let bh = add(&mut s, e, 2, 2);
    // Undo of an add: the next add gets the same handle (a delete would bump the version).
    s.table_unadd(e, bh).unwrap();
    assert_eq!(add(&mut s, e, 3, 3), bh);
    // Undo of a delete: the entry comes back with its handle, counter and cookie.
    {
        let mut m = s.table_entry_mut(e, a).unwrap();
        m.set_counter(CounterValue {
            packets: 4,
            bytes: 400,
        });
        m.set_cookie(Cookie {
            metadata: b"c".to_vec(),
            controller_metadata: 9,
        });
        m.set_timeout_ns(Some(7));
        m.set_idle_notified_ns(Some(1));
    }
    let old = s.table_entry("ig.exact", a).unwrap().clone();
    s.table_delete("ig.exact", a).unwrap();
    s.table_restore(e, old.clone()).unwrap();
    assert_eq!(s.table_entry("ig.exact", a).unwrap(), &old);
    assert!(matches!(
        s.lookup(e, &[b(8, 1)], None),
        Some(koi_state::Lookup::Hit { entry, .. }) if entry.handle == a
    ));
    // Restoring over a taken slot or key is refused.
    assert!(s.table_restore(e, old.clone()).is_err());
    // Undo of a modification: the whole entry as it was.
    s.table_modify("ig.exact", a, ActionSpec::action("ig.set", vec![b(8, 9)]))
        .unwrap();
    s.table_entry_mut(e, a).unwrap().meter_mut().reset();
    s.table_replace(e, old.clone()).unwrap();
    assert_eq!(s.table_entry("ig.exact", a).unwrap(), &old);
    let mut other = old.clone();
    other.keys = vec![Pattern::Exact(b(8, 99))];
    assert!(s.table_replace(e, other).is_err());
    // Undo of a default action change.
    let before = s.table_by_id(e).unwrap().default_action().clone();
    s.table_set_default("ig.exact", ActionSpec::action("ig.set", vec![b(8, 1)]))
        .unwrap();
    s.table_restore_default(e, before.clone()).unwrap();
    assert_eq!(s.table_by_id(e).unwrap().default_action(), &before);
}

#[test]
fn members_and_groups_come_back_under_their_handles() {
    let (mut s, _, _, i, ap) = state();
    let m0 = s.profile_add_member("ig.ap", "ig.set", &[b(8, 1)]).unwrap();
    let m1 = s.profile_add_member("ig.ap", "ig.set", &[b(8, 2)]).unwrap();
    let m2 = s.profile_add_member("ig.ap", "ig.set", &[b(8, 3)]).unwrap();
    let call = s.profile_member(ap, m1).unwrap().clone();
    s.profile_delete_member("ig.ap", m0).unwrap();
    s.profile_delete_member("ig.ap", m1).unwrap();
    // Lowest-free would give m0 back; the restore puts m1 where it was.
    s.profile_restore_member(ap, m1, call.clone()).unwrap();
    assert_eq!(s.profile_member(ap, m1), Some(&call));
    assert!(s.profile_restore_member(ap, m2, call).is_err());
    // An entry using the member: unadd drops the reference again.
    let spec = EntrySpec {
        keys: vec![Pattern::Exact(b(8, 1))],
        action: ActionSpec::Member(m1),
        priority: None,
        timeout_ns: None,
    };
    let h = s.table_add_id(i, spec).unwrap();
    assert!(s.profile_delete_member("ig.ap", m1).is_err());
    let gone = s.table_unadd(i, h).unwrap();
    assert_eq!(gone.action, EntryAction::Member(m1));
    s.profile_delete_member("ig.ap", m1).unwrap();
    // Groups need a selector; restoring one into a plain profile still works by handle.
    assert!(s.profile_restore_group(ap, 4).is_ok());
    assert!(s.profile_restore_group(ap, 4).is_err());
}
