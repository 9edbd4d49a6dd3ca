//! A table change made with `koi ctl` takes effect on the very next packet: `koi run
//! examples/l2_forward.p4` in a switch namespace with two veth pairs to two host namespaces;
//! a frame from h1 reaches h2 (entry 1 -> 2), `koi ctl table_modify` points port 1 back at
//! port 1, and the next frame from h1 comes back to h1. Needs root (network namespaces,
//! AF_PACKET); without it the test prints a SKIP line and passes. Only L2 test frames
//! (ethertype 0x88b5, locally administered MACs) inside the test's own namespaces.

use koi_ports::afpacket::{AfPacketConfig, AfPacketPort};
use koi_ports::{Batch, Poller, Port, Wake, netns};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod netns_lab;
use netns_lab::{Lab, MAC_1, MAC_2, PATIENCE, frame};

/// The next test frame received on `port` (other traffic is skipped).
fn receive_one(port: &mut AfPacketPort) -> Option<Vec<u8>> {
    let mut batch = Batch::new(2048);
    let mut poller = Poller::new();
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        poller.wait(&[port.readiness()], 100).expect("poll");
        if poller.wake(0) == Wake::Error {
            port.handle_error();
        }
        port.recv_batch(&mut batch).expect("recv");
        if let Some(f) = batch
            .iter()
            .find(|f| f.get(12..17) == Some(&[0x88, 0xb5, b'K', b'O', b'I'][..]))
        {
            return Some(f.to_vec());
        }
    }
    None
}

fn ctl(sock: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_koi"))
        .arg("ctl")
        .arg("--ctl")
        .arg(sock)
        .args(args)
        .output()
        .expect("koi ctl");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "koi ctl {args:?}: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn ctl_table_change_takes_effect_on_the_next_packet() {
    let Some(mut lab) = Lab::new("koictl") else {
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ctl_netns_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmpdir");
    let sock = dir.join("koi.sock");
    let child = Command::new("ip")
        .args(["netns", "exec", &lab.s, env!("CARGO_BIN_EXE_koi"), "run"])
        .arg(root.join("examples/l2_forward.p4"))
        .args(["--port", "1=s1", "--port", "2=s2", "--entries"])
        .arg(root.join("examples/l2_forward.entries"))
        .arg("--ctl")
        .arg(&sock)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start koi run");
    lab.child = Some(child);
    let deadline = Instant::now() + PATIENCE;
    while UnixStream::connect(&sock).is_err() {
        let c = lab.child.as_mut().expect("child");
        assert!(c.try_wait().expect("wait").is_none(), "koi run exited");
        assert!(
            Instant::now() < deadline,
            "the control socket did not appear"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The socket is bound before the switch opens its ports; it answers once they are open
    // (a frame sent before that would be lost, and the test with it).
    ctl(&sock, &["port_show"]);

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

    let first = frame(MAC_2, MAC_1, 1);
    h1.send(&first).expect("send from h1");
    h1.flush().expect("flush");
    assert_eq!(receive_one(&mut h2).as_ref(), Some(&first));

    // Entry 0 is `1 => 2`; point it back at port 1.
    ctl(&sock, &["table_modify", "fwd", "set_port", "0", "1"]);
    let dump = ctl(&sock, &["table_dump_entry", "fwd", "0"]);
    assert!(dump.contains("set_port - 00:01"), "{dump}");

    let second = frame(MAC_2, MAC_1, 2);
    h1.send(&second).expect("send from h1");
    h1.flush().expect("flush");
    assert_eq!(receive_one(&mut h1).as_ref(), Some(&second));

    let ports = ctl(&sock, &["port_show"]);
    assert!(ports.contains("port 1 (s1): rx "), "{ports}");
}
