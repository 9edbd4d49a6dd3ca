//! The harness of koi's end-to-end tests (`e2e_*.rs`): throwaway network namespaces wired by
//! veth pairs to a `koi run` switch, helper processes (scapy, PTF, ping, Python sockets) run
//! inside them, and `koi ctl` to read the switch's counters.
//!
//! Layout of a [`Lab`]: the switch namespace `<tag>s` holds koi's interfaces `s1`..`sN`; host
//! `i` is the interface `h<i>`, the veth peer of `s<i>`, either in its own namespace `<tag>h<i>`
//! ([`Layout::HostPerNs`]) or, for PTF, all in one tester namespace `<tag>t`
//! ([`Layout::Tester`]). IPv6 is disabled in every namespace so that the kernel sends no
//! neighbour discovery or router solicitations of its own. Everything is removed on drop: koi
//! and the helpers are killed, the namespaces deleted (which deletes the veth pairs).
//!
//! Prerequisites: network namespaces need root; the scapy and PTF tests need a Python with both
//! (`KOI_PYTHON`, which `scripts/py-venv.sh` provides and `scripts/test.sh` exports); the
//! routed tests need `ping` and `ethtool`. When one is missing, a test prints a `SKIP` line
//! straight to the terminal (not captured by the test harness, so it shows in a plain `cargo
//! test`) and passes; in CI (`CI` set, or `KOI_E2E_REQUIRED=1`, which scripts/test.sh sets as
//! root) it fails instead, so these tests cannot pass there without running.

#![allow(dead_code)]

use koi_ports::Stats;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A bound on waiting for something that should happen; never a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The router MAC of `examples/l2l3_acl.entries`.
pub const ROUTER_MAC: &str = "02:00:00:00:00:fe";

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// Whether a missing prerequisite fails the test (CI, scripts/test.sh) instead of skipping it.
pub fn required() -> bool {
    let set = |v: &str| std::env::var(v).is_ok_and(|s| !s.is_empty() && s != "0" && s != "false");
    set("KOI_E2E_REQUIRED") || set("CI")
}

/// A prerequisite of `test` is missing: fails when [`required`], else prints a SKIP line
/// that the test harness does not capture.
pub fn unavailable(test: &str, why: &str) {
    if required() {
        panic!(
            "{test}: {why}\n(this is a failure because CI or KOI_E2E_REQUIRED is set; \
             scripts/test.sh sets up what the end-to-end tests need)"
        );
    }
    // Straight to the file descriptor: `eprintln!` output of a passing test is swallowed.
    let _ = writeln!(std::io::stderr().lock(), "SKIP {test}: {why}");
}

/// The Python of the scapy/PTF virtual environment (`KOI_PYTHON`), checked to import both.
pub fn scapy_python(test: &str) -> Option<PathBuf> {
    venv_python(test, "KOI_PYTHON", "import scapy.all, ptf.testutils")
}

/// The Python named by environment variable `var`, checked to run `imports`; `None` (after
/// [`unavailable`]) when the variable is not set.
pub fn venv_python(test: &str, var: &str, imports: &str) -> Option<PathBuf> {
    let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) else {
        let how = if var == "KOI_PYTHON_SHELL" {
            "export KOI_PYTHON_SHELL=\"$(./scripts/py-venv.sh shell)\""
        } else {
            "export KOI_PYTHON=\"$(./scripts/py-venv.sh)\""
        };
        unavailable(
            test,
            &format!(
                "{var} is not set; this test needs its Python venv: {how} (scripts/test.sh does)"
            ),
        );
        return None;
    };
    let p = PathBuf::from(p);
    let o = Command::new(&p)
        .args(["-c", imports])
        .env("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
        .output();
    match o {
        Ok(o) if o.status.success() => Some(p),
        // Set but broken is a configuration error wherever it happens.
        Ok(o) => panic!(
            "{var}={} cannot `{imports}`:\n{}",
            p.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("{var}={}: {e}", p.display()),
    }
}

/// A Python for stdlib-only helpers: `KOI_PYTHON` when set, else `python3`.
pub fn python() -> PathBuf {
    std::env::var_os("KOI_PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// Whether the programs `tools` are installed; if not, [`unavailable`].
pub fn tools(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    unavailable(
        test,
        &format!(
            "{} not installed (scripts/test.sh installs it)",
            missing.join(", ")
        ),
    );
    false
}

pub fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

fn must(r: Result<(), String>) {
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// What a finished command did.
#[derive(Debug)]
pub struct Out {
    /// `None`: killed after the time limit.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn ok(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
    pub fn show(&self) -> String {
        let status = match self.status {
            Some(s) => format!("{s}"),
            None => "killed after the time limit".into(),
        };
        format!(
            "status: {status}\n--- stdout\n{}--- stderr\n{}",
            self.stdout, self.stderr
        )
    }
}

/// A running helper process; its output is collected as it comes. Killed on drop.
pub struct Proc {
    pub what: String,
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    lines: mpsc::Receiver<String>,
    readers: Vec<std::thread::JoinHandle<()>>,
    status: Option<ExitStatus>,
}

impl Proc {
    pub fn spawn(cmd: &mut Command) -> Proc {
        let what = format!("{cmd:?}");
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let (tx, lines) = mpsc::channel();
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        let out = child.stdout.take().expect("stdout");
        let sink = Arc::clone(&stdout);
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.push_str(&line);
                s.push('\n');
                drop(s);
                let _ = tx.send(line);
            }
        }));
        let mut err = child.stderr.take().expect("stderr");
        let sink = Arc::clone(&stderr);
        readers.push(std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }));
        Proc {
            what,
            child,
            stdout,
            stderr,
            lines,
            readers,
            status: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until a line of stdout contains `text`; false if the process ended or time ran out.
    pub fn wait_line(&mut self, text: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(100)))
            {
                Ok(l) if l.contains(text) => return true,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return false,
                Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => return false,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }

    pub fn running(&mut self) -> bool {
        self.try_status().is_none()
    }

    fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits for the end (killing it after `limit`) and returns what it did.
    pub fn finish(mut self, limit: Duration) -> Out {
        let deadline = Instant::now() + limit;
        while self.try_status().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = self.try_status();
        if status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // The pipes close when the process ends, unless it left children holding them: give
        // the readers a moment, not forever.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.readers.iter().all(|r| r.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        Out {
            status,
            stdout: self.stdout.lock().map(|s| s.clone()).unwrap_or_default(),
            stderr: self.stderr.lock().map(|s| s.clone()).unwrap_or_default(),
        }
    }

    /// SIGKILL, now.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        self.status = self.child.wait().ok();
    }

    pub fn output_so_far(&self) -> String {
        format!(
            "--- stdout\n{}--- stderr\n{}",
            self.stdout.lock().map(|s| s.clone()).unwrap_or_default(),
            self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
        )
    }
}

impl Drop for Proc {
    /// SIGTERM first, so that a helper (a controller) removes its temporary files; SIGKILL
    /// after 2 s.
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `cmd` to its end, killing it after `limit`.
pub fn run(cmd: &mut Command, limit: Duration) -> Out {
    Proc::spawn(cmd).finish(limit)
}

/// Where the host interfaces live.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Layout {
    /// Each host interface `h<i>` in a namespace of its own (`<tag>h<i>`).
    HostPerNs,
    /// All host interfaces in one tester namespace (`<tag>t`), as PTF wants them.
    Tester,
}

/// One host interface.
#[derive(Clone, Debug)]
pub struct Host {
    /// The namespace of its interface.
    pub ns: String,
    /// `h<i>`.
    pub ifname: String,
    /// koi's interface on the other end, `s<i>`, in the switch namespace; koi port `i`.
    pub sw_if: String,
}

static LABS: AtomicU32 = AtomicU32::new(0);

/// Namespaces, veth pairs and a koi switch; all removed on drop.
pub struct Lab {
    pub test: String,
    /// The switch namespace.
    pub sw: String,
    /// Host `i` is `hosts[i - 1]`.
    pub hosts: Vec<Host>,
    namespaces: Vec<String>,
    /// Scratch directory (entries files, the control socket, koi's output).
    pub dir: PathBuf,
    koi: Option<Child>,
    ports: Vec<String>,
    /// Prefix of the hosts' port specifications: "" (AF_PACKET) or "xdp:" (AF_XDP).
    pub port_kind: &'static str,
}

impl Lab {
    /// A lab with `n` hosts, for the test named `test`; `None` (after [`unavailable`]) when
    /// network namespaces cannot be created.
    pub fn new(test: &str, n: usize, layout: Layout) -> Option<Lab> {
        let tag = format!(
            "koie2e{}x{}",
            std::process::id(),
            LABS.fetch_add(1, Ordering::Relaxed)
        );
        let sw = format!("{tag}s");
        if let Err(e) = ip(&["netns", "add", &sw]) {
            unavailable(
                test,
                &format!("cannot create network namespaces (needs root): {e}"),
            );
            return None;
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(&tag);
        let mut lab = Lab {
            test: test.to_string(),
            sw: sw.clone(),
            hosts: Vec::new(),
            namespaces: vec![sw],
            dir,
            koi: None,
            ports: Vec::new(),
            port_kind: "",
        };
        let _ = std::fs::remove_dir_all(&lab.dir);
        std::fs::create_dir_all(&lab.dir).expect("scratch directory");
        let tester = format!("{tag}t");
        if layout == Layout::Tester {
            lab.add_ns(&tester);
        }
        lab.ns_setup(&lab.sw.clone());
        for i in 1..=n {
            let ns = match layout {
                Layout::HostPerNs => {
                    let ns = format!("{tag}h{i}");
                    lab.add_ns(&ns);
                    ns
                }
                Layout::Tester => tester.clone(),
            };
            let host = Host {
                ns,
                ifname: format!("h{i}"),
                sw_if: format!("s{i}"),
            };
            lab.wire(&host);
            lab.hosts.push(host);
        }
        Some(lab)
    }

    fn add_ns(&mut self, ns: &str) {
        must(ip(&["netns", "add", ns]));
        self.namespaces.push(ns.to_string());
        self.ns_setup(ns);
    }

    /// Loopback up; IPv6 off (no neighbour discovery or router solicitations of the kernel's
    /// own on the test links).
    fn ns_setup(&self, ns: &str) {
        must(ip(&["-n", ns, "link", "set", "lo", "up"]));
        let _ = koi_ports::netns::run_in(ns, || {
            for k in ["all", "default"] {
                let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{k}/disable_ipv6"), "1");
            }
        });
    }

    /// Creates host `h`'s veth pair (again, after a test deleted it) and sets both ends up.
    pub fn wire(&self, h: &Host) {
        must(ip(&[
            "-n", &h.ns, "link", "add", &h.ifname, "type", "veth", "peer", "name", &h.sw_if,
            "netns", &self.sw,
        ]));
        must(ip(&["-n", &h.ns, "link", "set", &h.ifname, "up"]));
        must(ip(&["-n", &self.sw, "link", "set", &h.sw_if, "up"]));
    }

    /// Host `i` (1-based).
    pub fn host(&self, i: usize) -> &Host {
        &self.hosts[i - 1]
    }

    /// Sets the MTU of both ends of host `i`'s link.
    pub fn set_mtu(&self, i: usize, mtu: u32) {
        let h = self.host(i);
        let mtu = mtu.to_string();
        must(ip(&["-n", &h.ns, "link", "set", &h.ifname, "mtu", &mtu]));
        must(ip(&["-n", &self.sw, "link", "set", &h.sw_if, "mtu", &mtu]));
    }

    /// Makes host `i` an IPv4 host behind the L2L3-ACL router: its MAC, `addr` (CIDR), and a
    /// default route through `gateway`, whose MAC is [`ROUTER_MAC`] (no ARP crosses the router:
    /// the neighbour entry is static). Transmit checksum offload is turned off so TCP segments
    /// leave with their checksums computed (koi forwards the bytes it sees).
    pub fn ipv4_host(&self, i: usize, mac: &str, addr: &str, gateway: &str) {
        let h = self.host(i);
        let (ns, dev) = (h.ns.as_str(), h.ifname.as_str());
        must(ip(&["-n", ns, "link", "set", dev, "address", mac]));
        must(ip(&["-n", ns, "addr", "add", addr, "dev", dev]));
        must(ip(&[
            "-n", ns, "neigh", "replace", gateway, "lladdr", ROUTER_MAC, "dev", dev,
        ]));
        must(ip(&["-n", ns, "route", "add", "default", "via", gateway]));
        let o = run(
            Command::new("ip").args(["netns", "exec", ns, "ethtool", "-K", dev, "tx", "off"]),
            PATIENCE,
        );
        assert!(o.ok(), "ethtool -K {dev} tx off: {}", o.show());
    }

    /// A command run inside namespace `ns`.
    pub fn cmd(&self, ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).arg(program);
        c.env("PYTHONDONTWRITEBYTECODE", "1");
        c
    }

    /// Starts `koi run PROGRAM --port i=s<i>... PORTS... --entries ENTRIES` in the switch
    /// namespace and waits until it forwards (its control socket lists every port).
    pub fn start_koi(&mut self, program: &Path, entries: &Path, extra_ports: &[String]) {
        let mut ports: Vec<String> = self
            .hosts
            .iter()
            .enumerate()
            .map(|(k, h)| format!("{}={}{}", k + 1, self.port_kind, h.sw_if))
            .collect();
        ports.extend(extra_ports.iter().cloned());
        let mut args = vec![program.display().to_string()];
        for p in &ports {
            args.extend(["--port".to_string(), p.clone()]);
        }
        args.extend(["--entries".to_string(), entries.display().to_string()]);
        self.start_koi_args(&args, ports.len());
    }

    /// Starts `koi run ARGS... --ctl SOCK` in the switch namespace and waits until it forwards
    /// (`koi ctl port_show` lists ports 1 to `ports`).
    pub fn start_koi_args(&mut self, args: &[String], ports: usize) {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.sw])
            .arg(env!("CARGO_BIN_EXE_koi"))
            .arg("run")
            .args(args);
        let ports: Vec<String> = (1..=ports).map(|n| n.to_string()).collect();
        let out = std::fs::File::create(self.dir.join("koi.out")).expect("koi.out");
        let err = std::fs::File::create(self.dir.join("koi.err")).expect("koi.err");
        c.arg("--ctl")
            .arg(self.sock())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        // `ip netns exec` execs koi: the child's pid is koi's.
        self.koi = Some(c.spawn().expect("start koi run"));
        self.ports = ports;
        let deadline = Instant::now() + PATIENCE;
        loop {
            assert!(self.koi_alive(), "koi run exited:\n{}", self.koi_output());
            if let Ok(show) = self.ctl(&["port_show"])
                && (1..=self.ports.len()).all(|n| show.contains(&format!("port {n} (")))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "koi run did not come up:\n{}",
                self.koi_output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn sock(&self) -> PathBuf {
        self.dir.join("koi.sock")
    }

    pub fn koi_pid(&self) -> u32 {
        self.koi.as_ref().expect("koi started").id()
    }

    /// Whether koi is still running.
    pub fn koi_alive(&mut self) -> bool {
        self.koi
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// koi's stderr (its log) and stdout so far.
    pub fn koi_output(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        format!(
            "--- koi stderr\n{}--- koi stdout\n{}",
            read("koi.err"),
            read("koi.out")
        )
    }

    /// `koi ctl ARGS...` against this lab's switch: its output, or why it failed.
    pub fn ctl(&self, args: &[&str]) -> Result<String, String> {
        let o = run(
            Command::new(env!("CARGO_BIN_EXE_koi"))
                .arg("ctl")
                .arg("--ctl")
                .arg(self.sock())
                .args(args),
            Duration::from_secs(10),
        );
        if o.ok() {
            Ok(o.stdout)
        } else {
            Err(format!("koi ctl {}: {}", args.join(" "), o.show()))
        }
    }

    /// The counters of koi port `n`, from `koi ctl port_show`.
    pub fn port_stats(&self, n: usize) -> Stats {
        let show = self.ctl(&["port_show"]).unwrap_or_else(|e| panic!("{e}"));
        parse_port_stats(&show, n).unwrap_or_else(|| panic!("no counters of port {n}:\n{show}"))
    }

    /// One number of `koi ctl stats` (`program`, `pipeline_error`, `too_big`, ...).
    pub fn stat(&self, key: &str) -> u64 {
        let s = self.ctl(&["stats"]).unwrap_or_else(|e| panic!("{e}"));
        number_after(&s, &format!("{key} "))
            .unwrap_or_else(|| panic!("no `{key}` in koi ctl stats:\n{s}"))
    }

    /// Stops koi with SIGINT and returns its exit status and final output.
    pub fn stop_koi(&mut self) -> (Option<ExitStatus>, String) {
        let Some(mut c) = self.koi.take() else {
            return (None, String::new());
        };
        let _ = Command::new("kill")
            .args(["-INT", &c.id().to_string()])
            .status();
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Ok(Some(s)) = c.try_wait() {
                break Some(s);
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        (status, self.koi_output())
    }

    /// `ping -c COUNT` from host `from` to `addr`: whether every echo came back.
    pub fn ping(&self, from: usize, addr: &str, count: u32) -> Result<(), String> {
        let o = run(
            self.cmd(&self.host(from).ns, "ping").args([
                "-n",
                "-q",
                "-c",
                &count.to_string(),
                "-i",
                "0.2",
                "-W",
                "2",
                addr,
            ]),
            PATIENCE,
        );
        let all = format!("{count} received");
        if o.ok() && o.stdout.contains(&all) {
            Ok(())
        } else {
            Err(format!("ping from host {from} to {addr}: {}", o.show()))
        }
    }

    /// Sends `bytes` bytes (a deterministic pattern) over TCP from host `from` to `addr:port`
    /// (served by host `to`) and checks that the receiver got exactly them (length and SHA-256).
    pub fn tcp_transfer(
        &self,
        from: usize,
        to: usize,
        addr: &str,
        port: u16,
        bytes: usize,
    ) -> Result<(), String> {
        let mut server = Proc::spawn(self.cmd(&self.host(to).ns, python()).args([
            "-c",
            TCP_SERVER,
            addr,
            &port.to_string(),
        ]));
        if !server.wait_line("listening", PATIENCE) {
            return Err(format!(
                "TCP server on host {to} did not start:\n{}",
                server.finish(Duration::ZERO).show()
            ));
        }
        let client = run(
            self.cmd(&self.host(from).ns, python()).args([
                "-c",
                TCP_CLIENT,
                addr,
                &port.to_string(),
                &bytes.to_string(),
            ]),
            PATIENCE,
        );
        let server = server.finish(PATIENCE);
        let sent = client.stdout.trim();
        let got = server.stdout.lines().last().unwrap_or("").trim();
        if client.ok() && server.ok() && !sent.is_empty() && sent == got {
            Ok(())
        } else {
            Err(format!(
                "TCP transfer of {bytes} bytes from host {from} to host {to} ({addr}:{port}): \
                 sent `{sent}`, received `{got}`\nclient {}\nserver {}",
                client.show(),
                server.show()
            ))
        }
    }
}

/// A TCP sink: prints `listening`, accepts one connection, prints `<bytes> <sha256>`.
const TCP_SERVER: &str = r#"
import hashlib, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); s.settimeout(15)
print("listening", flush=True)
c, _ = s.accept(); c.settimeout(15)
h = hashlib.sha256(); n = 0
while True:
    d = c.recv(65536)
    if not d:
        break
    h.update(d); n += len(d)
print(n, h.hexdigest(), flush=True)
"#;

/// A TCP source: sends argv[3] bytes of a pattern, prints `<bytes> <sha256>`.
const TCP_CLIENT: &str = r#"
import hashlib, socket, sys
n = int(sys.argv[3])
data = bytes((i * 7 + i // 251) & 0xff for i in range(n))
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=15)
s.sendall(data); s.shutdown(socket.SHUT_WR)
s.recv(1)
s.close()
print(n, hashlib.sha256(data).hexdigest(), flush=True)
"#;

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(c) = &mut self.koi {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            eprintln!("{} failed; koi's output:\n{}", self.test, self.koi_output());
        }
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The first number after `key` in `text`.
pub fn number_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())?
        .parse()
        .ok()
}

/// Port `n`'s counters in `koi ctl port_show` output (or `koi run`'s final lines).
pub fn parse_port_stats(text: &str, n: usize) -> Option<Stats> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("port {n} (")))?;
    let line = &line[line.find("): ")?..];
    let rx = &line[line.find("rx ")?..];
    let tx = &line[line.find("tx ")?..];
    Some(Stats {
        rx_packets: number_after(rx, "rx ")?,
        rx_bytes: number_after(rx, "pkts ")?,
        tx_packets: number_after(tx, "tx ")?,
        tx_bytes: number_after(tx, "pkts ")?,
        drop_too_big: number_after(line, "too_big ")?,
        drop_truncated: number_after(line, "truncated ")?,
        drop_link_down: number_after(line, "link_down ")?,
        drop_error: number_after(line, "error ")?,
        drop_ring_full: number_after(line, "ring_full ")?,
    })
}

/// Waits until `f` holds, checking every 50 ms, at most `limit`.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Retries `f` until it succeeds or `limit` passes; the last error otherwise.
pub fn retry(limit: Duration, mut f: impl FnMut() -> Result<(), String>) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        match f() {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn mac(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (k, b) in s.split(':').enumerate() {
        m[k] = u8::from_str_radix(b, 16).expect("MAC");
    }
    m
}

/// The Internet checksum of `data`.
pub fn csum16(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet/IPv4/UDP frame (IPv4 checksum set, UDP checksum 0).
pub fn udp_frame(
    dst: [u8; 6],
    src: [u8; 6],
    ip_src: [u8; 4],
    ip_dst: [u8; 4],
    ttl: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0, 0, ttl, 17, 0, 0]);
    ip.extend_from_slice(&ip_src);
    ip.extend_from_slice(&ip_dst);
    let c = csum16(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&9u16.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// `udp_frame` as the L2L3-ACL router forwards it: MACs rewritten, TTL decremented, IPv4
/// checksum recomputed.
pub fn routed(frame: &[u8], dst: [u8; 6]) -> Vec<u8> {
    let mut f = frame.to_vec();
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&mac(ROUTER_MAC));
    f[14 + 8] -= 1;
    f[24..26].copy_from_slice(&[0, 0]);
    let c = csum16(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

/// The entries of `examples/l2l3_acl.entries` plus `extra` lines, written to the lab's
/// scratch directory.
pub fn l2l3_entries(lab: &Lab, extra: &str) -> PathBuf {
    let base = std::fs::read_to_string(repo().join("examples/l2l3_acl.entries")).expect("entries");
    let path = lab.dir.join("l2l3_acl.entries");
    std::fs::write(&path, format!("{base}\n# test-local entries\n{extra}")).expect("write");
    path
}

/// The L2L3-ACL entries for hosts on ports 1..=3 (port `i` is VLAN `i`00; hosts
/// 02:00:00:00:01:00 on port 1, :01:03 on port 2 as in the example, :01:10 on port 3) with a
/// host route to each: A 198.18.0.1, B 198.19.16.5, C 198.20.0.1.
pub const THREE_HOSTS: &str = "\
table_add vlan_ingress push_vlan 3 0 0&&&0 => 300 10
table_add vlan_ingress tagged 3 1 300&&&0xfff => 10
table_add switching to_router 02:00:00:00:00:fe 300 =>
table_add routable routable_ok 02:00:00:00:01:10 02:00:00:00:00:fe 300 =>
table_add routing set_nexthop 198.18.0.1/32 => 02:00:00:00:00:fe 02:00:00:00:01:00 1
table_add routing set_nexthop 198.19.16.5/32 => 02:00:00:00:00:fe 02:00:00:00:01:03 2
table_add routing set_nexthop 198.20.0.1/32 => 02:00:00:00:00:fe 02:00:00:00:01:10 3
table_add vlan_egress pop_vlan 1 300 =>
table_add vlan_egress pop_vlan 2 300 =>
table_add vlan_egress pop_vlan 3 100 =>
table_add vlan_egress pop_vlan 3 200 =>
table_add vlan_egress pop_vlan 3 300 =>
";

/// The three hosts of [`THREE_HOSTS`]: (MAC, address/prefix, gateway, address).
pub const HOSTS3: [(&str, &str, &str, &str); 3] = [
    (
        "02:00:00:00:01:00",
        "198.18.0.1/24",
        "198.18.0.254",
        "198.18.0.1",
    ),
    (
        "02:00:00:00:01:03",
        "198.19.16.5/24",
        "198.19.16.254",
        "198.19.16.5",
    ),
    (
        "02:00:00:00:01:10",
        "198.20.0.1/24",
        "198.20.0.254",
        "198.20.0.1",
    ),
];

/// A lab of three routed IPv4 hosts behind `koi run examples/l2l3_acl.p4` with
/// [`THREE_HOSTS`] entries (and `extra_ports`).
pub fn three_host_router(test: &str, extra_ports: &[String]) -> Option<Lab> {
    three_host_router_entries(test, extra_ports, "")
}

/// [`three_host_router`] with `extra` entries.
pub fn three_host_router_entries(test: &str, extra_ports: &[String], extra: &str) -> Option<Lab> {
    three_host_router_kind(test, extra_ports, extra, "")
}

/// [`three_host_router_entries`] with the hosts' ports of kind `kind` (`""`, `"xdp:"`).
pub fn three_host_router_kind(
    test: &str,
    extra_ports: &[String],
    extra: &str,
    kind: &'static str,
) -> Option<Lab> {
    if !tools(test, &["ping", "ethtool"]) {
        return None;
    }
    let mut lab = Lab::new(test, 3, Layout::HostPerNs)?;
    lab.port_kind = kind;
    for (i, (m, cidr, gw, _)) in HOSTS3.iter().enumerate() {
        lab.ipv4_host(i + 1, m, cidr, gw);
    }
    let entries = l2l3_entries(&lab, &format!("{THREE_HOSTS}{extra}"));
    lab.start_koi(&repo().join("examples/l2l3_acl.p4"), &entries, extra_ports);
    Some(lab)
}
