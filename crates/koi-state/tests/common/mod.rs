//! What koi-state's tests share: a P4 program compiled to the IR (with every diagnostic in
//! the panic message when it does not compile).

use koi_ir::Pipeline;

/// `src` (named `name` in diagnostics) through the frontend and lowering.
pub fn compile(name: &str, src: &str) -> Pipeline {
    let opts = koi_syntax::PpOptions::default();
    let (sm, program, diags) = koi_syntax::parse_str(name, src, &opts);
    let render =
        |d: &koi_syntax::Diagnostics| -> String { d.list.iter().map(|x| x.render(&sm)).collect() };
    assert!(!diags.has_errors(), "{}", render(&diags));
    let copts = koi_sema::CheckOptions { require_main: true };
    let (checked, sdiags) = koi_sema::check(&program, &copts);
    assert!(!sdiags.has_errors(), "{}", render(&sdiags));
    koi_lower::lower(&program, &checked).unwrap_or_else(|d| panic!("{}", render(&d)))
}
