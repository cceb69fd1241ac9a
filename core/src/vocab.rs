//! Token ids and the [`Vocabulary`] trait.
//!
//! Constrained decoding works on bytes: a grammar accepts byte strings, and a
//! token is allowed when its bytes extend the current prefix to a viable one.
//! So a vocabulary here is, first of all, "the bytes of every token". The
//! loaders of real tokenizers live in the `zapspec-vocab` crate.

use std::sync::Arc;

/// A token's index in its vocabulary.
pub type TokenId = u32;

/// The bytes of every token of a tokenizer, and which token ends a sequence.
pub trait Vocabulary {
    /// Number of token ids (`0..len()`), holes included.
    fn len(&self) -> usize;
    /// The exact bytes token `t` stands for. Empty for special tokens and for
    /// holes in the id space.
    fn token_bytes(&self, t: TokenId) -> &[u8];
    /// The end-of-sequence token.
    fn eos(&self) -> TokenId;
    /// True for control tokens (EOS, BOS, chat markers) and unused ids: they
    /// never spell grammar text.
    fn is_special(&self, t: TokenId) -> bool;
    /// True when the vocabulary has no tokens.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<V: Vocabulary + ?Sized> Vocabulary for &V {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn token_bytes(&self, t: TokenId) -> &[u8] {
        (**self).token_bytes(t)
    }
    fn eos(&self) -> TokenId {
        (**self).eos()
    }
    fn is_special(&self, t: TokenId) -> bool {
        (**self).is_special(t)
    }
}

impl<V: Vocabulary + ?Sized> Vocabulary for Arc<V> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn token_bytes(&self, t: TokenId) -> &[u8] {
        (**self).token_bytes(t)
    }
    fn eos(&self) -> TokenId {
        (**self).eos()
    }
    fn is_special(&self, t: TokenId) -> bool {
        (**self).is_special(t)
    }
}
