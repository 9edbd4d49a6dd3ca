//! The stage layout of a flow key, for the classifier's staged lookup.
//!
//! A stage is a range of key words; the stages, in the order given, partition the key. The
//! classifier hashes a subtable's masked words stage by stage and, after each stage, checks
//! that some megaflow of the subtable has that masked prefix (see the `classifier` essay). The
//! compiler chooses the stages: header groups in parse order (metadata, L2, L3, L4), so that a
//! packet that differs from every megaflow already in its metadata or L2 fields is rejected
//! after hashing one word; or from `@koi_stage(N)` annotations. Stage order need not be word
//! order: `[2..4, 0..2]` looks at words 2 and 3 first.

use core::ops::Range;

/// Largest supported key width, in words (a subtable stores word indices as `u16`).
pub const MAX_KEY_WORDS: usize = 4096;

/// Why a cache configuration was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The key width is zero or larger than [`MAX_KEY_WORDS`].
    BadWidth(usize),
    /// The stages are not a partition of `0..width` into non-empty ranges.
    BadStages,
    /// The microflow capacity is not a power of two of at least one set.
    BadCapacity(usize),
    /// The microflow set size is not a power of two up to `MAX_WAYS`.
    BadWays(usize),
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::BadWidth(w) => write!(f, "bad flow-key width: {w} words"),
            ConfigError::BadStages => f.write_str("stages must partition the key words"),
            ConfigError::BadCapacity(c) => write!(f, "bad microflow capacity: {c} entries"),
            ConfigError::BadWays(w) => write!(f, "bad microflow set size: {w} ways"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A validated stage layout: the key's words in stage order, and where each stage ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageLayout {
    /// Every word index of the key exactly once, stage by stage.
    order: Box<[u16]>,
    /// For each stage, the end of its words in `order` (strictly increasing, last = width).
    ends: Box<[u16]>,
}

impl StageLayout {
    /// One stage per word, in word order (the default).
    pub fn per_word(width: usize) -> Result<Self, ConfigError> {
        Self::new(width, &(0..width).map(|w| w..w + 1).collect::<Vec<_>>())
    }

    /// A single stage holding the whole key: no staged rejection.
    pub fn unstaged(width: usize) -> Result<Self, ConfigError> {
        Self::new(width, core::slice::from_ref(&(0..width)))
    }

    /// The stages `ranges`, in lookup order; they must partition `0..width`.
    pub fn new(width: usize, ranges: &[Range<usize>]) -> Result<Self, ConfigError> {
        if width == 0 || width > MAX_KEY_WORDS {
            return Err(ConfigError::BadWidth(width));
        }
        let mut seen = vec![false; width];
        let mut order = Vec::with_capacity(width);
        let mut ends = Vec::with_capacity(ranges.len());
        for r in ranges {
            if r.start >= r.end || r.end > width {
                return Err(ConfigError::BadStages);
            }
            for w in r.clone() {
                if core::mem::replace(&mut seen[w], true) {
                    return Err(ConfigError::BadStages);
                }
                order.push(w as u16);
            }
            ends.push(order.len() as u16);
        }
        if order.len() != width {
            return Err(ConfigError::BadStages);
        }
        Ok(StageLayout {
            order: order.into(),
            ends: ends.into(),
        })
    }

    /// The key width in words.
    pub fn width(&self) -> usize {
        self.order.len()
    }

    /// The number of stages.
    pub fn stage_count(&self) -> usize {
        self.ends.len()
    }

    /// The key's word indices in stage order.
    pub(crate) fn order(&self) -> &[u16] {
        &self.order
    }

    /// The end of each stage in [`StageLayout::order`].
    pub(crate) fn ends(&self) -> &[u16] {
        &self.ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_validate() {
        assert_eq!(StageLayout::per_word(3).map(|l| l.stage_count()), Ok(3));
        assert_eq!(StageLayout::unstaged(3).map(|l| l.stage_count()), Ok(1));
        let l = StageLayout::new(4, &[2..4, 0..2]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(l.order(), &[2, 3, 0, 1]);
        assert_eq!(l.ends(), &[2, 4]);
        assert_eq!(StageLayout::new(0, &[]), Err(ConfigError::BadWidth(0)));
        assert_eq!(
            StageLayout::new(4, &[0..1, 1..2]),
            Err(ConfigError::BadStages)
        );
        assert_eq!(
            StageLayout::new(4, &[0..3, 2..4]),
            Err(ConfigError::BadStages)
        );
        #[allow(clippy::reversed_empty_ranges)]
        let empty = [0..4, 3..3];
        assert_eq!(StageLayout::new(4, &empty), Err(ConfigError::BadStages));
        assert_eq!(
            StageLayout::new(4, &[0..1, 1..5]),
            Err(ConfigError::BadStages)
        );
    }
}
