//! Controls and actions: bodies as control-flow graphs of basic blocks.
//!
//! A [`Body`] is an arena of [`Block`]s (statements then one [`Terminator`]) with an entry
//! block. Controls have one; so do actions. Table application is a terminator
//! ([`Terminator::Apply`]) whose successors are chosen by hit/miss or by the action that ran
//! (`switch (t.apply().action_run)`), so that the slow path sees every table decision as a
//! control-flow edge, and the code generator gets a plain CFG.
//!
//! Why actions are CFGs too, not straight-line code: P4 actions may contain `if`, `return`
//! and `exit`, and calls to externs under conditions (`if (x) counter.count(i)`), which
//! predication into ternary expressions cannot express. With one body type the interpreter
//! has one executor and lowering one statement-to-CFG translation; nearly every action is one
//! block ending in `Return`, which is the straight-line form the fast path's action programs
//! and the PISCES passes want (see [`Body::straight_line`]). Actions may not apply tables.
//!
//! `Return` ends the body (of the action, or of the whole control: sub-control calls are
//! inlined, so a `return` in an inlined control is a `Goto` to its continuation); `Exit` ends
//! the current architecture block (`exit` in P4), from an action too.

use crate::entity::Arena;
use crate::expr::Expr;
use crate::ids::{ActionId, BlockId, TableId};
use crate::stmt::Stmt;
use crate::types::{Annotation, Preamble, Ty};
use crate::value::Bits;

/// Successors of a table application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyNext {
    /// `t.apply();`
    Always(BlockId),
    /// `if (t.apply().hit) ... else ...` (and `.miss`).
    HitMiss { hit: BlockId, miss: BlockId },
    /// `switch (t.apply().action_run) { a: ... default: ... }`; actions without a case go to
    /// `default`.
    Actions {
        cases: Vec<(ActionId, BlockId)>,
        default: BlockId,
    },
}

/// How a basic block ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Terminator {
    Goto(BlockId),
    /// Branch on a bool.
    Branch {
        cond: Expr,
        then: BlockId,
        otherwise: BlockId,
    },
    /// Multi-way branch on a bits value (constant cases of its width, first match).
    Switch {
        value: Expr,
        cases: Vec<(Bits, BlockId)>,
        default: BlockId,
    },
    /// Look up the table, run the chosen action, continue at a successor.
    Apply {
        table: TableId,
        next: ApplyNext,
    },
    /// End of the body.
    Return,
    /// End of the current architecture block (P4 `exit`).
    Exit,
}

impl Terminator {
    /// The blocks control may go to next.
    pub fn successors(&self) -> Vec<BlockId> {
        match self {
            Terminator::Goto(b) => vec![*b],
            Terminator::Branch {
                then, otherwise, ..
            } => vec![*then, *otherwise],
            Terminator::Switch { cases, default, .. } => {
                cases.iter().map(|c| c.1).chain([*default]).collect()
            }
            Terminator::Apply { next, .. } => match next {
                ApplyNext::Always(b) => vec![*b],
                ApplyNext::HitMiss { hit, miss } => vec![*hit, *miss],
                ApplyNext::Actions { cases, default } => {
                    cases.iter().map(|c| c.1).chain([*default]).collect()
                }
            },
            Terminator::Return | Terminator::Exit => vec![],
        }
    }
}

/// A basic block: straight-line statements, then a terminator (`None` only while being
/// built; the verifier rejects it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub term: Option<Terminator>,
}

/// A control-flow graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    pub blocks: Arena<BlockId, Block>,
    pub entry: BlockId,
}

impl Default for Body {
    fn default() -> Body {
        Body::new()
    }
}

impl Body {
    /// A body with one empty, unterminated entry block.
    pub fn new() -> Body {
        let mut blocks = Arena::new();
        let entry = blocks.push(Block::default());
        Body { blocks, entry }
    }

    /// A body of one block: `stmts` then `Return`.
    pub fn from_stmts(stmts: Vec<Stmt>) -> Body {
        let mut body = Body::new();
        let entry = body.entry;
        body.blocks[entry] = Block {
            stmts,
            term: Some(Terminator::Return),
        };
        body
    }

    /// Adds an empty, unterminated block.
    pub fn add_block(&mut self) -> BlockId {
        self.blocks.push(Block::default())
    }

    /// Appends a statement to `block` (ignored if the block does not exist).
    pub fn push(&mut self, block: BlockId, stmt: Stmt) {
        if let Some(b) = self.blocks.get_mut(block) {
            b.stmts.push(stmt);
        }
    }

    /// Sets the terminator of `block` (ignored if the block does not exist).
    pub fn terminate(&mut self, block: BlockId, term: Terminator) {
        if let Some(b) = self.blocks.get_mut(block) {
            b.term = Some(term);
        }
    }

    /// The statements, if the body is one block ending in `Return`.
    pub fn straight_line(&self) -> Option<&[Stmt]> {
        let entry = self.blocks.get(self.entry)?;
        (self.blocks.len() == 1 && entry.term == Some(Terminator::Return))
            .then_some(&entry.stmts[..])
    }
}

/// A control block (after inlining: one per architecture slot, sub-controls included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Control {
    pub preamble: Preamble,
    pub body: Body,
}

/// A directionless action parameter: data the control plane supplies with a table entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionParam {
    pub name: String,
    pub ty: Ty,
    /// The source type was `int<W>` (printing and P4Info only).
    pub signed: bool,
    /// The parameter's named type for P4Info's `type_name` (a `type` with
    /// `@p4runtime_translation`, or a serializable enum).
    pub type_name: Option<String>,
    /// The `@id` annotation's value.
    pub id: Option<u32>,
    pub annotations: Vec<Annotation>,
}

impl ActionParam {
    /// A `bit<width>` parameter.
    pub fn bits(name: &str, width: u32) -> ActionParam {
        ActionParam {
            name: name.to_string(),
            ty: Ty::Bits(width),
            signed: false,
            type_name: None,
            id: None,
            annotations: Vec::new(),
        }
    }
}

/// An action. Directional parameters were bound by lowering (to the slots passed, with
/// explicit copies): only control-plane parameters remain, read with [`Expr::Param`].
///
/// An action whose directional parameters are bound differently in several places (`a(hdr.x)`
/// in one table's action list, `a(hdr.y)` in another's) is one IR action per binding, each
/// with a name of its own (`preamble.name`, unique) and all with the control-plane name of
/// the source action ([`Action::control_plane_name`]): the control plane sees one action, and
/// a table's use of that name means the table's own specialisation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    pub preamble: Preamble,
    pub params: Vec<ActionParam>,
    pub body: Body,
    /// The control-plane name when it differs from `preamble.name` (a specialisation).
    pub cp_name: Option<String>,
}

impl Action {
    /// An action of one block.
    pub fn new(name: &str, params: Vec<ActionParam>, stmts: Vec<Stmt>) -> Action {
        Action {
            preamble: Preamble::new(name),
            params,
            body: Body::from_stmts(stmts),
            cp_name: None,
        }
    }

    /// The name the control plane knows the action by (P4Info's, the CLI's): shared by the
    /// specialisations of one source action.
    pub fn control_plane_name(&self) -> &str {
        self.cp_name.as_deref().unwrap_or(&self.preamble.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::EntityId;

    #[test]
    fn bodies_are_built_block_by_block() {
        let mut body = Body::new();
        let (a, b) = (body.add_block(), body.add_block());
        body.terminate(
            body.entry,
            Terminator::Apply {
                table: TableId::new(0),
                next: ApplyNext::HitMiss { hit: a, miss: b },
            },
        );
        body.terminate(a, Terminator::Goto(b));
        body.terminate(b, Terminator::Return);
        body.push(
            BlockId::new(9),
            Stmt::Builtin(crate::stmt::Builtin::MarkToDrop),
        );
        assert_eq!(
            body.blocks[body.entry].term.as_ref().unwrap().successors(),
            [a, b]
        );
        assert_eq!(body.straight_line(), None);
        assert_eq!(Body::from_stmts(vec![]).straight_line(), Some(&[][..]));
    }
}
