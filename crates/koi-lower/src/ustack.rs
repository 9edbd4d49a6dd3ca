//! Stacks of header unions (`U[N] u` with `U` a `header_union`).
//!
//! koi's IR has stacks of headers only ([`koi_ir::Stack`]); a union stack is lowered as its
//! `N` unions (a [`Loc::Struct`] of [`Loc::Union`]s, as for a constant index) plus a `bit<32>`
//! slot for its next index, `u.$next`. What needs a run-time index is expanded into a branch
//! on that index (p4c's frontend does the same for stacks it cannot index at run time):
//!
//! - `u.next.m` and `u.last.m` (parsers): the element at the next index, or the one before;
//!   `pkt.extract(u.next.m)` extracts into that element's member `m` (invalidating the
//!   union's other members) and then sets the next index past it.
//! - `u[i]` with `i` not a constant: the element at `i`.
//!
//! An `Assign` or call statement that names such an element is lowered once per index `k`
//! under `if (index == k)`, with the reference resolved to element `k`. Past the last
//! element, the statement follows the IR's rules for stack indices out of range (see
//! [`koi_ir::expr`]): an `extract` rejects with `error.StackOutOfBounds`; other statements
//! run on an invalid scratch union, so reads see invalid headers and writes are lost.
//! `u.lastIndex` is `next - 1`, `u.size` is `N`; `push_front` and `pop_front` shift the unions
//! and move the next index like a header stack's.

use crate::ctx::{Lowerer, R, internal, unsupported};
use crate::loc::{Alloc, Loc, STy, bin};
use koi_ir::{BinOp, Expr, HeaderId, Place, SlotId, SlotKind, Stmt, Ty as IrTy};
use koi_sema::Resolution;
use koi_sema::TypeId;
use koi_sema::types::{AggKind, Ty};
use koi_syntax::Span;
use koi_syntax::ast::{self, ExprKind, StmtKind};

/// A union stack's storage.
#[derive(Clone, Debug)]
pub struct UnionStack {
    /// Identifies the stack: the first member header of its first element.
    pub key: HeaderId,
    /// The next-index slot (`bit<32>`).
    pub next: SlotId,
    /// The elements, each a [`Loc::Union`].
    pub elems: Vec<Loc>,
    /// The element (union) type.
    pub elem_ty: TypeId,
}

/// How a statement indexes a union stack at run time.
#[derive(Clone, Debug)]
enum Index<'e> {
    Next,
    Last,
    Expr(&'e ast::Expr),
}

/// A run-time reference into a union stack found in a statement.
#[derive(Clone, Debug)]
struct DynRef<'e> {
    stack: UnionStack,
    index: Index<'e>,
}

impl Lowerer<'_> {
    /// Allocates the next-index slot of a union stack named `name` whose elements are
    /// `elems`; other stacks of non-headers have none.
    pub fn add_union_stack(&mut self, name: &str, elem: TypeId, elems: &[Loc], how: Alloc) {
        let is_union = matches!(self.types.get(elem), Ty::Agg(a) if a.kind == AggKind::HeaderUnion);
        let Some(Loc::Union(ms, _)) = elems.first() else {
            return;
        };
        let Some(&key) = ms.first() else {
            return;
        };
        if !is_union {
            return;
        }
        let next = self.new_slot(&format!("{name}.$next"), IrTy::Bits(32), false, how.kind());
        self.union_stacks.insert(key, next);
    }

    /// The union stack stored at `loc`, if it is one.
    pub fn union_stack_of(&self, loc: &Loc) -> Option<UnionStack> {
        let Loc::Struct(fs, ty) = loc else {
            return None;
        };
        let Ty::Stack { elem, .. } = self.types.get(*ty) else {
            return None;
        };
        let Some((_, Loc::Union(ms, _))) = fs.first() else {
            return None;
        };
        let key = *ms.first()?;
        let next = *self.union_stacks.get(&key)?;
        Some(UnionStack {
            key,
            next,
            elems: fs.iter().map(|(_, l)| l.clone()).collect(),
            elem_ty: *elem,
        })
    }

    /// The element of union stack `s` that the statement being lowered resolved its run-time
    /// reference to (see the module doc).
    pub fn union_stack_elem(&self, s: &UnionStack, span: Span) -> R<Loc> {
        match self.union_forced.iter().rev().find(|(k, _)| *k == s.key) {
            Some((_, l)) => Ok(l.clone()),
            None => unsupported(span, "a run-time index into a header union stack here"),
        }
    }

    /// `u.lastIndex` of a union stack.
    pub fn union_stack_last_index(&self, s: &UnionStack) -> Loc {
        Loc::Value(
            bin(BinOp::Sub, Expr::Slot(s.next), Expr::bits(32, 1)),
            STy::bits(32),
        )
    }

    /// `push_front(count)` (`push`) or `pop_front(count)` on a union stack.
    pub fn union_stack_shift(
        &mut self,
        s: &UnionStack,
        count: u64,
        push: bool,
        span: Span,
    ) -> R<()> {
        let n = s.elems.len() as u64;
        let c = count.min(n) as usize;
        let n = n as usize;
        if push {
            for i in (0..n).rev() {
                if i >= c {
                    self.copy(&s.elems[i], &s.elems[i - c], span)?;
                } else {
                    self.invalidate(&s.elems[i]);
                }
            }
        } else {
            for i in 0..n {
                if i + c < n {
                    self.copy(&s.elems[i], &s.elems[i + c], span)?;
                } else {
                    self.invalidate(&s.elems[i]);
                }
            }
        }
        // next = push ? min(next + c, n) : max(next - c, 0), in 33 bits against overflow.
        let next = Expr::Slot(s.next).cast(koi_ir::Cast::Resize {
            width: 33,
            signed: false,
        });
        let (c33, n33) = (Expr::bits(33, c as u128), Expr::bits(33, n as u128));
        let moved = if push {
            let sum = bin(BinOp::Add, next, c33);
            Expr::Mux {
                cond: Box::new(bin(BinOp::LtU, sum.clone(), n33.clone())),
                then: Box::new(sum),
                otherwise: Box::new(n33),
            }
        } else {
            Expr::Mux {
                cond: Box::new(bin(BinOp::LtU, next.clone(), c33.clone())),
                then: Box::new(Expr::bits(33, 0)),
                otherwise: Box::new(bin(BinOp::Sub, next, c33)),
            }
        };
        let value = moved.cast(koi_ir::Cast::Resize {
            width: 32,
            signed: false,
        });
        self.emit(Stmt::assign(Place::Slot(s.next), value));
        Ok(())
    }

    /// Lowers `s` if it refers to a union stack element by a run-time index (see the module
    /// doc); `Ok(false)` when it does not.
    pub fn union_stack_stmt(&mut self, s: &ast::Stmt) -> R<bool> {
        if self.union_stacks.is_empty() {
            return Ok(false);
        }
        let exprs: Vec<&ast::Expr> = match &s.kind {
            StmtKind::Assign { lhs, rhs, .. } => vec![lhs, rhs],
            StmtKind::Call(e) => vec![e],
            _ => return Ok(false),
        };
        let mut found = None;
        for e in exprs {
            if let Some(r) = self.find_dyn_ref(e)? {
                found = Some(r);
                break;
            }
        }
        let Some(r) = found else {
            return Ok(false);
        };
        let extract = is_extract(s) && self.in_parser();
        self.dispatch(r, extract, s.span, &mut |this| this.stmt(s))?;
        Ok(true)
    }

    /// The value of the scalar expression `e` (a condition, a select key) if it refers to a
    /// union stack element by a run-time index: computed into a temporary by the expansion
    /// of the module doc. `None` when it does not.
    pub fn union_stack_scalar(&mut self, e: &ast::Expr) -> R<Option<(Expr, STy)>> {
        if self.union_stacks.is_empty() {
            return Ok(None);
        }
        let Some(r) = self.find_dyn_ref(e)? else {
            return Ok(None);
        };
        let mut tmp: Option<(SlotId, STy)> = None;
        self.dispatch(r, false, e.span, &mut |this| {
            let (x, t) = this.rvalue_s(e)?;
            let slot = match tmp {
                Some((s, _)) => s,
                None => {
                    let s = this.new_slot("$ustack_value", t.ty, t.signed, SlotKind::Temp);
                    tmp = Some((s, t));
                    s
                }
            };
            this.emit(Stmt::assign(Place::Slot(slot), x));
            Ok(())
        })?;
        match tmp {
            Some((s, t)) => Ok(Some((Expr::Slot(s), t))),
            None => internal(e.span, "a union stack of no element"),
        }
    }

    /// Runs `body` once per element of `r`'s stack under `if (index == k)`, with the
    /// reference resolved to element `k`, then once past the end (see the module doc).
    fn dispatch(
        &mut self,
        r: DynRef<'_>,
        extract: bool,
        span: Span,
        body: &mut dyn FnMut(&mut Self) -> R<()>,
    ) -> R<()> {
        let (index, width) = match r.index {
            Index::Next => (Expr::Slot(r.stack.next), 32),
            Index::Last => (
                bin(BinOp::Sub, Expr::Slot(r.stack.next), Expr::bits(32, 1)),
                32,
            ),
            Index::Expr(e) => {
                let (x, t) = self.rvalue_s(e)?;
                match t.ty {
                    IrTy::Bits(w) => (x, w),
                    _ => return internal(e.span, "a stack index that is not a number"),
                }
            }
        };
        let advance = extract && matches!(r.index, Index::Next);
        let end = self.new_pos("ustack");
        let n = r.stack.elems.len();
        for (k, elem) in r.stack.elems.iter().enumerate() {
            if width < 64 && (k as u128) >> width != 0 {
                break;
            }
            let cond = bin(BinOp::Eq, index.clone(), Expr::bits(width, k as u128));
            let (then, otherwise) = self.branch(cond);
            self.switch_to(then);
            self.union_forced.push((r.stack.key, elem.clone()));
            let res = body(self);
            self.union_forced.pop();
            res?;
            if advance {
                self.emit(Stmt::assign(
                    Place::Slot(r.stack.next),
                    Expr::bits(32, k as u128 + 1),
                ));
            }
            self.jump(end);
            self.switch_to(otherwise);
        }
        if extract {
            let error = self.stack_out_of_bounds(span)?;
            self.emit(Stmt::Verify {
                cond: Expr::Bool(false),
                error,
            });
        } else if n > 0 {
            let scratch = self.alloc("$ustack_oob", r.stack.elem_ty, Alloc::Temp, span)?;
            self.invalidate(&scratch);
            self.union_forced.push((r.stack.key, scratch));
            let res = body(self);
            self.union_forced.pop();
            res?;
        }
        self.jump(end);
        self.switch_to(end);
        Ok(())
    }

    fn stack_out_of_bounds(&self, span: Span) -> R<u32> {
        match self.p.errors.iter().position(|e| e == "StackOutOfBounds") {
            Some(i) => Ok(i as u32),
            None => internal(span, "error.StackOutOfBounds is not declared"),
        }
    }

    /// The first run-time reference into a union stack in `e` that is not resolved yet.
    fn find_dyn_ref<'e>(&mut self, e: &'e ast::Expr) -> R<Option<DynRef<'e>>> {
        match &e.kind {
            ExprKind::Member(base, _) => {
                let res = self.ck.resolutions.get(&e.id).cloned();
                if matches!(res, Some(Resolution::StackNext | Resolution::StackLast))
                    && let Some(stack) = self.pure_union_stack(base)?
                {
                    let index = if matches!(res, Some(Resolution::StackNext)) {
                        Index::Next
                    } else {
                        Index::Last
                    };
                    return Ok(Some(DynRef { stack, index }));
                }
                self.find_dyn_ref(base)
            }
            ExprKind::Index(a, i) => {
                if self.const_value(i).is_none()
                    && let Some(stack) = self.pure_union_stack(a)?
                {
                    return Ok(Some(DynRef {
                        stack,
                        index: Index::Expr(i),
                    }));
                }
                match self.find_dyn_ref(a)? {
                    Some(r) => Ok(Some(r)),
                    None => self.find_dyn_ref(i),
                }
            }
            ExprKind::Slice(a, b, c)
            | ExprKind::SliceWidth(a, b, c)
            | ExprKind::Ternary(a, b, c) => {
                for x in [a, b, c] {
                    if let Some(r) = self.find_dyn_ref(x)? {
                        return Ok(Some(r));
                    }
                }
                Ok(None)
            }
            ExprKind::Call { callee, args, .. } => {
                if let Some(r) = self.find_dyn_ref(callee)? {
                    return Ok(Some(r));
                }
                for a in args {
                    if let Some(r) = self.find_dyn_ref(&a.value)? {
                        return Ok(Some(r));
                    }
                }
                Ok(None)
            }
            ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => self.find_dyn_ref(a),
            ExprKind::Binary(_, a, b) | ExprKind::Mask(a, b) | ExprKind::Range(a, b) => {
                match self.find_dyn_ref(a)? {
                    Some(r) => Ok(Some(r)),
                    None => self.find_dyn_ref(b),
                }
            }
            ExprKind::List { items, .. } => {
                for x in items {
                    if let Some(r) = self.find_dyn_ref(x)? {
                        return Ok(Some(r));
                    }
                }
                Ok(None)
            }
            ExprKind::StructInit { fields, .. } => {
                for (_, x) in fields {
                    if let Some(r) = self.find_dyn_ref(x)? {
                        return Ok(Some(r));
                    }
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// The union stack `e` names, if `e` is a plain reference to one (a name, fields and
    /// constant indices: lowering it emits nothing) not already resolved by an enclosing
    /// expansion.
    fn pure_union_stack(&mut self, e: &ast::Expr) -> R<Option<UnionStack>> {
        if !self.is_plain_ref(e) {
            return Ok(None);
        }
        let ty = self.natural_ty(e)?;
        let Ty::Stack { .. } = self.types.get(ty) else {
            return Ok(None);
        };
        let loc = self.value(e)?;
        Ok(self
            .union_stack_of(&loc)
            .filter(|s| !self.union_forced.iter().any(|(k, _)| *k == s.key)))
    }

    fn is_plain_ref(&self, e: &ast::Expr) -> bool {
        match &e.kind {
            ExprKind::Path(_) => true,
            ExprKind::Member(b, _) => {
                matches!(self.ck.resolutions.get(&e.id), Some(Resolution::Field(_)))
                    && self.is_plain_ref(b)
            }
            ExprKind::Index(b, i) => self.const_value(i).is_some() && self.is_plain_ref(b),
            _ => false,
        }
    }
}

/// Whether `s` is a call of a method named `extract`.
fn is_extract(s: &ast::Stmt) -> bool {
    let StmtKind::Call(e) = &s.kind else {
        return false;
    };
    let ExprKind::Call { callee, .. } = &e.kind else {
        return false;
    };
    matches!(&callee.kind, ExprKind::Member(_, m) if m.name == "extract")
}
