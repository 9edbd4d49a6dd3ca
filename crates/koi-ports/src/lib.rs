//! koi's packet I/O: every way a packet enters or leaves the switch, behind one [`Port`] trait.
//!
//! A port hands the datapath up to [`BATCH_SIZE`] received packets at a time
//! ([`Port::recv_batch`] fills a reusable [`Batch`], so the hot path allocates nothing), sends
//! packets one by one ([`Port::send`], then [`Port::flush`] at the end of a batch), counts what it
//! did in [`Stats`] (drops by reason: too big, link down, errors), and tells a poll thread how to
//! wait for it ([`Port::readiness`]: a file descriptor for `poll(2)`, "always ready" for files).
//!
//! Mechanisms:
//! - [`afpacket`]: Linux `AF_PACKET` sockets with a `TPACKET_V3` memory-mapped receive ring
//!   (one `poll` per block of packets, no per-packet system call) bound to an interface.
//! - [`pcap`]: packets read from a pcap file and sent packets written to another (offline runs).
//! - [`tap`]: a layer-2 TAP device created by koi.
//! - [`xdp`]: Linux `AF_XDP` sockets in copy mode on one queue of an interface, fed by a
//!   hand-assembled XDP redirect program attached in generic (SKB) mode (works on veth; no BPF
//!   compiler needed): UMEM frames and four shared rings, no system call per received batch.
//!
//! [`spec`] parses the port specifications of `koi run --port N=SPEC` and opens the right kind.
//! [`netns`] runs code inside a named network namespace (tests, and later `--netns`).
//!
//! `unsafe` code is confined to `sys`-level wrappers (system calls, the ring mapping, `setns`)
//! and, for AF_XDP, to `xdp::sys` (the `bpf(2)` commands, the UMEM, the four rings and the
//! ownership of UMEM frames); every block carries a `SAFETY:` comment and the public API is
//! safe.

pub mod afpacket;
pub mod batch;
pub mod netns;
pub mod pcap;
pub mod poll;
mod retry;
pub mod spec;
pub mod spread;
pub mod stats;
mod sys;
pub mod tap;
pub mod xdp;

pub use batch::Batch;
pub use poll::{Poller, Wake};
pub use spec::{PortSpec, open, open_spread};
pub use spread::{Wakeup, flow_hash};
pub use stats::Stats;
pub use sys::{prefetch, tsc};

use std::os::fd::RawFd;

/// The most packets one [`Port::recv_batch`] returns.
pub const BATCH_SIZE: usize = 32;

/// The default largest frame (Ethernet header included) a port receives or sends: jumbo frames
/// of 9000 bytes of MTU fit. Larger frames are counted as `too_big` drops.
pub const DEFAULT_SNAPLEN: usize = 9216;

/// How a poll thread waits for a port to have packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Wait for this descriptor to be readable with `poll(2)`.
    Fd(RawFd),
    /// Packets may be read at any time without waiting (a file that is not finished).
    Always,
    /// Nothing to wait for now (end of file, or a link that is being retried): call
    /// [`Port::recv_batch`] now and then so that the port can retry.
    Idle,
}

/// Errors of opening or using a port. Drops are counted in [`Stats`] as well.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("{0}: frame of {1} bytes exceeds the limit of {2}")]
    TooBig(String, usize, usize),
    #[error("{0}: link is down")]
    LinkDown(String),
    #[error("{0}: {1}")]
    Pcap(String, String),
    #[error("bad port specification `{0}`: {1}")]
    Spec(String, String),
}

pub type Result<T> = std::result::Result<T, PortError>;

/// A source and sink of Ethernet frames.
pub trait Port: Send {
    /// The port's name (an interface name, `xdp:NAME[@QUEUE]`, `pcap:in,out`, `tap:NAME`).
    fn name(&self) -> &str;

    /// Clears `out` and fills it with up to [`BATCH_SIZE`] received packets (fewer if the batch
    /// has fewer buffers). Returns how many. Never blocks.
    fn recv_batch(&mut self, out: &mut Batch) -> Result<usize>;

    /// Sends one frame (possibly buffered until [`Port::flush`]). A frame that cannot be sent
    /// is counted as a drop in [`Stats`] and reported as an error; the port stays usable.
    fn send(&mut self, pkt: &[u8]) -> Result<()>;

    /// Pushes out anything [`Port::send`] buffered.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    /// The counters so far.
    fn stats(&self) -> Stats;

    /// How to wait for this port.
    fn readiness(&self) -> Readiness;

    /// Called when `poll(2)` reported an error condition on the descriptor (link down, interface
    /// gone): the port finds out what happened, logs it, and arranges to recover.
    fn handle_error(&mut self) {}
}
