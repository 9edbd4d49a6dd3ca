//! The P4-16 parser (to be written).

use crate::ast::Program;
use crate::Diagnostics;

/// Parses preprocessed text into a program, with every syntax error found.
pub fn parse(_text: &str) -> (Program, Diagnostics) {
    (Program::default(), Diagnostics::new())
}
