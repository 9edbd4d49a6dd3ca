//! koi's flow caches: the megaflow classifier, the microflow cache and the signature cache.
//!
//! koi follows Open vSwitch's datapath design, made protocol-independent. A packet's parsed
//! state yields a **flow key**: exactly the packet-header-vector bits that any decision of the
//! loaded program may depend on, packed into `u64` words ([`key`]). Lookup goes through three
//! tiers:
//!
//! 1. the [`microflow`] cache, an exact match on the whole key that remembers which megaflow
//!    served it (OVS's EMC), fixed size, probabilistic insertion;
//! 2. the [`signature`] cache, 8 bytes per flow: a hint from the key's hash to the megaflow
//!    that served it, checked against that one megaflow (OVS's SMC);
//! 3. the megaflow [`classifier`], a tuple-space search over (mask, masked key) → value with
//!    subtable ranking, staged lookup, tag-based invalidation and a bounded size with segmented
//!    eviction (new megaflows on probation until hit, so churn cannot push out established
//!    flows) (OVS's dpcls).
//!
//! A miss in all of them is an upcall: the slow path (koi's interpreter) computes the megaflow and
//! installs it. [`FlowCache`] combines the tiers the way a poll thread uses them;
//! [`Reference`] is the linear-scan oracle for tests; [`stages`] describes how the key's words
//! are grouped for staged lookup.
//!
//! The crate knows nothing else of koi: the value stored per megaflow is generic. It has no
//! `unsafe` code, no lookup path allocates, and no input makes it panic.

#![forbid(unsafe_code)]

pub mod classifier;
pub mod flow_cache;
pub mod key;
pub mod microflow;
pub mod reference;
pub mod signature;
pub mod stages;

pub use classifier::{
    Classifier, ClassifierConfig, ClassifierStats, InsertError, Inserted, MemoryUse, Removed,
};
pub use flow_cache::{FlowCache, Tier};
pub use key::{FlowKey, KeyHasher, Mask, MegaflowId, WordHash, fold_mul};
pub use microflow::{Insertion, Microflow, MicroflowConfig, MicroflowStats};
pub use reference::Reference;
pub use signature::{SignatureCache, SignatureStats};
pub use stages::{ConfigError, StageLayout};
