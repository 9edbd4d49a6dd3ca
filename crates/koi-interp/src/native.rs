//! Calls of the user's extern functions implemented in C ([`koi_ir::Builtin::Native`]):
//! arguments are marshalled into buffers in their C layout ([`koi_ir::CType::leaves`]), the
//! pipeline's bound [`koi_ir::NativeLib`] runs the function, and `out`/`inout` parameters
//! and the result are read back (copy-in/copy-out, as for every P4 call).

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{ExternEvent, Observer};
use koi_ir::native::{Leaf, LeafKind};
use koi_ir::{Bits, NativeArg, Place, Value};

impl<O: Observer> Ctx<'_, O> {
    /// Runs native function `func` with `args`, storing its result in `ret`.
    pub(crate) fn native_call(
        &mut self,
        pkt: &mut Pkt,
        func: u32,
        args: &[NativeArg],
        ret: Option<&Place>,
        params: &[Bits],
    ) -> Result<(), Stop> {
        let pipeline = self.p;
        let natives = &pipeline.natives;
        let Some(f) = natives.fns.get(func as usize) else {
            return Err(Stop::Abort(format!(
                "call of missing extern function {func}"
            )));
        };
        let Some(lib) = natives.lib.clone() else {
            return Err(Stop::Abort(format!(
                "extern function {} has no implementation (give its C file with --extern FILE)",
                f.name
            )));
        };
        let env = self.env(pkt, params);
        let mut bufs = Vec::with_capacity(args.len());
        let mut inputs = Vec::new();
        for (p, a) in f.params.iter().zip(args) {
            let mut buf = vec![0u8; p.ty.size_align().0.max(1)];
            if p.dir.reads() {
                for (leaf, e) in p.ty.leaves().iter().zip(&a.reads) {
                    let v = env.eval(e);
                    encode(&mut buf, leaf, &v);
                    inputs.push(value_bits(&v));
                }
            }
            bufs.push(buf);
        }
        let mut rbuf = vec![0u8; f.ret.as_ref().map_or(1, |t| t.size_align().0.max(1))];
        lib.call(func as usize, &mut bufs, &mut rbuf)
            .map_err(|e| Stop::Abort(format!("extern function {}: {e}", f.name)))?;
        for (p, (a, buf)) in f.params.iter().zip(args.iter().zip(&bufs)) {
            if !p.dir.writes() {
                continue;
            }
            let leaves = p.ty.leaves();
            // Validity first: making a header valid may zero its fields (v1model, PSA).
            let mut headers = a.headers.iter();
            for leaf in &leaves {
                if leaf.kind == LeafKind::Valid
                    && let Some(&h) = headers.next()
                {
                    match buf[leaf.offset] != 0 {
                        true => self.set_valid(pkt, h),
                        false => self.set_invalid(pkt, h),
                    }
                }
            }
            for (leaf, place) in leaves.iter().zip(&a.writes) {
                if leaf.kind != LeafKind::Valid {
                    let v = decode(buf, leaf);
                    self.write_place(pkt, place, &v, params);
                }
            }
        }
        let mut result = None;
        if let (Some(dst), Some(t)) = (ret, &f.ret)
            && let Some(leaf) = t.leaves().first()
        {
            let v = decode(&rbuf, leaf);
            result = Some(value_bits(&v));
            self.write_place(pkt, dst, &v, params);
        }
        self.obs.native_call(&f.name, f.pure);
        self.obs.extern_call(&ExternEvent {
            name: &f.name,
            method: "call",
            inputs: &inputs,
            result: result.as_ref(),
        });
        Ok(())
    }
}

/// Writes `v` as leaf `leaf` of a buffer.
fn encode(buf: &mut [u8], leaf: &Leaf, v: &Value) {
    let at = leaf.offset;
    match leaf.kind {
        LeafKind::Bool | LeafKind::Valid => buf[at] = u8::from(v.to_bool()),
        LeafKind::Int {
            bytes,
            width,
            signed,
        } => {
            let b = value_bits(v).resize(width);
            let b = if signed { b.sext(64) } else { b.resize(64) };
            let x = b.low_u64();
            let ne: Vec<u8> = match bytes {
                1 => (x as u8).to_ne_bytes().to_vec(),
                2 => (x as u16).to_ne_bytes().to_vec(),
                4 => (x as u32).to_ne_bytes().to_vec(),
                _ => x.to_ne_bytes().to_vec(),
            };
            buf[at..at + ne.len()].copy_from_slice(&ne);
        }
        LeafKind::Wide { width } => {
            let be = value_bits(v).resize(width).to_be_bytes();
            let n = width.div_ceil(8) as usize;
            let src = &be[be.len().saturating_sub(n)..];
            buf[at + n - src.len()..at + n].copy_from_slice(src);
        }
    }
}

/// Reads leaf `leaf` of a buffer.
fn decode(buf: &[u8], leaf: &Leaf) -> Value {
    let at = leaf.offset;
    match leaf.kind {
        LeafKind::Bool | LeafKind::Valid => Value::Bool(buf[at] != 0),
        LeafKind::Int { bytes, width, .. } => {
            let s = &buf[at..at + bytes];
            let x = match bytes {
                1 => u64::from(s[0]),
                2 => u64::from(u16::from_ne_bytes([s[0], s[1]])),
                4 => u64::from(u32::from_ne_bytes([s[0], s[1], s[2], s[3]])),
                _ => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(s);
                    u64::from_ne_bytes(a)
                }
            };
            Value::Bits(Bits::from_u64(64, x).resize(width))
        }
        LeafKind::Wide { width } => {
            let n = width.div_ceil(8) as usize;
            Value::Bits(Bits::from_be_bytes(width, &buf[at..at + n]))
        }
    }
}

fn value_bits(v: &Value) -> Bits {
    match v {
        Value::Bool(b) => Bits::from_bool(*b),
        Value::Bits(b) | Value::Varbit { bits: b, .. } => b.clone(),
    }
}
