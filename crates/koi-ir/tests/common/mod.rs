//! A small v1model L2 switch built by hand with the builder API, as lowering would build it:
//! Ethernet and VLAN headers, a parser with a select, an ingress with one exact table and two
//! actions, a deparser.

use koi_ir::*;

/// Ids of the interesting parts of [`l2_switch`], for tests that break them.
#[allow(dead_code)]
pub struct L2 {
    pub p: Pipeline,
    pub ingress: ControlId,
    pub parser: ParserId,
    pub dmac: TableId,
    pub forward: ActionId,
    pub drop: ActionId,
    pub no_action: ActionId,
    pub ether_type: SlotId,
    pub egress_spec: SlotId,
    pub ethernet: HeaderId,
}

fn std_meta(p: &mut Pipeline) -> SlotId {
    let fields = [
        ("ingress_port", 9),
        ("egress_spec", 9),
        ("egress_port", 9),
        ("mcast_grp", 16),
    ];
    for (name, w) in fields {
        let s = p.phv.add_slot(
            &format!("standard_metadata.{name}"),
            Ty::Bits(w),
            SlotKind::Metadata,
        );
        p.intrinsics.push((name.to_string(), s));
    }
    let w = p.error_width;
    let e = p.phv.add_slot(
        "standard_metadata.parser_error",
        Ty::Bits(w),
        SlotKind::Metadata,
    );
    p.intrinsics.push(("parser_error".to_string(), e));
    p.intrinsic("egress_spec").unwrap()
}

fn parser(p: &mut Pipeline, ethernet: HeaderId, vlan: HeaderId) -> ParserId {
    let ether_type = p.phv.field(ethernet, "etherType").unwrap();
    let mut prs = Parser::new("MyParser");
    let vlan_state = prs.add_state("parse_vlan");
    prs.push(
        prs.start,
        Stmt::Extract {
            header: HeaderRef::Header(ethernet),
            varbit_bits: None,
        },
    );
    let cases = vec![
        SelectCase {
            keysets: vec![Keyset::Pattern(Pattern::Exact(Bits::from_u64(16, 0x8100)))],
            next: Target::State(vlan_state),
        },
        SelectCase::default_to(1, Target::Accept),
    ];
    prs.set_transition(
        prs.start,
        Transition::Select {
            keys: vec![Expr::Slot(ether_type)],
            cases,
        },
    );
    prs.push(
        vlan_state,
        Stmt::Extract {
            header: HeaderRef::Header(vlan),
            varbit_bits: None,
        },
    );
    prs.set_transition(vlan_state, Transition::Goto(Target::Accept));
    p.add_parser(prs, Some(Role::Parser))
}

fn actions(p: &mut Pipeline, egress_spec: SlotId) -> (ActionId, ActionId, ActionId) {
    let mut no_action = Action::new("NoAction", vec![], vec![]);
    no_action
        .preamble
        .annotations
        .push(Annotation::text("noWarn", "\"unused\""));
    let no_action = p.actions.push(no_action);
    let forward = p.actions.push(Action::new(
        "MyIngress.forward",
        vec![ActionParam::bits("port", 9)],
        vec![Stmt::assign(Place::Slot(egress_spec), Expr::Param(0))],
    ));
    let drop = p.actions.push(Action::new(
        "MyIngress.drop",
        vec![],
        vec![Stmt::Builtin(Builtin::MarkToDrop)],
    ));
    (forward, drop, no_action)
}

fn dmac(p: &mut Pipeline, ethernet: HeaderId, acts: (ActionId, ActionId, ActionId)) -> TableId {
    let (forward, drop, no_action) = acts;
    let dst = p.phv.field(ethernet, "dstAddr").unwrap();
    let mut t = Table::new("MyIngress.dmac", no_action);
    t.keys.push(TableKey {
        expr: Expr::Slot(dst),
        field: MatchField::new("hdr.ethernet.dstAddr", 48, MatchKind::Exact),
    });
    t.actions = vec![
        TableAction::new(forward),
        TableAction::new(drop),
        TableAction {
            action: no_action,
            scope: ActionScope::DefaultOnly,
            annotations: vec![Annotation::flag("defaultonly")],
        },
    ];
    t.entries.push(Entry {
        keys: vec![Pattern::Exact(Bits::ones(48))],
        call: ActionCall {
            action: drop,
            args: vec![],
        },
        priority: None,
        is_const: false,
        annotations: vec![],
    });
    p.tables.push(t)
}

fn ingress(p: &mut Pipeline, dmac: TableId) -> ControlId {
    let mcast = p.intrinsic("mcast_grp").unwrap();
    let mut b = BodyBuilder::new();
    let (hit, miss) = (b.new_block(), b.new_block());
    b.terminate(Terminator::Apply {
        table: dmac,
        next: ApplyNext::HitMiss { hit, miss },
    });
    b.switch_to(hit);
    b.terminate(Terminator::Return);
    b.switch_to(miss);
    b.push(Stmt::assign(Place::Slot(mcast), Expr::bits(16, 1)));
    p.add_control("MyIngress", b.finish(), Some(Role::Ingress))
}

pub fn l2_switch() -> L2 {
    let mut p = Pipeline::new(Architecture::V1Model);
    let ethernet = p.phv.add_header(
        "hdr.ethernet",
        "ethernet_t",
        &[
            FieldSpec::bit("dstAddr", 48),
            FieldSpec::bit("srcAddr", 48),
            FieldSpec::bit("etherType", 16),
        ],
    );
    let vlan = p.phv.add_header(
        "hdr.vlan",
        "vlan_t",
        &[
            FieldSpec::bit("pcp", 3),
            FieldSpec::bit("dei", 1),
            FieldSpec::bit("vid", 12),
            FieldSpec::bit("etherType", 16),
        ],
    );
    let egress_spec = std_meta(&mut p);
    let parser = parser(&mut p, ethernet, vlan);
    p.add_control(
        "MyVerifyChecksum",
        Body::from_stmts(vec![]),
        Some(Role::VerifyChecksum),
    );
    let acts = actions(&mut p, egress_spec);
    let dmac = dmac(&mut p, ethernet, acts);
    let ingress = ingress(&mut p, dmac);
    p.add_control("MyEgress", Body::from_stmts(vec![]), Some(Role::Egress));
    p.add_control(
        "MyComputeChecksum",
        Body::from_stmts(vec![]),
        Some(Role::ComputeChecksum),
    );
    let emits = vec![
        Stmt::Emit(HeaderRef::Header(ethernet)),
        Stmt::Emit(HeaderRef::Header(vlan)),
    ];
    p.add_control("MyDeparser", Body::from_stmts(emits), Some(Role::Deparser));
    let ether_type = p.phv.field(ethernet, "etherType").unwrap();
    L2 {
        p,
        ingress,
        parser,
        dmac,
        forward: acts.0,
        drop: acts.1,
        no_action: acts.2,
        ether_type,
        egress_spec,
        ethernet,
    }
}
