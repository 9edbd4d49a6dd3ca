//! Name resolution: declaration before use, scopes and shadowing, duplicates, overloading,
//! dot-prefixed names, `error` and enum members, match kinds.
mod common;
use common::{ok, rejects, run, with_core};
use koi_sema::{DeclKind, Resolution};

#[test]
fn names_must_be_declared_before_use() {
    rejects(
        "const bit<8> a = b; // ERR\nconst bit<8> b = 1;\n",
        "b: declaration not found",
    );
    ok("const bit<8> b = 1;\nconst bit<8> a = b;\n");
}

#[test]
fn duplicate_declarations_in_one_scope() {
    rejects(
        "const bit<4> a = 1;\nconst bit<4> a = 2; // ERR\n",
        "duplicates",
    );
    rejects(
        "control c(in bit<8> v,\n in bit<8> v) // ERR\n{ apply { } }\n",
        "duplicates",
    );
    rejects(
        "control MyIngress<p>(inout bit<32> x)(bit<32> p) { apply { } } // ERR\n",
        "duplicates",
    );
    rejects("void f<t,\n t>() { } // ERR\n", "duplicates");
    rejects(
        "action foo(in bit<8> x) { }\naction foo(inout bit<8> x, in bit<8> y) { } // ERR\n",
        "duplicates",
    );
}

#[test]
fn functions_and_externs_overload_by_arity_and_names() {
    ok(
        "extern void f(in bit<8> a);\nextern void f(in bit<8> a, in bit<8> b);\ncontrol c() { apply { f(1); f(1, 2); } }\n",
    );
    rejects(
        "extern E {\n E(bit<8> x);\n E(bit<8> x); // ERR\n}\n",
        "duplicates",
    );
    rejects(
        "extern packet_in { void extract<T>(out T hdr); void extract<T>(out T other); }\nheader h { bit<8> a; }\nparser p(packet_in b, out h x) { state start { b.extract(x); // ERR\n transition accept; } }\n",
        "Ambiguous",
    );
}

#[test]
fn a_name_is_not_both_a_parser_control_or_package_and_a_function() {
    // Functions overload functions and extern functions; controls overload controls.
    ok("void f() { }\nextern void f(in bit<8> a);\n");
    ok("control c() { apply { } }\ncontrol c(in bit<8> x) { apply { } }\n");
    // p4c's parser rejects a redeclaration of a type name as a function (issue1932).
    rejects(
        "control foo(in bit<8> x, out bit<8> y) { apply { y = x + 7; } }\nbool foo() { return true; } // ERR\n",
        "'foo' duplicates an earlier declaration of 'foo'",
    );
    rejects(
        "extern void foo(in bit<8> x);\nparser foo() { state start { transition accept; } } // ERR\n",
        "duplicates an earlier declaration",
    );
    rejects(
        "package foo();\nvoid foo(in bit<8> x) { } // ERR\n",
        "duplicates",
    );
}

#[test]
fn locals_shadowing_parameters_are_errors() {
    rejects(
        "struct S { bit<8> a; }\ncontrol c(inout S h) {\n apply {\n S h = h; // ERR\n }\n}\n",
        "shadows a parameter",
    );
    ok("const bit<8> x = 1;\ncontrol c() { apply { bit<8> x = 2; } }\n");
    rejects(
        "control c()(bit<8> x) {\n apply {\n bit<8> x = 2; // ERR\n }\n}\n",
        "declaration of 'x' shadows a parameter 'x'",
    );
    rejects(
        "control c(inout bit<8> x) {\n action a() {\n bit<8> x = 2; // ERR\n }\n apply { }\n}\n",
        "shadows a parameter",
    );
    // A parser's or control's own locals (p4c's sample shadow-after-use.p4 names a table
    // like a parameter) only shadow the parameters: p4c warns.
    ok("control c(inout bit<8> x) { bit<8> x = 1; apply { } }\n");
    ok("parser p(in bit<8> x) { bit<8> x = 1; state start { transition accept; } }\n");
}

#[test]
fn dot_prefixed_names_refer_to_the_top_level() {
    let src = "const bit<8> x = 1;\ncontrol c(out bit<8> o) { apply { bit<8> x = 2; o = .x; } }\n";
    let (checked, _, errs) = run(src);
    assert!(errs.is_empty(), "{errs:?}");
    let top_x = checked.top_level_named("x").expect("top-level x");
    let dotted = checked
        .resolutions
        .values()
        .filter(|r| **r == Resolution::Decl(top_x))
        .count();
    assert_eq!(dotted, 1, ".x resolves to the top-level constant");
}

#[test]
fn error_and_enum_members() {
    ok(&with_core(
        "enum E { A, B }\nconst E e = E.B;\nconst error x = error.NoMatch;\n",
    ));
    rejects(
        &with_core("const error x = error.Nope; // ERR\n"),
        "error.Nope",
    );
    rejects(
        "enum E { A }\nconst E e = E.C; // ERR\n",
        "Invalid enum tag",
    );
    rejects("error { A,\n A } // ERR\n", "Duplicates declaration");
}

#[test]
fn match_kinds_are_top_level_names() {
    rejects("match_kind { exact,\n exact } // ERR\n", "duplicates");
    let (checked, _, errs) = run("match_kind { exact, fancy }\n");
    assert!(errs.is_empty());
    assert_eq!(
        checked.match_kinds,
        vec!["exact".to_string(), "fancy".to_string()]
    );
}

#[test]
fn parser_states_may_be_referenced_before_declaration() {
    ok("parser p() { state start { transition next; } state next { transition accept; } }\n");
    rejects(
        "parser p() { state start { transition nowhere; } } // ERR\n",
        "nowhere: declaration not found",
    );
}

#[test]
fn declarations_are_found_by_name_span() {
    let (checked, _, errs) = run("const bit<8> k = 3;\ncontrol c(in bit<8> p) { apply { } }\n");
    assert!(errs.is_empty());
    let c = checked.top_level_named("c").expect("c");
    let info = checked.decl(c).expect("info");
    assert_eq!(info.kind, DeclKind::Control);
    let p = info.params[0];
    let pinfo = checked.decl(p).expect("p");
    assert_eq!(checked.decl_at(pinfo.span), Some(p));
    assert!(matches!(pinfo.kind, DeclKind::Param(_)));
}
