//! The human-readable text of a pipeline (`koi compile --emit ir`): `impl Display for
//! Pipeline`, one section per kind of object, every slot, header, table and action by name.
//!
//! The text is for people and golden tests, not for parsing back. Blocks print as `bbN:`
//! labels; a body of one block ending in `return` (most actions) prints as plain statements.

mod code;

use crate::control::{ActionParam, Body};
use crate::externs::ExternKind;
use crate::ids::{HeaderId, SlotId};
use crate::matching::Pattern;
use crate::phv::SlotKind;
use crate::pipeline::Pipeline;
use crate::table::{ActionCall, ActionScope, Table};
use crate::types::{Annotation, Member, Preamble, Ty, TypeDecl};
use code::Names;
use std::fmt::{self, Write as _};

impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write_header(&mut out)?;
        self.write_phv(&mut out)?;
        self.write_parsers(&mut out)?;
        self.write_controls(&mut out)?;
        self.write_actions(&mut out)?;
        self.write_tables(&mut out)?;
        self.write_externs(&mut out)?;
        f.write_str(&out)
    }
}

/// `@a @b(x) ` then `@id(N) ` for a preamble, or nothing.
fn annotations(p: &Preamble) -> String {
    let mut s = String::new();
    if let Some(id) = p.id {
        s.push_str(&format!("@id({id}) "));
    }
    for a in &p.annotations {
        s.push_str(&format!("{a} "));
    }
    s
}

fn annotation_list(list: &[Annotation]) -> String {
    list.iter().map(|a| format!("{a} ")).collect()
}

/// `struct s_t { a: bit<8>, b: h_t }`, `enum E { A, B }`, `type T = bit<9>`.
fn type_decl_text(d: &TypeDecl) -> String {
    let members = |ms: &[Member]| -> String {
        let ms: Vec<String> = ms.iter().map(|m| format!("{}: {}", m.name, m.ty)).collect();
        ms.join(", ")
    };
    match d {
        TypeDecl::Struct {
            name, members: ms, ..
        } => format!("struct {name} {{ {} }}", members(ms)),
        TypeDecl::Header {
            name, members: ms, ..
        } => format!("header {name} {{ {} }}", members(ms)),
        TypeDecl::HeaderUnion {
            name, members: ms, ..
        } => {
            format!("header_union {name} {{ {} }}", members(ms))
        }
        TypeDecl::Enum { name, members } => format!("enum {name} {{ {} }}", members.join(", ")),
        TypeDecl::SerEnum { name, members } => {
            let ms: Vec<String> = members.iter().map(|(n, v)| format!("{n} = {v}")).collect();
            format!("enum {name} {{ {} }}", ms.join(", "))
        }
        TypeDecl::NewType {
            name,
            ty,
            translation,
            ..
        } => {
            let tr = translation.as_ref().map_or(String::new(), |t| {
                let sdn = t
                    .sdn_bitwidth
                    .map_or("string".to_string(), |w| format!("bit<{w}>"));
                format!(" @p4runtime_translation({:?}, {sdn})", t.uri)
            });
            format!("type {name} = {ty}{tr}")
        }
    }
}

fn ty_text(ty: Ty, signed: bool) -> String {
    match ty {
        Ty::Bits(w) if signed => format!("int<{w}>"),
        _ => ty.to_string(),
    }
}

fn params_text(params: &[ActionParam]) -> String {
    let ps: Vec<String> = params
        .iter()
        .map(|p| {
            format!(
                "{}{} {}",
                annotation_list(&p.annotations),
                ty_text(p.ty, p.signed),
                p.name
            )
        })
        .collect();
    ps.join(", ")
}

impl Pipeline {
    fn write_header(&self, out: &mut String) -> fmt::Result {
        writeln!(out, "// koi IR, architecture {}", self.arch.name())?;
        let binds: Vec<String> = self
            .package
            .iter()
            .map(|(role, b)| format!("{} = {}", role.name(), self.block_name(*b).unwrap_or("?")))
            .collect();
        writeln!(
            out,
            "{}package({})",
            annotation_list(&self.annotations),
            binds.join(", ")
        )?;
        let errs: Vec<String> = self
            .errors
            .iter()
            .enumerate()
            .map(|(i, e)| format!("{e} = {i}"))
            .collect();
        writeln!(
            out,
            "error bit<{}> {{ {} }}",
            self.error_width,
            errs.join(", ")
        )?;
        writeln!(out, "match_kind {{ {} }}", self.match_kinds.join(", "))?;
        for d in &self.types.decls {
            writeln!(out, "{}", type_decl_text(d))?;
        }
        Ok(())
    }

    fn write_phv(&self, out: &mut String) -> fmt::Result {
        writeln!(out, "\nphv {} bits {{", self.phv.width)?;
        for (id, slot) in self.phv.slots.iter() {
            if let Some(h) = self.first_field_of(id) {
                self.write_header_line(out, h)?;
            }
            let (indent, kind) = match slot.kind {
                SlotKind::Local => ("", "  // local"),
                SlotKind::Temp => ("", "  // temp"),
                SlotKind::Metadata | SlotKind::NextIndex(_) => ("", ""),
                _ => ("  ", ""),
            };
            let ty = ty_text(slot.ty, slot.signed);
            writeln!(
                out,
                "  {indent}@{:<5} {ty:<11} {}{kind}",
                slot.offset, slot.name
            )?;
        }
        for (name, slot) in &self.intrinsics {
            writeln!(out, "  intrinsic {name} = {}", self.names(&[]).slot(*slot))?;
        }
        for l in self.field_lists.values() {
            let slots: Vec<String> = l.slots.iter().map(|s| self.names(&[]).slot(*s)).collect();
            writeln!(out, "  field_list {} = {{ {} }}", l.index, slots.join(", "))?;
        }
        writeln!(out, "}}")
    }

    /// The header whose first field is `slot`.
    fn first_field_of(&self, slot: SlotId) -> Option<HeaderId> {
        match self.phv.slots.get(slot)?.kind {
            SlotKind::HeaderField(h) => {
                (self.phv.headers.get(h)?.fields.first() == Some(&slot)).then_some(h)
            }
            _ => None,
        }
    }

    fn write_header_line(&self, out: &mut String, h: HeaderId) -> fmt::Result {
        let hdr = &self.phv.headers[h];
        if let Some((s, 0)) = hdr.stack
            && let Some(stack) = self.phv.stacks.get(s)
        {
            writeln!(
                out,
                "  stack {}: {}[{}]",
                stack.name,
                stack.type_name,
                stack.elems.len()
            )?;
        }
        if let Some(u) = hdr.union
            && let Some(union) = self.phv.unions.get(u)
            && union.members.first() == Some(&h)
        {
            writeln!(out, "  union {}: {}", union.name, union.type_name)?;
        }
        let stage = hdr
            .stage
            .map_or(String::new(), |n| format!(" @koi_stage({n})"));
        writeln!(
            out,
            "  header {}: {} ({} bits){stage}",
            hdr.name, hdr.type_name, hdr.width
        )
    }

    fn names<'a>(&'a self, params: &'a [ActionParam]) -> Names<'a> {
        Names { p: self, params }
    }

    fn write_body(&self, out: &mut String, body: &Body, params: &[ActionParam]) -> fmt::Result {
        let n = self.names(params);
        if let Some(stmts) = body.straight_line() {
            for s in stmts {
                writeln!(out, "  {}", n.stmt(s))?;
            }
            return Ok(());
        }
        for (id, block) in body.blocks.iter() {
            let entry = if id == body.entry { "  // entry" } else { "" };
            writeln!(out, "  {id}:{entry}")?;
            for s in &block.stmts {
                writeln!(out, "    {}", n.stmt(s))?;
            }
            match &block.term {
                Some(t) => writeln!(out, "    {}", n.term(t))?,
                None => writeln!(out, "    <unterminated>")?,
            }
        }
        Ok(())
    }

    fn write_parsers(&self, out: &mut String) -> fmt::Result {
        let n = self.names(&[]);
        for p in self.parsers.values() {
            writeln!(
                out,
                "\n{}parser {} {{",
                annotations(&p.preamble),
                p.preamble.name
            )?;
            for (id, st) in p.states.iter() {
                let start = if id == p.start && st.name != "start" {
                    "  // start"
                } else {
                    ""
                };
                writeln!(out, "  state {} {{{start}", st.name)?;
                for s in &st.stmts {
                    writeln!(out, "    {}", n.stmt(s))?;
                }
                self.write_transition(out, p, st.transition.as_ref())?;
                writeln!(out, "  }}")?;
            }
            writeln!(out, "}}")?;
        }
        Ok(())
    }

    fn write_transition(
        &self,
        out: &mut String,
        p: &crate::parser::Parser,
        t: Option<&crate::parser::Transition>,
    ) -> fmt::Result {
        use crate::parser::{Keyset, Target, Transition};
        let n = self.names(&[]);
        let target = |t: &Target| match t {
            Target::Accept => "accept".to_string(),
            Target::Reject => "reject".to_string(),
            Target::State(s) => p.states.get(*s).map_or(format!("?{s}"), |s| s.name.clone()),
        };
        match t {
            None => writeln!(out, "    <no transition>"),
            Some(Transition::Goto(t)) => writeln!(out, "    transition {};", target(t)),
            Some(Transition::Select { keys, cases }) => {
                let keys: Vec<String> = keys.iter().map(|k| n.expr(k)).collect();
                writeln!(out, "    transition select({}) {{", keys.join(", "))?;
                for c in cases {
                    let ks: Vec<String> = c
                        .keysets
                        .iter()
                        .map(|k| match k {
                            Keyset::Pattern(p) => p.to_string(),
                            Keyset::ValueSet(v) => self
                                .value_sets
                                .get(*v)
                                .map_or(format!("?{v}"), |v| v.preamble.name.clone()),
                        })
                        .collect();
                    let ks = if c.is_default() {
                        "default".to_string()
                    } else {
                        ks.join(", ")
                    };
                    writeln!(out, "      {ks}: {};", target(&c.next))?;
                }
                writeln!(out, "    }}")
            }
        }
    }

    fn write_controls(&self, out: &mut String) -> fmt::Result {
        for c in self.controls.values() {
            writeln!(
                out,
                "\n{}control {} {{",
                annotations(&c.preamble),
                c.preamble.name
            )?;
            self.write_body(out, &c.body, &[])?;
            writeln!(out, "}}")?;
        }
        Ok(())
    }

    fn write_actions(&self, out: &mut String) -> fmt::Result {
        for a in self.actions.values() {
            if let Some(cp) = &a.cp_name {
                writeln!(out, "\n// control-plane name {cp}")?;
            }
            let head = format!("{}action {}", annotations(&a.preamble), a.preamble.name);
            writeln!(out, "\n{head}({}) {{", params_text(&a.params))?;
            self.write_body(out, &a.body, &a.params)?;
            writeln!(out, "}}")?;
        }
        Ok(())
    }

    fn call_text(&self, call: &ActionCall) -> String {
        let args: Vec<String> = call.args.iter().map(|a| a.to_string()).collect();
        format!(
            "{}({})",
            self.names(&[]).action(call.action),
            args.join(", ")
        )
    }

    fn write_tables(&self, out: &mut String) -> fmt::Result {
        for t in self.tables.values() {
            writeln!(
                out,
                "\n{}table {} {{",
                annotations(&t.preamble),
                t.preamble.name
            )?;
            self.write_table_body(out, t)?;
            writeln!(out, "}}")?;
        }
        Ok(())
    }

    fn write_table_body(&self, out: &mut String, t: &Table) -> fmt::Result {
        let n = self.names(&[]);
        if !t.keys.is_empty() {
            writeln!(out, "  key = {{")?;
            for k in &t.keys {
                let e = n.expr(&k.expr);
                let name = if k.field.name == e {
                    String::new()
                } else {
                    format!(" @name({:?})", k.field.name)
                };
                let ann = annotation_list(&k.field.annotations);
                writeln!(out, "    {ann}{e}: {}{name};", k.field.kind)?;
            }
            writeln!(out, "  }}")?;
        }
        let acts: Vec<String> = t
            .actions
            .iter()
            .map(|a| {
                let scope = match a.scope {
                    ActionScope::TableAndDefault => "",
                    ActionScope::TableOnly => "tableonly",
                    ActionScope::DefaultOnly => "defaultonly",
                };
                // The scope annotation is usually among the annotations already.
                let scope = if scope.is_empty() || a.annotations.iter().any(|x| x.name == scope) {
                    String::new()
                } else {
                    format!("@{scope} ")
                };
                format!(
                    "{scope}{}{};",
                    annotation_list(&a.annotations),
                    n.action(a.action)
                )
            })
            .collect();
        writeln!(out, "  actions = {{ {} }}", acts.join(" "))?;
        let c = if t.default_action.is_const {
            "const "
        } else {
            ""
        };
        writeln!(
            out,
            "  {c}default_action = {};",
            self.call_text(&t.default_action.call)
        )?;
        self.write_table_props(out, t)?;
        if !t.entries.is_empty() {
            let c = if t.entries_const { "const " } else { "" };
            writeln!(out, "  {c}entries = {{")?;
            for e in &t.entries {
                let keys: Vec<String> = e.keys.iter().map(Pattern::to_string).collect();
                let prio = e
                    .priority
                    .map_or(String::new(), |p| format!("priority={p}: "));
                let c = if e.is_const { "const " } else { "" };
                let ann = annotation_list(&e.annotations);
                writeln!(
                    out,
                    "    {ann}{c}{prio}({}): {};",
                    keys.join(", "),
                    self.call_text(&e.call)
                )?;
            }
            writeln!(out, "  }}")?;
        }
        Ok(())
    }

    fn write_table_props(&self, out: &mut String, t: &Table) -> fmt::Result {
        let ext = |e: Option<crate::ids::ExternId>| {
            e.map(|e| {
                self.externs
                    .get(e)
                    .map_or(format!("?{e}"), |x| x.preamble.name.clone())
            })
        };
        writeln!(out, "  size = {};", t.size)?;
        if let Some(i) = ext(t.implementation) {
            writeln!(out, "  implementation = {i};")?;
        }
        if let Some(c) = ext(t.direct_counter) {
            writeln!(out, "  counters = {c};")?;
        }
        if let Some(m) = ext(t.direct_meter) {
            writeln!(out, "  meters = {m};")?;
        }
        if t.support_timeout {
            writeln!(out, "  support_timeout = true;")?;
        }
        if !t.largest_priority_wins {
            writeln!(out, "  largest_priority_wins = false;")?;
        }
        if t.priority_delta != 1 {
            writeln!(out, "  priority_delta = {};", t.priority_delta)?;
        }
        Ok(())
    }

    fn write_externs(&self, out: &mut String) -> fmt::Result {
        for e in self.externs.values() {
            let targs: Vec<String> = e.type_args.iter().map(|t| t.to_string()).collect();
            let targs = if targs.is_empty() {
                String::new()
            } else {
                format!("<{}>", targs.join(", "))
            };
            let args: Vec<String> = e.ctor_args.iter().map(|a| a.to_string()).collect();
            let other = if e.kind == ExternKind::Other {
                "  // not modelled"
            } else {
                ""
            };
            writeln!(
                out,
                "\n{}extern {}{targs}({}) {};{other}",
                annotations(&e.preamble),
                e.type_name,
                args.join(", "),
                e.preamble.name
            )?;
        }
        for v in self.value_sets.values() {
            let fields: Vec<String> = v
                .fields
                .iter()
                .map(|f| format!("{}: bit<{}> {}", f.name, f.width, f.kind))
                .collect();
            writeln!(
                out,
                "\n{}value_set({}) {} {{ {} }}",
                annotations(&v.preamble),
                v.size,
                v.preamble.name,
                fields.join(", ")
            )?;
        }
        for d in self.digests.values() {
            let fields: Vec<String> = d
                .fields
                .iter()
                .map(|(n, w)| format!("{n}: bit<{w}>"))
                .collect();
            writeln!(
                out,
                "\n{}digest {}: {} {{ {} }}",
                annotations(&d.preamble),
                d.preamble.name,
                d.ty,
                fields.join(", ")
            )?;
        }
        for c in &self.controller_headers {
            let fields: Vec<String> = c
                .fields
                .iter()
                .map(|f| format!("{}: bit<{}>", f.name, f.width))
                .collect();
            writeln!(
                out,
                "\n{}controller_header {}: {} {{ {} }}",
                annotations(&c.preamble),
                c.preamble.name,
                c.type_name,
                fields.join(", ")
            )?;
        }
        Ok(())
    }
}
