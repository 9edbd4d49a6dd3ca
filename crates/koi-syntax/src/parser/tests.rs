//! Unit tests of the lexer and parser, with helpers that print expressions, types and
//! statements as compact S-expressions so that tests can assert the tree's shape.

mod decl;
mod errors;
mod expr;
mod lexer;
mod stmt;

use super::parse;
use crate::Diagnostics;
use crate::ast::*;

/// Parses a program that must have no diagnostics.
pub(super) fn ok(src: &str) -> Program {
    let (p, d) = parse(src);
    assert!(
        d.list.is_empty(),
        "unexpected diagnostics for {src:?}: {:#?}",
        d.list
    );
    p
}

/// Parses a program that must have errors; returns their 1-based lines and messages.
pub(super) fn errs(src: &str) -> Vec<(usize, String)> {
    let (_, d) = parse(src);
    assert!(d.has_errors(), "expected errors for {src:?}");
    lines(src, &d)
}

pub(super) fn lines(src: &str, d: &Diagnostics) -> Vec<(usize, String)> {
    d.list
        .iter()
        .map(|d| {
            let lo = d.span.map(|s| s.lo as usize).unwrap_or(0);
            let line = src
                .get(..lo)
                .map(|t| t.matches('\n').count() + 1)
                .unwrap_or(0);
            (line, d.message.clone())
        })
        .collect()
}

/// The value of the last constant of `prelude` followed by `const int x = src;`.
pub(super) fn expr_with(prelude: &str, src: &str) -> String {
    let p = ok(&format!("{prelude}\nconst int x = {src};"));
    match p.decls.last().map(|d| &d.kind) {
        Some(DeclKind::Const { value, .. }) => ex(value),
        other => panic!("no constant: {other:?}"),
    }
}

pub(super) fn expr(src: &str) -> String {
    expr_with("", src)
}

/// The statements of `apply { src }` in a control declared after `prelude`.
pub(super) fn stmts_with(prelude: &str, src: &str) -> Vec<String> {
    let p = ok(&format!("{prelude}\ncontrol c_() {{ apply {{ {src} }} }}"));
    match p.decls.last().map(|d| &d.kind) {
        Some(DeclKind::Control { body, .. }) => body.stmts.iter().map(st).collect(),
        other => panic!("no control: {other:?}"),
    }
}

pub(super) fn stmts(src: &str) -> Vec<String> {
    stmts_with("", src)
}

fn list(items: &[Expr]) -> String {
    items.iter().map(ex).collect::<Vec<_>>().join(" ")
}

fn args(a: &[Argument]) -> String {
    a.iter()
        .map(|a| match &a.name {
            Some(n) => format!("{}={}", n.name, ex(&a.value)),
            None => ex(&a.value),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) fn path(p: &Path) -> String {
    format!("{}{}", if p.global { "." } else { "" }, p.name.name)
}

pub(super) fn int(l: &IntLit) -> String {
    match l.width {
        Some((signed, w)) => format!("{w}{}{}", if signed { "s" } else { "w" }, l.value),
        None => l.value.to_string(),
    }
}

fn binop(op: BinOp) -> &'static str {
    use BinOp::*;
    match op {
        Mul => "*",
        Div => "/",
        Mod => "%",
        Add => "+",
        Sub => "-",
        AddSat => "|+|",
        SubSat => "|-|",
        Shl => "<<",
        Shr => ">>",
        Le => "<=",
        Ge => ">=",
        Lt => "<",
        Gt => ">",
        Eq => "==",
        Ne => "!=",
        BitAnd => "&",
        BitXor => "^",
        BitOr => "|",
        Concat => "++",
        And => "&&",
        Or => "||",
    }
}

/// An expression as an S-expression.
pub(super) fn ex(e: &Expr) -> String {
    use ExprKind::*;
    match &e.kind {
        Int(l) => int(l),
        Bool(b) => b.to_string(),
        Str(s) => format!("{s:?}"),
        Path(p) => path(p),
        Member(b, m) => format!("(. {} {})", ex(b), m.name),
        Index(b, i) => format!("(idx {} {})", ex(b), ex(i)),
        Slice(b, h, l) => format!("(slice {} {} {})", ex(b), ex(h), ex(l)),
        SliceWidth(b, l, w) => format!("(+: {} {} {})", ex(b), ex(l), ex(w)),
        Call {
            callee,
            type_args,
            args: a,
        } => {
            let t: Vec<String> = type_args.iter().map(ty).collect();
            let t = if t.is_empty() {
                String::new()
            } else {
                format!("<{}>", t.join(","))
            };
            format!("(call {}{t} {})", ex(callee), args(a)).replace(" )", ")")
        }
        Unary(op, x) => {
            let o = match op {
                UnOp::Not => "!",
                UnOp::BitNot => "~",
                UnOp::Neg => "neg",
                UnOp::Plus => "pos",
            };
            format!("({o} {})", ex(x))
        }
        Binary(op, a, b) => format!("({} {} {})", binop(*op), ex(a), ex(b)),
        Ternary(c, a, b) => format!("(? {} {} {})", ex(c), ex(a), ex(b)),
        Cast(t, x) => format!("(cast {} {})", ty(t), ex(x)),
        List { items, dots } => format!("{{{}{}}}", list(items), if *dots { " ..." } else { "" }),
        StructInit { fields, dots } => {
            let f: Vec<String> = fields
                .iter()
                .map(|(n, v)| format!("{}={}", n.name, ex(v)))
                .collect();
            format!("{{{}{}}}", f.join(" "), if *dots { " ..." } else { "" })
        }
        TypeRef(t) => format!("(type {})", ty(t)),
        DontCare => "_".into(),
        Default => "default".into(),
        Dots => "...".into(),
        Mask(a, b) => format!("(&&& {} {})", ex(a), ex(b)),
        Range(a, b) => format!("(.. {} {})", ex(a), ex(b)),
        InvalidHeader => "{#}".into(),
        Invalid => "<invalid>".into(),
    }
}

/// A type as text.
pub(super) fn ty(t: &Type) -> String {
    use TypeKind::*;
    let targs = |a: &[Type]| a.iter().map(ty).collect::<Vec<_>>().join(",");
    match &t.kind {
        Bool => "bool".into(),
        Error => "error".into(),
        MatchKind => "match_kind".into(),
        String => "string".into(),
        Void => "void".into(),
        DontCare => "_".into(),
        InfInt => "int".into(),
        Bit(None) => "bit".into(),
        Bit(Some(w)) => format!("bit<{}>", ex(w)),
        Int(w) => format!("int<{}>", ex(w)),
        Varbit(w) => format!("varbit<{}>", ex(w)),
        Named(p) => path(p),
        Specialized { base, args } => format!("{}<{}>", path(base), targs(args)),
        Stack { elem, size } => format!("{}[{}]", ty(elem), ex(size)),
        Tuple(a) => format!("tuple<{}>", targs(a)),
        List(a) => format!("list<{}>", ty(a)),
        Invalid => "<invalid>".into(),
    }
}

/// A statement as an S-expression (blocks show their statements).
pub(super) fn st(s: &Stmt) -> String {
    use StmtKind::*;
    match &s.kind {
        Assign { lhs, op: None, rhs } => format!("(= {} {})", ex(lhs), ex(rhs)),
        Assign {
            lhs,
            op: Some(op),
            rhs,
        } => format!("({}= {} {})", binop(*op), ex(lhs), ex(rhs)),
        Call(e) => ex(e),
        Empty => "(;)".into(),
        Exit => "(exit)".into(),
        Return(None) => "(return)".into(),
        Return(Some(e)) => format!("(return {})", ex(e)),
        Break => "(break)".into(),
        Continue => "(continue)".into(),
        If {
            cond,
            then,
            otherwise,
        } => match otherwise {
            Some(o) => format!("(if {} {} {})", ex(cond), st(then), st(o)),
            None => format!("(if {} {})", ex(cond), st(then)),
        },
        Block(b) => format!(
            "{{{}}}",
            b.stmts.iter().map(st).collect::<Vec<_>>().join(" ")
        ),
        Switch { expr, cases } => {
            let c: Vec<String> = cases.iter().map(case).collect();
            format!("(switch {} {})", ex(expr), c.join(" "))
        }
        Decl(d) => decl(d),
        For {
            init,
            cond,
            update,
            body,
            ..
        } => {
            let i: Vec<String> = init.iter().map(st).collect();
            let u: Vec<String> = update.iter().map(st).collect();
            let c = cond.as_ref().map(ex).unwrap_or_default();
            format!("(for [{}] {c} [{}] {})", i.join(" "), u.join(" "), st(body))
        }
        ForIn {
            ty: t,
            name,
            collection,
            body,
            ..
        } => {
            let t = t
                .as_ref()
                .map(|t| format!("{} ", ty(t)))
                .unwrap_or_default();
            format!("(for-in {t}{} {} {})", name.name, ex(collection), st(body))
        }
        Invalid => "<invalid>".into(),
    }
}

fn case(c: &SwitchCase) -> String {
    let label = match &c.label {
        SwitchLabel::Default(_) => "default".to_string(),
        SwitchLabel::Expr(e) => ex(e),
    };
    match &c.body {
        Some(b) => format!(
            "{label}:{{{}}}",
            b.stmts.iter().map(st).collect::<Vec<_>>().join(" ")
        ),
        None => format!("{label}:"),
    }
}

/// A local declaration as an S-expression.
pub(super) fn decl(d: &Decl) -> String {
    match &d.kind {
        DeclKind::Var { ty: t, name, init } => match init {
            Some(i) => format!("(var {} {} {})", ty(t), name.name, ex(i)),
            None => format!("(var {} {})", ty(t), name.name),
        },
        DeclKind::Const { ty: t, name, value } => {
            format!("(const {} {} {})", ty(t), name.name, ex(value))
        }
        DeclKind::Instantiation {
            ty: t,
            args: a,
            name,
            initializer,
        } => {
            let init = initializer
                .as_ref()
                .map(|i| format!(" {{{}}}", i.iter().map(decl).collect::<Vec<_>>().join(" ")))
                .unwrap_or_default();
            format!("(inst {} ({}) {}{init})", ty(t), args(a), name.name)
        }
        DeclKind::Function { name, .. } => format!("(function {})", name.name),
        other => format!("{other:?}"),
    }
}
