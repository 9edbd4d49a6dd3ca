//! koi's reference interpreter: what a P4 program does, by definition.
//!
//! It executes a verified [`koi_ir::Pipeline`] against a [`koi_state::State`]: v1model with
//! BMv2 simple_switch's semantics and its complete traffic manager ([`v1model`]), PSA with
//! BMv2 psa_switch's and its packet replication engine ([`psa`], externs in
//! [`psa_externs`]), uBPF with p4c's uBPF back end's ([`ubpf`]), eBPF's `ebpfFilter` and
//! `xdp` with p4c's eBPF back end's ([`ebpf`]). One engine runs parsers ([`parse`]), controls
//! and actions ([`control`]), statements ([`exec`]), externs ([`externs`]) over a byte PHV
//! ([`phv`]) with values of any width ([`eval`]); the architecture is a binding chosen by
//! `pipeline.arch`.
//!
//! - [`process`] runs one packet with default options and no observer.
//! - [`Interpreter`] keeps options and a seeded random generator across packets, and runs
//!   with any [`Observer`] ([`observer`]): [`TraceObserver`] renders `koi trace`; the cached
//!   datapath's slow path tracks the PHV bits decisions read ([`Decision`]) and records the
//!   decisions' outcomes ([`Step`]), which a megaflow hit replays ([`Replay`]).
//!
//! Nothing here panics on any input: malformed packets end as parser errors, limits end as
//! reported drops or an aborted run ([`Report`]).
//!
//! # Semantic decisions (sources in `shared/reference/`, BMv2 and p4c sources)
//!
//! - **v1model** follows simple_switch (`simple_switch.cpp`, `primitives.cpp`, STF.md §6):
//!   fresh zeroed metadata per packet; default egress port 0; drop port 511;
//!   `mark_to_drop` sets `egress_spec` to 511 and `mcast_grp` to 0; end of ingress in the
//!   order I2E clone, digest, resubmit, multicast, drop or unicast; end of egress E2E clone,
//!   drop, ComputeChecksum and deparser, recirculate or send. Instance types 0, 1, 2, 4, 5,
//!   6 as BMv2 sets them (a resubmitted or recirculated packet that is then unicast enters
//!   egress as 0). Clones, resubmissions and recirculations reset all metadata and keep
//!   only the field list; multicast copies keep the whole PHV. Queueing metadata and egress
//!   timestamps read 0 in ingress; timestamps are microseconds of the injected clock.
//!   `standard_metadata.priority` not below the number of queues (1) drops at enqueue.
//! - **PSA** follows psa_switch (see [`psa`]): fresh metadata and headers for every pass
//!   (ingress from a port, resubmission, recirculation; egress for every copy), only the
//!   metadata of the packet's path carried (`resubmit_meta`, `recirculate_meta`,
//!   `normal_meta`, `clone_i2e_meta`, `clone_e2e_meta`); `ostd.drop` starts true in ingress
//!   and false in egress; end of ingress: I2E clone (the packet as received), drop,
//!   resubmit (the packet as received), multicast, unicast; end of egress: E2E clone (the
//!   deparsed packet), drop, recirculation on `PSA_PORT_RECIRCULATE`, send; `setValid`
//!   zeroes the header as on v1model; timestamps are microseconds.
//! - **eBPF filter and XDP** (see [`ebpf`]): a parser reject drops; an accepted filter
//!   packet leaves unchanged on its input port; XDP's PASS and TX leave on the input port,
//!   REDIRECT on `output_port`.
//! - **Parser**: errors set `parser_error` and never drop; the unparsed bytes follow the
//!   emitted headers; an explicit `reject` acts as accept (p4c's BMv2 back end); a `select`
//!   without a matching case accepts with no error (p4c-bm2-ss has no `NoMatch` pass, BMv2
//!   takes its default transition); BMv2's check order for errors (see [`parse`]).
//! - **`setValid()`** on an invalid header zeroes it (v1model; `add_header`);
//!   `setValid`/`setInvalid` update BMv2's packet length register, which egress reads as
//!   `packet_length`.
//! - **Tables**: direct counters and meters count hits only; counters and byte meters use
//!   the length the packet had when it entered the parser; an entry pointing at a missing
//!   member or an empty group runs the default action as a miss.
//! - **Digests** carry the values at the call (koi's v1model.p4); as in BMv2 one digest per
//!   ingress pass is sent, the last call's; calls in egress are ignored.
//! - **`assert`/`assume`** failing: simple_switch exits; here the run stops (outputs already
//!   sent are kept), the failure is counted and reported.
//! - **`log_msg`** messages are collected in the report, not printed.
//! - **`truncate`**: v1model keeps the smallest length of the instance (copies do not
//!   inherit it, recirculation is not cut); uBPF as p4c generates it (see [`ubpf`]).
//! - **Hashes and checksums** are koi-hash's (bit-exact with BMv2); fields of invalid
//!   headers are left out of their input and a checksum field of an invalid header is not
//!   verified, as BMv2's field lists do; `HashAlgorithm.random` and `random()` draw from the
//!   seeded generator; custom CRC parameters are the defaults (no control-plane setting yet).
//! - **Loops** are bounded: resubmissions and recirculations ([`Options::max_passes`]),
//!   instances ([`Options::max_instances`]), parser states, control steps.

pub mod control;
pub mod ebpf;
pub mod eval;
pub mod exec;
pub mod externs;
mod native;
pub mod observer;
pub mod options;
pub mod parse;
pub mod phv;
pub mod prepared;
pub mod psa;
pub mod psa_externs;
pub mod trace;
pub mod ubpf;
pub mod v1model;

pub use observer::{CopyKind, Decision, NoObserver, Observer, Replay, Step, TableEvent, TmEvent};
pub use options::{DropReason, InterpError, Options, Outcome, Output, Report, Rng};
pub use trace::TraceObserver;

use exec::Ctx;
use koi_ir::{Architecture, Bits, Pipeline, Role};
use koi_state::{Clock, State};
use prepared::Prepared;

/// An interpreter for one pipeline.
#[derive(Clone, Debug)]
pub struct Interpreter<'p> {
    pipeline: &'p Pipeline,
    prep: Prepared,
    options: Options,
    rng: Rng,
    /// Value lists runs reuse ([`exec::Ctx::list`]).
    lists: Vec<Vec<Bits>>,
}

impl<'p> Interpreter<'p> {
    /// An interpreter with default [`Options`].
    pub fn new(pipeline: &'p Pipeline) -> Result<Interpreter<'p>, InterpError> {
        Interpreter::with_options(pipeline, Options::default())
    }

    pub fn with_options(
        pipeline: &'p Pipeline,
        options: Options,
    ) -> Result<Interpreter<'p>, InterpError> {
        Ok(Interpreter {
            pipeline,
            prep: Prepared::new(pipeline)?,
            rng: Rng::new(options.seed),
            lists: Vec::new(),
            options,
        })
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The random number generator `random` and random hashes draw from: the cached
    /// datapath's compiled programs draw from it too, so that a run gives the same values
    /// whichever path a packet takes.
    pub fn rng_mut(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Processes one packet received on `port`, telling `obs` what happens.
    pub fn run<O: Observer>(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        clock: &dyn Clock,
        obs: &mut O,
    ) -> Result<Outcome, InterpError> {
        if state.fingerprint() != self.prep.fingerprint {
            return Err(InterpError::StateMismatch);
        }
        state.set_now_ns(clock.now_ns());
        let mut report = Report::default();
        obs.packet_in(port, packet);
        let mut ctx = Ctx {
            p: self.pipeline,
            prep: &self.prep,
            opts: &self.options,
            state,
            clock,
            rng: &mut self.rng,
            obs,
            report: &mut report,
            role: Role::Parser,
            lists: &mut self.lists,
        };
        let r = match self.pipeline.arch {
            Architecture::V1Model => ctx.run_v1model(packet, port),
            Architecture::Ubpf => ctx.run_ubpf(packet, port),
            Architecture::Psa => ctx.run_psa(packet, port),
            Architecture::Ebpf => ctx.run_ebpf(packet, port),
            Architecture::Xdp => ctx.run_xdp(packet, port),
        };
        let outputs = match r {
            Ok(o) => o,
            Err((o, why)) => {
                report.aborted = Some(why);
                o
            }
        };
        // A replica's hold on its master's registers and meters ends with the packet.
        state.packet_done();
        Ok(Outcome { outputs, report })
    }

    /// [`Interpreter::run`] without an observer.
    pub fn process(
        &mut self,
        state: &mut State,
        packet: &[u8],
        port: u64,
        clock: &dyn Clock,
    ) -> Result<Outcome, InterpError> {
        self.run(state, packet, port, clock, &mut NoObserver)
    }
}

/// Processes one packet received on `ingress_port` with default options; returns the
/// packets sent, in order. Side effects land in `state` (registers, counters, meters,
/// digests). A pipeline the interpreter cannot run, or a state built for another pipeline,
/// sends nothing (use [`Interpreter`] to see why).
pub fn process(
    pipeline: &Pipeline,
    state: &mut State,
    packet: &[u8],
    ingress_port: u64,
    clock: &dyn Clock,
) -> Vec<Output> {
    Interpreter::new(pipeline)
        .and_then(|mut i| i.process(state, packet, ingress_port, clock))
        .map(|o| o.outputs)
        .unwrap_or_default()
}
