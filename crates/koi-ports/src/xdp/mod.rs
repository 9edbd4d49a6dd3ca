//! AF_XDP ports (`xdp:IFNAME[@QUEUE]`): an `AF_XDP` socket bound to one receive queue of an
//! interface, fed by a tiny XDP program in the driver (native mode) where the driver has XDP
//! and in generic (SKB) mode elsewhere, so that it works on every interface, veth included
//! (`xdp-native:` insists on driver mode, `xdp-generic:` asks for generic mode). In driver
//! mode the socket is bound in zero-copy mode where the driver supports it, else in copy
//! mode; the mode chosen is logged. No BPF compiler is needed: the program (`prog`) is five
//! hand-assembled eBPF instructions that redirect each frame to the socket of its queue through
//! an XSKMAP, and pass it on to the kernel's stack when the queue has no socket.
//!
//! Receive: the kernel copies each frame into a UMEM frame taken from the fill ring and
//! produces a descriptor on the RX ring; [`crate::Port::recv_batch`] copies up to a batch of
//! frames into the [`Batch`] (as the `AF_PACKET` port does) and gives the frames straight back
//! through the fill ring, so no system call is made per packet or per batch. Frames are
//! consumed by the redirect: the kernel's own stack does not see them, as on a switch port.
//!
//! Transmit: [`crate::Port::send`] copies the frame into a free UMEM frame and writes a TX
//! descriptor; [`crate::Port::flush`] publishes the descriptors and kicks the kernel with an
//! empty `sendto` (in copy mode the kernel transmits only when kicked, at most 32 frames per
//! kick, so a flush kicks until the ring is drained), then takes the frames the kernel finished
//! with from the completion ring. A frame is counted in `tx_packets` when it is queued; a frame
//! the kernel then fails to transmit (the kick reports `EBUSY`: carrier down, or the device or
//! the veth peer's backlog refused it) is taken off `tx_packets` again and counted as a
//! `link_down` or `error` drop (its bytes stay in `tx_bytes`: the kernel does not say which
//! frame it was). No free TX frame (the kernel holds them all) drops the frame as `error`.
//!
//! Size: a UMEM frame holds `frame_size` bytes (2048 by default); in copy mode the kernel
//! keeps 256 bytes of headroom, so received frames up to `frame_size - 256` bytes fit. The
//! kernel drops larger ones itself; they are counted from the socket's `XDP_STATISTICS` as
//! `too_big`, as are frames to send beyond a frame, the port's snaplen or the interface's MTU
//! (plus Ethernet and VLAN headers). RX ring overflows and an empty fill ring count as
//! `ring_full`.
//!
//! Link events: an AF_XDP socket reports no error to `poll(2)`, so the port also listens to
//! the routing netlink link notifications of its namespace, and [`crate::Port::readiness`]
//! gives an epoll descriptor that is readable when either the socket or the netlink socket is.
//! A link that goes down is logged and sends count as `link_down` until it is up again; an
//! interface that disappears closes the port's socket (and, with the last port on it, the XDP
//! program), and the port retries opening it by name with exponential backoff (100 ms to 5 s),
//! in the network namespace of the thread that calls [`crate::Port::recv_batch`], like the
//! `AF_PACKET` port.
//!
//! Several ports may share an interface, one per queue (`xdp:eth0@0`, `xdp:eth0@1`): they
//! share one XDP program and XSKMAP, detached when the last of them closes. The interface must
//! have no other XDP program attached.

mod netlink;
mod prog;
mod sys;

use crate::retry::Retry;
use crate::{Batch, DEFAULT_SNAPLEN, PortError, Readiness, Result, Stats};
pub use prog::AttachMode;
use prog::Attachment;
pub use prog::XdpMode;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};
use sys::{Geometry, TxError, XdpStatistics, Xsk};

/// UMEM geometry and queue of an [`XdpPort`].
#[derive(Clone, Debug)]
pub struct XdpConfig {
    /// The receive (and transmit) queue the socket binds to.
    pub queue: u32,
    /// Bytes per UMEM frame: 2048 or 4096. Received frames up to `frame_size - 256` bytes fit.
    pub frame_size: u32,
    /// Frames in the UMEM (a power of two, at least 16): half for receiving, half for sending;
    /// each ring has half as many entries.
    pub frame_count: u32,
    /// Entries of the XSKMAP, when this port is the first on its interface (at least
    /// `queue + 1`).
    pub map_entries: u32,
    /// The largest frame accepted, in bytes (also bounded by the frame size).
    pub snaplen: usize,
    /// How the XDP program is attached, when this port is the first on its interface.
    pub attach: AttachMode,
    /// Which XDP hook, when this port is the first on its interface.
    pub mode: XdpMode,
}

impl XdpConfig {
    /// The largest frame the kernel can deliver into a UMEM frame in copy mode.
    pub fn max_rx_frame(&self) -> usize {
        (self.frame_size as usize).saturating_sub(XDP_PACKET_HEADROOM)
    }
}

impl Default for XdpConfig {
    fn default() -> XdpConfig {
        XdpConfig {
            queue: 0,
            frame_size: 2048,
            frame_count: 4096,
            map_entries: 64,
            snaplen: DEFAULT_SNAPLEN,
            attach: AttachMode::Auto,
            mode: XdpMode::Auto,
        }
    }
}

/// The kernel's headroom in front of a received frame in copy mode (`XDP_PACKET_HEADROOM`).
const XDP_PACKET_HEADROOM: usize = 256;
/// Ethernet header and one VLAN tag, on top of the MTU.
const L2_OVERHEAD: usize = 18;
/// Link notifications are read when a batch comes back empty, and at least every this many
/// batches.
const LINK_CHECK_EVERY: u32 = 64;
/// How long a busy queue is retried when binding.
const BIND_PATIENCE: Duration = Duration::from_secs(1);

/// An open socket with everything around it. Fields drop in order: the socket first (which
/// takes it out of the XSKMAP), the program last.
#[derive(Debug)]
struct Live {
    xsk: Xsk,
    epoll: OwnedFd,
    monitor: OwnedFd,
    attach: Arc<Attachment>,
    ifindex: u32,
    /// `IFF_UP`.
    up: bool,
    /// `IFF_RUNNING`: carrier.
    running: bool,
    mtu: u32,
    batches: u32,
}

/// An AF_XDP port on one queue of one interface.
#[derive(Debug)]
pub struct XdpPort {
    name: String,
    ifname: String,
    cfg: XdpConfig,
    live: Option<Live>,
    stats: Stats,
    /// The kernel's drop counters of sockets closed before (the interface vanished).
    closed: Stats,
    retry: Retry,
    nlbuf: Vec<u8>,
}

fn with_ctx(what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn open_live(ifname: &str, cfg: &XdpConfig) -> io::Result<Live> {
    let ifindex = crate::sys::if_index(ifname)
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such interface"))?;
    let fd = sys::xdp_socket().map_err(|e| match e.raw_os_error() {
        Some(libc::EAFNOSUPPORT | libc::EPROTONOSUPPORT | libc::ESOCKTNOSUPPORT) => {
            with_ctx("AF_XDP not supported by this kernel", e)
        }
        _ => with_ctx("cannot create an AF_XDP socket", e),
    })?;
    // The monitor exists before the flags are read, so no change in between goes unseen.
    let monitor = netlink::monitor().map_err(|e| with_ctx("netlink", e))?;
    let flags = sys::if_flags(&monitor, ifname).map_err(|e| with_ctx("SIOCGIFFLAGS", e))?;
    let mtu = sys::if_mtu(&monitor, ifname).map_err(|e| with_ctx("SIOCGIFMTU", e))?;
    let geo = Geometry {
        frame_size: cfg.frame_size,
        frame_count: cfg.frame_count,
    };
    let xsk = Xsk::new(fd, geo)?;
    let entries = cfg.map_entries.max(cfg.queue.saturating_add(1));
    let attach = prog::attach(ifindex, entries, cfg.attach, cfg.mode)?;
    let zero_copy = bind(&xsk, ifindex, cfg.queue, attach.is_native())?;
    tracing::info!(
        interface = ifname,
        queue = cfg.queue,
        xdp = if attach.is_native() {
            "driver"
        } else {
            "generic"
        },
        copy = if zero_copy { "zero-copy" } else { "copy" },
        "AF_XDP socket bound"
    );
    attach
        .insert(cfg.queue, xsk.fd())
        .map_err(|e| with_ctx("XSKMAP update", e))?;
    let epoll = sys::epoll_over(&[xsk.fd(), &monitor]).map_err(|e| with_ctx("epoll", e))?;
    Ok(Live {
        xsk,
        epoll,
        monitor,
        attach,
        ifindex,
        up: flags & libc::IFF_UP as u32 != 0,
        running: flags & libc::IFF_RUNNING as u32 != 0,
        mtu,
        batches: 0,
    })
}

/// Binds `xsk`. A queue that a socket closed moments ago is still busy until the kernel's
/// deferred clean-up of that socket has run, so `EBUSY` is retried for a little while.
fn bind(xsk: &Xsk, ifindex: u32, queue: u32, zero_copy: bool) -> io::Result<bool> {
    let deadline = Instant::now() + BIND_PATIENCE;
    loop {
        match xsk.bind(ifindex, queue, zero_copy) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                return Err(with_ctx(
                    &format!("queue {queue} is in use by another AF_XDP socket"),
                    e,
                ));
            }
            Err(e) => {
                return Err(with_ctx(
                    &format!("cannot bind to queue {queue} (does the interface have it?)"),
                    e,
                ));
            }
            Ok(zero) => return Ok(zero),
        }
    }
}

/// The kernel's per-socket drop counters as port drops.
fn kernel_drops(k: &XdpStatistics) -> Stats {
    Stats {
        drop_too_big: k.rx_dropped.saturating_sub(k.rx_fill_ring_empty_descs),
        drop_ring_full: k.rx_ring_full + k.rx_fill_ring_empty_descs,
        drop_error: k.rx_invalid_descs + k.tx_invalid_descs,
        ..Stats::default()
    }
}

fn add_drops(a: &mut Stats, b: &Stats) {
    a.drop_too_big += b.drop_too_big;
    a.drop_ring_full += b.drop_ring_full;
    a.drop_error += b.drop_error;
    a.drop_link_down += b.drop_link_down;
}

impl XdpPort {
    /// Opens a port on queue `cfg.queue` of interface `ifname`: attaches the XDP program (or
    /// shares the one another port of this process attached there), creates the socket and
    /// binds it. Fails if the interface does not exist, AF_XDP or XDP is unavailable, or
    /// another XDP program is attached to the interface.
    pub fn open(ifname: &str, cfg: XdpConfig) -> Result<XdpPort> {
        let name = if cfg.queue == 0 {
            format!("xdp:{ifname}")
        } else {
            format!("xdp:{ifname}@{}", cfg.queue)
        };
        let live = open_live(ifname, &cfg).map_err(|e| PortError::Io(name.clone(), e))?;
        Ok(XdpPort {
            name,
            ifname: ifname.to_string(),
            cfg,
            live: Some(live),
            stats: Stats::default(),
            closed: Stats::default(),
            retry: Retry::new(),
            nlbuf: vec![0; 16 * 1024],
        })
    }

    /// Whether the port has an open socket (false while an interface that vanished is retried).
    pub fn is_open(&self) -> bool {
        self.live.is_some()
    }

    /// Whether the XDP program is attached through a BPF link (else through netlink); `None`
    /// while the port is closed.
    pub fn uses_bpf_link(&self) -> Option<bool> {
        self.live.as_ref().map(|l| l.attach.is_link())
    }

    /// The largest frame [`crate::Port::send`] accepts now.
    fn tx_limit(&self) -> usize {
        let mut limit = self.cfg.snaplen.min(self.cfg.frame_size as usize);
        if let Some(l) = &self.live
            && l.mtu > 0
        {
            limit = limit.min(l.mtu as usize + L2_OVERHEAD);
        }
        limit
    }

    fn try_reopen(&mut self) {
        let (name, ifname, cfg) = (&self.name, &self.ifname, &self.cfg);
        if let Some(l) = self.retry.attempt(name, || open_live(ifname, cfg)) {
            self.live = Some(l);
        }
    }

    /// Closes the socket (keeping its kernel counters) and schedules the retries.
    fn close_live(&mut self) {
        if let Some(l) = self.live.take()
            && let Ok(k) = l.xsk.statistics()
        {
            add_drops(&mut self.closed, &kernel_drops(&k));
        }
        self.retry.lost();
    }

    /// Reads the pending link notifications; closes the port if its interface is gone.
    fn check_link(&mut self) {
        let Some(live) = &mut self.live else { return };
        let (mut vanished, mut resync) = (false, false);
        let was = (live.up, live.running);
        loop {
            match sys::recv_nonblocking(&live.monitor, &mut self.nlbuf) {
                Ok(0) => break,
                Ok(n) => {
                    for ev in netlink::link_events(&self.nlbuf[..n]) {
                        if ev.ifindex != live.ifindex {
                            continue;
                        }
                        if ev.deleted {
                            vanished = true;
                        } else {
                            live.up = ev.flags & libc::IFF_UP as u32 != 0;
                            live.running = ev.flags & libc::IFF_RUNNING as u32 != 0;
                            if let Some(m) = ev.mtu {
                                live.mtu = m;
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // ENOBUFS: notifications were lost; ask directly.
                    tracing::debug!(port = %self.name, error = %e, "link notifications lost");
                    resync = true;
                    break;
                }
            }
        }
        if resync && !vanished {
            if crate::sys::if_index(&self.ifname) != Some(live.ifindex) {
                vanished = true;
            } else if let Ok(f) = sys::if_flags(&live.monitor, &self.ifname) {
                live.up = f & libc::IFF_UP as u32 != 0;
                live.running = f & libc::IFF_RUNNING as u32 != 0;
                if let Ok(m) = sys::if_mtu(&live.monitor, &self.ifname) {
                    live.mtu = m;
                }
            }
        }
        if vanished {
            tracing::warn!(port = %self.name, "interface vanished; retrying with backoff");
            self.close_live();
            return;
        }
        let now = (live.up, live.running);
        if now != was {
            if now.0 && now.1 {
                tracing::info!(port = %self.name, "link is up");
            } else {
                tracing::warn!(port = %self.name, up = now.0, carrier = now.1, "link is down");
            }
        }
    }

    /// Publishes the queued frames and kicks the kernel until it has taken them all (or
    /// refuses), then reclaims the completed frames.
    fn push_out(&mut self) -> Result<()> {
        let Some(live) = &mut self.live else {
            return Ok(());
        };
        live.xsk.submit();
        let (mut busy, mut outcome, mut gone) = (0u64, Ok(()), false);
        let max_kicks = self.cfg.frame_count / 2 / 32 + 16;
        for _ in 0..max_kicks {
            if live.xsk.tx_outstanding() == 0 {
                break;
            }
            if let Err(e) = live.xsk.kick() {
                match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => {}
                    Some(libc::EBUSY) => busy += 1,
                    Some(libc::ENETDOWN) => {
                        live.up = false;
                        outcome = Err(PortError::LinkDown(self.name.clone()));
                        break;
                    }
                    Some(libc::ENXIO | libc::ENODEV) => {
                        gone = true;
                        outcome = Err(PortError::LinkDown(self.name.clone()));
                        break;
                    }
                    _ => {
                        outcome = Err(PortError::Io(self.name.clone(), e));
                        break;
                    }
                }
            }
            live.xsk.reclaim();
        }
        live.xsk.reclaim();
        if busy > 0 {
            self.stats.tx_packets = self.stats.tx_packets.saturating_sub(busy);
            if live.up && live.running {
                self.stats.drop_error += busy;
            } else {
                self.stats.drop_link_down += busy;
            }
        }
        if gone {
            self.check_link();
            if self.live.is_some() && crate::sys::if_index(&self.ifname).is_none() {
                tracing::warn!(port = %self.name, "interface vanished; retrying with backoff");
                self.close_live();
            }
        }
        outcome
    }
}

impl crate::Port for XdpPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv_batch(&mut self, out: &mut Batch) -> Result<usize> {
        out.clear();
        let Some(live) = &mut self.live else {
            self.try_reopen();
            return Ok(0);
        };
        let room = out.capacity();
        let snaplen = self.cfg.snaplen;
        let stats = &mut self.stats;
        let (n, invalid) = live.xsk.recv(room, |data| {
            if data.len() > snaplen {
                stats.drop_too_big += 1;
            } else if out.push(data) {
                stats.rx(data.len());
            } else {
                stats.drop_error += 1;
            }
        });
        stats.drop_error += invalid;
        live.xsk.wake_rx_if_needed();
        live.batches = live.batches.wrapping_add(1);
        if n == 0 || live.batches.is_multiple_of(LINK_CHECK_EVERY) {
            self.check_link();
        }
        Ok(out.len())
    }

    fn send(&mut self, pkt: &[u8]) -> Result<()> {
        let limit = self.tx_limit();
        if pkt.is_empty() {
            self.stats.drop_error += 1;
            return Err(PortError::Io(
                self.name.clone(),
                io::Error::new(io::ErrorKind::InvalidInput, "empty frame"),
            ));
        }
        if pkt.len() > limit {
            self.stats.drop_too_big += 1;
            return Err(PortError::TooBig(self.name.clone(), pkt.len(), limit));
        }
        let Some(live) = &mut self.live else {
            self.stats.drop_link_down += 1;
            return Err(PortError::LinkDown(self.name.clone()));
        };
        if !live.up {
            self.stats.drop_link_down += 1;
            return Err(PortError::LinkDown(self.name.clone()));
        }
        let mut r = live.xsk.send(pkt);
        if r == Err(TxError::Full) {
            let _ = self.push_out();
            r = match &mut self.live {
                Some(l) => l.xsk.send(pkt),
                None => Err(TxError::Full),
            };
        }
        match r {
            Ok(()) => {
                self.stats.tx(pkt.len());
                Ok(())
            }
            Err(TxError::TooBig) => {
                self.stats.drop_too_big += 1;
                Err(PortError::TooBig(self.name.clone(), pkt.len(), limit))
            }
            Err(TxError::Full) => {
                self.stats.drop_error += 1;
                Err(PortError::Io(
                    self.name.clone(),
                    io::Error::new(io::ErrorKind::WouldBlock, "TX ring full"),
                ))
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        self.push_out()
    }

    fn stats(&self) -> Stats {
        let mut s = self.stats;
        add_drops(&mut s, &self.closed);
        if let Some(l) = &self.live
            && let Ok(k) = l.xsk.statistics()
        {
            add_drops(&mut s, &kernel_drops(&k));
        }
        s
    }

    fn readiness(&self) -> Readiness {
        match &self.live {
            Some(l) => Readiness::Fd(crate::sys::raw(&l.epoll)),
            None => Readiness::Idle,
        }
    }

    fn handle_error(&mut self) {
        self.check_link();
    }
}

impl Drop for XdpPort {
    fn drop(&mut self) {
        // Frames sent but not flushed still go out.
        let _ = self.push_out();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_counters_map_to_drop_reasons() {
        let k = XdpStatistics {
            rx_dropped: 5,
            rx_invalid_descs: 1,
            tx_invalid_descs: 2,
            rx_ring_full: 3,
            rx_fill_ring_empty_descs: 4,
            tx_ring_empty_descs: 9,
        };
        let s = kernel_drops(&k);
        assert_eq!((s.drop_too_big, s.drop_ring_full, s.drop_error), (1, 7, 3));
    }

    #[test]
    fn a_missing_interface_is_a_clear_error() {
        let e = XdpPort::open("koi-no-such0", XdpConfig::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("xdp:koi-no-such0: "), "{e}");
    }
}
