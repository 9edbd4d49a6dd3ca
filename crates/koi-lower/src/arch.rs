//! The architecture binding: which package `main` instantiates (v1model's `V1Switch`, ubpf's
//! `ubpf`, PSA's `PSA_Switch` ([`crate::psa`]), eBPF's `ebpfFilter`, XDP's `xdp`), the block
//! instance passed for each role, one shared PHV instance per architecture parameter
//! (headers, user metadata, standard metadata), and the lowering of each role's block.

use crate::ctx::{Bind, BlockInst, Lowerer, R, internal, unsupported};
use crate::loc::{Alloc, Loc};
use crate::names;
use crate::psa::psa_params;
use koi_ir::{Architecture, Place, Role};
use koi_sema::types::Ty;
use koi_sema::{CallTarget, DeclId, Resolution, TypeId};
use koi_syntax::Span;
use koi_syntax::ast::{self, ExprKind};

/// What an architecture parameter of a block is: a key shared by the blocks that receive the
/// same object (`H` is the headers, `pkt` the packet, `std` v1model's standard metadata, ...).
pub(crate) type ArchParam = &'static str;

/// A shared storage: its parameter kind, type and location.
pub(crate) type Shared = (ArchParam, TypeId, Loc);

const PACKET: ArchParam = "pkt";
const STD: ArchParam = "std";
const META: ArchParam = "M";

/// The parameters of the block in `role`, in order.
fn role_params(arch: Architecture, role: Role) -> &'static [ArchParam] {
    match (arch, role) {
        (Architecture::Psa, r) => psa_params(r),
        // ebpfFilter: parse(packet, headers), filter(headers, accept); xdp: xdp_parse(packet,
        // headers), xdp_switch(headers, imd, omd), xdp_deparse(headers, packet).
        (Architecture::Ebpf | Architecture::Xdp, Role::Parser) => &["pkt", "H"],
        (Architecture::Ebpf, Role::Pipe) => &["H", "accept"],
        (Architecture::Xdp, Role::Pipe) => &["H", "imd", "omd"],
        (Architecture::Xdp, Role::Deparser) => &["H", "pkt"],
        (_, Role::Parser) => &["pkt", "H", "M", "std"],
        (Architecture::V1Model, Role::VerifyChecksum | Role::ComputeChecksum) => &["H", "M"],
        (_, Role::Ingress | Role::Egress | Role::Pipe) => &["H", "M", "std"],
        (_, Role::Deparser) => &["pkt", "H"],
        _ => &[],
    }
}

/// The architecture of a package type name.
pub fn arch_of(package: &str) -> Option<Architecture> {
    match package {
        "V1Switch" => Some(Architecture::V1Model),
        "ubpf" => Some(Architecture::Ubpf),
        "PSA_Switch" => Some(Architecture::Psa),
        "ebpfFilter" => Some(Architecture::Ebpf),
        "xdp" => Some(Architecture::Xdp),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// Lowers the whole program from `main`.
    pub fn lower_main(&mut self, main_decl: &ast::Decl) -> R<()> {
        let ast::DeclKind::Instantiation { args, .. } = &main_decl.kind else {
            return internal(main_decl.span, "main is not an instantiation");
        };
        for e in self.ck.errors.clone() {
            self.p.add_error(&e);
        }
        self.p.annotations = names::annotations(&main_decl.annotations);
        self.bind_top_level()?;
        let insts = if self.p.arch == Architecture::Psa {
            self.psa_blocks(main_decl, args)?
        } else {
            self.package_blocks(main_decl, args)?
        };
        let shared = self.shared_storage(&insts)?;
        if self.p.arch == Architecture::Ebpf {
            // The port the packet came in on, where an eBPF filter sends what it accepts: no
            // block sees it, the cached datapath matches it (`input_port`, as uBPF's).
            let s = self.new_slot(
                "input_port",
                koi_ir::Ty::Bits(32),
                false,
                koi_ir::SlotKind::Metadata,
            );
            self.p.intrinsics.push(("input_port".into(), s));
        }
        for (role, inst) in &insts {
            let binds = self.role_binds(*role, inst, &shared)?;
            if role.is_parser() {
                self.lower_parser(inst, binds, *role)?;
            } else {
                self.lower_control(inst, binds, *role)?;
            }
        }
        self.controller_headers()
    }

    /// The block of each role: the package's arguments in order.
    pub(crate) fn package_blocks(
        &mut self,
        main_decl: &ast::Decl,
        args: &[ast::Argument],
    ) -> R<Vec<(Role, BlockInst)>> {
        let roles = self.p.arch.roles();
        if args.len() != roles.len() {
            return unsupported(main_decl.span, "this package signature");
        }
        let info = self.main_info();
        let mut insts = Vec::new();
        for (i, role) in roles.iter().enumerate() {
            let a = match &info {
                Some(info) => Self::arg(info, args, i),
                None => args.get(i).map(|a| &a.value),
            };
            let Some(a) = a else {
                return unsupported(main_decl.span, "this package signature");
            };
            insts.push((*role, self.package_arg(a)?));
        }
        Ok(insts)
    }

    pub(crate) fn main_info(&self) -> Option<koi_sema::CallInfo> {
        let main_id = self.ck.main.as_ref().map(|m| m.decl);
        main_id
            .and_then(|m| self.ck.instantiations.get(&m))
            .cloned()
    }

    /// Binds the top-level instances (externs, blocks) other than `main`.
    fn bind_top_level(&mut self) -> R<()> {
        let main = self.ck.main.as_ref().map(|m| m.decl);
        for d in self.ck.top_level.clone() {
            if Some(d) == main || self.removed.instances.contains(&d) {
                continue;
            }
            let Some(ad) = self.idx.decls.get(&d).copied() else {
                continue;
            };
            if let ast::DeclKind::Instantiation { .. } = ad.kind {
                let b = self.instance_binding(d, ad)?;
                self.bind(d, b);
            }
        }
        Ok(())
    }

    /// The block instance of a package argument: `MyIngress()` (named after its type) or the
    /// name of a top-level instance.
    pub(crate) fn package_arg(&mut self, e: &ast::Expr) -> R<BlockInst> {
        if let ExprKind::Call { args, .. } = &e.kind
            && let Some(info) = self.ck.calls.get(&e.id).cloned()
            && let CallTarget::Constructor { decl, .. } = info.target
        {
            let name = self.decl(decl)?.name.clone();
            return self.block_inst(&info, args, name, e.span);
        }
        if let Some(Resolution::Decl(d)) = self.ck.resolutions.get(&e.id)
            && let Some(Bind::Block(inst)) = self.lookup(*d)
        {
            return Ok((**inst).clone());
        }
        unsupported(e.span, "this package argument")
    }

    /// The apply parameters of a block instance: declaration and (substituted) type.
    fn block_params(&mut self, inst: &BlockInst) -> R<Vec<(DeclId, TypeId)>> {
        let params = self.decl(inst.decl)?.params.clone();
        let saved = std::mem::replace(&mut self.subst, inst.subst.clone());
        let mut out = Vec::new();
        for p in params {
            let ty = self.decl(p)?.ty;
            out.push((p, self.subst_ty(ty)));
        }
        self.subst = saved;
        Ok(out)
    }

    /// One storage per architecture parameter (and type: a block whose parameter has another
    /// type than the architecture's usual one gets its own), named after the first block's
    /// parameter.
    fn shared_storage(&mut self, insts: &[(Role, BlockInst)]) -> R<Vec<Shared>> {
        let mut shared: Vec<Shared> = Vec::new();
        for (role, inst) in insts {
            let params = self.block_params(inst)?;
            let kinds = role_params(self.p.arch, *role);
            for (i, (p, ty)) in params.into_iter().enumerate() {
                let kind = kinds.get(i).copied().unwrap_or("?");
                let known = shared.iter().any(|(k, t, _)| *k == kind && *t == ty);
                if kind == PACKET || known || matches!(self.types.get(ty), Ty::Extern(_)) {
                    continue;
                }
                let name = self.decl(p)?.name.clone();
                let loc = self.alloc(&name, ty, Alloc::Metadata, Span::DUMMY)?;
                if kind == STD {
                    self.intrinsics(&loc);
                } else if self.p.arch != Architecture::V1Model && self.p.arch != Architecture::Ubpf
                {
                    self.arch_intrinsics(kind, &loc);
                }
                if kind == META {
                    self.user_meta = Some((loc.clone(), ty));
                }
                shared.push((kind, ty, loc));
            }
        }
        Ok(shared)
    }

    /// Records the standard metadata fields as intrinsics.
    fn intrinsics(&mut self, loc: &Loc) {
        if let Loc::Struct(fs, _) = loc {
            for (n, f) in fs {
                if let Loc::Scalar(Place::Slot(s), _) = f {
                    self.p.intrinsics.push((n.clone(), *s));
                }
            }
        }
    }

    fn role_binds(&mut self, role: Role, inst: &BlockInst, shared: &[Shared]) -> R<Vec<Bind>> {
        let params = self.block_params(inst)?;
        let kinds = role_params(self.p.arch, role);
        let mut out = Vec::new();
        for (i, (_, ty)) in params.iter().enumerate() {
            if matches!(self.types.get(*ty), Ty::Extern(_)) {
                out.push(Bind::Packet);
                continue;
            }
            let kind = kinds.get(i).copied().unwrap_or("?");
            match shared.iter().find(|(k, t, _)| *k == kind && t == ty) {
                Some((_, _, l)) => out.push(Bind::Loc(l.clone())),
                None => return unsupported(Span::DUMMY, "this block signature"),
            }
        }
        Ok(out)
    }
}
