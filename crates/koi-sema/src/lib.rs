//! koi's semantic analysis of P4-16 programs: name resolution, type checking and compile-time
//! evaluation over the AST of `koi-syntax`, following the P4-16 specification and, where the
//! specification leaves room, p4c's front end (p4test).
//!
//! # Use
//!
//! [`check`] takes a parsed [`Program`] and returns a [`Checked`] (everything learnt) and the
//! [`Diagnostics`] found (several per run; one root cause gives one error). Checking never
//! panics, whatever the program.
//!
//! # The contract of [`Checked`]
//!
//! * **Types** live in [`Checked::types`], a [`TypeTable`] interning [`Ty`]s; a [`TypeId`] names
//!   one. Equal ids mean equal types. `typedef`s are transparent (they never appear).
//! * **Declarations**: every named entity (top-level declarations, parameters, type parameters,
//!   locals, instances, actions, tables, parser states, extern methods, ...) has a [`DeclId`]
//!   indexing [`Checked::decls`]; its [`DeclInfo`] gives its kind, type, parent, parameters and
//!   (for constants) value. [`Checked::decl_at`] finds a declaration from the span of its
//!   declaring identifier, which is how lowering maps AST declarations (which have no ids) to
//!   [`DeclId`]s. [`Checked::top_level`] lists the top-level declarations in order.
//! * **Expressions** are keyed by their [`NodeId`]:
//!   - [`Checked::expr_types`]: the natural type of every checked expression (an untyped
//!     literal is `int`, `{1, 2}` is `tuple<int, int>`, `{a = 1}` a struct-literal type);
//!   - [`Checked::casts`]: the implicit cast applied where the expression is used (`int` to
//!     `bit<8>`, a serializable enum to its underlying type, a list or struct-valued expression
//!     to the struct, header, tuple, list or stack type its context gives it);
//!     [`Checked::type_after_casts`] combines both;
//!   - [`Checked::resolutions`]: what names and member expressions refer to ([`Resolution`]);
//!   - [`Checked::consts`]: the value of every compile-time known expression whose value is
//!     known (before the node's own implicit cast);
//!   - [`Checked::calls`]: for every call expression (and default/entry action invocation in
//!     tables), the [`CallInfo`]: what is called ([`CallTarget`]), the type arguments of generic
//!     callees (given or inferred), the specialised parameters, and which argument binds each
//!     parameter (named arguments, defaults and `@optional` resolved);
//!   - for a method call `x.m(...)`, the callee node `x.m` is resolved to
//!     [`Resolution::Method`] and typed with the call's result type.
//! * **Parser states** are the [`DeclKind::State`] members of the parser's [`DeclInfo`];
//!   `accept` and `reject` are declared per parser without a span. A serializable enum's
//!   [`DeclInfo::value`] is a [`Value::Struct`] of its members' values.
//! * **Instantiations** `T(args) name;` have their constructor [`CallInfo`] in
//!   [`Checked::instantiations`] (keyed by the instance's [`DeclId`]); tables their
//!   [`TableInfo`] in [`Checked::tables`].
//! * **Generics**: generic functions, externs, parsers, controls and packages are checked once
//!   with their type parameters as `Ty::Var`s; [`substitute`] specialises a type with the type
//!   arguments recorded in [`CallInfo::type_args`] (or a parser/control/package instance's type
//!   arguments).
//! * **`main`**: [`Checked::main`] names the `main` instance, its package declaration and its
//!   (inferred) package type. Without `main` the program is checked as a library unless
//!   [`CheckOptions::require_main`] is set.
//!
//! # Modules
//!
//! `types` (the type table), `decls` (declarations), `checked` (the output), `value` and
//! `constant` (compile-time values and folding), `scope` and `resolve` (name resolution),
//! `typeref` (written types), `typedecl` (header/struct/enum/typedef declarations), `generics`
//! (substitution and unification), `expr`, `ops`, `member`, `cast`, `coerce`, `call`, `args`
//! (expressions), `lvalue`, `stmt`, `switch` (statements), `decl`, `params`, `blocks`, `externs`,
//! `instance` (declarations), `annotations`, `parser_states`, `table`, `table_entries`.
//!
//! # What is checked
//!
//! Declarations in source order with declaration-before-use (parser states excepted);
//! duplicates and shadowed parameters; the type nesting rules of headers, unions and structs;
//! every expression's operand types with the spec's implicit casts; explicit casts; l-values
//! and argument directions; calls (named, default and optional arguments, overloads, generic
//! inference); where calls, instantiations and declarations may appear; parsers (states,
//! `select` keysets, reachability of `accept`/`reject`); tables (keys, action lists, default
//! actions, entries, priorities); `switch`; constructor arguments and `main`; annotations with
//! defined meanings and control-plane name conflicts. Compile-time evaluation folds constants
//! with infinite-precision integers wrapped at the widths of `bit<W>`/`int<W>`.

mod annotations;
mod args;
mod blocks;
mod call;
mod cast;
pub mod checked;
mod checker;
mod coerce;
pub mod constant;
mod decl;
pub mod decls;
mod expr;
mod externs;
pub mod generics;
mod instance;
mod lvalue;
mod member;
mod ops;
mod params;
mod parser_states;
mod resolve;
mod scope;
mod stmt;
mod switch;
pub mod table;
mod table_entries;
mod typedecl;
mod typeref;
pub mod types;
pub mod value;

pub use annotations::koi_stage_arg;
pub use checked::{Builtin, CallInfo, CallTarget, Checked, MainInfo, Resolution};
pub use decls::{DeclId, DeclInfo, DeclKind, ParamInfo};
pub use generics::{Subst, substitute};
pub use table::TableInfo;
pub use types::{Ty, TypeId, TypeTable};
pub use value::Value;

use koi_syntax::Diagnostics;
#[cfg(doc)]
use koi_syntax::ast::NodeId;
use koi_syntax::ast::Program;

/// Options of a check.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// When true, a program without `main` is an error (`koi compile`); otherwise it is checked
    /// as a library (`koi check`).
    pub require_main: bool,
}

/// Checks a parsed program, returning what was learnt and every diagnostic found.
pub fn check(program: &Program, opts: &CheckOptions) -> (Checked, Diagnostics) {
    let mut c = checker::Checker::new(opts);
    c.check_program(program);
    let late = std::mem::take(&mut c.late);
    c.diags.extend(late);
    (c.out, c.diags)
}
