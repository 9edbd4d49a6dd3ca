//! The `TPACKET_V3` receive ring: a memory-mapped array of blocks that the kernel fills with
//! packets and hands to user space one block at a time.
//!
//! Theory of operation. The ring is `block_nr` blocks of `block_size` bytes. Each block starts
//! with a `tpacket_block_desc` whose `block_status` word says who owns it: `TP_STATUS_KERNEL`
//! (the kernel may write packets into it) or `TP_STATUS_USER` (the kernel retired it: it is full,
//! or `tp_retire_blk_tov` milliseconds passed since its first packet). User space reads the
//! block's `num_pkts` packets, each a `tpacket3_hdr` followed at `tp_mac` by the frame, chained by
//! `tp_next_offset`, then gives the block back by storing `TP_STATUS_KERNEL`. Blocks are retired
//! in ring order, so a reader only ever looks at the block after the last one it released.
//! One wake-up thus delivers a whole block of packets with no system call per packet.
//!
//! Every offset read from the ring is bounds-checked against the block before use: a corrupt
//! header is counted as an error and ends the block, never a panic or an out-of-bounds read.

use crate::sys::Mmap;
use std::mem::offset_of;

/// Offset of `block_status` in a block (`tpacket_block_desc.hdr.bh1.block_status`).
const BLOCK_STATUS: usize =
    offset_of!(libc::tpacket_block_desc, hdr) + offset_of!(libc::tpacket_hdr_v1, block_status);
const NUM_PKTS: usize =
    offset_of!(libc::tpacket_block_desc, hdr) + offset_of!(libc::tpacket_hdr_v1, num_pkts);
const FIRST_PKT: usize = offset_of!(libc::tpacket_block_desc, hdr)
    + offset_of!(libc::tpacket_hdr_v1, offset_to_first_pkt);
const HDR_LEN: usize = std::mem::size_of::<libc::tpacket3_hdr>();
const H_NEXT: usize = offset_of!(libc::tpacket3_hdr, tp_next_offset);
const H_SNAPLEN: usize = offset_of!(libc::tpacket3_hdr, tp_snaplen);
const H_LEN: usize = offset_of!(libc::tpacket3_hdr, tp_len);
const H_STATUS: usize = offset_of!(libc::tpacket3_hdr, tp_status);
const H_MAC: usize = offset_of!(libc::tpacket3_hdr, tp_mac);
const H_VLAN_TCI: usize =
    offset_of!(libc::tpacket3_hdr, hv1) + offset_of!(libc::tpacket_hdr_variant1, tp_vlan_tci);
const H_VLAN_TPID: usize =
    offset_of!(libc::tpacket3_hdr, hv1) + offset_of!(libc::tpacket_hdr_variant1, tp_vlan_tpid);

/// One entry of a retired block.
pub enum Event<'a> {
    /// A frame: the captured bytes, its length on the wire, and the VLAN tag the NIC took off
    /// (TPID, TCI), which the frame must get back.
    Frame {
        data: &'a [u8],
        wire_len: usize,
        vlan: Option<(u16, u16)>,
    },
    /// A packet header that points outside its block.
    Malformed,
}

/// Where the reader is inside the current block.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    left: u32,
    off: usize,
}

#[derive(Debug)]
pub struct RxRing {
    map: Mmap,
    block_size: usize,
    block_nr: usize,
    cur: usize,
    pos: Option<Cursor>,
}

fn rd32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn rd16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

impl RxRing {
    pub fn new(map: Mmap, block_size: usize, block_nr: usize) -> RxRing {
        RxRing {
            map,
            block_size,
            block_nr: block_nr.max(1),
            cur: 0,
            pos: None,
        }
    }

    fn block_off(&self) -> usize {
        self.cur * self.block_size
    }

    /// Gives the current block back to the kernel and moves to the next.
    fn release(&mut self) {
        self.map
            .store_release(self.block_off() + BLOCK_STATUS, libc::TP_STATUS_KERNEL);
        self.cur = (self.cur + 1) % self.block_nr;
        self.pos = None;
    }

    /// Hands up to `max` entries of retired blocks to `f`, in order. Returns how many.
    pub fn read(&mut self, max: usize, mut f: impl FnMut(Event<'_>)) -> usize {
        let mut n = 0;
        while n < max {
            let base = self.block_off();
            let status = self.map.load_acquire(base + BLOCK_STATUS);
            if status & libc::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the acquire load above saw TP_STATUS_USER, so the kernel handed this block
            // to us and does not write it until `release` stores TP_STATUS_KERNEL, which happens
            // only after `blk` (and every slice from it given to `f`) is dead.
            let Some(blk) = (unsafe { self.map.region(base, self.block_size) }) else {
                self.release();
                continue;
            };
            let mut pos = match self.pos {
                Some(p) => p,
                None => Cursor {
                    left: rd32(blk, NUM_PKTS).unwrap_or(0),
                    off: rd32(blk, FIRST_PKT).map_or(0, |o| o as usize),
                },
            };
            while pos.left > 0 && n < max {
                n += 1;
                pos.left -= 1;
                match entry(blk, pos.off) {
                    Some((ev, next)) => {
                        f(ev);
                        if pos.left > 0 && next == 0 {
                            f(Event::Malformed);
                            pos.left = 0;
                        }
                        pos.off = pos.off.saturating_add(next);
                    }
                    None => {
                        f(Event::Malformed);
                        pos.left = 0;
                    }
                }
            }
            if pos.left == 0 {
                self.release();
            } else {
                self.pos = Some(pos);
            }
        }
        n
    }
}

/// Decodes the packet header at `off` of `blk`: the event and the offset to the next header.
fn entry(blk: &[u8], off: usize) -> Option<(Event<'_>, usize)> {
    let h = blk.get(off..off.checked_add(HDR_LEN)?)?;
    let next = rd32(h, H_NEXT)? as usize;
    let snap = rd32(h, H_SNAPLEN)? as usize;
    let wire_len = rd32(h, H_LEN)? as usize;
    let status = rd32(h, H_STATUS)?;
    let mac = off.checked_add(usize::from(rd16(h, H_MAC)?))?;
    let data = blk.get(mac..mac.checked_add(snap)?)?;
    let vlan = (status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
        let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
            rd16(h, H_VLAN_TPID).unwrap_or(0x8100)
        } else {
            0x8100
        };
        (tpid, rd32(h, H_VLAN_TCI).unwrap_or(0) as u16)
    });
    Some((
        Event::Frame {
            data,
            wire_len,
            vlan,
        },
        next,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_offsets_match_the_kernel_abi() {
        assert_eq!(BLOCK_STATUS, 8);
        assert_eq!(NUM_PKTS, 12);
        assert_eq!(FIRST_PKT, 16);
        assert_eq!(HDR_LEN, 48);
        assert_eq!((H_SNAPLEN, H_LEN, H_STATUS, H_MAC), (12, 16, 20, 24));
        assert_eq!((H_VLAN_TCI, H_VLAN_TPID), (32, 36));
    }

    #[test]
    fn entries_pointing_outside_the_block_are_rejected() {
        let mut blk = vec![0u8; 128];
        // snaplen 100 at mac offset 60: runs past the end.
        blk[H_SNAPLEN..H_SNAPLEN + 4].copy_from_slice(&100u32.to_ne_bytes());
        blk[H_MAC..H_MAC + 2].copy_from_slice(&60u16.to_ne_bytes());
        assert!(entry(&blk, 0).is_none());
        assert!(entry(&blk, 100).is_none());
        assert!(entry(&blk, usize::MAX - 3).is_none());
        blk[H_SNAPLEN..H_SNAPLEN + 4].copy_from_slice(&10u32.to_ne_bytes());
        match entry(&blk, 0) {
            Some((Event::Frame { data, vlan, .. }, 0)) => {
                assert_eq!(data.len(), 10);
                assert_eq!(vlan, None);
            }
            _ => panic!("expected a frame"),
        }
    }
}
