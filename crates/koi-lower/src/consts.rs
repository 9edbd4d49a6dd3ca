//! Compile-time values: sema's [`Value`]s (infinite-precision integers, enums, errors, structs)
//! turned into sized IR constants, and the lookups of constants the lowering needs (sizes,
//! indices, keyset elements, constructor arguments).

use crate::ctx::{Lowerer, R, unsupported};
use crate::loc::{Loc, STy};
use koi_ir::{Bits, Expr, Ty as IrTy};
use koi_sema::types::Ty;
use koi_sema::{TypeId, Value};
use koi_syntax::Span;
use koi_syntax::ast;
use num_bigint::{BigInt, Sign};

/// `v` as a `width`-bit two's complement pattern.
pub fn int_bits(v: &BigInt, width: u32) -> Bits {
    let wrapped = koi_sema::value::wrap(v, false, width);
    let (_, digits) = wrapped.to_u64_digits();
    debug_assert!(wrapped.sign() != Sign::Minus);
    Bits::from_limbs(width, &digits)
}

impl Lowerer<'_> {
    /// The constant value of an expression, if sema knows one.
    pub fn const_value(&self, e: &ast::Expr) -> Option<&Value> {
        if let ast::ExprKind::Path(_) = e.kind
            && let Some(koi_sema::Resolution::Decl(d)) = self.ck.resolutions.get(&e.id)
            && let Some(crate::ctx::Bind::Const(v, _)) = self.lookup(*d)
        {
            return Some(v);
        }
        self.ck.consts.get(&e.id)
    }

    /// The value of a compile-time known expression as a `u64`.
    pub fn const_u64(&self, e: &ast::Expr) -> R<u64> {
        match self.const_value(e).and_then(|v| v.as_u64()) {
            Some(v) => Ok(v),
            None => unsupported(e.span, "a non-constant value here"),
        }
    }

    /// The code of an enum member of type `ty`.
    fn enum_code(&self, ty: TypeId, member: &str) -> Option<u128> {
        match self.types.get(ty) {
            Ty::Enum(e) => e
                .members
                .iter()
                .position(|m| m == member)
                .map(|i| i as u128),
            _ => None,
        }
    }

    /// A scalar constant of type `ty` for `v`, or `None` if `v` is not a scalar of it.
    pub fn scalar_const(&self, v: &Value, ty: TypeId) -> Option<Expr> {
        let s = self.scalar(ty)?;
        match (v, s.ty) {
            (Value::Bool(b), IrTy::Bool) => Some(Expr::Bool(*b)),
            (Value::Int(i), IrTy::Bits(w)) => Some(Expr::Const(int_bits(i, w))),
            (Value::Bool(b), IrTy::Bits(1)) => Some(Expr::bits(1, u128::from(*b))),
            (Value::Error(name), IrTy::Bits(w)) => {
                let code = self.p.error_code(name)?;
                Some(Expr::bits(w, u128::from(code)))
            }
            (Value::Enum { repr: Some(r), .. }, IrTy::Bits(w)) => Some(Expr::Const(int_bits(r, w))),
            (
                Value::Enum {
                    ty: ety,
                    member,
                    repr: None,
                },
                IrTy::Bits(w),
            ) => Some(Expr::bits(w, self.enum_code(*ety, member)?)),
            _ => None,
        }
    }

    /// The bits of a compile-time known expression of width `width` (keysets, entries).
    pub fn const_bits(&mut self, e: &ast::Expr, width: u32) -> R<Bits> {
        let v = match self.const_value(e) {
            Some(v) => v.clone(),
            None => return unsupported(e.span, "a non-constant keyset or argument"),
        };
        let ty = self.ty_of(e)?;
        let bt = self.types.bit(width);
        let c = self
            .scalar_const(&v, ty)
            .or_else(|| self.scalar_const(&v, bt));
        match c {
            Some(Expr::Const(b)) => Ok(b.resize(width)),
            Some(Expr::Bool(b)) => Ok(Bits::from_bool(b).resize(width)),
            _ => match v.as_int() {
                Some(i) => Ok(int_bits(i, width)),
                None => unsupported(e.span, "this constant"),
            },
        }
    }

    /// Storage holding the constant aggregate value `v` of type `ty`.
    pub fn const_loc(&mut self, v: &Value, ty: TypeId, span: Span) -> R<Loc> {
        if let Some(e) = self.scalar_const(v, ty) {
            let s = self.scalar_or(ty, span)?;
            return Ok(Loc::Value(e, s));
        }
        let tmp = self.alloc("$const", ty, crate::loc::Alloc::Temp, span)?;
        self.fill_const(&tmp, v, span)?;
        Ok(tmp)
    }

    /// Assigns the constant `v` to `loc`.
    pub fn fill_const(&mut self, loc: &Loc, v: &Value, span: Span) -> R<()> {
        match (loc, v) {
            (Loc::Scalar(p, s), _) => {
                let ty = self.sty_type(*s);
                let Some(e) = ty.and_then(|t| self.scalar_const(v, t)) else {
                    return unsupported(span, "this constant");
                };
                self.emit(koi_ir::Stmt::assign(p.clone(), e));
                Ok(())
            }
            (Loc::Struct(fs, _), Value::Struct(vs)) => {
                for (name, f) in fs.clone() {
                    if let Some((_, fv)) = vs.iter().find(|(n, _)| *n == name) {
                        self.fill_const(&f, fv, span)?;
                    }
                }
                Ok(())
            }
            (Loc::Struct(fs, _), Value::Tuple(vs)) => {
                for ((_, f), fv) in fs.clone().iter().zip(vs) {
                    self.fill_const(f, fv, span)?;
                }
                Ok(())
            }
            (Loc::Header(h, _), Value::Tuple(vs)) => {
                self.emit(koi_ir::Stmt::SetValid(h.clone()));
                for (i, fv) in vs.iter().enumerate() {
                    let f = self.field(loc, i, span)?;
                    self.fill_const(&f, fv, span)?;
                }
                Ok(())
            }
            (Loc::Header(h, _), Value::Struct(vs)) => {
                self.emit(koi_ir::Stmt::SetValid(h.clone()));
                let names: Vec<String> = match loc {
                    Loc::Header(_, t) => self
                        .types
                        .agg(*t)
                        .map(|a| a.fields.iter().map(|f| f.name.clone()).collect())
                        .unwrap_or_default(),
                    _ => vec![],
                };
                for (i, n) in names.iter().enumerate() {
                    if let Some((_, fv)) = vs.iter().find(|(x, _)| x == n) {
                        let f = self.field(loc, i, span)?;
                        self.fill_const(&f, fv, span)?;
                    }
                }
                Ok(())
            }
            _ => unsupported(span, "this constant value"),
        }
    }

    /// A sema type for a scalar IR type (for constant conversion).
    fn sty_type(&mut self, s: STy) -> Option<TypeId> {
        match s.ty {
            IrTy::Bool => Some(TypeId::BOOL),
            IrTy::Bits(w) if s.signed => Some(self.types.int(w)),
            IrTy::Bits(w) => Some(self.types.bit(w)),
            IrTy::Varbit(_) => None,
        }
    }
}
