//! The tunnelling network functions end to end, between network namespaces: scapy plays what
//! the kernel here cannot (MPLS routers' neighbours, gNBs and UEs, CPEs: no MPLS, GTP or PPPoE
//! modules), real Linux hosts answer through the functions, and every frame scapy checks is
//! compared byte for byte with one it built itself (tests/scapy/nf_frames.py).
//!
//! - MPLS: one `koi run` with three pipelines of `examples/mpls/mpls.p4`, PE1, P and PE2
//!   (their entries files), joined by veth pairs in the switch namespace; CE1 and CE2 are
//!   Linux hosts. Pings and a TCP transfer cross every FEC's path (one label popped by P,
//!   explicit null, two labels, a swap to PE2's label) both ways; scapy probes are checked on
//!   the link PE1-P (label stacks pushed, uniform TTL), the link P-PE2 (swapped, popped) and
//!   at CE2; a probe whose TTL expires at P arrives on the first link only, and P counts it.
//! - UPF: `examples/upf/upf.p4` with `upf.entries`, and `examples/upf/controller.py` (finsy)
//!   installing the sessions of a sessions file. The gNB side (scapy) sends G-PDUs with PDU
//!   session containers, the data network host receives the UE packets decapsulated and
//!   marked; its packets to the UEs reach the gNB side as G-PDUs with the session's TEID and
//!   QFI; a UE pings the data network host through the tunnel; the controller answers a
//!   GTP-U echo request. Then the sessions file changes (a session moved to another gNB and
//!   QFI, one removed, one added) and, on SIGHUP, the controller modifies, removes and
//!   installs: the traffic follows. The per-session counters and the drop counters equal
//!   what was sent, as `koi ctl` and the controller's report (SIGUSR1) show them.
//! - BNG: `examples/bng/bng.p4` with `bng.entries`, and `examples/bng/controller.py`. CPEs
//!   (scapy) open their PPPoE sessions by discovery (PADI/PADO, PADR/PADS) and the controller
//!   answers LCP echo requests; upstream frames reach the core host without their QinQ tags
//!   and PPPoE, its packets reach the CPEs in their sessions; a CPE pings the core host; a
//!   subscriber's downstream meter polices a burst; a PADT closes a session, whose traffic is
//!   then dropped. Counters as for the UPF.
//!
//! Needs root, `ping`, `ethtool` and `KOI_PYTHON` (scapy, finsy: `scripts/py-venv.sh`); see
//! `e2e/mod.rs`. Each test is bounded by the harness's waits (about 10-20 seconds each).

mod e2e;

use e2e::{Lab, Layout, PATIENCE, Proc, eventually, ip, number_after, repo, tools};
use std::path::{Path, PathBuf};
use std::process::Command;

fn must(r: Result<(), String>) {
    r.unwrap_or_else(|e| panic!("{e}"));
}

fn script() -> PathBuf {
    repo().join("tests/scapy/nf_frames.py")
}

/// `nf_frames.py ARGS...` in namespace `ns`.
fn frames(lab: &Lab, py: &Path, ns: &str, args: &[&str]) -> Command {
    let mut c = lab.cmd(ns, py);
    c.arg(script()).args(args);
    c
}

/// Starts a sniffer of `suite` on `iface` in `ns` (with `extra` arguments) and waits until it
/// is ready.
fn sniffer(lab: &Lab, py: &Path, ns: &str, iface: &str, suite: &str, extra: &[&str]) -> Proc {
    let mut args = vec!["sniff", iface, suite];
    args.extend_from_slice(extra);
    let mut p = Proc::spawn(&mut frames(lab, py, ns, &args));
    assert!(
        p.wait_line("ready", PATIENCE),
        "the sniffer of {suite} on {iface} did not start:\n{}",
        p.output_so_far()
    );
    p
}

/// Runs `nf_frames.py ARGS...` in `ns` to its end; it must succeed. Its stdout.
fn run_frames(lab: &Lab, py: &Path, ns: &str, args: &[&str]) -> String {
    let o = e2e::run(&mut frames(lab, py, ns, args), PATIENCE);
    assert!(o.ok(), "nf_frames.py {}: {}", args.join(" "), o.show());
    print!("{}", o.stdout);
    o.stdout
}

/// Waits for a sniffer's verdict: every case as expected.
fn verdict(p: Proc, what: &str) -> String {
    let o = p.finish(PATIENCE);
    assert!(o.ok(), "{what}:\n{}", o.show());
    assert!(o.stdout.contains(" 0 failed"), "{what}:\n{}", o.show());
    print!("{}", o.stdout);
    o.stdout
}

/// Sends `suite` from `(ns, iface)` while `sniffs` (ns, iface, suite, extra) watch; each
/// sniffer's cases must all hold. The sender's output (its `usage` lines).
fn exchange(
    lab: &Lab,
    py: &Path,
    from: (&str, &str),
    suite: &str,
    extra: &[&str],
    sniffs: &[(&str, &str, &str, Vec<&str>)],
) -> String {
    let procs: Vec<(Proc, String)> = sniffs
        .iter()
        .map(|(ns, iface, s, more)| {
            let mut all: Vec<&str> = extra.to_vec();
            all.extend(more.iter().copied());
            (
                sniffer(lab, py, ns, iface, s, &all),
                format!("{s} on {iface}"),
            )
        })
        .collect();
    let mut args = vec!["send", from.1, suite];
    args.extend_from_slice(extra);
    let sent = run_frames(lab, py, from.0, &args);
    for (p, what) in procs {
        verdict(p, &what);
    }
    sent
}

/// Adds the `usage DIR ID PACKETS BYTES` lines of `out` into `totals`.
fn add_usage(totals: &mut std::collections::BTreeMap<(String, u32), (u64, u64)>, out: &str) {
    for l in out.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if let ["usage", dir, id, p, b] = w[..] {
            let e = totals
                .entry((dir.to_string(), id.parse().expect("id")))
                .or_insert((0, 0));
            e.0 += p.parse::<u64>().expect("packets");
            e.1 += b.parse::<u64>().expect("bytes");
        }
    }
}

/// `koi ctl counter_read NAME INDEX`: (packets, bytes).
/// Frames the switch dropped because its slow path could not take them (`upcall_queue_full`
/// and `upcall_limit` in `koi ctl stats`).
fn slow_path_drops(lab: &Lab) -> u64 {
    let out = lab.ctl(&["stats"]).unwrap_or_else(|e| panic!("{e}"));
    ["upcall_queue_full ", "upcall_limit "]
        .iter()
        .map(|k| number_after(&out, k).unwrap_or_else(|| panic!("{k}in {out}")))
        .sum()
}

fn counter(lab: &Lab, pipeline: Option<&str>, name: &str, index: u32) -> (u64, u64) {
    let idx = index.to_string();
    let mut args = Vec::new();
    if let Some(p) = pipeline {
        args.extend(["--pipeline", p]);
    }
    args.extend(["counter_read", name, &idx]);
    let out = lab.ctl(&args).unwrap_or_else(|e| panic!("{e}"));
    (
        number_after(&out, "packets=").unwrap_or_else(|| panic!("{out}")),
        number_after(&out, "bytes=").unwrap_or_else(|| panic!("{out}")),
    )
}

/// Host `i` as a Linux IPv4 host: MAC, addresses (CIDR), a route through `gateway` whose
/// MAC is static (no ARP crosses the functions), transmit checksums computed in software.
fn linux_host(lab: &Lab, i: usize, mac: &str, addrs: &[&str], route: &str, gw: &str, gw_mac: &str) {
    let h = lab.host(i);
    let (ns, dev) = (h.ns.as_str(), h.ifname.as_str());
    must(ip(&["-n", ns, "link", "set", dev, "address", mac]));
    for a in addrs {
        must(ip(&["-n", ns, "addr", "add", a, "dev", dev]));
    }
    must(ip(&[
        "-n", ns, "neigh", "replace", gw, "lladdr", gw_mac, "dev", dev,
    ]));
    must(ip(&["-n", ns, "route", "add", route, "via", gw]));
    let o = e2e::run(
        Command::new("ip").args(["netns", "exec", ns, "ethtool", "-K", dev, "tx", "off"]),
        PATIENCE,
    );
    assert!(o.ok(), "ethtool: {}", o.show());
}

/// Host `i` as the place scapy plays hosts without IP: only its MAC (the kernel answers
/// nothing on it).
fn scapy_host(lab: &Lab, i: usize, mac: &str) {
    let h = lab.host(i);
    must(ip(&["-n", &h.ns, "link", "set", &h.ifname, "address", mac]));
}

/// A controller script (`examples/NAME/controller.py ARGS...`) in the switch namespace,
/// against the switch's P4Runtime server at 127.0.0.1:9559.
fn controller(lab: &Lab, py: &Path, name: &str, args: &[&str]) -> Proc {
    let mut c = lab.cmd(&lab.sw, py);
    c.arg(repo().join("examples").join(name).join("controller.py"))
        .args([
            "--grpc",
            "127.0.0.1:9559",
            "--koi",
            env!("CARGO_BIN_EXE_koi"),
        ])
        .args(args)
        .env("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
        .env("PYTHONUNBUFFERED", "1");
    Proc::spawn(&mut c)
}

fn signal(p: &Proc, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &p.pid().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{sig} {}", p.pid());
}

fn python(test: &str) -> Option<PathBuf> {
    e2e::venv_python(test, "KOI_PYTHON", "import scapy.all, finsy")
}

#[test]
fn mpls_core_of_three_routers_carries_pings_tcp_and_scapy_probes() {
    let test = "mpls_core_of_three_routers_carries_pings_tcp_and_scapy_probes";
    let Some(py) = python(test) else { return };
    if !tools(test, &["ping", "ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 2, Layout::HostPerNs) else {
        return;
    };
    // The core links, PE1-P (ca1-ca2) and P-PE2 (cb1-cb2), with room for the labels.
    for (a, b) in [("ca1", "ca2"), ("cb1", "cb2")] {
        must(ip(&[
            "-n", &lab.sw, "link", "add", a, "type", "veth", "peer", "name", b,
        ]));
        for x in [a, b] {
            must(ip(&["-n", &lab.sw, "link", "set", x, "mtu", "1600", "up"]));
        }
    }
    linux_host(
        &lab,
        1,
        "02:00:00:00:01:01",
        &["10.1.0.1/16"],
        "default",
        "10.1.255.254",
        "02:00:00:00:0a:01",
    );
    linux_host(
        &lab,
        2,
        "02:00:00:00:01:02",
        &["10.2.0.1/16", "10.2.1.1/16", "10.2.2.1/16", "10.2.3.1/16"],
        "default",
        "10.2.255.254",
        "02:00:00:00:0a:03",
    );
    let prog = repo().join("examples/mpls/mpls.p4");
    let entries = |n: &str| {
        format!(
            "{n}={}",
            repo().join(format!("examples/mpls/{n}.entries")).display()
        )
    };
    let mut args: Vec<String> = Vec::new();
    for n in ["pe1", "p", "pe2"] {
        args.extend(["--pipeline".into(), format!("{n}={}", prog.display())]);
        args.extend(["--entries".into(), entries(n)]);
    }
    for (port, spec) in [
        ("1", format!("{}@pe1", lab.host(1).sw_if)),
        ("2", "ca1@pe1".into()),
        ("1", "ca2@p".into()),
        ("2", "cb1@p".into()),
        ("1", "cb2@pe2".into()),
        ("2", format!("{}@pe2", lab.host(2).sw_if)),
    ] {
        args.extend(["--port".into(), format!("{port}={spec}")]);
    }
    args.extend(["--grpc".into(), "none".into()]);
    lab.start_koi_args(&args, 2);

    // Real traffic over every FEC's path, both ways.
    for dst in ["10.2.0.1", "10.2.1.1", "10.2.2.1", "10.2.3.1"] {
        lab.ping(1, dst, 2).unwrap_or_else(|e| panic!("{e}"));
    }
    lab.tcp_transfer(1, 2, "10.2.2.1", 5101, 256 << 10)
        .unwrap_or_else(|e| panic!("{e}"));
    lab.tcp_transfer(2, 1, "10.1.0.1", 5102, 256 << 10)
        .unwrap_or_else(|e| panic!("{e}"));

    // scapy probes, checked on both core links and at CE2.
    let (h1, h2) = (lab.host(1).clone(), lab.host(2).clone());
    let sw = lab.sw.clone();
    exchange(
        &lab,
        &py,
        (&h1.ns, &h1.ifname),
        "mpls_ce1",
        &[],
        &[
            (&sw, "ca2", "mpls_link_a", vec![]),
            (&sw, "cb2", "mpls_link_b", vec![]),
            (&h2.ns, &h2.ifname, "mpls_ce2", vec!["--sink-udp", "5000"]),
        ],
    );
    // The probe whose TTL expired at P, counted there (DROP_TTL = 3); none elsewhere.
    assert_eq!(counter(&lab, Some("p"), "drops", 3).0, 1);
    assert_eq!(counter(&lab, Some("pe1"), "drops", 3).0, 0);
    assert_eq!(counter(&lab, Some("pe2"), "drops", 3).0, 0);
    assert!(lab.koi_alive());
}

/// The sessions of the UPF test: (file name, text). The second moves session 1 to gNB 2 with
/// QFI 1, removes session 2 and adds session 3.
const UPF_SESSIONS: [&str; 2] = [
    "1 10.45.0.1 0x101 0xa00101 10.100.0.2 9\n2 10.45.0.2 0x102 0xa00102 10.100.0.2 2\n",
    "1 10.45.0.1 0x101 0xa00201 10.100.0.3 1\n3 10.45.0.3 0x103 0xb00103 10.100.0.3 9\n",
];

#[test]
fn upf_sessions_from_a_controller_tunnel_both_ways_and_follow_changes() {
    let test = "upf_sessions_from_a_controller_tunnel_both_ways_and_follow_changes";
    let Some(py) = python(test) else { return };
    if !tools(test, &["ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 2, Layout::HostPerNs) else {
        return;
    };
    // Host 1: the gNBs (scapy); host 2: the data network's host.
    scapy_host(&lab, 1, "02:00:00:00:01:01");
    linux_host(
        &lab,
        2,
        "02:00:00:00:01:02",
        &["10.200.0.2/24"],
        "10.45.0.0/16",
        "10.200.0.1",
        "02:00:00:00:0b:06",
    );
    let files: Vec<PathBuf> = (0..2)
        .map(|k| {
            let p = lab.dir.join(format!("sessions{k}.txt"));
            std::fs::write(&p, UPF_SESSIONS[k]).expect("sessions file");
            p
        })
        .collect();
    let live = lab.dir.join("sessions.txt");
    std::fs::copy(&files[0], &live).expect("sessions file");
    let upf = repo().join("examples/upf");
    let args: Vec<String> = vec![
        upf.join("upf.p4").display().to_string(),
        "--port".into(),
        format!("1={}", lab.host(1).sw_if),
        "--port".into(),
        format!("2={}", lab.host(2).sw_if),
        "--entries".into(),
        upf.join("upf.entries").display().to_string(),
        "--cpu-port".into(),
        "255".into(),
        "--grpc".into(),
        "127.0.0.1:9559".into(),
    ];
    lab.start_koi_args(&args, 2);
    let live_s = live.display().to_string();
    let mut ctl = controller(&lab, &py, "upf", &["--sessions", &live_s]);
    assert!(
        ctl.wait_line("ready: device 1, 2 sessions", PATIENCE),
        "the UPF controller did not get ready:\n{}\n{}",
        ctl.output_so_far(),
        lab.koi_output()
    );
    let (g, d) = (lab.host(1).clone(), lab.host(2).clone());
    let mut usage = std::collections::BTreeMap::new();
    let f0 = files[0].display().to_string();
    let f1 = files[1].display().to_string();

    // Sessions 1 and 2: uplink, downlink, a ping of the data network host, an echo.
    let phase = |usage: &mut std::collections::BTreeMap<_, _>, now: &str, before: &[&str]| {
        let mut extra = vec!["--file", now];
        extra.extend_from_slice(before);
        let sent = exchange(
            &lab,
            &py,
            (&g.ns, &g.ifname),
            "upf_ul",
            &extra,
            &[(&d.ns, &d.ifname, "upf_ul", vec!["--sink-udp", "5000"])],
        );
        add_usage(usage, &sent);
        let sent = exchange(
            &lab,
            &py,
            (&d.ns, &d.ifname),
            "upf_dl",
            &extra,
            &[(&g.ns, &g.ifname, "upf_dl", vec![])],
        );
        add_usage(usage, &sent);
        let pinged = run_frames(
            &lab,
            &py,
            &g.ns,
            &["ping-gtp", &g.ifname, "--file", now, "--count", "3"],
        );
        assert!(pinged.contains("3/3 answered"), "{pinged}");
        add_usage(usage, &pinged);
    };
    phase(&mut usage, &f0, &[]);
    let echo = run_frames(
        &lab,
        &py,
        &g.ns,
        &["ask", &g.ifname, "upf_echo", "--file", &f0],
    );
    assert!(echo.contains("1 cases ok, 0 failed"), "{echo}");
    assert!(
        eventually(PATIENCE, || ctl.output_so_far().contains(
            "echo request from 10.100.0.2 (sequence 16962): answered"
        )),
        "{}",
        ctl.output_so_far()
    );

    // The sessions change: the controller follows on SIGHUP.
    std::fs::copy(&files[1], &live).expect("sessions file");
    signal(&ctl, "HUP");
    assert!(
        ctl.wait_line(
            "sessions: 1 installed, 1 modified, 1 removed, 2 active",
            PATIENCE
        ),
        "{}",
        ctl.output_so_far()
    );
    phase(&mut usage, &f1, &["--before", &f0]);

    // Every session counted what it forwarded, as scapy sent it.
    for ((dir, sid), (packets, bytes)) in &usage {
        let name = if dir == "ul" {
            "uplink_usage"
        } else {
            "downlink_usage"
        };
        assert_eq!(
            counter(&lab, None, name, *sid),
            (*packets, *bytes),
            "{name}[{sid}]"
        );
    }
    assert_eq!(usage.len(), 6, "{usage:?}");
    // Drops by reason: unknown TEID (0x999 twice, removed session 2 once), spoofed UE (once
    // per phase), unknown UE (10.45.9.9 twice, removed session 2 once).
    assert_eq!(counter(&lab, None, "drops", 5).0, 3);
    assert_eq!(counter(&lab, None, "drops", 6).0, 2);
    assert_eq!(counter(&lab, None, "drops", 7).0, 3);
    // The controller reads the same counters over P4Runtime.
    signal(&ctl, "USR1");
    let (p, b) = usage[&("ul".to_string(), 1)];
    let (dp, db) = usage[&("dl".to_string(), 1)];
    let line = format!(
        "usage session 1 (10.45.0.1): uplink {p} packets {b} bytes, downlink {dp} packets {db} bytes"
    );
    assert!(
        ctl.wait_line(&line, PATIENCE),
        "no `{line}`:\n{}",
        ctl.output_so_far()
    );
    assert!(ctl.running(), "{}", ctl.output_so_far());
    assert!(lab.koi_alive());
}

#[test]
fn bng_sessions_open_by_discovery_carry_traffic_police_and_close() {
    let test = "bng_sessions_open_by_discovery_carry_traffic_police_and_close";
    let Some(py) = python(test) else { return };
    if !tools(test, &["ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 2, Layout::HostPerNs) else {
        return;
    };
    // Host 1: the access network's CPEs (scapy); host 2: a host of the core.
    scapy_host(&lab, 1, "02:00:00:00:02:00");
    linux_host(
        &lab,
        2,
        "02:00:00:00:01:02",
        &["10.0.0.2/24"],
        "100.64.0.0/10",
        "10.0.0.1",
        "02:00:00:00:0c:02",
    );
    let bng = repo().join("examples/bng");
    let subs = bng.join("subscribers.txt").display().to_string();
    let args: Vec<String> = vec![
        bng.join("bng.p4").display().to_string(),
        "--port".into(),
        format!("1={}", lab.host(1).sw_if),
        "--port".into(),
        format!("2={}", lab.host(2).sw_if),
        "--entries".into(),
        bng.join("bng.entries").display().to_string(),
        "--cpu-port".into(),
        "255".into(),
        "--grpc".into(),
        "127.0.0.1:9559".into(),
    ];
    lab.start_koi_args(&args, 2);
    let mut ctl = controller(&lab, &py, "bng", &["--subscribers", &subs]);
    assert!(
        ctl.wait_line("ready: device 1, 3 subscribers", PATIENCE),
        "the BNG controller did not get ready:\n{}\n{}",
        ctl.output_so_far(),
        lab.koi_output()
    );
    let (a, c) = (lab.host(1).clone(), lab.host(2).clone());

    // Subscribers 1 and 2 open their sessions; LCP echo answered in each.
    let asked = run_frames(
        &lab,
        &py,
        &a.ns,
        &[
            "ask",
            &a.ifname,
            "bng_discovery",
            "--file",
            &subs,
            "--open",
            "1,2",
        ],
    );
    assert!(asked.contains("6 cases ok, 0 failed"), "{asked}");
    for s in [
        "session 1 up: subscriber 1 on line 1/100/11, CPE 02:00:00:00:02:01, address 100.64.0.1",
        "session 2 up: subscriber 2 on line 1/100/12, CPE 02:00:00:00:02:02, address 100.64.0.2",
        "lcp echo from subscriber 2 (id 2): answered",
    ] {
        assert!(
            ctl.output_so_far().contains(s),
            "no `{s}`:\n{}",
            ctl.output_so_far()
        );
    }

    let mut usage = std::collections::BTreeMap::new();
    let traffic = |usage: &mut std::collections::BTreeMap<_, _>, open: &str| {
        let extra = ["--file", subs.as_str(), "--open", open];
        let sent = exchange(
            &lab,
            &py,
            (&a.ns, &a.ifname),
            "bng_up",
            &extra,
            &[(&c.ns, &c.ifname, "bng_up", vec!["--sink-udp", "5000"])],
        );
        add_usage(usage, &sent);
        let sent = exchange(
            &lab,
            &py,
            (&c.ns, &c.ifname),
            "bng_down",
            &extra,
            &[(&a.ns, &a.ifname, "bng_down", vec![])],
        );
        add_usage(usage, &sent);
    };
    traffic(&mut usage, "1,2");
    let pinged = run_frames(
        &lab,
        &py,
        &a.ns,
        &[
            "ping-pppoe",
            &a.ifname,
            "--file",
            &subs,
            "--open",
            "1",
            "--count",
            "3",
        ],
    );
    assert!(pinged.contains("3/3 answered"), "{pinged}");
    add_usage(&mut usage, &pinged);

    // Subscriber 2's meter (2 Mbit/s, bursts of 25,000 bytes) polices a burst of 100 frames
    // of 1,014 bytes: about the burst's worth passes, the rest is red and dropped.
    let policed_before = counter(&lab, None, "drops", 10).0;
    let queued_before = slow_path_drops(&lab);
    let down2_before = counter(&lab, None, "downstream_usage", 2).0;
    let mut rx = Proc::spawn(&mut frames(
        &lab,
        &py,
        &a.ns,
        &[
            "count-police",
            &a.ifname,
            "--file",
            &subs,
            "--open",
            "2",
            "--count",
            "100",
        ],
    ));
    assert!(rx.wait_line("ready", PATIENCE), "{}", rx.output_so_far());
    run_frames(
        &lab,
        &py,
        &c.ns,
        &[
            "police", &c.ifname, "--file", &subs, "--open", "2", "--count", "100",
        ],
    );
    let o = rx.finish(PATIENCE);
    let got = number_after(&o.stdout, "received ").unwrap_or_else(|| panic!("{}", o.show()));
    let policed = counter(&lab, None, "drops", 10).0 - policed_before;
    // A frame the meter turns red first takes the slow path (a new arm of the megaflow), and
    // the frames of the burst behind it wait in the port's bounded slow-path queue: those it
    // cannot hold are dropped and counted as such, not lost.
    let queued = slow_path_drops(&lab) - queued_before;
    assert_eq!(
        got + policed + queued,
        100,
        "received {got}, policed {policed}, dropped at the slow-path queue {queued}; {}",
        lab.ctl(&["stats"]).unwrap_or_default()
    );
    assert!(queued <= 20, "dropped at the slow-path queue: {queued}");
    assert!((15..=60).contains(&got), "received {got} of 100");
    assert_eq!(
        counter(&lab, None, "downstream_usage", 2).0 - down2_before,
        got
    );
    add_usage(&mut usage, &o.stdout);

    // Subscriber 1's CPE closes its session: its traffic is dropped both ways.
    run_frames(
        &lab,
        &py,
        &a.ns,
        &["padt", &a.ifname, "--file", &subs, "--open", "1"],
    );
    assert!(
        eventually(PATIENCE, || ctl
            .output_so_far()
            .contains("session 1 down (PADT from 02:00:00:00:02:01)")),
        "{}",
        ctl.output_so_far()
    );
    traffic(&mut usage, "2");

    // Counters: what scapy sent and the BNG forwarded (the pings and the policed burst's
    // frames that passed included), packets and bytes as the frames arrived.
    for ((dir, sid), (packets, bytes)) in &usage {
        let name = if dir == "up" {
            "upstream_usage"
        } else {
            "downstream_usage"
        };
        assert_eq!(
            counter(&lab, None, name, *sid),
            (*packets, *bytes),
            "{name}[{sid}]"
        );
    }
    // Subscriber 3 never opened a session: nothing counted. Upstream, an unknown session:
    // subscriber 3 and a foreign CPE MAC in each round, subscriber 1 after its PADT; a spoofed
    // source in each round. Downstream, an unknown subscriber: subscriber 3 and 100.64.9.9 in
    // each round, subscriber 1 after its PADT.
    assert_eq!(counter(&lab, None, "upstream_usage", 3), (0, 0));
    assert_eq!(counter(&lab, None, "drops", 4).0, 2 + 2 + 1);
    assert_eq!(counter(&lab, None, "drops", 5).0, 2);
    assert_eq!(counter(&lab, None, "drops", 9).0, 2 + 2 + 1);
    signal(&ctl, "USR1");
    assert!(
        ctl.wait_line(
            "usage subscriber 3 (100.64.0.3): upstream 0 packets 0 bytes",
            PATIENCE
        ),
        "{}",
        ctl.output_so_far()
    );
    assert!(ctl.running(), "{}", ctl.output_so_far());
    assert!(lab.koi_alive());
}
