//! Parser states: declaration (with the built-in `accept` and `reject`, which cannot be
//! defined, and the required `start`), state bodies, transitions to existing states, `select`
//! expressions and their keysets (values, masks, ranges, `default`/`_`, value sets, tuples),
//! and the check that `accept` or `reject` is reachable from `start`.

use crate::checked::Resolution;
use crate::checker::{BodyCx, Checker, Place};
use crate::decls::{DeclId, DeclInfo, DeclKind};
use crate::scope::ScopeKind;
use crate::types::{Ty, TypeId};
use koi_syntax::Span;
use koi_syntax::ast::{Expr, ExprKind, Ident, ParserState, Path, SelectCase, TransitionKind};
use std::collections::{HashMap, HashSet};

impl Checker<'_> {
    pub fn check_parser_states(&mut self, parser: DeclId, pname: &Ident, states: &[ParserState]) {
        self.scoped(ScopeKind::States, |c| {
            for builtin in ["accept", "reject"] {
                c.declare(DeclInfo::new(
                    builtin,
                    Span::DUMMY,
                    DeclKind::State,
                    TypeId::STATE,
                ));
            }
            let mut ok_states: Vec<&ParserState> = Vec::new();
            for s in states {
                let n = &s.name.name;
                if n == "accept" || n == "reject" {
                    c.error(
                        s.name.span,
                        format!(
                            "Invalid parser state: {n} should not be implemented, it is built-in"
                        ),
                    );
                    continue;
                }
                let id = c.new_decl(DeclInfo::new(
                    n,
                    s.name.span,
                    DeclKind::State,
                    TypeId::STATE,
                ));
                if c.bind(id) {
                    ok_states.push(s);
                    if let Some(i) = c.decl_mut(parser) {
                        i.members.push(id);
                    }
                }
            }
            if !states.iter().any(|s| s.name.name == "start") {
                c.error(
                    pname.span,
                    format!("Parser {} has no 'start' state", pname.name),
                );
            }
            let cx = BodyCx {
                place: Place::ParserState,
                ..c.cx.clone()
            };
            c.with_cx(cx, |c| {
                for s in &ok_states {
                    c.scoped(ScopeKind::Block, |c| c.check_state(s));
                }
            });
            if ok_states.iter().any(|s| s.name.name == "start") {
                c.check_reaches_final(pname, &ok_states);
            }
        });
    }

    fn check_state(&mut self, s: &ParserState) {
        self.check_annotations(&s.annotations);
        self.check_stmts(&s.body);
        let Some(t) = &s.transition else { return };
        match &t.kind {
            TransitionKind::Direct(p) => {
                self.resolve_state(p, p.span);
            }
            TransitionKind::Select { exprs, cases } => self.check_select(exprs, cases),
        }
    }

    /// Resolves a transition target; it must name a parser state.
    fn resolve_state(&mut self, p: &Path, span: Span) -> Option<DeclId> {
        let found = self.lookup_path(p).first().copied();
        let Some(d) = found else {
            self.report_not_found(&p.name.name, p.span);
            return None;
        };
        if !matches!(self.decl_kind(d), Some(DeclKind::State)) {
            self.error(span, format!("{}: SelectCase must be state", p.name.name));
            return None;
        }
        Some(d)
    }

    fn check_select(&mut self, exprs: &[Expr], cases: &[SelectCase]) {
        let mut comps: Vec<TypeId> = Vec::new();
        let mut ok = true;
        for e in exprs {
            let t = self.check_expr(e);
            ok &= !self.is_err(t);
            match self.ty(t).clone() {
                Ty::Tuple(ts) if exprs.len() == 1 => comps.extend(ts),
                _ => comps.push(t),
            }
        }
        for (t, e) in comps.clone().iter().zip(exprs.iter().cycle()) {
            if ok && !self.select_component_ok(*t) {
                let s = self.show(*t);
                self.error(
                    e.span,
                    format!("Expression with a component of type '{s}' cannot be used in 'select'"),
                );
                ok = false;
            }
        }
        for c in cases {
            if ok {
                self.check_select_keyset(&c.keyset, &comps);
            }
            self.resolve_state(&c.next, c.span);
        }
    }

    fn select_component_ok(&self, t: TypeId) -> bool {
        matches!(
            self.ty(t),
            Ty::Bit(_) | Ty::Int(_) | Ty::Bool | Ty::Enum(_) | Ty::Error
        )
    }

    /// A select keyset against the select's component types.
    fn check_select_keyset(&mut self, ks: &Expr, comps: &[TypeId]) {
        if matches!(ks.kind, ExprKind::Default | ExprKind::DontCare) {
            self.set_type(ks, TypeId::DONT_CARE);
            return;
        }
        if let Some(vs) = self.value_set_elem(ks) {
            let want = if let [one] = comps {
                *one
            } else {
                self.intern(Ty::Tuple(comps.to_vec()))
            };
            let matches = vs == want
                || self
                    .out
                    .types
                    .agg(vs)
                    .is_some_and(|a| a.fields.iter().map(|f| f.ty).eq(comps.iter().copied()));
            if !matches {
                let (a, b) = (self.show(vs), self.show(want));
                self.error(
                    ks.span,
                    format!("value set of {a} does not match the select type {b}"),
                );
            }
            return;
        }
        match (&ks.kind, comps) {
            (ExprKind::List { items, .. }, _) if items.len() == comps.len() && comps.len() != 1 => {
                for (i, t) in items.iter().zip(comps) {
                    self.check_keyset_elem(i, *t);
                }
            }
            (ExprKind::List { items, .. }, [t]) if items.len() == 1 => {
                self.check_keyset_elem(&items[0], *t)
            }
            (_, [t]) if !matches!(ks.kind, ExprKind::List { .. }) => self.check_keyset_elem(ks, *t),
            _ => {
                let n = match &ks.kind {
                    ExprKind::List { items, .. } => items.len(),
                    _ => 1,
                };
                self.error(
                    ks.span,
                    format!(
                        "keyset has {n} components but the select expression has {}",
                        comps.len()
                    ),
                );
            }
        }
    }

    /// The element type when `e` names a value set.
    fn value_set_elem(&mut self, e: &Expr) -> Option<TypeId> {
        let ExprKind::Path(p) = &e.kind else {
            return None;
        };
        let d = self.lookup_path(p).first().copied()?;
        if !matches!(self.decl_kind(d), Some(DeclKind::ValueSet)) {
            return None;
        }
        self.resolve_to(e, Resolution::Decl(d));
        let t = self.decl_ty(d);
        self.set_type(e, t);
        match self.ty(t) {
            Ty::ValueSet(el) => Some(*el),
            _ => Some(TypeId::ERROR),
        }
    }

    /// One keyset element against the type `t` it is matched with: a value, `_`/`default`,
    /// a mask `v &&& m`, a range `lo .. hi`, or a value set; all compile-time known.
    pub fn check_keyset_elem(&mut self, ks: &Expr, t: TypeId) {
        match &ks.kind {
            ExprKind::Default | ExprKind::DontCare => {
                self.set_type(ks, TypeId::DONT_CARE);
            }
            ExprKind::Mask(v, m) | ExprKind::Range(v, m) => {
                let et = self.out.types.enum_repr(t).unwrap_or(t);
                if self.keyset_op_undefined(et) {
                    // p4c types `&&&` and `..` like arithmetic: on integers only.
                    let op = if matches!(ks.kind, ExprKind::Mask(..)) {
                        "&&&"
                    } else {
                        ".."
                    };
                    let lt = self.check_expr(v);
                    self.check_expr(m);
                    if !self.is_err(lt) {
                        let s = self.show(lt);
                        self.error(
                            v.span,
                            format!("{op}: cannot be applied to an expression of type {s}"),
                        );
                    }
                    let st = self.intern(Ty::Set(t));
                    self.set_type(ks, st);
                    return;
                }
                let ok = self.check_expr_ok(v, et) & self.check_expr_ok(m, et);
                if ok {
                    for x in [v, m] {
                        if !self.is_ctk(x) {
                            self.error(
                                x.span,
                                "keyset bounds and masks must be compile-time constants",
                            );
                        }
                    }
                }
                let st = self.intern(Ty::Set(t));
                self.set_type(ks, st);
            }
            _ => {
                if let Some(vs) = self.value_set_elem(ks) {
                    if vs != t && !self.is_err(vs) {
                        self.mismatch(ks.span, vs, t);
                    }
                    return;
                }
                if self.check_expr_ok(ks, t) && !self.is_ctk(ks) {
                    self.error(ks.span, "keyset expression must be a compile-time constant");
                }
            }
        }
    }

    /// True when masks and ranges cannot match values of type `t` (after a serializable
    /// enum's underlying type): those of `bool`, `error` and enums without one.
    fn keyset_op_undefined(&self, t: TypeId) -> bool {
        matches!(
            self.ty(t),
            Ty::Bool | Ty::ErrorType | Ty::Enum(_) | Ty::String | Ty::MatchKind
        )
    }

    /// Reports a parser whose `start` state can reach neither `accept` nor `reject`.
    fn check_reaches_final(&mut self, pname: &Ident, states: &[&ParserState]) {
        let mut edges: HashMap<&str, Vec<&str>> = HashMap::new();
        for s in states {
            let targets = match s.transition.as_ref().map(|t| &t.kind) {
                None => vec!["reject"],
                Some(TransitionKind::Direct(p)) => vec![p.name.name.as_str()],
                Some(TransitionKind::Select { cases, .. }) => {
                    let mut v: Vec<&str> =
                        cases.iter().map(|c| c.next.name.name.as_str()).collect();
                    let has_default = cases
                        .iter()
                        .any(|c| matches!(c.keyset.kind, ExprKind::Default | ExprKind::DontCare));
                    if !has_default {
                        v.push("reject");
                    }
                    v
                }
            };
            edges.insert(s.name.name.as_str(), targets);
        }
        let mut seen: HashSet<&str> = HashSet::new();
        let mut stack = vec!["start"];
        while let Some(s) = stack.pop() {
            if s == "accept" || s == "reject" {
                return;
            }
            if !seen.insert(s) {
                continue;
            }
            match edges.get(s) {
                Some(ts) => stack.extend(ts.iter().copied()),
                None => return,
            }
        }
        self.error(
            pname.span,
            format!(
                "parser {}: Parser never reaches accept or reject state",
                pname.name
            ),
        );
    }
}
