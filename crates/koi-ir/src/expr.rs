//! Expressions, header references and assignable places.
//!
//! Expressions are pure trees over PHV slots, constants and action parameters: every call with
//! an effect is a statement ([`crate::Stmt`]), so evaluating an expression only reads state.
//! Types are not stored on nodes; they follow from the leaves and operators (see
//! [`crate::verify::type_of`]), and the verifier checks them. Signedness lives in the operators
//! ([`BinOp::ShrS`], [`BinOp::LtS`], [`Cast::Resize`]'s `signed`), not in the types.
//!
//! Out-of-range dynamic stack indices are defined, not undefined: reading a field of a
//! nonexistent element yields 0 of the field's width, its validity is false, and writes to it
//! (assignment, `setValid`, copy) do nothing. In a parser, `extract` into an element out of
//! range (`next` of a full stack, `last` of an empty one, an index at or above the size)
//! rejects with `error.StackOutOfBounds`.

use crate::phv::{HeaderId, Phv, SlotId, StackId};
use crate::value::Bits;

/// A unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `!b` on bool.
    Not,
    /// `~x` on bits.
    BitNot,
    /// `-x` on bits (two's complement, wrapping).
    Neg,
}

/// A binary operator. Operands of arithmetic, bitwise and comparison operators have the same
/// width; shifts take any width of amount; `Concat` adds the widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Unsigned division (P4 has no run-time signed division); `x / 0 == 0`.
    Div,
    /// Unsigned remainder; `x % 0 == 0`.
    Mod,
    /// `|+|` on `bit<W>`.
    AddSatU,
    /// `|+|` on `int<W>`.
    AddSatS,
    /// `|-|` on `bit<W>`.
    SubSatU,
    /// `|-|` on `int<W>`.
    SubSatS,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    /// `>>` on `bit<W>`.
    ShrU,
    /// `>>` on `int<W>`.
    ShrS,
    /// `a ++ b`
    Concat,
    /// Equality on bits, bools or varbits.
    Eq,
    Ne,
    LtU,
    LeU,
    GtU,
    GeU,
    LtS,
    LeS,
    GtS,
    GeS,
    /// `&&` (short-circuit: the right side is not evaluated, so not read, if the left is false).
    And,
    /// `||` (short-circuit).
    Or,
}

impl BinOp {
    /// Whether the result is a bool.
    pub fn is_comparison(self) -> bool {
        use BinOp::*;
        matches!(
            self,
            Eq | Ne | LtU | LeU | GtU | GeU | LtS | LeS | GtS | GeS
        )
    }

    /// The operator's spelling in the printed IR (P4's, with `s`/`u` where P4 depends on
    /// the operand type).
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            AddSatU => "|+|",
            AddSatS => "|+|s",
            SubSatU => "|-|",
            SubSatS => "|-|s",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Shl => "<<",
            ShrU => ">>",
            ShrS => ">>s",
            Concat => "++",
            Eq => "==",
            Ne => "!=",
            LtU => "<",
            LeU => "<=",
            GtU => ">",
            GeU => ">=",
            LtS => "<s",
            LeS => "<=s",
            GtS => ">s",
            GeS => ">=s",
            And => "&&",
            Or => "||",
        }
    }
}

/// A type conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cast {
    /// To `bit<width>`: truncation, or extension with the sign bit if `signed`, else zeros.
    Resize { width: u32, signed: bool },
    /// `bit<1>` to `bool`.
    ToBool,
    /// `bool` to `bit<1>`.
    FromBool,
}

/// A header, named statically or through a stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HeaderRef {
    /// A header instance (a stack element with a constant index is one too).
    Header(HeaderId),
    /// `stack.next`: the element at the next index (parsers only).
    Next(StackId),
    /// `stack.last`: the element before the next index (parsers only).
    Last(StackId),
    /// `stack[index]` with a run-time index (see the module doc for out-of-range indices).
    Index(StackId, Box<Expr>),
}

/// An expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A constant of `bit<W>` (signed constants are stored as their two's complement).
    Const(Bits),
    Bool(bool),
    /// The value of a PHV slot.
    Slot(SlotId),
    /// The `n`th parameter of the enclosing action (control-plane data).
    Param(u32),
    /// `h.isValid()`.
    IsValid(HeaderRef),
    /// Field number `field` (in declaration order) of `stack[index]`, run-time index.
    StackField {
        stack: StackId,
        index: Box<Expr>,
        field: u32,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `e[hi:lo]`
    Slice {
        value: Box<Expr>,
        hi: u32,
        lo: u32,
    },
    Cast(Cast, Box<Expr>),
    /// `cond ? then : otherwise` (only the chosen arm is evaluated).
    Mux {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
}

/// Something that can be assigned.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    Slot(SlotId),
    /// Bits `lo..=hi` of a `bit<W>` slot.
    Slice {
        slot: SlotId,
        hi: u32,
        lo: u32,
    },
    /// Field number `field` of `stack[index]`.
    StackField {
        stack: StackId,
        index: Expr,
        field: u32,
    },
}

impl Expr {
    /// A `bit<width>` constant (`value` truncated to the width).
    pub fn bits(width: u32, value: u128) -> Expr {
        Expr::Const(Bits::from_u128(width, value))
    }

    pub fn slot(slot: SlotId) -> Expr {
        Expr::Slot(slot)
    }

    pub fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
        Expr::Binary(op, Box::new(lhs), Box::new(rhs))
    }

    pub fn unary(op: UnOp, e: Expr) -> Expr {
        Expr::Unary(op, Box::new(e))
    }

    pub fn eq(self, rhs: Expr) -> Expr {
        Expr::binary(BinOp::Eq, self, rhs)
    }

    pub fn cast(self, cast: Cast) -> Expr {
        Expr::Cast(cast, Box::new(self))
    }

    pub fn slice(self, hi: u32, lo: u32) -> Expr {
        Expr::Slice {
            value: Box::new(self),
            hi,
            lo,
        }
    }

    pub fn is_valid(header: HeaderId) -> Expr {
        Expr::IsValid(HeaderRef::Header(header))
    }

    pub fn mux(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
        Expr::Mux {
            cond: Box::new(cond),
            then: Box::new(then),
            otherwise: Box::new(otherwise),
        }
    }

    /// Calls `f` on every direct subexpression.
    pub fn for_each_child(&self, mut f: impl FnMut(&Expr)) {
        match self {
            Expr::Const(_) | Expr::Bool(_) | Expr::Slot(_) | Expr::Param(_) => {}
            Expr::IsValid(h) => {
                if let HeaderRef::Index(_, i) = h {
                    f(i)
                }
            }
            Expr::StackField { index, .. } => f(index),
            Expr::Unary(_, e) | Expr::Slice { value: e, .. } | Expr::Cast(_, e) => f(e),
            Expr::Binary(_, a, b) => {
                f(a);
                f(b)
            }
            Expr::Mux {
                cond,
                then,
                otherwise,
            } => {
                f(cond);
                f(then);
                f(otherwise)
            }
        }
    }

    /// Calls `f` on every slot named by an `Expr::Slot` leaf of the tree.
    pub fn for_each_slot(&self, f: &mut impl FnMut(SlotId)) {
        if let Expr::Slot(s) = self {
            f(*s);
        }
        self.for_each_child(|c| c.for_each_slot(f));
    }

    /// Calls `f` on every slot evaluating this expression may read: slot leaves, plus the
    /// validity bits, stack next indices and stack fields read through header references. A
    /// run-time stack index may read any element, so all are listed: a static
    /// over-approximation (both arms of a `Mux` too). The cache records what a packet actually
    /// read at run time instead; this is for static analyses. Ids not in `phv` are skipped.
    pub fn for_each_read(&self, phv: &Phv, f: &mut impl FnMut(SlotId)) {
        match self {
            Expr::Slot(s) => f(*s),
            Expr::IsValid(h) => {
                let mut headers = Vec::new();
                header_reads(h, phv, &mut |h| headers.push(h), f);
                for h in headers.into_iter().filter_map(|h| phv.headers.get(h)) {
                    f(h.valid);
                }
            }
            Expr::StackField { stack, field, .. } => {
                for &h in phv.stacks.get(*stack).map_or(&[][..], |s| &s.elems) {
                    if let Some(&s) = phv
                        .headers
                        .get(h)
                        .and_then(|h| h.fields.get(*field as usize))
                    {
                        f(s);
                    }
                }
            }
            _ => {}
        }
        self.for_each_child(|c| c.for_each_read(phv, f));
    }
}

/// The headers `h` may denote (passed to `on_header`) and the next-index slot it reads.
fn header_reads(
    h: &HeaderRef,
    phv: &Phv,
    on_header: &mut impl FnMut(HeaderId),
    on_slot: &mut impl FnMut(SlotId),
) {
    match h {
        HeaderRef::Header(h) => on_header(*h),
        HeaderRef::Next(s) | HeaderRef::Last(s) | HeaderRef::Index(s, _) => {
            if let Some(stack) = phv.stacks.get(*s) {
                if !matches!(h, HeaderRef::Index(..)) {
                    on_slot(stack.next_index);
                }
                stack.elems.iter().for_each(|&e| on_header(e));
            }
        }
    }
}

impl From<Bits> for Expr {
    fn from(b: Bits) -> Expr {
        Expr::Const(b)
    }
}

impl Place {
    /// The slot written, when it is static.
    pub fn slot(&self) -> Option<SlotId> {
        match self {
            Place::Slot(s) | Place::Slice { slot: s, .. } => Some(*s),
            Place::StackField { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::EntityId;

    #[test]
    fn slot_reads_are_collected_through_the_tree() {
        let (a, b, c) = (SlotId::new(0), SlotId::new(1), SlotId::new(2));
        let e = Expr::mux(
            Expr::Slot(a).eq(Expr::bits(8, 1)),
            Expr::binary(BinOp::Add, Expr::Slot(b), Expr::Param(0)),
            Expr::StackField {
                stack: StackId::new(0),
                index: Box::new(Expr::Slot(c)),
                field: 0,
            },
        );
        let mut seen = Vec::new();
        e.for_each_slot(&mut |s| seen.push(s));
        assert_eq!(seen, [a, b, c]);
        assert!(BinOp::LtS.is_comparison() && !BinOp::Concat.is_comparison());
    }
}
