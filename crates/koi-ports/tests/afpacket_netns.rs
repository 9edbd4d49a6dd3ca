//! AF_PACKET ports between two throwaway network namespaces joined by a veth pair: single
//! frames, a batch of 100, jumbo frames, oversized frames, the port not seeing its own
//! transmissions, and an interface that vanishes and comes back. Needs root (CAP_NET_ADMIN,
//! CAP_NET_RAW); without it each test prints a SKIP line and passes.

mod flows;

use flows::{send_flows, spread_check};
use koi_ports::afpacket::{AfPacketConfig, AfPacketPort};
use koi_ports::{Batch, Poller, Port, Readiness, Wake, netns};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const ETHERTYPE: [u8; 2] = [0x88, 0xb5];
const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
/// A bound on waiting for frames that should arrive; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(10);

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Two namespaces `<tag>a`, `<tag>b` with `va` in the first and its veth peer `vb` in the
/// second (MTU 9000, up). Both namespaces (and so the veths) are deleted on drop.
struct Topo {
    a: String,
    b: String,
}

impl Topo {
    fn new() -> Option<Topo> {
        static N: AtomicU32 = AtomicU32::new(0);
        let tag = format!(
            "koipt{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let t = Topo {
            a: format!("{tag}a"),
            b: format!("{tag}b"),
        };
        if !ip(&["netns", "add", &t.a]) {
            eprintln!("SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN)");
            return None;
        }
        assert!(ip(&["netns", "add", &t.b]), "ip netns add {}", t.b);
        t.add_link();
        Some(t)
    }

    fn add_link(&self) {
        let (a, b) = (&self.a, &self.b);
        assert!(ip(&[
            "-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b
        ]));
        for (ns, dev) in [(a, "va"), (b, "vb")] {
            assert!(ip(&["-n", ns, "link", "set", dev, "mtu", "9000", "up"]));
        }
    }

    fn open(&self, ns: &str, dev: &str, cfg: AfPacketConfig) -> AfPacketPort {
        netns::run_in(ns, || AfPacketPort::open(dev, cfg))
            .expect("enter namespace")
            .expect("open AF_PACKET port")
    }
}

impl Drop for Topo {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.a]);
        ip(&["netns", "del", &self.b]);
    }
}

fn frame(dst: [u8; 6], src: [u8; 6], seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ETHERTYPE);
    f.extend_from_slice(b"KOI");
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend((f.len()..len.max(f.len())).map(|i| i as u8));
    f
}

fn ours(f: &[u8]) -> bool {
    f.get(12..17) == Some(&[0x88, 0xb5, b'K', b'O', b'I'][..])
}

/// Receives our test frames until `n` have arrived (or the patience runs out); checks that no
/// batch exceeds 32 packets.
fn receive(port: &mut AfPacketPort, n: usize) -> Vec<Vec<u8>> {
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
fn frames_cross_a_veth_pair_singly_and_in_a_batch_of_100() {
    let Some(t) = Topo::new() else { return };
    let mut pa = t.open(&t.a, "va", AfPacketConfig::default());
    let mut pb = t.open(&t.b, "vb", AfPacketConfig::default());
    assert!(matches!(pa.readiness(), Readiness::Fd(_)));

    let one = frame(MAC_B, MAC_A, 0, 60);
    pa.send(&one).expect("send");
    pa.flush().expect("flush");
    assert_eq!(receive(&mut pb, 1), vec![one.clone()]);

    let sent: Vec<Vec<u8>> = (1..=100)
        .map(|i| frame(MAC_B, MAC_A, i, 64 + i as usize))
        .collect();
    for f in &sent {
        pa.send(f).expect("send");
    }
    pa.flush().expect("flush");
    assert_eq!(receive(&mut pb, 100), sent);
    let sa = pa.stats();
    assert_eq!(sa.tx_packets, 101);
    assert_eq!(sa.tx_bytes, (60 + (1..=100).map(|i| 64 + i).sum::<u64>()));
    assert!(pb.stats().rx_packets >= 101);
    assert_eq!(pb.stats().drops(), 0);

    // PACKET_IGNORE_OUTGOING: the first test frame `va` receives is `vb`'s reply, not one of
    // the 101 frames it sent itself.
    let reply = frame(MAC_A, MAC_B, 7777, 80);
    pb.send(&reply).expect("send reply");
    pb.flush().expect("flush");
    assert_eq!(receive(&mut pa, 1), vec![reply]);
}

#[test]
fn jumbo_frames_pass_and_oversized_frames_are_counted_as_drops() {
    let Some(t) = Topo::new() else { return };
    let mut pa = t.open(&t.a, "va", AfPacketConfig::default());
    let small = AfPacketConfig {
        snaplen: 4000,
        ..AfPacketConfig::default()
    };
    let mut pb = t.open(&t.b, "vb", small);

    let mut pbig = t.open(&t.b, "vb", AfPacketConfig::default());

    // 9014 bytes: a full 9000-byte MTU frame, over the small port's snaplen: it counts a drop
    // and delivers the next frame; the default snaplen takes the jumbo frame intact.
    let jumbo = frame(MAC_B, MAC_A, 1, 9014);
    pa.send(&jumbo).expect("send jumbo");
    let after = frame(MAC_B, MAC_A, 2, 3000);
    pa.send(&after).expect("send");
    pa.flush().expect("flush");
    assert_eq!(receive(&mut pb, 1), vec![after.clone()]);
    assert_eq!(pb.stats().drop_too_big, 1);
    assert_eq!(receive(&mut pbig, 2), vec![jumbo, after]);
    assert_eq!(pbig.stats().drops(), 0);

    // Over the interface MTU (EMSGSIZE) and over the snaplen: counted, not sent, no panic.
    // (Sends are queued: the kernel's EMSGSIZE comes when the queue is flushed.)
    assert!(
        pa.send(&frame(MAC_B, MAC_A, 3, 9100))
            .and_then(|()| pa.flush())
            .is_err()
    );
    assert!(pa.send(&frame(MAC_B, MAC_A, 4, 20000)).is_err());
    assert_eq!(pa.stats().drop_too_big, 2);
    assert_eq!(pa.stats().tx_packets, 2);
}

/// Runs the port's poll loop from inside namespace `ns` (where its interface lives, so that
/// its look at the interface sees what the switch would) until `done` holds or the patience
/// runs out.
fn pump_in(
    ns: &str,
    pa: AfPacketPort,
    done: impl Fn(&AfPacketPort) -> bool + Send,
) -> AfPacketPort {
    netns::run_in(ns, move || {
        let mut pa = pa;
        let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
        let mut poller = Poller::new();
        let deadline = Instant::now() + PATIENCE;
        while !done(&pa) && Instant::now() < deadline {
            poller.wait(&[pa.readiness()], 100).expect("poll");
            if poller.wake(0) == Wake::Error {
                pa.handle_error();
            }
            pa.recv_batch(&mut batch).expect("recv");
        }
        pa
    })
    .expect("enter namespace")
}

#[test]
fn a_vanished_interface_is_retried_until_it_comes_back() {
    let Some(t) = Topo::new() else { return };
    let mut pa = t.open(&t.a, "va", AfPacketConfig::default());
    assert!(ip(&["-n", &t.a, "link", "del", "va"]));

    // The socket reports the loss; the port closes and counts sends as link-down drops.
    pa = pump_in(&t.a, pa, |p| !p.is_open());
    assert!(!pa.is_open(), "the port noticed the interface is gone");
    assert_eq!(pa.readiness(), Readiness::Idle);
    assert!(pa.send(&frame(MAC_B, MAC_A, 1, 60)).is_err());
    assert_eq!(pa.stats().drop_link_down, 1);

    // The interface comes back under the same name: the port reopens it by itself.
    t.add_link();
    let deadline = Instant::now() + PATIENCE;
    while !pa.is_open() && Instant::now() < deadline {
        // The reopen runs in the namespace's context only if we poll from there.
        pa = netns::run_in(&t.a, move || {
            let mut b = Batch::new(64);
            let _ = pa.recv_batch(&mut b);
            pa
        })
        .expect("enter namespace");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(pa.is_open(), "the port reopened the interface");
    let mut pb = t.open(&t.b, "vb", AfPacketConfig::default());
    let f = frame(MAC_B, MAC_A, 2, 60);
    pa.send(&f).expect("send after reopen");
    pa.flush().expect("flush after reopen");
    assert_eq!(receive(&mut pb, 1), vec![f]);
}

#[test]
fn a_link_that_goes_down_and_up_resumes_and_one_deleted_while_down_is_noticed() {
    let Some(t) = Topo::new() else { return };
    let mut pa = t.open(&t.a, "va", AfPacketConfig::default());
    let mut pb = t.open(&t.b, "vb", AfPacketConfig::default());

    // Down: the socket reports it, the port keeps its socket and counts sends as link-down.
    assert!(ip(&["-n", &t.a, "link", "set", "va", "down"]));
    pa = pump_in(&t.a, pa, AfPacketPort::is_down);
    assert!(
        pa.is_down() && pa.is_open(),
        "the port saw the link go down"
    );
    assert_eq!(
        pa.readiness(),
        Readiness::Idle,
        "a down link is looked at, not waited on"
    );
    let _ = pa.send(&frame(MAC_B, MAC_A, 1, 60));
    let _ = pa.flush();
    assert_eq!(pa.stats().drop_link_down, 1, "{:?}", pa.stats());

    // Up again: the port notices by itself and frames flow both ways.
    assert!(ip(&["-n", &t.a, "link", "set", "va", "up"]));
    pa = pump_in(&t.a, pa, |p| !p.is_down());
    assert!(!pa.is_down(), "the port saw the link come back up");
    assert!(matches!(pa.readiness(), Readiness::Fd(_)));
    let f = frame(MAC_A, MAC_B, 2, 60);
    pb.send(&f).expect("send to the port that came back");
    pb.flush().expect("flush");
    assert_eq!(receive(&mut pa, 1), vec![f]);

    // Down, seen as down, and only then deleted: the kernel says nothing more to the socket,
    // and the port still finds out the interface is gone.
    assert!(ip(&["-n", &t.a, "link", "set", "va", "down"]));
    pa = pump_in(&t.a, pa, AfPacketPort::is_down);
    assert!(pa.is_down());
    assert!(ip(&["-n", &t.a, "link", "del", "va"]));
    pa = pump_in(&t.a, pa, |p| !p.is_open());
    assert!(
        !pa.is_open(),
        "the port noticed the interface vanished while down"
    );
}

/// Two sockets on one interface in one fanout group (what `koi run --threads 2` opens for
/// an AF_PACKET port): 64 UDP flows of 20 frames each arrive once each, over both sockets,
/// each flow wholly on one socket and in order.
#[test]
fn a_fanout_group_spreads_flows_over_its_sockets_and_keeps_each_flow_on_one() {
    let Some(t) = Topo::new() else { return };
    let ports = netns::run_in(&t.a, || {
        koi_ports::open_spread(&koi_ports::PortSpec::AfPacket("va".into()), 2)
    })
    .expect("enter namespace")
    .expect("open the spread port");
    assert_eq!(ports.len(), 2);
    let mut ports = ports;
    let mut tx = t.open(&t.b, "vb", AfPacketConfig::default());
    const FLOWS: u16 = 64;
    const EACH: u32 = 20;
    send_flows(&mut tx, FLOWS, EACH);
    spread_check(&mut ports, usize::from(FLOWS), EACH);
}
