//! The P4-16 parser: hand-written recursive descent over the tokens of [`crate::lexer`], with
//! precedence climbing for expressions and error recovery.
//!
//! The grammar is that of `grammar.adoc` (P4-16 1.2.x) plus what p4c accepts beyond it
//! (`{#}`, instantiations among statements). Like p4c, the
//! parser tracks which names denote types (declared types, type parameters in scope, parsers,
//! controls, externs and packages; shadowed by variables and parameters) to decide between a
//! cast and a parenthesised expression, and whether a type name may stand where it does. Other
//! ambiguities (declaration vs statement, `a < b` vs explicit type arguments, tuple keysets)
//! are resolved by bounded, memoised backtracking.
//!
//! Error recovery: a syntax error is reported once, then the enclosing list (declarations,
//! statements, fields, table properties, ...) skips to the next `;` or to the `}` matching the
//! current nesting (or to a keyword that starts a declaration) and continues. Nesting deeper
//! than [`MAX_DEPTH`] is an error, so that no input can exhaust the stack. The tree returned is
//! always well formed; statements that could not be read are `StmtKind::Invalid`.

mod annot;
mod core;
mod decl;
mod expr;
mod extern_decl;
mod loops;
mod names;
mod parser_decl;
mod stmt;
mod table;
mod types;

#[cfg(test)]
mod tests;

use crate::Diagnostics;
use crate::ast::Program;

/// The deepest nesting of expressions, statements and types accepted.
pub const MAX_DEPTH: u32 = 256;

/// Parses preprocessed text into a program, with every syntax error found. Diagnostics are
/// sorted by position.
pub fn parse(text: &str) -> (Program, Diagnostics) {
    let (tokens, lex_diags) = crate::lexer::lex(text);
    let mut p = core::Parser::new(text, tokens);
    let program = p.program();
    let mut diags = lex_diags;
    diags.extend(p.into_diags().list);
    diags
        .list
        .sort_by_key(|d| d.span.map(|s| s.lo).unwrap_or(u32::MAX));
    (program, diags)
}
