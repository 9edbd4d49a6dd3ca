//! One module per `koi` subcommand, plus the options they share.

pub mod bench;
pub mod check;
pub mod compile;
pub mod conformance;
pub mod ctl;
pub mod entries;
pub mod frontend;
pub mod run;
pub mod test;
pub mod trace;
