//! Software spread: a device with one receive queue (here a TAP device) forwarded by two poll
//! threads. The thread that reads it hands each frame to the thread its flow belongs to, so
//! both threads forward, every frame comes out once, and each flow's frames come out in the
//! order they went in. `examples/l2_forward.p4` between two TAP devices in a throwaway
//! network namespace, driven through AF_PACKET sockets on the TAP interfaces. Needs root;
//! without it the test prints a SKIP line and passes (unless `KOI_E2E_REQUIRED` is set).

use koi_ports::afpacket::{AfPacketConfig, AfPacketPort};
use koi_ports::{Batch, Poller, Port, PortSpec, netns};
use koi_runtime::{PipelineConfig, PipelineSetup, Program, Switch, SwitchConfig};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(20);

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.0]);
    }
}

/// An IPv4/UDP frame of flow `flow` (its source port) carrying `seq`.
fn udp_frame(flow: u16, seq: u32) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 0x0b, 2, 0, 0, 0, 0, 0x0a, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 36, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&(20_000 + flow).to_be_bytes());
    f.extend_from_slice(&[0x30, 0x39, 0, 16, 0, 0]);
    f.extend_from_slice(b"KOIS");
    f.extend_from_slice(&seq.to_be_bytes());
    f
}

fn udp_seq(f: &[u8]) -> Option<(u16, u32)> {
    (f.len() >= 50 && f.get(42..46) == Some(&b"KOIS"[..])).then(|| {
        (
            u16::from_be_bytes([f[34], f[35]]) - 20_000,
            u32::from_be_bytes([f[46], f[47], f[48], f[49]]),
        )
    })
}

#[test]
fn a_single_queue_device_is_spread_over_both_threads_by_flow() {
    let ns = Ns(format!("koispread{}", std::process::id()));
    if !ip(&["netns", "add", &ns.0]) {
        assert!(
            std::env::var_os("KOI_E2E_REQUIRED").is_none(),
            "cannot create network namespaces"
        );
        eprintln!("SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN)");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = Arc::new(
        Program::compile_file(&repo.join("examples/l2_forward.p4"), &Default::default())
            .expect("l2_forward"),
    );
    let setup = PipelineSetup {
        config: PipelineConfig {
            name: "default".into(),
            device_id: 1,
            cpu_port: None,
        },
        program: Some(program),
        init: Some(Box::new(|s: &mut koi_state::State| {
            for l in [
                "table_add fwd set_port 1 => 2",
                "table_add fwd set_port 2 => 1",
            ] {
                let c = koi_control::command::parse(l)
                    .map_err(|e| e.to_string())?
                    .ok_or("empty")?;
                koi_state::cli::execute(s, &c).map_err(|e| e.to_string())?;
            }
            Ok(())
        })),
    };
    let cfg = SwitchConfig {
        pipelines: vec![setup],
        ports: vec![
            (1, PortSpec::parse("tap:ksa").unwrap(), 0),
            (2, PortSpec::parse("tap:ksb").unwrap(), 0),
        ],
        patches: vec![],
        threads: 2,
        cache: Some(Default::default()),
    };
    let sw = netns::run_in(&ns.0, || Switch::start(cfg))
        .expect("enter namespace")
        .expect("switch");
    assert!(
        sw.ports().iter().all(|s| s.soft_spread),
        "TAP ports are spread in software"
    );
    for dev in ["ksa", "ksb"] {
        assert!(ip(&["-n", &ns.0, "link", "set", dev, "up"]));
    }
    let open = |dev: &str| {
        netns::run_in(&ns.0, || AfPacketPort::open(dev, AfPacketConfig::default()))
            .expect("enter namespace")
            .expect("AF_PACKET")
    };
    let (mut tx, mut rx) = (open("ksa"), open("ksb"));
    const FLOWS: u16 = 64;
    const EACH: u32 = 20;
    let want = usize::from(FLOWS) * EACH as usize;
    // The receiver reads while the frames go in, so that its own ring never fills.
    let receiver = std::thread::spawn(move || {
        let mut seen: Vec<Vec<u32>> = vec![Vec::new(); usize::from(FLOWS)];
        let (mut batch, mut poller) = (Batch::new(koi_ports::DEFAULT_SNAPLEN), Poller::new());
        let deadline = Instant::now() + PATIENCE;
        let mut got = 0;
        while got < want && Instant::now() < deadline {
            poller.wait(&[rx.readiness()], 100).expect("poll");
            rx.recv_batch(&mut batch).expect("recv");
            for f in batch.iter() {
                if let Some((flow, seq)) = udp_seq(f) {
                    seen[usize::from(flow)].push(seq);
                    got += 1;
                }
            }
        }
        (got, seen, rx.stats())
    });
    for seq in 0..EACH {
        for flow in 0..FLOWS {
            tx.send(&udp_frame(flow, seq)).unwrap();
        }
        tx.flush().unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let (got, seen, rx_stats) = receiver.join().unwrap();
    let stats = sw.command(None, "stats").unwrap_or_default();
    assert_eq!(
        got,
        want,
        "every frame once\n{stats}\nreceiver: {rx_stats}\n{}",
        sw.command(None, "port_show").unwrap_or_default()
    );
    for (flow, seqs) in seen.iter().enumerate() {
        assert_eq!(seqs, &(0..EACH).collect::<Vec<_>>(), "flow {flow} in order");
    }
    // Both threads forwarded: each thread's cache saw packets.
    let image = sw.pipeline(None).unwrap().image().unwrap();
    let per: Vec<u64> = image
        .caches()
        .fresh()
        .iter()
        .map(|s| s.as_ref().map_or(0, |s| s.stats.packets))
        .collect();
    assert_eq!(per.len(), 2);
    assert!(
        per.iter().all(|&n| n > 0),
        "both threads forwarded: {per:?}"
    );
    // (The kernel's own frames on the TAP devices, neighbour discovery, come through too.)
    assert!(per.iter().sum::<u64>() as usize >= want, "{per:?}");
    sw.stop();
    sw.join();
}
