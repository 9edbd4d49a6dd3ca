//! Software spread, for a port whose device gives one receive queue (a TAP device, an AF_XDP
//! port on a single-queue interface) while several poll threads forward: the thread that
//! reads the port hands each frame to the thread its flow belongs to, so that every thread
//! works and a flow stays on one thread (its frames in order). [`flow_hash`] names the flow;
//! a [`Wakeup`] tells a sleeping thread that frames were handed to it.

use crate::{Readiness, sys};
use std::io;
use std::os::fd::OwnedFd;

/// A hash of a frame's flow: its IPv4 or IPv6 addresses, protocol and (for TCP, UDP, SCTP and
/// UDP-Lite, unfragmented) ports, behind Ethernet and any VLAN tags; other frames hash their
/// MAC addresses and EtherType. The same for every frame of one flow (and, as the fields are
/// combined in an order that does not depend on direction, for both directions of it).
pub fn flow_hash(frame: &[u8]) -> u64 {
    let Some(macs) = frame.get(..12) else {
        return 0;
    };
    let mut at = 12;
    let mut ethertype = be16(frame, at);
    while matches!(ethertype, Some(0x8100 | 0x88a8 | 0x9100)) {
        at += 4;
        ethertype = be16(frame, at);
    }
    let l3 = at + 2;
    let fallback = || {
        let ty = frame.get(at..).map_or(&[][..], |r| &r[..r.len().min(2)]);
        mix(&[macs, ty])
    };
    match ethertype {
        Some(0x0800) => {
            let Some(h) = frame.get(l3..l3 + 20) else {
                return fallback();
            };
            let ihl = usize::from(h[0] & 0x0f) * 4;
            let fragment = u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0;
            let ports = if fragment {
                None
            } else {
                ports(frame, h[9], l3 + ihl)
            };
            sym(&h[12..16], &h[16..20], h[9], ports)
        }
        Some(0x86dd) => {
            let Some(h) = frame.get(l3..l3 + 40) else {
                return fallback();
            };
            sym(&h[8..24], &h[24..40], h[6], ports(frame, h[6], l3 + 40))
        }
        _ => fallback(),
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The source and destination ports at `l4` for the protocols that have them there.
fn ports(frame: &[u8], proto: u8, l4: usize) -> Option<[u8; 4]> {
    matches!(proto, 6 | 17 | 132 | 136)
        .then(|| frame.get(l4..l4 + 4))
        .flatten()
        .map(|p| [p[0], p[1], p[2], p[3]])
}

/// A direction-independent hash of (address, port) pairs and the protocol.
fn sym(a: &[u8], b: &[u8], proto: u8, ports: Option<[u8; 4]>) -> u64 {
    let (pa, pb) = ports.map_or(([0, 0], [0, 0]), |p| ([p[0], p[1]], [p[2], p[3]]));
    let (x, y) = (mix(&[a, &pa]), mix(&[b, &pb]));
    mix(&[
        &(x ^ y).to_le_bytes(),
        &x.wrapping_add(y).to_le_bytes(),
        &[proto],
    ])
}

/// FNV-1a over the parts, then a final avalanche (so that `% threads` sees every bit).
fn mix(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// A wake-up a poll thread can wait for beside its ports (an `eventfd`).
#[derive(Debug)]
pub struct Wakeup {
    fd: OwnedFd,
}

impl Wakeup {
    pub fn new() -> io::Result<Wakeup> {
        Ok(Wakeup {
            fd: sys::eventfd()?,
        })
    }

    /// Makes the wake-up readable (the waiting thread's `poll(2)` returns).
    pub fn wake(&self) {
        sys::eventfd_signal(&self.fd);
    }

    /// Makes it not readable again (call before looking for what woke it).
    pub fn clear(&self) {
        sys::eventfd_drain(&self.fd);
    }

    pub fn readiness(&self) -> Readiness {
        Readiness::Fd(sys::raw(&self.fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, vlan: bool) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        if vlan {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a]);
        }
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&[0, 8, 0, 0]);
        f
    }

    #[test]
    fn one_flow_one_hash_both_ways_and_flows_spread() {
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let h = flow_hash(&udp4(a, b, 1000, 53, false));
        assert_eq!(h, flow_hash(&udp4(a, b, 1000, 53, false)));
        assert_eq!(
            h,
            flow_hash(&udp4(b, a, 53, 1000, false)),
            "both directions"
        );
        assert_eq!(
            h,
            flow_hash(&udp4(a, b, 1000, 53, true)),
            "behind a VLAN tag"
        );
        assert_ne!(h, flow_hash(&udp4(a, b, 1001, 53, false)));
        // 256 flows over 2 and 4 threads: none empty, none with more than twice its share.
        for n in [2u64, 4] {
            let mut per = vec![0u32; n as usize];
            for p in 0..256u16 {
                per[(flow_hash(&udp4(a, b, 1000 + p, 53, false)) % n) as usize] += 1;
            }
            let share = 256 / n as u32;
            assert!(per.iter().all(|&c| c > 0 && c < 2 * share), "{per:?}");
        }
        // Short and odd frames hash without panicking.
        for len in 0..60 {
            flow_hash(&udp4(a, b, 1, 2, true)[..len.min(46)]);
        }
        assert_eq!(flow_hash(&[]), 0);
    }

    #[test]
    fn a_wakeup_is_readable_once_woken_until_cleared() {
        let w = Wakeup::new().unwrap();
        let fd = match w.readiness() {
            Readiness::Fd(fd) => fd,
            r => panic!("{r:?}"),
        };
        let mut p = crate::Poller::new();
        p.wait(&[Readiness::Fd(fd)], 0).unwrap();
        assert_eq!(p.wake(0), crate::Wake::Nothing);
        w.wake();
        w.wake();
        p.wait(&[Readiness::Fd(fd)], 1000).unwrap();
        assert_eq!(p.wake(0), crate::Wake::Ready);
        w.clear();
        p.wait(&[Readiness::Fd(fd)], 0).unwrap();
        assert_eq!(p.wake(0), crate::Wake::Nothing);
    }
}
