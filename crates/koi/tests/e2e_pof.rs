//! K_POFVS's example through `koi run --pof`: two host namespaces with real IPv4 stacks,
//! 10.0.1.1 on port 1 and 10.0.2.1 on port 2 (one /16, so they ARP for each other), and the
//! switch started with `--pof-config examples/pof/kpofvs.pof`: ARP is broadcast through
//! multicast group 1, IPv4 forwarded by destination address with the TTL decremented and the
//! checksum recomputed. The hosts ping, exchange UDP datagrams and a TCP transfer; an entry
//! changed with `koi ctl pof_entry_modify` takes effect at once (the route to host 2 dropped,
//! then restored: recompiled; its port changed and changed back: written to the running
//! program's table), and the per-route counter keeps its count across the changes. Needs root,
//! ping and ethtool (see `e2e/mod.rs` for what happens when they are missing).

mod e2e;
use e2e::{Lab, Layout, PATIENCE, Proc, ip, number_after, python, repo, run, tools};
use std::process::Command;

const HOSTS: [(&str, &str); 2] = [
    ("02:00:00:00:01:01", "10.0.1.1/16"),
    ("02:00:00:00:02:01", "10.0.2.1/16"),
];

/// A UDP sink: prints `listening`, then the number of datagrams received until 2 s of quiet.
const UDP_SERVER: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2]))); s.settimeout(2)
print("listening", flush=True)
n = 0
try:
    while True:
        d, _ = s.recvfrom(2048)
        if d.startswith(b"koi-pof"):
            n += 1
except socket.timeout:
    pass
print(n, flush=True)
"#;

/// Sends argv[3] datagrams to argv[1]:argv[2].
const UDP_CLIENT: &str = r#"
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[3])):
    s.sendto(b"koi-pof %d" % i, (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.002)
"#;

fn udp(lab: &Lab, from: usize, to: usize, addr: &str, n: u32) -> u32 {
    let mut server = Proc::spawn(
        lab.cmd(&lab.host(to).ns, python())
            .args(["-c", UDP_SERVER, addr, "5300"]),
    );
    assert!(server.wait_line("listening", PATIENCE), "udp server");
    let c = run(
        lab.cmd(&lab.host(from).ns, python()).args([
            "-c",
            UDP_CLIENT,
            addr,
            "5300",
            &n.to_string(),
        ]),
        PATIENCE,
    );
    assert!(c.ok(), "udp client: {}", c.show());
    let out = server.finish(PATIENCE);
    out.stdout
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .parse()
        .unwrap_or(0)
}

fn counter(lab: &Lab, i: u32) -> u64 {
    let c = lab
        .ctl(&["counter_read", "pof.pof_counter", &i.to_string()])
        .unwrap_or_else(|e| panic!("{e}"));
    number_after(&c, "packets=").unwrap_or_else(|| panic!("{c}"))
}

#[test]
fn kpofvs_example_forwards_between_namespaces_and_entry_changes_apply_live() {
    let test = "kpofvs_example_forwards_between_namespaces_and_entry_changes_apply_live";
    if !tools(test, &["ping", "ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 2, Layout::HostPerNs) else {
        return;
    };
    for (i, (mac, addr)) in HOSTS.iter().enumerate() {
        let h = lab.host(i + 1).clone();
        ip(&["-n", &h.ns, "link", "set", &h.ifname, "address", mac]).unwrap();
        ip(&["-n", &h.ns, "addr", "add", addr, "dev", &h.ifname]).unwrap();
        let o = run(
            Command::new("ip").args([
                "netns", "exec", &h.ns, "ethtool", "-K", &h.ifname, "tx", "off",
            ]),
            PATIENCE,
        );
        assert!(o.ok(), "ethtool: {}", o.show());
    }
    let groups = lab.dir.join("groups.txt");
    std::fs::write(
        &groups,
        "mc_mgrp_create 1\nmc_node_create 0 1 2\nmc_node_associate 1 0\n",
    )
    .unwrap();
    let config = repo().join("examples/pof/kpofvs.pof");
    let args: Vec<String> = [
        "--pof",
        "--pof-config",
        &config.display().to_string(),
        "--entries",
        &groups.display().to_string(),
        "--grpc",
        "none",
        "--port",
        &format!("1={}", lab.host(1).sw_if),
        "--port",
        &format!("2={}", lab.host(2).sw_if),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    lab.start_koi_args(&args, 2);

    lab.ping(1, "10.0.2.1", 3).unwrap_or_else(|e| panic!("{e}"));
    lab.ping(2, "10.0.1.1", 3).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        udp(&lab, 1, 2, "10.0.2.1", 50),
        50,
        "UDP from host 1 to host 2"
    );
    lab.tcp_transfer(1, 2, "10.0.2.1", 5001, 256 << 10)
        .unwrap_or_else(|e| panic!("{e}"));
    let to2 = counter(&lab, 2);
    assert!(to2 >= 53, "the route to host 2 counted its packets: {to2}");
    assert!(counter(&lab, 1) >= 6, "the route to host 1 counted");

    // The route to host 2 dropped at run time, then restored: each change applies at once.
    let fwd = "modify_field ipv4.ttl -1 calculate_checksum ipv4.checksum 0 160 counter 2";
    let out = lab
        .ctl(&[
            "pof_entry_modify",
            "entry ipv4_fwd 2 match 10.0.2.0/24 { counter 2 drop }",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("state carried over"), "{out}");
    assert!(lab.ping(1, "10.0.2.1", 2).is_err(), "the route is dropped");
    assert_eq!(udp(&lab, 1, 2, "10.0.2.1", 20), 0, "no UDP gets through");
    assert!(
        counter(&lab, 2) >= to2 + 22,
        "the counter carried over and counts on"
    );
    lab.ctl(&[
        "pof_entry_modify",
        &format!("entry ipv4_fwd 2 match 10.0.2.0/24 {{ {fwd} output 2 }}"),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    lab.ping(1, "10.0.2.1", 3).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(udp(&lab, 1, 2, "10.0.2.1", 20), 20);

    // A change of the entry's values alone (its port) is written to the running program's
    // table, not compiled: the same program generation, and the flows cached for the route
    // follow the write at once.
    let generation = || {
        let s = lab.ctl(&["stats"]).unwrap_or_else(|e| panic!("{e}"));
        number_after(&s, "generation ").unwrap_or_else(|| panic!("{s}"))
    };
    let before = generation();
    for (port, through) in [(1, 0), (2, 20)] {
        let out = lab
            .ctl(&[
                "pof_entry_modify",
                &format!("entry ipv4_fwd 2 match 10.0.2.0/24 {{ {fwd} output {port} }}"),
            ])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.contains("not recompiled"), "{out}");
        assert_eq!(
            udp(&lab, 1, 2, "10.0.2.1", 20),
            through,
            "the route to host 2 sends to port {port}"
        );
    }
    // A longer prefix added takes the route's cached flows; removed, it gives them back.
    let out = lab
        .ctl(&[
            "pof_entry_add",
            &format!("entry ipv4_fwd 3 match 10.0.2.1/32 {{ {fwd} output 1 }}"),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("not recompiled"), "{out}");
    assert_eq!(
        udp(&lab, 1, 2, "10.0.2.1", 20),
        0,
        "the /32 sends to port 1"
    );
    let out = lab
        .ctl(&["pof_entry_remove", "ipv4_fwd", "3"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("not recompiled"), "{out}");
    assert_eq!(udp(&lab, 1, 2, "10.0.2.1", 20), 20, "the /24 again");
    assert_eq!(generation(), before, "no new program");
    let shown = lab.ctl(&["pof_show"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(shown.contains("entry ipv4_fwd 2"), "{shown}");
    let (status, out) = lab.stop_koi();
    assert!(status.is_some_and(|s| s.success()), "koi run: {out}");
}
