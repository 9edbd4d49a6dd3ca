//! Pipeline swap: `koi_state::carry::carry_over` between two compiled v1model programs. The
//! old program's state is filled through the simple_switch_CLI executor (and the restore API
//! for cookies and timeouts), carried into a fresh state of the new program, and read back
//! by name: equal where the rules say "carried", refused with every problem named where they
//! say "refused", with each allowed loss reported.

mod common;

use koi_control::command;
use koi_ir::{Architecture, Bits, Pattern, Pipeline};
use koi_state::carry::{CarryProblem, CarryReport, ObjectKind, carry_over};
use koi_state::{Cookie, State, cli};

fn compile(src: &str) -> Pipeline {
    common::compile("carry.p4", src)
}

/// The old program: every kind of state koi keeps.
const OLD: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<8> a; bit<8> b; }
struct headers { eth_t eth; h_t h; }
struct meta_t { bit<8> x; bit<8> color; }
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) pvs;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { pvs: parse_h; default: accept; }
    }
    state parse_h { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(16) r;
    register<int<8>>(4) sr;
    counter(8, CounterType.packets_and_bytes) c;
    meter(4, MeterType.bytes) m;
    direct_counter(CounterType.packets) dc;
    direct_counter(CounterType.packets) fc;
    direct_meter<bit<8>>(MeterType.packets) dm;
    action_selector(HashAlgorithm.crc16, 32w16, 32w14) sel;
    action_profile(32w8) ap;
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action mark(bit<8> v) { meta.x = v; dm.read(meta.color); }
    action set_x(bit<8> v) { meta.x = v; }
    table routes {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; drop; }
        default_action = drop();
        counters = dc;
        support_timeout = true;
        entries = { 0x000000000009 : fwd(9); }
        size = 16;
    }
    table acl {
        key = { hdr.h.a: ternary; hdr.h.b: exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
        meters = dm;
    }
    table ecmp {
        key = { hdr.eth.dst: exact; hdr.eth.src: selector; }
        actions = { fwd; drop; }
        implementation = sel;
    }
    table prof {
        key = { hdr.eth.type: exact; }
        actions = { fwd; drop; }
        implementation = ap;
    }
    table fixed {
        key = { hdr.h.a: exact; }
        actions = { set_x; NoAction; }
        counters = fc;
        const entries = { 1 : set_x(7); 2 : set_x(8); }
    }
    table spare {
        key = { hdr.h.b: exact; }
        actions = { set_x; NoAction; }
    }
    apply {
        routes.apply(); acl.apply(); ecmp.apply(); prof.apply(); fixed.apply(); spare.apply();
        r.write(0, 1); sr.write(0, -1); c.count(0); m.execute_meter(32w0, meta.color);
    }
}
control V(inout headers hdr, inout meta_t meta) { apply { } }
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// The control plane's work on the old program.
const SCRIPT: &str = "
table_add routes fwd 0x000000000001 => 1
table_add routes fwd 0x000000000002 => 2
table_add routes fwd 0x000000000003 => 3
table_delete routes 2
table_modify routes fwd 0 19
counter_write dc 1 4 400
counter_write dc 3 6 600
table_add acl mark 0x05&&&0xff 0x01 => 9 10
table_add acl mark 0x06&&&0x0f 0x02 => 8 20
meter_set_rates dm 1 0.5:10 1:20
table_set_default acl mark 3
act_prof_create_member sel fwd 4
act_prof_create_member sel fwd 5
act_prof_create_member sel drop
act_prof_delete_member sel 0
act_prof_create_group sel
act_prof_add_member_to_group sel 1 0
act_prof_add_member_to_group sel 2 0
table_indirect_add_with_group ecmp 0x000000000001 => 0
table_indirect_add ecmp 0x000000000002 => 1
act_prof_create_member ap fwd 7
table_indirect_add prof 0x0800 => 0
table_indirect_set_default prof 0
counter_write fc 0 5 500
register_write r 3 77
register_write r 15 1
register_write sr 1 255
counter_write c 2 10 1000
meter_set_rates m 1 0.5:10 1:20
mc_mgrp_create 1
mc_node_create 0 1 2
mc_node_create 1 3
mc_node_associate 1 1
mc_node_associate 1 0
mc_node_create 2 4
mirroring_add 5 3
mirroring_add_mc 6 1
";

/// `src` with each `(from, to)` replaced (`from` must occur).
fn edit(src: &str, edits: &[(&str, &str)]) -> String {
    let mut s = src.to_string();
    for (from, to) in edits {
        assert!(s.contains(from), "{from:?} is not in the program");
        s = s.replacen(from, to, 1);
    }
    s
}

fn run(s: &mut State, line: &str) -> String {
    let c = command::parse(line)
        .unwrap_or_else(|e| panic!("{line}: {e:?}"))
        .unwrap_or_else(|| panic!("{line}: empty"));
    cli::execute(s, &c).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn run_all(s: &mut State, script: &str) {
    for line in script.lines().filter(|l| !l.trim().is_empty()) {
        run(s, line);
    }
}

/// The old program's state after [`SCRIPT`], cookies and timeouts on two routes, a value
/// set's members, and the time at 5 s.
fn old_state(p: &Pipeline) -> State {
    let mut s = State::new(p).unwrap();
    s.set_now_ns(1_000);
    run_all(&mut s, SCRIPT);
    let t = s.table_id("I.routes").unwrap();
    let mut e = s.table_entry_mut(t, 1).unwrap();
    e.set_cookie(Cookie {
        metadata: vec![1, 2, 3],
        controller_metadata: 42,
    });
    e.set_timeout_ns(Some(7_000));
    s.table_entry_mut(t, 3).unwrap().set_timeout_ns(Some(9_000));
    for v in [0x88b5, 0x1234] {
        s.value_set_add("pvs", &[Pattern::Exact(Bits::from_u64(16, v))])
            .unwrap();
    }
    s.set_now_ns(5_000_000_000);
    s
}

const TABLES: [&str; 5] = ["I.routes", "I.acl", "I.ecmp", "I.prof", "I.fixed"];

/// Everything the control plane can read of the objects of [`OLD`], by name.
fn snapshot(s: &mut State) -> Vec<String> {
    let mut out = Vec::new();
    for t in TABLES {
        out.push(run(s, &format!("table_dump {t}")));
        for e in s.table(t).unwrap().entries() {
            out.push(format!(
                "{t} {} {:?} {:?} const={} {:?} {:?} timeout={:?} hit={} idle={:?} {:?}",
                e.handle,
                e.keys,
                e.priority,
                e.is_const,
                e.counter,
                e.meter,
                e.timeout_ns,
                e.last_hit_ns,
                e.idle_notified_ns,
                e.cookie
            ));
        }
    }
    for p in ["I.sel", "I.ap"] {
        out.push(run(s, &format!("act_prof_dump {p}")));
        let refs: Vec<(u32, u32)> = s
            .profile(p)
            .unwrap()
            .members
            .iter()
            .map(|(h, m)| (h, m.refs))
            .collect();
        let grefs: Vec<(u32, u32)> = s
            .profile(p)
            .unwrap()
            .groups
            .iter()
            .map(|(h, g)| (h, g.refs))
            .collect();
        out.push(format!("{p} member refs {refs:?} group refs {grefs:?}"));
    }
    out.push(run(s, "register_read r"));
    out.push(run(s, "register_read sr"));
    for i in 0..8 {
        out.push(run(s, &format!("counter_read c {i}")));
    }
    for i in 0..4 {
        out.push(run(s, &format!("meter_get_rates m {i}")));
    }
    let m = s.extern_id("I.m").unwrap();
    out.push(format!("{:?}", s.meter_array(m).unwrap().cells));
    out.push(format!("{:?}", s.value_set_members("pvs").unwrap()));
    out.push(run(s, "mc_dump"));
    for n in 0..3 {
        out.push(format!("{:?}", s.pre.node(n)));
    }
    out.push(run(s, "mirroring_get 5"));
    out.push(run(s, "mirroring_get 6"));
    out.push(format!("now {}", s.now_ns()));
    out
}

fn carry(
    old: &State,
    old_p: &Pipeline,
    new_p: &Pipeline,
) -> Result<(State, CarryReport), Vec<CarryProblem>> {
    let mut new = State::new(new_p).unwrap();
    carry_over(old, old_p, &mut new, new_p).map(|r| (new, r))
}

fn problems(old: &State, old_p: &Pipeline, new_p: &Pipeline) -> Vec<String> {
    match carry(old, old_p, new_p) {
        Ok((_, r)) => panic!("carried, reporting {:#?}", r.lines()),
        Err(ps) => ps.iter().map(|p| p.to_string()).collect(),
    }
}

/// The new program of the first test: the same objects, declared after new ones (so that
/// every id differs), and an extra entry in `fixed`.
fn shifted() -> String {
    edit(
        OLD,
        &[
            (
                "    register<bit<32>>(16) r;",
                "    register<bit<8>>(2) r0;\n    action early(bit<4> z) { }\n    table extra { key = { hdr.h.b: exact; } actions = { early; } }\n    register<bit<32>>(16) r;",
            ),
            ("routes.apply();", "extra.apply(); routes.apply();"),
        ],
    )
}

#[test]
fn everything_is_carried_under_the_same_handles() {
    let old_p = compile(OLD);
    let new_p = compile(&shifted());
    let mut old = old_state(&old_p);
    let before = snapshot(&mut old);
    let (mut new, report) = carry(&old, &old_p, &new_p).unwrap_or_else(|p| panic!("{p:#?}"));
    // Every id of the objects compared differs between the programs.
    assert_ne!(old.table_id("I.routes"), new.table_id("I.routes"));
    assert_ne!(old.extern_id("I.r"), new.extern_id("I.r"));
    assert_eq!(snapshot(&mut new), before);
    assert_eq!(snapshot(&mut old), before, "the old state is unchanged");
    assert_eq!(
        report.lines(),
        [
            "carried action profile I.sel: 2 members, 1 group",
            "carried action profile I.ap: 1 member",
            "carried table I.routes: 3 entries",
            "carried table I.acl: 2 entries, default action",
            "carried table I.ecmp: 2 entries",
            "carried table I.prof: 1 entry, default action",
            "carried table I.fixed: 1 program entry's direct counter/meter",
            "carried register I.r: 2 non-zero cells",
            "carried register I.sr: 1 non-zero cell",
            "carried counter I.c: 1 non-zero cell",
            "carried meter I.m: 1 configured meter",
            "carried value set P.pvs: 2 members",
            "carried multicast groups: 1 group, 3 nodes",
            "carried clone sessions: 2 sessions",
        ]
    );
    assert!(report.losses.is_empty() && report.loss_lines().is_empty());
    assert_eq!(report.carried_lines()[2], "table I.routes: 3 entries");
    let routes = report.carried_for(ObjectKind::Table, "I.routes").unwrap();
    assert_eq!(routes.count("entries"), 3);
    // New objects start as the new program made them.
    assert_eq!(new.table("I.extra").unwrap().len(), 0);
    assert_eq!(run(&mut new, "register_read r0"), "r0= 0, 0");
    // What the control plane does next gives the same answers in both states: handles go
    // on from the same free slots and versions (the deleted entry 2, the deleted member 0,
    // ...) and members in use stay undeletable.
    let mut next = old.clone();
    let first = run(&mut new, "table_add routes fwd 0x000000000004 => 4");
    assert_eq!(
        first,
        run(&mut next, "table_add routes fwd 0x000000000004 => 4")
    );
    assert!(
        first.ends_with("handle 16777218"),
        "slot 2, version 1: {first}"
    );
    for line in [
        "table_add routes fwd 0x000000000005 => 5",
        "table_add acl mark 0x07&&&0xff 0x03 => 7 30",
        "act_prof_create_member sel drop",
        "act_prof_create_group sel",
        "mc_node_create 3 5",
        "table_dump_entry fixed 0",
    ] {
        assert_eq!(run(&mut new, line), run(&mut next, line), "{line}");
    }
    for line in [
        "act_prof_delete_member sel 1",
        "act_prof_delete_group sel 0",
        "table_add routes fwd 0x000000000001 => 1",
    ] {
        let c = command::parse(line).unwrap().unwrap();
        assert_eq!(
            cli::execute(&mut new, &c),
            cli::execute(&mut next, &c),
            "{line}"
        );
        assert!(cli::execute(&mut new, &c).is_err(), "{line}");
    }
}

/// An incompatible change (edits of [`OLD`]) and the problems it is refused with.
struct Refusal {
    edits: Vec<(&'static str, &'static str)>,
    problems: Vec<&'static str>,
}

fn refusal(edits: &[(&'static str, &'static str)], problems: &[&'static str]) -> Refusal {
    Refusal {
        edits: edits.to_vec(),
        problems: problems.to_vec(),
    }
}

/// Each incompatible change alone.
fn refusals() -> Vec<Refusal> {
    let no_entries = ("        entries = { 0x000000000009 : fwd(9); }\n", "");
    let routes_actions = "actions = { fwd; drop; }\n        default_action = drop();";
    let prof_actions = "actions = { fwd; drop; }\n        implementation = ap;";
    vec![
        refusal(
            &[("hdr.h.a: ternary;", "hdr.h.a: exact;")],
            &[
                "table I.acl: key field hdr.h.a: was ternary bit<8>, is now exact bit<8> (it has 2 entries added by the control plane and a default action set by it)",
            ],
        ),
        refusal(
            &[(
                "key = { hdr.eth.dst: exact; }",
                "key = { hdr.eth.src: exact; }",
            )],
            &[
                "table I.routes: key field 1: was hdr.eth.dst exact bit<48>, is now hdr.eth.src exact bit<48> (it has 3 entries added by the control plane)",
            ],
        ),
        refusal(
            &[(
                "hdr.eth.dst: exact; hdr.eth.src: selector;",
                "hdr.eth.dst: exact; hdr.eth.type: exact; hdr.eth.src: selector;",
            )],
            &[
                "table I.ecmp: key: was 1 field (hdr.eth.dst exact bit<48>), is now 2 fields (hdr.eth.dst exact bit<48>, hdr.eth.type exact bit<16>) (it has 2 entries added by the control plane)",
            ],
        ),
        refusal(
            &[("table prof {", "@name(\"prof2\") table prof {")],
            &[
                "table I.prof: is not in the new program, but it has 1 entry added by the control plane and a default action set by it",
            ],
        ),
        refusal(
            &[
                (
                    routes_actions,
                    "actions = { drop; }\n        default_action = drop();",
                ),
                no_entries,
            ],
            &[
                "table I.routes: entries 0 (hdr.eth.dst=0x9), 1 (hdr.eth.dst=0x1), 3 (hdr.eth.dst=0x3): action I.fwd is not an action of the table in the new program",
            ],
        ),
        refusal(
            &[
                (
                    routes_actions,
                    "actions = { @defaultonly fwd; drop; }\n        default_action = drop();",
                ),
                no_entries,
            ],
            &[
                "table I.routes: entries 0 (hdr.eth.dst=0x9), 1 (hdr.eth.dst=0x1), 3 (hdr.eth.dst=0x3): action I.fwd is @defaultonly in the new program: entries cannot run it",
            ],
        ),
        refusal(
            &[("action mark(bit<8> v)", "action mark(bit<8> v, bit<8> w)")],
            &[
                "table I.acl: entries 0 (hdr.h.a=0x5&&&0xff, hdr.h.b=0x1), 1 (hdr.h.a=0x6&&&0xf, hdr.h.b=0x2): action I.mark: parameters were (v: bit<8>), are now (v: bit<8>, w: bit<8>)",
                "table I.acl: default action: action I.mark: parameters were (v: bit<8>), are now (v: bit<8>, w: bit<8>)",
            ],
        ),
        refusal(
            &[(
                "meters = dm;",
                "meters = dm;\n        const entries = { (0x01 &&& 0xff, 0x01) : mark(1); }",
            )],
            &[
                "table I.acl: the new program declares its entries const: the 2 entries added by the control plane cannot be kept",
            ],
        ),
        refusal(
            &[(
                "entries = { 0x000000000009 : fwd(9); }",
                "entries = { const 0x000000000001 : fwd(1); }",
            )],
            &[
                "table I.routes: entry 1 (hdr.eth.dst=0x1): the new program has a const entry with this match key",
            ],
        ),
        refusal(
            &[(
                "default_action = NoAction();\n        meters",
                "const default_action = NoAction();\n        meters",
            )],
            &[
                "table I.acl: the default action was set to I.mark(0x3), but the new program's default action is const (NoAction())",
            ],
        ),
        refusal(
            &[("size = 16;", "size = 2;")],
            &[
                "table I.routes: the new program's table holds at most 2 entries: 3 would be carried",
            ],
        ),
        refusal(
            &[
                (
                    "action_selector(HashAlgorithm.crc16, 32w16, 32w14) sel;",
                    "action_profile(32w16) sel;",
                ),
                (" hdr.eth.src: selector;", ""),
            ],
            &[
                "action profile I.sel: it has 1 group, but in the new program it is an action profile without selector (no groups)",
            ],
        ),
        refusal(
            &[
                ("        implementation = ap;\n", ""),
                ("    action_profile(32w8) ap;\n", ""),
            ],
            &[
                "table I.prof: 1 entry and its default action run members or groups of action profile I.ap, which is not in the new program",
            ],
        ),
        refusal(
            &[("        implementation = ap;\n", "")],
            &[
                "table I.prof: 1 entry and its default action run members or groups of action profile I.ap, the new program's table has no action profile",
            ],
        ),
        refusal(
            &[(
                prof_actions,
                "actions = { drop; }\n        implementation = ap;",
            )],
            &[
                "action profile I.ap: member 0: action I.fwd is not an action of the tables using the profile in the new program",
            ],
        ),
        refusal(
            &[("32w16, 32w14) sel", "32w1, 32w14) sel")],
            &["action profile I.sel: it has 2 members, the new program's profile holds 1"],
        ),
        refusal(
            &[("register<bit<32>>(16) r;", "register<int<32>>(16) r;")],
            &[
                "register I.r: was a register of bit<32>, is now a register of int<32> (it has 2 non-zero cells)",
            ],
        ),
        refusal(
            &[("register<bit<32>>(16) r;", "register<bit<16>>(16) r;")],
            &[
                "register I.r: was a register of bit<32>, is now a register of bit<16> (it has 2 non-zero cells)",
            ],
        ),
        refusal(
            &[(
                "CounterType.packets_and_bytes) c;",
                "CounterType.packets) c;",
            )],
            &[
                "counter I.c: was a counter of packets and bytes, is now a counter of packets (it has 1 non-zero cell)",
            ],
        ),
        refusal(
            &[(
                "meter(4, MeterType.bytes) m;",
                "meter(4, MeterType.packets) m;",
            )],
            &[
                "meter I.m: was a meter of bytes, is now a meter of packets (it has 1 configured meter)",
            ],
        ),
        refusal(
            &[("value_set<bit<16>>(4) pvs;", "value_set<bit<16>>(1) pvs;")],
            &["value set P.pvs: it has 2 members, the new program's value set holds 1"],
        ),
        refusal(
            &[
                ("value_set<bit<16>>(4) pvs;", "value_set<bit<8>>(4) pvs;"),
                ("select(hdr.eth.type)", "select(hdr.eth.type[7:0])"),
            ],
            &[
                "value set P.pvs: fields were (exact bit<16>), are now (exact bit<8>) (it has 2 members)",
            ],
        ),
        refusal(
            &[(
                "value_set<bit<16>>(4) pvs;",
                "@name(\"pvs2\") value_set<bit<16>>(4) pvs;",
            )],
            &["value set P.pvs: is not in the new program, but it has 2 members"],
        ),
    ]
}

#[test]
fn each_incompatible_change_is_refused_with_its_reason() {
    let old_p = compile(OLD);
    let old = old_state(&old_p);
    for r in refusals() {
        let new_p = compile(&edit(OLD, &r.edits));
        assert_eq!(problems(&old, &old_p, &new_p), r.problems, "{:?}", r.edits);
    }
}

#[test]
fn every_problem_is_listed_at_once() {
    let old_p = compile(OLD);
    let old = old_state(&old_p);
    // The changes of `refusals` that do not touch the same text, all in one program.
    let all = refusals();
    let mut src = OLD.to_string();
    let mut want = Vec::new();
    for i in [0, 6, 8, 11, 12, 16, 18, 19, 20] {
        src = edit(&src, &all[i].edits);
        want.extend(all[i].problems.iter().map(|p| p.to_string()));
    }
    let mut got = problems(&old, &old_p, &compile(&src));
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // Problems are typed too.
    let mut new = State::new(&compile(&src)).unwrap();
    let ps = carry_over(&old, &old_p, &mut new, &compile(&src)).unwrap_err();
    let p = ps.iter().find(|p| p.kind == ObjectKind::Register).unwrap();
    assert_eq!(p.name, "I.r");
    assert!(p.why.starts_with("was a register of bit<32>"));
}

fn lines(r: &CarryReport, prefix: &str) -> Vec<String> {
    r.lines()
        .into_iter()
        .filter(|l| l.starts_with(prefix))
        .collect()
}

#[test]
fn resized_arrays_keep_their_first_cells_and_report_the_rest() {
    let old_p = compile(OLD);
    let old = old_state(&old_p);
    let new_p = compile(&edit(
        OLD,
        &[
            ("register<bit<32>>(16) r;", "register<bit<32>>(4) r;"),
            ("register<int<8>>(4) sr;", "register<int<8>>(8) sr;"),
            ("counter(8,", "counter(2,"),
            (
                "meter(4, MeterType.bytes) m;",
                "meter(1, MeterType.bytes) m;",
            ),
        ],
    ));
    let (mut new, report) = carry(&old, &old_p, &new_p).unwrap_or_else(|p| panic!("{p:#?}"));
    assert_eq!(
        lines(&report, "lost"),
        [
            "lost: register I.r: resized 16 -> 4 cells: 1 non-zero cell beyond 4 dropped",
            "lost: counter I.c: resized 8 -> 2 cells: 1 non-zero cell beyond 2 dropped",
            "lost: meter I.m: resized 4 -> 1 cells: 1 configured meter beyond 1 dropped",
        ]
    );
    assert_eq!(run(&mut new, "register_read r"), "r= 0, 0, 0, 77");
    assert_eq!(
        run(&mut new, "register_read sr"),
        "sr= 0, 255, 0, 0, 0, 0, 0, 0"
    );
    assert_eq!(
        lines(&report, "carried register I.r:"),
        ["carried register I.r: 1 non-zero cell"]
    );
    assert_eq!(
        lines(&report, "carried register I.sr"),
        ["carried register I.sr: 1 non-zero cell"]
    );
    assert!(lines(&report, "carried counter").is_empty());

    // A register written whole (P4Runtime's wildcard write) and then in one cell.
    let mut filled = old.clone();
    let r = filled.extern_id("I.r").unwrap();
    let cells = filled.register_mut(r).unwrap();
    cells.fill(&Bits::from_u64(32, 9));
    cells.set(14, &Bits::zero(32));
    let (mut new, report) = carry(&filled, &old_p, &new_p).unwrap();
    assert_eq!(run(&mut new, "register_read r"), "r= 9, 9, 9, 9");
    assert_eq!(
        lines(&report, "lost: register"),
        ["lost: register I.r: resized 16 -> 4 cells: 11 non-zero cells beyond 4 dropped"]
    );
    let grown = compile(&edit(
        OLD,
        &[("register<bit<32>>(16) r;", "register<bit<32>>(20) r;")],
    ));
    let (mut new, report) = carry(&filled, &old_p, &grown).unwrap();
    assert_eq!(
        run(&mut new, "register_read r"),
        "r= 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0, 9, 0, 0, 0, 0"
    );
    assert_eq!(
        lines(&report, "carried register I.r:"),
        ["carried register I.r: 15 non-zero cells"]
    );
    assert!(report.losses.is_empty());
}

#[test]
fn tables_without_control_plane_state_may_change_or_vanish() {
    let old_p = compile(OLD);
    let mut old = old_state(&old_p);
    run(&mut old, "counter_write fc 1 2 200");
    let new_p = compile(&edit(
        OLD,
        &[
            // `spare` (never written) changes its key, `fixed` (only const entries) changes
            // one of its entries.
            (
                "key = { hdr.h.b: exact; }",
                "key = { hdr.h.b: ternary; hdr.h.a: exact; }",
            ),
            ("2 : set_x(8); }", "3 : set_x(9); }"),
        ],
    ));
    let (mut new, report) = carry(&old, &old_p, &new_p).unwrap_or_else(|p| panic!("{p:#?}"));
    assert_eq!(
        lines(&report, "lost"),
        [
            "lost: table I.fixed: program entries not in the new program: the direct counters of 1 entry dropped"
        ]
    );
    // The const entry both programs have keeps its handle and counter; the new one takes
    // the free handle.
    let e0 = run(&mut new, "table_dump_entry fixed 0");
    assert_eq!(e0, run(&mut old, "table_dump_entry fixed 0"));
    assert_eq!(
        run(&mut new, "counter_read fc 0"),
        "fc[0]=  BmCounterValue(packets=5, bytes=500)"
    );
    let e1 = run(&mut new, "table_dump_entry fixed 1");
    assert!(
        e1.contains("EXACT-03") && e1.contains("I.set_x - 09"),
        "{e1}"
    );
    assert_eq!(
        run(&mut new, "counter_read fc 1"),
        "fc[1]=  BmCounterValue(packets=0, bytes=0)"
    );
    assert_eq!(new.table("I.spare").unwrap().schema.keys.len(), 2);

    // A table that vanishes without control-plane state, and one only in the new program.
    let new_p = compile(&edit(
        OLD,
        &[("table spare {", "@name(\"spare2\") table spare {")],
    ));
    let (new, report) = carry(&old, &old_p, &new_p).unwrap_or_else(|p| panic!("{p:#?}"));
    assert!(new.table("I.spare").is_err());
    assert!(new.table("I.spare2").unwrap().is_empty());
    assert!(report.losses.is_empty());
}

#[test]
fn allowed_losses_are_reported() {
    let old_p = compile(OLD);
    let mut old = old_state(&old_p);
    // The members of `ap` are no longer used by any entry.
    run(&mut old, "table_delete prof 0");
    run(&mut old, "table_reset_default prof");
    let new_p = compile(&edit(
        OLD,
        &[
            (
                "        counters = dc;\n        support_timeout = true;\n",
                "",
            ),
            ("        meters = dm;\n", ""),
            ("meta.x = v; dm.read(meta.color); ", "meta.x = v; "),
            ("        implementation = ap;\n", ""),
            ("    action_profile(32w8) ap;\n", ""),
            ("    register<int<8>>(4) sr;\n", ""),
            (" sr.write(0, -1);", ""),
        ],
    ));
    let (mut new, report) = carry(&old, &old_p, &new_p).unwrap_or_else(|p| panic!("{p:#?}"));
    assert_eq!(
        lines(&report, "lost"),
        [
            "lost: action profile I.ap: is not in the new program: its 1 member dropped",
            "lost: table I.routes: the new program's table has no direct counter: the counters of 2 entries dropped",
            "lost: table I.routes: the new program's table does not support idle timeouts: the timeouts of 2 entries dropped",
            "lost: table I.acl: the new program's table has no direct meter: the meter configurations of 1 entry dropped",
            "lost: register I.sr: not in the new program: its 1 non-zero cell dropped",
        ]
    );
    let routes = new.table("I.routes").unwrap();
    let handles: Vec<u32> = routes.entries().map(|e| e.handle).collect();
    assert_eq!(handles, [0, 1, 3]);
    assert!(
        routes
            .entries()
            .all(|e| e.timeout_ns.is_none() && e.counter == koi_state::CounterValue::default())
    );
    // The cookie and the time of the last hit stay.
    assert_eq!(routes.get(1).unwrap().cookie.controller_metadata, 42);
    assert_eq!(routes.get(1).unwrap().last_hit_ns, 1_000);
    assert_eq!(run(&mut new, "table_dump_entry acl 1"), {
        let mut o = old.clone();
        run(&mut o, "table_dump_entry acl 1")
    });
}

#[test]
fn a_const_default_equal_to_the_carried_one_is_kept() {
    let old_p = compile(OLD);
    let old = old_state(&old_p);
    let new_p = compile(&edit(
        OLD,
        &[(
            "default_action = NoAction();\n        meters",
            "const default_action = mark(3);\n        meters",
        )],
    ));
    let (mut new, report) = carry(&old, &old_p, &new_p).unwrap_or_else(|p| panic!("{p:#?}"));
    assert_eq!(
        lines(&report, "carried table I.acl"),
        ["carried table I.acl: 2 entries"]
    );
    assert!(run(&mut new, "table_dump acl").ends_with("Action entry: I.mark - 03\n=========="));
}

#[test]
fn multicast_and_clone_sessions_need_the_same_architecture() {
    let old_p = compile(OLD);
    let mut old = State::new(&old_p).unwrap();
    let ubpf = Pipeline::new(Architecture::Ubpf);
    // Nothing to carry: any program will do.
    let (_, report) = carry(&old, &old_p, &ubpf).unwrap();
    assert_eq!(report, CarryReport::default());
    run_all(
        &mut old,
        "mc_mgrp_create 1\nmc_node_create 0 1\nmirroring_add 5 3",
    );
    assert_eq!(
        problems(&old, &old_p, &ubpf),
        [
            "multicast groups: the old program is for v1model, the new one for ubpf: 1 group and 1 node cannot be carried",
            "clone sessions: the old program is for v1model, the new one for ubpf: 1 session cannot be carried",
        ]
    );
}

#[test]
fn states_must_come_from_the_programs_given() {
    let old_p = compile(OLD);
    let new_p = compile(&shifted());
    let old = old_state(&old_p);
    let mut new = State::new(&new_p).unwrap();
    let got = carry_over(&old, &new_p, &mut new, &new_p).unwrap_err();
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].to_string(),
        "program: the old state was not built from the old program"
    );
}

#[test]
fn skipped_tables_are_neither_carried_nor_checked() {
    let old_p = compile(OLD);
    let old = old_state(&old_p);
    // acl's key changed: refused when carried, left alone when skipped.
    let new_p = compile(&edit(OLD, &[("hdr.h.a: ternary;", "hdr.h.a: exact;")]));
    assert!(!problems(&old, &old_p, &new_p).is_empty());
    let mut new = State::new(&new_p).unwrap();
    let report = koi_state::carry::carry_over_except(&old, None, &old_p, &mut new, &new_p, &|t| {
        t == "I.acl"
    })
    .unwrap_or_else(|ps| panic!("{ps:?}"));
    assert_eq!(
        new.table("I.acl").unwrap().len(),
        0,
        "acl as the new state had it"
    );
    assert!(
        report.lines().iter().all(|l| !l.contains("I.acl")),
        "{:?}",
        report.lines()
    );
    // The other tables are carried as ever.
    assert_eq!(
        new.table("I.routes").unwrap().len(),
        old.table("I.routes").unwrap().len()
    );
}
