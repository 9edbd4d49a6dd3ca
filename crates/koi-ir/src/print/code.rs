//! Text of expressions, places, statements and terminators, with slots, headers, actions and
//! parameters shown by name. Never panics, even on an unverified pipeline: an id out of range
//! prints as `?` followed by the id.

use crate::control::{ActionParam, ApplyNext, Terminator};
use crate::expr::{Cast, Expr, HeaderRef, Place, UnOp};
use crate::ids::{ActionId, ExternId, HeaderId, SlotId, StackId, TableId};
use crate::pipeline::Pipeline;
use crate::stmt::{Arg, Builtin, Stmt};

/// Name lookup for one body: the pipeline, and the parameters of the action being printed.
pub(crate) struct Names<'a> {
    pub p: &'a Pipeline,
    pub params: &'a [ActionParam],
}

fn list(items: impl IntoIterator<Item = String>) -> String {
    items.into_iter().collect::<Vec<_>>().join(", ")
}

impl Names<'_> {
    pub fn slot(&self, s: SlotId) -> String {
        self.p
            .phv
            .slots
            .get(s)
            .map_or(format!("?{s}"), |s| s.name.clone())
    }

    fn header_id(&self, h: HeaderId) -> String {
        self.p
            .phv
            .headers
            .get(h)
            .map_or(format!("?{h}"), |h| h.name.clone())
    }

    fn stack(&self, s: StackId) -> String {
        self.p
            .phv
            .stacks
            .get(s)
            .map_or(format!("?{s}"), |s| s.name.clone())
    }

    pub fn table(&self, t: TableId) -> String {
        self.p
            .tables
            .get(t)
            .map_or(format!("?{t}"), |t| t.preamble.name.clone())
    }

    pub fn action(&self, a: ActionId) -> String {
        self.p
            .actions
            .get(a)
            .map_or(format!("?{a}"), |a| a.preamble.name.clone())
    }

    fn extern_(&self, e: ExternId) -> String {
        self.p
            .externs
            .get(e)
            .map_or(format!("?{e}"), |e| e.preamble.name.clone())
    }

    fn stack_field(&self, stack: StackId, index: &Expr, field: u32) -> String {
        let fname = self
            .p
            .phv
            .stacks
            .get(stack)
            .and_then(|s| s.elems.first())
            .and_then(|&h| self.p.phv.headers.get(h))
            .and_then(|h| h.fields.get(field as usize))
            .and_then(|&f| self.p.phv.slots.get(f))
            .map_or(format!("?field{field}"), |s| s.short_name().to_string());
        format!("{}[{}].{}", self.stack(stack), self.expr(index), fname)
    }

    pub fn header(&self, h: &HeaderRef) -> String {
        match h {
            HeaderRef::Header(h) => self.header_id(*h),
            HeaderRef::Next(s) => format!("{}.next", self.stack(*s)),
            HeaderRef::Last(s) => format!("{}.last", self.stack(*s)),
            HeaderRef::Index(s, i) => format!("{}[{}]", self.stack(*s), self.expr(i)),
        }
    }

    /// An operand: parenthesised unless it is a leaf.
    fn operand(&self, e: &Expr) -> String {
        match e {
            Expr::Binary(..) | Expr::Mux { .. } | Expr::Cast(..) | Expr::Unary(..) => {
                format!("({})", self.expr(e))
            }
            _ => self.expr(e),
        }
    }

    pub fn expr(&self, e: &Expr) -> String {
        match e {
            Expr::Const(b) => b.to_string(),
            Expr::Bool(v) => v.to_string(),
            Expr::Slot(s) => self.slot(*s),
            Expr::Param(i) => self
                .params
                .get(*i as usize)
                .map_or(format!("?param{i}"), |p| p.name.clone()),
            Expr::IsValid(h) => format!("{}.isValid()", self.header(h)),
            Expr::StackField {
                stack,
                index,
                field,
            } => self.stack_field(*stack, index, *field),
            Expr::Unary(op, a) => {
                let sym = match op {
                    UnOp::Not => "!",
                    UnOp::BitNot => "~",
                    UnOp::Neg => "-",
                };
                format!("{sym}{}", self.operand(a))
            }
            Expr::Binary(op, a, b) => {
                format!("{} {} {}", self.operand(a), op.symbol(), self.operand(b))
            }
            Expr::Slice { value, hi, lo } => format!("{}[{hi}:{lo}]", self.operand(value)),
            Expr::Cast(c, a) => {
                let to = match c {
                    // A sign-extending resize reads as P4's int-to-int cast.
                    Cast::Resize {
                        width,
                        signed: true,
                    } => format!("int<{width}>"),
                    Cast::Resize { width, .. } => format!("bit<{width}>"),
                    Cast::ToBool => "bool".to_string(),
                    Cast::FromBool => "bit<1>".to_string(),
                };
                format!("({to}){}", self.operand(a))
            }
            Expr::Mux {
                cond,
                then,
                otherwise,
            } => format!(
                "{} ? {} : {}",
                self.operand(cond),
                self.operand(then),
                self.operand(otherwise)
            ),
        }
    }

    pub fn place(&self, p: &Place) -> String {
        match p {
            Place::Slot(s) => self.slot(*s),
            Place::Slice { slot, hi, lo } => format!("{}[{hi}:{lo}]", self.slot(*slot)),
            Place::StackField {
                stack,
                index,
                field,
            } => self.stack_field(*stack, index, *field),
        }
    }

    fn exprs(&self, es: &[Expr]) -> String {
        list(es.iter().map(|e| self.expr(e)))
    }

    fn error(&self, code: u32) -> String {
        self.p
            .errors
            .get(code as usize)
            .map_or(format!("error.?{code}"), |e| format!("error.{e}"))
    }

    pub fn stmt(&self, s: &Stmt) -> String {
        match s {
            Stmt::Assign { dst, value } => format!("{} = {};", self.place(dst), self.expr(value)),
            Stmt::SetValid(h) => format!("{}.setValid();", self.header(h)),
            Stmt::SetInvalid(h) => format!("{}.setInvalid();", self.header(h)),
            Stmt::CopyHeader { dst, src } => {
                format!("{} = {};", self.header(dst), self.header(src))
            }
            Stmt::PushFront { stack, count } => {
                format!("{}.push_front({count});", self.stack(*stack))
            }
            Stmt::PopFront { stack, count } => {
                format!("{}.pop_front({count});", self.stack(*stack))
            }
            Stmt::Extract {
                header,
                varbit_bits: None,
            } => format!("extract({});", self.header(header)),
            Stmt::Extract {
                header,
                varbit_bits: Some(b),
            } => format!("extract({}, {});", self.header(header), self.expr(b)),
            Stmt::Lookahead { dst } => format!("{} = lookahead();", self.place(dst)),
            Stmt::Advance { bits } => format!("advance({});", self.expr(bits)),
            Stmt::PacketLength { dst } => format!("{} = packet_length();", self.place(dst)),
            Stmt::Verify { cond, error } => {
                format!("verify({}, {});", self.expr(cond), self.error(*error))
            }
            Stmt::Emit(h) => format!("emit({});", self.header(h)),
            Stmt::CallAction { action, args } => {
                format!("{}({});", self.action(*action), self.exprs(args))
            }
            Stmt::ExternCall {
                instance,
                method,
                args,
                result,
            } => {
                let args = list(args.iter().map(|a| match a {
                    Arg::In(e) => self.expr(e),
                    Arg::Out(p) => format!("out {}", self.place(p)),
                    Arg::InOut(p) => format!("inout {}", self.place(p)),
                }));
                let lhs = result
                    .as_ref()
                    .map_or(String::new(), |r| format!("{} = ", self.place(r)));
                format!("{lhs}{}.{method}({args});", self.extern_(*instance))
            }
            Stmt::Builtin(b) => self.builtin(b),
        }
    }

    fn field_list(&self, fl: &Option<crate::ids::FieldListId>) -> String {
        fl.map_or(String::new(), |fl| match self.p.field_lists.get(fl) {
            Some(l) => format!("field_list {}", l.index),
            None => format!("?{fl}"),
        })
    }

    fn builtin(&self, b: &Builtin) -> String {
        use Builtin::*;
        let name = b.name();
        match b {
            MarkToDrop | MarkToPass => format!("{name}();"),
            Hash {
                dst,
                algo,
                base,
                data,
                max,
            } => {
                let max = max
                    .as_ref()
                    .map_or(String::new(), |m| format!(", {}", self.expr(m)));
                format!(
                    "{} = hash({}, {}, {{{}}}{max});",
                    self.place(dst),
                    algo.name(),
                    self.expr(base),
                    self.exprs(data)
                )
            }
            VerifyChecksum {
                cond,
                data,
                checksum,
                algo,
                ..
            } => format!(
                "{name}({}, {{{}}}, {}, {});",
                self.expr(cond),
                self.exprs(data),
                self.expr(checksum),
                algo.name()
            ),
            UpdateChecksum {
                cond,
                data,
                checksum,
                algo,
                ..
            } => format!(
                "{name}({}, {{{}}}, {}, {});",
                self.expr(cond),
                self.exprs(data),
                self.place(checksum),
                algo.name()
            ),
            Clone {
                kind,
                session,
                field_list,
            } => {
                let fl = self.field_list(field_list);
                let fl = if fl.is_empty() { fl } else { format!(", {fl}") };
                format!("clone({kind:?}, {}{fl});", self.expr(session))
            }
            Resubmit { field_list } | Recirculate { field_list } => {
                format!("{name}({});", self.field_list(field_list))
            }
            Truncate { bytes } => format!("truncate({});", self.expr(bytes)),
            Digest {
                digest,
                receiver,
                data,
            } => {
                let d = self
                    .p
                    .digests
                    .get(*digest)
                    .map_or(format!("?{digest}"), |d| d.preamble.name.clone());
                format!(
                    "digest<{d}>({}, {{{}}});",
                    self.expr(receiver),
                    self.exprs(data)
                )
            }
            Random { dst, lo, hi } => format!(
                "{} = random({}, {});",
                self.place(dst),
                self.expr(lo),
                self.expr(hi)
            ),
            LogMsg { format, args } => format!("log_msg({format:?}, {{{}}});", self.exprs(args)),
            Assert { cond } | Assume { cond } => format!("{name}({});", self.expr(cond)),
            TimestampNs { dst } => format!("{} = {name}();", self.place(dst)),
            CsumReplace {
                dst,
                csum,
                old,
                new,
            } => format!(
                "{} = {name}({}, {}, {});",
                self.place(dst),
                self.expr(csum),
                self.expr(old),
                self.expr(new)
            ),
            Native { func, args, ret } => {
                let f = self.p.natives.fns.get(*func as usize);
                let fname = f.map_or("?", |f| f.name.as_str());
                let args: Vec<String> = args
                    .iter()
                    .map(|a| {
                        let r: Vec<String> = a.reads.iter().map(|e| self.expr(e)).collect();
                        let w: Vec<String> = a.writes.iter().map(|p| self.place(p)).collect();
                        format!("in({}) out({})", r.join(", "), w.join(", "))
                    })
                    .collect();
                let ret = ret
                    .as_ref()
                    .map_or(String::new(), |p| format!("{} = ", self.place(p)));
                format!("{ret}extern {fname}({});", args.join("; "))
            }
        }
    }

    pub fn term(&self, t: &Terminator) -> String {
        match t {
            Terminator::Goto(b) => format!("goto {b}"),
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => format!("if {} goto {then} else goto {otherwise}", self.expr(cond)),
            Terminator::Switch {
                value,
                cases,
                default,
            } => {
                let cases = list(cases.iter().map(|(v, b)| format!("{v} => {b}")));
                format!(
                    "switch {} {{ {cases}, default => {default} }}",
                    self.expr(value)
                )
            }
            Terminator::Apply { table, next } => {
                let t = self.table(*table);
                match next {
                    ApplyNext::Always(b) => format!("apply {t} then {b}"),
                    ApplyNext::HitMiss { hit, miss } => format!("apply {t} hit {hit} miss {miss}"),
                    ApplyNext::Actions { cases, default } => {
                        let cases = list(
                            cases
                                .iter()
                                .map(|(a, b)| format!("{} => {b}", self.action(*a))),
                        );
                        format!("apply {t} {{ {cases}, default => {default} }}")
                    }
                }
            }
            Terminator::Return => "return".to_string(),
            Terminator::Exit => "exit".to_string(),
        }
    }
}
