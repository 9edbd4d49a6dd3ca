//! The IR verifier: checks every invariant the consumers rely on (listed in the crate doc) and
//! reports every violation found, not just the first, each with where it is.
//!
//! Run it after lowering and after every pass in debug builds. It never panics, whatever the
//! pipeline holds (ids out of range, missing terminators, ...). It is written as one
//! `Verifier` walking the pipeline, split by subject: `layout` (the PHV), `typing`
//! (expression types), `code` (statements, bodies, parsers), `objects` (tables, externs,
//! value sets, digests, names).

mod code;
mod layout;
mod objects;
mod typing;

pub use typing::{TypeEnv, type_of};

use crate::pipeline::{BlockRef, Pipeline};
use crate::types::Ty;
use std::fmt;

/// What is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// An id (of kind `what`) names no entity.
    IdOutOfRange { what: &'static str, id: u32 },
    /// Two types that must be equal are not (assignment sides, operands, arguments).
    TypeMismatch { expected: Ty, found: Ty },
    /// A bits value was required.
    ExpectedBits { found: Ty },
    /// A bool was required (conditions, `&&`, `!`).
    ExpectedBool { found: Ty },
    /// A constant, pattern or key of the wrong width.
    WidthMismatch { expected: u32, found: u32 },
    /// A slice `[hi:lo]` outside its operand of `width` bits, or with `hi < lo`.
    BadSlice { width: u32, hi: u32, lo: u32 },
    /// `Expr::Param` outside an action.
    ParamOutsideAction,
    /// An assignment to a slot only header operations may write.
    ReadOnlySlot { slot: String },
    /// A statement or terminator in a context that does not allow it.
    NotAllowedHere {
        what: &'static str,
        context: &'static str,
    },
    /// A block without terminator.
    Unterminated,
    /// A parser state without transition.
    NoTransition,
    /// A call with the wrong number of arguments, a select case with the wrong number of
    /// keysets, an entry with the wrong number of patterns.
    CountMismatch { expected: usize, found: usize },
    /// An extern method the instance's kind does not have.
    UnknownMethod { method: String },
    /// A slot outside the PHV layout.
    SlotOutsideLayout { end: u64, layout: u32 },
    /// Two slots sharing bits.
    SlotOverlap { other: String },
    /// A slot whose width is not its type's, or whose type does not suit its kind.
    SlotType { width: u32, ty: Ty },
    /// Header, stack or union groupings inconsistent with their slots.
    BadLayout(String),
    /// A table action, entry or apply case naming an action the table does not list, or used
    /// outside its scope.
    ActionNotAllowed { action: String },
    /// A pattern that does not suit the key's match kind.
    BadPattern { kind: String },
    /// An entry priority missing in a table that needs one, or present in one that does not.
    Priority { needed: bool },
    /// A reference to an extern of the wrong kind.
    WrongExternKind { expected: &'static str },
    /// Two objects of one kind with the same control-plane name.
    DuplicateName { name: String },
    /// Actions sharing a control-plane name that the control plane could not tell apart or
    /// treat as one (different parameters, or two of them in one table).
    SharedName { name: String, why: &'static str },
    /// A role of the architecture bound zero or several times, or to the wrong kind of block.
    Package(String),
    /// An action that calls itself, directly or not.
    RecursiveAction,
    /// An error code not in the pipeline's errors.
    UnknownError { code: u32 },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match self {
            IdOutOfRange { what, id } => write!(f, "{what} id {id} out of range"),
            TypeMismatch { expected, found } => write!(f, "expected {expected}, found {found}"),
            ExpectedBits { found } => write!(f, "expected a bit<W> value, found {found}"),
            ExpectedBool { found } => write!(f, "expected bool, found {found}"),
            WidthMismatch { expected, found } => {
                write!(f, "expected width {expected}, found {found}")
            }
            BadSlice { width, hi, lo } => write!(f, "slice [{hi}:{lo}] of a {width}-bit value"),
            ParamOutsideAction => f.write_str("action parameter outside an action"),
            ReadOnlySlot { slot } => write!(f, "{slot} may only be written by header operations"),
            NotAllowedHere { what, context } => write!(f, "{what} is not allowed in {context}"),
            Unterminated => f.write_str("block has no terminator"),
            NoTransition => f.write_str("state has no transition"),
            CountMismatch { expected, found } => {
                write!(f, "expected {expected} items, found {found}")
            }
            UnknownMethod { method } => write!(f, "extern has no method {method}"),
            SlotOutsideLayout { end, layout } => {
                write!(f, "slot ends at bit {end}, layout has {layout} bits")
            }
            SlotOverlap { other } => write!(f, "slot overlaps {other}"),
            SlotType { width, ty } => write!(f, "slot of width {width} has type {ty}"),
            BadLayout(why) => write!(f, "bad layout: {why}"),
            ActionNotAllowed { action } => write!(f, "action {action} not allowed here"),
            BadPattern { kind } => write!(f, "pattern not allowed for match kind {kind}"),
            Priority { needed: true } => f.write_str("entry needs a priority"),
            Priority { needed: false } => {
                f.write_str("entry has a priority its table does not use")
            }
            WrongExternKind { expected } => write!(f, "expected an extern of kind {expected}"),
            DuplicateName { name } => write!(f, "duplicate control-plane name {name}"),
            SharedName { name, why } => {
                write!(f, "actions named {name} for the control plane: {why}")
            }
            Package(why) => write!(f, "package: {why}"),
            RecursiveAction => f.write_str("action calls itself"),
            UnknownError { code } => write!(f, "error code {code} is not declared"),
        }
    }
}

/// One violated invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// Where: `control MyIngress bb1 stmt 0`, `table MyIngress.t entry 2`, `phv slot s4`.
    pub location: String,
    pub kind: ErrorKind,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.kind)
    }
}

impl std::error::Error for VerifyError {}

/// Checks every invariant of `p`; returns all violations found.
pub fn verify(p: &Pipeline) -> Result<(), Vec<VerifyError>> {
    let mut v = Verifier {
        p,
        errors: Vec::new(),
    };
    v.check_layout();
    v.check_package();
    v.check_parsers();
    v.check_controls();
    v.check_actions();
    v.check_tables();
    v.check_objects();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

/// The walk over one pipeline, collecting errors.
pub(crate) struct Verifier<'a> {
    pub p: &'a Pipeline,
    pub errors: Vec<VerifyError>,
}

impl Verifier<'_> {
    pub fn err(&mut self, location: impl Into<String>, kind: ErrorKind) {
        self.errors.push(VerifyError {
            location: location.into(),
            kind,
        });
    }

    /// Every role of the architecture bound exactly once, to an existing block of the right
    /// kind, and nothing else bound.
    fn check_package(&mut self) {
        let p = self.p;
        for role in p.arch.roles() {
            let n = p.package.iter().filter(|(r, _)| r == role).count();
            if n != 1 {
                let why = format!("role {} bound {n} times", role.name());
                self.err("package", ErrorKind::Package(why));
            }
        }
        for (role, block) in &p.package {
            if !p.arch.roles().contains(role) {
                let why = format!("{} has no role {}", p.arch.name(), role.name());
                self.err("package", ErrorKind::Package(why));
            }
            let exists = p.block_name(*block).is_some();
            let (what, id) = match block {
                BlockRef::Parser(id) => ("parser", id.to_string()),
                BlockRef::Control(id) => ("control", id.to_string()),
            };
            if !exists {
                let why = format!("{what} {id} does not exist");
                self.err("package", ErrorKind::Package(why));
            } else if role.is_parser() != matches!(block, BlockRef::Parser(_)) {
                let why = format!("role {} bound to {what} {id}", role.name());
                self.err("package", ErrorKind::Package(why));
            }
        }
    }
}
