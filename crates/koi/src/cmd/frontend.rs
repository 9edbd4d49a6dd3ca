//! Options and driver shared by the subcommands that read a P4 program: `-I`, `-D`, running
//! the preprocessor, parser and type checker, and printing diagnostics.

use clap::Args;
use koi_syntax::{Diagnostics, PpOptions, SourceMap};
use std::path::PathBuf;

#[derive(Args, Clone, Debug)]
pub struct SourceArgs {
    /// Add a directory to the `#include` search path.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Define a preprocessor macro (`NAME` or `NAME=VALUE`).
    #[arg(short = 'D', value_name = "NAME[=VAL]")]
    pub define: Vec<String>,
    /// The P4-16 program.
    pub file: PathBuf,
}

impl SourceArgs {
    pub fn pp_options(&self) -> PpOptions {
        pp_options(&self.include, &self.define)
    }
}

/// Preprocessor options from `-I` and `-D` arguments.
pub fn pp_options(include: &[PathBuf], define: &[String]) -> PpOptions {
    koi_runtime::Flags {
        include: include.to_vec(),
        define: define.to_vec(),
    }
    .pp_options()
}

/// The outcome of running the frontend.
pub enum Outcome {
    /// The input could not be read (exit code 2).
    Io(String),
    /// The program was read; diagnostics may contain errors.
    Checked {
        sm: SourceMap,
        program: koi_syntax::ast::Program,
        checked: Box<koi_sema::Checked>,
        diags: Diagnostics,
    },
}

/// Preprocesses, parses and checks the program named by `args`.
pub fn run_frontend(args: &SourceArgs, require_main: bool) -> Outcome {
    if let Err(e) = std::fs::metadata(&args.file) {
        return Outcome::Io(format!("{}: {e}", args.file.display()));
    }
    let (sm, program, mut diags) = koi_syntax::parse_file(&args.file, &args.pp_options());
    if diags.has_errors() {
        return Outcome::Checked {
            sm,
            program,
            checked: Box::default(),
            diags,
        };
    }
    let opts = koi_sema::CheckOptions { require_main };
    let (checked, sdiags) = koi_sema::check(&program, &opts);
    diags.extend(sdiags.list);
    Outcome::Checked {
        sm,
        program,
        checked: Box::new(checked),
        diags,
    }
}

/// Prints every diagnostic to stderr, errors and warnings in source order.
pub fn print_diagnostics(sm: &SourceMap, diags: &Diagnostics) {
    let mut out = String::new();
    for d in &diags.list {
        out.push_str(&d.render(sm));
    }
    let errors = diags.error_count();
    if errors > 0 {
        out.push_str(&format!(
            "{errors} error{} found\n",
            if errors == 1 { "" } else { "s" }
        ));
    }
    eprint!("{out}");
}
