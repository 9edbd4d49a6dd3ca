//! The datapath's configuration: cache sizes and tiers, native code, batching.

/// A cycle counter for profiling (the binary passes `koi_ports::tsc`, which reads the CPU's
/// time-stamp counter; this crate has no `unsafe` to read it itself).
pub type CycleCounter = fn() -> u64;

/// Construction parameters of a [`Datapath`].
#[derive(Clone, Debug)]
pub struct DatapathConfig {
    /// Megaflow limit (least recently hit ones are evicted beyond it).
    pub max_megaflows: usize,
    /// Whether the microflow (exact-match) tier is used.
    pub microflow: bool,
    /// Microflow entries (a power of two).
    pub microflow_entries: usize,
    /// Signature-cache entries (rounded up to a power of two; 0: no signature cache): 8
    /// bytes each, a hint from a key's hash to its megaflow ([`koi_cache::signature`]).
    pub signature_entries: usize,
    /// Slow-path runs allowed per second of the clock given to `process` (a token bucket of
    /// `upcall_burst` tokens); a packet that misses when the bucket is empty is dropped and
    /// counted in [`DatapathStats::upcalls_limited`]. 0: unlimited (tests, `koi test`).
    pub upcall_rate: u64,
    /// Token bucket depth of the slow-path limit.
    pub upcall_burst: u64,
    /// Measure cycles per stage with this counter ([`DatapathStats::cycles`]); costs a
    /// counter read per stage. `None`: no profiling.
    pub profile: Option<CycleCounter>,
    /// Hash seed of the caches; `None` draws a random one.
    pub seed: Option<u64>,
    /// Compile an action program to native code once it has run this many times on cache
    /// hits; `None`: never.
    pub jit_after: Option<u32>,
    /// Programs with native code at a time (each holds at least a page of code).
    pub jit_limit: usize,
    /// Compiles to native code allowed per second of the clock given to `process` (a token
    /// bucket of `jit_burst` tokens); a hot program over the limit stays interpreted until a
    /// token is free ([`DatapathStats::jit_deferred`]). 0: unlimited.
    pub jit_rate: u64,
    pub jit_burst: u64,
    /// Reuse the programs of slow-path runs with the same trace ([`crate::memo`]; it keeps
    /// at most 1,024 runs, each with its record of a few kilobytes).
    pub trace_memo: bool,
    /// Prefetch the microflow set of each key of a batch ([`Datapath::process_batch`]; called
    /// through a pointer: [`Datapath::process_batch_prefetching`] takes one it can inline).
    pub prefetch: Option<Prefetch>,
}

/// Signature-cache entries by default: 2 MiB, room for a few hundred thousand flows
/// (L2L3-ACL at 100,000 flows: 31 subtables, ~800 cycles per packet without it, ~350 with it).
pub const SIGNATURE_ENTRIES: usize = 262_144;

/// Hits before a program is compiled to native code by default: compiling takes some tens of
/// microseconds, a few thousand packets' worth, so only programs that keep being hit are.
pub const JIT_AFTER: u32 = 256;

impl Default for DatapathConfig {
    fn default() -> Self {
        DatapathConfig {
            max_megaflows: 65_536,
            microflow: true,
            microflow_entries: 8192,
            signature_entries: SIGNATURE_ENTRIES,
            upcall_rate: 0,
            upcall_burst: 1000,
            profile: None,
            seed: None,
            jit_after: Some(JIT_AFTER),
            jit_limit: 1024,
            // At most ~10% of a core compiling (a compile takes about half a millisecond).
            jit_rate: 200,
            jit_burst: 64,
            trace_memo: true,
            prefetch: None,
        }
    }
}

/// Most packets [`Datapath::process_batch`] computes the keys of before looking them up.
pub const BATCH: usize = 32;

/// A cache-line prefetch (the binary passes `koi_ports::prefetch`; this crate has no
/// `unsafe` to issue one itself). It must not fault, whatever the address.
pub type Prefetch = fn(*const u8);
