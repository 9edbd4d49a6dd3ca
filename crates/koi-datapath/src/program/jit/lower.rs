//! Lowering a program's output (and the values its state updates use) into Cranelift IR:
//! packet loads, arithmetic, checksums and hashes, stores into the output.

use super::*;

impl<'a, 'f> Lower<'a, 'f> {
    /// Lowering into `b`, whose parameters are `params` (`pkt`, `port`, an unused slot,
    /// `reads`, `len`), writing into `out` (`out_len` bytes; 0: no output).
    pub(super) fn new(
        p: &'a Program,
        b: FunctionBuilder<'f>,
        module: &'a mut JITModule,
        params: &[Value],
        out: Value,
        out_len: usize,
    ) -> Self {
        Lower {
            p,
            b,
            module,
            pkt: params[0],
            port: params[1],
            out,
            reads_ptr: params[3],
            pkt_len: params[4],
            vals: HashMap::new(),
            need: 0,
            out_len,
            reads: 0,
            consts: None,
            next_const: 0,
            const_slots: &[],
        }
    }

    /// Shared code: stores the table's next entries as `n` bytes at output byte `dst`, as
    /// they lie there (see [`raw_entries`]). `None` outside the output.
    pub(super) fn store_raw(&mut self, base: Value, dst: usize, n: usize) -> Option<()> {
        if dst + n > self.out_len {
            return None;
        }
        let mut at = 0;
        while at < n {
            let slot = 8 * self.next_const as i32;
            self.next_const += 1;
            let piece = (n - at).min(8);
            let mut done = 0;
            while done < piece {
                let c = native::chunk(piece - done);
                let v = self.b.ins().load(
                    native::int_type(c),
                    native::flags(),
                    base,
                    slot + done as i32,
                );
                self.b
                    .ins()
                    .store(native::flags(), v, self.out, (dst + at + done) as i32);
                done += c;
            }
            at += piece;
        }
        Some(())
    }

    /// A constant the output writes: an immediate, or the table's next entry (shared code).
    pub(super) fn written(&mut self, v: u64) -> Value {
        let Some(base) = self.consts else {
            return self.k(v);
        };
        let at = 8 * self.next_const as i32;
        self.next_const += 1;
        self.b.ins().load(I64, native::flags(), base, at)
    }

    pub(super) fn k(&mut self, v: u64) -> Value {
        native::k(&mut self.b, v)
    }

    pub(super) fn and_mask(&mut self, v: Value, w: u32) -> Value {
        native::and_mask(&mut self.b, v, w)
    }

    pub(super) fn bool64(&mut self, cc: IntCC, x: Value, y: Value) -> Value {
        let c = self.b.ins().icmp(cc, x, y);
        self.b.ins().uextend(I64, c)
    }

    pub(super) fn nonzero(&mut self, x: Value) -> Value {
        let z = self.k(0);
        self.bool64(IntCC::NotEqual, x, z)
    }

    /// `x` (`w` bits) sign-extended to 64 bits.
    pub(super) fn sext(&mut self, x: Value, w: u32) -> Value {
        match w {
            0 => self.k(0),
            64.. => x,
            _ => {
                let s = self.k(u64::from(64 - w));
                let up = self.b.ins().ishl(x, s);
                self.b.ins().sshr(up, s)
            }
        }
    }

    pub(super) fn load_be(&mut self, base: Value, at: usize, n: usize) -> Value {
        native::load_be(&mut self.b, base, at, n)
    }

    pub(super) fn store_be(&mut self, v: Value, at: usize, n: usize) {
        native::store_be(&mut self.b, v, self.out, at, n)
    }

    /// `w` bits of the packet at bit `off` (as `read_bits`).
    pub(super) fn read_pkt(&mut self, off: u32, w: u32) -> Option<Value> {
        if w == 0 {
            return Some(self.k(0));
        }
        let v = native::read_bits(&mut self.b, self.pkt, off, w)?;
        self.need = self.need.max((off + w).div_ceil(8) as usize);
        Some(v)
    }

    /// Writes the low `w` bits of `v` at output bit `at` (as `write_bits64`).
    pub(super) fn write_bits(&mut self, at: u32, w: u32, v: Value) -> Option<()> {
        self.write_bits_at(self.out, self.out_len, at, w, v)
    }

    /// Writes the low `w` bits of `v` at bit `at` of the `len` bytes at `base`.
    pub(super) fn write_bits_at(
        &mut self,
        base: Value,
        len: usize,
        at: u32,
        w: u32,
        v: Value,
    ) -> Option<()> {
        if w == 0 {
            return Some(());
        }
        let first = (at / 8) as usize;
        let shift = at % 8;
        let n = (shift + w).div_ceil(8) as usize;
        if n > 8 || first + n > len {
            return None;
        }
        if shift == 0 && w.is_multiple_of(8) {
            native::store_be(&mut self.b, v, base, first, n);
            return Some(());
        }
        // Read-modify-write of the bytes the field spans.
        let win = self.load_be(base, first, n);
        let low = n as u32 * 8 - shift - w;
        let m = mask64(w) << low;
        let keep = self.k(!m & mask64(n as u32 * 8));
        let kept = self.b.ins().band(win, keep);
        let v = self.and_mask(v, w);
        let s = self.k(u64::from(low));
        let placed = self.b.ins().ishl(v, s);
        let win = self.b.ins().bor(kept, placed);
        native::store_be(&mut self.b, win, base, first, n);
        Some(())
    }

    /// Writes the output's header operations.
    pub(super) fn output(&mut self, o: &OutProg) -> Option<()> {
        for op in &o.out {
            match op {
                OutOp::Copy { src, dst, len } => {
                    let mut done = 0;
                    while done < *len {
                        // Whole 8-byte pieces when both sides are byte-aligned.
                        let aligned = (src + done) % 8 == 0 && (dst + done) % 8 == 0;
                        let n = (len - done).min(if aligned { 64 } else { 56 });
                        let v = self.read_pkt(src + done, n)?;
                        self.write_bits(dst + done, n, v)?;
                        done += n;
                    }
                }
                OutOp::Const { dst, value } => match self.consts {
                    Some(base) if whole_bytes(*dst, value) => {
                        let n = (value.width() / 8) as usize;
                        self.store_raw(base, (*dst / 8) as usize, n)?;
                    }
                    _ => self.write_const(*dst, value)?,
                },
                OutOp::Bytes { dst, bytes } if self.consts.is_some() => {
                    let base = self.consts?;
                    self.store_raw(base, *dst, bytes.len())?;
                }
                OutOp::Bytes { dst, bytes } => {
                    if dst + bytes.len() > self.out_len {
                        return None;
                    }
                    let mut at = 0;
                    while at < bytes.len() {
                        let n = (bytes.len() - at).min(8);
                        let v = bytes[at..at + n]
                            .iter()
                            .fold(0u64, |a, b| (a << 8) | u64::from(*b));
                        let v = self.written(v);
                        self.store_be(v, dst + at, n);
                        at += n;
                    }
                }
                OutOp::Write { dst, n, narrow } => {
                    if !narrow {
                        return None;
                    }
                    let v = self.node(*n)?;
                    let w = self.p.widths[*n as usize];
                    self.write_bits(*dst, w, v)?;
                }
            }
        }
        Some(())
    }

    /// A constant of any width, written in pieces of at most 56 bits, most significant first.
    pub(super) fn write_const(&mut self, dst: u32, value: &Bits) -> Option<()> {
        for (at, n, v) in pieces56(value) {
            let v = self.written(v);
            self.write_bits(dst + at, n, v)?;
        }
        Some(())
    }

    /// Node `n`'s value (computed once).
    pub(super) fn node(&mut self, n: N) -> Option<Value> {
        if let Some(v) = self.vals.get(&n) {
            return Some(*v);
        }
        let p = self.p;
        if !p.is_narrow(n) {
            return None;
        }
        let w = p.widths[n as usize];
        let v = match &p.nodes[n as usize] {
            Node::Const(b) => match (self.consts, self.const_slots.get(n as usize)) {
                (Some(base), Some(Some(slot))) => {
                    let at = i32::try_from(8 * slot).ok()?;
                    self.b.ins().load(I64, native::flags(), base, at)
                }
                _ => self.k(b.low_u64()),
            },
            Node::Pkt { off, w, .. } => self.read_pkt(*off, *w)?,
            Node::Port(w) => {
                let port = self.port;
                self.and_mask(port, *w)
            }
            Node::Opaque(_) => self.k(0),
            Node::Un(op, a) => {
                let x = self.node(*a)?;
                match op {
                    UnOp::Not => {
                        let z = self.k(0);
                        self.bool64(IntCC::Equal, x, z)
                    }
                    UnOp::BitNot => {
                        let v = self.b.ins().bnot(x);
                        self.and_mask(v, w)
                    }
                    UnOp::Neg => {
                        let v = self.b.ins().ineg(x);
                        self.and_mask(v, w)
                    }
                }
            }
            Node::Bin(op, a, c) => {
                let (wa, wb) = (p.widths[*a as usize], p.widths[*c as usize]);
                let x = self.node(*a)?;
                let y = self.node(*c)?;
                self.bin(*op, x, y, wa, wb)?
            }
            Node::Slice(a, hi, lo) => {
                let x = self.node(*a)?;
                let v = if *lo == 0 {
                    x
                } else {
                    let s = self.k(u64::from(*lo));
                    self.b.ins().ushr(x, s)
                };
                self.and_mask(v, hi - lo + 1)
            }
            Node::Cast(c, a) => {
                let wa = p.widths[*a as usize];
                let x = self.node(*a)?;
                match c {
                    Cast::Resize { width, signed } => {
                        if *signed && *width > wa && wa > 0 {
                            let s = self.sext(x, wa);
                            self.and_mask(s, *width)
                        } else {
                            self.and_mask(x, *width)
                        }
                    }
                    Cast::ToBool | Cast::FromBool => self.nonzero(x),
                }
            }
            Node::Mux(c, a, e) => {
                let c = self.node(*c)?;
                let x = self.node(*a)?;
                let y = self.node(*e)?;
                self.b.ins().select(c, x, y)
            }
            Node::Hash {
                algo: HashAlgo::Csum16,
                w,
                ..
            } => {
                let plan = p.plans.get(n as usize)?.as_ref()?;
                let h = self.csum16(plan)?;
                self.and_mask(h, *w)
            }
            Node::HashResult { hash, base, max, w } => {
                let h = self.node(*hash)?;
                let max = if *max == 0 { 1 } else { *max };
                let r = if max == 1 {
                    self.k(0)
                } else {
                    let m = self.k(max);
                    self.b.ins().urem(h, m)
                };
                let base = self.k(*base);
                let v = self.b.ins().iadd(r, base);
                self.and_mask(v, (*w).min(64))
            }
            Node::Hash {
                algo: HashAlgo::Lookup3,
                data,
                w,
            } => {
                let h = self.lookup3(data)?;
                self.and_mask(h, *w)
            }
            Node::Hash { algo, w, .. } => {
                let plan = p.plans.get(n as usize)?.as_ref()?;
                let h = self.hash(*algo, plan)?;
                self.and_mask(h, *w)
            }
            Node::RegVal { t, w, fallback } => {
                // The read's flag and value (resized to `w` bits), else the fallback.
                let fallback = self.node(*fallback)?;
                let t = *t as usize;
                self.reads = self.reads.max(t + 1);
                let at = i32::try_from(16 * t).ok()?;
                let flag = self.b.ins().load(I64, native::flags(), self.reads_ptr, at);
                let v = self
                    .b
                    .ins()
                    .load(I64, native::flags(), self.reads_ptr, at + 8);
                let v = self.and_mask(v, *w);
                self.b.ins().select(flag, v, fallback)
            }
            Node::CsumReplace {
                csum,
                old,
                new,
                four,
            } => {
                let args = [
                    self.node(*csum)?,
                    self.node(*old)?,
                    self.node(*new)?,
                    self.k(u64::from(*four)),
                ];
                self.helper("koi_jit_csum_replace", &args)?
            }
            Node::PayloadCsum { csum, start, odd } => {
                let args = [
                    self.node(*csum)?,
                    self.pkt,
                    self.pkt_len,
                    self.k(u64::from(*start)),
                    self.k(u64::from(*odd)),
                ];
                self.helper("koi_jit_payload_csum", &args)?
            }
        };
        self.vals.insert(n, v);
        Some(v)
    }

    /// The interpreter's binary operator `op` (as `arith64`), or `None` without a lowering.
    pub(super) fn bin(&mut self, op: BinOp, x: Value, y: Value, wa: u32, wb: u32) -> Option<Value> {
        use BinOp::*;
        let v = match op {
            Add => {
                let v = self.b.ins().iadd(x, y);
                self.and_mask(v, wa)
            }
            Sub => {
                let v = self.b.ins().isub(x, y);
                self.and_mask(v, wa)
            }
            Mul => {
                let v = self.b.ins().imul(x, y);
                self.and_mask(v, wa)
            }
            Div | Mod => {
                let z = self.k(0);
                let one = self.k(1);
                let is_zero = self.b.ins().icmp(IntCC::Equal, y, z);
                let d = self.b.ins().select(is_zero, one, y);
                let q = if op == Div {
                    self.b.ins().udiv(x, d)
                } else {
                    self.b.ins().urem(x, d)
                };
                self.b.ins().select(is_zero, z, q)
            }
            AddSatU => {
                let m = self.k(mask64(wa));
                let (s, over) = self.b.ins().uadd_overflow(x, y);
                let min = self.b.ins().umin(s, m);
                self.b.ins().select(over, m, min)
            }
            SubSatU => {
                let z = self.k(0);
                let d = self.b.ins().isub(x, y);
                let ge = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, x, y);
                self.b.ins().select(ge, d, z)
            }
            AddSatS | SubSatS => {
                let args = [
                    self.k(u64::from(op == SubSatS)),
                    x,
                    y,
                    self.k(u64::from(wa)),
                    self.k(u64::from(wb)),
                ];
                self.helper("koi_jit_sat", &args)?
            }
            BitAnd => self.b.ins().band(x, y),
            BitOr => self.b.ins().bor(x, y),
            BitXor => self.b.ins().bxor(x, y),
            Shl | ShrU => {
                let z = self.k(0);
                let lim = self.k(u64::from(wa));
                let big = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, y, lim);
                let v = if op == Shl {
                    let v = self.b.ins().ishl(x, y);
                    self.and_mask(v, wa)
                } else {
                    self.b.ins().ushr(x, y)
                };
                self.b.ins().select(big, z, v)
            }
            ShrS => {
                if wa == 0 {
                    return Some(self.k(0));
                }
                let sx = self.sext(x, wa);
                let lim = self.k(63);
                let amt = self.b.ins().umin(y, lim);
                let v = self.b.ins().sshr(sx, amt);
                self.and_mask(v, wa)
            }
            Concat => {
                if wb >= 64 {
                    y
                } else {
                    let s = self.k(u64::from(wb));
                    let hi = self.b.ins().ishl(x, s);
                    self.b.ins().bor(hi, y)
                }
            }
            Eq => self.bool64(IntCC::Equal, x, y),
            Ne => self.bool64(IntCC::NotEqual, x, y),
            LtU => self.bool64(IntCC::UnsignedLessThan, x, y),
            LeU => self.bool64(IntCC::UnsignedLessThanOrEqual, x, y),
            GtU => self.bool64(IntCC::UnsignedGreaterThan, x, y),
            GeU => self.bool64(IntCC::UnsignedGreaterThanOrEqual, x, y),
            LtS | LeS | GtS | GeS => {
                let sx = self.sext(x, wa);
                let sy = self.sext(y, wb);
                let cc = match op {
                    LtS => IntCC::SignedLessThan,
                    LeS => IntCC::SignedLessThanOrEqual,
                    GtS => IntCC::SignedGreaterThan,
                    _ => IntCC::SignedGreaterThanOrEqual,
                };
                self.bool64(cc, sx, sy)
            }
            And | Or => {
                let a = self.nonzero(x);
                let c = self.nonzero(y);
                if op == And {
                    self.b.ins().band(a, c)
                } else {
                    self.b.ins().bor(a, c)
                }
            }
        };
        Some(v)
    }

    /// A call of helper `name` (one of [`HELPERS`]) with 64-bit arguments; its result.
    pub(super) fn helper(&mut self, name: &str, args: &[Value]) -> Option<Value> {
        let mut sig = self.module.make_signature();
        sig.params.extend(args.iter().map(|_| AbiParam::new(I64)));
        sig.returns.push(AbiParam::new(I64));
        let id = self
            .module
            .declare_function(name, Linkage::Import, &sig)
            .ok()?;
        let f = self.module.declare_func_in_func(id, self.b.func);
        let call = self.b.ins().call(f, args);
        self.b.inst_results(call).first().copied()
    }

    /// A zeroed stack buffer of `len` bytes (a multiple of 8) and its address.
    pub(super) fn stack_buffer(&mut self, len: usize) -> Option<Value> {
        let size = u32::try_from(len).ok()?;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            size,
            3,
        ));
        let addr = self.b.ins().stack_addr(I64, slot, 0);
        let zero = self.k(0);
        for at in (0..len).step_by(8) {
            self.b
                .ins()
                .store(native::flags(), zero, addr, i32::try_from(at).ok()?);
        }
        Some(addr)
    }

    /// A v1model hash (not `csum16`) of a plan's data: the data's bits assembled in a stack
    /// buffer as the interpreter assembles them, then the interpreter's calculation.
    pub(super) fn hash(&mut self, algo: HashAlgo, plan: &HashPlan) -> Option<Value> {
        if algo == HashAlgo::Csum16 {
            return self.csum16(plan);
        }
        crate::program::v1_algo(algo)?;
        let code = HashAlgo::FIXED.iter().position(|a| *a == algo)?;
        let nbytes = plan.bits.div_ceil(8) as usize;
        if nbytes > 256 {
            return None;
        }
        let buf = self.stack_buffer(nbytes.div_ceil(8) * 8)?;
        let mut at = 0u32;
        for e in &plan.elems {
            match *e {
                Elem::Pkt { off, len } => {
                    let mut done = 0;
                    while done < len {
                        let n = (len - done).min(32);
                        let v = self.read_pkt(off + done, n)?;
                        self.write_bits_at(buf, nbytes, at + done, n, v)?;
                        done += n;
                    }
                    at += len;
                }
                Elem::Node(d) => {
                    let v = self.node(d)?;
                    let w = self.p.widths[d as usize];
                    // In pieces of at most 32 bits, most significant first.
                    let mut done = 0;
                    while done < w {
                        let n = (w - done).min(32);
                        let rest = w - done - n;
                        let piece = if rest == 0 {
                            v
                        } else {
                            let s = self.k(u64::from(rest));
                            self.b.ins().ushr(v, s)
                        };
                        let piece = self.and_mask(piece, n);
                        self.write_bits_at(buf, nbytes, at + done, n, piece)?;
                        done += n;
                    }
                    at += w;
                }
            }
        }
        let args = [self.k(code as u64), buf, self.k(nbytes as u64)];
        self.helper("koi_jit_hash", &args)
    }

    /// uBPF `lookup3` over the values of `data` (as the interpreter: values and widths).
    pub(super) fn lookup3(&mut self, data: &[N]) -> Option<Value> {
        let n = data.len();
        let vals = self.stack_buffer(8 * n.max(1))?;
        let widths = self.stack_buffer(8 * n.max(1))?;
        for (i, d) in data.iter().enumerate() {
            let v = self.node(*d)?;
            let w = self.k(u64::from(self.p.widths[*d as usize]));
            let at = i32::try_from(8 * i).ok()?;
            self.b.ins().store(native::flags(), v, vals, at);
            self.b.ins().store(native::flags(), w, widths, at);
        }
        let args = [vals, widths, self.k(n as u64)];
        self.helper("koi_jit_lookup3", &args)
    }

    /// The Internet checksum (`csum16`) of a hash plan: its bits cut into big-endian 16-bit
    /// words (the last one padded with zeros), summed, folded, inverted.
    pub(super) fn csum16(&mut self, plan: &HashPlan) -> Option<Value> {
        let mut acc = Words::default();
        for e in &plan.elems {
            match *e {
                Elem::Pkt { off, len } => {
                    let mut done = 0;
                    while done < len {
                        let at = off + done;
                        if acc.fill == 0 && at % 8 == 0 && len - done >= 16 {
                            // Whole words straight from the packet: up to four at once, as
                            // 32-bit chunks (2^16 = 1 modulo 0xffff, so a chunk adds what
                            // its two words add once folded).
                            let first = (at / 8) as usize;
                            let bytes = match len - done {
                                64.. => 8,
                                32.. => 4,
                                _ => 2,
                            };
                            self.need = self.need.max(first + bytes);
                            let x = self.load_be(self.pkt, first, bytes);
                            let w = if bytes == 8 {
                                let lo = self.and_mask(x, 32);
                                let s = self.k(32);
                                let hi = self.b.ins().ushr(x, s);
                                acc.max += 2 * u128::from(u32::MAX);
                                self.b.ins().iadd(lo, hi)
                            } else {
                                acc.max += if bytes == 4 {
                                    u128::from(u32::MAX)
                                } else {
                                    0xffff
                                };
                                x
                            };
                            acc.sum = Some(match acc.sum {
                                None => w,
                                Some(s) => self.b.ins().iadd(s, w),
                            });
                            done += 8 * bytes as u32;
                            continue;
                        }
                        let n = (len - done).min(16 - acc.fill);
                        let v = self.read_pkt(at, n)?;
                        self.feed(&mut acc, v, n);
                        done += n;
                    }
                }
                Elem::Node(d) => {
                    let v = self.node(d)?;
                    let w = self.p.widths[d as usize];
                    self.feed(&mut acc, v, w);
                }
            }
        }
        if let Some(w) = acc.word.take() {
            acc.max += 0xffff;
            acc.sum = Some(match acc.sum {
                None => w,
                Some(s) => self.b.ins().iadd(s, w),
            });
        }
        let mut sum = acc.sum.unwrap_or_else(|| self.k(0));
        // Folds until the largest sum the words can make fits 16 bits.
        let mut max = acc.max;
        if max >= 1 << 64 {
            return None;
        }
        while max > 0xffff {
            let lo = self.and_mask(sum, 16);
            let s = self.k(16);
            let hi = self.b.ins().ushr(sum, s);
            sum = self.b.ins().iadd(lo, hi);
            max = fold_max(max);
        }
        let inv = self.b.ins().bnot(sum);
        Some(self.and_mask(inv, 16))
    }

    /// Appends the `w` bits of `v` (most significant first) to the checksum's words.
    pub(super) fn feed(&mut self, acc: &mut Words, v: Value, mut w: u32) {
        while w > 0 {
            let t = w.min(16 - acc.fill);
            let part = if w > t {
                let s = self.k(u64::from(w - t));
                self.b.ins().ushr(v, s)
            } else {
                v
            };
            let part = self.and_mask(part, t);
            let up = 16 - acc.fill - t;
            let part = if up > 0 {
                let s = self.k(u64::from(up));
                self.b.ins().ishl(part, s)
            } else {
                part
            };
            acc.word = Some(match acc.word {
                None => part,
                Some(x) => self.b.ins().bor(x, part),
            });
            acc.fill += t;
            w -= t;
            if acc.fill == 16 {
                acc.max += 0xffff;
                let word = acc.word.take().unwrap_or(part);
                acc.sum = Some(match acc.sum {
                    None => word,
                    Some(s) => self.b.ins().iadd(s, word),
                });
                acc.fill = 0;
            }
        }
    }
}

/// A checksum's words so far: their sum, the largest value the sum can have, and the word
/// being filled (`fill` bits).
#[derive(Default)]
pub(super) struct Words {
    sum: Option<Value>,
    max: u128,
    word: Option<Value>,
    fill: u32,
}

/// The largest `(x & 0xffff) + (x >> 16)` for `x` up to `m`: at `m` itself, or just below the
/// last multiple of 2^16 (all low bits set).
pub(super) fn fold_max(m: u128) -> u128 {
    let q = m >> 16;
    if q == 0 {
        m
    } else {
        ((m & 0xffff) + q).max(0xffff + q - 1)
    }
}

/// Bits `[lo, lo + n)` of `b` (`n` at most 64).
pub(super) fn bits_at(b: &Bits, lo: u32, n: u32) -> u64 {
    let limbs = b.limbs();
    let (i, s) = ((lo / 64) as usize, lo % 64);
    let low = limbs.get(i).copied().unwrap_or(0) >> s;
    let high = if s == 0 {
        0
    } else {
        limbs.get(i + 1).copied().unwrap_or(0) << (64 - s)
    };
    (low | high) & mask64(n)
}
