//! Two network functions with their controllers, end to end in network namespaces.
//!
//! - [`vxlan_vtep_interoperates_with_linux_vxlan`]: `koi run examples/vxlan/vxlan.p4` (with
//!   `examples/vxlan/vxlan.entries`) and `examples/vxlan/controller.py` as a VTEP opposite
//!   Linux's own VXLAN device (`ip link add vx0 type vxlan id 5000 dstport 4789 ...`, in a
//!   bridge with a host behind it). A host on koi's untagged access port, one on its VLAN 10
//!   port and the host behind Linux ping each other and run TCP transfers (content checked)
//!   in both directions; the controller learns every MAC by digest (asserted in `smac` and
//!   `dmac` through `koi ctl table_dump`: local hosts on their ports, the Linux-side host
//!   behind VTEP 10.99.0.2); Linux learns koi's hosts behind 10.99.0.1 (`bridge fdb`); once
//!   learnt, overlay traffic no longer reaches the other access port; silent hosts age out.
//! - [`ddos_blocks_floods_and_spares_legitimate_traffic`]: `koi run examples/ddos/ddos.p4` with
//!   `examples/ddos/controller.py`; two attackers flood the server (UDP from two spoofed
//!   addresses, SYNs from two more) from raw sockets, bounded in count and time, while a
//!   client pings it and runs a TCP transfer. Asserted: the transfer completes with its
//!   content, ping loss is small, every attacker address is blocked (the controller says so,
//!   `blocklist` holds it and its drop counter counts), the server's capture sees none of its
//!   packets from shortly after the block on though the attackers kept sending, and neither
//!   the client nor the server is ever blocked.
//!
//! Needs root, `ping`, `bridge`, `ethtool` and `KOI_PYTHON` (finsy: `scripts/py-venv.sh`).

mod e2e;
mod p4rt;

use e2e::{Lab, Layout, PATIENCE, Proc, eventually, ip, repo, run, tools};
use std::time::Duration;

fn must(r: Result<(), String>) {
    r.unwrap_or_else(|e| panic!("{e}"));
}

/// `ethtool -K DEV tx off` in `ns`: frames leave with their checksums computed (koi forwards
/// the bytes it sees).
fn tx_csum_off(lab: &Lab, ns: &str, dev: &str) {
    let o = run(
        lab.cmd(ns, "ethtool").args(["-K", dev, "tx", "off"]),
        PATIENCE,
    );
    assert!(o.ok(), "ethtool -K {dev} tx off: {}", o.show());
}

/// `ping -c COUNT -i 0.1` from host `from`: the share of echoes lost (0.0 to 1.0).
fn ping_loss(lab: &Lab, from: usize, addr: &str, count: u32) -> f64 {
    let o = run(
        lab.cmd(&lab.host(from).ns, "ping").args([
            "-n",
            "-q",
            "-c",
            &count.to_string(),
            "-i",
            "0.1",
            "-W",
            "1",
            addr,
        ]),
        PATIENCE,
    );
    let line = o
        .stdout
        .lines()
        .find(|l| l.contains("packet loss"))
        .unwrap_or_else(|| panic!("ping from host {from} to {addr}: {}", o.show()));
    let pct = line
        .split(',')
        .find(|p| p.contains("packet loss"))
        .and_then(|p| p.trim().split('%').next())
        .and_then(|p| p.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no loss in `{line}`"));
    pct / 100.0
}

const VX_MACS: [&str; 4] = [
    "02:00:00:99:00:02", // host 1: the Linux VTEP's underlay interface
    "02:00:00:00:00:02", // host 2: untagged on koi's port 2
    "02:00:00:00:00:03", // host 3: on koi's port 3, untagged here (see below)
    "02:00:00:00:00:04", // host 4: behind the Linux VTEP
];

/// `examples/vxlan/vxlan.entries` with access port 3 untagged: the test machines' kernels
/// have no 802.1Q devices (no `8021q` module, no tc `vlan` action), so no host there can
/// send tagged frames; the tagged port is covered by `examples/vxlan/vxlan.stf` and
/// `nf_ctl.rs`'s traces.
fn vxlan_entries_untagged_port_3(lab: &Lab) -> std::path::PathBuf {
    let text = std::fs::read_to_string(repo().join("examples/vxlan/vxlan.entries")).unwrap();
    let (tagged_in, tagged_out) = (
        "table_add port_bd set_bd 3 10 => 1",
        "table_add port_vlan_out tagged 3 1 => 10",
    );
    assert!(
        text.contains(tagged_in) && text.contains(tagged_out),
        "{text}"
    );
    let text = text
        .replace(tagged_in, "table_add port_bd set_bd 3 0 => 1")
        .replace(tagged_out, "table_add port_vlan_out untagged 3 1 =>");
    let path = lab.dir.join("vxlan.entries");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn vxlan_vtep_interoperates_with_linux_vxlan() {
    let test = "e2e_nf_ctl::vxlan";
    let Some(py) = p4rt::python(test, "KOI_PYTHON", "import finsy") else {
        return;
    };
    if !tools(test, &["ping", "bridge", "ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 4, Layout::HostPerNs) else {
        return;
    };
    let ns = |i: usize| lab.host(i).ns.clone();
    let (vtep, h2, h3, h4) = (ns(1), ns(2), ns(3), ns(4));
    for (i, mac) in VX_MACS.iter().enumerate() {
        let h = lab.host(i + 1);
        must(ip(&["-n", &h.ns, "link", "set", &h.ifname, "address", mac]));
    }
    // The underlay: koi's uplink (port 1) <-> the Linux VTEP, room for the 50 bytes of
    // encapsulation; a static neighbour entry for koi's VTEP address (koi answers no ARP).
    lab.set_mtu(1, 1600);
    for args in [
        vec!["addr", "add", "10.99.0.2/24", "dev", "h1"],
        vec![
            "neigh",
            "replace",
            "10.99.0.1",
            "lladdr",
            "02:00:00:99:00:01",
            "dev",
            "h1",
            "nud",
            "permanent",
        ],
        vec![
            "link",
            "add",
            "vx0",
            "type",
            "vxlan",
            "id",
            "5000",
            "dstport",
            "4789",
            "local",
            "10.99.0.2",
            "remote",
            "10.99.0.1",
            "dev",
            "h1",
        ],
        vec!["link", "add", "br0", "type", "bridge"],
        vec!["link", "set", "vx0", "master", "br0"],
    ] {
        let mut a = vec!["-n", vtep.as_str()];
        a.extend(args);
        must(ip(&a));
    }
    // Host 4's link goes into the Linux VTEP's bridge instead of into koi.
    must(ip(&[
        "-n",
        &lab.sw,
        "link",
        "set",
        &lab.host(4).sw_if,
        "netns",
        &vtep,
    ]));
    let s4 = lab.host(4).sw_if.clone();
    for args in [
        vec!["link", "set", s4.as_str(), "master", "br0"],
        vec!["link", "set", s4.as_str(), "up"],
        vec!["link", "set", "vx0", "up"],
        vec!["link", "set", "br0", "up"],
    ] {
        let mut a = vec!["-n", vtep.as_str()];
        a.extend(args);
        must(ip(&a));
    }
    // The overlay's hosts: 10.0.0.2 (untagged), 10.0.0.3 (VLAN 10), 10.0.0.4 (behind Linux).
    must(ip(&["-n", &h2, "addr", "add", "10.0.0.2/24", "dev", "h2"]));
    must(ip(&["-n", &h3, "addr", "add", "10.0.0.3/24", "dev", "h3"]));
    must(ip(&["-n", &h4, "addr", "add", "10.0.0.4/24", "dev", "h4"]));
    for (n, dev) in [(&vtep, "h1"), (&h2, "h2"), (&h3, "h3"), (&h4, "h4")] {
        tx_csum_off(&lab, n, dev);
    }

    let program = repo().join("examples/vxlan/vxlan.p4");
    let entries = vxlan_entries_untagged_port_3(&lab);
    let mut args = vec![program.display().to_string()];
    for p in 1..=3 {
        args.extend(["--port".into(), format!("{p}=s{p}")]);
    }
    args.extend([
        "--entries".into(),
        entries.display().to_string(),
        "--grpc".into(),
        "127.0.0.1:9559".into(),
    ]);
    lab.start_koi_args(&args, 3);
    let mut controller = Proc::spawn(&mut p4rt::client_cmd(
        &lab,
        &py,
        &repo().join("examples/vxlan/controller.py"),
        &[
            "--grpc".into(),
            "127.0.0.1:9559".into(),
            "--idle-timeout".into(),
            "3".into(),
        ],
    ));
    let context = |lab: &Lab, c: &Proc| {
        format!(
            "{}\n--- controller\n{}",
            lab.koi_output(),
            c.output_so_far()
        )
    };
    assert!(
        controller.wait_line("ready: device 1, idle timeout 3 s", PATIENCE),
        "the controller did not get ready:\n{}",
        context(&lab, &controller)
    );
    let dump = |table: &str| {
        lab.ctl(&["table_dump", table])
            .unwrap_or_else(|e| panic!("{e}"))
    };
    assert!(
        !dump("VtepIngress.smac").contains("EXACT-"),
        "smac is not empty at the start:\n{}",
        dump("VtepIngress.smac")
    );

    // Across the overlay, both ways, and between koi's two access ports.
    for (from, to) in [
        (2, "10.0.0.4"),
        (4, "10.0.0.2"),
        (3, "10.0.0.4"),
        (4, "10.0.0.3"),
        (2, "10.0.0.3"),
    ] {
        lab.ping(from, to, 3)
            .unwrap_or_else(|e| panic!("{e}\n{}", context(&lab, &controller)));
    }
    for (from, to, addr, port) in [
        (2, 4, "10.0.0.4", 5201),
        (4, 2, "10.0.0.2", 5202),
        (3, 4, "10.0.0.4", 5203),
    ] {
        lab.tcp_transfer(from, to, addr, port, 1 << 20)
            .unwrap_or_else(|e| panic!("{e}\n{}", context(&lab, &controller)));
    }

    // The controller learnt every host where it is.
    let learnt = [
        (VX_MACS[1], "on port 2"),
        (VX_MACS[2], "on port 3"),
        (VX_MACS[3], "behind VTEP 10.99.0.2"),
    ];
    assert!(
        eventually(PATIENCE, || {
            let s = controller.output_so_far();
            learnt
                .iter()
                .all(|(m, w)| s.contains(&format!("learnt {m} in bd 1 {w}")))
        }),
        "the controller did not learn every host:\n{}",
        context(&lab, &controller)
    );
    let (smac, dmac) = (dump("VtepIngress.smac"), dump("VtepIngress.dmac"));
    for (mac, smac_action, dmac_action) in [
        (
            VX_MACS[1],
            "VtepIngress.learnt - 00:02, 00:00:00:00",
            "VtepIngress.to_port - 00:02",
        ),
        (
            VX_MACS[2],
            "VtepIngress.learnt - 00:03, 00:00:00:00",
            "VtepIngress.to_port - 00:03",
        ),
        (
            VX_MACS[3],
            "VtepIngress.learnt - 00:00, 0a:63:00:02",
            "VtepIngress.to_vtep - 0a:63:00:02",
        ),
    ] {
        for (table, text, action) in [("smac", &smac, smac_action), ("dmac", &dmac, dmac_action)] {
            let entry = text
                .split("Dumping entry")
                .find(|e| e.contains(&format!("EXACT-{mac}")))
                .unwrap_or_else(|| panic!("{table} lacks {mac}:\n{text}"));
            assert!(
                entry.contains("bd                  : EXACT-00:01")
                    && entry.contains(&format!("Action entry: {action}\n")),
                "{table}'s entry for {mac} is not bridge domain 1, `{action}`:\n{entry}"
            );
        }
    }
    // Linux's VTEP learnt koi's hosts behind koi's address.
    let fdb = run(
        lab.cmd(&vtep, "bridge").args(["fdb", "show", "dev", "vx0"]),
        PATIENCE,
    );
    for mac in [VX_MACS[1], VX_MACS[2]] {
        assert!(
            fdb.stdout
                .lines()
                .any(|l| l.starts_with(mac) && l.contains("dst 10.99.0.1")),
            "Linux did not learn {mac} behind 10.99.0.1:\n{}",
            fdb.show()
        );
    }
    // Known destinations are not flooded: 2 <-> 4 sends nothing to port 3.
    let before = lab.port_stats(3).tx_packets;
    lab.ping(2, "10.0.0.4", 5)
        .unwrap_or_else(|e| panic!("{e}\n{}", context(&lab, &controller)));
    assert_eq!(
        lab.port_stats(3).tx_packets,
        before,
        "overlay traffic between known hosts reached port 3"
    );

    // Silence: every MAC ages out of both tables, and the controller says so.
    assert!(
        eventually(Duration::from_secs(30), || {
            !dump("VtepIngress.smac").contains("EXACT-")
                && !dump("VtepIngress.dmac").contains("EXACT-")
        }),
        "entries did not age out:\n{}\n{}",
        dump("VtepIngress.smac"),
        context(&lab, &controller)
    );
    let s = controller.output_so_far();
    for (mac, _) in learnt {
        assert!(s.contains(&format!("aged out {mac} in bd 1")), "{s}");
    }
    assert!(controller.running(), "{}", context(&lab, &controller));
    println!("{s}");
}

/// Floods from a raw socket: `python - IF SECONDS RATE FRAME_HEX...` sends the frames in turn
/// (each with the next IPv4 identification and, for TCP, source port) at about RATE frames a
/// second for SECONDS, then prints `sent N first T0 last T1`.
const FLOOD: &str = r#"
import socket, struct, sys, time
ifname, seconds, rate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
frames = [bytearray(bytes.fromhex(h)) for h in sys.argv[4:]]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
def csum(b):
    if len(b) % 2: b = b + b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16: t = (t & 0xffff) + (t >> 16)
    return ~t & 0xffff
n, t0 = 0, time.time()
end, burst = t0 + seconds, max(1, rate // 100)
while time.time() < end:
    for _ in range(burst):
        f = frames[n % len(frames)]
        f[18:20] = struct.pack("!H", n & 0xffff)
        f[24:26] = b"\0\0"
        f[24:26] = struct.pack("!H", csum(bytes(f[14:34])))
        if f[23] == 6:
            f[34:36] = struct.pack("!H", 1024 + n % 60000)
            f[50:52] = b"\0\0"
            pseudo = f[26:34] + struct.pack("!BBH", 0, 6, len(f) - 34)
            f[50:52] = struct.pack("!H", csum(bytes(pseudo + f[34:])))
        s.send(f)
        n += 1
    time.sleep(0.01)
print("sent", n, "first", t0, "last", time.time(), flush=True)
"#;

/// The server's capture: `python - IF SECONDS` records, per IPv4 source, packets to UDP port 9
/// and TCP SYNs to port 80 with the time of each; prints `src count last` lines and `done`.
const CAPTURE: &str = r#"
import socket, sys, time, collections
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((sys.argv[1], 0))
s.settimeout(0.2)
end = time.time() + float(sys.argv[2])
seen = collections.defaultdict(list)
print("capturing", flush=True)
while time.time() < end:
    try:
        f = s.recv(2048)
    except socket.timeout:
        continue
    if len(f) < 38 or f[12:14] != b"\x08\x00":
        continue
    src = socket.inet_ntoa(f[26:30])
    proto, ihl = f[23], (f[14] & 15) * 4
    l4 = f[14 + ihl:]
    if proto == 17 and l4[2:4] == b"\x00\x09":
        seen[src].append(time.time())
    elif proto == 6 and l4[2:4] == b"\x00\x50" and l4[13] & 0x12 == 0x02:
        seen[src].append(time.time())
for src, ts in sorted(seen.items()):
    print(src, len(ts), " ".join("%.3f" % t for t in ts), flush=True)
print("done", flush=True)
"#;

const DD_MACS: [&str; 4] = [
    "02:00:00:00:0d:01",
    "02:00:00:00:0d:02",
    "02:00:00:00:0d:03",
    "02:00:00:00:0d:04",
];

/// An Ethernet/IPv4 frame from host `from`'s MAC to the server, source `src`: a UDP datagram
/// to port 9, or a TCP SYN to port 80 (checksums filled in by the sender).
fn flood_frame(from: usize, src: [u8; 4], syn: bool) -> String {
    let mut f = Vec::new();
    f.extend(e2e::mac(DD_MACS[3]));
    f.extend(e2e::mac(DD_MACS[from - 1]));
    f.extend([0x08, 0x00]);
    let l4: Vec<u8> = if syn {
        let mut t = vec![0x04, 0x00, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02];
        t.extend([0x72, 0x10, 0, 0, 0, 0]);
        t
    } else {
        let mut u = vec![0x30, 0x39, 0x00, 0x09, 0x00, 0x12, 0, 0];
        u.extend(b"koi flood!");
        u
    };
    let total = 20 + l4.len() as u16;
    f.extend([0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0, 0, 64]);
    f.push(if syn { 6 } else { 17 });
    f.extend([0, 0]);
    f.extend(src);
    f.extend([10, 0, 13, 4]);
    f.extend(l4);
    f.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn ddos_blocks_floods_and_spares_legitimate_traffic() {
    let test = "e2e_nf_ctl::ddos";
    let Some(py) = p4rt::python(test, "KOI_PYTHON", "import finsy") else {
        return;
    };
    if !tools(test, &["ping", "ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 4, Layout::HostPerNs) else {
        return;
    };
    for i in 1..=4 {
        let h = lab.host(i).clone();
        must(ip(&[
            "-n",
            &h.ns,
            "link",
            "set",
            &h.ifname,
            "address",
            DD_MACS[i - 1],
        ]));
        must(ip(&[
            "-n",
            &h.ns,
            "addr",
            "add",
            &format!("10.0.13.{i}/24"),
            "dev",
            &h.ifname,
        ]));
        tx_csum_off(&lab, &h.ns, &h.ifname);
    }
    let program = repo().join("examples/ddos/ddos.p4");
    let entries = repo().join("examples/ddos/ddos.entries");
    lab.start_koi_args(
        &[
            program.display().to_string(),
            "--port".into(),
            "1=s1".into(),
            "--port".into(),
            "2=s2".into(),
            "--port".into(),
            "3=s3".into(),
            "--port".into(),
            "4=s4".into(),
            "--entries".into(),
            entries.display().to_string(),
            "--grpc".into(),
            "127.0.0.1:9559".into(),
        ],
        4,
    );
    let mut controller = Proc::spawn(&mut p4rt::client_cmd(
        &lab,
        &py,
        &repo().join("examples/ddos/controller.py"),
        &[
            "--grpc".into(),
            "127.0.0.1:9559".into(),
            "--stats".into(),
            "1".into(),
        ],
    ));
    let context = |lab: &Lab, c: &Proc| {
        format!(
            "{}\n--- controller\n{}",
            lab.koi_output(),
            c.output_so_far()
        )
    };
    assert!(
        controller.wait_line("ready: device 1, block idle timeout 30 s", PATIENCE),
        "the controller did not get ready:\n{}",
        context(&lab, &controller)
    );
    // Legitimate traffic first: the client and the server know each other.
    lab.ping(3, "10.0.13.4", 3)
        .unwrap_or_else(|e| panic!("{e}\n{}", context(&lab, &controller)));

    let mut capture = Proc::spawn(
        lab.cmd(&lab.host(4).ns, e2e::python())
            .args(["-c", CAPTURE, "h4", "12"]),
    );
    assert!(capture.wait_line("capturing", PATIENCE));
    let attackers: [(usize, [u8; 4], bool); 4] = [
        (1, [10, 0, 13, 101], false),
        (1, [10, 0, 13, 102], false),
        (2, [10, 0, 13, 111], true),
        (2, [10, 0, 13, 112], true),
    ];
    let mut floods: Vec<Proc> = [1usize, 2]
        .iter()
        .map(|&h| {
            let frames: Vec<String> = attackers
                .iter()
                .filter(|a| a.0 == h)
                .map(|a| flood_frame(h, a.1, a.2))
                .collect();
            let mut c = lab.cmd(&lab.host(h).ns, e2e::python());
            c.args(["-c", FLOOD, &format!("h{h}"), "6", "6000"])
                .args(&frames);
            Proc::spawn(&mut c)
        })
        .collect();
    // Meanwhile the client pings and transfers.
    std::thread::sleep(Duration::from_millis(500));
    let loss = ping_loss(&lab, 3, "10.0.13.4", 20);
    lab.tcp_transfer(3, 4, "10.0.13.4", 5201, 1 << 20)
        .unwrap_or_else(|e| panic!("{e}\n{}", context(&lab, &controller)));
    let sent: Vec<String> = floods
        .drain(..)
        .map(|f| {
            let o = f.finish(Duration::from_secs(20));
            assert!(o.ok(), "flood: {}", o.show());
            o.stdout
        })
        .collect();
    let capture = capture.finish(Duration::from_secs(20));
    assert!(
        capture.ok() && capture.stdout.contains("done"),
        "{}",
        capture.show()
    );
    assert!(
        loss <= 0.1,
        "ping lost {:.0}% during the flood",
        loss * 100.0
    );

    // Every attacker address is blocked, when, and nobody else.
    let out = controller.output_so_far();
    let blocked_at = |addr: &str| -> Option<f64> {
        out.lines()
            .find(|l| l.contains(&format!(" blocked {addr} (")))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
    };
    for legit in ["10.0.13.3", "10.0.13.4"] {
        assert!(
            blocked_at(legit).is_none(),
            "legitimate {legit} was blocked:\n{out}"
        );
    }
    let blocklist = lab
        .ctl(&["table_dump", "DdosIngress.blocklist"])
        .unwrap_or_else(|e| panic!("{e}"));
    let last_sent: f64 = sent
        .iter()
        .filter_map(|s| s.split_whitespace().nth(5)?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    for (_, a, syn) in attackers {
        let addr = format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        let at = blocked_at(&addr)
            .unwrap_or_else(|| panic!("{addr} was not blocked:\n{}", context(&lab, &controller)));
        let reason = if syn {
            "half-open connections"
        } else {
            "packets"
        };
        assert!(
            out.lines()
                .any(|l| l.contains(&format!("blocked {addr} ({reason}"))),
            "{addr} was not blocked for {reason}:\n{out}"
        );
        let hex: Vec<String> = a.iter().map(|b| format!("{b:02x}")).collect();
        let entry = blocklist
            .split("Dumping entry ")
            .find(|e| e.contains(&format!("EXACT-{}\n", hex.join(":"))))
            .unwrap_or_else(|| panic!("blocklist lacks {addr}:\n{blocklist}"));
        assert!(entry.contains("Action entry: DdosIngress.block"), "{entry}");
        // Its drop counter counts (the attacker went on after the block).
        let handle = entry.split_whitespace().next().unwrap_or("");
        let handle = u64::from_str_radix(handle.trim_start_matches("0x"), 16)
            .unwrap_or_else(|_| panic!("no handle in {entry}"));
        let counted = lab
            .ctl(&["counter_read", "DdosIngress.blocked", &handle.to_string()])
            .unwrap_or_else(|e| panic!("{e}"));
        let dropped = e2e::number_after(&counted, "packets=")
            .unwrap_or_else(|| panic!("no packets in `{counted}`"));
        assert!(dropped > 0, "{addr}'s entry dropped nothing: {counted}");
        // The controller's --stats report it too.
        assert!(
            out.lines().any(|l| l
                .split_once(&format!(" blocking {addr}: "))
                .and_then(|(_, n)| n.split_whitespace().next()?.parse::<u64>().ok())
                .is_some_and(|n| n > 0)),
            "the controller's stats never showed {addr} dropping:\n{out}"
        );
        // The attacker went on long after the block, but the server saw nothing of it from
        // shortly after.
        assert!(last_sent > at + 2.0, "the flood ended before the block");
        let line = capture
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{addr} ")))
            .unwrap_or_else(|| panic!("the server never saw {addr}:\n{}", capture.stdout));
        let late = line
            .split_whitespace()
            .skip(2)
            .filter_map(|t| t.parse::<f64>().ok())
            .filter(|t| *t > at + 0.5)
            .count();
        assert_eq!(
            late, 0,
            "{late} packets of {addr} reached the server after its block at {at}"
        );
    }
    assert!(controller.running(), "{}", context(&lab, &controller));
    println!(
        "{out}\n--- blocklist\n{blocklist}\n--- sent\n{}",
        sent.join("")
    );
}
