//! L-values: which expressions may be assigned to or passed to `out`/`inout` parameters
//! (variables, `out`/`inout` parameters, and fields, elements, slices and `next`/`last` of
//! l-values), and why the others may not.

use crate::checked::Resolution;
use crate::checker::Checker;
use crate::decls::DeclKind;
use koi_syntax::ast::{Direction, Expr, ExprKind};

impl Checker<'_> {
    /// True when `e` (already checked) denotes storage that may be written.
    pub fn is_lvalue(&self, e: &Expr) -> bool {
        self.lvalue_problem(e, 0).is_none()
    }

    /// Checks the target of an assignment, reporting why it cannot be assigned.
    pub fn check_assign_target(&mut self, e: &Expr) -> bool {
        match self.lvalue_problem(e, 0) {
            None => true,
            Some((span, msg)) => {
                self.error(span, msg);
                false
            }
        }
    }

    /// `None` for an l-value; otherwise the offending sub-expression's span and why.
    fn lvalue_problem(&self, e: &Expr, depth: u32) -> Option<(koi_syntax::Span, String)> {
        if self.is_err(self.type_of(e)) || depth > 64 {
            return None;
        }
        let not_target = || {
            Some((
                e.span,
                "Expression cannot be the target of an assignment".to_string(),
            ))
        };
        match &e.kind {
            ExprKind::Path(p) => {
                let d = self.named_decl(e)?;
                let info = self.decl(d)?;
                let name = &p.name.name;
                let why = match &info.kind {
                    DeclKind::Var => return None,
                    DeclKind::Param(pi) => match pi.dir {
                        Some(Direction::Out) | Some(Direction::InOut) => return None,
                        Some(Direction::In) => "it is an 'in' parameter",
                        None => "it is a directionless parameter",
                    },
                    DeclKind::Const => "it is a constant",
                    DeclKind::CtorParam(_) => "it is a constructor parameter",
                    _ => "it is not a variable",
                };
                Some((e.span, format!("cannot assign to '{name}': {why}")))
            }
            ExprKind::Member(base, _) => match self.resolution(e) {
                Some(Resolution::Field(_) | Resolution::StackNext) => {
                    self.lvalue_problem(base, depth + 1)
                }
                _ => not_target(),
            },
            ExprKind::Index(base, _) | ExprKind::Slice(base, _, _) => {
                self.lvalue_problem(base, depth + 1)
            }
            _ => not_target(),
        }
    }
}
