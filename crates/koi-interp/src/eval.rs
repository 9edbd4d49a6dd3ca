//! Expression evaluation over a PHV, exact at any width; and the walk of the PHV bits an
//! evaluation read, for wildcard tracking.
//!
//! Evaluation never fails: a verified IR is well typed, and whatever does not make sense
//! (an id out of range) reads as a zero-width zero. Stack indices out of range read 0 and
//! invalid, as the IR defines.

use crate::phv::Phv;
use koi_ir::{BinOp, Bits, Cast, Expr, HeaderId, HeaderRef, Pipeline, SlotId, UnOp, Value};
use std::cmp::Ordering;

/// What an expression may read besides the PHV: the enclosing action's arguments.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub p: &'a Pipeline,
    pub phv: &'a Phv,
    pub params: &'a [Bits],
}

impl Env<'_> {
    /// The value of `e`.
    pub fn eval(&self, e: &Expr) -> Value {
        match e {
            Expr::Const(b) => Value::Bits(b.clone()),
            Expr::Bool(b) => Value::Bool(*b),
            Expr::Slot(s) => self.phv.value(self.p, *s),
            Expr::Param(i) => {
                Value::Bits(self.params.get(*i as usize).cloned().unwrap_or_default())
            }
            Expr::IsValid(h) => {
                Value::Bool(self.header(h).is_some_and(|h| self.phv.valid(self.p, h)))
            }
            Expr::StackField {
                stack,
                index,
                field,
            } => self.stack_field(*stack, index, *field),
            Expr::Unary(op, a) => unary(*op, self.eval(a)),
            Expr::Binary(op, a, b) => self.binary(*op, a, b),
            Expr::Slice { value, hi, lo } => Value::Bits(self.bits(value).slice(*hi, *lo)),
            Expr::Cast(c, a) => cast(*c, self.eval(a)),
            Expr::Mux {
                cond,
                then,
                otherwise,
            } => match self.truth(cond) {
                true => self.eval(then),
                false => self.eval(otherwise),
            },
        }
    }

    pub fn bits(&self, e: &Expr) -> Bits {
        into_bits(self.eval(e))
    }

    pub fn truth(&self, e: &Expr) -> bool {
        self.eval(e).to_bool()
    }

    /// The value of `e` as an index (saturated to `u64::MAX`).
    pub fn index(&self, e: &Expr) -> u64 {
        self.bits(e).to_u64().unwrap_or(u64::MAX)
    }

    /// The header a reference denotes now (`None` for a stack index out of range).
    pub fn header(&self, h: &HeaderRef) -> Option<HeaderId> {
        let phv = &self.p.phv;
        match h {
            HeaderRef::Header(h) => Some(*h),
            HeaderRef::Next(s) => {
                let st = phv.stacks.get(*s)?;
                let i = self.phv.raw(self.p, st.next_index).to_u64()?;
                st.elems.get(usize::try_from(i).ok()?).copied()
            }
            HeaderRef::Last(s) => {
                let st = phv.stacks.get(*s)?;
                let i = self
                    .phv
                    .raw(self.p, st.next_index)
                    .to_u64()?
                    .checked_sub(1)?;
                st.elems.get(usize::try_from(i).ok()?).copied()
            }
            HeaderRef::Index(s, e) => {
                let st = phv.stacks.get(*s)?;
                let i = usize::try_from(self.index(e)).ok()?;
                st.elems.get(i).copied()
            }
        }
    }

    /// The slot of field `field` of `stack[index]`, if the element exists.
    pub fn stack_field_slot(
        &self,
        stack: koi_ir::StackId,
        index: &Expr,
        field: u32,
    ) -> Option<SlotId> {
        let st = self.p.phv.stacks.get(stack)?;
        let i = usize::try_from(self.index(index)).ok()?;
        let h = self.p.phv.headers.get(*st.elems.get(i)?)?;
        h.fields.get(field as usize).copied()
    }

    fn stack_field(&self, stack: koi_ir::StackId, index: &Expr, field: u32) -> Value {
        match self.stack_field_slot(stack, index, field) {
            Some(s) => self.phv.value(self.p, s),
            None => {
                let w = self
                    .p
                    .phv
                    .stacks
                    .get(stack)
                    .and_then(|st| st.elems.first())
                    .and_then(|h| self.p.phv.headers.get(*h))
                    .and_then(|h| h.fields.get(field as usize))
                    .and_then(|f| self.p.phv.slots.get(*f))
                    .map_or(0, |s| s.width);
                Value::Bits(Bits::zero(w))
            }
        }
    }

    fn binary(&self, op: BinOp, a: &Expr, b: &Expr) -> Value {
        match op {
            BinOp::And => return Value::Bool(self.truth(a) && self.truth(b)),
            BinOp::Or => return Value::Bool(self.truth(a) || self.truth(b)),
            BinOp::Eq => return Value::Bool(self.eval(a) == self.eval(b)),
            BinOp::Ne => return Value::Bool(self.eval(a) != self.eval(b)),
            _ => {}
        }
        let (x, y) = (self.bits(a), self.bits(b));
        arith(op, &x, &y)
    }
}

/// The interpreter's binary operators on bits (what the cached datapath's compiled programs
/// compute too).
pub fn arith(op: BinOp, x: &Bits, y: &Bits) -> Value {
    use BinOp::*;
    let cmp = |o: Ordering, want: &[Ordering]| Value::Bool(want.contains(&o));
    let v = match op {
        Add => x.add(y),
        Sub => x.sub(y),
        Mul => x.mul(y),
        Div => x.udiv(y),
        Mod => x.urem(y),
        AddSatU => x.add_sat_u(y),
        AddSatS => x.add_sat_s(y),
        SubSatU => x.sub_sat_u(y),
        SubSatS => x.sub_sat_s(y),
        BitAnd => x.and(y),
        BitOr => x.or(y),
        BitXor => x.xor(y),
        Shl => x.shl(y.to_shift_amount()),
        ShrU => x.shr_u(y.to_shift_amount()),
        ShrS => x.shr_s(y.to_shift_amount()),
        Concat => x.concat(y),
        LtU => return cmp(x.cmp_u(y), &[Ordering::Less]),
        LeU => return cmp(x.cmp_u(y), &[Ordering::Less, Ordering::Equal]),
        GtU => return cmp(x.cmp_u(y), &[Ordering::Greater]),
        GeU => return cmp(x.cmp_u(y), &[Ordering::Greater, Ordering::Equal]),
        LtS => return cmp(x.cmp_s(y), &[Ordering::Less]),
        LeS => return cmp(x.cmp_s(y), &[Ordering::Less, Ordering::Equal]),
        GtS => return cmp(x.cmp_s(y), &[Ordering::Greater]),
        GeS => return cmp(x.cmp_s(y), &[Ordering::Greater, Ordering::Equal]),
        Eq => return Value::Bool(x == y),
        Ne => return Value::Bool(x != y),
        And => return Value::Bool(!x.is_zero() && !y.is_zero()),
        Or => return Value::Bool(!x.is_zero() || !y.is_zero()),
    };
    Value::Bits(v)
}

/// [`Value::to_bits`] of an owned value, without a copy.
fn into_bits(v: Value) -> Bits {
    match v {
        Value::Bits(b) | Value::Varbit { bits: b, .. } => b,
        Value::Bool(v) => Bits::from_bool(v),
    }
}

/// The interpreter's unary operators.
pub fn unary(op: UnOp, v: Value) -> Value {
    match op {
        UnOp::Not => Value::Bool(!v.to_bool()),
        UnOp::BitNot => Value::Bits(into_bits(v).not()),
        UnOp::Neg => Value::Bits(into_bits(v).neg()),
    }
}

/// The interpreter's casts.
pub fn cast(c: Cast, v: Value) -> Value {
    match c {
        Cast::Resize { width, signed } => Value::Bits(into_bits(v).cast(width, signed)),
        Cast::ToBool => Value::Bool(v.to_bool()),
        Cast::FromBool => Value::Bits(Bits::from_bool(v.to_bool())),
    }
}

impl Env<'_> {
    /// Calls `f(slot, mask)` for the PHV bits evaluating `e` read that bits `mask` of its
    /// value (of `e`'s width) depend on: the slot's bits exactly for a slot, a slice or a
    /// resize of one; all bits of every slot actually read otherwise (following the branch
    /// taken by `&&`, `||` and `?:`, and the stack element actually indexed).
    pub fn reads(&self, e: &Expr, mask: &Bits, f: &mut impl FnMut(SlotId, Bits)) {
        if mask.is_zero() {
            return;
        }
        let slot_width = |s: SlotId| self.p.phv.slots.get(s).map_or(0, |x| x.width);
        match e {
            Expr::Const(_) | Expr::Bool(_) | Expr::Param(_) => {}
            Expr::Slot(s) => self.slot_read(*s, mask, f),
            Expr::Slice { value, lo, .. } => match &**value {
                Expr::Slot(s) => {
                    let m = mask.resize(slot_width(*s)).shl(u64::from(*lo));
                    self.slot_read(*s, &m, f)
                }
                other => self.all_reads(other, f),
            },
            Expr::Cast(Cast::Resize { signed, .. }, a) => match &**a {
                Expr::Slot(s) => {
                    let w = slot_width(*s);
                    let mut m = mask.resize(w);
                    if *signed && mask.width() > w && !mask.slice(mask.width() - 1, w).is_zero() {
                        m.set_bit(w.saturating_sub(1), true);
                    }
                    self.slot_read(*s, &m, f)
                }
                other => self.all_reads(other, f),
            },
            _ => self.all_reads(e, f),
        }
    }

    fn slot_read(&self, s: SlotId, mask: &Bits, f: &mut impl FnMut(SlotId, Bits)) {
        let Some(slot) = self.p.phv.slots.get(s) else {
            return;
        };
        let m = match slot.ty {
            koi_ir::Ty::Bits(_) => mask.resize(slot.width),
            _ => Bits::ones(slot.width),
        };
        if m.is_zero() {
            return;
        }
        f(s, m);
        if let Some(l) = slot.length {
            f(l, Bits::ones(slot_width_of(self.p, l)));
        }
    }

    fn full(&self, s: SlotId, f: &mut impl FnMut(SlotId, Bits)) {
        let w = slot_width_of(self.p, s);
        self.slot_read(s, &Bits::ones(w), f);
    }

    /// Every slot evaluating `e` reads, with full masks.
    pub fn all_reads(&self, e: &Expr, f: &mut impl FnMut(SlotId, Bits)) {
        match e {
            Expr::Const(_) | Expr::Bool(_) | Expr::Param(_) => {}
            Expr::Slot(s) => self.full(*s, f),
            // A slot's bits through a slice or a width cast: only those that reach the value
            // (as the flow-key analysis narrows them under any operator).
            Expr::Slice { value, hi, lo } if matches!(**value, Expr::Slot(_)) => {
                self.reads(e, &Bits::ones(hi.saturating_sub(*lo) + 1), f)
            }
            Expr::Cast(Cast::Resize { width, .. }, a) if matches!(**a, Expr::Slot(_)) => {
                self.reads(e, &Bits::ones(*width), f)
            }
            Expr::IsValid(h) => self.header_reads(h, f, true),
            Expr::StackField {
                stack,
                index,
                field,
            } => {
                self.all_reads(index, f);
                if let Some(s) = self.stack_field_slot(*stack, index, *field) {
                    self.full(s, f);
                }
            }
            Expr::Binary(BinOp::And, a, b) | Expr::Binary(BinOp::Or, a, b) => {
                self.all_reads(a, f);
                let short = match e {
                    Expr::Binary(BinOp::And, ..) => !self.truth(a),
                    _ => self.truth(a),
                };
                if !short {
                    self.all_reads(b, f);
                }
            }
            Expr::Mux {
                cond,
                then,
                otherwise,
            } => {
                self.all_reads(cond, f);
                match self.truth(cond) {
                    true => self.all_reads(then, f),
                    false => self.all_reads(otherwise, f),
                }
            }
            other => other.for_each_child(|c| self.all_reads(c, f)),
        }
    }

    /// The slots reading header reference `h` involves: stack indices, and the header's
    /// validity if `validity`.
    pub fn header_reads(&self, h: &HeaderRef, f: &mut impl FnMut(SlotId, Bits), validity: bool) {
        match h {
            HeaderRef::Next(s) | HeaderRef::Last(s) => {
                if let Some(st) = self.p.phv.stacks.get(*s) {
                    self.full(st.next_index, f);
                }
            }
            HeaderRef::Index(_, e) => self.all_reads(e, f),
            HeaderRef::Header(_) => {}
        }
        if validity && let Some(hd) = self.header(h).and_then(|h| self.p.phv.headers.get(h)) {
            self.full(hd.valid, f);
        }
    }
}

fn slot_width_of(p: &Pipeline, s: SlotId) -> u32 {
    p.phv.slots.get(s).map_or(0, |x| x.width)
}

/// The width of the value an expression yields (for masks of keys).
pub fn value_width(v: &Value) -> u32 {
    match v {
        Value::Bits(b) | Value::Varbit { bits: b, .. } => b.width(),
        Value::Bool(_) => 1,
    }
}
