//! P4Info's view of P4 types: `P4DataTypeSpec`s for registers and digests, the `type_info`
//! section, and the `bitwidth`/`type_name` pair of the "constrained values" (match fields,
//! action parameters, packet metadata), following p4c's `TypeSpecConverter` and the
//! P4Runtime guidance for `type` and `@p4runtime_translation`.
//!
//! - Every named type a P4Info object refers to is described once in `type_info`, together
//!   with the named types it refers to in turn: structs, headers (members flattened: a nested
//!   struct's fields are named `s.f`), header unions, enums, serializable enums (member values
//!   as big-endian bytes of the underlying width), `error` (all members, core's first), and
//!   `new_types`.
//! - A `type` with `@p4runtime_translation(uri, W | string)` is a `translated_type`; one
//!   without is an `original_type`: the bit string it is ultimately defined as (following
//!   other `type`s, as the guidance says: `type foo_t bar_t` with `type bit<32> foo_t` is
//!   `bit<32>`, and `foo_t` is not listed unless something else uses it).
//! - Constrained values: a user `type` gives `type_name`, and `bitwidth` is the translated
//!   width (unset for `string`), else the width of the value; a serializable enum gives no
//!   `type_name` (but is listed in `type_info`); a plain enum (psa's `PSA_MeterColor_t` as
//!   an action parameter) gives `type_name` and no `bitwidth`.

use std::collections::HashSet;

use koi_ir::types::{Member, P4Type, TypeDecl, TypeTable};
use koi_proto::p4info::{
    P4BitTypeSpec, P4BitstringLikeTypeSpec, P4BoolType, P4DataTypeSpec, P4EnumTypeSpec,
    P4ErrorType, P4ErrorTypeSpec, P4HeaderStackTypeSpec, P4HeaderTypeSpec,
    P4HeaderUnionStackTypeSpec, P4HeaderUnionTypeSpec, P4IntTypeSpec, P4NamedType, P4NewTypeSpec,
    P4NewTypeTranslation, P4SerializableEnumTypeSpec, P4StructTypeSpec, P4TupleTypeSpec,
    P4TypeInfo, P4VarbitTypeSpec, p4_bitstring_like_type_spec as bs, p4_data_type_spec::TypeSpec,
    p4_enum_type_spec, p4_header_type_spec, p4_header_union_type_spec,
    p4_new_type_spec::Representation, p4_new_type_translation::SdnString,
    p4_new_type_translation::SdnType, p4_serializable_enum_type_spec, p4_struct_type_spec,
};

use crate::error::Problem;

/// `bitwidth` and `type_name` of a match field, action parameter or packet metadata field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Constrained {
    pub bitwidth: i32,
    pub type_name: Option<P4NamedType>,
}

/// Builds `type_info` while type specs are converted.
pub(crate) struct TypeInfoBuilder<'p> {
    types: &'p TypeTable,
    errors: &'p [String],
    pub info: P4TypeInfo,
    pub problems: Vec<Problem>,
}

fn named(name: &str) -> P4NamedType {
    P4NamedType {
        name: name.to_string(),
    }
}

fn int32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

fn bits(ts: bs::TypeSpec) -> P4BitstringLikeTypeSpec {
    P4BitstringLikeTypeSpec {
        type_spec: Some(ts),
        ..Default::default()
    }
}

fn data(ts: TypeSpec) -> P4DataTypeSpec {
    P4DataTypeSpec {
        type_spec: Some(ts),
    }
}

impl<'p> TypeInfoBuilder<'p> {
    pub fn new(types: &'p TypeTable, errors: &'p [String]) -> Self {
        TypeInfoBuilder {
            types,
            errors,
            info: P4TypeInfo::default(),
            problems: Vec::new(),
        }
    }

    fn decl(&mut self, name: &str, owner: &str) -> Option<&'p TypeDecl> {
        let d = self.types.get(name);
        if d.is_none() {
            self.problems.push(Problem::Dangling {
                owner: owner.to_string(),
                what: "type declaration",
                detail: name.to_string(),
            });
        }
        d
    }

    fn unsupported(&mut self, owner: &str, ty: &P4Type) {
        self.problems.push(Problem::UnsupportedType {
            owner: owner.to_string(),
            ty: ty.to_string(),
        });
    }

    /// The `P4DataTypeSpec` of `ty`, describing the named types it uses in `type_info`.
    pub fn spec(&mut self, ty: &P4Type, owner: &str) -> P4DataTypeSpec {
        let ts = match ty {
            P4Type::Bit(w) => TypeSpec::Bitstring(bits(bs::TypeSpec::Bit(P4BitTypeSpec {
                bitwidth: int32(*w),
            }))),
            P4Type::Int(w) => TypeSpec::Bitstring(bits(bs::TypeSpec::Int(P4IntTypeSpec {
                bitwidth: int32(*w),
            }))),
            P4Type::Varbit(w) => {
                TypeSpec::Bitstring(bits(bs::TypeSpec::Varbit(P4VarbitTypeSpec {
                    max_bitwidth: int32(*w),
                })))
            }
            P4Type::Bool => TypeSpec::Bool(P4BoolType {}),
            P4Type::Error => {
                self.error_type();
                TypeSpec::Error(P4ErrorType {})
            }
            P4Type::Tuple(ts) => TypeSpec::Tuple(P4TupleTypeSpec {
                members: ts.iter().map(|t| self.spec(t, owner)).collect(),
            }),
            P4Type::Stack { elem, size } => return self.stack(elem, *size, owner),
            P4Type::Struct(n)
            | P4Type::Header(n)
            | P4Type::HeaderUnion(n)
            | P4Type::Enum(n)
            | P4Type::SerEnum(n)
            | P4Type::NewType(n) => return self.named_spec(n, owner),
        };
        data(ts)
    }

    fn stack(&mut self, elem: &P4Type, size: u32, owner: &str) -> P4DataTypeSpec {
        let spec = self.spec(elem, owner);
        let size = int32(size);
        match spec.type_spec {
            Some(TypeSpec::Header(h)) => data(TypeSpec::HeaderStack(P4HeaderStackTypeSpec {
                header: Some(h),
                size,
            })),
            Some(TypeSpec::HeaderUnion(u)) => {
                data(TypeSpec::HeaderUnionStack(P4HeaderUnionStackTypeSpec {
                    header_union: Some(u),
                    size,
                }))
            }
            _ => {
                self.unsupported(owner, elem);
                P4DataTypeSpec::default()
            }
        }
    }

    /// The spec of a named type (by its declaration's kind) and its `type_info` entry.
    fn named_spec(&mut self, name: &str, owner: &str) -> P4DataTypeSpec {
        let Some(decl) = self.decl(name, owner) else {
            return P4DataTypeSpec::default();
        };
        self.describe(decl, owner);
        let n = named(name);
        data(match decl {
            TypeDecl::Struct { .. } => TypeSpec::Struct(n),
            TypeDecl::Header { .. } => TypeSpec::Header(n),
            TypeDecl::HeaderUnion { .. } => TypeSpec::HeaderUnion(n),
            TypeDecl::Enum { .. } => TypeSpec::Enum(n),
            TypeDecl::SerEnum { .. } => TypeSpec::SerializableEnum(n),
            TypeDecl::NewType { .. } => TypeSpec::NewType(n),
        })
    }

    /// `type_info.error`, with every error of the program.
    fn error_type(&mut self) {
        if self.info.error.is_none() {
            self.info.error = Some(P4ErrorTypeSpec {
                members: self.errors.to_vec(),
            });
        }
    }

    /// Adds the `type_info` entry of `decl` (once), and of the types it uses.
    fn describe(&mut self, decl: &'p TypeDecl, owner: &str) {
        let info = &self.info;
        let key = decl.name().to_string();
        let done = match decl {
            TypeDecl::Struct { .. } => info.structs.contains_key(&key),
            TypeDecl::Header { .. } => info.headers.contains_key(&key),
            TypeDecl::HeaderUnion { .. } => info.header_unions.contains_key(&key),
            TypeDecl::Enum { .. } => info.enums.contains_key(&key),
            TypeDecl::SerEnum { .. } => info.serializable_enums.contains_key(&key),
            TypeDecl::NewType { .. } => info.new_types.contains_key(&key),
        };
        if done {
            return;
        }
        match decl {
            TypeDecl::Struct { members, .. } => {
                // Placeholder first, so that a (malformed) recursive struct terminates.
                self.info
                    .structs
                    .insert(key.clone(), P4StructTypeSpec::default());
                let members = members
                    .iter()
                    .map(|m| p4_struct_type_spec::Member {
                        name: m.name.clone(),
                        type_spec: Some(self.spec(&m.ty, owner)),
                    })
                    .collect();
                let spec = P4StructTypeSpec {
                    members,
                    ..Default::default()
                };
                self.info.structs.insert(key, spec);
            }
            TypeDecl::Header { members, .. } => {
                self.info
                    .headers
                    .insert(key.clone(), P4HeaderTypeSpec::default());
                let mut out = Vec::new();
                self.flatten(members, "", owner, &mut HashSet::new(), &mut out);
                let spec = P4HeaderTypeSpec {
                    members: out,
                    ..Default::default()
                };
                self.info.headers.insert(key, spec);
            }
            TypeDecl::HeaderUnion { members, .. } => {
                self.info
                    .header_unions
                    .insert(key.clone(), P4HeaderUnionTypeSpec::default());
                let members = members
                    .iter()
                    .map(|m| {
                        let header = match self.spec(&m.ty, owner).type_spec {
                            Some(TypeSpec::Header(h)) => Some(h),
                            _ => {
                                self.unsupported(owner, &m.ty);
                                None
                            }
                        };
                        p4_header_union_type_spec::Member {
                            name: m.name.clone(),
                            header,
                        }
                    })
                    .collect();
                let spec = P4HeaderUnionTypeSpec {
                    members,
                    ..Default::default()
                };
                self.info.header_unions.insert(key, spec);
            }
            TypeDecl::Enum { members, .. } => {
                let members = members
                    .iter()
                    .map(|m| p4_enum_type_spec::Member {
                        name: m.clone(),
                        ..Default::default()
                    })
                    .collect();
                let spec = P4EnumTypeSpec {
                    members,
                    ..Default::default()
                };
                self.info.enums.insert(key, spec);
            }
            TypeDecl::SerEnum { members, .. } => {
                let width = members.first().map_or(0, |(_, v)| v.width());
                let spec = P4SerializableEnumTypeSpec {
                    underlying_type: Some(P4BitTypeSpec {
                        bitwidth: int32(width),
                    }),
                    members: members
                        .iter()
                        .map(|(n, v)| p4_serializable_enum_type_spec::Member {
                            name: n.clone(),
                            value: v.to_be_bytes(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                self.info.serializable_enums.insert(key, spec);
            }
            TypeDecl::NewType {
                name,
                translation,
                annotations,
                ..
            } => {
                self.info
                    .new_types
                    .insert(key.clone(), P4NewTypeSpec::default());
                let representation = match translation {
                    Some(t) => Representation::TranslatedType(P4NewTypeTranslation {
                        uri: t.uri.clone(),
                        sdn_type: Some(match t.sdn_bitwidth {
                            Some(w) => SdnType::SdnBitwidth(int32(w)),
                            None => SdnType::SdnString(SdnString {}),
                        }),
                    }),
                    None => {
                        let base = self.base_type(name, owner);
                        Representation::OriginalType(match base {
                            Some(t) => self.spec(&t, owner),
                            None => P4DataTypeSpec::default(),
                        })
                    }
                };
                // The translation is the representation, not an annotation; every other
                // annotation is copied, `@p4runtime_translation_mappings` included (p4c's
                // frontend leaves it unparsed: its tokens joined by spaces).
                let converted =
                    crate::annotations::convert(annotations, &["p4runtime_translation"]);
                let spec = P4NewTypeSpec {
                    representation: Some(representation),
                    annotations: converted.annotations,
                    structured_annotations: converted.structured,
                    ..Default::default()
                };
                self.info.new_types.insert(key, spec);
            }
        }
    }

    /// What the `type` named `name` is ultimately defined as (other `type`s followed).
    fn base_type(&mut self, name: &str, owner: &str) -> Option<P4Type> {
        let mut seen = HashSet::new();
        let mut cur = name.to_string();
        loop {
            if !seen.insert(cur.clone()) {
                self.unsupported(owner, &P4Type::NewType(name.to_string()));
                return None;
            }
            match self.decl(&cur, owner)? {
                TypeDecl::NewType {
                    ty: P4Type::NewType(next),
                    ..
                } => cur = next.clone(),
                TypeDecl::NewType { ty, .. } => return Some(ty.clone()),
                other => return Some(named_type(other)),
            }
        }
    }

    /// The members of a header, nested structs flattened into `prefix.field` members.
    fn flatten(
        &mut self,
        members: &'p [Member],
        prefix: &str,
        owner: &str,
        seen: &mut HashSet<String>,
        out: &mut Vec<p4_header_type_spec::Member>,
    ) {
        for m in members {
            let name = format!("{prefix}{}", m.name);
            if let P4Type::Struct(s) = &m.ty {
                if let Some(TypeDecl::Struct { members, .. }) = self.decl(s, owner)
                    && seen.insert(s.clone())
                {
                    self.flatten(members, &format!("{name}."), owner, seen, out);
                    seen.remove(s);
                }
                continue;
            }
            let type_spec = self.header_field(&m.ty, owner);
            out.push(p4_header_type_spec::Member { name, type_spec });
        }
    }

    /// A header field's bit string: `type`s and serializable enums by their representation.
    fn header_field(&mut self, ty: &P4Type, owner: &str) -> Option<P4BitstringLikeTypeSpec> {
        let resolved = match ty {
            P4Type::NewType(n) => {
                self.named_spec(n, owner);
                self.base_type(n, owner)?
            }
            other => other.clone(),
        };
        let resolved = match resolved {
            P4Type::SerEnum(n) => {
                self.named_spec(&n, owner);
                match self.types.get(&n) {
                    Some(TypeDecl::SerEnum { members, .. }) => {
                        P4Type::Bit(members.first().map_or(0, |(_, v)| v.width()))
                    }
                    _ => P4Type::SerEnum(n),
                }
            }
            P4Type::Bool => P4Type::Bit(1),
            other => other,
        };
        match self.spec(&resolved, owner).type_spec {
            Some(TypeSpec::Bitstring(b)) => Some(b),
            _ => {
                self.unsupported(owner, ty);
                None
            }
        }
    }

    /// `bitwidth` and `type_name` of a constrained value of `width` bits whose named type (if
    /// any) is `type_name`; the named type goes to `type_info`.
    pub fn constrained(&mut self, width: u32, type_name: Option<&str>, owner: &str) -> Constrained {
        let plain = Constrained {
            bitwidth: int32(width),
            type_name: None,
        };
        let Some(name) = type_name else {
            return plain;
        };
        let Some(decl) = self.decl(name, owner) else {
            return plain;
        };
        self.describe(decl, owner);
        match decl {
            TypeDecl::NewType { translation, .. } => Constrained {
                bitwidth: match translation {
                    Some(t) => t.sdn_bitwidth.map_or(0, int32),
                    None => int32(width),
                },
                type_name: Some(named(name)),
            },
            TypeDecl::Enum { .. } => Constrained {
                bitwidth: 0,
                type_name: Some(named(name)),
            },
            _ => plain,
        }
    }

    /// `index_type_name` of a counter, meter or register indexed by `ty`: set for a user
    /// `type`; any named type is described in `type_info`.
    pub fn index_type_name(&mut self, ty: &P4Type, owner: &str) -> Option<P4NamedType> {
        self.spec(ty, owner);
        match ty {
            P4Type::NewType(n) => Some(named(n)),
            _ => None,
        }
    }
}

/// The `P4Type` naming `decl`.
fn named_type(decl: &TypeDecl) -> P4Type {
    let n = decl.name().to_string();
    match decl {
        TypeDecl::Struct { .. } => P4Type::Struct(n),
        TypeDecl::Header { .. } => P4Type::Header(n),
        TypeDecl::HeaderUnion { .. } => P4Type::HeaderUnion(n),
        TypeDecl::Enum { .. } => P4Type::Enum(n),
        TypeDecl::SerEnum { .. } => P4Type::SerEnum(n),
        TypeDecl::NewType { .. } => P4Type::NewType(n),
    }
}

#[cfg(test)]
#[path = "types_tests.rs"]
mod tests;
