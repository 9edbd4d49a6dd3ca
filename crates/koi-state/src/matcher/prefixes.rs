//! The entries' keys or prefixes kept in order ([`SortedPrefixes`]), for the megaflow masks of
//! exact and LPM misses with too many entries to compare one by one, and (tests) the trie it
//! is checked against.

use super::*;
/// `fields` side by side, the first the most significant bit first, in whole bytes (the last
/// padded with zeros), and their width in bits.
pub(super) fn pack(fields: &[Bits]) -> (Box<[u8]>, u32) {
    let w: u32 = fields.iter().map(Bits::width).sum();
    let mut out = vec![0u8; w.div_ceil(8) as usize];
    let mut at = 0u32;
    for f in fields {
        for i in (0..f.width()).rev() {
            if f.bit(i) {
                out[(at / 8) as usize] |= 0x80 >> (at % 8);
            }
            at += 1;
        }
    }
    (out.into_boxed_slice(), w)
}

/// How many leading bits `a` and `b` share.
pub(super) fn common_prefix(a: &[u8], b: &[u8]) -> u32 {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => 8 * i as u32 + (a[i] ^ b[i]).leading_zeros(),
        None => 8 * a.len().min(b.len()) as u32,
    }
}

/// Prefixes, per length, in order (values packed by [`pack`], with how many entries have
/// each): which leading bits of a key decide the entries it can match, as a binary trie of the
/// prefixes tells (OVS's prefix tracking, `lib/classifier.c`; the trie is kept in the tests as
/// the reference). Along the key's path the trie goes as deep as the longest prefix that
/// shares its first bits with the key (up to its length), and the prefixes of one length
/// sharing the most with the key include one of its two neighbours in order. A copy of each
/// prefix instead of a node per bit, and any width. An LPM table keeps its LPM field's
/// prefixes; an exact table its whole keys (the fields side by side) as prefixes of their full
/// width, for which the answer is the leading bits up to the first where a missing key parts
/// from the entry sharing the most with it.
#[derive(Clone, Debug, Default)]
pub struct SortedPrefixes {
    pub(super) by_len: BTreeMap<u32, BTreeMap<Box<[u8]>, u32>>,
    /// The values' width; `None` until the first prefix.
    pub(super) width: Option<u32>,
    /// A prefix of another width came (not a table's): not used from then on.
    pub(super) broken: bool,
}

impl SortedPrefixes {
    /// Adds prefix `value/len`, the value being `fields` side by side (bits past `len` zero).
    pub(super) fn add(&mut self, fields: &[Bits], len: u32) {
        let (v, w) = pack(fields);
        if self.broken || self.width.is_some_and(|x| x != w) {
            self.broken = true;
            self.by_len.clear();
            return;
        }
        self.width = Some(w);
        *self
            .by_len
            .entry(len.min(w))
            .or_default()
            .entry(v)
            .or_insert(0) += 1;
    }

    /// Removes prefix `value/len` (added before).
    pub(super) fn remove(&mut self, fields: &[Bits], len: u32) {
        let (v, w) = pack(fields);
        if self.broken || self.width != Some(w) {
            return;
        }
        let len = len.min(w);
        if let Some(set) = self.by_len.get_mut(&len) {
            if let Some(n) = set.get_mut(&v) {
                *n -= 1;
                if *n == 0 {
                    set.remove(&v);
                }
            }
            if set.is_empty() {
                self.by_len.remove(&len);
            }
        }
    }

    /// For a key's LPM field: how many leading bits decide which prefixes it matches (every
    /// key with the same leading bits matches the same ones, so no longer prefix than the
    /// key's matches either), and whether some prefix matches it (then the entry it hits
    /// depends on the other fields too). `None` before any prefix, or for keys of another
    /// width.
    pub(super) fn decided(&self, key: &[Bits]) -> Option<(u32, bool)> {
        let (k, kw) = pack(key);
        let w = self.width.filter(|w| *w == kw && !self.broken)?;
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let k: &[u8] = &k;
        // Per length: how many of the key's first bits some prefix of that length shares
        // (at most the length).
        let shared: Vec<(u32, u32)> = self
            .by_len
            .iter()
            .map(|(&len, set)| {
                let below = set.range::<[u8], _>((Unbounded, Excluded(k))).next_back();
                let above = set.range::<[u8], _>((Included(k), Unbounded)).next();
                let most = [below, above]
                    .into_iter()
                    .flatten()
                    .map(|(e, _)| common_prefix(e, k))
                    .max()
                    .unwrap_or(0);
                (len, most.min(len))
            })
            .collect();
        // The depth the key's path reaches in the trie, whether a longer prefix goes on from
        // there the other way (its next bit then tells the key from it), and whether a prefix
        // ends on the path (matches the key).
        let depth = shared.iter().map(|&(_, c)| c).max().unwrap_or(0);
        let other = shared.iter().any(|&(len, c)| len > depth && c == depth);
        let on_path = shared.iter().any(|&(len, c)| c == len);
        let bits = if depth < w && other { depth + 1 } else { depth };
        Some((bits, on_path))
    }
}

/// A binary trie of an LPM field's prefixes, up to 128 bits wide, with per node the number of
/// prefixes through it and ending at it: the reference [`SortedPrefixes`] is tested against.
#[cfg(test)]
#[derive(Clone, Debug, Default)]
pub struct Trie {
    /// `nodes[0]` is the root (once there is one); a child link of 0 is no child.
    pub(super) nodes: Vec<TrieNode>,
    pub(super) free: Vec<u32>,
    /// The field's width; `None` until the first prefix.
    pub(super) width: Option<u32>,
    /// A prefix wider than 128 bits (or of another width) came: the trie is not used.
    pub(super) broken: bool,
}

#[cfg(test)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TrieNode {
    pub(super) child: [u32; 2],
    /// Prefixes through this node (ending here or below).
    pub(super) refs: u32,
    /// Prefixes ending here.
    pub(super) ends: u32,
}

#[cfg(test)]
impl Trie {
    pub(super) fn bit(v: u128, width: u32, i: u32) -> usize {
        ((v >> (width - 1 - i)) & 1) as usize
    }

    /// Adds prefix `value/len` (the value's width is the field's).
    pub(super) fn add(&mut self, value: &Bits, len: u32) {
        let w = value.width();
        if self.broken || w > 128 || self.width.is_some_and(|x| x != w) {
            self.disable();
            return;
        }
        if self.nodes.is_empty() {
            self.width = Some(w);
            self.nodes.push(TrieNode::default());
        }
        let v = value.low_u128();
        let mut n = 0usize;
        self.nodes[0].refs += 1;
        for i in 0..len.min(w) {
            let b = Self::bit(v, w, i);
            let c = match self.nodes[n].child[b] {
                0 => {
                    let id = self.alloc();
                    self.nodes[n].child[b] = id;
                    id
                }
                c => c,
            };
            n = c as usize;
            self.nodes[n].refs += 1;
        }
        self.nodes[n].ends += 1;
    }

    /// Keys the trie cannot hold came: it is not used from now on.
    pub(super) fn disable(&mut self) {
        self.broken = true;
        self.nodes.clear();
        self.free.clear();
    }

    pub(super) fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = TrieNode::default();
                i
            }
            None => {
                self.nodes.push(TrieNode::default());
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Removes prefix `value/len` (added before).
    pub(super) fn remove(&mut self, value: &Bits, len: u32) {
        let Some(w) = self.width.filter(|w| *w == value.width() && !self.broken) else {
            return;
        };
        if self.nodes.is_empty() {
            return;
        }
        let v = value.low_u128();
        let mut n = 0usize;
        self.nodes[0].refs = self.nodes[0].refs.saturating_sub(1);
        for i in 0..len.min(w) {
            let b = Self::bit(v, w, i);
            let c = self.nodes[n].child[b] as usize;
            if c == 0 {
                return;
            }
            self.nodes[c].refs = self.nodes[c].refs.saturating_sub(1);
            if self.nodes[c].refs == 0 {
                // Nothing passes through `c` any more: unlink it and free its subtree.
                self.nodes[n].child[b] = 0;
                let mut stack = vec![c as u32];
                while let Some(x) = stack.pop() {
                    let node = self.nodes[x as usize];
                    stack.extend(node.child.iter().filter(|&&k| k != 0));
                    self.free.push(x);
                }
                return;
            }
            n = c;
        }
        self.nodes[n].ends = self.nodes[n].ends.saturating_sub(1);
    }

    /// For a key's LPM field: how many leading bits decide which prefixes it matches (every
    /// key with the same leading bits matches the same ones, so no longer prefix than the
    /// key's matches either), and whether some prefix lies on its path (then the entry it
    /// hits depends on the other fields too). `None` without a usable trie.
    pub(super) fn decided(&self, key: &Bits) -> Option<(u32, bool)> {
        let w = self.width.filter(|w| *w == key.width() && !self.broken)?;
        let root = self.nodes.first()?;
        let v = key.low_u128();
        let mut n = 0usize;
        let mut on_path = root.ends > 0;
        for i in 0..w {
            let node = self.nodes[n];
            let b = Self::bit(v, w, i);
            match node.child[b] {
                // The path leaves the trie here: bit `i` tells the key from the prefixes
                // that go on the other way, if there are any.
                0 => return Some((if node.child[1 - b] == 0 { i } else { i + 1 }, on_path)),
                c => {
                    n = c as usize;
                    on_path |= self.nodes[n].ends > 0;
                }
            }
        }
        Some((w, on_path))
    }
}
