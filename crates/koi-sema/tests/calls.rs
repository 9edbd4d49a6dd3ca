//! Calls: argument matching (named, default, optional), directions and l-values, overloads,
//! generic inference, actions and where calls may be made, extern methods, `apply`.
mod common;
use common::{ok, rejects, run, with_core};
use koi_sema::{CallTarget, Ty};

#[test]
fn argument_counts_names_and_defaults() {
    let pre =
        "extern void f(in bit<16> x, in bool y);\nextern void g(in bit<8> a, in bit<8> b = 3);\n";
    ok(&format!(
        "{pre}control c() {{ apply {{ f(1, true); f(y = true, x = 2); g(1); g(b = 1, a = 2); }} }}\n"
    ));
    rejects(
        &format!("{pre}control c() {{ apply {{ f(1); }} }} // ERR\n"),
        "No argument supplied for parameter y",
    );
    rejects(
        &format!("{pre}control c() {{ apply {{ f(1, true, 3); }} }} // ERR\n"),
        "too many arguments",
    );
    rejects(
        &format!("{pre}control c() {{ apply {{ f(y = true, 2); }} }} // ERR\n"),
        "all or none",
    );
    rejects(
        &format!("{pre}control c() {{ apply {{ f(y = true, y = true); }} }} // ERR\n"),
        "twice",
    );
    rejects(
        &format!("{pre}control c() {{ apply {{ f(z = 1, y = true); }} }} // ERR\n"),
        "no parameter named z",
    );
}

#[test]
fn only_in_parameters_take_default_values() {
    ok("extern void f(in bit<8> a = 1, bit<8> b = 2);\nvoid g(in bit<8> a = 3) { }\n");
    rejects(
        "extern void f(out bit<8> a = 1); // ERR\n",
        "a: out parameters cannot have default values",
    );
    // An inout parameter is written back, like an out one.
    rejects(
        "void f(inout bit<8> a = 1) { } // ERR\n",
        "a: out parameters cannot have default values",
    );
    rejects(
        "extern void f(in bit<8> a,\n @optional in bit<8> b = 1); // ERR\n",
        "b: optional parameters cannot have default values",
    );
}

#[test]
fn optional_parameters() {
    ok(
        "extern void h<T>(in bit<8> a, @optional in T b);\ncontrol c() { apply { h(1); h(1, true); } }\n",
    );
    rejects(
        "control g(in bit t)(@optional bit tt) { apply { } } // ERR\n",
        "optional parameter not allowed here",
    );
    // Only externs may leave a parameter unbound: a function's body reads it.
    rejects(
        "bit<8> f(@optional in bit<8> a) { return a; } // ERR\n",
        "a: optional parameter not allowed here",
    );
}

#[test]
fn out_and_inout_arguments_must_be_lvalues() {
    let pre = "extern void f(inout bit<8> a);\nextern void o(out bit<8> a);\n";
    ok(&format!(
        "{pre}control c(inout bit<8> x) {{ apply {{ f(x); o(_); bit<8> y; o(y); }} }}\n"
    ));
    rejects(
        &format!("{pre}control c(in bit<8> x) {{ apply {{ f(x); }} }} // ERR\n"),
        "Read-only value",
    );
    rejects(
        &format!("{pre}control c() {{ apply {{ f(8w1); }} }} // ERR\n"),
        "Read-only value",
    );
    rejects(
        "extern void f(in bit<32> x);\ncontrol c() { apply { f(_); } } // ERR\n",
        "only allowed for out parameters",
    );
    rejects(
        &format!("{pre}control c(inout bit<16> x) {{ apply {{ f(x); }} }} // ERR\n"),
        "expected bit<8>, found bit<16>",
    );
}

#[test]
fn generic_inference() {
    ok(
        "extern void f<T>(in T a, in T b);\ncontrol c(in bit<8> x) { apply { f(x, x); f(x, 1); f<bit<4>>(1, 2); } }\n",
    );
    rejects(
        "extern void f<T>(in T a, in T b);\ncontrol c(in bit<8> x) { apply { f(x, true); } } // ERR\n",
        "type mismatch",
    );
    rejects(
        "extern T g<T>();\ncontrol c() { apply { g(); } } // ERR\n",
        "could not infer a type for variable T",
    );
    rejects(
        "extern void f<T, U>(in T x);\ncontrol c() { apply { f<bit<8>>(1); } } // ERR\n",
        "2 type parameters expected, but 1",
    );
    rejects(
        "extern void f<T>(in T x);\ncontrol c() { apply { f(0xFFFF); } } // ERR\n",
        "could not infer a width",
    );
    // Nor a type containing int (p4c's BindTypeVariables), as a list expression's element.
    ok("extern void f<T>(in T x);\ncontrol c(in bit<8> y) { apply { f({8w1, y}); } }\n");
    rejects(
        "extern void f<T>(in T x);\ncontrol c(in bit<8> y) { apply {\n f({y, 2}); // ERR\n } }\n",
        "could not infer a width",
    );
    rejects(
        "extern E<T> { E(T x); }\ncontrol c() {\n E({1, 2}) e; // ERR\n apply { } }\n",
        "could not infer a width",
    );
    rejects(
        "void foo<T>(in T x) { }\ncontrol c() { apply { foo<string>(true); } } // ERR\n",
        "type mismatch",
    );
}

#[test]
fn generic_calls_record_type_arguments() {
    let (checked, _, errs) = run(
        "extern T id<T>(in T x);\ncontrol c(in bit<8> x, out bit<8> y) { apply { y = id(x); } }\n",
    );
    assert!(errs.is_empty(), "{errs:?}");
    let call = checked
        .calls
        .values()
        .find(|c| matches!(c.target, CallTarget::ExternFunction(_)))
        .expect("the call of id");
    assert_eq!(call.type_args.len(), 1);
    assert_eq!(*checked.types.get(call.type_args[0]), Ty::Bit(8));
    assert_eq!(call.arg_of_param, vec![Some(0)]);
}

#[test]
fn actions_calls() {
    let ctl = "control c(inout bit<8> x) {\n action a(inout bit<8> v, bit<8> d) { v = d; }\n action b() { a(x, 1); }\n apply { a(x, 2); b(); }\n}\n";
    ok(ctl);
    rejects(
        "action a() {}\nvoid f() {\n a(); // ERR\n}\n",
        "Functions cannot call actions",
    );
    rejects(
        "action a(bit<9> port) { }\ncontrol c() { apply {\n a(); // ERR\n } }\n",
        "No argument supplied for parameter port",
    );
    rejects(
        "action a() {}\ncontrol c() { apply {\n a<bit>(); // ERR\n } }\n",
        "Cannot supply type parameters",
    );
    rejects(
        "control c() {\n action a(out bit x0, bit y0, out bit z0) { } // ERR\n apply { } }\n",
        "direction-less action parameters have to be at the end",
    );
}

#[test]
fn verify_only_in_parsers() {
    rejects(
        &with_core("control C() { apply {\n verify(8w0 == 8w1, error.NoMatch); // ERR\n } }\n"),
        "only be invoked in parsers",
    );
    ok(&with_core(
        "parser P() { state start { verify(true, error.NoMatch); transition accept; } }\n",
    ));
}

#[test]
fn extern_methods_and_packet_checks() {
    let p = with_core(
        "header h { bit<8> f; }\nstruct s { h hh; h[2] st; }\nparser P(packet_in b, out s x) { state start { b.extract(x.hh); bit<8> v = b.lookahead<bit<8>>(); b.advance(8); transition accept; } }\n",
    );
    ok(&p);
    rejects(
        &with_core(
            "parser P(packet_in p, out bit<32> h) { state start {\n p.extract(h); // ERR\n transition accept; } }\n",
        ),
        "must be a header",
    );
    rejects(
        &with_core(
            "parser P(packet_in p) { state start {\n p.nosuch(); // ERR\n transition accept; } }\n",
        ),
        "no method nosuch",
    );
}

#[test]
fn extract_forms_follow_the_header_s_varbit_field() {
    let pre =
        "header f { bit<8> a; }\nheader v { bit<8> l; varbit<32> o; }\nstruct s { f a; v b; }\n";
    ok(&with_core(&format!(
        "{pre}parser P(packet_in p, out s x) {{ state start {{ p.extract(x.a); p.extract(x.b, 8); transition accept; }} }}\n"
    )));
    rejects(
        &with_core(&format!(
            "{pre}parser P(packet_in p, out s x) {{ state start {{\n p.extract(x.b); // ERR\n transition accept; }} }}\n"
        )),
        "extract: argument cannot contain varbit fields",
    );
    rejects(
        &with_core(&format!(
            "{pre}parser P(packet_in p, out s x) {{ state start {{\n p.extract(x.a, 8); // ERR\n transition accept; }} }}\n"
        )),
        "extract: argument should contain a varbit field",
    );
}

#[test]
fn a_header_extract_or_lookahead_reads_has_at_most_one_varbit_field() {
    // p4c reports the header at its first varbit field, where `extract` or `lookahead` reads
    // it; a declaration alone is accepted.
    let pre = "header v {\n bit<8> l;\n varbit<32> o;\n varbit<8> q;\n}\nstruct s { v b; }\n";
    ok(&with_core(pre));
    let err = |body: &str| {
        common::err(
            &with_core(&format!(
                "{pre}parser P(packet_in p, out s x) {{ state start {{\n {body}\n transition accept; }} }}\n"
            )),
            4,
            "o and q: multiple varbit fields in a header",
        )
    };
    err("p.extract(x.b, 8);");
    err("p.extract(x.b);");
    err("v w = p.lookahead<v>();");
}

#[test]
fn lookahead_cannot_read_header_unions() {
    let pre = "header h { bit<8> a; }\nheader_union u { h x; }\nstruct s { u b; }\n";
    ok(&with_core(&format!(
        "{pre}parser P(packet_in p) {{ state start {{ h w = p.lookahead<h>(); transition accept; }} }}\n"
    )));
    for t in ["u", "u[2]", "tuple<h, u>"] {
        rejects(
            &with_core(&format!(
                "{pre}parser P(packet_in p) {{ state start {{\n {t} w = p.lookahead<{t}>(); // ERR\n transition accept; }} }}\n"
            )),
            "type argument must be a fixed-width type",
        );
    }
}

#[test]
fn emit_takes_headers_and_aggregates_of_them() {
    let pre = "header h { bit<8> a; }\nheader_union u { h x; }\nstruct inner { h a; u b; h[2] c; }\nstruct s { inner i; h d; bit<8> m; }\n";
    ok(&with_core(&format!(
        "{pre}control D(packet_out p, in s x) {{ apply {{ p.emit(x.i); p.emit(x.d); p.emit(x.i.c); p.emit(x.i.b); p.emit({{ x.d, x.i }}); }} }}\n"
    )));
    for arg in ["x.m", "x", "{ x.d, x.m }"] {
        rejects(
            &with_core(&format!(
                "{pre}control D(packet_out p, in s x) {{ apply {{\n p.emit({arg}); // ERR\n }} }}\n"
            )),
            "emit: argument must be a header, stack or union, or a struct or tuple of such types",
        );
    }
}

#[test]
fn apply_of_parsers_controls_and_tables() {
    let src = "control Sub(inout bit<8> v) { apply { } }\ncontrol c(inout bit<8> x) {\n Sub() s;\n action a() {\n s.apply(x); // ERR\n }\n apply { s.apply(x); Sub.apply(x); }\n}\n";
    rejects(src, "apply cannot be called from actions");
    ok(
        "control Sub(inout bit<8> v) { apply { } }\ncontrol c(inout bit<8> x) { Sub() s; apply { s.apply(x); Sub.apply(x); } }\n",
    );
    rejects(
        "control Sub(inout bit<8> v) { apply { } }\ncontrol c(inout bit<8> x) { Sub() s; apply {\n s.apply(); // ERR\n } }\n",
        "No argument supplied",
    );
}

#[test]
fn recursion_is_rejected() {
    rejects("bit<8> f(in bit<8> x) {\n return f(x); // ERR\n}\n", "f");
}

#[test]
fn functions_must_return_on_all_paths() {
    rejects(
        "bit<16> max(in bit<16> l, in bit<16> r) { // ERR\n if (l > r) return l;\n}\n",
        "does not return a value on all paths",
    );
    ok("bit<16> max(in bit<16> l, in bit<16> r) { if (l > r) return l; else return r; }\n");
}

#[test]
fn extern_methods_cannot_return_int_or_string() {
    ok("extern E { E(); bit<8> f(); void g(); }\n");
    rejects(
        "extern E {\n E();\n int f(); // ERR\n}\n",
        "int: illegal return type for method",
    );
    rejects(
        "extern E {\n E();\n string f(); // ERR\n}\n",
        "string: illegal return type for method",
    );
}

#[test]
fn constructor_calls_are_not_allowed_in_actions() {
    let pre = "extern E { E(); }\nextern void use_e(E x);\n";
    ok(&format!(
        "{pre}control c() {{ E() inst; action a() {{ use_e(inst); }} apply {{ a(); use_e(E()); }} }}\n"
    ));
    rejects(
        &format!(
            "{pre}control c() {{ action a() {{\n use_e(E()); // ERR\n }} apply {{ a(); }} }}\n"
        ),
        "Constructor calls not allowed in actions",
    );
}

#[test]
fn extern_function_calls_are_compile_time_known_only_for_factories_and_pure_functions() {
    let pre = "extern E { E(); }\nextern E make(in bit<8> x);\nextern bit<8> g();\n@pure extern bit<8> p(in bit<8> x);\n";
    ok(&with_core(&format!(
        "{pre}control c() {{ const bit<8> k = p(1); E() e; apply {{ }} }}\n"
    )));
    rejects(
        &with_core(&format!(
            "{pre}control c() {{\n const bit<8> k = g(); // ERR\n apply {{ }} }}\n"
        )),
        "expression must evaluate to a constant",
    );
    rejects(
        &with_core(&format!(
            "{pre}parser q(in bit<8> x) {{ state start {{ transition select(x) {{\n g(): accept; // ERR\n default: reject; }} }} }}\n"
        )),
        "compile-time constant",
    );
    rejects(
        &with_core(&format!(
            "{pre}control c(in bit<8> y) {{ apply {{\n make(y); // ERR\n }} }}\n"
        )),
        "illegal return type extern E",
    );
}

#[test]
fn arguments_for_parameters_of_type_dont_care() {
    // p4c's issue3808-1.p4 with a value: `g`'s parameter has type `_` in `E<_>`.
    rejects(
        "extern E<T> { E(); void g(in T a); }\ncontrol c(E<_> tt) { apply {\n tt.g(8w1); // ERR\n } }\n",
        "Could not infer a type for parameter a (inferred type is don't care '_')",
    );
    ok("extern E<T> { E(); void g(in T a); }\ncontrol c(E<bit<8>> tt) { apply { tt.g(8w1); } }\n");
}
