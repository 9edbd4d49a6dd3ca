//! Where lowered statements go: a control or action body ([`BodyBuilder`], basic blocks) or a
//! parser (states). Both offer the same cursor operations (push, new position, jump, branch),
//! so statement lowering is shared; in a parser a branch is a `select` on the condition, as
//! p4c's `ParserRewriter` splits `if` statements into states.

use crate::ctx::{Lowerer, R, internal};
use koi_ir::{
    BlockId, BodyBuilder, Expr, Keyset, Parser, Pattern, SelectCase, StateId, Stmt, Target,
    Terminator, Transition,
};
use koi_syntax::Span;

/// A position code can continue at: a block or a parser state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pos {
    Block(BlockId),
    State(StateId),
}

/// A parser being built: the parser and the state statements go to.
#[derive(Debug)]
pub struct ParserBuilder {
    pub parser: Parser,
    pub current: StateId,
}

/// The code being built.
#[derive(Debug, Default)]
pub enum Sink {
    #[default]
    None,
    Body(BodyBuilder),
    Parser(ParserBuilder),
}

impl ParserBuilder {
    fn is_terminated(&self) -> bool {
        self.parser
            .states
            .get(self.current)
            .is_none_or(|s| s.transition.is_some())
    }

    fn add_state(&mut self, name: &str) -> StateId {
        self.parser.add_state(name)
    }

    fn transition(&mut self, t: Transition) {
        if !self.is_terminated() {
            self.parser.set_transition(self.current, t);
        }
    }
}

impl Lowerer<'_> {
    /// Appends a statement at the cursor.
    pub fn emit(&mut self, s: Stmt) {
        match &mut self.sink {
            Sink::Body(b) => b.push(s),
            Sink::Parser(pb) => {
                if pb.is_terminated() {
                    let name = format!("$dead{}", self.state_seq);
                    self.state_seq += 1;
                    pb.current = pb.add_state(&name);
                }
                pb.parser.push(pb.current, s);
            }
            Sink::None => {}
        }
    }

    /// A new, empty position (the cursor does not move).
    pub fn new_pos(&mut self, hint: &str) -> Pos {
        match &mut self.sink {
            Sink::Body(b) => Pos::Block(b.new_block()),
            Sink::Parser(pb) => {
                let name = format!("{hint}${}", self.state_seq);
                self.state_seq += 1;
                Pos::State(pb.add_state(&name))
            }
            Sink::None => Pos::Block(BlockId::from_index(0)),
        }
    }

    /// Moves the cursor to `pos`.
    pub fn switch_to(&mut self, pos: Pos) {
        match (&mut self.sink, pos) {
            (Sink::Body(b), Pos::Block(id)) => b.switch_to(id),
            (Sink::Parser(pb), Pos::State(id)) => pb.current = id,
            _ => {}
        }
    }

    /// Ends the current position with a jump to `pos`.
    pub fn jump(&mut self, pos: Pos) {
        match (&mut self.sink, pos) {
            (Sink::Body(b), Pos::Block(id)) => b.terminate(Terminator::Goto(id)),
            (Sink::Parser(pb), Pos::State(id)) => {
                pb.transition(Transition::Goto(Target::State(id)))
            }
            _ => {}
        }
    }

    /// Ends the current position with a two-way branch on `cond` to two new positions.
    pub fn branch(&mut self, cond: Expr) -> (Pos, Pos) {
        let (then, otherwise) = (self.new_pos("then"), self.new_pos("else"));
        self.branch_to(cond, then, otherwise);
        (then, otherwise)
    }

    /// Ends the current position with a branch on `cond`.
    pub fn branch_to(&mut self, cond: Expr, then: Pos, otherwise: Pos) {
        match (&mut self.sink, then, otherwise) {
            (Sink::Body(b), Pos::Block(t), Pos::Block(o)) => b.terminate(Terminator::Branch {
                cond,
                then: t,
                otherwise: o,
            }),
            (Sink::Parser(pb), Pos::State(t), Pos::State(o)) => {
                let cases = vec![
                    SelectCase {
                        keysets: vec![Keyset::Pattern(Pattern::Exact(koi_ir::Bits::from_bool(
                            true,
                        )))],
                        next: Target::State(t),
                    },
                    SelectCase::default_to(1, Target::State(o)),
                ];
                pb.transition(Transition::Select {
                    keys: vec![cond],
                    cases,
                })
            }
            _ => {}
        }
    }

    /// Ends the current block with `term` (controls and actions only).
    pub fn terminate(&mut self, term: Terminator, span: Span) -> R<()> {
        match &mut self.sink {
            Sink::Body(b) => {
                b.terminate(term);
                Ok(())
            }
            _ => internal(span, "control-flow terminator outside a control"),
        }
    }

    /// The body builder, for table applications and switches.
    pub fn body(&mut self, span: Span) -> R<&mut BodyBuilder> {
        match &mut self.sink {
            Sink::Body(b) => Ok(b),
            _ => crate::ctx::unsupported(span, "this statement in a parser"),
        }
    }

    pub fn in_parser(&self) -> bool {
        matches!(self.sink, Sink::Parser(_))
    }
}

/// Block ids from indices (only for the `Sink::None` placeholder).
trait FromIndex {
    fn from_index(i: u32) -> Self;
}

impl FromIndex for BlockId {
    fn from_index(i: u32) -> BlockId {
        <BlockId as koi_ir::entity::EntityId>::new(i)
    }
}
