//! BRIEF §4's invariant on p4c's STF corpus: for every program, the switch state after the
//! STF's control-plane statements, then every packet of the STF twice (the second pass mostly
//! hits megaflows), through the cached datapath and through the interpreter alone: each
//! packet's outcome (outputs, drops, digests, report) and the final state (registers,
//! counters, meters, table hit counters, digests) must be identical. The datapath compiles
//! every program to native code on its first hit (`jit_after: Some(1)`), so the second pass
//! also compares the JIT's code with the interpreter. Without the corpus the test says so and
//! passes.

use koi_conformance::compile;
use koi_datapath::{Datapath, DatapathConfig, DatapathStats};
use koi_interp::Interpreter;
use koi_state::ManualClock;
use koi_stf::Stmt;
use std::path::PathBuf;

fn corpus() -> Option<PathBuf> {
    let p = std::env::var_os("KOI_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus")
        });
    p.is_dir().then_some(p)
}

/// Runs one corpus test both ways; `Err` describes the first difference. `Ok(None)`: the
/// test cannot run (does not compile, bad STF, no state).
fn differential(
    program: &std::path::Path,
    stf: &std::path::Path,
    opts: &koi_syntax::PpOptions,
) -> Result<Option<DatapathStats>, String> {
    let mut opts = opts.clone();
    if let Some(dir) = program.parent() {
        opts.include_dirs.push(dir.to_path_buf());
    }
    let Ok(text) = std::fs::read_to_string(stf) else {
        return Ok(None);
    };
    let Ok(lines) = koi_stf::parse(&text) else {
        return Ok(None);
    };
    let Ok(compiled) = compile(program, &opts) else {
        return Ok(None);
    };
    let p = &compiled.pipeline;
    let Ok((state, _)) = koi_conformance::stf::prepare(p, &lines) else {
        return Ok(None);
    };
    let config = DatapathConfig {
        jit_after: Some(1),
        ..DatapathConfig::default()
    };
    let dp = Datapath::with_config(p, koi_interp::Options::default(), config);
    let (Ok(mut interp), Ok(mut dp)) = (Interpreter::new(p), dp) else {
        return Ok(None);
    };
    let (mut si, mut sd) = (state.clone(), state);
    let (ci, cd) = (ManualClock::new(0), ManualClock::new(0));
    let packets: Vec<(u32, u64, &[u8])> = lines
        .iter()
        .filter_map(|l| match &l.stmt {
            Stmt::Packet { port, data } => Some((l.line, *port, &data[..])),
            _ => None,
        })
        .collect();
    for pass in 1..=2 {
        for (line, port, data) in &packets {
            let a = interp.process(&mut si, data, *port, &ci);
            let b = dp.process(&mut sd, data, *port, &cd);
            ci.advance_ns(1_000);
            cd.advance_ns(1_000);
            if a != b {
                return Err(format!(
                    "pass {pass}, packet of line {line}:\n  interpreter {a:?}\n  datapath    {b:?}"
                ));
            }
        }
    }
    if format!("{si:?}") != format!("{sd:?}") {
        let (a, b) = (format!("{si:?}"), format!("{sd:?}"));
        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let from = at.saturating_sub(200);
        return Err(format!(
            "the final states differ:\n  interpreter ...{}\n  datapath    ...{}",
            &a[from..(at + 100).min(a.len())],
            &b[from..(at + 100).min(b.len())]
        ));
    }
    if std::env::var_os("KOI_DIFF_REASONS").is_some() {
        eprintln!("{}: {:?}", program.display(), dp.not_compiled_reasons());
    }
    Ok(Some(dp.stats()))
}

/// Compares every case; returns how many ran, the summed statistics and the differences.
fn compare_all(
    cases: &[koi_conformance::corpus::TestCase],
    opts: &koi_syntax::PpOptions,
) -> (usize, DatapathStats, Vec<String>) {
    let (mut ran, mut total, mut failures) = (0, DatapathStats::default(), Vec::new());
    for c in cases {
        match differential(&c.program, &c.stf, opts) {
            Ok(Some(s)) => {
                ran += 1;
                if s.diverged > 0 {
                    println!(
                        "{}: {} replays diverged (finished by evaluation)",
                        c.name, s.diverged
                    );
                }
                total.microflow_hits += s.microflow_hits;
                total.megaflow_hits += s.megaflow_hits;
                total.misses += s.misses;
                total.uncacheable += s.uncacheable;
                total.installs += s.installs;
                total.diverged += s.diverged;
                total.too_short += s.too_short;
                total.compiled += s.compiled;
                total.compiled_hits += s.compiled_hits;
                total.not_compiled += s.not_compiled;
                total.compile_mismatch += s.compile_mismatch;
                total.fast_parse_mismatch += s.fast_parse_mismatch;
                total.jit_compiled += s.jit_compiled;
                total.jit_templates += s.jit_templates;
                total.jit_not_compiled += s.jit_not_compiled;
                total.jit_mismatch += s.jit_mismatch;
                if s.compile_mismatch + s.fast_parse_mismatch + s.jit_mismatch > 0 {
                    failures.push(format!(
                        "{}: {} compiled programs differed from the interpreter, {} fast-parser keys differed, {} native programs differed",
                        c.name, s.compile_mismatch, s.fast_parse_mismatch, s.jit_mismatch
                    ));
                }
            }
            Ok(None) => {}
            Err(e) => failures.push(format!("{}: {e}", c.name)),
        }
    }
    (ran, total, failures)
}

#[test]
fn cached_datapath_equals_interpreter_on_the_corpus() {
    let Some(root) = corpus() else {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("corpus absent: differential test skipped")
            ),
        );
        return;
    };
    let opts = koi_syntax::PpOptions {
        include_dirs: vec![root.join("../reference/p4include")],
        defines: Vec::new(),
    };
    let mut cases = koi_conformance::corpus::discover(&root.join("stf/v1model"));
    for arch in ["ubpf", "psa", "ebpf", "xdp"] {
        cases.extend(koi_conformance::corpus::discover(
            &root.join("stf").join(arch),
        ));
    }
    assert!(!cases.is_empty());
    let (ran, total, failures) = compare_all(&cases, &opts);
    println!(
        "{ran} of {} programs compared; totals: {total:?}",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran > 100, "only {ran} programs ran");
    // The cache is really used: the second pass of most programs hits.
    assert!(total.microflow_hits + total.megaflow_hits > total.misses / 2);
    // And the JIT: every compiled program that sends a packet gets native code.
    assert!(total.jit_compiled > 100, "{total:?}");
    assert_eq!(total.jit_not_compiled, 0, "{total:?}");
    assert!(
        total.jit_templates > 0,
        "no parse-path template got native code"
    );
}

#[test]
fn cached_datapath_equals_interpreter_on_own_stf_tests() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/stf");
    let cases = koi_conformance::corpus::discover(&root);
    assert!(cases.len() >= 10);
    let (ran, total, failures) = compare_all(&cases, &koi_syntax::PpOptions::default());
    println!(
        "{ran} of {} programs compared; totals: {total:?}",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(ran, cases.len());
}
