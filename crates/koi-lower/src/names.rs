//! Control-plane names and annotations, as p4c computes them: fully qualified names from the
//! block instance path with `@name` overrides (a leading dot makes a name global), `@id`,
//! annotations kept for P4Info, and table key names (p4c's `TableKeyNames`).

use crate::ctx::Lowerer;
use koi_ir::types::{AnnotationBody, AnnotationValue};
use koi_ir::{Annotation, Preamble};
use koi_sema::Resolution;
use koi_sema::types::Ty;
use koi_syntax::ast::{self, ExprKind};

/// The string argument of `@name("x")` among `anns`.
pub fn name_annotation(anns: &[ast::Annotation]) -> Option<String> {
    let a = anns.iter().find(|a| a.name.name == "name")?;
    string_arg(a)
}

/// The single string literal argument of an annotation.
pub fn string_arg(a: &ast::Annotation) -> Option<String> {
    match &a.body {
        ast::AnnotationBody::Unstructured {
            exprs: Some(es), ..
        } => match es.first().map(|e| &e.kind) {
            Some(ExprKind::Str(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The integer argument of an annotation (`@id(3)`, `@priority(2)`, `@field_list(1)`).
pub fn int_args(a: &ast::Annotation) -> Vec<u64> {
    let ast::AnnotationBody::Unstructured {
        exprs: Some(es), ..
    } = &a.body
    else {
        return vec![];
    };
    es.iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Int(i) => u64::try_from(&i.value).ok(),
            _ => None,
        })
        .collect()
}

/// The integer argument of the annotation named `name`.
pub fn int_annotation(anns: &[ast::Annotation], name: &str) -> Option<u64> {
    let a = anns.iter().find(|a| a.name.name == name)?;
    int_args(a).first().copied()
}

/// The lookup stage of `@koi_stage(N)` among `anns`: the first well-formed one (sema warns
/// about the others, which are ignored).
pub fn stage_annotation(anns: &[ast::Annotation]) -> Option<u32> {
    anns.iter()
        .filter(|a| a.name.name == "koi_stage")
        .find_map(koi_sema::koi_stage_arg)
}

/// `prefix.name` with `@name` applied: `@name("x")` replaces `name`, `@name(".x")` is the
/// global name `x`.
pub fn cp_name(prefix: &str, anns: &[ast::Annotation], name: &str) -> String {
    let n = name_annotation(anns).unwrap_or_else(|| name.to_string());
    if let Some(global) = n.strip_prefix('.') {
        return global.to_string();
    }
    if prefix.is_empty() {
        n
    } else {
        format!("{prefix}.{n}")
    }
}

fn annotation_value(e: &ast::Expr) -> AnnotationValue {
    match &e.kind {
        ExprKind::Str(s) => AnnotationValue::Str(s.clone()),
        ExprKind::Bool(b) => AnnotationValue::Bool(*b),
        ExprKind::Int(i) => AnnotationValue::Int(i64::try_from(&i.value).unwrap_or(i64::MAX)),
        ExprKind::Path(p) => AnnotationValue::Str(p.name.name.clone()),
        _ => AnnotationValue::Str(String::new()),
    }
}

/// The unstructured body text: the tokens as written, separated like source text.
fn tokens_text(tokens: &[ast::AnnotationToken]) -> String {
    let mut out = String::new();
    for (i, t) in tokens.iter().enumerate() {
        let prev_end = i.checked_sub(1).map(|j| tokens[j].span.hi);
        if prev_end.is_some_and(|end| end < t.span.lo) {
            out.push(' ');
        }
        out.push_str(&t.text);
    }
    out
}

/// An AST annotation as the IR keeps it.
pub fn annotation(a: &ast::Annotation) -> Annotation {
    let body = match &a.body {
        ast::AnnotationBody::Empty => AnnotationBody::Empty,
        ast::AnnotationBody::Unstructured { tokens, .. } => {
            AnnotationBody::Unstructured(tokens_text(tokens))
        }
        ast::AnnotationBody::StructuredList(es) => {
            AnnotationBody::List(es.iter().map(annotation_value).collect())
        }
        ast::AnnotationBody::StructuredKv(kvs) => AnnotationBody::KeyValue(
            kvs.iter()
                .map(|(k, v)| (k.name.clone(), annotation_value(v)))
                .collect(),
        ),
    };
    Annotation {
        name: a.name.name.clone(),
        body,
    }
}

/// The annotations kept for the control plane (all but `@name` and `@id`).
pub fn annotations(anns: &[ast::Annotation]) -> Vec<Annotation> {
    anns.iter()
        .filter(|a| a.name.name != "name" && a.name.name != "id")
        .map(annotation)
        .collect()
}

/// A preamble named `name` with the `@id` and annotations of `anns`.
pub fn preamble(name: String, anns: &[ast::Annotation]) -> Preamble {
    Preamble {
        name,
        id: int_annotation(anns, "id").and_then(|v| u32::try_from(v).ok()),
        annotations: annotations(anns),
    }
}

/// An integer literal as p4c prints it in key names: in its radix, without the width prefix,
/// truncated to the width (`8w0x3648` is `0x48`).
fn int_text(i: &ast::IntLit) -> String {
    let value = match i.width {
        Some((_, w)) => {
            let m = (num_bigint::BigUint::from(1u8) << (w as usize)) - 1u8;
            &i.value & m
        }
        None => i.value.clone(),
    };
    let digits = match i.radix {
        16 => format!("0x{}", value.to_str_radix(16)),
        8 => format!("0o{}", value.to_str_radix(8)),
        2 => format!("0b{}", value.to_str_radix(2)),
        _ => value.to_string(),
    };
    let sign = if i.negative && i.width.is_none() {
        "-"
    } else {
        ""
    };
    format!("{sign}{digits}")
}

impl Lowerer<'_> {
    /// p4c's generated name of a key expression, if it has one.
    pub fn key_name(&self, e: &ast::Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Path(p) => Some(p.name.name.clone()),
            ExprKind::Int(i) => Some(int_text(i)),
            ExprKind::Member(base, m) => {
                let field = self.external_field_name(e, base, &m.name);
                if let Some(g) = field.strip_prefix('.') {
                    return Some(g.to_string());
                }
                Some(format!("{}.{field}", self.key_name(base)?))
            }
            ExprKind::Index(a, i) => Some(format!("{}[{}]", self.key_name(a)?, self.key_name(i)?)),
            ExprKind::Slice(a, h, l) => Some(format!(
                "{}[{}:{}]",
                self.key_name(a)?,
                self.key_name(h)?,
                self.key_name(l)?
            )),
            ExprKind::Binary(ast::BinOp::BitAnd, a, b) => {
                Some(format!("{} & {}", self.key_name(a)?, self.key_name(b)?))
            }
            ExprKind::Call { callee, args, .. } if args.is_empty() => match &callee.kind {
                ExprKind::Member(base, m) if m.name == "isValid" => {
                    Some(format!("{}.$valid$", self.key_name(base)?))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The name of field `name` of the struct-like type of `base`, after `@name` on the field.
    fn external_field_name(&self, e: &ast::Expr, base: &ast::Expr, name: &str) -> String {
        let field_index = match self.ck.resolutions.get(&e.id) {
            Some(Resolution::Field(i)) => *i,
            _ => return name.to_string(),
        };
        let Some(bt) = self.ck.expr_types.get(&base.id) else {
            return name.to_string();
        };
        let Ty::Agg(a) = self.ck.types.get(*bt) else {
            return name.to_string();
        };
        let field_anns = self.idx.decls.get(&a.decl).and_then(|d| match &d.kind {
            ast::DeclKind::Struct { fields, .. }
            | ast::DeclKind::Header { fields, .. }
            | ast::DeclKind::HeaderUnion { fields, .. } => {
                fields.get(field_index).map(|f| &f.annotations)
            }
            _ => None,
        });
        field_anns
            .and_then(|anns| name_annotation(anns))
            .unwrap_or_else(|| name.to_string())
    }
}
