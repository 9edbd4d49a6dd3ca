//! Macro definitions: what `#define` records (object-like and function-like macros, with
//! variadic parameters) and the built-in `__LINE__` and `__FILE__`.

use super::lex::{Kind, Lead, Tok, tokens};
use std::collections::HashMap;
use std::rc::Rc;

/// The kind of a macro.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MacroKind {
    Object,
    /// Function-like; with `variadic`, the last parameter collects the remaining arguments
    /// (it is `__VA_ARGS__` for `...`).
    Function {
        params: Vec<Rc<str>>,
        variadic: bool,
    },
    /// `__LINE__`.
    Line,
    /// `__FILE__`.
    File,
}

/// One macro: its kind and replacement list (comments removed, whitespace reduced to "space
/// before or not").
#[derive(Clone, Debug)]
pub struct Macro {
    pub kind: MacroKind,
    pub body: Vec<Tok>,
}

/// The macro table.
pub type Macros = HashMap<Rc<str>, Macro>;

impl Macro {
    pub fn builtin(kind: MacroKind) -> Macro {
        Macro {
            kind,
            body: Vec::new(),
        }
    }

    /// The parameters (empty for object-like macros).
    pub fn params(&self) -> &[Rc<str>] {
        match &self.kind {
            MacroKind::Function { params, .. } => params,
            _ => &[],
        }
    }

    pub fn is_function(&self) -> bool {
        matches!(self.kind, MacroKind::Function { .. })
    }

    pub fn is_variadic(&self) -> bool {
        matches!(self.kind, MacroKind::Function { variadic: true, .. })
    }

    /// Index of the parameter that token `t` names.
    pub fn param_index(&self, t: &Tok) -> Option<usize> {
        if t.kind != Kind::Ident {
            return None;
        }
        self.params().iter().position(|p| **p == *t.text)
    }

    /// Whether two definitions are the same (a redefinition that needs no warning).
    pub fn same_as(&self, other: &Macro) -> bool {
        self.kind == other.kind
            && self.body.len() == other.body.len()
            && self
                .body
                .iter()
                .zip(&other.body)
                .enumerate()
                .all(|(i, (a, b))| {
                    a.text == b.text && (i == 0 || a.lead.has_space() == b.lead.has_space())
                })
    }
}

/// An error in a `#define`, at byte column `col` of the directive.
#[derive(Debug, PartialEq, Eq)]
pub struct DefineError {
    pub col: u32,
    pub msg: String,
}

fn err(col: u32, msg: impl Into<String>) -> DefineError {
    DefineError {
        col,
        msg: msg.into(),
    }
}

/// Parses what follows `#define` (`end_col` is where the directive ends, for "no name").
pub fn parse_define(toks: &[Tok], end_col: u32) -> Result<(Rc<str>, Macro), DefineError> {
    let Some(name) = toks.first() else {
        return Err(err(end_col, "no macro name given in #define directive"));
    };
    check_name(name, "define")?;
    let mut rest = toks.get(1..).unwrap_or(&[]);
    let mut kind = MacroKind::Object;
    if let Some(open) = rest
        .first()
        .filter(|t| t.is_punct("(") && !t.lead.has_space())
    {
        let (params, variadic, used) = parse_params(rest, open.col, end_col)?;
        kind = MacroKind::Function { params, variadic };
        rest = rest.get(used..).unwrap_or(&[]);
    }
    let mut body: Vec<Tok> = rest.to_vec();
    for t in &mut body {
        t.lead = t.lead.normalized();
        t.seq = 0;
    }
    if let Some(first) = body.first_mut() {
        first.lead = Lead::None;
    }
    for t in [body.first(), body.last()].into_iter().flatten() {
        if t.is_punct("##") {
            return Err(err(
                t.col,
                "'##' cannot appear at either end of a macro expansion",
            ));
        }
    }
    Ok((name.text.clone(), Macro { kind, body }))
}

/// Checks that `t` can be the name of a macro in `#directive`.
pub fn check_name(t: &Tok, directive: &str) -> Result<(), DefineError> {
    if t.kind != Kind::Ident {
        return Err(err(t.col, "macro names must be identifiers"));
    }
    if &*t.text == "defined" {
        return Err(err(
            t.col,
            format!("\"defined\" cannot be used as a macro name (in #{directive})"),
        ));
    }
    Ok(())
}

/// Parses `(a, b, ...)` at the start of `toks`: the parameters, whether the macro is
/// variadic, and how many tokens the list took.
fn parse_params(
    toks: &[Tok],
    open_col: u32,
    end_col: u32,
) -> Result<(Vec<Rc<str>>, bool, usize), DefineError> {
    let mut params: Vec<Rc<str>> = Vec::new();
    let mut i = 1;
    if toks.get(i).is_some_and(|t| t.is_punct(")")) {
        return Ok((params, false, i + 1));
    }
    loop {
        let Some(t) = toks.get(i) else {
            return Err(err(open_col, "missing ')' in macro parameter list"));
        };
        let mut variadic = false;
        if t.is_punct("...") {
            params.push("__VA_ARGS__".into());
            variadic = true;
        } else if t.is_ident() && &*t.text != "__VA_ARGS__" {
            if params.contains(&t.text) {
                return Err(err(
                    t.col,
                    format!("duplicate macro parameter \"{}\"", t.text),
                ));
            }
            params.push(t.text.clone());
            if toks.get(i + 1).is_some_and(|n| n.is_punct("...")) {
                variadic = true;
                i += 1;
            }
        } else {
            return Err(err(
                t.col,
                format!("expected parameter name, found \"{}\"", t.text),
            ));
        }
        i += 1;
        match toks.get(i) {
            Some(c) if c.is_punct(")") => return Ok((params, variadic, i + 1)),
            Some(c) if c.is_punct(",") && !variadic => i += 1,
            Some(c) => {
                let want = if variadic { "')'" } else { "',' or ')'" };
                return Err(err(c.col, format!("expected {want}, found \"{}\"", c.text)));
            }
            None => return Err(err(end_col, "missing ')' in macro parameter list")),
        }
    }
}

/// Parses a macro definition written as the text of a `#define` (used for `-D`).
pub fn parse_define_text(text: &str) -> Result<(Rc<str>, Macro), DefineError> {
    let (toks, sc) = tokens(text, false);
    parse_define(&toks, u32::try_from(sc.pos()).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(text: &str) -> Result<(Rc<str>, Macro), DefineError> {
        parse_define_text(text)
    }

    #[test]
    fn object_and_function_like() {
        let (n, m) = def("X (1 + 2)").expect("valid");
        assert_eq!(&*n, "X");
        assert_eq!(m.kind, MacroKind::Object);
        assert_eq!(m.body.len(), 5);
        let (_, m) = def("F(a, b) a+b").expect("valid");
        assert_eq!(m.params().len(), 2);
        assert!(!m.is_variadic());
        let (_, m) = def("G(fmt, ...) fmt __VA_ARGS__").expect("valid");
        assert!(m.is_variadic());
        assert_eq!(&*m.params()[1], "__VA_ARGS__");
        let (_, m) = def("H(args...) args").expect("valid");
        assert!(m.is_variadic());
    }

    #[test]
    fn errors() {
        assert!(def("").is_err());
        assert!(def("1 x").is_err());
        assert!(def("defined 1").is_err());
        assert!(def("F(a, a) a").is_err());
        assert!(def("F(a b) a").is_err());
        assert!(def("F(a").is_err());
        assert!(def("F(..., a) a").is_err());
        assert_eq!(
            def("F(a) ## a").err().map(|e| e.msg),
            Some("'##' cannot appear at either end of a macro expansion".to_string())
        );
    }

    #[test]
    fn redefinition_compares_spelling_and_spaces() {
        let a = def("X a + b").expect("valid").1;
        let b = def("X a  /* c */ + b").expect("valid").1;
        let c = def("X a+b").expect("valid").1;
        assert!(a.same_as(&b));
        assert!(!a.same_as(&c));
    }
}
