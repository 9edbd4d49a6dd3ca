//! POF pipelines in the runtime: [`Program::from_pof`] compiles a POF configuration (crate
//! `koi-pof`) into a program whose tables have no entries of their own, and every image of it
//! starts with the configuration's entries written to its tables
//! ([`koi_pof::Generated::writes`], installed by [`Pipeline::verify`]).
//!
//! The `pof_*` commands of `koi ctl` edit the configuration of the pipeline's running program
//! and compile the result to P4 (no frontend run). When the program is the running one (the
//! change left the structure as it was: [`koi_pof::Generated::same_structure`], the common
//! case of entries added, modified or removed), the change is applied as **table writes**:
//! the difference between the two configurations' writes, in one [`Image::update`] (between
//! two batches of every poll thread, the caches told as for P4Runtime's table writes), undone
//! whole if one write is refused. Otherwise the program is compiled and swapped in with the
//! state carried over ([`Pipeline::swap`]), exactly as `koi ctl load` applies a P4 program:
//! between two batches, with counters, meters, groups and sessions kept, the POF tables
//! filled from the new configuration.
//!
//! The configuration lives in the running [`Program`] ([`Program::pof`]), so it is swapped
//! with the pipeline it describes, and is replaced there after a write. Edits of one
//! pipeline are serialised; an edit that does not parse, does not compile, cannot be written
//! or cannot carry the state over changes nothing.

use crate::image::Image;
use crate::pipeline::Pipeline;
use crate::program::{Flags, Program};
use koi_pof::{Config, Generated, TableWrite};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// A POF program's configuration and what it generated (the entries' writes among it).
#[derive(Clone, Debug)]
pub struct Pof {
    pub config: Arc<Config>,
    pub generated: Arc<Generated>,
}

/// Where a POF [`Program`] keeps its [`Pof`], replaced when entry changes are written to the
/// running image (the program itself stays).
#[derive(Debug)]
pub struct PofSlot(RwLock<Pof>);

impl PofSlot {
    pub fn new(pof: Pof) -> PofSlot {
        PofSlot(RwLock::new(pof))
    }

    /// The configuration and its compilation as they are now.
    pub fn get(&self) -> Pof {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, pof: Pof) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = pof;
    }
}

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
        "pof_table_add table NAME exact|lpm|ternary [size N] { key FIELD... } [miss NAME { INSTRUCTION... }] [first NAME]: add tables",
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
    (
        "pof_miss_set",
        "pof_miss_set miss TABLE { INSTRUCTION... }: set (or replace) what a table runs for a packet no entry matches",
    ),
    (
        "pof_miss_remove",
        "pof_miss_remove TABLE: a miss of the table does nothing again",
    ),
];

impl Program {
    /// Compiles a POF configuration (named `name` in messages).
    pub fn from_pof(name: &str, config: Config) -> Result<Program, String> {
        let g = koi_pof::generate(&config).map_err(|e| e.render(name))?;
        Program::from_generated(name, config, g)
    }

    /// Compiles what [`koi_pof::generate`] made of `config`.
    fn from_generated(name: &str, config: Config, g: Generated) -> Result<Program, String> {
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
        p.pof = Some(PofSlot::new(Pof {
            config: Arc::new(config),
            generated: Arc::new(g),
        }));
        Ok(p)
    }

    /// Parses and compiles the POF configuration file at `path`.
    pub fn from_pof_file(path: &Path) -> Result<Program, String> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
        let config = koi_pof::parse(&text).map_err(|e| e.render(&name))?;
        Program::from_pof(&name, config)
    }

    /// The POF configuration and its compilation, for a POF program.
    pub fn pof(&self) -> Option<Pof> {
        self.pof.as_ref().map(PofSlot::get)
    }

    /// The POF configuration as it is now, for a POF program.
    pub fn pof_config(&self) -> Option<Arc<Config>> {
        self.pof().map(|p| p.config)
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
            || (!c.misses.is_empty() && !has("miss"))
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
            let c = fragment(&["table", "first", "miss"])?;
            let n = c.tables.len();
            next.merge(c, false)?;
            format!("{n} tables added")
        }
        "pof_miss_set" => {
            let c = fragment(&["miss"])?;
            let n = c.misses.len();
            next.merge(c, true)?;
            format!("{n} misses set")
        }
        "pof_miss_remove" => match args {
            [table] => {
                next.remove_miss(table)?;
                format!("the miss of table {table} removed")
            }
            _ => return Err("usage: pof_miss_remove TABLE".into()),
        },
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
    apply(pl, cmd, &what, next, reset)
}

/// Replaces the POF configuration of `pl` with `config` (as `pof_load` does with a file's;
/// `reset`: the state starts afresh), for a caller that holds the configuration already (the
/// gRPC POF channel). `name` names it in messages.
pub fn load_config(
    pl: &Pipeline,
    name: &str,
    config: Config,
    reset: bool,
) -> Result<String, String> {
    let _edit = crate::lock(&pl.pof_edit);
    apply(
        pl,
        name,
        &format!("configuration {name} loaded"),
        config,
        reset,
    )
}

/// Puts configuration `next` in place on `pl` (whose edit lock the caller holds): as table
/// writes when it runs the same program as the running one (and `reset` is not asked),
/// else compiled and swapped in. `cmd` names the change in messages, `what` says what it did.
fn apply(
    pl: &Pipeline,
    cmd: &str,
    what: &str,
    next: Config,
    reset: bool,
) -> Result<String, String> {
    let start = Instant::now();
    let g = koi_pof::generate(&next).map_err(|e| e.render(cmd))?;
    // The running program, when it is this configuration's: the change may be written.
    let running = pl
        .image()
        .and_then(|img| img.program().pof().map(|p| (img, p)));
    if let Some((img, pof)) = running.filter(|(_, p)| !reset && p.generated.same_structure(&g)) {
        let n = write(&img, &pof.generated.writes, &g.writes)?;
        let slot = img.program().pof.as_ref().expect("a POF program");
        slot.set(Pof {
            config: Arc::new(next),
            generated: Arc::new(g),
        });
        return Ok(format!(
            "pof: {what}; written to the running program (generation {}, not recompiled) as {n} table writes in {:.1} ms\n",
            img.generation(),
            start.elapsed().as_secs_f64() * 1e3
        ));
    }
    let program = Program::from_generated(cmd, next, g)?;
    let compiled = start.elapsed();
    let report = pl.swap(Arc::new(program), reset)?;
    Ok(format!(
        "pof: {what}; recompiled in {:.1} ms\n{report}",
        compiled.as_secs_f64() * 1e3
    ))
}

/// One table write of [`write`], and how to undo it.
enum Undo {
    Added(koi_ir::TableId, u32),
    Deleted(koi_ir::TableId, koi_state::table::Entry),
    Modified(koi_ir::TableId, koi_state::table::Entry),
    /// A table's default action (its miss instructions) set or reset: the one before.
    Default(koi_ir::TableId, koi_state::table::EntryAction),
}

/// Changes the POF tables of `img` from the entries of `old` to those of `new` (writes of one
/// program): the entries gone or whose match changed are deleted, those whose action or
/// arguments changed modified, the new ones added, all in one update of the state. If one
/// is refused, those done are undone (handles and all) and nothing changed. Returns how many
/// writes it made.
fn write(img: &Image, old: &[TableWrite], new: &[TableWrite]) -> Result<usize, String> {
    type Ids<'a> = HashMap<(&'a str, u32, bool), usize, foldhash::fast::RandomState>;
    fn by_id(ws: &[TableWrite]) -> Ids<'_> {
        let mut ids = Ids::with_capacity_and_hasher(ws.len(), Default::default());
        ids.extend(
            ws.iter()
                .enumerate()
                .map(|(i, w)| ((&*w.pof_table, w.id, w.miss), i)),
        );
        ids
    }
    let (old_ids, new_ids) = (by_id(old), by_id(new));
    let same_match = |a: &TableWrite, b: &TableWrite| a.keys == b.keys && a.priority == b.priority;
    let mut deletes = Vec::new();
    let mut modifies = Vec::new();
    for w in old {
        match new_ids
            .get(&(&*w.pof_table, w.id, w.miss))
            .map(|&i| &new[i])
        {
            Some(n) if same_match(w, n) => {
                if n.action != w.action || n.args != w.args {
                    modifies.push(n);
                }
            }
            _ => deletes.push(w),
        }
    }
    let adds: Vec<&TableWrite> = new
        .iter()
        .filter(|n| match old_ids.get(&(&*n.pof_table, n.id, n.miss)) {
            Some(&i) => !same_match(&old[i], n),
            None => true,
        })
        .collect();
    let n = deletes.len() + modifies.len() + adds.len();
    if n == 0 {
        return Ok(0);
    }
    let result = img.update(|state, changes| {
        let mut undo = Vec::new();
        let mut apply = || -> Result<(), String> {
            let find = |state: &koi_state::State, w: &TableWrite| {
                let t = state.table_id(&w.table).map_err(|e| e.to_string())?;
                let h = state
                    .table_find(t, &w.keys, w.priority)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| {
                        format!(
                            "{}: not in table {} (changed by another client?)",
                            w.what(),
                            w.table
                        )
                    })?;
                let entry = state
                    .table_entry(&w.table, h)
                    .map_err(|e| e.to_string())?
                    .clone();
                Ok::<_, String>((t, h, entry))
            };
            // A miss is its table's default action: set, or reset when gone.
            let default = |state: &mut koi_state::State,
                           w: &TableWrite,
                           set: bool|
             -> Result<(koi_ir::TableId, Undo), String> {
                let t = state.table_id(&w.table).map_err(|e| e.to_string())?;
                let old = state
                    .table(&w.table)
                    .map_err(|e| e.to_string())?
                    .default_action()
                    .clone();
                let r = if set {
                    state.table_set_default(&w.table, w.action_spec())
                } else {
                    state.table_reset_default(&w.table)
                };
                r.map_err(|e| format!("{}: {e}", w.what()))?;
                Ok((t, Undo::Default(t, old)))
            };
            // The caches are told as for P4Runtime's writes: an entry changed or gone drops
            // the flows it gave, a default action or an entry added to an exact table the
            // flows that missed, another added entry the table's flows.
            let index = |h: u32| koi_state::handles::split_handle(h).0;
            for w in &deletes {
                if w.miss {
                    let (t, u) = default(state, w, false)?;
                    changes.misses(t);
                    undo.push(u);
                    continue;
                }
                let (t, h, entry) = find(state, w)?;
                state
                    .table_delete(&w.table, h)
                    .map_err(|e| format!("{}: {e}", w.what()))?;
                changes.entry(t, index(h));
                undo.push(Undo::Deleted(t, entry));
            }
            for w in modifies.iter().chain(adds.iter()).filter(|w| w.miss) {
                let (t, u) = default(state, w, true)?;
                changes.misses(t);
                undo.push(u);
            }
            for w in modifies.iter().filter(|w| !w.miss) {
                let (t, h, entry) = find(state, w)?;
                state
                    .table_modify(&w.table, h, w.spec().action)
                    .map_err(|e| format!("{}: {e}", w.what()))?;
                changes.entry(t, index(h));
                undo.push(Undo::Modified(t, entry));
            }
            for w in adds.iter().filter(|w| !w.miss) {
                let t = state.table_id(&w.table).map_err(|e| e.to_string())?;
                let h = state
                    .table_add_id(t, w.spec())
                    .map_err(|e| format!("{}: {e}", w.what()))?;
                if w.keys
                    .iter()
                    .all(|k| matches!(k, koi_ir::Pattern::Exact(_)))
                {
                    changes.misses(t);
                } else {
                    changes.table(t);
                }
                undo.push(Undo::Added(t, h));
            }
            Ok(())
        };
        let r = apply();
        if r.is_err() {
            for u in undo.into_iter().rev() {
                // Exact undos of what was just done under the same lock: they cannot fail.
                let _ = match u {
                    Undo::Added(t, h) => state.table_unadd(t, h).map(drop),
                    Undo::Deleted(t, e) => state.table_restore(t, e),
                    Undo::Modified(t, e) => state.table_replace(t, e),
                    Undo::Default(t, a) => state.table_restore_default(t, a),
                };
            }
        }
        r
    });
    match result {
        Ok(r) => r.map(|()| n),
        Err(_) => Err(
            "the pipeline's program was replaced during the change (nothing changed): try again"
                .into(),
        ),
    }
}

/// The running POF configuration of `pl` (empty for a pipeline without a program); refused
/// for a pipeline running a P4 program, unless the command replaces it.
fn current(pl: &Pipeline) -> Result<Arc<Config>, String> {
    match pl.image() {
        None => Ok(Arc::new(Config::default())),
        Some(img) => img.program().pof_config().ok_or_else(|| {
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
