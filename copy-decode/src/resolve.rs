//! The deterministic resolver R(P, D) → D′ (paper §2.2, Fig. 2): copy ops
//! append source lines verbatim, gen ops append their text verbatim.
//!
//! Our readings where the paper is not explicit:
//! - a line is a maximal run of bytes ending in `\n` (so `\r\n` is part of
//!   the line it ends), or the final run without `\n` when the document
//!   does not end in one; a document of `n` lines has line numbers `1..=n`,
//!   and the empty document has `n = 0` (every copy op fails);
//! - a copied line carries its own terminator (`\n`, `\r\n`, or none for a
//!   last line without one), so `resolve` never adds or drops newlines;
//! - `lines="I-J"` is 1-based and inclusive, as in the paper.
//!
//! Costs: [`LineIndex::new`] is one pass over the document and stores one
//! `usize` per line; a copy op is then an `O(1)` lookup of one contiguous
//! byte range, so [`resolve`] is `O(|D| + |P| + |D′|)`.

use crate::error::ResolveError;
use crate::program::{Op, Program};

/// Line boundaries of a document, split once (paper §2.2's line numbers).
#[derive(Clone, Debug)]
pub struct LineIndex<'a> {
    doc: &'a str,
    /// `ends[i]` is the byte offset just past line `i + 1` (its terminator
    /// included); line `i + 1` starts at `ends[i - 1]` (or 0).
    ends: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Splits `doc` into lines (each keeps its terminator). `O(|doc|)`.
    pub fn new(doc: &'a str) -> Self {
        let mut ends: Vec<usize> = doc
            .bytes()
            .enumerate()
            .filter(|&(_, b)| b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        if ends.last().copied().unwrap_or(0) != doc.len() {
            ends.push(doc.len());
        }
        LineIndex { doc, ends }
    }

    /// The document.
    pub fn doc(&self) -> &'a str {
        self.doc
    }

    /// Number of lines `n`.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the document has no lines (it is empty).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Line `i` (1-based) with its terminator, `None` outside `1..=n`.
    pub fn line(&self, i: usize) -> Option<&'a str> {
        self.span(i, i)
    }

    /// Lines `start..=end` (1-based, inclusive) as one contiguous slice with
    /// their terminators; `None` unless `1 <= start <= end <= n`. `O(1)`.
    pub fn span(&self, start: usize, end: usize) -> Option<&'a str> {
        if start == 0 || start > end || end > self.ends.len() {
            return None;
        }
        let from = if start == 1 { 0 } else { self.ends[start - 2] };
        Some(&self.doc[from..self.ends[end - 1]])
    }

    /// All lines, each with its terminator.
    pub fn lines(&self) -> impl ExactSizeIterator<Item = &'a str> + '_ {
        (1..self.ends.len() + 1).map(move |i| self.span(i, i).unwrap_or_default())
    }

    /// Checks every copy op against this document and returns the length
    /// in bytes of R(P, D). `O(|P|)` (ops, not text).
    pub fn check(&self, program: &Program) -> Result<usize, ResolveError> {
        let mut len = 0usize;
        for (op, o) in program.ops.iter().enumerate() {
            len += match o {
                Op::Copy { start, end } => self.copy_span(op, *start, *end)?.len(),
                Op::Gen { text } => text.len(),
            };
        }
        Ok(len)
    }

    /// R(P, D): the program's output against this document.
    pub fn resolve(&self, program: &Program) -> Result<String, ResolveError> {
        let mut out = String::with_capacity(self.check(program)?);
        self.resolve_into(program, &mut out)?;
        Ok(out)
    }

    /// Appends R(P, D) to `out`; on error `out` holds the output of the ops
    /// before the failing one.
    pub fn resolve_into(&self, program: &Program, out: &mut String) -> Result<(), ResolveError> {
        for (op, o) in program.ops.iter().enumerate() {
            match o {
                Op::Copy { start, end } => out.push_str(self.copy_span(op, *start, *end)?),
                Op::Gen { text } => out.push_str(text),
            }
        }
        Ok(())
    }

    fn copy_span(&self, op: usize, start: usize, end: usize) -> Result<&'a str, ResolveError> {
        if start == 0 {
            return Err(ResolveError::ZeroLine { op });
        }
        if start > end {
            return Err(ResolveError::Reversed { op, start, end });
        }
        self.span(start, end).ok_or(ResolveError::OutOfRange {
            op,
            start,
            end,
            lines: self.len(),
        })
    }
}

/// R(P, D) → D′ (paper §2.2): splits `doc` once, then appends each op's
/// bytes. `O(|D| + |P| + |D′|)`. Errors name the failing op's index.
pub fn resolve(program: &Program, doc: &str) -> Result<String, ResolveError> {
    LineIndex::new(doc).resolve(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_keep_terminators() {
        let ix = LineIndex::new("a\r\nb\n\nc");
        assert_eq!(ix.lines().collect::<Vec<_>>(), ["a\r\n", "b\n", "\n", "c"]);
        assert_eq!(LineIndex::new("").len(), 0);
        assert_eq!(LineIndex::new("x\n").len(), 1);
        assert_eq!(ix.span(2, 4), Some("b\n\nc"));
        assert_eq!(ix.span(0, 1), None);
        assert_eq!(ix.span(3, 2), None);
        assert_eq!(ix.span(1, 5), None);
    }
}
