//! TAP ports (`tap:NAME`): a layer-2 TAP device that koi creates (or attaches to, if it exists
//! and is free), brought up, through the `tun` crate. Each read or write moves one frame (the
//! TAP interface has no batched receive), so a batch costs one `read(2)` per frame.

use crate::{Batch, DEFAULT_SNAPLEN, PortError, Readiness, Result, Stats};
use std::io;
use std::os::fd::AsRawFd;

/// A TAP device port.
pub struct TapPort {
    name: String,
    dev: tun::Device,
    snaplen: usize,
    stats: Stats,
}

impl std::fmt::Debug for TapPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapPort").field("name", &self.name).finish()
    }
}

impl TapPort {
    /// Creates (or attaches to) TAP device `ifname` and sets it up, non-blocking.
    pub fn open(ifname: &str) -> Result<TapPort> {
        let err =
            |e: tun::Error| PortError::Io(format!("tap:{ifname}"), io::Error::other(e.to_string()));
        let mut cfg = tun::Configuration::default();
        cfg.tun_name(ifname).layer(tun::Layer::L2).up();
        let dev = tun::create(&cfg).map_err(err)?;
        dev.set_nonblock()
            .map_err(|e| PortError::Io(format!("tap:{ifname}"), e))?;
        Ok(TapPort {
            name: format!("tap:{ifname}"),
            dev,
            snaplen: DEFAULT_SNAPLEN,
            stats: Stats::default(),
        })
    }
}

impl crate::Port for TapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv_batch(&mut self, out: &mut Batch) -> Result<usize> {
        out.clear();
        // One byte more than the limit, to tell a frame of exactly `snaplen` from a longer one.
        let room = self.snaplen + 1;
        while let Some(slot) = out.slot() {
            slot.resize(room, 0);
            match self.dev.recv(slot) {
                Ok(n) if n > self.snaplen => self.stats.drop_too_big += 1,
                Ok(n) => {
                    slot.truncate(n);
                    out.commit();
                    self.stats.rx(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.stats.drop_error += 1;
                    return Err(PortError::Io(self.name.clone(), e));
                }
            }
        }
        Ok(out.len())
    }

    fn send(&mut self, pkt: &[u8]) -> Result<()> {
        if pkt.len() > self.snaplen {
            self.stats.drop_too_big += 1;
            return Err(PortError::TooBig(
                self.name.clone(),
                pkt.len(),
                self.snaplen,
            ));
        }
        match self.dev.send(pkt) {
            Ok(_) => {
                self.stats.tx(pkt.len());
                Ok(())
            }
            Err(e) => {
                match e.raw_os_error() {
                    Some(libc::EIO | libc::ENETDOWN) => self.stats.drop_link_down += 1,
                    Some(libc::EMSGSIZE | libc::EINVAL) => self.stats.drop_too_big += 1,
                    _ => self.stats.drop_error += 1,
                }
                Err(PortError::Io(self.name.clone(), e))
            }
        }
    }

    fn stats(&self) -> Stats {
        self.stats
    }

    fn readiness(&self) -> Readiness {
        Readiness::Fd(self.dev.as_raw_fd())
    }
}
