//! `compare` on a small hand-written P4Info that has one entity of every kind: each mutation
//! yields exactly the expected difference lines, and order-only changes yield none.

use koi_proto::p4info::P4Info;
use koi_proto::{compare, p4info_from_text, p4info_to_text};

const BASE: &str = r#"
pkg_info { arch: "v1model" annotations: "@a" annotations: "@b" }
tables {
  preamble { id: 33554433 name: "ingress.t" alias: "t" annotations: "@x" annotations: "@y" }
  match_fields { id: 1 name: "hdr.a" bitwidth: 8 match_type: EXACT }
  match_fields { id: 2 name: "hdr.b" bitwidth: 16 match_type: TERNARY }
  action_refs { id: 16777217 }
  action_refs { id: 16777218 annotations: "@defaultonly" scope: DEFAULT_ONLY }
  const_default_action_id: 16777218
  initial_default_action { action_id: 16777218 arguments { param_id: 1 value: "\001" } }
  implementation_id: 285212673
  direct_resource_ids: 318767105
  direct_resource_ids: 352321537
  size: 1024
}
tables { preamble { id: 33554434 name: "ingress.u" alias: "u" } size: 1024 }
actions {
  preamble { id: 16777217 name: "ingress.a" alias: "a" }
  params { id: 1 name: "p" bitwidth: 9 }
  params { id: 2 name: "q" bitwidth: 3 }
}
actions { preamble { id: 16777218 name: "ingress.b" alias: "b" } params { id: 1 name: "x" bitwidth: 8 } }
action_profiles { preamble { id: 285212673 name: "ingress.ap" alias: "ap" } table_ids: 33554433 size: 128 }
counters { preamble { id: 301989889 name: "ingress.c" alias: "c" } spec { unit: BOTH } size: 64 }
direct_counters { preamble { id: 318767105 name: "ingress.dc" alias: "dc" } spec { unit: PACKETS } direct_table_id: 33554433 }
meters { preamble { id: 335544321 name: "ingress.m" alias: "m" } spec { unit: BYTES } size: 32 }
direct_meters { preamble { id: 352321537 name: "ingress.dm" alias: "dm" } spec { unit: BYTES } direct_table_id: 33554433 }
controller_packet_metadata {
  preamble { id: 67108865 name: "packet_in" alias: "packet_in" annotations: "@controller_header(\"packet_in\")" }
  metadata { id: 1 name: "port" bitwidth: 9 }
  metadata { id: 2 name: "pad" bitwidth: 7 }
}
value_sets { preamble { id: 50331649 name: "p.vs" alias: "vs" } match { id: 1 name: "f" bitwidth: 16 match_type: EXACT } size: 4 }
registers {
  preamble { id: 369098753 name: "ingress.r" alias: "r" }
  type_spec { bitstring { bit { bitwidth: 32 } } }
  size: 8
}
digests { preamble { id: 385875969 name: "d_t" alias: "d_t" } type_spec { struct { name: "d_t" } } }
externs {
  extern_type_id: 129 extern_type_name: "MyExtern"
  instances { preamble { id: 2164260865 name: "ingress.e" alias: "e" } }
}
type_info {
  structs { key: "d_t" value { members { name: "f" type_spec { bitstring { bit { bitwidth: 8 } } } } } }
  error { members: "NoError" members: "PacketTooShort" }
}
"#;

fn base() -> P4Info {
    p4info_from_text(BASE).expect("base parses")
}

fn diff(f: impl FnOnce(&mut P4Info)) -> Vec<String> {
    let e = base();
    let mut a = e.clone();
    f(&mut a);
    compare(&e, &a)
}

#[test]
fn identical_and_order_only_changes_compare_equal() {
    let e = base();
    assert_eq!(compare(&e, &e), Vec::<String>::new());
    let reprinted = p4info_from_text(&p4info_to_text(&e)).expect("reprint parses");
    assert_eq!(reprinted, e);
    let d = diff(|a| {
        a.tables.reverse();
        a.tables[1].action_refs.reverse();
        a.tables[1].direct_resource_ids.reverse();
        if let Some(p) = a.tables[1].preamble.as_mut() {
            p.annotations.reverse();
        }
        if let Some(p) = a.pkg_info.as_mut() {
            p.annotations.reverse();
        }
        if let Some(err) = a.type_info.as_mut().and_then(|t| t.error.as_mut()) {
            err.members.reverse();
        }
    });
    assert_eq!(d, Vec::<String>::new());
}

#[test]
fn table_differences() {
    let d = diff(|a| {
        let t = &mut a.tables[0];
        t.match_fields.swap(0, 1);
        t.match_fields[0].match_type_mut(3);
        t.action_refs[1].scope = 0;
        t.action_refs[1].annotations.clear();
        t.const_default_action_id = 0;
        if let Some(init) = t.initial_default_action.as_mut() {
            init.action_id = 16777217;
            init.arguments[0].value = vec![2];
        }
        t.implementation_id = 0;
        t.direct_resource_ids.pop();
        t.idle_timeout_behavior = 1;
        t.is_const_table = true;
    });
    assert_eq!(
        d,
        [
            "table ingress.t: match field 2 'hdr.b' match TERNARY != LPM",
            "table ingress.t: match field order [1, 2] != [2, 1]",
            "table ingress.t: action ref 'ingress.b' scope DEFAULT_ONLY != TABLE_AND_DEFAULT",
            "table ingress.t: action ref 'ingress.b' annotations [\"@defaultonly\"] != []",
            "table ingress.t: const_default_action 'ingress.b' != (none)",
            "table ingress.t: initial_default_action 'ingress.b' != 'ingress.a'",
            "table ingress.t: initial_default_action argument 1 \"\\001\" != \"\\002\"",
            "table ingress.t: implementation 'ingress.ap' != (none)",
            "table ingress.t: direct resources ['ingress.dc', 'ingress.dm'] != ['ingress.dc']",
            "table ingress.t: idle_timeout_behavior NO_TIMEOUT != NOTIFY_CONTROL",
            "table ingress.t: is_const_table false != true",
        ]
    );
}

#[test]
fn changed_id_is_reported_once() {
    // Renumber action ingress.b everywhere: only its preamble differs.
    let d = diff(|a| {
        let new = 16777299;
        if let Some(p) = a.actions[1].preamble.as_mut() {
            p.id = new;
        }
        let t = &mut a.tables[0];
        t.action_refs[1].id = new;
        t.const_default_action_id = new;
        if let Some(init) = t.initial_default_action.as_mut() {
            init.action_id = new;
        }
    });
    assert_eq!(d, ["action ingress.b: id 0x01000002 != 0x01000053"]);
}

#[test]
fn other_entity_differences() {
    let d = diff(|a| {
        a.actions[0].params.reverse();
        a.actions[0].params[0].bitwidth = 4;
        a.actions[1].params[0].name = "y".into();
        a.action_profiles[0].table_ids = vec![33554434];
        a.action_profiles[0].with_selector = true;
        a.counters[0].size = 65;
        if let Some(s) = a.direct_counters[0].spec.as_mut() {
            s.unit = 1;
        }
        a.direct_counters[0].direct_table_id = 33554434;
        if let Some(s) = a.meters[0].spec.as_mut() {
            s.unit = 2;
            s.r#type = 1;
        }
        a.direct_meters.clear();
        a.controller_packet_metadata[0].metadata[1].bitwidth = 8;
        a.value_sets[0].size = 5;
        a.value_sets[0].r#match[0].bitwidth = 15;
        a.registers[0].size = 9;
        a.digests[0].type_spec = None;
        a.externs[0].instances.clear();
        if let Some(t) = a.type_info.as_mut() {
            if let Some(err) = t.error.as_mut() {
                err.members = vec!["NoError".into(), "Other".into()];
            }
            t.structs.clear();
        }
    });
    let r = "register ingress.r: type_spec.bitstring.bit.bitwidth";
    assert_eq!(
        d,
        [
            "table ingress.t: direct resources ['ingress.dc', 'ingress.dm'] != [#0x15000001, 'ingress.dc']",
            "action ingress.a: param 2 'q' bitwidth 3 != 4",
            "action ingress.a: param order [1, 2] != [2, 1]",
            "action ingress.b: param 1 'x' name \"x\" != \"y\"",
            "action profile ingress.ap: tables ['ingress.t'] != ['ingress.u']",
            "action profile ingress.ap: with_selector false != true",
            "counter ingress.c: size 64 != 65",
            "direct counter ingress.dc: spec.unit PACKETS != BYTES",
            "direct counter ingress.dc: direct_table 'ingress.t' != 'ingress.u'",
            "meter ingress.m: spec.unit BYTES != PACKETS",
            "meter ingress.m: spec.type TWO_RATE_THREE_COLOR != SINGLE_RATE_THREE_COLOR",
            "direct meter ingress.dm: missing",
            "controller packet metadata packet_in: metadata 2 'pad' bitwidth 7 != 8",
            "value set p.vs: match field 1 'f' bitwidth 16 != 15",
            "value set p.vs: size 4 != 5",
            "register ingress.r: size 8 != 9",
            "digest d_t: type_spec set != unset",
            "MyExtern instance ingress.e: missing",
            "type_info: error members missing: \"PacketTooShort\"",
            "type_info: error members unexpected: \"Other\"",
            "type_info: structs[\"d_t\"] missing",
        ]
    );
    let d = diff(|a| {
        a.registers[0].type_spec =
            p4info_from_text("registers { type_spec { bitstring { bit { bitwidth: 16 } } } }")
                .ok()
                .and_then(|p| p.registers.into_iter().next())
                .and_then(|r| r.type_spec);
    });
    assert_eq!(d, [format!("{r} 32 != 16")]);
}

#[test]
fn missing_unexpected_and_duplicate_entities() {
    let d = diff(|a| {
        let mut extra = a.tables[1].clone();
        if let Some(p) = extra.preamble.as_mut() {
            p.name = "ingress.v".into();
        }
        a.tables.push(extra);
        a.tables.push(a.tables[0].clone());
        a.tables.remove(1);
        a.externs[0].extern_type_id = 130;
    });
    assert_eq!(
        d,
        [
            "table ingress.t: duplicate in actual",
            "table ingress.u: missing",
            "table ingress.v: unexpected",
            "extern MyExtern (0x81): missing",
            "extern MyExtern (0x82): unexpected",
        ]
    );
}

/// Test helper: set a match field's standard match type.
trait SetMatchType {
    fn match_type_mut(&mut self, t: i32);
}

impl SetMatchType for koi_proto::p4info::MatchField {
    fn match_type_mut(&mut self, t: i32) {
        self.r#match = Some(koi_proto::p4info::match_field::Match::MatchType(t));
    }
}
