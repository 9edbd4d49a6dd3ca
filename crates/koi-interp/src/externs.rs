//! Extern instance methods (register, counter, direct counter, meter, direct meter,
//! `Checksum16`) and the architectures' extern functions ([`Builtin`]): drop marks, hashes,
//! checksums, clone, resubmit, recirculate, truncate, digest, random, log, assert, uBPF time
//! and incremental checksums. Hashes and checksums are koi-hash's, bit-exact with BMv2 and
//! p4c's uBPF runtime.

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{ExternEvent, Observer};
use koi_hash::BitString;
use koi_hash::v1model::{Calculation, HashAlgorithm, hash_result};
use koi_ir::{
    Architecture, Arg, Bits, Builtin, Expr, ExternId, ExternKind, HashAlgo, Place, Ty, Value,
};
use koi_state::DigestMessage;

/// The koi-hash algorithm of v1model's `HashAlgorithm` member `a`: `None` for the custom
/// CRCs, which take the parameters the control plane set ([`Ctx::algo_value`]), and for
/// uBPF's `lookup3`. (The one mapping: the cached datapath takes it from here.)
pub fn v1model_algo(a: HashAlgo) -> Option<HashAlgorithm> {
    Some(match a {
        HashAlgo::Crc32 => HashAlgorithm::Crc32,
        HashAlgo::Crc16 => HashAlgorithm::Crc16,
        HashAlgo::Crc32Custom(_) | HashAlgo::Crc16Custom(_) | HashAlgo::Lookup3 => return None,
        HashAlgo::Random => HashAlgorithm::Random,
        HashAlgo::Identity => HashAlgorithm::Identity,
        HashAlgo::Csum16 => HashAlgorithm::Csum16,
        HashAlgo::Xor16 => HashAlgorithm::Xor16,
        HashAlgo::Fnv1a32 => HashAlgorithm::Fnv1a32,
        HashAlgo::Fnv1a64 => HashAlgorithm::Fnv1a64,
        HashAlgo::Fnv1_32 => HashAlgorithm::Fnv1_32,
        HashAlgo::Fnv1_64 => HashAlgorithm::Fnv1_64,
        HashAlgo::Fnv1a32Signed => HashAlgorithm::Fnv1a32Signed,
        HashAlgo::Fnv1a64Signed => HashAlgorithm::Fnv1a64Signed,
        HashAlgo::Fnv1_32Signed => HashAlgorithm::Fnv1_32Signed,
        HashAlgo::Fnv1_64Signed => HashAlgorithm::Fnv1_64Signed,
        HashAlgo::HashkitOneAtATime => HashAlgorithm::HashkitOneAtATime,
        HashAlgo::HashkitMd5 => HashAlgorithm::HashkitMd5,
        HashAlgo::HashkitHsieh => HashAlgorithm::HashkitHsieh,
        HashAlgo::HashkitMurmur => HashAlgorithm::HashkitMurmur,
        HashAlgo::HashkitJenkins => HashAlgorithm::HashkitJenkins,
    })
}

fn low_u64(b: &Bits) -> u64 {
    b.low_u64()
}

impl<O: Observer> Ctx<'_, O> {
    /// Whether `e` is a field of a header that is invalid now (BMv2 leaves such fields out
    /// of hash and checksum inputs, and skips verifying a checksum field of one).
    pub fn invalid_header_field(&self, pkt: &Pkt, e: &Expr) -> bool {
        match e {
            Expr::Slot(s) => self
                .prep
                .header_of(*s)
                .is_some_and(|h| !pkt.phv.valid(self.p, h)),
            _ => false,
        }
    }

    /// The hash/checksum input: the values of `data`, MSB first, fields of invalid headers
    /// left out; then the unparsed payload if `payload`.
    pub(crate) fn data_bits(
        &self,
        pkt: &Pkt,
        data: &[Expr],
        params: &[Bits],
        payload: bool,
    ) -> BitString {
        let env = self.env(pkt, params);
        let mut out = BitString::with_capacity(64 * data.len());
        for e in data {
            if self.invalid_header_field(pkt, e) {
                continue;
            }
            // A field of up to 64 bits (the usual input), read without building its value.
            if let Expr::Slot(s) = e
                && let Some(slot) = self.p.phv.slots.get(*s)
                && matches!(slot.ty, Ty::Bits(_))
                && slot.width <= 64
            {
                let v = pkt.phv.read_at(slot.offset, slot.width).low_u64();
                out.push_u64(v, slot.width as usize);
                continue;
            }
            match env.eval(e) {
                Value::Bool(b) => out.push_bool(b),
                Value::Bits(b) | Value::Varbit { bits: b, .. } => match b.to_u64() {
                    Some(v) if b.width() <= 64 => out.push_u64(v, b.width() as usize),
                    _ => b.with_be_bytes(|bytes| out.push(bytes, b.width() as usize)),
                },
            }
        }
        if payload {
            let tail = payload_bits(pkt);
            out.push_bits(&tail);
        }
        out
    }

    /// The algorithm's output over `data`: `None` for `random` and `lookup3`. A custom
    /// CRC runs with the parameters its calculation has now.
    fn algo_value(&self, algo: HashAlgo, data: &BitString) -> Option<u64> {
        match algo.calculation() {
            Some(c) => self
                .state
                .custom_crc(c)
                .map(|crc| crc.checksum(data.as_bytes())),
            None => v1model_algo(algo).and_then(|a| Calculation::new(a).compute(data)),
        }
    }

    /// The v1model algorithm's value over `data` (a random value for `random`).
    pub fn hash_value(&mut self, algo: HashAlgo, data: &BitString) -> u64 {
        let computed = self.algo_value(algo, data);
        match computed {
            Some(v) => v,
            None if algo == HashAlgo::Lookup3 => u64::from(ubpf_hash(data)),
            None => self.rng.next_u64(),
        }
    }

    /// Runs a method of an extern instance.
    pub fn extern_call(
        &mut self,
        pkt: &mut Pkt,
        inst: ExternId,
        method: &str,
        args: &[Arg],
        result: Option<&Place>,
        params: &[Bits],
    ) -> Result<(), Stop> {
        let Some(ext) = self.p.externs.get(inst) else {
            return Err(Stop::Abort(format!("call of missing extern {inst}")));
        };
        let env = self.env(pkt, params);
        let inputs: Vec<Bits> = args
            .iter()
            .filter_map(|a| match a {
                Arg::In(e) => Some(env.bits(e)),
                _ => None,
            })
            .collect();
        let outs: Vec<&Place> = args
            .iter()
            .filter_map(|a| match a {
                Arg::Out(p) | Arg::InOut(p) => Some(p),
                Arg::In(_) => None,
            })
            .collect();
        let now = self.now_ns();
        let idx = inputs.first().map_or(0, low_idx);
        let produced: Option<Bits> = match (&ext.kind, method) {
            (ExternKind::Register { .. }, "read") => {
                let v = self
                    .state
                    .register_mut(inst)
                    .and_then(|r| r.get(idx).cloned());
                match (v, result) {
                    (v, Some(_)) => Some(v.unwrap_or_else(|| Bits::zero(0))),
                    (v, None) => v,
                }
            }
            (ExternKind::Register { .. }, "write") => {
                if let (Some(r), Some(v)) = (self.state.register_mut(inst), inputs.get(1)) {
                    r.set(idx, v);
                }
                None
            }
            (ExternKind::Counter { .. }, "count") => {
                self.state.count(inst, idx, pkt.ingress_len);
                None
            }
            (ExternKind::DirectCounter { .. }, "count") => None,
            (ExternKind::Meter { .. }, "execute_meter") => self
                .state
                .execute_meter(inst, idx, pkt.ingress_len, now)
                .map(|c| Bits::from_u64(64, c.code())),
            (ExternKind::DirectMeter { .. }, "read") => pkt
                .meter_colors
                .iter()
                .find(|(e, _)| *e == inst)
                .map(|(_, c)| Bits::from_u64(64, *c)),
            (ExternKind::Checksum16, "get") => {
                let env = self.env(pkt, params);
                let data: Vec<Expr> = args
                    .iter()
                    .filter_map(|a| match a {
                        Arg::In(e) => Some(e.clone()),
                        _ => None,
                    })
                    .collect();
                let _ = env;
                let bits = self.data_bits(pkt, &data, params, false);
                Some(Bits::from_u64(
                    16,
                    u64::from(koi_hash::checksum::csum16(bits.as_bytes())),
                ))
            }
            _ => match self.psa_extern(pkt, inst, method, args, &inputs, params)? {
                Some(v) => v,
                None => {
                    return Err(Stop::Abort(format!(
                        "unsupported extern call {}.{method}",
                        ext.preamble.name
                    )));
                }
            },
        };
        let name = ext.preamble.name.clone();
        if let Some(v) = &produced {
            let dst = result.or(outs.first().copied());
            if let Some(dst) = dst {
                let (w, _) = self.place_width(pkt, dst, params);
                self.write_place(pkt, dst, &Value::Bits(v.resize(w)), params);
            }
        }
        let ev = ExternEvent {
            name: &name,
            method,
            inputs: &inputs,
            result: produced.as_ref(),
        };
        self.obs.extern_call(&ev);
        Ok(())
    }

    /// Runs an extern function of the architecture and reports it to the observer (with
    /// the value it wrote, if any).
    pub fn builtin(&mut self, pkt: &mut Pkt, b: &Builtin, params: &[Bits]) -> Result<(), Stop> {
        if let Builtin::Native { func, args, ret } = b {
            // (Reported by the call itself, with the function's name.)
            return self.native_call(pkt, *func, args, ret.as_ref(), params);
        }
        self.builtin_inner(pkt, b, params)?;
        let written = written_place(b).map(|dst| {
            let env = self.env(pkt, params);
            match dst {
                Place::Slot(s) => pkt.phv.raw(self.p, *s),
                Place::Slice { slot, hi, lo } => pkt.phv.raw(self.p, *slot).slice(*hi, *lo),
                Place::StackField {
                    stack,
                    index,
                    field,
                } => env
                    .stack_field_slot(*stack, index, *field)
                    .map_or(Bits::zero(0), |s| pkt.phv.raw(self.p, s)),
            }
        });
        let ev = ExternEvent {
            name: b.name(),
            method: "call",
            inputs: &[],
            result: written.as_ref(),
        };
        self.obs.extern_call(&ev);
        Ok(())
    }

    fn builtin_inner(&mut self, pkt: &mut Pkt, b: &Builtin, params: &[Bits]) -> Result<(), Stop> {
        match b {
            Builtin::MarkToDrop => self.mark_to_drop(pkt),
            Builtin::MarkToPass => pkt.fx.ubpf_drop = false,
            Builtin::Hash {
                dst,
                algo,
                base,
                data,
                max,
            } => self.hash(pkt, dst, *algo, base, data, max.as_ref(), params),
            Builtin::VerifyChecksum {
                cond,
                data,
                checksum,
                algo,
                with_payload,
            } => self.verify_checksum(pkt, cond, data, checksum, *algo, *with_payload, params),
            Builtin::UpdateChecksum {
                cond,
                data,
                checksum,
                algo,
                with_payload,
            } => self.update_checksum(pkt, cond, data, checksum, *algo, *with_payload, params),
            Builtin::Clone {
                session,
                field_list,
                ..
            } => {
                // BMv2 keeps the session as a 16-bit value under a valid bit (0x7fff mask).
                let s = self.env(pkt, params).bits(session).low_u64() & 0x7fff;
                pkt.fx.clone = Some((s, *field_list));
            }
            Builtin::Resubmit { field_list } => pkt.fx.resubmit = Some(*field_list),
            Builtin::Recirculate { field_list } => pkt.fx.recirculate = Some(*field_list),
            Builtin::Truncate { bytes } => {
                let n = self
                    .env(pkt, params)
                    .bits(bytes)
                    .to_u64()
                    .unwrap_or(u64::MAX);
                pkt.truncate = match self.p.arch {
                    Architecture::Ubpf => Some(n),
                    _ => Some(pkt.truncate.map_or(n, |t| t.min(n))),
                };
            }
            Builtin::Digest {
                digest,
                receiver,
                data,
            } => self.digest(pkt, *digest, receiver, data, params),
            Builtin::Random { dst, lo, hi } => {
                let env = self.env(pkt, params);
                let (l, h) = (env.bits(lo), env.bits(hi));
                let v = self.rng.range(low_u64(&l), low_u64(&h));
                let (w, _) = self.place_width(pkt, dst, params);
                self.write_place(pkt, dst, &Value::Bits(Bits::from_u64(w, v)), params);
            }
            Builtin::LogMsg { format, args } => self.log_msg(pkt, format, args, params),
            Builtin::Assert { cond } | Builtin::Assume { cond } => {
                if !self.env(pkt, params).truth(cond) {
                    self.report.assert_failures += 1;
                    return Err(Stop::Abort(format!("{} failed", b.name())));
                }
            }
            Builtin::TimestampNs { dst } => {
                let (w, _) = self.place_width(pkt, dst, params);
                let v = Bits::from_u64(w, self.now_ns());
                self.write_place(pkt, dst, &Value::Bits(v), params);
            }
            Builtin::CsumReplace {
                dst,
                csum,
                old,
                new,
            } => {
                let env = self.env(pkt, params);
                let (c, o, n) = (env.bits(csum), env.bits(old), env.bits(new));
                let c16 = c.low_u64() as u16;
                let v = match o.width() {
                    32 => {
                        koi_hash::ubpf::csum_replace4(c16, o.low_u64() as u32, n.low_u64() as u32)
                    }
                    _ => koi_hash::ubpf::csum_replace2(c16, o.low_u64() as u16, n.low_u64() as u16),
                };
                self.write_place(
                    pkt,
                    dst,
                    &Value::Bits(Bits::from_u64(16, u64::from(v))),
                    params,
                );
            }
            Builtin::Native { func, args, ret } => {
                self.native_call(pkt, *func, args, ret.as_ref(), params)?
            }
        }
        Ok(())
    }

    fn mark_to_drop(&mut self, pkt: &mut Pkt) {
        if self.p.arch == Architecture::Ubpf {
            pkt.fx.ubpf_drop = true;
            return;
        }
        let i = &self.prep.intr;
        if let Some(s) = i.egress_spec {
            pkt.phv.set_raw(
                self.p,
                s,
                &Bits::from_u64(64, u64::from(self.opts.drop_port)),
            );
        }
        if let Some(s) = i.mcast_grp {
            pkt.phv.set_raw(self.p, s, &Bits::zero(64));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn hash(
        &mut self,
        pkt: &mut Pkt,
        dst: &Place,
        algo: HashAlgo,
        base: &Expr,
        data: &[Expr],
        max: Option<&Expr>,
        params: &[Bits],
    ) {
        let (w, _) = self.place_width(pkt, dst, params);
        let v = if algo == HashAlgo::Lookup3 {
            let env = self.env(pkt, params);
            let elems: Vec<koi_hash::ubpf::Element> = data
                .iter()
                .map(|e| {
                    let b = env.bits(e);
                    koi_hash::ubpf::Element {
                        value: b.low_u64(),
                        width: b.width(),
                    }
                })
                .collect();
            u64::from(koi_hash::ubpf::hash(&elems).unwrap_or(0))
        } else {
            let bits = self.data_bits(pkt, data, params, false);
            let h = self.hash_value(algo, &bits);
            let env = self.env(pkt, params);
            let b = env.bits(base).low_u64();
            match max {
                Some(m) => hash_result(h, b, env.bits(m).low_u64(), w.min(64)),
                None => h,
            }
        };
        self.write_place(pkt, dst, &Value::Bits(Bits::from_u64(w, v)), params);
    }

    #[allow(clippy::too_many_arguments)]
    fn verify_checksum(
        &mut self,
        pkt: &mut Pkt,
        cond: &Expr,
        data: &[Expr],
        checksum: &Expr,
        algo: HashAlgo,
        payload: bool,
        params: &[Bits],
    ) {
        if !self.env(pkt, params).truth(cond) || self.invalid_header_field(pkt, checksum) {
            return;
        }
        let bits = self.data_bits(pkt, data, params, payload);
        let field = self.env(pkt, params).bits(checksum).low_u64();
        // BMv2 compares the calculation's whole output with the field.
        let ok = self.algo_value(algo, &bits).is_none_or(|v| v == field);
        if !ok && let Some(s) = self.prep.intr.checksum_error {
            pkt.phv.set_raw(self.p, s, &Bits::from_u64(1, 1));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn update_checksum(
        &mut self,
        pkt: &mut Pkt,
        cond: &Expr,
        data: &[Expr],
        checksum: &Place,
        algo: HashAlgo,
        payload: bool,
        params: &[Bits],
    ) {
        if !self.env(pkt, params).truth(cond) {
            return;
        }
        let bits = self.data_bits(pkt, data, params, payload);
        let (w, _) = self.place_width(pkt, checksum, params);
        let v = match self.algo_value(algo, &bits) {
            Some(v) => koi_hash::v1model::truncate(v, w.min(64)),
            None => self.hash_value(algo, &bits),
        };
        self.write_place(pkt, checksum, &Value::Bits(Bits::from_u64(w, v)), params);
    }

    fn digest(
        &mut self,
        pkt: &mut Pkt,
        d: koi_ir::DigestId,
        receiver: &Expr,
        data: &[Expr],
        params: &[Bits],
    ) {
        let Some(dg) = self.p.digests.get(d) else {
            return;
        };
        let env = self.env(pkt, params);
        let fields = dg
            .fields
            .iter()
            .zip(data)
            .map(|((n, w), e)| (n.clone(), env.bits(e).resize(*w)))
            .collect();
        pkt.fx.digest = Some(DigestMessage {
            digest: d,
            name: dg.preamble.name.clone(),
            receiver: env.bits(receiver).low_u64(),
            fields,
        });
    }

    fn log_msg(&mut self, pkt: &Pkt, format: &str, args: &[Expr], params: &[Bits]) {
        let env = self.env(pkt, params);
        let mut vals = args.iter().map(|e| match env.eval(e) {
            Value::Bool(b) => b.to_string(),
            v => decimal(&v.to_bits()),
        });
        let mut msg = String::new();
        let mut rest = format;
        while let Some(i) = rest.find("{}") {
            msg.push_str(&rest[..i]);
            msg.push_str(&vals.next().unwrap_or_else(|| "{}".into()));
            rest = &rest[i + 2..];
        }
        msg.push_str(rest);
        self.obs.log(&msg);
        self.report.logs.push(msg);
    }
}

/// The place a builtin writes, if it writes one.
fn written_place(b: &Builtin) -> Option<&Place> {
    match b {
        Builtin::Hash { dst, .. }
        | Builtin::Random { dst, .. }
        | Builtin::TimestampNs { dst }
        | Builtin::CsumReplace { dst, .. } => Some(dst),
        Builtin::UpdateChecksum { checksum, .. } => Some(checksum),
        _ => None,
    }
}

fn decimal(b: &Bits) -> String {
    match b.to_u128() {
        Some(v) => v.to_string(),
        None => format!("{b:#x}"),
    }
}

fn low_idx(b: &Bits) -> u64 {
    b.to_u64().unwrap_or(u64::MAX)
}

/// The unparsed payload of a packet as a bit string.
fn payload_bits(pkt: &Pkt) -> BitString {
    let mut w = crate::phv::BitWriter::new();
    w.push_tail(&pkt.data, pkt.cursor);
    let n = w.len_bits();
    let bytes = w.into_bytes();
    let mut out = BitString::new();
    out.push(&bytes, bytes.len() * 8);
    let mut trimmed = BitString::new();
    if n == bytes.len() * 8 {
        return out;
    }
    for i in 0..n {
        trimmed.push_bool(out.bit(i).unwrap_or(false));
    }
    trimmed
}

/// ubpf_model's lookup3 over a bit string of whole 64-bit-or-less elements (the v1model
/// path does not get here; kept for completeness).
fn ubpf_hash(data: &BitString) -> u32 {
    koi_hash::lookup3::hashlittle(data.as_bytes(), 0)
}
