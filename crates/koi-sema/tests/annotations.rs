//! Annotations: the bodies of `@name` and `@deprecated`, annotations that take no arguments,
//! and structured annotations.
mod common;
use common::{ok, rejects};

#[test]
fn string_bodied_annotations() {
    ok("control c() { @name(\"x\") action a() { } apply { a(); } }\n");
    rejects(
        "control c() {\n @name(1) action a() { } // ERR\n apply { a(); } }\n",
        "@name: the annotation's value must be a string",
    );
    rejects(
        "control c() {\n @deprecated(1) action a() { } // ERR\n apply { a(); } }\n",
        "@deprecated: the annotation's value must be a string",
    );
}

#[test]
fn name_deprecated_and_no_warn_take_exactly_one_string() {
    ok(
        "control c() { @noWarn(\"unused\") @name(\"a\" ++ \"b\") @deprecated(\"old\") action a() { } apply { a(); } }\n",
    );
    rejects(
        "control c() {\n @noWarn(5) action a() { } // ERR\n apply { a(); } }\n",
        "@noWarn: the annotation's value must be a string",
    );
    for (ann, body) in [
        ("name", "()"),
        ("deprecated", "(\"a\", \"b\")"),
        ("noWarn", "()"),
    ] {
        rejects(
            &format!(
                "control c() {{\n @{ann}{body} action a() {{ }} // ERR\n apply {{ a(); }} }}\n"
            ),
            &format!("@{ann}: annotation must have exactly 1 argument, a string"),
        );
    }
    for ann in ["name[\"x\"]", "deprecated[k = \"x\"]", "noWarn[k = \"x\"]"] {
        let n = ann.split('[').next().unwrap_or_default();
        rejects(
            &format!("control c() {{\n @{ann} action a() {{ }} // ERR\n apply {{ a(); }} }}\n"),
            &format!("@{n} annotation cannot be written using structured annotation syntax"),
        );
    }
}

#[test]
fn length_and_pkginfo_bodies() {
    ok("header H { bit<8> l; @length(l + 1) varbit<16> v; }\n");
    ok("@pkginfo(name = \"n\", version = \"1\") package P();\n");
    rejects(
        "header H { bit<8> l;\n @length(l, l) varbit<16> v; // ERR\n }\n",
        "@length: the argument must be one expression",
    );
    rejects(
        "@pkginfo(1) // ERR\npackage P();\n",
        "@pkginfo: the argument must be a list of key = value pairs",
    );
}

#[test]
fn some_annotations_take_no_arguments() {
    ok(
        "control c() { @hidden @atomic action a() { } @hidden() action b() { } apply { a(); b(); } }\n",
    );
    for ann in [
        "hidden",
        "atomic",
        "tableonly",
        "defaultonly",
        "noSideEffects",
        "pure",
        "unroll",
        "nounroll",
        "disable_optimization",
    ] {
        rejects(
            &format!(
                "control c() {{\n @{ann}(\"x\") action a() {{ }} // ERR\n apply {{ a(); }} }}\n"
            ),
            &format!("@{ann} should not have any arguments"),
        );
    }
    rejects(
        "extern void f(\n @optional(1) in bit<8> x); // ERR\n",
        "@optional should not have any arguments",
    );
}

#[test]
fn structured_annotations() {
    ok("@foo[a = 1, b = \"x\"] control c() { apply { } }\n");
    rejects(
        "@foo[a = 1, a = 2] // ERR\ncontrol c() { apply { } }\n",
        "duplicate key in structured annotation",
    );
    // Values are int, string or bool: not bit<W>, int<W> or enum values.
    ok("const int K = 2;\n@foo[1 + K, \"x\" ++ \"y\", true] control c() { apply { } }\n");
    for v in ["8w1", "(bit<8>)1", "8s1"] {
        rejects(
            &format!("@foo[a = {v}] // ERR\ncontrol c() {{ apply {{ }} }}\n"),
            "illegal type",
        );
    }
}

#[test]
fn value_sets_and_extern_instances_share_control_plane_names() {
    let pre = "extern E { E(); }\n";
    ok(&format!(
        "{pre}parser p() {{ @name(\"x\") value_set<bit<8>>(4) vs; @name(\"y\") E() e; state start {{ transition accept; }} }}\n"
    ));
    rejects(
        &format!(
            "{pre}parser p() {{ @name(\"x\") value_set<bit<8>>(4) vs;\n @name(\"x\") E() e; // ERR\n state start {{ transition accept; }} }}\n"
        ),
        "e: conflicting control plane name: p.x",
    );
}

#[test]
fn match_annotations_on_fields_take_one_match_kind() {
    let pre = "#include <core.p4>\n";
    ok(&format!(
        "{pre}struct S {{ @match(ternary) bit<8> a; @match(exact) bit<8> b; }}\n\
         parser p() {{ value_set<S>(4) vs; state start {{ transition accept; }} }}\n"
    ));
    // Only fields are checked; elsewhere the body need only be one expression.
    ok(&format!(
        "{pre}control c() {{ @match(5) action a() {{ }} apply {{ a(); }} }}\n"
    ));
    rejects(
        &format!("{pre}struct S {{\n @match(5) bit<8> a; // ERR\n }}\n"),
        "@match: value must be a match_kind",
    );
    rejects(
        &format!("{pre}const bit<8> k = 1;\nstruct S {{\n @match(k) bit<8> a; // ERR\n }}\n"),
        "@match: value must be a match_kind",
    );
    rejects(
        &format!("{pre}struct S {{\n @match bit<8> a; // ERR\n }}\n"),
        "@match: annotation must have exactly 1 argument",
    );
    rejects(
        &format!("{pre}struct S {{\n @match(exact, ternary) bit<8> a; // ERR\n }}\n"),
        "@match: the argument must be one expression",
    );
}

#[test]
fn annotations_are_checked_wherever_they_appear() {
    let pre = "#include <core.p4>\n";
    ok(&format!(
        "{pre}extern E {{ E(); @hidden void m(); }}\n\
         control c(in bit<8> k) {{ action a() {{ }}\n\
         table t {{ key = {{ k: exact @name(\"k\"); }} actions = {{ @tableonly a; }}\n\
         @hidden size = 4; const entries = {{ 1: a(); }} }}\n\
         apply {{ @hidden {{ t.apply(); }} @unroll for (bit<8> i in 1 .. 2) {{ }}\n\
         @nounroll for (bit<8> i = 0; i < 2; i = i + 1) {{ }} }} }}\n\
         parser p() {{ @name(\"s\") state start {{ transition accept; }} }}\n\
         enum F {{ @hidden A }}\n"
    ));
    for (place, prog) in [
        (
            "key element",
            "control c(in bit<8> k) { action a() { }\n table t { key = { k: exact @hidden(1); } // ERR\n actions = { a; } } apply { t.apply(); } }\n",
        ),
        (
            "action list entry",
            "control c() { action a() { }\n table t { actions = { @tableonly(1) a; } } // ERR\n apply { t.apply(); } }\n",
        ),
        (
            "table property",
            "control c() { action a() { }\n table t { actions = { a; } @hidden(1) size = 4; } // ERR\n apply { t.apply(); } }\n",
        ),
        (
            "parser state",
            "parser p() {\n @hidden(1) state start { transition accept; } // ERR\n }\n",
        ),
        (
            "for-in statement",
            "control c() { apply {\n @unroll(2) for (bit<8> i in 1 .. 2) { } // ERR\n } }\n",
        ),
        (
            "for statement",
            "control c() { apply {\n @unroll(2) for (bit<8> i = 0; i < 2; i = i + 1) { } // ERR\n } }\n",
        ),
        (
            "block statement",
            "control c() { apply {\n @hidden(1) { } // ERR\n } }\n",
        ),
        (
            "extern method",
            "extern E { E();\n @pure(1) void m(); // ERR\n }\n",
        ),
        ("enum member", "enum F {\n @hidden(1) A // ERR\n }\n"),
    ] {
        let src = format!("{pre}{prog}");
        let e = common::errors(&src);
        assert!(
            e.iter()
                .any(|m| m.contains("should not have any arguments")),
            "{place}: {e:?}"
        );
        rejects(&src, "should not have any arguments");
    }
}
