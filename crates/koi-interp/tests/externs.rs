//! Externs through the interpreter: registers, counters, meters (colours over time),
//! direct counters and meters, hashes, checksums, random, digests, log_msg, assert, and
//! action selectors.

mod common;
use common::*;
use koi_interp::{Interpreter, Options};
use koi_ir::*;
use koi_state::{ActionSpec, EntrySpec, ManualClock, MeterRate, State};

fn ext(p: &mut Pipeline, name: &str, kind: ExternKind) -> ExternId {
    p.externs.push(Extern {
        preamble: Preamble::new(name),
        type_name: "x".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind,
    })
}

fn call(inst: ExternId, m: &str, args: Vec<Arg>) -> Stmt {
    Stmt::ExternCall {
        instance: inst,
        method: m.into(),
        args,
        result: None,
    }
}

/// eth in and out; `ig` builds the ingress statements from the eth header.
fn eth_pipeline(bb: &mut B, ig: impl FnOnce(&mut B, HeaderId) -> Vec<Stmt>) -> HeaderId {
    let eth = bb.eth();
    bb.simple_parser(&[eth]);
    let stmts = ig(bb, eth);
    bb.control(Role::Ingress, "ig", stmts);
    bb.emit_deparser(&[eth]);
    eth
}

#[test]
fn registers_and_counters() {
    let mut bb = B::v1model();
    let reg = ext(
        &mut bb.p,
        "ig.reg",
        ExternKind::Register {
            size: 4,
            elem: Ty::Bits(48),
            index_width: 32,
        },
    );
    let ctr = ext(
        &mut bb.p,
        "ig.ctr",
        ExternKind::Counter {
            size: 4,
            unit: CounterUnit::PacketsAndBytes,
            index_width: 32,
        },
    );
    eth_pipeline(&mut bb, |bb, eth| {
        let (dst, src) = (bb.f(eth, "dst"), bb.f(eth, "src"));
        let idx = Expr::Slot(bb.f(eth, "type"))
            .slice(1, 0)
            .cast(Cast::Resize {
                width: 32,
                signed: false,
            });
        vec![
            call(
                reg,
                "read",
                vec![Arg::Out(Place::Slot(src)), Arg::In(idx.clone())],
            ),
            call(
                reg,
                "write",
                vec![Arg::In(idx.clone()), Arg::In(Expr::Slot(dst))],
            ),
            call(ctr, "count", vec![Arg::In(idx)]),
            call(ctr, "count", vec![Arg::In(k(32, 99))]),
        ]
    });
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &frame(0x0a, 2, &[0; 3]), 0);
    assert_eq!(
        &o.outputs[0].bytes[6..12],
        &[0; 6],
        "read before any write: 0"
    );
    let o = run(&p, &mut s, &frame(0x0b, 2, &[]), 0);
    assert_eq!(&o.outputs[0].bytes[6..12], &[0, 0, 0, 0, 0, 0x0a]);
    assert_eq!(s.register_read("reg", 2), Ok(b(48, 0x0b)));
    let c = s.counter_read("ctr", 2).unwrap();
    assert_eq!(
        (c.packets, c.bytes),
        (2, 17 + 14),
        "bytes count the received length"
    );
}

#[test]
fn meters_colour_packets_over_time() {
    let mut bb = B::v1model();
    let m = ext(
        &mut bb.p,
        "ig.m",
        ExternKind::Meter {
            size: 1,
            unit: MeterUnit::Packets,
            index_width: 32,
        },
    );
    eth_pipeline(&mut bb, |bb, eth| {
        let ty = bb.f(eth, "type");
        vec![call(
            m,
            "execute_meter",
            vec![Arg::In(k(32, 0)), Arg::Out(Place::Slot(ty))],
        )]
    });
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let rates = [
        MeterRate {
            rate: 0.25,
            burst: 1,
        },
        MeterRate {
            rate: 0.5,
            burst: 2,
        },
    ];
    s.meter_set_rates("m", Some(0), &rates).unwrap();
    let clock = ManualClock::new(0);
    let mut it = Interpreter::new(&p).unwrap();
    let mut colour = |s: &mut State| {
        let o = it.process(s, &frame(1, 0xffff, &[]), 0, &clock).unwrap();
        o.outputs[0].bytes[13]
    };
    assert_eq!([colour(&mut s), colour(&mut s), colour(&mut s)], [0, 1, 2]);
    clock.set_ns(2_000);
    assert_eq!([colour(&mut s), colour(&mut s)], [1, 2]);
    clock.set_ns(4_000);
    assert_eq!(colour(&mut s), 0);
}

#[test]
fn direct_counters_and_meters_are_credited_on_hits() {
    let mut bb = B::v1model();
    let dc = ext(
        &mut bb.p,
        "ig.dc",
        ExternKind::DirectCounter {
            unit: CounterUnit::Packets,
        },
    );
    let dm = ext(
        &mut bb.p,
        "ig.dm",
        ExternKind::DirectMeter {
            unit: MeterUnit::Packets,
        },
    );
    let eth = bb.eth();
    bb.simple_parser(&[eth]);
    let ty = bb.f(eth, "type");
    let colour = bb.action(
        "ig.colour",
        &[],
        vec![call(dm, "read", vec![Arg::Out(Place::Slot(ty))])],
    );
    let nop = bb.action("NoAction", &[], vec![]);
    let dst = bb.f(eth, "dst");
    let t = bb.table(
        "ig.t",
        vec![(Expr::Slot(dst), "hdr.eth.dst", 48, MatchKind::Exact)],
        &[colour],
        nop,
    );
    bb.p.tables[t].direct_counter = Some(dc);
    bb.p.tables[t].direct_meter = Some(dm);
    let mut body = BodyBuilder::new();
    body.apply(t);
    bb.control_body(Role::Ingress, "ig", body.finish());
    bb.emit_deparser(&[eth]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let spec = EntrySpec {
        keys: vec![Pattern::Exact(b(48, 1))],
        action: ActionSpec::action("colour", vec![]),
        priority: None,
        timeout_ns: None,
    };
    let h = s.table_add("t", spec).unwrap();
    let rates = [
        MeterRate {
            rate: 0.0,
            burst: 1,
        },
        MeterRate {
            rate: 0.0,
            burst: 1,
        },
    ];
    s.meter_set_rates("dm", Some(u64::from(h)), &rates).unwrap();
    let t1 = |s: &mut State, dst| run(&p, s, &frame(dst, 0x0707, &[]), 0).outputs[0].bytes[13];
    assert_eq!(t1(&mut s, 1), 0);
    assert_eq!(t1(&mut s, 1), 2);
    assert_eq!(t1(&mut s, 2), 7, "a miss neither meters nor writes");
    let c = s.counter_read("dc", u64::from(h)).unwrap();
    assert_eq!(c.packets, 2);
}

#[test]
fn hashes_and_checksums_match_bmv2() {
    let mut bb = B::v1model();
    let eth = bb.eth();
    let ip = bb.header(
        "hdr.ip",
        &[("a", 16), ("b", 16), ("csum", 16), ("c", 16), ("d", 16)],
    );
    bb.simple_parser(&[eth, ip]);
    let f = |bb: &B, n| Expr::Slot(bb.f(ip, n));
    let data = vec![f(&bb, "a"), f(&bb, "b"), f(&bb, "c"), f(&bb, "d")];
    bb.control(
        Role::VerifyChecksum,
        "vc",
        vec![Stmt::Builtin(Builtin::VerifyChecksum {
            cond: Expr::is_valid(ip),
            data: data.clone(),
            checksum: f(&bb, "csum"),
            algo: HashAlgo::Csum16,
            with_payload: false,
        })],
    );
    let src = bb.f(eth, "src");
    let dst = bb.f(eth, "dst");
    let cerr = bb.sm("checksum_error");
    bb.control(
        Role::Ingress,
        "ig",
        vec![
            Stmt::Builtin(Builtin::Hash {
                dst: Place::Slot(src),
                algo: HashAlgo::Crc16,
                base: k(16, 0),
                data: vec![f(&bb, "a")],
                max: Some(k(32, 0)),
            }),
            Stmt::Builtin(Builtin::Hash {
                dst: Place::Slot(dst),
                algo: HashAlgo::Crc32,
                base: k(48, 0),
                data: vec![k(8, 0x31), k(8, 0x32)],
                max: Some(k(64, 1 << 40)),
            }),
            set(
                bb.f(eth, "type"),
                Expr::Slot(cerr).cast(Cast::Resize {
                    width: 16,
                    signed: false,
                }),
            ),
        ],
    );
    let csum = bb.f(ip, "csum");
    bb.control(
        Role::ComputeChecksum,
        "cc",
        vec![Stmt::Builtin(Builtin::UpdateChecksum {
            cond: Expr::Bool(true),
            data,
            checksum: Place::Slot(csum),
            algo: HashAlgo::Csum16,
            with_payload: false,
        })],
    );
    bb.emit_deparser(&[eth, ip]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let ipb = [0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x11, 0x22, 0x22];
    let o = run(&p, &mut s, &frame(1, 0, &ipb), 0);
    let out = &o.outputs[0].bytes;
    // max 0 gives base: 0. crc32("12") = 0x4f5344cd, under 2^40.
    assert_eq!(&out[6..12], &[0; 6]);
    assert_eq!(&out[..6], &[0, 0, 0x4f, 0x53, 0x44, 0xcd]);
    assert_eq!(&out[12..14], &[0, 1], "checksum_error: the checksum was 0");
    let sum: u32 = [0x4500u32, 0x001c, 0x1111, 0x2222].iter().sum();
    let csum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    assert_eq!(
        &out[18..20],
        &csum.to_be_bytes(),
        "update_checksum wrote csum16"
    );
    let mut good = ipb;
    good[4..6].copy_from_slice(&csum.to_be_bytes());
    let o = run(&p, &mut s, &frame(1, 0, &good), 0);
    assert_eq!(&o.outputs[0].bytes[12..14], &[0, 0]);
}

#[test]
fn random_is_seeded_digests_queue_logs_collect_and_asserts_abort() {
    let mut bb = B::v1model();
    let learn = bb.p.digests.push(Digest {
        preamble: Preamble::new("learn_t"),
        ty: P4Type::Struct("learn_t".into()),
        fields: vec![("mac".into(), 48), ("port".into(), 9)],
    });
    eth_pipeline(&mut bb, |bb, eth| {
        let (dst, src, ty) = (bb.f(eth, "dst"), bb.f(eth, "src"), bb.f(eth, "type"));
        let port = bb.sm("ingress_port");
        vec![
            Stmt::Builtin(Builtin::Random {
                dst: Place::Slot(dst),
                lo: k(48, 10),
                hi: k(48, 20),
            }),
            Stmt::Builtin(Builtin::Digest {
                digest: learn,
                receiver: k(32, 1),
                data: vec![Expr::Slot(src), Expr::Slot(port)],
            }),
            Stmt::Builtin(Builtin::LogMsg {
                format: "type {} port {}".into(),
                args: vec![Expr::Slot(ty), Expr::Slot(port)],
            }),
            Stmt::Builtin(Builtin::Assert {
                cond: Expr::binary(BinOp::Ne, Expr::Slot(ty), k(16, 0xdead)),
            }),
        ]
    });
    let p = bb.build();
    let draw = |seed| {
        let mut s = State::new(&p).unwrap();
        let opts = Options {
            seed,
            ..Options::default()
        };
        let mut it = Interpreter::with_options(&p, opts).unwrap();
        let clock = ManualClock::new(0);
        (0..8)
            .map(|_| {
                it.process(&mut s, &frame(0, 7, &[]), 3, &clock)
                    .unwrap()
                    .outputs[0]
                    .bytes[5]
            })
            .collect::<Vec<u8>>()
    };
    let a = draw(1);
    assert_eq!(a, draw(1));
    assert!(a.iter().all(|v| (10..=20).contains(v)));
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &frame(0, 7, &[]), 3);
    assert_eq!(o.report.logs, ["type 7 port 3"]);
    let d = s.take_digests();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].fields[0], ("mac".to_string(), b(48, 0xaaaa_aaaa_aaaa)));
    assert_eq!(d[0].fields[1], ("port".to_string(), b(9, 3)));
    let o = run(&p, &mut s, &frame(0, 0xdead, &[]), 3);
    assert!(o.outputs.is_empty());
    assert_eq!(o.report.assert_failures, 1);
    assert!(o.report.aborted.is_some());
}

#[test]
fn action_selectors_pick_a_member_by_hash() {
    // identity of the selector byte: hash % 3 picks the member.
    assert_eq!(
        selector_ports(HashAlgo::Identity, &[0, 1, 2, 4]),
        [1, 2, 3, 2]
    );
    // koi's FNV-1a (32 bits) of the byte: FNV-1a("a") = 0xe40c292c, whose remainder by 3 is
    // 1 (the second member); the others by koi-hash's FNV.
    assert_eq!(selector_ports(HashAlgo::Fnv1a32, &[0x61]), [2]);
    let tys = [0u16, 1, 2, 4, 0x61, 0xff];
    let want: Vec<u64> = tys
        .iter()
        .map(|t| 1 + u64::from(koi_hash::fnv::fnv1a_32(&[*t as u8])) % 3)
        .collect();
    assert_eq!(selector_ports(HashAlgo::Fnv1a32, &tys), want);
}

/// The ports an action selector of `algo` over the EtherType's low byte sends frames of the
/// EtherTypes `tys` to, its group holding members for ports 1, 2 and 3.
fn selector_ports(algo: HashAlgo, tys: &[u16]) -> Vec<u64> {
    let mut bb = B::v1model();
    let sel = ext(
        &mut bb.p,
        "ig.sel",
        ExternKind::ActionSelector {
            algo,
            size: 16,
            output_width: 16,
        },
    );
    let eth = bb.eth();
    bb.simple_parser(&[eth]);
    let spec = bb.sm("egress_spec");
    let fwd = bb.action("ig.fwd", &[("port", 9)], vec![set(spec, Expr::Param(0))]);
    let nop = bb.action("NoAction", &[], vec![]);
    let (dst, ty) = (bb.f(eth, "dst"), bb.f(eth, "type"));
    let t = bb.table(
        "ig.lb",
        vec![
            (Expr::Slot(dst), "hdr.eth.dst", 48, MatchKind::Exact),
            (
                Expr::Slot(ty).slice(7, 0),
                "hdr.eth.type[7:0]",
                8,
                MatchKind::Selector,
            ),
        ],
        &[fwd],
        nop,
    );
    bb.p.tables[t].implementation = Some(sel);
    let mut body = BodyBuilder::new();
    body.apply(t);
    bb.control_body(Role::Ingress, "ig", body.finish());
    bb.emit_deparser(&[eth]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let m: Vec<u32> = (1..=3)
        .map(|port| s.profile_add_member("sel", "fwd", &[b(9, port)]).unwrap())
        .collect();
    let g = s.profile_create_group("sel").unwrap();
    for x in &m {
        s.profile_add_to_group("sel", *x, g).unwrap();
    }
    let e = EntrySpec {
        keys: vec![Pattern::Exact(b(48, 1))],
        action: ActionSpec::Group(g),
        priority: None,
        timeout_ns: None,
    };
    s.table_add("lb", e).unwrap();
    assert!(s.profile_delete_member("sel", m[0]).is_err(), "in a group");
    assert!(
        s.profile_delete_group("sel", g).is_err(),
        "used by an entry"
    );
    tys.iter()
        .map(|ty| run(&p, &mut s, &frame(1, *ty, &[]), 0).outputs[0].port)
        .collect()
}
