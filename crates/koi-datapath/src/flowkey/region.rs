//! Control dependence on one body's graph: which nodes a decision at node `b` may decide
//! whether they run.
//!
//! A node `n` runs or not depending on `b`'s outcome only if `n` is reachable from `b` and
//! does not post-dominate `b` (every path from `b` to the exit passes through a
//! post-dominator, so those run whatever `b` decides). This is a superset of the classic
//! control-dependence relation (it is its transitive closure, restricted to reachable
//! nodes), hence a sound over-approximation for the state analysis. Nodes from which the
//! exit is unreachable (a parser loop without way out) post-dominate nothing but themselves.

use super::facts::Graph;

/// Post-dominator sets of a graph, as bitsets over its nodes plus the exit (`n`).
pub(crate) struct PostDom {
    n: usize,
    words: usize,
    sets: Vec<u64>,
}

impl PostDom {
    pub fn new(g: &Graph) -> PostDom {
        let n = g.succ.len();
        let words = (n + 1).div_ceil(64);
        let bit = |set: &mut [u64], i: usize| set[i / 64] |= 1 << (i % 64);
        // Nodes that reach the exit.
        let mut reaches = vec![false; n + 1];
        reaches[n] = true;
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..n {
                if !reaches[i] && g.succ[i].iter().any(|&s| reaches.get(s) == Some(&true)) {
                    reaches[i] = true;
                    changed = true;
                }
            }
        }
        let mut sets = vec![u64::MAX; words * (n + 1)];
        for (i, &r) in reaches.iter().enumerate() {
            if !r || i == n {
                let set = &mut sets[i * words..(i + 1) * words];
                set.fill(0);
                bit(set, i);
            }
        }
        let mut changed = true;
        let mut acc = vec![0u64; words];
        while changed {
            changed = false;
            for i in 0..n {
                if !reaches[i] {
                    continue;
                }
                acc.fill(u64::MAX);
                for &s in g.succ[i].iter().filter(|&&s| s <= n && reaches[s]) {
                    for (a, x) in acc.iter_mut().zip(&sets[s * words..(s + 1) * words]) {
                        *a &= x;
                    }
                }
                bit(&mut acc, i);
                let cur = &mut sets[i * words..(i + 1) * words];
                if cur != &acc[..] {
                    cur.copy_from_slice(&acc);
                    changed = true;
                }
            }
        }
        PostDom { n, words, sets }
    }

    /// Whether `a` post-dominates `b`.
    pub fn post_dominates(&self, a: usize, b: usize) -> bool {
        if a > self.n || b > self.n {
            return false;
        }
        self.sets[b * self.words + a / 64] >> (a % 64) & 1 == 1
    }
}

/// The nodes whose execution may depend on the decision at `b`.
pub(crate) fn controlled(g: &Graph, pd: &PostDom, b: usize) -> Vec<usize> {
    let n = g.succ.len();
    let mut seen = vec![false; n];
    let mut out = Vec::new();
    let mut stack: Vec<usize> = g.succ.get(b).cloned().unwrap_or_default();
    while let Some(x) = stack.pop() {
        if x >= n || seen[x] {
            continue;
        }
        seen[x] = true;
        if pd.post_dominates(x, b) {
            continue;
        }
        out.push(x);
        stack.extend(g.succ[x].iter().copied());
    }
    out
}

/// The nodes reachable from `b`, `b` included.
pub(crate) fn reachable(g: &Graph, b: usize) -> Vec<usize> {
    let n = g.succ.len();
    let mut seen = vec![false; n];
    let mut out = Vec::new();
    let mut stack = vec![b];
    while let Some(x) = stack.pop() {
        if x >= n || seen[x] {
            continue;
        }
        seen[x] = true;
        out.push(x);
        stack.extend(g.succ[x].iter().copied());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diamond_controls_its_arms_but_not_the_join() {
        // 0 -> {1, 2} -> 3 -> exit(4)
        let g = Graph {
            succ: vec![vec![1, 2], vec![3], vec![3], vec![4]],
            exits: vec![],
        };
        let pd = PostDom::new(&g);
        let mut c = controlled(&g, &pd, 0);
        c.sort();
        assert_eq!(c, [1, 2]);
        assert!(pd.post_dominates(3, 0) && !pd.post_dominates(1, 0));
        // An early return makes the rest depend on the decision.
        let g = Graph {
            succ: vec![vec![1, 2], vec![3], vec![3], vec![3], vec![]],
            exits: vec![],
        };
        let g = Graph {
            succ: vec![vec![4, 1], vec![2], vec![3], vec![4]],
            ..g
        };
        let pd = PostDom::new(&g);
        let mut c = controlled(&g, &pd, 0);
        c.sort();
        assert_eq!(c, [1, 2, 3]);
        assert_eq!(reachable(&g, 2), [2, 3]);
    }
}
