//! Type declarations and written types: widths, nesting rules, enums, typedef and `type`,
//! generic aggregates, recursive and oversized types.
mod common;
use common::{ok, rejects};

#[test]
fn widths_are_compile_time_constants() {
    ok("const int W = 7;\nheader h { bit<(W + 1)> a; int<W> b; varbit<32> c; }\n");
    rejects(
        "control c(in bit<8> w) { apply { bit<w> x; } } // ERR\n",
        "compile-time constant",
    );
}

#[test]
fn huge_and_invalid_widths_are_diagnostics() {
    rejects(
        "header h { bit<99999999999> a; } // ERR\n",
        "does not support bitstrings this large",
    );
    rejects(
        "header h { bit<2147483648> a; } // ERR\n",
        "does not support bitstrings this large",
    );
    rejects(
        "header h { int<0> a; } // ERR\n",
        "Width of signed type cannot be zero",
    );
    rejects("header h { varbit<-2> a; } // ERR\n", "invalid type size");
    // p4c's limit for bit<W> and int<W> is 2048 bits, for types, literals and `++`; varbit
    // fields may be longer (fabric's INT header has a varbit<8032>).
    ok("header h { bit<2048> a; int<2048> b; varbit<8032> c; }\n");
    rejects(
        "header h { bit<2049> a; } // ERR\n",
        "2049: this implementation does not support bitstrings this large (max 2048)",
    );
    rejects(
        "header h { int<4096> a; } // ERR\n",
        "does not support bitstrings this large",
    );
    rejects(
        "const bit<8> x = (bit<8>)4096w1; // ERR\n",
        "does not support bitstrings this large",
    );
    rejects(
        "control c(in bit<2048> a, out bit<8> o) { apply {\n o = (a ++ a)[7:0]; // ERR\n } }\n",
        "result width 4096 is too large",
    );
    rejects("header h { bit<(true)> a; } // ERR\n", "integer");
}

#[test]
fn header_field_types_follow_the_nesting_rules() {
    ok(
        "enum bit<8> E { A = 1 }\nstruct s { bit<4> a; bool b; }\nheader h { bit<8> x; int<4> y; bool z; E e; s t; varbit<8> v; }\n",
    );
    rejects(
        "error { X }\nheader h { error e; } // ERR\n",
        "cannot have type 'error'",
    );
    rejects("header h { int x; } // ERR\n", "cannot have type 'int'");
    rejects(
        "header h { tuple<bit<1>, bit<1>> t; } // ERR\n",
        "cannot have type 'tuple",
    );
    rejects(
        "enum E { A }\nheader h { E e; } // ERR\n",
        "cannot have type 'enum E'",
    );
    rejects(
        "header g { bit<8> a; }\nheader h { g inner; } // ERR\n",
        "cannot have type 'header g'",
    );
}

#[test]
fn union_and_struct_field_rules() {
    ok(
        "header a { bit<8> x; }\nheader b { bit<16> y; }\nheader_union u { a a; b b; }\nstruct s { u u; a[2] st; tuple<bit<8>, bool> t; }\n",
    );
    rejects(
        "header_union u { bit<8> x; } // ERR\n",
        "cannot have type 'bit<8>'",
    );
    rejects(
        "parser p();\nstruct s { p field; } // ERR\n",
        "cannot have type 'parser p'",
    );
}

#[test]
fn duplicate_fields_and_members_are_errors() {
    rejects(
        "header h {\n bit<8> u;\n bit<8> u; // ERR\n}\n",
        "Duplicates declaration",
    );
    rejects("enum E { a, b,\n b } // ERR\n", "Duplicates declaration");
    rejects(
        "enum bit<4> e { a = 1, a = 1 } // ERR\n",
        "Duplicates declaration",
    );
}

#[test]
fn serializable_enums() {
    ok("enum bit<8> E { A = 1, B = 2, C = 0xff }\nconst E x = E.B;\nconst bit<8> y = E.C;\n");
    rejects("enum int E { A = 1 } // ERR\n", "Illegal type for enum");
    rejects(
        "type bit<8> T;\nenum T E { A = 1 } // ERR\n",
        "type-declared types are not allowed",
    );
    rejects(
        "enum bit<4> e {\n a = { 1, 2 } // ERR\n}\n",
        "type mismatch",
    );
}

#[test]
fn serializable_enum_values_must_fit_the_underlying_type() {
    ok("enum bit<2> E { A = 0, B = 3 }\nenum int<4> S { A = -8, B = 7 }\n");
    rejects(
        "enum bit<2> E {\n A = 1,\n B = 5 // ERR\n}\n",
        "B: Serialized enum constant value 5 is out of bounds of the underlying type bit<2>; \
         the value 5 requires 3 bits but the underlying unsigned type bit<2> only contains 2 bits",
    );
    rejects(
        "enum bit<8> E { A = -1 } // ERR\n",
        "the value -1 is negative, but the underlying type bit<8> is unsigned",
    );
    rejects(
        "enum int<4> E { A = 8 } // ERR\n",
        "the value 8 requires 5 bits but the underlying signed type int<4> only contains 4 bits",
    );
    // A folded constant expression counts too.
    rejects("enum bit<4> E { A = 4 * 4 } // ERR\n", "out of bounds");
}

#[test]
fn typedef_is_transparent_and_type_is_nominal() {
    ok("typedef bit<8> B;\nconst B x = 1;\nconst bit<8> y = x;\n");
    ok("type bit<32> N;\nconst N n = (N)32w1;\nconst bit<32> m = (bit<32>)n;\n");
    rejects(
        "type bit<32> N;\ncontrol c(out N n) { apply { bit<32> b = 0; n = b + b; } } // ERR\n",
        "type mismatch",
    );
    rejects(
        "type tuple<int> Narrow; // ERR\n",
        "`type' can only be applied to base types",
    );
}

#[test]
fn int_literals_take_a_new_type_where_it_is_unified() {
    // Initializers, assignments, arguments (directed and directionless), return values and
    // list elements; also through a new type over a new type and a typedef over it.
    ok("type bit<9> P;\ntype P Q;\ntypedef Q R;\ntype int<8> S;\n\
         const P p0 = 5;\n\
         extern void f(in P p);\nextern void g(P p);\n\
         struct st { P a; R b; }\n\
         P h() { return 3; }\n\
         control c(inout P x, out S s) { apply { x = 7; f(1); g(2); R r = 4; s = -1; st v = { 1, 2 }; } }\n");
    // A sized value, a new type over bool, and an operation are not converted.
    rejects(
        "type bit<9> P;\ncontrol c(out P x) { apply { x = 9w7; } } // ERR\n",
        "type mismatch",
    );
    rejects(
        "type bool B;\ncontrol c(out B x) { apply { x = 1; } } // ERR\n",
        "type mismatch",
    );
    rejects(
        "type bit<9> P;\ncontrol c(in P x, out bool b) { apply { b = x == 1; } } // ERR\n",
        "cannot compare values of types P and int",
    );
}

#[test]
fn generic_structs_must_be_specialized() {
    ok(
        "struct S<T> { T field; bool valid; }\nconst S<bit<32>> s = { field = 32w0, valid = false };\n",
    );
    rejects(
        "struct S<T> { T f; }\nconst S x = { f = 1 }; // ERR\n",
        "no type parameters supplied",
    );
    rejects(
        "struct S<T> { T f; }\nconst S<bit<8>, bit<8>> x = { f = 1 }; // ERR\n",
        "has 1 type parameter(s), but it is specialized with 2",
    );
    rejects(
        "header H<T> { T t; }\ncontrol c() { H<int> h; apply { } } // ERR\n",
        "cannot have type 'int'",
    );
}

#[test]
fn self_references_are_errors_not_crashes() {
    rejects(
        "struct S { S s; } // ERR\n",
        "Self-referencing types not supported",
    );
    rejects(
        "struct h<t> { t f; }\ntypedef h<bit> tt;\ntypedef h<tt> t; // ERR\n",
        "contains self",
    );
    rejects(
        "control p() { p() x; apply { } } // ERR\n",
        "Self-referencing",
    );
}

#[test]
fn stacks_and_arrays() {
    ok("header h { bit<8> a; }\nstruct s { h[4] hs; bit<8>[3] arr; }\n");
    rejects(
        "header h { bit<8> a; }\nstruct s { h[-2] hs; } // ERR\n",
        "Illegal array size",
    );
    rejects(
        "control c(in bit<8> n) { apply { bit<8>[n] a; } } // ERR\n",
        "compile-time constant",
    );
}

#[test]
fn stack_sizes_are_positive() {
    ok("header h { bit<8> a; }\nstruct s { h[1] one; h[16] many; }\n");
    rejects(
        "header h { bit<8> a; }\nstruct s { h[0] none; } // ERR\n",
        "Illegal array size: 0",
    );
    rejects(
        "header h { bit<8> a; }\nconst int N = 2 - 2;\nstruct s { h[N] none; } // ERR\n",
        "Illegal array size: 0",
    );
    rejects(
        "header h { bit<8> a; }\nstruct s { h[-2] none; } // ERR\n",
        "Illegal array size: -2",
    );
}
