//! The P4-16 abstract syntax tree produced by the parser.
//!
//! The tree mirrors the grammar of `grammar.adoc` closely but folds near-duplicate productions
//! together (for example every kind of keyset expression is an [`Expr`]). It carries no types and
//! no resolved names: name resolution and type checking (`koi-sema`) work over it and produce
//! their own side tables. Every node has a [`Span`] in the preprocessed text.
//!
//! Error recovery: where the parser could not make sense of input it records a diagnostic and
//! inserts an `Error` node (`ExprKind::Error`, `TypeKind::Error`, `StmtKind::Error`) or drops the
//! declaration, so that later phases always see a well-formed tree.

use crate::source::Span;
use num_bigint::BigUint;

/// An identifier with its position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

impl Ident {
    pub fn new(name: impl Into<String>, span: Span) -> Ident {
        Ident {
            name: name.into(),
            span,
        }
    }
}

/// A possibly dot-prefixed name (`.x` refers to the top-level `x`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    pub global: bool,
    pub name: Ident,
    pub span: Span,
}

/// A whole program: the top-level declarations in source order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub decls: Vec<Decl>,
}

// ---------------------------------------------------------------------------------------------
// Annotations

#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    pub name: Ident,
    pub body: AnnotationBody,
    pub span: Span,
}

/// One token of an unstructured annotation body, kept as written.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnotationToken {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AnnotationBody {
    /// `@name` with no body.
    Empty,
    /// `@name(tokens...)`: the raw tokens, and the body parsed as a comma-separated expression
    /// list when it is one (as for `@name("x")`, `@id(3)`, `@priority(2)`).
    Unstructured {
        tokens: Vec<AnnotationToken>,
        exprs: Option<Vec<Expr>>,
    },
    /// `@name[e1, e2]`
    StructuredList(Vec<Expr>),
    /// `@name[k1 = e1, k2 = e2]`
    StructuredKv(Vec<(Ident, Expr)>),
}

// ---------------------------------------------------------------------------------------------
// Types

#[derive(Clone, Debug, PartialEq)]
pub struct Type {
    pub kind: TypeKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeKind {
    Bool,
    Error,
    MatchKind,
    String,
    Void,
    /// `_` in a type-argument position.
    DontCare,
    /// `int` without a width: the infinite-precision integer type.
    InfInt,
    /// `bit` (width 1) or `bit<W>`; `None` means plain `bit`.
    Bit(Option<Box<Expr>>),
    /// `int<W>`
    Int(Box<Expr>),
    /// `varbit<W>`
    Varbit(Box<Expr>),
    /// A type name, possibly dot-prefixed.
    Named(Path),
    /// `Name<T1, T2>`
    Specialized {
        base: Path,
        args: Vec<Type>,
    },
    /// Header stack or array `T[size]`.
    Stack {
        elem: Box<Type>,
        size: Box<Expr>,
    },
    /// `tuple<T1, T2>`
    Tuple(Vec<Type>),
    /// `list<T>`
    List(Box<Type>),
    /// The parser could not read a type here.
    Invalid,
}

/// A type parameter of a generic declaration.
pub type TypeParams = Vec<Ident>;

// ---------------------------------------------------------------------------------------------
// Expressions

/// Identity of an expression node, unique within one parsed [`Program`] (assigned by the parser
/// in creation order). Later phases key their side tables (types, resolved names) by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub id: NodeId,
    pub kind: ExprKind,
    pub span: Span,
}

/// An integer literal as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntLit {
    /// Magnitude.
    pub value: BigUint,
    /// `Some((signed, width))` for width-prefixed literals such as `8w5` (false, 8) or `16s3`
    /// (true, 16); `None` for plain literals (type `int`).
    pub width: Option<(bool, u32)>,
    /// True for a literal written with a negative sign inside the width prefix (`16s-1`).
    pub negative: bool,
    /// The radix it was written in (2, 8, 10, 16), kept for printing.
    pub radix: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `!`
    Not,
    /// `~`
    BitNot,
    /// unary `-`
    Neg,
    /// unary `+`
    Plus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Mul,
    Div,
    Mod,
    Add,
    Sub,
    /// `|+|`
    AddSat,
    /// `|-|`
    SubSat,
    Shl,
    Shr,
    Le,
    Ge,
    Lt,
    Gt,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    /// `++`
    Concat,
    And,
    Or,
}

/// An argument of a call or instantiation: positional, or named (`name = value`). A `_`
/// argument is an `ExprKind::DontCare` value.
#[derive(Clone, Debug, PartialEq)]
pub struct Argument {
    pub name: Option<Ident>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(IntLit),
    Bool(bool),
    Str(String),
    /// A (possibly dot-prefixed) name. Keywords usable as expressions (`error`, `this`) appear
    /// here with their keyword spelling as name.
    Path(Path),
    /// `e.name`
    Member(Box<Expr>, Ident),
    /// `e[i]`
    Index(Box<Expr>, Box<Expr>),
    /// `e[hi:lo]`
    Slice(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `e[lo +: width]`: the `width` bits of `e` starting at bit `lo` (P4-16 1.2.5).
    SliceWidth(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `callee<type_args>(args)`, also method calls (`callee` is a `Member`) and constructor
    /// calls in expressions (`Checksum16()`).
    Call {
        callee: Box<Expr>,
        type_args: Vec<Type>,
        args: Vec<Argument>,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `(T) e`
    Cast(Box<Type>, Box<Expr>),
    /// `{ e1, e2 }` (a list or tuple expression; also a tuple keyset). `dots` is true when the
    /// list ends with `...`.
    List {
        items: Vec<Expr>,
        dots: bool,
    },
    /// `{ f1 = e1, f2 = e2 }` (a struct-valued expression), `dots` as for `List`.
    StructInit {
        fields: Vec<(Ident, Expr)>,
        dots: bool,
    },
    /// A type used where an expression stands, e.g. the receiver of `bit<8>.minSizeInBits()`
    /// or a specialised type being constructed.
    TypeRef(Box<Type>),
    /// `_` as a value or keyset.
    DontCare,
    /// `default` as a keyset.
    Default,
    /// `...` as an argument or keyset.
    Dots,
    /// `{#}`: the invalid header or header union (usually cast, as in `(H){#}`).
    InvalidHeader,
    /// Keyset `value &&& mask`.
    Mask(Box<Expr>, Box<Expr>),
    /// Keyset `lo .. hi`.
    Range(Box<Expr>, Box<Expr>),
    /// The parser could not read an expression here.
    Invalid,
}

// ---------------------------------------------------------------------------------------------
// Declarations

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
    InOut,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub annotations: Vec<Annotation>,
    pub direction: Option<Direction>,
    pub ty: Type,
    pub name: Ident,
    /// Default value (`bit<8> x = 3`).
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StructField {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub name: Ident,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EnumMember {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    /// Value for serializable enums (`A = 1`).
    pub value: Option<Expr>,
}

/// A function, method or extern-function prototype.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionProto {
    pub annotations: Vec<Annotation>,
    /// Return type; `None` for extern constructors (`Checksum16();`).
    pub ret: Option<Type>,
    pub name: Ident,
    pub type_params: TypeParams,
    pub params: Vec<Param>,
    /// `abstract` methods that an instantiation must implement.
    pub is_abstract: bool,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    pub annotations: Vec<Annotation>,
    pub kind: DeclKind,
    pub span: Span,
}

impl Decl {
    /// The declared name, if the declaration has exactly one.
    pub fn name(&self) -> Option<&Ident> {
        use DeclKind::*;
        match &self.kind {
            Const { name, .. }
            | Var { name, .. }
            | Instantiation { name, .. }
            | Header { name, .. }
            | Struct { name, .. }
            | HeaderUnion { name, .. }
            | Enum { name, .. }
            | Typedef { name, .. }
            | NewType { name, .. }
            | Extern { name, .. }
            | Function { name, .. }
            | Action { name, .. }
            | ParserType { name, .. }
            | Parser { name, .. }
            | ControlType { name, .. }
            | Control { name, .. }
            | PackageType { name, .. }
            | Table { name, .. }
            | ValueSet { name, .. } => Some(name),
            ExternFunction(p) => Some(&p.name),
            Error(_) | MatchKind(_) => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum DeclKind {
    /// `const T name = value;`
    Const { ty: Type, name: Ident, value: Expr },
    /// `T name [= init];` (local variables; at top level only in tests)
    Var {
        ty: Type,
        name: Ident,
        init: Option<Expr>,
    },
    /// `T(args) name [= { abstract method implementations }];`
    Instantiation {
        ty: Type,
        args: Vec<Argument>,
        name: Ident,
        /// Implementations of the extern's abstract methods (functions and nested instances).
        initializer: Option<Vec<Decl>>,
    },
    Header {
        name: Ident,
        type_params: TypeParams,
        fields: Vec<StructField>,
    },
    Struct {
        name: Ident,
        type_params: TypeParams,
        fields: Vec<StructField>,
    },
    HeaderUnion {
        name: Ident,
        type_params: TypeParams,
        fields: Vec<StructField>,
    },
    /// `enum [bit<8>] E { A [= 1], B }`
    Enum {
        repr: Option<Type>,
        name: Ident,
        members: Vec<EnumMember>,
    },
    /// `error { A, B }` (error declarations merge across the program)
    Error(Vec<Ident>),
    /// `match_kind { exact, ternary }`
    MatchKind(Vec<Ident>),
    /// `typedef T name;`
    Typedef { ty: Type, name: Ident },
    /// `type T name;`
    NewType { ty: Type, name: Ident },
    /// `extern Name<T> { methods }` (constructors are methods with `ret == None`)
    Extern {
        name: Ident,
        type_params: TypeParams,
        methods: Vec<FunctionProto>,
    },
    /// `extern T f<..>(..);`
    ExternFunction(FunctionProto),
    /// `T f<..>(..) { body }`
    Function {
        ret: Type,
        name: Ident,
        type_params: TypeParams,
        params: Vec<Param>,
        body: Block,
    },
    Action {
        name: Ident,
        params: Vec<Param>,
        body: Block,
    },
    /// `parser P<T>(params);`
    ParserType {
        name: Ident,
        type_params: TypeParams,
        params: Vec<Param>,
    },
    Parser {
        name: Ident,
        type_params: TypeParams,
        params: Vec<Param>,
        ctor_params: Vec<Param>,
        locals: Vec<Decl>,
        states: Vec<ParserState>,
    },
    /// `control C<T>(params);`
    ControlType {
        name: Ident,
        type_params: TypeParams,
        params: Vec<Param>,
    },
    Control {
        name: Ident,
        type_params: TypeParams,
        params: Vec<Param>,
        ctor_params: Vec<Param>,
        locals: Vec<Decl>,
        body: Block,
    },
    /// `package P<T>(params);`
    PackageType {
        name: Ident,
        type_params: TypeParams,
        params: Vec<Param>,
    },
    Table {
        name: Ident,
        properties: Vec<TableProperty>,
    },
    /// `value_set<T>(size) name;`
    ValueSet { elem: Type, size: Expr, name: Ident },
}

// ---------------------------------------------------------------------------------------------
// Parsers

#[derive(Clone, Debug, PartialEq)]
pub struct ParserState {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub body: Vec<Stmt>,
    /// `None` when the state has no transition statement (it then goes to `reject`).
    pub transition: Option<Transition>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub kind: TransitionKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TransitionKind {
    /// `transition name;`
    Direct(Path),
    /// `transition select(exprs) { cases }`
    Select {
        exprs: Vec<Expr>,
        cases: Vec<SelectCase>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct SelectCase {
    /// The keyset: an expression, `default`, `_`, a mask, a range, or a `List` for tuples.
    pub keyset: Expr,
    pub next: Path,
    pub span: Span,
}

// ---------------------------------------------------------------------------------------------
// Tables

#[derive(Clone, Debug, PartialEq)]
pub struct TableProperty {
    pub annotations: Vec<Annotation>,
    pub kind: TablePropertyKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TablePropertyKind {
    Key(Vec<KeyElement>),
    Actions(Vec<ActionRef>),
    /// `[const] entries = { ... }`
    Entries {
        is_const: bool,
        entries: Vec<Entry>,
    },
    /// Any other property: `[const] name = value;` (`default_action`, `size`,
    /// `implementation`, `counters`, `meters`, `support_timeout`, ...).
    Other {
        is_const: bool,
        name: Ident,
        value: Expr,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct KeyElement {
    pub annotations: Vec<Annotation>,
    pub expr: Expr,
    pub match_kind: Ident,
    pub span: Span,
}

/// An entry of a table's `actions` list: a name with optional (partially bound) arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionRef {
    pub annotations: Vec<Annotation>,
    pub name: Path,
    pub args: Option<Vec<Argument>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub annotations: Vec<Annotation>,
    pub is_const: bool,
    /// `priority = N :` before the keyset.
    pub priority: Option<Expr>,
    pub keyset: Expr,
    /// The action call (`a(1, 2)` or `a`), as an expression.
    pub action: Expr,
    pub span: Span,
}

// ---------------------------------------------------------------------------------------------
// Statements

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub annotations: Vec<Annotation>,
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SwitchLabel {
    Default(Span),
    /// An action name (table switch) or a constant expression.
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SwitchCase {
    pub label: SwitchLabel,
    /// `None` for a fall-through label (`a:` followed directly by another label).
    pub body: Option<Block>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `lhs = rhs;` or a compound assignment `lhs op= rhs;` (`op` is `Some`).
    Assign {
        lhs: Expr,
        op: Option<BinOp>,
        rhs: Expr,
    },
    /// A method or function call statement; the expression is an `ExprKind::Call`.
    Call(Expr),
    Empty,
    Exit,
    Return(Option<Expr>),
    Break,
    Continue,
    If {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    Block(Block),
    Switch {
        expr: Expr,
        cases: Vec<SwitchCase>,
    },
    /// A local declaration: variable, constant or instantiation.
    Decl(Box<Decl>),
    /// `for (init; cond; update) body`
    For {
        annotations: Vec<Annotation>,
        init: Vec<Stmt>,
        cond: Option<Expr>,
        update: Vec<Stmt>,
        body: Box<Stmt>,
    },
    /// `for (T x in collection) body` (the parser always gives `ty`)
    ForIn {
        annotations: Vec<Annotation>,
        ty: Option<Type>,
        name: Ident,
        collection: Expr,
        body: Box<Stmt>,
    },
    /// The parser could not read a statement here.
    Invalid,
}
