//! Storage: [`Loc`], where a value of any P4 type lives after lowering (a tree over PHV slots,
//! headers, stacks and unions), PHV allocation for a type, and the per-slot operations that
//! replace aggregate ones (copy, equality, invalidation, flattening to scalars).

use crate::ctx::{Lowerer, R, unsupported};
use crate::names;
use koi_ir::{BinOp, Expr, HeaderRef, Place, SlotKind, StackId, Stmt, UnOp};
use koi_ir::{FieldSpec, Ty as IrTy};
use koi_sema::TypeId;
use koi_sema::types::{AggKind, Ty};
use koi_syntax::Span;
use koi_syntax::ast;

/// A scalar IR type with the source signedness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct STy {
    pub ty: IrTy,
    pub signed: bool,
}

impl STy {
    pub fn bits(w: u32) -> STy {
        STy {
            ty: IrTy::Bits(w),
            signed: false,
        }
    }

    pub fn width(self) -> u32 {
        self.ty.width()
    }
}

/// Where a value lives.
#[derive(Clone, Debug, PartialEq)]
pub enum Loc {
    /// A scalar that can be assigned.
    Scalar(Place, STy),
    /// A read-only scalar (action parameters, constants, computed values).
    Value(Expr, STy),
    /// A header (static, or a stack element through `next`/`last`/an index).
    Header(HeaderRef, TypeId),
    Stack(StackId, TypeId),
    /// A header union: its member headers in order.
    Union(Vec<koi_ir::HeaderId>, TypeId),
    /// A struct, tuple or list: fields in order with their names.
    Struct(Vec<(String, Loc)>, TypeId),
}

/// The kind of slots to allocate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alloc {
    Metadata,
    Local,
    Temp,
}

impl Alloc {
    pub(crate) fn kind(self) -> SlotKind {
        match self {
            Alloc::Metadata => SlotKind::Metadata,
            Alloc::Local => SlotKind::Local,
            Alloc::Temp => SlotKind::Temp,
        }
    }
}

impl Loc {
    /// The scalar value as an expression.
    pub fn expr(&self) -> Option<Expr> {
        match self {
            Loc::Scalar(p, _) => Some(place_expr(p)),
            Loc::Value(e, _) => Some(e.clone()),
            _ => None,
        }
    }

    pub fn sty(&self) -> Option<STy> {
        match self {
            Loc::Scalar(_, t) | Loc::Value(_, t) => Some(*t),
            _ => None,
        }
    }
}

/// The value of a place.
pub fn place_expr(p: &Place) -> Expr {
    match p {
        Place::Slot(s) => Expr::Slot(*s),
        Place::Slice { slot, hi, lo } => Expr::Slot(*slot).slice(*hi, *lo),
        Place::StackField {
            stack,
            index,
            field,
        } => Expr::StackField {
            stack: *stack,
            index: Box::new(index.clone()),
            field: *field,
        },
    }
}

/// `a op b`
pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::binary(op, a, b)
}

pub fn and_all(es: Vec<Expr>) -> Expr {
    es.into_iter()
        .reduce(|a, b| bin(BinOp::And, a, b))
        .unwrap_or(Expr::Bool(true))
}

pub fn or_all(es: Vec<Expr>) -> Expr {
    es.into_iter()
        .reduce(|a, b| bin(BinOp::Or, a, b))
        .unwrap_or(Expr::Bool(false))
}

pub fn not(e: Expr) -> Expr {
    Expr::unary(UnOp::Not, e)
}

impl Lowerer<'_> {
    /// The scalar IR type of a sema type, if it is one.
    pub fn scalar(&self, ty: TypeId) -> Option<STy> {
        self.scalar_at(ty, 0)
    }

    fn scalar_at(&self, ty: TypeId, depth: u32) -> Option<STy> {
        if depth > 16 {
            return None;
        }
        let bits = |w: u32, signed: bool| {
            Some(STy {
                ty: IrTy::Bits(w),
                signed,
            })
        };
        match self.types.get(ty) {
            Ty::Bool => Some(STy {
                ty: IrTy::Bool,
                signed: false,
            }),
            Ty::Bit(w) => bits(*w, false),
            Ty::Int(w) => bits(*w, true),
            Ty::Varbit(w) => Some(STy {
                ty: IrTy::Varbit(*w),
                signed: false,
            }),
            Ty::ErrorType => bits(self.p.error_width, false),
            Ty::Enum(e) => match e.repr {
                Some(r) => self.scalar_at(r, depth + 1),
                None => bits(32, false),
            },
            Ty::NewType { base, .. } => self.scalar_at(*base, depth + 1),
            _ => None,
        }
    }

    /// The scalar type of `ty`, or an error at `span`.
    pub fn scalar_or(&self, ty: TypeId, span: Span) -> R<STy> {
        match self.scalar(ty) {
            Some(t) => Ok(t),
            None => unsupported(
                span,
                format!("a value of type {} here", self.types.display(ty)),
            ),
        }
    }

    /// Allocates storage for a value of type `ty` named `name`.
    pub fn alloc(&mut self, name: &str, ty: TypeId, how: Alloc, span: Span) -> R<Loc> {
        self.alloc_at(name, ty, how, span, None, 0)
    }

    /// [`Lowerer::alloc`] below a struct field annotated `@koi_stage(stage)` (the innermost
    /// annotated field wins); a header with no such enclosing field takes its type's.
    fn alloc_at(
        &mut self,
        name: &str,
        ty: TypeId,
        how: Alloc,
        span: Span,
        stage: Option<u32>,
        d: u32,
    ) -> R<Loc> {
        if d > 32 {
            return unsupported(span, "types nested this deeply");
        }
        if let Some(s) = self.scalar(ty) {
            let slot = self.new_slot(name, s.ty, s.signed, how.kind());
            return Ok(Loc::Scalar(Place::Slot(slot), s));
        }
        match self.types.get(ty).clone() {
            Ty::Agg(a) if a.kind == AggKind::Header => {
                let name = self.unique_name(name);
                let fields = self.header_fields(ty, span)?;
                let h = self.p.phv.add_header(&name, &a.name, &fields);
                self.p.phv.headers[h].stage = stage.or_else(|| self.type_stage(ty));
                Ok(Loc::Header(HeaderRef::Header(h), ty))
            }
            Ty::Agg(a) if a.kind == AggKind::HeaderUnion => {
                let name = self.unique_name(name);
                let mut members = Vec::new();
                let mut stages = Vec::new();
                for f in &a.fields {
                    let fs = self.header_fields(f.ty, span)?;
                    let tn = self.types.agg(f.ty).map(|x| x.name.clone());
                    members.push((f.name.clone(), tn.unwrap_or_default(), fs));
                    stages.push(
                        self.field_stage(a.decl, &f.name)
                            .or(stage)
                            .or_else(|| self.type_stage(f.ty)),
                    );
                }
                let refs: Vec<(&str, &str, &[FieldSpec])> = members
                    .iter()
                    .map(|(n, t, f)| (n.as_str(), t.as_str(), &f[..]))
                    .collect();
                let u = self.p.phv.add_union(&name, &a.name, &refs);
                let hs = self.p.phv.unions[u].members.clone();
                for (&h, s) in hs.iter().zip(stages) {
                    self.p.phv.headers[h].stage = s;
                }
                Ok(Loc::Union(hs, ty))
            }
            Ty::Agg(a) => {
                let mut fields = Vec::new();
                for f in &a.fields {
                    let st = self.field_stage(a.decl, &f.name).or(stage);
                    let fname = format!("{name}.{}", f.name);
                    let l = self.alloc_at(&fname, f.ty, how, span, st, d + 1)?;
                    fields.push((f.name.clone(), l));
                }
                Ok(Loc::Struct(fields, ty))
            }
            Ty::Tuple(ts) => {
                let mut fields = Vec::new();
                for (i, t) in ts.iter().enumerate() {
                    let l = self.alloc_at(&format!("{name}.{i}"), *t, how, span, stage, d + 1)?;
                    fields.push((i.to_string(), l));
                }
                Ok(Loc::Struct(fields, ty))
            }
            Ty::Stack { elem, size } if !self.types.is_header(elem) => {
                let mut elems = Vec::new();
                for i in 0..size {
                    let l =
                        self.alloc_at(&format!("{name}[{i}]"), elem, how, span, stage, d + 1)?;
                    elems.push((i.to_string(), l));
                }
                let ls: Vec<Loc> = elems.iter().map(|(_, l)| l.clone()).collect();
                self.add_union_stack(name, elem, &ls, how);
                Ok(Loc::Struct(elems, ty))
            }
            Ty::Stack { elem, size } => {
                let name = self.unique_name(name);
                let fields = self.header_fields(elem, span)?;
                let tn = self.types.agg(elem).map(|a| a.name.clone());
                let s = self
                    .p
                    .phv
                    .add_stack(&name, &tn.unwrap_or_default(), &fields, size);
                let st = stage.or_else(|| self.type_stage(elem));
                for h in self.p.phv.stacks[s].elems.clone() {
                    self.p.phv.headers[h].stage = st;
                }
                Ok(Loc::Stack(s, ty))
            }
            _ => unsupported(span, format!("storage of type {}", self.types.display(ty))),
        }
    }

    /// The `@koi_stage(N)` of the field `field` of the struct or union declaration `decl`.
    fn field_stage(&self, decl: koi_sema::DeclId, field: &str) -> Option<u32> {
        let fields = match &self.idx.decls.get(&decl)?.kind {
            ast::DeclKind::Struct { fields, .. } | ast::DeclKind::HeaderUnion { fields, .. } => {
                fields
            }
            _ => return None,
        };
        let f = fields.iter().find(|f| f.name.name == field)?;
        names::stage_annotation(&f.annotations)
    }

    /// The `@koi_stage(N)` of the declaration of header type `ty`.
    fn type_stage(&self, ty: TypeId) -> Option<u32> {
        let d = self.idx.decls.get(&self.types.agg(ty)?.decl)?;
        names::stage_annotation(&d.annotations)
    }

    /// The width of a struct of scalars (nested structs and arrays of bits flattened) packed
    /// field after field, as a register of that struct keeps its cells; `None` for other
    /// types.
    pub(crate) fn packed_width(&self, ty: TypeId, span: Span) -> Option<u32> {
        let a = self.types.agg(ty)?;
        if a.kind != AggKind::Struct {
            return None;
        }
        let mut fields = Vec::new();
        self.flat_fields(ty, "", span, &mut fields, 0).ok()?;
        let w: u32 = fields.iter().map(|f| f.ty.width()).sum();
        (w > 0).then_some(w)
    }

    /// The field specs of a header type (struct-typed fields flattened, `s.f`).
    fn header_fields(&self, ty: TypeId, span: Span) -> R<Vec<FieldSpec>> {
        let mut out = Vec::new();
        self.flat_fields(ty, "", span, &mut out, 0)?;
        Ok(out)
    }

    fn flat_fields(
        &self,
        ty: TypeId,
        prefix: &str,
        span: Span,
        out: &mut Vec<FieldSpec>,
        d: u32,
    ) -> R<()> {
        let Some(a) = self.types.agg(ty) else {
            return unsupported(span, "a header of this type");
        };
        for f in &a.fields {
            let name = format!("{prefix}{}", f.name);
            if let Some(s) = self.scalar(f.ty) {
                out.push(FieldSpec {
                    name,
                    ty: s.ty,
                    signed: s.signed,
                });
            } else if d < 16
                && self
                    .types
                    .agg(f.ty)
                    .is_some_and(|x| x.kind == AggKind::Struct)
            {
                self.flat_fields(f.ty, &format!("{name}."), span, out, d + 1)?;
            } else if let Some((_, elem, size)) = self.scalar_array(f.ty) {
                for j in 0..size {
                    out.push(FieldSpec {
                        name: format!("{name}[{j}]"),
                        ty: elem.ty,
                        signed: elem.signed,
                    });
                }
            } else {
                return unsupported(span, format!("header field {} of this type", f.name));
            }
        }
        Ok(())
    }

    /// The element type (as declared and as a scalar) and size of an array of scalars
    /// `T[N]` (a header field may be one: its elements are consecutive fields, `f[0]` first).
    pub(crate) fn scalar_array(&self, ty: TypeId) -> Option<(TypeId, STy, u32)> {
        match self.types.get(ty) {
            Ty::Stack { elem, size } => Some((*elem, self.scalar(*elem)?, *size)),
            _ => None,
        }
    }

    /// The number of PHV fields a header field of type `ty` takes.
    fn flat_count(&self, ty: TypeId) -> usize {
        if self.scalar(ty).is_some() {
            return 1;
        }
        if let Some((_, _, size)) = self.scalar_array(ty) {
            return size as usize;
        }
        self.types
            .agg(ty)
            .map_or(1, |a| a.fields.iter().map(|f| self.flat_count(f.ty)).sum())
    }

    /// Field `i` of an aggregate location.
    pub fn field(&self, loc: &Loc, i: usize, span: Span) -> R<Loc> {
        match loc {
            Loc::Struct(fs, _) => match fs.get(i) {
                Some((_, l)) => Ok(l.clone()),
                None => unsupported(span, "this field access"),
            },
            Loc::Union(ms, ty) => {
                let fty = self
                    .types
                    .agg(*ty)
                    .and_then(|a| a.fields.get(i))
                    .map(|f| f.ty);
                match (ms.get(i), fty) {
                    (Some(h), Some(t)) => Ok(Loc::Header(HeaderRef::Header(*h), t)),
                    _ => unsupported(span, "this union member"),
                }
            }
            Loc::Header(h, ty) => self.header_field(h, *ty, i, span),
            _ => unsupported(span, "a field of this value"),
        }
    }

    fn header_field(&self, h: &HeaderRef, ty: TypeId, i: usize, span: Span) -> R<Loc> {
        let Some(a) = self.types.agg(ty) else {
            return unsupported(span, "this header field");
        };
        let Some(f) = a.fields.get(i) else {
            return unsupported(span, "this header field");
        };
        let k: usize = a.fields[..i].iter().map(|f| self.flat_count(f.ty)).sum();
        self.header_sub(h, f.ty, k, span)
    }

    /// The field of header `h` of type `fty` starting at flat field index `k`.
    fn header_sub(&self, h: &HeaderRef, fty: TypeId, k: usize, span: Span) -> R<Loc> {
        if let Some((elem, _, size)) = self.scalar_array(fty) {
            // An array field: its elements, indexed like a struct's fields.
            let elems = (0..size as usize)
                .map(|j| Ok((format!("[{j}]"), self.header_sub(h, elem, k + j, span)?)))
                .collect::<R<Vec<_>>>()?;
            return Ok(Loc::Struct(elems, fty));
        }
        if self.scalar(fty).is_none() {
            let Some(a) = self.types.agg(fty) else {
                return unsupported(span, "this header field");
            };
            let mut fields = Vec::new();
            let mut at = k;
            for f in &a.fields {
                fields.push((f.name.clone(), self.header_sub(h, f.ty, at, span)?));
                at += self.flat_count(f.ty);
            }
            return Ok(Loc::Struct(fields, fty));
        }
        let i = k;
        let sty = self.scalar_or(fty, span)?;
        let place = match h {
            HeaderRef::Header(id) => match self.p.phv.headers[*id].fields.get(i) {
                Some(s) => Place::Slot(*s),
                None => return unsupported(span, "this header field"),
            },
            HeaderRef::Index(stack, idx) => Place::StackField {
                stack: *stack,
                index: (**idx).clone(),
                field: i as u32,
            },
            HeaderRef::Next(stack) | HeaderRef::Last(stack) => {
                let next = Expr::Slot(self.p.phv.stacks[*stack].next_index);
                let index = match h {
                    HeaderRef::Last(_) => bin(BinOp::Sub, next, Expr::bits(32, 1)),
                    _ => next,
                };
                Place::StackField {
                    stack: *stack,
                    index,
                    field: i as u32,
                }
            }
        };
        Ok(Loc::Scalar(place, sty))
    }

    /// Element `i` (constant) of a stack.
    pub fn stack_elem(&self, stack: StackId, ty: TypeId, i: u64, span: Span) -> R<Loc> {
        let elem = match self.types.get(ty) {
            Ty::Stack { elem, .. } => *elem,
            _ => return unsupported(span, "indexing this value"),
        };
        match self.p.phv.stacks[stack].elems.get(i as usize) {
            Some(h) => Ok(Loc::Header(HeaderRef::Header(*h), elem)),
            None => Ok(Loc::Header(
                HeaderRef::Index(stack, Box::new(Expr::bits(32, u128::from(i)))),
                elem,
            )),
        }
    }

    /// `dst = src` for locations of the same type.
    pub fn copy(&mut self, dst: &Loc, src: &Loc, span: Span) -> R<()> {
        match (dst, src) {
            (Loc::Scalar(p, _), s) if s.expr().is_some() => {
                let v = s.expr().unwrap_or(Expr::Bool(false));
                self.emit(Stmt::assign(p.clone(), v));
                Ok(())
            }
            (Loc::Header(d, _), Loc::Header(s, _)) => {
                if d != s {
                    self.emit(Stmt::CopyHeader {
                        dst: d.clone(),
                        src: s.clone(),
                    });
                }
                Ok(())
            }
            (Loc::Struct(d, _), Loc::Struct(s, _)) if d.len() == s.len() => {
                for ((_, a), (_, b)) in d.iter().zip(s) {
                    self.copy(a, b, span)?;
                }
                Ok(())
            }
            (Loc::Union(d, _), Loc::Union(s, _)) if d.len() == s.len() => {
                for (a, b) in d.iter().zip(s) {
                    if a != b {
                        self.emit(Stmt::CopyHeader {
                            dst: HeaderRef::Header(*a),
                            src: HeaderRef::Header(*b),
                        });
                    }
                }
                Ok(())
            }
            (Loc::Stack(d, _), Loc::Stack(s, _)) => self.copy_stack(*d, *s, span),
            _ => unsupported(span, "this assignment"),
        }
    }

    fn copy_stack(&mut self, d: StackId, s: StackId, span: Span) -> R<()> {
        if d == s {
            return Ok(());
        }
        let (de, se) = (
            self.p.phv.stacks[d].elems.clone(),
            self.p.phv.stacks[s].elems.clone(),
        );
        if de.len() != se.len() {
            return unsupported(span, "copying stacks of different sizes");
        }
        for (a, b) in de.into_iter().zip(se) {
            self.emit(Stmt::CopyHeader {
                dst: HeaderRef::Header(a),
                src: HeaderRef::Header(b),
            });
        }
        Ok(())
    }

    /// Marks every header in `loc` invalid (`out` parameters, header locals).
    pub fn invalidate(&mut self, loc: &Loc) {
        match loc {
            Loc::Header(h, _) => self.emit(Stmt::SetInvalid(h.clone())),
            Loc::Union(ms, _) => {
                for m in ms {
                    self.emit(Stmt::SetInvalid(HeaderRef::Header(*m)));
                }
            }
            Loc::Stack(s, _) => {
                for h in self.p.phv.stacks[*s].elems.clone() {
                    self.emit(Stmt::SetInvalid(HeaderRef::Header(h)));
                }
            }
            Loc::Struct(fs, _) => {
                for (_, f) in fs.clone() {
                    self.invalidate(&f);
                }
            }
            _ => {}
        }
    }

    /// `a == b` for locations of the same type (headers: both invalid, or both valid with
    /// equal fields).
    pub fn equal(&self, a: &Loc, b: &Loc, span: Span) -> R<Expr> {
        match (a, b) {
            (x, y) if x.expr().is_some() && y.expr().is_some() => Ok(bin(
                BinOp::Eq,
                x.expr().unwrap_or(Expr::Bool(false)),
                y.expr().unwrap_or(Expr::Bool(false)),
            )),
            (Loc::Header(ha, ta), Loc::Header(hb, _)) => {
                let n = self.types.agg(*ta).map_or(0, |x| x.fields.len());
                let mut eqs = Vec::new();
                for i in 0..n {
                    let fa = self.field(a, i, span)?;
                    let fb = self.field(b, i, span)?;
                    eqs.push(self.equal(&fa, &fb, span)?);
                }
                let (va, vb) = (Expr::IsValid(ha.clone()), Expr::IsValid(hb.clone()));
                let both_invalid = bin(BinOp::And, not(va.clone()), not(vb.clone()));
                let mut all = vec![va, vb];
                all.extend(eqs);
                Ok(bin(BinOp::Or, both_invalid, and_all(all)))
            }
            (Loc::Struct(fa, _), Loc::Struct(fb, _)) if fa.len() == fb.len() => {
                let mut eqs = Vec::new();
                for ((_, x), (_, y)) in fa.iter().zip(fb) {
                    eqs.push(self.equal(x, y, span)?);
                }
                Ok(and_all(eqs))
            }
            (Loc::Union(ma, ta), Loc::Union(mb, _)) if ma.len() == mb.len() => {
                let mut eqs = Vec::new();
                for i in 0..ma.len() {
                    let x = self.field(a, i, span)?;
                    let y = self.field(b, i, span)?;
                    eqs.push(self.equal(&x, &y, span)?);
                }
                let _ = ta;
                Ok(and_all(eqs))
            }
            (Loc::Stack(sa, _), Loc::Stack(sb, _)) => {
                let (ea, eb) = (&self.p.phv.stacks[*sa].elems, &self.p.phv.stacks[*sb].elems);
                let ty = match a {
                    Loc::Stack(_, t) => match self.types.get(*t) {
                        Ty::Stack { elem, .. } => *elem,
                        _ => return unsupported(span, "comparing these stacks"),
                    },
                    _ => return unsupported(span, "comparing these stacks"),
                };
                let mut eqs = Vec::new();
                for (x, y) in ea.iter().zip(eb) {
                    let lx = Loc::Header(HeaderRef::Header(*x), ty);
                    let ly = Loc::Header(HeaderRef::Header(*y), ty);
                    eqs.push(self.equal(&lx, &ly, span)?);
                }
                Ok(and_all(eqs))
            }
            _ => unsupported(span, "comparing these values"),
        }
    }

    /// The scalars of a location in order (headers: their fields), for data lists of hashes,
    /// checksums and digests.
    pub fn flatten(&self, loc: &Loc, span: Span, out: &mut Vec<Expr>) -> R<()> {
        self.leaves(loc, span, out, false)
    }

    /// [`Self::flatten`] for a list of bits (digest data, hash and checksum inputs): a
    /// `bool` leaf becomes its `bit<1>`, as p4c's targets pack it.
    pub fn flatten_bits(&self, loc: &Loc, span: Span, out: &mut Vec<Expr>) -> R<()> {
        self.leaves(loc, span, out, true)
    }

    fn leaves(&self, loc: &Loc, span: Span, out: &mut Vec<Expr>, bits: bool) -> R<()> {
        match loc {
            Loc::Scalar(_, t) | Loc::Value(_, t) => {
                let e = loc.expr().unwrap_or(Expr::Bool(false));
                out.push(if bits && t.ty == IrTy::Bool {
                    e.cast(koi_ir::Cast::FromBool)
                } else {
                    e
                });
                Ok(())
            }
            Loc::Header(_, ty) => {
                let n = self.types.agg(*ty).map_or(0, |a| a.fields.len());
                for i in 0..n {
                    let f = self.field(loc, i, span)?;
                    self.leaves(&f, span, out, bits)?;
                }
                Ok(())
            }
            Loc::Struct(fs, _) => {
                for (_, f) in fs {
                    self.leaves(f, span, out, bits)?;
                }
                Ok(())
            }
            Loc::Union(..) | Loc::Stack(..) => unsupported(span, "this value in a data list"),
        }
    }

    /// The assignable scalar places of a location, in order.
    pub fn places(&self, loc: &Loc, out: &mut Vec<Place>) {
        match loc {
            Loc::Scalar(p, _) => out.push(p.clone()),
            Loc::Struct(fs, _) => fs.iter().for_each(|(_, f)| self.places(f, out)),
            Loc::Header(HeaderRef::Header(h), _) => {
                let fields = &self.p.phv.headers[*h].fields;
                out.extend(fields.iter().map(|s| Place::Slot(*s)));
            }
            _ => {}
        }
    }

    /// The slots a location may read or write (a static over-approximation for dynamic
    /// stack references), to detect aliasing between arguments.
    pub fn footprint(&self, loc: &Loc) -> Vec<koi_ir::SlotId> {
        let mut out = Vec::new();
        self.footprint_into(loc, &mut out);
        out
    }

    fn footprint_into(&self, loc: &Loc, out: &mut Vec<koi_ir::SlotId>) {
        let phv = &self.p.phv;
        let header = |h: koi_ir::HeaderId, out: &mut Vec<koi_ir::SlotId>| {
            out.extend(phv.headers[h].fields.iter().copied());
            out.push(phv.headers[h].valid);
        };
        let stack = |s: StackId, out: &mut Vec<koi_ir::SlotId>| {
            for &h in &phv.stacks[s].elems {
                header(h, out);
            }
            out.push(phv.stacks[s].next_index);
        };
        match loc {
            Loc::Scalar(p, _) => match p {
                Place::StackField { stack: s, .. } => stack(*s, out),
                _ => out.extend(p.slot()),
            },
            Loc::Value(..) => {}
            Loc::Header(HeaderRef::Header(h), _) => header(*h, out),
            Loc::Header(HeaderRef::Next(s) | HeaderRef::Last(s) | HeaderRef::Index(s, _), _)
            | Loc::Stack(s, _) => stack(*s, out),
            Loc::Union(ms, _) => ms.iter().for_each(|h| header(*h, out)),
            Loc::Struct(fs, _) => fs.iter().for_each(|(_, f)| self.footprint_into(f, out)),
        }
    }
}
