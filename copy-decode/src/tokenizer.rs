//! The one thing the executors and canonical boundaries need from a
//! tokenizer.

use zapspec_core::TokenId;

/// Anything that turns text into token ids (blanket-implemented for
/// closures `Fn(&str) -> Vec<TokenId>`, e.g.
/// `|s| vocab.encode(s).unwrap_or_default()`).
pub trait Tokenizer {
    /// The token ids of `text`.
    fn tokenize(&self, text: &str) -> Vec<TokenId>;
}

impl<F: Fn(&str) -> Vec<TokenId>> Tokenizer for F {
    fn tokenize(&self, text: &str) -> Vec<TokenId> {
        self(text)
    }
}
