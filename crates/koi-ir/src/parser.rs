//! Parsers: graphs of states, and parser value sets.
//!
//! A state runs its statements (extract, lookahead, advance, verify, assignments, extern
//! calls; sub-parsers are inlined by lowering, `if` statements split into states joined by a
//! `select` on the condition, as p4c's `ParserRewriter` does) and then takes its
//! [`Transition`]. A `select` evaluates its keys once, then tries the cases in order; the first
//! case whose keysets all match wins; if none does, the parser rejects with `error.NoMatch`.
//! A runtime error in a statement (e.g. `PacketTooShort`) rejects with that error at once.

use crate::entity::Arena;
use crate::expr::Expr;
use crate::ids::{StateId, ValueSetId};
use crate::matching::{MatchField, Pattern};
use crate::stmt::Stmt;
use crate::types::Preamble;

/// Where a transition goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    State(StateId),
    Accept,
    Reject,
}

/// What one select key is matched against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keyset {
    Pattern(Pattern),
    /// A value set; it matches as many consecutive keys as it has fields.
    ValueSet(ValueSetId),
}

/// One case of a `select`: a keyset per key (a value set covering several), and the target.
/// A case whose keysets are all `Pattern::Any` is `default`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectCase {
    pub keysets: Vec<Keyset>,
    pub next: Target,
}

impl SelectCase {
    /// The `default` case for `keys` keys.
    pub fn default_to(keys: usize, next: Target) -> SelectCase {
        SelectCase {
            keysets: vec![Keyset::Pattern(Pattern::Any); keys],
            next,
        }
    }

    /// Whether this is a `default` case.
    pub fn is_default(&self) -> bool {
        self.keysets
            .iter()
            .all(|k| matches!(k, Keyset::Pattern(Pattern::Any)))
    }
}

/// How a state ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    Goto(Target),
    /// `select(keys) { cases }`; keys are bits or bools (a bool matches as `bit<1>`).
    Select {
        keys: Vec<Expr>,
        cases: Vec<SelectCase>,
    },
}

/// A parser state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub name: String,
    pub stmts: Vec<Stmt>,
    /// `None` only while being built; the verifier rejects it.
    pub transition: Option<Transition>,
}

/// A parser: states and the start state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parser {
    pub preamble: Preamble,
    pub states: Arena<StateId, State>,
    pub start: StateId,
}

impl Parser {
    /// A parser with an empty, unterminated `start` state.
    pub fn new(name: &str) -> Parser {
        let mut states = Arena::new();
        let start = states.push(State {
            name: "start".to_string(),
            stmts: Vec::new(),
            transition: None,
        });
        Parser {
            preamble: Preamble::new(name),
            states,
            start,
        }
    }

    /// Adds an empty, unterminated state.
    pub fn add_state(&mut self, name: &str) -> StateId {
        self.states.push(State {
            name: name.to_string(),
            stmts: Vec::new(),
            transition: None,
        })
    }

    /// Appends a statement to `state` (ignored if it does not exist).
    pub fn push(&mut self, state: StateId, stmt: Stmt) {
        if let Some(s) = self.states.get_mut(state) {
            s.stmts.push(stmt);
        }
    }

    /// Sets the transition of `state` (ignored if it does not exist).
    pub fn set_transition(&mut self, state: StateId, t: Transition) {
        if let Some(s) = self.states.get_mut(state) {
            s.transition = Some(t);
        }
    }

    /// The state named `name`.
    pub fn state_by_name(&self, name: &str) -> Option<StateId> {
        self.states
            .iter()
            .find(|(_, s)| s.name == name)
            .map(|(id, _)| id)
    }
}

/// A parser value set (`value_set<T>(size) name`): entries the control plane installs, used
/// as a select keyset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueSet {
    /// Control-plane name (`MyParser.pvs`).
    pub preamble: Preamble,
    pub size: u32,
    /// One per key component covered (the members of a struct `T`, or one for a bits `T`).
    pub fields: Vec<MatchField>,
}
