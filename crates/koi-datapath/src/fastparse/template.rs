//! Parse-path templates: a parse path seen once becomes a template that checks the bytes
//! the path depends on and copies the key straight from the packet (with native code once
//! hot), so that most packets do not walk the state graph.

use super::*;

impl FastParser {
    /// Gives `tpl` native code if it can have some and the code computes `key` (the
    /// template's key) for `pkt`: `Some(true)`; `Some(false)`: the code's key differed;
    /// `None`: no code.
    #[inline(never)]
    pub(super) fn compile_template(
        &self,
        tpl: &mut Template,
        jit: &mut Jit,
        seed: u64,
        pkt: &[u8],
        port: u64,
        key: &[u64],
    ) -> Option<bool> {
        let code = jit::compile(jit, tpl, self.words, seed)?;
        let mut k = vec![0; self.words];
        let mut h = None;
        let want = koi_cache::WordHash::from_seed(Some(seed)).hash(key);
        if code.run(pkt, port, &mut k, &mut h) != Some(true)
            || k[..key.len()] != *key
            || (key.len() == self.words && h != Some(want))
        {
            return Some(false);
        }
        tpl.code = Some(Arc::new(code));
        Some(true)
    }

    /// The template of the path `p` took, if it can have one.
    pub(super) fn template(&self, p: &Parsed, pkt: &[u8], port: u64) -> Option<Template> {
        // (A template of a parse stopped by a failed condition would have to check it.)
        if p.unpinned || p.reextracted || p.stopped_unrecorded {
            return None;
        }
        let mut checks = Vec::new();
        let mut excludes = Vec::new();
        let mut port_checks = Vec::new();
        let mut ranges = Vec::new();
        for &(state, i, value, elem) in &p.selects {
            let Trans::Select { keys, cases } = &self.states.get(state as usize)?.trans else {
                return None;
            };
            let key = keys.get(i as usize)?;
            if reads_var(key) {
                pin_fields(key, p, pkt, port, &mut ranges, &mut port_checks)?;
                continue;
            }
            match key {
                Ex::Field { h, off, w, .. } => {
                    let base = *p.hdr_off.get(*h as usize)?;
                    if base == NONE {
                        continue; // reads as 0 on this path whatever the packet
                    }
                    match default_after_exact(keys.len(), cases, value, mask(*w)) {
                        Some(values) => excludes.push((base + off, *w, values)),
                        None => checks.push(Check {
                            off: base + off,
                            len: *w,
                            value,
                        }),
                    }
                }
                Ex::Slice(inner, lo, w) => match &**inner {
                    Ex::Field { h, off, w: fw, .. } if lo + w <= *fw => {
                        let base = *p.hdr_off.get(*h as usize)?;
                        if base == NONE {
                            continue;
                        }
                        checks.push(Check {
                            off: base + off + (fw - lo - w),
                            len: *w,
                            value,
                        });
                    }
                    _ => return None,
                },
                // Fixed by the path itself.
                Ex::Valid(_) | Ex::Next(_) | Ex::Const(..) => {}
                Ex::Port(w) => port_checks.push((*w, value)),
                Ex::StackField { index, off, w, .. } if path_fixed(index) => {
                    // The element the index named then (its bits have not moved since).
                    let base = match elem {
                        NONE => continue, // past the stack: 0 whatever the packet
                        h => *p.hdr_off.get(h as usize)?,
                    };
                    if base == NONE {
                        continue;
                    }
                    checks.push(Check {
                        off: base + off,
                        len: *w,
                        value,
                    });
                }
                _ => return None,
            }
        }
        for &(state, oi, elem) in &p.verified {
            // (A `!=` that held would need a check of its own: no template.)
            let Some(Op::Verify {
                e,
                lo,
                hi,
                outside: false,
            }) = self.states.get(state as usize)?.ops.get(oi as usize)
            else {
                return None;
            };
            if reads_var(e) {
                pin_fields(e, p, pkt, port, &mut ranges, &mut port_checks)?;
                continue;
            }
            let (off, len) = match e {
                Ex::Field { h, off, w, .. } => match *p.hdr_off.get(*h as usize)? {
                    NONE => continue, // reads as 0 on this path whatever the packet
                    base => (base + off, *w),
                },
                Ex::Slice(inner, lo_bit, w) => match &**inner {
                    Ex::Field { h, off, w: fw, .. } if lo_bit + w <= *fw => {
                        match *p.hdr_off.get(*h as usize)? {
                            NONE => continue,
                            base => (base + off + (fw - lo_bit - w), *w),
                        }
                    }
                    _ => return None,
                },
                // Fixed by the path itself.
                Ex::Valid(_) | Ex::Next(_) | Ex::Const(..) => continue,
                Ex::StackField { index, off, w, .. } if path_fixed(index) => match elem {
                    NONE => continue,
                    h => match *p.hdr_off.get(h as usize)? {
                        NONE => continue,
                        base => (base + off, *w),
                    },
                },
                _ => return None,
            };
            ranges.push((off, len, *lo, *hi));
        }
        // Each `advance` by a packet value and each varbit size: the path's later offsets
        // hold for that value only, which the fields it is computed from (pinned whole) fix.
        for &(state, oi, _) in &p.advanced {
            let (Some(Op::AdvanceBy(e)) | Some(Op::ExtractVar { e, .. })) =
                self.states.get(state as usize)?.ops.get(oi as usize)
            else {
                return None;
            };
            pin_fields(e, p, pkt, port, &mut ranges, &mut port_checks)?;
        }
        for &(off, len) in &p.pins {
            let v = read_bits(pkt, off, len);
            ranges.push((off, len, v, v));
        }
        let budget = p.visited.saturating_sub(self.margin).div_ceil(64);
        let min_len = (p.cursor.max(p.ahead_end).div_ceil(8) as usize).max(budget as usize);
        let mut key_base = vec![0u64; self.words];
        // A parse stopped on the packet's end holds for the packets that end before the bits
        // it needed (`8 len < short_bits`), and their keys say so.
        let max_len = match p.short() {
            true => {
                crate::flowkey::write_stop(&mut key_base, self.stop_word, p.short_bits);
                usize::try_from(p.short_bits.div_ceil(8)).ok()?
            }
            false => usize::MAX,
        };
        if min_len >= max_len {
            return None;
        }
        let mut copies: Vec<Copy> = Vec::new();
        let (mut port_ops, mut len_ops) = (Vec::new(), Vec::new());
        for op in &self.key {
            match *op {
                KeyOp::Field { h, off, len, key } => {
                    let base = p.hdr_off[h as usize];
                    if base == NONE {
                        continue;
                    }
                    let off = base + off;
                    match copies.last_mut() {
                        Some(c)
                            if c.off + c.len == off
                                && c.key + c.len == key
                                && c.len + len <= 64 =>
                        {
                            c.len += len
                        }
                        _ => copies.push(Copy { off, len, key }),
                    }
                }
                KeyOp::Valid { h, key } => {
                    if p.valid[h as usize] {
                        write_key(&mut key_base, key, 1, 1);
                    }
                }
                KeyOp::Next {
                    stack,
                    lsb,
                    len,
                    key,
                } => write_key(
                    &mut key_base,
                    key,
                    len,
                    u64::from(p.next[stack as usize]) >> lsb,
                ),
                KeyOp::Port { lsb, len, key } => port_ops.push((lsb, len, key)),
                KeyOp::Len { lsb, len, key } => len_ops.push((lsb, len, key)),
                // A variable computed from packet bits: a constant for the bits pinned.
                KeyOp::Var { var, lsb, len, key } => {
                    let v = pin_var(p, pkt, var, &mut ranges)?;
                    write_key(&mut key_base, key, len, v >> lsb);
                }
                // Overwritten: a constant for the bits pinned; else the packet's bits.
                KeyOp::Over {
                    var,
                    h,
                    off,
                    lsb,
                    len,
                    key,
                } => {
                    if p.ovr[var as usize] {
                        let v = pin_var(p, pkt, var, &mut ranges)?;
                        write_key(&mut key_base, key, len, v >> lsb);
                    } else {
                        let base = p.hdr_off[h as usize];
                        if base != NONE {
                            copies.push(Copy {
                                off: base + off,
                                len,
                                key,
                            });
                        }
                    }
                }
                // (Where the `lookahead` read is fixed on the path.)
                KeyOp::Ahead { var, off, len, key } => {
                    let at = p.ahead_at[var as usize];
                    if at != NONE {
                        copies.push(Copy {
                            off: at + off,
                            len,
                            key,
                        });
                    }
                }
                KeyOp::VarbitLen { h, lsb, len, key } => write_key(
                    &mut key_base,
                    key,
                    len,
                    u64::from(p.varbit[h as usize]) >> lsb,
                ),
                // (The varbit's length is fixed on the path: its size is pinned.)
                KeyOp::Varbit {
                    h,
                    rel,
                    lsb,
                    len,
                    key,
                } => {
                    let base = p.hdr_off[h as usize];
                    if base == NONE {
                        continue;
                    }
                    let n = p.varbit[h as usize];
                    for (off, len, key) in KeyOp::varbit_pieces(rel, lsb, len, key, n) {
                        copies.push(Copy {
                            off: base + off,
                            len,
                            key,
                        });
                    }
                }
            }
        }
        // Copies split at key-word boundaries, then as loads where the length allows.
        let mut loads = Vec::new();
        let mut rest = Vec::new();
        for c in copies {
            let mut c = c;
            loop {
                let room = 64 - c.key % 64;
                let len = c.len.min(room);
                let piece = Copy {
                    off: c.off,
                    len,
                    key: c.key,
                };
                match Load::new(piece.off, piece.len, min_len) {
                    Some(mut l) => {
                        l.word = (piece.key / 64) as usize;
                        l.kshl = 64 - piece.key % 64 - piece.len;
                        loads.push(l);
                    }
                    None => rest.push(piece),
                }
                if len == c.len {
                    break;
                }
                c = Copy {
                    off: c.off + len,
                    len: c.len - len,
                    key: c.key + len,
                };
            }
        }
        if loads.iter().any(|l| l.word >= self.words) {
            return None;
        }
        let (mut check_loads, mut slow_checks) = (Vec::new(), Vec::new());
        for c in checks {
            match Load::new(c.off, c.len, min_len) {
                Some(l) => check_loads.push((l, c.value)),
                None => slow_checks.push(c),
            }
        }
        Some(Template {
            min_len,
            max_len,
            checks: slow_checks,
            excludes,
            port_checks,
            check_loads,
            key_base,
            loads,
            copies: rest,
            port_ops,
            len_ops,
            matched: 0,
            code: None,
            jit_tried: false,
            recent: 0,
            ranges,
        })
    }
}

impl Template {
    #[inline]
    pub(super) fn matches(&self, pkt: &[u8], port: u64) -> bool {
        (self.min_len..self.max_len).contains(&pkt.len())
            && self.check_loads.iter().all(|(l, v)| l.value(pkt) == *v)
            && self
                .checks
                .iter()
                .all(|c| read_bits(pkt, c.off, c.len) == c.value)
            && self
                .excludes
                .iter()
                .all(|(off, len, vs)| !vs.contains(&read_bits(pkt, *off, *len)))
            && self.port_checks.iter().all(|&(w, v)| port & mask(w) == v)
            && self.ranges.iter().all(|&(off, len, lo, hi)| {
                let v = read_bits(pkt, off, len);
                lo <= v && v <= hi
            })
    }

    #[inline]
    pub(super) fn fill(&self, pkt: &[u8], port: u64, key: &mut [u64]) {
        key.copy_from_slice(&self.key_base[..key.len()]);
        for l in &self.loads {
            if let Some(w) = key.get_mut(l.word) {
                *w |= l.value(pkt) << l.kshl;
            }
        }
        for c in &self.copies {
            write_key(key, c.key, c.len, read_bits(pkt, c.off, c.len));
        }
        for &(lsb, len, k) in &self.port_ops {
            write_key(key, k, len, port >> lsb);
        }
        for &(lsb, len, k) in &self.len_ops {
            write_key(key, k, len, (pkt.len() as u64) >> lsb);
        }
    }
}
