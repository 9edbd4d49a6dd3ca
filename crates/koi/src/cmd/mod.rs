//! One module per `koi` subcommand, plus the options they share.

pub mod check;
pub mod compile;
pub mod frontend;
