//! Errors of every stage of grammar processing: GBNF parsing, terminal
//! compilation, and the transforms of ZapFormat §4.5.

use thiserror::Error;

use crate::limits::Limit;

/// A 1-based line/column position in a source text (columns count
/// characters, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Everything that can go wrong while reading, compiling or transforming a
/// grammar. Variants that refer to a place in a source text carry its
/// line and column.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GrammarError {
    /// Malformed grammar text.
    #[error("syntax error at {line}:{column}: {reason}")]
    Syntax {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// What was expected or found.
        reason: String,
    },

    /// A nonterminal is used but never defined.
    #[error("undefined nonterminal `{name}` at {line}:{column}")]
    UndefinedNonterminal {
        /// The nonterminal's name.
        name: String,
        /// 1-based line of its first use.
        line: usize,
        /// 1-based column (characters) of its first use.
        column: usize,
    },

    /// Parentheses (or other constructs) nested deeper than the parser allows.
    #[error("nesting too deep at {line}:{column}: more than {limit} levels")]
    TooDeep {
        /// 1-based line where the limit was passed.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// The nesting limit.
        limit: usize,
    },

    /// A regular-expression terminal that does not parse or compile.
    /// `line`/`column` locate the terminal in the grammar text when known
    /// (0 otherwise); `offset` is the byte offset inside the regex.
    #[error("bad regex /{regex}/ (at {line}:{column}, regex offset {offset}): {reason}")]
    Regex {
        /// The regex source.
        regex: String,
        /// 1-based line of the terminal in the grammar text (0: unknown).
        line: usize,
        /// 1-based column of the terminal (0: unknown).
        column: usize,
        /// Byte offset of the error inside the regex.
        offset: usize,
        /// The regex engine's message.
        reason: String,
    },

    /// The grammar derives no string at all (its start symbol is
    /// non-generating), found by useless-symbol elimination (§4.5).
    #[error("the grammar's language is empty: start symbol `{start}` derives no string")]
    EmptyLanguage {
        /// Name of the start symbol.
        start: String,
    },

    /// A resource limit was exceeded (see [`crate::limits`]): the input
    /// is refused instead of exhausting memory or time.
    #[error("limit {limit} ({max}) exceeded at {place}: {detail}")]
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// Its configured value.
        max: usize,
        /// Where it was hit: the rule (`rule `name``) and terminal, or the
        /// line and column in the grammar text.
        place: String,
        /// What exceeded it.
        detail: String,
    },

    /// A grammar object that violates an invariant of the IR, e.g. a rule
    /// that mentions a nonterminal id the grammar does not have.
    #[error("invalid grammar: {reason}")]
    Invalid {
        /// The violated invariant.
        reason: String,
    },
}

impl GrammarError {
    /// The position this error refers to, if any.
    pub fn pos(&self) -> Option<Pos> {
        match *self {
            GrammarError::Syntax { line, column, .. }
            | GrammarError::UndefinedNonterminal { line, column, .. }
            | GrammarError::TooDeep { line, column, .. } => Some(Pos { line, column }),
            GrammarError::Regex { line, column, .. } if line > 0 => Some(Pos { line, column }),
            _ => None,
        }
    }

    /// The same error, located in rule `rule` (for terminal errors that
    /// were raised without knowing their rule).
    pub fn in_rule(self, rule: &str) -> Self {
        match self {
            GrammarError::LimitExceeded {
                limit,
                max,
                place,
                detail,
            } if !place.starts_with("rule ") => GrammarError::LimitExceeded {
                limit,
                max,
                place: format!("rule `{rule}`, {place}"),
                detail,
            },
            GrammarError::Regex {
                regex,
                line: 0,
                offset,
                reason,
                ..
            } => GrammarError::Regex {
                regex,
                line: 0,
                column: 0,
                offset,
                reason: format!("in rule `{rule}`: {reason}"),
            },
            e => e,
        }
    }
}
