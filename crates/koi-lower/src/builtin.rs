//! Externs at call sites: packet operations (`extract`, `lookahead`, `advance`, `length`,
//! `emit`), methods of extern instances (`ExternCall` with arguments by direction), and the
//! architecture's extern functions turned into typed [`Builtin`]s.

use crate::ctx::{Lowerer, R, internal, unsupported};
use crate::loc::{Alloc, Loc, STy, bin};
use koi_ir::{
    Arg, BinOp, Builtin, Cast, CloneKind, Expr, ExternId, ExternKind, HashAlgo, HeaderRef, Place,
    SlotKind, Stmt, Ty as IrTy,
};
use koi_sema::types::Ty;
use koi_sema::{CallInfo, DeclId, Value};
use koi_syntax::Span;
use koi_syntax::ast::{self, Direction};

impl Lowerer<'_> {
    pub fn packet_method(
        &mut self,
        e: &ast::Expr,
        name: &str,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<Option<Loc>> {
        let arg = |i: usize| Self::arg(info, args, i);
        match name {
            "extract" => {
                let Some(h) = arg(0) else {
                    return unsupported(e.span, "extract without a header");
                };
                let header = match self.params_of(info).first() {
                    Some(p) if matches!(h.kind, ast::ExprKind::DontCare) => {
                        match self.arg_target(h, p.ty)? {
                            Loc::Header(r, _) => r,
                            _ => return unsupported(h.span, "this value as a header"),
                        }
                    }
                    _ => self.header_ref(h)?,
                };
                let varbit_bits = match arg(1) {
                    Some(b) => Some(self.rvalue(b)?),
                    None => None,
                };
                self.emit(Stmt::Extract {
                    header,
                    varbit_bits,
                });
                Ok(None)
            }
            "lookahead" => self.lookahead(e, info).map(Some),
            "advance" => {
                let Some(b) = arg(0) else {
                    return unsupported(e.span, "advance without an amount");
                };
                let bits = self.rvalue(b)?;
                self.emit(Stmt::Advance { bits });
                Ok(None)
            }
            "length" => {
                let s = self.new_slot("$pkt_len", IrTy::Bits(32), false, koi_ir::SlotKind::Temp);
                self.emit(Stmt::PacketLength {
                    dst: Place::Slot(s),
                });
                Ok(Some(Loc::Scalar(Place::Slot(s), STy::bits(32))))
            }
            "emit" => {
                let Some(h) = arg(0) else {
                    return unsupported(e.span, "emit without a header");
                };
                let l = self.value(h)?;
                self.emit_loc(&l, h.span)?;
                Ok(None)
            }
            _ => unsupported(e.span, format!("packet method {name}")),
        }
    }

    /// `emit` of a header, union, stack or struct (its headers in order).
    fn emit_loc(&mut self, l: &Loc, span: Span) -> R<()> {
        match l {
            Loc::Header(h, _) => self.emit(Stmt::Emit(h.clone())),
            Loc::Union(ms, _) => {
                for m in ms {
                    self.emit(Stmt::Emit(HeaderRef::Header(*m)));
                }
            }
            Loc::Stack(s, _) => {
                for h in self.p.phv.stacks[*s].elems.clone() {
                    self.emit(Stmt::Emit(HeaderRef::Header(h)));
                }
            }
            Loc::Struct(fs, _) => {
                for (_, f) in fs.clone() {
                    self.emit_loc(&f, span)?;
                }
            }
            _ => return unsupported(span, "emitting this value"),
        }
        Ok(())
    }

    /// `pkt.lookahead<T>()`: a scalar directly; a header or struct through a wide temporary
    /// sliced into fields.
    fn lookahead(&mut self, e: &ast::Expr, info: &CallInfo) -> R<Loc> {
        let Some(t) = info.type_args.first().copied() else {
            return internal(e.span, "lookahead without a type");
        };
        let t = self.subst_ty(t);
        if let Some(s) = self.scalar(t) {
            let slot = self.new_slot("$lookahead", s.ty, s.signed, koi_ir::SlotKind::Temp);
            self.emit(Stmt::Lookahead {
                dst: Place::Slot(slot),
            });
            return Ok(Loc::Scalar(Place::Slot(slot), s));
        }
        let Some(w) = self.types.width(t) else {
            return unsupported(e.span, "lookahead of this type");
        };
        let w = w as u32;
        let wide = self.new_slot("$lookahead", IrTy::Bits(w), false, koi_ir::SlotKind::Temp);
        self.emit(Stmt::Lookahead {
            dst: Place::Slot(wide),
        });
        let tmp = self.alloc("$lookahead", t, Alloc::Temp, e.span)?;
        if let Loc::Header(h, _) = &tmp {
            self.emit(Stmt::SetValid(h.clone()));
        }
        let mut places = Vec::new();
        self.places(&tmp, &mut places);
        let mut hi = w;
        for p in places {
            let pw = self.place_width(&p);
            if pw == 0 || pw > hi {
                return unsupported(e.span, "lookahead of this type");
            }
            let v = Expr::Slot(wide).slice(hi - 1, hi - pw);
            let v = match self.place_ty(&p) {
                IrTy::Bool => v.cast(koi_ir::Cast::ToBool),
                _ => v,
            };
            self.emit(Stmt::assign(p, v));
            hi -= pw;
        }
        Ok(tmp)
    }

    fn place_ty(&self, p: &Place) -> IrTy {
        match p {
            Place::Slot(s) => self.p.phv.slots[*s].ty,
            Place::Slice { hi, lo, .. } => IrTy::Bits(hi - lo + 1),
            Place::StackField { .. } => IrTy::Bits(0),
        }
    }

    fn place_width(&self, p: &Place) -> u32 {
        self.place_ty(p).width()
    }

    /// `instance.method(args)` of an extern instance.
    pub fn extern_method(
        &mut self,
        e: &ast::Expr,
        id: ExternId,
        name: &str,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<Option<Loc>> {
        let params = self.params_of(info);
        // A register of a struct keeps each cell packed (fields in order, first field
        // highest): a struct argument is packed into one value, a struct read into a
        // temporary and unpacked after the call.
        let packed = matches!(self.p.externs[id].kind, ExternKind::Register { .. });
        let mut unpack = Vec::new();
        let mut out = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let Some(a) = Self::arg(info, args, i) else {
                continue;
            };
            match p.dir {
                Some(Direction::Out) | Some(Direction::InOut) => {
                    let l = self.arg_target(a, p.ty)?;
                    let place = match l {
                        Loc::Scalar(place, _) => place,
                        l @ Loc::Struct(..) if packed => {
                            let leaves = scalar_leaves(&l, a.span)?;
                            let w = leaves.iter().map(|(_, t)| t.width()).sum();
                            let tmp = self.new_slot("$cell", IrTy::Bits(w), false, SlotKind::Temp);
                            if p.dir == Some(Direction::InOut) {
                                let v = pack(&leaves);
                                self.emit(Stmt::assign(Place::Slot(tmp), v));
                            }
                            unpack.push((tmp, leaves));
                            Place::Slot(tmp)
                        }
                        _ => return unsupported(a.span, "an aggregate out argument of an extern"),
                    };
                    out.push(if p.dir == Some(Direction::Out) {
                        Arg::Out(place)
                    } else {
                        Arg::InOut(place)
                    });
                }
                _ => {
                    let l = self.value(a)?;
                    if packed && matches!(l, Loc::Struct(..)) {
                        let leaves = scalar_leaves(&l, a.span)?;
                        out.push(Arg::In(pack(&leaves)));
                        continue;
                    }
                    let mut es = Vec::new();
                    self.flatten(&l, a.span, &mut es)?;
                    out.extend(es.into_iter().map(Arg::In));
                }
            }
        }
        let ret = self.decl_ret(e)?;
        let result = match ret {
            Some(t) => Some(self.alloc("$result", t, Alloc::Temp, e.span)?),
            None => None,
        };
        let result_place = match &result {
            Some(Loc::Scalar(p, _)) => Some(p.clone()),
            // A struct read from a register (PSA's `T read(in I index)`) comes back packed,
            // as an `out T` argument does.
            Some(l @ Loc::Struct(..)) if packed => {
                let leaves = scalar_leaves(l, e.span)?;
                let w = leaves.iter().map(|(_, t)| t.width()).sum();
                let tmp = self.new_slot("$cell", IrTy::Bits(w), false, SlotKind::Temp);
                unpack.push((tmp, leaves));
                Some(Place::Slot(tmp))
            }
            Some(_) => return unsupported(e.span, "an extern method returning an aggregate"),
            None => None,
        };
        // PSA's `get_hash(base, data, max)` is told from `get_hash(data)` by name: the
        // arguments are flattened.
        let method = match &self.p.externs[id].kind {
            ExternKind::Hash { .. } if params.len() == 3 => "get_hash_mod",
            _ => name,
        };
        self.emit(Stmt::ExternCall {
            instance: id,
            method: method.to_string(),
            args: out,
            result: result_place,
        });
        for (tmp, leaves) in unpack {
            let mut lo: u32 = leaves.iter().map(|(_, t)| t.width()).sum();
            for (leaf, t) in leaves {
                lo -= t.width();
                let bits = Expr::Slot(tmp).slice(lo + t.width() - 1, lo);
                let v = if t.ty == IrTy::Bool {
                    bits.cast(Cast::ToBool)
                } else {
                    bits
                };
                self.copy(&leaf, &Loc::Value(v, t), e.span)?;
            }
        }
        Ok(result)
    }

    /// The (substituted) non-void type of a call expression.
    fn decl_ret(&mut self, e: &ast::Expr) -> R<Option<koi_sema::TypeId>> {
        let t = self.natural_ty(e)?;
        Ok((!matches!(self.types.get(t), Ty::Void)).then_some(t))
    }

    /// A data list argument flattened to scalars; with `bits` (hash and checksum inputs) a
    /// `bool` becomes its `bit<1>`, else (`log_msg`) booleans stay booleans.
    fn data(&mut self, a: Option<&ast::Expr>, span: Span, bits: bool) -> R<Vec<Expr>> {
        let Some(a) = a else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        self.data_items(a, span, bits, &mut out)?;
        Ok(out)
    }

    /// The leaves of a data list, in order. A list (or struct) expression is taken item by
    /// item rather than as one value, so that a header field stays a reference to the
    /// header's slot: BMv2 leaves the fields of an invalid header out of a hash or checksum,
    /// which needs to know whose field each leaf is (a copy into a temporary would not).
    fn data_items(&mut self, a: &ast::Expr, span: Span, bits: bool, out: &mut Vec<Expr>) -> R<()> {
        match &a.kind {
            ast::ExprKind::List { items, .. } if self.cast_of(a.id).is_none() => {
                for item in items {
                    self.data_items(item, span, bits, out)?;
                }
                return Ok(());
            }
            ast::ExprKind::StructInit { fields, .. } if self.cast_of(a.id).is_none() => {
                for (_, item) in fields {
                    self.data_items(item, span, bits, out)?;
                }
                return Ok(());
            }
            _ => {}
        }
        let l = self.value(a)?;
        if bits {
            self.flatten_bits(&l, span, out)
        } else {
            self.flatten(&l, span, out)
        }
    }

    fn place_arg(&mut self, a: Option<&ast::Expr>, span: Span) -> R<Place> {
        let Some(a) = a else {
            return internal(span, "missing argument");
        };
        match self.lvalue(a)? {
            Loc::Scalar(p, _) => Ok(p),
            _ => unsupported(a.span, "an aggregate here"),
        }
    }

    fn expr_arg(&mut self, a: Option<&ast::Expr>, span: Span) -> R<Expr> {
        match a {
            Some(a) => self.rvalue(a),
            None => internal(span, "missing argument"),
        }
    }

    /// The member name of a constant enum argument.
    fn enum_arg(&self, a: Option<&ast::Expr>, span: Span) -> R<String> {
        match a.and_then(|a| self.const_value(a)) {
            Some(Value::Enum { member, .. }) => Ok(member.clone()),
            _ => unsupported(span, "a non-constant enum argument"),
        }
    }

    /// The algorithm of a `hash` or checksum call (`used_by`); a custom CRC gets a
    /// calculation of its own.
    fn hash_algo(&mut self, a: Option<&ast::Expr>, span: Span, used_by: &str) -> R<HashAlgo> {
        let m = self.enum_arg(a, span)?;
        Ok(match m.as_str() {
            "crc32_custom" => HashAlgo::Crc32Custom(self.calculation(32, used_by)),
            "crc16_custom" => HashAlgo::Crc16Custom(self.calculation(16, used_by)),
            other => match HashAlgo::fixed(other) {
                Some(a) => a,
                None => return unsupported(span, format!("hash algorithm {m}")),
            },
        })
    }

    /// A new custom CRC calculation of `width` bits used by `used_by` in the block being
    /// lowered; returns its index.
    pub(crate) fn calculation(&mut self, width: u32, used_by: &str) -> u32 {
        let n = self.p.calculations.len() as u32;
        self.p.calculations.push(koi_ir::Calculation {
            name: format!("calc_{n}"),
            width,
            block: self.path.clone(),
            used_by: used_by.to_string(),
        });
        n
    }

    /// `verify(cond, e)` with an error `e` known only at run time: the IR's `Verify` takes a
    /// constant error, so a failed check branches on `e` to one `Verify(false, code)` per
    /// error the program declares.
    fn verify_dynamic(&mut self, cond: Expr, e: Option<&ast::Expr>, span: Span) -> R<()> {
        let Some(e) = e else {
            return internal(span, "verify without an error");
        };
        let error = self.rvalue(e)?;
        let w = self.p.error_width;
        let n = self.p.errors.len() as u32;
        let (ok, failed) = self.branch(cond);
        let end = self.new_pos("verified");
        self.switch_to(ok);
        self.jump(end);
        self.switch_to(failed);
        // A branch per code but the last, which is what remains.
        for code in 0..n.saturating_sub(1) {
            let is = bin(
                koi_ir::BinOp::Eq,
                error.clone(),
                Expr::bits(w, u128::from(code)),
            );
            let (then, otherwise) = self.branch(is);
            self.switch_to(then);
            self.emit(Stmt::Verify {
                cond: Expr::Bool(false),
                error: code,
            });
            self.jump(end);
            self.switch_to(otherwise);
        }
        self.emit(Stmt::Verify {
            cond: Expr::Bool(false),
            error: n.saturating_sub(1),
        });
        self.jump(end);
        self.switch_to(end);
        Ok(())
    }

    /// A call of an extern function of the architecture.
    pub fn extern_function(
        &mut self,
        e: &ast::Expr,
        d: DeclId,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<Option<Loc>> {
        let name = self.decl(d)?.name.clone();
        let sp = e.span;
        if self.p.arch == koi_ir::Architecture::Psa
            && let Some(l) = self.psa_function(&name, info, args, sp)?
        {
            return Ok(Some(l));
        }
        let a = |i: usize| Self::arg(info, args, i);
        let ubpf = self.p.arch == koi_ir::Architecture::Ubpf;
        let b = match name.as_str() {
            "mark_to_drop" => Builtin::MarkToDrop,
            "mark_to_pass" => Builtin::MarkToPass,
            "verify" => {
                let cond = self.cond_arg(a(0), sp)?;
                match a(1).and_then(|x| self.const_value(x)).cloned() {
                    Some(Value::Error(n)) => {
                        let error = self.p.add_error(&n);
                        self.emit(Stmt::Verify { cond, error });
                    }
                    _ => self.verify_dynamic(cond, a(1), sp)?,
                }
                return Ok(None);
            }
            "hash" if ubpf => Builtin::Hash {
                dst: self.place_arg(a(0), sp)?,
                algo: HashAlgo::Lookup3,
                base: Expr::bits(32, 0),
                data: self.data(a(2), sp, true)?,
                max: None,
            },
            "hash" => Builtin::Hash {
                dst: self.place_arg(a(0), sp)?,
                algo: self.hash_algo(a(1), sp, "hash")?,
                base: self.expr_arg(a(2), sp)?,
                data: self.data(a(3), sp, true)?,
                max: Some(self.expr_arg(a(4), sp)?),
            },
            "verify_checksum" | "verify_checksum_with_payload" => Builtin::VerifyChecksum {
                cond: self.cond_arg(a(0), sp)?,
                data: self.data(a(1), sp, true)?,
                checksum: self.expr_arg(a(2), sp)?,
                algo: self.hash_algo(a(3), sp, "verify_checksum")?,
                with_payload: name.ends_with("payload"),
            },
            "update_checksum" | "update_checksum_with_payload" => Builtin::UpdateChecksum {
                cond: self.cond_arg(a(0), sp)?,
                data: self.data(a(1), sp, true)?,
                checksum: self.place_arg(a(2), sp)?,
                algo: self.hash_algo(a(3), sp, "update_checksum")?,
                with_payload: name.ends_with("payload"),
            },
            "clone" | "clone3" | "clone_preserving_field_list" => {
                let kind = match self.enum_arg(a(0), sp)?.as_str() {
                    "I2E" => CloneKind::I2E,
                    _ => CloneKind::E2E,
                };
                let session = self.expr_arg(a(1), sp)?;
                let field_list = match name.as_str() {
                    "clone" => None,
                    "clone3" => Some(self.data_field_list(a(2), sp)?),
                    _ => Some(self.field_list_arg(a(2), sp)?),
                };
                Builtin::Clone {
                    kind,
                    session,
                    field_list,
                }
            }
            "resubmit" | "resubmit_preserving_field_list" => Builtin::Resubmit {
                field_list: Some(self.any_field_list(&name, a(0), sp)?),
            },
            "recirculate" | "recirculate_preserving_field_list" => Builtin::Recirculate {
                field_list: Some(self.any_field_list(&name, a(0), sp)?),
            },
            "truncate" => Builtin::Truncate {
                bytes: self.expr_arg(a(0), sp)?,
            },
            "digest" => self.digest_call(e, info, args)?,
            "random" => Builtin::Random {
                dst: self.place_arg(a(0), sp)?,
                lo: self.expr_arg(a(1), sp)?,
                hi: self.expr_arg(a(2), sp)?,
            },
            "log_msg" => {
                let format = match a(0).and_then(|x| self.const_value(x)) {
                    Some(Value::Str(s)) => s.clone(),
                    _ => match a(0).map(|x| &x.kind) {
                        Some(ast::ExprKind::Str(s)) => s.clone(),
                        _ => String::new(),
                    },
                };
                Builtin::LogMsg {
                    format,
                    args: self.data(a(1), sp, false)?,
                }
            }
            "assert" => Builtin::Assert {
                cond: self.cond_arg(a(0), sp)?,
            },
            "assume" => Builtin::Assume {
                cond: self.cond_arg(a(0), sp)?,
            },
            "ubpf_time_get_ns" => {
                let s = self.new_slot("$time", IrTy::Bits(48), false, koi_ir::SlotKind::Temp);
                self.emit(Stmt::Builtin(Builtin::TimestampNs {
                    dst: Place::Slot(s),
                }));
                return Ok(Some(Loc::Scalar(Place::Slot(s), STy::bits(48))));
            }
            "BPF_KTIME_GET_NS" => {
                let s = self.new_slot("$time", IrTy::Bits(32), false, koi_ir::SlotKind::Temp);
                self.emit(Stmt::Builtin(Builtin::TimestampNs {
                    dst: Place::Slot(s),
                }));
                return Ok(Some(Loc::Scalar(Place::Slot(s), STy::bits(32))));
            }
            // xdp_model's IPv4 header checksum: the ones' complement sum of the fields given
            // (the header without its checksum field).
            "ebpf_ipv4_checksum" => {
                let s = self.new_slot("$csum", IrTy::Bits(16), false, koi_ir::SlotKind::Temp);
                let mut data = Vec::new();
                for i in 0..info.params.len() {
                    data.push(self.expr_arg(a(i), sp)?);
                }
                self.emit(Stmt::Builtin(Builtin::Hash {
                    dst: Place::Slot(s),
                    algo: HashAlgo::Csum16,
                    base: Expr::bits(16, 0),
                    data,
                    max: None,
                }));
                return Ok(Some(Loc::Scalar(Place::Slot(s), STy::bits(16))));
            }
            "csum_replace2" | "csum_replace4" => {
                let s = self.new_slot("$csum", IrTy::Bits(16), false, koi_ir::SlotKind::Temp);
                let b = Builtin::CsumReplace {
                    dst: Place::Slot(s),
                    csum: self.expr_arg(a(0), sp)?,
                    old: self.expr_arg(a(1), sp)?,
                    new: self.expr_arg(a(2), sp)?,
                };
                self.emit(Stmt::Builtin(b));
                return Ok(Some(Loc::Scalar(Place::Slot(s), STy::bits(16))));
            }
            _ => return self.native_function(e, d, info, args),
        };
        self.emit(Stmt::Builtin(b));
        Ok(None)
    }

    fn cond_arg(&mut self, a: Option<&ast::Expr>, span: Span) -> R<Expr> {
        match a {
            Some(a) => self.cond(a),
            None => internal(span, "missing condition"),
        }
    }

    /// The field list of `resubmit(data)` (a data list) or `..._preserving_field_list(i)`.
    fn any_field_list(
        &mut self,
        name: &str,
        a: Option<&ast::Expr>,
        span: Span,
    ) -> R<koi_ir::FieldListId> {
        if name.ends_with("field_list") {
            self.field_list_arg(a, span)
        } else {
            self.data_field_list(a, span)
        }
    }

    fn field_list_arg(&mut self, a: Option<&ast::Expr>, span: Span) -> R<koi_ir::FieldListId> {
        let Some(a) = a else {
            return internal(span, "missing field list index");
        };
        let i = self.const_u64(a)? as u32;
        self.field_list(i)
    }
}

/// The scalar locations of a struct value, in field order (nested structs flattened).
fn scalar_leaves(l: &Loc, span: Span) -> R<Vec<(Loc, STy)>> {
    fn walk(l: &Loc, span: Span, out: &mut Vec<(Loc, STy)>) -> R<()> {
        match l {
            Loc::Struct(fs, _) => fs.iter().try_for_each(|(_, f)| walk(f, span, out)),
            Loc::Scalar(_, t) | Loc::Value(_, t) => {
                out.push((l.clone(), *t));
                Ok(())
            }
            _ => unsupported(span, "a register cell of this type"),
        }
    }
    let mut out = Vec::new();
    walk(l, span, &mut out)?;
    Ok(out)
}

/// The values of `leaves` packed into one, the first highest (booleans as one bit).
fn pack(leaves: &[(Loc, STy)]) -> Expr {
    let mut acc: Option<Expr> = None;
    for (l, t) in leaves {
        let mut v = l.expr().unwrap_or(Expr::Bool(false));
        if t.ty == IrTy::Bool {
            v = v.cast(Cast::FromBool);
        }
        acc = Some(match acc {
            None => v,
            Some(a) => bin(BinOp::Concat, a, v),
        });
    }
    acc.unwrap_or(Expr::bits(1, 0))
}
