//! koi keeps forwarding when things go wrong around it. Three routed IPv4 hosts behind `koi run
//! examples/l2l3_acl.p4` (see `e2e::three_host_router`), and:
//!
//! - malformed frames: truncated Ethernet (runts of 1..13 bytes, which no Linux interface sends,
//!   come from a pcap port), a bare Ethernet header, truncated IPv4 headers, bad IHLs and
//!   versions, lying lengths, a truncated VLAN tag, random garbage, a jumbo frame the egress
//!   link's MTU refuses and one over koi's frame size limit, sent into port 1 while a TCP
//!   transfer runs between hosts 2 and 3: koi stays up, counts them (`koi ctl port_show`,
//!   `stats`) and every pair of hosts, port 1's included, still reaches the other;
//! - a traffic source killed mid-stream (SIGKILL on a UDP sender of host 1), then host 1's link
//!   taken down and its veth deleted: hosts 2 and 3 keep talking, sends to the vanished port are
//!   counted as `link_down`; a new veth of the same name brings port 1 back;
//! - one of koi's own interfaces deleted while koi runs (and a ping crosses the other ports):
//!   the others keep forwarding, koi answers `koi ctl` and stops cleanly on SIGINT;
//! - a flood of new flows into port 1, more than the slow path runs and more than the
//!   megaflow limit holds, while established flows cross from ports 1 and 3: they lose at
//!   most 1% and stay in order, the excess misses are dropped and counted at port 1's
//!   slow-path queue, and `koi ctl` and the metrics endpoint answer throughout.
//!
//! Needs root, ping and ethtool; see `e2e/mod.rs`.

mod e2e;
use e2e::{HOSTS3, Lab, PATIENCE, Proc, ROUTER_MAC, mac, retry, three_host_router, udp_frame};
use koi_ports::Port;
use koi_ports::afpacket::{AfPacketConfig, AfPacketPort};
use pcap_file::pcap::{PcapPacket, PcapWriter};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const HOST_A: &str = "02:00:00:00:01:00";
const A: [u8; 4] = [198, 18, 0, 1];
const B: [u8; 4] = [198, 19, 16, 5];
const C: [u8; 4] = [198, 20, 0, 1];
/// Port 4 (the pcap port) is a VLAN 100 port like port 1.
const PORT4: &str = "table_add vlan_ingress push_vlan 4 0 0&&&0 => 100 10\n";

fn ping_all(lab: &Lab, pairs: &[(usize, usize)]) {
    for &(x, y) in pairs {
        lab.ping(x, HOSTS3[y - 1].3, 2)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A raw socket on host `i`'s interface, for frames the kernel's stack would never send.
fn raw_port(lab: &Lab, i: usize) -> AfPacketPort {
    let h = lab.host(i);
    let cfg = AfPacketConfig {
        snaplen: 16384,
        promisc: false,
        ..AfPacketConfig::default()
    };
    koi_ports::netns::run_in(&h.ns, || AfPacketPort::open(&h.ifname, cfg))
        .expect("netns")
        .expect("raw socket")
}

/// Frames that are malformed in every way a sender can make them, from host A to the router.
fn malformed() -> Vec<Vec<u8>> {
    let (router, a) = (mac(ROUTER_MAC), mac(HOST_A));
    let eth = |ty: u16| -> Vec<u8> {
        let mut f = router.to_vec();
        f.extend_from_slice(&a);
        f.extend_from_slice(&ty.to_be_bytes());
        f
    };
    let good = udp_frame(router, a, A, B, 64, b"koi-e2e malformed");
    let mut out = vec![eth(0x0800)]; // a bare Ethernet header: the IPv4 header is missing
    for n in [1, 10, 19] {
        out.push(good[..14 + n].to_vec()); // truncated IPv4 headers
    }
    for ihl in [0u8, 1, 4, 6, 15] {
        let mut f = good.clone();
        f[14] = 0x40 | ihl; // bad IHL (15: options longer than the frame)
        out.push(f);
    }
    for (at, v) in [(14, 0x65u8), (14, 0x05), (16, 0xff), (17, 0xff), (16, 0)] {
        let mut f = good.clone();
        f[at] = v; // version 6 or 0 in an IPv4 header; total length 0xffxx, 0xff, 0
        out.push(f);
    }
    let mut tagged = eth(0x8100);
    out.push(tagged.clone()); // an 802.1Q ethertype without its tag
    tagged.extend_from_slice(&[0x00, 0x64, 0x08, 0x00, 0x45, 0x00]);
    out.push(tagged); // VLAN 100, then 2 bytes of an IPv4 header
    // Garbage: random lengths and bytes behind the router's MAC (deterministic).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..200 {
        let len = 14 + (next() % 300) as usize;
        let mut f = eth([0x0800, 0x8100, 0x86dd, 0x88b5][(next() % 4) as usize]);
        while f.len() < len {
            f.push(next() as u8);
        }
        out.push(f);
    }
    out
}

/// Whether Linux hands a received frame to packet sockets at all: it drops an 802.1Q frame too
/// short for its tag before (`skb_vlan_untag`, counted in the interface's `rx_dropped`).
fn reaches_packet_sockets(f: &[u8]) -> bool {
    !(f[12..14] == [0x81, 0x00] && f.len() < 18)
}

#[test]
fn malformed_frames_are_counted_and_forwarding_goes_on() {
    let test = "malformed_frames_are_counted_and_forwarding_goes_on";
    // The runts come from a pcap file: port 4.
    let runts_file =
        std::env::temp_dir().join(format!("koi-e2e-runts-{}.pcap", std::process::id()));
    let mut runts: Vec<Vec<u8>> = [1, 2, 6, 12, 13].iter().map(|&n| vec![0x02; n]).collect();
    runts.push(udp_frame(mac(ROUTER_MAC), mac(HOST_A), A, B, 64, b"")[..20].to_vec());
    {
        let f = std::fs::File::create(&runts_file).expect("pcap");
        let mut w = PcapWriter::new(f).expect("pcap writer");
        for r in &runts {
            w.write_packet(&PcapPacket::new(Duration::ZERO, r.len() as u32, r))
                .expect("write");
        }
    }
    let port4 = format!("4=pcap:{},", runts_file.display());
    let lab = e2e::three_host_router_entries(test, &[port4], PORT4);
    let _ = std::fs::remove_file(&runts_file);
    let Some(mut lab) = lab else { return };

    // Link 1 carries jumbo frames; link 2 does not.
    lab.set_mtu(1, 12100);
    let before = (
        lab.port_stats(1),
        lab.port_stats(2),
        lab.stat("program") + lab.stat("pipeline_error"),
    );
    let frames = malformed();
    let jumbo = udp_frame(mac(ROUTER_MAC), mac(HOST_A), A, B, 64, &[0x6a; 9000 - 42]);
    let oversize = udp_frame(mac(ROUTER_MAC), mac(HOST_A), A, B, 64, &[0x6f; 12000 - 42]);

    // Blast them into port 1 while hosts 2 and 3 transfer data.
    let mut h1 = raw_port(&lab, 1);
    let done = Arc::new(AtomicBool::new(false));
    let blaster = {
        let done = Arc::clone(&done);
        let frames = frames.clone();
        std::thread::spawn(move || {
            let (mut sent, mut rounds) = (0u64, 0u64);
            while rounds < 3 || !done.load(Ordering::Relaxed) && rounds < 200 {
                for (k, f) in frames.iter().chain([&jumbo, &oversize]).enumerate() {
                    h1.send(f).expect("send a malformed frame");
                    sent += u64::from(reaches_packet_sockets(f));
                    if k % 16 == 15 {
                        // Sends are queued: push them out before pausing.
                        h1.flush().expect("flush malformed frames");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                h1.flush().expect("flush malformed frames");
                rounds += 1;
            }
            (sent, rounds)
        })
    };
    let transfer = lab.tcp_transfer(2, 3, HOSTS3[2].3, 5003, 512 << 10);
    done.store(true, Ordering::Relaxed);
    let (sent, rounds) = blaster.join().expect("blaster");
    transfer.unwrap_or_else(|e| panic!("while port 1 got malformed frames: {e}"));
    assert!(lab.koi_alive(), "koi died:\n{}", lab.koi_output());

    // Everything port 1 was sent was received or counted as a drop (once koi has caught up).
    let seen = |p1: &koi_ports::Stats| {
        (p1.rx_packets - before.0.rx_packets)
            + (p1.drop_too_big - before.0.drop_too_big)
            + (p1.drop_ring_full - before.0.drop_ring_full)
    };
    e2e::eventually(Duration::from_secs(5), || seen(&lab.port_stats(1)) >= sent);
    let (p1, p2) = (lab.port_stats(1), lab.port_stats(2));
    let program = lab.stat("program") + lab.stat("pipeline_error");
    assert!(
        seen(&p1) >= sent,
        "sent {sent} frames into port 1 (that reach packet sockets), koi accounts for {}: {p1:?}\n{}",
        seen(&p1),
        e2e::run(
            std::process::Command::new("ip").args(["-n", &lab.sw, "-s", "link", "show", "s1"]),
            PATIENCE
        )
        .stdout
    );
    // Each round's 12000-byte frame is counted as too big, unless the receive ring was
    // already full when it came (the kernel then drops it before koi sees it, counted as
    // ring_full): under load that happens to some rounds, never to all.
    let too_big = p1.drop_too_big - before.0.drop_too_big;
    let ring_full = p1.drop_ring_full - before.0.drop_ring_full;
    assert!(
        too_big >= 1 && too_big + ring_full >= rounds,
        "oversize ({rounds} rounds): {p1:?}"
    );
    // Each round's 9000-byte frame reaches port 2 too big for its link, unless port 1's ring
    // was full when it came (the same kernel drop as above, before koi sees it).
    let jumbo_too_big = p2.drop_too_big - before.1.drop_too_big;
    assert!(
        jumbo_too_big >= 1 && jumbo_too_big + ring_full >= rounds,
        "jumbo to port 2 ({rounds} rounds, port 1 ring full {ring_full}): {p2:?}"
    );
    // The program drops at least the bare header, the 3 truncated IPv4 headers and the
    // truncated one behind a VLAN tag of each round (and much of the garbage).
    assert!(
        program - before.2 >= 5 * rounds,
        "program drops {program} (before {})",
        before.2
    );
    let p4 = lab.port_stats(4);
    assert_eq!(
        p4.rx_packets,
        runts.len() as u64,
        "runts from the pcap port: {p4:?}"
    );

    // Every host still reaches every other one, port 1's included.
    ping_all(&lab, &[(1, 2), (2, 3), (3, 1)]);
    lab.tcp_transfer(1, 2, HOSTS3[1].3, 5004, 256 << 10)
        .unwrap_or_else(|e| panic!("{e}"));
    let (status, out) = lab.stop_koi();
    assert!(status.is_some_and(|s| s.success()), "{out}");
}

#[test]
fn killed_sender_and_vanished_host_do_not_stop_the_others() {
    let test = "killed_sender_and_vanished_host_do_not_stop_the_others";
    let Some(mut lab) = three_host_router(test, &[]) else {
        return;
    };
    // A UDP stream from host 1 to host 3, killed mid-stream.
    let mut sender = Proc::spawn(lab.cmd(&lab.host(1).ns, e2e::python()).args([
        "-c",
        "import socket, sys, time\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         print('sending', flush=True)\n\
         while True:\n    s.sendto(b'k' * 200, (sys.argv[1], 9)); time.sleep(0.0005)\n",
        HOSTS3[2].3,
    ]));
    assert!(
        sender.wait_line("sending", PATIENCE),
        "{}",
        sender.output_so_far()
    );
    let start = lab.port_stats(3).tx_packets;
    assert!(
        e2e::eventually(PATIENCE, || lab.port_stats(3).tx_packets > start + 300),
        "the stream from host 1 does not reach host 3: {:?}",
        lab.port_stats(3)
    );
    assert!(sender.running(), "{}", sender.output_so_far());
    sender.kill();

    let h1 = lab.host(1).clone();
    e2e::ip(&["-n", &h1.ns, "link", "set", &h1.ifname, "down"]).expect("link down");
    ping_all(&lab, &[(2, 3), (3, 2)]);
    lab.tcp_transfer(2, 3, HOSTS3[2].3, 5005, 256 << 10)
        .unwrap_or_else(|e| panic!("with host 1's link down: {e}"));

    e2e::ip(&["-n", &h1.ns, "link", "del", &h1.ifname]).expect("link del");
    ping_all(&lab, &[(2, 3), (3, 2)]);
    lab.tcp_transfer(3, 2, HOSTS3[1].3, 5006, 256 << 10)
        .unwrap_or_else(|e| panic!("with host 1's veth deleted: {e}"));
    assert!(lab.koi_alive(), "koi died:\n{}", lab.koi_output());
    // Packets routed to the vanished port are counted, not lost silently.
    let down = lab.port_stats(1).drop_link_down;
    assert!(lab.ping(2, HOSTS3[0].3, 1).is_err(), "host 1 is gone");
    let p1 = lab.port_stats(1);
    assert!(p1.drop_link_down > down, "{p1:?}");

    // A new veth of the same name: koi reopens port 1 by itself.
    lab.wire(&h1);
    let (m, cidr, gw, _) = HOSTS3[0];
    lab.ipv4_host(1, m, cidr, gw);
    retry(Duration::from_secs(15), || lab.ping(1, HOSTS3[1].3, 1))
        .unwrap_or_else(|e| panic!("port 1 did not come back: {e}\n{}", lab.koi_output()));
    ping_all(&lab, &[(1, 2), (1, 3), (2, 3)]);
    let (status, out) = lab.stop_koi();
    assert!(status.is_some_and(|s| s.success()), "{out}");
}

#[test]
fn deleting_a_koi_interface_leaves_the_others_forwarding() {
    let test = "deleting_a_koi_interface_leaves_the_others_forwarding";
    let Some(mut lab) = three_host_router(test, &[]) else {
        return;
    };
    // A steady ping between hosts 1 and 2 while port 3's interface is deleted.
    let pinger = Proc::spawn(lab.cmd(&lab.host(1).ns, "ping").args([
        "-n",
        "-q",
        "-c",
        "40",
        "-i",
        "0.05",
        "-W",
        "2",
        HOSTS3[1].3,
    ]));
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    e2e::ip(&["-n", &lab.sw, "link", "del", &lab.host(3).sw_if]).expect("delete s3");
    let ping = pinger.finish(PATIENCE);
    let received = e2e::number_after(&ping.stdout, "transmitted, ").unwrap_or(0);
    assert!(
        received >= 38,
        "ping 1 -> 2 lost packets when port 3 vanished ({:?} after):\n{}",
        started.elapsed(),
        ping.show()
    );
    assert!(lab.koi_alive(), "koi died:\n{}", lab.koi_output());
    let show = lab.ctl(&["port_show"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(show.contains("port 3 (s3)"), "{show}");
    lab.ctl(&["table_num_entries", "routing"])
        .unwrap_or_else(|e| panic!("{e}"));
    ping_all(&lab, &[(1, 2), (2, 1)]);
    lab.tcp_transfer(1, 2, HOSTS3[1].3, 5007, 256 << 10)
        .unwrap_or_else(|e| panic!("after port 3 vanished: {e}"));
    lab.tcp_transfer(2, 1, HOSTS3[0].3, 5008, 256 << 10)
        .unwrap_or_else(|e| panic!("after port 3 vanished: {e}"));
    // What is routed to port 3 now is counted as link_down.
    assert!(lab.ping(1, HOSTS3[2].3, 1).is_err(), "port 3 is gone");
    let p3 = lab.port_stats(3);
    assert!(p3.drop_link_down >= 1, "{p3:?}");
    let (status, out) = lab.stop_koi();
    assert!(status.is_some_and(|s| s.success()), "{out}");
    assert!(
        out.contains("vanished"),
        "koi did not log the vanished interface:\n{out}"
    );
    // The TCP transfers had their programs compiled to native code, which is not logged.
    assert!(!out.contains("cranelift"), "{out}");
}

/// UDP `src:sport -> dst:dport` from host MAC `from` to the router, with `seq` as payload.
fn flow_frame(from: &str, src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, seq: u32) -> Vec<u8> {
    let mut f = udp_frame(mac(ROUTER_MAC), mac(from), src, dst, 64, &seq.to_be_bytes());
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f
}

/// The flood's pace: a frame every 20 us.
const FLOOD_GAP_US: u64 = 20;

/// Destinations of the flood, each a `switching` entry of its own.
const FLOOD_MACS: u32 = 1000;

fn flood_mac(n: u32) -> [u8; 6] {
    let [_, _, hi, lo] = n.to_be_bytes();
    [0x02, 0xaa, 0, 0, hi, lo]
}

/// GET /metrics from `addr` inside the switch's namespace; whether it answered with koi's
/// slow-path counters.
fn scrape(lab: &Lab, addr: &str) -> bool {
    use std::io::{Read, Write};
    koi_ports::netns::run_in(&lab.sw, || {
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: koi\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    })
    .ok()
    .flatten()
    .is_some_and(|t| t.contains("koi_upcalls_total"))
}

/// A flood of new flows into port 1 (every frame a miss: a slow-path run and a new megaflow;
/// an ACL entry drops them), faster than the slow path can run them, while two established
/// flows cross the switch to host 2: one from host 1 (the flood's port), one from host 3. The
/// misses wait in per-port queues and the excess is dropped there (counted), while the
/// established flows' frames, cache hits, go on at once: each loses at most 1% and none is
/// reordered; `koi ctl` and the metrics endpoint answer throughout.
#[test]
fn a_flood_of_new_flows_does_not_starve_established_ones() {
    let test = "a_flood_of_new_flows_does_not_starve_established_ones";
    if !e2e::tools(test, &["ping", "ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 3, e2e::Layout::HostPerNs) else {
        return;
    };
    for (i, (m, cidr, gw, _)) in HOSTS3.iter().enumerate() {
        lab.ipv4_host(i + 1, m, cidr, gw);
    }
    let flood_entries: String = (0..FLOOD_MACS)
        .map(|n| {
            let m = flood_mac(n).map(|b| format!("{b:02x}")).join(":");
            format!("table_add switching switch_to {m} 100 => 9\n")
        })
        .collect();
    let entries = e2e::l2l3_entries(&lab, &format!("{}{flood_entries}", e2e::THREE_HOSTS));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let metrics = format!("127.0.0.1:{port}");
    let mut args = vec![
        e2e::repo()
            .join("examples/l2l3_acl.p4")
            .display()
            .to_string(),
    ];
    for i in 1..=3 {
        args.extend(["--port".into(), format!("{i}=s{i}")]);
    }
    args.extend(["--entries".into(), entries.display().to_string()]);
    args.extend(["--metrics".into(), metrics.clone()]);
    // Fewer megaflows than the flood's flows: it churns the caches too.
    args.extend(["--max-megaflows".into(), "256".into()]);
    lab.start_koi_args(&args, 3);
    e2e::ip(&["-n", &lab.sw, "link", "set", "lo", "up"]).expect("loopback");

    let (e1, e2) = (
        |seq| flow_frame(HOST_A, A, 1024, B, 5001, seq),
        |seq| flow_frame(HOSTS3[2].0, C, 1024, B, 5002, seq),
    );
    let mut rx = raw_port(&lab, 2);
    let (mut h1, mut h3) = (raw_port(&lab, 1), raw_port(&lab, 3));
    // The established flows' megaflows first.
    for seq in 0..3 {
        h1.send(&e1(seq)).expect("send");
        h3.send(&e2(seq)).expect("send");
    }
    h1.flush().expect("flush");
    h3.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(500));

    let stop = Arc::new(AtomicBool::new(false));
    let receiver = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            // Per established flow: frames received, and frames behind an earlier one.
            let mut got = [(0u64, 0u64, 0u32); 2];
            let mut batch = koi_ports::Batch::new(2048);
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) || last.elapsed() < Duration::from_millis(500) {
                if rx.recv_batch(&mut batch).unwrap_or(0) == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
                last = Instant::now();
                for f in batch.packets() {
                    if f.len() < 46 || f[12..14] != [8, 0] || f[23] != 17 {
                        continue;
                    }
                    let k = match u16::from_be_bytes([f[36], f[37]]) {
                        5001 => 0,
                        5002 => 1,
                        _ => continue,
                    };
                    let seq = u32::from_be_bytes([f[42], f[43], f[44], f[45]]);
                    let (n, late, high) = &mut got[k];
                    if seq < 1000 {
                        continue; // the warm-up's
                    }
                    *n += 1;
                    if seq < *high {
                        *late += 1;
                    }
                    *high = (*high).max(seq);
                }
            }
            got
        })
    };
    let flood = {
        let mut h1 = raw_port(&lab, 1);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            // Paced at about 50,000 frames a second, every one a miss but for the few
            // whose megaflow is still there from the turn before: far more than koi's slow
            // path (a debug build here) runs.
            let start = Instant::now();
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..20 {
                    // To one of the FLOOD_MACS in turn: each frame hits its own `switching`
                    // entry, a megaflow of its own, and goes to port 9, which does not exist.
                    let mut f = flow_frame(HOST_A, A, 1024, B, 7, n);
                    f[..6].copy_from_slice(&flood_mac(n % FLOOD_MACS));
                    h1.send(&f).expect("flood");
                    n += 1;
                }
                h1.flush().expect("flush flood");
                let due = start + Duration::from_micros(u64::from(n) * FLOOD_GAP_US);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            n
        })
    };
    // The established flows: 1,000 frames a second each, for 3 seconds, while koi is asked
    // for its counters and metrics every half second.
    let (mut sent, mut answered, mut asked) = (0u32, 0, 0);
    let start = Instant::now();
    let mut next_ask = start;
    while sent < 3000 {
        h1.send(&e1(1000 + sent)).expect("send");
        h3.send(&e2(1000 + sent)).expect("send");
        h1.flush().expect("flush");
        h3.flush().expect("flush");
        sent += 1;
        if Instant::now() >= next_ask {
            asked += 1;
            answered += usize::from(lab.ctl(&["stats"]).is_ok() && scrape(&lab, &metrics));
            next_ask += Duration::from_millis(500);
        }
        let due = start + Duration::from_millis(u64::from(sent));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flooded = flood.join().expect("flood");
    let got = receiver.join().expect("receiver");
    assert!(lab.koi_alive(), "koi died:\n{}", lab.koi_output());
    let stats = lab.ctl(&["stats"]).unwrap_or_else(|e| panic!("{e}"))
        + &lab.ctl(&["cache_show"]).unwrap_or_else(|e| panic!("{e}"))
        + &lab.ctl(&["port_show"]).unwrap_or_else(|e| panic!("{e}"));
    let context = format!(
        "{flooded} flood frames; received (count, reordered, highest) {got:?} of {sent} each\n{stats}"
    );
    assert_eq!(
        answered, asked,
        "koi ctl stats and metrics answered: {context}"
    );
    assert!(
        lab.stat("upcall_queue_full") > 0,
        "the flood should have been more than the slow path runs: {context}"
    );
    for (k, (n, late, _)) in got.iter().enumerate() {
        assert!(
            *n * 100 >= u64::from(sent) * 99,
            "established flow {} lost more than 1%: {context}",
            k + 1
        );
        assert_eq!(*late, 0, "established flow {} reordered: {context}", k + 1);
    }
}
