//! Pipeline swap while forwarding (`Pipeline::swap`, what `koi ctl load` does): a pcap port
//! feeds numbered frames as fast as the poll thread takes them, and the program is replaced
//! several times while they flow, alternating between two versions that count every packet
//! in the same register and mark it with their version. Nothing may be lost, the register
//! must count every packet exactly across the swaps, the frames must come out in order, and
//! each frame wholly by one version (the marks change only at a swap, v1 then v2 ...). A
//! swap whose state cannot be carried over is refused and changes nothing.

mod common;

use common::*;
use koi_runtime::{PipelineConfig, PipelineSetup, Switch, SwitchConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A bound on waiting for something that should happen; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(120);

#[test]
fn swaps_under_traffic_lose_nothing_and_carry_the_counts_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = count_program(&[]);
    let v2 = count_program(&["VERSION=2"]);
    let n: u32 = 200_000;
    let input = dir.path().join("in.pcap");
    let output = dir.path().join("out.pcap");
    traffic(&input, n, 1);
    let sw = start_pcap_switch(
        counting_pipeline("default", 1, 2, Arc::clone(&v1)),
        &input,
        &output,
        1,
    );
    let pl = sw.pipeline(None).unwrap();

    // Swap at a few points of the stream, alternating versions, state carried over.
    let start = Instant::now();
    let mut swaps = 0;
    for (k, at) in [n / 8, n / 4, n / 2, 3 * n / 4].into_iter().enumerate() {
        while tx(&sw, 0, 2) < u64::from(at) && start.elapsed() < PATIENCE {
            std::thread::sleep(Duration::from_micros(100));
        }
        if tx(&sw, 0, 2) >= u64::from(n) {
            break;
        }
        let next = if k % 2 == 0 { &v2 } else { &v1 };
        let report = pl.swap(Arc::clone(next), false).expect("swap");
        let carried = report.carried.clone().unwrap().join("\n");
        assert!(
            carried.contains("I.route"),
            "the table entry is carried: {report}"
        );
        swaps += 1;
    }
    while tx(&sw, 0, 2) < u64::from(n) && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(1));
    }
    let counted = sw.command(None, "register_read count 0");
    sw.stop();
    sw.join();
    assert!(swaps >= 2, "the traffic ended before the swaps: {swaps}");

    // Every frame out, in order; the version marks change only at the swaps.
    let out = frames(&output);
    assert_in_order(&out, n, "swaps");
    let changes = out.windows(2).filter(|w| w[0].1 != w[1].1).count() + usize::from(out[0].1 != 1);
    assert_eq!(
        changes, swaps,
        "each swap changes the version once, at one frame"
    );
    let counted = counted.expect("register_read");
    assert!(
        counted.trim_end().ends_with(&format!("= {n}")),
        "the register counts every frame across {swaps} swaps: {counted}"
    );
}

/// The same with two poll threads, each forwarding its own port's frames with its own
/// replica of the state: both count every frame in the one register (its read and write
/// atomic per packet), so the count is exact over both streams and the swaps.
#[test]
fn swaps_under_traffic_on_two_threads_count_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = count_program(&[]);
    let v2 = count_program(&["VERSION=2"]);
    let n: u32 = 100_000;
    let (in_a, in_b) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"));
    let (out_a, out_b) = (dir.path().join("oa.pcap"), dir.path().join("ob.pcap"));
    traffic_to(&in_a, n, 4, 2);
    traffic_to(&in_b, n, 4, 4);
    let mut pipeline = counting_pipeline("default", 1, 2, Arc::clone(&v1));
    let first = pipeline.init.take().unwrap();
    pipeline.init = Some(Box::new(move |s: &mut koi_state::State| {
        first(s)?;
        let c = koi_control::command::parse("table_add route fwd 0x020000000004 => 4")
            .map_err(|e| e.to_string())?
            .ok_or("empty")?;
        koi_state::cli::execute(s, &c).map_err(|e| e.to_string())?;
        Ok(())
    }));
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![pipeline],
        // Port i of the list goes to thread i % 2: port 1 to thread 0, port 3 to thread 1.
        ports: vec![
            (1, pcap_in(&in_a), 0),
            (3, pcap_in(&in_b), 0),
            (2, pcap_out(&out_a), 0),
            (4, pcap_out(&out_b), 0),
        ],
        patches: vec![],
        threads: 2,
        cache: Some(Default::default()),
    })
    .expect("switch");
    let pl = sw.pipeline(None).unwrap();
    let sent = |sw: &Switch| tx(sw, 0, 2) + tx(sw, 0, 4);
    let total = 2 * u64::from(n);
    let start = Instant::now();
    let mut swaps = 0;
    for (k, at) in [total / 8, total / 4, total / 2, 3 * total / 4]
        .into_iter()
        .enumerate()
    {
        while sent(&sw) < at && start.elapsed() < PATIENCE {
            std::thread::sleep(Duration::from_micros(100));
        }
        if sent(&sw) >= total {
            break;
        }
        let next = if k % 2 == 0 { &v2 } else { &v1 };
        pl.swap(Arc::clone(next), false).expect("swap");
        swaps += 1;
    }
    while sent(&sw) < total && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(1));
    }
    let counted = sw.command(None, "register_read count 0");
    sw.stop();
    sw.join();
    assert!(swaps >= 2, "the traffic ended before the swaps: {swaps}");
    for (out, what) in [(&out_a, "port 1 to 2"), (&out_b, "port 3 to 4")] {
        assert_in_order(&frames(out), n, what);
    }
    let counted = counted.expect("register_read");
    assert!(
        counted.trim_end().ends_with(&format!("= {total}")),
        "the register counts every frame of both threads across {swaps} swaps: {counted}"
    );
}

#[test]
fn a_swap_that_cannot_carry_the_state_changes_nothing() {
    let v1 = count_program(&[]);
    // The same table with another key: its entry cannot be carried over.
    let v2 = count_program(&["VERSION=2", "EXTRA_KEY"]);
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![PipelineSetup {
            config: PipelineConfig {
                name: "default".into(),
                device_id: 1,
                cpu_port: None,
            },
            program: Some(Arc::clone(&v1)),
            init: None,
        }],
        ports: vec![],
        patches: vec![],
        threads: 1,
        cache: Some(Default::default()),
    })
    .expect("switch");
    sw.command(None, "table_add route fwd 0x020000000002 => 2")
        .unwrap();
    sw.command(None, "register_write count 0 77").unwrap();
    let before = sw.pipeline(None).unwrap().generation();
    let e = sw.pipeline(None).unwrap().swap(v2, false).unwrap_err();
    assert!(
        e.contains("nothing changed") && e.contains("I.route"),
        "{e}"
    );
    assert_eq!(sw.pipeline(None).unwrap().generation(), before);
    let dump = sw.command(None, "table_dump route").unwrap();
    assert!(dump.contains("fwd"), "{dump}");
    let r = sw.command(None, "register_read count 0").unwrap();
    assert!(r.trim_end().ends_with("77"), "{r}");
    // `koi ctl load --reset` (fresh state) takes it.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swap_count.p4");
    let out = sw
        .command(
            None,
            &format!("load {} -D VERSION=2 -D EXTRA_KEY --reset", path.display()),
        )
        .unwrap();
    assert!(out.contains("state: fresh"), "{out}");
    assert_eq!(sw.pipeline(None).unwrap().generation(), before + 1);
    let r = sw.command(None, "register_read count 0").unwrap();
    assert!(r.trim_end().ends_with("= 0"), "{r}");
    sw.stop();
    sw.join();
}
