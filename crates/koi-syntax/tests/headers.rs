//! koi's built-in architecture headers stay declaration-compatible with p4c's: the checker
//! `tests/tools/compare_headers.py` compares every declaration, in several V1MODEL_VERSION and
//! UBPF_MODEL_VERSION configurations, with p4c's headers in `../shared/reference/p4include`
//! (koi's `psa.p4` with p4c's `bmv2/psa.p4`, the one p4c's PSA programs for BMv2 include).

use std::path::PathBuf;
use std::process::Command;

#[test]
fn builtin_headers_match_p4c_declarations() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let reference = std::env::var_os("KOI_CORPUS")
        .map(|c| PathBuf::from(c).join("../reference/p4include"))
        .unwrap_or_else(|| root.join("../shared/reference/p4include"));
    if !reference.is_dir() {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!(
                    "p4c's headers absent ({}): header comparison skipped",
                    reference.display()
                )
            ),
        );
        return;
    }
    let pairs = [
        (root.join("p4include"), reference.clone()),
        (root.join("p4include/psa.p4"), reference.join("bmv2/psa.p4")),
    ];
    for (ours, theirs) in pairs {
        let out = Command::new("python3")
            .arg(root.join("tests/tools/compare_headers.py"))
            .arg(&ours)
            .arg(&theirs)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}: {}{}",
            ours.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn builtin_headers_are_compiled_in() {
    for name in koi_syntax::builtin::HEADERS {
        let text = koi_syntax::builtin::header(name).expect("built in");
        assert!(text.contains("SPDX-License-Identifier"), "{name}");
        assert!(text.len() > 1000, "{name} is suspiciously short");
    }
}
