//! POF pipelines in the runtime: [`Program::from_pof`] compiles a POF configuration (crate
//! `koi-pof`) into a program, and the `pof_*` commands of `koi ctl` edit the configuration
//! of the pipeline's running program, compile the result and swap it in with the state
//! carried over ([`Pipeline::swap`]), so a POF change is applied exactly as `koi ctl load`
//! applies a P4 program: between two batches, with tables, counters, meters, groups and
//! sessions kept.
//!
//! The configuration lives in the running [`Program`] ([`Program::pof`]), so it is swapped
//! with the pipeline it describes. Edits of one pipeline are serialised; an edit that does not
//! parse, does not compile or cannot carry the state over changes nothing.

use crate::pipeline::Pipeline;
use crate::program::{Flags, Program};
use koi_pof::Config;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The `pof_*` commands, for `help` and completion.
pub const POF_COMMANDS: &[(&str, &str)] = &[
    (
        "pof_show",
        "the pipeline's POF configuration (in the text format of docs/pof.md), each compiled table's cursor and the tables not reachable",
    ),
    (
        "pof_p4",
        "the P4 program koi generated for the POF configuration",
    ),
    (
        "pof_load",
        "pof_load FILE [--reset]: replace the whole POF configuration (--reset: start the state afresh)",
    ),
    (
        "pof_protocol_add",
        "pof_protocol_add protocol NAME { field NAME OFFSET LENGTH ... } (or metadata { ... }): define protocols or metadata fields",
    ),
    (
        "pof_protocol_remove",
        "pof_protocol_remove NAME: remove a protocol no table or entry uses",
    ),
    (
        "pof_table_add",
        "pof_table_add table NAME exact|lpm|ternary [size N] { key FIELD... } [first NAME]: add tables",
    ),
    (
        "pof_table_remove",
        "pof_table_remove NAME: remove a table and its entries (no other table's entry may go to it)",
    ),
    (
        "pof_entry_add",
        "pof_entry_add entry TABLE ID [priority N] [match VALUE...] { INSTRUCTION... }: add entries",
    ),
    (
        "pof_entry_modify",
        "pof_entry_modify entry TABLE ID ...: replace entries (by table and id)",
    ),
    (
        "pof_entry_remove",
        "pof_entry_remove TABLE ID: remove an entry",
    ),
];

impl Program {
    /// Compiles a POF configuration (named `name` in messages).
    pub fn from_pof(name: &str, config: Config) -> Result<Program, String> {
        let g = koi_pof::generate(&config).map_err(|e| e.render(name))?;
        let compiled =
            koi_conformance::compile_str("pof.p4", &g.p4, &koi_syntax::PpOptions::default())
                .map_err(|e| {
                    format!(
                        "{name}: the P4 program generated for this configuration does not compile (a koi bug):\n{}",
                        e.render()
                    )
                })?;
        let header = crate::program::header("pof.p4", &Flags::default());
        let mut p = Program::new("pof.p4".into(), compiled, header);
        p.pof = Some(Arc::new(config));
        Ok(p)
    }

    /// Parses and compiles the POF configuration file at `path`.
    pub fn from_pof_file(path: &Path) -> Result<Program, String> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
        let config = koi_pof::parse(&text).map_err(|e| e.render(&name))?;
        Program::from_pof(&name, config)
    }
}

/// Whether `cmd` is a `pof_*` command.
pub fn is_pof_command(cmd: &str) -> bool {
    POF_COMMANDS.iter().any(|(c, _)| *c == cmd)
}

/// Runs `pof_*` command `cmd` with `args` on `pl`.
pub fn command(pl: &Pipeline, cmd: &str, args: &[&str]) -> Result<String, String> {
    let _edit = crate::lock(&pl.pof_edit);
    let current = if cmd == "pof_load" {
        Arc::new(Config::default())
    } else {
        current(pl)?
    };
    let text = args.join(" ");
    let fragment = |kinds: &[&str]| -> Result<Config, String> {
        if text.trim().is_empty() {
            return Err(format!(
                "{cmd}: give the definitions in the text format (docs/pof.md)"
            ));
        }
        let c = koi_pof::parse(&text).map_err(|e| e.render(cmd))?;
        let has = |k: &str| kinds.contains(&k);
        let wrong = (!c.protocols.is_empty() && !has("protocol"))
            || (!c.metadata.is_empty() && !has("metadata"))
            || (!c.tables.is_empty() && !has("table"))
            || (c.first.is_some() && !has("first"))
            || (!c.entries.is_empty() && !has("entry"))
            || c.cpu_port.is_some()
            || c.counters.is_some()
            || c.meters.is_some();
        if wrong {
            return Err(format!(
                "{cmd} takes only {} definitions (pof_load replaces the whole configuration)",
                kinds.join(", ")
            ));
        }
        Ok(c)
    };
    let mut next = (*current).clone();
    let mut reset = false;
    let what = match cmd {
        "pof_show" => return Ok(show(&current)),
        "pof_p4" => {
            return koi_pof::generate(&current)
                .map(|g| g.p4)
                .map_err(|e| e.render("pof"));
        }
        "pof_load" => {
            let (file, rest) = args.split_first().ok_or("usage: pof_load FILE [--reset]")?;
            match rest {
                [] => {}
                ["--reset"] => reset = true,
                _ => return Err("usage: pof_load FILE [--reset]".into()),
            }
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            next = koi_pof::parse(&text).map_err(|e| e.render(file))?;
            format!("configuration {file} loaded")
        }
        "pof_protocol_add" => {
            let c = fragment(&["protocol", "metadata"])?;
            let n = c.protocols.len() + c.metadata.len();
            next.merge(c, false)?;
            format!("{n} protocols or metadata fields added")
        }
        "pof_table_add" => {
            let c = fragment(&["table", "first"])?;
            let n = c.tables.len();
            next.merge(c, false)?;
            format!("{n} tables added")
        }
        "pof_entry_add" | "pof_entry_modify" => {
            let c = fragment(&["entry"])?;
            let modify = cmd == "pof_entry_modify";
            if modify {
                for e in &c.entries {
                    if !next
                        .entries
                        .iter()
                        .any(|x| x.table == e.table && x.id == e.id)
                    {
                        return Err(format!("no entry {} in table {}", e.id, e.table));
                    }
                }
            }
            let n = c.entries.len();
            next.merge(c, modify)?;
            format!("{n} entries {}", if modify { "modified" } else { "added" })
        }
        "pof_protocol_remove" => match args {
            [name] => {
                next.remove_protocol(name)?;
                format!("protocol {name} removed")
            }
            _ => return Err("usage: pof_protocol_remove NAME".into()),
        },
        "pof_table_remove" => match args {
            [name] => {
                let n = next.remove_table(name)?;
                format!("table {name} removed with its {n} entries")
            }
            _ => return Err("usage: pof_table_remove NAME".into()),
        },
        "pof_entry_remove" => match args {
            [table, id] => {
                let id: u32 = id
                    .parse()
                    .map_err(|_| format!("pof_entry_remove: {id} is not an entry id"))?;
                next.remove_entry(table, id)?;
                format!("entry {id} of table {table} removed")
            }
            _ => return Err("usage: pof_entry_remove TABLE ID".into()),
        },
        _ => return Err(format!("unknown POF command {cmd}")),
    };
    let start = Instant::now();
    let program = Program::from_pof(cmd, next)?;
    let compiled = start.elapsed();
    let report = pl.swap(Arc::new(program), reset)?;
    Ok(format!(
        "pof: {what}; compiled in {:.1} ms\n{report}",
        compiled.as_secs_f64() * 1e3
    ))
}

/// The running POF configuration of `pl` (empty for a pipeline without a program); refused
/// for a pipeline running a P4 program, unless the command replaces it.
fn current(pl: &Pipeline) -> Result<Arc<Config>, String> {
    match pl.image() {
        None => Ok(Arc::new(Config::default())),
        Some(img) => img.program().pof.clone().ok_or_else(|| {
            format!(
                "pipeline {} runs the P4 program {}, not a POF configuration (start koi run --pof, or pof_load a configuration)",
                pl.name(),
                img.program().name
            )
        }),
    }
}

/// `pof_show`: the configuration and how it compiled.
fn show(c: &Config) -> String {
    let mut s = koi_pof::print(c);
    match koi_pof::generate(c) {
        Ok(g) => {
            s.push_str("# compiled tables (cursor in bits):");
            for (t, cur) in &g.layout.cursors {
                s.push_str(&format!(" {t}@{cur}"));
            }
            s.push('\n');
            if !g.layout.unreachable.is_empty() {
                s.push_str(&format!(
                    "# not reachable from the first table (not compiled): {}\n",
                    g.layout.unreachable.join(" ")
                ));
            }
        }
        Err(e) => s.push_str(&format!("# does not compile: {}\n", e.render("pof"))),
    }
    s
}
