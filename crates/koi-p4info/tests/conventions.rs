//! One test per P4Info convention of p4c that the corpus goldens do not exercise (or not
//! alone): ids and `@id`s, aliases, hidden objects, field ids, match kinds, action scopes,
//! table properties, action profile annotations, direct resources, index types, value sets,
//! controller headers, documentation and structured annotations, `type_info` presence,
//! and the errors.

mod common;

use common::*;
use koi_ir::entity::EntityId;
use koi_ir::types::{AnnotationBody, AnnotationValue, Translation, TypeDecl};
use koi_ir::*;
use koi_p4info::p4info::{self, P4Info, action_ref, match_field};
use koi_p4info::{Problem, generate};
use koi_proto::ids::{Prefix, hashed_id};

fn gen_ok(p: &Pipeline) -> P4Info {
    match generate(p) {
        Ok(i) => i,
        Err(e) => panic!("{e}"),
    }
}

fn problems(p: &Pipeline) -> Vec<Problem> {
    match generate(p) {
        Ok(_) => Vec::new(),
        Err(e) => e.problems,
    }
}

fn pre(x: &Option<p4info::Preamble>) -> p4info::Preamble {
    x.clone().unwrap_or_default()
}

fn call(action: ActionId) -> Stmt {
    Stmt::CallAction {
        action,
        args: vec![],
    }
}

fn mt(t: match_field::MatchType) -> Option<match_field::Match> {
    Some(match_field::Match::MatchType(t as i32))
}

/// A pipeline with `NoAction` and an empty keyless table `c.t` using it.
fn base(arch: Architecture) -> (B, ActionId) {
    let mut b = B::new(arch);
    let na = b.no_action();
    (b, na)
}

#[test]
fn ids_hash_names_and_honour_id_annotations() {
    let (mut b, na) = base(Architecture::V1Model);
    let mut t = Table::new("c.t", na);
    t.preamble.id = Some(0x42);
    b.p.tables.push(t);
    b.p.tables.push(Table::new("c.u", na));
    let info = gen_ok(&b.p);
    assert_eq!(pre(&info.tables[0].preamble).id, 0x0200_0042);
    assert_eq!(
        pre(&info.tables[1].preamble).id,
        hashed_id(Prefix::Table, "c.u")
    );
    assert_eq!(
        pre(&info.actions[0].preamble).id,
        hashed_id(Prefix::Action, "NoAction")
    );
    assert_eq!(
        info.tables[1]
            .initial_default_action
            .as_ref()
            .map(|d| d.action_id),
        Some(pre(&info.actions[0].preamble).id)
    );
}

#[test]
fn bad_id_annotations_are_errors() {
    let (mut b, na) = base(Architecture::V1Model);
    for (name, id) in [("c.t", 7), ("c.u", 7), ("c.v", 0x0100_0001)] {
        let mut t = Table::new(name, na);
        t.preamble.id = Some(id);
        b.p.tables.push(t);
    }
    let msgs: Vec<String> = problems(&b.p).iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "table c.u: @id 0x02000007 is assigned to multiple declarations",
            "table c.v: @id 0x01000001 has the wrong 8-bit prefix (expected 0x02)",
        ]
    );
}

#[test]
fn aliases_count_every_symbol_including_header_types() {
    let (mut b, na) = base(Architecture::V1Model);
    b.p.tables.push(Table::new("ingress.on_miss", na));
    b.p.tables.push(Table::new("egress.on_miss", na));
    b.p.tables.push(Table::new("ingress.packet_in_t", na));
    b.p.controller_headers.push(ControllerHeader {
        preamble: Preamble::new("packet_in"),
        type_name: "packet_in_t".into(),
        fields: vec![],
    });
    let info = gen_ok(&b.p);
    let aliases: Vec<String> = info.tables.iter().map(|t| pre(&t.preamble).alias).collect();
    // `packet_in_t` is also the controller header's symbol, so the table keeps two parts.
    assert_eq!(
        aliases,
        ["ingress.on_miss", "egress.on_miss", "ingress.packet_in_t"]
    );
    let cpm = pre(&info.controller_packet_metadata[0].preamble);
    assert_eq!(
        (cpm.name.as_str(), cpm.alias.as_str()),
        ("packet_in", "packet_in")
    );
    assert_eq!(cpm.id, hashed_id(Prefix::ControllerHeader, "packet_in_t"));
}

#[test]
fn hidden_objects_are_left_out() {
    let (mut b, _) = base(Architecture::V1Model);
    let mut a = Action::new("c.tbl_act", vec![], vec![]);
    a.preamble.annotations.push(Annotation::flag("hidden"));
    let act = b.p.actions.push(a);
    let mut t = Table::new("c.tbl", act);
    t.preamble.annotations.push(Annotation::flag("hidden"));
    b.p.tables.push(t);
    let info = gen_ok(&b.p);
    assert!(info.tables.is_empty());
    // The hidden action is not listed, and neither is the unused NoAction.
    assert!(info.actions.is_empty());
    // Nothing p4c would process remains: no type_info.
    assert_eq!(info.type_info, None);
}

#[test]
fn match_fields_number_all_keys_and_leave_out_selectors() {
    let (mut b, na) = base(Architecture::V1Model);
    let mut t = Table::new("c.t", na);
    let keys = [
        ("meta.h", 32, MatchKind::Selector),
        ("hdr.a", 8, MatchKind::Optional),
        ("hdr.b", 16, MatchKind::Range),
        ("hdr.c", 4, MatchKind::Other("dleft".into())),
        ("hdr.d", 32, MatchKind::Lpm),
    ];
    for (name, w, kind) in keys {
        t.keys.push(TableKey {
            expr: Expr::bits(w, 0),
            field: MatchField::new(name, w, kind),
        });
    }
    t.keys[4].field.annotations = vec![
        Annotation::flag("hidden"),
        Annotation::text("brief", "\"dest\""),
    ];
    b.p.tables.push(t);
    let info = gen_ok(&b.p);
    let mf = &info.tables[0].match_fields;
    let got: Vec<(u32, &str, i32)> = mf
        .iter()
        .map(|m| (m.id, m.name.as_str(), m.bitwidth))
        .collect();
    assert_eq!(
        got,
        [
            (2, "hdr.a", 8),
            (3, "hdr.b", 16),
            (4, "hdr.c", 4),
            (5, "hdr.d", 32)
        ]
    );
    assert_eq!(mf[0].r#match, mt(match_field::MatchType::Optional));
    assert_eq!(mf[1].r#match, mt(match_field::MatchType::Range));
    assert_eq!(
        mf[2].r#match,
        Some(match_field::Match::OtherMatchType("dleft".into()))
    );
    assert_eq!(mf[3].annotations, ["@hidden"]);
    assert_eq!(mf[3].doc.as_ref().map(|d| d.brief.as_str()), Some("dest"));
}

#[test]
fn action_refs_keep_scope_and_annotations() {
    let (mut b, na) = base(Architecture::V1Model);
    let a = b.action("c.a", vec![], vec![]);
    let mut t = Table::new("c.t", na);
    t.actions = vec![
        TableAction {
            action: a,
            scope: ActionScope::TableOnly,
            annotations: vec![Annotation::flag("tableonly")],
        },
        TableAction {
            action: na,
            scope: ActionScope::DefaultOnly,
            annotations: vec![Annotation::flag("defaultonly")],
        },
    ];
    b.p.tables.push(t);
    let info = gen_ok(&b.p);
    let refs = &info.tables[0].action_refs;
    assert_eq!(refs[0].scope, action_ref::Scope::TableOnly as i32);
    assert_eq!(refs[0].annotations, ["@tableonly"]);
    assert_eq!(refs[1].scope, action_ref::Scope::DefaultOnly as i32);
    assert_eq!(refs[1].id, hashed_id(Prefix::Action, "NoAction"));
}

#[test]
fn table_properties() {
    let (mut b, na) = base(Architecture::V1Model);
    b.decl(TypeDecl::NewType {
        annotations: Vec::new(),
        name: "Port_t".into(),
        ty: P4Type::Bit(9),
        translation: Some(Translation {
            uri: "x/Port_t".into(),
            sdn_bitwidth: Some(32),
        }),
    });
    let set = b.action(
        "c.set",
        vec![typed_param("port", 9, "Port_t"), ActionParam::bits("v", 12)],
        vec![],
    );
    let mut t = Table::new("c.t", set);
    t.default_action.call.args = vec![bits(9, 5), bits(12, 0x123)];
    t.default_action.is_const = true;
    t.size = 0;
    t.support_timeout = true;
    t.entries_const = true;
    b.p.tables.push(t);
    let mut u = Table::new("c.u", na);
    u.size = 1 << 20;
    u.entries.push(Entry {
        keys: vec![],
        call: ActionCall {
            action: na,
            args: vec![],
        },
        priority: None,
        is_const: false,
        annotations: vec![],
    });
    b.p.tables.push(u);
    let info = gen_ok(&b.p);
    let (t, u) = (&info.tables[0], &info.tables[1]);
    let set_id = hashed_id(Prefix::Action, "c.set");
    assert_eq!(t.const_default_action_id, set_id);
    let init = t.initial_default_action.clone().unwrap_or_default();
    let args: Vec<(u32, Vec<u8>)> = init
        .arguments
        .iter()
        .map(|a| (a.param_id, a.value.clone()))
        .collect();
    // The translated parameter is encoded on its P4Info width (32), the other on 12 bits.
    assert_eq!(args, [(1, vec![0, 0, 0, 5]), (2, vec![1, 0x23])]);
    assert_eq!(t.size, 1024);
    assert_eq!(
        t.idle_timeout_behavior,
        p4info::table::IdleTimeoutBehavior::NotifyControl as i32
    );
    assert!(t.is_const_table && t.has_initial_entries);
    assert_eq!(u.size, 1 << 20);
    assert_eq!(u.const_default_action_id, 0);
    assert!(!u.is_const_table && u.has_initial_entries);
    assert_eq!(u.idle_timeout_behavior, 0);
}

fn selector(name: &str, anns: Vec<Annotation>, with_selector: bool) -> Extern {
    let kind = if with_selector {
        ExternKind::ActionSelector {
            algo: HashAlgo::Crc16,
            size: 64,
            output_width: 8,
        }
    } else {
        ExternKind::ActionProfile { size: 64 }
    };
    let mut preamble = Preamble::new(name);
    preamble.annotations = anns;
    Extern {
        preamble,
        type_name: "action_selector".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind,
    }
}

#[test]
fn action_profile_annotations() {
    use p4info::action_profile::{SelectorSizeSemantics, SumOfMembers};
    let (mut b, na) = base(Architecture::V1Model);
    let anns = vec![
        Annotation::text("max_group_size", "8"),
        Annotation::text("selector_size_semantics", "\"sum_of_members\""),
        Annotation::text("max_member_weight", "100"),
        Annotation::text("mode", "\"fair\""),
    ];
    let s = b.p.externs.push(selector("c.s", anns.clone(), true));
    b.p.externs.push(selector("c.p", anns, false));
    for name in ["c.z", "c.a"] {
        let mut t = Table::new(name, na);
        t.implementation = Some(s);
        b.p.tables.push(t);
    }
    let info = gen_ok(&b.p);
    let (s, p) = (&info.action_profiles[0], &info.action_profiles[1]);
    assert_eq!(pre(&s.preamble).annotations, ["@mode(\"fair\")"]);
    assert_eq!(s.max_group_size, 8);
    assert_eq!(
        s.selector_size_semantics,
        Some(SelectorSizeSemantics::SumOfMembers(SumOfMembers {
            max_member_weight: 100
        }))
    );
    // Sorted by table name.
    assert_eq!(
        s.table_ids,
        [
            hashed_id(Prefix::Table, "c.a"),
            hashed_id(Prefix::Table, "c.z")
        ]
    );
    assert!(s.with_selector && !p.with_selector);
    assert_eq!((p.max_group_size, p.selector_size_semantics), (0, None));
    assert_eq!(pre(&p.preamble).annotations, ["@mode(\"fair\")"]);
    assert!(p.table_ids.is_empty());

    let bad = vec![Annotation::text(
        "selector_size_semantics",
        "\"sum_of_bits\"",
    )];
    b.p.externs.push(selector("c.bad", bad, true));
    let msgs: Vec<String> = problems(&b.p).iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "action profile c.bad: annotation @selector_size_semantics(\"sum_of_bits\"): \
          expected \"sum_of_weights\" or \"sum_of_members\""
        ]
    );
}

fn direct_counter(name: &str) -> Extern {
    Extern {
        preamble: Preamble::new(name),
        type_name: "direct_counter".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::DirectCounter {
            unit: CounterUnit::Bytes,
        },
    }
}

#[test]
fn direct_resources_point_back_at_their_table() {
    let (mut b, na) = base(Architecture::V1Model);
    let c = b.p.externs.push(direct_counter("c.dc"));
    let m = b.p.externs.push(Extern {
        preamble: Preamble::new("c.dm"),
        type_name: "direct_meter".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::DirectMeter {
            unit: MeterUnit::Packets,
        },
    });
    let mut t = Table::new("c.t", na);
    t.direct_meter = Some(m);
    t.direct_counter = Some(c);
    b.p.tables.push(t);
    let info = gen_ok(&b.p);
    let tid = hashed_id(Prefix::Table, "c.t");
    assert_eq!(
        info.tables[0].direct_resource_ids,
        [
            hashed_id(Prefix::DirectCounter, "c.dc"),
            hashed_id(Prefix::DirectMeter, "c.dm")
        ]
    );
    assert_eq!(info.direct_counters[0].direct_table_id, tid);
    assert_eq!(info.direct_meters[0].direct_table_id, tid);

    let mut u = Table::new("c.u", na);
    u.direct_counter = Some(c);
    b.p.tables.push(u);
    assert_eq!(
        problems(&b.p),
        [Problem::SharedDirectResource {
            kind: "direct counter",
            name: "c.dc".into(),
            tables: vec!["c.t".into(), "c.u".into()],
        }]
    );
}

fn counter(name: &str, type_args: Vec<P4Type>) -> Extern {
    Extern {
        preamble: Preamble::new(name),
        type_name: "Counter".into(),
        type_args,
        ctor_args: vec![],
        kind: ExternKind::Counter {
            size: 16,
            unit: CounterUnit::PacketsAndBytes,
            index_width: 8,
        },
    }
}

#[test]
fn index_types_follow_the_architecture() {
    let idx = || P4Type::NewType("Idx_t".into());
    let idx_decl = TypeDecl::NewType {
        annotations: Vec::new(),
        name: "Idx_t".into(),
        ty: P4Type::Bit(8),
        translation: None,
    };
    // PSA: Counter<W, S>, index second; Register<T, S>, index second.
    let (mut b, _) = base(Architecture::Psa);
    b.decl(idx_decl.clone());
    b.p.externs
        .push(counter("c.c", vec![P4Type::Bit(32), idx()]));
    b.p.externs.push(Extern {
        preamble: Preamble::new("c.r"),
        type_name: "Register".into(),
        type_args: vec![P4Type::Int(16), idx()],
        ctor_args: vec![],
        kind: ExternKind::Register {
            size: 4,
            elem: Ty::Bits(16),
            index_width: 8,
        },
    });
    let info = gen_ok(&b.p);
    let name = Some(p4info::P4NamedType {
        name: "Idx_t".into(),
    });
    assert_eq!(info.counters[0].index_type_name, name);
    assert_eq!(info.counters[0].size, 16);
    assert_eq!(info.registers[0].index_type_name, name);
    assert_eq!(info.registers[0].size, 4);
    let ti = info.type_info.unwrap_or_default();
    assert!(ti.new_types.contains_key("Idx_t"));
    // v1model (20200408 on): counter<I>, index first; the PSA position means nothing there.
    let (mut b, _) = base(Architecture::V1Model);
    b.decl(idx_decl);
    b.p.externs.push(counter("c.c", vec![idx()]));
    b.p.externs.push(counter("c.old", vec![]));
    let info = gen_ok(&b.p);
    assert_eq!(info.counters[0].index_type_name, name);
    assert_eq!(info.counters[1].index_type_name, None);
}

#[test]
fn value_set_fields() {
    let (mut b, _) = base(Architecture::V1Model);
    let mut f1 = MatchField::new("f1", 8, MatchKind::Ternary);
    f1.annotations = vec![Annotation::text("match", "ternary"), Annotation::flag("x")];
    let mut f2 = MatchField::new("f2", 4, MatchKind::Exact);
    f2.id = Some(1);
    // p4c gives value set fields no type_name and describes no type for them.
    f2.type_name = Some("T_t".into());
    b.decl(TypeDecl::NewType {
        annotations: Vec::new(),
        name: "T_t".into(),
        ty: P4Type::Bit(4),
        translation: None,
    });
    b.p.value_sets.push(ValueSet {
        preamble: Preamble::new("prs.vs"),
        size: 3,
        fields: vec![f1, f2],
    });
    let info = gen_ok(&b.p);
    let vs = &info.value_sets[0];
    let got: Vec<(u32, &str)> = vs.r#match.iter().map(|m| (m.id, m.name.as_str())).collect();
    assert_eq!(got, [(2, "f1"), (1, "f2")]);
    assert_eq!(vs.r#match[0].annotations, ["@x"]);
    assert_eq!(vs.r#match[0].r#match, mt(match_field::MatchType::Ternary));
    assert_eq!(vs.size, 3);
    assert_eq!(
        (vs.r#match[1].type_name.clone(), vs.r#match[1].bitwidth),
        (None, 4)
    );
    assert_eq!(info.type_info, None);

    b.p.value_sets.push(ValueSet {
        preamble: Preamble::new("prs.bad"),
        size: 1,
        fields: vec![MatchField::new("s", 8, MatchKind::Selector)],
    });
    assert_eq!(
        problems(&b.p),
        [Problem::UnsupportedMatchKind {
            owner: "value set prs.bad".into(),
            kind: "selector".into()
        }]
    );
}

#[test]
fn controller_header_fields() {
    let (mut b, _) = base(Architecture::V1Model);
    let field = |name: &str, id: Option<u32>, hidden: bool| externs::MetadataField {
        name: name.into(),
        width: 8,
        type_name: None,
        id,
        annotations: if hidden {
            vec![Annotation::flag("hidden")]
        } else {
            vec![]
        },
    };
    let mut h = ControllerHeader {
        preamble: Preamble::new("packet_out"),
        type_name: "po_t".into(),
        fields: vec![
            field("pad", None, true),
            field("a", None, false),
            field("b", Some(9), false),
        ],
    };
    h.preamble.id = Some(5);
    b.p.controller_headers.push(h);
    let info = gen_ok(&b.p);
    let cpm = &info.controller_packet_metadata[0];
    assert_eq!(pre(&cpm.preamble).id, 0x0400_0005);
    let got: Vec<(u32, &str)> = cpm
        .metadata
        .iter()
        .map(|m| (m.id, m.name.as_str()))
        .collect();
    assert_eq!(got, [(2, "a"), (9, "b")]);
    assert!(info.type_info.is_some());
}

#[test]
fn documentation_and_structured_annotations() {
    let (mut b, _) = base(Architecture::V1Model);
    let mut a = Action::new("c.a", vec![ActionParam::bits("p", 4)], vec![]);
    a.preamble.annotations = vec![
        Annotation::text("brief", "\"short\""),
        Annotation::text("description", "\"long\""),
        Annotation {
            name: "s".into(),
            body: AnnotationBody::KeyValue(vec![("k".into(), AnnotationValue::Int(3))]),
        },
    ];
    a.params[0].annotations = vec![Annotation::text("description", "\"the p\"")];
    let a = b.p.actions.push(a);
    b.p.tables.push(Table::new("c.t", a));
    b.p.annotations = vec![
        Annotation::text("brief", "\"the program\""),
        Annotation::flag("experimental"),
    ];
    let info = gen_ok(&b.p);
    let p = pre(&info.actions[0].preamble);
    let doc = p.doc.unwrap_or_default();
    assert_eq!(
        (doc.brief.as_str(), doc.description.as_str()),
        ("short", "long")
    );
    assert!(p.annotations.is_empty());
    assert_eq!(p.structured_annotations[0].name, "s");
    let param = &info.actions[0].params[0];
    assert_eq!(
        param.doc.as_ref().map(|d| d.description.as_str()),
        Some("the p")
    );
    let pkg = info.pkg_info.unwrap_or_default();
    assert_eq!(pkg.annotations, ["@experimental"]);
    assert_eq!(pkg.doc.map(|d| d.brief), Some("the program".into()));
    assert_eq!(pkg.arch, "v1model");
}

#[test]
fn type_info_presence_follows_p4c() {
    // v1model: an extern function call in an action creates it (empty).
    let (mut b, _) = base(Architecture::V1Model);
    let drop = b.action("c.drop", vec![], vec![mark_to_drop()]);
    b.control("c", Role::Ingress, vec![call(drop)], &[]);
    assert_eq!(gen_ok(&b.p).type_info, Some(p4info::P4TypeInfo::default()));
    // Not from an action nothing runs.
    let (mut b, _) = base(Architecture::V1Model);
    b.action("c.drop", vec![], vec![mark_to_drop()]);
    assert_eq!(gen_ok(&b.p).type_info, None);
    // ubpf: not.
    let (mut b, _) = base(Architecture::Ubpf);
    let drop = b.action(
        "pipe.drop",
        vec![],
        vec![Stmt::Builtin(Builtin::MarkToDrop)],
    );
    b.control("pipe", Role::Pipe, vec![call(drop)], &[]);
    let info = gen_ok(&b.p);
    assert_eq!(info.type_info, None);
    assert_eq!(info.pkg_info.map(|p| p.arch), Some("ubpf".into()));
    // Any extern instance creates it, even one P4Info does not describe.
    let (mut b, _) = base(Architecture::V1Model);
    b.p.externs.push(Extern {
        preamble: Preamble::new("c.ck"),
        type_name: "Checksum16".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::Checksum16,
    });
    assert!(gen_ok(&b.p).type_info.is_some());
}

#[test]
fn structural_errors_are_reported_together() {
    let (mut b, na) = base(Architecture::V1Model);
    // Two actions of one name are listed once (as p4c does); two counters are an error.
    let twin = b.p.actions.push(Action::new("NoAction", vec![], vec![]));
    b.p.externs.push(counter("c.c", vec![]));
    b.p.externs.push(counter("c.c", vec![]));
    let mut t = Table::new("c.t", na);
    t.actions.push(TableAction::new(ActionId::new(99)));
    t.actions.push(TableAction::new(twin));
    t.keys.push(TableKey {
        expr: Expr::bits(8, 0),
        field: MatchField {
            id: Some(0),
            ..MatchField::new("k", 8, MatchKind::Exact)
        },
    });
    b.p.tables.push(t);
    let msgs: Vec<String> = problems(&b.p).iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "table c.t: field 'k': 0 is not a valid @id value",
            "table c.t: refers to a missing action (action99)",
            "name 'c.c' is used for multiple counter objects in the P4Info message",
        ]
    );
    let err = generate(&b.p)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with("cannot generate P4Info: table c.t: field 'k'"),
        "{err}"
    );
}

#[test]
fn text_is_p4c_text_format() {
    let (b, _) = base(Architecture::Psa);
    let text = koi_p4info::to_text(&gen_ok(&b.p));
    assert!(text.starts_with("# proto-file: p4/config/v1/p4info.proto\n"));
    assert!(text.contains("pkg_info {\n  arch: \"psa\"\n}\n"));
    assert_eq!(koi_proto::p4info_from_text(&text).ok(), Some(gen_ok(&b.p)));
}

#[test]
fn digests_are_annotated_only_as_psa_instances() {
    for (arch, expected) in [
        (Architecture::V1Model, vec![]),
        (Architecture::Psa, vec!["@learn".to_string()]),
    ] {
        let (mut b, _) = base(arch);
        let mut preamble = Preamble::new("c.d");
        preamble.annotations.push(Annotation::flag("learn"));
        b.p.digests.push(Digest {
            preamble,
            ty: P4Type::Tuple(vec![P4Type::Bit(8)]),
            fields: vec![("f0".into(), 8)],
        });
        let info = gen_ok(&b.p);
        assert_eq!(pre(&info.digests[0].preamble).annotations, expected);
        let spec = info.digests[0].type_spec.clone().unwrap_or_default();
        assert!(matches!(
            spec.type_spec,
            Some(p4info::p4_data_type_spec::TypeSpec::Tuple(_))
        ));
    }
}

#[test]
fn listed_actions_are_the_ones_p4c_keeps() {
    let (mut b, _) = base(Architecture::V1Model);
    // Called only from another action: inlined by p4c, not listed, not a symbol.
    let helper = b.action("c.srcAddr", vec![], vec![]);
    // Called directly from the apply block: listed, its parameter bound by the call.
    let direct = b.action(
        "c.my_a",
        vec![ActionParam::bits("v", 32)],
        vec![call(helper)],
    );
    let mut with_args = call(direct);
    if let Stmt::CallAction { args, .. } = &mut with_args {
        args.push(Expr::bits(32, 0));
    }
    // In a table: listed with its parameters.
    let set = b.action("c.set", vec![ActionParam::bits("port", 9)], vec![]);
    b.p.tables.push(Table::new("c.t", set));
    // A table named like the helper: the helper is no symbol, so one component suffices.
    b.p.tables.push(Table::new("x.srcAddr", set));
    b.control("c", Role::Ingress, vec![with_args], &[]);
    let info = gen_ok(&b.p);
    let listed: Vec<(String, usize)> = info
        .actions
        .iter()
        .map(|a| (pre(&a.preamble).name, a.params.len()))
        .collect();
    assert_eq!(
        listed,
        [("c.my_a".to_string(), 0), ("c.set".to_string(), 1)]
    );
    assert_eq!(pre(&info.tables[1].preamble).alias, "srcAddr");
}
