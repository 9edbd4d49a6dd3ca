//! Fuzz target over packets x programs: p4c's v1model and ubpf STF programs (with the table
//! entries of their STF files) and koi's examples, compiled once, then arbitrary packets on
//! arbitrary ports through the reference interpreter. Any panic is a bug: a malformed packet
//! is a parser error or a counted drop.
#![no_main]

use koi_interp::Interpreter;
use koi_ir::Pipeline;
use koi_state::{ManualClock, State};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

struct Prog {
    pipeline: Pipeline,
    state: State,
}

fn programs() -> &'static Vec<Prog> {
    static P: OnceLock<Vec<Prog>> = OnceLock::new();
    P.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let corpus = std::env::var_os("KOI_CORPUS")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("../shared/corpus"));
        let opts = koi_syntax::PpOptions {
            include_dirs: vec![corpus.join("../reference/p4include")],
            defines: Vec::new(),
        };
        let mut cases: Vec<(PathBuf, Option<PathBuf>)> =
            vec![(root.join("examples/l2l3_acl.p4"), None)];
        for arch in ["v1model", "ubpf"] {
            for c in koi_conformance::corpus::discover(&corpus.join("stf").join(arch)) {
                cases.push((c.program, Some(c.stf)));
            }
        }
        let mut out = Vec::new();
        for (prog, stf) in cases {
            let Ok(c) = koi_conformance::compile(&prog, &opts) else {
                continue;
            };
            let lines = stf
                .and_then(|s| std::fs::read_to_string(s).ok())
                .and_then(|t| koi_stf::parse(&t).ok())
                .unwrap_or_default();
            let Ok((state, _)) = koi_conformance::stf::prepare(&c.pipeline, &lines) else {
                continue;
            };
            out.push(Prog {
                pipeline: c.pipeline,
                state,
            });
        }
        eprintln!("fuzzing packets through {} programs", out.len());
        out
    })
}

fuzz_target!(|data: &[u8]| {
    let progs = programs();
    if progs.is_empty() || data.len() < 2 {
        return;
    }
    let p = &progs[data[0] as usize % progs.len()];
    let port = u64::from(data[1] % 16);
    let mut state = p.state.clone();
    let Ok(mut interp) = Interpreter::new(&p.pipeline) else {
        return;
    };
    let _ = interp.process(&mut state, &data[2..], port, &ManualClock::new(0));
});
