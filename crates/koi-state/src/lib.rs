//! koi's runtime state of one pipeline image, and its control-plane API.
//!
//! A [`State`] is built from a verified [`koi_ir::Pipeline`] ([`State::new`]) and holds what
//! changes while the switch runs: table entries (with the program's `const entries`
//! installed, default actions, direct counters and meters, idle times), action profiles and
//! selectors, registers, counters, meters, parser value sets, the multicast engine (groups
//! and nodes), clone sessions, and the queue of digest messages.
//!
//! - The **control plane** uses it by P4 names ([`names`]: full names, and unqualified
//!   suffixes as simple_switch_CLI and STF files write them): [`api`] for tables,
//!   [`api_externs`] for externs, multicast and mirroring; [`cli::execute`] runs a parsed
//!   simple_switch_CLI command and returns what simple_switch_CLI would print. Every refused
//!   operation returns a [`StateError`] and changes nothing. [`restore`] adds what a
//!   P4Runtime server needs besides: entries found by match key, their cookies, and exact
//!   undos of its own operations (for rolling back a refused batch). [`carry`] carries a
//!   running program's state over to a new program's (pipeline swap), or says why not.
//! - The **data plane** uses it by ids ([`dataplane`]): lookups ([`State::lookup`]) with the
//!   key bits each result depended on (for megaflow masks), hits, meters by an injectable
//!   [`clock::Clock`], registers, counters, replication, clone sessions, digests.
//!
//! - **Forwarding threads** each use a replica of the state ([`replica`]): tables copied,
//!   counters counted apart and folded into the master's, registers and meters reached in
//!   the master under its lock for the rest of the packet.
//!
//! Conventions: a larger priority wins (P4Runtime's and STF's); simple_switch_CLI's smaller
//! priorities are converted at the CLI edge. Handles are BMv2's: the lowest free index,
//! entries with a version above bit 24. Semantics follow BMv2 simple_switch; the module docs
//! say where and why.

pub mod api;
pub mod api_externs;
pub mod arrays;
pub mod calc;
pub mod carry;
pub mod cli;
mod cli_externs;
pub mod cli_format;
pub mod clock;
pub mod dataplane;
pub mod error;
pub mod handles;
pub mod matcher;
pub mod meter;
pub mod names;
pub mod pre;
pub mod profile;
pub mod replica;
pub mod restore;
pub mod schema;
pub mod state;
pub mod table;
pub mod value_set;

pub use api::{ActionSpec, EntrySpec};
pub use arrays::{CounterValue, RegisterArray};
pub use carry::{CarryProblem, CarryReport, carry_over};
pub use clock::{Clock, ManualClock, SystemClock};
pub use dataplane::Lookup;
pub use error::StateError;
pub use meter::{Color, MeterRate};
pub use pre::{GroupImage, MirrorTarget, Replica};
pub use replica::Master;
pub use restore::EntryMut;
pub use state::{ExternState, State, fingerprint};
pub use table::{Cookie, Entry, EntryAction};
pub use value_set::DigestMessage;
