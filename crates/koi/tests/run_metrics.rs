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

/// A `koi run` serving metrics on a free port; stopped and cleaned up on drop.
struct Served {
    child: std::process::Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start() -> Served {
        let dir = tempfile::tempdir().expect("tmpdir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let child = Command::new(env!("CARGO_BIN_EXE_koi"))
            .args(["run", "--grpc", "none"])
            .arg(root.join("examples/l2_forward.p4"))
            .arg("--port")
            .arg(format!("1=pcap:,{}", dir.path().join("out.pcap").display()))
            .arg("--ctl")
            .arg(dir.path().join("koi.sock"))
            .arg("--metrics")
            .arg(&addr)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start koi run");
        let deadline = Instant::now() + Duration::from_secs(20);
        while get(&addr, "/metrics").is_none_or(|t| !t.starts_with("HTTP/1.1 200")) {
            assert!(Instant::now() < deadline, "the metrics never answered");
            std::thread::sleep(Duration::from_millis(50));
        }
        Served {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Ten connections that send nothing and one that sends its request a byte at a time, each
/// held open: a scrape meanwhile is answered at once (`get` waits at most 5 s), and the slow
/// client is cut off once its headers are 2 s late.
#[test]
fn silent_and_slow_clients_do_not_stall_a_scrape() {
    let m = Served::start();
    let _silent: Vec<TcpStream> = (0..10)
        .map(|_| TcpStream::connect(&m.addr).expect("connect"))
        .collect();
    let addr = m.addr.clone();
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(&addr).expect("connect");
        let started = Instant::now();
        for b in b"GET /metrics HTTP/1.1\r\nHost: koi\r\nX-Slow: "
            .iter()
            .cycle()
        {
            if s.write_all(&[*b]).is_err() || started.elapsed() > Duration::from_secs(20) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        started.elapsed()
    });
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        let text = get(&m.addr, "/metrics").expect("a scrape while clients stall");
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(
            text.contains("koi_port_rx_packets_total{port=\"1\""),
            "{text}"
        );
    }
    let held = slow.join().expect("slow client");
    assert!(
        held < Duration::from_secs(20),
        "the slow client was never cut off"
    );
}

/// Past 32 connections at once a client is told to come back (503 with the reason) instead of
/// waiting; once the silent ones are cut off (2 s), scrapes are answered again.
#[test]
fn too_many_connections_get_a_503_with_the_reason() {
    let m = Served::start();
    let _silent: Vec<TcpStream> = (0..32)
        .map(|_| TcpStream::connect(&m.addr).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let text = get(&m.addr, "/metrics").expect("an answer");
    assert!(
        text.starts_with("HTTP/1.1 503 Service Unavailable"),
        "{text}"
    );
    assert!(
        text.ends_with("too many metrics connections (at most 32), try again\n"),
        "{text}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = get(&m.addr, "/metrics").unwrap_or_default();
        if text.starts_with("HTTP/1.1 200 OK") {
            break;
        }
        assert!(Instant::now() < deadline, "never answered again: {text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
