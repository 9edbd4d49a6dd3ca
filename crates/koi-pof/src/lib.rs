//! Protocol-oblivious forwarding (POF) for koi: pipelines a controller defines at run time
//! over `{offset, length}` bit ranges instead of P4 headers.
//!
//! - [`model`]: the configuration (protocols, metadata fields, tables, entries, the POF flow
//!   instructions and actions) and the edits `koi ctl pof_*` makes to it;
//! - [`text`]: its text format, parsed with `FILE:LINE:COL` errors and printed back;
//! - [`codegen`]: its compilation to a v1model P4-16 program and, through koi's frontend, to
//!   a verified [`koi_ir::Pipeline`] (the module doc says how fields become headers, how
//!   `GOTO_TABLE`'s offset shift becomes a static cursor, and what is refused);
//! - [`writes`]: the configuration's entries as table writes into the compiled program (its
//!   tables have no entries of their own), so an entry change that leaves the program as it
//!   is applies as writes, without compiling.
//!
//! The runtime (crate `koi-runtime`) swaps the compiled program in as it does a P4 program's,
//! with the state carried over. docs/pof.md is the user's guide.

pub mod codegen;
pub mod model;
pub mod text;
pub mod writes;

pub use codegen::{CompileError, Generated, Layout, compile, generate, table_name};
pub use model::{
    Action, Config, Entry, Field, FieldRef, Instruction, MatchKind, MatchValue, Protocol, Table,
};
pub use text::{ParseError, parse, print};
pub use writes::{TableWrite, install};

#[cfg(test)]
mod tests;
