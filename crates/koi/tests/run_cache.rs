//! `koi run` forwards through the cached datapath (no privileges needed: pcap file ports and a
//! `--ctl` socket in a temporary directory):
//!
//! - after traffic, `koi ctl cache_show` reports megaflows and hits, and `--no-microflow`,
//!   `--no-cache` and the cache flags' refusals show as they should;
//! - a table change made with `koi ctl` is never contradicted by a cached flow: the input
//!   ports read pcap streams from named pipes, which the test writes one batch of identical
//!   packets at a time (a full batch, so the switch processes it at once), waiting for the
//!   outputs, changing the table, then writing the next batch; with two poll threads, each
//!   owning one input port, every thread must follow every change from its next packet on;
//! - misses beyond `--upcall-rate` are dropped and counted (`stats`, `cache_show`, metrics),
//!   and a program deciding on a register value needs a slow-path run per way of the
//!   decision, not per packet;
//! - the metrics hold the cache gauges and counters per thread.

use pcap_file::pcap::{PcapPacket, PcapWriter};
use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod ctl_support;
use ctl_support::{PATIENCE, ctl, frame, ok, records, root, tmpdir, write_pcap};

/// The number after `name` at the start of an indented line of `cache_show`'s `section`
/// (`thread 0`, `total`): `  megaflows        3 / 10` gives 3.
fn field(show: &str, section: &str, name: &str) -> u64 {
    let mut lines = show.lines().skip_while(|l| !l.starts_with(section));
    assert!(lines.next().is_some(), "no {section} in:\n{show}");
    lines
        .take_while(|l| l.starts_with("  "))
        .find_map(|l| {
            let rest = l.trim_start().strip_prefix(name)?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no {name} under {section} in:\n{show}"))
}

/// `koi ctl cache_show` once `ready` holds for it: the threads publish their numbers about
/// every 100 ms, and `cache_show` waits only a bounded time for a busy thread.
fn cache_show(sock: &Path, ready: impl Fn(&str) -> bool) -> String {
    let mut show = String::new();
    wait_for("cache_show to catch up", || {
        show = ok(sock, &["cache_show"]);
        ready(&show)
    });
    show
}

/// Waits until `cond` holds, failing after [`PATIENCE`] with `what`.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A running `koi run PROGRAM`; stopped on drop.
struct Switch {
    child: Child,
    sock: PathBuf,
}

impl Switch {
    /// `koi run examples/<program>` with the control socket in `dir`, once the socket answers.
    fn start(
        dir: &Path,
        program: &str,
        entries: Option<&Path>,
        ports: &[String],
        extra: &[&str],
    ) -> Switch {
        let sock = dir.join("koi.sock");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_koi"));
        cmd.args(["run", "--grpc", "none"])
            .arg(root().join("examples").join(program))
            .arg("--ctl")
            .arg(&sock)
            .args(extra);
        if let Some(e) = entries {
            cmd.arg("--entries").arg(e);
        }
        for p in ports {
            cmd.arg("--port").arg(p);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start koi run");
        let mut sw = Switch { child, sock };
        wait_for("the control socket", || {
            assert!(
                sw.child.try_wait().expect("wait").is_none(),
                "koi run exited"
            );
            UnixStream::connect(&sw.sock).is_ok()
        });
        sw
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + PATIENCE;
        while self.child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `koi run` with port 1 reading `frames` from a pcap file and port 2 writing `out.pcap`,
/// after every frame has crossed; `extra` are more `koi run` arguments.
fn forwarded(name: &str, frames: &[Vec<u8>], extra: &[&str]) -> (Switch, PathBuf) {
    let dir = tmpdir("run_cache", name);
    write_pcap(&dir.join("in.pcap"), frames);
    let ports = [
        format!("1=pcap:{},", dir.join("in.pcap").display()),
        format!("2=pcap:,{}", dir.join("out.pcap").display()),
    ];
    let entries = root().join("examples/l2_forward.entries");
    let sw = Switch::start(&dir, "l2_forward.p4", Some(&entries), &ports, extra);
    wait_for("the frames to cross", || {
        records(&dir.join("out.pcap")) == frames.len()
    });
    (sw, dir)
}

#[test]
fn cache_show_reports_megaflows_and_hits_after_traffic() {
    let frames: Vec<Vec<u8>> = (0..50).map(|_| frame(1)).collect();
    let (sw, _dir) = forwarded("show", &frames, &[]);
    let show = cache_show(&sw.sock, |t| field(t, "thread 0", "packets") == 50);
    assert!(
        show.starts_with("cache: per thread: max megaflows 65536"),
        "{show}"
    );
    // One flow: the first packet misses and installs it, the other 49 hit it.
    assert_eq!(field(&show, "thread 0", "packets"), 50, "{show}");
    assert_eq!(field(&show, "thread 0", "megaflows"), 1, "{show}");
    assert!(field(&show, "thread 0", "subtables") >= 1, "{show}");
    assert_eq!(field(&show, "thread 0", "misses"), 1, "{show}");
    assert_eq!(field(&show, "thread 0", "installs"), 1, "{show}");
    // (The one run had no earlier run with its trace: its program came from the tracer.)
    assert_eq!(field(&show, "thread 0", "from the memo"), 0, "{show}");
    assert_eq!(field(&show, "thread 0", "hits"), 49, "{show}");
    assert!(field(&show, "thread 0", "microflow hits") >= 1, "{show}");
    assert_eq!(field(&show, "thread 0", "microflows"), 1, "{show}");
    assert!(field(&show, "thread 0", "memory") > 0, "{show}");
    assert!(show.contains("  hits             49 (98.0%)"), "{show}");
    let o = ctl(&sw.sock, &["cache_show", "now"]);
    assert_eq!(o.status.code(), Some(1), "cache_show takes no arguments");
    // The megaflow, with the key bits it matches and its compiled program (l2_forward: the
    // frame copied out of port 2 unchanged).
    let flows = ok(&sw.sock, &["dump_flows"]);
    assert!(
        flows.starts_with("thread 0: 1 megaflows shown\n"),
        "{flows}"
    );
    assert!(flows.contains("hits=49 "), "{flows}");
    assert!(flows.contains("std.ingress_port=0x1"), "{flows}");
    assert!(flows.contains(" actions:"), "{flows}");
    assert!(flows.contains("output:2"), "{flows}");
    let o = ctl(&sw.sock, &["dump_flows", "many"]);
    assert_eq!(o.status.code(), Some(1), "dump_flows takes a number");
    // Read-only commands and refused ones invalidate nothing.
    ok(&sw.sock, &["table_dump", "fwd"]);
    ok(&sw.sock, &["table_num_entries", "fwd"]);
    ok(&sw.sock, &["show_tables"]);
    let o = ctl(
        &sw.sock,
        &["table_add", "fwd", "no_such_action", "7", "=>", "1"],
    );
    assert_eq!(o.status.code(), Some(1), "a refused table_add");
    let again = ok(&sw.sock, &["cache_show"]);
    assert!(again.contains("\ncontrol-plane changes: 0\n"), "{again}");
    assert_eq!(field(&again, "thread 0", "invalidated"), 0, "{again}");
    assert_eq!(field(&again, "thread 0", "megaflows"), 1, "{again}");
    // A table write removes the flow that applied the table, even in an idle thread.
    ok(&sw.sock, &["table_add", "fwd", "set_port", "7", "=>", "1"]);
    let after = cache_show(&sw.sock, |t| t.contains("ms ago, after 1 changes)"));
    assert!(after.contains("\ncontrol-plane changes: 1\n"), "{after}");
    assert_eq!(field(&after, "thread 0", "invalidated"), 1, "{after}");
    assert_eq!(field(&after, "thread 0", "megaflows"), 0, "{after}");
}

#[test]
fn cache_flags_no_microflow_and_no_cache() {
    let frames: Vec<Vec<u8>> = (0..10).map(|_| frame(2)).collect();
    let (sw, _dir) = forwarded(
        "nomicro",
        &frames,
        &["--no-microflow", "--max-megaflows", "9"],
    );
    let show = cache_show(&sw.sock, |t| field(t, "thread 0", "packets") == 10);
    assert!(
        show.starts_with("cache: per thread: max megaflows 9, microflow off"),
        "{show}"
    );
    assert_eq!(field(&show, "thread 0", "microflow hits"), 0, "{show}");
    assert_eq!(field(&show, "thread 0", "megaflow hits"), 9, "{show}");
    assert_eq!(field(&show, "thread 0", "microflows"), 0, "{show}");
    drop(sw);

    let (sw, _dir) = forwarded("nocache", &frames, &["--no-cache"]);
    let show = ok(&sw.sock, &["cache_show"]);
    assert!(show.starts_with("cache: off"), "{show}");
    let stats = ok(&sw.sock, &["stats"]);
    assert!(stats.contains("packets out: 10 "), "{stats}");
    assert!(stats.contains("upcall_limit 0"), "{stats}");
    drop(sw);

    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_koi"))
            .args(["run", "--grpc", "none"])
            .arg(root().join("examples/l2_forward.p4"))
            .args(["--port", "1=pcap:,/dev/null"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("koi run");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--max-megaflows", "0"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim(), "koi: --max-megaflows must be at least 1");
    let (code, err) = run(&["--no-cache", "--upcall-rate", "5"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--no-cache"), "{err}");
}

#[test]
fn misses_beyond_the_upcall_rate_are_dropped_and_counted() {
    // examples/l2.p4 with learned MACs at even addresses and frames to the odd ones: each
    // destination differs from a learned one only in its last bit, so each miss needs the
    // whole address and is its own flow; the default action drops. 2000 misses fit the slow
    // path's burst; at --upcall-rate 1 a handful more are let through while the rest are
    // dropped unprocessed.
    let total = 2100usize;
    let mac = |n: usize| {
        let b = (n as u32).to_be_bytes();
        [6, 0, 0, b[1], b[2], b[3]]
    };
    let frames: Vec<Vec<u8>> = (0..total)
        .map(|i| {
            let mut f = frame(4);
            f[..6].copy_from_slice(&mac(2 * i + 1));
            f
        })
        .collect();
    let dir = tmpdir("run_cache", "limit");
    write_pcap(&dir.join("in.pcap"), &frames);
    let learned: String = (0..total)
        .map(|i| {
            let m = mac(2 * i);
            format!(
                "table_add dmac forward {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} => 3\n",
                m[0], m[1], m[2], m[3], m[4], m[5]
            )
        })
        .collect();
    std::fs::write(dir.join("learned.entries"), learned).expect("entries");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let ports = [format!("1=pcap:{},", dir.join("in.pcap").display())];
    let extra = ["--upcall-rate", "1", "--metrics", &addr];
    let entries = dir.join("learned.entries");
    let sw = Switch::start(&dir, "l2.p4", Some(&entries), &ports, &extra);
    let sock = sw.sock.clone();
    let stat = |text: &str, key: &str| -> u64 {
        text.split_whitespace()
            .skip_while(|w| *w != key)
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {text}"))
    };
    let mut stats = String::new();
    wait_for("every frame to be processed", || {
        let o = ctl(&sock, &["stats"]);
        stats = String::from_utf8_lossy(&o.stdout).into_owned();
        o.status.success() && stat(&stats, "program") + stat(&stats, "upcall_limit") == total as u64
    });
    let limited = stat(&stats, "upcall_limit");
    assert!((50..=100).contains(&limited), "{stats}");
    let show = cache_show(&sock, |t| field(t, "thread 0", "packets") == total as u64);
    assert!(show.contains("upcall rate 1/s (burst 2000)"), "{show}");
    assert_eq!(
        field(&show, "thread 0", "upcalls limited"),
        limited,
        "{show}"
    );
    assert_eq!(
        field(&show, "thread 0", "misses") + limited,
        total as u64,
        "{show}"
    );
    let text = get(&addr, "/metrics").unwrap_or_default();
    for sample in [
        format!("koi_cache_upcalls_limited_total{{thread=\"0\",pipeline=\"default\"}} {limited}"),
        format!("koi_drops_total{{reason=\"upcall_limit\"}} {limited}"),
    ] {
        assert!(text.lines().any(|l| l == sample), "no {sample}:\n{text}");
    }
    drop(sw);
}

/// A per-source packet counter in a register, dropping a source past 1000 packets.
const COUNTER: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers { eth_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(256) seen;
    apply {
        bit<32> c;
        seen.read(c, (bit<32>) hdr.eth.src[7:0]);
        c = c + 1;
        seen.write((bit<32>) hdr.eth.src[7:0], c);
        if (c > 1000) { mark_to_drop(sm); } else { sm.egress_spec = 2; }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// A decision on a register value is taken per packet by a compiled (guarded) program: at
/// `--upcall-rate 1`, 2,100 frames of one source need two slow-path runs (one per way of
/// the decision), not one each, so none is dropped by the limit; exactly the first 1,000
/// leave, and the register counted every frame.
#[test]
fn a_decision_on_a_register_value_is_not_rate_limited() {
    let total = 2100usize;
    let dir = tmpdir("run_cache", "register");
    let prog = dir.join("counter.p4");
    std::fs::write(&prog, COUNTER).expect("program");
    let frames: Vec<Vec<u8>> = (0..total).map(|i| frame(i as u8)).collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    let out = dir.join("out.pcap");
    let ports = [
        format!("1=pcap:{},", dir.join("in.pcap").display()),
        format!("2=pcap:,{}", out.display()),
    ];
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let sw = Switch::start(
        &dir,
        &prog.display().to_string(),
        None,
        &ports,
        &["--upcall-rate", "1", "--metrics", &addr],
    );
    let sock = sw.sock.clone();
    let show = cache_show(&sock, |t| field(t, "thread 0", "packets") == total as u64);
    assert_eq!(field(&show, "thread 0", "upcalls limited"), 0, "{show}");
    assert_eq!(field(&show, "thread 0", "misses"), 2, "{show}");
    assert!(
        show.contains("  guarded          1 (decisions on state), 2 programs"),
        "{show}"
    );
    wait_for("the forwarded frames", || records(&out) == 1000);
    // The megaflow's two programs, each with its guard on the count.
    let flows = ok(&sock, &["dump_flows"]);
    assert!(
        flows.contains("guard ") && flows.contains(" is true") && flows.contains(" is false"),
        "{flows}"
    );
    assert!(flows.contains("  else (arm 1) actions"), "{flows}");
    let read = ok(&sock, &["register_read", "I.seen", "10"]);
    assert!(read.contains("2100"), "{read}");
    let text = get(&addr, "/metrics").unwrap_or_default();
    assert!(
        text.lines()
            .any(|l| l == "koi_cache_guarded_megaflows{thread=\"0\",pipeline=\"default\"} 1"),
        "{text}"
    );
    drop(sw);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(records(&out), 1000);
}

/// A named pipe that the switch reads a pcap stream from; the test writes it.
struct Pipe {
    file: File,
}

impl Pipe {
    fn create(path: &Path) {
        let made = Command::new("mkfifo")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(made, "mkfifo {}", path.display());
    }

    /// Opens `path` for writing once the switch has opened it for reading, and writes the
    /// pcap file header.
    fn open(path: &Path, sw: &mut Switch) -> Pipe {
        let (tx, rx) = mpsc::channel();
        let p = path.to_path_buf();
        // Opening a pipe for writing waits for its reader: in a thread, so that a switch that
        // died is noticed.
        std::thread::spawn(move || {
            let _ = tx.send(std::fs::OpenOptions::new().write(true).open(p));
        });
        let deadline = Instant::now() + PATIENCE;
        let mut file = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(f) => break f.expect("open the pipe"),
                Err(_) => {
                    assert!(
                        sw.child.try_wait().expect("wait").is_none(),
                        "koi run exited"
                    );
                    assert!(Instant::now() < deadline, "koi run did not open the pipe");
                }
            }
        };
        let header = PcapWriter::new(Vec::new())
            .expect("pcap header")
            .into_writer();
        file.write_all(&header).expect("write the pcap header");
        Pipe { file }
    }

    /// Writes `n` copies of `f` in one write (a full batch is processed at once).
    fn send(&mut self, f: &[u8], n: usize) {
        let mut w = PcapWriter::new(Vec::new()).expect("pcap writer");
        for _ in 0..n {
            w.write_packet(&PcapPacket::new(Duration::ZERO, f.len() as u32, f))
                .expect("pcap record");
        }
        let header = PcapWriter::new(Vec::new())
            .expect("pcap header")
            .into_writer();
        let records = &w.into_writer()[header.len()..];
        self.file.write_all(records).expect("write to the pipe");
    }
}

#[test]
fn a_table_change_is_followed_by_every_thread_from_the_next_packet() {
    let n = koi_ports::BATCH_SIZE;
    let dir = tmpdir("run_cache", "consistency");
    let (a, b) = (dir.join("a.pipe"), dir.join("b.pipe"));
    Pipe::create(&a);
    Pipe::create(&b);
    let entries = dir.join("entries");
    std::fs::write(
        &entries,
        "table_add fwd set_port 1 => 3\ntable_add fwd set_port 2 => 4\n",
    )
    .expect("write entries");
    // Ports 1 and 2 read the pipes (a thread waiting for a pipe holds its port, so nothing is
    // sent to them); 3, 4 and 5 write files.
    let out = |p: u32| dir.join(format!("out{p}.pcap"));
    let ports = [
        format!("1=pcap:{},", a.display()),
        format!("2=pcap:{},", b.display()),
        format!("3=pcap:,{}", out(3).display()),
        format!("4=pcap:,{}", out(4).display()),
        format!("5=pcap:,{}", out(5).display()),
    ];
    let mut sw = Switch::start(
        &dir,
        "l2_forward.p4",
        Some(&entries),
        &ports,
        &["--threads", "2"],
    );
    // Declared after the switch: dropped (the end of the input) before it is stopped.
    let mut pa = Pipe::open(&a, &mut sw);
    let mut pb = Pipe::open(&b, &mut sw);
    let s = sw.sock.clone();
    let counts = || (records(&out(3)), records(&out(4)), records(&out(5)));
    let expect = |want: (usize, usize, usize), what: &str| {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let got = counts();
            if got == want {
                break;
            }
            // A packet sent to the wrong port stays there: fail at once.
            assert!(
                got.0 <= want.0 && got.1 <= want.1 && got.2 <= want.2,
                "{what}: got (port 3, 4, 5) = {got:?}, want {want:?}"
            );
            assert!(
                Instant::now() < deadline,
                "{what}: got {got:?}, want {want:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let (fa, fb) = (frame(0xa), frame(0xb));

    // The entries: 1 -> 3 (handle 0), 2 -> 4 (handle 1); the default action drops. Thread 0
    // reads port 1, thread 1 port 2; each installs its flow with the first packet of a batch
    // and hits it with the others.
    pa.send(&fa, n);
    pb.send(&fb, n);
    expect((n, n, 0), "1 -> 3 and 2 -> 4 before any change");

    ok(&s, &["table_modify", "fwd", "set_port", "0", "5"]);
    pa.send(&fa, n);
    expect((n, n, n), "1 -> 5 after table_modify");
    pb.send(&fb, n);
    expect((n, 2 * n, n), "2 -> 4 still");

    ok(&s, &["table_modify", "fwd", "set_port", "1", "5"]);
    pb.send(&fb, n);
    expect((n, 2 * n, 2 * n), "2 -> 5 after table_modify");

    ok(&s, &["table_set_default", "fwd", "set_port", "4"]);
    ok(&s, &["table_delete", "fwd", "0"]);
    pa.send(&fa, n);
    expect(
        (n, 3 * n, 2 * n),
        "1 -> 4 (the new default) after table_delete",
    );

    ok(&s, &["table_reset_default", "fwd"]);
    pa.send(&fa, n);
    pb.send(&fb, n);
    expect((n, 3 * n, 3 * n), "2 -> 5 still");
    drop((pa, pb));
    wait_for("the input to end", || {
        ok(&s, &["stats"]).contains(&format!("packets in: {} ", 8 * n))
    });
    let stats = ok(&s, &["stats"]);
    // Port 1's last batch met the reset default action: drop.
    assert!(stats.contains(&format!("drops: program {n} ")), "{stats}");
    assert_eq!(counts(), (n, 3 * n, 3 * n));

    // The caches were used, and invalidated.
    let show = cache_show(&s, |t| field(t, "total", "packets") == 8 * n as u64);
    let total = |name: &str| field(&show, "total", name);
    assert_eq!(total("packets"), 8 * n as u64, "{show}");
    assert!(total("hits") >= 8 * (n as u64 - 1), "{show}");
    assert!(total("invalidated") >= 5, "{show}");
    assert!(show.contains("\ncontrol-plane changes: 5\n"), "{show}");
}

fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: koi\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

#[test]
fn metrics_hold_the_cache_gauges_and_counters_per_thread() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let frames: Vec<Vec<u8>> = (0..20).map(|_| frame(3)).collect();
    let (sw, _dir) = forwarded("metrics", &frames, &["--metrics", &addr]);
    let value = |text: &str, sample: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
    };
    let mut text = String::new();
    // The threads publish their cache numbers about every 100 ms.
    wait_for("the cache counters to reach 20 lookups", || {
        text = get(&addr, "/metrics").unwrap_or_default();
        let l = |tier: &str| {
            value(
                &text,
                &format!(
                    "koi_cache_lookups_total{{thread=\"0\",pipeline=\"default\",tier=\"{tier}\"}}"
                ),
            )
            .unwrap_or(0)
        };
        l("microflow") + l("megaflow") + l("miss") == 20
    });
    for (name, kind) in [
        ("koi_cache_megaflows", "gauge"),
        ("koi_cache_guarded_megaflows", "gauge"),
        ("koi_cache_subtables", "gauge"),
        ("koi_cache_microflow_entries", "gauge"),
        ("koi_cache_memory_bytes", "gauge"),
        ("koi_cache_lookups_total", "counter"),
        ("koi_cache_upcalls_limited_total", "counter"),
    ] {
        assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{text}");
    }
    let v = |sample: &str| value(&text, sample).unwrap_or_else(|| panic!("no {sample}:\n{text}"));
    assert_eq!(
        v("koi_cache_megaflows{thread=\"0\",pipeline=\"default\"}"),
        1
    );
    assert_eq!(
        v("koi_cache_guarded_megaflows{thread=\"0\",pipeline=\"default\"}"),
        0
    );
    assert_eq!(
        v("koi_cache_microflow_entries{thread=\"0\",pipeline=\"default\"}"),
        1
    );
    assert!(v("koi_cache_subtables{thread=\"0\",pipeline=\"default\"}") >= 1);
    assert!(v("koi_cache_memory_bytes{thread=\"0\",pipeline=\"default\"}") > 0);
    assert_eq!(
        v("koi_cache_lookups_total{thread=\"0\",pipeline=\"default\",tier=\"miss\"}"),
        1
    );
    assert_eq!(
        v("koi_cache_upcalls_limited_total{thread=\"0\",pipeline=\"default\"}"),
        0
    );
    assert_eq!(v("koi_drops_total{reason=\"upcall_limit\"}"), 0);
    drop(sw);

    let (sw, _dir) = forwarded(
        "metrics_nocache",
        &frames,
        &["--metrics", &addr, "--no-cache"],
    );
    let text = get(&addr, "/metrics").unwrap_or_default();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(!text.contains("koi_cache_"), "{text}");
    drop(sw);
}
