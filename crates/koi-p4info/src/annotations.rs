//! Annotations as p4c copies them into P4Info.
//!
//! - **Unstructured** annotations (`@x`, `@x(...)`) become strings in `annotations`, except
//!   the ones P4Info represents elsewhere: `@name` and `@id` (never kept in the IR anyway),
//!   `@brief` and `@description` (they fill `doc`), and per-object ones the caller names
//!   (`@max_group_size` on action profiles, `@match` on value set fields, `@pkginfo` on the
//!   package, ...). The string is what p4c's `ToP4` prints: `@x` for an empty body; for the
//!   annotations p4c parses into expressions (`@noWarn("unused")`, `@p4runtime_translation`,
//!   ...) the comma-separated arguments joined by `", "`; for the others, p4c's unparsed token
//!   list, every token separated by one space (`@foo(a, b)` prints `@foo(a , b)`).
//! - **Structured** annotations (`@x[...]`) all go to `structured_annotations`, whatever their
//!   name: `@x[]` with no body, `@x[1, "s"]` as an expression list, `@x[k=1]` as key-value
//!   pairs.
//! - `@brief("...")` and `@description("...")` set `doc` (only when one of them is present).

use koi_ir::types::{Annotation, AnnotationBody, AnnotationValue};
use koi_proto::p4info::{
    Documentation, Expression, ExpressionList, KeyValuePair, KeyValuePairList,
    StructuredAnnotation, expression, structured_annotation,
};

/// Annotations P4Info never copies into `annotations`.
const CONSUMED: [&str; 4] = ["name", "id", "brief", "description"];

/// Annotations p4c parses into expression lists, printed with `", "` between arguments.
const PARSED: [&str; 11] = [
    "noWarn",
    "deprecated",
    "match",
    "field_list",
    "synchronous",
    "p4runtime_translation",
    "controller_header",
    "max_group_size",
    "selector_size_semantics",
    "max_member_weight",
    "length",
];

/// The P4Info form of a list of annotations.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Converted {
    /// `annotations` strings.
    pub annotations: Vec<String>,
    /// `structured_annotations`.
    pub structured: Vec<StructuredAnnotation>,
}

/// Converts `anns` as p4c's `addAnnotations` does, leaving out the unstructured annotations
/// named in `skip` besides the always-consumed ones.
pub(crate) fn convert(anns: &[Annotation], skip: &[&str]) -> Converted {
    let mut out = Converted::default();
    for a in anns {
        match &a.body {
            AnnotationBody::List(_) | AnnotationBody::KeyValue(_) => {
                out.structured.push(structured(a));
            }
            AnnotationBody::Empty | AnnotationBody::Unstructured(_) => {
                let name = a.name.as_str();
                if CONSUMED.contains(&name) || skip.contains(&name) {
                    continue;
                }
                out.annotations.push(to_string(a));
            }
        }
    }
    out
}

/// The string p4c prints for an unstructured annotation (structured ones print as written).
pub(crate) fn to_string(a: &Annotation) -> String {
    match &a.body {
        AnnotationBody::Unstructured(text) if !text.trim().is_empty() => {
            let body = if PARSED.contains(&a.name.as_str()) {
                split_args(text).join(", ")
            } else {
                tokens(text).join(" ")
            };
            format!("@{}({body})", a.name)
        }
        AnnotationBody::Unstructured(_) | AnnotationBody::Empty => format!("@{}", a.name),
        _ => a.to_string(),
    }
}

fn value(v: &AnnotationValue) -> Expression {
    let v = match v {
        AnnotationValue::Str(s) => expression::Value::StringValue(s.clone()),
        AnnotationValue::Int(i) => expression::Value::Int64Value(*i),
        AnnotationValue::Bool(b) => expression::Value::BoolValue(*b),
    };
    Expression { value: Some(v) }
}

fn structured(a: &Annotation) -> StructuredAnnotation {
    let body = match &a.body {
        AnnotationBody::List(vs) if !vs.is_empty() => Some(
            structured_annotation::Body::ExpressionList(ExpressionList {
                expressions: vs.iter().map(value).collect(),
            }),
        ),
        AnnotationBody::KeyValue(kvs) if !kvs.is_empty() => {
            Some(structured_annotation::Body::KvPairList(KeyValuePairList {
                kv_pairs: kvs
                    .iter()
                    .map(|(k, v)| KeyValuePair {
                        key: k.clone(),
                        value: Some(value(v)),
                    })
                    .collect(),
            }))
        }
        _ => None,
    };
    StructuredAnnotation {
        name: a.name.clone(),
        body,
        source_location: None,
    }
}

/// The string argument of `@x("s")` or `@x["s"]`, without the quotes.
pub(crate) fn string_arg(a: &Annotation) -> Option<String> {
    match &a.body {
        AnnotationBody::List(vs) => match vs.as_slice() {
            [AnnotationValue::Str(s)] => Some(s.clone()),
            _ => None,
        },
        _ => a.string_arg().map(str::to_string),
    }
}

/// The integer argument of `@x(200)` or `@x[200]` (decimal, `0x`, `0o`, `0b`, `_` allowed).
pub(crate) fn int_arg(a: &Annotation) -> Option<i64> {
    match &a.body {
        AnnotationBody::List(vs) => match vs.as_slice() {
            [AnnotationValue::Int(i)] => Some(*i),
            _ => None,
        },
        AnnotationBody::Unstructured(t) => parse_int(t.trim()),
        _ => None,
    }
}

/// A P4 integer literal: `16`, `0x10`, `-3`, or one with a width prefix (`32w16`, `8w0x1F`,
/// `8s-1`), whose value is taken modulo its width as p4c evaluates it.
pub(crate) fn parse_int(s: &str) -> Option<i64> {
    let s = s.replace('_', "");
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r.to_string()),
        None => (false, s),
    };
    let lower = s.to_ascii_lowercase();
    let sized = lower
        .find(['w', 's'])
        .filter(|&i| i > 0 && lower[..i].bytes().all(|b| b.is_ascii_digit()));
    if let Some(i) = sized {
        let width: u32 = lower[..i].parse().ok()?;
        let signed = lower.as_bytes()[i] == b's';
        let v = i128::from(parse_int(&lower[i + 1..])?);
        let v = if neg { -v } else { v };
        return fit_width(v, width, signed);
    }
    let (radix, digits) = [("0x", 16), ("0o", 8), ("0b", 2), ("0d", 10)]
        .iter()
        .find_map(|(p, r)| lower.strip_prefix(p).map(|d| (*r, d)))
        .unwrap_or((10, lower.as_str()));
    let v = i64::from_str_radix(digits, radix).ok()?;
    Some(if neg { -v } else { v })
}

/// `v` reduced to a `width`-bit unsigned or two's-complement value.
fn fit_width(v: i128, width: u32, signed: bool) -> Option<i64> {
    if width == 0 || width > 64 {
        return None;
    }
    let modulus = 1i128 << width;
    let mut r = v.rem_euclid(modulus);
    if signed && r >= modulus / 2 {
        r -= modulus;
    }
    i64::try_from(r).ok()
}

/// `doc` from `@brief` and `@description`, if either is present.
pub(crate) fn doc(anns: &[Annotation]) -> Option<Documentation> {
    let mut doc = Documentation::default();
    let mut has = false;
    for a in anns {
        let slot = match a.name.as_str() {
            "brief" => &mut doc.brief,
            "description" => &mut doc.description,
            _ => continue,
        };
        *slot = string_arg(a).unwrap_or_default();
        has = true;
    }
    has.then_some(doc)
}

/// A value of a `key = value` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KvValue {
    Str(String),
    Int(i64),
    Other(String),
}

/// The `key = value` pairs of `@pkginfo(...)`, `@platform_property(...)` or `@x[k=v, ...]`.
pub(crate) fn key_values(a: &Annotation) -> Option<Vec<(String, KvValue)>> {
    match &a.body {
        AnnotationBody::KeyValue(kvs) => Some(
            kvs.iter()
                .map(|(k, v)| {
                    let v = match v {
                        AnnotationValue::Str(s) => KvValue::Str(s.clone()),
                        AnnotationValue::Int(i) => KvValue::Int(*i),
                        AnnotationValue::Bool(b) => KvValue::Other(b.to_string()),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        AnnotationBody::Unstructured(text) => split_args(text)
            .iter()
            .map(|item| {
                let (k, v) = item.split_once('=')?;
                let (k, v) = (k.trim(), v.trim());
                let v = match v.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                    Some(s) => KvValue::Str(s.to_string()),
                    None => parse_int(v).map_or(KvValue::Other(v.to_string()), KvValue::Int),
                };
                Some((k.to_string(), v))
            })
            .collect(),
        _ => None,
    }
}

/// Splits an annotation body at the commas outside strings and brackets, trimming each piece.
fn split_args(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut cur, mut depth, mut in_str, mut escaped) = (String::new(), 0i32, false, false);
    for c in text.chars() {
        if in_str {
            cur.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() || !out.is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The tokens of several characters of p4c's P4 lexer, longest first (maximal munch). It has
/// no `::` and no `>>` token (`>>` is two `>`, told apart by the parser), so p4c prints
/// `a::b` as `a : : b` and `x >> 2` as `x > > 2`.
const OPERATORS: [&str; 14] = [
    "...", "&&&", "|+|", "|-|", "{#}", "..", "<<", "<=", ">=", "==", "!=", "&&", "||", "++",
];

/// The tokens of an unparsed annotation body, as p4c's lexer splits them: identifiers,
/// numbers (with width and base prefixes), string literals (quotes kept), operators.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(chars.len());
        } else if c.is_alphanumeric() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else {
            let rest: String = chars[i..].iter().take(3).collect();
            i += OPERATORS
                .iter()
                .find(|op| rest.starts_with(*op))
                .map_or(1, |op| op.len());
        }
        out.push(chars[start..i].iter().collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(name: &str, kvs: Vec<(&str, AnnotationValue)>) -> Annotation {
        Annotation {
            name: name.into(),
            body: AnnotationBody::KeyValue(kvs.into_iter().map(|(k, v)| (k.into(), v)).collect()),
        }
    }

    #[test]
    fn unstructured_annotations_print_like_p4c() {
        let anns = [
            Annotation::text("noWarn", "\"unused\""),
            Annotation::flag("my_anno_4"),
            Annotation::text("mode", " \"fair\" "),
            Annotation::text("min_width", "32"),
            Annotation::text("foo", "a,b  &&& 0x10"),
            Annotation::text("p4runtime_translation", "\"p4.org/x\" ,32"),
            Annotation::text("brief", "\"short\""),
            Annotation::text("max_group_size", "200"),
            Annotation::text("empty", ""),
            Annotation::text("scoped", "sai::port_id_t, x>>2, a...b, {#}"),
        ];
        let c = convert(&anns, &["max_group_size"]);
        assert_eq!(
            c.annotations,
            [
                "@noWarn(\"unused\")",
                "@my_anno_4",
                "@mode(\"fair\")",
                "@min_width(32)",
                "@foo(a , b &&& 0x10)",
                "@p4runtime_translation(\"p4.org/x\", 32)",
                "@empty",
                "@scoped(sai : : port_id_t , x > > 2 , a ... b , {#})",
            ]
        );
        assert!(c.structured.is_empty());
    }

    #[test]
    fn structured_annotations_are_all_kept() {
        let anns = [
            Annotation {
                name: "list".into(),
                body: AnnotationBody::List(vec![
                    AnnotationValue::Int(1),
                    AnnotationValue::Str("s".into()),
                    AnnotationValue::Bool(true),
                ]),
            },
            kv("name", vec![("k", AnnotationValue::Int(-3))]),
            Annotation {
                name: "e".into(),
                body: AnnotationBody::List(vec![]),
            },
        ];
        let c = convert(&anns, &[]);
        assert!(c.annotations.is_empty());
        assert_eq!(c.structured.len(), 3);
        assert_eq!(c.structured[1].name, "name");
        let Some(structured_annotation::Body::ExpressionList(l)) = &c.structured[0].body else {
            panic!("expression list expected")
        };
        assert_eq!(
            l.expressions[1].value,
            Some(expression::Value::StringValue("s".into()))
        );
        let Some(structured_annotation::Body::KvPairList(l)) = &c.structured[1].body else {
            panic!("kv list expected")
        };
        assert_eq!(l.kv_pairs[0].key, "k");
        assert_eq!(c.structured[2].body, None);
    }

    #[test]
    fn documentation_comes_from_brief_and_description() {
        assert_eq!(doc(&[Annotation::flag("x")]), None);
        let d = doc(&[
            Annotation::text("description", "\"long text\""),
            Annotation::text("brief", "\"short\""),
        ]);
        assert_eq!(
            d,
            Some(Documentation {
                brief: "short".into(),
                description: "long text".into()
            })
        );
    }

    #[test]
    fn arguments_and_key_values_parse() {
        assert_eq!(int_arg(&Annotation::text("m", " 1_000 ")), Some(1000));
        assert_eq!(int_arg(&Annotation::text("m", "0x10")), Some(16));
        assert_eq!(int_arg(&Annotation::text("m", "\"x\"")), None);
        assert_eq!(int_arg(&Annotation::text("m", "32w16")), Some(16));
        assert_eq!(int_arg(&Annotation::text("m", "8w0x1F")), Some(31));
        assert_eq!(int_arg(&Annotation::text("m", "8w300")), Some(44));
        assert_eq!(int_arg(&Annotation::text("m", "8s-1")), Some(-1));
        assert_eq!(int_arg(&Annotation::text("m", "8s255")), Some(-1));
        assert_eq!(int_arg(&Annotation::text("m", "0w1")), None);
        assert_eq!(int_arg(&Annotation::text("m", "w1")), None);
        assert_eq!(
            string_arg(&Annotation::text("s", "\"sum_of_weights\"")),
            Some("sum_of_weights".into())
        );
        let a = Annotation::text("pkginfo", "\n  name = \"n, x\",\n  version = 3,\n  bad\n");
        assert_eq!(key_values(&a), None);
        let a = Annotation::text("pkginfo", "name = \"n, x\", size = 3, e = E.a");
        assert_eq!(
            key_values(&a),
            Some(vec![
                ("name".into(), KvValue::Str("n, x".into())),
                ("size".into(), KvValue::Int(3)),
                ("e".into(), KvValue::Other("E.a".into())),
            ])
        );
        let a = kv("platform_property", vec![("n", AnnotationValue::Int(10))]);
        assert_eq!(key_values(&a), Some(vec![("n".into(), KvValue::Int(10))]));
    }

    #[test]
    fn tokens_keep_strings_and_operators_whole() {
        assert_eq!(
            tokens(r#"hdr.x[3:0] "a \"b\" c" 8w5 &&& ..<"#),
            [
                "hdr",
                ".",
                "x",
                "[",
                "3",
                ":",
                "0",
                "]",
                r#""a \"b\" c""#,
                "8w5",
                "&&&",
                "..",
                "<"
            ]
        );
        assert_eq!(split_args(""), Vec::<String>::new());
        assert_eq!(split_args("f(a, b), \"x,y\""), ["f(a, b)", "\"x,y\""]);
    }
}
