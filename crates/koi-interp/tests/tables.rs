//! Tables through the interpreter: hit/miss and action_run successors, default actions set
//! by the control plane, const entries, `exit` from an action, switch statements, and the
//! trace and wildcard hooks.

mod common;
use common::*;
use koi_interp::{Decision, Interpreter, Observer, TraceObserver};
use koi_ir::*;
use koi_state::{ActionSpec, EntrySpec, ManualClock, State};

struct Built {
    p: Pipeline,
}

/// Ingress: `t` (ternary on eth.type) then, on a hit, `u` (lpm on eth.dst); a switch on
/// the action run by `t`; an `exit` action.
fn build() -> Built {
    let mut bb = B::v1model();
    let eth = bb.eth();
    bb.simple_parser(&[eth]);
    let spec = bb.sm("egress_spec");
    let src = bb.f(eth, "src");
    let fwd = bb.action("ig.fwd", &[("port", 9)], vec![set(spec, Expr::Param(0))]);
    let quit = bb.p.actions.push(Action {
        preamble: Preamble::new("ig.quit"),
        params: vec![],
        body: {
            let mut b = BodyBuilder::new();
            b.push(set(spec, k(9, 9)));
            b.terminate(Terminator::Exit);
            b.finish()
        },
        cp_name: None,
    });
    let nop = bb.action("NoAction", &[], vec![]);
    let (ty, dst) = (bb.f(eth, "type"), bb.f(eth, "dst"));
    let t = bb.table(
        "ig.t",
        vec![(Expr::Slot(ty), "hdr.eth.type", 16, MatchKind::Ternary)],
        &[fwd, quit],
        nop,
    );
    let u = bb.table(
        "ig.u",
        vec![(Expr::Slot(dst), "hdr.eth.dst", 48, MatchKind::Lpm)],
        &[fwd],
        nop,
    );
    let mut b = BodyBuilder::new();
    let (hit, miss, after) = (b.new_block(), b.new_block(), b.new_block());
    b.terminate(Terminator::Apply {
        table: t,
        next: ApplyNext::Actions {
            cases: vec![(fwd, hit)],
            default: miss,
        },
    });
    b.switch_to(hit);
    b.push(set(src, k(48, 1)));
    b.terminate(Terminator::Apply {
        table: u,
        next: ApplyNext::HitMiss {
            hit: after,
            miss: after,
        },
    });
    b.switch_to(miss);
    b.push(set(src, k(48, 2)));
    b.terminate(Terminator::Goto(after));
    b.switch_to(after);
    let (c0, c1, dflt) = (b.new_block(), b.new_block(), b.new_block());
    b.terminate(Terminator::Switch {
        value: Expr::Slot(spec).slice(1, 0),
        cases: vec![(common::b(2, 0), c0), (common::b(2, 1), c1)],
        default: dflt,
    });
    for (blk, v) in [(c0, 0xc0), (c1, 0xc1), (dflt, 0xdd)] {
        b.switch_to(blk);
        b.push(set(ty, k(16, v)));
        b.terminate(Terminator::Return);
    }
    bb.control_body(Role::Ingress, "ig", b.finish());
    bb.emit_deparser(&[eth]);
    Built { p: bb.build() }
}

fn add(
    s: &mut State,
    table: &str,
    keys: Vec<Pattern>,
    prio: Option<u32>,
    a: &str,
    args: Vec<Bits>,
) {
    let e = EntrySpec {
        keys,
        action: ActionSpec::action(a, args),
        priority: prio,
        timeout_ns: None,
    };
    s.table_add(table, e).unwrap();
}

/// (port, src low byte, type).
fn go(p: &Pipeline, s: &mut State, dst: u64, ty: u16) -> (u64, u8, u16) {
    let o = run(p, s, &frame(dst, ty, &[]), 0);
    let x = &o.outputs[0];
    (
        x.port,
        x.bytes[11],
        u16::from_be_bytes([x.bytes[12], x.bytes[13]]),
    )
}

#[test]
fn successors_follow_hits_actions_and_switches() {
    let Built { p } = build();
    let mut s = State::new(&p).unwrap();
    let m = Pattern::Mask {
        value: b(16, 0x0800),
        mask: b(16, 0xff00),
    };
    add(&mut s, "t", vec![m], Some(1), "fwd", vec![b(9, 4)]);
    add(
        &mut s,
        "t",
        vec![Pattern::Exact(b(16, 0x0806))],
        Some(2),
        "quit",
        vec![],
    );
    add(
        &mut s,
        "u",
        vec![Pattern::Prefix {
            value: b(48, 0x1000),
            len: 36,
        }],
        None,
        "fwd",
        vec![b(9, 5)],
    );
    assert_eq!(
        go(&p, &mut s, 0x2000, 0x0800),
        (4, 1, 0xc0),
        "t hit fwd(4), u miss"
    );
    assert_eq!(go(&p, &mut s, 0x1001, 0x0800), (5, 1, 0xc1), "u hit fwd(5)");
    assert_eq!(
        go(&p, &mut s, 0x1001, 0x0806),
        (9, 0xaa, 0x0806),
        "quit exits ingress"
    );
    assert_eq!(
        go(&p, &mut s, 0x1001, 0x0900),
        (0, 2, 0xc0),
        "t miss: NoAction"
    );
    s.table_set_default("t", ActionSpec::action("fwd", vec![b(9, 7)]))
        .unwrap();
    assert_eq!(
        go(&p, &mut s, 0x2000, 0x0900),
        (7, 1, 0xdd),
        "default fwd(7) counts as fwd"
    );
    s.table_reset_default("t").unwrap();
    assert_eq!(go(&p, &mut s, 0x2000, 0x0900).0, 0);
}

#[derive(Default)]
struct Reads {
    seen: Vec<(Decision, String, Bits)>,
    tables: usize,
}

impl Observer for Reads {
    const TRACKS_READS: bool = true;
    const WANTS_MASKS: bool = true;
    fn influence(&mut self, d: Decision, slot: SlotId, mask: &Bits) {
        self.seen.push((d, format!("{slot}"), mask.clone()));
    }
    fn table(&mut self, _ev: &koi_interp::TableEvent<'_>) {
        self.tables += 1;
    }
}

#[test]
fn observers_see_tables_and_the_bits_decisions_read() {
    let Built { p } = build();
    let mut s = State::new(&p).unwrap();
    let m = Pattern::Mask {
        value: b(16, 0x0800),
        mask: b(16, 0xff00),
    };
    add(&mut s, "t", vec![m], Some(1), "fwd", vec![b(9, 4)]);
    let clock = ManualClock::new(0);
    let mut it = Interpreter::new(&p).unwrap();
    let mut obs = Reads::default();
    it.run(&mut s, &frame(0x2000, 0x0800, &[]), 0, &clock, &mut obs)
        .unwrap();
    assert_eq!(obs.tables, 2);
    let ty = p.phv.slot_by_name("hdr.eth.type").unwrap();
    let spec = p.intrinsic("egress_spec").unwrap();
    let dst = p.phv.slot_by_name("hdr.eth.dst").unwrap();
    let has = |d, s: SlotId, m: Bits| obs.seen.contains(&(d, format!("{s}"), m));
    assert!(has(Decision::TableKey, ty, b(16, 0xff00)), "{:?}", obs.seen);
    let dst_name = format!("{dst}");
    assert!(
        !obs.seen
            .iter()
            .any(|(d, s, _)| *d == Decision::TableKey && *s == dst_name),
        "an empty LPM table depends on no key bit"
    );
    assert!(
        has(Decision::Switch, spec, b(9, 3)),
        "the switch reads egress_spec[1:0]"
    );
    let mut trace = TraceObserver::new();
    it.run(&mut s, &frame(0x2000, 0x0800, &[]), 0, &clock, &mut trace)
        .unwrap();
    let text = trace.text();
    for want in [
        "packet in: port 0, 14 bytes",
        "state start",
        "extract hdr.eth (112 bits)",
        "table ig.t key (16w0x800) -> hit entry 0 -> ig.fwd(9w4)",
        "table ig.u key (48w0x2000) -> miss -> NoAction()",
        "[tm] Unicast { port: 4 }",
        "packet out: port 4, 14 bytes",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}
