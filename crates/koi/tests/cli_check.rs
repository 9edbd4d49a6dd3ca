//! The `koi check` contract that other tools rely on: exit 0 for a valid program, 1 with
//! `FILE:LINE:COL: error:` diagnostics for an invalid one, 2 for usage and I/O errors.

use std::path::PathBuf;
use std::process::{Command, Output};

fn koi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .output()
        .expect("run koi")
}

fn temp_program(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("koi-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
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
    let p = temp_program(
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
    let p = temp_program("bad.p4", "header h_t {\n  bit<8> f\n}\n");
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
    let dir = std::env::temp_dir().join(format!("koi-cli-{}-inc", std::process::id()));
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
