//! Statement tests: declarations versus statements, assignments, calls, control flow, loops
//! and the statements allowed in parser states.

use super::{errs, ok, stmts, stmts_with};

#[test]
fn declarations_versus_statements() {
    let pre = "header H { bit<8> f; } extern Ext { Ext(); void m(); } control Ctl() { apply {} }";
    assert_eq!(
        stmts_with(
            pre,
            "H h; H[4] stack; bit<8> x = 1; a[4] = x; f(x); t.apply(); Ext() e; Ctl.apply();"
        ),
        [
            "(var H h)",
            "(var H[4] stack)",
            "(var bit<8> x 1)",
            "(= (idx a 4) x)",
            "(call f x)",
            "(call (. t apply))",
            "(inst Ext () e)",
            "(call (. Ctl apply))",
        ]
    );
}

#[test]
fn unknown_type_names_still_declare() {
    // Name resolution, not the parser, reports that `Unknown` is not declared.
    assert_eq!(
        stmts("Unknown u; Gen<bit<8>> g; Gen<bit<8>>(1) i;"),
        [
            "(var Unknown u)",
            "(var Gen<bit<8>> g)",
            "(inst Gen<bit<8>> (1) i)"
        ]
    );
}

#[test]
fn generic_calls_in_statements() {
    assert_eq!(
        stmts("f<bit<8>>(x); g<T>(y); h.m<bit<1>, bool>();"),
        [
            "(call f<bit<8>> x)",
            "(call g<T> y)",
            "(call (. h m)<bit<1>,bool>)"
        ]
    );
}

#[test]
fn assignments() {
    assert_eq!(
        stmts(
            "a = 1; a.b[2] = c; a[7:0] = 1; a += 1; a -= 1; a *= 2; a /= 2; a %= 2; a <<= 1; a >>= 1; a &= 1; a |= 1; a ^= 1; a |+|= 1; a |-|= 1; this.x = 1;"
        ),
        [
            "(= a 1)",
            "(= (idx (. a b) 2) c)",
            "(= (slice a 7 0) 1)",
            "(+= a 1)",
            "(-= a 1)",
            "(*= a 2)",
            "(/= a 2)",
            "(%= a 2)",
            "(<<= a 1)",
            "(>>= a 1)",
            "(&= a 1)",
            "(|= a 1)",
            "(^= a 1)",
            "(|+|= a 1)",
            "(|-|= a 1)",
            "(= (. this x) 1)",
        ]
    );
}

#[test]
fn control_flow() {
    assert_eq!(
        stmts(
            "if (a) b = 1; else if (c) { return; } else exit; ; { break; continue; } return a + 1;"
        ),
        [
            "(if a (= b 1) (if c {(return)} (exit)))",
            "(;)",
            "{(break) (continue)}",
            "(return (+ a 1))",
        ]
    );
}

#[test]
fn switch_with_fall_through_and_default() {
    assert_eq!(
        stmts("switch (t.apply().action_run) { a: b: { x = 1; } c: {} default: { y = 2; } }"),
        ["(switch (. (call (. t apply)) action_run) a: b:{(= x 1)} c:{} default:{(= y 2)})"]
    );
    assert_eq!(stmts("switch (x) { 1: 2: {} }"), ["(switch x 1: 2:{})"]);
}

#[test]
fn for_loops() {
    assert_eq!(
        stmts("for (bit<8> i = 0, j = 1; i < 4; i = i + 1, j += 2) { x = i; }"),
        ["(for [(var bit<8> i 0) (= j 1)] (< i 4) [(= i (+ i 1)) (+= j 2)] {(= x i)})"]
    );
    assert_eq!(stmts("for (; c; ) {}"), ["(for [] c [] {})"]);
    assert_eq!(
        stmts("for (bit<8> v in vs) x = v;"),
        ["(for-in bit<8> v vs (= x v))"]
    );
    // The loop variable's type is required, as in the grammar and p4c.
    let e = errs("control c() { bit<8> v; apply {\n for (v in 1 .. 3) {} } }");
    assert_eq!(e.first().map(|(l, _)| *l), Some(2), "{e:?}");
    assert!(e[0].1.contains("syntax error, unexpected IN"), "{e:?}");
    assert_eq!(
        stmts("@unroll for (@a T v in vs) {}"),
        ["(for-in T v vs {})"]
    );
}

#[test]
fn local_constants_and_instantiations_with_initializers() {
    assert_eq!(
        stmts_with(
            "extern Virtual { Virtual(); abstract bit<16> f(in bit<16> x); }",
            "const bit<8> c = 3; Virtual() v = { bit<16> f(in bit<16> x) { return x; } };"
        ),
        ["(const bit<8> c 3)", "(inst Virtual () v {(function f)})"]
    );
}

#[test]
fn parameters_shadow_type_names() {
    let pre = "typedef bit<8> T;";
    let p = format!("{pre}\ncontrol c(in bit<8> T) {{ apply {{ x = (T) - 1; }} }}");
    let prog = ok(&p);
    let crate::ast::DeclKind::Control { body, .. } = &prog.decls[1].kind else {
        panic!()
    };
    assert_eq!(super::st(&body.stmts[0]), "(= x (- T 1))");
    // Outside the control, `T` is the type again.
    assert_eq!(stmts_with(&p, "x = (T) - 1;"), ["(= x (cast T (neg 1)))"]);
}

#[test]
fn type_parameters_are_types_in_scope() {
    let p = ok("T f<T>(in T a) { return (T) a; }\nconst int y = (T) + 1;");
    let crate::ast::DeclKind::Function { body, .. } = &p.decls[0].kind else {
        panic!()
    };
    assert_eq!(super::st(&body.stmts[0]), "(return (cast T a))");
    let crate::ast::DeclKind::Const { value, .. } = &p.decls[1].kind else {
        panic!()
    };
    assert_eq!(super::ex(value), "(+ T 1)");
}

#[test]
fn statements_not_allowed_in_parser_states() {
    let e = errs("parser P()() {\n  state start {\n    return;\n  }\n}");
    assert_eq!(e[0].0, 3);
    assert!(e[0].1.contains("unexpected RETURN"), "{e:?}");
    let e = errs("parser P() { state s { transition accept; x = 1; } }");
    assert!(e[0].1.contains("unexpected IDENTIFIER"), "{e:?}");
}

#[test]
fn statements_that_are_not_lvalue_based_are_rejected() {
    for (src, what) in [
        ("a + b;", "unexpected +"),
        ("f() = 1;", "unexpected ="),
        ("t.apply().hit;", "unexpected ."),
        ("bit _;", "unexpected _"),
        ("@a x = 1;", "unexpected IDENTIFIER"),
    ] {
        let e = errs(&format!("control c() {{ apply {{ {src} }} }}"));
        assert!(e[0].1.contains(what), "{src}: {e:?}");
    }
}

#[test]
fn keywords_usable_as_names() {
    assert_eq!(
        stmts(
            "bit<8> apply; bit<8> key; bit<8> state; bit<8> type; bit<8> list; apply = hdr.type + key.entries + priority; x = h.list;"
        ),
        [
            "(var bit<8> apply)",
            "(var bit<8> key)",
            "(var bit<8> state)",
            "(var bit<8> type)",
            "(var bit<8> list)",
            "(= apply (+ (+ (. hdr type) (. key entries)) priority))",
            "(= x (. h list))",
        ]
    );
}

#[test]
fn global_prefix_skips_local_type_parameters() {
    // Inside `f`, `X` is a type parameter; `.X` is the constant at the top level.
    let p = ok("const bit X = 1;\nbit f<X>() {\n  return .X;\n}");
    let crate::ast::DeclKind::Function { body, .. } = &p.decls[1].kind else {
        panic!()
    };
    assert_eq!(super::st(&body.stmts[0]), "(return .X)");
}

#[test]
fn pragma_annotations_on_statements() {
    assert_eq!(stmts("@pragma atomic\n{ x = 1; }"), ["{(= x 1)}"]);
}
