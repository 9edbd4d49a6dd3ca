//! Compile-time evaluation and the facts recorded in `Checked` for lowering: constant values,
//! types of expressions, implicit casts, resolutions.
mod common;
use common::{rejects, run};
use koi_sema::{Checked, Resolution, Ty, Value};
use num_bigint::BigInt;

fn const_value(checked: &Checked, name: &str) -> Option<Value> {
    let d = checked.top_level_named(name)?;
    checked.decl(d)?.value.clone()
}

fn int(v: i64) -> Option<Value> {
    Some(Value::Int(BigInt::from(v)))
}

#[test]
fn integer_arithmetic_wraps_at_the_type_width() {
    let (c, _, errs) = run(
        "const bit<8> a = 250 + 10;\nconst bit<8> b = 8w250 + 8w10;\nconst int<8> s = 127;\nconst int<8> t = s + 1;\nconst bit<8> u = 8w250 |+| 8w10;\nconst int big = 1 << 100;\nconst bit<4> sl = 8w0xAB[7:4];\nconst bit<16> cat = 8w1 ++ 8w2;\n",
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(const_value(&c, "a"), int(4));
    assert_eq!(const_value(&c, "b"), int(4));
    assert_eq!(const_value(&c, "t"), int(-128));
    assert_eq!(const_value(&c, "u"), int(255));
    assert_eq!(
        const_value(&c, "big"),
        Some(Value::Int(BigInt::from(1) << 100usize))
    );
    assert_eq!(const_value(&c, "sl"), int(0xA));
    assert_eq!(const_value(&c, "cat"), int(0x0102));
}

#[test]
fn booleans_enums_errors_and_casts() {
    let (c, _, errs) = run(
        "error { Oops }\nenum bit<8> E { A = 7 }\nconst bool b = !(1 < 2) || true;\nconst bit<8> e = (bit<8>)E.A;\nconst error x = error.Oops;\nconst int<8> n = (int<8>)8w255;\nconst bool one = (bool)1w1;\n",
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(const_value(&c, "b"), Some(Value::Bool(true)));
    assert_eq!(const_value(&c, "e"), int(7));
    assert_eq!(const_value(&c, "x"), Some(Value::Error("Oops".into())));
    assert_eq!(const_value(&c, "n"), int(-1));
    assert_eq!(const_value(&c, "one"), Some(Value::Bool(true)));
}

#[test]
fn sizes_and_struct_values() {
    let (c, _, errs) = run(
        "header H { bit<8> a; varbit<16> v; }\nstruct S { bit<4> x; bool y; }\nconst int min = H.minSizeInBits();\nconst int max = H.maxSizeInBytes();\nconst S s = { x = 3, y = true };\nconst bit<4> sx = s.x;\n",
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(const_value(&c, "min"), int(8));
    assert_eq!(const_value(&c, "max"), int(3));
    assert_eq!(const_value(&c, "sx"), int(3));
}

#[test]
fn evaluation_errors_are_diagnostics() {
    rejects("const int a = 1 / 0; // ERR\n", "Division by zero");
    rejects("const int a = 1 << -1; // ERR\n", "negative");
    rejects(
        "const bit<8> x = 1;\nconst bit<8> y = x / 0; // ERR\n",
        "Division by zero",
    );
    rejects(
        "extern bit<8> f();\nconst bit<8> c = f(); // ERR\n",
        "top level",
    );
}

#[test]
fn implicit_casts_and_types_are_recorded() {
    let (c, _, errs) = run("control k(inout bit<8> x) { apply { x = x + 1; } }\n");
    assert!(errs.is_empty(), "{errs:?}");
    let b8 = c
        .types
        .iter_ids()
        .find(|t| *c.types.get(*t) == Ty::Bit(8))
        .expect("bit<8>");
    // The literal `1` is an `int` cast to `bit<8>`.
    let lit = c
        .expr_types
        .iter()
        .find(|(id, t)| **t == koi_sema::TypeId::INF_INT && c.casts.get(id) == Some(&b8))
        .map(|(id, _)| *id)
        .expect("a cast literal");
    assert_eq!(c.consts.get(&lit), int(1).as_ref());
    assert_eq!(c.type_after_casts(lit), Some(b8));
    // `x` resolves to the parameter.
    let k = c.top_level_named("k").expect("k");
    let x = c.decl(k).expect("k").params[0];
    assert!(
        c.resolutions
            .values()
            .filter(|r| **r == Resolution::Decl(x))
            .count()
            >= 2
    );
}

#[test]
fn substitute_specialises_generic_types() {
    let (mut c, _, errs) = run("struct S<T> { T f; }\nconst S<bit<8>> s = { f = 1 };\n");
    assert!(errs.is_empty(), "{errs:?}");
    let sdecl = c.top_level_named("S").expect("S");
    let info = c.decl(sdecl).expect("S").clone();
    let b16 = c.types.intern(Ty::Bit(16));
    let map = [(info.type_params[0], b16)].into_iter().collect();
    let t = koi_sema::substitute(&mut c.types, info.ty, &map);
    assert_eq!(c.types.display(t), "struct S<bit<16>>");
    let Ty::Agg(a) = c.types.get(t) else {
        panic!("an aggregate")
    };
    assert_eq!(a.fields[0].ty, b16);
}
