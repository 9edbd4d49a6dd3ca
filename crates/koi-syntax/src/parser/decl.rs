//! Declarations: the program's top level, constants, variables, instantiations (with
//! initializer blocks), functions, actions, parameters, headers/structs/unions, enums, errors,
//! match kinds, `typedef`/`type` and packages.

use super::core::{PResult, Parser};
use super::stmt::Ctx;
use crate::ast::{
    Annotation, Decl, DeclKind, Direction, EnumMember, Ident, Param, Program, StructField, Type,
    TypeKind,
};
use crate::lexer::Tok;
use crate::source::Span;

/// Keywords at which error recovery at the top level stops: they start a new declaration.
const TOP_STOPS: &[Tok] = &[
    Tok::Control,
    Tok::Parser,
    Tok::Header,
    Tok::HeaderUnion,
    Tok::Struct,
    Tok::Extern,
    Tok::Action,
    Tok::Typedef,
    Tok::Enum,
    Tok::MatchKind,
    Tok::Package,
    Tok::Const,
];

impl Parser<'_> {
    /// `p4program`
    pub(super) fn program(&mut self) -> Program {
        let mut decls = Vec::new();
        loop {
            match self.peek() {
                Tok::Eof => break,
                Tok::Semi => {
                    self.bump();
                }
                Tok::RBrace => {
                    let _ = self.unexpected("");
                    self.bump();
                }
                _ => {
                    let before = self.pos();
                    match self.top_decl() {
                        Ok(ds) => decls.extend(ds),
                        Err(_) => {
                            self.recover(TOP_STOPS);
                            // A `}` left at the top level closes what the error broke.
                            if self.at(&Tok::RBrace) {
                                self.bump();
                            }
                        }
                    }
                    if self.pos() == before {
                        self.bump();
                    }
                }
            }
        }
        Program { decls }
    }

    pub(super) fn mk_decl(&self, annotations: Vec<Annotation>, kind: DeclKind, lo: Span) -> Decl {
        Decl {
            annotations,
            kind,
            span: self.since(lo),
        }
    }

    fn top_decl(&mut self) -> PResult<Vec<Decl>> {
        let lo = self.span();
        let annos = self.annotations()?;
        let one = match self.peek() {
            Tok::Const => self.const_decl(annos, lo),
            Tok::Extern => return self.extern_decl(annos, lo),
            Tok::Action => self.action_decl(annos, lo),
            Tok::Parser => self.parser_decl(annos, lo),
            Tok::Control => self.control_decl(annos, lo),
            Tok::Header | Tok::HeaderUnion | Tok::Struct => self.struct_decl(annos, lo),
            Tok::Enum => self.enum_decl(annos, lo),
            Tok::Typedef | Tok::Type => return self.typedef_decl(annos, lo),
            Tok::Package => self.package_decl(annos, lo),
            Tok::Error if *self.nth(1) == Tok::LBrace => self.error_decl(annos, lo),
            Tok::MatchKind if *self.nth(1) == Tok::LBrace => self.match_kind_decl(annos, lo),
            _ => self.function_or_instance(annos, lo),
        };
        one.map(|d| vec![d])
    }

    /// `optAnnotations CONST typeRef name = initializer ;`
    pub(super) fn const_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        self.bump();
        let ty = self.type_ref()?;
        let name = self.name()?;
        self.expect(&Tok::Assign)?;
        let value = self.expr()?;
        self.expect(&Tok::Semi)?;
        self.names.declare_object(&name.name);
        Ok(self.mk_decl(annos, DeclKind::Const { ty, name, value }, lo))
    }

    /// A local variable declaration or an instantiation (`instances` false forbids the
    /// latter, as in parser states).
    pub(super) fn var_or_instance(
        &mut self,
        annos: Vec<Annotation>,
        lo: Span,
        instances: bool,
    ) -> PResult<Decl> {
        let ty = self.type_ref()?;
        if self.at(&Tok::LParen) && instances {
            return self.instantiation(annos, lo, ty);
        }
        let d = self.var_rest(annos, lo, ty)?;
        self.expect(&Tok::Semi)?;
        Ok(d)
    }

    /// `name [= initializer]` after a variable's type (no `;`).
    pub(super) fn var_rest(&mut self, annos: Vec<Annotation>, lo: Span, ty: Type) -> PResult<Decl> {
        let name = self.name()?;
        let ty = self.array_suffix(ty)?;
        let init = if self.eat(&Tok::Assign) {
            Some(self.expr()?)
        } else {
            None
        };
        self.names.declare_object(&name.name);
        Ok(self.mk_decl(annos, DeclKind::Var { ty, name, init }, lo))
    }

    /// `typeRef ( args ) name [= { objDeclarations }] ;` after the type.
    fn instantiation(&mut self, annos: Vec<Annotation>, lo: Span, ty: Type) -> PResult<Decl> {
        if ty.kind == TypeKind::Void {
            return Err(self.unexpected(""));
        }
        let args = self.args()?;
        let name = self.name()?;
        let initializer = if self.eat(&Tok::Assign) {
            Some(self.nested(|p| p.obj_initializer())?)
        } else {
            None
        };
        self.expect(&Tok::Semi)?;
        self.names.declare_object(&name.name);
        let kind = DeclKind::Instantiation {
            ty,
            args,
            name,
            initializer,
        };
        Ok(self.mk_decl(annos, kind, lo))
    }

    /// `{ objDeclarations }`: functions and instantiations.
    fn obj_initializer(&mut self) -> PResult<Vec<Decl>> {
        self.expect(&Tok::LBrace)?;
        self.names.push();
        let mut decls = Vec::new();
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            let item = self.list_item(&[], |p| {
                let lo = p.span();
                let annos = p.annotations()?;
                p.function_or_instance(annos, lo)
            });
            decls.extend(item);
        }
        self.names.pop();
        self.expect(&Tok::RBrace)?;
        Ok(decls)
    }

    /// A function declaration or an instantiation, both starting with a type.
    fn function_or_instance(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        let ret = self.type_or_void()?;
        if self.at(&Tok::LParen) {
            return self.instantiation(annos, lo, ret);
        }
        let name = self.name()?;
        self.names.declare_object(&name.name);
        self.names.push();
        let r = self.function_rest();
        self.names.pop();
        let (type_params, params, body) = r?;
        let kind = DeclKind::Function {
            ret,
            name,
            type_params,
            params,
            body,
        };
        Ok(self.mk_decl(annos, kind, lo))
    }

    fn function_rest(&mut self) -> PResult<(Vec<Ident>, Vec<Param>, crate::ast::Block)> {
        let type_params = self.opt_type_params()?;
        let params = self.params()?;
        let lo = self.span();
        let body = self.block(Vec::new(), lo, Ctx::Block)?;
        Ok((type_params, params, body))
    }

    /// `optAnnotations ACTION name ( parameterList ) blockStatement`
    pub(super) fn action_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        self.bump();
        let name = self.name()?;
        self.names.push();
        let r = self.params().and_then(|params| {
            let blo = self.span();
            let body = self.block(Vec::new(), blo, Ctx::Block)?;
            Ok((params, body))
        });
        self.names.pop();
        let (params, body) = r?;
        Ok(self.mk_decl(annos, DeclKind::Action { name, params, body }, lo))
    }

    /// `( parameterList )`; the parameters are declared in the current scope.
    pub(super) fn params(&mut self) -> PResult<Vec<Param>> {
        self.expect(&Tok::LParen)?;
        let mut params = Vec::new();
        if self.eat(&Tok::RParen) {
            return Ok(params);
        }
        loop {
            params.push(self.param()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RParen)?;
        Ok(params)
    }

    fn param(&mut self) -> PResult<Param> {
        let lo = self.span();
        let annotations = self.annotations()?;
        let direction = match self.peek() {
            Tok::In => Some(Direction::In),
            Tok::Out => Some(Direction::Out),
            Tok::Inout => Some(Direction::InOut),
            _ => None,
        };
        if direction.is_some() {
            self.bump();
        }
        let ty = self.type_ref()?;
        let name = self.name()?;
        let default = if self.eat(&Tok::Assign) {
            Some(self.expr()?)
        } else {
            None
        };
        self.names.declare_object(&name.name);
        Ok(Param {
            annotations,
            direction,
            ty,
            name,
            default,
            span: self.since(lo),
        })
    }

    /// `header`, `header_union` or `struct` declarations.
    fn struct_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        let kw = self.peek().clone();
        self.bump();
        let name = self.name()?;
        self.names.declare_type(&name.name);
        self.names.push();
        let r = self
            .opt_type_params()
            .and_then(|tp| Ok((tp, self.fields()?)));
        self.names.pop();
        let (type_params, fields) = r?;
        let kind = match kw {
            Tok::Header => DeclKind::Header {
                name,
                type_params,
                fields,
            },
            Tok::HeaderUnion => DeclKind::HeaderUnion {
                name,
                type_params,
                fields,
            },
            _ => DeclKind::Struct {
                name,
                type_params,
                fields,
            },
        };
        Ok(self.mk_decl(annos, kind, lo))
    }

    /// `{ structFieldList }`
    fn fields(&mut self) -> PResult<Vec<StructField>> {
        self.expect(&Tok::LBrace)?;
        let mut fields = Vec::new();
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            fields.extend(self.list_item(&[], |p| p.field()));
        }
        self.expect(&Tok::RBrace)?;
        Ok(fields)
    }

    fn field(&mut self) -> PResult<StructField> {
        let lo = self.span();
        let annotations = self.annotations()?;
        let ty = self.type_ref()?;
        let name = self.name()?;
        let ty = self.array_suffix(ty)?;
        self.expect(&Tok::Semi)?;
        Ok(StructField {
            annotations,
            ty,
            name,
            span: self.since(lo),
        })
    }

    /// `enum name { a, b }` or `enum typeRef name { a = 1, b = 2 }`.
    fn enum_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        self.bump();
        let repr = if self.is_name_at(0) && *self.nth(1) == Tok::LBrace {
            None
        } else {
            Some(self.type_ref()?)
        };
        let name = self.name()?;
        self.names.declare_type(&name.name);
        self.expect(&Tok::LBrace)?;
        let mut members = Vec::new();
        loop {
            let annotations = self.annotations()?;
            let name = self.name()?;
            let value = if repr.is_some() {
                self.expect(&Tok::Assign)?;
                Some(self.expr()?)
            } else {
                None
            };
            members.push(EnumMember {
                annotations,
                name,
                value,
            });
            if !self.eat(&Tok::Comma) || self.at(&Tok::RBrace) {
                break;
            }
        }
        self.expect(&Tok::RBrace)?;
        let kind = DeclKind::Enum {
            repr,
            name,
            members,
        };
        Ok(self.mk_decl(annos, kind, lo))
    }

    /// `name, name, ...` up to `}`; a trailing comma only when `trailing`.
    fn ident_list(&mut self, trailing: bool) -> PResult<Vec<Ident>> {
        self.expect(&Tok::LBrace)?;
        let mut names = Vec::new();
        loop {
            names.push(self.name()?);
            if !self.eat(&Tok::Comma) || (trailing && self.at(&Tok::RBrace)) {
                break;
            }
        }
        self.expect(&Tok::RBrace)?;
        Ok(names)
    }

    fn error_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        if !annos.is_empty() {
            return Err(self.unexpected(""));
        }
        self.bump();
        let names = self.ident_list(false)?;
        Ok(self.mk_decl(annos, DeclKind::Error(names), lo))
    }

    fn match_kind_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        if !annos.is_empty() {
            return Err(self.unexpected(""));
        }
        self.bump();
        let names = self.ident_list(true)?;
        Ok(self.mk_decl(annos, DeclKind::MatchKind(names), lo))
    }

    /// `typedef typeRef name;`, `typedef <derived type declaration> name;`, `type typeRef name;`.
    fn typedef_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Vec<Decl>> {
        let newtype = self.bump_is(&Tok::Type);
        let mut out = Vec::new();
        let derived = !newtype
            && matches!(
                self.peek(),
                Tok::Header | Tok::HeaderUnion | Tok::Struct | Tok::Enum
            );
        let ty = if derived {
            let dlo = self.span();
            let d = if self.at(&Tok::Enum) {
                self.enum_decl(Vec::new(), dlo)?
            } else {
                self.struct_decl(Vec::new(), dlo)?
            };
            let Some(n) = d.name().cloned() else {
                return Err(self.unexpected(""));
            };
            out.push(d);
            let path = self.path(false, n.span, n.clone());
            Type {
                kind: TypeKind::Named(path),
                span: n.span,
            }
        } else {
            self.type_ref()?
        };
        let name = self.name()?;
        self.expect(&Tok::Semi)?;
        self.names.declare_type(&name.name);
        let kind = if newtype {
            DeclKind::NewType { ty, name }
        } else {
            DeclKind::Typedef { ty, name }
        };
        out.push(self.mk_decl(annos, kind, lo));
        Ok(out)
    }

    /// A C-style array declarator after a field or variable name (`bit<8> arr[16];`, which
    /// p4c accepts): the type becomes `T[16]`.
    fn array_suffix(&mut self, ty: Type) -> PResult<Type> {
        if !self.at(&Tok::LBracket) {
            return Ok(ty);
        }
        let lo = ty.span;
        self.bump();
        let size = self.expr()?;
        self.expect(&Tok::RBracket)?;
        let kind = TypeKind::Stack {
            elem: Box::new(ty),
            size: Box::new(size),
        };
        Ok(Type {
            kind,
            span: self.since(lo),
        })
    }

    /// Consumes the current token and tells whether it was `t`.
    fn bump_is(&mut self, t: &Tok) -> bool {
        let is = self.at(t);
        self.bump();
        is
    }

    /// `optAnnotations PACKAGE name optTypeParameters ( parameterList ) ;`
    fn package_decl(&mut self, annos: Vec<Annotation>, lo: Span) -> PResult<Decl> {
        self.bump();
        let name = self.name()?;
        self.names.declare_type(&name.name);
        self.names.push();
        let r = self
            .opt_type_params()
            .and_then(|tp| Ok((tp, self.params()?)));
        self.names.pop();
        let (type_params, params) = r?;
        self.expect(&Tok::Semi)?;
        let kind = DeclKind::PackageType {
            name,
            type_params,
            params,
        };
        Ok(self.mk_decl(annos, kind, lo))
    }
}
