//! Per-port counters: packets and bytes each way, and drops by reason.

use std::fmt;

/// What a port did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Frames larger than the port's limit (received or to be sent).
    pub drop_too_big: u64,
    /// Frames captured only in part (a pcap record shorter than the frame it recorded).
    pub drop_truncated: u64,
    /// Frames not sent because the link was down or the interface gone.
    pub drop_link_down: u64,
    /// Frames lost to other errors (a full socket buffer, a malformed ring entry, I/O errors).
    pub drop_error: u64,
    /// Frames the kernel dropped because the receive ring was full (`PACKET_STATISTICS`).
    pub drop_ring_full: u64,
}

impl Stats {
    pub(crate) fn rx(&mut self, len: usize) {
        self.rx_packets += 1;
        self.rx_bytes += len as u64;
    }

    pub(crate) fn tx(&mut self, len: usize) {
        self.tx_packets += 1;
        self.tx_bytes += len as u64;
    }

    /// Adds `other`'s counts to these (several ports, or several sockets of one port).
    pub fn add(&mut self, other: &Stats) {
        self.rx_packets += other.rx_packets;
        self.rx_bytes += other.rx_bytes;
        self.tx_packets += other.tx_packets;
        self.tx_bytes += other.tx_bytes;
        self.drop_too_big += other.drop_too_big;
        self.drop_truncated += other.drop_truncated;
        self.drop_link_down += other.drop_link_down;
        self.drop_error += other.drop_error;
        self.drop_ring_full += other.drop_ring_full;
    }

    /// All drops together.
    pub fn drops(&self) -> u64 {
        self.drop_too_big
            + self.drop_truncated
            + self.drop_link_down
            + self.drop_error
            + self.drop_ring_full
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rx {} pkts {} bytes, tx {} pkts {} bytes, drops: too_big {} truncated {} link_down {} error {} ring_full {}",
            self.rx_packets,
            self.rx_bytes,
            self.tx_packets,
            self.tx_bytes,
            self.drop_too_big,
            self.drop_truncated,
            self.drop_link_down,
            self.drop_error,
            self.drop_ring_full
        )
    }
}
