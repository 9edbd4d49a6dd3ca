//! The P4Runtime entity codec: between P4Runtime messages (package `p4.v1`) and koi's runtime
//! state ([`koi_state::State`]), for koi's P4Runtime server. Pure synchronous library code (no
//! gRPC, no threads, no I/O): the server calls it with the state lock held.
//!
//! ```text
//! P4Info + State ──Target::new──► Target (P4Info ids → koi-state objects, controller data)
//! Update ──apply──► State + Target changed, Effect (flow caches), Undo (rollback)
//! Entity ──read──► Entities
//! packet to the CPU port ──packet_in──► PacketIn      PacketOut ──packet_out──► bytes
//! DigestMessage ──digest_data──► (digest id, P4Data)   State ──idle_notifications──► entries
//! ```
//!
//! Every refusal is a [`P4Error`] with the status code the P4Runtime specification names for
//! the case and a message naming the object by its P4Info name; a refused update changes
//! nothing. What koi does not do is `UNIMPLEMENTED`: `ExternEntry`, per-colour meter counters,
//! group weights above 1, one-shot group actions and selection modes, backup replicas, clone
//! truncation and class of service, direct resources of default entries, varbit and header
//! union values. The module docs give each entity's rules.
//!
//! For the server: apply a batch's updates with one [`Undo`] and [`rollback`] it if the batch
//! must not stay (then invalidate every flow cache); join the [`Effect`]s of the updates that
//! stayed. Reads measure `time_since_last_hit` up to koi-state's `now_ns`
//! ([`koi_state::State::set_now_ns`]; the interpreter moves it with every packet). Call
//! [`idle_notifications`] every scan interval, and [`digest_data`] on each message of
//! [`koi_state::State::take_digests`], buffering them as [`digest_config`] says.
//!
//! Modules: [`error`], [`bytestring`] and [`translate`] (values), `schema` and [`target`] (the
//! program), `matches`, `action` and `entries` (table entry parts), [`mod@write`] and [`undo`]
//! (updates), `table_write`, `oneshot`, `profile`, `counters`, `meters`, `register`,
//! `p4data`, `replication`, `value_set`, `digest` (one entity each), [`mod@read`], `table_read`,
//! [`packet`], [`idle`].

pub mod bytestring;
pub mod error;
pub mod idle;
pub mod packet;
pub mod read;
pub mod target;
pub mod translate;
pub mod undo;
pub mod write;

mod action;
mod counters;
mod digest;
mod entries;
mod matches;
mod meters;
mod oneshot;
mod p4data;
mod profile;
mod register;
mod replication;
mod schema;
mod table_read;
mod table_write;
mod value_set;

pub use digest::{digest_config, digest_data};
pub use error::P4Error;
pub use idle::idle_notifications;
pub use packet::{packet_in, packet_out};
pub use read::read;
pub use replication::{CLONE_GROUP_BASE, MAX_MULTICAST_GROUP};
pub use target::Target;
pub use undo::{Undo, rollback};
pub use write::{Effect, apply};
