//! Token boundaries between op texts (the crate docs' canonical
//! tokenization note; paper §2.4's serving-layer primitive prefills a copy
//! "as tokens" without saying which).
//!
//! When `D′` is written op by op — a copy's lines, then a gen op's text,
//! then another copy — each piece can be tokenized on its own and appended
//! ([`TokenBoundary::SpanWise`]), or the context can be kept equal to the
//! tokenization of the whole `D′` prefix written so far
//! ([`TokenBoundary::Canonical`]): a model that had written `D′` itself
//! would see `tok(D′)`, and a context that is not canonical can skew the
//! next-token distribution (llguidance's notes on fast-forward tokens).
//!
//! [`CanonicalTokens`] keeps the canonical tokens of a growing text. At
//! each append it rolls back the trailing tokens that can merge with the
//! new text and re-tokenizes (rolled-back bytes + new text); the caller
//! truncates the model's cache by the rolled-back count and appends the
//! new tokens, so after every op the context equals `tok(prefix of D′)`.
//!
//! ## Cost and exactness
//!
//! Re-tokenizing the whole prefix at every op is exact but quadratic. An
//! append instead re-tokenizes from a cut `window` tokens back (moved back
//! to a UTF-8 character boundary) and checks the result against a second
//! tokenization from `2 · window` tokens back: if that one reproduces the
//! kept tokens between the two cuts and then the same tail, the cut is a
//! synchronisation point of the tokenizer and the tail is taken; else the
//! whole text is re-tokenized (counted in [`CanonicalTokens::fallbacks`]).
//! With pre-tokenizer-based BPEs (o200k, GPT-2-style byte-level BPE) a
//! merge never reaches further back than the pre-token that ends the text,
//! so the check passes whenever the window spans that pre-token; the
//! tests compare the final tokens with `tok(D′)` on the corpora and on
//! random edits. Cost per append: two tokenizer calls over
//! `O(window)` tokens plus the new text, `O(|new text|)` bookkeeping.

use zapspec_core::{TokenId, Vocabulary};

use crate::tokenizer::Tokenizer;

/// How op texts are tokenized where they meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TokenBoundary {
    /// Each op's text is tokenized on its own and appended (the context
    /// can differ from `tok(D′)` at span boundaries).
    #[default]
    SpanWise,
    /// The context is kept equal to `tok(prefix of D′)` after every op,
    /// by rolling back and re-tokenizing at each boundary
    /// ([`CanonicalTokens`]).
    Canonical,
}

/// The canonical tokens of a text that grows by appends (see the module
/// docs).
#[derive(Debug, Clone, Default)]
pub struct CanonicalTokens {
    text: String,
    tokens: Vec<TokenId>,
    /// Byte offset in `text` where each token ends.
    ends: Vec<usize>,
    window: usize,
    fallbacks: usize,
}

/// What one [`CanonicalTokens::append`] changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Append {
    /// Tokens kept from before the append (a prefix of the old tokens).
    pub keep: usize,
    /// Old tokens rolled back (`old length − keep`).
    pub rolled_back: usize,
    /// Tokens that follow the kept prefix now.
    pub new: Vec<TokenId>,
}

impl CanonicalTokens {
    /// An empty text; appends re-tokenize from `window` tokens back
    /// (at least 1).
    pub fn new(window: usize) -> Self {
        CanonicalTokens {
            window: window.max(1),
            ..CanonicalTokens::default()
        }
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its canonical tokens.
    pub fn tokens(&self) -> &[TokenId] {
        &self.tokens
    }

    /// Appends where the windowed re-tokenization could not be confirmed
    /// and the whole text was re-tokenized.
    pub fn fallbacks(&self) -> usize {
        self.fallbacks
    }

    /// Byte offset where token `i` starts.
    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.ends[i - 1]
        }
    }

    /// The largest token index `≤ i` that starts on a character boundary.
    fn cut_at(&self, mut i: usize) -> usize {
        while i > 0 && !self.text.is_char_boundary(self.start(i)) {
            i -= 1;
        }
        i
    }

    /// Appends `s`: returns how many old tokens stay and the tokens that
    /// follow them, so that `tokens()` equals `tok(text())` again (see the
    /// module docs for the check and its fallback).
    pub fn append<T, V>(&mut self, s: &str, tok: &T, vocab: &V) -> Append
    where
        T: Tokenizer + ?Sized,
        V: Vocabulary + ?Sized,
    {
        let n = self.tokens.len();
        let c = self.cut_at(n.saturating_sub(self.window));
        let tail = |from: usize| {
            let mut t = String::with_capacity(self.text.len() - from + s.len());
            t.push_str(&self.text[from..]);
            t.push_str(s);
            tok.tokenize(&t)
        };
        let (cut, fresh) = if c == 0 {
            (0, tail(0))
        } else {
            let a = tail(self.start(c));
            let c2 = self.cut_at(c.saturating_sub(self.window));
            let b = tail(self.start(c2));
            let k = c - c2;
            if b.len() == k + a.len() && b[..k] == self.tokens[c2..c] && b[k..] == a[..] {
                (c, a)
            } else {
                self.fallbacks += 1;
                (0, tail(0))
            }
        };
        // Kept: the old tokens before the cut, then the common prefix of
        // the old tail and the fresh tail.
        let common = self.tokens[cut..]
            .iter()
            .zip(&fresh)
            .take_while(|(a, b)| a == b)
            .count();
        let keep = cut + common;
        let new = fresh[common..].to_vec();
        self.tokens.truncate(keep);
        self.ends.truncate(keep);
        let mut off = self.start(keep);
        for &t in &new {
            off += vocab.token_bytes(t).len();
            self.ends.push(off);
        }
        self.tokens.extend_from_slice(&new);
        self.text.push_str(s);
        Append {
            keep,
            rolled_back: n - keep,
            new,
        }
    }
}
