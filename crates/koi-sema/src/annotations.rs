//! Annotations: the bodies of the annotations the spec and p4c define (`@name`, `@deprecated`
//! and `@noWarn` take one string, `@match` and `@length` one expression, `@pkginfo` key-value
//! pairs, and some, such as `@hidden`, no arguments), of
//! structured annotations (compile-time constant `int`, `string` or `bool` values, unique
//! names), and of koi's `@koi_stage(N)` (a malformed one is a warning: it is only a hint).

use crate::checker::{Checker, Place};
use crate::decls::{DeclId, DeclKind};
use crate::types::{Ty, TypeId};
use crate::value::Value;
use koi_syntax::ast::{Annotation, AnnotationBody, Expr, ExprKind};

/// The lookup stage `N` of a well-formed `@koi_stage(N)` (one non-negative integer literal
/// that fits in 32 bits); `None` for any other annotation body. The megaflow classifier looks
/// up the key fields of a header so annotated, on its instance or its type, in stage `N`.
pub fn koi_stage_arg(a: &Annotation) -> Option<u32> {
    match &a.body {
        AnnotationBody::Unstructured {
            exprs: Some(es), ..
        } => match es.as_slice() {
            [e] => match &e.kind {
                ExprKind::Int(i) if !i.negative => u32::try_from(&i.value).ok(),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The annotations p4c parses with an empty body (its `ParseAnnotations`): they take no
/// arguments.
const EMPTY_BODIED: [&str; 12] = [
    "atomic",
    "defaultonly",
    "disable_optimization",
    "hidden",
    "likely",
    "noSideEffects",
    "nounroll",
    "optional",
    "pure",
    "tableonly",
    "unlikely",
    "unroll",
];

/// The annotations whose argument p4c requires to be one string (its
/// `ValidateStringAnnotations`).
const STRING_BODIED: [&str; 3] = ["name", "deprecated", "noWarn"];

/// Whether unstructured annotation tokens form a `key = value, ...` list (p4c parses the body
/// of `@pkginfo` as one).
fn is_kv_list(tokens: &[koi_syntax::ast::AnnotationToken]) -> bool {
    let mut segments: Vec<Vec<&str>> = vec![Vec::new()];
    let mut depth = 0i32;
    for t in tokens {
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "," if depth == 0 => {
                segments.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if let Some(seg) = segments.last_mut() {
            seg.push(t.text.as_str());
        }
    }
    segments.iter().all(|seg| {
        matches!(seg.as_slice(), [k, "=", _, ..]
            if k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    })
}

impl Checker<'_> {
    /// Checks the annotations of one declaration, parameter, field or property.
    pub fn check_annotations(&mut self, anns: &[Annotation]) {
        for (i, a) in anns.iter().enumerate() {
            let name = a.name.name.as_str();
            if name == "koi_stage" && koi_stage_arg(a).is_none() {
                self.warning(
                    a.span,
                    "@koi_stage: expected one non-negative integer literal, the lookup stage \
                     (`@koi_stage(2)`); the annotation is ignored",
                );
            }
            match &a.body {
                AnnotationBody::Unstructured { tokens, exprs } => {
                    if EMPTY_BODIED.contains(&name) && !tokens.is_empty() {
                        self.error(a.span, format!("@{name} should not have any arguments"));
                    }
                    if STRING_BODIED.contains(&name) {
                        self.string_annotation(a, exprs.as_deref());
                    }
                    // p4c parses the bodies of `@match` and `@length` as one expression and
                    // that of `@pkginfo` as a key-value list, wherever they are.
                    if matches!(name, "match" | "length") && !matches!(exprs.as_deref(), Some([_]))
                    {
                        self.error(
                            a.span,
                            format!("@{name}: the argument must be one expression"),
                        );
                    }
                    if name == "pkginfo" && !tokens.is_empty() && !is_kv_list(tokens) {
                        self.error(
                            a.span,
                            "@pkginfo: the argument must be a list of key = value pairs",
                        );
                    }
                }
                AnnotationBody::StructuredList(_) | AnnotationBody::StructuredKv(_)
                    if STRING_BODIED.contains(&name) =>
                {
                    self.error(
                        a.span,
                        format!(
                            "@{name} annotation cannot be written using structured annotation syntax"
                        ),
                    );
                }
                AnnotationBody::StructuredList(es) => {
                    self.duplicate_structured(anns, i);
                    for e in es {
                        self.structured_value(e);
                    }
                }
                AnnotationBody::StructuredKv(kvs) => {
                    self.duplicate_structured(anns, i);
                    for (j, (k, e)) in kvs.iter().enumerate() {
                        if kvs[..j].iter().any(|(k2, _)| k2.name == k.name) {
                            self.error(
                                k.span,
                                format!(
                                    "{}: duplicate key in structured annotation @{name}",
                                    k.name
                                ),
                            );
                        }
                        self.structured_value(e);
                    }
                }
                AnnotationBody::Empty => {}
            }
        }
    }

    /// Records the control-plane name of an action, table, extern instance or value set
    /// (its `@name`, or its name qualified by the enclosing parser or control) and reports a
    /// name already used by another object.
    pub fn register_control_plane_name(&mut self, id: DeclId, anns: &[Annotation]) {
        let Some(info) = self.decl(id) else { return };
        let relevant = match &info.kind {
            DeclKind::Action | DeclKind::Table | DeclKind::ValueSet => true,
            DeclKind::Instance => matches!(self.ty(info.ty), Ty::Extern(_)),
            _ => false,
        };
        if !relevant {
            return;
        }
        let (decl_name, span) = (info.name.clone(), info.span);
        let category = info.kind.describe();
        let prefix = match (self.cx.place, self.cx.owner) {
            (Place::ControlTop | Place::ParserTop, Some(o)) => format!("{}.", self.decl_name(o)),
            _ => String::new(),
        };
        let given = anns
            .iter()
            .find(|a| a.name.name == "name")
            .and_then(|a| match &a.body {
                AnnotationBody::Unstructured {
                    exprs: Some(es), ..
                } => match es.first().map(|e| &e.kind) {
                    Some(koi_syntax::ast::ExprKind::Str(s)) => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            });
        let explicit = given.is_some();
        let full = match given {
            Some(n) => match n.strip_prefix('.') {
                Some(g) => g.to_string(),
                None => format!("{prefix}{n}"),
            },
            None => format!("{prefix}{decl_name}"),
        };
        if decl_name == "NoAction" || full == "NoAction" {
            return;
        }
        if explicit && matches!(category, "value_set" | "instance") {
            match self.cp_other_names.get(&full).copied() {
                Some(prev)
                    if prev != id
                        && self
                            .decl(prev)
                            .is_some_and(|p| p.kind.describe() != category) =>
                {
                    let ps = self.decl_span(prev);
                    self.error_note(
                        span,
                        format!("{decl_name}: conflicting control plane name: {full}"),
                        ps,
                        "also used here",
                    );
                    return;
                }
                Some(_) => {}
                None => {
                    self.cp_other_names.insert(full.clone(), id);
                }
            }
        }
        let key = format!("{category} {full}");
        match self.cp_names.get(&key).copied() {
            Some(prev) if prev != id => {
                let ps = self.decl_span(prev);
                self.error_note(
                    span,
                    format!("{decl_name}: conflicting control plane name: {full}"),
                    ps,
                    "also used here",
                );
            }
            _ => {
                self.cp_names.insert(key, id);
            }
        }
    }

    fn string_annotation(&mut self, a: &Annotation, exprs: Option<&[Expr]>) {
        let name = &a.name.name;
        match exprs {
            Some([e]) => {
                let t = self.check_expr(e);
                if self.is_err(t) {
                    return;
                }
                if !matches!(self.const_of(e), Some(Value::Str(_))) {
                    self.error(
                        e.span,
                        format!("@{name}: the annotation's value must be a string"),
                    );
                }
            }
            _ => self.error(
                a.span,
                format!("@{name}: annotation must have exactly 1 argument, a string"),
            ),
        }
    }

    fn duplicate_structured(&mut self, anns: &[Annotation], i: usize) {
        let Some(a) = anns.get(i) else { return };
        if anns
            .iter()
            .enumerate()
            .any(|(j, b)| j != i && b.name.name == a.name.name && j < i)
        {
            self.error(
                a.span,
                format!("@{}: duplicate name for structured annotation", a.name.name),
            );
        }
    }

    fn structured_value(&mut self, e: &Expr) {
        let t = self.check_expr(e);
        if self.is_err(t) {
            return;
        }
        // The spec and p4c allow exactly these three types (not bit<W> or int<W>).
        let simple = matches!(t, TypeId::INF_INT | TypeId::STRING | TypeId::BOOL);
        if !simple {
            let s = self.show(t);
            self.error(
                e.span,
                format!("illegal type {s} for structured annotation; must be int, string or bool"),
            );
        } else if self.const_of(e).is_none() {
            self.error(
                e.span,
                "structured annotation must be compile-time constant values",
            );
        }
    }
}
