//! Tables: the `key`, `actions`, `default_action`, `entries` and `size` properties and the
//! consistency rules between them (actions referenced exist and are listed once, bound
//! action arguments, default actions and entry actions agree with the action list, entry
//! keysets match the keys and their match kinds, priorities only where they mean something).

use crate::checked::{CallInfo, CallTarget, Resolution};
use crate::checker::Checker;
use crate::decls::{DeclId, DeclInfo, DeclKind};
use crate::types::{Ty, TypeId};
use koi_syntax::Span;
use koi_syntax::ast::{
    ActionRef, Annotation, Argument, Expr, ExprKind, Ident, KeyElement, TableProperty,
    TablePropertyKind,
};

/// What koi learnt about a table (see `Checked::tables`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableInfo {
    /// Match kinds of the key elements, in order.
    pub match_kinds: Vec<String>,
    /// The actions of the `actions` list, in order.
    pub actions: Vec<DeclId>,
    /// The default action, if one is given.
    pub default_action: Option<DeclId>,
    pub const_default_action: bool,
    /// The `size` property, when given.
    pub size: Option<u64>,
    /// True when the entries are `const entries`.
    pub const_entries: bool,
}

/// An entry of the action list while the table is being checked.
pub(crate) struct Listed {
    pub(crate) decl: DeclId,
    /// Arguments bound in the list, by parameter position.
    pub(crate) bound: Vec<Expr>,
    pub(crate) default_only: bool,
    pub(crate) table_only: bool,
}

pub(crate) struct TableState {
    pub(crate) info: TableInfo,
    pub(crate) listed: Option<Vec<Listed>>,
    pub(crate) key_seen: bool,
    /// True when the table has a `key` property (anywhere).
    pub(crate) has_key: bool,
    pub(crate) key_span: Span,
    pub(crate) key_types: Vec<TypeId>,
    /// Explicit priorities of the entries, in order.
    pub(crate) priorities: Vec<Option<num_bigint::BigInt>>,
    pub(crate) largest_priority_wins: bool,
    pub(crate) priority_delta: num_bigint::BigInt,
}

/// Whether two properties of a table, or two entries of its action list, have the same name
/// (which p4c's parser rejects before any other check of the table).
fn has_duplicate_names(props: &[TableProperty]) -> bool {
    let mut names: Vec<&str> = Vec::new();
    for p in props {
        let name = match &p.kind {
            TablePropertyKind::Key(_) => "key",
            TablePropertyKind::Actions(list) => {
                let mut actions: Vec<(bool, &str)> = Vec::new();
                for r in list {
                    let n = (r.name.global, r.name.name.name.as_str());
                    if actions.contains(&n) {
                        return true;
                    }
                    actions.push(n);
                }
                "actions"
            }
            TablePropertyKind::Entries { .. } => "entries",
            TablePropertyKind::Other { name, .. } => name.name.as_str(),
        };
        if names.contains(&name) {
            return true;
        }
        names.push(name);
    }
    false
}

fn has_annotation(anns: &[Annotation], name: &str) -> bool {
    anns.iter().any(|a| a.name.name == name)
}

impl Checker<'_> {
    pub fn check_table(&mut self, name: &Ident, props: &[TableProperty]) -> DeclId {
        let id = self.new_decl(DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::Table,
            TypeId::ERROR,
        ));
        let ty = self.intern(Ty::Table {
            decl: id,
            name: name.name.clone(),
        });
        if let Some(i) = self.decl_mut(id) {
            i.ty = ty;
        }
        let mut st = TableState {
            info: TableInfo::default(),
            listed: None,
            key_seen: false,
            has_key: props
                .iter()
                .any(|p| matches!(p.kind, TablePropertyKind::Key(_))),
            key_span: name.span,
            key_types: Vec::new(),
            priorities: Vec::new(),
            largest_priority_wins: true,
            priority_delta: 1.into(),
        };
        // p4c gives a table without a `default_action` property `NoAction` before it resolves
        // any name, so a missing or wrong `NoAction` is the table's first error; only the
        // duplicate properties and action-list entries its parser rejects come earlier.
        let has_default = props.iter().any(|p| {
            matches!(&p.kind, TablePropertyKind::Other { name, .. } if name.name == "default_action")
        });
        let duplicates = has_duplicate_names(props);
        if !has_default && !duplicates {
            self.check_no_action(name);
        }
        let mut seen: Vec<(String, Span)> = Vec::new();
        let outer_table = self.defining_table.replace((name.name.clone(), name.span));
        for p in props {
            self.check_annotations(&p.annotations);
            let pname = match &p.kind {
                TablePropertyKind::Key(_) => "key".to_string(),
                TablePropertyKind::Actions(_) => "actions".to_string(),
                TablePropertyKind::Entries { .. } => "entries".to_string(),
                TablePropertyKind::Other { name, .. } => name.name.clone(),
            };
            if let Some((_, prev)) = seen.iter().find(|(n, _)| *n == pname) {
                let prev = *prev;
                self.error_note(
                    p.span,
                    format!("{pname}: Duplicates declaration {pname}"),
                    prev,
                    "previous declaration",
                );
                continue;
            }
            seen.push((pname, p.span));
            self.check_table_property(name, p, &mut st);
        }
        self.defining_table = outer_table;
        if !has_default && duplicates {
            self.check_no_action(name);
        }
        if st.listed.is_none() {
            self.error(
                name.span,
                format!("{}: expected 'actions' property", name.name),
            );
        }
        self.check_priorities(name, &st);
        if let Some(l) = &st.listed {
            st.info.actions = l.iter().map(|x| x.decl).collect();
        }
        if let Some(i) = self.decl_mut(id) {
            i.members = st.info.actions.clone();
        }
        self.out.tables.insert(id, st.info);
        self.bind(id);
        id
    }

    fn check_table_property(&mut self, table: &Ident, p: &TableProperty, st: &mut TableState) {
        match &p.kind {
            TablePropertyKind::Key(keys) => {
                st.key_seen = true;
                st.key_span = p.span;
                for k in keys {
                    let t = self.check_key_element(k);
                    st.key_types.push(t);
                    st.info.match_kinds.push(k.match_kind.name.clone());
                }
            }
            TablePropertyKind::Actions(list) => st.listed = Some(self.check_action_list(list)),
            TablePropertyKind::Entries { is_const, entries } => {
                st.info.const_entries = *is_const;
                self.check_entries(table, p.span, entries, st);
            }
            TablePropertyKind::Other {
                is_const,
                name,
                value,
            } => match name.name.as_str() {
                "default_action" => {
                    st.info.const_default_action = *is_const;
                    st.info.default_action = self.check_default_action(table, value, st);
                }
                "largest_priority_wins" => {
                    self.check_expr(value);
                    match self.const_of(value).and_then(|v| v.as_bool()) {
                        Some(b) => st.largest_priority_wins = b,
                        None => self.error(
                            value.span,
                            "largest_priority_wins must be a boolean constant",
                        ),
                    }
                }
                "priority_delta" => {
                    self.check_expr(value);
                    match self.const_of(value).and_then(|v| v.as_int()).cloned() {
                        Some(d) if d > 0.into() => st.priority_delta = d,
                        _ => self.error(
                            value.span,
                            "priority_delta must be a positive integer constant",
                        ),
                    }
                }
                "size" => {
                    let t = self.check_expr(value);
                    let v = self.const_of(value).and_then(|v| v.as_u64());
                    if !self.is_err(t) && (!self.is_ctk(value) || !self.out.types.is_integer(t)) {
                        self.error(value.span, "size must be a constant numeric expression");
                    }
                    st.info.size = v;
                }
                _ => {
                    self.check_expr(value);
                }
            },
        }
    }

    /// Tables without a `default_action` property get `NoAction`, which must exist and take
    /// no parameters.
    fn check_no_action(&mut self, table: &Ident) {
        let found = self.scopes.lookup_global("NoAction").first().copied();
        match found {
            None => self.error(
                table.span,
                "Declaration of the action NoAction not found; did you include core.p4?",
            ),
            Some(d) => {
                let bad = self
                    .decl(d)
                    .is_some_and(|i| i.kind != DeclKind::Action || !i.params.is_empty());
                if bad {
                    let sp = self.decl_span(d);
                    self.error(
                        sp,
                        "NoAction: Expected an action with no parameters; did you include core.p4?",
                    );
                }
            }
        }
    }

    fn check_key_element(&mut self, k: &KeyElement) -> TypeId {
        self.check_annotations(&k.annotations);
        let t = self.check_expr(&k.expr);
        let ok_type = matches!(
            self.ty(t),
            Ty::Bit(_)
                | Ty::Int(_)
                | Ty::Bool
                | Ty::Enum(_)
                | Ty::ErrorType
                | Ty::NewType { .. }
                | Ty::Error
        );
        if !ok_type {
            // p4c: "Key ... field type must be a scalar type" (bit<W>, int<W>, bool, enums,
            // error, or a new type over them; not varbit).
            let s = self.show(t);
            self.error(k.expr.span, format!("key fields cannot have type {s}"));
        }
        if k.match_kind.name == "lpm"
            && !matches!(
                self.ty(t),
                Ty::Bit(_) | Ty::Int(_) | Ty::NewType { .. } | Ty::Error
            )
        {
            let s = self.show(t);
            self.error(
                k.expr.span,
                format!("lpm keys must be bit strings, not {s}"),
            );
        }
        let mk = self.scopes.lookup(&k.match_kind.name).first().copied();
        match mk {
            Some(d) if matches!(self.decl_kind(d), Some(DeclKind::MatchKindMember)) => {}
            Some(_) => self.error(
                k.match_kind.span,
                format!("{}: not a match_kind", k.match_kind.name),
            ),
            None => self.error(
                k.match_kind.span,
                format!("{}: declaration not found", k.match_kind.name),
            ),
        }
        if !has_annotation(&k.annotations, "name") && !Self::simple_key(&k.expr, 0) {
            self.error(
                k.expr.span,
                "Complex key expression requires a @name annotation",
            );
        }
        t
    }

    /// Key expressions for which a control-plane name can be derived.
    fn simple_key(e: &Expr, depth: u32) -> bool {
        if depth > 64 {
            return false;
        }
        match &e.kind {
            ExprKind::Path(_) | ExprKind::Int(_) => true,
            ExprKind::Binary(koi_syntax::ast::BinOp::BitAnd, l, r) => {
                (Self::simple_key(l, depth + 1) && matches!(r.kind, ExprKind::Int(_)))
                    || (Self::simple_key(r, depth + 1) && matches!(l.kind, ExprKind::Int(_)))
            }
            ExprKind::Member(b, _) | ExprKind::Slice(b, _, _) => Self::simple_key(b, depth + 1),
            ExprKind::Index(b, i) => {
                Self::simple_key(b, depth + 1) && Self::simple_key(i, depth + 1)
            }
            ExprKind::Call { callee, args, .. } => {
                args.is_empty()
                    && matches!(&callee.kind, ExprKind::Member(b, m) if m.name == "isValid" && Self::simple_key(b, depth + 1))
            }
            _ => false,
        }
    }

    fn check_action_list(&mut self, list: &[ActionRef]) -> Vec<Listed> {
        let mut out: Vec<Listed> = Vec::new();
        for r in list {
            self.check_annotations(&r.annotations);
            let Some(d) = self.lookup_path(&r.name).first().copied() else {
                self.report_not_found(&r.name.name.name, r.name.span);
                continue;
            };
            if !matches!(self.decl_kind(d), Some(DeclKind::Action)) {
                self.error(r.name.span, format!("{}: not an action", r.name.name.name));
                continue;
            }
            if let Some(prev) = out.iter().find(|l| l.decl == d) {
                let ps = self.decl_span(prev.decl);
                let n = &r.name.name.name;
                self.error_note(
                    r.name.span,
                    format!("{n}: Duplicates declaration {n}"),
                    ps,
                    "action declared here",
                );
                continue;
            }
            let bound = self.check_bound_args(d, r.args.as_deref().unwrap_or(&[]), r.span);
            out.push(Listed {
                decl: d,
                bound,
                default_only: has_annotation(&r.annotations, "defaultonly"),
                table_only: has_annotation(&r.annotations, "tableonly"),
            });
        }
        out
    }

    /// Arguments bound to an action in the action list: all directional parameters.
    fn check_bound_args(&mut self, d: DeclId, args: &[Argument], span: Span) -> Vec<Expr> {
        let params = self.decl(d).map(|i| i.params.clone()).unwrap_or_default();
        if args.len() > params.len() {
            self.error(span, format!("{}: too many arguments", self.decl_name(d)));
        }
        let mut out = Vec::new();
        for (p, a) in params.iter().zip(args) {
            let (pty, dir) = (
                self.decl_ty(*p),
                self.decl(*p).and_then(|i| i.param()).and_then(|x| x.dir),
            );
            let outer = std::mem::replace(&mut self.in_action_list_args, true);
            self.check_expr_as(&a.value, pty);
            self.in_action_list_args = outer;
            if dir.is_none() {
                // As p4c: the control plane supplies directionless parameters, one entry at a
                // time; the action list binds only the directional ones.
                let n = self.decl_name(*p);
                let ps = self.decl_span(*p);
                self.error_note(
                    a.value.span,
                    format!("parameter {n} cannot be bound: it is set by the control plane"),
                    ps,
                    "parameter declared here",
                );
            } else if matches!(
                dir,
                Some(koi_syntax::ast::Direction::Out | koi_syntax::ast::Direction::InOut)
            ) && !self.is_lvalue(&a.value)
            {
                self.error(a.value.span, "Read-only value used for out/inout parameter");
            }
            out.push(a.value.clone());
        }
        for p in params.iter().skip(args.len()) {
            if self
                .decl(*p)
                .and_then(|i| i.param())
                .is_some_and(|x| x.dir.is_some())
            {
                let n = self.decl_name(*p);
                let ps = self.decl_span(*p);
                self.error_note(
                    span,
                    format!("{}: parameter {n} must be bound", self.decl_name(d)),
                    ps,
                    "parameter declared here",
                );
            }
        }
        out
    }

    fn check_default_action(
        &mut self,
        table: &Ident,
        value: &Expr,
        st: &TableState,
    ) -> Option<DeclId> {
        let Some(listed) = &st.listed else {
            self.error(
                value.span,
                format!(
                    "{} has no action list, so it cannot invoke a default action",
                    table.name
                ),
            );
            return None;
        };
        let d = self.check_action_invocation(value, listed, "default_action")?;
        if listed.iter().any(|l| l.decl == d && l.table_only) {
            self.error(
                value.span,
                "default_action: Action marked with tableonly used as default action",
            );
        }
        Some(d)
    }

    /// `a(args)` (or `a`) as a default action or entry action: `a` must be in the list, the
    /// bound arguments must agree, the others must be compile-time known.
    pub(crate) fn check_action_invocation(
        &mut self,
        value: &Expr,
        listed: &[Listed],
        what: &str,
    ) -> Option<DeclId> {
        let (callee, args): (&Expr, &[Argument]) = match &value.kind {
            ExprKind::Call { callee, args, .. } => (callee, args),
            ExprKind::Path(_) => (value, &[]),
            _ => {
                self.check_expr(value);
                self.error(value.span, format!("{what}: expected an action invocation"));
                return None;
            }
        };
        let ExprKind::Path(p) = &callee.kind else {
            self.check_expr(callee);
            self.error(
                callee.span,
                format!("{what}: Cannot invoke the result of an action call"),
            );
            return None;
        };
        let d = self.lookup_path(p).first().copied();
        let Some(d) = d else {
            self.report_not_found(&p.name.name, p.span);
            return None;
        };
        self.resolve_to(callee, Resolution::Decl(d));
        let Some(l) = listed.iter().find(|l| l.decl == d) else {
            let same_name = listed.iter().any(|l| self.decl_name(l.decl) == p.name.name);
            if same_name {
                self.error(
                    value.span,
                    format!(
                        "{}() and {} refer to different actions",
                        p.name.name, p.name.name
                    ),
                );
            } else {
                self.error(
                    value.span,
                    format!("{}() not present in action list", p.name.name),
                );
            }
            return None;
        };
        self.check_invocation_args(value, d, &l.bound, args);
        Some(d)
    }

    fn check_invocation_args(
        &mut self,
        value: &Expr,
        d: DeclId,
        bound: &[Expr],
        args: &[Argument],
    ) {
        let params = self.decl(d).map(|i| i.params.clone()).unwrap_or_default();
        let aname = self.decl_name(d);
        if args.len() > params.len() {
            self.error(value.span, format!("{aname}: too many arguments"));
        }
        for (i, p) in params.iter().enumerate() {
            let pty = self.decl_ty(*p);
            match (args.get(i), bound.get(i)) {
                (Some(a), Some(b)) => {
                    self.check_expr_as(&a.value, pty);
                    if !self.same_argument(&a.value, b) {
                        self.error(
                            a.value.span,
                            "argument does not match declaration in actions list",
                        );
                    }
                }
                (Some(a), None) => {
                    if self.check_expr_ok(&a.value, pty) && !self.is_ctk(&a.value) {
                        self.error(
                            a.value.span,
                            "action argument must be a compile-time constant",
                        );
                    }
                }
                (None, _) => {
                    let ps = self.decl_span(*p);
                    let pn = self.decl_name(*p);
                    self.error_note(
                        value.span,
                        format!("{aname}(): Parameter {pn} must be bound"),
                        ps,
                        "parameter declared here",
                    );
                }
            }
        }
        let info = CallInfo {
            target: CallTarget::Action(d),
            type_args: Vec::new(),
            params: self.param_tys(&params),
            arg_of_param: (0..params.len())
                .map(|i| (i < args.len()).then_some(i))
                .collect(),
        };
        self.out.calls.insert(value.id, info);
        self.set_type(value, TypeId::VOID);
    }

    /// Whether an argument repeats the one bound in the action list.
    fn same_argument(&self, a: &Expr, b: &Expr) -> bool {
        match (self.converted_const_ref(a), self.converted_const_ref(b)) {
            (Some(x), Some(y)) => x == y,
            _ => expr_equiv(a, b, 0),
        }
    }

    fn converted_const_ref(&self, e: &Expr) -> Option<crate::value::Value> {
        let v = self.const_of(e)?;
        v.as_int()
            .map(|i| crate::value::Value::Int(i.clone()))
            .or_else(|| Some(v.clone()))
    }
}

/// Structural equality of two expressions (names, members, literals), ignoring positions.
fn expr_equiv(a: &Expr, b: &Expr, depth: u32) -> bool {
    if depth > 64 {
        return false;
    }
    match (&a.kind, &b.kind) {
        (ExprKind::Path(x), ExprKind::Path(y)) => {
            x.name.name == y.name.name && x.global == y.global
        }
        (ExprKind::Member(x, n), ExprKind::Member(y, m)) => {
            n.name == m.name && expr_equiv(x, y, depth + 1)
        }
        (ExprKind::Index(x, i), ExprKind::Index(y, j)) => {
            expr_equiv(x, y, depth + 1) && expr_equiv(i, j, depth + 1)
        }
        (ExprKind::Int(x), ExprKind::Int(y)) => x.value == y.value && x.negative == y.negative,
        (ExprKind::Bool(x), ExprKind::Bool(y)) => x == y,
        (ExprKind::Cast(_, x), _) => expr_equiv(x, b, depth + 1),
        (_, ExprKind::Cast(_, y)) => expr_equiv(a, y, depth + 1),
        (ExprKind::List { items: x, .. }, ExprKind::List { items: y, .. }) => {
            all_equiv(x, y, depth)
        }
        (ExprKind::StructInit { fields: x, .. }, ExprKind::StructInit { fields: y, .. }) => {
            x.len() == y.len()
                && x.iter().all(|(n, u)| {
                    y.iter()
                        .any(|(m, v)| n.name == m.name && expr_equiv(u, v, depth + 1))
                })
        }
        (
            ExprKind::Call {
                callee: f, args: x, ..
            },
            ExprKind::Call {
                callee: g, args: y, ..
            },
        ) => {
            expr_equiv(f, g, depth + 1)
                && x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(u, v)| expr_equiv(&u.value, &v.value, depth + 1))
        }
        (ExprKind::Unary(o, x), ExprKind::Unary(p, y)) => o == p && expr_equiv(x, y, depth + 1),
        (ExprKind::Binary(o, x1, x2), ExprKind::Binary(p, y1, y2)) => {
            o == p && expr_equiv(x1, y1, depth + 1) && expr_equiv(x2, y2, depth + 1)
        }
        _ => false,
    }
}

fn all_equiv(x: &[Expr], y: &[Expr], depth: u32) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(u, v)| expr_equiv(u, v, depth + 1))
}
