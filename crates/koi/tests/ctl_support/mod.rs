//! Helpers shared by the tests that run `koi run` on pcap files and talk to it with `koi ctl`:
//! writing and counting pcap records, running `koi ctl`.

#![allow(dead_code)]

use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A bound on waiting for something that should happen; never a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh scratch directory `PREFIX_NAME_PID` under the target's temporary directory.
pub fn tmpdir(prefix: &str, name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{prefix}_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmpdir");
    d
}

/// An Ethernet frame from MAC ...0a to MAC ...0b with a test ethertype.
pub fn frame(seq: u8) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x88, 0xb5, seq,
    ];
    f.resize(60, seq);
    f
}

/// Writes `frames` to a new pcap file at `p`.
pub fn write_pcap(p: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::new(File::create(p).expect("create")).expect("writer");
    for f in frames {
        w.write_packet(&PcapPacket::new(Duration::ZERO, f.len() as u32, f))
            .expect("write");
    }
}

/// The complete records of a pcap file that may still be being written.
pub fn records(p: &Path) -> usize {
    let Ok(f) = File::open(p) else { return 0 };
    let Ok(mut r) = PcapReader::new(f) else {
        return 0;
    };
    let mut n = 0;
    while let Some(Ok(_)) = r.next_packet() {
        n += 1;
    }
    n
}

/// Runs `koi ctl --ctl SOCK ARGS...`.
pub fn ctl(sock: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_koi"))
        .arg("ctl")
        .arg("--ctl")
        .arg(sock)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run koi ctl")
}

/// `koi ctl` that must succeed; its stdout.
pub fn ok(sock: &Path, args: &[&str]) -> String {
    let o = ctl(sock, args);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert_eq!(o.status.code(), Some(0), "koi ctl {args:?}: {out}{err}");
    out
}
