//! `koi run` with pcap file ports (no privileges needed): the frames of `in.pcap` on port 1
//! come out on port 2's file in order, SIGINT stops the switch with exit code 0, and the
//! printed counters match.

use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(20);

fn frame(seq: u8) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x88, 0xb5, seq,
    ];
    f.resize(60 + usize::from(seq), seq);
    f
}

/// The complete records of a pcap file that may still be being written.
fn records(p: &Path) -> Vec<Vec<u8>> {
    let Ok(f) = File::open(p) else {
        return Vec::new();
    };
    let Ok(mut r) = PcapReader::new(f) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    while let Some(Ok(p)) = r.next_packet() {
        v.push(p.data.into_owned());
    }
    v
}

#[test]
fn koi_run_forwards_a_pcap_file_and_stops_on_sigint() {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("run_pcap_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmpdir");
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    let sent: Vec<Vec<u8>> = (0..50).map(frame).collect();
    {
        let mut w = PcapWriter::new(File::create(&inp).expect("create")).expect("writer");
        for p in &sent {
            w.write_packet(&PcapPacket::new(Duration::ZERO, p.len() as u32, p))
                .expect("write");
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(["run", "--grpc", "none"])
        .arg(root.join("examples/l2_forward.p4"))
        .arg("--entries")
        .arg(root.join("examples/l2_forward.entries"))
        .arg("--port")
        .arg(format!("1=pcap:{},", inp.display()))
        .arg("--port")
        .arg(format!("2=pcap:,{}", out.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start koi run");

    let deadline = Instant::now() + PATIENCE;
    while records(&out).len() < sent.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline + PATIENCE {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    assert!(ok, "kill -INT");
    assert!(status.success(), "{status:?}\n{stdout}");
    assert_eq!(records(&out), sent);
    let tx_bytes: usize = sent.iter().map(Vec::len).sum();
    assert!(
        stdout.contains(&format!(
            "port 1 (pcap:{},): rx 50 pkts {tx_bytes} bytes, tx 0 pkts",
            inp.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("rx 0 pkts 0 bytes, tx 50 pkts {tx_bytes} bytes")),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
