//! The uBPF architecture: pass by default on `output_port` 0, drop and pass marks, parser
//! reject passes the packet unmodified, truncate as p4c's uBPF target does it (the cases of
//! p4c's truncate_ubpf.stf), Register, lookup3 hash, csum_replace, time.

mod common;
use common::*;
use koi_ir::*;
use koi_state::State;

fn pipe(bb: &mut B, stmts: Vec<Stmt>) {
    bb.control(Role::Pipe, "pipe", stmts);
}

type Stmts = fn(&B) -> Vec<Stmt>;

#[test]
fn pass_drop_and_output_port() {
    let cases: [(Stmts, Option<u64>); 4] = [
        (|_| vec![], Some(0)),
        (|_| vec![Stmt::Builtin(Builtin::MarkToDrop)], None),
        (
            |_| {
                vec![
                    Stmt::Builtin(Builtin::MarkToDrop),
                    Stmt::Builtin(Builtin::MarkToPass),
                ]
            },
            Some(0),
        ),
        (|bb| vec![set(bb.sm("output_port"), k(32, 6))], Some(6)),
    ];
    for (stmts, want) in cases {
        let mut bb = B::ubpf();
        let eth = bb.eth();
        bb.simple_parser(&[eth]);
        let st = stmts(&bb);
        pipe(&mut bb, st);
        bb.emit_deparser(&[eth]);
        let p = bb.build();
        let mut s = State::new(&p).unwrap();
        let pkt = frame(1, 2, &[3]);
        let o = run(&p, &mut s, &pkt, 4);
        assert_eq!(o.outputs.first().map(|x| x.port), want);
        if want.is_some() {
            assert_eq!(o.outputs[0].bytes, pkt);
        }
    }
}

#[test]
fn parser_reject_passes_the_packet_unmodified() {
    let mut bb = B::ubpf();
    let eth = bb.eth();
    let h = bb.header("hdr.h", &[("x", 32)]);
    bb.simple_parser(&[eth, h]);
    let x = bb.f(h, "x");
    pipe(
        &mut bb,
        vec![set(x, k(32, 0)), Stmt::Builtin(Builtin::MarkToDrop)],
    );
    bb.emit_deparser(&[eth, h]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let short = frame(1, 2, &[9, 9]);
    assert_eq!(outs(&run(&p, &mut s, &short, 0)), [(0, short.clone())]);
    assert!(
        run(&p, &mut s, &frame(1, 2, &[9, 9, 9, 9]), 0)
            .outputs
            .is_empty()
    );
    assert_eq!(outs(&run(&p, &mut s, &[], 0)), [(0, vec![])]);
}

#[test]
fn truncate_as_p4c_truncate_ubpf() {
    let mut bb = B::ubpf();
    let spec = bb.header("hdr.spec", &[("bytes_to_save", 8)]);
    let data = bb.header("hdr.data", &[("data", 32)]);
    bb.simple_parser(&[spec, data]);
    let n = Expr::Slot(bb.f(spec, "bytes_to_save")).cast(Cast::Resize {
        width: 32,
        signed: false,
    });
    let d = bb.f(data, "data");
    pipe(
        &mut bb,
        vec![
            Stmt::Builtin(Builtin::Truncate { bytes: n }),
            set(d, k(32, 0xfffe_fdfc)),
        ],
    );
    bb.emit_deparser(&[data]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let hex = |t: &str| -> Vec<u8> {
        (0..t.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap())
            .collect()
    };
    for (input, expect) in [
        ("0601020304fedcba9876543210", "fffefdfcfedc"),
        ("ff01020304fedcba9876543210", "fffefdfcfedcba9876543210"),
        ("0601020304fedc", "fffefdfcfedc"),
        ("0701020304fedc", "fffefdfcfedc"),
        ("0201020304fedcba9876543210", "0102"),
    ] {
        let o = run(&p, &mut s, &hex(input), 0);
        assert_eq!(outs(&o), [(0, hex(expect))], "{input}");
    }
}

#[test]
fn register_hash_checksum_and_time() {
    let mut bb = B::ubpf();
    let h = bb.header(
        "hdr.h",
        &[("a", 16), ("b", 16), ("hash", 32), ("csum", 16), ("t", 48)],
    );
    bb.simple_parser(&[h]);
    let reg = bb.p.externs.push(Extern {
        preamble: Preamble::new("pipe.reg"),
        type_name: "Register".into(),
        type_args: vec![],
        ctor_args: vec![],
        kind: ExternKind::Register {
            size: 8,
            elem: Ty::Bits(16),
            index_width: 32,
        },
    });
    let f = |bb: &B, n: &str| bb.f(h, n);
    let (a, bf, hash, csum, t) = (
        f(&bb, "a"),
        f(&bb, "b"),
        f(&bb, "hash"),
        f(&bb, "csum"),
        f(&bb, "t"),
    );
    pipe(
        &mut bb,
        vec![
            Stmt::ExternCall {
                instance: reg,
                method: "read".into(),
                args: vec![Arg::In(k(32, 1))],
                result: Some(Place::Slot(bf)),
            },
            Stmt::ExternCall {
                instance: reg,
                method: "write".into(),
                args: vec![Arg::In(k(32, 1)), Arg::In(Expr::Slot(a))],
                result: None,
            },
            Stmt::Builtin(Builtin::Hash {
                dst: Place::Slot(hash),
                algo: HashAlgo::Lookup3,
                base: k(32, 0),
                data: vec![Expr::Slot(a)],
                max: None,
            }),
            Stmt::Builtin(Builtin::CsumReplace {
                dst: Place::Slot(csum),
                csum: Expr::Slot(csum),
                old: k(16, 0x1234),
                new: Expr::Slot(a),
            }),
            Stmt::Builtin(Builtin::TimestampNs {
                dst: Place::Slot(t),
            }),
        ],
    );
    bb.emit_deparser(&[h]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let input = [0x43, 0x21, 0, 0, 0, 0, 0, 0, 0xab, 0xcd, 0, 0, 0, 0, 0, 0];
    let o = run_at(&p, &mut s, &input, 0, 77);
    let out = &o.outputs[0].bytes;
    assert_eq!(&out[2..4], &[0, 0], "nothing stored yet");
    let want_hash = koi_hash::ubpf::hash(&[koi_hash::ubpf::Element {
        value: 0x4321,
        width: 16,
    }])
    .unwrap();
    assert_eq!(&out[4..8], &want_hash.to_be_bytes());
    let want_csum = koi_hash::ubpf::csum_replace2(0xabcd, 0x1234, 0x4321);
    assert_eq!(&out[8..10], &want_csum.to_be_bytes());
    assert_eq!(&out[10..16], &77u64.to_be_bytes()[2..]);
    let o = run(&p, &mut s, &input, 0);
    assert_eq!(
        &o.outputs[0].bytes[2..4],
        &[0x43, 0x21],
        "stored by the first packet"
    );
}
