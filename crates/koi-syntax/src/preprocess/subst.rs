//! Building the replacement of one macro invocation: parameters replaced by their fully
//! expanded arguments, `#param` by the argument's spelling as a string literal, and `a ## b` by
//! one pasted token (operands of `#` and `##` are the arguments as written). Empty arguments
//! act as placemarkers, and GNU's `, ## __VA_ARGS__` drops the comma when there are no
//! variadic arguments.

use super::expand::{Expander, escape};
use super::lex::{Kind, Lead, Tok, single_token};
use super::macros::Macro;

/// The arguments of one invocation, expanded on first use.
struct Args {
    raw: Vec<Vec<Tok>>,
    expanded: Vec<Option<Vec<Tok>>>,
}

/// Where a `##` stands while the replacement is built.
#[derive(Default)]
struct PasteState {
    /// A `##` waits for its right operand.
    pending: bool,
    /// The last operand was an empty argument.
    left_empty: bool,
}

impl Expander<'_, '_> {
    /// The replacement list of `mac` invoked as `name` with `args`, before rescanning.
    pub(super) fn substitute(&mut self, mac: &Macro, name: &Tok, args: Vec<Vec<Tok>>) -> Vec<Tok> {
        let n = args.len();
        let mut args = Args {
            raw: args,
            expanded: vec![None; n],
        };
        let body = &mac.body;
        let mut out: Vec<Tok> = Vec::new();
        let mut st = PasteState::default();
        // Like GCC: the space before a parameter replaced by nothing goes to the next token.
        let mut carry_space = false;
        let mut i = 0;
        while let Some(t) = body.get(i) {
            if t.is_punct("##") {
                st.pending = true;
                i += 1;
                continue;
            }
            let (mut item, used, param) = self.item(mac, &mut args, i, st.pending, name.col);
            match item.first_mut() {
                Some(first) => {
                    let space = std::mem::take(&mut carry_space);
                    first.lead = if space { Lead::Space } else { t.lead.clone() };
                }
                None => {
                    let pasted = st.pending || body.get(i + used).is_some_and(|n| n.is_punct("##"));
                    carry_space |= param.is_some() && !pasted && t.lead.has_space();
                }
            }
            let is_va = mac.is_variadic() && param.is_some_and(|p| p + 1 == mac.params().len());
            self.insert(&mut out, item, &mut st, is_va);
            i += used;
        }
        out
    }

    /// The tokens that body token `i` stands for, how many body tokens it took, and the
    /// parameter it named.
    fn item(
        &mut self,
        mac: &Macro,
        args: &mut Args,
        i: usize,
        after_paste: bool,
        col: u32,
    ) -> (Vec<Tok>, usize, Option<usize>) {
        let body = &mac.body;
        let Some(t) = body.get(i) else {
            return (Vec::new(), 1, None);
        };
        if t.is_punct("#") && mac.is_function() {
            let p = body.get(i + 1).and_then(|n| mac.param_index(n));
            if let Some(p) = p {
                let raw = args.raw.get(p).map_or(&[][..], Vec::as_slice);
                let mut s = Tok::new(Kind::Str, &stringify(raw));
                s.col = col;
                return (vec![s], 2, None);
            }
        }
        let Some(p) = mac.param_index(t) else {
            return (vec![t.clone()], 1, None);
        };
        let before_paste = body.get(i + 1).is_some_and(|n| n.is_punct("##"));
        if after_paste || before_paste {
            return (args.raw.get(p).cloned().unwrap_or_default(), 1, Some(p));
        }
        (self.expanded_arg(args, p, col), 1, Some(p))
    }

    fn expanded_arg(&mut self, args: &mut Args, p: usize, col: u32) -> Vec<Tok> {
        if let Some(Some(done)) = args.expanded.get(p) {
            return done.clone();
        }
        let raw = args.raw.get(p).cloned().unwrap_or_default();
        let done = self.expand_list(raw, col);
        if let Some(slot) = args.expanded.get_mut(p) {
            *slot = Some(done.clone());
        }
        done
    }

    /// Appends `item` to `out`, pasting its first token onto the last one after a `##`.
    fn insert(&mut self, out: &mut Vec<Tok>, item: Vec<Tok>, st: &mut PasteState, is_va: bool) {
        let empty = item.is_empty();
        if !st.pending {
            st.left_empty = empty;
            out.extend(item);
            return;
        }
        st.pending = false;
        let after_comma = out.last().is_some_and(|t| t.is_punct(",")) && !st.left_empty;
        if is_va && after_comma {
            if empty {
                out.pop();
            } else {
                out.extend(item);
            }
            st.left_empty = false;
            return;
        }
        if empty {
            return;
        }
        let left = if st.left_empty { None } else { out.pop() };
        st.left_empty = false;
        let mut rest = item.into_iter();
        match (left, rest.next()) {
            (Some(l), Some(r)) => {
                let pasted = self.paste(l, r);
                out.extend(pasted);
            }
            (None, Some(r)) => out.push(r),
            (Some(l), None) => out.push(l),
            (None, None) => {}
        }
        out.extend(rest);
    }

    /// `l ## r`: one token, or both when they do not form one. p4c runs cpp in assembler
    /// mode (`-x assembler-with-cpp`), which keeps both tokens silently and writes them
    /// apart, so that they are not read back as one token: so does koi, without a warning.
    fn paste(&mut self, l: Tok, mut r: Tok) -> Vec<Tok> {
        let text = format!("{}{}", l.text, r.text);
        match single_token(&text) {
            Some(kind) => vec![Tok {
                kind,
                text: text.into(),
                lead: l.lead,
                painted: false,
                seq: 0,
                col: l.col,
            }],
            None => {
                r.lead = Lead::Space;
                vec![l, r]
            }
        }
    }
}

/// `#arg`: the spelling of the argument as a string literal.
fn stringify(arg: &[Tok]) -> String {
    let mut s = String::from("\"");
    for (i, t) in arg.iter().enumerate() {
        if i > 0 && t.lead.has_space() {
            s.push(' ');
        }
        if matches!(t.kind, Kind::Str | Kind::Char) {
            s.push_str(&escape(&t.text));
        } else {
            s.push_str(&t.text);
        }
    }
    s.push('"');
    s
}
