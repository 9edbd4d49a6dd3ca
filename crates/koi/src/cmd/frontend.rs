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
        externs: None,
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
    let text = match koi_syntax::input::read_text(&args.file, koi_syntax::input::MAX_SOURCE) {
        Ok(t) => t,
        Err(e) => return Outcome::Io(e.to_string()),
    };
    let name = args.file.display().to_string();
    let (sm, program, mut diags) = koi_syntax::parse_str(&name, &text, &args.pp_options());
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

/// Prints the diagnostics to stderr as they are rendered, errors and warnings in source order:
/// the first [`koi_syntax::diag::MAX_SHOWN`], a line saying how many more there were, and the
/// number of errors.
pub fn print_diagnostics(sm: &SourceMap, diags: &Diagnostics) {
    use std::io::Write as _;
    let mut err = std::io::BufWriter::new(std::io::stderr().lock());
    // A closed stderr is not worth failing over; the exit code still says what happened.
    let mut ok = true;
    diags.emit(sm, koi_syntax::diag::MAX_SHOWN, |s| {
        ok = ok && err.write_all(s.as_bytes()).is_ok();
    });
    let errors = diags.error_count();
    if ok && errors > 0 {
        let _ = writeln!(
            err,
            "{errors} error{} found",
            if errors == 1 { "" } else { "s" }
        );
    }
    let _ = err.flush();
}
