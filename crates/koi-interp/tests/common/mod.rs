//! Hand-built pipelines for the interpreter's tests, as lowering would build them.
#![allow(dead_code)]

use koi_interp::{Interpreter, Outcome};
use koi_ir::*;
use koi_state::{ManualClock, State};

pub const V1_STD: [(&str, u32); 16] = [
    ("ingress_port", 9),
    ("egress_spec", 9),
    ("egress_port", 9),
    ("instance_type", 32),
    ("packet_length", 32),
    ("enq_timestamp", 32),
    ("enq_qdepth", 19),
    ("deq_timedelta", 32),
    ("deq_qdepth", 19),
    ("ingress_global_timestamp", 48),
    ("egress_global_timestamp", 48),
    ("mcast_grp", 16),
    ("egress_rid", 16),
    ("checksum_error", 1),
    ("parser_error", 32),
    ("priority", 3),
];

pub struct B {
    pub p: Pipeline,
}

pub fn b(w: u32, v: u128) -> Bits {
    Bits::from_u128(w, v)
}

pub fn k(w: u32, v: u128) -> Expr {
    Expr::bits(w, v)
}

pub fn set(s: SlotId, e: Expr) -> Stmt {
    Stmt::assign(Place::Slot(s), e)
}

impl B {
    pub fn v1model() -> B {
        let mut p = Pipeline::new(Architecture::V1Model);
        for (n, w) in V1_STD {
            let s = p.phv.add_slot(
                &format!("standard_metadata.{n}"),
                Ty::Bits(w),
                SlotKind::Metadata,
            );
            p.intrinsics.push((n.to_string(), s));
        }
        B { p }
    }

    pub fn ubpf() -> B {
        let mut p = Pipeline::new(Architecture::Ubpf);
        for (n, w) in [
            ("input_port", 32),
            ("packet_length", 32),
            ("output_action", 32),
            ("output_port", 32),
            ("clone_port", 32),
        ] {
            let s = p
                .phv
                .add_slot(&format!("std.{n}"), Ty::Bits(w), SlotKind::Metadata);
            p.intrinsics.push((n.to_string(), s));
        }
        B { p }
    }

    pub fn sm(&self, n: &str) -> SlotId {
        self.p.intrinsic(n).unwrap()
    }

    pub fn header(&mut self, name: &str, fields: &[(&str, u32)]) -> HeaderId {
        let fs: Vec<FieldSpec> = fields.iter().map(|(n, w)| FieldSpec::bit(n, *w)).collect();
        self.p.phv.add_header(name, &format!("{name}_t"), &fs)
    }

    pub fn eth(&mut self) -> HeaderId {
        self.header("hdr.eth", &[("dst", 48), ("src", 48), ("type", 16)])
    }

    pub fn meta(&mut self, name: &str, w: u32) -> SlotId {
        self.p.phv.add_slot(name, Ty::Bits(w), SlotKind::Metadata)
    }

    pub fn f(&self, h: HeaderId, field: &str) -> SlotId {
        self.p.phv.field(h, field).unwrap()
    }

    pub fn action(&mut self, name: &str, params: &[(&str, u32)], stmts: Vec<Stmt>) -> ActionId {
        let ps = params
            .iter()
            .map(|(n, w)| ActionParam::bits(n, *w))
            .collect();
        self.p.actions.push(Action::new(name, ps, stmts))
    }

    pub fn table(
        &mut self,
        name: &str,
        keys: Vec<(Expr, &str, u32, MatchKind)>,
        actions: &[ActionId],
        default: ActionId,
    ) -> TableId {
        let mut t = Table::new(name, default);
        t.keys = keys
            .into_iter()
            .map(|(expr, n, w, kind)| TableKey {
                expr,
                field: MatchField::new(n, w, kind),
            })
            .collect();
        t.actions = actions.iter().map(|a| TableAction::new(*a)).collect();
        if !actions.contains(&default) {
            t.actions.push(TableAction::new(default));
        }
        self.p.tables.push(t)
    }

    pub fn control(&mut self, role: Role, name: &str, stmts: Vec<Stmt>) {
        self.p
            .add_control(name, Body::from_stmts(stmts), Some(role));
    }

    pub fn control_body(&mut self, role: Role, name: &str, body: Body) {
        self.p.add_control(name, body, Some(role));
    }

    /// A parser that extracts the headers in order and accepts.
    pub fn simple_parser(&mut self, headers: &[HeaderId]) {
        let mut prs = Parser::new("prs");
        for h in headers {
            prs.push(
                prs.start,
                Stmt::Extract {
                    header: HeaderRef::Header(*h),
                    varbit_bits: None,
                },
            );
        }
        prs.set_transition(prs.start, Transition::Goto(Target::Accept));
        self.p.add_parser(prs, Some(Role::Parser));
    }

    pub fn emit_deparser(&mut self, headers: &[HeaderId]) {
        let s = headers
            .iter()
            .map(|h| Stmt::Emit(HeaderRef::Header(*h)))
            .collect();
        self.control(Role::Deparser, "dep", s);
    }

    /// Binds empty controls to the roles left, verifies, returns the pipeline.
    pub fn build(mut self) -> Pipeline {
        for role in self.p.arch.roles() {
            if self.p.block(*role).is_none() {
                self.control(*role, role.name(), vec![]);
            }
        }
        if let Err(e) = verify(&self.p) {
            panic!("pipeline does not verify: {e:#?}");
        }
        self.p
    }
}

/// Runs one packet at time `ns`.
pub fn run_at(p: &Pipeline, s: &mut State, data: &[u8], port: u64, ns: u64) -> Outcome {
    let clock = ManualClock::new(ns);
    Interpreter::new(p)
        .unwrap()
        .process(s, data, port, &clock)
        .unwrap()
}

pub fn run(p: &Pipeline, s: &mut State, data: &[u8], port: u64) -> Outcome {
    run_at(p, s, data, port, 0)
}

/// (port, bytes) of the outputs.
pub fn outs(o: &Outcome) -> Vec<(u64, Vec<u8>)> {
    o.outputs
        .iter()
        .map(|x| (x.port, x.bytes.clone()))
        .collect()
}

pub fn frame(dst: u64, ty: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = dst.to_be_bytes()[2..].to_vec();
    f.extend_from_slice(&[0xaa; 6]);
    f.extend_from_slice(&ty.to_be_bytes());
    f.extend_from_slice(payload);
    f
}
