//! AF_XDP ports on a veth pair inside a throwaway network namespace (deleted, with its veths,
//! when the test ends), the other end driven by the crate's AF_PACKET port: frames arrive
//! through `recv_batch` byte-identical, frames sent through the port arrive at the peer, 1000
//! frames each way with none lost, oversized frames counted, the XDP program detached when the
//! port closes (and shared by two ports on one interface), and an interface that vanishes and
//! comes back. Needs root; without it (or without AF_XDP) each test prints a SKIP line and
//! passes.

mod flows;

use flows::{send_flows, spread_check};
use koi_ports::afpacket::{AfPacketConfig, AfPacketPort};
use koi_ports::xdp::{AttachMode, XdpConfig, XdpMode, XdpPort};
use koi_ports::{Batch, Poller, Port, PortError, Readiness, Wake, netns};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const ETHERTYPE: [u8; 2] = [0x88, 0xb5];
const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
/// A bound on waiting for something that should happen; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(10);

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn ip_out(args: &[&str]) -> String {
    Command::new("ip")
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// A namespace holding the veth pair `va` / `vb` (MTU 1500, up), deleted on drop.
struct Ns {
    name: String,
}

impl Ns {
    fn new(queues: u32) -> Option<Ns> {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "koixdp{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        if !ip(&["netns", "add", &name]) {
            eprintln!("SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN)");
            return None;
        }
        let ns = Ns { name };
        ns.add_link(queues);
        Some(ns)
    }

    fn add_link(&self, queues: u32) {
        let q = queues.to_string();
        assert!(ip(&[
            "-n",
            &self.name,
            "link",
            "add",
            "va",
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            "vb",
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ]));
        for dev in ["va", "vb"] {
            assert!(ip(&["-n", &self.name, "link", "set", dev, "up"]));
        }
    }

    fn xdp(&self, dev: &str, cfg: XdpConfig) -> Option<XdpPort> {
        match netns::run_in(&self.name, || XdpPort::open(dev, cfg)).expect("enter namespace") {
            Ok(p) => Some(p),
            Err(e) => {
                let msg = e.to_string();
                if msg.contains("not supported") || msg.contains("Operation not permitted") {
                    eprintln!("SKIP: {msg}");
                    None
                } else {
                    panic!("open xdp port: {msg}")
                }
            }
        }
    }

    fn afpacket(&self, dev: &str) -> AfPacketPort {
        netns::run_in(&self.name, || {
            AfPacketPort::open(dev, AfPacketConfig::default())
        })
        .expect("enter namespace")
        .expect("open AF_PACKET port")
    }

    /// Whether `dev` has a generic XDP program attached.
    /// Whether `dev` has an XDP program, in either mode.
    fn has_xdp(&self, dev: &str) -> bool {
        self.xdp_mode(dev).is_some()
    }

    /// `dev`'s XDP mode as `ip link` shows it: "generic", "native", or none.
    fn xdp_mode(&self, dev: &str) -> Option<&'static str> {
        let out = ip_out(&["-n", &self.name, "link", "show", dev]);
        if out.contains("xdpgeneric") {
            Some("generic")
        } else if out.contains("prog/xdp") {
            Some("native")
        } else {
            None
        }
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.name]);
    }
}

fn frame(dst: [u8; 6], src: [u8; 6], seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ETHERTYPE);
    f.extend_from_slice(b"KOI");
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend((f.len()..len.max(f.len())).map(|i| (i as u32 ^ seq) as u8));
    f
}

fn ours(f: &[u8]) -> bool {
    f.get(12..17) == Some(&[0x88, 0xb5, b'K', b'O', b'I'][..])
}

/// Receives our test frames on `port` until `n` have arrived (or the patience runs out), the
/// way `koi run` polls: sleep in `poll(2)` on the port's readiness, then take a batch.
fn receive(port: &mut dyn Port, n: usize) -> Vec<Vec<u8>> {
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
    let mut poller = Poller::new();
    let mut got = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while got.len() < n && Instant::now() < deadline {
        poller.wait(&[port.readiness()], 100).expect("poll");
        if poller.wake(0) == Wake::Error {
            port.handle_error();
        }
        let k = port.recv_batch(&mut batch).expect("recv");
        assert!(k <= koi_ports::BATCH_SIZE);
        got.extend(batch.iter().filter(|f| ours(f)).map(<[u8]>::to_vec));
    }
    got
}

#[test]
fn frames_cross_both_ways_byte_identical() {
    // veth has driver-mode XDP: by default the program goes there.
    cross(XdpMode::Auto, "native");
}

#[test]
fn frames_cross_both_ways_byte_identical_in_generic_mode() {
    cross(XdpMode::Generic, "generic");
}

/// Frames of every size cross an XDP port attached in `mode` (which `ip link` must show as
/// `shown`) and its AF_PACKET peer, both ways, byte for byte.
fn cross(mode: XdpMode, shown: &str) {
    let Some(ns) = Ns::new(1) else { return };
    // Room for the largest frame a UMEM frame holds.
    for dev in ["va", "vb"] {
        assert!(ip(&["-n", &ns.name, "link", "set", dev, "mtu", "2000"]));
    }
    let cfg = XdpConfig {
        mode,
        ..XdpConfig::default()
    };
    let Some(mut xa) = ns.xdp("va", cfg) else {
        return;
    };
    let mut pb = ns.afpacket("vb");
    assert!(matches!(xa.readiness(), Readiness::Fd(_)));
    assert_eq!(xa.name(), "xdp:va");
    assert_eq!(ns.xdp_mode("va"), Some(shown), "the XDP mode");

    assert_eq!(xa.uses_bpf_link(), Some(true));

    // The readiness descriptor wakes a sleeping poller when a frame arrives (after the link
    // notifications of the attach, which also make it readable, have been read).
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
    while xa.recv_batch(&mut batch).expect("recv") > 0 {}
    let first = frame(MAC_A, MAC_B, 999, 60);
    pb.send(&first).expect("send from the peer");
    pb.flush().expect("flush");
    let mut poller = Poller::new();
    poller.wait(&[xa.readiness()], 5000).expect("poll");
    assert_eq!(poller.wake(0), Wake::Ready, "poll(2) woke for the frame");
    assert_eq!(receive(&mut xa, 1), vec![first]);

    // Peer -> XDP port: every size from the minimum to the largest that fits a frame.
    let max = XdpConfig::default().max_rx_frame();
    let sent: Vec<Vec<u8>> = [14usize, 60, 61, 64, 128, 1000, 1514, max]
        .iter()
        .enumerate()
        .map(|(i, &len)| frame(MAC_A, MAC_B, i as u32, len.max(19)))
        .collect();
    for f in &sent {
        pb.send(f).expect("send from the peer");
        pb.flush().expect("flush");
    }
    assert_eq!(receive(&mut xa, sent.len()), sent);
    let s = xa.stats();
    assert!(s.rx_packets >= sent.len() as u64);
    assert_eq!(s.drops(), 0, "{s}");

    // XDP port -> peer.
    let back: Vec<Vec<u8>> = (0..20)
        .map(|i| frame(MAC_B, MAC_A, 100 + i, 60 + 70 * i as usize))
        .collect();
    for f in &back {
        xa.send(f).expect("send through the xdp port");
    }
    xa.flush().expect("flush");
    assert_eq!(receive(&mut pb, back.len()), back);
    let s = xa.stats();
    assert_eq!(s.tx_packets, 20);
    assert_eq!(s.tx_bytes, back.iter().map(|f| f.len() as u64).sum::<u64>());
    assert_eq!(s.drops(), 0, "{s}");
}

#[test]
fn a_thousand_frames_each_way_none_lost() {
    let Some(ns) = Ns::new(1) else { return };
    let Some(mut xa) = ns.xdp("va", XdpConfig::default()) else {
        return;
    };
    let mut pb = ns.afpacket("vb");
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);

    // Peer -> XDP port, in bursts of 50 with the port drained in between (a moderate rate:
    // the veth's receive backlog holds 1000 frames).
    let sent: Vec<Vec<u8>> = (0..1000)
        .map(|i| frame(MAC_A, MAC_B, i, 60 + (i as usize * 7) % 1400))
        .collect();
    let mut got = Vec::new();
    for burst in sent.chunks(50) {
        for f in burst {
            pb.send(f).expect("send from the peer");
            pb.flush().expect("flush");
        }
        while xa.recv_batch(&mut batch).expect("recv") > 0 {
            got.extend(batch.iter().filter(|f| ours(f)).map(<[u8]>::to_vec));
        }
    }
    got.extend(receive(&mut xa, sent.len() - got.len()));
    assert_eq!(got.len(), sent.len(), "frames lost: {}", xa.stats());
    assert!(got == sent, "frames arrived changed or out of order");
    assert_eq!(xa.stats().drops(), 0);

    // XDP port -> peer, flushed every 32 frames.
    let back: Vec<Vec<u8>> = (0..1000)
        .map(|i| frame(MAC_B, MAC_A, 5000 + i, 60 + (i as usize * 13) % 1400))
        .collect();
    let mut got = Vec::new();
    for burst in back.chunks(32) {
        for f in burst {
            xa.send(f).expect("send through the xdp port");
        }
        xa.flush().expect("flush");
        while pb.recv_batch(&mut batch).expect("recv") > 0 {
            got.extend(batch.iter().filter(|f| ours(f)).map(<[u8]>::to_vec));
        }
    }
    got.extend(receive(&mut pb, back.len() - got.len()));
    assert_eq!(got.len(), back.len(), "frames lost: {}", xa.stats());
    assert!(got == back, "frames arrived changed or out of order");
    let s = xa.stats();
    assert_eq!(s.tx_packets, 1000);
    assert_eq!(s.drops(), 0, "{s}");
}

#[test]
fn oversized_frames_are_counted_as_drops() {
    let Some(ns) = Ns::new(1) else { return };
    assert!(ip(&["-n", &ns.name, "link", "set", "va", "mtu", "4000"]));
    assert!(ip(&["-n", &ns.name, "link", "set", "vb", "mtu", "4000"]));
    let Some(mut xa) = ns.xdp("va", XdpConfig::default()) else {
        return;
    };
    let mut pb = ns.afpacket("vb");

    // Received: larger than a UMEM frame minus the kernel's headroom; the kernel drops it and
    // the port counts it from the socket's statistics. The next frame still arrives.
    let big = frame(MAC_A, MAC_B, 1, 3000);
    let after = frame(MAC_A, MAC_B, 2, 100);
    pb.send(&big).expect("send big");
    pb.flush().expect("flush");
    pb.send(&after).expect("send");
    pb.flush().expect("flush");
    assert_eq!(receive(&mut xa, 1), vec![after]);
    let deadline = Instant::now() + PATIENCE;
    while xa.stats().drop_too_big == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(xa.stats().drop_too_big, 1, "{}", xa.stats());

    // Sent: larger than a frame (2048) is refused and counted; so is a frame over the snaplen.
    let r = xa.send(&frame(MAC_B, MAC_A, 3, 2049));
    assert!(matches!(r, Err(PortError::TooBig(_, 2049, 2048))), "{r:?}");
    assert_eq!(xa.stats().drop_too_big, 2);
    assert_eq!(xa.stats().tx_packets, 0);
    drop(xa);
    let small = XdpConfig {
        snaplen: 500,
        ..XdpConfig::default()
    };
    let Some(mut xs) = ns.xdp("va", small) else {
        return;
    };
    let r = xs.send(&frame(MAC_B, MAC_A, 4, 600));
    assert!(matches!(r, Err(PortError::TooBig(_, 600, 500))), "{r:?}");
    // Received over the snaplen: counted, not delivered.
    pb.send(&frame(MAC_A, MAC_B, 5, 600)).expect("send");
    pb.flush().expect("flush");
    let ok = frame(MAC_A, MAC_B, 6, 400);
    pb.send(&ok).expect("send");
    pb.flush().expect("flush");
    assert_eq!(receive(&mut xs, 1), vec![ok]);
    assert_eq!(xs.stats().drop_too_big, 2, "{}", xs.stats());
}

#[test]
fn dropping_the_last_port_detaches_the_program() {
    let Some(ns) = Ns::new(2) else { return };
    let Some(x0) = ns.xdp("va", XdpConfig::default()) else {
        return;
    };
    assert!(ns.has_xdp("va"));
    let x1 = ns
        .xdp(
            "va",
            XdpConfig {
                queue: 1,
                ..XdpConfig::default()
            },
        )
        .expect("a second queue of the same interface");
    assert_eq!(x1.name(), "xdp:va@1");
    drop(x0);
    assert!(ns.has_xdp("va"), "the program stays while a port uses it");
    drop(x1);
    let deadline = Instant::now() + PATIENCE;
    while ns.has_xdp("va") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!ns.has_xdp("va"), "the XDP program is detached");
    // The interface is usable again by a new port (nothing left behind).
    let x2 = ns.xdp("va", XdpConfig::default()).expect("reopen");
    assert!(ns.has_xdp("va"));
    drop(x2);
    let deadline = Instant::now() + PATIENCE;
    while ns.has_xdp("va") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!ns.has_xdp("va"));
}

#[test]
fn the_netlink_attach_works_and_is_undone() {
    let Some(ns) = Ns::new(1) else { return };
    let cfg = XdpConfig {
        attach: AttachMode::Netlink,
        ..XdpConfig::default()
    };
    let Some(mut xa) = ns.xdp("va", cfg) else {
        return;
    };
    assert_eq!(xa.uses_bpf_link(), Some(false));
    assert!(ns.has_xdp("va"));
    let mut pb = ns.afpacket("vb");
    let f = frame(MAC_A, MAC_B, 1, 100);
    pb.send(&f).expect("send from the peer");
    pb.flush().expect("flush");
    assert_eq!(receive(&mut xa, 1), vec![f]);
    // Dropped on another thread, in another namespace: the detach still reaches the interface.
    std::thread::spawn(move || drop(xa)).join().expect("drop");
    assert!(!ns.has_xdp("va"), "the XDP program is detached");
}

#[test]
fn a_vanished_interface_is_retried_until_it_comes_back() {
    let Some(ns) = Ns::new(1) else { return };
    let Some(mut xa) = ns.xdp("va", XdpConfig::default()) else {
        return;
    };
    assert!(ip(&["-n", &ns.name, "link", "set", "va", "down"]));
    // A link that is down: noticed through the link notifications, sends count as link_down.
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
    let mut poller = Poller::new();
    let deadline = Instant::now() + PATIENCE;
    while xa.send(&frame(MAC_B, MAC_A, 0, 60)).is_ok() && Instant::now() < deadline {
        poller.wait(&[xa.readiness()], 100).expect("poll");
        xa.recv_batch(&mut batch).expect("recv");
    }
    assert!(xa.stats().drop_link_down >= 1, "{}", xa.stats());
    assert!(ip(&["-n", &ns.name, "link", "set", "va", "up"]));

    // The interface disappears: the readiness descriptor wakes the poller, the port closes.
    assert!(ip(&["-n", &ns.name, "link", "del", "va"]));
    let deadline = Instant::now() + PATIENCE;
    while xa.is_open() && Instant::now() < deadline {
        poller.wait(&[xa.readiness()], 1000).expect("poll");
        if poller.wake(0) == Wake::Error {
            xa.handle_error();
        }
        if poller.wake(0) != Wake::Nothing {
            xa.recv_batch(&mut batch).expect("recv");
        }
    }
    assert!(!xa.is_open(), "the port noticed the interface is gone");
    assert_eq!(xa.readiness(), Readiness::Idle);
    let before = xa.stats().drop_link_down;
    assert!(xa.send(&frame(MAC_B, MAC_A, 1, 60)).is_err());
    assert_eq!(xa.stats().drop_link_down, before + 1);

    // It comes back under the same name: the port reopens it by itself (polled from the
    // namespace, where the name is looked up).
    ns.add_link(1);
    let deadline = Instant::now() + PATIENCE;
    while !xa.is_open() && Instant::now() < deadline {
        xa = netns::run_in(&ns.name, move || {
            let mut b = Batch::new(64);
            let _ = xa.recv_batch(&mut b);
            xa
        })
        .expect("enter namespace");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(xa.is_open(), "the port reopened the interface");
    assert!(ns.has_xdp("va"));
    let mut pb = ns.afpacket("vb");
    let f = frame(MAC_A, MAC_B, 2, 60);
    pb.send(&f).expect("send from the peer");
    pb.flush().expect("flush");
    assert_eq!(receive(&mut xa, 1), vec![f.clone()]);
    let g = frame(MAC_B, MAC_A, 3, 60);
    xa.send(&g).expect("send after reopen");
    xa.flush().expect("flush");
    assert_eq!(receive(&mut pb, 1), vec![g]);
}

#[test]
fn spec_opens_an_xdp_port() {
    let Some(ns) = Ns::new(1) else { return };
    let spec = koi_ports::PortSpec::parse("xdp:va").expect("parse");
    let r = netns::run_in(&ns.name, || {
        koi_ports::open(&spec).map(|p| p.name().to_string())
    })
    .expect("enter namespace");
    match r {
        Ok(name) => assert_eq!(name, "xdp:va"),
        Err(e) if e.to_string().contains("not supported") => eprintln!("SKIP: {e}"),
        Err(e) => panic!("{e}"),
    }
    let missing = koi_ports::PortSpec::parse("xdp:nosuch0").expect("parse");
    let e = netns::run_in(&ns.name, || {
        koi_ports::open(&missing).err().map(|e| e.to_string())
    })
    .expect("enter namespace")
    .unwrap_or_default();
    assert_eq!(e, "xdp:nosuch0: no such interface");
}

/// `xdp:va` for two poll threads on a veth with two queues: one AF_XDP socket per queue (one
/// XDP program between them); 64 UDP flows of 20 frames each, sent from the peer (whose
/// transmit queue, chosen by flow, is the queue they arrive on), arrive once each, each flow
/// on one socket and in order, both sockets some flows. With one queue, one socket.
#[test]
fn an_unqueued_xdp_port_takes_a_socket_per_queue_and_flows_stay_on_one() {
    let Some(ns) = Ns::new(2) else { return };
    let spec = koi_ports::PortSpec::parse("xdp:va").unwrap();
    let opened =
        netns::run_in(&ns.name, || koi_ports::open_spread(&spec, 2)).expect("enter namespace");
    let mut ports = match opened {
        Ok(p) => p,
        Err(e) if e.to_string().contains("not supported") => {
            eprintln!("SKIP: {e}");
            return;
        }
        Err(e) => panic!("open xdp:va: {e}"),
    };
    assert_eq!(ports.len(), 2, "a socket per queue");
    let mut tx = ns.afpacket("vb");
    const FLOWS: u16 = 64;
    const EACH: u32 = 20;
    send_flows(&mut tx, FLOWS, EACH);
    spread_check(&mut ports, usize::from(FLOWS), EACH);
    drop(ports);
    // A named queue, or one thread, is one socket.
    let named = koi_ports::PortSpec::parse("xdp:va@1").unwrap();
    let one = netns::run_in(&ns.name, || koi_ports::open_spread(&named, 2))
        .expect("enter namespace")
        .expect("open xdp:va@1");
    assert_eq!(one.len(), 1);
}
