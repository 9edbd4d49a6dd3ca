//! Compiling P4 text for the tests.

#![allow(dead_code)]

use koi_ir::Pipeline;
use std::path::Path;

/// Compiles a P4 program given as text (koi's built-in `core.p4`/`v1model.p4`).
pub fn compile_str(src: &str) -> Result<Pipeline, String> {
    compile_with(src, koi_syntax::PpOptions::default())
}

pub fn compile_with(src: &str, opts: koi_syntax::PpOptions) -> Result<Pipeline, String> {
    let (sm, program, diags) = koi_syntax::parse_str("test.p4", src, &opts);
    let render =
        |d: &koi_syntax::Diagnostics| -> String { d.list.iter().map(|x| x.render(&sm)).collect() };
    if diags.has_errors() {
        return Err(render(&diags));
    }
    let (checked, sdiags) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
    if sdiags.has_errors() {
        return Err(render(&sdiags));
    }
    koi_lower::lower(&program, &checked).map_err(|d| render(&d))
}

/// Compiles the program in file `path`, including from `include` and the file's directory.
pub fn compile_file(path: &Path, include: Option<&Path>) -> Result<Pipeline, String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut include_dirs: Vec<_> = include.map(Path::to_path_buf).into_iter().collect();
    include_dirs.push(dir);
    let opts = koi_syntax::PpOptions {
        include_dirs,
        defines: Vec::new(),
    };
    compile_with(&src, opts)
}
