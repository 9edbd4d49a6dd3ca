//! Helpers shared by koi-sema's tests: parse and check a program given as text.
#![allow(dead_code)]

use koi_sema::{CheckOptions, Checked};
use koi_syntax::{PpOptions, SourceMap};

/// Parses and checks `src`; returns the result, the source map and every diagnostic as
/// `(line, "error: message")` (parse errors included).
pub fn run(src: &str) -> (Checked, SourceMap, Vec<(u32, String)>) {
    let (sm, prog, pdiags) = koi_syntax::parse_str("t.p4", src, &PpOptions::default());
    let (checked, diags) = koi_sema::check(&prog, &CheckOptions::default());
    let mut out = Vec::new();
    for d in pdiags.list.iter().chain(diags.list.iter()) {
        if !d.is_error() {
            continue;
        }
        let line = d.line(&sm).map(|(_, l)| l).unwrap_or(0);
        out.push((line, d.message.clone()));
    }
    (checked, sm, out)
}

/// The errors of `src`, rendered `line: message`.
pub fn errors(src: &str) -> Vec<String> {
    run(src)
        .2
        .into_iter()
        .map(|(l, m)| format!("{l}: {m}"))
        .collect()
}

/// Asserts that `src` checks without errors.
#[track_caller]
pub fn ok(src: &str) {
    let e = errors(src);
    assert!(
        e.is_empty(),
        "unexpected errors:\n{}\nin:\n{src}",
        e.join("\n")
    );
}

/// Asserts that the first error of `src` is on `line` and contains `needle`.
#[track_caller]
pub fn err(src: &str, line: u32, needle: &str) {
    let e = run(src).2;
    let Some((l, m)) = e.first() else {
        panic!("expected an error containing {needle:?} on line {line}, got none in:\n{src}");
    };
    assert!(
        *l == line && m.contains(needle),
        "expected an error containing {needle:?} on line {line}; got:\n{}\nin:\n{src}",
        e.iter()
            .map(|(l, m)| format!("{l}: {m}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Asserts that the first error of `src` is on the line marked `// ERR` and contains
/// `needle`.
#[track_caller]
pub fn rejects(src: &str, needle: &str) {
    let line = src
        .lines()
        .position(|l| l.contains("// ERR"))
        .map(|i| i as u32 + 1)
        .expect("the test program marks the offending line with // ERR");
    err(src, line, needle);
}

/// `#include <core.p4>` followed by `body`.
pub fn with_core(body: &str) -> String {
    format!("#include <core.p4>\n{body}")
}
