//! Construction helpers for lowering: [`BodyBuilder`], a cursor that appends statements to the
//! current block of a [`Body`] and opens blocks for control flow, and [`Pipeline`] methods that
//! add blocks and bind them to architecture roles.
//!
//! The rest of the IR is plain data built directly (`Phv::add_header`, `Parser::add_state`,
//! `Table::new`, `Action::new`, pushing into the arenas). Nothing here verifies: run
//! [`crate::verify()`] on the finished pipeline.

use crate::control::{ApplyNext, Body, Control, Terminator};
use crate::expr::Expr;
use crate::ids::{BlockId, ControlId, ParserId, TableId};
use crate::parser::Parser;
use crate::pipeline::{BlockRef, Pipeline, Role};
use crate::stmt::Stmt;
use crate::types::Preamble;

/// Builds a [`Body`] statement by statement.
///
/// Statements go to the current block. Terminating the current block leaves the cursor on it;
/// a statement pushed after that (dead code after `return` or `exit`) opens a fresh,
/// unreachable block rather than being lost or corrupting the terminated one.
#[derive(Debug)]
pub struct BodyBuilder {
    body: Body,
    current: BlockId,
}

impl Default for BodyBuilder {
    fn default() -> Self {
        BodyBuilder::new()
    }
}

impl BodyBuilder {
    /// A builder positioned on the entry block of an empty body.
    pub fn new() -> BodyBuilder {
        let body = Body::new();
        let current = body.entry;
        BodyBuilder { body, current }
    }

    /// The block statements go to.
    pub fn current(&self) -> BlockId {
        self.current
    }

    /// Adds an empty block (the cursor does not move).
    pub fn new_block(&mut self) -> BlockId {
        self.body.add_block()
    }

    /// Moves the cursor to `block`.
    pub fn switch_to(&mut self, block: BlockId) {
        self.current = block;
    }

    /// Whether the current block already has a terminator.
    pub fn is_terminated(&self) -> bool {
        self.body
            .blocks
            .get(self.current)
            .is_none_or(|b| b.term.is_some())
    }

    /// Appends a statement to the current block (see the type's doc for dead code).
    pub fn push(&mut self, stmt: Stmt) {
        if self.is_terminated() {
            self.current = self.body.add_block();
        }
        self.body.push(self.current, stmt);
    }

    /// Terminates the current block (a no-op if it already is, as after `return; return;`).
    pub fn terminate(&mut self, term: Terminator) {
        if !self.is_terminated() {
            self.body.terminate(self.current, term);
        }
    }

    /// Ends the current block with a jump to a new block and moves there.
    pub fn goto_new(&mut self) -> BlockId {
        let next = self.new_block();
        self.terminate(Terminator::Goto(next));
        self.switch_to(next);
        next
    }

    /// Ends the current block with a two-way branch to two new blocks; returns `(then,
    /// otherwise)`. The cursor stays; move it with [`BodyBuilder::switch_to`].
    pub fn branch(&mut self, cond: Expr) -> (BlockId, BlockId) {
        let (then, otherwise) = (self.new_block(), self.new_block());
        self.terminate(Terminator::Branch {
            cond,
            then,
            otherwise,
        });
        (then, otherwise)
    }

    /// Ends the current block by applying `table` and continuing in a new block, where the
    /// cursor moves.
    pub fn apply(&mut self, table: TableId) -> BlockId {
        let next = self.new_block();
        self.terminate(Terminator::Apply {
            table,
            next: ApplyNext::Always(next),
        });
        self.switch_to(next);
        next
    }

    /// The body; the current block, if unterminated, ends with `Return` (falling off the end
    /// of a body returns). Other unterminated blocks are left for the verifier to report.
    pub fn finish(mut self) -> Body {
        self.terminate(Terminator::Return);
        self.body
    }
}

impl Pipeline {
    /// Adds a parser, bound to `role` if given.
    pub fn add_parser(&mut self, parser: Parser, role: Option<Role>) -> ParserId {
        let id = self.parsers.push(parser);
        if let Some(r) = role {
            self.package.push((r, BlockRef::Parser(id)));
        }
        id
    }

    /// Adds a control named `name`, bound to `role` if given.
    pub fn add_control(&mut self, name: &str, body: Body, role: Option<Role>) -> ControlId {
        let id = self.controls.push(Control {
            preamble: Preamble::new(name),
            body,
        });
        if let Some(r) = role {
            self.package.push((r, BlockRef::Control(id)));
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stmt::Builtin;

    #[test]
    fn dead_code_after_return_goes_to_a_fresh_block() {
        let mut b = BodyBuilder::new();
        let (then, otherwise) = b.branch(Expr::Bool(true));
        b.switch_to(then);
        b.terminate(Terminator::Exit);
        b.push(Stmt::Builtin(Builtin::MarkToDrop));
        let dead = b.current();
        assert_ne!(dead, then);
        b.terminate(Terminator::Return);
        b.switch_to(otherwise);
        let body = b.finish();
        assert_eq!(body.blocks[then].term, Some(Terminator::Exit));
        assert_eq!(body.blocks[dead].stmts.len(), 1);
        assert_eq!(body.blocks[otherwise].term, Some(Terminator::Return));
        assert_eq!(body.blocks.len(), 4);
    }
}
