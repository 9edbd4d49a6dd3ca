//! Frames of many UDP flows, and the check that a port's receive sides (one per poll thread)
//! got every frame once, each flow on one side and in order, and every side some flows.

use koi_ports::{Batch, Poller, Port, Readiness};
use std::time::{Duration, Instant};

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];

/// An IPv4/UDP frame of flow `flow` (source port) carrying `seq`, so that the kernel's flow
/// hash tells flows apart.
pub fn udp_frame(flow: u16, seq: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&MAC_B);
    f.extend_from_slice(&MAC_A);
    f.extend_from_slice(&[0x08, 0x00]);
    let total: u16 = 20 + 8 + 8;
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&(10_000 + flow).to_be_bytes());
    f.extend_from_slice(&[0x30, 0x39, 0, 16, 0, 0]);
    f.extend_from_slice(b"KOIF");
    f.extend_from_slice(&seq.to_be_bytes());
    f
}

/// `(flow, seq)` of a frame [`udp_frame`] made.
pub fn udp_seq(f: &[u8]) -> Option<(u16, u32)> {
    (f.len() >= 50 && f.get(42..46) == Some(&b"KOIF"[..])).then(|| {
        (
            u16::from_be_bytes([f[34], f[35]]) - 10_000,
            u32::from_be_bytes([f[46], f[47], f[48], f[49]]),
        )
    })
}

/// Sends `each` frames of each of `flows` flows through `tx`, round by round.
pub fn send_flows(tx: &mut dyn Port, flows: u16, each: u32) {
    for seq in 0..each {
        for flow in 0..flows {
            tx.send(&udp_frame(flow, seq)).unwrap();
        }
        tx.flush().unwrap();
    }
}

/// Receives from `ports` until `flows` x `each` frames of [`udp_frame`] have come (or 10 s
/// passed) and checks them: each once, each flow wholly on one port and in order, every port
/// some flows.
pub fn spread_check(ports: &mut [Box<dyn Port>], flows: usize, each: u32) {
    let mut seen: Vec<Vec<(usize, u32)>> = vec![Vec::new(); flows];
    let mut batch = Batch::new(koi_ports::DEFAULT_SNAPLEN);
    let mut poller = Poller::new();
    let want = flows * each as usize;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = 0;
    while got < want && Instant::now() < deadline {
        let ready: Vec<Readiness> = ports.iter().map(|p| p.readiness()).collect();
        poller.wait(&ready, 100).expect("poll");
        for (k, p) in ports.iter_mut().enumerate() {
            p.recv_batch(&mut batch).expect("recv");
            for f in batch.iter() {
                if let Some((flow, seq)) = udp_seq(f) {
                    seen[usize::from(flow)].push((k, seq));
                    got += 1;
                }
            }
        }
    }
    let odd: Vec<_> = seen
        .iter()
        .enumerate()
        .filter(|(_, f)| f.len() != each as usize)
        .map(|(i, f)| (i, f.clone()))
        .take(3)
        .collect();
    assert_eq!(got, want, "every frame once: {odd:?}");
    let mut per_port = vec![0usize; ports.len()];
    for (flow, frames) in seen.iter().enumerate() {
        let port = frames[0].0;
        assert!(
            frames.iter().all(|&(k, _)| k == port),
            "flow {flow} stays on one receive side: {frames:?}"
        );
        let seqs: Vec<u32> = frames.iter().map(|&(_, s)| s).collect();
        assert_eq!(seqs, (0..each).collect::<Vec<_>>(), "flow {flow} in order");
        per_port[port] += 1;
    }
    assert!(
        per_port.iter().all(|&n| n > 0),
        "every receive side gets flows: {per_port:?}"
    );
}
