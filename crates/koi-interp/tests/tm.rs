//! v1model's traffic manager: unicast, default port 0, drops, multicast with rids, clones
//! (I2E and E2E, to ports and groups), resubmit, recirculate with field lists, instance
//! types, truncate, `packet_length`, priorities, loop bounds.

mod common;
use common::*;
use koi_interp::DropReason;
use koi_ir::*;
use koi_state::{MirrorTarget, State};

/// eth parsed and emitted; ingress runs `ig`; egress writes instance_type, rid and
/// packet_length into the ethernet source address.
fn pipeline(
    ig: impl FnOnce(&mut B) -> Vec<Stmt>,
    eg: impl FnOnce(&mut B) -> Vec<Stmt>,
) -> (Pipeline, B) {
    let mut bb = B::v1model();
    let eth = bb.eth();
    bb.simple_parser(&[eth]);
    let stmts = ig(&mut bb);
    bb.control(Role::Ingress, "ig", stmts);
    let src = bb.f(eth, "src");
    let mark = Expr::binary(
        BinOp::Concat,
        Expr::Slot(bb.sm("instance_type")).slice(7, 0),
        Expr::binary(
            BinOp::Concat,
            Expr::Slot(bb.sm("egress_rid")),
            Expr::Slot(bb.sm("packet_length")).slice(23, 0),
        ),
    );
    let mut e = vec![set(src, mark)];
    e.extend(eg(&mut bb));
    bb.control(Role::Egress, "eg", e);
    bb.emit_deparser(&[eth]);
    let p = bb.p.clone();
    (B { p: p.clone() }.build(), bb)
}

/// (instance_type, rid, packet_length) from an output's source address.
fn mark(bytes: &[u8]) -> (u8, u16, u32) {
    let it = bytes[6];
    let rid = u16::from_be_bytes([bytes[7], bytes[8]]);
    let len = u32::from_be_bytes([0, bytes[9], bytes[10], bytes[11]]);
    (it, rid, len)
}

fn spec(bb: &B, port: u128) -> Stmt {
    set(bb.sm("egress_spec"), k(9, port))
}

#[test]
fn unicast_default_port_and_drops() {
    let (p, _) = pipeline(|_| vec![], |_| vec![]);
    let mut s = State::new(&p).unwrap();
    let pkt = frame(1, 0x0800, &[1, 2]);
    let o = run(&p, &mut s, &pkt, 7);
    assert_eq!(o.outputs.len(), 1);
    assert_eq!(o.outputs[0].port, 0, "egress_spec defaults to 0");
    assert_eq!(mark(&o.outputs[0].bytes), (0, 0, 16));

    let (p, _) = pipeline(
        |bb| vec![spec(bb, 3), Stmt::Builtin(Builtin::MarkToDrop)],
        |_| vec![],
    );
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &pkt, 0);
    assert!(o.outputs.is_empty());
    assert_eq!(o.report.drops, [DropReason::Ingress]);

    let (p, _) = pipeline(|bb| vec![spec(bb, 511)], |_| vec![]);
    let mut s = State::new(&p).unwrap();
    assert!(
        run(&p, &mut s, &pkt, 0).outputs.is_empty(),
        "egress_spec = 511 drops too"
    );

    let (p, _) = pipeline(
        |bb| vec![spec(bb, 4)],
        |_| vec![Stmt::Builtin(Builtin::MarkToDrop)],
    );
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &pkt, 0);
    assert_eq!(o.report.drops, [DropReason::Egress]);
}

#[test]
fn mark_to_drop_clears_mcast_grp() {
    let (p, _) = pipeline(
        |bb| {
            vec![
                set(bb.sm("mcast_grp"), k(16, 1)),
                Stmt::Builtin(Builtin::MarkToDrop),
            ]
        },
        |_| vec![],
    );
    let mut s = State::new(&p).unwrap();
    s.pre.group_create(1).unwrap();
    let n = s.pre.node_create(1, &[1], &[]).unwrap();
    s.pre.associate(1, n).unwrap();
    let o = run(&p, &mut s, &frame(1, 1, &[]), 0);
    assert!(o.outputs.is_empty());
}

#[test]
fn multicast_copies_carry_rid_and_instance_type() {
    let (p, _) = pipeline(|bb| vec![set(bb.sm("mcast_grp"), k(16, 1113))], |_| vec![]);
    let mut s = State::new(&p).unwrap();
    let n0 = s.pre.node_create(5, &[0, 3], &[]).unwrap();
    let n1 = s.pre.node_create(10, &[7], &[]).unwrap();
    s.pre.group_create(1113).unwrap();
    s.pre.associate(1113, n0).unwrap();
    s.pre.associate(1113, n1).unwrap();
    let o = run(&p, &mut s, &frame(1, 1, &[0; 4]), 2);
    let got: Vec<(u64, (u8, u16, u32))> =
        o.outputs.iter().map(|x| (x.port, mark(&x.bytes))).collect();
    assert_eq!(got, [(0, (5, 5, 18)), (3, (5, 5, 18)), (7, (5, 10, 18))]);
    // A group without nodes: no copy.
    s.pre.group_create(9).unwrap();
    let (p9, _) = pipeline(|bb| vec![set(bb.sm("mcast_grp"), k(16, 9))], |_| vec![]);
    let mut s9 = State::new(&p9).unwrap();
    s9.pre.group_create(9).unwrap();
    let o = run(&p9, &mut s9, &frame(1, 1, &[]), 2);
    assert_eq!(o.report.drops, [DropReason::NoReplicas]);
}

#[test]
fn ingress_clones_carry_the_original_and_the_field_list() {
    let (p, _) = pipeline(
        |bb| {
            let m = bb.meta("meta.keep", 8);
            let fl = bb.p.field_lists.push(FieldList {
                index: 1,
                slots: vec![m],
            });
            let eth = bb.p.phv.header_by_name("hdr.eth").unwrap();
            let dst = bb.f(eth, "dst");
            vec![
                set(m, k(8, 0x42)),
                set(dst, k(48, 0xffff)),
                spec(bb, 1),
                Stmt::Builtin(Builtin::Clone {
                    kind: CloneKind::I2E,
                    session: k(32, 5),
                    field_list: Some(fl),
                }),
            ]
        },
        |bb| {
            let eth = bb.p.phv.header_by_name("hdr.eth").unwrap();
            let ty = bb.f(eth, "type");
            let keep = bb.p.phv.slot_by_name("meta.keep").unwrap();
            vec![set(
                ty,
                Expr::binary(BinOp::Concat, k(8, 0), Expr::Slot(keep)),
            )]
        },
    );
    let mut s = State::new(&p).unwrap();
    let pkt = frame(0x0102, 0x0800, &[]);
    // No session: no clone.
    assert_eq!(run(&p, &mut s, &pkt, 0).outputs.len(), 1);
    s.mirroring_add(5, MirrorTarget::Port(9)).unwrap();
    let o = run(&p, &mut s, &pkt, 0);
    let ports: Vec<u64> = o.outputs.iter().map(|x| x.port).collect();
    assert_eq!(ports, [9, 1], "the clone is enqueued first");
    let clone = &o.outputs[0].bytes;
    assert_eq!(
        &clone[..6],
        &pkt[..6],
        "the clone carries the packet as received"
    );
    assert_eq!(mark(clone).0, 1, "instance_type INGRESS_CLONE");
    assert_eq!(&clone[12..14], &[0, 0x42], "field list preserved");
    assert_eq!(&o.outputs[1].bytes[..6], &[0, 0, 0, 0, 0xff, 0xff]);
    // A session to a multicast group: one clone per replica, with its rid.
    s.mirroring_add(5, MirrorTarget::Group(3)).unwrap();
    s.pre.group_create(3).unwrap();
    let n = s.pre.node_create(77, &[4, 6], &[]).unwrap();
    s.pre.associate(3, n).unwrap();
    let o = run(&p, &mut s, &pkt, 0);
    let got: Vec<(u64, u8, u16)> = o
        .outputs
        .iter()
        .map(|x| (x.port, mark(&x.bytes).0, mark(&x.bytes).1))
        .collect();
    assert_eq!(got, [(4, 1, 77), (6, 1, 77), (1, 0, 0)]);
}

#[test]
fn egress_clones_are_not_reparsed_and_go_through_egress_again() {
    let (p, _) = pipeline(
        |bb| vec![spec(bb, 1)],
        |bb| {
            let it = bb.sm("instance_type");
            let eth = bb.p.phv.header_by_name("hdr.eth").unwrap();
            let dst = bb.f(eth, "dst");
            vec![
                set(dst, Expr::binary(BinOp::Add, Expr::Slot(dst), k(48, 1))),
                Stmt::Builtin(Builtin::Clone {
                    kind: CloneKind::E2E,
                    session: Expr::mux(Expr::Slot(it).eq(k(32, 0)), k(32, 8), k(32, 9)),
                    field_list: None,
                }),
            ]
        },
    );
    let mut s = State::new(&p).unwrap();
    s.mirroring_add(8, MirrorTarget::Port(2)).unwrap();
    let o = run(&p, &mut s, &frame(0x10, 1, &[0xee]), 0);
    let got: Vec<(u64, u8, u8)> = o
        .outputs
        .iter()
        .map(|x| (x.port, x.bytes[5], mark(&x.bytes).0))
        .collect();
    // The original leaves with dst + 1; the clone was taken after egress (dst + 1) and
    // egress ran again on it (dst + 2), with instance_type EGRESS_CLONE.
    assert_eq!(got, [(1, 0x11, 0), (2, 0x12, 2)]);
    assert_eq!(o.outputs[1].bytes.last(), Some(&0xee), "payload kept");
}

#[test]
fn resubmit_and_recirculate_preserve_field_lists_and_are_bounded() {
    let mut bb = B::v1model();
    let eth = bb.eth();
    bb.simple_parser(&[eth]);
    let cnt = bb.meta("meta.cnt", 8);
    let fl = bb.p.field_lists.push(FieldList {
        index: 0,
        slots: vec![cnt],
    });
    let it = bb.sm("instance_type");
    let spec = bb.sm("egress_spec");
    let dst = bb.f(eth, "dst");
    // Ingress: count passes; resubmit while cnt < 2.
    let mut body = BodyBuilder::new();
    body.push(set(cnt, Expr::binary(BinOp::Add, Expr::Slot(cnt), k(8, 1))));
    body.push(set(spec, k(9, 1)));
    let (again, done) = body.branch(Expr::binary(BinOp::LtU, Expr::Slot(cnt), k(8, 2)));
    body.switch_to(again);
    body.push(Stmt::Builtin(Builtin::Resubmit {
        field_list: Some(fl),
    }));
    body.terminate(Terminator::Return);
    body.switch_to(done);
    body.terminate(Terminator::Return);
    bb.control_body(Role::Ingress, "ig", body.finish());
    // Egress: record cnt and instance_type; recirculate once (when cnt is 2).
    let mut eg = BodyBuilder::new();
    eg.push(set(
        dst,
        Expr::binary(
            BinOp::Concat,
            Expr::Slot(it),
            Expr::binary(BinOp::Concat, k(8, 0), Expr::Slot(cnt)),
        ),
    ));
    let (rc, no) = eg.branch(Expr::Slot(cnt).eq(k(8, 2)));
    eg.switch_to(rc);
    eg.push(Stmt::Builtin(Builtin::Recirculate {
        field_list: Some(fl),
    }));
    eg.terminate(Terminator::Return);
    eg.switch_to(no);
    eg.terminate(Terminator::Return);
    bb.control_body(Role::Egress, "eg", eg.finish());
    bb.emit_deparser(&[eth]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &frame(0, 1, &[]), 0);
    // Pass 1: cnt 1, resubmit; pass 2 (type 6): cnt 2, unicast as type 0, egress
    // recirculates (cnt 2 kept); pass 3 (type 4): cnt 3, unicast, egress sees type 0.
    assert_eq!(o.outputs.len(), 1);
    assert_eq!(&o.outputs[0].bytes[..6], &[0, 0, 0, 0, 0, 3]);
    assert_eq!(o.report.passes, 2);

    // An endless resubmission loop is cut and reported.
    let mut bb = B::v1model();
    let eth = bb.eth();
    bb.simple_parser(&[eth]);
    bb.control(
        Role::Ingress,
        "ig",
        vec![Stmt::Builtin(Builtin::Resubmit { field_list: None })],
    );
    bb.emit_deparser(&[eth]);
    let p = bb.build();
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &frame(0, 1, &[]), 0);
    assert!(o.outputs.is_empty());
    assert_eq!(o.report.passes, 64);
    assert_eq!(o.report.drops, [DropReason::Limit]);
}

#[test]
fn truncate_packet_length_and_priority() {
    let (p, _) = pipeline(
        |bb| {
            let eth = bb.p.phv.header_by_name("hdr.eth").unwrap();
            vec![
                Stmt::Builtin(Builtin::Truncate { bytes: k(32, 20) }),
                Stmt::Builtin(Builtin::Truncate { bytes: k(32, 16) }),
                Stmt::SetInvalid(HeaderRef::Header(eth)),
                Stmt::SetValid(HeaderRef::Header(eth)),
                Stmt::SetValid(HeaderRef::Header(eth)),
            ]
        },
        |_| vec![],
    );
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &frame(1, 1, &[0; 10]), 0);
    assert_eq!(o.outputs[0].bytes.len(), 16, "the smallest truncate wins");
    assert_eq!(mark(&o.outputs[0].bytes).2, 24, "length register: -14 +14");
    let (p, _) = pipeline(|bb| vec![set(bb.sm("priority"), k(3, 1))], |_| vec![]);
    let mut s = State::new(&p).unwrap();
    let o = run(&p, &mut s, &frame(1, 1, &[]), 0);
    assert_eq!(o.report.drops, [DropReason::PriorityOutOfRange]);
}

#[test]
fn timestamps_and_queueing_metadata_come_from_the_clock() {
    let (p, _) = pipeline(
        |bb| {
            let eth = bb.p.phv.header_by_name("hdr.eth").unwrap();
            let dst = bb.f(eth, "dst");
            vec![set(dst, Expr::Slot(bb.sm("ingress_global_timestamp")))]
        },
        |_| vec![],
    );
    let mut s = State::new(&p).unwrap();
    let o = run_at(&p, &mut s, &frame(1, 1, &[]), 0, 5_000_000);
    assert_eq!(&o.outputs[0].bytes[..6], &5000u64.to_be_bytes()[2..]);
}
