//! Helpers to build IR pipelines by hand the way lowering builds them (p4c's control-plane
//! names, PHV headers and metadata, actions, tables, controls applying them), and to check
//! the generated P4Info against p4c's golden files of the corpus.
//!
//! The corpus is found through `KOI_CORPUS`, else `../../../shared/corpus` from this crate;
//! without it the golden checks print a skip line and pass.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use koi_ir::types::{Member, TypeDecl};
use koi_ir::*;
use koi_proto::p4info::P4Info;

/// The corpus's `samples` directory, if present.
pub fn samples() -> Option<PathBuf> {
    let dir = match std::env::var_os("KOI_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    let samples = dir.join("samples");
    if samples.is_dir() {
        Some(samples)
    } else {
        // Straight to stderr: the test harness swallows a passing test's output.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP {}\n",
                format_args!("no corpus at {} (set KOI_CORPUS)", dir.display())
            ),
        );
        None
    }
}

/// The golden P4Info text of `sample` (`action_profile-bmv2` for
/// `action_profile-bmv2.p4.p4info.txtpb`).
pub fn golden_text(sample: &str) -> Option<String> {
    let path = samples()?.join(format!("{sample}.p4.p4info.txtpb"));
    match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

/// Verifies `p`, generates its P4Info and checks it against the golden of `sample`: no
/// semantic difference (`koi_proto::compare`) and, when `same_text`, the same text too.
pub fn check_golden(sample: &str, p: &Pipeline, same_text: bool) {
    assert_eq!(
        verify(p),
        Ok(()),
        "{sample}: the hand-built IR does not verify"
    );
    let info = match koi_p4info::generate(p) {
        Ok(i) => i,
        Err(e) => panic!("{sample}: {e}"),
    };
    let Some(text) = golden_text(sample) else {
        return;
    };
    let golden: P4Info = match koi_proto::p4info_from_text(&text) {
        Ok(g) => g,
        Err(e) => panic!("{sample}: golden does not parse: {e}"),
    };
    let diff = koi_proto::compare(&golden, &info);
    assert!(
        diff.is_empty(),
        "{sample}: differences:\n{}",
        diff.join("\n")
    );
    if same_text {
        let ours = koi_p4info::to_text(&info);
        if ours != text {
            let first = ours
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{sample}: same P4Info, different text from line {}:\n--- ours\n{}\n--- p4c\n{}",
                first + 1,
                ours.lines()
                    .skip(first)
                    .take(8)
                    .collect::<Vec<_>>()
                    .join("\n"),
                text.lines()
                    .skip(first)
                    .take(8)
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
    }
}

/// A pipeline under construction.
pub struct B {
    pub p: Pipeline,
}

impl B {
    pub fn new(arch: Architecture) -> B {
        B {
            p: Pipeline::new(arch),
        }
    }

    /// A header instance with `bit<W>` fields.
    pub fn header(&mut self, inst: &str, ty: &str, fields: &[(&str, u32)]) -> HeaderId {
        let specs: Vec<FieldSpec> = fields.iter().map(|(n, w)| FieldSpec::bit(n, *w)).collect();
        self.p.phv.add_header(inst, ty, &specs)
    }

    /// The field `name` of header `h` (nested struct fields as `s.f`).
    pub fn field(&self, h: HeaderId, name: &str) -> SlotId {
        let full = format!("{}.{name}", self.p.phv.headers[h].name);
        self.p
            .phv
            .slot_by_name(&full)
            .unwrap_or_else(|| panic!("no field {full}"))
    }

    /// A metadata slot (user or standard metadata).
    pub fn meta(&mut self, name: &str, width: u32) -> SlotId {
        self.p
            .phv
            .add_slot(name, Ty::Bits(width), SlotKind::Metadata)
    }

    /// core.p4's `@noWarn("unused") action NoAction() {}`.
    pub fn no_action(&mut self) -> ActionId {
        let mut a = Action::new("NoAction", vec![], vec![]);
        a.preamble
            .annotations
            .push(Annotation::text("noWarn", "\"unused\""));
        self.p.actions.push(a)
    }

    pub fn action(&mut self, name: &str, params: Vec<ActionParam>, stmts: Vec<Stmt>) -> ActionId {
        self.p.actions.push(Action::new(name, params, stmts))
    }

    /// A key on `slot`, named as the program writes it.
    pub fn key(&self, slot: SlotId, name: &str, kind: MatchKind) -> TableKey {
        let width = self.p.phv.slots[slot].width;
        TableKey {
            expr: Expr::Slot(slot),
            field: MatchField::new(name, width, kind),
        }
    }

    /// A table with p4c's implicit `@defaultonly NoAction` default, as lowering adds it.
    pub fn table_with_implicit_default(
        &mut self,
        name: &str,
        keys: Vec<TableKey>,
        actions: &[ActionId],
        no_action: ActionId,
    ) -> Table {
        let mut t = Table::new(name, no_action);
        t.keys = keys;
        t.actions = actions.iter().map(|a| TableAction::new(*a)).collect();
        t.actions.push(TableAction {
            action: no_action,
            scope: ActionScope::DefaultOnly,
            annotations: vec![Annotation::flag("defaultonly")],
        });
        t
    }

    /// A table whose `actions` list is `actions` and whose default is `default`.
    pub fn table(
        &mut self,
        name: &str,
        keys: Vec<TableKey>,
        actions: &[ActionId],
        default: ActionId,
        is_const: bool,
    ) -> Table {
        let mut t = Table::new(name, default);
        t.keys = keys;
        t.actions = actions.iter().map(|a| TableAction::new(*a)).collect();
        t.default_action.is_const = is_const;
        t
    }

    /// A parser extracting `headers` in order from `start`, then accepting.
    pub fn parser(&mut self, name: &str, role: Role, headers: &[HeaderId]) -> ParserId {
        let mut prs = Parser::new(name);
        for h in headers {
            prs.push(
                prs.start,
                Stmt::Extract {
                    header: HeaderRef::Header(*h),
                    varbit_bits: None,
                },
            );
        }
        prs.set_transition(prs.start, Transition::Goto(Target::Accept));
        self.p.add_parser(prs, Some(role))
    }

    /// A control running `stmts` then applying `tables` in order.
    pub fn control(
        &mut self,
        name: &str,
        role: Role,
        stmts: Vec<Stmt>,
        tables: &[TableId],
    ) -> ControlId {
        let mut b = BodyBuilder::new();
        for s in stmts {
            b.push(s);
        }
        for t in tables {
            b.apply(*t);
        }
        self.p.add_control(name, b.finish(), Some(role))
    }

    /// A deparser emitting `headers`.
    pub fn deparser(&mut self, name: &str, role: Role, headers: &[HeaderId]) -> ControlId {
        let stmts = headers
            .iter()
            .map(|h| Stmt::Emit(HeaderRef::Header(*h)))
            .collect();
        self.p
            .add_control(name, Body::from_stmts(stmts), Some(role))
    }

    /// Declares a type for the control plane.
    pub fn decl(&mut self, d: TypeDecl) {
        self.p.types.decls.push(d);
    }

    pub fn finish(self) -> Pipeline {
        self.p
    }
}

pub fn member(name: &str, ty: P4Type) -> Member {
    Member {
        name: name.into(),
        ty,
    }
}

/// `bit<W>` constant.
pub fn bits(w: u32, v: u64) -> Bits {
    Bits::from_u64(w, v)
}

/// A `bit<W>` action parameter with a named type.
pub fn typed_param(name: &str, width: u32, type_name: &str) -> ActionParam {
    let mut p = ActionParam::bits(name, width);
    p.type_name = Some(type_name.into());
    p
}

/// v1model's `mark_to_drop(standard_metadata)`.
pub fn mark_to_drop() -> Stmt {
    Stmt::Builtin(Builtin::MarkToDrop)
}
