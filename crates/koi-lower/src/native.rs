//! Calls of the user's extern functions (declared by the program, implemented in C): the C
//! types of their parameters ([`koi_ir::CType`], p4c's eBPF/uBPF mapping) and the
//! [`Builtin::Native`] statement with copy-in/copy-out through parameter temporaries.

use crate::ctx::{Lowerer, R, unsupported};
use crate::loc::{Loc, STy, place_expr};
use koi_ir::native::{NativeDir, NativeFn, NativeParam};
use koi_ir::{Builtin, CType, Expr, HeaderRef, NativeArg, Place, SlotKind, Stmt};
use koi_sema::types::{AggKind, Ty};
use koi_sema::{CallInfo, DeclId, TypeId};
use koi_syntax::Span;
use koi_syntax::ast::{self, Direction};

impl Lowerer<'_> {
    /// A call of extern function `d`, which has no built-in implementation: the user's C
    /// function of the same name.
    pub fn native_function(
        &mut self,
        e: &ast::Expr,
        d: DeclId,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<Option<Loc>> {
        let sp = e.span;
        let decl = self.decl(d)?;
        let name = decl.name.clone();
        if !decl.type_params.is_empty() {
            return unsupported(
                sp,
                format!("the generic extern function {name} (a C extern function has one type)"),
            );
        }
        let pure = self.idx.decls.get(&d).is_some_and(|a| {
            let proto = match &a.kind {
                ast::DeclKind::ExternFunction(p) => p.annotations.as_slice(),
                _ => &[],
            };
            a.annotations
                .iter()
                .chain(proto)
                .any(|x| x.name.name == "pure")
        });
        let params = self.params_of(info);
        let mut cparams = Vec::new();
        for p in &params {
            let dir = match p.dir {
                Some(Direction::Out) => NativeDir::Out,
                Some(Direction::InOut) => NativeDir::InOut,
                _ => NativeDir::In,
            };
            let ty = self.ctype(p.ty, sp, &name, 0)?;
            cparams.push(NativeParam {
                name: p.name.clone(),
                dir,
                ty,
            });
        }
        let ret_ty = self.natural_ty(e)?;
        let ret = match self.types.get(ret_ty) {
            Ty::Void => None,
            _ => {
                let c = self.ctype(ret_ty, sp, &name, 0)?;
                if matches!(c, CType::Struct { .. }) || c.is_array() {
                    return unsupported(
                        sp,
                        format!(
                            "the result type of extern function {name} (a C extern function \
                             returns bool or bit<N>/int<N> up to 64 bits)"
                        ),
                    );
                }
                Some((c, self.scalar_or(ret_ty, sp)?))
            }
        };
        let f = NativeFn {
            name: name.clone(),
            params: cparams,
            ret: ret.as_ref().map(|(c, _)| c.clone()),
            pure,
        };
        let func = match self.p.natives.index(&name) {
            Some(i) if self.p.natives.fns[i] == f => i,
            Some(_) => {
                return unsupported(
                    sp,
                    format!("calls of extern function {name} at other types"),
                );
            }
            None => {
                self.p.natives.fns.push(f.clone());
                self.p.natives.fns.len() - 1
            }
        };
        let bound = self.bind_args(d, info, args, &format!("${name}"), sp)?;
        let mut nargs = Vec::new();
        for (p, b) in f.params.iter().zip(&bound) {
            let mut a = NativeArg {
                reads: Vec::new(),
                writes: Vec::new(),
                headers: Vec::new(),
            };
            self.native_leaves(&b.loc, &p.ty, &mut a, sp)?;
            if !p.dir.reads() {
                a.reads.clear();
            }
            if !p.dir.writes() {
                a.writes.clear();
                a.headers.clear();
            }
            nargs.push(a);
        }
        let ret = ret.map(|(_, sty)| {
            let s = self.new_slot(&format!("${name}.ret"), sty.ty, sty.signed, SlotKind::Temp);
            (Place::Slot(s), sty)
        });
        self.emit(Stmt::Builtin(Builtin::Native {
            func: func as u32,
            args: nargs,
            ret: ret.as_ref().map(|(p, _)| p.clone()),
        }));
        self.copy_out(&bound, sp)?;
        Ok(ret.map(|(p, sty): (Place, STy)| Loc::Scalar(p, sty)))
    }

    /// The C type of a P4 type passed to or returned from extern function `f`.
    fn ctype(&self, ty: TypeId, span: Span, f: &str, depth: u32) -> R<CType> {
        if depth > 32 {
            return unsupported(span, "a type nested this deeply in a C extern function");
        }
        match self.types.get(ty) {
            Ty::Bool => Ok(CType::Bool),
            Ty::Bit(w) => Ok(CType::Bits {
                width: *w,
                signed: false,
            }),
            Ty::Int(w) => Ok(CType::Bits {
                width: *w,
                signed: true,
            }),
            Ty::NewType { base, .. } => self.ctype(*base, span, f, depth + 1),
            Ty::Agg(a) if a.kind != AggKind::HeaderUnion => {
                let mut fields = Vec::new();
                for fl in &a.fields {
                    fields.push((fl.name.clone(), self.ctype(fl.ty, span, f, depth + 1)?));
                }
                Ok(CType::Struct {
                    name: a.name.clone(),
                    header: a.kind == AggKind::Header,
                    fields,
                })
            }
            Ty::Enum(_) | Ty::ErrorType => match self.scalar(ty) {
                Some(STy {
                    ty: koi_ir::Ty::Bits(w),
                    signed,
                }) => Ok(CType::Bits { width: w, signed }),
                _ => unsupported(span, format!("this type in extern function {f}")),
            },
            _ => unsupported(
                span,
                format!(
                    "a value of type {} in extern function {f} (C extern functions take bool, \
                     bit<N>, int<N>, structs and headers)",
                    self.types.display(ty)
                ),
            ),
        }
    }

    /// The operands of the leaves of `loc` (a parameter temporary) of C type `ty`.
    fn native_leaves(&self, loc: &Loc, ty: &CType, a: &mut NativeArg, span: Span) -> R<()> {
        match (loc, ty) {
            (Loc::Scalar(p, _), CType::Bool | CType::Bits { .. }) => {
                a.reads.push(place_expr(p));
                a.writes.push(p.clone());
                Ok(())
            }
            (Loc::Value(e, _), CType::Bool | CType::Bits { .. }) => {
                a.reads.push(e.clone());
                Ok(())
            }
            (Loc::Struct(fs, _), CType::Struct { fields, .. }) if fs.len() == fields.len() => {
                for ((_, l), (_, t)) in fs.iter().zip(fields) {
                    self.native_leaves(l, t, a, span)?;
                }
                Ok(())
            }
            (
                Loc::Header(HeaderRef::Header(h), _),
                CType::Struct {
                    header: true,
                    fields,
                    ..
                },
            ) => {
                for (i, (_, t)) in fields.iter().enumerate() {
                    let l = self.field(loc, i, span)?;
                    self.native_leaves(&l, t, a, span)?;
                }
                a.reads.push(Expr::IsValid(HeaderRef::Header(*h)));
                a.writes.push(Place::Slot(self.p.phv.headers[*h].valid));
                a.headers.push(*h);
                Ok(())
            }
            _ => unsupported(span, "this argument of a C extern function"),
        }
    }
}
