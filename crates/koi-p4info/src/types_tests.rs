//! Unit tests of [`super`]: type specs, `type_info` entries, constrained values.

use super::*;
use koi_ir::types::{Annotation, Translation};
use koi_ir::value::Bits;

fn member(name: &str, ty: P4Type) -> Member {
    Member {
        name: name.into(),
        ty,
    }
}

fn newtype(name: &str, ty: P4Type, translation: Option<(&str, Option<u32>)>) -> TypeDecl {
    TypeDecl::NewType {
        name: name.into(),
        ty,
        translation: translation.map(|(uri, w)| Translation {
            uri: uri.into(),
            sdn_bitwidth: w,
        }),
        annotations: Vec::new(),
    }
}

fn table() -> TypeTable {
    TypeTable {
        decls: vec![
            newtype("foo_t", P4Type::Bit(32), None),
            newtype("bar_t", P4Type::NewType("foo_t".into()), None),
            newtype("Mac_t", P4Type::Bit(48), Some(("x/Mac_t", Some(32)))),
            newtype("Name_t", P4Type::Bit(16), Some(("x/Name_t", None))),
            TypeDecl::Enum {
                name: "Color".into(),
                members: vec!["RED".into(), "GREEN".into()],
            },
            TypeDecl::SerEnum {
                name: "Kind".into(),
                members: vec![
                    ("A".into(), Bits::from_u64(8, 1)),
                    ("B".into(), Bits::from_u64(8, 0xff)),
                ],
            },
            TypeDecl::Struct {
                name: "inner_t".into(),
                members: vec![member("f8", P4Type::Bit(8))],
                annotations: vec![],
            },
            TypeDecl::Header {
                name: "h_t".into(),
                members: vec![
                    member("s", P4Type::Struct("inner_t".into())),
                    member("mac", P4Type::NewType("Mac_t".into())),
                    member("k", P4Type::SerEnum("Kind".into())),
                ],
                annotations: vec![],
            },
            TypeDecl::Struct {
                name: "digest_t".into(),
                members: vec![
                    member("h", P4Type::Header("h_t".into())),
                    member("e", P4Type::Error),
                    member("b", P4Type::NewType("bar_t".into())),
                    member("c", P4Type::Enum("Color".into())),
                    member("flag", P4Type::Bool),
                ],
                annotations: vec![],
            },
            TypeDecl::HeaderUnion {
                name: "u_t".into(),
                members: vec![member("h", P4Type::Header("h_t".into()))],
                annotations: vec![],
            },
        ],
    }
}

fn errors() -> Vec<String> {
    vec!["NoError".into(), "PacketTooShort".into(), "Custom".into()]
}

fn bit(w: i32) -> P4DataTypeSpec {
    data(TypeSpec::Bitstring(bits(bs::TypeSpec::Bit(
        P4BitTypeSpec { bitwidth: w },
    ))))
}

#[test]
fn anonymous_types_need_no_type_info() {
    let (t, e) = (table(), errors());
    let mut b = TypeInfoBuilder::new(&t, &e);
    assert_eq!(b.spec(&P4Type::Bit(16), "x"), bit(16));
    let int = b.spec(&P4Type::Int(8), "x");
    assert!(matches!(
        int.type_spec,
        Some(TypeSpec::Bitstring(P4BitstringLikeTypeSpec {
            type_spec: Some(bs::TypeSpec::Int(P4IntTypeSpec { bitwidth: 8 })),
            ..
        }))
    ));
    let tuple = b.spec(&P4Type::Tuple(vec![P4Type::Bool, P4Type::Varbit(64)]), "x");
    let Some(TypeSpec::Tuple(tuple)) = tuple.type_spec else {
        panic!("tuple expected")
    };
    assert_eq!(tuple.members.len(), 2);
    assert_eq!(b.info, P4TypeInfo::default());
    assert!(b.problems.is_empty());
}

#[test]
fn a_digest_struct_describes_everything_it_uses() {
    let (t, e) = (table(), errors());
    let mut b = TypeInfoBuilder::new(&t, &e);
    let spec = b.spec(&P4Type::Struct("digest_t".into()), "digest");
    assert_eq!(spec.type_spec, Some(TypeSpec::Struct(named("digest_t"))));
    assert!(b.problems.is_empty(), "{:?}", b.problems);
    let info = &b.info;
    let keys = |m: Vec<&String>| m.into_iter().cloned().collect::<Vec<_>>();
    assert_eq!(keys(info.structs.keys().collect()), ["digest_t"]);
    assert_eq!(keys(info.headers.keys().collect()), ["h_t"]);
    assert_eq!(keys(info.enums.keys().collect()), ["Color"]);
    assert_eq!(keys(info.serializable_enums.keys().collect()), ["Kind"]);
    // bar_t's chain through foo_t is followed, and foo_t is not listed.
    assert_eq!(keys(info.new_types.keys().collect()), ["Mac_t", "bar_t"]);
    assert_eq!(
        info.new_types["bar_t"].representation,
        Some(Representation::OriginalType(bit(32)))
    );
    assert_eq!(
        info.error.as_ref().map(|e| e.members.clone()),
        Some(errors())
    );
    // The header's nested struct is flattened; its `type` and enum fields are bit strings.
    let names: Vec<&str> = info.headers["h_t"]
        .members
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(names, ["s.f8", "mac", "k"]);
    let widths: Vec<Option<bs::TypeSpec>> = info.headers["h_t"]
        .members
        .iter()
        .map(|m| m.type_spec.clone().and_then(|t| t.type_spec))
        .collect();
    assert_eq!(
        widths,
        [8, 48, 8].map(|w| Some(bs::TypeSpec::Bit(P4BitTypeSpec { bitwidth: w })))
    );
    let kind = &info.serializable_enums["Kind"];
    assert_eq!(kind.underlying_type, Some(P4BitTypeSpec { bitwidth: 8 }));
    assert_eq!(kind.members[1].value, vec![0xff]);
    let members = &info.structs["digest_t"].members;
    assert_eq!(
        members[2]
            .type_spec
            .as_ref()
            .and_then(|t| t.type_spec.clone()),
        Some(TypeSpec::NewType(named("bar_t")))
    );
    assert_eq!(
        members[4]
            .type_spec
            .as_ref()
            .and_then(|t| t.type_spec.clone()),
        Some(TypeSpec::Bool(P4BoolType {}))
    );
}

#[test]
fn translated_types_give_their_sdn_width_or_none() {
    let (t, e) = (table(), errors());
    let mut b = TypeInfoBuilder::new(&t, &e);
    let mac = b.constrained(48, Some("Mac_t"), "t");
    assert_eq!(
        mac,
        Constrained {
            bitwidth: 32,
            type_name: Some(named("Mac_t"))
        }
    );
    let s = b.constrained(16, Some("Name_t"), "t");
    assert_eq!(s.bitwidth, 0);
    assert_eq!(
        b.info.new_types["Name_t"].representation,
        Some(Representation::TranslatedType(P4NewTypeTranslation {
            uri: "x/Name_t".into(),
            sdn_type: Some(SdnType::SdnString(SdnString {})),
        }))
    );
    let plain = b.constrained(32, Some("foo_t"), "t");
    assert_eq!(plain.bitwidth, 32);
    assert_eq!(plain.type_name, Some(named("foo_t")));
}

/// A `type`'s annotations go to its `new_types` entry, except the translation (its
/// representation).
#[test]
fn new_types_keep_their_annotations() {
    let mut t = table();
    t.decls.push(TypeDecl::NewType {
        name: "Eth_t".into(),
        ty: P4Type::Bit(48),
        translation: Some(Translation {
            uri: "x/Eth_t".into(),
            sdn_bitwidth: Some(48),
        }),
        annotations: vec![
            Annotation::text("p4runtime_translation", "\"x/Eth_t\" , 48"),
            Annotation::flag("custom_0"),
            Annotation::text("custom_1", "\"my annon\""),
        ],
    });
    let e = errors();
    let mut b = TypeInfoBuilder::new(&t, &e);
    b.constrained(48, Some("Eth_t"), "t");
    assert_eq!(
        b.info.new_types["Eth_t"].annotations,
        vec![
            "@custom_0".to_string(),
            "@custom_1(\"my annon\")".to_string()
        ]
    );
    b.constrained(32, Some("foo_t"), "t");
    assert!(b.info.new_types["foo_t"].annotations.is_empty());
}

/// SAI P4's `@p4runtime_translation_mappings` is an ordinary annotation to P4Info: copied into
/// the entry, translated or not, as p4c's frontend leaves it (unparsed, tokens joined by one
/// space), as in the P4Info p4c writes for PINS' middleblock.
#[test]
fn translation_mappings_are_copied_unparsed() {
    let mut t = table();
    let mappings = || Annotation::text("p4runtime_translation_mappings", "{\n  {\"\", 0},\n}");
    t.decls.push(TypeDecl::NewType {
        name: "vrf_id_t".into(),
        ty: P4Type::Bit(10),
        translation: None,
        annotations: vec![mappings()],
    });
    t.decls.push(TypeDecl::NewType {
        name: "port_id_t".into(),
        ty: P4Type::Bit(9),
        translation: Some(Translation {
            uri: String::new(),
            sdn_bitwidth: None,
        }),
        annotations: vec![
            Annotation::text("p4runtime_translation", "\"\" , string"),
            mappings(),
        ],
    });
    let e = errors();
    let mut b = TypeInfoBuilder::new(&t, &e);
    b.constrained(10, Some("vrf_id_t"), "t");
    b.constrained(9, Some("port_id_t"), "t");
    let want = vec!["@p4runtime_translation_mappings({ { \"\" , 0 } , })".to_string()];
    assert_eq!(b.info.new_types["vrf_id_t"].annotations, want);
    assert_eq!(b.info.new_types["port_id_t"].annotations, want);
}

#[test]
fn enums_as_constrained_values() {
    let (t, e) = (table(), errors());
    let mut b = TypeInfoBuilder::new(&t, &e);
    // A serializable enum: no type_name, but described.
    assert_eq!(
        b.constrained(8, Some("Kind"), "t"),
        Constrained {
            bitwidth: 8,
            type_name: None
        }
    );
    assert!(b.info.serializable_enums.contains_key("Kind"));
    // A plain enum: type_name, no bitwidth.
    assert_eq!(
        b.constrained(2, Some("Color"), "t"),
        Constrained {
            bitwidth: 0,
            type_name: Some(named("Color"))
        }
    );
    assert_eq!(b.constrained(9, None, "t").bitwidth, 9);
    assert!(b.problems.is_empty());
}

#[test]
fn stacks_unions_and_index_types() {
    let (t, e) = (table(), errors());
    let mut b = TypeInfoBuilder::new(&t, &e);
    let stack = P4Type::Stack {
        elem: Box::new(P4Type::Header("h_t".into())),
        size: 3,
    };
    assert_eq!(
        b.spec(&stack, "r").type_spec,
        Some(TypeSpec::HeaderStack(P4HeaderStackTypeSpec {
            header: Some(named("h_t")),
            size: 3
        }))
    );
    let ustack = P4Type::Stack {
        elem: Box::new(P4Type::HeaderUnion("u_t".into())),
        size: 2,
    };
    assert!(matches!(
        b.spec(&ustack, "r").type_spec,
        Some(TypeSpec::HeaderUnionStack(_))
    ));
    assert_eq!(
        b.info.header_unions["u_t"].members[0].header,
        Some(named("h_t"))
    );
    assert_eq!(
        b.index_type_name(&P4Type::NewType("foo_t".into()), "c"),
        Some(named("foo_t"))
    );
    assert_eq!(b.index_type_name(&P4Type::Bit(32), "c"), None);
    assert!(b.problems.is_empty());
}

#[test]
fn missing_and_unsupported_types_are_reported() {
    let (t, e) = (table(), errors());
    let mut b = TypeInfoBuilder::new(&t, &e);
    b.spec(&P4Type::Struct("nope".into()), "digest d");
    let bad_stack = P4Type::Stack {
        elem: Box::new(P4Type::Bit(8)),
        size: 2,
    };
    b.spec(&bad_stack, "register r");
    assert_eq!(
        b.problems,
        [
            Problem::Dangling {
                owner: "digest d".into(),
                what: "type declaration",
                detail: "nope".into()
            },
            Problem::UnsupportedType {
                owner: "register r".into(),
                ty: "bit<8>".into()
            },
        ]
    );
}
