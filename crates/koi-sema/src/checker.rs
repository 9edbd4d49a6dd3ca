//! The checker's state and the small operations every rule uses: declaring names, reporting
//! diagnostics, recording expression facts, and knowing where in the program checking is.

use crate::CheckOptions;
use crate::checked::{Checked, Resolution};
use crate::decls::{DeclId, DeclInfo, DeclKind};
use crate::scope::{ScopeKind, Scopes};
use crate::types::{Ty, TypeId};
use crate::value::Value;
use koi_syntax::ast::{Expr, NodeId};
use koi_syntax::{Diagnostic, Diagnostics, Span};
use std::collections::{HashMap, HashSet};

/// Maximum nesting of expressions, statements and types the checker descends into.
pub const MAX_DEPTH: u32 = 600;

/// Where the code being checked runs (the spec's table of which calls are allowed where).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    TopLevel,
    /// Parser locals, outside states.
    ParserTop,
    ParserState,
    /// Control locals, outside `apply` (includes table properties).
    ControlTop,
    ControlApply,
    Action,
    Function,
    /// An abstract method implementation in an instance initializer.
    MethodImpl,
}

/// The context of the body being checked.
#[derive(Clone, Debug)]
pub struct BodyCx {
    pub place: Place,
    /// Return type of the enclosing function or method (`None` elsewhere).
    pub ret: Option<TypeId>,
    /// The enclosing parser, control, action, function or method implementation.
    pub owner: Option<DeclId>,
    /// Type of `this` inside abstract method implementations.
    pub this_ty: Option<TypeId>,
    pub loop_depth: u32,
}

impl BodyCx {
    pub fn top() -> BodyCx {
        BodyCx {
            place: Place::TopLevel,
            ret: None,
            owner: None,
            this_ty: None,
            loop_depth: 0,
        }
    }

    pub fn in_parser(&self) -> bool {
        matches!(self.place, Place::ParserTop | Place::ParserState)
    }
}

/// The checker.
pub struct Checker<'o> {
    pub out: Checked,
    pub diags: Diagnostics,
    pub scopes: Scopes,
    pub opts: &'o CheckOptions,
    pub cx: BodyCx,
    pub depth: u32,
    /// Declarations being defined (to report self-references), innermost last.
    pub defining: Vec<DeclId>,
    /// Compile-time known expressions whose value is not known here (constructor parameters).
    pub ctk: HashSet<NodeId>,
    /// The parent assigned to new declarations.
    pub parent: Option<DeclId>,
    /// Where each `error` member was declared.
    pub error_spans: HashMap<String, Span>,
    /// Abstract methods annotated `@optional` (implementations may omit them).
    pub optional_methods: HashSet<DeclId>,
    /// Extern functions annotated `@pure`: calls with compile-time known arguments are
    /// compile-time known.
    pub pure_functions: HashSet<DeclId>,
    /// Control-plane names given so far.
    pub cp_names: HashMap<String, DeclId>,
    /// Explicit `@name`s of value sets and extern instances: p4c checks them in one
    /// namespace (all objects other than tables and actions).
    pub cp_other_names: HashMap<String, DeclId>,
    /// Where each field of a header, struct or union declaration was named, in field order.
    pub field_spans: HashMap<DeclId, Vec<Span>>,
    /// Headers already reported for holding more than one varbit field.
    pub multi_varbit_reported: HashSet<DeclId>,
    /// The table whose properties are being checked (its name and where it is declared).
    pub defining_table: Option<(String, Span)>,
    /// Checking the arguments an action list binds (no table may be applied there).
    pub in_action_list_args: bool,
    /// Errors of rules p4c applies only in its back ends, after its front end has checked the
    /// whole program: reported after every other diagnostic.
    pub late: Vec<Diagnostic>,
}

impl<'o> Checker<'o> {
    pub fn new(opts: &'o CheckOptions) -> Checker<'o> {
        Checker {
            out: Checked::default(),
            diags: Diagnostics::new(),
            scopes: Scopes::new(),
            opts,
            cx: BodyCx::top(),
            depth: 0,
            defining: Vec::new(),
            ctk: HashSet::new(),
            parent: None,
            error_spans: HashMap::new(),
            optional_methods: HashSet::new(),
            pure_functions: HashSet::new(),
            cp_names: HashMap::new(),
            cp_other_names: HashMap::new(),
            field_spans: HashMap::new(),
            multi_varbit_reported: HashSet::new(),
            defining_table: None,
            in_action_list_args: false,
            late: Vec::new(),
        }
    }

    // -- diagnostics ------------------------------------------------------------------------

    pub fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(span, msg));
    }

    /// Reports an error of a rule p4c applies only after its front end (see [`Checker::late`]).
    pub fn late_error(&mut self, span: Span, msg: impl Into<String>) {
        self.late.push(Diagnostic::error(span, msg));
    }

    pub fn error_note(&mut self, span: Span, msg: impl Into<String>, note: Span, nmsg: &str) {
        self.diags
            .push(Diagnostic::error(span, msg).with_note(note, nmsg.to_string()));
    }

    pub fn warning(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::warning(span, msg));
    }

    /// Renders a type for a message.
    pub fn show(&self, ty: TypeId) -> String {
        self.out.types.display(ty)
    }

    // -- types ------------------------------------------------------------------------------

    pub fn ty(&self, id: TypeId) -> &Ty {
        self.out.types.get(id)
    }

    pub fn intern(&mut self, ty: Ty) -> TypeId {
        self.out.types.intern(ty)
    }

    pub fn is_err(&self, id: TypeId) -> bool {
        self.out.types.is_error(id)
    }

    // -- declarations -----------------------------------------------------------------------

    /// Allocates a declaration (not yet visible by name).
    pub fn new_decl(&mut self, mut info: DeclInfo) -> DeclId {
        let id = DeclId(self.out.decls.len() as u32);
        if info.parent.is_none() {
            info.parent = self.parent;
        }
        if !info.span.is_dummy() {
            self.out.decl_at.insert(info.span, id);
        }
        self.out.decls.push(info);
        id
    }

    pub fn decl(&self, id: DeclId) -> Option<&DeclInfo> {
        self.out.decls.get(id.0 as usize)
    }

    pub fn decl_mut(&mut self, id: DeclId) -> Option<&mut DeclInfo> {
        self.out.decls.get_mut(id.0 as usize)
    }

    pub fn decl_kind(&self, id: DeclId) -> Option<&DeclKind> {
        self.decl(id).map(|d| &d.kind)
    }

    pub fn decl_ty(&self, id: DeclId) -> TypeId {
        self.decl(id).map(|d| d.ty).unwrap_or(TypeId::ERROR)
    }

    pub fn decl_name(&self, id: DeclId) -> String {
        self.decl(id).map(|d| d.name.clone()).unwrap_or_default()
    }

    pub fn decl_span(&self, id: DeclId) -> Span {
        self.decl(id).map(|d| d.span).unwrap_or_default()
    }

    /// Makes a declaration visible in the innermost scope, reporting duplicates. Returns false
    /// (and leaves the earlier declaration visible) for a duplicate.
    pub fn bind(&mut self, id: DeclId) -> bool {
        let Some(info) = self.decl(id) else {
            return false;
        };
        let (name, span) = (info.name.clone(), info.span);
        if name.is_empty() {
            return false;
        }
        let existing: Vec<DeclId> = self.scopes.lookup_innermost(&name).to_vec();
        for prev in existing {
            if self.overloads_ok(prev, id) {
                continue;
            }
            let pspan = self.decl_span(prev);
            self.error_note(
                span,
                format!("'{name}' duplicates an earlier declaration of '{name}'"),
                pspan,
                "previous declaration",
            );
            return false;
        }
        self.scopes.insert(&name, id);
        true
    }

    /// Two declarations of the same name may coexist when both are overloadable callables
    /// of one kind (types or functions) that a call can tell apart (different parameter
    /// counts or names).
    fn overloads_ok(&self, a: DeclId, b: DeclId) -> bool {
        let (Some(da), Some(db)) = (self.decl(a), self.decl(b)) else {
            return false;
        };
        if !da.kind.overloadable() || !db.kind.overloadable() {
            return false;
        }
        // p4c's parser keeps one namespace of types and objects: a name cannot be both a
        // type (a parser, control or package) and a function (extern or not) or method.
        if da.kind.is_type() != db.kind.is_type() {
            return false;
        }
        let names =
            |ids: &[DeclId]| -> Vec<String> { ids.iter().map(|p| self.decl_name(*p)).collect() };
        names(&da.params) != names(&db.params) || names(&da.ctor_params) != names(&db.ctor_params)
    }

    /// Allocates and binds a declaration.
    pub fn declare(&mut self, info: DeclInfo) -> DeclId {
        let id = self.new_decl(info);
        self.bind(id);
        id
    }

    /// Runs `f` in a new scope of the given kind.
    pub fn scoped<R>(&mut self, kind: ScopeKind, f: impl FnOnce(&mut Self) -> R) -> R {
        let depth = self.scopes.depth();
        self.scopes.push(kind);
        let r = f(self);
        self.scopes.truncate(depth);
        r
    }

    /// Runs `f` with a different body context, restoring the current one afterwards.
    pub fn with_cx<R>(&mut self, cx: BodyCx, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = std::mem::replace(&mut self.cx, cx);
        let r = f(self);
        self.cx = saved;
        r
    }

    /// Runs `f` with `parent` as the parent of new declarations.
    pub fn with_parent<R>(&mut self, parent: DeclId, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = self.parent.replace(parent);
        let r = f(self);
        self.parent = saved;
        r
    }

    // -- expression facts -------------------------------------------------------------------

    pub fn set_type(&mut self, e: &Expr, ty: TypeId) {
        self.out.expr_types.insert(e.id, ty);
    }

    pub fn type_of(&self, e: &Expr) -> TypeId {
        self.out
            .expr_types
            .get(&e.id)
            .copied()
            .unwrap_or(TypeId::ERROR)
    }

    pub fn resolve_to(&mut self, e: &Expr, r: Resolution) {
        self.out.resolutions.insert(e.id, r);
    }

    pub fn resolution(&self, e: &Expr) -> Option<&Resolution> {
        self.out.resolutions.get(&e.id)
    }

    pub fn set_const(&mut self, e: &Expr, v: Value) {
        self.out.consts.insert(e.id, v);
    }

    pub fn const_of(&self, e: &Expr) -> Option<&Value> {
        self.out.consts.get(&e.id)
    }

    /// Marks an expression as compile-time known (without a known value).
    pub fn set_ctk(&mut self, e: &Expr) {
        self.ctk.insert(e.id);
    }

    /// True for compile-time known expressions (with or without a value known here).
    pub fn is_ctk(&self, e: &Expr) -> bool {
        self.out.consts.contains_key(&e.id) || self.ctk.contains(&e.id)
    }

    pub fn set_cast(&mut self, e: &Expr, ty: TypeId) {
        self.out.casts.insert(e.id, ty);
    }

    /// The declaration an expression names, when it is a plain name.
    pub fn named_decl(&self, e: &Expr) -> Option<DeclId> {
        match self.resolution(e) {
            Some(Resolution::Decl(d)) => Some(*d),
            _ => None,
        }
    }
}
