//! No input makes the interpreter panic: random packets of any length (0 included) through
//! an L2L3-like pipeline with varbits, stacks indexed by packet data, checksums, hashes,
//! arithmetic on packet values, tables of every kind, multicast, clones and recirculation;
//! and values of 640 bits.

mod common;
use common::*;
use koi_ir::*;
use koi_state::{ActionSpec, EntrySpec, MirrorTarget, State};
use proptest::prelude::*;

fn l2l3() -> Pipeline {
    let mut bb = B::v1model();
    let eth = bb.eth();
    let vlan = bb.p.phv.add_stack(
        "hdr.vlan",
        "vlan_t",
        &[
            FieldSpec::bit("vid", 12),
            FieldSpec::bit("pcp", 4),
            FieldSpec::bit("type", 16),
        ],
        2,
    );
    let ip = bb.p.phv.add_header(
        "hdr.ip",
        "ip_t",
        &[
            FieldSpec::bit("ver", 4),
            FieldSpec::bit("ihl", 4),
            FieldSpec::bit("tos", 8),
            FieldSpec::bit("len", 16),
            FieldSpec::bit("ttl", 8),
            FieldSpec::bit("proto", 8),
            FieldSpec::bit("csum", 16),
            FieldSpec::bit("src", 32),
            FieldSpec::bit("dst", 32),
            FieldSpec::varbit("opts", 320),
        ],
    );
    let ty = bb.f(eth, "type");
    let ihl = bb.f(ip, "ihl");
    let mut prs = Parser::new("prs");
    let (pv, pi) = (prs.add_state("vlan"), prs.add_state("ip"));
    let ex = |h: HeaderRef, v: Option<Expr>| Stmt::Extract {
        header: h,
        varbit_bits: v,
    };
    prs.push(prs.start, ex(HeaderRef::Header(eth), None));
    let sel = |key: Expr| Transition::Select {
        keys: vec![key],
        cases: vec![
            SelectCase {
                keysets: vec![Keyset::Pattern(Pattern::Exact(b(16, 0x8100)))],
                next: Target::State(pv),
            },
            SelectCase {
                keysets: vec![Keyset::Pattern(Pattern::Exact(b(16, 0x0800)))],
                next: Target::State(pi),
            },
            SelectCase::default_to(1, Target::Accept),
        ],
    };
    prs.set_transition(prs.start, sel(Expr::Slot(ty)));
    prs.push(pv, ex(HeaderRef::Next(vlan), None));
    let last_type = Expr::StackField {
        stack: vlan,
        index: Box::new(Expr::binary(
            BinOp::Sub,
            Expr::Slot(bb.p.phv.stacks[vlan].next_index),
            k(32, 1),
        )),
        field: 2,
    };
    prs.set_transition(pv, sel(last_type));
    let opt_bits = Expr::binary(
        BinOp::Mul,
        Expr::binary(BinOp::Sub, Expr::Slot(ihl), k(4, 5)).cast(Cast::Resize {
            width: 32,
            signed: false,
        }),
        k(32, 32),
    );
    prs.push(pi, ex(HeaderRef::Header(ip), Some(opt_bits)));
    prs.push(
        pi,
        Stmt::Verify {
            cond: Expr::binary(BinOp::GeU, Expr::Slot(ihl), k(4, 5)),
            error: 6,
        },
    );
    prs.set_transition(pi, Transition::Goto(Target::Accept));
    bb.p.add_parser(prs, Some(Role::Parser));
    let f = |n: &str| Expr::Slot(bb.p.phv.field(ip, n).unwrap());
    let data: Vec<Expr> = [
        "ver", "ihl", "tos", "len", "ttl", "proto", "src", "dst", "opts",
    ]
    .iter()
    .map(|n| f(n))
    .collect();
    let csum = bb.f(ip, "csum");
    bb.control(
        Role::VerifyChecksum,
        "vc",
        vec![Stmt::Builtin(Builtin::VerifyChecksum {
            cond: Expr::is_valid(ip),
            data: data.clone(),
            checksum: Expr::Slot(csum),
            algo: HashAlgo::Csum16,
            with_payload: true,
        })],
    );
    let reg = bb.p.externs.push(Extern {
        preamble: Preamble::new("ig.reg"),
        type_name: "register".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::Register {
            size: 16,
            elem: Ty::Bits(32),
            index_width: 32,
        },
    });
    let spec = bb.sm("egress_spec");
    let mcast = bb.sm("mcast_grp");
    let (src, dst, ttl) = (bb.f(ip, "src"), bb.f(ip, "dst"), bb.f(ip, "ttl"));
    let fwd = bb.action(
        "ig.fwd",
        &[("port", 9)],
        vec![
            set(spec, Expr::Param(0)),
            set(ttl, Expr::binary(BinOp::SubSatU, Expr::Slot(ttl), k(8, 1))),
        ],
    );
    let drop = bb.action("ig.drop", &[], vec![Stmt::Builtin(Builtin::MarkToDrop)]);
    let nop = bb.action("NoAction", &[], vec![]);
    let ternary = bb.table(
        "ig.acl",
        vec![(Expr::Slot(src), "hdr.ip.src", 32, MatchKind::Ternary)],
        &[drop, fwd],
        nop,
    );
    let lpm = bb.table(
        "ig.route",
        vec![(Expr::Slot(dst), "hdr.ip.dst", 32, MatchKind::Lpm)],
        &[fwd, drop],
        nop,
    );
    let range = bb.table(
        "ig.ttl",
        vec![(Expr::Slot(ttl), "hdr.ip.ttl", 8, MatchKind::Range)],
        &[drop],
        nop,
    );
    let dmac = bb.f(eth, "dst");
    let stack_idx = Expr::Slot(dmac).slice(2, 0).cast(Cast::Resize {
        width: 32,
        signed: false,
    });
    let mut g = BodyBuilder::new();
    g.push(Stmt::ExternCall {
        instance: reg,
        method: "write".into(),
        args: vec![
            Arg::In(Expr::Slot(src).slice(4, 0).cast(Cast::Resize {
                width: 32,
                signed: false,
            })),
            Arg::In(Expr::binary(BinOp::Div, Expr::Slot(dst), Expr::Slot(src))),
        ],
        result: None,
    });
    g.push(Stmt::assign(
        Place::StackField {
            stack: vlan,
            index: stack_idx.clone(),
            field: 0,
        },
        Expr::binary(BinOp::Shl, k(12, 1), Expr::Slot(ttl)),
    ));
    g.push(Stmt::SetValid(HeaderRef::Index(vlan, Box::new(stack_idx))));
    g.push(Stmt::PushFront {
        stack: vlan,
        count: 1,
    });
    g.push(Stmt::Builtin(Builtin::Hash {
        dst: Place::Slot(src),
        algo: HashAlgo::Crc32,
        base: k(32, 0),
        data: data.clone(),
        max: Some(Expr::Slot(dst)),
    }));
    g.push(set(
        mcast,
        Expr::Slot(dmac).slice(17, 16).cast(Cast::Resize {
            width: 16,
            signed: false,
        }),
    ));
    g.push(Stmt::Builtin(Builtin::Clone {
        kind: CloneKind::I2E,
        session: Expr::Slot(dmac).slice(31, 0),
        field_list: None,
    }));
    for t in [ternary, lpm, range] {
        g.apply(t);
    }
    bb.control_body(Role::Ingress, "ig", g.finish());
    bb.control(
        Role::Egress,
        "eg",
        vec![
            Stmt::Builtin(Builtin::Recirculate { field_list: None }),
            Stmt::PopFront {
                stack: vlan,
                count: 1,
            },
        ],
    );
    bb.control(
        Role::ComputeChecksum,
        "cc",
        vec![Stmt::Builtin(Builtin::UpdateChecksum {
            cond: Expr::is_valid(ip),
            data,
            checksum: Place::Slot(csum),
            algo: HashAlgo::Csum16,
            with_payload: false,
        })],
    );
    let elems = bb.p.phv.stacks[vlan].elems.clone();
    let mut emits = vec![Stmt::Emit(HeaderRef::Header(eth))];
    emits.extend(elems.iter().map(|h| Stmt::Emit(HeaderRef::Header(*h))));
    emits.push(Stmt::Emit(HeaderRef::Header(ip)));
    bb.control(Role::Deparser, "dep", emits);
    bb.build()
}

fn loaded_state(p: &Pipeline) -> State {
    let mut s = State::new(p).unwrap();
    let add = |s: &mut State, t: &str, keys, prio, a: &str, args| {
        let e = EntrySpec {
            keys,
            action: ActionSpec::action(a, args),
            priority: prio,
            timeout_ns: None,
        };
        s.table_add(t, e).unwrap();
    };
    add(
        &mut s,
        "acl",
        vec![Pattern::Mask {
            value: b(32, 0x0a00_0000),
            mask: b(32, 0xff00_0000),
        }],
        Some(3),
        "fwd",
        vec![b(9, 3)],
    );
    add(
        &mut s,
        "route",
        vec![Pattern::Prefix {
            value: b(32, 0),
            len: 0,
        }],
        None,
        "fwd",
        vec![b(9, 1)],
    );
    add(
        &mut s,
        "ttl",
        vec![Pattern::Range {
            lo: b(8, 0),
            hi: b(8, 1),
        }],
        Some(1),
        "drop",
        vec![],
    );
    for g in 1..=3 {
        s.pre.group_create(g).unwrap();
        let n = s.pre.node_create(u64::from(g), &[1, 2], &[]).unwrap();
        s.pre.associate(g, n).unwrap();
    }
    s.mirroring_add(0, MirrorTarget::Port(5)).unwrap();
    s.mirroring_add(1, MirrorTarget::Group(2)).unwrap();
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_packets_never_panic(data in proptest::collection::vec(any::<u8>(), 0..120), port in 0u64..1024) {
        let p = l2l3();
        let mut s = loaded_state(&p);
        let o = run(&p, &mut s, &data, port);
        prop_assert!(o.outputs.len() <= 1024);
    }

    #[test]
    fn shaped_packets_never_panic(
        ihl in 0u8..16,
        tail in proptest::collection::vec(any::<u8>(), 0..80),
        vlans in 0usize..4,
    ) {
        let p = l2l3();
        let mut s = loaded_state(&p);
        let mut pkt = frame(0x0001_0000_0001, if vlans > 0 { 0x8100 } else { 0x0800 }, &[]);
        for i in 0..vlans {
            let next: u16 = if i + 1 < vlans { 0x8100 } else { 0x0800 };
            pkt.extend_from_slice(&[0, 1]);
            pkt.extend_from_slice(&next.to_be_bytes());
        }
        pkt.push(0x40 | ihl);
        pkt.extend_from_slice(&tail);
        let _ = run(&p, &mut s, &pkt, 1);
    }
}

#[test]
fn lengths_zero_to_sixty_four() {
    let p = l2l3();
    let mut s = loaded_state(&p);
    for n in 0..=64usize {
        let pkt: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
        let _ = run(&p, &mut s, &pkt, 0);
    }
}

#[test]
fn a_640_bit_field_is_exact() {
    let mut bb = B::v1model();
    let w = bb.header("hdr.w", &[("x", 640)]);
    bb.simple_parser(&[w]);
    let x = bb.f(w, "x");
    let keep = bb.meta("meta.x", 640);
    let one = Expr::Const(Bits::from_u64(640, 1));
    bb.control(
        Role::Ingress,
        "ig",
        vec![
            set(keep, Expr::binary(BinOp::Add, Expr::Slot(x), one)),
            set(x, Expr::binary(BinOp::Shl, Expr::Slot(keep), k(16, 4))),
        ],
    );
    bb.emit_deparser(&[w]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let mut pkt = vec![0xffu8; 80];
    pkt[0] = 0x0f;
    pkt.push(0x77);
    let o = run(&p, &mut s, &pkt, 0);
    // (0x0fff..ff + 1) << 4 = 0x1000..00 << 4 wraps to 0 at 640 bits.
    let mut want = vec![0u8; 80];
    want.push(0x77);
    assert_eq!(outs(&o), [(0, want)]);
    let mut pkt2 = vec![0u8; 80];
    pkt2[79] = 0x0e;
    let o = run(&p, &mut s, &pkt2, 0);
    assert_eq!(o.outputs[0].bytes[79], 0xf0);
    assert_eq!(o.outputs[0].bytes[78], 0x00);
}
