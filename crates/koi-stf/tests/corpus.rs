//! Every STF file of the p4c corpus parses (p4c's runners fail a test on any parse error).

use std::path::PathBuf;

fn corpus() -> Option<PathBuf> {
    let p = std::env::var_os("KOI_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus")
        });
    p.is_dir().then_some(p)
}

#[test]
fn every_corpus_stf_file_parses() {
    let Some(root) = corpus() else {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("corpus absent: STF corpus parse test skipped")
            ),
        );
        return;
    };
    let mut n = 0;
    let mut failures = Vec::new();
    for arch in std::fs::read_dir(root.join("stf")).expect("stf dir") {
        let arch = arch.expect("entry").path();
        for f in std::fs::read_dir(&arch).expect("arch dir") {
            let f = f.expect("entry").path();
            if f.extension().is_some_and(|e| e == "stf") {
                n += 1;
                let text = std::fs::read_to_string(&f).expect("read");
                if let Err(e) = koi_stf::parse(&text) {
                    failures.push(format!("{}: {:?}", f.display(), e));
                }
            }
        }
    }
    println!("{n} STF files parsed, {} failed", failures.len());
    assert!(n > 150, "expected the corpus's STF files, found {n}");
    assert!(failures.is_empty(), "{failures:#?}");
}
