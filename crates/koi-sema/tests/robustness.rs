//! The checker never panics: pathological programs (huge widths, deep nesting, recursive
//! types) and randomly mutated programs give diagnostics, not crashes.
mod common;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Parses and checks `src` on a thread with a generous stack, returning false on a panic.
fn survives(src: &str) -> bool {
    let s = src.to_string();
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || catch_unwind(AssertUnwindSafe(|| common::run(&s))).is_ok())
        .map(|h| h.join().unwrap_or(false))
        .unwrap_or(false)
}

#[test]
fn pathological_programs() {
    let deep_expr = format!("const int x = {}1{};\n", "(".repeat(150), ")".repeat(150));
    let deep_block = format!(
        "control c() {{ apply {{ {} }} }}\n",
        "{".repeat(150) + &"}".repeat(150)
    );
    let long_concat = format!(
        "const bit<{}> x = {};\n",
        8 * 400,
        vec!["8w1"; 400].join(" ++ ")
    );
    for src in [
        "header h { bit<99999999999> a; }\n",
        "header h { bit<4294967296> a; }\nconst bit<8> y = h.minSizeInBits();\n",
        "struct S { S s; }\nconst S s = { s = { s = 1 } };\n",
        "const int x = 1 << 99999999999;\n",
        "const int x = 1 >> 99999999999;\n",
        "const int a = 1 << 65536;\nconst int b = a * a;\nconst int c = b * b;\nconst int d = c * c;\nconst int e = d * d;\nconst int f = e * e;\nconst int g = f * f;\nconst int h = g * g;\n",
        "header h { bit<8> a; }\nstruct s { h[99999999] hs; }\n",
        "typedef bit<8>[65536] A;\ncontrol c(inout A a) { apply { a = { 1 }; } }\n",
        "const bit<65536> a = 1;\nconst bit<65536> b = a * a * a * a;\n",
        "const bit<8> x = 8w1[7:0][7:0];\n",
        "control c() { apply { switch (1) { } } }\n",
        &deep_expr,
        &deep_block,
        &long_concat,
    ] {
        assert!(survives(src), "panic on:\n{src}");
    }
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SEED_PROGRAM: &str = r#"
#include <core.p4>
header H { bit<8> a; bit<16> b; }
struct S { H h; H[2] hs; bit<8> m; }
enum bit<8> E { X = 1, Y = 2 }
extern R<T> { R(bit<32> n); T read(in bit<32> i); void write(in bit<32> i, in T v); }
parser P(packet_in p, out S s) {
    value_set<bit<8>>(4) vs;
    state start { p.extract(s.h); transition select(s.h.a, s.h.b) { (1, 2): n; (vs, _): accept; default: reject; } }
    state n { p.extract(s.hs.next); transition accept; }
}
control C(inout S s) {
    R<bit<8>>(16) r;
    action a(bit<8> v) { s.m = v + (bit<8>)E.X; r.write(0, v); }
    table t { key = { s.h.a: exact; s.h.b: ternary; } actions = { a; NoAction; } default_action = a(3);
              const entries = { (1, 2 &&& 3): a(1); } }
    apply { if (t.apply().hit) { s.m = s.m |+| 1; } switch (t.apply().action_run) { a: { } default: { } } }
}
parser PT(packet_in p, out S s);
control CT(inout S s);
package Top(PT p, CT c);
Top(P(), C()) main;
"#;

#[test]
fn mutated_programs_never_panic() {
    let mut seeds: Vec<String> = vec![SEED_PROGRAM.to_string()];
    let corpus =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/samples");
    for name in [
        "issue1107.p4",
        "table-entries-ternary-bmv2.p4",
        "generic1.p4",
        "enumCast.p4",
    ] {
        if let Ok(t) = std::fs::read_to_string(corpus.join(name)) {
            seeds.push(t);
        }
    }
    // KOI_FUZZ_ROUNDS=N runs N rounds over every sample of the corpus (a longer campaign).
    let rounds = match std::env::var("KOI_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(n) => {
            if let Ok(rd) = std::fs::read_dir(&corpus) {
                for e in rd.flatten() {
                    if e.path().extension().is_some_and(|x| x == "p4") {
                        seeds.extend(std::fs::read_to_string(e.path()));
                    }
                }
            }
            n
        }
        None => 300,
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..rounds {
        let seed = &seeds[(round * 7919 + rng.below(7)) % seeds.len()];
        let mut tokens: Vec<&str> = seed
            .split_inclusive(|c: char| c.is_whitespace() || ";{}(),<>".contains(c))
            .collect();
        for _ in 0..1 + rng.below(4) {
            if tokens.is_empty() {
                break;
            }
            let i = rng.below(tokens.len());
            match rng.below(5) {
                3 => {
                    // Replace a word with another word of the program (names, keywords, numbers).
                    let words: Vec<usize> = (0..tokens.len())
                        .filter(|k| {
                            tokens[*k]
                                .trim()
                                .chars()
                                .all(|c| c.is_alphanumeric() || c == '_')
                        })
                        .collect();
                    if let (Some(&a), Some(&b)) = (
                        words.get(rng.below(words.len())),
                        words.get(rng.below(words.len())),
                    ) {
                        tokens[a] = tokens[b];
                    }
                }
                4 => {
                    const ODD: [&str; 6] =
                        ["0 ", "-1 ", "99999999999999 ", "8w300 ", "(bit<0>)", "{} "];
                    tokens.insert(i, ODD[rng.below(ODD.len())]);
                }
                0 => {
                    tokens.remove(i);
                }
                1 => {
                    let j = rng.below(tokens.len());
                    tokens.insert(i, tokens[j]);
                }
                _ => {
                    let j = rng.below(tokens.len());
                    tokens.swap(i, j);
                }
            }
        }
        let src = tokens.concat();
        assert!(survives(&src), "panic on mutated program:\n{src}");
    }
}

#[test]
fn deep_nesting_fits_the_default_test_stack() {
    // Runs on the test harness's own (2 MiB) thread.
    let n = 250;
    let expr = format!("const int x = {}1{};\n", "(1 + ".repeat(n), ")".repeat(n));
    let _ = common::run(&expr);
    let stmts = format!(
        "control c(inout bit<8> v) {{ apply {{ {} v = 1; {} }} }}\n",
        "if (true) {".repeat(n),
        "}".repeat(n)
    );
    let _ = common::run(&stmts);
    let both = format!(
        "control c(inout bit<8> v) {{ apply {{ {} v = {}1{}; {} }} }}\n",
        "if (true) {".repeat(n),
        "(1 + ".repeat(n),
        ")".repeat(n),
        "}".repeat(n)
    );
    let _ = common::run(&both);
    let ty = format!(
        "const {}bit<8>{} x = 1;\n",
        "tuple<".repeat(n),
        ">".repeat(n)
    );
    let _ = common::run(&ty);
}

#[test]
fn the_checker_bounds_its_own_recursion() {
    use koi_syntax::Span;
    use koi_syntax::ast::*;
    // A tree deeper than any the parser produces, built directly, on the default test stack.
    let mut id = 0u32;
    let mut mk = |kind: ExprKind| {
        id += 1;
        Expr {
            id: NodeId(id),
            kind,
            span: Span::new(1, 2),
        }
    };
    let mut e = mk(ExprKind::Bool(true));
    for _ in 0..2000 {
        e = mk(ExprKind::Unary(UnOp::Not, Box::new(e)));
    }
    let decl = Decl {
        annotations: Vec::new(),
        kind: DeclKind::Const {
            ty: Type {
                kind: TypeKind::Bool,
                span: Span::new(1, 2),
            },
            name: Ident::new("x", Span::new(3, 4)),
            value: e,
        },
        span: Span::new(1, 5),
    };
    let prog = Program { decls: vec![decl] };
    let (_, diags) = koi_sema::check(&prog, &koi_sema::CheckOptions::default());
    assert!(
        diags
            .list
            .iter()
            .any(|d| d.message.contains("nested too deeply"))
    );
}
