//! A controller written the way p4lang's tutorials write theirs
//! (`tests/p4runtime/tutorial/`: the `p4runtime` package's stubs, a switch-connection helper
//! with MasterArbitrationUpdate, SetForwardingPipelineConfig with the device config wrapped
//! in `p4.tmp.P4DeviceConfig`, WriteTableEntry, ReadTableEntries and ReadCounters, election
//! id (0, 1)) programs two koi switches, each its own `koi run` with its own gRPC address
//! and device id, with `basic.p4` (IPv4 LPM forwarding): host 1 (10.0.1.1) on switch 1, host
//! 2 (10.0.2.2) on switch 2, the switches wired port 2 to port 2. The test asserts that the
//! controller installed and read back the routes, that the hosts ping each other through both
//! switches, that the controller then read the packets on its counters, and the routes with
//! `koi ctl` on each switch.
//!
//! Needs root, `ping`, `ethtool` and `KOI_PYTHON` (`scripts/py-venv.sh`); see `p4rt/mod.rs`.

mod e2e;
mod p4rt;

use e2e::{Lab, Layout, PATIENCE, Proc, ip, tools};

#[test]
fn tutorial_style_controller_routes_between_two_koi_switches() {
    let test = "p4rt_tutorial";
    let Some(py) = p4rt::python(
        test,
        "KOI_PYTHON",
        "import grpc, p4.v1.p4runtime_pb2_grpc, p4.config.v1.p4info_pb2, p4.tmp.p4config_pb2",
    ) else {
        return;
    };
    if !tools(test, &["ping", "ethtool"]) {
        return;
    }
    let Some(lab) = Lab::new(test, 2, Layout::HostPerNs) else {
        return;
    };
    // The link between the switches: t12 (switch 1's port 2) and t21 (switch 2's port 2),
    // both in the switch namespace.
    for r in [
        ip(&[
            "-n", &lab.sw, "link", "add", "t12", "type", "veth", "peer", "name", "t21",
        ]),
        ip(&["-n", &lab.sw, "link", "set", "t12", "up"]),
        ip(&["-n", &lab.sw, "link", "set", "t21", "up"]),
    ] {
        r.unwrap_or_else(|e| panic!("{e}"));
    }
    lab.ipv4_host(1, "02:00:00:00:01:01", "10.0.1.1/24", "10.0.1.254");
    lab.ipv4_host(2, "02:00:00:00:02:02", "10.0.2.2/24", "10.0.2.254");
    let s1 = p4rt::Switch::start(
        &lab,
        "s1",
        &[(1, &lab.host(1).sw_if), (2, "t12")],
        "127.0.0.1:9559",
        1,
        None,
    );
    let s2 = p4rt::Switch::start(
        &lab,
        "s2",
        &[(1, &lab.host(2).sw_if), (2, "t21")],
        "127.0.0.1:9560",
        2,
        None,
    );
    let program = p4rt::scripts().join("tutorial/basic.p4");
    let p4info = p4rt::compile(&lab, &program, "p4info");
    let device_config = p4rt::compile(&lab, &program, "device-config");
    let logs = || format!("{}\n{}", s1.log(), s2.log());

    // The controller waits until each switch's port 1 has received 5 packets (the pings).
    let mut controller = Proc::spawn(&mut p4rt::client_cmd(
        &lab,
        &py,
        &p4rt::scripts().join("tutorial/tutorial_controller.py"),
        &[
            "--p4info".into(),
            p4info.display().to_string(),
            "--device-config".into(),
            device_config.display().to_string(),
            "--s1".into(),
            s1.grpc.clone(),
            "--s2".into(),
            s2.grpc.clone(),
            "--wait-packets".into(),
            "5".into(),
        ],
    ));
    assert!(
        controller.wait_line("rules installed", PATIENCE),
        "the controller did not install its rules:\n{}\n{}",
        controller.output_so_far(),
        logs()
    );
    lab.ping(1, "10.0.2.2", 5)
        .unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    lab.ping(2, "10.0.1.1", 3)
        .unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let out = controller.finish(PATIENCE);
    assert!(
        out.ok(),
        "the controller failed:\n{}\n{}",
        out.show(),
        logs()
    );
    for line in [
        "s1: primary controller of device 1 at 127.0.0.1:9559",
        "s2: primary controller of device 2 at 127.0.0.1:9560",
        "s1: pipeline installed",
        "s2: pipeline installed",
        "s1: entry BasicIngress.ipv4_lpm hdr.ipv4.dst=10.0.1.1/32 -> \
         BasicIngress.ipv4_forward(dst_mac=020000000101, port=01)",
        "s1: entry BasicIngress.ipv4_lpm hdr.ipv4.dst=10.0.2.0/24 -> \
         BasicIngress.ipv4_forward(dst_mac=0200000002fe, port=02)",
        "s2: entry BasicIngress.ipv4_lpm hdr.ipv4.dst=10.0.2.2/32 -> \
         BasicIngress.ipv4_forward(dst_mac=020000000202, port=01)",
        "s2: entry BasicIngress.ipv4_lpm hdr.ipv4.dst=10.0.1.0/24 -> \
         BasicIngress.ipv4_forward(dst_mac=0200000001fe, port=02)",
        "rules installed",
    ] {
        assert!(
            out.stdout.lines().any(|l| l == line),
            "the controller did not print `{line}`:\n{}",
            out.show()
        );
    }
    for s in ["s1", "s2"] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{s}: BasicIngress.rx_packets[1] = ")))
            .unwrap_or_else(|| panic!("no counter line of {s}:\n{}", out.show()));
        let packets = e2e::number_after(line, "= ").expect("a count");
        assert!(packets >= 5, "{line}");
    }
    // koi ctl sees the controller's routes, and the counters went on counting.
    for (s, routes) in [
        (&s1, ["LPM-0a:00:01:01/32", "LPM-0a:00:02:00/24"]),
        (&s2, ["LPM-0a:00:02:02/32", "LPM-0a:00:01:00/24"]),
    ] {
        let dump = s.must_ctl(&["table_dump", "BasicIngress.ipv4_lpm"]);
        for r in routes {
            assert!(dump.contains(r), "{}: no {r} in\n{dump}", s.name);
        }
        let c = s.must_ctl(&["counter_read", "BasicIngress.rx_packets", "1"]);
        let n = e2e::number_after(&c, "packets=").expect("packets");
        assert!(n >= 8, "{}: {c}", s.name);
    }
    println!("{}", out.stdout);
}
