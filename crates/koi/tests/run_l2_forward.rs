//! End to end: `koi run examples/l2_forward.p4` in a switch namespace, with two veth pairs to
//! two host namespaces; test frames sent from each host arrive at the other, and SIGINT stops
//! the switch with exit code 0 and per-port counters on stdout. Needs root (network namespaces,
//! AF_PACKET); without it the test prints a SKIP line and passes. Only L2 test frames (ethertype
//! 0x88b5, locally administered MACs) inside the test's own namespaces.

use koi_ports::afpacket::{AfPacketConfig, AfPacketPort};
use koi_ports::{Batch, Poller, Port, Wake, netns};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod netns_lab;
use netns_lab::{Lab, MAC_1, MAC_2, PATIENCE, frame};

fn receive(port: &mut AfPacketPort, n: usize) -> Vec<Vec<u8>> {
    let mut batch = Batch::new(2048);
    let mut poller = Poller::new();
    let mut got = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while got.len() < n && Instant::now() < deadline {
        poller.wait(&[port.readiness()], 100).expect("poll");
        if poller.wake(0) == Wake::Error {
            port.handle_error();
        }
        port.recv_batch(&mut batch).expect("recv");
        got.extend(
            batch
                .iter()
                .filter(|f| f.get(12..17) == Some(&[0x88, 0xb5, b'K', b'O', b'I'][..]))
                .map(<[u8]>::to_vec),
        );
    }
    got
}

/// The `rx`/`tx` packet counts of the counter line of port `n`.
fn counters(stdout: &str, n: u64) -> Option<(u64, u64)> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("port {n} (")))?;
    let num_after = |key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    Some((num_after("rx ")?, num_after("tx ")?))
}

#[test]
fn koi_run_forwards_between_namespaces_and_stops_on_sigint() {
    let Some(mut lab) = Lab::new("koirun") else {
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let prog = root.join("examples/l2_forward.p4");
    let entries = root.join("examples/l2_forward.entries");
    let mut child = Command::new("ip")
        .args(["netns", "exec", &lab.s, env!("CARGO_BIN_EXE_koi"), "run"])
        .arg(&prog)
        .args(["--port", "1=s1", "--port", "2=s2", "--entries"])
        .arg(&entries)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start koi run");
    // `ip netns exec` execs koi, so the child's pid is koi's.
    let pid = child.id().to_string();
    let stderr = child.stderr.take().expect("stderr");
    let mut stdout = child.stdout.take().expect("stdout");
    lab.child = Some(child);

    let (tx, rx) = mpsc::channel();
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("forwarding") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    assert!(
        rx.recv_timeout(PATIENCE).is_ok(),
        "koi run did not start forwarding"
    );

    let mut h1 = netns::run_in(&lab.a, || {
        AfPacketPort::open("h1", AfPacketConfig::default())
    })
    .expect("netns a")
    .expect("port h1");
    let mut h2 = netns::run_in(&lab.b, || {
        AfPacketPort::open("h2", AfPacketConfig::default())
    })
    .expect("netns b")
    .expect("port h2");
    let there: Vec<Vec<u8>> = (0..10).map(|i| frame(MAC_2, MAC_1, i)).collect();
    for f in &there {
        h1.send(f).expect("send from h1");
        h1.flush().expect("flush");
    }
    assert_eq!(receive(&mut h2, 10), there);
    let back: Vec<Vec<u8>> = (100..105).map(|i| frame(MAC_1, MAC_2, i)).collect();
    for f in &back {
        h2.send(f).expect("send from h2");
        h2.flush().expect("flush");
    }
    assert_eq!(receive(&mut h1, 5), back);

    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .is_ok_and(|s| s.success())
    );
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        let c = lab.child.as_mut().expect("child");
        if let Some(s) = c.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "koi run did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    lab.child = None;
    let mut out = String::new();
    stdout.read_to_string(&mut out).expect("stdout");
    let log = log.join().unwrap_or_default();
    assert!(status.success(), "exit status {status:?}\n{log}\n{out}");
    // Other traffic of the namespaces (IPv6 neighbour discovery) may cross the switch as well.
    let (rx1, tx1) = counters(&out, 1).expect("port 1 counters");
    let (rx2, tx2) = counters(&out, 2).expect("port 2 counters");
    assert!(rx1 >= 10 && tx2 >= 10, "{out}");
    assert!(rx2 >= 5 && tx1 >= 5, "{out}");
    assert!(out.contains("unknown_port 0"), "{out}");
    assert!(log.contains("stopped"), "{log}");
}
