//! Error tests: recovery (several errors, each on its line, no cascades), a well-formed tree
//! after errors, the nesting limit, and no panic on arbitrary input.

use super::{errs, lines};
use crate::ast::{DeclKind, StmtKind};
use crate::parser::{MAX_DEPTH, parse};

#[test]
fn two_errors_in_one_file_are_both_reported() {
    let src = "control c() {\n  apply {\n    x = ;\n    y = 1;\n    z = 2 +;\n  }\n}\nheader H { bit<8> f }\nstruct S { bit<8> g; }";
    let e = errs(src);
    let ls: Vec<usize> = e.iter().map(|(l, _)| *l).collect();
    assert_eq!(ls, [3, 5, 8], "{e:?}");
    let (p, _) = parse(src);
    // The tree keeps what could be read.
    assert_eq!(p.decls.len(), 3);
    let DeclKind::Control { body, .. } = &p.decls[0].kind else {
        panic!()
    };
    let kinds: Vec<bool> = body
        .stmts
        .iter()
        .map(|s| s.kind == StmtKind::Invalid)
        .collect();
    assert_eq!(kinds, [true, false, true]);
}

#[test]
fn recovery_skips_to_the_next_declaration() {
    let src = "const bit<8> a = ;\nheader H {}\nconst = 3;\nstruct S {}\ncontrol c(in x) { apply { } }\nstruct T {}";
    let e = errs(src);
    assert_eq!(e.iter().map(|(l, _)| *l).collect::<Vec<_>>(), [1, 3, 5]);
    let (p, _) = parse(src);
    let names: Vec<String> = p
        .decls
        .iter()
        .filter_map(|d| d.name().map(|n| n.name.clone()))
        .collect();
    assert_eq!(names, ["H", "S", "T"]);
}

#[test]
fn one_error_per_broken_statement() {
    // Missing `;` then garbage up to the next `;`: a single error.
    let e = errs("control c() { apply { x = 1 y = 2 z; w = 3; } }");
    assert_eq!(e.len(), 1, "{e:?}");
}

#[test]
fn stray_closing_brace_at_top_level() {
    let e = errs("header H {}\n}\nstruct S {}");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, 2);
}

#[test]
fn missing_semicolon_at_end_of_file() {
    let e = errs("/* c */\n   x\n\n");
    assert_eq!(e[0].0, 2);
    assert!(e[0].1.contains("unexpected END"), "{e:?}");
}

#[test]
fn invalid_characters_are_reported_and_skipped() {
    let e = errs("header H {}\nconst H h = { # };\nstruct $ S {}\nstruct T {}");
    assert_eq!(e.iter().map(|(l, _)| *l).collect::<Vec<_>>(), [2, 3]);
    assert!(e[0].1.contains("invalid character '#'"), "{e:?}");
}

#[test]
fn lexer_errors_are_reported_with_parser_errors_in_order() {
    let src = "const bit<8> a = 0x;\nconst bit<8> b = ;\n/* open";
    let (_, d) = parse(src);
    let ls: Vec<usize> = lines(src, &d).iter().map(|(l, _)| *l).collect();
    assert_eq!(ls, [1, 1, 2, 3]);
}

#[test]
fn underscore_is_not_a_name() {
    for src in [
        "struct s {\n    bit _;\n}",
        "extern void _(in bit x);",
        "const bit _ = 1;",
        "control c() { apply {\n bit _;\n} }",
    ] {
        let e = errs(src);
        assert!(e[0].1.contains("unexpected _"), "{src}: {e:?}");
    }
}

#[test]
fn typed_declarations_reject_derived_new_types() {
    let e = errs("\n\ntype struct Point { int<32> x; } P;");
    assert_eq!(e[0].0, 3);
    assert!(e[0].1.contains("unexpected STRUCT"), "{e:?}");
}

fn deep(open: &str, mid: &str, close: &str, n: usize) -> String {
    format!("{}{mid}{}", open.repeat(n), close.repeat(n))
}

/// Runs `f` on a thread with a small stack, as test threads and fuzzers have.
fn small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .and_then(|h| h.join().map_err(|_| std::io::Error::other("panicked")))
        .expect("parser thread failed");
}

#[test]
fn nesting_limit_is_an_error_not_a_crash() {
    small_stack(|| {
        let n = 100_000;
        let inputs = [
            format!("const int x = {};", deep("(", "1", ")", n)),
            format!("const int x = {};", deep("-", "1", "", n)),
            format!("const int x = {};", deep("{", "1", "}", n)),
            format!("const int x = {};", deep("a[", "1", "]", n)),
            format!("const int x = 1{};", " + 1".repeat(n)),
            format!("const int x = a{};", ".b".repeat(n)),
            format!("const int x = c{};", " ? 1 : 2".repeat(n)),
            format!("control c() {{ apply {} }}", deep("{", "", "}", n)),
            format!(
                "control c() {{ apply {{ {} x = 1; }} }}",
                "if (a) ".repeat(n)
            ),
            format!("typedef {} T;", deep("tuple<", "bit", ">", n)),
            format!("const bit<{}> x = 1;", deep("(", "1", ")", n)),
            deep("@a(", "", ")", n),
        ];
        for src in inputs {
            let (_, d) = parse(&src);
            assert!(d.has_errors(), "{}", &src[..40]);
        }
    });
}

#[test]
fn nesting_up_to_the_limit_is_accepted() {
    small_stack(|| {
        let n = MAX_DEPTH as usize - 8;
        for src in [
            format!("const int x = {};", deep("(", "1", ")", n)),
            format!("const int x = {};", deep("{", "1", "}", n)),
            format!("const int x = {};", deep("-", "1", "", n)),
            format!("control c() {{ apply {} }}", deep("{", "", "}", n)),
        ] {
            let (_, d) = parse(&src);
            assert!(d.list.is_empty(), "{:?}", d.list.first());
        }
    });
}

/// A tiny deterministic generator of token soup from P4 fragments.
fn soup(seed: u64, len: usize) -> String {
    const PIECES: &[&str] = &[
        "control",
        "parser",
        "state",
        "transition",
        "select",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "<",
        ">",
        ">>",
        ";",
        ",",
        ":",
        "=",
        "+",
        "&&&",
        "..",
        "...",
        "@",
        "@pragma",
        "\n",
        "x",
        "T",
        "bit",
        "<8>",
        "apply",
        "table",
        "key",
        "actions",
        "entries",
        "const",
        "default",
        "_",
        "if",
        "else",
        "switch",
        "for",
        "in",
        "{#}",
        "8w5",
        "0x",
        "\"s",
        "/*",
        "#",
        "'",
        "é",
        "header",
        "struct",
        "extern",
        "typedef",
        "type",
        "enum",
        "error",
        ".",
        "?",
        "return",
    ];
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::new();
    for _ in 0..len {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let piece = PIECES[((s >> 33) as usize) % PIECES.len()];
        out.push_str(piece);
        out.push(' ');
    }
    out
}

#[test]
fn arbitrary_input_never_panics() {
    small_stack(|| {
        for seed in 0..3000u64 {
            let src = soup(seed, 1 + (seed as usize % 200));
            let _ = parse(&src);
        }
        // Every prefix of a real program.
        let prog = "header H { bit<8> f; } parser P(packet_in p, out H h) { state start { p.extract(h); transition select(h.f) { 1 &&& 2: accept; default: reject; } } } control C(inout H h) { action a(bit<8> x) { h.f = x; } table t { key = { h.f: exact; } actions = { a; } const entries = { 1: a(2); } } apply { if (h.isValid()) { t.apply(); } } }";
        for i in 0..=prog.len() {
            let _ = parse(&prog[..i]);
        }
    });
}

#[test]
fn statements_after_a_transition_are_one_error() {
    let src = "parser P() {\n  state s { transition accept; x = 1; y = 2; }\n  state t { transition reject; }\n}";
    let e = errs(src);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, 2);
    let (p, _) = parse(src);
    let DeclKind::Parser { states, .. } = &p.decls[0].kind else {
        panic!()
    };
    assert_eq!(states.len(), 2);
}
