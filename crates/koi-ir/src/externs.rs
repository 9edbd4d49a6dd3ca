//! Extern instances (counters, meters, registers, action profiles and selectors, ...), digests,
//! field lists, and controller packet metadata headers: the stateful and control-plane-facing
//! objects besides tables.
//!
//! An [`Extern`] keeps both the source view (type name, type arguments, constant constructor
//! arguments: what P4Info and a reload's "same name and type" check compare) and a resolved
//! [`ExternKind`] with the parameters the interpreter and the datapath need, so that they
//! never re-interpret constructor arguments.

use crate::ids::SlotId;
use crate::stmt::HashAlgo;
use crate::types::{Annotation, P4Type, Preamble, Ty};
use crate::value::Bits;
use std::fmt;

/// v1model `CounterType` / P4Info `CounterSpec.Unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterUnit {
    Packets,
    Bytes,
    PacketsAndBytes,
}

/// v1model `MeterType` / P4Info `MeterSpec.Unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MeterUnit {
    Packets,
    Bytes,
}

/// What an extern instance is, with the parameters its semantics need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExternKind {
    /// Indexed counter: `count(index)`.
    Counter {
        size: u64,
        unit: CounterUnit,
        index_width: u32,
    },
    /// Counter attached to one table (`counters = c`): `count()`.
    DirectCounter { unit: CounterUnit },
    /// Indexed meter: `execute_meter(index, out color)`.
    Meter {
        size: u64,
        unit: MeterUnit,
        index_width: u32,
    },
    /// Meter attached to one table (`meters = m`): `read(out color)`.
    DirectMeter { unit: MeterUnit },
    /// Register array: `read(out value, index)`, `write(index, value)` (ubpf: `value =
    /// read(index)`).
    Register {
        size: u64,
        elem: Ty,
        index_width: u32,
    },
    /// A table implementation holding members (`implementation = ap`).
    ActionProfile { size: u64 },
    /// An action profile with groups whose member is chosen by hashing the table's
    /// `selector` keys.
    ActionSelector {
        algo: HashAlgo,
        size: u64,
        output_width: u32,
    },
    /// v1model's deprecated `Checksum16`: `get(data)`.
    Checksum16,
    /// PSA `Hash<O>(algo)`: `get_hash(data)`, `get_hash(base, data, max)`. `algo` is the
    /// `PSA_HashAlgorithm_t` member (`CRC16`).
    Hash { algo: String },
    /// PSA `Checksum<W>(algo)`: `clear()`, `update(data)`, `get()` over the data given
    /// since the packet's last `clear()`.
    Checksum { algo: String },
    /// PSA `InternetChecksum`: `clear`, `add`, `subtract`, `get`, `get_state`, `set_state`.
    InternetChecksum,
    /// PSA `Random<T>(min, max)`: `read()`.
    Random { min: u64, max: u64 },
    /// An extern this crate does not model; the interpreter refuses to run calls to it.
    Other,
}

/// A compile-time constant constructor argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConstArg {
    Bits(Bits),
    Bool(bool),
    /// A member of an enum (`CounterType.packets`).
    Enum {
        ty: String,
        member: String,
    },
    Str(String),
}

impl fmt::Display for ConstArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstArg::Bits(b) => write!(f, "{b}"),
            ConstArg::Bool(v) => write!(f, "{v}"),
            ConstArg::Enum { ty, member } => write!(f, "{ty}.{member}"),
            ConstArg::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// An extern instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extern {
    /// Control-plane name (`MyIngress.port_counter`), `@id`, annotations.
    pub preamble: Preamble,
    /// The extern type (`counter`, `register`, `action_selector`).
    pub type_name: String,
    /// Type arguments (`register<bit<32>, bit<10>>`).
    pub type_args: Vec<P4Type>,
    pub ctor_args: Vec<ConstArg>,
    pub kind: ExternKind,
}

/// A digest: a struct type whose values `digest(receiver, data)` sends to the control plane.
/// Named after the struct type, as p4c names v1model digests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digest {
    pub preamble: Preamble,
    /// The data type (P4Info `type_spec`).
    pub ty: P4Type,
    /// The flattened fields in order: name and width; `digest` statements list one value per
    /// field.
    pub fields: Vec<(String, u32)>,
}

/// The metadata slots preserved by clone/resubmit/recirculate with a field list
/// (`@field_list(index)` on user metadata fields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldList {
    pub index: u32,
    pub slots: Vec<SlotId>,
}

/// A field of a controller packet metadata header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataField {
    pub name: String,
    pub width: u32,
    pub type_name: Option<String>,
    /// `@id` annotation.
    pub id: Option<u32>,
    pub annotations: Vec<Annotation>,
}

/// A header type annotated `@controller_header("packet_in")` or `("packet_out")`: packets to
/// or from the controller carry it first (P4Info `ControllerPacketMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerHeader {
    /// `packet_in` or `packet_out`; annotations of the header type.
    pub preamble: Preamble,
    pub type_name: String,
    pub fields: Vec<MetadataField>,
}
