//! An action whose `out` parameter each table binds to its own field: lowering makes one
//! action per table, all with the control-plane name `I.setbyte`. The CLI names it the same in
//! every table (short or full name) and each table's entry runs that table's specialisation;
//! dumps print the control-plane name; profile members resolve through the profile's table;
//! a reload that renames the specialisations carries each entry to its table's own.

mod common;

use koi_control::command;
use koi_ir::{ActionId, Pipeline};
use koi_state::table::EntryAction;
use koi_state::{State, cli};

fn program(first: &str, second: &str) -> String {
    format!(
        r#"
#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> k; bit<8> a; bit<8> b; bit<8> c; }}
struct headers {{ h_t h; }}
struct meta_t {{}}
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control VC(inout headers hdr, inout meta_t m) {{ apply {{}} }}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {{
    action setbyte(out bit<8> reg, bit<8> val) {{ reg = val; }}
    table tbl1 {{
        key = {{ hdr.h.k : exact; }}
        actions = {{ setbyte(hdr.h.a); NoAction; }}
        default_action = NoAction();
    }}
    table tbl2 {{
        key = {{ hdr.h.k : exact; }}
        actions = {{ setbyte(hdr.h.b); NoAction; }}
        default_action = NoAction();
    }}
    table tbl3 {{
        key = {{ hdr.h.k : exact; }}
        actions = {{ setbyte(hdr.h.c); NoAction; }}
        implementation = action_profile(4);
    }}
    apply {{ {first}.apply(); {second}.apply(); tbl3.apply(); }}
}}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {{ apply {{}} }}
control CC(inout headers hdr, inout meta_t m) {{ apply {{}} }}
control D(packet_out pkt, in headers hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"#
    )
}

fn compile(first: &str, second: &str) -> Pipeline {
    common::compile("specialised.p4", &program(first, second))
}

fn run(s: &mut State, line: &str) -> String {
    let c = command::parse(line).unwrap().unwrap();
    cli::execute(s, &c).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// The action (and its arguments' first value) of the only entry of `table`.
fn entry_action(s: &State, table: &str) -> (ActionId, u64) {
    let t = s.table(table).unwrap();
    let e: Vec<_> = t.entries().collect();
    assert_eq!(e.len(), 1, "{table}");
    match &e[0].action {
        EntryAction::Action(c) => (c.action, c.args[0].to_u64().unwrap()),
        other => panic!("{table}: {other:?}"),
    }
}

/// The action of table `table` whose control-plane name is `I.setbyte`.
fn specialisation(s: &State, table: &str) -> ActionId {
    let t = s.table(table).unwrap();
    let id = s.table_id(table).unwrap();
    let a = s.table_action_id(id, "I.setbyte").unwrap();
    assert!(t.schema.actions.iter().any(|(x, _)| *x == a));
    a
}

#[test]
fn the_cli_names_one_action_and_each_table_runs_its_own() {
    let p = compile("tbl1", "tbl2");
    let mut s = State::new(&p).unwrap();
    let (a1, a2) = (specialisation(&s, "tbl1"), specialisation(&s, "tbl2"));
    assert_ne!(a1, a2);
    for a in [a1, a2] {
        assert_eq!(s.action_schema(a).unwrap().name, "I.setbyte");
    }
    assert_ne!(
        s.action_schema(a1).unwrap().ir_name,
        s.action_schema(a2).unwrap().ir_name
    );
    run(&mut s, "table_add tbl1 setbyte 1 => 0x11");
    run(&mut s, "table_add tbl2 I.setbyte 1 => 0x22");
    assert_eq!(entry_action(&s, "tbl1"), (a1, 0x11));
    assert_eq!(entry_action(&s, "tbl2"), (a2, 0x22));
    let dump = run(&mut s, "table_dump tbl2");
    assert!(dump.contains("I.setbyte - 22"), "{dump}");
    assert!(!dump.contains("tbl2.setbyte"), "{dump}");
    run(&mut s, "table_set_default tbl2 setbyte 0x33");
    match s.table("tbl2").unwrap().default_action() {
        EntryAction::Action(c) => assert_eq!((c.action, c.args[0].to_u64()), (a2, Some(0x33))),
        other => panic!("{other:?}"),
    }
    // The profile's member runs tbl3's specialisation.
    let a3 = specialisation(&s, "tbl3");
    let ap = p
        .tables
        .values()
        .find(|t| t.preamble.name == "I.tbl3")
        .and_then(|t| t.implementation)
        .map(|e| p.externs[e].preamble.name.clone())
        .unwrap();
    run(&mut s, &format!("act_prof_create_member {ap} setbyte 0x44"));
    let prof = s.profile(&ap).unwrap();
    let m = prof.members.get(0).unwrap();
    assert_eq!(m.call.action, a3);
}

#[test]
fn a_reload_carries_each_entry_to_its_tables_specialisation() {
    let old_p = compile("tbl1", "tbl2");
    let mut old = State::new(&old_p).unwrap();
    run(&mut old, "table_add tbl1 setbyte 1 => 0x11");
    run(&mut old, "table_add tbl2 setbyte 1 => 0x22");
    // Applied the other way round, the specialisations are made (and named) the other way.
    let new_p = compile("tbl2", "tbl1");
    let mut new = State::new(&new_p).unwrap();
    let renamed = |s: &State, t: &str| {
        s.action_schema(specialisation(s, t))
            .unwrap()
            .ir_name
            .clone()
    };
    assert_ne!(renamed(&old, "tbl1"), renamed(&new, "tbl1"));
    koi_state::carry::carry_over(&old, &old_p, &mut new, &new_p).unwrap();
    assert_eq!(
        entry_action(&new, "tbl1"),
        (specialisation(&new, "tbl1"), 0x11)
    );
    assert_eq!(
        entry_action(&new, "tbl2"),
        (specialisation(&new, "tbl2"), 0x22)
    );
}

#[test]
fn a_member_of_a_profile_whose_tables_bind_the_action_differently_is_ambiguous() {
    let src = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t {}
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply {} }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action setbyte(out bit<8> reg, bit<8> val) { reg = val; }
    action_profile(4) ap;
    table t1 { key = { hdr.h.k : exact; } actions = { setbyte(hdr.h.a); } implementation = ap; }
    table t2 { key = { hdr.h.k : exact; } actions = { setbyte(hdr.h.b); } implementation = ap; }
    apply { t1.apply(); t2.apply(); }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control CC(inout headers hdr, inout meta_t m) { apply {} }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"#;
    let p = common::compile("shared_profile.p4", src);
    let mut s = State::new(&p).unwrap();
    let c = command::parse("act_prof_create_member ap setbyte 1")
        .unwrap()
        .unwrap();
    let err = cli::execute(&mut s, &c).unwrap_err().to_string();
    assert!(err.contains("setbyte"), "{err}");
    assert!(err.contains("I.t2.setbyte"), "{err}");
    assert!(s.profile("ap").unwrap().members.is_empty());
}
