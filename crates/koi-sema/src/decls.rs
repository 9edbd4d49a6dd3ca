//! The declarations of a checked program: every named entity (types, constants, variables,
//! parameters, type parameters, instances, actions, tables, parser states, ...) gets a
//! [`DeclId`] and a [`DeclInfo`] describing what it is and what its type is.

use crate::types::{Dir, TypeId};
use crate::value::Value;
use koi_syntax::Span;
use koi_syntax::ast::NodeId;

/// Index of a declaration in [`crate::Checked::decls`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeclId(pub u32);

/// What a declaration declares.
#[derive(Clone, Debug, PartialEq)]
pub enum DeclKind {
    /// `const T x = v;` (`DeclInfo::value` holds the value when it could be evaluated).
    Const,
    /// A variable (local, or a `for` loop variable).
    Var,
    /// A run-time parameter of a function, method, action, parser or control.
    Param(ParamInfo),
    /// A constructor parameter of a parser, control, package or extern constructor.
    CtorParam(ParamInfo),
    /// A type parameter of a generic declaration (its type is a `Ty::Var`).
    TypeParam,
    /// An instantiation `T(args) name;`.
    Instance,
    Struct,
    Header,
    HeaderUnion,
    Enum,
    /// `typedef T name;` (`ty` is the named type).
    Typedef,
    /// `type T name;`
    NewType,
    /// `extern Name<T> { ... }`; its methods (constructors included) are in `members`.
    Extern,
    /// A method of an extern (`ret` is `None` for constructors).
    Method {
        is_abstract: bool,
    },
    ExternFunction,
    Function,
    Action,
    ParserType,
    Parser,
    ControlType,
    Control,
    PackageType,
    Table,
    ValueSet,
    State,
    /// An implementation of an abstract method inside an instance initializer.
    MethodImpl,
    /// A member of a `match_kind` declaration (visible as a top-level name).
    MatchKindMember,
}

impl DeclKind {
    /// How diagnostics name this kind of declaration.
    pub fn describe(&self) -> &'static str {
        match self {
            DeclKind::Const => "constant",
            DeclKind::Var => "variable",
            DeclKind::Param(_) => "parameter",
            DeclKind::CtorParam(_) => "constructor parameter",
            DeclKind::TypeParam => "type parameter",
            DeclKind::Instance => "instance",
            DeclKind::Struct => "struct",
            DeclKind::Header => "header",
            DeclKind::HeaderUnion => "header_union",
            DeclKind::Enum => "enum",
            DeclKind::Typedef => "typedef",
            DeclKind::NewType => "type",
            DeclKind::Extern => "extern",
            DeclKind::Method { .. } => "method",
            DeclKind::ExternFunction => "extern function",
            DeclKind::Function => "function",
            DeclKind::Action => "action",
            DeclKind::ParserType => "parser type",
            DeclKind::Parser => "parser",
            DeclKind::ControlType => "control type",
            DeclKind::Control => "control",
            DeclKind::PackageType => "package",
            DeclKind::Table => "table",
            DeclKind::ValueSet => "value_set",
            DeclKind::State => "parser state",
            DeclKind::MethodImpl => "method",
            DeclKind::MatchKindMember => "match_kind",
        }
    }

    /// True for declarations that name a type.
    pub fn is_type(&self) -> bool {
        matches!(
            self,
            DeclKind::TypeParam
                | DeclKind::Struct
                | DeclKind::Header
                | DeclKind::HeaderUnion
                | DeclKind::Enum
                | DeclKind::Typedef
                | DeclKind::NewType
                | DeclKind::Extern
                | DeclKind::ParserType
                | DeclKind::Parser
                | DeclKind::ControlType
                | DeclKind::Control
                | DeclKind::PackageType
        )
    }

    /// True for callables that may be overloaded by their number of parameters.
    pub fn overloadable(&self) -> bool {
        matches!(
            self,
            DeclKind::Function
                | DeclKind::ExternFunction
                | DeclKind::Method { .. }
                | DeclKind::MethodImpl
                | DeclKind::PackageType
                | DeclKind::Control
                | DeclKind::Parser
        )
    }
}

/// Facts about one parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    pub dir: Dir,
    /// Position in its parameter list.
    pub index: usize,
    /// Annotated `@optional`: the argument may be omitted.
    pub optional: bool,
    /// The default value expression, when it has one.
    pub default: Option<NodeId>,
}

/// One declared entity.
#[derive(Clone, Debug)]
pub struct DeclInfo {
    pub name: String,
    /// The span of the declaring identifier.
    pub span: Span,
    pub kind: DeclKind,
    /// The type of the entity: the value type of constants, variables, parameters and
    /// instances; the declared type of type declarations (the named type for a typedef); the
    /// parser/control/package type of blocks; `Ty::Table` for tables, `Ty::Action` for actions,
    /// `Ty::State` for parser states, `Ty::ValueSet` for value sets; the return type of
    /// functions and methods (`void` for constructors).
    pub ty: TypeId,
    /// The enclosing declaration (`None` at top level).
    pub parent: Option<DeclId>,
    pub type_params: Vec<DeclId>,
    /// Run-time parameters (apply parameters of parsers and controls).
    pub params: Vec<DeclId>,
    /// Constructor parameters of parsers, controls and packages.
    pub ctor_params: Vec<DeclId>,
    /// Return type of functions and methods; `None` for constructors and non-callables.
    pub ret: Option<TypeId>,
    /// Nested declarations: extern methods, parser/control locals, parser states.
    pub members: Vec<DeclId>,
    /// Value of a constant (or of a constructor argument bound at instantiation).
    pub value: Option<Value>,
}

impl DeclInfo {
    pub fn new(name: impl Into<String>, span: Span, kind: DeclKind, ty: TypeId) -> DeclInfo {
        DeclInfo {
            name: name.into(),
            span,
            kind,
            ty,
            parent: None,
            type_params: Vec::new(),
            params: Vec::new(),
            ctor_params: Vec::new(),
            ret: None,
            members: Vec::new(),
            value: None,
        }
    }

    /// The parameter facts of a parameter declaration.
    pub fn param(&self) -> Option<&ParamInfo> {
        match &self.kind {
            DeclKind::Param(p) | DeclKind::CtorParam(p) => Some(p),
            _ => None,
        }
    }
}
