//! Which identifiers denote types at the current point of the program, as p4c's lexer tracks
//! them to tell `TYPE_IDENTIFIER` from `IDENTIFIER`: a stack of scopes, each mapping a name to
//! whether it is a type (a declared type or a type parameter) or an object (a variable,
//! constant, instance or parameter, which shadows a type of the same name).

use std::collections::HashMap;

pub(super) struct Names {
    /// Innermost last; the first is the program's top level.
    scopes: Vec<HashMap<String, bool>>,
}

impl Names {
    pub(super) fn new() -> Names {
        Names {
            scopes: vec![HashMap::new()],
        }
    }

    pub(super) fn push(&mut self) {
        self.scopes.push(HashMap::new());
    }

    /// Leaves the innermost scope (never the top level).
    pub(super) fn pop(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    fn declare(&mut self, name: &str, is_type: bool) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), is_type);
        }
    }

    pub(super) fn declare_type(&mut self, name: &str) {
        self.declare(name, true);
    }

    pub(super) fn declare_object(&mut self, name: &str) {
        self.declare(name, false);
    }

    /// Whether `name` denotes a type in the current scope.
    pub(super) fn is_type(&self, name: &str) -> bool {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name).copied())
            .unwrap_or(false)
    }

    /// Whether `name` denotes a type at the top level (for `.name`).
    pub(super) fn is_global_type(&self, name: &str) -> bool {
        self.scopes
            .first()
            .and_then(|s| s.get(name).copied())
            .unwrap_or(false)
    }
}
