//! Every file koi reads is read with a size limit, and what is not a regular file (a device, a
//! directory, a FIFO) is refused: `koi trace`, `koi bench` and `koi test` exit 2 with the
//! file's name and the reason, as `koi check` does, for the program, `--entries` and the STF
//! test.

use std::process::{Command, Output};

fn koi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(args)
        .output()
        .expect("run koi")
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn assert_refused(out: &Output, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(want), "wanted {want:?} in:\n{err}");
}

const PACKET: &str = "020000000001020000000002080045000014000000004000000000000000000000000000";

#[test]
fn trace_refuses_a_device_as_the_program_or_the_entries() {
    let out = koi(&["trace", "/dev/zero", "--packet", PACKET]);
    assert_refused(&out, "/dev/zero: is a device, not a regular file");
    let prog = example("l2_forward.p4");
    let out = koi(&["trace", &prog, "--entries", "/dev/zero", "--packet", PACKET]);
    assert_refused(&out, "koi: /dev/zero: is a device, not a regular file");
}

#[test]
fn bench_refuses_a_directory_as_the_entries() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let prog = example("l2_forward.p4");
    let out = koi(&[
        "bench",
        &prog,
        "--entries",
        d,
        "--flows",
        "1",
        "--seconds",
        "0",
    ]);
    assert_refused(
        &out,
        &format!("koi: {d}: is a directory, not a regular file"),
    );
}

#[test]
fn entries_larger_than_the_limit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.entries");
    let f = std::fs::File::create(&big).unwrap();
    // A sparse file: its size is what counts, nothing is written.
    f.set_len((256 << 20) + 1).unwrap();
    let prog = example("l2_forward.p4");
    let b = big.to_str().unwrap();
    let out = koi(&["trace", &prog, "--entries", b, "--packet", PACKET]);
    assert_refused(
        &out,
        &format!("koi: {b}: file is larger than 256 MiB (koi's limit for this kind of file)"),
    );
}

#[test]
fn test_refuses_a_device_as_the_stf_or_the_program() {
    let prog = example("l2_forward.p4");
    let out = koi(&["test", &prog, "/dev/zero"]);
    assert_refused(&out, "koi: /dev/zero: is a device, not a regular file");
    let dir = tempfile::tempdir().unwrap();
    let stf = dir.path().join("t.stf");
    std::fs::write(&stf, "packet 1 00\n").unwrap();
    let out = koi(&["test", "/dev/null", stf.to_str().unwrap()]);
    assert_refused(&out, "koi: /dev/null: is a device, not a regular file");
}

/// v1model's port numbers are 9 bits: a wider one is refused, not cut short (512 would have
/// become port 0).
#[test]
fn port_numbers_wider_than_the_architecture_are_refused() {
    let prog = example("l2_forward.p4");
    let out = koi(&["trace", &prog, "--port", "512", "--packet", PACKET]);
    assert_refused(
        &out,
        "koi: --port 512: port 512 does not fit the program's 9-bit port numbers (0 to 511)",
    );
    let out = koi(&[
        "bench",
        &prog,
        "--port",
        "513",
        "--flows",
        "1",
        "--seconds",
        "0",
    ]);
    assert_refused(&out, "koi: --port 513: port 513 does not fit");
    let dir = tempfile::tempdir().unwrap();
    let pcap = format!("1000=pcap:,{}", dir.path().join("out.pcap").display());
    let sock = dir.path().join("koi.sock");
    let out = koi(&[
        "run",
        "--grpc",
        "none",
        &prog,
        "--port",
        &pcap,
        "--ctl",
        sock.to_str().unwrap(),
    ]);
    assert_refused(&out, "koi: --port 1000: port 1000 does not fit");
}

/// `koi trace` and `koi bench` take packets on the same port by default: 1.
#[test]
fn trace_takes_packets_on_port_1_by_default() {
    let prog = example("l2_forward.p4");
    let entries = example("l2_forward.entries");
    let out = koi(&["trace", &prog, "--entries", &entries, "--packet", PACKET]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // l2_forward's entries send port 1's packets to port 2.
    assert!(text.contains("result: port 2:"), "{text}");
}
