//! Protobuf text format, in and out, for any message of koi's protos.
//!
//! Parsing goes through `prost-reflect`'s text-format parser over the embedded descriptor pool
//! (text → `DynamicMessage` → wire bytes → generated prost type), so untrusted input only ever
//! produces an [`Error`]. Printing uses koi's own printer, which follows what protobuf's C++
//! `TextFormat::Printer` (and so p4c) writes:
//!
//! - one field per line, nested messages as `name {` … `}`, two spaces per indent level;
//! - fields in field-number order (including oneof members), fields at their proto3 default
//!   value omitted, repeated scalars one `name: value` line per element;
//! - map entries as `name { key: … value … }` blocks sorted by key;
//! - enums by value name (the number when the value is unknown);
//! - strings and bytes C-escaped: `\n \r \t \" \' \\` and every other byte outside printable
//!   ASCII as a three-digit octal escape (so UTF-8 text appears as `\342\227\225`);
//! - `google.protobuf.Any` expanded as `[type.googleapis.com/T] { … }` when `T` is known.
//!
//! [`p4info_to_text`] prefixes the two `# proto-file:` / `# proto-message:` comment lines and the
//! blank line p4c writes, so that koi's output for the same message is byte-identical to p4c's.

use std::fmt::Write as _;

use prost::Message;
use prost_reflect::{DynamicMessage, Kind, MapKey, MessageDescriptor, ReflectMessage, Value};

use crate::{Error, descriptor_pool, p4info::P4Info};

/// Full protobuf name of the P4Info message.
pub const P4INFO_MESSAGE: &str = "p4.config.v1.P4Info";

/// The header p4c writes at the top of a text-format P4Info file.
pub const P4INFO_HEADER: &str =
    "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n";

/// Parses a text-format P4Info (as written by p4c's `--p4runtime-files x.txtpb`).
pub fn p4info_from_text(s: &str) -> Result<P4Info, Error> {
    message_from_text(P4INFO_MESSAGE, s)
}

/// Prints a P4Info in text format the way p4c does, header comment lines included.
///
/// Printing cannot fail for a message of koi's own types; should the embedded descriptors ever
/// be unusable, the result is a single `#` comment line saying why (which parses as an empty
/// P4Info), rather than a panic.
pub fn p4info_to_text(p4info: &P4Info) -> String {
    match message_to_text(P4INFO_MESSAGE, p4info) {
        Ok(body) => format!("{P4INFO_HEADER}{body}"),
        Err(e) => format!("# koi-proto: cannot print P4Info: {e}\n"),
    }
}

/// Parses text format into message `M`, whose full protobuf name is `full_name` (for example
/// `"p4.v1.WriteRequest"`).
///
/// Messages may nest at most [`MAX_NESTING`] levels deep; deeper input is rejected before
/// parsing (the parser is recursive, and prost would refuse to decode it anyway).
pub fn message_from_text<M: Message + Default>(full_name: &str, s: &str) -> Result<M, Error> {
    let desc = message_descriptor(full_name)?;
    check_nesting(s)?;
    let dynamic = DynamicMessage::parse_text_format(desc, s).map_err(|e| parse_error(s, &e))?;
    M::decode(dynamic.encode_to_vec().as_slice()).map_err(|e| Error::Decode(e.to_string()))
}

/// Prints message `M` (full protobuf name `full_name`) in text format, without any header.
pub fn message_to_text<M: Message>(full_name: &str, message: &M) -> Result<String, Error> {
    let desc = message_descriptor(full_name)?;
    let dynamic = DynamicMessage::decode(desc, message.encode_to_vec().as_slice())
        .map_err(|e| Error::Decode(e.to_string()))?;
    let mut out = String::new();
    print_message(&mut out, &dynamic, 0);
    Ok(out)
}

/// Deepest message nesting accepted by [`message_from_text`] (prost's decoding limit).
pub const MAX_NESTING: usize = 100;

/// Rejects text whose `{`/`<` nesting (outside strings and comments) exceeds [`MAX_NESTING`].
fn check_nesting(s: &str) -> Result<(), Error> {
    let (mut depth, mut line, mut column) = (0usize, 1usize, 0usize);
    let mut chars = s.chars();
    let mut quote: Option<char> = None;
    let mut comment = false;
    while let Some(c) = chars.next() {
        column += 1;
        if c == '\n' {
            (line, column, comment) = (line + 1, 0, false);
            continue;
        }
        if comment {
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => {
                // An escape: skip the escaped character (never a newline in valid input).
                if chars.next().is_some() {
                    column += 1;
                }
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => comment = true,
            (None, '{' | '<') => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Error::Parse {
                        line,
                        column,
                        message: format!("messages nested more than {MAX_NESTING} deep"),
                    });
                }
            }
            (None, '}' | '>') => depth = depth.saturating_sub(1),
            (None, _) => {}
        }
    }
    Ok(())
}

fn message_descriptor(full_name: &str) -> Result<MessageDescriptor, Error> {
    descriptor_pool()?
        .get_message_by_name(full_name)
        .ok_or_else(|| Error::UnknownMessage(full_name.to_string()))
}

/// Turns a prost-reflect parse error into [`Error::Parse`] with a 1-based line and column.
///
/// prost-reflect keeps the error's byte span private unless built with miette; its `Debug`
/// output shows it as `span: A..B`, which is read here. If that ever changes the position is
/// simply left out (line and column 0).
fn parse_error(src: &str, e: &prost_reflect::text_format::ParseError) -> Error {
    let debug = format!("{e:?}");
    let offset = debug
        .find("span: ")
        .map(|i| &debug[i + "span: ".len()..])
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<usize>().ok()
        });
    let (line, column) = match offset {
        Some(off) => line_col(src, off),
        None => (0, 0),
    };
    Error::Parse {
        line,
        column,
        message: e.to_string(),
    }
}

/// 1-based line and column (in characters) of byte offset `off` in `src`.
fn line_col(src: &str, off: usize) -> (usize, usize) {
    let mut line = 1;
    let mut column = 1;
    for (i, ch) in src.char_indices() {
        if i >= off {
            break;
        }
        if ch == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line, column)
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn print_message(out: &mut String, msg: &DynamicMessage, level: usize) {
    let mut fields: Vec<_> = msg
        .fields()
        .filter(|(fd, v)| fd.supports_presence() || !v.is_default_for_field(fd))
        .collect();
    fields.sort_by_key(|(fd, _)| fd.number());
    for (fd, value) in fields {
        let kind = fd.kind();
        match value {
            Value::List(items) => {
                for item in items {
                    print_field(out, fd.name(), item, &kind, level);
                }
            }
            Value::Map(map) => {
                let Some(entry) = kind.as_message() else {
                    continue;
                };
                let key_kind = entry.map_entry_key_field().kind();
                let value_kind = entry.map_entry_value_field().kind();
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                for (k, v) in entries {
                    indent(out, level);
                    out.push_str(fd.name());
                    out.push_str(" {\n");
                    print_field(out, "key", &map_key_value(k), &key_kind, level + 1);
                    print_field(out, "value", v, &value_kind, level + 1);
                    indent(out, level);
                    out.push_str("}\n");
                }
            }
            v => print_field(out, fd.name(), v, &kind, level),
        }
    }
}

fn map_key_value(k: &MapKey) -> Value {
    match k {
        MapKey::Bool(b) => Value::Bool(*b),
        MapKey::I32(x) => Value::I32(*x),
        MapKey::I64(x) => Value::I64(*x),
        MapKey::U32(x) => Value::U32(*x),
        MapKey::U64(x) => Value::U64(*x),
        MapKey::String(s) => Value::String(s.clone()),
    }
}

/// Prints one `name: value` line or one `name { … }` block.
fn print_field(out: &mut String, name: &str, value: &Value, kind: &Kind, level: usize) {
    indent(out, level);
    out.push_str(name);
    if let Value::Message(m) = value {
        out.push_str(" {\n");
        print_message_or_any(out, m, level + 1);
        indent(out, level);
        out.push_str("}\n");
        return;
    }
    out.push_str(": ");
    print_scalar(out, value, kind);
    out.push('\n');
}

/// Prints an `Any` in expanded form when its type is known, any other message normally.
fn print_message_or_any(out: &mut String, m: &DynamicMessage, level: usize) {
    if m.descriptor().full_name() == "google.protobuf.Any"
        && let Some(inner) = expand_any(m)
    {
        let type_url = match m.get_field_by_name("type_url").as_deref() {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        };
        indent(out, level);
        let _ = writeln!(out, "[{type_url}] {{");
        print_message(out, &inner, level + 1);
        indent(out, level);
        out.push_str("}\n");
        return;
    }
    print_message(out, m, level);
}

/// The message packed in an `Any`, if its type is in koi's pool and its bytes decode.
fn expand_any(any: &DynamicMessage) -> Option<DynamicMessage> {
    let type_url = match any.get_field_by_name("type_url")?.as_ref() {
        Value::String(s) => s.clone(),
        _ => return None,
    };
    let bytes = match any.get_field_by_name("value")?.as_ref() {
        Value::Bytes(b) => b.clone(),
        _ => return None,
    };
    let name = type_url.rsplit('/').next()?;
    let desc = descriptor_pool().ok()?.get_message_by_name(name)?;
    DynamicMessage::decode(desc, bytes).ok()
}

fn print_scalar(out: &mut String, value: &Value, kind: &Kind) {
    match value {
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::I32(x) => push_display(out, x),
        Value::I64(x) => push_display(out, x),
        Value::U32(x) => push_display(out, x),
        Value::U64(x) => push_display(out, x),
        Value::F32(x) => push_float(out, f64::from(*x)),
        Value::F64(x) => push_float(out, *x),
        Value::String(s) => push_escaped(out, s.as_bytes()),
        Value::Bytes(b) => push_escaped(out, b),
        Value::EnumNumber(n) => match kind.as_enum().and_then(|e| e.get_value(*n)) {
            Some(v) => out.push_str(v.name()),
            None => push_display(out, n),
        },
        // Not scalars; callers handle these. Printed defensively rather than dropped.
        Value::Message(_) | Value::List(_) | Value::Map(_) => out.push_str("\"\""),
    }
}

fn push_display(out: &mut String, x: impl std::fmt::Display) {
    let _ = write!(out, "{x}");
}

fn push_float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("nan");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
    } else {
        push_display(out, x);
    }
}

/// C-escapes `bytes` inside double quotes, as protobuf's `CEscape` does.
pub(crate) fn push_escaped(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &b in bytes {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::p4info::{Action, P4Info, PkgInfo, Preamble, Table};

    #[test]
    fn escapes_like_cescape() {
        let mut s = String::new();
        push_escaped(&mut s, "a\"b'\\\n\t\r\u{0}é".as_bytes());
        assert_eq!(s, r#""a\"b\'\\\n\t\r\000\303\251""#);
    }

    #[test]
    fn prints_p4c_layout() {
        let p = P4Info {
            pkg_info: Some(PkgInfo {
                arch: "v1model".into(),
                ..Default::default()
            }),
            tables: vec![Table {
                preamble: Some(Preamble {
                    id: 0x0200_0001,
                    name: "ingress.t".into(),
                    alias: "t".into(),
                    ..Default::default()
                }),
                direct_resource_ids: vec![1, 2],
                size: 1024,
                ..Default::default()
            }],
            actions: vec![Action::default()],
            type_info: Some(Default::default()),
            ..Default::default()
        };
        let text = p4info_to_text(&p);
        let expected = "# proto-file: p4/config/v1/p4info.proto\n\
            # proto-message: p4.config.v1.P4Info\n\n\
            pkg_info {\n  arch: \"v1model\"\n}\n\
            tables {\n  preamble {\n    id: 33554433\n    name: \"ingress.t\"\n    alias: \"t\"\n  }\n\
            \x20 direct_resource_ids: 1\n  direct_resource_ids: 2\n  size: 1024\n}\n\
            actions {\n}\n\
            type_info {\n}\n";
        assert_eq!(text, expected);
        assert_eq!(p4info_from_text(&text).ok(), Some(p));
    }

    #[test]
    fn parse_errors_carry_position() {
        let err = p4info_from_text("pkg_info {\n  arch: \"x\"\n}\ntables {\n  bogus: 1\n}\n");
        match err {
            Err(Error::Parse { line, column, .. }) => assert_eq!((line, column), (5, 3)),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for s in [
            "{",
            "}",
            "tables {",
            "tables { preamble { id: -1 } }",
            "tables { size: 99999999999999999999999 }",
            "pkg_info { arch: \"\\xff\" }",
            "pkg_info { arch: \"\\777\" }",
            "\u{0}\u{1}\u{ffff}",
            "[type.googleapis.com/x] {}",
            "type_info { structs { key: 1 } }",
        ] {
            assert!(p4info_from_text(s).is_err(), "{s:?} should not parse");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = |n: usize| {
            let open = "tuple { members { ".repeat(n);
            let close = "} } ".repeat(n);
            format!("registers {{ type_spec {{ {open}{close} }} }}")
        };
        // Within the limit: parses.
        assert!(p4info_from_text(&deep(40)).is_ok());
        // Far beyond it: an error, without recursing.
        let err = p4info_from_text(&deep(100_000));
        assert!(
            matches!(&err, Err(Error::Parse { line: 1, message, .. }) if message.contains("nested")),
            "{err:?}"
        );
        // Braces inside strings and comments do not count.
        let s = format!(
            "pkg_info {{ name: \"{}\" # {}\n }}",
            "{".repeat(500),
            "{".repeat(500)
        );
        assert!(p4info_from_text(&s).is_ok());
    }

    #[test]
    fn any_is_expanded_when_known() {
        use crate::p4runtime::{PacketOut, StreamMessageRequest, stream_message_request::Update};
        let packet = PacketOut {
            payload: vec![1, 2],
            metadata: vec![],
        };
        let any = |type_url: &str| prost_types::Any {
            type_url: type_url.into(),
            value: packet.encode_to_vec(),
        };
        let known = StreamMessageRequest {
            update: Some(Update::Other(any("type.googleapis.com/p4.v1.PacketOut"))),
        };
        let text = message_to_text("p4.v1.StreamMessageRequest", &known).unwrap_or_default();
        assert_eq!(
            text,
            "other {\n  [type.googleapis.com/p4.v1.PacketOut] {\n    payload: \"\\001\\002\"\n  }\n}\n"
        );
        let back = message_from_text::<StreamMessageRequest>("p4.v1.StreamMessageRequest", &text);
        assert_eq!(back.ok(), Some(known));

        let unknown = StreamMessageRequest {
            update: Some(Update::Other(any("example.com/x.Y"))),
        };
        let text = message_to_text("p4.v1.StreamMessageRequest", &unknown).unwrap_or_default();
        assert_eq!(
            text,
            "other {\n  type_url: \"example.com/x.Y\"\n  value: \"\\n\\002\\001\\002\"\n}\n"
        );
        let back = message_from_text::<StreamMessageRequest>("p4.v1.StreamMessageRequest", &text);
        assert_eq!(back.ok(), Some(unknown));
    }

    #[test]
    fn other_messages_round_trip() {
        use crate::p4runtime::{FieldMatch, TableEntry, field_match};
        let e = TableEntry {
            table_id: 7,
            r#match: vec![FieldMatch {
                field_id: 1,
                field_match_type: Some(field_match::FieldMatchType::Exact(field_match::Exact {
                    value: vec![10, 0, 0, 1],
                })),
            }],
            priority: 3,
            ..Default::default()
        };
        let text = message_to_text("p4.v1.TableEntry", &e).unwrap_or_default();
        assert_eq!(
            text,
            "table_id: 7\nmatch {\n  field_id: 1\n  exact {\n    value: \"\\n\\000\\000\\001\"\n  }\n}\npriority: 3\n"
        );
        let back: Option<TableEntry> = message_from_text("p4.v1.TableEntry", &text).ok();
        assert_eq!(back, Some(e));
        assert!(matches!(
            message_from_text::<TableEntry>("p4.v1.Nope", ""),
            Err(Error::UnknownMessage(_))
        ));
    }
}
