//! What the interpreter computes once per pipeline: the blocks bound to each role, the
//! architecture's metadata slots by name, the PHV bit ranges reset when a new packet
//! instance starts (metadata, locals, temporaries), and the header of each header field.

use crate::options::InterpError;
use koi_ir::{
    Architecture, BlockRef, ControlId, HeaderId, ParserId, Pipeline, Role, SlotId, SlotKind,
};

/// Standard metadata slots (absent ones are `None`: programs and tests may omit them).
#[derive(Clone, Debug, Default)]
pub struct Intrinsics {
    pub ingress_port: Option<SlotId>,
    pub egress_spec: Option<SlotId>,
    pub egress_port: Option<SlotId>,
    pub instance_type: Option<SlotId>,
    pub packet_length: Option<SlotId>,
    pub enq_timestamp: Option<SlotId>,
    pub enq_qdepth: Option<SlotId>,
    pub deq_timedelta: Option<SlotId>,
    pub deq_qdepth: Option<SlotId>,
    pub ingress_global_timestamp: Option<SlotId>,
    pub egress_global_timestamp: Option<SlotId>,
    pub mcast_grp: Option<SlotId>,
    pub egress_rid: Option<SlotId>,
    pub checksum_error: Option<SlotId>,
    pub parser_error: Option<SlotId>,
    pub priority: Option<SlotId>,
    /// uBPF.
    pub input_port: Option<SlotId>,
    pub output_port: Option<SlotId>,
}

impl Intrinsics {
    fn new(p: &Pipeline) -> Intrinsics {
        let s = |n: &str| p.intrinsic(n);
        Intrinsics {
            ingress_port: s("ingress_port"),
            egress_spec: s("egress_spec"),
            egress_port: s("egress_port"),
            instance_type: s("instance_type"),
            packet_length: s("packet_length"),
            enq_timestamp: s("enq_timestamp"),
            enq_qdepth: s("enq_qdepth"),
            deq_timedelta: s("deq_timedelta"),
            deq_qdepth: s("deq_qdepth"),
            ingress_global_timestamp: s("ingress_global_timestamp"),
            egress_global_timestamp: s("egress_global_timestamp"),
            mcast_grp: s("mcast_grp"),
            egress_rid: s("egress_rid"),
            checksum_error: s("checksum_error"),
            parser_error: s("parser_error"),
            priority: s("priority"),
            input_port: s("input_port"),
            output_port: s("output_port"),
        }
    }
}

/// The blocks of the package, by role.
#[derive(Clone, Debug)]
pub struct Blocks {
    pub parser: ParserId,
    pub verify: Option<ControlId>,
    pub ingress: ControlId,
    pub egress: Option<ControlId>,
    pub compute: Option<ControlId>,
    pub deparser: ControlId,
}

/// Per-pipeline facts the interpreter uses on every packet.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub intr: Intrinsics,
    pub blocks: Blocks,
    /// `(offset, width)` of the slots reset for each new packet instance.
    pub meta_ranges: Vec<(u32, u32)>,
    /// The header of each header field slot.
    pub slot_header: Vec<Option<HeaderId>>,
    pub fingerprint: u64,
    /// A PSA program's blocks and slots.
    pub psa: Option<crate::psa::PsaPrep>,
}

fn control(p: &Pipeline, role: Role) -> Option<ControlId> {
    match p.block(role)? {
        BlockRef::Control(c) if p.controls.contains(c) => Some(c),
        _ => None,
    }
}

fn required(p: &Pipeline, role: Role) -> Result<ControlId, InterpError> {
    control(p, role).ok_or(InterpError::MissingRole(role.name()))
}

fn blocks(p: &Pipeline) -> Result<Blocks, InterpError> {
    if p.arch == Architecture::Psa {
        // (The first pipeline's blocks here; [`crate::psa::PsaPrep`] has all six.)
        let psa = crate::psa::PsaPrep::new(p)?;
        return Ok(Blocks {
            parser: psa.ingress_parser,
            verify: None,
            ingress: psa.ingress,
            egress: Some(psa.egress),
            compute: None,
            deparser: psa.ingress_deparser,
        });
    }
    let parser = match p.block(Role::Parser) {
        Some(BlockRef::Parser(x)) if p.parsers.contains(x) => x,
        _ => return Err(InterpError::MissingRole(Role::Parser.name())),
    };
    Ok(match p.arch {
        Architecture::V1Model => Blocks {
            parser,
            verify: control(p, Role::VerifyChecksum),
            ingress: required(p, Role::Ingress)?,
            egress: control(p, Role::Egress),
            compute: control(p, Role::ComputeChecksum),
            deparser: required(p, Role::Deparser)?,
        },
        Architecture::Ubpf | Architecture::Xdp => Blocks {
            parser,
            verify: None,
            ingress: required(p, Role::Pipe)?,
            egress: None,
            compute: None,
            deparser: required(p, Role::Deparser)?,
        },
        // (No deparser: the filter's packet leaves unchanged.)
        Architecture::Ebpf => {
            let filter = required(p, Role::Pipe)?;
            Blocks {
                parser,
                verify: None,
                ingress: filter,
                egress: None,
                compute: None,
                deparser: filter,
            }
        }
        Architecture::Psa => unreachable!("handled above"),
    })
}

/// Whether a copy of a packet (clone, resubmission, recirculation) zeroes slot `s` (before
/// its field list is copied): metadata, locals and temporaries, and their varbit lengths.
pub fn reset_by_copies(p: &Pipeline, s: &koi_ir::Slot) -> bool {
    let is_meta = |k: SlotKind| matches!(k, SlotKind::Metadata | SlotKind::Local | SlotKind::Temp);
    match s.kind {
        SlotKind::VarbitLength(of) => p.phv.slots.get(of).is_some_and(|o| is_meta(o.kind)),
        k => is_meta(k),
    }
}

/// Merges the bit ranges of the slots [`reset_by_copies`].
fn meta_ranges(p: &Pipeline) -> Vec<(u32, u32)> {
    let mut r: Vec<(u32, u32)> = Vec::new();
    for s in p.phv.slots.values() {
        if !reset_by_copies(p, s) || s.width == 0 {
            continue;
        }
        match r.last_mut() {
            Some((o, w)) if *o + *w == s.offset => *w += s.width,
            _ => r.push((s.offset, s.width)),
        }
    }
    r
}

impl Prepared {
    pub fn new(p: &Pipeline) -> Result<Prepared, InterpError> {
        Ok(Prepared {
            intr: Intrinsics::new(p),
            blocks: blocks(p)?,
            meta_ranges: meta_ranges(p),
            slot_header: p
                .phv
                .slots
                .values()
                .map(|s| match s.kind {
                    SlotKind::HeaderField(h) => Some(h),
                    _ => None,
                })
                .collect(),
            fingerprint: koi_state::fingerprint(p),
            psa: match p.arch {
                Architecture::Psa => Some(crate::psa::PsaPrep::new(p)?),
                _ => None,
            },
        })
    }

    /// The header slot `s` is a field of.
    pub fn header_of(&self, s: SlotId) -> Option<HeaderId> {
        use koi_ir::entity::EntityId;
        self.slot_header.get(s.index() as usize).copied().flatten()
    }
}
