//! The lowering context: the pipeline being built, the program and its side tables, the scope
//! stack binding declarations to storage, the code sink of the body being built, and the caches
//! that make each table, action and extern instance exist once per block instance.

use crate::loc::Loc;
use crate::sink::Sink;
use koi_ir::{ActionId, DigestId, ExternId, FieldListId, Pipeline, SlotId, SlotKind, TableId};
use koi_ir::{Ty as IrTy, ValueSetId};
use koi_sema::{Checked, DeclId, DeclInfo, Subst, TypeId, TypeTable, Value};
use koi_syntax::Diagnostic;
use koi_syntax::Span;
use koi_syntax::ast::{self, NodeId};
use std::collections::{HashMap, HashSet};

/// A lowering failure: the diagnostic to report (lowering stops at the first one).
pub type R<T> = Result<T, Box<Diagnostic>>;

/// `koi does not support X yet` at `span`.
pub fn unsupported<T>(span: Span, what: impl std::fmt::Display) -> R<T> {
    Err(Box::new(Diagnostic::error(
        span,
        format!("koi does not support {what} yet"),
    )))
}

/// An internal error (a koi bug or a side table sema did not fill).
pub fn internal<T>(span: Span, what: impl std::fmt::Display) -> R<T> {
    Err(Box::new(Diagnostic::error(
        span,
        format!("internal error in lowering: {what}"),
    )))
}

/// A block (parser or control) instance: its declaration, its control-plane path, its
/// constructor-parameter bindings and type arguments.
#[derive(Clone, Debug)]
pub struct BlockInst {
    pub decl: DeclId,
    pub path: String,
    pub ctor: Vec<(DeclId, Bind)>,
    pub subst: Subst,
}

/// What a declaration is bound to in the current scope.
#[derive(Clone, Debug)]
pub enum Bind {
    /// Storage (variables, parameters, action parameters).
    Loc(Loc),
    /// A compile-time value (constructor parameters, constants).
    Const(Value, TypeId),
    /// An extern instance.
    Extern(ExternId),
    /// A parser or control instance.
    Block(Box<BlockInst>),
    /// A `packet_in` / `packet_out` parameter.
    Packet,
    /// A value set.
    ValueSet(ValueSetId),
}

/// Where `return` goes inside an inlined callable.
#[derive(Clone, Debug)]
pub struct RetTarget {
    pub cont: crate::sink::Pos,
    pub value: Option<Loc>,
}

/// Control flow targets of the code being lowered.
#[derive(Clone, Debug, Default)]
pub struct Flow {
    /// `None`: `return` ends the body (`Terminator::Return`).
    pub ret: Option<RetTarget>,
    /// `(break, continue)` targets of enclosing loops.
    pub loops: Vec<(crate::sink::Pos, crate::sink::Pos)>,
    /// Copy-outs `(argument, parameter)` of the inlined callables being lowered, outermost
    /// first: `exit` performs them (innermost first) before ending the block, as P4 requires.
    pub exit_copies: Vec<(Loc, Loc)>,
}

/// An action lowered with its directional parameters bound to these locations.
pub type Specialised = (Vec<Loc>, ActionId);

/// The AST declarations by [`DeclId`], found through the spans of declaring identifiers.
#[derive(Default)]
pub struct AstIndex<'a> {
    pub decls: HashMap<DeclId, &'a ast::Decl>,
    pub states: HashMap<DeclId, &'a ast::ParserState>,
}

impl<'a> AstIndex<'a> {
    pub fn build(prog: &'a ast::Program, ck: &Checked) -> AstIndex<'a> {
        let mut idx = AstIndex::default();
        for d in &prog.decls {
            idx.add(d, ck);
        }
        idx
    }

    fn add(&mut self, d: &'a ast::Decl, ck: &Checked) {
        if let Some(n) = d.name()
            && let Some(id) = ck.decl_at(n.span)
        {
            self.decls.insert(id, d);
        }
        match &d.kind {
            ast::DeclKind::Control { locals, .. } => {
                locals.iter().for_each(|l| self.add(l, ck));
            }
            ast::DeclKind::Parser { locals, states, .. } => {
                locals.iter().for_each(|l| self.add(l, ck));
                for s in states {
                    if let Some(id) = ck.decl_at(s.name.span) {
                        self.states.insert(id, s);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The lowering of one program.
pub struct Lowerer<'a> {
    pub ck: &'a Checked,
    pub idx: AstIndex<'a>,
    /// A copy of sema's type table, extended by substitutions.
    pub types: TypeTable,
    pub p: Pipeline,
    /// Scopes, innermost last.
    pub frames: Vec<HashMap<DeclId, Bind>>,
    /// The current type-variable substitution (generic blocks and functions).
    pub subst: Subst,
    pub sink: Sink,
    pub flow: Flow,
    /// The control-plane path of the block instance being lowered (`MyIngress.c`).
    pub path: String,
    /// Whether the code being lowered is an action body (action parameters are `Param`s).
    pub in_action: bool,
    pub tables: HashMap<(String, DeclId), TableId>,
    /// The actions of each table by declaration (for `switch` on `action_run`).
    pub table_actions: HashMap<TableId, Vec<(DeclId, ActionId)>>,
    /// Actions by block path and declaration, one per binding of the directional parameters.
    pub actions: HashMap<(String, DeclId), Vec<Specialised>>,
    pub externs: HashMap<(String, DeclId), ExternId>,
    pub value_sets: HashMap<(String, DeclId), ValueSetId>,
    /// Storage of block-instance locals, by instance path and declaration, so that every
    /// application of an instance uses the same slots.
    pub locals: HashMap<(String, DeclId), Loc>,
    /// Control instances whose apply parameters live in storage of their own, the same at
    /// every application (copied in and out), because the instance is applied more than once
    /// with different arguments: its tables and actions are lowered once, so what they read
    /// and write must not depend on which application runs (see [`crate::control`]).
    pub shared_params: HashSet<String>,
    /// That storage, by instance path and parameter index.
    pub param_store: HashMap<(String, usize), Loc>,
    /// What each instance's parameters were bound to at its first application.
    pub param_binds: HashMap<String, Vec<Option<Loc>>>,
    /// Instances applied again with parameters bound differently from their first
    /// application: lowering starts over with them in `shared_params`.
    pub rebind: HashSet<String>,
    pub digests: HashMap<String, DigestId>,
    pub field_lists: HashMap<u32, FieldListId>,
    /// Slot-name counts, to keep names unique.
    pub names: HashMap<String, u32>,
    /// Counter for generated parser state names.
    pub state_seq: u32,
    /// Source position of the reference that makes the next action be created (its order in
    /// P4Info for top-level actions).
    pub ref_pos: u32,
    /// Parameter storage of actions called directly, by block path and declaration.
    pub direct_params: HashMap<(String, DeclId), Vec<Loc>>,
    /// The order in which block instances were first entered, by path.
    pub inst_seq: HashMap<String, u32>,
    /// Sort keys of the actions and tables created (see [`crate::order`]).
    pub action_keys: Vec<crate::order::Key>,
    pub table_keys: Vec<crate::order::Key>,
    /// The user metadata storage (for `@field_list`).
    pub user_meta: Option<(Loc, TypeId)>,
    /// The next-index slot of each union stack, by its key (see [`crate::ustack`]).
    pub union_stacks: HashMap<koi_ir::HeaderId, SlotId>,
    /// Union-stack references resolved to one element while a statement is expanded per
    /// index (see [`crate::ustack`]), innermost last.
    pub union_forced: Vec<(koi_ir::HeaderId, Loc)>,
    /// Dead calls and unused instances p4c's front end removes (see [`crate::unused`]).
    pub removed: crate::unused::Removed,
}

impl<'a> Lowerer<'a> {
    pub fn new(prog: &'a ast::Program, ck: &'a Checked, p: Pipeline) -> Lowerer<'a> {
        Lowerer {
            ck,
            idx: AstIndex::build(prog, ck),
            removed: crate::unused::removed(prog, ck),
            types: ck.types.clone(),
            p,
            frames: vec![HashMap::new()],
            subst: Subst::new(),
            sink: Sink::None,
            flow: Flow::default(),
            path: String::new(),
            in_action: false,
            tables: HashMap::new(),
            table_actions: HashMap::new(),
            actions: HashMap::new(),
            externs: HashMap::new(),
            value_sets: HashMap::new(),
            locals: HashMap::new(),
            shared_params: HashSet::new(),
            param_store: HashMap::new(),
            param_binds: HashMap::new(),
            rebind: HashSet::new(),
            digests: HashMap::new(),
            field_lists: HashMap::new(),
            names: HashMap::new(),
            state_seq: 0,
            user_meta: None,
            inst_seq: HashMap::new(),
            direct_params: HashMap::new(),
            ref_pos: 0,
            action_keys: Vec::new(),
            table_keys: Vec::new(),
            union_stacks: HashMap::new(),
            union_forced: Vec::new(),
        }
    }

    pub fn decl(&self, id: DeclId) -> R<&'a DeclInfo> {
        match self.ck.decl(id) {
            Some(d) => Ok(d),
            None => internal(Span::DUMMY, format!("unknown declaration {id:?}")),
        }
    }

    /// The declaration declared by the identifier `name`.
    pub fn decl_of(&self, name: &ast::Ident) -> R<DeclId> {
        match self.ck.decl_at(name.span) {
            Some(d) => Ok(d),
            None => internal(name.span, format!("no declaration for {}", name.name)),
        }
    }

    pub fn bind(&mut self, d: DeclId, b: Bind) {
        if let Some(f) = self.frames.last_mut() {
            f.insert(d, b);
        }
    }

    pub fn lookup(&self, d: DeclId) -> Option<&Bind> {
        self.frames.iter().rev().find_map(|f| f.get(&d))
    }

    pub fn push_frame(&mut self) {
        self.frames.push(HashMap::new());
    }

    pub fn pop_frame(&mut self) {
        if self.frames.len() > 1 {
            self.frames.pop();
        }
    }

    /// `ty` with the current substitution applied.
    pub fn subst_ty(&mut self, ty: TypeId) -> TypeId {
        if self.subst.is_empty() {
            return ty;
        }
        koi_sema::substitute(&mut self.types, ty, &self.subst.clone())
    }

    /// The type of an expression after its implicit cast, substituted.
    pub fn ty_of(&mut self, e: &ast::Expr) -> R<TypeId> {
        match self.ck.type_after_casts(e.id) {
            Some(t) => Ok(self.subst_ty(t)),
            None => internal(e.span, "expression has no type"),
        }
    }

    /// The natural type of an expression (before its implicit cast), substituted.
    pub fn natural_ty(&mut self, e: &ast::Expr) -> R<TypeId> {
        match self.ck.expr_types.get(&e.id) {
            Some(t) => Ok(self.subst_ty(*t)),
            None => internal(e.span, "expression has no type"),
        }
    }

    pub fn cast_of(&mut self, id: NodeId) -> Option<TypeId> {
        let t = *self.ck.casts.get(&id)?;
        Some(self.subst_ty(t))
    }

    /// A fresh slot named `base` (made unique).
    pub fn new_slot(&mut self, base: &str, ty: IrTy, signed: bool, kind: SlotKind) -> SlotId {
        let name = self.unique_name(base);
        if signed {
            self.p.phv.add_signed_slot(&name, ty.width(), kind)
        } else {
            self.p.phv.add_slot(&name, ty, kind)
        }
    }

    /// `base`, or `base_N` if `base` was used before.
    pub fn unique_name(&mut self, base: &str) -> String {
        let n = self.names.entry(base.to_string()).or_insert(0);
        *n += 1;
        if *n == 1 {
            base.to_string()
        } else {
            format!("{base}_{}", *n - 1)
        }
    }

    /// `path.name` (or `name` at top level).
    pub fn qualify(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        }
    }

    /// The sort key of an object declared at `decl_pos` in the block instance `path`.
    pub fn order_key(&self, path: &str, decl_pos: u32, n: usize) -> crate::order::Key {
        let seq = self.inst_seq.get(path).copied().unwrap_or(0);
        (seq, 1, decl_pos, n as u32)
    }
}
