//! koi's semantic analysis of P4-16 programs (to be written): name resolution, type checking
//! and compile-time evaluation over the AST of `koi-syntax`.

use koi_syntax::Diagnostics;
use koi_syntax::ast::Program;

/// Options of a check.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// When true, a program without `main` is an error (`koi compile`); otherwise it is checked
    /// as a library (`koi check`).
    pub require_main: bool,
}

/// The result of checking a program: everything later phases need to know about it.
#[derive(Debug, Default)]
pub struct Checked {}

/// Checks a parsed program, returning what was learnt and every diagnostic found.
pub fn check(_program: &Program, _opts: &CheckOptions) -> (Checked, Diagnostics) {
    (Checked::default(), Diagnostics::new())
}
