//! `koi check`: validates a program like p4test. Exit 0 when valid, 1 with diagnostics when not,
//! 2 on usage or I/O errors.

use super::frontend::{Outcome, SourceArgs, print_diagnostics, run_frontend};
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub source: SourceArgs,
}

pub fn run(args: &CheckArgs) -> ExitCode {
    match run_frontend(&args.source, false) {
        Outcome::Io(msg) => {
            eprintln!("koi: {msg}");
            ExitCode::from(2)
        }
        Outcome::Checked { sm, diags, .. } => {
            print_diagnostics(&sm, &diags);
            if diags.has_errors() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}
