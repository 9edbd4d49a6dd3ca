//! Several pipelines in one switch, chained by patch ports: pipeline `a` takes numbered frames
//! from a pcap port and hands them over a patch port to pipeline `b`, which sends them out to a
//! pcap file; every frame arrives once, in order, counted by both programs. Then a loop of
//! patch ports (each pipeline sends back where the frame came from): every frame is dropped
//! after MAX_PASSES pipelines and counted as `patch_loop`, and nothing spins. Port numbers are
//! each pipeline's own. Pipelines and ports are added and removed while another pipeline
//! forwards.

mod common;

use common::*;
use koi_ports::PortSpec;
use koi_runtime::switch::MAX_PASSES;
use koi_runtime::{PipelineSetup, Switch, SwitchConfig};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(60);

/// A pipeline running the counting program that sends frames to 02:..:02 to port `to`.
fn pipeline(name: &str, device_id: u64, to: u64) -> PipelineSetup {
    counting_pipeline(name, device_id, to, count_program(&[]))
}

fn count(sw: &Switch, pipeline: &str) -> String {
    sw.command(Some(pipeline), "register_read count 0").unwrap()
}

#[test]
fn a_chain_of_pipelines_over_patch_ports_forwards_every_frame_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.pcap"), dir.path().join("out.pcap"));
    let n = 5_000u32;
    traffic(&input, n, 1);
    // a: port 1 (pcap in) -> port 2 = patch to b's port 1; b: -> port 2 (pcap out). Both
    // pipelines have a port 2, each its own.
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![pipeline("a", 1, 2), pipeline("b", 2, 2)],
        ports: vec![(1, pcap_in(&input), 0), (2, pcap_out(&output), 1)],
        patches: vec![((0, 2), (1, 1))],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch");
    let start = Instant::now();
    while tx(&sw, 1, 2) < u64::from(n) && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(2));
    }
    let (ca, cb) = (count(&sw, "a"), count(&sw, "b"));
    assert_eq!(sw.patches(), vec![((0, 2), (1, 1))]);
    sw.stop();
    sw.join();
    assert!(
        ca.trim_end().ends_with(&format!("= {n}")),
        "a counted: {ca}"
    );
    assert!(
        cb.trim_end().ends_with(&format!("= {n}")),
        "b counted: {cb}"
    );
    assert_in_order(&frames(&output), n, "the chain");
    assert_eq!(sw.counters.patch_loop.load(Ordering::Relaxed), 0);
}

#[test]
fn a_loop_of_patch_ports_drops_each_frame_after_max_passes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    let n = 300u32;
    traffic(&input, n, 1);
    // a: everything to port 2 = b's port 1; b: everything to port 1, back to a's port 2,
    // which a sends to port 2 again...
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![pipeline("a", 1, 2), pipeline("b", 2, 1)],
        ports: vec![(1, pcap_in(&input), 0)],
        patches: vec![((0, 2), (1, 1))],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch");
    let start = Instant::now();
    while sw.counters.patch_loop.load(Ordering::Relaxed) < u64::from(n)
        && start.elapsed() < PATIENCE
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(sw.counters.patch_loop.load(Ordering::Relaxed), u64::from(n));
    // Each frame went through a, b, a, b, ...: MAX_PASSES pipelines, half of them each.
    let per = u64::from(MAX_PASSES) / 2 * u64::from(n);
    for p in ["a", "b"] {
        let c = count(&sw, p);
        assert!(c.trim_end().ends_with(&format!("= {per}")), "{p}: {c}");
    }
    let stats = sw.command(None, "stats").unwrap();
    assert!(stats.contains("patch_loop"), "{stats}");
    sw.stop();
    sw.join();
}

#[test]
fn patch_ports_and_port_numbers_are_checked() {
    let start = |ports: Vec<(u64, PortSpec, usize)>, patches| {
        Switch::start(SwitchConfig {
            pipelines: vec![pipeline("a", 1, 2), pipeline("b", 2, 2)],
            ports,
            patches,
            threads: 1,
            cache: None,
        })
        .map(|sw| {
            sw.stop();
            sw.join();
        })
    };
    let pcap = || PortSpec::parse("pcap:,/dev/null").unwrap();
    // The same number in two pipelines: two ports.
    assert!(start(vec![(1, pcap(), 0), (1, pcap(), 1)], vec![]).is_ok());
    let e = start(vec![(1, pcap(), 0), (1, pcap(), 0)], vec![]).unwrap_err();
    assert!(e.contains("given twice"), "{e}");
    let e = start(vec![(1, pcap(), 0)], vec![((0, 1), (1, 1))]).unwrap_err();
    assert!(e.contains("taken"), "{e}");
    let e = start(vec![], vec![((0, 1), (0, 1))]).unwrap_err();
    assert!(e.contains("itself"), "{e}");
    let e = start(vec![], vec![((0, 1), (5, 1))]).unwrap_err();
    assert!(e.contains("no pipeline"), "{e}");
}

#[test]
fn pipelines_and_ports_come_and_go_while_another_pipeline_forwards() {
    let dir = tempfile::tempdir().unwrap();
    let (in_a, out_a) = (dir.path().join("a_in.pcap"), dir.path().join("a_out.pcap"));
    let (in_b, out_b) = (dir.path().join("b_in.pcap"), dir.path().join("b_out.pcap"));
    let n_a = 200_000u32;
    let n_b = 2_000u32;
    traffic(&in_a, n_a, 1);
    traffic(&in_b, n_b, 1);
    let sw = start_pcap_switch(pipeline("a", 1, 2), &in_a, &out_a, 2);
    // While a forwards: a second pipeline with the same program, its own ports (numbered 1
    // and 2 as a's), fed and emptied, then taken away again.
    let prog = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swap_count.p4");
    let out = sw
        .command(
            None,
            &format!("pipeline_add b {} --device-id 9", prog.display()),
        )
        .unwrap();
    assert!(out.contains("device 9"), "{out}");
    sw.command(Some("b"), "table_add route fwd 0x020000000002 => 2")
        .unwrap();
    sw.command(Some("b"), &format!("port_add 2 pcap:,{}", out_b.display()))
        .unwrap();
    sw.command(Some("b"), &format!("port_add 1 pcap:{},", in_b.display()))
        .unwrap();
    let show = sw.command(None, "pipeline_show").unwrap();
    assert!(show.contains("pipeline b: device 9"), "{show}");
    assert_eq!(sw.pipeline_by_device(9).unwrap().name(), "b");
    let start = Instant::now();
    while tx(&sw, 1, 2) < u64::from(n_b) && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(tx(&sw, 1, 2), u64::from(n_b), "b forwarded its frames");
    let e = sw.command(None, "pipeline_remove b").unwrap_err();
    assert!(e.contains("port_remove them first"), "{e}");
    for p in ["1", "2"] {
        sw.command(Some("b"), &format!("port_remove {p}")).unwrap();
    }
    let e = sw.command(Some("b"), "port_remove 1").unwrap_err();
    assert!(e.contains("no port 1"), "{e}");
    sw.command(None, "pipeline_remove b").unwrap();
    assert!(sw.pipeline(Some("b")).is_none());
    assert!(sw.pipeline_by_device(9).is_none());
    let e = sw.command(Some("b"), "stats").unwrap_err();
    assert!(e.contains("no pipeline b"), "{e}");
    // a's traffic went on throughout: every frame, in order.
    while tx(&sw, 0, 2) < u64::from(n_a) && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(2));
    }
    let ca = count(&sw, "a");
    sw.stop();
    sw.join();
    assert!(
        ca.trim_end().ends_with(&format!("= {n_a}")),
        "a counted: {ca}"
    );
    for (path, n) in [(&out_a, n_a), (&out_b, n_b)] {
        assert_in_order(&frames(path), n, &path.display().to_string());
    }
}

/// A port number the pipeline's program cannot hold (v1model's ports are 9 bits) is refused
/// by `port_add`, and a program whose ports are narrower than the pipeline's is refused by
/// `load`; each says why and changes nothing.
#[test]
fn port_numbers_wider_than_the_programs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = |n: u32| pcap_out(&dir.path().join(format!("out{n}.pcap")));
    let psa = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/psa_l2.p4");
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![pipeline("v1", 1, 2)],
        ports: vec![(2, out(2), 0)],
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch");
    let refused = sw
        .command(
            Some("v1"),
            &format!("port_add 600 pcap:,{}", dir.path().join("x.pcap").display()),
        )
        .expect_err("port 600 on v1model");
    assert!(
        refused.contains("port 600") && refused.contains("9-bit"),
        "{refused}"
    );
    assert!(
        !sw.command(Some("v1"), "port_show").unwrap().contains("600"),
        "nothing added"
    );
    // A PSA pipeline (32-bit ports) takes port 600; a v1model program then cannot replace
    // its PSA program, and the PSA program stays.
    sw.command(None, &format!("pipeline_add p {}", psa.display()))
        .expect("a PSA pipeline");
    sw.command(
        Some("p"),
        &format!("port_add 600 pcap:,{}", dir.path().join("p.pcap").display()),
    )
    .expect("port 600 on PSA");
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swap_count.p4");
    let refused = sw
        .command(Some("p"), &format!("load {}", v1.display()))
        .expect_err("v1model over port 600");
    assert!(
        refused.contains("port 600") && refused.contains("9-bit"),
        "{refused}"
    );
    let show = sw.command(Some("p"), "pipeline_show").unwrap();
    assert!(show.contains("psa_l2"), "the PSA program stays: {show}");
    sw.stop();
    sw.join();
}
