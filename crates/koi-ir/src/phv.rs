//! The packet header vector (PHV) layout: a fixed bit position for every piece of per-packet
//! state.
//!
//! A [`Slot`] is a contiguous bit range of the PHV with a name and a type: a header field, a
//! header's validity bit, a varbit field's current length, a header stack's next index, a
//! metadata field (nested structs are flattened: `meta.a.b`), a standard/intrinsic metadata
//! field, a control or parser local, or a compiler temporary. Headers, stacks and unions group
//! slots. Offsets count from the most significant bit of byte 0 of the PHV buffer, as packet
//! offsets do (see [`crate::value`]), so the interpreter can store the PHV as bytes and move a
//! whole header between packet and PHV as one bit copy.
//!
//! Layout rules (checked by the verifier):
//! - slots lie inside `0..width` and never overlap;
//! - a header starts on a byte boundary and its fields are contiguous in declaration (wire)
//!   order, `header.offset .. header.offset + header.width`, varbit fields taking their maximum
//!   width (the value sits in the low `length` bits of the slot, upper bits zero);
//! - the validity bit, varbit lengths and a stack's next index are separate slots, outside the
//!   wire layout; they are written only by header operations, never by `Assign`.
//!
//! Because every decision reads named slots, the fast path derives a megaflow mask from the
//! slots a packet's processing read: the PHV bit ranges are the flow key.

use crate::entity::Arena;
use crate::entity_id;
use crate::types::Ty;

entity_id!(
    /// A PHV slot (field, validity bit, local, temporary, ...).
    pub struct SlotId, "s"
);
entity_id!(
    /// A header instance (also each element of a stack and each member of a union).
    pub struct HeaderId, "h"
);
entity_id!(
    /// A header stack.
    pub struct StackId, "stack"
);
entity_id!(
    /// A header union.
    pub struct UnionId, "union"
);

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// A field of a header (in the header's wire layout).
    HeaderField(HeaderId),
    /// A header's validity bit (type `bool`).
    Validity(HeaderId),
    /// The current length in bits of the varbit slot.
    VarbitLength(SlotId),
    /// A stack's `nextIndex` (`bit<32>`).
    NextIndex(StackId),
    /// A field of a metadata struct: user metadata or the architecture's standard metadata.
    Metadata,
    /// A local variable of a parser, control or action.
    Local,
    /// A compiler temporary.
    Temp,
}

/// A named bit range of the PHV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Source path, for printing and traces: `hdr.ethernet.dstAddr`, `meta.l4.port`,
    /// `hdr.ethernet.$valid`, `ingress.tmp_0`.
    pub name: String,
    pub offset: u32,
    pub width: u32,
    pub ty: Ty,
    /// The source type was `int<W>` (printing and P4Info only; see [`Ty`]).
    pub signed: bool,
    pub kind: SlotKind,
    /// For a varbit slot: the slot holding its current length.
    pub length: Option<SlotId>,
}

impl Slot {
    /// The last component of the name (`dstAddr` for `hdr.ethernet.dstAddr`).
    pub fn short_name(&self) -> &str {
        self.name.rsplit('.').next().unwrap_or(&self.name)
    }

    /// One past the last bit.
    pub fn end(&self) -> u64 {
        u64::from(self.offset) + u64::from(self.width)
    }
}

/// A header instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// `hdr.ethernet`, `hdr.vlan[1]`, `hdr.u.ipv4`.
    pub name: String,
    /// The header type's name (`ethernet_t`).
    pub type_name: String,
    /// Fields in declaration order, contiguous from `offset`.
    pub fields: Vec<SlotId>,
    pub valid: SlotId,
    pub offset: u32,
    /// Sum of the field widths (varbit fields at their maximum).
    pub width: u32,
    /// The stack and index of a stack element.
    pub stack: Option<(StackId, u32)>,
    /// The union this header is a member of.
    pub union: Option<UnionId>,
    /// The megaflow classifier's lookup stage for the header's key fields, from a
    /// `@koi_stage(N)` annotation on the instance or its type; `None`: the default (parse
    /// order). Only a hint: it changes lookup cost, never results.
    pub stage: Option<u32>,
}

/// A header stack `T[size]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    pub name: String,
    pub type_name: String,
    pub elems: Vec<HeaderId>,
    pub next_index: SlotId,
}

/// A header union: at most one member is valid at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Union {
    pub name: String,
    pub type_name: String,
    pub members: Vec<HeaderId>,
}

/// A field of a header type, as given to [`Phv::add_header`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    pub name: String,
    pub ty: Ty,
    pub signed: bool,
}

impl FieldSpec {
    pub fn bit(name: &str, width: u32) -> FieldSpec {
        FieldSpec {
            name: name.to_string(),
            ty: Ty::Bits(width),
            signed: false,
        }
    }

    pub fn int(name: &str, width: u32) -> FieldSpec {
        FieldSpec {
            signed: true,
            ..FieldSpec::bit(name, width)
        }
    }

    pub fn varbit(name: &str, max: u32) -> FieldSpec {
        FieldSpec {
            name: name.to_string(),
            ty: Ty::Varbit(max),
            signed: false,
        }
    }

    pub fn boolean(name: &str) -> FieldSpec {
        FieldSpec {
            name: name.to_string(),
            ty: Ty::Bool,
            signed: false,
        }
    }
}

/// The PHV layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Phv {
    pub slots: Arena<SlotId, Slot>,
    pub headers: Arena<HeaderId, Header>,
    pub stacks: Arena<StackId, Stack>,
    pub unions: Arena<UnionId, Union>,
    /// Total bits; every slot lies in `0..width`.
    pub width: u32,
}

/// Bits needed to count up to `max`.
fn bits_for(max: u32) -> u32 {
    (32 - max.leading_zeros()).max(1)
}

impl Phv {
    pub fn new() -> Phv {
        Phv::default()
    }

    /// Appends a slot at the end of the layout.
    pub fn add_slot(&mut self, name: &str, ty: Ty, kind: SlotKind) -> SlotId {
        self.push_slot(name.to_string(), ty, false, kind)
    }

    /// Appends a signed (`int<W>`) slot.
    pub fn add_signed_slot(&mut self, name: &str, width: u32, kind: SlotKind) -> SlotId {
        self.push_slot(name.to_string(), Ty::Bits(width), true, kind)
    }

    fn push_slot(&mut self, name: String, ty: Ty, signed: bool, kind: SlotKind) -> SlotId {
        let offset = self.width;
        self.width = self.width.saturating_add(ty.width());
        let id = self.slots.push(Slot {
            name,
            offset,
            width: ty.width(),
            ty,
            signed,
            kind,
            length: None,
        });
        if let Ty::Varbit(max) = ty {
            let len = self.push_slot(
                format!("{}.$len", self.slots[id].name),
                Ty::Bits(bits_for(max)),
                false,
                SlotKind::VarbitLength(id),
            );
            self.slots[id].length = Some(len);
        }
        id
    }

    /// Allocates a header's byte-aligned run of fields and its validity bit.
    fn alloc_header(&mut self, name: &str, type_name: &str, fields: &[FieldSpec]) -> HeaderId {
        self.width = self.width.next_multiple_of(8);
        let id = self.headers.next_id();
        let offset = self.width;
        let slots: Vec<SlotId> = fields
            .iter()
            .map(|f| {
                let fname = format!("{name}.{}", f.name);
                self.push_field(fname, f, id)
            })
            .collect();
        let width = self.width - offset;
        let valid = self.push_slot(
            format!("{name}.$valid"),
            Ty::Bool,
            false,
            SlotKind::Validity(id),
        );
        self.headers.push(Header {
            name: name.to_string(),
            type_name: type_name.to_string(),
            fields: slots,
            valid,
            offset,
            width,
            stack: None,
            union: None,
            stage: None,
        })
    }

    /// Pushes a field slot; the varbit length slot, if any, comes after the whole header.
    fn push_field(&mut self, name: String, f: &FieldSpec, header: HeaderId) -> SlotId {
        let offset = self.width;
        self.width = self.width.saturating_add(f.ty.width());
        self.slots.push(Slot {
            name,
            offset,
            width: f.ty.width(),
            ty: f.ty,
            signed: f.signed,
            kind: SlotKind::HeaderField(header),
            length: None,
        })
    }

    /// Allocates the length slots of a header's varbit fields (call after its fields).
    fn add_varbit_lengths(&mut self, header: HeaderId) {
        let fields = self.headers[header].fields.clone();
        for f in fields {
            if let Ty::Varbit(max) = self.slots[f].ty {
                let name = format!("{}.$len", self.slots[f].name);
                let len = self.push_slot(
                    name,
                    Ty::Bits(bits_for(max)),
                    false,
                    SlotKind::VarbitLength(f),
                );
                self.slots[f].length = Some(len);
            }
        }
    }

    /// Adds a header instance named `name` of type `type_name`: a byte-aligned run of fields
    /// in order, then its validity bit and the lengths of its varbit fields.
    pub fn add_header(&mut self, name: &str, type_name: &str, fields: &[FieldSpec]) -> HeaderId {
        let h = self.alloc_header(name, type_name, fields);
        self.add_varbit_lengths(h);
        h
    }

    /// Adds a header stack `name` of `size` elements named `name[i]`, and its next index.
    pub fn add_stack(
        &mut self,
        name: &str,
        type_name: &str,
        fields: &[FieldSpec],
        size: u32,
    ) -> StackId {
        let id = self.stacks.next_id();
        let elems: Vec<HeaderId> = (0..size)
            .map(|i| {
                let h = self.add_header(&format!("{name}[{i}]"), type_name, fields);
                self.headers[h].stack = Some((id, i));
                h
            })
            .collect();
        let next_index = self.add_slot(
            &format!("{name}.$next"),
            Ty::Bits(32),
            SlotKind::NextIndex(id),
        );
        self.stacks.push(Stack {
            name: name.to_string(),
            type_name: type_name.to_string(),
            elems,
            next_index,
        })
    }

    /// Adds a header union `name` whose members are headers `name.member`.
    pub fn add_union(
        &mut self,
        name: &str,
        type_name: &str,
        members: &[(&str, &str, &[FieldSpec])],
    ) -> UnionId {
        let id = self.unions.next_id();
        let hs: Vec<HeaderId> = members
            .iter()
            .map(|(m, ty, fields)| {
                let h = self.add_header(&format!("{name}.{m}"), ty, fields);
                self.headers[h].union = Some(id);
                h
            })
            .collect();
        self.unions.push(Union {
            name: name.to_string(),
            type_name: type_name.to_string(),
            members: hs,
        })
    }

    /// The field of `header` whose short name is `field`.
    pub fn field(&self, header: HeaderId, field: &str) -> Option<SlotId> {
        let h = self.headers.get(header)?;
        h.fields
            .iter()
            .copied()
            .find(|&s| self.slots.get(s).is_some_and(|s| s.short_name() == field))
    }

    /// The slot named `name` (a linear search: for tests and tools).
    pub fn slot_by_name(&self, name: &str) -> Option<SlotId> {
        self.slots
            .iter()
            .find(|(_, s)| s.name == name)
            .map(|(id, _)| id)
    }

    /// The header named `name` (a linear search: for tests and tools).
    pub fn header_by_name(&self, name: &str) -> Option<HeaderId> {
        self.headers
            .iter()
            .find(|(_, h)| h.name == name)
            .map(|(id, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_byte_aligned_and_contiguous() {
        let mut phv = Phv::new();
        let flag = phv.add_slot("meta.flag", Ty::Bool, SlotKind::Metadata);
        let h = phv.add_header(
            "hdr.opt",
            "opt_t",
            &[
                FieldSpec::bit("kind", 4),
                FieldSpec::varbit("data", 320),
                FieldSpec::int("x", 4),
            ],
        );
        let hdr = &phv.headers[h];
        assert_eq!((phv.slots[flag].offset, hdr.offset, hdr.width), (0, 8, 328));
        let offs: Vec<u32> = hdr.fields.iter().map(|&f| phv.slots[f].offset).collect();
        assert_eq!(offs, [8, 12, 332]);
        assert_eq!(phv.slots[hdr.valid].offset, 336);
        let data = phv.field(h, "data").unwrap();
        let len = phv.slots[data].length.unwrap();
        assert_eq!((phv.slots[len].offset, phv.slots[len].width), (337, 9));
        assert_eq!(phv.slots[len].name, "hdr.opt.data.$len");
        assert_eq!(phv.width, 346);
        assert!(phv.slots[phv.field(h, "x").unwrap()].signed);
    }

    #[test]
    fn stacks_and_unions_name_their_elements() {
        let mut phv = Phv::new();
        let s = phv.add_stack("hdr.vlan", "vlan_t", &[FieldSpec::bit("vid", 12)], 2);
        let u = phv.add_union(
            "hdr.ip",
            "ip_u",
            &[
                ("v4", "ipv4_t", &[FieldSpec::bit("ttl", 8)]),
                ("v6", "ipv6_t", &[FieldSpec::bit("hl", 8)]),
            ],
        );
        let stack = &phv.stacks[s];
        assert_eq!(phv.headers[stack.elems[1]].name, "hdr.vlan[1]");
        assert_eq!(phv.headers[stack.elems[1]].stack, Some((s, 1)));
        assert_eq!(phv.slots[stack.next_index].ty, Ty::Bits(32));
        let v6 = phv.unions[u].members[1];
        assert_eq!(phv.headers[v6].union, Some(u));
        assert_eq!(phv.header_by_name("hdr.ip.v6"), Some(v6));
        assert_eq!(
            phv.slot_by_name("hdr.ip.v4.ttl"),
            phv.field(phv.unions[u].members[0], "ttl")
        );
    }
}
