//! Expression tests: precedence and associativity, literals, casts, explicit type arguments,
//! slices, list and struct expressions, type names in expressions.

use super::{errs, expr, expr_with, ok};
use crate::ast::{DeclKind, ExprKind};

#[test]
fn arithmetic_precedence() {
    assert_eq!(expr("1 + 2 * 3"), "(+ 1 (* 2 3))");
    assert_eq!(expr("1 - 2 - 3"), "(- (- 1 2) 3)");
    assert_eq!(expr("a ++ b + c"), "(+ (++ a b) c)");
    assert_eq!(expr("a |+| b |-| c * d"), "(|-| (|+| a b) (* c d))");
    assert_eq!(expr("a << 1 + 2"), "(<< a (+ 1 2))");
}

#[test]
fn bitwise_binds_tighter_than_comparison() {
    // P4 differs from C here: `&`, `^`, `|` bind tighter than `==` and `<`.
    assert_eq!(expr("a & b == c"), "(== (& a b) c)");
    assert_eq!(expr("a | b < c ^ d"), "(< (| a b) (^ c d))");
    assert_eq!(expr("a | b ^ c & d"), "(| a (^ b (& c d)))");
    assert_eq!(expr("a == b < c"), "(== a (< b c))");
    assert_eq!(expr("a < b == c > d"), "(== (< a b) (> c d))");
}

#[test]
fn logical_and_ternary() {
    assert_eq!(expr("a || b && c"), "(|| a (&& b c))");
    assert_eq!(expr("a && b ? c : d || e"), "(? (&& a b) c (|| d e))");
    assert_eq!(expr("a ? b ? c : d : e"), "(? a (? b c d) e)");
    // As in p4c (where `?:` has `%precedence`), a chain groups to the left.
    assert_eq!(expr("a ? b : c ? d : e"), "(? (? a b c) d e)");
}

#[test]
fn unary_operators_and_postfix() {
    assert_eq!(expr("-a * b"), "(* (neg a) b)");
    assert_eq!(expr("!a.b[1]"), "(! (idx (. a b) 1))");
    assert_eq!(expr("~+-x"), "(~ (pos (neg x)))");
    assert_eq!(expr("a.b.c(1)(2)"), "(call (call (. (. a b) c) 1) 2)");
}

#[test]
fn shifts_join_adjacent_greater_than() {
    assert_eq!(expr("a >> 2 + 1"), "(>> a (+ 2 1))");
    assert_eq!(expr("a >> b >> c"), "(>> (>> a b) c)");
    assert_eq!(expr("a > b"), "(> a b)");
    let e = errs("const int x = a > > 1;");
    assert_eq!(e[0].0, 1);
    assert!(e[0].1.contains("unexpected >"), "{e:?}");
}

#[test]
fn literals() {
    assert_eq!(expr("8w5 + 16s3 + 0x10"), "(+ (+ 8w5 16s3) 16)");
    assert_eq!(expr("true && false"), "(&& true false)");
    assert_eq!(expr("\"s\""), "\"s\"");
    assert_eq!(expr("this"), "this");
    assert_eq!(expr(".g"), ".g");
}

#[test]
fn slices_and_indexes() {
    assert_eq!(expr("a[7:0]"), "(slice a 7 0)");
    assert_eq!(expr("a[i][3:2]"), "(slice (idx a i) 3 2)");
    assert_eq!(expr("a[8 +: 8]"), "(+: a 8 8)");
    assert_eq!(expr("a[0+:8]"), "(+: a 0 8)");
    assert_eq!(expr("a[c ? 1 : 2]"), "(idx a (? c 1 2))");
}

#[test]
fn casts_versus_parenthesised_expressions() {
    let pre = "typedef bit<8> T; header H {} struct S<U> { U f; }";
    assert_eq!(expr_with(pre, "(bit<8>) a + b"), "(+ (cast bit<8> a) b)");
    assert_eq!(expr_with(pre, "(T) -a"), "(cast T (neg a))");
    assert_eq!(expr_with(pre, "(a) - b"), "(- a b)");
    assert_eq!(expr_with(pre, "(a)(b)"), "(call a b)");
    assert_eq!(expr_with(pre, "(H[2]) {a, b}"), "(cast H[2] {a b})");
    assert_eq!(expr_with(pre, "(a[2]) + 1"), "(+ (idx a 2) 1)");
    assert_eq!(expr_with(pre, "(S<T>) {f = 1}"), "(cast S<T> {f=1})");
    assert_eq!(expr_with(pre, "(bool) a[0:0]"), "(cast bool (slice a 0 0))");
    assert_eq!(expr_with(pre, "(H){#}"), "(cast H {#})");
    assert_eq!(
        expr_with(pre, "(tuple<bit<8>, bool>) {1, true}"),
        "(cast tuple<bit<8>,bool> {1 true})"
    );
}

#[test]
fn a_local_variable_shadows_a_type_name() {
    let pre = "typedef bit<8> T; control c(in bit<8> T) { apply { } }";
    // At the top level `T` is still a type.
    assert_eq!(expr_with(pre, "(T) 1"), "(cast T 1)");
}

#[test]
fn explicit_type_arguments_versus_comparison() {
    let pre = "typedef bit<8> T; extern E<X> { E(); X get<Y>(in Y y); }";
    assert_eq!(expr_with(pre, "f<bit<8>>(x)"), "(call f<bit<8>> x)");
    assert_eq!(expr_with(pre, "f<T, _>(x)"), "(call f<T,_> x)");
    assert_eq!(
        expr_with(pre, "e.get<tuple<bit<8>, bool>>(x)"),
        "(call (. e get)<tuple<bit<8>,bool>> x)"
    );
    assert_eq!(expr_with(pre, "a < b"), "(< a b)");
    assert_eq!(expr_with(pre, "a < b > (c)"), "(> (< a b) c)");
    assert_eq!(expr_with(pre, "a < (bit<8>) b"), "(< a (cast bit<8> b))");
    assert_eq!(expr_with(pre, "E<bit<8>>()"), "(call (type E<bit<8>>))");
}

#[test]
fn type_names_in_expressions() {
    let pre = "enum E { A, B } header H { bit<8> f; } extern X { X(); }";
    assert_eq!(expr_with(pre, "E.A"), "(. E A)");
    assert_eq!(
        expr_with(pre, "H.minSizeInBits()"),
        "(call (. H minSizeInBits))"
    );
    assert_eq!(expr_with(pre, "X()"), "(call X)");
    assert_eq!(expr_with(pre, "error.NoError"), "(. error NoError)");
    // A bare type name is not an expression, as in p4c.
    let e = errs(&format!("{pre}\nconst int x = H;"));
    assert_eq!(e[0].0, 2);
    assert!(e[0].1.contains("unexpected ;"), "{e:?}");
}

#[test]
fn base_types_are_not_expressions() {
    let e = errs("const bit<32> x = bit<32>(0);");
    assert!(e[0].1.contains("unexpected BIT"), "{e:?}");
}

#[test]
fn list_and_struct_expressions() {
    assert_eq!(expr("{}"), "{}");
    assert_eq!(expr("{a, b,}"), "{a b}");
    assert_eq!(expr("{a, ...}"), "{a ...}");
    assert_eq!(expr("{...}"), "{ ...}");
    assert_eq!(expr("{f = 1, g = {2, 3}}"), "{f=1 g={2 3}}");
    assert_eq!(expr("{f = 1, ...}"), "{f=1 ...}");
    assert_eq!(expr("{a, ..., b}"), "{a ... b}");
    let e = errs("const int x = {2, f2 = 5};");
    assert!(e[0].1.contains("unexpected ="), "{e:?}");
}

#[test]
fn width_expressions_in_bit_types() {
    let p = ok(
        "const bit<2 + 2> a = 5;\nconst bit<a < 3 ? 5 : 4> b = 6;\nconst bit<(a > 1 ? 8 : 4)> c = 1;\ntypedef bit<v4[7:0]-v1> t;",
    );
    let tys: Vec<String> = p
        .decls
        .iter()
        .map(|d| match &d.kind {
            DeclKind::Const { ty, .. } | DeclKind::Typedef { ty, .. } => super::ty(ty),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        tys,
        [
            "bit<(+ 2 2)>",
            "bit<(? (< a 3) 5 4)>",
            "bit<(? (> a 1) 8 4)>",
            "bit<(- (slice v4 7 0) v1)>"
        ]
    );
}

#[test]
fn nested_type_arguments_close_with_adjacent_angles() {
    let p = ok(
        "typedef tuple<bit<8>, tuple<bit<16>>> T;\nstruct S<A> { A a; }\ntypedef S<S<bit<1>>> U;",
    );
    let tys: Vec<String> = p
        .decls
        .iter()
        .filter_map(|d| match &d.kind {
            DeclKind::Typedef { ty, .. } => Some(super::ty(ty)),
            _ => None,
        })
        .collect();
    assert_eq!(tys, ["tuple<bit<8>,tuple<bit<16>>>", "S<S<bit<1>>>"]);
}

#[test]
fn every_expression_gets_a_distinct_id_in_creation_order() {
    let p = ok("typedef bit<8> T; const int x = (T) a + f<T>(b, c) * {d, e};");
    let DeclKind::Const { value, .. } = &p.decls[1].kind else {
        panic!()
    };
    let mut ids = Vec::new();
    collect_ids(value, &mut ids);
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "duplicate ids: {ids:?}");
    // Backtracking leaves no gaps: ids are dense from 0 (the width `8` is id 0).
    assert_eq!(sorted.last().map(|i| i.0 as usize), Some(ids.len()));
}

fn collect_ids(e: &crate::ast::Expr, out: &mut Vec<crate::ast::NodeId>) {
    out.push(e.id);
    match &e.kind {
        ExprKind::Binary(_, a, b) => {
            collect_ids(a, out);
            collect_ids(b, out);
        }
        ExprKind::Cast(_, a) => collect_ids(a, out),
        ExprKind::Call { callee, args, .. } => {
            collect_ids(callee, out);
            args.iter().for_each(|a| collect_ids(&a.value, out));
        }
        ExprKind::List { items, .. } => items.iter().for_each(|i| collect_ids(i, out)),
        _ => {}
    }
}

#[test]
fn named_and_dont_care_arguments() {
    assert_eq!(expr("f(a = 1, b = _, _, 2)"), "(call f a=1 b=_ _ 2)");
    assert_eq!(expr("f(x == 1)"), "(call f (== x 1))");
}
