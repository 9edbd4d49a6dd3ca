//! koi's cached datapath: [`datapath`] (the packet path, caches, slow path, bounds),
//! [`fastparse`] (the parser specialised to the program), [`program`] (compiled action
//! programs), [`stages`](mod@stages), and, described here, the compile-time **flow-key analysis**
//! ([`flowkey`]): which bits of a packet's state any forwarding decision of the loaded program
//! may depend on, and how they are packed into the `u64` words the caches of `koi-cache` hash
//! and compare.
//!
//! # What the flow key is
//!
//! koi follows Open vSwitch: a packet's processing is summarised, after the slow path (the
//! reference interpreter) has run it once, as a **megaflow**: a (mask, masked key) pair over
//! the flow key, and the action program that the run performed. Every later packet whose key
//! agrees with the megaflow on the masked bits gets the same action program, without running
//! the pipeline. The flow key is therefore the set of *inputs* of the pipeline's *decisions*:
//!
//! - **decisions** ([`flowkey::DecisionKind`]): parser `select` keys, branch conditions and
//!   `switch` scrutinees of controls and actions, table keys of every match kind and the
//!   `selector` fields of action selectors, `verify` conditions, the validity of every
//!   header the deparser `emit`s (an invalid header is not emitted, so validity shapes the
//!   output), run-time stack indices and next indices, varbit sizes and `advance` amounts,
//!   `update_checksum` conditions, `assert`/`assume` conditions. Extern calls under a
//!   condition are covered by the condition's branch.
//! - **inputs**: the decisions' reads, closed backwards over data flow: a slot assigned from
//!   other slots makes them inputs too; an action parameter bound by a direct call makes the
//!   call's arguments inputs. The closure stops at **packet-derived** slots (header fields,
//!   validity bits, varbit lengths written by `extract`, stack next indices, `lookahead`
//!   destinations), at **architecture inputs** (v1model `ingress_port`, `packet_length`,
//!   `instance_type`, and metadata preserved by resubmit, recirculate and clone field lists;
//!   ubpf `input_port`, `packet_length`; XDP `imd.input_port`; PSA `ipin.ingress_port` and
//!   `ipin.packet_path`, set before the ingress parser), at **constants and table-supplied action
//!   parameters** (a table's action data is a function of its keys and of control-plane
//!   state, which the caches handle by invalidation), and at **state-derived** values
//!   (register reads, meter colours, random numbers, timestamps, queue state, and anything
//!   computed from or written under them).
//!
//! Outputs are not inputs: `egress_spec`, `mcast_grp`, clone and resubmit requests and drop
//! flags are what the action program *does*. They become inputs only where the program reads
//! them back; in v1model the traffic manager turns `egress_spec`, `mcast_grp` and clone
//! sessions into the egress pass's `egress_port` (and `mcast_grp` into `egress_rid`), so an
//! egress decision on `egress_port` makes them inputs, and through them whatever they were
//! computed from (usually action parameters: nothing to add to the key); PSA's egress
//! metadata comes from ingress's output metadata the same way, and what PSA's egress parser
//! extracts from the headers the ingress deparser may emit. `parser_error` is
//! what the parse's way and the packet's length make it, both of which a megaflow fixes (its
//! mask holds the parser's decisions, a runt's key where its parse stopped, and its program
//! runs only on packets as long as its run needed): a decision on it adds nothing. And
//! `verify_checksum` sets `checksum_error` from the fields it covers.
//!
//! Only packet-derived and architecture slots are **key fields**: metadata computed from
//! them is not in the key, its sources are ([`flowkey::FlowKeyLayout::mask_for`] maps an
//! influence on such a slot to its sources' key bits). Fields are narrowed to the bits read
//! where the read says so (`s[hi:lo]`, width casts), mirroring the interpreter's influence
//! masks. Fields are grouped by header in parse order, validity bit first, the architecture
//! inputs before all headers; a group starts a new word unless it fits the current one, which
//! lets [`stages::stages`] give the classifier one lookup stage per group of words (in key
//! order, or in the order `@koi_stage(N)` annotations on headers give).
//!
//! After the fields come the **hash keys** (`flowkey::hashkey`): a v1model `hash` of fields
//! that only the parser writes is computed from the key's fields into a word of its own,
//! so that a decision on its result (a consistent-hash ring, an ECMP bucket) masks the
//! result's bits rather than every bit hashed. They add words, never remove a field: the
//! hashed fields stay key fields.
//!
//! # Soundness
//!
//! Claim: if two packets P and Q agree on every key bit a megaflow mask covers, and that
//! mask includes, for every decision the slow-path run of P made, the key bits mapped from
//! the interpreter's influence reports, then the run of Q makes the same decisions and
//! performs the same action program, unless one of the decisions is state-dependent.
//!
//! Why: a decision's outcome is a function of the values it reads and of control-plane state
//! (tables, value sets, clone sessions, multicast groups: revalidated or invalidated by the
//! caches on change). Each value read is, by induction over the run, a function of the key
//! sources reachable backwards through the writes that produced it; the closure follows
//! *every* write of *every* slot on *every* path (flow-insensitive: a slot's value may come
//! from any of its writes, whatever ran before), so it over-approximates each run's actual
//! dependencies, and `mask_for` sets all key bits of all those sources. Values the closure
//! cannot trace to the packet or the architecture are either constants and table data (the
//! same for P and Q) or state-derived, which taints the decision: a decision is reported
//! **state-dependent** if it reads a state-derived value through data flow, or through
//! control flow (a write that runs under a state-dependent branch, an action chosen by a
//! table whose keys are state-dependent or by a random action selector, an action that may
//! `exit` under state, which makes the rest of its callers state-dependent). Control
//! dependence uses post-dominators per body, an over-approximation of the classic relation.
//! The cache must never summarise a state-dependent decision; the datapath runs it on
//! every packet (see `koi-cache` and BRIEF §4).
//!
//! What the key deliberately leaves to the slow path: whether the packet was long enough for
//! each `extract` and `lookahead` (the interpreter reports `packet_length_check`s; the
//! megaflow must record the length it needs), and the key snapshot point: the key is read
//! from the PHV when the parser accepts, so a packet-derived slot must not be overwritten by
//! another packet read after a decision read it (a header extracted twice, a reused
//! lookahead temporary); lowering allocates fresh slots, and stack extracts go to distinct
//! elements.
//!
//! # What the slow and fast paths do with it
//!
//! - The **fast path** ([`fastparse`]) follows the P4 parser over the packet bytes (through a
//!   parse-path template when one fits) and fills the key straight from the packet, then looks
//!   it up in the microflow cache and the megaflow classifier, configured with
//!   [`flowkey::FlowKeyLayout::key_words`] and [`stages::stages`]; a hit runs the megaflow's
//!   compiled action program ([`program`]).
//! - On a miss the **slow path** runs the interpreter with an observer whose `influence(d,
//!   slot, mask)` calls [`flowkey::FlowKeyLayout::mask_for`] into a mask buffer; any answer
//!   other than [`flowkey::Coverage::Covered`] means the run must not be cached as one
//!   megaflow, but for a state-dependent branch, `switch` or table key, which the compiled
//!   program checks per packet (a guard: see [`datapath`]). The mask and the masked key form the megaflow; the run, followed symbolically,
//!   becomes its action program ([`datapath`] has the whole sequence).

#![deny(unsafe_code)]

mod customcrc;
pub mod datapath;
pub mod fastparse;
pub mod flowkey;
mod memo;
pub mod native;
mod observe;
pub mod program;
pub mod stages;

pub use datapath::{
    BATCH, BatchDone, BatchSink, CacheInfo, CycleCounter, Datapath, DatapathConfig, DatapathStats,
    Deferral, Megaflow, PathTaken, Prefetch, SIGNATURE_ENTRIES, StageCycles, Summary, Tier,
};
pub use flowkey::{Coverage, Decision, DecisionKind, FlowKeyLayout, KeyField, KeyGroup, Source};
pub use stages::stages;
