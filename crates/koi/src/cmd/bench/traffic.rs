//! The benchmark traffic of the Open vSwitch baseline, synthesised in Rust so that `koi bench`
//! and OVS see the same frames: a byte-for-byte port of `gen_pcap.py` (in the shared
//! `bench/ovs-dpdk/` directory), which builds them with scapy.
//!
//! - **l2l3**: 60-byte untagged Ethernet/IPv4/UDP-or-TCP frames from host 0
//!   (02:00:00:00:01:00) to the router MAC (02:00:00:00:00:fe), arriving on port 1. Flow `i`
//!   goes to route `i % 16` (`198.19.(16 r + (i / 4000) % 16).((i / 16) % 250 + 1)`), comes from
//!   `198.18.(i >> 8 & 255).(i & 255)`, source port `1024 + 7 i % 60000`, and is UDP to port 53
//!   for even `i`, TCP to port 80 with the ACK flag for odd `i`.
//! - **trivial**: Ethernet 02:00:00:00:00:01 → 02:00:00:00:00:02, IPv4 `198.18.(i >> 8 &
//!   255).(i & 255)` → 198.19.0.1, UDP source port `1024 + i % 60000` to port 5001.
//!
//! Everything else is scapy's defaults: IPv4 TOS 0, identification 1, no flags, TTL 64, header
//! checksum; UDP length and checksum over the pseudo-header (0 sent as 0xffff); TCP sequence
//! and acknowledgement numbers 0, data offset 5, window 8192, checksum, urgent pointer 0;
//! zero padding to 60 bytes (64 on the wire with the FCS).
//!
//! [`pcap_frames`] repeats the list as `gen_pcap.py` does before writing it (at least 256
//! frames, every flow equally often), and [`write_pcap`] writes a pcap file (Ethernet,
//! microsecond timestamps 1 µs apart from 0) that other tools (OVS's `net_pcap`, tcpreplay,
//! `koi bench --pcap`) can replay.

use clap::ValueEnum;
use pcap_file::pcap::{PcapPacket, PcapWriter};
use std::io::BufWriter;
use std::path::Path;
use std::time::Duration;

/// Which of `gen_pcap.py`'s traffic patterns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// The L2L3-ACL program's traffic (host 0 to the router, 16 routes, UDP and TCP).
    #[default]
    L2l3,
    /// The trivial program's traffic (one destination, UDP).
    Trivial,
}

impl Kind {
    /// The name `gen_pcap.py` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kind::L2l3 => "l2l3",
            Kind::Trivial => "trivial",
        }
    }
}

/// The router's MAC address.
const ROUTER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xfe];
/// Host 0's MAC address.
const HOST0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x00];
/// The frame length before the FCS.
pub const FRAME_LEN: usize = 60;
/// `gen_pcap.py` writes at least this many frames.
pub const MIN_PCAP_FRAMES: usize = 256;

/// The `n` distinct flows of `kind`, one frame each, in `gen_pcap.py`'s order.
pub fn frames(kind: Kind, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| match kind {
            Kind::L2l3 => l2l3(i),
            Kind::Trivial => trivial(i),
        })
        .collect()
}

/// The frames `gen_pcap.py KIND N` writes: [`frames`] repeated as a whole until there are at
/// least [`MIN_PCAP_FRAMES`].
pub fn pcap_frames(kind: Kind, n: usize) -> Vec<Vec<u8>> {
    let one = frames(kind, n);
    if one.is_empty() || one.len() >= MIN_PCAP_FRAMES {
        return one;
    }
    let reps = MIN_PCAP_FRAMES.div_ceil(one.len());
    let mut all = Vec::with_capacity(reps * one.len());
    for _ in 0..reps {
        all.extend(one.iter().cloned());
    }
    all
}

/// Writes `frames` to a new pcap file at `path`.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let f = std::fs::File::create(path).map_err(|e| err(&e))?;
    let mut w = PcapWriter::new(BufWriter::new(f)).map_err(|e| err(&e))?;
    for (i, f) in frames.iter().enumerate() {
        let ts = Duration::from_micros(i as u64);
        w.write_packet(&PcapPacket::new(ts, f.len() as u32, f))
            .map_err(|e| err(&e))?;
    }
    let mut out = w.into_writer();
    std::io::Write::flush(&mut out).map_err(|e| err(&e))
}

/// `gen_pcap.py`'s `l2l3` flow `i`.
fn l2l3(i: usize) -> Vec<u8> {
    let r = i % 16;
    let h = (i / 16) % 250 + 1;
    let dst = [198, 19, (r * 16 + (i / 4000) % 16) as u8, h as u8];
    let src = [198, 18, ((i >> 8) & 0xff) as u8, (i & 0xff) as u8];
    let sport = (1024 + (i % 60000) * 7 % 60000) as u16;
    let l4 = if i.is_multiple_of(2) {
        L4::Udp { sport, dport: 53 }
    } else {
        L4::TcpAck { sport, dport: 80 }
    };
    frame(ROUTER_MAC, HOST0_MAC, src, dst, l4)
}

/// `gen_pcap.py`'s `trivial` flow `i`.
fn trivial(i: usize) -> Vec<u8> {
    let src = [198, 18, ((i >> 8) & 0xff) as u8, (i & 0xff) as u8];
    let sport = (1024 + i % 60000) as u16;
    frame(
        [0x02, 0, 0, 0, 0, 0x02],
        [0x02, 0, 0, 0, 0, 0x01],
        src,
        [198, 19, 0, 1],
        L4::Udp { sport, dport: 5001 },
    )
}

/// The transport header of a frame.
#[derive(Clone, Copy)]
enum L4 {
    Udp { sport: u16, dport: u16 },
    TcpAck { sport: u16, dport: u16 },
}

/// Ethernet/IPv4/`l4` as scapy builds it, padded with zeros to [`FRAME_LEN`].
fn frame(dmac: [u8; 6], smac: [u8; 6], src: [u8; 4], dst: [u8; 4], l4: L4) -> Vec<u8> {
    let (proto, mut l4h) = match l4 {
        L4::Udp { sport, dport } => {
            let mut h = Vec::with_capacity(8);
            h.extend_from_slice(&sport.to_be_bytes());
            h.extend_from_slice(&dport.to_be_bytes());
            h.extend_from_slice(&8u16.to_be_bytes());
            h.extend_from_slice(&[0, 0]);
            (17u8, h)
        }
        L4::TcpAck { sport, dport } => {
            let mut h = Vec::with_capacity(20);
            h.extend_from_slice(&sport.to_be_bytes());
            h.extend_from_slice(&dport.to_be_bytes());
            h.extend_from_slice(&[0; 8]); // sequence and acknowledgement numbers
            h.extend_from_slice(&[0x50, 0x10]); // data offset 5, flags ACK
            h.extend_from_slice(&8192u16.to_be_bytes()); // window
            h.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
            (6u8, h)
        }
    };
    let l4_len = l4h.len() as u16;
    // The transport checksum over the pseudo-header (addresses, protocol, length).
    let mut pseudo = Vec::with_capacity(12 + l4h.len());
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, proto]);
    pseudo.extend_from_slice(&l4_len.to_be_bytes());
    pseudo.extend_from_slice(&l4h);
    let mut ck = checksum(&pseudo);
    let ck_at = if proto == 17 {
        // RFC 768: a computed 0 is sent as all ones (0 means "no checksum"); scapy does so.
        if ck == 0 {
            ck = 0xffff;
        }
        6
    } else {
        16
    };
    l4h[ck_at..ck_at + 2].copy_from_slice(&ck.to_be_bytes());

    let total = 20 + l4_len;
    let mut ip = Vec::with_capacity(20);
    ip.extend_from_slice(&[0x45, 0]);
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0, 0, 64, proto, 0, 0]); // id 1, no fragment, TTL 64
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());

    let mut f = Vec::with_capacity(FRAME_LEN);
    f.extend_from_slice(&dmac);
    f.extend_from_slice(&smac);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&l4h);
    f.resize(FRAME_LEN.max(f.len()), 0);
    f
}

/// The Internet checksum (RFC 1071) of `b`.
fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| (u32::from(c[0]) << 8) | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[cfg(test)]
mod tests {
    //! Fixed expected bytes: frames that scapy 2.8.0 wrote when running
    //! `gen_pcap.py l2l3 10000` and `gen_pcap.py trivial 3` (read back with `rdpcap`). The
    //! integration test `tests/bench_cli.rs` also compares whole files with `gen_pcap.py`'s
    //! output when python3 with scapy is available.

    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn l2l3_frames_match_scapy() {
        let f = frames(Kind::L2l3, 10_000);
        let expect = [
            (
                0,
                "0200000000fe02000000010008004500001c000100004011eea9c6120000c61300010400003500086f82000000000000000000000000000000000000",
            ),
            (
                1,
                "0200000000fe020000000100080045000028000100004006dea7c6120001c613100104070050000000000000000050102000ef550000000000000000",
            ),
            (
                4001,
                "0200000000fe020000000100080045000028000100004006ce07c6120fa1c61311017167005000000000000000005010200071550000000000000000",
            ),
            (
                9999,
                "0200000000fe020000000100080045000028000100004006d51cc612270fc613f27d2b090050000000000000000050102000bec80000000000000000",
            ),
        ];
        for (i, e) in expect {
            assert_eq!(hex(&f[i]), e, "flow {i}");
        }
        assert!(f.iter().all(|x| x.len() == FRAME_LEN));
    }

    #[test]
    fn trivial_frames_match_scapy() {
        let f = frames(Kind::Trivial, 2);
        assert_eq!(
            hex(&f[0]),
            "02000000000202000000000108004500001c000100004011eea9c6120000c61300010400138900085c2e000000000000000000000000000000000000"
        );
        assert_eq!(
            hex(&f[1]),
            "02000000000202000000000108004500001c000100004011eea8c6120001c61300010401138900085c2c000000000000000000000000000000000000"
        );
    }

    #[test]
    fn pcap_frames_repeat_like_gen_pcap() {
        assert_eq!(pcap_frames(Kind::L2l3, 1).len(), 256);
        assert_eq!(pcap_frames(Kind::Trivial, 3).len(), 258);
        assert_eq!(pcap_frames(Kind::L2l3, 100).len(), 300);
        assert_eq!(pcap_frames(Kind::L2l3, 10_000).len(), 10_000);
        let f = pcap_frames(Kind::L2l3, 3);
        assert_eq!(f[0], f[3]);
        assert_ne!(f[0], f[1]);
    }

    #[test]
    fn flows_are_distinct() {
        let f = frames(Kind::L2l3, 10_000);
        let set: std::collections::HashSet<_> = f.iter().collect();
        assert_eq!(set.len(), f.len());
    }
}
