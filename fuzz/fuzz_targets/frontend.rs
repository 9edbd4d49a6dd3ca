//! Fuzz target over koi's frontend: preprocessor, parser and type checker on arbitrary text.
//! Any panic is a bug: every input must produce a program or diagnostics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = koi_syntax::PpOptions::default();
    let (sm, program, diags) = koi_syntax::parse_str("fuzz.p4", text, &opts);
    for d in &diags.list {
        let _ = d.render(&sm);
    }
    if !diags.has_errors() {
        let (_, sdiags) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
        for d in &sdiags.list {
            let _ = d.render(&sm);
        }
    }
});
