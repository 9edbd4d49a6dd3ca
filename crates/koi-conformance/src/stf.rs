//! Running one STF file against a compiled pipeline, as p4c's runners do (STF.md §1, §4, §5, §7).
//!
//! Packets go through the reference interpreter, or with [`RunOptions::cache`] through the
//! cached datapath ([`koi_datapath::Datapath`]), whose megaflows are invalidated by every
//! table write and CLI command before the next packet.

use koi_datapath::Datapath;
use koi_interp::{InterpError, Interpreter, Outcome};
use koi_ir::{Architecture, Bits, MatchKind, Pattern, Pipeline, TableId};
use koi_state::{ActionSpec, EntrySpec, ManualClock, State};
use koi_stf::{ActionCall, Expected, KeyMatch, Line, Number, Stmt};
use std::collections::{BTreeMap, BTreeSet};

/// Simulated time between two input packets (the interpreter's clock is injectable so that
/// meters and timestamps are deterministic).
const PACKET_GAP_NS: u64 = 1_000;

/// What happened when an STF file ran.
#[derive(Clone, Debug, Default)]
pub struct StfReport {
    /// Packets fed in.
    pub packets_in: usize,
    /// Packets checked against an expectation.
    pub packets_checked: usize,
    /// Why the test failed; empty when it passed.
    pub failures: Vec<String>,
    /// Things worth knowing that do not fail the test (packets to ports the test never names,
    /// CLI commands the switch refused, ignored STF commands).
    pub notes: Vec<String>,
}

impl StfReport {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// How packets are processed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Through the cached datapath instead of the interpreter alone.
    pub cache: bool,
}

/// What processes packets.
enum Engine<'p> {
    Interp(Box<Interpreter<'p>>),
    Cached(Box<Datapath<'p>>),
}

impl Engine<'_> {
    fn process(
        &mut self,
        state: &mut State,
        data: &[u8],
        port: u64,
        clock: &ManualClock,
    ) -> Result<Outcome, InterpError> {
        match self {
            Engine::Interp(i) => i.process(state, data, port, clock),
            Engine::Cached(d) => d.process(state, data, port, clock),
        }
    }

    fn on_table_write(&mut self, t: TableId) {
        if let Engine::Cached(d) = self {
            d.on_table_write(t);
        }
    }

    fn invalidate_all(&mut self) {
        if let Engine::Cached(d) = self {
            d.invalidate_all();
        }
    }
}

/// Runs `lines` (a parsed STF file) against `pipeline` with the interpreter.
pub fn run(pipeline: &Pipeline, lines: &[Line]) -> StfReport {
    run_with(pipeline, lines, &RunOptions::default())
}

/// Runs `lines` against `pipeline`, processing packets as `opts` says.
pub fn run_with(pipeline: &Pipeline, lines: &[Line], opts: &RunOptions) -> StfReport {
    let mut r = StfReport::default();
    let mut state = match State::new(pipeline) {
        Ok(s) => s,
        Err(e) => {
            r.failures
                .push(format!("cannot build the switch state: {e}"));
            return r;
        }
    };
    let engine = match opts.cache {
        false => Interpreter::new(pipeline).map(|i| Engine::Interp(Box::new(i))),
        true => Datapath::new(pipeline).map(|d| Engine::Cached(Box::new(d))),
    };
    let mut interp = match engine {
        Ok(i) => i,
        Err(e) => {
            r.failures.push(format!("cannot run this pipeline: {e}"));
            return r;
        }
    };
    let mut run = Run {
        arch: pipeline.arch,
        state: &mut state,
        clock: ManualClock::new(0),
        named_ports: named_ports(lines),
        received: BTreeMap::new(),
        expected: BTreeMap::new(),
        report: &mut r,
    };
    // p4c's uBPF and eBPF runners compile every table write into the program's setup, before
    // any packet.
    let ubpf = bpf(pipeline.arch);
    if ubpf {
        for l in lines.iter().filter(|l| is_table_write(&l.stmt)) {
            run.statement(l, &mut interp);
        }
    }
    for l in lines.iter().filter(|l| !(ubpf && is_table_write(&l.stmt))) {
        run.statement(l, &mut interp);
    }
    run.compare();
    r
}

/// The switch state after the control-plane statements of `lines` (table writes and CLI
/// commands; packets and expectations are skipped), with the problems met on the way.
pub fn prepare(pipeline: &Pipeline, lines: &[Line]) -> Result<(State, StfReport), String> {
    let mut r = StfReport::default();
    let mut state = State::new(pipeline).map_err(|e| e.to_string())?;
    let mut interp = Engine::Interp(Box::new(
        Interpreter::new(pipeline).map_err(|e| e.to_string())?,
    ));
    let mut run = Run {
        arch: pipeline.arch,
        state: &mut state,
        clock: ManualClock::new(0),
        named_ports: BTreeSet::new(),
        received: BTreeMap::new(),
        expected: BTreeMap::new(),
        report: &mut r,
    };
    for l in lines {
        if matches!(
            l.stmt,
            Stmt::Add { .. } | Stmt::SetDefault { .. } | Stmt::Cli { .. }
        ) {
            run.statement(l, &mut interp);
        }
    }
    Ok((state, r))
}

fn is_table_write(s: &Stmt) -> bool {
    matches!(s, Stmt::Add { .. } | Stmt::SetDefault { .. })
}

/// The switch has exactly the ports named in `packet` or `expect` lines.
fn named_ports(lines: &[Line]) -> BTreeSet<u64> {
    lines
        .iter()
        .filter_map(|l| match &l.stmt {
            Stmt::Packet { port, .. } | Stmt::Expect { port, .. } => Some(*port),
            _ => None,
        })
        .collect()
}

struct Run<'a> {
    arch: Architecture,
    state: &'a mut State,
    clock: ManualClock,
    named_ports: BTreeSet<u64>,
    received: BTreeMap<u64, Vec<Vec<u8>>>,
    expected: BTreeMap<u64, Vec<(u32, Expected)>>,
    report: &'a mut StfReport,
}

impl Run<'_> {
    fn statement(&mut self, l: &Line, interp: &mut Engine<'_>) {
        let fail =
            |r: &mut StfReport, msg: String| r.failures.push(format!("line {}: {msg}", l.line));
        match &l.stmt {
            Stmt::Add {
                table,
                priority,
                keys,
                action,
            } => match self.add(table, *priority, keys, action) {
                Ok(t) => interp.on_table_write(t),
                Err(e) => fail(self.report, format!("add {table}: {e}")),
            },
            Stmt::SetDefault { table, action } => match self.set_default(table, action) {
                Ok(t) => interp.on_table_write(t),
                Err(e) => fail(self.report, format!("setdefault {table}: {e}")),
            },
            Stmt::Packet { port, data } => self.packet(l.line, *port, data, interp),
            Stmt::Expect { port, expected } => self
                .expected
                .entry(*port)
                .or_default()
                .push((l.line, expected.clone())),
            Stmt::Cli { line, .. } => {
                self.cli(l.line, line);
                // A CLI command may change any table, profile, value set or session.
                interp.invalidate_all();
            }
            Stmt::NoPacket => fail(
                self.report,
                "no_packet is not supported by p4c's runners (the bmv2 runner fails on it)".into(),
            ),
            Stmt::Wait | Stmt::RemoveAll | Stmt::CheckCounter { .. } => self
                .report
                .notes
                .push(format!("line {}: ignored, as p4c's runners do", l.line)),
        }
    }

    fn packet(&mut self, line: u32, port: u64, data: &[u8], interp: &mut Engine<'_>) {
        self.report.packets_in += 1;
        let outcome = interp.process(self.state, data, port, &self.clock);
        self.clock.advance_ns(PACKET_GAP_NS);
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                self.report.failures.push(format!(
                    "line {line}: the packet could not be processed: {e}"
                ));
                return;
            }
        };
        if let Some(why) = &outcome.report.aborted {
            self.report
                .notes
                .push(format!("line {line}: processing stopped early: {why}"));
        }
        for out in outcome.outputs {
            if self.named_ports.contains(&out.port) {
                self.received.entry(out.port).or_default().push(out.bytes);
            } else {
                self.report.notes.push(format!(
                    "line {line}: a packet went to port {}, which the test never names (not checked)",
                    out.port
                ));
            }
        }
    }

    fn cli(&mut self, line: u32, text: &str) {
        let result = koi_control::command::parse(text)
            .map_err(|e| e.to_string())
            .and_then(|c| match c {
                Some(c) => koi_state::cli::execute(self.state, &c).map_err(|e| e.to_string()),
                None => Ok(String::new()),
            });
        // simple_switch_CLI reports a refused command and goes on; so does the test.
        if let Err(e) = result {
            self.report
                .notes
                .push(format!("line {line}: `{text}` was refused: {e}"));
        }
    }

    /// Compares, port by port, what came out with what was expected.
    fn compare(&mut self) {
        for port in self.named_ports.clone() {
            let got = self.received.remove(&port).unwrap_or_default();
            let want = self.expected.remove(&port).unwrap_or_default();
            for i in 0..got.len().max(want.len()) {
                match (want.get(i), got.get(i)) {
                    (Some((line, e)), Some(g)) => {
                        self.report.packets_checked += 1;
                        if let Err(m) = e.compare(g) {
                            self.report.failures.push(format!(
                                "port {port}, packet {} (expect on line {line}): {m}\n    expected {e}\n    got      {}",
                                i + 1,
                                hex(g)
                            ));
                        }
                    }
                    (Some((line, e)), None) => self.report.failures.push(format!(
                        "port {port}: expected packet {} (line {line}) never came: {e}",
                        i + 1
                    )),
                    (None, Some(g)) => self.report.failures.push(format!(
                        "port {port}: unexpected packet {}: {}",
                        i + 1,
                        hex(g)
                    )),
                    (None, None) => {}
                }
            }
        }
    }

    fn add(
        &mut self,
        table: &str,
        priority: Option<u64>,
        keys: &[KeyMatch],
        action: &ActionCall,
    ) -> Result<TableId, String> {
        let t = self.table(table)?;
        let schema = self
            .state
            .table_by_id(t)
            .ok_or("unknown table")?
            .schema
            .clone();
        let mut named = Vec::new();
        for k in keys {
            let i = self.key_index(t, &k.name)?;
            let ks = &schema.keys[i];
            let mut p =
                pattern(k, &ks.kind, ks.width).map_err(|e| format!("key {}: {e}", k.name))?;
            // p4c's eBPF runner writes a `v/len` key into the LPM trie's key as a host-order
            // (little-endian) integer, where the trie holds network order: `0x010a/16` is
            // 10.1.0.0/16.
            if matches!(self.arch, Architecture::Ebpf | Architecture::Xdp)
                && k.prefix_len.is_some()
                && ks.width.is_multiple_of(8)
                && let Pattern::Prefix { value, .. } = &mut p
            {
                let mut b = Vec::new();
                value.with_be_bytes(|x| b.extend_from_slice(x));
                b.reverse();
                *value = Bits::from_be_bytes(ks.width, &b);
            }
            named.push((ks.name.clone(), p));
        }
        let patterns = self
            .state
            .named_keys(t, &named)
            .map_err(|e| e.to_string())?;
        let needs_priority = schema.keys.iter().any(|k| {
            matches!(
                k.kind,
                MatchKind::Ternary | MatchKind::Optional | MatchKind::Range
            )
        });
        let priority = match (needs_priority, priority) {
            (false, _) => None,
            (true, Some(p)) => Some(u32::try_from(p).map_err(|_| "priority is too large")?),
            (true, None) if bpf(self.arch) => Some(1),
            (true, None) => {
                return Err(
                    "the table has ternary, range or optional keys: the entry needs a priority"
                        .into(),
                );
            }
        };
        let action = self.action_spec(t, action)?;
        let spec = EntrySpec {
            keys: patterns,
            action,
            priority,
            timeout_ns: None,
        };
        self.state
            .table_add_id(t, spec)
            .map(|_| t)
            .map_err(|e| e.to_string())
    }

    fn set_default(&mut self, table: &str, action: &ActionCall) -> Result<TableId, String> {
        let t = self.table(table)?;
        let name = self
            .state
            .table_by_id(t)
            .ok_or("unknown table")?
            .name()
            .to_string();
        let spec = self.action_spec(t, action)?;
        self.state
            .table_set_default(&name, spec)
            .map(|()| t)
            .map_err(|e| e.to_string())
    }

    /// A table by STF name: p4c's suffix rule, or for uBPF the generated C identifier.
    fn table(&self, name: &str) -> Result<TableId, String> {
        match self.state.table_id(name) {
            Ok(t) => Ok(t),
            Err(e) => {
                if bpf(self.arch)
                    && let Some(t) = self
                        .state
                        .tables()
                        .find(|t| c_ident(t.name()) == name)
                        .map(|t| t.schema.id)
                {
                    return Ok(t);
                }
                Err(e.to_string())
            }
        }
    }

    fn key_index(&self, t: TableId, name: &str) -> Result<usize, String> {
        match self.state.key_field(t, name) {
            Ok(i) => Ok(i),
            Err(e) => {
                // eBPF: `key.fieldN`, the table's key N.
                if matches!(self.arch, Architecture::Ebpf | Architecture::Xdp)
                    && let Some(n) = name.strip_prefix("key.field")
                    && let Ok(i) = n.parse::<usize>()
                    && self
                        .state
                        .table_by_id(t)
                        .is_some_and(|ts| i < ts.schema.keys.len())
                {
                    return Ok(i);
                }
                if self.arch == Architecture::Ubpf
                    && let Some(field) = name.strip_prefix("key.")
                    && let Some(ts) = self.state.table_by_id(t)
                    && let Some(i) = ts
                        .schema
                        .keys
                        .iter()
                        .position(|k| c_ident(&k.name) == field)
                {
                    return Ok(i);
                }
                Err(e.to_string())
            }
        }
    }

    fn action_spec(&self, t: TableId, call: &ActionCall) -> Result<ActionSpec, String> {
        let a = match self.state.table_action_id(t, &call.name) {
            Ok(a) => a,
            Err(e) => self
                .ubpf_action(t, &call.name)
                .ok_or_else(|| e.to_string())?,
        };
        let schema = self.state.action_schema(a).ok_or("unknown action")?;
        let mut args = Vec::with_capacity(schema.params.len());
        for (pname, width) in &schema.params {
            let Some((_, v)) = call.args.iter().find(|(n, _)| n == pname) else {
                // p4c's eBPF runner fills a C struct: a parameter not given is 0.
                if matches!(self.arch, Architecture::Ebpf | Architecture::Xdp) {
                    args.push(Bits::zero(*width));
                    continue;
                }
                return Err(format!(
                    "action {}: parameter '{pname}' is not given (every parameter must be)",
                    schema.name
                ));
            };
            let bytes = v
                .exact(*width)
                .map_err(|e| format!("action {} parameter {pname}: {e}", schema.name))?;
            args.push(Bits::from_be_bytes(*width, &bytes));
        }
        if let Some((n, _)) = call
            .args
            .iter()
            .find(|(n, _)| !schema.params.iter().any(|(p, _)| p == n))
        {
            return Err(format!("action {} has no parameter '{n}'", schema.name));
        }
        Ok(ActionSpec::action(&schema.name, args))
    }

    fn ubpf_action(&self, t: TableId, name: &str) -> Option<koi_ir::ActionId> {
        if !bpf(self.arch) {
            return None;
        }
        // (The eBPF back end names NoAction `_NoAction`.)
        let name = match name {
            "_NoAction" => "NoAction",
            n => n,
        };
        let ts = self.state.table_by_id(t)?;
        ts.schema.actions.iter().map(|(a, _)| *a).find(|a| {
            self.state
                .action_schema(*a)
                .is_some_and(|s| c_ident(&s.name) == name)
        })
    }
}

/// p4c's uBPF back end names things by C identifiers: `pipe.filter_tbl` is `pipe_filter_tbl`.
/// Whether p4c runs the architecture's STF tests through its eBPF-style runners (table
/// writes first, C identifiers for names).
fn bpf(arch: Architecture) -> bool {
    matches!(
        arch,
        Architecture::Ubpf | Architecture::Ebpf | Architecture::Xdp
    )
}

fn c_ident(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The match pattern an STF key value stands for (STF.md §4.1: masks and prefix lengths come
/// from the digits written).
fn pattern(k: &KeyMatch, kind: &MatchKind, width: u32) -> Result<Pattern, String> {
    let bits = |b: Vec<u8>| Bits::from_be_bytes(width, &b);
    let v: &Number = &k.value;
    match (kind, k.prefix_len) {
        (MatchKind::Lpm, Some(len)) => {
            if len > width {
                return Err(format!("prefix length {len} is longer than {width} bits"));
            }
            Ok(Pattern::Prefix {
                value: bits(v.exact(width).map_err(|e| e.to_string())?),
                len,
            })
        }
        (_, Some(_)) => Err("a /length is only meaningful for an lpm key".into()),
        (MatchKind::Exact, None) => Ok(Pattern::Exact(bits(
            v.exact(width).map_err(|e| e.to_string())?,
        ))),
        (MatchKind::Ternary | MatchKind::Optional, None) => {
            let (value, mask) = v.ternary(width).map_err(|e| e.to_string())?;
            Ok(Pattern::Mask {
                value: bits(value),
                mask: bits(mask),
            })
        }
        (MatchKind::Lpm, None) => {
            let (value, len) = v.lpm(width).map_err(|e| e.to_string())?;
            Ok(Pattern::Prefix {
                value: bits(value),
                len,
            })
        }
        (MatchKind::Range, None) => {
            Err("range keys cannot be written in STF (p4c's bmv2 runner rejects them)".into())
        }
        (other, None) => Err(format!("match kind {other:?} cannot be written in STF")),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}
