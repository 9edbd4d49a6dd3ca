//! P4-16 types as koi's checker sees them, interned in a [`TypeTable`] and named by [`TypeId`].
//!
//! Interning makes type equality an id comparison: two types are the same type exactly when they
//! have the same [`TypeId`]. Nominal types (enums, headers, structs, unions, `type`, externs,
//! packages) carry the [`DeclId`] of their declaration, so two structurally identical structs with
//! different declarations are different types. Parser and control types are structural: their
//! signature (parameter directions and types) is part of the type, which lets a parser
//! declaration be passed where a parser type of the architecture is expected.
//!
//! `typedef` is transparent and never appears here: a typedef name resolves to the type it names.
//! [`Ty::Error`] is the type of expressions whose checking already failed; every rule accepts it
//! silently so that one mistake gives one diagnostic.

use crate::decls::DeclId;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Index of a type in a [`TypeTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(pub u32);

/// The largest width koi accepts for `varbit<W>`.
pub const MAX_WIDTH: u32 = 1 << 16;
/// The largest width of `bit<W>` and `int<W>` (types, literals, concatenations): p4c's
/// `maximumWidthSupported`, beyond which it says "this implementation does not support
/// bitstrings this large".
pub const MAX_BITS_WIDTH: u32 = 2048;
/// The largest size koi accepts for header stacks and arrays.
pub const MAX_STACK_SIZE: u32 = 1 << 16;

/// What a struct-like type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggKind {
    Struct,
    Header,
    HeaderUnion,
}

impl AggKind {
    pub fn keyword(self) -> &'static str {
        match self {
            AggKind::Struct => "struct",
            AggKind::Header => "header",
            AggKind::HeaderUnion => "header_union",
        }
    }
}

/// A field of a struct, header or union (or of a struct-valued expression).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    pub name: String,
    pub ty: TypeId,
}

/// A struct, header or header union type (possibly a specialisation of a generic one).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AggTy {
    pub kind: AggKind,
    pub decl: DeclId,
    pub name: String,
    /// Type arguments when the declaration is generic (in the order of its type parameters).
    pub args: Vec<TypeId>,
    pub fields: Vec<Field>,
}

impl AggTy {
    pub fn field(&self, name: &str) -> Option<(usize, &Field)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name == name)
    }
}

/// An enumeration; `repr` is the underlying type of a serializable enum.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EnumTy {
    pub decl: DeclId,
    pub name: String,
    pub repr: Option<TypeId>,
    pub members: Vec<String>,
}

/// Direction of a parameter; `None` is directionless.
pub type Dir = Option<koi_syntax::ast::Direction>;

/// One parameter of a signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamTy {
    pub name: String,
    pub dir: Dir,
    pub ty: TypeId,
}

impl std::hash::Hash for ParamTy {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        use koi_syntax::ast::Direction;
        self.name.hash(state);
        self.ty.hash(state);
        let d: u8 = match self.dir {
            None => 0,
            Some(Direction::In) => 1,
            Some(Direction::Out) => 2,
            Some(Direction::InOut) => 3,
        };
        d.hash(state);
    }
}

/// A parser or control type: the signature of its `apply`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockTy {
    /// The declaration (a parser/control type or a parser/control declaration).
    pub decl: DeclId,
    pub name: String,
    pub args: Vec<TypeId>,
    pub params: Vec<ParamTy>,
}

/// A reference to a nominal declaration with type arguments (externs, packages).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NominalTy {
    pub decl: DeclId,
    pub name: String,
    pub args: Vec<TypeId>,
}

/// A P4 type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// The type of something whose checking failed; compatible with everything.
    Error,
    Void,
    Bool,
    String,
    /// The `error` type.
    ErrorType,
    MatchKind,
    /// `_` as a type argument: matches any type.
    DontCare,
    /// `int`: infinite-precision integer.
    InfInt,
    /// `bit<W>`
    Bit(u32),
    /// `int<W>`
    Int(u32),
    /// `varbit<W>`
    Varbit(u32),
    Enum(EnumTy),
    Agg(AggTy),
    /// Header stack (elements are headers or unions) or array `elem[size]`.
    Stack {
        elem: TypeId,
        size: u32,
    },
    Tuple(Vec<TypeId>),
    List(TypeId),
    /// A type introduced by `type T name`: a new nominal type over `base`.
    NewType {
        decl: DeclId,
        name: String,
        base: TypeId,
    },
    Extern(NominalTy),
    Parser(BlockTy),
    Control(BlockTy),
    Package(NominalTy),
    /// The type of a table instance.
    Table {
        decl: DeclId,
        name: String,
    },
    /// The result of `t.apply()`: has `hit`, `miss` and `action_run`.
    TableResult {
        table: DeclId,
    },
    /// `t.apply().action_run`: an enumeration of the table's actions.
    ActionRun {
        table: DeclId,
    },
    /// An action (used for action names in table properties and `switch` labels).
    Action {
        decl: DeclId,
    },
    /// A type parameter of a generic declaration.
    Var {
        decl: DeclId,
        name: String,
    },
    /// `value_set<T>`
    ValueSet(TypeId),
    /// The type of a struct-valued expression `{ a = 1 }` before it is given a struct type.
    StructLit(Vec<Field>),
    /// The type of a keyset (`a &&& m`, `a .. b`) whose elements have the given type.
    Set(TypeId),
    /// A parser state.
    State,
    /// A type named in an expression (`E` in `E.X`, `H` in `H.minSizeInBits()`).
    TypeName(TypeId),
    /// The type of `{#}`, the invalid header or header union.
    InvalidHeader,
}

/// The table of all types of one checked program.
#[derive(Clone, Debug)]
pub struct TypeTable {
    tys: Vec<Ty>,
    map: HashMap<Ty, TypeId>,
}

impl Default for TypeTable {
    fn default() -> Self {
        Self::new()
    }
}

/// Frequently used types, interned first so that their ids are constants.
impl TypeId {
    pub const ERROR: TypeId = TypeId(0);
    pub const VOID: TypeId = TypeId(1);
    pub const BOOL: TypeId = TypeId(2);
    pub const STRING: TypeId = TypeId(3);
    pub const ERROR_TYPE: TypeId = TypeId(4);
    pub const MATCH_KIND: TypeId = TypeId(5);
    pub const DONT_CARE: TypeId = TypeId(6);
    pub const INF_INT: TypeId = TypeId(7);
    pub const STATE: TypeId = TypeId(8);
}

impl TypeTable {
    pub fn new() -> TypeTable {
        let mut t = TypeTable {
            tys: Vec::new(),
            map: HashMap::new(),
        };
        for ty in [
            Ty::Error,
            Ty::Void,
            Ty::Bool,
            Ty::String,
            Ty::ErrorType,
            Ty::MatchKind,
            Ty::DontCare,
            Ty::InfInt,
            Ty::State,
        ] {
            t.intern(ty);
        }
        t
    }

    /// The id of `ty`, adding it to the table if it is new.
    pub fn intern(&mut self, ty: Ty) -> TypeId {
        if let Some(id) = self.map.get(&ty) {
            return *id;
        }
        let id = TypeId(self.tys.len() as u32);
        self.tys.push(ty.clone());
        self.map.insert(ty, id);
        id
    }

    /// The type named by `id` (the error type for an id of another table).
    pub fn get(&self, id: TypeId) -> &Ty {
        self.tys.get(id.0 as usize).unwrap_or(&Ty::Error)
    }

    /// The ids of all types in the table.
    pub fn iter_ids(&self) -> impl Iterator<Item = TypeId> + '_ {
        (0..self.tys.len() as u32).map(TypeId)
    }

    pub fn len(&self) -> usize {
        self.tys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tys.is_empty()
    }

    pub fn bit(&mut self, w: u32) -> TypeId {
        self.intern(Ty::Bit(w))
    }

    pub fn int(&mut self, w: u32) -> TypeId {
        self.intern(Ty::Int(w))
    }

    pub fn is_error(&self, id: TypeId) -> bool {
        matches!(self.get(id), Ty::Error)
    }

    /// `bit<W>` or `int<W>`: `Some((signed, W))`.
    pub fn fixed(&self, id: TypeId) -> Option<(bool, u32)> {
        match self.get(id) {
            Ty::Bit(w) => Some((false, *w)),
            Ty::Int(w) => Some((true, *w)),
            _ => None,
        }
    }

    /// An integer type: `bit<W>`, `int<W>` or `int`.
    pub fn is_integer(&self, id: TypeId) -> bool {
        matches!(self.get(id), Ty::Bit(_) | Ty::Int(_) | Ty::InfInt)
    }

    pub fn is_header(&self, id: TypeId) -> bool {
        matches!(self.get(id), Ty::Agg(a) if a.kind == AggKind::Header)
    }

    pub fn is_header_like(&self, id: TypeId) -> bool {
        matches!(self.get(id), Ty::Agg(a) if a.kind != AggKind::Struct)
    }

    pub fn agg(&self, id: TypeId) -> Option<&AggTy> {
        match self.get(id) {
            Ty::Agg(a) => Some(a),
            _ => None,
        }
    }

    /// The underlying type of a serializable enum.
    pub fn enum_repr(&self, id: TypeId) -> Option<TypeId> {
        match self.get(id) {
            Ty::Enum(e) => e.repr,
            _ => None,
        }
    }

    /// True when the type mentions a type variable (it is generic).
    pub fn has_vars(&self, id: TypeId) -> bool {
        self.any_component(id, &mut |t| matches!(t, Ty::Var { .. }), 0)
    }

    /// True when the type mentions `_`.
    pub fn has_dont_care(&self, id: TypeId) -> bool {
        self.any_component(id, &mut |t| matches!(t, Ty::DontCare), 0)
    }

    fn any_component(&self, id: TypeId, pred: &mut impl FnMut(&Ty) -> bool, depth: u32) -> bool {
        let ty = self.get(id);
        if pred(ty) {
            return true;
        }
        if depth > 64 {
            return false;
        }
        self.children(id)
            .into_iter()
            .any(|c| self.any_component(c, pred, depth + 1))
    }

    /// The types directly inside a type.
    pub fn children(&self, id: TypeId) -> Vec<TypeId> {
        match self.get(id) {
            Ty::Agg(a) => a.fields.iter().map(|f| f.ty).collect(),
            Ty::Stack { elem, .. } | Ty::List(elem) | Ty::ValueSet(elem) | Ty::Set(elem) => {
                vec![*elem]
            }
            Ty::Tuple(ts) => ts.clone(),
            Ty::StructLit(fs) => fs.iter().map(|f| f.ty).collect(),
            Ty::Extern(n) | Ty::Package(n) => n.args.clone(),
            Ty::Parser(b) | Ty::Control(b) => b.params.iter().map(|p| p.ty).collect(),
            Ty::NewType { base, .. } => vec![*base],
            Ty::TypeName(t) => vec![*t],
            _ => Vec::new(),
        }
    }

    /// The width in bits of a fixed-size type, when it has one (`bool` is 1 bit).
    pub fn width(&self, id: TypeId) -> Option<u64> {
        self.width_at(id, 0)
    }

    fn width_at(&self, id: TypeId, depth: u32) -> Option<u64> {
        if depth > 64 {
            return None;
        }
        match self.get(id) {
            Ty::Bool => Some(1),
            Ty::Bit(w) | Ty::Int(w) => Some(u64::from(*w)),
            Ty::Enum(e) => e.repr.and_then(|r| self.width_at(r, depth + 1)),
            Ty::NewType { base, .. } => self.width_at(*base, depth + 1),
            Ty::Agg(a) => a.fields.iter().try_fold(0u64, |acc, f| {
                Some(acc.saturating_add(self.width_at(f.ty, depth + 1)?))
            }),
            Ty::Stack { elem, size } => Some(
                self.width_at(*elem, depth + 1)?
                    .saturating_mul(u64::from(*size)),
            ),
            _ => None,
        }
    }

    /// Minimum and maximum size in bits (`varbit` fields count 0 / their maximum).
    pub fn size_range(&self, id: TypeId) -> Option<(u64, u64)> {
        self.size_range_at(id, 0)
    }

    fn size_range_at(&self, id: TypeId, depth: u32) -> Option<(u64, u64)> {
        if depth > 64 {
            return None;
        }
        match self.get(id) {
            Ty::Varbit(w) => Some((0, u64::from(*w))),
            Ty::Agg(a) => a.fields.iter().try_fold((0u64, 0u64), |(lo, hi), f| {
                let (l, h) = self.size_range_at(f.ty, depth + 1)?;
                Some((lo.saturating_add(l), hi.saturating_add(h)))
            }),
            Ty::Stack { elem, size } => {
                let (l, h) = self.size_range_at(*elem, depth + 1)?;
                let n = u64::from(*size);
                Some((l.saturating_mul(n), h.saturating_mul(n)))
            }
            _ => self.width_at(id, depth).map(|w| (w, w)),
        }
    }

    /// A readable rendering of a type, as in diagnostics (`bit<8>`, `header H`, `tuple<bool>`).
    pub fn display(&self, id: TypeId) -> String {
        let mut s = String::new();
        self.write(&mut s, id, 0);
        s
    }

    fn write_list(&self, s: &mut String, ids: &[TypeId], depth: u32) {
        for (i, t) in ids.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            self.write(s, *t, depth + 1);
        }
    }

    fn write_args(&self, s: &mut String, ids: &[TypeId], depth: u32) {
        if !ids.is_empty() {
            s.push('<');
            self.write_list(s, ids, depth);
            s.push('>');
        }
    }

    fn write(&self, s: &mut String, id: TypeId, depth: u32) {
        if depth > 16 {
            s.push_str("...");
            return;
        }
        match self.get(id) {
            Ty::Error => s.push_str("<error>"),
            Ty::Void => s.push_str("void"),
            Ty::Bool => s.push_str("bool"),
            Ty::String => s.push_str("string"),
            Ty::ErrorType => s.push_str("error"),
            Ty::MatchKind => s.push_str("match_kind"),
            Ty::DontCare => s.push('_'),
            Ty::InfInt => s.push_str("int"),
            Ty::Bit(w) => {
                let _ = write!(s, "bit<{w}>");
            }
            Ty::Int(w) => {
                let _ = write!(s, "int<{w}>");
            }
            Ty::Varbit(w) => {
                let _ = write!(s, "varbit<{w}>");
            }
            Ty::Enum(e) => {
                let _ = write!(s, "enum {}", e.name);
            }
            Ty::Agg(a) => {
                let _ = write!(s, "{} {}", a.kind.keyword(), a.name);
                self.write_args(s, &a.args, depth);
            }
            Ty::Stack { elem, size } => {
                self.write(s, *elem, depth + 1);
                let _ = write!(s, "[{size}]");
            }
            Ty::Tuple(ts) => {
                s.push_str("tuple<");
                self.write_list(s, ts, depth);
                s.push('>');
            }
            Ty::List(t) => {
                s.push_str("list<");
                self.write(s, *t, depth + 1);
                s.push('>');
            }
            Ty::NewType { name, .. } => s.push_str(name),
            Ty::Extern(n) => {
                let _ = write!(s, "extern {}", n.name);
                self.write_args(s, &n.args, depth);
            }
            Ty::Package(n) => {
                let _ = write!(s, "package {}", n.name);
                self.write_args(s, &n.args, depth);
            }
            Ty::Parser(b) | Ty::Control(b) => {
                let kw = if matches!(self.get(id), Ty::Parser(_)) {
                    "parser"
                } else {
                    "control"
                };
                let _ = write!(s, "{kw} {}", b.name);
                self.write_args(s, &b.args, depth);
            }
            Ty::Table { name, .. } => {
                let _ = write!(s, "table {name}");
            }
            Ty::TableResult { .. } => s.push_str("table apply result"),
            Ty::ActionRun { .. } => s.push_str("action_run enum"),
            Ty::Action { .. } => s.push_str("action"),
            Ty::Var { name, .. } => s.push_str(name),
            Ty::ValueSet(t) => {
                s.push_str("value_set<");
                self.write(s, *t, depth + 1);
                s.push('>');
            }
            Ty::StructLit(fs) => {
                s.push_str("struct {");
                for (i, f) in fs.iter().enumerate() {
                    let _ = write!(s, "{}{} = ", if i > 0 { ", " } else { " " }, f.name);
                    self.write(s, f.ty, depth + 1);
                }
                s.push_str(" }");
            }
            Ty::Set(t) => {
                s.push_str("set<");
                self.write(s, *t, depth + 1);
                s.push('>');
            }
            Ty::State => s.push_str("state"),
            Ty::InvalidHeader => s.push_str("invalid header"),
            Ty::TypeName(t) => {
                s.push_str("type ");
                self.write(s, *t, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_gives_equal_ids_for_equal_types() {
        let mut t = TypeTable::new();
        let a = t.bit(8);
        let b = t.bit(8);
        let c = t.int(8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(t.intern(Ty::Bool), TypeId::BOOL);
        assert_eq!(t.intern(Ty::InfInt), TypeId::INF_INT);
    }

    #[test]
    fn display_and_width() {
        let mut t = TypeTable::new();
        let b8 = t.bit(8);
        let tup = t.intern(Ty::Tuple(vec![b8, TypeId::BOOL]));
        assert_eq!(t.display(tup), "tuple<bit<8>, bool>");
        let st = t.intern(Ty::Stack { elem: b8, size: 4 });
        assert_eq!(t.width(st), Some(32));
        assert_eq!(t.width(TypeId::INF_INT), None);
    }
}
