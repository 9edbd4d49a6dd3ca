//! The harness of koi's P4Runtime client tests (`p4rt_*.rs`): `koi run` switches with their
//! P4Runtime server on the switch namespace's loopback, and Python clients (p4runtime-shell,
//! finsy, the `p4runtime` package's stubs) run in that namespace with `ip netns exec`, over
//! the end-to-end tests' lab (`e2e/mod.rs`: namespaces, veth pairs, removed on drop).
//!
//! The client scripts live in `crates/koi/tests/p4runtime/`; each prints `ok: <check>` per
//! check it made and exits non-zero on the first that failed. [`assert_checks`] asserts the
//! exit status and that every expected check was printed, so a script that stopped early or
//! skipped a step fails the test.
//!
//! Prerequisites as for the end-to-end tests (root; `KOI_PYTHON` for finsy and the stubs,
//! `KOI_PYTHON_SHELL` for p4runtime-shell, both from `scripts/py-venv.sh`); a missing one
//! skips with a `SKIP` line, or fails under `KOI_E2E_REQUIRED`/`CI`.

#![allow(dead_code)]

use crate::e2e::{Lab, Out, PATIENCE, Proc, run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The directory of the client scripts and their P4 programs.
pub fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/p4runtime")
}

pub use crate::e2e::venv_python as python;

/// One `koi run` in the lab's switch namespace, with a P4Runtime server; killed on drop.
pub struct Switch {
    pub name: String,
    pub proc: Proc,
    pub sock: PathBuf,
    pub grpc: String,
    pub ports: Vec<(u32, String)>,
}

impl Switch {
    /// Starts `koi run [PROGRAM] --port N=IF... --grpc GRPC --device-id ID --cpu-port 255
    /// --ctl SOCK` in the lab's switch namespace and waits until its ports are open and its
    /// P4Runtime server listens.
    pub fn start(
        lab: &Lab,
        name: &str,
        ports: &[(u32, &str)],
        grpc: &str,
        device_id: u64,
        program: Option<&Path>,
    ) -> Switch {
        let sock = lab.dir.join(format!("{name}.sock"));
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &lab.sw])
            .arg(env!("CARGO_BIN_EXE_koi"))
            .arg("run");
        if let Some(p) = program {
            c.arg(p);
        }
        for (n, ifname) in ports {
            c.args(["--port", &format!("{n}={ifname}")]);
        }
        c.args(["--grpc", grpc])
            .args(["--device-id", &device_id.to_string()])
            .args(["--cpu-port", "255"])
            .arg("--ctl")
            .arg(&sock);
        let mut sw = Switch {
            name: name.to_string(),
            proc: Proc::spawn(&mut c),
            sock,
            grpc: grpc.to_string(),
            ports: ports.iter().map(|(n, i)| (*n, i.to_string())).collect(),
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            assert!(
                sw.proc.running(),
                "koi run ({name}) exited:\n{}",
                sw.proc.output_so_far()
            );
            let listening = sw
                .proc
                .output_so_far()
                .contains(&format!("P4Runtime server at {grpc}"));
            if listening
                && let Ok(show) = sw.ctl(&["port_show"])
                && ports
                    .iter()
                    .all(|(n, _)| show.contains(&format!("port {n} (")))
            {
                return sw;
            }
            assert!(
                Instant::now() < deadline,
                "koi run ({name}) did not come up:\n{}",
                sw.proc.output_so_far()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `koi ctl ARGS...` against this switch.
    pub fn ctl(&self, args: &[&str]) -> Result<String, String> {
        let o = run(
            Command::new(env!("CARGO_BIN_EXE_koi"))
                .arg("ctl")
                .arg("--ctl")
                .arg(&self.sock)
                .args(args),
            Duration::from_secs(10),
        );
        if o.ok() {
            Ok(o.stdout)
        } else {
            Err(format!("koi ctl {}: {}", args.join(" "), o.show()))
        }
    }

    /// `koi ctl ARGS...`, which must succeed.
    pub fn must_ctl(&self, args: &[&str]) -> String {
        self.ctl(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The number `koi ctl table_num_entries TABLE` prints.
    pub fn num_entries(&self, table: &str) -> u64 {
        let out = self.must_ctl(&["table_num_entries", table]);
        out.split_whitespace()
            .filter_map(|w| w.parse().ok())
            .next_back()
            .unwrap_or_else(|| panic!("table_num_entries {table}: {out}"))
    }

    /// Transmitted packets of port `n` (`koi ctl port_show`).
    pub fn tx_packets(&self, n: usize) -> u64 {
        let show = self.must_ctl(&["port_show"]);
        crate::e2e::parse_port_stats(&show, n)
            .unwrap_or_else(|| panic!("no port {n} in:\n{show}"))
            .tx_packets
    }

    /// koi's output so far (its log), for failure messages.
    pub fn log(&self) -> String {
        format!("--- koi run ({})\n{}", self.name, self.proc.output_so_far())
    }
}

/// `koi compile PROGRAM --emit EMIT` into the lab's scratch directory; the file's path.
pub fn compile(lab: &Lab, program: &Path, emit: &str) -> PathBuf {
    let ext = if emit == "p4info" { "txt" } else { "bin" };
    let stem = program.file_stem().and_then(|s| s.to_str()).unwrap_or("p");
    let path = lab.dir.join(format!("{stem}.{emit}.{ext}"));
    let o = Command::new(env!("CARGO_BIN_EXE_koi"))
        .arg("compile")
        .arg(program)
        .args(["--emit", emit])
        .output()
        .expect("koi compile");
    assert!(
        o.status.success(),
        "koi compile {} --emit {emit}: {}",
        program.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::write(&path, &o.stdout).expect("write compiler output");
    path
}

/// A Python command `py SCRIPT ARGS...` run in the lab's switch namespace (where the
/// switches' gRPC addresses are), with the protobuf implementation p4runtime 1.6.0 needs.
pub fn client_cmd(lab: &Lab, py: &Path, script: &Path, args: &[String]) -> Command {
    let mut c = lab.cmd(&lab.sw, py);
    c.arg(script)
        .args(args)
        .env("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
        .env("PYTHONUNBUFFERED", "1");
    c
}

/// `--hosts NS:IF:PORT,...` for the client scripts: host `i` of the lab behind port `i`.
pub fn hosts_arg(lab: &Lab) -> String {
    lab.hosts
        .iter()
        .enumerate()
        .map(|(k, h)| format!("{}:{}:{}", h.ns, h.ifname, k + 1))
        .collect::<Vec<_>>()
        .join(",")
}

/// The client exited 0, printed `ok: <c>...` for every `c` of `checks` (in order) and then
/// `done`.
pub fn assert_checks(out: &Out, checks: &[&str], done: &str, context: &str) {
    let all = format!("{}\n{context}", out.show());
    assert!(out.ok(), "the client failed:\n{all}");
    let oks: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ok: "))
        .collect();
    let mut at = 0;
    for c in checks {
        match oks[at..].iter().position(|l| l.starts_with(c)) {
            Some(k) => at += k + 1,
            None => panic!("the client did not print `ok: {c}` (in order):\n{all}"),
        }
    }
    assert!(
        out.stdout.lines().any(|l| l == done),
        "the client did not finish with `{done}`:\n{all}"
    );
}

/// Runs the client `script` of `tests/p4runtime/` (with the Python `py`) against a fresh
/// `koi run` with the lab's hosts on ports 1, 2, ...: the client pushes `all_kinds.p4` (koi's
/// P4Info and device config), sends and receives through the hosts and reads back with
/// `koi ctl`. Asserts that it printed every check of `checks` and then `done`; returns the
/// switch (for what the client left in it) and the client's output.
pub fn run_all_kinds_client(
    lab: &Lab,
    py: &Path,
    script: &str,
    checks: &[&str],
    done: &str,
) -> (Switch, Out) {
    let ports: Vec<(u32, &str)> = (1..=lab.hosts.len())
        .map(|i| (i as u32, lab.host(i).sw_if.as_str()))
        .collect();
    let sw = Switch::start(lab, "koi", &ports, "127.0.0.1:9559", 1, None);
    let program = scripts().join("all_kinds.p4");
    let p4info = compile(lab, &program, "p4info");
    let device_config = compile(lab, &program, "device-config");
    let mut cmd = client_cmd(
        lab,
        py,
        &scripts().join(script),
        &[
            "--grpc".into(),
            sw.grpc.clone(),
            "--device-id".into(),
            "1".into(),
            "--p4info".into(),
            p4info.display().to_string(),
            "--device-config".into(),
            device_config.display().to_string(),
            "--hosts".into(),
            hosts_arg(lab),
            "--koi".into(),
            env!("CARGO_BIN_EXE_koi").into(),
            "--ctl".into(),
            sw.sock.display().to_string(),
        ],
    );
    let out = run(&mut cmd, Duration::from_secs(120));
    assert_checks(&out, checks, done, &sw.log());
    (sw, out)
}
