//! Extern instances (counters, meters, registers, action profiles and selectors, ...) with their
//! resolved [`ExternKind`], digests, field lists, the control-plane types (P4Info `type_info`)
//! and controller packet metadata headers.

use crate::ctx::{Lowerer, R, internal, unsupported};
use crate::loc::Loc;
use crate::names;
use koi_ir::externs::MetadataField;
use koi_ir::types::{Member, Translation, TypeDecl};
use koi_ir::{
    ConstArg, ControllerHeader, CounterUnit, Digest, Extern, ExternKind, FieldList, FieldListId,
    HashAlgo, MeterUnit, P4Type, Preamble,
};
use koi_sema::types::{AggKind, Ty};
use koi_sema::{CallInfo, CallTarget, DeclId, TypeId, Value};
use koi_syntax::Span;
use koi_syntax::ast;

impl Lowerer<'_> {
    /// The extern instance declared by `decl` (`T(args) name;`) in the current block instance
    /// (or at top level), created on first use.
    pub fn extern_instance(&mut self, decl: DeclId, d: &ast::Decl) -> R<koi_ir::ExternId> {
        let (anns, span) = (&d.annotations[..], d.span);
        let args: &[ast::Argument] = match &d.kind {
            ast::DeclKind::Instantiation { args, .. } => args,
            _ => &[],
        };
        let top = self.decl(decl)?.parent.is_none();
        let prefix = if top {
            String::new()
        } else {
            self.path.clone()
        };
        if let Some(id) = self.externs.get(&(prefix.clone(), decl)) {
            return Ok(*id);
        }
        let Some(info) = self.ck.instantiations.get(&decl).cloned() else {
            return internal(span, "instance without constructor call");
        };
        let name = self.decl(decl)?.name.clone();
        let full = names::cp_name(&prefix, anns, &name);
        let ext = self.make_extern(full, anns, &info, args, span)?;
        if ext.type_name == "Digest" && self.p.arch == koi_ir::Architecture::Psa {
            self.psa_digest(&ext, &info, span)?;
        }
        let id = self.p.externs.push(ext);
        self.externs.insert((prefix, decl), id);
        Ok(id)
    }

    /// An extern object from its constructor call; `args` are the constructor call's arguments
    /// when it is an expression (`implementation = action_profile(32)`).
    pub fn make_extern(
        &mut self,
        name: String,
        anns: &[ast::Annotation],
        info: &CallInfo,
        args: &[ast::Argument],
        span: Span,
    ) -> R<Extern> {
        let CallTarget::Constructor { ty, .. } = info.target else {
            return internal(span, "not a constructor");
        };
        let ty = self.subst_ty(ty);
        let (type_name, targs) = match self.types.get(ty).clone() {
            Ty::Extern(n) => (n.name, n.args),
            _ => return unsupported(span, "instances of this type"),
        };
        let mut type_args = Vec::new();
        for t in &targs {
            type_args.push(self.p4type(*t, span)?);
        }
        let mut ctor_args = Vec::new();
        for (i, p) in info.params.iter().enumerate() {
            let v = self.ctor_arg_value(info, args, i);
            ctor_args.push(self.const_arg(v.as_ref(), p.ty));
        }
        let mut kind = self.extern_kind(&type_name, &targs, &ctor_args, span);
        // A selector's custom CRC is a calculation of its own.
        if let ExternKind::ActionSelector { algo, .. } = &mut kind {
            match *algo {
                HashAlgo::Crc16Custom(_) => {
                    *algo = HashAlgo::Crc16Custom(self.calculation(16, &name.to_string()))
                }
                HashAlgo::Crc32Custom(_) => {
                    *algo = HashAlgo::Crc32Custom(self.calculation(32, &name.to_string()))
                }
                _ => {}
            }
        }
        Ok(Extern {
            preamble: names::preamble(name, anns),
            type_name,
            type_args,
            ctor_args,
            kind,
        })
    }

    /// The value of constructor argument `i`: from the call's arguments, else from the
    /// instance declaration's arguments recorded by sema.
    fn ctor_arg_value(&self, info: &CallInfo, args: &[ast::Argument], i: usize) -> Option<Value> {
        let a = Self::arg(info, args, i)?;
        self.const_value(a).cloned()
    }

    fn const_arg(&mut self, v: Option<&Value>, ty: TypeId) -> ConstArg {
        match v {
            Some(Value::Bool(b)) => ConstArg::Bool(*b),
            Some(Value::Str(s)) => ConstArg::Str(s.clone()),
            Some(Value::Enum { repr: Some(r), .. })
                if self
                    .scalar(ty)
                    .is_some_and(|s| matches!(s.ty, koi_ir::Ty::Bits(_))) =>
            {
                let w = self.scalar(ty).map_or(32, |s| s.width());
                ConstArg::Bits(crate::consts::int_bits(r, w))
            }
            Some(Value::Enum { ty: et, member, .. }) => ConstArg::Enum {
                ty: match self.types.get(*et) {
                    Ty::Enum(e) => e.name.clone(),
                    _ => String::new(),
                },
                member: member.clone(),
            },
            Some(Value::Int(i)) => {
                let w = self.scalar(ty).map_or(32, |s| s.width());
                ConstArg::Bits(crate::consts::int_bits(i, w))
            }
            _ => ConstArg::Str(String::new()),
        }
    }

    fn extern_kind(
        &self,
        type_name: &str,
        targs: &[TypeId],
        args: &[ConstArg],
        span: Span,
    ) -> ExternKind {
        let _ = span;
        let num = |i: usize| match args.get(i) {
            Some(ConstArg::Bits(b)) => b.to_u64().unwrap_or(0),
            _ => 0,
        };
        let member = |i: usize| match args.get(i) {
            Some(ConstArg::Enum { member, .. }) => member.as_str(),
            _ => "",
        };
        let width = |i: usize| {
            targs
                .get(i)
                .and_then(|t| self.scalar(*t))
                .map_or(32, |s| s.width())
        };
        let counter_unit = |m: &str| match m.to_ascii_lowercase().as_str() {
            "bytes" => CounterUnit::Bytes,
            "packets_and_bytes" => CounterUnit::PacketsAndBytes,
            _ => CounterUnit::Packets,
        };
        let meter_unit = |m: &str| match m.to_ascii_lowercase().as_str() {
            "bytes" => MeterUnit::Bytes,
            _ => MeterUnit::Packets,
        };
        match type_name {
            "counter" => ExternKind::Counter {
                size: num(0),
                unit: counter_unit(member(1)),
                index_width: if targs.is_empty() { 32 } else { width(0) },
            },
            "direct_counter" => ExternKind::DirectCounter {
                unit: counter_unit(member(0)),
            },
            "meter" => ExternKind::Meter {
                size: num(0),
                unit: meter_unit(member(1)),
                index_width: if targs.is_empty() { 32 } else { width(0) },
            },
            "direct_meter" => ExternKind::DirectMeter {
                unit: meter_unit(member(0)),
            },
            "register" | "Register" => {
                // A struct cell is kept packed: its fields' bits in order, first field highest
                // (see `Lowerer::extern_method`).
                let elem = targs.first().and_then(|t| match self.scalar(*t) {
                    Some(s) => Some(s.ty),
                    None => self.packed_width(*t, span).map(koi_ir::Ty::Bits),
                });
                match elem {
                    Some(elem) => ExternKind::Register {
                        size: num(0),
                        elem,
                        index_width: if targs.len() > 1 { width(1) } else { 32 },
                    },
                    None => ExternKind::Other,
                }
            }
            "action_profile" => ExternKind::ActionProfile { size: num(0) },
            "action_selector" => ExternKind::ActionSelector {
                algo: algo_of(member(0)),
                size: num(1),
                output_width: num(2) as u32,
            },
            "Checksum16" => ExternKind::Checksum16,
            // PSA (psa.p4): Counter<W, S>, Meter<S>, the direct ones, action profiles.
            "Counter" => ExternKind::Counter {
                size: num(0),
                unit: counter_unit(member(1)),
                index_width: width(1),
            },
            "DirectCounter" => ExternKind::DirectCounter {
                unit: counter_unit(member(0)),
            },
            "Meter" => ExternKind::Meter {
                size: num(0),
                unit: meter_unit(member(1)),
                index_width: width(0),
            },
            "DirectMeter" => ExternKind::DirectMeter {
                unit: meter_unit(member(0)),
            },
            "ActionProfile" => ExternKind::ActionProfile { size: num(0) },
            "ActionSelector" => ExternKind::ActionSelector {
                algo: algo_of(&member(0).to_ascii_lowercase()),
                size: num(1),
                output_width: num(2) as u32,
            },
            "Hash" => ExternKind::Hash {
                algo: member(0).to_string(),
            },
            "Checksum" => ExternKind::Checksum {
                algo: member(0).to_string(),
            },
            "InternetChecksum" => ExternKind::InternetChecksum,
            "Random" => ExternKind::Random {
                min: num(0),
                max: num(1),
            },
            // ebpf_model.p4: 32-bit packet counters `increment`ed or `add`ed to.
            "CounterArray" => ExternKind::Counter {
                size: num(0),
                unit: CounterUnit::Packets,
                index_width: 32,
            },
            _ => ExternKind::Other,
        }
    }

    /// A type argument's part of a specialised type's name (p4c's): `bit<32>` is `bit32`.
    fn type_arg_name(&self, t: TypeId) -> String {
        match self.types.get(t) {
            Ty::Bool => "bool".into(),
            Ty::Bit(w) => format!("bit{w}"),
            Ty::Int(w) => format!("int{w}"),
            Ty::Varbit(w) => format!("varbit{w}"),
            Ty::Agg(a) => a.name.clone(),
            Ty::Enum(e) => e.name.clone(),
            Ty::NewType { name, .. } => name.clone(),
            _ => self
                .types
                .display(t)
                .replace(|c: char| !c.is_ascii_alphanumeric(), ""),
        }
    }

    /// The control-plane view of a type, registering named types in `p.types`.
    pub fn p4type(&mut self, ty: TypeId, span: Span) -> R<P4Type> {
        self.p4type_at(ty, span, 0)
    }

    fn p4type_at(&mut self, ty: TypeId, span: Span, d: u32) -> R<P4Type> {
        if d > 32 {
            return unsupported(span, "types nested this deeply");
        }
        let t = self.types.get(ty).clone();
        Ok(match t {
            Ty::Bool => P4Type::Bool,
            Ty::Bit(w) => P4Type::Bit(w),
            Ty::Int(w) => P4Type::Int(w),
            Ty::Varbit(w) => P4Type::Varbit(w),
            Ty::ErrorType => P4Type::Error,
            Ty::Agg(mut a) => {
                // A specialisation of a generic struct is a type of its own, named as p4c
                // names it: `s_t<bit<32>>` is `s_t_bit32` (unless `@name` names it).
                let named = self
                    .idx
                    .decls
                    .get(&a.decl)
                    .is_some_and(|d| names::name_annotation(&d.annotations).is_some());
                if !a.args.is_empty() && !named {
                    let args: Vec<String> = a.args.iter().map(|t| self.type_arg_name(*t)).collect();
                    a.name = format!("{}_{}", a.name, args.join("_"));
                }
                if self.p.types.get(&a.name).is_none() {
                    let mut members = Vec::new();
                    for f in &a.fields {
                        let ft = self.p4type_at(f.ty, span, d + 1)?;
                        members.push(Member {
                            name: f.name.clone(),
                            ty: ft,
                        });
                    }
                    let annotations = self.decl_annotations(a.decl);
                    let name = a.name.clone();
                    self.p.types.decls.push(match a.kind {
                        AggKind::Struct => TypeDecl::Struct {
                            name,
                            members,
                            annotations,
                        },
                        AggKind::Header => TypeDecl::Header {
                            name,
                            members,
                            annotations,
                        },
                        AggKind::HeaderUnion => TypeDecl::HeaderUnion {
                            name,
                            members,
                            annotations,
                        },
                    });
                }
                match a.kind {
                    AggKind::Struct => P4Type::Struct(a.name),
                    AggKind::Header => P4Type::Header(a.name),
                    AggKind::HeaderUnion => P4Type::HeaderUnion(a.name),
                }
            }
            Ty::Enum(e) => self.enum_p4type(&e, span)?,
            Ty::NewType { name, base, decl } => {
                if self.p.types.get(&name).is_none() {
                    let bt = self.p4type_at(base, span, d + 1)?;
                    let translation = self.translation(decl);
                    let annotations = self.decl_annotations(decl);
                    self.p.types.decls.push(TypeDecl::NewType {
                        name: name.clone(),
                        ty: bt,
                        translation,
                        annotations,
                    });
                }
                P4Type::NewType(name)
            }
            Ty::Stack { elem, size } => P4Type::Stack {
                elem: Box::new(self.p4type_at(elem, span, d + 1)?),
                size,
            },
            Ty::Tuple(ts) => {
                let mut out = Vec::new();
                for t in ts {
                    out.push(self.p4type_at(t, span, d + 1)?);
                }
                P4Type::Tuple(out)
            }
            _ => return unsupported(span, format!("the type {}", self.types.display(ty))),
        })
    }

    fn enum_p4type(&mut self, e: &koi_sema::types::EnumTy, span: Span) -> R<P4Type> {
        let Some(repr) = e.repr else {
            if self.p.types.get(&e.name).is_none() {
                self.p.types.decls.push(TypeDecl::Enum {
                    name: e.name.clone(),
                    members: e.members.clone(),
                });
            }
            return Ok(P4Type::Enum(e.name.clone()));
        };
        if self.p.types.get(&e.name).is_none() {
            let w = self.scalar_or(repr, span)?.width();
            let vals = self.enum_values(e.decl);
            let members = e
                .members
                .iter()
                .map(|m| {
                    let v = vals.iter().find(|(n, _)| n == m).map(|(_, v)| v.clone());
                    let b = v.map_or(koi_ir::Bits::zero(w), |v| crate::consts::int_bits(&v, w));
                    (m.clone(), b)
                })
                .collect();
            self.p.types.decls.push(TypeDecl::SerEnum {
                name: e.name.clone(),
                members,
            });
        }
        Ok(P4Type::SerEnum(e.name.clone()))
    }

    /// The member values of a serializable enum declaration.
    fn enum_values(&self, decl: DeclId) -> Vec<(String, num_bigint::BigInt)> {
        let Some(ast::DeclKind::Enum { members, .. }) = self.idx.decls.get(&decl).map(|d| &d.kind)
        else {
            return Vec::new();
        };
        members
            .iter()
            .filter_map(|m| {
                let v = m.value.as_ref().and_then(|e| self.ck.consts.get(&e.id))?;
                Some((m.name.name.clone(), v.as_int()?.clone()))
            })
            .collect()
    }

    fn translation(&self, decl: DeclId) -> Option<Translation> {
        let d = self.idx.decls.get(&decl)?;
        let a = d
            .annotations
            .iter()
            .find(|a| a.name.name == "p4runtime_translation")?;
        let ast::AnnotationBody::Unstructured { tokens, exprs } = &a.body else {
            return None;
        };
        let Some(es) = exprs else {
            return translation_tokens(tokens);
        };
        let uri = match es.first().map(|e| &e.kind) {
            Some(ast::ExprKind::Str(s)) => s.clone(),
            _ => return None,
        };
        let sdn_bitwidth = match es.get(1).map(|e| &e.kind) {
            Some(ast::ExprKind::Int(i)) => u32::try_from(&i.value).ok(),
            Some(ast::ExprKind::TypeRef(t)) => match &t.kind {
                ast::TypeKind::Bit(Some(w)) => match &w.kind {
                    ast::ExprKind::Int(i) => u32::try_from(&i.value).ok(),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        Some(Translation { uri, sdn_bitwidth })
    }

    /// The IR annotations of a declaration.
    pub fn decl_annotations(&self, decl: DeclId) -> Vec<koi_ir::Annotation> {
        self.idx
            .decls
            .get(&decl)
            .map(|d| names::annotations(&d.annotations))
            .unwrap_or_default()
    }

    /// The named type of a value for P4Info's `type_name` (user `type`s, serializable enums).
    pub fn type_name(&mut self, ty: TypeId, span: Span) -> R<Option<String>> {
        Ok(match self.types.get(ty).clone() {
            Ty::NewType { name, .. } => {
                self.p4type(ty, span)?;
                Some(name)
            }
            Ty::Enum(e) => {
                self.p4type(ty, span)?;
                Some(e.name)
            }
            _ => None,
        })
    }

    /// `digest<T>(receiver, data)`.
    pub fn digest_call(
        &mut self,
        e: &ast::Expr,
        info: &CallInfo,
        args: &[ast::Argument],
    ) -> R<koi_ir::Builtin> {
        let Some(t) = info.type_args.first().copied() else {
            return internal(e.span, "digest without a type");
        };
        let t = self.subst_ty(t);
        let receiver = match Self::arg(info, args, 0) {
            Some(a) => self.rvalue(a)?,
            None => return internal(e.span, "digest without receiver"),
        };
        let Some(a) = Self::arg(info, args, 1) else {
            return internal(e.span, "digest without data");
        };
        let l = self.value(a)?;
        let mut data = Vec::new();
        self.flatten_bits(&l, a.span, &mut data)?;
        let digest = self.digest_of(t, &l, e.span)?;
        Ok(koi_ir::Builtin::Digest {
            digest,
            receiver,
            data,
        })
    }

    fn digest_of(&mut self, t: TypeId, l: &Loc, span: Span) -> R<koi_ir::DigestId> {
        let ty = self.p4type(t, span)?;
        let name = match &ty {
            P4Type::Struct(n) | P4Type::Header(n) => n.clone(),
            _ => format!("digest_{}", self.digests.len()),
        };
        if let Some(d) = self.digests.get(&name) {
            return Ok(*d);
        }
        let mut fields = Vec::new();
        self.digest_fields(l, "", &mut fields);
        let id = self.p.digests.push(Digest {
            preamble: Preamble::new(name.clone()),
            ty,
            fields,
        });
        self.digests.insert(name, id);
        Ok(id)
    }

    fn digest_fields(&self, l: &Loc, prefix: &str, out: &mut Vec<(String, u32)>) {
        match l {
            Loc::Scalar(..) | Loc::Value(..) => {
                let w = l.sty().map_or(0, |s| s.width());
                out.push((prefix.to_string(), w));
            }
            Loc::Struct(fs, _) => {
                for (n, f) in fs {
                    let p = if prefix.is_empty() {
                        n.clone()
                    } else {
                        format!("{prefix}.{n}")
                    };
                    self.digest_fields(f, &p, out);
                }
            }
            Loc::Header(_, ty) => {
                let names: Vec<String> = self
                    .types
                    .agg(*ty)
                    .map(|a| a.fields.iter().map(|f| f.name.clone()).collect())
                    .unwrap_or_default();
                for (i, n) in names.iter().enumerate() {
                    if let Ok(f) = self.field(l, i, Span::DUMMY) {
                        self.digest_fields(&f, &format!("{prefix}.{n}"), out);
                    }
                }
            }
            _ => {}
        }
    }

    /// The digest object of a PSA `Digest<T>` instance, named by the instance.
    fn psa_digest(&mut self, ext: &Extern, info: &CallInfo, span: Span) -> R<()> {
        let CallTarget::Constructor { ty, .. } = info.target else {
            return Ok(());
        };
        let ty = self.subst_ty(ty);
        let Some(t) = (match self.types.get(ty) {
            Ty::Extern(n) => n.args.first().copied(),
            _ => None,
        }) else {
            return Ok(());
        };
        let p4 = self.p4type(t, span)?;
        let mut fields = Vec::new();
        self.type_fields(t, "", &mut fields, 0);
        let name = ext.preamble.name.clone();
        let id = self.p.digests.push(Digest {
            preamble: Preamble::new(name.clone()),
            ty: p4,
            fields,
        });
        self.digests.insert(name, id);
        Ok(())
    }

    /// The scalar fields of a type, flattened, with their widths.
    fn type_fields(&self, ty: TypeId, prefix: &str, out: &mut Vec<(String, u32)>, d: u32) {
        if let Some(s) = self.scalar(ty) {
            out.push((prefix.to_string(), s.width()));
            return;
        }
        let Some(a) = self.types.agg(ty) else { return };
        for f in &a.fields {
            let p = if prefix.is_empty() {
                f.name.clone()
            } else {
                format!("{prefix}.{}", f.name)
            };
            if d < 16 {
                self.type_fields(f.ty, &p, out, d + 1);
            }
        }
    }

    /// The field list of user metadata fields annotated `@field_list(index)`.
    pub fn field_list(&mut self, index: u32) -> R<FieldListId> {
        if let Some(f) = self.field_lists.get(&index) {
            return Ok(*f);
        }
        let mut slots = Vec::new();
        if let Some((l, t)) = self.user_meta.clone() {
            self.field_list_slots(&l, t, index, false, &mut slots);
        }
        let id = self.p.field_lists.push(FieldList { index, slots });
        self.field_lists.insert(index, id);
        Ok(id)
    }

    fn field_list_slots(
        &self,
        l: &Loc,
        ty: TypeId,
        index: u32,
        all: bool,
        out: &mut Vec<koi_ir::SlotId>,
    ) {
        match l {
            Loc::Scalar(koi_ir::Place::Slot(s), _) if all => out.push(*s),
            Loc::Struct(fs, _) => {
                let Some(a) = self.types.agg(ty) else { return };
                let decl_fields = self.idx.decls.get(&a.decl).and_then(|d| match &d.kind {
                    ast::DeclKind::Struct { fields, .. } => Some(fields),
                    _ => None,
                });
                for (i, ((_, f), af)) in fs.iter().zip(&a.fields).enumerate() {
                    let tagged = decl_fields.and_then(|ds| ds.get(i)).is_some_and(|df| {
                        df.annotations.iter().any(|an| {
                            an.name.name == "field_list"
                                && names::int_args(an).contains(&u64::from(index))
                        })
                    });
                    self.field_list_slots(f, af.ty, index, all || tagged, out);
                }
            }
            _ => {}
        }
    }

    /// A field list made of the slots of a data argument (`clone3`, `resubmit(data)`).
    pub fn data_field_list(&mut self, a: Option<&ast::Expr>, _span: Span) -> R<FieldListId> {
        let mut slots = Vec::new();
        if let Some(a) = a {
            let l = self.value(a)?;
            let mut places = Vec::new();
            self.places(&l, &mut places);
            slots.extend(places.iter().filter_map(|p| p.slot()));
        }
        let index = u32::MAX - self.p.field_lists.len() as u32;
        Ok(self.p.field_lists.push(FieldList { index, slots }))
    }

    /// Controller packet metadata: header types annotated `@controller_header(...)`.
    pub fn controller_headers(&mut self) -> R<()> {
        let decls: Vec<DeclId> = self.ck.top_level.clone();
        for d in decls {
            let Some(ast) = self.idx.decls.get(&d).copied() else {
                continue;
            };
            let ast::DeclKind::Header { name, fields, .. } = &ast.kind else {
                continue;
            };
            let Some(a) = ast
                .annotations
                .iter()
                .find(|a| a.name.name == "controller_header")
            else {
                continue;
            };
            let cp = names::string_arg(a).unwrap_or_default();
            let ty = self.decl(d)?.ty;
            let mut mfields = Vec::new();
            let field_tys: Vec<TypeId> = self
                .types
                .agg(ty)
                .map(|a| a.fields.iter().map(|f| f.ty).collect())
                .unwrap_or_default();
            for (f, ft) in fields.iter().zip(field_tys) {
                let width = self.scalar(ft).map_or(0, |s| s.width());
                let type_name = self.type_name(ft, f.span)?;
                mfields.push(MetadataField {
                    name: f.name.name.clone(),
                    width,
                    type_name,
                    id: names::int_annotation(&f.annotations, "id").map(|v| v as u32),
                    annotations: names::annotations(&f.annotations),
                });
            }
            self.p.controller_headers.push(ControllerHeader {
                preamble: names::preamble(cp, &ast.annotations),
                type_name: name.name.clone(),
                fields: mfields,
            });
        }
        Ok(())
    }
}

/// The algorithm named `m`; a custom CRC's calculation is given by the caller.
fn algo_of(m: &str) -> HashAlgo {
    match m {
        "crc32_custom" => HashAlgo::Crc32Custom(u32::MAX),
        "crc16_custom" => HashAlgo::Crc16Custom(u32::MAX),
        other => HashAlgo::fixed(other).unwrap_or(HashAlgo::Crc32),
    }
}

/// `@p4runtime_translation(uri, T)` whose body is not an expression list, from its tokens:
/// `T` is `string` (no SDN width) or `bit<W>` (P4Runtime spec §8.3.1 allows both, besides a
/// width as an integer).
fn translation_tokens(tokens: &[ast::AnnotationToken]) -> Option<Translation> {
    let text: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
    let (uri, rest) = match text.as_slice() {
        [uri, ",", rest @ ..] => (uri, rest),
        _ => return None,
    };
    let uri = uri.strip_prefix('"')?.strip_suffix('"')?.to_string();
    let sdn_bitwidth = match rest {
        ["string"] => None,
        ["bit", "<", w, ">"] => Some(w.parse().ok()?),
        _ => return None,
    };
    Some(Translation { uri, sdn_bitwidth })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ts: &[&str]) -> Vec<ast::AnnotationToken> {
        ts.iter()
            .map(|t| ast::AnnotationToken {
                text: t.to_string(),
                span: Span::DUMMY,
            })
            .collect()
    }

    #[test]
    fn translations_name_their_sdn_type_by_a_type() {
        let bits = translation_tokens(&tokens(&["\"p4.org/p\"", ",", "bit", "<", "32", ">"]));
        assert_eq!(
            bits,
            Some(Translation {
                uri: "p4.org/p".into(),
                sdn_bitwidth: Some(32)
            })
        );
        let string = translation_tokens(&tokens(&["\"p4.org/s\"", ",", "string"]));
        assert_eq!(
            string,
            Some(Translation {
                uri: "p4.org/s".into(),
                sdn_bitwidth: None
            })
        );
        for bad in [
            &["\"p4.org/p\"", ",", "bit", "<", "x", ">"][..],
            &["p4.org", ",", "string"],
            &["\"p4.org/p\"", "string"],
            &["\"p4.org/p\"", ",", "int", "<", "8", ">"],
        ] {
            assert_eq!(translation_tokens(&tokens(bad)), None, "{bad:?}");
        }
    }
}
