//! Token kinds of P4-16 and the table of keywords and punctuation.

use crate::ast::IntLit;
use crate::source::Span;

/// One token: its kind and its byte range in the lexed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Tok,
    pub span: Span,
}

/// The kind of a token. Identifiers carry no text: the parser reads it through the span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    Ident,
    Int(Box<IntLit>),
    /// The characters between the quotes, as written.
    Str(String),
    // Keywords.
    Abstract,
    Action,
    Actions,
    Apply,
    Bool,
    Bit,
    Break,
    Const,
    Continue,
    Control,
    Default,
    Else,
    Entries,
    Enum,
    Error,
    Exit,
    Extern,
    False,
    For,
    Header,
    HeaderUnion,
    If,
    In,
    Inout,
    Int_,
    Key,
    List,
    MatchKind,
    Out,
    Package,
    Parser,
    Priority,
    Return,
    Select,
    State,
    String_,
    Struct,
    Switch,
    Table,
    This,
    Transition,
    True,
    Tuple,
    Type,
    Typedef,
    Varbit,
    ValueSet,
    Void,
    /// `_`
    DontCare,
    /// `@pragma`
    Pragma,
    /// The end of a `@pragma` line.
    EndPragma,
    /// A character that starts no token (p4c's `UNEXPECTED_TOKEN`).
    Unexpected,
    // Punctuation.
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Colon,
    Question,
    Dot,
    /// `..`
    Range,
    /// `...`
    Dots,
    At,
    Assign,
    EqEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Shl,
    Not,
    Tilde,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    /// `|+|`
    PlusSat,
    /// `|-|`
    MinusSat,
    /// `++`
    PlusPlus,
    Amp,
    Pipe,
    Caret,
    AndAnd,
    OrOr,
    /// `&&&`
    Mask,
    /// `{#}`
    InvalidHeader,
    PlusAssign,
    MinusAssign,
    StarAssign,
    SlashAssign,
    PercentAssign,
    ShlAssign,
    AmpAssign,
    PipeAssign,
    CaretAssign,
    PlusSatAssign,
    MinusSatAssign,
    Eof,
}

const KEYWORDS: &[(&str, Tok)] = &[
    ("abstract", Tok::Abstract),
    ("action", Tok::Action),
    ("actions", Tok::Actions),
    ("apply", Tok::Apply),
    ("bool", Tok::Bool),
    ("bit", Tok::Bit),
    ("break", Tok::Break),
    ("const", Tok::Const),
    ("continue", Tok::Continue),
    ("control", Tok::Control),
    ("default", Tok::Default),
    ("else", Tok::Else),
    ("entries", Tok::Entries),
    ("enum", Tok::Enum),
    ("error", Tok::Error),
    ("exit", Tok::Exit),
    ("extern", Tok::Extern),
    ("false", Tok::False),
    ("for", Tok::For),
    ("header", Tok::Header),
    ("header_union", Tok::HeaderUnion),
    ("if", Tok::If),
    ("in", Tok::In),
    ("inout", Tok::Inout),
    ("int", Tok::Int_),
    ("key", Tok::Key),
    ("list", Tok::List),
    ("match_kind", Tok::MatchKind),
    ("out", Tok::Out),
    ("package", Tok::Package),
    ("parser", Tok::Parser),
    ("priority", Tok::Priority),
    ("return", Tok::Return),
    ("select", Tok::Select),
    ("state", Tok::State),
    ("string", Tok::String_),
    ("struct", Tok::Struct),
    ("switch", Tok::Switch),
    ("table", Tok::Table),
    ("this", Tok::This),
    ("transition", Tok::Transition),
    ("true", Tok::True),
    ("tuple", Tok::Tuple),
    ("type", Tok::Type),
    ("typedef", Tok::Typedef),
    ("varbit", Tok::Varbit),
    ("value_set", Tok::ValueSet),
    ("void", Tok::Void),
    ("_", Tok::DontCare),
];

/// Punctuation, longest spellings first within each leading character.
const PUNCT: &[(&str, Tok)] = &[
    ("{#}", Tok::InvalidHeader),
    ("...", Tok::Dots),
    ("..", Tok::Range),
    ("&&&", Tok::Mask),
    ("|+|=", Tok::PlusSatAssign),
    ("|-|=", Tok::MinusSatAssign),
    ("|+|", Tok::PlusSat),
    ("|-|", Tok::MinusSat),
    ("<<=", Tok::ShlAssign),
    ("<<", Tok::Shl),
    ("<=", Tok::Le),
    (">=", Tok::Ge),
    ("==", Tok::EqEq),
    ("!=", Tok::Ne),
    ("&&", Tok::AndAnd),
    ("||", Tok::OrOr),
    ("++", Tok::PlusPlus),
    ("+=", Tok::PlusAssign),
    ("-=", Tok::MinusAssign),
    ("*=", Tok::StarAssign),
    ("/=", Tok::SlashAssign),
    ("%=", Tok::PercentAssign),
    ("&=", Tok::AmpAssign),
    ("|=", Tok::PipeAssign),
    ("^=", Tok::CaretAssign),
    ("(", Tok::LParen),
    (")", Tok::RParen),
    ("[", Tok::LBracket),
    ("]", Tok::RBracket),
    ("{", Tok::LBrace),
    ("}", Tok::RBrace),
    (",", Tok::Comma),
    (";", Tok::Semi),
    (":", Tok::Colon),
    ("?", Tok::Question),
    (".", Tok::Dot),
    ("@", Tok::At),
    ("=", Tok::Assign),
    ("<", Tok::Lt),
    (">", Tok::Gt),
    ("!", Tok::Not),
    ("~", Tok::Tilde),
    ("+", Tok::Plus),
    ("-", Tok::Minus),
    ("*", Tok::Star),
    ("/", Tok::Slash),
    ("%", Tok::Percent),
    ("&", Tok::Amp),
    ("|", Tok::Pipe),
    ("^", Tok::Caret),
];

/// The punctuation token at the start of `rest`, with its length.
pub(super) fn punct(rest: &[u8]) -> Option<(Tok, usize)> {
    PUNCT
        .iter()
        .find(|(s, _)| rest.starts_with(s.as_bytes()))
        .map(|(s, t)| (t.clone(), s.len()))
}

impl Tok {
    /// The keyword spelled `word`, if it is one.
    pub fn keyword(word: &str) -> Option<Tok> {
        KEYWORDS
            .iter()
            .find(|(s, _)| *s == word)
            .map(|(_, t)| t.clone())
    }

    /// How p4c names this token in `syntax error, unexpected X` messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident => "IDENTIFIER".into(),
            Tok::Int(_) => "INTEGER".into(),
            Tok::Str(_) => "STRING_LITERAL".into(),
            Tok::Pragma => "PRAGMA".into(),
            Tok::EndPragma => "END_PRAGMA".into(),
            Tok::Unexpected => "UNEXPECTED_TOKEN".into(),
            Tok::InvalidHeader => "INVALID".into(),
            Tok::Dots => "DOTS".into(),
            Tok::Eof => "END".into(),
            Tok::DontCare => "_".into(),
            other => {
                if let Some((s, _)) = KEYWORDS.iter().find(|(_, t)| t == other) {
                    return s.to_ascii_uppercase();
                }
                PUNCT
                    .iter()
                    .find(|(_, t)| t == other)
                    .map(|(s, _)| (*s).to_string())
                    .unwrap_or_else(|| format!("{other:?}"))
            }
        }
    }
}
