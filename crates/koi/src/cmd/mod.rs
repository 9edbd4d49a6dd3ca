//! One module per `koi` subcommand, plus the options they share.

pub mod bench;
pub mod check;
pub mod compile;
pub mod conformance;
pub mod ctl;
pub mod ctl_server;
pub mod entries;
pub mod frontend;
pub mod metrics;
pub mod run;
pub mod test;
pub mod trace;

/// The megaflows without a compiled program (each hit replays the interpreter), as
/// [`koi_datapath::Datapath::not_compiled_reasons`] gives them: their number and
/// `reason (n), ...`; `None` if there are none.
pub fn replays(reasons: &std::collections::BTreeMap<&'static str, u64>) -> Option<(u64, String)> {
    let why: Vec<String> = reasons.iter().map(|(r, n)| format!("{r} ({n})")).collect();
    (!why.is_empty()).then(|| (reasons.values().sum(), why.join(", ")))
}
