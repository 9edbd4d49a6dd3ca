//! The switch's command language, as `koi ctl` speaks it: every simple_switch_CLI command of
//! [`koi_control::command`] (run on the pipeline's current image through [`Image::update`], so
//! a write lands between two batches and every thread's caches drop what it invalidates before
//! their next packet), and koi's own: `help`, `port_show`, `stats`, `trace <port> <hex>`,
//! `cache_show`, `dump_flows [N]`, `port_add N SPEC`, `port_remove N`, `load PROG.p4 [-I DIR]... [-D NAME[=VAL]]... [--reset]`
//! (replace the program while forwarding: see [`Pipeline::swap`]), the `pof_*` commands that
//! edit a POF pipeline ([`crate::pof`]) and the internal
//! `koi_names` (table, action and extern names for `koi ctl`'s completion).
//!
//! [`Switch::command`] answers one line: `Ok` with the output text, `Err` with why it was
//! refused (and then nothing changed).

use crate::cache;
use crate::image::{Changes, Image};
use crate::lock;
use crate::pipeline::Pipeline;
use crate::switch::Switch;
use koi_control::command::Command;
use koi_interp::{Interpreter, TraceObserver};
use koi_ir::entity::EntityId;
use koi_ir::{ActionId, ExternId};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// koi's own commands, for `help` and completion (the simple_switch_CLI ones are
/// [`koi_control::command::COMMANDS`]).
pub const KOI_COMMANDS: &[(&str, &str)] = &[
    ("help", "list the commands"),
    (
        "port_show",
        "per-port rx/tx packets and bytes, drops by reason",
    ),
    (
        "stats",
        "packets in and out, drops by reason, uptime, the program loaded",
    ),
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
    (
        "pipeline_show",
        "the pipelines: name, P4Runtime device id, program, ports, patch ports",
    ),
    (
        "pipeline_add",
        "pipeline_add NAME [PROG.p4] [--device-id N]: a new pipeline (its ports with koi ctl --pipeline NAME port_add)",
    ),
    (
        "pipeline_remove",
        "pipeline_remove NAME: remove a pipeline without ports",
    ),
    (
        "port_add",
        "port_add N SPEC: open a port (an interface, xdp:IF, pcap:IN,OUT, tap:NAME) as the pipeline's port N and forward from it",
    ),
    (
        "port_remove",
        "port_remove N: stop forwarding from and to the pipeline's port N and close it",
    ),
    (
        "load",
        "load PROG.p4 [-I DIR]... [-D NAME[=VAL]]... [--reset]: replace the program while forwarding, keeping the tables, profiles, registers, counters, meters, groups and sessions that still fit (--reset: start afresh)",
    ),
];

impl Switch {
    /// Runs one command line on pipeline `pipeline` (`None`: the first); `Ok` holds its
    /// output, `Err` the reason it was refused. A `#` starts a comment.
    pub fn command(&self, pipeline: Option<&str>, line: &str) -> Result<String, String> {
        let code = line.find('#').map_or(line, |i| &line[..i]);
        let words: Vec<&str> = code.split_whitespace().collect();
        let Some((&cmd, args)) = words.split_first() else {
            return Ok(String::new());
        };
        // The switch's own commands, for any pipeline.
        match cmd {
            "pipeline_add" => return self.pipeline_add(args),
            "pipeline_remove" => {
                return match args {
                    [name] => self
                        .remove_pipeline(name)
                        .map(|()| format!("pipeline {name} removed\n")),
                    _ => Err("usage: pipeline_remove NAME".into()),
                };
            }
            "pipeline_show" => return Ok(self.pipeline_show()),
            _ => {}
        }
        let pl = self
            .pipeline(pipeline)
            .ok_or_else(|| format!("no pipeline {}", pipeline.unwrap_or("")))?;
        let pl = &*pl;
        let no_args = || {
            if args.is_empty() {
                Ok(())
            } else {
                Err(format!("{cmd} takes no arguments"))
            }
        };
        let image = || {
            pl.image().ok_or_else(|| {
                format!(
                    "pipeline {} has no program yet (a P4Runtime controller loads one)",
                    pl.name()
                )
            })
        };
        match cmd {
            "help" => no_args().map(|_| help()),
            "port_show" => no_args().map(|_| self.port_show()),
            "stats" => no_args().map(|_| self.stats()),
            "trace" => trace(self, &image()?, args),
            "cache_show" => {
                no_args()?;
                Ok(match pl.image() {
                    Some(img) => {
                        let snaps = img.caches.fresh();
                        cache::render(img.caches.config.as_ref(), img.changes_recorded(), &snaps)
                    }
                    None => format!("pipeline {}: no program\n", pl.name()),
                })
            }
            "dump_flows" => dump_flows(pl, args),
            "load" => load(pl, args),
            "port_add" => match args {
                [n, spec] => {
                    let n = port_number(n)?;
                    let spec = koi_ports::PortSpec::parse(spec).map_err(|e| e.to_string())?;
                    self.add_port(pl, n, &spec)?;
                    Ok(format!("pipeline {}: port {n} added\n", pl.name()))
                }
                _ => Err("usage: port_add N SPEC".into()),
            },
            "port_remove" => match args {
                [n] => {
                    let n = port_number(n)?;
                    self.remove_port(pl, n)?;
                    Ok(format!("pipeline {}: port {n} removed\n", pl.name()))
                }
                _ => Err("usage: port_remove N".into()),
            },
            c if crate::pof::is_pof_command(c) => crate::pof::command(pl, c, args),
            "koi_names" => no_args().map(|_| pl.image().map(|i| names(&i)).unwrap_or_default()),
            _ => {
                let Some(cmd) = koi_control::command::parse(line).map_err(|e| e.to_string())?
                else {
                    return Ok(String::new());
                };
                pl.update(|state, changes| {
                    let out = koi_state::cli::execute(state, &cmd).map_err(|e| e.to_string())?;
                    change_of(state, &cmd, changes);
                    Ok(out)
                })?
            }
        }
    }

    fn port_show(&self) -> String {
        let mut out = String::new();
        for slot in self.ports().iter() {
            let name = lock(&slot.port).name().to_string();
            out.push_str(&format!("port {} ({name}): {}", slot.num, slot.stats()));
            let (queued, full) = slot.upcalls.get();
            out.push_str(&format!(
                " upcalls queued {queued} upcall_queue_full {full}"
            ));
            if !slot.spread.is_empty() {
                let by: Vec<String> = slot
                    .rx_by_thread()
                    .iter()
                    .map(|(t, n, full)| match full {
                        0 => format!("thread {t} {n}"),
                        _ => format!("thread {t} {n} (ring_full {full})"),
                    })
                    .collect();
                out.push_str(&format!(" (received by flow: {})", by.join(", ")));
            }
            out.push('\n');
        }
        out
    }

    fn stats(&self) -> String {
        let total = self.port_totals();
        let runs = self.counters.upcalls.load(Ordering::Relaxed);
        let upcall_ns = self.counters.upcall_ns.load(Ordering::Relaxed);
        let drops: String = self
            .counters
            .by_reason()
            .iter()
            .map(|(r, n)| format!("{r} {n} "))
            .collect();
        let mut out = format!(
            "packets in: {} ({} bytes)\npackets out: {} ({} bytes)\n\
             drops: {drops}too_big {} truncated {} link_down {} error {} ring_full {}\n\
             slow path: {} runs, {} us each on average, {} misses queued now\n\
             uptime: {} s\n",
            total.rx_packets,
            total.rx_bytes,
            total.tx_packets,
            total.tx_bytes,
            total.drop_too_big,
            total.drop_truncated,
            total.drop_link_down,
            total.drop_error,
            total.drop_ring_full,
            runs,
            (upcall_ns / runs.max(1)) / 1000,
            self.counters.upcall_queued.load(Ordering::Relaxed),
            self.started().elapsed().as_secs()
        );
        for pl in self.live_pipelines() {
            let program = match pl.image() {
                Some(i) => format!(
                    "{} (generation {}, loaded {} s ago)",
                    i.program().name,
                    i.generation(),
                    i.loaded_at().elapsed().as_secs()
                ),
                None => "no program".into(),
            };
            let c = &pl.counters;
            let get =
                |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            out.push_str(&format!(
                "pipeline {} (device id {}): {program}; packet-ins {} packet-outs {} digests {} to_cpu_unclaimed {}\n",
                pl.name(),
                pl.device_id(),
                get(&c.packet_ins),
                get(&c.packet_outs),
                get(&c.digests),
                get(&c.to_cpu_unclaimed),
            ));
        }
        out
    }
}

/// What a command that succeeded changed, for the flow caches: nothing for a command that
/// only reads. A write to a table's entries or default action names that table; anything
/// else that writes (action profiles, multicast, mirroring, registers, counters, meters, and
/// any command added later) flushes every cache, which is always safe.
fn change_of(state: &koi_state::State, cmd: &Command, changes: &mut Changes) {
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
        | MeterGetRates { .. }
        | ShowCalculations => {}
        TableAdd { table, .. }
        | TableSetDefault { table, .. }
        | TableResetDefault { table }
        | TableDelete { table, .. }
        | TableModify { table, .. }
        | TableClear { table }
        | TableIndirectAdd { table, .. }
        | TableIndirectSetDefault { table, .. } => match state.table_id(table) {
            Ok(t) => changes.table(t),
            Err(_) => changes.all(),
        },
        _ => changes.all(),
    }
}

fn help() -> String {
    let mut out = String::from("koi commands:\n");
    for (name, what) in KOI_COMMANDS {
        out.push_str(&format!("  {name:<12} {what}\n"));
    }
    out.push_str("POF commands (docs/pof.md):\n");
    for (name, what) in crate::pof::POF_COMMANDS {
        out.push_str(&format!("  {name:<19} {what}\n"));
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

impl Switch {
    /// `pipeline_add NAME [PROG.p4] [--device-id N]` (the device id: by default one more than
    /// the largest in use; the CPU port: the first pipeline's).
    fn pipeline_add(&self, args: &[&str]) -> Result<String, String> {
        let usage = "usage: pipeline_add NAME [PROG.p4] [--device-id N]";
        let (mut name, mut file, mut device_id) = (None, None, None);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match *a {
                "--device-id" => {
                    let v = it.next().ok_or(usage)?;
                    device_id = Some(
                        v.parse::<u64>()
                            .map_err(|_| format!("`{v}` is not a device id"))?,
                    );
                }
                _ if name.is_none() => name = Some(*a),
                _ if file.is_none() => file = Some(*a),
                _ => return Err(usage.into()),
            }
        }
        let name = name.ok_or(usage)?;
        crate::pipeline::check_name(name)?;
        let live = self.live_pipelines();
        let device_id =
            device_id.unwrap_or_else(|| live.iter().map(|p| p.device_id()).max().unwrap_or(0) + 1);
        let cpu_port = live.first().and_then(|p| p.cpu_port());
        let program = match file {
            Some(f) => {
                let p = crate::Program::compile_file(
                    std::path::Path::new(f),
                    &crate::Flags::default(),
                )?;
                p.require_externs()?;
                Some(Arc::new(p))
            }
            None => None,
        };
        let pl = self.add_pipeline(
            crate::PipelineConfig {
                name: name.to_string(),
                device_id,
                cpu_port,
            },
            program,
        )?;
        Ok(format!(
            "pipeline {} added (P4Runtime device {})\n",
            pl.name(),
            pl.device_id()
        ))
    }

    /// `pipeline_show`.
    fn pipeline_show(&self) -> String {
        let table = self.ports();
        let all = self.pipelines();
        let mut out = String::new();
        for pl in all.iter().filter(|p| !p.is_removed()) {
            let program = pl
                .image()
                .map_or("no program".to_string(), |i| i.program().name.clone());
            let ports: Vec<String> = table
                .iter()
                .filter(|s| s.pipeline == pl.index())
                .map(|s| format!("{} ({})", s.num, lock(&s.port).name()))
                .collect();
            out.push_str(&format!(
                "pipeline {}: device {}, {program}, ports [{}]\n",
                pl.name(),
                pl.device_id(),
                ports.join(", ")
            ));
        }
        for ((pa, na), (pb, nb)) in self.patches() {
            out.push_str(&format!(
                "patch {}:{na} = {}:{nb}\n",
                all[pa].name(),
                all[pb].name()
            ));
        }
        out
    }
}

fn port_number(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("`{s}` is not a port number"))
}

/// `load PROG.p4 [-I DIR]... [-D NAME[=VAL]]... [--extern FILE] [--reset]`: compiles the program (on the
/// calling thread, away from the poll threads) and swaps it in with the state carried over
/// (or afresh with `--reset`). Paths are the switch process's: `koi ctl` sends absolute ones.
fn load(pl: &Pipeline, args: &[&str]) -> Result<String, String> {
    let mut flags = crate::Flags::default();
    let mut file = None;
    let mut reset = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--reset" => reset = true,
            "-I" | "-D" | "--extern" => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("load: {a} needs a value"))?;
                match *a {
                    "-I" => flags.include.push(v.into()),
                    "-D" => flags.define.push(v.to_string()),
                    _ => flags.externs = Some(v.into()),
                }
            }
            _ if a.starts_with("-I") && a.len() > 2 => flags.include.push(a[2..].into()),
            _ if a.starts_with("-D") && a.len() > 2 => flags.define.push(a[2..].to_string()),
            _ if a.starts_with('-') => return Err(format!("load: unknown option {a}")),
            _ if file.is_none() => file = Some(*a),
            _ => return Err(format!("load: one program only (got {a} too)")),
        }
    }
    let file =
        file.ok_or("usage: load PROG.p4 [-I DIR]... [-D NAME[=VAL]]... [--extern FILE] [--reset]")?;
    let program = crate::Program::compile_file(std::path::Path::new(file), &flags)?;
    program.require_externs()?;
    let report = pl.swap(Arc::new(program), reset)?;
    Ok(report.to_string())
}

/// `dump_flows [N]`: each poll thread's megaflows (at most N, default 50).
fn dump_flows(pl: &Pipeline, args: &[&str]) -> Result<String, String> {
    let limit = match args {
        [] => 50,
        [n] => n
            .parse::<usize>()
            .map_err(|_| format!("dump_flows: {n} is not a number of megaflows"))?,
        _ => return Err("dump_flows takes at most one argument (how many megaflows)".into()),
    };
    let Some(image) = pl.image() else {
        return Ok(format!("pipeline {}: no program\n", pl.name()));
    };
    if image.caches.config.is_none() {
        return Ok("cache: off (koi run --no-cache)\n".into());
    }
    let mut out = String::new();
    for (t, d) in image.caches.dump_flows(limit).iter().enumerate() {
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

/// A packet written in hex; whitespace and `:` between digits are ignored.
pub fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .map(|c| {
            c.to_digit(16)
                .map(|d| d as u8)
                .ok_or_else(|| format!("'{c}' is not a hex digit"))
        })
        .collect::<Result<_, _>>()?;
    if !digits.len().is_multiple_of(2) {
        return Err("the packet has an odd number of hex digits".into());
    }
    Ok(digits.chunks(2).map(|p| (p[0] << 4) | p[1]).collect())
}

/// `trace <port> <hex>`: runs a packet through the interpreter on a clone of the live state.
fn trace(sw: &Switch, image: &Arc<Image>, args: &[&str]) -> Result<String, String> {
    let Some((port, hex)) = args.split_first() else {
        return Err("usage: trace <port> <hex>".into());
    };
    let port: u64 = port
        .parse()
        .map_err(|_| format!("`{port}` is not a port number"))?;
    if hex.is_empty() {
        return Err("usage: trace <port> <hex>".into());
    }
    let packet = parse_hex(&hex.join(" "))?;
    let mut state = image.read(|s| s.clone());
    let mut interp = Interpreter::new(&image.program().pipeline).map_err(|e| e.to_string())?;
    let mut obs = TraceObserver::new();
    let out = interp
        .run(&mut state, &packet, port, sw.clock(), &mut obs)
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
fn names(image: &Image) -> String {
    let mut all: Vec<String> = image.read(|state| {
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
        all
    });
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
    fn hex_is_parsed_with_separators() {
        assert_eq!(parse_hex("0a:0B ff"), Ok(vec![0x0a, 0x0b, 0xff]));
        assert!(parse_hex("abc").is_err());
        assert!(parse_hex("zz").is_err());
        assert_eq!(parse_hex(""), Ok(vec![]));
    }
}
