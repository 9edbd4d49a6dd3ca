//! Observation hooks: what the interpreter tells an [`Observer`] while it runs.
//!
//! Two consumers shape the trait: `koi trace` (parser states, tables with their keys and the
//! entry hit, actions with arguments, extern calls, traffic manager decisions, outputs; see
//! [`crate::trace::TraceObserver`]) and the cached datapath's wildcard tracking, which needs
//! every PHV bit that influenced a decision ([`Observer::influence`]: parser `select` keys,
//! branch and switch conditions, table keys with the bits the lookup depended on, header
//! validity read by `emit`, run-time stack indices, `verify` conditions) and the packet
//! length checks the parser made ([`Observer::packet_length_check`]).
//!
//! The cached datapath's slow path also **records** the outcome of every control-flow
//! decision ([`Step`]: a branch or switch taken, a `select` case, a table's entry and action)
//! through [`Observer::decided`], and a megaflow hit **replays** them: the interpreter asks
//! [`Observer::replay`] before each decision and, when offered a step that fits, takes it
//! without evaluating the condition or looking the table up; every other statement executes
//! as usual (so replay cannot diverge from the interpreter's semantics). A step that does not
//! fit is reported with [`Observer::replay_diverged`] and the decision is evaluated.
//!
//! Every method has an empty default and the interpreter is generic over the observer, so
//! with [`NoObserver`] the hooks compile to nothing; the costly work behind
//! `influence` (walking an expression's reads) and table masks is guarded by the associated
//! constants, which are `false` by default.

use crate::options::Output;
use koi_ir::{ActionCall, ActionId, Bits, BlockId, Role, SlotId, StateId, TableId, Target};

/// What kind of decision a PHV read influenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    Select,
    Branch,
    Switch,
    TableKey,
    /// The hash of an action selector's `selector` fields.
    Selector,
    Verify,
    /// A header's validity read by `emit` (whether it is emitted).
    Emit,
    /// A run-time header stack index.
    StackIndex,
    /// The size given to a varbit `extract`, an `advance`.
    ParserOperand,
}

/// A table application.
#[derive(Clone, Copy, Debug)]
pub struct TableEvent<'a> {
    pub table: TableId,
    pub name: &'a str,
    /// The match field values (selector fields excluded).
    pub keys: &'a [Bits],
    /// The handle of the entry hit, `None` on a miss.
    pub hit: Option<u32>,
    /// The action that runs (the default action's on a miss).
    pub action: ActionId,
    pub action_name: &'a str,
    pub args: &'a [Bits],
    /// Per match field, the key bits the result depended on (empty unless
    /// [`Observer::WANTS_MASKS`]).
    pub masks: &'a [Bits],
}

/// A call of an extern instance method or extern function.
#[derive(Clone, Copy, Debug)]
pub struct ExternEvent<'a> {
    /// The instance's control-plane name, or the function's name.
    pub name: &'a str,
    pub method: &'a str,
    /// The input values.
    pub inputs: &'a [Bits],
    /// The value written back, if any.
    pub result: Option<&'a Bits>,
}

/// What the traffic manager did with a packet instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TmEvent {
    Unicast { port: u64 },
    Multicast { group: u64, copies: usize },
    Clone { session: u64, copies: usize },
    Resubmit,
    Recirculate,
    Drop(crate::options::DropReason),
    Digest { name: String },
}

/// Why a packet instance exists (BMv2's instance types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstanceEvent {
    /// v1model `instance_type` (0 for uBPF).
    pub instance_type: u32,
    pub egress_port: Option<u64>,
    pub rid: Option<u64>,
    /// PSA: the `PSA_PacketPath_t` member (then `instance_type` is its code and `rid` the
    /// egress `instance`).
    pub packet_path: Option<&'static str>,
}

/// The outcome of one control-flow decision, as recorded by the slow path and replayed on a
/// megaflow hit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A `Branch` or `Switch` terminator of block `from` went to block `to`.
    Jump { from: BlockId, to: BlockId },
    /// Parser state `state`'s `select` went to `to` (`None`: no case matched).
    Select { state: StateId, to: Option<Target> },
    /// Table `table` was applied: the entry hit (its index in the table, for direct counters
    /// and meters; `None` on a miss) and the action call that ran.
    Table {
        table: TableId,
        hit: Option<u32>,
        call: Option<ActionCall>,
    },
}

/// What [`Observer::replay`] answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Evaluate the decision.
    Evaluate,
    /// Take this recorded outcome (if it fits the decision; otherwise
    /// [`Observer::replay_diverged`] is called and the decision is evaluated).
    Use(Step),
}

/// Receives the interpreter's events. Every method does nothing by default.
pub trait Observer {
    /// Whether [`Observer::influence`] should be called (walking reads costs time).
    const TRACKS_READS: bool = false;
    /// Whether table lookups should compute the key bits they depended on.
    const WANTS_MASKS: bool = false;

    /// Whether [`Observer::decided`] and [`Observer::replay`] should be called.
    const REPLAYS: bool = false;
    /// Whether [`Observer::stmt`], [`Observer::arch_write`] and [`Observer::action_end`]
    /// should be called (the cached datapath's action-program compiler follows the run's
    /// effects with them).
    const TRACES_EFFECTS: bool = false;

    fn packet_in(&mut self, _port: u64, _data: &[u8]) {}
    /// A parser pass of the packet ended (before `parser_error` is set): its PHV, in the
    /// interpreter's byte layout. Called for the first parse and for resubmitted and
    /// recirculated passes, not for the parse of an ingress clone.
    fn parsed(&mut self, _phv: &[u8]) {}
    /// A decision's outcome (only if [`Observer::REPLAYS`]).
    fn decided(&mut self, _step: &Step) {}
    /// The outcome to use for the next decision (only if [`Observer::REPLAYS`]).
    fn replay(&mut self) -> Replay {
        Replay::Evaluate
    }
    /// The step [`Observer::replay`] offered does not fit the decision at hand.
    fn replay_diverged(&mut self) {}
    /// A pass through ingress or egress starts.
    fn instance(&mut self, _role: Role, _ev: &InstanceEvent) {}
    /// An architecture block starts.
    fn block(&mut self, _role: Role, _name: &str) {}
    fn parser_state(&mut self, _name: &str) {}
    fn extract(&mut self, _header: &str, _bits: u64) {}
    /// A `select` evaluated `keys` and took case `case` (`None`: no case matched).
    fn select(&mut self, _keys: &[Bits], _case: Option<usize>, _next: &str) {}
    /// The parser ended, with the error's name if it failed.
    fn parser_end(&mut self, _error: Option<&str>) {}
    fn table(&mut self, _ev: &TableEvent<'_>) {}
    fn action(&mut self, _name: &str, _args: &[Bits]) {}
    fn extern_call(&mut self, _ev: &ExternEvent<'_>) {}
    /// The user's extern function `name` (C code) ran; `pure` if it is declared `@pure` (its
    /// effects are its `out` parameters and result, functions of its arguments). The cached
    /// datapath does not cache a run that called an impure one.
    fn native_call(&mut self, _name: &str, _pure: bool) {}
    /// Bits `mask` of slot `slot` (a mask of the slot's width) influenced a decision.
    fn influence(&mut self, _d: Decision, _slot: SlotId, _mask: &Bits) {}
    /// The run needed `needed_bits` bits of packet from its start; `ok` if it had them (a
    /// failed check other than a parser's `PacketTooShort`: the parser's state budget, which
    /// grows with the packet).
    fn packet_length_check(&mut self, _needed_bits: u64, _ok: bool) {}
    /// The parser needed `needed_bits` bits of packet from its start and the packet was
    /// shorter: it stops with `PacketTooShort` (what follows holds for every packet of the
    /// same parse that is as short).
    fn packet_too_short(&mut self, _needed_bits: u64) {}
    fn tm(&mut self, _ev: &TmEvent) {}
    fn log(&mut self, _msg: &str) {}
    /// A statement is about to run, with the enclosing action's arguments (only if
    /// [`Observer::TRACES_EFFECTS`]). Decisions are reported by `decided`, not here.
    fn stmt(&mut self, _s: &koi_ir::Stmt, _params: &[Bits]) {}
    /// A `Branch` or `Switch` terminator evaluated its condition and goes to block `to`,
    /// with the enclosing action's arguments (only if [`Observer::TRACES_EFFECTS`]; called
    /// just before `decided` reports the same step).
    fn jumped(&mut self, _t: &koi_ir::Terminator, _to: BlockId, _params: &[Bits]) {}
    /// The architecture wrote `value` (resized to the slot) into `slot` outside any statement:
    /// intrinsic metadata set by the traffic manager (only if [`Observer::TRACES_EFFECTS`]).
    fn arch_write(&mut self, _slot: SlotId, _value: &Bits) {}
    /// The body of the action most recently reported by `action` returned (or exited).
    fn action_end(&mut self) {}
    fn packet_out(&mut self, _out: &Output) {}
    /// Deparser `role` (PSA's ingress or egress deparser, v1model's deparser) emitted `emitted_bits` bits of
    /// headers, which the unparsed payload follows in the packet that goes on.
    fn deparsed(&mut self, _role: Role, _emitted_bits: u64) {}
    /// A clone of the packet is being made: until [`Observer::copy_end`], the events (the
    /// copy's parse, the architecture's writes, its enqueueing, the traffic manager's
    /// `Clone` event) concern the copy, not the packet it is made from.
    fn copy_begin(&mut self, _kind: CopyKind) {}
    /// The copy being made had its metadata zeroed but for the fields of field list `fl`,
    /// which it took from the packet it is made from.
    fn metadata_reset(&mut self, _fl: Option<koi_ir::FieldListId>) {}
    /// The copy announced by [`Observer::copy_begin`] is made.
    fn copy_end(&mut self) {}
    /// The instance the architecture wrote last (the packet itself, a multicast replica or a
    /// clone) was queued for an egress pass on `port`; egress passes run in queue order.
    fn enqueued(&mut self, _port: u64) {}
}

/// Which copy [`Observer::copy_begin`] announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyKind {
    /// An ingress-to-egress clone: the packet as it entered, parsed again.
    IngressClone,
    /// An egress-to-egress clone: the packet's headers as egress left them.
    EgressClone,
}

/// The observer that observes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}
