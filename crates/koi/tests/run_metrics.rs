//! `koi run --metrics ADDR` serves Prometheus metrics: per-port packet and byte counters that
//! follow the traffic, drops by reason, and table entry counts; other paths get 404.

use pcap_file::pcap::{PcapPacket, PcapWriter};
use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: koi\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

#[test]
fn metrics_follow_the_traffic() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("run_metrics_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmpdir");
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    let frame: Vec<u8> = {
        let mut f = vec![2, 0, 0, 0, 0, 0x0b, 2, 0, 0, 0, 0, 0x0a, 0x88, 0xb5];
        f.resize(64, 7);
        f
    };
    {
        let mut w = PcapWriter::new(File::create(&inp).expect("create")).expect("writer");
        for _ in 0..20 {
            w.write_packet(&PcapPacket::new(Duration::ZERO, 64, &frame))
                .expect("write");
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
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
        .arg("--ctl")
        .arg(dir.join("koi.sock"))
        .arg("--metrics")
        .arg(&addr)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start koi run");
    let want = "koi_port_tx_packets_total{port=\"2\"";
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut text = String::new();
    while Instant::now() < deadline {
        if let Some(t) = get(&addr, "/metrics") {
            text = t;
            let done = text
                .lines()
                .any(|l| l.starts_with(want) && l.ends_with(" 20"));
            if done {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let missing = get(&addr, "/nothing").unwrap_or_default();
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in:\n{text}"))
            .to_string()
    };
    assert!(line(want).ends_with(" 20"), "{text}");
    assert!(line("koi_port_rx_packets_total{port=\"1\"").ends_with(" 20"));
    assert!(line("koi_port_rx_bytes_total{port=\"1\"").ends_with(" 1280"));
    assert!(line("koi_drops_total{reason=\"unknown_port\"}").ends_with(" 0"));
    assert!(text.contains("# TYPE koi_table_entries gauge"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("koi_table_entries{table=")),
        "{text}"
    );
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
}
