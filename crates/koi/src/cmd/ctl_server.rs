//! The control socket of `koi run` (`--ctl PATH`), which `koi ctl` talks to.
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
//! nothing. A connection may carry any number of requests.
//!
//! Commands: every simple_switch_CLI command of [`koi_control::command`], run under the state
//! lock between two packets; a command that changed the state records what it changed in the
//! invalidation log of [`super::run::cache`] before the lock is released, so the very next
//! packet of every poll thread sees a table write, not a flow cached before it. koi's own:
//! `help`, `port_show`, `stats`, `trace <port> <hex>`, `cache_show`, `dump_flows [N]` and the
//! internal `koi_names` (table, action and extern names for `koi ctl`'s completion).
//!
//! A client never holds the state lock while reading or writing the socket, every client has
//! its own thread with read and write timeouts, at most [`MAX_CLIENTS`] are served at once,
//! and a panic while answering becomes an error reply: a misbehaving client cannot stall or
//! stop forwarding.

use super::run::cache::{self, Change};
use super::run::{Shared, lock};
use koi_control::command::Command;
use koi_interp::{Interpreter, TraceObserver};
use koi_ir::ActionId;
use koi_ir::ExternId;
use koi_ir::entity::EntityId;
use koi_ports::{Poller, Readiness, Wake};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The longest command line accepted, in bytes.
pub const MAX_LINE: usize = 64 * 1024;
/// How many clients are served at once; more are told so and disconnected.
pub const MAX_CLIENTS: usize = 16;
/// The line that ends every reply.
pub const TERMINATOR: &str = ".";
/// How long the accept loop and the client threads wait before they look at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// A client that does not take its reply within this long is disconnected.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// koi's own commands, for `help` and completion (the simple_switch_CLI ones are
/// [`koi_control::command::COMMANDS`]).
pub const KOI_COMMANDS: &[(&str, &str)] = &[
    ("help", "list the commands"),
    (
        "port_show",
        "per-port rx/tx packets and bytes, drops by reason",
    ),
    ("stats", "packets in and out, drops by reason, uptime"),
    (
        "trace",
        "trace <port> <hex>: what the pipeline would do with a packet (nothing is sent or changed)",
    ),
    (
        "cache_show",
        "per poll thread: megaflows, subtables, microflows, memory, hits by cache tier, megaflows replaying the interpreter and why",
    ),
    (
        "dump_flows",
        "dump_flows [N]: per poll thread, up to N (default 50) megaflows with their hits, the key bits they match and their compiled action programs",
    ),
];

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

/// Accepts and serves clients until the switch stops.
pub(super) fn serve(sock: &CtlSocket, sh: &Shared<'_>) {
    let started = Instant::now();
    let clients = AtomicUsize::new(0);
    let mut poller = Poller::new();
    let ready = [Readiness::Fd(sock.listener.as_raw_fd())];
    std::thread::scope(|s| {
        while !sh.stop.load(Ordering::Relaxed) {
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
            if clients.fetch_add(1, Ordering::AcqRel) >= MAX_CLIENTS {
                clients.fetch_sub(1, Ordering::AcqRel);
                let mut stream = stream;
                let _ = stream.set_nonblocking(true);
                let msg = format!("too many clients (at most {MAX_CLIENTS})");
                let _ = stream.write_all(encode(&Err(msg)).as_bytes());
                continue;
            }
            let clients = &clients;
            let spawned = std::thread::Builder::new()
                .name("koi-ctl-client".into())
                .spawn_scoped(s, move || {
                    serve_client(stream, sh, started);
                    clients.fetch_sub(1, Ordering::AcqRel);
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "control socket: cannot start a client thread");
                clients.fetch_sub(1, Ordering::AcqRel);
            }
        }
    });
}

/// Answers the requests of one client until it hangs up, misbehaves or the switch stops.
fn serve_client(mut stream: UnixStream, sh: &Shared<'_>, started: Instant) {
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(POLL)).is_err()
        || stream.set_write_timeout(Some(WRITE_TIMEOUT)).is_err()
    {
        return;
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(i) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=i).collect();
            if i > MAX_LINE {
                let _ = stream.write_all(encode(&Err(too_long())).as_bytes());
                return;
            }
            let reply = answer_bytes(sh, started, &line[..i]);
            if stream.write_all(encode(&reply).as_bytes()).is_err() {
                return;
            }
        }
        if buf.len() > MAX_LINE {
            let _ = stream.write_all(encode(&Err(too_long())).as_bytes());
            return;
        }
        if sh.stop.load(Ordering::Relaxed) {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => {
                // A last line without its newline is still a request.
                if !buf.is_empty() {
                    let reply = answer_bytes(sh, started, &buf);
                    let _ = stream.write_all(encode(&reply).as_bytes());
                }
                return;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}

fn too_long() -> String {
    format!("command line longer than {MAX_LINE} bytes")
}

fn answer_bytes(sh: &Shared<'_>, started: Instant, line: &[u8]) -> Result<String, String> {
    let Ok(line) = std::str::from_utf8(line) else {
        return Err("the command line is not UTF-8".into());
    };
    let line = line.strip_suffix('\r').unwrap_or(line);
    let run = std::panic::AssertUnwindSafe(|| answer(sh, started, line));
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

/// `dump_flows [N]`: each poll thread's megaflows (at most N, default 50).
fn dump_flows(sh: &Shared<'_>, args: &[&str]) -> Result<String, String> {
    let limit = match args {
        [] => 50,
        [n] => n
            .parse::<usize>()
            .map_err(|_| format!("dump_flows: {n} is not a number of megaflows"))?,
        _ => return Err("dump_flows takes at most one argument (how many megaflows)".into()),
    };
    if sh.caches.config.is_none() {
        return Ok("cache: off (koi run --no-cache)\n".into());
    }
    let mut out = String::new();
    for (t, d) in sh.caches.dump_flows(limit).iter().enumerate() {
        match d {
            None => out.push_str(&format!("thread {t}: no answer (busy)\n")),
            Some(flows) => {
                out.push_str(&format!("thread {t}: {} megaflows shown\n", flows.len()));
                for f in flows {
                    out.push_str("  ");
                    out.push_str(f.trim_end());
                    out.push('\n');
                }
            }
        }
    }
    Ok(out)
}

/// Runs one command line; `Ok` holds its output, `Err` the reason it was refused.
pub(super) fn answer(sh: &Shared<'_>, started: Instant, line: &str) -> Result<String, String> {
    let code = line.find('#').map_or(line, |i| &line[..i]);
    let words: Vec<&str> = code.split_whitespace().collect();
    let Some((&cmd, args)) = words.split_first() else {
        return Ok(String::new());
    };
    let no_args = || {
        if args.is_empty() {
            Ok(())
        } else {
            Err(format!("{cmd} takes no arguments"))
        }
    };
    match cmd {
        "help" => no_args().map(|_| help()),
        "port_show" => no_args().map(|_| port_show(sh)),
        "stats" => no_args().map(|_| stats(sh, started)),
        "trace" => trace(sh, args),
        "cache_show" => no_args().map(|_| {
            let snaps = sh.caches.fresh();
            let epoch = sh.invalidations.epoch();
            cache::render(sh.caches.config.as_ref(), epoch, &snaps)
        }),
        "dump_flows" => dump_flows(sh, args),
        "koi_names" => no_args().map(|_| names(sh)),
        _ => {
            let Some(cmd) = koi_control::command::parse(line).map_err(|e| e.to_string())? else {
                return Ok(String::new());
            };
            let mut state = lock(sh.state);
            let out = koi_state::cli::execute(&mut state, &cmd).map_err(|e| e.to_string())?;
            // Before the lock is released: the poll threads' caches catch up with the change
            // under the same lock, before their next packet.
            if let Some(change) = change_of(&state, &cmd) {
                sh.state_changed(&mut state, change);
            }
            drop(state);
            Ok(out)
        }
    }
}

/// What a command that succeeded changed, for the flow caches: `None` for a command that
/// only reads. A write to a table's entries or default action names that table; anything
/// else that writes (action profiles, multicast, mirroring, registers, counters, meters, and
/// any command added later) flushes every cache, which is always safe.
fn change_of(state: &koi_state::State, cmd: &Command) -> Option<Change> {
    use Command::*;
    match cmd {
        TableDump { .. }
        | TableDumpEntry { .. }
        | TableNumEntries { .. }
        | TableInfo { .. }
        | ShowTables
        | ShowActions
        | ActProfDump { .. }
        | McDump
        | MirroringGet { .. }
        | RegisterRead { .. }
        | CounterRead { .. }
        | MeterGetRates { .. } => None,
        TableAdd { table, .. }
        | TableSetDefault { table, .. }
        | TableResetDefault { table }
        | TableDelete { table, .. }
        | TableModify { table, .. }
        | TableClear { table }
        | TableIndirectAdd { table, .. }
        | TableIndirectSetDefault { table, .. } => {
            Some(state.table_id(table).map_or(Change::All, Change::Table))
        }
        _ => Some(Change::All),
    }
}

fn help() -> String {
    let mut out = String::from("koi commands:\n");
    for (name, what) in KOI_COMMANDS {
        out.push_str(&format!("  {name:<12} {what}\n"));
    }
    out.push_str("simple_switch_CLI commands:\n");
    for chunk in koi_control::command::COMMANDS.chunks(3) {
        out.push_str("  ");
        out.push_str(
            chunk
                .iter()
                .map(|c| format!("{c:<38}"))
                .collect::<String>()
                .trim_end(),
        );
        out.push('\n');
    }
    out
}

fn port_show(sh: &Shared<'_>) -> String {
    let mut out = String::new();
    for slot in sh.slots {
        let port = lock(&slot.port);
        out.push_str(&format!(
            "port {} ({}): {}\n",
            slot.num,
            port.name(),
            port.stats()
        ));
    }
    out
}

fn stats(sh: &Shared<'_>, started: Instant) -> String {
    let mut total = koi_ports::Stats::default();
    for slot in sh.slots {
        let s = lock(&slot.port).stats();
        total.rx_packets += s.rx_packets;
        total.rx_bytes += s.rx_bytes;
        total.tx_packets += s.tx_packets;
        total.tx_bytes += s.tx_bytes;
        total.drop_too_big += s.drop_too_big;
        total.drop_link_down += s.drop_link_down;
        total.drop_error += s.drop_error;
        total.drop_ring_full += s.drop_ring_full;
    }
    let drops: String = sh
        .counters
        .by_reason()
        .iter()
        .map(|(r, n)| format!("{r} {n} "))
        .collect();
    format!(
        "packets in: {} ({} bytes)\npackets out: {} ({} bytes)\n\
         drops: {drops}too_big {} link_down {} error {} ring_full {}\n\
         uptime: {} s\n",
        total.rx_packets,
        total.rx_bytes,
        total.tx_packets,
        total.tx_bytes,
        total.drop_too_big,
        total.drop_link_down,
        total.drop_error,
        total.drop_ring_full,
        started.elapsed().as_secs()
    )
}

/// The packet of `trace <port> <hex>`: hex digits in any number of words, `:` allowed.
fn parse_hex(words: &[&str]) -> Result<Vec<u8>, String> {
    if words.is_empty() {
        return Err("usage: trace <port> <hex>".into());
    }
    super::trace::parse_hex(&words.join(" "))
}

/// Runs a packet through the interpreter on a clone of the live state.
fn trace(sh: &Shared<'_>, args: &[&str]) -> Result<String, String> {
    let Some((port, hex)) = args.split_first() else {
        return Err("usage: trace <port> <hex>".into());
    };
    let port: u64 = port
        .parse()
        .map_err(|_| format!("`{port}` is not a port number"))?;
    let packet = parse_hex(hex)?;
    let mut state = lock(sh.state).clone();
    let mut interp = Interpreter::new(sh.pipeline).map_err(|e| e.to_string())?;
    let mut obs = TraceObserver::new();
    let out = interp
        .run(&mut state, &packet, port, sh.clock, &mut obs)
        .map_err(|e| e.to_string())?;
    let mut text = obs.text().to_string();
    if out.outputs.is_empty() {
        text.push_str("result: no packet sent\n");
    }
    for o in &out.outputs {
        let hex: String = o.bytes.iter().map(|b| format!("{b:02x}")).collect();
        text.push_str(&format!(
            "result: port {}: {} bytes: {hex}\n",
            o.port,
            o.bytes.len()
        ));
    }
    Ok(text)
}

/// Table, action and extern instance names, full and by their last component, one per line.
fn names(sh: &Shared<'_>) -> String {
    let state = lock(sh.state);
    let mut all: Vec<String> = state.tables().map(|t| t.name().to_string()).collect();
    all.extend(
        (0u32..)
            .map_while(|i| state.action_schema(ActionId::new(i)))
            .map(|a| a.name.clone()),
    );
    all.extend(
        (0u32..)
            .map_while(|i| state.extern_name(ExternId::new(i)))
            .map(str::to_string),
    );
    drop(state);
    let short: Vec<String> = all
        .iter()
        .filter_map(|n| n.rsplit_once('.').map(|(_, s)| s.to_string()))
        .collect();
    all.extend(short);
    all.retain(|n| !n.is_empty());
    all.sort();
    all.dedup();
    let mut out = all.join("\n");
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

    #[test]
    fn hex_is_parsed_with_separators() {
        assert_eq!(parse_hex(&["0a:0B", "ff"]), Ok(vec![0x0a, 0x0b, 0xff]));
        assert!(parse_hex(&["abc"]).is_err());
        assert!(parse_hex(&["zz"]).is_err());
        assert!(parse_hex(&[]).is_err());
    }
}
