//! Typed errors of the program layer: [`ParseError`] (the surface syntax of
//! [`Program`](crate::program::Program), paper Fig. 7 / §2.3) and
//! [`ResolveError`] (the resolver R(P, D) of §2.2).
//!
//! Both name the op that was malformed by its 0-based index in the program
//! and, where known, its [`OpKind`]. Building an error is `O(offset)` (the
//! line / column of a [`ParseError`] is counted from the start of the
//! input once, when the error is made); nothing here allocates otherwise.

use std::fmt;

/// The kind of an op: `<copy lines="I-J"/>` or `<gen>TEXT</gen>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `<copy lines="I-J"/>`: source lines `I..=J`, verbatim.
    Copy,
    /// `<gen>TEXT</gen>`: new text, verbatim.
    Gen,
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpKind::Copy => "copy",
            OpKind::Gen => "gen",
        })
    }
}

/// What was wrong at the position of a [`ParseError`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The input does not start with `<program>`.
    #[error("expected `<program>` at the start")]
    MissingHeader,
    /// The input ended before the program was complete.
    #[error("unexpected end of input")]
    UnexpectedEnd,
    /// A specific literal of the structure was expected here.
    #[error("expected `{0}`")]
    Expected(&'static str),
    /// The single `\n` that must follow `<program>` and every op is missing.
    #[error("expected a newline")]
    ExpectedNewline,
    /// At an op boundary: neither `<copy lines="`, `<gen>` nor `</program>`.
    #[error("unknown tag (expected `<copy lines=\"`, `<gen>` or `</program>`)")]
    UnknownTag,
    /// A line number was expected and no decimal digit is here.
    #[error("expected a decimal line number")]
    ExpectedDigit,
    /// A line number with a leading zero (`01`).
    #[error("line number with a leading zero")]
    LeadingZero,
    /// Line `0`; line numbers are 1-based.
    #[error("line number 0 (line numbers are 1-based)")]
    ZeroLine,
    /// A line number that does not fit in `usize`.
    #[error("line number does not fit in usize")]
    NumberOverflow,
    /// `I > J` in `lines="I-J"`.
    #[error("reversed line range {start}-{end}")]
    ReversedRange {
        /// `I`.
        start: usize,
        /// `J`.
        end: usize,
    },
    /// A `\` in a gen body not followed by `\` or `/`.
    #[error("bad escape in gen text (only `\\\\` and `\\/` are escapes)")]
    BadEscape,
    /// Anything after `</program>`.
    #[error("input continues after `</program>`")]
    TrailingInput,
}

/// A malformed program text: where (byte offset, 1-based line and column),
/// in which op, and what ([`ParseErrorKind`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What was wrong.
    pub kind: ParseErrorKind,
    /// Byte offset into the input.
    pub offset: usize,
    /// 1-based line of the input (lines end at `\n`).
    pub line: usize,
    /// 1-based column of the input, in Unicode scalar values.
    pub column: usize,
    /// 0-based index of the op being read, `None` in the header or after
    /// `</program>`.
    pub op_index: Option<usize>,
    /// Kind of the op being read, once its opening tag identified it.
    pub op_kind: Option<OpKind>,
}

impl ParseError {
    /// An error at byte `offset` of `input` (clamped to the input and moved
    /// back to a character boundary); counts line and column in
    /// `O(offset)`.
    pub fn at(
        input: &str,
        offset: usize,
        kind: ParseErrorKind,
        op_index: Option<usize>,
        op_kind: Option<OpKind>,
    ) -> Self {
        let mut offset = offset.min(input.len());
        while !input.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &input[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = 1 + before.bytes().filter(|&b| b == b'\n').count();
        let column = 1 + before[line_start..].chars().count();
        ParseError {
            kind,
            offset,
            line,
            column,
            op_index,
            op_kind,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)?;
        match (self.op_index, self.op_kind) {
            (Some(i), Some(k)) => write!(f, " (op {i}, {k})")?,
            (Some(i), None) => write!(f, " (op {i})")?,
            _ => {}
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for ParseError {}

/// A program that does not resolve against a document (paper §2.2): a copy
/// op whose range is empty, starts at 0, or ends past the document's last
/// line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// `lines="0-J"`: line numbers are 1-based.
    #[error("op {op}: copy starts at line 0 (line numbers are 1-based)")]
    ZeroLine {
        /// 0-based index of the op in the program.
        op: usize,
    },
    /// `lines="I-J"` with `I > J`.
    #[error("op {op}: reversed copy range {start}-{end}")]
    Reversed {
        /// 0-based index of the op in the program.
        op: usize,
        /// `I`.
        start: usize,
        /// `J`.
        end: usize,
    },
    /// `lines="I-J"` with `J` past the document's `lines` lines.
    #[error("op {op}: copy range {start}-{end} past the document's {lines} lines")]
    OutOfRange {
        /// 0-based index of the op in the program.
        op: usize,
        /// `I`.
        start: usize,
        /// `J`.
        end: usize,
        /// Number of lines of the document.
        lines: usize,
    },
}
