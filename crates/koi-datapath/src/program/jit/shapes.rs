//! Native code shared by programs of one shape: a program's shape (its operations without
//! the values of its constants), its table of constants, and a program's code made from its
//! shape's.

use super::*;

impl Shapes {
    pub(super) fn get(&self, k: &ShapeKey) -> Option<Arc<SharedOuts>> {
        self.map.get(k).and_then(Weak::upgrade)
    }

    pub(super) fn insert(&mut self, k: ShapeKey, s: &Arc<SharedOuts>) {
        if self.map.len() >= 64 && self.map.len().is_power_of_two() {
            self.map.retain(|_, w| w.strong_count() > 0);
        }
        self.map.insert(k, Arc::downgrade(s));
    }
}

/// `p`'s shape (see [`ShapeKey`]); `loose`: without the values of its narrow constant nodes.
pub(super) fn shape_of(p: &Program, loose: bool) -> ShapeKey {
    let outs = p
        .results
        .iter()
        .map(|r| match r {
            Res::Send(_, o) => {
                let mut o = o.clone();
                for op in &mut o.out {
                    match op {
                        OutOp::Const { value, .. } => *value = Bits::zero(value.width()),
                        OutOp::Bytes { bytes, .. } => bytes.iter_mut().for_each(|b| *b = 0),
                        OutOp::Copy { .. } | OutOp::Write { .. } => {}
                    }
                }
                Some(o)
            }
            Res::Drop(_) => None,
        })
        .collect();
    let nodes = p
        .nodes
        .iter()
        .zip(const_slots(p, loose))
        .map(|(n, slot)| match n {
            Node::Const(b) if slot.is_some() => Node::Const(Bits::zero(b.width())),
            n => n.clone(),
        })
        .collect();
    ShapeKey {
        outs,
        nodes,
        widths: p.widths.clone(),
        loose,
    }
}

/// Per node of `p`: its entry in the constant table of loose shared code (see
/// [`const_table`]), for the narrow constant nodes when `loose`; `None` for the others.
pub(super) fn const_slots(p: &Program, loose: bool) -> impl Iterator<Item = Option<u32>> + '_ {
    let mut next = 0;
    p.nodes.iter().enumerate().map(move |(i, n)| {
        let slot = matches!(n, Node::Const(_)) && loose && p.is_narrow(i as N);
        slot.then(|| {
            next += 1;
            next - 1
        })
    })
}

/// The constants `p`'s shared code loads, in the order it loads them: when `loose`, first
/// the value of each narrow constant node, in node order ([`const_slots`]); then the
/// constants the outputs write: per sent packet, per operation, the bytes of a constant
/// written at a byte boundary in whole bytes (and constant bytes) as they are to be stored,
/// 8 to an entry (see [`raw_entries`]); any other constant in pieces of at most 56 bits
/// (most significant first, as [`Lower::write_const`] writes them).
pub(super) fn const_table(p: &Program, loose: bool) -> Box<[u64]> {
    let mut t: Vec<u64> = p
        .nodes
        .iter()
        .zip(const_slots(p, loose))
        .filter_map(|(n, slot)| match n {
            Node::Const(b) if slot.is_some() => Some(b.low_u64()),
            _ => None,
        })
        .collect();
    for r in &p.results {
        let Res::Send(_, o) = r else { continue };
        for op in &o.out {
            match op {
                OutOp::Const { dst, value } if whole_bytes(*dst, value) => {
                    raw_entries(&value.to_be_bytes(), &mut t);
                }
                OutOp::Const { value, .. } => t.extend(pieces56(value).map(|(_, _, v)| v)),
                OutOp::Bytes { bytes, .. } => raw_entries(bytes, &mut t),
                OutOp::Copy { .. } | OutOp::Write { .. } => {}
            }
        }
    }
    t.into_boxed_slice()
}

/// `value` in pieces of at most 56 bits, most significant first: each piece's offset from
/// the value's most significant bit, its width and its bits.
pub(super) fn pieces56(value: &Bits) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
    let w = value.width();
    (0..w).step_by(56).map(move |done| {
        let n = (w - done).min(56);
        // Bits [w - done - n, w - done) of the value.
        (done, n, bits_at(value, w - done - n, n))
    })
}

/// Whether a constant written at output bit `dst` covers whole bytes from a byte boundary.
pub(super) fn whole_bytes(dst: u32, value: &Bits) -> bool {
    dst.is_multiple_of(8) && value.width().is_multiple_of(8) && value.width() > 0
}

/// `bytes` as table entries of 8, each read back by the processor's loads (little-endian) as
/// the bytes in order, so that the code stores them without reordering.
pub(super) fn raw_entries(bytes: &[u8], t: &mut Vec<u64>) {
    for piece in bytes.chunks(8) {
        let mut e = [0u8; 8];
        e[..piece.len()].copy_from_slice(piece);
        t.push(u64::from_le_bytes(e));
    }
}

/// `p`'s code from `s`, its shape's, with `consts`, its constant table ([`const_table`]).
pub(super) fn shared_code(p: &Program, s: Arc<SharedOuts>, consts: Box<[u64]>) -> Compiled {
    let mut inline = [0; UNICAST_CONSTS];
    // (A program with state operations runs them in `Program::run`: no unicast plan.)
    let fits = consts.len() <= UNICAST_CONSTS && p.state.is_empty();
    if let Some(dst) = inline.get_mut(..consts.len()) {
        dst.copy_from_slice(&consts);
    }
    let unicast = match (&p.results[..], &s.outs[..]) {
        ([Res::Send(to, o)], [Some(f)])
            if fits && o.cut.is_empty() && s.out_lens.first() <= Some(&o.prefix_bytes) =>
        {
            Some(Unicast {
                f: *f,
                consts: inline,
                to: *to,
                need: s.need,
                layout: o.layout(),
            })
        }
        _ => None,
    };
    Compiled {
        unicast,
        outs: s.outs.clone(),
        out_lens: s.out_lens.clone(),
        need: s.need,
        reads: 0,
        vals: vec![None; p.nodes.len()].into_boxed_slice(),
        consts,
        _code: Keep::Shared(s),
    }
}
