//! The result of checking: the side tables later phases read, keyed by AST [`NodeId`]s (for
//! expressions) and by the spans of declaring identifiers (for declarations).

use crate::decls::{DeclId, DeclInfo};
use crate::types::{ParamTy, TypeId, TypeTable};
use crate::value::Value;
use koi_syntax::Span;
use koi_syntax::ast::NodeId;
use std::collections::HashMap;

/// What a name (a `Path` expression) or a member expression (`e.name`) refers to.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolution {
    /// A declaration: constant, variable, parameter, instance, action, table, function, type...
    Decl(DeclId),
    /// `error.X`
    ErrorMember(String),
    /// `E.X` for an enum type `ty`.
    EnumMember { ty: TypeId, member: String },
    /// A `match_kind` member.
    MatchKind(String),
    /// A field of a struct, header or union (index in `AggTy::fields`) or a tuple element.
    Field(usize),
    /// `stack.next`
    StackNext,
    /// `stack.last`
    StackLast,
    /// `stack.lastIndex`
    StackLastIndex,
    /// `stack.size`
    StackSize,
    /// `t.apply().hit`
    TableHit,
    /// `t.apply().miss`
    TableMiss,
    /// `t.apply().action_run`
    ActionRun,
    /// The member names a method; the enclosing call's [`CallInfo`] says which.
    Method,
}

/// Built-in methods of values and types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    IsValid,
    SetValid,
    SetInvalid,
    PushFront,
    PopFront,
    MinSizeInBits,
    MinSizeInBytes,
    MaxSizeInBits,
    MaxSizeInBytes,
    SizeInBits,
    SizeInBytes,
}

impl Builtin {
    pub fn from_name(name: &str) -> Option<Builtin> {
        Some(match name {
            "isValid" => Builtin::IsValid,
            "setValid" => Builtin::SetValid,
            "setInvalid" => Builtin::SetInvalid,
            "push_front" => Builtin::PushFront,
            "pop_front" => Builtin::PopFront,
            "minSizeInBits" => Builtin::MinSizeInBits,
            "minSizeInBytes" => Builtin::MinSizeInBytes,
            "maxSizeInBits" => Builtin::MaxSizeInBits,
            "maxSizeInBytes" => Builtin::MaxSizeInBytes,
            "sizeInBits" => Builtin::SizeInBits,
            "sizeInBytes" => Builtin::SizeInBytes,
            _ => return None,
        })
    }

    /// The size methods, which apply to types and values alike.
    pub fn is_size(self) -> bool {
        !matches!(
            self,
            Builtin::IsValid
                | Builtin::SetValid
                | Builtin::SetInvalid
                | Builtin::PushFront
                | Builtin::PopFront
        )
    }
}

/// What a call expression calls.
#[derive(Clone, Debug, PartialEq)]
pub enum CallTarget {
    Function(DeclId),
    ExternFunction(DeclId),
    Action(DeclId),
    /// A method of an extern instance of type `extern_ty` (or of `this` in an abstract method
    /// implementation).
    Method {
        extern_ty: TypeId,
        method: DeclId,
    },
    /// `x.apply(...)` on a parser, control (instance or parameter) or table.
    Apply {
        callee_ty: TypeId,
    },
    Builtin(Builtin),
    /// A constructor call `T(args)` creating an instance of type `ty` of declaration `decl`
    /// (an extern, parser, control or package).
    Constructor {
        decl: DeclId,
        ty: TypeId,
    },
}

/// How a call was resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct CallInfo {
    pub target: CallTarget,
    /// Type arguments of the callee's type parameters (given or inferred), in order.
    pub type_args: Vec<TypeId>,
    /// The callee's parameters after substitution of the type arguments.
    pub params: Vec<ParamTy>,
    /// For each parameter, the index of the argument (in `args` of the call) bound to it, or
    /// `None` when the parameter takes its default value or is an omitted `@optional` one.
    pub arg_of_param: Vec<Option<usize>>,
}

/// The program's `main` instantiation.
#[derive(Clone, Debug, PartialEq)]
pub struct MainInfo {
    /// The `main` instance declaration.
    pub decl: DeclId,
    /// The package type declaration it instantiates.
    pub package: DeclId,
    /// Its type (a `Ty::Package` with the inferred type arguments).
    pub ty: TypeId,
}

/// Everything koi learnt about a checked program. See the crate documentation for the contract.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    pub types: TypeTable,
    /// Every declaration, indexed by [`DeclId`].
    pub decls: Vec<DeclInfo>,
    /// Top-level declarations in source order (including those of included headers).
    pub top_level: Vec<DeclId>,
    /// Declarations by the span of their declaring identifier.
    pub decl_at: HashMap<Span, DeclId>,
    /// The type of every checked expression.
    pub expr_types: HashMap<NodeId, TypeId>,
    /// What names and member expressions refer to.
    pub resolutions: HashMap<NodeId, Resolution>,
    /// Implicit casts: the expression's value is converted to this type where it is used.
    pub casts: HashMap<NodeId, TypeId>,
    /// Values of compile-time known expressions (before any implicit cast of the same node).
    pub consts: HashMap<NodeId, Value>,
    /// How each call expression was resolved.
    pub calls: HashMap<NodeId, CallInfo>,
    /// Constructor calls of instance declarations (`T(args) name;`), by instance.
    pub instantiations: HashMap<DeclId, CallInfo>,
    /// Facts about each table, by table declaration.
    pub tables: HashMap<DeclId, crate::table::TableInfo>,
    /// All `error` members, in declaration order.
    pub errors: Vec<String>,
    /// All `match_kind` members, in declaration order.
    pub match_kinds: Vec<String>,
    pub main: Option<MainInfo>,
}

impl Checked {
    pub fn decl(&self, id: DeclId) -> Option<&DeclInfo> {
        self.decls.get(id.0 as usize)
    }

    /// The declaration whose declaring identifier has `span`.
    pub fn decl_at(&self, span: Span) -> Option<DeclId> {
        self.decl_at.get(&span).copied()
    }

    /// The type of an expression, after any implicit cast applied to it.
    pub fn type_after_casts(&self, id: NodeId) -> Option<TypeId> {
        self.casts
            .get(&id)
            .or_else(|| self.expr_types.get(&id))
            .copied()
    }

    /// The top-level declaration named `name`, if there is exactly one kind of it.
    pub fn top_level_named(&self, name: &str) -> Option<DeclId> {
        self.top_level
            .iter()
            .copied()
            .find(|d| self.decl(*d).is_some_and(|i| i.name == name))
    }
}
