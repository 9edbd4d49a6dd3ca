//! What p4c's front end removes as unused before P4Info sees the program, where that changes
//! the control plane: dead calls of side-effect-free extern methods, and then the instances
//! nothing else uses, when p4c removes unused instances of their type.
//!
//! - **Dead calls** (p4c's `SimplifyDefUse`, which drops a call statement when none of the
//!   values it writes is read and `SideEffects::hasSideEffect` says it has none): a call
//!   statement of an extern method annotated `@noSideEffects`, whose arguments call nothing,
//!   whose directional arguments are all `out` and plain locations (`v`, `v.f`, `v[2]`) of
//!   local variables that nothing reads. A variable is never read when every reference to it
//!   is the target of an assignment (a plain location) or an `out` argument of such a call.
//!   (p4c's def-use analysis finds more dead calls, values overwritten before being read;
//!   this finds a subset of them, every one of which p4c removes too.) Lowering leaves dead
//!   calls out.
//! - **Unused instances** (p4c's `RemoveUnusedDeclarations`): p4c keeps every extern instance
//!   whose declared type is the extern (`register<bit<8>>(4) r;`, `counter(..) c;`), used or
//!   not, which is why P4Info lists unused ones; an instance whose type is written through a
//!   `typedef` or `type` name (`typedef register<E> Table_t; Table_t(4) t;`) is not seen as
//!   an extern instance there and goes when nothing refers to it (dead calls left out).
//!   Lowering does not create such an instance, so it is no control-plane object.

use std::collections::{HashMap, HashSet};

use koi_sema::{CallTarget, Checked, DeclId, DeclKind, Resolution};
use koi_syntax::ast::{self, Direction, ExprKind, NodeId, StmtKind};

/// What lowering leaves out.
#[derive(Clone, Debug, Default)]
pub struct Removed {
    /// Dead call statements, by the node id of their call expression.
    pub calls: HashSet<NodeId>,
    /// Unused instances p4c removes.
    pub instances: HashSet<DeclId>,
}

/// A call statement that is dead if its `out` targets are never read.
struct Candidate {
    call: NodeId,
    /// The roots of its `out` arguments (`Path` nodes).
    outs: Vec<NodeId>,
    /// The receiver of the method (`x` of `x.m(..)`), when a name.
    receiver: Option<NodeId>,
}

/// Finds what p4c's front end removes from `prog` (see the module documentation).
pub fn removed(prog: &ast::Program, ck: &Checked) -> Removed {
    let pure = pure_methods(prog, ck);
    let mut f = Finder {
        ck,
        pure: &pure,
        candidates: Vec::new(),
        writes: HashSet::new(),
    };
    for d in &prog.decls {
        f.decl(d);
    }
    let mut refs: HashMap<DeclId, Vec<NodeId>> = HashMap::new();
    for (n, r) in &ck.resolutions {
        if let Resolution::Decl(d) = r {
            refs.entry(*d).or_default().push(*n);
        }
    }
    let Finder {
        candidates, writes, ..
    } = f;
    let never_read = |root: NodeId| {
        let Some(Resolution::Decl(v)) = ck.resolutions.get(&root) else {
            return false;
        };
        let is_var = ck.decl(*v).is_some_and(|d| matches!(d.kind, DeclKind::Var));
        is_var
            && refs
                .get(v)
                .is_none_or(|ns| ns.iter().all(|n| writes.contains(n)))
    };
    let mut out = Removed::default();
    let mut dropped_refs = HashSet::new();
    for c in &candidates {
        if c.outs.iter().all(|r| never_read(*r)) {
            out.calls.insert(c.call);
            dropped_refs.extend(c.receiver);
        }
    }
    let typedefs: HashSet<&str> = prog
        .decls
        .iter()
        .filter_map(|d| match &d.kind {
            ast::DeclKind::Typedef { name, .. } | ast::DeclKind::NewType { name, .. } => {
                Some(name.name.as_str())
            }
            _ => None,
        })
        .collect();
    for (id, ty) in instances(prog, ck) {
        let ast::TypeKind::Named(p) = &ty.kind else {
            continue;
        };
        if !typedefs.contains(p.name.name.as_str()) {
            continue;
        }
        let used = refs
            .get(&id)
            .is_some_and(|ns| ns.iter().any(|n| !dropped_refs.contains(n)));
        if !used {
            out.instances.insert(id);
        }
    }
    out
}

/// The extern methods annotated `@noSideEffects`.
fn pure_methods(prog: &ast::Program, ck: &Checked) -> HashSet<DeclId> {
    let mut out = HashSet::new();
    for d in &prog.decls {
        if let ast::DeclKind::Extern { methods, .. } = &d.kind {
            for m in methods {
                if m.annotations.iter().any(|a| a.name.name == "noSideEffects")
                    && let Some(id) = ck.decl_at(m.name.span)
                {
                    out.insert(id);
                }
            }
        }
    }
    out
}

/// The instance declarations (top level, control and parser locals) with their written type.
fn instances<'a>(prog: &'a ast::Program, ck: &Checked) -> Vec<(DeclId, &'a ast::Type)> {
    fn add<'a>(d: &'a ast::Decl, ck: &Checked, out: &mut Vec<(DeclId, &'a ast::Type)>) {
        match &d.kind {
            ast::DeclKind::Instantiation { ty, name, .. } => {
                if let Some(id) = ck.decl_at(name.span) {
                    out.push((id, ty));
                }
            }
            ast::DeclKind::Control { locals, .. } | ast::DeclKind::Parser { locals, .. } => {
                locals.iter().for_each(|l| add(l, ck, out));
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    prog.decls.iter().for_each(|d| add(d, ck, &mut out));
    out
}

struct Finder<'c> {
    ck: &'c Checked,
    pure: &'c HashSet<DeclId>,
    candidates: Vec<Candidate>,
    /// Reference nodes that write their variable without reading it.
    writes: HashSet<NodeId>,
}

impl Finder<'_> {
    fn decl(&mut self, d: &ast::Decl) {
        match &d.kind {
            ast::DeclKind::Control { locals, body, .. } => {
                locals.iter().for_each(|l| self.decl(l));
                self.block(body);
            }
            ast::DeclKind::Parser { locals, states, .. } => {
                locals.iter().for_each(|l| self.decl(l));
                for s in states {
                    s.body.iter().for_each(|st| self.stmt(st));
                }
            }
            ast::DeclKind::Function { body, .. } | ast::DeclKind::Action { body, .. } => {
                self.block(body);
            }
            ast::DeclKind::Instantiation {
                initializer: Some(ds),
                ..
            } => ds.iter().for_each(|x| self.decl(x)),
            _ => {}
        }
    }

    fn block(&mut self, b: &ast::Block) {
        b.stmts.iter().for_each(|s| self.stmt(s));
    }

    fn stmt(&mut self, s: &ast::Stmt) {
        match &s.kind {
            StmtKind::Assign { lhs, op: None, .. } => {
                if let Some(r) = root(lhs) {
                    self.writes.insert(r);
                }
            }
            StmtKind::Call(e) => self.call(e),
            StmtKind::If {
                then, otherwise, ..
            } => {
                self.stmt(then);
                if let Some(o) = otherwise {
                    self.stmt(o);
                }
            }
            StmtKind::Block(b) => self.block(b),
            StmtKind::Switch { cases, .. } => {
                for c in cases {
                    if let Some(b) = &c.body {
                        self.block(b);
                    }
                }
            }
            StmtKind::For {
                init, update, body, ..
            } => {
                init.iter().chain(update).for_each(|x| self.stmt(x));
                self.stmt(body);
            }
            StmtKind::ForIn { body, .. } => self.stmt(body),
            _ => {}
        }
    }

    /// Records a call statement of a `@noSideEffects` method whose arguments call nothing and
    /// whose directional arguments are `out` plain locations.
    fn call(&mut self, e: &ast::Expr) {
        let ExprKind::Call { callee, args, .. } = &e.kind else {
            return;
        };
        let Some(info) = self.ck.calls.get(&e.id) else {
            return;
        };
        let CallTarget::Method { method, .. } = info.target else {
            return;
        };
        if !self.pure.contains(&method) || args.iter().any(|a| calls_something(&a.value)) {
            return;
        }
        let mut outs = Vec::new();
        for (p, arg) in info.params.iter().zip(&info.arg_of_param) {
            match p.dir {
                None | Some(Direction::In) => {}
                Some(Direction::Out) => {
                    let Some(r) = arg.and_then(|i| args.get(i)).and_then(|a| root(&a.value)) else {
                        return;
                    };
                    outs.push(r);
                }
                Some(Direction::InOut) => return,
            }
        }
        self.writes.extend(outs.iter().copied());
        let receiver = match &callee.kind {
            ExprKind::Member(b, _) if matches!(b.kind, ExprKind::Path(_)) => Some(b.id),
            _ => None,
        };
        self.candidates.push(Candidate {
            call: e.id,
            outs,
            receiver,
        });
    }
}

/// The `Path` node at the root of a plain location (`v`, `v.f`, `v[2]`, `v.s[1].f`).
fn root(e: &ast::Expr) -> Option<NodeId> {
    match &e.kind {
        ExprKind::Path(_) => Some(e.id),
        ExprKind::Member(b, _) => root(b),
        ExprKind::Index(b, i) if matches!(i.kind, ExprKind::Int(_)) => root(b),
        _ => None,
    }
}

/// Whether evaluating `e` calls anything.
fn calls_something(e: &ast::Expr) -> bool {
    use ExprKind as K;
    match &e.kind {
        K::Call { .. } => true,
        K::Member(a, _) | K::Unary(_, a) | K::Cast(_, a) => calls_something(a),
        K::Index(a, b) | K::Binary(_, a, b) | K::Mask(a, b) | K::Range(a, b) => {
            calls_something(a) || calls_something(b)
        }
        K::Slice(a, b, c) | K::SliceWidth(a, b, c) | K::Ternary(a, b, c) => {
            calls_something(a) || calls_something(b) || calls_something(c)
        }
        K::List { items, .. } => items.iter().any(calls_something),
        K::StructInit { fields, .. } => fields.iter().any(|(_, x)| calls_something(x)),
        K::Int(_)
        | K::Bool(_)
        | K::Str(_)
        | K::Path(_)
        | K::TypeRef(_)
        | K::DontCare
        | K::Default
        | K::Dots
        | K::InvalidHeader
        | K::Invalid => false,
    }
}
