//! What evaluating an expression reads, statically: every node (slot or action parameter) it
//! may read and, where the read is narrow, which bits of it matter.
//!
//! The narrowing rules are the interpreter's (`Env::reads` in koi-interp): a slot read
//! directly, through a slice (`s[hi:lo]`) or through a width cast (`(bit<W>) s`) needs only
//! the bits that reach the demanded bits of the result; any other operator needs all bits of
//! everything below it. Both arms of a `?:` and every element a run-time stack index may
//! denote are listed: the static over-approximation of what a run reads.

use super::facts::Node;
use koi_ir::entity::EntityId;
use koi_ir::{ActionId, Bits, Cast, Expr, HeaderRef, Pipeline, SlotId, Ty};

/// Calls `f` on every node `e` may read.
pub(crate) fn expr_nodes(
    p: &Pipeline,
    e: &Expr,
    ctx: Option<ActionId>,
    param_base: &[usize],
    f: &mut impl FnMut(Node),
) {
    expr_demand(p, e, ctx, param_base, None, &mut |n, _| f(n));
}

/// Calls `f(node, bits)` for every node `e` may read with the bits of the node that bits
/// `demand` of `e`'s value depend on (`None`: all of them; `demand` `None`: all of `e`).
pub(crate) fn expr_demand(
    p: &Pipeline,
    e: &Expr,
    ctx: Option<ActionId>,
    param_base: &[usize],
    demand: Option<&Bits>,
    f: &mut impl FnMut(Node, Option<Bits>),
) {
    let width = |s: SlotId| p.phv.slots.get(s).map_or(0, |x| x.width);
    match e {
        Expr::Const(_) | Expr::Bool(_) => {}
        Expr::Slot(s) => slot_read(p, *s, demand.cloned(), f),
        Expr::Param(n) => {
            if let Some(a) = ctx
                && let Some(act) = p.actions.get(a)
                && (*n as usize) < act.params.len()
                && let Some(&base) = param_base.get(a.index() as usize)
            {
                f(base + *n as usize, None)
            }
        }
        Expr::Slice { value, hi, lo } if matches!(**value, Expr::Slot(_)) => {
            let Expr::Slot(s) = **value else { return };
            let w = hi.saturating_sub(*lo) + 1;
            let d = demand.map_or_else(|| Bits::ones(w), |d| d.resize(w));
            slot_read(p, s, Some(d.resize(width(s)).shl(u64::from(*lo))), f)
        }
        Expr::Cast(Cast::Resize { width: rw, signed }, a) if matches!(**a, Expr::Slot(_)) => {
            let Expr::Slot(s) = **a else { return };
            let sw = width(s);
            let d = demand.map_or_else(|| Bits::ones(*rw), |d| d.resize(*rw));
            let mut m = d.resize(sw);
            if *signed && *rw > sw && sw > 0 && !d.slice(rw - 1, sw).is_zero() {
                m.set_bit(sw - 1, true);
            }
            slot_read(p, s, Some(m), f)
        }
        Expr::IsValid(h) => {
            if let HeaderRef::Index(_, i) = h {
                expr_demand(p, i, ctx, param_base, None, f);
            }
            let mut slots = Vec::new();
            Expr::IsValid(match h {
                HeaderRef::Index(s, _) => HeaderRef::Index(*s, Box::new(Expr::Bool(false))),
                other => other.clone(),
            })
            .for_each_read(&p.phv, &mut |s| slots.push(s));
            for s in slots {
                slot_read(p, s, None, f);
            }
        }
        Expr::StackField {
            stack,
            index,
            field,
        } => {
            expr_demand(p, index, ctx, param_base, None, f);
            let elems = p.phv.stacks.get(*stack).map_or(&[][..], |s| &s.elems[..]);
            for &h in elems {
                if let Some(&s) = p
                    .phv
                    .headers
                    .get(h)
                    .and_then(|h| h.fields.get(*field as usize))
                {
                    slot_read(p, s, None, f);
                }
            }
        }
        other => other.for_each_child(|c| expr_demand(p, c, ctx, param_base, None, f)),
    }
}

/// A read of bits `mask` of slot `s` (all bits of non-`bit<W>` slots), and of a varbit's
/// length.
fn slot_read(p: &Pipeline, s: SlotId, mask: Option<Bits>, f: &mut impl FnMut(Node, Option<Bits>)) {
    let Some(slot) = p.phv.slots.get(s) else {
        return;
    };
    let m = match (slot.ty, mask) {
        (Ty::Bits(w), Some(m)) => Some(m.resize(w)),
        _ => None,
    };
    if m.as_ref().is_some_and(Bits::is_zero) {
        return;
    }
    f(s.index() as usize, m);
    if let Some(l) = slot.length {
        f(l.index() as usize, None);
    }
}
