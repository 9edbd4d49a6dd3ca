//! Every program of the STF corpus (`stf/v1model`, `stf/ubpf`) that compiles gets a flow-key
//! layout without panicking; prints the distribution of key widths and how many programs
//! have state-dependent decisions.
//!
//! The corpus is `$KOI_CORPUS`, by default `../../../shared/corpus` from this crate; its
//! include directory is `<corpus>/../reference/p4include`. Skipped when absent.

mod common;

use koi_datapath::{FlowKeyLayout, stages};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    match std::env::var_os("KOI_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    }
}

#[test]
fn every_corpus_program_gets_a_layout() {
    let corpus = corpus_dir();
    let include = corpus.join("../reference/p4include");
    let include = include.is_dir().then_some(include.as_path());
    let mut programs = Vec::new();
    for sub in ["stf/v1model", "stf/ubpf"] {
        let Ok(rd) = std::fs::read_dir(corpus.join(sub)) else {
            continue;
        };
        let mut v: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "p4"))
            .collect();
        v.sort();
        programs.extend(v);
    }
    if programs.is_empty() {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("corpus not found at {}: skipped", corpus.display())
            ),
        );
        return;
    }
    let (mut laid_out, mut failed, mut with_state) = (0, 0, 0);
    let mut widths: BTreeMap<usize, usize> = BTreeMap::new();
    for path in &programs {
        let Ok(p) = common::compile_file(path, include) else {
            failed += 1;
            continue;
        };
        let l = FlowKeyLayout::new(&p);
        laid_out += 1;
        *widths.entry(l.key_words()).or_default() += 1;
        if l.state_dependent().next().is_some() {
            with_state += 1;
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
            let first = l
                .state_dependent()
                .next()
                .map(|d| d.location.clone())
                .unwrap_or_default();
            println!("state-dependent: {name}: {first}");
        }
        // Invariants: fields are disjoint and in bounds; stages partition the key.
        let mut end = 0;
        for f in l.fields() {
            assert!(
                f.key_offset >= end,
                "{}: overlapping fields",
                path.display()
            );
            end = f.key_offset + f.width;
        }
        assert!(end as usize <= l.key_words() * 64);
        let st = stages(&l);
        assert!(
            koi_cache::StageLayout::new(l.key_words(), &st).is_ok(),
            "{}: {st:?}",
            path.display()
        );
        // Extraction of a zero PHV gives a zero key.
        let phv = vec![0u8; (p.phv.width as usize).div_ceil(8)];
        let mut key = vec![1u64; l.key_words()];
        l.extract(&phv, &mut key);
        assert!(key.iter().all(|&w| w == 0));
    }
    println!("programs: {} laid out, {failed} did not compile", laid_out);
    println!("key widths (words: programs): {widths:?}");
    println!("programs with state-dependent decisions: {with_state}");
    assert!(laid_out > 0);
}
