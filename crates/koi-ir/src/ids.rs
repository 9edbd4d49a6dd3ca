//! The typed ids of the IR's entities (see [`crate::entity`]). PHV ids ([`SlotId`],
//! [`HeaderId`], [`StackId`], [`UnionId`]) are declared in [`crate::phv`] and re-exported here.

use crate::entity_id;

pub use crate::phv::{HeaderId, SlotId, StackId, UnionId};

entity_id!(
    /// A parser of the pipeline.
    pub struct ParserId, "parser"
);
entity_id!(
    /// A state of one parser.
    pub struct StateId, "state"
);
entity_id!(
    /// A control of the pipeline.
    pub struct ControlId, "control"
);
entity_id!(
    /// A basic block of one control or action body.
    pub struct BlockId, "bb"
);
entity_id!(
    /// A match-action table.
    pub struct TableId, "table"
);
entity_id!(
    /// An action.
    pub struct ActionId, "action"
);
entity_id!(
    /// An extern instance (counter, register, action profile, ...).
    pub struct ExternId, "extern"
);
entity_id!(
    /// A parser value set.
    pub struct ValueSetId, "vs"
);
entity_id!(
    /// A digest (a struct type sent to the control plane).
    pub struct DigestId, "digest"
);
entity_id!(
    /// A list of metadata slots preserved by clone, resubmit or recirculate.
    pub struct FieldListId, "fl"
);
