//! The compile-time flow-key analysis: from a [`koi_ir::Pipeline`] to a [`FlowKeyLayout`].
//!
//! [`FlowKeyLayout::new`] gathers the program's decisions and writes (`facts`), runs the
//! state and dependency fixed points (`closure`, with control dependence from `region`),
//! then lays the key out: one group per header in parse order (validity bit first, then the
//! fields the decisions need, in wire order), the architecture's inputs before them; a group
//! starts a new `u64` word unless it fits in the rest of the current one, so that lookup
//! stages (see [`crate::stages::stages`]) can follow header boundaries. The crate-level docs explain
//! what the key holds and why that is sound.

mod closure;
mod facts;
pub(crate) use facts::{bodies, for_each_stmt};
mod hashkey;
pub use hashkey::{HashBuf, HashKey};
mod layout;
mod reads;
mod region;
mod stmts;
pub(crate) use stmts::writes_state;

pub(crate) use layout::write_stop;
pub use layout::{Coverage, FlowKeyLayout, KeyField, KeyGroup, Source};

/// What a decision is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecisionKind {
    /// A parser `select`'s keys.
    Select,
    /// A branch condition of a control or action.
    Branch,
    /// A `switch` scrutinee.
    Switch,
    /// A table's match keys (exact, ternary, LPM, range, optional, others).
    TableKey,
    /// The `selector` fields an action selector hashes to choose a member.
    Selector,
    /// A parser `verify` condition.
    Verify,
    /// A header's validity read by the deparser's `emit` (an invalid header is not emitted).
    Emit,
    /// A run-time stack index or a stack's next index choosing the header a statement uses.
    StackIndex,
    /// The size of a varbit `extract` or of an `advance` (where the parser reads next).
    ParserOperand,
    /// The condition of `update_checksum` (whether the checksum field is rewritten).
    Checksum,
    /// An `assert` or `assume` condition.
    Assert,
    /// What the traffic manager reads (v1model: egress port, multicast group, priority).
    /// The slow path matches its packet inputs only when a compiled program needs them
    /// fixed (a port taken from the packet), as Open vSwitch un-wildcards a field an output
    /// action takes its port from.
    TrafficManager,
}

impl DecisionKind {
    pub fn name(self) -> &'static str {
        match self {
            DecisionKind::Select => "select",
            DecisionKind::Branch => "branch",
            DecisionKind::Switch => "switch",
            DecisionKind::TableKey => "table key",
            DecisionKind::Selector => "selector",
            DecisionKind::Verify => "verify",
            DecisionKind::Emit => "emit",
            DecisionKind::StackIndex => "stack index",
            DecisionKind::ParserOperand => "parser operand",
            DecisionKind::Checksum => "checksum condition",
            DecisionKind::Assert => "assert",
            DecisionKind::TrafficManager => "traffic manager",
        }
    }
}

/// One decision of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub kind: DecisionKind,
    /// Where it is: `ingress MyIngress bb3: branch`, `parser P, state start: select`, ...
    pub location: String,
    /// The slots its expressions read directly (before the dependency closure).
    pub reads: Vec<koi_ir::SlotId>,
    /// It may depend on extern state (registers, meters, random numbers, time, queue state),
    /// directly or through data or control flow: the cache must never summarise it; the
    /// datapath runs it on every packet.
    pub state_dependent: bool,
}
