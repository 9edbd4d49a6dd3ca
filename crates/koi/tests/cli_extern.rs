//! `--extern FILE` on the command line: `koi test`, `koi trace` and `koi conformance` (with a
//! directory's `EXTERNS.tsv`) run a program whose extern function is implemented in C, and
//! refuse it, naming the function, without one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROG: &str = r#"#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; bit<8> y; }
struct hs_t { h_t h; }
struct m_t { }
extern bit<8> add3(in bit<8> x);
parser P(packet_in pk, out hs_t hd, inout m_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control V(inout hs_t hd, inout m_t m) { apply { } }
control I(inout hs_t hd, inout m_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 2; hd.h.y = add3(hd.h.x); }
}
control E(inout hs_t hd, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hd, inout m_t m) { apply { } }
control D(packet_out pk, in hs_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

const C: &str = "#include <stdint.h>\nuint8_t add3(uint8_t x) { return x + 3; }\n";

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli_extern_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("tests")).unwrap();
    std::fs::write(d.join("tests/add.p4"), PROG).unwrap();
    std::fs::write(d.join("tests/add.stf"), "packet 1 05 00\nexpect 2 05 08\n").unwrap();
    std::fs::write(d.join("add3.c"), C).unwrap();
    d
}

fn koi(d: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .current_dir(d)
        .env("KOI_CACHE_DIR", d.join("cache"))
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn koi_test_and_trace_call_the_c_function() {
    let d = dir("test");
    let o = koi(
        &d,
        &[
            "test",
            "tests/add.p4",
            "tests/add.stf",
            "--extern",
            "add3.c",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).starts_with("PASS"), "{}", text(&o));
    let o = koi(&d, &["test", "tests/add.p4", "tests/add.stf"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains("extern function add3") && text(&o).contains("--extern FILE"),
        "{}",
        text(&o)
    );
    let o = koi(
        &d,
        &[
            "trace",
            "tests/add.p4",
            "--packet",
            "0700",
            "--extern",
            "add3.c",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("result: port 2: 2 bytes: 070a"),
        "{}",
        text(&o)
    );
}

#[test]
fn koi_conformance_reads_externs_tsv() {
    let d = dir("conf");
    let o = koi(&d, &["conformance", "tests"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("0 passed, 1 failed"), "{}", text(&o));
    std::fs::write(d.join("tests/EXTERNS.tsv"), "add\t../add3.c\n").unwrap();
    let o = koi(&d, &["conformance", "tests"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("1 passed, 0 failed"), "{}", text(&o));
}
