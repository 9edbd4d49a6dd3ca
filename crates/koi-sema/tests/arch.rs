//! Instantiation and architectures: constructor calls and their arguments, where objects may
//! be instantiated, abstract methods, packages and `main`.
mod common;
use common::{ok, rejects, run, with_core};
use koi_sema::{CheckOptions, Ty};
use koi_syntax::PpOptions;

const ARCH: &str = "parser Prs<H>(packet_in b, out H h);\ncontrol Ctl<H>(inout H h);\npackage Sw<H>(Prs<H> p, Ctl<H> c);\nheader hdr { bit<8> f; }\nstruct hs { hdr h; }\n";

fn arch(rest: &str) -> String {
    with_core(&format!("{ARCH}{rest}"))
}

#[test]
fn main_is_checked_against_its_package() {
    let src = arch(
        "parser P(packet_in b, out hs h) { state start { transition accept; } }\ncontrol C(inout hs h) { apply { } }\nSw(P(), C()) main;\n",
    );
    let (checked, _, errs) = run(&src);
    assert!(errs.is_empty(), "{errs:?}");
    let main = checked.main.as_ref().expect("main");
    let Ty::Package(p) = checked.types.get(main.ty) else {
        panic!("main is a package")
    };
    assert_eq!(p.args.len(), 1);
    assert_eq!(checked.types.display(p.args[0]), "struct hs");
}

#[test]
fn package_arguments_must_match() {
    rejects(
        &arch(
            "parser P(packet_in b, in hs h) { state start { transition accept; } }\ncontrol C(inout hs h) { apply { } }\nSw(P(), C()) main; // ERR\n",
        ),
        "type mismatch",
    );
    rejects(
        &arch(
            "control D(inout bit<8> h) { apply { } }\ncontrol C(inout hs h) { apply { } }\nSw(D(), C()) main; // ERR\n",
        ),
        "type mismatch",
    );
}

#[test]
fn main_must_be_a_package() {
    rejects("extern E { E(); }\nE() main; // ERR\n", "expected package");
    let (sm, prog, _) =
        koi_syntax::parse_str("t.p4", "const bit<8> x = 1;\n", &PpOptions::default());
    let _ = sm;
    let (_, d) = koi_sema::check(&prog, &CheckOptions { require_main: true });
    assert!(
        d.has_errors(),
        "a missing main is an error when main is required"
    );
    let (_, d) = koi_sema::check(&prog, &CheckOptions::default());
    assert!(
        !d.has_errors(),
        "library mode accepts programs without main"
    );
}

#[test]
fn constructor_arguments_are_compile_time_known() {
    ok("control p()(bit y) { apply { } }\ncontrol q() { p(1w1) p1; apply { p1.apply(); } }\n");
    rejects(
        "control p()(bit y) { apply { } }\ncontrol q(in bit z) {\n p(z) p1; // ERR\n apply { } }\n",
        "compile-time constant",
    );
    rejects(
        "extern R<T> { R(T init); }\ncontrol c() {\n R<bit<8>>(16w1) r; // ERR\n apply { } }\n",
        "type mismatch",
    );
    rejects(
        "extern X<T> { }\nparser p() {\n X() x; // ERR\n state start { transition accept; } }\n",
        "no matching constructor",
    );
}

#[test]
fn where_objects_may_be_instantiated() {
    rejects(
        "control C() { apply { } }\nC() c; // ERR\n",
        "cannot instantiate at top-level",
    );
    rejects(
        "parser P() { state start { transition accept; } }\ncontrol C() {\n P() p; // ERR\n apply { } }\n",
        "instantiation of parser in control",
    );
    rejects("struct s { }\ns() s1; // ERR\n", "cannot allocate objects");
    rejects(
        "extern g { g(); abstract void h(); }\npackage p(g a);\np(g()) main; // ERR\n",
        "abstract methods cannot be instantiated using a constructor call",
    );
}

#[test]
fn abstract_methods() {
    let ext = "extern Virtual { Virtual(); abstract bit<16> f(in bit<16> ix); }\n";
    ok(&format!(
        "{ext}control c(inout bit<16> p) {{ Virtual() v = {{ bit<16> f(in bit<16> ix) {{ return ix + this.f(ix); }} }}; apply {{ p = v.f(6); }} }}\n"
    ));
    rejects(
        &format!("{ext}control c() {{\n Virtual() v = {{ // ERR\n }}; apply {{ }} }}\n"),
        "f abstract method not implemented",
    );
    rejects(
        &format!(
            "{ext}control c() {{ Virtual() v = {{\n bit<16> g(in bit<16> ix) {{ return ix; }} // ERR\n bit<16> f(in bit<16> ix) {{ return ix; }} }}; apply {{ }} }}\n"
        ),
        "no matching abstract method",
    );
    rejects(
        "extern E { E(); }\ncontrol c() {\n E() e = { bit<8> f() { return 1; } }; // ERR\n apply { } }\n",
        "without abstract methods",
    );
    rejects(
        &format!("{ext}control c() {{\n Virtual() v; // ERR\n apply {{ }} }}\n"),
        "v: must declare abstract methods for Virtual",
    );
    rejects(
        &format!(
            "{ext}control c() {{ Virtual() v = {{\n bit<16> f<T>(in bit<16> ix) {{ return ix; }} // ERR\n }}; apply {{ }} }}\n"
        ),
        "abstract method implementations cannot be generic",
    );
    rejects(
        &format!(
            "{ext}control c() {{ Virtual() v = {{\n bit<16> f(in bit<16> ix) {{ return ix; }}\n bit<16> f(in bit<16> iy) {{ return iy; }} // ERR\n }}; apply {{ }} }}\n"
        ),
        "f: Duplicates declaration f",
    );
    rejects(
        "control c() { apply {\n bit<8> x = this.y; // ERR\n } }\n",
        "'this' can only be used",
    );
}

#[test]
fn parameters_of_blocks_and_externs() {
    rejects(
        "control C();\nextern W {\n W(C c); // ERR\n}\n",
        "parameter cannot have type control C",
    );
    rejects(
        "parser Parser();\nparser MyParser(Parser p); // ERR\n",
        "parameter cannot have type parser Parser",
    );
    rejects(
        "control c()(\n in bit<8> x) { apply { } } // ERR\n",
        "Constructor parameters cannot have a direction",
    );
    rejects(
        "extern void f(\n in string s); // ERR\n",
        "cannot have a direction",
    );
    rejects(
        "control c(\n out bit<8> x = 1) { apply { } } // ERR\n",
        "out parameters cannot have default values",
    );
}

#[test]
fn factory_calls_in_constructor_arguments_take_constant_arguments() {
    // A factory function builds an extern object at instantiation time, before any packet.
    let pre = "extern widget<T> { }\nextern widget<T> make<T>(T a);\nheader h { bit<16> f; }\ncontrol c1<T>(inout h x)(widget<T> w) { apply { } }\n";
    ok(&with_core(&format!(
        "{pre}control c2(inout h x) {{ c1<bit<16>>(make(16w3)) c; apply {{ c.apply(x); }} }}\n"
    )));
    rejects(
        &with_core(&format!(
            "{pre}control c2(inout h x) {{\n c1<bit<16>>(make(x.f)) c; // ERR\n apply {{ c.apply(x); }} }}\n"
        )),
        // p4c: only a call with compile-time known arguments may return an extern object.
        "illegal return type extern widget<bit<16>>",
    );
}
