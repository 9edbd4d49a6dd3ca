//! A pipeline using most of the IR (stacks, unions, varbits, value sets, externs, builtins,
//! switch and action-run terminators, priorities) verifies and prints readably.

use koi_ir::*;

struct Parts {
    p: Pipeline,
    mpls: StackId,
    opt: HeaderId,
    meta_x: SlotId,
    meta_h: SlotId,
}

fn phv() -> Parts {
    let mut p = Pipeline::new(Architecture::V1Model);
    let mpls = p.phv.add_stack(
        "hdr.mpls",
        "mpls_t",
        &[FieldSpec::bit("label", 20), FieldSpec::bit("rest", 12)],
        3,
    );
    let opt = p.phv.add_header(
        "hdr.opt",
        "opt_t",
        &[FieldSpec::bit("len", 8), FieldSpec::varbit("data", 320)],
    );
    p.phv.add_union(
        "hdr.ip",
        "ip_u",
        &[
            ("v4", "ipv4_t", &[FieldSpec::bit("ttl", 8)]),
            ("v6", "ipv6_t", &[FieldSpec::bit("hops", 8)]),
        ],
    );
    p.phv.headers[opt].stage = Some(2);
    let meta_x = p.phv.add_signed_slot("meta.x", 16, SlotKind::Metadata);
    let meta_h = p.phv.add_slot("meta.h", Ty::Bits(32), SlotKind::Metadata);
    let spec = p.phv.add_slot(
        "standard_metadata.egress_spec",
        Ty::Bits(9),
        SlotKind::Metadata,
    );
    p.intrinsics.push(("egress_spec".into(), spec));
    Parts {
        p,
        mpls,
        opt,
        meta_x,
        meta_h,
    }
}

fn parser(parts: &mut Parts) -> ParserId {
    let p = &mut parts.p;
    let pvs = p.value_sets.push(ValueSet {
        preamble: Preamble::new("MyParser.pvs"),
        size: 4,
        fields: vec![MatchField::new("label", 20, MatchKind::Exact)],
    });
    let len = p.phv.field(parts.opt, "len").unwrap();
    let label_last = Expr::StackField {
        stack: parts.mpls,
        index: Box::new(Expr::bits(32, 0)),
        field: 0,
    };
    let mut prs = Parser::new("MyParser");
    let opt_state = prs.add_state("parse_opt");
    let start = prs.start;
    prs.push(
        start,
        Stmt::Extract {
            header: HeaderRef::Next(parts.mpls),
            varbit_bits: None,
        },
    );
    prs.push(
        start,
        Stmt::Lookahead {
            dst: Place::Slot(parts.meta_h),
        },
    );
    let cases = vec![
        SelectCase {
            keysets: vec![Keyset::ValueSet(pvs)],
            next: Target::State(opt_state),
        },
        SelectCase {
            keysets: vec![Keyset::Pattern(Pattern::Mask {
                value: Bits::from_u64(20, 0x100),
                mask: Bits::from_u64(20, 0xff00),
            })],
            next: Target::State(start),
        },
        SelectCase::default_to(1, Target::Reject),
    ];
    prs.set_transition(
        start,
        Transition::Select {
            keys: vec![label_last],
            cases,
        },
    );
    let bits = Expr::binary(
        BinOp::Mul,
        Expr::Slot(len).cast(Cast::Resize {
            width: 32,
            signed: false,
        }),
        Expr::bits(32, 8),
    );
    prs.push(
        opt_state,
        Stmt::Extract {
            header: HeaderRef::Header(parts.opt),
            varbit_bits: Some(bits),
        },
    );
    let ok = Expr::binary(BinOp::LeU, Expr::Slot(len), Expr::bits(8, 40));
    let code = p.add_error("OptionTooLong");
    prs.push(
        opt_state,
        Stmt::Verify {
            cond: ok,
            error: code,
        },
    );
    prs.set_transition(opt_state, Transition::Goto(Target::Accept));
    p.add_parser(prs, Some(Role::Parser))
}

fn externs(p: &mut Pipeline) -> (ExternId, ExternId, ExternId) {
    let reg = p.externs.push(Extern {
        preamble: Preamble::new("MyIngress.r"),
        type_name: "register".into(),
        type_args: vec![P4Type::Bit(16), P4Type::Bit(8)],
        ctor_args: vec![ConstArg::Bits(Bits::from_u64(32, 256))],
        kind: ExternKind::Register {
            size: 256,
            elem: Ty::Bits(16),
            index_width: 8,
        },
    });
    let sel = p.externs.push(Extern {
        preamble: Preamble::new("MyIngress.sel"),
        type_name: "action_selector".into(),
        type_args: vec![],
        ctor_args: vec![
            ConstArg::Enum {
                ty: "HashAlgorithm".into(),
                member: "crc16".into(),
            },
            ConstArg::Bits(Bits::from_u64(32, 128)),
            ConstArg::Bits(Bits::from_u64(32, 16)),
        ],
        kind: ExternKind::ActionSelector {
            algo: HashAlgo::Crc16,
            size: 128,
            output_width: 16,
        },
    });
    let dc = p.externs.push(Extern {
        preamble: Preamble::new("MyIngress.dc"),
        type_name: "direct_counter".into(),
        type_args: vec![],
        ctor_args: vec![ConstArg::Enum {
            ty: "CounterType".into(),
            member: "packets".into(),
        }],
        kind: ExternKind::DirectCounter {
            unit: CounterUnit::Packets,
        },
    });
    (reg, sel, dc)
}

fn actions(parts: &mut Parts) -> (ActionId, ActionId) {
    let p = &mut parts.p;
    let spec = p.intrinsic("egress_spec").unwrap();
    let fl = p.field_lists.push(FieldList {
        index: 1,
        slots: vec![parts.meta_x],
    });
    let digest = p.digests.push(Digest {
        preamble: Preamble::new("learn_t"),
        ty: P4Type::Struct("learn_t".into()),
        fields: vec![("x".into(), 16)],
    });
    let mut set_port = Action::new(
        "MyIngress.set_port",
        vec![ActionParam::bits("port", 9)],
        vec![
            Stmt::assign(Place::Slot(spec), Expr::Param(0)),
            Stmt::Builtin(Builtin::Clone {
                kind: CloneKind::I2E,
                session: Expr::bits(32, 5),
                field_list: Some(fl),
            }),
            Stmt::Builtin(Builtin::Digest {
                digest,
                receiver: Expr::bits(32, 1),
                data: vec![Expr::Slot(parts.meta_x)],
            }),
        ],
    );
    set_port
        .preamble
        .annotations
        .push(Annotation::text("brief", "\"send out\""));
    let set_port = p.actions.push(set_port);
    let neg = Expr::binary(BinOp::LtS, Expr::Slot(parts.meta_x), Expr::bits(16, 0));
    let abs = Expr::mux(
        neg,
        Expr::unary(UnOp::Neg, Expr::Slot(parts.meta_x)),
        Expr::Slot(parts.meta_x),
    );
    let nop = p.actions.push(Action::new("NoAction", vec![], vec![]));
    let mut shuffle = Action::new(
        "MyIngress.shuffle",
        vec![],
        vec![
            Stmt::assign(Place::Slot(parts.meta_x), abs),
            Stmt::PushFront {
                stack: parts.mpls,
                count: 1,
            },
            Stmt::CallAction {
                action: nop,
                args: vec![],
            },
        ],
    );
    shuffle.preamble.id = Some(0x0100_0042);
    let shuffle = p.actions.push(shuffle);
    (set_port, shuffle)
}

fn ingress(parts: &mut Parts) -> ControlId {
    let (reg, sel, dc) = externs(&mut parts.p);
    let (set_port, shuffle) = actions(parts);
    let p = &mut parts.p;
    let nop = p.action_by_name("NoAction").unwrap();
    let label0 = p
        .phv
        .field(p.phv.stacks[parts.mpls].elems[0], "label")
        .unwrap();
    let mut t = Table::new("MyIngress.lb", nop);
    t.keys.push(TableKey {
        expr: Expr::Slot(label0),
        field: MatchField::new("hdr.mpls[0].label", 20, MatchKind::Ternary),
    });
    t.keys.push(TableKey {
        expr: Expr::Slot(parts.meta_h),
        field: MatchField::new("meta.h", 32, MatchKind::Selector),
    });
    t.actions
        .extend([TableAction::new(set_port), TableAction::new(shuffle)]);
    t.default_action.is_const = true;
    t.implementation = Some(sel);
    t.direct_counter = Some(dc);
    t.support_timeout = true;
    t.entries_const = true;
    t.entries.push(Entry {
        keys: vec![
            Pattern::Mask {
                value: Bits::from_u64(20, 16),
                mask: Bits::from_u64(20, 0xff),
            },
            Pattern::Any,
        ],
        call: ActionCall {
            action: set_port,
            args: vec![Bits::from_u64(9, 3)],
        },
        priority: Some(10),
        is_const: true,
        annotations: vec![],
    });
    let lb = p.tables.push(t);

    let mut b = BodyBuilder::new();
    let hash = Builtin::Hash {
        dst: Place::Slot(parts.meta_h),
        algo: HashAlgo::Crc32,
        base: Expr::bits(32, 0),
        data: vec![Expr::Slot(label0), Expr::Slot(parts.meta_x)],
        max: Some(Expr::bits(32, 1024)),
    };
    b.push(Stmt::Builtin(hash));
    let (after_shuffle, other) = (b.new_block(), b.new_block());
    let next = ApplyNext::Actions {
        cases: vec![(shuffle, after_shuffle)],
        default: other,
    };
    b.terminate(Terminator::Apply { table: lb, next });
    b.switch_to(after_shuffle);
    let idx = Expr::Slot(parts.meta_h).slice(7, 0);
    let read = Stmt::ExternCall {
        instance: reg,
        method: "read".into(),
        args: vec![
            Arg::Out(Place::Slice {
                slot: parts.meta_h,
                hi: 15,
                lo: 0,
            }),
            Arg::In(idx),
        ],
        result: None,
    };
    b.push(read);
    b.terminate(Terminator::Exit);
    b.switch_to(other);
    let low = Expr::Slot(parts.meta_h).slice(1, 0);
    let (c0, c1, dflt) = (b.new_block(), b.new_block(), b.new_block());
    b.terminate(Terminator::Switch {
        value: low,
        cases: vec![(Bits::from_u64(2, 0), c0), (Bits::from_u64(2, 1), c1)],
        default: dflt,
    });
    for blk in [c0, c1, dflt] {
        b.switch_to(blk);
        b.terminate(Terminator::Return);
    }
    p.add_control("MyIngress", b.finish(), Some(Role::Ingress))
}

fn build() -> Pipeline {
    let mut parts = phv();
    parser(&mut parts);
    let empty = || Body::from_stmts(vec![]);
    parts
        .p
        .add_control("MyVerifyChecksum", empty(), Some(Role::VerifyChecksum));
    ingress(&mut parts);
    parts.p.add_control("MyEgress", empty(), Some(Role::Egress));
    parts
        .p
        .add_control("MyComputeChecksum", empty(), Some(Role::ComputeChecksum));
    let emit = vec![
        Stmt::Emit(HeaderRef::Index(parts.mpls, Box::new(Expr::bits(32, 0)))),
        Stmt::Emit(HeaderRef::Header(parts.opt)),
    ];
    parts
        .p
        .add_control("MyDeparser", Body::from_stmts(emit), Some(Role::Deparser));
    parts.p.types.decls.push(types::TypeDecl::Struct {
        name: "learn_t".into(),
        members: vec![types::Member {
            name: "x".into(),
            ty: P4Type::Int(16),
        }],
        annotations: vec![],
    });
    parts.p.types.decls.push(types::TypeDecl::NewType {
        name: "PortId_t".into(),
        ty: P4Type::Bit(9),
        translation: Some(types::Translation {
            uri: "p4.org/port".into(),
            sdn_bitwidth: Some(32),
        }),
        annotations: Vec::new(),
    });
    parts.p.controller_headers.push(ControllerHeader {
        preamble: Preamble::new("packet_in"),
        type_name: "packet_in_t".into(),
        fields: vec![externs::MetadataField {
            name: "port".into(),
            width: 9,
            type_name: None,
            id: Some(1),
            annotations: vec![],
        }],
    });
    parts.p
}

#[test]
fn rich_pipeline_verifies() {
    let p = build();
    assert_eq!(verify(&p), Ok(()));
}

#[test]
fn rich_pipeline_prints_every_construct() {
    let text = build().to_string();
    let expected_lines = [
        "struct learn_t { x: int<16> }",
        "type PortId_t = bit<9> @p4runtime_translation(\"p4.org/port\", bit<32>)",
        "  stack hdr.mpls: mpls_t[3]",
        "  header hdr.mpls[2]: mpls_t (32 bits)",
        "  @113   bit<32>     hdr.mpls.$next",
        "  header hdr.opt: opt_t (328 bits) @koi_stage(2)",
        "  header hdr.mpls[0]: mpls_t (32 bits)",
        "    @160   varbit<320> hdr.opt.data",
        "    @481   bit<9>      hdr.opt.data.$len",
        "  union hdr.ip: ip_u",
        "  @521   int<16>     meta.x",
        "  field_list 1 = { meta.x }",
        "    extract(hdr.mpls.next);",
        "    meta.h = lookahead();",
        "    transition select(hdr.mpls[32w0].label) {",
        "      MyParser.pvs: parse_opt;",
        "      20w0x100 &&& 20w0xff00: start;",
        "      default: reject;",
        "    extract(hdr.opt, ((bit<32>)hdr.opt.len) * 32w8);",
        "    verify(hdr.opt.len <= 8w40, error.OptionTooLong);",
        "    meta.h = hash(crc32, 32w0, {hdr.mpls[0].label, meta.x}, 32w0x400);",
        "    apply MyIngress.lb { MyIngress.shuffle => bb1, default => bb2 }",
        "    MyIngress.r.read(out meta.h[15:0], meta.h[7:0]);",
        "    exit",
        "    switch meta.h[1:0] { 2w0 => bb3, 2w1 => bb4, default => bb5 }",
        "  emit(hdr.mpls[32w0]);",
        "@brief(\"send out\") action MyIngress.set_port(bit<9> port) {",
        "  clone(I2E, 32w5, field_list 1);",
        "  digest<learn_t>(32w1, {meta.x});",
        "@id(16777282) action MyIngress.shuffle() {",
        "  meta.x = (meta.x <s 16w0) ? (-meta.x) : meta.x;",
        "  hdr.mpls.push_front(1);",
        "  NoAction();",
        "    hdr.mpls[0].label: ternary;",
        "    meta.h: selector;",
        "  const default_action = NoAction();",
        "  implementation = MyIngress.sel;",
        "  counters = MyIngress.dc;",
        "  support_timeout = true;",
        "  const entries = {",
        "    const priority=10: (20w16 &&& 20w255, _): MyIngress.set_port(9w3);",
        "extern register<bit<16>, bit<8>>(32w0x100) MyIngress.r;",
        "extern action_selector(HashAlgorithm.crc16, 32w128, 32w16) MyIngress.sel;",
        "value_set(4) MyParser.pvs { label: bit<20> exact }",
        "digest learn_t: learn_t { x: bit<16> }",
        "controller_header packet_in: packet_in_t { port: bit<9> }",
    ];
    let missing: Vec<&str> = expected_lines
        .iter()
        .copied()
        .filter(|l| !text.lines().any(|t| t == *l))
        .collect();
    assert!(missing.is_empty(), "missing lines {missing:#?} in\n{text}");
}

#[test]
fn static_reads_include_validity_and_stack_slots() {
    let p = build();
    let stack = p.phv.stacks.keys().next().unwrap();
    let e = Expr::IsValid(HeaderRef::Next(stack));
    let mut reads = Vec::new();
    e.for_each_read(&p.phv, &mut |s| reads.push(p.phv.slots[s].name.clone()));
    assert_eq!(
        reads,
        [
            "hdr.mpls.$next",
            "hdr.mpls[0].$valid",
            "hdr.mpls[1].$valid",
            "hdr.mpls[2].$valid"
        ]
    );
}
