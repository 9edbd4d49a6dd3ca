//! The learning-switch example end to end: `koi run examples/l2_learning.p4` with three hosts
//! (10.0.0.1-3, one namespace each) and `examples/l2_learning/controller.py` (finsy) started
//! as its README says. The test asserts: the controller is ready with empty tables; the hosts
//! ping each other; every host's MAC is learnt by digest and installed in `smac` (with its
//! idle timeout) and `dmac` (to its port), as `koi ctl table_dump` shows; traffic between two
//! known hosts is not flooded (the third host's port sends nothing meanwhile) and keeps their
//! entries alive past the idle timeout while the silent third host ages out; once every host
//! falls silent every entry ages out and the controller removes it; new traffic brings the
//! entries back.
//!
//! Needs root, `ping` and `KOI_PYTHON` (`scripts/py-venv.sh`); see `p4rt/mod.rs`.

mod e2e;
mod p4rt;

use e2e::{Lab, Layout, PATIENCE, Proc, eventually, ip, repo, tools};

const MACS: [&str; 3] = [
    "02:00:00:00:01:01",
    "02:00:00:00:01:02",
    "02:00:00:00:01:03",
];
/// Seconds of silence before the controller forgets a host (long enough for the pings of
/// one step, short enough for the test).
const IDLE_TIMEOUT: &str = "3";

#[test]
fn l2_learning_controller_learns_forwards_and_ages_out() {
    let test = "p4rt_l2_learning";
    let Some(py) = p4rt::python(test, "KOI_PYTHON", "import finsy") else {
        return;
    };
    if !tools(test, &["ping"]) {
        return;
    }
    let Some(lab) = Lab::new(test, 3, Layout::HostPerNs) else {
        return;
    };
    for (i, mac) in MACS.iter().enumerate() {
        let h = lab.host(i + 1);
        for r in [
            ip(&["-n", &h.ns, "link", "set", &h.ifname, "address", mac]),
            ip(&[
                "-n",
                &h.ns,
                "addr",
                "add",
                &format!("10.0.0.{}/24", i + 1),
                "dev",
                &h.ifname,
            ]),
        ] {
            r.unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let ports: Vec<(u32, &str)> = (1..=3)
        .map(|i| (i as u32, lab.host(i).sw_if.as_str()))
        .collect();
    let program = repo().join("examples/l2_learning.p4");
    let sw = p4rt::Switch::start(&lab, "koi", &ports, "127.0.0.1:9559", 1, Some(&program));
    let mut controller = Proc::spawn(&mut p4rt::client_cmd(
        &lab,
        &py,
        &repo().join("examples/l2_learning/controller.py"),
        &[
            "--grpc".into(),
            sw.grpc.clone(),
            "--ports".into(),
            "1,2,3".into(),
            "--idle-timeout".into(),
            IDLE_TIMEOUT.into(),
            "--koi".into(),
            env!("CARGO_BIN_EXE_koi").into(),
        ],
    ));
    let context = |c: &Proc| format!("{}\n--- controller\n{}", sw.log(), c.output_so_far());
    assert!(
        controller.wait_line("ready: device 1, flood group 1 = ports 1, 2, 3", PATIENCE),
        "the controller did not get ready:\n{}",
        context(&controller)
    );
    assert_eq!(sw.num_entries("LearnIngress.smac"), 0);
    assert_eq!(sw.num_entries("LearnIngress.dmac"), 0);
    let mc = sw.must_ctl(&["mc_dump"]);
    assert!(
        mc.contains("mgrp(1)") && mc.contains("ports=[1, 2, 3]"),
        "{mc}"
    );

    // Learning: every pair pings; each MAC is learnt on its port.
    let ping_all = || {
        for (from, to) in [(1, "10.0.0.2"), (1, "10.0.0.3"), (2, "10.0.0.3")] {
            lab.ping(from, to, 2)
                .unwrap_or_else(|e| panic!("{e}\n{}", context(&controller)));
        }
    };
    ping_all();
    let learnt = |c: &Proc| {
        let s = c.output_so_far();
        MACS.iter()
            .enumerate()
            .all(|(i, m)| s.contains(&format!("learnt {m} on port {}", i + 1)))
    };
    assert!(
        eventually(PATIENCE, || learnt(&controller)),
        "the controller did not learn every host:\n{}",
        context(&controller)
    );
    let smac = sw.must_ctl(&["table_dump", "LearnIngress.smac"]);
    let dmac = sw.must_ctl(&["table_dump", "LearnIngress.dmac"]);
    for (i, m) in MACS.iter().enumerate() {
        assert!(
            smac.contains(&format!("EXACT-{m}")),
            "smac lacks {m}:\n{smac}"
        );
        let entry = format!(
            "EXACT-{m}\nAction entry: LearnIngress.forward - 00:0{}",
            i + 1
        );
        assert!(dmac.contains(&entry), "dmac lacks `{entry}`:\n{dmac}");
    }

    // Known destinations are not flooded: host 1 <-> host 2 for longer than the idle
    // timeout sends nothing to port 3; their entries stay (hits restart the idle time), while
    // silent host 3 ages out meanwhile.
    let before = sw.tx_packets(3);
    lab.ping(1, "10.0.0.2", 20)
        .unwrap_or_else(|e| panic!("{e}\n{}", context(&controller)));
    assert_eq!(
        sw.tx_packets(3),
        before,
        "traffic between known hosts reached port 3:\n{}",
        sw.must_ctl(&["port_show"])
    );
    let smac = sw.must_ctl(&["table_dump", "LearnIngress.smac"]);
    assert!(
        smac.contains(&format!("EXACT-{}", MACS[0]))
            && smac.contains(&format!("EXACT-{}", MACS[1])),
        "hosts 1 and 2 talked all along, yet their entries went:\n{smac}\n{}",
        context(&controller)
    );
    assert!(
        eventually(PATIENCE, || controller
            .output_so_far()
            .contains(&format!("aged out {}", MACS[2]))),
        "silent host 3 did not age out:\n{}",
        context(&controller)
    );

    // Silence: every entry ages out and the controller removes it.
    let empty =
        || sw.num_entries("LearnIngress.smac") == 0 && sw.num_entries("LearnIngress.dmac") == 0;
    assert!(
        eventually(PATIENCE, empty),
        "entries did not age out:\n{}\n{}",
        sw.must_ctl(&["table_dump", "LearnIngress.smac"]),
        context(&controller)
    );
    let s = controller.output_so_far();
    for m in MACS {
        assert!(
            s.contains(&format!("aged out {m}")),
            "no `aged out {m}`:\n{s}"
        );
    }

    // New traffic: the hosts are learnt again.
    lab.ping(3, "10.0.0.1", 2)
        .unwrap_or_else(|e| panic!("{e}\n{}", context(&controller)));
    assert!(
        eventually(PATIENCE, || {
            let smac = sw.must_ctl(&["table_dump", "LearnIngress.smac"]);
            smac.contains(&format!("EXACT-{}", MACS[0]))
                && smac.contains(&format!("EXACT-{}", MACS[2]))
        }),
        "hosts 1 and 3 were not learnt again:\n{}",
        context(&controller)
    );
    assert!(controller.running(), "{}", context(&controller));
    println!("{}", controller.output_so_far());
}
