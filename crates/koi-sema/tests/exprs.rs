//! Expressions: operators per type, implicit and explicit casts, slices, shifts,
//! concatenation, comparisons, member access, header stacks and size methods.
mod common;
use common::{ok, rejects, with_core};

/// A control body with some variables in scope.
fn body(stmts: &str) -> String {
    format!(
        "header H {{ bit<8> f; }}\nstruct S {{ bit<8> a; bool b; }}\nenum bit<8> E {{ A = 5 }}\ncontrol c(inout H h, inout S s, inout bit<8> x, inout bit<16> y, inout int<8> z, inout bool d) {{\n apply {{\n{stmts}\n }}\n}}\n"
    )
}

#[test]
fn arithmetic_needs_equal_widths_and_signs() {
    ok(&body(
        "x = x + 1; y = y * 2; z = z - 1; x = x |+| 8w250; z = z |-| 1;",
    ));
    rejects(&body("x = x + y; // ERR"), "different widths 8 and 16");
    rejects(&body("x = x + z; // ERR"), "different signs");
    rejects(&body("x = x + d; // ERR"), "bool");
    rejects(&body("z = z / 2; // ERR"), "signed");
}

#[test]
fn division_by_constants() {
    rejects(&body("x = x / 0; // ERR"), "Division by zero");
    rejects(&body("x = x % -1; // ERR"), "negative");
    rejects("const int a = -8 / -2; // ERR\n", "negative");
}

#[test]
fn bitwise_and_unary_operators() {
    ok(&body(
        "x = x & 0x0f; x = ~x; z = -z; d = !d; x = x ^ x | x;",
    ));
    rejects(&body("d = ~d; // ERR"), "'~'");
    rejects("const bit<8> a = ~0x100; // ERR\n", "unknown width");
    rejects(&body("d = true & false; // ERR"), "bool");
}

#[test]
fn shifts() {
    ok(&body("x = x << 3; x = x >> y[3:0]; y = 16w1 << x;"));
    rejects(&body("x = x << z; // ERR"), "right operand of shift");
    rejects(&body("x = x >> 3 >> -2; // ERR"), "negative");
    rejects(
        &body("bit<8> r = (bit<8>)(1 << x); // ERR"),
        "arbitrary-precision",
    );
    rejects(
        &body("x = x << 3000000000; // ERR"),
        "Shift amount too large: 3000000000",
    );
    rejects(
        &body("y = y >> 0x80000000; // ERR"),
        "Shift amount too large",
    );
    ok(&body("x = x << 2147483647;"));
}

#[test]
fn concatenation() {
    ok(&body("y = x ++ x; y = E.A ++ 8w0;"));
    rejects(&body("y = x ++ 4; // ERR"), "Concatenation not defined");
    ok("const string s = \"a\" ++ \"b\";\n");
}

#[test]
fn comparisons_and_equality() {
    ok(&body(
        "d = x < 3; d = h == h; d = s == { a = 1, b = true }; d = z >= -1;",
    ));
    rejects(&body("d = true >= false; // ERR"), "bool");
    rejects(
        "extern e { e(); }\ne() t;\ne() t1;\ncontrol c(out bool b) { apply { b = t == t1; } } // ERR\n",
        "externs cannot be compared",
    );
}

#[test]
fn implicit_casts_of_int_and_enums() {
    ok(&body("x = 5; y = E.A ++ x; x = x + E.A; x = E.A;"));
    rejects(&body("E e = 5; // ERR"), "type mismatch");
    rejects(&body("x = true; // ERR"), "expected bit<8>, found bool");
}

#[test]
fn explicit_casts() {
    ok(&body(
        "z = (int<8>)x; y = (bit<16>)x; d = (bool)x[0:0]; x = (bit<8>)E.A; E e = (E)x; int<8> w = (int<8>)-1;",
    ));
    rejects(
        &body("z = (int<8>)y; // ERR"),
        "cannot cast bit<16> to int<8>",
    );
    rejects(&body("d = (bool)2; // ERR"), "Only 0 and 1");
    rejects(&body("d = (bool)x; // ERR"), "cannot cast bit<8> to bool");
    ok(&body(
        "s = (S){ a = 1, b = true }; s = (S){ 1, true }; h = (H){#};",
    ));
    rejects(
        &body("tuple<bit<8>, bool> t = (tuple<bit<8>, bool>){ 1, true }; // ERR"),
        "tuple<bit<8>, bool>: cast not supported",
    );
}

#[test]
fn slices() {
    ok(&body("x = y[15:8]; bit<4> n = x[7:4]; x = y[x+:8];"));
    rejects(&body("bit<4> n = d[3:0]; // ERR"), "bit extraction");
    rejects(&body("bit<8> n = x[8:1]; // ERR"), "greater than width");
    rejects(&body("bit<8> n = x[x:0]; // ERR"), "constants");
    rejects(&body("bit<8> n = x[0:3]; // ERR"), "[msb:lsb]");
}

#[test]
fn slices_of_int_values_only_of_constants_folded_before_type_checking() {
    // p4c folds slices of literals and of int constants before it checks types ...
    ok(
        "const int k = 6;\nconst bit<4> a = 5[3:0];\nconst bit<2> b = k[2:1];\nconst bit<3> c = (k + 1)[2:0];\n",
    );
    // ... and rejects every other slice of an int value, as it does slices of other types.
    rejects(
        "control c(out bit<4> x)(int n) { apply {\n x = n[3:0]; // ERR\n } }\n",
        "bit extraction only defined for bit<> types",
    );
    rejects(
        "header H { bit<8> f; }\ncontrol c(out bit<4> x) { apply {\n x = H.minSizeInBits()[3:0]; // ERR\n } }\n",
        "bit extraction only defined for bit<> types",
    );
}

#[test]
fn member_access_and_validity() {
    ok(&body(
        "h.f = 1; d = h.isValid(); h.setValid(); h.setInvalid();",
    ));
    rejects(&body("h.g = 1; // ERR"), "not a member");
    rejects(&body("d = s.isValid(); // ERR"), "isValid");
}

#[test]
fn header_stacks() {
    let pre = "header H { bit<8> f; }\nstruct M { H[4] hs; }\n";
    ok(&format!(
        "{pre}control c(inout M m, in bit<2> i) {{ apply {{ m.hs[i].f = 1; m.hs.push_front(1); m.hs.pop_front(2); bit<32> n = m.hs.size; m.hs[3].setValid(); }} }}\n"
    ));
    rejects(
        &format!("{pre}control c(inout M m) {{ apply {{ m.hs.next.f = 1; }} }} // ERR\n"),
        "only be used in a parser",
    );
    rejects(
        &format!("{pre}control c(inout M m) {{ apply {{ m.hs[4].f = 1; }} }} // ERR\n"),
        "out of bounds",
    );
    rejects(
        &format!("{pre}control c(inout M m) {{ apply {{ m.hs[true].f = 1; }} }} // ERR\n"),
        "must be an integer",
    );
    ok(&format!(
        "{pre}parser p(inout M m) {{ state start {{ m.hs.next.f = 1; bit<8> v = m.hs.last.f; bit<32> l = m.hs.lastIndex; transition accept; }} }}\n"
    ));
    rejects(
        &format!(
            "{pre}parser p(inout M m) {{ state start {{\n m.hs.push_front(1); // ERR\n transition accept; }} }}\n"
        ),
        "'push_front' and 'pop_front' for stacks cannot be used in a parser",
    );
    // `next` is an l-value; `last`, like `lastIndex`, is not (the spec: "never an l-value").
    for (stmt, why) in [
        ("m.hs.last.f = 1;", "cannot be the target of an assignment"),
        (
            "m.hs.last = m.hs[0];",
            "cannot be the target of an assignment",
        ),
        ("m.hs.last.setInvalid();", "must be an l-value"),
    ] {
        rejects(
            &format!(
                "{pre}parser p(inout M m) {{ state start {{\n {stmt} // ERR\n transition accept; }} }}\n"
            ),
            why,
        );
    }
    rejects(
        &format!(
            "{pre}void f(inout H x) {{ }}\nparser p(inout M m) {{ state start {{\n f(m.hs.last); // ERR\n transition accept; }} }}\n"
        ),
        "Read-only value",
    );
    rejects(
        &format!("{pre}control c(inout M m) {{ apply {{\n m.hs.push_front(-1); // ERR\n }} }}\n"),
        "-1: the count of push_front must be a positive integer",
    );
    let arr = "struct A { bit<8>[4] a; }\n";
    ok(&format!(
        "{arr}parser p(inout A x) {{ state start {{ x.a[1] = 2; transition accept; }} }}\n"
    ));
    for m in ["next", "last", "lastIndex", "size"] {
        rejects(
            &format!(
                "{arr}parser p(inout A x, out bit<32> n) {{ state start {{\n n = (bit<32>)x.a.{m}; // ERR\n transition accept; }} }}\n"
            ),
            &format!("'{m}' can only be used on header stacks"),
        );
    }
}

#[test]
fn size_methods_are_constants() {
    ok(
        "header H { bit<8> a; bit<4> b; bit<4> c; }\nconst int n = H.minSizeInBits();\nconst int m = H.maxSizeInBytes();\n",
    );
    rejects(
        "header H { bit<8> a; }\nconst int n = H.minSizeInBits<int>(); // ERR\n",
        "type arguments",
    );
}

#[test]
fn struct_and_list_expressions_take_the_context_type() {
    ok(&body(
        "s = { a = 1, b = true }; s = { 2, false }; h = { 3 }; tuple<bit<8>, bool> t = { 1, true };",
    ));
    rejects(&body("s = { a = 1 }; // ERR"), "no value given for field b");
    rejects(
        &body("s = { a = 1, b = true, c = 2 }; // ERR"),
        "not a member",
    );
    rejects(&body("h = {}; // ERR"), "type mismatch");
    rejects(&body("s = { 1, 2 }; // ERR"), "expected bool");
}

#[test]
fn default_values_need_a_declared_type() {
    // `...` takes its type from a declaration, an assignment or a parameter, not from the
    // other operand of a comparison nor from a return statement (p4c's rule).
    ok(&body("s = { a = 1, ... }; s = { ... }; s = ...;"));
    rejects(
        &body("d = s == { a = 1, ... }; // ERR"),
        "Default values {...} cannot be used in operation relation ==",
    );
    rejects(
        &body("d = { ... } != s; // ERR"),
        "Default values {...} cannot be used in operation relation !=",
    );
    rejects(
        &with_core("struct S { bit<8> a; bool b; }\nS f() {\n return { 1, ... }; // ERR\n}\n"),
        "Default values {...} cannot be used in a return statement",
    );
    ok(&with_core(
        "struct S { bit<8> a; bool b; }\nS f() {\n S s = { 1, ... };\n return s;\n}\n",
    ));
}

#[test]
fn conditional_operator() {
    ok(&body("x = d ? x : 1; x = d ? 8w1 : 2;"));
    // As p4c: two `int` branches need a width unless the condition is known (and folded).
    rejects(
        &body("x = d ? 1 : 0; // ERR"),
        "Width must be specified for at least one of 1 or 0",
    );
    ok(&body("x = true ? 1 : 2; x = (4 > 3) ? 1 : 2;"));
    rejects(&body("x = x[0:0] ? x : x; // ERR"), "must be bool");
    rejects(&body("x = d ? x : y; // ERR"), "different types");
}
