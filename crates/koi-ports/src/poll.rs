//! [`Poller`]: waits with `poll(2)` until one of a poll thread's ports is readable, so that an
//! idle switch sleeps instead of spinning. The descriptor array is reused between waits.

use crate::Readiness;
use std::io;

/// What `poll(2)` said about one port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Nothing happened.
    Nothing,
    /// Readable (or a port that is always ready).
    Ready,
    /// An error condition (link down, interface gone): call `Port::handle_error`.
    Error,
}

/// A reusable `poll(2)` set.
#[derive(Debug, Default)]
pub struct Poller {
    fds: Vec<libc::pollfd>,
    always: Vec<bool>,
}

impl Poller {
    pub fn new() -> Poller {
        Poller::default()
    }

    /// Waits until a port in `ports` (in order) is ready or `timeout_ms` passes; returns at once
    /// if one is [`Readiness::Always`]. A signal ends the wait early without an error.
    pub fn wait(&mut self, ports: &[Readiness], timeout_ms: i32) -> io::Result<()> {
        self.fds.clear();
        self.always.clear();
        let mut timeout = timeout_ms;
        for r in ports {
            let fd = match *r {
                Readiness::Fd(fd) => fd,
                Readiness::Always => {
                    timeout = 0;
                    -1
                }
                Readiness::Idle => -1,
            };
            self.always.push(*r == Readiness::Always);
            self.fds.push(libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        crate::sys::poll(&mut self.fds, timeout).map(drop)
    }

    /// What the last [`Poller::wait`] said about port `i`.
    pub fn wake(&self, i: usize) -> Wake {
        let Some(p) = self.fds.get(i) else {
            return Wake::Nothing;
        };
        if p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            Wake::Error
        } else if p.revents & libc::POLLIN != 0 || self.always.get(i) == Some(&true) {
            Wake::Ready
        } else {
            Wake::Nothing
        }
    }
}
