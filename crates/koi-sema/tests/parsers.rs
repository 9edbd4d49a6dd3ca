//! Parser declarations: states, transitions, `select` and keysets, value sets, reachability.
mod common;
use common::{ok, rejects};

#[test]
fn start_state_is_required_and_accept_reject_are_builtin() {
    rejects(
        "parser p() // ERR\n{ state s { transition accept; } }\n",
        "has no 'start' state",
    );
    rejects(
        "parser p() { state start { transition accept; }\n state accept { } // ERR\n}\n",
        "accept should not be implemented",
    );
    rejects(
        "parser p() { state start { transition accept; }\n state start { transition accept; } // ERR\n}\n",
        "duplicates",
    );
}

#[test]
fn transitions_go_to_states() {
    rejects(
        "parser p() { value_set<bit<6>>(4) vs;\n state start { transition vs; } // ERR\n}\n",
        "must be state",
    );
    ok(
        "parser p() { state start { transition a; } state a { transition b; } state b { transition reject; } }\n",
    );
}

#[test]
fn select_keysets_match_the_select_types() {
    let pre = "parser p(in bit<8> x, in bit<16> y, in bool b) {\n state start {\n";
    ok(&format!(
        "{pre} transition select(x, y) {{ (1, 2): accept; (0x0f &&& 0xf0, _): accept; (1 .. 3, 5): accept; default: reject; }}\n }}\n}}\n"
    ));
    ok(&format!(
        "{pre} transition select(b) {{ true: accept; false: reject; }}\n }}\n}}\n"
    ));
    rejects(
        &format!("{pre} transition select(x) {{\n (1, 2): accept; // ERR\n }}\n }}\n}}\n"),
        "components",
    );
    rejects(
        &format!("{pre} transition select(b) {{\n 1w1: accept; // ERR\n _: reject; }}\n }}\n}}\n"),
        "type mismatch",
    );
    rejects(
        &format!("{pre} transition select(x) {{\n y: accept; // ERR\n }}\n }}\n}}\n"),
        "type mismatch",
    );
    rejects(
        &format!(
            "{pre} transition select(x) {{\n x &&& x: accept; // ERR\n default: reject; }}\n }}\n}}\n"
        ),
        "compile-time constants",
    );
    rejects(
        &format!("{pre} transition select({{ 1 }}) {{ // ERR\n default: accept; }}\n }}\n}}\n"),
        "cannot be used in 'select'",
    );
}

#[test]
fn select_expressions_have_bit_int_bool_or_enum_types() {
    // The spec's list: bit<W>, int<W>, bool, enums and tuples of them; not error, nor a type
    // introduced by `type`.
    let pre = "error { NoError }\ntype bit<8> T;\nparser p(in error r, in T t, in int<8> i) {\n state start {\n";
    ok(&format!(
        "{pre} transition select(i) {{ 1: accept; default: reject; }}\n }}\n}}\n"
    ));
    for sel in ["r", "t", "i, r"] {
        rejects(
            &format!("{pre} transition select({sel}) {{ // ERR\n default: reject; }}\n }}\n}}\n"),
            "cannot be used in 'select'",
        );
    }
}

#[test]
fn masks_and_ranges_match_integers_only() {
    let pre = "enum E { A, B }\nenum bit<8> F { A = 1, B = 2 }\nparser p(in bool b, in E e, in F f) {\n state start {\n";
    ok(&format!(
        "{pre} transition select(f) {{ F.A &&& 0x0f: accept; F.A .. F.B: accept; default: reject; }}\n }}\n}}\n"
    ));
    for (sel, ks) in [
        ("b", "true &&& true"),
        ("b", "false .. true"),
        ("e", "E.A .. E.B"),
    ] {
        rejects(
            &format!(
                "{pre} transition select({sel}) {{\n {ks}: accept; // ERR\n default: reject; }}\n }}\n}}\n"
            ),
            "cannot be applied to an expression of type",
        );
    }
}

#[test]
fn value_sets_in_select() {
    ok(
        "parser p(in bit<8> x) { value_set<bit<8>>(4) vs;\n state start { transition select(x) { vs: accept; default: reject; } } }\n",
    );
    rejects(
        "parser p(in bit<8> x) { value_set<bit<16>>(4) vs;\n state start { transition select(x) {\n vs: accept; // ERR\n default: reject; } } }\n",
        "does not match the select type",
    );
    rejects(
        "parser p(in bit<8> x, in bit<8> n) {\n value_set<bit<8>>(n) vs; // ERR\n state start { transition accept; } }\n",
        "value_set size must be constant",
    );
}

#[test]
fn a_parser_must_reach_accept_or_reject() {
    rejects(
        "parser p() // ERR\n{ state start { transition s1; } state s1 { transition s2; } state s2 { transition s1; } }\n",
        "never reaches accept or reject",
    );
}

#[test]
fn sub_parsers() {
    ok(
        "parser sub(in bit<8> v) { state start { transition accept; } }\nparser p(in bit<8> x) { sub() s; state start { s.apply(x); transition accept; } }\n",
    );
    rejects(
        "control k() { apply { } }\nparser p() {\n k() kk; // ERR\n state start { transition accept; } }\n",
        "instantiation of control in parser",
    );
}

#[test]
fn select_cannot_match_varbit_fields() {
    // p4c: no keyset can be compared with a varbit value; the select expression is refused.
    let src = |key: &str| {
        format!(
            "#include <core.p4>\nheader v {{ varbit<16> o; bit<8> l; }}\nparser p(packet_in b, out v h) {{\n state start {{\n b.extract(h, 16);\n transition select({key}) {{ // ERR\n default: accept; }}\n }}\n}}\n"
        )
    };
    ok(&src("h.l").replace(" // ERR", ""));
    rejects(
        &src("h.o"),
        "Expression with a component of type 'varbit<16>' cannot be used in 'select'",
    );
    rejects(
        &src("h.l, h.o"),
        "Expression with a component of type 'varbit<16>' cannot be used in 'select'",
    );
}
