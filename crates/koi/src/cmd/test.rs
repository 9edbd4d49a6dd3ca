//! `koi test PROG.p4 TEST.stf`: runs one STF test through the cached datapath (`--no-cache`:
//! the reference interpreter alone); prints
//! what differed (port, expected and received packets, byte offset) and exits 1 on failure.

use clap::Args;
use koi_conformance::corpus::{Verdict, run_test_with_externs};
use koi_conformance::stf::RunOptions;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct TestArgs {
    /// Add a directory to the `#include` search path.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Define a preprocessor macro (`NAME` or `NAME=VALUE`).
    #[arg(short = 'D', value_name = "NAME[=VAL]")]
    pub define: Vec<String>,
    /// Print notes (packets to ports the test does not name, refused CLI commands).
    #[arg(short, long)]
    pub verbose: bool,
    /// Process packets with the reference interpreter alone, not the cached datapath.
    #[arg(long)]
    pub no_cache: bool,
    /// The C file (or prebuilt shared object) implementing the program's extern functions.
    #[arg(long = "extern", value_name = "FILE")]
    pub externs: Option<PathBuf>,
    /// The P4-16 program.
    pub program: PathBuf,
    /// The STF test.
    pub stf: PathBuf,
}

pub fn run(a: &TestArgs) -> ExitCode {
    use koi_syntax::input::{MAX_SOURCE, MAX_STF, check_file};
    for (p, limit) in [(&a.program, MAX_SOURCE), (&a.stf, MAX_STF)] {
        if let Err(e) = check_file(p, limit) {
            eprintln!("koi: {e}");
            return ExitCode::from(2);
        }
    }
    let opts = super::frontend::pp_options(&a.include, &a.define);
    let name = a.stf.display().to_string();
    let run = RunOptions { cache: !a.no_cache };
    let r = run_test_with_externs(&name, &a.program, &a.stf, &opts, &run, a.externs.as_deref());
    if a.verbose {
        for n in &r.notes {
            println!("note: {n}");
        }
    }
    match &r.verdict {
        Verdict::Pass => {
            println!(
                "PASS {name}: {} packets in, {} checked",
                r.packets_in, r.packets_checked
            );
            ExitCode::SUCCESS
        }
        Verdict::Fail(failures) => {
            println!("FAIL {name}");
            for f in failures {
                println!("  {f}");
            }
            ExitCode::from(1)
        }
        other => {
            println!("FAIL {name}: {other}");
            ExitCode::from(1)
        }
    }
}
