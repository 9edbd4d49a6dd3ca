//! P4Runtime writes reach every poll thread before its next packet: two poll threads, each
//! reading one named pipe of pcap frames (so the test decides when each batch arrives), each
//! with its own flow caches over one pipeline; P4Runtime inserts, modifies and deletes entries
//! of the table the frames use (inserts into an all-exact table and changes of one entry are
//! invalidated entry by entry, not table-wide), and after each write the next frames of
//! *both* threads must go where the table now says.

mod support;

use koi_ports::PortSpec;
use koi_proto::p4runtime::set_forwarding_pipeline_config_request::Action;
use koi_proto::p4runtime::{TableEntry, update, write_request::Atomicity};
use koi_runtime::{PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use support::*;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];
/// Frames per send: one full batch.
const N: usize = 32;

fn frame(dst: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f
}

fn route(info: &koi_proto::p4info::P4Info, mac: [u8; 6], port: u16) -> TableEntry {
    exact_entry(info, "I.route", "I.fwd", &mac, &port.to_be_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_reach_both_threads_before_their_next_packet() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.pipe"), dir.path().join("b.pipe"));
    let (wa, wb) = (pipe(&a), pipe(&b));
    let out = |p: u32| -> PathBuf { dir.path().join(format!("out{p}.pcap")) };
    let program = Arc::new(
        Program::compile_file(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../koi-runtime/tests/swap_count.p4"),
            &Default::default(),
        )
        .unwrap(),
    );
    let spec = |s: String| PortSpec::parse(&s).unwrap();
    // Ports 1 and 2 (the pipes) go to threads 0 and 1; 3, 4 and 5 write files.
    let sw = Switch::start(SwitchConfig {
        pipelines: vec![PipelineSetup {
            config: PipelineConfig {
                name: "default".into(),
                device_id: DEVICE,
                cpu_port: None,
            },
            program: Some(Arc::clone(&program)),
            init: None,
        }],
        ports: vec![
            (1, spec(format!("pcap:{},", a.display())), 0),
            (2, spec(format!("pcap:{},", b.display())), 0),
            (3, spec(format!("pcap:,{}", out(3).display())), 0),
            (4, spec(format!("pcap:,{}", out(4).display())), 0),
            (5, spec(format!("pcap:,{}", out(5).display())), 0),
        ],
        patches: vec![],
        threads: 2,
        cache: Some(Default::default()),
    })
    .expect("switch");
    // The rig before the pipes' write ends: a failing assertion unwinds closing the pipes
    // first, so that the poll threads reading them end and the rig's drop can join them.
    let rig = Rig::serve(Arc::clone(&sw));
    let (mut pa, mut pb) = (wa.join().unwrap(), wb.join().unwrap());
    assert_eq!(sw.ports()[0].thread, 0);
    assert_eq!(sw.ports()[1].thread, 1);
    let mut c = rig.client().await;
    let _primary = primary(&mut c, 1).await;
    let info = p4info(&program);
    // The program is loaded already: the controller pushes the same one.
    c.set_forwarding_pipeline_config(set_config(&program, Action::VerifyAndCommit, 1))
        .await
        .unwrap();
    let dropped = || sw.counters.unknown_port.load(Ordering::Relaxed);
    let wait = |want: (usize, usize, usize, u64), what: &str| {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let got = (
                records(&out(3)),
                records(&out(4)),
                records(&out(5)),
                dropped(),
            );
            if got == want {
                return;
            }
            // A frame sent to the wrong place stays there: fail at once.
            assert!(
                got.0 <= want.0 && got.1 <= want.1 && got.2 <= want.2 && got.3 <= want.3,
                "{what}: got (port 3, 4, 5, dropped) = {got:?}, want {want:?}"
            );
            assert!(
                Instant::now() < deadline,
                "{what}: got {got:?}, want {want:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let write1 = |kind: update::Type, e: TableEntry| {
        write(vec![upd(kind, e)], 1, Atomicity::ContinueOnError)
    };
    let (fa, fb) = (frame(MAC_A), frame(MAC_B));

    // No entry: both frames miss the table (default: port 9, which does not exist).
    send(&mut pa, &fa, N);
    send(&mut pb, &fb, N);
    wait((0, 0, 0, 2 * N as u64), "no entries: dropped");

    // Inserts (all-exact table: they concern only what missed it).
    c.write(write1(update::Type::Insert, route(&info, MAC_A, 3)))
        .await
        .unwrap();
    c.write(write1(update::Type::Insert, route(&info, MAC_B, 4)))
        .await
        .unwrap();
    send(&mut pa, &fa, N);
    send(&mut pb, &fb, N);
    wait((N, N, 0, 2 * N as u64), "after the inserts: a -> 3, b -> 4");

    // A modify of a's entry: a's thread follows it; b's flow is untouched.
    c.write(write1(update::Type::Modify, route(&info, MAC_A, 5)))
        .await
        .unwrap();
    send(&mut pa, &fa, N);
    send(&mut pb, &fb, N);
    wait(
        (N, 2 * N, N, 2 * N as u64),
        "after modifying a: a -> 5, b -> 4",
    );

    // b's entry deleted: b's frames miss again, on b's thread.
    c.write(write1(update::Type::Delete, route(&info, MAC_B, 4)))
        .await
        .unwrap();
    send(&mut pb, &fb, N);
    send(&mut pa, &fa, N);
    wait(
        (N, 2 * N, 2 * N, 3 * N as u64),
        "after deleting b: b dropped, a -> 5",
    );

    // b inserted again, to port 5: the megaflow that missed the table goes.
    c.write(write1(update::Type::Insert, route(&info, MAC_B, 5)))
        .await
        .unwrap();
    send(&mut pb, &fb, N);
    wait((N, 2 * N, 3 * N, 3 * N as u64), "b back, to 5");

    drop((pa, pb));
    drop(rig);
}
