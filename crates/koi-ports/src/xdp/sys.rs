//! The `unsafe` layer of the AF_XDP port: the `bpf(2)` commands koi needs (create an XSKMAP,
//! load a program, attach it through a BPF link, update the map), routing-netlink and epoll
//! sockets, interface `ioctl`s, and the AF_XDP socket itself ([`Xsk`]): its UMEM, its four
//! rings and the ownership of every UMEM frame.
//!
//! Theory of operation. A UMEM is one anonymous mapping cut into `frame_count` frames of
//! `frame_size` bytes. The kernel and koi share four single-producer single-consumer rings,
//! each a memory-mapped array of entries with a producer and a consumer index (free-running
//! `u32`s, masked by the power-of-two size): koi produces into the fill ring (empty frames for
//! the kernel to receive into) and the TX ring (frames to send); the kernel produces into the
//! RX ring (received frames) and the completion ring (sent frames, free again). As in libxdp's
//! `xsk.h`, a producer writes its entries, then publishes the producer index with a release
//! store; a consumer reads the producer index with an acquire load, reads the entries, then
//! publishes its consumer index with a release store; and a producer reads the consumer index
//! with an acquire load before it reuses a slot. The indices are `AtomicU32`s over the
//! mapping; the entries are only touched between those loads and stores.
//!
//! Frame ownership is what makes reading and writing UMEM sound, and this module alone tracks
//! it: the first half of the frames starts in the fill ring and the second half in the TX free
//! list. A frame koi takes from the RX ring is koi's until [`Xsk::recv`] puts it back into the
//! fill ring, which happens only after the borrow of its bytes ended; a frame from the TX free
//! list is koi's until [`Xsk::send`] has copied the packet into it and produced its TX
//! descriptor, and it comes back to the free list through the completion ring. The kernel never
//! writes a frame it does not hold, so no frame is written by both sides at once.

use std::io;
use std::marker::PhantomData;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Turns a negative return value into the thread's `errno`.
fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Takes ownership of a descriptor a system call just returned.
fn own(fd: libc::c_long) -> io::Result<OwnedFd> {
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: `fd` was just returned (checked non-negative) by a system call that creates a
    // descriptor; it is open and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

// ---------------------------------------------------------------------------------------------
// bpf(2)

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`'s `BPF_XDP`.
const BPF_XDP: u32 = 37;

/// One eBPF instruction (`struct bpf_insn`): opcode, destination register in the low nibble
/// and source register in the high nibble of `regs`, offset, immediate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    pub code: u8,
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

/// The `BPF_MAP_CREATE` part of `union bpf_attr` (the kernel zero-fills the rest).
#[derive(Default)]
#[repr(C)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

/// The `BPF_MAP_*_ELEM` part of `union bpf_attr`.
#[derive(Default)]
#[repr(C)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// The `BPF_PROG_LOAD` part of `union bpf_attr`, up to `expected_attach_type`.
#[derive(Default)]
#[repr(C)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// The `BPF_LINK_CREATE` part of `union bpf_attr` that XDP links use.
#[derive(Default)]
#[repr(C)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// `bpf(cmd, attr, sizeof attr)`.
fn bpf<A>(cmd: libc::c_long, attr: &mut A) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a valid, writable `#[repr(C)]` prefix of `union bpf_attr` of the size
    // passed, for the call's duration; every pointer stored inside it (instructions, license,
    // log buffer, key, value) points to memory that the caller keeps alive across the call.
    check(unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut A).cast::<libc::c_void>(),
            size_of::<A>() as libc::c_uint,
        )
    })
}

fn name16(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (o, b) in out.iter_mut().zip(name.bytes().take(15)) {
        *o = b;
    }
    out
}

fn fd_u32(fd: &OwnedFd) -> u32 {
    fd.as_raw_fd() as u32
}

/// Creates an XSKMAP (`u32` queue index to AF_XDP socket) of `max_entries` entries.
pub fn map_create_xskmap(max_entries: u32, name: &str) -> io::Result<OwnedFd> {
    let mut attr = MapCreateAttr {
        map_type: BPF_MAP_TYPE_XSKMAP,
        key_size: 4,
        value_size: 4,
        max_entries,
        map_name: name16(name),
        ..MapCreateAttr::default()
    };
    own(bpf(BPF_MAP_CREATE, &mut attr)?)
}

/// Stores `value` (a descriptor, for an XSKMAP) at `key` in `map`.
pub fn map_update(map: &OwnedFd, key: u32, value: u32) -> io::Result<()> {
    let mut attr = MapElemAttr {
        map_fd: fd_u32(map),
        key: (&key as *const u32) as u64,
        value: (&value as *const u32) as u64,
        ..MapElemAttr::default()
    };
    bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
}

/// Loads an XDP program. With `log`, the verifier writes its log there (level 1).
pub fn prog_load_xdp(insns: &[Insn], name: &str, log: Option<&mut [u8]>) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut attr = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: u32::try_from(insns.len())
            .map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        prog_name: name16(name),
        ..ProgLoadAttr::default()
    };
    if let Some(buf) = log {
        let len = buf.len().min(u32::MAX as usize);
        if len > 0 {
            buf[0] = 0;
            attr.log_level = 1;
            attr.log_size = len as u32;
            attr.log_buf = buf.as_mut_ptr() as u64;
        }
    }
    own(bpf(BPF_PROG_LOAD, &mut attr)?)
}

/// Attaches XDP program `prog` to interface `ifindex` with a BPF link (`XDP_FLAGS_*` in
/// `flags`); the program stays attached until the returned link is closed.
pub fn link_create_xdp(prog: &OwnedFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut attr = LinkCreateAttr {
        prog_fd: fd_u32(prog),
        target_ifindex: ifindex,
        attach_type: BPF_XDP,
        flags,
    };
    own(bpf(BPF_LINK_CREATE, &mut attr)?)
}

// ---------------------------------------------------------------------------------------------
// Netlink, epoll, interface ioctls

/// `struct sockaddr_nl`.
#[repr(C)]
struct SockaddrNl {
    family: libc::sa_family_t,
    pad: u16,
    pid: u32,
    groups: u32,
}

/// A non-blocking, close-on-exec `NETLINK_ROUTE` socket subscribed to the multicast `groups`
/// (a bit mask, `RTMGRP_*`).
pub fn netlink_route(groups: u32) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes no pointers; the result is checked.
    let fd = own(check(libc::c_long::from(unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0, // NETLINK_ROUTE
        )
    }))?)?;
    let sa = SockaddrNl {
        family: libc::AF_NETLINK as libc::sa_family_t,
        pad: 0,
        pid: 0,
        groups,
    };
    // SAFETY: `sa` is a valid sockaddr_nl and the length passed is its size.
    check(libc::c_long::from(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const SockaddrNl).cast(),
            size_of::<SockaddrNl>() as libc::socklen_t,
        )
    }))?;
    Ok(fd)
}

/// `recv(2)` without blocking into `buf`: the bytes received.
pub fn recv_nonblocking(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid writable buffer of `buf.len()` bytes for the call's duration.
    let n = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// An epoll instance (close-on-exec) watching `fds` for readability, level-triggered: `poll(2)`
/// on it reports it readable while any of them is.
pub fn epoll_over(fds: &[&OwnedFd]) -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1(2) takes no pointers; the result is checked.
    let ep = own(check(libc::c_long::from(unsafe {
        libc::epoll_create1(libc::EPOLL_CLOEXEC)
    }))?)?;
    for fd in fds {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd.as_raw_fd() as u64,
        };
        // SAFETY: `ev` is a valid epoll_event for the call's duration; both descriptors are
        // open (borrowed for the call).
        check(libc::c_long::from(unsafe {
            libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut ev)
        }))?;
    }
    Ok(ep)
}

/// `struct ifreq`: a name and a 24-byte union, of which koi reads one `int` or `short`.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: [u8; 24],
}

fn if_ioctl(sock: &OwnedFd, name: &str, req: libc::c_ulong) -> io::Result<[u8; 24]> {
    if name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut ifr = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: [0; 24],
    };
    ifr.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: `ifr` is a writable `struct ifreq` (40 bytes, the name NUL-terminated) for the
    // call's duration; SIOCGIFFLAGS and SIOCGIFMTU write only inside it.
    check(libc::c_long::from(unsafe {
        libc::ioctl(sock.as_raw_fd(), req, &mut ifr as *mut IfReq)
    }))?;
    Ok(ifr.data)
}

/// The interface flags (`IFF_*`) of `name`, asked through `sock` (any socket that takes
/// interface ioctls, in the interface's namespace: a netlink socket does).
pub fn if_flags(sock: &OwnedFd, name: &str) -> io::Result<u32> {
    let d = if_ioctl(sock, name, libc::SIOCGIFFLAGS)?;
    Ok(u32::from(u16::from_ne_bytes([d[0], d[1]])))
}

/// The MTU of `name`, asked through `sock` (see [`if_flags`]).
pub fn if_mtu(sock: &OwnedFd, name: &str) -> io::Result<u32> {
    let d = if_ioctl(sock, name, libc::SIOCGIFMTU)?;
    Ok(u32::from_ne_bytes([d[0], d[1], d[2], d[3]]))
}

// ---------------------------------------------------------------------------------------------
// Memory mappings

/// A memory mapping owned by this value, unmapped on drop.
#[derive(Debug)]
struct Region {
    ptr: NonNull<u8>,
    len: usize,
}

impl Region {
    fn map(
        len: usize,
        flags: libc::c_int,
        fd: libc::c_int,
        off: libc::off_t,
    ) -> io::Result<Region> {
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh mapping at an address the kernel picks: it aliases no Rust memory.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, off) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        Ok(Region { ptr, len })
    }

    /// Private anonymous memory (the UMEM), populated, not inherited by child processes.
    fn anonymous(len: usize) -> io::Result<Region> {
        let r = Region::map(
            len,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )?;
        // SAFETY: advice on a range this value owns; MADV_DONTFORK changes no contents. A
        // failure only means a child would share the pages copy-on-write, so it is ignored.
        unsafe {
            libc::madvise(r.ptr.as_ptr().cast(), r.len, libc::MADV_DONTFORK);
        }
        Ok(r)
    }

    /// A shared mapping of the ring of socket `fd` at page offset `off` (`XDP_PGOFF_*`).
    fn ring(fd: &OwnedFd, len: usize, off: u64) -> io::Result<Region> {
        let off =
            libc::off_t::try_from(off).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        Region::map(
            len,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd.as_raw_fd(),
            off,
        )
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping this value created and nobody else unmaps;
        // every pointer derived from it lives in the same owner and dies with it.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rings

/// `struct xdp_desc`: a frame's UMEM address and length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct XdpDesc {
    pub addr: u64,
    pub len: u32,
    pub options: u32,
}

/// `struct xdp_ring_offset`.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct RingOffset {
    producer: u64,
    consumer: u64,
    desc: u64,
    flags: u64,
}

/// `struct xdp_mmap_offsets`.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct MmapOffsets {
    rx: RingOffset,
    tx: RingOffset,
    fr: RingOffset,
    cr: RingOffset,
}

/// `struct xdp_umem_reg` (with `tx_metadata_len`, which older kernels see as padding).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct UmemReg {
    addr: u64,
    len: u64,
    chunk_size: u32,
    headroom: u32,
    flags: u32,
    tx_metadata_len: u32,
}

/// `struct xdp_statistics`: what the kernel dropped at this socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct XdpStatistics {
    /// Dropped for other reasons (in copy mode: larger than a frame, or no free frame).
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    /// Dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Times the kernel found the fill ring empty.
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// A mapped ring of `T` entries: the mapping and pointers to its indices and entry array.
struct RawRing<T> {
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    flags: NonNull<AtomicU32>,
    entries: NonNull<T>,
    size: u32,
    _map: Region,
    _t: PhantomData<T>,
}

impl<T: Copy> RawRing<T> {
    /// Maps the ring of `size` entries (a power of two) of socket `fd` at page offset `pgoff`.
    fn map(fd: &OwnedFd, off: RingOffset, size: u32, pgoff: u64) -> io::Result<RawRing<T>> {
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "bad ring offsets from the kernel",
            )
        };
        let word = |o: u64| -> io::Result<usize> {
            let o = usize::try_from(o).map_err(|_| bad())?;
            if o % 4 != 0 {
                return Err(bad());
            }
            Ok(o)
        };
        let (p, c, f) = (word(off.producer)?, word(off.consumer)?, word(off.flags)?);
        let d = usize::try_from(off.desc).map_err(|_| bad())?;
        if !size.is_power_of_two() || d % std::mem::align_of::<T>() != 0 {
            return Err(bad());
        }
        let entries_end = (size as usize)
            .checked_mul(size_of::<T>())
            .and_then(|n| n.checked_add(d))
            .ok_or_else(bad)?;
        let len = entries_end.max(p + 4).max(c + 4).max(f + 4);
        let map = Region::ring(fd, len, pgoff)?;
        let base = map.ptr.as_ptr();
        // SAFETY: every offset was checked above to lie, with its whole object, inside the
        // `len`-byte mapping; the mapping is page-aligned and the offsets are 4-aligned (the
        // entry array `T`-aligned), so the pointers are in bounds, aligned and non-null.
        let (producer, consumer, flags, entries) = unsafe {
            (
                NonNull::new_unchecked(base.add(p).cast::<AtomicU32>()),
                NonNull::new_unchecked(base.add(c).cast::<AtomicU32>()),
                NonNull::new_unchecked(base.add(f).cast::<AtomicU32>()),
                NonNull::new_unchecked(base.add(d).cast::<T>()),
            )
        };
        Ok(RawRing {
            producer,
            consumer,
            flags,
            entries,
            size,
            _map: map,
            _t: PhantomData,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into the mapping `self` owns (checked in `map`), valid and aligned for
        // as long as `self` lives; the kernel updates the word concurrently, hence the atomic.
        unsafe { self.producer.as_ref() }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as in `producer`.
        unsafe { self.consumer.as_ref() }
    }

    fn flags(&self) -> &AtomicU32 {
        // SAFETY: as in `producer`.
        unsafe { self.flags.as_ref() }
    }

    fn slot(&self, idx: u32) -> *mut T {
        // SAFETY: `idx & (size - 1)` is below `size`, and the mapping holds `size` entries
        // from `entries` (checked in `map`), so the result stays inside the mapping.
        unsafe { self.entries.as_ptr().add((idx & (self.size - 1)) as usize) }
    }
}

/// A ring koi produces into (fill, TX).
struct ProdRing<T> {
    raw: RawRing<T>,
    /// The next index koi writes (published by `submit`).
    head: u32,
    /// The kernel's consumer index plus the ring size, as last read.
    end: u32,
}

impl<T: Copy> ProdRing<T> {
    fn new(raw: RawRing<T>) -> ProdRing<T> {
        let head = raw.producer().load(Ordering::Relaxed);
        let end = raw
            .consumer()
            .load(Ordering::Acquire)
            .wrapping_add(raw.size);
        ProdRing { raw, head, end }
    }

    /// Free slots, re-reading the kernel's consumer index when none seem free.
    fn free(&mut self) -> u32 {
        let free = self.end.wrapping_sub(self.head);
        if free > 0 && free <= self.raw.size {
            return free;
        }
        self.end = self
            .raw
            .consumer()
            .load(Ordering::Acquire)
            .wrapping_add(self.raw.size);
        self.end.wrapping_sub(self.head).min(self.raw.size)
    }

    /// Writes `v` into the next free slot (not yet visible to the kernel); false when full.
    fn push(&mut self, v: T) -> bool {
        if self.free() == 0 {
            return false;
        }
        // SAFETY: the slot is in bounds (`slot`), and it is free: the acquire load of the
        // kernel's consumer index in `free` showed the kernel is done with it, and the kernel
        // does not read it before the release store of `submit` publishes it.
        unsafe { self.raw.slot(self.head).write(v) };
        self.head = self.head.wrapping_add(1);
        true
    }

    /// Publishes the entries pushed so far.
    fn submit(&self) {
        self.raw.producer().store(self.head, Ordering::Release);
    }

    /// Entries published or pushed that the kernel has not consumed yet.
    fn outstanding(&self) -> u32 {
        self.head
            .wrapping_sub(self.raw.consumer().load(Ordering::Acquire))
            .min(self.raw.size)
    }

    fn needs_wakeup(&self) -> bool {
        self.raw.flags().load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }
}

/// A ring the kernel produces into (RX, completion).
struct ConsRing<T> {
    raw: RawRing<T>,
    /// The next index koi reads (published by `release`).
    tail: u32,
    /// The kernel's producer index, as last read.
    prod: u32,
}

impl<T: Copy> ConsRing<T> {
    fn new(raw: RawRing<T>) -> ConsRing<T> {
        let tail = raw.consumer().load(Ordering::Relaxed);
        ConsRing {
            raw,
            tail,
            prod: tail,
        }
    }

    /// The next entry the kernel produced, if any.
    fn pop(&mut self) -> Option<T> {
        if self.tail == self.prod {
            let p = self.raw.producer().load(Ordering::Acquire);
            // A producer index more than a ring ahead would be a kernel bug; never read more
            // than one ring's worth.
            self.prod = if p.wrapping_sub(self.tail) > self.raw.size {
                self.tail.wrapping_add(self.raw.size)
            } else {
                p
            };
            if self.tail == self.prod {
                return None;
            }
        }
        // SAFETY: the slot is in bounds (`slot`), and the acquire load of the producer index
        // above (or an earlier one) showed the kernel wrote it; the kernel does not write it
        // again before the release store of `release` hands it back.
        let v = unsafe { self.raw.slot(self.tail).read() };
        self.tail = self.tail.wrapping_add(1);
        Some(v)
    }

    /// Hands the entries read so far back to the kernel.
    fn release(&self) {
        self.raw.consumer().store(self.tail, Ordering::Release);
    }
}

// ---------------------------------------------------------------------------------------------
// The AF_XDP socket

/// UMEM and ring sizes of an [`Xsk`].
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// Bytes per frame: a power of two from 2048 to the page size.
    pub frame_size: u32,
    /// Frames in the UMEM: a power of two, at least 16. Half receive, half transmit; each ring
    /// has half as many entries.
    pub frame_count: u32,
}

impl Geometry {
    fn check(&self) -> io::Result<()> {
        let page = 4096;
        let ok = self.frame_size.is_power_of_two()
            && (2048..=page).contains(&self.frame_size)
            && self.frame_count.is_power_of_two()
            && (16..=1 << 20).contains(&self.frame_count);
        if ok {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame size must be a power of two from 2048 to 4096 and the frame count a power of two from 16",
            ))
        }
    }
}

/// Why [`Xsk::send`] did not take a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxError {
    /// No free TX frame (the kernel still holds them all).
    Full,
    /// Larger than a frame.
    TooBig,
}

/// A bound AF_XDP socket with its UMEM and rings.
pub struct Xsk {
    // Declared first: closed before the rings and the UMEM are unmapped.
    fd: OwnedFd,
    rx: ConsRing<XdpDesc>,
    tx: ProdRing<XdpDesc>,
    fill: ProdRing<u64>,
    comp: ConsRing<u64>,
    umem: Region,
    frame_size: u64,
    /// TX frames koi owns.
    free_tx: Vec<u64>,
    /// Receive frames koi owns that the fill ring had no room for (never, in practice: the fill
    /// ring has a slot for every receive frame).
    refill: Vec<u64>,
}

// SAFETY: the raw pointers point into mappings this value owns exclusively; moving it to
// another thread moves that ownership (the kernel does not care which thread uses the rings).
unsafe impl Send for Xsk {}

impl std::fmt::Debug for Xsk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Xsk")
            .field("fd", &self.fd)
            .field("frame_size", &self.frame_size)
            .field("free_tx", &self.free_tx.len())
            .finish()
    }
}

/// A close-on-exec `AF_XDP` socket. Fails with `EAFNOSUPPORT` where the kernel has no AF_XDP.
pub fn xdp_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes no pointers; the result is checked.
    own(check(libc::c_long::from(unsafe {
        libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0)
    }))?)
}

fn ctx(what: &str) -> impl Fn(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Xsk {
    /// Registers a UMEM of `geo` on socket `fd`, creates and maps its four rings and fills the
    /// fill ring with the receive half of the frames. The socket is not bound yet.
    pub fn new(fd: OwnedFd, geo: Geometry) -> io::Result<Xsk> {
        geo.check()?;
        let frame_size = u64::from(geo.frame_size);
        let umem_len = frame_size * u64::from(geo.frame_count);
        let umem = Region::anonymous(umem_len as usize).map_err(ctx("UMEM allocation"))?;
        let reg = UmemReg {
            addr: umem.ptr.as_ptr() as u64,
            len: umem_len,
            chunk_size: geo.frame_size,
            ..UmemReg::default()
        };
        crate::sys::setsockopt(&fd, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)
            .map_err(ctx("XDP_UMEM_REG"))?;
        let half = geo.frame_count / 2;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            crate::sys::setsockopt(&fd, libc::SOL_XDP, opt, &half).map_err(ctx("ring setup"))?;
        }
        let off = mmap_offsets(&fd).map_err(ctx("XDP_MMAP_OFFSETS"))?;
        let map = ctx("ring mmap");
        let fill = ProdRing::new(
            RawRing::<u64>::map(&fd, off.fr, half, libc::XDP_UMEM_PGOFF_FILL_RING).map_err(&map)?,
        );
        let comp = ConsRing::new(
            RawRing::<u64>::map(&fd, off.cr, half, libc::XDP_UMEM_PGOFF_COMPLETION_RING)
                .map_err(&map)?,
        );
        let rx = ConsRing::new(
            RawRing::<XdpDesc>::map(&fd, off.rx, half, libc::XDP_PGOFF_RX_RING as u64)
                .map_err(&map)?,
        );
        let tx = ProdRing::new(
            RawRing::<XdpDesc>::map(&fd, off.tx, half, libc::XDP_PGOFF_TX_RING as u64)
                .map_err(&map)?,
        );
        let mut xsk = Xsk {
            fd,
            rx,
            tx,
            fill,
            comp,
            umem,
            frame_size,
            free_tx: (half..geo.frame_count)
                .rev()
                .map(|i| u64::from(i) * frame_size)
                .collect(),
            refill: Vec::new(),
        };
        for i in 0..half {
            let addr = u64::from(i) * frame_size;
            if !xsk.fill.push(addr) {
                xsk.refill.push(addr);
            }
        }
        xsk.fill.submit();
        Ok(xsk)
    }

    /// Binds the socket to queue `queue` of interface `ifindex`: in zero-copy mode
    /// (`XDP_ZEROCOPY`) first when `zero_copy` and the driver takes it, else in copy mode
    /// (`XDP_COPY`); with `XDP_USE_NEED_WAKEUP` if the kernel takes it. Returns whether the
    /// socket is in zero-copy mode.
    pub fn bind(&self, ifindex: u32, queue: u32, zero_copy: bool) -> io::Result<bool> {
        let mut last = io::Error::from_raw_os_error(libc::EINVAL);
        let zc = [
            libc::XDP_ZEROCOPY | libc::XDP_USE_NEED_WAKEUP,
            libc::XDP_ZEROCOPY,
        ];
        let copy = [libc::XDP_COPY | libc::XDP_USE_NEED_WAKEUP, libc::XDP_COPY];
        let tries = zc.iter().filter(|_| zero_copy).chain(copy.iter());
        for &flags in tries {
            let sa = libc::sockaddr_xdp {
                sxdp_family: libc::AF_XDP as u16,
                sxdp_flags: flags,
                sxdp_ifindex: ifindex,
                sxdp_queue_id: queue,
                sxdp_shared_umem_fd: 0,
            };
            // SAFETY: `sa` is a valid sockaddr_xdp and the length passed is its size.
            let r = check(libc::c_long::from(unsafe {
                libc::bind(
                    self.fd.as_raw_fd(),
                    (&sa as *const libc::sockaddr_xdp).cast(),
                    size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
                )
            }));
            let zero = flags & libc::XDP_ZEROCOPY != 0;
            match r {
                Ok(_) => return Ok(zero),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
                // A driver without zero-copy says so in several ways.
                Err(e)
                    if zero
                        && matches!(
                            e.raw_os_error(),
                            Some(libc::EOPNOTSUPP | libc::EPROTONOSUPPORT)
                        ) =>
                {
                    last = e
                }
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// The socket, for `poll(2)` and the XSKMAP.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Hands up to `max` received frames to `f`, in order, then gives their frames back to the
    /// kernel. Returns how many descriptors were consumed and how many of them were invalid
    /// (pointing outside the UMEM or across a frame; not handed to `f`).
    pub fn recv(&mut self, max: usize, mut f: impl FnMut(&[u8])) -> (usize, u64) {
        let (mut n, mut invalid) = (0, 0);
        while n < max {
            let Some(d) = self.rx.pop() else { break };
            n += 1;
            let base = d.addr & !(self.frame_size - 1);
            let off = d.addr - base;
            let in_umem = base
                .checked_add(self.frame_size)
                .is_some_and(|e| e <= self.umem.len as u64);
            if in_umem && off + u64::from(d.len) <= self.frame_size {
                // SAFETY: the frame is in bounds of the UMEM mapping (checked above) and koi
                // owns it: the kernel produced it on the RX ring and gets it back only through
                // the fill ring, below, after this borrow (confined to `f`'s call) has ended.
                let data = unsafe {
                    std::slice::from_raw_parts(
                        self.umem.ptr.as_ptr().add(d.addr as usize),
                        d.len as usize,
                    )
                };
                f(data);
            } else {
                invalid += 1;
            }
            if in_umem && !self.fill.push(base) {
                self.refill.push(base);
            }
        }
        if n > 0 {
            self.rx.release();
        }
        while let Some(&a) = self.refill.last() {
            if !self.fill.push(a) {
                break;
            }
            self.refill.pop();
        }
        self.fill.submit();
        (n, invalid)
    }

    /// Copies `pkt` into a free TX frame and writes its descriptor into the TX ring (published
    /// by [`Xsk::submit`]).
    pub fn send(&mut self, pkt: &[u8]) -> Result<(), TxError> {
        if pkt.is_empty() || pkt.len() as u64 > self.frame_size {
            return Err(TxError::TooBig);
        }
        if self.free_tx.is_empty() {
            self.reclaim();
        }
        let Some(addr) = self.free_tx.pop() else {
            return Err(TxError::Full);
        };
        // SAFETY: `addr` came from the free list, so it is a frame start inside the UMEM
        // (frames are `frame_size` apart and the UMEM holds all of them) that koi owns: the
        // kernel gave it back through the completion ring or never had it. `pkt` is at most a
        // frame long and is Rust memory, which cannot overlap the UMEM mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(
                pkt.as_ptr(),
                self.umem.ptr.as_ptr().add(addr as usize),
                pkt.len(),
            );
        }
        let desc = XdpDesc {
            addr,
            len: pkt.len() as u32,
            options: 0,
        };
        if self.tx.push(desc) {
            Ok(())
        } else {
            // Cannot happen (the TX ring has a slot for every TX frame); keep the frame.
            self.free_tx.push(addr);
            Err(TxError::Full)
        }
    }

    /// Publishes the TX descriptors written so far.
    pub fn submit(&self) {
        self.tx.submit();
    }

    /// TX descriptors the kernel has not taken yet.
    pub fn tx_outstanding(&self) -> u32 {
        self.tx.outstanding()
    }

    /// Moves the frames the kernel finished sending back to the free list; returns how many.
    pub fn reclaim(&mut self) -> u32 {
        let mut n = 0;
        let max = self.umem.len as u64;
        while let Some(addr) = self.comp.pop() {
            let base = addr & !(self.frame_size - 1);
            if base < max {
                self.free_tx.push(base);
            }
            n += 1;
        }
        if n > 0 {
            self.comp.release();
        }
        n
    }

    /// Asks the kernel to transmit what the TX ring holds (`sendto` with no data).
    pub fn kick(&self) -> io::Result<()> {
        // SAFETY: a zero-length send with null buffer and address is what AF_XDP documents
        // for waking its transmit path; the kernel reads nothing through the null pointers.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        check(r as libc::c_long).map(drop)
    }

    /// Wakes the receive path if the kernel asks for it (`XDP_RING_NEED_WAKEUP` on the fill
    /// ring; only drivers in zero-copy mode set it).
    pub fn wake_rx_if_needed(&self) {
        if self.fill.needs_wakeup() {
            // SAFETY: a zero-length receive with null buffer and address: the kernel writes
            // nothing through the null pointers.
            unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    std::ptr::null_mut(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                );
            }
        }
    }

    /// The kernel's drop counters for this socket (since it was created).
    pub fn statistics(&self) -> io::Result<XdpStatistics> {
        crate::sys::getsockopt(&self.fd, libc::SOL_XDP, libc::XDP_STATISTICS)
    }
}

/// `getsockopt(XDP_MMAP_OFFSETS)`, completing the `flags` offsets of kernels that predate
/// them (as libxdp does: the word after the consumer index).
fn mmap_offsets(fd: &OwnedFd) -> io::Result<MmapOffsets> {
    let mut off = MmapOffsets::default();
    let mut len = size_of::<MmapOffsets>() as libc::socklen_t;
    // SAFETY: `off` is a writable, integer-only struct of `len` bytes for the call's duration.
    check(libc::c_long::from(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_MMAP_OFFSETS,
            (&mut off as *mut MmapOffsets).cast(),
            &mut len,
        )
    }))?;
    if (len as usize) < size_of::<MmapOffsets>() {
        // The v1 layout: three offsets per ring, back to back.
        let v1: [u64; 12] = [
            off.rx.producer,
            off.rx.consumer,
            off.rx.desc,
            off.rx.flags,
            off.tx.producer,
            off.tx.consumer,
            off.tx.desc,
            off.tx.flags,
            off.fr.producer,
            off.fr.consumer,
            off.fr.desc,
            off.fr.flags,
        ];
        let ring = |i: usize| RingOffset {
            producer: v1[i * 3],
            consumer: v1[i * 3 + 1],
            desc: v1[i * 3 + 2],
            flags: v1[i * 3 + 1] + 4,
        };
        off = MmapOffsets {
            rx: ring(0),
            tx: ring(1),
            fr: ring(2),
            cr: ring(3),
        };
    }
    Ok(off)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_sizes_match_the_kernel_headers() {
        assert_eq!(size_of::<Insn>(), 8);
        assert_eq!(size_of::<XdpDesc>(), 16);
        assert_eq!(size_of::<MmapOffsets>(), 128);
        assert_eq!(size_of::<UmemReg>(), 32);
        assert_eq!(size_of::<XdpStatistics>(), 48);
        assert_eq!(size_of::<ProgLoadAttr>(), 72);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, prog_name), 48);
        assert_eq!(std::mem::offset_of!(MapElemAttr, value), 16);
        assert_eq!(size_of::<LinkCreateAttr>(), 16);
        assert_eq!(size_of::<IfReq>(), 40);
        assert_eq!(size_of::<SockaddrNl>(), 12);
    }

    #[test]
    fn geometry_is_checked() {
        let g = |frame_size, frame_count| Geometry {
            frame_size,
            frame_count,
        };
        assert!(g(2048, 4096).check().is_ok());
        assert!(g(4096, 16).check().is_ok());
        assert!(g(1024, 4096).check().is_err());
        assert!(g(3000, 4096).check().is_err());
        assert!(g(2048, 1000).check().is_err());
        assert!(g(2048, 8).check().is_err());
    }
}
