//! [`TraceObserver`]: a readable text trace of a run, for `koi trace`.

use crate::observer::{Decision, ExternEvent, InstanceEvent, Observer, TableEvent, TmEvent};
use crate::options::Output;
use koi_ir::{Bits, Role, SlotId};
use std::fmt::Write;

/// Renders every event as a line of text; [`TraceObserver::text`] gives the trace.
#[derive(Clone, Debug, Default)]
pub struct TraceObserver {
    out: String,
    indent: usize,
}

fn hex(b: &Bits) -> String {
    format!("{b}")
}

fn hex_list(v: &[Bits]) -> String {
    v.iter().map(hex).collect::<Vec<_>>().join(", ")
}

fn bytes(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

impl TraceObserver {
    pub fn new() -> TraceObserver {
        TraceObserver::default()
    }

    /// The trace so far.
    pub fn text(&self) -> &str {
        &self.out
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }
}

impl Observer for TraceObserver {
    fn packet_in(&mut self, port: u64, data: &[u8]) {
        self.indent = 0;
        let l = format!(
            "packet in: port {port}, {} bytes: {}",
            data.len(),
            bytes(data)
        );
        self.line(&l);
    }

    fn instance(&mut self, role: Role, ev: &InstanceEvent) {
        self.indent = 0;
        let mut l = match ev.packet_path {
            Some(path) => format!("{} pass: packet_path {path}", role.name()),
            None => format!("{} pass: instance_type {}", role.name(), ev.instance_type),
        };
        if let Some(p) = ev.egress_port {
            let _ = write!(l, ", egress_port {p}");
        }
        match (ev.rid, ev.packet_path) {
            (Some(r), None) => {
                let _ = write!(l, ", rid {r}");
            }
            (Some(r), Some(_)) => {
                let _ = write!(l, ", instance {r}");
            }
            _ => {}
        }
        self.line(&l);
    }

    fn block(&mut self, role: Role, name: &str) {
        self.indent = 1;
        self.line(&format!("[{}] {name}", role.name()));
        self.indent = 2;
    }

    fn parser_state(&mut self, name: &str) {
        self.line(&format!("state {name}"));
    }

    fn extract(&mut self, header: &str, bits: u64) {
        self.line(&format!("  extract {header} ({bits} bits)"));
    }

    fn select(&mut self, keys: &[Bits], case: Option<usize>, next: &str) {
        let c = case.map_or("no case".to_string(), |c| format!("case {c}"));
        self.line(&format!("  select ({}) -> {c} -> {next}", hex_list(keys)));
    }

    fn parser_end(&mut self, error: Option<&str>) {
        match error {
            Some(e) => self.line(&format!("parser error {e}")),
            None => self.line("accept"),
        }
    }

    fn table(&mut self, ev: &TableEvent<'_>) {
        let hit = ev
            .hit
            .map_or("miss".to_string(), |h| format!("hit entry {h}"));
        self.line(&format!(
            "table {} key ({}) -> {hit} -> {}({})",
            ev.name,
            hex_list(ev.keys),
            ev.action_name,
            hex_list(ev.args)
        ));
    }

    fn action(&mut self, name: &str, args: &[Bits]) {
        self.line(&format!("action {name}({})", hex_list(args)));
    }

    fn extern_call(&mut self, ev: &ExternEvent<'_>) {
        let r = ev
            .result
            .map(|r| format!(" -> {}", hex(r)))
            .unwrap_or_default();
        self.line(&format!(
            "extern {}.{}({}){r}",
            ev.name,
            ev.method,
            hex_list(ev.inputs)
        ));
    }

    fn influence(&mut self, _d: Decision, _slot: SlotId, _mask: &Bits) {}

    fn tm(&mut self, ev: &TmEvent) {
        self.indent = 1;
        self.line(&format!("[tm] {ev:?}"));
    }

    fn log(&mut self, msg: &str) {
        self.line(&format!("log: {msg}"));
    }

    fn packet_out(&mut self, out: &Output) {
        self.indent = 0;
        let l = format!(
            "packet out: port {}, {} bytes: {}",
            out.port,
            out.bytes.len(),
            bytes(&out.bytes)
        );
        self.line(&l);
    }
}
