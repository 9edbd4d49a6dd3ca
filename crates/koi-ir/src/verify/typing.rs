//! Types of expressions and places: [`type_of`] computes an expression's type bottom-up and
//! fails on the first ill-typed node. Also usable by consumers that need a width (the code
//! generator) on verified IR, where it cannot fail.

use super::ErrorKind;
use crate::control::ActionParam;
use crate::expr::{BinOp, Cast, Expr, HeaderRef, Place, UnOp};
use crate::ids::{HeaderId, SlotId, StackId};
use crate::phv::{Slot, SlotKind};
use crate::pipeline::Pipeline;
use crate::types::Ty;

/// What an expression's type depends on.
#[derive(Clone, Copy)]
pub struct TypeEnv<'a> {
    pub pipeline: &'a Pipeline,
    /// The parameters of the enclosing action; `None` outside actions.
    pub params: Option<&'a [ActionParam]>,
}

pub(crate) fn expect_bits(ty: Ty) -> Result<u32, ErrorKind> {
    match ty {
        Ty::Bits(w) => Ok(w),
        found => Err(ErrorKind::ExpectedBits { found }),
    }
}

pub(crate) fn expect_bool(ty: Ty) -> Result<(), ErrorKind> {
    match ty {
        Ty::Bool => Ok(()),
        found => Err(ErrorKind::ExpectedBool { found }),
    }
}

pub(crate) fn expect_same(expected: Ty, found: Ty) -> Result<Ty, ErrorKind> {
    if expected == found {
        Ok(found)
    } else {
        Err(ErrorKind::TypeMismatch { expected, found })
    }
}

fn slot<'a>(env: &TypeEnv<'a>, s: SlotId) -> Result<&'a Slot, ErrorKind> {
    env.pipeline
        .phv
        .slots
        .get(s)
        .ok_or(ErrorKind::IdOutOfRange {
            what: "slot",
            id: crate::entity::EntityId::index(s),
        })
}

fn stack_elem_field(env: &TypeEnv, stack: StackId, field: u32) -> Result<Ty, ErrorKind> {
    let phv = &env.pipeline.phv;
    let oor = |what, id| ErrorKind::IdOutOfRange { what, id };
    let st = phv
        .stacks
        .get(stack)
        .ok_or(oor("stack", crate::entity::EntityId::index(stack)))?;
    let h = st.elems.first().and_then(|&h| phv.headers.get(h));
    let f = h
        .and_then(|h| h.fields.get(field as usize))
        .ok_or(oor("stack field", field))?;
    Ok(slot(env, *f)?.ty)
}

/// Checks a header reference: ids in range, index a bits value. `Next`/`Last` are checked
/// for context by the caller.
pub(crate) fn check_header_ref(h: &HeaderRef, env: &TypeEnv) -> Result<(), ErrorKind> {
    let phv = &env.pipeline.phv;
    let stack_ok = |s: StackId| {
        if phv.stacks.contains(s) {
            Ok(())
        } else {
            Err(ErrorKind::IdOutOfRange {
                what: "stack",
                id: crate::entity::EntityId::index(s),
            })
        }
    };
    match h {
        HeaderRef::Header(h) => header_exists(env, *h),
        HeaderRef::Next(s) | HeaderRef::Last(s) => stack_ok(*s),
        HeaderRef::Index(s, i) => {
            stack_ok(*s)?;
            expect_bits(type_of(i, env)?).map(|_| ())
        }
    }
}

pub(crate) fn header_exists(env: &TypeEnv, h: HeaderId) -> Result<(), ErrorKind> {
    if env.pipeline.phv.headers.contains(h) {
        Ok(())
    } else {
        Err(ErrorKind::IdOutOfRange {
            what: "header",
            id: crate::entity::EntityId::index(h),
        })
    }
}

/// The type of `e`, or the first problem found in it.
pub fn type_of(e: &Expr, env: &TypeEnv) -> Result<Ty, ErrorKind> {
    match e {
        Expr::Const(b) => Ok(Ty::Bits(b.width())),
        Expr::Bool(_) => Ok(Ty::Bool),
        Expr::Slot(s) => Ok(slot(env, *s)?.ty),
        Expr::Param(i) => {
            let params = env.params.ok_or(ErrorKind::ParamOutsideAction)?;
            params
                .get(*i as usize)
                .map(|p| p.ty)
                .ok_or(ErrorKind::IdOutOfRange {
                    what: "action parameter",
                    id: *i,
                })
        }
        Expr::IsValid(h) => check_header_ref(h, env).map(|_| Ty::Bool),
        Expr::StackField {
            stack,
            index,
            field,
        } => {
            expect_bits(type_of(index, env)?)?;
            stack_elem_field(env, *stack, *field)
        }
        Expr::Unary(op, a) => {
            let t = type_of(a, env)?;
            match op {
                UnOp::Not => expect_bool(t).map(|_| Ty::Bool),
                UnOp::BitNot | UnOp::Neg => expect_bits(t).map(Ty::Bits),
            }
        }
        Expr::Binary(op, a, b) => binary_type(*op, type_of(a, env)?, type_of(b, env)?),
        Expr::Slice { value, hi, lo } => {
            let w = expect_bits(type_of(value, env)?)?;
            slice_type(w, *hi, *lo)
        }
        Expr::Cast(c, a) => {
            let t = type_of(a, env)?;
            match c {
                Cast::Resize { width, .. } => expect_bits(t).map(|_| Ty::Bits(*width)),
                Cast::ToBool => expect_same(Ty::Bits(1), t).map(|_| Ty::Bool),
                Cast::FromBool => expect_bool(t).map(|_| Ty::Bits(1)),
            }
        }
        Expr::Mux {
            cond,
            then,
            otherwise,
        } => {
            expect_bool(type_of(cond, env)?)?;
            expect_same(type_of(then, env)?, type_of(otherwise, env)?)
        }
    }
}

fn slice_type(width: u32, hi: u32, lo: u32) -> Result<Ty, ErrorKind> {
    if lo <= hi && hi < width {
        Ok(Ty::Bits(hi - lo + 1))
    } else {
        Err(ErrorKind::BadSlice { width, hi, lo })
    }
}

fn binary_type(op: BinOp, a: Ty, b: Ty) -> Result<Ty, ErrorKind> {
    use BinOp::*;
    match op {
        And | Or => {
            expect_bool(a)?;
            expect_bool(b).map(|_| Ty::Bool)
        }
        Eq | Ne => expect_same(a, b).map(|_| Ty::Bool),
        LtU | LeU | GtU | GeU | LtS | LeS | GtS | GeS => {
            expect_bits(a)?;
            expect_same(a, b).map(|_| Ty::Bool)
        }
        Shl | ShrU | ShrS => {
            expect_bits(b)?;
            expect_bits(a).map(Ty::Bits)
        }
        Concat => {
            let (wa, wb) = (expect_bits(a)?, expect_bits(b)?);
            Ok(Ty::Bits(wa.saturating_add(wb)))
        }
        Add | Sub | Mul | Div | Mod | AddSatU | AddSatS | SubSatU | SubSatS | BitAnd | BitOr
        | BitXor => {
            expect_bits(a)?;
            expect_same(a, b)
        }
    }
}

/// The type of a place, checking that it may be assigned.
pub(crate) fn place_type(p: &Place, env: &TypeEnv) -> Result<Ty, ErrorKind> {
    match p {
        Place::Slot(s) => writable(slot(env, *s)?),
        Place::Slice { slot: s, hi, lo } => {
            let w = expect_bits(writable(slot(env, *s)?)?)?;
            slice_type(w, *hi, *lo)
        }
        Place::StackField {
            stack,
            index,
            field,
        } => {
            expect_bits(type_of(index, env)?)?;
            stack_elem_field(env, *stack, *field)
        }
    }
}

/// Whether `p` is a header's validity slot (which a native call's `out`/`inout` header
/// parameter writes back through `setValid`/`setInvalid`).
pub(crate) fn is_validity(p: &Place, env: &TypeEnv) -> bool {
    match p {
        Place::Slot(s) => slot(env, *s).is_ok_and(|s| matches!(s.kind, SlotKind::Validity(_))),
        _ => false,
    }
}

fn writable(s: &Slot) -> Result<Ty, ErrorKind> {
    match s.kind {
        SlotKind::Validity(_) | SlotKind::VarbitLength(_) | SlotKind::NextIndex(_) => {
            Err(ErrorKind::ReadOnlySlot {
                slot: s.name.clone(),
            })
        }
        _ => Ok(s.ty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phv::SlotKind;
    use crate::pipeline::Architecture;

    #[test]
    fn expression_types_follow_operators() {
        let mut p = Pipeline::new(Architecture::V1Model);
        let a = p.phv.add_slot("a", Ty::Bits(8), SlotKind::Metadata);
        let f = p.phv.add_slot("f", Ty::Bool, SlotKind::Local);
        let env = TypeEnv {
            pipeline: &p,
            params: None,
        };
        let cat = Expr::binary(BinOp::Concat, Expr::Slot(a), Expr::bits(4, 1));
        assert_eq!(type_of(&cat, &env), Ok(Ty::Bits(12)));
        assert_eq!(type_of(&cat.clone().slice(11, 4), &env), Ok(Ty::Bits(8)));
        assert_eq!(
            type_of(&cat.slice(12, 4), &env),
            Err(ErrorKind::BadSlice {
                width: 12,
                hi: 12,
                lo: 4
            })
        );
        let lt = Expr::binary(BinOp::LtS, Expr::Slot(a), Expr::bits(8, 3));
        assert_eq!(
            type_of(&Expr::mux(lt, Expr::Slot(f), Expr::Bool(true)), &env),
            Ok(Ty::Bool)
        );
        assert_eq!(
            type_of(
                &Expr::binary(BinOp::Add, Expr::Slot(a), Expr::bits(9, 1)),
                &env
            ),
            Err(ErrorKind::TypeMismatch {
                expected: Ty::Bits(8),
                found: Ty::Bits(9)
            })
        );
        assert_eq!(
            type_of(&Expr::Param(0), &env),
            Err(ErrorKind::ParamOutsideAction)
        );
        let shift = Expr::binary(BinOp::Shl, Expr::Slot(a), Expr::bits(3, 1));
        assert_eq!(type_of(&shift, &env), Ok(Ty::Bits(8)));
    }
}
