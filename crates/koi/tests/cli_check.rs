//! The `koi check` contract that other tools rely on: exit 0 for a valid program, 1 with
//! `FILE:LINE:COL: error:` diagnostics for an invalid one, 2 for usage and I/O errors.

use std::path::PathBuf;
use std::process::{Command, Output};
use tempfile::TempDir;

fn koi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .output()
        .expect("run koi")
}

/// Writes `text` to `name` in a new temporary directory, removed when the returned guard drops.
fn temp_program(name: &str, text: impl AsRef<[u8]>) -> (TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("koi-cli-")
        .tempdir()
        .unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn valid_program_exits_zero() {
    let out = koi(&["check", &example("l2l3_acl.p4")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn library_without_main_is_valid() {
    let (_dir, p) = temp_program(
        "lib.p4",
        "#include <core.p4>\nheader h_t { bit<8> f; }\ncontrol c(inout h_t h) { apply { h.f = 1; } }\n",
    );
    let out = koi(&["check", p.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn syntax_error_exits_one_with_position() {
    let (_dir, p) = temp_program("bad.p4", "header h_t {\n  bit<8> f\n}\n");
    let out = koi(&["check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!("{}:3:1: error:", p.display());
    assert!(err.contains(&want), "wanted {want:?} in:\n{err}");
}

#[test]
fn missing_file_exits_two() {
    let out = koi(&["check", "/nonexistent/koi/prog.p4"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn usage_error_exits_two() {
    let out = koi(&["check", "--no-such-flag", "x.p4"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn defines_and_include_dirs_are_passed_to_the_preprocessor() {
    let tmp = tempfile::Builder::new()
        .prefix("koi-cli-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(dir.join("inc/w.p4"), "typedef bit<WIDTH> w_t;\n").unwrap();
    let p = dir.join("main.p4");
    std::fs::write(&p, "#include <w.p4>\nconst w_t x = 3;\n").unwrap();
    let inc = dir.join("inc");
    let out = koi(&[
        "check",
        "-I",
        inc.to_str().unwrap(),
        "-D",
        "WIDTH=16",
        p.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = koi(&["check", p.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "without -I the include is missing"
    );
}

/// The same bad declaration 10,000 times on one line (230 KB): p4c's limit of 20 diagnostics is
/// shown, each with a short excerpt, then how many more there were and the total.
#[test]
fn many_errors_on_one_long_line_are_capped_with_a_summary() {
    let (_dir, p) = temp_program("bad.p4", "const bit<8> x = y + ; ".repeat(10_000) + "\n");
    let out = koi(&["check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let shown = err.matches(": error: syntax error, unexpected ;").count();
    assert_eq!(shown, 20, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "9980 more errors not shown (koi shows the first 20)",
            "10000 errors found"
        ],
        "{err}"
    );
    assert!(
        lines.iter().all(|l| l.len() < 200),
        "excerpts are windows:\n{err}"
    );
    assert!(
        out.stderr.len() < 10_000,
        "{} bytes of output",
        out.stderr.len()
    );
}

/// An error deep inside a 4 MB line is shown with the columns around it, "..." at both cuts.
#[test]
fn excerpt_of_a_huge_line_is_a_window() {
    let text = format!("{}$ {}\n", " ".repeat(2_000_000), "x ".repeat(1_000_000));
    let (_dir, p) = temp_program("wide.p4", text);
    let out = koi(&["check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "{}:1:2000001: error: syntax error, invalid character '$'",
        p.display()
    );
    assert!(err.starts_with(&want), "{err:.2000}");
    let excerpt = err.lines().nth(1).unwrap();
    assert_eq!(
        excerpt,
        format!("  ...{}${}...", " ".repeat(60), " x".repeat(30))
    );
    assert!(
        out.stderr.len() < 2_000,
        "{} bytes of output",
        out.stderr.len()
    );
}

fn assert_io_error(out: &Output, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end(), want);
}

#[test]
fn a_program_larger_than_the_limit_is_refused() {
    let (_dir, p) = temp_program("big.p4", vec![b' '; (16 << 20) + 1]);
    let out = koi(&["check", p.to_str().unwrap()]);
    let want = format!(
        "koi: {}: file is larger than 16 MiB (koi's limit for this kind of file)",
        p.display()
    );
    assert_io_error(&out, &want);
}

#[test]
fn devices_and_directories_are_refused_not_read() {
    let out = koi(&["check", "/dev/zero"]);
    assert_io_error(&out, "koi: /dev/zero: is a device, not a regular file");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = koi(&["check", d]);
    assert_io_error(
        &out,
        &format!("koi: {d}: is a directory, not a regular file"),
    );
}

#[test]
fn a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("prog.p4");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let out = koi(&["check", fifo.to_str().unwrap()]);
    assert_io_error(
        &out,
        &format!("koi: {}: is a FIFO, not a regular file", fifo.display()),
    );
}

#[test]
fn a_program_that_is_not_utf8_is_refused() {
    let (_dir, p) = temp_program("latin1.p4", b"// caf\xe9\nconst bit<8> x = 1;\n");
    let out = koi(&["check", p.to_str().unwrap()]);
    let want = format!(
        "koi: {}: not UTF-8 text (invalid byte at offset 6)",
        p.display()
    );
    assert_io_error(&out, &want);
}

/// An include larger than the limit is reported at its `#include` line, not read.
#[test]
fn an_include_larger_than_the_limit_is_refused() {
    let (dir, p) = temp_program("inc.p4", "#include \"big.p4\"\n");
    std::fs::write(dir.path().join("big.p4"), vec![b' '; (16 << 20) + 1]).unwrap();
    let out = koi(&["check", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let want = format!(
        "{}:1:10: error: cannot read include file \"big.p4\": {}: file is larger than 16 MiB",
        p.display(),
        dir.path().join("big.p4").display()
    );
    assert!(err.starts_with(&want), "{err}");
}
