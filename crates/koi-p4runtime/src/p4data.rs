//! `P4Data` (spec "Representation of Arbitrary P4 Types"): values of the P4 types P4Info
//! describes with a `P4DataTypeSpec`, to and from koi's flat values.
//!
//! koi keeps a struct value as its leaves in order (nested structs and tuples flattened): a
//! register of a struct packs them into one cell, first leaf highest (see koi-lower's
//! `extern_method`), a digest message lists them with their widths. This module walks the
//! type spec: `bit<W>`, `int<W>` (sign-extended canonical strings), `bool`, serializable enums
//! (`enum_value`), enums and `error` (member names, in declaration order), user `type`s
//! (their original type, or their translation, see [`crate::translate`]), structs, tuples and,
//! for values koi produces, headers (always valid: a digest carries no validity). Varbits,
//! header unions and stacks are `UNIMPLEMENTED` (no koi extern holds them). A value of the
//! wrong shape is `INVALID_ARGUMENT`, a number too wide `OUT_OF_RANGE`.

use crate::bytestring::{self, encode_int, encode_uint};
use crate::error::{Result, invalid, out_of_range, unimplemented};
use crate::translate::{Codec, Sdn, Strings};
use koi_ir::Bits;
use koi_proto::p4info::{
    P4BitstringLikeTypeSpec, P4DataTypeSpec, P4TypeInfo, p4_bitstring_like_type_spec as bl,
    p4_data_type_spec::TypeSpec as T, p4_new_type_spec::Representation,
    p4_new_type_translation::SdnType,
};
use koi_proto::p4runtime::{P4Data, P4Header, P4StructLike, p4_data::Data as D};
use std::collections::HashMap;

const MAX_DEPTH: u32 = 32;

/// One leaf of a type: how its bits are shown.
#[derive(Clone, Debug)]
enum Leaf {
    Bit(u32),
    Int(u32),
    Bool,
    SerEnum(u32),
    /// Member names; the width is the program's.
    Names(Vec<String>),
    Translated(Codec),
}

impl Leaf {
    fn width(&self) -> Option<u32> {
        match self {
            Leaf::Bit(w) | Leaf::Int(w) | Leaf::SerEnum(w) => Some(*w),
            Leaf::Bool => Some(1),
            Leaf::Names(_) => None,
            Leaf::Translated(c) => Some(c.width),
        }
    }
}

/// The types P4Data is read and written against: P4Info's, with the P4 widths of translated
/// `type`s ([`crate::schema::Schema::type_widths`]).
pub(crate) struct Types<'a> {
    pub info: &'a P4TypeInfo,
    pub widths: &'a HashMap<String, u32>,
}

impl<'a> Types<'a> {
    pub fn of(schema: &'a crate::schema::Schema) -> Types<'a> {
        Types {
            info: &schema.types,
            widths: &schema.type_widths,
        }
    }
}

fn width_of(w: i32) -> u32 {
    u32::try_from(w).unwrap_or(0)
}

fn bitstring_leaf(b: &P4BitstringLikeTypeSpec) -> Result<Leaf> {
    match &b.type_spec {
        Some(bl::TypeSpec::Bit(x)) => Ok(Leaf::Bit(width_of(x.bitwidth))),
        Some(bl::TypeSpec::Int(x)) => Ok(Leaf::Int(width_of(x.bitwidth))),
        _ => Err(unimplemented("varbit values")),
    }
}

impl Types<'_> {
    /// The leaf of a type spec that is one, or `None` for an aggregate.
    fn leaf(&self, spec: &P4DataTypeSpec, depth: u32) -> Result<Option<Leaf>> {
        Ok(Some(match &spec.type_spec {
            Some(T::Bitstring(b)) => bitstring_leaf(b)?,
            Some(T::Bool(_)) => Leaf::Bool,
            Some(T::SerializableEnum(n)) => {
                let e = self.info.serializable_enums.get(&n.name);
                Leaf::SerEnum(
                    e.and_then(|e| e.underlying_type)
                        .map_or(0, |u| width_of(u.bitwidth)),
                )
            }
            Some(T::Enum(n)) => Leaf::Names(
                self.info
                    .enums
                    .get(&n.name)
                    .map(|e| e.members.iter().map(|m| m.name.clone()).collect())
                    .unwrap_or_default(),
            ),
            Some(T::Error(_)) => Leaf::Names(
                self.info
                    .error
                    .as_ref()
                    .map(|e| e.members.clone())
                    .unwrap_or_default(),
            ),
            Some(T::NewType(n)) => match self
                .info
                .new_types
                .get(&n.name)
                .and_then(|t| t.representation.as_ref())
            {
                Some(Representation::OriginalType(o)) if depth < MAX_DEPTH => {
                    return self.leaf(o, depth + 1);
                }
                Some(Representation::TranslatedType(tr)) => {
                    let width = self.widths.get(&n.name).copied().unwrap_or(0);
                    let sdn = match tr.sdn_type {
                        Some(SdnType::SdnBitwidth(w)) => Sdn::Bits(width_of(w)),
                        Some(SdnType::SdnString(_)) => Sdn::Str(n.name.clone()),
                        None => Sdn::Plain,
                    };
                    Leaf::Translated(Codec { width, sdn })
                }
                _ => return Err(invalid(format!("type {} is not in the P4Info", n.name))),
            },
            _ => return Ok(None),
        }))
    }

    /// The members of an aggregate type spec, with whether it is a header.
    fn members(&self, spec: &P4DataTypeSpec) -> Result<(Vec<P4DataTypeSpec>, Kind)> {
        let missing = |n: &str| invalid(format!("type {n} is not in the P4Info"));
        Ok(match &spec.type_spec {
            Some(T::Struct(n)) => {
                let s = self
                    .info
                    .structs
                    .get(&n.name)
                    .ok_or_else(|| missing(&n.name))?;
                let m = s
                    .members
                    .iter()
                    .map(|m| m.type_spec.clone().unwrap_or_default());
                (m.collect(), Kind::Struct)
            }
            Some(T::Tuple(t)) => (t.members.clone(), Kind::Tuple),
            Some(T::Header(n)) => {
                let h = self
                    .info
                    .headers
                    .get(&n.name)
                    .ok_or_else(|| missing(&n.name))?;
                let m = h.members.iter().map(|m| P4DataTypeSpec {
                    type_spec: Some(T::Bitstring(m.type_spec.clone().unwrap_or_default())),
                });
                (m.collect(), Kind::Header)
            }
            _ => return Err(unimplemented("header unions, stacks and varbits in P4Data")),
        })
    }

    /// The leaves of a type spec in order.
    fn leaves(&self, spec: &P4DataTypeSpec, depth: u32, out: &mut Vec<Leaf>) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(invalid("type nesting too deep"));
        }
        if let Some(l) = self.leaf(spec, depth)? {
            out.push(l);
            return Ok(());
        }
        let (members, _) = self.members(spec)?;
        members
            .iter()
            .try_for_each(|m| self.leaves(m, depth + 1, out))
    }

    /// The widths of the leaves of `spec`, whose values take `total` bits together (the one
    /// leaf whose width P4Info does not say, an enum's or `error`'s, gets the rest).
    pub fn leaf_widths(&self, spec: &P4DataTypeSpec, total: u32) -> Result<Vec<u32>> {
        let mut leaves = Vec::new();
        self.leaves(spec, 0, &mut leaves)?;
        let known: u32 = leaves.iter().filter_map(|l| l.width()).sum();
        let unknown = leaves.iter().filter(|l| l.width().is_none()).count();
        let rest = total.checked_sub(known);
        match (unknown, rest) {
            (0, Some(0)) => {}
            (1, Some(r)) if r > 0 => {}
            _ => {
                return Err(unimplemented(format!(
                    "values of {total} bits do not match their P4Info type"
                )));
            }
        }
        Ok(leaves
            .iter()
            .map(|l| l.width().unwrap_or(rest.unwrap_or(0)))
            .collect())
    }

    /// The P4Data of `spec` holding `values` (its leaves in order).
    pub fn encode(
        &self,
        strings: &Strings,
        spec: &P4DataTypeSpec,
        values: &[Bits],
    ) -> Result<P4Data> {
        let mut next = 0;
        let d = self.encode_at(strings, spec, values, &mut next, 0)?;
        if next != values.len() {
            return Err(invalid("more values than the type has fields"));
        }
        Ok(d)
    }

    fn encode_at(
        &self,
        strings: &Strings,
        spec: &P4DataTypeSpec,
        values: &[Bits],
        next: &mut usize,
        depth: u32,
    ) -> Result<P4Data> {
        if depth > MAX_DEPTH {
            return Err(invalid("type nesting too deep"));
        }
        if let Some(l) = self.leaf(spec, depth)? {
            let v = values
                .get(*next)
                .ok_or_else(|| invalid("fewer values than the type has fields"))?;
            *next += 1;
            let data = match l {
                Leaf::Bit(_) => D::Bitstring(encode_uint(v)),
                Leaf::Int(_) => D::Bitstring(encode_int(v)),
                Leaf::Bool => D::Bool(!v.is_zero()),
                Leaf::SerEnum(_) => D::EnumValue(encode_uint(v)),
                Leaf::Names(names) => {
                    let name = v.to_u64().and_then(|i| names.get(i as usize));
                    D::Enum(name.cloned().unwrap_or_else(|| format!("{v}")))
                }
                Leaf::Translated(c) => D::Bitstring(c.encode(v, strings)),
            };
            return Ok(P4Data { data: Some(data) });
        }
        let (members, kind) = self.members(spec)?;
        let mut out = Vec::with_capacity(members.len());
        for m in &members {
            out.push(self.encode_at(strings, m, values, next, depth + 1)?);
        }
        let data = match kind {
            Kind::Struct => D::Struct(P4StructLike { members: out }),
            Kind::Tuple => D::Tuple(P4StructLike { members: out }),
            Kind::Header => D::Header(P4Header {
                is_valid: true,
                bitstrings: out
                    .into_iter()
                    .map(|d| match d.data {
                        Some(D::Bitstring(b)) => b,
                        _ => Vec::new(),
                    })
                    .collect(),
            }),
        };
        Ok(P4Data { data: Some(data) })
    }

    /// The leaves of `data`, a value of `spec` whose leaves have `widths`.
    pub fn decode(
        &self,
        strings: &mut Strings,
        spec: &P4DataTypeSpec,
        data: &P4Data,
        widths: &[u32],
        what: &str,
    ) -> Result<Vec<Bits>> {
        let mut out = Vec::with_capacity(widths.len());
        self.decode_at(strings, spec, data, widths, &mut out, what, 0)?;
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn decode_at(
        &self,
        strings: &mut Strings,
        spec: &P4DataTypeSpec,
        data: &P4Data,
        widths: &[u32],
        out: &mut Vec<Bits>,
        what: &str,
        depth: u32,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(invalid("type nesting too deep"));
        }
        let shape = || {
            invalid(format!(
                "{what}: the value does not have the P4Info type's shape"
            ))
        };
        if let Some(l) = self.leaf(spec, depth)? {
            let w = *widths.get(out.len()).ok_or_else(shape)?;
            let num = |b: &[u8], w: u32| {
                bytestring::uint(b, w).map_err(|e| out_of_range(e.message(what, w)))
            };
            let v = match (l, &data.data) {
                (Leaf::Bit(_), Some(D::Bitstring(b))) => num(b, w)?,
                (Leaf::Int(_), Some(D::Bitstring(b))) => {
                    bytestring::int(b, w).map_err(|e| out_of_range(e.message(what, w)))?
                }
                (Leaf::Bool, Some(D::Bool(b))) => Bits::from_u64(w, u64::from(*b)),
                (Leaf::SerEnum(_), Some(D::EnumValue(b))) => num(b, w)?,
                (Leaf::Names(names), Some(D::Enum(n) | D::Error(n))) => {
                    let i = names
                        .iter()
                        .position(|x| x == n)
                        .ok_or_else(|| invalid(format!("{what}: no member {n}")))?;
                    Bits::from_u64(w, i as u64)
                }
                (Leaf::Translated(c), Some(D::Bitstring(b))) => {
                    c.decode(b, strings, &|| what.to_string())?
                }
                _ => return Err(shape()),
            };
            out.push(v);
            return Ok(());
        }
        let (members, kind) = self.members(spec)?;
        let given = match (kind, &data.data) {
            (Kind::Struct, Some(D::Struct(s))) | (Kind::Tuple, Some(D::Tuple(s))) => &s.members,
            (Kind::Header, _) => {
                return Err(unimplemented(format!(
                    "{what}: header values cannot be written"
                )));
            }
            _ => return Err(shape()),
        };
        if given.len() != members.len() {
            return Err(shape());
        }
        for (m, d) in members.iter().zip(given) {
            self.decode_at(strings, m, d, widths, out, what, depth + 1)?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Struct,
    Tuple,
    Header,
}

/// `values` packed into one, the first highest.
pub(crate) fn pack(values: &[Bits]) -> Option<Bits> {
    let mut it = values.iter();
    let first = it.next()?.clone();
    Some(it.fold(first, |acc, v| acc.concat(v)))
}

/// `cell` split into values of `widths`, the first highest.
pub(crate) fn unpack(cell: &Bits, widths: &[u32]) -> Vec<Bits> {
    let mut hi = cell.width();
    widths
        .iter()
        .map(|&w| {
            let lo = hi.saturating_sub(w);
            let v = match hi.checked_sub(1) {
                Some(top) if w > 0 => cell.slice(top, lo).resize(w),
                _ => Bits::zero(w),
            };
            hi = lo;
            v
        })
        .collect()
}
