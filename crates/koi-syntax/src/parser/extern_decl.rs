//! Extern declarations: extern objects (generic, with constructors, methods and `abstract`
//! methods), extern functions, and p4c's forward declaration `extern Name;`.

use super::core::{PResult, Parser, Spec};
use crate::ast::{Annotation, Decl, DeclKind, FunctionProto, Ident};
use crate::lexer::Tok;
use crate::source::Span;

impl Parser<'_> {
    /// `optAnnotations EXTERN ...`; a forward declaration yields no declaration.
    pub(super) fn extern_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Vec<Decl>> {
        self.bump();
        if self.is_name_at(0) {
            let object = match self.nth(1) {
                Tok::LBrace => true,
                Tok::Lt => self.is_extern_object(),
                _ => false,
            };
            if object {
                return self.extern_object(annos, lo).map(|d| vec![d]);
            }
            if *self.nth(1) == Tok::Semi {
                let name = self.name()?;
                self.bump();
                self.names.declare_type(&name.name);
                return Ok(Vec::new());
            }
        }
        let proto = self.function_proto(Vec::new(), lo, false)?;
        self.expect(&Tok::Semi)?;
        Ok(vec![self.mk_decl(
            annos,
            DeclKind::ExternFunction(proto),
            lo,
        )])
    }

    /// `Name < ... > {`: an extern object rather than a function returning `Name<...>`.
    fn is_extern_object(&mut self) -> bool {
        self.speculate(Spec::ExternObject, |p| {
            p.bump();
            let mut depth = 0usize;
            loop {
                match p.peek() {
                    Tok::Lt => depth += 1,
                    Tok::Gt => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            p.bump();
                            return p.at(&Tok::LBrace);
                        }
                    }
                    Tok::Eof | Tok::LBrace | Tok::Semi | Tok::LParen => return false,
                    _ => {}
                }
                p.bump();
            }
        })
    }

    fn extern_object(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        let name = self.name()?;
        self.names.declare_type(&name.name);
        self.names.push();
        let r = self.extern_body();
        self.names.pop();
        let (type_params, methods) = r?;
        let kind = DeclKind::Extern {
            name,
            type_params,
            methods,
        };
        Ok(self.mk_decl(annos, kind, lo))
    }

    fn extern_body(&mut self) -> PResult<(Vec<Ident>, Vec<FunctionProto>)> {
        let type_params = self.opt_type_params()?;
        self.expect(&Tok::LBrace)?;
        let mut methods = Vec::new();
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            methods.extend(self.list_item(&[], |p| p.method_proto()));
        }
        self.expect(&Tok::RBrace)?;
        Ok((type_params, methods))
    }

    /// A method prototype (possibly `abstract`) or a constructor `TypeName(params);`.
    fn method_proto(&mut self) -> PResult<FunctionProto> {
        let lo = self.span();
        let annos = self.annotations()?;
        if self.is_type_name_at(0) && *self.nth(1) == Tok::LParen {
            let s = self.bump();
            let name = Ident::new(self.text(s), s);
            self.names.push();
            let params = self.params();
            self.names.pop();
            let params = params?;
            self.expect(&Tok::Semi)?;
            return Ok(FunctionProto {
                annotations: annos,
                ret: None,
                name,
                type_params: Vec::new(),
                params,
                is_abstract: false,
                span: self.since(lo),
            });
        }
        let is_abstract = self.eat(&Tok::Abstract);
        let proto = self.function_proto(annos, lo, is_abstract)?;
        self.expect(&Tok::Semi)?;
        Ok(proto)
    }

    /// `typeOrVoid name optTypeParameters ( parameterList )`
    fn function_proto(
        &mut self,
        annotations: Vec<Annotation>,
        lo: Span,
        is_abstract: bool,
    ) -> PResult<FunctionProto> {
        let ret = self.type_or_void()?;
        let name = self.name()?;
        self.names.declare_object(&name.name);
        self.names.push();
        let r = self
            .opt_type_params()
            .and_then(|tp| Ok((tp, self.params()?)));
        self.names.pop();
        let (type_params, params) = r?;
        Ok(FunctionProto {
            annotations,
            ret: Some(ret),
            name,
            type_params,
            params,
            is_abstract,
            span: self.since(lo),
        })
    }
}
