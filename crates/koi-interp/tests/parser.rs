//! Parser execution: paths, select kinds, errors into `parser_error` (v1model keeps going),
//! varbits, stacks, unions, lookahead and advance, and the unparsed payload.

mod common;
use common::*;
use koi_ir::*;
use koi_state::State;

fn resize(e: Expr, w: u32) -> Expr {
    e.cast(Cast::Resize {
        width: w,
        signed: false,
    })
}

/// Ingress sends the packet to port `parser_error`.
fn error_to_port(bb: &mut B) {
    let (spec, err) = (bb.sm("egress_spec"), bb.sm("parser_error"));
    bb.control(
        Role::Ingress,
        "ig",
        vec![set(spec, resize(Expr::Slot(err), 9))],
    );
}

#[test]
fn packet_too_short_records_the_error_and_keeps_the_payload() {
    let mut bb = B::v1model();
    let eth = bb.eth();
    let h2 = bb.header("hdr.h2", &[("a", 32)]);
    bb.simple_parser(&[eth, h2]);
    error_to_port(&mut bb);
    bb.emit_deparser(&[eth, h2]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let pkt = frame(0x1234, 0x0800, &[0xde, 0xad]);
    let o = run(&p, &mut s, &pkt, 0);
    assert_eq!(outs(&o), [(1, pkt.clone())], "PacketTooShort is 1");
    let full = frame(0x1234, 0x0800, &[1, 2, 3, 4, 5]);
    assert_eq!(outs(&run(&p, &mut s, &full, 0)), [(0, full)]);
}

#[test]
fn a_six_byte_frame_comes_out_after_fourteen_zero_bytes() {
    // p4c's parser_error-bmv2: the ethernet extract fails, ingress makes it valid.
    let mut bb = B::v1model();
    let eth = bb.eth();
    bb.simple_parser(&[eth]);
    bb.control(
        Role::Ingress,
        "ig",
        vec![Stmt::SetValid(HeaderRef::Header(eth))],
    );
    bb.emit_deparser(&[eth]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &[1, 2, 3, 4, 5, 6], 3);
    let mut want = vec![0u8; 14];
    want.extend_from_slice(&[1, 2, 3, 4, 5, 6]);
    assert_eq!(outs(&o), [(0, want)]);
}

fn select_pipeline(cases: Vec<SelectCase>, bb: &mut B) -> (HeaderId, HeaderId) {
    let eth = bb.eth();
    let h2 = bb.header("hdr.h2", &[("a", 8)]);
    let ty = bb.f(eth, "type");
    let mut prs = Parser::new("prs");
    let s2 = prs.add_state("parse_h2");
    prs.push(
        prs.start,
        Stmt::Extract {
            header: HeaderRef::Header(eth),
            varbit_bits: None,
        },
    );
    let cases = cases
        .into_iter()
        .map(|mut c| {
            if c.next == Target::State(StateId::from_index(1)) {
                c.next = Target::State(s2);
            }
            c
        })
        .collect();
    prs.set_transition(
        prs.start,
        Transition::Select {
            keys: vec![Expr::Slot(ty)],
            cases,
        },
    );
    prs.push(
        s2,
        Stmt::Extract {
            header: HeaderRef::Header(h2),
            varbit_bits: None,
        },
    );
    prs.set_transition(s2, Transition::Goto(Target::Accept));
    bb.p.add_parser(prs, Some(Role::Parser));
    (eth, h2)
}

trait FromIndex {
    fn from_index(i: u32) -> Self;
}

impl FromIndex for StateId {
    fn from_index(i: u32) -> StateId {
        <StateId as koi_ir::entity::EntityId>::new(i)
    }
}

fn case(p: Pattern, to_h2: bool) -> SelectCase {
    SelectCase {
        keysets: vec![Keyset::Pattern(p)],
        next: match to_h2 {
            true => Target::State(StateId::from_index(1)),
            false => Target::Reject,
        },
    }
}

#[test]
fn select_masks_ranges_value_sets_and_default() {
    let mut bb = B::v1model();
    let vs = bb.p.value_sets.push(ValueSet {
        preamble: Preamble::new("prs.pvs"),
        size: 4,
        fields: vec![MatchField::new("type", 16, MatchKind::Exact)],
    });
    let cases = vec![
        case(
            Pattern::Mask {
                value: b(16, 0x0800),
                mask: b(16, 0xff00),
            },
            true,
        ),
        case(
            Pattern::Range {
                lo: b(16, 0x9000),
                hi: b(16, 0x9005),
            },
            true,
        ),
        SelectCase {
            keysets: vec![Keyset::ValueSet(vs)],
            next: Target::State(StateId::from_index(1)),
        },
        case(Pattern::Exact(b(16, 0x1111)), false),
    ];
    let (eth, h2) = select_pipeline(cases, &mut bb);
    let (spec, err) = (bb.sm("egress_spec"), bb.sm("parser_error"));
    let to_port = Expr::mux(Expr::is_valid(h2), k(9, 5), resize(Expr::Slot(err), 9));
    bb.control(Role::Ingress, "ig", vec![set(spec, to_port)]);
    bb.emit_deparser(&[eth, h2]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let port = |s: &mut State, ty: u16| outs(&run(&p, s, &frame(1, ty, &[9]), 0))[0].0;
    assert_eq!(port(&mut s, 0x0806), 5, "mask");
    assert_eq!(port(&mut s, 0x9003), 5, "range");
    assert_eq!(
        port(&mut s, 0x9006),
        0,
        "no case: accepts (BMv2 default transition)"
    );
    assert_eq!(
        port(&mut s, 0x1111),
        0,
        "explicit reject acts as accept, NoError"
    );
    assert_eq!(port(&mut s, 0x4242), 0);
    s.value_set_add("pvs", &[Pattern::Exact(b(16, 0x4242))])
        .unwrap();
    assert_eq!(port(&mut s, 0x4242), 5, "value set");
}

#[test]
fn varbit_extract_and_its_errors() {
    let mut bb = B::v1model();
    let opt = bb.p.phv.add_header(
        "hdr.opt",
        "opt_t",
        &[FieldSpec::bit("len", 8), FieldSpec::varbit("data", 32)],
    );
    let len = bb.f(opt, "len");
    let mut prs = Parser::new("prs");
    let s1 = prs.add_state("opt");
    prs.push(
        prs.start,
        Stmt::Lookahead {
            dst: Place::Slot(len),
        },
    );
    prs.set_transition(prs.start, Transition::Goto(Target::State(s1)));
    let bits = Expr::binary(BinOp::Mul, resize(Expr::Slot(len), 32), k(32, 4));
    prs.push(
        s1,
        Stmt::Extract {
            header: HeaderRef::Header(opt),
            varbit_bits: Some(bits),
        },
    );
    prs.set_transition(s1, Transition::Goto(Target::Accept));
    bb.p.add_parser(prs, Some(Role::Parser));
    error_to_port(&mut bb);
    bb.emit_deparser(&[opt]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    // len 4: 16 bits of data, then a payload byte.
    let o = run(&p, &mut s, &[4, 0xab, 0xcd, 0xee], 0);
    assert_eq!(outs(&o), [(0, vec![4, 0xab, 0xcd, 0xee])]);
    // len 2: 8 bits.
    assert_eq!(
        outs(&run(&p, &mut s, &[2, 0xab, 0xcd], 0)),
        [(0, vec![2, 0xab, 0xcd])]
    );
    // len 3: 12 bits, not a whole number of bytes: ParserInvalidArgument (6).
    assert_eq!(outs(&run(&p, &mut s, &[3, 0xab, 0xcd], 0))[0].0, 6);
    // len 16: 64 bits, above the maximum: HeaderTooShort (4) when the packet has them.
    let long = [16, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    assert_eq!(outs(&run(&p, &mut s, &long, 0))[0].0, 4);
    // ... but PacketTooShort (1) first when it does not.
    assert_eq!(outs(&run(&p, &mut s, &[16, 1], 0))[0].0, 1);
    // Lookahead on an empty packet: PacketTooShort.
    assert_eq!(outs(&run(&p, &mut s, &[], 0)), [(1, vec![])]);
}

#[test]
fn stacks_next_last_and_out_of_bounds() {
    let mut bb = B::v1model();
    let st = bb.p.phv.add_stack(
        "hdr.mpls",
        "mpls_t",
        &[FieldSpec::bit("label", 7), FieldSpec::bit("bos", 1)],
        2,
    );
    let elems = bb.p.phv.stacks[st].elems.clone();
    let mut prs = Parser::new("prs");
    prs.push(
        prs.start,
        Stmt::Extract {
            header: HeaderRef::Next(st),
            varbit_bits: None,
        },
    );
    // Loop while the last extracted element's bos bit is 0.
    let last = bb.p.phv.slot_by_name("hdr.mpls.$next").unwrap();
    let key = Expr::StackField {
        stack: st,
        index: Box::new(Expr::binary(BinOp::Sub, Expr::Slot(last), k(32, 1))),
        field: 1,
    };
    prs.set_transition(
        prs.start,
        Transition::Select {
            keys: vec![key],
            cases: vec![
                SelectCase {
                    keysets: vec![Keyset::Pattern(Pattern::Exact(b(1, 0)))],
                    next: Target::State(prs.start),
                },
                SelectCase::default_to(1, Target::Accept),
            ],
        },
    );
    bb.p.add_parser(prs, Some(Role::Parser));
    error_to_port(&mut bb);
    let emits = elems
        .iter()
        .map(|h| Stmt::Emit(HeaderRef::Header(*h)))
        .collect();
    bb.control(Role::Deparser, "dep", emits);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    assert_eq!(
        outs(&run(&p, &mut s, &[0x02, 0x05, 0xff], 0)),
        [(0, vec![2, 5, 0xff])]
    );
    assert_eq!(
        outs(&run(&p, &mut s, &[0x03, 0xff], 0)),
        [(0, vec![3, 0xff])]
    );
    // A third label: StackOutOfBounds (3); the two extracted stay valid.
    assert_eq!(
        outs(&run(&p, &mut s, &[0x02, 0x04, 0x07], 0)),
        [(3, vec![2, 4, 7])]
    );
}

#[test]
fn union_members_exclude_each_other_and_advance_skips() {
    let mut bb = B::v1model();
    let u = bb.p.phv.add_union(
        "hdr.u",
        "u_t",
        &[
            ("a", "a_t", &[FieldSpec::bit("x", 8)]),
            ("b", "b_t", &[FieldSpec::bit("y", 16)]),
        ],
    );
    let (a, bm) = (bb.p.phv.unions[u].members[0], bb.p.phv.unions[u].members[1]);
    let mut prs = Parser::new("prs");
    prs.push(prs.start, Stmt::Advance { bits: k(32, 8) });
    prs.push(
        prs.start,
        Stmt::Extract {
            header: HeaderRef::Header(a),
            varbit_bits: None,
        },
    );
    prs.set_transition(prs.start, Transition::Goto(Target::Accept));
    bb.p.add_parser(prs, Some(Role::Parser));
    let y = bb.f(bm, "y");
    bb.control(
        Role::Ingress,
        "ig",
        vec![Stmt::SetValid(HeaderRef::Header(bm)), set(y, k(16, 0xbeef))],
    );
    bb.emit_deparser(&[a, bm]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    // The advanced byte is dropped (not payload), a is replaced by b.
    assert_eq!(
        outs(&run(&p, &mut s, &[9, 1, 2], 0)),
        [(0, vec![0xbe, 0xef, 2])]
    );
}

#[test]
fn a_parser_loop_that_consumes_nothing_times_out() {
    let mut bb = B::v1model();
    let eth = bb.eth();
    let mut prs = Parser::new("prs");
    prs.set_transition(prs.start, Transition::Goto(Target::State(prs.start)));
    bb.p.add_parser(prs, Some(Role::Parser));
    error_to_port(&mut bb);
    bb.emit_deparser(&[eth]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    assert_eq!(
        outs(&run(&p, &mut s, &[1, 2], 0)),
        [(5, vec![1, 2])],
        "ParserTimeout is 5"
    );
}
