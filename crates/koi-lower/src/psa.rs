//! PSA's architecture binding (psa.p4): the blocks of `PSA_Switch`'s two pipeline packages,
//! the parameter kinds of each block, the slots the interpreter's traffic manager reads and
//! writes (recorded as the pipeline's intrinsics), and psa.p4's extern functions
//! (`psa_clone_i2e`, `psa_resubmit`, `psa_normal`, `psa_clone_e2e`, `psa_recirculate`), which
//! koi computes from their arguments. The eBPF and XDP models' parameters are recorded the
//! same way.
//!
//! Intrinsics of these architectures are named `KIND.FIELD` for the standard metadata
//! (`iout.drop`, `ein.packet_path`, `omd.output_port`; a scalar parameter is named after its
//! kind: `accept`), and every slot of the metadata the architecture carries from one block to
//! another (`NM`, `CI2E`, `CE2E`, `RESUB`, `RECIRC`) is listed under its kind's name.

use crate::arch::ArchParam;
use crate::ctx::{Bind, BlockInst, Lowerer, R, unsupported};
use crate::loc::{Loc, STy};
use koi_ir::{BinOp, Expr, HeaderRef, Place, Role, SlotId, UnOp};
use koi_sema::CallInfo;
use koi_syntax::Span;
use koi_syntax::ast;

/// The kinds of the metadata PSA carries between blocks (the deparsers' `out` parameters,
/// the parsers' `in` ones).
pub const CARRIED: [&str; 5] = ["NM", "CI2E", "CE2E", "RESUB", "RECIRC"];

/// PSA's block parameters (psa.p4): ingress and egress headers and metadata, the intrinsic
/// metadata of each block, and the metadata passed between blocks.
pub(crate) fn psa_params(role: Role) -> &'static [ArchParam] {
    match role {
        Role::IngressParser => &["pkt", "IH", "IM", "ipin", "RESUB", "RECIRC"],
        Role::Ingress => &["IH", "IM", "iin", "iout"],
        Role::IngressDeparser => &["pkt", "CI2E", "RESUB", "NM", "IH", "IM", "iout"],
        Role::EgressParser => &["pkt", "EH", "EM", "epin", "NM", "CI2E", "CE2E"],
        Role::Egress => &["EH", "EM", "ein", "eout"],
        Role::EgressDeparser => &["pkt", "CE2E", "RECIRC", "EH", "EM", "eout", "edin"],
        _ => &[],
    }
}

impl Lowerer<'_> {
    /// PSA: `PSA_Switch(IngressPipeline(ip, ig, id), pre, EgressPipeline(ep, eg, ed), bqe)`,
    /// the pipelines given in place or as top-level instances.
    pub(crate) fn psa_blocks(
        &mut self,
        main_decl: &ast::Decl,
        args: &[ast::Argument],
    ) -> R<Vec<(Role, BlockInst)>> {
        if args.len() == self.p.arch.roles().len() {
            // A `PSA_Switch` declared with the six blocks as parameters.
            return self.package_blocks(main_decl, args);
        }
        let info = self.main_info();
        let mut insts = Vec::new();
        let pipelines = [
            (
                0,
                [Role::IngressParser, Role::Ingress, Role::IngressDeparser],
            ),
            (2, [Role::EgressParser, Role::Egress, Role::EgressDeparser]),
        ];
        for (i, roles) in pipelines {
            let a = match &info {
                Some(info) => Self::arg(info, args, i),
                None => args.get(i).map(|a| &a.value),
            };
            let Some(a) = a else {
                return unsupported(main_decl.span, "this package signature");
            };
            let pipeline = self.package_arg(a)?;
            if pipeline.ctor.len() != 3 {
                return unsupported(a.span, "this PSA pipeline");
            }
            for (role, (_, b)) in roles.into_iter().zip(pipeline.ctor) {
                match b {
                    Bind::Block(inst) => insts.push((role, *inst)),
                    _ => return unsupported(a.span, "this PSA pipeline argument"),
                }
            }
        }
        Ok(insts)
    }

    /// Records the slots of architecture parameter `kind` (PSA, eBPF, XDP) as intrinsics:
    /// standard metadata (a lower-case kind) by field, carried metadata all under the kind.
    pub(crate) fn arch_intrinsics(&mut self, kind: ArchParam, loc: &Loc) {
        if CARRIED.contains(&kind) {
            let mut slots = Vec::new();
            self.loc_slots(loc, &mut slots, 0);
            for s in slots {
                self.p.intrinsics.push((kind.to_string(), s));
            }
            return;
        }
        if !kind.starts_with(|c: char| c.is_ascii_lowercase()) {
            return;
        }
        match loc {
            Loc::Scalar(Place::Slot(s), _) => self.p.intrinsics.push((kind.to_string(), *s)),
            Loc::Struct(fs, _) => {
                for (n, f) in fs {
                    if let Loc::Scalar(Place::Slot(s), _) = f {
                        self.p.intrinsics.push((format!("{kind}.{n}"), *s));
                    }
                }
            }
            _ => {}
        }
    }

    /// Every slot of a location: scalars, header fields, validity bits, varbit lengths,
    /// stacks' next indices.
    fn loc_slots(&self, loc: &Loc, out: &mut Vec<SlotId>, depth: u32) {
        if depth > 32 {
            return;
        }
        let phv = &self.p.phv;
        let header = |h: koi_ir::HeaderId, out: &mut Vec<SlotId>| {
            if let Some(hd) = phv.headers.get(h) {
                for &f in &hd.fields {
                    out.push(f);
                    if let Some(l) = phv.slots.get(f).and_then(|s| s.length) {
                        out.push(l);
                    }
                }
                out.push(hd.valid);
            }
        };
        match loc {
            Loc::Scalar(Place::Slot(s), _) => out.push(*s),
            Loc::Header(HeaderRef::Header(h), _) => header(*h, out),
            Loc::Union(hs, _) => hs.iter().for_each(|h| header(*h, out)),
            Loc::Stack(s, _) => {
                if let Some(st) = phv.stacks.get(*s) {
                    st.elems.iter().for_each(|h| header(*h, out));
                    out.push(st.next_index);
                }
            }
            Loc::Struct(fs, _) => {
                for (_, f) in fs {
                    self.loc_slots(f, out, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// psa.p4's extern functions, computed from their arguments (psa.p4 says how each can
    /// be implemented): `None` for other names.
    pub(crate) fn psa_function(
        &mut self,
        name: &str,
        info: &CallInfo,
        args: &[ast::Argument],
        span: Span,
    ) -> R<Option<Loc>> {
        if !matches!(
            name,
            "psa_clone_i2e" | "psa_resubmit" | "psa_normal" | "psa_clone_e2e" | "psa_recirculate"
        ) {
            return Ok(None);
        }
        let mut fields = Vec::new();
        for i in 0..2 {
            if let Some(a) = Self::arg(info, args, i) {
                fields.push(self.value(a)?);
            }
        }
        let field = |l: &Loc, n: &str| -> R<Expr> {
            let Loc::Struct(fs, _) = l else {
                return unsupported(span, format!("this argument of {name}"));
            };
            match fs.iter().find(|(f, _)| f == n).map(|(_, l)| l) {
                Some(Loc::Scalar(p, _)) => Ok(place_expr(p)),
                Some(Loc::Value(e, _)) => Ok(e.clone()),
                _ => unsupported(span, format!("this argument of {name}")),
            }
        };
        let Some(istd) = fields.first() else {
            return unsupported(span, format!("{name} without its argument"));
        };
        let not = |e: Expr| Expr::unary(UnOp::Not, e);
        let and = |a: Expr, b: Expr| Expr::binary(BinOp::And, a, b);
        let e = match name {
            "psa_clone_i2e" | "psa_clone_e2e" => field(istd, "clone")?,
            "psa_resubmit" => and(not(field(istd, "drop")?), field(istd, "resubmit")?),
            "psa_normal" => and(not(field(istd, "drop")?), not(field(istd, "resubmit")?)),
            _ => {
                let Some(edstd) = fields.get(1) else {
                    return unsupported(span, format!("{name} without its arguments"));
                };
                let port = field(edstd, "egress_port")?;
                let recirc = Expr::binary(BinOp::Eq, port, Expr::bits(32, 0xffff_fffa));
                and(not(field(istd, "drop")?), recirc)
            }
        };
        Ok(Some(Loc::Value(
            e,
            STy {
                ty: koi_ir::Ty::Bool,
                signed: false,
            },
        )))
    }
}

/// The value of a scalar place.
fn place_expr(p: &Place) -> Expr {
    match p {
        Place::Slot(s) => Expr::Slot(*s),
        Place::Slice { slot, hi, lo } => Expr::Slot(*slot).slice(*hi, *lo),
        Place::StackField {
            stack,
            index,
            field,
        } => Expr::StackField {
            stack: *stack,
            index: Box::new(index.clone()),
            field: *field,
        },
    }
}
