//! koi's intermediate representation: what a P4-16 program is after the frontend, and what the
//! reference interpreter, the cached datapath, the code generator and P4Info generation read.
//!
//! # Data flow
//!
//! ```text
//! koi-syntax (AST) ─► koi-sema (types, constants) ─► lowering ─► Pipeline ─► verify()
//!                                                                   │  (after every pass, debug)
//!                  ┌────────────────────────────┬───────────────────┼─────────────────┐
//!                  ▼                            ▼                   ▼                 ▼
//!        reference interpreter        fast path (flow key =   code generator      P4Info / runtime
//!        (BMv2 semantics, trace)      PHV bits, megaflows)    (Cranelift)         state (by name)
//! ```
//!
//! # The language
//!
//! A [`Pipeline`] is one program for one [`Architecture`]: which [`Parser`] or [`Control`]
//! fills each [`Role`] of the package, and the entities they use, each in an
//! [`entity::Arena`] with a typed `u32` id ([`ids`]).
//!
//! - **State is the PHV** ([`phv`]). Every header (with a validity bit), stack element (with
//!   the stack's next index), union member, metadata field (nested structs flattened),
//!   standard metadata field, local variable and temporary is a [`phv::Slot`] at a fixed bit
//!   offset. There are no aggregates in expressions: struct and header operations are lowered
//!   to per-slot operations, except the few whole-header statements that are clearer whole
//!   (`Extract`, `Emit`, `SetValid`, `SetInvalid`, `CopyHeader`, `IsValid`, stack push/pop).
//! - **Values** are [`Bits`] of any width (inline up to 128 bits), `bool`, and varbits
//!   ([`Value`]). There is no arbitrary-precision integer: sema folds `int` constants to
//!   sized values before lowering. Types ([`Ty`]) carry no signedness; operators do.
//! - **Expressions** ([`Expr`]) are pure trees over slots, constants and action parameters;
//!   **statements** ([`Stmt`]) do the effects: assignment to a [`Place`], header operations,
//!   parser packet operations, action calls, extern instance methods, and the architecture's
//!   extern functions as a typed [`Builtin`] enum.
//! - **Parsers** are graphs of states ending in a [`Transition`] (`accept`, `reject`, goto, or
//!   an ordered `select` with value/mask, prefix, range, default and value-set cases).
//! - **Controls and actions** are CFGs ([`Body`]) of blocks ending in a [`Terminator`]; table
//!   application is a terminator with hit/miss or per-action successors, so every table
//!   decision is a visible edge. Actions are usually one block (straight-line); see
//!   [`control`] for why they are CFGs at all.
//! - **Tables, externs, value sets, digests, controller headers and the control-plane types**
//!   carry everything P4Info needs: p4c's fully qualified names, `@id`s, annotations (hence
//!   `@brief`/`@description`), match field names and widths, action parameters, scopes,
//!   default actions and const-ness, entries with final priorities, implementations, direct
//!   resources, idle timeout.
//!
//! # What lowering must have done
//!
//! Generics specialised, functions and sub-parsers/sub-controls inlined (action calls may stay
//! as [`Stmt::CallAction`]), parameters bound to slots with explicit copy-in/copy-out
//! assignments, constants folded to sized values, enums and errors turned into their codes,
//! `if` in parsers turned into select states, table properties resolved to ids, and
//! `@name` applied. Run [`verify()`] on the result.
//!
//! # Invariants (checked by [`verify()`], assumed by every consumer)
//!
//! - Every id is in range of its arena; every block has a terminator and every parser state a
//!   transition; every jump targets an existing block or state of the same body or parser.
//! - Expressions type-check: operand widths agree, conditions are `bool`, slices lie inside
//!   their operand, `Expr::Param` appears only in actions and is in range; assignments have
//!   equal types on both sides; read-only slots (validity, varbit lengths, next indices) are
//!   written only by header operations.
//! - Statements appear only in their context: packet reads in parsers, `Emit` in deparsers,
//!   no table application inside actions, no recursive action calls.
//! - The PHV layout: slots inside the layout, pairwise disjoint, headers byte-aligned and
//!   contiguous in wire order.
//! - Tables: actions exist, the default action is allowed as default and gets arguments of
//!   the parameters' widths, entries have one pattern per key of the key's width and a
//!   priority exactly when the table needs one, implementations and direct resources are
//!   externs of the right kind; control-plane names are unique per kind, except that the
//!   specialisations of one action (its directional parameters bound differently in several
//!   tables' action lists) share the source action's ([`control::Action::control_plane_name`]):
//!   they have equal parameters and no table lists two of them.
//! - The package binds every role of the architecture exactly once, to a block of the right
//!   kind.
//!
//! # What the consumers rely on
//!
//! - The **interpreter** executes the IR directly; it stores the PHV as bytes in packet bit
//!   order, so `Extract`/`Emit` of a header are single bit copies.
//! - The **fast path** takes the flow key from the PHV: the slots a packet's processing read
//!   (select keys, branch conditions, table keys, validity bits) are bit ranges of the PHV, so
//!   the megaflow mask is a PHV bit mask. Action programs are built from the straight-line
//!   statements that ran.
//! - **P4Info generation and reload** match objects by [`types::Preamble`] name and compare
//!   their signatures (key match kinds and widths, action parameter widths, extern kinds and
//!   element types); ids are per image and never compared across images.

pub mod builder;
pub mod control;
pub mod entity;
pub mod expr;
pub mod externs;
pub mod ids;
pub mod matching;
pub mod native;
pub mod parser;
pub mod phv;
pub mod pipeline;
mod print;
pub mod stmt;
pub mod table;
pub mod types;
pub mod value;
pub mod verify;

pub use builder::BodyBuilder;
pub use control::{Action, ActionParam, ApplyNext, Block, Body, Control, Terminator};
pub use expr::{BinOp, Cast, Expr, HeaderRef, Place, UnOp};
pub use externs::{
    ConstArg, ControllerHeader, CounterUnit, Digest, Extern, ExternKind, FieldList, MeterUnit,
};
pub use ids::*;
pub use matching::{MatchField, MatchKind, Pattern};
pub use native::{CType, NativeFn, NativeLib, Natives};
pub use parser::{Keyset, Parser, SelectCase, State, Target, Transition, ValueSet};
pub use phv::{FieldSpec, Phv, Slot, SlotKind};
pub use pipeline::{Architecture, BlockRef, Calculation, Pipeline, Role};
pub use stmt::{Arg, Builtin, CloneKind, HashAlgo, NativeArg, Stmt};
pub use table::{ActionCall, ActionScope, DefaultAction, Entry, Table, TableAction, TableKey};
pub use types::{Annotation, P4Type, Preamble, Ty};
pub use value::{Bits, Value};
pub use verify::{VerifyError, verify};
