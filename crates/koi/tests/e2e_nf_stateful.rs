//! The stateful network functions of `examples/` end to end, between network namespaces.
//!
//! Firewall (`examples/firewall`): the same scenario (`examples/firewall/scenario.py`: real
//! TCP and UDP connections between an inside and an outside host, and crafted TCP, UDP and
//! ICMP packets between two addresses no host has) runs once through a Linux router with
//! nftables (`ct state established,related accept; ct state new iif inside accept; drop`,
//! kernel conntrack with its CLOSE and UDP timeouts shortened in the router's namespace) and
//! once through `koi run examples/firewall/firewall.p4` with the same timeouts: every step's
//! verdict must be the same, and the one the scenario expects; koi's verdict counters must
//! count what passed and what was dropped.
//!
//! Rate limiter (`examples/rate_limiter`): iperf3 TCP and UDP between two hosts through
//! `koi run examples/rate_limiter/rate_limiter.p4`, policed by a source meter and a class
//! meter set with `koi ctl meter_set_rates`: the rate that arrives (iperf3's receiver, as
//! Ethernet frames) within 5% of the configured peak rate, and the marked share of what
//! arrives (a sniffer on the receiver counts bytes by DSCP) that of the rates.
//!
//! NAPT (`examples/napt`): two inside hosts and an outside host through `koi run
//! examples/napt/napt.p4`; `examples/napt/traffic.py` moves real TCP (2 MiB each way, both
//! inside hosts at once) and UDP through it, a port-forward, a hairpin and a UDP mapping that
//! times out; the contents, the addresses the servers saw and the counters are checked.
//!
//! Needs root, nftables (`nft`), iperf3, ethtool and the Python venv with scapy (see
//! `e2e/mod.rs`).

mod e2e;
use e2e::*;
use std::process::Command;
use std::time::Duration;

const INSIDE_MAC: &str = "02:00:00:00:01:01";
const OUTSIDE_MAC: &str = "02:00:00:00:02:01";

/// What the firewall scenario's steps must do (the scenario's order).
const FIREWALL_EXPECTED: &[(&str, &str)] = &[
    ("tcp_connect_from_inside", "pass"),
    ("tcp_connect_from_outside", "drop"),
    ("udp_request_reply", "pass"),
    ("a_syn", "pass"),
    ("a_synack", "pass"),
    ("a_ack", "pass"),
    ("a_data_out", "pass"),
    ("a_data_in", "pass"),
    ("syn_from_outside", "drop"),
    ("stray_ack_from_outside", "drop"),
    ("stray_ack_from_inside", "drop"),
    ("udp_c_request", "pass"),
    ("udp_c_reply", "pass"),
    ("udp_from_other_port", "drop"),
    ("echo_request_in", "pass"),
    ("echo_reply_out", "pass"),
    ("echo_request_from_outside", "drop"),
    ("b_syn", "pass"),
    ("b_synack", "pass"),
    ("b_ack", "pass"),
    ("b_rst", "pass"),
    ("udp_d_request", "pass"),
    ("b_after_close_timeout", "drop"),
    ("udp_d_reply_after_timeout", "drop"),
    ("a_still_established", "pass"),
];

/// The Linux router's conntrack settings for the scenario (in its own namespace): the CLOSE
/// timeout 1 s, the unreplied UDP timeout 2 s, and no pick-up of connections from mid-stream
/// packets (koi's firewall opens connections only with a SYN).
const SYSCTLS: &[(&str, &str)] = &[
    ("nf_conntrack_tcp_timeout_close", "1"),
    ("nf_conntrack_udp_timeout", "2"),
    ("nf_conntrack_tcp_loose", "0"),
];

/// The same timeouts for koi (microseconds; the others Linux's defaults), and routes to the
/// hosts and to the scenario's two host-less addresses.
const FIREWALL_ENTRIES: &str = "\
table_add zone set_zone 1 => 1
table_add zone set_zone 2 => 2
table_add routing set_nexthop 10.0.1.1/32 => 02:00:00:00:00:fe 02:00:00:00:01:01 1
table_add routing set_nexthop 10.0.1.50/32 => 02:00:00:00:00:fe 02:00:00:00:01:01 1
table_add routing set_nexthop 203.0.113.5/32 => 02:00:00:00:00:fe 02:00:00:00:02:01 2
table_add routing set_nexthop 203.0.113.50/32 => 02:00:00:00:00:fe 02:00:00:00:02:01 2
table_set_default ct_timeouts set_timeouts 120000000 60000000 432000000000 120000000 120000000 1000000 2000000 120000000 30000000
";

/// Seconds the scenario waits before its expiry steps: past CLOSE (1 s) and UDP (2 s).
const WAIT: &str = "3";

/// Two hosts, inside (port 1) and outside (port 2), with the firewall's MAC as gateway.
fn firewall_lab(test: &str) -> Option<(Lab, std::path::PathBuf)> {
    if !tools(test, &["ethtool", "nft"]) {
        return None;
    }
    let python = scapy_python(test)?;
    let lab = Lab::new(test, 2, Layout::HostPerNs)?;
    lab.ipv4_host(1, INSIDE_MAC, "10.0.1.1/24", "10.0.1.254");
    lab.ipv4_host(2, OUTSIDE_MAC, "203.0.113.5/24", "203.0.113.254");
    Some((lab, python))
}

/// Runs the scenario; its verdicts.
fn run_scenario(lab: &Lab, python: &std::path::Path) -> Vec<(String, String)> {
    let (i, o) = (lab.host(1), lab.host(2));
    let out = run(
        Command::new(python)
            .arg(repo().join("examples/firewall/scenario.py"))
            .args([&i.ns, &i.ifname, &o.ns, &o.ifname, WAIT])
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        Duration::from_secs(60),
    );
    assert!(out.ok(), "scenario.py: {}", out.show());
    let line = out.stdout.lines().last().unwrap_or("");
    let v: Vec<Vec<String>> = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("scenario.py printed `{line}`: {e}\n{}", out.show()));
    v.into_iter()
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

/// Reads `/proc/sys/net/netfilter/NAME` in the namespace `ns` (`None`: this process's).
fn netfilter_sysctl(ns: Option<&str>, name: &str) -> String {
    let path = format!("/proc/sys/net/netfilter/{name}");
    let read = || std::fs::read_to_string(&path).map(|s| s.trim().to_string());
    match ns {
        None => read().unwrap_or_else(|e| panic!("{path}: {e}")),
        Some(ns) => koi_ports::netns::run_in(ns, read)
            .unwrap_or_else(|e| panic!("enter {ns}: {e}"))
            .unwrap_or_else(|e| panic!("{path} in {ns}: {e}")),
    }
}

/// Puts back the values of this process's namespace that a test found changed.
struct Restore(Vec<(String, String)>);

impl Drop for Restore {
    fn drop(&mut self) {
        for (name, value) in &self.0 {
            let _ = std::fs::write(format!("/proc/sys/net/netfilter/{name}"), value);
        }
    }
}

/// The Linux router in the lab's switch namespace: forwarding, the firewall's MAC and
/// addresses, static neighbours, the nftables ruleset and the conntrack settings.
fn linux_router(lab: &Lab) -> Restore {
    let sw = lab.sw.as_str();
    for (dev, addr) in [("s1", "10.0.1.254/24"), ("s2", "203.0.113.254/24")] {
        ip(&["-n", sw, "link", "set", dev, "address", ROUTER_MAC]).unwrap();
        ip(&["-n", sw, "addr", "add", addr, "dev", dev]).unwrap();
    }
    for (addr, mac, dev) in [
        ("10.0.1.1", INSIDE_MAC, "s1"),
        ("10.0.1.50", INSIDE_MAC, "s1"),
        ("203.0.113.5", OUTSIDE_MAC, "s2"),
        ("203.0.113.50", OUTSIDE_MAC, "s2"),
    ] {
        ip(&[
            "-n", sw, "neigh", "replace", addr, "lladdr", mac, "dev", dev,
        ])
        .unwrap();
    }
    let ruleset = "table inet fw {
  chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    ct state new iifname \"s1\" accept
  }
}
";
    let rules = lab.dir.join("fw.nft");
    std::fs::write(&rules, ruleset).unwrap();
    for args in [
        vec!["sysctl", "-qw", "net.ipv4.ip_forward=1"],
        vec!["nft", "-f", rules.to_str().unwrap()],
    ] {
        let o = run(lab.cmd(sw, args[0]).args(&args[1..]), PATIENCE);
        assert!(o.ok(), "{args:?} in {sw}: {}", o.show());
    }
    // The conntrack sysctls are per namespace on current kernels; check that setting them
    // in the router's left this process's namespace alone, and put back anything that moved.
    let before: Vec<(String, String)> = SYSCTLS
        .iter()
        .map(|(n, _)| (n.to_string(), netfilter_sysctl(None, n)))
        .collect();
    let restore = Restore(before.clone());
    for (name, value) in SYSCTLS {
        let o = run(
            lab.cmd(sw, "sysctl")
                .args(["-qw", &format!("net.netfilter.{name}={value}")]),
            PATIENCE,
        );
        assert!(o.ok(), "sysctl {name}={value} in {sw}: {}", o.show());
        assert_eq!(netfilter_sysctl(Some(sw), name), *value, "{name} in {sw}");
    }
    for (name, value) in &before {
        assert_eq!(
            netfilter_sysctl(None, name),
            *value,
            "{name} is not per namespace on this kernel (restored)"
        );
    }
    restore
}

fn verdict_counters(lab: &Lab) -> Vec<u64> {
    (0..7)
        .map(|i| {
            let out = lab
                .ctl(&["counter_read", "verdict", &i.to_string()])
                .unwrap_or_else(|e| panic!("{e}"));
            number_after(&out, "packets=").unwrap_or_else(|| panic!("counter_read: {out}"))
        })
        .collect()
}

#[test]
fn firewall_gives_linux_conntracks_verdicts() {
    let test = "firewall_gives_linux_conntracks_verdicts";
    let expected: Vec<(String, String)> = FIREWALL_EXPECTED
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();

    // Linux first.
    let Some((lab, python)) = firewall_lab(test) else {
        return;
    };
    let restore = linux_router(&lab);
    let linux = run_scenario(&lab, &python);
    drop(restore);
    drop(lab);

    // koi.
    let Some((mut lab, python)) = firewall_lab(test) else {
        return;
    };
    let entries = lab.dir.join("firewall.entries");
    std::fs::write(&entries, FIREWALL_ENTRIES).unwrap();
    lab.start_koi(&repo().join("examples/firewall/firewall.p4"), &entries, &[]);
    let koi = run_scenario(&lab, &python);

    for (k, (want, (l, o))) in expected.iter().zip(linux.iter().zip(&koi)).enumerate() {
        assert_eq!(l, o, "step {k}: Linux {l:?}, koi {o:?}");
        assert_eq!(want, l, "step {k}: the scenario expects {want:?}");
    }
    assert_eq!(linux.len(), expected.len(), "Linux: {linux:?}");
    assert_eq!(koi.len(), expected.len(), "koi: {koi:?}");

    // Every crafted packet counted once under its verdict (the real connections add more).
    let c = verdict_counters(&lab);
    let (new, established, outside, invalid) = (c[0], c[1], c[2], c[3]);
    // Opened: A, C, the echo, B, D (crafted) and the real TCP and UDP connections.
    assert!(new >= 7, "new {new}: {c:?}");
    assert!(established >= 10, "established {established}: {c:?}");
    // New from the outside: the SYN, the stray ACK, UDP from another port, the echo
    // request, B and D after their timeouts, the real connection's SYNs.
    assert!(outside >= 7, "new from outside {outside}: {c:?}");
    assert_eq!(invalid, 1, "invalid (the stray ACK from the inside): {c:?}");
    assert_eq!(c[4], 0, "collisions: {c:?}");
}

/// Rate limiter: host 1 (10.0.0.1, port 1) and host 2 (10.0.0.2, port 2) on one link through
/// `koi run examples/rate_limiter/rate_limiter.p4`. Meters are in bytes (or packets) per
/// microsecond, as simple_switch_CLI takes them; a rate of R bytes per microsecond is 8 R
/// Mbit/s of frames.
const LIMITER_ENTRIES: &str = "\
table_add wire send 1 => 2
table_add wire send 2 => 1
table_add source meter_source 10.0.0.1/32 => 1 8
table_add class meter_class 46&&&0x3f 17&&&0xff => 2 10 10
";

/// iperf3's receiver-side payload rate (bits per second) of a client run's JSON.
fn iperf_received_bps(json: &str) -> f64 {
    let v: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("iperf3 JSON: {e}\n{json}"));
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or_else(|| panic!("no end.sum_received.bits_per_second:\n{json}"))
}

/// Counts, in host 2's namespace, the IPv4 bytes (frames) to UDP port 5201 by DSCP for
/// `seconds`; prints `DSCP BYTES` lines.
const DSCP_COUNT: &str = r#"
import collections, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((sys.argv[1], 0))
s.settimeout(0.2)
end = time.time() + float(sys.argv[2])
n = collections.Counter()
print("listening", flush=True)
while time.time() < end:
    try:
        f = s.recv(65536)
    except socket.timeout:
        continue
    if len(f) > 38 and f[23] == 17 and f[36:38] == b"\x14\x51":
        n[f[15] >> 2] += len(f)
for d, b in sorted(n.items()):
    print(d, b, flush=True)
"#;

fn limiter_lab(test: &str) -> Option<Lab> {
    if !tools(test, &["ethtool", "iperf3"]) {
        return None;
    }
    let mut lab = Lab::new(test, 2, Layout::HostPerNs)?;
    for (i, addr) in [(1, "10.0.0.1/24"), (2, "10.0.0.2/24")] {
        let h = lab.host(i).clone();
        ip(&["-n", &h.ns, "addr", "add", addr, "dev", &h.ifname]).unwrap();
        for args in [
            vec!["ethtool", "-K", h.ifname.as_str(), "tx", "off"],
            // Every data segment a full 1460 bytes in a 1514-byte frame.
            vec!["sysctl", "-qw", "net.ipv4.tcp_timestamps=0"],
        ] {
            let o = run(lab.cmd(&h.ns, args[0]).args(&args[1..]), PATIENCE);
            assert!(o.ok(), "{args:?}: {}", o.show());
        }
    }
    let entries = lab.dir.join("rate_limiter.entries");
    std::fs::write(&entries, LIMITER_ENTRIES).unwrap();
    lab.start_koi(
        &repo().join("examples/rate_limiter/rate_limiter.p4"),
        &entries,
        &[],
    );
    Some(lab)
}

/// Runs an iperf3 client on host 1 against a one-off server on host 2; the client's JSON.
fn iperf(lab: &Lab, args: &[&str]) -> String {
    let mut server = Proc::spawn(lab.cmd(&lab.host(2).ns, "iperf3").args([
        "-s",
        "-1",
        "-B",
        "10.0.0.2",
        "--forceflush",
    ]));
    assert!(
        server.wait_line("listening", PATIENCE),
        "iperf3 -s: {}",
        server.output_so_far()
    );
    let client = run(
        lab.cmd(&lab.host(1).ns, "iperf3")
            .args(["-c", "10.0.0.2", "-J"])
            .args(args),
        Duration::from_secs(40),
    );
    let _ = server.finish(Duration::from_secs(5));
    assert!(client.ok(), "iperf3 {args:?}: {}", client.show());
    client.stdout
}

fn color_bytes(lab: &Lab) -> [u64; 3] {
    let mut c = [0; 3];
    for (i, b) in c.iter_mut().enumerate() {
        let out = lab
            .ctl(&["counter_read", "colors", &i.to_string()])
            .unwrap_or_else(|e| panic!("{e}"));
        *b = number_after(&out, "bytes=").unwrap_or_else(|| panic!("counter_read: {out}"));
    }
    c
}

/// Asserts `got` (Mbit/s) within 5% of `want`.
fn within_5_percent(what: &str, got: f64, want: f64) {
    eprintln!("{what}: {got:.2} Mbit/s of frames, configured {want:.2}");
    assert!(
        (got - want).abs() <= 0.05 * want,
        "{what}: {got:.2} Mbit/s of frames, configured {want:.2} (5% allowed)"
    );
}

#[test]
fn rate_limiter_polices_tcp_per_source_and_udp_per_class() {
    let test = "rate_limiter_polices_tcp_per_source_and_udp_per_class";
    let Some(lab) = limiter_lab(test) else {
        return;
    };
    // TCP from 10.0.0.1, policed by its source meter: 10 Mbit/s committed, 20 peak (2.5
    // bytes per microsecond), bursts of 100,000 bytes. TCP backs off at the drops and
    // settles at the peak rate; above the committed rate its segments are marked.
    lab.ctl(&[
        "meter_set_rates",
        "source_bytes",
        "1",
        "1.25:100000",
        "2.5:100000",
    ])
    .unwrap();
    let json = iperf(&lab, &["-t", "6"]);
    // 1460 bytes of payload in a 1514-byte frame.
    let tcp = iperf_received_bps(&json) / 1e6 * 1514.0 / 1460.0;
    within_5_percent("TCP through the source meter", tcp, 20.0);
    let c = color_bytes(&lab);
    assert!(c[1] > 0 && c[2] > 0, "TCP: colours (bytes) {c:?}");

    // UDP EF (DSCP 46) offered at 50 Mbit/s, policed by its class's byte meter: 15 Mbit/s
    // committed, 25 peak (3.125 bytes per microsecond); yellow remarked to DSCP 10. The
    // source meter is off for this run.
    lab.ctl(&[
        "meter_set_rates",
        "source_bytes",
        "1",
        "1000:100000",
        "1000:100000",
    ])
    .unwrap();
    lab.ctl(&[
        "meter_set_rates",
        "class_bytes",
        "2",
        "1.875:30000",
        "3.125:30000",
    ])
    .unwrap();
    let h2 = lab.host(2).clone();
    let mut sniff = Proc::spawn(
        lab.cmd(&h2.ns, python())
            .args(["-c", DSCP_COUNT, &h2.ifname, "5"]),
    );
    assert!(
        sniff.wait_line("listening", PATIENCE),
        "{}",
        sniff.output_so_far()
    );
    let json = iperf(
        &lab,
        &["-u", "-b", "50M", "-l", "1400", "--dscp", "46", "-t", "6"],
    );
    // 1400 bytes of payload in a 1442-byte frame.
    let udp = iperf_received_bps(&json) / 1e6 * 1442.0 / 1400.0;
    within_5_percent("UDP EF through the class meter", udp, 25.0);
    // What arrived during the sniffer's 5 seconds: committed (DSCP 46) and marked (DSCP 10)
    // in the proportion of the rates, 15 : 10.
    let out = sniff.finish(Duration::from_secs(10));
    let mut by_dscp = std::collections::BTreeMap::new();
    for l in out.stdout.lines().filter(|l| *l != "listening") {
        let mut w = l.split_whitespace().map(|x| x.parse::<u64>().unwrap());
        by_dscp.insert(w.next().unwrap(), w.next().unwrap());
    }
    let (ef, af11) = (
        by_dscp.get(&46).copied().unwrap_or(0),
        by_dscp.get(&10).copied().unwrap_or(0),
    );
    let marked = af11 as f64 / (ef + af11).max(1) as f64;
    eprintln!("marked share of UDP bytes {marked:.3} (DSCP: bytes {by_dscp:?})");
    assert!(
        (marked - 0.4).abs() < 0.05,
        "marked share {marked:.3} of UDP bytes, expected 0.40: {by_dscp:?}"
    );
}

/// NAPT: inside hosts A (10.0.1.1, port 1) and B (10.0.1.2, port 2), the outside host
/// 203.0.113.5 (port 3), the NAT's address 203.0.113.1, TCP 8080 forwarded to B:80, the UDP
/// mapping timeout 2 s.
const NAPT_ENTRIES: &str = "\
table_add zone set_zone 1 => 1
table_add zone set_zone 2 => 1
table_add zone set_zone 3 => 2
table_add routing set_nexthop 10.0.1.1/32 => 02:00:00:00:01:01 1 1
table_add routing set_nexthop 10.0.1.2/32 => 02:00:00:00:01:02 2 1
table_add routing set_nexthop 203.0.113.5/32 => 02:00:00:00:02:01 3 2
table_add nat_address to_nat 203.0.113.1 =>
table_add port_forward forward_to 6 8080 => 10.0.1.2 80 02:00:00:00:01:02 2
table_add forward_reverse reply_from 10.0.1.2 80 6 => 8080
table_set_default nat_config set_nat 203.0.113.1 02:00:00:00:00:fe 7440000000 2000000
";

/// Whether `peer` (`[address, port]` as a server saw it) is the NAT's address and a port of
/// its pool.
fn from_pool(peer: &serde_json::Value) -> bool {
    let port = peer[1].as_u64().unwrap_or(0);
    peer[0] == "203.0.113.1" && (32768..=65535).contains(&port)
}

#[test]
fn napt_carries_real_tcp_and_udp_with_forward_hairpin_and_timeout() {
    let test = "napt_carries_real_tcp_and_udp_with_forward_hairpin_and_timeout";
    if !tools(test, &["ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 3, Layout::HostPerNs) else {
        return;
    };
    lab.ipv4_host(1, INSIDE_MAC, "10.0.1.1/24", "10.0.1.254");
    lab.ipv4_host(2, "02:00:00:00:01:02", "10.0.1.2/24", "10.0.1.254");
    // The outside host reaches the NAT's address on its link.
    lab.ipv4_host(3, OUTSIDE_MAC, "203.0.113.5/24", "203.0.113.1");
    let entries = lab.dir.join("napt.entries");
    std::fs::write(&entries, NAPT_ENTRIES).unwrap();
    lab.start_koi(&repo().join("examples/napt/napt.p4"), &entries, &[]);
    let (a, b, o) = (&lab.host(1).ns, &lab.host(2).ns, &lab.host(3).ns);
    let out = run(
        Command::new(python())
            .arg(repo().join("examples/napt/traffic.py"))
            .args([a, b, o, "3"])
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        Duration::from_secs(90),
    );
    assert!(out.ok(), "traffic.py: {}", out.show());
    let r: serde_json::Value = serde_json::from_str(out.stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("traffic.py: {e}\n{}", out.show()));
    eprintln!("traffic.py: {r}");

    // Both inside hosts' 2 MiB came back intact, each connection from a pool port of the
    // NAT's address, two different ports.
    let tcp = &r["tcp"];
    assert_eq!(tcp["intact"], serde_json::json!([true, true]), "{r}");
    let peers = tcp["peers"].as_array().expect("peers");
    assert_eq!(peers.len(), 2, "{r}");
    assert!(peers.iter().all(from_pool), "{r}");
    assert_ne!(peers[0], peers[1], "{r}");
    // Every UDP datagram answered; the server saw two mappings of the NAT's address.
    assert_eq!(r["udp"]["replies"], serde_json::json!([20, 20]), "{r}");
    let udp_peers = r["udp"]["peers"].as_array().expect("peers");
    assert_eq!(udp_peers.len(), 2, "{r}");
    assert!(udp_peers.iter().all(from_pool), "{r}");
    // The port-forward reached B's server with the outside client's own address; the
    // hairpin with the NAT's.
    assert_eq!(r["forward"]["intact"], true, "{r}");
    let fwd = r["forward"]["peers"].as_array().expect("peers");
    assert!(fwd.len() == 1 && fwd[0][0] == "203.0.113.5", "{r}");
    assert_eq!(r["hairpin"]["intact"], true, "{r}");
    let hp = r["hairpin"]["peers"].as_array().expect("peers");
    assert!(hp.len() == 1 && from_pool(&hp[0]), "{r}");
    // The mapping answered at once, filtered another port, and timed out.
    let t = &r["timeout"];
    assert!(from_pool(&t["mapped"]), "{r}");
    assert_eq!(t["first"], true, "{r}");
    assert_eq!(t["other_port"], false, "{r}");
    assert_eq!(t["late"], false, "{r}");

    // The counters agree: mappings made, packets dropped for lack of one, no collision.
    let c: Vec<u64> = (0..9)
        .map(|i| {
            let out = lab
                .ctl(&["counter_read", "nat", &i.to_string()])
                .unwrap_or_else(|e| panic!("{e}"));
            number_after(&out, "packets=").unwrap_or_else(|| panic!("{out}"))
        })
        .collect();
    // New mappings: the two TCP connections, the two UDP sockets, the hairpin, the timeout
    // test's socket (and its datagram again after the timeout is not sent: 6 at least).
    assert!(c[0] >= 6, "new mappings: {c:?}");
    assert!(
        c[5] >= 2,
        "dropped without a mapping (other port, late): {c:?}"
    );
    assert_eq!(c[6], 0, "collisions: {c:?}");
}
