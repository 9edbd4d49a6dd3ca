//! Tables: keys and match kinds, the action list, default actions, entries and priorities.
mod common;
use common::{ok, rejects, run, with_core};

fn table(props: &str) -> String {
    with_core(&format!(
        "header H {{ bit<8> a; bit<8> b; }}\ncontrol c(inout H h) {{\n action a() {{ }}\n action p(bit<8> v) {{ h.a = v; }}\n action q(inout bit<8> x, bit<8> d) {{ x = d; }}\n table t {{\n{props}\n }}\n apply {{ t.apply(); }}\n}}\n"
    ))
}

#[test]
fn keys_and_match_kinds() {
    ok(&table(
        "key = { h.a: exact; h.b: ternary; h.isValid(): exact; h.a & 0xf: lpm; } actions = { a; }",
    ));
    rejects(
        &table("key = { h.a: fancy; } // ERR\n actions = { a; }"),
        "fancy: declaration not found",
    );
    rejects(
        &table("key = { h.a + h.a: exact; } // ERR\n actions = { a; }"),
        "requires a @name annotation",
    );
    ok(&table(
        "key = { h.a + h.a: exact @name(\"sum\"); } actions = { a; }",
    ));
    // p4c names key elements built of names, constants, fields, constant slices and
    // indexes, masks and isValid(); any other expression needs a @name.
    ok(&table(
        "key = { h.a[3:0]: exact; 0xf & h.b: ternary; } actions = { a; }",
    ));
    for key in ["(bit<16>)h.a", "true", "h.a ^ 1"] {
        rejects(
            &table(&format!(
                "key = {{ {key}: exact; }} // ERR\n actions = {{ a; }}"
            )),
            "requires a @name annotation",
        );
    }
    ok(&table(
        "key = { (bit<16>)h.a: exact @name(\"wide\"); } actions = { a; }",
    ));
}

#[test]
fn key_fields_are_scalars_not_varbit() {
    let src = |key: &str| {
        with_core(&format!(
            "header V {{ bit<8> a; varbit<32> v; }}\ntype bit<8> N;\n\
             control c(inout V h, in N n) {{\n action a() {{ }}\n\
             table t {{\n key = {{ {key}\n }}\n actions = {{ a; }} }}\n apply {{ t.apply(); }}\n}}\n"
        ))
    };
    ok(&src("h.a: exact; n: exact; h.isValid(): exact;"));
    let bad = src("h.v: exact; // ERR");
    rejects(&bad, "key fields cannot have type varbit<32>");
}

#[test]
fn action_lists() {
    ok(&table(
        "actions = { a; p; q(h.a); NoAction; } default_action = a();",
    ));
    rejects(
        &table("actions = { a;\n missing; // ERR\n }"),
        "missing: declaration not found",
    );
    rejects(
        &table("actions = { a;\n a; // ERR\n }"),
        "Duplicates declaration",
    );
    common::err(
        &table("key = { h.a: exact; }"),
        7,
        "expected 'actions' property",
    );
    rejects(
        &table("actions = {\n q; // ERR\n }"),
        "parameter x must be bound",
    );
}

#[test]
fn the_action_list_binds_only_directional_parameters() {
    // `q(inout bit<8> x, bit<8> d)`: `d` is the control plane's, entry by entry.
    ok(&table("actions = { q(h.a); } default_action = q(h.a, 1);"));
    rejects(
        &table("actions = {\n q(h.a, 1); // ERR\n }"),
        "parameter d cannot be bound: it is set by the control plane",
    );
    rejects(
        &table("actions = {\n p(2); // ERR\n }"),
        "parameter v cannot be bound: it is set by the control plane",
    );
}

#[test]
fn default_actions() {
    ok(&table("actions = { a; p; q(h.a); } default_action = p(3);"));
    ok(&table(
        "actions = { a; q(h.a); } const default_action = q(h.a, 1);",
    ));
    rejects(
        &table("actions = { a; }\n default_action = p(1); // ERR"),
        "not present in action list",
    );
    rejects(
        &table("actions = { a; q(h.a); }\n default_action = q(h.b, 1); // ERR"),
        "does not match declaration in actions list",
    );
    rejects(
        &table("actions = { a; q(h.a); }\n default_action = q(); // ERR"),
        "Parameter x must be bound",
    );
    rejects(
        &table("actions = { a; p; }\n default_action = p(h.b); // ERR"),
        "compile-time constant",
    );
    rejects(
        &table("default_action = a; // ERR\n actions = { a; }"),
        "no action list",
    );
}

#[test]
fn entries() {
    ok(&table(
        "key = { h.a: exact; h.b: ternary; } actions = { a; p; } const entries = { (1, 2 &&& 3): p(1); (2, _): a(); }",
    ));
    rejects(
        &table(
            "key = { h.a: exact; } actions = { a; p; } const entries = {\n (1, 2): a(); // ERR\n }",
        ),
        "Size of entry keyset",
    );
    rejects(
        &table(
            "key = { h.isValid(): ternary; } actions = { a; } const entries = {\n true &&& true: a(); // ERR\n }",
        ),
        "&&&: cannot be applied to an expression of type bool",
    );
    common::err(
        &table("actions = { a; } const entries = { _ : a(); } key = { h.a: exact; }"),
        8,
        "Entries list must be after table key",
    );
    common::err(
        &table("key = { } actions = { a; } const entries = { _ : a(); }"),
        7,
        "Entries cannot be specified for a table with no key",
    );
    common::err(
        &table("actions = { a; } const entries = { _ : a(); }"),
        7,
        "Entries cannot be specified for a table with no key",
    );
    rejects(
        &table(
            "key = { h.a: exact; } actions = { a; } const entries = {\n 1 &&& 2: a(); // ERR\n }",
        ),
        "invalid key expression",
    );
    rejects(
        &table(
            "key = { h.a: exact; } actions = { a; } const entries = { 1: a();\n 1: a(); // ERR\n }",
        ),
        "Duplicate entry keys",
    );
    rejects(
        &table(
            "key = { h.a: lpm; } actions = { a; } const entries = {\n 0x11 &&& 0xE1: a(); // ERR\n }",
        ),
        "invalid mask for LPM key",
    );
}

#[test]
fn undeclared_entry_actions_come_before_keyset_errors() {
    // p4c resolves every name before it type-checks: the undeclared action of a later entry
    // is the first error, ahead of an earlier entry's keyset of the wrong size.
    rejects(
        &table(
            "key = { h.a: exact; } actions = { a; } const entries = {\n (1, 2): a();\n 3: missing(); // ERR\n }",
        ),
        "missing: declaration not found",
    );
    // Reported once, and the other entries are still checked.
    let e = common::errors(&table(
        "key = { h.a: exact; } actions = { a; } const entries = {\n 3: missing();\n (1, 2): a();\n }",
    ));
    assert_eq!(
        e,
        [
            "9: missing: declaration not found",
            "10: Size of entry keyset must match the table key set size"
        ],
        "{e:?}"
    );
}

#[test]
fn lpm_masks_are_checked_after_every_front_end_rule() {
    // An invalid LPM mask is a back-end rule in p4c: a later entry's keyset error, and an
    // error later in the program, come first.
    let e = common::errors(&table(
        "key = { h.a: lpm; } actions = { a; } const entries = {\n 0x11 &&& 0xE1: a();\n (1, 2): a();\n }",
    ));
    assert_eq!(
        e,
        [
            "10: Size of entry keyset must match the table key set size",
            "9: 225: invalid mask for LPM key"
        ],
        "{e:?}"
    );
    let src = format!(
        "{}control d() {{ apply {{ bit<8> x = true; }} }}\n",
        table("key = { h.a: lpm; } actions = { a; } const entries = {\n 0x11 &&& 0xE1: a();\n }")
    );
    let e = common::errors(&src);
    assert_eq!(
        e,
        [
            "14: type mismatch: expected bit<8>, found bool",
            "9: 225: invalid mask for LPM key"
        ],
        "{e:?}"
    );
}

#[test]
fn priorities() {
    ok(&table(
        "key = { h.a: ternary; } actions = { a; } entries = { priority = 10: 1 &&& 1: a(); 2: a(); }",
    ));
    rejects(
        &table(
            "key = { h.a: exact; } // ERR\n actions = { a; } entries = { priority = 10: 1: a(); }",
        ),
        "does not require priorities",
    );
    rejects(
        &table(
            "key = { h.a: ternary; } actions = { a; } priority_delta = 10; entries = {\n 1: a(); // ERR\n priority = 5: 2: a(); }",
        ),
        "must have a priority",
    );
    rejects(
        &table(
            "key = { h.a: ternary; } actions = { a; } const entries = {\n 1 &&& 1: a();\n priority = 5: 2 &&& 2: a(); // ERR\n }",
        ),
        "Table with 'const' entries cannot have priorities",
    );
    rejects(
        &table(
            "key = { h.a: exact; } actions = { a; } const entries = {\n priority = 5: 2: a(); // ERR\n }",
        ),
        "Table with 'const' entries cannot have priorities",
    );
}

#[test]
fn size_must_be_a_constant() {
    ok(&table("actions = { a; } size = 1024;"));
    rejects(
        &table("actions = { a; }\n size = h.a; // ERR"),
        "size must be a constant",
    );
}

#[test]
fn tables_without_default_action_need_no_action() {
    rejects(
        "control c() { action a() { }\n table t { actions = { a; } } // ERR\n apply { } }\n",
        "NoAction not found",
    );
    let (checked, _, errs) = run(&table("actions = { a; p; } size = 16;"));
    assert!(errs.is_empty(), "{errs:?}");
    let info = checked.tables.values().next().expect("one table");
    assert_eq!(info.actions.len(), 2);
    assert_eq!(info.size, Some(16));
}

#[test]
fn a_missing_no_action_is_the_tables_first_error() {
    // Without core.p4 the implicit `default_action = NoAction` is reported before the errors
    // of the table's properties (p4c adds it before resolving any name)...
    let e = common::errors(
        "match_kind { exact }\ncontrol c() { action a() { }\n table t {\n key = { x: exact; }\n actions = { a; missing; } }\n apply { } }\n",
    );
    assert_eq!(
        e,
        [
            "3: Declaration of the action NoAction not found; did you include core.p4?",
            "4: x: declaration not found",
            "5: missing: declaration not found"
        ],
        "{e:?}"
    );
    // ... after the duplicates its parser rejects ...
    common::err(
        "control c() { action a() { }\n table t {\n actions = { a;\n a; } }\n apply { } }\n",
        4,
        "a: Duplicates declaration a",
    );
    common::err(
        "control c() { action a() { }\n table t {\n actions = { a; }\n actions = { a; } }\n apply { } }\n",
        4,
        "actions: Duplicates declaration actions",
    );
    // ... and not at all for a table with a `default_action` property, even a wrong one.
    let e = common::errors(
        "control c() { action a() { }\n table t {\n actions = { a; }\n default_action = b; }\n apply { } }\n",
    );
    assert_eq!(e, ["4: b: declaration not found"], "{e:?}");
}

#[test]
fn a_table_cannot_refer_to_itself() {
    // Inside `table t`, `t` names the table, even where a parameter `t` exists outside.
    let src = |key: &str| {
        with_core(&format!(
            "control c(in bit<8> t, in bit<8> u) {{\n action a() {{ }}\n table t {{\n key = {{ {key} }} // ERR\n actions = {{ a; }} }}\n apply {{ t.apply(); }}\n}}\n"
        ))
    };
    ok(&src("u: exact;").replace(" // ERR", ""));
    rejects(
        &src("t: exact;"),
        "t: Cannot refer to the containing table t",
    );
    rejects(
        &src("u + t: exact @name(\"k\");"),
        "Cannot refer to the containing table t",
    );
}

#[test]
fn action_list_arguments_cannot_apply_tables() {
    let src = |arg: &str| {
        with_core(&format!(
            "control c(inout bit<8> x) {{\n action a() {{ }}\n action b(in bool v) {{ x = v ? 8w1 : 8w2; }}\n table u {{ actions = {{ a; }} }}\n table t {{ actions = {{\n b({arg}); // ERR\n }} }}\n apply {{ t.apply(); }}\n}}\n"
        ))
    };
    ok(&src("x == 1").replace(" // ERR", ""));
    rejects(
        &src("u.apply().hit"),
        "u.apply: table invocation in action argument",
    );
}
