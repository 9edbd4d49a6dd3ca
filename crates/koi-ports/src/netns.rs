//! Running code inside a named network namespace (`ip netns add NAME`): sockets created there
//! stay in that namespace for their whole life, whichever thread uses them later. Used by the
//! tests to open ports on interfaces that live in throwaway namespaces.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;

/// Runs `f` on a fresh thread that has joined the network namespace `/run/netns/NAME`.
pub fn run_in<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> io::Result<T> {
    if name.is_empty() || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad namespace name",
        ));
    }
    let ns: OwnedFd = File::open(format!("/run/netns/{name}"))?.into();
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::sys::setns_net(&ns)?;
            Ok(f())
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
    })
}
