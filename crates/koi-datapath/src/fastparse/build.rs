//! Building the fast parser from the IR parser: which states it can follow exactly, each
//! state's operations and transitions over packet bits, and the flow-key fields it fills.

use super::*;

impl FastParser {
    /// The specialised parser of `p`'s parser with flow key `layout`, or `None` if the
    /// parser does something it does not follow. `margin` is the interpreter's
    /// `parser_state_margin`.
    pub fn new(p: &Pipeline, layout: &FlowKeyLayout, margin: u64) -> Option<FastParser> {
        // (PSA: the ingress parser, which the packet meets first.)
        let role = match p.arch {
            koi_ir::Architecture::Psa => Role::IngressParser,
            _ => Role::Parser,
        };
        let Some(koi_ir::BlockRef::Parser(pid)) = p.block(role) else {
            return None;
        };
        let parser = p.parsers.get(pid)?;
        let mut inputs = match p.arch {
            koi_ir::Architecture::V1Model => Inputs {
                port: p.intrinsic("ingress_port"),
                len: p.intrinsic("packet_length"),
                unknown: p
                    .intrinsic("ingress_global_timestamp")
                    .into_iter()
                    .collect(),
                vars: Vec::new(),
                wide: Vec::new(),
                over: Vec::new(),
            },
            koi_ir::Architecture::Ubpf => Inputs {
                port: p.intrinsic("input_port"),
                len: p.intrinsic("packet_length"),
                unknown: Vec::new(),
                vars: Vec::new(),
                wide: Vec::new(),
                over: Vec::new(),
            },
            // The ports set before the parser: PSA's `ipin.ingress_port`, XDP's
            // `imd.input_port`, an eBPF filter's `input_port`.
            koi_ir::Architecture::Psa | koi_ir::Architecture::Xdp | koi_ir::Architecture::Ebpf => {
                Inputs {
                    port: p
                        .intrinsic("ipin.ingress_port")
                        .or_else(|| p.intrinsic("imd.input_port"))
                        .or_else(|| p.intrinsic("input_port")),
                    len: None,
                    unknown: Vec::new(),
                    vars: Vec::new(),
                    wide: Vec::new(),
                    over: Vec::new(),
                }
            }
        };
        // The slots the parser assigns (and `lookahead`s write): plain metadata, locals and
        // temporaries, and the fields of headers the parser fills by assignments only (no
        // `extract` or copy moves packet bits into them: the header a `lookahead` of a header
        // type lowers to), which it holds as variables.
        let (scratch, overridable) = assigned_headers(p, parser);
        for st in parser.states.values() {
            for s in &st.stmts {
                if let Stmt::Assign { dst, .. } | Stmt::Lookahead { dst } = s {
                    let Place::Slot(d) = dst else {
                        return None;
                    };
                    let slot = p.phv.slots.get(*d)?;
                    let plain = match slot.kind {
                        SlotKind::Metadata | SlotKind::Local | SlotKind::Temp => true,
                        SlotKind::HeaderField(h) if matches!(s, Stmt::Assign { .. }) => {
                            if overridable.contains(&h) {
                                fixed_offset(p, h, *d)?;
                                if !inputs.over.contains(d) {
                                    inputs.over.push(*d);
                                }
                            }
                            scratch.contains(&h) || overridable.contains(&h)
                        }
                        _ => false,
                    };
                    // A wide `lookahead` target that nothing assigns: read through slices.
                    let wide = slot.width > 64
                        && matches!(s, Stmt::Lookahead { .. })
                        && !assigned_in(parser, *d);
                    if wide && !inputs.wide.contains(d) {
                        inputs.wide.push(*d);
                    }
                    if !plain
                        || (slot.width > 64 && !wide)
                        || Some(*d) == inputs.port
                        || Some(*d) == inputs.len
                        || inputs.unknown.contains(d)
                    {
                        return None;
                    }
                    if inputs.var(*d).is_none() {
                        inputs.vars.push(*d);
                    }
                }
            }
        }
        let mut assigns = Vec::new();
        let headers = p.phv.headers.len();
        let stacks: Vec<Vec<u32>> = p
            .phv
            .stacks
            .values()
            .map(|s| s.elems.iter().map(|h| h.index()).collect())
            .collect();
        let mut siblings = vec![Vec::new(); headers];
        for u in p.phv.unions.values() {
            for &m in &u.members {
                siblings[m.index() as usize] = u
                    .members
                    .iter()
                    .filter(|x| **x != m)
                    .map(|x| x.index())
                    .collect();
            }
        }
        let mut states = Vec::with_capacity(parser.states.len());
        for (_, st) in parser.states.iter() {
            let mut ops = Vec::new();
            for s in &st.stmts {
                ops.push(match s {
                    Stmt::Extract {
                        header: HeaderRef::Header(h),
                        varbit_bits: Some(e),
                    } => {
                        let (fixed, max) = varbit_last(p, *h)?;
                        let (e, _) = key_expr(p, &inputs, e)?;
                        Op::ExtractVar {
                            h: h.index(),
                            fixed,
                            e,
                            max,
                        }
                    }
                    Stmt::Extract {
                        header,
                        varbit_bits: None,
                    } => match header {
                        HeaderRef::Header(h) => Op::Extract {
                            h: h.index(),
                            bits: fixed_width(p, *h)?,
                        },
                        HeaderRef::Next(s) => {
                            let stack = p.phv.stacks.get(*s)?;
                            let bits = fixed_width(p, *stack.elems.first()?)?;
                            Op::ExtractNext {
                                stack: s.index(),
                                bits,
                            }
                        }
                        _ => return None,
                    },
                    Stmt::Advance {
                        bits: Expr::Const(b),
                    } => {
                        let n = u32::try_from(b.to_u64()?).ok()?;
                        // v1model rejects advances that are not whole bytes: leave them to
                        // the interpreter.
                        if n % 8 != 0 {
                            return None;
                        }
                        Op::Advance(n)
                    }
                    Stmt::Advance { bits } => Op::AdvanceBy(key_expr(p, &inputs, bits)?.0),
                    Stmt::Assign {
                        dst: Place::Slot(d),
                        value,
                    } => {
                        let (e, _) = key_expr(p, &inputs, value)?;
                        let var = inputs.var(*d)?;
                        assigns.push((*d, e.clone()));
                        Op::Assign {
                            id: (assigns.len() - 1) as u32,
                            var,
                            e,
                            over: inputs.over.contains(d),
                        }
                    }
                    Stmt::Lookahead {
                        dst: Place::Slot(d),
                    } => {
                        let var = inputs.var(*d)?;
                        let w = p.phv.slots.get(*d)?.width;
                        assigns.push((*d, Ex::Ahead(w)));
                        Op::Lookahead {
                            id: (assigns.len() - 1) as u32,
                            var,
                            w,
                            wide: inputs.wide.contains(d),
                        }
                    }
                    Stmt::Verify { cond, .. } => {
                        // A range on one value, or any condition the fast parser computes
                        // (it holds when it is 1).
                        let (e, lo, hi, outside) =
                            verify_range(p, &inputs, cond).or_else(|| {
                                let (e, w) = key_expr(p, &inputs, cond)?;
                                (w == 1).then_some((e, 1, 1, false))
                            })?;
                        Op::Verify { e, lo, hi, outside }
                    }
                    Stmt::SetInvalid(HeaderRef::Header(h)) => Op::SetInvalid(h.index()),
                    Stmt::SetValid(HeaderRef::Header(h)) => {
                        let zero = matches!(
                            p.arch,
                            koi_ir::Architecture::V1Model | koi_ir::Architecture::Psa
                        );
                        let mut zeros = Vec::new();
                        if zero && scratch.contains(h) {
                            for f in &p.phv.headers.get(*h)?.fields {
                                let Some(var) = inputs.var(*f) else {
                                    continue;
                                };
                                let w = p.phv.slots.get(*f)?.width;
                                assigns.push((*f, Ex::Const(0, w)));
                                zeros.push(((assigns.len() - 1) as u32, var));
                            }
                        }
                        Op::SetValid {
                            h: h.index(),
                            zero,
                            zeros,
                        }
                    }
                    Stmt::CopyHeader {
                        dst: HeaderRef::Header(d),
                        src: HeaderRef::Header(s),
                    } if same_layout(p, *d, *s) => Op::Copy {
                        dst: d.index(),
                        src: s.index(),
                    },
                    _ => return None,
                });
            }
            let to = |t: &Target| match t {
                Target::State(s) => To::State(s.index()),
                Target::Accept => To::Accept,
                Target::Reject => To::Reject,
            };
            let trans = match st.transition.as_ref()? {
                Transition::Goto(t) => Trans::Goto(to(t)),
                Transition::Select { keys, cases } => {
                    let mut ks = Vec::new();
                    let mut widths = Vec::new();
                    for k in keys {
                        let (e, w) = key_expr(p, &inputs, k)?;
                        ks.push(e);
                        widths.push(w);
                    }
                    let mut cs = Vec::new();
                    for c in cases {
                        let mut pats = Vec::new();
                        for (ks, w) in c.keysets.iter().zip(&widths) {
                            pats.push(match ks {
                                Keyset::Pattern(pt) => pattern(pt, *w)?,
                                Keyset::ValueSet(_) => return None,
                            });
                        }
                        if pats.len() != widths.len() {
                            return None;
                        }
                        cs.push((pats, to(&c.next)));
                    }
                    Trans::Select {
                        keys: ks,
                        cases: cs,
                    }
                }
            };
            states.push(St { ops, trans });
        }
        let mut key = Vec::new();
        for f in layout.fields() {
            let slot = p.phv.slots.get(f.slot)?;
            let kind = slot.kind;
            match kind {
                SlotKind::HeaderField(h) if inputs.over.contains(&f.slot) => {
                    let hd = p.phv.headers.get(h)?;
                    key.push(KeyOp::Over {
                        var: inputs.var(f.slot)?,
                        h: h.index(),
                        off: slot.offset - hd.offset + (f.slot_width - f.lsb - f.width),
                        lsb: f.lsb,
                        len: f.width,
                        key: f.key_offset,
                    });
                }
                SlotKind::HeaderField(_) if inputs.var(f.slot).is_some() && f.width <= 64 => {
                    key.push(KeyOp::Var {
                        var: inputs.var(f.slot)?,
                        lsb: f.lsb,
                        len: f.width,
                        key: f.key_offset,
                    });
                }
                SlotKind::HeaderField(h) if matches!(slot.ty, Ty::Varbit(_)) => {
                    let hd = p.phv.headers.get(h)?;
                    varbit_last(p, h)?;
                    key.push(KeyOp::Varbit {
                        h: h.index(),
                        rel: slot.offset - hd.offset,
                        lsb: f.lsb,
                        len: f.width,
                        key: f.key_offset,
                    });
                }
                SlotKind::HeaderField(h) => {
                    let hd = p.phv.headers.get(h)?;
                    fixed_offset(p, h, f.slot)?;
                    let rel = slot.offset - hd.offset;
                    let mut start = rel + (f.slot_width - f.lsb - f.width);
                    let mut left = f.width;
                    let mut k = f.key_offset;
                    while left > 0 {
                        // Continue the previous copy when this field follows it both in the
                        // header and in the key (whole headers become a few 64-bit copies).
                        if let Some(KeyOp::Field {
                            h: ph,
                            off: po,
                            len: pl,
                            key: pk,
                        }) = key.last_mut()
                            && *ph == h.index()
                            && *po + *pl == start
                            && *pk + *pl == k
                            && *pl < 64
                        {
                            let n = left.min(64 - *pl);
                            *pl += n;
                            start += n;
                            k += n;
                            left -= n;
                            continue;
                        }
                        let len = left.min(64);
                        key.push(KeyOp::Field {
                            h: h.index(),
                            off: start,
                            len,
                            key: k,
                        });
                        start += len;
                        k += len;
                        left -= len;
                    }
                }
                SlotKind::Validity(h) => key.push(KeyOp::Valid {
                    h: h.index(),
                    key: f.key_offset,
                }),
                SlotKind::VarbitLength(v) if f.width <= 64 => {
                    let SlotKind::HeaderField(h) = p.phv.slots.get(v)?.kind else {
                        return None;
                    };
                    varbit_last(p, h)?;
                    key.push(KeyOp::VarbitLen {
                        h: h.index(),
                        lsb: f.lsb,
                        len: f.width,
                        key: f.key_offset,
                    });
                }
                SlotKind::NextIndex(s) if f.width <= 64 => key.push(KeyOp::Next {
                    stack: s.index(),
                    lsb: f.lsb,
                    len: f.width,
                    key: f.key_offset,
                }),
                SlotKind::Metadata | SlotKind::Local | SlotKind::Temp
                    if inputs.wide.contains(&f.slot) =>
                {
                    let mut left = f.width;
                    let mut off = f.slot_width - f.lsb - f.width;
                    let mut k = f.key_offset;
                    while left > 0 {
                        let len = left.min(64);
                        key.push(KeyOp::Ahead {
                            var: inputs.var(f.slot)?,
                            off,
                            len,
                            key: k,
                        });
                        off += len;
                        k += len;
                        left -= len;
                    }
                }
                SlotKind::Metadata | SlotKind::Local | SlotKind::Temp if f.width <= 64 => {
                    if let Some(var) = inputs.var(f.slot) {
                        key.push(KeyOp::Var {
                            var,
                            lsb: f.lsb,
                            len: f.width,
                            key: f.key_offset,
                        });
                    } else if Some(f.slot) == inputs.port {
                        key.push(KeyOp::Port {
                            lsb: f.lsb,
                            len: f.width,
                            key: f.key_offset,
                        });
                    } else if Some(f.slot) == inputs.len {
                        key.push(KeyOp::Len {
                            lsb: f.lsb,
                            len: f.width,
                            key: f.key_offset,
                        });
                    } else if inputs.unknown.contains(&f.slot) || written_by_parser(p, f.slot) {
                        return None;
                    }
                    // Otherwise zero when the parser ends (the parser writes only headers).
                }
                _ => return None,
            }
        }
        let vars_read = !inputs.over.is_empty()
            || key.iter().any(|k| matches!(k, KeyOp::Var { .. }))
            || states.iter().any(|st| match &st.trans {
                Trans::Select { keys, .. } => keys.iter().any(reads_var),
                Trans::Goto(_) => false,
            })
            || states.iter().any(|st| {
                st.ops.iter().any(|o| match o {
                    Op::Verify { e, .. } | Op::AdvanceBy(e) | Op::ExtractVar { e, .. } => {
                        reads_var(e)
                    }
                    _ => false,
                })
            });
        Some(FastParser {
            states,
            start: parser.start.index(),
            headers,
            stacks,
            siblings,
            key,
            words: layout.key_words().max(1),
            stop_word: layout.stop_word(),
            margin,
            hdr_over: (0..headers)
                .map(|h| {
                    let over = &inputs.over;
                    over.iter()
                        .filter(|s| {
                            p.phv.slots.get(**s).map(|x| x.kind)
                                == Some(SlotKind::HeaderField(koi_ir::HeaderId::new(h as u32)))
                        })
                        .filter_map(|s| inputs.var(*s))
                        .collect()
                })
                .collect(),
            var_slots: inputs.vars,
            vars_read,
            assigns,
            v1model: matches!(
                p.arch,
                koi_ir::Architecture::V1Model | koi_ir::Architecture::Psa
            ),
        })
    }
}

/// A `verify` condition as a range of one value: `e == c`, `e >= c`, `e > c`, `e <= c`,
/// `e < c` (unsigned), with the constant on either side; `None` for anything else (the
/// program then has no fast parser).
pub(super) fn verify_range(
    p: &Pipeline,
    inputs: &Inputs,
    cond: &Expr,
) -> Option<(Ex, u64, u64, bool)> {
    let Expr::Binary(op, a, b) = cond else {
        return None;
    };
    let (e, c, flipped) = match (&**a, &**b) {
        (x, Expr::Const(c)) => (x, c, false),
        (Expr::Const(c), x) => (x, c, true),
        _ => return None,
    };
    let (ex, w) = key_expr(p, inputs, e)?;
    let c = c.to_u64()?;
    let max = mask(w);
    if c > max {
        return None;
    }
    // `e op c`, or `c op e` when flipped.
    use koi_ir::BinOp::*;
    if *op == Ne {
        return Some((ex, c, c, true));
    }
    let (lo, hi) = match (op, flipped) {
        (Eq, _) => (c, c),
        (GeU, false) | (LeU, true) => (c, max),
        (GtU, false) | (LtU, true) => (c.checked_add(1)?, max),
        (LeU, false) | (GeU, true) => (0, c),
        (LtU, false) | (GtU, true) => (0, c.checked_sub(1)?),
        _ => return None,
    };
    (lo <= hi).then_some((ex, lo, hi, false))
}

/// Whether `e`'s value is fixed by the parse path (a stack's next index, constants): the
/// same for every packet that takes the path.
pub(crate) fn path_fixed(e: &Ex) -> bool {
    match e {
        Ex::Next(_) | Ex::Const(..) => true,
        Ex::Bin(_, a, b, ..) => path_fixed(a) && path_fixed(b),
        Ex::Un(_, a, _) => path_fixed(a),
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) => path_fixed(v),
        _ => false,
    }
}

/// Pins every input of `e` (a value the parse path depends on) to its value in `pkt`: the
/// header fields it reads as ranges of one value each (`(off, len, v, v)`), the ingress port
/// as a port check. `None` if `e` reads anything else (variables, the packet length, a
/// stack element through a run-time index).
pub(super) fn pin_fields(
    e: &Ex,
    p: &Parsed,
    pkt: &[u8],
    port: u64,
    ranges: &mut Vec<(u32, u32, u64, u64)>,
    port_checks: &mut Vec<(u32, u64)>,
) -> Option<()> {
    match e {
        Ex::Field { h, off, w, .. } => match *p.hdr_off.get(*h as usize)? {
            NONE => {} // 0 on this path whatever the packet
            base => {
                let v = read_bits(pkt, base + off, *w);
                ranges.push((base + off, *w, v, v));
            }
        },
        Ex::Const(..) | Ex::Valid(_) | Ex::Next(_) => {}
        Ex::Port(w) => port_checks.push((*w, port & mask(*w))),
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) | Ex::Un(_, v, _) => {
            pin_fields(v, p, pkt, port, ranges, port_checks)?
        }
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => {
            pin_fields(a, p, pkt, port, ranges, port_checks)?;
            pin_fields(b, p, pkt, port, ranges, port_checks)?;
        }
        // (The parse pinned what the variables were computed from: `Parsed::pins`.)
        Ex::Var(..) | Ex::AheadSlice { .. } | Ex::Over { .. } => {}
        Ex::Len(_) | Ex::Ahead(_) | Ex::StackField { .. } => return None,
    }
    Some(())
}

/// Pins (as ranges of one value each) the packet bits variable `var`'s final value was
/// computed from, and gives that value: a constant of any packet with those bits. `None` if
/// it came from anything else.
pub(super) fn pin_var(
    p: &Parsed,
    pkt: &[u8],
    var: u32,
    ranges: &mut Vec<(u32, u32, u64, u64)>,
) -> Option<u64> {
    let (a, b) = *p.prov.get(var as usize)?;
    for &r in p.prov_ranges.get(a as usize..b as usize)? {
        if r == UNKNOWN {
            return None;
        }
        let v = read_bits(pkt, r.0, r.1);
        ranges.push((r.0, r.1, v, v));
    }
    p.vars.get(var as usize).copied()
}

/// An unknown source of a variable's value in [`Parsed::prov_ranges`].
pub(super) const UNKNOWN: (u32, u32) = (NONE, 0);

/// Appends to `out.prov_ranges` the packet bits `e` is computed from ([`UNKNOWN`] for
/// anything else that varies: the port, the length, a run-time stack index).
pub(super) fn provenance(e: &Ex, out: &mut Parsed) {
    match e {
        Ex::Field { h, off, w, .. } => {
            let base = out.hdr_off[*h as usize];
            if base != NONE {
                out.prov_ranges.push((base + off, *w));
            }
        }
        Ex::Var(i, _) => {
            let (a, b) = out.prov[*i as usize];
            for j in a..b {
                let r = out.prov_ranges[j as usize];
                out.prov_ranges.push(r);
            }
        }
        Ex::AheadSlice { .. } => {
            if let Some(r) = ahead_bits(e, out) {
                out.prov_ranges.push(r);
            }
        }
        Ex::Over { var, field } => {
            if out.ovr[*var as usize] {
                provenance(&Ex::Var(*var, 0), out);
            } else {
                provenance(field, out);
            }
        }
        Ex::Const(..) | Ex::Valid(_) | Ex::Next(_) => {}
        Ex::Port(_) | Ex::Len(_) | Ex::Ahead(_) | Ex::StackField { .. } => {
            out.prov_ranges.push(UNKNOWN)
        }
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) | Ex::Un(_, v, _) => {
            provenance(v, out)
        }
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => {
            provenance(a, out);
            provenance(b, out);
        }
    }
}

/// Adds to `out.pins` what the variables `e` reads were computed from.
pub(super) fn pin_vars(e: &Ex, out: &mut Parsed) {
    match e {
        Ex::Var(i, _) => {
            let (a, b) = out.prov[*i as usize];
            for j in a..b {
                match out.prov_ranges[j as usize] {
                    UNKNOWN => out.unpinned = true,
                    r => out.pins.push(r),
                }
            }
        }
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) | Ex::Un(_, v, _) => pin_vars(v, out),
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => {
            pin_vars(a, out);
            pin_vars(b, out);
        }
        Ex::StackField { index, .. } => pin_vars(index, out),
        Ex::AheadSlice { .. } => {
            if let Some(r) = ahead_bits(e, out) {
                out.pins.push(r);
            }
        }
        Ex::Over { var, field } => {
            if out.ovr[*var as usize] {
                pin_vars(&Ex::Var(*var, 0), out);
            } else if let Ex::Field { h, off, w, .. } = **field {
                let base = out.hdr_off[h as usize];
                if base != NONE {
                    out.pins.push((base + off, w));
                }
            }
        }
        _ => {}
    }
}

/// The packet bits (offset, length) an [`Ex::AheadSlice`] reads now (`None`: its
/// `lookahead` has not run, it reads 0).
pub(super) fn ahead_bits(e: &Ex, out: &Parsed) -> Option<(u32, u32)> {
    let Ex::AheadSlice { var, hi, lo, w } = *e else {
        return None;
    };
    let at = *out.ahead_at.get(var as usize)?;
    (at != NONE).then_some((at + (w - 1 - hi), hi - lo + 1))
}

/// Whether `e` reads a parser variable.
pub(super) fn reads_var(e: &Ex) -> bool {
    match e {
        Ex::Var(..) | Ex::AheadSlice { .. } | Ex::Over { .. } => true,
        Ex::Slice(v, ..) | Ex::Trunc(v, _) | Ex::Sext(v, ..) => reads_var(v),
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => reads_var(a) || reads_var(b),
        Ex::Un(_, a, _) => reads_var(a),
        Ex::StackField { index, .. } => reads_var(index),
        _ => false,
    }
}

/// The width of header `h` if it has no varbit field.
pub(super) fn fixed_width(p: &Pipeline, h: koi_ir::HeaderId) -> Option<u32> {
    let hd = p.phv.headers.get(h)?;
    let varbit = hd
        .fields
        .iter()
        .any(|f| matches!(p.phv.slots.get(*f).map(|s| s.ty), Some(Ty::Varbit(_))));
    (!varbit).then_some(hd.width)
}

/// The fixed bits and the varbit's maximum of header `h` if its varbit field is its last
/// (the offsets of its other fields do not depend on the varbit's length).
pub(super) fn varbit_last(p: &Pipeline, h: koi_ir::HeaderId) -> Option<(u32, u32)> {
    let hd = p.phv.headers.get(h)?;
    let last = p.phv.slots.get(*hd.fields.last()?)?;
    let Ty::Varbit(max) = last.ty else {
        return None;
    };
    let fixed = hd.width.checked_sub(max)?;
    let others = &hd.fields[..hd.fields.len() - 1];
    let fixed_fields = others.iter().all(|f| {
        p.phv
            .slots
            .get(*f)
            .is_some_and(|s| !matches!(s.ty, Ty::Varbit(_)))
    });
    fixed_fields.then_some((fixed, max))
}

/// `Some` if field `slot` of header `h` is at a fixed offset in the header's bits: it is
/// not a varbit and no varbit precedes it.
pub(super) fn fixed_offset(p: &Pipeline, h: koi_ir::HeaderId, slot: SlotId) -> Option<()> {
    let hd = p.phv.headers.get(h)?;
    for f in &hd.fields {
        if matches!(p.phv.slots.get(*f)?.ty, Ty::Varbit(_)) {
            return None;
        }
        if *f == slot {
            return Some(());
        }
    }
    None
}

/// The headers whose fields parser `parser` assigns, outside stacks and unions and never
/// copied from or to: `(scratch, overridable)`. Scratch headers no `extract` fills either
/// (all their fields plain bits of up to 64): the fast parser holds their fields as
/// variables. Overridable headers are also extracted: it holds their assigned fields as
/// variables over the packet's bits ([`Ex::Over`]).
pub(super) fn assigned_headers(
    p: &Pipeline,
    parser: &koi_ir::Parser,
) -> (Vec<koi_ir::HeaderId>, Vec<koi_ir::HeaderId>) {
    let (mut assigned, mut extracted, mut copied) = (Vec::new(), Vec::new(), Vec::new());
    for st in parser.states.values() {
        for s in &st.stmts {
            match s {
                Stmt::Assign {
                    dst: Place::Slot(d),
                    ..
                } => {
                    if let Some(SlotKind::HeaderField(h)) = p.phv.slots.get(*d).map(|x| x.kind) {
                        assigned.push(h);
                    }
                }
                Stmt::Extract {
                    header: HeaderRef::Header(h),
                    ..
                } => extracted.push(*h),
                Stmt::CopyHeader { dst, src } => {
                    for r in [dst, src] {
                        if let HeaderRef::Header(h) = r {
                            copied.push(*h);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let in_stack = |h: koi_ir::HeaderId| p.phv.stacks.values().any(|s| s.elems.contains(&h));
    let in_union = |h: koi_ir::HeaderId| p.phv.unions.values().any(|u| u.members.contains(&h));
    let plain = |h: koi_ir::HeaderId| {
        p.phv.headers.get(h).is_some_and(|hd| {
            hd.fields.iter().all(|f| {
                p.phv
                    .slots
                    .get(*f)
                    .is_some_and(|s| matches!(s.ty, Ty::Bits(_)) && s.width <= 64)
            })
        })
    };
    assigned.sort_by_key(|h| h.index());
    assigned.dedup();
    assigned.retain(|&h| !copied.contains(&h) && !in_stack(h) && !in_union(h));
    let (scratch, overridable): (Vec<_>, Vec<_>) =
        assigned.into_iter().partition(|h| !extracted.contains(h));
    (
        scratch.into_iter().filter(|&h| plain(h)).collect(),
        overridable,
    )
}

/// Whether headers `a` and `b` have the same type, without varbit fields (a header copy
/// then moves the same bits).
pub(super) fn same_layout(p: &Pipeline, a: koi_ir::HeaderId, b: koi_ir::HeaderId) -> bool {
    let (Some(x), Some(y)) = (p.phv.headers.get(a), p.phv.headers.get(b)) else {
        return false;
    };
    x.type_name == y.type_name && fixed_width(p, a).is_some() && fixed_width(p, b).is_some()
}

/// Whether a state of `parser` assigns `slot`.
pub(super) fn assigned_in(parser: &koi_ir::Parser, slot: SlotId) -> bool {
    parser.states.values().any(|st| {
        st.stmts.iter().any(|s| match s {
            Stmt::Assign { dst, .. } => dst.slot() == Some(slot),
            _ => false,
        })
    })
}

/// Whether any parser state writes `slot` other than through `extract`.
pub(super) fn written_by_parser(p: &Pipeline, slot: SlotId) -> bool {
    p.parsers.values().any(|pr| {
        pr.states.values().any(|st| {
            st.stmts.iter().any(|s| match s {
                Stmt::Assign { dst, .. } | Stmt::Lookahead { dst } | Stmt::PacketLength { dst } => {
                    dst.slot() == Some(slot)
                }
                _ => false,
            })
        })
    })
}

/// Whether `e` reads variable `var` (or a slice of it).
pub(super) fn reads_var_at(e: &Ex, var: u32) -> bool {
    match e {
        Ex::Var(v, _) | Ex::AheadSlice { var: v, .. } | Ex::Over { var: v, .. } => *v == var,
        Ex::Slice(a, ..) | Ex::Trunc(a, _) | Ex::Sext(a, ..) | Ex::Un(_, a, _) => {
            reads_var_at(a, var)
        }
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => reads_var_at(a, var) || reads_var_at(b, var),
        Ex::StackField { index, .. } => reads_var_at(index, var),
        _ => false,
    }
}

/// Whether `e` reads header `h`'s fields (`validity`: its validity).
pub(super) fn reads(e: &Ex, h: u32, validity: bool) -> bool {
    match e {
        Ex::Field { h: x, .. } => !validity && *x == h,
        Ex::Valid(x) => validity && *x == h,
        Ex::Slice(a, ..) | Ex::Trunc(a, _) | Ex::Sext(a, ..) => reads(a, h, validity),
        Ex::Concat(a, b, _) | Ex::Bin(_, a, b, ..) => {
            reads(a, h, validity) || reads(b, h, validity)
        }
        Ex::Un(_, a, _) => reads(a, h, validity),
        Ex::Over { field, .. } => reads(field, h, validity),
        // The element it read is in `Parsed::stack_reads`.
        Ex::StackField { index, .. } => reads(index, h, validity),
        // (Packet bits, which no header operation moves.)
        Ex::Next(_)
        | Ex::Port(_)
        | Ex::Len(_)
        | Ex::Const(..)
        | Ex::Var(..)
        | Ex::Ahead(_)
        | Ex::AheadSlice { .. } => false,
    }
}

pub(super) fn mask(w: u32) -> u64 {
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

/// A select key as an [`Ex`] and its width.
pub(super) fn key_expr(p: &Pipeline, inputs: &Inputs, e: &Expr) -> Option<(Ex, u32)> {
    Some(match e {
        Expr::Const(b) => (Ex::Const(b.to_u64()?, b.width()), b.width()),
        Expr::Bool(b) => (Ex::Const(u64::from(*b), 1), 1),
        Expr::Slot(s) => {
            let slot = p.phv.slots.get(*s)?;
            if slot.width > 64 {
                return None;
            }
            let e = match slot.kind {
                SlotKind::HeaderField(h) if inputs.over.contains(s) => {
                    let hd = p.phv.headers.get(h)?;
                    Ex::Over {
                        var: inputs.var(*s)?,
                        field: Box::new(Ex::Field {
                            h: h.index(),
                            off: slot.offset - hd.offset,
                            w: slot.width,
                            slot: *s,
                        }),
                    }
                }
                SlotKind::HeaderField(_) if inputs.var(*s).is_some() => {
                    Ex::Var(inputs.var(*s)?, slot.width)
                }
                SlotKind::HeaderField(h) => {
                    fixed_offset(p, h, *s)?;
                    let hd = p.phv.headers.get(h)?;
                    Ex::Field {
                        h: h.index(),
                        off: slot.offset - hd.offset,
                        w: slot.width,
                        slot: *s,
                    }
                }
                SlotKind::Validity(h) => Ex::Valid(h.index()),
                SlotKind::NextIndex(st) => Ex::Next(st.index()),
                SlotKind::Metadata | SlotKind::Local | SlotKind::Temp => {
                    if let Some(v) = inputs.var(*s) {
                        Ex::Var(v, slot.width)
                    } else if Some(*s) == inputs.port {
                        Ex::Port(slot.width)
                    } else if Some(*s) == inputs.len {
                        Ex::Len(slot.width)
                    } else if inputs.unknown.contains(s) || written_by_parser(p, *s) {
                        return None;
                    } else {
                        Ex::Const(0, slot.width)
                    }
                }
                SlotKind::VarbitLength(_) => return None,
            };
            (e, slot.width)
        }
        Expr::IsValid(HeaderRef::Header(h)) => (Ex::Valid(h.index()), 1),
        Expr::Slice { value, hi, lo } if matches!(&**value, Expr::Slot(s) if inputs.wide.contains(s)) =>
        {
            let Expr::Slot(s) = &**value else {
                return None;
            };
            let w = p.phv.slots.get(*s)?.width;
            if hi - lo + 1 > 64 || *hi >= w {
                return None;
            }
            let e = Ex::AheadSlice {
                var: inputs.var(*s)?,
                hi: *hi,
                lo: *lo,
                w,
            };
            (e, hi - lo + 1)
        }
        Expr::Slice { value, hi, lo } => {
            let (v, _) = key_expr(p, inputs, value)?;
            (Ex::Slice(Box::new(v), *lo, hi - lo + 1), hi - lo + 1)
        }
        Expr::Binary(BinOp::Concat, a, b) => {
            let (a, wa) = key_expr(p, inputs, a)?;
            let (b, wb) = key_expr(p, inputs, b)?;
            if wa + wb > 64 {
                return None;
            }
            (Ex::Concat(Box::new(a), Box::new(b), wb), wa + wb)
        }
        // (`++` is the arm above.)
        Expr::Binary(op, a, b) => {
            let (a, w) = key_expr(p, inputs, a)?;
            let (b, wb) = key_expr(p, inputs, b)?;
            if w != wb && !matches!(op, BinOp::Shl | BinOp::ShrU | BinOp::ShrS) {
                return None;
            }
            let bool_result = op.is_comparison() || matches!(op, BinOp::And | BinOp::Or);
            let rw = if bool_result { 1 } else { w };
            (Ex::Bin(*op, Box::new(a), Box::new(b), w, wb), rw)
        }
        Expr::Unary(op, a) => {
            let (a, w) = key_expr(p, inputs, a)?;
            (Ex::Un(*op, Box::new(a), w), w)
        }
        Expr::StackField {
            stack,
            index,
            field,
        } => {
            let st = p.phv.stacks.get(*stack)?;
            let (index, _) = key_expr(p, inputs, index)?;
            // The field's place in each element (one header type: the same in all).
            let mut at = None;
            let mut slots = Vec::with_capacity(st.elems.len());
            for &h in &st.elems {
                fixed_width(p, h)?;
                let hd = p.phv.headers.get(h)?;
                let id = *hd.fields.get(*field as usize)?;
                let slot = p.phv.slots.get(id)?;
                slots.push(id);
                let here = (slot.offset - hd.offset, slot.width);
                if slot.width > 64 || at.is_some_and(|a| a != here) {
                    return None;
                }
                at = Some(here);
            }
            let (off, w) = at?;
            let elems = st.elems.iter().map(|h| h.index()).collect();
            (
                Ex::StackField {
                    elems,
                    slots,
                    index: Box::new(index),
                    off,
                    w,
                },
                w,
            )
        }
        Expr::Cast(Cast::Resize { width, signed }, v) => {
            let (v, w) = key_expr(p, inputs, v)?;
            if *width > 64 {
                return None;
            }
            if *width == w {
                (v, w)
            } else if *signed && *width > w {
                (Ex::Sext(Box::new(v), w, *width), *width)
            } else {
                // Truncation, or zero extension (the mask keeps every bit).
                (Ex::Trunc(Box::new(v), *width), *width)
            }
        }
        Expr::Cast(Cast::ToBool | Cast::FromBool, v) => key_expr(p, inputs, v)?,
        _ => return None,
    })
}

/// A keyset pattern on a key of `w` bits.
/// For a `select` of one key (`keys` of them) whose value `v` (`m`: the key's mask) took
/// the default case after cases that are each one exact value: those values, which any
/// packet taking the same way must differ from. `None` for any other select or case.
pub(super) fn default_after_exact(
    keys: usize,
    cases: &[(Vec<Pat>, To)],
    v: u64,
    m: u64,
) -> Option<Vec<u64>> {
    if keys != 1 {
        return None;
    }
    let mut values = Vec::new();
    for (pats, _) in cases {
        match pats.as_slice() {
            [Pat::Mask { v: pv, m: pm }] if *pm == m => {
                if *pv & m == v {
                    return None; // the packet took this exact case
                }
                values.push(*pv & m);
            }
            [Pat::Mask { m: 0, .. }] => return Some(values),
            _ => return None,
        }
    }
    None
}

pub(super) fn pattern(pt: &Pattern, w: u32) -> Option<Pat> {
    let m = mask(w);
    Some(match pt {
        Pattern::Exact(v) => Pat::Mask {
            v: v.resize(w).to_u64()?,
            m,
        },
        Pattern::Mask { value, mask: mk } => Pat::Mask {
            v: value.resize(w).to_u64()?,
            m: mk.resize(w).to_u64()? & m,
        },
        Pattern::Prefix { value, len } => {
            let pm = if *len == 0 {
                0
            } else {
                (m >> (w - (*len).min(w))) << (w - (*len).min(w))
            };
            Pat::Mask {
                v: value.resize(w).to_u64()?,
                m: pm & m,
            }
        }
        Pattern::Range { lo, hi } => Pat::Range {
            lo: lo.resize(w).to_u64()?,
            hi: hi.resize(w).to_u64()?,
        },
        Pattern::Any => Pat::Mask { v: 0, m: 0 },
    })
}
