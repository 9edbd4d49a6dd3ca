//! koi's switch runtime: what `koi run` is once its arguments are parsed.
//!
//! ```text
//!   Program (program.rs)  compiled P4: IR + P4Info + device config
//!      │ Pipeline::load
//!      ▼
//!   Pipeline (pipeline.rs)  a named slot: device id, CPU port, controller events,
//!      │                    the current Image (swapped whole on load)
//!      ▼
//!   Image (image.rs)  a program with its State (one lock), invalidation log, cache board
//!      ▲
//!   poll threads (poll.rs)  per thread and pipeline an engine over the current image:
//!                           cached datapath or interpreter; ports' batches in, outputs out
//!   Switch (switch.rs)  ports + pipelines + threads; the control API
//! ```
//!
//! **One control API.** Every client goes through the same calls: [`Switch::command`] (the
//! simple_switch_CLI-style command language of `koi ctl`, [`command`]), [`Pipeline::swap`]
//! (replace the program while forwarding, its state carried over or fresh: [`swap`]),
//! [`Pipeline::load`] (a fresh state, with an initialiser), [`Pipeline::update`] /
//! [`Image::update`] / [`Image::read`] (any change
//! or read of the runtime state, under the state lock, with the changes reported for the
//! caches), [`Switch::packet_out`] and [`Pipeline::set_events`] (a controller's packets and
//! digests). The control socket ([`ctl_socket`]), the metrics endpoint ([`metrics`]) and the
//! P4Runtime server (crate `koi-p4runtime`) are transports over it.
//!
//! **Invariants.**
//! - A control-plane change returned by [`Image::update`] is seen by every poll thread before
//!   its next packet: the thread catches up with the image's invalidation log under the state
//!   lock before each batch ([`cache`]).
//! - A packet is processed wholly by one image: threads move to a newly loaded image between
//!   two batches ([`poll`]); the old image is freed when no thread uses it.
//! - Nothing lands on a state after it was carried over: the swap retires the old image under
//!   its state lock, and whoever takes that lock afterwards goes to the new image.
//! - The state lock is never held while a port lock is taken: outputs are copied out first.

pub mod cache;
pub mod command;
pub mod ctl_socket;
pub mod image;
pub mod metrics;
pub mod pipeline;
pub mod pof;
mod poll;
pub mod ports;
pub mod program;
pub mod swap;
pub mod switch;
pub mod upcall;

pub use image::{Changes, Image};
pub use pipeline::{Events, Pipeline, PipelineConfig};
pub use program::{Flags, Program};
pub use swap::SwapReport;
pub use switch::{PipelineSetup, PortSlot, StateInit, Switch, SwitchConfig};

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data of a poisoned mutex as it is (a panic elsewhere must not stop
/// forwarding).
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
