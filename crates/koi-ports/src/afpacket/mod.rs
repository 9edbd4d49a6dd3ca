//! Linux `AF_PACKET` ports: a raw packet socket bound to one interface, receiving through a
//! `TPACKET_V3` memory-mapped ring (`ring`) and sending with `send(2)`.
//!
//! Receive: the ring delivers packets a block at a time; the socket is made readable by the
//! kernel when a block retires (full, or `retire_ms` after its first packet), so a poll thread
//! sleeps in `poll(2)` while the link is idle and pays one wake-up per block under load.
//! The default ring is 64 blocks of 64 KiB (4 MiB): as a block retires at most 2 ms after its
//! first frame, a slow link's frames can wait 128 ms for a poll thread that is busy or not
//! scheduled (with 16 blocks of 256 KiB, 32 ms), and a fast link's ring holds about 40,000
//! small frames.
//! The socket is opened with protocol 0 and only bound (to `ETH_P_ALL` on the interface) after
//! the ring exists, so no frame of another interface slips in. `PACKET_IGNORE_OUTGOING` keeps
//! the port's own transmissions out of its ring. The interface is put in promiscuous mode
//! (`PACKET_MR_PROMISC`, undone by the kernel when the socket closes).
//!
//! Spread: with [`AfPacketConfig::fanout`], the socket joins a `PACKET_FANOUT` group of type
//! `PACKET_FANOUT_HASH`: the kernel hands each received frame to one socket of the group,
//! chosen by the frame's flow hash, so that several ports opened on one interface (one per
//! poll thread) share its traffic and every flow stays with one of them. `Some(0)` asks the
//! kernel for a new group with an id of its own (`PACKET_FANOUT_FLAG_UNIQUEID`), which
//! [`AfPacketPort::fanout_group`] then tells, for the other sockets to join.
//!
//! Transmit: [`crate::Port::send`] queues the frame in the port's transmit buffer, and
//! [`crate::Port::flush`] (the poll thread calls it at the end of each batch; a full queue of
//! [`sys::SENDMMSG_MAX`] frames flushes by itself) hands the whole queue to the kernel with
//! non-blocking `sendmmsg(2)` calls: one system call per batch, not per frame. A frame the
//! kernel refuses is counted (`too_big` for the MTU, `link_down`, or `error` for a full socket
//! buffer, which drops the frame instead of blocking the poll thread) and the rest of the
//! batch still goes out.
//!
//! Size: frames up to `snaplen` bytes (VLAN tag included) are accepted; larger received frames
//! and frames the interface's MTU refuses on send (`EMSGSIZE`) are counted as `too_big`.
//!
//! Link events: when the interface goes down the socket reports `ENETDOWN` (a `poll` error);
//! sends fail and count as `link_down`, and reception resumes by itself when it comes back up.
//! The kernel tells such a socket nothing more (neither the way up nor the interface's removal:
//! `ip link del` takes the link down first), so while it is down the port is polled now and
//! then ([`crate::Readiness::Idle`]) and looks at the interface itself. When the interface
//! disappears, the port closes its socket and retries opening it by name with exponential
//! backoff (100 ms to 5 s), logging each transition. The look and the retry find the name in
//! the network namespace of the thread that calls [`crate::Port::recv_batch`].

mod ring;

use crate::retry::Retry;
use crate::sys::{self, Mmap};
use crate::{Batch, DEFAULT_SNAPLEN, PortError, Readiness, Result, Stats};
use ring::{Event, RxRing};
use std::cell::Cell;
use std::io;
use std::os::fd::OwnedFd;

/// Ring geometry and socket options of an [`AfPacketPort`].
#[derive(Clone, Debug)]
pub struct AfPacketConfig {
    /// The largest frame accepted, in bytes.
    pub snaplen: usize,
    /// Bytes per ring block (rounded up to whole pages, at least room for one largest frame).
    pub block_size: usize,
    /// Blocks in the ring.
    pub block_nr: usize,
    /// Milliseconds after which a partly filled block is handed over anyway.
    pub retire_ms: u32,
    /// Put the interface in promiscuous mode.
    pub promisc: bool,
    /// Join this fanout group (spread by flow hash; 0: a new group, see the module
    /// documentation).
    pub fanout: Option<u16>,
}

impl Default for AfPacketConfig {
    fn default() -> AfPacketConfig {
        AfPacketConfig {
            snaplen: DEFAULT_SNAPLEN,
            block_size: 1 << 16,
            block_nr: 64,
            retire_ms: 2,
            promisc: true,
            fanout: None,
        }
    }
}

const PAGE: usize = 4096;
/// Room for the block descriptor and one packet header in front of a frame.
const OVERHEAD: usize = 256;
const FRAME_SIZE: usize = 2048;

impl AfPacketConfig {
    fn block_size(&self) -> usize {
        let want = self.block_size.max(self.snaplen + OVERHEAD).max(FRAME_SIZE);
        want.div_ceil(PAGE) * PAGE
    }
}

/// An open socket with its ring.
#[derive(Debug)]
struct Live {
    fd: OwnedFd,
    ring: RxRing,
    ifindex: u32,
    /// The socket reported the link down (`ENETDOWN`). The kernel stops delivering to it and
    /// reports nothing more, not even the interface's removal, so the port looks by itself.
    down: bool,
    /// The fanout group the socket joined.
    fanout: Option<u16>,
}

/// An `AF_PACKET` port on one interface.
#[derive(Debug)]
pub struct AfPacketPort {
    ifname: String,
    cfg: AfPacketConfig,
    live: Option<Live>,
    stats: Stats,
    /// Queued frames, back to back, and where each ends.
    txq: Vec<u8>,
    tx_ends: Vec<usize>,
    ring_drops: Cell<u64>,
    retry: Retry,
}

impl AfPacketPort {
    /// Opens a port on interface `ifname`. Fails if the interface does not exist or the socket
    /// cannot be set up (no `CAP_NET_RAW`, say).
    pub fn open(ifname: &str, mut cfg: AfPacketConfig) -> Result<AfPacketPort> {
        let live = open_live(ifname, &cfg).map_err(|e| PortError::Io(ifname.to_string(), e))?;
        // A socket reopened later joins the group this one did.
        cfg.fanout = live.fanout;
        Ok(AfPacketPort {
            ifname: ifname.to_string(),
            cfg,
            live: Some(live),
            stats: Stats::default(),
            txq: Vec::with_capacity(sys::SENDMMSG_MAX * 256),
            tx_ends: Vec::with_capacity(sys::SENDMMSG_MAX),
            ring_drops: Cell::new(0),
            retry: Retry::new(),
        })
    }

    /// The fanout group the port's socket is in, if it spreads traffic with others.
    pub fn fanout_group(&self) -> Option<u16> {
        self.cfg.fanout
    }

    /// Whether the port has an open socket (false while an interface that vanished is retried).
    pub fn is_open(&self) -> bool {
        self.live.is_some()
    }

    /// Whether the socket reported the link down and it has not come back up since.
    pub fn is_down(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.down)
    }

    /// The interface is gone (or another took its name): close the socket and retry by name.
    fn vanished(&mut self) {
        tracing::warn!(port = %self.ifname, "interface vanished; retrying with backoff");
        self.live = None;
        self.retry.lost();
    }

    /// A link reported down: has the interface vanished meanwhile, or come back up? (A socket
    /// whose link went down is told nothing of either: the kernel resumes delivery on the
    /// way up, and removes the interface without another error.)
    fn check_down_link(&mut self) {
        let Some(live) = &mut self.live else { return };
        if sys::if_index(&self.ifname) != Some(live.ifindex) {
            self.vanished();
            return;
        }
        if sys::if_up(&live.fd, &self.ifname) == Some(true) {
            live.down = false;
            tracing::info!(port = %self.ifname, "link is up");
        }
    }

    fn try_reopen(&mut self) {
        let (name, cfg) = (&self.ifname, &self.cfg);
        if let Some(l) = self.retry.attempt(name, || open_live(name, cfg)) {
            self.live = Some(l);
        }
    }
}

fn open_live(ifname: &str, cfg: &AfPacketConfig) -> io::Result<Live> {
    let ifindex = sys::if_index(ifname)
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such interface"))?;
    let fd = sys::packet_socket()?;
    let version = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
    sys::setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &version)?;
    let block_size = cfg.block_size();
    let block_nr = cfg.block_nr.max(2);
    let req = libc::tpacket_req3 {
        tp_block_size: block_size as u32,
        tp_block_nr: block_nr as u32,
        tp_frame_size: FRAME_SIZE as u32,
        tp_frame_nr: (block_size / FRAME_SIZE * block_nr) as u32,
        tp_retire_blk_tov: cfg.retire_ms.max(1),
        tp_sizeof_priv: 0,
        tp_feature_req_word: 0,
    };
    sys::setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
    let map = Mmap::ring(&fd, block_size * block_nr)?;
    let one: libc::c_int = 1;
    if let Err(e) = sys::setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one) {
        tracing::warn!(port = %ifname, error = %e, "PACKET_IGNORE_OUTGOING unsupported: the port may see its own transmissions");
    }
    sys::bind_ll(&fd, ifindex)?;
    let fanout = match cfg.fanout {
        Some(id) => {
            let flags = libc::PACKET_FANOUT_HASH
                | if id == 0 {
                    libc::PACKET_FANOUT_FLAG_UNIQUEID
                } else {
                    0
                };
            let arg = (u32::from(id) | (flags << 16)) as libc::c_int;
            sys::setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg)?;
            let got = sys::getsockopt::<libc::c_int>(&fd, libc::SOL_PACKET, libc::PACKET_FANOUT)?;
            Some((got as u32 & 0xffff) as u16)
        }
        None => None,
    };
    if cfg.promisc {
        let mreq = libc::packet_mreq {
            mr_ifindex: ifindex as libc::c_int,
            mr_type: libc::PACKET_MR_PROMISC as u16,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        sys::setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)?;
    }
    Ok(Live {
        fd,
        ring: RxRing::new(map, block_size, block_nr),
        ifindex,
        down: false,
        fanout,
    })
}

/// `struct tpacket_stats_v3`.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct KernelStats {
    packets: u32,
    drops: u32,
    freeze_q_cnt: u32,
}

impl AfPacketPort {
    /// Sends the queued frames (see the module documentation); the error is the last frame
    /// failure, if any.
    fn flush_tx(&mut self) -> Result<()> {
        let mut result = Ok(());
        let mut all: [&[u8]; sys::SENDMMSG_MAX] = [&[]; sys::SENDMMSG_MAX];
        let mut start = 0;
        for (slot, &end) in all.iter_mut().zip(&self.tx_ends) {
            *slot = self.txq.get(start..end).unwrap_or_default();
            start = end;
        }
        let frames = &all[..self.tx_ends.len().min(sys::SENDMMSG_MAX)];
        let mut i = 0;
        while i < frames.len() {
            let Some(live) = &self.live else {
                let n = (frames.len() - i) as u64;
                self.stats.drop_link_down += n;
                result = Err(PortError::LinkDown(self.ifname.clone()));
                break;
            };
            match sys::sendmmsg_nonblocking(&live.fd, &frames[i..]) {
                Ok(0) => {
                    // Nothing accepted without an error: count the frame as an error drop
                    // rather than spin.
                    self.stats.drop_error += 1;
                    i += 1;
                }
                Ok(n) => {
                    for f in &frames[i..i + n] {
                        self.stats.tx(f.len());
                    }
                    i += n;
                }
                Err(e) => {
                    let len = frames[i].len();
                    result = Err(match e.raw_os_error() {
                        Some(libc::EMSGSIZE) => {
                            self.stats.drop_too_big += 1;
                            PortError::TooBig(self.ifname.clone(), len, 0)
                        }
                        Some(libc::ENETDOWN | libc::ENXIO | libc::ENODEV) => {
                            self.stats.drop_link_down += 1;
                            PortError::LinkDown(self.ifname.clone())
                        }
                        _ => {
                            self.stats.drop_error += 1;
                            PortError::Io(self.ifname.clone(), e)
                        }
                    });
                    i += 1;
                }
            }
        }
        self.txq.clear();
        self.tx_ends.clear();
        result
    }
}

impl crate::Port for AfPacketPort {
    fn name(&self) -> &str {
        &self.ifname
    }

    fn recv_batch(&mut self, out: &mut Batch) -> Result<usize> {
        out.clear();
        if self.is_down() {
            self.check_down_link();
        }
        let Some(live) = &mut self.live else {
            self.try_reopen();
            return Ok(0);
        };
        let snaplen = self.cfg.snaplen;
        let stats = &mut self.stats;
        let room = out.capacity();
        live.ring.read(room, |ev| match ev {
            Event::Frame {
                data,
                wire_len,
                vlan,
            } => {
                let full = wire_len + if vlan.is_some() { 4 } else { 0 };
                if data.len() < wire_len || full > snaplen {
                    stats.drop_too_big += 1;
                    return;
                }
                let Some(slot) = out.slot() else {
                    stats.drop_error += 1;
                    return;
                };
                match vlan {
                    Some((tpid, tci)) if data.len() >= 12 => {
                        slot.extend_from_slice(&data[..12]);
                        slot.extend_from_slice(&tpid.to_be_bytes());
                        slot.extend_from_slice(&tci.to_be_bytes());
                        slot.extend_from_slice(&data[12..]);
                    }
                    _ => slot.extend_from_slice(data),
                }
                out.commit();
                stats.rx(full);
            }
            Event::Malformed => stats.drop_error += 1,
        });
        Ok(out.len())
    }

    fn send(&mut self, pkt: &[u8]) -> Result<()> {
        if pkt.len() > self.cfg.snaplen {
            self.stats.drop_too_big += 1;
            return Err(PortError::TooBig(
                self.ifname.clone(),
                pkt.len(),
                self.cfg.snaplen,
            ));
        }
        if self.live.is_none() {
            self.stats.drop_link_down += 1;
            return Err(PortError::LinkDown(self.ifname.clone()));
        }
        self.txq.extend_from_slice(pkt);
        self.tx_ends.push(self.txq.len());
        if self.tx_ends.len() >= sys::SENDMMSG_MAX {
            return self.flush_tx();
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.flush_tx()
    }

    fn stats(&self) -> Stats {
        if let Some(live) = &self.live
            && let Ok(k) =
                sys::getsockopt::<KernelStats>(&live.fd, libc::SOL_PACKET, libc::PACKET_STATISTICS)
        {
            self.ring_drops
                .set(self.ring_drops.get() + u64::from(k.drops));
        }
        Stats {
            drop_ring_full: self.ring_drops.get(),
            ..self.stats
        }
    }

    fn readiness(&self) -> Readiness {
        match &self.live {
            // A link that is down is looked at now and then (see `check_down_link`).
            Some(l) if !l.down => Readiness::Fd(sys::raw(&l.fd)),
            _ => Readiness::Idle,
        }
    }

    fn handle_error(&mut self) {
        let Some(live) = &mut self.live else { return };
        let err =
            sys::getsockopt::<libc::c_int>(&live.fd, libc::SOL_SOCKET, libc::SO_ERROR).unwrap_or(0);
        if sys::if_index(&self.ifname) != Some(live.ifindex) {
            self.vanished();
            return;
        }
        if err != 0 {
            tracing::warn!(port = %self.ifname, error = %io::Error::from_raw_os_error(err), "link event");
        }
        if err == libc::ENETDOWN {
            // The interface may be on its way out: `ip link del` takes it down first, and the
            // error can arrive while the name still resolves.
            live.down = true;
        }
    }
}
