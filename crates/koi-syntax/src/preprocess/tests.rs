//! Unit tests of the preprocessor: line fidelity, macros, conditionals, includes.

use super::{preprocess_file, preprocess_str};
use crate::source::SourceMap;
use crate::{Diagnostics, PpOptions};
use std::path::{Path, PathBuf};

pub(super) fn run_opts(text: &str, opts: &PpOptions) -> (SourceMap, Diagnostics) {
    let mut sm = SourceMap::new();
    let d = preprocess_str(&mut sm, "main.p4", text, opts);
    (sm, d)
}

pub(super) fn run(text: &str) -> (SourceMap, Diagnostics) {
    run_opts(text, &PpOptions::default())
}

/// The expanded lines.
pub(super) fn lines(sm: &SourceMap) -> Vec<&str> {
    sm.expanded.text.lines().collect()
}

/// `path:line` of each output line.
pub(super) fn origins(sm: &SourceMap) -> Vec<String> {
    let f =
        |o: &crate::source::LineOrigin| format!("{}:{}", sm.file(o.file).path.display(), o.line);
    sm.expanded.lines.iter().map(f).collect()
}

/// The first line of each rendered diagnostic.
pub(super) fn rendered(sm: &SourceMap, d: &Diagnostics) -> Vec<String> {
    let first = |x: &crate::Diagnostic| x.render(sm).lines().next().unwrap_or("").to_string();
    d.list.iter().map(first).collect()
}

/// Expands `text` and returns its non-empty output lines, trimmed, asserting no diagnostics.
pub(super) fn expand(text: &str) -> Vec<String> {
    let (sm, d) = run(text);
    assert!(d.list.is_empty(), "{:?}", rendered(&sm, &d));
    lines(&sm)
        .into_iter()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// A temporary directory removed on drop.
pub(super) struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("koi-pp-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("create dir");
        }
        std::fs::write(&p, text).expect("write file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn text_without_macros_is_kept_byte_for_byte() {
    let src = "control c() {\r\n\t apply { x = 8w0xFF; } // done\r\n/* a\n#define X\n*/ y;\n";
    let (sm, d) = run(src);
    assert!(d.list.is_empty());
    assert_eq!(
        lines(&sm),
        [
            "control c() {",
            "\t apply { x = 8w0xFF; } // done",
            "/* a",
            "#define X",
            "*/ y;"
        ]
    );
    let want: Vec<String> = (1..=5).map(|i| format!("main.p4:{i}")).collect();
    assert_eq!(origins(&sm), want);
}

#[test]
fn directives_leave_empty_lines_and_splices_join() {
    let (sm, d) = run("#define A 1\nx = A + \\\n  2;\n@name(\"a \\\nb\") y;\nz");
    assert!(d.list.is_empty());
    assert_eq!(
        lines(&sm),
        ["", "x = 1 +   2;", "", "@name(\"a b\") y;", "", "z"]
    );
    let want: Vec<String> = (1..=6).map(|i| format!("main.p4:{i}")).collect();
    assert_eq!(origins(&sm), want);
}

#[test]
fn object_like_macro_keeps_the_rest_of_the_line() {
    let (sm, _) = run("#define W 8\n    bit<W> x; /* W */ // W\n");
    assert_eq!(lines(&sm)[1], "    bit<8> x; /* W */ // W");
}

#[test]
fn function_like_with_nested_parens_and_commas() {
    let out = expand("#define F(a, b) [a|b]\nF((1, 2), g(3, (4, 5)))\nF(,)\n");
    assert_eq!(out, ["[(1, 2)|g(3, (4, 5))]", "[|]"]);
}

#[test]
fn function_like_name_without_paren_is_not_expanded() {
    let out = expand("#define f(x) <x>\nf + f (1) + f\n");
    assert_eq!(out, ["f + <1> + f"]);
}

#[test]
fn stringify_and_paste() {
    let src = "#define S(x) #x\n#define XS(x) S(x)\n#define C(a, b) a ## b\n#define N depr\n\
               S( a  +  \"q\\\"\" ) C(foo, bar) C(8, w5) XS(N) S(N) C(, x) C(y, )\n";
    let out = expand(src);
    assert_eq!(out, [r#""a + \"q\\\"\"" foobar 8w5 "depr" "N" x y"#]);
}

#[test]
fn stringified_spacing_follows_gcc() {
    let src = "#define E(f, ...) f(0, ## __VA_ARGS__)\n#define Q(a, b) [a ## b ]\n\
               #define P(a, b) (a, b)\n#define S(x) #x\n#define XS(x) S(x)\n\
               XS(E(g)) XS(Q(,)) XS(Q(1,)) XS(P(1,)) XS(. . .)\n";
    assert_eq!(expand(src), [r#""g(0)" "[ ]" "[1 ]" "(1, )" ". . .""#]);
}

#[test]
fn pasted_tokens_are_rescanned() {
    let out = expand("#define AB done\n#define C(a, b) a ## b\nC(A, B)\n");
    assert_eq!(out, ["done"]);
}

#[test]
fn variadic_macros() {
    let src = "#define V(f, ...) f(__VA_ARGS__)\n#define E(f, ...) f(0, ## __VA_ARGS__)\n\
               #define N(args...) g(args)\n#define Q(...) #__VA_ARGS__\n\
               V(g, 1, (2, 3)) E(g) E(h, 1) N(a, b) Q(x,  y)\n";
    assert_eq!(expand(src), [r#"g(1, (2, 3)) g(0) h(0, 1) g(a, b) "x, y""#]);
}

#[test]
fn no_recursive_self_expansion() {
    let src =
        "#define foo foo bar\n#define a b\n#define b a\n#define f(x) x f\nfoo\na b\nf(1)(2)\n";
    assert_eq!(expand(src), ["foo bar", "a b", "1 f(2)"]);
}

#[test]
fn arguments_are_expanded_before_substitution() {
    let src = "#define x 3\n#define f(a) f(x * (a))\n#undef x\n#define x 2\n#define g f\n\
               #define z z[0]\nf(y+1) + f(f(z)) % g(0)\n";
    assert_eq!(
        expand(src),
        ["f(2 * (y+1)) + f(2 * (f(2 * (z[0])))) % f(2 * (0))"]
    );
}

#[test]
fn no_accidental_token_pasting() {
    let out = expand("#define M -\n#define E\n-M-M\na E b\nx E+ E+y\n");
    assert_eq!(out, ["- - - -", "a b", "x + +y"]);
}

#[test]
fn pastes_follow_cpp_in_assembler_mode() {
    // What `cpp -undef -nostdinc -x assembler-with-cpp` (as p4c runs it) writes: a paste
    // that forms no token keeps both tokens, apart and without a diagnostic.
    let (sm, d) = run(
        "#define P(a, b) a ## b\nP(x, 1) P(8w, 0x1F) P(-, >) P(<, <=) P(L, \"s\") P(L, 'c')\n\
         P(x, +) P(|+, |) P(+, /) P(/, /) P(u8, \"s\") P(x, (y)) P(., .)\nP(x, ) P(, y)\n",
    );
    assert!(d.list.is_empty(), "{:?}", rendered(&sm, &d));
    assert_eq!(
        lines(&sm)[1..],
        [
            "x1 8w0x1F -> <<= L\"s\" L'c'",
            "x + |+ | + / / / u8 \"s\" x (y) . .",
            "x y",
        ]
    );
}

#[test]
fn multi_line_invocation_goes_on_its_first_line() {
    let src = "#define F(a, b) a + b\nx = F(1,\n      2) * 3;\ny F\n(4, 5) z\nw\n";
    let (sm, d) = run(src);
    assert!(d.list.is_empty());
    assert_eq!(lines(&sm), ["", "x = 1 + 2 * 3;", "", "y 4 + 5 z", "", "w"]);
    let want: Vec<String> = (1..=6).map(|i| format!("main.p4:{i}")).collect();
    assert_eq!(origins(&sm), want);
}

#[test]
fn function_like_name_at_end_of_line_without_paren() {
    let (sm, d) = run("#define F(a) a\nx F\n/* c\n */ y\n");
    assert!(d.list.is_empty());
    assert_eq!(lines(&sm), ["", "x F", "/* c", " */ y"]);
}

#[test]
fn comments_inside_invocations_are_dropped_whole() {
    let (sm, d) = run("#define F(a) a\nF(1 /* x\n y */ + 2) /* open\n close */ z\n");
    assert!(d.list.is_empty());
    assert_eq!(lines(&sm), ["", "1 + 2 /* open", "", " close */ z"]);
}

#[test]
fn strings_are_not_scanned_for_macros() {
    let out = expand("#define X 1\n@name(\"X\") x = X; // X\n");
    assert_eq!(out, ["@name(\"X\") x = 1; // X"]);
}

#[test]
fn macro_bodies_lose_their_comments() {
    let out = expand("#define X 1 /* one */ + /* two\n three */ 2 // end\nX\n");
    assert_eq!(out, ["1 + 2"]);
}

#[test]
fn predefined_and_command_line_macros() {
    let opts = PpOptions {
        include_dirs: Vec::new(),
        defines: vec![
            ("FOO".into(), None),
            ("BAR".into(), Some("3 + 4".into())),
            ("SQ(x)".into(), Some("((x)*(x))".into())),
        ],
    };
    let (sm, d) = run_opts(
        "__koi__ __LINE__\n__FILE__ FOO BAR SQ(2)\n#ifdef __P4C__\np4c\n#endif\n",
        &opts,
    );
    assert!(d.list.is_empty());
    assert_eq!(lines(&sm)[..2], ["1 1", "\"main.p4\" 1 3 + 4 ((2)*(2))"]);
    assert_eq!(lines(&sm)[3], "");
}

#[test]
fn conditionals_and_elif_chains() {
    let src = "#define V 20200408\n\
               #if V >= 20200408 && defined(V) && !defined NOPE\nnew\n#else\nold\n#endif\n\
               #if 0\na\n#elif 1 + 1 == 3\nb\n#elif (1 << 3) % 5 == 3\nc\n#elif 1\nd\n#else\ne\n#endif\n\
               #ifdef NOPE\nf\n#elif 1\ng\n#endif\n\
               #ifndef NOPE\nh\n#endif\n";
    assert_eq!(expand(src), ["new", "c", "g", "h"]);
}

#[test]
fn skipped_groups_are_not_processed() {
    let src = "#if 0\n#error not me\n#include \"nothere.p4\"\n#bogus\n#if 1 / 0\n#else\n#endif\nx\n\
               #elif 1\ny\n#endif\n#if 1\n#else\n#if 1/0\n#elif garbage(\n#endif\n#endif\n";
    assert_eq!(expand(src), ["y"]);
}

#[test]
fn if_expression_macros_and_undefined_names() {
    let src = "#define TWO 2\n#define ADD(a, b) ((a) + (b))\n#define D defined\n\
               #if ADD(TWO, 1) == 3 && UNKNOWN == 0 && D(TWO) && D NOPE == 0 && D(D)\nyes\n#endif\n";
    assert_eq!(expand(src), ["yes"]);
}

#[test]
fn block_comment_hides_directives_and_conditionals() {
    let src = "#if 1\n/*\n#endif\n*/\nin\n#endif\nout\n";
    assert_eq!(expand(src), ["/*", "#endif", "*/", "in", "out"]);
}

#[test]
fn line_directive_renames_lines() {
    let (sm, d) = run("a\n#line 10 \"file.p4\"\nb\nc\n#line 3\nd __LINE__ __FILE__\n");
    assert!(d.list.is_empty());
    let o = origins(&sm);
    assert_eq!(o[..3], ["main.p4:1", "main.p4:2", "file.p4:10"]);
    assert_eq!(o[5], "file.p4:3");
    assert_eq!(lines(&sm)[5], "d 3 \"file.p4\"");
    let file = sm.expanded.lines[2].file;
    assert_eq!(sm.file(file).line_text(10), "b");
}

#[test]
fn pragma_lines_pass_through() {
    let (sm, d) = run("#pragma once\n#  pragma foo bar\nx\n");
    assert!(d.list.is_empty());
    assert_eq!(lines(&sm), ["#pragma once", "#  pragma foo bar", "x"]);
}

#[test]
fn lines_that_are_no_directive_pass_through() {
    // cpp in assembler mode (as p4c runs it) takes them for text, not for errors: a license
    // header written with `#` comments (Planter's generated programs) preprocesses cleanly.
    let src = "#####\n# THIS FILE IS PART OF X\n# http://x.org/y\n#frob a\n  #  frob b\nx\n";
    let (sm, d) = run(src);
    assert!(d.list.is_empty(), "{:?}", d.list);
    let want = [
        "#####",
        "# THIS FILE IS PART OF X",
        "# http://x.org/y",
        "#frob a",
    ];
    assert_eq!(lines(&sm)[..4], want);
    assert_eq!(lines(&sm)[4..], ["  #  frob b", "x"]);
    // Skipped groups ignore them as before.
    assert_eq!(expand("#if 0\n#frob\n#endif\ny\n"), ["y"]);
}

#[test]
fn null_directive_is_ignored() {
    assert_eq!(expand("#\n  #  \nx\n"), ["x"]);
}

#[test]
fn include_search_order() {
    let t = TempDir::new("order");
    t.write("main/h.p4", "local");
    t.write("inc1/h.p4", "inc1");
    t.write("inc2/h.p4", "inc2");
    t.write("inc2/only2.p4", "only2");
    t.write("main/sub/s.p4", "#include \"h.p4\"");
    let main = t.write(
        "main/main.p4",
        "#include \"h.p4\"\n#include <h.p4>\n#include <only2.p4>\n#include \"sub/s.p4\"\n",
    );
    let opts = PpOptions {
        include_dirs: vec![t.0.join("inc1"), t.0.join("inc2")],
        defines: Vec::new(),
    };
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &opts);
    assert!(d.list.is_empty(), "{:?}", rendered(&sm, &d));
    let out: Vec<&str> = lines(&sm).into_iter().filter(|l| !l.is_empty()).collect();
    // sub/s.p4's "h.p4" is not in sub/, so -I dirs come next.
    assert_eq!(out, ["local", "inc1", "only2", "inc1"]);
}

#[test]
fn builtin_headers_need_no_include_dirs() {
    let (sm, d) = run("#include <core.p4>\n#include <v1model.p4>\nx\n");
    assert!(d.list.is_empty(), "{:?}", rendered(&sm, &d));
    let core = sm
        .files
        .iter()
        .find(|f| f.path == Path::new("koi/p4include/core.p4"));
    assert!(core.is_some_and(|f| f.builtin));
    assert!(
        sm.files
            .iter()
            .any(|f| f.path == Path::new("koi/p4include/v1model.p4"))
    );
    assert_eq!(lines(&sm).last(), Some(&"x"));
}

#[test]
fn builtin_headers_are_found_through_dot_segments() {
    // cpp joins "./psa.p4" to p4c's include directory when the including file's directory has
    // no psa.p4 (a program written against a local copy of a header); the built-in headers
    // stand for that directory, and `./core.p4` is the same file as `core.p4`.
    let t = TempDir::new("dotseg");
    let main = t.write(
        "main.p4",
        "#include \"./psa.p4\"\n#include <.//core.p4>\n#include \"core.p4\"\nx\n",
    );
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &PpOptions::default());
    assert!(d.list.is_empty(), "{:?}", rendered(&sm, &d));
    let core = Path::new("koi/p4include/core.p4");
    assert_eq!(sm.files.iter().filter(|f| f.path == core).count(), 1);
    assert!(
        sm.files
            .iter()
            .any(|f| f.path == Path::new("koi/p4include/psa.p4") && f.builtin)
    );
    assert_eq!(lines(&sm).last(), Some(&"x"));
}

#[test]
fn builtin_headers_win_over_include_dirs_for_angle_includes() {
    let t = TempDir::new("builtin");
    t.write("core.p4", "NOT THE BUILTIN");
    let opts = PpOptions {
        include_dirs: vec![t.0.clone()],
        defines: Vec::new(),
    };
    let (sm, d) = run_opts("#include <core.p4>\n", &opts);
    assert!(d.list.is_empty());
    assert!(!sm.expanded.text.contains("NOT THE BUILTIN"));
}

#[test]
fn guards_and_files_loaded_once() {
    let t = TempDir::new("guards");
    t.write("g.p4", "#ifndef G_P4\n#define G_P4\nguarded\n#endif\n");
    t.write("u.p4", "unguarded");
    let main = t.write(
        "m.p4",
        "#include \"g.p4\"\n#include \"g.p4\"\n#include \"u.p4\"\n#include \"u.p4\"\n",
    );
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &PpOptions::default());
    assert!(d.list.is_empty());
    let text = &sm.expanded.text;
    assert_eq!(
        text.matches("guarded").count() - text.matches("unguarded").count(),
        1
    );
    assert_eq!(text.matches("unguarded").count(), 2);
    assert_eq!(sm.files.len(), 3);
    let o = origins(&sm);
    assert!(o.iter().any(|l| l.ends_with("u.p4:1")));
}

#[test]
fn computed_include() {
    let t = TempDir::new("computed");
    t.write("arch.p4", "arch");
    let main = t.write(
        "m.p4",
        "#define HDR \"arch.p4\"\n#define SYS <core.p4>\n#include HDR\n#include SYS\n",
    );
    let mut sm = SourceMap::new();
    let d = preprocess_file(&mut sm, &main, &PpOptions::default());
    assert!(d.list.is_empty(), "{:?}", rendered(&sm, &d));
    assert!(sm.expanded.text.contains("arch"));
}
