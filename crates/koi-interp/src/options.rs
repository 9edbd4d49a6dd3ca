//! What a run takes and gives: [`Options`], the packets that come out ([`Output`]), and the
//! [`Report`] of what else happened (drops with their reasons, logs, limits hit).

use thiserror::Error;

/// Limits and target parameters of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// simple_switch's drop port (`--drop-port`).
    pub drop_port: u32,
    /// Queues per port (`--priority-queues`, 1 by default): a packet whose
    /// `standard_metadata.priority` is not below it is dropped when enqueued, as
    /// simple_switch does.
    pub priority_queues: u64,
    /// Resubmissions and recirculations of one input packet, after which further ones are
    /// dropped and reported.
    pub max_passes: u32,
    /// Packet instances (copies included) one input packet may create.
    pub max_instances: u32,
    /// Parser states one parse may visit beyond 8 per bit of packet, after which it ends
    /// with `error.ParserTimeout`.
    pub parser_state_margin: u64,
    /// Blocks one control or action body may execute before the packet is abandoned.
    pub max_steps: u64,
    /// Seed of the random number generator (`random`, `HashAlgorithm.random`).
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            drop_port: 511,
            priority_queues: 1,
            max_passes: 64,
            max_instances: 1024,
            parser_state_margin: 4096,
            max_steps: 1_000_000,
            seed: 0x6b6f_6920_7275_6e73,
        }
    }
}

/// A packet leaving the switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub port: u64,
    pub bytes: Vec<u8>,
}

/// Why a packet instance went nowhere.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// `egress_spec` was the drop port at the end of ingress.
    Ingress,
    /// `egress_spec` was the drop port at the end of egress.
    Egress,
    /// Multicast to a group with no copies, or a clone session with none.
    NoReplicas,
    /// `standard_metadata.priority` not below the number of queues.
    PriorityOutOfRange,
    /// uBPF `mark_to_drop`.
    Ubpf,
    /// An eBPF filter that did not accept the packet, an eBPF or XDP parser that rejected
    /// it, an XDP program's `XDP_DROP` or `XDP_ABORTED`.
    Filter,
    /// A resubmit, recirculation or copy beyond [`Options::max_passes`] or
    /// [`Options::max_instances`].
    Limit,
}

/// Everything a run did besides its outputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub drops: Vec<DropReason>,
    /// `log_msg` messages, in order.
    pub logs: Vec<String>,
    /// Failed `assert`/`assume` calls.
    pub assert_failures: u32,
    /// Why processing stopped early, if it did (a failed assertion, an unsupported extern,
    /// a step limit); outputs already sent are kept.
    pub aborted: Option<String>,
    /// Resubmissions and recirculations done.
    pub passes: u32,
    /// Digest messages sent.
    pub digests: u32,
}

/// A run's outputs and report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub outputs: Vec<Output>,
    pub report: Report,
}

/// Why an interpreter could not be made for a pipeline, or could not run.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum InterpError {
    #[error("the {0} architecture is not supported by the interpreter yet")]
    Unsupported(&'static str),
    #[error("the package binds no block to role {0}")]
    MissingRole(&'static str),
    #[error("the state was built for another pipeline")]
    StateMismatch,
}

/// The random number generator: SplitMix64, seeded, so runs are reproducible.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform value in `lo..=hi` (`lo` when `lo > hi`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if lo >= hi {
            return lo;
        }
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        let n = span + 1;
        let zone = u64::MAX - (u64::MAX % n) - 1;
        loop {
            let v = self.next_u64();
            if v <= zone {
                return lo + v % n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ranges_are_reproducible_and_in_bounds() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let v = a.range(10, 20);
            assert!((10..=20).contains(&v));
            assert_eq!(v, b.range(10, 20));
        }
        assert_eq!(a.range(5, 3), 5);
        let _ = a.range(0, u64::MAX);
    }
}
