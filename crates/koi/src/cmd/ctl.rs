//! `koi ctl [--ctl PATH] [COMMAND...]`: controls a running `koi run` through its control
//! socket (protocol: [`koi_runtime::ctl_socket`]).
//!
//! With a command it sends that one line, prints the reply and exits 0; a refused command
//! exits 1 with `error: <why>` on stderr, and a socket it cannot reach exits 2 naming the
//! path. Without a command it reads commands from stdin when stdin is not a terminal (one
//! reply per line; exit 1 if any was refused), and otherwise offers a prompt with history
//! (`$XDG_DATA_HOME/koi/ctl_history`, else `~/.local/share/koi/ctl_history`) and tab
//! completion of command names and of the table, action and extern names of the running
//! program (fetched with the internal `koi_names` command).

use clap::Args;
use koi_runtime::command::KOI_COMMANDS;
use koi_runtime::ctl_socket::{self, TERMINATOR};
use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CtlArgs {
    /// The switch's control socket (default: as `koi run` chooses it).
    #[arg(long, value_name = "PATH")]
    pub ctl: Option<PathBuf>,
    /// The pipeline the commands are for (`koi run --pipeline NAME=...`); default: the first.
    #[arg(long, value_name = "NAME")]
    pub pipeline: Option<String>,
    /// A command and its arguments: `port_show`, `help`, `'table_add fwd set_port 1 => 2'`
    /// (quote a command with `=>`: the shell takes `>` as a redirection).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// A connection to the switch. The switch hangs up on a client idle for a while
/// ([`ctl_socket::IDLE_TIMEOUT`]) or one whose place a new client took; the next request then
/// connects again by itself.
pub struct Conn {
    path: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    /// `@NAME ` when the commands are for pipeline NAME, else empty.
    prefix: String,
}

/// Why a request got no reply.
#[derive(Debug)]
pub enum ConnError {
    /// The command cannot be sent (it has a line break, or is too long).
    Bad(String),
    /// The connection failed.
    Io(String),
}

impl Conn {
    pub fn connect(path: &Path) -> std::io::Result<Conn> {
        let writer = UnixStream::connect(path)?;
        let reader = BufReader::new(writer.try_clone()?);
        Ok(Conn {
            path: path.to_path_buf(),
            reader,
            writer,
            prefix: String::new(),
        })
    }

    /// Sends every later command to pipeline `name`.
    pub fn for_pipeline(&mut self, name: &str) {
        self.prefix = format!("@{name} ");
    }

    /// Sends one command line; returns its output or the switch's refusal.
    pub fn request(&mut self, line: &str) -> Result<Result<String, String>, ConnError> {
        if line.contains('\n') || line.contains('\r') {
            return Err(ConnError::Bad("a command is one line".into()));
        }
        if line.len() > ctl_socket::MAX_LINE {
            return Err(ConnError::Bad(format!(
                "command line longer than {} bytes",
                ctl_socket::MAX_LINE
            )));
        }
        let request = format!("{}{line}\n", self.prefix);
        match self.exchange(&request) {
            // The switch hung up before this request reached it (the connection was idle, or
            // gave its place to another client): nothing ran, so connect again and send it.
            Err(Unanswered(_)) => {
                let fresh = Conn::connect(&self.path).map_err(|e| {
                    ConnError::Io(format!("cannot connect to {}: {e}", self.path.display()))
                })?;
                self.reader = fresh.reader;
                self.writer = fresh.writer;
                self.exchange(&request)
                    .map_err(|Unanswered(e)| ConnError::Io(e))?
            }
            Ok(r) => r,
        }
    }

    /// Sends `request` and reads its reply; `Unanswered` when the connection was closed before
    /// any reply came.
    fn exchange(
        &mut self,
        request: &str,
    ) -> Result<Result<Result<String, String>, ConnError>, Unanswered> {
        let io = |e: std::io::Error| ConnError::Io(e.to_string());
        // A switch that refuses the connection has sent its reason and hung up, so the write
        // may fail: the reason is still there to read.
        let sent = self.writer.write_all(request.as_bytes());
        let mut out = String::new();
        let mut error = None;
        let mut first = true;
        loop {
            let mut l = String::new();
            let n = match self.reader.read_line(&mut l) {
                Ok(n) => n,
                Err(e) if first => return Err(Unanswered(e.to_string())),
                Err(e) => return Ok(Err(io(e))),
            };
            if n == 0 {
                let why = match &sent {
                    Err(e) => e.to_string(),
                    Ok(()) => "the switch closed the connection".into(),
                };
                return match first {
                    true => Err(Unanswered(why)),
                    false => Ok(Err(ConnError::Io(why))),
                };
            }
            let l = l.strip_suffix('\n').unwrap_or(&l);
            if l == TERMINATOR {
                break;
            }
            if first && let Some(msg) = l.strip_prefix("error: ") {
                error = Some(msg.to_string());
            } else {
                out.push_str(l.strip_prefix('.').unwrap_or(l));
                out.push('\n');
            }
            first = false;
        }
        Ok(match error {
            // Not a refused command: the switch had no place for this client.
            Some(msg) if msg == ctl_socket::too_many_clients() => Err(ConnError::Io(msg)),
            Some(msg) => Ok(Err(msg)),
            None => Ok(Ok(out)),
        })
    }
}

/// A request that got no reply at all: the connection was closed before it was read.
struct Unanswered(String);

pub fn run(a: &CtlArgs) -> ExitCode {
    let path = a
        .ctl
        .clone()
        .unwrap_or_else(|| ctl_socket::default_path(false));
    let mut conn = match Conn::connect(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "koi ctl: cannot connect to {}: {e} (is `koi run` running? its socket is given with --ctl PATH)",
                path.display()
            );
            return ExitCode::from(2);
        }
    };
    if let Some(p) = &a.pipeline {
        conn.for_pipeline(p);
    }
    if !a.command.is_empty() {
        return match one(&mut conn, &a.command.join(" ")) {
            Some(true) => ExitCode::SUCCESS,
            Some(false) => {
                if let Some(hint) = redirect_hint(&a.command) {
                    eprintln!("{hint}");
                }
                ExitCode::from(1)
            }
            None => ExitCode::from(2),
        };
    }
    if !std::io::stdin().is_terminal() {
        return batch(&mut conn);
    }
    interactive(&mut conn)
}

/// A hint when a refused command's words end in `=`: the shell most likely took the `>` of
/// an unquoted `=>` as a redirection (and wrote the action's parameters to a file).
pub fn redirect_hint(words: &[String]) -> Option<String> {
    let last = words.last()?;
    last.ends_with('=').then(|| {
        format!(
            "hint: the command ends in `=`: the shell took the `>` of `=>` as a redirection; \
             quote the command: koi ctl '{}> ...'",
            words.join(" ")
        )
    })
}

/// `load`'s and `pof_load`'s file arguments (the program, `-I` directories, the POF
/// configuration) made absolute from this process's directory, since the switch resolves
/// them from its own; other lines unchanged.
pub fn absolute_paths(line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some(&cmd @ ("load" | "pof_load")) = words.first() else {
        return line.to_string();
    };
    let abs = |p: &str| -> String {
        let path = std::path::Path::new(p);
        if path.is_absolute() {
            return p.to_string();
        }
        std::env::current_dir()
            .map(|d| d.join(path).display().to_string())
            .unwrap_or_else(|_| p.to_string())
    };
    let mut out = vec![cmd.to_string()];
    let mut it = words[1..].iter();
    while let Some(w) = it.next() {
        match *w {
            "-I" => {
                out.push("-I".into());
                if let Some(d) = it.next() {
                    out.push(abs(d));
                }
            }
            "-D" => {
                out.push("-D".into());
                if let Some(d) = it.next() {
                    out.push(d.to_string());
                }
            }
            w if w.starts_with("-I") && w.len() > 2 => out.push(format!("-I{}", abs(&w[2..]))),
            w if w.starts_with('-') => out.push(w.to_string()),
            w => out.push(abs(w)),
        }
    }
    out.join(" ")
}

/// Runs one command and prints its reply: `Some(ok)`, or `None` when the connection failed.
fn one(conn: &mut Conn, line: &str) -> Option<bool> {
    match conn.request(&absolute_paths(line)) {
        Ok(Ok(out)) => {
            print!("{out}");
            let _ = std::io::stdout().flush();
            Some(true)
        }
        Ok(Err(msg)) => {
            eprintln!("error: {msg}");
            Some(false)
        }
        Err(ConnError::Bad(msg)) => {
            eprintln!("error: {msg}");
            Some(false)
        }
        Err(ConnError::Io(msg)) => {
            eprintln!("koi ctl: {msg}");
            None
        }
    }
}

/// Commands from stdin, one per line.
fn batch(conn: &mut Conn) -> ExitCode {
    let mut ok = true;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else {
            eprintln!("koi ctl: stdin is not UTF-8 text");
            return ExitCode::from(2);
        };
        if line.trim().is_empty() {
            continue;
        }
        match one(conn, &line) {
            Some(true) => {}
            Some(false) => ok = false,
            None => return ExitCode::from(2),
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn history_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::home_dir().map(|h| h.join(".local/share")))?;
    Some(data.join("koi").join("ctl_history"))
}

fn interactive(conn: &mut Conn) -> ExitCode {
    let names = match conn.request("koi_names") {
        Ok(Ok(text)) => text.lines().map(str::to_string).collect(),
        _ => Vec::new(),
    };
    let mut ed: Editor<CtlHelper, DefaultHistory> = match Editor::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("koi ctl: cannot start the prompt: {e}");
            return ExitCode::from(2);
        }
    };
    ed.set_helper(Some(CtlHelper::new(names)));
    let history = history_path();
    if let Some(h) = &history {
        let _ = ed.load_history(h);
    }
    loop {
        let line = match ed.readline("koi> ") {
            Ok(l) => l,
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(_) => break,
        };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let _ = ed.add_history_entry(trimmed);
        if matches!(trimmed, "quit" | "exit" | "EOF") {
            break;
        }
        if one(conn, trimmed).is_none() {
            save(&mut ed, history.as_deref());
            return ExitCode::from(2);
        }
    }
    save(&mut ed, history.as_deref());
    ExitCode::SUCCESS
}

fn save(ed: &mut Editor<CtlHelper, DefaultHistory>, path: Option<&Path>) {
    if let Some(p) = path {
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = ed.save_history(p);
    }
}

/// Tab completion for the prompt: command names for the first word, program object names
/// after it.
pub struct CtlHelper {
    commands: Vec<String>,
    names: Vec<String>,
}

impl CtlHelper {
    pub fn new(names: Vec<String>) -> CtlHelper {
        let mut commands: Vec<String> = koi_control::command::COMMANDS
            .iter()
            .map(|c| c.to_string())
            .chain(KOI_COMMANDS.iter().map(|(c, _)| c.to_string()))
            .chain(
                koi_runtime::pof::POF_COMMANDS
                    .iter()
                    .map(|(c, _)| c.to_string()),
            )
            .collect();
        commands.sort();
        commands.dedup();
        CtlHelper { commands, names }
    }

    /// The start of the word before `pos` in `line` and the candidates that complete it.
    pub fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = line.get(..pos).unwrap_or(line);
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = &before[start..];
        let first = before[..start].trim().is_empty();
        let pool = if first { &self.commands } else { &self.names };
        let found = pool
            .iter()
            .filter(|c| c.starts_with(word))
            .cloned()
            .collect();
        (start, found)
    }
}

impl Completer for CtlHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.candidates(line, pos))
    }
}

impl Hinter for CtlHelper {
    type Hint = String;
}
impl Highlighter for CtlHelper {}
impl Validator for CtlHelper {}
impl Helper for CtlHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_paths_become_absolute() {
        let cwd = std::env::current_dir().unwrap();
        let p = |x: &str| cwd.join(x).display().to_string();
        assert_eq!(
            absolute_paths("load prog.p4 -I inc -Iother -D X=1 --reset"),
            format!(
                "load {} -I {} -I{} -D X=1 --reset",
                p("prog.p4"),
                p("inc"),
                p("other")
            )
        );
        assert_eq!(absolute_paths("load /a/b.p4"), "load /a/b.p4");
        assert_eq!(
            absolute_paths("pof_load c.pof --reset"),
            format!("pof_load {} --reset", cwd.join("c.pof").display())
        );
        assert_eq!(absolute_paths("table_dump t"), "table_dump t");
    }

    #[test]
    fn completes_commands_first_then_names() {
        let h = CtlHelper::new(vec![
            "FwdIngress.fwd".into(),
            "fwd".into(),
            "set_port".into(),
        ]);
        let (s, c) = h.candidates("table_nu", 8);
        assert_eq!((s, c), (0, vec!["table_num_entries".to_string()]));
        let (s, c) = h.candidates("port_s", 6);
        assert_eq!((s, c), (0, vec!["port_show".to_string()]));
        let (s, c) = h.candidates("cache_", 6);
        assert_eq!((s, c), (0, vec!["cache_show".to_string()]));
        let (s, c) = h.candidates("table_add fw", 12);
        assert_eq!((s, c), (10, vec!["fwd".to_string()]));
        let (s, c) = h.candidates("table_add fwd se", 16);
        assert_eq!((s, c), (14, vec!["set_port".to_string()]));
        let (_, c) = h.candidates("table_add Fwd", 13);
        assert_eq!(c, vec!["FwdIngress.fwd".to_string()]);
        assert!(h.candidates("nosuch", 6).1.is_empty());
    }
}
