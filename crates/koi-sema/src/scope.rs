//! Lexical scopes for name resolution.
//!
//! P4 has one namespace per scope for types and values alike. Scopes nest: the top level, then
//! (for a block) its type parameters, its parameters and constructor parameters, its locals,
//! then statement blocks. Names are visible only after their declaration (p4c's rule), except
//! parser states, which the parser checker declares before checking any state. Functions, extern
//! functions and methods may be overloaded; everything else must be unique in its scope.

use crate::decls::DeclId;
use std::collections::HashMap;

/// What a scope belongs to (for diagnostics and for rules such as "shadows a parameter").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    TopLevel,
    TypeParams,
    Params,
    /// Locals of a parser or control, or the body of a function or action.
    Body,
    States,
    Block,
}

#[derive(Debug)]
struct Scope {
    kind: ScopeKind,
    names: HashMap<String, Vec<DeclId>>,
}

/// A stack of scopes, innermost last.
#[derive(Debug)]
pub struct Scopes {
    stack: Vec<Scope>,
}

impl Default for Scopes {
    fn default() -> Self {
        Self::new()
    }
}

impl Scopes {
    pub fn new() -> Scopes {
        Scopes {
            stack: vec![Scope {
                kind: ScopeKind::TopLevel,
                names: HashMap::new(),
            }],
        }
    }

    pub fn push(&mut self, kind: ScopeKind) {
        self.stack.push(Scope {
            kind,
            names: HashMap::new(),
        });
    }

    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Pops scopes until `depth` remain.
    pub fn truncate(&mut self, depth: usize) {
        self.stack.truncate(depth.max(1));
    }

    /// Adds `id` under `name` to the innermost scope.
    pub fn insert(&mut self, name: &str, id: DeclId) {
        if let Some(s) = self.stack.last_mut() {
            s.names.entry(name.to_string()).or_default().push(id);
        }
    }

    /// The declarations of `name` in the innermost scope that has it.
    pub fn lookup(&self, name: &str) -> &[DeclId] {
        self.stack
            .iter()
            .rev()
            .find_map(|s| s.names.get(name))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Like [`Scopes::lookup`], also telling the kind of the scope it was found in.
    pub fn lookup_with_kind(&self, name: &str) -> Option<(ScopeKind, &[DeclId])> {
        self.stack
            .iter()
            .rev()
            .find_map(|s| s.names.get(name).map(|v| (s.kind, v.as_slice())))
    }

    /// The declarations of `name` at top level (for `.name`).
    pub fn lookup_global(&self, name: &str) -> &[DeclId] {
        self.stack
            .first()
            .and_then(|s| s.names.get(name))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The declarations of `name` in the innermost scope only.
    pub fn lookup_innermost(&self, name: &str) -> &[DeclId] {
        self.stack
            .last()
            .and_then(|s| s.names.get(name))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_scopes_shadow_outer_ones() {
        let mut s = Scopes::new();
        s.insert("x", DeclId(0));
        s.push(ScopeKind::Block);
        assert_eq!(s.lookup("x"), &[DeclId(0)]);
        s.insert("x", DeclId(1));
        assert_eq!(s.lookup("x"), &[DeclId(1)]);
        assert_eq!(s.lookup_global("x"), &[DeclId(0)]);
        s.truncate(1);
        assert_eq!(s.lookup("x"), &[DeclId(0)]);
        s.truncate(0);
        assert_eq!(s.lookup("x"), &[DeclId(0)], "top level is never popped");
    }
}
