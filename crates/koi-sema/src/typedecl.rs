//! Type declarations: headers, structs, header unions (with the spec's nesting rules), enums
//! and serializable enums, `typedef`, `type`, `error` and `match_kind`.

use crate::checker::Checker;
use crate::decls::{DeclId, DeclInfo, DeclKind};
use crate::scope::ScopeKind;
use crate::types::{AggKind, AggTy, EnumTy, Field, Ty, TypeId};
use crate::value::Value;
use koi_syntax::Span;
use koi_syntax::ast::{EnumMember, Expr, Ident, StructField, Type, TypeParams};
use num_traits::Signed;
use std::collections::HashMap;

impl Checker<'_> {
    /// Declares type parameters in the current (type-parameter) scope.
    pub fn declare_type_params(&mut self, tps: &TypeParams) -> Vec<DeclId> {
        tps.iter()
            .map(|tp| {
                let id = self.new_decl(DeclInfo::new(
                    &tp.name,
                    tp.span,
                    DeclKind::TypeParam,
                    TypeId::ERROR,
                ));
                let var = self.intern(Ty::Var {
                    decl: id,
                    name: tp.name.clone(),
                });
                if let Some(i) = self.decl_mut(id) {
                    i.ty = var;
                }
                self.bind(id);
                id
            })
            .collect()
    }

    /// `header`, `struct` and `header_union` declarations.
    pub fn check_agg_decl(
        &mut self,
        kind: AggKind,
        name: &Ident,
        tps: &TypeParams,
        fields: &[StructField],
    ) -> DeclId {
        let dk = match kind {
            AggKind::Struct => DeclKind::Struct,
            AggKind::Header => DeclKind::Header,
            AggKind::HeaderUnion => DeclKind::HeaderUnion,
        };
        let id = self.new_decl(DeclInfo::new(&name.name, name.span, dk, TypeId::ERROR));
        self.defining.push(id);
        let (params, fs) = self.scoped(ScopeKind::TypeParams, |c| {
            let params = c.declare_type_params(tps);
            let fs = c.check_fields(kind, &name.name, fields);
            (params, fs)
        });
        let (fs, spans) = fs;
        self.field_spans.insert(id, spans);
        self.defining.pop();
        let args = params.iter().map(|p| self.decl_ty(*p)).collect();
        let ty = self.intern(Ty::Agg(AggTy {
            kind,
            decl: id,
            name: name.name.clone(),
            args,
            fields: fs,
        }));
        if let Some(i) = self.decl_mut(id) {
            i.ty = ty;
            i.type_params = params;
        }
        self.bind(id);
        id
    }

    /// The fields, and the span of each field's name.
    fn check_fields(
        &mut self,
        kind: AggKind,
        owner: &str,
        fields: &[StructField],
    ) -> (Vec<Field>, Vec<Span>) {
        let mut out: Vec<Field> = Vec::new();
        let mut spans: Vec<Span> = Vec::new();
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for f in fields {
            self.check_annotations(&f.annotations);
            self.check_length_annotation(f, &seen);
            self.check_match_annotation(f);
            let ty = self.resolve_type(&f.ty);
            if let Some(prev) = seen.get(f.name.name.as_str()) {
                let n = &f.name.name;
                self.error_note(
                    f.name.span,
                    format!("{n}: Duplicates declaration {n}"),
                    *prev,
                    "previous declaration",
                );
                continue;
            }
            seen.insert(&f.name.name, f.name.span);
            if !self.is_err(ty) {
                self.check_field_type(kind, owner, &f.name.name, ty, f.ty.span);
            }
            out.push(Field {
                name: f.name.name.clone(),
                ty,
            });
            spans.push(f.name.span);
        }
        (out, spans)
    }

    /// `@length(f)` on a field must name an earlier field.
    fn check_length_annotation(&mut self, f: &StructField, earlier: &HashMap<&str, Span>) {
        for a in f.annotations.iter().filter(|a| a.name.name == "length") {
            if let koi_syntax::ast::AnnotationBody::Unstructured {
                exprs: Some(es), ..
            } = &a.body
                && let Some(koi_syntax::ast::ExprKind::Path(p)) = es.first().map(|e| &e.kind)
                && !earlier.contains_key(p.name.name.as_str())
            {
                self.error(p.span, format!("{}: declaration not found", p.name.name));
            }
        }
    }

    /// `@match(kind)` on a field (the match kind of a value set's struct field): one argument,
    /// a `match_kind` value (p4c's `ValidateMatchAnnotations`).
    fn check_match_annotation(&mut self, f: &StructField) {
        use koi_syntax::ast::AnnotationBody;
        for a in f.annotations.iter().filter(|a| a.name.name == "match") {
            match &a.body {
                AnnotationBody::Unstructured {
                    exprs: Some(es), ..
                } if es.len() == 1 => {
                    let e = &es[0];
                    let t = self.check_expr(e);
                    if !self.is_err(t) && !matches!(self.ty(t), Ty::MatchKind) {
                        self.error(e.span, "@match: value must be a match_kind");
                    }
                }
                // A body that is not one expression is reported with the annotation.
                AnnotationBody::Unstructured { .. } => {}
                _ => self.error(a.span, "@match: annotation must have exactly 1 argument"),
            }
        }
    }

    /// Reports a field whose type the container kind does not allow.
    pub fn check_field_type(
        &mut self,
        kind: AggKind,
        owner: &str,
        field: &str,
        ty: TypeId,
        span: Span,
    ) {
        let ok = match kind {
            AggKind::Header => self.header_field_ok(ty, 0),
            AggKind::HeaderUnion => {
                self.out.types.is_header(ty) || matches!(self.ty(ty), Ty::Var { .. } | Ty::Error)
            }
            AggKind::Struct => self.struct_field_ok(ty),
        };
        if !ok {
            let t = self.show(ty);
            self.error(
                span,
                format!(
                    "Field '{field}' of '{} {owner}' cannot have type '{t}'",
                    kind.keyword()
                ),
            );
        }
    }

    fn header_field_ok(&self, ty: TypeId, depth: u32) -> bool {
        if depth > 32 {
            return false;
        }
        match self.ty(ty) {
            Ty::Bit(_) | Ty::Int(_) | Ty::Varbit(_) | Ty::Bool | Ty::Var { .. } | Ty::Error => true,
            Ty::Enum(e) => e.repr.is_some(),
            Ty::NewType { base, .. } => self.header_field_ok(*base, depth + 1),
            Ty::Agg(a) if a.kind == AggKind::Struct => a.fields.iter().all(|f| {
                self.header_field_ok(f.ty, depth + 1) && !matches!(self.ty(f.ty), Ty::Varbit(_))
            }),
            Ty::Stack { elem, .. } => {
                !self.out.types.is_header_like(*elem) && self.header_field_ok(*elem, depth + 1)
            }
            _ => false,
        }
    }

    fn struct_field_ok(&self, ty: TypeId) -> bool {
        !matches!(
            self.ty(ty),
            Ty::Void
                | Ty::InfInt
                | Ty::String
                | Ty::MatchKind
                | Ty::DontCare
                | Ty::List(_)
                | Ty::Extern(_)
                | Ty::Parser(_)
                | Ty::Control(_)
                | Ty::Package(_)
                | Ty::Table { .. }
                | Ty::ValueSet(_)
                | Ty::State
        )
    }

    /// Re-checks the fields of a specialised generic aggregate at the place of specialisation.
    pub fn check_fields_after_specialization(&mut self, agg: &AggTy, span: Span) {
        for f in &agg.fields {
            self.check_field_type(agg.kind, &agg.name, &f.name, f.ty, span);
        }
    }

    /// `enum [T] E { ... }`
    pub fn check_enum_decl(
        &mut self,
        repr: Option<&Type>,
        name: &Ident,
        members: &[EnumMember],
    ) -> DeclId {
        let id = self.new_decl(DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::Enum,
            TypeId::ERROR,
        ));
        let repr_ty = repr.and_then(|t| self.enum_repr_type(t));
        let mut names: Vec<String> = Vec::new();
        let mut spans: HashMap<String, Span> = HashMap::new();
        for m in members {
            self.check_annotations(&m.annotations);
            if let Some(prev) = spans.get(&m.name.name) {
                let n = &m.name.name;
                self.error_note(
                    m.name.span,
                    format!("{n}: Duplicates declaration {n}"),
                    *prev,
                    "previous declaration",
                );
                continue;
            }
            spans.insert(m.name.name.clone(), m.name.span);
            names.push(m.name.name.clone());
        }
        let ty = self.intern(Ty::Enum(EnumTy {
            decl: id,
            name: name.name.clone(),
            repr: repr_ty,
            members: names,
        }));
        let values = repr_ty.map(|r| self.enum_values(r, members, &spans));
        if let Some(i) = self.decl_mut(id) {
            i.ty = ty;
            i.value = values;
        }
        self.bind(id);
        id
    }

    fn enum_repr_type(&mut self, t: &Type) -> Option<TypeId> {
        let ty = self.resolve_type(t);
        match self.ty(ty) {
            Ty::Bit(_) | Ty::Int(_) => Some(ty),
            Ty::Error => None,
            other => {
                let extra = match other {
                    Ty::InfInt => "; note that the used type is unsized integral type",
                    Ty::NewType { .. } => {
                        "; note that type-declared types are not allowed even if they are fixed-size"
                    }
                    _ => "",
                };
                let s = self.show(ty);
                self.error(
                    t.span,
                    format!("{s}: Illegal type for enum; only bit<> and int<> are allowed{extra}"),
                );
                None
            }
        }
    }

    /// Values of a serializable enum's members, as a `Value::Struct` by member name.
    fn enum_values(
        &mut self,
        repr: TypeId,
        members: &[EnumMember],
        spans: &HashMap<String, Span>,
    ) -> Value {
        let mut out = Vec::new();
        for m in members {
            if spans.get(&m.name.name) != Some(&m.name.span) {
                continue;
            }
            let Some(e) = &m.value else {
                self.error(
                    m.name.span,
                    format!("{}: serializable enum members need a value", m.name.name),
                );
                continue;
            };
            if !self.enum_value_fits(&m.name, e, repr) {
                continue;
            }
            self.check_expr_as(e, repr);
            match self.converted_const(e) {
                Some(v) => out.push((m.name.name.clone(), v)),
                None if self.is_err(self.type_of(e)) => {}
                None => self.error(
                    e.span,
                    format!(
                        "{}: enum member value must be a compile-time constant",
                        m.name.name
                    ),
                ),
            }
        }
        Value::Struct(out)
    }

    /// As p4c: an integer value of a serializable enum member must fit in the underlying type
    /// (it is not truncated). Reports and returns false when it does not.
    fn enum_value_fits(&mut self, name: &Ident, e: &Expr, repr: TypeId) -> bool {
        let t = self.check_expr(e);
        if t != TypeId::INF_INT {
            return true;
        }
        let Some(v) = self.const_of(e).and_then(|v| v.as_int()).cloned() else {
            return true;
        };
        let (signed, w) = match self.ty(repr) {
            Ty::Bit(w) => (false, *w),
            Ty::Int(w) => (true, *w),
            _ => return true,
        };
        if crate::value::fits(&v, signed, w) {
            return true;
        }
        let ts = self.show(repr);
        let extra = if !signed && v.is_negative() {
            format!("the value {v} is negative, but the underlying type {ts} is unsigned")
        } else {
            let mut bits = v.magnitude().bits();
            if signed {
                bits += 1;
            }
            let kind = if signed { "signed" } else { "unsigned" };
            format!(
                "the value {v} requires {bits} bits but the underlying {kind} type {ts} only contains {w} bits"
            )
        };
        self.error(
            name.span,
            format!(
                "{}: Serialized enum constant value {v} is out of bounds of the underlying type {ts}; {extra}",
                name.name
            ),
        );
        false
    }

    /// `typedef T name;`
    pub fn check_typedef(&mut self, t: &Type, name: &Ident) -> DeclId {
        let ty = self.resolve_type(t);
        if matches!(self.ty(ty), Ty::Void | Ty::MatchKind | Ty::DontCare) {
            let s = self.show(ty);
            self.error(
                t.span,
                format!("{}: cannot define a typedef of {s}", name.name),
            );
        }
        self.declare(DeclInfo::new(&name.name, name.span, DeclKind::Typedef, ty))
    }

    /// `type T name;`
    pub fn check_newtype(&mut self, t: &Type, name: &Ident) -> DeclId {
        let base = self.resolve_type(t);
        let ok = matches!(
            self.ty(base),
            Ty::Bit(_) | Ty::Int(_) | Ty::Bool | Ty::NewType { .. } | Ty::Error
        );
        let id = self.new_decl(DeclInfo::new(
            &name.name,
            name.span,
            DeclKind::NewType,
            TypeId::ERROR,
        ));
        let ty = if ok {
            self.intern(Ty::NewType {
                decl: id,
                name: name.name.clone(),
                base,
            })
        } else {
            self.error(
                name.span,
                format!("{}: `type' can only be applied to base types", name.name),
            );
            TypeId::ERROR
        };
        if let Some(i) = self.decl_mut(id) {
            i.ty = ty;
        }
        self.bind(id);
        id
    }

    /// `error { ... }`: members merge across the program.
    pub fn check_error_decl(&mut self, members: &[Ident]) {
        for m in members {
            if let Some(prev) = self.error_spans.get(&m.name).copied() {
                let n = &m.name;
                self.error_note(
                    m.span,
                    format!("{n}: Duplicates declaration {n}"),
                    prev,
                    "previous declaration",
                );
                continue;
            }
            self.error_spans.insert(m.name.clone(), m.span);
            self.out.errors.push(m.name.clone());
        }
    }

    /// `match_kind { ... }`: members are top-level names.
    pub fn check_match_kind_decl(&mut self, members: &[Ident]) {
        for m in members {
            let id = self.new_decl(DeclInfo::new(
                &m.name,
                m.span,
                DeclKind::MatchKindMember,
                TypeId::MATCH_KIND,
            ));
            if let Some(i) = self.decl_mut(id) {
                i.value = Some(Value::MatchKind(m.name.clone()));
            }
            if self.bind(id) {
                self.out.match_kinds.push(m.name.clone());
            }
        }
    }
}
