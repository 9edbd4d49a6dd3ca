//! `koi conformance DIR`: runs every STF test under a directory laid out like p4c's corpus and
//! ends with one line `N passed, M failed` (`--json` for machines). Packets go through the
//! cached datapath unless `--no-cache` (the reference interpreter alone). A directory's
//! `EXTERNS.tsv` names the C file implementing a test's extern functions.

use clap::Args;
use koi_conformance::corpus::{discover, run_case, to_json};
use koi_conformance::stf::RunOptions;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ConformanceArgs {
    /// Add a directory to the `#include` search path.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Define a preprocessor macro (`NAME` or `NAME=VALUE`).
    #[arg(short = 'D', value_name = "NAME[=VAL]")]
    pub define: Vec<String>,
    /// Print the results as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print every test's result, not only the failures.
    #[arg(short, long)]
    pub verbose: bool,
    /// Process packets with the reference interpreter alone, not the cached datapath.
    #[arg(long)]
    pub no_cache: bool,
    /// The C file (or shared object) implementing the programs' extern functions, for the
    /// tests a directory's `EXTERNS.tsv` does not give one.
    #[arg(long = "extern", value_name = "FILE")]
    pub externs: Option<PathBuf>,
    /// The directory of tests (`NAME.p4` beside `NAME.stf`, in any subdirectory).
    pub dir: PathBuf,
}

pub fn run(a: &ConformanceArgs) -> ExitCode {
    if !a.dir.is_dir() {
        eprintln!("koi: {}: not a directory", a.dir.display());
        return ExitCode::from(2);
    }
    let opts = super::frontend::pp_options(&a.include, &a.define);
    let run = RunOptions { cache: !a.no_cache };
    let cases = discover(&a.dir);
    let results: Vec<_> = cases
        .iter()
        .map(|c| run_case(c, &opts, &run, a.externs.as_deref()))
        .collect();
    let passed = results.iter().filter(|r| r.verdict.passed()).count();
    let failed = results.len() - passed;
    if a.json {
        println!("{}", to_json(&results));
    } else {
        for r in &results {
            if !r.verdict.passed() {
                println!("FAIL {}: {}", r.name, r.verdict);
            } else if a.verbose {
                println!("PASS {}", r.name);
            }
        }
        println!("{passed} passed, {failed} failed");
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
