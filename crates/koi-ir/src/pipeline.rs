//! The pipeline image: one compiled program, everything its consumers need, as plain owned
//! data (no `Rc`, no globals, `Clone + Send + Sync`), so that a second image can be built and
//! verified beside a running one and state carried over by control-plane name and type.

use crate::control::{Action, Control};
use crate::entity::Arena;
use crate::externs::{ControllerHeader, Digest, Extern, FieldList};
use crate::ids::{
    ActionId, ControlId, DigestId, ExternId, FieldListId, ParserId, SlotId, TableId, ValueSetId,
};
use crate::parser::{Parser, ValueSet};
use crate::phv::Phv;
use crate::table::Table;
use crate::types::{Annotation, TypeTable};

/// The architecture a program was written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Architecture {
    /// `v1model.p4`, BMv2 simple_switch semantics.
    V1Model,
    /// `ubpf_model.p4`.
    Ubpf,
    /// `psa.p4`, BMv2 psa_switch semantics.
    Psa,
    /// `ebpf_model.p4`'s `ebpfFilter`: a parser and a filter control (p4c's eBPF test
    /// target).
    Ebpf,
    /// `xdp_model.p4`'s `xdp`: parser, switch control, deparser.
    Xdp,
}

impl Architecture {
    /// The width of the architecture's port numbers: v1model's `standard_metadata` ports are
    /// `bit<9>`, ubpf's, PSA's and XDP's `bit<32>` (an eBPF filter sees none: koi numbers
    /// its ports as XDP's). A wider number would be cut to this width.
    pub fn port_bits(self) -> u32 {
        match self {
            Architecture::V1Model => 9,
            Architecture::Ubpf | Architecture::Psa | Architecture::Ebpf | Architecture::Xdp => 32,
        }
    }

    /// Refuses a port number wider than [`Architecture::port_bits`].
    pub fn check_port(self, port: u64) -> Result<(), String> {
        let bits = self.port_bits();
        match port >> bits {
            0 => Ok(()),
            _ => Err(format!(
                "port {port} does not fit the program's {bits}-bit port numbers (0 to {})",
                (1u64 << bits) - 1
            )),
        }
    }
}

/// A programmable block position of an architecture's package.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Parser,
    VerifyChecksum,
    Ingress,
    Egress,
    ComputeChecksum,
    Deparser,
    /// ubpf's single `pipeline` control, ebpfFilter's `filter`, xdp's `xdp_switch`.
    Pipe,
    IngressParser,
    IngressDeparser,
    EgressParser,
    EgressDeparser,
}

impl Role {
    /// Whether the block in this position is a parser (else a control).
    pub fn is_parser(self) -> bool {
        matches!(
            self,
            Role::Parser | Role::IngressParser | Role::EgressParser
        )
    }

    /// Whether the block is a deparser (the only controls that may `emit`).
    pub fn is_deparser(self) -> bool {
        matches!(
            self,
            Role::Deparser | Role::IngressDeparser | Role::EgressDeparser
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Parser => "parser",
            Role::VerifyChecksum => "verify_checksum",
            Role::Ingress => "ingress",
            Role::Egress => "egress",
            Role::ComputeChecksum => "compute_checksum",
            Role::Deparser => "deparser",
            Role::Pipe => "pipe",
            Role::IngressParser => "ingress_parser",
            Role::IngressDeparser => "ingress_deparser",
            Role::EgressParser => "egress_parser",
            Role::EgressDeparser => "egress_deparser",
        }
    }
}

impl Architecture {
    /// P4Info's `pkg_info.arch`.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::V1Model => "v1model",
            Architecture::Ubpf => "ubpf",
            Architecture::Psa => "psa",
            Architecture::Ebpf => "ebpf",
            Architecture::Xdp => "xdp",
        }
    }

    /// The package's block positions, in package parameter order.
    pub fn roles(self) -> &'static [Role] {
        use Role::*;
        match self {
            Architecture::V1Model => &[
                Parser,
                VerifyChecksum,
                Ingress,
                Egress,
                ComputeChecksum,
                Deparser,
            ],
            Architecture::Ubpf | Architecture::Xdp => &[Parser, Pipe, Deparser],
            Architecture::Ebpf => &[Parser, Pipe],
            Architecture::Psa => &[
                IngressParser,
                Ingress,
                IngressDeparser,
                EgressParser,
                Egress,
                EgressDeparser,
            ],
        }
    }

    /// The match kinds the architecture declares, after core's `exact, ternary, lpm`.
    pub fn match_kinds(self) -> &'static [&'static str] {
        match self {
            Architecture::V1Model => &["range", "optional", "selector"],
            Architecture::Ubpf | Architecture::Ebpf | Architecture::Xdp => &[],
            Architecture::Psa => &["range", "selector", "optional"],
        }
    }
}

/// A parser or a control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockRef {
    Parser(ParserId),
    Control(ControlId),
}

/// The errors of `core.p4`, with codes 0 to 6 (p4c and BMv2 number them in this order).
pub const CORE_ERRORS: [&str; 7] = [
    "NoError",
    "PacketTooShort",
    "NoMatch",
    "StackOutOfBounds",
    "HeaderTooShort",
    "ParserTimeout",
    "ParserInvalidArgument",
];

/// A compiled program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    pub arch: Architecture,
    /// Which block fills each of the architecture's positions.
    pub package: Vec<(Role, BlockRef)>,
    /// The `error` members; a member's code is its index (core's first, then the program's
    /// in declaration order).
    pub errors: Vec<String>,
    /// Width of `error` values in slots and expressions.
    pub error_width: u32,
    /// The `match_kind` members; a member's code is its index.
    pub match_kinds: Vec<String>,
    /// Named types the control plane can see (P4Info `type_info`).
    pub types: TypeTable,
    pub phv: Phv,
    /// Slots of the architecture's standard metadata by field name (`egress_spec`,
    /// `mcast_grp`, `parser_error`, ... for v1model), for the interpreter's use.
    pub intrinsics: Vec<(String, SlotId)>,
    pub parsers: Arena<ParserId, Parser>,
    pub controls: Arena<ControlId, Control>,
    pub tables: Arena<TableId, Table>,
    pub actions: Arena<ActionId, Action>,
    pub externs: Arena<ExternId, Extern>,
    pub value_sets: Arena<ValueSetId, ValueSet>,
    pub digests: Arena<DigestId, Digest>,
    pub field_lists: Arena<FieldListId, FieldList>,
    pub controller_headers: Vec<ControllerHeader>,
    /// Annotations of the package instance (P4Info `pkg_info`).
    pub annotations: Vec<Annotation>,
    /// The custom CRC calculations (`crc16_custom`, `crc32_custom`), one per use.
    pub calculations: Vec<Calculation>,
    /// The user's extern functions the program calls (implemented in C, bound at load).
    pub natives: crate::native::Natives,
}

/// A use of `crc16_custom` or `crc32_custom` (a `hash` call, a checksum, an action
/// selector): its CRC parameters are the control plane's to set, each use's apart, as
/// simple_switch_CLI's `set_crc16_parameters` / `set_crc32_parameters` set BMv2's
/// calculations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Calculation {
    /// `calc_N`, numbered in the order the program's uses are compiled.
    pub name: String,
    /// 16 or 32.
    pub width: u32,
    /// The block instance it is used in (`MyIngress`).
    pub block: String,
    /// What uses it: `hash`, `verify_checksum`, `update_checksum`, or the action
    /// selector's name.
    pub used_by: String,
}

impl Pipeline {
    /// An empty pipeline for `arch` with core's errors and the architecture's match kinds.
    pub fn new(arch: Architecture) -> Pipeline {
        let core_kinds = ["exact", "ternary", "lpm"];
        Pipeline {
            arch,
            package: Vec::new(),
            errors: CORE_ERRORS.iter().map(|s| s.to_string()).collect(),
            error_width: 32,
            match_kinds: core_kinds
                .iter()
                .chain(arch.match_kinds())
                .map(|s| s.to_string())
                .collect(),
            types: TypeTable::default(),
            phv: Phv::new(),
            intrinsics: Vec::new(),
            parsers: Arena::new(),
            controls: Arena::new(),
            tables: Arena::new(),
            actions: Arena::new(),
            externs: Arena::new(),
            value_sets: Arena::new(),
            digests: Arena::new(),
            field_lists: Arena::new(),
            controller_headers: Vec::new(),
            annotations: Vec::new(),
            calculations: Vec::new(),
            natives: Default::default(),
        }
    }

    /// The code of the error named `name`.
    pub fn error_code(&self, name: &str) -> Option<u32> {
        self.errors.iter().position(|e| e == name).map(|i| i as u32)
    }

    /// Adds a program-declared error, returning its code (the existing one if declared).
    pub fn add_error(&mut self, name: &str) -> u32 {
        if let Some(c) = self.error_code(name) {
            return c;
        }
        self.errors.push(name.to_string());
        (self.errors.len() - 1) as u32
    }

    /// The block bound to `role`.
    pub fn block(&self, role: Role) -> Option<BlockRef> {
        self.package
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, b)| *b)
    }

    /// The standard metadata slot for field `name`.
    pub fn intrinsic(&self, name: &str) -> Option<SlotId> {
        self.intrinsics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
    }

    /// The table whose control-plane name is `name` (how a reload matches old to new).
    pub fn table_by_name(&self, name: &str) -> Option<TableId> {
        self.tables
            .iter()
            .find(|(_, t)| t.preamble.name == name)
            .map(|(id, _)| id)
    }

    /// The action whose control-plane name is `name`.
    pub fn action_by_name(&self, name: &str) -> Option<ActionId> {
        self.actions
            .iter()
            .find(|(_, a)| a.preamble.name == name)
            .map(|(id, _)| id)
    }

    /// The extern instance whose control-plane name is `name`.
    pub fn extern_by_name(&self, name: &str) -> Option<ExternId> {
        self.externs
            .iter()
            .find(|(_, e)| e.preamble.name == name)
            .map(|(id, _)| id)
    }

    /// The control-plane name of a block.
    pub fn block_name(&self, block: BlockRef) -> Option<&str> {
        match block {
            BlockRef::Parser(p) => self.parsers.get(p).map(|p| p.preamble.name.as_str()),
            BlockRef::Control(c) => self.controls.get(c).map(|c| c.preamble.name.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_pipelines_know_core_errors_and_arch_match_kinds() {
        let mut p = Pipeline::new(Architecture::V1Model);
        assert_eq!(p.error_code("NoMatch"), Some(2));
        assert_eq!(p.add_error("BadOption"), 7);
        assert_eq!(p.add_error("NoMatch"), 2);
        assert_eq!(
            p.match_kinds,
            ["exact", "ternary", "lpm", "range", "optional", "selector"]
        );
        assert_eq!(
            Architecture::Ubpf.roles(),
            [Role::Parser, Role::Pipe, Role::Deparser]
        );
        assert!(Role::EgressParser.is_parser() && Role::Deparser.is_deparser());
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<Pipeline>();
    }
}
