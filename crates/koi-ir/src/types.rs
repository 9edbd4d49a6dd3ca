//! Types: the three value types of IR expressions ([`Ty`]), and the source-level P4 types that
//! the control plane sees ([`P4Type`], [`TypeDecl`]) kept for P4Info's `type_info`, register
//! element types, digest structs and `@p4runtime_translation` new types. Also annotations and
//! the control-plane [`Preamble`] shared by every named object.

use crate::value::Bits;
use std::fmt;

/// The type of an IR expression or PHV slot.
///
/// Signedness is not part of the type: values are bit patterns and the operations that care
/// (shift right, compare, saturating arithmetic, widening casts) say which interpretation they
/// use, as Cranelift's `sdiv`/`udiv` do. This keeps every consumer free of type-directed
/// semantics; the source type (`int<8>` vs `bit<8>`) is kept on slots and parameters for
/// printing and P4Info only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// `bit<W>` or `int<W>` (and serializable enums, `error`, after lowering).
    Bits(u32),
    Bool,
    /// `varbit<max>`: a current length in `0..=max` and that many bits.
    Varbit(u32),
}

impl Ty {
    /// Bits the type occupies in the PHV (its maximum for varbit).
    pub fn width(self) -> u32 {
        match self {
            Ty::Bits(w) | Ty::Varbit(w) => w,
            Ty::Bool => 1,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Bits(w) => write!(f, "bit<{w}>"),
            Ty::Bool => f.write_str("bool"),
            Ty::Varbit(w) => write!(f, "varbit<{w}>"),
        }
    }
}

/// A P4 type as the control plane sees it (P4Info `P4DataTypeSpec`). Named types refer to a
/// [`TypeDecl`] of the [`TypeTable`] by name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum P4Type {
    Bit(u32),
    Int(u32),
    Varbit(u32),
    Bool,
    Error,
    Struct(String),
    Header(String),
    HeaderUnion(String),
    Enum(String),
    SerEnum(String),
    NewType(String),
    Stack { elem: Box<P4Type>, size: u32 },
    Tuple(Vec<P4Type>),
}

impl fmt::Display for P4Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            P4Type::Bit(w) => write!(f, "bit<{w}>"),
            P4Type::Int(w) => write!(f, "int<{w}>"),
            P4Type::Varbit(w) => write!(f, "varbit<{w}>"),
            P4Type::Bool => f.write_str("bool"),
            P4Type::Error => f.write_str("error"),
            P4Type::Struct(n)
            | P4Type::Header(n)
            | P4Type::HeaderUnion(n)
            | P4Type::Enum(n)
            | P4Type::SerEnum(n)
            | P4Type::NewType(n) => f.write_str(n),
            P4Type::Stack { elem, size } => write!(f, "{elem}[{size}]"),
            P4Type::Tuple(ts) => {
                f.write_str("tuple<")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">")
            }
        }
    }
}

/// A member of a struct, header or union type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub ty: P4Type,
}

/// `@p4runtime_translation(uri, sdn_type)` of a new type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Translation {
    pub uri: String,
    /// The SDN representation: a bit width, or `None` for `string`.
    pub sdn_bitwidth: Option<u32>,
}

/// A named type declaration the control plane can see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeDecl {
    Struct {
        name: String,
        members: Vec<Member>,
        annotations: Vec<Annotation>,
    },
    Header {
        name: String,
        members: Vec<Member>,
        annotations: Vec<Annotation>,
    },
    HeaderUnion {
        name: String,
        members: Vec<Member>,
        annotations: Vec<Annotation>,
    },
    Enum {
        name: String,
        members: Vec<String>,
    },
    SerEnum {
        name: String,
        members: Vec<(String, Bits)>,
    },
    NewType {
        name: String,
        ty: P4Type,
        translation: Option<Translation>,
        annotations: Vec<Annotation>,
    },
}

impl TypeDecl {
    pub fn name(&self) -> &str {
        match self {
            TypeDecl::Struct { name, .. }
            | TypeDecl::Header { name, .. }
            | TypeDecl::HeaderUnion { name, .. }
            | TypeDecl::Enum { name, .. }
            | TypeDecl::SerEnum { name, .. }
            | TypeDecl::NewType { name, .. } => name,
        }
    }
}

/// The named types of a program that the control plane can see, in declaration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeTable {
    pub decls: Vec<TypeDecl>,
}

impl TypeTable {
    /// The declaration named `name`.
    pub fn get(&self, name: &str) -> Option<&TypeDecl> {
        self.decls.iter().find(|d| d.name() == name)
    }
}

/// A literal in a structured annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnnotationValue {
    Str(String),
    Int(i64),
    Bool(bool),
}

/// The body of an annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnnotationBody {
    /// `@name`
    Empty,
    /// `@name(...)`: the tokens between the parentheses, as written (P4Info copies them).
    Unstructured(String),
    /// `@name[e1, e2]`
    List(Vec<AnnotationValue>),
    /// `@name[k1 = e1, k2 = e2]`
    KeyValue(Vec<(String, AnnotationValue)>),
}

/// An annotation kept for the control plane (`@brief`, `@description`, `@noWarn`, ...).
/// `@name` and `@id` are resolved by lowering into [`Preamble`] and not kept here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub name: String,
    pub body: AnnotationBody,
}

impl Annotation {
    /// `@name`
    pub fn flag(name: &str) -> Annotation {
        Annotation {
            name: name.to_string(),
            body: AnnotationBody::Empty,
        }
    }

    /// `@name(text)`
    pub fn text(name: &str, text: &str) -> Annotation {
        Annotation {
            name: name.to_string(),
            body: AnnotationBody::Unstructured(text.to_string()),
        }
    }

    /// The string of `@name("text")`, without quotes, if the body is one string literal.
    pub fn string_arg(&self) -> Option<&str> {
        match &self.body {
            AnnotationBody::Unstructured(t) => t.trim().strip_prefix('"')?.strip_suffix('"'),
            _ => None,
        }
    }
}

impl fmt::Display for AnnotationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnnotationValue::Str(s) => write!(f, "{s:?}"),
            AnnotationValue::Int(v) => write!(f, "{v}"),
            AnnotationValue::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// P4Info's spelling: `@name`, `@name(tokens)`, `@name[...]`.
impl fmt::Display for Annotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.name)?;
        match &self.body {
            AnnotationBody::Empty => Ok(()),
            AnnotationBody::Unstructured(t) => write!(f, "({t})"),
            AnnotationBody::List(vs) => {
                let items: Vec<String> = vs.iter().map(|v| v.to_string()).collect();
                write!(f, "[{}]", items.join(", "))
            }
            AnnotationBody::KeyValue(kvs) => {
                let items: Vec<String> = kvs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", items.join(", "))
            }
        }
    }
}

/// What every control-plane-visible object carries (P4Info's `Preamble`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preamble {
    /// Fully qualified control-plane name, as p4c computes it (`MyIngress.ipv4_lpm`), after
    /// `@name` annotations were applied.
    pub name: String,
    /// The `@id` annotation's value, if any; P4Info generation assigns the others.
    pub id: Option<u32>,
    /// The remaining annotations, in source order.
    pub annotations: Vec<Annotation>,
}

impl Preamble {
    pub fn new(name: impl Into<String>) -> Preamble {
        Preamble {
            name: name.into(),
            id: None,
            annotations: Vec::new(),
        }
    }

    /// The annotation named `name`.
    pub fn annotation(&self, name: &str) -> Option<&Annotation> {
        self.annotations.iter().find(|a| a.name == name)
    }

    /// `@brief("...")`
    pub fn brief(&self) -> Option<&str> {
        self.annotation("brief")?.string_arg()
    }

    /// `@description("...")`
    pub fn description(&self) -> Option<&str> {
        self.annotation("description")?.string_arg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_print_as_p4info_does() {
        let mut p = Preamble::new("NoAction");
        p.annotations.push(Annotation::text("noWarn", "\"unused\""));
        p.annotations
            .push(Annotation::text("brief", "\"does nothing\""));
        p.annotations.push(Annotation {
            name: "s".into(),
            body: AnnotationBody::KeyValue(vec![("k".into(), AnnotationValue::Int(3))]),
        });
        let shown: Vec<String> = p.annotations.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            shown,
            ["@noWarn(\"unused\")", "@brief(\"does nothing\")", "@s[k=3]"]
        );
        assert_eq!(p.brief(), Some("does nothing"));
        assert_eq!(p.description(), None);
    }

    #[test]
    fn types_print_like_p4() {
        let t = P4Type::Tuple(vec![
            P4Type::Bit(8),
            P4Type::Stack {
                elem: Box::new(P4Type::Header("h_t".into())),
                size: 2,
            },
        ]);
        assert_eq!(t.to_string(), "tuple<bit<8>, h_t[2]>");
        assert_eq!(Ty::Varbit(320).to_string(), "varbit<320>");
        assert_eq!(Ty::Bool.width(), 1);
    }
}
