//! `switch` statements: on a table's `action_run` (labels are actions of the table) or on a
//! value of a bit, int, enum or error type (labels are distinct compile-time constants of that
//! type); one `default` at most, and it must be the last label.

use crate::checked::Resolution;
use crate::checker::Checker;
use crate::decls::{DeclId, DeclKind};
use crate::types::{Ty, TypeId};
use crate::value::Value;
use koi_syntax::Span;
use koi_syntax::ast::{Expr, ExprKind, Stmt, SwitchCase, SwitchLabel};

impl Checker<'_> {
    pub fn check_switch(&mut self, s: &Stmt, expr: &Expr, cases: &[SwitchCase]) {
        self.default_labels(s, cases);
        let et = self.check_expr(expr);
        let table = match self.ty(et) {
            Ty::ActionRun { table } => Some(*table),
            _ => None,
        };
        if table.is_none() && !self.is_err(et) && !self.switchable(et) {
            let t = self.show(et);
            self.error(expr.span, format!("'switch' type can't be {t}"));
        }
        let mut seen: Vec<(Value, Span)> = Vec::new();
        let mut seen_actions: Vec<(DeclId, Span)> = Vec::new();
        for case in cases {
            match &case.label {
                SwitchLabel::Default(_) => {}
                SwitchLabel::Expr(l) => match table {
                    Some(t) => self.action_label(l, t, &mut seen_actions),
                    None if !self.is_err(et) && self.switchable(et) => {
                        self.value_label(l, et, &mut seen)
                    }
                    None => {}
                },
            }
            if let Some(b) = &case.body {
                self.check_block(b);
            }
        }
    }

    /// At most one `default` label, and none before another label: p4c checks this on the
    /// parsed program, before types, and reports it at the `switch`.
    fn default_labels(&mut self, s: &Stmt, cases: &[SwitchCase]) {
        let defaults: Vec<usize> = (0..cases.len())
            .filter(|&i| matches!(cases[i].label, SwitchLabel::Default(_)))
            .collect();
        match defaults[..] {
            [_, _, ..] => self.error(s.span, "switch has multiple 'default' labels"),
            [i] if i + 1 < cases.len() => {
                // The next label is not a default (there is only one).
                let label = match &cases[i + 1].label {
                    SwitchLabel::Expr(Expr {
                        kind: ExprKind::Path(p),
                        ..
                    }) => format!("switch label {}", p.name.name),
                    _ => "a switch label".to_string(),
                };
                self.error(
                    s.span,
                    format!("{label} follows 'default' label, which is not allowed."),
                );
            }
            _ => {}
        }
    }

    fn switchable(&self, t: TypeId) -> bool {
        matches!(
            self.ty(t),
            Ty::Bit(_) | Ty::Int(_) | Ty::Enum(_) | Ty::ErrorType | Ty::InfInt
        )
    }

    fn action_label(&mut self, l: &Expr, table: DeclId, seen: &mut Vec<(DeclId, Span)>) {
        let ExprKind::Path(p) = &l.kind else {
            self.check_expr(l);
            self.error(l.span, "'switch' label must be an action name or 'default'");
            return;
        };
        let found: Vec<DeclId> = self.lookup_path(p).to_vec();
        let Some(&d) = found.first() else {
            self.report_not_found(&p.name.name, p.span);
            return;
        };
        if !matches!(self.decl_kind(d), Some(DeclKind::Action)) {
            self.error(
                l.span,
                format!(
                    "{}: 'switch' label must be an action name or 'default'",
                    p.name.name
                ),
            );
            return;
        }
        self.resolve_to(l, Resolution::Decl(d));
        let ty = self.decl_ty(d);
        self.set_type(l, ty);
        let in_table = self.decl(table).is_some_and(|t| t.members.contains(&d));
        if !in_table {
            let tn = self.decl_name(table);
            self.error(
                l.span,
                format!("{}: not an action of table {tn}", p.name.name),
            );
        }
        if let Some((_, prev)) = seen.iter().find(|(x, _)| *x == d) {
            let prev = *prev;
            self.error_note(
                l.span,
                format!("{}: duplicate case label {}", p.name.name, p.name.name),
                prev,
                "previous label",
            );
            return;
        }
        seen.push((d, l.span));
    }

    fn value_label(&mut self, l: &Expr, et: TypeId, seen: &mut Vec<(Value, Span)>) {
        if !self.check_expr_ok(l, et) {
            return;
        }
        let Some(v) = self.converted_const(l) else {
            self.error(l.span, "'switch' label must be a compile-time constant");
            return;
        };
        let key = match &v {
            Value::Enum {
                member,
                repr: Some(r),
                ..
            } if member.is_empty() => Value::Int(r.clone()),
            Value::Enum { repr: Some(r), .. } => Value::Int(r.clone()),
            _ => v.clone(),
        };
        if let Some((_, prev)) = seen.iter().find(|(x, _)| *x == key) {
            let prev = *prev;
            self.error_note(
                l.span,
                format!("{v}: duplicate case label {v}"),
                prev,
                "previous label",
            );
            return;
        }
        seen.push((key, l.span));
    }
}
