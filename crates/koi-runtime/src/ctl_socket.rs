//! The control socket of `koi run` (`--ctl PATH`), which `koi ctl` talks to: a transport for
//! the switch's command language ([`Switch::command`], see [`crate::command`]).
//!
//! The socket is a Unix stream socket, mode 0600, owned by the user running koi. Without
//! `--ctl` it is at [`default_path`]: `/run/koi/koi.sock` when `/run/koi` is writable (or can
//! be made), else `$XDG_RUNTIME_DIR/koi.sock`, else `/tmp/koi-$UID.sock`. A socket file left
//! behind by a koi that died is removed only when nothing answers on it; when another koi
//! listens there this one refuses to start.
//!
//! Protocol, one request at a time per connection: the client sends one command line
//! (at most [`MAX_LINE`] bytes, UTF-8, ending in `\n`); the server answers with the command's
//! output lines, then a line holding only `.`. An output line starting with `.` or `error:` is
//! sent with one more `.` in front (dot-stuffing), which the client takes off. A refused
//! command is answered with the single line `error: <why>` and the terminator, and changed
//! nothing. A connection may carry any number of requests. A line `@NAME COMMAND` runs the
//! command on pipeline NAME (without it: the first pipeline).
//!
//! A client never holds the state lock while reading or writing the socket, every client has
//! its own thread, and a panic while answering becomes an error reply: a misbehaving client
//! cannot stall or stop forwarding. Nor can clients lock each other out:
//! - a request line must arrive whole within [`REQUEST_TIMEOUT`] of its first byte, and a
//!   reply be taken within [`WRITE_TIMEOUT`]; a client that is slower is disconnected;
//! - a client idle (no request under way) for [`IDLE_TIMEOUT`] is disconnected (`koi ctl`'s
//!   prompt connects again by itself for the next command);
//! - at most [`MAX_CLIENTS`] are served at once; when all places are taken, a new client takes
//!   the place of the one idle longest (idle for at least [`EVICT_IDLE`]), and only when every
//!   client is busy is it refused with the line `error: too many control clients (N), try
//!   again` and the terminator, which `koi ctl` prints.

use crate::switch::Switch;
use koi_ports::{Poller, Readiness, Wake};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest command line accepted, in bytes.
pub const MAX_LINE: usize = 64 * 1024;
/// How many clients are served at once (see the module doc for who gets a place).
pub const MAX_CLIENTS: usize = 16;
/// A client that sends no request for this long is disconnected.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// A request line must be complete this long after its first byte.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A client idle for this long gives its place to a new client when every place is taken.
pub const EVICT_IDLE: Duration = Duration::from_secs(1);
/// The line that ends every reply.
pub const TERMINATOR: &str = ".";
/// How long the accept loop and the client threads wait before they look at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// A client that does not take its whole reply within this long is disconnected.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// The user id koi runs as (the owner of `/proc/self`).
pub fn uid() -> Option<u32> {
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

/// Whether this user may create files in directory `dir`.
fn writable_dir(dir: &Path) -> bool {
    let Ok(m) = std::fs::metadata(dir) else {
        return false;
    };
    let mode = m.permissions().mode();
    m.is_dir()
        && match uid() {
            Some(0) => true,
            Some(u) if u == m.uid() => mode & 0o200 != 0,
            _ => mode & 0o002 != 0,
        }
}

/// The control socket's path when `--ctl` is not given (see the module doc). With `create`
/// (the server), `/run/koi` is made if `/run` lets this user.
pub fn default_path(create: bool) -> PathBuf {
    let run = Path::new("/run/koi");
    if create && !run.exists() && writable_dir(Path::new("/run")) {
        let _ = std::fs::create_dir(run);
    }
    if writable_dir(run) {
        return run.join("koi.sock");
    }
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if writable_dir(&dir) {
            return dir.join("koi.sock");
        }
    }
    let uid = uid().map_or_else(|| "unknown".to_string(), |u| u.to_string());
    PathBuf::from(format!("/tmp/koi-{uid}.sock"))
}

/// The bound control socket; the file is removed when this is dropped (if it is still ours).
pub struct CtlSocket {
    listener: UnixListener,
    path: PathBuf,
    ino: u64,
}

impl CtlSocket {
    /// Binds `path`, removing a stale socket file there first; refuses if a koi answers on
    /// it or if it is not a socket. The socket is chmod 0600 before anything is accepted.
    pub fn bind(path: &Path) -> Result<CtlSocket, String> {
        let shown = path.display();
        if let Ok(m) = std::fs::symlink_metadata(path) {
            if !m.file_type().is_socket() {
                return Err(format!(
                    "control socket {shown}: exists and is not a socket"
                ));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(format!(
                    "control socket {shown}: another koi is listening there (give another path with --ctl PATH)"
                ));
            }
            std::fs::remove_file(path).map_err(|e| {
                format!("control socket {shown}: cannot remove the stale socket: {e}")
            })?;
        }
        let listener =
            UnixListener::bind(path).map_err(|e| format!("control socket {shown}: {e}"))?;
        let fail = |e: std::io::Error| {
            let _ = std::fs::remove_file(path);
            format!("control socket {shown}: {e}")
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(fail)?;
        let ino = std::fs::symlink_metadata(path).map_err(fail)?.ino();
        listener.set_nonblocking(true).map_err(fail)?;
        Ok(CtlSocket {
            listener,
            path: path.to_path_buf(),
            ino,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CtlSocket {
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// One served client, as the accept loop sees it.
struct Client {
    /// Milliseconds since the server's start when the client last finished a request (or
    /// connected); `u64::MAX` while a request is under way.
    idle_since: AtomicU64,
    /// Set by the accept loop to make the client's thread hang up.
    evicted: AtomicBool,
}

const BUSY: u64 = u64::MAX;

/// The places of the served clients.
struct Places {
    start: Instant,
    clients: Mutex<Vec<Arc<Client>>>,
}

impl Places {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// A place for a new client: a free one, or the one of the client idle longest (for at
    /// least [`EVICT_IDLE`]), which is told to hang up. `None` when every client is busy.
    fn take(&self) -> Option<Arc<Client>> {
        let now = self.now_ms();
        let mut clients = crate::lock(&self.clients);
        if clients.len() >= MAX_CLIENTS {
            let evict_ms = EVICT_IDLE.as_millis() as u64;
            let (i, _) = clients
                .iter()
                .enumerate()
                .map(|(i, c)| (i, c.idle_since.load(Ordering::Acquire)))
                .filter(|&(_, since)| since != BUSY && now.saturating_sub(since) >= evict_ms)
                .min_by_key(|&(_, since)| since)?;
            let old = clients.swap_remove(i);
            old.evicted.store(true, Ordering::Release);
            tracing::debug!("control socket: an idle client gives its place to a new one");
        }
        let c = Arc::new(Client {
            idle_since: AtomicU64::new(now),
            evicted: AtomicBool::new(false),
        });
        clients.push(Arc::clone(&c));
        Some(c)
    }

    fn leave(&self, c: &Arc<Client>) {
        crate::lock(&self.clients).retain(|x| !Arc::ptr_eq(x, c));
    }
}

/// The refusal a client gets when every place is taken by a busy client.
pub fn too_many_clients() -> String {
    format!("too many control clients ({MAX_CLIENTS}), try again")
}

/// Accepts and serves clients until the switch stops.
pub fn serve(sock: &CtlSocket, sh: &Switch) {
    let places = Places {
        start: Instant::now(),
        clients: Mutex::new(Vec::new()),
    };
    let mut poller = Poller::new();
    let ready = [Readiness::Fd(sock.listener.as_raw_fd())];
    std::thread::scope(|s| {
        while !sh.stopping() {
            if let Err(e) = poller.wait(&ready, POLL.as_millis() as i32) {
                tracing::error!(error = %e, "control socket: poll failed");
                return;
            }
            if poller.wake(0) == Wake::Nothing {
                continue;
            }
            let stream = match sock.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                Err(e) => {
                    tracing::debug!(error = %e, "control socket: accept failed");
                    // A persistent failure (too many open files) must not spin.
                    std::thread::sleep(POLL);
                    continue;
                }
            };
            let Some(me) = places.take() else {
                let mut stream = stream;
                let _ = stream.set_nonblocking(true);
                let _ = stream.write_all(encode(&Err(too_many_clients())).as_bytes());
                continue;
            };
            let places = &places;
            let gone = Arc::clone(&me);
            let spawned = std::thread::Builder::new()
                .name("koi-ctl-client".into())
                .spawn_scoped(s, move || {
                    serve_client(stream, sh, places, &me);
                    places.leave(&me);
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "control socket: cannot start a client thread");
                places.leave(&gone);
            }
        }
    });
}

/// Answers the requests of one client until it hangs up, misbehaves, is idle too long, gives
/// its place to another or the switch stops.
fn serve_client(mut stream: UnixStream, sh: &Switch, places: &Places, me: &Client) {
    if stream.set_nonblocking(false).is_err() || stream.set_read_timeout(Some(POLL)).is_err() {
        return;
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut idle_since = Instant::now();
    // When the first byte of the request under way arrived.
    let mut request_since: Option<Instant> = None;
    loop {
        while let Some(i) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=i).collect();
            if i > MAX_LINE {
                let _ = write_reply(&mut stream, &Err(too_long()));
                return;
            }
            me.idle_since.store(BUSY, Ordering::Release);
            let reply = answer_bytes(sh, &line[..i]);
            if write_reply(&mut stream, &reply).is_err() {
                return;
            }
            idle_since = Instant::now();
            me.idle_since.store(places.now_ms(), Ordering::Release);
            request_since = (!buf.is_empty()).then(Instant::now);
        }
        if buf.len() > MAX_LINE {
            let _ = write_reply(&mut stream, &Err(too_long()));
            return;
        }
        if sh.stopping() || me.evicted.load(Ordering::Acquire) {
            return;
        }
        if let Some(t) = request_since
            && t.elapsed() > REQUEST_TIMEOUT
        {
            let msg = format!(
                "the command line did not arrive within {} s",
                REQUEST_TIMEOUT.as_secs()
            );
            let _ = write_reply(&mut stream, &Err(msg));
            return;
        }
        if request_since.is_none() && idle_since.elapsed() > IDLE_TIMEOUT {
            tracing::debug!("control socket: idle client disconnected");
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => {
                // A last line without its newline is still a request.
                if !buf.is_empty() {
                    me.idle_since.store(BUSY, Ordering::Release);
                    let reply = answer_bytes(sh, &buf);
                    let _ = write_reply(&mut stream, &reply);
                }
                return;
            }
            Ok(n) => {
                if request_since.is_none() {
                    request_since = Some(Instant::now());
                    // A request under way keeps its place.
                    me.idle_since.store(BUSY, Ordering::Release);
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}

/// Writes one encoded reply, all of it within [`WRITE_TIMEOUT`] (however slowly the client
/// reads).
fn write_reply(stream: &mut UnixStream, reply: &Result<String, String>) -> std::io::Result<()> {
    let bytes = encode(reply);
    let mut rest = bytes.as_bytes();
    let deadline = Instant::now() + WRITE_TIMEOUT;
    while !rest.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(rest) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn too_long() -> String {
    format!("command line longer than {MAX_LINE} bytes")
}

fn answer_bytes(sh: &Switch, line: &[u8]) -> Result<String, String> {
    let Ok(line) = std::str::from_utf8(line) else {
        return Err("the command line is not UTF-8".into());
    };
    let line = line.strip_suffix('\r').unwrap_or(line);
    // `@NAME COMMAND`: the command for pipeline NAME (`koi ctl --pipeline NAME`).
    let (pipeline, line) = match line.strip_prefix('@') {
        Some(rest) => match rest.split_once(char::is_whitespace) {
            Some((name, cmd)) => (Some(name), cmd),
            None => (Some(rest), ""),
        },
        None => (None, line),
    };
    let run = std::panic::AssertUnwindSafe(|| sh.command(pipeline, line));
    std::panic::catch_unwind(run)
        .unwrap_or_else(|_| Err("internal error while running the command".into()))
}

/// Encodes a reply for the wire: dot-stuffed output lines and the terminator, or one
/// `error:` line and the terminator.
pub fn encode(reply: &Result<String, String>) -> String {
    let mut out = String::new();
    match reply {
        Ok(text) => {
            for line in text.lines() {
                if line.starts_with('.') || line.starts_with("error:") {
                    out.push('.');
                }
                out.push_str(line);
                out.push('\n');
            }
        }
        Err(msg) => {
            let one: Vec<&str> = msg.split_whitespace().collect();
            out.push_str("error: ");
            out.push_str(&one.join(" "));
            out.push('\n');
        }
    }
    out.push_str(TERMINATOR);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_stuffs_dots_and_ends_with_the_terminator() {
        assert_eq!(
            encode(&Ok("a\n.b\nerror: x".into())),
            "a\n..b\n.error: x\n.\n"
        );
        assert_eq!(encode(&Ok(String::new())), ".\n");
        assert_eq!(encode(&Err("bad\nthing".into())), "error: bad thing\n.\n");
    }
}
