//! Structural, reflection-based difference of two messages of the same type.
//!
//! Used by [`crate::compare`] for the parts of a P4Info that have no entity-specific rules
//! (type specs, `type_info`, documentation, structured annotations, `Any` payloads). Fields are
//! visited in field-number order; repeated fields are compared element by element in order, maps
//! key by key. Each difference is one line `path expected != actual`, or `path missing` /
//! `path unexpected` for list elements and map entries present on one side only.

use std::fmt::Write as _;

use prost::Message;
use prost_reflect::{DynamicMessage, Kind, MapKey, ReflectMessage as _, Value};

use crate::descriptor_pool;
use crate::text::push_escaped;

/// Differences between two messages whose full protobuf name is `full_name`, each prefixed by
/// `path`. Falls back to comparing `Debug` output if reflection is unavailable.
pub(crate) fn diff_message<M: Message + PartialEq + std::fmt::Debug>(
    full_name: &str,
    path: &str,
    expected: &M,
    actual: &M,
    out: &mut Vec<String>,
) {
    if expected == actual {
        return;
    }
    let decoded = descriptor_pool()
        .ok()
        .and_then(|pool| pool.get_message_by_name(full_name))
        .and_then(|desc| {
            let e = DynamicMessage::decode(desc.clone(), expected.encode_to_vec().as_slice());
            let a = DynamicMessage::decode(desc, actual.encode_to_vec().as_slice());
            e.ok().zip(a.ok())
        });
    match decoded {
        Some((e, a)) => {
            let before = out.len();
            diff_dynamic(path, &e, &a, out);
            if out.len() == before {
                // Equal on the wire but not as Rust values (cannot happen for prost types);
                // still say something rather than hide the inequality.
                out.push(
                    format!("{path} {expected:?} != {actual:?}")
                        .trim_start()
                        .into(),
                );
            }
        }
        None => out.push(
            format!("{path} {expected:?} != {actual:?}")
                .trim_start()
                .into(),
        ),
    }
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn diff_dynamic(path: &str, e: &DynamicMessage, a: &DynamicMessage, out: &mut Vec<String>) {
    let mut fields: Vec<_> = e.descriptor().fields().collect();
    fields.sort_by_key(|f| f.number());
    for fd in fields {
        let p = join(path, fd.name());
        let kind = fd.kind();
        let (ev, av) = (e.get_field(&fd), a.get_field(&fd));
        match (ev.as_ref(), av.as_ref()) {
            (Value::List(el), Value::List(al)) => {
                for i in 0..el.len().max(al.len()) {
                    let ip = format!("{p}[{i}]");
                    match (el.get(i), al.get(i)) {
                        (Some(x), Some(y)) => diff_value(&ip, x, y, &kind, out),
                        (Some(_), None) => out.push(format!("{ip} missing")),
                        (None, Some(_)) => out.push(format!("{ip} unexpected")),
                        (None, None) => {}
                    }
                }
            }
            (Value::Map(em), Value::Map(am)) => {
                let value_kind = kind
                    .as_message()
                    .map(|m| m.map_entry_value_field().kind())
                    .unwrap_or(Kind::Bool);
                let mut keys: Vec<&MapKey> = em.keys().chain(am.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let kp = format!("{p}[{}]", fmt_key(k));
                    match (em.get(k), am.get(k)) {
                        (Some(x), Some(y)) => diff_value(&kp, x, y, &value_kind, out),
                        (Some(_), None) => out.push(format!("{kp} missing")),
                        (None, Some(_)) => out.push(format!("{kp} unexpected")),
                        (None, None) => {}
                    }
                }
            }
            (Value::Message(_), Value::Message(_)) if fd.supports_presence() => {
                match (e.has_field(&fd), a.has_field(&fd)) {
                    (true, false) => out.push(format!("{p} set != unset")),
                    (false, true) => out.push(format!("{p} unset != set")),
                    _ => diff_value(&p, &ev, &av, &kind, out),
                }
            }
            (x, y) => {
                // Scalars of a oneof: report set/unset, then the value if both are set.
                if fd.containing_oneof().is_some() && e.has_field(&fd) != a.has_field(&fd) {
                    let set = |b: bool| if b { "set" } else { "unset" };
                    out.push(format!(
                        "{p} {} != {}",
                        set(e.has_field(&fd)),
                        set(a.has_field(&fd))
                    ));
                } else {
                    diff_value(&p, x, y, &kind, out);
                }
            }
        }
    }
}

fn diff_value(path: &str, e: &Value, a: &Value, kind: &Kind, out: &mut Vec<String>) {
    match (e, a) {
        (Value::Message(x), Value::Message(y)) => diff_dynamic(path, x, y, out),
        _ if e != a => out.push(format!(
            "{path} {} != {}",
            fmt_value(e, kind),
            fmt_value(a, kind)
        )),
        _ => {}
    }
}

fn fmt_key(k: &MapKey) -> String {
    match k {
        MapKey::String(s) => {
            let mut out = String::new();
            push_escaped(&mut out, s.as_bytes());
            out
        }
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(x) => x.to_string(),
        MapKey::I64(x) => x.to_string(),
        MapKey::U32(x) => x.to_string(),
        MapKey::U64(x) => x.to_string(),
    }
}

/// A short rendering of a value for a difference line.
pub(crate) fn fmt_value(v: &Value, kind: &Kind) -> String {
    let mut out = String::new();
    match v {
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::I32(x) => out = x.to_string(),
        Value::I64(x) => out = x.to_string(),
        Value::U32(x) => out = x.to_string(),
        Value::U64(x) => out = x.to_string(),
        Value::F32(x) => out = x.to_string(),
        Value::F64(x) => out = x.to_string(),
        Value::String(s) => push_escaped(&mut out, s.as_bytes()),
        Value::Bytes(b) => push_escaped(&mut out, b),
        Value::EnumNumber(n) => match kind.as_enum().and_then(|d| d.get_value(*n)) {
            Some(ev) => out.push_str(ev.name()),
            None => out = n.to_string(),
        },
        Value::Message(m) => {
            let _ = write!(out, "{} {{...}}", m.descriptor().name());
        }
        Value::List(l) => {
            let _ = write!(out, "[{} elements]", l.len());
        }
        Value::Map(m) => {
            let _ = write!(out, "{{{} entries}}", m.len());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::p4info::{
        P4BitTypeSpec, P4BitstringLikeTypeSpec, P4DataTypeSpec, P4NamedType, P4StructTypeSpec,
        P4TypeInfo, p4_bitstring_like_type_spec as bl, p4_data_type_spec as dt,
        p4_struct_type_spec as st,
    };

    fn bit(w: i32) -> P4DataTypeSpec {
        P4DataTypeSpec {
            type_spec: Some(dt::TypeSpec::Bitstring(P4BitstringLikeTypeSpec {
                type_spec: Some(bl::TypeSpec::Bit(P4BitTypeSpec { bitwidth: w })),
                ..Default::default()
            })),
        }
    }

    fn info(members: &[(&str, P4DataTypeSpec)]) -> P4TypeInfo {
        let mut t = P4TypeInfo::default();
        t.structs.insert(
            "s".into(),
            P4StructTypeSpec {
                members: members
                    .iter()
                    .map(|(n, ts)| st::Member {
                        name: (*n).into(),
                        type_spec: Some(ts.clone()),
                    })
                    .collect(),
                ..Default::default()
            },
        );
        t
    }

    #[test]
    fn reports_paths() {
        let e = info(&[("a", bit(8)), ("b", bit(1))]);
        let named = P4DataTypeSpec {
            type_spec: Some(dt::TypeSpec::Struct(P4NamedType { name: "x".into() })),
        };
        let mut a = info(&[("a", bit(16)), ("b", named)]);
        a.structs.insert("t".into(), P4StructTypeSpec::default());
        let mut out = Vec::new();
        diff_message("p4.config.v1.P4TypeInfo", "type_info", &e, &a, &mut out);
        assert_eq!(
            out,
            [
                "type_info.structs[\"s\"].members[0].type_spec.bitstring.bit.bitwidth 8 != 16",
                "type_info.structs[\"s\"].members[1].type_spec.bitstring set != unset",
                "type_info.structs[\"s\"].members[1].type_spec.struct unset != set",
                "type_info.structs[\"t\"] unexpected",
            ]
        );
        out.clear();
        diff_message("p4.config.v1.P4TypeInfo", "x", &e, &e, &mut out);
        assert!(out.is_empty());
    }
}
