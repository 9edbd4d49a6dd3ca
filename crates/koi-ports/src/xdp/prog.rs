//! The XDP side of an AF_XDP port: an XSKMAP (receive queue index to AF_XDP socket) and a
//! five-instruction XDP program, written as raw eBPF instructions (no compiler needed), that
//! redirects every frame to the socket of its receive queue and passes it to the kernel's
//! stack when that queue has none:
//!
//! ```text
//! r2 = *(u32 *)(r1 + 16)      ; xdp_md.rx_queue_index
//! r1 = map_fd XSKMAP          ; ld_imm64 with BPF_PSEUDO_MAP_FD (two slots)
//! r3 = XDP_PASS               ; bpf_redirect_map's action when the slot is empty
//! call bpf_redirect_map
//! exit
//! ```
//!
//! The program is attached in driver (native) mode where the interface's driver has XDP
//! (veth does, and most NICs), else in generic (SKB) mode, which works on any interface
//! ([`XdpMode`]): through a BPF link (`BPF_LINK_CREATE`, Linux 5.9+), which the kernel detaches when
//! the link's descriptor is closed, or else through routing netlink (`RTM_SETLINK` with
//! `IFLA_XDP`, only if no program is attached yet), detached explicitly on drop through the
//! netlink socket kept for it (so the detach reaches the right network namespace whichever
//! thread drops the port).
//!
//! The ports on one interface (one per queue) share one [`Attachment`]: a process-wide
//! registry, keyed by network namespace and interface index, hands out the live one; the last
//! port to close detaches it.

use super::netlink;
use super::sys::{self, Insn};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex, Weak};

/// `XDP_FLAGS_UPDATE_IF_NOEXIST`: fail rather than replace another program.
const XDP_FLAGS_UPDATE_IF_NOEXIST: u32 = 1 << 0;
/// `XDP_FLAGS_SKB_MODE`: generic XDP.
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// `XDP_FLAGS_DRV_MODE`: the driver's own (native) XDP.
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Which XDP hook the program goes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XdpMode {
    /// Driver mode if the driver has it, else generic mode (with a log line saying so).
    #[default]
    Auto,
    /// Driver mode, or fail.
    Native,
    /// Generic (SKB) mode: any interface, one copy more.
    Generic,
}
/// `XDP_PASS`.
const XDP_PASS: i32 = 2;
/// `BPF_FUNC_redirect_map`.
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
/// `offsetof(struct xdp_md, rx_queue_index)`.
const XDP_MD_RX_QUEUE_INDEX: i16 = 16;
/// `BPF_PSEUDO_MAP_FD`: an `ld_imm64` whose immediate is a map descriptor.
const BPF_PSEUDO_MAP_FD: u8 = 1;

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | (dst & 0x0f),
        off,
        imm,
    }
}

/// The redirect program for XSKMAP `map_fd`.
pub fn redirect_program(map_fd: i32) -> [Insn; 6] {
    const LDX_MEM_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
    const LD_IMM_DW: u8 = 0x18; // BPF_LD | BPF_IMM | BPF_DW
    const MOV64_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
    const CALL: u8 = 0x85; // BPF_JMP | BPF_CALL
    const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT
    [
        insn(LDX_MEM_W, 2, 1, XDP_MD_RX_QUEUE_INDEX, 0),
        insn(LD_IMM_DW, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        insn(MOV64_K, 3, 0, 0, XDP_PASS),
        insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        insn(EXIT, 0, 0, 0, 0),
    ]
}

/// How to attach the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AttachMode {
    /// A BPF link if the kernel has them (5.9+), else routing netlink.
    #[default]
    Auto,
    /// Routing netlink only (the way of older kernels; also to test that path).
    Netlink,
}

/// How the program is attached.
#[derive(Debug)]
enum How {
    /// A BPF link: closing it detaches the program.
    Link { _link: OwnedFd },
    /// Routing netlink: detached explicitly through this socket.
    Netlink(OwnedFd),
}

/// An XSKMAP and the redirect program attached to one interface. Dropping the last handle
/// detaches the program.
#[derive(Debug)]
pub struct Attachment {
    how: How,
    /// The `XDP_FLAGS_*_MODE` it was attached with.
    flags: u32,
    map: OwnedFd,
    /// Kept open for the life of the attachment (the map is referenced by the program).
    _prog: OwnedFd,
    ifindex: u32,
    entries: u32,
}

impl Attachment {
    /// Puts AF_XDP socket `xsk` into the map slot of receive queue `queue`.
    pub fn insert(&self, queue: u32, xsk: &OwnedFd) -> io::Result<()> {
        if queue >= self.entries {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "queue {queue} is beyond the XSKMAP's {} entries",
                    self.entries
                ),
            ));
        }
        sys::map_update(&self.map, queue, xsk.as_raw_fd() as u32)
    }

    /// Whether the program was attached through a BPF link (else through netlink).
    pub fn is_link(&self) -> bool {
        matches!(self.how, How::Link { .. })
    }

    /// Whether it runs in the driver (native mode), else generic mode.
    pub fn is_native(&self) -> bool {
        self.flags == XDP_FLAGS_DRV_MODE
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        if let How::Netlink(sock) = &self.how
            && let Err(e) = netlink::set_xdp(sock, self.ifindex, -1, self.flags)
        {
            if e.raw_os_error() == Some(libc::ENODEV) {
                // The interface is gone, and its program with it.
                tracing::debug!(
                    ifindex = self.ifindex,
                    "interface gone before the XDP detach"
                );
            } else {
                tracing::warn!(ifindex = self.ifindex, error = %e, "detaching the XDP program failed");
            }
        }
        // A link detaches when its descriptor closes, right after this.
    }
}

/// The attachments alive in this process: (network namespace, interface index) to handle.
static REGISTRY: Mutex<Vec<(u64, u32, Weak<Attachment>)>> = Mutex::new(Vec::new());

/// The calling thread's network namespace (the inode of `/proc/thread-self/ns/net`; 0 if
/// unknown, which only merges the registry keys of namespaces koi cannot tell apart).
fn netns_id() -> u64 {
    std::fs::metadata("/proc/thread-self/ns/net").map_or(0, |m| m.ino())
}

/// The attachment on interface `ifindex` of the calling thread's namespace: the live one if a
/// port of this process already made it (in whichever mode), else a new one, attached as
/// `how` and `mode` say, with an XSKMAP of at least `min_entries` entries.
pub fn attach(
    ifindex: u32,
    min_entries: u32,
    how: AttachMode,
    mode: XdpMode,
) -> io::Result<Arc<Attachment>> {
    let ns = netns_id();
    let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    reg.retain(|(_, _, w)| w.strong_count() > 0);
    if let Some(a) = reg
        .iter()
        .find(|(n, i, _)| *n == ns && *i == ifindex)
        .and_then(|(_, _, w)| w.upgrade())
    {
        return Ok(a);
    }
    let a = Arc::new(attach_new(ifindex, min_entries, how, mode)?);
    reg.push((ns, ifindex, Arc::downgrade(&a)));
    Ok(a)
}

const OCCUPIED: &str = "another XDP program is attached to the interface";

/// Whether attaching failed because the interface has a program already. (Kinds, not codes:
/// an error that carries the kernel's extended message has no code.)
fn busy(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ResourceBusy | io::ErrorKind::AlreadyExists
    )
}

fn attach_new(
    ifindex: u32,
    entries: u32,
    how: AttachMode,
    mode: XdpMode,
) -> io::Result<Attachment> {
    let err = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    let map = sys::map_create_xskmap(entries, "koi_xsks")
        .map_err(|e| err("cannot create the XSKMAP", e))?;
    let prog = load(&map)?;
    let attach = |flags| attach_prog(&prog, ifindex, how, flags);
    let (how, flags) = match mode {
        XdpMode::Generic => (attach(XDP_FLAGS_SKB_MODE)?, XDP_FLAGS_SKB_MODE),
        XdpMode::Native => (
            attach(XDP_FLAGS_DRV_MODE)
                .map_err(|e| err("cannot attach the XDP program in driver mode", e))?,
            XDP_FLAGS_DRV_MODE,
        ),
        XdpMode::Auto => match attach(XDP_FLAGS_DRV_MODE) {
            Ok(h) => (h, XDP_FLAGS_DRV_MODE),
            Err(e) if busy(&e) => return Err(e),
            Err(native) => {
                let h = attach(XDP_FLAGS_SKB_MODE)?;
                tracing::info!(
                    ifindex,
                    reason = %native,
                    "XDP in driver mode not available on this interface: generic mode"
                );
                (h, XDP_FLAGS_SKB_MODE)
            }
        },
    };
    Ok(Attachment {
        how,
        flags,
        map,
        _prog: prog,
        ifindex,
        entries,
    })
}

/// Attaches `prog` to `ifindex` in the `XDP_FLAGS_*_MODE` `flags` as `how` says.
fn attach_prog(prog: &OwnedFd, ifindex: u32, how: AttachMode, flags: u32) -> io::Result<How> {
    let err = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    let link = match how {
        AttachMode::Auto => sys::link_create_xdp(prog, ifindex, flags),
        AttachMode::Netlink => Err(io::Error::other("not tried (netlink attach requested)")),
    };
    let how = match link {
        Ok(link) => How::Link { _link: link },
        Err(e) if busy(&e) => return Err(err(OCCUPIED, e)),
        Err(link_err) => {
            let sock = netlink::socket().map_err(|e| err("netlink", e))?;
            let flags = flags | XDP_FLAGS_UPDATE_IF_NOEXIST;
            netlink::set_xdp(&sock, ifindex, prog.as_raw_fd(), flags).map_err(|e| {
                if busy(&e) {
                    err(OCCUPIED, e)
                } else {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "cannot attach the XDP program (BPF link: {link_err}; netlink: {e})"
                        ),
                    )
                }
            })?;
            tracing::debug!(ifindex, error = %link_err, "BPF link failed; XDP program attached through netlink");
            How::Netlink(sock)
        }
    };
    Ok(how)
}

/// Loads the redirect program; on failure, loads it again with the verifier's log requested
/// and puts the log's last lines in the error.
fn load(map: &OwnedFd) -> io::Result<OwnedFd> {
    const NAME: &str = "koi_xsk_redir";
    let insns = redirect_program(map.as_raw_fd());
    let first = match sys::prog_load_xdp(&insns, NAME, None) {
        Ok(p) => return Ok(p),
        Err(e) => e,
    };
    let mut log = vec![0u8; 1 << 16];
    if let Ok(p) = sys::prog_load_xdp(&insns, NAME, Some(&mut log)) {
        return Ok(p);
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(4)..].join(" | ");
    Err(io::Error::new(
        first.kind(),
        if tail.is_empty() {
            format!("cannot load the XDP program: {first}")
        } else {
            format!("cannot load the XDP program: {first}; verifier: {tail}")
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_encodes_as_the_kernel_expects() {
        let p = redirect_program(7);
        let raw: Vec<u64> = p
            .iter()
            .map(|i| {
                u64::from(i.code)
                    | u64::from(i.regs) << 8
                    | u64::from(i.off as u16) << 16
                    | u64::from(i.imm as u32) << 32
            })
            .collect();
        // As `llvm-objdump -d` prints the same program compiled from C (little-endian).
        assert_eq!(
            raw,
            vec![
                0x0000_0000_0010_1261, // r2 = *(u32 *)(r1 + 16)
                0x0000_0007_0000_1118, // r1 = map fd 7 (src_reg = BPF_PSEUDO_MAP_FD)
                0,
                0x0000_0002_0000_03b7, // r3 = 2
                0x0000_0033_0000_0085, // call 51
                0x0000_0000_0000_0095, // exit
            ]
        );
    }
}
