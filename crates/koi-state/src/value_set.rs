//! Parser value sets (members installed by the control plane, matched by `select`) and the
//! queue of digest messages the data plane sends to the control plane.

use crate::error::{Result, StateError};
use crate::schema::canonical;
use koi_ir::{Bits, DigestId, MatchKind, Pattern, ValueSet};
use std::collections::VecDeque;

/// A value set's members.
#[derive(Clone, Debug)]
pub struct ValueSetState {
    pub name: String,
    pub size: u32,
    /// (name, width, match kind) of each component.
    pub fields: Vec<(String, u32, MatchKind)>,
    members: Vec<Vec<Pattern>>,
}

impl ValueSetState {
    pub fn new(v: &ValueSet) -> ValueSetState {
        ValueSetState {
            name: v.preamble.name.clone(),
            size: v.size,
            fields: v
                .fields
                .iter()
                .map(|f| (f.name.clone(), f.width, f.kind.clone()))
                .collect(),
            members: Vec::new(),
        }
    }

    fn bad(&self, why: String) -> StateError {
        StateError::ValueSet {
            name: self.name.clone(),
            why,
        }
    }

    fn canonical(&self, member: &[Pattern]) -> Result<Vec<Pattern>> {
        if member.len() != self.fields.len() {
            return Err(self.bad(format!(
                "needs {} values, got {}",
                self.fields.len(),
                member.len()
            )));
        }
        self.fields
            .iter()
            .zip(member)
            .map(|((_, w, k), p)| canonical(k, *w, p).map_err(|why| self.bad(why)))
            .collect()
    }

    /// Adds a member (adding one already there changes nothing, as in BMv2).
    pub fn add(&mut self, member: &[Pattern]) -> Result<()> {
        let m = self.canonical(member)?;
        if self.members.contains(&m) {
            return Ok(());
        }
        if self.members.len() as u64 >= u64::from(self.size) {
            return Err(self.bad(format!("full ({} members)", self.size)));
        }
        self.members.push(m);
        Ok(())
    }

    /// Removes a member (removing one not there changes nothing, as in BMv2).
    pub fn remove(&mut self, member: &[Pattern]) -> Result<()> {
        let m = self.canonical(member)?;
        self.members.retain(|x| *x != m);
        Ok(())
    }

    pub fn clear(&mut self) {
        self.members.clear();
    }

    pub fn members(&self) -> &[Vec<Pattern>] {
        &self.members
    }

    /// Whether `keys` (one value per component) is in the set.
    pub fn contains(&self, keys: &[Bits]) -> bool {
        self.members
            .iter()
            .any(|m| m.len() == keys.len() && m.iter().zip(keys).all(|(p, k)| p.matches(k)))
    }
}

/// A digest message: the values of a digest's fields when `digest()` was called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigestMessage {
    pub digest: DigestId,
    /// The digest's name (its struct type).
    pub name: String,
    pub receiver: u64,
    /// (field name, value) in the digest's field order.
    pub fields: Vec<(String, Bits)>,
}

/// Messages waiting for the control plane; beyond `capacity` new ones are dropped and
/// counted.
#[derive(Clone, Debug)]
pub struct DigestQueue {
    queue: VecDeque<DigestMessage>,
    pub capacity: usize,
    pub dropped: u64,
}

impl Default for DigestQueue {
    fn default() -> DigestQueue {
        DigestQueue {
            queue: VecDeque::new(),
            capacity: 4096,
            dropped: 0,
        }
    }
}

impl DigestQueue {
    pub fn push(&mut self, m: DigestMessage) {
        if self.queue.len() >= self.capacity {
            self.dropped += 1;
        } else {
            self.queue.push_back(m);
        }
    }

    /// The newest waiting message.
    pub fn last(&self) -> Option<&DigestMessage> {
        self.queue.back()
    }

    /// Takes every waiting message, oldest first.
    pub fn take(&mut self) -> Vec<DigestMessage> {
        self.queue.drain(..).collect()
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}
