//! Copy-as-Decode edit programs (paper Fig. 2, §2.2–§2.3 and Fig. 7): the
//! AST ([`Program`], [`Op`]), the parser ([`Program::parse`]) and the
//! printer ([`Program::print`]) of the surface syntax.
//!
//! ## Surface syntax (exact bytes)
//!
//! ```text
//! program := "<program>\n" ( op "\n" )* "</program>"
//! op      := "<copy lines=\"" NUM "-" NUM "\"/>"  |  "<gen>" TEXT "</gen>"
//! NUM     := [1-9][0-9]*            (1-based, I <= J, fits in usize)
//! TEXT    := ( "\\\\" | "\\/" | any UTF-8 character but `\` )*
//!            not containing the raw bytes "</gen>"
//! ```
//!
//! Escaping is **our reading**; the paper does not specify it. In TEXT, `\`
//! is written `\\` and each occurrence of `</gen>` is written `<\/gen>`;
//! the parser decodes `\\` to `\` and `\/` to `/` anywhere in TEXT, so it
//! accepts exactly the language above and `parse(print(p)) == p` for every
//! valid program. Any other byte after `\`, or a `\` at the end of the
//! input, is [`ParseErrorKind::BadEscape`] / [`ParseErrorKind::UnexpectedEnd`].
//!
//! Costs: [`Program::parse`] and [`Program::print`] are linear in the
//! length of the text (one pass, no backtracking; a parse error's line /
//! column is counted once, also linearly).

use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

use crate::error::{OpKind, ParseError, ParseErrorKind};

/// One op of a program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `<copy lines="start-end"/>`: source lines `start..=end` (1-based,
    /// inclusive, as in the paper), each with its line terminator.
    Copy {
        /// First line, 1-based.
        start: usize,
        /// Last line, 1-based, inclusive.
        end: usize,
    },
    /// `<gen>text</gen>`: `text` appended verbatim (stored unescaped).
    Gen {
        /// The generated text, unescaped.
        text: String,
    },
}

impl Op {
    /// `<copy lines="start-end"/>`.
    pub fn copy(start: usize, end: usize) -> Self {
        Op::Copy { start, end }
    }

    /// `<gen>text</gen>`.
    pub fn gen(text: impl Into<String>) -> Self {
        Op::Gen { text: text.into() }
    }

    /// Copy or gen.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Copy { .. } => OpKind::Copy,
            Op::Gen { .. } => OpKind::Gen,
        }
    }

    /// The 1-based inclusive line range of a copy op, `None` for a gen op.
    pub fn lines(&self) -> Option<RangeInclusive<usize>> {
        match self {
            Op::Copy { start, end } => Some(*start..=*end),
            Op::Gen { .. } => None,
        }
    }
}

/// Counts describing a program (no document needed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgramStats {
    /// Number of ops.
    pub ops: usize,
    /// Number of copy ops.
    pub copy_ops: usize,
    /// Number of gen ops.
    pub gen_ops: usize,
    /// Source lines referenced by copy ops (`Σ end − start + 1`, saturating;
    /// reversed ranges count 0).
    pub copied_lines: usize,
    /// Bytes of gen text (unescaped).
    pub generated_bytes: usize,
}

/// A Copy-as-Decode program: a sequence of copy and gen ops (paper §2.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Program {
    /// The ops, in output order.
    pub ops: Vec<Op>,
}

/// `<program>` followed by its newline.
pub const PROGRAM_OPEN: &str = "<program>\n";
/// The program terminator (nothing may follow it).
pub const PROGRAM_CLOSE: &str = "</program>";
/// Start of a copy op, up to the first line number.
pub const COPY_OPEN: &str = "<copy lines=\"";
/// End of a copy op, after the second line number.
pub const COPY_CLOSE: &str = "\"/>";
/// Start of a gen op.
pub const GEN_OPEN: &str = "<gen>";
/// End of a gen op (written `<\/gen>` inside gen text).
pub const GEN_CLOSE: &str = "</gen>";

impl Program {
    /// A program of these ops.
    pub fn new(ops: Vec<Op>) -> Self {
        Program { ops }
    }

    /// Parses the exact surface syntax (see the module docs). Linear time.
    pub fn parse(input: &str) -> Result<Program, ParseError> {
        Parser::new(input).program()
    }

    /// The surface syntax of this program, escaping gen text. Linear time.
    /// `Program::parse(&p.print()) == Ok(p)` whenever every copy op has
    /// `1 <= start <= end`.
    pub fn print(&self) -> String {
        let mut out = String::with_capacity(self.printed_len_hint());
        self.print_into(&mut out);
        out
    }

    /// Appends [`Program::print`]'s text to `out`.
    pub fn print_into(&self, out: &mut String) {
        out.push_str(PROGRAM_OPEN);
        for op in &self.ops {
            print_op(op, out);
            out.push('\n');
        }
        out.push_str(PROGRAM_CLOSE);
    }

    fn printed_len_hint(&self) -> usize {
        let ops: usize = self
            .ops
            .iter()
            .map(|op| match op {
                Op::Copy { .. } => COPY_OPEN.len() + COPY_CLOSE.len() + 12,
                Op::Gen { text } => GEN_OPEN.len() + GEN_CLOSE.len() + 2 + text.len(),
            })
            .sum();
        PROGRAM_OPEN.len() + PROGRAM_CLOSE.len() + ops
    }

    /// Counts of ops, copied lines and generated bytes.
    pub fn stats(&self) -> ProgramStats {
        let mut s = ProgramStats {
            ops: self.ops.len(),
            ..ProgramStats::default()
        };
        for op in &self.ops {
            match op {
                Op::Copy { start, end } => {
                    s.copy_ops += 1;
                    if end >= start {
                        s.copied_lines = s.copied_lines.saturating_add(end - start + 1);
                    }
                }
                Op::Gen { text } => {
                    s.gen_ops += 1;
                    s.generated_bytes += text.len();
                }
            }
        }
        s
    }
}

/// Writes one op (without its trailing newline).
pub fn print_op(op: &Op, out: &mut String) {
    match op {
        Op::Copy { start, end } => {
            out.push_str(COPY_OPEN);
            out.push_str(&start.to_string());
            out.push('-');
            out.push_str(&end.to_string());
            out.push_str(COPY_CLOSE);
        }
        Op::Gen { text } => {
            out.push_str(GEN_OPEN);
            escape_gen_text(text, out);
            out.push_str(GEN_CLOSE);
        }
    }
}

/// Appends `text` escaped for a gen body: every `\` as `\\`, every
/// `</gen>` as `<\/gen>`, everything else as itself. Linear time.
pub fn escape_gen_text(text: &str, out: &mut String) {
    let b = text.as_bytes();
    let mut run = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            out.push_str(&text[run..i]);
            out.push_str("\\\\");
            i += 1;
            run = i;
        } else if b[i] == b'<' && b[i..].starts_with(GEN_CLOSE.as_bytes()) {
            out.push_str(&text[run..i]);
            out.push_str("<\\/gen>");
            i += GEN_CLOSE.len();
            run = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[run..]);
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.print())
    }
}

impl FromStr for Program {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Program::parse(s)
    }
}

/// One-pass parser over the bytes of the input.
struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
    op_index: Option<usize>,
    op_kind: Option<OpKind>,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Self {
        Parser {
            s,
            b: s.as_bytes(),
            pos: 0,
            op_index: None,
            op_kind: None,
        }
    }

    fn err_at(&self, offset: usize, kind: ParseErrorKind) -> ParseError {
        ParseError::at(self.s, offset, kind, self.op_index, self.op_kind)
    }

    fn rest(&self) -> &'a [u8] {
        &self.b[self.pos..]
    }

    /// Consumes `lit` or fails at the first differing byte (`mismatch`) or
    /// at the end of input ([`ParseErrorKind::UnexpectedEnd`]).
    fn expect(&mut self, lit: &'static str, mismatch: ParseErrorKind) -> Result<(), ParseError> {
        for (k, &want) in lit.as_bytes().iter().enumerate() {
            match self.b.get(self.pos + k) {
                None => return Err(self.err_at(self.pos + k, ParseErrorKind::UnexpectedEnd)),
                Some(&got) if got != want => return Err(self.err_at(self.pos + k, mismatch)),
                Some(_) => {}
            }
        }
        self.pos += lit.len();
        Ok(())
    }

    fn program(mut self) -> Result<Program, ParseError> {
        self.expect("<program>", ParseErrorKind::MissingHeader)?;
        self.expect("\n", ParseErrorKind::ExpectedNewline)?;
        let mut ops = Vec::new();
        loop {
            self.op_index = Some(ops.len());
            self.op_kind = None;
            let rest = self.rest();
            if rest.is_empty() {
                return Err(self.err_at(self.pos, ParseErrorKind::UnexpectedEnd));
            }
            let op = if rest.starts_with(b"<c") {
                self.op_kind = Some(OpKind::Copy);
                self.copy_op()?
            } else if rest.starts_with(b"<g") {
                self.op_kind = Some(OpKind::Gen);
                self.expect(GEN_OPEN, ParseErrorKind::UnknownTag)?;
                Op::Gen {
                    text: self.gen_body()?,
                }
            } else if rest.starts_with(b"</") || rest == b"<" {
                self.expect(PROGRAM_CLOSE, ParseErrorKind::UnknownTag)?;
                self.op_index = None;
                if self.pos != self.b.len() {
                    return Err(self.err_at(self.pos, ParseErrorKind::TrailingInput));
                }
                return Ok(Program { ops });
            } else {
                return Err(self.err_at(self.pos, ParseErrorKind::UnknownTag));
            };
            self.expect("\n", ParseErrorKind::ExpectedNewline)?;
            ops.push(op);
        }
    }

    fn copy_op(&mut self) -> Result<Op, ParseError> {
        self.expect(COPY_OPEN, ParseErrorKind::UnknownTag)?;
        let start_at = self.pos;
        let start = self.number()?;
        self.expect("-", ParseErrorKind::Expected("-"))?;
        let end = self.number()?;
        self.expect(COPY_CLOSE, ParseErrorKind::Expected(COPY_CLOSE))?;
        if start > end {
            return Err(self.err_at(start_at, ParseErrorKind::ReversedRange { start, end }));
        }
        Ok(Op::Copy { start, end })
    }

    /// `[1-9][0-9]*` fitting in `usize`.
    fn number(&mut self) -> Result<usize, ParseError> {
        let at = self.pos;
        match self.b.get(at) {
            None => return Err(self.err_at(at, ParseErrorKind::UnexpectedEnd)),
            Some(c) if !c.is_ascii_digit() => {
                return Err(self.err_at(at, ParseErrorKind::ExpectedDigit))
            }
            Some(b'0') => {
                return Err(match self.b.get(at + 1) {
                    Some(c) if c.is_ascii_digit() => self.err_at(at, ParseErrorKind::LeadingZero),
                    _ => self.err_at(at, ParseErrorKind::ZeroLine),
                })
            }
            Some(_) => {}
        }
        let mut value: usize = 0;
        while let Some(&c) = self.b.get(self.pos) {
            if !c.is_ascii_digit() {
                break;
            }
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(usize::from(c - b'0')))
                .ok_or_else(|| self.err_at(at, ParseErrorKind::NumberOverflow))?;
            self.pos += 1;
        }
        Ok(value)
    }

    /// The body after `<gen>` up to and including `</gen>`, unescaped.
    fn gen_body(&mut self) -> Result<String, ParseError> {
        let mut text = String::new();
        let mut run = self.pos;
        loop {
            match self.b.get(self.pos) {
                None => return Err(self.err_at(self.pos, ParseErrorKind::UnexpectedEnd)),
                Some(b'\\') => {
                    text.push_str(&self.s[run..self.pos]);
                    match self.b.get(self.pos + 1) {
                        Some(b'\\') => text.push('\\'),
                        Some(b'/') => text.push('/'),
                        None => {
                            return Err(self.err_at(self.pos + 1, ParseErrorKind::UnexpectedEnd))
                        }
                        Some(_) => return Err(self.err_at(self.pos, ParseErrorKind::BadEscape)),
                    }
                    self.pos += 2;
                    run = self.pos;
                }
                Some(b'<') if self.rest().starts_with(GEN_CLOSE.as_bytes()) => {
                    text.push_str(&self.s[run..self.pos]);
                    self.pos += GEN_CLOSE.len();
                    return Ok(text);
                }
                Some(_) => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_exact_bytes() {
        let p = Program::new(vec![
            Op::copy(1, 3),
            Op::gen("a</gen>\\b\n"),
            Op::copy(5, 5),
        ]);
        assert_eq!(
            p.print(),
            "<program>\n<copy lines=\"1-3\"/>\n<gen>a<\\/gen>\\\\b\n</gen>\n<copy lines=\"5-5\"/>\n</program>"
        );
        assert_eq!(Program::parse(&p.print()), Ok(p));
        assert_eq!(Program::default().print(), "<program>\n</program>");
    }

    #[test]
    fn error_positions() {
        let e = Program::parse("<program>\n<copy lines=\"1-x\"/>\n</program>").unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::ExpectedDigit);
        assert_eq!((e.line, e.column), (2, 16));
        assert_eq!((e.op_index, e.op_kind), (Some(0), Some(OpKind::Copy)));
        let e = Program::parse("<program>\n<gen>é\\q</gen>\n</program>").unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::BadEscape);
        assert_eq!((e.line, e.column), (2, 7));
    }
}
