//! Fuzz target over packets x programs: p4c's v1model, ubpf, psa, ebpf and xdp STF programs
//! (with the table entries of their STF files) and koi's examples, compiled once, then
//! arbitrary packets on arbitrary ports through the reference interpreter, and three times
//! through the program's cached datapath (kept across inputs, native code from a program's
//! first hit): the slow path, then hits, then native code. Any panic is a bug: a malformed
//! packet is a parser error or a counted drop; so is any difference between the datapath's
//! outcome and the interpreter's.
#![no_main]

use koi_datapath::{Datapath, DatapathConfig};
use koi_interp::Interpreter;
use koi_ir::Pipeline;
use koi_state::{ManualClock, State};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
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
        for arch in ["v1model", "ubpf", "psa", "ebpf", "xdp"] {
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

/// A program's interpreter and cached datapath, kept across inputs: their random generators
/// advance in step (a compiled program draws what the interpreter draws).
type Pair = (Interpreter<'static>, Datapath<'static>);

thread_local! {
    static PAIRS: RefCell<Vec<Option<Pair>>> = const { RefCell::new(Vec::new()) };
}

fuzz_target!(|data: &[u8]| {
    let progs = programs();
    if progs.is_empty() || data.len() < 2 {
        return;
    }
    let i = data[0] as usize % progs.len();
    let p = &progs[i];
    let port = u64::from(data[1] % 16);
    let pkt = &data[2..];
    PAIRS.with(|pairs| {
        let mut pairs = pairs.borrow_mut();
        if pairs.len() < progs.len() {
            pairs.resize_with(progs.len(), || None);
        }
        if pairs[i].is_none() {
            let config = DatapathConfig {
                jit_after: Some(1),
                seed: Some(1),
                ..DatapathConfig::default()
            };
            // Programs with loops (p4c's forloop tests) may run a million blocks per packet;
            // a lower bound, the same for both, keeps an input within the fuzzer's timeout
            // (both abandon such a packet the same way).
            let opts = koi_interp::Options {
                max_steps: 20_000,
                ..koi_interp::Options::default()
            };
            let dp = Datapath::with_config(&p.pipeline, opts.clone(), config);
            let interp = Interpreter::with_options(&p.pipeline, opts);
            pairs[i] = interp.ok().zip(dp.ok());
        }
        let Some((interp, dp)) = pairs[i].as_mut() else {
            return;
        };
        // The slow path, then a hit (its program compiled to native code), then native code.
        for round in 0..3 {
            let (mut si, mut sd) = (p.state.clone(), p.state.clone());
            let want = interp.process(&mut si, pkt, port, &ManualClock::new(0));
            let got = dp.process(&mut sd, pkt, port, &ManualClock::new(0));
            assert_eq!(
                got, want,
                "round {round}: the cached datapath differs from the interpreter"
            );
        }
        // The packet, a variant with one byte changed, and the packet again, in one batch
        // (`Datapath::process_batch`): each gives what the interpreter gives it in turn, on
        // one state.
        let mut other = pkt.to_vec();
        if let Some(b) = other.get_mut(usize::from(data[1]) % pkt.len().max(1)) {
            *b ^= 0x5a;
        }
        let batch = [pkt, &other[..], pkt];
        let (mut si, mut sd) = (p.state.clone(), p.state.clone());
        let clock = ManualClock::new(0);
        let want: Vec<_> = batch
            .iter()
            .map(|pkt| {
                interp.process(&mut si, pkt, port, &clock).map(|o| {
                    let outs: Vec<_> = o
                        .outputs
                        .iter()
                        .map(|x| (x.port, x.bytes.clone()))
                        .collect();
                    (outs, o.report.drops, o.report.aborted)
                })
            })
            .collect();
        let mut outs = vec![Vec::new(); 3];
        let mut sums = vec![None; 3];
        dp.process_batch(
            &mut sd,
            &batch,
            port,
            &clock,
            &mut |k, to, b| outs[k].push((to, b.to_vec())),
            &mut |k, r| sums[k] = Some(r.cloned().map_err(Clone::clone)),
        );
        for (k, w) in want.iter().enumerate() {
            let got = match sums[k].take() {
                Some(Ok(s)) => Ok((std::mem::take(&mut outs[k]), s.drops, s.aborted)),
                Some(Err(e)) => Err(e),
                None => panic!("packet {k} of the batch had no summary"),
            };
            assert_eq!(
                got.as_ref().map_err(|e| e.to_string()),
                w.as_ref().map_err(|e| e.to_string()),
                "batch packet {k}: the cached datapath differs from the interpreter"
            );
        }
        let st = dp.stats();
        assert_eq!(
            st.compile_mismatch + st.fast_parse_mismatch + st.jit_mismatch,
            0,
            "{st:?}"
        );
    });
});
