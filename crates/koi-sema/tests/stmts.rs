//! Statements: assignment targets, compound assignment, conditions, `return`, `exit`,
//! `switch`, loops and where declarations may appear.
mod common;
use common::{ok, rejects};

#[test]
fn assignment_targets_must_be_lvalues() {
    ok("control c(inout bit<8> x, out bit<8> y) { apply { x = 1; y = x; x[3:0] = 2; } }\n");
    rejects(
        "control c(in bit<8> x) { apply {\n x = 1; // ERR\n } }\n",
        "cannot assign to 'x': it is an 'in' parameter",
    );
    rejects(
        "const bit<8> k = 1;\ncontrol c() { apply {\n k = 2; // ERR\n } }\n",
        "it is a constant",
    );
    rejects(
        "control c() { action a(bit<8> d) {\n d = 1; // ERR\n } apply { } }\n",
        "directionless parameter",
    );
    rejects(
        "enum E { a }\ncontrol c(inout E x) { apply {\n E.a = x; // ERR\n } }\n",
        "cannot be the target",
    );
}

#[test]
fn compound_assignment() {
    ok("control c(inout bit<8> x) { apply { x += 1; x <<= 2; x |-|= 3; } }\n");
    rejects(
        "control c(inout bit<8> x, in bit<16> y) { apply {\n x += y; // ERR\n } }\n",
        "different widths",
    );
}

#[test]
fn conditions_must_be_bool() {
    rejects(
        "control c(in bit<1> b) { apply {\n if (b) { } // ERR\n } }\n",
        "does not evaluate to a bool but bit<1>",
    );
    rejects(
        "control c() { apply {\n for (bit<8> i = 0; i; i = i + 1) { } // ERR\n } }\n",
        "ForStatement",
    );
}

#[test]
fn returns() {
    rejects("void f() {\n return 1; // ERR\n}\n", "void");
    rejects("bit<8> f() {\n return; // ERR\n}\n", "no expression");
    rejects(
        "bit<8> f() {\n return true; // ERR\n}\n",
        "expected bit<8>, found bool",
    );
    ok("control c() { action a() { return; } apply { if (true) { return; } exit; } }\n");
}

#[test]
fn exit_and_break_placement() {
    rejects(
        "void f() {\n exit; // ERR\n}\n",
        "only allowed in controls and actions",
    );
    rejects(
        "control c() { apply {\n break; // ERR\n } }\n",
        "outside of a loop",
    );
    ok(
        "control c(inout bit<8> x) { apply { for (bit<8> i = 0; i < 4; i = i + 1) { if (i == 2) { break; } x = x + i; } } }\n",
    );
}

#[test]
fn for_in_loops() {
    ok(
        "extern void fn(in bit<8> c);\ncontrol c() { apply { for (bit<8> a in 8w0 .. 8w15) { fn(a); } } }\n",
    );
    rejects(
        "extern void fn(in bit<8> c);\ncontrol c() { apply {\n for (bit<8> a in 16w0 .. 16w15) { fn(a); } // ERR\n } }\n",
        "type mismatch",
    ); // Literal bounds and list elements take the loop variable's type.
    ok(
        "extern void fn(in bit<8> c);\ncontrol c(in bit<8> y) { apply {\n\
         for (bit<8> a in 0 .. 15) { fn(a); }\n\
         for (bit<8> a in 1 .. y) { fn(a); }\n\
         for (bit<8> a in {1, 2, y}) { fn(a); }\n\
         for (bit<8> a in (list<bit<8>>){1, 2}) { fn(a); }\n } }\n",
    );
    rejects(
        "control c() { apply {\n for (bit<8> a in {1, true}) { } // ERR\n } }\n",
        "type mismatch",
    );
    rejects(
        "control c() { apply {\n for (bool a in 0 .. 1) { } // ERR\n } }\n",
        "type mismatch",
    );
    // As p4c (canCastBetween): list and stack elements need only be castable to the loop
    // variable's type.
    ok(
        "control c() { apply {\n for (bit<8> a in (list<bit<16>>){300, 2}) { }\n\
         list<int> l = {1, 2};\n for (bit<8> a in l) { }\n\
         for (int<8> a in (list<bit<8>>){1}) { }\n } }\n",
    );
    rejects(
        "control c() { apply {\n list<bool> l = {true};\n for (bit<8> a in l) { } // ERR\n } }\n",
        "the loop variable has type bit<8> but the elements have type bool",
    );
    rejects(
        "control c() { apply {\n for (int<8> a in (list<bit<16>>){1}) { } // ERR\n } }\n",
        "the loop variable has type int<8> but the elements have type bit<16>",
    );
    rejects(
        "header H { bit<8> f; }\nheader G { bit<8> f; }\ncontrol c(inout H[2] s) { apply {\n for (G g in s) { } // ERR\n } }\n",
        "the loop variable has type header G",
    );
    // A tuple-typed value is not a list expression: p4c cannot iterate over it.
    rejects(
        "control c() { apply {\n tuple<bit<8>, bit<8>> t = { 1, 2 };\n for (bit<8> a in t) { } // ERR\n } }\n",
        "cannot iterate over a value of type tuple<bit<8>, bit<8>>",
    );
}

#[test]
fn switch_on_values() {
    let pre = "enum E { a, b }\ncontrol c(in bit<8> x, in E e) { apply {\n";
    ok(&format!(
        "{pre} switch (x) {{ 1: {{ }} 2: 3: {{ }} default: {{ }} }}\n switch (e) {{ E.a: {{ }} E.b: {{ }} }}\n}} }}\n"
    ));
    rejects(
        &format!("{pre} switch (x) {{ 1: {{ }}\n 1: {{ }} // ERR\n }}\n}} }}\n"),
        "duplicate case label",
    );
    rejects(
        &format!("{pre} switch (e) {{ E.a: {{ }}\n E.a: {{ }} // ERR\n }}\n}} }}\n"),
        "duplicate case label",
    );
    rejects(
        &format!("{pre} switch (x) {{ // ERR\n default: {{ }}\n 1: {{ }} }}\n}} }}\n"),
        "a switch label follows 'default' label, which is not allowed.",
    );
    rejects(
        &format!("{pre} switch (x) {{ // ERR\n default: {{ }}\n y: {{ }} }}\n}} }}\n"),
        "switch label y follows 'default' label",
    );
    rejects(
        &format!(
            "{pre} switch (x) {{ // ERR\n 1: {{ }}\n default: {{ }}\n default: {{ }} }}\n}} }}\n"
        ),
        "switch has multiple 'default' labels",
    );
    rejects(
        &format!("{pre} switch (x) {{\n x: {{ }} // ERR\n }}\n}} }}\n"),
        "compile-time constant",
    );
    rejects(
        "control c() { apply {\n switch (\"hello\") { default: { } } // ERR\n } }\n",
        "can't be string",
    );
}

#[test]
fn switch_on_action_run() {
    let pre = "action NoAction() {}\ncontrol c() {\n action a() {}\n action b() {}\n table t { actions = { a; b; } }\n apply {\n";
    ok(&format!(
        "{pre}  switch (t.apply().action_run) {{ a: {{ }} b: {{ }} default: {{ }} }}\n }}\n}}\n"
    ));
    rejects(
        &format!(
            "{pre}  switch (t.apply().action_run) {{ a: {{ }}\n a: {{ }} // ERR\n }}\n }}\n}}\n"
        ),
        "duplicate case label",
    );
    rejects(
        &format!("{pre}  switch (t.apply().action_run) {{\n 1: {{ }} // ERR\n }}\n }}\n}}\n"),
        "action name or 'default'",
    );
    rejects(
        &format!(
            "{pre}  bool h = t.apply().hit;\n t.apply().action_run == t.apply().action_run; // ERR\n }}\n}}\n"
        ),
        "",
    );
}

#[test]
fn instantiations_are_not_allowed_in_apply_blocks_or_functions() {
    rejects(
        "control V() { apply { } }\ncontrol c() { apply {\n V() v; // ERR\n } }\n",
        "apply' block",
    );
    rejects(
        "parser p() { state start { transition accept; } }\nvoid func() {\n p() t; // ERR\n}\n",
        "function or method",
    );
}

#[test]
fn variable_types() {
    rejects(
        "control c() { apply {\n int x = 1; // ERR\n } }\n",
        "Cannot declare variables with type int",
    );
    rejects(
        "extern C { bool get(); }\ncontrol X() {\n C c; // ERR\n apply { } }\n",
        "consider using an instantiation",
    );
}

#[test]
fn actions_may_instantiate_externs_functions_and_apply_blocks_may_not() {
    let pre = "extern Local<D> { Local(); D read(); void write(in D data); }\n";
    // p4c's sample action-register.p4.
    ok(&format!(
        "{pre}control C() {{ action RW() {{ Local<bit<32>>() local; local.write(local.read() + 1); }}\n\
         apply {{ RW(); }} }}\n"
    ));
    rejects(
        &format!("{pre}void f() {{\n Local<bit<8>>() l; // ERR\n }}\n"),
        "Instantiations cannot be in a function or method",
    );
    rejects(
        &format!("{pre}control C() {{ apply {{\n Local<bit<8>>() l; // ERR\n }} }}\n"),
        "Instantiations cannot be in a control 'apply' block",
    );
}
