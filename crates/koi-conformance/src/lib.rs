//! koi's STF test runner (`koi test`) and conformance-corpus driver (`koi conformance`).
//!
//! [`compile`] turns a P4 file (and [`compile_str`] a P4 text) into a verified pipeline
//! (preprocess, parse, check, lower).
//! [`stf::run`] executes an STF file against that pipeline with the reference interpreter
//! ([`stf::run_with`]: or through the cached datapath, which must give the same results),
//! exactly as p4c's runners do (`shared/reference/STF.md`): statements in file order, packets
//! processed to completion one at a time, expectations queued per port and compared at the
//! end (prefix match unless `$`, `*` nibbles), an extra packet on a port named in the file is
//! a failure, packets to ports never named are reported but do not fail. For uBPF programs the
//! table writes happen before the first packet and names are p4c's generated C identifiers.
//! [`corpus`] runs every test of a directory laid out like p4c's corpus.

pub mod compile;
pub mod corpus;
pub mod stf;

pub use compile::{Compiled, compile, compile_str};
