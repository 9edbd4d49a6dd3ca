//! Unit tests of the preprocessor's diagnostics (with their `file:line:col`), its limits, and
//! that no input makes it panic.

use super::preprocess_file;
use super::tests::{TempDir, expand, lines, origins, rendered, run};
use crate::source::SourceMap;
use crate::{PpOptions, Severity};

/// The first rendered line of every diagnostic of `text`.
fn diags(text: &str) -> Vec<String> {
    let (sm, d) = run(text);
    rendered(&sm, &d)
}

#[test]
fn error_and_warning_directives() {
    let (sm, d) = run("x\n  #error Please define X  \n#warning careful\n");
    assert_eq!(
        rendered(&sm, &d),
        [
            "main.p4:2:4: error: #error Please define X",
            "main.p4:3:2: warning: #warning careful"
        ]
    );
    assert_eq!(d.error_count(), 1);
    assert_eq!(d.list[1].severity, Severity::Warning);
    let full = d.list[0].render(&sm);
    assert!(full.contains("  #error Please define X"), "{full}");
    assert!(full.contains("^^^^^"), "{full}");
}

#[test]
fn missing_include_points_at_the_name() {
    let t = TempDir::new("missing");
    let main = t.write("m.p4", "// c\n#include \"x.p4\"\n  #include <y.p4>\n");
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &PpOptions::default());
    let m = main.display();
    assert_eq!(
        rendered(&sm, &d),
        [
            format!("{m}:2:10: error: cannot find include file \"x.p4\""),
            format!("{m}:3:12: error: cannot find include file <y.p4>"),
        ]
    );
}

#[test]
fn errors_in_included_files_point_into_them() {
    let t = TempDir::new("inner");
    t.write("h.p4", "ok\n#if 1 +\n#endif\n#define F(a) a\nF(1\n");
    let main = t.write("m.p4", "#include \"h.p4\"\nafter\n");
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &PpOptions::default());
    let h = t.0.join("h.p4").display().to_string();
    assert_eq!(
        rendered(&sm, &d),
        [
            format!("{h}:2:8: error: #if expression ends unexpectedly"),
            format!("{h}:5:1: error: unterminated argument list invoking macro \"F\""),
        ]
    );
    assert_eq!(lines(&sm).last(), Some(&"after"));
}

#[test]
fn unbalanced_conditionals() {
    assert_eq!(diags("#else\n"), ["main.p4:1:1: error: #else without #if"]);
    assert_eq!(
        diags("#elif 1\n"),
        ["main.p4:1:1: error: #elif without #if"]
    );
    assert_eq!(
        diags("x\n#endif\n"),
        ["main.p4:2:1: error: #endif without #if"]
    );
    assert_eq!(
        diags("#if 1\n#else\n#else\n#endif\n"),
        ["main.p4:3:1: error: #else after #else"]
    );
    assert_eq!(
        diags("#if 0\n#else\n#elif 1\n#endif\n"),
        ["main.p4:3:1: error: #elif after #else"]
    );
    assert_eq!(
        diags("x\n  #ifdef A\n#if 1\n#endif\n"),
        ["main.p4:2:3: error: unterminated #ifdef"]
    );
}

#[test]
fn conditionals_do_not_cross_files() {
    let t = TempDir::new("cross");
    t.write("h.p4", "#if 1\n");
    let main = t.write("m.p4", "#include \"h.p4\"\n#endif\n");
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &PpOptions::default());
    let r = rendered(&sm, &d);
    assert_eq!(r.len(), 2);
    assert!(r[0].ends_with("h.p4:1:1: error: unterminated #if"), "{r:?}");
    assert!(
        r[1].ends_with("m.p4:2:1: error: #endif without #if"),
        "{r:?}"
    );
}

#[test]
fn if_expression_errors() {
    assert_eq!(
        diags("#if 1 / 0\n#endif\n"),
        ["main.p4:1:7: error: division by zero in #if"]
    );
    assert_eq!(
        diags("#if\n#endif\n"),
        ["main.p4:1:4: error: #if with no expression"]
    );
    assert_eq!(
        diags("#if (1\n#endif\n"),
        ["main.p4:1:7: error: missing ')' in expression"]
    );
    assert_eq!(
        diags("#if 8w1\n#endif\n"),
        ["main.p4:1:5: error: invalid integer constant \"8w1\" in #if"]
    );
    assert_eq!(
        diags("#if defined\n#endif\n"),
        ["main.p4:1:5: error: operator \"defined\" requires an identifier"]
    );
    assert_eq!(
        diags("#if 1 2\n#endif\n"),
        ["main.p4:1:7: error: missing binary operator before token \"2\""]
    );
    // An erroneous #if is false: the #else group is taken.
    let (sm, _) = run("#if 1/0\na\n#else\nb\n#endif\n");
    assert_eq!(lines(&sm)[3], "b");
}

#[test]
fn define_errors_and_redefinition() {
    assert_eq!(
        diags("#define\n"),
        ["main.p4:1:8: error: no macro name given in #define directive"]
    );
    assert_eq!(
        diags("#define 3 x\n"),
        ["main.p4:1:9: error: macro names must be identifiers"]
    );
    assert_eq!(
        diags("#define F(a, a) a\n"),
        ["main.p4:1:14: error: duplicate macro parameter \"a\""]
    );
    assert_eq!(diags("#define X 1\n#define X 1\n"), Vec::<String>::new());
    assert_eq!(
        diags("#define X 1\n#define X 2\n"),
        ["main.p4:2:9: warning: \"X\" redefined"]
    );
    assert_eq!(
        diags("#undef\n"),
        ["main.p4:1:7: error: no macro name given in #undef directive"]
    );
    assert_eq!(
        diags("#ifdef\n#endif\n"),
        ["main.p4:1:7: error: no macro name given in #ifdef directive"]
    );
    assert_eq!(
        diags("#endif junk\n"),
        ["main.p4:1:1: error: #endif without #if"]
    );
    assert_eq!(
        diags("#if 1\n#endif junk\n"),
        ["main.p4:2:8: warning: extra tokens at end of #endif directive"]
    );
}

#[test]
fn invocation_errors() {
    assert_eq!(
        diags("#define F(a, b) a\nx F(1)\n"),
        ["main.p4:2:3: error: macro \"F\" requires 2 arguments, but only 1 given"]
    );
    assert_eq!(
        diags("#define F(a) a\nF(1, 2)\n"),
        ["main.p4:2:1: error: macro \"F\" passed 2 arguments, but takes just 1"]
    );
    assert_eq!(
        diags("#define F() x\nF(1)\n"),
        ["main.p4:2:1: error: macro \"F\" passed 1 arguments, but takes just 0"]
    );
    assert_eq!(
        diags("#define F(a) a\nF(1,\n#define X\n)\n"),
        ["main.p4:2:1: error: unterminated argument list invoking macro \"F\""]
    );
}

#[test]
fn error_columns_stay_on_character_boundaries() {
    // The error of the inner invocation is at column 5 of line 3, but is reported on line 2
    // (where the outer invocation starts), whose column 5 is inside "⟶".
    let (sm, d) = run("#define F(a, b) a\n#define C(x) x\né⟶ C(\n    F(1))\n");
    assert_eq!(
        rendered(&sm, &d),
        ["main.p4:3:3: error: macro \"F\" requires 2 arguments, but only 1 given"]
    );
    assert!(d.list[0].render(&sm).contains("é⟶ C("));
}

#[test]
fn line_errors() {
    assert_eq!(
        diags("#line x\n"),
        ["main.p4:1:7: error: \"x\" after #line is not a positive integer"]
    );
    assert_eq!(
        diags("#line 99999999999\n"),
        ["main.p4:1:7: error: line number out of range"]
    );
}

#[test]
fn diagnostics_after_line_directive_use_the_new_name() {
    let (sm, d) = run("#line 41 \"other.p4\"\n\n#error here\n");
    assert_eq!(rendered(&sm, &d), ["other.p4:42:2: error: #error here"]);
    assert!(d.list[0].render(&sm).contains("#error here\n"));
}

#[test]
fn recursive_include_is_bounded() {
    let t = TempDir::new("recursive");
    let main = t.write("r.p4", "x\n#include \"r.p4\"\n");
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &PpOptions::default());
    assert_eq!(d.error_count(), 1);
    assert!(
        d.list[0]
            .message
            .contains("#include nested depth 200 exceeds maximum of 200")
    );
    assert_eq!(sm.files.len(), 1);
    assert_eq!(lines(&sm).iter().filter(|l| **l == "x").count(), 200);
}

#[test]
fn include_fork_bomb_is_bounded() {
    let t = TempDir::new("bomb");
    let main = t.write("b.p4", "#include \"b.p4\"\n#include \"b.p4\"\n");
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &PpOptions::default());
    assert!(d.has_errors());
    assert!(
        d.list
            .iter()
            .any(|e| e.message.contains("too many #include"))
    );
}

#[test]
fn exponential_expansion_is_bounded() {
    let mut src = String::from("#define m0 x x\n");
    for i in 1..40 {
        src.push_str(&format!("#define m{i} m{} m{}\n", i - 1, i - 1));
    }
    src.push_str("m39\nafter\n");
    let (sm, d) = run(&src);
    assert!(
        d.list.iter().any(|e| e.message.contains("too large")),
        "{:?}",
        rendered(&sm, &d)
    );
    assert_eq!(lines(&sm).last(), Some(&"after"));
}

#[test]
fn deeply_nested_arguments_are_bounded() {
    let nest = |n: usize| format!("#define f(x) x\n{}1{}\n", "f(".repeat(n), ")".repeat(n));
    let (_, d) = run(&nest(150));
    let msgs: Vec<&str> = d.list.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(msgs, ["macro arguments nested too deeply"]);
    let n = 5000;
    let (_, d) = run(&nest(n));
    let msgs: Vec<&str> = d.list.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(msgs, ["macro expansion is too large (limit exceeded)"]);
    let src = format!("#if {}1{}\n#endif\n", "(".repeat(n), ")".repeat(n));
    assert!(run(&src).1.has_errors());
}

#[test]
fn long_macro_chains_are_fine() {
    let mut src = String::new();
    for i in 0..3000 {
        src.push_str(&format!("#define m{i} m{}\n", i + 1));
    }
    src.push_str("#define m3000 end\nm0\n");
    assert_eq!(expand(&src), ["end"]);
}

#[test]
fn unterminated_things_at_end_of_file() {
    let (sm, d) = run("/* open\n#define X\n");
    assert!(d.list.is_empty());
    assert_eq!(lines(&sm), ["/* open", "#define X"]);
    let (_, d) = run("#define S \"open\nS\n'\n");
    assert!(d.list.is_empty());
    let (_, d) = run("x \\");
    assert!(d.list.is_empty());
}

/// A small deterministic generator for hostile inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const PIECES: &[&str] = &[
    "#define ",
    "#undef ",
    "#if ",
    "#ifdef ",
    "#elif ",
    "#else",
    "#endif",
    "#include ",
    "#line ",
    "#error",
    "#",
    "##",
    "(",
    ")",
    ",",
    "...",
    "__VA_ARGS__",
    "F",
    "G",
    "x",
    "defined",
    "\n",
    "\\\n",
    "/*",
    "*/",
    "//",
    "\"",
    "'",
    "0x",
    "1",
    "99999999999999999999",
    "<",
    ">",
    "-",
    "/",
    "%",
    "?",
    ":",
    " ",
    "\t",
    "\r\n",
    "⟶",
    "__LINE__",
    "__FILE__",
    "F(",
    "G(a,b) a ## b #a",
    "#define F(",
    "#define G(a, ...) G(a, __VA_ARGS__)",
    "#include \"",
    "#include <core.p4>",
    "\u{0}",
];

#[test]
fn hostile_inputs_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..1500 {
        let len = (rng.next() % 60) as usize;
        let mut src = String::new();
        for _ in 0..len {
            let i = (rng.next() % PIECES.len() as u64) as usize;
            src.push_str(PIECES.get(i).copied().unwrap_or(""));
        }
        let (sm, d) = run(&src);
        assert_eq!(
            sm.expanded.text.lines().count(),
            sm.expanded.lines.len(),
            "{src:?}"
        );
        for x in &d.list {
            let _ = x.render(&sm);
        }
    }
}

#[test]
fn every_prefix_of_a_program_is_safe() {
    let src = "#define F(a, ...) a(__VA_ARGS__) /* c\n */\n#if defined(F) && 1 ? 2 : 3\n\
               x = F(g, 1,\n 2); @name(\"s\\\n\") // z\n#elif 0\n#else\n#endif\n#line 5 \"q\"\n";
    for end in (0..=src.len()).filter(|i| src.is_char_boundary(*i)) {
        let (sm, d) = run(src.get(..end).unwrap_or(""));
        for x in &d.list {
            let _ = x.render(&sm);
        }
        assert!(origins(&sm).len() >= sm.expanded.text.lines().count());
    }
}
