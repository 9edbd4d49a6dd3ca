//! Just enough routing netlink for the AF_XDP port, as bytes: `RTM_SETLINK` with `IFLA_XDP` (the
//! attach fallback for kernels without BPF links, and its detach) with the kernel's
//! acknowledgement and extended error message, and the `RTM_NEWLINK`/`RTM_DELLINK`
//! notifications of the `RTMGRP_LINK` group, which tell the port that its interface went down,
//! came back up, changed its MTU or vanished (an AF_XDP socket itself reports none of that to
//! `poll(2)`).

use super::sys;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLM_F_CAPPED: u16 = 0x100;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;
const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;
const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_SETLINK: u16 = 19;
const IFINFOMSG_LEN: usize = 16;
const IFLA_MTU: u16 = 4;
const IFLA_XDP: u16 = 43;
const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_FLAGS: u16 = 3;
const SOL_NETLINK: libc::c_int = 270;
const NETLINK_EXT_ACK: libc::c_int = 11;
/// `RTMGRP_LINK`: link notifications.
const RTMGRP_LINK: u32 = 1;
/// How long to wait for the kernel's acknowledgement.
const ACK_PATIENCE: Duration = Duration::from_secs(2);

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn rd16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn rd32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

/// The netlink messages in `buf`: (type, flags, seq, payload). Stops at a truncated header.
fn messages(buf: &[u8]) -> impl Iterator<Item = (u16, u16, u32, &[u8])> {
    let mut off = 0;
    std::iter::from_fn(move || {
        let len = rd32(buf, off)? as usize;
        if len < NLMSG_HDRLEN || off + len > buf.len() {
            return None;
        }
        let ty = rd16(buf, off + 4)?;
        let flags = rd16(buf, off + 6)?;
        let seq = rd32(buf, off + 8)?;
        let payload = &buf[off + NLMSG_HDRLEN..off + len];
        off += align4(len);
        Some((ty, flags, seq, payload))
    })
}

/// The attributes in `buf`: (type without flags, payload).
fn attrs(buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut off = 0;
    std::iter::from_fn(move || {
        let len = usize::from(rd16(buf, off)?);
        if len < 4 || off + len > buf.len() {
            return None;
        }
        let ty = rd16(buf, off + 2)? & NLA_TYPE_MASK;
        let payload = &buf[off + 4..off + len];
        off += align4(len);
        Some((ty, payload))
    })
}

fn put_attr(out: &mut Vec<u8>, ty: u16, payload: &[u8]) {
    out.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
    out.extend_from_slice(&ty.to_ne_bytes());
    out.extend_from_slice(payload);
    out.resize(align4(out.len()), 0);
}

/// `RTM_SETLINK` of interface `ifindex` with `IFLA_XDP { FD = fd, FLAGS = flags }`.
fn setlink_xdp(seq: u32, ifindex: u32, fd: i32, flags: u32) -> Vec<u8> {
    let mut xdp = Vec::new();
    put_attr(&mut xdp, IFLA_XDP_FD, &fd.to_ne_bytes());
    put_attr(&mut xdp, IFLA_XDP_FLAGS, &flags.to_ne_bytes());
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&0u32.to_ne_bytes()); // length, below
    m.extend_from_slice(&RTM_SETLINK.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    // struct ifinfomsg: family AF_UNSPEC, type 0, the index, no flag changes.
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(&(ifindex as i32).to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    put_attr(&mut m, IFLA_XDP | NLA_F_NESTED, &xdp);
    let len = m.len() as u32;
    m[..4].copy_from_slice(&len.to_ne_bytes());
    m
}

/// The outcome the acknowledgement of request `seq` in `buf` reports, if `buf` has it.
fn ack(buf: &[u8], seq: u32) -> Option<io::Result<()>> {
    for (ty, flags, s, payload) in messages(buf) {
        if s != seq {
            continue;
        }
        if ty == NLMSG_DONE {
            return Some(Ok(()));
        }
        if ty != NLMSG_ERROR {
            continue;
        }
        let code = rd32(payload, 0)? as i32;
        if code == 0 {
            return Some(Ok(()));
        }
        let err = io::Error::from_raw_os_error(-code);
        // Extended ack: the attributes follow the echoed request (only its header if capped).
        let echoed = if flags & NLM_F_CAPPED != 0 {
            NLMSG_HDRLEN
        } else {
            rd32(payload, 4).map_or(NLMSG_HDRLEN, |l| align4(l as usize))
        };
        let msg = (flags & NLM_F_ACK_TLVS != 0)
            .then(|| payload.get(4 + echoed..))
            .flatten()
            .and_then(|tlvs| attrs(tlvs).find(|(t, _)| *t == NLMSGERR_ATTR_MSG))
            .map(|(_, m)| {
                String::from_utf8_lossy(m.split(|&b| b == 0).next().unwrap_or(m)).into_owned()
            });
        return Some(Err(match msg {
            Some(m) if !m.is_empty() => io::Error::new(err.kind(), format!("{err} ({m})")),
            _ => err,
        }));
    }
    None
}

/// A routing netlink socket for requests, with extended error messages if the kernel has them.
pub fn socket() -> io::Result<OwnedFd> {
    let s = sys::netlink_route(0)?;
    let one: libc::c_int = 1;
    let _ = crate::sys::setsockopt(&s, SOL_NETLINK, NETLINK_EXT_ACK, &one);
    Ok(s)
}

/// Sets (or with `fd` -1 removes) the XDP program of interface `ifindex` through `sock`, and
/// waits for the kernel's answer.
pub fn set_xdp(sock: &OwnedFd, ifindex: u32, fd: i32, flags: u32) -> io::Result<()> {
    static SEQ: AtomicU32 = AtomicU32::new(1);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let msg = setlink_xdp(seq, ifindex, fd, flags);
    crate::sys::send_nonblocking(sock, &msg)?;
    let deadline = Instant::now() + ACK_PATIENCE;
    let mut buf = vec![0u8; 8192];
    loop {
        match sys::recv_nonblocking(sock, &mut buf) {
            Ok(n) => {
                if let Some(r) = ack(&buf[..n], seq) {
                    return r;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no answer from the kernel to RTM_SETLINK",
                    ));
                }
                let mut p = [libc::pollfd {
                    fd: crate::sys::raw(sock),
                    events: libc::POLLIN,
                    revents: 0,
                }];
                crate::sys::poll(&mut p, left.as_millis().min(1000) as i32 + 1)?;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A socket that receives the link notifications of its network namespace.
pub fn monitor() -> io::Result<OwnedFd> {
    sys::netlink_route(RTMGRP_LINK)
}

/// A link notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkEvent {
    pub ifindex: u32,
    /// `RTM_DELLINK`: the interface is gone.
    pub deleted: bool,
    /// `IFF_*` flags.
    pub flags: u32,
    pub mtu: Option<u32>,
}

/// The link notifications in `buf`.
pub fn link_events(buf: &[u8]) -> impl Iterator<Item = LinkEvent> + '_ {
    messages(buf).filter_map(|(ty, _, _, p)| {
        if ty != RTM_NEWLINK && ty != RTM_DELLINK {
            return None;
        }
        let ifindex = rd32(p, 4)?;
        let flags = rd32(p, 8)?;
        let mtu = p
            .get(IFINFOMSG_LEN..)
            .and_then(|a| attrs(a).find(|(t, _)| *t == IFLA_MTU))
            .and_then(|(_, v)| rd32(v, 0));
        Some(LinkEvent {
            ifindex,
            deleted: ty == RTM_DELLINK,
            flags,
            mtu,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setlink_message_layout() {
        let m = setlink_xdp(9, 5, -1, 2);
        assert_eq!(m.len(), 16 + 16 + 4 + 8 + 8);
        assert_eq!(rd32(&m, 0), Some(m.len() as u32));
        assert_eq!(rd16(&m, 4), Some(RTM_SETLINK));
        assert_eq!(rd32(&m, 8), Some(9));
        assert_eq!(rd32(&m, 20), Some(5));
        let nested: Vec<_> = attrs(&m[32..]).collect();
        assert_eq!(nested.len(), 1);
        assert_eq!(nested[0].0, IFLA_XDP);
        let inner: Vec<_> = attrs(nested[0].1).collect();
        assert_eq!(inner[0], (IFLA_XDP_FD, &(-1i32).to_ne_bytes()[..]));
        assert_eq!(inner[1], (IFLA_XDP_FLAGS, &2u32.to_ne_bytes()[..]));
    }

    fn error_msg(seq: u32, code: i32, text: Option<&str>) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&code.to_ne_bytes());
        // The echoed request header (capped).
        p.extend_from_slice(&[0u8; 16]);
        let mut flags = NLM_F_CAPPED;
        if let Some(t) = text {
            flags |= NLM_F_ACK_TLVS;
            let mut s = t.as_bytes().to_vec();
            s.push(0);
            put_attr(&mut p, NLMSGERR_ATTR_MSG, &s);
        }
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + p.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        m.extend_from_slice(&flags.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&p);
        m
    }

    #[test]
    fn acks_and_errors_are_decoded() {
        assert!(matches!(ack(&error_msg(3, 0, None), 3), Some(Ok(()))));
        assert!(ack(&error_msg(3, 0, None), 4).is_none());
        let e = ack(
            &error_msg(3, -libc::EBUSY, Some("XDP program already attached.")),
            3,
        )
        .and_then(Result::err)
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.contains("XDP program already attached."), "{e}");
        assert!(ack(&[1, 2, 3], 3).is_none());
    }

    #[test]
    fn link_events_are_decoded() {
        let mut m = Vec::new();
        let mut p = vec![0u8; 16];
        p[4..8].copy_from_slice(&7u32.to_ne_bytes());
        p[8..12].copy_from_slice(&0x1043u32.to_ne_bytes());
        put_attr(&mut p, 3, b"va\0");
        put_attr(&mut p, IFLA_MTU, &9000u32.to_ne_bytes());
        m.extend_from_slice(&((16 + p.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&RTM_DELLINK.to_ne_bytes());
        m.extend_from_slice(&[0u8; 10]);
        m.extend_from_slice(&p);
        let ev: Vec<_> = link_events(&m).collect();
        assert_eq!(
            ev,
            vec![LinkEvent {
                ifindex: 7,
                deleted: true,
                flags: 0x1043,
                mtu: Some(9000)
            }]
        );
        assert_eq!(link_events(&m[..20]).count(), 0);
    }
}
