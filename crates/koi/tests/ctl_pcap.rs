//! `koi ctl` against a running `koi run` with pcap file ports and a `--ctl` socket in a
//! temporary directory (no privileges needed): the socket's mode, one-shot commands (table
//! writes and reads, refusals that change nothing, registers, `port_show`, `stats`, `trace`),
//! commands read from stdin, a second koi on the same socket, a stale socket file, and clients
//! that misbehave.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod ctl_support;
use ctl_support::{PATIENCE, ctl, frame, ok, records, root, tmpdir, write_pcap};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `koi ctl` that must be refused: its one-line error.
fn refused(sock: &Path, args: &[&str]) -> String {
    let o = ctl(sock, args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "koi ctl {args:?}: {err}");
    assert!(o.stdout.is_empty(), "koi ctl {args:?} printed output");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    err
}

/// A `koi run` with port 1 reading `in.pcap` and port 2 writing `out.pcap`; stopped on drop.
struct Switch {
    child: Child,
    sock: PathBuf,
    dir: PathBuf,
}

impl Switch {
    fn start(name: &str, prog: &Path, entries: Option<&Path>, frames: &[Vec<u8>]) -> Switch {
        let dir = tmpdir("ctl", name);
        let sock = dir.join("koi.sock");
        write_pcap(&dir.join("in.pcap"), frames);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_koi"));
        cmd.args(["run", "--grpc", "none"]).arg(prog);
        if let Some(e) = entries {
            cmd.arg("--entries").arg(e);
        }
        let child = cmd
            .arg("--port")
            .arg(format!("1=pcap:{},", dir.join("in.pcap").display()))
            .arg("--port")
            .arg(format!("2=pcap:,{}", dir.join("out.pcap").display()))
            .arg("--ctl")
            .arg(&sock)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start koi run");
        let mut sw = Switch { child, sock, dir };
        let deadline = Instant::now() + PATIENCE;
        while UnixStream::connect(&sw.sock).is_err() {
            assert!(
                sw.child.try_wait().expect("wait").is_none(),
                "koi run exited"
            );
            assert!(
                Instant::now() < deadline,
                "the control socket did not appear"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        sw
    }

    fn l2(name: &str, frames: &[Vec<u8>]) -> Switch {
        let r = root();
        Switch::start(
            name,
            &r.join("examples/l2_forward.p4"),
            Some(&r.join("examples/l2_forward.entries")),
            frames,
        )
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

#[test]
fn ctl_socket_is_0600_and_table_commands_change_the_live_state() {
    let sw = Switch::l2("tables", &[]);
    let s = &sw.sock;
    let mode = std::fs::metadata(s).expect("socket").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");

    assert_eq!(ok(s, &["table_num_entries", "fwd"]).trim(), "2");
    let added = ok(s, &["table_add", "fwd", "set_port", "3", "=>", "1"]);
    assert!(added.contains("handle 2"), "{added}");
    assert_eq!(ok(s, &["table_num_entries", "fwd"]).trim(), "3");
    let dump = ok(s, &["table_dump", "fwd"]);
    assert!(dump.contains("EXACT-00:03"), "{dump}");
    // One argument holding the whole line works as well.
    let del = ok(s, &["table_delete fwd 2"]);
    assert!(del.contains("Deleting entry 2"), "{del}");
    assert_eq!(ok(s, &["table_num_entries", "fwd"]).trim(), "2");

    // Refused commands: exit 1, one line on stderr, nothing changed.
    let before = ok(s, &["table_dump", "fwd"]);
    refused(s, &["table_add", "fwd", "no_such_action", "4", "=>", "1"]);
    refused(
        s,
        &["table_add", "fwd", "set_port", "4", "=>", "1", "2", "3"],
    );
    refused(s, &["table_delete", "fwd", "99"]);
    refused(
        s,
        &["table_add", "no_such_table", "set_port", "4", "=>", "1"],
    );
    refused(s, &["no_such_command"]);
    refused(s, &["help", "me"]);
    assert_eq!(ok(s, &["table_dump", "fwd"]), before);
    assert_eq!(ok(s, &["table_num_entries", "fwd"]).trim(), "2");

    let cache = ok(s, &["cache_show"]);
    assert!(cache.starts_with("cache: per thread: "), "{cache}");
    refused(s, &["cache_show", "now"]);
    let help = ok(s, &["help"]);
    for c in ["port_show", "stats", "trace", "table_add", "register_read"] {
        assert!(help.contains(c), "{help}");
    }
}

#[test]
fn ctl_port_show_stats_and_trace_on_a_clone() {
    let frames: Vec<Vec<u8>> = (0..3).map(frame).collect();
    let sw = Switch::l2("ports", &frames);
    let s = &sw.sock;
    let out = sw.dir.join("out.pcap");
    let deadline = Instant::now() + PATIENCE;
    while !ok(s, &["port_show"]).contains("tx 3 pkts") {
        assert!(Instant::now() < deadline, "the frames did not cross");
        std::thread::sleep(Duration::from_millis(20));
    }
    let ports = ok(s, &["port_show"]);
    let line = |n: u32| {
        ports
            .lines()
            .find(|l| l.starts_with(&format!("port {n} (")))
            .unwrap_or_else(|| panic!("no port {n}: {ports}"))
            .to_string()
    };
    assert!(line(1).contains("rx 3 pkts 180 bytes"), "{ports}");
    assert!(line(2).contains("tx 3 pkts 180 bytes"), "{ports}");
    assert!(line(1).contains("drops: too_big 0"), "{ports}");
    let stats = ok(s, &["stats"]);
    assert!(stats.contains("packets in: 3 (180 bytes)"), "{stats}");
    assert!(stats.contains("packets out: 3 (180 bytes)"), "{stats}");
    assert!(stats.contains("unknown_port 0"), "{stats}");
    assert!(stats.contains("uptime: "), "{stats}");

    let pkt = frame(9);
    let t = ok(s, &["trace", "1", &hex(&pkt)]);
    assert!(t.contains("table FwdIngress.fwd"), "{t}");
    assert!(
        t.contains(&format!("result: port 2: 60 bytes: {}", hex(&pkt))),
        "{t}"
    );
    // The trace sent nothing and counted nothing.
    assert_eq!(ok(s, &["port_show"]), ports);
    assert_eq!(records(&out), 3);
    // It runs on the live state: without the 1 -> 2 entry the packet is dropped.
    ok(s, &["table_delete", "fwd", "0"]);
    let t = ok(s, &["trace", "1", &hex(&pkt)]);
    assert!(t.contains("result: no packet sent"), "{t}");
    refused(s, &["trace", "1"]);
    refused(s, &["trace", "x", "00"]);
    refused(s, &["trace", "1", "0g"]);
}

const REGISTER_PROGRAM: &str = r#"
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    register<bit<32>>(4) seen;
    apply {
        bit<32> n;
        seen.read(n, 0);
        seen.write(0, n + 1);
        std.egress_spec = 2;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"#;

#[test]
fn ctl_register_write_then_read() {
    let dir = tmpdir("ctl", "regprog");
    let prog = dir.join("reg.p4");
    std::fs::write(&prog, REGISTER_PROGRAM).expect("write program");
    let frames: Vec<Vec<u8>> = (0..2).map(frame).collect();
    let sw = Switch::start("registers", &prog, None, &frames);
    let s = &sw.sock;
    let deadline = Instant::now() + PATIENCE;
    while !ok(s, &["port_show"]).contains("tx 2 pkts") {
        assert!(Instant::now() < deadline, "the frames did not cross");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The data plane's writes are visible...
    assert_eq!(ok(s, &["register_read", "seen", "0"]).trim(), "seen[0]= 2");
    // ...and so are the control plane's.
    assert_eq!(ok(s, &["register_write", "seen", "3", "42"]), "");
    assert_eq!(
        ok(s, &["register_read", "I.seen", "3"]).trim(),
        "I.seen[3]= 42"
    );
    refused(s, &["register_write", "seen", "4", "1"]);
    refused(s, &["register_read", "nothing", "0"]);
    assert_eq!(
        ok(s, &["register_read", "seen"]).trim(),
        "seen= 2, 0, 0, 42"
    );
    let names = ok(s, &["koi_names"]);
    for n in ["seen", "I.seen"] {
        assert!(names.lines().any(|l| l == n), "{names}");
    }
}

#[test]
fn ctl_reads_commands_from_stdin_one_reply_each() {
    let sw = Switch::l2("stdin", &[]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_koi"))
        .arg("ctl")
        .arg("--ctl")
        .arg(&sw.sock)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("koi ctl");
    let script = "table_num_entries fwd\n\
                  table_add fwd set_port 5 => 1\n\
                  \n\
                  # a comment\n\
                  table_add fwd bogus 6 => 1\n\
                  table_num_entries fwd\n\
                  .\n";
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("write");
    let o = child.wait_with_output().expect("koi ctl");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"2"), "{out}");
    assert_eq!(lines.last(), Some(&"3"), "{out}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| **l == "Entry has been added with handle 2")
            .count(),
        1,
        "{out}"
    );
    assert_eq!(lines.len(), 6, "{out}");
    let errs: Vec<&str> = err.lines().collect();
    assert_eq!(errs.len(), 2, "{err}");
    assert!(errs.iter().all(|e| e.starts_with("error: ")), "{err}");
}

#[test]
fn ctl_cannot_connect_exits_2_naming_the_path() {
    let dir = tmpdir("ctl", "noconnect");
    let sock = dir.join("nobody.sock");
    let o = ctl(&sock, &["stats"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&sock.display().to_string()), "{err}");
}

/// Waits for `child` (a koi that must stop by itself) at most `limit`; if it does not, kills it
/// and fails, saying whether `other` (the koi it should have found running) had stopped.
fn finish_within(
    mut child: std::process::Child,
    limit: Duration,
    other: &mut std::process::Child,
) -> std::process::Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let first = match other.try_wait() {
                Ok(Some(status)) => format!("had exited ({status})"),
                _ => "was still running".to_string(),
            };
            panic!("the second koi did not stop by itself; the first koi {first}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn ctl_a_second_koi_is_refused_and_a_stale_socket_replaced() {
    let dir = tmpdir("ctl", "stale");
    let stale = dir.join("koi.sock");
    drop(UnixListener::bind(&stale).expect("bind"));
    assert!(stale.exists());
    let r = root();
    let out = dir.join("out.pcap");
    let run = |sock: &Path| {
        Command::new(env!("CARGO_BIN_EXE_koi"))
            .args(["run", "--grpc", "none"])
            .arg(r.join("examples/l2_forward.p4"))
            .arg("--port")
            .arg(format!("1=pcap:,{}", out.display()))
            .arg("--ctl")
            .arg(sock)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("koi run")
    };
    // Nothing listens on the stale file: it is replaced.
    let mut first = run(&stale);
    let deadline = Instant::now() + PATIENCE;
    while UnixStream::connect(&stale).is_err() {
        assert!(first.try_wait().expect("wait").is_none(), "koi run exited");
        assert!(
            Instant::now() < deadline,
            "the control socket did not appear"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = finish_within(run(&stale), PATIENCE, &mut first);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(err.contains("another koi"), "{err}");
    assert!(err.contains(&stale.display().to_string()), "{err}");
    // The first one still answers, and removes its socket when it stops.
    assert_eq!(ok(&stale, &["table_num_entries", "fwd"]).trim(), "0");
    let _ = Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status();
    let status = first.wait().expect("wait");
    assert!(status.success());
    assert!(!stale.exists());
    // A file that is not a socket is left alone.
    std::fs::write(&stale, "precious").expect("write");
    let third = run(&stale).wait_with_output().expect("third koi");
    assert!(!third.status.success());
    assert_eq!(std::fs::read_to_string(&stale).expect("read"), "precious");
}

#[test]
fn ctl_misbehaving_clients_do_not_stop_the_switch() {
    let frames: Vec<Vec<u8>> = (0..4).map(frame).collect();
    let sw = Switch::l2("misbehave", &frames);
    let s = &sw.sock;
    // A client that connects and says nothing, and one that sends half a line.
    let _silent = UnixStream::connect(s).expect("connect");
    let mut half = UnixStream::connect(s).expect("connect");
    half.write_all(b"table_num_en").expect("write");
    assert_eq!(ok(s, &["table_num_entries", "fwd"]).trim(), "2");
    // A line over the limit is refused and the connection closed.
    let mut long = UnixStream::connect(s).expect("connect");
    let mut line = "table_num_entries fwd ".repeat(4000).into_bytes();
    line.push(b'\n');
    let _ = long.write_all(&line);
    let mut reply = String::new();
    BufReader::new(&long)
        .read_line(&mut reply)
        .expect("read reply");
    assert!(
        reply.starts_with("error: command line longer than 65536 bytes"),
        "{reply}"
    );
    // A raw client sees dot-stuffing and terminators, and may send several requests.
    let mut raw = UnixStream::connect(s).expect("connect");
    raw.write_all(b"table_num_entries fwd\nbogus\n")
        .expect("write");
    let mut r = BufReader::new(&raw);
    let mut got = Vec::new();
    for _ in 0..4 {
        let mut l = String::new();
        r.read_line(&mut l).expect("read");
        got.push(l);
    }
    assert_eq!(got[0], "2\n");
    assert_eq!(got[1], ".\n");
    assert!(got[2].starts_with("error: "), "{got:?}");
    assert_eq!(got[3], ".\n");
    // Forwarding went on.
    let deadline = Instant::now() + PATIENCE;
    while records(&sw.dir.join("out.pcap")) < 4 {
        assert!(Instant::now() < deadline, "forwarding stopped");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads what the switch sent `c` before hanging up (nothing: an empty string).
fn read_all(c: &mut UnixStream) -> String {
    c.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut s = String::new();
    let _ = std::io::Read::read_to_string(c, &mut s);
    s
}

/// `n` clients made by `connect`, each holding a place at the control socket: every `pause_ms`
/// (at most `rounds` times), a client the socket refused (it was answered or hung up on)
/// connects again, until none was.
fn seated(
    n: usize,
    connect: impl Fn() -> UnixStream,
    rounds: usize,
    pause_ms: u64,
) -> Vec<UnixStream> {
    let mut clients: Vec<UnixStream> = (0..n).map(|_| connect()).collect();
    let refused = |c: &UnixStream| {
        c.set_nonblocking(true).expect("nonblocking");
        let r = std::io::Read::read(&mut &*c, &mut [0u8; 64]);
        c.set_nonblocking(false).expect("blocking");
        !matches!(r, Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
    };
    for _ in 0..rounds {
        std::thread::sleep(Duration::from_millis(pause_ms));
        let mut again = 0;
        for c in clients.iter_mut() {
            if refused(c) {
                *c = connect();
                again += 1;
            }
        }
        if again == 0 {
            break;
        }
    }
    clients
}

#[test]
fn ctl_silent_clients_cannot_lock_others_out() {
    let sw = Switch::l2("silent", &[]);
    let s = &sw.sock;
    // 16 clients take every place and say nothing; while they are new, a 17th is told why it
    // gets none. (The harness's own last `koi ctl` may still hold a place until the server's
    // next poll, 100 ms: a client it refused tries again until all 16 are seated.)
    std::thread::sleep(Duration::from_millis(300));
    let silent = seated(16, || UnixStream::connect(s).expect("connect"), 5, 150);
    let mut extra = UnixStream::connect(s).expect("connect");
    assert_eq!(
        read_all(&mut extra),
        "error: too many control clients (16), try again\n.\n"
    );
    // Once they have been idle a moment (ctl_socket::EVICT_IDLE, 1 s), a real command takes
    // the place of the one idle longest.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(ok(s, &["table_num_entries", "fwd"]).trim(), "2");
    // The one that gave its place was hung up on (within the server's 100 ms poll); the
    // others still have theirs.
    std::thread::sleep(Duration::from_millis(500));
    let hung_up = silent
        .iter()
        .filter(|c| {
            c.set_nonblocking(true).expect("nonblocking");
            matches!(std::io::Read::read(&mut &**c, &mut [0u8; 64]), Ok(0))
        })
        .count();
    assert_eq!(hung_up, 1, "exactly one idle client gave its place");
}

#[test]
fn ctl_busy_clients_get_a_reason_and_slow_requests_are_cut() {
    let sw = Switch::l2("busy", &[]);
    let s = &sw.sock;
    // 16 clients each start a command line and never finish it: every place is busy. (A
    // place the harness's own last `koi ctl` still held when one of them came may have
    // refused it: that one tries again until all 16 are seated.)
    let start = || {
        let mut c = UnixStream::connect(s).expect("connect");
        c.write_all(b"table_num_").expect("write");
        c
    };
    let mut slow = seated(16, start, 50, 200);
    std::thread::sleep(Duration::from_millis(1100));
    let o = ctl(s, &["table_num_entries", "fwd"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err, "koi ctl: too many control clients (16), try again\n");
    // A request line must be complete 10 s (ctl_socket::REQUEST_TIMEOUT) after its first
    // byte: the slow clients are told so and disconnected, and the switch answers again.
    for c in &mut slow {
        assert_eq!(
            read_all(c),
            "error: the command line did not arrive within 10 s\n.\n"
        );
    }
    assert_eq!(ok(s, &["table_num_entries", "fwd"]).trim(), "2");
}

/// A `koi ctl` whose connection was closed while it waited (here: its place was given to a new
/// client) connects again for its next command.
#[test]
fn ctl_connects_again_after_losing_its_place() {
    let sw = Switch::l2("again", &[]);
    let s = &sw.sock;
    let mut c = Command::new(env!("CARGO_BIN_EXE_koi"))
        .arg("ctl")
        .arg("--ctl")
        .arg(s)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("koi ctl");
    let mut stdin = c.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(c.stdout.take().expect("stdout"));
    let mut line = String::new();
    writeln!(stdin, "table_num_entries fwd").expect("write");
    stdout.read_line(&mut line).expect("read");
    assert_eq!(line, "2\n");
    // The prompt's connection is idle longest when 16 new clients come: the last of them
    // takes its place.
    std::thread::sleep(Duration::from_millis(1100));
    let _silent: Vec<UnixStream> = (0..16)
        .map(|_| UnixStream::connect(s).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(1100));
    writeln!(stdin, "table_num_entries fwd").expect("write");
    line.clear();
    stdout.read_line(&mut line).expect("read");
    assert_eq!(line, "2\n");
    drop(stdin);
    let out = c.wait_with_output().expect("koi ctl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `koi ctl table_add fwd set_port 1 => 2` unquoted: the shell redirects `> 2` and koi ctl gets
/// `... 1 =`; the refusal comes with a hint to quote the command.
#[test]
fn ctl_an_unquoted_arrow_gets_a_hint_to_quote() {
    let sw = Switch::l2("arrow", &[]);
    let o = ctl(&sw.sock, &["table_add", "fwd", "set_port", "3", "="]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].starts_with("error: "), "{err}");
    assert_eq!(
        lines[1],
        "hint: the command ends in `=`: the shell took the `>` of `=>` as a redirection; \
         quote the command: koi ctl 'table_add fwd set_port 3 => ...'"
    );
    let help = Command::new(env!("CARGO_BIN_EXE_koi"))
        .args(["ctl", "--help"])
        .output()
        .expect("koi ctl --help");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("'table_add fwd set_port 1 => 2'"), "{help}");
}
