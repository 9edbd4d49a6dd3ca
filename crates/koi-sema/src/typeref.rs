//! Resolution of written types (`ast::Type`) to [`TypeId`]s: base types with compile-time
//! widths, named and specialised types, stacks, tuples and lists.

use crate::checker::{Checker, MAX_DEPTH};
use crate::decls::{DeclId, DeclKind};
use crate::generics::{Subst, substitute};
use crate::types::{MAX_BITS_WIDTH, MAX_STACK_SIZE, MAX_WIDTH, Ty, TypeId};
use koi_syntax::Span;
use koi_syntax::ast::{Expr, Path, Type, TypeKind};
use num_bigint::BigInt;
use num_traits::Signed;

/// How a generic declaration named without type arguments is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generic {
    /// Type arguments are required.
    Require,
    /// The type arguments will be inferred (constructor calls, instantiations): the type's own
    /// type variables are left in place.
    Infer,
}

impl Checker<'_> {
    /// Resolves a type written in a declaration.
    pub fn resolve_type(&mut self, t: &Type) -> TypeId {
        self.resolve_type_g(t, Generic::Require)
    }

    pub fn resolve_type_g(&mut self, t: &Type, g: Generic) -> TypeId {
        if self.depth > MAX_DEPTH {
            self.error(t.span, "type is nested too deeply");
            return TypeId::ERROR;
        }
        self.depth += 1;
        let r = self.resolve_type_inner(t, g);
        self.depth -= 1;
        r
    }

    fn resolve_type_inner(&mut self, t: &Type, g: Generic) -> TypeId {
        match &t.kind {
            TypeKind::Bool => TypeId::BOOL,
            TypeKind::Error => {
                if self.error_spans.is_empty() {
                    self.error(
                        t.span,
                        "error: declaration not found (no error declaration precedes this use)",
                    );
                    return TypeId::ERROR;
                }
                TypeId::ERROR_TYPE
            }
            TypeKind::MatchKind => TypeId::MATCH_KIND,
            TypeKind::String => TypeId::STRING,
            TypeKind::Void => TypeId::VOID,
            TypeKind::DontCare => TypeId::DONT_CARE,
            TypeKind::InfInt => TypeId::INF_INT,
            TypeKind::Invalid => TypeId::ERROR,
            TypeKind::Bit(None) => self.out.types.bit(1),
            TypeKind::Bit(Some(w)) => self.sized_type(w, t.span, Ty::Bit),
            TypeKind::Int(w) => self.sized_type(w, t.span, Ty::Int),
            TypeKind::Varbit(w) => self.sized_type(w, t.span, Ty::Varbit),
            TypeKind::Named(p) => self.named_type(p, g),
            TypeKind::Specialized { base, args } => self.specialized_type(base, args, t.span),
            TypeKind::Stack { elem, size } => self.stack_type(elem, size),
            TypeKind::Tuple(ts) => self.tuple_type(ts),
            TypeKind::List(e) => {
                let e = self.resolve_type_arg(e);
                if e == TypeId::VOID {
                    self.error(t.span, "list elements cannot have type void");
                    return TypeId::ERROR;
                }
                self.intern(Ty::List(e))
            }
        }
    }

    /// Resolves a type argument (where `_` is allowed).
    pub fn resolve_type_arg(&mut self, t: &Type) -> TypeId {
        self.resolve_type_g(t, Generic::Require)
    }

    /// Evaluates a width expression and builds `bit<W>`, `int<W>` or `varbit<W>`.
    fn sized_type(&mut self, w: &Expr, span: Span, mk: fn(u32) -> Ty) -> TypeId {
        let Some(v) = self.const_int(w, "a type width") else {
            return TypeId::ERROR;
        };
        let kind = mk(0);
        if v.is_negative() {
            let what = match kind {
                Ty::Varbit(_) => "invalid type size",
                _ => "type width cannot be negative",
            };
            self.error(w.span, format!("{v}: {what}"));
            return TypeId::ERROR;
        }
        let max = match kind {
            Ty::Varbit(_) => MAX_WIDTH,
            _ => MAX_BITS_WIDTH,
        };
        let Some(n) = u32::try_from(&v).ok().filter(|n| *n <= max) else {
            self.error(
                w.span,
                format!(
                    "{v}: this implementation does not support bitstrings this large (max {max})"
                ),
            );
            return TypeId::ERROR;
        };
        if n == 0 && matches!(kind, Ty::Int(_)) {
            self.error(span, "Width of signed type cannot be zero");
            return TypeId::ERROR;
        }
        self.intern(mk(n))
    }

    /// Checks `e` and returns its value as an integer; reports when it is not a compile-time
    /// known integer.
    pub fn const_int(&mut self, e: &Expr, what: &str) -> Option<BigInt> {
        let ty = self.check_expr(e);
        if self.is_err(ty) {
            return None;
        }
        match self.const_of(e).and_then(|v| v.as_int()).cloned() {
            Some(v) => Some(v),
            None if self.const_of(e).is_some() => {
                self.error(e.span, format!("expected an integer value for {what}"));
                None
            }
            None => {
                self.error(e.span, format!("{what} must be a compile-time constant"));
                None
            }
        }
    }

    /// Looks up a type name, reporting when it is missing or not a type.
    pub fn lookup_type_decl(&mut self, p: &Path) -> Option<DeclId> {
        let found: Vec<DeclId> = self.lookup_path(p).to_vec();
        if found.is_empty() {
            self.report_not_found(&p.name.name, p.span);
            return None;
        }
        let ty_decl = found
            .iter()
            .copied()
            .find(|d| self.decl_kind(*d).is_some_and(DeclKind::is_type));
        if ty_decl.is_none() {
            self.error(p.span, format!("{}: is not a type", p.name.name));
        }
        ty_decl
    }

    fn named_type(&mut self, p: &Path, g: Generic) -> TypeId {
        let Some(d) = self.lookup_type_decl(p) else {
            return TypeId::ERROR;
        };
        let generic = self.decl(d).is_some_and(|i| !i.type_params.is_empty());
        if generic && g == Generic::Require && !self.is_own_type_param_user(d) {
            self.error(
                p.span,
                format!(
                    "{}: no type parameters supplied for generic type",
                    p.name.name
                ),
            );
            return TypeId::ERROR;
        }
        self.decl_ty(d)
    }

    /// A generic declaration may name itself (e.g. a generic parser's own type) without
    /// arguments while it is being defined.
    fn is_own_type_param_user(&self, d: DeclId) -> bool {
        self.defining.contains(&d)
    }

    fn specialized_type(&mut self, base: &Path, args: &[Type], span: Span) -> TypeId {
        let Some(d) = self.lookup_type_decl(base) else {
            return TypeId::ERROR;
        };
        let arg_tys: Vec<TypeId> = args.iter().map(|a| self.resolve_type_arg(a)).collect();
        if arg_tys.iter().any(|t| self.is_err(*t)) {
            return TypeId::ERROR;
        }
        self.specialize(d, &arg_tys, span)
    }

    /// The type of declaration `d` with its type parameters bound to `args`.
    pub fn specialize(&mut self, d: DeclId, args: &[TypeId], span: Span) -> TypeId {
        let (name, params, ty) = match self.decl(d) {
            Some(i) => (i.name.clone(), i.type_params.clone(), i.ty),
            None => return TypeId::ERROR,
        };
        if params.is_empty() {
            self.error(
                span,
                format!("{name}: Type {name} is not generic and thus it cannot be specialized using type arguments"),
            );
            return TypeId::ERROR;
        }
        if params.len() != args.len() {
            self.error(
                span,
                format!(
                    "{name}: Type {name} has {} type parameter(s), but it is specialized with {}",
                    params.len(),
                    args.len()
                ),
            );
            return TypeId::ERROR;
        }
        for a in args {
            if !self.check_type_argument(*a, span) {
                return TypeId::ERROR;
            }
            if self.mentions_decl(*a, d, 0) {
                let k = self.decl(d).map(|i| i.kind.describe()).unwrap_or("");
                self.error(
                    span,
                    format!("{name}: contains self '{k} {name}' as type argument"),
                );
                return TypeId::ERROR;
            }
        }
        let map: Subst = params.iter().copied().zip(args.iter().copied()).collect();
        let r = substitute(&mut self.out.types, ty, &map);
        if let Some(agg) = self.out.types.agg(r).cloned() {
            self.check_fields_after_specialization(&agg, span);
        }
        r
    }

    /// True when type `t` mentions a type declared by `d`.
    fn mentions_decl(&self, t: TypeId, d: DeclId, depth: u32) -> bool {
        if depth > 32 {
            return false;
        }
        let own = match self.ty(t) {
            Ty::Agg(a) => a.decl == d,
            Ty::Extern(n) | Ty::Package(n) => n.decl == d,
            Ty::Parser(b) | Ty::Control(b) => b.decl == d,
            _ => false,
        };
        own || self
            .out
            .types
            .children(t)
            .into_iter()
            .any(|c| self.mentions_decl(c, d, depth + 1))
    }

    /// Types that cannot be type arguments.
    pub fn check_type_argument(&mut self, a: TypeId, span: Span) -> bool {
        let bad = match self.ty(a) {
            Ty::Parser(b) => Some(format!("Cannot use parser {} as a type parameter", b.name)),
            Ty::Control(b) => Some(format!("Cannot use control {} as a type parameter", b.name)),
            Ty::Package(n) => Some(format!("Cannot use package {} as a type parameter", n.name)),
            Ty::Table { .. } | Ty::State => Some("illegal type argument".to_string()),
            _ => None,
        };
        match bad {
            Some(m) => {
                self.error(span, m);
                false
            }
            None => true,
        }
    }

    fn stack_type(&mut self, elem: &Type, size: &Expr) -> TypeId {
        let et = self.resolve_type(elem);
        let n = self.const_int(size, "a stack size");
        if self.is_err(et) {
            return TypeId::ERROR;
        }
        let Some(n) = n else {
            return TypeId::ERROR;
        };
        // The spec: the size is a positive compile-time known integer (p4c's `getSize`).
        let Some(n) = u32::try_from(&n)
            .ok()
            .filter(|n| (1..=MAX_STACK_SIZE).contains(n))
        else {
            self.error(size.span, format!("Illegal array size: {n}"));
            return TypeId::ERROR;
        };
        if !self.check_array_element(et, elem.span) {
            return TypeId::ERROR;
        }
        self.intern(Ty::Stack { elem: et, size: n })
    }

    fn check_array_element(&mut self, et: TypeId, span: Span) -> bool {
        let ok = match self.ty(et) {
            Ty::Bit(_) | Ty::Int(_) | Ty::Varbit(_) | Ty::Bool | Ty::Enum(_) | Ty::Agg(_) => true,
            Ty::NewType { .. } | Ty::Var { .. } | Ty::Error | Ty::ErrorType => true,
            Ty::Stack { elem, .. } => !self.out.types.is_header_like(*elem),
            Ty::Extern(_) => true,
            _ => false,
        };
        if !ok {
            let s = self.show(et);
            self.error(span, format!("arrays of {s} are not allowed"));
        }
        ok
    }

    fn tuple_type(&mut self, ts: &[Type]) -> TypeId {
        let mut out = Vec::with_capacity(ts.len());
        for t in ts {
            let ty = self.resolve_type_arg(t);
            if !self.check_tuple_element(ty, t.span) {
                return TypeId::ERROR;
            }
            out.push(ty);
        }
        self.intern(Ty::Tuple(out))
    }

    fn check_tuple_element(&mut self, ty: TypeId, span: Span) -> bool {
        let bad = matches!(
            self.ty(ty),
            Ty::Void
                | Ty::Extern(_)
                | Ty::Parser(_)
                | Ty::Control(_)
                | Ty::Package(_)
                | Ty::Table { .. }
                | Ty::State
        );
        if bad {
            let s = self.show(ty);
            self.error(span, format!("{s}: not supported as a tuple field"));
        }
        !bad
    }
}
