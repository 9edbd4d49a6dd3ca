//! Declaration tests: every declaration kind, tables, externs, parsers, controls and
//! annotations.

use super::{decl, errs, ex, int, ok, path, ty};
use crate::ast::*;

fn only(src: &str) -> DeclKind {
    let mut p = ok(src);
    assert_eq!(p.decls.len(), 1, "{:?}", p.decls);
    p.decls.remove(0).kind
}

#[test]
fn type_declarations() {
    let p = ok(
        "header H<T> { @a T f; bit<8> arr[4]; }\nheader_union U { H<bit<8>> a; }\nstruct S {}\ntypedef H<bit<1>>[3] Stack;\ntype bit<32> Addr;\ntypedef struct P { bit<1> x; } Q;\n;",
    );
    let kinds: Vec<String> = p
        .decls
        .iter()
        .map(|d| match &d.kind {
            DeclKind::Header {
                name,
                type_params,
                fields,
            } => format!(
                "header {}<{}> {}",
                name.name,
                type_params
                    .iter()
                    .map(|t| t.name.clone())
                    .collect::<Vec<_>>()
                    .join(","),
                fields
                    .iter()
                    .map(|f| format!("{} {};", ty(&f.ty), f.name.name))
                    .collect::<String>()
            ),
            DeclKind::HeaderUnion { name, fields, .. } => {
                format!("union {} {}", name.name, fields.len())
            }
            DeclKind::Struct { name, .. } => format!("struct {}", name.name),
            DeclKind::Typedef { ty: t, name } => format!("typedef {} {}", ty(t), name.name),
            DeclKind::NewType { ty: t, name } => format!("type {} {}", ty(t), name.name),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "header H<T> T f;bit<8>[4] arr;",
            "union U 1",
            "struct S",
            "typedef H<bit<1>>[3] Stack",
            "type bit<32> Addr",
            "struct P",
            "typedef P Q",
        ]
    );
}

#[test]
fn enums_errors_and_match_kinds() {
    let DeclKind::Enum {
        repr,
        name,
        members,
    } = only("enum bit<8> E { A = 1, B = 2, }")
    else {
        panic!()
    };
    assert_eq!(repr.map(|t| ty(&t)), Some("bit<8>".into()));
    assert_eq!(name.name, "E");
    assert_eq!(
        members
            .iter()
            .map(|m| m.value.as_ref().map(ex))
            .collect::<Vec<_>>(),
        [Some("1".into()), Some("2".into())]
    );
    let DeclKind::Enum {
        repr: None,
        members,
        ..
    } = only("enum F { X, Y }")
    else {
        panic!()
    };
    assert_eq!(members.len(), 2);
    assert_eq!(
        only("error { A, B }"),
        DeclKind::Error(vec![
            Ident::new("A", crate::Span::new(8, 9)),
            Ident::new("B", crate::Span::new(11, 12))
        ])
    );
    assert!(matches!(only("match_kind { exact, lpm, }"), DeclKind::MatchKind(v) if v.len() == 2));
    // No trailing comma in error declarations (p4c rejects it at the `}`).
    let e = errs("error {\n  A,\n}");
    assert_eq!(e[0].0, 3);
}

#[test]
fn externs() {
    let DeclKind::Extern {
        name,
        type_params,
        methods,
    } = only(
        "extern Reg<T, I> { Reg(bit<32> size); Reg(bit<32> size, T init); T read(in I i); abstract void cb<U>(in U u); @pure void w(in I i, in T v); }",
    )
    else {
        panic!()
    };
    assert_eq!(name.name, "Reg");
    assert_eq!(type_params.len(), 2);
    let sig: Vec<String> = methods
        .iter()
        .map(|m| {
            format!(
                "{}{}:{}/{}{}",
                if m.is_abstract { "abstract " } else { "" },
                m.name.name,
                m.ret.as_ref().map(ty).unwrap_or("ctor".into()),
                m.params.len(),
                if m.annotations.is_empty() { "" } else { " @" }
            )
        })
        .collect();
    assert_eq!(
        sig,
        [
            "Reg:ctor/1",
            "Reg:ctor/2",
            "read:T/1",
            "abstract cb:void/1",
            "w:void/2 @"
        ]
    );
    let DeclKind::ExternFunction(f) = only("extern T f<T>(in T x, @optional in bit<8> y = 3);")
    else {
        panic!()
    };
    assert_eq!((f.name.name.as_str(), f.type_params.len()), ("f", 1));
    assert_eq!(f.params[1].default.as_ref().map(ex), Some("3".into()));
    assert_eq!(f.params[0].direction, Some(Direction::In));
    // `extern X;` is a forward declaration: nothing to keep.
    assert!(ok("extern X;").decls.is_empty());
    let DeclKind::ExternFunction(g) = only("extern Gen<bit<8>> g();") else {
        panic!()
    };
    assert_eq!(g.ret.as_ref().map(ty), Some("Gen<bit<8>>".into()));
}

#[test]
fn constructor_prototypes_need_a_type_name() {
    // p4c: constructors take no type parameters, and `m();` lacks a return type.
    let e = errs("extern Y\n{\n    Y<T>(in T arg);\n}");
    assert_eq!(e[0].0, 3);
    assert!(e[0].1.contains("unexpected ("), "{e:?}");
    let e = errs("extern Z\n{\n    m();\n}");
    assert!(e[0].1.contains("unexpected ("), "{e:?}");
}

#[test]
fn parsers_and_states() {
    let DeclKind::Parser {
        name,
        params,
        ctor_params,
        locals,
        states,
        ..
    } = only(
        "parser P(packet_in p, out H h)(bit<8> c) {
            value_set<bit<16>>(4) vs;
            bit<8> tmp;
            state start {
                p.extract(h.e);
                transition select(h.e.t, tmp) {
                    (0x800, _): v4;
                    (vs, 1 .. 2): v6;
                    (1 &&& 3, default): reject;
                    (default): accept;
                    5: accept;
                    default: accept;
                }
            }
            @name(\"x\") state v4 { transition accept; }
            state v6 { }
        }",
    )
    else {
        panic!()
    };
    assert_eq!(
        (
            name.name.as_str(),
            params.len(),
            ctor_params.len(),
            locals.len()
        ),
        ("P", 2, 1, 2)
    );
    assert!(matches!(&locals[0].kind, DeclKind::ValueSet { .. }));
    assert_eq!(states.len(), 3);
    let Some(TransitionKind::Select { exprs, cases }) =
        states[0].transition.as_ref().map(|t| &t.kind)
    else {
        panic!()
    };
    assert_eq!(exprs.len(), 2);
    let cases: Vec<String> = cases
        .iter()
        .map(|c| format!("{} -> {}", ex(&c.keyset), path(&c.next)))
        .collect();
    assert_eq!(
        cases,
        [
            "{2048 _} -> v4",
            "{vs (.. 1 2)} -> v6",
            "{(&&& 1 3) default} -> reject",
            "{default} -> accept",
            "5 -> accept",
            "default -> accept",
        ]
    );
    assert_eq!(states[1].annotations.len(), 1);
    assert!(states[2].transition.is_none());
}

#[test]
fn parenthesised_keyset_is_an_expression() {
    let DeclKind::Parser { states, .. } =
        only("parser P() { state s { transition select(x) { (1): accept; (2) &&& 3: reject; } } }")
    else {
        panic!()
    };
    let Some(TransitionKind::Select { cases, .. }) = states[0].transition.as_ref().map(|t| &t.kind)
    else {
        panic!()
    };
    assert_eq!(ex(&cases[0].keyset), "1");
    assert_eq!(ex(&cases[1].keyset), "(&&& 2 3)");
}

#[test]
fn parser_and_control_types_and_packages() {
    let p = ok(
        "parser P<H>(out H h);\ncontrol C<H>(inout H h);\npackage S<H>(P<H> p, C<H> c);\nS(MyP(), MyC()) main;",
    );
    assert!(
        matches!(&p.decls[0].kind, DeclKind::ParserType { type_params, .. } if type_params.len() == 1)
    );
    assert!(matches!(&p.decls[1].kind, DeclKind::ControlType { .. }));
    assert!(matches!(&p.decls[2].kind, DeclKind::PackageType { params, .. } if params.len() == 2));
    assert_eq!(decl(&p.decls[3]), "(inst S ((call MyP) (call MyC)) main)");
}

#[test]
fn controls_actions_and_tables() {
    let DeclKind::Control { locals, body, .. } = only(
        "control C(inout H h) {
            bit<8> v;
            const bit<8> k = 1;
            Counter(1) cnt;
            action a(bit<8> x) { v = x; }
            action b() {}
            table t {
                key = { h.f: exact @name(\"f\"); h.g & 3: ternary; }
                actions = { a; @defaultonly b; .c(1); }
                const entries = {
                    const priority = 10: (1, _): a(1);
                    priority = (k + 1): 2 &&& 3: b() @x;
                    default: b;
                }
                @hidden const default_action = b();
                size = 1024;
                apply = 1;
            }
            apply @atomic { t.apply(); }
        }",
    ) else {
        panic!()
    };
    assert_eq!(locals.len(), 6);
    assert_eq!(body.annotations.len(), 1);
    let DeclKind::Table { name, properties } = &locals[5].kind else {
        panic!()
    };
    assert_eq!(name.name, "t");
    let kinds: Vec<String> = properties.iter().map(|p| prop(&p.kind)).collect();
    assert_eq!(
        kinds,
        [
            "key (. h f):exact@1 (& (. h g) 3):ternary@0",
            "actions a @b .c(1)",
            "const entries const[10] {1 _}:(call a 1) [(+ k 1)] (&&& 2 3):(call b)@1 default:b",
            "const default_action=(call b)",
            "size=1024",
            "apply=1",
        ]
    );
    assert_eq!(properties[3].annotations.len(), 1);
}

fn prop(k: &TablePropertyKind) -> String {
    match k {
        TablePropertyKind::Key(keys) => format!(
            "key {}",
            keys.iter()
                .map(|k| format!(
                    "{}:{}@{}",
                    ex(&k.expr),
                    k.match_kind.name,
                    k.annotations.len()
                ))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        TablePropertyKind::Actions(refs) => format!(
            "actions {}",
            refs.iter()
                .map(|r| format!(
                    "{}{}{}",
                    if r.annotations.is_empty() { "" } else { "@" },
                    path(&r.name),
                    r.args
                        .as_ref()
                        .map(|a| format!(
                            "({})",
                            a.iter().map(|a| ex(&a.value)).collect::<String>()
                        ))
                        .unwrap_or_default()
                ))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        TablePropertyKind::Entries { is_const, entries } => format!(
            "{}entries {}",
            if *is_const { "const " } else { "" },
            entries
                .iter()
                .map(|e| format!(
                    "{}{}{}:{}{}",
                    if e.is_const { "const" } else { "" },
                    e.priority
                        .as_ref()
                        .map(|p| format!("[{}] ", ex(p)))
                        .unwrap_or_default(),
                    ex(&e.keyset),
                    ex(&e.action),
                    if e.annotations.is_empty() {
                        String::new()
                    } else {
                        format!("@{}", e.annotations.len())
                    }
                ))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        TablePropertyKind::Other {
            is_const,
            name,
            value,
        } => {
            format!(
                "{}{}={}",
                if *is_const { "const " } else { "" },
                name.name,
                ex(value)
            )
        }
    }
}

#[test]
fn table_property_rules() {
    // `key` and `actions` take neither annotations nor `const`; tables need a property.
    for src in ["@a key = { }", "const actions = { }"] {
        let e = errs(&format!("control c() {{ table t {{ {src} }} apply {{}} }}"));
        assert!(e[0].1.contains("unexpected"), "{e:?}");
    }
    assert!(!errs("control c() { table t { } apply {} }").is_empty());
    // `entries` outside a table.
    let e = errs("control c() {\n  const entries = { };\n  apply {}\n}");
    assert_eq!(e[0].0, 2);
}

#[test]
fn actions_cannot_be_named_by_keywords() {
    let e = errs("control c() {\n    action default() {}\n    apply {}\n}");
    assert_eq!(e[0].0, 2);
    assert!(e[0].1.contains("unexpected DEFAULT"), "{e:?}");
}

#[test]
fn functions_and_instantiations_at_top_level() {
    let p = ok(
        "bit<8> f<T>(in T x, bit<8> y = 2) { return y; }\nvoid g() {}\nExt<bit<8>>(1, n = 2) e;\nVirtual() v = { void run() {} Ext<bit<8>>(1) inner; };",
    );
    assert!(
        matches!(&p.decls[0].kind, DeclKind::Function { type_params, params, .. } if type_params.len() == 1 && params.len() == 2)
    );
    assert!(
        matches!(&p.decls[1].kind, DeclKind::Function { ret, .. } if ret.kind == TypeKind::Void)
    );
    assert_eq!(decl(&p.decls[2]), "(inst Ext<bit<8>> (1 n=2) e)");
    assert_eq!(
        decl(&p.decls[3]),
        "(inst Virtual () v {(function run) (inst Ext<bit<8>> (1) inner)})"
    );
    // No global variables.
    let e = errs("bit<8> x;");
    assert!(e[0].1.contains("unexpected ;"), "{e:?}");
}

#[test]
fn annotations() {
    let p = ok(
        "@name(\"n\") @id(3) @hidden @a(x, (y z)) @s[1, \"t\"] @kv[k = 1, l = true,] @e[] @pragma p a b\nconst bit<8> c = 1;",
    );
    let anns = &p.decls[0].annotations;
    let show: Vec<String> = anns
        .iter()
        .map(|a| {
            let body = match &a.body {
                AnnotationBody::Empty => "-".to_string(),
                AnnotationBody::Unstructured { tokens, exprs } => format!(
                    "[{}] {}",
                    tokens
                        .iter()
                        .map(|t| t.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    exprs
                        .as_ref()
                        .map(|e| e.iter().map(ex).collect::<Vec<_>>().join(","))
                        .unwrap_or("none".into())
                ),
                AnnotationBody::StructuredList(l) => {
                    format!("list {}", l.iter().map(ex).collect::<Vec<_>>().join(","))
                }
                AnnotationBody::StructuredKv(kv) => format!(
                    "kv {}",
                    kv.iter()
                        .map(|(k, v)| format!("{}={}", k.name, ex(v)))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            };
            format!("{} {body}", a.name.name)
        })
        .collect();
    assert_eq!(
        show,
        [
            "name [\"n\"] \"n\"",
            "id [3] 3",
            "hidden -",
            "a [x , ( y z )] none",
            "s list 1,\"t\"",
            "kv kv k=1,l=true",
            "e list ",
            "p [a b] none",
        ]
    );
}

#[test]
fn free_form_annotation_bodies_accept_any_token() {
    let p = ok("@scrabble(What's 6 * 9? # 42 {#} ...)\nconst bit<8> c = 1;");
    let AnnotationBody::Unstructured { tokens, exprs } = &p.decls[0].annotations[0].body else {
        panic!()
    };
    assert_eq!(tokens.len(), 11);
    assert!(exprs.is_none());
}

#[test]
fn annotation_errors() {
    let e = errs("@pkginfo\nconst bit<32> x = 0;");
    assert_eq!(e[0].0, 1);
    let e = errs("/* c */\n@IllegalMixing[key=4, 5]\ncontrol d() { apply {} }");
    assert_eq!(e[0].0, 2);
    assert!(e[0].1.contains("unexpected INTEGER"), "{e:?}");
}

#[test]
fn integer_literal_values_reach_the_tree() {
    let DeclKind::Const { value, .. } = only("const bit<8> c = 8w0xFF;") else {
        panic!()
    };
    let ExprKind::Int(l) = &value.kind else {
        panic!()
    };
    assert_eq!((int(l), l.radix), ("8w255".into(), 16));
}

#[test]
fn spans_cover_declarations() {
    let src = "  @a const bit<8> c = 1;  ";
    let p = ok(src);
    let s = p.decls[0].span;
    assert_eq!(&src[s.lo as usize..s.hi as usize], "@a const bit<8> c = 1;");
}
