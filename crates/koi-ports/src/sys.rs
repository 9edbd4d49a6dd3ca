//! Thin safe wrappers over the Linux system calls that packet I/O needs: packet sockets, socket
//! options, the memory mapping of a ring, `poll(2)` and `setns(2)`. This module holds most of
//! the crate's `unsafe`; each block says why it is sound.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Turns a `-1` return value into the thread's `errno`.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `ETH_P_ALL` in network byte order, as `socket(2)` and `sockaddr_ll` want it.
pub fn eth_p_all_be() -> u16 {
    (libc::ETH_P_ALL as u16).to_be()
}

/// A raw `AF_PACKET` socket receiving every protocol, close-on-exec.
pub fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes no pointers; the result is checked before use.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::c_int::from(eth_p_all_be()),
        )
    })?;
    // SAFETY: `fd` was just returned by socket(2), is open, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt(2)` with a plain-data value.
pub fn setsockopt<T: Copy>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` is a valid reference to `size_of::<T>()` readable bytes for the call's
    // duration; the kernel only reads them.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// `getsockopt(2)` of a plain-data value that any bit pattern is valid for (integers, C structs
/// of integers).
pub fn getsockopt<T: Copy + Default>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<T> {
    let mut value = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a valid, writable `T` of `len` bytes; callers only use integer-only
    // types, for which any bytes the kernel writes are a valid value.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut value as *mut T).cast(),
            &mut len,
        )
    })?;
    Ok(value)
}

/// The interface index of `name`, or `None` if there is no such interface.
pub fn if_index(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: `c` is a valid NUL-terminated string for the call's duration.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

/// Whether interface `name` is administratively up (`IFF_UP`), asked through `fd` (any socket
/// of the network namespace to look in). `None` if there is no such interface.
pub fn if_up(fd: &OwnedFd, name: &str) -> Option<bool> {
    let bytes = name.as_bytes();
    if bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return None;
    }
    // SAFETY: ifreq is plain integers and arrays, for which all-zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, &b) in req.ifr_name.iter_mut().zip(bytes) {
        *d = b as libc::c_char;
    }
    // SAFETY: `req` is a valid ifreq with a NUL-terminated name (zeroed beyond it); the kernel
    // writes only the flags of its union.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } < 0 {
        return None;
    }
    // SAFETY: SIOCGIFFLAGS succeeded, so the union holds the flags.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    Some(flags & libc::IFF_UP as libc::c_short != 0)
}

/// Binds a packet socket to interface `ifindex` for all protocols.
pub fn bind_ll(fd: &OwnedFd, ifindex: u32) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain integers, for which all-zero bytes are a valid value.
    let mut sa: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sa.sll_family = libc::AF_PACKET as u16;
    sa.sll_protocol = eth_p_all_be();
    sa.sll_ifindex = ifindex as libc::c_int;
    // SAFETY: `sa` is a valid sockaddr_ll and the length passed is its size.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// `send(2)` without blocking: returns the bytes sent.
pub fn send_nonblocking(fd: &OwnedFd, pkt: &[u8]) -> io::Result<usize> {
    // SAFETY: `pkt` is a valid readable buffer of `pkt.len()` bytes for the call's duration.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            pkt.as_ptr().cast(),
            pkt.len(),
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// The most frames one [`sendmmsg_nonblocking`] call takes.
pub const SENDMMSG_MAX: usize = 64;

/// `sendmmsg(2)` without blocking: sends the frames `frames` (at most [`SENDMMSG_MAX`]; more
/// are ignored) in one system call; returns how many were sent from the first. An error is
/// that of the first frame not sent (none of them was sent).
pub fn sendmmsg_nonblocking(fd: &OwnedFd, frames: &[&[u8]]) -> io::Result<usize> {
    let n = frames.len().min(SENDMMSG_MAX);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: iovec and mmsghdr are plain C structs for which all-zero is a valid value.
    let mut iov: [libc::iovec; SENDMMSG_MAX] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; SENDMMSG_MAX] = unsafe { std::mem::zeroed() };
    for (i, f) in frames.iter().take(n).enumerate() {
        iov[i].iov_base = f.as_ptr() as *mut libc::c_void;
        iov[i].iov_len = f.len();
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `msgs[..n]` are initialised message headers whose single iovec points into a
    // frame of `frames`, readable for the call's duration; the kernel only reads the frames
    // and writes each header's `msg_len`; `n` fits in a u32.
    let r = unsafe {
        libc::sendmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// Waits up to `timeout_ms` (`-1`: forever) for events on `fds`; returns how many have some.
/// An interrupted wait (a signal) returns `Ok(0)`.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: `fds` is a valid, writable slice of pollfd for the call's duration and the count
    // passed is its length.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    match check(r) {
        Ok(n) => Ok(n as usize),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// Moves the calling thread into the network namespace `fd` refers to.
pub fn setns_net(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: setns(2) takes no pointers; `fd` is an open descriptor. Changing the calling
    // thread's network namespace affects only sockets this thread creates afterwards.
    check(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
}

/// A shared read-write memory mapping of a socket's ring, unmapped on drop.
#[derive(Debug)]
pub struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value alone; moving it to another thread
// moves that ownership (the kernel side does not care which thread reads the ring).
unsafe impl Send for Mmap {}

impl Mmap {
    /// Maps `len` bytes of `fd` (a ring set up with `PACKET_RX_RING`), shared, locked in memory
    /// if the limits allow.
    pub fn ring(fd: &OwnedFd, len: usize) -> io::Result<Mmap> {
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        let mut last = io::Error::from_raw_os_error(libc::EINVAL);
        for flags in [libc::MAP_SHARED | libc::MAP_LOCKED, libc::MAP_SHARED] {
            // SAFETY: a fresh mapping at an address the kernel picks: it aliases no Rust memory.
            let p =
                unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd.as_raw_fd(), 0) };
            if p == libc::MAP_FAILED {
                last = io::Error::last_os_error();
                continue;
            }
            if let Some(ptr) = NonNull::new(p.cast::<u8>()) {
                return Ok(Mmap { ptr, len });
            }
        }
        Err(last)
    }

    /// The 32-bit word at `off` (4-aligned, in bounds) as an atomic shared with the kernel.
    fn word(&self, off: usize) -> Option<&AtomicU32> {
        if !off.is_multiple_of(4) || off.checked_add(4)? > self.len {
            return None;
        }
        // SAFETY: `off` is in bounds and 4-aligned (the mapping is page-aligned), so the pointer
        // is valid and aligned for a u32 for the mapping's lifetime, which `&self` bounds. The
        // kernel accesses this status word concurrently, hence the atomic type.
        Some(unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(off).cast()) })
    }

    /// Reads the word at `off` with acquire ordering (0 if out of bounds).
    pub fn load_acquire(&self, off: usize) -> u32 {
        self.word(off).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Writes the word at `off` with release ordering (ignored if out of bounds).
    pub fn store_release(&self, off: usize, v: u32) {
        if let Some(w) = self.word(off) {
            w.store(v, Ordering::Release);
        }
    }

    /// The bytes `off..off + len` (`None` if out of bounds).
    ///
    /// # Safety
    /// The kernel must not write the region while the returned borrow lives: call this only for
    /// a ring block the kernel handed to user space (its status says `TP_STATUS_USER`, read with
    /// [`Mmap::load_acquire`]) and drop the borrow before giving the block back.
    pub unsafe fn region(&self, off: usize, len: usize) -> Option<&[u8]> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: the range is in bounds of the live mapping, the borrow is bounded by `&self`,
        // and the caller guarantees the kernel does not write it meanwhile.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) })
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping this value created and nobody else unmaps;
        // borrows of it cannot outlive `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// The raw descriptor, for `poll`.
pub fn raw(fd: &OwnedFd) -> RawFd {
    fd.as_raw_fd()
}

/// Asks the CPU to bring the cache line holding `addr` into its caches (the datapath's
/// batches prefetch the microflow sets of their keys). Never faults: a prefetch of any
/// address, valid or not, is a hint without architectural effect.
#[inline]
pub fn prefetch(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `prefetcht0` does not access memory architecturally: it cannot fault or
        // read or write anything the program can observe, for any address (the intrinsic is
        // `unsafe` only because it is an architecture intrinsic).
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(addr.cast())
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = addr;
    }
}

/// The CPU's time-stamp counter (cycles at the nominal frequency on constant-TSC machines);
/// poll loops and benchmarks time batches with it. 0 where there is none.
#[inline]
pub fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` reads a register; it has no memory effects and no preconditions
        // (the intrinsic is `unsafe` only because it is an architecture intrinsic).
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// A non-blocking, close-on-exec `eventfd(2)` counter at 0.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd(2) takes no pointers; the result is checked before use.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: `fd` was just returned by eventfd(2), is open, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds 1 to an eventfd's counter (it becomes readable). A full counter (`EAGAIN`) is
/// readable already, so the error is of no consequence.
pub fn eventfd_signal(fd: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live, aligned `u64` to an fd the caller owns.
    let _ = unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
}

/// Resets an eventfd's counter to 0 (no longer readable); nothing to read is no error.
pub fn eventfd_drain(fd: &OwnedFd) {
    let mut v: u64 = 0;
    // SAFETY: reads at most 8 bytes into a live, aligned `u64` from an fd the caller owns.
    let _ = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
}
