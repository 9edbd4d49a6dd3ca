//! Generics: substitution of type variables and type inference by unification.
//!
//! Generic declarations are checked once, with their type parameters as `Ty::Var`s. A use of a
//! generic declaration binds its type parameters, either explicitly (`f<bit<8>>(x)`,
//! `Register<bit<32>>(8)`) or by unifying parameter types with argument types; [`substitute`]
//! then gives the specialised types. Lowering uses [`substitute`] with the type arguments
//! recorded in [`crate::CallInfo::type_args`] to specialise generic bodies.

use crate::decls::DeclId;
use crate::types::{AggTy, BlockTy, Field, NominalTy, ParamTy, Ty, TypeId, TypeTable};
use std::collections::HashMap;

/// A binding of type parameters (by declaration) to types.
pub type Subst = HashMap<DeclId, TypeId>;

const MAX_SUBST_DEPTH: u32 = 64;

/// Replaces every type variable bound in `map` inside `ty`.
pub fn substitute(types: &mut TypeTable, ty: TypeId, map: &Subst) -> TypeId {
    if map.is_empty() {
        return ty;
    }
    subst_at(types, ty, map, 0)
}

fn subst_all(types: &mut TypeTable, ids: &[TypeId], map: &Subst, d: u32) -> Vec<TypeId> {
    ids.iter()
        .map(|t| subst_at(types, *t, map, d + 1))
        .collect()
}

fn subst_params(types: &mut TypeTable, ps: &[ParamTy], map: &Subst, d: u32) -> Vec<ParamTy> {
    ps.iter()
        .map(|p| ParamTy {
            name: p.name.clone(),
            dir: p.dir,
            ty: subst_at(types, p.ty, map, d + 1),
        })
        .collect()
}

fn subst_fields(types: &mut TypeTable, fs: &[Field], map: &Subst, d: u32) -> Vec<Field> {
    fs.iter()
        .map(|f| Field {
            name: f.name.clone(),
            ty: subst_at(types, f.ty, map, d + 1),
        })
        .collect()
}

fn subst_at(types: &mut TypeTable, ty: TypeId, map: &Subst, d: u32) -> TypeId {
    if d > MAX_SUBST_DEPTH {
        return ty;
    }
    let new = match types.get(ty).clone() {
        Ty::Var { decl, .. } => return map.get(&decl).copied().unwrap_or(ty),
        Ty::Agg(a) => Ty::Agg(AggTy {
            args: subst_all(types, &a.args, map, d),
            fields: subst_fields(types, &a.fields, map, d),
            ..a
        }),
        Ty::Stack { elem, size } => Ty::Stack {
            elem: subst_at(types, elem, map, d + 1),
            size,
        },
        Ty::Tuple(ts) => Ty::Tuple(subst_all(types, &ts, map, d)),
        Ty::List(t) => Ty::List(subst_at(types, t, map, d + 1)),
        Ty::ValueSet(t) => Ty::ValueSet(subst_at(types, t, map, d + 1)),
        Ty::Set(t) => Ty::Set(subst_at(types, t, map, d + 1)),
        Ty::TypeName(t) => Ty::TypeName(subst_at(types, t, map, d + 1)),
        Ty::StructLit(fs) => Ty::StructLit(subst_fields(types, &fs, map, d)),
        Ty::Extern(n) => Ty::Extern(NominalTy {
            args: subst_all(types, &n.args, map, d),
            ..n
        }),
        Ty::Package(n) => Ty::Package(NominalTy {
            args: subst_all(types, &n.args, map, d),
            ..n
        }),
        Ty::Parser(b) => Ty::Parser(subst_block(types, b, map, d)),
        Ty::Control(b) => Ty::Control(subst_block(types, b, map, d)),
        _ => return ty,
    };
    types.intern(new)
}

fn subst_block(types: &mut TypeTable, b: BlockTy, map: &Subst, d: u32) -> BlockTy {
    BlockTy {
        args: subst_all(types, &b.args, map, d),
        params: subst_params(types, &b.params, map, d),
        ..b
    }
}

/// Inference state for one use of a generic declaration.
#[derive(Clone, Debug, Default)]
pub struct Infer {
    /// The type parameters being inferred.
    pub vars: Vec<DeclId>,
    pub bound: Subst,
    /// Variables bound by explicit type arguments (never re-bound).
    pub explicit: Vec<DeclId>,
}

impl Infer {
    pub fn new(vars: Vec<DeclId>) -> Infer {
        Infer {
            vars,
            bound: Subst::new(),
            explicit: Vec::new(),
        }
    }

    fn is_var(&self, d: DeclId) -> bool {
        self.vars.contains(&d)
    }

    /// Unifies a parameter type with an argument type, binding inference variables. Returns
    /// false when they cannot be made equal. Implicit casts (`int` to `bit<W>`, a serializable
    /// enum to its underlying type, list expressions to structs) are accepted here and checked
    /// precisely when the argument is converted to the substituted parameter type.
    pub fn unify(&mut self, types: &mut TypeTable, param: TypeId, arg: TypeId) -> bool {
        self.unify_at(types, param, arg, 0)
    }

    fn unify_at(&mut self, types: &mut TypeTable, p: TypeId, a: TypeId, d: u32) -> bool {
        if p == a || d > MAX_SUBST_DEPTH {
            return true;
        }
        let (pt, at) = (types.get(p).clone(), types.get(a).clone());
        match (&pt, &at) {
            (Ty::Error, _) | (_, Ty::Error) | (Ty::DontCare, _) | (_, Ty::DontCare) => true,
            (Ty::Var { decl, .. }, _) if self.is_var(*decl) => self.bind_var(types, *decl, a, d),
            (_, Ty::Var { decl, .. }) if self.is_var(*decl) => self.bind_var(types, *decl, p, d),
            _ => self.unify_structure(types, &pt, &at, d),
        }
    }

    fn bind_var(&mut self, types: &mut TypeTable, v: DeclId, t: TypeId, d: u32) -> bool {
        if let Some(b) = self.bound.get(&v).copied() {
            if matches!(types.get(b), Ty::InfInt)
                && !matches!(types.get(t), Ty::InfInt)
                && !self.explicit.contains(&v)
            {
                // A later, more precise binding wins over `int` (an untyped literal).
                self.bound.insert(v, t);
                return true;
            }
            return self.unify_at(types, b, t, d + 1);
        }
        if matches!(types.get(t), Ty::Var { decl, .. } if *decl == v) {
            return true;
        }
        self.bound.insert(v, t);
        true
    }

    fn unify_list(&mut self, types: &mut TypeTable, ps: &[TypeId], as_: &[TypeId], d: u32) -> bool {
        ps.len() == as_.len()
            && ps
                .iter()
                .zip(as_)
                .all(|(p, a)| self.unify_at(types, *p, *a, d + 1))
    }

    fn unify_structure(&mut self, types: &mut TypeTable, pt: &Ty, at: &Ty, d: u32) -> bool {
        match (pt, at) {
            (Ty::Bit(_) | Ty::Int(_), Ty::InfInt) | (Ty::InfInt, Ty::Bit(_) | Ty::Int(_)) => true,
            // `int` to a new type: checked when the argument is converted.
            (Ty::NewType { .. }, Ty::InfInt) => true,
            (Ty::Agg(p), Ty::Agg(a)) => {
                p.decl == a.decl && self.unify_list(types, &p.args, &a.args, d)
            }
            (Ty::Agg(p), Ty::Tuple(ts)) => {
                let fs: Vec<TypeId> = p.fields.iter().map(|f| f.ty).collect();
                self.unify_list(types, &fs, ts, d)
            }
            (Ty::Agg(p), Ty::StructLit(fs)) => fs.iter().all(|f| match p.field(&f.name) {
                Some((_, pf)) => self.unify_at(types, pf.ty, f.ty, d + 1),
                None => false,
            }),
            (
                Ty::Stack { elem: pe, size: ps },
                Ty::Stack {
                    elem: ae,
                    size: as_,
                },
            ) => ps == as_ && self.unify_at(types, *pe, *ae, d + 1),
            (Ty::Stack { elem, .. }, Ty::Tuple(ts)) | (Ty::List(elem), Ty::Tuple(ts)) => {
                ts.iter().all(|t| self.unify_at(types, *elem, *t, d + 1))
            }
            (Ty::Tuple(ps), Ty::Tuple(as_)) => self.unify_list(types, ps, as_, d),
            (Ty::List(p), Ty::List(a)) | (Ty::ValueSet(p), Ty::ValueSet(a)) => {
                self.unify_at(types, *p, *a, d + 1)
            }
            (Ty::Extern(p), Ty::Extern(a)) | (Ty::Package(p), Ty::Package(a)) => {
                p.decl == a.decl && self.unify_list(types, &p.args, &a.args, d)
            }
            (Ty::Parser(p), Ty::Parser(a)) | (Ty::Control(p), Ty::Control(a)) => {
                self.unify_params(types, &p.params, &a.params, d)
            }
            (Ty::Enum(e), _) if e.repr.is_some() => false,
            (_, Ty::Enum(e)) => match e.repr {
                Some(r) => {
                    let p = types.intern(pt.clone());
                    self.unify_at(types, p, r, d + 1)
                }
                None => false,
            },
            _ => pt == at,
        }
    }

    fn unify_params(
        &mut self,
        types: &mut TypeTable,
        ps: &[ParamTy],
        as_: &[ParamTy],
        d: u32,
    ) -> bool {
        params_compatible_len(ps, as_)
            && ps
                .iter()
                .zip(as_)
                .all(|(p, a)| p.dir == a.dir && self.unify_at(types, p.ty, a.ty, d + 1))
    }
}

/// A parser or control value may omit trailing `in` parameters of the type it is used as
/// (p4c accepts them when the type gives them default values).
pub fn params_compatible_len(expected: &[ParamTy], found: &[ParamTy]) -> bool {
    use koi_syntax::ast::Direction;
    expected.len() == found.len()
        || (found.len() < expected.len()
            && expected[found.len()..]
                .iter()
                .all(|p| matches!(p.dir, Some(Direction::In) | None)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitute_replaces_bound_variables() {
        let mut t = TypeTable::new();
        let v = t.intern(Ty::Var {
            decl: DeclId(7),
            name: "T".into(),
        });
        let tup = t.intern(Ty::Tuple(vec![v, TypeId::BOOL]));
        let b8 = t.bit(8);
        let map: Subst = [(DeclId(7), b8)].into_iter().collect();
        let r = substitute(&mut t, tup, &map);
        assert_eq!(t.display(r), "tuple<bit<8>, bool>");
    }

    #[test]
    fn unify_binds_and_detects_conflicts() {
        let mut t = TypeTable::new();
        let v = t.intern(Ty::Var {
            decl: DeclId(1),
            name: "T".into(),
        });
        let b8 = t.bit(8);
        let mut inf = Infer::new(vec![DeclId(1)]);
        assert!(inf.unify(&mut t, v, b8));
        assert_eq!(inf.bound.get(&DeclId(1)), Some(&b8));
        assert!(!inf.unify(&mut t, v, TypeId::BOOL));
        assert!(inf.unify(&mut t, v, TypeId::INF_INT));
    }
}
