//! Two pipelines in one `koi run`, chained by a patch port, between network namespaces: a
//! firewall (`examples/acl_firewall.p4`, pipeline `fw`) in front of the L2L3-ACL router
//! (`examples/l2l3_acl.p4`, pipeline `router`). Host 1 is on the firewall's port 1, whose
//! port 2 is patched to the router's port 1; hosts 2 and 3 are on the router's ports 2 and
//! 3. Pings and a TCP transfer cross both pipelines; the firewall's entry that drops TCP to
//! port 5009 holds for host 1 only (hosts 2 and 3 talk through the router alone); `koi ctl
//! --pipeline` reaches each pipeline, whose counters saw the traffic; each pipeline loads its
//! own entries file; and a program swap of the router (`koi ctl --pipeline router load`)
//! keeps the chain working. Needs root, ping and ethtool (see `e2e/mod.rs`).

mod e2e;
use e2e::{HOSTS3, Lab, Layout, THREE_HOSTS, l2l3_entries, repo, tools};

/// Whether a TCP connection from host `from` to `addr:port` is answered (accepted or
/// refused) within two seconds; `false` when it times out (the SYN was dropped).
fn tcp_answered(lab: &Lab, from: usize, addr: &str, port: u16) -> bool {
    let o = e2e::run(
        lab.cmd(&lab.host(from).ns, e2e::python()).args([
            "-c",
            "import socket, sys\n\
             try:\n    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)\n    print('open')\n\
             except ConnectionRefusedError:\n    print('refused')\n\
             except (TimeoutError, OSError) as e:\n    print('timeout', e)\n",
            addr,
            &port.to_string(),
        ]),
        std::time::Duration::from_secs(20),
    );
    let out = o.stdout.trim().to_string();
    assert!(o.ok(), "{}", o.show());
    out == "open" || out == "refused"
}

#[test]
fn a_firewall_pipeline_in_front_of_a_router_pipeline() {
    let test = "a_firewall_pipeline_in_front_of_a_router_pipeline";
    if !tools(test, &["ping", "ethtool"]) {
        return;
    }
    let Some(mut lab) = Lab::new(test, 3, Layout::HostPerNs) else {
        return;
    };
    for (i, (m, cidr, gw, _)) in HOSTS3.iter().enumerate() {
        lab.ipv4_host(i + 1, m, cidr, gw);
    }
    let router_entries = l2l3_entries(&lab, THREE_HOSTS);
    let fw_entries = lab.dir.join("fw.entries");
    // Drop TCP to port 5009, whatever the addresses.
    std::fs::write(
        &fw_entries,
        "table_add filter deny 0&&&0 0&&&0 6&&&0xff 5009&&&0xffff => 10\n",
    )
    .unwrap();
    let s = |x: &str| x.to_string();
    let args = vec![
        s("--pipeline"),
        format!("router={}", repo().join("examples/l2l3_acl.p4").display()),
        s("--pipeline"),
        format!("fw={}", repo().join("examples/acl_firewall.p4").display()),
        s("--port"),
        format!("1={}@fw", lab.host(1).sw_if),
        s("--port"),
        format!("2={}@router", lab.host(2).sw_if),
        s("--port"),
        format!("3={}@router", lab.host(3).sw_if),
        s("--patch"),
        s("fw:2=router:1"),
        s("--entries"),
        format!("router={}", router_entries.display()),
        s("--entries"),
        format!("fw={}", fw_entries.display()),
    ];
    lab.start_koi_args(&args, 3);

    let addr = |i: usize| HOSTS3[i - 1].3;
    // Through firewall and router, both ways; and router only.
    for (a, b) in [(1, 2), (2, 1), (1, 3), (3, 1), (2, 3)] {
        lab.ping(a, addr(b), 3).unwrap_or_else(|e| panic!("{e}"));
    }
    lab.tcp_transfer(1, 2, addr(2), 5001, 256 << 10)
        .unwrap_or_else(|e| panic!("{e}"));
    // The firewall's entry: host 1 cannot reach port 5009; hosts 2 and 3, which do not pass
    // the firewall, can (a refusal is an answer).
    assert!(
        !tcp_answered(&lab, 1, addr(2), 5009),
        "the firewall let it through"
    );
    assert!(
        tcp_answered(&lab, 3, addr(2), 5009),
        "router-only traffic was dropped"
    );
    assert!(
        tcp_answered(&lab, 1, addr(2), 5010),
        "only port 5009 is filtered"
    );

    // Each pipeline through `koi ctl --pipeline`.
    let denied = lab
        .ctl(&["--pipeline", "fw", "counter_read", "verdicts", "2"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        e2e::number_after(&denied, "packets=").is_some_and(|n| n >= 1),
        "the firewall's deny counter: {denied}"
    );
    let allowed = lab
        .ctl(&["--pipeline", "fw", "counter_read", "verdicts", "0"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        e2e::number_after(&allowed, "packets=").is_some_and(|n| n > 100),
        "the firewall's allow counter (from port 1): {allowed}"
    );
    let routes = lab
        .ctl(&["--pipeline", "router", "table_num_entries", "routing"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(routes.trim() != "0", "{routes}");
    let e = lab
        .ctl(&["--pipeline", "fw", "table_num_entries", "routing"])
        .unwrap_err();
    assert!(e.contains("routing"), "{e}");
    let e = lab.ctl(&["--pipeline", "nope", "stats"]).unwrap_err();
    assert!(e.contains("no pipeline"), "{e}");
    let stats = lab.ctl(&["stats"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(stats.contains("router") && stats.contains("fw"), "{stats}");

    // The router's program replaced while the chain runs: state carried, chain intact.
    let load = lab
        .ctl(&[
            "--pipeline",
            "router",
            "load",
            &repo().join("examples/l2l3_acl.p4").display().to_string(),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(load.contains("state carried over"), "{load}");
    lab.ping(1, addr(2), 3).unwrap_or_else(|e| panic!("{e}"));
    assert!(!tcp_answered(&lab, 1, addr(2), 5009));
    assert_eq!(lab.stat("patch_loop"), 0);
}
