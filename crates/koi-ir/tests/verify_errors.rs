//! The verifier catches each kind of broken invariant, says where, and lists them all.

mod common;

use common::{L2, l2_switch};
use koi_ir::entity::EntityId;
use koi_ir::verify::ErrorKind;
use koi_ir::*;

/// The errors of the L2 switch after `f` broke it.
fn errors_after(f: impl FnOnce(&mut L2)) -> Vec<(String, ErrorKind)> {
    let mut l2 = l2_switch();
    f(&mut l2);
    let errs = verify(&l2.p).expect_err("the broken pipeline must not verify");
    errs.into_iter().map(|e| (e.location, e.kind)).collect()
}

/// Asserts that breaking the switch with `f` gives exactly one error, at `loc`, of `kind`.
fn assert_only(f: impl FnOnce(&mut L2), loc: &str, kind: ErrorKind) {
    assert_eq!(errors_after(f), vec![(loc.to_string(), kind)]);
}

fn bb(i: u32) -> BlockId {
    BlockId::new(i)
}

/// The ingress block `bb2` (the miss branch), whose statement 0 tests replace.
fn miss_stmt(l2: &mut L2) -> &mut Stmt {
    &mut l2.p.controls[l2.ingress].body.blocks[bb(2)].stmts[0]
}

fn mcast(l2: &L2) -> Place {
    Place::Slot(l2.p.intrinsic("mcast_grp").unwrap())
}

#[test]
fn ids_out_of_range() {
    assert_only(
        |l2| *miss_stmt(l2) = Stmt::assign(mcast(l2), Expr::Slot(SlotId::new(999))),
        "control MyIngress bb2 stmt 0",
        ErrorKind::IdOutOfRange {
            what: "slot",
            id: 999,
        },
    );
    assert_only(
        |l2| l2.p.controls[l2.ingress].body.blocks[bb(1)].term = Some(Terminator::Goto(bb(99))),
        "control MyIngress bb1 terminator",
        ErrorKind::IdOutOfRange {
            what: "block",
            id: 99,
        },
    );
    assert_only(
        |l2| {
            let vlan_state = l2.p.parsers[l2.parser].state_by_name("parse_vlan").unwrap();
            let t = Transition::Goto(Target::State(StateId::new(9)));
            l2.p.parsers[l2.parser].set_transition(vlan_state, t);
        },
        "parser MyParser state parse_vlan transition",
        ErrorKind::IdOutOfRange {
            what: "state",
            id: 9,
        },
    );
}

#[test]
fn types_and_widths() {
    assert_only(
        |l2| {
            let s = Stmt::assign(Place::Slot(l2.egress_spec), Expr::Slot(l2.ether_type));
            l2.p.actions[l2.forward].body.blocks[bb(0)].stmts[0] = s;
        },
        "action MyIngress.forward bb0 stmt 0",
        ErrorKind::TypeMismatch {
            expected: Ty::Bits(9),
            found: Ty::Bits(16),
        },
    );
    assert_only(
        |l2| {
            let cond = Expr::Slot(l2.ether_type);
            let t = Terminator::Branch {
                cond,
                then: bb(1),
                otherwise: bb(2),
            };
            l2.p.controls[l2.ingress].body.blocks[bb(0)].term = Some(t);
        },
        "control MyIngress bb0 terminator",
        ErrorKind::ExpectedBool {
            found: Ty::Bits(16),
        },
    );
    assert_only(
        |l2| {
            let start = l2.p.parsers[l2.parser].start;
            l2.p.parsers[l2.parser].push(
                start,
                Stmt::Advance {
                    bits: Expr::Bool(true),
                },
            );
        },
        "parser MyParser state start stmt 1",
        ErrorKind::ExpectedBits { found: Ty::Bool },
    );
    assert_only(
        |l2| *miss_stmt(l2) = Stmt::assign(mcast(l2), Expr::Slot(l2.ether_type).slice(20, 5)),
        "control MyIngress bb2 stmt 0",
        ErrorKind::BadSlice {
            width: 16,
            hi: 20,
            lo: 5,
        },
    );
}

#[test]
fn select_keysets_match_key_widths() {
    assert_only(
        |l2| {
            let start = l2.p.parsers[l2.parser].start;
            let st = &mut l2.p.parsers[l2.parser].states[start];
            if let Some(Transition::Select { cases, .. }) = &mut st.transition {
                cases[0].keysets[0] = Keyset::Pattern(Pattern::Exact(Bits::from_u64(8, 1)));
            }
        },
        "parser MyParser state start transition",
        ErrorKind::WidthMismatch {
            expected: 16,
            found: 8,
        },
    );
    assert_only(
        |l2| {
            let start = l2.p.parsers[l2.parser].start;
            let st = &mut l2.p.parsers[l2.parser].states[start];
            if let Some(Transition::Select { cases, .. }) = &mut st.transition {
                cases[0].keysets.push(Keyset::Pattern(Pattern::Any));
            }
        },
        "parser MyParser state start transition",
        ErrorKind::CountMismatch {
            expected: 1,
            found: 2,
        },
    );
}

#[test]
fn params_and_read_only_slots() {
    assert_only(
        |l2| *miss_stmt(l2) = Stmt::assign(mcast(l2), Expr::Param(0)),
        "control MyIngress bb2 stmt 0",
        ErrorKind::ParamOutsideAction,
    );
    assert_only(
        |l2| {
            let valid = l2.p.phv.headers[l2.ethernet].valid;
            *miss_stmt(l2) = Stmt::assign(Place::Slot(valid), Expr::Bool(true));
        },
        "control MyIngress bb2 stmt 0",
        ErrorKind::ReadOnlySlot {
            slot: "hdr.ethernet.$valid".to_string(),
        },
    );
}

#[test]
fn statements_outside_their_context() {
    let not_allowed = |what, context| ErrorKind::NotAllowedHere { what, context };
    assert_only(
        |l2| {
            *miss_stmt(l2) = Stmt::Extract {
                header: HeaderRef::Header(l2.ethernet),
                varbit_bits: None,
            }
        },
        "control MyIngress bb2 stmt 0",
        not_allowed("extract", "a control"),
    );
    assert_only(
        |l2| *miss_stmt(l2) = Stmt::Emit(HeaderRef::Header(l2.ethernet)),
        "control MyIngress bb2 stmt 0",
        not_allowed("emit", "a control"),
    );
    assert_only(
        |l2| {
            let t = Terminator::Apply {
                table: l2.dmac,
                next: ApplyNext::Always(bb(0)),
            };
            l2.p.actions[l2.drop].body.blocks[bb(0)].term = Some(t);
        },
        "action MyIngress.drop bb0 terminator",
        not_allowed("table application", "an action"),
    );
}

#[test]
fn unterminated_blocks_and_states() {
    assert_only(
        |l2| {
            l2.p.controls[l2.ingress].body.add_block();
        },
        "control MyIngress bb3 terminator",
        ErrorKind::Unterminated,
    );
    assert_only(
        |l2| {
            l2.p.parsers[l2.parser].add_state("dangling");
        },
        "parser MyParser state dangling transition",
        ErrorKind::NoTransition,
    );
}

#[test]
fn calls() {
    assert_only(
        |l2| {
            *miss_stmt(l2) = Stmt::CallAction {
                action: l2.forward,
                args: vec![],
            }
        },
        "control MyIngress bb2 stmt 0",
        ErrorKind::CountMismatch {
            expected: 1,
            found: 0,
        },
    );
    assert_only(
        |l2| {
            let call = Stmt::CallAction {
                action: l2.drop,
                args: vec![],
            };
            l2.p.actions[l2.drop].body.push(bb(0), call);
        },
        "action MyIngress.drop",
        ErrorKind::RecursiveAction,
    );
    assert_only(
        |l2| {
            let counter = l2.p.externs.push(counter("MyIngress.c"));
            let args = vec![Arg::In(Expr::bits(32, 0))];
            *miss_stmt(l2) = Stmt::ExternCall {
                instance: counter,
                method: "read".into(),
                args,
                result: None,
            };
        },
        "control MyIngress bb2 stmt 0",
        ErrorKind::UnknownMethod {
            method: "read".to_string(),
        },
    );
    assert_only(
        |l2| {
            let start = l2.p.parsers[l2.parser].start;
            l2.p.parsers[l2.parser].push(
                start,
                Stmt::Verify {
                    cond: Expr::Bool(true),
                    error: 99,
                },
            );
        },
        "parser MyParser state start stmt 1",
        ErrorKind::UnknownError { code: 99 },
    );
}

fn counter(name: &str) -> Extern {
    Extern {
        preamble: Preamble::new(name),
        type_name: "counter".into(),
        type_args: vec![P4Type::Bit(32)],
        ctor_args: vec![ConstArg::Bits(Bits::from_u64(32, 64))],
        kind: ExternKind::Counter {
            size: 64,
            unit: CounterUnit::Packets,
            index_width: 32,
        },
    }
}

#[test]
fn phv_layout() {
    assert_only(
        |l2| l2.p.phv.width = 200,
        "phv slot s13 (standard_metadata.parser_error)",
        ErrorKind::SlotOutsideLayout {
            end: 228,
            layout: 200,
        },
    );
    assert_only(
        |l2| {
            let port = l2.p.intrinsic("egress_port").unwrap();
            l2.p.phv.slots[port].offset = 162;
        },
        "phv slot s11 (standard_metadata.egress_port)",
        ErrorKind::SlotOverlap {
            other: "standard_metadata.egress_spec".to_string(),
        },
    );
    assert_only(
        |l2| {
            let port = l2.p.intrinsic("ingress_port").unwrap();
            l2.p.phv.slots[port].ty = Ty::Bits(10);
        },
        "phv slot s9 (standard_metadata.ingress_port)",
        ErrorKind::SlotType {
            width: 9,
            ty: Ty::Bits(10),
        },
    );
    let vlan = |l2: &L2| l2.p.phv.header_by_name("hdr.vlan").unwrap();
    assert_only(
        |l2| {
            let v = vlan(l2);
            l2.p.phv.headers[v].fields.swap(0, 1);
        },
        "phv header hdr.vlan",
        ErrorKind::BadLayout("field hdr.vlan.dei is not next in the header's wire layout".into()),
    );
    let errs = errors_after(|l2| {
        let v = vlan(l2);
        l2.p.phv.headers[v].offset = 121;
    });
    let why: Vec<_> = errs.iter().map(|(_, k)| k.to_string()).collect();
    assert_eq!(
        why,
        [
            "bad layout: starts at bit 121, not a byte boundary",
            "bad layout: field hdr.vlan.pcp is not next in the header's wire layout",
        ]
    );
}

#[test]
fn table_actions_and_default_action() {
    assert_only(
        |l2| {
            let t = &mut l2.p.tables[l2.dmac];
            t.actions[0].scope = ActionScope::TableOnly;
            t.default_action.call = ActionCall {
                action: l2.forward,
                args: vec![Bits::from_u64(9, 1)],
            };
        },
        "table MyIngress.dmac default_action",
        ErrorKind::ActionNotAllowed {
            action: "MyIngress.forward".to_string(),
        },
    );
    assert_only(
        |l2| {
            l2.p.tables[l2.dmac]
                .default_action
                .call
                .args
                .push(Bits::from_u64(9, 1))
        },
        "table MyIngress.dmac default_action",
        ErrorKind::CountMismatch {
            expected: 0,
            found: 1,
        },
    );
    assert_only(
        |l2| l2.p.tables[l2.dmac].entries[0].call.action = l2.no_action,
        "table MyIngress.dmac entry 0",
        ErrorKind::ActionNotAllowed {
            action: "NoAction".to_string(),
        },
    );
    assert_only(
        |l2| {
            let other =
                l2.p.actions
                    .push(Action::new("MyIngress.other", vec![], vec![]));
            let next = ApplyNext::Actions {
                cases: vec![(other, bb(1))],
                default: bb(2),
            };
            let t = Terminator::Apply {
                table: l2.dmac,
                next,
            };
            l2.p.controls[l2.ingress].body.blocks[bb(0)].term = Some(t);
        },
        "control MyIngress bb0 terminator",
        ErrorKind::ActionNotAllowed {
            action: "MyIngress.other".to_string(),
        },
    );
}

#[test]
fn table_keys_and_entries() {
    let range = Pattern::Range {
        lo: Bits::zero(48),
        hi: Bits::ones(48),
    };
    assert_only(
        |l2| l2.p.tables[l2.dmac].entries[0].keys[0] = range,
        "table MyIngress.dmac entry 0",
        ErrorKind::BadPattern {
            kind: "exact".to_string(),
        },
    );
    assert_only(
        |l2| l2.p.tables[l2.dmac].entries[0].priority = Some(1),
        "table MyIngress.dmac entry 0",
        ErrorKind::Priority { needed: false },
    );
    assert_only(
        |l2| l2.p.tables[l2.dmac].entries[0].keys.clear(),
        "table MyIngress.dmac entry 0",
        ErrorKind::CountMismatch {
            expected: 1,
            found: 0,
        },
    );
    assert_eq!(
        errors_after(|l2| l2.p.tables[l2.dmac].keys[0].field.width = 32),
        vec![
            (
                "table MyIngress.dmac key 0".to_string(),
                ErrorKind::TypeMismatch {
                    expected: Ty::Bits(32),
                    found: Ty::Bits(48)
                }
            ),
            (
                "table MyIngress.dmac entry 0".to_string(),
                ErrorKind::WidthMismatch {
                    expected: 32,
                    found: 48
                }
            ),
        ]
    );
    // A ternary key makes priorities mandatory.
    assert_only(
        |l2| l2.p.tables[l2.dmac].keys[0].field.kind = MatchKind::Ternary,
        "table MyIngress.dmac entry 0",
        ErrorKind::Priority { needed: true },
    );
}

#[test]
fn table_externs_and_names() {
    assert_only(
        |l2| {
            let c = l2.p.externs.push(counter("MyIngress.c"));
            l2.p.tables[l2.dmac].implementation = Some(c);
        },
        "table MyIngress.dmac",
        ErrorKind::WrongExternKind {
            expected: "action profile or selector",
        },
    );
    assert_only(
        |l2| {
            let c = l2.p.externs.push(counter("MyIngress.c"));
            l2.p.tables[l2.dmac].direct_counter = Some(c);
        },
        "table MyIngress.dmac",
        ErrorKind::WrongExternKind {
            expected: "direct counter",
        },
    );
    assert_only(
        |l2| {
            let copy = l2.p.tables[l2.dmac].clone();
            l2.p.tables.push(copy);
        },
        "table",
        ErrorKind::DuplicateName {
            name: "MyIngress.dmac".to_string(),
        },
    );
}

#[test]
fn selector_keys_need_a_selector_only_with_an_implementation() {
    // A selector key feeds the table's action selector. Without an implementation it feeds
    // nothing, which p4c accepts (issue1560-bmv2): the table verifies.
    let selector_key = |l2: &mut L2| {
        let key = l2.p.tables[l2.dmac].keys[0].clone();
        let mut input = key.clone();
        input.field = MatchField::new("meta.h", key.field.width, MatchKind::Selector);
        // (The switch's entries give a pattern per key; a selector table has none.)
        l2.p.tables[l2.dmac].entries.clear();
        l2.p.tables[l2.dmac].keys.push(input);
    };
    let mut l2 = l2_switch();
    selector_key(&mut l2);
    assert_eq!(verify(&l2.p), Ok(()));
    // With an action profile (no selector to feed) it is an error.
    assert_only(
        |l2| {
            selector_key(l2);
            let profile = Extern {
                preamble: Preamble::new("MyIngress.ap"),
                type_name: "action_profile".into(),
                type_args: vec![],
                ctor_args: vec![ConstArg::Bits(Bits::from_u64(32, 16))],
                kind: ExternKind::ActionProfile { size: 16 },
            };
            let ap = l2.p.externs.push(profile);
            l2.p.tables[l2.dmac].implementation = Some(ap);
        },
        "table MyIngress.dmac",
        ErrorKind::WrongExternKind {
            expected: "action profile or selector",
        },
    );
}

#[test]
fn package_bindings() {
    assert_only(
        |l2| l2.p.package.retain(|(r, _)| *r != Role::Egress),
        "package",
        ErrorKind::Package("role egress bound 0 times".to_string()),
    );
    assert_only(
        |l2| {
            let parser = l2.parser;
            for (r, b) in &mut l2.p.package {
                if *r == Role::Ingress {
                    *b = BlockRef::Parser(parser);
                }
            }
        },
        "package",
        ErrorKind::Package("role ingress bound to parser parser0".to_string()),
    );
}

#[test]
fn every_violation_is_listed() {
    let errs = errors_after(|l2| {
        l2.p.parsers[l2.parser].add_state("dangling");
        l2.p.controls[l2.ingress].body.add_block();
        l2.p.tables[l2.dmac].entries[0].priority = Some(3);
    });
    let locs: Vec<&str> = errs.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        locs,
        [
            "parser MyParser state dangling transition",
            "control MyIngress bb3 terminator",
            "table MyIngress.dmac entry 0",
        ]
    );
}

#[test]
fn garbage_ids_are_reported_not_panicked_on() {
    let mut l2 = l2_switch();
    let p = &mut l2.p;
    p.parsers[l2.parser].start = StateId::new(40);
    p.controls[l2.ingress].body.entry = BlockId::new(40);
    p.tables[l2.dmac].default_action.call.action = ActionId::new(40);
    p.tables[l2.dmac].keys[0].expr = Expr::StackField {
        stack: StackId::new(3),
        index: Box::new(Expr::Param(7)),
        field: 2,
    };
    p.package
        .push((Role::Egress, BlockRef::Control(ControlId::new(40))));
    p.phv.headers[l2.ethernet].valid = SlotId::new(4000);
    p.intrinsics.push(("bogus".into(), SlotId::new(4000)));
    let errs = verify(p).unwrap_err();
    assert!(errs.len() >= 7, "{errs:#?}");
    // Printing an unverified pipeline does not panic either.
    assert!(p.to_string().contains("default_action = ?action40();"));
}
