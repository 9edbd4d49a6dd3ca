//! TAP ports: a TAP device created by koi in a throwaway namespace, checked against an
//! AF_PACKET socket on the same interface both ways (what koi writes to the TAP the kernel
//! receives on the interface; what is sent on the interface koi reads from the TAP). Needs
//! root; without it the test prints a SKIP line and passes.

use koi_ports::afpacket::{AfPacketConfig, AfPacketPort};
use koi_ports::tap::TapPort;
use koi_ports::{Batch, Poller, Port, netns};
use std::process::Command;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(10);

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.0]);
    }
}

fn frame(seq: u8) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x88, 0xb5, b'K', b'O', b'I', seq,
    ];
    f.resize(60, seq);
    f
}

fn receive(port: &mut dyn Port, n: usize) -> Vec<Vec<u8>> {
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
    let mut poller = Poller::new();
    let mut got = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while got.len() < n && Instant::now() < deadline {
        poller.wait(&[port.readiness()], 100).expect("poll");
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

#[test]
fn frames_cross_a_tap_device_both_ways() {
    let ns = Ns(format!("koitap{}", std::process::id()));
    if !ip(&["netns", "add", &ns.0]) {
        eprintln!("SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN)");
        return;
    }
    let (mut tap, mut raw) = netns::run_in(&ns.0, || {
        let tap = TapPort::open("ktap0").expect("create TAP device");
        let raw = AfPacketPort::open("ktap0", AfPacketConfig::default()).expect("AF_PACKET");
        (tap, raw)
    })
    .expect("enter namespace");
    assert_eq!(tap.name(), "tap:ktap0");

    let to_kernel: Vec<Vec<u8>> = (0..5).map(frame).collect();
    for f in &to_kernel {
        tap.send(f).expect("write to TAP");
    }
    tap.flush().expect("flush");
    assert_eq!(receive(&mut raw, 5), to_kernel);

    let to_koi: Vec<Vec<u8>> = (10..50).map(frame).collect();
    for f in &to_koi {
        raw.send(f).expect("send on interface");
    }
    raw.flush().expect("flush");
    assert_eq!(receive(&mut tap, 40), to_koi);
    assert_eq!(tap.stats().tx_packets, 5);
    assert!(tap.stats().rx_packets >= 40);
    assert!(tap.send(&vec![0u8; 20_000]).is_err());
    assert_eq!(tap.stats().drop_too_big, 1);
}
