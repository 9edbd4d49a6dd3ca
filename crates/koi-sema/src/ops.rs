//! Operators: unary, binary (arithmetic, saturating, bitwise, shifts, concatenation,
//! comparisons, Boolean) and the conditional operator, with the spec's operand rules and the
//! implicit casts of `int` operands and serializable enums.

use crate::checker::Checker;
use crate::constant::{self, Arith};
use crate::types::{MAX_BITS_WIDTH, Ty, TypeId};
use crate::value::Value;
use koi_syntax::Span;
use koi_syntax::ast::{BinOp, Expr, UnOp};

fn op_str(op: BinOp) -> &'static str {
    use BinOp::*;
    match op {
        Mul => "*",
        Div => "/",
        Mod => "%",
        Add => "+",
        Sub => "-",
        AddSat => "|+|",
        SubSat => "|-|",
        Shl => "<<",
        Shr => ">>",
        Le => "<=",
        Ge => ">=",
        Lt => "<",
        Gt => ">",
        Eq => "==",
        Ne => "!=",
        BitAnd => "&",
        BitXor => "^",
        BitOr => "|",
        Concat => "++",
        And => "&&",
        Or => "||",
    }
}

impl Checker<'_> {
    pub fn check_unary(&mut self, e: &Expr, op: UnOp, a: &Expr) -> TypeId {
        let t = self.check_expr(a);
        if self.is_err(t) {
            return t;
        }
        let t = self.decay_enum(a, t);
        let ok = match (op, self.ty(t)) {
            (UnOp::Not, Ty::Bool) => true,
            (UnOp::BitNot, Ty::Bit(_) | Ty::Int(_)) => true,
            (UnOp::BitNot, Ty::InfInt) => {
                self.error(e.span, "Operation cannot be applied to values with unknown width; please specify width explicitly");
                return TypeId::ERROR;
            }
            (UnOp::Neg | UnOp::Plus, Ty::Bit(_) | Ty::Int(_) | Ty::InfInt) => true,
            _ => false,
        };
        if !ok {
            let sym = match op {
                UnOp::Not => "!",
                UnOp::BitNot => "~",
                UnOp::Neg => "-",
                UnOp::Plus => "+",
            };
            let s = self.show(t);
            self.error(
                e.span,
                format!("Cannot apply operation '{sym}' to expression of type {s}"),
            );
            return TypeId::ERROR;
        }
        if let Some(v) = self.converted_const(a) {
            if let Some(r) = constant::fold_unary(&self.out.types, op, &v, t) {
                self.set_const(e, r);
            }
        } else if self.is_ctk(a) {
            self.set_ctk(e);
        }
        t
    }

    /// A serializable enum operand decays to its underlying type (an implicit cast).
    fn decay_enum(&mut self, a: &Expr, t: TypeId) -> TypeId {
        match self.out.types.enum_repr(t) {
            Some(r) => {
                self.set_cast(a, r);
                r
            }
            None => t,
        }
    }

    pub fn check_binary(&mut self, e: &Expr, op: BinOp, l: &Expr, r: &Expr) -> TypeId {
        let lt = self.check_expr(l);
        let rt = self.check_expr(r);
        if self.is_err(lt) || self.is_err(rt) {
            return TypeId::ERROR;
        }
        let ty = self.binary_type(op, l, r, e.span);
        if !self.is_err(ty) {
            self.fold_binary_node(e, op, l, r, ty);
        }
        ty
    }

    /// The result type of `l op r` (operands already checked); records operand casts.
    pub fn binary_type(&mut self, op: BinOp, l: &Expr, r: &Expr, span: Span) -> TypeId {
        use BinOp::*;
        match op {
            And | Or => {
                let ok = self.coerce(l, TypeId::BOOL) & self.coerce(r, TypeId::BOOL);
                if ok { TypeId::BOOL } else { TypeId::ERROR }
            }
            Eq | Ne => self.check_equality(op, l, r, span),
            Shl | Shr => self.check_shift(l, r, span),
            Concat => self.check_concat(l, r, span),
            _ => self.check_arith(op, l, r, span),
        }
    }

    /// Brings two numeric operands to one type: the `int` one takes the other's type.
    fn common_numeric(&mut self, op: BinOp, l: &Expr, r: &Expr, span: Span) -> TypeId {
        let lt = self.type_of(l);
        let rt = self.type_of(r);
        let lt = self.decay_enum(l, lt);
        let rt = self.decay_enum(r, rt);
        for (x, t) in [(l, lt), (r, rt)] {
            if !self.out.types.is_integer(t) {
                let s = self.show(t);
                self.error(
                    x.span,
                    format!(
                        "{}: cannot be applied to an expression of type {s}",
                        op_str(op)
                    ),
                );
                return TypeId::ERROR;
            }
        }
        match (self.out.types.fixed(lt), self.out.types.fixed(rt)) {
            (None, None) => TypeId::INF_INT,
            (Some(_), None) => {
                self.coerce(r, lt);
                lt
            }
            (None, Some(_)) => {
                self.coerce(l, rt);
                rt
            }
            (Some((ls, lw)), Some((rs, rw))) => {
                if lw != rw {
                    self.error(
                        span,
                        format!(
                            "{}: Cannot operate on values with different widths {lw} and {rw}",
                            op_str(op)
                        ),
                    );
                    TypeId::ERROR
                } else if ls != rs {
                    self.error(
                        span,
                        format!(
                            "{}: Cannot operate on values with different signs",
                            op_str(op)
                        ),
                    );
                    TypeId::ERROR
                } else {
                    lt
                }
            }
        }
    }

    fn check_arith(&mut self, op: BinOp, l: &Expr, r: &Expr, span: Span) -> TypeId {
        use BinOp::*;
        let t = self.common_numeric(op, l, r, span);
        if self.is_err(t) {
            return t;
        }
        let ty = self.ty(t).clone();
        match op {
            Lt | Gt | Le | Ge => return TypeId::BOOL,
            Div | Mod if matches!(ty, Ty::Int(_)) => {
                self.error(
                    span,
                    format!("{}: Cannot operate on signed values", op_str(op)),
                );
                return TypeId::ERROR;
            }
            Div | Mod => {
                let raw_negative = |c: &Self, x: &Expr| {
                    c.const_of(x)
                        .and_then(|v| v.as_int())
                        .is_some_and(|v| *v < 0.into())
                };
                if raw_negative(self, l) || raw_negative(self, r) {
                    self.error(
                        span,
                        format!("{}: not defined on negative numbers", op_str(op)),
                    );
                    return TypeId::ERROR;
                }
                if let Some(v) = self.converted_const(r).and_then(|v| v.as_int().cloned()) {
                    if v == 0.into() {
                        self.error(span, format!("{}: Division by zero", op_str(op)));
                        return TypeId::ERROR;
                    }
                    if v < 0.into() {
                        self.error(
                            span,
                            format!("{}: not defined on negative numbers", op_str(op)),
                        );
                        return TypeId::ERROR;
                    }
                }
            }
            AddSat | SubSat | BitAnd | BitOr | BitXor
                if ty == Ty::InfInt
                    && (!(self.is_ctk(l) && self.is_ctk(r)) || matches!(op, AddSat | SubSat)) =>
            {
                self.error(span, format!("{}: Operation cannot be applied to values with unknown width; please specify width explicitly", op_str(op)));
                return TypeId::ERROR;
            }
            _ => {}
        }
        t
    }

    fn check_shift(&mut self, l: &Expr, r: &Expr, span: Span) -> TypeId {
        let lt0 = self.type_of(l);
        let lt = self.decay_enum(l, lt0);
        if !self.out.types.is_integer(lt) {
            let s = self.show(lt);
            self.error(
                l.span,
                format!("left operand of shift must be a numeric type, not {s}"),
            );
            return TypeId::ERROR;
        }
        let rt0 = self.type_of(r);
        let rt = self.decay_enum(r, rt0);
        let rv = self.const_of(r).and_then(|v| v.as_int()).cloned();
        let ok = match self.ty(rt) {
            Ty::Bit(_) => true,
            Ty::InfInt | Ty::Int(_) => rv
                .as_ref()
                .is_some_and(|v| v.sign() != num_bigint::Sign::Minus),
            _ => false,
        };
        if !ok {
            if let Some(v) = rv.filter(|v| v.sign() == num_bigint::Sign::Minus) {
                self.error(
                    r.span,
                    format!("{v}: Shifts with negative amounts are not permitted"),
                );
            } else {
                self.error(r.span, "The right operand of shift must be either an expression of type bit<S> or a compile-time known value that is a non-negative integer");
            }
            return TypeId::ERROR;
        }
        if let Some(v) = rv.filter(|v| *v > num_bigint::BigInt::from(i32::MAX)) {
            // p4c keeps shift amounts in an `int`.
            self.error(r.span, format!("Shift amount too large: {v}"));
            return TypeId::ERROR;
        }
        if lt == TypeId::INF_INT && !self.is_ctk(r) {
            self.error(span, "shift result type is arbitrary-precision int, but right operand is not constant; width of left operand of shift needs to be specified");
            return TypeId::ERROR;
        }
        lt
    }

    fn check_concat(&mut self, l: &Expr, r: &Expr, span: Span) -> TypeId {
        let lt0 = self.type_of(l);
        let rt0 = self.type_of(r);
        if lt0 == TypeId::STRING && rt0 == TypeId::STRING {
            return TypeId::STRING;
        }
        let lt = self.decay_enum(l, lt0);
        let rt = self.decay_enum(r, rt0);
        match (self.out.types.fixed(lt), self.out.types.fixed(rt)) {
            (Some((signed, lw)), Some((_, rw))) => {
                let w = lw.saturating_add(rw);
                if w > MAX_BITS_WIDTH {
                    self.error(span, format!("++: result width {w} is too large"));
                    return TypeId::ERROR;
                }
                if signed {
                    self.out.types.int(w)
                } else {
                    self.out.types.bit(w)
                }
            }
            _ => {
                let (a, b) = (self.show(lt), self.show(rt));
                self.error(
                    span,
                    format!("++: Concatenation not defined on {a} and {b}"),
                );
                TypeId::ERROR
            }
        }
    }

    fn check_equality(&mut self, op: BinOp, l: &Expr, r: &Expr, span: Span) -> TypeId {
        if crate::stmt::has_dots(l) || crate::stmt::has_dots(r) {
            self.error(
                span,
                format!(
                    "Default values {{...}} cannot be used in operation relation {}",
                    op_str(op)
                ),
            );
            return TypeId::ERROR;
        }
        let lt = self.type_of(l);
        let rt = self.type_of(r);
        let numeric =
            |c: &Self, t: TypeId| c.out.types.is_integer(t) || c.out.types.enum_repr(t).is_some();
        if numeric(self, lt) && numeric(self, rt) && lt != rt {
            let t = self.common_numeric(op, l, r, span);
            return if self.is_err(t) { t } else { TypeId::BOOL };
        }
        let (ok, common) = if lt == rt {
            (true, lt)
        } else if self.is_literal_aggregate(r) {
            (self.coerce(r, lt), lt)
        } else if self.is_literal_aggregate(l) {
            (self.coerce(l, rt), rt)
        } else {
            (false, lt)
        };
        let lt = common;
        if !ok {
            let (a, b) = (self.show(lt), self.show(rt));
            self.error(
                span,
                format!("{}: cannot compare values of types {a} and {b}", op_str(op)),
            );
            return TypeId::ERROR;
        }
        let why = match self.ty(lt) {
            Ty::Extern(_) => Some("externs cannot be compared"),
            Ty::TableResult { .. } => Some("table application results cannot be compared"),
            Ty::Var { .. } => Some("values of a type variable cannot be compared"),
            Ty::Void | Ty::Parser(_) | Ty::Control(_) | Ty::Package(_) | Ty::Table { .. } => {
                Some("values of this type cannot be compared")
            }
            Ty::Action { .. } | Ty::State | Ty::TypeName(_) | Ty::ActionRun { .. } => {
                Some("values of this type cannot be compared")
            }
            Ty::StructLit(_) | Ty::List(_) | Ty::ValueSet(_) | Ty::Set(_) => {
                Some("values of this type cannot be compared")
            }
            _ => None,
        };
        if let Some(why) = why {
            self.error(span, format!("{}: {why}", op_str(op)));
            return TypeId::ERROR;
        }
        TypeId::BOOL
    }

    fn is_literal_aggregate(&self, e: &Expr) -> bool {
        matches!(
            e.kind,
            koi_syntax::ast::ExprKind::List { .. }
                | koi_syntax::ast::ExprKind::StructInit { .. }
                | koi_syntax::ast::ExprKind::InvalidHeader
        )
    }

    /// Records the folded value of `l op r` (of result type `ty`) when both are known.
    fn fold_binary_node(&mut self, e: &Expr, op: BinOp, l: &Expr, r: &Expr, ty: TypeId) {
        let (lv, rv) = (self.converted_const(l), self.converted_const(r));
        let (Some(lv), Some(rv)) = (lv, rv) else {
            if self.is_ctk(l) && self.is_ctk(r) {
                self.set_ctk(e);
            }
            return;
        };
        let operand_ty = self
            .out
            .casts
            .get(&l.id)
            .copied()
            .unwrap_or(self.type_of(l));
        let result = if op == BinOp::Concat {
            self.fold_concat_node(&lv, &rv, r, ty)
        } else {
            constant::fold_binary(&self.out.types, op, &lv, &rv, operand_ty)
        };
        match result {
            Ok(Some(v)) => self.set_const(e, v),
            Ok(None) => self.set_ctk(e),
            Err(msg) => self.error(e.span, format!("{}: {msg}", op_str(op))),
        }
    }

    fn fold_concat_node(
        &mut self,
        lv: &Value,
        rv: &Value,
        r: &Expr,
        ty: TypeId,
    ) -> Result<Option<Value>, String> {
        if let (Value::Str(a), Value::Str(b)) = (lv, rv) {
            return Ok(Some(Value::Str(format!("{a}{b}"))));
        }
        let rt = self
            .out
            .casts
            .get(&r.id)
            .copied()
            .unwrap_or(self.type_of(r));
        let (Some((_, rw)), Some(ar)) = (self.out.types.fixed(rt), Arith::of(&self.out.types, ty))
        else {
            return Ok(None);
        };
        let lw = self
            .out
            .types
            .fixed(ty)
            .map(|(_, w)| w.saturating_sub(rw))
            .unwrap_or(0);
        match (lv.as_int(), rv.as_int()) {
            (Some(a), Some(b)) => Ok(Some(constant::fold_concat(a, lw, b, rw, ar))),
            _ => Ok(None),
        }
    }

    pub fn check_ternary(&mut self, e: &Expr, c: &Expr, a: &Expr, b: &Expr) -> TypeId {
        let ct = self.check_expr(c);
        if ct != TypeId::BOOL && !self.is_err(ct) {
            let s = self.show(ct);
            self.error(c.span, format!("Selector of ?: must be bool, not {s}"));
        }
        let at = self.check_expr(a);
        let bt = self.check_expr(b);
        if self.is_err(at) || self.is_err(bt) {
            return TypeId::ERROR;
        }
        // p4c: two `int` branches have no width to take at run time (only a condition known
        // at compile time, which p4c folds first, picks one of them).
        if at == TypeId::INF_INT
            && bt == TypeId::INF_INT
            && self.const_of(c).and_then(Value::as_bool).is_none()
        {
            let show = |c: &Self, x: &Expr| match c.const_of(x).and_then(Value::as_int) {
                Some(v) => v.to_string(),
                None => "an int value".to_string(),
            };
            let (sa, sb) = (show(self, a), show(self, b));
            self.error(
                a.span,
                format!("Width must be specified for at least one of {sa} or {sb}"),
            );
            return TypeId::ERROR;
        }
        let t = self.ternary_type(e, a, b, at, bt);
        if self.is_err(t) {
            return t;
        }
        if let Some(cond) = self.const_of(c).and_then(Value::as_bool) {
            let pick = if cond { a } else { b };
            if let Some(v) = self.converted_const(pick) {
                self.set_const(e, v);
            } else if self.is_ctk(pick) {
                self.set_ctk(e);
            }
        }
        t
    }

    fn ternary_type(&mut self, e: &Expr, a: &Expr, b: &Expr, at: TypeId, bt: TypeId) -> TypeId {
        if at == bt {
            return at;
        }
        let int_a = at == TypeId::INF_INT;
        let int_b = bt == TypeId::INF_INT;
        if int_b && self.out.types.fixed(at).is_some() && self.coerce(b, at) {
            return at;
        }
        if int_a && self.out.types.fixed(bt).is_some() && self.coerce(a, bt) {
            return bt;
        }
        if self.is_literal_aggregate(b) && !self.is_literal_aggregate(a) && self.coerce(b, at) {
            return at;
        }
        if self.is_literal_aggregate(a) && !self.is_literal_aggregate(b) && self.coerce(a, bt) {
            return bt;
        }
        let (x, y) = (self.show(at), self.show(bt));
        self.error(
            e.span,
            format!("?: the branches have different types {x} and {y}"),
        );
        TypeId::ERROR
    }
}
