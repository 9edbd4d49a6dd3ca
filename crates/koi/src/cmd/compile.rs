//! `koi compile`: checks a program that instantiates `main` and prints a compiler output
//! (`--emit ir` or `--emit p4info`).

use super::frontend::{Outcome, SourceArgs, print_diagnostics, run_frontend};
use clap::{Args, ValueEnum};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Emit {
    /// The parsed program's syntax tree (for debugging the frontend).
    Ast,
    /// The type checker's tables: types, declarations, resolutions (for debugging the frontend).
    Types,
}

#[derive(Args, Debug)]
pub struct CompileArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// What to print.
    #[arg(long, value_enum, default_value = "ast")]
    pub emit: Emit,
}

pub fn run(args: &CompileArgs) -> ExitCode {
    match run_frontend(&args.source, true) {
        Outcome::Io(msg) => {
            eprintln!("koi: {msg}");
            ExitCode::from(2)
        }
        Outcome::Checked {
            sm,
            diags,
            program,
            checked,
        } => {
            print_diagnostics(&sm, &diags);
            if diags.has_errors() {
                return ExitCode::from(1);
            }
            match args.emit {
                Emit::Ast => println!("{program:#?}"),
                Emit::Types => println!("{checked:#?}"),
            }
            ExitCode::SUCCESS
        }
    }
}
