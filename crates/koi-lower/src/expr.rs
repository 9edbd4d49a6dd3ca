//! Expressions: every P4 expression to a [`Loc`] (scalars as pure IR expressions, aggregates as
//! storage). Constants come from sema's folding; operators get their signed or unsigned IR
//! variant from the operand types; implicit casts recorded by sema are applied; calls inside
//! expressions emit their statements first (left to right, with temporaries where a later
//! operand has side effects).

use crate::ctx::{Bind, Lowerer, R, internal, unsupported};
use crate::loc::{Alloc, Loc, STy, bin, not};
use koi_ir::{BinOp, Cast, Expr, HeaderRef, Place, Stmt, Ty as IrTy, UnOp};
use koi_sema::types::Ty;
use koi_sema::{Builtin, CallTarget, Resolution, TypeId};
use koi_syntax::ast::{self, ExprKind};

impl Lowerer<'_> {
    /// The scalar value of `e` (after its implicit cast).
    pub fn rvalue(&mut self, e: &ast::Expr) -> R<Expr> {
        let l = self.value(e)?;
        match l.expr() {
            Some(x) => Ok(x),
            None => unsupported(e.span, "an aggregate value here"),
        }
    }

    /// The scalar value of `e` and its type.
    pub fn rvalue_s(&mut self, e: &ast::Expr) -> R<(Expr, STy)> {
        let l = self.value(e)?;
        match (l.expr(), l.sty()) {
            (Some(x), Some(t)) => Ok((x, t)),
            _ => unsupported(e.span, "an aggregate value here"),
        }
    }

    /// A boolean condition.
    pub fn cond(&mut self, e: &ast::Expr) -> R<Expr> {
        let (x, t) = match self.union_stack_scalar(e)? {
            Some(v) => v,
            None => self.rvalue_s(e)?,
        };
        match t.ty {
            IrTy::Bool => Ok(x),
            IrTy::Bits(1) => Ok(x.cast(Cast::ToBool)),
            _ => internal(e.span, "condition is not a bool"),
        }
    }

    /// The value of `e` after its implicit cast, as a location (read-only or not).
    pub fn value(&mut self, e: &ast::Expr) -> R<Loc> {
        if let Some(l) = self.const_loc_of(e)? {
            return Ok(l);
        }
        let natural = self.natural(e)?;
        match self.cast_of(e.id) {
            Some(to) => {
                let from = self.natural_ty(e)?;
                self.convert(natural, from, to, e)
            }
            None => Ok(natural),
        }
    }

    /// `e` as a compile-time constant location, if sema folded it.
    fn const_loc_of(&mut self, e: &ast::Expr) -> R<Option<Loc>> {
        let Some(v) = self.const_value(e).cloned() else {
            return Ok(None);
        };
        let ty = self.ty_of(e)?;
        if matches!(self.types.get(ty), Ty::InfInt) {
            return Ok(v.as_int().map(|i| {
                let w = (i.bits() as u32 + 1).max(32);
                Loc::Value(Expr::Const(crate::consts::int_bits(i, w)), STy::bits(w))
            }));
        }
        if matches!(
            self.types.get(ty),
            Ty::String | Ty::MatchKind | Ty::Action { .. } | Ty::Set(_) | Ty::DontCare
        ) {
            return Ok(None);
        }
        if let Some(s) = self.scalar(ty) {
            return Ok(self.scalar_const(&v, ty).map(|c| Loc::Value(c, s)));
        }
        if self.types.agg(ty).is_some() || matches!(self.types.get(ty), Ty::Tuple(_)) {
            return self.const_loc(&v, ty, e.span).map(Some);
        }
        Ok(None)
    }

    /// An assignable location.
    pub fn lvalue(&mut self, e: &ast::Expr) -> R<Loc> {
        self.natural(e)
    }

    /// The value of `e` before its implicit cast.
    fn natural(&mut self, e: &ast::Expr) -> R<Loc> {
        match &e.kind {
            ExprKind::Bool(b) => Ok(Loc::Value(
                Expr::Bool(*b),
                STy {
                    ty: IrTy::Bool,
                    signed: false,
                },
            )),
            ExprKind::Path(_) => self.path_value(e),
            ExprKind::Member(base, m) => self.member(e, base, m),
            ExprKind::Index(a, i) => self.index(e, a, i),
            ExprKind::Slice(a, h, l) => {
                let (h, l) = (self.const_u64(h)? as u32, self.const_u64(l)? as u32);
                let base = self.value(a)?;
                self.slice(base, h, l, e)
            }
            ExprKind::SliceWidth(a, lo, w) => self.slice_width(e, a, lo, w),
            ExprKind::Call { .. } => match self.call(e)? {
                Some(l) => Ok(l),
                None => unsupported(e.span, "using the result of this call"),
            },
            ExprKind::Unary(op, a) => self.unary(e, *op, a),
            ExprKind::Binary(op, a, b) => self.binary(e, *op, a, b),
            ExprKind::Ternary(c, a, b) => self.ternary(e, c, a, b),
            ExprKind::Cast(_, a) => {
                let to = self.natural_ty(e)?;
                let from = self.ty_of(a)?;
                let v = self.value(a)?;
                self.convert(v, from, to, e)
            }
            ExprKind::List { items, .. } => {
                let ty = self.ty_of(e)?;
                let items: Vec<&ast::Expr> = items.iter().collect();
                self.build_aggregate(ty, &items, None, e)
            }
            ExprKind::StructInit { fields, .. } => {
                let ty = self.ty_of(e)?;
                let names: Vec<&str> = fields.iter().map(|(n, _)| n.name.as_str()).collect();
                let items: Vec<&ast::Expr> = fields.iter().map(|(_, v)| v).collect();
                self.build_aggregate(ty, &items, Some(&names), e)
            }
            ExprKind::InvalidHeader => {
                let ty = self.ty_of(e)?;
                let tmp = self.alloc("$invalid", ty, Alloc::Temp, e.span)?;
                self.invalidate(&tmp);
                Ok(tmp)
            }
            ExprKind::DontCare => {
                let ty = self.ty_of(e)?;
                self.alloc("$dontcare", ty, Alloc::Temp, e.span)
            }
            ExprKind::Int(_) => unsupported(e.span, "this integer literal"),
            _ => unsupported(e.span, "this expression"),
        }
    }

    fn path_value(&mut self, e: &ast::Expr) -> R<Loc> {
        let Some(Resolution::Decl(d)) = self.ck.resolutions.get(&e.id) else {
            return unsupported(e.span, "this name as a value");
        };
        match self.lookup(*d).cloned() {
            Some(Bind::Loc(l)) => Ok(l),
            Some(Bind::Const(v, ty)) => self.const_loc(&v, ty, e.span),
            _ => {
                let name = self.decl(*d)?.name.clone();
                if let Some(v) = self.decl(*d)?.value.clone() {
                    let ty = self.ty_of(e)?;
                    return self.const_loc(&v, ty, e.span);
                }
                internal(e.span, format!("{name} is not bound to storage"))
            }
        }
    }

    fn member(&mut self, e: &ast::Expr, base: &ast::Expr, m: &ast::Ident) -> R<Loc> {
        match self.ck.resolutions.get(&e.id).cloned() {
            Some(Resolution::Field(i)) => {
                let b = self.value(base)?;
                self.field(&b, i, e.span)
            }
            Some(Resolution::StackNext) | Some(Resolution::StackLast) => {
                let b = self.value(base)?;
                if let Some(u) = self.union_stack_of(&b) {
                    return self.union_stack_elem(&u, e.span);
                }
                let (s, ty) = self.stack_of(base)?;
                let elem = self.stack_elem_ty(ty, e)?;
                let h = if matches!(self.ck.resolutions.get(&e.id), Some(Resolution::StackNext)) {
                    HeaderRef::Next(s)
                } else {
                    HeaderRef::Last(s)
                };
                Ok(Loc::Header(h, elem))
            }
            Some(Resolution::StackLastIndex) => {
                let b = self.value(base)?;
                if let Some(u) = self.union_stack_of(&b) {
                    return Ok(self.union_stack_last_index(&u));
                }
                let (s, _) = self.stack_of(base)?;
                let next = Expr::Slot(self.p.phv.stacks[s].next_index);
                Ok(Loc::Value(
                    bin(BinOp::Sub, next, Expr::bits(32, 1)),
                    STy::bits(32),
                ))
            }
            Some(Resolution::StackSize) => {
                let n = match self.value(base)? {
                    Loc::Stack(s, _) => self.p.phv.stacks[s].elems.len() as u128,
                    Loc::Struct(fs, _) => fs.len() as u128,
                    _ => return unsupported(e.span, "this stack"),
                };
                Ok(Loc::Value(Expr::bits(32, n), STy::bits(32)))
            }
            Some(Resolution::TableHit) | Some(Resolution::TableMiss) => {
                let hit = matches!(self.ck.resolutions.get(&e.id), Some(Resolution::TableHit));
                self.table_hit_value(base, hit)
            }
            _ => unsupported(e.span, format!("the member {}", m.name)),
        }
    }

    fn stack_of(&mut self, base: &ast::Expr) -> R<(koi_ir::StackId, TypeId)> {
        match self.value(base)? {
            Loc::Stack(s, t) => Ok((s, t)),
            _ => unsupported(base.span, "this value as a header stack"),
        }
    }

    fn stack_elem_ty(&self, ty: TypeId, e: &ast::Expr) -> R<TypeId> {
        match self.types.get(ty) {
            Ty::Stack { elem, .. } => Ok(*elem),
            _ => internal(e.span, "not a stack type"),
        }
    }

    fn index(&mut self, e: &ast::Expr, a: &ast::Expr, i: &ast::Expr) -> R<Loc> {
        let base = self.value(a)?;
        if self.const_value(i).is_none()
            && let Some(u) = self.union_stack_of(&base)
        {
            return self.union_stack_elem(&u, e.span);
        }
        match base {
            Loc::Stack(s, ty) => {
                if let Some(n) = self.const_value(i).and_then(|v| v.as_u64()) {
                    return self.stack_elem(s, ty, n, e.span);
                }
                let elem = self.stack_elem_ty(ty, e)?;
                let idx = self.rvalue(i)?;
                Ok(Loc::Header(HeaderRef::Index(s, Box::new(idx)), elem))
            }
            Loc::Struct(fs, ty) => {
                if self.const_value(i).is_none() && matches!(self.types.get(ty), Ty::Stack { .. }) {
                    return self.array_read(&fs, i);
                }
                let n = self.const_u64(i)? as usize;
                match fs.get(n) {
                    Some((_, l)) => Ok(l.clone()),
                    None => unsupported(e.span, "this index"),
                }
            }
            _ => unsupported(e.span, "indexing this value"),
        }
    }

    /// Element `i` (known at run time) of an array of bits `elems`: the element whose index
    /// equals `i`, 0 past the end (reading there is unspecified in P4).
    fn array_read(&mut self, elems: &[(String, Loc)], i: &ast::Expr) -> R<Loc> {
        let (idx, it) = self.rvalue_s(i)?;
        let Some(t) = elems.first().and_then(|(_, l)| l.sty()) else {
            return unsupported(i.span, "indexing an empty array");
        };
        Ok(Loc::Value(array_choice(elems, &idx, it.width(), t), t))
    }

    /// Bits `h..=l` of a scalar location.
    fn slice(&mut self, base: Loc, h: u32, l: u32, e: &ast::Expr) -> R<Loc> {
        if h < l {
            return internal(e.span, "slice with hi < lo");
        }
        let t = STy::bits(h - l + 1);
        match base {
            Loc::Scalar(Place::Slot(s), _) => Ok(Loc::Scalar(
                Place::Slice {
                    slot: s,
                    hi: h,
                    lo: l,
                },
                t,
            )),
            Loc::Scalar(Place::Slice { slot, lo, .. }, _) => Ok(Loc::Scalar(
                Place::Slice {
                    slot,
                    hi: lo + h,
                    lo: lo + l,
                },
                t,
            )),
            other => match other.expr() {
                Some(x) => Ok(Loc::Value(x.slice(h, l), t)),
                None => unsupported(e.span, "slicing this value"),
            },
        }
    }

    fn slice_width(
        &mut self,
        e: &ast::Expr,
        a: &ast::Expr,
        lo: &ast::Expr,
        w: &ast::Expr,
    ) -> R<Loc> {
        let w = self.const_u64(w)? as u32;
        if w == 0 {
            return unsupported(e.span, "a zero-width slice");
        }
        if let Some(l) = self.const_value(lo).and_then(|v| v.as_u64()) {
            let base = self.value(a)?;
            return self.slice(base, l as u32 + w - 1, l as u32, e);
        }
        let (x, _) = self.rvalue_s(a)?;
        let (amount, _) = self.rvalue_s(lo)?;
        let shifted = bin(BinOp::ShrU, x, amount);
        Ok(Loc::Value(shifted.slice(w - 1, 0), STy::bits(w)))
    }

    fn unary(&mut self, e: &ast::Expr, op: ast::UnOp, a: &ast::Expr) -> R<Loc> {
        let (x, t) = self.rvalue_s(a)?;
        let r = match op {
            ast::UnOp::Not => not(x),
            ast::UnOp::BitNot => Expr::unary(UnOp::BitNot, x),
            ast::UnOp::Neg => Expr::unary(UnOp::Neg, x),
            ast::UnOp::Plus => x,
        };
        let _ = e;
        Ok(Loc::Value(r, t))
    }

    /// The value of the left operand, stashed in a temporary when the right one has side
    /// effects (P4 evaluates left to right).
    fn left_operand(&mut self, a: &ast::Expr, b: &ast::Expr) -> R<Loc> {
        let l = self.value(a)?;
        if !self.has_effects(b) {
            return Ok(l);
        }
        match (&l, l.sty()) {
            (Loc::Value(Expr::Const(_) | Expr::Bool(_), _), _) => Ok(l),
            (_, Some(t)) => {
                let slot = self.new_slot("$tmp", t.ty, t.signed, koi_ir::SlotKind::Temp);
                let x = l.expr().unwrap_or(Expr::Bool(false));
                self.emit(Stmt::assign(Place::Slot(slot), x));
                Ok(Loc::Scalar(Place::Slot(slot), t))
            }
            _ => Ok(l),
        }
    }

    fn binary(&mut self, e: &ast::Expr, op: ast::BinOp, a: &ast::Expr, b: &ast::Expr) -> R<Loc> {
        use ast::BinOp as B;
        if matches!(op, B::And | B::Or) && self.has_effects(b) {
            return self.short_circuit(op == B::And, a, b);
        }
        let la = self.left_operand(a, b)?;
        let lb = self.value(b)?;
        let (la, lb) = self.int_operands(a, la, lb)?;
        if matches!(op, B::Eq | B::Ne) && la.expr().is_none() {
            let eq = self.equal(&la, &lb, e.span)?;
            let r = if op == B::Eq { eq } else { not(eq) };
            return Ok(Loc::Value(r, bool_ty()));
        }
        let (Some(x), Some(tx), Some(y)) = (la.expr(), la.sty(), lb.expr()) else {
            return unsupported(e.span, "this operation on aggregates");
        };
        let wb = lb.sty().map_or(0, |t| t.width());
        let (r, t) = binop(op, x, tx, y, wb);
        Ok(Loc::Value(r, t))
    }

    /// The operands of a binary operation on `int` values known only at run time (a run-time
    /// value cast to `int`): both signed, at the wider of their widths (sign-extended), as
    /// [`Lowerer::convert`] makes such values. Other operands are returned as they are.
    fn int_operands(&mut self, a: &ast::Expr, la: Loc, lb: Loc) -> R<(Loc, Loc)> {
        let ty = self.ty_of(a)?;
        if !matches!(self.types.get(ty), Ty::InfInt) {
            return Ok((la, lb));
        }
        let (Some(x), Some(tx), Some(y), Some(ty)) = (la.expr(), la.sty(), lb.expr(), lb.sty())
        else {
            return Ok((la, lb));
        };
        let w = tx.width().max(ty.width());
        let widen = |v: Expr, t: STy| {
            // Every `int` operand holds its value in two's complement at its width.
            let v = if t.width() == w {
                v
            } else {
                v.cast(Cast::Resize {
                    width: w,
                    signed: true,
                })
            };
            let s = STy {
                ty: IrTy::Bits(w),
                signed: true,
            };
            Loc::Value(v, s)
        };
        Ok((widen(x, tx), widen(y, ty)))
    }

    /// `a && b` / `a || b` where `b` has side effects: `b` is evaluated only when needed.
    fn short_circuit(&mut self, and: bool, a: &ast::Expr, b: &ast::Expr) -> R<Loc> {
        let x = self.cond(a)?;
        let slot = self.new_slot("$cond", IrTy::Bool, false, koi_ir::SlotKind::Temp);
        self.emit(Stmt::assign(Place::Slot(slot), x));
        let join = self.new_pos("join");
        let (eval_b, skip) = self.branch(Expr::Slot(slot));
        let (eval_b, skip) = if and { (eval_b, skip) } else { (skip, eval_b) };
        self.switch_to(skip);
        self.jump(join);
        self.switch_to(eval_b);
        let y = self.cond(b)?;
        self.emit(Stmt::assign(Place::Slot(slot), y));
        self.jump(join);
        self.switch_to(join);
        Ok(Loc::Scalar(Place::Slot(slot), bool_ty()))
    }

    fn ternary(&mut self, e: &ast::Expr, c: &ast::Expr, a: &ast::Expr, b: &ast::Expr) -> R<Loc> {
        let ty = self.ty_of(e)?;
        let pure = !self.has_effects(a) && !self.has_effects(b);
        if pure && let Some(s) = self.scalar(ty) {
            let cond = self.cond(c)?;
            let x = self.rvalue(a)?;
            let y = self.rvalue(b)?;
            return Ok(Loc::Value(Expr::mux(cond, x, y), s));
        }
        let cond = self.cond(c)?;
        let tmp = self.alloc("$mux", ty, Alloc::Temp, e.span)?;
        let join = self.new_pos("join");
        let (then, otherwise) = self.branch(cond);
        for (pos, arm) in [(then, a), (otherwise, b)] {
            self.switch_to(pos);
            let v = self.value(arm)?;
            self.copy(&tmp, &v, arm.span)?;
            self.jump(join);
        }
        self.switch_to(join);
        Ok(tmp)
    }

    /// Converts a value of type `from` to type `to` (explicit or implicit cast).
    pub fn convert(&mut self, v: Loc, from: TypeId, to: TypeId, e: &ast::Expr) -> R<Loc> {
        if from == to {
            return Ok(v);
        }
        if let (Some(x), Some(ts)) = (v.expr(), self.scalar(to)) {
            let fs = v.sty().unwrap_or(ts);
            let r = match (fs.ty, ts.ty) {
                (IrTy::Bits(a), IrTy::Bits(b)) if a != b => x.cast(Cast::Resize {
                    width: b,
                    signed: fs.signed,
                }),
                (IrTy::Bool, IrTy::Bits(1)) => x.cast(Cast::FromBool),
                (IrTy::Bits(1), IrTy::Bool) => x.cast(Cast::ToBool),
                (IrTy::Bool, IrTy::Bits(w)) => x.cast(Cast::FromBool).cast(Cast::Resize {
                    width: w,
                    signed: false,
                }),
                _ => x,
            };
            return Ok(Loc::Value(r, ts));
        }
        if matches!(self.types.get(to), Ty::InfInt)
            && let (Some(x), Some(fs)) = (v.expr(), v.sty())
            && let IrTy::Bits(w) = fs.ty
        {
            // A run-time value as an `int`: its value, signed, in at least 64 bits (one more
            // than its width, so that an unsigned value keeps its sign bit clear). Arithmetic
            // on it is exact while its values fit there; a cast back takes the low bits.
            let width = (w + 1).max(RUNTIME_INT_BITS);
            let r = x.cast(Cast::Resize {
                width,
                signed: fs.signed,
            });
            return Ok(Loc::Value(
                r,
                STy {
                    ty: IrTy::Bits(width),
                    signed: true,
                },
            ));
        }
        match (v, self.types.get(to).clone()) {
            (Loc::Struct(fs, _), Ty::Agg(a)) if a.kind == koi_sema::types::AggKind::Struct => {
                if fs.len() != a.fields.len() {
                    return unsupported(e.span, "this conversion");
                }
                let fields = a
                    .fields
                    .iter()
                    .zip(fs)
                    .map(|(f, (_, l))| (f.name.clone(), l))
                    .collect();
                Ok(Loc::Struct(fields, to))
            }
            (Loc::Struct(fs, _), Ty::Tuple(_)) => Ok(Loc::Struct(fs, to)),
            (l @ (Loc::Header(..) | Loc::Stack(..) | Loc::Union(..)), _) => Ok(l),
            (Loc::Struct(fs, _), _) => Ok(Loc::Struct(fs, to)),
            _ => unsupported(
                e.span,
                format!("a conversion to {}", self.types.display(to)),
            ),
        }
    }

    /// A temporary of type `ty` initialised from `items` (by position, or by `names`).
    fn build_aggregate(
        &mut self,
        ty: TypeId,
        items: &[&ast::Expr],
        names: Option<&[&str]>,
        e: &ast::Expr,
    ) -> R<Loc> {
        let tmp = self.alloc("$agg", ty, Alloc::Temp, e.span)?;
        if let Loc::Header(h, _) = &tmp {
            self.emit(Stmt::SetValid(h.clone()));
        }
        let field_names: Vec<String> = match self.types.get(ty) {
            Ty::Agg(a) => a.fields.iter().map(|f| f.name.clone()).collect(),
            _ => (0..items.len()).map(|i| i.to_string()).collect(),
        };
        for (k, item) in items.iter().enumerate() {
            let i = match names {
                Some(ns) => match field_names.iter().position(|f| f == ns[k]) {
                    Some(i) => i,
                    None => return internal(item.span, "unknown field in struct expression"),
                },
                None => k,
            };
            let dst = self.field_or_elem(&tmp, i, e)?;
            let v = self.value(item)?;
            self.copy(&dst, &v, item.span)?;
        }
        Ok(tmp)
    }

    fn field_or_elem(&mut self, l: &Loc, i: usize, e: &ast::Expr) -> R<Loc> {
        match l {
            Loc::Stack(s, ty) => self.stack_elem(*s, *ty, i as u64, e.span),
            _ => self.field(l, i, e.span),
        }
    }

    /// Whether evaluating `e` may have side effects (calls other than pure built-ins).
    pub fn has_effects(&self, e: &ast::Expr) -> bool {
        match &e.kind {
            ExprKind::Call { callee, args, .. } => {
                let pure = matches!(
                    self.ck.calls.get(&e.id).map(|c| &c.target),
                    Some(CallTarget::Builtin(
                        Builtin::IsValid
                            | Builtin::SizeInBits
                            | Builtin::SizeInBytes
                            | Builtin::MinSizeInBits
                            | Builtin::MinSizeInBytes
                            | Builtin::MaxSizeInBits
                            | Builtin::MaxSizeInBytes
                    ))
                );
                !pure || self.has_effects(callee) || args.iter().any(|a| self.has_effects(&a.value))
            }
            ExprKind::Member(a, _) | ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => {
                self.has_effects(a)
            }
            ExprKind::Index(a, b)
            | ExprKind::Binary(_, a, b)
            | ExprKind::Mask(a, b)
            | ExprKind::Range(a, b) => self.has_effects(a) || self.has_effects(b),
            ExprKind::Slice(a, b, c)
            | ExprKind::SliceWidth(a, b, c)
            | ExprKind::Ternary(a, b, c) => {
                self.has_effects(a) || self.has_effects(b) || self.has_effects(c)
            }
            ExprKind::List { items, .. } => items.iter().any(|i| self.has_effects(i)),
            ExprKind::StructInit { fields, .. } => fields.iter().any(|(_, v)| self.has_effects(v)),
            _ => false,
        }
    }
}

pub fn bool_ty() -> STy {
    STy {
        ty: IrTy::Bool,
        signed: false,
    }
}

/// The element of `elems` (scalars of type `t`) whose index equals `idx` (`width` bits), 0
/// when none does: a chain of choices.
pub(crate) fn array_choice(elems: &[(String, Loc)], idx: &Expr, width: u32, t: STy) -> Expr {
    let mut acc = Expr::bits(t.width(), 0);
    for (j, (_, l)) in elems.iter().enumerate().rev() {
        if let (Some(x), Some(at)) = (l.expr(), index_const(j, width)) {
            acc = Expr::mux(bin(BinOp::Eq, idx.clone(), at), x, acc);
        }
    }
    acc
}

/// `j` as a constant of `width` bits, if it fits (an index of that width cannot name a larger
/// element).
pub(crate) fn index_const(j: usize, width: u32) -> Option<Expr> {
    let j = j as u128;
    (width >= 128 || j >> width == 0).then(|| Expr::bits(width, j))
}

/// The least width of a run-time value cast to `int` ([`Lowerer::convert`]).
const RUNTIME_INT_BITS: u32 = 64;

/// The IR expression and type of `x op y` where `x` has type `tx` and `y` is `wy` bits wide.
pub fn binop(op: ast::BinOp, x: Expr, tx: STy, y: Expr, wy: u32) -> (Expr, STy) {
    use ast::BinOp as B;
    let s = tx.signed;
    let (iop, res) = match op {
        B::Mul => (BinOp::Mul, tx),
        B::Div => (BinOp::Div, tx),
        B::Mod => (BinOp::Mod, tx),
        B::Add => (BinOp::Add, tx),
        B::Sub => (BinOp::Sub, tx),
        B::AddSat => (if s { BinOp::AddSatS } else { BinOp::AddSatU }, tx),
        B::SubSat => (if s { BinOp::SubSatS } else { BinOp::SubSatU }, tx),
        B::Shl => (BinOp::Shl, tx),
        B::Shr => (if s { BinOp::ShrS } else { BinOp::ShrU }, tx),
        B::Le => (if s { BinOp::LeS } else { BinOp::LeU }, bool_ty()),
        B::Ge => (if s { BinOp::GeS } else { BinOp::GeU }, bool_ty()),
        B::Lt => (if s { BinOp::LtS } else { BinOp::LtU }, bool_ty()),
        B::Gt => (if s { BinOp::GtS } else { BinOp::GtU }, bool_ty()),
        B::Eq => (BinOp::Eq, bool_ty()),
        B::Ne => (BinOp::Ne, bool_ty()),
        B::BitAnd => (BinOp::BitAnd, tx),
        B::BitXor => (BinOp::BitXor, tx),
        B::BitOr => (BinOp::BitOr, tx),
        B::And => (BinOp::And, bool_ty()),
        B::Or => (BinOp::Or, bool_ty()),
        B::Concat => (
            BinOp::Concat,
            STy {
                ty: IrTy::Bits(tx.width() + wy),
                signed: s,
            },
        ),
    };
    (bin(iop, x, y), res)
}
